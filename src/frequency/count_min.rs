//! The Count-Min sketch, with standard and conservative update and counters of 8 to 64 bits.
//! The teaching text is in the [family docs](super).

use std::fmt;

use super::counters::{Cell, Counters, with_counters};
use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::CounterWidth;
use crate::core::{Bounds, ConfigError, DecodeError, MergeError, Mergeable, hashed_operator};
use crate::hash::{DEFAULT_SEED, Hashable, derived_index};

/// The most rows a sketch may have (δ = e^-32 ≈ 1.3e-14).
const MAX_DEPTH: u32 = 32;
/// The most memory the counters may take: 2^30 bytes, one GiB (2^27 counters of 64 bits,
/// 2^30 of 8).
const MAX_COUNTER_BYTES: u64 = 1 << 30;

/// How a Count-Min sketch adds an item's count to its counters.
///
/// ```
/// use synopses::frequency::{CountMin, Update};
///
/// let cu = CountMin::builder(1024, 4).update_rule(Update::Conservative).build()?;
/// assert_eq!(cu.update_rule(), Update::Conservative);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Update {
    /// Add the count to the item's counter in every row (Cormode and Muthukrishnan). The
    /// sketch is linear: merging by counter sums is exact.
    Standard,
    /// Raise each of the item's counters only as far as the new estimate requires (Estan and
    /// Varghese): never a larger error than [`Standard`](Update::Standard), often much less on
    /// skewed streams. Counts must only grow (no deletions), and a merge by counter sums is a
    /// valid over-estimate but no longer the sketch of the whole stream.
    Conservative,
}

/// The configuration of a [`CountMin`] sketch: its size, from
/// [`CountMin::builder`] (width and depth) or [`CountMin::builder_for_error`] (ε and δ), then
/// optionally the seed, the update rule and the counter width; [`build`](Self::build)
/// validates it all and allocates the counters.
///
/// | setting | default |
/// |---|---|
/// | [`seed`](Self::seed) | [`DEFAULT_SEED`] |
/// | [`update_rule`](Self::update_rule) | [`Update::Standard`] |
/// | [`counter_width`](Self::counter_width) | [`CounterWidth::SixtyFour`] |
///
/// ```
/// use synopses::frequency::{CountMin, CounterWidth, Update};
///
/// let cm = CountMin::builder(4096, 5)
///     .seed(0x5EC2E7)
///     .update_rule(Update::Conservative)
///     .counter_width(CounterWidth::ThirtyTwo)
///     .build()?;
/// assert_eq!(cm.size_in_bytes() / 1024, 80); // half the 64-bit counters' 160 KiB
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct CountMinBuilder {
    size: Size,
    seed: u64,
    update: Update,
    counter_width: CounterWidth,
}

/// How a builder's sketch is sized: a shape, or a target turned into one at `build`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Size {
    Shape { width: usize, depth: u32 },
    Error { epsilon: f64, delta: f64 },
}

impl CountMinBuilder {
    /// The defaults, at the given size.
    fn sized(size: Size) -> Self {
        Self { size, seed: DEFAULT_SEED, update: Update::Standard, counter_width: CounterWidth::SixtyFour }
    }

    /// Hashes items with `seed`: on untrusted items, a secret seed keeps an adversary from
    /// choosing items that share an item's counters in every row (which would inflate its
    /// estimate at will). Sketches merge only with sketches of the same seed.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert_eq!(CountMin::builder(100, 3).seed(99).build()?.seed(), 99);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn seed(self, seed: u64) -> Self {
        Self { seed, ..self }
    }

    /// Adds counts by `update`.
    ///
    /// ```
    /// # use synopses::frequency::{CountMin, Update};
    /// let cu = CountMin::builder(100, 3).update_rule(Update::Conservative).build()?;
    /// assert_eq!(cu.update_rule(), Update::Conservative);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn update_rule(self, update: Update) -> Self {
        Self { update, ..self }
    }

    /// Counters of `width`: 8, 16, 32 or 64 bits (4 is a [`ConfigError`] at `build`). A
    /// counter is at most the total count `N`, so counters whose
    /// [maximum](CounterWidth::max) is at least the largest `N` you will observe never
    /// saturate, and the sketch answers exactly as one of 64-bit counters would, in 1/8 to
    /// 1/2 of the memory. Past that, see [`CountMin::estimate`] for what a saturated counter
    /// means.
    ///
    /// ```
    /// use synopses::frequency::{CountMin, CounterWidth};
    ///
    /// let cm = CountMin::builder(4096, 5).counter_width(CounterWidth::Sixteen).build()?;
    /// assert_eq!(cm.counter_width(), CounterWidth::Sixteen);
    /// assert!(CountMin::builder(4096, 5).counter_width(CounterWidth::Four).build().is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn counter_width(self, counter_width: CounterWidth) -> Self {
        Self { counter_width, ..self }
    }

    /// The sketch, once every setting is checked: `width` at least 1, `depth` in `1..=32`,
    /// `epsilon` in `(0, 1]` and `delta` in `(0, 1)`, counters of 8 to 64 bits, and at most
    /// 1 GiB of counters in all.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert!(CountMin::builder(512, 4).build().is_ok());
    /// assert_eq!(CountMin::builder(512, 33).build().map_err(|e| e.parameter()).err(), Some("depth"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<CountMin, ConfigError> {
        let Self { size, seed, update, counter_width } = self;
        if counter_width == CounterWidth::Four {
            return Err(ConfigError::new("counter_width", counter_width.bits(), "8, 16, 32 or 64 bits"));
        }
        let bytes = u64::from(counter_width.bits() / 8);
        let (width, depth) = match size {
            Size::Shape { width, depth } => {
                if width == 0 {
                    return Err(ConfigError::new("width", width, "at least 1"));
                }
                if !(1..=MAX_DEPTH).contains(&depth) {
                    return Err(ConfigError::new("depth", depth, "an integer in 1..=32"));
                }
                if (width as u64).saturating_mul(u64::from(depth) * bytes) > MAX_COUNTER_BYTES {
                    return Err(ConfigError::new("width", width, "at most 1 GiB of counters (width × depth × bytes)"));
                }
                (width, depth)
            }
            Size::Error { epsilon, delta } => {
                if !(epsilon > 0.0 && epsilon <= 1.0) {
                    return Err(ConfigError::new("epsilon", epsilon, "a number in (0, 1]"));
                }
                if !(delta > 0.0 && delta < 1.0) {
                    return Err(ConfigError::new("delta", delta, "a number in (0, 1)"));
                }
                let width = (std::f64::consts::E / epsilon).ceil();
                let depth = (1.0 / delta).ln().ceil().max(1.0);
                if depth > f64::from(MAX_DEPTH) {
                    return Err(ConfigError::new("delta", delta, "at least e^-32 (at most 32 rows)"));
                }
                if width * depth * bytes as f64 > MAX_COUNTER_BYTES as f64 {
                    return Err(ConfigError::new("epsilon", epsilon, "a target of at most 1 GiB of counters"));
                }
                (width as usize, depth as u32)
            }
        };
        let counters = Counters::zeroed(counter_width, width * depth as usize, width)?;
        Ok(CountMin { width, depth, seed, update, total: 0, counters })
    }
}

