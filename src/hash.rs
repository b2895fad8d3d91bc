//! The one stable hash path of the crate: seeded xxh3-64 over a canonical little-endian
//! encoding of the item.
//!
//! Everything that is persisted or merged across processes depends on the hash of each item,
//! so the hash must be the same on every platform, in every process and in every version of
//! this crate. `std::hash::Hash` gives none of that (its output depends on the hasher, the
//! platform's `usize` and the standard library's version), so the synopses never use it.
//! Instead an item is encoded to bytes canonically ([`Hashable::write_to`]) and hashed with
//! [xxh3-64](https://github.com/Cyan4973/xxHash) and an explicit seed:
//!
//! | item type | encoding |
//! |---|---|
//! | `u8` ... `u64`, `usize`, `bool`, `char` | the value zero-extended to 8 little-endian bytes |
//! | `i8` ... `i64`, `isize` | the value sign-extended to 8 little-endian bytes |
//! | `u128`, `i128` | 16 little-endian bytes |
//! | `str`, `String` | its UTF-8 bytes (variable length) |
//! | `[u8]`, `Vec<u8>`, `[u8; N]` | the bytes themselves (variable length) |
//! | `[T]`, `Vec<T>`, `[T; N]`, for any other `T` | each element as a component (variable length) |
//! | `(A, B, ...)`, up to 12 elements | each element as a component, in order |
//! | a struct, through [`hashable!`](crate::hashable) or [`Encoder::field`] | each field as a component, in order: the same as the tuple of its fields |
//! | `Option<T>` | `None`: the byte 0; `Some(x)`: the byte 1, then `x` as a component |
//! | `&T`, `&mut T`, `Box<T>`, `Rc<T>`, `Arc<T>`, `Cow<T>` | the encoding of the `T` |
//!
//! A *component* (an element of a tuple, sequence or option, or a field of a struct) is written
//! as its own encoding, except that a variable-length value is preceded by its length: the
//! number of bytes of a string or byte string, the number of elements of a sequence, written
//! as 8 little-endian bytes like a `usize` item. The item itself needs no length: the end of
//! the input ends it. So `(5_u64, "ab")` encodes as
//!
//! ```text
//! 05 00 00 00 00 00 00 00 | 02 00 00 00 00 00 00 00 | 61 62
//!   5_u64                 | length 2 of "ab"        | "ab"
//! ```
//!
//! and `("ab", "c")` and `("a", "bc")` differ. In general two different values of one type
//! never share an encoding: each component reads back from the front given its type (it has
//! a fixed width, or starts with its length or its tag), so only a collision of xxh3 itself,
//! with probability `2^-64` for a pair of items, can make them hash alike.
//!
//! Values of different types may share an encoding, and are then the same item: `5_i32`,
//! `5_u64` and `5_usize`; `"ab"` and `b"ab"`; `-1_i32` and `u64::MAX` (same 64 bits);
//! `[1_u32, 2]`, `vec![1_u32, 2]` and `(1_u32, 2_u32)`; a struct and the tuple of its fields.
//! Inside a byte sequence a `u8` takes one byte, as a `[u8]` does, while a lone `u8` takes
//! eight like any integer. Floats are not hashed directly, because `0.0 == -0.0` and
//! `NaN != NaN` make "the same value" ambiguous: hash `x.to_bits()` if bit equality is what
//! you mean. The golden tests in `tests/golden.rs` pin the values of every row, so any change
//! to this path fails the build.
//!
//! Every structure also takes a pre-computed hash (`observe_hash`, and `observe_hashes` for
//! many), so a caller can hash an item once with [`Hashable::hash64`] and feed several
//! structures. A column of integers (or of floats' bits) is hashed fastest by
//! [`hash_words`], several words at a time with the CPU's vector instructions, to the same
//! values.
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::hash::{Hashable, DEFAULT_SEED};
//!
//! assert_eq!(5_u64.hash64(DEFAULT_SEED), 5_i32.hash64(DEFAULT_SEED));
//! assert_eq!("ab".hash64(7), b"ab".hash64(7));
//! assert_ne!("ab".hash64(7), "ab".hash64(8));
//! assert_ne!(("ab", "c").hash64(7), ("a", "bc").hash64(7));
//!
//! // Distinct (user, day) pairs.
//! let mut hll = HyperLogLog::new(12)?;
//! for (user, day) in [("ann", 19_000_u32), ("bob", 19_000), ("ann", 19_001), ("ann", 19_000)] {
//!     hll.observe((user, day));
//! }
//! assert_eq!(hll.estimate().round(), 3.0);
//! # Ok::<(), synopses::ConfigError>(())
//! ```

