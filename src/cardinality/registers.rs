//! Registers with a history, shared by [`UltraLogLog`](super::UltraLogLog) and
//! [`ExaLogLog`](super::ExaLogLog): their layout, the update rule, the union of two registers,
//! the reduction to a coarser precision and the probabilities of the values. Each register
//! keeps the largest *update value* `u` its items gave and, in `d` more bits, which of the `d`
//! values just below `u` were given too.
//!
//! A register is `u << d | h`, where bit `d − i` of `h` says whether value `u − i` occurred,
//! for `i` in `1..=d` (the empty register is 0; the layout of the ExaLogLog paper, and for
//! `d = 2` UltraLogLog's `4u + 2·[u−1 seen] + [u−2 seen]`). Update values come from the hash
//! (see [`Shape::locate`]); with `t` extra bits of the hash each power-of-two level is split
//! into `2^t` values, so value `k` has probability
//!
//! ```text
//!   ρ_k = 2^(−t − 1 − j)   at level j = ⌊(k − 1) / 2^t⌋ < L = 64 − p − t,
//!   ρ_k = 2^(−t − L)       at the top level L (where the geometric part ran out of bits).
//! ```
//!
//! Everything the estimators need is a function of which values each register has seen,
//! which has not, and which it no longer knows: the maximum-likelihood estimator (Ertl 2024)
//! and the martingale both read the probability mass of the values *known not seen*, kept
//! exactly in 64.64 fixed point (every `ρ_k` is a power of two of at least `2^−(64−p)`).
//!
//! In memory a register is a [`Cell`]: a byte for UltraLogLog, whose `(t, d) = (0, 2)` the
//! per-item code takes as constants, and 32 bits for ExaLogLog.

use super::estimators::pow2;

/// Evaluates `body` with the [`Shape`] variable `shape` rebound to a copy whose `t` and `d` are
/// constants where they are known at compile time: UltraLogLog's (`cell` = `u8`) always,
/// ExaLogLog's default `(2, 20)` after one predictable branch. The per-item code in `body` then
/// folds them, and ExaLogLog's per-item path loses about an eighth of its instructions. With
/// `else`, the other shapes evaluate `other` instead. A macro, not a function
/// taking a closure: LLVM did not inline a closure called from two arms, so the constants did
/// not reach it, and ExaLogLog's per-item path became a call.
macro_rules! with_constants {
    ($cell:ty, $shape:ident => $body:expr) => {
        with_constants!($cell, $shape => $body; else $body)
    };
    ($cell:ty, $shape:ident => $body:expr; else $other:expr) => {{
        let p = $shape.p;
        match (<$cell as $crate::cardinality::registers::Cell>::FIXED, $shape.t, $shape.d) {
            (Some((t, d)), ..) => {
                let $shape = $crate::cardinality::registers::Shape { p, t, d };
                $body
            }
            (None, 2, 20) => {
                let $shape = $crate::cardinality::registers::Shape { p, t: 2, d: 20 };
                $body
            }
            _ => $other,
        }
    }};
}
pub(crate) use with_constants;

/// The configuration of a register array: precision `p` (`2^p` registers), `t` bits of
/// sub-level and `d` bits of history. Four-byte aligned, so that the per-item test for
/// ExaLogLog's default `(t, d)` (see [`with_constants`]) is one load and one comparison, not
/// two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(4))]
pub(crate) struct Shape {
    pub(crate) p: u8,
    pub(crate) t: u8,
    pub(crate) d: u8,
}

/// `2^64` in the 64.64 fixed point of probabilities.
const ONE: u128 = 1 << 64;

/// A sketch is *young* while the probability that a new item changes a register is above
/// `2^-YOUNG_SHIFT`. Its batch loops then test a block of items without a branch before
/// updating any (HyperLogLog's `Dense::observe_hashes`, UltraLogLog's `Core::observe_dense`):
/// whether an item changes its register is then close to a coin toss, which a branch would
/// mispredict, and the branch-free reads of a block overlap even when the registers have left
/// the cache. Later most items leave their register as it is, the branch is predicted, and the
/// plain loop is faster (HyperLogLog, measured: 2.2 against 3.5 ns an item on a long-running
/// sketch; UltraLogLog: 1.3 against 1.5 ns).
pub(crate) const YOUNG_SHIFT: u32 = 4;

