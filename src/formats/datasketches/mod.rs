//! Apache DataSketches' HLL sketch: its images, its updates, its union and its estimates.
//!
//! # The idea
//!
//! [Apache DataSketches](https://datasketches.apache.org/) (Java, C++, Python, Rust; inside
//! Druid, Spark, Hive and BigQuery exports) keeps distinct counts in its own HyperLogLog, and
//! stores it as an *image*: a few bytes of preamble and the sketch. [`DataSketchesHll`] reads
//! every such image, updates the sketch as DataSketches does (the same hash of the same
//! encodings of integers, doubles, strings and bytes, the same register), merges as
//! DataSketches' union does, gives DataSketches' estimate and bounds, and writes images that
//! DataSketches reads back. A sketch updated here merges with one updated by Java, C++ or
//! Python exactly as two of theirs would.
//!
//! # How it works
//!
//! An item becomes a *coupon*: MurmurHash3 x64 128 (seed 9001) of its bytes gives two 64-bit
//! halves; the low 26 bits of the first are the coupon's address, and one plus the leading
//! zeros of the second (at most 63) its value.
//!
//! ```text
//!   (h1, h2) = MurmurHash3_x64_128(bytes, 9001)
//!   coupon   = (min(leading_zeros(h2), 62) + 1) << 26  |  h1 & (2^26 − 1)
//! ```
//!
//! The sketch has `k = 2^lg_k` registers (`lg_k` from 4 to 21), and lives in one of three modes:
//!
//! - **list**: up to 7 coupons, in arrival order;
//! - **set**: a hash table of coupons (from `lg_k` = 8 on), while it holds at most
//!   `3/4 · k/8` of them;
//! - **HLL**: the registers: register `address mod k` keeps the largest value it was given.
//!
//! A list or set is exact up to collisions of 32-bit coupons; it turns into registers when it
//! would take more room than they do. The *target type* is the width of a register in the
//! image: `HLL_8` a byte each, `HLL_6` six bits, `HLL_4` four bits above the smallest register
//! with the rare larger values in an exception table. The three hold the same registers and
//! give the same estimates; only their images differ (here the registers are always bytes).
//!
//! The bytes of an item are DataSketches' canonical encodings, so that Java, C++ and Python
//! agree (see [`DataSketchesItem`]):
//!
//! | item | bytes hashed |
//! |---|---|
//! | `i64`, `i32`, `i16`, `i8` | the value as an `i64`, little-endian |
//! | `u64` | its 8 bytes (the `i64` of the same bits) |
//! | `u32`, `u16`, `u8` | the same-width signed value as an `i64` (`u32::MAX` hashes as `-1`) |
//! | `f64`, `f32` | the `f64`'s bits, with `-0.0` as `0.0` and every NaN as `0x7ff8000000000000` |
//! | `&str`, `String` | its UTF-8 bytes; an empty string is no item |
//! | `&[u8]`, `Vec<u8>` | the bytes; an empty array is no item |
//!
//! Java skips an empty byte array, as every port skips an empty string; DataSketches C++ alone
//! counts an empty `update(data, 0)` as an item (this crate follows Java there).
//!
//! What is compatible, then: every image of serial version 1 (every DataSketches release since
//! its HLL sketch took its present form), every `lg_k` from 4 to 21, the three types, both
//! forms; the items above, hashed as Java, C++ and Python hash them. What is not: an item of
//! another type hashed through its own bytes will not meet DataSketches' hash of that type
//! (encode it first as one of the above); and datasketches-rust 0.6 updates through Rust's
//! `Hash`, whose bytes for a `&str` carry a terminator, so its sketches of strings hold other
//! coupons than Java's, C++'s, Python's and this crate's (its integer sketches agree).
//!
//! # The estimates
//!
//! - **List and set**: the number of coupons, corrected for their collisions through
//!   DataSketches' measured map (cubic interpolation over 40 points). The bounds use a
//!   relative standard error of `0.409/2^13 ≈ 0.005 %` and never fall below the number of
//!   coupons.
//! - **HLL, one stream**: the HIP estimator (historic inverse probability; Cohen 2015, Ting
//!   2014): every register change adds `k / Σ_j 2^−r_j` to an accumulator kept in the sketch.
//!   Its relative standard error is `√(ln 2 / k) ≈ 0.833/√k`.
//! - **HLL after a union**: the accumulator means nothing for a union of streams, so the sketch
//!   is marked *out of order* and answers with the *composite* estimator: the raw HyperLogLog
//!   estimate `α_k k² / Σ 2^−r_j` corrected through DataSketches' table for `lg_k`, or linear
//!   counting of the zero registers where that is better (small cardinalities). Its relative
//!   standard error is `√((3 ln 2 − 1)/k) ≈ 1.04/√k`.
//!
//! In HLL mode the bounds at 1, 2 or 3 standard deviations come from DataSketches' measured
//! relative errors up to `lg_k` = 12, and from `sd · factor/√k` above, as DataSketches computes
//! them. Every number here is computed in DataSketches' order of floating-point operations: on
//! the same state, the estimates and bounds are DataSketches' own (the tests compare them on
//! images made by the Python package).
//!
//! # Merging
//!
//! [`DataSketchesHll::union`] is DataSketches' union with its `lg_max_k`: list and set coupons
//! are inserted one by one, registers are merged by their maximum (folding a larger sketch's
//! registers onto `2^lg_k` of them, `address mod k`), and the result takes the smallest `lg_k`
//! of its HLL-mode parts and `lg_max_k`. [`Mergeable::merge`] is that union of two sketches
//! with `lg_max_k` the smaller of their `lg_k`, in the receiver's target type, so any two
//! sketches merge. The registers or coupons of a merge are those of the union of the
//! streams, whatever the order and grouping; a merge of two HLL-mode sketches answers with the
//! composite estimator, as DataSketches' does.
//!
//! Two details of DataSketches' union, kept and not kept:
//!
//! - When a list or set meets an HLL-mode part of larger `lg_k`, DataSketches folds the part's
//!   registers and adds the coupons to its HIP accumulator before it recomputes the folded
//!   registers' sums, as if they were empty (each changed register adds 1). The union here
//!   does the same, so that the numbers agree (the fixture `union_7`).
//! - DataSketches C++ 5.2 (the Python package's core) drops the first HLL-mode part of a union
//!   whose `lg_max_k` is below that part's `lg_k` when a second HLL-mode part follows with no
//!   estimate asked in between (its emptiness test reads counts it has not rebuilt yet). That
//!   loses data: the union here keeps both parts (the fixture `union_3` shows the
//!   difference).
//!
//! # Conversions
//!
//! [`to_hyperloglog`](DataSketchesHll::to_hyperloglog) and
//! [`from_hyperloglog`](DataSketchesHll::from_hyperloglog) move the registers to and from the
//! crate's [`HyperLogLog`] of the same precision. The crate's sketch puts its register index in
//! the top bits of a 64-bit hash and its rank in the trailing zeros of the rest;
//! [`hyperloglog_hash`] builds that hash from DataSketches' coupon, and the converted sketch
//! carries the seed [`HYPERLOGLOG_SEED`] so that it never merges with sketches of the crate's
//! own hash (whose registers hold other items).
//!
//! # When not to use it
//!
//! When the sketches never meet DataSketches. The crate's own distinct-count sketches plug into
//! the rest of the crate (its SQL functions, windows, checkpoints and partitioned operators),
//! hash faster (seeded xxh3 against MurmurHash3 128), and keep less error after a merge per
//! byte ([`UltraLogLog`](crate::cardinality::UltraLogLog)'s `0.76/√m` in `m` bytes, against
//! the composite estimator's `1.04/√k` in HLL_4's `k/2`, `0.74/√(bytes)`, plus exceptions and a
//! preamble). Within one stream DataSketches' HIP on HLL_4 is as compact as anything here
//! (`0.83/√k` in `k/2` bytes).
//!
//! # Papers
//!
//! - Flajolet, Fusy, Gandouet, Meunier. *HyperLogLog: the analysis of a near-optimal
//!   cardinality estimation algorithm.* AofA 2007.
//! - Heule, Nunkesser, Hall. *HyperLogLog in practice: algorithmic engineering of a state of
//!   the art cardinality estimation algorithm.* EDBT 2013 (the sparse list and the
//!   small-range correction that DataSketches' coupons and composite estimator refine).
//! - Cohen. *All-distances sketches, revisited: HIP estimators for massive graphs analysis.*
//!   IEEE TKDE 2015. Ting. *Streamed approximate counting of distinct elements: beating
//!   optimal batch methods.* KDD 2014.
//! - Apache DataSketches, *HLL Sketch* (datasketches.apache.org, the sketch's documentation:
//!   modes, types, the composite estimator and its error).
//!
//! # Examples
//!
//! **From DataSketches.** An image the `datasketches` Python package wrote for the integers
//! 0 to 2 999 (`sketch.serialize_compact()`; one of the crate's test fixtures): read here, it
//! answers with Python's own number, and the sketch of the same items built here writes the
//! same bytes.
//!
//! ```
//! use synopses::formats::{DataSketchesHll, HllType};
//!
//! let from_python: &[u8] = include_bytes!(concat!(
//!     env!("CARGO_MANIFEST_DIR"),
//!     "/tests/fixtures/datasketches/ints_k12_HLL_4_3000.compact.bin"
//! ));
//! let read = DataSketchesHll::from_bytes(from_python)?;
//! assert_eq!(read.estimate(), 2991.259717855133); // Python's `get_estimate()`, to the bit
//!
//! let mut here = DataSketchesHll::new(12, HllType::Hll4)?;
//! (0..3_000_i64).for_each(|i| here.update(i));
//! assert_eq!(here.to_bytes(), from_python);
//! # Ok::<(), synopses::Error>(())
//! ```
//!
//! **To DataSketches.** Bytes written here are what DataSketches reads: Java's
//! `HllSketch.heapify(bytes)`, C++'s `hll_sketch::deserialize`, Python's
//! `datasketches.hll_sketch.deserialize(bytes)`, which then keeps updating the sketch and
//! merges it in its unions. A union here across `lg_k` and types, as DataSketches' does:
//!
//! ```
//! use synopses::core::Mergeable;
//! use synopses::formats::{DataSketchesHll, HllType};
//!
//! let mut ours = DataSketchesHll::new(12, HllType::Hll4)?;
//! (0..20_000_i64).for_each(|i| ours.update(i));
//! let image = ours.to_bytes(); // for `hll_sketch.deserialize(image)` in Python
//! assert_eq!(DataSketchesHll::from_bytes(&image)?, ours);
//!
//! let mut other = DataSketchesHll::new(10, HllType::Hll8)?;
//! (0..5_000).for_each(|i| other.update(format!("user-{i}")));
//! ours.merge(&other)?; // DataSketches' union: lg_k 10, the composite estimator
//! assert_eq!(ours.lg_k(), 10);
//! assert!(ours.is_out_of_order());
//! // The composite estimator's relative standard error at lg_k = 10: 1.04/√1024 = 3.3 %.
//! assert!((ours.estimate() - 25_000.0).abs() < 3.0 * 0.033 * 25_000.0);
//! # Ok::<(), synopses::Error>(())
//! ```

