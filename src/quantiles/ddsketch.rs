//! DDSketch. The teaching text is in the [family docs](super).

use std::fmt;

use super::mapping::{IndexMapping, Mapping};
use super::store::Store;
use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl, varint_len};
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, Operator};

/// The smallest relative accuracy: 2^−20 (about 10⁻⁶), so that every double's bucket index fits
/// in 32 bits.
const MIN_ALPHA: f64 = 1.0 / 1_048_576.0;
/// The largest relative accuracy.
const MAX_ALPHA: f64 = 0.5;
/// The most buckets a store may keep.
const MAX_BINS: u32 = 1 << 20;
/// The default bucket limit of each store (positive and negative values).
const DEFAULT_MAX_BINS: u32 = 2048;

/// Which end of the values a [`DDSketch`] at its bucket limit gives up: their buckets merge
/// into the lowest (or highest) bucket it keeps, and quantiles there lose the guarantee.
///
/// ```
/// use synopses::quantiles::{Collapse, DDSketch};
///
/// // Latencies: keep the tail exact, let the fastest requests share a bucket.
/// let sketch = DDSketch::builder(0.01).max_bins(512).collapse(Collapse::Lowest).build()?;
/// assert_eq!(sketch.collapse(), Collapse::Lowest);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Collapse {
    /// The smallest values share a bucket (the high quantiles stay exact).
    #[default]
    Lowest,
    /// The largest values share a bucket (the low quantiles stay exact).
    Highest,
}

/// A DDSketch: quantiles of numbers with a relative-error guarantee (see the
/// [family docs](super)).
///
/// ```
/// use synopses::quantiles::DDSketch;
///
/// let mut latencies = DDSketch::new(0.01)?;
/// for ms in 1..=1000 {
///     latencies.add(f64::from(ms))?;
/// }
/// let p99 = latencies.quantile(0.99)?.ok_or("empty")?;
/// assert!((p99 - 990.0).abs() <= 0.01 * 990.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct DDSketch {
    mapping: Mapping,
    max_bins: u32,
    collapse: Collapse,
    positive: Store,
    negative: Store,
    /// Values of magnitude below the smallest normal double (zero included).
    zeros: u64,
    /// Every value's weight, saturating.
    count: u64,
    /// The exact extremes (+∞ and −∞ while empty).
    min: f64,
    max: f64,
    /// Values `observe` could not take (NaN, ±∞).
    rejected: u64,
}

/// Builds a [`DDSketch`] with other than the default mapping, bucket limit or collapse.
///
/// ```
/// use synopses::quantiles::{Collapse, DDSketch, IndexMapping};
///
/// let sketch = DDSketch::builder(0.02)
///     .mapping(IndexMapping::LinearInterpolation)
///     .max_bins(1024)
///     .collapse(Collapse::Highest)
///     .build()?;
/// assert_eq!(sketch.max_bins(), 1024);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DDSketchBuilder {
    alpha: f64,
    mapping: IndexMapping,
    max_bins: u32,
    collapse: Collapse,
}

impl DDSketchBuilder {
    /// The index mapping (default [`IndexMapping::Logarithmic`]).
    ///
    /// ```
    /// use synopses::quantiles::{DDSketch, IndexMapping};
    ///
    /// let s = DDSketch::builder(0.01).mapping(IndexMapping::CubicInterpolation).build()?;
    /// assert_eq!(s.mapping(), IndexMapping::CubicInterpolation);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn mapping(mut self, mapping: IndexMapping) -> Self {
        self.mapping = mapping;
        self
    }

    /// The most buckets each store (positive values, negative values) keeps, from 1 to 2^20
    /// (default 2048: at α = 1 %, values from 1 to 10^17 times the smallest kept).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// assert!(DDSketch::builder(0.01).max_bins(0).build().is_err());
    /// ```
    #[must_use]
    pub fn max_bins(mut self, max_bins: u32) -> Self {
        self.max_bins = max_bins;
        self
    }

    /// Which end collapses at the bucket limit (default [`Collapse::Lowest`]).
    ///
    /// ```
    /// use synopses::quantiles::{Collapse, DDSketch};
    ///
    /// let s = DDSketch::builder(0.01).collapse(Collapse::Highest).build()?;
    /// assert_eq!(s.collapse(), Collapse::Highest);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn collapse(mut self, collapse: Collapse) -> Self {
        self.collapse = collapse;
        self
    }

    /// The empty sketch.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `alpha` outside 2^−20 to 0.5, or `max_bins` outside 1 to 2^20.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// assert_eq!(DDSketch::builder(0.9).build().unwrap_err().parameter(), "alpha");
    /// ```
    pub fn build(self) -> Result<DDSketch, ConfigError> {
        if !(MIN_ALPHA..=MAX_ALPHA).contains(&self.alpha) {
            return Err(ConfigError::new("alpha", self.alpha, "a relative accuracy from 2^-20 to 0.5"));
        }
        if !(1..=MAX_BINS).contains(&self.max_bins) {
            return Err(ConfigError::new("max_bins", self.max_bins, "from 1 to 2^20 buckets"));
        }
        Ok(DDSketch::empty(Mapping::new(self.mapping, self.alpha), self.max_bins, self.collapse))
    }
}