impl Shape {
    pub(crate) fn registers(self) -> usize {
        1 << self.p
    }

    /// Bits per register: 6 + t for the update value, d for the history.
    pub(crate) fn bits(self) -> u32 {
        6 + u32::from(self.t) + u32::from(self.d)
    }

    /// `L = 64 − p − t`: the width of the geometric part of the hash, and the top level.
    pub(crate) fn top_level(self) -> u32 {
        64 - u32::from(self.p) - u32::from(self.t)
    }

    /// The largest update value, `(65 − p − t) · 2^t`.
    pub(crate) fn max_value(self) -> u32 {
        (self.top_level() + 1) << self.t
    }

    pub(crate) fn history_mask(self) -> u64 {
        (1 << self.d) - 1
    }

    /// The register index (the top `p` bits) and the update value of a hash:
    ///
    /// ```text
    ///   hash:  | index: p bits | geometric part: 64 − p − t bits | sub-level: t bits |
    ///   z = trailing zeros of the geometric part (at most L = 64 − p − t)
    ///   k = z · 2^t + sub-level + 1
    /// ```
    ///
    /// With `t = 0` this is exactly [`HyperLogLog`](super::HyperLogLog)'s rank, so an
    /// UltraLogLog register's `u` is the HyperLogLog register of the same precision.
    #[inline]
    pub(crate) fn locate(self, hash: u64) -> (usize, u32) {
        let (p, t) = (u32::from(self.p), u32::from(self.t));
        let index = (hash >> (64 - p)) as usize;
        let sub = (hash as u32) & ((1 << t) - 1);
        // A sentinel just above the geometric part caps its trailing zeros at L.
        let z = ((hash >> t) | (1 << (64 - p - t))).trailing_zeros();
        (index, (z << t) + sub + 1)
    }

    /// Whether value `k` leaves register `r` as it is: at or below the maximum, and known
    /// seen or below the window. Branch-free, so that only the items that change a register
    /// take a branch the predictor cannot guess. One word holds what `r` knows it has seen:
    /// bit `63 − i` for `u − i`, with `u` itself (bit 63) and the window's history below it,
    /// and every bit under the window set (forgotten values count as seen); the bit of `k`
    /// is brought to the sign by a shift of `u − k`, clamped to 63. `u − k` comes from the
    /// register minus `k << d`, so the load feeds a subtraction, not an extraction of `u`.
    #[inline]
    pub(crate) fn leaves(self, r: u64, k: u32) -> bool {
        let d = u32::from(self.d);
        let k_high = u64::from(k) << d;
        let below = (r.wrapping_sub(k_high) >> d).min(63);
        let seen = ((r & self.history_mask()) | 1 << d) << (63 - d) | ((1 << (63 - d)) - 1);
        (r >= k_high) & ((seen << below) >> 63 != 0)
    }

    /// The register after value `k` (`1 <= k <= max_value`) occurred.
    #[inline]
    pub(crate) fn updated(self, r: u64, k: u32) -> u64 {
        let d = u32::from(self.d);
        let u = (r >> d) as u32;
        if k > u {
            self.raised(r, k)
        } else if k < u && u - k <= d {
            self.marked(r, k)
        } else {
            r
        }
    }

    /// Register `r` after a value `k` above its maximum: `k` becomes the maximum, and what
    /// `r` had seen moves down the window.
    #[inline]
    pub(crate) fn raised(self, r: u64, k: u32) -> u64 {
        let d = u32::from(self.d);
        (u64::from(k) << d) | self.shifted_below(r, k - (r >> d) as u32)
    }

    /// Register `r` with value `k` of its window (`u − d <= k < u`) marked seen.
    #[inline]
    pub(crate) fn marked(self, r: u64, k: u32) -> u64 {
        let d = u32::from(self.d);
        r | 1 << (d - ((r >> d) as u32 - k))
    }