mod estimate;
mod image;
mod tables;

use crate::cardinality::HyperLogLog;
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, Operator};

/// The seed of DataSketches' hash.
const SEED: u32 = 9001;
/// Bits of a coupon's address.
const KEY_BITS: u32 = 26;
const KEY_MASK: u32 = (1 << KEY_BITS) - 1;
/// The largest HIP accumulator: 2^100. A sketch's own never passes 2^90 (each of at most 63·k
/// register changes adds at most 2^63, `k` over the least sum `k · 2^−63`), and below this the
/// bounds (the estimate over 1 − ε) stay finite.
const HIP_MAX: f64 = 1_267_650_600_228_229_401_496_703_205_376.0;
/// Coupons a list holds before it turns into a set (or registers).
const LIST_CAPACITY: usize = 8;
/// The first size of a set's table (log₂).
const LG_SET_START: u8 = 5;

/// The seed a [`HyperLogLog`] converted from a [`DataSketchesHll`] carries: its registers hold
/// DataSketches' hash of the items ([`hyperloglog_hash`]), not the crate's.
pub const HYPERLOGLOG_SEED: u64 = u64::from_le_bytes(*b"DSketchH");

/// The width of a register in an image (the sketch's "target HLL type"); the sketch and its
/// estimates are the same for the three.
///
/// ```
/// use synopses::formats::{DataSketchesHll, HllType};
///
/// let sketch = DataSketchesHll::new(11, HllType::Hll6)?;
/// assert_eq!(sketch.target_type(), HllType::Hll6);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HllType {
    /// Four bits a register, above the smallest one, with an exception table: `k/2` bytes.
    Hll4,
    /// Six bits a register: `3k/4` bytes.
    Hll6,
    /// A byte a register: `k` bytes.
    Hll8,
}