use xxhash_rust::xxh3::xxh3_64_with_seed;

mod words;
pub use words::hash_words;

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
#[must_use]
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

/// Bytes kept on the stack while an item is encoded; a longer encoding moves to the heap.
const INLINE_BYTES: usize = 128;

/// The canonical encoding of an item, built by [`Hashable::write_to`]: the sink a composite
/// item writes its components into with [`field`](Encoder::field).
///
/// It knows whether the value being written is the item itself or a component of it, so a
/// variable-length value writes its length only where one is needed. Short encodings stay on
/// the stack, so hashing a tuple allocates nothing.
///
/// ```
/// use synopses::hash::{hash_bytes, Encoder, Hashable};
///
/// let mut out = Encoder::new();
/// (5_u64, "ab").write_to(&mut out);
/// assert_eq!(out.as_bytes(), [&5_u64.to_le_bytes()[..], &2_u64.to_le_bytes(), b"ab"].concat());
/// assert_eq!((5_u64, "ab").hash64(7), hash_bytes(out.as_bytes(), 7));
/// ```
#[derive(Clone)]
pub struct Encoder {
    /// Bytes written so far; those past `INLINE_BYTES` live in `spill`, with the first ones.
    len: usize,
    inline: [u8; INLINE_BYTES],
    spill: Vec<u8>,
    /// Whether the value being written is a component (so a variable-length one needs its
    /// length first) rather than the item itself.
    nested: bool,
}

impl Encoder {
    /// An empty encoding, for the top-level item.
    ///
    /// ```
    /// use synopses::hash::Encoder;
    ///
    /// assert!(Encoder::new().as_bytes().is_empty());
    /// ```
    #[inline]
    #[must_use]
    pub fn new() -> Self {
        Self { len: 0, inline: [0; INLINE_BYTES], spill: Vec::new(), nested: false }
    }

    /// Writes `item` as a component: its own encoding, preceded by its length if it has a
    /// variable length. A struct's [`Hashable::write_to`] calls this once per field, in a
    /// fixed order.
    ///
    /// ```
    /// use synopses::hash::{Encoder, Hashable};
    ///
    /// let mut out = Encoder::new();
    /// out.field("ab").field(&7_u32);
    /// assert_eq!(out.as_bytes().len(), 8 + 2 + 8);
    ///
    /// let mut tuple = Encoder::new();
    /// ("ab", 7_u32).write_to(&mut tuple);
    /// assert_eq!(out.as_bytes(), tuple.as_bytes());
    /// ```
    #[inline]
    pub fn field<T: Hashable + ?Sized>(&mut self, item: &T) -> &mut Self {
        let outer = std::mem::replace(&mut self.nested, true);
        item.write_to(self);
        self.nested = outer;
        self
    }

