//! Registers with a history, shared by [`UltraLogLog`](super::UltraLogLog) and
//! [`ExaLogLog`](super::ExaLogLog): each keeps the largest *update value* `u` its items gave
//! and, in `d` more bits, which of the `d` values just below `u` were given too.
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
//! here exactly in 64.64 fixed point (every `ρ_k` is a power of two of at least `2^−(64−p)`).

use super::estimators::{MAX_ESTIMATE, capped, check_martingale, pow2, wide_to_f64};
use super::optimal;
use super::sparse::{self, Sparse};
use crate::core::{Bounds, Confidence, ConfigError, DecodeError, alloc};

/// Evaluates `body` with the [`Shape`] variable `shape` rebound to a copy whose `t` and `d` are
/// constants where they are known at compile time: UltraLogLog's (`cell` = `u8`) always,
/// ExaLogLog's default `(2, 20)` after one predictable branch. The per-item code in `body` then
/// folds them (8 fewer instructions per item, of about 60, for ExaLogLog, measured with
/// callgrind). With `else`, the other shapes evaluate `other` instead. A macro, not a function
/// taking a closure: LLVM did not inline a closure called from two arms, so the constants did
/// not reach it, and ExaLogLog's per-item path became a call.
macro_rules! with_constants {
    ($cell:ty, $shape:ident => $body:expr) => {
        with_constants!($cell, $shape => $body; else $body)
    };
    ($cell:ty, $shape:ident => $body:expr; else $other:expr) => {{
        let p = $shape.p;
        match (<$cell as Cell>::FIXED, $shape.t, $shape.d) {
            (Some((t, d)), ..) => {
                let $shape = Shape { p, t, d };
                $body
            }
            (None, 2, 20) => {
                let $shape = Shape { p, t: 2, d: 20 };
                $body
            }
            _ => $other,
        }
    }};
}

/// The configuration of a register array: precision `p` (`2^p` registers), `t` bits of
/// sub-level and `d` bits of history. Four-byte aligned, so that the per-item test for
/// ExaLogLog's default `(t, d)` (see [`with_constants`]) is one load and one comparison (4 %
/// off ExaLogLog's time per item late in a stream, measured with criterion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(4))]
pub(crate) struct Shape {
    pub(crate) p: u8,
    pub(crate) t: u8,
    pub(crate) d: u8,
}

/// `2^64` in the 64.64 fixed point of probabilities.
const ONE: u128 = 1 << 64;

impl Shape {
    pub(crate) fn registers(self) -> usize {
        1 << self.p
    }

    /// Bits per register: 6 + t for the update value, d for the history.
    pub(crate) fn bits(self) -> u32 {
        6 + u32::from(self.t) + u32::from(self.d)
    }

    /// `L = 64 − p − t`: the width of the geometric part of the hash, and the top level.
    fn top_level(self) -> u32 {
        64 - u32::from(self.p) - u32::from(self.t)
    }

    /// The largest update value, `(65 − p − t) · 2^t`.
    pub(crate) fn max_value(self) -> u32 {
        (self.top_level() + 1) << self.t
    }

