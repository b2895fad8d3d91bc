//! Aurora load shedding over a query network: where to drop, and how much, so that the load
//! `Load(N(I))` stays under the headroom `H·C`.
//!
//! The network (one core, `C` = 1 second of work per second, headroom `H` = 0.9) watches a
//! stream of packets. A shared `parse` box (0.1 ms a packet) feeds three queries:
//!
//! ```text
//!                  ┌─▶ bytes per host     0.2 ms, s = 1                      ─▶ Q1 (utility 1)
//!   packets ─▶ parse ─▶ suspicious ports  0.05 ms, s = 0.2 ─▶ scan matcher 2 ms, s = 0.01 ─▶ Q2 (utility 2)
//!  (rate λ)  0.1 ms └─▶ top talkers       0.4 ms, s = 1                      ─▶ Q3 (utility 1)
//! ```
//!
//! so `Load(N(I)) = λ·(0.1 + 0.2 + 0.05 + 0.2·2 + 0.4) ms = λ·1.15 ms`, over `H·C` from
//! λ ≈ 783 packets a second. Two plans bring it back to `H·C`:
//!
//! * **one operator** (the crate's [`Headroom`](synopses::shedding::Headroom) controller in
//!   front of the whole network): drop the same fraction of the packets at the input;
//! * **Aurora** ([`QueryNetwork::plan`]): drops on the first arc of each branch, the one with the
//!   least utility lost per second of work saved deepened first.
//!
//! The sweep prints, for input rates up to 4000 packets a second, the load, each plan's drops
//! and the share of the queries' utility it keeps. Then both plans run on 2000 packets a second,
//! with seeded random drops and filters: the work done per second is measured against `H·C`,
//! and each query's Horvitz–Thompson count (each output weighted by `1 / Π keep` along its
//! path) against the exact count of the same packets, with the error the theory predicts,
//! `√((1 − k)/(k·n))` for `n` outputs kept with probability `k`.
//!
//! ```text
//! cargo run --release --example aurora
//! cargo run --release --example aurora -- --csv notebooks/overload   # also writes CSV
//! ```

use std::error::Error;
use std::fmt::Write as _;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use synopses::shedding::{DropPlan, MIN_KEEP_PROBABILITY, Node, QueryNetwork};

const CAPACITY: f64 = 1.0;
const HEADROOM: f64 = 0.9;

/// The network of the module docs, and its nodes.
struct Network {
    net: QueryNetwork,
    parse: Node,
    hosts: Node,
    ports: Node,
    talkers: Node,
}

/// The boxes' costs (seconds) and selectivities, and the queries' utilities.
const PARSE: (f64, f64) = (0.0001, 1.0);
const HOSTS: (f64, f64) = (0.0002, 1.0);
const PORTS: (f64, f64) = (0.00005, 0.2);
const MATCHER: (f64, f64) = (0.002, 0.01);
const TALKERS: (f64, f64) = (0.0004, 1.0);
const UTILITY: [f64; 3] = [1.0, 2.0, 1.0];
const QUERIES: [&str; 3] = ["Q1 bytes per host", "Q2 port scans", "Q3 top talkers"];

fn network() -> Result<Network, Box<dyn Error>> {
    let mut net = QueryNetwork::new();
    let packets = net.input();
    let parse = net.add_box(packets, PARSE.0, PARSE.1)?;
    let hosts = net.add_box(parse, HOSTS.0, HOSTS.1)?;
    let ports = net.add_box(parse, PORTS.0, PORTS.1)?;
    let matcher = net.add_box(ports, MATCHER.0, MATCHER.1)?;
    let talkers = net.add_box(parse, TALKERS.0, TALKERS.1)?;
    net.output(hosts, UTILITY[0])?;
    net.output(matcher, UTILITY[1])?;
    net.output(talkers, UTILITY[2])?;
    Ok(Network { net, parse, hosts, ports, talkers })
}

