//! The random streams of the randomized operators: explicit seeds, portable draws, and one
//! independent stream per partition.

use rand::distr::{Open01, OpenClosed01};
use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::codec::{Reader, Writer};
use crate::core::DecodeError;
use crate::hash::hash_bytes;

/// A stream of random numbers: xoshiro256++ seeded from a seed and a stream number through
/// the crate's xxh3, so the same `(seed, stream)` draws the same numbers on every platform.
/// It counts its draws, so tests can check an algorithm's number of random draws.
#[derive(Clone, Debug)]
pub(crate) struct Stream {
    rng: Xoshiro256PlusPlus,
    draws: u64,
}

impl Stream {
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        Self { rng: Xoshiro256PlusPlus::seed_from_u64(mix(seed, stream, 0)), draws: 0 }
    }

    /// The random numbers drawn so far (saturating: a decoded count may start anywhere).
    pub(crate) fn draws(&self) -> u64 {
        self.draws
    }

    /// The length of what [`encode`](Self::encode) writes.
    pub(crate) const ENCODED_LEN: usize = 40;

    /// Writes the generator's exact state, xoshiro256++'s four 64-bit words (32 bytes,
    /// little-endian, as `rand_xoshiro` gives them), then the draw count (u64): a stream
    /// decoded from them draws exactly what this one would have.
    pub(crate) fn encode(&self, w: &mut Writer) {
        w.put_bytes(&self.rng.state());
        w.put_u64(self.draws);
    }

    /// Reads what [`encode`](Self::encode) wrote. The all-zero state is refused: xoshiro never
    /// reaches it from a seed, and it would never leave it (every draw would be 0).
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let state: [u8; 32] = r.array()?;
        let draws = r.u64()?;
        if state == [0; 32] {
            return Err(DecodeError::InvalidField { field: "generator", reason: "the all-zero state" });
        }
        Ok(Self { rng: Xoshiro256PlusPlus::from_seed(state), draws })
    }

    fn count_draw(&mut self) {
        self.draws = self.draws.saturating_add(1);
    }

    /// 64 uniform random bits.
    pub(crate) fn bits(&mut self) -> u64 {
        self.count_draw();
        self.rng.next_u64()
    }

    /// A uniform number in the open interval (0, 1): a multiple of `2^−52` plus `2^−53`, so
    /// from [`UNIFORM_MIN`] to [`UNIFORM_MAX`].
    pub(crate) fn uniform(&mut self) -> f64 {
        self.count_draw();
        self.rng.sample(Open01)
    }

    /// An exponential number of mean 1, `−ln U` with `U` uniform in (0, 1]: at most
    /// [`largest_exponential`].
    pub(crate) fn exponential(&mut self) -> f64 {
        self.count_draw();
        exponential_of(self.rng.sample(OpenClosed01))
    }

    /// The number of failures before the first success of independent trials that each
    /// succeed with probability `p`: `⌊ln U / ln(1 − p)⌋`, geometric on 0, 1, 2, ... (0 for
    /// `p ≥ 1`; saturating at `u64::MAX` for tiny `p`).
    pub(crate) fn geometric(&mut self, p: f64) -> u64 {
        if p >= 1.0 {
            return 0;
        }
        geometric_of(self.uniform(), p)
    }
}

/// `−ln u`, for `u` in (0, 1].
fn exponential_of(u: f64) -> f64 {
    // `0 − ln U`, not `−ln U`: at `U = 1` that is +0, not −0.
    0.0 - u.ln()
}

/// `⌊ln u / ln(1 − p)⌋`, for `u` in (0, 1) and `p` in (0, 1).
fn geometric_of(u: f64, p: f64) -> u64 {
    // ln_1p keeps ln(1 − p) accurate when p is tiny, as it is after many items.
    (u.ln() / (-p).ln_1p()).floor() as u64
}

/// The largest number [`Stream::exponential`] draws, `−ln 2^−53 ≈ 36.74` (`rand`'s
/// `OpenClosed01` draws at least `2^−53`), computed as the draw is, so that a bound derived
/// from it by monotone operations is the bound on what the sampler computes.
pub(crate) fn largest_exponential() -> f64 {
    exponential_of(UNIFORM_MIN)
}

/// The largest number [`Stream::geometric`] draws for `p` (that of the smallest uniform, as
/// `ln u / ln(1 − p)` falls as `u` grows), computed as the draw is.
pub(crate) fn largest_geometric(p: f64) -> u64 {
    if p >= 1.0 { 0 } else { geometric_of(UNIFORM_MIN, p) }
}

/// The smallest number [`Stream::uniform`] draws, `2^−53`: decoders bound the keys they read
/// with it (`rand`'s `Open01` draws `n·2^−52 + 2^−53`).
pub(crate) const UNIFORM_MIN: f64 = 1.0 / (1u64 << 53) as f64;

/// The largest number [`Stream::uniform`] draws, `1 − 2^−53`.
pub(crate) const UNIFORM_MAX: f64 = 1.0 - UNIFORM_MIN;

/// Every number [`Stream::exponential`] draws, `−ln U` for a `U` of at least `2^−53`, and
/// every `−ln(1 − U·P)` for a uniform `U` and `P <= 1`, are at most `−ln 2^−53 ≈ 36.74`:
/// below this.
pub(crate) const EXPONENTIAL_MAX: f64 = 37.0;

