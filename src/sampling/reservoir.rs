//! The uniform reservoir: Algorithm L with explicit keys. The teaching text is in the
//! [family docs](super).

use std::fmt;

use super::state::{MAX_CAPACITY, State, VERSION};
use crate::codec::{Codec, ENVELOPE_LEN, Item, Reader, Writer, codec_impl};
use crate::core::random::largest_geometric;
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, Operator};

/// A uniform random sample of at most `capacity` items from a stream of unknown length:
/// after `n` items, every set of `min(n, capacity)` of them is equally likely to be the
/// sample. See the [family docs](super).
///
/// Each sampled item carries a uniform random key and the sample is the items of the
/// `capacity` smallest keys, so two reservoirs of two parts of a stream merge exactly into a
/// reservoir of the whole. Once full it skips ahead geometrically (Li's Algorithm L): about
/// `capacity · (1 + 2 ln(n / capacity))` random numbers in all, not one per item, and a
/// slice or an iterator of known length is skipped through without touching the skipped
/// items.
///
/// ```
/// use synopses::sampling::Reservoir;
///
/// let mut sample = Reservoir::new(5, 42)?; // seed 42: the same sample on every run
/// sample.observe_all(1..=1_000_000_u64);
/// assert_eq!((sample.len(), sample.seen()), (5, 1_000_000));
/// assert!(sample.iter().all(|&x| (1..=1_000_000).contains(&x)));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Reservoir<T> {
    state: State<T>,
    /// Once full: the items still to pass over before the next one enters.
    skip: u64,
}

