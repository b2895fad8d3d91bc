//! The counting Bloom filter. The teaching text is in the [family docs](super).

use std::fmt;

use bitvec::prelude::{BitVec, Lsb0};

use super::bloom::{MAX_HASHES, Positions, optimal_size};
use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::CounterWidth;
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, RemoveError, alloc, hashed_operator};
use crate::hash::{DEFAULT_SEED, Hashable};
use crate::membership::Bloom;

/// The most bits of counters a filter may hold: 2^33, one GiB (2^31 four-bit counters).
const MAX_COUNTER_BITS: u64 = 1 << 33;

/// A counting Bloom filter: a Bloom filter whose bits are small counters, so items can be
/// removed as well as inserted. See the [family docs](super).
///
/// * `contains` never answers `false` for an item that is in the filter, as long as only
///   items that are in it are removed; it answers `true` for one that is not with the
///   false-positive probability of a [`Bloom`] filter of the same size.
/// * `remove` of an item that is certainly absent (a counter is zero) is an error and
///   changes nothing.
/// * A counter that reaches its maximum stays there (sticky saturation): it is never
///   decremented again, so it can cause false positives but never a false negative.
///
/// ```
/// use synopses::membership::CountingBloom;
///
/// let mut sessions = CountingBloom::with_false_positive_rate(10_000, 0.01)?; // 47 KiB
/// for id in 0..10_000_u64 {
///     sessions.observe(id);
/// }
/// for id in 0..5_000_u64 {
///     sessions.remove(id)?; // those sessions ended
/// }
/// assert!((5_000..10_000_u64).all(|id| sessions.contains(id)));
/// let still_there = (0..5_000_u64).filter(|&id| sessions.contains(id)).count();
/// assert!(still_there < 10); // false positives: about 0.03 % (1 or 2) at half the design load
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CountingBloom {
    /// The counters, packed little-end first: counter `i` is bits
    /// `(i mod c)·w ..< (i mod c + 1)·w` of word `i / c`, with `w` bits per counter and
    /// `c = 64 / w` counters per word. A counter never straddles two words.
    ///
    /// ```text
    ///   4-bit counters, word 0:   bit 63 ...                 ... bit 0
    ///                             [c15][c14] ... [c2][c1][c0]
    /// ```
    words: Vec<u64>,
    counters: usize,
    hashes: u32,
    width: CounterWidth,
    seed: u64,
    total: u64,
}

/// The configuration of a [`CountingBloom`] filter: its size, from
/// [`CountingBloom::builder`] (counters and hashes) or
/// [`CountingBloom::builder_for_false_positive_rate`], then optionally the seed and the
/// counter width; [`build`](Self::build) validates it all and allocates the counters.
///
/// | setting | default |
/// |---|---|
/// | [`seed`](Self::seed) | [`DEFAULT_SEED`] |
/// | [`counter_width`](Self::counter_width) | [`CounterWidth::Four`] |
///
/// ```
/// use synopses::membership::{CounterWidth, CountingBloom};
///
/// let f = CountingBloom::builder_for_false_positive_rate(10_000, 0.01)
///     .counter_width(CounterWidth::Eight)
///     .seed(0x5EC2E7)
///     .build()?;
/// assert_eq!((f.counters(), f.hashes(), f.counter_width()), (95_851, 7, CounterWidth::Eight));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct CountingBloomBuilder {
    size: Size,
    seed: u64,
    counter_width: CounterWidth,
}

/// How a builder's filter is sized: a shape, or a target turned into one at `build`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Size {
    Shape { counters: usize, hashes: u32 },
    FalsePositiveRate { expected_items: u64, false_positive_rate: f64 },
}

impl CountingBloomBuilder {
    /// The defaults, at the given size.
    fn sized(size: Size) -> Self {
        Self { size, seed: DEFAULT_SEED, counter_width: CounterWidth::Four }
    }

