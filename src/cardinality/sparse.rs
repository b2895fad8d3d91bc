//! The exact small-range form shared by [`HyperLogLog`](super::HyperLogLog),
//! [`UltraLogLog`](super::UltraLogLog) and [`ExaLogLog`](super::ExaLogLog): a set of 32-bit
//! *entries*, each what the sketch needs of one hash at the finest precision the entry allows.
//!
//! ```text
//!  entry: | top 26 − t hash bits | low t hash bits | rank: 6 bits |
//!  rank = 1 + trailing zeros of the geometric part at precision 26 − t (38 bits; 39 if all zero)
//! ```
//!
//! From an entry, the register index and update value of its hash at any precision
//! `p <= 26 − t` follow exactly ([`entry_value`]): the sparse form turns into the registers
//! the sketch would have had, at its own precision or any coarser one. With `t = 0` the entry
//! is HyperLogLog's and UltraLogLog's alike, so an UltraLogLog's entries are those of the
//! HyperLogLog of the same items.
//!
//! Two distinct hashes share an entry with probability `2^−26/3` (26 uniform bits and the
//! geometric rank, whose values coincide with probability `Σ 4^−j = 1/3`).

use super::estimators::pow2;
use crate::codec::{Reader, Writer};
use crate::core::{Bounds, Confidence, DecodeError};

/// Hash bits an entry keeps above its rank: the top `26 − t` and the low `t`.
pub(crate) const SPARSE_BITS: u32 = 26;
const RANK_BITS: u32 = 6;
const RANK_MASK: u32 = (1 << RANK_BITS) - 1;
/// Width of the geometric part at the sparse precision: the 64 hash bits less the 26 kept.
const GEOMETRIC_BITS: u32 = 64 - SPARSE_BITS;
/// The largest rank: every geometric bit zero.
const MAX_RANK: u32 = GEOMETRIC_BITS + 1;
const INITIAL_SLOTS: usize = 4;

/// The entry of a hash for a sketch of `t` sub-level bits.
///
/// ```text
///  hash:  | top 26 − t bits | geometric part: 38 bits | low t bits |
/// ```
#[inline]
pub(crate) fn entry(hash: u64, t: u32) -> u32 {
    let top = (hash >> (64 - (SPARSE_BITS - t))) as u32;
    let sub = (hash as u32) & ((1 << t) - 1);
    // The sentinel just above the geometric part caps its trailing zeros at 38.
    let rank = ((hash >> t) | 1 << GEOMETRIC_BITS).trailing_zeros() + 1;
    (((top << t) | sub) << RANK_BITS) | rank
}

/// The register index and update value `k = z · 2^t + sub + 1` at precision `p <= 26 − t` of
/// the hash `entry` came from (`z` the trailing zeros of the geometric part at `p`). With
/// `t = 0`, `k` is HyperLogLog's rank.
#[inline]
pub(crate) fn entry_value(entry: u32, p: u32, t: u32) -> (usize, u32) {
    let top = entry >> (RANK_BITS + t);
    let sub = (entry >> RANK_BITS) & ((1 << t) - 1);
    let extra = SPARSE_BITS - t - p;
    let rank = entry & RANK_MASK;
    // If the 38 geometric bits are not all zero, their lowest 1 is also the lowest 1 of the
    // longer geometric part at precision p; otherwise the count goes on into the `extra` top
    // bits between p and 26 − t.
    let z = if rank < MAX_RANK {
        rank - 1
    } else {
        let between = top & ((1 << extra) - 1);
        GEOMETRIC_BITS + if between == 0 { extra } else { between.trailing_zeros() }
    };
    ((top >> extra) as usize, (z << t) + sub + 1)
}

/// Whether `entry` is one [`entry`] makes: its rank in `1..=39`.
pub(crate) fn is_valid_entry(entry: u32) -> bool {
    (1..=MAX_RANK).contains(&(entry & RANK_MASK))
}

/// The most entries the sparse form holds for a dense form of `dense_bytes` bytes: 3/4 of a
/// table of `dense_bytes / 4` four-byte slots, so that it never takes more bytes; none when
/// not even the smallest table fits.
pub(crate) fn limit(dense_bytes: usize) -> usize {
    if dense_bytes < INITIAL_SLOTS * size_of::<u32>() {
        return 0;
    }
    dense_bytes / 4 * 3 / 4
}

