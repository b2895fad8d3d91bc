//! The weighted reservoir: Efraimidis and Spirakis' A-ExpJ. The teaching text is in the
//! [family docs](super).

use std::fmt;

use super::state::{State, VERSION};
use crate::codec::{Codec, Item, Reader, codec_impl};
use crate::core::random::{EXPONENTIAL_MAX, largest_exponential};
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, Operator, Weight};

/// A weighted random sample of at most `capacity` items, without replacement: as if the
/// items were drawn one after another, each time with probability proportional to its weight
/// among those not yet drawn (PPSWOR). See the [family docs](super).
///
/// Item `i` gets the key `E_i / w_i`, `E_i` exponential, and the sample is the `capacity`
/// smallest keys, so samples of two parts of a stream merge exactly. Once full it jumps over
/// weight rather than items (A-ExpJ): it draws random numbers only for the items that enter.
///
/// ```
/// use synopses::core::Weight;
/// use synopses::sampling::WeightedReservoir;
///
/// let mut sample = WeightedReservoir::new(2, 42)?;
/// sample.observe_weighted("rare", Weight::new(1.0)?);
/// sample.observe_weighted("common", Weight::new(1000.0)?);
/// sample.observe_weighted("also rare", Weight::new(1.0)?);
/// assert!(sample.iter().any(|&(item, _)| item == "common")); // all but certain
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct WeightedReservoir<T> {
    /// Items with their weights.
    state: State<(T, f64)>,
    total_weight: f64,
    /// Once full: the weight still to pass over before the next item enters.
    jump: f64,
}

