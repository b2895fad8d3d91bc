//! Overload, and what load shedding does about it: a virtual-time simulation of a server that
//! handles 1000 items per second (1 ms each), hit by a burst at three times that rate.
//!
//! ```text
//! cargo run --release --example overload
//! ```
//!
//! Three runs of the same arrivals (seeded Poisson: 2 s at 500/s, 10 s at 3000/s, 3 s at
//! 500/s), a control step every 10 ms:
//!
//! * no shedding: every item is queued, and the queue grows by 2000 items a second;
//! * the Aurora headroom controller (keep the load under 90 % of capacity);
//! * a PI controller holding the queueing delay at 20 ms.
//!
//! For each: items offered and kept, the largest queue, and the latency (wait plus service)
//! percentiles; then the queue length over time.
//!
//! **Buffering, backpressure and shedding.** The same burst, met five ways: an unbounded
//! buffer; credit-based flow control (backpressure) from a durable source (a log that holds any
//! backlog), with credits that return at once and with credits 11 ms in flight; backpressure
//! from a sensor that holds 500 items and loses the rest; and shedding under the headroom
//! controller. For each: the most items in the operator and at the source, the throughput
//! during the burst, the latency, and the error of a running count query (the
//! Horvitz–Thompson count of the items served so far, against the items offered so far) at the
//! burst's end and at the run's end.
//!
//! Finally, a random shedder in front of a Horvitz–Thompson estimator shows that the sum of the
//! values offered during the burst is still estimated without bias from the few items kept.
//!
//! ```text
//! cargo run --release --example overload -- --csv notebooks/overload   # also writes CSV
//! ```

use std::error::Error;

use std::fmt::Write as _;
use synopses::core::Confidence;

use synopses::shedding::{
    Credits, FixedRate, Headroom, HorvitzThompson, LoadShedder, Phase, PiController, PiGains, RandomDrop, Report,
    Simulation,
};

/// Seconds of work per item: a capacity of 1000 items per second.
const COST: f64 = 0.001;
/// Seconds between control steps.
const TICK: f64 = 0.01;

