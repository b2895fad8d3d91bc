//! The estimators of the registers with history (UltraLogLog, ExaLogLog): the bias-corrected
//! maximum-likelihood estimate, UltraLogLog's FGRA estimate, and the theory of their errors.
//! They read summaries of the registers (the unseen mass and the values seen by level, or a
//! histogram of UltraLogLog's bytes), not the sketch: the state that keeps those summaries is
//! `history.rs`.
//!
//! The constants are Ertl's (UltraLogLog, VLDB 2024; ExaLogLog, 2025), recomputed from his
//! closed forms: with `b = 2^(2^−t)` and `X = b^−d / (b − 1)`,
//!
//! ```text
//!   relative variance × m, maximum likelihood:  ln b / ζ(2, 1 + X)
//!   relative variance × m, martingale:          ln b · (1 + X) / 2
//!   ML bias × m (first order):                  c = ln b · (1 + 2X) · ζ(3, 1 + X) / ζ(2, 1 + X)²
//! ```
//!
//! with `ζ(s, a)` Hurwitz's zeta function; the memory-variance product is the relative variance
//! times the bits of state, `(6 + t + d) · m`.

use super::estimators::{MAX_ESTIMATE, capped, pow2, wide_to_f64};
use super::registers::Shape;

/// Hurwitz's zeta function `ζ(s, a) = Σ_{k≥0} (k + a)^−s` for `s > 1`, `a > 0`: twenty terms,
/// then the Euler–Maclaurin tail with four Bernoulli corrections (error below `1e−16` here).
fn hurwitz_zeta(s: f64, a: f64) -> f64 {
    const N: usize = 20;
    let head: f64 = (0..N).map(|k| (k as f64 + a).powf(-s)).sum();
    let x = N as f64 + a;
    // B_2j / (2j)!, for j = 1..=4.
    const BERNOULLI: [f64; 4] = [1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0];
    let mut tail = x.powf(1.0 - s) / (s - 1.0) + x.powf(-s) / 2.0;
    // The j-th term: B_2j/(2j)! · s(s+1)…(s+2j−2) · x^(−s−2j+1).
    let mut rising = s;
    let mut power = x.powf(-s - 1.0);
    for (j, b) in BERNOULLI.iter().enumerate() {
        tail += b * rising * power;
        let next = s + 2.0 * j as f64 + 1.0;
        rising *= next * (next + 1.0);
        power /= x * x;
    }
    head + tail
}

/// `(ln b, X)` of a shape.
fn base_and_excess(shape: Shape) -> (f64, f64) {
    let ln_b = std::f64::consts::LN_2 / f64::from(1u32 << shape.t);
    let b = ln_b.exp();
    (ln_b, (-ln_b * f64::from(shape.d)).exp() / (b - 1.0))
}

/// The memory-variance product of the maximum-likelihood estimator.
pub(crate) fn mvp_ml(shape: Shape) -> f64 {
    let (ln_b, x) = base_and_excess(shape);
    f64::from(shape.bits()) * ln_b / hurwitz_zeta(2.0, 1.0 + x)
}

/// The memory-variance product of the martingale estimator.
pub(crate) fn mvp_martingale(shape: Shape) -> f64 {
    let (ln_b, x) = base_and_excess(shape);
    f64::from(shape.bits()) * ln_b * (1.0 + x) / 2.0
}

/// The relative standard error at memory-variance product `mvp`: `√(mvp / (bits · m))`.
pub(crate) fn relative_standard_error(mvp: f64, shape: Shape) -> f64 {
    (mvp / (f64::from(shape.bits()) * shape.registers() as f64)).sqrt()
}

/// The first-order relative bias of the raw maximum-likelihood estimate, times `m`.
pub(crate) fn ml_bias_constant(shape: Shape) -> f64 {
    let (ln_b, x) = base_and_excess(shape);
    let z2 = hurwitz_zeta(2.0, 1.0 + x);
    ln_b * (1.0 + 2.0 * x) * hurwitz_zeta(3.0, 1.0 + x) / (z2 * z2)
}

