//! Redis's HyperLogLog: the string value behind `PFADD`, `PFCOUNT` and `PFMERGE`.
//!
//! # The idea
//!
//! Redis keeps a HyperLogLog as an ordinary string, so `GET key` hands out the whole sketch
//! and `SET key bytes` installs one. [`RedisHyperLogLog`] reads and writes that string, updates
//! it as `PFADD` does (the same hash of an element's bytes, the same register), counts as
//! `PFCOUNT` does (the same number) and merges as `PFMERGE` does (the registers' maximum). A
//! sketch built here and `SET` into Redis answers `PFCOUNT` and merges with `PFMERGE` exactly as
//! one built there; one read from Redis keeps counting here.
//!
//! # How it works
//!
//! Redis's sketch has `m = 2^14 = 16 384` registers. An element's bytes hash to 64 bits by
//! MurmurHash64A with seed `0xadc83b19`; the low 14 bits pick the register, and the register
//! keeps the largest *rank* seen, one plus the trailing zeros of the other 50 bits (at most 51):
//!
//! ```text
//!   hash = MurmurHash64A(bytes, 0xadc83b19)
//!   register = hash & 16383          rank = trailing_zeros((hash >> 14) | 1 << 50) + 1
//! ```
//!
//! The string is a 16-byte header and the registers, in one of two encodings:
//!
//! ```text
//!   header : "HYLL" | encoding: 0 dense, 1 sparse | 3 unused bytes | cached count: 8 bytes
//!   dense  : 16 384 registers of 6 bits, little-endian bit order (12 288 bytes)
//!   sparse : opcodes, run lengths of registers that add up to 16 384:
//!            00xxxxxx           ZERO:  xxxxxx + 1 registers (1..64) at 0
//!            01xxxxxx yyyyyyyy  XZERO: xxxxxxyyyyyyyy + 1 registers (1..16 384) at 0
//!            1vvvvvxx           VAL:   xx + 1 registers (1..4) at vvvvv + 1 (1..32)
//! ```
//!
//! The cached count is little-endian, and its top bit set means "stale". A string written
//! here always says stale, so Redis computes the count itself the first time it is asked.
//! [`to_bytes`](RedisHyperLogLog::to_bytes) writes the sparse form while every register is at
//! most 32 and it takes at most 3 000 bytes (Redis's default `hll-sparse-max-bytes`), the
//! dense one otherwise, as Redis would.
//!
//! `PFCOUNT` is Ertl's improved estimator (2017) from the registers' histogram `C_k`, with
//! `q = 50`, evaluated here in Redis's order of floating-point operations so that the number
//! is the same:
//!
//! ```text
//!   z = m·τ((m − C_51)/m);   for k = 50..1: z = (z + C_k)/2;   z += m·σ(C_0/m)
//!   count = round(α_∞ · m² / z),   α_∞ = 1/(2 ln 2)
//! ```
//!
//! # The error
//!
//! HyperLogLog with `m = 16 384` registers: a relative standard error of `1.04/√m ≈ 0.81 %`,
//! at every cardinality (the estimator has no range where it switches method). About 95 %
//! of counts fall within `±1.6 %` of the truth.
//!
//! # Merging
//!
//! Two sketches merge by the maximum of each register, as `PFMERGE` does: exactly the sketch
//! of the union of their elements, whichever order and grouping (the laws the crate checks
//! for every mergeable type). Every Redis HyperLogLog has the same configuration, so a merge
//! never fails. It does not merge with the crate's own sketches, whose registers come from
//! another hash.
//!
//! # The crate's HyperLogLog
//!
//! The crate's [`HyperLogLog`] at precision 14 can hold Redis's registers exactly: it reads
//! the register index from the top of a hash and the rank from the trailing zeros of the rest,
//! so Redis's hash rotated right by 14 bits ([`hyperloglog_hash`]) lands where Redis puts it.
//! [`to_hyperloglog`](RedisHyperLogLog::to_hyperloglog) and
//! [`from_hyperloglog`](RedisHyperLogLog::from_hyperloglog) convert both ways; the converted
//! sketch carries the seed [`HYPERLOGLOG_SEED`], so that it refuses to merge with sketches of
//! the crate's own hash, and a sketch of another seed or precision refuses to convert.
//!
//! # When not to use it
//!
//! For sketches that never meet Redis, [`UltraLogLog`](crate::cardinality::UltraLogLog) holds
//! the same error in 8 KiB (Redis's dense form takes 12 KiB), or less error in the same space,
//! and is exact while small.
//!
//! # References
//!
//! - Redis, `src/hyperloglog.c` (the format, the hash and the estimator), and the commands
//!   `PFADD`, `PFCOUNT`, `PFMERGE`.
//! - O. Ertl, "New cardinality estimation algorithms for HyperLogLog sketches", 2017.
//! - P. Flajolet, É. Fusy, O. Gandouet, F. Meunier, "HyperLogLog: the analysis of a
//!   near-optimal cardinality estimation algorithm", AofA 2007.

