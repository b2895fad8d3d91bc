//! The versioned binary format shared by every synopsis (`to_bytes` / `from_bytes`), and the
//! serde support that goes through it.
//!
//! # Layout
//!
//! ```text
//!  offset  size  field
//!  0       2     magic "SY"
//!  2       1     format version (1; a family whose body changed writes a later one)
//!  3       1     family code (each type's `Codec::FAMILY`: 1 = FlajoletMartin, 2 = HyperLogLog, ...)
//!  4       n     the family's body: parameters, seed, payload; little-endian throughout
//!  4 + n   8     xxh3-64 checksum of bytes 0 .. 4 + n (seed 0), little-endian
//! ```
//!
//! The bodies are described in each type's `to_bytes` documentation. Decoding checks, in this
//! order, the length, the magic, the family, the version and the checksum, then parses the
//! body, validates every field against the type's invariants, and rejects trailing bytes. The
//! family comes before the version because what a version means depends on the family. A
//! length read from the input is compared with the bytes actually present before anything is
//! allocated, so hostile input can only make the decoder allocate in proportion to its length
//! (beyond a fixed amount: the entropy-coded registers' decoder may build a 14 KB table, once
//! for each scale).
//!
//! # Versions
//!
//! The version is per family: each type writes its [`Codec::VERSION`] and reads every version
//! from [`FORMAT_VERSION`] up to it, so a change to one body leaves the other families' bytes
//! alone. Each version is pinned by the fixtures in `tests/fixtures/v<version>/`: a later
//! version of the crate must still read them.
//!
//! # serde
//!
//! With the `serde` feature every synopsis implements `Serialize` as its `to_bytes` encoding
//! (a byte string) and `Deserialize` through `from_bytes`, so a deserialized value passed the
//! same validation and can never break an invariant.
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::DecodeError;
//!
//! let mut hll = HyperLogLog::new(12)?;
//! hll.observe("a");
//! let mut bytes = hll.to_bytes();
//! assert_eq!(&bytes[..4], b"SY\x01\x02");
//! assert_eq!(HyperLogLog::from_bytes(&bytes)?, hll);
//!
//! let last = bytes.len() - 1;
//! bytes[last] ^= 1;
//! assert_eq!(HyperLogLog::from_bytes(&bytes), Err(DecodeError::ChecksumMismatch));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::core::DecodeError;
use crate::hash::hash_bytes;

/// The magic bytes that start every encoding.
///
/// ```
/// use synopses::cardinality::FlajoletMartin;
///
/// assert!(FlajoletMartin::new(16)?.to_bytes().starts_with(&synopses::codec::MAGIC));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub const MAGIC: [u8; 2] = *b"SY";

/// The envelope's base version: the oldest version any family reads, and the one every family
/// writes unless its body changed. Families whose body changed write a later one (their
/// [`Codec::VERSION`]):
///
/// | family | writes | what changed |
/// |---|---|---|
/// | 7 `Reservoir`, 8 `WeightedReservoir`, 9 `PrioritySample` | 2 | the state of the random generator, its draw count and the pending skip or jump are stored, so a decoded sampler continues exactly as the encoded one would have |
///
/// ```
/// use synopses::cardinality::FlajoletMartin;
/// use synopses::codec::{Codec, FORMAT_VERSION};
/// use synopses::sampling::Reservoir;
///
/// assert_eq!(FlajoletMartin::new(16)?.to_bytes()[2], FORMAT_VERSION);
/// assert_eq!(Reservoir::<u64>::new(16, 1)?.to_bytes()[2], Reservoir::<u64>::VERSION);
/// assert_eq!(Reservoir::<u64>::VERSION, 2);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub const FORMAT_VERSION: u8 = 1;

pub(crate) const HEADER_LEN: usize = 4;
const CHECKSUM_LEN: usize = 8;
const CHECKSUM_SEED: u64 = 0;

/// The length of the envelope around every body: the 4-byte header and the 8-byte checksum.
pub(crate) const ENVELOPE_LEN: usize = HEADER_LEN + CHECKSUM_LEN;