    /// The bytes written so far: the canonical encoding, which [`Hashable::hash64`] hashes.
    ///
    /// ```
    /// use synopses::hash::{Encoder, Hashable};
    ///
    /// let mut out = Encoder::new();
    /// Some(1_u8).write_to(&mut out);
    /// assert_eq!(out.as_bytes(), [1, 1, 0, 0, 0, 0, 0, 0, 0]);
    /// ```
    #[inline]
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.inline.get(..self.len).unwrap_or(&self.spill)
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if let Some(slot) = self.inline.get_mut(self.len..end) {
            slot.copy_from_slice(bytes);
        } else {
            if self.len <= INLINE_BYTES {
                self.spill.reserve(end.max(2 * INLINE_BYTES));
                self.spill.extend_from_slice(&self.inline[..self.len]);
            }
            self.spill.extend_from_slice(bytes);
        }
        self.len = end;
    }

    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.put(&v.to_le_bytes());
    }

    /// Starts a variable-length value of `len` bytes or elements: a component needs its
    /// length first, the item itself does not.
    #[inline]
    fn put_length(&mut self, len: usize) {
        if self.nested {
            // usize is at most 64 bits on every supported platform; widening is lossless.
            self.put_u64(len as u64);
        }
    }
}

impl Default for Encoder {
    /// The same as [`Encoder::new`].
    ///
    /// ```
    /// use synopses::hash::Encoder;
    ///
    /// assert!(Encoder::default().as_bytes().is_empty());
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder").field("bytes", &self.as_bytes()).finish()
    }
}

/// An item with a canonical, portable byte encoding, hashed with seeded xxh3-64.
///
/// The module docs give the encoding of each type. For your own struct, write its fields as
/// components in a fixed order, by hand or with [`hashable!`](crate::hashable); it then hashes
/// as the tuple of its fields:
///
/// ```
/// use synopses::hash::{Encoder, Hashable};
///
/// struct Visit { user: String, day: u32 }
///
/// impl Hashable for Visit {
///     fn write_to(&self, out: &mut Encoder) {
///         out.field(&self.user).field(&self.day);
///     }
/// }
///
/// let visit = Visit { user: "ann".into(), day: 19_000 };
/// assert_eq!(visit.hash64(7), ("ann", 19_000_u32).hash64(7));
/// ```
///
/// Write each part through [`Encoder::field`]: two direct `write_to` calls would let
/// `("ab", "c")` and `("a", "bc")` collide. Calling `write_to` of one value is right only to
/// hash a type exactly as that value (a newtype as what it wraps). The trait is object safe:
/// `&dyn Hashable` and `Box<dyn Hashable>` are items too.
pub trait Hashable {
    /// Appends the item's canonical encoding to `out`.
    ///
    /// ```
    /// use synopses::hash::{Encoder, Hashable};
    ///
    /// let mut out = Encoder::new();
    /// "ab".write_to(&mut out);
    /// assert_eq!(out.as_bytes(), b"ab");
    /// ```
    fn write_to(&self, out: &mut Encoder);

    /// The item's 64-bit hash under `seed`: xxh3-64 of its encoding. The primitive types
    /// override it to hash their bytes without the [`Encoder`]; an override must return the
    /// same value.
    ///
    /// ```
    /// use synopses::hash::{hash_bytes, Hashable};
    ///
    /// assert_eq!(42_u64.hash64(1), (&42_u64).hash64(1));
    /// assert_eq!(42_u64.hash64(1), hash_bytes(&42_u64.to_le_bytes(), 1));
    /// ```
    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        let mut out = Encoder::new();
        self.write_to(&mut out);
        hash_bytes(out.as_bytes(), seed)
    }

    /// Appends the encoding of a sequence of items (`[Self]`, `Vec<Self>`, `[Self; N]`): its
    /// length if it is a component, then each item as a component. `u8` overrides it to write
    /// the bytes themselves, which is how `[u8]` and `[T]` share one impl.
    ///
    /// ```
    /// use synopses::hash::{Encoder, Hashable};
    ///
    /// let mut out = Encoder::new();
    /// u32::write_slice(&[1, 2], &mut out);
    /// assert_eq!(out.as_bytes().len(), 16);
    /// ```
    #[inline]
    fn write_slice(items: &[Self], out: &mut Encoder)
    where
        Self: Sized,
    {
        out.put_length(items.len());
        for item in items {
            out.field(item);
        }
    }

    /// The hash of a sequence of items under `seed`, as [`hash64`](Hashable::hash64) is of
    /// one; `u8` overrides it to hash the bytes in place.
    ///
    /// ```
    /// use synopses::hash::{hash_bytes, Hashable};
    ///
    /// assert_eq!(u8::hash_slice(b"ab", 7), hash_bytes(b"ab", 7));
    /// assert_eq!(u32::hash_slice(&[1, 2], 7), [1_u32, 2].hash64(7));
    /// ```
    #[inline]
    fn hash_slice(items: &[Self], seed: u64) -> u64
    where
        Self: Sized,
    {
        let mut out = Encoder::new();
        Self::write_slice(items, &mut out);
        hash_bytes(out.as_bytes(), seed)
    }
}

