//! One pass over a whole array of registers with a history, for what the estimators and the
//! recount after a merge read of all of them at once: the probability mass of the values the
//! registers know they have not seen, and the number of values known seen at each level.
//! Per register it is a handful of shifts, masks and additions, with no branch and no table,
//! so that ExaLogLog's 32-bit registers are summed in one pass rather than walked value by
//! value ([`Shape::count_seen`] and [`Shape::change_fixed`] are the definitions it agrees
//! with).

use super::registers::Shape;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cardinality::registers::tests::{SHAPES, splitmix};

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
}