impl<T> Reservoir<T> {
    /// An empty reservoir of at most `capacity` items (`1..=2^24`), drawing its random
    /// numbers from `seed`.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    ///
    /// let r = Reservoir::<u64>::new(100, 7)?;
    /// assert_eq!((r.capacity(), r.seed(), r.len()), (100, 7, 0));
    /// assert!(Reservoir::<u64>::new(0, 7).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(capacity: usize, seed: u64) -> Result<Self, ConfigError> {
        Ok(Self { state: State::new(capacity, capacity, seed)?, skip: 0 })
    }

    /// The most items the sample holds, `k`.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// assert_eq!(Reservoir::<u8>::new(3, 0)?.capacity(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.state.sample.capacity()
    }

    /// The seed of the random numbers.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// assert_eq!(Reservoir::<u8>::new(3, 9)?.seed(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.state.seed
    }

    /// The number of items observed, `n` (summed over merges, saturating at `u64::MAX`).
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(3, 0)?;
    /// r.observe_all(0..10_u64);
    /// assert_eq!(r.seen(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.state.seen
    }

    /// The number of items in the sample, `min(n, k)`.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(3, 0)?;
    /// r.observe_all(["a", "b"]);
    /// assert_eq!(r.len(), 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.state.sample.len()
    }

    /// Whether the sample holds no item.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// assert!(Reservoir::<u8>::new(3, 0)?.is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.state.sample.len() == 0
    }

    /// The probability with which each observed item is in the sample, `min(n, k) / n` (1
    /// before any item): the Horvitz–Thompson weight of a sampled item is its inverse, so
    /// `n / min(n, k)` times a sample sum estimates the stream's sum without bias.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(10, 0)?;
    /// r.observe_all(0..1000_u64);
    /// assert_eq!(r.inclusion_probability(), 0.01);
    /// let estimate = r.iter().sum::<u64>() as f64 / r.inclusion_probability();
    /// assert!((estimate / 499_500.0 - 1.0).abs() < 0.6); // 10 items: a rough estimate
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn inclusion_probability(&self) -> f64 {
        if self.state.seen == 0 { 1.0 } else { self.len() as f64 / self.state.seen as f64 }
    }

    /// The sampled items, ordered by their random keys (a uniformly random order): one state
    /// lists its sample in one order, however it was built, so a reservoir decoded from
    /// [`to_bytes`](Self::to_bytes) lists it as the encoded one does (but for items of equal
    /// keys, a coincidence of 52-bit draws). Sorts the `k` keys.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(3, 0)?;
    /// r.observe_all(["a", "b"]);
    /// let mut items: Vec<&&str> = r.iter().collect();
    /// items.sort();
    /// assert_eq!(items, [&"a", &"b"]);
    ///
    /// let mut r = Reservoir::new(3, 0)?;
    /// r.observe_all(0..1000_u64);
    /// assert!(r.iter().eq(Reservoir::<u64>::from_bytes(&r.to_bytes())?.iter()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        // The heap's layout depends on the order of arrival, which decoding does not replay.
        self.state.sample.sorted().into_iter().map(|k| &k.item)
    }

    /// The sampled items, ordered by their random keys (itself a uniformly random order).
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(3, 0)?;
    /// r.observe_all(0..100_u64);
    /// assert_eq!(r.into_vec().len(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn into_vec(self) -> Vec<T> {
        self.state.sample.into_sorted_items()
    }

    /// The same sample (keys, count and random stream unchanged) with each item replaced by
    /// `f(item)`: sample record ids, then keep the records; or turn items into a form that
    /// encodes. The mapped reservoir continues and merges as the original would have.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut ids = Reservoir::new(3, 9)?;
    /// ids.observe_all(0..1000_u32);
    /// let names = ids.clone().map(|id| format!("user-{id}"));
    /// assert!(names.iter().eq(ids.iter().map(|id| format!("user-{id}")).collect::<Vec<_>>().iter()));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Reservoir<U> {
        Reservoir { state: self.state.map(f), skip: self.skip }
    }

    /// How many random numbers the reservoir has drawn: `k` while filling, then two per item
    /// that enters (its key and the next skip), about `k · (1 + 2 ln(n/k))` in all.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(100, 0)?;
    /// r.observe_all(0..1_000_000_u64);
    /// assert!(r.random_draws() < 3 * 100 * (1 + 9)); // ln(10^4) ≈ 9.2
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn random_draws(&self) -> u64 {
        self.state.rng.draws()
    }

    /// Observes one item.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(2, 0)?;
    /// r.observe("x");
    /// assert_eq!(r.iter().next(), Some(&"x"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe(&mut self, item: T) {
        self.state.seen = self.state.seen.saturating_add(1);
        if !self.state.sample.is_full() {
            let key = self.state.rng.uniform();
            self.state.sample.offer(key, item);
            if self.state.sample.is_full() {
                self.draw_skip();
            }
        } else if self.skip > 0 {
            self.skip -= 1;
        } else {
            self.enter(item);
        }
    }

    /// Observes every item of an iterator. When the iterator knows its exact length (its
    /// `size_hint` is exact, as for slices, ranges and vectors), skipped items are passed
    /// over with `nth`, which for those iterators does not touch them.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(10, 1)?;
    /// r.observe_all(0..u64::MAX / 2); // 2^62 items in microseconds: only the sampled ones are visited
    /// assert_eq!(r.seen(), u64::MAX / 2);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I) {
        self.observe_all_with(items, |item| item);
    }

    /// Observes the items of `items`, making a `T` (`make`) only of those that enter: the
    /// skipped ones are passed over with `nth` when the iterator knows its exact length (which
    /// for slices, ranges and vectors does not look at them), and counted past one by one
    /// otherwise (`take(skip).count()`: 0.4 ns an item, where a loop of `observe` took 1.3).
    /// The same draws, at the same items, as [`observe`](Self::observe) one by one.
    ///
    /// Use it where making an item costs: sample row numbers of a column and read only the
    /// sampled rows.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let column: Vec<u64> = (0..100_000).collect();
    /// let (mut read, mut r) = (0, Reservoir::new(10, 3)?);
    /// r.observe_all_with(0..column.len(), |row| {
    ///     read += 1;
    ///     column[row].to_string()
    /// });
    /// assert_eq!((r.len(), r.seen()), (10, 100_000));
    /// assert!(read < 200); // k · (1 + ln(n/k)) ≈ 100 rows read, not 100 000
    /// let mut same = Reservoir::new(10, 3)?;
    /// same.observe_all(column.iter().map(|v| v.to_string()));
    /// assert!(r.iter().eq(same.iter()));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all_with<U>(&mut self, items: impl IntoIterator<Item = U>, make: impl FnMut(U) -> T) {
        self.observe_iter(items.into_iter(), make);
    }

    fn observe_iter<U>(&mut self, mut items: impl Iterator<Item = U>, mut convert: impl FnMut(U) -> T) {
        loop {
            if !self.state.sample.is_full() || self.skip == 0 {
                match items.next() {
                    Some(item) => self.observe(convert(item)),
                    None => return,
                }
                continue;
            }
            let (low, high) = items.size_hint();
            if high == Some(low) {
                let left = low as u64;
                if self.skip >= left {
                    // Every remaining item is skipped.
                    self.skip -= left;
                    self.state.seen = self.state.seen.saturating_add(left);
                    return;
                }
                let skipped = self.skip;
                let Some(item) = items.nth(skipped as usize) else {
                    // The length was not what the iterator said: count what it claimed.
                    self.skip = 0;
                    self.state.seen = self.state.seen.saturating_add(left);
                    return;
                };
                self.state.seen = self.state.seen.saturating_add(skipped + 1);
                self.skip = 0;
                self.enter(convert(item));
            } else {
                // (A skip beyond `usize::MAX`, on a 32-bit target, takes several rounds.)
                let step = usize::try_from(self.skip).unwrap_or(usize::MAX);
                let passed = items.by_ref().take(step).count();
                self.skip -= passed as u64;
                self.state.seen = self.state.seen.saturating_add(passed as u64);
                if passed < step {
                    return; // the iterator ended first
                }
            }
        }
    }

    /// Observes the items of a slice, cloning only those that enter the sample; time grows
    /// with `k · log(n/k)`, not with `n`.
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let names: Vec<String> = (0..100_000).map(|i| format!("user-{i}")).collect();
    /// let mut r = Reservoir::new(5, 3)?;
    /// r.observe_slice(&names);
    /// assert_eq!((r.len(), r.seen()), (5, 100_000));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_slice(&mut self, items: &[T])
    where
        T: Clone,
    {
        self.observe_iter(items.iter(), T::clone);
    }

    /// Merges `other` in: the sample of the two streams together, exactly distributed as a
    /// reservoir that saw both (its items are the `k` smallest keys of both samples). The
    /// capacities must match; two non-empty reservoirs drawing the same random stream (one
    /// made from the other by `empty_like`, or two decoded copies) are refused, because their
    /// identical keys would bias the union: make parts with
    /// [`empty_part`](Mergeable::empty_part) or distinct seeds.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    ///
    /// let mut a = Reservoir::new(3, 1)?;
    /// let mut b = Reservoir::new(3, 2)?;
    /// a.observe_all(0..1000_u64);
    /// b.observe_all(1000..2000_u64);
    /// a.merge(&b)?;
    /// assert_eq!((a.seen(), a.len()), (2000, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError>
    where
        T: Clone,
    {
        self.state.merge(&other.state)?;
        if self.state.sample.is_full() {
            // The threshold may have fallen; a geometric skip has no memory, so redraw it.
            self.draw_skip();
        }
        Ok(())
    }

    /// Bytes of memory held: the struct and the sampled items with their keys (not memory the
    /// items own on the heap).
    ///
    /// ```
    /// # use synopses::sampling::Reservoir;
    /// let mut r = Reservoir::new(100, 0)?;
    /// r.observe_all(0..1000_u64);
    /// assert!(r.size_in_bytes() >= 100 * 16);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.state.entry_bytes()
    }

    /// Adds `item` with a key uniform below the threshold, in place of the largest key, then
    /// draws the next skip. Called when the sample is full and the skip has run out.
    fn enter(&mut self, item: T) {
        let threshold = self.state.sample.threshold().unwrap_or(1.0);
        let key = self.state.rng.uniform() * threshold;
        self.state.sample.offer(key, item);
        self.draw_skip();
    }

    /// The number of items until one draws a key below the threshold `W`: geometric with
    /// success probability `W`.
    fn draw_skip(&mut self) {
        let threshold = self.state.sample.threshold().unwrap_or(1.0);
        self.skip = self.state.rng.geometric(threshold);
    }
}

