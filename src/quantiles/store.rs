//! DDSketch's bucket counts: a dense window of keys, at most `limit` wide, whose lowest bucket
//! takes every count below the window (the collapse).
//!
//! The window's top is the largest key ever added, so the state is a function of the multiset
//! of keys added, whatever their order and grouping: a count lands at
//! `max(key, top − limit + 1)`. That is what makes merges exact.

/// Counts by key over `[offset, offset + counts.len())`; the first and last counts are not
/// zero (the window is as narrow as the keys added).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Store {
    pub(crate) offset: i32,
    pub(crate) counts: Vec<u64>,
}

impl Store {
    pub(crate) fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The largest key held (the window's top); the store is not empty.
    fn top(&self) -> i64 {
        i64::from(self.offset) + self.counts.len() as i64 - 1
    }

    /// Adds `weight` (above zero) at `key`, the window at most `limit` keys wide.
    #[inline]
    pub(crate) fn add(&mut self, key: i32, weight: u64, limit: usize) {
        // Within the window (the common case): one count. A key below the offset wraps to a
        // position past any window (at most 2^20 keys).
        let at = key.wrapping_sub(self.offset) as u32 as usize;
        if let Some(count) = self.counts.get_mut(at) {
            *count = count.saturating_add(weight);
            return;
        }
        self.add_outside(key, weight, limit);
    }

    /// [`add`](Self::add) for a key outside the window: a merge with the store of that one key,
    /// which moves the window (at most `limit` keys, whatever the jump: a key far above the
    /// window collapses it instead of growing it first).
    #[cold]
    fn add_outside(&mut self, key: i32, weight: u64, limit: usize) {
        self.merge(&Store { offset: key, counts: vec![weight] }, limit);
    }

    /// Drops zero counts at the ends (a collapse can leave the window's new floor empty only
    /// if nothing was below it; then the lowest held count is above it).
    fn trim(&mut self) {
        let lead = self.counts.iter().take_while(|&&c| c == 0).count();
        if lead > 0 {
            self.counts.drain(..lead);
            self.offset += lead as i32;
        }
        while self.counts.last() == Some(&0) {
            self.counts.pop();
        }
    }

    /// Adds every count of `other`, as if its keys were added here one by one: the window
    /// becomes `[top − limit + 1, top]` for the larger top, and every count lands at its key
    /// or at that window's floor.
    pub(crate) fn merge(&mut self, other: &Store, limit: usize) {
        if other.counts.is_empty() {
            return;
        }
        if self.counts.is_empty() {
            self.clone_from(other);
            return;
        }
        let top = self.top().max(other.top());
        let floor = top - limit as i64 + 1;
        let low = floor.max(i64::from(self.offset.min(other.offset)));
        let mut counts = vec![0_u64; (top - low + 1) as usize];
        for store in [&*self, other] {
            // Keys below `low` (only below the floor) go into its bucket; the rest, slice to slice.
            let start = i64::from(store.offset) - low;
            let cut = ((-start).max(0) as usize).min(store.counts.len());
            let below = store.counts[..cut].iter().fold(0_u64, |s, &c| s.saturating_add(c));
            counts[0] = counts[0].saturating_add(below);
            let at = start.max(0) as usize;
            let rest = &store.counts[cut..];
            counts[at..at + rest.len()].iter_mut().zip(rest).for_each(|(a, &b)| *a = a.saturating_add(b));
        }
        self.offset = low as i32;
        self.counts = counts;
        self.trim();
    }

    /// The sum of the counts (saturating).
    pub(crate) fn total(&self) -> u64 {
        self.counts.iter().fold(0_u64, |s, &c| s.saturating_add(c))
    }

    /// The key of the count that takes the running total `seen` past `target`, walking the
    /// keys up (or down); `seen` ends at the total so far.
    ///
    /// Blocks of 16 counts that the total does not pass are skipped with one sum (which the
    /// compiler vectorizes: p50 of a 950-bucket sketch in 240 ns, against 470 ns count by
    /// count, measured), where the
    /// block's counts are small enough not to overflow it; the walk is in 128 bits, which no
    /// sum of at most 2^21 counts of 64 bits overflows.
    pub(crate) fn find(&self, ascending: bool, seen: &mut u128, target: u128) -> Option<i32> {
        const BLOCK: usize = 16;
        let n = self.counts.len();
        let skippable = |block: &[u64]| {
            // Each count below 2^59: their sum stays below 2^63.
            (block.iter().fold(0, |a, &c| a | c) < 1 << 59).then(|| u128::from(block.iter().sum::<u64>()))
        };
        let mut done = 0;
        while done + BLOCK <= n {
            let block =
                if ascending { &self.counts[done..done + BLOCK] } else { &self.counts[n - done - BLOCK..n - done] };
            match skippable(block) {
                Some(sum) if *seen + sum <= target => {
                    *seen += sum;
                    done += BLOCK;
                }
                _ => break,
            }
        }
        let mut walk = |&(_, &c): &(usize, &u64)| {
            *seen += u128::from(c);
            *seen > target
        };
        let at = if ascending {
            self.counts.iter().enumerate().skip(done).find(&mut walk)
        } else {
            self.counts[..n - done].iter().enumerate().rev().find(&mut walk)
        }?;
        Some(self.offset + at.0 as i32)
    }

    /// (key, count) of the non-zero counts, keys ascending.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (i32, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, c)| **c != 0).map(|(i, &c)| (self.offset + i as i32, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_of(keys: &[(i32, u64)], limit: usize) -> Store {
        let mut s = Store::default();
        keys.iter().for_each(|&(k, w)| s.add(k, w, limit));
        s
    }

