//! The one stable hash path of the crate: seeded xxh3-64 over a canonical little-endian
//! encoding of the item.
//!
//! Everything that is persisted or merged across processes depends on the hash of each item,
//! so the hash must be the same on every platform, in every process and in every version of
//! this crate. `std::hash::Hash` gives none of that (its output depends on the hasher, the
//! platform's `usize` and the standard library's version), so the synopses never use it.
//! Instead an item is encoded to bytes canonically and hashed with
//! [xxh3-64](https://github.com/Cyan4973/xxHash) and an explicit seed:
//!
//! | item type | encoding |
//! |---|---|
//! | `u8` ... `u64`, `usize`, `bool`, `char` | the value zero-extended to 8 little-endian bytes |
//! | `i8` ... `i64`, `isize` | the value sign-extended to 8 little-endian bytes |
//! | `u128`, `i128` | 16 little-endian bytes |
//! | `str`, `String`, `[u8]`, `Vec<u8>`, `[u8; N]` | the bytes themselves |
//!
//! So `5_i32`, `5_u64` and `5_usize` are the same item, and so are `"ab"` and `b"ab"`; `-1_i32`
//! and `u64::MAX` are too (same 64 bits). Floats are not hashed directly, because `0.0 == -0.0`
//! and `NaN != NaN` make "the same value" ambiguous: hash `x.to_bits()` if bit equality is what
//! you mean. The golden tests in `tests/golden.rs` pin the values below, so any change to this
//! path fails the build.
//!
//! Every structure also takes a pre-computed hash (`observe_hash`), so a caller can hash an
//! item once with [`Hashable::hash64`] and feed several structures.
//!
//! ```
//! use synopses::hash::{Hashable, DEFAULT_SEED};
//!
//! assert_eq!(5_u64.hash64(DEFAULT_SEED), 5_i32.hash64(DEFAULT_SEED));
//! assert_eq!("ab".hash64(7), b"ab".hash64(7));
//! assert_ne!("ab".hash64(7), "ab".hash64(8));
//! ```

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The seed used by constructors that take none.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::hash::DEFAULT_SEED;
///
/// assert_eq!(HyperLogLog::new(12)?.seed(), DEFAULT_SEED);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub const DEFAULT_SEED: u64 = 0x5EED_0F5E_ED5A_1A7E;

/// Hashes raw bytes with seeded xxh3-64: the primitive every [`Hashable`] impl ends in.
///
/// ```
/// use synopses::hash::hash_bytes;
///
/// assert_eq!(hash_bytes(b"", 0), 0x2D06_8005_38D3_94C2);
/// ```
#[inline]
pub fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed)
}

/// Index `i` in `0..n` derived from one 64-bit hash, for structures that need several
/// independent indexes per item: Count-Min's rows, a partitioner's candidate workers. Index 0
/// takes the hash's low 32 bits, index 1 its high 32 bits, and index `i ≥ 2` the top 32 bits
/// of the hash times its own odd constant; each is mapped onto `0..n` by a multiply-shift
/// (Lemire) rather than a division.
///
/// Why not double hashing (`g_i = h1 + i·h2`)? Two items whose `(h1, h2)` agree in two
/// indexes then agree in nearly all, so the chance that two items share every index stops
/// falling at about `1/n²` however many there are; Count-Min's `δ = e^-depth` then fails for
/// deep sketches (measured by `examples/filters.rs`). Here any two indexes are as good as
/// independent: the two halves are independent bits, and a multiplier mixes all 64 bits anew.
#[inline]
pub(crate) fn derived_index(hash: u64, i: usize, n: u64) -> usize {
    let bits = match i {
        0 => hash & 0xFFFF_FFFF,
        1 => hash >> 32,
        i => hash.wrapping_mul(INDEX_MULTIPLIERS.get(i).copied().unwrap_or(1)) >> 32,
    };
    ((bits * n) >> 32) as usize
}

