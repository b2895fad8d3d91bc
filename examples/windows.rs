//! Windows over a stream: tumbling and sliding windows of synopses built from panes, the
//! window's answer against the exact one over time, and the cost of a slide against
//! recomputing the window's synopsis from its items.
//!
//! **Windows and panes.** A query on a stream usually asks about the recent past: the distinct
//! keys among the last `W` items, refreshed every `S` items. That is a *sliding* window of size
//! `W` and slide `S`; a *tumbling* window is the case `S = W`, one answer per disjoint block of
//! items. A synopsis cannot forget an item, so the stream is cut into *panes* of `S` items, one
//! synopsis per pane, and the window ending at a pane boundary is the merge of its last `W/S`
//! panes; the pane that leaves the window is dropped whole (Li et al., "No pane, no gain").
//! [`CountWindow`] does this for any mergeable synopsis, by item count; [`TimeWindow`] by event
//! time.
//!
//! **Why the merged panes are the window's synopsis.** A HyperLogLog register keeps the largest
//! rank of the items hashed to it; the merge takes registerwise maxima, and the maximum over
//! the panes of each pane's maximum is the maximum over the window's items. The merged
//! registers are therefore exactly those of one sketch that observed the window, and its error
//! is that sketch's: a relative standard error of `1.04/√m` for `m = 2^p` registers (Ertl's
//! estimator from the registers, once `n ≫ m`). Two details show in the output: a merged sketch has lost
//! the single-stream martingale estimator (`0.83/√m`), which a tumbling window of one pane
//! keeps; and below `3m/16` distinct items the sketch is still in its sparse mode, and exact.
//! A DDSketch's buckets add under a merge, so a window of DDSketch panes is the one-pass
//! DDSketch of the window, with its deterministic guarantee: every quantile within a relative
//! `α` of the exact one.
//!
//! **What a slide costs.** Recomputing the window's synopsis from its raw items costs `W`
//! updates per slide and keeps `W` items (8 bytes each here). Merging the `W/S` panes afresh at
//! each slide costs a copy and `W/S − 1` merges. [`SlidingPanes`], under the windows (the
//! two-stacks algorithm of Tangwongsan, Hirzel and Schneider), keeps the older panes as suffix
//! merges on a *front* stack and a running merge of the newer ones on a *back* stack: a slide
//! costs about two merges, amortized, and an answer one copy and one merge, whatever `W/S`.
//! The amortization shows in the slowest slides: once every `W/S` slides the back is
//! *flipped* onto the front, `W/S − 1` merges at once. The memory is at most `W/S + 3` synopses, whatever
//! the number of items in a pane.
//!
//! **Event time and lateness.** A [`TimeWindow`] places each item in the pane of its
//! timestamp `t`, not of its arrival. The caller's watermark `w` here trails the largest
//! timestamp seen by a bound `B` (no item is expected more than `B` late); a pane closes once
//! `pane end + L <= w`, `L` being the allowed lateness. An item arriving after its pane closed
//! is *late*: handed back and counted, not folded into an answer already given. An item of
//! delay `d` is late when `d > B + L + (pane end − t)`, so the late share follows the delays'
//! tail; a larger `L` misses fewer items and keeps about `(B + L)/S + 1` panes open.
//!
//! Four experiments, all with HyperLogLog of precision 12 (`m = 4096`, `1.04/√m ≈ 1.6 %`)
//! unless said otherwise, a window of `W = 10 000` items sliding by `S = 1 000`, fixed seeds:
//!
//! 1. a stream of five phases with different key populations: the sliding and the tumbling
//!    windows' estimates against the exact distinct count of the same window (a `HashSet` over
//!    its items), for one hash seed; then the error over `--seeds` hash seeds against the
//!    standard error the sketch reports, at precisions 12 and 10 (where a window holds up to
//!    ten times more distinct keys than registers: `1.04/√m` is the error for `n ≫ m`, and at
//!    `n` of one or two `m` Ertl's estimator does better);
//! 2. the p99 of a latency-like stream over the same sliding window, DDSketch (α = 1 %)
//!    against the exact p99 of the window's items;
//! 3. the time per slide of the two-stacks window, of merging every pane afresh and of
//!    recomputing from the raw items, for `W/S` from 1 to 256 (`S = 1 000`), and the window's
//!    bytes against its raw items' (median over `--reps` repetitions; the timings depend on
//!    the machine);
//! 4. a time window with out-of-order timestamps, for several allowed latenesses: the share of
//!    late items against the delays' tail, the distinct keys the windows lose to lateness
//!    (exact counts, no sketch in them) apart from the sketch's own error, and the open panes.
//!
//! ```text
//! cargo run --release --example windows                                   # tables
//! cargo run --release --example windows -- --seeds 100 --reps 9 --csv notebooks/windows
//! ```

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::error::Error;
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use rand::distr::Open01;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use synopses::cardinality::HyperLogLog;
use synopses::quantiles::DDSketch;
use synopses::stream::{CountWindow, Late, SlidingPanes, TimeWindow, Window};