/// A Count-Min sketch: `depth` rows of `width` counters. See the [family docs](super).
///
/// For a stream of non-negative counts of total `N`, the estimate of an item's count `f` is
/// never below `f`, and exceeds it by more than `ε·N` with probability at most `δ`, where
/// `ε = e / width` and `δ = e^-depth`. With counters narrower than 64 bits, "never below"
/// holds for every answer below the counters' maximum (see [`estimate`](Self::estimate)).
///
/// ```
/// use synopses::frequency::CountMin;
///
/// let mut cm = CountMin::with_error(0.001, 0.01)?; // 2719 × 5 counters, 106 KiB
/// for i in 0..100_000_u64 {
///     cm.observe(i % 1000); // every key 100 times
/// }
/// let est = cm.estimate(7_u64);
/// assert!(est >= 100 && est <= 100 + (0.001 * 100_000.0) as u64);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CountMin {
    width: usize,
    depth: u32,
    seed: u64,
    update: Update,
    total: u64,
    counters: Counters,
}

impl CountMin {
    /// A sketch of `depth` rows of `width` counters, standard update, 64-bit counters, default
    /// seed.
    ///
    /// `width` must be at least 1 and `depth` in `1..=32`, with at most 1 GiB of counters
    /// in all. The error is `ε = e/width` of the total count, with probability
    /// `1 − δ = 1 − e^-depth`; memory is `width × depth` counters of 8 bytes (1 to 4 with a
    /// narrower [counter width](CountMinBuilder::counter_width)):
    ///
    /// | width × depth | ε (of N) | δ | 64-bit | 32-bit | 16-bit | 8-bit |
    /// |---|---|---|---|---|---|---|
    /// | 272 × 3 | 1 % | 5 % | 6.4 KiB | 3.2 KiB | 1.6 KiB | 0.8 KiB |
    /// | 2 719 × 5 | 0.1 % | 0.7 % | 106 KiB | 53 KiB | 27 KiB | 13 KiB |
    /// | 4 096 × 5 | 0.066 % | 0.7 % | 160 KiB | 80 KiB | 40 KiB | 20 KiB |
    /// | 27 183 × 7 | 0.01 % | 0.09 % | 1.45 MiB | 743 KiB | 372 KiB | 186 KiB |
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let cm = CountMin::new(4096, 5)?;
    /// assert_eq!((cm.width(), cm.depth()), (4096, 5));
    /// assert!(CountMin::new(0, 5).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(width: usize, depth: u32) -> Result<Self, ConfigError> {
        Self::builder(width, depth).build()
    }

    /// [`new`](Self::new), hashing with `seed` (see [`CountMinBuilder::seed`]).
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let cm = CountMin::with_seed(4096, 5, 0x5EC2E7)?;
    /// assert_eq!(cm.seed(), 0x5EC2E7);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(width: usize, depth: u32, seed: u64) -> Result<Self, ConfigError> {
        Self::builder(width, depth).seed(seed).build()
    }

    /// The smallest sketch with error at most `epsilon · N` with probability at least
    /// `1 − delta`: width `⌈e/ε⌉`, depth `⌈ln(1/δ)⌉`. Standard update, 64-bit counters,
    /// default seed.
    ///
    /// `epsilon` must be in `(0, 1]` and `delta` in `(0, 1)`, and the sketch at most 1 GiB.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let cm = CountMin::with_error(0.01, 0.05)?;
    /// assert_eq!((cm.width(), cm.depth()), (272, 3));
    /// assert!(CountMin::with_error(0.0, 0.05).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_error(epsilon: f64, delta: f64) -> Result<Self, ConfigError> {
        Self::builder_for_error(epsilon, delta).build()
    }

    /// [`with_error`](Self::with_error), hashing with `seed` (see
    /// [`CountMinBuilder::seed`]).
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let cm = CountMin::with_error_and_seed(0.01, 0.05, 0x5EC2E7)?;
    /// assert_eq!((cm.width(), cm.depth(), cm.seed()), (272, 3, 0x5EC2E7));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_error_and_seed(epsilon: f64, delta: f64, seed: u64) -> Result<Self, ConfigError> {
        Self::builder_for_error(epsilon, delta).seed(seed).build()
    }

    /// A [builder](CountMinBuilder) of a sketch of `depth` rows of `width` counters, for the
    /// settings [`new`](Self::new) leaves at their defaults: seed, update rule, counter width.
    /// Sketches merge only with sketches of the same settings.
    ///
    /// ```
    /// use synopses::frequency::{CountMin, Update};
    ///
    /// let cu = CountMin::builder(512, 4).seed(99).update_rule(Update::Conservative).build()?;
    /// assert_eq!((cu.width(), cu.seed()), (512, 99));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn builder(width: usize, depth: u32) -> CountMinBuilder {
        CountMinBuilder::sized(Size::Shape { width, depth })
    }

    /// A [builder](CountMinBuilder) of the smallest sketch with error at most `epsilon · N`
    /// with probability at least `1 − delta`, as [`with_error`](Self::with_error) sizes it.
    ///
    /// ```
    /// use synopses::frequency::{CountMin, Update};
    ///
    /// let cu = CountMin::builder_for_error(0.01, 0.05).update_rule(Update::Conservative).build()?;
    /// assert_eq!((cu.width(), cu.depth()), (272, 3));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn builder_for_error(epsilon: f64, delta: f64) -> CountMinBuilder {
        CountMinBuilder::sized(Size::Error { epsilon, delta })
    }

    /// Counters per row.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert_eq!(CountMin::new(100, 3)?.width(), 100);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert_eq!(CountMin::new(100, 3)?.depth(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The hash seed.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert_eq!(CountMin::new(100, 3)?.seed(), synopses::hash::DEFAULT_SEED);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The update rule.
    ///
    /// ```
    /// # use synopses::frequency::{CountMin, Update};
    /// assert_eq!(CountMin::new(100, 3)?.update_rule(), Update::Standard);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn update_rule(&self) -> Update {
        self.update
    }

    /// The width of the counters.
    ///
    /// ```
    /// use synopses::frequency::{CountMin, CounterWidth};
    ///
    /// assert_eq!(CountMin::new(100, 3)?.counter_width(), CounterWidth::SixtyFour);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn counter_width(&self) -> CounterWidth {
        self.counters.width()
    }

    /// `ε = e / width`: the error bound as a fraction of the total count.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert!((CountMin::new(2719, 5)?.epsilon() - 0.001).abs() < 1e-6);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn epsilon(&self) -> f64 {
        std::f64::consts::E / self.width as f64
    }

    /// `δ = e^-depth`: the probability that an estimate errs by more than `ε·N`.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// assert!((CountMin::new(2719, 5)?.delta() - 0.0067).abs() < 1e-4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn delta(&self) -> f64 {
        (-f64::from(self.depth)).exp()
    }

    /// The total count observed, `N` (saturating at `u64::MAX`, whatever the counter width).
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe("a");
    /// cm.observe_weighted("b", 5);
    /// assert_eq!(cm.total(), 6);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Observes one occurrence of an item.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe("a");
    /// cm.observe("a");
    /// assert_eq!(cm.estimate("a"), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe<T: Hashable>(&mut self, item: T) {
        self.observe_hash_weighted(item.hash64(self.seed), 1);
    }

    /// Observes `count` occurrences of an item at once.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe_weighted(42_u64, 1_000);
    /// assert_eq!(cm.estimate(42_u64), 1_000);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe_weighted<T: Hashable>(&mut self, item: T, count: u64) {
        self.observe_hash_weighted(item.hash64(self.seed), count);
    }

    /// Observes one occurrence of every item of an iterator.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe_all(["a", "b", "a"]);
    /// assert_eq!((cm.estimate("a"), cm.total()), (2, 3));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<T: Hashable, I: IntoIterator<Item = T>>(&mut self, items: I) {
        let mut items = items.into_iter();
        if self.update == Update::Standard {
            // The standard update with the sketch's fields in locals: through `&mut self`
            // every counter store could alias them, and they would be reloaded per item.
            let (seed, width, depth) = (self.seed, self.width, self.depth);
            let mut total = self.total;
            with_counters!(&mut self.counters, c => with_const_depth!(depth, D => {
                add_all::<{ D }, _, _>(c, &mut items, seed, width, depth, &mut total)
            }));
            self.total = total;
        }
        // The conservative rule, or what is left once the total saturated: item by item.
        items.for_each(|item| self.observe(item));
    }

    /// Observes one occurrence of an item by its 64-bit hash (see
    /// [`HyperLogLog::observe_hash`](crate::cardinality::HyperLogLog::observe_hash)).
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::hash::Hashable;
    ///
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe_hash("a".hash64(cm.seed()));
    /// assert_eq!(cm.estimate("a"), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe_hash(&mut self, hash: u64) {
        self.observe_hash_weighted(hash, 1);
    }

    /// Observes `count` occurrences of an item by its 64-bit hash.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::hash::Hashable;
    ///
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe_hash_weighted(7_u64.hash64(cm.seed()), 9);
    /// assert_eq!(cm.estimate(7_u64), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe_hash_weighted(&mut self, hash: u64, count: u64) {
        let total = self.total.checked_add(count);
        self.total = total.unwrap_or(u64::MAX);
        let (width, depth, update) = (self.width, self.depth, self.update);
        match (&mut self.counters, total) {
            // 64-bit counters, the default, inline; the other widths and an overflowing total
            // behind one call, so that what is inlined at every call site is the code of one
            // width, not of four.
            (Counters::U64(c), Some(_)) => observe_cells::<u64, false>(c, update, hash, width, depth, count),
            (Counters::U64(c), None) => observe_out_of_line(c, update, hash, width, depth, count, total),
            (Counters::U32(c), _) => observe_out_of_line(c, update, hash, width, depth, count, total),
            (Counters::U16(c), _) => observe_out_of_line(c, update, hash, width, depth, count, total),
            (Counters::U8(c), _) => observe_out_of_line(c, update, hash, width, depth, count, total),
        }
    }

    /// The estimated count of an item: the minimum of its counters. Never below the true
    /// count; above it by more than `ε·N` with probability at most `δ`.
    ///
    /// **Saturation.** A counter that reaches its width's [maximum](CounterWidth::max) stays
    /// there. Every answer below that maximum is still never below the true count (a
    /// saturated counter only raises the minimum, and if one of the item's counters is below
    /// the maximum, the minimum is one that counted exactly). An answer *equal* to the
    /// maximum means that every one of the item's counters saturated: the true count is
    /// then unknown, anywhere up to the [total](Self::total), which is what
    /// [`bounds`](Self::bounds) then answers. With 64-bit counters that takes a total of
    /// `u64::MAX`; with narrower ones, a total above the maximum
    /// ([`saturated_counters`](Self::saturated_counters) tells whether any saturated).
    ///
    /// ```
    /// use synopses::frequency::{CountMin, CounterWidth};
    ///
    /// let mut cm = CountMin::new(1000, 4)?;
    /// cm.observe_all((0..10_000_u64).map(|i| i % 100));
    /// assert!(cm.estimate(5_u64) >= 100);
    /// // An absent item: only collisions, within ε·N here.
    /// assert!(cm.estimate(12_345_u64) as f64 <= cm.epsilon() * 10_000.0);
    ///
    /// let mut small = CountMin::builder(1000, 4).counter_width(CounterWidth::Eight).build()?;
    /// small.observe_weighted("hot", 300);
    /// assert_eq!(small.estimate("hot"), 255); // saturated: "255 or more, up to the total"
    /// assert_eq!(small.bounds("hot").upper, 300.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn estimate<T: Hashable>(&self, item: T) -> u64 {
        self.estimate_hash(item.hash64(self.seed))
    }

    /// The estimated count of an item given by its 64-bit hash.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::hash::Hashable;
    ///
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe("a");
    /// assert_eq!(cm.estimate_hash("a".hash64(cm.seed())), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    #[must_use]
    pub fn estimate_hash(&self, hash: u64) -> u64 {
        let (width, depth) = (self.width, self.depth);
        // As in `observe_hash_weighted`: 64-bit counters inline, the others behind a call.
        match &self.counters {
            Counters::U64(c) => estimate_cells(c, hash, width, depth),
            Counters::U32(c) => estimate_out_of_line(c, hash, width, depth),
            Counters::U16(c) => estimate_out_of_line(c, hash, width, depth),
            Counters::U8(c) => estimate_out_of_line(c, hash, width, depth),
        }
    }

    /// An interval for an item's true count that holds with probability at least `1 − δ`:
    /// from `estimate − ε·N` (at least 0) to `estimate`. The upper end holds always; when the
    /// item's counters all saturated (see [`estimate`](Self::estimate)) it is the total `N`.
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// let mut cm = CountMin::new(272, 3)?;
    /// cm.observe_all((0..10_000_u64).map(|i| i % 50));
    /// let b = cm.bounds(7_u64);
    /// assert!(b.contains(200.0));
    /// assert!(b.upper - b.lower <= cm.epsilon() * 10_000.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn bounds<T: Hashable>(&self, item: T) -> Bounds {
        let estimate = self.estimate(item);
        let slack = self.epsilon() * self.total as f64;
        // A saturated estimate is no upper bound; the total always is.
        let upper = if estimate == self.counter_width().max() { self.total } else { estimate };
        Bounds { lower: (estimate as f64 - slack).max(0.0), upper: upper as f64 }
    }

    /// The number of saturated counters: counters at their width's
    /// [maximum](CounterWidth::max), which no longer count (see
    /// [`estimate`](Self::estimate)). Zero means every answer is an upper bound. O(width ×
    /// depth).
    ///
    /// ```
    /// use synopses::frequency::{CountMin, CounterWidth};
    ///
    /// let mut cm = CountMin::builder(1000, 4).counter_width(CounterWidth::Eight).build()?;
    /// cm.observe_weighted("a", 255);
    /// assert_eq!(cm.saturated_counters(), 4); // one per row
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn saturated_counters(&self) -> usize {
        self.counters.saturated()
    }

    /// Estimates the inner product `Σ_x f(x)·g(x)` of the two streams (for example the size
    /// of an equi-join): the minimum over rows of the rows' dot products. Never below the
    /// true value while no counter saturated; above it by more than `ε·N·M` with probability
    /// at most `δ`. Both sketches need the same width, depth and seed (their update rules and
    /// counter widths may differ). The dot products are summed in 128 bits, saturating, and
    /// the answer saturates at `u64::MAX`.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let mut orders = CountMin::new(1000, 5)?;
    /// let mut clicks = CountMin::new(1000, 5)?;
    /// orders.observe_weighted("alice", 3);
    /// clicks.observe_weighted("alice", 10);
    /// clicks.observe_weighted("bob", 7);
    /// assert!(orders.inner_product(&clicks)? >= 30);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn inner_product(&self, other: &Self) -> Result<u64, MergeError> {
        self.check_compatible(other, false)?;
        let width = self.width;
        let product = with_counters!(&self.counters, a => with_counters!(&other.counters, b => {
            min_row_product(a, b, width)
        }));
        Ok(u64::try_from(product).unwrap_or(u64::MAX))
    }

    /// Bytes of memory the sketch holds (the struct and its counters).
    ///
    /// ```
    /// use synopses::frequency::{CountMin, CounterWidth};
    ///
    /// let cm = CountMin::new(4096, 5)?;
    /// assert_eq!(cm.size_in_bytes(), std::mem::size_of::<CountMin>() + 8 * 4096 * 5);
    /// let narrow = CountMin::builder(4096, 5).counter_width(CounterWidth::Sixteen).build()?;
    /// assert_eq!(narrow.size_in_bytes(), std::mem::size_of::<CountMin>() + 2 * 4096 * 5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.counters.bytes()
    }

    fn check_compatible(&self, other: &Self, same_update: bool) -> Result<(), MergeError> {
        MergeError::check("width", self.width, other.width)?;
        MergeError::check("depth", self.depth, other.depth)?;
        MergeError::check("seed", self.seed, other.seed)?;
        if same_update {
            if self.update != other.update {
                return Err(MergeError::new("update", format!("{:?}", self.update), format!("{:?}", other.update)));
            }
            MergeError::check("counter width", self.counter_width().bits(), other.counter_width().bits())?;
        }
        Ok(())
    }

    /// Merges `other` into `self` by adding the counters, saturating at the counters'
    /// maximum.
    ///
    /// With the standard update this is exactly the sketch of both streams (saturation
    /// included: `min(a + b, max)` is what one sketch of both streams holds). With the
    /// conservative update it is a valid over-estimate, at least the true count and at most
    /// what a standard sketch of both streams would answer, but not the conservative sketch of
    /// both streams (that rule is not linear). Width, depth, seed, update rule and counter
    /// width must match (as [`CountingBloom`](crate::membership::CountingBloom) requires);
    /// otherwise `self` is unchanged and a [`MergeError`] is returned.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let mut a = CountMin::new(100, 3)?;
    /// let mut b = CountMin::new(100, 3)?;
    /// a.observe_weighted("x", 2);
    /// b.observe_weighted("x", 3);
    /// a.merge(&b)?;
    /// assert_eq!((a.estimate("x"), a.total()), (5, 5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        self.check_compatible(other, true)?;
        // No counter exceeds its sketch's total (every update adds to the total at least what
        // it adds to any counter, and decoding checks it), so while the totals' sum fits in a
        // counter, so do the counters' sums, and they take the plain add, which vectorizes.
        let total = self.total.checked_add(other.total);
        self.counters.add(&other.counters, total.is_some_and(|t| t <= self.counters.width().max()));
        self.total = total.unwrap_or(u64::MAX);
        Ok(())
    }

    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let mut x = CountMin::new(100, 3)?;
    /// x.observe("a");
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 22 + self.counters.bytes()
    }

    /// Encodes the sketch in the crate's [binary format](crate::codec), family code 3.
    ///
    /// Body: width (u32), depth (u8), update byte (u8, below), seed (u64), total (u64), then
    /// the `width × depth` counters, row by row, little-endian, of the counter width (1, 2, 4
    /// or 8 bytes each).
    ///
    /// ```text
    ///   update byte:   bit 7   bits 6..4             bits 3..1   bit 0
    ///                  1       counter width code    0           rule: 0 standard, 1 conservative
    ///   width code:    0 = 64 bits, 1 = 32, 2 = 16, 3 = 8
    /// ```
    ///
    /// Bit 7 marks the rows' indexing: bytes without it (double-hashed rows, never published)
    /// are refused. Code 0 for 64 bits keeps every sketch written before widths were offered
    /// decoding as it was.
    ///
    /// ```
    /// use synopses::frequency::{CountMin, CounterWidth};
    ///
    /// let cm = CountMin::new(100, 3)?;
    /// assert_eq!(cm.to_bytes().len(), 4 + 22 + 8 * 300 + 8);
    /// let narrow = CountMin::builder(100, 3).counter_width(CounterWidth::Eight).build()?;
    /// assert_eq!(narrow.to_bytes().len(), 4 + 22 + 300 + 8);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        // (Lossless: the width is at most 2^30, since the counters take at most 1 GiB.)
        w.put_u32(self.width as u32);
        w.put_u8(self.depth as u8);
        let rule = match self.update {
            Update::Standard => 0,
            Update::Conservative => 1,
        };
        w.put_u8(INDEPENDENT_ROWS | width_code(self.counter_width()) << 4 | rule);
        w.put_u64(self.seed);
        w.put_u64(self.total);
        self.counters.encode(w.put_zeroed(self.counters.bytes()));
        w.finish()
    }

    /// Decodes a sketch written by [`to_bytes`](Self::to_bytes), validating every field: the
    /// parameters, and counters consistent with the total (no counter exceeds it; each row of
    /// a standard sketch sums to it, or, with saturated counters, to less by at least the
    /// counts they lost; a conservative row sums to at most it).
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    ///
    /// let mut cm = CountMin::new(100, 3)?;
    /// cm.observe("a");
    /// assert_eq!(CountMin::from_bytes(&cm.to_bytes())?, cm);
    /// assert!(CountMin::from_bytes(&[0; 40]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let invalid = |field, reason| DecodeError::InvalidField { field, reason };
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let width = r.u32()? as usize;
        let depth = u32::from(r.u8()?);
        let byte = r.u8()?;
        if byte & INDEPENDENT_ROWS == 0 {
            return Err(invalid("update", "rows of a layout never published"));
        }
        let update = match byte & 0x0F {
            0 => Update::Standard,
            1 => Update::Conservative,
            _ => return Err(invalid("update", "neither 0 nor 1")),
        };
        let counter_width = match byte >> 4 & 0x07 {
            0 => CounterWidth::SixtyFour,
            1 => CounterWidth::ThirtyTwo,
            2 => CounterWidth::Sixteen,
            3 => CounterWidth::Eight,
            _ => return Err(invalid("counter width", "not 8, 16, 32 or 64 bits")),
        };
        let seed = r.u64()?;
        let total = r.u64()?;
        let bytes_per_counter = counter_width.bits() as usize / 8;
        let fits = width >= 1
            && (1..=MAX_DEPTH).contains(&depth)
            && (width as u64) * u64::from(depth) * bytes_per_counter as u64 <= MAX_COUNTER_BYTES;
        if !fits {
            return Err(invalid("width and depth", "outside the supported sizes"));
        }
        let cells = width * depth as usize;
        let counters = Counters::decode(counter_width, r.take(cells * bytes_per_counter)?)
            .ok_or(invalid("counter width", "not 8, 16, 32 or 64 bits"))?;
        r.finish()?;
        if !with_counters!(&counters, c => rows_consistent(c, width, update, total)) {
            return Err(invalid("counters", "inconsistent with the total"));
        }
        Ok(Self { width, depth, seed, update, total, counters })
    }
}

