//! The load shedder, an operator adapter, and what goes behind it. The teaching text is in the
//! [family docs](super).

use std::fmt;

use super::controller::{Load, RateController};
use super::policy::{DropPolicy, PartPolicy};
use crate::core::float::{exponent, pow2, scaled};
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
    pub fn dropped(&self) -> u64 {
        self.offered.saturating_sub(self.kept)
    }

    /// The fraction kept (1 before any item).
    ///
    /// ```
    /// # use synopses::shedding::ShedStats;
    /// assert_eq!(ShedStats::default().kept_fraction(), 1.0);
    /// ```
    pub fn kept_fraction(&self) -> f64 {
        if self.offered == 0 { 1.0 } else { self.kept as f64 / self.offered as f64 }
    }
}

/// A load shedder: an operator in front of another that drops part of the stream under
/// overload. A [`RateController`] sets the keep probability `p` from the load; a
/// [`DropPolicy`] decides which items to keep; kept items go on to the inner operator with
/// the weight the policy gives them (`1/p` for the random and key-hash policies), so that
/// counts and sums estimated downstream stay unbiased even while `p` changes.
///
/// The inner operator takes `(item, weight)` pairs: [`HorvitzThompson`] estimates counts,
/// sums and means from them, the weighted samplers sample them, and [`Unweighted`] passes the
/// items alone to any other operator (a sketch behind a key-hash policy, say).
///
/// ```
/// use synopses::core::Confidence;
/// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
///
/// // Keep 10 % of 100 000 readings and still estimate their sum.
/// let mut shedder = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(42), FixedRate::new(0.1)?);
/// for reading in 0..100_000_u64 {
///     shedder.offer(reading % 100);
/// }
/// let sum = shedder.inner().sum();
/// assert!(sum.bounds(Confidence::ThreeSigma).contains(4_950_000.0));
/// assert_eq!(shedder.stats().offered, 100_000);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct LoadShedder<O, P, C> {
    inner: O,
    policy: P,
    controller: C,
    stats: ShedStats,
    /// `stats.offered` at the previous control step (so an offer counts once, not twice).
    offered_at_control: u64,
}

impl<O, P, C: RateController> LoadShedder<O, P, C> {
    /// A shedder in front of `inner`, dropping with `policy` at the rate `controller` sets.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, KeyHashDrop, LoadShedder};
    ///
    /// let shedder = LoadShedder::new(HorvitzThompson::new(), KeyHashDrop::new(), FixedRate::new(0.5)?);
    /// assert_eq!(shedder.keep_probability(), 0.5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(inner: O, policy: P, controller: C) -> Self {
        Self { inner, policy, controller, stats: ShedStats::default(), offered_at_control: 0 }
    }

    /// Offers one item: the policy keeps it or drops it at the current keep probability;
    /// a kept item goes to the inner operator with its weight. Returns whether it was kept.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    ///
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// assert!(s.offer(3.5));
    /// assert_eq!(s.inner().sum().value, 3.5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn offer<T>(&mut self, item: T) -> bool
    where
        P: DropPolicy<T>,
        O: Operator<(T, Weight)>,
    {
        self.stats.offered = self.stats.offered.saturating_add(1);
        match self.policy.decide(&item, self.controller.keep_probability()) {
            Some(weight) => {
                self.stats.kept = self.stats.kept.saturating_add(1);
                self.inner.observe((item, weight));
                true
            }
            None => false,
        }
    }

    /// Offers every item of a slice at the keep probability in force, through the policy's
    /// batch path ([`DropPolicy::decide_slice`]), which skips the dropped items without
    /// looking at them where it can: the same decisions and the same inner state as offering
    /// them one by one. Kept items are cloned into the inner operator.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    ///
    /// let readings: Vec<f64> = (0..100_000).map(|i| f64::from(i % 100)).collect();
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(3), FixedRate::new(0.5)?);
    /// s.offer_slice(&readings);
    /// assert_eq!(s.stats().offered, 100_000);
    /// assert!((s.inner().count().value / 100_000.0 - 1.0).abs() < 0.02);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn offer_slice<T: Clone>(&mut self, items: &[T])
    where
        P: DropPolicy<T>,
        O: Operator<(T, Weight)>,
    {
        let inner = &mut self.inner;
        let mut kept = 0;
        self.policy.decide_slice(items, self.controller.keep_probability(), |item, weight| {
            kept += 1;
            inner.observe((item.clone(), weight));
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
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), Headroom::new(1.0, 0.9)?);
    /// for x in 0..3000_u64 {
    ///     s.offer(x);
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
    pub fn keep_probability(&self) -> f64 {
        self.controller.keep_probability()
    }

    /// What was offered and kept.
    ///
    /// ```
    /// use synopses::shedding::{FixedRate, HorvitzThompson, LoadShedder, RandomDrop};
    /// let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(1.0)?);
    /// s.offer(1_u64);
    /// assert_eq!(s.stats().kept, 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
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
    pub fn controller(&self) -> &C {
        &self.controller
    }
}