impl DDSketch {
    /// The empty sketch of a checked configuration.
    fn empty(mapping: Mapping, max_bins: u32, collapse: Collapse) -> Self {
        Self {
            mapping,
            max_bins,
            collapse,
            positive: Store::default(),
            negative: Store::default(),
            zeros: 0,
            count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            rejected: 0,
        }
    }

    /// An empty sketch of relative accuracy `alpha`, with the logarithmic mapping and 2048
    /// buckets a sign, collapsing the lowest.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `alpha` outside 2^−20 to 0.5.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// assert_eq!(DDSketch::new(0.01)?.relative_accuracy(), 0.01);
    /// assert!(DDSketch::new(0.0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(alpha: f64) -> Result<Self, ConfigError> {
        Self::builder(alpha).build()
    }

    /// A builder for a sketch of relative accuracy `alpha` (checked by
    /// [`build`](DDSketchBuilder::build)).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let s = DDSketch::builder(0.05).max_bins(100).build()?;
    /// assert_eq!(s.relative_accuracy(), 0.05);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn builder(alpha: f64) -> DDSketchBuilder {
        DDSketchBuilder {
            alpha,
            mapping: IndexMapping::default(),
            max_bins: DEFAULT_MAX_BINS,
            collapse: Collapse::default(),
        }
    }

    /// The relative accuracy α: every quantile comes back within `α·|x|` of the true `x`.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// assert_eq!(DDSketch::new(0.02)?.relative_accuracy(), 0.02);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn relative_accuracy(&self) -> f64 {
        self.mapping.alpha
    }

    /// The index mapping.
    ///
    /// ```
    /// use synopses::quantiles::{DDSketch, IndexMapping};
    ///
    /// assert_eq!(DDSketch::new(0.02)?.mapping(), IndexMapping::Logarithmic);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn mapping(&self) -> IndexMapping {
        self.mapping.kind
    }

    /// The bucket limit of each store.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// assert_eq!(DDSketch::new(0.02)?.max_bins(), 2048);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn max_bins(&self) -> u32 {
        self.max_bins
    }

    /// Which end collapses at the bucket limit.
    ///
    /// ```
    /// use synopses::quantiles::{Collapse, DDSketch};
    ///
    /// assert_eq!(DDSketch::new(0.02)?.collapse(), Collapse::Lowest);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn collapse(&self) -> Collapse {
        self.collapse
    }

    /// The store keys of a bucket index: ascending keys collapse first. The positive store
    /// keeps indices (or their negations, to collapse the highest); the negative store the
    /// reverse, since its large indices are the lowest values.
    #[inline]
    fn key(&self, index: i32, negative: bool) -> i32 {
        if negative == (self.collapse == Collapse::Lowest) { -index } else { index }
    }

    /// Adds a value.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `value` for NaN or an infinity, which have no quantile; the
    /// sketch is unchanged.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add(-2.5)?;
    /// s.add(0.0)?;
    /// assert!(s.add(f64::NAN).is_err());
    /// assert_eq!(s.count(), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn add(&mut self, value: f64) -> Result<(), ConfigError> {
        self.add_weighted(value, 1)
    }

    /// Adds a value `weight` times (the count saturates at `u64::MAX`).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `value` for NaN or an infinity, or `weight` for 0.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add_weighted(10.0, 99)?;
    /// s.add_weighted(1000.0, 1)?;
    /// assert!((s.quantile(0.5)?.ok_or("empty")? - 10.0).abs() <= 0.1);
    /// assert!(s.add_weighted(1.0, 0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_weighted(&mut self, value: f64, weight: u64) -> Result<(), ConfigError> {
        if !value.is_finite() {
            return Err(ConfigError::new("value", value, "a finite number"));
        }
        if weight == 0 {
            return Err(ConfigError::new("weight", weight, "at least 1"));
        }
        let magnitude = value.abs();
        let limit = self.max_bins as usize;
        if magnitude < f64::MIN_POSITIVE {
            self.zeros = self.zeros.saturating_add(weight);
        } else {
            let negative = value < 0.0;
            let key = self.key(self.mapping.index(magnitude), negative);
            if negative {
                self.negative.add(key, weight, limit);
            } else {
                self.positive.add(key, weight, limit);
            }
        }
        self.count = self.count.saturating_add(weight);
        // 0.0 for -0.0: the extremes do not depend on which zero came first.
        let value = if value == 0.0 { 0.0 } else { value };
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        Ok(())
    }

    /// The number of values added (with their weights; saturating).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add_weighted(3.0, 5)?;
    /// assert_eq!(s.count(), 5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether no value was added.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// assert!(DDSketch::new(0.01)?.is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The smallest value added, exactly (`None` while empty).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// [3.0, -1.5, 8.0].iter().try_for_each(|&x| s.add(x))?;
    /// assert_eq!((s.min(), s.max()), (Some(-1.5), Some(8.0)));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value added, exactly (`None` while empty).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add(4.0)?;
    /// assert_eq!(s.max(), Some(4.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// Values [`observe`](Operator::observe) could not take (NaN and infinities), which are in
    /// no count or quantile.
    ///
    /// ```
    /// use synopses::core::Operator;
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.observe_all([1.0, f64::NAN, 2.0]);
    /// assert_eq!((s.count(), s.rejected()), (2, 1));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// The number of buckets held (non-zero counts, the zero bucket included): the sketch's
    /// size in its own terms.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// (0..1_000_000).try_for_each(|i| s.add(1.0 + f64::from(i) / 1000.0))?;
    /// // Values from 1 to 1 000 at α = 1 %: ln(1000) / ln(1.01/0.99) ≈ 345 buckets.
    /// assert!((345..=347).contains(&s.buckets()));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn buckets(&self) -> usize {
        self.positive.iter().count() + self.negative.iter().count() + usize::from(self.zeros > 0)
    }

    /// The `q`-quantile: within `α·|x|` of `x`, the value of rank `⌊q·(n − 1)⌋` (from 0) among
    /// the `n` values added, where that value's bucket was not collapsed; `None` while empty.
    /// The answer is kept within the exact minimum and maximum.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `q` outside 0 to 1 (or NaN).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// (1..=100).try_for_each(|i| s.add(f64::from(i)))?;
    /// let median = s.quantile(0.5)?.ok_or("empty")?; // rank ⌊0.5·99⌋ = 49: the value 50
    /// assert!((median - 50.0).abs() <= 0.5);
    /// assert_eq!(s.quantile(0.0)?, Some(1.0)); // the exact minimum
    /// assert!(s.quantile(1.5).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quantile(&self, q: f64) -> Result<Option<f64>, ConfigError> {
        if !(0.0..=1.0).contains(&q) {
            return Err(ConfigError::new("q", q, "a quantile from 0 to 1"));
        }
        if self.count == 0 {
            return Ok(None);
        }
        // The value of rank ⌊q·(n − 1)⌋ is in the bucket where the running count passes it.
        let target = u128::from((q * (self.count - 1) as f64).floor() as u64);
        let mut seen = 0_u128;
        let lowest_first = self.collapse == Collapse::Lowest;
        // Value order: negative values (largest magnitude first), zeros, positive values.
        let value = if let Some(key) = self.negative.find(lowest_first, &mut seen, target) {
            -self.mapping.value(self.key_index(key, true))
        } else if self.zeros > 0 && seen + u128::from(self.zeros) > target {
            0.0
        } else {
            seen += u128::from(self.zeros);
            match self.positive.find(lowest_first, &mut seen, target) {
                Some(key) => self.mapping.value(self.key_index(key, false)),
                None => self.max,
            }
        };
        Ok(Some(value.clamp(self.min, self.max)))
    }

    /// The bucket index of a store key (the inverse of [`key`](Self::key)).
    fn key_index(&self, key: i32, negative: bool) -> i32 {
        self.key(key, negative)
    }

    /// The length of [`to_bytes`](Self::to_bytes)'s output.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let s = DDSketch::new(0.01)?;
    /// assert_eq!(s.encoded_len(), s.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        let store = |s: &Store| 8 + s.counts.iter().map(|&c| varint_len(c)).sum::<usize>();
        ENVELOPE_LEN + 54 + store(&self.positive) + store(&self.negative)
    }

    /// Encodes the sketch in the crate's [binary format](crate::codec), family code 18.
    ///
    /// Body: α (f64), mapping (u8: 0 logarithmic, 1 linear, 2 cubic), collapse (u8: 0 lowest,
    /// 1 highest), bucket limit (u32), count, zeros, rejected (u64), minimum and maximum (f64,
    /// +∞ and −∞ while empty); then the positive store and the negative store, each as its
    /// lowest key (i32), its number of keys (u32) and each key's count as an LEB128 varint.
    /// A key is a bucket index, negated where the store collapses that way (see
    /// [`Collapse`]).
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add(1.0)?;
    /// assert_eq!(&s.to_bytes()[..4], b"SY\x01\x12");
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_f64(self.mapping.alpha);
        w.put_u8(self.mapping.kind.code());
        w.put_u8(u8::from(self.collapse == Collapse::Highest));
        w.put_u32(self.max_bins);
        w.put_u64(self.count);
        w.put_u64(self.zeros);
        w.put_u64(self.rejected);
        w.put_f64(self.min);
        w.put_f64(self.max);
        for store in [&self.positive, &self.negative] {
            w.put_u32(store.offset as u32);
            w.put_u32(store.counts.len() as u32);
            store.counts.iter().for_each(|&c| w.put_varint(c));
        }
        w.finish()
    }

    /// Decodes a sketch written by [`to_bytes`](Self::to_bytes), validating every field: the
    /// parameters, each store's keys within the range of doubles and its size within the
    /// limit (checked against the input's length before anything is allocated), the counts
    /// adding up, and the extremes agreeing with them.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] for anything else.
    ///
    /// ```
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add(42.0)?;
    /// assert_eq!(DDSketch::from_bytes(&s.to_bytes())?, s);
    /// assert!(DDSketch::from_bytes(&s.to_bytes()[..20]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let invalid = |field, reason| DecodeError::InvalidField { field, reason };
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let alpha = r.f64()?;
        let mapping = IndexMapping::from_code(r.u8()?).ok_or(invalid("mapping", "0, 1 or 2"))?;
        let collapse = match r.u8()? {
            0 => Collapse::Lowest,
            1 => Collapse::Highest,
            _ => return Err(invalid("collapse", "0 or 1")),
        };
        let max_bins = r.u32()?;
        let mut sketch =
            Self::builder(alpha).mapping(mapping).collapse(collapse).max_bins(max_bins).build().map_err(|_| {
                invalid("alpha and max_bins", "a relative accuracy from 2^-20 to 0.5, 1 to 2^20 buckets")
            })?;
        let (count, zeros, rejected) = (r.u64()?, r.u64()?, r.u64()?);
        let (min, max) = (r.f64()?, r.f64()?);
        let bound = sketch.mapping.index_bound();
        for negative in [false, true] {
            let offset = r.u32()? as i32;
            let len = r.u32()?;
            if len > max_bins {
                return Err(invalid("store", "more keys than the bucket limit"));
            }
            let len = len as usize;
            r.expect_items(len, 1)?;
            let top = i64::from(offset) + len as i64 - 1;
            if len > 0 && (i64::from(offset).abs() > bound || top.abs() > bound) {
                return Err(invalid("store", "a key beyond the range of doubles"));
            }
            if len == 0 && offset != 0 {
                return Err(invalid("store", "an empty store has offset 0"));
            }
            let mut counts = Vec::with_capacity(len);
            for _ in 0..len {
                counts.push(r.varint()?);
            }
            if counts.first() == Some(&0) || counts.last() == Some(&0) {
                return Err(invalid("store", "a store starts and ends with a held key"));
            }
            let store = Store { offset, counts };
            if negative { sketch.negative = store } else { sketch.positive = store }
        }
        r.finish()?;
        let total = sketch.positive.total().saturating_add(sketch.negative.total()).saturating_add(zeros);
        if total != count {
            return Err(invalid("count", "the counts of the buckets add up to it"));
        }
        let extremes_agree = if count == 0 {
            min == f64::INFINITY && max == f64::NEG_INFINITY
        } else {
            min.is_finite()
                && max.is_finite()
                && min <= max
                && (sketch.negative.is_empty() || min < 0.0)
                && (sketch.positive.is_empty() || max > 0.0)
                && (zeros == 0 || (min < f64::MIN_POSITIVE && max > -f64::MIN_POSITIVE))
                && (min != 0.0 || min.is_sign_positive())
                && (max != 0.0 || max.is_sign_positive())
        };
        if !extremes_agree {
            return Err(invalid("min and max", "the extremes of the values counted"));
        }
        (sketch.count, sketch.zeros, sketch.rejected, sketch.min, sketch.max) = (count, zeros, rejected, min, max);
        Ok(sketch)
    }
}

