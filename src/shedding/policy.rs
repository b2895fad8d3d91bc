//! Drop policies: which items a load shedder keeps. The teaching text is in the
//! [family docs](super).

use std::fmt;

use crate::core::random::{Stream, part_stream};
use crate::core::{MergeError, Weight};
use crate::hash::{DEFAULT_SEED, Hashable};

/// Decides, item by item, which items a [`LoadShedder`](super::LoadShedder) keeps when it
/// should keep a fraction `p` of them, and with what weight each kept item stands for the
/// items dropped.
///
/// The policies of this crate: [`RandomDrop`] and [`KeyHashDrop`] keep each item with
/// probability `p` and give it weight `1/p`, so sums and counts downstream stay unbiased;
/// [`SemanticDrop`] keeps the most useful items and gives them weight 1.
///
/// ```
/// use synopses::shedding::{DropPolicy, KeyHashDrop};
///
/// let mut policy = KeyHashDrop::new();
/// let kept = (0..10_000_u64).filter(|x| policy.decide(x, 0.25).is_some()).count();
/// assert!((2_300..2_700).contains(&kept));
/// ```
pub trait DropPolicy<T>: PartPolicy {
    /// Whether to keep `item` when the keep probability is `keep_probability` (in `[0, 1]`;
    /// 0 drops everything): the weight the kept item carries, or `None` to drop it.
    fn decide(&mut self, item: &T, keep_probability: f64) -> Option<Weight>;

    /// Decides every item of a slice at one keep probability, calling `kept` with each kept
    /// item and its weight, in order: the decisions of [`decide`](Self::decide) item by item.
    /// Policies override it with a faster loop (the random and key-hash policies do).
    ///
    /// ```
    /// use synopses::shedding::{DropPolicy, KeyHashDrop};
    ///
    /// let items: Vec<u64> = (0..10_000).collect();
    /// let mut kept = Vec::new();
    /// KeyHashDrop::new().decide_slice(&items, 0.1, |&x, _| kept.push(x));
    /// let mut one = KeyHashDrop::new();
    /// assert!(kept.iter().all(|x| one.decide(x, 0.1).is_some()));
    /// ```
    fn decide_slice(&mut self, items: &[T], keep_probability: f64, mut kept: impl FnMut(&T, Weight))
    where
        Self: Sized,
    {
        for item in items {
            if let Some(weight) = self.decide(item, keep_probability) {
                kept(item, weight);
            }
        }
    }
}

/// How a drop policy is copied for the parts of a partitioned stream.
///
/// ```
/// use synopses::shedding::{DropPolicy, PartPolicy, RandomDrop};
///
/// let policy = RandomDrop::new(7);
/// let mut part = policy.part(1);
/// assert!(part.decide(&5_u64, 1.0).is_some());
/// ```
pub trait PartPolicy: Sized {
    /// A policy for part `index` of a stream split over partitions: for a randomized policy,
    /// one with its own random stream (see [`Mergeable::empty_part`](crate::core::Mergeable::empty_part));
    /// distinct indexes give distinct streams.
    #[must_use]
    fn part(&self, index: u64) -> Self;

    /// Whether the states of two shedders with these policies may merge: `both_used` says
    /// whether both shed items. The key-hash policy needs the same seed (the same keys kept);
    /// the random policy refuses two used copies of one random stream (identical choices).
    fn check_merge(&self, other: &Self, both_used: bool) -> Result<(), MergeError> {
        let _ = (other, both_used);
        Ok(())
    }
}

/// The weight `1/p` of an item kept with probability `p` (1 for `p ≥ 1`; `f64::MAX` for a
/// `p` so small that `1/p` is not a float).
fn inverse(keep_probability: f64) -> Weight {
    Weight::new((1.0 / keep_probability.min(1.0)).min(f64::MAX)).unwrap_or(Weight::ONE)
}

/// Bits of the keep probability in the middle range, where items are decided 64 at a time.
const MASK_BITS: u32 = 24;