/// The flag of the update byte that marks the rows' indexing by [`derived_index`]. It is
/// required: the bytes without it (rows indexed by double hashing) were never published.
const INDEPENDENT_ROWS: u8 = 0x80;

/// The update byte's code of a counter width (bits 6..4): 0 for 64 bits, the only width
/// before widths were offered.
fn width_code(width: CounterWidth) -> u8 {
    match width {
        CounterWidth::SixtyFour | CounterWidth::Four => 0,
        CounterWidth::ThirtyTwo => 1,
        CounterWidth::Sixteen => 2,
        CounterWidth::Eight => 3,
    }
}

/// Whether a decoded table can be the counters of a sketch of `total` under `update`.
///
/// Every count is added to one counter of every row (the conservative rule adds at most
/// that), and a saturated counter (at `C::MAX`) lost what went past the maximum. So in a
/// standard row whose `s` saturated counters leave the others summing to `u`: with `s = 0`,
/// `u` is the total; with `s > 0`, `u + s·MAX` is at most the total. A conservative row sums
/// to at most the total. No counter of either exceeds the total. A saturated total (at
/// `u64::MAX`, "at least that") bounds nothing from above.
fn rows_consistent<C: Cell>(counters: &[C], width: usize, update: Update, total: u64) -> bool {
    let total_saturated = total == u64::MAX;
    counters.chunks_exact(width).all(|row| {
        let (mut saturated, mut rest, mut largest) = (0u128, 0u128, 0u64);
        for &c in row {
            largest = largest.max(c.widened());
            if c == C::MAX {
                saturated += 1;
            } else {
                rest += u128::from(c.widened());
            }
        }
        let lost_at_least = saturated * u128::from(C::MAX.widened());
        let total = u128::from(total);
        u128::from(largest) <= total
            && match update {
                Update::Standard if total_saturated => saturated > 0 || rest >= total,
                Update::Standard if saturated == 0 => rest == total,
                Update::Standard => rest + lost_at_least <= total,
                Update::Conservative => total_saturated || rest + lost_at_least <= total,
            }
    })
}

