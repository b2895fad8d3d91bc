//! The encoding of a [`Core`], the state UltraLogLog and ExaLogLog share: flags, seed,
//! martingale, then the entries or the registers packed `6 + t + d` bits each. Decoding
//! validates every register and the martingale against what a stream can produce. The
//! framing around it (magic, family, parameters, checksum) is each type's.

use super::compressed::{Coded, Compressed};
use super::estimators::check_martingale;
use super::history::Core;
use super::lifecycle::Lifecycle;
use super::registers::Cell;
use super::registers::Shape;
use super::sparse::{self, CodedEntries};
use crate::codec::{Reader, Writer};
use crate::core::DecodeError;

/// Flag bits: the martingale is present; the sketch is sparse; the registers are entropy-coded;
/// (coded only) the seed is the default one and left out.
const MARTINGALE: u8 = 1;
const SPARSE: u8 = 2;
const CODED: u8 = 4;
const DEFAULT_SEED: u8 = 8;

impl<R: Cell> Core<R> {
    /// Whether this shape has an entropy-coded form: UltraLogLog's one-byte registers.
    fn codes(shape: Shape) -> bool {
        shape.t == 0 && shape.d == 2 && size_of::<R>() == 1
    }

    /// The compressed form, when the shape has one and it is the shorter: the registers
    /// entropy-coded ([`Coded::of`]) or the entries gap-coded ([`CodedEntries::of`]).
    pub(crate) fn compressed(&self) -> Option<Compressed> {
        if !Self::codes(self.shape) {
            return None;
        }
        if self.is_sparse() {
            return CodedEntries::of(&self.sparse.sorted_entries()).map(Compressed::Entries);
        }
        let registers = R::bytes(&self.registers)?;
        Coded::of(registers, self.shape, registers.len()).map(Compressed::Registers)
    }

    /// The bytes [`encode_coded`](Self::encode_coded) writes.
    pub(crate) fn coded_len(&self, coded: &Compressed) -> usize {
        1 + 8 * usize::from(self.seed != crate::hash::DEFAULT_SEED)
            + 8 * usize::from(self.martingale.is_some())
            + coded.len()
    }

    /// Writes flags (bit 2 set; bit 1 for coded entries; bit 3 when the seed is the default
    /// one), the seed unless it is the default, the martingale if present, then the coded
    /// registers ([`Coded::write`]) or entries ([`CodedEntries::write`]).
    pub(crate) fn encode_coded(&self, w: &mut Writer, coded: &Compressed) {
        let default_seed = self.seed == crate::hash::DEFAULT_SEED;
        let sparse = if coded.is_sparse() { SPARSE } else { 0 };
        w.put_u8(u8::from(self.martingale.is_some()) | sparse | CODED | if default_seed { DEFAULT_SEED } else { 0 });
        if !default_seed {
            w.put_u64(self.seed);
        }
        if let Some(x) = self.martingale {
            w.put_f64(x);
        }
        coded.write(w);
    }

    /// The bytes [`encode`](Self::encode) writes.
    pub(crate) fn encoded_len(&self) -> usize {
        let body = if self.is_sparse() {
            sparse::plain_len(self.sparse.len())
        } else {
            packed_len(self.registers.len(), self.shape.bits())
        };
        9 + 8 * usize::from(self.martingale.is_some()) + body
    }

    /// Writes flags (bit 0: martingale present, bit 1: sparse), seed, the martingale if
    /// present, then either the number of entries (u32) and the entries in ascending order
    /// (u32 each), or the registers packed `shape.bits()` bits each, least significant first.
    pub(crate) fn encode(&self, w: &mut Writer) {
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
        if bits == 8 {
            // One register a byte (UltraLogLog): a copy (measured 25× faster than shifting
            // bytes through a u128: 22 → 0.9 µs for p = 13, the checksum included).
            out.iter_mut().zip(self.registers.iter()).for_each(|(o, r)| *o = r.get() as u8);
            return;
        }
        // Registers of at most 32 bits (ExaLogLog's limit): within a word.
        debug_assert!(bits <= WORD_BITS);
        pack_words(self.registers.iter().map(|r| r.get()), bits, out);
    }