impl<O: fmt::Debug, P: fmt::Debug, C: RateController + fmt::Debug> fmt::Debug for LoadShedder<O, P, C> {
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

impl<T, O: Operator<(T, Weight)>, P: DropPolicy<T>, C: RateController> Operator<T> for LoadShedder<O, P, C> {
    fn observe(&mut self, item: T) {
        self.offer(item);
    }
}

impl<O: Mergeable, P: PartPolicy + Clone, C: RateController + Clone> Mergeable for LoadShedder<O, P, C> {
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
        Self::new(self.inner.empty_like(), self.policy.part(u64::MAX), self.controller.clone())
    }

    /// A shedder for part `index`: the inner operator's part, and a policy with a stream of
    /// its own, derived from `index` and this shedder's count.
    fn empty_part(&self, index: u64) -> Self {
        let part = part_stream(self.stats.offered, 0, index);
        Self::new(self.inner.empty_part(index), self.policy.part(part), self.controller.clone())
    }
}

/// Passes the items behind a shedder to an operator that takes items without weights,
/// dropping the weights: a distinct-count sketch behind a key-hash policy, for example, whose
/// estimate divided by `p` estimates the distinct keys offered.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::shedding::{FixedRate, KeyHashDrop, LoadShedder, Unweighted};
///
/// let mut s = LoadShedder::new(Unweighted(HyperLogLog::new(12)?), KeyHashDrop::new(), FixedRate::new(0.25)?);
/// for i in 0..400_000_u64 {
///     s.offer(i % 100_000); // 100 000 distinct keys, each offered 4 times
/// }
/// let distinct = s.inner().0.estimate() / s.keep_probability();
/// assert!((distinct / 100_000.0 - 1.0).abs() < 0.05);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Unweighted<O>(pub O);

impl<T, O: Operator<T>> Operator<(T, Weight)> for Unweighted<O> {
    fn observe(&mut self, (item, _): (T, Weight)) {
        self.0.observe(item);
    }
}

impl<O: Mergeable> Mergeable for Unweighted<O> {
    fn size_in_bytes(&self) -> usize {
        self.0.size_in_bytes()
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        self.0.merge(&other.0)
    }

    fn empty_like(&self) -> Self {
        Self(self.0.empty_like())
    }

