//! The crate's error types: one per kind of failure, plus [`Error`] that holds any of them.

use std::fmt;

/// A parameter given to a constructor (or to a reshaping method such as
/// [`HyperLogLog::reduce`](crate::cardinality::HyperLogLog::reduce)) is outside the range the
/// structure supports.
///
/// The error names the parameter, the value it was given and what it accepts.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
///
/// let err = HyperLogLog::new(30).unwrap_err();
/// assert_eq!(err.parameter(), "precision");
/// assert_eq!(err.value(), "30");
/// assert_eq!(err.to_string(), "invalid precision = 30: expected an integer in 4..=18");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    parameter: &'static str,
    value: String,
    expected: &'static str,
}

impl ConfigError {
    pub(crate) fn new(parameter: &'static str, value: impl fmt::Display, expected: &'static str) -> Self {
        Self { parameter, value: value.to_string(), expected }
    }

    /// The name of the offending parameter, as it is spelled in the constructor.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// assert_eq!(FlajoletMartin::new(3).unwrap_err().parameter(), "bitmaps");
    /// ```
    #[must_use]
    pub fn parameter(&self) -> &'static str {
        self.parameter
    }

    /// The rejected value, formatted.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// assert_eq!(FlajoletMartin::new(3).unwrap_err().value(), "3");
    /// ```
    #[must_use]
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What the parameter accepts, in words.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// assert_eq!(HyperLogLog::new(2).unwrap_err().expected(), "an integer in 4..=18");
    /// ```
    #[must_use]
    pub fn expected(&self) -> &'static str {
        self.expected
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} = {}: expected {}", self.parameter, self.value, self.expected)
    }
}

impl std::error::Error for ConfigError {}

/// Two synopses cannot be merged because their configurations differ.
///
/// Merging is only meaningful between instances built with the same parameters and hash
/// seed; anything else would silently mix incomparable states. The error names the first
/// parameter that differs and both values. A failed merge leaves the target unchanged.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
///
/// let mut a = HyperLogLog::with_seed(12, 1)?;
/// let b = HyperLogLog::with_seed(12, 2)?;
/// let err = a.merge(&b).unwrap_err();
/// assert_eq!(err.parameter(), "seed");
/// assert_eq!((err.ours(), err.theirs()), ("1", "2"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeError {
    parameter: &'static str,
    ours: String,
    theirs: String,
}

impl MergeError {
    pub(crate) fn new(parameter: &'static str, ours: impl fmt::Display, theirs: impl fmt::Display) -> Self {
        Self { parameter, ours: ours.to_string(), theirs: theirs.to_string() }
    }

    /// Returns an error naming `parameter` when `ours != theirs`.
    pub(crate) fn check<T: PartialEq + fmt::Display>(parameter: &'static str, ours: T, theirs: T) -> Result<(), Self> {
        if ours == theirs { Ok(()) } else { Err(Self::new(parameter, ours, theirs)) }
    }

    /// The configuration parameter that differs.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// let mut a = HyperLogLog::new(12)?;
    /// assert_eq!(a.merge(&HyperLogLog::new(14)?).unwrap_err().parameter(), "precision");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn parameter(&self) -> &'static str {
        self.parameter
    }

    /// The value on the receiving side of the merge.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// let mut a = HyperLogLog::new(12)?;
    /// assert_eq!(a.merge(&HyperLogLog::new(14)?).unwrap_err().ours(), "12");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn ours(&self) -> &str {
        &self.ours
    }

    /// The value on the side being merged in.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// let mut a = HyperLogLog::new(12)?;
    /// assert_eq!(a.merge(&HyperLogLog::new(14)?).unwrap_err().theirs(), "14");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn theirs(&self) -> &str {
        &self.theirs
    }
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot merge: {} differs ({} here, {} in the other)", self.parameter, self.ours, self.theirs)
    }
}

impl std::error::Error for MergeError {}