/// HyperLogLog precision: `m = 2^12` registers.
const P: u8 = 12;
/// The window's size and slide, in items (experiments 1 to 3) or milliseconds (4).
const SIZE: usize = 10_000;
const SLIDE: usize = 1_000;
/// Items per phase of the stream of experiment 1.
const PHASE: usize = 40_000;
const PHASES: [&str; 5] =
    ["500 keys", "4 000 keys", "40 000 keys", "every key new", "8 000 keys drifting by 1 per 2 items"];

/// The stream of experiment 1: five phases of `PHASE` items, each drawing its keys uniformly
/// from a population of its own (disjoint between phases), so that the distinct count of the
/// window changes over time: 500; about `4 000·(1 − e^−2.5) ≈ 3 670`; about
/// `40 000·(1 − e^−0.25) ≈ 8 850`; 10 000; then about 6 400 from a range that drifts forward.
fn phased_stream(seed: u64) -> Vec<u64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..PHASES.len() * PHASE)
        .map(|i| {
            let (phase, j) = (i / PHASE, (i % PHASE) as u64);
            let key = match phase {
                0 => rng.random_range(0..500),
                1 => rng.random_range(0..4_000),
                2 => rng.random_range(0..40_000),
                3 => j,
                _ => j / 2 + rng.random_range(0..8_000),
            };
            ((phase as u64) << 32) | key
        })
        .collect()
}

fn distinct(items: &[u64]) -> usize {
    items.iter().collect::<HashSet<_>>().len()
}

/// Which estimator answered: the exact sparse count, the martingale of one pane, or Ertl's
/// estimator from merged registers.
fn mode(h: &HyperLogLog) -> &'static str {
    if h.is_sparse() {
        "sparse (exact)"
    } else if h.martingale_estimate().is_some() {
        "martingale (one pane)"
    } else {
        "merged registers"
    }
}

/// One window's answer: where it ends (items `end − W .. end`), the estimate, the standard
/// error the sketch reports for it, and its estimator.
struct Answer {
    end: usize,
    estimate: f64,
    rse: f64,
    mode: &'static str,
}

/// One window's relative error against its exact count, and the standard error the sketch
/// reported.
struct Sample {
    error: f64,
    rse: f64,
    exact: f64,
}

