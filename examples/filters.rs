//! Frequency and membership sweep: the measured error of Count-Min, heavy hitters, Bloom and
//! counting Bloom filters against their theory, for `notebooks/filters.ipynb`.
//!
//! Every experiment computes its theory value next to its measurement:
//!
//! * **Bloom**: the false-positive rate as a filter fills from 0.1× to 3× its design size
//!   (a 1 % filter for 20 000 items, and an explicit 2^18 bits with 4 hashes), measured with
//!   absent items, against `(1 − e^(−kn/m))^k` and the filter's own `fill^k`; then the rate
//!   against the number of hashes `k` at 5, 10 and 15 bits per item, whose minimum is at
//!   `k = (m/n)·ln 2`.
//! * **Count-Min**: on a seeded Zipf(1) stream and a uniform one, the fraction of keys whose
//!   estimate exceeds the count by more than `εN` (`ε = e/w`) against `δ = e^-d`, standard and
//!   conservative update side by side, with `heavy keys × w^-d` (the chance of sharing all `d`
//!   counters with a key heavier than `εN`); one row's mean excess over the count against
//!   `(N − f)/w`; and whether the rows, which the crate derives from one 64-bit hash (rows 0
//!   and 1 its low and high 32 bits, row `i ≥ 2` the top 32 bits of the hash times its own odd
//!   constant), collide independently: a stream of one key, and the chance that another key
//!   shares all its counters, against `w^-d` and `δ`. Next to it, on the same seeds and keys,
//!   the same count for a model of the crate's previous design, double hashing
//!   (`g_i = h1 + i·h2`, computed here, not in the crate), against its estimate `I_d/w²`:
//!   the reason the design changed.
//! * **Counting Bloom**: the fraction of saturated counters against the load `λ = kn/m` for
//!   4- and 8-bit counters, against the binomial tail `P(Binomial(kn, 1/m) ≥ 2^b − 1)` and
//!   Fan et al.'s bound; and the members lost (false negatives) when items that were never
//!   inserted are removed, against a first-order model.
//! * **Heavy hitters**: the largest undercount of any key against `N/(k+1)` and against the
//!   summary's own `error()`, one pass and merged from 4 parts.
//!
//! Trials are independent hash seeds (or, for heavy hitters, independent streams; Count-Min's
//! one-row and one-key experiments, which are cheap, use 5 and 20 seeds per trial); every seed
//! is fixed, so two runs print the same numbers. Prints one table per experiment, and with
//! `--csv DIR` writes one CSV per experiment into `DIR` (created if missing) for the notebook.
//!
//! ```text
//! cargo run --release --example filters                    # tables, 20 trials
//! cargo run --release --example filters -- --trials 50 --csv notebooks/filters
//! ```

use std::error::Error;
use std::f64::consts::{E, LN_2};
use std::fmt::Write as _;
use std::path::Path;

use synopses::frequency::{CountMin, HeavyHitters, Update};
use synopses::hash::Hashable;
use synopses::membership::{Bloom, CounterWidth, CountingBloom};

/// Keys in the Count-Min and heavy-hitters streams.
const KEYS: usize = 20_000;
/// Items in each of those streams.
const STREAM: usize = 200_000;
/// Absent items asked of a Bloom filter per filter and point.
const BLOOM_QUERIES: u64 = 100_000;
/// Keys asked of each one-key Count-Min sketch in the row-independence experiment. The chance
/// of a collision varies from seed to seed (with where the one key falls in its columns), so
/// many seeds with few queries each measure it better than the reverse.
const PAIR_QUERIES: u64 = 10_000;
/// First absent item: far above every inserted item and every stream key.
const ABSENT: u64 = 1 << 40;

/// Sebastiano Vigna's splitmix64: a tiny, seeded generator for the streams.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)` with 53 random bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `len` keys in `0..KEYS`, key `j` with probability proportional to `1/(j+1)` (Zipf, exponent
/// 1), by inverse-CDF sampling.
fn zipf_stream(len: usize, seed: u64) -> Vec<u64> {
    let mut cdf = Vec::with_capacity(KEYS);
    let mut total = 0.0;
    for j in 1..=KEYS {
        total += 1.0 / j as f64;
        cdf.push(total);
    }
    let mut rng = SplitMix64(seed);
    (0..len)
        .map(|_| {
            let u = rng.next_f64() * total;
            cdf.partition_point(|&c| c <= u).min(KEYS - 1) as u64
        })
        .collect()
}

/// `len` keys drawn uniformly from `0..KEYS`.
fn uniform_stream(len: usize, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64(seed);
    (0..len).map(|_| (rng.next_f64() * KEYS as f64) as u64).collect()
}

/// The exact count of every key of `0..KEYS`.
fn counts(stream: &[u64]) -> Vec<u64> {
    let mut f = vec![0_u64; KEYS];
    for &x in stream {
        if let Some(c) = f.get_mut(x as usize) {
            *c += 1;
        }
    }
    f
}

