//! Accuracy sweep: the measured relative error of each cardinality estimator against its
//! theory, over cardinalities from 1 to 10^6; then the quantile sketches' errors against
//! their bounds.
//!
//! Each trial observes the items `0..n` under its own hash seed, so trials are independent.
//! The sketch is read at checkpoints as it grows, which gives one error per trial and
//! checkpoint. Prints a table, and with `--csv PATH` writes every row for the notebook.
//!
//! The quantile part draws 10⁵ log-normal values a trial (a seeded generator of its own) and
//! reads p50, p99 and p99.9: for KLL, the 99th percentile over the trials of the rank error
//! `|R(answer) − q|`, which its a priori error `ε` bounds (99 % confidence); for DDSketch, the
//! largest relative value error over the trials, which its `α` bounds always.
//!
//! ```text
//! cargo run --release --example accuracy                   # table, 200 trials
//! cargo run --release --example accuracy -- --trials 1000 --csv notebooks/accuracy.csv
//! ```

use std::error::Error;
use std::fmt::Write as _;

use rand::distr::Open01;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use synopses::cardinality::{FlajoletMartin, HyperLogLog};
use synopses::quantiles::{DDSketch, Kll, Search};

/// Cardinalities at which every sketch is read.
fn checkpoints() -> Vec<u64> {
    let mut out: Vec<u64> = (1..=10).collect();
    for decade in 1..=5 {
        let base = 10u64.pow(decade);
        out.extend([base * 2, base * 5, base * 10]);
    }
    out
}

struct Row {
    sketch: String,
    estimator: &'static str,
    size: usize,
    n: u64,
    rmse: f64,
    bias: f64,
    theory: f64,
    /// The errors' quantiles at [`LEVELS`], for DataSketches-style error-distribution plots.
    quantiles: [f64; 7],
}

/// The quantiles of the errors that each row reports: the median, and the bands holding the
/// middle 50 %, 90 % and 98 % of the trials.
const LEVELS: [f64; 7] = [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99];

/// RMSE, bias and the quantiles at [`LEVELS`] (the order statistic of rank `⌈q·T⌉`).
fn summarize(errors: &[f64]) -> (f64, f64, [f64; 7]) {
    let t = errors.len() as f64;
    let bias = errors.iter().sum::<f64>() / t;
    let rmse = (errors.iter().map(|e| e * e).sum::<f64>() / t).sqrt();
    let mut sorted = errors.to_vec();
    sorted.sort_by(f64::total_cmp);
    let quantiles = LEVELS.map(|q| sorted[((q * t).ceil() as usize).clamp(1, sorted.len()) - 1]);
    (rmse, bias, quantiles)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let trials: usize = flag("--trials").map(|s| s.parse()).transpose()?.unwrap_or(200);
    let csv = flag("--csv");
    let points = checkpoints();
    let n_max = *points.last().ok_or("no checkpoints")?;
    let mut rows = Vec::new();

    for p in [4_u8, 6, 8, 12] {
        let m = 1usize << p;
        let (mut mart, mut reg) = (vec![vec![]; points.len()], vec![vec![]; points.len()]);
        for t in 0..trials {
            let mut hll = HyperLogLog::with_seed(p, 0xACC0_0000 + t as u64)?;
            let mut next = 0;
            for i in 0..n_max {
                hll.observe(i);
                if i + 1 == points[next] {
                    let n = points[next] as f64;
                    mart[next].push(hll.estimate() / n - 1.0);
                    reg[next].push(hll.register_estimate() / n - 1.0);
                    next += 1;
                }
            }
        }
        for (k, &n) in points.iter().enumerate() {
            // β_m of Flajolet et al. (2007): the register estimator's error times sqrt(m).
            let beta = match m {
                16 => 1.106,
                32 => 1.070,
                64 => 1.054,
                128 => 1.046,
                _ => 1.0390,
            };
            for (estimator, errs, c) in [("martingale", &mart[k], 0.8326), ("register", &reg[k], beta)] {
                let (rmse, bias, quantiles) = summarize(errs);
                rows.push(Row {
                    sketch: format!("HyperLogLog p={p}"),
                    estimator,
                    size: m,
                    n,
                    rmse,
                    bias,
                    theory: c / (m as f64).sqrt(),
                    quantiles,
                });
            }
        }
    }

    for m in [64_usize, 256, 1024] {
        let mut errs = vec![vec![]; points.len()];
        for t in 0..trials {
            let mut fm = FlajoletMartin::with_seed(m, 0xF00D_0000 + t as u64)?;
            let mut next = 0;
            for i in 0..n_max {
                fm.observe(i);
                if i + 1 == points[next] {
                    errs[next].push(fm.estimate() / points[next] as f64 - 1.0);
                    next += 1;
                }
            }
        }
        for (k, &n) in points.iter().enumerate() {
            let (rmse, bias, quantiles) = summarize(&errs[k]);
            // Linear counting answers up to 3m (its error formula, Whang et al.), PCSA above.
            let (mf, nf) = (m as f64, n as f64);
            let theory = if nf <= FlajoletMartin::LINEAR_COUNTING_LIMIT * mf {
                let t = nf / mf;
                (mf * (t.exp() - t - 1.0)).sqrt() / nf
            } else {
                0.78 / mf.sqrt()
            };
            rows.push(Row {
                sketch: format!("FlajoletMartin m={m}"),
                estimator: "fm",
                size: m,
                n,
                rmse,
                bias,
                theory,
                quantiles,
            });
        }
    }

    println!("{trials} trials per point; errors are relative (estimate / n - 1)");
    println!(
        "{:<22} {:<11} {:>8} {:>9} {:>9} {:>9} {:>7}",
        "sketch", "estimator", "n", "rmse", "bias", "theory", "ratio"
    );
    for r in &rows {
        println!(
            "{:<22} {:<11} {:>8} {:>9.5} {:>9.5} {:>9.5} {:>7.3}",
            r.sketch,
            r.estimator,
            r.n,
            r.rmse,
            r.bias,
            r.theory,
            r.rmse / r.theory
        );
    }
    quantiles(trials)?;
    if let Some(path) = csv {
        let mut out = String::from("sketch,estimator,size,n,rmse,bias,theory,trials,q01,q05,q25,q50,q75,q95,q99\n");
        for r in &rows {
            let q = r.quantiles.map(|x| x.to_string()).join(",");
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{q}",
                r.sketch, r.estimator, r.size, r.n, r.rmse, r.bias, r.theory, trials
            )?;
        }
        std::fs::write(&path, out)?;
        println!("wrote {path}");
    }
    Ok(())
}

