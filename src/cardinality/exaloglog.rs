//! ExaLogLog: registers of `6 + t + d` bits that keep the largest update value on a finer
//! scale and `d` bits of history, with maximum-likelihood and martingale estimators. The
//! teaching text is in the [family docs](super).

use std::fmt;

use super::estimators::precision_for;
use super::history::{Boxed, Core};
use super::lifecycle::Lifecycle;
use super::optimal;
use super::registers::Shape;
use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::{Bounds, Confidence, ConfigError, DecodeError, MergeError, Mergeable, hashed_operator};
use crate::hash::{DEFAULT_SEED, Hashable};

/// The shape of an [`ExaLogLog`]: how many registers, and what each remembers. Build one with
/// its fields, or [`recommended`](Self::recommended) for the most accurate per bit.
///
/// ```
/// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
///
/// let shape = ExaLogLogShape { precision: 12, t: 1, d: 9 }; // 16-bit registers
/// let ell = ExaLogLog::with_shape(shape)?;
/// assert_eq!(ell.shape(), shape);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExaLogLogShape {
    /// The precision `p`: `2^p` registers, `p` in `2..=26`.
    pub precision: u8,
    /// Each power-of-two level of the update values is split into `2^t`, `t` in `0..=4`.
    pub t: u8,
    /// The bits of history per register: whether each of the `d` values below the maximum
    /// occurred. At most `26 − t`, so that a register (`6 + t + d` bits) fits 32 bits.
    pub d: u8,
}

impl ExaLogLogShape {
    /// The recommended shape at `precision`: `t = 2`, `d = 20`, the lowest memory-variance
    /// product (28-bit registers). What [`ExaLogLog::new`] builds.
    ///
    /// ```
    /// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    ///
    /// assert_eq!(ExaLogLogShape::recommended(10), ExaLogLogShape { precision: 10, t: 2, d: 20 });
    /// assert_eq!(ExaLogLog::new(10)?.shape(), ExaLogLogShape::recommended(10));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn recommended(precision: u8) -> Self {
        Self { precision, t: 2, d: 20 }
    }

    fn internal(self) -> Shape {
        Shape { p: self.precision, t: self.t, d: self.d }
    }
}

/// An ExaLogLog distinct counter (Ertl, 2025). See the [family docs](super) for how it works.
///
/// Each register keeps the largest update value `u` on a scale `2^t` times finer than
/// HyperLogLog's, and whether each of the `d` values below `u` occurred. The recommended
/// configuration, `t = 2`, `d = 20` (28-bit registers), has the lowest memory-variance
/// product of the family: 3.67 with maximum likelihood and 2.83 with the martingale, against
/// 6.48 and 4.16 for HyperLogLog's 6-bit registers (43 % less memory at the same error).
/// Update values reach `(65 − p − t)·2^t`, so no register saturates before the 64-bit hash
/// itself runs out of distinct values, near `2^64 ≈ 1.8·10^19` items: past the exa-scale
/// (`10^18`), which the tests reach by simulation.
///
/// Registers take 32 bits in memory and `6 + t + d` bits in [`to_bytes`](Self::to_bytes).
/// Small sketches stay small: until about `3m/4` distinct items the sketch keeps an exact set
/// of 32-bit entries (4 bytes per item) and answers with the exact count
/// ([`is_sparse`](Self::is_sparse)), then turns dense by itself.
///
/// # The largest precisions are born dense
///
/// An entry holds the top `26 − t` and the low `t` bits of a hash, enough to place it in a
/// register at every precision up to `26 − t`. Above that (precisions 25 and 26 for the
/// default `t = 2`; from `27 − t` on in general) a sketch has no sparse mode: it allocates
/// all its registers when it is made, `4 · 2^p` bytes, and encodes to `(6 + t + d) · 2^p / 8`
/// bytes even while empty:
///
/// | precision (`t = 2, d = 20`) | memory at construction | encoded |
/// |---|---|---|
/// | 24 and below | under 1 KiB until items arrive | a few bytes per item |
/// | 25 | 128 MiB | 112 MiB |
/// | 26 | 256 MiB | 224 MiB |
///
/// (A sparse mode there would need 64-bit entries, and another encoding.)
///
/// ```
/// use synopses::cardinality::ExaLogLog;
/// use synopses::core::Confidence;
///
/// let mut ell = ExaLogLog::new(10)?; // t = 2, d = 20: 3.5 KiB encoded, error 1.1 % (merged)
/// for i in 0..1_000_000_u64 {
///     ell.observe(i % 250_000);
/// }
/// assert!((ell.estimate() / 250_000.0 - 1.0).abs() < 0.04);
/// assert!(ell.bounds(Confidence::ThreeSigma).contains(250_000.0));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct ExaLogLog {
    core: Boxed<u32>,
}