/// The mode a sketch is in (see the [module docs](self)).
///
/// ```
/// use synopses::formats::{DataSketchesHll, HllType, HllMode};
///
/// let mut sketch = DataSketchesHll::new(12, HllType::Hll8)?;
/// assert_eq!(sketch.mode(), HllMode::List);
/// (0..100_i64).for_each(|i| sketch.update(i));
/// assert_eq!(sketch.mode(), HllMode::Set);
/// (0..1_000_i64).for_each(|i| sketch.update(i));
/// assert_eq!(sketch.mode(), HllMode::Hll);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HllMode {
    /// Up to 7 coupons, in arrival order.
    List,
    /// A hash table of coupons.
    Set,
    /// `k` registers.
    Hll,
}

/// An item DataSketches hashes: integers, floats, strings and byte arrays, each by its
/// canonical encoding (the table in the [module docs](self)).
///
/// ```
/// use synopses::formats::DataSketchesItem;
///
/// // Integers of every width hash as the i64 of the same value.
/// assert_eq!(7_u8.coupon(), 7_i64.coupon());
/// assert_eq!(u32::MAX.coupon(), (-1_i64).coupon());
/// // A string hashes as its bytes; an empty one is no item.
/// assert_eq!("ab".coupon(), b"ab".as_slice().coupon());
/// assert_eq!("".coupon(), None);
/// ```
pub trait DataSketchesItem {
    /// The item's coupon: its 26-bit address and, above it, its value from 1 to 63; `None`
    /// for what DataSketches skips (an empty string or byte array).
    fn coupon(&self) -> Option<u32>;
}

/// The coupon of `bytes` (DataSketches' hash, the module docs' formula).
fn coupon_of(bytes: &[u8]) -> u32 {
    let (h1, h2) = mur3::murmurhash3_x64_128(bytes, SEED);
    let value = h2.leading_zeros().min(62) + 1;
    value << KEY_BITS | (h1 as u32 & KEY_MASK)
}

/// The coupon of an 8-byte item (an integer's or a double's bits): MurmurHash3 x64 128 of its
/// 8 little-endian bytes, specialized. For 8 bytes the hash is its tail step and its
/// finalization, a few multiplies, which inline here; measured over 10⁶ words, 3.8 ms against
/// 4.6 ms through the `mur3` crate's general function (about a tenth of an update). A test
/// checks it against `mur3`.
#[inline]
fn coupon_of_word(word: u64) -> u32 {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let fmix = |mut k: u64| {
        k ^= k >> 33;
        k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
        k ^= k >> 33;
        k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        k ^ k >> 33
    };
    let (mut h1, mut h2) = (u64::from(SEED), u64::from(SEED));
    h1 ^= word.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
    h1 ^= 8;
    h2 ^= 8;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    let value = h2.leading_zeros().min(62) + 1;
    value << KEY_BITS | (h1 as u32 & KEY_MASK)
}

impl DataSketchesItem for i64 {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        Some(coupon_of_word(*self as u64))
    }
}

macro_rules! as_i64 {
    ($($t:ty => $via:ty),*) => {$(
        impl DataSketchesItem for $t {
            #[inline]
    fn coupon(&self) -> Option<u32> {
                // DataSketches casts an unsigned value to the signed type of its width first.
                i64::from(*self as $via).coupon()
            }
        }
    )*};
}
as_i64!(i32 => i32, i16 => i16, i8 => i8, u64 => i64, u32 => i32, u16 => i16, u8 => i8);

impl DataSketchesItem for f64 {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        let bits = if *self == 0.0 {
            0
        } else if self.is_nan() {
            0x7ff8_0000_0000_0000
        } else {
            self.to_bits()
        };
        Some(coupon_of_word(bits))
    }
}

impl DataSketchesItem for f32 {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        f64::from(*self).coupon()
    }
}

impl DataSketchesItem for [u8] {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        (!self.is_empty()).then(|| coupon_of(self))
    }
}

impl DataSketchesItem for str {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        self.as_bytes().coupon()
    }
}

impl DataSketchesItem for String {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        self.as_bytes().coupon()
    }
}

impl DataSketchesItem for Vec<u8> {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        self.as_slice().coupon()
    }
}

impl<T: DataSketchesItem + ?Sized> DataSketchesItem for &T {
    #[inline]
    fn coupon(&self) -> Option<u32> {
        (**self).coupon()
    }
}

