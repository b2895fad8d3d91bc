//! KLL. The teaching text is in the [family docs](super).

use std::cmp::Ordering;
use std::fmt;

use crate::codec::{Codec, ENVELOPE_LEN, Item, Reader, Writer, codec_impl};
use crate::core::random::{Stream, part_stream};
use crate::core::{Bounds, ConfigError, DecodeError, MergeError, Mergeable, Operator};

/// The smallest `k`.
const MIN_K: u16 = 8;
/// The smallest capacity of a level (DataSketches' `m`).
const MIN_LEVEL: usize = 8;
/// The most levels a sketch can have: an item of level `h` stands for `2^h`, and a count of
/// items is a `u64`.
const MAX_LEVELS: usize = 64;
/// DataSketches' fit of the single-sided normalized rank error at 99 % confidence:
/// `2.296 / k^0.9723`.
const RANK_ERROR: (f64, f64) = (2.296, 0.9723);
/// The same for the double-sided error of a PMF's bucket: `2.446 / k^0.9433`.
const PMF_ERROR: (f64, f64) = (2.446, 0.9433);

/// Which items a rank counts, and so which item a quantile returns (DataSketches' search
/// criteria).
///
/// - [`Inclusive`](Self::Inclusive): the rank of `x` is the fraction of the items `≤ x`, and
///   the `q`-quantile is the smallest item whose inclusive rank is at least `q`.
/// - [`Exclusive`](Self::Exclusive): the rank of `x` is the fraction of the items `< x`, and
///   the `q`-quantile is the smallest item whose inclusive rank is above `q`.
///
/// ```
/// use synopses::quantiles::{Kll, Search};
///
/// let mut s = Kll::new(200, 1)?;
/// for x in [1.0, 2.0, 2.0, 3.0] {
///     s.add(x)?;
/// }
/// assert_eq!(s.rank(&2.0, Search::Inclusive)?, Some(0.75));
/// assert_eq!(s.rank(&2.0, Search::Exclusive)?, Some(0.25));
/// assert_eq!(s.quantile(0.5, Search::Inclusive)?, Some(&2.0));
/// assert_eq!(s.quantile(0.5, Search::Exclusive)?, Some(&2.0));
/// assert_eq!(s.quantile(0.25, Search::Exclusive)?, Some(&2.0));
/// assert_eq!(s.quantile(0.25, Search::Inclusive)?, Some(&1.0));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Search {
    /// Ranks count the items `≤ x`.
    #[default]
    Inclusive,
    /// Ranks count the items `< x`.
    Exclusive,
}

/// A KLL sketch: quantiles and ranks of any ordered items with a rank-error guarantee (see the
/// [family docs](super)).
///
/// `T` is any `PartialOrd + Clone` item whose order is total on the items added: numbers
/// (`f64` and `f32` refuse NaN, which is unordered with itself), integers, strings, tuples.
/// The [codec](crate::codec) needs `T: Item`.
///
/// ```
/// use synopses::quantiles::{Kll, Search};
///
/// let mut sketch = Kll::new(200, 42)?;
/// for i in 0..100_000_u32 {
///     sketch.add(f64::from(i))?;
/// }
/// let median = *sketch.quantile(0.5, Search::Inclusive)?.ok_or("empty")?;
/// // Within the a priori rank error (1.33 % at k = 200, 99 % confidence) of rank 0.5.
/// assert!((median / 100_000.0 - 0.5).abs() <= sketch.rank_error());
/// assert!(sketch.retained() < 700);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Kll<T = f64> {
    k: u16,
    /// The smallest `k` of the sketches merged in that had compacted: the error it carries.
    min_k: u16,
    /// The items' weight (each level-`h` item weighs `2^h`).
    n: u64,
    /// Every level's items in one buffer, the top level first and level 0 last (so that `add`
    /// pushes), allocated to the capacity exactly; every level but 0 is sorted.
    items: Vec<T>,
    /// Where each level starts in `items`; level `h` ends where level `h − 1` starts (level 0
    /// at the end). The top level starts at 0.
    starts: Vec<usize>,
    /// The most items the levels may hold together.
    capacity: usize,
    /// The extremes of the items that have left level 0 or never entered it: those of level 0
    /// are folded in when it is sorted, so that `add` compares nothing.
    min: Option<T>,
    max: Option<T>,
    /// Items `observe` could not take (NaN, one past `u64::MAX`).
    rejected: u64,
    seed: u64,
    stream: u64,
    rng: Stream,
}

/// The order of items known to be ordered with themselves (NaN refused at the door).
#[inline]
fn order<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b).unwrap_or(Ordering::Equal)
}

/// Whether `item` is ordered with itself: false for NaN, true for any item of a total order.
#[inline]
fn ordered<T: PartialOrd>(item: &T) -> bool {
    item.partial_cmp(item).is_some()
}

/// `k·(2/3)^depth` rounded to the nearest integer, the way DataSketches computes it (exactly,
/// in integers; a depth beyond 30 in two steps).
fn depth_capacity(k: u16, depth: usize) -> usize {
    if depth <= 30 {
        let scaled = (u64::from(k) << (depth + 1)) / 3_u64.pow(depth as u32);
        ((scaled + 1) >> 1) as usize
    } else {
        let half = depth / 2;
        let first = depth_capacity(k, half) as u16;
        depth_capacity(first, depth - half)
    }
}

/// The capacity of level `h` of `levels`: `k` at the top, shrinking by 2/3 a level down, at
/// least 8.
fn level_capacity(k: u16, levels: usize, h: usize) -> usize {
    depth_capacity(k, levels - h - 1).max(MIN_LEVEL)
}

/// The capacity of `levels` levels together.
fn total_capacity(k: u16, levels: usize) -> usize {
    (0..levels).map(|h| level_capacity(k, levels, h)).sum()
}

/// The a priori error of DataSketches' fit `(a, b)` for `k`: `a / k^b`.
fn fitted_error(fit: (f64, f64), k: u16) -> f64 {
    fit.0 / f64::from(k).powf(fit.1)
}

fn unordered_item() -> ConfigError {
    ConfigError::new("item", "an item unordered with itself", "an ordered item (not NaN)")
}

