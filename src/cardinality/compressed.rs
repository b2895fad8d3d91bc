//! Entropy-coded registers: the compressed encoding of UltraLogLog's dense registers.
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
//! least 1). The encoder writes `λ` quantized to 1/256 of an octave (from a rough estimate the
//! registers give, [`code_of`]), and codes the registers against that distribution with four
//! interleaved range asymmetric-numeral-systems coders, at about the registers' entropy: 4 bits
//! a register where `n ≫ m` instead of 8.
//!
//! The coders' words are those of the `constriction` crate's `DefaultAnsCoder` (64-bit state,
//! 32-bit words, 14-bit weights), and the tests check both ways, word for word, against it. We
//! code them ourselves because its encoder divides the state by the symbol's weight at every
//! symbol, 3.2 ns a register here, where [`EncoderSymbol`]'s multiply by a reciprocal takes
//! 1.5; and our decoder reads a byte table filled by ranges instead of building its 16 Ki-entry
//! lookup model (1.3 against 1.5 ns a register, and 0.4 against 0.9 µs a table).
//!
//! The decoder computes the same distribution from the same code, and checks that the code is
//! the one the encoder derives from the decoded registers, so both must come out the same to
//! the bit on every platform: the weights come from [`exp`] and the code from [`log2`], built
//! from the correctly rounded IEEE operations only (the standard library's `exp` and `log2`
//! may differ between platforms by an ulp), and everything is integers from there on.

use super::register_sums::histogram;
use super::registers::Shape;
use super::sparse::CodedEntries;
use crate::codec::{Reader, Writer, varint_len};
use crate::core::DecodeError;

/// Bits of the coder's probabilities: the weights sum to `2^14`. Measured against 16 bits: a
/// coded sketch 0.4 % larger, and a decoding table a quarter the size (16 Ki entries, built
/// for each sketch), which made decoding 1.3 to 2 times faster (with constriction's decoder,
/// before ours).
const PRECISION: usize = 14;
const TOTAL: u32 = 1 << PRECISION;
/// The most weight one register value gets, 7/8 of the total: every register then costs at
/// least `log2(8/7)` = 0.19 bits, except the runs of the lowest symbol (the empty register) at
/// the end of a coder's stream, which cost none (a coder starts at state 0). The decoder
/// refuses streams shorter than that bound, so a short input cannot claim many registers; the
/// encoder writes the plain form of the rare sketch that codes shorter (every set register at
/// the lowest indices). A dense sketch's commonest register, the empty one just after it turns
/// dense, has a probability of about 0.83, under the cap.
const MAX_WEIGHT: u32 = TOTAL / 8 * 7;
/// The least bits a register costs: `−log2(MAX_WEIGHT / TOTAL)`, rounded down.
const MIN_BITS_PER_REGISTER: f64 = 0.19;
/// Steps of the scale code per octave of `λ`, and the code of `λ = 1`.
const STEPS_PER_OCTAVE: f64 = 256.0;
const CODE_OF_ONE: f64 = 64.0 * STEPS_PER_OCTAVE;

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

/// How many registers hold each byte, counted in interleaved histograms ([`histogram`]): the
/// one pass over the registers that the scale code and the encoder read.
fn byte_counts(registers: &[u8]) -> [u32; 256] {
    histogram::<u8, 256>(registers, usize::from)
}