/// The column of an item's hash in each row: [`derived_index`] `row` of the hash, onto
/// `0..width` (the rows' indexes are as good as independent; see there why not double
/// hashing).
struct Columns {
    hash: u64,
    row: usize,
    width: u64,
}

impl Columns {
    #[inline]
    fn new(hash: u64, width: usize) -> Self {
        Self { hash, row: 0, width: width as u64 }
    }
}

impl Iterator for Columns {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        let column = derived_index(self.hash, self.row, self.width);
        self.row += 1;
        Some(column)
    }
}

/// Evaluates `$body` with `$d` a constant equal to the sketch's depth when it is 1 to 8, so
/// that the loops over the rows unroll, and 0, meaning the run-time depth, otherwise.
macro_rules! with_const_depth {
    ($depth:expr, $d:ident => $body:expr) => {
        with_const_depth!(@arms $depth, $d, $body; 1 2 3 4 5 6 7 8)
    };
    (@arms $depth:expr, $d:ident, $body:expr; $($n:literal)*) => {
        match $depth {
            $($n => {
                const $d: u32 = $n;
                $body
            })*
            _ => {
                const $d: u32 = 0;
                $body
            }
        }
    };
}
use with_const_depth;

/// One observation of `count` into counters of type `C`, the total already updated. The
/// standard rule adds saturating if `SATURATING`, and plainly otherwise, for
/// callers that know the new total fits in a counter (no counter exceeds the total). The
/// depth is a constant for depths 1 to 8, so that the loops over the rows unroll.
#[inline(always)]
fn observe_cells<C: Cell, const SATURATING: bool>(
    counters: &mut [C],
    update: Update,
    hash: u64,
    width: usize,
    depth: u32,
    count: u64,
) {
    let count = C::clamped(count);
    match update {
        Update::Standard => {
            with_const_depth!(depth, D => add_to_cells::<{ D }, C, SATURATING>(counters, hash, width, depth, count))
        }
        Update::Conservative => {
            with_const_depth!(depth, D => raise_cells::<{ D }, C>(counters, hash, width, depth, count))
        }
    }
}

