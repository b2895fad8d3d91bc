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
//!
//! # Checkpoints, a crash and a restart
//!
//! With `--checkpoints DIR`, worker 0 saves the running total after every completed epoch
//! (`stream::Checkpoints`: one directory per checkpoint, written atomically), and every
//! process starts from the newest intact checkpoint in `DIR`, replaying the views from the
//! epoch after it. `--pause-ms N` makes each worker wait N ms per epoch, a slow source.
//!
//! ```text
//! cargo run --release --features timely --example timely -- --kill-demo
//! ```
//!
//! runs the whole story on 127.0.0.1: it starts this example as two processes with
//! checkpoints, kills process 1 (SIGKILL) once a few epochs are checkpointed, sees process 0
//! fail, restarts both, and they finish from the last checkpoint with the total of one
//! sequential pass over all the views.

use std::cell::RefCell;
use std::error::Error;
use std::process::{Child, Command};
use std::rc::Rc;
use std::time::{Duration, Instant};

use synopses::cardinality::HyperLogLog;
use synopses::stream::Checkpoints;
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
#[derive(Clone)]
struct Shape {
    items: u64,
    per_worker_epoch: u64,
    /// Where worker 0 checkpoints the running total after each epoch, if anywhere.
    checkpoints: Option<Checkpoints>,
    /// A pause per epoch on every worker: a slow source.
    pause: Duration,
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
    per_epoch: Vec<(u64, f64)>,
}

