//! A float with a wider exponent, for sums of products that may pass `f64::MAX` on the way to
//! an answer that does not (a ratio of two such sums, say).
//!
//! `Extended` is `mantissa · 2^exponent` with an `f64` mantissa (zero, or of magnitude in
//! `[1, 2)`) and an `i64` exponent: products of any finite floats, and sums of them, are
//! represented without overflow or underflow, each sum to within the mantissa's rounding. It
//! serves the slow path of accumulators that stay plain `f64` while nothing can overflow
//! ([`HorvitzThompson`](crate::shedding::HorvitzThompson)); converting back saturates at
//! `±f64::MAX`.

use std::cmp::Ordering;

use super::float::{pow2, scaled};

/// `mantissa · 2^exponent`; the mantissa is 0 (with exponent 0) or of magnitude in `[1, 2)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Extended {
    mantissa: f64,
    exponent: i64,
}

impl Extended {
    pub(crate) const ZERO: Self = Self { mantissa: 0.0, exponent: 0 };

    /// `x`, which must be finite (a non-finite `x` gives zero: callers check first).
    pub(crate) fn new(x: f64) -> Self {
        Self::normalized(x, 0)
    }

    /// `mantissa · 2^exponent`, for any finite `mantissa` (normalized here).
    pub(crate) fn from_parts(mantissa: f64, exponent: i64) -> Self {
        Self::normalized(mantissa, exponent)
    }

    /// The mantissa (0, or of magnitude in `[1, 2)`) and the exponent.
    pub(crate) fn parts(self) -> (f64, i64) {
        (self.mantissa, self.exponent)
    }

    /// The product of finite floats, exact as far as the mantissas' rounding goes.
    pub(crate) fn product(factors: &[f64]) -> Self {
        factors.iter().fold(Self::new(1.0), |acc, &f| acc.mul(Self::new(f)))
    }

    fn normalized(mantissa: f64, exponent: i64) -> Self {
        if mantissa == 0.0 || !mantissa.is_finite() {
            return Self::ZERO;
        }
        let (m, e) = split(mantissa);
        Self { mantissa: m, exponent: exponent.saturating_add(e) }
    }

    pub(crate) fn mul(self, other: Self) -> Self {
        Self::normalized(self.mantissa * other.mantissa, self.exponent.saturating_add(other.exponent))
    }

    /// `self / other`; zero when `other` is zero.
    pub(crate) fn div(self, other: Self) -> Self {
        if other.mantissa == 0.0 {
            return Self::ZERO;
        }
        Self::normalized(self.mantissa / other.mantissa, self.exponent.saturating_sub(other.exponent))
    }

    pub(crate) fn add(self, other: Self) -> Self {
        let (big, small) = match (self.mantissa == 0.0, other.mantissa == 0.0) {
            (true, _) => return other,
            (_, true) => return self,
            _ if self.exponent >= other.exponent => (self, other),
            _ => (other, self),
        };
        // Past 60 binary places the smaller term is below the larger's rounding.
        let gap = big.exponent - small.exponent;
        if gap > 60 {
            return big;
        }
        Self::normalized(big.mantissa + small.mantissa * pow2(-(gap as i32)), big.exponent)
    }

    pub(crate) fn neg(self) -> Self {
        Self { mantissa: -self.mantissa, ..self }
    }

    pub(crate) fn sub(self, other: Self) -> Self {
        self.add(other.neg())
    }

    /// The nearest `f64`, saturating at `±f64::MAX` (and going to zero below the subnormals).
    pub(crate) fn to_f64(self) -> f64 {
        let exponent = self.exponent.clamp(-4096, 4096) as i32;
        scaled(self.mantissa, exponent)
    }

    /// The sign of the value, as an ordering against zero.
    pub(crate) fn signum(self) -> Ordering {
        self.mantissa.partial_cmp(&0.0).unwrap_or(Ordering::Equal)
    }
}

/// A finite, non-zero `x` as `m · 2^e` with `|m|` in `[1, 2)`.
fn split(x: f64) -> (f64, i64) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i64;
    if biased == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = split(x * pow2(64));
        return (m, e - 64);
    }
    let mantissa = f64::from_bits((bits & !(0x7FF << 52)) | (1023 << 52));
    (mantissa, biased - 1023)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_kind_of_float() {
        for x in [1.0, -1.0, 3.5, f64::MAX, -f64::MAX, f64::MIN_POSITIVE, 5e-324, -5e-324, 1e-310, 0.1, 0.0] {
            assert_eq!(Extended::new(x).to_f64(), x, "{x}");
        }
        assert_eq!(Extended::new(f64::NAN), Extended::ZERO);
        assert_eq!(Extended::new(f64::INFINITY), Extended::ZERO);
    }

    #[test]
    fn products_and_sums_pass_f64_max_and_come_back() {
        let big = Extended::product(&[f64::MAX, f64::MAX, 4.0]);
        assert_eq!(big.to_f64(), f64::MAX);
        assert_eq!(big.div(Extended::product(&[f64::MAX, f64::MAX])).to_f64(), 4.0);
        let twice = Extended::new(f64::MAX).add(Extended::new(f64::MAX));
        assert_eq!(twice.div(Extended::new(2.0)).to_f64(), f64::MAX);
        assert_eq!(twice.div(Extended::new(f64::MAX)).to_f64(), 2.0);
        assert_eq!(twice.neg().to_f64(), -f64::MAX);
        assert_eq!(twice.sub(twice), Extended::ZERO);
        assert_eq!(Extended::new(1.0).add(Extended::new(1e-30)).to_f64(), 1.0);
        assert_eq!(Extended::new(1e-300).mul(Extended::new(1e-300)).to_f64(), 0.0);
        // A product below the floats and one above, divided: back in range.
        let tiny = Extended::product(&[1e-300, 1e-300]);
        assert_eq!(tiny.div(Extended::product(&[1e-300, 1e-299])).to_f64(), 0.1);
        assert_eq!(Extended::new(3.0).sub(Extended::new(5.0)).to_f64(), -2.0);
        assert_eq!(Extended::new(-2.0).signum(), Ordering::Less);
        assert_eq!(Extended::new(7.0).div(Extended::ZERO), Extended::ZERO);
    }

    #[test]
    fn agrees_with_f64_where_f64_is_exact() {
        let mut x = 0x1234_5678_9ABC_DEF0_u64;
        for _ in 0..10_000 {
            x = x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(0x1405_7B7E_F767_814F);
            let a = (x >> 40) as f64 - 8_000_000.0;
            let b = ((x >> 8) & 0xFFFF) as f64 - 30_000.0;
            assert_eq!(Extended::new(a).add(Extended::new(b)).to_f64(), a + b);
            assert_eq!(Extended::new(a).mul(Extended::new(b)).to_f64(), a * b);
        }
    }
}
