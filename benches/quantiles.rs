//! Quantile sketches against their peers, on the same values: 10⁷ draws each from a uniform
//! (0, 1000), a log-normal (μ 0, σ 2) and a Pareto (shape 1.1) distribution.
//!
//! - `quantiles/add/<distribution>`: adding every value to a fresh sketch. Ours with each
//!   index mapping, against `sketches-ddsketch` (DataDog's algorithm; logarithmic mapping) at
//!   the same α = 1 % and 2048 buckets.
//! - `quantiles/quantile`: p50, p99 and p99.9 of a full sketch.
//! - `quantiles/merge`: merging the sketches of the two halves of a stream.
//! - `quantiles/bytes`: serializing and deserializing a full sketch (ours: the crate's format;
//!   the peer: its Java-compatible bytes).
//!
//! - `quantiles/kll_add/<distribution>`: the rank-error sketches. Our `Kll<f64>` at k = 200
//!   against `datasketches`' KLL at the same k (the goal: at least 1.5× faster), its
//!   REQ (k = 12, high ranks) and t-digest (k = 100), and the `tdigest` crate (100 centroids,
//!   fed in batches of 8192 values: its only way in, as an Arrow batch would).
//! - `quantiles/kll_quantile`, `quantiles/kll_merge`: p50, p99 and p99.9 of a full sketch,
//!   merging two halves, for ours and `datasketches`' KLL, REQ and t-digest.
//! - `quantiles/kll_bytes`: serializing and deserializing (ours: the crate's format; the peer:
//!   DataSketches' compact KLL image).
//!
//! Memory, serialized size and accuracy at equal memory are printed by
//! `cargo run --release -p synopses-benches --example quantile_peers`.

mod common;
use common::{DATA_SEED, big_group, small_group, splitmix64};
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use datasketches::common::SearchCriteria;
use datasketches::kll::{KllFloat, KllSketch};
use datasketches::req::{RankAccuracy, ReqFloat, ReqSketch};
use datasketches::tdigest::TDigestMut;
use sketches_ddsketch::{Config, DDSketch as PeerDDSketch};
use synopses::core::Mergeable;
use synopses::quantiles::{DDSketch, IndexMapping, Kll, Search};

const N: usize = 10_000_000;
const ALPHA: f64 = 0.01;
const BINS: u32 = 2048;

/// The three distributions' values, from one seeded generator.
fn data() -> &'static [(&'static str, Vec<f64>)] {
    static DATA: OnceLock<Vec<(&'static str, Vec<f64>)>> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut state = DATA_SEED;
        let mut uniform = move || ((splitmix64(&mut state) >> 11) as f64 + 0.5) / (1_u64 << 53) as f64;
        let mut draw = |f: &dyn Fn(f64, f64) -> f64| (0..N).map(|_| f(uniform(), uniform())).collect::<Vec<f64>>();
        vec![
            ("uniform", draw(&|u, _| u * 1000.0)),
            ("lognormal", draw(&|u, v| (2.0 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()).exp())),
            ("pareto", draw(&|u, _| u.powf(-1.0 / 1.1))),
        ]
    })
}

fn ours(mapping: IndexMapping) -> DDSketch {
    DDSketch::builder(ALPHA).mapping(mapping).max_bins(BINS).build().expect("valid")
}

fn peer() -> PeerDDSketch {
    PeerDDSketch::new(Config::new(ALPHA, BINS, 1e-9))
}

const MAPPINGS: [(&str, IndexMapping); 3] = [
    ("synopses_log", IndexMapping::Logarithmic),
    ("synopses_cubic", IndexMapping::CubicInterpolation),
    ("synopses_linear", IndexMapping::LinearInterpolation),
];