/// Keeps each item independently with probability `p`, with weight `1/p`, drawing few random
/// numbers: about `min(p, 1 − p)` per item, and far fewer instructions than one draw per item.
///
/// * Below 3/8 or above 5/8 it decides with geometric runs: it draws the number of items to
///   drop before the next keep (geometric with success probability `p`), or, above 1/2, to
///   keep before the next drop. A run is redrawn when `p` changes; runs of a Bernoulli
///   process have no memory, so every item is kept with the probability in force when it
///   arrives.
/// * Between 3/8 and 5/8 a run is short, and a geometric draw (a logarithm) per item or two
///   would cost more than the decision is worth; there it decides 64 items at once: with
///   `p` rounded down to 24 binary digits, `0.b₁b₂…b₂₄`, the word `M` built from the last
///   digit to the first by `M ← M | R` for a digit 1 and `M ← M & R` for a 0, with a fresh
///   random word `R` each time, has each bit set with probability exactly `0.b₁…b₂₄`,
///   independently. That is at most 24 words per 64 items (one at `p = 1/2`), and the weight
///   is the inverse of the rounded probability, so the estimates stay exactly unbiased.
///
/// ```
/// use synopses::shedding::{DropPolicy, RandomDrop};
///
/// let mut policy = RandomDrop::new(42);
/// let kept = (0..100_000_u64).filter(|x| policy.decide(x, 0.1).is_some()).count();
/// assert!((9_500..10_500).contains(&kept));
/// assert!(policy.random_draws() < 11_000); // one per kept item, not one per item
/// ```
#[derive(Clone)]
pub struct RandomDrop {
    seed: u64,
    stream: u64,
    rng: Stream,
    /// The `p` the state below was set up for (`NaN` before the first).
    p: f64,
    /// The keep probability actually used: `p`, or `p` rounded down to 24 bits.
    effective: f64,
    /// Between 3/8 and 5/8: `p` in 24 binary digits; otherwise 0.
    digits: u32,
    /// 64 decisions at a time, lowest bit next, and how many are left.
    mask: u64,
    left: u32,
    /// Otherwise: items left in the current run of the majority outcome.
    run: u64,
}

impl RandomDrop {
    /// A random policy drawing from `seed`.
    ///
    /// ```
    /// # use synopses::shedding::RandomDrop;
    /// assert_eq!(RandomDrop::new(3).seed(), 3);
    /// ```
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self::on_stream(seed, 0)
    }

    fn on_stream(seed: u64, stream: u64) -> Self {
        let rng = Stream::new(seed, stream);
        Self { seed, stream, rng, p: f64::NAN, effective: f64::NAN, digits: 0, mask: 0, left: 0, run: 0 }
    }

    /// The seed.
    ///
    /// ```
    /// # use synopses::shedding::RandomDrop;
    /// assert_eq!(RandomDrop::new(9).seed(), 9);
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The random numbers drawn so far (64-bit words and uniform numbers alike).
    ///
    /// ```
    /// use synopses::shedding::{DropPolicy, RandomDrop};
    ///
    /// let mut policy = RandomDrop::new(1);
    /// for x in 0..1000_u64 {
    ///     policy.decide(&x, 1.0);
    /// }
    /// assert_eq!(policy.random_draws(), 0); // p = 1 keeps everything without drawing
    /// ```
    #[must_use]
    pub fn random_draws(&self) -> u64 {
        self.rng.draws()
    }

    /// Sets the state up for keep probability `p`, if it changed.
    #[inline]
    fn prepare(&mut self, p: f64) {
        if p == self.p {
            return;
        }
        self.p = p;
        self.left = 0;
        self.digits = 0;
        self.effective = p;
        if (0.375..=0.625).contains(&p) {
            self.digits = (p * f64::from(1u32 << MASK_BITS)) as u32;
            self.effective = f64::from(self.digits) / f64::from(1u32 << MASK_BITS);
        } else {
            self.run = self.draw_run(p);
        }
    }

    /// Whether the next item is kept at probability `p`.
    #[inline]
    fn keep(&mut self, p: f64) -> bool {
        if p.is_nan() || p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        self.prepare(p);
        if self.digits > 0 {
            if self.left == 0 {
                self.mask = self.draw_mask();
                self.left = 64;
            }
            let keep = self.mask & 1 == 1;
            self.mask >>= 1;
            self.left -= 1;
            return keep;
        }
        let minority_next = self.run == 0;
        if minority_next {
            self.run = self.draw_run(p);
        } else {
            self.run -= 1;
        }
        // While p ≤ 1/2 the runs are of drops and the minority outcome is a keep.
        minority_next == (p <= 0.5)
    }

    /// The length of the next run of the majority outcome.
    fn draw_run(&mut self, p: f64) -> u64 {
        if p.is_nan() || p >= 1.0 || p <= 0.0 {
            return 0;
        }
        self.rng.geometric(if p <= 0.5 { p } else { 1.0 - p })
    }

    /// 64 independent decisions, each a keep with probability `digits / 2^24`: OR in a fresh
    /// random word for each binary digit 1 and AND one in for each 0, from the last digit to
    /// the first (the trailing zeros leave the word at 0 and are skipped).
    fn draw_mask(&mut self) -> u64 {
        let digits = self.digits;
        (digits.trailing_zeros()..MASK_BITS).fold(0, |mask, i| {
            let word = self.rng.bits();
            if digits >> i & 1 == 1 { mask | word } else { mask & word }
        })
    }

    /// [`DropPolicy::decide_slice`]: passes over runs of drops, or takes 64 decisions at a
    /// time, without looking at the dropped items; the decisions of `decide` item by item.
    fn decide_runs<T>(&mut self, items: &[T], keep_probability: f64, mut kept: impl FnMut(&T, Weight)) {
        let p = keep_probability;
        if items.is_empty() || p.is_nan() || p <= 0.0 {
            return;
        }
        if p >= 1.0 {
            items.iter().for_each(|item| kept(item, Weight::ONE));
            return;
        }
        self.prepare(p);
        let weight = inverse(self.effective);
        if self.digits > 0 {
            let mut at = 0;
            while at < items.len() {
                if self.left == 0 {
                    self.mask = self.draw_mask();
                    self.left = 64;
                }
                let take = self.left.min((items.len() - at).min(64) as u32);
                let mut bits = if take == 64 { self.mask } else { self.mask & ((1 << take) - 1) };
                while bits != 0 {
                    if let Some(item) = items.get(at + bits.trailing_zeros() as usize) {
                        kept(item, weight);
                    }
                    bits &= bits - 1;
                }
                self.mask = self.mask.checked_shr(take).unwrap_or(0);
                self.left -= take;
                at += take as usize;
            }
            return;
        }
        if p > 0.5 {
            // Runs of keeps, each followed by one drop.
            let mut rest = items;
            loop {
                let run = usize::try_from(self.run).unwrap_or(usize::MAX).min(rest.len());
                let (keep, after) = rest.split_at(run);
                keep.iter().for_each(|item| kept(item, weight));
                self.run -= run as u64;
                let Some((_, tail)) = after.split_first() else { return };
                self.run = self.draw_run(p);
                rest = tail;
            }
        }
        // Runs of drops, each followed by one keep.
        let mut rest = items;
        loop {
            let Some(after_run) = usize::try_from(self.run).ok().and_then(|run| rest.get(run..)) else {
                self.run -= rest.len() as u64;
                return;
            };
            let Some((item, tail)) = after_run.split_first() else {
                self.run = 0;
                return;
            };
            kept(item, weight);
            self.run = self.draw_run(p);
            rest = tail;
        }
    }
}