/// [`observe_cells`] behind a call, once per counter width: plain adds while the new total
/// fits in a counter (no counter exceeds the total), saturating ones past that.
#[inline(never)]
fn observe_out_of_line<C: Cell>(
    counters: &mut [C],
    update: Update,
    hash: u64,
    width: usize,
    depth: u32,
    count: u64,
    total: Option<u64>,
) {
    if total.is_some_and(|t| t <= C::MAX.widened()) {
        observe_cells::<C, false>(counters, update, hash, width, depth, count);
    } else {
        observe_cells::<C, true>(counters, update, hash, width, depth, count);
    }
}

/// The standard update of one count per item, for items until they run out or the total
/// saturates (the caller goes on item by item then): plain adds while the total fits in a
/// counter, saturating ones past that. `DEPTH` is the depth, or 0 to read `depth`.
#[inline(always)]
fn add_all<const DEPTH: u32, C: Cell, T: Hashable>(
    counters: &mut [C],
    items: &mut impl Iterator<Item = T>,
    seed: u64,
    width: usize,
    depth: u32,
    total: &mut u64,
) {
    let one = C::clamped(1);
    while *total < C::MAX.widened() {
        let Some(item) = items.next() else { return };
        *total += 1;
        add_to_cells::<DEPTH, C, false>(counters, item.hash64(seed), width, depth, one);
    }
    while *total < u64::MAX {
        let Some(item) = items.next() else { return };
        *total += 1;
        add_to_cells::<DEPTH, C, true>(counters, item.hash64(seed), width, depth, one);
    }
}

