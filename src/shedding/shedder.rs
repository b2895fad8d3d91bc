//! The load shedder, an operator adapter, and what goes behind it. The teaching text is in the
//! [family docs](super).

use std::cmp::Ordering;
use std::fmt;
use std::marker::PhantomData;

use super::controller::{Load, RateController};
use super::policy::{DropPolicy, PartPolicy};
use crate::core::extended::Extended;
use crate::core::random::part_stream;
use crate::core::{ConfigError, Estimate, MergeError, Mergeable, Operator, Weight};

/// Counts of what a load shedder was offered and kept.
///
/// ```
/// use synopses::shedding::ShedStats;
///
/// let s = ShedStats { offered: 100, kept: 30 };
/// assert_eq!((s.dropped(), s.kept_fraction()), (70, 0.3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShedStats {
    /// Items offered (saturating at `u64::MAX`).
    pub offered: u64,
    /// Items kept and forwarded (saturating at `u64::MAX`).
    pub kept: u64,
}

impl ShedStats {
    /// Items dropped: offered less kept.
    ///
    /// ```
    /// # use synopses::shedding::ShedStats;
    /// assert_eq!(ShedStats { offered: 5, kept: 5 }.dropped(), 0);
    /// ```
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.offered.saturating_sub(self.kept)
    }

    /// The fraction kept (1 before any item).
    ///
    /// ```
    /// # use synopses::shedding::ShedStats;
    /// assert_eq!(ShedStats::default().kept_fraction(), 1.0);
    /// ```
    #[must_use]
    pub fn kept_fraction(&self) -> f64 {
        if self.offered == 0 { 1.0 } else { self.kept as f64 / self.offered as f64 }
    }
}

/// How a [`LoadShedder`] hands a kept item on: with its weight, as an `(item, weight)` pair
/// ([`WithWeights`], what [`LoadShedder::new`] builds), or alone ([`ItemsOnly`], what
/// [`LoadShedder::unweighted`] builds). Those two are the only implementations.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::shedding::{FixedRate, Forward, ItemsOnly, KeyHashDrop, LoadShedder};
///
/// // Generic code over both kinds of shedder names the forwarding in its bounds.
/// fn feed<O, P, C, F>(s: &mut LoadShedder<O, P, C, F>, n: u64)
/// where
///     P: synopses::shedding::DropPolicy<u64>,
///     C: synopses::shedding::RateController,
///     F: Forward<O, u64>,
/// {
///     (0..n).for_each(|i| s.observe(i));
/// }
/// let mut s: LoadShedder<_, _, _, ItemsOnly> =
///     LoadShedder::unweighted(HyperLogLog::new(12)?, KeyHashDrop::new(), FixedRate::new(1.0)?);
/// feed(&mut s, 100);
/// assert_eq!(s.inner().estimate().round(), 100.0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub trait Forward<O, T>: sealed::Sealed {
    /// Hands `item`, kept with weight `weight`, to `inner`.
    fn forward(inner: &mut O, item: T, weight: Weight);
}

mod sealed {
    /// Keeps [`Forward`](super::Forward) to the two ways this module defines.
    pub trait Sealed {}
    impl Sealed for super::WithWeights {}
    impl Sealed for super::ItemsOnly {}
}

/// Kept items go on as `(item, weight)` pairs, the weight `1/p` for the random and key-hash
/// policies: what estimators of totals need ([`HorvitzThompson`], the weighted samplers).
/// A type-level marker, never a value.
///
/// ```
/// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop, WithWeights};
///
/// let s: LoadShedder<HorvitzThompson, RandomDrop, FixedRate, WithWeights> =
///     LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(0.5)?);
/// # let _ = s;
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithWeights {}

/// Kept items go on alone, their weights dropped: for an operator that takes plain items (a
/// sketch). Its answers are then about the kept items only; [`LoadShedder::unweighted`] says
/// how to read them. A type-level marker, never a value.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::shedding::{FixedRate, ItemsOnly, KeyHashDrop, LoadShedder};
///
/// let s: LoadShedder<HyperLogLog, KeyHashDrop, FixedRate, ItemsOnly> =
///     LoadShedder::unweighted(HyperLogLog::new(12)?, KeyHashDrop::new(), FixedRate::new(0.5)?);
/// # let _ = s;
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemsOnly {}