impl<T> WeightedReservoir<T> {
    /// An empty weighted reservoir of at most `capacity` items (`1..=2^24`), drawing its
    /// random numbers from `seed`.
    ///
    /// ```
    /// use synopses::sampling::WeightedReservoir;
    ///
    /// let r = WeightedReservoir::<u64>::new(100, 7)?;
    /// assert_eq!((r.capacity(), r.len()), (100, 0));
    /// assert!(WeightedReservoir::<u64>::new(0, 7).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(capacity: usize, seed: u64) -> Result<Self, ConfigError> {
        Ok(Self { state: State::new(capacity, capacity, seed)?, total_weight: 0.0, jump: 0.0 })
    }

    /// The most items the sample holds, `k`.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// assert_eq!(WeightedReservoir::<u8>::new(3, 0)?.capacity(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.state.sample.capacity()
    }

    /// The seed of the random numbers.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// assert_eq!(WeightedReservoir::<u8>::new(3, 9)?.seed(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.state.seed
    }

    /// The number of items observed (summed over merges, saturating at `u64::MAX`).
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(3, 0)?;
    /// (0..10_u64).for_each(|i| r.observe_weighted(i, Weight::ONE));
    /// assert_eq!(r.seen(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.state.seen
    }

    /// The sum of the weights observed (summed over merges; at most `f64::MAX`).
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(3, 0)?;
    /// r.observe_weighted("a", Weight::new(2.5)?);
    /// r.observe_weighted("b", Weight::new(0.5)?);
    /// assert_eq!(r.total_weight(), 3.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    /// The number of items in the sample, `min(seen, k)`.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(3, 0)?;
    /// r.observe_weighted("a", Weight::ONE);
    /// assert_eq!(r.len(), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.state.sample.len()
    }

    /// Whether the sample holds no item.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// assert!(WeightedReservoir::<u8>::new(3, 0)?.is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sampled items with their weights, in the order they would have been drawn one
    /// after another (the order of their keys, as [`into_vec`](Self::into_vec)): one state
    /// lists its sample in one order however it was built, so a sampler decoded from
    /// [`to_bytes`](Self::to_bytes) lists it as the encoded one does (except among items of
    /// equal keys, which only weights below `1/f64::MAX` make likely). Sorts the `k` keys.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(3, 0)?;
    /// r.observe_weighted("a", Weight::new(2.0)?);
    /// assert_eq!(r.iter().next(), Some(&("a", 2.0)));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &(T, f64)> {
        // The heap's layout depends on the order of arrival, which decoding does not replay.
        self.state.sample.sorted().into_iter().map(|k| &k.item)
    }

    /// The sampled items with their weights, in the order they would have been drawn one
    /// after another (the order of their keys).
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(3, 0)?;
    /// r.observe_weighted("a", Weight::ONE);
    /// assert_eq!(r.into_vec(), vec![("a", 1.0)]);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn into_vec(self) -> Vec<(T, f64)> {
        self.state.sample.into_sorted_items()
    }

    /// How many random numbers the sampler has drawn: one per item while filling, then two
    /// per item that enters (its key and the next jump).
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(10, 0)?;
    /// (0..100_000_u64).for_each(|i| r.observe_weighted(i, Weight::ONE));
    /// assert!(r.random_draws() < 3 * 10 * (1 + 10)); // far fewer than 100 000
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
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(1, 0)?;
    /// r.observe_weighted(7_u64, Weight::new(3.0)?);
    /// assert_eq!(r.len(), 1);
    /// assert!(Weight::new(f64::NAN).is_err()); // no weight, so nothing to observe
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_weighted(&mut self, item: T, weight: Weight) {
        let w = weight.get();
        self.state.seen = self.state.seen.saturating_add(1);
        self.total_weight = (self.total_weight + w).min(f64::MAX);
        if !self.state.sample.is_full() {
            let key = self.state.rng.exponential() / w;
            self.state.sample.offer(key, (item, w));
            if self.state.sample.is_full() {
                self.draw_jump();
            }
            return;
        }
        self.jump -= w;
        if self.jump <= 0.0 {
            self.enter(item, w);
        }
    }

    /// Observes every `(item, weight)` pair of an iterator: the same sample as
    /// [`observe_weighted`](Self::observe_weighted) one by one, with the running sums in locals rather than in
    /// the struct, whose store-and-reload chain bounded the loop (measured 3.5 → 0.8 ns per item).
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(10, 0)?;
    /// r.observe_all((0..1000_u64).map(|i| (i, Weight::ONE)));
    /// assert_eq!((r.seen(), r.len(), r.total_weight()), (1000, 10, 1000.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<I: IntoIterator<Item = (T, Weight)>>(&mut self, items: I) {
        self.observe_all_with(items, |item| item);
    }

    /// Observes every `(item, weight)` pair of an iterator, making a `T` (`make`) only of the
    /// items that enter the sample: the same sample as [`observe_all`](Self::observe_all).
    /// Every weight is read; only `k · (1 + ln(W/w_k))`-odd items are made. Use it to sample
    /// row numbers of a column and read only the sampled rows.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let weights: Vec<f64> = (1..=10_000).map(f64::from).collect();
    /// let (mut made, mut r) = (0, WeightedReservoir::new(5, 2)?);
    /// let rows = weights.iter().enumerate().filter_map(|(row, &w)| Some((row, Weight::new(w).ok()?)));
    /// r.observe_all_with(rows, |row| {
    ///     made += 1;
    ///     format!("row {row}")
    /// });
    /// assert_eq!((r.len(), r.seen()), (5, 10_000));
    /// assert!(made < 200);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all_with<U>(&mut self, items: impl IntoIterator<Item = (U, Weight)>, mut make: impl FnMut(U) -> T) {
        let mut items = items.into_iter();
        while !self.state.sample.is_full() {
            let Some((item, weight)) = items.next() else { return };
            self.observe_weighted(make(item), weight);
        }
        loop {
            // The inner loop makes no call, so the compiler keeps the sums in registers (with
            // the rare `enter` call inside, it kept `total` on the stack: 3.0 ns per item).
            let (mut jump, mut total, mut seen) = (self.jump, self.total_weight, self.state.seen);
            let mut entering = None;
            for (item, weight) in items.by_ref() {
                let w = weight.get();
                seen = seen.saturating_add(1);
                total += w;
                jump -= w;
                if jump <= 0.0 {
                    entering = Some((item, w));
                    break;
                }
            }
            (self.jump, self.total_weight, self.state.seen) = (jump, total, seen);
            let Some((item, w)) = entering else { break };
            self.enter(make(item), w);
        }
        // Saturating once at the end is saturating at every step: past `f64::MAX` the sum is
        // `+∞` and stays there.
        self.total_weight = self.total_weight.min(f64::MAX);
    }

    /// The same sample (keys, weights, count and random stream unchanged) with each item
    /// replaced by `f(item)`. The mapped reservoir continues and merges as the original
    /// would have.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut ids = WeightedReservoir::new(2, 4)?;
    /// ids.observe_all((1..=100_u32).map(|id| (id, Weight::ONE)));
    /// let names = ids.clone().map(|id| format!("user-{id}"));
    /// assert_eq!(names.total_weight(), ids.total_weight());
    /// assert!(names.iter().map(|(n, w)| (n.clone(), *w)).eq(ids.iter().map(|(id, w)| (format!("user-{id}"), *w))));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> WeightedReservoir<U> {
        WeightedReservoir {
            state: self.state.map(|(item, w)| (f(item), w)),
            total_weight: self.total_weight,
            jump: self.jump,
        }
    }

    /// Adds an item whose share of the weight axis holds the next arrival, then draws the
    /// next jump. Its key is below the threshold `W`: an exponential conditioned on `E < w·W`,
    /// drawn by inversion, `E = −ln(1 − U·P)` with `P = P(E < w·W) = 1 − e^(−w·W)`.
    fn enter(&mut self, item: T, w: f64) {
        let threshold = self.state.sample.threshold().unwrap_or(f64::INFINITY);
        let below = -(-w * threshold).exp_m1();
        let key = -(-self.state.rng.uniform() * below).ln_1p() / w;
        self.state.sample.offer(key, (item, w));
        self.draw_jump();
    }

    /// Merges `other` in: exactly distributed as the sample of one reservoir that saw both
    /// streams (the `k` smallest keys of both). Capacities must match; two non-empty
    /// reservoirs of the same random stream are refused (see
    /// [`Reservoir::merge`](super::Reservoir::merge)).
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::WeightedReservoir;
    ///
    /// let mut a = WeightedReservoir::new(3, 1)?;
    /// let mut b = WeightedReservoir::new(3, 2)?;
    /// (0..100_u64).for_each(|i| a.observe_weighted(i, Weight::ONE));
    /// (100..200_u64).for_each(|i| b.observe_weighted(i, Weight::ONE));
    /// a.merge(&b)?;
    /// assert_eq!((a.seen(), a.len()), (200, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError>
    where
        T: Clone,
    {
        self.state.merge(&other.state)?;
        self.total_weight = (self.total_weight + other.total_weight).min(f64::MAX);
        if self.state.sample.is_full() {
            // The threshold may have fallen; the arrivals have no memory, so redraw the jump.
            self.draw_jump();
        }
        Ok(())
    }

    /// Bytes of memory held: the struct and the sampled items with their weights and keys.
    ///
    /// ```
    /// # use synopses::sampling::WeightedReservoir;
    /// # use synopses::core::Weight;
    /// let mut r = WeightedReservoir::new(10, 0)?;
    /// (0..100_u64).for_each(|i| r.observe_weighted(i, Weight::ONE));
    /// assert!(r.size_in_bytes() >= 10 * 24);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.state.entry_bytes()
    }

    /// The weight to pass over before the next arrival of a Poisson process of rate `W` (the
    /// largest key kept) along the weight axis: exponential with mean `1/W`.
    fn draw_jump(&mut self) {
        let threshold = self.state.sample.threshold().unwrap_or(f64::INFINITY);
        let e = self.state.rng.exponential();
        // Past a threshold of 0 (keys of weights near `f64::MAX` underflow to it) no key is
        // below it: nothing enters again, and `0 / 0` must not make the jump NaN.
        self.jump = if threshold > 0.0 { e / threshold } else { f64::INFINITY };
    }
}