/// A count window of HyperLogLog (precision `p`, hash seed `seed`) over `items`, read at every
/// pane boundary.
fn run_window(items: &[u64], shape: Window, p: u8, seed: u64) -> Result<Vec<Answer>, Box<dyn Error>> {
    let mut window = CountWindow::new(&HyperLogLog::with_seed(p, seed)?, shape)?;
    let mut out = Vec::new();
    for pane in items.chunks(shape.slide() as usize) {
        window.observe_all(pane.iter().copied());
        let h = window.window()?;
        let end = window.boundary() as usize;
        out.push(Answer { end, estimate: h.estimate(), rse: h.relative_standard_error(), mode: mode(&h) });
    }
    Ok(out)
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let (u, v): (f64, f64) = (rng.sample(Open01), rng.sample(Open01));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Latencies in milliseconds: log-normal around 20 ms, and during the third phase 5 % of the
/// requests hit a slow backend, ten times slower.
fn latencies(seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..PHASES.len() * PHASE)
        .map(|i| {
            let base = 20.0 * (0.5 * normal(&mut rng)).exp();
            if i / PHASE == 2 && rng.random_bool(0.05) { 10.0 * base } else { base }
        })
        .collect()
}

/// The value of rank `⌊q·(n − 1)⌋` among `values`, the rank DDSketch's `quantile` answers.
fn exact_quantile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted[(q * (sorted.len() - 1) as f64).floor() as usize]
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_unstable_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 }
}

/// One way of answering a sliding window, timed slide by slide: `slide(k)` ingests the items
/// of slide `k` and returns the window's answer.
struct Method<'a> {
    name: &'static str,
    /// Untimed slides before the first timed one (enough to fill the window).
    warm: usize,
    /// Consecutive slides timed in each repetition.
    per_rep: usize,
    slide: Box<dyn FnMut(usize) -> f64 + 'a>,
    /// The next slide, and every timed slide's number and microseconds.
    next: usize,
    times: Vec<(usize, f64)>,
    /// The mean time per slide of each repetition.
    means: Vec<f64>,
}

impl<'a> Method<'a> {
    fn new(name: &'static str, warm: usize, per_rep: usize, slide: impl FnMut(usize) -> f64 + 'a) -> Self {
        Self { name, warm, per_rep, slide: Box::new(slide), next: 0, times: Vec::new(), means: Vec::new() }
    }

    /// Runs the untimed slides just before slide `start`.
    fn warm_up(&mut self, start: usize) {
        for k in start - self.warm..start {
            black_box((self.slide)(k));
        }
        self.next = start;
    }

    /// Times one repetition.
    fn repeat(&mut self) {
        let mut total = 0.0;
        for _ in 0..self.per_rep {
            let t = Instant::now();
            black_box((self.slide)(self.next));
            let us = t.elapsed().as_secs_f64() * 1e6;
            self.times.push((self.next, us));
            total += us;
            self.next += 1;
        }
        self.means.push(total / self.per_rep as f64);
    }

    /// The median over repetitions of the mean time per slide (the amortized cost), the median
    /// slide, and the median of the slides `k` with `k % panes == 0`, those in which the two
    /// stacks flip.
    fn summary(&self, panes: usize) -> (f64, f64, f64) {
        let all = self.times.iter().map(|t| t.1).collect();
        let flips = self.times.iter().filter(|t| t.0 % panes == 0).map(|t| t.1).collect();
        (median(self.means.clone()), median(all), median(flips))
    }
}

/// Delays of experiment 4, in ms: 95 % exponential of mean 200 ms, 5 % stragglers uniform up to
/// 10 s.
const FAST_SHARE: f64 = 0.95;
const MEAN_DELAY: f64 = 200.0;
const STRAGGLER_MAX: f64 = 10_000.0;
/// The watermark trails the largest timestamp seen by this bound, in ms.
const BOUND: u64 = 1_000;
/// Experiment 4's stream: one item per millisecond of arrival, for 120 s.
const EVENTS: usize = 120_000;
const EVENT_KEYS: u64 = 30_000;

/// `(timestamp, key, delay)` in arrival order: item `j` arrives at `j` ms with a timestamp
/// `j − delay` (0 at the earliest).
fn events(seed: u64) -> Vec<(u64, u64, u64)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..EVENTS as u64)
        .map(|arrival| {
            let u: f64 = rng.sample(Open01);
            let delay = if rng.random_bool(FAST_SHARE) { -MEAN_DELAY * u.ln() } else { STRAGGLER_MAX * u };
            let delay = delay as u64;
            (arrival.saturating_sub(delay), rng.random_range(0..EVENT_KEYS), delay)
        })
        .collect()
}