impl<T, O: Operator<(T, Weight)>> Forward<O, T> for WithWeights {
    #[inline]
    fn forward(inner: &mut O, item: T, weight: Weight) {
        inner.observe((item, weight));
    }
}

impl<T, O: Operator<T>> Forward<O, T> for ItemsOnly {
    #[inline]
    fn forward(inner: &mut O, item: T, _: Weight) {
        inner.observe(item);
    }
}

/// A load shedder: an operator in front of another that drops part of the stream under
/// overload. A [`RateController`] sets the keep probability `p` from the load; a
/// [`DropPolicy`] decides which items to keep; kept items go on to the inner operator.
///
/// Two ways to build one, by what the inner operator takes:
///
/// * [`new`](Self::new): an operator of `(item, weight)` pairs, each kept item with the weight
///   the policy gives it (`1/p` for the random and key-hash policies), so that counts and
///   sums estimated downstream stay unbiased even while `p` changes: [`HorvitzThompson`]
///   estimates counts, sums and means, the weighted samplers sample.
/// * [`unweighted`](Self::unweighted): any operator of plain items (a sketch), which sees
///   the kept items alone and answers about them; read its answers as that method says.
///
/// Either way, items go in with [`observe`](Self::observe) (or
/// [`observe_kept`](Self::observe_kept), which also says whether the item was kept).
///
/// ```
/// use synopses::core::Confidence;
/// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
///
/// // Keep 10 % of 100 000 readings and still estimate their sum.
/// let mut shedder = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(42), FixedRate::new(0.1)?);
/// for reading in 0..100_000_u64 {
///     shedder.observe(reading % 100);
/// }
/// let sum = shedder.inner().sum();
/// assert!(sum.bounds(Confidence::ThreeSigma).contains(4_950_000.0));
/// assert_eq!(shedder.stats().offered, 100_000);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct LoadShedder<O, P, C, F = WithWeights> {
    inner: O,
    policy: P,
    controller: C,
    stats: ShedStats,
    /// `stats.offered` at the previous control step (so an item counts once, not twice).
    offered_at_control: u64,
    forward: PhantomData<F>,
}

impl<O, P, C: RateController> LoadShedder<O, P, C> {
    /// A shedder in front of `inner`, an operator of `(item, weight)` pairs, dropping with
    /// `policy` at the rate `controller` sets: each kept item goes on with its weight.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, KeyHashDrop, LoadShedder};
    ///
    /// let shedder = LoadShedder::new(HorvitzThompson::new(), KeyHashDrop::new(), FixedRate::new(0.5)?);
    /// assert_eq!(shedder.keep_probability(), 0.5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(inner: O, policy: P, controller: C) -> Self {
        Self::forwarding(inner, policy, controller)
    }
}