/// An item cannot be removed from a [`CountingBloom`](crate::membership::CountingBloom)
/// because it is certainly not in it: one of its counters is zero. The filter is unchanged.
///
/// ```
/// use synopses::membership::CountingBloom;
///
/// let mut filter = CountingBloom::new(1000, 3)?;
/// let err = filter.remove("never inserted").unwrap_err();
/// assert_eq!(err.to_string(), "cannot remove: the item is not in the filter (one of its counters is zero)");
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoveError {
    _private: (),
}

impl RemoveError {
    pub(crate) fn new() -> Self {
        Self { _private: () }
    }
}

impl fmt::Display for RemoveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot remove: the item is not in the filter (one of its counters is zero)")
    }
}

impl std::error::Error for RemoveError {}

/// Bytes given to a `from_bytes` decoder (or to serde) do not hold a valid synopsis.
///
/// Decoding never panics and never allocates more than the input's length justifies; every
/// failure is one of these variants. See [`codec`](crate::codec) for the format.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::DecodeError;
///
/// let bytes = HyperLogLog::new(12)?.to_bytes();
/// assert!(matches!(
///     HyperLogLog::from_bytes(&bytes[..5]),
///     Err(DecodeError::Truncated { .. })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the structure did.
    Truncated {
        /// Bytes the decoder needed at the point it stopped (for the envelope, the whole
        /// minimum length; for a field, that field's length).
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// The input does not start with the synopses magic bytes.
    BadMagic,
    /// The format version is one this build does not read.
    UnsupportedVersion(u8),
    /// The bytes hold a different kind of synopsis.
    WrongFamily {
        /// The family code the decoder reads.
        expected: u8,
        /// The family code found in the input.
        found: u8,
    },
    /// The checksum over the content does not match: the bytes were corrupted.
    ChecksumMismatch,
    /// A field holds a value the structure cannot have.
    InvalidField {
        /// The field's name.
        field: &'static str,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// Bytes remain after the structure ended.
    TrailingBytes(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { needed, available } => {
                write!(f, "truncated input: needed {needed} bytes, {available} available")
            }
            Self::BadMagic => f.write_str("not a synopses encoding (bad magic bytes)"),
            Self::UnsupportedVersion(v) => write!(f, "unsupported format version {v}"),
            Self::WrongFamily { expected, found } => {
                write!(f, "wrong synopsis family: expected code {expected}, found {found}")
            }
            Self::ChecksumMismatch => f.write_str("checksum mismatch: the bytes are corrupted"),
            Self::InvalidField { field, reason } => write!(f, "invalid field `{field}`: {reason}"),
            Self::TrailingBytes(n) => write!(f, "{n} trailing bytes after the encoded synopsis"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Any error of this crate, for callers that propagate them together with `?`.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
///
/// fn union(a: &[u8], b: &[u8]) -> Result<f64, synopses::Error> {
///     let mut a = HyperLogLog::from_bytes(a)?;
///     a.merge(&HyperLogLog::from_bytes(b)?)?;
///     Ok(a.estimate())
/// }
/// let a = HyperLogLog::new(12)?.to_bytes();
/// assert_eq!(union(&a, &a)?, 0.0);
/// assert!(matches!(union(&a, &[]), Err(synopses::Error::Decode(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// See [`ConfigError`].
    Config(ConfigError),
    /// See [`MergeError`].
    Merge(MergeError),
    /// See [`DecodeError`].
    Decode(DecodeError),
    /// See [`RemoveError`].
    Remove(RemoveError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Merge(e) => e.fmt(f),
            Self::Decode(e) => e.fmt(f),
            Self::Remove(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Merge(e) => Some(e),
            Self::Decode(e) => Some(e),
            Self::Remove(e) => Some(e),
        }
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

impl From<MergeError> for Error {
    fn from(e: MergeError) -> Self {
        Self::Merge(e)
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl From<RemoveError> for Error {
    fn from(e: RemoveError) -> Self {
        Self::Remove(e)
    }
}