    /// Reads what [`encode`](Self::encode) wrote for `shape`, validating every register and
    /// the martingale.
    pub(crate) fn decode(r: &mut Reader<'_>, shape: Shape) -> Result<Self, DecodeError> {
        let flags = r.u8()?;
        if flags & !(MARTINGALE | SPARSE | CODED | DEFAULT_SEED) != 0 {
            return Err(DecodeError::InvalidField { field: "flags", reason: "unknown flag bits" });
        }
        let no_coded_form =
            || DecodeError::InvalidField { field: "flags", reason: "this shape has no entropy-coded form" };
        if flags & CODED != 0 && !Self::codes(shape) {
            return Err(no_coded_form());
        }
        let seed = if flags & DEFAULT_SEED != 0 {
            if flags & CODED == 0 {
                return Err(DecodeError::InvalidField {
                    field: "flags",
                    reason: "only a coded sketch leaves its seed out",
                });
            }
            crate::hash::DEFAULT_SEED
        } else {
            let seed = r.u64()?;
            // The encoder leaves the default seed out of a coded sketch: one encoding a state.
            if flags & CODED != 0 && seed == crate::hash::DEFAULT_SEED {
                return Err(DecodeError::InvalidField { field: "seed", reason: "the default seed, written out" });
            }
            seed
        };
        if flags & SPARSE != 0 {
            if flags & MARTINGALE != 0 {
                return Err(DecodeError::InvalidField { field: "flags", reason: "a sparse sketch has no martingale" });
            }
            // Entries no more than the sparse mode holds, ascending, each one an entry.
            return Self::new(shape, seed).decode_entries(r, flags & CODED != 0);
        }
        let martingale = if flags & MARTINGALE != 0 {
            let x = r.f64()?;
            if !(x.is_finite() && x.is_sign_positive()) {
                return Err(DecodeError::InvalidField { field: "martingale", reason: "not a finite count" });
            }
            Some(x)
        } else {
            None
        };
        let bits = shape.bits();
        // The registers' bytes, packed or coded, their lengths checked before the registers
        // are allocated.
        let (packed, coded) = if flags & CODED != 0 {
            (&[][..], Some(Coded::open(r, shape, shape.registers())?))
        } else {
            (r.take(packed_len(shape.registers(), bits))?, None)
        };
        let mut core = Self::new_dense(shape, seed);
        let invalid = DecodeError::InvalidField { field: "registers", reason: "not a register this shape makes" };
        let histogram = if bits == 8 && size_of::<R>() == 1 {
            // One register a byte (UltraLogLog): decoded in place, or a copy, then every check
            // and sum from the histogram of the bytes (each distinct byte checked once).
            // (A shape with a coded form has one-byte cells, which are bytes: the last arm, as
            // the check of `coded` in the other branch, is only the error it would be.)
            match (coded, R::bytes_mut(&mut core.registers)) {
                (Some(streams), Some(bytes)) => streams.decode_into(bytes)?,
                (None, _) => core.registers.iter_mut().zip(packed).for_each(|(slot, &b)| *slot = R::put(u64::from(b))),
                (Some(_), None) => return Err(no_coded_form()),
            }
            let histogram = core.byte_histogram();
            if (0..256).any(|v| histogram[v] > 0 && !shape.is_valid(v as u64)) {
                return Err(invalid);
            }
            Some(histogram)
        } else {
            // A 64-bit word read at each register's first byte (ExaLogLog: measured 1.5×
            // faster than shifting bytes through a u128).
            debug_assert!(bits <= WORD_BITS);
            if coded.is_some() {
                return Err(no_coded_form());
            }
            for (i, slot) in core.registers.iter_mut().enumerate() {
                let v = unpack_word(packed, i, bits);
                if !shape.is_valid(v) {
                    return Err(invalid);
                }
                *slot = R::put(v);
            }
            let used = (core.registers.len() * bits as usize % 8) as u32;
            if used != 0 && packed.last().is_some_and(|&last| last >> used != 0) {
                return Err(DecodeError::InvalidField { field: "registers", reason: "padding bits set" });
            }
            None
        };
        core.recount_from(histogram.as_ref());
        // A shape with a sparse mode turns dense in a stream past `limit` distinct entries,
        // and its martingale starts at that count: such a sketch has enough registers set to
        // hold them. So does any dense sketch of t = 0, whatever merges and reductions made it;
        // with t >= 1 a reduction of a shape born dense (p + t > 26) gives one with few items.
        let limit = Self::limit_of(shape);
        let set = match &histogram {
            Some(histogram) => core.registers.len() - histogram[0] as usize,
            None => core.registers.iter().filter(|r| r.get() != 0).count(),
        };
        let turned_dense = martingale.is_some() || shape.t == 0;
        if limit > 0 && turned_dense && !sparse::dense_enough(set, shape.p, limit) {
            return Err(DecodeError::InvalidField { field: "registers", reason: "too few set for a dense sketch" });
        }
        // The empty sketch is one born dense, with its martingale at 0.
        if core.is_empty() && martingale != Some(0.0) {
            return Err(DecodeError::InvalidField { field: "martingale", reason: "not what the registers allow" });
        }
        let ceiling = (most_changes(&core, histogram.as_ref()), core.unseen, shape.p);
        check_martingale(martingale, (limit, core.seen_pairs_from(histogram.as_ref()) as f64), ceiling)?;
        core.martingale = martingale;
        Ok(core)
    }
}

