//! Snapshots of a partitioned stream operator: consistent cuts, aligned barriers, a crash and
//! the restore that finishes with the uninterrupted answer.
//!
//! **The dataflow.** Two sources read two partitions of a durable log (each a sequence of keys
//! with offsets, as in Kafka) and route every key, by key grouping, to one of three workers; a
//! worker keeps a Count-Min sketch of its keys. Every channel (source → worker) is first in,
//! first out; a seeded scheduler interleaves the sources' sends and the channels' deliveries.
//!
//! **Checkpoints.** Every 2000 items a source records its offset and sends a *barrier* of the
//! epoch down each of its channels (Carbone et al.'s asynchronous barrier snapshotting, Flink's
//! epochs). A worker snapshots its sketch at the barrier; when every source and every worker
//! has, the checkpoint is *complete* and is written with [`Checkpoints`] (one part per source
//! offset and per worker). After a crash the newest complete checkpoint is restored, the
//! channels' contents are lost, and the sources replay from their recorded offsets.
//!
//! **When does a worker snapshot?** Its state must reflect, from every channel, exactly the
//! items sent before that channel's barrier: the cut must be *consistent* (the course's
//! validity condition: the captured configuration is one the system could have been in), and
//! every checkpoint must eventually complete (termination). Three rules, each run 40 times
//! with a crash at a random moment:
//!
//! * **aligned**: a channel that delivered the barrier is blocked (its items wait) until the
//!   barrier has come down every channel; then the worker snapshots. Consistent: the restore
//!   finishes with the uninterrupted run's sketches, bit for bit.
//! * **at the first barrier**: snapshot as soon as one channel delivers it, and keep reading
//!   every channel. Items sent before the barrier on the other channels, still in flight, are
//!   in no snapshot and are not replayed: lost.
//! * **at the last barrier, unblocked**: snapshot when the barrier has come down every channel,
//!   but read on meanwhile. Items sent after the barrier on the early channels are in the
//!   snapshot *and* replayed: counted twice.
//!
//! Last, the cost of a checkpoint: the state's size against the time to write it (encode,
//! write, flush and rename, with [`Checkpoints::save`]) and to restore it, for Count-Min and
//! HyperLogLog sketches of growing size.
//!
//! ```text
//! cargo run --release --example snapshots
//! cargo run --release --example snapshots -- --csv notebooks/snapshots   # also writes CSV
//! ```

use std::collections::VecDeque;
use std::error::Error;
use std::fmt::Write as _;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use synopses::DecodeError;
use synopses::cardinality::HyperLogLog;
use synopses::codec::Codec;
use synopses::frequency::CountMin;
use synopses::stream::{Checkpoints, KeyGrouping, Partitioner, Snapshot};

const SOURCES: usize = 2;
const WORKERS: usize = 3;
const ITEMS_PER_SOURCE: u64 = 20_000;
const EPOCH: u64 = 2_000;
const TRIALS: u64 = 40;

/// When a worker takes its snapshot.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    Aligned,
    FirstBarrier,
    LastBarrierUnblocked,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Aligned => "aligned",
            Rule::FirstBarrier => "at the first barrier",
            Rule::LastBarrierUnblocked => "at the last barrier (unblocked)",
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Message {
    Item(u64),
    Barrier(u64),
}

/// What a checkpoint holds: each source's offset, then each worker's sketch. Implementing
/// [`Snapshot`] for it lets [`Checkpoints`] store it, one file per part.
#[derive(Debug, Clone, PartialEq)]
struct Job {
    offsets: Vec<u64>,
    workers: Vec<CountMin>,
}

impl Snapshot for Job {
    fn snapshot(&self) -> Vec<Vec<u8>> {
        let offsets = self.offsets.iter().map(|o| o.to_le_bytes().to_vec());
        offsets.chain(self.workers.iter().map(Codec::to_bytes)).collect()
    }

    fn restore(parts: &[Vec<u8>]) -> Result<Self, DecodeError> {
        let invalid = |reason| DecodeError::InvalidField { field: "job", reason };
        if parts.len() != SOURCES + WORKERS {
            return Err(invalid("one part per source and per worker"));
        }
        let offsets = parts[..SOURCES]
            .iter()
            .map(|p| <[u8; 8]>::try_from(p.as_slice()).map(u64::from_le_bytes).map_err(|_| invalid("an 8-byte offset")))
            .collect::<Result<_, _>>()?;
        let workers = parts[SOURCES..].iter().map(|p| CountMin::from_bytes(p)).collect::<Result<_, _>>()?;
        Ok(Self { offsets, workers })
    }
}

