//! Distinct users per epoch, and in total, over a stream of page views on timely dataflow
//! workers: threads, processes or machines.
//!
//! ```text
//! cargo run --release --features timely --example timely -- -w 2                 # 2 threads
//! cargo run --release --features timely --example timely -- -w 2 --items 100000000
//! # two processes (on two machines, put their addresses in hosts.txt):
//! printf '127.0.0.1:2101\n127.0.0.1:2102\n' > hosts.txt
//! cargo run --release --features timely --example timely -- -n 2 -p 0 -h hosts.txt &
//! cargo run --release --features timely --example timely -- -n 2 -p 1 -h hosts.txt
//! ```
//!
//! The stream: `--items` page views (default 10^6), view `v` by user `user(v)` out of 3·10^6.
//! It is cut into epochs, one timely timestamp each, of `--epoch` views per worker (default
//! 10^5): worker `i` of `n` reads the views `i, i + n, i + 2n, ...` of each epoch, then
//! advances its input to the next epoch and steps until the epoch is through, so no worker
//! holds more than an epoch of views. `sketch` folds each worker's views into a HyperLogLog per
//! epoch and merges the epoch's parts on worker 0, which prints the distinct users of the epoch
//! and merges them into a running total; at the end worker 0 checks that the total holds
//! exactly the registers a single pass over the whole stream builds (not its martingale, a
//! record of one stream that a merge of parts cannot keep). Every process prints its peak
//! memory (VmHWM), flat in the number of views.
//!
//! Bad options (a host file without exactly `-n` addresses, `-p` not below `-n`) fail at once
//! with a message; processes that have not all connected within 30 s give up with a message
//! naming the missing one; a process that dies makes the others fail: restart them all.

use std::cell::RefCell;
use std::error::Error;
use std::rc::Rc;

use synopses::cardinality::HyperLogLog;
use synopses::stream::timely::{SketchStream, config_from_args, execute};
use timely::dataflow::InputHandle;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::worker::Worker;

const USERS: u64 = 3_000_000;
const PRECISION: u8 = 14;
/// How long the processes have to find each other before the run gives up.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The user of view `v`: a fixed scramble of the view number, so every run sees one stream.
fn user(view: u64) -> u64 {
    view.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) % USERS
}

/// The stream's shape, the same on every worker.
#[derive(Clone, Copy)]
struct Shape {
    items: u64,
    per_worker_epoch: u64,
}

impl Shape {
    /// Views of one epoch over all workers.
    fn epoch_len(&self, peers: u64) -> u64 {
        self.per_worker_epoch * peers
    }

    fn epochs(&self, peers: u64) -> u64 {
        self.items.div_ceil(self.epoch_len(peers))
    }
}

/// What worker 0 has answered so far: the running total and each epoch's estimate. (The other
/// workers' copies stay empty.) Everything a restart from epoch `to` needs besides the input.
struct Running {
    total: HyperLogLog,
    per_epoch: Vec<f64>,
}

/// Runs epochs `from..to` on this worker and returns the running state, extended by them.
fn run_epochs(worker: &mut Worker, shape: Shape, from: u64, to: u64, running: Running) -> Result<Running, String> {
    let (index, peers) = (worker.index() as u64, worker.peers() as u64);
    let proto = HyperLogLog::new(PRECISION).map_err(|e| e.to_string())?;
    let state = Rc::new(RefCell::new((running, None::<String>)));
    let sink = Rc::clone(&state);
    let mut input = InputHandle::new();
    let probe = worker.dataflow::<u64, _, _>(|scope| {
        let (probe, _) = scope
            .input_from(&mut input)
            .container::<Vec<u64>>()
            .sketch(&proto)
            .inspect(move |result| {
                let (running, failure) = &mut *sink.borrow_mut();
                let merged = result.as_ref().map_err(ToString::to_string).and_then(|epoch| {
                    running.per_epoch.push(epoch.estimate());
                    running.total.merge(epoch).map_err(|e| e.to_string())
                });
                if let Err(e) = merged {
                    failure.get_or_insert(e);
                }
            })
            .probe();
        probe
    });
    input.advance_to(from);
    for epoch in from..to {
        let start = epoch * shape.epoch_len(peers);
        let end = (start + shape.epoch_len(peers)).min(shape.items);
        (start + index..end).step_by(peers as usize).for_each(|view| input.send(user(view)));
        input.advance_to(epoch + 1);
        worker.step_or_park_while(None, || probe.less_than(input.time()));
    }
    drop(input);
    worker.step_or_park_while(None, || !probe.done());
    drop(probe);
    let (running, failure) = Rc::try_unwrap(state).map_err(|_| "the dataflow still holds its state")?.into_inner();
    match failure {
        Some(e) => Err(e),
        None => Ok(running),
    }
}

/// Peak resident memory of this process, from /proc/self/status (Linux), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Takes this example's own options (`--items N`, `--epoch N`) out of the arguments.
fn own_options(args: Vec<String>) -> Result<(Shape, Vec<String>), Box<dyn Error>> {
    let mut shape = Shape { items: 1_000_000, per_worker_epoch: 100_000 };
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--items" => shape.items = args.next().ok_or("--items needs a number")?.parse()?,
            "--epoch" => shape.per_worker_epoch = args.next().ok_or("--epoch needs a number")?.parse()?,
            _ => rest.push(arg),
        }
    }
    if shape.per_worker_epoch == 0 {
        return Err("--epoch must be at least 1".into());
    }
    Ok((shape, rest))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let (shape, timely_args) = own_options(std::env::args().collect())?;
    let config = config_from_args(timely_args)?;
    let started = std::time::Instant::now();
    let results = execute(config, CONNECT_TIMEOUT, move |worker| {
        let peers = worker.peers() as u64;
        let empty = HyperLogLog::new(PRECISION).map_err(|e| e.to_string())?;
        let running = Running { total: empty, per_epoch: Vec::new() };
        let epochs = shape.epochs(peers);
        run_epochs(worker, shape, 0, epochs, running).map(|running| (worker.index(), peers, running))
    })?
    .join();
    let elapsed = started.elapsed();
    for result in results {
        let (index, peers, running) = result??;
        if index != 0 {
            continue;
        }
        println!(
            "{peers} timely workers, {} views in {} epochs of {} views per worker.",
            shape.items,
            running.per_epoch.len(),
            shape.per_worker_epoch
        );
        let step = running.per_epoch.len().div_ceil(8).max(1);
        for (epoch, estimate) in running.per_epoch.iter().enumerate().step_by(step) {
            println!("  epoch {epoch:>4}: {estimate:>9.0} distinct users");
        }
        let mut single = HyperLogLog::new(PRECISION)?;
        (0..shape.items).for_each(|v| single.observe(user(v)));
        println!(
            "All epochs: {:.0} distinct users, ±{:.2} % at one σ.",
            running.total.estimate(),
            100.0 * running.total.relative_standard_error()
        );
        // A self-merge keeps every register and ends the martingale, which `==` compares.
        let registers = |s: &HyperLogLog| -> Result<HyperLogLog, synopses::MergeError> {
            let mut out = s.clone();
            out.merge(s)?;
            Ok(out)
        };
        let same = registers(&running.total)? == registers(&single)?;
        println!("Running total identical to one sequential pass: {same}.");
        if !same {
            return Err("the running total differs from the sequential pass".into());
        }
    }
    println!(
        "Dataflow {:.0} ms; peak memory of this process (VmHWM): {}.",
        elapsed.as_secs_f64() * 1e3,
        peak_rss_mb().map_or("unknown".to_string(), |mb| format!("{mb:.1} MB"))
    );
    Ok(())
}