/// Adds `count` to an item's counters: saturating, or, if not `SATURATING`, a plain add that
/// the caller knows cannot pass the maximum. `DEPTH` is the depth, or 0 to read `depth`.
#[inline(always)]
fn add_to_cells<const DEPTH: u32, C: Cell, const SATURATING: bool>(
    counters: &mut [C],
    hash: u64,
    width: usize,
    depth: u32,
    count: C,
) {
    let depth = if DEPTH == 0 { depth } else { DEPTH };
    for cell in Cells::new(hash, width, depth) {
        if let Some(c) = counters.get_mut(cell) {
            *c = if SATURATING { c.saturating_plus(count) } else { c.plus(count) };
        }
    }
}

/// Conservative update: raises each of an item's counters to its estimate plus `count`,
/// saturating. `DEPTH` is the depth, or 0 to read `depth`.
#[inline(always)]
fn raise_cells<const DEPTH: u32, C: Cell>(counters: &mut [C], hash: u64, width: usize, depth: u32, count: C) {
    let target = min_of_cells::<DEPTH, C>(counters, hash, width, depth).saturating_plus(count);
    let depth = if DEPTH == 0 { depth } else { DEPTH };
    for cell in Cells::new(hash, width, depth) {
        if let Some(c) = counters.get_mut(cell) {
            *c = (*c).max(target);
        }
    }
}