    /// The history bits, relative to a maximum `s` above register `r`'s, that say which values
    /// `r` has seen: its own `u` and history, `s` places down. Nothing for the empty register.
    #[inline]
    fn shifted_below(self, r: u64, s: u32) -> u64 {
        if r == 0 {
            return 0;
        }
        // `u` becomes the bit just above the history, and everything moves down `s` places.
        let seen = (r & self.history_mask()) | 1 << self.d;
        seen.checked_shr(s).unwrap_or(0)
    }

    /// The register that has seen what `a` and `b` have: the union of two sketches' registers.
    /// Branch-free: the lower register's seen values, `u` included, move down by the
    /// difference of the maxima, and the mask drops its `u` when the maxima are equal (the
    /// histories then simply join).
    #[inline]
    pub(crate) fn union(self, a: u64, b: u64) -> u64 {
        let (high, low) = (a.max(b), a.min(b));
        let d = u32::from(self.d);
        let s = ((high >> d) - (low >> d)).min(63);
        let seen = (low & self.history_mask()) | u64::from(low != 0) << d;
        high | ((seen >> s) & self.history_mask())
    }

    /// `2^64 · ρ_k`: the probability that an item of the register gives value `k`. It fits
    /// 64 bits, as no `ρ_k` is above 1/2.
    #[inline]
    pub(crate) fn rho_fixed(self, k: u32) -> u64 {
        let j = ((k - 1) >> self.t).min(self.top_level());
        1 << (64 - u32::from(self.t) - (j + 1).min(self.top_level()))
    }

    /// `2^64 · Σ_{k > u} ρ_k`: the probability that an item of the register exceeds `u`.
    pub(crate) fn tail_fixed(self, u: u32) -> u128 {
        if u == 0 {
            return ONE;
        }
        let (t, top) = (u32::from(self.t), self.top_level());
        let level = (u - 1) >> t;
        // Values of this level up to u, from 1 to 2^t.
        let q = u128::from(((u - 1) & ((1 << t) - 1)) + 1);
        if level < top { ((2 << t) - q) << (63 - t - level) } else { ((1 << t) - q) << (64 - t - top) }
    }

    /// `2^64 ·` the probability that an item of a register in state `r` changes it: the
    /// values above `u`, and those of the window it knows it has not seen.
    #[inline]
    pub(crate) fn change_fixed(self, r: u64) -> u128 {
        if (self.t, self.d) == (0, 2) {
            return self.ull_change_fixed(r);
        }
        let d = u32::from(self.d);
        let u = (r >> d) as u32;
        let mut total = self.tail_fixed(u);
        if u <= 1 || d == 0 {
            return total;
        }
        // The window holds values `lowest..u` (value v at bit v + d − u; none below 1). Walk
        // it level by level, down from u − 1: a level's values share ρ, so its unset bits
        // count at once.
        let (t, h) = (u32::from(self.t), r & self.history_mask());
        let lowest = u.saturating_sub(d).max(1);
        let mut v = u - 1;
        loop {
            let level = (v - 1) >> t;
            let from = ((level << t) + 1).max(lowest);
            let (bit, width) = (from + d - u, v - from + 1);
            let unset = width - ((h >> bit) & ((1 << width) - 1)).count_ones();
            total += u128::from(unset) << (64 - t - (level + 1).min(self.top_level()));
            if from == lowest {
                return total;
            }
            v = from - 1;
        }
    }

    /// [`change_fixed`](Self::change_fixed) of UltraLogLog, in closed form: `ρ_k = 2^−k` for
    /// every value below the largest, `65 − p`, so the values above `u` weigh `2^−u`, and the
    /// window's `2^−(u−1)`, `2^−(u−2)`.
    #[inline(always)]
    fn ull_change_fixed(self, r: u64) -> u128 {
        let u = (r >> 2) as u32;
        let tail = if u < self.max_value() { ONE >> u } else { 0 };
        let below_1 = if u >= 2 && r & 2 == 0 { ONE >> (u - 1) } else { 0 };
        let below_2 = if u >= 3 && r & 1 == 0 { ONE >> (u - 2) } else { 0 };
        tail + below_1 + below_2
    }

