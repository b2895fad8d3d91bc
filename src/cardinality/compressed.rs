//! Entropy-coded registers: the compressed encoding of UltraLogLog's (and HyperLogLog's) dense
//! registers.
//!
//! Given the number of distinct items `n`, each of the `m` registers sees a Poisson number of
//! them, `λ = n/m` on average, and an update value `k` with probability `P(k) = 2^-k` (the last
//! value, `L + 1 = 65 − p`, takes the geometric tail `2^-L`). So value `k` occurs in a register
//! with probability `q_k = 1 − e^(−λ·P(k))`, independently of the other values, and a register
//! `4u + h` (maximum `u`, and whether `u − 1` and `u − 2` occurred) has the probability
//!
//! ```text
//!   P(0)      = e^(−λ)
//!   P(4u + h) = q_u · e^(−λ·2^-u) · Π over the history bits b of (b set ? q_v : 1 − q_v)
//! ```
//!
//! (`e^(−λ·2^-u)` is the chance that no value above `u` occurred; `v = u − 1, u − 2`, when at
//! least 1). The encoder writes `λ` quantized to 1/16 of an octave (from a rough estimate that a
//! sample of the registers gives, [`code_of`]), and codes each register with the Huffman code of
//! that distribution: at about the registers' entropy, 4 bits a register where `n ≫ m` instead
//! of 8, and 1 % above it (the price of whole bits a register).
//!
//! **The code.** The values of probability at least `2^-12` (three dozen of them where `n ≫ m`)
//! get the codewords of an optimal prefix code at most 11 bits long (package-merge, Larmore and
//! Hirschberg 1990), canonical (Schwartz and Kallick 1964); the others share one more codeword,
//! the escape, followed by the value's 8 bits. A model depends only on the shape and the scale
//! code, so its tables (a codeword a byte, and the codewords of two registers of a window of
//! 64 values, for the encoder; the value, and the pair of values, that each 11 bits read start
//! with, for the decoder) are built once and kept in a cache for the process
//! ([`Tables::cached`]). Where `n ≫ m` the model at twice the scale is the same a level higher,
//! so the tables of a scale are those of one of 16 origins (an octave of scales) shifted, in
//! 3 µs instead of 11.
//!
//! **The streams.** The registers are split in four quarters, each its own bit stream, so that
//! the decoder reads four at a time (a table lookup each, independent of the three others). The
//! encoder writes a stream at a time, eight registers a step: where all eight lie in the
//! window and none is an escape (99 steps in 100), four lookups give their codewords, two by
//! two, and one write (into a fixed array for each block of 32 registers, so with no bounds
//! check a write): 1.3 to 1.5 times faster than two streams a register at a time (measured).
//!
//! **Why Huffman, not arithmetic coding.** The first version of this coder used four
//! interleaved asymmetric-numeral-systems coders (the `constriction` crate's format) against
//! 14-bit weights: 0.4 % above the entropy, but 1.5 ns a register each way plus 2 µs a sketch
//! for the model, 1.7 to 4.6 times the time of DataSketches' CPC serialization. A Huffman code
//! from a cached table costs a table lookup a register, or a pair, each way: 0.5 ns a register
//! to encode, about 1 to decode (0.53 to 0.78 of CPC's time to encode, 0.46 to 0.87 to decode,
//! at p = 14 to 10), and the four coders' final
//! states (8 to 32 bytes) go: at p = 12 and 14 a coded sketch is 0.4 and 0.9 % larger than
//! with ANS, at p = 10 the same, at p = 8 6 % smaller. No Rust Huffman crate fits: the ones
//! published code whole files with their tables, or walk a tree a bit at a time.
//!
//! The decoder computes the same code from the same scale, and checks that the scale is the
//! one the encoder derives from the decoded registers, so both must come out the same to the
//! bit on every platform: the probabilities come from [`exp`] and the scale from [`log2`],
//! built from the correctly rounded IEEE operations only (the standard library's `exp` and
//! `log2` may differ between platforms by an ulp), and everything is integers from there on.
//! (That holds where `f64` arithmetic is IEEE binary64 rounding each operation, as on every
//! 64-bit target and i686 with SSE2; not on x87-only targets such as i586, whose 80-bit
//! intermediates round differently.) A test pins a digest of the codes of every scale at
//! four shapes, and of one scale in five at the others.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::registers::Shape;
use super::sparse::CodedEntries;
use crate::codec::{Reader, Writer, varint_len};
use crate::core::DecodeError;

/// The longest codeword: the decoder reads the value of any 11 bits from a table of `2^11`
/// entries. Against a limit of 16 bits and no escape, computed from the model: codes under
/// 0.05 % shorter, tables 32 times as large.
const LONGEST: u32 = 11;
/// Values rarer than this share the escape codeword, followed by their 8 bits.
const RARE_BELOW: f64 = 1.0 / 4096.0;
/// The longest a register's code can be: the escape and a byte.
const LONGEST_FORM: u32 = LONGEST + 8;
/// Steps of the scale code per octave of `λ`, and the code of `λ = 1`: a scale off by half a
/// step (2.2 %) costs under 0.001 bits a register.
const STEPS_PER_OCTAVE: f64 = 16.0;
const CODE_OF_ONE: f64 = 64.0 * STEPS_PER_OCTAVE;
/// The largest scale code: `λ = 2^64`.
const MOST_CODE: u16 = 2 * CODE_OF_ONE as u16;
/// The registers the scale is estimated from (all of them, below 256): one in every `m/256`,
/// an estimate within about 7 %, which costs 0.04 to 0.09 % of the coded size against 512
/// registers (measured), in half their time.
const SAMPLE: usize = 256;

/// `e^x`, from IEEE-754's correctly rounded operations only, so every platform computes the
/// same bits: `x = k·ln 2 + r` with `|r| ≤ ln 2 / 2` (ln 2 split in two, Cody and Waite),
/// `e^r` by its Taylor polynomial of
/// degree 14 (error below 10^-17), scaled by `2^k` exactly. Saturates: 0 below −745, `f64::MAX`
/// above 709.
pub(crate) fn exp(x: f64) -> f64 {
    const LN_2: f64 = std::f64::consts::LN_2;
    if x.is_nan() {
        return f64::NAN;
    }
    if x < -745.0 {
        return 0.0;
    }
    if x > 709.0 {
        return f64::MAX;
    }
    // Cody and Waite's split of ln 2: the high part has zeros in its low 32 bits, so `k·hi`
    // is exact for every |k| ≤ 1075, and `r` is as accurate as `lo` is.
    const LN_2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
    const LN_2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
    let k = (x / LN_2).round();
    let r = (x - k * LN_2_HI) - k * LN_2_LO;
    // Horner's scheme, highest coefficient first: 1/14!, ..., 1/1!, 1.
    let poly = INVERSE_FACTORIALS.iter().rev().fold(0.0, |acc, &c| acc * r + c);
    scale_by_power_of_two(poly, k as i32)
}

/// `1/i!` for `i` in `0..15`, each one correctly rounded division by the exact factorial.
const INVERSE_FACTORIALS: [f64; 15] = {
    let mut out = [1.0; 15];
    let mut factorial = 1.0;
    let mut i = 1;
    while i < 15 {
        factorial *= i as f64;
        out[i] = 1.0 / factorial;
        i += 1;
    }
    out
};

/// `x · 2^k`, exactly where the result is normal (a multiplication by an exact power of two),
/// in two steps where it is not.
fn scale_by_power_of_two(x: f64, k: i32) -> f64 {
    let power = |e: i32| f64::from_bits(((e + 1023) as u64) << 52);
    if k > 1023 {
        x * power(1023) * power(k - 1023)
    } else if k < -1022 {
        x * power(-1022) * power((k + 1022).max(-1022))
    } else {
        x * power(k)
    }
}

/// `log2 x` for `x > 0`, from IEEE-754's correctly rounded operations only: `x = 2^e·f` with
/// `f` in `[√½, √2)` (exact), and `log2 f = 2·atanh(s)/ln 2` with `s = (f − 1)/(f + 1)`,
/// `|s| < 0.172`, by its odd series to `s^23` (error below 10^-18). Not a number for `x ≤ 0`.
pub(crate) fn log2(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    if x.is_infinite() {
        return x;
    }
    // Subnormals: scaled into the normal range first, exactly.
    let (x, shift) = if x < f64::MIN_POSITIVE { (x * scale_by_power_of_two(1.0, 64), -64) } else { (x, 0) };
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7FF) as i32 - 1023 + shift;
    let mut f = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    if f > std::f64::consts::SQRT_2 {
        f /= 2.0;
        e += 1;
    }
    let s = (f - 1.0) / (f + 1.0);
    let s2 = s * s;
    // Horner's scheme over 1/1, 1/3, ..., 1/23, highest first.
    let mut series = 0.0;
    for k in (0..12).rev() {
        series = series * s2 + 1.0 / f64::from(2 * k + 1);
    }
    f64::from(e) + 2.0 * s * series / std::f64::consts::LN_2
}