impl<T: Item> WeightedReservoir<T> {
    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::WeightedReservoir;
    ///
    /// let mut x = WeightedReservoir::new(2, 5)?;
    /// x.observe_weighted("a".to_string(), Weight::new(2.0)?);
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.state.weighted_encoded_len() + 8
    }

    /// Encodes the sample in the crate's [binary format](crate::codec), family code 8, format
    /// version 2.
    ///
    /// Body: capacity (u32), total weight (f64), seed (u64), stream (u64), seen (u64), the
    /// random generator (the 32 bytes of xoshiro256++'s state, then its draw count, u64), the
    /// number of sampled items (u32), each key (f64), item and weight (f64), smallest key
    /// first, and last the jump: the weight still to pass over before the next item enters
    /// (f64; +0 while the sample is not full). With the generator and the jump stored, a
    /// decoded sampler continues exactly as this one would.
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::WeightedReservoir;
    ///
    /// let mut r = WeightedReservoir::new(2, 5)?;
    /// r.observe_weighted(10_u64, Weight::ONE);
    /// // Envelope 12, capacity to count 40, generator 40, one entry 24, jump 8.
    /// assert_eq!(r.to_bytes().len(), 12 + 40 + 40 + 24 + 8);
    ///
    /// // Encoded mid-stream, decoded, and continued: the uninterrupted run, bit for bit.
    /// let mut resumed = WeightedReservoir::<u64>::from_bytes(&r.to_bytes())?;
    /// for i in 0..1000_u64 {
    ///     let w = Weight::new(1.0 + (i % 5) as f64)?;
    ///     r.observe_weighted(i, w);
    ///     resumed.observe_weighted(i, w);
    /// }
    /// assert_eq!(resumed.to_bytes(), r.to_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = self.state.weighted_writer(Self::FAMILY, self.capacity(), self.total_weight, 8);
        w.put_f64(self.jump);
        w.finish()
    }

    /// Decodes a sample written by [`to_bytes`](Self::to_bytes), validating every field:
    /// finite, positive weights, keys in increasing order, a generator state other than all
    /// zeros, and a jump the generator could have drawn at the sample's threshold (+0 while
    /// the sample is not full).
    ///
    /// Also reads format version 1, which holds no generator: a sample decoded from it
    /// continues on a random stream derived from its seed, stream and `seen`, with a fresh
    /// jump (see [`Reservoir::from_bytes`](super::Reservoir::from_bytes)).
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::WeightedReservoir;
    ///
    /// let mut r = WeightedReservoir::new(2, 5)?;
    /// r.observe_weighted(10_u64, Weight::new(4.0)?);
    /// assert_eq!(WeightedReservoir::<u64>::from_bytes(&r.to_bytes())?, r);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (mut r, version) = Reader::open_versions(bytes, Self::FAMILY, Self::VERSION)?;
        let (state, total_weight) = State::decode_weighted(&mut r, version, 0, |key, (_, w): &(T, f64)| {
            // `E / w` underflows to 0 for the largest weights, and overflows to +∞ only for
            // weights below `64 / f64::MAX` (`E = −ln(1 − U·P)` stays below 37 for the
            // generator's `U`, which is at most `1 − 2^−53`).
            // (`E` is at most 37, so a key is at most `37 / w`, rounded as the sampler
            // rounds it.)
            key >= 0.0 && Weight::new(*w).is_ok() && key <= EXPONENTIAL_MAX / w
        })?;
        let mut out = Self { state, total_weight, jump: 0.0 };
        if version >= 2 {
            out.jump = r.f64()?;
            // A jump is `E / W`, drawn once the sample is full at its threshold `W` (+∞ past
            // a threshold of 0), and only falls, staying above 0, until the next draw.
            let largest = out.state.sample.threshold().map_or(0.0, |threshold| largest_exponential() / threshold);
            if !(out.jump >= 0.0 && out.jump <= largest) || out.jump.is_sign_negative() {
                return Err(DecodeError::InvalidField {
                    field: "jump",
                    reason: "beyond what the generator draws at the sample's threshold (+0 before it is full)",
                });
            }
        } else if out.state.sample.is_full() {
            out.draw_jump();
        }
        r.finish()?;
        Ok(out)
    }
}