    /// `change_fixed(old) − change_fixed(new)` of UltraLogLog, for a register raised from `old`
    /// to `new`: by [`ULL_MASS`], two loads and a subtraction instead of twice the closed form
    /// (about 90 instructions in 128 bits). The closed form remains for a saturated `new`
    /// (whose table entry ignores that nothing lies above it).
    #[inline(always)]
    pub(crate) fn ull_lost(self, old: u64, new: u64) -> u128 {
        if (new >> 2) as u32 >= self.max_value() {
            return self.ull_change_fixed(old) - self.ull_change_fixed(new);
        }
        u128::from(ULL_MASS[old as usize & 255].wrapping_sub(ULL_MASS[new as usize & 255]))
    }

    /// The levels of `ρ`: level `j` has probability `ρ(j)` per value; levels `0..=L`.
    pub(crate) fn levels(self) -> usize {
        self.top_level() as usize + 1
    }

    /// `ρ` at level `j`, as a float.
    pub(crate) fn level_rho(self, j: usize) -> f64 {
        let top = self.top_level() as i32;
        pow2(-i32::from(self.t) - (j as i32 + 1).min(top))
    }

    /// Adds `times` to `seen[j]` for each value of level `j` that register `r` knows it has
    /// seen (walking its window level by level, as [`change_fixed`](Self::change_fixed)).
    pub(crate) fn count_seen(self, r: u64, times: u32, seen: &mut [u32]) {
        let d = u32::from(self.d);
        let u = (r >> d) as u32;
        if u == 0 {
            return;
        }
        let (t, top) = (u32::from(self.t), self.top_level());
        let level = |k: u32| ((k - 1) >> t).min(top) as usize;
        seen[level(u)] += times;
        let h = r & self.history_mask();
        if h == 0 {
            return;
        }
        let lowest = u.saturating_sub(d).max(1);
        let mut v = u - 1;
        loop {
            let from = (((v - 1) >> t << t) + 1).max(lowest);
            let (bit, width) = (from + d - u, v - from + 1);
            seen[level(v)] += times * ((h >> bit) & ((1 << width) - 1)).count_ones();
            if from == lowest {
                return;
            }
            v = from - 1;
        }
    }

    /// Whether `r` is a register this shape can hold: `u` at most the largest value, no
    /// history in the empty register, and none for values below 1.
    pub(crate) fn is_valid(self, r: u64) -> bool {
        let d = u32::from(self.d);
        let u = r >> d;
        let h = r & self.history_mask();
        if u > u64::from(self.max_value()) {
            return false;
        }
        // Bit b stands for value u − d + b, which must be at least 1: b >= d + 1 − u.
        let lowest = (u64::from(d) + 1).saturating_sub(u);
        h & ((1u64 << lowest.min(63)) - 1) == 0 && (u > 0 || h == 0)
    }

    /// The values register `r` knows it has seen, largest first.
    pub(crate) fn seen_values(self, r: u64) -> impl Iterator<Item = u32> {
        let d = u32::from(self.d);
        let u = (r >> d) as u32;
        let h = r & self.history_mask();
        let top = (u > 0).then_some(u);
        top.into_iter().chain((0..d).filter(move |&b| h & (1 << b) != 0).map(move |b| u + b - d))
    }

    /// The register of a sketch of precision `coarse` (below `self.p`) that has seen what
    /// register `index` (state `r`) of this one has. The `p − coarse` low bits of the index
    /// become the top of the geometric part: values below the top level stay, and values of
    /// the top level (an all-zero geometric part) count on into those bits.
    pub(crate) fn reduced(self, r: u64, index: usize, coarse: Shape) -> u64 {
        let shift = u32::from(self.p - coarse.p);
        let low = (index as u64) & ((1 << shift) - 1);
        let more = if low == 0 { shift } else { low.trailing_zeros() };
        let (t, top) = (u32::from(self.t), self.top_level());
        let mut out = 0;
        for k in self.seen_values(r) {
            let k = if (k - 1) >> t >= top { k + (more << t) } else { k };
            out = coarse.updated(out, k);
        }
        out
    }
}