impl<O, P, C: RateController> LoadShedder<O, P, C, ItemsOnly> {
    /// A shedder in front of `inner`, an operator of plain items (a sketch), dropping with
    /// `policy` at the rate `controller` sets: each kept item goes on alone, and its weight
    /// `1/p` is lost. The sketch then answers about the kept items, not the stream:
    ///
    /// | behind | [`KeyHashDrop`](super::KeyHashDrop) | [`RandomDrop`](super::RandomDrop) |
    /// |---|---|---|
    /// | a distinct count ([`HyperLogLog`](crate::cardinality::HyperLogLog)) | `p` times the distinct keys: divide by `p` | biased (a key seen often survives, a key seen once seldom): no fix |
    /// | a key's frequency ([`CountMin`](crate::frequency::CountMin)) | a kept key's frequency; for a dropped key, only the sketch's error | about `p` times it: divide by `p` |
    /// | membership ([`Bloom`](crate::membership::Bloom)) | no for every dropped key, a fraction `1 − p` of them | no for a key seen `m` times with probability `(1 − p)^m` |
    /// | a uniform sample ([`Reservoir`](crate::sampling::Reservoir)) | of the kept keys' items, each key with all its items or none | of the items, still uniform; its `seen` count about `p` times the items offered |
    ///
    /// Dividing by `p` holds only for a `p` that never changed, as a [`FixedRate`](super::FixedRate)
    /// sets it: the sketch cannot know which items came in at which `p`, and a falling `p`
    /// under a key-hash policy stops keeping keys it kept before. To estimate counts and sums
    /// while a controller moves `p`, use [`new`](LoadShedder::new) with a weighted operator
    /// ([`HorvitzThompson`]); for distinct counts, a fixed `p`. A
    /// [`SemanticDrop`](super::SemanticDrop) gives kept items weight 1, so nothing is lost:
    /// the sketch answers about the kept items as about any stream, and about them only.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::shedding::{FixedRate, KeyHashDrop, LoadShedder};
    ///
    /// let mut s = LoadShedder::unweighted(HyperLogLog::new(12)?, KeyHashDrop::new(), FixedRate::new(0.25)?);
    /// for i in 0..400_000_u64 {
    ///     s.observe(i % 100_000); // 100 000 distinct keys, each offered 4 times
    /// }
    /// // The sketch counted the kept keys, about a quarter of them: scale by 1/p.
    /// let distinct = s.inner().estimate() / s.keep_probability();
    /// assert!((distinct / 100_000.0 - 1.0).abs() < 0.05);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn unweighted(inner: O, policy: P, controller: C) -> Self {
        Self::forwarding(inner, policy, controller)
    }
}

impl<O, P, C: RateController, F> LoadShedder<O, P, C, F> {
    /// A shedder of either kind, with nothing offered yet.
    fn forwarding(inner: O, policy: P, controller: C) -> Self {
        Self { inner, policy, controller, stats: ShedStats::default(), offered_at_control: 0, forward: PhantomData }
    }

    /// Observes one item: the policy keeps it or drops it at the current keep probability,
    /// and a kept item goes on to the inner operator (with its weight, for a shedder made by
    /// [`new`](LoadShedder::new)).
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    ///
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// s.observe(3.5);
    /// assert_eq!(s.inner().sum().value, 3.5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe<T>(&mut self, item: T)
    where
        P: DropPolicy<T>,
        F: Forward<O, T>,
    {
        let _ = self.observe_kept(item);
    }

    /// Observes one item as [`observe`](Self::observe) does, and returns whether it was kept.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    ///
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// assert!(s.observe_kept(3.5));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    #[must_use = "use `observe` when whether the item was kept does not matter"]
    pub fn observe_kept<T>(&mut self, item: T) -> bool
    where
        P: DropPolicy<T>,
        F: Forward<O, T>,
    {
        self.stats.offered = self.stats.offered.saturating_add(1);
        match self.policy.decide(&item, self.controller.keep_probability()) {
            Some(weight) => {
                self.stats.kept = self.stats.kept.saturating_add(1);
                F::forward(&mut self.inner, item, weight);
                true
            }
            None => false,
        }
    }

