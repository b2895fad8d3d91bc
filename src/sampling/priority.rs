//! Priority sampling (Duffield, Lund and Thorup). The teaching text is in the
//! [family docs](super).

use std::fmt;

use super::state::{State, VERSION};
use crate::codec::{Codec, Item, Reader, codec_impl};
use crate::core::random::{UNIFORM_MAX, UNIFORM_MIN};
use crate::core::{ConfigError, DecodeError, Estimate, MergeError, Mergeable, Operator, Weight};

/// A priority sample of `capacity` weighted items, from which the total weight of *any*
/// subset of the stream, chosen after the fact, is estimated without bias, with an unbiased
/// estimate of the variance. See the [family docs](super).
///
/// Item `i` of weight `w_i` gets the priority `w_i / U_i`; the sample is the `capacity`
/// highest priorities, and `τ`, the next highest, sets each sampled item's estimated weight
/// `max(w_i, τ)`. Items of weight at least `τ` are always sampled and estimated exactly.
///
/// ```
/// use synopses::core::{Confidence, Weight};
/// use synopses::sampling::PrioritySample;
///
/// // Bytes per flow: a few elephants and many mice.
/// let mut flows = PrioritySample::new(200, 42)?;
/// for flow in 0..10_000_u64 {
///     let bytes = if flow % 1000 == 0 { 1e6 } else { 100.0 + (flow % 50) as f64 };
///     flows.observe_weighted(flow, Weight::new(bytes)?);
/// }
/// // Traffic of the even-numbered flows, estimated from 200 of the 10 000:
/// let even = flows.subset_sum(|flow| flow % 2 == 0);
/// let truth = 10.0 * 1e6 + (0..10_000_u64).filter(|f| f % 2 == 0 && f % 1000 != 0).map(|f| 100.0 + (f % 50) as f64).sum::<f64>();
/// assert!(even.bounds(Confidence::ThreeSigma).contains(truth));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct PrioritySample<T> {
    /// Items with their weights, keyed `U / w`; one more than the capacity, for `τ`.
    state: State<(T, f64)>,
    total_weight: f64,
}