impl<T: PartialOrd + Clone> Kll<T> {
    /// The default `k`: about 1.33 % single-sided rank error at 99 % confidence, in about 600
    /// retained items.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// assert_eq!(Kll::<f64>::DEFAULT_K, 200);
    /// ```
    pub const DEFAULT_K: u16 = 200;

    /// An empty sketch of parameter `k` (8 to 65 535; the error falls as about `1/k`, the
    /// memory grows as about `3k` items) drawing its coin flips from `seed`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `k` below 8.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let s: Kll<u32> = Kll::new(400, 7)?;
    /// assert_eq!((s.k(), s.seed()), (400, 7));
    /// assert!(Kll::<u32>::new(4, 7).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(k: u16, seed: u64) -> Result<Self, ConfigError> {
        if k < MIN_K {
            return Err(ConfigError::new("k", k, "an integer in 8..=65535"));
        }
        Ok(Self::on_stream(k, seed, 0))
    }

    /// The smallest sketch whose a priori single-sided rank error is at most `epsilon`
    /// (DataSketches' fit `2.296 / k^0.9723`, 99 % confidence).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `epsilon` outside the errors `k` from 8 to 65 535 give (about
    /// 4.8·10⁻⁵ to 0.3; a larger `epsilon` gets `k` = 8).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let s = Kll::<f64>::with_error(0.01, 1)?;
    /// assert!(s.rank_error() <= 0.01);
    /// assert!(Kll::<f64>::new(s.k() - 1, 1)?.rank_error() > 0.01);
    /// assert_eq!(Kll::<f64>::with_error(0.9, 1)?.k(), 8);
    /// assert!(Kll::<f64>::with_error(1e-6, 1).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_error(epsilon: f64, seed: u64) -> Result<Self, ConfigError> {
        let finest = fitted_error(RANK_ERROR, u16::MAX);
        if !(epsilon >= finest && epsilon < 1.0) {
            return Err(ConfigError::new("epsilon", epsilon, "a rank error from 4.8e-5 to below 1"));
        }
        let mut k = (RANK_ERROR.0 / epsilon).powf(1.0 / RANK_ERROR.1).ceil().clamp(8.0, 65_535.0) as u16;
        // The power is rounded: step to the smallest k that meets epsilon.
        while k > MIN_K && fitted_error(RANK_ERROR, k - 1) <= epsilon {
            k -= 1;
        }
        while fitted_error(RANK_ERROR, k) > epsilon && k < u16::MAX {
            k += 1;
        }
        Self::new(k, seed)
    }

    fn on_stream(k: u16, seed: u64, stream: u64) -> Self {
        let capacity = total_capacity(k, 1);
        Self {
            k,
            min_k: k,
            n: 0,
            items: Vec::new(),
            starts: vec![0],
            capacity,
            min: None,
            max: None,
            rejected: 0,
            seed,
            stream,
            rng: Stream::new(seed, stream),
        }
    }

    /// The parameter `k`.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// assert_eq!(Kll::<i64>::new(100, 1)?.k(), 100);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn k(&self) -> u16 {
        self.k
    }

    /// The smallest `k` among this sketch and the compacted sketches merged into it: the `k`
    /// whose error the sketch carries.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut big = Kll::new(400, 1)?;
    /// let mut small = Kll::new(50, 2)?;
    /// (0..10_000).for_each(|i| small.add(i).unwrap_or(()));
    /// big.merge(&small)?;
    /// assert_eq!((big.k(), big.min_k()), (400, 50));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn min_k(&self) -> u16 {
        self.min_k
    }

    /// The seed of the coin flips.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// assert_eq!(Kll::<f32>::new(200, 99)?.seed(), 99);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The number of items the sketch stands for (weights included).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..5000_u64).try_for_each(|i| s.add(i))?;
    /// assert_eq!(s.count(), 5000);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Whether the sketch has seen no item.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// assert!(Kll::<u8>::new(200, 1)?.is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The items the sketch keeps (its memory, in items).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..1_000_000_u64).try_for_each(|i| s.add(i))?;
    /// assert!(s.retained() <= 3 * 200 + 8 * 14);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn retained(&self) -> usize {
        self.items.len()
    }

    /// The number of levels (compactors); an item of level `h` stands for `2^h` items.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// assert_eq!(s.levels(), 1);
    /// (0..10_000_u64).try_for_each(|i| s.add(i))?;
    /// assert!(s.levels() > 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn levels(&self) -> usize {
        self.starts.len()
    }

    /// Where level `h` ends in `items`.
    fn end(&self, h: usize) -> usize {
        if h == 0 { self.items.len() } else { self.starts[h - 1] }
    }

    /// The items of level `h`.
    fn level(&self, h: usize) -> &[T] {
        &self.items[self.starts[h]..self.end(h)]
    }

    /// Every level's items, level 0 first.
    fn each_level(&self) -> impl Iterator<Item = &[T]> {
        (0..self.levels()).map(|h| self.level(h))
    }

    /// Items [`observe`](Operator::observe) refused: NaN, and items past a count of
    /// `u64::MAX`.
    ///
    /// ```
    /// use synopses::core::Operator;
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// s.observe_all([1.0, f64::NAN, 2.0]);
    /// assert_eq!((s.count(), s.rejected()), (2, 1));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Adds an item.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `item` for an item unordered with itself (NaN), or one past a
    /// count of `u64::MAX`; the sketch is unchanged.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// s.add(2.5)?;
    /// assert!(s.add(f64::NAN).is_err());
    /// assert_eq!(s.count(), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn add(&mut self, item: T) -> Result<(), ConfigError> {
        if !ordered(&item) {
            return Err(unordered_item());
        }
        if self.n == u64::MAX {
            return Err(ConfigError::new("item", "one past 2^64 - 1 items", "fewer than 2^64 items"));
        }
        if self.items.len() >= self.items.capacity().min(self.capacity) {
            self.make_room(1);
        }
        self.items.push(item);
        self.n += 1;
        Ok(())
    }

    /// Adds an item `weight` times: a copy of it on each level `h` where `weight` has bit `h`
    /// set, which is exact (no coin is flipped).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `item` for an item unordered with itself (NaN), or `weight` for 0
    /// or a weight that would take the count past `u64::MAX`; the sketch is unchanged.
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// s.add_weighted(10, 1_000_000)?;
    /// s.add_weighted(20, 3_000_000)?;
    /// assert_eq!(s.count(), 4_000_000);
    /// assert_eq!(s.rank(&10, Search::Inclusive)?, Some(0.25));
    /// assert!(s.add_weighted(1, 0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn add_weighted(&mut self, item: T, weight: u64) -> Result<(), ConfigError> {
        if !ordered(&item) {
            return Err(unordered_item());
        }
        let Some(n) = self.n.checked_add(weight).filter(|_| weight > 0) else {
            return Err(ConfigError::new("weight", weight, "at least 1, and a count below 2^64"));
        };
        let top = 63 - weight.leading_zeros() as usize;
        self.grow_to(top + 1);
        for h in (1..=top).filter(|&h| weight >> h & 1 == 1) {
            let at = self.starts[h] + self.level(h).partition_point(|x| order(x, &item) != Ordering::Greater);
            self.items.insert(at, item.clone());
            self.starts[..h].iter_mut().for_each(|start| *start += 1);
        }
        if top > 0 {
            fold_extremes(&mut self.min, &mut self.max, &item, &item);
        }
        if weight & 1 == 1 {
            self.items.push(item);
        }
        self.n = n;
        self.make_room(0);
        Ok(())
    }

    /// Adds empty levels on top up to `levels`, updating the capacity and the allocation.
    fn grow_to(&mut self, levels: usize) {
        if levels > self.levels() {
            self.starts.resize(levels, 0);
            self.capacity = total_capacity(self.k, levels);
        }
        self.items.reserve_exact(self.capacity.saturating_sub(self.items.len()));
    }

    /// Compacts the lowest level at its capacity until `room` more items fit. While the
    /// sketch is over its capacity some level is at its own (the capacities add up to it).
    #[cold]
    fn make_room(&mut self, room: usize) {
        while self.items.len() + room > self.capacity {
            let levels = self.levels();
            let full = (0..levels).find(|&h| self.level(h).len() >= level_capacity(self.k, levels, h));
            if !full.is_some_and(|h| self.compact(h)) {
                break;
            }
        }
        // The buffer grows to the capacity exactly, never by doubling past it.
        self.items.reserve_exact(self.capacity.saturating_sub(self.items.len()).max(room));
    }

    /// Compacts level `h`: sorts it (level 0), keeps one item back if their number is odd,
    /// and promotes every other item of the rest, from an offset a coin flip chooses, into
    /// level `h + 1`, whose items weigh twice theirs; the others are dropped. Returns whether
    /// it freed room.
    fn compact(&mut self, h: usize) -> bool {
        if h + 1 >= MAX_LEVELS || self.level(h).len() < 2 {
            return false;
        }
        self.grow_to(h + 2);
        let offset = (self.rng.bits() & 1) as usize;
        let (start, end) = (self.starts[h], self.end(h));
        let odd = (end - start) % 2;
        if h > 0 && odd == 1 {
            // A sorted level keeps back its smallest item: move it to the end, where level 0
            // keeps back its newest.
            self.items[start..end].rotate_left(1);
        }
        let pairs = start..end - odd;
        if h == 0 {
            self.items[pairs.clone()].sort_unstable_by(order);
            if let (Some(first), Some(last)) = (self.items[pairs.clone()].first(), self.items[pairs.clone()].last()) {
                fold_extremes(&mut self.min, &mut self.max, first, last);
            }
        }
        // The chosen half to the back of the pairs, in order (item `offset + 2i` to
        // `half + i`, the last first, so that no chosen item is moved before its turn); the
        // others, now in front of them, are dropped below.
        let half = pairs.len() / 2;
        for i in (0..half).rev() {
            self.items.swap(start + half + i, start + offset + 2 * i);
        }
        // Level h + 1, the dropped half and the chosen half side by side: the chosen half
        // merges into level h + 1 through the dropped half's room.
        let above = self.starts[h + 1];
        merge_through_room(&mut self.items[above..start + 2 * half], start - above, half);
        self.items.drain(start + half..start + 2 * half);
        self.starts[h] = start + half;
        self.starts[..h].iter_mut().for_each(|s| *s -= half);
        true
    }

    /// The smallest item added (exact; `None` while empty).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..100_000_i64).rev().try_for_each(|i| s.add(i))?;
    /// assert_eq!((s.min(), s.max()), (Some(&0), Some(&99_999)));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn min(&self) -> Option<&T> {
        self.level(0).iter().chain(&self.min).min_by(order)
    }

    /// The largest item added (exact; `None` while empty).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// ["pear", "apple", "fig"].into_iter().try_for_each(|w| s.add(w.to_string()))?;
    /// assert_eq!(s.max().map(String::as_str), Some("pear"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn max(&self) -> Option<&T> {
        self.level(0).iter().chain(&self.max).max_by(order)
    }

    /// The a priori single-sided normalized rank error at 99 % confidence, for
    /// [`min_k`](Self::min_k): DataSketches' fit `2.296 / k^0.9723` (1.33 % at k = 200). A
    /// rank or quantile query errs by more than this fraction of the count with probability
    /// at most 1 %.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let e = Kll::<f64>::new(200, 1)?.rank_error();
    /// assert!((e - 0.0133).abs() < 1e-4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn rank_error(&self) -> f64 {
        fitted_error(RANK_ERROR, self.min_k)
    }

    /// The a priori double-sided normalized error of each bucket of a [`pmf`](Self::pmf), at
    /// 99 % confidence: DataSketches' fit `2.446 / k^0.9433` (1.65 % at k = 200).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let e = Kll::<f64>::new(200, 1)?.pmf_error();
    /// assert!((e - 0.0165).abs() < 1e-4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn pmf_error(&self) -> f64 {
        fitted_error(PMF_ERROR, self.min_k)
    }

    /// Bounds on the true normalized rank of an item whose estimated rank is `rank`:
    /// `rank ± rank_error()`, within `[0, 1]`, at 99 % confidence.
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..100_000_u32).try_for_each(|i| s.add(i))?;
    /// let rank = s.rank(&25_000, Search::Inclusive)?.ok_or("empty")?;
    /// assert!(s.rank_bounds(rank).contains(0.25));
    /// assert_eq!(s.rank_bounds(1.0).upper, 1.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn rank_bounds(&self, rank: f64) -> Bounds {
        let e = self.rank_error();
        Bounds { lower: (rank - e).clamp(0.0, 1.0), upper: (rank + e).clamp(0.0, 1.0) }
    }

    /// The retained items sorted, with their weights: what every query reads. Build it once
    /// to ask many questions.
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (1..=1000_u32).try_for_each(|i| s.add(i))?;
    /// let view = s.sorted_view();
    /// assert_eq!(view.total_weight(), 1000);
    /// let deciles: Vec<u32> = (1..10).filter_map(|d| view.quantile(f64::from(d) / 10.0, Search::Inclusive).ok()?.copied()).collect();
    /// assert_eq!(deciles.len(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn sorted_view(&self) -> SortedView<'_, T> {
        let mut entries: Vec<(&T, u64)> = Vec::with_capacity(self.items.len());
        for (h, level) in self.each_level().enumerate() {
            // Level 0 first, so that the runs end in ascending order.
            entries.extend(level.iter().map(|x| (x, 1_u64 << h)));
        }
        // Level 0 sorted on its own, then every level is a sorted run: merged in rounds of
        // neighbours, `O(r log levels)` rather than a sort's `O(r log r)`.
        let ends: Vec<usize> = (0..self.levels()).map(|h| self.items.len() - self.starts[h]).collect();
        entries[..ends[0]].sort_unstable_by(|a, b| order(a.0, b.0));
        let mut entries = merge_runs(entries, ends, |a, b| a.0 < b.0);
        let mut total = 0_u64;
        for entry in &mut entries {
            total = total.saturating_add(entry.1);
            entry.1 = total;
        }
        SortedView { entries, total, min: self.min(), max: self.max() }
    }

    /// The estimated normalized rank of `item`: the fraction of the items `≤ item`
    /// ([`Search::Inclusive`]) or `< item` ([`Search::Exclusive`]); `None` while empty. Within
    /// [`rank_error`](Self::rank_error) of the true rank with 99 % confidence.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `item` for NaN.
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..10_000_u32).try_for_each(|i| s.add(i))?;
    /// let r = s.rank(&2_500, Search::Exclusive)?.ok_or("empty")?;
    /// assert!((r - 0.25).abs() <= s.rank_error());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rank(&self, item: &T, search: Search) -> Result<Option<f64>, ConfigError> {
        if !ordered(item) {
            return Err(unordered_item());
        }
        if self.n == 0 {
            return Ok(None);
        }
        // Without a sorted view: level 0 counted, every other level searched.
        let counts = |level: &[T]| match search {
            Search::Inclusive => level.iter().filter(|x| *x <= item).count(),
            Search::Exclusive => level.iter().filter(|x| *x < item).count(),
        };
        let searched = |level: &[T]| match search {
            Search::Inclusive => level.partition_point(|x| x <= item),
            Search::Exclusive => level.partition_point(|x| x < item),
        };
        let weight: u64 = (counts(self.level(0)) as u64)
            + (1..self.levels()).map(|h| (searched(self.level(h)) as u64) << h).sum::<u64>();
        Ok(Some(weight as f64 / self.n as f64))
    }

    /// The estimated `rank`-quantile (`rank` in `[0, 1]`): an item whose true normalized rank
    /// is within [`rank_error`](Self::rank_error) of `rank` with 99 % confidence. Ranks 0 and 1
    /// give the exact minimum and maximum; `None` while empty.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `rank` outside `[0, 1]` (NaN included).
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..10_000_u32).try_for_each(|i| s.add(i))?;
    /// let p90 = *s.quantile(0.9, Search::Inclusive)?.ok_or("empty")?;
    /// assert!((f64::from(p90) / 10_000.0 - 0.9).abs() <= s.rank_error());
    /// assert_eq!(s.quantile(1.0, Search::Inclusive)?, Some(&9_999));
    /// assert!(s.quantile(1.5, Search::Inclusive).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quantile(&self, rank: f64, search: Search) -> Result<Option<&T>, ConfigError> {
        self.sorted_view().quantile(rank, search)
    }

    /// The estimated cumulative distribution at `split_points` (strictly increasing): the rank
    /// of each split point, then 1. Each is within [`rank_error`](Self::rank_error) with 99 %
    /// confidence; `None` while empty.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `split_points` unless strictly increasing (NaN included).
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..4).try_for_each(|i| s.add(i))?;
    /// assert_eq!(s.cdf(&[0, 2], Search::Inclusive)?, Some(vec![0.25, 0.75, 1.0]));
    /// assert!(s.cdf(&[2, 0], Search::Inclusive).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn cdf(&self, split_points: &[T], search: Search) -> Result<Option<Vec<f64>>, ConfigError> {
        self.sorted_view().cdf(split_points, search)
    }

    /// The estimated mass between consecutive `split_points` (strictly increasing): the
    /// fraction of items below the first, between each two, and above the last (with
    /// [`Search`] deciding which side a split point's own items fall on). Each is within
    /// [`pmf_error`](Self::pmf_error) with 99 % confidence; `None` while empty.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `split_points` unless strictly increasing (NaN included).
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..4).try_for_each(|i| s.add(i))?;
    /// assert_eq!(s.pmf(&[1, 3], Search::Exclusive)?, Some(vec![0.25, 0.5, 0.25]));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn pmf(&self, split_points: &[T], search: Search) -> Result<Option<Vec<f64>>, ConfigError> {
        self.sorted_view().pmf(split_points, search)
    }

    /// Merges `other` in: its items join this sketch's levels, which are then compacted to
    /// this sketch's `k`. Any two sketches merge, of any `k` and seed; the result carries the
    /// error of the smaller `k` ([`min_k`](Self::min_k)). Its coin flips come from this
    /// sketch's stream: give parallel parts their own with
    /// [`empty_part`](Mergeable::empty_part).
    ///
    /// # Errors
    ///
    /// [`MergeError`] naming `count` when the two counts add past `u64::MAX`; the sketch is
    /// unchanged.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut whole = Kll::new(200, 3)?;
    /// let mut parts: Vec<Kll<u32>> = (0..4).map(|i| whole.empty_part(i)).collect();
    /// for (i, part) in parts.iter_mut().enumerate() {
    ///     (0..25_000_u32).try_for_each(|x| part.add(x * 4 + i as u32))?;
    /// }
    /// whole.merge_all(&parts)?;
    /// assert_eq!(whole.count(), 100_000);
    /// let median = *whole.quantile(0.5, Search::Inclusive)?.ok_or("empty")?;
    /// assert!((f64::from(median) / 100_000.0 - 0.5).abs() <= whole.rank_error());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        let n = self.n.checked_add(other.n).ok_or_else(|| MergeError::new("count", self.n, other.n))?;
        self.rejected = self.rejected.saturating_add(other.rejected);
        if other.n == 0 {
            return Ok(());
        }
        if let (Some(lo), Some(hi)) = (other.min(), other.max()) {
            fold_extremes(&mut self.min, &mut self.max, lo, hi);
        }
        // Each level's items, ours then theirs (a level of both sorted as two runs), rebuilt
        // into one buffer from the top.
        let levels = self.levels().max(other.levels());
        let mut items = Vec::with_capacity(total_capacity(self.k, levels).max(self.items.len() + other.items.len()));
        let mut starts = vec![0; levels];
        for h in (0..levels).rev() {
            starts[h] = items.len();
            let ours = if h < self.levels() { self.level(h) } else { &[] };
            let theirs = if h < other.levels() { other.level(h) } else { &[] };
            if h == 0 {
                items.extend(ours.iter().chain(theirs).cloned());
            } else {
                items.extend(Merged::new(ours.iter(), theirs.iter()).cloned());
            }
        }
        self.items = items;
        self.starts = starts;
        self.capacity = total_capacity(self.k, levels);
        if other.levels() > 1 {
            self.min_k = self.min_k.min(other.min_k);
        }
        self.n = n;
        self.make_room(0);
        Ok(())
    }

    /// Bytes of memory the sketch holds: the struct and its levels' buffers (not what items
    /// such as `String`s hold on the heap).
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..1_000_000_u64).try_for_each(|i| s.add(i))?;
    /// assert!(s.size_in_bytes() < 16 * 1024);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.items.capacity() * std::mem::size_of::<T>()
            + self.starts.capacity() * std::mem::size_of::<usize>()
    }
}

