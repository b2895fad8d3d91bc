//! The LogLog family at equal memory: HyperLogLog, UltraLogLog and ExaLogLog, each in 4 KiB of
//! memory, measured against their memory-variance products (MVP).
//!
//! Two parts, both printed, the second also written as CSV for `notebooks/loglog_family.ipynb`.
//!
//! **1. A worked example.** Hand-made hashes (through `observe_hash`) give chosen update values
//! to one register of a tiny UltraLogLog (`p = 4`) and a tiny ExaLogLog (`p = 2, t = 2,
//! d = 20`). After each one the register is read back from the sketch's documented encoding
//! (`to_bytes`: codec families 10 and 11; family 2 for the HyperLogLog of `to_hyperloglog`)
//! and printed with the martingale estimate; then two registers are merged. This is what a register remembers beyond HyperLogLog's maximum: for
//! UltraLogLog `4u + 2·[u−1 seen] + [u−2 seen]`, for ExaLogLog `u` on a `2^(1/2^t)` scale and
//! `d` bits of history below it.
//!
//! **2. The experiment.** Three sketches that each take 4 KiB in memory:
//!
//! | sketch | precision | registers | bits per register (MVP) | encoded |
//! |---|---|---|---|---|
//! | HyperLogLog | 12 | 4096 | 8 (one byte each in memory) | 3 KiB (6-bit packing) |
//! | UltraLogLog | 12 | 4096 | 8 | 4 KiB |
//! | ExaLogLog `t = 2, d = 20` | 10 | 1024 | 28 (32 in memory) | 3.5 KiB |
//!
//! Each trial hashes the items `0..10^6` with its own seed (so trials are independent; each
//! sketch has its own seeds, so the three are independent too). One sketch observes every
//! item; two more observe the even and the odd items. At checkpoints `n = 1, …, 10, 20, 50,
//! 100, …, 10^6` the two halves are merged (the example checks that the union equals the
//! one-pass sketch, as the merge law says), and the relative error `n̂/n − 1` of every
//! estimator is recorded:
//!
//! * one stream, read from the one-pass sketch: the martingale (HIP) estimator of each sketch
//!   (its `estimate()`: the exact count while sparse, then the martingale, which starts there);
//! * merged, read from the union of the halves, which has no martingale: HyperLogLog's
//!   register estimator (Ertl 2017), UltraLogLog's maximum likelihood and FGRA, ExaLogLog's
//!   maximum likelihood (each the exact count while the union is sparse).
//!
//! For every (sketch, estimator, n) the CSV row holds the bias (mean error), the RMSE, the
//! theory `√(MVP / (bits · m))` with the published MVP (Ertl 2017, 2024, 2025; asymptotic in
//! `m` and `n`), the mean encoded size `to_bytes().len()` of the sketch the estimator reads,
//! and the published MVP and bits, so that `bits · m · variance` at large `n` measures the MVP.
//! The printed summary does that at the largest `n`.
//!
//! Trials run on every core (`--threads` to change); the results do not depend on the number
//! of threads. About 10 to 25 s in release on two cores with the default 1000 trials.
//!
//! ```text
//! cargo run --release --example loglog_family                 # worked example, summary
//! cargo run --release --example loglog_family -- --trials 1000 --csv notebooks/loglog_family.csv
//! ```

use std::error::Error;
use std::fmt::Write as _;

use synopses::cardinality::{ExaLogLog, HyperLogLog, UltraLogLog, UltraLogLogEstimator};
use synopses::hash::Hashable;
use synopses::{ConfigError, MergeError};

type BoxError = Box<dyn Error + Send + Sync>;

