//! DDSketch's index mappings: a value to the index of its bucket, and an index to the value
//! that stands for its bucket, with relative error at most α.
//!
//! Every mapping is `index(x) = ⌈L(x) · multiplier⌉` for an increasing function `L` that
//! approximates a logarithm. A bucket is then an interval of `L` of width `1/multiplier`;
//! its width in `ln x` is at most that over the smallest slope `s = dL / d(ln x)`. The
//! multiplier `1 / (s · ln γ)`, with `γ = (1 + α)/(1 − α)`, makes every bucket's bounds
//! `lo < hi` satisfy `hi ≤ γ · lo`, and the harmonic mean `2·lo·hi/(lo + hi)` is then within
//! `(hi − lo)/(hi + lo) ≤ (γ − 1)/(γ + 1) = α` of every value of the bucket, relatively. So
//! the guarantee is α exactly, whatever the approximation; a coarser `L` only spends more
//! buckets.
//!
//! | mapping | `L(x)`, `x = m · 2^e`, `1 ≤ m < 2` | slope `s` on `[1, 2)` | buckets against the logarithm's: on average, at most |
//! |---|---|---|---|
//! | logarithmic | `ln x` | 1 | 1, 1 (optimal) |
//! | linear interpolation | `e + (m − 1)` | `m`: 1 to 2 | `1/ln 2 ≈ 1.44`, 2 |
//! | cubic interpolation | `e + P(m − 1)`, `P(t) = (6/35)t³ − (3/5)t² + (10/7)t` | `10/7` (at `m = 1`) to `52/35` | `7/(10 ln 2) ≈ 1.01`, `1.04` |
//!
//! (On average over an octave, the buckets an octave takes are `multiplier` times the `L`
//! it spans, 1 for the interpolations and `ln 2` for the logarithm.)
//!
//! The interpolations read `e` and `m` from the bits of the double: no logarithm is computed
//! on the way in (the paper's fast mapping, and DataDog's cubic refinement of it).

/// How a [`DDSketch`](super::DDSketch) maps values to buckets (see the
/// [family docs](super)). The relative-error guarantee is the same for the three; the
/// interpolations compute an index faster and spend a few more buckets.
///
/// ```
/// use synopses::quantiles::{DDSketch, IndexMapping};
///
/// let sketch = DDSketch::builder(0.01).mapping(IndexMapping::CubicInterpolation).build()?;
/// assert_eq!(sketch.mapping(), IndexMapping::CubicInterpolation);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IndexMapping {
    /// `⌈log_γ x⌉`: the fewest buckets; a logarithm per value.
    #[default]
    Logarithmic,
    /// The exponent and the mantissa, linearly interpolated: 44 % more buckets on average.
    LinearInterpolation,
    /// The exponent and a cubic of the mantissa: 1 % more buckets on average, nearly as fast
    /// as the linear one.
    CubicInterpolation,
}

impl IndexMapping {
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Logarithmic => 0,
            Self::LinearInterpolation => 1,
            Self::CubicInterpolation => 2,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Self> {
        [Self::Logarithmic, Self::LinearInterpolation, Self::CubicInterpolation].into_iter().find(|m| m.code() == code)
    }
}

/// The cubic's coefficients: `P(t) = ((A·t + B)·t + C)·t`, with `P(0) = 0`, `P(1) = 1`.
const A: f64 = 6.0 / 35.0;
const B: f64 = -3.0 / 5.0;
const C: f64 = 10.0 / 7.0;

/// A mapping with its relative accuracy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mapping {
    pub(crate) kind: IndexMapping,
    pub(crate) alpha: f64,
    multiplier: f64,
}

/// The exponent and mantissa of a positive normal double: `x = m · 2^e`, `1 ≤ m < 2`.
#[inline]
fn split(x: f64) -> (f64, f64) {
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    (e as f64, m)
}

/// `m · 2^e` for an integer `e` within the doubles' normal range and `1 ≤ m ≤ 2`.
fn join(e: f64, m: f64) -> f64 {
    m * 2_f64.powi(e as i32)
}

impl Mapping {
    pub(crate) fn new(kind: IndexMapping, alpha: f64) -> Self {
        let ln_gamma = ((1.0 + alpha) / (1.0 - alpha)).ln();
        let least_slope = match kind {
            IndexMapping::Logarithmic | IndexMapping::LinearInterpolation => 1.0,
            // `m · P'(m − 1)` is smallest at `m = 1` on [1, 2] (a unit test checks it).
            IndexMapping::CubicInterpolation => C,
        };
        Self { kind, alpha, multiplier: 1.0 / (least_slope * ln_gamma) }
    }

    /// `L(x)` for a positive normal `x`.
    #[inline]
    fn log(&self, x: f64) -> f64 {
        match self.kind {
            IndexMapping::Logarithmic => x.ln(),
            IndexMapping::LinearInterpolation => {
                let (e, m) = split(x);
                e + (m - 1.0)
            }
            IndexMapping::CubicInterpolation => {
                let (e, m) = split(x);
                let t = m - 1.0;
                e + ((A * t + B) * t + C) * t
            }
        }
    }

