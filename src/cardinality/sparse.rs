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
//!
//! ## The coded form
//!
//! The plain encoding writes each entry in 4 bytes. The compressed encodings
//! (`to_compressed_bytes`) code the sorted entries instead ([`CodedEntries`]): above its rank an
//! entry is 26 uniform hash bits, so in ascending order the gaps between them are nearly
//! geometric, of mean `μ = 2^26/n`, which a Rice code (Golomb's code with a power-of-two
//! divisor `2^b`: the quotient in unary, then `b` low bits) writes within 0.03 bits of their
//! entropy `log2(e·μ)` when `b = 1 + ⌊log2(0.4812·μ)⌋` (Kiely's choice); and the rank is
//! geometric, `P(k) = 2^−k`, which unary (`k − 1` ones and a zero) writes in its entropy, 2
//! bits on average. An entry then
//! costs about `log2(2^26/n) + 3.47` bits, within a few hundredths of a bit of the information
//! `n` entries hold, `log2 C(2^26, n)/n + 2 ≈ log2(2^26/n) + 3.44`: at `n = 1000`, 19.5 bits
//! instead of 32.

use super::estimators::pow2;
use crate::codec::{Reader, Writer, varint_len};
use crate::core::{Bounds, Confidence, DecodeError};
use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

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

/// The most entries [`Sparse::sorted_entries`] distributes into buckets: its allocation takes
/// about 2.5 words an entry, the sorted entries included, 10 MB at most; more are sorted in
/// place.
const DISTRIBUTED_UP_TO: usize = 1 << 20;

/// The random tables of simple tabulation hashing, drawn once a process (from the standard
/// library's random hasher keys): an entry's slot is the XOR of one random word for each of
/// its four bytes ([`Sparse::home`]). They place entries in tables' slots and nothing else,
/// so nothing that is encoded or merged depends on them.
type Tabulation = [[u32; 256]; 4];

fn tabulation() -> &'static Tabulation {
    static TABLES: OnceLock<Box<Tabulation>> = OnceLock::new();
    TABLES.get_or_init(|| {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(RandomState::new().hash_one(0x5EED_u64));
        let mut tables = Box::new([[0u32; 256]; 4]);
        tables.iter_mut().flatten().for_each(|word| *word = rng.random());
        tables
    })
}

/// The home slot of `entry` in a table of `2^(32 − shift)` slots ([`Sparse::home`]).
#[inline]
fn home(tables: &Tabulation, shift: u32, entry: u32) -> usize {
    let [a, b, c, d] = entry.to_le_bytes().map(usize::from);
    let hash = tables[0][a] ^ tables[1][b] ^ tables[2][c] ^ tables[3][d];
    // The top bits, as many as address the slots (at least 4 of them: the shift is at most 30).
    (hash >> (shift & 31)) as usize
}

/// Puts an entry that is not in the table at the first empty slot from slot `i` on, `mask`
/// the slots' number less one (a table with an empty slot).
#[inline(always)]
fn place(slots: &mut [u32], mask: usize, mut i: usize, entry: u32) {
    while slots[i] != 0 {
        i = (i + 1) & mask;
    }
    slots[i] = entry;
}

/// An open-addressing set of entries (never 0: their rank is at least 1).
#[derive(Clone)]
pub(crate) struct Sparse {
    /// Power-of-two table, `0` marks an empty slot (a boxed slice, 8 bytes less than a
    /// vector: with `len` in 32 bits, room for `shift` and `tables` in the 32 bytes the set
    /// took without them).
    slots: Box<[u32]>,
    /// The entries (at most the limit, below 2^26).
    len: u32,
    /// `32 − log2` of the slots: the hash's top bits address them (a field: computed from
    /// the slots' length at each probe, it measured 1.2 times slower).
    shift: u32,
    /// [`tabulation`]'s tables, at hand.
    tables: &'static Tabulation,
}

impl Default for Sparse {
    fn default() -> Self {
        Self::new()
    }
}

impl Sparse {
    pub(crate) fn new() -> Self {
        Self { slots: Box::default(), len: 0, shift: 32, tables: tabulation() }
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// The bytes the table holds on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.len() * size_of::<u32>()
    }