/// Implements [`Hashable`](crate::hash::Hashable) for a struct from its fields: each field as a
/// component, in the order listed, so the struct hashes as the tuple of those fields. List
/// every field that takes part in equality, and keep the order once hashes are stored.
///
/// ```
/// use synopses::hash::Hashable;
///
/// struct Visit { user: String, day: u32 }
/// synopses::hashable!(Visit { user, day });
///
/// struct Cell(i32, i32);
/// synopses::hashable!(Cell { 0, 1 });
///
/// struct Tagged<T> { tag: u8, value: T }
/// synopses::hashable!(impl<T> Tagged<T> { tag, value });
///
/// let visit = Visit { user: "ann".into(), day: 19_000 };
/// assert_eq!(visit.hash64(7), ("ann", 19_000_u32).hash64(7));
/// assert_eq!(Cell(1, -2).hash64(7), (1_i32, -2_i32).hash64(7));
/// assert_eq!(Tagged { tag: 1, value: "x" }.hash64(7), (1_u8, "x").hash64(7));
/// ```
#[macro_export]
macro_rules! hashable {
    (impl<$($param:ident),+ $(,)?> $ty:ty { $($field:tt),+ $(,)? }) => {
        impl<$($param: $crate::hash::Hashable),+> $crate::hash::Hashable for $ty {
            fn write_to(&self, out: &mut $crate::hash::Encoder) {
                $( out.field(&self.$field); )+
            }
        }
    };
    ($ty:ty { $($field:tt),+ $(,)? }) => {
        impl $crate::hash::Hashable for $ty {
            fn write_to(&self, out: &mut $crate::hash::Encoder) {
                $( out.field(&self.$field); )+
            }
        }
    };
}

macro_rules! hashable_as_u64 {
    ($($t:ty),*) => {$(
        impl Hashable for $t {
            #[inline]
            fn write_to(&self, out: &mut Encoder) {
                out.put_u64(u64::from(*self));
            }

            #[inline]
            fn hash64(&self, seed: u64) -> u64 {
                hash_bytes(&u64::from(*self).to_le_bytes(), seed)
            }
        }
    )*};
}
hashable_as_u64!(u16, u32, u64, bool, char);

macro_rules! hashable_as_i64 {
    ($($t:ty),*) => {$(
        impl Hashable for $t {
            #[inline]
            fn write_to(&self, out: &mut Encoder) {
                out.put_u64(i64::from(*self) as u64);
            }

            #[inline]
            fn hash64(&self, seed: u64) -> u64 {
                hash_bytes(&i64::from(*self).to_le_bytes(), seed)
            }
        }
    )*};
}
hashable_as_i64!(i8, i16, i32, i64);

/// A lone `u8` is an integer (8 bytes); a sequence of them is a byte string (1 byte each).
impl Hashable for u8 {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        out.put_u64(u64::from(*self));
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(&u64::from(*self).to_le_bytes(), seed)
    }

    #[inline]
    fn write_slice(items: &[Self], out: &mut Encoder) {
        out.put_length(items.len());
        out.put(items);
    }

    #[inline]
    fn hash_slice(items: &[Self], seed: u64) -> u64 {
        hash_bytes(items, seed)
    }
}