/// Merges the sorted runs at the front (`first` items) and at the back (`second` items) of
/// `v`, with `v.len() − first − second` items between them that do not matter, into the front
/// `first + second` positions; the items that did not matter end at the back. By swaps from
/// the back, taking the larger of the two runs' last items: the positions between the runs'
/// ends always number the second run's remaining items, so nothing is overwritten. Stable:
/// among equal items the first run's come first.
fn merge_through_room<T: PartialOrd>(v: &mut [T], first: usize, second: usize) {
    let (mut i, mut j) = (first, v.len());
    let stop = v.len() - second;
    let mut w = first + second;
    while j > stop {
        w -= 1;
        if i > 0 && v[j - 1] < v[i - 1] {
            i -= 1;
            v.swap(w, i);
        } else {
            j -= 1;
            v.swap(w, j);
        }
    }
}

/// The items of two sorted sequences in order, the first's before the second's among equals.
struct Merged<I: Iterator, J: Iterator> {
    first: std::iter::Peekable<I>,
    second: std::iter::Peekable<J>,
}

impl<T: PartialOrd, I: Iterator<Item = T>, J: Iterator<Item = T>> Merged<I, J> {
    fn new(first: I, second: J) -> Self {
        Self { first: first.peekable(), second: second.peekable() }
    }
}