/// The hash under which a [`HyperLogLog`] of precision `lg_k` and seed [`HYPERLOGLOG_SEED`]
/// takes an item (through [`HyperLogLog::observe_hash`]) into the register DataSketches gives
/// it: the coupon's address at the top, its value in the trailing zeros of the rest. `None`
/// for what DataSketches skips.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::formats::datasketches::{self, DataSketchesHll, HllType};
///
/// let mut hll = HyperLogLog::with_seed(12, datasketches::HYPERLOGLOG_SEED)?;
/// let mut sketch = DataSketchesHll::new(12, HllType::Hll8)?;
/// for i in 0..5_000_i64 {
///     hll.observe_hash(datasketches::hyperloglog_hash(&i, 12).ok_or("no item")?);
///     sketch.update(i);
/// }
/// // The same registers: the two convert back to the same DataSketches sketch.
/// let back = |h| DataSketchesHll::from_hyperloglog(h, HllType::Hll8);
/// assert_eq!(back(&hll)?, back(&sketch.to_hyperloglog()?)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn hyperloglog_hash<T: DataSketchesItem + ?Sized>(item: &T, lg_k: u8) -> Option<u64> {
    let coupon = item.coupon()?;
    let p = u32::from(lg_k.clamp(1, 26));
    let address = u64::from(coupon & KEY_MASK) & ((1 << p) - 1);
    let value = coupon >> KEY_BITS;
    // The rest of the hash: `value − 1` trailing zeros, then a one (the rank is capped where
    // the rest runs out, as DataSketches caps its value at 63).
    let rest = if value <= 64 - p { 1_u64 << (value - 1) } else { 0 };
    Some(address << (64 - p) | rest)
}

/// The registers of an HLL-mode sketch and its estimators' state.
#[derive(Debug, Clone, PartialEq)]
struct Registers {
    /// One byte a register, whatever the target type.
    values: Vec<u8>,
    /// The HIP accumulator (kept, though meaningless, once out of order: images carry it).
    hip: f64,
    /// `Σ 2^−r` over the registers below 32 and from 32 on, updated as DataSketches does.
    kxq0: f64,
    kxq1: f64,
    /// After a union: the composite estimator answers.
    out_of_order: bool,
}

impl Registers {
    fn new(lg_k: u8) -> Self {
        let k = 1_usize << lg_k;
        Self { values: vec![0; k], hip: 0.0, kxq0: k as f64, kxq1: 0.0, out_of_order: false }
    }

    fn lg_k(&self) -> u8 {
        self.values.len().trailing_zeros() as u8
    }

    /// Takes a coupon: the register keeps the larger value, and HIP and `kxq` follow the
    /// change (HIP before `kxq`, subtracting before adding: DataSketches' order). Returns
    /// whether the register changed.
    #[inline]
    fn update(&mut self, coupon: u32) -> bool {
        let k = self.values.len();
        let slot = (coupon & KEY_MASK) as usize & (k - 1);
        let value = (coupon >> KEY_BITS) as u8;
        let old = self.values[slot];
        if value <= old {
            return false;
        }
        if !self.out_of_order {
            // Never above HIP_MAX (reached only from an image's HIP near it), so that what an
            // update makes, the decoder reads.
            self.hip = (self.hip + k as f64 / self.kxq()).min(HIP_MAX);
        }
        if old < 32 {
            self.kxq0 -= estimate::inverse_power_of_two(old);
        } else {
            self.kxq1 -= estimate::inverse_power_of_two(old);
        }
        if value < 32 {
            self.kxq0 += estimate::inverse_power_of_two(value);
        } else {
            self.kxq1 += estimate::inverse_power_of_two(value);
        }
        self.values[slot] = value;
        if !sums_in_range(self.kxq0, self.kxq1, k) {
            // Sums read from an image that disagree with its registers, driven out of range:
            // the registers' own sums instead. A sketch's own sums never get here.
            self.replay();
        }
        true
    }

    /// `kxq` recomputed from the registers, as DataSketches does when it copies a sketch into
    /// another type or after a union: each non-zero register, in order, replayed onto an empty
    /// sketch. HIP and the order flag stay.
    fn replay(&mut self) {
        let (mut kxq0, mut kxq1) = (self.values.len() as f64, 0.0);
        for &v in self.values.iter().filter(|&&v| v != 0) {
            kxq0 -= 1.0;
            if v < 32 {
                kxq0 += estimate::inverse_power_of_two(v);
            } else {
                kxq1 += estimate::inverse_power_of_two(v);
            }
        }
        (self.kxq0, self.kxq1) = (kxq0, kxq1);
    }

    fn zeros(&self) -> u32 {
        count_equal(&self.values, 0)
    }

    /// `Σ 2^−r`: at least `k · 2^−63` (see [`sums_in_range`]), so the estimates are finite.
    fn kxq(&self) -> f64 {
        self.kxq0 + self.kxq1
    }

    /// A copy of these registers (of a sketch of type `target`) as an HLL_8 union gadget of at
    /// most `2^lg_k` registers, as DataSketches copies them: folded if larger, with `kxq`
    /// replayed where DataSketches recomputes it (a fold, another type); HIP and the order flag
    /// are kept.
    fn folded_copy(&self, target: HllType, lg_k: u8) -> Registers {
        let mut copy = self.clone();
        if self.lg_k() > lg_k {
            copy.values = self.downsampled(lg_k);
            copy.replay();
        } else if target != HllType::Hll8 {
            copy.replay();
        }
        copy
    }

    /// These registers folded onto `2^lg_k` of them (`lg_k` at most theirs): the maximum of
    /// the registers of each residue.
    fn downsampled(&self, lg_k: u8) -> Vec<u8> {
        let mut out = vec![0_u8; 1 << lg_k];
        for chunk in self.values.chunks(out.len()) {
            out.iter_mut().zip(chunk).for_each(|(o, &v)| *o = (*o).max(v));
        }
        out
    }
}

/// Whether `kxq0` and `kxq1` are sums of `2^−r` that `k` registers of at most 63 can have: each
/// from 0 to `k`, their total from `k · 2^−63` to `k`. The decoder refuses other sums, and an
/// update that leads elsewhere recomputes them.
fn sums_in_range(kxq0: f64, kxq1: f64, k: usize) -> bool {
    let k = k as f64;
    (0.0..=k).contains(&kxq0)
        && (0.0..=k).contains(&kxq1)
        && (k * estimate::inverse_power_of_two(63)..=k).contains(&(kxq0 + kxq1))
}

