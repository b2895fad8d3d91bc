//! Cardinality sketches: `synopses` against peer crates.
//!
//! Run with `cargo bench --all-features --bench cardinality` (the `rayon` feature adds the
//! parallel group). Every benchmark id reads `family/operation/config/implementation`, e.g.
//! `hll/observe_u64/p12/synopses`.
//!
//! Timing model:
//! - `observe_*`: one iteration inserts all `N` items into a fresh sketch. The empty sketch is
//!   made by `iter_batched`'s setup (`BatchSize::LargeInput`), outside the timing; the filled
//!   sketch is returned and dropped outside the timing too. Throughput is `N` elements, so
//!   criterion's `thrpt` line gives items per second; time / `N` is ns per item.
//! - `estimate`: one call on a sketch that has seen all `N` items.
//! - `merge`: merge a sketch of 500k items into a clone (made in setup, untimed) of another
//!   sketch of 500k different items.
//! - `to_bytes` / `from_bytes`: one serialization / validated deserialization of the full sketch.
//!
//! Peers, each used the way its documentation shows (so each with its own hasher):
//! - `datasketches` 0.6 `HllSketch` (`Hll4`, `Hll8`) and `CpcSketch`: MurmurHash3 x64/128 (seed
//!   9001) through `std::hash::Hash`; merge through `HllUnion` / `CpcUnion`.
//! - `hyperloglogplus` 0.4 `HyperLogLogPlus` with `std`'s `RandomState` (SipHash-1-3).
//! - `cardinality-estimator` 1.0 `CardinalityEstimator<T, WyHash, P, 6>` (wyhash).
//! - `streaming_algorithms` 0.3 `HyperLogLog` (streaming `Xxh3` hasher, seed 0), `save`/`load`
//!   (bincode) with its `serde` feature.
//! - `xxh3_floor`: no sketch, only `xxh3_64_with_seed` over the same bytes `synopses` hashes,
//!   xor-folded into an accumulator: the cost of the hash alone.

mod common;
use common::{DATA_SEED, big_group, merge_case, small_group, splitmix64};
use std::collections::hash_map::RandomState;
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use cardinality_estimator::CardinalityEstimator;
use datasketches::cpc::{CpcSketch, CpcUnion};
use datasketches::hll::{HllSketch, HllType, HllUnion};
use hyperloglogplus::{HyperLogLog as _, HyperLogLogPlus};
use streaming_algorithms::HyperLogLog as SaHyperLogLog;
use synopses::cardinality::{FlajoletMartin, HyperLogLog};
use synopses::hash::DEFAULT_SEED;
use wyhash::WyHash;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Items per observe iteration, and items seen by the sketches of `estimate` and `bytes`.
const N: usize = 1_000_000;
/// Items of the parallel group.
const N_PAR: usize = 10_000_000;
/// Precisions of the observe and estimate groups.
const PRECISIONS: [u8; 2] = [12, 14];
/// Precision of the merge and serialization groups.
const P_BIG: u8 = 14;

fn gen_u64s(n: usize) -> Vec<u64> {
    let mut state = DATA_SEED;
    (0..n).map(|_| splitmix64(&mut state)).collect()
}

struct Data {
    u64s: Vec<u64>,
    strs: Vec<String>,
}

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let u64s = gen_u64s(N);
        let strs = u64s.iter().map(|x| format!("user-{x:016x}")).collect();
        Data { u64s, strs }
    })
}

fn id(config: impl std::fmt::Display, name: &str) -> BenchmarkId {
    BenchmarkId::new(config.to_string(), name)
}

/// Times inserting every item of `items` into a fresh sketch from `make`.
fn observe_case<T, S>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    p: u8,
    name: &str,
    items: &[T],
    make: impl Fn() -> S,
    push: impl Fn(&mut S, &T),
) {
    g.bench_function(id(format_args!("p{p}"), name), |b| {
        b.iter_batched(
            &make,
            |mut s| {
                for x in items {
                    push(&mut s, x);
                }
                s
            },
            BatchSize::LargeInput,
        );
    });
}

/// Times observing every item of `items` into a fresh sketch from `make` through a batch
/// entry point (`observe_all`), against the per-item loop of [`observe_case`].
fn observe_all_case<T, S>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    p: u8,
    name: &str,
    items: &[T],
    make: impl Fn() -> S,
    all: impl Fn(&mut S, &[T]),
) {
    g.bench_function(id(format_args!("p{p}"), name), |b| {
        b.iter_batched(
            &make,
            |mut s| {
                all(&mut s, items);
                s
            },
            BatchSize::LargeInput,
        );
    });
}