/// The scale code of dense registers of `shape` (one byte each) holding `counts` of each byte:
/// `round(256·log2 λ̂) + 256·64`, clamped to `u16`, for a rough estimate `λ̂` of the items per
/// register. The decoder recomputes it to accept only the encoder's choice, so it must come
/// out the same on every platform: the estimate is HyperLogLog's raw one (`α·m / Σ 2^-u`, the
/// sum exact in integers) or, while it is below `2.5` and some register is empty, linear
/// counting (`ln(m/V)`, `V` the empty registers), and the logarithm is [`log2`], from IEEE
/// basic operations only. Its error of a few percent costs the coder almost nothing: the model
/// is flat near its optimum.
fn code_of(counts: &[u32; 256], shape: Shape) -> u16 {
    // Registers by maximum u (at most 63), then Σ 2^(64−u) over them: at most 2^26
    // registers, so the sum stays below 2^91.
    let mut by_maximum = [0u64; 64];
    for (r, &n) in counts.iter().enumerate() {
        by_maximum[(r >> shape.d) & 63] += u64::from(n);
    }
    let sum: u128 = by_maximum.iter().enumerate().map(|(u, &n)| u128::from(n) << (64 - u)).sum();
    let (m, empty) = (by_maximum.iter().sum::<u64>() as f64, by_maximum[0]);
    let inverse_sum = m / (sum as f64 / scale_by_power_of_two(1.0, 64));
    let raw = 0.7213 / (1.0 + 1.079 / m) * inverse_sum;
    let lambda = if raw < 2.5 && empty > 0 { (log2(m) - log2(empty as f64)) * std::f64::consts::LN_2 } else { raw };
    if lambda.is_nan() || lambda <= 0.0 {
        return 0;
    }
    let code = (log2(lambda) * STEPS_PER_OCTAVE + CODE_OF_ONE).round();
    code.clamp(0.0, f64::from(u16::MAX)) as u16
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

/// The `λ` of a scale code: `2^((code − 256·64)/256)`, from [`exp`].
fn lambda_of(code: u16) -> f64 {
    let octaves = (f64::from(code) - CODE_OF_ONE) / STEPS_PER_OCTAVE;
    let whole = octaves.floor();
    scale_by_power_of_two(exp((octaves - whole) * std::f64::consts::LN_2), whole as i32)
}

/// The coding model of one shape at one scale: the register values the shape can hold, in
/// ascending order (the symbols), their integer weights (at least 1, at most [`MAX_WEIGHT`],
/// summing to `2^14`), and the symbol of each register byte.
pub(crate) struct Model {
    values: Vec<u8>,
    weights: Vec<u16>,
    symbol_of: [u16; 256],
}

/// No symbol: a byte the shape never holds.
const NONE: u16 = u16::MAX;

impl Model {
    /// The model of UltraLogLog registers (`shape.t == 0`, `shape.d == 2`) or of HyperLogLog's
    /// (`d == 0`: the maximum alone) at scale `code`.
    pub(crate) fn new(shape: Shape, code: u16) -> Self {
        debug_assert!(shape.t == 0 && (shape.d == 2 || shape.d == 0));
        let lambda = lambda_of(code);
        let top = shape.max_value(); // L + 1, at most 62
        let geometric = top - 1; // L
        // A value u ≥ 1 whose probability is below 2^-16 takes the least weight, 1, whatever
        // it is (1 + ⌊p·(2^14 − n)⌋), so only the others are computed, the same to the bit:
        // those seen by at least 2^-16 items on average (`x_u = λ·2^-u`, the geometric tail
        // counting as level L) and not so often that a value above them is sure (`x_u < 40`:
        // then nothing above u occurs with probability e^-40). They, the values in their
        // history (`x_v ≤ 4·x_u`) and the empty register read e^(−x_j), so only these are
        // computed: two dozen levels instead of every one.
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
        let mut values = Vec::with_capacity(256);
        let mut probabilities = Vec::with_capacity(256);
        for r in 0..=255u64 {
            if !shape.is_valid(r) {
                continue;
            }
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
        let weights = quantize(&probabilities);
        let mut symbol_of = [NONE; 256];
        for (s, &v) in values.iter().enumerate() {
            symbol_of[usize::from(v)] = s as u16;
        }
        Self { values, weights, symbol_of }
    }
}

/// Integer weights for `probabilities` (each at least 0, summing to about 1): each at least 1
/// and at most [`MAX_WEIGHT`], summing to `2^14` exactly, in integers after one rounding each.
fn quantize(probabilities: &[f64]) -> Vec<u16> {
    let n = probabilities.len() as u32;
    let free = f64::from(TOTAL - n);
    // Each rounded down, then capped.
    let mut weights: Vec<u16> =
        probabilities.iter().map(|&p| (1 + (p.clamp(0.0, 1.0) * free) as u32).min(MAX_WEIGHT) as u16).collect();
    // Then the rest given to (or the excess taken from) the heaviest weights, in order of
    // weight and then of value: integers only, the same everywhere. Nearly always the
    // heaviest takes it all; each later pass visits the next heaviest.
    let mut sum: u32 = weights.iter().map(|&w| u32::from(w)).sum();
    let mut visited = [false; 256];
    while sum != TOTAL {
        // The heaviest weight not visited, the first of equal ones.
        let mut heaviest = None;
        for (i, &w) in weights.iter().enumerate() {
            if !visited[i] && heaviest.is_none_or(|h: usize| w > weights[h]) {
                heaviest = Some(i);
            }
        }
        let Some(i) = heaviest else {
            break;
        };
        visited[i] = true;
        let w = u32::from(weights[i]);
        let w = if sum < TOTAL {
            let add = (TOTAL - sum).min(MAX_WEIGHT - w);
            sum += add;
            w + add
        } else {
            let take = (sum - TOTAL).min(w - 1);
            sum -= take;
            w - take
        };
        weights[i] = w as u16;
    }
    debug_assert_eq!(sum, TOTAL);
    weights
}

/// How the encoder codes one register value of weight `f` and cumulative weight `c`, without a
/// division: the quotient `⌊y/f⌋` as `⌊(y + ⌊y·r/2^64⌋) / 2^s⌋`, with `s = ⌈log2 f⌉` and
/// `r = ⌈2^(64+s)/f⌉ − 2^64` (Granlund and Montgomery's multiply-high by a rounded-up
/// reciprocal). That is the exact quotient for every state `y < f·2^50`, which the
/// renormalization keeps: `2^64 + r = 2^(64+s)/f + e` with `0 ≤ e < 1`, so the sum is
/// `⌊y/f + y·e/2^(64+s)⌋`, whose second term is below `f·2^50/2^(64+s) ≤ 2^-14 ≤ 1/f`, too
/// little to carry a remainder of at most `(f−1)/f` past the next integer; and the sum is
/// below `2^(50+s) − 2^s/f + f/2^14 ≤ 2^64`, so it fits a word.
#[derive(Clone, Copy, Default)]
struct EncoderSymbol {
    /// `f·2^50`: a state at or above it first moves its low word out.
    spill_at: u64,
    /// `r`, the reciprocal's low 64 bits.
    reciprocal: u64,
    /// `2^14 − f`: the new state `q·2^14 + (y − q·f) + c` is `y + q·(2^14 − f) + c`.
    complement: u32,
    /// `c`.
    cumulative: u32,
    /// `s`.
    shift: u32,
}

impl EncoderSymbol {
    fn new(weight: u32, cumulative: u32) -> Self {
        let shift = u32::BITS - (weight - 1).leading_zeros();
        Self {
            spill_at: u64::from(weight) << (64 - PRECISION),
            reciprocal: Self::reciprocal(weight, shift),
            complement: TOTAL - weight,
            cumulative,
            shift,
        }
    }

    /// `r = ⌈2^(64+s)/f⌉ − 2^64` for `f = weight ≤ 2^14`, `s = ⌈log2 f⌉`: with `a = 2^s − f`
    /// (below `f`), `2^(64+s)/f = 2^64 + a·2^64/f`, so `r = ⌈a·2^64/f⌉`, by long division in
    /// two 32-bit digits (each remainder below `f`, so every step fits 64 bits; measured 5.7
    /// against 10.8 ns for one division of `u128`s).
    fn reciprocal(weight: u32, shift: u32) -> u64 {
        let (f, a) = (u64::from(weight), (1u64 << shift) - u64::from(weight));
        let (high, rest) = ((a << 32) / f, (a << 32) % f);
        let (low, rest) = ((rest << 32) / f, (rest << 32) % f);
        (high << 32) + low + u64::from(rest != 0)
    }

    /// Codes the symbol onto `state`, moving the state's low word to `out[*at]` first when it
    /// is full (and advancing `at`). `out` has room for a word from every symbol (a symbol
    /// moves at most one).
    #[inline(always)]
    fn put(&self, state: &mut u64, out: &mut [u32], at: &mut usize) {
        let full = *state >= self.spill_at;
        if let Some(slot) = out.get_mut(*at) {
            *slot = *state as u32;
        }
        *at += usize::from(full);
        let y = if full { *state >> 32 } else { *state };
        let high = ((u128::from(y) * u128::from(self.reciprocal)) >> 64) as u64;
        let quotient = (high + y) >> self.shift;
        *state = y + quotient * u64::from(self.complement) + u64::from(self.cumulative);
    }
}

/// Independent coders, register `i` going to coder `i mod STREAMS`: the processor overlaps
/// their work, where one coder waits on each symbol's state before the next.
pub(crate) const STREAMS: usize = 4;

/// The registers (one byte each, a multiple of [`STREAMS`] of them, holding `counts` of each
/// byte) coded against `model`: each coder's 32-bit words, or `None` when a register is not
/// one the shape holds.
///
/// The words are those of `constriction`'s `DefaultAnsCoder` (64-bit state, 32-bit words,
/// starting empty), which decodes them: the same arithmetic without its division per
/// symbol (see [`EncoderSymbol`]; measured 1.5 against 3.2 ns a register), checked word for
/// word against it in the tests.
fn encode(registers: &[u8], counts: &[u32; 256], model: &Model) -> Option<[Vec<u32>; STREAMS]> {
    // The reciprocals of the values the registers hold, and of no other.
    let mut symbols = [EncoderSymbol::default(); 256];
    let mut cumulative = 0;
    for (&value, &weight) in model.values.iter().zip(&model.weights) {
        if counts[usize::from(value)] > 0 {
            symbols[usize::from(value)] = EncoderSymbol::new(u32::from(weight), cumulative);
        }
        cumulative += u32::from(weight);
    }
    if (0..256).any(|v| counts[v] > 0 && model.symbol_of[v] == NONE) {
        return None;
    }
    let per_stream = registers.len() / STREAMS;
    let mut words: [Vec<u32>; STREAMS] = std::array::from_fn(|_| vec![0; per_stream]);
    let mut states = [0u64; STREAMS];
    let mut lens = [0usize; STREAMS];
    // A stack: the last register first, so that decoding runs forward.
    for chunk in registers.chunks_exact(STREAMS).rev() {
        for i in 0..STREAMS {
            symbols[usize::from(chunk[i])].put(&mut states[i], &mut words[i], &mut lens[i]);
        }
    }
    // Then the final state, low word first, without its leading zero words.
    for ((w, &len), &state) in words.iter_mut().zip(&lens).zip(&states) {
        w.truncate(len);
        w.extend(
            [state as u32, (state >> 32) as u32].into_iter().take((64 - state.leading_zeros() as usize).div_ceil(32)),
        );
    }
    Some(words)
}

/// The fewest and the most coded bytes of `m` registers the decoder accepts: every register
/// costs at most 14 bits, and each coder's state adds up to two words; the fewest is the
/// policy of [`MAX_WEIGHT`] (at least [`MIN_BITS_PER_REGISTER`] a register, less the coders'
/// start), which the encoder enforces by writing plain what would code shorter.
pub(crate) fn coded_len_bounds(m: usize) -> (usize, usize) {
    let fewest = ((m as f64 * MIN_BITS_PER_REGISTER / 8.0) as usize).saturating_sub(8 * STREAMS);
    (fewest, 4 * ((m * PRECISION).div_ceil(32) + 2 * STREAMS))
}

/// One coder's stream being read: its words are a stack, read from the last one back, and the
/// state the encoder left is its top one or two words.
struct StreamReader<'a> {
    words: &'a [u32],
    state: u64,
}

impl<'a> StreamReader<'a> {
    /// The stream's final state: its last word (which the encoder never leaves zero), and
    /// the one before it when there is one.
    fn new(words: &'a [u32]) -> Result<Self, DecodeError> {
        let mut reader = Self { words, state: 0 };
        if let Some(&top) = words.last() {
            if top == 0 {
                return Err(invalid("a coded stream ending in a zero word"));
            }
            reader.words = &words[..words.len() - 1];
            reader.state = u64::from(top);
            if let Some(next) = reader.pop() {
                reader.state = reader.state << 32 | u64::from(next);
            }
        }
        Ok(reader)
    }

    fn pop(&mut self) -> Option<u32> {
        let (&last, rest) = self.words.split_last()?;
        self.words = rest;
        Some(last)
    }

    /// Reads one register: the value whose range holds the state's low 14 bits (`table`),
    /// then the state before the encoder coded it, and the word it moved out if it did (the
    /// state is then below `2^32`).
    ///
    /// Whatever the words, a read word is one the encoder would have moved: while words are
    /// left, the state is at least `2^32` (the first one has its top word, never zero, above
    /// another, and a state that reads a word is at least `f·2^18` (below), so it becomes at
    /// least `2^50`), and so the state read back, `⌊x/2^14⌋·f + …`, is at least `f·2^18`: the
    /// encoder's state was at least `f·2^50` and moved out its low word. The stream the decoder
    /// accepts (every word read, the state back to 0) is then the encoder's for the registers
    /// it reads: a state has one coded form.
    #[inline(always)]
    fn get(&mut self, table: &DecodingTable) -> u8 {
        let slot = (self.state & u64::from(TOTAL - 1)) as u32;
        let value = table.value_of[slot as usize];
        let (weight, cumulative) = table.ranges[usize::from(value)];
        let state = (self.state >> PRECISION) * u64::from(weight) + u64::from(slot - cumulative);
        self.state = state;
        if state < 1 << 32
            && let Some(word) = self.pop()
        {
            self.state = state << 32 | u64::from(word);
        }
        value
    }
}

fn invalid(reason: &'static str) -> DecodeError {
    DecodeError::InvalidField { field: "registers", reason }
}

/// The decoder's view of a model: the value of each of the `2^14` slots, and each value's
/// weight and cumulative weight (its slots).
struct DecodingTable {
    value_of: Vec<u8>,
    ranges: [(u32, u32); 256],
}

impl DecodingTable {
    fn new(model: &Model) -> Self {
        let mut value_of = vec![0u8; TOTAL as usize];
        let mut ranges = [(0, 0); 256];
        let mut cumulative = 0;
        for (&value, &weight) in model.values.iter().zip(&model.weights) {
            let weight = u32::from(weight);
            value_of[cumulative as usize..(cumulative + weight) as usize].fill(value);
            ranges[usize::from(value)] = (weight, cumulative);
            cumulative += weight;
        }
        Self { value_of, ranges }
    }
}

/// Decodes `out.len()` registers (a multiple of [`STREAMS`]) coded against `model` from the
/// coders' `words` (each `constriction`'s `DefaultAnsCoder` format, which [`encode`]
/// writes), refusing streams that do not end exactly where the registers do.
pub(crate) fn decode(words: [&[u32]; STREAMS], model: &Model, out: &mut [u8]) -> Result<(), DecodeError> {
    let table = DecodingTable::new(model);
    let [w0, w1, w2, w3] = words;
    let mut readers = [StreamReader::new(w0)?, StreamReader::new(w1)?, StreamReader::new(w2)?, StreamReader::new(w3)?];
    for chunk in out.chunks_exact_mut(STREAMS) {
        for (reader, slot) in readers.iter_mut().zip(chunk) {
            *slot = reader.get(&table);
        }
    }
    if !readers.iter().all(|r| r.state == 0 && r.words.is_empty()) {
        return Err(invalid("a coded stream longer than its registers"));
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

/// A sketch's registers entropy-coded: the scale code of the model and each coder's words.
/// The part of an encoding after the flags, seed and martingale, shared by UltraLogLog and
/// HyperLogLog.
pub(crate) struct Coded {
    code: u16,
    streams: [Vec<u32>; STREAMS],
}

impl Coded {
    /// The registers of `shape` (one byte each) coded, when that is shorter than `plain_len`
    /// (the plain encoding of the registers) and within the length [`Coded::read`] accepts:
    /// not for a crafted or saturated sketch the model fits badly, nor for one whose set
    /// registers all sit at the lowest indices (its streams end in runs that cost no bits).
    pub(crate) fn of(registers: &[u8], shape: Shape, plain_len: usize) -> Option<Self> {
        let counts = byte_counts(registers);
        let code = code_of(&counts, shape);
        let streams = encode(registers, &counts, &Model::new(shape, code))?;
        let coded = Self { code, streams };
        let (fewest, most) = coded_len_bounds(registers.len());
        let words = 4 * coded.streams.iter().map(Vec::len).sum::<usize>();
        (coded.len() < plain_len && (fewest..=most).contains(&words)).then_some(coded)
    }

    /// The bytes [`write`](Self::write) writes.
    pub(crate) fn len(&self) -> usize {
        2 + self.streams.iter().map(|s| varint_len(s.len() as u64) + 4 * s.len()).sum::<usize>()
    }

    /// Writes the model's scale code (u16), each coder's length in 32-bit words (varints),
    /// and the coders' words in turn, little-endian.
    pub(crate) fn write(&self, w: &mut Writer) {
        w.put_bytes(&self.code.to_le_bytes());
        for s in &self.streams {
            w.put_varint(s.len() as u64);
        }
        for s in &self.streams {
            s.iter().for_each(|&word| w.put_u32(word));
        }
    }

    /// Reads what [`write`](Self::write) wrote: the registers of `shape`, one byte each. Every
    /// length is checked before anything is allocated, and only what [`of`](Self::of) writes
    /// for a plain encoding of `plain_len` bytes is accepted: the scale of the decoded
    /// registers and a shorter length. The caller validates the registers themselves.
    pub(crate) fn read(
        r: &mut Reader<'_>,
        shape: Shape,
        plain_len: usize,
    ) -> Result<(Vec<u8>, [u32; 256]), DecodeError> {
        let too_long = DecodeError::InvalidField { field: "coded length", reason: "not what the registers can take" };
        let code = u16::from_le_bytes(r.array::<2>()?);
        let (fewest, most) = coded_len_bounds(shape.registers());
        let mut lens = [0usize; STREAMS];
        let mut len = 2;
        for slot in &mut lens {
            // Each count within the most all the coders can take, before any arithmetic: the
            // sums below then stay under `most` (117 MB at p = 26), on 32 bits too.
            let words = r.varint()?;
            if words > (most / 4) as u64 {
                return Err(too_long);
            }
            *slot = words as usize;
            len += varint_len(words) + 4 * *slot;
        }
        let body: usize = lens.iter().map(|w| 4 * w).sum();
        if !(fewest..=most).contains(&body) {
            return Err(too_long);
        }
        let bytes = r.take(body)?;
        let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let mut parts = [&words[..0]; STREAMS];
        let mut rest = &words[..];
        for (part, &n) in parts.iter_mut().zip(&lens) {
            let (head, tail) = rest.split_at(n);
            *part = head;
            rest = tail;
        }
        let mut out = vec![0u8; shape.registers()];
        decode(parts, &Model::new(shape, code), &mut out)?;
        let counts = byte_counts(&out);
        if code != code_of(&counts, shape) || len >= plain_len {
            return Err(DecodeError::InvalidField {
                field: "coded registers",
                reason: "not as the encoder writes them",
            });
        }
        Ok((out, counts))
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!((log2(1.0), log2(1024.0), log2(0.5)), (0.0, 10.0, -1.0));
        assert_eq!(log2(3.0).to_bits(), 0x3FF9_5C01_A39F_BD68);
        // Empty registers: no scale; all at one value: the raw estimate.
        assert_eq!(code_of(&byte_counts(&[0; 64]), Shape { p: 6, t: 0, d: 2 }), 0);
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

    /// The reciprocal by long division is the definition's, `⌈2^(64+s)/f⌉ − 2^64`, for every
    /// weight.
    #[test]
    fn every_reciprocal_is_exact() {
        for weight in 1..=TOTAL {
            let shift = u32::BITS - (weight - 1).leading_zeros();
            let exact = ((1u128 << (64 + shift)).div_ceil(u128::from(weight)) - (1u128 << 64)) as u64;
            assert_eq!(EncoderSymbol::reciprocal(weight, shift), exact, "weight {weight}");
        }
    }

    /// constriction's encoder, with its division per symbol: the words ours must match.
    fn constriction_words(registers: &[u8], model: &Model) -> [Vec<u32>; STREAMS] {
        use constriction::stream::Encode;
        use constriction::stream::model::ContiguousCategoricalEntropyModel;
        use constriction::stream::stack::DefaultAnsCoder;
        let coding =
            ContiguousCategoricalEntropyModel::<u16, Vec<u16>, PRECISION>::from_nonzero_fixed_point_probabilities(
                &model.weights,
                false,
            )
            .expect("a valid model");
        let mut coders: [DefaultAnsCoder; STREAMS] = std::array::from_fn(|_| DefaultAnsCoder::new());
        for chunk in registers.chunks_exact(STREAMS).rev() {
            for (coder, &r) in coders.iter_mut().zip(chunk) {
                coder.encode_symbol(usize::from(model.symbol_of[usize::from(r)]), &coding).expect("a symbol");
            }
        }
        coders.map(|c| c.into_compressed().expect("in memory"))
    }

    /// The division-free encoder writes constriction's words exactly, for registers the model
    /// fits (any scale near theirs) and registers it fits badly (uniform over every value, the
    /// rarest symbols of weight 1 included, every state and reciprocal exercised), at every
    /// weight the quantizer gives; and refuses a byte the shape never holds.
    #[test]
    fn the_encoder_writes_constrictions_words() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(20);
        for (p, d) in [(4u8, 2u8), (8, 2), (12, 2), (6, 0), (11, 0)] {
            let shape = Shape { p, t: 0, d };
            let valid: Vec<u8> = (0..=255u8).filter(|&r| shape.is_valid(u64::from(r))).collect();
            for trial in 0..200 {
                let code = rng.random_range(0..=u16::MAX);
                let model = Model::new(shape, code);
                let registers: Vec<u8> = if trial % 2 == 0 {
                    // Sampled from the model itself: what real sketches look like to it.
                    let cumulative: Vec<u32> = model
                        .weights
                        .iter()
                        .scan(0, |c, &w| {
                            *c += u32::from(w);
                            Some(*c)
                        })
                        .collect();
                    (0..shape.registers())
                        .map(|_| {
                            let x = rng.random_range(0..TOTAL);
                            model.values[cumulative.partition_point(|&c| c <= x)]
                        })
                        .collect()
                } else {
                    (0..shape.registers()).map(|_| valid[rng.random_range(0..valid.len())]).collect()
                };
                let ours = encode(&registers, &byte_counts(&registers), &model).expect("valid registers");
                assert_eq!(ours, constriction_words(&registers, &model), "p {p}, d {d}, code {code}, trial {trial}");
                let mut decoded = vec![0u8; registers.len()];
                decode(std::array::from_fn(|i| &ours[i][..]), &model, &mut decoded).expect("its own words");
                assert_eq!(decoded, registers);
                // A word changed, dropped or added: refused, or read as registers whose
                // encoding is exactly those words (one coded form a state).
                let mut words = ours.clone();
                let stream = rng.random_range(0..STREAMS);
                let at = rng.random_range(0..=words[stream].len());
                match rng.random_range(0..3) {
                    0 if at < words[stream].len() => words[stream][at] ^= 1 << rng.random_range(0..32),
                    1 if at < words[stream].len() => drop(words[stream].remove(at)),
                    _ => words[stream].insert(at, rng.random()),
                }
                if decode(std::array::from_fn(|i| &words[i][..]), &model, &mut decoded).is_ok() {
                    assert_eq!(encode(&decoded, &byte_counts(&decoded), &model), Some(words));
                }
            }
            let mut registers = vec![0u8; shape.registers()];
            registers[1] = 255;
            if !shape.is_valid(255) {
                assert!(encode(&registers, &byte_counts(&registers), &Model::new(shape, 0)).is_none());
            }
        }
    }

    /// Each valid register's probability at scale `code`, straight from the definition (every
    /// level's `e^(−x)`, no value skipped): what the model's weights must quantize.
    fn probabilities(shape: Shape, code: u16) -> Vec<f64> {
        let lambda = lambda_of(code);
        let (top, geometric) = (shape.max_value(), shape.max_value() - 1);
        let none = |k: u32| exp(-lambda * scale_by_power_of_two(1.0, -(k.min(geometric) as i32)));
        (0..=255u64)
            .filter(|&r| shape.is_valid(r))
            .map(|r| {
                let (u, h) = ((r >> shape.d) as u32, r & shape.history_mask());
                if u == 0 {
                    return none(0);
                }
                let mut p = (1.0 - none(u)) * if u >= top { 1.0 } else { none(u) };
                if shape.d == 2 {
                    for (bit, v) in [(2, u.wrapping_sub(1)), (1, u.wrapping_sub(2))] {
                        if (1..u).contains(&v) {
                            p *= if h & bit != 0 { 1.0 - none(v) } else { none(v) };
                        }
                    }
                }
                p
            })
            .collect()
    }

    /// Every model's weights are whole (at least 1, at most the cap, summing to 2^14) and
    /// exactly those of the registers' probabilities computed in full, for every precision and
    /// scale: the values the model skips would all have had weight 1.
    #[test]
    fn every_model_is_a_valid_coding_model() {
        for (p, d) in (3..=26u8).map(|p| (p, 2)).chain((4..=18).map(|p| (p, 0))) {
            let shape = Shape { p, t: 0, d };
            for code in 0..=u16::MAX {
                let model = Model::new(shape, code);
                let sum: u32 = model.weights.iter().map(|&w| u32::from(w)).sum();
                assert_eq!(sum, TOTAL, "p {p}, d {d}, code {code}");
                assert!(model.weights.iter().all(|&w| w >= 1 && u32::from(w) <= MAX_WEIGHT));
                assert_eq!(model.values.len(), (0..256).filter(|&r| shape.is_valid(r)).count());
                // Every scale where the two would cost a minute; one in 7 (coprime with the 256
                // steps of an octave, so every fraction of an octave and every octave is met).
                if code % 7 == 0 {
                    assert_eq!(model.weights, quantize(&probabilities(shape, code)), "p {p}, d {d}, code {code}");
                }
            }
        }
    }
}