/// How many of `values` equal `x`: a byte counter a run of 255 (which cannot overflow), a
/// fold the compiler vectorizes (measured 100 ns for 4 096 registers, against 400 ns counting
/// in `u32` and 1.5 µs with `filter().count()`).
fn count_equal(values: &[u8], x: u8) -> u32 {
    values.chunks(255).map(|run| u32::from(run.iter().fold(0_u8, |n, &v| n.wrapping_add(u8::from(v == x))))).sum()
}

/// The smallest and largest of `values` (folds, vectorized; `Iterator::min` is not).
fn min_max(values: &[u8]) -> (u8, u8) {
    (values.iter().fold(u8::MAX, |m, &v| m.min(v)), values.iter().fold(0, |m, &v| m.max(v)))
}

/// What a sketch holds.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Coupons in arrival order (fewer than [`LIST_CAPACITY`]).
    List(Vec<u32>),
    /// DataSketches' open-addressing table: `2^lg` slots, 0 for empty.
    Set {
        slots: Vec<u32>,
        count: usize,
    },
    Hll(Box<Registers>),
}

/// Where `coupon` is in a set's table, or the empty slot where it would go: DataSketches'
/// probe (start at the address's low bits, step by the rest of the address, made odd).
/// The table always has an empty slot (at most three quarters full), and an odd step visits
/// every slot, so the loop ends.
fn set_find(slots: &[u32], coupon: u32) -> Result<usize, usize> {
    let lg = slots.len().trailing_zeros();
    let mask = slots.len() - 1;
    let mut probe = coupon as usize & mask;
    let stride = ((coupon & KEY_MASK) >> lg) as usize | 1;
    for _ in 0..slots.len() {
        match slots[probe] {
            0 => return Err(probe),
            c if c == coupon => return Ok(probe),
            _ => probe = (probe + stride) & mask,
        }
    }
    unreachable!("a set's table always has an empty slot")
}

/// A set's table of `2^lg` slots holding `coupons`, inserted in order.
fn set_of(lg: u8, coupons: impl IntoIterator<Item = u32>) -> (Vec<u32>, usize) {
    let mut slots = vec![0_u32; 1 << lg];
    let mut count = 0;
    for c in coupons {
        if let Err(at) = set_find(&slots, c) {
            slots[at] = c;
            count += 1;
        }
    }
    (slots, count)
}

/// A DataSketches HLL sketch (see the [module docs](self)).
///
/// ```
/// use synopses::formats::{DataSketchesHll, HllType};
///
/// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
/// for user in ["ann", "bob", "ann"] {
///     sketch.update(user);
/// }
/// assert_eq!(sketch.estimate().round(), 2.0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DataSketchesHll {
    lg_k: u8,
    target: HllType,
    state: State,
}

impl DataSketchesHll {
    /// The smallest `lg_k` DataSketches allows.
    pub const MIN_LG_K: u8 = 4;
    /// The largest `lg_k` DataSketches allows.
    pub const MAX_LG_K: u8 = 21;

    /// An empty sketch of `2^lg_k` registers, written in images as `target`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `lg_k` outside 4 to 21.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// assert!(DataSketchesHll::new(12, HllType::Hll4).is_ok());
    /// assert_eq!(DataSketchesHll::new(22, HllType::Hll4).unwrap_err().parameter(), "lg_k");
    /// ```
    pub fn new(lg_k: u8, target: HllType) -> Result<Self, ConfigError> {
        Self::check_lg_k(lg_k)?;
        Ok(Self { lg_k, target, state: State::List(Vec::new()) })
    }

    fn check_lg_k(lg_k: u8) -> Result<(), ConfigError> {
        if (Self::MIN_LG_K..=Self::MAX_LG_K).contains(&lg_k) {
            Ok(())
        } else {
            Err(ConfigError::new("lg_k", lg_k, "from 4 to 21, as DataSketches allows"))
        }
    }