/// For each UltraLogLog register byte `4u + h`, the values `k` (as bits) that would change
/// it: every `k > u`, and `u − 1`, `u − 2` while unseen. One load and a shift then decide an
/// item without a branch the predictor must guess (changes only are unpredictable).
pub(crate) const ULL_CHANGES: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut r = 0;
    while r < 256 {
        let u = r >> 2;
        // Values above u (k <= 62 always: 65 − p with p >= 3).
        let mut mask = if u >= 63 { 0 } else { !0u64 << (u + 1) };
        if u >= 2 && r & 2 == 0 {
            mask |= 1 << (u - 1);
        }
        if u >= 3 && r & 1 == 0 {
            mask |= 1 << (u - 2);
        }
        table[r] = mask;
        r += 1;
    }
    table
};

/// For each UltraLogLog register byte, [`Shape::change_fixed`] modulo `2^64` as if the
/// maximum were below the largest value (the closed form's tail, without its saturation
/// test). The mass a change loses lies in `[0, 2^64)`, so the difference of two entries, in
/// wrapping arithmetic, is exact (the empty register's `2^64` wraps to 0).
const ULL_MASS: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut r = 0;
    while r < 256 {
        let u = r >> 2;
        let mut mass = if u == 0 { 0 } else { 1u64 << (64 - u) };
        if u >= 2 && r & 2 == 0 {
            mass += 1 << (65 - u);
        }
        if u >= 3 && r & 1 == 0 {
            mass += 1 << (66 - u);
        }
        table[r] = mass;
        r += 1;
    }
    table
};

/// A register cell in memory: a byte for UltraLogLog, 32 bits for ExaLogLog.
pub(crate) trait Cell: Copy + Default + PartialEq + std::fmt::Debug {
    /// `(t, d)` when every sketch of this cell has them (UltraLogLog's `(0, 2)`): constants
    /// the compiler folds into the per-item path.
    const FIXED: Option<(u8, u8)>;
    fn get(self) -> u64;
    /// `v` fits: every register the shape makes has at most `shape.bits()` bits.
    fn put(v: u64) -> Self;

    /// The cells as bytes, when a cell is one (UltraLogLog's): what the entropy coder reads,
    /// without a copy.
    fn bytes(_cells: &[Self]) -> Option<&[u8]> {
        None
    }

    /// The cells as bytes to write, when a cell is one: what the entropy decoder fills.
    fn bytes_mut(_cells: &mut [Self]) -> Option<&mut [u8]> {
        None
    }

    /// Each of `ours` becomes its [union](Shape::union) with the same register of `theirs`.
    fn union_all(shape: Shape, ours: &mut [Self], theirs: &[Self]) {
        for (a, b) in ours.iter_mut().zip(theirs) {
            *a = Self::put(shape.union(a.get(), b.get()));
        }
    }
}

impl Cell for u8 {
    const FIXED: Option<(u8, u8)> = Some((0, 2));
    fn bytes(cells: &[Self]) -> Option<&[u8]> {
        Some(cells)
    }
    fn bytes_mut(cells: &mut [Self]) -> Option<&mut [u8]> {
        Some(cells)
    }
    #[inline]
    fn get(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn put(v: u64) -> Self {
        v as u8
    }

    /// UltraLogLog's union in byte arithmetic, the shift of the lower register's history by
    /// the difference of the maxima (0, 1, 2, or more) written as a choice among constant
    /// shifts, which the compiler vectorizes (the general union, with its variable shift,
    /// does not).
    fn union_all(shape: Shape, ours: &mut [u8], theirs: &[u8]) {
        debug_assert_eq!((shape.t, shape.d), (0, 2));
        for (a, &b) in ours.iter_mut().zip(theirs) {
            *a = ull_union(*a, b);
        }
    }
}

/// [`Shape::union`] of two UltraLogLog registers.
#[inline]
fn ull_union(a: u8, b: u8) -> u8 {
    let (high, low) = (a.max(b), a.min(b));
    let seen = (low & 3) | u8::from(low != 0) << 2;
    let shifted = match (high >> 2) - (low >> 2) {
        0 => seen,
        1 => seen >> 1,
        2 => seen >> 2,
        _ => 0,
    };
    high | (shifted & 3)
}

impl Cell for u32 {
    const FIXED: Option<(u8, u8)> = None;
    #[inline]
    fn get(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn put(v: u64) -> Self {
        v as u32
    }
}

/// Shapes, and a generator, for the tests of every file over these registers.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cardinality::tally::Tally;