fn synopses_hll(p: u8) -> HyperLogLog {
    HyperLogLog::new(p).expect("precision in range")
}

fn ds_hll(p: u8, t: HllType) -> HllSketch {
    HllSketch::new(p, t).expect("lg_k in range")
}

fn ds_cpc(p: u8) -> CpcSketch {
    CpcSketch::new(p).expect("lg_k in range")
}

fn hllpp<T: std::hash::Hash + ?Sized>(p: u8) -> HyperLogLogPlus<T, RandomState> {
    HyperLogLogPlus::new(p, RandomState::new()).expect("precision in range")
}

/// `CardinalityEstimator` takes its precision as a const generic, so each precision is a type.
type Ce<T, const P: usize> = CardinalityEstimator<T, WyHash, P, 6>;

fn bench_observe_u64(c: &mut Criterion) {
    let items = &data().u64s[..];
    let mut g = big_group(c, "hll/observe_u64");
    g.throughput(Throughput::Elements(items.len() as u64));
    for p in PRECISIONS {
        observe_case(
            &mut g,
            p,
            "xxh3_floor",
            items,
            || 0u64,
            |acc, x| {
                *acc ^= xxh3_64_with_seed(&x.to_le_bytes(), DEFAULT_SEED);
            },
        );
        observe_case(&mut g, p, "synopses", items, || synopses_hll(p), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "synopses_observe_all", items, || synopses_hll(p), |s, xs| s.observe_all(xs));
        observe_case(&mut g, p, "datasketches_hll4", items, || ds_hll(p, HllType::Hll4), |s, x| s.update(*x));
        observe_case(&mut g, p, "datasketches_hll8", items, || ds_hll(p, HllType::Hll8), |s, x| s.update(*x));
        observe_case(&mut g, p, "datasketches_cpc", items, || ds_cpc(p), |s, x| s.update(*x));
        observe_case(&mut g, p, "hyperloglogplus", items, || hllpp::<u64>(p), |s, x| s.insert(x));
        match p {
            12 => observe_case(&mut g, p, "cardinality_estimator", items, Ce::<u64, 12>::new, |s, x| s.insert(x)),
            14 => observe_case(&mut g, p, "cardinality_estimator", items, Ce::<u64, 14>::new, |s, x| s.insert(x)),
            _ => unreachable!(),
        }
        observe_case(&mut g, p, "streaming_algorithms", items, || SaHyperLogLog::<u64>::with_p(p), |s, x| s.push(x));
    }
    g.finish();
}

fn bench_observe_str(c: &mut Criterion) {
    let items = &data().strs[..];
    let mut g = big_group(c, "hll/observe_str");
    g.throughput(Throughput::Elements(items.len() as u64));
    for p in PRECISIONS {
        observe_case(
            &mut g,
            p,
            "xxh3_floor",
            items,
            || 0u64,
            |acc, x| {
                *acc ^= xxh3_64_with_seed(x.as_bytes(), DEFAULT_SEED);
            },
        );
        observe_case(&mut g, p, "synopses", items, || synopses_hll(p), |s, x| s.observe(x.as_str()));
        observe_all_case(&mut g, p, "synopses_observe_all", items, || synopses_hll(p), |s, xs| s.observe_all(xs));
        observe_case(&mut g, p, "datasketches_hll4", items, || ds_hll(p, HllType::Hll4), |s, x| s.update(x.as_str()));
        observe_case(&mut g, p, "datasketches_hll8", items, || ds_hll(p, HllType::Hll8), |s, x| s.update(x.as_str()));
        observe_case(&mut g, p, "datasketches_cpc", items, || ds_cpc(p), |s, x| s.update(x.as_str()));
        observe_case(&mut g, p, "hyperloglogplus", items, || hllpp::<str>(p), |s, x| s.insert(x.as_str()));
        match p {
            12 => {
                observe_case(&mut g, p, "cardinality_estimator", items, Ce::<str, 12>::new, |s, x| s.insert(x.as_str()))
            }
            14 => {
                observe_case(&mut g, p, "cardinality_estimator", items, Ce::<str, 14>::new, |s, x| s.insert(x.as_str()))
            }
            _ => unreachable!(),
        }
        observe_case(
            &mut g,
            p,
            "streaming_algorithms",
            items,
            || SaHyperLogLog::<str>::with_p(p),
            |s, x| s.push(x.as_str()),
        );
    }
    g.finish();
}