/// An item's estimate from counters of type `C`: the smallest of its counters, the depth a
/// constant for depths 1 to 8.
#[inline(always)]
fn estimate_cells<C: Cell>(counters: &[C], hash: u64, width: usize, depth: u32) -> u64 {
    with_const_depth!(depth, D => min_of_cells::<{ D }, C>(counters, hash, width, depth)).widened()
}

/// [`estimate_cells`] behind a call, once per counter width.
#[inline(never)]
fn estimate_out_of_line<C: Cell>(counters: &[C], hash: u64, width: usize, depth: u32) -> u64 {
    estimate_cells(counters, hash, width, depth)
}

/// The smallest of an item's counters. `DEPTH` is the depth, or 0 to read `depth`.
#[inline(always)]
fn min_of_cells<const DEPTH: u32, C: Cell>(counters: &[C], hash: u64, width: usize, depth: u32) -> C {
    let depth = if DEPTH == 0 { depth } else { DEPTH };
    // A loop, not `Iterator::fold`: the compiler may leave the generic `fold` behind a call,
    // on the conservative update's hot path. (A sketch has at least one row, so the start
    // value is never the answer.)
    let mut min = C::MAX;
    for cell in Cells::new(hash, width, depth) {
        min = min.min(counters.get(cell).copied().unwrap_or(C::MAX));
    }
    min
}