impl<T: PartialOrd, I: Iterator<Item = T>, J: Iterator<Item = T>> Iterator for Merged<I, J> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        match (self.first.peek(), self.second.peek()) {
            (Some(a), Some(b)) if b < a => self.second.next(),
            (Some(_), _) => self.first.next(),
            (None, _) => self.second.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let ((a, x), (b, y)) = (self.first.size_hint(), self.second.size_hint());
        (a.saturating_add(b), x.zip(y).and_then(|(x, y)| x.checked_add(y)))
    }
}

/// Merges the sorted runs of `v`, which end at `ends` (ascending), into one sorted vector:
/// neighbours merged in rounds.
fn merge_runs<E: Copy>(mut v: Vec<E>, mut ends: Vec<usize>, less: impl Fn(&E, &E) -> bool) -> Vec<E> {
    ends.dedup();
    let mut out = Vec::with_capacity(v.len());
    while ends.len() > 1 {
        out.clear();
        let mut start = 0;
        let mut merged = Vec::with_capacity(ends.len().div_ceil(2));
        for pair in ends.chunks(2) {
            let (mid, end) = match *pair {
                [mid, end] => (mid, end),
                [end] => (end, end),
                _ => break,
            };
            let (left, right) = (&v[start..mid], &v[mid..end]);
            let (mut i, mut j) = (0, 0);
            while i < left.len() && j < right.len() {
                if less(&right[j], &left[i]) {
                    out.push(right[j]);
                    j += 1;
                } else {
                    out.push(left[i]);
                    i += 1;
                }
            }
            out.extend_from_slice(&left[i..]);
            out.extend_from_slice(&right[j..]);
            merged.push(end);
            start = end;
        }
        std::mem::swap(&mut v, &mut out);
        ends = merged;
    }
    v
}