impl ExaLogLog {
    /// The smallest supported precision (4 registers).
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// assert!(ExaLogLog::new(ExaLogLog::MIN_PRECISION).is_ok());
    /// assert!(ExaLogLog::new(ExaLogLog::MIN_PRECISION - 1).is_err());
    /// ```
    pub const MIN_PRECISION: u8 = 2;

    /// The largest supported precision (2^26 registers: 256 MiB in memory, allocated at
    /// construction for the default `t = 2`; see
    /// [born dense](Self#the-largest-precisions-are-born-dense)).
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// assert!(ExaLogLog::new(ExaLogLog::MAX_PRECISION + 1).is_err());
    /// ```
    pub const MAX_PRECISION: u8 = 26;

    /// The largest `t`: each power-of-two level split into `2^t` update values.
    ///
    /// ```
    /// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    ///
    /// let shape = ExaLogLogShape { precision: 8, t: ExaLogLog::MAX_T + 1, d: 0 };
    /// assert!(ExaLogLog::with_shape(shape).is_err());
    /// ```
    pub const MAX_T: u8 = 4;

    /// The most bits a register may take, `6 + t + d` (`d` is at most `26 − t`).
    ///
    /// ```
    /// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    ///
    /// let full = ExaLogLogShape { precision: 8, t: 2, d: 24 };
    /// assert_eq!(6 + full.t + full.d, ExaLogLog::MAX_REGISTER_BITS);
    /// assert!(ExaLogLog::with_shape(full).is_ok());
    /// assert!(ExaLogLog::with_shape(ExaLogLogShape { d: 25, ..full }).is_err());
    /// ```
    pub const MAX_REGISTER_BITS: u8 = 32;

