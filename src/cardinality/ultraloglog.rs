//! UltraLogLog: HyperLogLog's registers plus two bits of history, with its FGRA,
//! maximum-likelihood and martingale estimators. The teaching text is in the
//! [family docs](super).

use std::fmt;

use super::estimators::precision_for;
use super::history::{Boxed, Core};
use super::hyperloglog::HyperLogLog;
use super::lifecycle::Lifecycle;
use super::optimal;
use super::registers::Shape;
use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::{Bounds, Confidence, ConfigError, DecodeError, MergeError, Mergeable, hashed_operator};
use crate::hash::{DEFAULT_SEED, Hashable};

/// Which estimator [`UltraLogLog::register_estimate`] uses to answer from the registers alone.
///
/// ```
/// use synopses::cardinality::{UltraLogLog, UltraLogLogEstimator};
///
/// let mut ull = UltraLogLog::new(10)?;
/// ull.observe_all(0..100_000_u64);
/// let ml = ull.register_estimate(UltraLogLogEstimator::MaximumLikelihood);
/// let fgra = ull.register_estimate(UltraLogLogEstimator::Fgra);
/// assert!((ml / 100_000.0 - 1.0).abs() < 0.1 && (fgra / 100_000.0 - 1.0).abs() < 0.1);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum UltraLogLogEstimator {
    /// Maximum likelihood over every value each register knows it has or has not seen
    /// (memory-variance product ≈ 4.63; the default).
    #[default]
    MaximumLikelihood,
    /// Ertl's "further generalized remaining area" estimator: a closed form, a single pass
    /// over the registers and no iteration (memory-variance product ≈ 4.89).
    Fgra,
}

/// An UltraLogLog distinct counter (Ertl, VLDB 2024): one byte per register, like an 8-bit
/// HyperLogLog, but the byte holds more. See the [family docs](super) for how it works.
///
/// Each register keeps the largest update value `u` (HyperLogLog's register) in six bits and,
/// in the two bits HyperLogLog leaves unused, whether the values `u − 1` and `u − 2` occurred
/// too. At the same memory that gives a standard error about 27 % below HyperLogLog's 8-bit
/// registers after a merge (memory-variance product 4.63 by maximum likelihood, against 8.6
/// for HyperLogLog's register estimator) and 21 % below on one stream (martingales: 3.47
/// against 5.55). Small sketches stay small: until about `3m/16` distinct items the sketch
/// keeps HyperLogLog's exact set of 32-bit entries and answers with the exact count
/// ([`is_sparse`](Self::is_sparse)), then turns dense by itself.
///
/// ```
/// use synopses::cardinality::UltraLogLog;
/// use synopses::core::Confidence;
///
/// let mut ull = UltraLogLog::new(12)?; // 4 KiB, standard error 1.0 % (1.2 % merged)
/// for i in 0..1_000_000_u64 {
///     ull.observe(i % 250_000);
/// }
/// assert!((ull.estimate() / 250_000.0 - 1.0).abs() < 0.04);
/// assert!(ull.bounds(Confidence::ThreeSigma).contains(250_000.0));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct UltraLogLog {
    core: Boxed<u8>,
}

/// Update values never exceed `65 − p`, so `4u + 3` fits a byte from precision 3 on.
const fn shape(precision: u8) -> Shape {
    Shape { p: precision, t: 0, d: 2 }
}

impl UltraLogLog {
    /// The smallest supported precision (8 registers).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// assert!(UltraLogLog::new(UltraLogLog::MIN_PRECISION).is_ok());
    /// assert!(UltraLogLog::new(UltraLogLog::MIN_PRECISION - 1).is_err());
    /// ```
    pub const MIN_PRECISION: u8 = 3;

    /// The largest supported precision (2^26 registers, 64 MiB).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// assert!(UltraLogLog::new(UltraLogLog::MAX_PRECISION + 1).is_err());
    /// ```
    pub const MAX_PRECISION: u8 = 26;