/// The slots of the table that holds `limit` entries at a load of 3/4: those of the dense
/// form's bytes when `limit` is [`limit`]'s.
fn full_table(limit: usize) -> usize {
    (limit * 4 / 3).next_power_of_two().max(INITIAL_SLOTS)
}

/// Whether a dense sketch of precision `p` with `set` registers set can hold more than
/// `limit` distinct entries, as every sketch that turned dense does: at most
/// `2^(26 − p) · 39` entries land in one register (the entry bits below its index, and the
/// ranks). A decoder rejects fewer (at precision 18, fewer than 5 registers).
pub(crate) fn dense_enough(set: usize, p: u8, limit: usize) -> bool {
    let per_register = (1u64 << (SPARSE_BITS - u32::from(p).min(SPARSE_BITS))) * u64::from(MAX_RANK);
    (set as u64).saturating_mul(per_register) > limit as u64
}

/// The bounds of a sparse sketch of `len` entries: exact, but for items whose entries
/// coincide, a Poisson number of mean `len²/2 · 2^−26/3`, which the upper end allows for at
/// the same confidence.
pub(crate) fn bounds(len: usize, confidence: Confidence) -> Bounds {
    let n = len as f64;
    let coincidences = n * n / 2.0 * pow2(-(SPARSE_BITS as i32)) / 3.0;
    Bounds { lower: n, upper: n + (coincidences + confidence.z() * coincidences.sqrt()).ceil() }
}

/// An open-addressing set of entries (never 0: their rank is at least 1).
#[derive(Clone, Default)]
pub(crate) struct Sparse {
    /// Power-of-two table, `0` marks an empty slot.
    slots: Vec<u32>,
    len: usize,
}

impl Sparse {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes the table holds on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<u32>()
    }

    #[inline]
    fn home(&self, entry: u32) -> usize {
        // Above the rank, an entry is uniform hash bits: their low end addresses the table.
        (entry >> RANK_BITS) as usize & (self.slots.len() - 1)
    }

    /// Where `entry` is (`Ok`), or the empty slot where it would go (`Err`); the table must
    /// not be empty for an `Err` to be usable, which `insert_at` arranges.
    pub(crate) fn find(&self, entry: u32) -> Result<usize, usize> {
        if self.slots.is_empty() {
            return Err(0);
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(entry);
        loop {
            match self.slots[i] {
                0 => return Err(i),
                e if e == entry => return Ok(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Whether `entry` is in the set.
    pub(crate) fn contains(&self, entry: u32) -> bool {
        self.find(entry).is_ok()
    }

    /// Inserts an absent entry at the empty slot `find` gave, first growing the table (and
    /// then finding a new slot) if that would take its load above 3/4. `limit` is the most
    /// entries the set will hold ([`limit`]): the table grows fourfold, which rehashes a third
    /// as many entries on the way to the full table as doubling would, but never past the
    /// table that holds `limit` entries, whose bytes are the dense form's.
    #[inline]
    pub(crate) fn insert_at(&mut self, empty_slot: usize, entry: u32, limit: usize) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            return self.grow_and_insert(entry, limit);
        }
        self.slots[empty_slot] = entry;
        self.len += 1;
    }

    /// Inserts `entries` in order while the set has room for them: returns how many were
    /// taken (inserted, or already present), all of them unless one more distinct entry
    /// would exceed `limit`.
    #[inline]
    pub(crate) fn insert_while_room(&mut self, entries: &[u32], limit: usize) -> usize {
        // First the home slot of each of the first 64 entries, read before any insert: the
        // reads do not wait on one another, so a table that has left the cache costs about
        // one miss's wait for the block instead of one per entry. An entry found at home is
        // already in the set, and stays in.
        let mut at_home = 0_u64;
        if !self.slots.is_empty() {
            for (i, &entry) in entries.iter().take(64).enumerate() {
                // `home` masks by `slots.len() - 1` (a power of two, not 0): in bounds.
                at_home |= u64::from(self.slots[self.home(entry)] == entry) << i;
            }
        }
        for (taken, &entry) in entries.iter().enumerate() {
            if at_home.checked_shr(taken as u32).is_some_and(|bits| bits & 1 == 1) {
                continue;
            }
            if let Err(slot) = self.find(entry) {
                if self.len >= limit {
                    return taken;
                }
                self.insert_at(slot, entry, limit);
            }
        }
        entries.len()
    }

    /// [`insert_at`](Self::insert_at) into a grown table: out of line, as the few growths
    /// are, so that the insertion of every other entry is a store in the caller's loop.
    #[cold]
    #[inline(never)]
    fn grow_and_insert(&mut self, entry: u32, limit: usize) {
        self.grow_to((self.slots.len() * 4).clamp(INITIAL_SLOTS, full_table(limit)));
        if let Err(slot) = self.find(entry) {
            self.slots[slot] = entry;
            self.len += 1;
        }
    }

    /// Makes the table the full one of `limit` entries now, for a batch that may well fill
    /// it: no growth, and no rehash, on the way.
    pub(crate) fn presize(&mut self, limit: usize) {
        let full = full_table(limit);
        if self.slots.len() < full {
            self.grow_to(full);
        }
    }

    /// Moves the entries to a table of `slots` slots (a power of two that holds them).
    fn grow_to(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![0; slots]);
        for e in old.into_iter().filter(|&e| e != 0) {
            let Err(i) = self.find(e) else { continue };
            self.slots[i] = e;
        }
    }

    /// The entries, in table order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().copied().filter(|&e| e != 0)
    }

    /// The entries in ascending order: the canonical order of the encodings.
    pub(crate) fn sorted_entries(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self.entries().collect();
        out.sort_unstable();
        out
    }

    /// Writes the sparse part of an encoding: the count (u32), then the entries ascending.
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.put_u32(self.len() as u32);
        self.sorted_entries().into_iter().for_each(|e| w.put_u32(e));
    }

    /// Whether both hold the same entries.
    pub(crate) fn same_entries(&self, other: &Self) -> bool {
        self.len == other.len && self.entries().all(|e| other.contains(e))
    }
}