/// The scale code of dense registers of `shape` (one byte each): `round(16·log2 λ̂) + 16·64`,
/// clamped to `0..=`[`MOST_CODE`], for a rough estimate `λ̂` of the items per register from
/// one register in every `m/256` (every one below 256). The decoder recomputes it to accept
/// only the encoder's choice, so it must come out the same on every platform: the estimate is
/// HyperLogLog's raw one over the sample (`α·s / Σ 2^-u`, the sum exact in integers, values
/// above 44 counting as none) or, while it is below `2.5` and some sampled register is empty,
/// linear counting (`ln(s/V)`, `V` the empty ones), and the logarithm is [`log2`], from IEEE
/// basic operations only. Its error of a few percent costs the coder almost nothing: the code
/// is flat near its optimum.
fn code_of(registers: &[u8], shape: Shape) -> u16 {
    // For each byte, 2^(44−u) above 9 bits (0 for u > 44), and 1 if it is 0: a sum of at
    // most 256 of them (below 2^62) holds both, Σ 2^(44−u) above 9 bits and the empty
    // registers below.
    const fn weights(d: u32) -> [u64; 256] {
        let mut out = [0; 256];
        let mut r = 0;
        while r < 256 {
            let u = (r >> d) & 63;
            out[r] = if u > 44 { 0 } else { 1 << (53 - u) } | (r == 0) as u64;
            r += 1;
        }
        out
    }
    static WEIGHTS: [[u64; 256]; 3] = [weights(0), weights(1), weights(2)];
    let weight = &WEIGHTS[usize::from(shape.d.min(2))];
    let stride = (registers.len() / SAMPLE).max(1);
    let sampled = (registers.len() / stride) as u64;
    // Four at a time (the number of registers sampled is a multiple of 4).
    let mut sums = [0u64; 4];
    for four in registers.chunks_exact(4 * stride) {
        for (k, sum) in sums.iter_mut().enumerate() {
            *sum += weight[usize::from(four[k * stride])];
        }
    }
    let both: u64 = sums.iter().sum();
    let (sum, empty) = (both >> 9, both & 511);
    let s = sampled as f64;
    let inverse_sum = s / (sum as f64 / scale_by_power_of_two(1.0, 44));
    let raw = 0.7213 / (1.0 + 1.079 / s) * inverse_sum;
    let lambda = if raw < 2.5 && empty > 0 { (log2(s) - log2(empty as f64)) * std::f64::consts::LN_2 } else { raw };
    if lambda.is_nan() || lambda <= 0.0 {
        return 0;
    }
    let code = (log2(lambda) * STEPS_PER_OCTAVE + CODE_OF_ONE).round();
    code.clamp(0.0, f64::from(MOST_CODE)) as u16
}

/// The `λ` of a scale code: `2^((code − 16·64)/16)`, from [`exp`].
fn lambda_of(code: u16) -> f64 {
    let octaves = (f64::from(code) - CODE_OF_ONE) / STEPS_PER_OCTAVE;
    let whole = octaves.floor();
    scale_by_power_of_two(exp((octaves - whole) * std::f64::consts::LN_2), whole as i32)
}

/// The register values of UltraLogLog (`shape.t == 0`, `shape.d == 2`) or of HyperLogLog
/// (`d == 0`: the maximum alone), in ascending order, and the probability of each at scale
/// `code`. A value `u ≥ 1` is computed only where it can reach [`RARE_BELOW`] (it is rare
/// otherwise, and its probability 0 here): where `x_u = λ·2^-u` is at least `2^-16` (the
/// geometric tail counting as level L) and below 40 (above, something higher is sure). Its
/// history values (`x_v ≤ 4·x_u`) and the empty register read `e^(−x_j)`, so only two dozen
/// levels' exponentials are computed.
fn probabilities(shape: Shape, code: u16) -> (Vec<u8>, Vec<f64>) {
    debug_assert!(shape.t == 0 && (shape.d == 2 || shape.d == 0));
    let lambda = lambda_of(code);
    let top = shape.max_value(); // L + 1, at most 62
    let geometric = top - 1; // L
    let x = |j: u32| lambda * scale_by_power_of_two(1.0, -(j as i32));
    let matters = |u: u32| (u >= top || x(u) < 40.0) && x(u.min(geometric)) > 1.0 / 65536.0;
    // e^(−x_j) for j in 0..=L: value k's absence is none[min(k, L)], and nothing above
    // u (u < L + 1) is none[u].
    let mut none = [0.0; 64];
    for (j, slot) in none.iter_mut().enumerate().take(geometric as usize + 1) {
        let x = x(j as u32);
        if j == 0 || (x < 160.0 && x > 1.0 / 65536.0) {
            *slot = exp(-x);
        }
    }
    let none_of = |k: u32| none[k.min(geometric) as usize];
    let nothing_above = |u: u32| if u >= top { 1.0 } else { none[u as usize] };
    let (mut values, mut probabilities) = (Vec::with_capacity(256), Vec::with_capacity(256));
    for r in (0..=255u64).filter(|&r| shape.is_valid(r)) {
        let (u, h) = ((r >> shape.d) as u32, r & shape.history_mask());
        let p = if u == 0 {
            none[0]
        } else if !matters(u) {
            0.0
        } else {
            let mut p = (1.0 - none_of(u)) * nothing_above(u);
            if shape.d == 2 {
                for (bit, v) in [(2, u.wrapping_sub(1)), (1, u.wrapping_sub(2))] {
                    if (1..u).contains(&v) {
                        p *= if h & bit != 0 { 1.0 - none_of(v) } else { none_of(v) };
                    }
                }
            }
            p
        };
        values.push(r as u8);
        probabilities.push(p);
    }
    (values, probabilities)
}

/// The model of `shape` at scale `code` that its code is built from: the common values (of
/// probability at least [`RARE_BELOW`]) in ascending order, and their weights, then the
/// escape's: that of the rare values together, plus 1. Weights are the probabilities scaled by
/// `2^40`, rounded down.
fn model(shape: Shape, code: u16) -> (Vec<u8>, Vec<u64>) {
    let (values, probabilities) = probabilities(shape, code);
    let scale = scale_by_power_of_two(1.0, 40);
    let (mut common, mut weights, mut rare) = (Vec::new(), Vec::new(), 1u64);
    for (&value, &p) in values.iter().zip(&probabilities) {
        let weight = (p * scale) as u64;
        if p >= RARE_BELOW {
            common.push(value);
            weights.push(weight);
        } else {
            rare += weight;
        }
    }
    weights.push(rare);
    (common, weights)
}

/// The encoder's table with every byte escaped: the escape's codeword `word` of `len` bits,
/// then the byte.
fn escapes(word: u32, len: u32) -> [u64; 256] {
    std::array::from_fn(|v| u64::from(word | (v as u32) << len) | ESCAPED | u64::from(len + 8) << 56)
}

/// Optimal codeword lengths of at most [`LONGEST`] bits for symbols of `weights` (at least
/// two, at most `2^11`, each at least 1), by package-merge (Larmore and Hirschberg): the
/// lightest items, leaves and packages of pairs, merged level by level; a symbol's length is
/// the number of the `2n − 2` lightest items of the last level that hold it. Ties go to the
/// lower symbol and to leaves before packages: integers only, the same everywhere. The code is
/// complete (Kraft's sum is exactly 1), so every bit string reads as codewords. A package
/// keeps where its pair is in the level below, not the symbols it holds, and the lengths are
/// counted in one pass down the levels: linear in the items (copying each package's symbols
/// took 47 µs a code).
fn code_lengths(weights: &[u64]) -> Vec<u32> {
    /// An item of a level: its weight, and the symbol of a leaf or the first of the two items
    /// of the level below that a package holds.
    #[derive(Clone, Copy)]
    enum Item {
        Leaf(u64, usize),
        Package(u64, usize),
    }
    let weight = |item: &Item| match *item {
        Item::Leaf(w, _) | Item::Package(w, _) => w,
    };
    let n = weights.len();
    debug_assert!((2..=1 << LONGEST).contains(&n));
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (weights[i], i));
    let leaves: Vec<Item> = order.iter().map(|&i| Item::Leaf(weights[i], i)).collect();
    let mut levels = vec![leaves.clone()];
    for _ in 1..LONGEST {
        let below = &levels[levels.len() - 1];
        let packages = below
            .chunks_exact(2)
            .enumerate()
            .map(|(k, pair)| Item::Package(weight(&pair[0]) + weight(&pair[1]), 2 * k));
        let mut merged = Vec::with_capacity(2 * n);
        let (mut leaves, mut packages) = (leaves.iter().copied().peekable(), packages.peekable());
        loop {
            let leaf_first = match (leaves.peek(), packages.peek()) {
                (Some(l), Some(p)) => weight(l) <= weight(p),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            merged.extend(if leaf_first { leaves.next() } else { packages.next() });
        }
        levels.push(merged);
    }
    // The last level holds at least 2n − 2 items: it has the n leaves and the packages of the
    // level before, whose count grows towards 2n − 1 and reaches 2n − 2 within 11 levels for
    // n ≤ 2^11 (here at most 257: the byte values and the escape). A symbol's length is the
    // number of those items that hold it: each item of a level counts the times it is held,
    // and passes them to the two items below of a package.
    let mut lengths = vec![0u32; n];
    let mut held = vec![1u32; 2 * n - 2];
    for (k, level) in levels.iter().enumerate().rev() {
        let mut below = vec![0u32; if k > 0 { levels[k - 1].len() } else { 0 }];
        for (item, &times) in level.iter().zip(&held) {
            match *item {
                Item::Leaf(_, symbol) => lengths[symbol] += times,
                Item::Package(_, first) => {
                    below[first] += times;
                    below[first + 1] += times;
                }
            }
        }
        held = below;
    }
    lengths
}