/// Sketches of every implementation that saw `items` (and, for the merged variants, the two
/// halves of `items` merged).
struct Full {
    synopses: HyperLogLog,
    synopses_merged: HyperLogLog,
    hll4: HllSketch,
    hll8: HllSketch,
    hll8_merged: HllSketch,
    cpc: CpcSketch,
    hllpp: HyperLogLogPlus<u64, RandomState>,
    sa: SaHyperLogLog<u64>,
}

fn full(p: u8, items: &[u64]) -> Full {
    let (left, right) = items.split_at(items.len() / 2);
    let mut synopses = synopses_hll(p);
    let mut synopses_merged = synopses_hll(p);
    let mut synopses_right = synopses_hll(p);
    let mut hll4 = ds_hll(p, HllType::Hll4);
    let mut hll8 = ds_hll(p, HllType::Hll8);
    let mut hll8_left = ds_hll(p, HllType::Hll8);
    let mut hll8_right = ds_hll(p, HllType::Hll8);
    let mut cpc = ds_cpc(p);
    let mut hllpp = hllpp::<u64>(p);
    let mut sa = SaHyperLogLog::<u64>::with_p(p);
    for x in items {
        synopses.observe(*x);
        hll4.update(*x);
        hll8.update(*x);
        cpc.update(*x);
        hllpp.insert(x);
        sa.push(x);
    }
    for x in left {
        synopses_merged.observe(*x);
        hll8_left.update(*x);
    }
    for x in right {
        synopses_right.observe(*x);
        hll8_right.update(*x);
    }
    synopses_merged.merge(&synopses_right).expect("same config");
    let mut union = HllUnion::new(p).expect("lg_k in range");
    union.update(&hll8_left);
    union.update(&hll8_right);
    let hll8_merged = union.to_sketch(HllType::Hll8);
    Full { synopses, synopses_merged, hll4, hll8, hll8_merged, cpc, hllpp, sa }
}

fn ce_full<const P: usize>(items: &[u64]) -> Ce<u64, P> {
    let mut s = Ce::<u64, P>::new();
    items.iter().for_each(|x| s.insert(x));
    s
}

fn bench_estimate(c: &mut Criterion) {
    let items = &data().u64s[..];
    let mut g = small_group(c, "hll/estimate");
    for p in PRECISIONS {
        let mut f = full(p, items);
        eprintln!(
            "estimate inputs p{p} (truth {N}): synopses {:.0}, synopses_merged {:.0}, \
             datasketches hll4 {:.0} hll8 {:.0} hll8_merged {:.0} cpc {:.0}, hyperloglogplus {:.0}, \
             streaming_algorithms {:.0}",
            f.synopses.estimate(),
            f.synopses_merged.estimate(),
            f.hll4.estimate(),
            f.hll8.estimate(),
            f.hll8_merged.estimate(),
            f.cpc.estimate(),
            f.hllpp.count(),
            f.sa.len(),
        );
        let cfg = format!("p{p}");
        g.bench_function(id(&cfg, "synopses"), |b| b.iter(|| black_box(&f.synopses).estimate()));
        g.bench_function(id(&cfg, "synopses_merged"), |b| b.iter(|| black_box(&f.synopses_merged).estimate()));
        // The register (Ertl) estimate of the never-merged sketch: what `estimate` answers after
        // a merge, computed from the same registers.
        g.bench_function(id(&cfg, "synopses_register_estimate"), |b| {
            b.iter(|| black_box(&f.synopses).register_estimate())
        });
        g.bench_function(id(&cfg, "datasketches_hll4"), |b| b.iter(|| black_box(&f.hll4).estimate()));
        g.bench_function(id(&cfg, "datasketches_hll8"), |b| b.iter(|| black_box(&f.hll8).estimate()));
        g.bench_function(id(&cfg, "datasketches_hll8_merged"), |b| b.iter(|| black_box(&f.hll8_merged).estimate()));
        g.bench_function(id(&cfg, "datasketches_cpc"), |b| b.iter(|| black_box(&f.cpc).estimate()));
        // `count` takes `&mut self` (it may fold the sparse buffer first; here it is dense).
        g.bench_function(id(&cfg, "hyperloglogplus"), |b| b.iter(|| black_box(&mut f.hllpp).count()));
        match p {
            12 => {
                let s = ce_full::<12>(items);
                eprintln!("estimate inputs p12: cardinality_estimator {}", s.estimate());
                g.bench_function(id(&cfg, "cardinality_estimator"), |b| b.iter(|| black_box(&s).estimate()));
            }
            14 => {
                let s = ce_full::<14>(items);
                eprintln!("estimate inputs p14: cardinality_estimator {}", s.estimate());
                g.bench_function(id(&cfg, "cardinality_estimator"), |b| b.iter(|| black_box(&s).estimate()));
            }
            _ => unreachable!(),
        }
        g.bench_function(id(&cfg, "streaming_algorithms"), |b| b.iter(|| black_box(&f.sa).len()));
    }
    g.finish();
}