impl<T: PartialEq> PartialEq for WeightedReservoir<T> {
    /// The same configuration, count, total weight and sample (items, weights and keys); the
    /// generator's state and the jump, which decide only what happens next, are not compared
    /// (the encodings compare them too).
    fn eq(&self, other: &Self) -> bool {
        self.state.same(&other.state) && self.total_weight.to_bits() == other.total_weight.to_bits()
    }
}

impl<T> fmt::Debug for WeightedReservoir<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeightedReservoir")
            .field("capacity", &self.capacity())
            .field("seen", &self.seen())
            .field("total_weight", &self.total_weight)
            .field("len", &self.len())
            .field("seed", &self.seed())
            .finish()
    }
}

impl<T> Operator<(T, Weight)> for WeightedReservoir<T> {
    fn observe(&mut self, (item, weight): (T, Weight)) {
        WeightedReservoir::observe_weighted(self, item, weight);
    }

    fn observe_all<I: IntoIterator<Item = (T, Weight)>>(&mut self, items: I) {
        WeightedReservoir::observe_all(self, items);
    }
}

impl<'a, T: Clone> Operator<&'a (T, Weight)> for WeightedReservoir<T> {
    fn observe(&mut self, (item, weight): &'a (T, Weight)) {
        WeightedReservoir::observe_weighted(self, item.clone(), *weight);
    }
}

impl<T> Extend<(T, Weight)> for WeightedReservoir<T> {
    fn extend<I: IntoIterator<Item = (T, Weight)>>(&mut self, items: I) {
        WeightedReservoir::observe_all(self, items);
    }
}

impl<T: Clone> Mergeable for WeightedReservoir<T> {
    fn size_in_bytes(&self) -> usize {
        WeightedReservoir::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        WeightedReservoir::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { state: self.state.empty_like(), total_weight: 0.0, jump: 0.0 }
    }

    fn empty_part(&self, index: u64) -> Self {
        Self { state: self.state.empty_part(index), total_weight: 0.0, jump: 0.0 }
    }
}

codec_impl!([T: Item] WeightedReservoir<T>, 8, version VERSION);