impl<T> DropPolicy<T> for RandomDrop {
    #[inline]
    fn decide(&mut self, _: &T, keep_probability: f64) -> Option<Weight> {
        let keep = self.keep(keep_probability);
        // (`keep` set `effective` up for any p in (0, 1).)
        keep.then(|| if keep_probability >= 1.0 { Weight::ONE } else { inverse(self.effective) })
    }

    /// Passes over runs of drops, or takes 64 decisions at a time, without looking at the
    /// dropped items.
    ///
    /// ```
    /// use synopses::shedding::{DropPolicy, RandomDrop};
    ///
    /// let items: Vec<u64> = (0..100_000).collect();
    /// let mut policy = RandomDrop::new(5);
    /// let mut kept = 0;
    /// policy.decide_slice(&items, 0.01, |_, _| kept += 1);
    /// assert!((800..1200).contains(&kept));
    /// ```
    fn decide_slice(&mut self, items: &[T], keep_probability: f64, kept: impl FnMut(&T, Weight)) {
        self.decide_runs(items, keep_probability, kept);
    }
}

impl PartPolicy for RandomDrop {
    fn part(&self, index: u64) -> Self {
        Self::on_stream(self.seed, part_stream(self.stream, 0, index))
    }

    fn check_merge(&self, other: &Self, both_used: bool) -> Result<(), MergeError> {
        if both_used && (self.seed, self.stream) == (other.seed, other.stream) {
            return Err(MergeError::new(
                "random stream",
                format!("seed {} stream {}", self.seed, self.stream),
                "the same (make parts with empty_part)",
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for RandomDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RandomDrop").field("seed", &self.seed).field("draws", &self.rng.draws()).finish()
    }
}

/// Keeps an item when the hash of its key falls below `p · 2^64`: every occurrence of a key
/// is kept or dropped together (a *coordinated* sample), so the number of distinct keys kept
/// estimates `p` times the number of distinct keys offered, which a random drop cannot give.
/// Kept items have weight `1/p`. Deterministic: no random numbers.
///
/// The items hash through the crate's seeded xxh3 ([`Hashable`]); a hash seed other than the
/// sketches' keeps the choice of keys independent of their hashing.
///
/// ```
/// use synopses::shedding::{DropPolicy, KeyHashDrop};
///
/// let mut policy = KeyHashDrop::new();
/// let first: Vec<bool> = (0..100_u64).map(|x| policy.decide(&x, 0.5).is_some()).collect();
/// let again: Vec<bool> = (0..100_u64).map(|x| policy.decide(&x, 0.5).is_some()).collect();
/// assert_eq!(first, again); // the same keys, every time
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHashDrop {
    seed: u64,
}

impl KeyHashDrop {
    /// The hash seed of this policy unless given another: the crate's default seed with its
    /// bits inverted, so that it differs from the sketches'.
    pub const DEFAULT_SEED: u64 = !DEFAULT_SEED;

    /// A key-hash policy with [`KeyHashDrop::DEFAULT_SEED`].
    ///
    /// ```
    /// # use synopses::shedding::KeyHashDrop;
    /// assert_eq!(KeyHashDrop::new().seed(), KeyHashDrop::DEFAULT_SEED);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self { seed: Self::DEFAULT_SEED }
    }

    /// A key-hash policy hashing with `seed`.
    ///
    /// ```
    /// # use synopses::shedding::KeyHashDrop;
    /// assert_eq!(KeyHashDrop::with_seed(4).seed(), 4);
    /// ```
    #[must_use]
    pub fn with_seed(seed: u64) -> Self {
        Self { seed }
    }

    /// The hash seed.
    ///
    /// ```
    /// # use synopses::shedding::KeyHashDrop;
    /// assert_eq!(KeyHashDrop::with_seed(4).seed(), 4);
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

impl Default for KeyHashDrop {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyHashDrop {
    /// Whether a key's hash falls below `p`, comparing the hash as a fraction of 2^64 (53 bits
    /// of it are plenty).
    #[inline]
    fn below<T: Hashable>(&self, item: &T, keep_probability: f64) -> bool {
        ((item.hash64(self.seed) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)) < keep_probability
    }

    /// The weight of a kept key: the inverse of the probability the test above really keeps
    /// it with, `⌈p·2^53⌉ / 2^53` (not `p`: the two differ for tiny `p`).
    #[inline]
    fn weight(keep_probability: f64) -> Weight {
        let scale = (1u64 << 53) as f64;
        inverse((keep_probability * scale).ceil() / scale)
    }
}

impl<T: Hashable> DropPolicy<T> for KeyHashDrop {
    #[inline]
    fn decide(&mut self, item: &T, keep_probability: f64) -> Option<Weight> {
        self.below(item, keep_probability).then(|| Self::weight(keep_probability))
    }

    /// Hashes 64 items at a time into a list of the kept ones without a branch, then hands
    /// them on: the keep-or-drop branch, unpredictable near `p = 1/2`, never runs (measured
    /// 8.7 → 2.6 ns per item at `p = 1/2`).
    fn decide_slice(&mut self, items: &[T], keep_probability: f64, mut kept: impl FnMut(&T, Weight)) {
        let weight = Self::weight(keep_probability);
        let mut chosen = [0u8; 64];
        for chunk in items.chunks(64) {
            let mut count = 0;
            for (i, item) in chunk.iter().enumerate() {
                if let Some(slot) = chosen.get_mut(count) {
                    *slot = i as u8;
                }
                count += usize::from(self.below(item, keep_probability));
            }
            for &i in chosen.iter().take(count) {
                if let Some(item) = chunk.get(usize::from(i)) {
                    kept(item, weight);
                }
            }
        }
    }
}

impl PartPolicy for KeyHashDrop {
    /// The same policy: its choices are a function of the key, coordinated across parts.
    fn part(&self, _: u64) -> Self {
        *self
    }

    /// The seeds must match: with different seeds the parts kept different keys.
    fn check_merge(&self, other: &Self, _: bool) -> Result<(), MergeError> {
        MergeError::check("key-hash seed", self.seed, other.seed)
    }
}

/// Keeps the items of highest utility, by a utility function the user gives: it learns the
/// distribution of utilities from a sliding sample of recent items and keeps an item when its
/// utility is at or above the `(1 − p)`-quantile, so about a fraction `p` of the items (more
/// when many items tie at the cut: all of them are kept). A utility that is NaN counts as the
/// lowest. Kept
/// items have weight 1: the point of a semantic drop is that the answers about useful items
/// stay exact, and totals over all items are *not* estimated without bias.
///
/// ```
/// use synopses::shedding::{DropPolicy, SemanticDrop};
///
/// // Keep the largest transactions.
/// let mut policy = SemanticDrop::new(|amount: &f64| *amount);
/// let amounts: Vec<f64> = (0..10_000).map(|i| f64::from(i % 1000)).collect();
/// let kept: Vec<f64> = amounts.iter().copied().filter(|a| policy.decide(a, 0.1).is_some()).collect();
/// assert!(kept.iter().skip(1000).all(|&a| a >= 850.0)); // once it has learnt: the top 10 % or so
/// ```
#[derive(Clone)]
pub struct SemanticDrop<F> {
    utility: F,
    /// The utilities of the last `WINDOW` items, a ring.
    recent: Vec<f64>,
    next: usize,
    /// The cut, recomputed every `WINDOW / 8` items.
    cut: f64,
    cut_p: f64,
    since_cut: usize,
}

impl<F> SemanticDrop<F> {
    /// Recent items whose utilities set the cut.
    const WINDOW: usize = 1024;

    /// A semantic policy with the utility function `utility` (higher is more useful).
    ///
    /// ```
    /// use synopses::shedding::SemanticDrop;
    /// let policy = SemanticDrop::new(|x: &u64| *x as f64);
    /// # let _ = policy;
    /// ```
    #[must_use]
    pub fn new(utility: F) -> Self {
        Self { utility, recent: Vec::new(), next: 0, cut: f64::NEG_INFINITY, cut_p: f64::NAN, since_cut: 0 }
    }

    /// The current cut: items of lower utility are dropped.
    ///
    /// ```
    /// use synopses::shedding::{DropPolicy, SemanticDrop};
    ///
    /// let mut policy = SemanticDrop::new(|x: &u64| *x as f64);
    /// for x in 0..2000_u64 {
    ///     policy.decide(&(x % 100), 0.5);
    /// }
    /// assert!((45.0..=55.0).contains(&policy.cut()));
    /// ```
    #[must_use]
    pub fn cut(&self) -> f64 {
        self.cut
    }

    fn recompute_cut(&mut self, keep_probability: f64) {
        // (NaN utilities were stored as −∞: they sort first and are dropped first.)
        let mut sorted = self.recent.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        let drop = ((1.0 - keep_probability) * sorted.len() as f64).floor() as usize;
        self.cut = sorted.get(drop).copied().unwrap_or(f64::NEG_INFINITY);
        self.cut_p = keep_probability;
        self.since_cut = 0;
    }
}

impl<T, F: Fn(&T) -> f64 + Clone> DropPolicy<T> for SemanticDrop<F> {
    fn decide(&mut self, item: &T, keep_probability: f64) -> Option<Weight> {
        if keep_probability.is_nan() || keep_probability <= 0.0 {
            return None;
        }
        let u = (self.utility)(item);
        // An item whose utility is not a number is the least useful.
        let u = if u.is_nan() { f64::NEG_INFINITY } else { u };
        if self.recent.len() < Self::WINDOW {
            self.recent.push(u);
        } else if let Some(slot) = self.recent.get_mut(self.next) {
            *slot = u;
        }
        self.next = (self.next + 1) % Self::WINDOW;
        self.since_cut += 1;
        if keep_probability != self.cut_p || self.since_cut >= Self::WINDOW / 8 {
            self.recompute_cut(keep_probability);
        }
        (keep_probability >= 1.0 || u >= self.cut).then_some(Weight::ONE)
    }
}

impl<F: Clone> PartPolicy for SemanticDrop<F> {
    /// A policy with the same utility function, learning its own cut.
    fn part(&self, _: u64) -> Self {
        Self::new(self.utility.clone())
    }
}

impl<F> fmt::Debug for SemanticDrop<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemanticDrop").field("cut", &self.cut).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_inverse_keep_probabilities_saturating_at_the_largest_float() {
        assert_eq!(inverse(0.25).get(), 4.0);
        assert_eq!(inverse(1.5).get(), 1.0);
        // 1/p is no float below about 5.6e-309: the weight is the largest one, not 1.
        assert_eq!(inverse(1e-310).get(), f64::MAX);
        assert_eq!(inverse(5e-324).get(), f64::MAX);
    }
}