impl fmt::Debug for DDSketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DDSketch")
            .field("alpha", &self.mapping.alpha)
            .field("mapping", &self.mapping.kind)
            .field("max_bins", &self.max_bins)
            .field("collapse", &self.collapse)
            .field("count", &self.count)
            .field("buckets", &self.buckets())
            .field("min", &self.min())
            .field("max", &self.max())
            .finish()
    }
}

impl Mergeable for DDSketch {
    /// Adds the other sketch's counts: exactly the sketch of both streams, bucket for bucket
    /// (a bucket limit collapses the same keys whatever the order).
    ///
    /// # Errors
    ///
    /// [`MergeError`] naming `alpha`, `mapping`, `max_bins` or `collapse` where the two differ.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::quantiles::DDSketch;
    ///
    /// let (mut a, mut b) = (DDSketch::new(0.01)?, DDSketch::new(0.01)?);
    /// (1..=50).try_for_each(|i| a.add(f64::from(i)))?;
    /// (51..=100).try_for_each(|i| b.add(f64::from(i)))?;
    /// a.merge(&b)?;
    /// assert_eq!(a.count(), 100);
    /// assert!(a.merge(&DDSketch::new(0.02)?).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("alpha", self.mapping.alpha, other.mapping.alpha)?;
        MergeError::check("mapping", self.mapping.kind.code(), other.mapping.kind.code())?;
        MergeError::check("max_bins", self.max_bins, other.max_bins)?;
        MergeError::check(
            "collapse",
            u8::from(self.collapse == Collapse::Highest),
            u8::from(other.collapse == Collapse::Highest),
        )?;
        let limit = self.max_bins as usize;
        self.positive.merge(&other.positive, limit);
        self.negative.merge(&other.negative, limit);
        self.zeros = self.zeros.saturating_add(other.zeros);
        self.count = self.count.saturating_add(other.count);
        self.rejected = self.rejected.saturating_add(other.rejected);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        Ok(())
    }

    /// An empty sketch of the same configuration.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::quantiles::DDSketch;
    ///
    /// let mut s = DDSketch::new(0.01)?;
    /// s.add(1.0)?;
    /// assert!(s.empty_like().is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn empty_like(&self) -> Self {
        Self::empty(self.mapping, self.max_bins, self.collapse)
    }

    fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + 8 * (self.positive.counts.capacity() + self.negative.counts.capacity())
    }
}

