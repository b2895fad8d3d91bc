//! Misra–Gries heavy hitters with Agarwal et al.'s merge. The teaching text is in the
//! [family docs](super).

use std::fmt;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::codec::{Codec, ENVELOPE_LEN, Item, Reader, Writer, codec_impl};
use crate::core::{Bounds, ConfigError, DecodeError, MergeError, Mergeable, Operator};
use crate::hash::{DEFAULT_SEED, Hashable};

/// The most counters a summary may keep.
const MAX_CAPACITY: usize = 1 << 24;

/// Which mistake a list of frequent items must not make.
///
/// ```
/// use synopses::frequency::{Guarantee, HeavyHitters};
///
/// let mut hh = HeavyHitters::new(10)?;
/// hh.observe_all((0..1000_u64).map(|i| if i % 2 == 0 { 0 } else { i }));
/// // Key 0 is half the stream: listed under both guarantees.
/// assert_eq!(hh.frequent(0.3, Guarantee::NoFalsePositives)?[0].0, 0);
/// assert_eq!(hh.frequent(0.3, Guarantee::NoFalseNegatives)?[0].0, 0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guarantee {
    /// Every listed item is frequent; some frequent items may be missing.
    NoFalsePositives,
    /// Every frequent item is listed; some listed items may not be frequent. Complete when
    /// the threshold is above the summary's error, which holds for `phi > 1/(capacity + 1)`.
    NoFalseNegatives,
}

/// A Misra–Gries summary: `capacity` counters (up to twice that between reductions), each an item and a count that under-estimates its frequency by at most
/// [`error`](Self::error) ≤ `N / (capacity + 1)`. Deterministic: the bound holds on every
/// stream, merged or not. See the [family docs](super).
///
/// Items are found by their seeded hash and then compared, so two items whose hashes
/// coincide keep counters of their own, and no count is ever above its item's frequency.
/// An adversary who knows the seed can craft many items of one hash: they stay correct, but
/// each update then walks past all of them. On untrusted items use a secret seed
/// ([`with_seed`](Self::with_seed)). Since the summary keeps the items themselves, it takes
/// items, not hashes: there is no `observe_hash`.
///
/// ```
/// use synopses::frequency::HeavyHitters;
///
/// let mut hh = HeavyHitters::new(100)?;
/// for i in 0..100_000_u64 {
///     hh.observe(if i % 10 == 0 { "home" } else if i % 7 == 0 { "search" } else { "other-page" });
/// }
/// let top = hh.top(2);
/// assert_eq!(top[0].0, "other-page");
/// assert!(hh.bounds(&"home").contains(10_000.0));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct HeavyHitters<T> {
    capacity: usize,
    seed: u64,
    total: u64,
    /// The sum of the reductions so far: no count is below its item's frequency by more.
    error: u64,
    /// The counters, found by their item's seeded hash (already uniform: the table hashes no
    /// further) and then by the item itself.
    counts: HashTable<Counter<T>>,
}

/// An item, its count, and its hash under the summary's seed.
#[derive(Clone, Debug)]
struct Counter<T> {
    hash: u64,
    item: T,
    count: u64,
}

