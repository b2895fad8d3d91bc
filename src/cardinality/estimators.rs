//! Estimator formulas shared by the register-based cardinality sketches.

use crate::core::DecodeError;
pub(crate) use crate::core::float::pow2;

/// `sqrt(3 ln 2 - 1)`: the asymptotic relative standard error of HyperLogLog's register
/// estimators, times `sqrt(m)` (Ertl 2017; the classic value is 1.04).
pub(crate) const IMPROVED_RSE: f64 = 1.038_961_791_248_269_6;

/// `sqrt(ln 2)`: the asymptotic relative standard error of HyperLogLog's martingale (HIP)
/// estimator, times `sqrt(m)` (Ting 2014; Cohen 2015).
pub(crate) const HIP_RSE: f64 = 0.832_554_611_157_697_8;

/// `1 / (2 ln 2)`: the limit of HyperLogLog's bias-correction constant `α_m` as `m` grows.
pub(crate) const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// HyperLogLog's bias-correction constant `α_m` (Flajolet et al. 2007, figure 3): the exact
/// values for 16, 32 and 64 registers, and `α_∞ / (1 + 1.079/m)` from 128 on.
///
/// Ertl states his estimator with `α_∞`, which is exact only as `m → ∞`: with it the estimate
/// has a relative bias of about `+1.079/m` over the whole range, which `α_m` removes.
fn alpha(m: u32) -> f64 {
    match m {
        16 => 0.673,
        32 => 0.697,
        64 => 0.709,
        _ => ALPHA_INF / (1.0 + 1.079 / f64::from(m)),
    }
}

/// The relative standard error of the register estimator times `sqrt(m)`, `β_m` (Flajolet et
/// al. 2007): slightly above its limit [`IMPROVED_RSE`] for small `m`.
pub(crate) fn improved_rse(m: u32) -> f64 {
    match m {
        16 => 1.106,
        32 => 1.070,
        64 => 1.054,
        128 => 1.046,
        _ => IMPROVED_RSE,
    }
}

/// The smallest precision in `precisions` whose standard error `error_at(p)`, which falls as
/// `p` grows, is at most `target`; `None` for a target outside the errors of the largest and
/// the smallest precision (or not a number). What the accuracy-first constructors
/// (`with_error`) pick.
pub(crate) fn precision_for(
    target: f64,
    precisions: std::ops::RangeInclusive<u8>,
    error_at: impl Fn(u8) -> f64,
) -> Option<u8> {
    let reachable = error_at(*precisions.end())..=error_at(*precisions.start());
    if !reachable.contains(&target) {
        return None;
    }
    precisions.into_iter().find(|&p| error_at(p) <= target)
}

/// The largest estimate any sketch of 64-bit hashes gives: `2^64`, the number of distinct
/// hashes. More distinct items than that cannot be told apart, and a state that would say
/// more (every register at its largest value, reachable by items crafted to hash that way)
/// answers this instead of an infinity.
pub(crate) const MAX_ESTIMATE: f64 = 18_446_744_073_709_551_616.0;

/// An estimate, at most [`MAX_ESTIMATE`].
#[inline]
pub(crate) fn capped(estimate: f64) -> f64 {
    estimate.min(MAX_ESTIMATE)
}

/// The largest martingale a sketch can have reached, for decoders to check a stored one.
///
/// The martingale starts at most at `start` (the exact count when a sparse sketch turns
/// dense; 0 for a sketch born dense) and adds, at each change of a register, `m · 2^64`
/// over the unseen mass before that change. That mass only falls as the registers rise, so
/// it was at least the mass now (`unseen`), and at least `2^p`: no value a register can still
/// take is rarer than `2^−64` per register. There are at most `changes` changes. The bound is
/// loose (most changes add far less), but it is one no reachable state exceeds, which is
/// what a decoder may check; a relative `2^−40` covers the rounding of the sum.
///
/// The relative `2^−40` is not what the rounding of up to `2^37` additions could in principle
/// reach; what makes the ceiling safe is its own slack: it counts every register's changes
/// at the largest increment, including the entries absorbed when the sketch turned dense,
/// which added nothing, so a real martingale stays at least one increment below it.
pub(crate) fn martingale_ceiling(start: f64, changes: u64, unseen: u128, p: u8) -> f64 {
    let floor = unseen.max(1u128 << p);
    let per_change = pow2(64 + i32::from(p)) / wide_to_f64(floor);
    (start + changes as f64 * per_change) * (1.0 + pow2(-40))
}