/// The smallest over rows of the rows' dot products, summed in 128 bits, saturating (two
/// counters at `u64::MAX` give products whose sum passes `u128::MAX`).
fn min_row_product<A: Cell, B: Cell>(a: &[A], b: &[B], width: usize) -> u128 {
    a.chunks_exact(width)
        .zip(b.chunks_exact(width))
        .map(|(a, b)| {
            a.iter()
                .zip(b)
                .fold(0u128, |sum, (&x, &y)| sum.saturating_add(u128::from(x.widened()) * u128::from(y.widened())))
        })
        .min()
        .unwrap_or(0)
}

/// The index in the flat counter table of an item's counter in each row: row `r`'s cell is
/// `r·width + column`, with the column from [`Columns`]. A running row base, rather than a
/// row slice and then a column, more than halves the cost of an update or a query.
struct Cells {
    columns: Columns,
    base: usize,
    width: usize,
    left: u32,
}

impl Cells {
    #[inline]
    fn new(hash: u64, width: usize, depth: u32) -> Self {
        Self { columns: Columns::new(hash, width), base: 0, width, left: depth }
    }
}

impl Iterator for Cells {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let cell = self.base + self.columns.next().unwrap_or(0);
        self.base += self.width;
        Some(cell)
    }
}

impl fmt::Debug for CountMin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountMin")
            .field("width", &self.width)
            .field("depth", &self.depth)
            .field("seed", &self.seed)
            .field("update", &self.update)
            .field("counter_width", &self.counter_width())
            .field("total", &self.total)
            .finish()
    }
}

hashed_operator!(CountMin);

impl Mergeable for CountMin {
    fn size_in_bytes(&self) -> usize {
        CountMin::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        CountMin::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { total: 0, counters: self.counters.empty_like(), ..*self }
    }
}

codec_impl!(CountMin, 3);

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTHS: [CounterWidth; 4] =
        [CounterWidth::Eight, CounterWidth::Sixteen, CounterWidth::ThirtyTwo, CounterWidth::SixtyFour];

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        for update in [Update::Standard, Update::Conservative] {
            let mut a = CountMin::builder(8, 2).seed(1).update_rule(update).build().unwrap();
            a.observe_weighted("x", u64::MAX / 2 + 1);
            let mut b = a.clone();
            b.observe_weighted("y", 3);
            a.merge(&b).unwrap();
            assert_eq!((a.estimate("x"), a.total()), (u64::MAX, u64::MAX), "{update:?}");
            a.observe_weighted("x", 5);
            assert_eq!((a.estimate("x"), a.total()), (u64::MAX, u64::MAX), "{update:?}");
            // A saturated sketch still encodes and decodes.
            assert_eq!(CountMin::from_bytes(&a.to_bytes()), Ok(a));
        }
    }

    #[test]
    fn narrow_counters_saturate_and_stay() {
        for width in WIDTHS {
            for update in [Update::Standard, Update::Conservative] {
                let mut cm = CountMin::builder(16, 3).update_rule(update).counter_width(width).build().unwrap();
                let max = width.max();
                cm.observe_weighted("x", max.saturating_sub(1));
                assert_eq!((cm.estimate("x"), cm.saturated_counters()), (max - 1, 0), "{width:?} {update:?}");
                cm.observe_all(["x", "x"]);
                assert_eq!(cm.estimate("x"), max, "{width:?} {update:?}: sticky at the maximum");
                assert_eq!(cm.saturated_counters(), 3);
                assert_eq!(cm.bounds("x").upper, cm.total() as f64);
                // Merging saturates too, and the saturated sketch round-trips.
                let copy = cm.clone();
                cm.merge(&copy).unwrap();
                assert_eq!(cm.estimate("x"), max);
                assert_eq!(CountMin::from_bytes(&cm.to_bytes()), Ok(cm));
            }
        }
    }

    #[test]
    fn every_width_answers_alike_below_its_maximum() {
        let mut sketches: Vec<CountMin> =
            WIDTHS.iter().map(|&w| CountMin::builder(64, 4).counter_width(w).build().unwrap()).collect();
        for s in &mut sketches {
            s.observe_all((0..200_u64).map(|i| i % 17));
            s.observe_weighted(3_u64, 40);
        }
        let reference = &sketches[3];
        for s in &sketches {
            assert!((0..30_u64).all(|i| s.estimate(i) == reference.estimate(i)), "{:?}", s.counter_width());
            assert_eq!(s.inner_product(reference), reference.inner_product(reference));
        }
    }

    #[test]
    fn columns_stay_in_range_and_spread() {
        for width in [1_usize, 2, 3, 100, 4096, u32::MAX as usize] {
            for hash in [0_u64, 1, u64::MAX, 0x9E37_79B9_7F4A_7C15] {
                assert!(Columns::new(hash, width).take(32).all(|c| c < width));
            }
        }
        // Over many hashes, the columns of one row are close to uniform (chi-square, 15
        // degrees of freedom: the 99.9 % quantile is 37.7).
        let width = 16;
        let mut counts = [0u32; 16];
        let mut x = 1_u64;
        for _ in 0..160_000 {
            x = x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(0x1405_7B7E_F767_814F);
            let hash = crate::hash::hash_bytes(&x.to_le_bytes(), 0);
            let column = Columns::new(hash, width).nth(3).unwrap_or(0);
            counts[column] += 1;
        }
        let expected = 10_000.0;
        let chi2: f64 = counts.iter().map(|&c| (f64::from(c) - expected).powi(2) / expected).sum();
        assert!(chi2 < 37.7, "chi2 {chi2}");
    }
}
