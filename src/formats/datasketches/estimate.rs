//! DataSketches' HLL estimators, in its order of floating-point operations so that the numbers
//! agree with its own to the last bit where the inputs do (the module docs of
//! [`super`] describe each).

use super::tables::{COMPOSITE_X, COMPOSITE_Y_STRIDE, COUPON_X, COUPON_Y, HIP_LB, HIP_UB, NON_HIP_LB, NON_HIP_UB};

/// The relative standard error behind the coupon estimator's bounds: 0.409 / 2^13.
const COUPON_RSE: f64 = 0.409 / 8192.0;
/// √(ln 2): the HIP estimator's relative standard error times √k.
const HIP_RSE_FACTOR: f64 = 0.832_554_6;
/// √(3 ln 2 − 1): the composite estimator's relative standard error times √k.
const COMPOSITE_RSE_FACTOR: f64 = 1.038_96;

/// `2^−v`, exactly.
#[inline]
pub(super) fn inverse_power_of_two(v: u8) -> f64 {
    f64::from_bits((1023 - u64::from(v)) << 52)
}

/// Lagrange's cubic through four points, evaluated at `x` (DataSketches' term order).
#[allow(clippy::too_many_arguments)]
fn cubic(x0: f64, y0: f64, x1: f64, y1: f64, x2: f64, y2: f64, x3: f64, y3: f64, x: f64) -> f64 {
    let term0 = y0 * ((x - x1) * (x - x2) * (x - x3)) / ((x0 - x1) * (x0 - x2) * (x0 - x3));
    let term1 = y1 * ((x - x0) * (x - x2) * (x - x3)) / ((x1 - x0) * (x1 - x2) * (x1 - x3));
    let term2 = y2 * ((x - x0) * (x - x1) * (x - x3)) / ((x2 - x0) * (x2 - x1) * (x2 - x3));
    let term3 = y3 * ((x - x0) * (x - x1) * (x - x2)) / ((x3 - x0) * (x3 - x1) * (x3 - x2));
    term0 + term1 + term2 + term3
}

/// Cubic interpolation of `y(x)` through the table's points: the four around `x`, or the first
/// or last four at the ends. `x` lies within the table.
fn interpolate(xs: &[f64], y: impl Fn(usize) -> f64, x: f64) -> f64 {
    let last = xs.len() - 1;
    if x == xs[last] {
        return y(last);
    }
    // The straddle: the largest `i` with xs[i] <= x (DataSketches' binary search finds it too).
    let straddle = xs.partition_point(|&xi| xi <= x).saturating_sub(1);
    let first = match straddle {
        0 => 0,
        s if s == last - 1 => s - 2,
        s => s - 1,
    };
    cubic(xs[first], y(first), xs[first + 1], y(first + 1), xs[first + 2], y(first + 2), xs[first + 3], y(first + 3), x)
}

/// The coupon estimator of list and set mode: the number of distinct items behind `count`
/// distinct coupons (never fewer than `count`).
pub(super) fn coupon_estimate(count: usize) -> f64 {
    let count = count as f64;
    interpolate(&COUPON_X, |i| COUPON_Y[i], count).max(count)
}

/// The coupon estimator's bound at `sd` standard deviations: upper if `upper`.
pub(super) fn coupon_bound(count: usize, sd: u8, upper: bool) -> f64 {
    let estimate = interpolate(&COUPON_X, |i| COUPON_Y[i], count as f64);
    let rse = f64::from(sd) * COUPON_RSE;
    let bound = if upper { estimate / (1.0 - rse) } else { estimate / (1.0 + rse) };
    bound.max(count as f64)
}

/// The bitmap (linear counting) estimate from the number of zero registers.
fn bitmap_estimate(lg_k: u8, zeros: u32) -> f64 {
    let k = 1_u32 << lg_k;
    if zeros == 0 {
        return f64::from(k) * (f64::from(k) / 0.5).ln();
    }
    f64::from(k) * (harmonic(k) - harmonic(zeros))
}