/// About the share of late items: an item of delay `d` and timestamp `t` in a pane ending at
/// `e` is late when `d > B + L + (e − t)` (the watermark trails arrival by about `B`), with
/// `e − t` uniform over a slide, so with probability `clamp((d − B − L)/S, 0, 1)`. Averaged
/// over the population's delays (`population`), or over the delays drawn (`drawn`), which
/// leaves out the luck of the draw.
fn late_theory(lateness: u64, drawn: &[u64]) -> (f64, f64) {
    let cut = (BOUND + lateness) as f64;
    let chance = |d: f64| ((d - cut) / SLIDE as f64).clamp(0.0, 1.0);
    let empirical = drawn.iter().map(|&d| chance(d as f64)).sum::<f64>() / drawn.len() as f64;
    // The population: ∫ P(d > cut + u) du/S over the slide, by the midpoint rule.
    let steps = 1_000;
    let population = (0..steps)
        .map(|i| {
            let x = cut + (i as f64 + 0.5) / steps as f64 * SLIDE as f64;
            FAST_SHARE * (-x / MEAN_DELAY).exp() + (1.0 - FAST_SHARE) * (1.0 - x / STRAGGLER_MAX).max(0.0)
        })
        .sum::<f64>()
        / steps as f64;
    (population, empirical)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let seeds: u64 = flag("--seeds").map(|s| s.parse()).transpose()?.unwrap_or(100);
    let reps: usize = flag("--reps").map(|s| s.parse()).transpose()?.unwrap_or(9);
    let csv = flag("--csv");
    let started = Instant::now();
    let m = f64::from(1u32 << P);

    // ---------------------------------------------------------------------------------------
    // 1. Distinct keys over a sliding and a tumbling window, against the exact count.
    // ---------------------------------------------------------------------------------------
    let items = phased_stream(0x5EED);
    let sliding = Window::sliding(SIZE as u64, SLIDE as u64)?;
    let tumbling = Window::tumbling(SIZE as u64)?;
    // The exact distinct count of the window ending at each pane boundary.
    let exact: BTreeMap<usize, usize> = (SLIDE..=items.len())
        .step_by(SLIDE)
        .map(|end| (end, distinct(&items[end.saturating_sub(SIZE)..end])))
        .collect();

    println!(
        "1. distinct keys in the last {SIZE} items, every {SLIDE} (sliding) and every {SIZE} (tumbling); \
         HyperLogLog p = {P}, 1.04/√m = {:.2} %",
        104.0 / m.sqrt()
    );
    println!("   phases of {PHASE} items: {}", PHASES.join(" | "));
    let mut series_csv = String::from("window,end,phase,exact,estimate,rel_error,rse,mode\n");
    for (name, shape) in [("sliding", sliding), ("tumbling", tumbling)] {
        for a in run_window(&items, shape, P, 0)? {
            let truth = exact[&a.end] as f64;
            let phase = (a.end - 1) / PHASE;
            let err = a.estimate / truth - 1.0;
            writeln!(series_csv, "{name},{},{phase},{truth},{},{err},{},{}", a.end, a.estimate, a.rse, a.mode)?;
        }
    }
    // The one-seed series, a few windows per phase.
    println!("   seed 0, the sliding window at a few ends:");
    println!("   {:>7} {:>6} {:>9} {:>10} {:>8}   estimator", "end", "phase", "exact", "estimate", "error");
    for a in run_window(&items, sliding, P, 0)?.iter().filter(|a| a.end % (PHASE / 2) == 0) {
        let truth = exact[&a.end] as f64;
        let err = 100.0 * (a.estimate / truth - 1.0);
        println!(
            "   {:>7} {:>6} {truth:>9} {:>10.0} {err:>+7.2}%   {}",
            a.end,
            (a.end - 1) / PHASE,
            a.estimate,
            a.mode
        );
    }

    // Over hash seeds: the error of each estimator against the standard error it reports, for
    // the windows that lie within one phase (so that they hold about the same distinct count),
    // at p = 12 and at p = 10, where the windows hold up to 10 times more distinct keys than registers.
    println!();
    println!("   over {seeds} hash seeds, the windows within one phase (each window is one sample per seed):");
    println!(
        "   {:>9} {:>3} {:>6} {:>8} {:>6} {:>22} {:>8} {:>8} {:>8} {:>11} {:>11}",
        "window", "p", "phase", "mean n", "n/m", "estimator", "samples", "rmse", "bias", "reported σ", "within ±2σ"
    );
    let mut summary_csv =
        String::from("window,p,m,phase,mean_exact,n_over_m,mode,seeds,samples,rmse,bias,rse,within_2rse\n");
    for (name, shape) in [("sliding", sliding), ("tumbling", tumbling)] {
        for p in [10, P] {
            let registers = f64::from(1u32 << p);
            // The samples of each phase and estimator.
            let mut groups: BTreeMap<(usize, &str), Vec<Sample>> = BTreeMap::new();
            for seed in 0..seeds {
                for a in run_window(&items, shape, p, seed)? {
                    let phase = (a.end - 1) / PHASE;
                    if a.end < SIZE || (a.end - SIZE) / PHASE != phase {
                        continue;
                    }
                    let truth = exact[&a.end] as f64;
                    let sample = Sample { error: a.estimate / truth - 1.0, rse: a.rse, exact: truth };
                    groups.entry((phase, a.mode)).or_default().push(sample);
                }
            }
            for ((phase, mode), samples) in groups {
                let n = samples.len() as f64;
                let mean = |f: &dyn Fn(&Sample) -> f64| samples.iter().map(f).sum::<f64>() / n;
                let rmse = mean(&|s| s.error * s.error).sqrt();
                let bias = mean(&|s| s.error);
                let rse = mean(&|s| s.rse);
                let truth = mean(&|s| s.exact);
                let within = mean(&|s| f64::from(u8::from(s.error.abs() <= 2.0 * s.rse)));
                println!(
                    "   {name:>9} {p:>3} {phase:>6} {truth:>8.0} {:>6.2} {mode:>22} {:>8} {:>7.3}% {:>+7.3}% {:>10.3}% {:>10.1}%",
                    truth / registers,
                    samples.len(),
                    100.0 * rmse,
                    100.0 * bias,
                    100.0 * rse,
                    100.0 * within
                );
                writeln!(
                    summary_csv,
                    "{name},{p},{registers},{phase},{truth},{},{mode},{seeds},{},{rmse},{bias},{rse},{within}",
                    truth / registers,
                    samples.len()
                )?;
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // 2. The p99 of latencies over the sliding window: DDSketch against the exact p99.
    // ---------------------------------------------------------------------------------------
    const ALPHA: f64 = 0.01;
    let values = latencies(0x1A7E);
    let mut window = CountWindow::new(&DDSketch::new(ALPHA)?, sliding)?;
    let mut quantiles_csv = String::from("end,phase,exact_p99,estimate_p99,rel_error,alpha\n");
    let mut worst: f64 = 0.0;
    for pane in values.chunks(SLIDE) {
        window.observe_all(pane.iter().copied());
        let end = window.boundary() as usize;
        let estimate = window.window()?.quantile(0.99)?.ok_or("an empty window")?;
        let truth = exact_quantile(&values[end.saturating_sub(SIZE)..end], 0.99);
        let err = estimate / truth - 1.0;
        worst = worst.max(err.abs());
        writeln!(quantiles_csv, "{end},{},{truth},{estimate},{err},{ALPHA}", (end - 1) / PHASE)?;
    }
    println!();
    println!(
        "2. p99 latency over the sliding window, DDSketch α = {ALPHA}: largest relative error over {} windows {:.3} % \
         (guarantee: at most α = {:.1} %)",
        values.len() / SLIDE,
        100.0 * worst,
        100.0 * ALPHA
    );

    // ---------------------------------------------------------------------------------------
    // 3. The cost of a slide: two stacks, every pane merged afresh, recomputation.
    // ---------------------------------------------------------------------------------------
    const PANES: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
    let largest = *PANES.last().unwrap_or(&1);
    // Enough slides for the window to fill and for every repetition to hold a whole flip cycle.
    let cost_items: Vec<u64> = {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0xC057);
        (0..(largest + reps * largest.max(64)) * SLIDE).map(|_| rng.random()).collect()
    };
    let pane_items = |k: usize| cost_items[k * SLIDE..(k + 1) * SLIDE].iter().copied();
    let proto = HyperLogLog::new(P)?;
    println!();
    println!(
        "3. time per slide of {SLIDE} items (µs; median of {reps} repetitions; machine-dependent), \
         HyperLogLog p = {P}"
    );
    println!(
        "   {:>5} {:>8} {:>8} {:>10} {:>12} {:>10} {:>11} {:>12} {:>12}",
        "W/S", "W", "ingest", "two stacks", "a flip slide", "merge all", "recompute", "window bytes", "raw bytes"
    );
    let mut cost_csv = String::from("panes,slide,size,method,mean_us,p50_us,flip_us,reps,slides_per_rep\n");
    for panes in PANES {
        let size = panes * SLIDE;
        // Whole flip cycles in each repetition: a multiple of `panes` slides.
        let per_rep = panes.max(64);
        let mut counted = CountWindow::new(&proto, Window::sliding(size as u64, SLIDE as u64)?)?;
        let mut kept: VecDeque<HyperLogLog> = VecDeque::with_capacity(panes + 1);
        let mut methods = [
            // The floor every method pays: observing the slide's items into one sketch.
            Method::new("ingest", 1, per_rep, |k| {
                let mut h = proto.clone();
                h.observe_all(pane_items(k));
                h.estimate()
            }),
            // The crate's window: the open pane observes the items, the closed pane is pushed
            // (two merges, amortized; a flip of `panes` merges every `panes` slides, in slides
            // `k ≡ 0 mod panes` here), the answer is a copy and a merge.
            Method::new("two_stacks", panes, per_rep, |k| {
                counted.observe_all(pane_items(k));
                counted.window().expect("panes of one prototype merge").estimate()
            }),
            // Every pane kept, and merged afresh at each slide: a copy and `W/S − 1` merges.
            Method::new("merge_all", panes, per_rep, |k| {
                let mut pane = proto.clone();
                pane.observe_all(pane_items(k));
                kept.push_back(pane);
                if kept.len() > panes {
                    kept.pop_front();
                }
                let mut merged = kept[0].clone();
                kept.iter().skip(1).for_each(|p| merged.merge(p).expect("one configuration"));
                merged.estimate()
            }),
            // The window's raw items observed into a fresh sketch at each slide: `W` updates.
            Method::new("recompute", 1, 32, |k| {
                let mut h = proto.clone();
                h.observe_all(cost_items[(k + 1) * SLIDE - size..(k + 1) * SLIDE].iter().copied());
                h.estimate()
            }),
        ];
        // The methods take turns, so that a change in the machine's load spreads over all.
        methods.iter_mut().for_each(|m| m.warm_up(panes));
        for _ in 0..reps {
            methods.iter_mut().for_each(Method::repeat);
        }
        let mut means = BTreeMap::new();
        for method in &methods {
            let (mean, p50, flip) = method.summary(panes);
            means.insert(method.name, (mean, flip));
            writeln!(cost_csv, "{panes},{SLIDE},{size},{},{mean},{p50},{flip},{reps},{}", method.name, method.per_rep)?;
        }
        drop(methods);
        // The memory at its largest over a whole flip cycle, outside the timings.
        let mut window_bytes = 0;
        for k in 0..panes {
            counted.observe_all(pane_items(k));
            window_bytes = window_bytes.max(counted.size_in_bytes());
        }
        let raw_bytes = size * size_of::<u64>();
        println!(
            "   {panes:>5} {size:>8} {:>8.1} {:>10.1} {:>12.1} {:>10.1} {:>11.1} {window_bytes:>12} {raw_bytes:>12}",
            means["ingest"].0, means["two_stacks"].0, means["two_stacks"].1, means["merge_all"].0, means["recompute"].0
        );
    }

    // The memory for a slide of 1 000 and of 10 000 items: the panes' bytes do not depend on the
    // items in a pane; the raw items' do.
    let mut memory_csv = String::from("slide,panes,size,window_bytes,raw_bytes,sketch_bytes\n");
    for slide in [SLIDE, 10 * SLIDE] {
        for panes in PANES {
            let size = panes * slide;
            let mut window = CountWindow::new(&proto, Window::sliding(size as u64, slide as u64)?)?;
            window.observe_all(0..(panes * slide) as u64);
            let mut bytes = 0;
            // The largest over a flip cycle, the open pane full but for one item.
            for k in panes..2 * panes {
                window.observe_all((k * slide) as u64..((k + 1) * slide) as u64 - 1);
                bytes = bytes.max(window.size_in_bytes());
                window.observe(((k + 1) * slide) as u64 - 1);
            }
            let sketch = window.window()?.size_in_bytes();
            writeln!(memory_csv, "{slide},{panes},{size},{bytes},{},{sketch}", size * size_of::<u64>())?;
        }
    }
    // A check of the claim, on the crate's aggregator alone: `W/S + 2` synopses at most.
    let mut alone = SlidingPanes::new(&proto, 8)?;
    let mut most = 0;
    for k in 0..64 {
        let mut pane = proto.clone();
        pane.observe_all(pane_items(k));
        alone.push(pane)?;
        most = most.max(alone.size_in_bytes());
    }
    println!(
        "   SlidingPanes of 8 dense panes: at most {most} bytes, {:.2} sketches of {} bytes (bound: 8 + 2)",
        most as f64 / alone.window()?.size_in_bytes() as f64,
        alone.window()?.size_in_bytes()
    );

    // ---------------------------------------------------------------------------------------
    // 4. Event time: out-of-order timestamps, a watermark, and the allowed lateness.
    // ---------------------------------------------------------------------------------------
    let stream = events(0x7135);
    // The exact distinct keys of every event-time window, over all the items (late ones too).
    let mut by_pane: Vec<Vec<u64>> = vec![Vec::new(); EVENTS.div_ceil(SLIDE)];
    for &(t, key, _) in &stream {
        by_pane[t as usize / SLIDE].push(key);
    }
    let exact_time = |end: usize| -> usize {
        by_pane[(end - SIZE) / SLIDE..end / SLIDE].iter().flatten().collect::<HashSet<_>>().len()
    };
    let exact_by_end: BTreeMap<usize, usize> = (SIZE..=EVENTS).step_by(SLIDE).map(|e| (e, exact_time(e))).collect();
    println!();
    println!(
        "4. event time: {EVENTS} items, 1 per ms, delays {:.0} % exponential (mean {MEAN_DELAY} ms) and {:.0} % up \
         to {STRAGGLER_MAX} ms; watermark = largest timestamp − {BOUND} ms; window {SIZE} ms sliding by {SLIDE} ms",
        100.0 * FAST_SHARE,
        100.0 * (1.0 - FAST_SHARE)
    );
    println!(
        "   {:>9} {:>8} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8} {:>10} {:>10}",
        "lateness",
        "late",
        "late %",
        "drawn %",
        "law %",
        "windows",
        "loss",
        "bias",
        "sketch σ",
        "open panes",
        "max bytes"
    );
    let delays: Vec<u64> = stream.iter().map(|e| e.2).collect();
    let mut lateness_csv = String::from(
        "lateness,bound,items,late,late_fraction,late_theory_drawn,late_theory_population,windows,loss,bias,rmse,\
         sketch_bias,sketch_rmse,rse,max_open_panes,max_bytes\n",
    );
    for lateness in [0_u64, 1_000, 2_000, 5_000, 10_000] {
        let mut window = TimeWindow::new(&HyperLogLog::new(P)?, sliding, lateness)?;
        let (mut newest, mut late, mut max_open, mut max_bytes) = (0, 0_u64, 0, 0);
        let mut closed = Vec::new();
        // The keys the window took, by pane: what its answers can know of.
        let mut admitted: Vec<Vec<u64>> = vec![Vec::new(); by_pane.len()];
        for (j, &(t, key, _)) in stream.iter().enumerate() {
            match window.observe_at(t, key) {
                Ok(()) => admitted[t as usize / SLIDE].push(key),
                Err(Late { .. }) => late += 1,
            }
            newest = newest.max(t);
            closed.extend(window.advance_to(newest.saturating_sub(BOUND))?);
            max_open = max_open.max(window.open_panes());
            if j % SLIDE == 0 {
                max_bytes = max_bytes.max(window.size_in_bytes());
            }
        }
        closed.extend(window.advance_to(u64::MAX)?); // the end of the stream
        assert_eq!(late, window.late(), "the window counts what it hands back");
        // Per full window: the estimate against every item's exact count (the total error), the
        // exact count of the items taken against it (the loss to lateness, no sketch in it),
        // and the estimate against the items taken (the sketch's own error).
        let (mut total, mut loss, mut sketch) = (Vec::new(), Vec::new(), Vec::new());
        for c in closed.iter().filter(|c| c.end - c.start == SIZE as u64 && c.end as usize <= EVENTS) {
            let (start, end) = (c.start as usize, c.end as usize);
            let all = exact_by_end[&end] as f64;
            let taken = admitted[start / SLIDE..end / SLIDE].iter().flatten().collect::<HashSet<_>>().len() as f64;
            let estimate = c.synopsis.estimate();
            total.push(estimate / all - 1.0);
            loss.push(taken / all - 1.0);
            sketch.push(estimate / taken - 1.0);
        }
        let n = total.len() as f64;
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / n;
        let rms = |xs: &[f64]| (xs.iter().map(|e| e * e).sum::<f64>() / n).sqrt();
        let share = late as f64 / EVENTS as f64;
        let (population, drawn) = late_theory(lateness, &delays);
        let rse = 1.04 / m.sqrt();
        println!(
            "   {lateness:>9} {late:>8} {:>8.2}% {:>8.2}% {:>8.2}% {:>8} {:>+8.2}% {:>+8.2}% {:>7.2}% {max_open:>10} {max_bytes:>10}",
            100.0 * share,
            100.0 * drawn,
            100.0 * population,
            total.len(),
            100.0 * mean(&loss),
            100.0 * mean(&total),
            100.0 * rms(&sketch)
        );
        writeln!(
            lateness_csv,
            "{lateness},{BOUND},{EVENTS},{late},{share},{drawn},{population},{},{},{},{},{},{},{rse},{max_open},{max_bytes}",
            total.len(),
            mean(&loss),
            mean(&total),
            rms(&total),
            mean(&sketch),
            rms(&sketch)
        )?;
    }

    if let Some(dir) = csv {
        std::fs::create_dir_all(&dir)?;
        let files = [
            ("accuracy.csv", series_csv),
            ("accuracy_summary.csv", summary_csv),
            ("quantiles.csv", quantiles_csv),
            ("cost.csv", cost_csv),
            ("memory.csv", memory_csv),
            ("lateness.csv", lateness_csv),
        ];
        for (name, body) in &files {
            std::fs::write(format!("{dir}/{name}"), body)?;
        }
        let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
        println!("wrote {} into {dir}/", names.join(", "));
    }
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