impl<T> PrioritySample<T> {
    /// An empty priority sample of `capacity` items (`1..=2^24`; it keeps one more, to know
    /// `τ`), drawing its random numbers from `seed`.
    ///
    /// ```
    /// use synopses::sampling::PrioritySample;
    ///
    /// let p = PrioritySample::<u64>::new(100, 7)?;
    /// assert_eq!((p.capacity(), p.threshold()), (100, 0.0));
    /// assert!(PrioritySample::<u64>::new(0, 7).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(capacity: usize, seed: u64) -> Result<Self, ConfigError> {
        Ok(Self { state: State::new(capacity, capacity.saturating_add(1), seed)?, total_weight: 0.0 })
    }

    /// The number of items sampled, `k`.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// assert_eq!(PrioritySample::<u8>::new(3, 0)?.capacity(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.state.sample.capacity() - 1
    }

    /// The seed of the random numbers.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// assert_eq!(PrioritySample::<u8>::new(3, 9)?.seed(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.state.seed
    }

    /// The number of items observed (summed over merges, saturating at `u64::MAX`).
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(3, 0)?;
    /// (0..10_u64).for_each(|i| p.observe_weighted(i, Weight::ONE));
    /// assert_eq!(p.seen(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.state.seen
    }

    /// The sum of the weights observed (summed over merges; at most `f64::MAX`).
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(3, 0)?;
    /// p.observe_weighted("a", Weight::new(2.0)?);
    /// assert_eq!(p.total_weight(), 2.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    /// The threshold `τ`: the `(k+1)`-th highest priority, or 0 while at most `k` items were
    /// seen (every item is then sampled and estimated exactly); at most `f64::MAX`, which a
    /// priority `w/U` passes only for weights near it.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(2, 0)?;
    /// (0..2_u64).for_each(|i| p.observe_weighted(i, Weight::ONE));
    /// assert_eq!(p.threshold(), 0.0);
    /// p.observe_weighted(2, Weight::ONE);
    /// assert!(p.threshold() > 1.0); // a priority w/U is above the weight
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn threshold(&self) -> f64 {
        // A key can be as small as 0 (a weight near `f64::MAX`): τ saturates there.
        self.state.sample.threshold().map_or(0.0, |key| (1.0 / key).min(f64::MAX))
    }

    /// The sampled items: each item, its weight, and its estimated weight `max(w, τ)`, in
    /// increasing order of their keys `U/w` (then of their weights). At most `k` of them.
    ///
    /// When the largest keys tie (keys of weights near `f64::MAX` underflow to the same
    /// value), which of the tied entries only sets `τ` is not defined: all `t` of them are
    /// listed instead, each with its estimated weight times `(t − 1)/t`, the share of the
    /// places they fill together. One state then has one answer, whatever order it was built
    /// in.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(10, 0)?;
    /// for i in 0..100_u64 {
    ///     p.observe_weighted(i, Weight::new(1.0 + i as f64)?);
    /// }
    /// assert_eq!(p.sample().count(), 10);
    /// assert!(p.sample().all(|(_, w, est)| est >= w && est >= p.threshold()));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn sample(&self) -> impl Iterator<Item = (&T, f64, f64)> {
        let tau = self.threshold();
        let mut entries: Vec<_> = self.state.sample.iter().collect();
        // A canonical order, so that sums over the sample round the same way for one state.
        entries.sort_unstable_by(|a, b| a.key.total_cmp(&b.key).then(a.item.1.total_cmp(&b.item.1)));
        // The entries of the largest key, when the sample is full, set τ: one of them in the
        // sample's place, shared by all.
        let cut = self.state.sample.threshold().map(|cut| {
            let tied = entries.iter().filter(|k| k.key.to_bits() == cut.to_bits()).count().max(1);
            (cut.to_bits(), (tied - 1) as f64 / tied as f64)
        });
        entries.into_iter().filter_map(move |k| {
            let estimate = k.item.1.max(tau);
            match cut {
                Some((bits, share)) if k.key.to_bits() == bits => {
                    (share > 0.0).then_some((&k.item.0, k.item.1, estimate * share))
                }
                _ => Some((&k.item.0, k.item.1, estimate)),
            }
        })
    }

    /// The estimated total weight of the items that satisfy `predicate`, with the unbiased
    /// estimate of its variance `Σ τ·max(0, τ − w_i)` over the sampled items of the subset.
    /// Either saturates at `f64::MAX` (a variance does from weights near `10^154`).
    ///
    /// Both are unbiased at any size, but the normal interval
    /// ([`Estimate::bounds`]) needs a fair number of the subset's items in the sample: with
    /// few of them (a rare subset, a small `k`) the estimate is skewed, usually low, and the
    /// interval covers the truth less often than it says (`notebooks/sampling.ipynb`
    /// measures 89 % for a nominal 95.5 % with a third of the items at `k = 10`, 95 % from
    /// `k = 100`).
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(5, 0)?;
    /// for i in 0..5_u64 {
    ///     p.observe_weighted(i, Weight::new(10.0)?);
    /// }
    /// // Fewer items than the capacity: exact.
    /// assert_eq!(p.subset_sum(|&i| i < 2), synopses::core::Estimate { value: 20.0, variance: 0.0 });
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn subset_sum(&self, mut predicate: impl FnMut(&T) -> bool) -> Estimate {
        let tau = self.threshold();
        let (mut value, mut variance) = (0.0, 0.0);
        for (item, w, estimate) in self.sample() {
            if predicate(item) {
                value += estimate;
                // (A tied entry's share scales its variance term as its estimate.)
                let share = if estimate > 0.0 { estimate / w.max(tau) } else { 0.0 };
                variance += tau * (tau - w).max(0.0) * share;
            }
        }
        // Both sums are of non-negative terms: past `f64::MAX` they saturate there.
        Estimate { value: value.min(f64::MAX), variance: variance.min(f64::MAX) }
    }

    /// How many random numbers the sampler has drawn: one per item.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(3, 0)?;
    /// (0..10_u64).for_each(|i| p.observe_weighted(i, Weight::ONE));
    /// assert_eq!(p.random_draws(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn random_draws(&self) -> u64 {
        self.state.rng.draws()
    }

    /// Observes `item` with weight `weight`. A [`Weight`] is finite and above zero, checked
    /// once where it is made (`Weight::new(w)?`), so observing cannot fail.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(3, 0)?;
    /// p.observe_weighted("x", Weight::new(5.0)?);
    /// assert!(Weight::new(-1.0).is_err());
    /// assert_eq!(p.subset_sum(|_| true).value, 5.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_weighted(&mut self, item: T, weight: Weight) {
        let w = weight.get();
        self.state.seen = self.state.seen.saturating_add(1);
        self.total_weight = (self.total_weight + w).min(f64::MAX);
        self.offer(item, w);
    }

    /// Observes every `(item, weight)` pair of an iterator: the same sample as
    /// [`observe_weighted`](Self::observe_weighted) one by one, with the running sums in locals.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(10, 0)?;
    /// p.observe_all((0..1000_u64).map(|i| (i, Weight::ONE)));
    /// assert_eq!((p.seen(), p.total_weight()), (1000, 1000.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<I: IntoIterator<Item = (T, Weight)>>(&mut self, items: I) {
        let (mut total, mut seen) = (self.total_weight, self.state.seen);
        for (item, weight) in items {
            let w = weight.get();
            seen = seen.saturating_add(1);
            total += w;
            self.offer(item, w);
        }
        // Saturating once at the end is saturating at every step (see `WeightedReservoir`).
        (self.total_weight, self.state.seen) = (total.min(f64::MAX), seen);
    }

    /// Draws the item's `U` and keeps it if its key `U/w` is among the `k + 1` smallest. The
    /// test `U < t·w` against the largest key kept `t` spares a division for the items that
    /// do not enter, nearly all of them.
    #[inline]
    fn offer(&mut self, item: T, w: f64) {
        let u = self.state.rng.uniform();
        if self.state.sample.threshold().is_none_or(|t| u < t * w) {
            self.state.sample.offer(u / w, (item, w));
        }
    }

    /// Merges `other` in: exactly distributed as the priority sample of one sampler that saw
    /// both streams (the `k + 1` highest priorities of both). Capacities must match; two
    /// non-empty samples of the same random stream are refused (see
    /// [`Reservoir::merge`](super::Reservoir::merge)).
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::PrioritySample;
    ///
    /// let mut a = PrioritySample::new(3, 1)?;
    /// let mut b = PrioritySample::new(3, 2)?;
    /// a.observe_weighted("x", Weight::new(1.0)?);
    /// b.observe_weighted("y", Weight::new(2.0)?);
    /// a.merge(&b)?;
    /// assert_eq!(a.subset_sum(|_| true).value, 3.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError>
    where
        T: Clone,
    {
        self.state.merge(&other.state)?;
        self.total_weight = (self.total_weight + other.total_weight).min(f64::MAX);
        Ok(())
    }

    /// Bytes of memory held: the struct and the `k + 1` kept items with weights and keys.
    ///
    /// ```
    /// # use synopses::sampling::PrioritySample;
    /// # use synopses::core::Weight;
    /// let mut p = PrioritySample::new(10, 0)?;
    /// (0..100_u64).for_each(|i| p.observe_weighted(i, Weight::ONE));
    /// assert!(p.size_in_bytes() >= 11 * 24);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.state.entry_bytes()
    }
}