/// Lowers `min` to `lo` and raises `max` to `hi` where they extend them.
fn fold_extremes<T: PartialOrd + Clone>(min: &mut Option<T>, max: &mut Option<T>, lo: &T, hi: &T) {
    if min.as_ref().is_none_or(|m| lo < m) {
        *min = Some(lo.clone());
    }
    if max.as_ref().is_none_or(|m| hi > m) {
        *max = Some(hi.clone());
    }
}

/// The retained items of a [`Kll`] sorted, each with the weight of the items up to it: what
/// rank, quantile, CDF and PMF queries read. Made by [`Kll::sorted_view`].
///
/// ```
/// use synopses::quantiles::{Kll, Search};
///
/// let mut s = Kll::new(200, 1)?;
/// (0..100_u32).try_for_each(|i| s.add(i))?;
/// let view = s.sorted_view();
/// assert_eq!(view.rank(&49, Search::Inclusive)?, Some(0.5));
/// assert_eq!(view.iter().count(), 100);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SortedView<'a, T> {
    /// Items in order, each with the cumulative weight up to and including it.
    entries: Vec<(&'a T, u64)>,
    total: u64,
    min: Option<&'a T>,
    max: Option<&'a T>,
}

impl<'a, T: PartialOrd> SortedView<'a, T> {
    /// The weight of all items: the sketch's count.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// s.add_weighted("x".to_string(), 7)?;
    /// assert_eq!(s.sorted_view().total_weight(), 7);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn total_weight(&self) -> u64 {
        self.total
    }

    /// The retained items in order, each with its own weight.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// s.add_weighted(5, 3)?;
    /// s.add(1)?;
    /// let items: Vec<(i32, u64)> = s.sorted_view().iter().map(|(&x, w)| (x, w)).collect();
    /// assert_eq!(items, [(1, 1), (5, 1), (5, 2)]);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&'a T, u64)> + '_ {
        let mut before = 0;
        self.entries.iter().map(move |&(x, cumulative)| {
            let weight = cumulative - before;
            before = cumulative;
            (x, weight)
        })
    }

    /// As [`Kll::rank`].
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `item` for NaN.
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let s = Kll::<f64>::new(200, 1)?;
    /// assert_eq!(s.sorted_view().rank(&1.0, Search::Inclusive)?, None);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn rank(&self, item: &T, search: Search) -> Result<Option<f64>, ConfigError> {
        if !ordered(item) {
            return Err(unordered_item());
        }
        if self.total == 0 {
            return Ok(None);
        }
        let below = match search {
            Search::Inclusive => self.entries.partition_point(|e| e.0 <= item),
            Search::Exclusive => self.entries.partition_point(|e| e.0 < item),
        };
        let weight = below.checked_sub(1).map_or(0, |i| self.entries[i].1);
        Ok(Some(weight as f64 / self.total as f64))
    }

    /// As [`Kll::quantile`].
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `rank` outside `[0, 1]` (NaN included).
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (1..=4).try_for_each(|i| s.add(i))?;
    /// let view = s.sorted_view();
    /// assert_eq!(view.quantile(0.0, Search::Exclusive)?, Some(&1));
    /// assert_eq!(view.quantile(0.5, Search::Inclusive)?, Some(&2));
    /// assert_eq!(view.quantile(0.5, Search::Exclusive)?, Some(&3));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn quantile(&self, rank: f64, search: Search) -> Result<Option<&'a T>, ConfigError> {
        if !(0.0..=1.0).contains(&rank) {
            return Err(ConfigError::new("rank", rank, "a normalized rank in [0, 1]"));
        }
        let Some(last) = self.entries.len().checked_sub(1) else { return Ok(None) };
        if rank == 0.0 {
            return Ok(self.min);
        }
        if rank == 1.0 {
            return Ok(self.max);
        }
        // Compared as the ranks `rank` reports (weight / total), so that the quantile of an
        // item's rank is the item, where `rank · total` would round past it.
        let total = self.total as f64;
        let i = match search {
            Search::Inclusive => self.entries.partition_point(|e| (e.1 as f64) / total < rank),
            Search::Exclusive => self.entries.partition_point(|e| (e.1 as f64) / total <= rank),
        };
        Ok(Some(self.entries[i.min(last)].0))
    }

    /// As [`Kll::cdf`].
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `split_points` unless strictly increasing (NaN included).
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..10).try_for_each(|i| s.add(i))?;
    /// assert_eq!(s.sorted_view().cdf(&[4], Search::Exclusive)?, Some(vec![0.4, 1.0]));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn cdf(&self, split_points: &[T], search: Search) -> Result<Option<Vec<f64>>, ConfigError> {
        let increasing = split_points.iter().all(ordered) && split_points.windows(2).all(|w| w[0] < w[1]);
        if !increasing {
            return Err(ConfigError::new("split_points", "not strictly increasing", "strictly increasing items"));
        }
        if self.total == 0 {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(split_points.len() + 1);
        for point in split_points {
            out.push(self.rank(point, search)?.unwrap_or(0.0));
        }
        out.push(1.0);
        Ok(Some(out))
    }

    /// As [`Kll::pmf`].
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `split_points` unless strictly increasing (NaN included).
    ///
    /// ```
    /// use synopses::quantiles::{Kll, Search};
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..10).try_for_each(|i| s.add(i))?;
    /// assert_eq!(s.sorted_view().pmf(&[5], Search::Exclusive)?, Some(vec![0.5, 0.5]));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn pmf(&self, split_points: &[T], search: Search) -> Result<Option<Vec<f64>>, ConfigError> {
        let Some(mut out) = self.cdf(split_points, search)? else { return Ok(None) };
        for i in (1..out.len()).rev() {
            out[i] -= out[i - 1];
        }
        Ok(Some(out))
    }
}