fn bench_add(c: &mut Criterion) {
    for (name, values) in data() {
        let mut g = big_group(c, &format!("quantiles/add/{name}"));
        g.throughput(Throughput::Elements(values.len() as u64));
        for (label, mapping) in MAPPINGS {
            g.bench_function(label, |b| {
                b.iter_batched(
                    || ours(mapping),
                    |mut s| {
                        values.iter().for_each(|&x| s.add(x).expect("finite"));
                        s
                    },
                    BatchSize::LargeInput,
                )
            });
        }
        g.bench_function("sketches_ddsketch", |b| {
            b.iter_batched(
                peer,
                |mut s| {
                    values.iter().for_each(|&x| s.add(x));
                    s
                },
                BatchSize::LargeInput,
            )
        });
        g.finish();
    }
}

fn bench_queries(c: &mut Criterion) {
    let (_, values) = &data()[1];
    let mut mine = ours(IndexMapping::Logarithmic);
    let mut theirs = peer();
    values.iter().for_each(|&x| {
        mine.add(x).expect("finite");
        theirs.add(x);
    });
    let mut g = small_group(c, "quantiles/quantile");
    for q in [0.5, 0.99, 0.999] {
        g.bench_function(BenchmarkId::new("synopses", q), |b| b.iter(|| black_box(&mine).quantile(q)));
        g.bench_function(BenchmarkId::new("sketches_ddsketch", q), |b| b.iter(|| black_box(&theirs).quantile(q)));
    }
    g.finish();

    let mut g = small_group(c, "quantiles/merge");
    let (left, right) = values.split_at(N / 2);
    let fill_ours = |v: &[f64]| {
        let mut s = ours(IndexMapping::Logarithmic);
        v.iter().for_each(|&x| s.add(x).expect("finite"));
        s
    };
    let fill_peer = |v: &[f64]| {
        let mut s = peer();
        v.iter().for_each(|&x| s.add(x));
        s
    };
    let (a, b2) = (fill_ours(left), fill_ours(right));
    g.bench_function("synopses", |b| {
        b.iter_batched(|| a.clone(), |mut m| m.merge(black_box(&b2)).map(|()| m), BatchSize::SmallInput)
    });
    let (pa, pb) = (fill_peer(left), fill_peer(right));
    g.bench_function("sketches_ddsketch", |b| {
        b.iter_batched(|| pa.clone(), |mut m| m.merge(black_box(&pb)).map(|()| m), BatchSize::SmallInput)
    });
    g.finish();

    let mut g = small_group(c, "quantiles/bytes");
    let bytes = mine.to_bytes();
    let java = theirs.to_java_bytes();
    g.bench_function("synopses/to_bytes", |b| b.iter(|| black_box(&mine).to_bytes()));
    g.bench_function("sketches_ddsketch/to_java_bytes", |b| b.iter(|| black_box(&theirs).to_java_bytes()));
    g.bench_function("synopses/from_bytes", |b| b.iter(|| DDSketch::from_bytes(black_box(&bytes)).expect("ours")));
    g.bench_function("sketches_ddsketch/from_java_bytes", |b| {
        b.iter(|| PeerDDSketch::from_java_bytes(black_box(&java)).expect("theirs"))
    });
    g.finish();
}

const K: u16 = 200;

fn kll_ours(values: &[f64]) -> Kll<f64> {
    let mut s = Kll::new(K, 1).expect("valid");
    values.iter().for_each(|&x| s.add(x).expect("ordered"));
    s
}

fn kll_peer(values: &[f64]) -> KllSketch<KllFloat<f64>> {
    let mut s = KllSketch::new(K).expect("valid");
    values.iter().for_each(|&x| s.update(KllFloat::<f64>::new(x).expect("not NaN")));
    s
}

fn bench_kll_add(c: &mut Criterion) {
    for (name, values) in data() {
        let mut g = big_group(c, &format!("quantiles/kll_add/{name}"));
        g.throughput(Throughput::Elements(values.len() as u64));
        g.bench_function("synopses_kll", |b| b.iter(|| kll_ours(black_box(values))));
        g.bench_function("datasketches_kll", |b| b.iter(|| kll_peer(black_box(values))));
        g.bench_function("datasketches_req", |b| b.iter(|| req_peer(black_box(values))));
        g.bench_function("datasketches_tdigest", |b| b.iter(|| tdigest_peer(black_box(values))));
        g.bench_function("tdigest", |b| {
            b.iter(|| {
                values
                    .chunks(8192)
                    .fold(tdigest::TDigest::new_with_size(100), |t, batch| t.merge_unsorted(batch.to_vec()))
            })
        });
        g.finish();
    }
}