    /// Hashes items with `seed`: on untrusted items, a secret seed keeps an adversary from
    /// choosing items whose counters are the members' (false positives on demand, and
    /// removals that take members out). Filters merge only with filters of the same seed.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// assert_eq!(CountingBloom::builder(1000, 3).seed(7).build()?.seed(), 7);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn seed(self, seed: u64) -> Self {
        Self { seed, ..self }
    }

    /// Counters of `width`: 4 (the default), 8 or 16 bits (32 and 64 are a [`ConfigError`] at
    /// `build`). See [`CounterWidth`] for which to choose.
    ///
    /// ```
    /// use synopses::membership::{CounterWidth, CountingBloom};
    ///
    /// let f = CountingBloom::builder(1 << 20, 5).counter_width(CounterWidth::Sixteen).build()?;
    /// assert_eq!(f.size_in_bytes() >> 20, 2); // 16 bits per counter
    /// assert!(CountingBloom::builder(1000, 3).counter_width(CounterWidth::ThirtyTwo).build().is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn counter_width(self, counter_width: CounterWidth) -> Self {
        Self { counter_width, ..self }
    }

    /// The filter, once every setting is checked: `counters` at least 1 and at most 2^33
    /// bits of counters in all (1 GiB), `hashes` in `1..=32`, counters of 4, 8 or 16 bits,
    /// and for a target, as [`CountingBloom::with_false_positive_rate`] requires.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// assert!(CountingBloom::builder(1000, 3).build().is_ok());
    /// assert_eq!(CountingBloom::builder(1000, 33).build().map_err(|e| e.parameter()).err(), Some("hashes"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<CountingBloom, ConfigError> {
        let Self { size, seed, counter_width: width } = self;
        if packed_width(width.bits()).is_none() {
            return Err(ConfigError::new("counter_width", width.bits(), "4, 8 or 16 bits"));
        }
        let max_counters = MAX_COUNTER_BITS >> width.log2();
        let (counters, hashes) = match size {
            Size::Shape { counters, hashes } => (counters, hashes),
            Size::FalsePositiveRate { expected_items, false_positive_rate } => {
                optimal_size(expected_items, false_positive_rate, max_counters, "at most 2^33 bits of counters")?
            }
        };
        if !(1..=max_counters).contains(&(counters as u64)) {
            return Err(ConfigError::new("counters", counters, "at least 1, and at most 2^33 bits of counters"));
        }
        if !(1..=MAX_HASHES).contains(&hashes) {
            return Err(ConfigError::new("hashes", hashes, "an integer in 1..=32"));
        }
        let Ok(words) = usize::try_from(((counters as u64) << width.log2()).div_ceil(64)) else {
            return Err(ConfigError::new("counters", counters, "a length this platform can address"));
        };
        let words = alloc::zeroed(words, "counters", counters)?;
        Ok(CountingBloom { words, counters, hashes, width, seed, total: 0 })
    }
}