impl<T: PartialOrd + Clone + Item> Kll<T> {
    /// The length of [`to_bytes`](Self::to_bytes)' output.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..10_000_u64).try_for_each(|i| s.add(i))?;
    /// assert_eq!(s.encoded_len(), s.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        let extremes = self.min().map_or(0, Item::encoded_len) + self.max().map_or(0, Item::encoded_len);
        let items: usize = self.items.iter().map(Item::encoded_len).sum();
        ENVELOPE_LEN + 37 + Stream::ENCODED_LEN + 4 * self.levels() + extremes + items
    }

    /// Encodes the sketch in the crate's [binary format](crate::codec), family code 19.
    ///
    /// Body: `k` and `min_k` (u16), seed, stream, count and rejected (u64), the generator
    /// (its 32-byte xoshiro256++ state and its draw count, u64), the number of levels (u8) and
    /// each level's number of items (u32); then, unless empty, the minimum and the maximum;
    /// then the items, the top level first and level 0 last (in the order it holds them),
    /// each as [`Item`] encodes it.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// (0..10_000_u32).try_for_each(|i| s.add(i))?;
    /// let bytes = s.to_bytes();
    /// assert_eq!(bytes[3], 19);
    /// assert_eq!(Kll::from_bytes(&bytes)?, s);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_bytes(&self.k.to_le_bytes());
        w.put_bytes(&self.min_k.to_le_bytes());
        w.put_u64(self.seed);
        w.put_u64(self.stream);
        w.put_u64(self.n);
        w.put_u64(self.rejected);
        self.rng.encode(&mut w);
        w.put_u8(self.levels() as u8);
        for level in self.each_level() {
            w.put_u32(level.len() as u32);
        }
        if let (Some(lo), Some(hi)) = (self.min(), self.max()) {
            w.put_item(lo);
            w.put_item(hi);
        }
        for item in &self.items {
            w.put_item(item);
        }
        w.finish()
    }

    /// Decodes a sketch written by [`to_bytes`](Self::to_bytes), validating every field: `k`
    /// and `min_k`, the levels (at most the capacity `k` gives them, the top one non-empty,
    /// every one but level 0 sorted), items ordered with themselves and between the minimum
    /// and the maximum, and weights that add up to the count.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] for anything but a valid encoding.
    ///
    /// ```
    /// use synopses::quantiles::Kll;
    ///
    /// let mut s = Kll::new(200, 1)?;
    /// s.add(1.0)?;
    /// let mut bytes = s.to_bytes();
    /// bytes.truncate(bytes.len() - 1);
    /// assert!(Kll::<f64>::from_bytes(&bytes).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let invalid = |field, reason| DecodeError::InvalidField { field, reason };
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let k = u16::from_le_bytes(r.array()?);
        let min_k = u16::from_le_bytes(r.array()?);
        if k < MIN_K {
            return Err(invalid("k", "below 8"));
        }
        if !(MIN_K..=k).contains(&min_k) {
            return Err(invalid("min_k", "outside 8..=k"));
        }
        let (seed, stream, n, rejected) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let rng = Stream::decode(&mut r)?;
        let levels = usize::from(r.u8()?);
        if !(1..=MAX_LEVELS).contains(&levels) {
            return Err(invalid("levels", "outside 1..=64"));
        }
        let mut sizes = Vec::with_capacity(levels);
        for _ in 0..levels {
            sizes.push(r.u32()? as usize);
        }
        // Summed as u64: 64 claimed u32 sizes can pass a 32-bit usize.
        let claimed: u64 = sizes.iter().map(|&s| s as u64).sum();
        let capacity = total_capacity(k, levels);
        if claimed > capacity as u64 {
            return Err(invalid("levels", "more items than their capacity"));
        }
        let retained = claimed as usize;
        if levels > 1 && sizes[levels - 1] == 0 {
            return Err(invalid("levels", "an empty top level"));
        }
        if levels == 1 && min_k != k {
            // A merge lowers min_k only with a compacted sketch, whose levels it takes.
            return Err(invalid("min_k", "below k in a sketch that never compacted"));
        }
        let weight = sizes.iter().enumerate().map(|(h, &s)| (s as u128) << h).sum::<u128>();
        if weight != u128::from(n) {
            return Err(invalid("count", "not the weight of the items"));
        }
        let item = |r: &mut Reader<'_>| -> Result<T, DecodeError> {
            let (x, _) = r.item_and_bytes::<T>()?;
            if ordered(&x) { Ok(x) } else { Err(invalid("item", "unordered with itself (NaN)")) }
        };
        let (min, max) = if n > 0 { (Some(item(&mut r)?), Some(item(&mut r)?)) } else { (None, None) };
        r.expect_items(retained, 1)?;
        // The buffer as written, the top level first. Grown as items are read, not reserved
        // from the claimed sizes: an item may take fewer bytes than its type in memory.
        let mut items = Vec::new();
        let mut starts = vec![0; levels];
        for h in (0..levels).rev() {
            starts[h] = items.len();
            for _ in 0..sizes[h] {
                let x = item(&mut r)?;
                let outside = match (&min, &max) {
                    (Some(lo), Some(hi)) => x < *lo || x > *hi,
                    _ => true,
                };
                if outside {
                    return Err(invalid("item", "outside the minimum and maximum"));
                }
                if h > 0 && items.len() > starts[h] && items.last().is_some_and(|last| x < *last) {
                    return Err(invalid("levels", "a level above 0 out of order"));
                }
                items.push(x);
            }
        }
        r.finish()?;
        if let (Some(lo), Some(hi)) = (&min, &max)
            && lo > hi
        {
            return Err(invalid("min", "above the maximum"));
        }
        let mut sketch = Self::on_stream(k, seed, stream);
        sketch.items = items;
        sketch.starts = starts;
        sketch.min_k = min_k;
        sketch.n = n;
        sketch.rejected = rejected;
        sketch.capacity = capacity;
        sketch.min = min;
        sketch.max = max;
        sketch.rng = rng;
        Ok(sketch)
    }
}