use crate::cardinality::HyperLogLog;
use crate::cardinality::estimators::{ALPHA_INF, sigma, tau};
use crate::cardinality::hyperloglog::{pack_six_bit_registers, unpack_six_bit_registers};
use crate::cardinality::register_sums::histogram;
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, Operator};

/// Registers: `2^P`.
const P: u32 = 14;
/// Registers of every Redis HyperLogLog.
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash above the register index: the largest rank is `Q + 1`.
const Q: u32 = 64 - P;
/// The seed of Redis's MurmurHash64A.
const SEED: u64 = 0xadc8_3b19;
/// The header: magic, encoding, 3 unused bytes, the cached count.
const HEADER: usize = 16;
/// Bytes of the dense registers.
const DENSE_REGISTERS: usize = REGISTERS * 6 / 8;
/// The largest value a sparse `VAL` opcode holds.
const SPARSE_MAX_VALUE: u8 = 32;
/// Redis's default `hll-sparse-max-bytes`: a longer sparse string turns dense.
const SPARSE_MAX_BYTES: usize = 3_000;
/// The cached count's stale flag: the top bit of its last byte.
const STALE: u8 = 0x80;

/// Redis's hash of an element: MurmurHash64A of its bytes with seed `0xadc83b19`.
///
/// ```
/// use synopses::formats::redis;
///
/// // PFADD hashes the bytes it is given: the string "42", not the integer.
/// assert_ne!(redis::hash(b"42"), redis::hash(&42_u64.to_le_bytes()));
/// assert_eq!(redis::hash(b"a"), redis::hash("a".as_bytes()));
/// ```
#[must_use]
pub fn hash(element: &[u8]) -> u64 {
    murmur2::murmur64a(element, SEED)
}

/// The seed that marks a [`HyperLogLog`] holding Redis's registers
/// ([`RedisHyperLogLog::to_hyperloglog`]): the bytes `RedisHLL`. A sketch of the crate's own
/// hash has another seed, so a merge of the two fails with an error naming the seed instead of
/// mixing registers of two hashes.
pub const HYPERLOGLOG_SEED: u64 = u64::from_le_bytes(*b"RedisHLL");

/// The hash under which a [`HyperLogLog`] of seed [`HYPERLOGLOG_SEED`] and precision 14 takes
/// an element (through [`HyperLogLog::observe_hash`]): Redis's [`hash`] rotated right by 14
/// bits, which moves Redis's register index (its low 14 bits) to the top, where the crate's
/// HyperLogLog reads it, and leaves Redis's rank in the trailing zeros of the rest.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::formats::{redis, RedisHyperLogLog};
///
/// let mut hll = HyperLogLog::with_seed(14, redis::HYPERLOGLOG_SEED)?;
/// let mut ours = RedisHyperLogLog::new();
/// for e in ["a", "b", "c"] {
///     hll.observe_hash(redis::hyperloglog_hash(e.as_bytes()));
///     ours.observe(e);
/// }
/// assert_eq!(RedisHyperLogLog::from_hyperloglog(&hll)?, ours);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[must_use]
pub fn hyperloglog_hash(element: &[u8]) -> u64 {
    hash(element).rotate_right(P)
}

