//! Sampling and load-shedding sweep: the measured behaviour of the reservoirs, priority
//! sampling and the load shedder against their theory, for `notebooks/sampling.ipynb`.
//!
//! Every experiment computes its theory value next to its measurement:
//!
//! * **Reservoir** (Algorithm L): how often each of `n = 50` positions lands in a sample of
//!   `k = 10`, in one pass and merged from random splits into 2 to 4 parts made with
//!   `Mergeable::empty_part`, against `k/n`; and the random numbers drawn as `n` grows, against
//!   their exact expectation `k + 1 + 2k(H_n − H_k)` (about `k(1 + 2 ln(n/k))`), with its
//!   standard deviation `2·√(Σ_{i>k} (k/i)(1 − k/i))`.
//! * **Weighted reservoir** (A-ExpJ): inclusion frequencies of a 10-item weighted population
//!   against the exact PPSWOR probabilities, computed here by enumerating every ordered draw
//!   (as `tests/accuracy.rs` does), one pass and merged.
//! * **Priority sampling**: subset-sum estimates over a fixed heavy-tailed (Pareto 1.2)
//!   population, two subsets and several `k`: the relative error of each trial and its
//!   estimated standard error `√(Σ τ·max(0, τ − w))`, the mean estimate against the truth,
//!   the mean variance estimate against the variance of the estimates, and the coverage of
//!   the ±2σ intervals.
//! * **Load shedding**: Horvitz–Thompson count, sum and mean behind a random shedder, at a
//!   fixed `p` and while `p` changes, against the exact variances `Σ (1 − p_i)/p_i · y_i²`
//!   (and the family docs' rule of thumb), with the coverage of the 95 % intervals; a
//!   semantic drop's kept fraction and bias; distinct counts (HyperLogLog behind `LoadShedder::unweighted`)
//!   behind key-hash and random shedding for keys repeated `m` times, against 1 and
//!   `(1 − (1 − p)^m)/p`; and the overload simulator (`Simulation`), a burst at 3× capacity
//!   with no shedding, the Aurora headroom controller and a PI controller (and a fixed
//!   `p = 0.3`, which thins the Poisson arrivals to an M/D/1 queue at utilization 0.9: the
//!   control run), with the queue length of the fixed and headroom runs against the M/D/1
//!   tail `e^(−θn)`, `θ = H(e^θ − 1)`, and the exact M/D/1 distribution (computed here from
//!   its embedded Markov chain), and the dispersion (variance over mean) of the items kept
//!   per 100 ms, 1 for a Poisson stream.
//!
//! `--trials T` (default 1000) sets the number of seeds: `20·T` samples for the inclusion
//! experiments, `T` for Algorithm L's draws, priority sampling and Horvitz–Thompson, `T/5`
//! for the distinct counts and `T/10` simulator runs per controller. Every seed is fixed, so
//! two runs print the same numbers. Prints one table per experiment, and with `--csv DIR`
//! writes one CSV per experiment into `DIR` (created if missing) for the notebook.
//!
//! ```text
//! cargo run --release --example sampling                   # tables, 1000 trials
//! cargo run --release --example sampling -- --trials 1000 --csv notebooks/sampling
//! ```

use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;

use synopses::cardinality::HyperLogLog;
use synopses::core::{Confidence, Estimate, Mergeable, Weight};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};
use synopses::shedding::{
    DropPolicy, FixedRate, Headroom, HorvitzThompson, KeyHashDrop, Load, LoadShedder, Phase, PiController, PiGains,
    RandomDrop, RateController, Report, SemanticDrop, Simulation,
};

/// Sebastiano Vigna's splitmix64: a tiny, seeded generator for populations and split points.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `(0, 1)`.
    fn next_f64(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// Cuts `0..n` into 2 to 4 consecutive parts at random points (parts may be empty or smaller
/// than the sample), as `tests/accuracy.rs` does.
fn random_split(n: usize, rng: &mut SplitMix64) -> Vec<std::ops::Range<usize>> {
    let parts = 2 + (rng.next_u64() % 3) as usize;
    let mut cuts: Vec<usize> = (1..parts).map(|_| (rng.next_u64() % (n as u64 + 1)) as usize).collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for cut in cuts.into_iter().chain([n]) {
        out.push(start..cut);
        start = cut;
    }
    out
}

/// Mean and sample standard deviation.
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 { xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, var.sqrt())
}

/// One CSV file: a header and its lines.
struct Csv {
    name: &'static str,
    header: &'static str,
    lines: String,
}

impl Csv {
    fn new(name: &'static str, header: &'static str) -> Self {
        Self { name, header, lines: String::new() }
    }

    fn row(&mut self, fields: &[String]) -> Result<(), std::fmt::Error> {
        writeln!(self.lines, "{}", fields.join(","))
    }

    fn write(&self, dir: &Path) -> Result<(), Box<dyn Error>> {
        let path = dir.join(self.name);
        std::fs::write(&path, format!("{}\n{}", self.header, self.lines))?;
        println!("wrote {}", path.display());
        Ok(())
    }
}

