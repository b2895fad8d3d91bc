//! DDSketch against `sketches-ddsketch` at the same relative accuracy: memory, serialized size,
//! and the error of p50, p99 and p99.9, on 10⁷ (or `N`) values from a uniform, a log-normal
//! and a Pareto distribution.
//!
//! ```text
//! cargo run --release -p synopses-benches --example quantile_peers [N]
//! ```
//!
//! The relative error printed is `|answer − truth| / truth`, the truth being the value of rank
//! `⌊q·(n − 1)⌋`; both sketches promise at most α = 1 %.

use sketches_ddsketch::{Config, DDSketch as PeerDDSketch};
use synopses::core::Mergeable;
use synopses::quantiles::{DDSketch, IndexMapping};

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let mut state = 0x0123_4567_89AB_CDEF_u64;
    let mut uniform = move || ((splitmix64(&mut state) >> 11) as f64 + 0.5) / (1_u64 << 53) as f64;
    let mut draw = |f: &dyn Fn(f64, f64) -> f64| (0..n).map(|_| f(uniform(), uniform())).collect::<Vec<f64>>();
    let streams = [
        ("uniform", draw(&|u, _| u * 1000.0)),
        ("lognormal", draw(&|u, v| (2.0 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()).exp())),
        ("pareto", draw(&|u, _| u.powf(-1.0 / 1.1))),
    ];
    println!("{n} values a stream, α = 1 %, 2048 buckets a store");
    println!(
        "{:<10} {:<18} {:>8} {:>10} {:>10} {:>10} {:>10}",
        "stream", "sketch", "buckets", "bytes", "p50 err", "p99 err", "p99.9 err"
    );
    for (name, values) in &streams {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let truth = |q: f64| sorted[(q * (sorted.len() - 1) as f64).floor() as usize];
        let error = |q: f64, answer: f64| (answer - truth(q)).abs() / truth(q);
        for (label, mapping) in [
            ("synopses log", IndexMapping::Logarithmic),
            ("synopses cubic", IndexMapping::CubicInterpolation),
            ("synopses linear", IndexMapping::LinearInterpolation),
        ] {
            let mut s = DDSketch::builder(0.01).mapping(mapping).build().expect("valid");
            values.iter().for_each(|&x| s.add(x).expect("finite"));
            let q = |q: f64| error(q, s.quantile(q).expect("q").expect("not empty"));
            println!(
                "{name:<10} {label:<18} {:>8} {:>10} {:>9.4}% {:>9.4}% {:>9.4}%",
                s.buckets(),
                s.to_bytes().len(),
                100.0 * q(0.5),
                100.0 * q(0.99),
                100.0 * q(0.999)
            );
            let _ = s.size_in_bytes();
        }
        let mut p = PeerDDSketch::new(Config::new(0.01, 2048, 1e-9));
        values.iter().for_each(|&x| p.add(x));
        let q = |q: f64| error(q, p.quantile(q).expect("q").expect("not empty"));
        println!(
            "{name:<10} {:<18} {:>8} {:>10} {:>9.4}% {:>9.4}% {:>9.4}%",
            "sketches-ddsketch",
            p.length(),
            p.to_java_bytes().len(),
            100.0 * q(0.5),
            100.0 * q(0.99),
            100.0 * q(0.999)
        );
    }
}