/// The quantile sketches' measured errors at p50, p99 and p99.9 against their bounds.
fn quantiles(trials: usize) -> Result<(), Box<dyn Error>> {
    const N: usize = 100_000;
    const QS: [f64; 3] = [0.5, 0.99, 0.999];
    // Each trial's values, and their sorted copy for the truth.
    let streams: Vec<(Vec<f64>, Vec<f64>)> = (0..trials as u64)
        .map(|t| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x9A11_0000 + t);
            let mut uniform = move || -> f64 { rng.sample(Open01) };
            let values: Vec<f64> = (0..N)
                .map(|_| {
                    let (u, v) = (uniform(), uniform());
                    (2.0 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()).exp()
                })
                .collect();
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            (values, sorted)
        })
        .collect();
    println!();
    println!("quantiles: {trials} trials of {N} log-normal values; KLL: 99th percentile of the rank error, against ε");
    println!("{:<22} {:>9} {:>9} {:>9} {:>9}", "sketch", "p50", "p99", "p99.9", "bound");
    for k in [100_u16, 200, 800] {
        let mut errors = vec![Vec::new(); QS.len()];
        let mut bound = 0.0;
        for (t, (values, sorted)) in streams.iter().enumerate() {
            let mut s = Kll::new(k, t as u64)?;
            values.iter().try_for_each(|&x| s.add(x))?;
            bound = s.rank_error();
            let view = s.sorted_view();
            for (i, &q) in QS.iter().enumerate() {
                let answer = *view.quantile(q, Search::Inclusive)?.ok_or("empty")?;
                errors[i].push((sorted.partition_point(|&x| x <= answer) as f64 / N as f64 - q).abs());
            }
        }
        let p99 = |e: &mut Vec<f64>| {
            e.sort_by(f64::total_cmp);
            e[((e.len() as f64 * 0.99).ceil() as usize).clamp(1, e.len()) - 1]
        };
        let [a, b, c] = [0, 1, 2].map(|i| p99(&mut errors[i]));
        println!("{:<22} {a:>9.5} {b:>9.5} {c:>9.5} {bound:>9.5}", format!("Kll k={k}"));
    }
    for alpha in [0.01, 0.02] {
        let mut worst = [0.0_f64; 3];
        for (values, sorted) in &streams {
            let mut s = DDSketch::new(alpha)?;
            values.iter().try_for_each(|&x| s.add(x))?;
            for (i, &q) in QS.iter().enumerate() {
                let truth = sorted[(q * (N - 1) as f64).floor() as usize];
                let answer = s.quantile(q)?.ok_or("empty")?;
                worst[i] = worst[i].max((answer - truth).abs() / truth);
            }
        }
        let [a, b, c] = worst;
        println!("{:<22} {a:>9.5} {b:>9.5} {c:>9.5} {alpha:>9.5}", format!("DDSketch α={alpha}"));
    }
    Ok(())
}