/// A Redis HyperLogLog (see the [module docs](self)).
///
/// ```
/// use synopses::formats::RedisHyperLogLog;
///
/// let mut hll = RedisHyperLogLog::new();
/// for user in ["ann", "bob", "ann", "cid"] {
///     hll.observe(user);
/// }
/// assert_eq!(hll.count(), 3);
///
/// // The string Redis stores: `SET key <bytes>`, then `PFCOUNT key` answers 3.
/// let bytes = hll.to_bytes();
/// assert_eq!(&bytes[..4], b"HYLL");
/// assert_eq!(RedisHyperLogLog::from_bytes(&bytes)?, hll);
/// # Ok::<(), synopses::DecodeError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisHyperLogLog {
    /// One byte per register, each at most 63 (6 bits).
    registers: Box<[u8; REGISTERS]>,
}

impl Default for RedisHyperLogLog {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for RedisHyperLogLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.registers.iter().filter(|&&r| r != 0).count();
        f.debug_struct("RedisHyperLogLog").field("nonzero_registers", &set).field("count", &self.count()).finish()
    }
}

impl RedisHyperLogLog {
    /// An empty sketch, as `PFADD` creates.
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// assert_eq!(RedisHyperLogLog::new().count(), 0);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self { registers: Box::new([0; REGISTERS]) }
    }

    /// Adds an element, as `PFADD key element` does: its bytes are hashed, so a string and
    /// the same UTF-8 bytes are the same element (Redis sees only bytes; an integer sent by a
    /// client is the string of its digits). Returns whether a register changed (`PFADD`'s
    /// reply of 1).
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut hll = RedisHyperLogLog::new();
    /// assert!(hll.observe("a"));
    /// assert!(!hll.observe(b"a"));
    /// hll.observe(42.to_string());
    /// assert_eq!(hll.count(), 2);
    /// ```
    pub fn observe(&mut self, element: impl AsRef<[u8]>) -> bool {
        self.observe_hash(hash(element.as_ref()))
    }

    /// Adds an element by its [`hash`]. Returns whether a register changed.
    ///
    /// ```
    /// use synopses::formats::{redis, RedisHyperLogLog};
    ///
    /// let (mut by_hash, mut by_bytes) = (RedisHyperLogLog::new(), RedisHyperLogLog::new());
    /// by_hash.observe_hash(redis::hash(b"x"));
    /// by_bytes.observe(b"x");
    /// assert_eq!(by_hash, by_bytes);
    /// ```
    pub fn observe_hash(&mut self, hash: u64) -> bool {
        let index = (hash & (REGISTERS as u64 - 1)) as usize;
        let rank = (((hash >> P) | 1 << Q).trailing_zeros() + 1) as u8;
        match self.registers.get_mut(index) {
            Some(register) if *register < rank => {
                *register = rank;
                true
            }
            _ => false,
        }
    }

    /// The estimated number of distinct elements: what `PFCOUNT` answers for these registers.
    /// (A dense string can hold registers above 51, which no `PFADD` writes; every register at
    /// 51 or above leaves the estimator's denominator at 0, where Redis's answer is undefined
    /// and this one is `u64::MAX`.)
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut hll = RedisHyperLogLog::new();
    /// (0..100_000).for_each(|i| { hll.observe(i.to_string()); });
    /// // Within 4 standard errors (0.81 % each).
    /// assert!((hll.count() as f64 / 100_000.0 - 1.0).abs() < 4.0 * 0.0081);
    /// ```
    #[must_use]
    pub fn count(&self) -> u64 {
        redis_count(&histogram::<u8, 64>(&self.registers[..], |r| usize::from(r & 63)))
    }

    /// The registers, one byte each (0 to 63), in Redis's order.
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut hll = RedisHyperLogLog::new();
    /// hll.observe("a");
    /// assert_eq!(hll.registers().len(), 16_384);
    /// assert_eq!(hll.registers().iter().filter(|&&r| r > 0).count(), 1);
    /// ```
    #[must_use]
    pub fn registers(&self) -> &[u8] {
        &self.registers[..]
    }

    /// Whether no element was added (every register is 0).
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// assert!(RedisHyperLogLog::new().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.registers.iter().all(|&r| r == 0)
    }

    /// The crate's [`HyperLogLog`] with these registers: precision 14, seed
    /// [`HYPERLOGLOG_SEED`], no martingale (its estimate comes from the registers). Add
    /// elements to it with `observe_hash(`[`hyperloglog_hash`]`(bytes))`, not `observe`, which
    /// would hash them the crate's way; it merges with other sketches converted from Redis,
    /// and refuses (by its seed) to merge with the crate's own.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `register` if a register is above 51, which no `PFADD` writes
    /// (a crafted dense string can hold up to 63) and a HyperLogLog of precision 14 cannot hold.
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut ours = RedisHyperLogLog::new();
    /// (0..5_000).for_each(|i| { ours.observe(i.to_string()); });
    /// let hll = ours.to_hyperloglog()?;
    /// assert_eq!(hll.precision(), 14);
    /// assert!((hll.estimate() / ours.count() as f64 - 1.0).abs() < 0.01);
    /// assert_eq!(RedisHyperLogLog::from_hyperloglog(&hll)?, ours);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn to_hyperloglog(&self) -> Result<HyperLogLog, ConfigError> {
        if let Some(&r) = self.registers.iter().find(|&&r| u32::from(r) > Q + 1) {
            return Err(ConfigError::new(
                "register",
                r,
                "at most 51, the largest rank of a 64-bit hash at 16 384 registers",
            ));
        }
        Ok(HyperLogLog::from_registers(P as u8, HYPERLOGLOG_SEED, self.registers.to_vec()))
    }

    /// The Redis HyperLogLog with the registers of `hll`, if they are Redis's: precision 14
    /// and seed [`HYPERLOGLOG_SEED`] (a sketch from
    /// [`to_hyperloglog`](Self::to_hyperloglog), or fed
    /// [`hyperloglog_hash`]es).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `precision` or `seed` otherwise: a sketch of the crate's own hash
    /// has registers Redis would never give the same elements, so it does not convert.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut own = HyperLogLog::new(14)?;
    /// own.observe("a");
    /// let error = RedisHyperLogLog::from_hyperloglog(&own).unwrap_err();
    /// assert_eq!(error.parameter(), "seed");
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn from_hyperloglog(hll: &HyperLogLog) -> Result<Self, ConfigError> {
        if u32::from(hll.precision()) != P {
            return Err(ConfigError::new("precision", hll.precision(), "14, the precision of every Redis HyperLogLog"));
        }
        if hll.seed() != HYPERLOGLOG_SEED {
            return Err(ConfigError::new(
                "seed",
                hll.seed(),
                "formats::redis::HYPERLOGLOG_SEED: a sketch of Redis's hash (another hash puts elements elsewhere)",
            ));
        }
        let mut out = Self::new();
        out.registers.iter_mut().zip(hll.dense_registers()).for_each(|(r, v)| *r = v);
        Ok(out)
    }

    /// The string Redis stores for these registers: sparse while every register is at most 32
    /// and the sparse form takes at most 3 000 bytes, dense otherwise (Redis's own rule with its
    /// default `hll-sparse-max-bytes`). The cached count is marked stale.
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut hll = RedisHyperLogLog::new();
    /// assert_eq!(hll.to_bytes().len(), 16 + 2); // one XZERO opcode: 16 384 zeros
    /// (0..20_000).for_each(|i| { hll.observe(i.to_string()); });
    /// assert_eq!(hll.to_bytes().len(), 16 + 12_288); // dense
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_sparse_bytes().unwrap_or_else(|| self.to_dense_bytes())
    }

    /// The dense string: the header and 16 384 six-bit registers (12 304 bytes).
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let hll = RedisHyperLogLog::new();
    /// assert_eq!(RedisHyperLogLog::from_bytes(&hll.to_dense_bytes())?, hll);
    /// # Ok::<(), synopses::DecodeError>(())
    /// ```
    #[must_use]
    pub fn to_dense_bytes(&self) -> Vec<u8> {
        let mut out = header(0);
        out.resize(HEADER + DENSE_REGISTERS, 0);
        let (_, body) = out.split_at_mut(HEADER);
        // Redis's dense layout is the crate's HyperLogLog encoding's.
        pack_six_bit_registers(&self.registers[..], body);
        out
    }

    /// The sparse string, if every register is at most 32 and it fits in 3 000 bytes.
    fn to_sparse_bytes(&self) -> Option<Vec<u8>> {
        let mut out = header(1);
        let mut registers = self.registers.iter().copied().peekable();
        while let Some(value) = registers.next() {
            if value > SPARSE_MAX_VALUE {
                return None;
            }
            let mut run = 1;
            while registers.peek() == Some(&value) {
                registers.next();
                run += 1;
            }
            if value == 0 {
                // One XZERO holds any run (at most 16 384); ZERO is the shorter for 64 or less.
                if run <= 64 {
                    out.push((run - 1) as u8);
                } else {
                    out.extend_from_slice(&(0x4000 | (run - 1) as u16).to_be_bytes());
                }
            } else {
                while run > 0 {
                    let here = run.min(4);
                    out.push(0x80 | (value - 1) << 2 | (here - 1) as u8);
                    run -= here;
                }
            }
            if out.len() > HEADER + SPARSE_MAX_BYTES {
                return None;
            }
        }
        Some(out)
    }

    /// Reads a Redis HyperLogLog string (`GET key`), dense or sparse.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] if the bytes are not one: a wrong magic or encoding, a dense string of
    /// the wrong length, sparse opcodes that cover more or fewer than 16 384 registers. Redis
    /// refuses the same strings ("INVALIDOBJ Corrupted HLL object detected"). The cached count
    /// is not read: the count comes from the registers.
    ///
    /// ```
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// // `PFADD k a`, `PFCOUNT k`, then `GET k` in Redis 7: the header (count cached: 1),
    /// // then the sparse opcodes XZERO 12 711, VAL 2, XZERO 3 672.
    /// let stored = b"HYLL\x01\0\0\0\x01\0\0\0\0\0\0\0\x71\xa6\x84\x4e\x57";
    /// let hll = RedisHyperLogLog::from_bytes(stored)?;
    /// assert_eq!(hll.registers()[12_711], 2);
    /// let mut here = RedisHyperLogLog::new();
    /// here.observe("a");
    /// assert_eq!(hll, here);
    /// assert_eq!(hll.count(), 1);
    /// assert!(RedisHyperLogLog::from_bytes(b"HYLL").is_err());
    /// # Ok::<(), synopses::DecodeError>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let Some((header, body)) = bytes.split_first_chunk::<HEADER>() else {
            return Err(DecodeError::Truncated { needed: HEADER, available: bytes.len() });
        };
        if header[..4] != *b"HYLL" {
            return Err(DecodeError::InvalidField { field: "magic", reason: "a Redis HyperLogLog starts with HYLL" });
        }
        let mut sketch = Self::new();
        match header[4] {
            0 => sketch.read_dense(body)?,
            1 => sketch.read_sparse(body)?,
            _ => {
                return Err(DecodeError::InvalidField {
                    field: "encoding",
                    reason: "a stored Redis HyperLogLog is dense (0) or sparse (1)",
                });
            }
        }
        Ok(sketch)
    }

    fn read_dense(&mut self, body: &[u8]) -> Result<(), DecodeError> {
        match body.len() {
            n if n < DENSE_REGISTERS => return Err(DecodeError::Truncated { needed: DENSE_REGISTERS, available: n }),
            n if n > DENSE_REGISTERS => return Err(DecodeError::TrailingBytes(n - DENSE_REGISTERS)),
            _ => {}
        }
        unpack_six_bit_registers(body, &mut self.registers[..]);
        Ok(())
    }

    fn read_sparse(&mut self, body: &[u8]) -> Result<(), DecodeError> {
        let overrun = DecodeError::InvalidField {
            field: "sparse opcodes",
            reason: "their runs cover more than the 16 384 registers",
        };
        let mut at = 0_usize;
        let mut ops = body.iter();
        while let Some(&op) = ops.next() {
            let (run, value) = match op >> 6 {
                0 => (usize::from(op & 63) + 1, 0),
                1 => {
                    let Some(&low) = ops.next() else {
                        return Err(DecodeError::Truncated { needed: 1, available: 0 });
                    };
                    ((usize::from(op & 63) << 8 | usize::from(low)) + 1, 0)
                }
                _ => (usize::from(op & 3) + 1, (op >> 2 & 31) + 1),
            };
            let Some(run_registers) = self.registers.get_mut(at..at + run) else {
                return Err(overrun);
            };
            run_registers.fill(value);
            at += run;
        }
        if at != REGISTERS {
            return Err(DecodeError::InvalidField {
                field: "sparse opcodes",
                reason: "their runs cover fewer than the 16 384 registers",
            });
        }
        Ok(())
    }
}