/// A flag of the encoder's table, on the bytes written as the escape and their 8 bits: the
/// decoder checks it of each byte it reads after an escape.
const ESCAPED: u64 = 1 << 40;
/// A decoding entry: the codeword's length in its low 4 bits, this bit for the escape, the
/// value in the high byte.
const ESCAPE: u16 = 1 << 7;
const LENGTH: u16 = 15;

/// A pair entry's count of registers (1 or 2), from bit 4.
const COUNT_SHIFT: u32 = 4;

/// The tables of the code of one shape at one scale.
pub(crate) struct Tables {
    /// Each byte's code: its bits, the first one lowest, in the low 32 bits, [`ESCAPED`], and
    /// its length in the top byte (a 32-bit truncation and a shift apart, no mask: measured
    /// 9 to 15 % faster to encode than one 32-bit word).
    encode: [u64; 256],
    /// For each 11 bits read (the first one lowest): the value whose codeword starts them (high
    /// byte) and the codeword's length (low 4 bits); or [`ESCAPE`] and the escape's length.
    decode: [u16; 1 << LONGEST],
    /// For each 11 bits read: the one or two codewords they start with whole (not an escape),
    /// their values in bits 8 to 15 and 16 to 23, how many from bit 4, their length together
    /// in the low 4 bits; or [`ESCAPE`] and the escape's length. Where `n ≫ m` two registers
    /// fit 11 bits 92 to 94 % of the time (computed from the model), which nearly halves the
    /// lookups, the decoder's bound (measured 1.37 times faster at p = 14).
    pairs: [u32; 1 << LONGEST],
    /// The encoder's codes of two registers at once, where both lie in a window of 64 values:
    /// built when the code first encodes (64 KB, which a decoder does without).
    window: OnceLock<Window>,
    /// The model the code was built from (see [`model`]): its common values, and their weights
    /// and the escape's.
    common: Vec<u8>,
    weights: Vec<u64>,
    /// The escape's codeword and length.
    escape: (u32, u32),
    /// The tables these are those of shifted, and by how many values ([`Tables::shifted`]).
    origin: Option<(Arc<Tables>, u8)>,
}

/// The first of the 16 origins of a shape, the scale codes of one octave, from `λ = 2^7`: the
/// tables of a code `k` octaves above (from `λ = 2^8`) are an origin's with each value `k`
/// levels higher ([`Tables::shifted`]). From `λ ≈ 28` an empty register is too rare to weigh
/// in the model (`e^(−λ)·2^40 < 1`), and the model only moves up a level an octave, until the
/// top level comes near.
const SHIFTED_FROM: u16 = CODE_OF_ONE as u16 + 7 * STEPS_PER_OCTAVE as u16;

/// The encoder's table of register pairs: for the registers `r, s` of a window of 64 values
/// from `base`, at `(r − base) + 256·(s − base)`, the two codewords one after the other (`r`'s
/// first) above 5 bits and their length together in the low 5 bits; or [`SLOW`] where one is
/// an escape. Eight registers then take one test (are all eight in the window?), four
/// lookups and one or two writes, against eight lookups and four writes a register at a time.
/// Where `n ≫ m` a register is outside the window or an escape about once in 800 (UltraLogLog;
/// 2200 for HyperLogLog: as often as values of `P < 2^-12` occur), so a step of eight takes
/// the slow path about once in 100 (270). The table spans 64 KB, of which the encoder reads
/// about 7 (the rows of three dozen common values).
struct Window {
    /// The window's first value, at most 192.
    base: u8,
    pairs: Arc<[u32; WINDOW_PAIRS]>,
}

/// The entries a window table spans: two 6-bit offsets 8 bits apart. (Packed to 12 bits, by a
/// multiply, the table takes 16 KB, but the encoder 1.15 times the time.)
const WINDOW_PAIRS: usize = 0x3F3F + 1;
/// A window table's flag for a pair coded a register at a time.
const SLOW: u32 = 1 << 31;

impl Window {
    /// The window of `encode`'s code that holds the most probability, as its codewords' lengths
    /// say (`2^-length` each, escapes none), the lowest such, from at most 192 (which the
    /// encoder's test needs). Which window it is changes no coded bit, only how often the
    /// encoder takes its slow path.
    fn new(encode: &[u64; 256]) -> Self {
        let weight = encode.map(|e| if e & ESCAPED == 0 { 1u64 << (LONGEST - (e >> 56) as u32) } else { 0 });
        let (mut best, mut base) = (weight[..64].iter().sum::<u64>(), 0);
        let mut sum = best;
        for b in 1..=192 {
            sum = sum + weight[b + 63] - weight[b - 1];
            if sum > best {
                (best, base) = (sum, b);
            }
        }
        let pair = |i: usize| {
            let (r, s) = (i % 256, i / 256);
            if r >= 64 { 0 } else { Self::entry(encode[base + r], encode[base + s]) }
        };
        let pairs: Arc<[u32]> = (0..WINDOW_PAIRS).map(pair).collect();
        // Collected from exactly `WINDOW_PAIRS` entries, the slice converts to the array.
        let Ok(pairs) = pairs.try_into() else { unreachable!("{WINDOW_PAIRS} entries") };
        Self { base: base as u8, pairs }
    }

    /// The entry of two registers whose codes (from the encoder's table) are `first` and
    /// `second`.
    fn entry(first: u64, second: u64) -> u32 {
        let len = (first >> 56) as u32;
        if (first | second) & ESCAPED != 0 {
            SLOW
        } else {
            (first as u32 | (second as u32) << len) << 5 | (len + (second >> 56) as u32)
        }
    }

    /// The window of the same code, each value `by` higher, if it stays within 192.
    fn shifted(&self, by: u8) -> Option<Self> {
        let base = self.base.checked_add(by).filter(|&base| base <= 192)?;
        Some(Self { base, pairs: Arc::clone(&self.pairs) })
    }
}

impl Tables {
    /// The code of `shape` at scale `code`: see [`from_model`](Self::from_model). (The codec
    /// takes them from [`cached`](Self::cached).)
    #[cfg(test)]
    fn new(shape: Shape, code: u16) -> Self {
        let (common, weights) = model(shape, code);
        Self::from_model(common, weights)
    }

    /// The code of a model ([`model`]): canonical codewords (by length, then value, the escape
    /// last) of the lengths [`code_lengths`] gives the common values and the escape.
    fn from_model(common: Vec<u8>, weights: Vec<u64>) -> Self {
        let lengths = code_lengths(&weights);
        // Canonical codewords, shortest first, then each one reversed: the first bit lowest.
        let mut by_length: Vec<usize> = (0..lengths.len()).collect();
        by_length.sort_by_key(|&s| (lengths[s], s));
        let mut codewords = vec![0u32; lengths.len()];
        let (mut next, mut length) = (0u32, 0u32);
        for &s in &by_length {
            next <<= lengths[s] - length;
            length = lengths[s];
            codewords[s] = next.reverse_bits() >> (32 - length);
            next += 1;
        }
        let escape = common.len();
        let mut encode = escapes(codewords[escape], lengths[escape]);
        let mut decode = [0u16; 1 << LONGEST];
        for (s, (&word, &len)) in codewords.iter().zip(&lengths).enumerate() {
            let entry = if s == escape {
                ESCAPE | len as u16
            } else {
                encode[usize::from(common[s])] = u64::from(word) | u64::from(len) << 56;
                u16::from(common[s]) << 8 | len as u16
            };
            for rest in 0..1u32 << (LONGEST - len) {
                decode[(word | rest << len) as usize] = entry;
            }
        }
        let pairs = std::array::from_fn(|bits| {
            let first = decode[bits];
            let len = u32::from(first & LENGTH);
            let second = decode[bits >> len];
            let len2 = u32::from(second & LENGTH);
            if first & ESCAPE != 0 {
                u32::from(first)
            } else if second & ESCAPE == 0 && len + len2 <= LONGEST {
                u32::from(first >> 8) << 8 | u32::from(second >> 8) << 16 | 2 << COUNT_SHIFT | (len + len2)
            } else {
                u32::from(first >> 8) << 8 | 1 << COUNT_SHIFT | len
            }
        });
        let escape = (codewords[escape], lengths[escape]);
        Self { encode, decode, pairs, window: OnceLock::new(), common, weights, escape, origin: None }
    }