    /// Observes every item of a slice at the keep probability in force, through the policy's
    /// batch path ([`DropPolicy::decide_slice`]), which skips the dropped items without
    /// looking at them where it can: the same decisions and the same inner state as observing
    /// them one by one. Kept items are cloned into the inner operator.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    ///
    /// let readings: Vec<f64> = (0..100_000).map(|i| f64::from(i % 100)).collect();
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(3), FixedRate::new(0.5)?);
    /// s.observe_slice(&readings);
    /// assert_eq!(s.stats().offered, 100_000);
    /// assert!((s.inner().count().value / 100_000.0 - 1.0).abs() < 0.02);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_slice<T: Clone>(&mut self, items: &[T])
    where
        P: DropPolicy<T>,
        F: Forward<O, T>,
    {
        let inner = &mut self.inner;
        let mut kept = 0;
        self.policy.decide_slice(items, self.controller.keep_probability(), |item, weight| {
            kept += 1;
            F::forward(inner, item.clone(), weight);
        });
        self.stats.offered = self.stats.offered.saturating_add(items.len() as u64);
        self.stats.kept = self.stats.kept.saturating_add(kept);
    }

    /// Takes one control step: the controller sees `load`, with `load.offered` replaced by
    /// the number of items offered since the previous step, and sets the keep probability for
    /// the items that follow.
    ///
    /// A load that cannot be acted on ([`Load::validate`]: a time, cost or delay that is not
    /// a finite number at least 0, or an elapsed time too short for a finite rate) is refused
    /// with a [`ConfigError`] naming the field: the controller does not see it, and the items
    /// offered since the previous step count toward the next one.
    ///
    /// ```
    /// use synopses::shedding::{Headroom, HorvitzThompson, Load, LoadShedder, RandomDrop};
    ///
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), Headroom::new(0.9)?);
    /// for x in 0..3000_u64 {
    ///     s.observe(x);
    /// }
    /// // One second went by; items cost 1 ms: 3 s of work offered per second, 0.9 affordable.
    /// s.control(Load { offered: 0, elapsed: 1.0, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 })?;
    /// assert!((s.keep_probability() - 0.3).abs() < 1e-9);
    /// let broken = Load { offered: 0, elapsed: f64::NAN, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 };
    /// assert_eq!(s.control(broken).unwrap_err().parameter(), "elapsed");
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn control(&mut self, load: Load) -> Result<(), ConfigError> {
        let load = Load { offered: self.stats.offered.saturating_sub(self.offered_at_control), ..load };
        load.validate()?;
        self.controller.update(&load);
        self.offered_at_control = self.stats.offered;
        Ok(())
    }

    /// The keep probability in force.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(0.2)?);
    /// assert_eq!(s.keep_probability(), 0.2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn keep_probability(&self) -> f64 {
        self.controller.keep_probability()
    }

    /// What was offered and kept.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// s.observe(1_u64);
    /// assert_eq!(s.stats().kept, 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn stats(&self) -> ShedStats {
        self.stats
    }

    /// The inner operator.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// assert_eq!(s.inner().count().value, 0.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn inner(&self) -> &O {
        &self.inner
    }

    /// The inner operator, mutably.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// *s.inner_mut() = HorvitzThompson::new();
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn inner_mut(&mut self) -> &mut O {
        &mut self.inner
    }

    /// The inner operator, consuming the shedder.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// let ht: HorvitzThompson = s.into_inner();
    /// # let _ = ht;
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn into_inner(self) -> O {
        self.inner
    }

    /// The rate controller.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop, RateController};
    /// let s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(0.5)?);
    /// assert_eq!(s.controller().keep_probability(), 0.5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn controller(&self) -> &C {
        &self.controller
    }

    /// The drop policy.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(0.1)?);
    /// (0..1000_u64).for_each(|x| s.observe(x));
    /// assert!(s.policy().random_draws() < 200); // about one per kept item
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn policy(&self) -> &P {
        &self.policy
    }
}

impl<O: fmt::Debug, P: fmt::Debug, C: RateController + fmt::Debug, F> fmt::Debug for LoadShedder<O, P, C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadShedder")
            .field("keep_probability", &self.keep_probability())
            .field("stats", &self.stats)
            .field("policy", &self.policy)
            .field("controller", &self.controller)
            .field("inner", &self.inner)
            .finish()
    }
}

impl<T, O, P: DropPolicy<T>, C: RateController, F: Forward<O, T>> Operator<T> for LoadShedder<O, P, C, F> {
    fn observe(&mut self, item: T) {
        LoadShedder::observe(self, item);
    }
}

