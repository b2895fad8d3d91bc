//! Apache DataSketches' HLL sketch images, and its hash of items: the groundwork of the
//! public DataSketches type (issue 17), checked here against images made by the
//! `datasketches` Python package (`tests/fixtures/datasketches/`). Not yet public: its
//! estimators (HIP, the composite estimator and the coupon estimators with their interpolation
//! tables), its updates and its encoder come next.
//!
//! An image is a preamble and the sketch in one of three modes:
//!
//! ```text
//!   byte 0 preamble ints (2 list, 3 set, 10 hll)   1 serial version (1)   2 family (7)
//!        3 lg_k   4 lg_arr   5 flags (4 empty, 8 compact, 16 out of order)
//!        6 list count (list) or cur_min (hll)      7 mode: bits 0-1 list/set/hll, 2-3 HLL_4/6/8
//!   list: coupons (u32) from byte 8: `list count` of them, or 2^lg_arr slots (0 is empty)
//!   set : a u32 count at 8, coupons from 12: `count` of them, or 2^lg_arr slots
//!   hll : HIP accumulator, kxq0, kxq1 (f64) at 8, 16, 24; at cur_min (u32) at 32; aux count
//!         (u32) at 36; registers from 40: HLL_8 one byte each, HLL_6 six bits each
//!         (little-endian bit order), HLL_4 a nibble each (even slots low) above cur_min, 15
//!         meaning "in the aux table" (coupons after the nibbles: `aux count` of them, or
//!         2^lg_arr slots)
//! ```
//!
//! A coupon is what a sketch keeps of one item: the low 26 bits of the first half of
//! MurmurHash3 x64 128 (seed 9001) of the item's bytes, and above them one plus the leading
//! zeros of the second half, at most 63. The item's bytes are DataSketches' canonical
//! encoding: an integer's 8 little-endian bytes as an `i64`, a double's (with `-0.0` as `0.0`
//! and every NaN as `0x7ff8000000000000`), a string's UTF-8 bytes (an empty string is no item).

#![cfg_attr(not(test), allow(dead_code))]

use crate::core::DecodeError;

/// The seed of DataSketches' updates.
const SEED: u32 = 9001;
/// Bits of a coupon's address.
const KEY_BITS: u32 = 26;
const KEY_MASK: u32 = (1 << KEY_BITS) - 1;
/// The nibble of an HLL_4 register held in the aux table.
const AUX_TOKEN: u8 = 15;

/// An item as DataSketches hashes it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Item<'a> {
    /// An integer, as an `i64`.
    Int(i64),
    /// A double, canonicalized.
    Double(f64),
    /// A string or byte array: its bytes (empty: no item).
    Bytes(&'a [u8]),
}

/// The coupon of `item`, or `None` for an empty string (which DataSketches skips).
pub(crate) fn coupon(item: Item<'_>) -> Option<u32> {
    let (h1, h2) = match item {
        Item::Int(v) => mur3::murmurhash3_x64_128(&v.to_le_bytes(), SEED),
        Item::Double(d) => {
            let bits = if d == 0.0 {
                0.0_f64.to_bits()
            } else if d.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                d.to_bits()
            };
            mur3::murmurhash3_x64_128(&bits.to_le_bytes(), SEED)
        }
        Item::Bytes([]) => return None,
        Item::Bytes(bytes) => mur3::murmurhash3_x64_128(bytes, SEED),
    };
    let value = h2.leading_zeros().min(62) + 1;
    Some(value << KEY_BITS | (h1 as u32 & KEY_MASK))
}

/// The register width an image's registers take in HLL mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetType {
    Hll4,
    Hll6,
    Hll8,
}

/// What an image holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Content {
    /// List or set mode: the coupons, sorted.
    Coupons { set: bool, coupons: Vec<u32> },
    /// HLL mode: every register's value, and the estimators' state.
    Registers { registers: Vec<u8>, hip: f64, kxq0: f64, kxq1: f64 },
}

/// A decoded image.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Image {
    pub(crate) lg_k: u8,
    pub(crate) target: TargetType,
    pub(crate) out_of_order: bool,
    pub(crate) content: Content,
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

    /// `count` coupons from `at`, the empty slots (0) of an updatable table left out, each
    /// checked to hold a value from 1 to 63.
    fn coupons(&self, at: usize, count: usize) -> Result<Vec<u32>, DecodeError> {
        let bytes = self.slice(at, count.checked_mul(4).ok_or(field("coupons", "too many"))?)?;
        let mut out = Vec::with_capacity(count);
        for chunk in bytes.chunks_exact(4) {
            let c = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            if c != 0 {
                if c >> KEY_BITS == 0 {
                    return Err(field("coupon", "a coupon's value is at least 1"));
                }
                out.push(c);
            }
        }
        Ok(out)
    }
}