/// One worker: its sketch, the newest barrier each channel has delivered, the next epoch it
/// snapshots, and its snapshots not yet part of a complete checkpoint.
struct Worker {
    sketch: CountMin,
    /// Items consumed from each channel.
    consumed: [u64; SOURCES],
    delivered: [u64; SOURCES],
    next: u64,
    snapshots: VecDeque<(u64, CountMin)>,
    /// For each snapshot, the items consumed from each channel by then.
    cuts: Vec<(u64, [u64; SOURCES])>,
}

impl Worker {
    /// Whether, under `rule`, the barriers delivered call for the snapshot of epoch `next`.
    fn due(&self, rule: Rule) -> bool {
        match rule {
            Rule::FirstBarrier => self.delivered.iter().any(|&d| d >= self.next),
            Rule::Aligned | Rule::LastBarrierUnblocked => self.delivered.iter().all(|&d| d >= self.next),
        }
    }

    /// Whether the channel from source `s` is blocked: aligned, it delivered the barrier of the
    /// epoch the worker is still waiting to snapshot.
    fn blocked(&self, rule: Rule, s: usize) -> bool {
        rule == Rule::Aligned && self.delivered[s] >= self.next
    }
}

/// The two logs: the keys each source reads, Zipf-like (key `j` with weight `1/(j + 1)`).
fn logs(seed: u64) -> Vec<Vec<u64>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..SOURCES)
        .map(|_| {
            (0..ITEMS_PER_SOURCE)
                // Inverse transform of a continuous 1/x law over [1, 10^4]: heavy head, long tail.
                .map(|_| 10_000f64.powf(rng.random::<f64>()) as u64 - 1)
                .collect()
        })
        .collect()
}

fn empty_sketch() -> Result<CountMin, Box<dyn Error>> {
    Ok(CountMin::with_error_and_seed(0.001, 0.01, 7)?)
}

/// How a run ended: the workers' sketches if it finished (not if it crashed), the most items
/// alignment held back, and for every snapshot (epoch, source, worker) how many items of that
/// channel the worker's snapshot holds beyond those sent before the barrier (0 on a
/// consistent cut; below 0 items in flight, lost; above 0 items after the barrier, doubled).
type Outcome = (Option<Vec<CountMin>>, usize, Vec<(u64, usize, usize, i64)>);