    /// A sketch of `2^precision` registers with the recommended `t = 2`, `d = 20` and the
    /// [default seed](DEFAULT_SEED). `precision` must be in `2..=26`. Precisions 25 and 26
    /// allocate their registers here, 128 and 256 MiB (see
    /// [born dense](Self#the-largest-precisions-are-born-dense)); the others start small.
    ///
    /// | precision | bytes encoded | error, one stream (martingale) | error, merged (ML) |
    /// |---|---|---|---|
    /// | 6 | 224 | 4.0 % | 4.5 % |
    /// | 8 | 896 | 2.0 % | 2.3 % |
    /// | 10 | 3.5 KiB | 0.99 % | 1.13 % |
    /// | 12 | 14 KiB | 0.50 % | 0.57 % |
    /// | 14 | 56 KiB | 0.25 % | 0.28 % |
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let ell = ExaLogLog::new(12)?;
    /// assert_eq!((ell.precision(), ell.t(), ell.d()), (12, 2, 20));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(precision: u8) -> Result<Self, ConfigError> {
        Self::with_seed(precision, DEFAULT_SEED)
    }

    /// [`new`](Self::new), hashing with `seed`. Sketches merge only with sketches of the same
    /// seed.
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let ell = ExaLogLog::with_seed(10, 7)?;
    /// assert_eq!((ell.precision(), ell.seed()), (10, 7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(precision: u8, seed: u64) -> Result<Self, ConfigError> {
        Self::with_shape_and_seed(ExaLogLogShape::recommended(precision), seed)
    }

    /// A sketch of the given [shape](ExaLogLogShape) with the [default seed](DEFAULT_SEED).
    /// Needs `precision` in `2..=26`, `t` in `0..=4` and `6 + t + d <= 32`. `(t, d) = (2, 20)`
    /// is the most accurate per bit; `(2, 24)` fills 32 bits; `(0, 2)` holds the same
    /// information as [`UltraLogLog`](super::UltraLogLog). A precision above `26 − t`
    /// allocates its `4 · 2^precision` bytes of registers here (see
    /// [born dense](Self#the-largest-precisions-are-born-dense)); the others start small.
    ///
    /// ```
    /// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    ///
    /// let ell = ExaLogLog::with_shape(ExaLogLogShape { precision: 10, t: 2, d: 24 })?;
    /// assert_eq!((ell.t(), ell.d()), (2, 24));
    /// assert!(ExaLogLog::with_shape(ExaLogLogShape { precision: 10, t: 2, d: 25 }).is_err()); // 33 bits
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_shape(shape: ExaLogLogShape) -> Result<Self, ConfigError> {
        Self::with_shape_and_seed(shape, DEFAULT_SEED)
    }

    /// [`with_shape`](Self::with_shape), hashing with `seed`.
    ///
    /// ```
    /// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    ///
    /// let shape = ExaLogLogShape { precision: 10, t: 1, d: 9 };
    /// let ell = ExaLogLog::with_shape_and_seed(shape, 7)?;
    /// assert_eq!((ell.shape(), ell.seed()), (shape, 7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_shape_and_seed(shape: ExaLogLogShape, seed: u64) -> Result<Self, ConfigError> {
        Ok(Self { core: Boxed::new(Core::try_new(Self::validated(shape)?, seed)?) })
    }

    /// The smallest sketch of the recommended shape (`t = 2`, `d = 20`) whose standard error
    /// after a merge (maximum likelihood, `√(3.67 / (28m))`, the worst case) is at most
    /// `relative_error`, with the default seed.
    ///
    /// `relative_error` must be in about `[0.0000443, 0.1811]` (the errors of precisions 26
    /// and 2). Below about `0.0000885` the precision is 25 or 26, whose registers (128 or
    /// 256 MiB) are allocated here (see [born dense](Self#the-largest-precisions-are-born-dense)).
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// assert_eq!(ExaLogLog::with_error(0.01)?.precision(), 11);
    /// assert!(ExaLogLog::with_error(0.0).is_err());
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
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let ell = ExaLogLog::with_error_and_seed(0.01, 0x5EC2E7)?;
    /// assert_eq!((ell.precision(), ell.seed()), (11, 0x5EC2E7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_error_and_seed(relative_error: f64, seed: u64) -> Result<Self, ConfigError> {
        let shape = |p| ExaLogLogShape::recommended(p).internal();
        let precision = precision_for(relative_error, Self::MIN_PRECISION..=Self::MAX_PRECISION, |p| {
            optimal::relative_standard_error(optimal::mvp_ml(shape(p)), shape(p))
        });
        match precision {
            Some(p) => Self::with_seed(p, seed),
            None => Err(ConfigError::new("relative_error", relative_error, "a number in about [0.0000443, 0.1811]")),
        }
    }

    /// The shape of valid parameters, checked without allocating anything.
    fn validated(shape: ExaLogLogShape) -> Result<Shape, ConfigError> {
        let ExaLogLogShape { precision, t, d } = shape;
        if !(Self::MIN_PRECISION..=Self::MAX_PRECISION).contains(&precision) {
            return Err(ConfigError::new("precision", precision, "an integer in 2..=26"));
        }
        if t > Self::MAX_T {
            return Err(ConfigError::new("t", t, "an integer in 0..=4"));
        }
        if 6 + u32::from(t) + u32::from(d) > u32::from(Self::MAX_REGISTER_BITS) {
            return Err(ConfigError::new("d", d, "at most 26 − t (registers of at most 32 bits)"));
        }
        Ok(shape.internal())
    }

    /// The shape: precision, `t` and `d`.
    ///
    /// ```
    /// use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    ///
    /// assert_eq!(ExaLogLog::new(9)?.shape(), ExaLogLogShape { precision: 9, t: 2, d: 20 });
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn shape(&self) -> ExaLogLogShape {
        let Shape { p, t, d } = self.core.shape;
        ExaLogLogShape { precision: p, t, d }
    }

    /// The precision `p`: the sketch has `2^p` registers.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// assert_eq!(ExaLogLog::new(9)?.precision(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn precision(&self) -> u8 {
        self.core.shape.p
    }

    /// `t`: each power-of-two level of the update values is split into `2^t`.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// assert_eq!(ExaLogLog::new(9)?.t(), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn t(&self) -> u8 {
        self.core.shape.t
    }

    /// `d`: the bits of history per register.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// assert_eq!(ExaLogLog::new(9)?.d(), 20);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn d(&self) -> u8 {
        self.core.shape.d
    }

    /// The seed items are hashed with.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// assert_eq!(ExaLogLog::with_seed(9, 3)?.seed(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.core.seed
    }

    /// Observes one item.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut ell = ExaLogLog::new(10)?;
    /// ell.observe("alice");
    /// ell.observe(42_u64);
    /// ell.observe("alice");
    /// assert!((ell.estimate() - 2.0).abs() < 0.01);
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
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut batch = ExaLogLog::new(8)?;
    /// batch.observe_all(0..10_000_u64);
    /// let mut one_by_one = ExaLogLog::new(8)?;
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
    /// use synopses::cardinality::ExaLogLog;
    /// use synopses::hash::Hashable;
    ///
    /// let mut by_hash = ExaLogLog::new(10)?;
    /// let seed = by_hash.seed();
    /// by_hash.observe_hashes((0..5_000_u64).map(|i| i.hash64(seed)));
    /// let mut by_item = ExaLogLog::new(10)?;
    /// by_item.observe_all(0..5_000_u64);
    /// assert_eq!(by_hash, by_item);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_hashes<I: IntoIterator<Item = u64>>(&mut self, hashes: I) {
        self.core.observe_hashes(hashes.into_iter());
    }

    /// Observes an item by its 64-bit hash (see
    /// [`HyperLogLog::observe_hash`](super::HyperLogLog::observe_hash)).
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    /// use synopses::hash::Hashable;
    ///
    /// let mut a = ExaLogLog::new(8)?;
    /// let mut b = ExaLogLog::new(8)?;
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
    /// stream, the bias-corrected maximum-likelihood estimate after a merge or a reduction.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut ell = ExaLogLog::new(10)?;
    /// ell.observe_all(0..100_000_u64);
    /// assert!((ell.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.01);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn estimate(&self) -> f64 {
        self.core.exact().or(self.core.martingale_estimate()).unwrap_or_else(|| self.register_estimate())
    }

    /// The maximum-likelihood estimate from the registers alone, divided by `1 + c/m` to
    /// remove its first-order bias (`c = 0.1055` for `t = 2, d = 20`): what any sketch with
    /// these registers answers, merged or not. One pass over the registers, then a few Newton
    /// steps. Far below `m` items a relative bias of at most `c/m` remains (see
    /// [`UltraLogLog::register_estimate`](super::UltraLogLog::register_estimate)). While the
    /// sketch is [sparse](Self::is_sparse), the exact count.
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut ell = ExaLogLog::new(10)?;
    /// ell.observe_all(0..100_000_u64);
    /// assert!((ell.register_estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.0114);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn register_estimate(&self) -> f64 {
        self.core.exact().unwrap_or_else(|| self.core.ml_estimate())
    }

    /// The martingale estimate, if the sketch has one (see
    /// [`UltraLogLog::martingale_estimate`](super::UltraLogLog::martingale_estimate)).
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut a = ExaLogLog::new(8)?;
    /// a.observe_all(0..10_000_u64);
    /// assert!(a.martingale_estimate().is_some());
    /// a.merge(&a.clone())?;
    /// assert!(a.martingale_estimate().is_none());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn martingale_estimate(&self) -> Option<f64> {
        self.core.martingale_estimate()
    }

    /// The relative standard error of [`estimate`](Self::estimate) as the sketch stands:
    /// `√(MVP / ((6 + t + d)·m))` with the memory-variance product of the estimator in use
    /// (for `t = 2`, `d = 20`: 2.83 for the martingale, 3.67 for maximum likelihood); 0 while
    /// the sketch is [sparse](Self::is_sparse).
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut ell = ExaLogLog::new(10)?;
    /// assert_eq!(ell.relative_standard_error(), 0.0); // sparse: exact
    /// ell.observe_all(0..10_000_u64);
    /// assert!((ell.relative_standard_error() - (2.8267_f64 / (28.0 * 1024.0)).sqrt()).abs() < 1e-5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn relative_standard_error(&self) -> f64 {
        self.core.relative_standard_error()
    }

    /// A confidence interval for the number of distinct items:
    /// `estimate · (1 ± z · relative_standard_error)`, its lower end raised to the number of
    /// distinct (register, value) pairs the sketch knows it has seen. While the sketch is
    /// [sparse](Self::is_sparse), the exact count (see
    /// [`UltraLogLog::bounds`](super::UltraLogLog::bounds)).
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    /// use synopses::core::Confidence;
    ///
    /// let mut ell = ExaLogLog::new(10)?;
    /// ell.observe_all(0..50_000_u64);
    /// let b = ell.bounds(Confidence::TwoSigma);
    /// assert!(b.lower < 50_000.0 && 50_000.0 < b.upper);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn bounds(&self, confidence: Confidence) -> Bounds {
        self.core.bounds(self.estimate(), confidence)
    }

    /// Bytes of memory the sketch holds (the struct and its 32-bit registers, or its entries
    /// while [sparse](Self::is_sparse): never more than the registers would take).
    ///
    /// ```
    /// # use synopses::cardinality::ExaLogLog;
    /// let mut ell = ExaLogLog::new(10)?;
    /// assert!(ell.size_in_bytes() < 128);
    /// ell.observe_all(0..10_000_u64);
    /// assert!(ell.size_in_bytes() >= 4096 && ell.size_in_bytes() < 4096 + 128);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.core.heap_bytes()
    }

    /// Whether the sketch is still in its exact, sparse small-range mode: a set of 32-bit
    /// entries, one per distinct item (the top `26 − t` and the low `t` hash bits and a
    /// 6-bit rank: the register and update value at every precision up to `26 − t`), at most
    /// `3m/4` of them, so never more bytes than the `m` 32-bit registers. It answers with the
    /// exact count and turns dense by itself. Precisions above `26 − t` (25 and 26 for the
    /// default `t = 2`) have no sparse mode.
    ///
    /// ```
    /// # use synopses::cardinality::{ExaLogLog, ExaLogLogShape};
    /// let mut ell = ExaLogLog::new(8)?;
    /// ell.observe_all(0..100_u64);
    /// assert!(ell.is_sparse());
    /// assert_eq!(ell.estimate(), 100.0);
    /// ell.observe_all(0..1000_u64);
    /// assert!(!ell.is_sparse());
    /// let born_dense = ExaLogLogShape { precision: 23, t: 4, d: 0 }; // 23 > 26 − t
    /// let ell = ExaLogLog::with_shape(born_dense)?;
    /// assert!(!ell.is_sparse() && ell.size_in_bytes() >= 4 << 23); // registers allocated
    /// assert!(ExaLogLog::new(24)?.size_in_bytes() < 1024); // 24 <= 26 − t: starts small
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_sparse(&self) -> bool {
        self.core.is_sparse()
    }

    /// Merges `other` into `self`: afterwards `self` holds the registers of one sketch that
    /// observed both streams. Each register becomes the union of what the two registers have
    /// seen, exactly. The precision, `t`, `d` and the seed must match; otherwise a
    /// [`MergeError`] is returned and `self` is unchanged. To combine sketches of different
    /// precisions, use [`merge_reducing`](Self::merge_reducing). A merge ends the martingale
    /// estimate (but for the empty sketch's: merging the empty sketch, or merging into it,
    /// changes nothing).
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let mut a = ExaLogLog::new(10)?;
    /// let mut b = ExaLogLog::new(10)?;
    /// a.observe_all(0..60_000_u64);
    /// b.observe_all(40_000..100_000_u64);
    /// a.merge(&b)?;
    /// assert!((a.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.0114);
    /// assert!(a.merge(&ExaLogLog::new(8)?).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("precision", self.precision(), other.precision())?;
        self.check_mergeable(other)?;
        self.core.merge_same(&other.core);
        Ok(())
    }

    /// Merges `other` into `self` at the smaller of the two precisions: whichever sketch is
    /// finer is first [reduced](Self::reduce) to the other's precision, exactly, then the two
    /// merge as [`merge`](Self::merge) does. Afterwards `self` holds the registers of one
    /// sketch of that precision that observed both streams, so its standard error is that of
    /// a merged sketch of the coarser precision (`√(3.67 / (28m))` for `t = 2, d = 20`, with
    /// its `m`), whatever the finer sketch's was. `t`, `d` and the seed must match; otherwise
    /// a [`MergeError`] is returned and `self` is unchanged.
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let mut a = ExaLogLog::new(10)?;
    /// let mut b = ExaLogLog::new(8)?;
    /// a.observe_all(0..60_000_u64);
    /// b.observe_all(40_000..100_000_u64);
    /// a.merge_reducing(&b)?;
    /// assert_eq!(a.precision(), 8);
    /// assert!((a.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.023);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merge_reducing(&mut self, other: &Self) -> Result<(), MergeError> {
        self.check_mergeable(other)?;
        self.core.merge_reducing(&other.core);
        Ok(())
    }

    /// What both merges need besides the precision: the same `t`, `d` and seed.
    fn check_mergeable(&self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("t", self.t(), other.t())?;
        MergeError::check("d", self.d(), other.d())?;
        MergeError::check("seed", self.core.seed, other.core.seed)
    }

    /// This sketch at a lower precision: the same registers as if a sketch of `precision`
    /// had observed the same items. [`merge_reducing`](Self::merge_reducing) uses it to merge
    /// sketches of different precisions. The martingale estimate does not carry over to a
    /// lower precision; at the sketch's own precision this is the sketch itself.
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let mut fine = ExaLogLog::new(10)?;
    /// let mut coarse = ExaLogLog::new(7)?;
    /// fine.observe_all(0..50_000_u64);
    /// coarse.observe_all(0..50_000_u64);
    /// let reduced = fine.reduce(7)?;
    /// // The registers of `coarse`, without the martingale of its one stream.
    /// assert_eq!(reduced.register_estimate(), coarse.register_estimate());
    /// assert!(reduced.martingale_estimate().is_none() && coarse.martingale_estimate().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reduce(&self, precision: u8) -> Result<Self, ConfigError> {
        if !(Self::MIN_PRECISION..=self.precision()).contains(&precision) {
            return Err(ConfigError::new("precision", precision, "an integer from 2 to the sketch's precision"));
        }
        Ok(Self { core: Boxed::new(self.core.reduce(precision)) })
    }

    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let mut x = ExaLogLog::new(10)?;
    /// x.observe_all(0..10_000_u64);
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 3 + self.core.encoded_len()
    }

    /// Encodes the sketch in the crate's [binary format](crate::codec), family code 11.
    ///
    /// Body: precision (u8), t (u8), d (u8), flags (u8: bit 0 martingale present, bit 1
    /// sparse), seed (u64), the martingale (f64) if present, then either the number of
    /// entries (u32) and the entries in ascending order (u32 each), or the `m` registers
    /// packed `6 + t + d` bits each, least significant bits first, the last byte padded with
    /// zeros.
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let mut ell = ExaLogLog::new(10)?;
    /// ell.observe_all(0..10_000_u64);
    /// let bytes = ell.to_bytes();
    /// assert_eq!(bytes.len(), 4 + 4 + 8 + 8 + 1024 * 28 / 8 + 8);
    /// assert_eq!(ExaLogLog::from_bytes(&bytes)?, ell);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let shape = self.core.shape;
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_u8(shape.p);
        w.put_u8(shape.t);
        w.put_u8(shape.d);
        self.core.encode(&mut w);
        w.finish()
    }

    /// Decodes a sketch written by [`to_bytes`](Self::to_bytes), validating every field.
    ///
    /// ```
    /// use synopses::cardinality::ExaLogLog;
    ///
    /// let ell = ExaLogLog::new(8)?;
    /// assert_eq!(ExaLogLog::from_bytes(&ell.to_bytes())?, ell);
    /// assert!(ExaLogLog::from_bytes(b"not a sketch").is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let (precision, t, d) = (r.u8()?, r.u8()?, r.u8()?);
        let shape = Self::validated(ExaLogLogShape { precision, t, d }).map_err(|e| DecodeError::InvalidField {
            field: e.parameter(),
            reason: "outside the supported configurations",
        })?;
        let core = Boxed::new(Core::decode(&mut r, shape)?);
        r.finish()?;
        Ok(Self { core })
    }
}

impl PartialEq for ExaLogLog {
    /// Same configuration, seed and state: the registers or the entries, and the martingale,
    /// bit for bit (or none). Equal sketches give equal answers to every query, and the same
    /// bytes; a sketch that merged two streams is not equal to one that observed their union
    /// (same registers, but no martingale, and another estimate).
    fn eq(&self, other: &Self) -> bool {
        self.core == other.core
    }
}

impl Eq for ExaLogLog {}

impl fmt::Debug for ExaLogLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExaLogLog")
            .field("precision", &self.precision())
            .field("t", &self.t())
            .field("d", &self.d())
            .field("seed", &self.core.seed)
            .field("estimate", &self.estimate())
            .finish()
    }
}

hashed_operator!(ExaLogLog, batch);

impl Mergeable for ExaLogLog {
    fn size_in_bytes(&self) -> usize {
        ExaLogLog::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        ExaLogLog::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { core: Boxed::new(self.core.empty_like()) }
    }
}

codec_impl!(ExaLogLog, 11);