impl<T: Hashable + Clone + Eq> HeavyHitters<T> {
    /// A summary of `capacity` counters (`1..=2^24`) hashing items with the
    /// [default seed](DEFAULT_SEED). Its error is at most `N/(capacity+1)` of the total count
    /// `N`: capacity 99 for 1 %, 999 for 0.1 %.
    ///
    /// ```
    /// use synopses::frequency::HeavyHitters;
    ///
    /// let hh = HeavyHitters::<u64>::new(99)?;
    /// assert_eq!(hh.capacity(), 99);
    /// assert!(HeavyHitters::<u64>::new(0).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(capacity: usize) -> Result<Self, ConfigError> {
        Self::with_seed(capacity, DEFAULT_SEED)
    }

    /// A summary of `capacity` counters hashing items with `seed`. Summaries merge only with
    /// summaries of the same capacity and seed.
    ///
    /// ```
    /// use synopses::frequency::HeavyHitters;
    ///
    /// let mut hh = HeavyHitters::with_seed(10, 0x5EC2E7)?;
    /// hh.observe("a");
    /// assert_eq!((hh.seed(), hh.estimate(&"a")), (0x5EC2E7, 1));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(capacity: usize, seed: u64) -> Result<Self, ConfigError> {
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(ConfigError::new("capacity", capacity, "an integer in 1..=2^24"));
        }
        Ok(Self { capacity, seed, total: 0, error: 0, counts: HashTable::new() })
    }

    /// The seed items are hashed with.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// assert_eq!(HeavyHitters::<u64>::new(10)?.seed(), synopses::hash::DEFAULT_SEED);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The number of counters the summary reduces to.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// assert_eq!(HeavyHitters::<u64>::new(10)?.capacity(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The number of items kept: at most twice the [capacity](Self::capacity) (the summary
    /// reduces to the capacity once it holds more).
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe_all(["a", "b", "a"]);
    /// assert_eq!(hh.len(), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether no item is kept (nothing observed, or only zero counts).
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// assert!(hh.is_empty());
    /// hh.observe("a");
    /// assert!(!hh.is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The total count observed, `N` (saturating).
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe_weighted("a", 5);
    /// assert_eq!(hh.total(), 5);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The most any count is below its item's true frequency (an item not kept has a true
    /// frequency of at most this). Never more than `N / (capacity + 1)`; saturating at
    /// `u64::MAX`, as the counts and the total do.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(1)?;
    /// hh.observe_all(["a", "b", "c", "a"]);
    /// assert!(hh.error() <= hh.total() / 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn error(&self) -> u64 {
        self.error
    }

    /// Observes one occurrence of an item.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe("a");
    /// assert_eq!(hh.estimate(&"a"), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe(&mut self, item: T) {
        self.observe_weighted(item, 1);
    }

    /// Observes `count` occurrences of an item.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe_weighted(7_u64, 100);
    /// assert_eq!(hh.estimate(&7), 100);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_weighted(&mut self, item: T, count: u64) {
        if count == 0 {
            return;
        }
        self.total = self.total.saturating_add(count);
        let hash = item.hash64(self.seed);
        // One probe of the table, found or not.
        match self.counts.entry(hash, |c| c.item == item, |c| c.hash) {
            Entry::Occupied(mut found) => {
                let counter = found.get_mut();
                counter.count = counter.count.saturating_add(count);
            }
            Entry::Vacant(slot) => {
                slot.insert(Counter { hash, item, count });
            }
        }
        self.reduce_if_full();
    }

    /// Reduces once the summary holds more than twice its capacity: a reduction is then
    /// O(capacity) once per `capacity` new items, O(1) amortized, with the same guarantee.
    /// (Merging with an empty summary therefore never reduces: the empty identity is exact.)
    fn reduce_if_full(&mut self) {
        if self.counts.len() > 2 * self.capacity {
            self.reduce();
        }
    }

    /// Observes one occurrence of every item of an iterator.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe_all(["a", "b", "a"]);
    /// assert_eq!(hh.estimate(&"a"), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I) {
        items.into_iter().for_each(|item| self.observe(item));
    }

    /// Keeps at most `capacity` counters: subtracts the `(capacity+1)`-th largest count from
    /// every counter and drops those that reach zero. At least `capacity + 1` counters lose
    /// that much, so the total lost is at least `(capacity + 1)` times it, which is why the
    /// accumulated error stays at most `N / (capacity + 1)`.
    fn reduce(&mut self) {
        if self.counts.len() <= self.capacity {
            return;
        }
        let mut values: Vec<u64> = self.counts.iter().map(|c| c.count).collect();
        let (_, &mut cut, _) = values.select_nth_unstable_by(self.capacity, |a, b| b.cmp(a));
        self.counts.retain(|c| {
            c.count -= cut.min(c.count);
            c.count > 0
        });
        self.error = self.error.saturating_add(cut);
    }

    /// The kept count of an item: at most its true frequency, and at least that minus
    /// [`error`](Self::error). 0 for an item not kept.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe_all([1_u64, 1, 2]);
    /// assert_eq!((hh.estimate(&1), hh.estimate(&3)), (2, 0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn estimate(&self, item: &T) -> u64 {
        self.counts.find(item.hash64(self.seed), |c| c.item == *item).map_or(0, |c| c.count)
    }

    /// The interval that certainly holds an item's frequency: `[estimate, estimate + error]`.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(2)?;
    /// hh.observe_all([1_u64, 1, 1, 2, 3, 4, 5, 1]);
    /// assert!(hh.bounds(&1).contains(4.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn bounds(&self, item: &T) -> Bounds {
        let estimate = self.estimate(item);
        Bounds { lower: estimate as f64, upper: estimate.saturating_add(self.error) as f64 }
    }

    /// The `n` kept items with the largest counts, largest first (ties by the items' seeded
    /// hash). Items that share their count and their hash, which only items crafted to
    /// collide do, come in the order the summary holds them, which depends on its history:
    /// the one answer of a summary that its decoded copy may give in another order.
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe_all([3_u64, 1, 3, 2, 3, 1]);
    /// assert_eq!(hh.top(2), vec![(3, 3), (1, 2)]);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn top(&self, n: usize) -> Vec<(T, u64)> {
        // Order references and clone only the `n` items returned: a selection, then a sort of
        // the selected.
        // Select on (count, hash) pairs, and find the few counters selected afterwards: the
        // pairs are half the size of references beside them, and moving them dominates.
        let order = |a: &(u64, u64), b: &(u64, u64)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        let mut keys: Vec<(u64, u64)> = self.counts.iter().map(|c| (c.count, c.hash)).collect();
        if n < keys.len() {
            keys.select_nth_unstable_by(n, order);
            keys.truncate(n);
        }
        keys.sort_unstable_by(order);
        let mut out = Vec::with_capacity(keys.len());
        for group in keys.chunk_by(|a, b| a == b) {
            // Items of one hash and count (crafted ones only) are taken in table order.
            let (count, hash) = group[0];
            let same = self.counts.iter_hash(hash).filter(|c| c.hash == hash && c.count == count);
            out.extend(same.take(group.len()).map(|c| (c.item.clone(), count)));
        }
        out
    }

    /// The items whose frequency is above `phi · N`, under the chosen [`Guarantee`], with the
    /// interval of each: `NoFalsePositives` lists the items whose lower bound is above it,
    /// `NoFalseNegatives` those whose upper bound is. `phi` must be in `(0, 1]`.
    ///
    /// ```
    /// use synopses::frequency::{Guarantee, HeavyHitters};
    ///
    /// let mut hh = HeavyHitters::new(20)?;
    /// hh.observe_all((0..10_000_u64).map(|i| i % 4)); // four keys, a quarter each
    /// let frequent = hh.frequent(0.2, Guarantee::NoFalsePositives)?;
    /// assert_eq!(frequent.len(), 4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn frequent(&self, phi: f64, guarantee: Guarantee) -> Result<Vec<(T, Bounds)>, ConfigError> {
        if !(phi > 0.0 && phi <= 1.0) {
            return Err(ConfigError::new("phi", phi, "a fraction in (0, 1]"));
        }
        let threshold = phi * self.total as f64;
        Ok(self
            .sorted()
            .into_iter()
            .map(|(item, count)| {
                // The same interval as `bounds`, from the count in hand rather than a second
                // lookup (and hash) of the item.
                (item, Bounds { lower: count as f64, upper: count.saturating_add(self.error) as f64 })
            })
            .filter(|(_, b)| match guarantee {
                Guarantee::NoFalsePositives => b.lower > threshold,
                Guarantee::NoFalseNegatives => b.upper > threshold,
            })
            .collect())
    }

    /// The kept items and counts, largest first, ties by the items' seeded hash.
    fn sorted(&self) -> Vec<(T, u64)> {
        self.top(self.counts.len())
    }

    /// Bytes of memory the summary holds, approximately: the struct, and the hash table's
    /// slots (one item and one count each, plus a control byte).
    ///
    /// ```
    /// # use synopses::frequency::HeavyHitters;
    /// let hh = HeavyHitters::<u64>::new(10)?;
    /// assert!(hh.size_in_bytes() >= std::mem::size_of::<HeavyHitters<u64>>());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.counts.capacity() * (std::mem::size_of::<Counter<T>>() + 1)
    }

    /// Merges `other` into `self` (Agarwal et al.): adds the counts item by item, then, if that
    /// leaves more than twice `capacity` counters, reduces to `capacity`. The result keeps the guarantee for the union of the
    /// two streams: every count within the merged [`error`](Self::error) ≤ `N/(capacity+1)`
    /// of its frequency. The capacities and seeds must match; otherwise a [`MergeError`] is
    /// returned and `self` is unchanged.
    ///
    /// ```
    /// use synopses::frequency::HeavyHitters;
    ///
    /// let mut a = HeavyHitters::new(10)?;
    /// let mut b = HeavyHitters::new(10)?;
    /// a.observe_weighted("x", 3);
    /// b.observe_weighted("x", 4);
    /// a.merge(&b)?;
    /// assert_eq!(a.estimate(&"x"), 7);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("capacity", self.capacity, other.capacity)?;
        MergeError::check("seed", self.seed, other.seed)?;
        self.counts.reserve(other.counts.len(), |c| c.hash);
        for theirs in &other.counts {
            match self.counts.entry(theirs.hash, |c| c.item == theirs.item, |c| c.hash) {
                Entry::Occupied(mut found) => {
                    let mine = found.get_mut();
                    mine.count = mine.count.saturating_add(theirs.count);
                }
                Entry::Vacant(slot) => {
                    slot.insert(theirs.clone());
                }
            }
        }
        self.total = self.total.saturating_add(other.total);
        self.error = self.error.saturating_add(other.error);
        self.reduce_if_full();
        Ok(())
    }
}