/// Runs the dataflow over `logs` from the checkpoint `from` (or from the start) until the
/// scheduler has taken `crash_after` steps (then it crashes: the state in memory is lost) or
/// the logs are done. Complete checkpoints are saved to `store`, if any. Returns the workers'
/// sketches if it finished, and the most items held back by alignment.
fn run(
    logs: &[Vec<u64>],
    rule: Rule,
    from: Option<(u64, Job)>,
    store: Option<&Checkpoints>,
    crash_after: Option<u64>,
    seed: u64,
) -> Result<Outcome, Box<dyn Error>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (epoch, job) = match from {
        Some(restored) => restored,
        None => (0, Job { offsets: vec![0; SOURCES], workers: vec![empty_sketch()?; WORKERS] }),
    };
    let mut offsets = job.offsets;
    let mut workers: Vec<Worker> = job
        .workers
        .into_iter()
        .map(|sketch| Worker {
            sketch,
            consumed: [0; SOURCES],
            delivered: [epoch; SOURCES],
            next: epoch + 1,
            snapshots: VecDeque::new(),
            cuts: Vec::new(),
        })
        .collect();
    let mut channels: Vec<Vec<VecDeque<Message>>> = vec![vec![VecDeque::new(); WORKERS]; SOURCES];
    let mut router = KeyGrouping::new(WORKERS)?;
    // Items sent on each channel, and by each barrier.
    let mut sent = [[0_u64; WORKERS]; SOURCES];
    let mut sent_by_barrier: Vec<(u64, usize, [u64; WORKERS])> = Vec::new();
    let mut held_back = 0;
    let mut steps = 0;
    let mut actions = Vec::new();
    loop {
        if crash_after.is_some_and(|c| steps >= c) {
            return Ok((None, held_back, Vec::new()));
        }
        steps += 1;
        // The actions possible now: a source sends, or a channel not blocked delivers.
        actions.clear();
        for (s, offset) in offsets.iter().enumerate() {
            if *offset < logs[s].len() as u64 {
                actions.push((s, None));
            }
        }
        for (s, outs) in channels.iter().enumerate() {
            for (w, channel) in outs.iter().enumerate() {
                if !channel.is_empty() && !workers[w].blocked(rule, s) {
                    actions.push((s, Some(w)));
                }
            }
        }
        if actions.is_empty() {
            let mut cuts = Vec::new();
            for &(e, s, by_barrier) in &sent_by_barrier {
                for (w, worker) in workers.iter().enumerate() {
                    if let Some((_, consumed)) = worker.cuts.iter().find(|c| c.0 == e) {
                        cuts.push((e, s, w, consumed[s] as i64 - by_barrier[w] as i64));
                    }
                }
            }
            return Ok((Some(workers.into_iter().map(|w| w.sketch).collect()), held_back, cuts));
        }
        match actions[rng.random_range(0..actions.len())] {
            (s, None) => {
                let key = logs[s][offsets[s] as usize];
                let w = router.route(&key);
                channels[s][w].push_back(Message::Item(key));
                sent[s][w] += 1;
                offsets[s] += 1;
                if offsets[s] % EPOCH == 0 {
                    sent_by_barrier.push((offsets[s] / EPOCH, s, sent[s]));
                    for channel in &mut channels[s] {
                        channel.push_back(Message::Barrier(offsets[s] / EPOCH));
                    }
                }
            }
            (s, Some(w)) => {
                let worker = &mut workers[w];
                match channels[s][w].pop_front() {
                    Some(Message::Item(key)) => {
                        worker.sketch.observe(key);
                        worker.consumed[s] += 1;
                    }
                    Some(Message::Barrier(e)) => {
                        worker.delivered[s] = e;
                        while worker.due(rule) {
                            worker.snapshots.push_back((worker.next, worker.sketch.clone()));
                            worker.cuts.push((worker.next, worker.consumed));
                            worker.next += 1;
                        }
                    }
                    None => {}
                }
                if rule == Rule::Aligned {
                    // Items waiting behind a delivered barrier, across the blocked channels.
                    let waiting = (0..SOURCES)
                        .filter(|&s| workers[w].blocked(rule, s))
                        .map(|s| channels[s][w].iter().take_while(|m| matches!(m, Message::Item(_))).count())
                        .sum::<usize>();
                    held_back = held_back.max(waiting);
                }
            }
        }
        // Complete: every source has sent the epoch's barrier (its offset is the epoch's) and
        // every worker has snapshotted it.
        while let Some(e) = workers[0].snapshots.front().map(|f| f.0) {
            let sent = offsets.iter().all(|&o| o >= e * EPOCH);
            if !sent || !workers.iter().all(|w| w.snapshots.front().is_some_and(|f| f.0 == e)) {
                break;
            }
            let job = Job {
                offsets: vec![e * EPOCH; SOURCES],
                workers: workers.iter_mut().filter_map(|w| w.snapshots.pop_front().map(|f| f.1)).collect(),
            };
            if let Some(store) = store {
                store.save(e, &job)?;
            }
        }
    }
}

/// The median of `runs` timings of `f`, in seconds.
fn median_time(runs: usize, mut f: impl FnMut() -> Result<(), Box<dyn Error>>) -> Result<f64, Box<dyn Error>> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[runs / 2])
}

