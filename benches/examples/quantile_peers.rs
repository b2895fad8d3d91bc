//! DDSketch against `sketches-ddsketch` at the same relative accuracy, then KLL against
//! `datasketches`' KLL, REQ and t-digest and the `tdigest` crate: memory, serialized size,
//! and the error of p50, p99 and p99.9, on 10⁷ (or `N`) values from a uniform, a log-normal
//! and a Pareto distribution.
//!
//! ```text
//! cargo run --release -p synopses-benches --example quantile_peers [N]
//! ```
//!
//! The relative error printed is `|answer − truth| / truth`, the truth being the value of rank
//! `⌊q·(n − 1)⌋`; both sketches promise at most α = 1 %. For the rank-error sketches the
//! error printed is in rank, `|R(answer) − q|` with `R` the true fraction of values `≤` the
//! answer (KLL promises 1.33 % at k = 200, 99 % confidence), and in value beside it: the
//! root-mean-square over 40 sketches of each randomized kind.

use datasketches::kll::{KllFloat, KllSketch};
use datasketches::req::{RankAccuracy, ReqFloat, ReqSketch};
use datasketches::tdigest::TDigestMut;
use sketches_ddsketch::{Config, DDSketch as PeerDDSketch};
use synopses::core::Mergeable;
use synopses::quantiles::{DDSketch, IndexMapping, Kll, Search};

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
    rank_sketches(&streams);
}

/// Trials of each randomized sketch (ours on seeds 1 to `TRIALS`; DataSketches' draw their
/// own): one trial's error is mostly its top compactions' luck, shared by every quantile.
const TRIALS: usize = 40;

/// The rank-error sketches: items (or centroids) kept, bytes in memory where the crate says
/// (ours), serialized bytes, and the root-mean-square rank and value errors of p50, p99 and
/// p99.9 over `TRIALS` sketches (one for the deterministic t-digests).
fn rank_sketches(streams: &[(&str, Vec<f64>)]) {
    println!();
    println!("rank-error sketches: RMS rank error (RMS value error) of each quantile over {TRIALS} trials");
    println!(
        "{:<10} {:<22} {:>7} {:>8} {:>8} {:>18} {:>18} {:>18}",
        "stream", "sketch", "kept", "memory", "bytes", "p50", "p99", "p99.9"
    );
    const QS: [f64; 3] = [0.5, 0.99, 0.999];
    for (name, values) in streams {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        // Each trial's answers to QS, then the root-mean-square errors as text.
        let report = |answers: &[[f64; 3]]| -> Vec<String> {
            (0..3)
                .map(|i| {
                    let q = QS[i];
                    let truth = sorted[(q * (n - 1.0)).floor() as usize];
                    let (mut rank, mut value) = (0.0, 0.0);
                    for a in answers {
                        rank += (sorted.partition_point(|&x| x <= a[i]) as f64 / n - q).powi(2);
                        value += ((a[i] - truth) / truth).powi(2);
                    }
                    let t = answers.len() as f64;
                    format!("{:.3}% ({:.2}%)", 100.0 * (rank / t).sqrt(), 100.0 * (value / t).sqrt())
                })
                .collect()
        };
        let row = |label: &str, kept: usize, memory: String, bytes: usize, answers: &[[f64; 3]]| {
            let r = report(answers);
            println!("{name:<10} {label:<22} {kept:>7} {memory:>8} {bytes:>8} {:>18} {:>18} {:>18}", r[0], r[1], r[2]);
        };
        for k in [200_u16, 800] {
            let (mut answers, mut last) = (Vec::new(), None);
            for seed in 1..=TRIALS as u64 {
                let mut s = Kll::new(k, seed).expect("valid");
                values.iter().for_each(|&x| s.add(x).expect("ordered"));
                let view = s.sorted_view();
                answers.push(QS.map(|q| *view.quantile(q, Search::Inclusive).expect("q").expect("not empty")));
                last = Some(s);
            }
            let s = last.expect("a trial");
            row(
                &format!("synopses kll {k}"),
                s.retained(),
                s.size_in_bytes().to_string(),
                s.to_bytes().len(),
                &answers,
            );
            let (mut answers, mut last) = (Vec::new(), None);
            for _ in 0..TRIALS {
                let mut p = KllSketch::new(k).expect("valid");
                values.iter().for_each(|&x| p.update(KllFloat::<f64>::new(x).expect("not NaN")));
                let view = p.sorted_view();
                let criteria = datasketches::common::SearchCriteria::Inclusive;
                answers.push(QS.map(|q| *view.quantile(q, criteria).expect("q").expect("not empty")));
                last = Some(p);
            }
            let p = last.expect("a trial");
            row(&format!("datasketches kll {k}"), p.num_retained(), "-".into(), p.serialize().len(), &answers);
        }
        // REQ at two sizes (the smaller about KLL 200's memory), the t-digest at two (the
        // larger about its serialized size).
        for req_k in [4_u16, 12] {
            let (mut answers, mut last) = (Vec::new(), None);
            for _ in 0..TRIALS {
                let mut req = ReqSketch::new(req_k, RankAccuracy::HighRank).expect("valid");
                values.iter().for_each(|&x| req.update(ReqFloat::<f64>::new(x).expect("not NaN")));
                let criteria = datasketches::common::SearchCriteria::Inclusive;
                answers.push(QS.map(|q| *req.quantile(q, criteria).expect("q").expect("not empty")));
                last = Some(req);
            }
            let req = last.expect("a trial");
            row(
                &format!("datasketches req {req_k}"),
                req.num_retained() as usize,
                "-".into(),
                req.serialize().len(),
                &answers,
            );
        }
        for size in [100_u16, 200] {
            let mut td = TDigestMut::new(size).expect("valid");
            values.iter().for_each(|&x| td.update(x));
            let answers = [QS.map(|q| td.quantile(q).expect("q").expect("not empty"))];
            row(&format!("datasketches tdigest {size}"), 0, "-".into(), td.serialize().len(), &answers);
        }
        let t = values.chunks(8192).fold(tdigest::TDigest::new_with_size(100), |t, b| t.merge_unsorted(b.to_vec()));
        row("tdigest crate 100", 0, "-".into(), 0, &[QS.map(|q| t.estimate_quantile(q))]);
    }
}