impl CountingBloom {
    /// A filter of `counters` 4-bit counters, `hashes` per item, with the default seed.
    ///
    /// `counters` must be in `1..=2^31` (at most 1 GiB of counters) and `hashes` in `1..=32`.
    ///
    /// ```
    /// use synopses::membership::{CounterWidth, CountingBloom};
    ///
    /// let f = CountingBloom::new(9_585_059, 7)?;
    /// assert_eq!((f.counters(), f.hashes(), f.counter_width()), (9_585_059, 7, CounterWidth::Four));
    /// assert!(CountingBloom::new(0, 7).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(counters: usize, hashes: u32) -> Result<Self, ConfigError> {
        Self::builder(counters, hashes).build()
    }

    /// [`new`](Self::new), hashing with `seed` (see [`CountingBloomBuilder::seed`]).
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// assert_eq!(CountingBloom::with_seed(1024, 3, 5)?.seed(), 5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(counters: usize, hashes: u32, seed: u64) -> Result<Self, ConfigError> {
        Self::builder(counters, hashes).seed(seed).build()
    }

    /// The smallest filter of 4-bit counters whose false-positive rate after
    /// `expected_items` distinct items is at most `false_positive_rate`, sized as
    /// [`Bloom::with_false_positive_rate`] sizes its bits: `m = ⌈−n·ln p / (ln 2)²⌉` counters
    /// and `k = round(m/n · ln 2)` hashes. For wider counters, use
    /// [`builder_for_false_positive_rate`](Self::builder_for_false_positive_rate).
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// let f = CountingBloom::with_false_positive_rate(1_000_000, 0.01)?;
    /// assert_eq!((f.counters(), f.hashes()), (9_585_059, 7));
    /// assert_eq!(f.size_in_bytes() / 1_000_000, 4); // 4.8 bytes per item
    /// assert!(CountingBloom::with_false_positive_rate(0, 0.01).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_false_positive_rate(expected_items: u64, false_positive_rate: f64) -> Result<Self, ConfigError> {
        Self::builder_for_false_positive_rate(expected_items, false_positive_rate).build()
    }

    /// [`with_false_positive_rate`](Self::with_false_positive_rate), hashing with `seed` (see
    /// [`CountingBloomBuilder::seed`]).
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// let f = CountingBloom::with_false_positive_rate_and_seed(1000, 0.01, 0x5EC2E7)?;
    /// assert_eq!((f.counters(), f.seed()), (9586, 0x5EC2E7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_false_positive_rate_and_seed(
        expected_items: u64,
        false_positive_rate: f64,
        seed: u64,
    ) -> Result<Self, ConfigError> {
        Self::builder_for_false_positive_rate(expected_items, false_positive_rate).seed(seed).build()
    }

    /// A [builder](CountingBloomBuilder) of a filter of `counters` counters and `hashes`
    /// hashes per item, for the settings [`new`](Self::new) leaves at their defaults: seed and
    /// counter width. Filters merge only with filters of the same settings.
    ///
    /// ```
    /// use synopses::membership::{CounterWidth, CountingBloom};
    ///
    /// let f = CountingBloom::builder(1 << 20, 5).counter_width(CounterWidth::Eight).seed(42).build()?;
    /// assert_eq!((f.counter_width(), f.seed()), (CounterWidth::Eight, 42));
    /// assert!(CountingBloom::builder(1 << 31, 5).counter_width(CounterWidth::Sixteen).build().is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn builder(counters: usize, hashes: u32) -> CountingBloomBuilder {
        CountingBloomBuilder::sized(Size::Shape { counters, hashes })
    }

    /// A [builder](CountingBloomBuilder) of the smallest filter whose false-positive rate
    /// after `expected_items` distinct items is at most `false_positive_rate`, sized as
    /// [`with_false_positive_rate`](Self::with_false_positive_rate) sizes it (the counter
    /// width does not change the size: wider counters take more memory, not more counters).
    ///
    /// ```
    /// use synopses::membership::{CounterWidth, CountingBloom};
    ///
    /// let f = CountingBloom::builder_for_false_positive_rate(1000, 0.01).counter_width(CounterWidth::Eight).build()?;
    /// assert_eq!((f.counters(), f.hashes()), (9586, 7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn builder_for_false_positive_rate(expected_items: u64, false_positive_rate: f64) -> CountingBloomBuilder {
        CountingBloomBuilder::sized(Size::FalsePositiveRate { expected_items, false_positive_rate })
    }

    /// A copy of this filter with counters of another width: 4, 8 or 16 bits. Widening keeps
    /// every count, and a saturated counter stays saturated (its true count is unknown);
    /// narrowing saturates the counters that do not fit. Either way no item that is in the
    /// filter goes missing.
    ///
    /// ```
    /// use synopses::membership::{CounterWidth, CountingBloom};
    ///
    /// let mut f = CountingBloom::with_false_positive_rate(1000, 0.01)?;
    /// f.observe("x");
    /// let wide = f.with_counter_width(CounterWidth::Sixteen)?;
    /// assert!(wide.contains("x") && wide.counter_width() == CounterWidth::Sixteen);
    /// assert_eq!(wide.with_counter_width(CounterWidth::Four)?, f);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_counter_width(&self, width: CounterWidth) -> Result<Self, ConfigError> {
        let mut out = Self::builder(self.counters, self.hashes).seed(self.seed).counter_width(width).build()?;
        out.total = self.total;
        let (old_max, new_max) = (self.width.max(), width.max());
        for i in 0..self.counters {
            let c = self.counter(i);
            let converted = if c == old_max || c > new_max { new_max } else { c };
            out.set_counter(i, converted);
        }
        Ok(out)
    }

    /// The number of counters `m`.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// assert_eq!(CountingBloom::new(1000, 3)?.counters(), 1000);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn counters(&self) -> usize {
        self.counters
    }

    /// The number of counters each item touches, `k`.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// assert_eq!(CountingBloom::new(1000, 3)?.hashes(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// The width of the counters.
    ///
    /// ```
    /// use synopses::membership::{CounterWidth, CountingBloom};
    /// assert_eq!(CountingBloom::new(1000, 3)?.counter_width(), CounterWidth::Four);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn counter_width(&self) -> CounterWidth {
        self.width
    }

    /// The hash seed.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// assert_eq!(CountingBloom::new(1000, 3)?.seed(), synopses::hash::DEFAULT_SEED);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The number of items in the filter, counted with multiplicity (the total count, as
    /// [`CountMin::total`](crate::frequency::CountMin::total)): insertions minus successful
    /// removals (never below zero), summed over merges, saturating at `u64::MAX`. Exact as
    /// long as only items that are in the filter are removed.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe_all(["a", "b", "a"]);
    /// f.remove("a")?;
    /// assert_eq!(f.total(), 2);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Inserts an item: adds one to each of its `k` counters, except those already saturated.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe("cat");
    /// assert!(f.contains("cat"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe<T: Hashable>(&mut self, item: T) {
        self.observe_hash(item.hash64(self.seed));
    }

    /// Inserts every item of an iterator.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe_all(["a", "b"]);
    /// assert!(f.contains("a") && f.contains("b"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<T: Hashable, I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.observe(item);
        }
    }

    /// Inserts an item by its 64-bit hash (see
    /// [`HyperLogLog::observe_hash`](crate::cardinality::HyperLogLog::observe_hash)).
    ///
    /// ```
    /// use synopses::hash::Hashable;
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe_hash("cat".hash64(f.seed()));
    /// assert!(f.contains("cat"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe_hash(&mut self, hash: u64) {
        self.total = self.total.saturating_add(1);
        let log2 = self.width.log2();
        let max = self.width.max();
        for position in Positions::new(hash, self.counters, self.hashes) {
            let (index, shift) = locate(position, log2);
            if let Some(word) = self.words.get_mut(index) {
                // Branch-free sticky saturation: add 1 unless the counter is at its maximum.
                *word += u64::from(*word >> shift & max != max) << shift;
            }
        }
    }

    /// Removes one occurrence of an item: subtracts one from each of its `k` counters,
    /// except saturated ones, which stay saturated.
    ///
    /// If the item is certainly not in the filter (one of its counters is zero) this returns
    /// [`RemoveError`] and changes nothing.
    ///
    /// Remove only items that are in the filter. An item that was never inserted but is a
    /// false positive (all its counters are non-zero) cannot be told apart from a member: it
    /// is removed, and its decrements can turn members that share its counters into false
    /// negatives. The [family docs](super#removing-what-was-never-inserted) measure this.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe("cat");
    /// f.remove("cat")?;
    /// assert!(!f.contains("cat"));
    /// assert!(f.remove("cat").is_err()); // gone: nothing changes
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn remove<T: Hashable>(&mut self, item: T) -> Result<(), RemoveError> {
        self.remove_hash(item.hash64(self.seed))
    }

    /// Removes one occurrence of an item given by its 64-bit hash; see
    /// [`remove`](Self::remove).
    ///
    /// ```
    /// use synopses::hash::Hashable;
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe("cat");
    /// f.remove_hash("cat".hash64(f.seed()))?;
    /// assert!(!f.contains("cat"));
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn remove_hash(&mut self, hash: u64) -> Result<(), RemoveError> {
        let log2 = self.width.log2();
        let max = self.width.max();
        // Decrement as we go, and undo on a zero counter. An item's k positions may repeat
        // (two hashes landing on one counter); its insertion then added 2 there, and going
        // through them in order subtracts 2, failing only if fewer than 2 are left.
        for (done, position) in Positions::new(hash, self.counters, self.hashes).enumerate() {
            let (index, shift) = locate(position, log2);
            let Some(word) = self.words.get_mut(index) else { continue };
            match *word >> shift & max {
                0 => {
                    self.undo_removal(hash, done);
                    return Err(RemoveError::new());
                }
                c if c == max => {}
                _ => *word -= 1 << shift,
            }
        }
        self.total = self.total.saturating_sub(1);
        Ok(())
    }

    /// Adds back the decrements of the first `done` positions of a failed removal. A counter
    /// that was decremented is below the maximum; one that was saturated was left alone.
    #[cold]
    fn undo_removal(&mut self, hash: u64, done: usize) {
        let log2 = self.width.log2();
        let max = self.width.max();
        for position in Positions::new(hash, self.counters, self.hashes).take(done) {
            let (index, shift) = locate(position, log2);
            if let Some(word) = self.words.get_mut(index) {
                *word += u64::from(*word >> shift & max != max) << shift;
            }
        }
    }

    /// Whether the item may be in the filter: `false` is certain (given that only members
    /// were removed), `true` is wrong with the false-positive probability.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe(1_u64);
    /// assert!(f.contains(1_u64));
    /// assert!(!f.contains(2_u64));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn contains<T: Hashable>(&self, item: T) -> bool {
        self.contains_hash(item.hash64(self.seed))
    }

    /// Whether an item given by its 64-bit hash may be in the filter.
    ///
    /// ```
    /// use synopses::hash::Hashable;
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe("cat");
    /// assert!(f.contains_hash("cat".hash64(f.seed())));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    #[must_use]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let log2 = self.width.log2();
        let max = self.width.max();
        // No early exit, as in `Bloom::contains_hash`: the k loads go out together.
        Positions::new(hash, self.counters, self.hashes).fold(true, |all, position| {
            let (index, shift) = locate(position, log2);
            all & self.words.get(index).is_some_and(|word| word >> shift & max != 0)
        })
    }

    /// How many times the item may be in the filter, as
    /// [`CountMin::estimate`](crate::frequency::CountMin::estimate) answers for counts: the
    /// smallest of its counters. Above the true multiplicity when other items share all its
    /// counters; never below it, as long as only members were removed, for every result below
    /// [`CounterWidth::max`]. A result equal to the maximum means that all the item's counters
    /// saturated, and says nothing more.
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe_all(["a", "a", "b"]);
    /// assert_eq!(f.estimate("a"), 2);
    /// assert_eq!(f.estimate("z"), 0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn estimate<T: Hashable>(&self, item: T) -> u64 {
        self.estimate_hash(item.hash64(self.seed))
    }

    /// [`estimate`](Self::estimate) of an item given by its 64-bit hash.
    ///
    /// ```
    /// use synopses::hash::Hashable;
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe_all(["cat", "cat"]);
    /// assert_eq!(f.estimate_hash("cat".hash64(f.seed())), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn estimate_hash(&self, hash: u64) -> u64 {
        Positions::new(hash, self.counters, self.hashes).map(|position| self.counter(position)).min().unwrap_or(0)
    }

    /// The number of saturated counters: counters that reached [`CounterWidth::max`] and can
    /// no longer count down. Each one is a permanent false-positive risk (never a false
    /// negative); if they become common, use wider counters. O(m).
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// assert_eq!(f.saturated_counters(), 0);
    /// for _ in 0..20 {
    ///     f.observe("hot"); // 20 > 15: its counters saturate
    /// }
    /// assert!((1..=3).contains(&f.saturated_counters()));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn saturated_counters(&self) -> usize {
        let w = self.width.bits();
        let lanes = lane_bases(w);
        // A lane is saturated when all its w bits are set: AND the word with itself shifted by
        // 1..w, so a lane's lowest bit survives only if every bit of the lane is 1.
        self.words.iter().map(|&word| ((1..w).fold(word, |all, s| all & word >> s) & lanes).count_ones() as usize).sum()
    }

    /// The number of counters above zero: the bits a [`Bloom`] filter of the same items would
    /// have set. O(m).
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::new(1000, 3)?;
    /// f.observe("x");
    /// assert!((1..=3).contains(&f.nonzero_counters()));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn nonzero_counters(&self) -> usize {
        let w = self.width.bits();
        let lanes = lane_bases(w);
        self.words.iter().map(|&word| ((1..w).fold(word, |any, s| any | word >> s) & lanes).count_ones() as usize).sum()
    }

    /// The sum of the counters, a word at a time: bit `b` of every lane counted at once,
    /// weighted `2^b` (the spare bits past the last counter are zero).
    fn counter_sum(&self) -> u128 {
        let w = self.width.bits();
        let lanes = lane_bases(w);
        self.words
            .iter()
            .map(|&word| (0..w).map(|b| u128::from((word & lanes << b).count_ones()) << b).sum::<u128>())
            .sum()
    }

    /// The false-positive rate of this filter as it stands: `(nonzero counters / m)^k`. O(m).
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let mut f = CountingBloom::with_false_positive_rate(1000, 0.01)?;
    /// f.observe_all(0..1000_u64);
    /// assert!((f.false_positive_rate() - 0.01).abs() < 0.005);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn false_positive_rate(&self) -> f64 {
        (self.nonzero_counters() as f64 / self.counters as f64).powi(self.hashes as i32)
    }

    /// The false-positive rate expected with `items` distinct items in the filter:
    /// `(1 − e^(−k·n/m))^k`, as for [`Bloom::expected_false_positive_rate`].
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let f = CountingBloom::with_false_positive_rate(1_000_000, 0.01)?;
    /// assert!((f.expected_false_positive_rate(1_000_000) - 0.01).abs() < 1e-4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn expected_false_positive_rate(&self, items: u64) -> f64 {
        let k = f64::from(self.hashes);
        (1.0 - (-k * items as f64 / self.counters as f64).exp()).powf(k)
    }

    /// The Bloom filter of the same items: a bit set wherever a counter is above zero, with
    /// the same size, hashes and seed, so it answers `contains` exactly as this filter does
    /// in a quarter of the memory of 4-bit counters (an eighth of 8-bit, a sixteenth of
    /// 16-bit). Use it to ship a read-only copy.
    ///
    /// ```
    /// use synopses::membership::{Bloom, CountingBloom};
    ///
    /// let mut counting = CountingBloom::new(1000, 3)?;
    /// let mut plain = Bloom::new(1000, 3)?;
    /// counting.observe_all(["a", "b"]);
    /// plain.observe_all(["a", "b"]);
    /// assert_eq!(counting.to_bloom(), plain);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn to_bloom(&self) -> Bloom {
        let mut bits: BitVec<u64, Lsb0> = BitVec::repeat(false, self.counters);
        for i in 0..self.counters {
            if self.counter(i) != 0 {
                bits.set(i, true);
            }
        }
        Bloom::from_parts(bits, self.hashes, self.seed)
    }

    /// Bytes of memory the filter holds (the struct and its counter words).
    ///
    /// ```
    /// # use synopses::membership::CountingBloom;
    /// let f = CountingBloom::new(1 << 20, 7)?;
    /// assert_eq!(f.size_in_bytes(), std::mem::size_of::<CountingBloom>() + (1 << 20) / 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + 8 * self.words.len()
    }

    /// Merges `other` into `self` by adding counters, saturating at the maximum: the filter
    /// of both multisets. Counters, hashes, width and seed must match; otherwise `self` is
    /// unchanged and a [`MergeError`] is returned.
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut a = CountingBloom::new(1000, 3)?;
    /// let mut b = CountingBloom::new(1000, 3)?;
    /// a.observe("x");
    /// b.observe("x");
    /// a.merge(&b)?;
    /// assert_eq!(a.estimate("x"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("counters", self.counters, other.counters)?;
        MergeError::check("hashes", self.hashes, other.hashes)?;
        MergeError::check("counter width", self.width.bits(), other.width.bits())?;
        MergeError::check("seed", self.seed, other.seed)?;
        let w = self.width.bits();
        for (a, &b) in self.words.iter_mut().zip(&other.words) {
            *a = saturating_add_lanes(*a, b, w);
        }
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }

    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut x = CountingBloom::new(1000, 3)?;
    /// x.observe("a");
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 26 + 8 * self.words.len()
    }

    /// Encodes the filter in the crate's [binary format](crate::codec), family code 6.
    ///
    /// Body: counters (u64), counter width in bits (u8: 4, 8 or 16), hashes (u8), seed (u64),
    /// total (u64), then the counters packed as in memory, in `⌈m·w/64⌉` little-endian u64
    /// words; the bits past the last counter are zero.
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// let f = CountingBloom::new(100, 3)?; // 400 bits of counters: 7 words
    /// assert_eq!(f.to_bytes().len(), 4 + 26 + 8 * 7 + 8);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_u64(self.counters as u64);
        w.put_u8(self.width.bits() as u8);
        w.put_u8(self.hashes as u8);
        w.put_u64(self.seed);
        w.put_u64(self.total);
        let out = w.put_zeroed(8 * self.words.len());
        for (bytes, word) in out.chunks_exact_mut(8).zip(&self.words) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        w.finish()
    }

    /// Decodes a filter written by [`to_bytes`](Self::to_bytes), validating every field.
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    ///
    /// let mut f = CountingBloom::new(100, 3)?;
    /// f.observe("x");
    /// assert_eq!(CountingBloom::from_bytes(&f.to_bytes())?, f);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let counters = r.u64()?;
        let width = packed_width(u32::from(r.u8()?))
            .ok_or(DecodeError::InvalidField { field: "counter width", reason: "not 4, 8 or 16 bits" })?;
        let hashes = u32::from(r.u8()?);
        let seed = r.u64()?;
        let total = r.u64()?;
        if !(1..=MAX_COUNTER_BITS >> width.log2()).contains(&counters) || !(1..=MAX_HASHES).contains(&hashes) {
            return Err(DecodeError::InvalidField {
                field: "counters and hashes",
                reason: "outside the supported sizes",
            });
        }
        let used_bits = counters << width.log2();
        let (Ok(counters), Ok(words)) = (usize::try_from(counters), usize::try_from(used_bits.div_ceil(64))) else {
            return Err(DecodeError::InvalidField { field: "counters", reason: "more than this platform can address" });
        };
        r.expect_items(words, 8)?;
        let mut raw = Vec::with_capacity(words);
        for _ in 0..words {
            raw.push(r.u64()?);
        }
        r.finish()?;
        let spare = (words as u64 * 64 - used_bits) as u32;
        if spare > 0 && raw.last().is_some_and(|&w| w >> (64 - spare) != 0) {
            return Err(DecodeError::InvalidField { field: "counters", reason: "bits set past the last counter" });
        }
        let filter = Self { words: raw, counters, hashes, width, seed, total };
        // Without a saturated counter (saturation is sticky, so none ever was), every
        // insertion added exactly `k` to the counters and every removal took `k` away, and a
        // merge added both filters' counts: the counters sum to `k` times the total. (The
        // total saturates only once some counter has.)
        if filter.saturated_counters() == 0 && filter.counter_sum() != u128::from(hashes) * u128::from(total) {
            return Err(DecodeError::InvalidField {
                field: "total",
                reason: "not the counters' sum over the hashes per item",
            });
        }
        Ok(filter)
    }

    /// Counter `i`.
    fn counter(&self, i: usize) -> u64 {
        let (index, shift) = locate(i, self.width.log2());
        self.words.get(index).map_or(0, |word| word >> shift & self.width.max())
    }

    /// Sets counter `i` to `value`, which must fit in the width.
    fn set_counter(&mut self, i: usize, value: u64) {
        let (index, shift) = locate(i, self.width.log2());
        let max = self.width.max();
        if let Some(word) = self.words.get_mut(index) {
            *word = *word & !(max << shift) | value << shift;
        }
    }
}