impl<O: Mergeable, P: PartPolicy + Clone, C: RateController + Clone, F> Mergeable for LoadShedder<O, P, C, F> {
    /// The shedder and its inner operator's heap (a policy or controller's own heap, such as
    /// a semantic policy's window, is not counted).
    fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() - std::mem::size_of::<O>() + self.inner.size_in_bytes()
    }

    /// Merges the inner operators and adds the counts; the policy and controller of `self`
    /// stay as they are (each partition controls its own rate).
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        let both_used = self.stats.offered > 0 && other.stats.offered > 0;
        self.policy.check_merge(&other.policy, both_used)?;
        self.inner.merge(&other.inner)?;
        // (Counts saturate at `u64::MAX`.)
        self.stats.offered = self.stats.offered.saturating_add(other.stats.offered);
        self.stats.kept = self.stats.kept.saturating_add(other.stats.kept);
        // Items another partition was offered are not this controller's load.
        self.offered_at_control = self.offered_at_control.saturating_add(other.stats.offered);
        Ok(())
    }

    /// An empty shedder of the same configuration, whose policy draws from a stream of its
    /// own (a copy of this policy would repeat its choices).
    fn empty_like(&self) -> Self {
        Self::forwarding(self.inner.empty_like(), self.policy.part(u64::MAX), self.controller.clone())
    }

    /// A shedder for part `index`: the inner operator's part, and a policy with a stream of
    /// its own, derived from `index` and this shedder's count.
    fn empty_part(&self, index: u64) -> Self {
        let part = part_stream(self.stats.offered, 0, index);
        Self::forwarding(self.inner.empty_part(index), self.policy.part(part), self.controller.clone())
    }
}

/// A number a [`HorvitzThompson`] estimator can sum: the integer and floating-point types.
///
/// ```
/// use synopses::shedding::Value;
/// assert_eq!(7_u32.value(), 7.0);
/// ```
pub trait Value {
    /// The item as a number.
    fn value(&self) -> f64;
}

macro_rules! value_as_f64 {
    ($($t:ty),*) => {$(
        impl Value for $t {
            fn value(&self) -> f64 {
                *self as f64
            }
        }
    )*};
}
value_as_f64!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

/// Horvitz–Thompson estimators of the count, sum and mean of a stream from the items a
/// shedder kept, each weighted by the inverse of the probability it was kept with.
///
/// With kept items `i` of value `y_i` and weight `w_i = 1/p_i`, kept independently (as
/// [`RandomDrop`](super::RandomDrop) keeps them):
///
/// ```text
///   count  N̂ = Σ w_i                    variance estimate  Σ w_i (w_i − 1)
///   sum    Ŷ = Σ w_i y_i                variance estimate  Σ w_i (w_i − 1) y_i²
///   mean   Ŷ / N̂ (a ratio estimator)   variance estimate  Σ w_i (w_i − 1) (y_i − Ŷ/N̂)² / N̂²
/// ```
///
/// The count and the sum are unbiased for any keep probabilities, changing or not; their
/// variance estimates are unbiased too. The mean's bias is of order `1/n`. Behind a
/// [`KeyHashDrop`](super::KeyHashDrop) policy the estimates stay unbiased, but every
/// occurrence of a key is kept or dropped together, so the variance estimates, which assume
/// independent choices, are too small when keys repeat.
///
/// Every answer is finite. The sums are plain floats while no item's weight or value passes
/// `2^128` and no merge takes a sum past `2^900`, and from then on each has an exponent of its
/// own beside it, so no sum overflows or is lost: a mean of values near `f64::MAX` with
/// weights near `f64::MAX` is still their mean. A count, sum or variance beyond `f64::MAX` is
/// answered as `±f64::MAX`. A value that is not a finite number (a NaN reading) is not
/// summed: it is counted in [`skipped`](Self::skipped). The counts of items saturate at
/// `u64::MAX`.
///
/// ```
/// use synopses::core::{Confidence, Weight};
/// use synopses::shedding::HorvitzThompson;
///
/// let mut ht = HorvitzThompson::new();
/// ht.observe_weighted(10.0, Weight::new(4.0)?); // kept with probability 1/4: stands for 4 items
/// ht.observe_weighted(20.0, Weight::new(2.0)?);
/// assert_eq!(ht.count().value, 6.0);
/// assert_eq!(ht.sum().value, 80.0);
/// assert_eq!(ht.sum().variance, 4.0 * 3.0 * 100.0 + 2.0 * 1.0 * 400.0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HorvitzThompson {
    kept: u64,
    skipped: u64,
    /// Σ w, Σ w·y, Σ w(w − 1), Σ w(w − 1)·y, Σ w(w − 1)·y²: plain floats, or, once `wide`,
    /// the mantissas of `sums[i] · 2^exponents[i]`.
    sums: [f64; 5],
    exponents: [i32; 5],
    wide: bool,
}

