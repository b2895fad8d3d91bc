//! The crate's demonstration: a built-in stream of page views, and three questions about it,
//! each answered by the synopses next to the exact answer of a `HashSet` or `HashMap`. How
//! many distinct users visited? Who are the most active? Was this user active lately?
//!
//! ```text
//! cargo run --release --example demo
//! cargo run --release --example demo --features rayon    # also parallel observation
//! ```
//!
//! The stream: 2 000 000 page views whose user ids follow a Zipf law (exponent 1) over
//! 300 000 users, so a few users are very active and many are seen once or never. It comes
//! from a seeded splitmix64 generator written below, so every run sees the same stream and
//! prints the same numbers; only the timings depend on the machine.
//!
//! The demo shows, for HyperLogLog at precisions 10, 12 and 14, UltraLogLog and ExaLogLog at
//! about 4 KiB, and Flajolet–Martin with 256 and 1024 bitmaps: the estimate and its error, the
//! 95 % (±2σ) bounds, the memory held and the serialized size against the `HashSet`'s, and
//! the cost per observed item. It then
//! splits the stream in four parts, sketches each part alone, merges the sketches, and checks
//! that the result is exactly the sketch of the whole stream.
//!
//! Then the most active users, from a heavy-hitters summary and a Count-Min sketch, against
//! exact counts; and a sliding window of the last views kept in counting Bloom filters of 4,
//! 8 and 16 bits per counter, which insert each view as it arrives and remove it as it
//! leaves the window: no active user is ever missed, and narrow counters saturate under the
//! most active users' repeats.

use std::collections::{HashMap, HashSet};
use std::error::Error;
use std::time::Instant;

use synopses::cardinality::{ExaLogLog, FlajoletMartin, HyperLogLog, UltraLogLog};
use synopses::core::{Bounds, Confidence, Mergeable};
use synopses::frequency::{CountMin, HeavyHitters};
use synopses::membership::{CounterWidth, CountingBloom};

/// Page views in the stream.
const EVENTS: usize = 2_000_000;
/// Users who may visit; user ids are `1..=USERS`, user 1 the most active.
const USERS: usize = 300_000;
/// The Zipf exponent `s`: user `k` makes a share of the views proportional to `1 / k^s`.
const ZIPF_EXPONENT: f64 = 1.0;
/// The generator's seed: change it for another stream.
const SEED: u64 = 0x5EED_2024;
/// Parts of the stream in the merge demonstration.
const PARTS: usize = 4;
/// Users listed in the frequency table.
const TOP: usize = 5;
/// Page views in the sliding window of the membership demonstration.
const WINDOW: usize = 100_000;
/// The confidence of the bounds in the table.
const CONFIDENCE: Confidence = Confidence::TwoSigma;

/// Sebastiano Vigna's splitmix64: a tiny, fast, seeded generator, plenty for a demo stream.
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

/// The user id of every page view, in stream order: inverse-CDF sampling of a Zipf law.
fn page_views() -> Vec<u64> {
    let mut cdf = Vec::with_capacity(USERS);
    let mut total = 0.0;
    for k in 1..=USERS {
        total += (k as f64).powf(-ZIPF_EXPONENT);
        cdf.push(total);
    }
    let mut rng = SplitMix64(SEED);
    (0..EVENTS)
        .map(|_| {
            let u = rng.next_f64() * total;
            // The first user whose cumulative weight exceeds u; ids start at 1.
            cdf.partition_point(|&c| c <= u).min(USERS - 1) as u64 + 1
        })
        .collect()
}

/// Feeds the whole stream to `state` with `observe`, returning it and the time per item in ns.
fn timed<S>(mut state: S, events: &[u64], mut observe: impl FnMut(&mut S, u64)) -> (S, f64) {
    let start = Instant::now();
    for &user in events {
        observe(&mut state, user);
    }
    let ns = start.elapsed().as_nanos() as f64 / events.len() as f64;
    (state, ns)
}