impl<T: Item + Hashable + Clone + Eq> HeavyHitters<T> {
    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::frequency::HeavyHitters;
    ///
    /// let mut x = HeavyHitters::new(10)?;
    /// x.observe_all(["a".to_string(), "bc".to_string(), "a".to_string()]);
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        let seed = if self.seed == DEFAULT_SEED { 0 } else { 8 };
        let counters: usize = self.counts.iter().map(|c| c.item.encoded_len() + 8).sum();
        ENVELOPE_LEN + 24 + seed + counters
    }

    /// Encodes the summary in the crate's [binary format](crate::codec), family code 5, for
    /// items that have an [`Item`] encoding.
    ///
    /// Body: capacity (u32; with bit 31 set, a seed (u64) follows: a summary of the default
    /// seed is written without it, as before seeds were offered), total (u64), error (u64),
    /// number of counters (u32), then each item's encoding and count (u64): largest count
    /// first, then by the items' seeded hash, then by their encodings.
    ///
    /// ```
    /// use synopses::frequency::HeavyHitters;
    ///
    /// let mut hh = HeavyHitters::new(10)?;
    /// hh.observe("a".to_string());
    /// let back = HeavyHitters::<String>::from_bytes(&hh.to_bytes())?;
    /// assert_eq!(back, hh);
    /// let seeded = HeavyHitters::<String>::with_seed(10, 7)?;
    /// assert_eq!(HeavyHitters::<String>::from_bytes(&seeded.to_bytes())?.seed(), 7);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        // Every item's encoding in one buffer, each counter with its span of it.
        let mut encoded = Vec::new();
        let mut sorted: Vec<(&Counter<T>, std::ops::Range<usize>)> = self
            .counts
            .iter()
            .map(|c| {
                let start = encoded.len();
                c.item.encode(&mut encoded);
                (c, start..encoded.len())
            })
            .collect();
        let bytes = |span: &std::ops::Range<usize>| encoded.get(span.clone()).unwrap_or_default();
        sorted.sort_unstable_by(|(a, x), (b, y)| canonical((a.count, a.hash, bytes(x)), (b.count, b.hash, bytes(y))));
        let seeded = self.seed != DEFAULT_SEED;
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_u32(self.capacity as u32 | if seeded { SEEDED } else { 0 });
        if seeded {
            w.put_u64(self.seed);
        }
        w.put_u64(self.total);
        w.put_u64(self.error);
        w.put_u32(sorted.len() as u32);
        for (counter, span) in &sorted {
            w.put_bytes(bytes(span));
            w.put_u64(counter.count);
        }
        w.finish()
    }

    /// Decodes a summary written by [`to_bytes`](Self::to_bytes), validating every field:
    /// the capacity and seed, at most twice as many counters, each non-zero, in the canonical
    /// order (so one summary has one encoding), no item twice, and the counts and the error
    /// within what the total allows (`Σ counts + (capacity + 1)·error ≤ N`: each reduction
    /// took its cut from at least `capacity + 1` counters).
    ///
    /// ```
    /// use synopses::frequency::HeavyHitters;
    ///
    /// assert!(HeavyHitters::<u64>::from_bytes(b"not a summary").is_err());
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let invalid = |field, reason| DecodeError::InvalidField { field, reason };
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let head = r.u32()?;
        let seed = if head & SEEDED != 0 { r.u64()? } else { DEFAULT_SEED };
        if head & SEEDED != 0 && seed == DEFAULT_SEED {
            return Err(invalid("seed", "the default seed is written without the seed flag"));
        }
        let capacity = (head & !SEEDED) as usize;
        let total = r.u64()?;
        let error = r.u64()?;
        let n = r.u32()? as usize;
        let mut hh = Self::with_seed(capacity, seed).map_err(|_| invalid("capacity", "outside 1..=2^24"))?;
        if n > 2 * capacity {
            return Err(invalid("counters", "more than twice the capacity"));
        }
        // Each counter takes at least its 8-byte count.
        r.expect_items(n, 8)?;
        let mut sum: u128 = 0;
        let mut previous: Option<(u64, u64, &[u8])> = None;
        for _ in 0..n {
            let (item, item_bytes) = r.item_and_bytes::<T>()?;
            let count = r.u64()?;
            if count == 0 {
                return Err(invalid("counters", "a zero count"));
            }
            // The canonical order: count descending, then the seeded hash ascending, then the
            // item's encoding ascending.
            let hash = item.hash64(seed);
            let in_order = previous.is_none_or(|before| canonical(before, (count, hash, item_bytes)).is_lt());
            if !in_order {
                return Err(invalid("counters", "not in the canonical order"));
            }
            previous = Some((count, hash, item_bytes));
            if hh.counts.find(hash, |c| c.item == item).is_some() {
                return Err(invalid("counters", "an item twice"));
            }
            sum += u128::from(count);
            hh.counts.insert_unique(hash, Counter { hash, item, count }, |c| c.hash);
        }
        r.finish()?;
        let accounted = sum + (capacity as u128 + 1) * u128::from(error);
        if accounted > u128::from(total) && total != u64::MAX {
            return Err(invalid("total", "below the counts and the error"));
        }
        hh.total = total;
        hh.error = error;
        Ok(hh)
    }
}