/// One run of `seconds` at `rate` packets a second under `plan`: the work done per second, and
/// per query the Horvitz–Thompson count of its outputs and the exact count.
fn run(n: &Network, plan: &DropPlan, rate: f64, seconds: f64, seed: u64) -> (f64, [(f64, u64); 3]) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let keep = |node| plan.keep(node);
    let (k_parse, k_hosts, k_ports, k_talkers) = (keep(n.parse), keep(n.hosts), keep(n.ports), keep(n.talkers));
    let mut work = 0.0;
    let mut answers = [(0.0, 0_u64); 3];
    let packets = (rate * seconds) as u64;
    for _ in 0..packets {
        // What the packet is (decided before any drop, so the exact answers are those of the
        // same packets): suspicious, and then a scan.
        let suspicious = rng.random::<f64>() < PORTS.1;
        let scan = suspicious && rng.random::<f64>() < MATCHER.1;
        let draws: [f64; 4] = rng.random();
        answers[0].1 += 1;
        answers[1].1 += u64::from(scan);
        answers[2].1 += 1;
        if draws[0] >= k_parse {
            continue;
        }
        work += PARSE.0;
        if draws[1] < k_hosts {
            work += HOSTS.0;
            answers[0].0 += 1.0 / (k_parse * k_hosts);
        }
        if draws[2] < k_ports {
            work += PORTS.0;
            if suspicious {
                work += MATCHER.0;
                if scan {
                    answers[1].0 += 1.0 / (k_parse * k_ports);
                }
            }
        }
        if draws[3] < k_talkers {
            work += TALKERS.0;
            answers[2].0 += 1.0 / (k_parse * k_talkers);
        }
    }
    (work / seconds, answers)
}