/// `P(X ≥ t)` for `X ~ Binomial(n, p)`, summed from `t` upward so that tiny tails keep their
/// precision: the first term by its logarithm, the next ones by the ratio of successive terms.
fn binomial_tail(n: u64, p: f64, t: u64) -> f64 {
    if t == 0 {
        return 1.0;
    }
    if t > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let log_choose: f64 = (0..t).map(|i| ((n - i) as f64 / (i + 1) as f64).ln()).sum();
    let mut term = (log_choose + t as f64 * p.ln() + (n - t) as f64 * (1.0 - p).ln()).exp();
    let mut tail = 0.0;
    let mut j = t;
    while term > 0.0 && j <= n {
        tail += term;
        if term < 1e-17 * tail {
            break;
        }
        term *= (n - j) as f64 / (j + 1) as f64 * p / (1.0 - p);
        j += 1;
    }
    tail.min(1.0)
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
    let trials: usize = flag("--trials").map(|s| s.parse()).transpose()?.unwrap_or(20);
    if trials < 2 {
        return Err("--trials must be at least 2 (the spread across trials is reported)".into());
    }
    let csv_dir = flag("--csv");
    println!("{trials} trials (independent hash seeds, or streams for heavy hitters) per point\n");

    let csvs = [
        bloom_fill(trials)?,
        bloom_hashes(trials)?,
        count_min_tail(trials)?,
        count_min_row(trials)?,
        count_min_pairs(trials)?,
        counting_saturation(trials)?,
        counting_removal(trials)?,
        heavy_hitters(trials)?,
    ];
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
// Bloom
// ---------------------------------------------------------------------------------------------

/// One Bloom point, over `trials` filters: false positives among `BLOOM_QUERIES` absent items
/// each, and the filters' own `fill^k`.
struct BloomPoint {
    false_positives: u64,
    fill_rates: Vec<f64>,
}

impl BloomPoint {
    fn new() -> Self {
        Self { false_positives: 0, fill_rates: Vec::new() }
    }

    /// Queries `filter` with absent items and records its fill-based rate.
    fn measure(&mut self, filter: &Bloom) {
        self.false_positives += (ABSENT..ABSENT + BLOOM_QUERIES).filter(|&q| filter.contains(q)).count() as u64;
        self.fill_rates.push(filter.false_positive_rate());
    }

    fn rate(&self) -> f64 {
        self.false_positives as f64 / (BLOOM_QUERIES as f64 * self.fill_rates.len() as f64)
    }
}

/// The false-positive rate as the filter fills, from 0.1× to 3× its design size.
fn bloom_fill(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const DESIGN: u64 = 20_000;
    const LOADS: [f64; 12] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0];
    let sized = Bloom::with_false_positive_rate(DESIGN, 0.01)?;
    let filters = [("1% design for 20000", sized.bits(), sized.hashes()), ("explicit 2^18 bits k=4", 1 << 18, 4)];
    let mut csv = Csv::new(
        "bloom_fill.csv",
        "filter,bits,hashes,design,n,load,filters,queries,false_positives,measured,formula,fill_rate,fill_rate_sd",
    );
    println!("Bloom: false-positive rate as the filter fills ({} absent queries per filter)", BLOOM_QUERIES);
    println!(
        "{:<24} {:>7} {:>5} {:>11} {:>11} {:>11} {:>7}",
        "filter", "n", "n/des", "measured", "formula", "fill^k", "ratio"
    );
    let checkpoints: Vec<u64> = LOADS.iter().map(|l| (l * DESIGN as f64).round() as u64).collect();
    for (name, bits, hashes) in filters {
        let mut points: Vec<BloomPoint> = checkpoints.iter().map(|_| BloomPoint::new()).collect();
        for t in 0..trials {
            let mut filter = Bloom::with_seed(bits, hashes, 0xB100_0000 + t as u64)?;
            let mut inserted = 0;
            for (&n, point) in checkpoints.iter().zip(&mut points) {
                filter.observe_all(inserted..n);
                inserted = n;
                point.measure(&filter);
            }
        }
        for ((&n, point), load) in checkpoints.iter().zip(&points).zip(LOADS) {
            let formula = Bloom::with_seed(bits, hashes, 0)?.expected_false_positive_rate(n);
            let (fill_rate, fill_sd) = mean_sd(&point.fill_rates);
            let measured = point.rate();
            println!(
                "{name:<24} {n:>7} {load:>5.2} {measured:>11.3e} {formula:>11.3e} {fill_rate:>11.3e} {:>7.3}",
                measured / formula
            );
            csv.row(&fields![
                name,
                bits,
                hashes,
                DESIGN,
                n,
                load,
                trials,
                BLOOM_QUERIES,
                point.false_positives,
                measured,
                formula,
                fill_rate,
                fill_sd
            ])?;
        }
    }
    println!();
    Ok(csv)
}