impl<T: PartialOrd + Clone> PartialEq for Kll<T> {
    /// Equal configuration, stream, counts, levels (in order) and extremes; the generator's
    /// state, which decides only what happens next, is not compared.
    fn eq(&self, other: &Self) -> bool {
        (self.k, self.min_k, self.n, self.rejected, self.seed, self.stream)
            == (other.k, other.min_k, other.n, other.rejected, other.seed, other.stream)
            && self.starts == other.starts
            && self.items == other.items
            && self.min() == other.min()
            && self.max() == other.max()
    }
}

impl<T: PartialOrd + Clone + fmt::Debug> fmt::Debug for Kll<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kll")
            .field("k", &self.k)
            .field("min_k", &self.min_k)
            .field("count", &self.n)
            .field("retained", &self.items.len())
            .field("levels", &self.each_level().map(<[T]>::len).collect::<Vec<_>>())
            .field("min", &self.min())
            .field("max", &self.max())
            .field("seed", &self.seed)
            .field("stream", &self.stream)
            .finish()
    }
}

impl<T: PartialOrd + Clone> Mergeable for Kll<T> {
    /// As [`Kll::merge`].
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::quantiles::Kll;
    ///
    /// let mut a = Kll::new(200, 1)?;
    /// a.add(1.0)?;
    /// let mut b = a.empty_part(0);
    /// b.add(2.0)?;
    /// Mergeable::merge(&mut a, &b)?;
    /// assert_eq!(a.count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        Kll::merge(self, other)
    }

    /// An empty sketch of the same `k` and random stream (restarted).
    fn empty_like(&self) -> Self {
        Self::on_stream(self.k, self.seed, self.stream)
    }

    /// An empty sketch of the same `k` on a random stream of its own, derived from this one's
    /// stream, count and `index`.
    fn empty_part(&self, index: u64) -> Self {
        Self::on_stream(self.k, self.seed, part_stream(self.stream, self.n, index))
    }

    fn size_in_bytes(&self) -> usize {
        Kll::size_in_bytes(self)
    }
}