/// A keep fraction for the tables: the least one a plan sets shows as such.
fn shown(keep: f64) -> String {
    if keep <= MIN_KEEP_PROBABILITY { "1e-4".into() } else { format!("{keep:.3}") }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let csv = args.iter().position(|a| a == "--csv").and_then(|i| args.get(i + 1)).cloned();
    let n = network()?;
    let target = HEADROOM * CAPACITY;

    println!("Load(N(I)) of the packet network against H·C = {target} s/s; drops as keep fractions.");
    println!();
    println!(
        "{:>6} {:>6} │ {:>9} {:>8} │ {:>6} {:>6} {:>6} {:>6} {:>8}",
        "λ /s", "load", "one op: k", "utility", "parse", "Q1", "Q2", "Q3", "utility"
    );
    println!("{:>6} {:>6} │ {:>18} │ {:>37}", "", "", "(drop at input)", "Aurora (first arc of each branch)");
    let mut sweep = String::from(
        "rate,load,target,inputs_keep,inputs_utility,inputs_load,aurora_keep_parse,aurora_keep_q1,\
         aurora_keep_q2,aurora_keep_q3,aurora_utility,aurora_load\n",
    );
    for step in 1..=40 {
        let rate = 100.0 * f64::from(step);
        let load = n.net.load(&[rate])?;
        let uniform = n.net.plan_at_inputs(&[rate], CAPACITY, HEADROOM)?;
        let aurora = n.net.plan(&[rate], CAPACITY, HEADROOM)?;
        let keeps = [n.parse, n.hosts, n.ports, n.talkers].map(|node| aurora.keep(node));
        let (u_uniform, u_aurora) = (n.net.utility_kept(&uniform)?, n.net.utility_kept(&aurora)?);
        if step % 4 == 0 || step == 7 || step == 9 {
            println!(
                "{rate:>6.0} {load:>6.2} │ {:>9} {:>7.1}% │ {:>6} {:>6} {:>6} {:>6} {:>7.1}%",
                shown(uniform.keep(n.parse)),
                100.0 * u_uniform,
                shown(keeps[0]),
                shown(keeps[1]),
                shown(keeps[2]),
                shown(keeps[3]),
                100.0 * u_aurora
            );
        }
        writeln!(
            sweep,
            "{rate},{load},{target},{},{u_uniform},{},{},{},{},{},{u_aurora},{}",
            uniform.keep(n.parse),
            n.net.load_with(&[rate], &uniform)?,
            keeps[0],
            keeps[1],
            keeps[2],
            keeps[3],
            n.net.load_with(&[rate], &aurora)?
        )?;
    }
    println!();
    println!("Both plans bring the load to H·C. The one-operator plan thins every query alike. Aurora first thins");
    println!("Q3, the most work per unit of utility (0.4 ms for 1), down to the least keep fraction (1e-4): with a");
    println!("loss linear in the fraction dropped, giving up the query of least utility per second of work first is");
    println!("the optimum. Only then does it drop at the input, and it spares Q1 and Q2 their own drops. Concave");
    println!("QoS graphs would spread the drops.");
    println!();

    // Both plans run: measured work, and each query's count against the truth.
    const RATE: f64 = 2000.0;
    const SECONDS: f64 = 10.0;
    const TRIALS: u64 = 1000;
    println!(
        "At λ = {RATE} packets/s ({:.2} s/s offered), {TRIALS} runs of {SECONDS} s: work done, and each query's count.",
        n.net.load(&[RATE])?
    );
    println!(
        "{:<8} {:>10} │ {:<18} {:>7} {:>9} {:>17} {:>9} {:>9}",
        "plan", "work s/s", "query", "keep", "exact", "bias ± its SE", "rel. RMSE", "theory"
    );
    let mut queries = String::from("plan,trials,work,query,keep,exact_mean,bias,rmse,theory\n");
    let plans = [
        ("one op", n.net.plan_at_inputs(&[RATE], CAPACITY, HEADROOM)?),
        ("Aurora", n.net.plan(&[RATE], CAPACITY, HEADROOM)?),
    ];
    for (name, plan) in &plans {
        let mut work = 0.0;
        let mut sums = [(0.0, 0.0, 0.0); 3]; // per query: Σ relative error, Σ squared, Σ exact
        for t in 0..TRIALS {
            let (w, answers) = run(&n, plan, RATE, SECONDS, 0xA17 + t);
            work += w / TRIALS as f64;
            for (s, (estimate, exact)) in sums.iter_mut().zip(answers) {
                let e = estimate / exact.max(1) as f64 - 1.0;
                *s = (s.0 + e, s.1 + e * e, s.2 + exact as f64);
            }
        }
        let path_keeps = [
            plan.keep(n.parse) * plan.keep(n.hosts),
            plan.keep(n.parse) * plan.keep(n.ports),
            plan.keep(n.parse) * plan.keep(n.talkers),
        ];
        for (q, ((bias, squares, exact), k)) in sums.iter().zip(path_keeps).enumerate() {
            let (bias, rmse, exact) = (bias / TRIALS as f64, (squares / TRIALS as f64).sqrt(), exact / TRIALS as f64);
            let theory = ((1.0 - k) / (k * exact)).sqrt();
            println!(
                "{:<8} {:>10} │ {:<18} {:>7} {exact:>9.0} {:>+8.2}% ± {:>5.2}% {:>8.2}% {:>8.2}%",
                if q == 0 { *name } else { "" },
                if q == 0 { format!("{work:.3}") } else { String::new() },
                QUERIES[q],
                shown(k),
                100.0 * bias,
                100.0 * rmse / (TRIALS as f64).sqrt(),
                100.0 * rmse,
                100.0 * theory
            );
            writeln!(queries, "{name},{TRIALS},{work},{},{k},{exact},{bias},{rmse},{theory}", QUERIES[q])?;
        }
    }
    println!();
    println!("The work done is H·C = {target} s/s within the randomness of the drops and filters, and every count is");
    println!("unbiased, its error the sampling error √((1 − k)/(k·n)) of what its path keeps.");

    if let Some(dir) = csv {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(format!("{dir}/aurora_sweep.csv"), sweep)?;
        std::fs::write(format!("{dir}/aurora_queries.csv"), queries)?;
        println!("wrote {dir}/aurora_sweep.csv and {dir}/aurora_queries.csv");
    }
    Ok(())
}