macro_rules! observe_numbers {
    ($($t:ty),*) => {$(
        impl Operator<$t> for DDSketch {
            /// [`add`](DDSketch::add); a value it refuses (NaN, an infinity) is counted in
            /// [`rejected`](DDSketch::rejected) instead.
            fn observe(&mut self, item: $t) {
                if self.add(item as f64).is_err() {
                    self.rejected = self.rejected.saturating_add(1);
                }
            }
        }

        impl<'a> Operator<&'a $t> for DDSketch {
            /// As the value itself: what `par_observe` over a slice needs.
            fn observe(&mut self, item: &'a $t) {
                Operator::observe(self, *item);
            }
        }
    )*};
}
observe_numbers!(f64, f32, i64, u64, i32, u32);

codec_impl!(DDSketch, 18);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every quantile of `values` from `sketch` is within α of the true one.
    fn check_quantiles(sketch: &DDSketch, values: &mut [f64]) {
        values.sort_by(f64::total_cmp);
        let alpha = sketch.relative_accuracy();
        for i in 0..=200 {
            let q = f64::from(i) / 200.0;
            let truth = values[(q * (values.len() - 1) as f64).floor() as usize];
            let got = sketch.quantile(q).expect("q").expect("not empty");
            assert!((got - truth).abs() <= alpha * truth.abs() * (1.0 + 1e-9), "q {q}: {got} against {truth}");
        }
    }

    #[test]
    fn every_quantile_is_within_alpha() {
        for mapping in [IndexMapping::Logarithmic, IndexMapping::LinearInterpolation, IndexMapping::CubicInterpolation]
        {
            for collapse in [Collapse::Lowest, Collapse::Highest] {
                let mut sketch = DDSketch::builder(0.01)
                    .mapping(mapping)
                    .collapse(collapse)
                    .max_bins(1 << 16)
                    .build()
                    .expect("config");
                let mut values: Vec<f64> = (0..20_000)
                    .map(|i| {
                        let u = (f64::from(i) * 0.618_033_988_749_895).fract();
                        let sign = if i % 3 == 0 { -1.0 } else { 1.0 };
                        if i % 97 == 0 { 0.0 } else { sign * (u * 40.0 - 20.0).exp() }
                    })
                    .collect();
                values.iter().for_each(|&v| sketch.add(v).expect("finite"));
                check_quantiles(&sketch, &mut values);
            }
        }
    }
}