/// Formats any displayable values as CSV fields.
macro_rules! fields {
    ($($x:expr),* $(,)?) => { [$($x.to_string()),*] };
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let trials: usize = flag("--trials").map(|s| s.parse()).transpose()?.unwrap_or(1000);
    if trials < 50 {
        return Err("--trials must be at least 50 (the simulator runs T/10 seeds, the distinct counts T/5)".into());
    }
    let csv_dir = flag("--csv");
    println!("{trials} trials (T): 20·T samples for inclusions, T seeds for draws, priority and Horvitz–Thompson,");
    println!("T/5 for distinct counts, T/10 simulator runs per controller\n");

    let mut csvs = Vec::new();
    csvs.push(reservoir_inclusion(20 * trials)?);
    csvs.push(reservoir_draws(trials)?);
    csvs.push(weighted_inclusion(20 * trials)?);
    csvs.extend(priority(trials)?);
    csvs.extend(horvitz_thompson(trials)?);
    csvs.push(semantic()?);
    csvs.push(distinct(trials / 5)?);
    csvs.extend(overload(trials / 10)?);
    if let Some(dir) = csv_dir {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir)?;
        for csv in &csvs {
            csv.write(dir)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reservoir (Algorithm L)
// ---------------------------------------------------------------------------------------------

/// Inclusion counts per position, in one pass and merged from random splits.
fn reservoir_inclusion(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const N: usize = 50;
    const K: usize = 10;
    let mut split_rng = SplitMix64(0xC0FF_EE00);
    let (mut one, mut merged) = ([0_u64; N], [0_u64; N]);
    for t in 0..trials as u64 {
        let mut r = Reservoir::new(K, 0x5A3F_0000 + t)?;
        r.observe_all(0..N);
        r.iter().for_each(|&i| one[i] += 1);

        let mut whole = Reservoir::new(K, 0x7A3F_0000 + t)?;
        let parts: Vec<Reservoir<usize>> = random_split(N, &mut split_rng)
            .into_iter()
            .enumerate()
            .map(|(index, range)| {
                let mut part = whole.empty_part(index as u64);
                part.observe_all(range);
                part
            })
            .collect();
        whole.merge_all(&parts)?;
        if (whole.seen(), whole.len()) != (N as u64, K) {
            return Err(format!("merged reservoir saw {} and holds {}", whole.seen(), whole.len()).into());
        }
        whole.iter().for_each(|&i| merged[i] += 1);
    }
    let p = K as f64 / N as f64;
    let t = trials as f64;
    let sd = (p * (1.0 - p) / t).sqrt();
    let mut csv = Csv::new("reservoir_inclusion.csv", "mode,n,k,trials,position,count,measured,theory,sd");
    println!("Reservoir: inclusion frequency of each of n = {N} positions in a sample of k = {K}, {trials} samples");
    println!("{:<10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}", "mode", "min", "max", "k/n", "sd", "max |z|", "χ²(49)");
    for (mode, counts) in [("one pass", &one), ("merged", &merged)] {
        let rates: Vec<f64> = counts.iter().map(|&c| c as f64 / t).collect();
        let z_max = rates.iter().map(|r| ((r - p) / sd).abs()).fold(0.0, f64::max);
        // Pearson's statistic: the counts sum to T·k, so it is n/(n − 1) times a χ² with n − 1
        // degrees of freedom.
        let chi2: f64 = rates.iter().map(|r| ((r - p) / sd).powi(2)).sum::<f64>() * (N as f64 - 1.0) / N as f64;
        let (lo, hi) = rates.iter().fold((1.0_f64, 0.0_f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        println!("{mode:<10} {lo:>9.4} {hi:>9.4} {p:>9.4} {sd:>9.4} {z_max:>10.2} {chi2:>9.1}");
        for (position, (&count, rate)) in counts.iter().zip(&rates).enumerate() {
            csv.row(&fields![mode, N, K, trials, position, count, rate, p, sd])?;
        }
    }
    println!();
    Ok(csv)
}

/// `H_n`, the `n`-th harmonic number (Euler–Maclaurin; exact to 1e-12 from `n = 10`, summed below).
fn harmonic(n: u64) -> f64 {
    if n < 10 {
        return (1..=n).map(|i| 1.0 / i as f64).sum();
    }
    let x = n as f64;
    x.ln() + 0.577_215_664_901_532_9 + 1.0 / (2.0 * x) - 1.0 / (12.0 * x * x) + 1.0 / (120.0 * x.powi(4))
}

/// `Σ_{i > n} 1/i²` (trigamma of `n + 1`, asymptotically).
fn inverse_square_tail(n: u64) -> f64 {
    let x = n as f64 + 1.0;
    1.0 / x + 1.0 / (2.0 * x * x) + 1.0 / (6.0 * x.powi(3)) - 1.0 / (30.0 * x.powi(5))
}

/// Algorithm L's random draws as `n` grows, against `k + 1 + 2k(H_n − H_k)`.
fn reservoir_draws(seeds: usize) -> Result<Csv, Box<dyn Error>> {
    const N_MAX: u64 = 100_000_000;
    let mut csv = Csv::new(
        "reservoir_draws.csv",
        "k,n,seeds,mean_draws,sd_draws,min_draws,max_draws,expected,expected_sd,approx,mean_entries",
    );
    println!("Reservoir: random numbers drawn by Algorithm L over n items, {seeds} seeds");
    println!(
        "{:>5} {:>10} {:>11} {:>9} {:>11} {:>9} {:>12} {:>7}",
        "k", "n", "mean draws", "sd", "expected", "exp. sd", "k(1+2ln n/k)", "z"
    );
    for k in [10_u64, 100, 1000] {
        let checkpoints: Vec<u64> = (0..)
            .flat_map(|decade| [1, 2, 5].map(|m| m * k * 10_u64.pow(decade)))
            .take_while(|&n| n <= N_MAX)
            .collect();
        let mut draws = vec![Vec::with_capacity(seeds); checkpoints.len()];
        for s in 0..seeds as u64 {
            let mut r = Reservoir::new(k as usize, 0xD7A0_0000 + s)?;
            let mut seen = 0;
            for (&n, d) in checkpoints.iter().zip(&mut draws) {
                r.observe_all(seen..n);
                seen = n;
                d.push(r.random_draws() as f64);
            }
        }
        for (&n, d) in checkpoints.iter().zip(&draws) {
            let (mean, sd) = mean_sd(d);
            let (lo, hi) = d.iter().fold((f64::MAX, 0.0_f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            // Item i > k enters with probability k/i, independently of the others: the entries
            // E have mean k(H_n − H_k) and variance Σ (k/i)(1 − k/i); the draws are
            // k (filling) + 1 (the first skip) + 2 per entry (its key and the next skip).
            let kf = k as f64;
            let entries = kf * (harmonic(n) - harmonic(k));
            let var_entries = entries - kf * kf * (inverse_square_tail(k) - inverse_square_tail(n));
            let expected = kf + 1.0 + 2.0 * entries;
            let expected_sd = 2.0 * var_entries.max(0.0).sqrt();
            let approx = kf * (1.0 + 2.0 * (n as f64 / kf).ln());
            let z = if expected_sd > 0.0 { (mean - expected) / (expected_sd / (seeds as f64).sqrt()) } else { 0.0 };
            println!(
                "{k:>5} {n:>10} {mean:>11.1} {sd:>9.1} {expected:>11.1} {expected_sd:>9.1} {approx:>12.1} {z:>7.2}"
            );
            csv.row(&fields![k, n, seeds, mean, sd, lo, hi, expected, expected_sd, approx, (mean - kf - 1.0) / 2.0])?;
        }
    }
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Weighted reservoir (A-ExpJ) against PPSWOR
// ---------------------------------------------------------------------------------------------

/// Exact inclusion probabilities of sampling `k` of `weights` without replacement, each draw
/// proportional to weight among the items left (PPSWOR): the sum over every ordered draw.
fn ppswor_inclusions(weights: &[f64], k: usize) -> Vec<f64> {
    fn walk(w: &[f64], k: usize, drawn: &mut Vec<usize>, p: f64, single: &mut [f64]) {
        if drawn.len() == k {
            for &i in drawn.iter() {
                single[i] += p;
            }
            return;
        }
        let left: f64 = w.iter().enumerate().filter(|(i, _)| !drawn.contains(i)).map(|(_, w)| w).sum();
        for (i, &wi) in w.iter().enumerate() {
            if !drawn.contains(&i) {
                drawn.push(i);
                walk(w, k, drawn, p * wi / left, single);
                drawn.pop();
            }
        }
    }
    let mut single = vec![0.0; weights.len()];
    walk(weights, k, &mut Vec::with_capacity(k), 1.0, &mut single);
    single
}

/// The weighted reservoir's inclusion frequencies against PPSWOR, one pass and merged.
fn weighted_inclusion(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const WEIGHTS: [f64; 10] = [0.5, 1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 40.0];
    let total: f64 = WEIGHTS.iter().sum();
    let items: Vec<(usize, Weight)> = WEIGHTS
        .iter()
        .enumerate()
        .map(|(i, &w)| Ok((i, Weight::new(w)?)))
        .collect::<Result<_, synopses::ConfigError>>()?;
    let mut csv = Csv::new(
        "weighted_inclusion.csv",
        "mode,k,item,weight,total_weight,trials,count,measured,ppswor,sd,proportional",
    );
    println!("Weighted reservoir: inclusion frequencies against exact PPSWOR, weights {WEIGHTS:?}, {trials} samples");
    println!(
        "{:>3} {:<10} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "k", "mode", "max |z|", "w=0.5", "PPSWOR", "w=40", "PPSWOR"
    );
    let t = trials as f64;
    for k in [2_usize, 4, 6] {
        let exact = ppswor_inclusions(&WEIGHTS, k);
        let mut split_rng = SplitMix64(0xBEEF_0000 + k as u64);
        let (mut one, mut merged) = (vec![0_u64; WEIGHTS.len()], vec![0_u64; WEIGHTS.len()]);
        for s in 0..trials as u64 {
            let mut r = WeightedReservoir::new(k, 0x3E16_0000 + s)?;
            r.observe_all(items.iter().copied());
            r.iter().for_each(|&(i, _)| one[i] += 1);

            let mut whole = WeightedReservoir::new(k, 0x4E16_0000 + s)?;
            let parts: Vec<WeightedReservoir<usize>> = random_split(items.len(), &mut split_rng)
                .into_iter()
                .enumerate()
                .map(|(index, range)| {
                    let mut part = whole.empty_part(index as u64);
                    part.observe_all(items[range].iter().copied());
                    part
                })
                .collect();
            whole.merge_all(&parts)?;
            whole.iter().for_each(|&(i, _)| merged[i] += 1);
        }
        for (mode, counts) in [("one pass", &one), ("merged", &merged)] {
            let mut z_max = 0.0_f64;
            for (i, (&count, &pi)) in counts.iter().zip(&exact).enumerate() {
                let sd = (pi * (1.0 - pi) / t).sqrt();
                let measured = count as f64 / t;
                z_max = z_max.max(((measured - pi) / sd).abs());
                let proportional = k as f64 * WEIGHTS[i] / total;
                csv.row(&fields![mode, k, i, WEIGHTS[i], total, trials, count, measured, pi, sd, proportional])?;
            }
            let last = WEIGHTS.len() - 1;
            println!(
                "{k:>3} {mode:<10} {z_max:>9.2} {:>10.4} {:>10.4} {:>10.4} {:>10.4}",
                counts[0] as f64 / t,
                exact[0],
                counts[last] as f64 / t,
                exact[last]
            );
        }
    }
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Priority sampling
// ---------------------------------------------------------------------------------------------

/// Subset sums from priority samples of a fixed Pareto(1.2) population.
fn priority(seeds: usize) -> Result<Vec<Csv>, Box<dyn Error>> {
    const N: u64 = 10_000;
    const ALPHA: f64 = 1.2;
    const KS: [usize; 5] = [10, 30, 100, 300, 1000];
    let mut rng = SplitMix64(0x009A_4E70);
    let weights: Vec<f64> = (0..N).map(|_| rng.next_f64().powf(-1.0 / ALPHA)).collect();
    let items: Vec<(u64, Weight)> = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| Ok((i as u64, Weight::new(w)?)))
        .collect::<Result<_, synopses::ConfigError>>()?;
    type Subset = (&'static str, fn(&u64) -> bool);
    let subsets: [Subset; 2] =
        [("every third item", |i| i.is_multiple_of(3)), ("one item in 100", |i| i.is_multiple_of(100))];
    let truths: Vec<f64> = subsets.iter().map(|(_, f)| (0..N).filter(f).map(|i| weights[i as usize]).sum()).collect();
    let total: f64 = weights.iter().sum();
    let largest = weights.iter().copied().fold(0.0, f64::max);

    // One row per trial for the larger subset (the notebook's histograms); the summary has both.
    let mut trials_csv = Csv::new("priority_trials.csv", "k,relative_error,relative_se");
    let mut summary = Csv::new(
        "priority.csv",
        "k,subset,n,subset_items,seeds,truth,total_weight,mean_estimate,sd_estimate,mean_variance_estimate,\
         sd_variance_estimate,m4_estimate,covered_2sigma,coverage_2sigma,mean_threshold,mean_sampled_in_subset,mean_exact_in_subset,\
         zero_estimates",
    );
    println!(
        "Priority sampling: {N} items of Pareto({ALPHA}) weights (total {total:.0}, largest {largest:.0}), {seeds} seeds"
    );
    println!(
        "{:>5} {:<17} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "k", "subset", "truth", "mean est", "bias/SE", "sd/truth", "√E[v̂]/t", "cover 2σ", "mean τ", "exact"
    );
    for k in KS {
        // Per subset: estimates, variance estimates, covered, sampled, exact (w ≥ τ), zero.
        let mut est = vec![Vec::with_capacity(seeds); subsets.len()];
        let mut var = vec![Vec::with_capacity(seeds); subsets.len()];
        let mut covered = vec![0_u64; subsets.len()];
        let mut sampled = vec![0_u64; subsets.len()];
        let mut exact = vec![0_u64; subsets.len()];
        let mut zero = vec![0_u64; subsets.len()];
        let mut tau_sum = 0.0;
        for s in 0..seeds {
            let mut p = PrioritySample::new(k, 0x9000_0000 + s as u64)?;
            p.observe_all(items.iter().copied());
            let tau = p.threshold();
            tau_sum += tau;
            for (j, ((_, in_subset), &truth)) in subsets.iter().zip(&truths).enumerate() {
                let e: Estimate = p.subset_sum(in_subset);
                covered[j] += u64::from(e.bounds(Confidence::TwoSigma).contains(truth));
                zero[j] += u64::from(e.value == 0.0);
                for (item, w, _) in p.sample() {
                    if in_subset(item) {
                        sampled[j] += 1;
                        exact[j] += u64::from(w >= tau);
                    }
                }
                if j == 0 {
                    trials_csv.row(&fields![
                        k,
                        format!("{:.5}", e.value / truth - 1.0),
                        format!("{:.5}", e.standard_error() / truth)
                    ])?;
                }
                est[j].push(e.value);
                var[j].push(e.variance);
            }
        }
        let sf = seeds as f64;
        for (j, ((name, in_subset), &truth)) in subsets.iter().zip(&truths).enumerate() {
            let (mean, sd) = mean_sd(&est[j]);
            let (mean_v, sd_v) = mean_sd(&var[j]);
            // The fourth central moment, for the standard error of the sample variance.
            let m4 = est[j].iter().map(|x| (x - mean).powi(4)).sum::<f64>() / sf;
            let bias_z = (mean - truth) / (sd / sf.sqrt());
            let coverage = covered[j] as f64 / sf;
            println!(
                "{k:>5} {name:<17} {truth:>10.1} {mean:>10.1} {bias_z:>9.2} {:>9.4} {:>9.4} {:>9.4} {:>9.2} {:>8.2}",
                sd / truth,
                mean_v.sqrt() / truth,
                coverage,
                tau_sum / sf,
                exact[j] as f64 / sf,
            );
            summary.row(&fields![
                k,
                name,
                N,
                (0..N).filter(in_subset).count(),
                seeds,
                truth,
                total,
                mean,
                sd,
                mean_v,
                sd_v,
                m4,
                covered[j],
                coverage,
                tau_sum / sf,
                sampled[j] as f64 / sf,
                exact[j] as f64 / sf,
                zero[j]
            ])?;
        }
    }
    println!();
    Ok(vec![summary, trials_csv])
}

// ---------------------------------------------------------------------------------------------
// Load shedding: Horvitz–Thompson while p changes
// ---------------------------------------------------------------------------------------------

/// A keep probability that follows a fixed schedule, one step per control call: the example's
/// stand-in for a controller whose `p` moves.
#[derive(Clone)]
struct Schedule {
    steps: Vec<f64>,
    at: usize,
}

impl RateController for Schedule {
    fn keep_probability(&self) -> f64 {
        self.steps.get(self.at % self.steps.len()).copied().unwrap_or(1.0)
    }

    fn update(&mut self, _: &Load) {
        self.at += 1;
    }
}

/// Items between two control steps in the Horvitz–Thompson experiment.
const BLOCK: usize = 1000;

/// Horvitz–Thompson count, sum and mean behind a random shedder, fixed and changing `p`.
fn horvitz_thompson(seeds: usize) -> Result<Vec<Csv>, Box<dyn Error>> {
    const N: usize = 6000;
    const RUNNING_SEEDS: usize = 3;
    let values: Vec<f64> = (0..N as u64).map(|i| ((i * 7919) % 1000) as f64 / 10.0).collect();
    let schedules: [(&str, Vec<f64>); 3] =
        [("fixed p = 0.1", vec![0.1]), ("fixed p = 0.5", vec![0.5]), ("changing 0.1/0.5/0.9", vec![0.1, 0.5, 0.9])];
    let mut summary = Csv::new(
        "ht.csv",
        "schedule,quantity,n,seeds,truth,mean_estimate,sd_estimate,theory_sd,mean_variance_estimate,covered_95,\
         coverage_95,doc_rule_sd,mean_kept",
    );
    let mut z_csv = Csv::new("ht_z.csv", "schedule,z_count,z_sum,z_mean");
    let mut running = Csv::new("ht_running.csv", "schedule,seed,items,p,true_sum,estimate,standard_error");
    let true_count = N as f64;
    let true_sum: f64 = values.iter().sum();
    let true_mean = true_sum / true_count;
    let cv = (values.iter().map(|y| (y - true_mean).powi(2)).sum::<f64>() / true_count).sqrt() / true_mean;
    println!(
        "Horvitz–Thompson behind a random shedder: {N} values (mean {true_mean:.2}, CV {cv:.3}), p set every {BLOCK} items, {seeds} seeds"
    );
    println!(
        "{:<21} {:<6} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "schedule", "", "truth", "mean est", "bias/SE", "sd", "theory", "√E[v̂]", "cover 95"
    );
    for (name, steps) in &schedules {
        let p_of = |i: usize| steps[(i / BLOCK) % steps.len()];
        // Exact variances: Σ (1 − p)/p over the items (count), times y² (sum), and the mean's
        // linearization, times (y − ȳ)²/n².
        let spread = |f: &dyn Fn(f64) -> f64| -> f64 {
            values.iter().enumerate().map(|(i, &y)| (1.0 - p_of(i)) / p_of(i) * f(y)).sum()
        };
        let theory = [
            spread(&|_| 1.0).sqrt(),
            spread(&|y| y * y).sqrt(),
            (spread(&|y| (y - true_mean).powi(2)) / (true_count * true_count)).sqrt(),
        ];
        let doc_rule = if steps.len() == 1 {
            let p = steps[0];
            let rse = ((1.0 - p) / (p * true_count)).sqrt() * cv;
            [f64::NAN, rse * true_sum, rse * true_mean]
        } else {
            [f64::NAN; 3]
        };
        let mut estimates: [Vec<Estimate>; 3] = Default::default();
        let mut kept = 0_u64;
        for s in 0..seeds {
            let mut shedder = LoadShedder::new(
                HorvitzThompson::new(),
                RandomDrop::new(0xAB_0000 + s as u64),
                Schedule { steps: steps.clone(), at: 0 },
            );
            let mut sum_so_far = 0.0;
            for (b, block) in values.chunks(BLOCK).enumerate() {
                if s < RUNNING_SEEDS {
                    for (j, &v) in block.iter().enumerate() {
                        shedder.observe(v);
                        sum_so_far += v;
                        let items = b * BLOCK + j + 1;
                        if items.is_multiple_of(100) {
                            let e = shedder.inner().sum();
                            running.row(&fields![
                                name,
                                s,
                                items,
                                shedder.keep_probability(),
                                sum_so_far,
                                e.value,
                                e.standard_error()
                            ])?;
                        }
                    }
                } else {
                    shedder.observe_slice(block);
                }
                shedder.control(Load {
                    offered: 0,
                    elapsed: 1.0,
                    queue_len: 0,
                    cost_per_item: 0.0,
                    queue_delay: 0.0,
                })?;
            }
            let ht = shedder.inner();
            kept += ht.kept();
            let e = [ht.count(), ht.sum(), ht.mean()];
            let z = |e: &Estimate, truth: f64| format!("{:.3}", (e.value - truth) / e.standard_error());
            z_csv.row(&fields![name, z(&e[0], true_count), z(&e[1], true_sum), z(&e[2], true_mean)])?;
            for (all, e) in estimates.iter_mut().zip(e) {
                all.push(e);
            }
        }
        for (q, (quantity, truth)) in
            [("count", true_count), ("sum", true_sum), ("mean", true_mean)].into_iter().enumerate()
        {
            let values: Vec<f64> = estimates[q].iter().map(|e| e.value).collect();
            let variances: Vec<f64> = estimates[q].iter().map(|e| e.variance).collect();
            let (mean, sd) = mean_sd(&values);
            let (mean_v, _) = mean_sd(&variances);
            let covered =
                estimates[q].iter().filter(|e| e.bounds(Confidence::NinetyFivePercent).contains(truth)).count();
            let coverage = covered as f64 / seeds as f64;
            let bias_z = (mean - truth) / (sd / (seeds as f64).sqrt());
            println!(
                "{name:<21} {quantity:<6} {truth:>11.2} {mean:>11.2} {bias_z:>9.2} {sd:>9.2} {:>9.2} {:>9.2} {coverage:>9.3}",
                theory[q],
                mean_v.sqrt()
            );
            summary.row(&fields![
                name,
                quantity,
                N,
                seeds,
                truth,
                mean,
                sd,
                theory[q],
                mean_v,
                covered,
                coverage,
                doc_rule[q],
                kept as f64 / seeds as f64
            ])?;
        }
    }
    println!("(the family docs' rule of thumb, √((1 − p)/(p·n)) × CV, for the fixed schedules: see ht.csv)");
    println!();
    Ok(vec![summary, z_csv, running])
}

/// A semantic drop keeps the largest values: what it keeps, and what a weight-1 sum then says.
fn semantic() -> Result<Csv, Box<dyn Error>> {
    const N: u64 = 100_000;
    let values: Vec<f64> = (0..N).map(|i| ((i * 7919) % 1000) as f64 / 10.0).collect();
    let true_sum: f64 = values.iter().sum();
    let mut csv = Csv::new(
        "semantic.csv",
        "p,n,kept,kept_fraction,kept_sum,true_sum,top_share,recall_of_top,weighted_sum_ratio,final_cut",
    );
    println!("Semantic drop (keep the largest values) behind a Horvitz–Thompson estimator, {N} values");
    println!(
        "{:>5} {:>9} {:>14} {:>14} {:>12} {:>9}",
        "p", "kept", "kept sum/total", "top-p share", "recall top p", "cut"
    );
    for p in [0.05, 0.1, 0.25, 0.5] {
        let mut policy = SemanticDrop::new(|y: &f64| *y);
        let mut ht = HorvitzThompson::new();
        let mut kept_values = Vec::new();
        for &v in &values {
            if let Some(w) = policy.decide(&v, p) {
                ht.observe_weighted(v, w);
                kept_values.push(v);
            }
        }
        let mut sorted = values.clone();
        sorted.sort_unstable_by(|a, b| b.total_cmp(a));
        let top = (p * N as f64).round() as usize;
        let cut = sorted.get(top.saturating_sub(1)).copied().unwrap_or(0.0);
        let top_share = sorted.iter().take(top).sum::<f64>() / true_sum;
        let recall = kept_values.iter().filter(|&&v| v >= cut).count().min(top) as f64 / top as f64;
        let kept = ht.kept();
        println!(
            "{p:>5} {kept:>9} {:>14.4} {top_share:>14.4} {recall:>12.4} {:>9.1}",
            ht.sum().value / true_sum,
            policy.cut()
        );
        csv.row(&fields![
            p,
            N,
            kept,
            kept as f64 / N as f64,
            ht.sum().value,
            true_sum,
            top_share,
            recall,
            ht.sum().value / true_sum,
            policy.cut()
        ])?;
    }
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Load shedding: distinct counts behind key-hash and random drops
// ---------------------------------------------------------------------------------------------

/// HyperLogLog behind each policy, keys repeated `m` times: `estimate / (p·D)` against 1
/// (key hash) and `(1 − (1 − p)^m)/p` (random).
fn distinct(seeds: usize) -> Result<Csv, Box<dyn Error>> {
    const KEYS: u64 = 20_000;
    const REPEATS: [u64; 5] = [1, 2, 4, 8, 16];
    const PS: [f64; 3] = [0.1, 0.25, 0.5];
    let mut csv = Csv::new(
        "distinct.csv",
        "policy,p,repeats,keys,seeds,mean_ratio,sd_ratio,theory_ratio,theory_rse,hll_rse,kept_fraction",
    );
    println!("Distinct keys behind a shedder: HyperLogLog p = 12 estimate / (p·D), D = {KEYS}, {seeds} seeds");
    println!(
        "{:<8} {:>5} {:>3} {:>10} {:>9} {:>10} {:>10} {:>7}",
        "policy", "p", "m", "mean", "sd", "theory", "th. rse", "z"
    );
    for m in REPEATS {
        let stream: Vec<u64> = (0..KEYS * m).map(|i| i % KEYS).collect();
        for p in PS {
            let (mut by_key, mut by_row) = (Vec::with_capacity(seeds), Vec::with_capacity(seeds));
            let (mut rse_key, mut rse_row) = (0.0, 0.0);
            let (mut kept_key, mut kept_row) = (0_u64, 0_u64);
            for s in 0..seeds as u64 {
                let seed = 0xD15_0000 + s;
                let mut key_shedder = LoadShedder::unweighted(
                    HyperLogLog::with_seed(12, seed)?,
                    KeyHashDrop::with_seed(!seed),
                    FixedRate::new(p)?,
                );
                let mut row_shedder = LoadShedder::unweighted(
                    HyperLogLog::with_seed(12, seed)?,
                    RandomDrop::new(seed),
                    FixedRate::new(p)?,
                );
                key_shedder.observe_slice(&stream);
                row_shedder.observe_slice(&stream);
                let scale = p * KEYS as f64;
                by_key.push(key_shedder.inner().estimate() / scale);
                by_row.push(row_shedder.inner().estimate() / scale);
                rse_key += key_shedder.inner().relative_standard_error();
                rse_row += row_shedder.inner().relative_standard_error();
                kept_key += key_shedder.stats().kept;
                kept_row += row_shedder.stats().kept;
            }
            let sf = seeds as f64;
            let offered = (KEYS * m) as f64 * sf;
            // Key hash: each key kept with probability p, so the kept keys are Binomial(D, p).
            // Random: a key seen m times survives with probability q = 1 − (1 − p)^m, and the
            // kept keys are Binomial(D, q); the ratio to p·D then has mean q/p.
            let q = 1.0 - (1.0 - p).powi(m as i32);
            let d = KEYS as f64;
            for (policy, ratios, rse_sum, kept, survive) in
                [("key hash", &by_key, rse_key, kept_key, p), ("random", &by_row, rse_row, kept_row, q)]
            {
                let (mean, sd) = mean_sd(ratios);
                let hll_rse = rse_sum / sf;
                let target = survive / p;
                let rse = (hll_rse * hll_rse + (1.0 - survive) / (survive * d)).sqrt();
                let z = (mean - target) / (target * rse / sf.sqrt());
                println!("{policy:<8} {p:>5} {m:>3} {mean:>10.4} {sd:>9.4} {target:>10.4} {rse:>10.4} {z:>7.2}");
                csv.row(&fields![policy, p, m, KEYS, seeds, mean, sd, target, rse, hll_rse, kept as f64 / offered])?;
            }
        }
    }
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Load shedding: the overload simulator
// ---------------------------------------------------------------------------------------------

/// `θ > 0` with `ρ(e^θ − 1) = θ`: the decay rate of the M/D/1 queue at utilization `ρ < 1`.
fn md1_theta(rho: f64) -> f64 {
    let f = |t: f64| rho * t.exp_m1() - t;
    let (mut lo, mut hi) = (1e-9, 50.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `P(N ≥ n)` for `n = 0..len` of the number in an M/D/1 system at utilization `rho`: the
/// stationary law of its embedded chain at departures (which is also the time-average law),
/// truncated at `STATES` and solved by Gaussian elimination with partial pivoting.
fn md1_tail(rho: f64, len: usize) -> Result<Vec<f64>, Box<dyn Error>> {
    const STATES: usize = 600;
    // Arrivals during one service: Poisson(ρ).
    let mut arrivals = vec![0.0; STATES];
    let mut term = (-rho).exp();
    for (j, a) in arrivals.iter_mut().enumerate() {
        *a = term;
        term *= rho / (j + 1) as f64;
    }
    // Transition i → j: from 0 (and from 1) to A; from i ≥ 1 to i − 1 + A. The last state
    // takes the truncated remainder. Build (Pᵀ − I) with its last row replaced by Σ π = 1.
    let mut a = vec![vec![0.0; STATES + 1]; STATES];
    for i in 0..STATES {
        let base = i.saturating_sub(1);
        let mut row_sum = 0.0;
        for (j, row) in a.iter_mut().enumerate().skip(base) {
            let pij = if j + 1 == STATES { 1.0 - row_sum } else { arrivals[j - base] };
            row_sum += pij;
            row[i] += pij;
        }
    }
    for (i, row) in a.iter_mut().enumerate() {
        row[i] -= 1.0;
    }
    for cell in a[STATES - 1].iter_mut().take(STATES) {
        *cell = 1.0;
    }
    a[STATES - 1][STATES] = 1.0;
    for col in 0..STATES {
        let pivot = (col..STATES).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs())).ok_or("empty system")?;
        a.swap(col, pivot);
        let head = a[col].clone();
        if head[col].abs() < 1e-300 {
            return Err("singular M/D/1 system".into());
        }
        for row in a.iter_mut().skip(col + 1) {
            let factor = row[col] / head[col];
            if factor != 0.0 {
                for (x, h) in row.iter_mut().zip(&head).skip(col) {
                    *x -= factor * h;
                }
            }
        }
    }
    let mut pi = vec![0.0; STATES];
    for row in (0..STATES).rev() {
        let rest: f64 = (row + 1..STATES).map(|j| a[row][j] * pi[j]).sum();
        pi[row] = (a[row][STATES] - rest) / a[row][row];
    }
    let mut tail = vec![0.0; STATES + 1];
    for n in (0..STATES).rev() {
        tail[n] = tail[n + 1] + pi[n].max(0.0);
    }
    Ok(tail.into_iter().take(len).collect())
}

/// Variance over mean of the sums of `counts` over consecutive windows of `window` entries: 1
/// for a Poisson stream, below 1 for a stream more regular than Poisson.
fn dispersion(counts: &[f64], window: usize) -> f64 {
    let sums: Vec<f64> = counts.chunks_exact(window).map(|c| c.iter().sum()).collect();
    let (mean, sd) = mean_sd(&sums);
    if mean > 0.0 { sd * sd / mean } else { f64::NAN }
}

/// What one simulator run measured in the steady part of the burst.
struct Steady {
    queues: Vec<u64>,
    kept_rate: f64,
}

/// The overload simulator: a 10 s burst at 3× capacity, four controllers, many seeds.
fn overload(seeds: usize) -> Result<Vec<Csv>, Box<dyn Error>> {
    const COST: f64 = 0.001;
    const TICK: f64 = 0.01;
    const HEADROOM: f64 = 0.9;
    const MAIN_SEED: u64 = 2024;
    // The burst's steady part for the queue-length distribution: after its first second.
    const STEADY: (f64, f64) = (3.0, 12.0);
    // Ticks per window for the dispersion of the kept and offered counts: 100 ms.
    const WINDOW: usize = 10;
    let phases = vec![
        Phase { duration: 2.0, rate: 500.0 },
        Phase { duration: 10.0, rate: 3000.0 },
        Phase { duration: 3.0, rate: 500.0 },
    ];
    type Run = fn(&Simulation) -> Result<Report, synopses::ConfigError>;
    // `fixed p = 0.3` is the control run for the queue-length distribution: Poisson arrivals
    // thinned at a fixed p are Poisson at 900/s, an M/D/1 queue at utilization exactly 0.9.
    let controllers: [(&str, Run); 4] = [
        ("no shedding", |sim| Ok(sim.run(FixedRate::new(1.0)?))),
        ("fixed p = 0.3", |sim| Ok(sim.run(FixedRate::new(0.3)?))),
        ("headroom H = 0.9", |sim| Ok(sim.run(Headroom::new(HEADROOM)?))),
        ("PI on delay (20 ms)", |sim| {
            Ok(sim.run(PiController::new(0.02, PiGains { proportional: 0.3, integral: 5.0 })?))
        }),
    ];
    let mut series =
        Csv::new("overload_series.csv", "controller,time,queue_len,keep_probability,offered_rate,kept_rate");
    let mut summary = Csv::new(
        "overload.csv",
        "controller,seed,offered,kept,max_queue,latency_p50,latency_p99,latency_max,kept_rate_steady,\
         mean_queue_steady,mean_keep_probability_steady,kept_dispersion_100ms,offered_dispersion_100ms",
    );
    println!(
        "Overload: capacity 1000 items/s (1 ms each), 2 s at 500/s, 10 s at 3000/s, 3 s at 500/s, control every 10 ms"
    );
    println!("{seeds} seeds; seed {MAIN_SEED} is the one of examples/overload.rs. Means over the seeds:");
    println!(
        "{:<20} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>11} {:>10} {:>10}",
        "controller",
        "offered",
        "kept",
        "max queue",
        "p50 ms",
        "p99 ms",
        "kept/s",
        "queue 3-12s",
        "disp kept",
        "disp offer"
    );
    // Per controller of interest (fixed p = 0.3, headroom): each seed's steady part.
    let mut steady_runs: Vec<(&str, Vec<Steady>)> = Vec::new();
    for (name, run) in controllers {
        let mut rows = Vec::new();
        let mut runs = Vec::new();
        for s in 0..seeds as u64 {
            let seed = MAIN_SEED + s;
            let sim = Simulation::new(phases.clone(), COST, seed)?.with_tick(TICK)?;
            let report = run(&sim)?;
            let steady: Vec<_> =
                report.series.iter().filter(|x| x.time > STEADY.0 && x.time <= STEADY.1 + 1e-9).collect();
            let queues: Vec<u64> = steady.iter().map(|x| x.queue_len).collect();
            let mean_queue = queues.iter().sum::<u64>() as f64 / queues.len().max(1) as f64;
            let mean_p = steady.iter().map(|x| x.keep_probability).sum::<f64>() / steady.len().max(1) as f64;
            let kept_rate = report.kept_rate(STEADY.0, STEADY.1);
            let kept: Vec<f64> = steady.iter().map(|x| (x.kept_rate * TICK).round()).collect();
            let offered: Vec<f64> = steady.iter().map(|x| (x.offered_rate * TICK).round()).collect();
            let (kept_dispersion, offered_dispersion) = (dispersion(&kept, WINDOW), dispersion(&offered, WINDOW));
            if seed == MAIN_SEED && name != "fixed p = 0.3" {
                for x in &report.series {
                    series.row(&fields![
                        name,
                        format!("{:.2}", x.time),
                        x.queue_len,
                        format!("{:.4}", x.keep_probability),
                        x.offered_rate,
                        x.kept_rate
                    ])?;
                }
            }
            summary.row(&fields![
                name,
                seed,
                report.offered,
                report.kept,
                report.max_queue,
                report.latency_p50,
                report.latency_p99,
                report.latency_max,
                kept_rate,
                mean_queue,
                mean_p,
                kept_dispersion,
                offered_dispersion
            ])?;
            rows.push([
                report.offered as f64,
                report.kept as f64,
                report.max_queue as f64,
                1e3 * report.latency_p50,
                1e3 * report.latency_p99,
                kept_rate,
                mean_queue,
                kept_dispersion,
                offered_dispersion,
            ]);
            runs.push(Steady { queues, kept_rate });
        }
        let avg: Vec<f64> = (0..9).map(|i| rows.iter().map(|r| r[i]).sum::<f64>() / rows.len() as f64).collect();
        println!(
            "{name:<20} {:>9.0} {:>9.0} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>11.2} {:>10.3} {:>10.3}",
            avg[0], avg[1], avg[2], avg[3], avg[4], avg[5], avg[6], avg[7], avg[8]
        );
        if name == "fixed p = 0.3" || name.starts_with("headroom") {
            steady_runs.push((name, runs));
        }
    }

    // The queue-length distribution of the fixed-p and headroom runs against M/D/1.
    let theta_h = md1_theta(HEADROOM);
    let longest = steady_runs.iter().flat_map(|(_, runs)| runs.iter().flat_map(|r| r.queues.iter())).copied().max();
    let len = longest.unwrap_or(0) as usize + 2;
    let md1_h = md1_tail(HEADROOM, len)?;
    let mut tail_csv = Csv::new(
        "queue_tail.csv",
        "controller,n,seeds,snapshots,measured,seed_sd,bound_h,md1_h,theta_h,utilization,bound_rho,md1_rho,theta_rho",
    );
    println!(
        "\nQueue length at the control steps between {} s and {} s, against M/D/1 (θ = {theta_h:.4} at H = {HEADROOM}):",
        STEADY.0, STEADY.1
    );
    for (name, runs) in &steady_runs {
        let rates: Vec<f64> = runs.iter().map(|r| r.kept_rate).collect();
        let rho = mean_sd(&rates).0 * COST;
        let theta_rho = md1_theta(rho);
        let md1_rho = md1_tail(rho, len)?;
        let snapshots: usize = runs.iter().map(|r| r.queues.len()).sum();
        println!(
            "{name}: measured utilization ρ = kept rate × cost = {rho:.4}, θ there {theta_rho:.4}; {snapshots} snapshots"
        );
        println!(
            "{:>4} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10}",
            "n", "P(N ≥ n)", "seed sd", "e^(−θn) H", "M/D/1 H", "e^(−θn) ρ", "M/D/1 ρ"
        );
        for n in 0..len {
            let per_seed: Vec<f64> = runs
                .iter()
                .map(|r| r.queues.iter().filter(|&&x| x as usize >= n).count() as f64 / r.queues.len().max(1) as f64)
                .collect();
            let (measured, sd) = mean_sd(&per_seed);
            let (bound_h, bound_rho) = ((-theta_h * n as f64).exp(), (-theta_rho * n as f64).exp());
            if n % 5 == 0 {
                println!(
                    "{n:>4} {measured:>10.3e} {sd:>9.2e} {bound_h:>10.3e} {:>10.3e} {bound_rho:>10.3e} {:>10.3e}",
                    md1_h[n], md1_rho[n]
                );
            }
            tail_csv.row(&fields![
                name,
                n,
                runs.len(),
                snapshots,
                measured,
                sd,
                bound_h,
                md1_h[n],
                theta_h,
                rho,
                bound_rho,
                md1_rho[n],
                theta_rho
            ])?;
        }
    }
    println!();
    Ok(vec![series, summary, tail_csv])
}
