//! Powers of two and scaling by them: the floating-point helpers the families share.

/// `2^e` for `-1022 <= e <= 1023`, built from its bits: exact, and a constant-time
/// alternative to `powi`, which is a library call when `e` is not a constant.
#[inline]
pub(crate) fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// `x · 2^e` for any `e`, by three powers of two that `f64` holds: exact but for
/// underflow, and saturating at `±f64::MAX` rather than overflowing to an infinity. No loop
/// and no branch but the saturation, so that it inlines into per-item code.
#[inline]
pub(crate) fn scaled(x: f64, e: i32) -> f64 {
    // Past ±2200 every finite x is 0 or beyond f64::MAX (its exponents span 2098).
    let e = e.clamp(-2200, 2200);
    let third = e / 3;
    let out = x * pow2(third) * pow2(third) * pow2(e - 2 * third);
    if out.is_finite() { out } else { f64::MAX.copysign(x) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_is_exact() {
        for e in -1022..=1023 {
            assert_eq!(pow2(e), 2f64.powi(e));
        }
    }

    #[test]
    fn scaling_is_exact_and_saturates() {
        assert_eq!(scaled(3.0, 4), 48.0);
        assert_eq!(scaled(f64::MAX, -2000), f64::MAX * 2f64.powi(-1022) * 2f64.powi(-978));
        assert_eq!(scaled(1.0, 5000), f64::MAX);
        assert_eq!(scaled(-1.0, 5000), -f64::MAX);
        assert_eq!(scaled(1.0, -5000), 0.0);
        assert_eq!(scaled(0.0, 5000), 0.0);
        assert_eq!(scaled(1.0, -1074), 5e-324);
        assert_eq!(scaled(f64::MIN_POSITIVE, 1022), 1.0);
    }
}