    /// The tables of the model `common, weights` where it is `origin`'s, each common value `by`
    /// higher (else the model, given back): the same code, each table's values shifted, which takes a tenth
    /// of the time of building it (a scale code and the one 16 above give the same model a
    /// level higher, from `λ` of a few dozen to near the top level, [`SHIFTED_FROM`]). The
    /// window is `origin`'s, shifted, when the encoder first wants it.
    fn shifted(origin: &Arc<Tables>, common: Vec<u8>, weights: Vec<u64>, by: u8) -> Result<Self, (Vec<u8>, Vec<u64>)> {
        let higher = |(&value, &was): (&u8, &u8)| u16::from(value) == u16::from(was) + u16::from(by);
        if weights != origin.weights
            || common.len() != origin.common.len()
            || !common.iter().zip(&origin.common).all(higher)
        {
            return Err((common, weights));
        }
        let mut encode = escapes(origin.escape.0, origin.escape.1);
        for (&value, &was) in common.iter().zip(&origin.common) {
            encode[usize::from(value)] = origin.encode[usize::from(was)];
        }
        let by16 = u16::from(by) << 8;
        let decode = origin.decode.map(|e| if e & ESCAPE == 0 { e + by16 } else { e });
        let by32 = u32::from(by16);
        let pairs = origin.pairs.map(|e| match e >> COUNT_SHIFT & 3 {
            _ if e & u32::from(ESCAPE) != 0 => e,
            2 => e + by32 + (by32 << 8),
            _ => e + by32,
        });
        let (escape, origin) = (origin.escape, Some((Arc::clone(origin), by)));
        Ok(Self { encode, decode, pairs, window: OnceLock::new(), common, weights, escape, origin })
    }

    /// The tables of `shape` at scale `code`: shifted from those of the origin a whole number
    /// of octaves lower (see [`shifted`](Self::shifted)) where they have the same model, else
    /// built.
    fn build(shape: Shape, code: u16) -> Self {
        let (common, weights) = model(shape, code);
        let (common, weights) = match code.checked_sub(SHIFTED_FROM) {
            Some(above) if above >= 16 => {
                let by = u32::from(above / 16) << shape.d;
                match u8::try_from(by) {
                    Ok(by) => {
                        match Self::shifted(&Self::cached(shape, SHIFTED_FROM + above % 16), common, weights, by) {
                            Ok(tables) => return tables,
                            Err(model) => model,
                        }
                    }
                    Err(_) => (common, weights),
                }
            }
            _ => (common, weights),
        };
        Self::from_model(common, weights)
    }

    /// The window table, built or shifted from the origin's the first time.
    fn window(&self) -> &Window {
        self.window.get_or_init(|| {
            let shifted = self.origin.as_ref().and_then(|(origin, by)| origin.window().shifted(*by));
            shifted.unwrap_or_else(|| Window::new(&self.encode))
        })
    }

    /// The tables of `shape` at scale `code`, from a process-wide cache: building them takes
    /// 11 µs, 3 µs shifted from an origin ([`build`](Self::build)), more than coding a small
    /// sketch. The 16 origins of a shape (the codes from [`SHIFTED_FROM`]) have a cache of 256
    /// slots (those of 16 shapes in turn: UltraLogLog's and HyperLogLog's at p = 10, 12 and 14
    /// do not meet), the other codes one of 512, one slot a scale (within 32 octaves) and
    /// shape, so that the tables shifted from an origin do not evict it. Tables take 15 KB (at
    /// most 11.5 MB for the 768 slots), and the encoder's windows 64 KB each: those of the
    /// origins of each shape that encodes (1 MB a shape), which the other scales share. (An
    /// origin evicted from its slot stays while tables shifted from it do.)
    fn cached(shape: Shape, code: u16) -> Arc<Self> {
        type Slot = Mutex<Option<(u32, Arc<Tables>)>>;
        static ORIGINS: [Slot; 256] = [const { Mutex::new(None) }; 256];
        static CACHE: [Slot; 512] = [const { Mutex::new(None) }; 512];
        let key = u32::from(code) | u32::from(shape.p) << 16 | u32::from(shape.d) << 24 | u32::from(shape.t) << 28;
        let mix = 61 * usize::from(shape.p) + 127 * usize::from(shape.d);
        let slot = match code.checked_sub(SHIFTED_FROM) {
            Some(above) if above < 16 => {
                let shape = 2 * usize::from(shape.p) + usize::from(shape.d / 2);
                &ORIGINS[(usize::from(above) + 16 * shape) % ORIGINS.len()]
            }
            _ => &CACHE[(usize::from(code) + mix) % CACHE.len()],
        };
        // A slot's value is whole whenever it is stored, so a poisoned lock (a panic while it
        // was held, which the code below cannot cause) is used as it is.
        if let Some((k, tables)) = slot.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
            && *k == key
        {
            return Arc::clone(tables);
        }
        let tables = Arc::new(Self::build(shape, code));
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((key, Arc::clone(&tables)));
        tables
    }
}

/// Independent bit streams, each a quarter of the registers: the decoder reads the four
/// together, each lookup independent of the others'.
pub(crate) const STREAMS: usize = 4;

/// Registers a stream are written a block at a time, and the bytes a block's writes may reach
/// from where it starts: its codes take at most 19 bits a register (76 bytes), and the last
/// write 8 bytes more. So a block is written into a fixed array, at offsets masked to 7 bits,
/// without a bounds check a write (measured 10 % of the encoder's time at p = 10 to 14).
const BLOCK: usize = 32;
const BLOCK_ROOM: usize = 128 + 8;
type Block = [u8; BLOCK_ROOM];

/// One stream being written into a buffer: the first bit of each byte its lowest, codewords
/// into a 64-bit buffer (up to four pairs of the window, or two codewords, below 64 bits with
/// the 7 left over), then its whole bytes written out at once (8 bytes written, the next write
/// overlapping the ones not yet whole).
#[derive(Default)]
struct BitWriter {
    buf: u64,
    bits: u32,
    /// Where the current block starts in the region, and its whole bytes written so far.
    start: usize,
    at: usize,
}

impl BitWriter {
    #[inline(always)]
    fn put(&mut self, codeword: u64) {
        self.buf |= u64::from(codeword as u32) << self.bits;
        self.bits += (codeword >> 56) as u32;
    }

    #[inline(always)]
    fn flush(&mut self, out: &mut Block) {
        // The mask changes nothing: a block's bytes are below 77 (see `BLOCK_ROOM`).
        let at = self.at & 127;
        out[at..at + 8].copy_from_slice(&self.buf.to_le_bytes());
        let whole = self.bits / 8;
        self.at += whole as usize;
        self.buf >>= 8 * whole;
        self.bits -= 8 * whole;
    }

    /// Two codewords (at most 38 bits), then the buffer's whole bytes written out.
    #[inline(always)]
    fn put_two(&mut self, first: u64, second: u64, out: &mut Block) {
        self.put(first);
        self.put(second);
        self.flush(out);
    }

    /// A pair's codewords from the window's table.
    #[inline(always)]
    fn put_pair(&mut self, entry: u32) {
        self.buf |= u64::from(entry >> 5) << self.bits;
        self.bits += entry & 31;
    }

    /// Eight registers (the first one in the low byte): four entries of the window's table
    /// (`pairs`, from `base` in each byte), when all eight lie in the window and no pair has an
    /// escape, in one write where they fit below 64 bits, else two; otherwise a register at a
    /// time.
    #[inline(always)]
    fn put_eight(&mut self, eight: u64, base: u64, pairs: &[u32; WINDOW_PAIRS], encode: &[u64; 256], out: &mut Block) {
        // Each byte less the window's first value: one below it borrows from the next, but is
        // then 64 or more itself (the window starts at 192 or below); so the test passes only
        // where no byte borrows and each is its offset in the window, below 64.
        let offsets = eight.wrapping_sub(base);
        if offsets & 0xC0C0_C0C0_C0C0_C0C0 == 0 {
            let pair = |k: u32| pairs[(offsets >> (16 * k) & 0x3F3F) as usize];
            let (a, b, c, d) = (pair(0), pair(1), pair(2), pair(3));
            if (a | b | c | d) & SLOW == 0 {
                self.put_pair(a);
                self.put_pair(b);
                // One write for the four pairs where they fit the buffer, below 64 bits so that
                // the write shifts out at most 7 bytes (all but one step in 10^5 where `n ≫ m`:
                // 8 registers take 32 ± 4 bits, and the buffer held at most 7).
                if self.bits + (c & 31) + (d & 31) >= 64 {
                    self.flush(out);
                }
                self.put_pair(c);
                self.put_pair(d);
                self.flush(out);
                return;
            }
        }
        *self = std::mem::take(self).put_eight_slowly(eight, encode, out);
    }