impl<T: Item> PrioritySample<T> {
    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::PrioritySample;
    ///
    /// let mut x = PrioritySample::new(2, 5)?;
    /// x.observe_weighted("a".to_string(), Weight::new(2.0)?);
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.state.weighted_encoded_len()
    }

    /// Encodes the sample in the crate's [binary format](crate::codec), family code 9, format
    /// version 2.
    ///
    /// Body: capacity `k` (u32), total weight (f64), seed (u64), stream (u64), seen (u64), the
    /// random generator (the 32 bytes of xoshiro256++'s state, then its draw count, u64), the
    /// number of kept items (u32, at most `k + 1`), then each key `U/w` (f64), item and weight
    /// (f64), smallest key first. With the generator stored (a priority sample has no pending
    /// draw), a decoded sample continues exactly as this one would.
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::PrioritySample;
    ///
    /// let mut p = PrioritySample::new(2, 5)?;
    /// p.observe_weighted(10_u64, Weight::ONE);
    /// // Envelope 12, capacity to count 40, generator 40, one entry 24.
    /// assert_eq!(p.to_bytes().len(), 12 + 40 + 40 + 24);
    ///
    /// // Encoded mid-stream, decoded, and continued: the uninterrupted run, bit for bit.
    /// let mut resumed = PrioritySample::<u64>::from_bytes(&p.to_bytes())?;
    /// for i in 0..1000_u64 {
    ///     let w = Weight::new(1.0 + (i % 5) as f64)?;
    ///     p.observe_weighted(i, w);
    ///     resumed.observe_weighted(i, w);
    /// }
    /// assert_eq!(resumed.to_bytes(), p.to_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.state.weighted_writer(Self::FAMILY, self.capacity(), self.total_weight, 0).finish()
    }

    /// Decodes a sample written by [`to_bytes`](Self::to_bytes), validating every field:
    /// finite, positive weights, keys `U/w` with `U` in [0, 1], in increasing order, a
    /// generator state other than all zeros, and at most one draw per item seen.
    ///
    /// Also reads format version 1, which holds no generator: a sample decoded from it
    /// continues on a random stream derived from its seed, stream and `seen` (see
    /// [`Reservoir::from_bytes`](super::Reservoir::from_bytes)).
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::PrioritySample;
    ///
    /// let mut p = PrioritySample::new(2, 5)?;
    /// p.observe_weighted(10_u64, Weight::new(4.0)?);
    /// assert_eq!(PrioritySample::<u64>::from_bytes(&p.to_bytes())?, p);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (mut r, version) = Reader::open_versions(bytes, Self::FAMILY, Self::VERSION)?;
        // The sample keeps k + 1 items: the (k + 1)-th priority is the threshold.
        let (state, total_weight) = State::decode_weighted(&mut r, version, 1, |key, (_, w): &(T, f64)| {
            // `U / w` with `U` from `2^−53` to `1 − 2^−53`, rounded as the sampler rounds
            // it: the bounds are the same divisions, and division is monotone. (A weight
            // near `f64::MAX` can give 0, a tiny one +∞: both reachable.)
            Weight::new(*w).is_ok() && key >= UNIFORM_MIN / w && key <= UNIFORM_MAX / w
        })?;
        r.finish()?;
        // One draw per item observed on this generator's stream; merged items count as seen
        // but were drawn by another (an empty sample that merges adopts the other's generator).
        if state.rng.draws() > state.seen {
            return Err(DecodeError::InvalidField { field: "generator", reason: "more draws than items seen" });
        }
        Ok(Self { state, total_weight })
    }
}