/// A synopsis with an encoding in this format. Every synopsis of the crate implements it, in
/// its own file, with its family code; the methods forward to the type's own `to_bytes`,
/// `from_bytes` and `encoded_len`, so generic code (such as [`stream`](crate::stream)'s
/// engines) can ship any synopsis between processes, and serde (with the `serde` feature)
/// goes through the same validating decoder.
///
/// Each type also has its [`VERSION`](Self::VERSION), the format version it writes: the base
/// [`FORMAT_VERSION`] for most, a later one for a family whose body changed (the table at
/// [`FORMAT_VERSION`]). A type reads every version from the base up to its own.
///
/// The family codes are fixed forever, one per type, never reused:
///
/// | code | type | code | type |
/// |---|---|---|---|
/// | 1 | `FlajoletMartin` | 10 | `UltraLogLog` |
/// | 2 | `HyperLogLog` | 11 | `ExaLogLog` |
/// | 3 | `CountMin` | 12 | `stream::CountWindow` |
/// | 4 | `Bloom` | 13 | `stream::TimeWindow` |
/// | 5 | `HeavyHitters` | 14 | `stream::KeyGrouping` |
/// | 6 | `CountingBloom` | 15 | `stream::ShuffleGrouping` |
/// | 7 | `Reservoir` | 16 | `stream::PartialKeyGrouping` |
/// | 8 | `WeightedReservoir` | 17 | `stream::DChoices` |
/// | 9 | `PrioritySample` | 18 | `quantiles::DDSketch` |
/// | 19 | `quantiles::Kll` | | |
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::codec::Codec;
///
/// fn ship<S: Codec>(s: &S) -> Result<S, synopses::DecodeError> {
///     let bytes = s.to_bytes();
///     assert_eq!(bytes.len(), s.encoded_len());
///     S::from_bytes(&bytes)
/// }
/// let mut hll = HyperLogLog::new(12)?;
/// hll.observe("a");
/// assert_eq!(ship(&hll)?, hll);
/// assert_eq!(HyperLogLog::FAMILY, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Codec: Sized {
    /// The family code: the fourth byte of every encoding of this type.
    ///
    /// ```
    /// use synopses::codec::Codec;
    /// use synopses::membership::Bloom;
    ///
    /// assert_eq!(Bloom::new(1024, 3)?.to_bytes()[3], Bloom::FAMILY);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    const FAMILY: u8;

    /// The format version this type writes, the third byte of its encodings; it reads every
    /// version from [`FORMAT_VERSION`] up to this one.
    ///
    /// ```
    /// use synopses::codec::{Codec, FORMAT_VERSION};
    /// use synopses::membership::Bloom;
    /// use synopses::sampling::PrioritySample;
    ///
    /// assert_eq!(Bloom::VERSION, FORMAT_VERSION);
    /// assert_eq!(PrioritySample::<u64>::new(8, 1)?.to_bytes()[2], PrioritySample::<u64>::VERSION);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    const VERSION: u8 = FORMAT_VERSION;

    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding.
    ///
    /// ```
    /// use synopses::codec::Codec;
    /// use synopses::sampling::Reservoir;
    ///
    /// let mut r = Reservoir::new(4, 7)?;
    /// r.observe("a string".to_string());
    /// assert_eq!(Codec::encoded_len(&r), r.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn encoded_len(&self) -> usize;

    /// The encoding.
    ///
    /// ```
    /// use synopses::codec::Codec;
    /// use synopses::frequency::CountMin;
    ///
    /// let cm = CountMin::new(256, 4)?;
    /// assert_eq!(Codec::to_bytes(&cm), cm.to_bytes());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn to_bytes(&self) -> Vec<u8>;

    /// Decodes and validates an encoding.
    ///
    /// ```
    /// use synopses::codec::Codec;
    /// use synopses::cardinality::UltraLogLog;
    ///
    /// fn decode<S: Codec>(bytes: &[u8]) -> Result<S, synopses::DecodeError> {
    ///     S::from_bytes(bytes)
    /// }
    /// let ull = UltraLogLog::new(10)?;
    /// assert_eq!(decode::<UltraLogLog>(&ull.to_bytes())?, ull);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError>;
}