/// The maximum-likelihood estimate of the number of distinct items from the mass of the
/// values known not seen (`unseen`, `Σ` over registers, in 64.64 fixed point) and the
/// count of values known seen at each level (`seen`).
///
/// Under the Poisson model each register receives items at rate `λ = n/m`, and value `k`
/// occurs in it with probability `1 − e^(−λ ρ_k)`, independently of the others, so
///
/// ```text
///   ln L(λ) = −λ · α + Σ_j β_j · ln(1 − e^(−λ ρ_j)),   α = unseen mass, β_j = seen[j]
/// ```
///
/// is concave, and its maximum solves `H(λ) = Σ_j β_j φ(λ ρ_j) − α λ = 0` with
/// `φ(z) = z / (e^z − 1)`. `H` is convex and decreasing, so Newton's method started left of
/// the root climbs to it monotonically, without overshooting.
pub(crate) fn ml_estimate(shape: Shape, unseen: u128, seen: &[u32]) -> f64 {
    let m = shape.registers() as f64;
    let total_seen: f64 = seen.iter().map(|&b| f64::from(b)).sum();
    if total_seen == 0.0 {
        return 0.0;
    }
    if unseen == 0 {
        // Every value of every register seen: the likelihood grows without bound.
        return MAX_ESTIMATE;
    }
    let alpha = wide_to_f64(unseen) * pow2(-64);
    let terms: Vec<(f64, f64)> =
        seen.iter().enumerate().filter(|&(_, &b)| b > 0).map(|(j, &b)| (f64::from(b), shape.level_rho(j))).collect();
    // The first Newton step from λ = 0, where H = Σβ and H' = −α − Σ β ρ / 2.
    let mut lambda = total_seen / (alpha + terms.iter().map(|(b, rho)| b * rho).sum::<f64>() / 2.0);
    for _ in 0..200 {
        let (mut h, mut slope) = (-alpha * lambda, -alpha);
        for &(b, rho) in &terms {
            let z = lambda * rho;
            // φ(z) = z·w / (1 − w) and φ'(z) = w·(1 − w − z) / (1 − w)² with w = e^−z: finite
            // for every z (through e^z they overflow to ∞/∞ past z ≈ 710, which levels far
            // below a register's maximum reach), with their limits at 0.
            let (phi, dphi) = if z < 1e-8 {
                (1.0 - z / 2.0, -0.5)
            } else {
                let (w, one_minus_w) = ((-z).exp(), -(-z).exp_m1());
                (z * w / one_minus_w, w * (one_minus_w - z) / (one_minus_w * one_minus_w))
            };
            h += b * phi;
            slope += b * rho * dphi;
        }
        let step = -h / slope;
        debug_assert!(!step.is_nan(), "Newton step of the likelihood is NaN");
        if step.is_nan() || step <= lambda * 1e-15 {
            break;
        }
        lambda += step;
    }
    capped(m * lambda)
}

/// The [maximum-likelihood estimate](ml_estimate) divided by `1 + c/m`, which removes its
/// `O(1/m)` bias.
pub(crate) fn corrected_ml(shape: Shape, unseen: u128, seen: &[u32]) -> f64 {
    let m = shape.registers() as f64;
    capped(ml_estimate(shape, unseen, seen) / (1.0 + ml_bias_constant(shape) / m))
}

/// `τ` of UltraLogLog's FGRA estimator: the exponent that minimizes its variance.
const TAU: f64 = 0.819_491_185_037_638_7;
/// The FGRA estimator's relative variance times `m`.
const V: f64 = 0.611_893_149_697_842_6;
/// The contribution of a register `4u + h` (`3 <= u`) is `ETA[h] · 2^(−τu)`.
const ETA: [f64; 4] = [4.663_135_749_698_441, 2.137_850_286_535_751, 2.781_144_794_145_462_6, 0.982_408_243_922_076_4];

/// The memory-variance product of the FGRA estimator, `8v`.
#[cfg(test)]
const FGRA_MVP: f64 = 8.0 * V;

/// `ψ(z)`: the expected contribution of a register in the small range, as a polynomial.
fn psi(z: f64) -> f64 {
    let [e0, e1, e2, e3] = ETA;
    ((((e0 - e1 - e2 + e3) * z + (e2 - e3)) * z) + (e1 - e3)) * z + e3
}

/// `σ(z) = (1/z) Σ_{k≥0} 2^(τk) (z^(2^k) − z^(2^(k+1))) ψ(z^(2^(k+1)))`, the contribution of an
/// empty register; `σ(0) = η_3`, and it grows without bound as `z → 1`.
fn sigma(z: f64) -> f64 {
    if z <= 0.0 {
        return ETA[3];
    }
    if z >= 1.0 {
        return f64::INFINITY;
    }
    let (mut sum, mut zk, mut weight) = (0.0, z, 1.0);
    loop {
        let next = zk * zk;
        let before = sum;
        sum += weight * (zk - next) * psi(next);
        if sum == before {
            return sum / z;
        }
        (zk, weight) = (next, weight * TAU.exp2());
    }
}

