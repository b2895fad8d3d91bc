//! DataSketches' HLL image, read and written.
//!
//! ```text
//!   byte 0 preamble ints (2 list, 3 set, 10 hll)   1 serial version (1)   2 family (7)
//!        3 lg_k   4 lg_arr   5 flags (4 empty, 8 compact, 16 out of order)
//!        6 list count (list) or cur_min (HLL_4)    7 mode: bits 0-1 list/set/hll, 2-3 HLL_4/6/8
//!   list: coupons (u32) from byte 8: `list count` of them, or 2^lg_arr slots (0 is empty)
//!   set : a u32 count at 8, coupons from 12: `count` of them, or 2^lg_arr slots
//!   hll : HIP accumulator, kxq0, kxq1 (f64) at 8, 16, 24; the number of registers at cur_min
//!         (u32) at 32; the exception count (u32) at 36; registers from 40: HLL_8 one byte
//!         each, HLL_6 six bits each (little-endian bit order, and one spare byte), HLL_4 a
//!         nibble each (even registers low) above cur_min, 15 meaning "an exception": the
//!         exceptions (coupons of address and value) follow the nibbles, `exception count` of
//!         them, or 2^lg_arr slots
//! ```
//!
//! All integers are little-endian. A compact image holds only the coupons (in the order of
//! the table they came from); an updatable one the whole table, empty slots included.

use super::{
    DataSketchesHll, HIP_MAX, HllType, KEY_BITS, KEY_MASK, LIST_CAPACITY, Registers, State, count_equal, min_max,
    set_find, set_of, sums_in_range,
};
use crate::cardinality::hyperloglog::{pack_six_bit_registers, unpack_six_bit_registers};
use crate::core::DecodeError;

/// DataSketches' family code of HLL sketches.
const FAMILY: u8 = 7;
const SERIAL_VERSION: u8 = 1;
const FLAG_EMPTY: u8 = 4;
const FLAG_COMPACT: u8 = 8;
const FLAG_OUT_OF_ORDER: u8 = 16;
/// The bytes before the registers of an HLL-mode image.
const HLL_PREAMBLE: usize = 40;
/// The nibble of an HLL_4 register held in the exception table.
const AUX_TOKEN: u8 = 15;

/// The first size (log₂) of HLL_4's exception table, by lg_k.
fn lg_aux_start(lg_k: u8) -> u8 {
    match lg_k {
        ..=6 => 2,
        7..=9 => 3,
        10 | 11 => 4,
        12 => 5,
        _ => lg_k - 8,
    }
}

fn field(field: &'static str, reason: &'static str) -> DecodeError {
    DecodeError::InvalidField { field, reason }
}

