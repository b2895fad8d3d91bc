//! Accuracy per byte after a merge: UltraLogLog (plain and compressed) and ExaLogLog against
//! DataSketches' HLL_4, HLL_6, HLL_8 and CPC (and our HyperLogLog, whose encoding packs 6 bits
//! per register: a fair HLL_6 too, and its compressed encoding), measured side by side in one
//! run.
//!
//! ```text
//! cargo run --release -p synopses-benches --example per_byte                  # 1000 trials, about a minute
//! cargo run --release -p synopses-benches --example per_byte -- --trials 300
//! ```
//!
//! # Method
//!
//! Sketches of different kinds cannot all be made the same size: HyperLogLog grows in powers
//! of two, CPC compresses to a size of its own. So each sketch is compared by its
//! *memory-variance product* (Ertl), measured:
//!
//! ```text
//!   MVP = 8 · bytes · E[(n̂/n − 1)²]
//! ```
//!
//! the bits of state times the relative mean squared error. For these estimators the relative
//! MSE falls as `1/bytes` (at `n ≫ m`, as here), so the MVP does not depend on the size, and a
//! lower MVP is a smaller error at any equal budget: `RMSE at B bytes = √(MVP / 8B)`. Bytes are
//! counted two ways: serialized (`to_bytes().len()`, `serialize().len()`, headers included) and
//! in memory (`size_in_bytes()` for ours; `size_of` the struct plus `estimated_size()` for
//! DataSketches, which counts only the heap).
//!
//! For each budget (4 KiB and 1 KiB) and each way of counting bytes, every sketch takes the
//! precision whose merged sketch's size is closest to the budget (by ratio), found on a
//! calibration run. Each trial then builds, for every chosen configuration, two sketches over
//! the two halves of `n = 10^6` distinct items (`trial · 2^40 + i`, so trials are
//! independent, and deterministic: every sketch keeps its default seed), merges them and reads
//! the estimate that holds after a merge: maximum likelihood for ours (the martingale ends at
//! the merge), FGRA for UltraLogLog too, the composite estimator of an `HllUnion` (never HIP),
//! and ICON for `CpcUnion::to_sketch` (its merge flag rules HIP out).
//!
//! The MSE of `T` trials has a standard error of `sd((n̂/n − 1)²)/√T`, about `√(2/T)` of
//! itself: 4.5 % at 1000 trials. Each claim prints the gap in those standard errors (`z`); a gap
//! under 2 is within the noise of the run, whatever the PASS or FAIL.

use std::error::Error;
use std::fmt::Write as _;
use std::ops::Range;

use datasketches::cpc::{CpcSketch, CpcUnion};
use datasketches::hll::{HllSketch, HllType, HllUnion};
use synopses::cardinality::{ExaLogLog, HyperLogLog, UltraLogLog, UltraLogLogEstimator};

/// Distinct items per trial, split in two halves that are merged.
const N: u64 = 1_000_000;
/// Memory budgets in bytes.
const BUDGETS: [usize; 2] = [4096, 1024];
/// Each trial's items start at `trial << TRIAL_SHIFT`.
const TRIAL_SHIFT: u32 = 40;
/// The trial whose items size the sketches; no measured trial reaches it.
const CALIBRATION_TRIAL: u64 = (1 << (64 - TRIAL_SHIFT)) - 1;