impl<T: PartialEq> PartialEq for PrioritySample<T> {
    /// The same configuration, count, total weight and kept items (with weights and keys);
    /// the generator's state, which decides only what happens next, is not compared (the
    /// encodings compare it too).
    fn eq(&self, other: &Self) -> bool {
        self.state.same(&other.state) && self.total_weight.to_bits() == other.total_weight.to_bits()
    }
}

impl<T> fmt::Debug for PrioritySample<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrioritySample")
            .field("capacity", &self.capacity())
            .field("seen", &self.seen())
            .field("total_weight", &self.total_weight)
            .field("threshold", &self.threshold())
            .field("seed", &self.seed())
            .finish()
    }
}

impl<T> Operator<(T, Weight)> for PrioritySample<T> {
    fn observe(&mut self, (item, weight): (T, Weight)) {
        PrioritySample::observe_weighted(self, item, weight);
    }

    fn observe_all<I: IntoIterator<Item = (T, Weight)>>(&mut self, items: I) {
        PrioritySample::observe_all(self, items);
    }
}

impl<'a, T: Clone> Operator<&'a (T, Weight)> for PrioritySample<T> {
    fn observe(&mut self, (item, weight): &'a (T, Weight)) {
        PrioritySample::observe_weighted(self, item.clone(), *weight);
    }
}

impl<T> Extend<(T, Weight)> for PrioritySample<T> {
    fn extend<I: IntoIterator<Item = (T, Weight)>>(&mut self, items: I) {
        PrioritySample::observe_all(self, items);
    }
}

impl<T: Clone> Mergeable for PrioritySample<T> {
    fn size_in_bytes(&self) -> usize {
        PrioritySample::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        PrioritySample::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { state: self.state.empty_like(), total_weight: 0.0 }
    }

    fn empty_part(&self, index: u64) -> Self {
        Self { state: self.state.empty_part(index), total_weight: 0.0 }
    }
}

codec_impl!([T: Item] PrioritySample<T>, 9, version VERSION);