/// Decodes an HLL sketch image, compact or updatable.
pub(crate) fn decode(image: &[u8]) -> Result<Image, DecodeError> {
    let b = Bytes(image);
    let pre = b.slice(0, 8)?;
    let (pre_ints, version, family, lg_k, lg_arr, flags, byte6, mode) =
        (pre[0], pre[1], pre[2], pre[3], pre[4], pre[5], pre[6], pre[7]);
    if family != 7 {
        return Err(field("family", "an HLL sketch image has family 7"));
    }
    if version != 1 {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    if !(4..=21).contains(&lg_k) {
        return Err(field("lg_k", "DataSketches' HLL takes lg_k from 4 to 21"));
    }
    let target = match mode >> 2 & 3 {
        0 => TargetType::Hll4,
        1 => TargetType::Hll6,
        2 => TargetType::Hll8,
        _ => return Err(field("target type", "HLL_4, HLL_6 or HLL_8")),
    };
    let compact = flags & 8 != 0;
    let empty = flags & 4 != 0;
    let out_of_order = flags & 16 != 0;
    let slots = |lg: u8| -> Result<usize, DecodeError> {
        if lg > 26 {
            return Err(field("lg_arr", "at most 26"));
        }
        Ok(1 << lg)
    };
    let content = match (mode & 3, pre_ints) {
        (0, 2) => {
            let count = if empty {
                0
            } else if compact {
                usize::from(byte6)
            } else {
                slots(lg_arr)?
            };
            let mut coupons = b.coupons(8, count)?;
            coupons.sort_unstable();
            Content::Coupons { set: false, coupons }
        }
        (1, 3) => {
            let stored = b.u32(8)? as usize;
            let count = if compact { stored } else { slots(lg_arr)? };
            let mut coupons = b.coupons(12, count)?;
            if coupons.len() != stored {
                return Err(field("set count", "the coupons stored differ from the count"));
            }
            coupons.sort_unstable();
            Content::Coupons { set: true, coupons }
        }
        (2, 10) => {
            let k = 1_usize << lg_k;
            let (hip, kxq0, kxq1) = (b.f64(8)?, b.f64(16)?, b.f64(24)?);
            let aux_count = b.u32(36)? as usize;
            let registers = match target {
                TargetType::Hll8 => b.slice(40, k)?.to_vec(),
                TargetType::Hll6 => {
                    let bytes = b.slice(40, k * 3 / 4 + 1)?;
                    (0..k)
                        .map(|i| {
                            let (at, shift) = (i * 6 / 8, i * 6 % 8);
                            let word = u16::from_le_bytes([bytes[at], bytes.get(at + 1).copied().unwrap_or(0)]);
                            (word >> shift & 63) as u8
                        })
                        .collect()
                }
                TargetType::Hll4 => {
                    let cur_min = byte6;
                    let nibbles = b.slice(40, k / 2)?;
                    let aux_slots = if compact {
                        aux_count
                    } else if aux_count == 0 {
                        0
                    } else {
                        slots(lg_arr)?
                    };
                    let aux = b.coupons(40 + k / 2, aux_slots)?;
                    if aux.len() != aux_count {
                        return Err(field("aux count", "the exceptions stored differ from the count"));
                    }
                    // Each register's value, or `None` while it waits for its exception.
                    let mut values: Vec<Option<u8>> = (0..k)
                        .map(|i| match nibbles[i / 2] >> (4 * (i & 1)) & 15 {
                            AUX_TOKEN => None,
                            nibble => Some(nibble.saturating_add(cur_min)),
                        })
                        .collect();
                    for c in aux {
                        match values.get_mut((c & KEY_MASK) as usize) {
                            Some(v @ None) => *v = Some((c >> KEY_BITS) as u8),
                            _ => return Err(field("aux table", "an exception for a register that has none")),
                        }
                    }
                    let registers: Option<Vec<u8>> = values.into_iter().collect();
                    registers.ok_or(field("aux table", "a register refers to a missing exception"))?
                }
            };
            if registers.iter().any(|&r| r > 63) {
                return Err(field("registers", "a register holds at most 63"));
            }
            Content::Registers { registers, hip, kxq0, kxq1 }
        }
        _ => return Err(field("mode", "list (2 preamble ints), set (3) or HLL (10)")),
    };
    Ok(Image { lg_k, target, out_of_order, content })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn manifest() -> serde_json::Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/datasketches/manifest.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("the manifest")).expect("JSON")
    }

    fn image(name: &str, form: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/datasketches/{name}.{form}.bin"));
        std::fs::read(path).expect("the image")
    }

    /// The coupons of a fixture case's items, by the rule of `make.py`.
    fn coupons(kind: &str, n: u64) -> Vec<u32> {
        (0..n)
            .filter_map(|i| match kind {
                "ints" => coupon(Item::Int(i as i64)),
                "strings" => coupon(Item::Bytes(format!("user-{i}").as_bytes())),
                "floats" => coupon(Item::Double(i as f64 + 0.5)),
                other => panic!("unknown kind {other}"),
            })
            .collect()
    }

    #[test]
    fn every_image_holds_the_coupons_of_its_items() {
        let manifest = manifest();
        let cases = manifest["cases"].as_array().expect("cases");
        assert_eq!(cases.len(), 105);
        for case in cases {
            let name = case["name"].as_str().expect("name");
            let (compact, updatable) =
                (decode(&image(name, "compact")).expect(name), decode(&image(name, "updatable")).expect(name));
            assert_eq!(compact, updatable, "{name}: the two images");
            let lg_k = case["lg_k"].as_u64().expect("lg_k") as u8;
            assert_eq!(compact.lg_k, lg_k);
            assert!(!compact.out_of_order);
            let mut expected = coupons(case["kind"].as_str().expect("kind"), case["n"].as_u64().expect("n"));
            match &compact.content {
                Content::Coupons { set, coupons } => {
                    assert_eq!(*set, case["mode"] == "SET", "{name}");
                    expected.sort_unstable();
                    expected.dedup();
                    assert_eq!(coupons, &expected, "{name}: the coupons");
                }
                Content::Registers { registers, hip, .. } => {
                    assert_eq!(case["mode"], "HLL", "{name}");
                    let mut want = vec![0_u8; 1 << lg_k];
                    for c in expected {
                        let slot = (c & ((1 << lg_k) - 1)) as usize;
                        want[slot] = want[slot].max((c >> KEY_BITS) as u8);
                    }
                    assert_eq!(registers, &want, "{name}: the registers");
                    // In order, DataSketches' estimate is the HIP accumulator (to within the
                    // rounding of its arithmetic there: a few units in the last place).
                    let estimate = case["estimate"].as_f64().expect("estimate");
                    assert!((hip - estimate).abs() <= 1e-14 * estimate, "{name}: HIP {hip} against {estimate}");
                }
            }
        }
    }

    /// A union's image: both forms alike; in list or set mode, the union of its parts'
    /// coupons. (In HLL mode its registers, and whether it is marked out of order, depend on
    /// the union's lg_k and on its parts; that is the union's own test, with its estimator.)
    #[test]
    fn unions_read_as_their_parts_put_together() {
        let manifest = manifest();
        for union in manifest["unions"].as_array().expect("unions") {
            let name = union["name"].as_str().expect("name");
            let decoded = decode(&image(name, "compact")).expect(name);
            assert_eq!(decoded, decode(&image(name, "updatable")).expect(name));
            match &decoded.content {
                Content::Registers { registers, .. } => assert_eq!(registers.len(), 1 << decoded.lg_k),
                Content::Coupons { coupons, .. } => {
                    let mut all: Vec<u32> = Vec::new();
                    for part in union["of"].as_array().expect("parts") {
                        let part = decode(&image(part.as_str().expect("name"), "compact")).expect("a part");
                        let Content::Coupons { coupons, .. } = part.content else { panic!("{name}: an HLL part") };
                        all.extend(coupons);
                    }
                    all.sort_unstable();
                    all.dedup();
                    assert_eq!(coupons, &all, "{name}");
                }
            }
        }
    }

    proptest::proptest! {
        /// Any preamble a hostile writer can pick, any body: an image or an error.
        #[test]
        fn arbitrary_images_give_an_image_or_an_error(
            pre_ints in proptest::sample::select(vec![2_u8, 3, 10, 0, 255]),
            lg_k in 0_u8..=25,
            lg_arr in 0_u8..=40,
            flags in proptest::prelude::any::<u8>(),
            byte6 in proptest::prelude::any::<u8>(),
            mode in proptest::prelude::any::<u8>(),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700),
        ) {
            let mut bytes = vec![pre_ints, 1, 7, lg_k, lg_arr, flags, byte6, mode];
            bytes.extend_from_slice(&body);
            let _ = decode(&bytes);
        }
    }

    #[test]
    fn an_hll_4_image_with_an_impossible_floor_is_refused() {
        let mut bytes = image("ints_k8_HLL_4_100000", "compact");
        bytes[6] = 250; // cur_min: nibbles above it would pass 63
        assert!(decode(&bytes).is_err());
    }

    #[test]
    fn damaged_images_give_an_image_or_an_error() {
        let manifest = manifest();
        for case in manifest["cases"].as_array().expect("cases").iter().step_by(7) {
            let bytes = image(case["name"].as_str().expect("name"), "updatable");
            for cut in 0..bytes.len().min(64) {
                let _ = decode(&bytes[..cut]);
            }
            for at in 0..bytes.len().min(48) {
                for xor in [1, 0x80, 0xff] {
                    let mut damaged = bytes.clone();
                    damaged[at] ^= xor;
                    let _ = decode(&damaged);
                }
            }
        }
    }
}