/// A sketch under test, without its precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    UltraLogLog,
    UltraLogLogCompressed,
    ExaLogLog,
    HyperLogLog,
    HyperLogLogCompressed,
    Hll4,
    Hll6,
    Hll8,
    Cpc,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::UltraLogLog,
        Kind::UltraLogLogCompressed,
        Kind::ExaLogLog,
        Kind::HyperLogLog,
        Kind::HyperLogLogCompressed,
        Kind::Hll4,
        Kind::Hll6,
        Kind::Hll8,
        Kind::Cpc,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::UltraLogLog => "synopses UltraLogLog",
            Kind::UltraLogLogCompressed => "synopses UltraLogLog, to_compressed_bytes",
            Kind::ExaLogLog => "synopses ExaLogLog (t=2, d=20)",
            Kind::HyperLogLog => "synopses HyperLogLog",
            Kind::HyperLogLogCompressed => "synopses HyperLogLog, to_compressed_bytes",
            Kind::Hll4 => "datasketches HLL_4",
            Kind::Hll6 => "datasketches HLL_6",
            Kind::Hll8 => "datasketches HLL_8",
            Kind::Cpc => "datasketches CPC",
        }
    }

    /// The precisions (`lg_k`) worth sizing: a few either side of any budget here.
    fn precisions(self) -> Range<u8> {
        match self {
            Kind::ExaLogLog => 5..12,
            _ => 7..15,
        }
    }

    /// The memory-variance product theory gives for the registers alone (headers and
    /// exceptions aside), where it is known: `bits per register × m · relative variance`.
    fn theory_mvp(self, estimator: &str, memory: bool) -> Option<f64> {
        // (3 ln 2 − 1): HyperLogLog's register estimators (Ertl's, DataSketches' composite).
        const HLL: f64 = 1.079_441_541_679_836;
        let serialized = match (self, estimator) {
            (Kind::UltraLogLog, "FGRA") => 4.895,
            (Kind::UltraLogLog, _) => 4.631,
            (Kind::ExaLogLog, _) => 3.673,
            (Kind::HyperLogLog | Kind::Hll6, _) => 6.0 * HLL,
            (Kind::Hll4, _) => 4.0 * HLL,
            (Kind::Hll8, _) => 8.0 * HLL,
            (Kind::Cpc | Kind::UltraLogLogCompressed | Kind::HyperLogLogCompressed, _) => return None,
        };
        // In memory ours hold a byte (UltraLogLog, HyperLogLog) or 32 bits (ExaLogLog).
        Some(match (self, memory) {
            (Kind::HyperLogLog, true) => 8.0 * HLL,
            (Kind::ExaLogLog, true) => serialized * 32.0 / 28.0,
            _ => serialized,
        })
    }
}

/// One estimate of a merged sketch, with the sketch's sizes.
struct Reading {
    estimator: &'static str,
    estimate: f64,
    serialized: usize,
    memory: usize,
}

/// The items of `trial`, as its two halves.
fn halves(trial: u64) -> (Range<u64>, Range<u64>) {
    let start = trial << TRIAL_SHIFT;
    (start..start + N / 2, start + N / 2..start + N)
}

/// Builds two sketches of `kind` at precision `p` over the halves of `trial`'s items, merges
/// them, and reads the merged sketch's post-merge estimates and sizes.
fn merged(kind: Kind, p: u8, trial: u64) -> Result<Vec<Reading>, Box<dyn Error>> {
    let (left, right) = halves(trial);
    let one = |estimator, estimate, serialized, memory| vec![Reading { estimator, estimate, serialized, memory }];
    Ok(match kind {
        Kind::UltraLogLog | Kind::UltraLogLogCompressed => {
            let mut a = UltraLogLog::new(p)?;
            let mut b = UltraLogLog::new(p)?;
            a.observe_all(left);
            b.observe_all(right);
            a.merge(&b)?;
            assert!(a.martingale_estimate().is_none(), "a merged sketch answers from its registers");
            let serialized = if kind == Kind::UltraLogLog { a.to_bytes().len() } else { a.to_compressed_bytes().len() };
            let memory = a.size_in_bytes();
            [("ML", UltraLogLogEstimator::MaximumLikelihood), ("FGRA", UltraLogLogEstimator::Fgra)]
                .into_iter()
                .map(|(estimator, e)| Reading { estimator, estimate: a.register_estimate(e), serialized, memory })
                .collect()
        }
        Kind::ExaLogLog => {
            let mut a = ExaLogLog::new(p)?;
            let mut b = ExaLogLog::new(p)?;
            a.observe_all(left);
            b.observe_all(right);
            a.merge(&b)?;
            assert!(a.martingale_estimate().is_none(), "a merged sketch answers from its registers");
            one("ML", a.estimate(), a.to_bytes().len(), a.size_in_bytes())
        }
        Kind::HyperLogLog | Kind::HyperLogLogCompressed => {
            let mut a = HyperLogLog::new(p)?;
            let mut b = HyperLogLog::new(p)?;
            a.observe_all(left);
            b.observe_all(right);
            a.merge(&b)?;
            assert!(a.martingale_estimate().is_none(), "a merged sketch answers from its registers");
            let serialized = if kind == Kind::HyperLogLog { a.to_bytes().len() } else { a.to_compressed_bytes().len() };
            one("Ertl", a.estimate(), serialized, a.size_in_bytes())
        }
        Kind::Hll4 | Kind::Hll6 | Kind::Hll8 => {
            let t = match kind {
                Kind::Hll4 => HllType::Hll4,
                Kind::Hll6 => HllType::Hll6,
                _ => HllType::Hll8,
            };
            let mut union = HllUnion::new(p)?;
            for half in [left, right] {
                let mut s = HllSketch::new(p, t)?;
                half.for_each(|x| s.update(x));
                union.update(&s);
            }
            let s = union.to_sketch(t);
            assert_eq!(s.estimate(), s.composite_estimate(), "a union answers with the composite estimator");
            let memory = std::mem::size_of::<HllSketch>() + s.estimated_size();
            one("composite", s.composite_estimate(), s.serialize().len(), memory)
        }
        Kind::Cpc => {
            let mut union = CpcUnion::new(p)?;
            for half in [left, right] {
                let mut s = CpcSketch::new(p)?;
                half.for_each(|x| s.update(x));
                union.update(&s)?;
            }
            let s = union.to_sketch();
            let memory = std::mem::size_of::<CpcSketch>() + s.estimated_size();
            one("ICON", s.estimate(), s.serialize().len(), memory)
        }
    })
}