/// Saves `state` under the next epoch and restores it, 5 times each: prints and returns its
/// size and the median times, as a CSV row's tail.
fn measure<S: Snapshot>(
    store: &Checkpoints,
    epoch: &mut u64,
    state: &S,
    label: &str,
) -> Result<String, Box<dyn Error>> {
    let bytes: usize = state.snapshot().iter().map(Vec::len).sum();
    let save = median_time(5, || {
        *epoch += 1;
        Ok(store.save(*epoch, state)?)
    })?;
    let restore = median_time(5, || match store.latest::<S>()? {
        Some(_) => Ok(()),
        None => Err("the checkpoint just saved is missing".into()),
    })?;
    println!("{bytes:>12} {:>12.3} {:>12.3}   {label}", 1e3 * save, 1e3 * restore);
    Ok(format!("{bytes},{save},{restore}"))
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let csv = args.iter().position(|a| a == "--csv").and_then(|i| args.get(i + 1)).cloned();
    let root = std::env::temp_dir().join(format!("synopses-snapshots-{}", std::process::id()));

    let total = SOURCES as u64 * ITEMS_PER_SOURCE;
    println!(
        "{SOURCES} sources × {ITEMS_PER_SOURCE} items → {WORKERS} workers (key grouping, a Count-Min each); a barrier every \
         {EPOCH} items; {TRIALS} crashes at random moments, restored from the newest complete checkpoint."
    );
    println!();
    println!(
        "{:<32} {:>10} {:>14} {:>14} {:>14} {:>12}",
        "snapshot rule", "bit-equal", "items counted", "min", "max", "held back"
    );
    let mut cuts = String::from("rule,epoch,source,worker,beyond_barrier\n");
    let mut recovery = String::from("rule,trial,crash_step,restored_epoch,counted,expected,bit_equal,held_back\n");
    for rule in [Rule::Aligned, Rule::FirstBarrier, Rule::LastBarrierUnblocked] {
        let (mut equal, mut counted, mut held) = (0, Vec::new(), 0);
        for trial in 0..TRIALS {
            let logs = logs(0x5A17 + trial);
            let dir = root.join(format!("{rule:?}-{trial}"));
            let store = Checkpoints::open(&dir)?;
            // The run that never fails, for the answer to match.
            let (whole, _, cut) = run(&logs, rule, None, None, None, trial)?;
            if trial == 0 {
                for (e, s, w, beyond) in cut {
                    writeln!(cuts, "{},{e},{s},{w},{beyond}", rule.name())?;
                }
            }
            let whole = whole.ok_or("the uninterrupted run crashed")?;
            // A crash somewhere after the second epoch, before the end (about 2 steps an item).
            let crash = 2 * (2 * EPOCH * SOURCES as u64) + (trial * 7919) % (2 * total - 8 * EPOCH);
            let (_, held_back, _) = run(&logs, rule, None, Some(&store), Some(crash), trial)?;
            // The newest complete checkpoint; with none, the replay starts from the beginning.
            let restored = store.latest::<Job>()?.map(|r| (r.epoch, r.state));
            let epoch = restored.as_ref().map_or(0, |r| r.0);
            let (finished, _, _) = run(&logs, rule, restored, Some(&store), None, trial + 1000)?;
            let finished = finished.ok_or("the restored run crashed")?;
            let n: u64 = finished.iter().map(CountMin::total).sum();
            let bit_equal = finished == whole;
            equal += u64::from(bit_equal);
            counted.push(n);
            held = held.max(held_back);
            writeln!(recovery, "{},{trial},{crash},{epoch},{n},{total},{bit_equal},{held_back}", rule.name())?;
            std::fs::remove_dir_all(&dir)?;
        }
        let mean = counted.iter().sum::<u64>() as f64 / counted.len() as f64;
        let (lo, hi) = (counted.iter().min().copied().unwrap_or(0), counted.iter().max().copied().unwrap_or(0));
        let rel = |n: f64| format!("{:+.2} %", 100.0 * (n / total as f64 - 1.0));
        println!(
            "{:<32} {:>6} / {TRIALS} {:>14} {:>14} {:>14} {:>12}",
            rule.name(),
            equal,
            rel(mean),
            rel(lo as f64),
            rel(hi as f64),
            if rule == Rule::Aligned { held.to_string() } else { "-".into() }
        );
    }
    println!();
    println!(
        "items counted: the restored run's total against the {total} items of the logs (mean, min and max over the crashes);"
    );
    println!(
        "held back: the most items that waited behind a delivered barrier during alignment, the price of consistency."
    );
    println!();

    // What a checkpoint costs: the state's size against the time to save and to restore it.
    println!("{:>12} {:>12} {:>12}   state", "bytes", "save ms", "restore ms");
    let mut cost = String::from("state,parameter,bytes,save_seconds,restore_seconds\n");
    let store = Checkpoints::open(root.join("cost"))?;
    let mut epoch = 0;
    for epsilon in [0.01, 0.001, 0.0001, 0.00002] {
        let mut sketches = vec![CountMin::with_error_and_seed(epsilon, 0.01, 7)?; WORKERS];
        sketches.iter_mut().enumerate().for_each(|(i, s)| (0..10_000_u64).for_each(|k| s.observe(k * 3 + i as u64)));
        let job = Job { offsets: vec![0; SOURCES], workers: sketches };
        let row = measure(&store, &mut epoch, &job, &format!("{WORKERS} Count-Min sketches, ε = {epsilon}"))?;
        writeln!(cost, "Count-Min x{WORKERS},epsilon={epsilon},{row}")?;
    }
    for p in [10_u8, 14, 18] {
        let mut hll = HyperLogLog::new(p)?;
        hll.observe_all(0..1_000_000_u64);
        let row = measure(&store, &mut epoch, &hll, &format!("a HyperLogLog, p = {p}"))?;
        writeln!(cost, "HyperLogLog,p={p},{row}")?;
    }
    println!();
    println!("A checkpoint costs a few file system operations (a directory, a manifest, a flush and a rename) plus");
    println!("the time to encode and write its bytes: small states pay the fixed cost, large ones their size.");
    std::fs::remove_dir_all(&root)?;

    if let Some(dir) = csv {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(format!("{dir}/recovery.csv"), recovery)?;
        std::fs::write(format!("{dir}/cost.csv"), cost)?;
        std::fs::write(format!("{dir}/cuts.csv"), cuts)?;
        println!("wrote {dir}/recovery.csv, {dir}/cuts.csv and {dir}/cost.csv");
    }
    Ok(())
}