/// What a decoder checks of the martingale of a dense register sketch: none, or one between
/// what it must have reached (its start, `limit` for a sketch that turned dense, and one
/// change per value known `seen`) and the [`martingale_ceiling`] of at most `changes`
/// changes from the unseen mass `unseen`. The same for HyperLogLog, UltraLogLog and
/// ExaLogLog.
pub(crate) fn check_martingale(
    martingale: Option<f64>,
    (limit, seen): (usize, f64),
    (changes, unseen, p): (u64, u128, u8),
) -> Result<(), DecodeError> {
    let Some(x) = martingale else { return Ok(()) };
    let floor = (limit as f64).max(seen);
    if x >= floor && x <= martingale_ceiling(limit as f64, changes, unseen, p) {
        Ok(())
    } else {
        Err(DecodeError::InvalidField { field: "martingale", reason: "not what the registers allow" })
    }
}

/// Converts a 128-bit fixed-point sum to `f64` from its two 64-bit halves: deterministic
/// (plain IEEE operations), within an ulp of the exact value, and faster than `u128 as f64`,
/// a library call, on the martingale's per-change path. (`mul_add` would round once, but
/// without hardware FMA in the baseline x86-64 target it is a slower library call still.)
#[inline]
pub(crate) fn wide_to_f64(x: u128) -> f64 {
    ((x >> 64) as u64 as f64) * pow2(64) + (x as u64 as f64)
}

/// Ertl's improved raw estimator ("New cardinality estimation algorithms for HyperLogLog
/// sketches", 2017, algorithm 6), from three aggregates of the registers instead of the whole
/// histogram:
///
/// ```text
///                     α_m · m²
///   n̂ = ─────────────────────────────────────────────   q = 64 - p
///        m·σ(C_0/m) + Σ_{k=1..q} C_k 2^-k + m·τ(1 - C_{q+1}/m)·2^-q
/// ```
///
/// `C_k` counts the registers of value `k`; `middle` is the sum in the denominator. The
/// algorithm's loop `z ← (z + C_k)/2` for `k = q..1` unrolls to exactly that sum, so a running
/// sum of `2^-r` over the registers serves as well as the histogram and is kept up to date in
/// O(1) per register change. σ corrects the small range (where linear counting used to take
/// over), τ the range where registers saturate; neither needs a bias table.
///
/// With every register saturated the denominator is 0, and the answer [`MAX_ESTIMATE`].
pub(crate) fn ertl_estimate(m: u32, q: u32, zeros: u32, saturated: u32, middle: f64) -> f64 {
    if zeros == m {
        return 0.0;
    }
    let alpha_m = alpha(m);
    let m = f64::from(m);
    let top = m * tau(1.0 - f64::from(saturated) / m) * pow2(-(q as i32));
    let z = m * sigma(f64::from(zeros) / m) + middle + top;
    if z > 0.0 { capped(alpha_m * m * m / z) } else { MAX_ESTIMATE }
}

/// `σ(x) = x + Σ_{k≥1} x^(2^k) · 2^(k-1)`, summed until it stops changing; `x < 1`.
pub(crate) fn sigma(mut x: f64) -> f64 {
    if x >= 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

/// `τ(x) = (1 - x - Σ_{k≥1} (1 - x^(2^-k))² · 2^-k) / 3`, summed until it stops changing.
pub(crate) fn tau(mut x: f64) -> f64 {
    if x <= 0.0 || x >= 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigma_and_tau_match_their_series() {
        // σ(1/2) = 1/2 + 1/4 + 2/16 + 4/256 + ... ; τ(1/2) from 60 terms directly.
        let direct_sigma: f64 = 0.5 + (1..12).map(|k| 0.5f64.powi(1 << k) * 2f64.powi(k - 1)).sum::<f64>();
        assert!((sigma(0.5) - direct_sigma).abs() < 1e-15);
        let direct_tau =
            (0.5 - (1..60).map(|k| (1.0 - 0.5f64.powf(2f64.powi(-k))).powi(2) * 2f64.powi(-k)).sum::<f64>()) / 3.0;
        assert!((tau(0.5) - direct_tau).abs() < 1e-15);
        assert_eq!((sigma(0.0), tau(0.0), tau(1.0)), (0.0, 0.0, 0.0));
        assert!(sigma(1.0).is_infinite());
    }

    #[test]
    fn one_item_in_a_large_sketch_estimates_about_one() {
        // One register at 1, the rest at 0: the small-range correction must give about 1.
        let m = 1 << 14;
        let est = ertl_estimate(m, 50, m - 1, 0, 0.5);
        assert!((est - 1.0).abs() < 0.01, "{est}");
    }
}