    fn empty_part(&self, index: u64) -> Self {
        Self(self.0.empty_part(index))
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
/// Every answer is finite. The sums are kept in units scaled by powers of two (1, and so
/// plain floats, until an item's weight or value passes `2^200`), so no sum overflows on the
/// way: a mean of values near `f64::MAX` with weights near `f64::MAX` is still their mean. A
/// count, sum or variance beyond `f64::MAX` is answered as `±f64::MAX`. A value that is not a
/// finite number (a NaN reading) is not summed: it is counted in
/// [`skipped`](Self::skipped). The counts of items saturate at `u64::MAX`.
///
/// ```
/// use synopses::core::{Confidence, Weight};
/// use synopses::shedding::HorvitzThompson;
///
/// let mut ht = HorvitzThompson::new();
/// ht.observe(10.0, Weight::new(4.0)?); // kept with probability 1/4: stands for 4 items
/// ht.observe(20.0, Weight::new(2.0)?);
/// assert_eq!(ht.count().value, 6.0);
/// assert_eq!(ht.sum().value, 80.0);
/// assert_eq!(ht.sum().variance, 4.0 * 3.0 * 100.0 + 2.0 * 1.0 * 400.0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HorvitzThompson {
    kept: u64,
    skipped: u64,
    /// Σ w', Σ w'·y', Σ w'(w' − 2^−a), Σ w'(w' − 2^−a)·y', Σ w'(w' − 2^−a)·y'², with
    /// `w' = w·2^−a` and `y' = y·2^−b`: each sum is its true value times `2^−(i·a + j·b)`
    /// for its degrees `i` in the weight and `j` in the value ([`DEGREES`]).
    sums: [f64; 5],
    /// `a` and `b`: 0 (plain floats) until a weight or a value passes `2^200`.
    scale_w: i32,
    scale_y: i32,
    /// `2^−a` and `2^−b`.
    unit_w: f64,
    unit_y: f64,
}

impl Default for HorvitzThompson {
    fn default() -> Self {
        Self { kept: 0, skipped: 0, sums: [0.0; 5], scale_w: 0, scale_y: 0, unit_w: 1.0, unit_y: 1.0 }
    }
}

/// The sums on scales `(a, b)` taken to the larger of those and `to`: see
/// [`HorvitzThompson::rescale`]. Out of line, as it is rare, so that the per-item path
/// stays small enough to inline into a shedder's loop.
#[cold]
#[inline(never)]
fn rescaled(mut sums: [f64; 5], (a, b): (i32, i32), to: (i32, i32)) -> ([f64; 5], i32, i32) {
    let (new_a, new_b) = (a.max(to.0), b.max(to.1));
    for (sum, &(i, j)) in sums.iter_mut().zip(&DEGREES) {
        *sum = scaled(*sum, i.saturating_mul(new_a - a).saturating_add(j.saturating_mul(new_b - b)).saturating_neg());
    }
    (sums, new_a, new_b)
}

/// The degrees in the weight and in the value of each sum.
const DEGREES: [(i32, i32); 5] = [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2)];

/// The largest scaled weight or value an item may bring: `2^200`. Its terms are then at most
/// `2^800`, and `2^64` of them (more than any estimator will see) at most `2^864`.
const ITEM_LIMIT: f64 = f64::from_bits((1023 + 200) << 52);

/// A sum is kept within `2^950` (merges, which can double the sums, rescale past it), so that
/// no sum overflows.
const SUM_LIMIT: f64 = f64::from_bits((1023 + 950) << 52);

/// An item that passes [`ITEM_LIMIT`] sets the scale so that it is about `2^100`.
const ITEM_TARGET: i32 = 100;