    /// [`put_eight`](Self::put_eight) a register at a time (out of the loop: taking and
    /// returning the writer keeps it in registers there).
    #[cold]
    #[inline(never)]
    fn put_eight_slowly(mut self, eight: u64, encode: &[u64; 256], out: &mut Block) -> Self {
        let code = |k: u32| encode[(eight >> (8 * k) & 255) as usize];
        for k in [0, 2, 4, 6] {
            self.put_two(code(k), code(k + 1), out);
        }
        self
    }

    /// The array of the next block's writes, in `region`, from where the last block ended.
    fn next_block<'r>(&mut self, region: &'r mut [u8]) -> Option<&'r mut Block> {
        self.start += std::mem::take(&mut self.at);
        region.get_mut(self.start..)?.first_chunk_mut()
    }

    /// The bytes written, the last one padded with zeros.
    fn len(&self) -> usize {
        self.start + self.at + self.bits.div_ceil(8) as usize
    }
}

/// Writes the codewords of `registers` (an even number) into `out`, a block and eight
/// registers at a time, returning the bytes of the stream; `None` if they and a block's room
/// do not fit in `out`. (The last block, of the registers after the whole blocks, may be
/// empty: it still takes a block's room, which the room for a stream allows.)
fn encode(registers: &[u8], tables: &Tables, out: &mut [u8]) -> Option<usize> {
    let (window, encode) = (tables.window(), &tables.encode);
    let (base, pairs) = (u64::from(window.base) * 0x0101_0101_0101_0101, &*window.pairs);
    let mut writer = BitWriter::default();
    let (blocks, rest) = registers.as_chunks::<BLOCK>();
    for block in blocks.iter().map(|b| &b[..]).chain([rest]) {
        let out = writer.next_block(out)?;
        let (eights, rest) = block.as_chunks::<8>();
        for &eight in eights {
            writer.put_eight(u64::from_le_bytes(eight), base, pairs, encode, out);
        }
        for two in rest.chunks_exact(2) {
            writer.put_two(encode[usize::from(two[0])], encode[usize::from(two[1])], out);
        }
    }
    Some(writer.len())
}

/// One stream being read: the bits of `bytes` from the lowest of each byte, a 64-bit buffer
/// at a time (read past the end as zeros), and whether an escaped byte was one with its own
/// codeword. The sparse entries' reader (`sparse::BitReader`) refills the same way, but checks
/// each read against the end, as its reads (unary runs, Rice remainders) are of any length;
/// this one reads past the end as zeros, so the four streams' lockstep loop has no check a
/// register, and [`ended`](Self::ended) checks once where the stream stopped.
struct BitReader<'a> {
    bytes: &'a [u8],
    /// The next byte to load.
    next: usize,
    buf: u64,
    bits: u32,
    escaped_common: bool,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, next: 0, buf: 0, bits: 0, escaped_common: false }
    }

    /// At least 56 bits in the buffer: one 8-byte load where 8 bytes are left (the buffer's
    /// top bits then hold a part of the next byte, loaded again, the same, next time). (The
    /// slow path takes and returns values, not the reader, which then stays in registers.)
    #[inline(always)]
    fn refill(&mut self) {
        if let Some(word) = self.bytes.get(self.next..).and_then(<[u8]>::first_chunk::<8>) {
            self.buf |= u64::from_le_bytes(*word) << self.bits;
            self.next += ((63 - self.bits) / 8) as usize;
            self.bits |= 56;
        } else {
            (self.next, self.buf, self.bits) = refill_at_the_end(self.bytes, self.next, self.buf, self.bits);
        }
    }

    /// Reads one register: a lookup of the next 11 bits, its codeword's length shifted out.
    /// The buffer must hold 11 bits; four registers are read a refill (44 bits at most), and
    /// after an escape its byte (which those 44 bits leave room for) and a refill.
    #[inline(always)]
    fn get(&mut self, tables: &Tables) -> u8 {
        let entry = tables.decode[(self.buf & ((1 << LONGEST) - 1)) as usize];
        let len = u32::from(entry & LENGTH);
        self.buf >>= len;
        self.bits -= len;
        if entry & ESCAPE == 0 {
            return (entry >> 8) as u8;
        }
        let value = self.buf as u8;
        self.buf >>= 8;
        self.bits -= 8;
        self.escaped_common |= tables.encode[usize::from(value)] & ESCAPED == 0;
        self.refill();
        value
    }

    /// Reads one or two registers into `out` at `*at` (which has room for two): a lookup of
    /// the next 11 bits in the pair table. The buffer must hold 11 bits, as for
    /// [`get`](Self::get).
    #[inline(always)]
    fn get_pair(&mut self, tables: &Tables, out: &mut [u8], at: &mut usize) {
        let entry = tables.pairs[(self.buf & ((1 << LONGEST) - 1)) as usize];
        if entry & u32::from(ESCAPE) != 0 {
            out[*at] = self.get(tables);
            *at += 1;
            return;
        }
        let len = entry & u32::from(LENGTH);
        self.buf >>= len;
        self.bits -= len;
        out[*at..*at + 2].copy_from_slice(&[(entry >> 8) as u8, (entry >> 16) as u8]);
        *at += (entry >> COUNT_SHIFT & 3) as usize;
    }

    /// Whether the stream ended where the registers did: in its last byte, its padding zero,
    /// every escaped byte one without a codeword of its own.
    fn ended(&self) -> bool {
        let read = 8 * self.next - self.bits as usize;
        read.div_ceil(8) == self.bytes.len() && self.buf == 0 && !self.escaped_common
    }
}

/// [`BitReader::refill`] within 8 bytes of the end: a byte at a time, zeros past it.
#[cold]
fn refill_at_the_end(bytes: &[u8], mut next: usize, mut buf: u64, mut bits: u32) -> (usize, u64, u32) {
    while bits <= 56 {
        buf |= u64::from(bytes.get(next).copied().unwrap_or(0)) << bits;
        next += 1;
        bits += 8;
    }
    (next, buf, bits)
}

fn invalid(reason: &'static str) -> DecodeError {
    DecodeError::InvalidField { field: "registers", reason }
}

/// Decodes `out.len()` registers (a multiple of `STREAMS`) from the four `streams` of their
/// quarters, refusing streams that do not end exactly where the registers do: four lookups of
/// one or two registers in each stream a refill, the four streams' lookups independent of each
/// other, then the last few registers of each one at a time.
fn decode(streams: [&[u8]; STREAMS], tables: &Tables, out: &mut [u8]) -> Result<(), DecodeError> {
    let quarter = out.len() / STREAMS;
    let mut readers = streams.map(BitReader::new);
    let [w, x, y, z] = &mut readers;
    let mut quarters = out.chunks_exact_mut(quarter);
    let mut next = || quarters.next().unwrap_or_default();
    let (a, b, c, d) = (next(), next(), next(), next());
    let (mut i, mut j, mut k, mut l) = (0, 0, 0, 0);
    // Four lookups write at most 8 registers, and the last may write one past its own.
    while i.max(j).max(k).max(l) + 9 <= quarter {
        w.refill();
        x.refill();
        y.refill();
        z.refill();
        for _ in 0..4 {
            w.get_pair(tables, a, &mut i);
            x.get_pair(tables, b, &mut j);
            y.get_pair(tables, c, &mut k);
            z.get_pair(tables, d, &mut l);
        }
    }
    for (reader, (out, at)) in readers.iter_mut().zip([(a, i), (b, j), (c, k), (d, l)]) {
        for slot in &mut out[at..] {
            reader.refill();
            *slot = reader.get(tables);
        }
    }
    if !readers.iter().all(BitReader::ended) {
        return Err(invalid("a coded stream not ending with its registers"));
    }
    Ok(())
}

/// What a compressed encoding holds after its flags, seed and martingale: a dense sketch's
/// registers entropy-coded, or a sparse sketch's entries gap-coded
/// ([`CodedEntries`](super::sparse::CodedEntries)).
pub(crate) enum Compressed {
    /// A dense sketch's registers.
    Registers(Coded),
    /// A sparse sketch's entries.
    Entries(CodedEntries),
}