/// The harmonic number `H(n)`: exact below 25, the asymptotic series above.
fn harmonic(n: u32) -> f64 {
    const EXACT: [f64; 25] = [
        0.0,
        1.0,
        1.5,
        11.0 / 6.0,
        25.0 / 12.0,
        137.0 / 60.0,
        49.0 / 20.0,
        363.0 / 140.0,
        761.0 / 280.0,
        7129.0 / 2520.0,
        7381.0 / 2520.0,
        83711.0 / 27720.0,
        86021.0 / 27720.0,
        1145993.0 / 360360.0,
        1171733.0 / 360360.0,
        1195757.0 / 360360.0,
        2436559.0 / 720720.0,
        42142223.0 / 12252240.0,
        14274301.0 / 4084080.0,
        275295799.0 / 77597520.0,
        55835135.0 / 15519504.0,
        18858053.0 / 5173168.0,
        19093197.0 / 5173168.0,
        444316699.0 / 118982864.0,
        1347822955.0 / 356948592.0,
    ];
    if let Some(&h) = EXACT.get(n as usize) {
        return h;
    }
    let x = f64::from(n);
    let inverse_square = 1.0 / (x * x);
    let mut sum = x.ln() + 0.577_215_664_901_532_9 + 1.0 / (2.0 * x);
    let mut power = inverse_square;
    sum -= power * (1.0 / 12.0);
    power *= inverse_square;
    sum += power * (1.0 / 120.0);
    power *= inverse_square;
    sum -= power * (1.0 / 252.0);
    power *= inverse_square;
    sum += power * (1.0 / 240.0);
    sum
}

/// HyperLogLog's raw estimate `α_k · k² / Σ 2^−r` with DataSketches' `α`.
fn raw_estimate(lg_k: u8, kxq: f64) -> f64 {
    let k = f64::from(1_u32 << lg_k);
    let alpha = match lg_k {
        4 => 0.673,
        5 => 0.697,
        6 => 0.709,
        _ => 0.7213 / (1.0 + 1.079 / k),
    };
    alpha * k * k / kxq
}

/// The composite estimator: the raw estimate corrected through the interpolation table of
/// `lg_k`, or the bitmap estimate where that is the better one (small cardinalities).
pub(super) fn composite_estimate(lg_k: u8, kxq: f64, zeros: u32) -> f64 {
    let raw = raw_estimate(lg_k, kxq);
    let xs = &COMPOSITE_X[usize::from(lg_k - 4)];
    let stride = f64::from(COMPOSITE_Y_STRIDE[usize::from(lg_k - 4)]);
    if raw < xs[0] {
        return 0.0;
    }
    let last = xs.len() - 1;
    if raw > xs[last] {
        return raw * (stride * last as f64 / xs[last]);
    }
    let adjusted = interpolate(xs, |i| stride * i as f64, raw);
    let k = 1_u32 << lg_k;
    if adjusted > f64::from(3 * k) {
        return adjusted;
    }
    let linear = bitmap_estimate(lg_k, zeros);
    let crossover = match lg_k {
        4 => 0.718,
        5 => 0.672,
        _ => 0.64,
    };
    if (adjusted + linear) / 2.0 > crossover * f64::from(k) { adjusted } else { linear }
}

/// The relative error of an HLL-mode bound at `sd` standard deviations: from DataSketches'
/// measured tables up to lg_k = 12, `sd · factor / √k` above (negative for the upper bound).
pub(super) fn relative_error(lg_k: u8, sd: u8, upper: bool, composite: bool) -> f64 {
    if lg_k > 12 {
        let factor = if composite { COMPOSITE_RSE_FACTOR } else { HIP_RSE_FACTOR };
        let sign = if upper { -1.0 } else { 1.0 };
        return sign * (f64::from(sd) * factor) / f64::from(1_u32 << lg_k).sqrt();
    }
    let at = usize::from(lg_k - 4) * 3 + usize::from(sd - 1);
    match (composite, upper) {
        (false, false) => HIP_LB[at],
        (false, true) => HIP_UB[at],
        (true, false) => NON_HIP_LB[at],
        (true, true) => NON_HIP_UB[at],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harmonic_numbers_meet_their_series() {
        // The exact table and the series agree where they meet.
        let exact: f64 = (1..=25).map(|i| 1.0 / f64::from(i)).sum();
        assert!((harmonic(25) - exact).abs() < 1e-13);
        assert_eq!(harmonic(3), 1.0 + 0.5 + 1.0 / 3.0);
    }

    #[test]
    fn the_interpolation_passes_through_its_points() {
        for i in 0..COUPON_X.len() {
            let y = interpolate(&COUPON_X, |j| COUPON_Y[j], COUPON_X[i]);
            assert!((y - COUPON_Y[i]).abs() <= 1e-9 * COUPON_Y[i].max(1.0), "{i}: {y}");
        }
        let xs = &COMPOSITE_X[8];
        for i in [0, 1, 100, 255, 256] {
            let y = interpolate(xs, |j| 40.0 * j as f64, xs[i]);
            assert!((y - 40.0 * i as f64).abs() < 1e-6, "{i}: {y}");
        }
    }

    #[test]
    fn inverse_powers_of_two_are_exact() {
        for v in 0..=63 {
            assert_eq!(inverse_power_of_two(v), 0.5_f64.powi(i32::from(v)));
        }
    }
}