    pub(crate) const SHAPES: [Shape; 9] = [
        Shape { p: 3, t: 0, d: 2 },
        Shape { p: 10, t: 0, d: 2 },
        Shape { p: 4, t: 2, d: 20 },
        Shape { p: 12, t: 2, d: 24 },
        Shape { p: 6, t: 1, d: 9 },
        Shape { p: 2, t: 0, d: 26 },
        Shape { p: 5, t: 3, d: 21 },
        Shape { p: 3, t: 4, d: 22 },
        Shape { p: 8, t: 4, d: 0 },
    ];

    pub(crate) fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The register from its definition: the set of values seen, `u` its maximum, bit `d − i`
    /// for `u − i`.
    fn from_set(shape: Shape, seen: &std::collections::BTreeSet<u32>) -> u64 {
        let Some(&u) = seen.last() else { return 0 };
        let d = u32::from(shape.d);
        let h = (1..=d).filter(|&i| u > i && seen.contains(&(u - i))).fold(0, |h, i| h | 1 << (d - i));
        u64::from(u) << d | h
    }

    #[test]
    fn probabilities_sum_to_one_and_tails_match() {
        for shape in SHAPES {
            let total: u128 = (1..=shape.max_value()).map(|k| u128::from(shape.rho_fixed(k))).sum();
            assert_eq!(total, ONE, "{shape:?}");
            for u in 0..=shape.max_value() {
                let tail: u128 = (u + 1..=shape.max_value()).map(|k| u128::from(shape.rho_fixed(k))).sum();
                assert_eq!(shape.tail_fixed(u), tail, "{shape:?} u {u}");
            }
        }
    }

    #[test]
    fn locate_gives_the_documented_distribution_limits() {
        for shape in SHAPES {
            let p = u32::from(shape.p);
            assert_eq!(shape.locate(0), (0, shape.max_value() - (1 << shape.t) + 1));
            assert_eq!(shape.locate(u64::MAX), ((1 << p) - 1, 1 << shape.t));
            assert_eq!(shape.locate(1 << shape.t).1, 1);
        }
        // t = 0 is HyperLogLog's rank.
        let ull = Shape { p: 14, t: 0, d: 2 };
        assert_eq!(ull.locate(1 << 49), (0, 50));
        assert_eq!(ull.locate(1 << 50), (1, 51));
    }

    #[test]
    fn registers_follow_their_definition() {
        let mut state = 1;
        for shape in SHAPES {
            let mut all = Vec::new();
            for _ in 0..300 {
                let mut set = std::collections::BTreeSet::new();
                let mut r = 0;
                let mut other_set = std::collections::BTreeSet::new();
                let mut other = 0;
                for _ in 0..(splitmix(&mut state) % 40) {
                    let (_, k) = shape.locate(splitmix(&mut state));
                    set.insert(k);
                    r = shape.updated(r, k);
                    assert_eq!(r, from_set(shape, &set), "{shape:?}");
                    assert!(shape.is_valid(r));
                    let (_, k) = shape.locate(splitmix(&mut state) >> (splitmix(&mut state) % 8));
                    other_set.insert(k);
                    other = shape.updated(other, k);
                }
                let union: std::collections::BTreeSet<u32> = set.union(&other_set).copied().collect();
                assert_eq!(shape.union(r, other), from_set(shape, &union), "{shape:?}");
                // The seen counts are the known-seen values, level by level.
                let mut seen = vec![0u32; shape.levels()];
                shape.count_seen(r, 2, &mut seen);
                let mut expected = vec![0u32; shape.levels()];
                for k in shape.seen_values(r) {
                    expected[(((k - 1) >> shape.t) as usize).min(shape.levels() - 1)] += 2;
                }
                assert_eq!(seen, expected, "{shape:?} r {r:x}");
                let tally = Tally::new(shape, [r, r].into_iter());
                assert_eq!(tally.seen_by_level(), expected, "{shape:?} r {r:x} by tally");
                assert_eq!(tally.unseen_mass(), 2 * shape.change_fixed(r), "{shape:?} r {r:x} by tally");
                // The change probability is the mass of the values whose arrival changes r.
                let changes: u128 = (1..=shape.max_value())
                    .filter(|&k| shape.updated(r, k) != r)
                    .map(|k| u128::from(shape.rho_fixed(k)))
                    .sum();
                assert_eq!(shape.change_fixed(r), changes, "{shape:?} r {r:x}");
                all.extend([r, other]);
            }
            let direct: u128 = all.iter().map(|&r| shape.change_fixed(r)).sum();
            let mut seen = vec![0u32; shape.levels()];
            all.iter().for_each(|&r| shape.count_seen(r, 1, &mut seen));
            let tally = Tally::new(shape, all.iter().copied());
            assert_eq!((tally.unseen_mass(), tally.seen_by_level()), (direct, seen), "{shape:?}");
        }
    }