impl HorvitzThompson {
    /// An estimator that has seen nothing.
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// assert_eq!(HorvitzThompson::new().kept(), 0);
    /// ```
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
    /// ht.observe(2.0, Weight::ONE);
    /// ht.observe(f64::NAN, Weight::ONE);
    /// assert_eq!((ht.sum().value, ht.kept(), ht.skipped()), (2.0, 1, 1));
    /// ```
    #[inline]
    pub fn observe(&mut self, value: f64, weight: Weight) {
        if !value.is_finite() {
            self.skipped = self.skipped.saturating_add(1);
            return;
        }
        self.kept = self.kept.saturating_add(1);
        let (w, y) = (weight.get(), value);
        // With the scales at 0 (every item so far within 2^200), this is the plain sum: the
        // products by 1 are exact.
        let (mut unit, mut scaled_w, mut scaled_y) = (self.unit_w, w * self.unit_w, y * self.unit_y);
        if scaled_w.max(scaled_y.abs()) > ITEM_LIMIT {
            self.rescale(exponent(w) - ITEM_TARGET, exponent(y.abs()) - ITEM_TARGET);
            (unit, scaled_w, scaled_y) = (self.unit_w, w * self.unit_w, y * self.unit_y);
        }
        let (w, y) = (scaled_w, scaled_y);
        let spread = w * (w - unit);
        let s = &mut self.sums;
        s[0] += w;
        s[1] += w * y;
        s[2] += spread;
        s[3] += spread * y;
        s[4] += spread * y * y;
    }

    /// Raises the scales to at least `scale_w` and `scale_y` (never lowers them), dividing
    /// each sum by the powers of two its degrees call for (exact, but where a sum falls among
    /// the subnormals, and is then negligible).
    #[inline]
    fn rescale(&mut self, scale_w: i32, scale_y: i32) {
        let scales = (self.scale_w, self.scale_y);
        (self.sums, self.scale_w, self.scale_y) = rescaled(self.sums, scales, (scale_w, scale_y));
        (self.unit_w, self.unit_y) = (scaled(1.0, -self.scale_w), scaled(1.0, -self.scale_y));
    }

    /// Raises the weights' scale until every sum is within [`SUM_LIMIT`] (after a merge).
    fn bound_sums(&mut self) {
        while self.sums.iter().any(|s| s.abs() > SUM_LIMIT) {
            self.rescale(self.scale_w.saturating_add(64), self.scale_y);
        }
    }

    /// Sum `i` as it is (saturating at `±f64::MAX`).
    fn true_sum(&self, i: usize) -> f64 {
        let (deg_w, deg_y) = DEGREES[i];
        scaled(self.sums[i], deg_w.saturating_mul(self.scale_w).saturating_add(deg_y.saturating_mul(self.scale_y)))
    }

    /// The number of items kept (seen by the estimator), saturating at `u64::MAX`.
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe(1.0, Weight::new(10.0)?);
    /// assert_eq!(ht.kept(), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
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
    /// ht.observe(f64::INFINITY, Weight::new(10.0)?);
    /// assert_eq!((ht.skipped(), ht.count().value), (1, 0.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The estimated number of items offered, `Σ w` (at most `f64::MAX`).
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe(1.0, Weight::new(10.0)?);
    /// assert_eq!(ht.count().value, 10.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn count(&self) -> Estimate {
        Estimate { value: self.true_sum(0), variance: self.true_sum(2).max(0.0) }
    }

    /// The estimated sum of the values offered, `Σ w·y` (within `±f64::MAX`).
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe(3.0, Weight::new(10.0)?);
    /// assert_eq!(ht.sum().value, 30.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn sum(&self) -> Estimate {
        Estimate { value: self.true_sum(1), variance: self.true_sum(4).max(0.0) }
    }

    /// The estimated mean of the values offered, `Σ w·y / Σ w` (0 before any item), with the
    /// linearized variance of the ratio. Both are computed from the scaled sums, so they are
    /// the mean and its variance even where the sums themselves pass `f64::MAX`.
    ///
    /// ```
    /// # use synopses::shedding::HorvitzThompson;
    /// # use synopses::core::Weight;
    /// let mut ht = HorvitzThompson::new();
    /// ht.observe(3.0, Weight::new(10.0)?);
    /// ht.observe(5.0, Weight::new(10.0)?);
    /// assert_eq!(ht.mean().value, 4.0);
    /// let mut huge = HorvitzThompson::new();
    /// huge.observe(f64::MAX, Weight::new(f64::MAX)?);
    /// huge.observe(f64::MAX, Weight::new(f64::MAX)?);
    /// assert_eq!(huge.mean().value, f64::MAX);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn mean(&self) -> Estimate {
        // The mean and its variance are of degree 0 in the weights: any weight scale gives
        // them. Raise it until the sums are within 2^500, so that the products below (the
        // scaled mean is within 2^200, as every scaled value is) cannot overflow.
        let mut at = *self;
        while at.sums.iter().any(|s| s.abs() > pow2(500)) {
            at.rescale(at.scale_w.saturating_add(64), at.scale_y);
        }
        let [count, sum, spread, spread_y, spread_yy] = at.sums;
        if count <= 0.0 {
            return Estimate { value: 0.0, variance: 0.0 };
        }
        let mean = sum / count;
        let spread = spread_yy - 2.0 * mean * spread_y + mean * mean * spread;
        let square = count * count;
        // (A count among the subnormals squares to 0: divide by it twice instead.)
        let variance = if square.is_normal() { spread.max(0.0) / square } else { spread.max(0.0) / count / count };
        Estimate { value: scaled(mean, at.scale_y), variance: scaled(variance, 2 * at.scale_y) }
    }
}