/// Runs epochs `from..to` on this worker and returns the running state, extended by them.
fn run_epochs(worker: &mut Worker, shape: &Shape, from: u64, to: u64, running: Running) -> Result<Running, String> {
    let (index, peers) = (worker.index() as u64, worker.peers() as u64);
    let proto = HyperLogLog::new(PRECISION).map_err(|e| e.to_string())?;
    let state = Rc::new(RefCell::new((running, None::<String>)));
    let sink = Rc::clone(&state);
    let store = shape.checkpoints.clone();
    let mut input = InputHandle::new();
    let probe = worker.dataflow::<u64, _, _>(|scope| {
        let (probe, _) = scope
            .input_from(&mut input)
            .container::<Vec<u64>>()
            .sketch(&proto)
            .inspect_core(move |event| {
                let Ok((stamp, results)) = event else { return };
                let epoch = stamp.least().copied().unwrap_or(u64::MAX);
                let (running, failure) = &mut *sink.borrow_mut();
                for result in results {
                    let merged = result.as_ref().map_err(ToString::to_string).and_then(|sketch| {
                        running.per_epoch.push((epoch, sketch.estimate()));
                        running.total.merge(sketch).map_err(|e| e.to_string())
                    });
                    // The epoch is complete on every worker: the total as of its end is a
                    // consistent state to resume from, at the next epoch.
                    let saved = merged.and_then(|()| match &store {
                        Some(store) => store.save(epoch + 1, &running.total).map_err(|e| e.to_string()),
                        None => Ok(()),
                    });
                    if let Err(e) = saved {
                        failure.get_or_insert(e);
                    }
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
        std::thread::sleep(shape.pause);
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

/// Takes this example's own options (`--items N`, `--epoch N`, `--checkpoints DIR`,
/// `--pause-ms N`, `--kill-demo`) out of the arguments.
fn own_options(args: Vec<String>) -> Result<(Shape, bool, Vec<String>), Box<dyn Error>> {
    let mut shape = Shape { items: 1_000_000, per_worker_epoch: 100_000, checkpoints: None, pause: Duration::ZERO };
    let mut kill_demo = false;
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--items" => shape.items = args.next().ok_or("--items needs a number")?.parse()?,
            "--epoch" => shape.per_worker_epoch = args.next().ok_or("--epoch needs a number")?.parse()?,
            "--checkpoints" => {
                shape.checkpoints = Some(Checkpoints::open(args.next().ok_or("--checkpoints needs a directory")?)?);
            }
            "--pause-ms" => {
                shape.pause = Duration::from_millis(args.next().ok_or("--pause-ms needs a number")?.parse()?);
            }
            "--kill-demo" => kill_demo = true,
            _ => rest.push(arg),
        }
    }
    if shape.per_worker_epoch == 0 {
        return Err("--epoch must be at least 1".into());
    }
    Ok((shape, kill_demo, rest))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let (shape, kill_demo, timely_args) = own_options(std::env::args().collect())?;
    if kill_demo {
        return self::kill_demo();
    }
    let config = config_from_args(timely_args)?;
    // Every process reads the same directory before any epoch runs (no epoch can complete
    // before all processes have connected), so all resume from the same epoch.
    let restored = match &shape.checkpoints {
        Some(store) => store.latest::<HyperLogLog>()?,
        None => None,
    };
    if let Some(restored) = &restored {
        for (epoch, why) in &restored.skipped {
            eprintln!("checkpoint {epoch} skipped: {why}");
        }
        println!("Resuming from the checkpoint of epoch {}.", restored.epoch);
    }
    let (from, total) = match restored {
        Some(restored) => (restored.epoch, restored.state),
        None => (0, HyperLogLog::new(PRECISION)?),
    };
    let started = Instant::now();
    let run_shape = shape.clone();
    let results = execute(config, CONNECT_TIMEOUT, move |worker| {
        let peers = worker.peers() as u64;
        let running = Running { total: total.clone(), per_epoch: Vec::new() };
        let epochs = run_shape.epochs(peers);
        run_epochs(worker, &run_shape, from.min(epochs), epochs, running)
            .map(|running| (worker.index(), peers, running))
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
            shape.epochs(peers),
            shape.per_worker_epoch
        );
        let step = running.per_epoch.len().div_ceil(8).max(1);
        for (epoch, estimate) in running.per_epoch.iter().step_by(step) {
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

/// Starts this example as two processes on 127.0.0.1 with checkpoints and a slow source, kills
/// process 1 once a few epochs are checkpointed, waits for process 0 to fail, restarts both, and
/// checks that they finish, from the last checkpoint, with the answer of one sequential pass.
fn kill_demo() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("synopses-kill-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let hosts = dir.join("hosts.txt");
    let port = || -> std::io::Result<u16> { Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()) };
    std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", port()?, port()?))?;
    let checkpoints = dir.join("checkpoints");
    let store = Checkpoints::open(&checkpoints)?;
    let start = |process: usize| -> std::io::Result<Child> {
        Command::new(std::env::current_exe()?)
            .args(["-n", "2", "-p", &process.to_string(), "-h"])
            .arg(&hosts)
            .args(["--items", "4000000", "--epoch", "100000", "--pause-ms", "40", "--checkpoints"])
            .arg(&checkpoints)
            // (The survivor's panic when its peer dies is expected; its backtrace is noise.)
            .env("RUST_BACKTRACE", "0")
            .spawn()
    };

    println!("Starting two processes, 20 epochs of 200 000 views each, a checkpoint after every epoch.");
    let mut first = [start(0)?, start(1)?];
    let deadline = Instant::now() + Duration::from_secs(120);
    while store.epochs()?.last().is_none_or(|&e| e < 5) {
        if Instant::now() > deadline || first[0].try_wait()?.is_some() {
            return Err("the processes ended before the kill".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    first[1].kill()?;
    let killed_at = store.epochs()?.last().copied().unwrap_or(0);
    println!("Killed process 1 (SIGKILL) with epochs 0..{killed_at} checkpointed.");
    let status = wait(&mut first[0], deadline)?;
    first[1].wait()?;
    println!("Process 0 failed, as it must without its peer ({status}). Restarting both.");

    let mut second = [start(0)?, start(1)?];
    let statuses = [wait(&mut second[0], deadline)?, wait(&mut second[1], deadline)?];
    if statuses.iter().any(|s| !s.success()) {
        return Err(format!("the restarted processes failed: {statuses:?}").into());
    }
    println!("Both finished from the checkpoint; process 0 checked its total against one sequential pass.");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// Waits for `child` until `deadline`, then kills it.
fn wait(child: &mut Child, deadline: Instant) -> Result<std::process::ExitStatus, Box<dyn Error>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() > deadline {
            child.kill()?;
            return Err("a process ran out of time".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
