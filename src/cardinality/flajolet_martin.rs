//! Flajolet–Martin probabilistic counting with stochastic averaging (PCSA). The teaching text
//! is in the [family docs](super).

use std::fmt;

use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::{Bounds, Confidence, ConfigError, DecodeError, MergeError, Mergeable, hashed_operator};
use crate::hash::{DEFAULT_SEED, Hashable};

/// Flajolet and Martin's correction constant φ ≈ 0.77351.
const PHI: f64 = 0.773_510_902_223_659_6;
/// Scheuermann and Mauve's small-range correction exponent κ.
const KAPPA: f64 = 1.75;
/// The asymptotic relative standard error of PCSA, times `sqrt(m)`.
const PCSA_RSE: f64 = 0.78;
/// From `PCSA_SETTLED · m` on, PCSA's error is its asymptotic `0.78/√m`.
const PCSA_SETTLED: f64 = 10.0;
/// Between the linear-counting limit and `PCSA_SETTLED · m`, the error measured up to this
/// factor above the asymptotic one (m = 64 to 1024, 2000 trials, `examples/accuracy.rs`).
const PCSA_MID_RANGE_FACTOR: f64 = 1.25;

/// Sets the bit of a hash: the low `log2` bits choose the bitmap, the number of trailing zeros
/// of the rest (at most 31) the bit.
#[inline]
fn set_bit(bitmaps: &mut [u32], log2: u8, hash: u64) {
    let index = (hash & (bitmaps.len() as u64).wrapping_sub(1)) as usize;
    let bit = (hash >> log2).trailing_zeros().min(31);
    if let Some(bitmap) = bitmaps.get_mut(index) {
        *bitmap |= 1 << bit;
    }
}

/// Linear counting's relative standard error at `n` items in `m` buckets (Whang et al. 1990).
pub(crate) fn linear_counting_rse(m: f64, n: f64) -> f64 {
    let t = n / m;
    (m * (t.exp() - t - 1.0)).sqrt() / n
}

/// A Flajolet–Martin (PCSA) distinct counter: `m` bitmaps of 32 bits. See the
/// [family docs](super).
///
/// The classic teaching baseline: simple and exactly mergeable, but [`HyperLogLog`](super::HyperLogLog)
/// reaches the same error in about 0.3 (one stream) to 0.45 (merged) of the memory.
///
/// ```
/// use synopses::cardinality::FlajoletMartin;
///
/// let mut fm = FlajoletMartin::new(256)?; // 1 KiB, standard error about 4.9 %
/// (0..100_000_u64).for_each(|i| fm.observe(i));
/// assert!((fm.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.049);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct FlajoletMartin {
    bitmaps: Box<[u32]>,
    log2_bitmaps: u8,
    seed: u64,
}

impl FlajoletMartin {
    /// The fewest bitmaps a sketch may have.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// assert!(FlajoletMartin::new(FlajoletMartin::MIN_BITMAPS).is_ok());
    /// assert!(FlajoletMartin::new(FlajoletMartin::MIN_BITMAPS - 1).is_err());
    /// ```
    pub const MIN_BITMAPS: usize = 1;

    /// The most bitmaps a sketch may have (256 KiB of bitmaps).
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// assert!(FlajoletMartin::new(FlajoletMartin::MAX_BITMAPS).is_ok());
    /// assert!(FlajoletMartin::new(2 * FlajoletMartin::MAX_BITMAPS).is_err());
    /// ```
    pub const MAX_BITMAPS: usize = 1 << 16;

