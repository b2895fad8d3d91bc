//! Confidence levels and the interval type that the estimators return.

/// How wide a confidence interval to ask for, in standard deviations of the estimator
/// (under the normal approximation that all estimators of this crate satisfy for the sizes
/// they are documented for).
///
/// ```
/// use synopses::core::Confidence;
///
/// assert_eq!(Confidence::TwoSigma.z(), 2.0);
/// assert!((Confidence::TwoSigma.probability() - 0.9545).abs() < 1e-4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive] // (More levels, such as 99 %, may come.)
pub enum Confidence {
    /// ±1 standard deviation: about 68.27 % of estimates fall inside.
    OneSigma,
    /// ±2 standard deviations: about 95.45 %.
    TwoSigma,
    /// ±3 standard deviations: about 99.73 %.
    ThreeSigma,
    /// ±1.96 standard deviations: 95 %, the interval most reports quote.
    NinetyFivePercent,
}

impl Confidence {
    /// The number of standard deviations, `z`.
    ///
    /// ```
    /// # use synopses::core::Confidence;
    /// assert_eq!(Confidence::ThreeSigma.z(), 3.0);
    /// ```
    #[must_use]
    pub fn z(self) -> f64 {
        match self {
            Self::OneSigma => 1.0,
            Self::TwoSigma => 2.0,
            Self::ThreeSigma => 3.0,
            Self::NinetyFivePercent => 1.959_963_984_540_054,
        }
    }

    /// The two-sided coverage probability of ±`z` standard deviations of a normal law.
    ///
    /// ```
    /// # use synopses::core::Confidence;
    /// assert!((Confidence::OneSigma.probability() - 0.6827).abs() < 1e-4);
    /// ```
    #[must_use]
    pub fn probability(self) -> f64 {
        match self {
            Self::OneSigma => 0.682_689_492_137_085_9,
            Self::TwoSigma => 0.954_499_736_103_641_6,
            Self::ThreeSigma => 0.997_300_203_936_739_8,
            Self::NinetyFivePercent => 0.95,
        }
    }
}

/// A confidence interval around an estimate.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::core::Confidence;
///
/// let mut hll = HyperLogLog::new(12)?;
/// (0..10_000u64).for_each(|i| hll.observe(i));
/// let b = hll.bounds(Confidence::ThreeSigma);
/// assert!(b.lower <= hll.estimate() && hll.estimate() <= b.upper);
/// assert!(b.contains(10_000.0));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// The lower end of the interval.
    pub lower: f64,
    /// The upper end of the interval.
    pub upper: f64,
}

impl Bounds {
    /// The interval `estimate · (1 ± z · relative_std_error)`, with the lower end raised to
    /// `floor` (a count the structure knows for certain, or zero) and the upper end never below
    /// the lower.
    pub(crate) fn relative(estimate: f64, relative_std_error: f64, confidence: Confidence, floor: f64) -> Self {
        let half = estimate * confidence.z() * relative_std_error;
        let lower = (estimate - half).max(floor);
        Self { lower, upper: (estimate + half).max(lower) }
    }

    /// Whether `value` lies in the closed interval.
    ///
    /// ```
    /// use synopses::core::Bounds;
    ///
    /// let b = Bounds { lower: 9.0, upper: 11.0 };
    /// assert!(b.contains(10.0) && !b.contains(12.0));
    /// ```
    #[must_use]
    pub fn contains(&self, value: f64) -> bool {
        self.lower <= value && value <= self.upper
    }
}

/// An unbiased estimate and an estimate of its variance, as the samplers and the load
/// shedders return them: the interval `value ± z·√variance` follows.
///
/// ```
/// use synopses::core::{Confidence, Estimate};
///
/// let e = Estimate { value: 100.0, variance: 25.0 };
/// assert_eq!(e.standard_error(), 5.0);
/// let b = e.bounds(Confidence::TwoSigma);
/// assert_eq!((b.lower, b.upper), (90.0, 110.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// An estimate of its variance (never negative).
    pub variance: f64,
}

impl Estimate {
    /// The estimated standard error, `√variance`.
    ///
    /// ```
    /// # use synopses::core::Estimate;
    /// assert_eq!(Estimate { value: 1.0, variance: 4.0 }.standard_error(), 2.0);
    /// ```
    #[must_use]
    pub fn standard_error(&self) -> f64 {
        self.variance.max(0.0).sqrt()
    }

    /// The normal-approximation interval `value ± z·standard_error`.
    ///
    /// ```
    /// use synopses::core::{Confidence, Estimate};
    /// let b = Estimate { value: 10.0, variance: 1.0 }.bounds(Confidence::ThreeSigma);
    /// assert!(b.contains(7.0) && b.contains(13.0) && !b.contains(13.5));
    /// ```
    #[must_use]
    pub fn bounds(&self, confidence: Confidence) -> Bounds {
        let half = confidence.z() * self.standard_error();
        Bounds { lower: self.value - half, upper: self.value + half }
    }
}