/// Approximate heap bytes of a `HashSet<u64>` (hashbrown): one 8-byte slot and one control
/// byte per bucket, buckets a power of two holding up to 7/8 of them, plus the struct.
fn hashset_bytes(set: &HashSet<u64>) -> usize {
    let buckets = (set.capacity() * 8).div_ceil(7).next_power_of_two();
    std::mem::size_of::<HashSet<u64>>() + buckets * (std::mem::size_of::<u64>() + 1) + 16
}

/// One line of the comparison table.
struct Row {
    name: String,
    estimate: f64,
    /// The relative standard error the sketch states for itself; `None` for the exact set.
    rse: Option<f64>,
    bounds: Option<Bounds>,
    memory: usize,
    serialized: usize,
    ns_per_item: f64,
}

impl Row {
    fn hll(hll: &HyperLogLog, ns_per_item: f64) -> Self {
        Self {
            name: format!("HyperLogLog p={}", hll.precision()),
            estimate: hll.estimate(),
            rse: Some(hll.relative_standard_error()),
            bounds: Some(hll.bounds(CONFIDENCE)),
            memory: hll.size_in_bytes(),
            serialized: hll.to_bytes().len(),
            ns_per_item,
        }
    }

    fn ull(ull: &UltraLogLog, ns_per_item: f64) -> Self {
        Self {
            name: format!("UltraLogLog p={}", ull.precision()),
            estimate: ull.estimate(),
            rse: Some(ull.relative_standard_error()),
            bounds: Some(ull.bounds(CONFIDENCE)),
            memory: ull.size_in_bytes(),
            serialized: ull.to_bytes().len(),
            ns_per_item,
        }
    }

    fn ell(ell: &ExaLogLog, ns_per_item: f64) -> Self {
        Self {
            name: format!("ExaLogLog p={}", ell.precision()),
            estimate: ell.estimate(),
            rse: Some(ell.relative_standard_error()),
            bounds: Some(ell.bounds(CONFIDENCE)),
            memory: ell.size_in_bytes(),
            serialized: ell.to_bytes().len(),
            ns_per_item,
        }
    }