/// The false-positive rate against the number of hashes `k`, at fixed bits per item.
fn bloom_hashes(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const ITEMS: u64 = 10_000;
    let mut csv = Csv::new(
        "bloom_hashes.csv",
        "bits_per_item,bits,n,hashes,k_opt,filters,queries,false_positives,measured,formula,fill_rate,fill_rate_sd",
    );
    println!("Bloom: false-positive rate against k at fixed m/n (n = {ITEMS})");
    println!("{:>5} {:>3} {:>6} {:>11} {:>11} {:>11}", "m/n", "k", "k_opt", "measured", "formula", "fill^k");
    for bits_per_item in [5_usize, 10, 15] {
        let bits = bits_per_item * ITEMS as usize;
        let k_opt = bits_per_item as f64 * LN_2;
        for hashes in 1..=16_u32 {
            let mut point = BloomPoint::new();
            for t in 0..trials {
                let mut filter = Bloom::with_seed(bits, hashes, 0xB200_0000 + t as u64)?;
                filter.observe_all(0..ITEMS);
                point.measure(&filter);
            }
            let formula = Bloom::with_seed(bits, hashes, 0)?.expected_false_positive_rate(ITEMS);
            let (fill_rate, fill_sd) = mean_sd(&point.fill_rates);
            let measured = point.rate();
            let best = if (f64::from(hashes) - k_opt).abs() < 0.5 { "  ← k closest to (m/n)·ln 2" } else { "" };
            println!(
                "{bits_per_item:>5} {hashes:>3} {k_opt:>6.2} {measured:>11.3e} {formula:>11.3e} {fill_rate:>11.3e}{best}"
            );
            csv.row(&fields![
                bits_per_item,
                bits,
                ITEMS,
                hashes,
                k_opt,
                trials,
                BLOOM_QUERIES,
                point.false_positives,
                measured,
                formula,
                fill_rate,
                fill_sd
            ])?;
        }
    }
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Count-Min
// ---------------------------------------------------------------------------------------------

/// The two Count-Min streams: a fixed Zipf(1) sample and a fixed uniform one.
fn count_min_streams() -> [(&'static str, Vec<u64>); 2] {
    [("zipf", zipf_stream(STREAM, 0x21BF_0001)), ("uniform", uniform_stream(STREAM, 0x0F1F_0001))]
}

/// The fraction of keys whose estimate exceeds their count by more than `εN`, against
/// `δ = e^-d`, for both update rules.
fn count_min_tail(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const WIDTHS: [u32; 4] = [16, 64, 256, 1024];
    const DEPTHS: [u32; 6] = [1, 2, 3, 4, 6, 8];
    let mut csv = Csv::new(
        "countmin_tail.csv",
        "stream,N,keys,width,depth,update,epsilon,delta,trials,exceed_fraction,exceed_fraction_sd,\
         mean_overestimate,max_overestimate,worse_than_standard,under_counts,heavy_keys,pair_estimate",
    );
    println!(
        "Count-Min: fraction of the {KEYS} keys over-estimated by more than εN = e·N/w (N = {STREAM}), against δ = e^-d"
    );
    println!(
        "{:<8} {:>5} {:>3} {:>9} {:>11} {:>11} {:>11} {:>10} {:>11} {:>10} {:>8} {:>5}",
        "stream",
        "w",
        "d",
        "δ",
        "exceed std",
        "exceed cons",
        "pair est.",
        "mean std",
        "mean cons",
        "mean N/w",
        "cons>std",
        "under"
    );
    for (stream_name, stream) in count_min_streams() {
        let f = counts(&stream);
        let n = stream.len() as f64;
        for width in WIDTHS {
            // Keys heavier than εN: a key that shares all its counters with one is over-estimated
            // by more than εN, whatever the rest of the stream does. With independent rows it
            // shares all d with a given key with probability w^-d.
            let heavy_keys = f.iter().filter(|&&c| c as f64 > E / f64::from(width) * n).count();
            for depth in DEPTHS {
                let pair_estimate = heavy_keys as f64 * f64::from(width).powi(-(depth as i32));
                // Per trial (seed): the fraction exceeding, the summed and largest excess.
                let mut fractions = [Vec::new(), Vec::new()];
                let mut excess_sum = [0_u64; 2];
                let mut excess_max = [0_u64; 2];
                let (mut worse, mut under) = (0_u64, 0_u64);
                let mut epsilon_delta = (0.0, 0.0);
                for t in 0..trials {
                    let seed = 0xC300_0000 + t as u64;
                    let mut standard = CountMin::with_seed(width as usize, depth, seed)?;
                    let mut conservative = CountMin::builder(width as usize, depth)
                        .seed(seed)
                        .update_rule(Update::Conservative)
                        .build()?;
                    standard.observe_all(stream.iter().copied());
                    conservative.observe_all(stream.iter().copied());
                    let threshold = standard.epsilon() * n;
                    epsilon_delta = (standard.epsilon(), standard.delta());
                    let mut exceed = [0_u64; 2];
                    for (key, &count) in f.iter().enumerate() {
                        let key = key as u64;
                        let (s, c) = (standard.estimate(key), conservative.estimate(key));
                        // Never below the count (a deterministic guarantee), and the conservative
                        // estimate never above the standard one.
                        under += u64::from(s < count) + u64::from(c < count);
                        worse += u64::from(c > s);
                        for (rule, estimate) in [s, c].into_iter().enumerate() {
                            let excess = estimate.saturating_sub(count);
                            exceed[rule] += u64::from(excess as f64 > threshold);
                            excess_sum[rule] += excess;
                            excess_max[rule] = excess_max[rule].max(excess);
                        }
                    }
                    for rule in 0..2 {
                        fractions[rule].push(exceed[rule] as f64 / KEYS as f64);
                    }
                }
                let (epsilon, delta) = epsilon_delta;
                let mut means = [0.0; 2];
                for (rule, update) in ["standard", "conservative"].into_iter().enumerate() {
                    let (fraction, sd) = mean_sd(&fractions[rule]);
                    means[rule] = excess_sum[rule] as f64 / (KEYS * trials) as f64;
                    csv.row(&fields![
                        stream_name,
                        STREAM,
                        KEYS,
                        width,
                        depth,
                        update,
                        epsilon,
                        delta,
                        trials,
                        fraction,
                        sd,
                        means[rule],
                        excess_max[rule],
                        if rule == 1 { worse } else { 0 },
                        under,
                        heavy_keys,
                        pair_estimate
                    ])?;
                }
                println!(
                    "{stream_name:<8} {width:>5} {depth:>3} {delta:>9.2e} {:>11.2e} {:>11.2e} {pair_estimate:>11.2e} {:>10.1} {:>11.1} {:>10.1} {worse:>8} {under:>5}",
                    mean_sd(&fractions[0]).0,
                    mean_sd(&fractions[1]).0,
                    means[0],
                    means[1],
                    n / f64::from(width),
                );
            }
        }
    }
    println!();
    Ok(csv)
}

/// One row (depth 1): the mean excess of a key's counter over its count, against `(N − f)/w`,
/// with the single-trial standard deviation `sqrt((1/w)(1 − 1/w) Σ_{y≠x} f(y)²)`.
fn count_min_row(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const WIDTHS: [u32; 4] = [16, 64, 256, 1024];
    let seeds = 5 * trials;
    let mut csv = Csv::new("countmin_row.csv", "stream,N,width,key,label,f,trials,mean_excess,theory,theory_sd");
    println!("Count-Min, one row: mean excess of a key's counter over its count ({seeds} seeds), against (N − f)/w");
    println!(
        "{:<8} {:>5} {:<16} {:>6} {:>11} {:>11} {:>9} {:>7}",
        "stream", "w", "key", "f", "mean excess", "(N − f)/w", "sd", "z"
    );
    for (stream_name, stream) in count_min_streams() {
        let f = counts(&stream);
        let n = stream.len() as u64;
        let sum_sq: f64 = f.iter().map(|&c| (c as f64).powi(2)).sum();
        // In the Zipf stream key j is the (j+1)-th most likely; in the uniform one all are alike.
        let keys: [(u64, &str); 5] = [(0, "key 0"), (9, "key 9"), (99, "key 99"), (999, "key 999"), (ABSENT, "absent")];
        for width in WIDTHS {
            let w = f64::from(width);
            let mut sums = [0_u64; 5];
            for t in 0..seeds {
                let mut row = CountMin::with_seed(width as usize, 1, 0xC400_0000 + t as u64)?;
                row.observe_all(stream.iter().copied());
                for (sum, &(key, _)) in sums.iter_mut().zip(&keys) {
                    let count = f.get(key as usize).copied().unwrap_or(0);
                    *sum += row.estimate(key) - count;
                }
            }
            for (sum, &(key, label)) in sums.iter().zip(&keys) {
                let count = f.get(key as usize).copied().unwrap_or(0);
                let mean = *sum as f64 / seeds as f64;
                let theory = (n - count) as f64 / w;
                let sd = ((1.0 / w) * (1.0 - 1.0 / w) * (sum_sq - (count as f64).powi(2))).sqrt();
                let z = (mean - theory) / (sd / (seeds as f64).sqrt());
                println!(
                    "{stream_name:<8} {width:>5} {label:<16} {count:>6} {mean:>11.1} {theory:>11.1} {sd:>9.1} {z:>7.2}"
                );
                csv.row(&fields![stream_name, n, width, key, label, count, seeds, mean, theory, sd])?;
            }
        }
    }
    println!();
    Ok(csv)
}

/// `I_d = ∫∫ Π_{i<d} (1 − |x + i·y|)⁺ dx dy`, for the model of the previous design (see
/// [`double_hashed_columns`]). By double hashing, `g_i = h1 + i·h2`, two keys whose `g_i`
/// differ by `Δ1 + i·Δ2` collide in row `i` with probability `(1 − w·|Δ1 + i·Δ2|)⁺` (where the
/// bucket boundaries fall), and in all `d` rows with probability about `I_d / w²`
/// (substituting `x = w·Δ1`, `y = w·Δ2`), if the boundaries fall independently from row to
/// row. `I_2 = 1`, as for independent rows; after that `I_d` falls only slowly with `d`, where
/// independent rows would give `w^(2−d)`. (One row puts no constraint on `Δ2`: its collision
/// probability is `1/w`; this returns NaN.)
fn double_hashing_integral(depth: u32) -> f64 {
    if depth < 2 {
        return f64::NAN;
    }
    // Midpoint rule; the integrand vanishes outside |x| < 1, |y| < 2/(d − 1).
    let steps = 1200;
    let y_max = 2.0 / f64::from(depth - 1);
    let (dx, dy) = (2.0 / steps as f64, 2.0 * y_max / steps as f64);
    let mut sum = 0.0;
    for i in 0..steps {
        let x = -1.0 + (i as f64 + 0.5) * dx;
        for j in 0..steps {
            let y = -y_max + (j as f64 + 0.5) * dy;
            let mut product = 1.0;
            for r in 0..depth {
                product *= (1.0 - (x + f64::from(r) * y).abs()).max(0.0);
                if product == 0.0 {
                    break;
                }
            }
            sum += product;
        }
    }
    sum * dx * dy
}

/// A model of the crate's **previous** Count-Min design, for comparison only (the crate no
/// longer uses it): the column of `hash` in rows 0, 1, 2, ... by double hashing (Kirsch and
/// Mitzenmacher), `g_i = h1 + i·h2` over the two 32-bit halves of the hash (`h2` made odd),
/// mapped onto `0..width` by a multiply-shift, as `Columns` did before commit 6f7d5c9.
fn double_hashed_columns(hash: u64, width: u32) -> impl Iterator<Item = u64> {
    let (h1, h2) = (hash as u32, (hash >> 32) as u32 | 1);
    (0_u32..).map(move |i| (u64::from(h1.wrapping_add(i.wrapping_mul(h2))) * u64::from(width)) >> 32)
}

/// The hash seed of the `t`-th sketch of the row-independence experiment.
fn pair_seed(t: usize) -> u64 {
    0xC500_0000 + t as u64
}

/// All-row collisions of one setting, counted per seed (`PAIR_QUERIES` keys each), against `δ`.
struct PairRate {
    hits: u64,
    seeds_hit: u64,
    measured: f64,
    sd: f64,
    z: f64,
    p_value: f64,
}

impl PairRate {
    /// Is the measured rate above `δ`? Two tests. A z-score with the spread across seeds, which
    /// needs many hits. And one that holds whatever that spread: if the rate, averaged over
    /// seeds, were at most δ, a seed would have at least one hit with probability at most Q·δ
    /// (Markov's inequality on its Q queries), independently from seed to seed, so the number
    /// of seeds with a hit would be at most Binomial(seeds, Q·δ): its tail is a p-value.
    fn new(hits_per_seed: &[u64], delta: f64) -> Self {
        let seeds = hits_per_seed.len();
        let fractions: Vec<f64> = hits_per_seed.iter().map(|&h| h as f64 / PAIR_QUERIES as f64).collect();
        let (measured, sd) = mean_sd(&fractions);
        let hits = hits_per_seed.iter().sum();
        let seeds_hit = hits_per_seed.iter().filter(|&&h| h > 0).count() as u64;
        let z = if sd > 0.0 { (measured - delta) / (sd / (seeds as f64).sqrt()) } else { f64::NEG_INFINITY };
        let p_value = binomial_tail(seeds as u64, (PAIR_QUERIES as f64 * delta).min(1.0), seeds_hit);
        Self { hits, seeds_hit, measured, sd, z, p_value }
    }

    fn above_delta(&self) -> bool {
        self.z > 3.0 || self.p_value < 0.00135
    }

    fn z_text(&self) -> String {
        if self.z.is_finite() { format!("{:.1}", self.z) } else { "-".into() }
    }
}

/// Are the rows independent? A sketch of one key (count N, so any other key that shares all
/// its counters is over-estimated by N > εN); the fraction of other keys that do, against
/// `w^-d` (independent rows) and `δ = e^-d`. Next to it, on the same seeds and keys, the same
/// fraction for the model of the previous design (double hashing), against `I_d/w²`.
fn count_min_pairs(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const WIDTHS: [u32; 3] = [16, 64, 256];
    const DEPTHS: [u32; 9] = [1, 2, 3, 4, 6, 8, 10, 14, 20];
    const MAX_DEPTH: usize = DEPTHS[DEPTHS.len() - 1] as usize;
    let mut csv = Csv::new(
        "countmin_pairs.csv",
        "width,depth,seeds,queries,collisions,seeds_hit,measured,measured_sd,independent,delta,z,p_value,\
         dh_collisions,dh_seeds_hit,dh_measured,dh_measured_sd,dh_theory,dh_z,dh_p_value",
    );
    let seeds = 20 * trials;
    println!(
        "Count-Min, a stream of one key: fraction of other keys sharing all its counters ({seeds} seeds × {PAIR_QUERIES}),"
    );
    println!("the crate's rows against w^-d, and a model of its previous design (double hashing) against I_d/w²");
    println!(
        "{:>5} {:>3} {:>9} | {:>10} {:>6} {:>6} {:>10} {:>7} {:>9}     | {:>10} {:>6} {:>6} {:>10} {:>7} {:>9}",
        "w",
        "d",
        "δ = e^-d",
        "crate",
        "hits",
        "seeds",
        "w^-d",
        "z vs δ",
        "p-value",
        "dbl hash",
        "hits",
        "seeds",
        "I_d/w²",
        "z vs δ",
        "p-value"
    );
    let integrals: Vec<f64> = DEPTHS.iter().map(|&d| double_hashing_integral(d)).collect();
    for width in WIDTHS {
        // The model of the previous design: per seed, how many keys share their first r columns
        // (and no more) with the heavy key, r = 0..=MAX_DEPTH.
        let shared_rows: Vec<[u64; MAX_DEPTH + 1]> = (0..seeds)
            .map(|t| {
                let heavy: Vec<u64> =
                    double_hashed_columns(u64::MAX.hash64(pair_seed(t)), width).take(MAX_DEPTH).collect();
                let mut histogram = [0_u64; MAX_DEPTH + 1];
                for q in 0..PAIR_QUERIES {
                    let columns = double_hashed_columns(q.hash64(pair_seed(t)), width);
                    histogram[columns.zip(&heavy).take_while(|(c, h)| c == *h).count()] += 1;
                }
                histogram
            })
            .collect();
        for (&depth, &integral) in DEPTHS.iter().zip(&integrals) {
            let mut crate_hits = Vec::with_capacity(seeds);
            for t in 0..seeds {
                let mut sketch = CountMin::with_seed(width as usize, depth, pair_seed(t))?;
                sketch.observe_weighted(u64::MAX, 1_000);
                let threshold = sketch.epsilon() * sketch.total() as f64;
                crate_hits.push((0..PAIR_QUERIES).filter(|&q| sketch.estimate(q) as f64 > threshold).count() as u64);
            }
            let dh_hits: Vec<u64> = shared_rows.iter().map(|h| h[depth as usize..].iter().sum()).collect();
            let w = f64::from(width);
            let independent = w.powi(-(depth as i32));
            let dh_theory = if depth < 2 { independent } else { integral / (w * w) };
            let delta = (-f64::from(depth)).exp();
            let (now, dh) = (PairRate::new(&crate_hits, delta), PairRate::new(&dh_hits, delta));
            let flag = |r: &PairRate| if r.above_delta() { " > δ" } else { "" };
            println!(
                "{width:>5} {depth:>3} {delta:>9.2e} | {:>10.2e} {:>6} {:>6} {independent:>10.2e} {:>7} {:>9.2e}{:<4} | {:>10.2e} {:>6} {:>6} {dh_theory:>10.2e} {:>7} {:>9.2e}{}",
                now.measured,
                now.hits,
                now.seeds_hit,
                now.z_text(),
                now.p_value,
                flag(&now),
                dh.measured,
                dh.hits,
                dh.seeds_hit,
                dh.z_text(),
                dh.p_value,
                flag(&dh),
            );
            csv.row(&fields![
                width,
                depth,
                seeds,
                PAIR_QUERIES,
                now.hits,
                now.seeds_hit,
                now.measured,
                now.sd,
                independent,
                delta,
                now.z,
                now.p_value,
                dh.hits,
                dh.seeds_hit,
                dh.measured,
                dh.sd,
                dh_theory,
                dh.z,
                dh.p_value
            ])?;
        }
    }
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Counting Bloom
// ---------------------------------------------------------------------------------------------

/// The fraction of saturated counters against the load `λ = kn/m`.
fn counting_saturation(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const HASHES: u32 = 4;
    let setups: [(CounterWidth, usize, &[f64]); 2] = [
        (
            CounterWidth::Four,
            10_000,
            &[LN_2, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0, 14.0, 16.0, 20.0],
        ),
        (CounterWidth::Eight, 2_000, &[140.0, 160.0, 180.0, 200.0, 215.0, 230.0, 245.0, 260.0, 280.0, 300.0, 350.0]),
    ];
    let mut csv = Csv::new(
        "counting_saturation.csv",
        "counter_bits,saturates_at,counters,hashes,n,load,filters,saturated,measured,binomial_tail,fan_bound",
    );
    println!("Counting Bloom: fraction of saturated counters against the load λ = kn/m (k = {HASHES})");
    println!(
        "{:>5} {:>7} {:>8} {:>7} {:>11} {:>11} {:>11}",
        "bits", "m", "n", "λ", "measured", "binomial", "Fan bound"
    );
    for (width, counters, loads) in setups {
        let checkpoints: Vec<u64> =
            loads.iter().map(|l| (l * counters as f64 / f64::from(HASHES)).round() as u64).collect();
        let mut saturated = vec![0_usize; checkpoints.len()];
        for t in 0..trials {
            let mut filter =
                CountingBloom::builder(counters, HASHES).counter_width(width).seed(0x5A70_0000 + t as u64).build()?;
            let mut inserted = 0;
            for (&n, total) in checkpoints.iter().zip(&mut saturated) {
                filter.observe_all(inserted..n);
                inserted = n;
                *total += filter.saturated_counters();
            }
        }
        let max = width.max();
        for ((&n, &total), &load) in checkpoints.iter().zip(&saturated).zip(loads) {
            let measured = total as f64 / (counters as f64 * trials as f64);
            let tail = binomial_tail(u64::from(HASHES) * n, 1.0 / counters as f64, max);
            let fan = (E * load / max as f64).powi(max as i32);
            println!(
                "{:>5} {counters:>7} {n:>8} {load:>7.1} {measured:>11.3e} {tail:>11.3e} {fan:>11.3e}",
                width.bits()
            );
            csv.row(&fields![width.bits(), max, counters, HASHES, n, load, trials, total, measured, tail, fan])?;
        }
    }
    // The design load of a filter sized for its false-positive rate: 4-bit counters saturate
    // on reaching 15, which is what the bound must be evaluated at.
    let design = binomial_tail(1 << 40, LN_2 / (1u64 << 40) as f64, 15);
    let fan = |i: i32| (E * LN_2 / f64::from(i)).powi(i);
    println!(
        "design load λ = ln 2, 4-bit counters: P(a counter reaches 15) = {design:.3e}; Fan's bound (e·ln 2/i)^i is {:.3e} \
         at i = 15, {:.3e} at i = 16; for 10^9 counters: {:.1e} exact, {:.1e} by the bound at 15",
        fan(15),
        fan(16),
        1e9 * design,
        1e9 * fan(15),
    );
    println!();
    Ok(csv)
}

/// Removing items that were never inserted: the members lost against the false positives
/// removed, in the family docs' scenario (10^4 members at 1 %, 10^5 strangers), with a
/// first-order model `n·(1 − e^(−c·r/n))`, `c = k·λe^−λ/(1 − e^−λ)`.
fn counting_removal(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const MEMBERS: u64 = 10_000;
    const STRANGERS: u64 = 10 * MEMBERS;
    const STEP: u64 = 2_500;
    let sized = CountingBloom::with_false_positive_rate(MEMBERS, 0.01)?;
    let (counters, hashes) = (sized.counters(), sized.hashes());
    let load = f64::from(hashes) * MEMBERS as f64 / counters as f64;
    // Expected members lost per false positive removed, at the start: k counters, each at 1
    // (so its one member loses it) with probability P(C = 1 | C ≥ 1) for C ~ Poisson(λ).
    let per_removal = f64::from(hashes) * load * (-load).exp() / (1.0 - (-load).exp());
    let model = |removed: f64| MEMBERS as f64 * (1.0 - (-per_removal * removed / MEMBERS as f64).exp());

    let mut csv = Csv::new(
        "counting_removal.csv",
        "filter,seed,members,counters,hashes,strangers_tried,refused,removed,false_negatives,model",
    );
    println!(
        "Counting Bloom: members lost after removing items never inserted ({MEMBERS} members, m = {counters}, k = {hashes}, λ = {load:.3})"
    );
    println!("first-order model: lost(r) = n·(1 − e^(−c·r/n)), c = k·λe^−λ/(1 − e^−λ) = {per_removal:.3}");
    let run = |mut filter: CountingBloom, label: &str, csv: &mut Csv| -> Result<(u64, u64, u64), Box<dyn Error>> {
        filter.observe_all(0..MEMBERS);
        let (mut refused, mut removed) = (0_u64, 0_u64);
        let seed = filter.seed();
        let mut lost = 0;
        for tried in 0..=STRANGERS {
            if tried % STEP == 0 {
                lost = (0..MEMBERS).filter(|&x| !filter.contains(x)).count() as u64;
                csv.row(&fields![
                    label,
                    format!("{seed:#x}"),
                    MEMBERS,
                    counters,
                    hashes,
                    tried,
                    refused,
                    removed,
                    lost,
                    model(removed as f64)
                ])?;
            }
            if tried < STRANGERS {
                match filter.remove(MEMBERS + tried) {
                    Ok(()) => removed += 1,
                    Err(_) => refused += 1,
                }
            }
        }
        Ok((refused, removed, lost))
    };

    let (refused, removed, lost) = run(sized.clone(), "default seed", &mut csv)?;
    println!(
        "default seed: {refused} refused, {removed} false positives removed, {lost} members lost \
         (model {:.0}; the family docs say 99 229, 771 and 3 175)",
        model(removed as f64)
    );
    let mut finals = Vec::with_capacity(trials);
    for t in 0..trials {
        let filter = CountingBloom::with_seed(counters, hashes, 0xDE1E_0000 + t as u64)?;
        finals.push(run(filter, "seeded", &mut csv)?);
    }
    let removed: Vec<f64> = finals.iter().map(|&(_, r, _)| r as f64).collect();
    let lost: Vec<f64> = finals.iter().map(|&(_, _, l)| l as f64).collect();
    let ratio: Vec<f64> = finals.iter().map(|&(_, r, l)| l as f64 / model(r as f64)).collect();
    let ((r_mean, r_sd), (l_mean, l_sd), (q_mean, q_sd)) = (mean_sd(&removed), mean_sd(&lost), mean_sd(&ratio));
    println!(
        "{trials} seeds: {r_mean:.0} ± {r_sd:.0} removed, {l_mean:.0} ± {l_sd:.0} members lost; \
         lost / model = {q_mean:.3} ± {q_sd:.3} (mean ± sd)"
    );
    println!();
    Ok(csv)
}

// ---------------------------------------------------------------------------------------------
// Heavy hitters
// ---------------------------------------------------------------------------------------------

/// The largest undercount of any key against `N/(k+1)` and `error()`, one pass and merged.
fn heavy_hitters(trials: usize) -> Result<Csv, Box<dyn Error>> {
    const CAPACITIES: [usize; 7] = [10, 20, 50, 100, 200, 500, 1000];
    const PARTS: usize = 4;
    let mut csv = Csv::new(
        "heavy_hitters.csv",
        "stream,mode,capacity,N,trials,bound,max_undercount,mean_max_undercount,mean_error,max_error,violations",
    );
    println!("Heavy hitters: largest undercount of any key over {trials} streams of {STREAM}, against N/(k+1)");
    println!(
        "{:<8} {:<10} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>5}",
        "stream", "mode", "k", "N/(k+1)", "max under", "mean under", "mean err", "max err", "viol"
    );
    // Per stream kind, mode and capacity: (largest undercount, error) of each trial.
    let mut results = vec![vec![vec![(0_u64, 0_u64); 0]; CAPACITIES.len()]; 4];
    let mut violations = vec![vec![0_u64; CAPACITIES.len()]; 4];
    for t in 0..trials {
        let streams = [
            ("zipf", zipf_stream(STREAM, 0x4EA0_0000 + t as u64)),
            ("uniform", uniform_stream(STREAM, 0x4EB0_0000 + t as u64)),
        ];
        for (s, (_, stream)) in streams.iter().enumerate() {
            let f = counts(stream);
            for (c, &capacity) in CAPACITIES.iter().enumerate() {
                let mut one = HeavyHitters::new(capacity)?;
                one.observe_all(stream.iter().copied());
                let mut merged = HeavyHitters::new(capacity)?;
                for part in stream.chunks(stream.len().div_ceil(PARTS)) {
                    let mut p = HeavyHitters::new(capacity)?;
                    p.observe_all(part.iter().copied());
                    merged.merge(&p)?;
                }
                for (mode, summary) in [&one, &merged].into_iter().enumerate() {
                    let mut worst = 0;
                    for (key, &count) in f.iter().enumerate() {
                        let estimate = summary.estimate(&(key as u64));
                        if estimate > count || count - estimate > summary.error() {
                            violations[2 * s + mode][c] += 1;
                        }
                        worst = worst.max(count.saturating_sub(estimate));
                    }
                    results[2 * s + mode][c].push((worst, summary.error()));
                }
            }
        }
    }
    let labels = [("zipf", "one pass"), ("zipf", "merged 4"), ("uniform", "one pass"), ("uniform", "merged 4")];
    for (i, (stream_name, mode)) in labels.into_iter().enumerate() {
        for (c, &capacity) in CAPACITIES.iter().enumerate() {
            let r = &results[i][c];
            let bound = STREAM as f64 / (capacity + 1) as f64;
            let max_under = r.iter().map(|&(u, _)| u).max().unwrap_or(0);
            let max_error = r.iter().map(|&(_, e)| e).max().unwrap_or(0);
            let mean_under = r.iter().map(|&(u, _)| u as f64).sum::<f64>() / r.len() as f64;
            let mean_error = r.iter().map(|&(_, e)| e as f64).sum::<f64>() / r.len() as f64;
            let viol = violations[i][c];
            println!(
                "{stream_name:<8} {mode:<10} {capacity:>5} {bound:>9.1} {max_under:>10} {mean_under:>10.1} {mean_error:>10.1} {max_error:>10} {viol:>5}"
            );
            csv.row(&fields![
                stream_name,
                mode,
                capacity,
                STREAM,
                trials,
                bound,
                max_under,
                mean_under,
                mean_error,
                max_error,
                viol
            ])?;
        }
    }
    println!();
    Ok(csv)
}
