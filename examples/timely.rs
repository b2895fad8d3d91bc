//! Counting distinct items over timely dataflow workers: threads, processes or machines.
//!
//! ```text
//! cargo run --release --features timely --example timely -- -w 4          # 4 threads
//! # two processes (on two machines, put their addresses in hosts.txt):
//! printf '127.0.0.1:2101\n127.0.0.1:2102\n' > hosts.txt
//! cargo run --release --features timely --example timely -- -n 2 -p 0 -h hosts.txt &
//! cargo run --release --features timely --example timely -- -n 2 -p 1 -h hosts.txt
//! ```
//!
//! Every worker reads its own share of a stream of 10^6 page views by 300 000 users (worker
//! `i` of `n` reads views `i, i + n, i + 2n, ...`), routes each view to a worker by partial
//! key grouping over the user id, where a HyperLogLog counts it; at the end every worker's
//! sketch travels to worker 0 as bytes and is merged. Worker 0 prints the estimate and checks
//! that the merged sketch holds exactly the registers a single pass over the whole stream
//! builds (not its martingale, a record of one stream that a merge of parts cannot keep).

use std::error::Error;

use synopses::cardinality::HyperLogLog;
use synopses::stream::PartialKeyGrouping;
use synopses::stream::timely::partitioned;

const VIEWS: u64 = 1_000_000;
const USERS: u64 = 300_000;

/// The user of view `v`: a fixed scramble of the view number, so every run sees one stream.
fn user(view: u64) -> u64 {
    view.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) % USERS
}

fn main() -> Result<(), Box<dyn Error>> {
    let started = std::time::Instant::now();
    let results = timely::execute_from_args(std::env::args(), |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let views = (index as u64..VIEWS).step_by(peers).map(user);
        let proto = HyperLogLog::new(14).expect("valid precision");
        let partitioner = PartialKeyGrouping::new(peers).expect("at least one worker");
        partitioned(worker, &proto, partitioner, views).map(|merged| (peers, merged))
    })?
    .join();
    for result in results {
        let (peers, merged) = result??;
        let Some(merged) = merged else { continue };
        let mut single = HyperLogLog::new(14)?;
        (0..VIEWS).for_each(|v| single.observe(user(v)));
        let exact = (0..VIEWS).map(user).collect::<std::collections::HashSet<_>>().len();
        println!("{peers} timely workers, {VIEWS} views, partial key grouping over the user id.");
        println!(
            "Distinct users: {:.0} estimated ({} exactly), ±{:.2} % at one σ; {} bytes per shipped sketch.",
            merged.estimate(),
            exact,
            100.0 * merged.relative_standard_error(),
            merged.to_bytes().len(),
        );
        // A self-merge keeps every register and ends the martingale, which `==` compares.
        let registers = |s: &HyperLogLog| -> Result<HyperLogLog, synopses::MergeError> {
            let mut out = s.clone();
            out.merge(s)?;
            Ok(out)
        };
        let same = registers(&merged)? == registers(&single)?;
        println!(
            "Merged registers identical to one sequential pass: {same} ({:.0} ms).",
            started.elapsed().as_secs_f64() * 1e3
        );
        if !same {
            return Err("the merged sketch differs from the sequential one".into());
        }
    }
    Ok(())
}