/// Little-endian reads at an offset, with the image's length checked.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn slice(&self, at: usize, len: usize) -> Result<&[u8], DecodeError> {
        at.checked_add(len)
            .and_then(|end| self.0.get(at..end))
            .ok_or(DecodeError::Truncated { needed: at.saturating_add(len), available: self.0.len() })
    }

    fn u32(&self, at: usize) -> Result<u32, DecodeError> {
        let b = self.slice(at, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f64(&self, at: usize) -> Result<f64, DecodeError> {
        let b = self.slice(at, 8)?;
        Ok(f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// `count` slots of coupons from `at` (the length checked before anything is allocated),
    /// each checked to be empty (0) or to hold a value from 1 to 63.
    fn slots(&self, at: usize, count: usize) -> Result<Vec<u32>, DecodeError> {
        let bytes = self.slice(at, count.checked_mul(4).ok_or(field("coupons", "too many"))?)?;
        bytes
            .chunks_exact(4)
            .map(|chunk| {
                let c = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                if c != 0 && c >> KEY_BITS == 0 {
                    Err(field("coupon", "a coupon's value is at least 1"))
                } else {
                    Ok(c)
                }
            })
            .collect()
    }
}

/// `2^lg` slots, for a table whose size the image gives.
fn table_size(lg: u8) -> Result<usize, DecodeError> {
    if lg > 26 {
        return Err(field("lg_arr", "at most 26"));
    }
    Ok(1 << lg)
}

/// Reads an image (see the module docs).
pub(super) fn decode(image: &[u8]) -> Result<DataSketchesHll, DecodeError> {
    let b = Bytes(image);
    let pre = b.slice(0, 8)?;
    let (pre_ints, version, family, lg_k, lg_arr, flags, byte6, mode) =
        (pre[0], pre[1], pre[2], pre[3], pre[4], pre[5], pre[6], pre[7]);
    if family != FAMILY {
        return Err(DecodeError::WrongFamily { expected: FAMILY, found: family });
    }
    if version != SERIAL_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    if !(DataSketchesHll::MIN_LG_K..=DataSketchesHll::MAX_LG_K).contains(&lg_k) {
        return Err(field("lg_k", "DataSketches' HLL takes lg_k from 4 to 21"));
    }
    let target = match mode >> 2 & 3 {
        0 => HllType::Hll4,
        1 => HllType::Hll6,
        2 => HllType::Hll8,
        _ => return Err(field("target type", "HLL_4, HLL_6 or HLL_8")),
    };
    let compact = flags & FLAG_COMPACT != 0;
    let empty = flags & FLAG_EMPTY != 0;
    let state = match (mode & 3, pre_ints) {
        (0, 2) => {
            let stored = usize::from(byte6);
            let slots = if empty {
                Vec::new()
            } else if compact {
                b.slots(8, stored)?
            } else {
                b.slots(8, table_size(lg_arr)?)?
            };
            let list: Vec<u32> = slots.into_iter().filter(|&c| c != 0).collect();
            if list.len() >= LIST_CAPACITY {
                return Err(field("list count", "a list holds at most 7 coupons"));
            }
            if !empty && list.len() != stored {
                return Err(field("list count", "the coupons stored differ from the count"));
            }
            if list.iter().enumerate().any(|(i, c)| list[..i].contains(c)) {
                return Err(field("list", "a coupon appears twice"));
            }
            State::List(list)
        }
        (1, 3) => {
            if !(5..=lg_k.saturating_sub(3)).contains(&lg_arr) {
                return Err(field("lg_arr", "a set's table has from 2^5 to k/8 slots"));
            }
            let size = table_size(lg_arr)?;
            let stored = b.u32(8)? as usize;
            if 4 * stored > 3 * size {
                return Err(field("set count", "a set's table is at most three quarters full"));
            }
            if compact {
                let coupons = b.slots(12, stored)?;
                if coupons.contains(&0) {
                    return Err(field("set", "a compact set holds no empty slot"));
                }
                let (slots, count) = set_of(lg_arr, coupons);
                if count != stored {
                    return Err(field("set", "a coupon appears twice"));
                }
                State::Set { slots, count }
            } else {
                let slots = b.slots(12, size)?;
                if slots.iter().filter(|&&c| c != 0).count() != stored {
                    return Err(field("set count", "the coupons stored differ from the count"));
                }
                // Every coupon where DataSketches' probe finds it (and so no coupon twice).
                if slots.iter().enumerate().any(|(i, &c)| c != 0 && set_find(&slots, c) != Ok(i)) {
                    return Err(field("set", "a coupon out of its probe sequence"));
                }
                State::Set { slots, count: stored }
            }
        }
        (2, 10) => State::Hll(Box::new(registers(&b, lg_k, lg_arr, byte6, target, compact, flags)?)),
        _ => return Err(field("mode", "list (2 preamble ints), set (3) or HLL (10)")),
    };
    Ok(DataSketchesHll { lg_k, target, state })
}

/// The registers and estimator state of an HLL-mode image.
fn registers(
    b: &Bytes<'_>,
    lg_k: u8,
    lg_arr: u8,
    cur_min: u8,
    target: HllType,
    compact: bool,
    flags: u8,
) -> Result<Registers, DecodeError> {
    let k = 1_usize << lg_k;
    let (hip, kxq0, kxq1) = (b.f64(8)?, b.f64(16)?, b.f64(24)?);
    // Anything else would make the estimates infinite or meaningless.
    if !sums_in_range(kxq0, kxq1, k) {
        return Err(field("kxq", "the sums of 2^-r lie between k·2^-63 and k"));
    }
    if !(0.0..=HIP_MAX).contains(&hip) {
        return Err(field("HIP accumulator", "from 0 to 2^100"));
    }
    let aux_count = b.u32(36)? as usize;
    let values = match target {
        HllType::Hll8 => b.slice(HLL_PREAMBLE, k)?.to_vec(),
        HllType::Hll6 => {
            let packed = b.slice(HLL_PREAMBLE, k * 3 / 4 + 1)?;
            let mut values = vec![0; k];
            unpack_six_bit_registers(packed, &mut values);
            values
        }
        HllType::Hll4 => {
            if cur_min > 63 {
                return Err(field("cur_min", "a register holds at most 63"));
            }
            let nibbles = b.slice(HLL_PREAMBLE, k / 2)?;
            let aux_slots = if compact || aux_count == 0 { aux_count } else { table_size(lg_arr)? };
            if aux_count > k {
                return Err(field("aux count", "at most one exception a register"));
            }
            let aux: Vec<u32> = b.slots(HLL_PREAMBLE + k / 2, aux_slots)?.into_iter().filter(|&c| c != 0).collect();
            if aux.len() != aux_count {
                return Err(field("aux count", "the exceptions stored differ from the count"));
            }
            // Each register's value; a register waiting for its exception holds WAITING, which
            // no register may hold (the check below finds one left waiting).
            const WAITING: u8 = u8::MAX;
            let mut values = vec![0_u8; k];
            let value = |nibble: u8| if nibble == AUX_TOKEN { WAITING } else { nibble + cur_min };
            for (block, bytes) in values.chunks_exact_mut(32).zip(nibbles.chunks_exact(16)) {
                // The shape of `pack_nibbles`, which the compiler vectorizes.
                for (pair, &byte) in block.chunks_exact_mut(2).zip(bytes) {
                    pair[0] = value(byte & 15);
                    pair[1] = value(byte >> 4);
                }
            }
            let done = k / 32 * 32;
            for (pair, &byte) in values[done..].chunks_exact_mut(2).zip(&nibbles[done / 2..]) {
                pair[0] = value(byte & 15);
                pair[1] = value(byte >> 4);
            }
            for c in aux {
                match values.get_mut((c & KEY_MASK) as usize) {
                    Some(v @ &mut WAITING) => *v = (c >> KEY_BITS) as u8,
                    _ => return Err(field("aux table", "an exception for a register that has none")),
                }
            }
            values
        }
    };
    // The largest register, without a branch per register (WAITING, a missing exception,
    // fails here too).
    if min_max(&values).1 > 63 {
        return Err(field("registers", "a register holds at most 63 (and an exception for each 15)"));
    }
    Ok(Registers { values, hip, kxq0, kxq1, out_of_order: flags & FLAG_OUT_OF_ORDER != 0 })
}

/// Writes an image: compact, or updatable.
pub(super) fn encode(sketch: &DataSketchesHll, compact: bool) -> Vec<u8> {
    let target_code = match sketch.target {
        HllType::Hll4 => 0,
        HllType::Hll6 => 1,
        HllType::Hll8 => 2,
    };
    let mut flags = if compact { FLAG_COMPACT } else { 0 };
    if sketch.is_empty() {
        flags |= FLAG_EMPTY;
    }
    let put_slots =
        |out: &mut Vec<u8>, slots: &[u32]| slots.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
    match &sketch.state {
        State::List(list) => {
            let mut out = vec![2, SERIAL_VERSION, FAMILY, sketch.lg_k, 3, flags, list.len() as u8, target_code << 2];
            put_slots(&mut out, list);
            if !compact {
                put_slots(&mut out, &[0; LIST_CAPACITY][list.len()..]);
            }
            out
        }
        State::Set { slots, count } => {
            let lg = slots.len().trailing_zeros() as u8;
            let mut out = vec![3, SERIAL_VERSION, FAMILY, sketch.lg_k, lg, flags, 0, target_code << 2 | 1];
            out.extend_from_slice(&(*count as u32).to_le_bytes());
            if compact {
                slots.iter().filter(|&&c| c != 0).for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
            } else {
                put_slots(&mut out, slots);
            }
            out
        }
        State::Hll(r) => {
            if r.out_of_order {
                flags |= FLAG_OUT_OF_ORDER;
            }
            let k = r.values.len();
            let (smallest, largest) = min_max(&r.values);
            // HLL_4 writes its registers above the smallest and counts those at it; the others
            // count the registers at zero.
            let cur_min = if sketch.target == HllType::Hll4 { smallest } else { 0 };
            let at_cur_min = count_equal(&r.values, cur_min);
            // HLL_4's exceptions: the registers 15 or more above the smallest (rare).
            let aux = (sketch.target == HllType::Hll4).then(|| {
                // Blocks of 64 whose largest register is below the line are skipped whole.
                let mut exceptions = Vec::new();
                for (b, block) in r.values.chunks(64).enumerate().filter(|_| largest - cur_min >= AUX_TOKEN) {
                    if min_max(block).1 - cur_min >= AUX_TOKEN {
                        let at = block.iter().enumerate().filter(|&(_, &v)| v - cur_min >= AUX_TOKEN);
                        exceptions.extend(at.map(|(i, &v)| u32::from(v) << KEY_BITS | (64 * b + i) as u32));
                    }
                }
                aux_table(sketch.lg_k, &exceptions)
            });
            let aux_count = aux.as_ref().map_or(0, |(_, slots)| slots.iter().filter(|&&c| c != 0).count());
            let lg_arr = match &aux {
                Some((lg, _)) if aux_count > 0 => *lg,
                _ => 0,
            };
            let body = match sketch.target {
                HllType::Hll8 => k,
                HllType::Hll6 => k * 3 / 4 + 1,
                HllType::Hll4 => k / 2 + 4 * aux.as_ref().map_or(0, |(_, slots)| slots.len()),
            };
            let mut out = Vec::with_capacity(HLL_PREAMBLE + body);
            out.extend_from_slice(&[
                10,
                SERIAL_VERSION,
                FAMILY,
                sketch.lg_k,
                lg_arr,
                flags,
                cur_min,
                target_code << 2 | 2,
            ]);
            for x in [r.hip, r.kxq0, r.kxq1] {
                out.extend_from_slice(&x.to_le_bytes());
            }
            out.extend_from_slice(&at_cur_min.to_le_bytes());
            out.extend_from_slice(&(aux_count as u32).to_le_bytes());
            match sketch.target {
                HllType::Hll8 => out.extend_from_slice(&r.values),
                HllType::Hll6 => {
                    out.resize(HLL_PREAMBLE + k * 3 / 4 + 1, 0);
                    pack_six_bit_registers(&r.values, &mut out[HLL_PREAMBLE..]);
                }
                HllType::Hll4 => {
                    out.resize(HLL_PREAMBLE + k / 2, 0);
                    pack_nibbles(&r.values, cur_min, &mut out[HLL_PREAMBLE..]);
                }
            }
            if let Some((_, slots)) = aux {
                if compact {
                    slots.iter().filter(|&&c| c != 0).for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
                } else {
                    put_slots(&mut out, &slots);
                }
            }
            out
        }
    }
}

/// HLL_4's nibbles: each register above `floor`, at most [`AUX_TOKEN`], two to a byte (the
/// even register low). Blocks of 32 registers go through a small array, a shape the compiler
/// vectorizes: 165 ns for 4 096 registers, against 2 µs for a loop over pairs.
#[allow(clippy::needless_range_loop)]
fn pack_nibbles(values: &[u8], floor: u8, out: &mut [u8]) {
    let nibble = |v: u8| v.wrapping_sub(floor).min(AUX_TOKEN);
    let blocks = values.chunks_exact(32);
    let rest = blocks.remainder();
    let (out_blocks, out_rest) = out.split_at_mut(out.len() - rest.len() / 2);
    for (o, block) in out_blocks.chunks_exact_mut(16).zip(blocks) {
        let mut t = [0_u8; 32];
        for i in 0..32 {
            t[i] = nibble(block[i]);
        }
        for i in 0..16 {
            o[i] = t[2 * i] | t[2 * i + 1] << 4;
        }
    }
    for (o, pair) in out_rest.iter_mut().zip(rest.chunks_exact(2)) {
        *o = nibble(pair[0]) | nibble(pair[1]) << 4;
    }
}

/// HLL_4's exception table holding `exceptions` (coupons of register and value), as
/// DataSketches builds it: from its first size, doubling when more than three quarters full;
/// the probe starts at the register's low bits and steps by the rest of it, made odd.
fn aux_table(lg_k: u8, exceptions: &[u32]) -> (u8, Vec<u32>) {
    let mut lg = lg_aux_start(lg_k);
    while 4 * exceptions.len() > 3 << lg {
        lg += 1;
    }
    let mut slots = vec![0_u32; 1 << lg];
    let mask = slots.len() - 1;
    for &c in exceptions {
        let register = (c & KEY_MASK) as usize;
        let stride = (register >> lg) | 1;
        let mut probe = register & mask;
        while slots[probe] != 0 {
            probe = (probe + stride) & mask;
        }
        slots[probe] = c;
    }
    (lg, slots)
}