/// A header of `encoding`, its cached count marked stale.
fn header(encoding: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + DENSE_REGISTERS);
    out.extend_from_slice(b"HYLL");
    out.extend_from_slice(&[encoding, 0, 0, 0]);
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, STALE]);
    out
}

/// `PFCOUNT` from the registers' histogram (`histogram[k]` registers hold `k`), in Redis's
/// order of operations. Registers above 51 (which Redis's own updates never write, but its
/// dense form can hold) count in no term, as in Redis.
fn redis_count(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(histogram[q + 1])) / m);
    for &c in histogram[1..=q].iter().rev() {
        z += f64::from(c);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    // α_∞ = 1 / (2 ln 2), Redis's HLL_ALPHA_INF. `llroundl`: half away from zero; `as`
    // saturates (an empty sketch's z is infinite: 0).
    (ALPHA_INF * m * m / z).round() as u64
}

impl Mergeable for RedisHyperLogLog {
    /// The registers' maximum, as `PFMERGE`: never fails (every Redis HyperLogLog has the same
    /// 16 384 registers).
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let (mut a, mut b) = (RedisHyperLogLog::new(), RedisHyperLogLog::new());
    /// a.observe("x");
    /// b.observe("y");
    /// a.merge(&b)?;
    /// assert_eq!(a.count(), 2);
    /// # Ok::<(), synopses::MergeError>(())
    /// ```
    fn merge(&mut self, other: &Self) -> Result<(), MergeError> {
        self.registers.iter_mut().zip(other.registers.iter()).for_each(|(a, &b)| *a = (*a).max(b));
        Ok(())
    }