impl<T: Item> Reservoir<T> {
    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    ///
    /// let mut x = Reservoir::new(2, 5)?;
    /// x.observe_all(["a".to_string(), "bc".to_string(), "d".to_string()]);
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 4 + self.state.encoded_len() + 8
    }

    /// Encodes the reservoir in the crate's [binary format](crate::codec), family code 7,
    /// format version 2.
    ///
    /// Body: capacity (u32), seed (u64), stream (u64), seen (u64), the random generator (the
    /// 32 bytes of xoshiro256++'s state, then its draw count, u64), the number of sampled
    /// items (u32), each item's key (f64) and [`Item`] encoding, smallest key first, and last
    /// the skip: the items still to pass over before the next one enters (u64; 0 while the
    /// sample is not full). With the generator and the skip stored, a decoded reservoir
    /// continues exactly as this one would: the same sample, the same bytes.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    ///
    /// let mut r = Reservoir::new(2, 5)?;
    /// r.observe_all([10_u64, 20, 30]);
    /// // Envelope 12, capacity to count 32, generator 40, entries 2 × 16, skip 8.
    /// assert_eq!(r.to_bytes().len(), 12 + 32 + 40 + 2 * 16 + 8);
    ///
    /// // Encoded mid-stream, decoded, and continued: the uninterrupted run, bit for bit.
    /// let mut resumed = Reservoir::<u64>::from_bytes(&r.to_bytes())?;
    /// r.observe_all(40..10_000_u64);
    /// resumed.observe_all(40..10_000_u64);
    /// assert_eq!(resumed.to_bytes(), r.to_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::versioned(Self::FAMILY, Self::VERSION, self.encoded_len());
        w.put_u32(self.capacity() as u32);
        self.state.encode(&mut w);
        w.put_u64(self.skip);
        w.finish()
    }

    /// Decodes a reservoir written by [`to_bytes`](Self::to_bytes), validating every field:
    /// a capacity in range, `min(seen, capacity)` items, keys in (0, 1) in increasing order,
    /// a generator state other than all zeros, and a skip the generator could have drawn at
    /// the sample's threshold (0 while the sample is not full).
    ///
    /// Also reads format version 1, which holds no generator: a reservoir decoded from it
    /// continues on a random stream derived from its seed, stream and `seen`, with a fresh
    /// skip, which keeps its sample uniform.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    ///
    /// let mut r = Reservoir::new(2, 5)?;
    /// r.observe_all(["a".to_string(), "b".to_string(), "c".to_string()]);
    /// assert_eq!(Reservoir::<String>::from_bytes(&r.to_bytes())?, r);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (mut r, version) = Reader::open_versions(bytes, Self::FAMILY, Self::VERSION)?;
        let capacity = r.u32()? as usize;
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(DecodeError::InvalidField { field: "capacity", reason: "outside 1..=2^24" });
        }
        let state = State::decode(&mut r, version, capacity, |key, _| key > 0.0 && key < 1.0)?;
        let mut out = Self { state, skip: 0 };
        if version >= 2 {
            out.skip = r.u64()?;
            // A skip is drawn once the sample is full, at its threshold W, and only counts
            // down until the threshold changes (which redraws it).
            let largest = out.state.sample.threshold().map_or(0, largest_geometric);
            if out.skip > largest {
                return Err(DecodeError::InvalidField {
                    field: "skip",
                    reason: "beyond what the generator draws at the sample's threshold (0 before it is full)",
                });
            }
        } else if out.state.sample.is_full() {
            out.draw_skip();
        }
        r.finish()?;
        Ok(out)
    }
}