    /// A sketch of `2^precision` one-byte registers with the [default seed](DEFAULT_SEED).
    /// `precision` must be in `3..=26`.
    ///
    /// | precision | bytes | error, one stream (martingale) | error, merged (ML) |
    /// |---|---|---|---|
    /// | 6 | 64 | 8.2 % | 9.5 % |
    /// | 8 | 256 | 4.1 % | 4.8 % |
    /// | 10 | 1 KiB | 2.1 % | 2.4 % |
    /// | 12 | 4 KiB | 1.03 % | 1.19 % |
    /// | 14 | 16 KiB | 0.51 % | 0.59 % |
    /// | 16 | 64 KiB | 0.26 % | 0.30 % |
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let ull = UltraLogLog::new(12)?;
    /// assert_eq!(ull.precision(), 12);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(precision: u8) -> Result<Self, ConfigError> {
        Self::with_seed(precision, DEFAULT_SEED)
    }

    /// A sketch of `2^precision` registers hashing with `seed`. Sketches merge only with
    /// sketches of the same seed.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let ull = UltraLogLog::with_seed(12, 7)?;
    /// assert_eq!(ull.seed(), 7);
    /// assert!(UltraLogLog::with_seed(27, 7).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(precision: u8, seed: u64) -> Result<Self, ConfigError> {
        if !(Self::MIN_PRECISION..=Self::MAX_PRECISION).contains(&precision) {
            return Err(ConfigError::new("precision", precision, "an integer in 3..=26"));
        }
        Ok(Self { core: Boxed::new(Core::try_new(shape(precision), seed)?) })
    }

    /// The smallest sketch whose standard error after a merge (maximum likelihood,
    /// `√(4.63 / (8m))`, the worst case) is at most `relative_error`, with the default seed.
    ///
    /// `relative_error` must be in about `[0.0000929, 0.2690]` (the errors of precisions 26
    /// and 3).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// assert_eq!(UltraLogLog::with_error(0.01)?.precision(), 13);
    /// assert!(UltraLogLog::with_error(0.0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_error(relative_error: f64) -> Result<Self, ConfigError> {
        Self::with_error_and_seed(relative_error, DEFAULT_SEED)
    }

    /// [`with_error`](Self::with_error), hashing with `seed`: on untrusted items, a secret
    /// seed keeps an adversary from choosing items whose hashes fool the estimate (see the
    /// [family docs](super#adversaries)).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let ull = UltraLogLog::with_error_and_seed(0.01, 0x5EC2E7)?;
    /// assert_eq!((ull.precision(), ull.seed()), (13, 0x5EC2E7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_error_and_seed(relative_error: f64, seed: u64) -> Result<Self, ConfigError> {
        let error_at = |p| optimal::relative_standard_error(optimal::mvp_ml(shape(p)), shape(p));
        match precision_for(relative_error, Self::MIN_PRECISION..=Self::MAX_PRECISION, error_at) {
            Some(p) => Self::with_seed(p, seed),
            None => Err(ConfigError::new("relative_error", relative_error, "a number in about [0.0000929, 0.2690]")),
        }
    }

    /// The precision `p`: the sketch has `2^p` registers.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// assert_eq!(UltraLogLog::new(9)?.precision(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn precision(&self) -> u8 {
        self.core.shape.p
    }

    /// The seed items are hashed with.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// assert_eq!(UltraLogLog::with_seed(9, 3)?.seed(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.core.seed
    }

    /// Observes one item.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut ull = UltraLogLog::new(12)?;
    /// ull.observe("alice");
    /// ull.observe(42_u64);
    /// ull.observe("alice");
    /// assert!((ull.estimate() - 2.0).abs() < 0.01);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn observe<T: Hashable>(&mut self, item: T) {
        self.core.observe_hash(item.hash64(self.core.seed));
    }

    /// Observes every item of an iterator: the same state as [`observe`](Self::observe) on
    /// each.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut batch = UltraLogLog::new(10)?;
    /// batch.observe_all(0..10_000_u64);
    /// let mut one_by_one = UltraLogLog::new(10)?;
    /// (0..10_000_u64).for_each(|i| one_by_one.observe(i));
    /// assert_eq!(batch, one_by_one);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<T: Hashable, I: IntoIterator<Item = T>>(&mut self, items: I) {
        let seed = self.core.seed;
        self.core.observe_hashes(items.into_iter().map(|item| item.hash64(seed)));
    }

    /// Observes many items by their 64-bit hashes (under this sketch's seed, as
    /// [`observe_hash`](Self::observe_hash) takes them): the same state as `observe_hash` on
    /// each, through the batch loop of [`observe_all`](Self::observe_all).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    /// use synopses::hash::Hashable;
    ///
    /// let mut by_hash = UltraLogLog::new(10)?;
    /// let seed = by_hash.seed();
    /// by_hash.observe_hashes((0..5_000_u64).map(|i| i.hash64(seed)));
    /// let mut by_item = UltraLogLog::new(10)?;
    /// by_item.observe_all(0..5_000_u64);
    /// assert_eq!(by_hash, by_item);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_hashes<I: IntoIterator<Item = u64>>(&mut self, hashes: I) {
        self.core.observe_hashes(hashes.into_iter());
    }

    /// Observes an item by its 64-bit hash, for callers that hash once and feed several
    /// structures. The hash must come from a good 64-bit hash function (such as
    /// [`Hashable::hash64`] with this sketch's seed), or the estimate is meaningless.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    /// use synopses::hash::Hashable;
    ///
    /// let mut a = UltraLogLog::new(12)?;
    /// let mut b = UltraLogLog::new(12)?;
    /// a.observe("x");
    /// b.observe_hash("x".hash64(b.seed()));
    /// assert_eq!(a, b);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe_hash(&mut self, hash: u64) {
        self.core.observe_hash(hash);
    }

    /// The estimated number of distinct items: the exact count while the sketch is
    /// [sparse](Self::is_sparse), then the martingale estimate while it has seen only its own
    /// stream, the maximum-likelihood estimate from the registers after a merge or a
    /// reduction.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut ull = UltraLogLog::new(12)?;
    /// ull.observe_all(0..100_000_u64);
    /// assert!((ull.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.0103);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn estimate(&self) -> f64 {
        self.core
            .exact()
            .or(self.core.martingale_estimate())
            .unwrap_or_else(|| self.register_estimate(UltraLogLogEstimator::MaximumLikelihood))
    }

    /// The estimate from the registers alone, by `estimator`: what any sketch with these
    /// registers answers, merged or not. One pass over the registers. While the sketch is
    /// [sparse](Self::is_sparse), the exact count.
    ///
    /// Both estimators remove their bias to first order in `1/m` (maximum likelihood divides
    /// by `1 + c/m`, `c = 0.4815`; FGRA's scale carries a like term). Far below `m` items the
    /// first-order term is not the whole bias, and a relative bias of at most `c/m` remains
    /// (−0.09 % at one item and precision 8, measured; the martingale has none).
    ///
    /// ```
    /// use synopses::cardinality::{UltraLogLog, UltraLogLogEstimator};
    ///
    /// let mut ull = UltraLogLog::new(12)?;
    /// ull.observe_all(0..100_000_u64);
    /// let ml = ull.register_estimate(UltraLogLogEstimator::MaximumLikelihood);
    /// assert!((ml / 100_000.0 - 1.0).abs() < 4.0 * 0.0119);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn register_estimate(&self, estimator: UltraLogLogEstimator) -> f64 {
        if let Some(n) = self.core.exact() {
            return n;
        }
        match estimator {
            UltraLogLogEstimator::MaximumLikelihood => self.core.ml_estimate(),
            UltraLogLogEstimator::Fgra => optimal::fgra(self.core.shape, &self.core.byte_histogram()),
        }
    }

    /// The martingale estimate, if the sketch has one: it exists while the sketch has seen
    /// only its own stream (merging in an empty sketch of the same or a finer precision, or
    /// merging into an empty one, keeps it). Unbiased, with relative standard error `√(3.47 / (8m))`.
    /// A [sparse](Self::is_sparse) sketch has none: it counts exactly; its martingale starts at
    /// that count when it turns dense.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut a = UltraLogLog::new(8)?;
    /// let mut b = UltraLogLog::new(8)?;
    /// a.observe_all(0..10_000_u64);
    /// b.observe_all(5_000..20_000_u64);
    /// assert!(a.martingale_estimate().is_some());
    /// a.merge(&b)?;
    /// assert!(a.martingale_estimate().is_none());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn martingale_estimate(&self) -> Option<f64> {
        self.core.martingale_estimate()
    }

    /// The relative standard error of [`estimate`](Self::estimate) as the sketch stands:
    /// `√(MVP / (8m))` with the memory-variance product of the estimator in use, 3.47 for
    /// the martingale and 4.63 for maximum likelihood (Ertl 2024); 0 while the sketch is
    /// [sparse](Self::is_sparse). These are the limits for large `m`; the smallest sketches
    /// err a little more: we measured up to 5 % more at precision 4 and 8 % more at
    /// precision 3 (4000 trials).
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut ull = UltraLogLog::new(12)?;
    /// assert_eq!(ull.relative_standard_error(), 0.0); // sparse: exact
    /// ull.observe_all(0..10_000_u64);
    /// assert!((ull.relative_standard_error() - (3.47_f64 / (8.0 * 4096.0)).sqrt()).abs() < 1e-4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn relative_standard_error(&self) -> f64 {
        self.core.relative_standard_error()
    }

    /// A confidence interval for the number of distinct items:
    /// `estimate · (1 ± z · relative_standard_error)`, its lower end raised to the number of
    /// distinct (register, value) pairs the sketch knows it has seen. While the sketch is
    /// [sparse](Self::is_sparse), the exact count, its upper end allowing for items whose
    /// 32-bit entries coincide (probability `2^−26/3` per pair).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    /// use synopses::core::Confidence;
    ///
    /// let mut ull = UltraLogLog::new(12)?;
    /// ull.observe_all(0..50_000_u64);
    /// let b = ull.bounds(Confidence::TwoSigma);
    /// assert!(b.lower < 50_000.0 && 50_000.0 < b.upper);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn bounds(&self, confidence: Confidence) -> Bounds {
        self.core.bounds(self.estimate(), confidence)
    }

    /// Bytes of memory the sketch holds (the struct and its registers, or its entries while
    /// [sparse](Self::is_sparse): never more than the registers would take).
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut ull = UltraLogLog::new(12)?;
    /// assert!(ull.size_in_bytes() < 128);
    /// ull.observe_all(0..10_000_u64);
    /// assert!(ull.size_in_bytes() >= 4096 && ull.size_in_bytes() < 4096 + 128);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.core.heap_bytes()
    }

    /// Whether the sketch is still in its exact, sparse small-range mode: a set of 32-bit
    /// entries, one per distinct item (HyperLogLog's entries, which hold the register and
    /// update value at every precision), at most `3m/16` of them, so never more bytes than
    /// the `m` registers. It answers with the exact count, and turns dense by itself.
    /// Precision 3 (8 bytes of registers, less than the smallest table) has no sparse mode.
    ///
    /// ```
    /// # use synopses::cardinality::UltraLogLog;
    /// let mut ull = UltraLogLog::new(10)?;
    /// ull.observe_all(0..100_u64);
    /// assert!(ull.is_sparse());
    /// assert_eq!(ull.estimate(), 100.0);
    /// ull.observe_all(0..1000_u64);
    /// assert!(!ull.is_sparse());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_sparse(&self) -> bool {
        self.core.is_sparse()
    }

    /// Merges `other` into `self`: afterwards `self` holds the registers of one sketch that
    /// observed both streams. Each register becomes the union of what the two registers have
    /// seen (the larger maximum, the histories shifted into line and OR-ed), exactly.
    ///
    /// Both sketches must have the same precision and seed; otherwise a [`MergeError`] is
    /// returned and `self` is unchanged. To combine sketches of different precisions, use
    /// [`merge_reducing`](Self::merge_reducing).
    ///
    /// A merge ends the martingale estimate (but for the empty sketch's: merging the empty
    /// sketch, or merging into it, changes nothing), and the sketch answers by maximum
    /// likelihood from then on.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let mut a = UltraLogLog::new(12)?;
    /// let mut b = UltraLogLog::new(12)?;
    /// a.observe_all(0..60_000_u64);
    /// b.observe_all(40_000..100_000_u64);
    /// a.merge(&b)?;
    /// assert!((a.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.0119);
    /// assert!(a.merge(&UltraLogLog::new(10)?).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("precision", self.precision(), other.precision())?;
        MergeError::check("seed", self.core.seed, other.core.seed)?;
        self.core.merge_same(&other.core);
        Ok(())
    }

    /// Merges `other` into `self` at the smaller of the two precisions: whichever sketch is
    /// finer is first [reduced](Self::reduce) to the other's precision, exactly, then the two
    /// merge as [`merge`](Self::merge) does. Afterwards `self` holds the registers of one
    /// sketch of that precision that observed both streams, so its standard error is that of
    /// a merged sketch of the coarser precision, `√(4.63 / (8m))` with its `m`, whatever the
    /// finer sketch's was. The seeds must match; otherwise a [`MergeError`] is returned and
    /// `self` is unchanged.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let mut a = UltraLogLog::new(12)?;
    /// let mut b = UltraLogLog::new(10)?;
    /// a.observe_all(0..60_000_u64);
    /// b.observe_all(40_000..100_000_u64);
    /// a.merge_reducing(&b)?;
    /// assert_eq!(a.precision(), 10);
    /// assert!((a.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.024);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merge_reducing(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("seed", self.core.seed, other.core.seed)?;
        self.core.merge_reducing(&other.core);
        Ok(())
    }

    /// This sketch at a lower precision: the same registers as if a sketch of `precision`
    /// had observed the same items. [`merge_reducing`](Self::merge_reducing) uses it to merge
    /// sketches of different precisions. The martingale estimate does not carry over to a
    /// lower precision; at the sketch's own precision this is the sketch itself.
    ///
    /// ```
    /// use synopses::cardinality::{UltraLogLog, UltraLogLogEstimator::MaximumLikelihood};
    ///
    /// let mut fine = UltraLogLog::new(12)?;
    /// let mut coarse = UltraLogLog::new(9)?;
    /// fine.observe_all(0..50_000_u64);
    /// coarse.observe_all(0..50_000_u64);
    /// let reduced = fine.reduce(9)?;
    /// // The registers of `coarse`, without the martingale of its one stream.
    /// assert_eq!(reduced.register_estimate(MaximumLikelihood), coarse.register_estimate(MaximumLikelihood));
    /// assert!(reduced.martingale_estimate().is_none() && coarse.martingale_estimate().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reduce(&self, precision: u8) -> Result<Self, ConfigError> {
        if !(Self::MIN_PRECISION..=self.precision()).contains(&precision) {
            return Err(ConfigError::new("precision", precision, "an integer from 3 to the sketch's precision"));
        }
        Ok(Self { core: Boxed::new(self.core.reduce(precision)) })
    }

    /// The [`HyperLogLog`] of the same precision and seed that observed the same items: its
    /// registers are the update values `u` of these. A [sparse](Self::is_sparse) sketch gives
    /// the sparse HyperLogLog of the same entries; a dense one a dense HyperLogLog (a sparse
    /// one's exact entries cannot be recovered from registers), without a martingale.
    /// HyperLogLog's precisions are `4..=18`: outside them (precision 3, or above 18) this is a
    /// [`ConfigError`]; [`reduce`](Self::reduce) a finer sketch to 18 first.
    ///
    /// ```
    /// use synopses::cardinality::{HyperLogLog, UltraLogLog};
    ///
    /// let mut ull = UltraLogLog::new(10)?;
    /// let mut hll = HyperLogLog::new(10)?;
    /// ull.observe_all(0..100_000_u64);
    /// hll.observe_all(0..100_000_u64);
    /// let converted = ull.to_hyperloglog()?;
    /// // The registers of `hll`, without the martingale of its one stream.
    /// assert_eq!(converted.register_estimate(), hll.register_estimate());
    /// assert!(converted.martingale_estimate().is_none());
    /// assert!(UltraLogLog::new(20)?.to_hyperloglog().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_hyperloglog(&self) -> Result<HyperLogLog, ConfigError> {
        let p = self.precision();
        if !(HyperLogLog::MIN_PRECISION..=HyperLogLog::MAX_PRECISION).contains(&p) {
            return Err(ConfigError::new("precision", p, "an integer in 4..=18 (HyperLogLog's precisions)"));
        }
        if self.core.is_sparse() {
            return Ok(HyperLogLog::from_entries(p, self.core.seed, self.core.sparse.entries()));
        }
        let registers: Vec<u8> = self.core.registers.iter().map(|&r| r >> 2).collect();
        Ok(HyperLogLog::from_registers(p, self.core.seed, registers))
    }

    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let mut x = UltraLogLog::new(10)?;
    /// x.observe_all(0..10_000_u64);
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 1 + self.core.encoded_len()
    }

    /// Encodes the sketch in the crate's [binary format](crate::codec), family code 10.
    ///
    /// Body: precision (u8), flags (u8: bit 0 martingale present, bit 1 sparse), seed (u64),
    /// the martingale (f64) if present, then either the number of entries (u32) and the
    /// entries in ascending order (u32 each), or the `m` registers, one byte each.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let mut ull = UltraLogLog::new(10)?;
    /// ull.observe_all(0..10_000_u64);
    /// let bytes = ull.to_bytes();
    /// assert_eq!(bytes.len(), 4 + 1 + 1 + 8 + 8 + 1024 + 8);
    /// assert_eq!(UltraLogLog::from_bytes(&bytes)?, ull);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_u8(self.precision());
        self.core.encode(&mut w);
        w.finish()
    }

    /// Encodes the sketch like [`to_bytes`](Self::to_bytes), with the registers of a dense
    /// sketch entropy-coded: about 4 bits a register instead of 8 once the sketch holds many
    /// more distinct items than registers, the best distinct counter per serialized byte. A
    /// sparse sketch's entries are gap-coded instead: about `log2(2^26/n) + 3.5` bits an entry
    /// instead of 32 (at precision 14, 1000 items in 2 467 bytes instead of 4 026). Sketches
    /// the coded form would not shrink (a crafted or saturated one) are written as
    /// [`to_bytes`](Self::to_bytes) writes them; both decode through
    /// [`from_bytes`](Self::from_bytes).
    ///
    /// The body of a sparse coded sketch: precision (u8), flags (u8: bit 1 sparse, bit 2
    /// coded, bit 3 default seed), the seed (u64) unless it is the default, the number of
    /// entries (a varint) and their Rice-coded gaps and unary ranks (see the
    /// [`cardinality`](super) module docs).
    ///
    /// The body of a dense coded sketch: precision (u8), flags (u8: bit 0 martingale present,
    /// bit 2 coded, bit 3 default seed), the seed (u64) unless it is the default, the martingale
    /// (f64) if present, the model's scale code (u16: `λ = n/m` is `2^(code/16 − 64)`), the
    /// lengths in bytes of the first three of four streams (varints), and the four streams,
    /// the last one to the end of the body. Stream `s` holds the registers of quarter `s`, each
    /// one's codeword (first bit lowest in each byte, the last byte padded with zeros) in the
    /// canonical Huffman code, at most 11 bits long, of the probability that a Poisson number
    /// `λ` of items gives each register value; the values rarer than `2^-12` share an escape
    /// codeword followed by their byte. The encoder and the decoder build the same code on
    /// every platform whose `f64` arithmetic rounds each operation in IEEE binary64 (every
    /// 64-bit target; not x87-only ones such as i586): the probabilities come from basic
    /// operations only, and the code from integers (the tests pin a digest of the codes of
    /// every scale at four shapes, and of one scale in five at the others). The decoder
    /// accepts only
    /// what the encoder writes (the scale of the registers' estimate, the default seed left
    /// out, the coded form shorter than the plain one, streams ending where their registers
    /// do), so a state has one coded encoding.
    ///
    /// Measured at `n ≥ 10·m`: about 4.05 bits a register; with the header, a memory-variance
    /// product of 2.2 to 2.3 after a merge (maximum-likelihood estimator) at 1 and 4 KiB,
    /// against 4.63 plain and 2.4 for DataSketches' CPC (`cargo run --release -p
    /// synopses-benches --example per_byte`). Coding costs a table lookup a register, or a
    /// pair, each way (the code's tables are built once a process for each scale): 2.4 and 5.8
    /// µs to encode and decode at precision 12, against 0.30 and 2.4 µs plain and 4.1 and 10.4
    /// µs for CPC (`cargo bench -p synopses-benches --bench cardinality -- ull_compressed`).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let mut ull = UltraLogLog::new(12)?;
    /// ull.observe_all(0..1_000_000_u64);
    /// let (plain, coded) = (ull.to_bytes(), ull.to_compressed_bytes());
    /// assert!(coded.len() < plain.len() * 6 / 10); // 4 KiB of registers in about 2 KiB
    /// assert_eq!(UltraLogLog::from_bytes(&coded)?, ull);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn to_compressed_bytes(&self) -> Vec<u8> {
        let Some(coded) = self.core.compressed() else {
            return self.to_bytes();
        };
        let mut w = Writer::new(Self::FAMILY, ENVELOPE_LEN + 1 + self.core.coded_len(&coded));
        w.put_u8(self.precision());
        self.core.encode_coded(&mut w, &coded);
        w.finish()
    }

    /// Decodes a sketch written by [`to_bytes`](Self::to_bytes) or
    /// [`to_compressed_bytes`](Self::to_compressed_bytes), validating every field:
    /// each register must be one an UltraLogLog can reach, and the martingale at least the
    /// number of changes the registers show.
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// let ull = UltraLogLog::new(8)?;
    /// assert_eq!(UltraLogLog::from_bytes(&ull.to_bytes())?, ull);
    /// assert!(UltraLogLog::from_bytes(b"not a sketch").is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let precision = r.u8()?;
        if !(Self::MIN_PRECISION..=Self::MAX_PRECISION).contains(&precision) {
            return Err(DecodeError::InvalidField { field: "precision", reason: "outside 3..=26" });
        }
        let core = Boxed::new(Core::decode(&mut r, shape(precision))?);
        r.finish()?;
        Ok(Self { core })
    }
}

impl PartialEq for UltraLogLog {
    /// Same configuration, seed and state: the registers or the entries, and the martingale,
    /// bit for bit (or none). Equal sketches give equal answers to every query, and the same
    /// bytes; a sketch that merged two streams is not equal to one that observed their union
    /// (same registers, but no martingale, and another estimate).
    fn eq(&self, other: &Self) -> bool {
        self.core == other.core
    }
}

impl Eq for UltraLogLog {}

impl fmt::Debug for UltraLogLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UltraLogLog")
            .field("precision", &self.precision())
            .field("seed", &self.core.seed)
            .field("estimate", &self.estimate())
            .finish()
    }
}

hashed_operator!(UltraLogLog, batch);

impl Mergeable for UltraLogLog {
    fn size_in_bytes(&self) -> usize {
        UltraLogLog::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        UltraLogLog::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { core: Boxed::new(self.core.empty_like()) }
    }
}

codec_impl!(UltraLogLog, 10);