    /// The slot an entry's probe starts at (the table not empty): the top bits of the entry's
    /// simple tabulation hash (Zobrist; Carter and Wegman), which keeps linear probing at its
    /// expected constant cost for every set of entries, crafted or not (Pătraşcu and Thorup
    /// 2012, "The power of simple tabulation hashing"). The entries' own bits would do for
    /// hashed items, but a decoder takes entries from its input: crafted ones whose low bits
    /// agree, in all 39 ranks, would share one run of slots and make each insertion probe all
    /// of it (about 2.8·10^11 probes for a precision-22 sketch of 750 000 such entries, 0.9 MB
    /// of coded input). Multiplying by a random odd key does not suffice: with one key in 100,
    /// arithmetic progressions of entries still sat 12 to 220 slots from home on average
    /// (measured over 200 keys), as Pătraşcu and Thorup show multiply-shift can. The price,
    /// measured against the low bits: 3000 items observed in 20.7 against 19.0 µs (HyperLogLog,
    /// a batch) and 25.5 against 18.4 µs (UltraLogLog, one by one), 3000 coded entries decoded
    /// in 30 against 26.5 µs.
    #[inline]
    fn home(&self, entry: u32) -> usize {
        home(self.tables, self.shift, entry)
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
        if (self.len() + 1) * 4 > self.slots.len() * 3 {
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
                if self.len() >= limit {
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

    /// Readies the set for `more` entries, at most `limit` in all: the table it would grow to
    /// for them, grown once, as [`fill`](Self::fill) does.
    fn reserve(&mut self, more: usize, limit: usize) {
        let len = (self.len() + more).min(limit);
        let mut slots = self.slots.len().max(INITIAL_SLOTS);
        while len * 4 > slots * 3 {
            slots *= 4;
        }
        let slots = slots.min(full_table(limit));
        if len > 0 && self.slots.len() < slots {
            self.grow_to(slots);
        }
    }

    /// Fills the empty set with the `n` entries `next` gives (at most `limit`), which ascend,
    /// as a decoder reads and validates them, so that none is in already: the table is grown
    /// for them all first, and each entry goes to the first empty slot from its home, with no
    /// comparison to the entries on the way. The entries taken before an error stay in the
    /// set.
    ///
    /// Each entry's home is found an entry ahead of its insert. The insert's probe branches on
    /// the slots (mispredicted about as often as not) and its first slot's address is then
    /// known, so a misprediction does not also wait for the next entry's read that the hash
    /// would wait on: 3000 coded entries decoded 3 % faster than with the home found at the
    /// insert. (Branchless probes, the home slot and the next three compared at once, took 8
    /// to 11 % longer: the store's address then waits on the slots' reads.)
    pub(crate) fn fill<E>(
        &mut self,
        n: usize,
        limit: usize,
        mut next: impl FnMut() -> Result<u32, E>,
    ) -> Result<(), E> {
        // A contract on the callers, not on their input (a decoder checks the count it reads
        // against the limit first): past the limit the table could fill, and a probe not end.
        assert!(self.len == 0 && n <= limit, "a decoder fills an empty set, to its limit at most");
        self.reserve(n, limit);
        let (tables, shift) = (self.tables, self.shift);
        let slots = &mut *self.slots;
        // A power of two: `reserve` leaves a table of at least 4 slots once `n` is not 0, and
        // at least one of them empty (a table holds its entries at a load of 3/4 at most).
        let mask = slots.len().wrapping_sub(1);
        let mut filled = 0;
        let taken = (|| {
            if n == 0 {
                return Ok(());
            }
            let mut entry = next()?;
            let mut i = home(tables, shift, entry);
            for _ in 1..n {
                let following = match next() {
                    Ok(following) => following,
                    Err(e) => {
                        // The entry taken before the error stays.
                        place(slots, mask, i, entry);
                        filled += 1;
                        return Err(e);
                    }
                };
                debug_assert!(following > entry, "entries ascend");
                let its_home = home(tables, shift, following);
                place(slots, mask, i, entry);
                filled += 1;
                (entry, i) = (following, its_home);
            }
            place(slots, mask, i, entry);
            filled += 1;
            Ok(())
        })();
        self.len = filled as u32;
        taken
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
        let old = std::mem::replace(&mut self.slots, vec![0; slots].into_boxed_slice());
        self.shift = u32::BITS - slots.trailing_zeros();
        // The entries are distinct, and the new table has room for them.
        for e in old.into_iter().filter(|&e| e != 0) {
            let home = self.home(e);
            place(&mut self.slots, slots - 1, home, e);
        }
    }

    /// The entries, in table order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().copied().filter(|&e| e != 0)
    }

    /// The entries in ascending order: the canonical order of the encodings.
    ///
    /// A distribution by their top bits into about half as many buckets as entries, then an
    /// insertion sort: an entry's top bits are uniform hash bits, so a bucket holds about two
    /// entries and the insertion sort moves each entry a place or two. For 3000 entries,
    /// 9.2 µs instead of 24 to collect them and `sort_unstable` them; for 100, 0.38 µs
    /// instead of 0.66. (With as many buckets as entries, a coded encoding of 100 or 3000
    /// entries took 3 to 4 % longer; with twice as many, 9 to 14 % longer again.) Where the
    /// largest bucket holds more than 32 entries, as only crafted ones do, `sort_unstable`
    /// sorts them instead: the cost is never more than that. Above [`DISTRIBUTED_UP_TO`]
    /// entries, `sort_unstable` sorts them in place. The vector keeps the capacity of the
    /// scratch it was sorted in, 2.5 times its length: it is for callers that drop it soon (the
    /// encoders).
    pub(crate) fn sorted_entries(&self) -> Vec<u32> {
        let n = self.len();
        if n > DISTRIBUTED_UP_TO {
            let mut out: Vec<u32> = self.entries().collect();
            out.sort_unstable();
            return out;
        }
        // The top `bits` of an entry are its bucket (one bucket for two entries or fewer).
        let bits = n.next_power_of_two().trailing_zeros().saturating_sub(1);
        let buckets = 1usize << bits;
        let bucket = |e: u32| (u64::from(e) >> (32 - bits)) as usize;
        // One allocation for the sorted entries, then the entries in table order (and 8
        // places more) and the buckets' counts, which are cut off at the end.
        let mut sorted = vec![0u32; n + n + 8 + buckets];
        let (out, scratch) = sorted.split_at_mut(n);
        let (entries, next) = scratch.split_at_mut(n + 8);
        // The entries out of the slots without a branch: each slot written at the place after
        // the entries so far, which only an entry moves on (the places after the last entry
        // take the empty slots after it). Eight slots at a time, into eight places checked
        // once: 117 ns instead of 197 for 256 slots, a slot at a time.
        let mut at = 0;
        let mut chunks = self.slots.chunks_exact(8);
        for chunk in &mut chunks {
            // `at` is at most `n`, the entries there are: the places are in range.
            let base = at.min(n);
            let places = &mut entries[base..base + 8];
            let mut k = 0;
            for &e in chunk {
                places[k & 7] = e;
                k += usize::from(e != 0);
            }
            at += k;
        }
        // (A table of 4 slots.)
        for &e in chunks.remainder() {
            entries[at.min(n)] = e;
            at += usize::from(e != 0);
        }
        let entries = &entries[..n];
        for &e in entries {
            next[bucket(e)] += 1;
        }
        // Each bucket's count turned into its first place: the sum carried in a register, not
        // read back from the slot just written.
        let (mut sum, mut largest) = (0, 0);
        for slot in next.iter_mut() {
            largest = largest.max(*slot);
            (*slot, sum) = (sum, sum + *slot);
        }
        for &e in entries {
            let b = bucket(e);
            out[next[b] as usize] = e;
            next[b] += 1;
        }
        // Now only entries of one bucket can be out of order: an insertion sort moves each
        // entry past fewer than the largest bucket's, or, where entries were crafted into
        // large buckets, `sort_unstable` bounds the cost.
        if largest > 32 {
            out.sort_unstable();
        } else {
            for i in 1..n {
                let e = out[i];
                let mut j = i;
                while j > 0 && out[j - 1] > e {
                    out[j] = out[j - 1];
                    j -= 1;
                }
                out[j] = e;
            }
        }
        sorted.truncate(n);
        sorted
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

/// Reads what [`Sparse::encode`] wrote into the empty `set`, validating it before anything is
/// kept: no more than `limit` entries (checked against the bytes left too, before the loop),
/// ascending, each one [`entry`] can make.
pub(crate) fn decode_entries(r: &mut Reader<'_>, limit: usize, set: &mut Sparse) -> Result<(), DecodeError> {
    let n = r.u32()? as usize;
    if n > limit {
        return Err(DecodeError::InvalidField {
            field: "sparse count",
            reason: "more entries than the sparse mode holds",
        });
    }
    r.expect_items(n, 4)?;
    let mut previous = 0u32;
    set.fill(n, limit, || {
        let entry = r.u32()?;
        if entry <= previous || !is_valid_entry(entry) {
            return Err(DecodeError::InvalidField { field: "sparse entries", reason: "not ascending valid entries" });
        }
        previous = entry;
        Ok(entry)
    })
}

/// `2^26 · −ln(φ − 1)`, `φ` the golden ratio, rounded down: the scale of Kiely's optimal Rice
/// parameter for gaps of mean `2^26/n`.
const RICE_SCALE: usize = 32_293_573;

/// The Rice parameter `b` of `n` entries' gaps, geometric of mean `μ = 2^26/n`: Kiely's
/// optimum `1 + ⌊log2(−ln(φ − 1)·μ)⌋` (0 when that is below 1), which codes a geometric gap
/// within 0.03 bits of its entropy (Kiely 2004, "Selecting the Golomb parameter in Rice
/// coding"). At most 25.
fn rice_bits(n: usize) -> usize {
    match RICE_SCALE / n.max(1) {
        0 => 0,
        q => 1 + q.ilog2() as usize,
    }
}

/// The plain encoding's bytes for `n` entries ([`Sparse::encode`]): the count (u32) and 4
/// bytes each.
pub(crate) fn plain_len(n: usize) -> usize {
    4 + 4 * n
}

/// The least rank an entry can have after one of rank `previous_rank` (0 before the first
/// entry) when its hash bits are `gap` above that one's: 1, or one more than the previous rank
/// when both have the same hash bits (the entries ascend).
fn least_rank(previous_rank: u32, gap: u32) -> u32 {
    if gap == 0 { previous_rank + 1 } else { 1 }
}

/// The ones that code rank `r` after an entry of other hash bits (`r − 1` of them), by rank.
const RANK_ONES: [u64; 64] = {
    let mut ones = [0; 64];
    let mut r = 1;
    while r < 64 {
        ones[r] = (1 << (r - 1)) - 1;
        r += 1;
    }
    ones
};

/// The bits that code rank `r` after an entry of other hash bits: its `r − 1` ones, and a
/// closing zero but for the largest rank.
const RANK_CODE_LEN: [u32; 64] = {
    let mut len = [0; 64];
    let mut r = 1;
    while r < 64 {
        len[r] = r as u32 - 1 + if r < MAX_RANK as usize { 1 } else { 0 };
        r += 1;
    }
    len
};

/// A sparse sketch's entries in the coded form (see the [module docs](self)): their number
/// (a varint), then a bit stream, least significant bit of each byte first, of each entry in
/// ascending order: the gap from the previous entry's hash bits (from 0 for the first) in
/// Rice's code (the quotient by `2^b` as that many ones and a zero, then the `b` low bits,
/// least significant first), then the rank less the least it can be ([`least_rank`]) as that
/// many ones and a zero, the zero left out for rank 39, the largest. The last byte is padded
/// with zeros.
pub(crate) struct CodedEntries {
    count: usize,
    stream: Vec<u8>,
}

impl CodedEntries {
    /// The coded form of `sorted` entries (ascending, distinct, valid), when it is shorter
    /// than the plain one, as it is but for a few entries far apart or crafted with high ranks.
    pub(crate) fn of(sorted: &[u32]) -> Option<Self> {
        // The longest stream kept: with the count, a byte shorter than plain.
        let n = sorted.len();
        let coded = Self::code(sorted, plain_len(n) - varint_len(n as u64) - 1)?;
        debug_assert!(coded.len() < plain_len(n));
        Some(coded)
    }

    /// The coded form of `sorted` entries, or `None` if the stream takes more than `room`
    /// bytes (found as soon as it passes them by 8).
    fn code(sorted: &[u32], room: usize) -> Option<Self> {
        let b = rice_bits(sorted.len()) as u32;
        let low_bits = (1 << b) - 1;
        let mut bits = BitWriter::new(room);
        // The previous entry's hash bits and rank; before the first, 0 and 0.
        let (mut previous_top, mut previous_rank) = (0, 0);
        for &entry in sorted {
            let (top, rank) = (entry >> RANK_BITS, entry & RANK_MASK);
            let gap = top - previous_top;
            let quotient = gap >> b;
            // As if the hash bits differ from the previous entry's, as they do but for 1 entry
            // in about `2^26/n`: then the rank's least is 1.
            let len = quotient + 1 + b + RANK_CODE_LEN[rank as usize];
            if gap != 0 && len <= MOST_PUT {
                // Nearly every entry, in one word: the rank's ones above the low bits, a zero
                // below them, and the quotient's ones below that, as `(x·2 + 1)·2^q − 1` is
                // `x` above a zero above `q` ones (each shift below 64, as `len` is).
                let x = RANK_ONES[rank as usize] << b | u64::from(gap & low_bits);
                bits.put(((x << 1 | 1) << quotient) - 1, len)?;
            } else {
                let extra = rank - least_rank(previous_rank, gap);
                bits = bits.put_long(quotient, (gap & low_bits, b), extra, u32::from(rank < MAX_RANK))?;
            }
            (previous_top, previous_rank) = (top, rank);
        }
        Some(Self { count: sorted.len(), stream: bits.finish()? })
    }

    /// The bytes [`write`](Self::write) writes.
    pub(crate) fn len(&self) -> usize {
        varint_len(self.count as u64) + self.stream.len()
    }

    /// Writes the count (a varint), then the stream.
    pub(crate) fn write(&self, w: &mut Writer) {
        w.put_varint(self.count as u64);
        w.put_bytes(&self.stream);
    }
}

/// Reads what [`CodedEntries::write`] wrote, validating it before anything is kept: no more
/// than `limit` entries, checked against the bits left (each takes at least `b + 1`) before
/// the loop; every gap within the 26 hash bits, every rank within 39 and above the previous
/// one of the same hash bits, the padding zero, and the coded form shorter than the plain one,
/// as only the encoder writes it, into the empty `set`. Each entry goes into the set as it is
/// read, into a table grown for them all first: the inserts' probes then overlap the reads
/// (1.1 times faster than reading them all first).
pub(crate) fn decode_coded_entries(r: &mut Reader<'_>, limit: usize, set: &mut Sparse) -> Result<(), DecodeError> {
    let (n, b, mut bits) = coded_count(r, limit)?;
    // The previous entry's hash bits and rank (none: 0 and 0, so that the first entry's least
    // rank is 1).
    let (mut previous_top, mut previous_rank) = (0u32, 0u32);
    let low_bits = (1 << b) - 1;
    // `n` is no more than the bits hold (`coded_count`); each entry goes into the set as it is
    // read (see the docs above).
    // A refill every other entry where two entries fit the 56 bits or more a refill leaves, as
    // they do when `b` is 18 or less (`n` above 123) but for 1 entry in 1000 (measured at `n` =
    // 130; 1 in 3000 to 10 000 at 160 to 1000, none at 3000), which the field-by-field path reads;
    // a refill each where entries are longer. A branch on the bits waiting, taken every two or
    // three entries with no pattern, is mispredicted where one every other entry is not: 3000 and
    // 1000 entries decoded 1.07 and 1.08 times faster. (The first entry's refill is here, then one
    // before the second, the fourth, and so on.)
    let (refill_every_other, mut taken) = (u32::from(b <= 18), 0u32);
    bits.refill();
    set.fill(
        n,
        limit,
        #[inline(always)]
        || {
            // Most entries lie whole among the bits waiting: the quotient's ones and zero, the low
            // bits and the rank's ones and their zero (56 bits or more after a refill, an entry
            // about `b + 4`). Then they are read from one word, as if they were: the chain from
            // one entry's length to the next is two counts of ones and three additions, and
            // whether they were whole and valid is checked beside it. Otherwise (`coded_entry`,
            // which refills as it needs) one field at a time.
            taken += 1;
            if taken & refill_every_other == 0 {
                bits.refill();
            }
            let (word, inverse) = (bits.buffer, !bits.buffer);
            let run = inverse.trailing_zeros();
            let rank_at = run + 1 + b;
            // (Shifts by 64 or more, wrapped, only give counts that fail the test of `len`.)
            let ones = inverse.wrapping_shr(rank_at).trailing_zeros();
            let len = rank_at + ones + 1;
            // At most `64 · 2^25 + 2^25`, and the sum below 2^32.
            let gap = run << b | (word.wrapping_shr(run + 1) as u32 & low_bits);
            let top = previous_top + gap;
            let least = least_rank(previous_rank, gap);
            // Whole, of hash bits in range and a rank below the largest (which has no closing
            // zero, and is read by `coded_entry`).
            (previous_top, previous_rank) = if len <= bits.waiting && top < 1 << SPARSE_BITS && least + ones < MAX_RANK
            {
                // `len` is at most the bits waiting, below 64.
                bits.buffer >>= len;
                bits.waiting -= len;
                (top, least + ones)
            } else {
                let entry;
                ((bits.next, bits.buffer, bits.waiting), entry) =
                    coded_entry(bits.bytes, (bits.next, bits.buffer, bits.waiting), b, (previous_top, previous_rank))?;
                entry
            };
            Ok(previous_top << RANK_BITS | previous_rank)
        },
    )?;
    coded_end(r, bits, n)
}

/// The head of what [`CodedEntries::write`] wrote: the count of entries, no more than `limit`
/// and no more than the bits left hold (each entry takes at least `b + 1`), the Rice parameter
/// `b` of that count, and a reader of the bits.
fn coded_count<'a>(r: &mut Reader<'a>, limit: usize) -> Result<(usize, u32, BitReader<'a>), DecodeError> {
    let n = r.varint()?;
    if n > limit as u64 {
        return Err(DecodeError::InvalidField {
            field: "sparse count",
            reason: "more entries than the sparse mode holds",
        });
    }
    let n = n as usize;
    let b = rice_bits(n);
    let rest = r.rest();
    if rest.len().saturating_mul(8) < n * (b + 1) {
        return Err(DecodeError::Truncated { needed: (n * (b + 1)).div_ceil(8), available: rest.len() });
    }
    Ok((n, b as u32, BitReader::new(rest)))
}

/// The end of what [`CodedEntries::write`] wrote, once its `n` entries are read from `bits`:
/// the padding zero, and the coded form shorter than the plain one, as only the encoder writes
/// it. The bytes read are taken from `r`.
fn coded_end(r: &mut Reader<'_>, mut bits: BitReader<'_>, n: usize) -> Result<(), DecodeError> {
    let invalid = |reason| DecodeError::InvalidField { field: "sparse entries", reason };
    let used = bits.read().div_ceil(8);
    if bits.take((used * 8 - bits.read()) as u32) != Some(0) {
        return Err(invalid("padding bits set"));
    }
    r.take(used)?;
    if varint_len(n as u64) + used >= plain_len(n) {
        return Err(invalid("coded no shorter than plain, which the encoder writes instead"));
    }
    Ok(())
}

/// One coded entry read a field at a time, after one with hash bits `previous_top` and rank
/// `previous_rank` (0 before the first): its hash bits and rank, or why the bits are not an
/// entry the encoder writes. For the entries [`decode_coded_entries`] does not read from one
/// word: a long quotient or rank, the largest rank (which has no closing zero), the end of the
/// stream, or an invalid entry. (It takes the reader's bytes and position, and gives back its
/// position, so that the reader stays in registers in the decoder's loop. With a reference to
/// the reader, the loop was 1.13 times slower; with the reader taken and given back whole, the
/// loop kept it in memory and put it back together from the pieces the result held it in at
/// every refill, and 3000 entries took 1.09 times as long.)
#[cold]
#[inline(never)]
fn coded_entry(
    bytes: &[u8],
    (next, buffer, waiting): Position,
    b: u32,
    (previous_top, previous_rank): (u32, u32),
) -> Result<(Position, (u32, u32)), DecodeError> {
    let mut bits = BitReader { bytes, next, buffer, waiting };
    let invalid = |reason| DecodeError::InvalidField { field: "sparse entries", reason };
    // Past the least bits each entry takes: the stream ended within an entry.
    let truncated = || DecodeError::Truncated { needed: bits.bytes.len() + 1, available: bits.bytes.len() };
    // The quotient, no more than the hash bits left allow: its ones, then a zero.
    let most = ((1u32 << SPARSE_BITS) - 1 - previous_top) as usize >> b;
    let quotient = bits.ones(most + 1).ok_or_else(truncated)?;
    if quotient > most {
        return Err(invalid("a gap beyond the hash bits"));
    }
    bits.skip(1); // the zero `ones` stopped at
    let gap = (quotient as u32) << b | bits.take(b).ok_or_else(truncated)?;
    let top = previous_top + gap;
    if top >= 1 << SPARSE_BITS {
        return Err(invalid("a gap beyond the hash bits"));
    }
    let least = least_rank(previous_rank, gap);
    if least > MAX_RANK {
        return Err(invalid("not ascending valid entries"));
    }
    // The rank: ones up to the most it can add, then a zero unless it is the largest.
    let most = MAX_RANK - least;
    let ones = bits.ones(most as usize).ok_or_else(truncated)? as u32;
    if ones < most {
        bits.skip(1);
    }
    Ok(((bits.next, bits.buffer, bits.waiting), (top, least + ones)))
}

/// The most bits [`BitWriter::put`] takes at once: with the 7 bits that may wait, they fill
/// no more than 63 bits of its accumulator.
const MOST_PUT: u32 = 56;

/// Bits written least significant first into bytes, at most `room` of them: the bits of the
/// last byte not yet complete wait in a 64-bit accumulator, and each write stores its eight
/// bytes whole (the buffer is 8 bytes longer than the room) and moves on by the bytes it
/// completed, without a branch. (With the `bitvec` crate's vector and slice in its place and
/// [`BitReader`]'s, 1000 entries took 52 µs to encode and 41 µs to decode, against 13 and 10
/// µs with these at the time, the plain encoding's 9.4 and 5.1 µs (which sort and insert them
/// too) included. Into a growing vector, 32 bits at a time, the accumulator lived in memory,
/// not in a register: 100 and 3000 entries took 0.31 and 8.5 µs to code, against 0.29 and 7.6
/// µs now.)
struct BitWriter {
    /// Zeros but for the bytes written.
    bytes: Vec<u8>,
    /// The complete bytes.
    at: usize,
    /// The bits of byte `at` written so far (`filled` of them, below 8), zeros above.
    acc: u64,
    filled: u32,
}

impl BitWriter {
    fn new(room: usize) -> Self {
        Self { bytes: vec![0; room + 8], at: 0, acc: 0, filled: 0 }
    }

    /// Appends the low `len` bits of `value` (`len` at most [`MOST_PUT`], `value` below
    /// `2^len`), or `None` once past the room.
    #[inline]
    fn put(&mut self, value: u64, len: u32) -> Option<()> {
        debug_assert!(len <= MOST_PUT && value < 1 << len);
        // At most 7 + 56 bits wait: every shift is below 64.
        self.acc |= value << self.filled;
        self.filled += len;
        self.bytes.get_mut(self.at..self.at + 8)?.copy_from_slice(&self.acc.to_le_bytes());
        self.at += (self.filled / 8) as usize;
        self.acc >>= self.filled & !7;
        self.filled &= 7;
        Some(())
    }

    /// Appends `q` ones.
    fn ones(&mut self, mut q: u32) -> Option<()> {
        while q >= 32 {
            self.put(u64::from(u32::MAX), 32)?;
            q -= 32;
        }
        self.put((1 << q) - 1, q)
    }

    /// Appends an entry the coder's loop does not write as one word: `quotient` ones and a
    /// zero, the `low` bits, `extra` ones, and `closing` zeros (1 or none). For an entry of
    /// more than [`MOST_PUT`] bits (a quotient above about `54 − b`, or a rank far above the
    /// least) or with the previous entry's hash bits. Out of line, as those are rare, and
    /// taking and giving back the writer, not a reference to it: the loop of the others stays
    /// small, its writer in registers.
    #[cold]
    #[inline(never)]
    fn put_long(mut self, quotient: u32, (low, b): (u32, u32), extra: u32, closing: u32) -> Option<Self> {
        self.ones(quotient)?;
        self.put(u64::from(low) << 1, b + 1)?;
        self.ones(extra)?;
        self.put(0, closing)?;
        Some(self)
    }

    /// The bytes, the last one padded with zeros, or `None` if they pass the room (the last
    /// writes may pass it by up to 8 bytes).
    fn finish(mut self) -> Option<Vec<u8>> {
        let len = self.at + self.filled.div_ceil(8) as usize;
        (len + 8 <= self.bytes.len()).then(|| {
            self.bytes.truncate(len);
            self.bytes
        })
    }
}

/// Where a [`BitReader`] is: its `next`, `buffer` and `waiting`.
type Position = (usize, u64, u32);

/// Bits read least significant first from bytes, as [`BitWriter`] wrote them: the next bits
/// wait in a 64-bit buffer, refilled to at least 56 of them (or the end), and every read is
/// checked against the end.
#[derive(Clone, Copy)]
struct BitReader<'a> {
    bytes: &'a [u8],
    /// The next byte not yet counted in the buffer.
    next: usize,
    /// The bits waiting, the next one lowest (the bits above them are those of the next
    /// bytes, or zeros).
    buffer: u64,
    /// How many bits wait.
    waiting: u32,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, next: 0, buffer: 0, waiting: 0 }
    }