    /// Updates the sketch with an item, hashed as DataSketches hashes it.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(8, HllType::Hll8)?;
    /// sketch.update(42_i64);
    /// sketch.update(42_u8); // the same integer: the same item
    /// sketch.update(2.5_f64);
    /// sketch.update("text");
    /// sketch.update(&b"bytes"[..]);
    /// assert_eq!(sketch.estimate().round(), 4.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn update<T: DataSketchesItem>(&mut self, item: T) {
        if let Some(coupon) = item.coupon() {
            // Registers, the mode of a long stream, without the call of a mode change.
            if let State::Hll(registers) = &mut self.state {
                registers.update(coupon);
            } else {
                self.update_coupon(coupon);
            }
        }
    }

    /// Takes a coupon, switching modes as DataSketches does: a list of 8 becomes a set (or
    /// registers below `lg_k` = 8); a set more than three quarters full doubles, or becomes
    /// registers once it would reach `k/8` slots. Registers start with HIP at the coupon
    /// estimate of what they replace.
    fn update_coupon(&mut self, coupon: u32) {
        match &mut self.state {
            State::List(list) => {
                if list.contains(&coupon) {
                    return;
                }
                list.push(coupon);
                if list.len() == LIST_CAPACITY {
                    let list = std::mem::take(list);
                    self.state = if self.lg_k < 8 {
                        Self::promoted(self.lg_k, &list, list.len())
                    } else {
                        let (slots, count) = set_of(LG_SET_START, list);
                        State::Set { slots, count }
                    };
                }
            }
            State::Set { slots, count } => {
                let Err(at) = set_find(slots, coupon) else { return };
                slots[at] = coupon;
                *count += 1;
                if 4 * *count > 3 * slots.len() {
                    let lg = slots.len().trailing_zeros() as u8;
                    let coupons: Vec<u32> = slots.iter().copied().filter(|&c| c != 0).collect();
                    self.state = if lg + 3 == self.lg_k {
                        Self::promoted(self.lg_k, &coupons, *count)
                    } else {
                        let (slots, count) = set_of(lg + 1, coupons);
                        State::Set { slots, count }
                    };
                }
            }
            State::Hll(registers) => {
                registers.update(coupon);
            }
        }
    }

    /// Registers holding `coupons` (in their order), HIP at the coupon estimate of `count`.
    fn promoted(lg_k: u8, coupons: &[u32], count: usize) -> State {
        let mut registers = Registers::new(lg_k);
        coupons.iter().for_each(|&c| {
            registers.update(c);
        });
        registers.hip = estimate::coupon_estimate(count);
        State::Hll(Box::new(registers))
    }

    /// `log₂` of the number of registers.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// assert_eq!(DataSketchesHll::new(14, HllType::Hll8)?.lg_k(), 14);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn lg_k(&self) -> u8 {
        self.lg_k
    }

    /// The register width of the sketch's images.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// assert_eq!(DataSketchesHll::new(14, HllType::Hll4)?.target_type(), HllType::Hll4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn target_type(&self) -> HllType {
        self.target
    }

    /// The sketch's mode.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType, HllMode};
    ///
    /// assert_eq!(DataSketchesHll::new(14, HllType::Hll4)?.mode(), HllMode::List);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn mode(&self) -> HllMode {
        match self.state {
            State::List(_) => HllMode::List,
            State::Set { .. } => HllMode::Set,
            State::Hll(_) => HllMode::Hll,
        }
    }

    /// Whether the sketch has seen no item.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(14, HllType::Hll4)?;
    /// assert!(sketch.is_empty());
    /// sketch.update("");
    /// assert!(sketch.is_empty()); // DataSketches skips an empty string
    /// sketch.update("x");
    /// assert!(!sketch.is_empty());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        match &self.state {
            State::List(list) => list.is_empty(),
            State::Set { count, .. } => *count == 0,
            State::Hll(r) => r.values.iter().all(|&v| v == 0),
        }
    }

    /// Whether the sketch answers with the composite estimator: it holds a union of HLL-mode
    /// sketches, for which HIP's accumulator means nothing.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut a = DataSketchesHll::new(8, HllType::Hll8)?;
    /// (0..1_000_i64).for_each(|i| a.update(i));
    /// assert!(!a.is_out_of_order());
    /// a.merge(&a.clone())?;
    /// assert!(a.is_out_of_order());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn is_out_of_order(&self) -> bool {
        matches!(&self.state, State::Hll(r) if r.out_of_order)
    }

    /// The number of coupons of a list or a set (`None` in HLL mode).
    fn coupon_count(&self) -> Option<usize> {
        match &self.state {
            State::List(list) => Some(list.len()),
            State::Set { count, .. } => Some(*count),
            State::Hll(_) => None,
        }
    }

    /// The estimated number of distinct items: DataSketches' estimate (the coupon estimator,
    /// HIP, or the composite estimator; see the [module docs](self)).
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
    /// (0..100_000_i64).for_each(|i| sketch.update(i));
    /// // HIP's relative standard error at lg_k = 12: 0.833/√4096 = 1.3 %.
    /// assert!((sketch.estimate() / 100_000.0 - 1.0).abs() < 3.0 * 0.013);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn estimate(&self) -> f64 {
        match &self.state {
            State::Hll(r) if !r.out_of_order => r.hip,
            _ => self.composite_estimate(),
        }
    }

    /// The composite estimator (in list and set mode, the coupon estimator): the estimate of a
    /// sketch out of order, and DataSketches' `get_composite_estimate` of any sketch.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll8)?;
    /// (0..100_000_i64).for_each(|i| sketch.update(i));
    /// // Its relative standard error at lg_k = 12: 1.04/√4096 = 1.6 %.
    /// assert!((sketch.composite_estimate() / 100_000.0 - 1.0).abs() < 3.0 * 0.016);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn composite_estimate(&self) -> f64 {
        match &self.state {
            State::Hll(r) => estimate::composite_estimate(self.lg_k, r.kxq(), r.zeros()),
            _ => estimate::coupon_estimate(self.coupon_count().unwrap_or(0)),
        }
    }

    /// DataSketches' lower bound at `sd` standard deviations (1, 2 or 3).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `sd` outside 1 to 3.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
    /// (0..50_000_i64).for_each(|i| sketch.update(i));
    /// assert!(sketch.lower_bound(2)? <= sketch.estimate());
    /// assert!(sketch.lower_bound(3)? <= sketch.lower_bound(2)?);
    /// assert!(sketch.lower_bound(4).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn lower_bound(&self, sd: u8) -> Result<f64, ConfigError> {
        self.bound(sd, false)
    }

    /// DataSketches' upper bound at `sd` standard deviations (1, 2 or 3).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `sd` outside 1 to 3.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
    /// (0..50_000_i64).for_each(|i| sketch.update(i));
    /// assert!(sketch.upper_bound(2)? >= sketch.estimate());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn upper_bound(&self, sd: u8) -> Result<f64, ConfigError> {
        self.bound(sd, true)
    }

    fn bound(&self, sd: u8, upper: bool) -> Result<f64, ConfigError> {
        if !(1..=3).contains(&sd) {
            return Err(ConfigError::new("sd", sd, "1, 2 or 3 standard deviations"));
        }
        Ok(match &self.state {
            State::Hll(r) => {
                let relative = estimate::relative_error(self.lg_k, sd, upper, r.out_of_order);
                let bound = self.estimate() / (1.0 + relative);
                if upper { bound } else { bound.max(f64::from((1_u32 << self.lg_k) - r.zeros())) }
            }
            _ => estimate::coupon_bound(self.coupon_count().unwrap_or(0), sd, upper),
        })
    }

    /// The same sketch, written as `target` from now on. DataSketches recomputes `Σ 2^−r` in
    /// such a copy (the estimates move by rounding at most); so does this.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll8)?;
    /// (0..100_000_i64).for_each(|i| sketch.update(i));
    /// let small = sketch.clone().with_target_type(HllType::Hll4);
    /// assert!(small.to_bytes().len() < sketch.to_bytes().len() / 2 + 100);
    /// assert_eq!(small.estimate(), sketch.estimate());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_target_type(mut self, target: HllType) -> Self {
        if target != self.target {
            if let State::Hll(r) = &mut self.state {
                r.replay();
            }
            self.target = target;
        }
        self
    }

    /// DataSketches' union of `parts` with its `lg_max_k`, as `target`: the registers (or
    /// coupons) of the union of their streams, at the smallest `lg_k` among `lg_max_k` and the
    /// HLL-mode parts (see the [module docs](self)).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `lg_k` if `lg_max_k` is outside 4 to 21.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType, HllMode};
    ///
    /// let mut a = DataSketchesHll::new(12, HllType::Hll4)?;
    /// let mut b = DataSketchesHll::new(10, HllType::Hll6)?;
    /// (0..50_000_i64).for_each(|i| a.update(i));
    /// (25_000..75_000_i64).for_each(|i| b.update(i));
    /// let union = DataSketchesHll::union(12, [&a, &b], HllType::Hll8)?;
    /// assert_eq!((union.lg_k(), union.mode()), (10, HllMode::Hll));
    /// // The composite estimator at lg_k = 10: 1.04/√1024 = 3.2 %.
    /// assert!((union.estimate() / 75_000.0 - 1.0).abs() < 3.0 * 0.033);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn union<'a>(
        lg_max_k: u8,
        parts: impl IntoIterator<Item = &'a DataSketchesHll>,
        target: HllType,
    ) -> Result<Self, ConfigError> {
        let mut gadget = Self::new(lg_max_k, HllType::Hll8)?;
        // Whether the gadget's `kxq` comes from a merge of registers (DataSketches then
        // recomputes it in the result).
        let mut merged = false;
        for part in parts {
            merged |= gadget.absorb(lg_max_k, part);
        }
        if let State::Hll(r) = &mut gadget.state
            && (merged || target != HllType::Hll8)
        {
            r.replay();
        }
        gadget.target = target;
        Ok(gadget)
    }

    /// One step of DataSketches' union: `src` into this gadget (target HLL_8). Returns whether
    /// registers were merged.
    fn absorb(&mut self, lg_max_k: u8, src: &DataSketchesHll) -> bool {
        if src.is_empty() {
            return false;
        }
        match &src.state {
            State::List(_) | State::Set { .. } => {
                if self.is_empty() && src.lg_k == self.lg_k {
                    *self = Self { target: HllType::Hll8, ..src.clone() };
                } else {
                    src.coupons().for_each(|c| self.update_coupon(c));
                }
                false
            }
            State::Hll(theirs) => {
                if self.is_empty() {
                    *self = Self::gadget(theirs.folded_copy(src.target, lg_max_k));
                    return false;
                }
                if let State::Hll(ours) = &mut self.state {
                    // Both registers: the finer folded onto the coarser, then their maximum.
                    if theirs.lg_k() < ours.lg_k() {
                        **ours = ours.folded_copy(HllType::Hll8, theirs.lg_k());
                        self.lg_k = ours.lg_k();
                    }
                    let folded = theirs.downsampled(ours.lg_k());
                    ours.values.iter_mut().zip(folded).for_each(|(o, t)| *o = (*o).max(t));
                    ours.replay();
                    ours.out_of_order = true;
                    ours.hip = 0.0;
                    return true;
                }
                // A list or set gadget: their registers, then our coupons. Folded registers have
                // their sums recomputed only at the end: DataSketches adds the coupons to HIP
                // against the sums of empty registers meanwhile.
                let coupons: Vec<u32> = self.coupons().collect();
                let mut registers = theirs.folded_copy(src.target, lg_max_k);
                let folded = src.lg_k > lg_max_k;
                if folded {
                    (registers.kxq0, registers.kxq1) = (registers.values.len() as f64, 0.0);
                }
                *self = Self::gadget(registers);
                coupons.into_iter().for_each(|c| self.update_coupon(c));
                folded
            }
        }
    }

    /// A union's gadget (target HLL_8) holding `registers`.
    fn gadget(registers: Registers) -> Self {
        Self { lg_k: registers.lg_k(), target: HllType::Hll8, state: State::Hll(Box::new(registers)) }
    }

    /// The coupons of a list (in order) or a set (in slot order), or of registers (address and
    /// value of each non-zero register).
    fn coupons(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match &self.state {
            State::List(list) => Box::new(list.iter().copied()),
            State::Set { slots, .. } => Box::new(slots.iter().copied().filter(|&c| c != 0)),
            State::Hll(r) => Box::new(
                r.values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| **v != 0)
                    .map(|(i, &v)| u32::from(v) << KEY_BITS | i as u32),
            ),
        }
    }

    /// Reads a DataSketches HLL image, compact or updatable, in any mode and type.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] for bytes that are not a valid image: truncated, another family or
    /// version, an `lg_k` outside 4 to 21, counts that disagree with the coupons, a register
    /// above 63, estimator fields that are not finite and positive. Never a panic, and no
    /// allocation larger than the image implies.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(10, HllType::Hll6)?;
    /// (0..3_000_i64).for_each(|i| sketch.update(i));
    /// assert_eq!(DataSketchesHll::from_bytes(&sketch.to_bytes())?, sketch);
    /// assert!(DataSketchesHll::from_bytes(&[2, 1, 7]).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        image::decode(bytes)
    }

    /// The compact image (DataSketches' `serialize_compact`, Java's `toCompactByteArray`): the
    /// coupons or registers and nothing else.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
    /// assert_eq!(sketch.to_bytes().len(), 8); // the empty sketch: a preamble
    /// (0..100_000_i64).for_each(|i| sketch.update(i));
    /// assert_eq!(sketch.to_bytes().len(), 40 + 2048 + 4 * 1); // 4 bits a register, one exception
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        image::encode(self, true)
    }

    /// The updatable image (DataSketches' `serialize_updatable`, Java's
    /// `toUpdatableByteArray`): the tables with their empty slots, which DataSketches can
    /// update in place.
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let sketch = DataSketchesHll::new(12, HllType::Hll8)?;
    /// assert_eq!(sketch.to_updatable_bytes().len(), 8 + 4 * 8); // a list's 8 slots
    /// assert_eq!(DataSketchesHll::from_bytes(&sketch.to_updatable_bytes())?, sketch);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn to_updatable_bytes(&self) -> Vec<u8> {
        image::encode(self, false)
    }

    /// The crate's [`HyperLogLog`] with this sketch's registers (a list or set first turned
    /// into registers), of precision `lg_k` and seed [`HYPERLOGLOG_SEED`]. It keeps counting
    /// DataSketches' items through [`hyperloglog_hash`], and merges with other conversions.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `lg_k` above 18 (the crate's largest precision), or `register`
    /// for a value above `65 − lg_k`, the largest rank of a 64-bit hash at that precision (an
    /// item with more than `64 − lg_k` leading zeros in its hash; about one in 2^44 at
    /// `lg_k` = 20).
    ///
    /// ```
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
    /// (0..100_000_i64).for_each(|i| sketch.update(i));
    /// let hll = sketch.to_hyperloglog()?;
    /// assert_eq!(hll.precision(), 12);
    /// assert!((hll.estimate() / 100_000.0 - 1.0).abs() < 3.0 * 1.04 / 64.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn to_hyperloglog(&self) -> Result<HyperLogLog, ConfigError> {
        if self.lg_k > HyperLogLog::MAX_PRECISION {
            return Err(ConfigError::new(
                "lg_k",
                self.lg_k,
                "at most 18, the largest precision of the crate's HyperLogLog",
            ));
        }
        let mut registers = vec![0_u8; 1 << self.lg_k];
        for c in self.coupons() {
            let slot = (c & KEY_MASK) as usize & (registers.len() - 1);
            registers[slot] = registers[slot].max((c >> KEY_BITS) as u8);
        }
        let largest = 65 - self.lg_k;
        if let Some(&r) = registers.iter().find(|&&r| r > largest) {
            return Err(ConfigError::new("register", r, "at most 65 − lg_k, the largest rank of a 64-bit hash"));
        }
        Ok(HyperLogLog::from_registers(self.lg_k, HYPERLOGLOG_SEED, registers))
    }

    /// The HLL-mode sketch with the registers of `hll`, if they are DataSketches' (seed
    /// [`HYPERLOGLOG_SEED`]; a sketch from [`to_hyperloglog`](Self::to_hyperloglog) or fed
    /// [`hyperloglog_hash`]es), written as `target`. Its history is unknown, so it answers
    /// with the composite estimator, as a union would.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `seed` for a sketch of another hash (its registers hold other
    /// items), or `precision` below 4.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll4)?;
    /// (0..100_000_i64).for_each(|i| sketch.update(i));
    /// let back = DataSketchesHll::from_hyperloglog(&sketch.to_hyperloglog()?, HllType::Hll4)?;
    /// assert_eq!(back.composite_estimate(), sketch.composite_estimate());
    ///
    /// let own = HyperLogLog::new(12)?; // the crate's own hash
    /// assert_eq!(DataSketchesHll::from_hyperloglog(&own, HllType::Hll4).unwrap_err().parameter(), "seed");
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn from_hyperloglog(hll: &HyperLogLog, target: HllType) -> Result<Self, ConfigError> {
        if hll.seed() != HYPERLOGLOG_SEED {
            return Err(ConfigError::new(
                "seed",
                hll.seed(),
                "formats::datasketches::HYPERLOGLOG_SEED: a sketch of DataSketches' hash (another hash puts items elsewhere)",
            ));
        }
        Self::check_lg_k(hll.precision())
            .map_err(|_| ConfigError::new("precision", hll.precision(), "from 4 to 21"))?;
        let mut registers = Registers::new(hll.precision());
        registers.values = hll.dense_registers();
        if registers.values.iter().all(|&v| v == 0) {
            return Self::new(hll.precision(), target);
        }
        registers.replay();
        registers.out_of_order = true;
        Ok(Self { lg_k: hll.precision(), target, state: State::Hll(Box::new(registers)) })
    }
}