fn bench_merge(c: &mut Criterion) {
    let (l, r) = data().u64s.split_at(N / 2);
    let p = P_BIG;
    let mut g = small_group(c, "hll/merge");

    let build = |items: &[u64]| {
        let mut s = synopses_hll(p);
        items.iter().for_each(|x| s.observe(*x));
        s
    };
    merge_case(&mut g, id(format_args!("p{P_BIG}"), "synopses"), &build(l), &build(r), |t, o| {
        t.merge(o).expect("same config")
    });

    // datasketches merges through a union (its gadget is always Hll8): time `union.update` of
    // the right sketch into a union that already holds the left one.
    for (name, t) in [("datasketches_hll4", HllType::Hll4), ("datasketches_hll8", HllType::Hll8)] {
        let build = |items: &[u64]| {
            let mut s = ds_hll(p, t);
            items.iter().for_each(|x| s.update(*x));
            s
        };
        let right = build(r);
        let mut union = HllUnion::new(p).expect("lg_k in range");
        union.update(&build(l));
        g.bench_function(id(format_args!("p{p}"), name), |b| {
            b.iter_batched(
                || union.clone(),
                |mut u| {
                    u.update(black_box(&right));
                    u
                },
                BatchSize::LargeInput,
            );
        });
    }
    {
        let build = |items: &[u64]| {
            let mut s = ds_cpc(p);
            items.iter().for_each(|x| s.update(*x));
            s
        };
        let right = build(r);
        let mut union = CpcUnion::new(p).expect("lg_k in range");
        union.update(&build(l)).expect("same seed");
        g.bench_function(id(format_args!("p{p}"), "datasketches_cpc"), |b| {
            b.iter_batched(
                || union.clone(),
                |mut u| {
                    u.update(black_box(&right)).expect("same seed");
                    u
                },
                BatchSize::LargeInput,
            );
        });
    }

    let build = |items: &[u64]| {
        let mut s = hllpp::<u64>(p);
        items.iter().for_each(|x| s.insert(x));
        s
    };
    merge_case(&mut g, id(format_args!("p{P_BIG}"), "hyperloglogplus"), &build(l), &build(r), |t, o| {
        t.merge(o).expect("same precision")
    });

    let build = |items: &[u64]| ce_full::<14>(items);
    merge_case(&mut g, id(format_args!("p{P_BIG}"), "cardinality_estimator"), &build(l), &build(r), |t, o| t.merge(o));

    let build = |items: &[u64]| {
        let mut s = SaHyperLogLog::<u64>::with_p(p);
        items.iter().for_each(|x| s.push(x));
        s
    };
    merge_case(&mut g, id(format_args!("p{P_BIG}"), "streaming_algorithms"), &build(l), &build(r), |t, o| t.union(o));
    g.finish();
}