/// The weights and values whose terms the plain sums take without a test: at most `2^128`
/// (every integer and `f32` value is). Their terms are at most `2^512`, and `2^64` of them
/// (more than any estimator will see) at most `2^576`, so plain sums kept within [`LARGE`]
/// cannot overflow.
const SMALL: f64 = f64::from_bits((1023 + 128) << 52);

/// The largest plain sum: `2^900`. Larger items, and merges (which can double the sums),
/// are checked against it.
const LARGE: f64 = f64::from_bits((1023 + 900) << 52);

/// The sums, plain or wide, as the estimator keeps them.
type Sums = ([f64; 5], [i32; 5], bool);

/// `sums` with an item of weight `w` and value `y` added: plain while the sums stay within
/// [`LARGE`], each with an exponent of its own otherwise. Out of line, as it is rare (items
/// beyond [`SMALL`], or any once the sums are wide), and on values: a call given a
/// reference to the sums would make the compiler keep them in memory rather than in
/// registers across a loop of observations.
#[cold]
#[inline(never)]
fn with_large((sums, exponents, wide): Sums, w: f64, y: f64) -> Sums {
    if !wide {
        let (spread, s) = (w * (w - 1.0), sums);
        let next = [s[0] + w, s[1] + w * y, s[2] + spread, s[3] + spread * y, s[4] + spread * y * y];
        if next.iter().all(|x| x.abs() <= LARGE) {
            return (next, exponents, false);
        }
    }
    let terms = [
        Extended::new(w),
        Extended::product(&[w, y]),
        Extended::product(&[w, w - 1.0]),
        Extended::product(&[w, w - 1.0, y]),
        Extended::product(&[w, w - 1.0, y, y]),
    ];
    let mut out = extended((sums, exponents, wide));
    out.iter_mut().zip(terms).for_each(|(a, b)| *a = a.add(b));
    from_extended(out)
}

/// Two estimators' sums added.
fn merged(a: Sums, b: Sums) -> Sums {
    if !a.2 && !b.2 {
        let (x, y) = (a.0, b.0);
        let next = [x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4]];
        if next.iter().all(|s| s.abs() <= LARGE) {
            return (next, a.1, false);
        }
    }
    let mut out = extended(a);
    out.iter_mut().zip(extended(b)).for_each(|(x, y)| *x = x.add(y));
    from_extended(out)
}

/// The sums with wide exponents.
fn extended((sums, exponents, _): Sums) -> [Extended; 5] {
    let mut out = [Extended::ZERO; 5];
    for (o, (&v, &e)) in out.iter_mut().zip(sums.iter().zip(&exponents)) {
        *o = Extended::from_parts(v, i64::from(e));
    }
    out
}

/// Wide sums as the estimator keeps them. (Their exponents stay far inside 32 bits: a
/// product of finite floats is within `2^±4200`, an addition raises an exponent by at most
/// 1, and the clamp only guards the impossible.)
fn from_extended(wide: [Extended; 5]) -> Sums {
    let (mut sums, mut exponents) = ([0.0; 5], [0; 5]);
    for (i, sum) in wide.iter().enumerate() {
        let (mantissa, exponent) = sum.parts();
        sums[i] = mantissa;
        exponents[i] = exponent.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
    }
    (sums, exponents, true)
}