impl Hashable for usize {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        // usize is at most 64 bits on every supported platform; widening is lossless.
        out.put_u64(*self as u64);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        (*self as u64).hash64(seed)
    }
}

impl Hashable for isize {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        out.put_u64(*self as i64 as u64);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        (*self as i64).hash64(seed)
    }
}

macro_rules! hashable_as_16_bytes {
    ($($t:ty),*) => {$(
        impl Hashable for $t {
            #[inline]
            fn write_to(&self, out: &mut Encoder) {
                out.put(&self.to_le_bytes());
            }

            #[inline]
            fn hash64(&self, seed: u64) -> u64 {
                hash_bytes(&self.to_le_bytes(), seed)
            }
        }
    )*};
}
hashable_as_16_bytes!(u128, i128);

impl Hashable for str {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        u8::write_slice(self.as_bytes(), out);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        hash_bytes(self.as_bytes(), seed)
    }
}

impl Hashable for String {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        self.as_str().write_to(out);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        self.as_str().hash64(seed)
    }
}

/// A sequence: for `u8` the bytes themselves, for any other `T` each element as a component;
/// preceded by the number of elements when it is itself a component.
///
/// ```
/// use synopses::hash::{hash_bytes, Hashable};
///
/// assert_eq!(b"ab"[..].hash64(7), hash_bytes(b"ab", 7));
/// assert_eq!([1_u32, 2][..].hash64(7), (1_u32, 2_u32).hash64(7));
/// assert_ne!(vec![vec![1_u32], vec![]].hash64(7), vec![vec![], vec![1_u32]].hash64(7));
/// ```
impl<T: Hashable> Hashable for [T] {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        T::write_slice(self, out);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        T::hash_slice(self, seed)
    }
}

impl<T: Hashable, const N: usize> Hashable for [T; N] {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        T::write_slice(self, out);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        T::hash_slice(self, seed)
    }
}

impl<T: Hashable> Hashable for Vec<T> {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        T::write_slice(self, out);
    }

    #[inline]
    fn hash64(&self, seed: u64) -> u64 {
        T::hash_slice(self, seed)
    }
}

/// `None` is the byte 0; `Some(x)` the byte 1, then `x` as a component.
///
/// ```
/// use synopses::hash::Hashable;
///
/// assert_ne!(None::<&str>.hash64(7), Some("").hash64(7));
/// assert_ne!((Some("a"), None::<&str>).hash64(7), (None::<&str>, Some("a")).hash64(7));
/// ```
impl<T: Hashable> Hashable for Option<T> {
    #[inline]
    fn write_to(&self, out: &mut Encoder) {
        match self {
            None => out.put(&[0]),
            Some(value) => {
                out.put(&[1]);
                out.field(value);
            }
        }
    }
}

macro_rules! hashable_tuple {
    ($($name:ident)+) => {
        impl<$($name: Hashable),+> Hashable for ($($name,)+) {
            #[inline]
            fn write_to(&self, out: &mut Encoder) {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                $( out.field($name); )+
            }
        }
    };
}
hashable_tuple!(A);
hashable_tuple!(A B);
hashable_tuple!(A B C);
hashable_tuple!(A B C D);
hashable_tuple!(A B C D E);
hashable_tuple!(A B C D E F);
hashable_tuple!(A B C D E F G);
hashable_tuple!(A B C D E F G H);
hashable_tuple!(A B C D E F G H I);
hashable_tuple!(A B C D E F G H I J);
hashable_tuple!(A B C D E F G H I J K);
hashable_tuple!(A B C D E F G H I J K L);