/// The stream number of part `index` of an operator on stream `stream` that has seen `seen`
/// items: distinct parts, and parts made at different points of the parent's history, get
/// unrelated streams.
pub(crate) fn part_stream(stream: u64, seen: u64, index: u64) -> u64 {
    mix(stream, seen, index.wrapping_add(1))
}

/// The stream an operator decoded from an encoding without its generator's state (the
/// samplers' format version 1) continues with: one derived from its seed, stream and history.
pub(crate) fn resumed_stream(stream: u64, seen: u64) -> u64 {
    mix(stream, seen, u64::MAX)
}

fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut bytes = [0u8; 24];
    bytes[..8].copy_from_slice(&a.to_le_bytes());
    bytes[8..16].copy_from_slice(&b.to_le_bytes());
    bytes[16..].copy_from_slice(&c.to_le_bytes());
    hash_bytes(&bytes, 0x5EED_5EED_5EED_5EED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::ENVELOPE_LEN;

    /// `stream` encoded alone in an envelope of family 0.
    fn encoded(stream: &Stream) -> Vec<u8> {
        let mut w = Writer::new(0, ENVELOPE_LEN + Stream::ENCODED_LEN);
        stream.encode(&mut w);
        w.finish()
    }

    #[test]
    fn a_decoded_stream_draws_what_the_original_would() -> Result<(), DecodeError> {
        let mut s = Stream::new(9, 4);
        for _ in 0..5 {
            s.bits();
        }
        let bytes = encoded(&s);
        let mut r = Reader::open(&bytes, 0)?;
        let mut t = Stream::decode(&mut r)?;
        r.finish()?;
        assert_eq!(t.draws(), 5);
        for _ in 0..100 {
            assert_eq!(s.bits(), t.bits());
        }
        assert_eq!(encoded(&s), encoded(&t));
        // The all-zero state, which xoshiro never leaves.
        let mut w = Writer::new(0, ENVELOPE_LEN + Stream::ENCODED_LEN);
        w.put_zeroed(Stream::ENCODED_LEN);
        let zeros = w.finish();
        let r = Stream::decode(&mut Reader::open(&zeros, 0)?).map(|s| s.draws());
        assert_eq!(r, Err(DecodeError::InvalidField { field: "generator", reason: "the all-zero state" }));
        // A decoded count may be anywhere: it saturates rather than overflow.
        let mut full = Stream { draws: u64::MAX, ..Stream::new(1, 1) };
        full.bits();
        assert_eq!(full.draws(), u64::MAX);
        Ok(())
    }

    #[test]
    fn the_largest_draws_bound_the_draws() {
        // `−ln 2^−53 = 53 ln 2`.
        assert!((largest_exponential() - 53.0 * std::f64::consts::LN_2).abs() < 1e-12);
        assert!(largest_exponential() < EXPONENTIAL_MAX);
        let mut s = Stream::new(8, 0);
        for p in [0.9, 0.5, 1e-3, 1e-9] {
            let largest = largest_geometric(p);
            assert!((0..100_000).all(|_| s.geometric(p) <= largest), "p {p}");
            // About `53 ln 2 / p` for small p: far beyond any draw of a test, but bounded.
            assert!(largest as f64 <= largest_exponential() / p * 1.001, "p {p}: {largest}");
        }
        assert_eq!(largest_geometric(1.0), 0);
        assert_eq!(largest_geometric(1e-300), u64::MAX);
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |seed, stream| {
            let mut s = Stream::new(seed, stream);
            (0..4).map(|_| s.uniform().to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 2), draw(1, 2));
        assert_ne!(draw(1, 2), draw(1, 3));
        assert_ne!(draw(1, 2), draw(2, 2));
        assert_ne!(part_stream(7, 0, 0), part_stream(7, 0, 1));
        assert_ne!(part_stream(7, 0, 0), part_stream(7, 10, 0));
    }

    #[test]
    fn uniforms_stay_within_their_documented_range() {
        // The generator's extremes are reached only by all-zero or all-one words; their
        // formula is rand's (`Open01`), checked here on a million draws and at its ends.
        let mut s = Stream::new(5, 1);
        for _ in 0..1_000_000 {
            let u = s.uniform();
            assert!((UNIFORM_MIN..=UNIFORM_MAX).contains(&u));
            assert_eq!((u - UNIFORM_MIN) * (1u64 << 52) as f64 % 1.0, 0.0);
            assert!(s.exponential() <= EXPONENTIAL_MAX);
        }
        assert!(-(UNIFORM_MIN.ln()) < EXPONENTIAL_MAX);
    }

    #[test]
    fn geometric_has_its_mean() {
        // Mean (1 − p)/p; over 200 000 draws the standard error is sqrt(1 − p)/p/sqrt(n).
        let mut s = Stream::new(3, 0);
        for p in [0.5, 0.1, 0.01] {
            let n = 200_000;
            let mean = (0..n).map(|_| s.geometric(p) as f64).sum::<f64>() / f64::from(n);
            let se = (1.0 - p).sqrt() / p / f64::from(n).sqrt();
            assert!((mean - (1.0 - p) / p).abs() < 4.0 * se, "p {p}: mean {mean}");
        }
        assert_eq!(s.geometric(1.0), 0);
        assert_eq!(Stream::new(0, 0).geometric(1e-300), u64::MAX);
    }
}