    /// The inverse of `L`.
    fn exp(&self, y: f64) -> f64 {
        match self.kind {
            IndexMapping::Logarithmic => y.exp(),
            IndexMapping::LinearInterpolation => {
                let e = y.floor();
                join(e, 1.0 + (y - e))
            }
            IndexMapping::CubicInterpolation => {
                let e = y.floor();
                let target = y - e;
                // P is increasing on [0, 1] (its slope falls from 10/7 to 26/35): Newton's
                // method from `t = target` converges in a few steps.
                let mut t = target;
                for _ in 0..8 {
                    let p = ((A * t + B) * t + C) * t - target;
                    let slope = (3.0 * A * t + 2.0 * B) * t + C;
                    t = (t - p / slope).clamp(0.0, 1.0);
                }
                join(e, 1.0 + t)
            }
        }
    }

    /// The bucket of a positive normal `x`.
    #[inline]
    pub(crate) fn index(&self, x: f64) -> i32 {
        // ⌈y⌉ as truncation and one step up: `f64::ceil` is a call into libm on baseline
        // x86-64 (no SSE4.1), measured at 13 % of an add. Exact for |y| < 2^31 (indices stay
        // below 2^30, see `index_bound`).
        let y = self.log(x) * self.multiplier;
        let t = y as i32;
        t + i32::from(f64::from(t) < y)
    }

    /// The value that stands for bucket `index`: the harmonic mean of its bounds, within α
    /// of every value of the bucket.
    ///
    /// The bounds are computed scaled by a power of two near 1, so that the buckets at the
    /// ends of the doubles' range (whose bounds underflow or overflow) have a value too:
    /// `L(x · 2^k) = L(x) + k` for the interpolations, `+ k·ln 2` for the logarithm.
    pub(crate) fn value(&self, index: i32) -> f64 {
        let (low, high) = (f64::from(index - 1) / self.multiplier, f64::from(index) / self.multiplier);
        let unit = if self.kind == IndexMapping::Logarithmic { std::f64::consts::LN_2 } else { 1.0 };
        let k = (high / unit).round();
        let (low, high) = (self.exp(low - k * unit), self.exp(high - k * unit));
        let scaled = 2.0 * low * high / (low + high);
        // Two steps: 2^k alone can overflow where the product does not.
        let half = (k / 2.0).trunc();
        scaled * 2_f64.powi(half as i32) * 2_f64.powi((k - half) as i32)
    }

    /// The largest index a positive normal double can have, in absolute value (with a
    /// margin): the decoder's bound on stored indices.
    pub(crate) fn index_bound(&self) -> i64 {
        (self.log(f64::MAX).abs().max(self.log(f64::MIN_POSITIVE).abs()) * self.multiplier).ceil() as i64 + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cubics_least_slope_is_at_one() {
        // m · P'(m − 1) on a fine grid of [1, 2]: never below its value at m = 1.
        for i in 0..=100_000 {
            let m = 1.0 + f64::from(i) / 100_000.0;
            let t = m - 1.0;
            let slope = m * ((3.0 * A * t + 2.0 * B) * t + C);
            assert!(slope >= C - 1e-12, "slope {slope} at m = {m}");
        }
        assert!((((A + B) + C) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn every_value_comes_back_within_alpha() {
        for kind in [IndexMapping::Logarithmic, IndexMapping::LinearInterpolation, IndexMapping::CubicInterpolation] {
            for alpha in [0.001, 0.01, 0.05, 0.2] {
                let mapping = Mapping::new(kind, alpha);
                let mut x = f64::MIN_POSITIVE;
                while x < f64::MAX / 1.37 {
                    for y in [x, x * 1.000_000_1, x * 1.5, x * 1.999_999].into_iter().filter(|y| y.is_finite()) {
                        let back = mapping.value(mapping.index(y));
                        assert!((back - y).abs() <= alpha * y * (1.0 + 1e-9), "{kind:?} α {alpha}: {y:e} -> {back:e}");
                    }
                    x *= 1.37;
                }
            }
        }
    }

    #[test]
    fn the_index_is_the_ceiling() {
        for kind in [IndexMapping::Logarithmic, IndexMapping::LinearInterpolation, IndexMapping::CubicInterpolation] {
            let mapping = Mapping::new(kind, 0.01);
            let mut x = f64::MIN_POSITIVE;
            while x < f64::MAX / 1.1 {
                let y = mapping.log(x) * mapping.multiplier;
                assert_eq!(mapping.index(x), y.ceil() as i32, "{kind:?} {x:e}");
                x *= 1.1;
            }
            // Exact powers of γ sit on a bucket's upper bound.
            assert_eq!(mapping.index(1.0), 0);
        }
    }

    #[test]
    fn the_inverse_inverts() {
        for kind in [IndexMapping::LinearInterpolation, IndexMapping::CubicInterpolation] {
            let mapping = Mapping::new(kind, 0.01);
            for x in [1.0, 1.25, 1.999, 3.0, 1e-300, 7.5e300] {
                let back = mapping.exp(mapping.log(x));
                // L(x) reaches ±1 100 at the ends of the doubles: 11 of its bits go to the
                // exponent, so the mantissa comes back to about 2^-41 there.
                assert!((back - x).abs() <= 1e-12 * x, "{kind:?}: {x:e} -> {back:e}");
            }
        }
    }
}