/// A configuration under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    kind: Kind,
    p: u8,
}

/// How bytes are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bytes {
    Serialized = 0,
    Memory = 1,
}

impl Bytes {
    fn label(self) -> &'static str {
        match self {
            Bytes::Serialized => "serialized",
            Bytes::Memory => "in memory",
        }
    }
}

/// The sizes of every candidate configuration's merged sketch, from the calibration trial.
struct Sizes(Vec<(Config, [usize; 2])>);

impl Sizes {
    fn measure() -> Result<Self, Box<dyn Error>> {
        let mut out = Vec::new();
        for kind in Kind::ALL {
            for p in kind.precisions() {
                let r = &merged(kind, p, CALIBRATION_TRIAL)?[0];
                out.push((Config { kind, p }, [r.serialized, r.memory]));
            }
        }
        Ok(Self(out))
    }

    /// The precision of `kind` whose size, counted as `bytes`, is closest to `budget` by ratio.
    fn closest(&self, kind: Kind, bytes: Bytes, budget: usize) -> Config {
        let distance = |sizes: &[usize; 2]| (sizes[bytes as usize] as f64 / budget as f64).ln().abs();
        let (config, _) = self
            .0
            .iter()
            .filter(|(c, _)| c.kind == kind)
            .min_by(|(_, a), (_, b)| distance(a).total_cmp(&distance(b)))
            .expect("every kind has candidates");
        *config
    }
}

/// The measured errors of one estimator of one configuration over all trials.
struct Stats {
    config: Config,
    estimator: &'static str,
    /// `n̂/n − 1`, one per trial.
    errors: Vec<f64>,
    serialized: f64,
    memory: f64,
}

impl Stats {
    fn bias(&self) -> f64 {
        self.errors.iter().sum::<f64>() / self.errors.len() as f64
    }

    /// The relative mean squared error and its standard error.
    fn mse(&self) -> (f64, f64) {
        let t = self.errors.len() as f64;
        let squares: Vec<f64> = self.errors.iter().map(|e| e * e).collect();
        let mean = squares.iter().sum::<f64>() / t;
        let var = squares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (t - 1.0);
        (mean, (var / t).sqrt())
    }

    fn bytes(&self, bytes: Bytes) -> f64 {
        match bytes {
            Bytes::Serialized => self.serialized,
            Bytes::Memory => self.memory,
        }
    }

    /// The measured memory-variance product and its standard error.
    fn mvp(&self, bytes: Bytes) -> (f64, f64) {
        let (mse, se) = self.mse();
        let bits = 8.0 * self.bytes(bytes);
        (bits * mse, bits * se)
    }
}