    /// An empty sketch.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut a = RedisHyperLogLog::new();
    /// a.observe("x");
    /// assert!(a.empty_like().is_empty());
    /// ```
    fn empty_like(&self) -> Self {
        Self::new()
    }
}

impl<T: AsRef<[u8]>> Operator<T> for RedisHyperLogLog {
    /// [`RedisHyperLogLog::observe`].
    ///
    /// ```
    /// use synopses::core::Operator;
    /// use synopses::formats::RedisHyperLogLog;
    ///
    /// let mut hll = RedisHyperLogLog::new();
    /// Operator::observe_all(&mut hll, ["a", "b", "a"]);
    /// assert_eq!(hll.count(), 2);
    /// ```
    fn observe(&mut self, item: T) {
        RedisHyperLogLog::observe(self, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Registers of any reachable kind: zero runs of every length, small and large values.
    fn registers() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(prop_oneof![8 => Just(0_u8), 2 => 1_u8..=32, 1 => 1_u8..=51], REGISTERS),
            prop::collection::vec(0_u8..=63, REGISTERS),
            prop::collection::vec(prop_oneof![50 => Just(0_u8), 1 => 1_u8..=5], REGISTERS),
        ]
    }

    fn sketch(registers: &[u8]) -> RedisHyperLogLog {
        let mut s = RedisHyperLogLog::new();
        s.registers.copy_from_slice(registers);
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn both_encodings_read_back_the_registers(registers in registers()) {
            let s = sketch(&registers);
            prop_assert_eq!(&RedisHyperLogLog::from_bytes(&s.to_dense_bytes()).unwrap(), &s);
            let bytes = s.to_bytes();
            prop_assert_eq!(&RedisHyperLogLog::from_bytes(&bytes).unwrap(), &s);
            // Sparse exactly when Redis's rule allows it.
            let sparse = bytes[4] == 1;
            prop_assert_eq!(sparse, s.to_sparse_bytes().is_some());
            if !sparse {
                prop_assert!(registers.iter().any(|&r| r > 32) || s.to_dense_bytes() == bytes);
            }
        }

        #[test]
        fn arbitrary_bytes_give_a_sketch_or_an_error(noise in prop::collection::vec(any::<u8>(), 0..64), dense in any::<bool>()) {
            let mut bytes = header(u8::from(!dense)).to_vec();
            bytes.extend_from_slice(&noise);
            for input in [&bytes[..], &noise[..]] {
                if let Ok(s) = RedisHyperLogLog::from_bytes(input) {
                    prop_assert_eq!(&RedisHyperLogLog::from_bytes(&s.to_bytes()).unwrap(), &s);
                }
            }
        }

        #[test]
        fn damaged_strings_give_a_sketch_or_an_error(registers in registers(), at in any::<prop::sample::Index>(), xor in 1..=255_u8, cut in any::<prop::sample::Index>()) {
            for bytes in [sketch(&registers).to_bytes(), sketch(&registers).to_dense_bytes()] {
                let mut damaged = bytes.clone();
                let i = at.index(damaged.len());
                damaged[i] ^= xor;
                // A damaged string that still reads is a state like any other: it writes and
                // reads back.
                if let Ok(s) = RedisHyperLogLog::from_bytes(&damaged) {
                    prop_assert_eq!(&RedisHyperLogLog::from_bytes(&s.to_bytes()).unwrap(), &s);
                    prop_assert_eq!(&RedisHyperLogLog::from_bytes(&s.to_dense_bytes()).unwrap(), &s);
                }
                let cut = cut.index(bytes.len());
                prop_assert!(RedisHyperLogLog::from_bytes(&bytes[..cut]).is_err());
            }
        }
    }

