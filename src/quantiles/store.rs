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
    pub(crate) fn add(&mut self, key: i32, weight: u64, limit: usize) {
        if self.counts.is_empty() {
            self.offset = key;
            self.counts.push(weight);
            return;
        }
        let top = self.top().max(i64::from(key));
        let floor = top - limit as i64 + 1;
        if top > self.top() {
            let grow = (top - self.top()) as usize;
            self.counts.resize(self.counts.len() + grow, 0);
        }
        if floor > i64::from(self.offset) {
            // Collapse: everything below the window's floor goes into its lowest bucket.
            let cut = (floor - i64::from(self.offset)) as usize;
            let below = self.counts[..cut].iter().fold(0_u64, |s, &c| s.saturating_add(c));
            self.counts.drain(..cut);
            self.offset = floor as i32;
            self.counts[0] = self.counts[0].saturating_add(below);
        }
        let key = i64::from(key).max(floor) as i32;
        if key < self.offset {
            let grow = (self.offset - key) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.offset = key;
        }
        let at = (key - self.offset) as usize;
        self.counts[at] = self.counts[at].saturating_add(weight);
        self.trim();
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

    /// Adds every count of `other`, as if its keys were added here one by one.
    pub(crate) fn merge(&mut self, other: &Store, limit: usize) {
        // Its top first, so the window moves once, then the rest from the top down.
        for (i, &c) in other.counts.iter().enumerate().rev() {
            if c != 0 {
                self.add(other.offset + i as i32, c, limit);
            }
        }
    }

    /// The sum of the counts (saturating).
    pub(crate) fn total(&self) -> u64 {
        self.counts.iter().fold(0_u64, |s, &c| s.saturating_add(c))
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
    fn a_wide_limit_keeps_every_key() {
        let s = store_of(&[(3, 1), (-2, 1), (3, 1)], 100);
        assert_eq!((s.offset, s.counts.clone()), (-2, vec![1, 0, 0, 0, 0, 2]));
        assert_eq!(s.total(), 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(-2, 1), (3, 2)]);
    }
}