/// Implements [`Codec`] (family code, version, and forwarding to the type's own `to_bytes`,
/// `from_bytes` and `encoded_len`) and, with the `serde` feature, serde's traits through the
/// same bytes. Generic parameters go in brackets, and a version other than the base one
/// follows the family: `codec_impl!([T: Item] Reservoir<T>, 7, version 2);`.
macro_rules! codec_impl {
    ([$($generics:tt)*] $ty:ty, $family:expr) => {
        $crate::codec::codec_impl!([$($generics)*] $ty, $family, version $crate::codec::FORMAT_VERSION);
    };
    ([$($generics:tt)*] $ty:ty, $family:expr, version $version:expr) => {
        impl<$($generics)*> $crate::codec::Codec for $ty {
            const FAMILY: u8 = $family;
            const VERSION: u8 = $version;

            fn encoded_len(&self) -> usize {
                <$ty>::encoded_len(self)
            }

            fn to_bytes(&self) -> Vec<u8> {
                <$ty>::to_bytes(self)
            }

            fn from_bytes(bytes: &[u8]) -> Result<Self, $crate::DecodeError> {
                <$ty>::from_bytes(bytes)
            }
        }

        #[cfg(feature = "serde")]
        impl<$($generics)*> serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.to_bytes())
            }
        }

        #[cfg(feature = "serde")]
        impl<'de, $($generics)*> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let bytes = deserializer.deserialize_bytes($crate::codec::serde_support::BytesVisitor)?;
                <$ty>::from_bytes(&bytes).map_err(serde::de::Error::custom)
            }
        }
    };
    ($ty:ty, $family:expr) => {
        $crate::codec::codec_impl!([] $ty, $family);
    };
}
pub(crate) use codec_impl;

/// An item that a synopsis which keeps items (such as
/// [`HeavyHitters`](crate::frequency::HeavyHitters)) can store in its encoding: a canonical,
/// portable byte form. Implemented for the integer and floating-point types (little-endian),
/// for tuples of two to four items, and for `String`
/// and `Vec<u8>` (a u32 length, then the bytes; items of 4 GiB or more are not supported);
/// implement it for your own types to serialize summaries of them.
///
/// ```
/// use synopses::codec::Item;
///
/// let mut out = Vec::new();
/// "héllo".to_string().encode(&mut out);
/// assert_eq!(String::decode(&out), Some(("héllo".to_string(), out.len())));
/// assert_eq!(String::decode(&out[..3]), None); // truncated
/// ```
pub trait Item: Sized {
    /// Appends the item's encoding to `out`.
    ///
    /// ```
    /// use synopses::codec::Item;
    ///
    /// let mut out = Vec::new();
    /// 7_u64.encode(&mut out);
    /// assert_eq!(out, 7_u64.to_le_bytes());
    /// ```
    fn encode(&self, out: &mut Vec<u8>);

    /// Decodes one item from the front of `bytes`: the item and the number of bytes it took,
    /// or `None` if `bytes` does not start with a valid encoding. Must not panic, and must not
    /// allocate more than the bytes it reads justify.
    ///
    /// ```
    /// use synopses::codec::Item;
    ///
    /// assert_eq!(u64::decode(&[1, 0, 0, 0, 0, 0, 0, 0, 99]), Some((1, 8)));
    /// assert_eq!(u64::decode(&[1, 0]), None);
    /// ```
    fn decode(bytes: &[u8]) -> Option<(Self, usize)>;

    /// The length of the item's encoding. The provided method encodes the item to count;
    /// the crate's impls compute it.
    ///
    /// ```
    /// use synopses::codec::Item;
    ///
    /// assert_eq!(7_u32.encoded_len(), 4);
    /// assert_eq!("héllo".to_string().encoded_len(), 4 + 6);
    /// ```
    fn encoded_len(&self) -> usize {
        let mut out = Vec::new();
        self.encode(&mut out);
        out.len()
    }
}

macro_rules! fixed_width_item {
    ($($t:ty),*) => {$(
        impl Item for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            fn decode(bytes: &[u8]) -> Option<(Self, usize)> {
                const N: usize = std::mem::size_of::<$t>();
                let head: [u8; N] = bytes.get(..N)?.try_into().ok()?;
                Some((<$t>::from_le_bytes(head), N))
            }

            fn encoded_len(&self) -> usize {
                std::mem::size_of::<$t>()
            }
        }
    )*};
}
fixed_width_item!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