fn req_peer(values: &[f64]) -> ReqSketch<ReqFloat<f64>> {
    let mut s = ReqSketch::new(12, RankAccuracy::HighRank).expect("valid");
    values.iter().for_each(|&x| s.update(ReqFloat::<f64>::new(x).expect("not NaN")));
    s
}

fn tdigest_peer(values: &[f64]) -> TDigestMut {
    let mut s = TDigestMut::new(100).expect("valid");
    values.iter().for_each(|&x| s.update(x));
    s
}

fn bench_kll_queries(c: &mut Criterion) {
    let (_, values) = &data()[1];
    let (mine, theirs) = (kll_ours(values), kll_peer(values));
    let (req, digest) = (req_peer(values), tdigest_peer(values).freeze());
    let mut g = small_group(c, "quantiles/kll_quantile");
    for q in [0.5, 0.99, 0.999] {
        g.bench_function(BenchmarkId::new("synopses_kll", q), |b| {
            b.iter(|| black_box(&mine).quantile(q, Search::Inclusive).map(|x| x.copied()))
        });
        g.bench_function(BenchmarkId::new("datasketches_kll", q), |b| {
            b.iter(|| black_box(&theirs).quantile(q, SearchCriteria::Inclusive))
        });
        g.bench_function(BenchmarkId::new("datasketches_req", q), |b| {
            b.iter(|| black_box(&req).quantile(q, SearchCriteria::Inclusive))
        });
        g.bench_function(BenchmarkId::new("datasketches_tdigest", q), |b| b.iter(|| black_box(&digest).quantile(q)));
    }
    g.finish();

    let mut g = small_group(c, "quantiles/kll_merge");
    let (left, right) = values.split_at(N / 2);
    let (a, b2) = (kll_ours(left), kll_ours(right));
    g.bench_function("synopses_kll", |b| {
        b.iter_batched(|| a.clone(), |mut m| m.merge(black_box(&b2)).map(|()| m), BatchSize::SmallInput)
    });
    let (pa, pb) = (kll_peer(left), kll_peer(right));
    g.bench_function("datasketches_kll", |b| {
        b.iter_batched(|| pa.clone(), |mut m| m.merge(black_box(&pb)).map(|()| m), BatchSize::SmallInput)
    });
    let (ra, rb) = (req_peer(left), req_peer(right));
    g.bench_function("datasketches_req", |b| {
        b.iter_batched(|| ra.clone(), |mut m| m.merge(black_box(&rb)).map(|()| m), BatchSize::SmallInput)
    });
    let (ta, tb) = (tdigest_peer(left), tdigest_peer(right));
    g.bench_function("datasketches_tdigest", |b| {
        b.iter_batched(
            || ta.clone(),
            |mut m| {
                m.merge(black_box(&tb));
                m
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();

    let mut g = small_group(c, "quantiles/kll_bytes");
    let (bytes, image) = (mine.to_bytes(), theirs.serialize());
    g.bench_function("synopses_kll/to_bytes", |b| b.iter(|| black_box(&mine).to_bytes()));
    g.bench_function("datasketches_kll/serialize", |b| b.iter(|| black_box(&theirs).serialize()));
    g.bench_function("synopses_kll/from_bytes", |b| {
        b.iter(|| Kll::<f64>::from_bytes(black_box(&bytes)).expect("ours"))
    });
    g.bench_function("datasketches_kll/deserialize", |b| {
        b.iter(|| KllSketch::<KllFloat<f64>>::deserialize(black_box(&image)).expect("theirs"))
    });
    g.finish();
}

criterion_group!(benches, bench_add, bench_queries, bench_kll_add, bench_kll_queries);
criterion_main!(benches);