fn bench_bytes(c: &mut Criterion) {
    let items = &data().u64s[..];
    let p = P_BIG;
    let cfg = format!("p{p}");
    let f = full(p, items);

    let syn_bytes = f.synopses.to_bytes();
    let hll4_bytes = f.hll4.serialize();
    let hll8_bytes = f.hll8.serialize();
    let cpc_bytes = f.cpc.serialize();
    let mut sa_bytes = Vec::new();
    f.sa.save(&mut sa_bytes).expect("write to a Vec");
    eprintln!(
        "serialized sizes p{p}: synopses {} B, datasketches hll4 {} B hll8 {} B cpc {} B, \
         streaming_algorithms (bincode) {} B",
        syn_bytes.len(),
        hll4_bytes.len(),
        hll8_bytes.len(),
        cpc_bytes.len(),
        sa_bytes.len(),
    );

    let mut g = small_group(c, "hll/to_bytes");
    g.bench_function(id(&cfg, "synopses"), |b| b.iter(|| black_box(&f.synopses).to_bytes()));
    g.bench_function(id(&cfg, "datasketches_hll4"), |b| b.iter(|| black_box(&f.hll4).serialize()));
    g.bench_function(id(&cfg, "datasketches_hll8"), |b| b.iter(|| black_box(&f.hll8).serialize()));
    g.bench_function(id(&cfg, "datasketches_cpc"), |b| b.iter(|| black_box(&f.cpc).serialize()));
    g.bench_function(id(&cfg, "streaming_algorithms"), |b| {
        b.iter(|| {
            let mut out = Vec::new();
            black_box(&f.sa).save(&mut out).expect("write to a Vec");
            out
        })
    });
    g.finish();

    let mut g = small_group(c, "hll/from_bytes");
    g.bench_function(id(&cfg, "synopses"), |b| {
        b.iter(|| HyperLogLog::from_bytes(black_box(&syn_bytes)).expect("valid"))
    });
    g.bench_function(id(&cfg, "datasketches_hll4"), |b| {
        b.iter(|| HllSketch::deserialize(black_box(&hll4_bytes)).expect("valid"))
    });
    g.bench_function(id(&cfg, "datasketches_hll8"), |b| {
        b.iter(|| HllSketch::deserialize(black_box(&hll8_bytes)).expect("valid"))
    });
    g.bench_function(id(&cfg, "datasketches_cpc"), |b| {
        b.iter(|| CpcSketch::deserialize(black_box(&cpc_bytes)).expect("valid"))
    });
    g.bench_function(id(&cfg, "streaming_algorithms"), |b| {
        b.iter(|| SaHyperLogLog::<u64>::load(black_box(&sa_bytes[..])).expect("valid"))
    });
    g.finish();
}

#[cfg(feature = "rayon")]
fn bench_parallel(c: &mut Criterion) {
    use synopses::core::OperatorExt as _;
    let items = gen_u64s(N_PAR);
    let p = P_BIG;
    let mut g = big_group(c, "hll/observe_u64_10m");
    g.throughput(Throughput::Elements(items.len() as u64));
    let cfg = format!("p{p}");
    g.bench_function(id(&cfg, "synopses_seq"), |b| {
        b.iter_batched(
            || synopses_hll(p),
            |mut s| {
                for x in &items {
                    s.observe(*x);
                }
                s
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function(id(&cfg, "synopses_seq_observe_all"), |b| {
        b.iter_batched(
            || synopses_hll(p),
            |mut s| {
                s.observe_all(&items);
                s
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function(id(&cfg, "synopses_par"), |b| {
        b.iter_batched(
            || synopses_hll(p),
            |mut s| {
                s.par_observe(&items[..]);
                s
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

#[cfg(not(feature = "rayon"))]
fn bench_parallel(_: &mut Criterion) {
    let _ = N_PAR;
}

fn bench_fm(c: &mut Criterion) {
    const BITMAPS: usize = 1024;
    let items = &data().u64s[..];
    let cfg = format!("m{BITMAPS}");
    let make = || FlajoletMartin::new(BITMAPS).expect("power of two");

    let mut g = big_group(c, "fm/observe_u64");
    g.throughput(Throughput::Elements(items.len() as u64));
    g.bench_function(id(&cfg, "synopses"), |b| {
        b.iter_batched(
            make,
            |mut s| {
                for x in items {
                    s.observe(*x);
                }
                s
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function(id(&cfg, "synopses_observe_all"), |b| {
        b.iter_batched(
            make,
            |mut s| {
                s.observe_all(items);
                s
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();

    let mut full = make();
    items.iter().for_each(|x| full.observe(*x));
    eprintln!("FlajoletMartin m{BITMAPS} estimate (truth {N}): {:.0}", full.estimate());
    let mut g = small_group(c, "fm/estimate");
    g.bench_function(id(&cfg, "synopses"), |b| b.iter(|| black_box(&full).estimate()));
    g.finish();
}

criterion_group!(
    benches,
    bench_observe_u64,
    bench_observe_str,
    bench_estimate,
    bench_merge,
    bench_bytes,
    bench_parallel,
    bench_fm
);
criterion_main!(benches);