    /// A sketch of `bitmaps` bitmaps (a power of two in `1..=65536`) with the
    /// [default seed](DEFAULT_SEED). It takes `4 · bitmaps` bytes; its relative standard error
    /// is about `0.78 / sqrt(bitmaps)` once the count is well above `bitmaps`.
    ///
    /// | bitmaps | bytes | standard error |
    /// |---|---|---|
    /// | 64 | 256 | 9.8 % |
    /// | 256 | 1 KiB | 4.9 % |
    /// | 1 024 | 4 KiB | 2.4 % |
    /// | 4 096 | 16 KiB | 1.2 % |
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// assert_eq!(FlajoletMartin::new(1024)?.bitmaps(), 1024);
    /// assert!(FlajoletMartin::new(1000).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(bitmaps: usize) -> Result<Self, ConfigError> {
        Self::with_seed(bitmaps, DEFAULT_SEED)
    }

    /// A sketch of `bitmaps` bitmaps hashing with `seed`.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// assert_eq!(FlajoletMartin::with_seed(64, 9)?.seed(), 9);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(bitmaps: usize, seed: u64) -> Result<Self, ConfigError> {
        if !bitmaps.is_power_of_two() || bitmaps > Self::MAX_BITMAPS {
            return Err(ConfigError::new("bitmaps", bitmaps, "a power of two in 1..=65536"));
        }
        Ok(Self { bitmaps: vec![0; bitmaps].into_boxed_slice(), log2_bitmaps: bitmaps.trailing_zeros() as u8, seed })
    }

    /// The number of bitmaps `m`.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// assert_eq!(FlajoletMartin::new(64)?.bitmaps(), 64);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn bitmaps(&self) -> usize {
        self.bitmaps.len()
    }

    /// The hash seed.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// assert_eq!(FlajoletMartin::with_seed(64, 1)?.seed(), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Observes one item.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let mut fm = FlajoletMartin::new(64)?;
    /// fm.observe("a");
    /// fm.observe(7_u32);
    /// assert_ne!(fm, FlajoletMartin::new(64)?);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe<T: Hashable>(&mut self, item: T) {
        self.observe_hash(item.hash64(self.seed));
    }

    /// Observes an item by its 64-bit hash (see
    /// [`HyperLogLog::observe_hash`](super::HyperLogLog::observe_hash)).
    ///
    /// The low `log2 m` bits choose the bitmap; in the rest, the number of trailing zeros `r`
    /// (at most 31) chooses the bit set, which happens with probability `2^-(r+1)`.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let mut fm = FlajoletMartin::new(1)?;
    /// fm.observe_hash(0b1000); // one bitmap: 3 trailing zeros set bit 3
    /// assert_eq!(fm.bitmap(0), Some(0b1000));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    pub fn observe_hash(&mut self, hash: u64) {
        set_bit(&mut self.bitmaps, self.log2_bitmaps, hash);
    }

    /// Observes every item of an iterator: the same state as [`observe`](Self::observe) on
    /// each, with the sketch's state in locals for the whole loop.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let mut batch = FlajoletMartin::new(64)?;
    /// batch.observe_all(["a", "b", "c"]);
    /// let mut one_by_one = FlajoletMartin::new(64)?;
    /// ["a", "b", "c"].into_iter().for_each(|s| one_by_one.observe(s));
    /// assert_eq!(batch, one_by_one);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_all<T: Hashable, I: IntoIterator<Item = T>>(&mut self, items: I) {
        let (seed, log2) = (self.seed, self.log2_bitmaps);
        let bitmaps = &mut self.bitmaps[..];
        for item in items {
            set_bit(bitmaps, log2, item.hash64(seed));
        }
    }

    /// Bitmap `i`, for teaching and inspection; `None` past the last one.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let fm = FlajoletMartin::new(4)?;
    /// assert_eq!((fm.bitmap(3), fm.bitmap(4)), (Some(0), None));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn bitmap(&self, i: usize) -> Option<u32> {
        self.bitmaps.get(i).copied()
    }

    /// The estimated number of distinct items.
    ///
    /// In the large range this is PCSA's `m/φ · (2^R̄ − 2^(−κ·R̄))`, where `R̄` is the mean
    /// over bitmaps of the position of the lowest unset bit; the second term (κ = 1.75) is
    /// Scheuermann and Mauve's correction, which removes most of the bias between `3m` and
    /// `10m`. Below that many bitmaps are still empty and PCSA is biased, so while linear
    /// counting over the bitmaps, `ln(V/m) / ln(1 − 1/m) ≈ m · ln(m/V)` with `V` empty bitmaps,
    /// answers at most [`LINEAR_COUNTING_LIMIT`](Self::LINEAR_COUNTING_LIMIT)` · m`, the
    /// sketch answers with it. Measured error (`examples/accuracy.rs`, 2000 trials): linear
    /// counting's formula up to `3m`; up to 1.25 × `0.78/√m`, with a bias of up to −1.5 %,
    /// between `3m` and `10m`; and `0.78/√m`, unbiased, above. PCSA's answer is raised to the number of set bits, each of which took
    /// a distinct item: alone, it can answer 0 for a tiny sketch that has seen items.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let mut fm = FlajoletMartin::new(64)?;
    /// assert_eq!(fm.estimate(), 0.0);
    /// (0..50_000_u64).for_each(|i| fm.observe(i));
    /// assert!((fm.estimate() / 50_000.0 - 1.0).abs() < 4.0 * 0.098);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn estimate(&self) -> f64 {
        self.linear_count().unwrap_or_else(|| self.pcsa_estimate().max(f64::from(self.set_bits())))
    }

    /// The number of set bits: every item sets one bit, so at least this many were distinct.
    fn set_bits(&self) -> u32 {
        self.bitmaps.iter().map(|b| b.count_ones()).sum()
    }

    /// Where the estimate switches from linear counting to PCSA, as a multiple of `m`.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let mut fm = FlajoletMartin::new(1024)?;
    /// (0..1000_u64).for_each(|i| fm.observe(i)); // about m items: linear counting answers
    /// let empty = (0..1024).filter(|&i| fm.bitmap(i) == Some(0)).count() as f64;
    /// let linear = (empty / 1024.0).ln() / (-1.0_f64 / 1024.0).ln_1p();
    /// assert!(linear < FlajoletMartin::LINEAR_COUNTING_LIMIT * 1024.0);
    /// assert_eq!(fm.estimate(), linear);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub const LINEAR_COUNTING_LIMIT: f64 = 3.0;

    /// PCSA's estimate with the small-range correction, whatever the range.
    fn pcsa_estimate(&self) -> f64 {
        let m = self.bitmaps.len() as f64;
        let total: u32 = self.bitmaps.iter().map(|b| b.trailing_ones()).sum();
        let mean = f64::from(total) / m;
        m / PHI * (mean.exp2() - (-KAPPA * mean).exp2())
    }

    /// The linear-counting estimate, if it is at most the switch point: the `n` at which the
    /// expected number of empty bitmaps, `m (1 − 1/m)^n`, equals the observed `V`. (The usual
    /// `m ln(m/V)` approximates it, and overestimates one item as `1 + 1/(2m)`.)
    fn linear_count(&self) -> Option<f64> {
        let m = self.bitmaps.len() as f64;
        let empty = self.bitmaps.iter().filter(|&&b| b == 0).count() as f64;
        if empty == m {
            return Some(0.0);
        }
        if empty == 0.0 {
            return None;
        }
        let n = (empty / m).ln() / (-1.0 / m).ln_1p();
        (n <= Self::LINEAR_COUNTING_LIMIT * m).then_some(n)
    }

    /// The relative standard error of the estimate: `0.78 / sqrt(m)` in the PCSA range from
    /// `10m` on, 1.25 times that between `3m` and `10m` (measured: PCSA's bias is not quite
    /// gone there), and linear counting's `sqrt(m · (e^t − t − 1)) / n` with `t = n/m` below
    /// `3m` (Whang et al. 1990), evaluated at the estimate.
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let mut fm = FlajoletMartin::new(64)?;
    /// (0..100_000_u64).for_each(|i| fm.observe(i));
    /// assert_eq!(fm.relative_standard_error(), 0.78 / 8.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn relative_standard_error(&self) -> f64 {
        let m = self.bitmaps.len() as f64;
        match self.linear_count() {
            Some(n) if n > 0.0 => linear_counting_rse(m, n),
            Some(_) => 0.0,
            None if self.pcsa_estimate() < PCSA_SETTLED * m => PCSA_MID_RANGE_FACTOR * PCSA_RSE / m.sqrt(),
            None => PCSA_RSE / m.sqrt(),
        }
    }

    /// A confidence interval `estimate · (1 ± z · relative_standard_error)`, its lower end
    /// raised to the number of set bits (each took a distinct item).
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    /// use synopses::core::Confidence;
    ///
    /// let mut fm = FlajoletMartin::new(1024)?;
    /// (0..100_000_u64).for_each(|i| fm.observe(i));
    /// assert!(fm.bounds(Confidence::ThreeSigma).contains(100_000.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn bounds(&self, confidence: Confidence) -> Bounds {
        Bounds::relative(self.estimate(), self.relative_standard_error(), confidence, f64::from(self.set_bits()))
    }

    /// Bytes of memory the sketch holds (the struct and its bitmaps).
    ///
    /// ```
    /// # use synopses::cardinality::FlajoletMartin;
    /// let fm = FlajoletMartin::new(256)?;
    /// assert_eq!(fm.size_in_bytes(), std::mem::size_of::<FlajoletMartin>() + 4 * 256);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + 4 * self.bitmaps.len()
    }

    /// Merges `other` into `self` by OR-ing the bitmaps: exactly the sketch of both streams.
    /// The number of bitmaps and the seed must match; otherwise `self` is unchanged and a
    /// [`MergeError`] is returned. To combine sketches with different numbers of bitmaps, use
    /// [`merge_reducing`](Self::merge_reducing).
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let mut a = FlajoletMartin::new(64)?;
    /// let mut b = FlajoletMartin::new(64)?;
    /// let mut both = FlajoletMartin::new(64)?;
    /// (0..1000_u64).for_each(|i| { a.observe(i); both.observe(i) });
    /// (500..3000_u64).for_each(|i| { b.observe(i); both.observe(i) });
    /// a.merge(&b)?;
    /// assert_eq!(a, both);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("bitmaps", self.bitmaps.len(), other.bitmaps.len())?;
        MergeError::check("seed", self.seed, other.seed)?;
        for (a, &b) in self.bitmaps.iter_mut().zip(other.bitmaps.iter()) {
            *a |= b;
        }
        Ok(())
    }

    /// Merges `other` into `self` at the smaller of the two numbers of bitmaps: whichever
    /// sketch has more is first [reduced](Self::reduce) to the other's, exactly, then the two
    /// merge as [`merge`](Self::merge) does. Afterwards `self` is the sketch with that many
    /// bitmaps that observed both streams, with its standard error, `0.78 / sqrt(m)` for the
    /// smaller `m`. The seeds must match; otherwise a [`MergeError`] is returned and `self` is
    /// unchanged.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let mut a = FlajoletMartin::new(256)?;
    /// let mut b = FlajoletMartin::new(64)?;
    /// (0..60_000_u64).for_each(|i| a.observe(i));
    /// (40_000..100_000_u64).for_each(|i| b.observe(i));
    /// assert!(a.merge(&b).is_err()); // a plain merge refuses another size
    /// a.merge_reducing(&b)?;
    /// assert_eq!(a.bitmaps(), 64);
    /// assert!((a.estimate() / 100_000.0 - 1.0).abs() < 4.0 * 0.098);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merge_reducing(&mut self, other: &Self) -> Result<(), MergeError> {
        MergeError::check("seed", self.seed, other.seed)?;
        if other.log2_bitmaps > self.log2_bitmaps {
            return self.merge(&other.reduced(self.log2_bitmaps));
        }
        if self.log2_bitmaps > other.log2_bitmaps {
            *self = self.reduced(other.log2_bitmaps);
        }
        self.merge(other)
    }

    /// This sketch with fewer bitmaps: exactly the sketch of `bitmaps` bitmaps (a power of
    /// two, at most the sketch's own number) that observed the same items.
    ///
    /// An item's hash chooses its bitmap by its low bits and its bit by the trailing zeros of
    /// the rest. With fewer bitmaps, fewer low bits choose the bitmap, and the bits no longer
    /// needed there become the lowest bits of the rest: an item of a bitmap whose dropped
    /// index bits are all zero sets the same bit as before, that many places higher (at most
    /// bit 31, as in [`observe_hash`](Self::observe_hash)); any other sets the bit of the
    /// trailing zeros of its dropped index bits. Either way what the bitmap holds decides it.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let mut fine = FlajoletMartin::new(1024)?;
    /// let mut coarse = FlajoletMartin::new(64)?;
    /// (0..50_000_u64).for_each(|i| { fine.observe(i); coarse.observe(i) });
    /// assert_eq!(fine.reduce(64)?, coarse);
    /// assert!(fine.reduce(2048).is_err() && fine.reduce(100).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn reduce(&self, bitmaps: usize) -> Result<Self, ConfigError> {
        if !bitmaps.is_power_of_two() || bitmaps > self.bitmaps.len() {
            return Err(ConfigError::new(
                "bitmaps",
                bitmaps,
                "a power of two from 1 to the sketch's number of bitmaps",
            ));
        }
        Ok(self.reduced(bitmaps.trailing_zeros() as u8))
    }

    /// [`reduce`](Self::reduce) to `2^log2` bitmaps, at most the sketch's own number.
    fn reduced(&self, log2: u8) -> Self {
        let shift = u32::from(self.log2_bitmaps - log2);
        let mut out = vec![0u32; 1 << log2].into_boxed_slice();
        let mask = (1usize << log2) - 1;
        for (i, &bitmap) in self.bitmaps.iter().enumerate().filter(|&(_, &b)| b != 0) {
            let dropped = (i >> log2) as u32;
            out[i & mask] |= if dropped != 0 {
                1 << dropped.trailing_zeros()
            } else {
                // Bit k moves to k + shift; those that would pass bit 31 stop there.
                bitmap << shift | u32::from(bitmap >> (31 - shift) != 0) << 31
            };
        }
        Self { bitmaps: out, log2_bitmaps: log2, seed: self.seed }
    }

    /// The length of [`to_bytes`](Self::to_bytes)'s output, computed without encoding it.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let mut x = FlajoletMartin::new(64)?;
    /// x.observe("a");
    /// assert_eq!(x.encoded_len(), x.to_bytes().len());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 9 + 4 * self.bitmaps.len()
    }

    /// Encodes the sketch in the crate's [binary format](crate::codec), family code 1.
    /// Body: log2 of the number of bitmaps (u8), seed (u64), the bitmaps (u32 each).
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let fm = FlajoletMartin::new(64)?;
    /// assert_eq!(fm.to_bytes().len(), 4 + 9 + 4 * 64 + 8);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(Self::FAMILY, self.encoded_len());
        w.put_u8(self.log2_bitmaps);
        w.put_u64(self.seed);
        self.bitmaps.iter().for_each(|&b| w.put_u32(b));
        w.finish()
    }

    /// Decodes a sketch written by [`to_bytes`](Self::to_bytes), validating every field.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    ///
    /// let mut fm = FlajoletMartin::new(64)?;
    /// fm.observe("a");
    /// assert_eq!(FlajoletMartin::from_bytes(&fm.to_bytes())?, fm);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::open(bytes, Self::FAMILY)?;
        let log2 = r.u8()?;
        let seed = r.u64()?;
        if usize::from(log2) > Self::MAX_BITMAPS.trailing_zeros() as usize {
            return Err(DecodeError::InvalidField { field: "bitmaps", reason: "more than 65536 bitmaps" });
        }
        r.expect_items(1 << log2, 4)?;
        let mut fm = Self::with_seed(1 << log2, seed)
            .map_err(|_| DecodeError::InvalidField { field: "bitmaps", reason: "not a power of two in 1..=65536" })?;
        for b in fm.bitmaps.iter_mut() {
            *b = r.u32()?;
        }
        r.finish()?;
        Ok(fm)
    }
}

impl fmt::Debug for FlajoletMartin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlajoletMartin")
            .field("bitmaps", &self.bitmaps.len())
            .field("seed", &self.seed)
            .field("estimate", &self.estimate())
            .finish()
    }
}

hashed_operator!(FlajoletMartin);

impl Mergeable for FlajoletMartin {
    fn size_in_bytes(&self) -> usize {
        FlajoletMartin::size_in_bytes(self)
    }

    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        FlajoletMartin::merge(self, other)
    }

    fn empty_like(&self) -> Self {
        Self {
            bitmaps: vec![0; self.bitmaps.len()].into_boxed_slice(),
            log2_bitmaps: self.log2_bitmaps,
            seed: self.seed,
        }
    }
}

codec_impl!(FlajoletMartin, 1);