impl<T: PartialEq> PartialEq for Reservoir<T> {
    /// The same configuration, count and sample (items and keys); the state of the random
    /// generator and the skip, which decide only what happens next, are not compared (the
    /// encodings of two reservoirs compare them too).
    fn eq(&self, other: &Self) -> bool {
        self.state.same(&other.state)
    }
}

impl<T> fmt::Debug for Reservoir<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservoir")
            .field("capacity", &self.capacity())
            .field("seen", &self.state.seen)
            .field("len", &self.len())
            .field("seed", &self.state.seed)
            .finish()
    }
}

impl<T> Operator<T> for Reservoir<T> {
    fn observe(&mut self, item: T) {
        Reservoir::observe(self, item);
    }

    fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I) {
        Reservoir::observe_all(self, items);
    }
}

impl<'a, T: Clone> Operator<&'a T> for Reservoir<T> {
    fn observe(&mut self, item: &'a T) {
        Reservoir::observe(self, item.clone());
    }

    /// Clones only the items that enter the sample.
    fn observe_all<I: IntoIterator<Item = &'a T>>(&mut self, items: I) {
        self.observe_iter(items.into_iter(), T::clone);
    }
}

impl<T> Extend<T> for Reservoir<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        Reservoir::observe_all(self, items);
    }
}

impl<T: Clone> Mergeable for Reservoir<T> {
    fn size_in_bytes(&self) -> usize {
        Reservoir::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        Reservoir::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self { state: self.state.empty_like(), skip: 0 }
    }

    fn empty_part(&self, index: u64) -> Self {
        Self { state: self.state.empty_part(index), skip: 0 }
    }
}

codec_impl!([T: Item] Reservoir<T>, 7, version VERSION);