/// Runs every trial of every configuration, the trials spread over the available cores.
fn run(configs: &[Config], trials: u64) -> Result<Vec<Stats>, Box<dyn Error>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    // Per trial, the readings of every configuration in order.
    let mut per_trial: Vec<(u64, Vec<Vec<Reading>>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                scope.spawn(move || {
                    (w..trials)
                        .step_by(threads as usize)
                        .map(|trial| {
                            let readings =
                                configs.iter().map(|c| merged(c.kind, c.p, trial).map_err(|e| e.to_string()));
                            Ok((trial, readings.collect::<Result<Vec<_>, String>>()?))
                        })
                        .collect::<Result<Vec<_>, String>>()
                })
            })
            .collect();
        let mut all = Vec::new();
        for worker in workers {
            all.extend(worker.join().map_err(|_| "a worker panicked")??);
        }
        Ok::<_, Box<dyn Error>>(all)
    })?;
    let mut stats: Vec<Stats> = Vec::new();
    per_trial.sort_by_key(|(trial, _)| *trial);
    for (_, readings) in &per_trial {
        let mut row = 0;
        for (config, rs) in configs.iter().zip(readings) {
            for r in rs {
                if stats.len() == row {
                    stats.push(Stats {
                        config: *config,
                        estimator: r.estimator,
                        errors: vec![],
                        serialized: 0.0,
                        memory: 0.0,
                    });
                }
                let s = &mut stats[row];
                s.errors.push(r.estimate / N as f64 - 1.0);
                s.serialized += r.serialized as f64 / trials as f64;
                s.memory += r.memory as f64 / trials as f64;
                row += 1;
            }
        }
    }
    Ok(stats)
}

/// The rows of a table: for each kind, its configuration closest to `budget`.
fn table<'a>(stats: &'a [Stats], sizes: &Sizes, bytes: Bytes, budget: usize) -> Vec<&'a Stats> {
    Kind::ALL
        .iter()
        .flat_map(|&kind| {
            let config = sizes.closest(kind, bytes, budget);
            stats.iter().filter(move |s| s.config == config)
        })
        .collect()
}

fn print_table(rows: &[&Stats], bytes: Bytes, budget: usize) -> Result<String, Box<dyn Error>> {
    let mut out = String::new();
    writeln!(out, "\n### Budget {budget} B, bytes {}\n", bytes.label())?;
    writeln!(out, "| sketch | estimator | p | bytes | bias | RMSE | MVP measured | MVP theory | RMSE at {budget} B |")?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|")?;
    for s in rows {
        let (mvp, se) = s.mvp(bytes);
        let theory = s.config.kind.theory_mvp(s.estimator, bytes == Bytes::Memory);
        writeln!(
            out,
            "| {} | {} | {} | {:.0} | {:+.3} % | {:.3} % | {:.2} ± {:.2} | {} | {:.3} % |",
            s.config.kind.name(),
            s.estimator,
            s.config.p,
            s.bytes(bytes),
            100.0 * s.bias(),
            100.0 * s.mse().0.sqrt(),
            mvp,
            se,
            theory.map_or("–".to_string(), |t| format!("{t:.2}")),
            100.0 * (mvp / (8.0 * budget as f64)).sqrt(),
        )?;
    }
    Ok(out)
}

/// `a` against each of `others` by MVP: `(ratio a/other, z)`, where `z` is the gap in standard
/// errors, positive when `a` is the more accurate.
fn compare(a: &Stats, others: &[&Stats], bytes: Bytes) -> Vec<(f64, f64)> {
    let (x, sx) = a.mvp(bytes);
    others
        .iter()
        .map(|o| {
            let (y, sy) = o.mvp(bytes);
            (x / y, (y - x) / (sx * sx + sy * sy).sqrt())
        })
        .collect()
}

