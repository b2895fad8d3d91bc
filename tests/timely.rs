//! The partitioned synopses on timely dataflow (feature `timely`): two worker threads in one
//! process, and two processes talking over 127.0.0.1, each give exactly the sketch of one
//! sequential pass.
//!
//! The two-process test starts this test binary twice more, running only
//! `timely_process_child`, which does nothing unless the environment names its role.
#![cfg(feature = "timely")]

use std::error::Error;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use synopses::cardinality::HyperLogLog;
use synopses::stream::PartialKeyGrouping;
use synopses::stream::timely::partitioned;

const ITEMS: u64 = 200_000;
const PRECISION: u8 = 12;

/// Worker `index` of `peers` reads every `peers`-th item of the input, starting at `index`.
fn run(config: timely::Config) -> Result<Option<HyperLogLog>, Box<dyn Error>> {
    let results = timely::execute(config, |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let items = (index..ITEMS).step_by(peers as usize).map(|i| i % (ITEMS / 2));
        let proto = HyperLogLog::new(PRECISION).expect("valid precision");
        let partitioner = PartialKeyGrouping::new(worker.peers()).expect("at least one worker");
        partitioned(worker, &proto, partitioner, items)
    })?
    .join();
    let mut merged = None;
    for result in results {
        merged = merged.or(result??);
    }
    Ok(merged)
}

fn sequential() -> Result<HyperLogLog, Box<dyn Error>> {
    let mut hll = HyperLogLog::new(PRECISION)?;
    (0..ITEMS).for_each(|i| hll.observe(i % (ITEMS / 2)));
    Ok(hll)
}

/// The sketch without its history: a self-merge keeps every register and ends the martingale
/// of one stream, which a merge of two non-empty parts cannot keep.
fn without_history(hll: &HyperLogLog) -> Result<HyperLogLog, Box<dyn Error>> {
    let mut out = hll.clone();
    out.merge(hll)?;
    Ok(out)
}

#[test]
fn two_worker_threads_equal_one_pass() -> Result<(), Box<dyn Error>> {
    let two = run(timely::Config::process(2))?.ok_or("no result")?;
    assert_eq!(without_history(&two)?, without_history(&sequential()?)?);
    // One worker merges its one part into the empty sketch, which keeps everything.
    assert_eq!(run(timely::Config::thread())?, Some(sequential()?));
    Ok(())
}

/// A port that was free a moment ago (the child binds it soon after; a clash fails the test
/// with a clear error rather than hanging, thanks to the time limit).
fn free_port() -> Result<u16, Box<dyn Error>> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits for `child` at most until `deadline`, killing it then.
fn wait(mut child: Child, deadline: Instant) -> Result<bool, Box<dyn Error>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.success());
        }
        if Instant::now() > deadline {
            child.kill()?;
            child.wait()?;
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_processes_equal_one_pass() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("synopses-timely-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let hosts = dir.join("hosts.txt");
    std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port()?, free_port()?))?;
    let out = dir.join("merged.bin");
    let _ = std::fs::remove_file(&out);
    let exe = std::env::current_exe()?;
    let children: Vec<Child> = (0..2)
        .map(|process| {
            Command::new(&exe)
                .args(["--exact", "timely_process_child", "--nocapture", "--test-threads", "1"])
                .env("SYNOPSES_TIMELY_PROCESS", process.to_string())
                .env("SYNOPSES_TIMELY_HOSTS", &hosts)
                .env("SYNOPSES_TIMELY_OUT", &out)
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut ok = true;
    for child in children {
        ok &= wait(child, deadline)?;
    }
    assert!(ok, "a timely process failed or ran out of time");
    let merged = HyperLogLog::from_bytes(&std::fs::read(&out)?)?;
    assert_eq!(without_history(&merged)?, without_history(&sequential()?)?);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// One process of `two_processes_equal_one_pass`; a no-op unless the environment says which.
#[test]
fn timely_process_child() -> Result<(), Box<dyn Error>> {
    let (Ok(process), Ok(hosts), Ok(out)) = (
        std::env::var("SYNOPSES_TIMELY_PROCESS"),
        std::env::var("SYNOPSES_TIMELY_HOSTS"),
        std::env::var("SYNOPSES_TIMELY_OUT"),
    ) else {
        return Ok(());
    };
    let args = ["-n", "2", "-p", process.as_str(), "-h", hosts.as_str()].map(String::from);
    let config = timely::Config::from_args(args.into_iter())?;
    if let Some(merged) = run(config)? {
        std::fs::write(PathBuf::from(out), merged.to_bytes())?;
    }
    Ok(())
}