/// Pointers and smart pointers hash as what they point to.
macro_rules! hashable_as_target {
    ($([$($generics:tt)*] $ptr:ty),*) => {$(
        impl<$($generics)*> Hashable for $ptr {
            #[inline]
            fn write_to(&self, out: &mut Encoder) {
                (**self).write_to(out);
            }

            #[inline]
            fn hash64(&self, seed: u64) -> u64 {
                (**self).hash64(seed)
            }
        }
    )*};
}
hashable_as_target!(
    [T: Hashable + ?Sized] &T,
    [T: Hashable + ?Sized] &mut T,
    [T: Hashable + ?Sized] Box<T>,
    [T: Hashable + ?Sized] std::rc::Rc<T>,
    [T: Hashable + ?Sized] std::sync::Arc<T>,
    [T: Hashable + ToOwned + ?Sized] std::borrow::Cow<'_, T>
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoding<T: Hashable + ?Sized>(item: &T) -> Vec<u8> {
        let mut out = Encoder::new();
        item.write_to(&mut out);
        out.as_bytes().to_vec()
    }

    /// The overridden `hash64` agrees with xxh3 of the encoding, as the trait requires.
    fn hashes_its_encoding<T: Hashable + ?Sized>(item: &T) {
        for seed in [0, 7, DEFAULT_SEED] {
            assert_eq!(item.hash64(seed), hash_bytes(&encoding(item), seed));
        }
    }

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

    #[test]
    fn overrides_hash_the_encoding() {
        hashes_its_encoding(&7_u8);
        hashes_its_encoding(&-7_i8);
        hashes_its_encoding(&-7_isize);
        hashes_its_encoding(&usize::MAX);
        hashes_its_encoding(&'é');
        hashes_its_encoding(&false);
        hashes_its_encoding(&-1_i128);
        hashes_its_encoding("héllo");
        hashes_its_encoding(&String::from("héllo"));
        hashes_its_encoding(&b"bytes"[..]);
        hashes_its_encoding(&[9_u8; 300]);
        hashes_its_encoding(&vec![1_u8, 2, 3]);
        hashes_its_encoding(&[1_u32, 2, 3]);
        hashes_its_encoding(&vec!["a".to_string(); 40]);
        hashes_its_encoding(&std::rc::Rc::<str>::from("rc"));
        hashes_its_encoding(&std::borrow::Cow::Borrowed("cow"));
    }

    #[test]
    fn components_are_delimited() {
        assert_eq!(encoding(&(5_u64, "ab")), [&5_u64.to_le_bytes()[..], &2_u64.to_le_bytes(), b"ab"].concat());
        assert_eq!(encoding(&Some(vec![7_u8])), [&[1][..], &1_u64.to_le_bytes(), &[7]].concat());
        assert_eq!(encoding(&None::<u64>), [0]);
        // A sequence of sequences: the outer one has no length, each inner one has its own.
        assert_eq!(encoding(&[[1_u8], [2]]), [&1_u64.to_le_bytes()[..], &[1], &1_u64.to_le_bytes(), &[2]].concat());
        // A nested tuple adds nothing of its own: its components delimit themselves.
        assert_eq!(encoding(&(1_u8, ("x", 2_u8))), encoding(&(1_u8, "x", 2_u8)));
    }

    #[test]
    fn long_encodings_move_to_the_heap() {
        let long = "x".repeat(3 * INLINE_BYTES);
        let item = (1_u64, long.as_str(), vec![long.as_str(); 3]);
        let enc = encoding(&item);
        assert_eq!(enc.len(), 8 + (8 + long.len()) + 8 + 3 * (8 + long.len()));
        assert_eq!(enc.get(..8), Some(&1_u64.to_le_bytes()[..]));
        hashes_its_encoding(&item);
        // Exactly at the boundary, and one past it.
        for len in [INLINE_BYTES - 8, INLINE_BYTES - 7] {
            let s = "y".repeat(len);
            assert_eq!(encoding(&(s.as_str(),)), [&(len as u64).to_le_bytes()[..], s.as_bytes()].concat());
        }
    }

    #[test]
    fn object_safe() {
        let items: Vec<Box<dyn Hashable>> = vec![Box::new(5_u64), Box::new("ab"), Box::new((1_u8, "x"))];
        let hashes: Vec<u64> = items.iter().map(|item| item.hash64(7)).collect();
        assert_eq!(hashes, [5_u64.hash64(7), "ab".hash64(7), (1_u8, "x").hash64(7)]);
        let by_ref: &dyn Hashable = &(1_u8, "x");
        assert_eq!((by_ref, 2_u8).hash64(7), ((1_u8, "x"), 2_u8).hash64(7));
    }

    #[test]
    fn tuples_feed_every_synopsis() -> Result<(), Box<dyn std::error::Error>> {
        use crate::frequency::HeavyHitters;
        let mut hh = HeavyHitters::<(String, u32)>::new(8)?;
        for (user, day) in [("ann", 1), ("bob", 1), ("ann", 1), ("ann", 2)] {
            hh.observe((user.to_string(), day));
        }
        assert_eq!(hh.estimate(&("ann".to_string(), 1)), 2);
        let back = HeavyHitters::<(String, u32)>::from_bytes(&hh.to_bytes())?;
        assert_eq!(back.top(1), [(("ann".to_string(), 1), 2)]);
        Ok(())
    }

    /// A sequence cut in two.
    type Split<T> = (Vec<T>, Vec<T>);

    /// Pairs whose parts concatenate to the same bytes: the case a missing length would merge.
    fn split_pairs<T: Clone + std::fmt::Debug>(
        whole: impl Strategy<Value = Vec<T>>,
    ) -> impl Strategy<Value = (Split<T>, Split<T>)> {
        (whole, any::<prop::sample::Index>(), any::<prop::sample::Index>()).prop_map(|(v, i, j)| {
            let (i, j) = (i.index(v.len() + 1), j.index(v.len() + 1));
            ((v[..i].to_vec(), v[i..].to_vec()), (v[..j].to_vec(), v[j..].to_vec()))
        })
    }

    proptest! {
        #[test]
        fn string_pairs_encode_injectively(a in (".{0,12}", ".{0,12}"), b in (".{0,12}", ".{0,12}")) {
            prop_assert_eq!(a == b, encoding(&a) == encoding(&b));
        }

        #[test]
        fn split_string_pairs_encode_injectively((a, b) in split_pairs(prop::collection::vec(any::<char>(), 0..12))) {
            let text = |v: &Vec<char>| v.iter().collect::<String>();
            let (a, b) = ((text(&a.0), text(&a.1)), (text(&b.0), text(&b.1)));
            prop_assert_eq!(a == b, encoding(&a) == encoding(&b));
        }

        #[test]
        fn byte_pairs_encode_injectively(
            a in (prop::collection::vec(any::<u8>(), 0..12), prop::collection::vec(any::<u8>(), 0..12)),
            b in (prop::collection::vec(any::<u8>(), 0..12), prop::collection::vec(any::<u8>(), 0..12)),
        ) {
            prop_assert_eq!(a == b, encoding(&a) == encoding(&b));
        }

        #[test]
        fn split_byte_pairs_encode_injectively((a, b) in split_pairs(prop::collection::vec(any::<u8>(), 0..12))) {
            prop_assert_eq!(a == b, encoding(&a) == encoding(&b));
            // The same split, one level down: sequences of byte strings.
            let (a, b) = (vec![a.0, a.1], vec![b.0, b.1]);
            prop_assert_eq!(a == b, encoding(&a) == encoding(&b));
        }

        #[test]
        fn option_pairs_encode_injectively(
            a in (prop::option::of(".{0,4}"), prop::option::of(".{0,4}")),
            b in (prop::option::of(".{0,4}"), prop::option::of(".{0,4}")),
        ) {
            prop_assert_eq!(a == b, encoding(&a) == encoding(&b));
        }
    }
}