    /// The bits read so far.
    fn read(&self) -> usize {
        self.next * 8 - self.waiting as usize
    }

    /// Tops the buffer up to at least 56 bits, or to the end of the bytes: eight bytes OR-ed in
    /// above the bits waiting (bytes already partly in the buffer OR in the bits they hold),
    /// as many whole bytes counted as fit.
    #[inline]
    fn refill(&mut self) {
        let fit = (63 - self.waiting) / 8;
        if let Some(eight) = self.bytes.get(self.next..self.next + 8) {
            self.buffer |= u64::from_le_bytes(eight.try_into().unwrap_or_default()) << self.waiting;
            self.next += fit as usize;
            self.waiting += 8 * fit;
        } else {
            (self.next, self.buffer, self.waiting) = refill_the_last(self.bytes, self.next, self.buffer, self.waiting);
        }
    }

    /// Drops `len` bits that wait (at most as many as wait).
    #[inline]
    fn skip(&mut self, len: u32) {
        debug_assert!(len <= self.waiting);
        self.buffer = self.buffer.checked_shr(len).unwrap_or(0);
        self.waiting -= len;
    }

    /// Reads `len` bits (at most 32), or `None` past the end.
    #[inline]
    fn take(&mut self, len: u32) -> Option<u32> {
        if len > self.waiting {
            self.refill();
            if len > self.waiting {
                return None;
            }
        }
        let value = (self.buffer & ((1u64 << len) - 1)) as u32;
        self.skip(len);
        Some(value)
    }

