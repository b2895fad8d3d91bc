//! The validated weight of a weighted observation.

use std::fmt;

use super::ConfigError;

/// The weight of an item given to a weighted operator: a finite number above zero, checked
/// once, so that the operators themselves cannot be given a weight they cannot use.
///
/// ```
/// use synopses::core::Weight;
///
/// let w = Weight::new(2.5)?;
/// assert_eq!(w.get(), 2.5);
/// for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
///     assert!(Weight::new(bad).is_err());
/// }
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, PartialOrd)]
pub struct Weight(f64);

impl Weight {
    /// The weight 1.
    ///
    /// ```
    /// # use synopses::core::Weight;
    /// assert_eq!(Weight::ONE.get(), 1.0);
    /// ```
    pub const ONE: Self = Self(1.0);

    /// A weight, if `value` is finite and above zero.
    ///
    /// ```
    /// # use synopses::core::Weight;
    /// assert_eq!(Weight::new(-3.0).unwrap_err().parameter(), "weight");
    /// ```
    pub fn new(value: f64) -> Result<Self, ConfigError> {
        if value > 0.0 && value.is_finite() {
            Ok(Self(value))
        } else {
            Err(ConfigError::new("weight", value, "a finite number above zero"))
        }
    }

    /// The weight as a number.
    ///
    /// ```
    /// # use synopses::core::Weight;
    /// assert_eq!(Weight::new(0.5)?.get(), 0.5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Debug for Weight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl TryFrom<f64> for Weight {
    type Error = ConfigError;

    fn try_from(value: f64) -> Result<Self, ConfigError> {
        Self::new(value)
    }
}