impl HorvitzThompson {
    /// An estimator that has seen nothing.
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// assert_eq!(HorvitzThompson::new().kept(), 0);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a kept item of value `value` and weight `weight`: the inverse of the probability
    /// it was kept with, so at least 1 (a smaller weight makes the variance terms
    /// `w(w − 1)` negative; the variance estimates are then clamped at 0). A value that is
    /// not finite is not summed, and is counted in [`skipped`](Self::skipped).
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe_weighted(2.0, Weight::ONE);
    /// ht.observe_weighted(f64::NAN, Weight::ONE);
    /// assert_eq!((ht.sum().value, ht.kept(), ht.skipped()), (2.0, 1, 1));
    /// ```
    #[inline]
    pub fn observe_weighted(&mut self, value: f64, weight: Weight) {
        if !value.is_finite() {
            self.skipped = self.skipped.saturating_add(1);
            return;
        }
        self.kept = self.kept.saturating_add(1);
        let (w, y) = (weight.get(), value);
        if !self.wide && w <= SMALL && y.abs() <= SMALL {
            let spread = w * (w - 1.0);
            let s = &mut self.sums;
            s[0] += w;
            s[1] += w * y;
            s[2] += spread;
            s[3] += spread * y;
            s[4] += spread * y * y;
            return;
        }
        (self.sums, self.exponents, self.wide) = with_large((self.sums, self.exponents, self.wide), w, y);
    }

    /// Sum `i`, saturating at `±f64::MAX`.
    fn sum_at(&self, i: usize) -> f64 {
        if self.wide { Extended::from_parts(self.sums[i], i64::from(self.exponents[i])).to_f64() } else { self.sums[i] }
    }

    /// The number of items kept (seen by the estimator), saturating at `u64::MAX`.
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe_weighted(1.0, Weight::new(10.0)?);
    /// assert_eq!(ht.kept(), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn kept(&self) -> u64 {
        self.kept
    }

    /// The number of items whose value was not a finite number, and which no estimate
    /// includes (saturating at `u64::MAX`).
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe_weighted(f64::INFINITY, Weight::new(10.0)?);
    /// assert_eq!((ht.skipped(), ht.count().value), (1, 0.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The estimated number of items offered, `Σ w` (at most `f64::MAX`).
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe_weighted(1.0, Weight::new(10.0)?);
    /// assert_eq!(ht.count().value, 10.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn count(&self) -> Estimate {
        Estimate { value: self.sum_at(0), variance: self.sum_at(2).max(0.0) }
    }

    /// The estimated sum of the values offered, `Σ w·y` (within `±f64::MAX`).
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe_weighted(3.0, Weight::new(10.0)?);
    /// assert_eq!(ht.sum().value, 30.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn sum(&self) -> Estimate {
        Estimate { value: self.sum_at(1), variance: self.sum_at(4).max(0.0) }
    }

    /// The estimated mean of the values offered, `Σ w·y / Σ w` (0 before any item), with the
    /// linearized variance of the ratio: in plain floats where they hold it, with wider
    /// exponents otherwise, so it is the mean even where the sums pass `f64::MAX`.
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe_weighted(3.0, Weight::new(10.0)?);
    /// ht.observe_weighted(5.0, Weight::new(10.0)?);
    /// assert_eq!(ht.mean().value, 4.0);
    /// let mut huge = HorvitzThompson::new();
    /// huge.observe_weighted(f64::MAX, Weight::new(f64::MAX)?);
    /// huge.observe_weighted(f64::MAX, Weight::new(f64::MAX)?);
    /// assert_eq!(huge.mean().value, f64::MAX);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn mean(&self) -> Estimate {
        if !self.wide {
            let [count, sum, spread, spread_y, spread_yy] = self.sums;
            if count <= 0.0 {
                return Estimate { value: 0.0, variance: 0.0 };
            }
            let mean = sum / count;
            let spread = spread_yy - 2.0 * mean * spread_y + mean * mean * spread;
            let square = count * count;
            // Where these floats hold the answer (no overflow, no square lost among the
            // subnormals), it is theirs; otherwise the wide path below computes it.
            if mean.is_finite() && spread.is_finite() && square.is_normal() && square.is_finite() {
                return Estimate { value: mean, variance: spread.max(0.0) / square };
            }
        }
        let [count, sum, spread, spread_y, spread_yy] = extended((self.sums, self.exponents, self.wide));
        if count.signum() != Ordering::Greater {
            return Estimate { value: 0.0, variance: 0.0 };
        }
        let mean = sum.div(count);
        let two_mean = mean.mul(Extended::new(2.0));
        let spread = spread_yy.sub(two_mean.mul(spread_y)).add(mean.mul(mean).mul(spread));
        let variance = if spread.signum() == Ordering::Greater { spread.div(count.mul(count)).to_f64() } else { 0.0 };
        Estimate { value: mean.to_f64(), variance }
    }
}