    /// Reads ones up to `most` of them, stopping before a zero (which then waits): their
    /// number, or `None` if the bits end first. Each step reads what the buffer holds, so a
    /// long run costs no more than the bits it reads.
    #[inline]
    fn ones(&mut self, most: usize) -> Option<usize> {
        let mut count = 0;
        loop {
            if self.waiting < 57 {
                self.refill();
                if self.waiting == 0 {
                    return (count == most).then_some(count);
                }
            }
            let ones = (self.buffer.trailing_ones().min(self.waiting) as usize).min(most - count);
            count += ones;
            let stopped = count == most || (ones as u32) < self.waiting;
            self.skip(ones as u32);
            if stopped {
                return Some(count);
            }
        }
    }
}

/// [`BitReader::refill`] within 8 bytes of the end: the last bytes, one at a time. (It takes
/// and returns values, not the reader, which then stays in registers in the decoder's loop.)
#[cold]
fn refill_the_last(bytes: &[u8], mut next: usize, mut buffer: u64, mut waiting: u32) -> (usize, u64, u32) {
    // As many whole bytes as fit below the buffer's top bit, as the 8-byte refill takes.
    while waiting <= 55 {
        let Some(&byte) = bytes.get(next) else { break };
        buffer |= u64::from(byte) << waiting;
        waiting += 8;
        next += 1;
    }
    (next, buffer, waiting)
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

    /// Entries crafted to share their low hash bits (each of 64 residues, at 16 tops 2^16
    /// apart, in all 39 ranks: 39 936 entries) spread over the table as random ones do: a
    /// linear-probing table at load `α` displaces an entry by `(1/(1 − α) − 1)/2` slots on
    /// average (Knuth), 1.5 at the 3/4 it never exceeds; the crafted entries, addressed by
    /// their own low bits, would sit in 64 runs of 624, about 300 slots from home.
    #[test]
    fn crafted_entries_do_not_pile_up() {
        // Fixed tables for a reproducible test (a process draws its own).
        use rand::{RngExt, SeedableRng};
        for seed in 0..20 {
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut tables = Box::new([[0u32; 256]; 4]);
            tables.iter_mut().flatten().for_each(|word| *word = rng.random());
            crafted_entries_spread(Box::leak(tables), seed);
        }
    }

    fn crafted_entries_spread(tables: &'static Tabulation, seed: u64) {
        let mut set = Sparse { tables, ..Sparse::new() };
        let limit = 40_000;
        for r in 0..64u32 {
            for k in 0..16u32 {
                for rank in 1..=MAX_RANK {
                    let e = (r + (k << 16)) << RANK_BITS | rank;
                    if let Err(slot) = set.find(e) {
                        set.insert_at(slot, e, limit);
                    }
                }
            }
        }
        let mask = set.slots.len() - 1;
        let displaced: usize = set
            .slots
            .iter()
            .enumerate()
            .filter(|&(_, &e)| e != 0)
            .map(|(i, &e)| i.wrapping_sub(set.home(e)) & mask)
            .sum();
        let mean = displaced as f64 / set.len() as f64;
        let load = set.len() as f64 / set.slots.len() as f64;
        let expected = (1.0 / (1.0 - load) - 1.0) / 2.0;
        // Five times the expectation: far below the crafted 300, well above the noise of a
        // mean over 40 000 entries.
        assert!(mean < 5.0 * expected, "tables {seed}: mean displacement {mean} at load {load}, expected {expected}");
    }

    /// The distribution sort gives what `sort_unstable` gives, for hashed entries (buckets of
    /// about one), crafted ones (a bucket of hundreds: the fallback), and a few or none; and
    /// inserting the sorted entries into a new set gives the same set, in the table it grows to.
    #[test]
    fn sorted_entries_are_the_entries_sorted() {
        let limit = 40_000;
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let mut hashed = || {
            x = x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(1);
            entry(x, 0)
        };
        let crafted = |n: u32| (0..n).map(|i| (i / MAX_RANK) << RANK_BITS | (i % MAX_RANK + 1));
        let mut sets: Vec<Vec<u32>> = vec![
            vec![],
            vec![hashed()],
            (0..2).map(|_| hashed()).collect(),
            (0..3000).map(|_| hashed()).collect(),
            crafted(390).collect(),
            // A bucket of 33 entries, the most the insertion sort is left with being 32.
            crafted(33).chain((0..200).map(|_| hashed())).collect(),
            crafted(32).chain((0..200).map(|_| hashed())).collect(),
        ];
        // Sizes about powers of two, where the buckets and the table change, and tables of 4 and
        // 8 slots (eight taken out at a time, and the rest).
        for n in [3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 1023, 1024, 1025] {
            sets.push((0..n).map(|_| hashed()).collect());
        }
        for entries in sets {
            let mut set = Sparse::new();
            for &e in &entries {
                if let Err(slot) = set.find(e) {
                    set.insert_at(slot, e, limit);
                }
            }
            let mut expected: Vec<u32> = set.entries().collect();
            expected.sort_unstable();
            let sorted = set.sorted_entries();
            assert_eq!(sorted, expected);
            let mut copy = Sparse::new();
            let mut next = sorted.iter().copied();
            copy.fill(sorted.len(), limit, || next.next().ok_or("fewer entries")).expect("as many entries as said");
            assert!(copy.same_entries(&set) && set.same_entries(&copy));
            assert_eq!(copy.slots.len(), set.slots.len());
        }
    }

    #[test]
    fn the_table_never_outgrows_the_dense_form() {
        for dense_bytes in (4..=20).map(|k| 1usize << k) {
            let limit = limit(dense_bytes);
            let (grown, presized) = (filled(limit, false), filled(limit, true));
            assert_eq!(grown.heap_bytes(), dense_bytes, "dense bytes {dense_bytes}");
            assert_eq!(presized.heap_bytes(), dense_bytes, "dense bytes {dense_bytes}");
            assert!(grown.same_entries(&presized) && presized.same_entries(&grown));
            let sorted = grown.sorted_entries();
            assert_eq!(sorted, presized.sorted_entries());
            // A decoder's set, filled to the load of 3/4, in the same table; and one cut short
            // by an error keeps the entries it took.
            let mut next = sorted.iter().copied();
            let mut decoded = Sparse::new();
            decoded.fill(sorted.len(), limit, || next.next().ok_or("fewer")).expect("as many entries as said");
            assert_eq!(decoded.heap_bytes(), dense_bytes);
            assert!(decoded.same_entries(&grown) && grown.same_entries(&decoded));
            let half = sorted.len() / 2;
            let mut next = sorted[..half].iter().copied();
            let mut cut = Sparse::new();
            assert_eq!(cut.fill(sorted.len(), limit, || next.next().ok_or("fewer")), Err("fewer"));
            assert_eq!(cut.len(), half);
            assert!(
                sorted[..half].iter().all(|&e| cut.contains(e)) && !sorted[half..].iter().any(|&e| cut.contains(e))
            );
        }
    }

    /// `entries` (ascending) coded, in an encoding's body, and read back: the entries the
    /// decoder gives, or its error.
    fn coded_round_trip(stream: &[u8]) -> Result<Vec<u32>, DecodeError> {
        let mut w = Writer::new(0, crate::codec::ENVELOPE_LEN + stream.len());
        w.put_bytes(stream);
        let bytes = w.finish();
        let mut r = Reader::open(&bytes, 0)?;
        let mut set = Sparse::new();
        decode_coded_entries(&mut r, 1 << 22, &mut set)?;
        r.finish()?;
        Ok(set.sorted_entries())
    }

    fn coded_bytes(sorted: &[u32]) -> Option<Vec<u8>> {
        CodedEntries::of(sorted).map(|coded| body_of(&coded))
    }

    /// The coded form of `sorted` entries, however long: an entry takes at most 1 + 25 + 39
    /// bits besides its quotient's ones, and all the quotients together at most
    /// `2^26 / 2^b ≤ 2.1·n` (as `2^b > 2^26 · 0.48 / n`), so `10·n + 16` bytes hold them.
    fn code_any(sorted: &[u32]) -> CodedEntries {
        CodedEntries::code(sorted, 10 * sorted.len() + 16).expect("room for any entries")
    }

    fn body_of(coded: &CodedEntries) -> Vec<u8> {
        let mut w = Writer::new(0, crate::codec::ENVELOPE_LEN + coded.len());
        coded.write(&mut w);
        let bytes = w.finish();
        bytes[crate::codec::HEADER_LEN..bytes.len() - 8].to_vec()
    }

    /// The sorted, distinct entries of `n` pseudo-random hashes.
    fn random_entries(n: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        let mut out: Vec<u32> = (0..n)
            .map(|_| {
                x = x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(0x1405_7B7E_F767_814F);
                entry(crate::hash::hash_bytes(&x.to_le_bytes(), 0), 0)
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The coded entries come back as they were, and cost what Rice's code of geometric gaps
    /// and unary ranks costs: per entry `b + 1 + E[q] + 2` bits, `q` the quotient of a gap,
    /// geometric with `P(q ≥ j) = ρ^j`, `ρ = (1 − n/2^26)^(2^b)`, so `E[q] = ρ/(1 − ρ)`
    /// (variance `ρ/(1 − ρ)²`), and the rank's unary `k` bits with probability `2^−k` (mean 2,
    /// variance 2). The total is within 5 standard deviations of `n` times that (and the
    /// padding), and an entry within Kiely's 0.03 bits of the information the entries hold,
    /// `log2 C(2^26, n)/n + 2`, but for the noise and the padding.
    #[test]
    fn coded_entries_cost_what_the_theory_says() {
        for (n, seed) in [(1, 1), (10, 2), (100, 3), (1000, 4), (3000, 5), (12_000, 6), (200_000, 7)] {
            let entries = random_entries(n, seed);
            let n = entries.len();
            let stream = coded_bytes(&entries).expect("shorter than plain");
            assert_eq!(coded_round_trip(&stream).expect("decodes"), entries, "n = {n}");
            let b = rice_bits(n);
            let rho = (1.0 - n as f64 / pow2(SPARSE_BITS as i32)).powf(pow2(b as i32));
            let (mean, variance) = (b as f64 + 1.0 + rho / (1.0 - rho) + 2.0, rho / (1.0 - rho).powi(2) + 2.0);
            let bits = 8.0 * (stream.len() - varint_len(n as u64)) as f64;
            let sigma = (n as f64 * variance).sqrt();
            assert!(
                (bits - n as f64 * mean).abs() <= 5.0 * sigma + 8.0,
                "n = {n}: {bits} bits, expected {}",
                n as f64 * mean
            );
            // log2 C(N, n) = Σ log2((N − i)/(i + 1)), i < n.
            let information: f64 =
                (0..n).map(|i| ((pow2(SPARSE_BITS as i32) - i as f64) / (i as f64 + 1.0)).log2()).sum::<f64>()
                    / n as f64
                    + 2.0;
            let slack = 0.03 + (5.0 * sigma + 8.0) / n as f64;
            assert!(
                bits / n as f64 <= information + slack,
                "n = {n}: {} bits an entry, {information}",
                bits / n as f64
            );
        }
    }

    /// The edges of the form: the least and largest hash bits, every rank at one hash, the
    /// largest rank (no closing zero), no entries at all.
    #[test]
    fn coded_entries_at_the_edges() {
        let top = (1u32 << SPARSE_BITS) - 1;
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![1],
            vec![MAX_RANK],
            vec![top << RANK_BITS | 1],
            vec![top << RANK_BITS | MAX_RANK],
            (1..=MAX_RANK).map(|k| 5 << RANK_BITS | k).collect(),
            (1..=MAX_RANK).map(|k| top << RANK_BITS | k).collect(),
            vec![1, 2, 1 << RANK_BITS | 3, top << RANK_BITS | MAX_RANK],
            // 1 + 25 + 25 bits: 7 bytes and the count, exactly the plain 8: not shorter.
            vec![5 << RANK_BITS | 25],
        ];
        for entries in cases {
            assert!(entries.iter().all(|&e| is_valid_entry(e)));
            // Coded when shorter than plain, and then read back; refused when not.
            let coded = code_any(&entries);
            let shorter = coded.len() < plain_len(entries.len());
            assert_eq!(CodedEntries::of(&entries).is_some(), shorter);
            match coded_round_trip(&body_of(&coded)) {
                Ok(decoded) => assert!(shorter && decoded == entries, "{entries:?}"),
                Err(e) => assert!(!shorter && matches!(e, DecodeError::InvalidField { .. }), "{entries:?}: {e}"),
            }
        }
        // Runs too long for one word in mid-stream (rank 39, and a gap of a third of the hash
        // bits, hundreds of ones at b = 15): read field by field, to the same entries.
        let mut entries = random_entries(2000, 21);
        for i in (0..entries.len()).step_by(97) {
            entries[i] = entries[i] & !RANK_MASK | MAX_RANK;
        }
        entries.retain(|&e| !(1 << 25..1 << 25 | 1 << 24).contains(&(e >> RANK_BITS)));
        entries.dedup_by_key(|e| *e >> RANK_BITS);
        assert!(entries.iter().all(|&e| is_valid_entry(e)) && entries.windows(2).all(|w| w[0] < w[1]));
        let stream = coded_bytes(&entries).expect("shorter than plain");
        assert_eq!(coded_round_trip(&stream).expect("decodes"), entries);
        // Many entries of the largest rank code longer than plain: written plain.
        let high: Vec<u32> = (0..100u32).map(|i| (i * 1000) << RANK_BITS | MAX_RANK).collect();
        assert!(coded_bytes(&high).is_none());
        assert!(coded_round_trip(&body_of(&code_any(&high))).is_err());
        // After rank 39, no entry of the same hash bits: refused, not an overflow.
        let b = rice_bits(2) as u32;
        let mut bits = BitWriter::new(16);
        let written = [bits.put(5 << 1, b + 1), bits.ones(MAX_RANK - 1), bits.put(0, b + 1), bits.put(0, 1)];
        assert!(written.iter().all(Option::is_some));
        let stream = [&[2u8][..], &bits.finish().expect("within the room")].concat();
        let r = coded_round_trip(&stream);
        assert!(matches!(r, Err(DecodeError::InvalidField { field: "sparse entries", .. })), "{r:?}");
    }

    /// A coded stream is the only one of its entries: every bit flipped, and a byte cut or
    /// added, gives an error or other entries that code to exactly the changed bytes.
    #[test]
    fn a_coded_stream_is_the_only_one_of_its_entries() {
        for (n, seed) in [(1, 11), (3, 12), (20, 13), (150, 14)] {
            let entries = random_entries(n, seed);
            let stream = coded_bytes(&entries).expect("shorter than plain");
            let mut variants: Vec<Vec<u8>> = (0..8 * stream.len())
                .map(|bit| {
                    let mut s = stream.clone();
                    s[bit / 8] ^= 1 << (bit % 8);
                    s
                })
                .collect();
            variants.push(stream[..stream.len() - 1].to_vec());
            variants.extend([0u8, 1, 0xFF].map(|b| [&stream[..], &[b]].concat()));
            for changed in variants {
                if let Ok(decoded) = coded_round_trip(&changed) {
                    assert_ne!(decoded, entries);
                    // (Sorted by the set; entries decoded out of order or twice show in the
                    // re-encoding.)
                    assert!(decoded.iter().all(|&e| is_valid_entry(e)));
                    assert_eq!(coded_bytes(&decoded).as_ref(), Some(&changed), "{decoded:?}");
                }
            }
        }
        // A count claiming more entries than the bits can hold: refused before the loop.
        let claim = [&[0xE8, 0x07][..], &[0u8; 100]].concat(); // 1000 entries in 800 bits
        assert!(matches!(coded_round_trip(&claim), Err(DecodeError::Truncated { .. })));
    }

    /// A splitmix64 stream, for the tests below.
    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Sorted distinct entries with the coder's edge cases often: hash bits at both ends and
    /// sharing their top bits (gaps of 0 and quotients of thousands of ones), the largest
    /// rank and those just below it, and geometric ranks.
    fn edgy_entries(state: &mut u64) -> Vec<u32> {
        let mut below = |n: u64| splitmix(state) % n;
        let n = [8, 200, 5000][below(3) as usize];
        let n = below(n) as usize;
        let mut entries: Vec<u32> = (0..n)
            .map(|_| {
                let top = match below(5) {
                    0 => below(1 << SPARSE_BITS) as u32,
                    1 => below(1 << SPARSE_BITS) as u32 & !0xFFFF,
                    2 => 0,
                    3 => (1 << SPARSE_BITS) - 1,
                    _ => below(64) as u32,
                };
                let rank = match below(4) {
                    0 => 1 + below(u64::from(MAX_RANK)) as u32,
                    1 => MAX_RANK,
                    2 => MAX_RANK - below(3) as u32,
                    _ => 1 + (below(u64::MAX) | 1 << 38).trailing_zeros(),
                };
                top << RANK_BITS | rank
            })
            .collect();
        entries.sort_unstable();
        entries.dedup();
        entries
    }

    /// The coded stream of `sorted` a bit at a time, as the module docs define it.
    fn coded_bit_by_bit(sorted: &[u32]) -> Vec<u8> {
        let b = rice_bits(sorted.len()) as u32;
        let mut bits = Vec::new();
        let (mut previous_top, mut previous_rank) = (0, 0);
        for &e in sorted {
            let (top, rank) = (e >> RANK_BITS, e & RANK_MASK);
            let gap = top - previous_top;
            bits.extend(std::iter::repeat_n(true, (gap >> b) as usize));
            bits.push(false);
            bits.extend((0..b).map(|i| gap >> i & 1 == 1));
            bits.extend(std::iter::repeat_n(true, (rank - least_rank(previous_rank, gap)) as usize));
            if rank < MAX_RANK {
                bits.push(false);
            }
            (previous_top, previous_rank) = (top, rank);
        }
        let mut out = vec![0u8; bits.len().div_ceil(8)];
        bits.iter().enumerate().for_each(|(i, &bit)| out[i / 8] |= u8::from(bit) << (i % 8));
        out
    }

    /// The coder writes each field in turn, as the bit-by-bit reference does, whatever the
    /// entries; `of` codes exactly when that is shorter than plain, and `code` refuses exactly
    /// the streams longer than its room.
    #[test]
    fn the_coder_writes_each_field_in_turn() {
        let mut state = 777;
        for case in 0..4000 {
            let sorted = edgy_entries(&mut state);
            let n = sorted.len();
            let expected = coded_bit_by_bit(&sorted);
            assert_eq!(code_any(&sorted).stream, expected, "case {case}");
            let shorter = varint_len(n as u64) + expected.len() < plain_len(n);
            assert_eq!(CodedEntries::of(&sorted).map(|c| c.stream), shorter.then(|| expected.clone()), "case {case}");
            for room in expected.len().saturating_sub(9)..expected.len() + 2 {
                let coded = CodedEntries::code(&sorted, room).map(|c| c.stream);
                assert_eq!(coded, (expected.len() <= room).then(|| expected.clone()), "case {case}, room {room}");
            }
        }
    }

    /// The entries read whole from a word are those read a field at a time, and so are the
    /// errors, for streams of random bits (of every density of ones, where the fast path's
    /// counts run past the bits waiting) and for valid streams damaged: every result of the
    /// decoder is that of [`coded_entry`] alone.
    #[test]
    fn the_fast_reader_reads_as_the_field_by_field_one() {
        /// The decoder with every entry read by `coded_entry`: its entries, or its error.
        fn field_by_field(stream: &[u8], limit: usize) -> Result<Vec<u32>, DecodeError> {
            let mut w = Writer::new(0, crate::codec::ENVELOPE_LEN + stream.len());
            w.put_bytes(stream);
            let bytes = w.finish();
            let mut r = Reader::open(&bytes, 0)?;
            let (n, b, mut bits) = coded_count(&mut r, limit)?;
            let (mut previous, mut entries) = ((0, 0), Vec::new());
            for _ in 0..n {
                let at;
                (at, previous) = coded_entry(bits.bytes, (bits.next, bits.buffer, bits.waiting), b, previous)?;
                (bits.next, bits.buffer, bits.waiting) = at;
                entries.push(previous.0 << RANK_BITS | previous.1);
            }
            coded_end(&mut r, bits, n)?;
            r.finish()?;
            Ok(entries)
        }
        let same = |stream: &[u8], case: &str| {
            let (fast, slow) = (coded_round_trip(stream), field_by_field(stream, 1 << 22));
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{case}: {stream:?}");
        };
        let mut state = 12_345;
        for case in 0..20_000 {
            let n = [4, 40, 400, 5000][(splitmix(&mut state) % 4) as usize];
            let n = splitmix(&mut state) % n;
            // The count, a varint (LEB128).
            let mut stream: Vec<u8> = (0..varint_len(n))
                .map(|i| (n >> (7 * i)) as u8 & 0x7F | if i + 1 < varint_len(n) { 0x80 } else { 0 })
                .collect();
            let b = rice_bits(n as usize) as u64;
            let len = (n * (b + 1)).div_ceil(8) + splitmix(&mut state) % (3 * n + 20);
            let density = splitmix(&mut state) % 6;
            stream.extend((0..len).map(|_| {
                let mut r = || splitmix(&mut state) as u8;
                match density {
                    0 => r(),
                    1 => r() | r(),
                    2 => r() | r() | r(),
                    3 => r() & r(),
                    4 => [0xFF, 0xFF, 0xFF, r()][usize::from(r() % 4)],
                    _ => [0, 0xFF, 0xFE, 0x7F, 0x01, 0x80][usize::from(r() % 6)],
                }
            }));
            same(&stream, &format!("random stream {case}"));
        }
        for case in 0..1500 {
            let sorted = edgy_entries(&mut state);
            let stream = body_of(&code_any(&sorted));
            let count = varint_len(sorted.len() as u64);
            for _ in 0..8 {
                let mut damaged = stream.clone();
                if damaged.len() > count {
                    let at = count + (splitmix(&mut state) as usize) % (damaged.len() - count);
                    match splitmix(&mut state) % 4 {
                        0 => damaged[at] ^= 1 << (splitmix(&mut state) % 8),
                        1 => damaged[at] = 0xFF,
                        2 => {
                            let end = (at + 1 + (splitmix(&mut state) % 12) as usize).min(damaged.len());
                            damaged[at..end].fill(0xFF);
                        }
                        _ => damaged.truncate(at),
                    }
                }
                same(&damaged, &format!("damaged stream {case}"));
            }
        }
    }
}