/// UltraLogLog's FGRA ("further generalized remaining area") estimate (Ertl 2024, §3):
///
/// ```text
///   n̂ = λ_p · (Σ_i g(r_i))^(−1/τ),   g(4u + h) = η_h · 2^(−τu),   λ_p = m^(1+1/τ) / (1 + v(1+τ)/(2m))
/// ```
///
/// with the small-range terms for the registers that have seen fewer than three levels
/// (states 0, 4, 8 and 10), whose contributions depend on the fill `z` solved from their
/// counts. The large-range terms for registers saturated at `u = 65 − p` (which takes about
/// `2^64` distinct items) are not applied: those registers count as unsaturated ones.
/// `histogram` counts the registers of each byte value.
pub(crate) fn fgra(shape: Shape, histogram: &[u32; 256]) -> f64 {
    let m = shape.registers() as f64;
    let count = |r: usize| f64::from(histogram[r]);
    let (c0, c4, c8, c10) = (count(0), count(4), count(8), count(10));
    if c0 == m {
        return 0.0;
    }
    let mut sum = 0.0;
    for (r, &n) in histogram.iter().enumerate().skip(12) {
        if n > 0 {
            sum += f64::from(n) * ETA[r & 3] * (-TAU * (r >> 2) as f64).exp2();
        }
    }
    if c0 + c4 + c8 + c10 > 0.0 {
        let a = m + 3.0 * (c0 + c4 + c8 + c10);
        let b = m - c0 - c4;
        let g = 4.0 * c0 + 2.0 * c4 + 3.0 * c8 + c10;
        let z = ((b * b + 4.0 * a * g).sqrt() - b) / (2.0 * a);
        let z = (z * z) * (z * z);
        let [e0, e1, e2, e3] = ETA;
        sum += c0 * sigma(z)
            + c4 * (-TAU).exp2() * psi(z)
            + c8 * (-2.0 * TAU).exp2() * (e1 + z * (e0 - e1))
            + c10 * (-2.0 * TAU).exp2() * (e3 + z * (e2 - e3));
    }
    let lambda = m.powf(1.0 + 1.0 / TAU) / (1.0 + V * (1.0 + TAU) / (2.0 * m));
    capped(lambda * sum.powf(-1.0 / TAU))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ULL: Shape = Shape { p: 10, t: 0, d: 2 };

    #[test]
    fn constants_match_the_published_values() {
        // Ertl's values (hash4j, ExaLogLog paper), to about 12 digits.
        let cases = [
            (0, 2, 0.481473765277201, 4.63128908504886, 3.46573590279973),
            (1, 9, 0.190740893782727, 3.90247513305808, 3.06840778531334),
            (2, 16, 0.13446785617432, 3.78430569244559, 2.76633482448858),
            (2, 20, 0.105538243071734, 3.67324441699625, 2.82670288026491),
            (2, 24, 0.0911936020595227, 3.78143451129093, 3.00155314984269),
        ];
        for (t, d, c, ml, martingale) in cases {
            let shape = Shape { p: 10, t, d };
            assert!((ml_bias_constant(shape) / c - 1.0).abs() < 1e-12, "({t}, {d}) c");
            assert!((mvp_ml(shape) / ml - 1.0).abs() < 1e-12, "({t}, {d}) ML");
            assert!((mvp_martingale(shape) / martingale - 1.0).abs() < 1e-12, "({t}, {d}) martingale");
        }
        assert!((FGRA_MVP - 4.895_145_197_582_741).abs() < 1e-12);
        // HyperLogLog's registers are t = 0, d = 0: maximum likelihood's MVP with 6 bits. (The
        // docs quote 6.48, HyperLogLog's own register estimator: 6·(3 ln 2 − 1).)
        assert!((mvp_ml(Shape { p: 10, t: 0, d: 0 }) - 6.448_539_931_661_557).abs() < 1e-10);
    }

    #[test]
    fn hurwitz_zeta_at_known_points() {
        // ζ(2, 1) = π²/6, ζ(3, 1) = Apéry's constant, ζ(2, 1/2) = π²/2.
        let pi2 = std::f64::consts::PI * std::f64::consts::PI;
        assert!((hurwitz_zeta(2.0, 1.0) - pi2 / 6.0).abs() < 1e-14);
        assert!((hurwitz_zeta(3.0, 1.0) - 1.202_056_903_159_594_3).abs() < 1e-14);
        assert!((hurwitz_zeta(2.0, 0.5) - pi2 / 2.0).abs() < 1e-13);
    }

    #[test]
    fn fgra_factor_matches_hash4j_at_precision_3() {
        // λ_3 = 94.59940317105753 (hash4j's first estimation factor).
        let m: f64 = 8.0;
        let lambda = m.powf(1.0 + 1.0 / TAU) / (1.0 + V * (1.0 + TAU) / (2.0 * m));
        assert!((lambda - 94.599_403_171_057_53).abs() < 1e-9, "{lambda}");
    }

    #[test]
    fn small_sketches_estimate_about_their_count() {
        // The register estimators themselves, on a dense array (a sparse sketch counts
        // exactly): empty, then one item.
        let estimates = |registers: &[u64]| {
            let (mut histogram, mut seen, mut unseen) = ([0u32; 256], vec![0u32; ULL.levels()], 0u128);
            for &r in registers {
                histogram[r as usize] += 1;
                ULL.count_seen(r, 1, &mut seen);
                unseen += ULL.change_fixed(r);
            }
            [fgra(ULL, &histogram), corrected_ml(ULL, unseen, &seen)]
        };
        let mut registers = vec![0u64; ULL.registers()];
        assert_eq!(estimates(&registers), [0.0, 0.0]);
        let (index, k) = ULL.locate(0x8000_0000_0000_0001);
        registers[index] = ULL.updated(0, k);
        for estimate in estimates(&registers) {
            assert!((estimate - 1.0).abs() < 0.01, "{estimate}");
        }
    }
}