impl Compressed {
    /// The bytes [`write`](Self::write) writes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Registers(coded) => coded.len(),
            Self::Entries(coded) => coded.len(),
        }
    }

    /// Writes the coded registers or entries.
    pub(crate) fn write(&self, w: &mut Writer) {
        match self {
            Self::Registers(coded) => coded.write(w),
            Self::Entries(coded) => coded.write(w),
        }
    }

    /// Whether it holds a sparse sketch's entries.
    pub(crate) fn is_sparse(&self) -> bool {
        matches!(self, Self::Entries(_))
    }
}

/// A sketch's registers entropy-coded: the scale code of the model, and the four streams'
/// bytes, one after the other. The part of an encoding after the flags, seed and martingale,
/// shared by UltraLogLog and HyperLogLog.
pub(crate) struct Coded {
    code: u16,
    lens: [usize; STREAMS],
    bytes: Vec<u8>,
}

/// The fewest and the most bytes of a stream of `quarter` registers: every register takes
/// at least a bit and at most the escape and a byte.
fn stream_len_bounds(quarter: usize) -> (usize, usize) {
    (quarter.div_ceil(8), (quarter * LONGEST_FORM as usize).div_ceil(8))
}

impl Coded {
    /// The registers of `shape` (one byte each, a multiple of 8 of them) coded, when that is
    /// shorter than `plain_len` (the plain encoding of the registers): not for a crafted or
    /// saturated sketch the model fits badly.
    pub(crate) fn of(registers: &[u8], shape: Shape, plain_len: usize) -> Option<Self> {
        let code = code_of(registers, shape);
        let tables = Tables::cached(shape, code);
        let quarter = registers.len() / STREAMS;
        // The streams one after the other, into room for what is kept: a coded form shorter
        // than `plain_len` (and a block's writes past it). Each byte is written before it is
        // read, so the room need not be zeroed, but it is, as safe code must.
        let mut bytes = vec![0u8; plain_len + BLOCK_ROOM];
        let mut lens = [0; STREAMS];
        let mut end = 0;
        for (s, quarter) in registers.chunks_exact(quarter.max(1)).enumerate().take(STREAMS) {
            lens[s] = encode(quarter, &tables, bytes.get_mut(end..)?)?;
            end += lens[s];
        }
        bytes.truncate(end);
        let coded = Self { code, lens, bytes };
        (coded.len() < plain_len).then_some(coded)
    }

    /// The bytes [`write`](Self::write) writes.
    pub(crate) fn len(&self) -> usize {
        2 + self.lens[..STREAMS - 1].iter().map(|&n| varint_len(n as u64)).sum::<usize>() + self.bytes.len()
    }

    /// Writes the model's scale code (u16), the lengths in bytes of the first three streams
    /// (varints; the last one's is what is left), and the streams' bytes.
    pub(crate) fn write(&self, w: &mut Writer) {
        w.put_bytes(&self.code.to_le_bytes());
        for &n in &self.lens[..STREAMS - 1] {
            w.put_varint(n as u64);
        }
        w.put_bytes(&self.bytes);
    }

    /// Reads the head of what [`write`](Self::write) wrote, to the end of the body: the
    /// registers of `shape` coded, to be decoded by [`CodedStreams::decode_into`] into the
    /// caller's registers. Every length is checked here, before the caller allocates them
    /// (each register takes at least a bit, so `m` registers need `m/8` bytes), and only what
    /// [`of`](Self::of) writes for a plain encoding of `plain_len` bytes is accepted: a shorter
    /// length here, the scale of the decoded registers there. The caller validates the
    /// registers themselves.
    pub(crate) fn open<'a>(
        r: &mut Reader<'a>,
        shape: Shape,
        plain_len: usize,
    ) -> Result<CodedStreams<'a>, DecodeError> {
        let too_long = DecodeError::InvalidField { field: "coded length", reason: "not what the registers can take" };
        let code = u16::from_le_bytes(r.array::<2>()?);
        if code > MOST_CODE {
            return Err(DecodeError::InvalidField { field: "scale", reason: "above 2^64 items a register" });
        }
        let quarter = shape.registers() / STREAMS;
        let (fewest, most) = stream_len_bounds(quarter);
        let mut lens = [0usize; STREAMS];
        let mut len = 2;
        for slot in &mut lens[..STREAMS - 1] {
            let n = r.varint()?;
            if !(fewest as u64..=most as u64).contains(&n) {
                return Err(too_long);
            }
            *slot = n as usize;
            len += varint_len(n);
        }
        let first: usize = lens.iter().sum();
        let last = r.rest().len().checked_sub(first).ok_or(too_long.clone())?;
        if !(fewest..=most).contains(&last) {
            return Err(too_long);
        }
        lens[STREAMS - 1] = last;
        len += first + last;
        if len >= plain_len {
            return Err(DecodeError::InvalidField { field: "coded registers", reason: "not shorter than plain" });
        }
        let mut body = r.take(first + last)?;
        let streams: [&[u8]; STREAMS] = std::array::from_fn(|s| {
            let (head, tail) = body.split_at(lens[s]);
            body = tail;
            head
        });
        Ok(CodedStreams { shape, code, streams })
    }
}

/// A sketch's coded registers, their lengths checked ([`Coded::open`]), not yet decoded.
pub(crate) struct CodedStreams<'a> {
    shape: Shape,
    code: u16,
    streams: [&'a [u8]; STREAMS],
}