impl<T: Value> Operator<(T, Weight)> for HorvitzThompson {
    fn observe(&mut self, (item, weight): (T, Weight)) {
        HorvitzThompson::observe_weighted(self, item.value(), weight);
    }
}

impl Mergeable for HorvitzThompson {
    /// Adds the sums: exactly the estimator of both sets of kept items (the counts of items
    /// saturate at `u64::MAX`).
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        self.kept = self.kept.saturating_add(other.kept);
        self.skipped = self.skipped.saturating_add(other.skipped);
        let theirs = (other.sums, other.exponents, other.wide);
        (self.sums, self.exponents, self.wide) = merged((self.sums, self.exponents, self.wide), theirs);
        Ok(())
    }

    fn empty_like(&self) -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weight(w: f64) -> Weight {
        Weight::new(w).expect("a weight")
    }

    #[test]
    fn ordinary_items_sum_as_plain_floats() {
        // The scales stay at 0: every sum is the plain sum, bit for bit.
        let mut ht = HorvitzThompson::new();
        let (mut n, mut s, mut v) = (0.0, 0.0, 0.0);
        for i in 0..1000 {
            let (y, w) = (f64::from(i % 17) - 3.5, 1.0 + f64::from(i % 5) * 0.7);
            ht.observe_weighted(y, weight(w));
            n += w;
            s += w * y;
            v += w * (w - 1.0) * y * y;
        }
        assert_eq!((ht.count().value, ht.sum().value, ht.sum().variance), (n, s, v));
        assert!(!ht.wide);
    }

    #[test]
    fn an_extreme_item_loses_no_sum_it_adds_nothing_to() {
        // (An outside review's example: one scale for all the sums would have taken the
        // variance of these thousand items below the subnormals.)
        let mut ht = HorvitzThompson::new();
        (0..1000).for_each(|_| ht.observe_weighted(100.0, weight(2.0)));
        ht.observe_weighted(0.0, weight(f64::MAX));
        assert_eq!(ht.sum().variance, 2e7);
        assert_eq!(ht.sum().value, 2e5);
        ht.observe_weighted(1e300, Weight::ONE);
        assert_eq!(ht.sum().variance, 2e7);
        assert_eq!(ht.count().value, f64::MAX);
    }

    #[test]
    fn extreme_items_rescale_and_keep_their_means() {
        let mut ht = HorvitzThompson::new();
        ht.observe_weighted(f64::MAX, weight(f64::MAX));
        ht.observe_weighted(-f64::MAX, weight(f64::MAX));
        assert_eq!(ht.mean().value, 0.0);
        assert_eq!(ht.count().value, f64::MAX);
        // A thousand light items beside one of weight 2^300: the mean is the heavy one's.
        let mut mixed = HorvitzThompson::new();
        (0..1000).for_each(|_| mixed.observe_weighted(1.0, Weight::ONE));
        mixed.observe_weighted(3.0, weight(2f64.powi(300)));
        assert_eq!(mixed.mean().value, 3.0);
        assert_eq!(mixed.count().value, 2f64.powi(300));
        // Merging rescales to the larger scale, and self-merges never overflow.
        let mut merged = HorvitzThompson::new();
        merged.observe_weighted(2.0, weight(4.0));
        merged.merge(&mixed).expect("estimators merge");
        assert_eq!(merged.mean().value, 3.0);
        for _ in 0..3000 {
            let copy = merged;
            merged.merge(&copy).expect("estimators merge");
        }
        assert_eq!(merged.mean().value, 3.0);
        assert_eq!(merged.count().value, f64::MAX);
    }
}