    fn fm(fm: &FlajoletMartin, ns_per_item: f64) -> Self {
        Self {
            name: format!("FlajoletMartin m={}", fm.bitmaps()),
            estimate: fm.estimate(),
            rse: Some(fm.relative_standard_error()),
            bounds: Some(fm.bounds(CONFIDENCE)),
            memory: fm.size_in_bytes(),
            serialized: fm.to_bytes().len(),
            ns_per_item,
        }
    }
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count rounded to an integer and grouped.
fn count(x: f64) -> String {
    grouped(x.round().max(0.0) as u64)
}

/// A signed percentage such as `+0.42 %`.
fn signed_percent(x: f64) -> String {
    format!("{:+.2} %", 100.0 * x)
}

fn main() -> Result<(), Box<dyn Error>> {
    // The stream.
    let start = Instant::now();
    let events = page_views();
    let generated_ms = start.elapsed().as_secs_f64() * 1e3;

    println!("synopses demo: how many distinct users made these page views?");
    println!();
    println!(
        "Stream: {} page views by up to {} users, user ids Zipf-distributed (s = {ZIPF_EXPONENT:.1}),",
        grouped(EVENTS as u64),
        grouped(USERS as u64),
    );
    let top = events.iter().filter(|&&u| u == 1).count();
    println!(
        "        splitmix64 seed {SEED:#x}; the most active user made {} views ({:.1} %). Generated in {generated_ms:.0} ms.",
        grouped(top as u64),
        100.0 * top as f64 / EVENTS as f64,
    );
    println!();

    // The exact answer, and what it costs.
    let (set, set_ns) = timed(HashSet::new(), &events, |set, user| {
        set.insert(user);
    });
    let truth = set.len() as f64;
    let set_memory = hashset_bytes(&set);
    println!(
        "Exact answer (HashSet<u64>): {} distinct users, ~{} bytes of memory, {set_ns:.1} ns per view.",
        count(truth),
        grouped(set_memory as u64),
    );
    println!();

    // Every sketch over the same stream.
    let mut rows = Vec::new();
    for p in [10, 12, 14] {
        let (hll, ns) = timed(HyperLogLog::new(p)?, &events, |h, user| h.observe(user));
        rows.push(Row::hll(&hll, ns));
    }
    // The same 4 KiB, more accuracy: UltraLogLog keeps two more bits of history per register,
    // ExaLogLog (3.5 KiB encoded) a finer scale and twenty.
    let (ull, ns) = timed(UltraLogLog::new(12)?, &events, |u, user| u.observe(user));
    rows.push(Row::ull(&ull, ns));
    let (ell, ns) = timed(ExaLogLog::new(10)?, &events, |e, user| e.observe(user));
    rows.push(Row::ell(&ell, ns));
    for m in [256, 1024] {
        let (fm, ns) = timed(FlajoletMartin::new(m)?, &events, |f, user| f.observe(user));
        rows.push(Row::fm(&fm, ns));
    }
    rows.push(Row {
        name: "HashSet<u64> (exact)".into(),
        estimate: truth,
        rse: None,
        bounds: None,
        memory: set_memory,
        // Shipping the set means shipping its ids, 8 bytes each.
        serialized: 8 * set.len(),
        ns_per_item: set_ns,
    });

    println!(
        "Estimates vs the exact count. σ: the sketch's own standard error; bounds: estimate ± 2σ (95 %); memory: bytes held."
    );
    let header = format!(
        "{:<21} {:>9} {:>9} {:>7}  {:<21} {:>4}  {:>11} {:>8} {:>11} {:>8}",
        "structure", "estimate", "error", "σ", "95 % bounds", "hit", "memory B", "vs set", "serialized", "ns/view"
    );
    println!("{header}");
    println!("{}", "─".repeat(header.chars().count()));
    for r in &rows {
        let (sigma, bounds, hit) = match (r.rse, r.bounds) {
            (Some(rse), Some(b)) => (
                format!("{:.2} %", 100.0 * rse),
                format!("{} – {}", count(b.lower), count(b.upper)),
                if b.contains(truth) { "yes" } else { "NO" },
            ),
            _ => ("exact".into(), "—".into(), "—"),
        };
        println!(
            "{:<21} {:>9} {:>9} {:>7}  {:<21} {:>4}  {:>11} {:>8} {:>11} {:>8.1}",
            r.name,
            count(r.estimate),
            signed_percent(r.estimate / truth - 1.0),
            sigma,
            bounds,
            hit,
            grouped(r.memory as u64),
            format!("1/{:.0}", set_memory as f64 / r.memory as f64),
            grouped(r.serialized as u64),
            r.ns_per_item,
        );
    }
    println!(
        "(\"hit\": the bounds contain the exact count; at 95 % about one row in twenty misses. The set serializes as 8 bytes per id.)"
    );
    println!();

    // Merging: sketch four parts separately, ship them as bytes, merge.
    let part_len = EVENTS.div_ceil(PARTS);
    println!(
        "Merging: the stream cut into {PARTS} consecutive parts (as {PARTS} servers would see it), one HyperLogLog p=12 per part, shipped as bytes."
    );
    let header = format!(
        "{:<8} {:>11} {:>16} {:>10} {:>9} {:>14}",
        "part", "views", "distinct exact", "estimate", "error", "bytes shipped"
    );
    println!("{header}");
    println!("{}", "─".repeat(header.chars().count()));
    let mut shipped = Vec::with_capacity(PARTS);
    let mut sum_of_parts = 0.0;
    for (i, part) in events.chunks(part_len).enumerate() {
        let (hll, _) = timed(HyperLogLog::new(12)?, part, |h, user| h.observe(user));
        let part_truth = part.iter().collect::<HashSet<_>>().len() as f64;
        let bytes = hll.to_bytes();
        println!(
            "{:<8} {:>11} {:>16} {:>10} {:>9} {:>14}",
            i + 1,
            grouped(part.len() as u64),
            count(part_truth),
            count(hll.estimate()),
            signed_percent(hll.estimate() / part_truth - 1.0),
            grouped(bytes.len() as u64),
        );
        sum_of_parts += hll.estimate();
        shipped.push(bytes);
    }
    let received = shipped.iter().map(|b| HyperLogLog::from_bytes(b)).collect::<Result<Vec<_>, _>>()?;
    let mut merged = received[0].empty_like();
    merged.merge_all(&received)?;
    let (single, single_ns) = timed(HyperLogLog::new(12)?, &events, |h, user| h.observe(user));

    println!(
        "Adding the parts' estimates gives {} ({}): users active in several parts are counted again in each.",
        count(sum_of_parts),
        signed_percent(sum_of_parts / truth - 1.0),
    );
    println!("Merging the sketches instead (register-wise maximum):");
    // The single pass without its martingale (a self-merge keeps every register and ends it):
    // a merge of parts holds its registers, but cannot keep a martingale of one stream.
    let mut single_registers = single.clone();
    single_registers.merge(&single)?;
    println!("  merged registers == single-pass registers: {}", merged == single_registers);
    println!(
        "  merged estimate      {:>9}  error {:>8}  σ {:.2} %  (register estimator: a merge ends the martingale)",
        count(merged.estimate()),
        signed_percent(merged.estimate() / truth - 1.0),
        100.0 * merged.relative_standard_error(),
    );
    println!(
        "  single-pass estimate {:>9}  error {:>8}  σ {:.2} %  (martingale estimator: one stream's history)",
        count(single.estimate()),
        signed_percent(single.estimate() / truth - 1.0),
        100.0 * single.relative_standard_error(),
    );
    println!("  exact                {:>9}", count(truth));
    if merged != single_registers {
        return Err("the merged sketch differs from the single-pass sketch".into());
    }
    println!();

    parallel(&events, &single, single_ns, truth)?;
    println!();
    frequency(&events)?;
    println!();
    membership(&events)?;
    Ok(())
}

/// Who are the most active users? A heavy-hitters summary lists them with guaranteed bounds;
/// a Count-Min sketch estimates any user's count.
fn frequency(events: &[u64]) -> Result<(), Box<dyn Error>> {
    let (exact, map_ns) = timed(HashMap::new(), events, |m, user| *m.entry(user).or_insert(0_u64) += 1);
    let (top, top_ns) = timed(HeavyHitters::new(100)?, events, |h, user| h.observe(user));
    let (cm, cm_ns) = timed(CountMin::with_error(0.0005, 0.001)?, events, |c, user| c.observe(user));
    println!("Who are the most active users? Exact HashMap counts ({map_ns:.1} ns per view) against:");
    println!(
        "  HeavyHitters k=100 (Misra–Gries): counts at most {} below the truth, always; {:.1} ns per view",
        grouped(top.error()),
        top_ns,
    );
    println!(
        "  CountMin {}×{}: at most ε·N = {} above the truth with probability {:.1} %, never below; {} bytes, {cm_ns:.1} ns per view",
        cm.width(),
        cm.depth(),
        count(cm.epsilon() * events.len() as f64),
        100.0 * (1.0 - cm.delta()),
        grouped(cm.size_in_bytes() as u64),
    );
    let header =
        format!("{:<6} {:>8} {:>9} {:>21} {:>10} {:>8}", "user", "exact", "HH count", "HH bounds", "CountMin", "over");
    println!("{header}");
    println!("{}", "─".repeat(header.chars().count()));
    for (user, kept) in top.top(TOP) {
        let truth = exact.get(&user).copied().unwrap_or(0);
        let b = top.bounds(&user);
        let estimate = cm.estimate(user);
        println!(
            "{user:<6} {:>8} {:>9} {:>21} {:>10} {:>8}",
            grouped(truth),
            grouped(kept),
            format!("{} – {}", count(b.lower), count(b.upper)),
            grouped(estimate),
            format!("+{}", estimate - truth),
        );
        if !b.contains(truth as f64) || estimate < truth {
            return Err(format!("user {user}: a guarantee failed").into());
        }
    }
    Ok(())
}

/// Was this user active in the last `WINDOW` views? Counting Bloom filters insert each view
/// and remove it when it leaves the window; the exact answer is a count per user.
fn membership(events: &[u64]) -> Result<(), Box<dyn Error>> {
    let (head, rest) = events.split_at(WINDOW);
    let in_window: HashSet<u64> = events[events.len() - WINDOW..].iter().copied().collect();
    println!(
        "Was this user active in the last {} views? {} users were, at the end. Counting Bloom filters sized for 1 %",
        grouped(WINDOW as u64),
        grouped(in_window.len() as u64),
    );
    println!("at that many users insert each view and remove it when it leaves the window:");
    let header = format!(
        "{:<8} {:>11} {:>10} {:>10} {:>17} {:>13} {:>8}",
        "counters", "memory B", "ns/view", "missed", "false positives", "saturated", "items"
    );
    println!("{header}");
    println!("{}", "─".repeat(header.chars().count()));
    let sized = CountingBloom::with_false_positive_rate(in_window.len() as u64, 0.01)?;
    let outside: Vec<u64> = (1..=USERS as u64).filter(|u| !in_window.contains(u)).collect();
    for width in [CounterWidth::Four, CounterWidth::Eight, CounterWidth::Sixteen] {
        let mut filter = sized.with_counter_width(width)?;
        head.iter().for_each(|&user| filter.observe(user));
        let start = Instant::now();
        for (&arriving, &leaving) in rest.iter().zip(events) {
            filter.observe(arriving);
            filter.remove(leaving)?; // it was inserted WINDOW views ago
        }
        let ns = start.elapsed().as_nanos() as f64 / rest.len() as f64;
        let missed = in_window.iter().filter(|&&u| !filter.contains(u)).count();
        let false_positives = outside.iter().filter(|&&u| filter.contains(u)).count();
        println!(
            "{:<8} {:>11} {:>10.1} {:>10} {:>17} {:>13} {:>8}",
            format!("{} bits", width.bits()),
            grouped(filter.size_in_bytes() as u64),
            ns,
            missed,
            format!("{:.2} %", 100.0 * false_positives as f64 / outside.len() as f64),
            grouped(filter.saturated_counters() as u64),
            grouped(filter.total()),
        );
        if missed > 0 {
            return Err("a counting Bloom filter missed an active user".into());
        }
    }
    println!(
        "(A view is a pair of insert and remove, so ns/view covers both. The most active users repeat thousands of times in a window:"
    );
    println!(
        " their counters saturate at 15 or 255 and stay set. Harmless while those users stay active; were they to leave, the"
    );
    println!(" stuck counters could cause false positives, never a miss. 16 bits keep count.)");
    Ok(())
}

/// `par_observe` over rayon's pool gives the very registers of the sequential pass.
#[cfg(feature = "rayon")]
fn parallel(events: &[u64], sequential: &HyperLogLog, sequential_ns: f64, truth: f64) -> Result<(), Box<dyn Error>> {
    use synopses::core::OperatorExt;

    println!(
        "Parallel: par_observe splits the stream over rayon's {} threads, one sketch per task, then merges.",
        rayon::current_num_threads()
    );
    let mut par = HyperLogLog::new(12)?;
    let start = Instant::now();
    par.par_observe(events);
    let ns = start.elapsed().as_nanos() as f64 / events.len() as f64;
    // The registers decide the register estimate; the sequential pass also kept a martingale,
    // which describes one stream and does not survive a merge.
    let same = par.register_estimate().to_bits() == sequential.register_estimate().to_bits();
    println!("  parallel register estimate == sequential register estimate: {same}");
    println!(
        "  parallel estimate {}  error {}  (wall time {ns:.1} ns per view; one pass took {sequential_ns:.1})",
        count(par.estimate()),
        signed_percent(par.estimate() / truth - 1.0),
    );
    if !same {
        return Err("par_observe differs from the sequential pass".into());
    }
    Ok(())
}

#[cfg(not(feature = "rayon"))]
fn parallel(_: &[u64], _: &HyperLogLog, _: f64, _: f64) -> Result<(), Box<dyn Error>> {
    println!("Parallel: run with `--features rayon` to see par_observe give the same registers as one pass.");
    Ok(())
}