/// The counter width of `bits` bits, for the widths that a filter packs into its words: 4, 8
/// or 16 bits (wider counters would only waste memory on sets).
fn packed_width(bits: u32) -> Option<CounterWidth> {
    match bits {
        4 => Some(CounterWidth::Four),
        8 => Some(CounterWidth::Eight),
        16 => Some(CounterWidth::Sixteen),
        _ => None,
    }
}

/// The word and the bit offset of counter `position`, for counters of `2^log2` bits.
#[inline]
fn locate(position: usize, log2: u32) -> (usize, u32) {
    let per_word_log2 = 6 - log2;
    (position >> per_word_log2, ((position & ((1 << per_word_log2) - 1)) << log2) as u32)
}

/// A word with the lowest bit of every `w`-bit lane set: `0x1111…` for `w = 4`.
fn lane_bases(w: u32) -> u64 {
    u64::MAX / ((1 << w) - 1)
}

/// Adds two words of packed `w`-bit counters lane by lane, each sum saturating at `2^w − 1`.
///
/// The even lanes and the odd lanes are added separately, each lane then having `w` free bits
/// above it, so a sum (at most `2^(w+1) − 2`) cannot carry into its neighbour; bit `w` of a
/// sum says it overflowed, and multiplying that bit by the lane maximum saturates the lane:
///
/// ```text
///   w = 4:   a = …[ 9][ 3]   b = …[ 8][15]     even lanes of a + b in 8-bit lanes:
///            0x…0903 & 0x00FF… → 9+8 = 0x11 (bit 4 set: saturate → 0xF), 3+15 = 0x12 (→ 0xF)
/// ```
#[inline]
fn saturating_add_lanes(a: u64, b: u64, w: u32) -> u64 {
    let max = (1u64 << w) - 1;
    // w ones then w zeros, repeated: the even lanes.
    let even = u64::MAX / ((1u64 << w) + 1);
    let saturate = |sum: u64| (sum & even) | (((sum >> w) & lane_bases(2 * w)) * max);
    let low = saturate((a & even) + (b & even));
    let high = saturate((a >> w & even) + (b >> w & even));
    low | high << w
}

