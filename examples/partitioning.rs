//! Partitioning a stream over workers: balls into bins and the power of `d` choices, then the
//! crate's groupings under Zipf-skewed keys.
//!
//! **Balls into bins.** `n` balls (items of distinct keys) go into `n` bins (workers). With one
//! random choice the fullest bin holds `Θ(ln n / ln ln n)` balls; with the least loaded of
//! `d ≥ 2` random choices, `ln ln n / ln d + O(1)` (Azar, Broder, Karlin and Upfal 1994): two
//! choices are exponentially better than one, and more than two only shave a constant factor.
//! The routes are [`DChoices`] over `n` workers, each trial under its own routing seed.
//!
//! **Groupings under skew.** `N` items over `W` workers, their keys drawn from a Zipf law of
//! exponent `s` over 10⁴ keys. Key grouping sends each key to one worker, so the worker of the
//! most frequent key carries at least its share `p₁·N`; shuffle grouping balances perfectly
//! but scatters every key; partial key grouping (Nasir et al. 2015) gives each key two
//! workers and sends each item to the less loaded, which balances as long as no key exceeds
//! what two workers can take: past `p₁ > 2/W` its fullest worker carries at least `p₁·N/2`.
//! [`DChoices`] with `d = 4` gives each key four workers: the same floor at `p₁ > 4/W`. The
//! imbalance printed is the fullest worker's load over the mean load, minus 1, beside those
//! floors (`≥`).
//!
//! ```text
//! cargo run --release --example partitioning                     # tables, 100 trials
//! cargo run --release --example partitioning -- --trials 400 --csv notebooks/partitioning
//! ```

use std::error::Error;
use std::fmt::Write as _;

use rand::distr::Open01;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use synopses::stream::{DChoices, KeyGrouping, PartialKeyGrouping, Partitioner, ShuffleGrouping};

/// The fullest worker's load after routing `items` with `p`.
fn max_load<P: Partitioner>(mut p: P, items: impl Iterator<Item = u64>) -> u64 {
    items.for_each(|i| {
        p.route(&i);
    });
    p.loads().iter().copied().max().unwrap_or(0)
}

/// `N` keys drawn from a Zipf law of exponent `s` over `keys` keys (key `j` with probability
/// `∝ 1/(j + 1)^s`), by inverting its cumulative distribution; and the most frequent key's
/// probability `p₁`.
fn zipf(s: f64, keys: usize, n: usize, seed: u64) -> (Vec<u64>, f64) {
    let weights: Vec<f64> = (0..keys).map(|j| 1.0 / ((j + 1) as f64).powf(s)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(keys);
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let draws = (0..n)
        .map(|_| {
            let u: f64 = rng.sample(Open01);
            cdf.partition_point(|&c| c < u).min(keys - 1) as u64
        })
        .collect();
    (draws, weights[0] / total)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let trials: u64 = flag("--trials").map(|s| s.parse()).transpose()?.unwrap_or(100);
    let csv = flag("--csv");

    println!("balls into bins: n items of distinct keys over n workers, {trials} trials");
    println!("{:>7} {:>3} {:>10} {:>8} {:>8}   theory", "n", "d", "mean max", "min", "max");
    let mut bins_csv = String::from("n,d,trials,mean_max_load,min_max_load,max_max_load,theory\n");
    for log2 in [8_u32, 10, 12, 14, 16] {
        let n = 1_usize << log2;
        for d in 1..=4 {
            let loads: Vec<u64> = (0..trials)
                .map(|t| {
                    let p = DChoices::with_seed(n, d, 0xB1A5 + t).expect("a valid shape");
                    max_load(p, 0..n as u64)
                })
                .collect();
            let mean = loads.iter().sum::<u64>() as f64 / trials as f64;
            let (lo, hi) = (loads.iter().min().copied().unwrap_or(0), loads.iter().max().copied().unwrap_or(0));
            let ln = (n as f64).ln();
            // Leading terms only: Θ(ln n / ln ln n) for one choice, ln ln n / ln d + O(1) for more.
            let (theory, label) = if d == 1 {
                (ln / ln.ln(), "ln n / ln ln n (Θ)")
            } else {
                (ln.ln() / (d as f64).ln(), "ln ln n / ln d (+ O(1))")
            };
            println!("{n:>7} {d:>3} {mean:>10.2} {lo:>8} {hi:>8}   {theory:.2} {label}");
            writeln!(bins_csv, "{n},{d},{trials},{mean},{lo},{hi},{theory}")?;
        }
    }

    const WORKERS: usize = 16;
    const ITEMS: usize = 1_000_000;
    const KEYS: usize = 10_000;
    println!();
    println!("groupings: {ITEMS} items, Zipf keys over {KEYS}, {WORKERS} workers; imbalance = max / mean − 1");
    println!(
        "{:>5} {:>8} {:>8} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11}",
        "s", "p1", "2/W", "key", "shuffle", "partial", "partial ≥", "d=4 choices", "d=4 ≥"
    );
    let mut groups_csv = String::from("s,p1,workers,key,shuffle,partial,pkg_floor,dchoices4,dchoices4_floor\n");
    let mean = ITEMS as f64 / WORKERS as f64;
    for s in [0.5, 0.8, 1.0, 1.2, 1.5, 2.0] {
        let (keys, p1) = zipf(s, KEYS, ITEMS, 0x21BF);
        let imbalance = |max: u64| max as f64 / mean - 1.0;
        let key = imbalance(max_load(KeyGrouping::new(WORKERS)?, keys.iter().copied()));
        let shuffle = imbalance(max_load(ShuffleGrouping::new(WORKERS)?, keys.iter().copied()));
        let partial = imbalance(max_load(PartialKeyGrouping::new(WORKERS)?, keys.iter().copied()));
        let four = imbalance(max_load(DChoices::new(WORKERS, 4)?, keys.iter().copied()));
        // Past d/W the top key alone puts p₁·N/d on one of its d workers: an imbalance of at
        // least p₁·W/d − 1, whatever the other keys do.
        let floor = |d: f64| (p1 * WORKERS as f64 / d - 1.0).max(0.0);
        let (floor2, floor4) = (floor(2.0), floor(4.0));
        let threshold = 2.0 / WORKERS as f64;
        println!(
            "{s:>5.1} {p1:>8.4} {threshold:>8.4} {key:>9.4} {shuffle:>9.4} {partial:>9.4} {floor2:>11.4} {four:>11.4} {floor4:>11.4}"
        );
        writeln!(groups_csv, "{s},{p1},{WORKERS},{key},{shuffle},{partial},{floor2},{four},{floor4}")?;
    }

    if let Some(dir) = csv {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(format!("{dir}/bins.csv"), bins_csv)?;
        std::fs::write(format!("{dir}/groupings.csv"), groups_csv)?;
        println!("wrote {dir}/bins.csv and {dir}/groupings.csv");
    }
    Ok(())
}