/// A tuple of two to four items: each item's encoding, in order.
///
/// ```
/// use synopses::codec::Item;
///
/// let mut out = Vec::new();
/// (7_u32, "x".to_string(), 2_u8).encode(&mut out);
/// assert_eq!(<(u32, String, u8)>::decode(&out), Some(((7, "x".to_string(), 2), out.len())));
/// ```
macro_rules! tuple_item {
    ($($t:ident $v:ident),+) => {
        impl<$($t: Item),+> Item for ($($t,)+) {
            fn encode(&self, out: &mut Vec<u8>) {
                let ($($v,)+) = self;
                $( $v.encode(out); )+
            }

            fn decode(bytes: &[u8]) -> Option<(Self, usize)> {
                let mut used = 0;
                $(
                    let ($v, more) = $t::decode(bytes.get(used..)?)?;
                    used += more;
                )+
                Some((($($v,)+), used))
            }

            fn encoded_len(&self) -> usize {
                let ($($v,)+) = self;
                0 $( + $v.encoded_len() )+
            }
        }
    };
}
tuple_item!(A a, B b);
tuple_item!(A a, B b, C c);
tuple_item!(A a, B b, C c, D d);

/// A u32 length, then that many bytes.
fn length_prefixed(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let (len, used) = u32::decode(bytes)?;
    let len = usize::try_from(len).ok()?;
    let body = bytes.get(used..used.checked_add(len)?)?;
    Some((body, used + len))
}

impl Item for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u32).encode(out);
        out.extend_from_slice(self);
    }

    fn decode(bytes: &[u8]) -> Option<(Self, usize)> {
        let (body, used) = length_prefixed(bytes)?;
        Some((body.to_vec(), used))
    }

    fn encoded_len(&self) -> usize {
        4 + self.len()
    }
}

impl Item for String {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u32).encode(out);
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<(Self, usize)> {
        let (body, used) = length_prefixed(bytes)?;
        Some((std::str::from_utf8(body).ok()?.to_owned(), used))
    }

    fn encoded_len(&self) -> usize {
        4 + self.len()
    }
}

/// Builds an encoding: header first, body through the `put_*` methods, checksum in `finish`.
pub(crate) struct Writer {
    buf: Vec<u8>,
    encoded_len: usize,
}

impl Writer {
    /// Starts an encoding of family `family`, in the base [`FORMAT_VERSION`], that will be
    /// `encoded_len` bytes long in all (envelope included): the type's `encoded_len`, checked
    /// in debug builds by `finish`.
    pub(crate) fn new(family: u8, encoded_len: usize) -> Self {
        Self::versioned(family, FORMAT_VERSION, encoded_len)
    }

    /// As [`new`](Self::new), in format version `version` (the type's [`Codec::VERSION`]).
    pub(crate) fn versioned(family: u8, version: u8, encoded_len: usize) -> Self {
        let mut buf = Vec::with_capacity(encoded_len);
        buf.extend_from_slice(&MAGIC);
        buf.push(version);
        buf.push(family);
        Self { buf, encoded_len }
    }

    pub(crate) fn put_u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub(crate) fn put_u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn put_u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn put_f64(&mut self, v: f64) {
        self.put_u64(v.to_bits());
    }

    pub(crate) fn put_item<T: Item>(&mut self, item: &T) {
        item.encode(&mut self.buf);
    }

    /// Appends `v` as an LEB128 varint: seven bits a byte, low first, the top bit set on every
    /// byte but the last ([`varint_len`] bytes).
    pub(crate) fn put_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// Appends bytes as they are (an item already encoded, say).
    pub(crate) fn put_bytes(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Appends `n` zero bytes and returns them, for a caller that fills a block in place.
    pub(crate) fn put_zeroed(&mut self, n: usize) -> &mut [u8] {
        let start = self.buf.len();
        self.buf.resize(start + n, 0);
        &mut self.buf[start..]
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        let sum = hash_bytes(&self.buf, CHECKSUM_SEED);
        self.buf.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(self.buf.len(), self.encoded_len, "a type's encoded_len disagrees with its encoding");
        self.buf
    }
}

/// The bytes [`Writer::put_varint`] takes for `v`.
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a body after [`Reader::open`] (or [`Reader::open_versions`]) has checked the envelope;
/// every read is bounds-checked.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Checks length, magic, family, version (the base [`FORMAT_VERSION`]) and checksum, and
    /// returns a reader over the body.
    pub(crate) fn open(bytes: &'a [u8], family: u8) -> Result<Self, DecodeError> {
        Self::open_versions(bytes, family, FORMAT_VERSION).map(|(reader, _)| reader)
    }