fn row(name: &str, r: &Report) {
    println!(
        "{name:<22} {:>9} {:>9} {:>7.1} % {:>10} {:>10.1} {:>10.1} {:>10.1}",
        r.offered,
        r.kept,
        100.0 * r.kept as f64 / r.offered.max(1) as f64,
        r.max_queue,
        1e3 * r.latency_p50,
        1e3 * r.latency_p99,
        1e3 * r.latency_max,
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let csv = args.iter().position(|a| a == "--csv").and_then(|i| args.get(i + 1)).cloned();
    let phases = vec![
        Phase { duration: 2.0, rate: 500.0 },
        Phase { duration: 10.0, rate: 3000.0 },
        Phase { duration: 3.0, rate: 500.0 },
    ];
    let sim = Simulation::new(phases, COST, 2024)?.with_tick(TICK)?;
    let runs = [
        ("no shedding", sim.run(FixedRate::new(1.0)?)),
        ("headroom H = 0.9", sim.run(Headroom::new(0.9)?)),
        ("PI on delay, 20 ms", sim.run(PiController::new(0.02, PiGains { proportional: 0.3, integral: 5.0 })?)),
    ];

    println!("A server of 1000 items/s; a 10 s burst at 3000 items/s (seconds 2 to 12).");
    println!();
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "controller", "offered", "kept", "kept", "max queue", "p50 ms", "p99 ms", "max ms"
    );
    println!("{}", "─".repeat(95));
    for (name, report) in &runs {
        row(name, report);
    }
    println!();
    println!("Queue length (items in the system) over time, and the keep probability p:");
    print!("{:>6}", "t (s)");
    for (name, _) in &runs {
        print!(" {name:>22}");
    }
    println!();
    for step in (49..1500).step_by(100) {
        let t = runs[0].1.series.get(step).map_or(0.0, |s| s.time);
        print!("{t:>6.1}");
        for (_, report) in &runs {
            let s = report.series.get(step);
            let cell = s.map_or(String::new(), |s| format!("{} (p {:.2})", s.queue_len, s.keep_probability));
            print!(" {cell:>22}");
        }
        println!();
    }
    println!();
    println!("Without shedding every item is served, but a second after the burst starts they wait seconds, and the");
    println!(
        "backlog takes many more seconds to clear. The headroom controller keeps about 900 of every 3000 items a second"
    );
    println!(
        "and the queue stays small; the PI controller needs no model of costs and steers the delay to its target."
    );
    println!();

    // Buffering, backpressure and shedding: the same arrivals, five ways.
    let all = FixedRate::new(1.0)?;
    let durable = Credits { buffer: 64, delay: 0.0, source_buffer: None };
    let flows = [
        ("buffer (unbounded)", sim.run(all)),
        ("backpressure: log source", sim.clone().with_credits(durable)?.run(all)),
        (
            "backpressure: 11 ms credits",
            sim.clone().with_credits(Credits { buffer: 8, delay: 0.011, ..durable })?.run(all),
        ),
        (
            "backpressure: sensor of 500",
            sim.clone().with_credits(Credits { source_buffer: Some(500), ..durable })?.run(all),
        ),
        ("shedding: H = 0.9", sim.run(Headroom::new(0.9)?)),
    ];
    let at = |r: &Report, t: f64| r.series.iter().rfind(|s| s.time <= t + 1e-9).copied();
    println!("The same burst met by buffering, backpressure (credit-based flow control) and shedding:");
    println!();
    println!(
        "{:<28} {:>8} {:>7} {:>9} {:>9} {:>11} {:>9} {:>9} {:>12} {:>11}",
        "flow",
        "served",
        "lost",
        "max in op",
        "max at src",
        "burst out/s",
        "p99 ms",
        "max ms",
        "count @12 s",
        "count @15 s"
    );
    println!("{}", "─".repeat(126));
    let mut flows_csv = String::from(
        "flow,offered,served,lost,max_queue,max_upstream,burst_throughput,latency_p50,latency_p99,latency_max,\
         count_error_burst_end,count_error_end\n",
    );
    let mut series_csv =
        String::from("flow,time,queue_len,upstream_len,served_rate,offered_rate,keep_probability,count_error\n");
    for (name, r) in &flows {
        let burst = r.series.iter().filter(|s| s.time > 2.0 + 1e-9 && s.time <= 12.0 + 1e-9);
        let throughput = burst.map(|s| s.served_rate * TICK).sum::<f64>() / 10.0;
        let error = |t| at(r, t).map_or(0.0, |s| s.count_error());
        let (burst_end, end) = (error(12.0), error(15.0));
        println!(
            "{name:<28} {:>8} {:>7} {:>9} {:>9} {throughput:>11.0} {:>9.1} {:>9.1} {:>+11.1} % {:>+9.1} %",
            r.kept,
            r.lost,
            r.max_queue,
            r.max_upstream,
            1e3 * r.latency_p99,
            1e3 * r.latency_max,
            100.0 * burst_end,
            100.0 * end,
        );
        writeln!(
            flows_csv,
            "{name},{},{},{},{},{},{throughput},{},{},{},{burst_end},{end}",
            r.offered, r.kept, r.lost, r.max_queue, r.max_upstream, r.latency_p50, r.latency_p99, r.latency_max
        )?;
        // Every 50 ms: enough to draw.
        for s in r.series.iter().skip(4).step_by(5) {
            writeln!(
                series_csv,
                "{name},{:.2},{},{},{},{},{},{}",
                s.time,
                s.queue_len,
                s.upstream_len,
                s.served_rate,
                s.offered_rate,
                s.keep_probability,
                s.count_error()
            )?;
        }
    }
    println!();
    println!("Backpressure bounds the operator's memory (64 slots) and moves the backlog to the source: the latency");
    println!("and the answer are the unbounded buffer's, exact but late. Credits in flight for 11 ms leave 8 slots");
    println!("able to carry 8 / 12 ms = 667 items/s: the buffer must cover them. The sensor loses the burst's excess");
    println!("for good; shedding keeps every answer current, and unbiased within its sampling error.");
    println!();
    if let Some(dir) = &csv {
        std::fs::create_dir_all(dir)?;
        std::fs::write(format!("{dir}/flows.csv"), flows_csv)?;
        std::fs::write(format!("{dir}/flow_series.csv"), series_csv)?;
        println!("wrote {dir}/flows.csv and {dir}/flow_series.csv");
        println!();
    }

    // What the kept items still tell: the sum of 30 000 readings during the burst, from 10 %.
    let readings: Vec<f64> = (0..30_000_u64).map(|i| ((i * 7919) % 1000) as f64 / 10.0).collect();
    let truth: f64 = readings.iter().sum();
    let mut shedder = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(7), FixedRate::new(0.1)?);
    for &r in &readings {
        shedder.observe(r);
    }
    let sum = shedder.inner().sum();
    let bounds = sum.bounds(Confidence::NinetyFivePercent);
    println!(
        "Sum of the {} readings offered: {truth:.0}. From the {} kept (weight 1/p = 10 each): {:.0}, 95 % interval {:.0} to {:.0}.",
        readings.len(),
        shedder.stats().kept,
        sum.value,
        bounds.lower,
        bounds.upper,
    );
    if !bounds.contains(truth) {
        println!("(The interval missed the truth: at 95 %, one run in twenty does.)");
    }
    Ok(())
}