/// The canonical order of counters, `(count, seeded hash, item's encoding)`: count
/// descending, then hash ascending, then encoding ascending. One summary, one encoding.
fn canonical(a: (u64, u64, &[u8]), b: (u64, u64, &[u8])) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2))
}

/// The flag of the capacity field that says a seed follows.
const SEEDED: u32 = 1 << 31;

impl<T: PartialEq> PartialEq for HeavyHitters<T> {
    /// The same configuration, total, error and counters (items and counts).
    fn eq(&self, other: &Self) -> bool {
        self.capacity == other.capacity
            && self.seed == other.seed
            && self.total == other.total
            && self.error == other.error
            && self.counts.len() == other.counts.len()
            && self
                .counts
                .iter()
                .all(|c| other.counts.find(c.hash, |o| o.item == c.item).is_some_and(|o| o.count == c.count))
    }
}

impl<T: Eq> Eq for HeavyHitters<T> {}

impl<T> fmt::Debug for HeavyHitters<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeavyHitters")
            .field("capacity", &self.capacity)
            .field("seed", &self.seed)
            .field("total", &self.total)
            .field("error", &self.error)
            .field("counters", &self.counts.len())
            .finish()
    }
}

impl<T: Hashable + Clone + Eq> Operator<T> for HeavyHitters<T> {
    fn observe(&mut self, item: T) {
        HeavyHitters::observe(self, item);
    }

    fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I) {
        HeavyHitters::observe_all(self, items);
    }
}

impl<T: Hashable + Clone + Eq> Extend<T> for HeavyHitters<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.observe_all(iter);
    }
}

impl<T: Hashable + Clone + Eq> Mergeable for HeavyHitters<T> {
    fn size_in_bytes(&self) -> usize {
        HeavyHitters::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        HeavyHitters::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { capacity: self.capacity, seed: self.seed, total: 0, error: 0, counts: HashTable::new() }
    }
}

codec_impl!([T: Item + Hashable + Clone + Eq] HeavyHitters<T>, 5);