    /// As [`open`](Self::open), for a family that reads every version from the base one up to
    /// `newest`: returns the reader and the version, which says how to read the body.
    pub(crate) fn open_versions(bytes: &'a [u8], family: u8, newest: u8) -> Result<(Self, u8), DecodeError> {
        if bytes.len() < HEADER_LEN + CHECKSUM_LEN {
            return Err(DecodeError::Truncated { needed: HEADER_LEN + CHECKSUM_LEN, available: bytes.len() });
        }
        if bytes[..2] != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        if bytes[3] != family {
            return Err(DecodeError::WrongFamily { expected: family, found: bytes[3] });
        }
        let version = bytes[2];
        if !(FORMAT_VERSION..=newest).contains(&version) {
            return Err(DecodeError::UnsupportedVersion(version));
        }
        let (content, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        let mut stored = [0u8; CHECKSUM_LEN];
        stored.copy_from_slice(sum);
        if hash_bytes(content, CHECKSUM_SEED) != u64::from_le_bytes(stored) {
            return Err(DecodeError::ChecksumMismatch);
        }
        Ok((Self { rest: &content[HEADER_LEN..] }, version))
    }

    /// Takes the next `n` bytes, or reports how many were missing.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.rest.len() {
            return Err(DecodeError::Truncated { needed: n, available: self.rest.len() });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    /// What is left of the body, without taking it: for a reader that learns its length as it
    /// reads (a bit stream), and then [`take`](Self::take)s what it used.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }

    /// An LEB128 varint (see [`Writer::put_varint`]): at most 10 bytes, in its shortest form,
    /// within 64 bits.
    pub(crate) fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0_u64;
        for i in 0..10 {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if i == 9 && bits > 1 {
                return Err(DecodeError::InvalidField { field: "varint", reason: "more than 64 bits" });
            }
            v |= bits << (7 * i);
            if byte & 0x80 == 0 {
                if byte == 0 && i > 0 {
                    return Err(DecodeError::InvalidField { field: "varint", reason: "not in its shortest form" });
                }
                return Ok(v);
            }
        }
        Err(DecodeError::InvalidField { field: "varint", reason: "more than 10 bytes" })
    }

    pub(crate) fn f64(&mut self) -> Result<f64, DecodeError> {
        self.u64().map(f64::from_bits)
    }

    /// Decodes one [`Item`], and returns the bytes it was decoded from too.
    pub(crate) fn item_and_bytes<T: Item>(&mut self) -> Result<(T, &'a [u8]), DecodeError> {
        let (item, used) = T::decode(self.rest)
            .ok_or(DecodeError::InvalidField { field: "item", reason: "not a valid item encoding" })?;
        Ok((item, self.take(used)?))
    }

    /// Checks that a count of `n` items of `item_len` bytes each fits in what is left, before
    /// the caller allocates room for them.
    pub(crate) fn expect_items(&self, n: usize, item_len: usize) -> Result<(), DecodeError> {
        let needed = n.saturating_mul(item_len);
        if needed > self.rest.len() {
            return Err(DecodeError::Truncated { needed, available: self.rest.len() });
        }
        Ok(())
    }

    /// Ends decoding: every byte of the body must have been read.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        if self.rest.is_empty() { Ok(()) } else { Err(DecodeError::TrailingBytes(self.rest.len())) }
    }
}

#[cfg(feature = "serde")]
pub(crate) mod serde_support {
    use std::fmt;

    /// Accepts a byte string, or a sequence of bytes for formats (such as JSON) that have no
    /// byte strings.
    pub(crate) struct BytesVisitor;

    /// The most a sequence's size hint may make us reserve up front; the vector still grows
    /// to whatever the input really holds.
    const MAX_PREALLOCATION: usize = 1 << 16;

    impl<'de> serde::de::Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the bytes of a synopses encoding")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_PREALLOCATION));
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}