impl Mergeable for DataSketchesHll {
    /// DataSketches' union of the two, with `lg_max_k` the smaller `lg_k`, in this sketch's
    /// target type. Any two sketches merge.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let (mut a, mut b) = (DataSketchesHll::new(11, HllType::Hll4)?, DataSketchesHll::new(11, HllType::Hll8)?);
    /// (0..6_000_i64).for_each(|i| a.update(i));
    /// (3_000..9_000_i64).for_each(|i| b.update(i));
    /// a.merge(&b)?;
    /// assert!((a.estimate() / 9_000.0 - 1.0).abs() < 3.0 * 1.04 / 45.0);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        let lg_max_k = self.lg_k.min(other.lg_k);
        let merged =
            Self::union(lg_max_k, [&*self, other], self.target).map_err(|e| MergeError::new("lg_k", self.lg_k, e))?;
        *self = merged;
        Ok(())
    }

    /// An empty sketch of the same `lg_k` and target type.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut a = DataSketchesHll::new(11, HllType::Hll4)?;
    /// a.update("x");
    /// assert!(a.empty_like().is_empty());
    /// assert_eq!(a.empty_like().lg_k(), 11);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn empty_like(&self) -> Self {
        Self { lg_k: self.lg_k, target: self.target, state: State::List(Vec::new()) }
    }

    fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + match &self.state {
                State::List(list) => list.capacity() * 4,
                State::Set { slots, .. } => slots.len() * 4,
                State::Hll(r) => std::mem::size_of::<Registers>() + r.values.len(),
            }
    }
}

impl<T: DataSketchesItem> Operator<T> for DataSketchesHll {
    /// [`update`](DataSketchesHll::update).
    ///
    /// ```
    /// use synopses::core::Operator;
    /// use synopses::formats::{DataSketchesHll, HllType};
    ///
    /// let mut sketch = DataSketchesHll::new(12, HllType::Hll8)?;
    /// sketch.observe_all(["a", "b", "a"]);
    /// assert_eq!(sketch.estimate().round(), 2.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn observe(&mut self, item: T) {
        self.update(item);
    }
}

#[cfg(test)]
mod tests;