    #[test]
    fn reduction_equals_observing_at_the_coarser_precision() {
        let mut state = 5;
        for shape in SHAPES {
            for coarse_p in 2..shape.p {
                let coarse = Shape { p: coarse_p, ..shape };
                let mut fine = vec![0u64; shape.registers()];
                let mut direct = vec![0u64; coarse.registers()];
                for i in 0..3000 {
                    let hash = splitmix(&mut state) >> (i % 64) << (i % 3);
                    let (index, k) = shape.locate(hash);
                    fine[index] = shape.updated(fine[index], k);
                    let (index, k) = coarse.locate(hash);
                    direct[index] = coarse.updated(direct[index], k);
                }
                let mut reduced = vec![0u64; coarse.registers()];
                for (i, &r) in fine.iter().enumerate() {
                    let to = i >> (shape.p - coarse_p);
                    reduced[to] = coarse.union(reduced[to], shape.reduced(r, i, coarse));
                }
                assert_eq!(reduced, direct, "{shape:?} to {coarse_p}");
            }
        }
    }

    #[test]
    fn the_ultraloglog_byte_union_is_the_union() {
        let shape = Shape { p: 10, t: 0, d: 2 };
        for a in 0..=255_u8 {
            for b in 0..=255_u8 {
                assert_eq!(u64::from(ull_union(a, b)), shape.union(a.into(), b.into()), "{a} {b}");
            }
        }
    }

    #[test]
    fn the_ultraloglog_change_table_agrees_with_the_registers() {
        for p in [3, 10, 26] {
            let shape = Shape { p, t: 0, d: 2 };
            for r in (0..256_u64).filter(|&r| shape.is_valid(r)) {
                for k in 1..=shape.max_value() {
                    let changes = shape.updated(r, k) != r;
                    assert_eq!(ULL_CHANGES[r as usize] >> k & 1 == 1, changes, "p {p} r {r} k {k}");
                    assert_eq!(!shape.leaves(r, k), changes, "p {p} r {r} k {k}");
                    let new = shape.updated(r, k);
                    if new >> 2 > r >> 2 {
                        let lost = shape.change_fixed(r) - shape.change_fixed(new);
                        assert_eq!(shape.ull_lost(r, new), lost, "p {p} r {r} k {k}");
                    }
                }
            }
        }
        for shape in SHAPES {
            let mut state = 9;
            for _ in 0..2000 {
                let mut r = 0;
                for _ in 0..(splitmix(&mut state) % 30) {
                    r = shape.updated(r, shape.locate(splitmix(&mut state)).1);
                }
                let k = shape.locate(splitmix(&mut state) >> (splitmix(&mut state) % 8)).1;
                assert_eq!(!shape.leaves(r, k), shape.updated(r, k) != r, "{shape:?} r {r:x} k {k}");
            }
        }
    }

    #[test]
    fn invalid_registers_are_recognized() {
        let ull = Shape { p: 10, t: 0, d: 2 };
        assert!(ull.is_valid(0));
        assert!(!ull.is_valid(1), "history in the empty register");
        assert!(!ull.is_valid(4 | 1) && !ull.is_valid(4 | 2), "u = 1 has no values below it");
        assert!(ull.is_valid(8 | 2) && !ull.is_valid(8 | 1), "u = 2 has only value 1 below");
        assert!(ull.is_valid(4 * 55 + 3) && !ull.is_valid(4 * 56));
    }
}