/// Prints one claim: PASS when `a` beats (or, with `ties`, matches) every one of `others`,
/// and whether the run can tell (`|z| >= 2` for every comparison).
fn claim(text: &str, a: &Stats, others: &[&Stats], bytes: Bytes, ties: bool) -> bool {
    let results = compare(a, others, bytes);
    let pass = results.iter().all(|&(ratio, _)| if ties { ratio <= 1.0 } else { ratio < 1.0 });
    let detail: Vec<String> = others
        .iter()
        .zip(&results)
        .map(|(o, (ratio, z))| format!("{} p{}: MVP ratio {ratio:.3}, z {z:+.1}", o.config.kind.name(), o.config.p))
        .collect();
    let unresolved: Vec<&str> =
        others.iter().zip(&results).filter(|(_, (_, z))| z.abs() < 2.0).map(|(o, _)| o.config.kind.name()).collect();
    let noise = if unresolved.is_empty() {
        String::new()
    } else {
        format!(" (within this run's noise, |z| < 2, against {})", unresolved.join(", "))
    };
    println!("{} {text}{noise} [{}]", if pass { "PASS" } else { "FAIL" }, detail.join("; "));
    pass
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let trials: u64 = flag("--trials").map(|s| s.parse()).transpose()?.unwrap_or(1000);
    if !(2..CALIBRATION_TRIAL).contains(&trials) {
        return Err(format!("--trials must be in 2..{CALIBRATION_TRIAL}").into());
    }

    let sizes = Sizes::measure()?;
    let mut configs = Vec::new();
    for budget in BUDGETS {
        for kind in Kind::ALL {
            configs.extend([Bytes::Serialized, Bytes::Memory].map(|bytes| sizes.closest(kind, bytes, budget)));
        }
    }
    configs.sort();
    configs.dedup();

    let started = std::time::Instant::now();
    let stats = run(&configs, trials)?;
    println!(
        "# Accuracy per byte after a merge\n\n{trials} trials of n = {N} distinct items, two halves merged; \
         {} configurations in {:.0} s. Errors are relative (n̂/n − 1); MVP = 8 · bytes · MSE (± its \
         standard error); RMSE at B bytes = √(MVP / 8B).",
        configs.len(),
        started.elapsed().as_secs_f64()
    );

    let mut all_pass = true;
    for budget in BUDGETS {
        let mut lines = String::new();
        for bytes in [Bytes::Serialized, Bytes::Memory] {
            lines += &print_table(&table(&stats, &sizes, bytes, budget), bytes, budget)?;
        }
        println!("{lines}");
        let pick = |kind: Kind, bytes: Bytes, estimator: &str| -> Result<&Stats, Box<dyn Error>> {
            let config = sizes.closest(kind, bytes, budget);
            stats
                .iter()
                .find(|s| s.config == config && s.estimator == estimator)
                .ok_or_else(|| format!("no {estimator} row for {config:?}").into())
        };
        let ser = Bytes::Serialized;
        let hlls = [
            pick(Kind::Hll4, ser, "composite")?,
            pick(Kind::Hll6, ser, "composite")?,
            pick(Kind::Hll8, ser, "composite")?,
        ];
        let ull = pick(Kind::UltraLogLog, ser, "ML")?;
        let ell = pick(Kind::ExaLogLog, ser, "ML")?;
        println!("Claims at {budget} B (MVP ratio < 1: more accurate at equal memory):\n");
        all_pass &= claim(
            &format!("{budget} B serialized: UltraLogLog (ML) after a merge beats HLL_4, HLL_6 and HLL_8"),
            ull,
            &hlls,
            ser,
            false,
        );
        all_pass &= claim(
            &format!("{budget} B serialized: ExaLogLog (ML) after a merge beats HLL_4, HLL_6 and HLL_8"),
            ell,
            &hlls,
            ser,
            false,
        );
        all_pass &= claim(
            &format!(
                "{budget} B serialized: UltraLogLog compressed (ML) after a merge at least as accurate as CPC (ICON)"
            ),
            pick(Kind::UltraLogLogCompressed, ser, "ML")?,
            &[pick(Kind::Cpc, ser, "ICON")?],
            ser,
            true,
        );
        let mem = Bytes::Memory;
        all_pass &= claim(
            &format!("{budget} B in memory: ExaLogLog (ML) at least as accurate as CPC (ICON)"),
            pick(Kind::ExaLogLog, mem, "ML")?,
            &[pick(Kind::Cpc, mem, "ICON")?],
            mem,
            true,
        );
        // Not claims, for the record: the same comparisons under the other measures.
        let ours_hll = pick(Kind::HyperLogLog, ser, "Ertl")?;
        let cpc = pick(Kind::Cpc, ser, "ICON")?;
        let ours_hll_coded = pick(Kind::HyperLogLogCompressed, ser, "Ertl")?;
        for (name, a, b) in [
            ("UltraLogLog (ML) vs synopses HyperLogLog (6-bit encoding)", ull, ours_hll),
            ("HyperLogLog compressed vs synopses HyperLogLog (6-bit encoding)", ours_hll_coded, ours_hll),
            ("HyperLogLog compressed vs datasketches HLL_4", ours_hll_coded, hlls[0]),
            ("UltraLogLog (FGRA) vs datasketches HLL_4", pick(Kind::UltraLogLog, ser, "FGRA")?, hlls[0]),
            ("ExaLogLog (ML) vs synopses HyperLogLog (6-bit encoding)", ell, ours_hll),
            ("ExaLogLog (ML) vs CPC (ICON)", ell, cpc),
        ] {
            let (ratio, z) = compare(a, &[b], ser)[0];
            println!("info {budget} B serialized: {name}: MVP ratio {ratio:.3}, z {z:+.1}");
        }
        println!();
    }
    println!("{}", if all_pass { "ALL CLAIMS PASS" } else { "SOME CLAIMS FAIL" });
    Ok(())
}