impl<T: PartialOrd + Clone> Operator<T> for Kll<T> {
    /// [`add`](Kll::add); an item it refuses (NaN) is counted in
    /// [`rejected`](Kll::rejected) instead.
    fn observe(&mut self, item: T) {
        if self.add(item).is_err() {
            self.rejected = self.rejected.saturating_add(1);
        }
    }
}

impl<'a, T: PartialOrd + Clone> Operator<&'a T> for Kll<T> {
    /// A copy of the item, as [`observe`](Operator::observe) takes it: what
    /// [`par_observe`](crate::core::OperatorExt) over a slice needs.
    ///
    /// ```
    /// use synopses::core::Operator;
    /// use synopses::quantiles::Kll;
    ///
    /// let values = vec![3.0, 1.0, 2.0];
    /// let mut s = Kll::new(200, 1)?;
    /// values.iter().for_each(|x| s.observe(x));
    /// assert_eq!(s.min(), Some(&1.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn observe(&mut self, item: &'a T) {
        Operator::observe(self, item.clone());
    }
}

codec_impl!([T: PartialOrd + Clone + Item] Kll<T>, 19);

#[cfg(test)]
mod tests {
    use super::*;

    /// The invariants every reachable state keeps.
    fn check_invariants<T: PartialOrd + Clone + fmt::Debug>(s: &Kll<T>) {
        let weight: u128 = s.each_level().enumerate().map(|(h, l)| (l.len() as u128) << h).sum();
        assert_eq!(weight, u128::from(s.n), "{s:?}");
        assert!(s.retained() <= s.capacity, "{s:?}");
        assert_eq!(s.capacity, total_capacity(s.k, s.levels()));
        assert_eq!(s.starts[s.levels() - 1], 0);
        for h in 1..s.levels() {
            assert!(s.starts[h] <= s.starts[h - 1]);
            assert!(s.level(h).windows(2).all(|w| w[0] <= w[1]));
        }
        if s.levels() > 1 {
            assert!(!s.level(s.levels() - 1).is_empty(), "{s:?}");
        }
    }

    #[test]
    fn capacities_are_datasketches() {
        // k·(2/3)^d rounded: 200, 133, 89, 59, 40, 26, 18, 12, 8, then the floor of 8.
        let caps: Vec<usize> = (0..10).map(|d| depth_capacity(200, d)).collect();
        assert_eq!(caps, [200, 133, 89, 59, 40, 26, 18, 12, 8, 5]);
        assert_eq!(level_capacity(200, 10, 0), 8);
        assert_eq!(total_capacity(200, 1), 200);
        // Deep levels go in two steps and stay finite.
        assert_eq!(depth_capacity(u16::MAX, 63), 0);
        assert_eq!(total_capacity(u16::MAX, 64), (0..64).map(|d| depth_capacity(u16::MAX, d).max(8)).sum::<usize>());
    }

    #[test]
    fn invariants_hold_through_updates_weights_and_merges() -> Result<(), Box<dyn std::error::Error>> {
        let mut a = Kll::new(8, 1)?;
        let mut b = Kll::new(30, 2)?;
        for i in 0..20_000_u64 {
            a.add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40)?;
            if i % 97 == 0 {
                b.add_weighted(i, i + 1)?;
            }
            check_invariants(&a);
        }
        check_invariants(&b);
        a.merge(&b)?;
        check_invariants(&a);
        let before = b.count();
        b.merge(&a)?;
        check_invariants(&b);
        assert_eq!(b.count(), a.count() + before);
        let mut huge = Kll::new(8, 3)?;
        huge.add_weighted(1, u64::MAX)?;
        check_invariants(&huge);
        assert!(huge.add(2).is_err());
        assert!(huge.merge(&a).is_err());
        assert_eq!(huge.levels(), 64);
        Ok(())
    }

    /// An item ordered by its key alone, to see which of equal items comes first.
    #[derive(Debug, Clone, Copy)]
    struct Tagged(u8, u32);

    impl PartialEq for Tagged {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }

    impl PartialOrd for Tagged {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            self.0.partial_cmp(&other.0)
        }
    }

    #[test]
    fn merging_through_the_room_is_a_stable_merge() {
        let mut state = 7_u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        for _ in 0..2_000 {
            let (first, second) = (next() as usize % 40, next() as usize % 40);
            let mut run = |n: usize, tag: u32| {
                let mut r: Vec<Tagged> = (0..n).map(|i| Tagged((next() % 6) as u8, tag + i as u32)).collect();
                r.sort_by(order);
                r
            };
            let (a, b) = (run(first, 0), run(second, 1000));
            let mut v: Vec<Tagged> =
                a.iter().copied().chain((0..second).map(|i| Tagged(99, 2000 + i as u32))).collect();
            v.extend(&b);
            merge_through_room(&mut v, first, second);
            let mut want: Vec<Tagged> = a.iter().chain(&b).copied().collect();
            want.sort_by(order);
            let tags = |v: &[Tagged]| v.iter().map(|t| t.1).collect::<Vec<_>>();
            assert_eq!(tags(&v[..first + second]), tags(&want));
            assert!(v[first + second..].iter().all(|t| t.0 == 99));
        }
    }

    #[test]
    fn exact_until_the_first_compaction() -> Result<(), Box<dyn std::error::Error>> {
        let mut s = Kll::new(200, 1)?;
        (0..200).try_for_each(|i| s.add(i))?;
        assert_eq!(s.levels(), 1);
        for i in 0..200 {
            assert_eq!(s.rank(&i, Search::Inclusive)?, Some(f64::from(i + 1) / 200.0));
            assert_eq!(s.quantile(f64::from(i + 1) / 200.0, Search::Inclusive)?, Some(&i));
        }
        Ok(())
    }
}