impl<T: Value> Operator<(T, Weight)> for HorvitzThompson {
    fn observe(&mut self, (item, weight): (T, Weight)) {
        HorvitzThompson::observe(self, item.value(), weight);
    }
}

impl Mergeable for HorvitzThompson {
    /// Adds the sums: exactly the estimator of both sets of kept items (the counts of items
    /// saturate at `u64::MAX`).
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        self.kept = self.kept.saturating_add(other.kept);
        self.skipped = self.skipped.saturating_add(other.skipped);
        // On the larger of the two scales (almost always both 0), then within the sums' limit.
        let mut theirs = other.sums;
        if (self.scale_w, self.scale_y) != (other.scale_w, other.scale_y) {
            self.rescale(other.scale_w, other.scale_y);
            let mut other = *other;
            other.rescale(self.scale_w, self.scale_y);
            theirs = other.sums;
        }
        self.sums.iter_mut().zip(theirs).for_each(|(a, b)| *a += b);
        if self.sums.iter().any(|s| s.abs() > SUM_LIMIT) {
            self.bound_sums();
        }
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
            ht.observe(y, weight(w));
            n += w;
            s += w * y;
            v += w * (w - 1.0) * y * y;
        }
        assert_eq!((ht.count().value, ht.sum().value, ht.sum().variance), (n, s, v));
        assert_eq!((ht.scale_w, ht.scale_y), (0, 0));
    }

    #[test]
    fn extreme_items_rescale_and_keep_their_means() {
        let mut ht = HorvitzThompson::new();
        ht.observe(f64::MAX, weight(f64::MAX));
        ht.observe(-f64::MAX, weight(f64::MAX));
        assert_eq!(ht.mean().value, 0.0);
        assert_eq!(ht.count().value, f64::MAX);
        // A thousand light items beside one of weight 2^300: the mean is the heavy one's.
        let mut mixed = HorvitzThompson::new();
        (0..1000).for_each(|_| mixed.observe(1.0, Weight::ONE));
        mixed.observe(3.0, weight(2f64.powi(300)));
        assert_eq!(mixed.mean().value, 3.0);
        assert_eq!(mixed.count().value, 2f64.powi(300));
        // Merging rescales to the larger scale, and self-merges never overflow.
        let mut merged = HorvitzThompson::new();
        merged.observe(2.0, weight(4.0));
        merged.merge(&mixed).expect("estimators merge");
        assert_eq!(merged.mean().value, 3.0);
        for _ in 0..3000 {
            let copy = merged;
            merged.merge(&copy).expect("estimators merge");
        }
        assert_eq!(merged.mean().value, 3.0);
        assert!(merged.sums.iter().all(|s| s.abs() <= SUM_LIMIT));
        assert_eq!(merged.count().value, f64::MAX);
    }
}