/// The most changes registers can have taken (for the martingale's ceiling): each change
/// raised a register's maximum `u` or marked a value below it, each value at most once, so a
/// register of maximum `u` took at most `2u`.
/// `histogram` is the registers' byte histogram, for one-byte registers.
fn most_changes<R: Cell>(core: &Core<R>, histogram: Option<&[u32; 256]>) -> u64 {
    let d = u32::from(core.shape.d);
    match histogram {
        Some(histogram) => histogram.iter().enumerate().map(|(r, &n)| u64::from(n) * 2 * (r as u64 >> d)).sum(),
        None => core.registers.iter().map(|r| 2 * (r.get() >> d)).sum(),
    }
}

/// The widest register [`pack_words`] and [`unpack_word`] handle (the crate's are at most
/// 32 bits): a register starts at bit 0 to 7 of its first byte, so one of up to 57 bits lies
/// within the 64-bit word there (and fewer than 64 bits wait in the packer's accumulator
/// beside a new one).
const WORD_BITS: u32 = 57;

/// Packs `values` of `bits` bits each (at most [`WORD_BITS`]) into `out` (zeroed, of
/// [`packed_len`] bytes), least significant first, eight bytes at a time (a store per byte
/// and an OR into overlapping words were both slower).
fn pack_words(values: impl Iterator<Item = u64>, bits: u32, out: &mut [u8]) {
    let (mut acc, mut filled) = (0u128, 0u32);
    let mut words = out.chunks_mut(8);
    for v in values {
        acc |= u128::from(v) << filled;
        filled += bits;
        if filled >= 64 {
            if let Some(word) = words.next() {
                word.copy_from_slice(&(acc as u64).to_le_bytes()[..word.len()]);
            }
            (acc, filled) = (acc >> 64, filled - 64);
        }
    }
    if let Some(word) = words.next() {
        let n = word.len();
        word.copy_from_slice(&(acc as u64).to_le_bytes()[..n]);
    }
}

/// Register `index` of registers packed `bits` bits each (at most [`WORD_BITS`]), as
/// [`pack_words`] wrote them; bits past the end of `packed` read as zero.
fn unpack_word(packed: &[u8], index: usize, bits: u32) -> u64 {
    let bit = index * bits as usize;
    let (byte, shift) = (bit / 8, bit % 8);
    let rest = packed.get(byte..).unwrap_or_default();
    let word = match rest.first_chunk::<8>() {
        Some(word) => u64::from_le_bytes(*word),
        None => {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(word)
        }
    };
    (word >> shift) & ((1u64 << bits) - 1)
}

/// Bytes of `m` registers of `bits` bits each.
pub(crate) fn packed_len(m: usize, bits: u32) -> usize {
    (m * bits as usize).div_ceil(8)
}

#[cfg(test)]
mod tests {
    use super::{WORD_BITS, pack_words, packed_len, unpack_word};

    /// Packing and unpacking agree for every width and count, the tail of the last byte
    /// stays zero, and the layout is the reference one: value `i` at bit `i · bits`.
    #[test]
    fn words_pack_and_unpack_every_width() {
        let mut state = 1u64;
        for bits in 1..=WORD_BITS {
            for m in [1, 2, 3, 7, 8, 9, 63, 64, 65, 257] {
                let values: Vec<u64> = (0..m)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (state >> 7) & ((1u64 << bits) - 1)
                    })
                    .collect();
                let mut out = vec![0u8; packed_len(m, bits)];
                pack_words(values.iter().copied(), bits, &mut out);
                for (i, &v) in values.iter().enumerate() {
                    assert_eq!(unpack_word(&out, i, bits), v, "bits {bits}, m {m}, register {i}");
                    let reference: u64 = (0..bits as usize)
                        .map(|b| {
                            let bit = i * bits as usize + b;
                            u64::from(out[bit / 8] >> (bit % 8) & 1) << b
                        })
                        .sum();
                    assert_eq!(reference, v);
                }
                let used = (m * bits as usize % 8) as u32;
                if used != 0 {
                    assert_eq!(out[out.len() - 1] >> used, 0, "bits {bits}, m {m}: padding");
                }
            }
        }
    }
}