    #[test]
    fn a_count_lands_at_the_window_floor_of_the_largest_key() {
        let keys = [(5, 1), (-3, 2), (9, 1), (0, 4), (2, 1)];
        let s = store_of(&keys, 4); // top 9: the window is 6..=9
        assert_eq!((s.offset, s.counts.clone()), (6, vec![8, 0, 0, 1]));
        // Whatever the order.
        let mut reversed = keys;
        reversed.reverse();
        assert_eq!(store_of(&reversed, 4), s);
        // And as a merge of two halves.
        let mut left = store_of(&keys[..2], 4);
        left.merge(&store_of(&keys[2..], 4), 4);
        assert_eq!(left, s);
    }

    #[test]
    fn merges_equal_adding_the_keys_one_by_one() {
        // Every split of a few key sets, whole stores below the other's floor included.
        let sets: [&[(i32, u64)]; 3] =
            [&[(5, 1), (-3, 2), (9, 1), (0, 4), (2, 1)], &[(-40, 3), (-39, 1), (30, 2)], &[(7, 1), (7, 2), (8, 5)]];
        for keys in sets {
            for limit in [1, 2, 4, 100] {
                for cut in 0..=keys.len() {
                    let mut left = store_of(&keys[..cut], limit);
                    left.merge(&store_of(&keys[cut..], limit), limit);
                    assert_eq!(left, store_of(keys, limit), "{keys:?} limit {limit} cut {cut}");
                    let mut right = store_of(&keys[cut..], limit);
                    right.merge(&store_of(&keys[..cut], limit), limit);
                    assert_eq!(right, store_of(keys, limit), "{keys:?} limit {limit} cut {cut}, reversed");
                }
            }
        }
    }

    #[test]
    fn find_is_the_count_by_count_walk() {
        // Small counts (blocks skipped) and huge ones (blocks walked), both directions.
        for huge in [false, true] {
            let counts: Vec<u64> =
                (0..100_u64).map(|i| if huge && i % 7 == 3 { u64::MAX / 3 } else { 1 + i % 5 }).collect();
            let store = Store { offset: -20, counts: counts.clone() };
            let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
            for ascending in [true, false] {
                for target in (0..total + 2).step_by(usize::try_from(total / 97).unwrap_or(1).max(1)) {
                    let mut seen = 0;
                    let mut naive = None;
                    let order: Vec<usize> = if ascending { (0..100).collect() } else { (0..100).rev().collect() };
                    for i in order {
                        seen += u128::from(counts[i]);
                        if seen > target {
                            naive = Some(i as i32 - 20);
                            break;
                        }
                    }
                    let mut walked = 0;
                    assert_eq!(store.find(ascending, &mut walked, target), naive, "huge {huge} target {target}");
                }
            }
        }
    }

    #[test]
    fn a_far_key_moves_the_window_without_growing_past_the_limit() {
        // Keys 2^29 apart (the ends of the doubles at the finest accuracy): the window stays
        // at most `limit` wide at every step, so no step allocates more than it.
        let mut s = Store::default();
        for (key, weight) in [(0, 1), (1 << 29, 2), (-(1 << 29), 3), (1 << 29, 1), ((1 << 29) - 2, 4)] {
            s.add(key, weight, 4);
            assert!(s.counts.len() <= 4, "{s:?}");
        }
        assert_eq!((s.offset, s.counts.clone()), ((1 << 29) - 3, vec![4, 4, 0, 3]));
    }

    #[test]
    fn a_wide_limit_keeps_every_key() {
        let s = store_of(&[(3, 1), (-2, 1), (3, 1)], 100);
        assert_eq!((s.offset, s.counts.clone()), (-2, vec![1, 0, 0, 0, 0, 2]));
        assert_eq!(s.total(), 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(-2, 1), (3, 2)]);
    }
}