/// The multipliers of [`derived_index`] from index 2 up: odd, and otherwise splitmix64's
/// first outputs (any odd constants with well-mixed bits would do; these are pinned by the
/// golden fixtures).
const INDEX_MULTIPLIERS: [u64; 64] = {
    let mut out = [0u64; 64];
    let mut state = 0u64;
    let mut i = 0;
    while i < out.len() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out[i] = (z ^ (z >> 31)) | 1;
        i += 1;
    }
    out
};

/// An item with a canonical, portable byte encoding, hashed with seeded xxh3-64.
///
/// Implement it for your own types by hashing a canonical encoding with [`hash_bytes`], for
/// example the fields' little-endian bytes in a fixed order.
///
/// ```
/// use synopses::hash::{hash_bytes, Hashable};
///
/// struct Point { x: i32, y: i32 }
///
/// impl Hashable for Point {
///     fn hash64(&self, seed: u64) -> u64 {
///         let mut buf = [0u8; 8];
///         buf[..4].copy_from_slice(&self.x.to_le_bytes());
///         buf[4..].copy_from_slice(&self.y.to_le_bytes());
///         hash_bytes(&buf, seed)
///     }
/// }
/// assert_ne!(Point { x: 1, y: 2 }.hash64(0), Point { x: 2, y: 1 }.hash64(0));
/// ```
pub trait Hashable {
    /// The item's 64-bit hash under `seed`.
    ///
    /// ```
    /// use synopses::hash::Hashable;
    ///
    /// assert_eq!(42_u64.hash64(1), (&42_u64).hash64(1));
    /// ```
    fn hash64(&self, seed: u64) -> u64;
}

macro_rules! hashable_as_u64 {
    ($($t:ty),*) => {$(
        impl Hashable for $t {
            #[inline]
            fn hash64(&self, seed: u64) -> u64 {
                hash_bytes(&u64::from(*self).to_le_bytes(), seed)
            }
        }
    )*};
}
hashable_as_u64!(u8, u16, u32, u64, bool, char);

macro_rules! hashable_as_i64 {
    ($($t:ty),*) => {$(
        impl Hashable for $t {
            #[inline]
            fn hash64(&self, seed: u64) -> u64 {
                hash_bytes(&i64::from(*self).to_le_bytes(), seed)
            }
        }
    )*};
}
hashable_as_i64!(i8, i16, i32, i64);

impl Hashable for usize {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        // usize is at most 64 bits on every supported platform; widening is lossless.
        (*self as u64).hash64(seed)
    }
}

impl Hashable for isize {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        (*self as i64).hash64(seed)
    }
}

impl Hashable for u128 {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(&self.to_le_bytes(), seed)
    }
}

impl Hashable for i128 {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(&self.to_le_bytes(), seed)
    }
}

impl Hashable for str {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(self.as_bytes(), seed)
    }
}

impl Hashable for String {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(self.as_bytes(), seed)
    }
}

impl Hashable for [u8] {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(self, seed)
    }
}

impl<const N: usize> Hashable for [u8; N] {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(self, seed)
    }
}

impl Hashable for Vec<u8> {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(self, seed)
    }
}

impl<T: Hashable + ?Sized> Hashable for &T {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        (**self).hash64(seed)
    }
}

impl<T: Hashable + ?Sized> Hashable for Box<T> {
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        (**self).hash64(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_share_an_encoding() {
        let s = DEFAULT_SEED;
        assert_eq!(7_u8.hash64(s), 7_u64.hash64(s));
        assert_eq!(7_usize.hash64(s), 7_u32.hash64(s));
        assert_eq!((-7_i8).hash64(s), (-7_i64).hash64(s));
        assert_eq!((-7_isize).hash64(s), (-7_i16).hash64(s));
        assert_eq!(true.hash64(s), 1_u64.hash64(s));
        assert_eq!('a'.hash64(s), 97_u64.hash64(s));
        assert_eq!(String::from("xy").hash64(s), b"xy".hash64(s));
        assert_eq!(vec![1_u8, 2].hash64(s), [1_u8, 2][..].hash64(s));
        assert_ne!(7_u128.hash64(s), 7_u64.hash64(s));
    }
}
