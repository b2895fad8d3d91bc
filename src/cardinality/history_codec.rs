//! The encoding of a [`Core`], the state UltraLogLog and ExaLogLog share: flags, seed,
//! martingale, then the entries or the registers packed `6 + t + d` bits each. Decoding
//! validates every register and the martingale against what a stream can produce. The
//! framing around it (magic, family, parameters, checksum) is each type's.

use super::estimators::check_martingale;
use super::history::Core;
use super::lifecycle::Lifecycle;
use super::registers::Cell;
use super::registers::Shape;
use super::sparse;
use crate::codec::{Reader, Writer};
use crate::core::DecodeError;

impl<R: Cell> Core<R> {
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
            // One register a byte (UltraLogLog): a copy (measured 3× faster than the shifts).
            out.iter_mut().zip(self.registers.iter()).for_each(|(o, r)| *o = r.get() as u8);
            return;
        }
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

    /// Reads what [`encode`](Self::encode) wrote for `shape`, validating every register and
    /// the martingale.
    pub(crate) fn decode(r: &mut Reader<'_>, shape: Shape) -> Result<Self, DecodeError> {
        let flags = r.u8()?;
        if flags & !3 != 0 {
            return Err(DecodeError::InvalidField { field: "flags", reason: "unknown flag bits" });
        }
        let seed = r.u64()?;
        if flags & 2 != 0 {
            if flags & 1 != 0 {
                return Err(DecodeError::InvalidField { field: "flags", reason: "a sparse sketch has no martingale" });
            }
            // Entries no more than the sparse mode holds, ascending, each one an entry.
            return Self::new(shape, seed).decode_entries(r);
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
        let invalid = DecodeError::InvalidField { field: "registers", reason: "not a register this shape makes" };
        let histogram = if bits == 8 && size_of::<R>() == 1 {
            // One register a byte (UltraLogLog): a copy, then every check and sum from the
            // histogram of the bytes (each distinct byte checked once).
            core.registers.iter_mut().zip(packed).for_each(|(slot, &b)| *slot = R::put(u64::from(b)));
            let histogram = core.byte_histogram();
            if (0..256).any(|v| histogram[v] > 0 && !shape.is_valid(v as u64)) {
                return Err(invalid);
            }
            Some(histogram)
        } else {
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
                    return Err(invalid);
                }
                *slot = R::put(v);
            }
            if acc != 0 {
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

/// Bytes of `m` registers of `bits` bits each.
pub(crate) fn packed_len(m: usize, bits: u32) -> usize {
    (m * bits as usize).div_ceil(8)
}