    fn history_mask(self) -> u64 {
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
    fn raised(self, r: u64, k: u32) -> u64 {
        let d = u32::from(self.d);
        (u64::from(k) << d) | self.shifted_below(r, k - (r >> d) as u32)
    }

    /// Register `r` with value `k` of its window (`u − d <= k < u`) marked seen.
    #[inline]
    fn marked(self, r: u64, k: u32) -> u64 {
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
    fn rho_fixed(self, k: u32) -> u64 {
        let j = ((k - 1) >> self.t).min(self.top_level());
        1 << (64 - u32::from(self.t) - (j + 1).min(self.top_level()))
    }

    /// `2^64 · Σ_{k > u} ρ_k`: the probability that an item of the register exceeds `u`.
    fn tail_fixed(self, u: u32) -> u128 {
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
    fn ull_lost(self, old: u64, new: u64) -> u128 {
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
    fn level_rho(self, j: usize) -> f64 {
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
    fn seen_values(self, r: u64) -> impl Iterator<Item = u32> {
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

    /// The maximum-likelihood estimate of the number of distinct items from the mass of the
    /// values known not seen (`unseen`, `Σ` over registers, in 64.64 fixed point) and the
    /// count of values known seen at each level (`seen`).
    ///
    /// Under the Poisson model each register receives items at rate `λ = n/m`, and value `k`
    /// occurs in it with probability `1 − e^(−λ ρ_k)`, independently of the others, so
    ///
    /// ```text
    ///   ln L(λ) = −λ · α + Σ_j β_j · ln(1 − e^(−λ ρ_j)),   α = unseen mass, β_j = seen[j]
    /// ```
    ///
    /// is concave, and its maximum solves `H(λ) = Σ_j β_j φ(λ ρ_j) − α λ = 0` with
    /// `φ(z) = z / (e^z − 1)`. `H` is convex and decreasing, so Newton's method started left of
    /// the root climbs to it monotonically, without overshooting.
    pub(crate) fn ml_estimate(self, unseen: u128, seen: &[u32]) -> f64 {
        let m = self.registers() as f64;
        let total_seen: f64 = seen.iter().map(|&b| f64::from(b)).sum();
        if total_seen == 0.0 {
            return 0.0;
        }
        if unseen == 0 {
            // Every value of every register seen: the likelihood grows without bound.
            return MAX_ESTIMATE;
        }
        let alpha = wide_to_f64(unseen) * pow2(-64);
        let terms: Vec<(f64, f64)> =
            seen.iter().enumerate().filter(|&(_, &b)| b > 0).map(|(j, &b)| (f64::from(b), self.level_rho(j))).collect();
        // The first Newton step from λ = 0, where H = Σβ and H' = −α − Σ β ρ / 2.
        let mut lambda = total_seen / (alpha + terms.iter().map(|(b, rho)| b * rho).sum::<f64>() / 2.0);
        for _ in 0..200 {
            let (mut h, mut slope) = (-alpha * lambda, -alpha);
            for &(b, rho) in &terms {
                let z = lambda * rho;
                // φ(z) = z·w / (1 − w) and φ'(z) = w·(1 − w − z) / (1 − w)² with w = e^−z: finite
                // for every z (through e^z they overflow to ∞/∞ past z ≈ 710, which levels far
                // below a register's maximum reach), with their limits at 0.
                let (phi, dphi) = if z < 1e-8 {
                    (1.0 - z / 2.0, -0.5)
                } else {
                    let (w, one_minus_w) = ((-z).exp(), -(-z).exp_m1());
                    (z * w / one_minus_w, w * (one_minus_w - z) / (one_minus_w * one_minus_w))
                };
                h += b * phi;
                slope += b * rho * dphi;
            }
            let step = -h / slope;
            debug_assert!(!step.is_nan(), "Newton step of the likelihood is NaN");
            if step.is_nan() || step <= lambda * 1e-15 {
                break;
            }
            lambda += step;
        }
        capped(m * lambda)
    }
}

/// One pass over the registers, for everything read of all of them at once (the unseen mass,
/// the counts of values seen by level): how many registers hold each maximum `u`, and, for
/// each `u`, how many values its registers know seen in each level of their window.
///
/// A register's history, with `u` as its top bit, is shifted so that its values fall into
/// groups of `2^t` bits by level: value `v` to bit `v − 1 − 2^t · (level(u) − g + 1)`, with
/// `g = ⌈d / 2^t⌉ + 1` groups, enough for any position `q = (u − 1) mod 2^t` of `u` in its
/// level. A population count per group (the bit-parallel steps of a popcount, stopped at
/// `2^t` bits) then counts each level's values at once, with no branch and no table.
pub(crate) struct Tally {
    shape: Shape,
    /// Groups per register: `⌈d / 2^t⌉ + 1`.
    groups: usize,
    /// Registers per maximum `u`, for `u` in `0..=max_value`.
    maxima: Vec<u64>,
    /// `seen[u · groups + i]`: values of level `level(u) − (groups − 1) + i` known seen by the
    /// registers of maximum `u` (`u` itself included, in group `groups − 1`). At most
    /// `2^t · 2^26` each: they fit 32 bits.
    seen: Vec<u32>,
}

/// The masks of the bit-parallel popcount: step `s` adds neighbouring groups of `2^s` bits.
const GROUP_MASKS: [u64; 5] =
    [0x5555_5555_5555_5555, 0x3333_3333_3333_3333, 0x0F0F_0F0F_0F0F_0F0F, 0x00FF_00FF_00FF_00FF, 0x0000_FFFF_0000_FFFF];

impl Tally {
    /// Tallies `registers`, with `shape`'s `t` and `d` as constants for ExaLogLog's default.
    pub(crate) fn new(shape: Shape, registers: impl Iterator<Item = u64>) -> Self {
        match (shape.t, shape.d) {
            (2, 20) => Self::new_in(Shape { t: 2, d: 20, ..shape }, registers),
            _ => Self::new_in(shape, registers),
        }
    }

    #[inline(always)]
    fn new_in(shape: Shape, registers: impl Iterator<Item = u64>) -> Self {
        let (t, d) = (u32::from(shape.t), u32::from(shape.d));
        let width = 1u32 << t;
        let groups = d.div_ceil(width) as usize + 1;
        // Places u's bit (d) at `q + width · (groups − 1)`: a shift of this plus q.
        let lift = width * (groups as u32 - 1) - d;
        let group_mask = (1u64 << width) - 1;
        let values = shape.max_value() as usize + 1;
        let (mut maxima, mut seen) = (vec![0u64; values], vec![0u32; values * groups]);
        for r in registers {
            let u = (r >> d) as usize;
            let (Some(count), Some(row)) = (maxima.get_mut(u), seen.get_mut(u * groups..(u + 1) * groups)) else {
                debug_assert!(false, "register {r:x} above the largest value");
                continue;
            };
            *count += 1;
            let q = (u as u32).wrapping_sub(1) & (width - 1);
            // The empty register has seen nothing, not even a `u`.
            let mut bits = ((r & shape.history_mask()) | u64::from(r != 0) << d) << (q + lift);
            for (s, &mask) in GROUP_MASKS.iter().enumerate().take(t as usize) {
                bits = (bits & mask) + ((bits >> (1 << s)) & mask);
            }
            for (i, slot) in row.iter_mut().enumerate() {
                *slot += ((bits >> (i << t)) & group_mask) as u32;
            }
        }
        Self { shape, groups, maxima, seen }
    }

    /// The level of group `i` of the registers of maximum `u >= 1`, if it is a level (the
    /// window of a small `u` reaches below value 1).
    fn level(&self, u: usize, i: usize) -> Option<usize> {
        (((u - 1) >> self.shape.t) + i).checked_sub(self.groups - 1)
    }

    /// The rows of the maxima some register holds: `(u, registers, seen by group)`.
    fn rows(&self) -> impl Iterator<Item = (usize, u64, &[u32])> {
        self.maxima
            .iter()
            .zip(self.seen.chunks_exact(self.groups))
            .enumerate()
            .skip(1)
            .filter_map(|(u, (&count, row))| (count > 0).then_some((u, count, row)))
    }

    /// The counts of values known seen, level by level (as [`Shape::count_seen`] summed).
    pub(crate) fn seen_by_level(&self) -> Vec<u32> {
        let mut out = vec![0u32; self.shape.levels()];
        for (u, _, row) in self.rows() {
            for (i, &n) in row.iter().enumerate() {
                if let Some(slot) = self.level(u, i).and_then(|j| out.get_mut(j)) {
                    *slot += n;
                }
            }
        }
        out
    }

    /// The sum of [`Shape::change_fixed`] over the registers: the tails above each maximum,
    /// and the window values known not seen, level by level (a level's window values less
    /// those seen, `u` itself not being one of the window).
    pub(crate) fn unseen_mass(&self) -> u128 {
        let shape = self.shape;
        let (t, d) = (u32::from(shape.t), u32::from(shape.d));
        let mut total: u128 =
            self.maxima.iter().enumerate().map(|(u, &n)| u128::from(n) * shape.tail_fixed(u as u32)).sum();
        for (u, count, row) in self.rows() {
            let (lowest, highest) = ((u as u32).saturating_sub(d).max(1), u as u32 - 1);
            for (i, &n) in row.iter().enumerate() {
                let Some(j) = self.level(u, i) else { continue };
                let (from, to) = (((j as u32) << t) + 1, (j as u32 + 1) << t);
                let window = u64::from((to.min(highest) + 1).saturating_sub(from.max(lowest)));
                let seen_in_window = u64::from(n) - if i == self.groups - 1 { count } else { 0 };
                total += u128::from(window * count - seen_in_window) * u128::from(shape.rho_fixed(from));
            }
        }
        total
    }
}

/// For each UltraLogLog register byte `4u + h`, the values `k` (as bits) that would change
/// it: every `k > u`, and `u − 1`, `u − 2` while unseen. One load and a shift then decide an
/// item without a branch the predictor must guess (changes only are unpredictable).
const ULL_CHANGES: [u64; 256] = {
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

    /// Each of `ours` becomes its [union](Shape::union) with the same register of `theirs`.
    fn union_all(shape: Shape, ours: &mut [Self], theirs: &[Self]) {
        for (a, b) in ours.iter_mut().zip(theirs) {
            *a = Self::put(shape.union(a.get(), b.get()));
        }
    }
}

impl Cell for u8 {
    const FIXED: Option<(u8, u8)> = Some((0, 2));
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
    /// shifts, which the compiler vectorizes (merge at p = 12 in criterion, recount included:
    /// 1.7 µs against 5.8 µs by the general union).
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

/// The state both sketches share: the registers, the exact unseen mass, the martingale; or,
/// while few items have been seen, the exact set of their [sparse entries](super::sparse).
#[derive(Clone)]
pub(crate) struct Core<R> {
    pub(crate) shape: Shape,
    pub(crate) seed: u64,
    /// The registers; none while the sketch is sparse. The per-item path then finds the
    /// index out of range: the dense mode's bounds check is the sparse mode's test. (The call
    /// to the sparse path makes a loop of `observe` reload, for every item, whatever that call
    /// could change: [`Boxed`] keeps the shape and the seed out of its reach. Measured with
    /// callgrind at p = 12 when it came in, instructions per item: UltraLogLog 41.6 boxed,
    /// 52.6 not, 39.7 before the sparse mode; ExaLogLog 63.1, 75.5 and 74.7.)
    pub(crate) registers: Box<[R]>,
    /// The entries while the sketch is sparse; empty once it is dense.
    pub(crate) sparse: Sparse,
    /// `Σ change_fixed(r)` over the registers: `m · 2^64` times the probability that a new
    /// distinct item changes the sketch, and the `α` of the likelihood.
    pub(crate) unseen: u128,
    /// The martingale estimate, while the sketch has seen only its own stream.
    pub(crate) martingale: Option<f64>,
}

impl<R: Cell> Core<R> {
    /// The empty sketch: sparse where the shape has a sparse mode, dense otherwise.
    pub(crate) fn new(shape: Shape, seed: u64) -> Self {
        if Self::limit(shape) == 0 {
            return Self::new_dense(shape, seed);
        }
        let unseen = (shape.registers() as u128) << 64;
        Self { shape, seed, registers: Box::default(), sparse: Sparse::new(), unseen, martingale: None }
    }

    /// [`new`](Self::new) for a constructor: the registers a sketch holds once dense (up to
    /// 256 MiB, allocated now for a shape born dense, later for the others) are first checked
    /// to be allocatable (see [`alloc`]).
    pub(crate) fn try_new(shape: Shape, seed: u64) -> Result<Self, ConfigError> {
        alloc::check(shape.registers() * size_of::<R>(), "precision", shape.p)?;
        Ok(Self::new(shape, seed))
    }

    /// The empty sketch with its registers.
    pub(crate) fn new_dense(shape: Shape, seed: u64) -> Self {
        debug_assert!(R::FIXED.is_none_or(|(t, d)| (shape.t, shape.d) == (t, d)));
        let m = shape.registers();
        Self {
            shape,
            seed,
            registers: vec![R::default(); m].into_boxed_slice(),
            sparse: Sparse::new(),
            unseen: (m as u128) << 64,
            martingale: Some(0.0),
        }
    }

    /// The most entries the sparse mode of `shape` holds (0: it has none). Entries keep the
    /// index bits of precisions up to `26 − t`, and their table never takes more bytes than
    /// the registers.
    fn limit(shape: Shape) -> usize {
        if u32::from(shape.p) + u32::from(shape.t) > sparse::SPARSE_BITS {
            return 0;
        }
        sparse::limit(shape.registers() * size_of::<R>())
    }

    /// Whether the sketch is in its exact, sparse small-range mode.
    pub(crate) fn is_sparse(&self) -> bool {
        self.registers.is_empty()
    }

    /// The exact count of distinct entries while the sketch is sparse.
    pub(crate) fn exact(&self) -> Option<f64> {
        self.is_sparse().then(|| self.sparse.len() as f64)
    }

    /// The martingale estimate, if the sketch has one, at most
    /// [`MAX_ESTIMATE`](super::estimators::MAX_ESTIMATE).
    pub(crate) fn martingale_estimate(&self) -> Option<f64> {
        self.martingale.map(capped)
    }

    /// The bytes the state holds on the heap, held in a [`Boxed`]: the core itself, and the
    /// entry table or the registers.
    pub(crate) fn heap_bytes(&self) -> usize {
        size_of::<Self>() + self.sparse.heap_bytes() + self.registers.len() * size_of::<R>()
    }

    /// Observes a hash of a sparse sketch (the per-item path sends it here).
    #[cold]
    #[inline(never)]
    fn observe_sparse(&mut self, hash: u64) {
        self.add_entry(sparse::entry(hash, u32::from(self.shape.t)), true);
    }

    /// Adds one entry, in either mode. `observed`: an item of this sketch's own stream,
    /// which the martingale counts; the entries of another sketch (merges, reductions) give
    /// the same registers but no part of the martingale, and leave `unseen` for the caller's
    /// [`recount`](Self::recount).
    fn add_entry(&mut self, entry: u32, observed: bool) {
        if self.is_sparse() {
            let Err(empty_slot) = self.sparse.find(entry) else { return };
            if self.sparse.len() < Self::limit(self.shape) {
                self.sparse.insert_at(empty_slot, entry);
                return;
            }
            self.densify(observed);
        }
        if observed {
            let shape = self.shape;
            let (index, k) = sparse::entry_value(entry, u32::from(shape.p), u32::from(shape.t));
            self.observe_value(shape, index, k, false);
        } else {
            self.absorb_entry(entry);
        }
    }

    /// Sets the register of `entry` as a dense sketch that saw it, leaving `unseen` as it is.
    fn absorb_entry(&mut self, entry: u32) {
        let shape = self.shape;
        let (index, k) = sparse::entry_value(entry, u32::from(shape.p), u32::from(shape.t));
        if let Some(slot) = self.registers.get_mut(index) {
            *slot = R::put(shape.updated(slot.get(), k));
        }
    }

    /// Turns a sparse sketch dense: the registers of its entries. In a stream (`observed`),
    /// the exact count so far starts the martingale, which then goes on as usual.
    fn densify(&mut self, observed: bool) {
        let entries = std::mem::take(&mut self.sparse);
        self.registers = vec![R::default(); self.shape.registers()].into_boxed_slice();
        entries.entries().for_each(|entry| self.absorb_entry(entry));
        self.recount();
        self.martingale = observed.then_some(entries.len() as f64);
    }

    /// The empty sketch of the same configuration.
    pub(crate) fn empty_like(&self) -> Self {
        Self::new(self.shape, self.seed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        if self.is_sparse() { self.sparse.len() == 0 } else { self.registers.iter().all(|r| r.get() == 0) }
    }

    /// Observes one hash. The shape's `t` and `d` reach the per-item code as constants for
    /// UltraLogLog and for ExaLogLog's default `(2, 20)` (see [`with_constants`]), and as
    /// variables otherwise. `shape` is this
    /// sketch's, read by the caller (see [`Boxed`]).
    #[inline(always)]
    pub(crate) fn observe_hash_as(&mut self, shape: Shape, hash: u64) {
        debug_assert_eq!(shape, self.shape);
        with_constants!(R, shape => self.observe_in(shape, hash); else self.observe_other(shape, hash));
    }

    /// [`observe_in`](Self::observe_in) for the shapes whose `t` and `d` are not constants, out
    /// of line: the per-item code of the others then stays small enough to be inlined into
    /// the caller's loop.
    #[inline(never)]
    fn observe_other(&mut self, shape: Shape, hash: u64) {
        self.observe_in(shape, hash);
    }

    /// Observes many hashes: the same updates as [`observe_hash_as`](Self::observe_hash_as) one by
    /// one. Once the sketch is dense, the loop has no sparse path, and the shape's constants are
    /// settled once for the whole batch. ExaLogLog's loop makes no call that reaches the
    /// sketch, so nothing in it can change the shape or move the registers: the compiler keeps
    /// them (and the caller's seed) in registers instead of reloading them for each item.
    #[inline]
    pub(crate) fn observe_hashes(&mut self, mut hashes: impl Iterator<Item = u64>) {
        while self.is_sparse() {
            let Some(hash) = hashes.next() else { return };
            self.observe_hash_as(self.shape, hash);
        }
        let shape = self.shape;
        with_constants!(R, shape => self.observe_dense(shape, hashes));
    }

    #[inline(always)]
    fn observe_dense(&mut self, shape: Shape, hashes: impl Iterator<Item = u64>) {
        // ExaLogLog's batch loop inlines its updates, which are frequent early in a stream
        // (criterion, 10^6 items into a fresh sketch: 3.91 and 6.73 ms at p = 12 and 14,
        // against 4.1–4.3 and 7.3–7.5 out of line; into one that saw 10^7 items, 2.64 and
        // 2.81 against 2.58 and 2.80); UltraLogLog's does not (fresh: 2.34 and 3.57 ms
        // inline, against 2.1–2.3 and 3.1–3.2).
        let inline_update = R::FIXED.is_none();
        for hash in hashes {
            let (index, k) = shape.locate(hash);
            self.observe_value(shape, index, k, inline_update);
        }
    }

    #[inline(always)]
    fn observe_in(&mut self, shape: Shape, hash: u64) {
        let (index, k) = shape.locate(hash);
        if index >= self.registers.len() {
            return self.observe_sparse(hash);
        }
        self.observe_value(shape, index, k, false);
    }

    /// Observes value `k` at register `index`: the branch-free test, and the update for the
    /// few values that change the register, inlined or [out of line](Self::update).
    #[inline(always)]
    fn observe_value(&mut self, shape: Shape, index: usize, k: u32, inline_update: bool) {
        let Some(&old) = self.registers.get(index) else { return };
        let unchanged = match R::FIXED {
            Some((0, 2)) => ULL_CHANGES[old.get() as usize & 255] >> k & 1 == 0,
            _ => shape.leaves(old.get(), k),
        };
        if !unchanged {
            if inline_update { self.update_in(shape, index, k) } else { self.update(shape, index, k) }
        }
    }

    /// [`update_in`](Self::update_in) out of line, `shape`'s constants restored inside. The
    /// per-item code then stays small, and inlines into the caller's loop. Of 10^6 distinct
    /// items into a fresh sketch, UltraLogLog changes a register for 2.8 % at p = 12 and
    /// 8.6 % at p = 14, ExaLogLog (2, 20) for 9.1 % and 25 % (HyperLogLog: 1.9 %, 5.9 %); late
    /// in a stream, for almost none. Measured with criterion (10^6 items at p = 12 and 14, ms):
    ///
    /// | update, in `observe` | UltraLogLog, fresh | ExaLogLog, fresh | ExaLogLog, after 10^7 items |
    /// |---|---|---|---|
    /// | inline | 2.57, 3.74 | 4.95, 7.84 | 3.61, 3.86 |
    /// | out of line | 2.15, 3.15 | 4.23, 7.58 | 2.74, 2.97 |
    #[cold]
    #[inline(never)]
    fn update(&mut self, shape: Shape, index: usize, k: u32) {
        with_constants!(R, shape => self.update_in(shape, index, k));
    }

    /// Applies value `k`, which changes it, to register `index`: the path of the items that
    /// reach a register's window (most early in a stream, few later). The martingale adds the
    /// inverse of the probability of a change (Horvitz–Thompson), then the unseen mass follows
    /// the register.
    #[inline(always)]
    fn update_in(&mut self, shape: Shape, index: usize, k: u32) {
        let Some(slot) = self.registers.get_mut(index) else { return };
        let old = slot.get();
        let d = u32::from(shape.d);
        let u = (old >> d) as u32;
        let (new, lost) = if k > u {
            let (raised, new) = (k - u, shape.raised(old, k));
            if (shape.t, shape.d) == (0, 2) {
                (new, shape.ull_lost(old, new))
            } else if u == 0 || raised > d {
                (new, shape.change_fixed(old) - shape.change_fixed(new))
            } else {
                // The maximum rose by `raised <= d` to k: the tail lost k and the values
                // between, which the new window holds unseen (a net loss of ρ_k alone), and
                // the window's lowest `raised` values fell out of it, the unseen ones with
                // their mass.
                let mut lost = u128::from(shape.rho_fixed(k));
                let mut dropped = !old & ((1 << raised) - 1);
                while dropped != 0 {
                    let j = dropped.trailing_zeros();
                    dropped &= dropped - 1;
                    // Bit j stands for value u + j − d, which exists from 1 on.
                    if u + j > d {
                        lost += u128::from(shape.rho_fixed(u + j - d));
                    }
                }
                (new, lost)
            }
        } else {
            // Value k, unseen in the window (`leaves` said so), became seen.
            debug_assert!(k < u && u - k <= d && old >> (d - (u - k)) & 1 == 0);
            (shape.marked(old, k), u128::from(shape.rho_fixed(k)))
        };
        *slot = R::put(new);
        if let Some(x) = &mut self.martingale {
            *x += pow2(64 + i32::from(shape.p)) / wide_to_f64(self.unseen);
        }
        self.unseen -= lost;
    }

    /// Recomputes the unseen mass from the registers: from a histogram of the states for
    /// one-byte registers, by a [`Tally`] for wider ones.
    pub(crate) fn recount(&mut self) {
        let shape = self.shape;
        if self.is_sparse() {
            return;
        }
        self.unseen = if size_of::<R>() == 1 {
            let histogram = self.byte_histogram();
            histogram
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(r, &n)| u128::from(n) * shape.change_fixed(r as u64))
                .sum()
        } else {
            self.tally().unseen_mass()
        };
    }

    /// How many registers hold each byte value (one-byte registers only).
    pub(crate) fn byte_histogram(&self) -> [u32; 256] {
        super::register_sums::histogram(&self.registers, |r| r.get() as usize & 255)
    }

    /// The number of (register, value) pairs known seen: each took a distinct item and a
    /// change of its own, a floor for any estimate and for the martingale.
    pub(crate) fn seen_pairs(&self) -> u64 {
        let mask = self.shape.history_mask();
        self.registers.iter().map(|r| r.get()).filter(|&r| r != 0).map(|r| 1 + u64::from((r & mask).count_ones())).sum()
    }

    /// The counts of values known seen, level by level.
    pub(crate) fn seen_by_level(&self) -> Vec<u32> {
        if size_of::<R>() == 1 {
            // One-byte registers: count each state once, from a histogram of the bytes.
            let mut seen = vec![0u32; self.shape.levels()];
            let histogram = self.byte_histogram();
            for (r, &times) in histogram.iter().enumerate().filter(|&(_, &times)| times > 0) {
                self.shape.count_seen(r as u64, times, &mut seen);
            }
            seen
        } else {
            self.tally().seen_by_level()
        }
    }

    /// The [`Tally`] of the registers.
    fn tally(&self) -> Tally {
        Tally::new(self.shape, self.registers.iter().map(|r| r.get()))
    }

    /// The maximum-likelihood estimate, before any bias correction.
    pub(crate) fn raw_ml_estimate(&self) -> f64 {
        self.shape.ml_estimate(self.unseen, &self.seen_by_level())
    }

    /// Merges a sketch of the same shape and seed: the union of the entries, or register by
    /// register (a sparse sketch's entries into the other's registers). The empty sketch
    /// changes nothing; merged into an empty sketch, a sketch brings its martingale; any
    /// other merge ends it.
    pub(crate) fn merge_same(&mut self, other: &Self) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.clone_from(other);
            return;
        }
        if other.is_sparse() {
            other.sparse.entries().for_each(|entry| self.add_entry(entry, false));
        } else if self.is_sparse() {
            let ours = std::mem::replace(self, other.clone());
            ours.sparse.entries().for_each(|entry| self.add_entry(entry, false));
        } else {
            R::union_all(self.shape, &mut self.registers, &other.registers);
        }
        if !self.is_sparse() {
            self.recount();
            self.martingale = None;
        }
    }

    /// Merges a sketch of the same `t`, `d` and seed (the callers check them), at the smaller
    /// of the two precisions: the finer sketch is reduced first, exactly.
    pub(crate) fn merge_reducing(&mut self, other: &Self) {
        let (ours, theirs) = (self.shape.p, other.shape.p);
        if theirs < ours {
            *self = self.reduce(theirs);
        }
        if theirs > ours { self.merge_same(&other.reduce(ours)) } else { self.merge_same(other) }
    }

    /// The relative standard error of the estimate as the sketch stands: the martingale's
    /// while it has one, maximum likelihood's otherwise.
    pub(crate) fn relative_standard_error(&self) -> f64 {
        let shape = self.shape;
        if self.is_sparse() {
            return 0.0;
        }
        let mvp = if self.martingale.is_some() { optimal::mvp_martingale(shape) } else { optimal::mvp_ml(shape) };
        optimal::relative_standard_error(mvp, shape)
    }

    /// `estimate · (1 ± z · relative standard error)`, its lower end raised to the number of
    /// (register, value) pairs known seen; the exact count while sparse.
    pub(crate) fn bounds(&self, estimate: f64, confidence: Confidence) -> Bounds {
        if self.is_sparse() {
            return sparse::bounds(self.sparse.len(), confidence);
        }
        Bounds::relative(estimate, self.relative_standard_error(), confidence, self.seen_pairs() as f64)
    }

    /// This sketch at precision `p` (at most its own): as if a sketch of that precision had
    /// seen the same items. The martingale does not carry over.
    pub(crate) fn reduce(&self, p: u8) -> Self {
        if p == self.shape.p {
            return self.clone();
        }
        let coarse = Shape { p, ..self.shape };
        if self.is_sparse() {
            // Entries hold every coarser precision: the coarse sketch of the same entries,
            // sparse, or dense without a martingale (a coarse shape born dense, such as
            // UltraLogLog's precision 3, starts one at 0, which these items never added to).
            let mut out = Self::new(coarse, self.seed);
            self.sparse.entries().for_each(|entry| out.add_entry(entry, false));
            if !out.is_sparse() && !out.is_empty() {
                out.recount();
                out.martingale = None;
            }
            return out;
        }
        let mut out = Self::new_dense(coarse, self.seed);
        let shift = self.shape.p - p;
        for (i, r) in self.registers.iter().enumerate() {
            let reduced = self.shape.reduced(r.get(), i, coarse);
            if let Some(slot) = out.registers.get_mut(i >> shift) {
                *slot = R::put(coarse.union(slot.get(), reduced));
            }
        }
        if out.is_empty() {
            return Self::new(coarse, self.seed);
        }
        out.recount();
        out.martingale = None;
        out
    }

    /// The bytes [`encode`](Self::encode) writes.
    pub(crate) fn encoded_len(&self) -> usize {
        let body = if self.is_sparse() {
            4 + 4 * self.sparse.len()
        } else {
            packed_len(self.registers.len(), self.shape.bits())
        };
        9 + 8 * usize::from(self.martingale.is_some()) + body
    }

    /// Writes flags (bit 0: martingale present, bit 1: sparse), seed, the martingale if
    /// present, then either the number of entries (u32) and the entries in ascending order
    /// (u32 each), or the registers packed `shape.bits()` bits each, least significant first.
    pub(crate) fn encode(&self, w: &mut crate::codec::Writer) {
        w.put_u8(u8::from(self.martingale.is_some()) | u8::from(self.is_sparse()) << 1);
        w.put_u64(self.seed);
        if let Some(x) = self.martingale {
            w.put_f64(x);
        }
        if self.is_sparse() {
            self.sparse.encode(w);
            return;
        }
        let bits = self.shape.bits();
        let out = w.put_zeroed(packed_len(self.registers.len(), bits));
        let (mut acc, mut filled, mut at) = (0u128, 0u32, 0usize);
        for r in self.registers.iter() {
            acc |= u128::from(r.get()) << filled;
            filled += bits;
            while filled >= 8 {
                out[at] = acc as u8;
                (acc, filled, at) = (acc >> 8, filled - 8, at + 1);
            }
        }
        if filled > 0 {
            out[at] = acc as u8;
        }
    }

    /// Reads the entries of a sparse encoding: no more than the sparse mode holds, ascending,
    /// each one [`sparse::entry`] can make.
    fn decode_sparse(r: &mut crate::codec::Reader<'_>, shape: Shape, seed: u64) -> Result<Self, DecodeError> {
        if Self::limit(shape) == 0 {
            return Err(DecodeError::InvalidField { field: "flags", reason: "this shape has no sparse mode" });
        }
        let mut core = Self::new(shape, seed);
        sparse::decode_entries(r, Self::limit(shape), |entry| core.add_entry(entry, false))?;
        Ok(core)
    }

    /// Reads what [`encode`](Self::encode) wrote for `shape`, validating every register and
    /// the martingale.
    pub(crate) fn decode(r: &mut crate::codec::Reader<'_>, shape: Shape) -> Result<Self, DecodeError> {
        let flags = r.u8()?;
        if flags & !3 != 0 {
            return Err(DecodeError::InvalidField { field: "flags", reason: "unknown flag bits" });
        }
        let seed = r.u64()?;
        if flags & 2 != 0 {
            if flags & 1 != 0 {
                return Err(DecodeError::InvalidField { field: "flags", reason: "a sparse sketch has no martingale" });
            }
            return Self::decode_sparse(r, shape, seed);
        }
        let martingale = if flags & 1 != 0 {
            let x = r.f64()?;
            if !(x.is_finite() && x.is_sign_positive()) {
                return Err(DecodeError::InvalidField { field: "martingale", reason: "not a finite count" });
            }
            Some(x)
        } else {
            None
        };
        let bits = shape.bits();
        let packed = r.take(packed_len(shape.registers(), bits))?;
        let mut core = Self::new_dense(shape, seed);
        let mask = (1u128 << bits) - 1;
        let (mut acc, mut filled, mut bytes) = (0u128, 0u32, packed.iter());
        for slot in core.registers.iter_mut() {
            while filled < bits {
                acc |= u128::from(*bytes.next().unwrap_or(&0)) << filled;
                filled += 8;
            }
            let v = (acc & mask) as u64;
            (acc, filled) = (acc >> bits, filled - bits);
            if !shape.is_valid(v) {
                return Err(DecodeError::InvalidField {
                    field: "registers",
                    reason: "not a register this shape makes",
                });
            }
            *slot = R::put(v);
        }
        if acc != 0 {
            return Err(DecodeError::InvalidField { field: "registers", reason: "padding bits set" });
        }
        core.recount();
        // A shape with a sparse mode turns dense in a stream past `limit` distinct entries,
        // and its martingale starts at that count: such a sketch has enough registers set to
        // hold them. So does any dense sketch of t = 0, whatever merges and reductions made it;
        // with t >= 1 a reduction of a shape born dense (p + t > 26) gives one with few items.
        let limit = Self::limit(shape);
        let set = core.registers.iter().filter(|r| r.get() != 0).count();
        let turned_dense = martingale.is_some() || shape.t == 0;
        if limit > 0 && turned_dense && !sparse::dense_enough(set, shape.p, limit) {
            return Err(DecodeError::InvalidField { field: "registers", reason: "too few set for a dense sketch" });
        }
        // The empty sketch is one born dense, with its martingale at 0.
        if core.is_empty() && martingale != Some(0.0) {
            return Err(DecodeError::InvalidField { field: "martingale", reason: "not what the registers allow" });
        }
        let ceiling = (most_changes(&core), core.unseen, shape.p);
        check_martingale(martingale, (limit, core.seen_pairs() as f64), ceiling)?;
        core.martingale = martingale;
        Ok(core)
    }
}

/// A [`Core`] on the heap, its shape and seed copied beside the pointer. A loop of `observe`
/// reads the shape and the seed from here; the only calls the per-item path makes (into the
/// sparse mode) get the heap `Core`, which cannot reach this copy, so the compiler keeps shape
/// and seed in registers across items instead of reloading them, and the seed-dependent part
/// of the hash with them.
#[derive(Clone)]
pub(crate) struct Boxed<R> {
    pub(crate) shape: Shape,
    pub(crate) seed: u64,
    core: Box<Core<R>>,
}

impl<R: Cell> Boxed<R> {
    pub(crate) fn new(core: Core<R>) -> Self {
        Self { shape: core.shape, seed: core.seed, core: Box::new(core) }
    }

    /// See [`Core::observe_hash_as`].
    #[inline(always)]
    pub(crate) fn observe_hash(&mut self, hash: u64) {
        self.core.observe_hash_as(self.shape, hash);
    }

    /// See [`Core::observe_hashes`].
    #[inline]
    pub(crate) fn observe_hashes(&mut self, hashes: impl Iterator<Item = u64>) {
        self.core.observe_hashes(hashes);
    }

    /// See [`Core::merge_same`].
    pub(crate) fn merge_same(&mut self, other: &Self) {
        self.core.merge_same(&other.core);
    }

    /// See [`Core::merge_reducing`]: the precision may fall.
    pub(crate) fn merge_reducing(&mut self, other: &Self) {
        self.core.merge_reducing(&other.core);
        self.shape = self.core.shape;
    }
}

impl<R: Cell> PartialEq for Boxed<R> {
    /// As [`Core`]'s.
    fn eq(&self, other: &Self) -> bool {
        self.core == other.core
    }
}

impl<R> std::ops::Deref for Boxed<R> {
    type Target = Core<R>;
    fn deref(&self) -> &Core<R> {
        &self.core
    }
}

impl<R: Cell> PartialEq for Core<R> {
    /// Same configuration and state: the registers or the entries, and the martingale, bit
    /// for bit (or none), on which the estimate depends. (An empty sketch of a shape is
    /// always the same one, sparse or born dense with its martingale at 0, whatever made it.)
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape
            && self.seed == other.seed
            && self.martingale.map(f64::to_bits) == other.martingale.map(f64::to_bits)
            && self.registers == other.registers
            && self.sparse.same_entries(&other.sparse)
    }
}

/// The most changes registers can have taken (for the martingale's ceiling): each change
/// raised a register's maximum `u` or marked a value below it, each value at most once, so a
/// register of maximum `u` took at most `2u`.
fn most_changes<R: Cell>(core: &Core<R>) -> u64 {
    let d = u32::from(core.shape.d);
    core.registers.iter().map(|r| 2 * (r.get() >> d)).sum()
}

/// Bytes of `m` registers of `bits` bits each.
pub(crate) fn packed_len(m: usize, bits: u32) -> usize {
    (m * bits as usize).div_ceil(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: [Shape; 9] = [
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

    fn splitmix(state: &mut u64) -> u64 {
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
    fn the_tally_agrees_with_the_registers_one_by_one() {
        // Every maximum, the top levels included, with random histories (valid ones).
        let mut state = 3;
        for shape in SHAPES {
            let d = u32::from(shape.d);
            let registers: Vec<u64> = (0..=u64::from(shape.max_value()))
                .flat_map(|u| [u, u])
                .map(|u| {
                    let r = u << d | (splitmix(&mut state) & shape.history_mask());
                    // Clears the history of values below 1, and all of it in the empty register.
                    let lowest = (u64::from(d) + 1).saturating_sub(u).min(63);
                    if u == 0 { 0 } else { r & !((1 << lowest) - 1) }
                })
                .collect();
            assert!(registers.iter().all(|&r| shape.is_valid(r)));
            let direct: u128 = registers.iter().map(|&r| shape.change_fixed(r)).sum();
            let mut seen = vec![0u32; shape.levels()];
            registers.iter().for_each(|&r| shape.count_seen(r, 1, &mut seen));
            let tally = Tally::new(shape, registers.iter().copied());
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
    fn the_unseen_mass_follows_the_registers() {
        /// Item by item and in batches (whose updates are inlined for `u32` cells, out of
        /// line for `u8`), the unseen mass stays the recount of the registers.
        fn check<R: Cell>(shape: Shape, state: &mut u64) {
            let (mut one, mut batch) = (Core::<R>::new(shape, 0), Core::<R>::new(shape, 0));
            for i in 0..200_u64 {
                let hashes: Vec<u64> = (0..100).map(|j| splitmix(state) >> ((i + j) % 7)).collect();
                hashes.iter().for_each(|&h| one.observe_hash_as(shape, h));
                batch.observe_hashes(hashes.into_iter());
                for core in [&one, &batch] {
                    let mut fresh = core.clone();
                    fresh.recount();
                    assert_eq!(core.unseen, fresh.unseen, "{shape:?} after {} items", 100 * (i + 1));
                }
                assert_eq!(one.unseen, batch.unseen, "{shape:?} after {} items", 100 * (i + 1));
            }
        }
        let mut state = 11;
        for shape in SHAPES.into_iter().chain([Shape { p: 4, t: 0, d: 26 }, Shape { p: 3, t: 4, d: 0 }]) {
            check::<u32>(shape, &mut state);
            if (shape.t, shape.d) == (0, 2) {
                check::<u8>(shape, &mut state);
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