/// Cardinalities at which every sketch is read: 1 to 10, then 2, 5 and 10 per decade to 10^6.
fn checkpoints() -> Vec<u64> {
    let mut out: Vec<u64> = (1..=10).collect();
    for decade in 1..=5 {
        let base = 10u64.pow(decade);
        out.extend([base * 2, base * 5, base * 10]);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Part 1: the worked example
// ---------------------------------------------------------------------------------------------

/// The hash that puts update value `k` into `register` of a sketch of precision `p` with `t`
/// sub-level bits (the layout of the family docs): the top `p` bits choose the register, the
/// lowest `t` bits are the sub-level `s`, and the bits above them have `z` trailing zeros,
/// where `k = 2^t·z + s + 1`. With `t = 0` it is HyperLogLog's rank `z + 1`.
fn hash_for(p: u8, t: u8, register: u64, k: u32) -> u64 {
    let (z, s) = ((k - 1) >> t, u64::from((k - 1) & ((1 << t) - 1)));
    (register << (64 - p)) | (1u64 << (u32::from(t) + z)) | s
}

/// An UltraLogLog of precision 4 (seed 0) that has seen the values 1 to 4 in register 0: its
/// sparse mode holds three items, so the fourth turns it dense, and its registers show.
fn dense_ull() -> Result<UltraLogLog, ConfigError> {
    let mut ull = UltraLogLog::with_seed(4, 0)?;
    for k in 1..=4 {
        ull.observe_hash(hash_for(4, 0, 0, k));
    }
    assert!(!ull.is_sparse(), "four items turn a sketch of precision 4 dense");
    Ok(ull)
}

/// The registers of an UltraLogLog, read from its encoding (codec family 10): a 4-byte
/// header, precision, flags (bit 0: martingale present), seed (8 bytes), the martingale (8
/// bytes) if present, then one byte per register.
fn ull_registers(ull: &UltraLogLog) -> Vec<u64> {
    let bytes = ull.to_bytes();
    let start = 4 + 1 + 1 + 8 + if bytes[5] & 1 == 1 { 8 } else { 0 };
    bytes[start..start + (1 << ull.precision())].iter().map(|&b| u64::from(b)).collect()
}

/// The registers of an ExaLogLog, read from its encoding (codec family 11): a 4-byte header,
/// precision, `t`, `d`, flags (bit 0: martingale present), seed (8 bytes), the martingale (8
/// bytes) if present, then the registers packed `6 + t + d` bits each, least significant bits
/// first.
fn ell_registers(ell: &ExaLogLog) -> Vec<u64> {
    let bytes = ell.to_bytes();
    let start = 4 + 4 + 8 + if bytes[7] & 1 == 1 { 8 } else { 0 };
    let bits = 6 + usize::from(ell.t()) + usize::from(ell.d());
    unpack(&bytes[start..], bits, 1 << ell.precision())
}

/// An optional estimate, to three decimals.
fn show(estimate: Option<f64>) -> String {
    estimate.map_or_else(|| "none".to_string(), |x| format!("{x:.3}"))
}

/// The registers of a dense HyperLogLog, read from its encoding (codec family 2): a 4-byte
/// header, precision, flags (bit 0: dense, bit 1: martingale present), seed (8 bytes), the
/// martingale (8 bytes) if present, then the registers packed 6 bits each, least significant
/// bits first. `None` for a sparse sketch.
fn hll_registers(hll: &HyperLogLog) -> Option<Vec<u64>> {
    let bytes = hll.to_bytes();
    if bytes[5] & 1 == 0 {
        return None;
    }
    let start = 4 + 1 + 1 + 8 + if bytes[5] & 2 == 2 { 8 } else { 0 };
    Some(unpack(&bytes[start..], 6, 1 << hll.precision()))
}

/// `count` registers of `bits` bits each, packed least significant bits first.
fn unpack(body: &[u8], bits: usize, count: usize) -> Vec<u64> {
    (0..count)
        .map(|i| {
            (0..bits).fold(0u64, |r, b| {
                let at = i * bits + b;
                r | (u64::from(body[at / 8] >> (at % 8) & 1) << b)
            })
        })
        .collect()
}

/// `d` history bits of `r`, most recent value first: the character for `u − i` is `1` if
/// value `u − i` occurred (bit `d − i`), `.` if not, for `i = 1..=d`.
fn history(r: u64, d: u8) -> String {
    (1..=d).map(|i| if r >> (d - i) & 1 == 1 { '1' } else { '.' }).collect()
}

fn worked_example() -> Result<(), BoxError> {
    println!("== Worked example 1: one UltraLogLog register (p = 4, register 3)");
    println!("   register = 4u + 2·[u−1 seen] + [u−2 seen]; u alone is the HyperLogLog register");
    println!(
        "{:>6} {:>9} {:>9} {:>3} {:>6} {:>6} {:>12} {:>14}",
        "value", "register", "binary", "u", "[u−1]", "[u−2]", "martingale", "HyperLogLog"
    );
    let mut ull = dense_ull()?;
    println!(
        "   (first, the values 1 to 4 in register 0: the sketch counts 3 items exactly, sparse, and the 4th turns it dense)"
    );
    for k in [2, 5, 4, 2, 7] {
        ull.observe_hash(hash_for(4, 0, 3, k));
        let r = ull_registers(&ull)[3];
        // The HyperLogLog that saw the same items (`to_hyperloglog`), its register 3.
        let hll = hll_registers(&ull.to_hyperloglog()?).ok_or("to_hyperloglog is dense")?[3];
        println!(
            "{k:>6} {r:>9} {:>9} {:>3} {:>6} {:>6} {:>12} {hll:>14}",
            format!("{r:08b}"),
            r >> 2,
            r >> 1 & 1,
            r & 1,
            show(ull.martingale_estimate())
        );
    }
    println!("   (the second 2 is below u − 2: the register does not change, and the martingale adds nothing)");

    println!();
    println!("== Worked example 2: merging two UltraLogLog registers");
    let (mut a, mut b) = (dense_ull()?, dense_ull()?);
    for k in [7, 5] {
        a.observe_hash(hash_for(4, 0, 3, k));
    }
    for k in [6, 5] {
        b.observe_hash(hash_for(4, 0, 3, k));
    }
    let (ra, rb) = (ull_registers(&a)[3], ull_registers(&b)[3]);
    let mut union = a.clone();
    union.merge(&b)?;
    let ru = ull_registers(&union)[3];
    for (who, r) in [("A saw 7, 5:", ra), ("B saw 6, 5:", rb), ("A ∪ B:     ", ru)] {
        println!("   {who} register {r:>2} = {r:08b}  (u = {}, [u−1] = {}, [u−2] = {})", r >> 2, r >> 1 & 1, r & 1);
    }
    println!("   (B's maximum 6 becomes A's u − 1: histories are shifted into line and OR-ed)");
    println!(
        "   martingale: A {}, B {}, A ∪ B {} (a merge ends it); maximum likelihood of A ∪ B: {:.3}",
        show(a.martingale_estimate()),
        show(b.martingale_estimate()),
        show(union.martingale_estimate()),
        union.register_estimate(UltraLogLogEstimator::MaximumLikelihood)
    );

    println!();
    println!("== Worked example 3: one ExaLogLog register (p = 2, t = 2, d = 20: 28 bits, register 1)");
    println!(
        "   value k = 4z + s + 1, from z trailing zeros (above the sub-level bits) and the t = 2 sub-level bits s"
    );
    println!("   history: value u−1 first ... u−20 last; 1 = seen, . = not seen");
    println!(
        "{:>6} {:>3} {:>3} {:>4} {:>22} {:>12} {:>10}",
        "value", "z", "s", "u", "history (u−1 … u−20)", "martingale", "register"
    );
    let mut ell = ExaLogLog::with_seed(2, 0)?;
    // As for UltraLogLog: four items in register 0 turn the sketch dense first.
    for k in 1..=4 {
        ell.observe_hash(hash_for(2, 2, 0, k));
    }
    assert!(!ell.is_sparse(), "four items turn a sketch of precision 2 dense");
    for k in [9, 14, 11, 13, 25, 9] {
        ell.observe_hash(hash_for(2, 2, 1, k));
        let r = ell_registers(&ell)[1];
        println!(
            "{k:>6} {:>3} {:>3} {:>4} {:>22} {:>12} {r:>10}",
            (k - 1) / 4,
            (k - 1) % 4,
            r >> 20,
            history(r, 20),
            show(ell.martingale_estimate())
        );
    }
    println!(
        "   (register = u · 2^20 + history bits; the last 9 is u − 16, inside the window and already seen: no change)"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Part 2: the experiment
// ---------------------------------------------------------------------------------------------

/// Which sketch an estimator reads: the one that saw the whole stream, or the union of the
/// two halves (which has no martingale).
#[derive(Clone, Copy, PartialEq)]
enum Source {
    OneStream,
    Merged,
}

/// One estimator of a sketch and its published memory-variance product.
struct Estimator {
    name: &'static str,
    source: Source,
    mvp: f64,
}

/// The three sketches behind one interface.
trait Sketch: Clone + PartialEq + Sized {
    const NAME: &'static str;
    /// Bits per register that the published MVPs count.
    const BITS: f64;
    const ESTIMATORS: &'static [Estimator];
    fn seeded(p: u8, seed: u64) -> Result<Self, ConfigError>;
    fn add(&mut self, hash: u64);
    fn absorb(&mut self, other: &Self) -> Result<(), MergeError>;
    fn encoded_len(&self) -> usize;
    /// The estimate of `Self::ESTIMATORS[k]`.
    fn read(&self, k: usize) -> f64;
}

impl Sketch for HyperLogLog {
    const NAME: &'static str = "HyperLogLog";
    const BITS: f64 = 8.0;
    const ESTIMATORS: &'static [Estimator] = &[
        // 8·ln 2 (Ting 2014, Cohen 2015) and 8·(3 ln 2 − 1) (Flajolet et al. 2007; Ertl 2017).
        Estimator { name: "martingale", source: Source::OneStream, mvp: 5.5452 },
        Estimator { name: "register", source: Source::Merged, mvp: 8.636 },
    ];
    fn seeded(p: u8, seed: u64) -> Result<Self, ConfigError> {
        HyperLogLog::with_seed(p, seed)
    }
    fn add(&mut self, hash: u64) {
        self.observe_hash(hash);
    }
    fn absorb(&mut self, other: &Self) -> Result<(), MergeError> {
        self.merge(other)
    }
    fn encoded_len(&self) -> usize {
        self.to_bytes().len()
    }
    fn read(&self, k: usize) -> f64 {
        // `estimate()` is the exact count while sparse, then the martingale (one stream) or
        // the register estimator (after a merge).
        if k == 0 { self.estimate() } else { self.register_estimate() }
    }
}

impl Sketch for UltraLogLog {
    const NAME: &'static str = "UltraLogLog";
    const BITS: f64 = 8.0;
    const ESTIMATORS: &'static [Estimator] = &[
        // Ertl (2024): 8 × (0.6582², 0.7609², 0.7822²).
        Estimator { name: "martingale", source: Source::OneStream, mvp: 3.466 },
        Estimator { name: "ML", source: Source::Merged, mvp: 4.631 },
        Estimator { name: "FGRA", source: Source::Merged, mvp: 4.895 },
    ];
    fn seeded(p: u8, seed: u64) -> Result<Self, ConfigError> {
        UltraLogLog::with_seed(p, seed)
    }
    fn add(&mut self, hash: u64) {
        self.observe_hash(hash);
    }
    fn absorb(&mut self, other: &Self) -> Result<(), MergeError> {
        self.merge(other)
    }
    fn encoded_len(&self) -> usize {
        self.to_bytes().len()
    }
    fn read(&self, k: usize) -> f64 {
        match k {
            0 => self.estimate(),
            1 => self.register_estimate(UltraLogLogEstimator::MaximumLikelihood),
            _ => self.register_estimate(UltraLogLogEstimator::Fgra),
        }
    }
}

impl Sketch for ExaLogLog {
    const NAME: &'static str = "ExaLogLog t=2 d=20";
    const BITS: f64 = 28.0;
    const ESTIMATORS: &'static [Estimator] = &[
        // Ertl (2025): 28 × (0.3177², 0.3622²).
        Estimator { name: "martingale", source: Source::OneStream, mvp: 2.827 },
        Estimator { name: "ML", source: Source::Merged, mvp: 3.673 },
    ];
    fn seeded(p: u8, seed: u64) -> Result<Self, ConfigError> {
        ExaLogLog::with_seed(p, seed)
    }
    fn add(&mut self, hash: u64) {
        self.observe_hash(hash);
    }
    fn absorb(&mut self, other: &Self) -> Result<(), MergeError> {
        self.merge(other)
    }
    fn encoded_len(&self) -> usize {
        self.to_bytes().len()
    }
    fn read(&self, k: usize) -> f64 {
        if k == 0 { self.estimate() } else { self.register_estimate() }
    }
}

/// What one trial measured: per checkpoint, per estimator, the relative error and the
/// encoded size of the sketch read.
type TrialOut = Vec<Vec<(f64, usize)>>;

/// One trial: items `0..n_max` hashed with `seed` into one sketch and into two halves (even
/// and odd items), read at every checkpoint.
fn trial<S: Sketch>(p: u8, seed: u64, points: &[u64]) -> Result<TrialOut, BoxError> {
    let mut whole = S::seeded(p, seed)?;
    let mut halves = [whole.clone(), whole.clone()];
    let mut out = Vec::with_capacity(points.len());
    let n_max = *points.last().ok_or("no checkpoints")?;
    for i in 0..n_max {
        // Hash once, feed both sketches: the same state as `observe(i)` on each.
        let hash = i.hash64(seed);
        whole.add(hash);
        halves[(i & 1) as usize].add(hash);
        if i + 1 == points[out.len()] {
            let mut union = halves[0].clone();
            union.absorb(&halves[1])?;
            // The same registers: a self-merge keeps them and ends the martingale of one
            // stream, which a merge of two halves cannot keep and `==` compares.
            let registers_of = |s: &S| -> Result<S, MergeError> {
                let mut out = s.clone();
                out.absorb(s)?;
                Ok(out)
            };
            if registers_of(&union)? != registers_of(&whole)? {
                return Err(format!("{}: the merged halves differ from one pass at n = {}", S::NAME, i + 1).into());
            }
            let n = (i + 1) as f64;
            let reads = (0..S::ESTIMATORS.len())
                .map(|k| {
                    let sketch = if S::ESTIMATORS[k].source == Source::OneStream { &whole } else { &union };
                    (sketch.read(k) / n - 1.0, sketch.encoded_len())
                })
                .collect();
            out.push(reads);
        }
    }
    Ok(out)
}

/// One CSV row: an estimator of a sketch at one cardinality.
struct Row {
    sketch: &'static str,
    estimator: &'static str,
    source: Source,
    p: u8,
    bits: f64,
    bytes: usize,
    n: u64,
    bias: f64,
    rmse: f64,
    theory: f64,
    mvp_published: f64,
    /// `bits · m · variance`, the variance with the `T − 1` divisor.
    mvp_measured: f64,
}

/// All trials of one sketch, spread over `threads` threads (trial `i` always has seed
/// `seed_base + i`, and the summaries add trials in order, so the result does not depend on
/// the threads), summarized per estimator and checkpoint.
fn sweep<S: Sketch + Send>(
    p: u8,
    seed_base: u64,
    trials: usize,
    threads: usize,
    points: &[u64],
) -> Result<Vec<Row>, BoxError> {
    let mut results: Vec<Option<TrialOut>> = vec![None; trials];
    std::thread::scope(|scope| -> Result<(), BoxError> {
        let workers: Vec<_> = (0..threads)
            .map(|id| {
                scope.spawn(move || -> Result<Vec<(usize, TrialOut)>, BoxError> {
                    (id..trials)
                        .step_by(threads)
                        .map(|t| Ok((t, trial::<S>(p, seed_base + t as u64, points)?)))
                        .collect()
                })
            })
            .collect();
        for worker in workers {
            for (t, out) in worker.join().map_err(|_| "a worker panicked")?? {
                results[t] = Some(out);
            }
        }
        Ok(())
    })?;
    let results: Vec<TrialOut> =
        results.into_iter().map(|r| r.ok_or("a trial is missing")).collect::<Result<_, _>>()?;

    let (m, t) = (f64::from(1u32 << p), trials as f64);
    let mut rows = Vec::new();
    for (k, est) in S::ESTIMATORS.iter().enumerate() {
        for (c, &n) in points.iter().enumerate() {
            let (mut sum, mut squares, mut bytes) = (0.0, 0.0, 0usize);
            for r in &results {
                let (e, b) = r[c][k];
                sum += e;
                squares += e * e;
                bytes += b;
            }
            let bias = sum / t;
            let variance = (squares - t * bias * bias).max(0.0) / (t - 1.0).max(1.0);
            rows.push(Row {
                sketch: S::NAME,
                estimator: est.name,
                source: est.source,
                p,
                bits: S::BITS,
                bytes: (bytes as f64 / t).round() as usize,
                n,
                bias,
                rmse: (squares / t).sqrt(),
                theory: (est.mvp / (S::BITS * m)).sqrt(),
                mvp_published: est.mvp,
                mvp_measured: S::BITS * m * variance,
            });
        }
    }
    Ok(rows)
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let trials: usize = flag("--trials").map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let threads: usize = match flag("--threads") {
        Some(s) => s.parse()?,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let threads = threads.clamp(1, trials.max(1));
    if trials < 2 {
        return Err("--trials must be at least 2".into());
    }
    let csv = flag("--csv");
    let points = checkpoints();

    worked_example()?;

    println!();
    println!("== Experiment: {trials} trials per point, items 0..{}, {threads} threads", points.last().unwrap_or(&0));
    let started = std::time::Instant::now();
    let mut rows = sweep::<HyperLogLog>(12, 0x1100_0000, trials, threads, &points)?;
    rows.extend(sweep::<UltraLogLog>(12, 0x2200_0000, trials, threads, &points)?);
    rows.extend(sweep::<ExaLogLog>(10, 0x3300_0000, trials, threads, &points)?);
    println!("(ran in {:.1} s)", started.elapsed().as_secs_f64());

    println!("errors are relative (estimate / n - 1); theory = sqrt(MVP / (bits · m))");
    println!(
        "{:<19} {:<11} {:>3} {:>6} {:>8} {:>9} {:>9} {:>9} {:>7}",
        "sketch", "estimator", "p", "bytes", "n", "rmse", "bias", "theory", "ratio"
    );
    for r in rows.iter().filter(|r| r.n >= 10 && r.n.to_string().trim_start_matches('1').chars().all(|c| c == '0')) {
        println!(
            "{:<19} {:<11} {:>3} {:>6} {:>8} {:>9.5} {:>9.5} {:>9.5} {:>7.3}",
            r.sketch,
            r.estimator,
            r.p,
            r.bytes,
            r.n,
            r.rmse,
            r.bias,
            r.theory,
            r.rmse / r.theory
        );
    }

    let n_max = *points.last().ok_or("no checkpoints")?;
    // The variance of T normal errors has relative standard deviation √(2/(T − 1)).
    let spread = (2.0 / (trials as f64 - 1.0)).sqrt();
    println!();
    println!("memory-variance product at n = {n_max}: bits · m · variance (±1 sd ≈ {:.1} %)", 100.0 * spread);
    println!(
        "{:<19} {:<11} {:<10} {:>5} {:>9} {:>9} {:>7}",
        "sketch", "estimator", "reads", "bits", "measured", "published", "ratio"
    );
    for r in rows.iter().filter(|r| r.n == n_max) {
        let reads = if r.source == Source::OneStream { "one pass" } else { "merged" };
        println!(
            "{:<19} {:<11} {:<10} {:>5} {:>9.3} {:>9.3} {:>7.3}",
            r.sketch,
            r.estimator,
            reads,
            r.bits,
            r.mvp_measured,
            r.mvp_published,
            r.mvp_measured / r.mvp_published
        );
    }

    if let Some(path) = csv {
        let mut out =
            String::from("sketch,estimator,source,p,bits,bytes,n,bias,rmse,theory,mvp_published,mvp_measured,trials\n");
        for r in &rows {
            let source = if r.source == Source::OneStream { "one pass" } else { "merged" };
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.sketch,
                r.estimator,
                source,
                r.p,
                r.bits,
                r.bytes,
                r.n,
                r.bias,
                r.rmse,
                r.theory,
                r.mvp_published,
                r.mvp_measured,
                trials
            )?;
        }
        std::fs::write(&path, out)?;
        println!("wrote {path}");
    }
    Ok(())
}