/// Reads what [`Sparse::encode`] wrote, validating it before anything is kept: no more than
/// `limit` entries (checked against the bytes left too, before the loop), ascending, each one
/// [`entry`] can make. `add` takes each entry in turn.
pub(crate) fn decode_entries(r: &mut Reader<'_>, limit: usize, mut add: impl FnMut(u32)) -> Result<(), DecodeError> {
    let n = r.u32()? as usize;
    if n > limit {
        return Err(DecodeError::InvalidField {
            field: "sparse count",
            reason: "more entries than the sparse mode holds",
        });
    }
    r.expect_items(n, 4)?;
    let mut previous = 0u32;
    for _ in 0..n {
        let entry = r.u32()?;
        if entry <= previous || !is_valid_entry(entry) {
            return Err(DecodeError::InvalidField { field: "sparse entries", reason: "not ascending valid entries" });
        }
        previous = entry;
        add(entry);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills a set to `limit` entries as `add_entry` does, presized or growing.
    fn filled(limit: usize, presized: bool) -> Sparse {
        let mut set = Sparse::new();
        if presized {
            set.presize(limit);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        while set.len() < limit {
            x = x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(1);
            if let Err(slot) = set.find(entry(x, 0)) {
                set.insert_at(slot, entry(x, 0), limit);
            }
        }
        set
    }

    #[test]
    fn the_table_never_outgrows_the_dense_form() {
        for dense_bytes in (4..=20).map(|k| 1usize << k) {
            let limit = limit(dense_bytes);
            let (grown, presized) = (filled(limit, false), filled(limit, true));
            assert_eq!(grown.heap_bytes(), dense_bytes, "dense bytes {dense_bytes}");
            assert_eq!(presized.heap_bytes(), dense_bytes, "dense bytes {dense_bytes}");
            assert!(grown.same_entries(&presized) && presized.same_entries(&grown));
            assert_eq!(grown.sorted_entries(), presized.sorted_entries());
        }
    }
}