impl CodedStreams<'_> {
    /// Decodes the registers into `out` (one byte each, all of the shape's), checking that
    /// they are at the scale they were coded at, as the encoder gives them.
    pub(crate) fn decode_into(self, out: &mut [u8]) -> Result<(), DecodeError> {
        debug_assert_eq!(out.len(), self.shape.registers());
        decode(self.streams, &Tables::cached(self.shape, self.code), out)?;
        if self.code != code_of(out, self.shape) {
            return Err(DecodeError::InvalidField {
                field: "coded registers",
                reason: "not at the scale the encoder gives them",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// Our exponential against the standard library's, to a few ulps, over its whole range.
    #[test]
    fn exp_is_accurate_everywhere() {
        let mut x = -745.0;
        while x < 709.0 {
            let (ours, std) = (exp(x), x.exp());
            // Positive floats order as their bits: the distance in ulps, subnormals included.
            let ulps = ours.to_bits().abs_diff(std.to_bits());
            assert!(ulps <= 4, "{x}: {ours} against {std}, {ulps} ulps apart");
            x += 0.37;
        }
        assert_eq!((exp(-1000.0), exp(1000.0), exp(0.0)), (0.0, f64::MAX, 1.0));
    }

    /// Pinned bits: a change to the exponential or the scale changes every compressed sketch.
    #[test]
    fn exp_and_scale_are_pinned() {
        assert_eq!(exp(-1.0).to_bits(), 0x3FD7_8B56_362C_EF38);
        assert_eq!(exp(-0.001).to_bits(), 0x3FEF_F7CF_E56F_1A9E);
        assert_eq!(lambda_of(CODE_OF_ONE as u16), 1.0);
        assert_eq!(lambda_of((CODE_OF_ONE + 10.0 * STEPS_PER_OCTAVE) as u16), 1024.0);
        assert_eq!(lambda_of(MOST_CODE), scale_by_power_of_two(1.0, 64));
        assert_eq!((log2(1.0), log2(1024.0), log2(0.5)), (0.0, 10.0, -1.0));
        assert_eq!(log2(3.0).to_bits(), 0x3FF9_5C01_A39F_BD68);
        // Empty registers: no scale; every register at the top: the largest.
        assert_eq!(code_of(&[0; 64], Shape { p: 6, t: 0, d: 2 }), 0);
        assert_eq!(code_of(&[255; 64], Shape { p: 6, t: 0, d: 2 }), MOST_CODE);
    }

    /// Our logarithm against the standard library's, to a few ulps, over the whole range.
    #[test]
    fn log2_is_accurate_everywhere() {
        // From the least subnormal up, by a factor that moves even the subnormals.
        let mut x = 5e-324;
        while x < 1e308 {
            let (ours, std) = (log2(x), x.log2());
            assert!((ours - std).abs() <= 4.0 * f64::EPSILON * std.abs().max(1.0), "{x}: {ours} against {std}");
            x *= 3.7;
        }
        assert!(log2(0.0).is_nan() && log2(-1.0).is_nan() && log2(f64::NAN).is_nan());
    }

    /// Huffman's code lengths (two lightest merged, ties to the earlier): the reference that
    /// package-merge must match wherever it fits in [`LONGEST`] bits.
    fn huffman_lengths(weights: &[u64]) -> Vec<u32> {
        let mut nodes: Vec<(u64, Vec<usize>)> = weights.iter().enumerate().map(|(i, &w)| (w, vec![i])).collect();
        let mut lengths = vec![0; weights.len()];
        while nodes.len() > 1 {
            nodes.sort_by_key(|n| std::cmp::Reverse(n.0));
            let (a, b) = (nodes.pop().expect("two"), nodes.pop().expect("two"));
            a.1.iter().chain(&b.1).for_each(|&s| lengths[s] += 1);
            nodes.push((a.0 + b.0, [a.1, b.1].concat()));
        }
        lengths
    }

    fn cost(weights: &[u64], lengths: &[u32]) -> u128 {
        weights.iter().zip(lengths).map(|(&w, &l)| u128::from(w) * u128::from(l)).sum()
    }

    /// Package-merge gives complete codes of at most 11 bits, as short as Huffman's where
    /// Huffman's fit and never shorter (Huffman's are optimal without the limit): random
    /// weights, from flat to spanning 2^40, and from 2 symbols to 150.
    #[test]
    fn package_merge_is_optimal_within_its_limit() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        let (mut fitting, mut limited) = (0, 0);
        for _ in 0..400 {
            let n = rng.random_range(2..150);
            let spread = rng.random_range(1..40);
            let weights: Vec<u64> =
                (0..n).map(|_| 1 + (rng.random::<u64>() >> (24 + rng.random_range(0..spread)))).collect();
            let (ours, huffman) = (code_lengths(&weights), huffman_lengths(&weights));
            assert!(ours.iter().all(|&l| (1..=LONGEST).contains(&l)));
            let kraft: u64 = ours.iter().map(|&l| 1u64 << (LONGEST - l)).sum();
            assert_eq!(kraft, 1 << LONGEST, "complete");
            if huffman.iter().all(|&l| l <= LONGEST) {
                assert_eq!(cost(&weights, &ours), cost(&weights, &huffman));
                fitting += 1;
            } else {
                assert!(cost(&weights, &ours) >= cost(&weights, &huffman));
                limited += 1;
            }
        }
        assert!(fitting > 50 && limited > 50, "both cases met: {fitting} and {limited}");
    }

    /// Every code of every shape and scale is a complete prefix code whose tables agree: each
    /// codeword's decoding slots read its value and length, and the slots are exactly filled
    /// (so every bit string reads as codewords); escaped forms for every other byte; and its
    /// mean length within Gallager's bound of the entropy, `H + p_max + 0.086`, plus the 8 bits
    /// each rare value adds.
    #[test]
    fn every_code_is_complete_and_near_the_entropy() {
        // Every code built, byte for byte: what every platform must build alike.
        let mut digest = Vec::new();
        for (p, d) in (3..=26u8).map(|p| (p, 2)).chain((4..=18).map(|p| (p, 0))) {
            let shape = Shape { p, t: 0, d };
            // Every scale at three precisions; elsewhere one in 5 (coprime with the 16 steps
            // of an octave: every fraction of an octave met).
            let step = if [3, 14, 26].contains(&p) || (d == 0 && p == 12) { 1 } else { 5 };
            for code in (0..=MOST_CODE).step_by(step) {
                let tables = Tables::new(shape, code);
                let mut filled = 0u32;
                let (mut mean, mut entropy, mut most, mut rare) = (0.0, 0.0, 0.0f64, 0.0);
                let (values, probabilities) = probabilities(shape, code);
                let total: f64 = probabilities.iter().sum();
                for v in 0..=255u8 {
                    let entry = tables.encode[usize::from(v)];
                    let (word, len) = (entry as u32, (entry >> 56) as u32);
                    assert!((1..=LONGEST_FORM).contains(&len), "p {p}, d {d}, code {code}, value {v}");
                    if entry & ESCAPED == 0 {
                        assert!(len <= LONGEST);
                        for rest in 0..1 << (LONGEST - len) {
                            assert_eq!(tables.decode[(word | rest << len) as usize], u16::from(v) << 8 | len as u16);
                        }
                        filled += 1 << (LONGEST - len);
                    } else {
                        let escape_len = len - 8;
                        let slot = (word & ((1 << escape_len) - 1)) as usize;
                        assert_eq!(tables.decode[slot], ESCAPE | escape_len as u16);
                        assert_eq!(word >> escape_len, u32::from(v));
                    }
                    if let Some(i) = values.iter().position(|&x| x == v) {
                        let q = probabilities[i] / total;
                        mean += q * f64::from(len);
                        if q > 0.0 {
                            entropy -= q * q.log2();
                        }
                        most = most.max(q);
                        rare += if entry & ESCAPED != 0 { q } else { 0.0 };
                    }
                }
                // Each pair entry is what two lookups read: the first codeword, and the second
                // where it is whole within the 11 bits and not an escape.
                for (bits, &pair) in tables.pairs.iter().enumerate() {
                    let first = tables.decode[bits];
                    let len = u32::from(first & LENGTH);
                    let second = tables.decode[bits >> len];
                    let both = second & ESCAPE == 0 && len + u32::from(second & LENGTH) <= LONGEST;
                    let expected = if first & ESCAPE != 0 {
                        u32::from(first)
                    } else if both {
                        u32::from(first >> 8) << 8
                            | u32::from(second >> 8) << 16
                            | 2 << COUNT_SHIFT
                            | (len + u32::from(second & LENGTH))
                    } else {
                        u32::from(first >> 8) << 8 | 1 << COUNT_SHIFT | len
                    };
                    assert_eq!(pair, expected, "p {p}, d {d}, code {code}, bits {bits:#x}");
                }
                digest.extend(tables.encode.iter().flat_map(|e| e.to_le_bytes()));
                let escape_len =
                    u32::from(tables.decode.iter().find(|&&e| e & ESCAPE != 0).expect("an escape") & LENGTH);
                filled += 1 << (LONGEST - escape_len);
                assert_eq!(filled, 1 << LONGEST, "p {p}, d {d}, code {code}: complete and prefix-free");
                assert!(
                    mean <= entropy + most + 0.086 + 8.0 * rare + 1e-9,
                    "p {p}, d {d}, code {code}: {mean} bits against {entropy}"
                );
            }
        }
        // A change here changes stored sketches' bytes (or another platform builds other codes).
        assert_eq!(crate::hash::hash_bytes(&digest, 0), 6814579424233983649, "the codes of every shape and scale");
    }

    /// Registers of `shape` drawn from its distribution at scale `code` (or, `uniform`, over
    /// every value it holds).
    fn registers_at(shape: Shape, code: u16, uniform: bool, rng: &mut impl RngExt) -> Vec<u8> {
        let (values, probabilities) = probabilities(shape, code);
        let valid: Vec<u8> = (0..=255u8).filter(|&r| shape.is_valid(u64::from(r))).collect();
        let total: f64 = probabilities.iter().sum();
        (0..shape.registers())
            .map(|_| {
                if uniform {
                    return valid[rng.random_range(0..valid.len())];
                }
                let mut x = rng.random::<f64>() * total;
                for (&v, &p) in values.iter().zip(&probabilities) {
                    x -= p;
                    if x < 0.0 {
                        return v;
                    }
                }
                values[values.len() - 1]
            })
            .collect()
    }

    /// The streams of `registers`, in room for the worst case (an escape and a byte each).
    fn streams_of(registers: &[u8], tables: &Tables) -> [Vec<u8>; STREAMS] {
        let quarter = registers.len() / STREAMS;
        let room = (quarter * LONGEST_FORM as usize).div_ceil(8) + BLOCK_ROOM;
        std::array::from_fn(|s| {
            let mut stream = vec![0; room];
            let len = encode(&registers[s * quarter..(s + 1) * quarter], tables, &mut stream).expect("the room");
            stream.truncate(len);
            stream
        })
    }

    /// The encoder, eight registers at a time through the window's pairs where it can, writes
    /// each register's codeword in turn, as a writer a bit at a time does: for registers drawn
    /// from the model, uniformly, and with values at and beside the window's edges (and the
    /// extremes) in random places; at precisions whose quarters are shorter than a step of
    /// eight, one step, one [`BLOCK`], or many.
    #[test]
    fn the_encoder_writes_each_codeword_in_turn() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(31);
        for (p, d) in [(3u8, 2u8), (4, 2), (5, 2), (7, 2), (10, 2), (6, 0), (9, 0)] {
            let shape = Shape { p, t: 0, d };
            let valid: Vec<u8> = (0..=255u8).filter(|&r| shape.is_valid(u64::from(r))).collect();
            for trial in 0..60 {
                let code = rng.random_range(0..=MOST_CODE);
                let tables = Tables::new(shape, code);
                let base = tables.window().base;
                let edges: Vec<u8> = [base.wrapping_sub(1), base, base + 63, base.wrapping_add(64), 0, 255]
                    .into_iter()
                    .filter(|&r| shape.is_valid(u64::from(r)))
                    .collect();
                let mut registers = registers_at(shape, code, trial % 4 == 0, &mut rng);
                if trial % 4 == 1 {
                    // Uniform over the window's common values: long codewords through the
                    // window, four pairs of up to 88 bits a step.
                    let common: Vec<u8> = (base..=base.saturating_add(63))
                        .filter(|&r| shape.is_valid(u64::from(r)) && tables.encode[usize::from(r)] & ESCAPED == 0)
                        .collect();
                    registers.iter_mut().for_each(|r| *r = common[rng.random_range(0..common.len())]);
                }
                for _ in 0..rng.random_range(0..=registers.len() / 8) {
                    let at = rng.random_range(0..registers.len());
                    registers[at] = edges[rng.random_range(0..edges.len())];
                }
                assert!(registers.iter().all(|r| valid.contains(r)));
                let quarter = registers.len() / STREAMS;
                for (s, stream) in streams_of(&registers, &tables).iter().enumerate() {
                    let mut bits = Vec::new();
                    for &r in &registers[s * quarter..(s + 1) * quarter] {
                        let entry = tables.encode[usize::from(r)];
                        bits.extend((0..entry >> 56).map(|k| entry >> k & 1 == 1));
                    }
                    let bytes: Vec<u8> = bits
                        .chunks(8)
                        .map(|byte| byte.iter().rev().fold(0, |b, &bit| b << 1 | u8::from(bit)))
                        .collect();
                    assert_eq!(stream, &bytes, "p {p}, d {d}, code {code}, base {base}, stream {s}");
                }
            }
        }
    }

    /// Registers drawn from the model (any scale near theirs) and uniformly over every value
    /// (escapes everywhere) read back; and a stream with a bit flipped, a byte dropped or
    /// added is refused, or read as registers whose streams are exactly those bytes: one coded
    /// form a state.
    #[test]
    fn streams_read_back_and_only_as_written() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(20);
        for (p, d) in [(3u8, 2u8), (4, 2), (8, 2), (12, 2), (6, 0), (11, 0)] {
            let shape = Shape { p, t: 0, d };
            for trial in 0..300 {
                let code = rng.random_range(0..=MOST_CODE);
                let tables = Tables::new(shape, code);
                let registers = registers_at(shape, code, trial % 3 == 0, &mut rng);
                let streams = streams_of(&registers, &tables);
                let mut decoded = vec![0u8; registers.len()];
                decode(std::array::from_fn(|s| &streams[s][..]), &tables, &mut decoded).expect("its own streams");
                assert_eq!(decoded, registers, "p {p}, d {d}, code {code}");
                let mut changed = streams.clone();
                let s = rng.random_range(0..STREAMS);
                let at = rng.random_range(0..=changed[s].len());
                match rng.random_range(0..3) {
                    0 if at < changed[s].len() => changed[s][at] ^= 1 << rng.random_range(0..8),
                    1 if at < changed[s].len() => drop(changed[s].remove(at)),
                    _ => changed[s].insert(at, rng.random()),
                }
                if decode(std::array::from_fn(|s| &changed[s][..]), &tables, &mut decoded).is_ok() {
                    assert_eq!(streams_of(&decoded, &tables), changed, "p {p}, d {d}, code {code}");
                }
            }
        }
    }

    /// `Coded::of` codes the registers exactly when that is shorter than the plain length it
    /// is given: for registers drawn from the model, uniformly (escapes) and saturated, and
    /// plain lengths around the coded one (the encoder's room ends a block past it).
    #[test]
    fn coded_only_when_shorter() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(43);
        for (p, d) in [(3u8, 2u8), (4, 2), (6, 2), (9, 2), (12, 2), (5, 0), (10, 0)] {
            let shape = Shape { p, t: 0, d };
            let worst = shape.registers() * LONGEST_FORM as usize / 8 + 64;
            for trial in 0..30 {
                let code = rng.random_range(0..=MOST_CODE);
                let mut registers = registers_at(shape, code, trial % 3 == 0, &mut rng);
                if trial % 5 == 4 {
                    let top = (0..=255u8).rev().find(|&r| shape.is_valid(u64::from(r))).expect("a valid value");
                    registers.iter_mut().for_each(|r| *r = top);
                }
                let len = Coded::of(&registers, shape, worst).expect("shorter than the worst case").len();
                for plain_len in len.saturating_sub(40)..len + 40 {
                    let coded = Coded::of(&registers, shape, plain_len);
                    assert_eq!(coded.is_some(), len < plain_len, "{shape:?}, code {code}, {len} against {plain_len}");
                    assert!(coded.is_none_or(|c| c.len() == len));
                }
            }
        }
    }

    /// The coded bits of registers drawn from the model are its mean codeword length a
    /// register, within 5 standard deviations (their variance `m·Var[len]`): the code costs
    /// what its lengths say, and nothing is lost to the streams but their padding.
    #[test]
    fn coded_bits_are_the_mean_codeword_length() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        for (p, d) in [(14u8, 2u8), (12, 0)] {
            let shape = Shape { p, t: 0, d };
            for lambda in [0.5f64, 2.0, 10.0, 100.0, 1e4, 1e8] {
                let code = (log2(lambda) * STEPS_PER_OCTAVE + CODE_OF_ONE).round() as u16;
                let tables = Tables::new(shape, code);
                let (values, probabilities) = probabilities(shape, code);
                let total: f64 = probabilities.iter().sum();
                let len = |v: u8| (tables.encode[usize::from(v)] >> 56) as f64;
                let mean: f64 = values.iter().zip(&probabilities).map(|(&v, &q)| q / total * len(v)).sum();
                let second: f64 = values.iter().zip(&probabilities).map(|(&v, &q)| q / total * len(v).powi(2)).sum();
                let m = shape.registers() as f64;
                let sigma = (m * (second - mean * mean)).sqrt();
                let registers = registers_at(shape, code, false, &mut rng);
                let bits = 8.0 * streams_of(&registers, &tables).iter().map(Vec::len).sum::<usize>() as f64;
                // Padding: fewer than 8 bits a stream.
                let excess = bits - m * mean;
                assert!(
                    excess > -5.0 * sigma && excess < 5.0 * sigma + 8.0 * STREAMS as f64,
                    "p {p}, λ {lambda}: {bits} bits against {} ± {sigma}",
                    m * mean
                );
            }
        }
    }

    /// The cache gives the tables it would build, for shapes and scales that share its slots;
    /// and, from an octave above [`SHIFTED_FROM`] to near the top level, those tables are
    /// shifted from the ones an octave or more lower (the same code, with the same window's
    /// coded bits): at every scale code of four shapes, and every seventh of the others.
    #[test]
    fn the_cache_gives_the_tables_of_its_key() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(41);
        for _ in 0..2 {
            for (p, d, code) in [(10u8, 2u8, 1100u16), (10, 2, 1356), (11, 2, 1100), (10, 0, 1100), (3, 2, 0)] {
                let shape = Shape { p, t: 0, d };
                let (cached, built) = (Tables::cached(shape, code), Tables::new(shape, code));
                let same =
                    cached.encode == built.encode && cached.decode == built.decode && cached.pairs == built.pairs;
                assert!(same, "p {p}, d {d}, code {code}");
            }
        }
        let shapes = (3..=26u8).flat_map(|p| [Shape { p, t: 0, d: 2 }, Shape { p, t: 0, d: 0 }]);
        for shape in shapes {
            let every = if matches!(shape.p, 4 | 12 | 26) { 1 } else { 7 };
            let mut shifted = 0;
            for code in (0..=MOST_CODE).step_by(every) {
                let (cached, built) = (Tables::cached(shape, code), Tables::new(shape, code));
                let same =
                    cached.encode == built.encode && cached.decode == built.decode && cached.pairs == built.pairs;
                assert!(same, "{shape:?}, code {code}");
                if cached.origin.is_some() {
                    shifted += every;
                    // The window, shifted from the origin's, is the one of these codes.
                    let window = cached.window();
                    let base = usize::from(window.base);
                    for (r, s) in (0..64).flat_map(|r| (0..64).map(move |s| (r, s))) {
                        let entry = Window::entry(cached.encode[base + r], cached.encode[base + s]);
                        assert_eq!(window.pairs[r + 256 * s], entry, "{shape:?}, code {code}, base {base}");
                    }
                }
                if cached.origin.is_some() && shape.p <= 8 && code % 5 == 0 {
                    let registers = registers_at(shape, code, false, &mut rng);
                    assert_eq!(
                        streams_of(&registers, &cached),
                        streams_of(&registers, &built),
                        "{shape:?}, code {code}"
                    );
                }
            }
            // From λ = 2^8 to where the top level L = 64 − p weighs in the model (`λ·2^-L`
            // above 2^-16): at least the octaves from 2^8 up to 2^(L − 24).
            let octaves = (64 - u32::from(shape.p)).saturating_sub(24 + 8) as usize;
            assert!(shifted >= 16 * octaves, "{shape:?}: {shifted} codes shifted");
        }
    }
}