    #[test]
    fn sparse_runs_must_cover_the_registers_exactly() {
        let with = |ops: &[u8]| {
            let mut bytes = header(1);
            bytes.extend_from_slice(ops);
            RedisHyperLogLog::from_bytes(&bytes)
        };
        // XZERO of 16 384: the empty sketch.
        assert!(with(&[0x7f, 0xff]).unwrap().is_empty());
        // One short, one over, and a truncated XZERO.
        assert!(with(&[0x7f, 0xfe]).is_err());
        assert!(with(&[0x7f, 0xff, 0x00]).is_err());
        assert!(with(&[0x7f]).is_err());
        // VAL 32 x4 then the rest zero.
        let s = with(&[0xff, 0x7f, 0xfb]).unwrap();
        assert_eq!(&s.registers()[..5], &[32, 32, 32, 32, 0]);
        assert!(with(&[]).is_err());
    }

    #[test]
    fn the_count_is_exact_hyperloglog_arithmetic_at_the_extremes() {
        // Empty: 0. Every register at 51 (saturated): τ's term alone, finite.
        assert_eq!(RedisHyperLogLog::new().count(), 0);
        let full = sketch(&[51; REGISTERS]);
        assert!(full.count() > 1 << 50);
        // One element: 1.
        let mut one = RedisHyperLogLog::new();
        one.observe("a");
        assert_eq!(one.count(), 1);
    }
}