impl fmt::Debug for CountingBloom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingBloom")
            .field("counters", &self.counters)
            .field("hashes", &self.hashes)
            .field("counter_width", &self.width)
            .field("seed", &self.seed)
            .field("total", &self.total)
            .field("saturated_counters", &self.saturated_counters())
            .finish()
    }
}

hashed_operator!(CountingBloom);

impl Mergeable for CountingBloom {
    fn size_in_bytes(&self) -> usize {
        CountingBloom::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        CountingBloom::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { words: vec![0; self.words.len()], total: 0, ..*self }
    }
}

codec_impl!(CountingBloom, 6);

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference for `saturating_add_lanes`: lane by lane, the slow way.
    fn lanes_reference(a: u64, b: u64, w: u32) -> u64 {
        let max = (1u64 << w) - 1;
        (0..64 / w).fold(0, |out, lane| {
            let (x, y) = (a >> (lane * w) & max, b >> (lane * w) & max);
            out | (x + y).min(max) << (lane * w)
        })
    }

    #[test]
    fn counter_sum_matches_counter_by_counter() {
        for width in [CounterWidth::Four, CounterWidth::Eight, CounterWidth::Sixteen] {
            let mut f = CountingBloom::builder(100, 3).counter_width(width).seed(1).build().unwrap();
            (0..300_u64).for_each(|i| f.observe(i % 37));
            let direct: u128 = (0..100).map(|i| u128::from(f.counter(i))).sum();
            assert_eq!(f.counter_sum(), direct, "{width:?}");
            assert!(direct > 0);
        }
    }

    #[test]
    fn saturating_add_matches_lane_by_lane() {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state ^ state >> 29
        };
        for w in [4, 8, 16] {
            for (a, b) in [(0, 0), (u64::MAX, 1), (u64::MAX, u64::MAX), (0x8888_8888_8888_8888, 0x8888_8888_8888_8888)]
            {
                assert_eq!(saturating_add_lanes(a, b, w), lanes_reference(a, b, w), "w = {w}");
            }
            for _ in 0..10_000 {
                let (a, b) = (next(), next());
                assert_eq!(saturating_add_lanes(a, b, w), lanes_reference(a, b, w), "w = {w}, {a:#x} + {b:#x}");
            }
        }
    }

    #[test]
    fn lane_counts_match_counter_by_counter() {
        for width in [CounterWidth::Four, CounterWidth::Eight, CounterWidth::Sixteen] {
            let mut f = CountingBloom::builder(100, 3).counter_width(width).seed(7).build().expect("valid");
            for (i, value) in
                [0, 1, width.max(), 2, width.max(), 0, width.max() - 1].into_iter().cycle().take(100).enumerate()
            {
                f.set_counter(i, value);
            }
            let saturated = (0..100).filter(|&i| f.counter(i) == width.max()).count();
            let nonzero = (0..100).filter(|&i| f.counter(i) != 0).count();
            assert_eq!((f.saturated_counters(), f.nonzero_counters()), (saturated, nonzero), "{width:?}");
        }
    }

    #[test]
    fn a_failed_removal_changes_nothing_even_with_repeated_positions() {
        // With 2 counters and 8 hashes every item repeats positions.
        let mut f = CountingBloom::with_seed(2, 8, 1).expect("valid");
        f.observe(1_u64);
        let before = f.clone();
        for item in 2..200_u64 {
            if f.remove(item).is_err() {
                assert_eq!(f, before, "item {item}");
            } else {
                f = before.clone();
            }
        }
        f.remove(1_u64).expect("inserted");
        assert_eq!(f.words, vec![0]);
    }
}
