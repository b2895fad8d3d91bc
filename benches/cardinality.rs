//! Cardinality sketches: `synopses` against peer crates.
//!
//! Run with `cargo bench -p synopses-benches --bench cardinality`. Every benchmark id reads
//! `family/operation/config/implementation`, e.g. `hll/observe_u64/p12/synopses`.
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
//! The `ull_ell/*` groups time `UltraLogLog` and `ExaLogLog` (`t = 2`, `d = 20`) beside our
//! `HyperLogLog` and DataSketches' HLL_4, HLL_6, HLL_8 and CPC at the same precision (`lg_k`),
//! on the same data, with the timing model above: `observe_u64` (`N` items into a fresh
//! sketch), `observe_u64_steady` (the same `N` items into a clone, made in setup, of a sketch
//! that saw `N_STEADY` others: the per-item cost late in a long stream), `estimate` (each
//! estimator of a sketch of `N` items: martingale, maximum likelihood, FGRA, and the estimate
//! after a merge of two halves) and `merge` (two sketches of `N` different items each, at
//! precision 12). Run them alone with
//! `cargo bench -p synopses-benches --bench cardinality -- ull_ell`. Their accuracy at equal
//! memory is `benches/examples/per_byte.rs`.
//!
//! Peers, each used the way its documentation shows (so each with its own hasher):
//! - `datasketches` 0.6 `HllSketch` (`Hll4`, `Hll6`, `Hll8`) and `CpcSketch`: MurmurHash3
//!   x64/128 (seed 9001) through `std::hash::Hash`; merge through `HllUnion` / `CpcUnion`.
//! - `hyperloglogplus` 0.4 `HyperLogLogPlus` with `std`'s `RandomState` (SipHash-1-3).
//! - `cardinality-estimator` 1.0 `CardinalityEstimator<T, WyHash, P, 6>` (wyhash).
//! - `streaming_algorithms` 0.3 `HyperLogLog` (streaming `Xxh3` hasher, seed 0), `save`/`load`
//!   (bincode) with its `serde` feature.
//! - `ultraloglog` 0.1 (`crate_ultraloglog`, a port of hash4j's) and `exaloglog` 0.15
//!   (`crate_exaloglog`, its packed `t = 2`, `d = 20` sketch), in the `ull_ell` groups: the other
//!   Rust UltraLogLog and ExaLogLog. Both take a 64-bit hash (`add`, `add_hash`), their
//!   documented fast path; they get the same xxh3 hash `synopses` computes. Neither does all the
//!   work ours does per change: `ultraloglog` keeps no martingale, and `exaloglog`'s default
//!   sketch (`new`) drops its martingale when its sparse form turns dense. Its `new_dense`
//!   sketch keeps one (`crate_exaloglog_dense`), as ours do through the switch.
//! - `xxh3_floor`: no sketch, only `xxh3_64_with_seed` over the same bytes `synopses` hashes,
//!   xor-folded into an accumulator: the cost of the hash alone.

mod common;
use common::{DATA_SEED, big_group, filled, merge_case, small_group, splitmix64};
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
use synopses::cardinality::{ExaLogLog, FlajoletMartin, HyperLogLog, UltraLogLog, UltraLogLogEstimator};
use synopses::core::Mergeable as _;
use synopses::formats::{DataSketchesHll, HllType as DsType, RedisHyperLogLog};
use synopses::hash::{DEFAULT_SEED, Hashable, hash_words};
use ultraloglog::Estimator as _;
use wyhash::WyHash;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Items per observe iteration, and items seen by the sketches of `estimate` and `bytes`.
const N: usize = 1_000_000;
/// Items of the parallel group.
const N_PAR: usize = 10_000_000;
/// Items a sketch of the steady-state group saw before it is timed.
const N_STEADY: usize = 10_000_000;
/// Precisions of the observe and estimate groups.
const PRECISIONS: [u8; 2] = [12, 14];
/// Precision of the merge and serialization groups.
const P_BIG: u8 = 14;
/// Precision of the UltraLogLog / ExaLogLog estimate and merge groups.
const P_ULL: u8 = 12;
/// DataSketches' three HLL register widths, by benchmark name.
const DS_HLL_TYPES: [(&str, HllType); 3] =
    [("datasketches_hll4", HllType::Hll4), ("datasketches_hll6", HllType::Hll6), ("datasketches_hll8", HllType::Hll8)];

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

fn ull(p: u8) -> UltraLogLog {
    UltraLogLog::new(p).expect("precision in range")
}

fn ell(p: u8) -> ExaLogLog {
    ExaLogLog::new(p).expect("precision in range")
}

/// The `ultraloglog` crate's sketch, with the `Clone` that the bench helpers take (it has
/// `copy` instead).
struct CrateUll(ultraloglog::UltraLogLog);

impl Clone for CrateUll {
    fn clone(&self) -> Self {
        Self(self.0.copy())
    }
}

impl CrateUll {
    fn new(p: u8) -> Self {
        Self(ultraloglog::UltraLogLog::new(u32::from(p)).expect("precision in range"))
    }

    fn observe(&mut self, x: u64) {
        self.0.add(x.hash64(DEFAULT_SEED));
    }
}

/// The `exaloglog` crate's sketch: `sparse` from `new` (as its documentation starts), or
/// dense from the start with `new_dense`, which keeps a martingale.
#[derive(Clone)]
struct CrateEll(exaloglog::ExaLogLog);

impl CrateEll {
    fn new(p: u8) -> Self {
        Self(exaloglog::ExaLogLog::new(u32::from(p)))
    }

    fn dense(p: u8) -> Self {
        Self(exaloglog::ExaLogLog::new_dense(u32::from(p)))
    }

    fn observe(&mut self, x: u64) {
        self.0.add_hash(x.hash64(DEFAULT_SEED));
    }
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

/// Hands `f` the hashes (under [`DEFAULT_SEED`]) of `items`, 256 at a time, hashed together by
/// [`hash_words`]: how a column of numbers is best fed to a sketch.
fn in_hashed_chunks(items: &[u64], mut f: impl FnMut(&[u64])) {
    let mut buffer = [0_u64; 256];
    for chunk in items.chunks(buffer.len()) {
        let hashes = &mut buffer[..chunk.len()];
        hashes.copy_from_slice(chunk);
        hash_words(hashes, DEFAULT_SEED);
        f(hashes);
    }
}

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
        observe_all_case(
            &mut g,
            p,
            "xxh3_floor_hash_words",
            items,
            || 0u64,
            |acc, xs| {
                in_hashed_chunks(xs, |hashes| *acc ^= hashes.iter().fold(0, |a, h| a ^ h));
            },
        );
        observe_case(&mut g, p, "synopses", items, || synopses_hll(p), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "synopses_observe_all", items, || synopses_hll(p), |s, xs| s.observe_all(xs));
        observe_all_case(
            &mut g,
            p,
            "synopses_hash_words",
            items,
            || synopses_hll(p),
            |s, xs| {
                in_hashed_chunks(xs, |hashes| s.observe_hashes(hashes.iter().copied()));
            },
        );
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

/// Times a DataSketches HLL merge, which goes through a union (whose gadget is always Hll8):
/// `union.update` of a sketch of type `t` that saw `right` into a clone (made in setup) of a
/// union that already holds the one that saw `left`.
fn ds_hll_union_case(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    p: u8,
    t: HllType,
    (left, right): (&[u64], &[u64]),
) {
    let build = |items: &[u64]| filled(items, || ds_hll(p, t), |s, x| s.update(x));
    let right = build(right);
    let mut union = HllUnion::new(p).expect("lg_k in range");
    union.update(&build(left));
    g.bench_function(id, |b| {
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

/// Times a DataSketches CPC merge the same way, through a `CpcUnion`.
fn ds_cpc_union_case(g: &mut BenchmarkGroup<'_, WallTime>, id: BenchmarkId, p: u8, (left, right): (&[u64], &[u64])) {
    let build = |items: &[u64]| filled(items, || ds_cpc(p), |s, x| s.update(x));
    let right = build(right);
    let mut union = CpcUnion::new(p).expect("lg_k in range");
    union.update(&build(left)).expect("same seed");
    g.bench_function(id, |b| {
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

    for (name, t) in [("datasketches_hll4", HllType::Hll4), ("datasketches_hll8", HllType::Hll8)] {
        ds_hll_union_case(&mut g, id(format_args!("p{p}"), name), p, t, (l, r));
    }
    ds_cpc_union_case(&mut g, id(format_args!("p{p}"), "datasketches_cpc"), p, (l, r));

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

/// UltraLogLog's entropy-coded encoding against its plain one and against DataSketches' CPC
/// (which is always compressed), at the same precision (`lg_k`): over 100·m distinct items, a
/// sketch far past its sparse mode, as stored in a warehouse (`p10` to `p14`); and over 100,
/// 1000 and 3000 items at p = 14, sparse sketches whose entries are gap-coded
/// (`p14_n100` ...). HyperLogLog's coded and plain encodings beside them.
fn bench_ull_compressed(c: &mut Criterion) {
    let dense = [10_u8, 12, 14].map(|p| (p, 100_u64 << p, format!("p{p}")));
    let sparse = [100_u64, 1000, 3000].map(|n| (14, n, format!("p14_n{n}")));
    for (p, n, cfg) in dense.into_iter().chain(sparse) {
        let mut ull = UltraLogLog::new(p).expect("a precision");
        ull.observe_all(0..n);
        let mut cpc = CpcSketch::new(p).expect("a precision");
        (0..n).for_each(|i| cpc.update(i));
        let mut hll = HyperLogLog::new(p).expect("a precision");
        hll.observe_all(0..n);
        let (plain, coded, theirs) = (ull.to_bytes(), ull.to_compressed_bytes(), cpc.serialize());
        let (hll_plain, hll_coded) = (hll.to_bytes(), hll.to_compressed_bytes());
        eprintln!(
            "serialized sizes {cfg}: UltraLogLog plain {} B, compressed {} B; CPC {} B; \
             HyperLogLog plain {} B, compressed {} B",
            plain.len(),
            coded.len(),
            theirs.len(),
            hll_plain.len(),
            hll_coded.len()
        );
        let mut g = small_group(c, "ull_compressed/encode");
        g.bench_function(id(&cfg, "synopses_compressed"), |b| b.iter(|| black_box(&ull).to_compressed_bytes()));
        g.bench_function(id(&cfg, "synopses_plain"), |b| b.iter(|| black_box(&ull).to_bytes()));
        g.bench_function(id(&cfg, "datasketches_cpc"), |b| b.iter(|| black_box(&cpc).serialize()));
        g.bench_function(id(&cfg, "synopses_hll_compressed"), |b| b.iter(|| black_box(&hll).to_compressed_bytes()));
        g.bench_function(id(&cfg, "synopses_hll_plain"), |b| b.iter(|| black_box(&hll).to_bytes()));
        g.finish();
        let mut g = small_group(c, "ull_compressed/decode");
        g.bench_function(id(&cfg, "synopses_compressed"), |b| {
            b.iter(|| UltraLogLog::from_bytes(black_box(&coded)).expect("valid"))
        });
        g.bench_function(id(&cfg, "synopses_plain"), |b| {
            b.iter(|| UltraLogLog::from_bytes(black_box(&plain)).expect("valid"))
        });
        g.bench_function(id(&cfg, "datasketches_cpc"), |b| {
            b.iter(|| CpcSketch::deserialize(black_box(&theirs)).expect("valid"))
        });
        g.bench_function(id(&cfg, "synopses_hll_compressed"), |b| {
            b.iter(|| HyperLogLog::from_bytes(black_box(&hll_coded)).expect("valid"))
        });
        g.bench_function(id(&cfg, "synopses_hll_plain"), |b| {
            b.iter(|| HyperLogLog::from_bytes(black_box(&hll_plain)).expect("valid"))
        });
        g.finish();
    }
}

/// The same encodings over a population of sketches, as a warehouse holds them: 65 sketches at
/// p = 10, over `m·2^(k/4)` distinct items for k = 0 to 64 (16 octaves, up to 6.7·10^7 items),
/// coded and decoded in turn; the time is for the whole population. The coder's tables are
/// per scale (cached, shared a level apart), so this times what a single sketch coded over
/// and over cannot.
fn bench_ull_compressed_population(c: &mut Criterion) {
    /// The sketches and their encodings: UltraLogLog's, coded and plain, and CPC's.
    struct Population {
        ulls: Vec<UltraLogLog>,
        cpcs: Vec<CpcSketch>,
        coded: Vec<Vec<u8>>,
        plain: Vec<Vec<u8>>,
        theirs: Vec<Vec<u8>>,
    }
    let p = 10_u8;
    // Built when a benchmark of the group first runs (4·10^8 updates), not when it is filtered
    // out.
    let population = std::sync::OnceLock::new();
    let population = || {
        population.get_or_init(|| {
            let (mut ulls, mut cpcs) = (Vec::new(), Vec::new());
            for k in 0..=64 {
                let n = ((1_u64 << p) as f64 * 2_f64.powf(f64::from(k) / 4.0)) as u64;
                let mut ull = UltraLogLog::new(p).expect("a precision");
                ull.observe_all(0..n);
                let mut cpc = CpcSketch::new(p).expect("a precision");
                (0..n).for_each(|i| cpc.update(i));
                ulls.push(ull);
                cpcs.push(cpc);
            }
            let coded = ulls.iter().map(UltraLogLog::to_compressed_bytes).collect();
            let plain = ulls.iter().map(UltraLogLog::to_bytes).collect();
            let theirs = cpcs.iter().map(CpcSketch::serialize).collect();
            Population { ulls, cpcs, coded, plain, theirs }
        })
    };
    let cfg = format!("p{p}_65_sketches");
    let mut g = small_group(c, "ull_compressed/population_encode");
    g.bench_function(id(&cfg, "synopses_compressed"), |b| {
        let ulls = &population().ulls;
        b.iter(|| black_box(ulls).iter().map(|u| u.to_compressed_bytes().len()).sum::<usize>())
    });
    g.bench_function(id(&cfg, "synopses_plain"), |b| {
        let ulls = &population().ulls;
        b.iter(|| black_box(ulls).iter().map(|u| u.to_bytes().len()).sum::<usize>())
    });
    g.bench_function(id(&cfg, "datasketches_cpc"), |b| {
        let cpcs = &population().cpcs;
        b.iter(|| black_box(cpcs).iter().map(|s| s.serialize().len()).sum::<usize>())
    });
    g.finish();
    let mut g = small_group(c, "ull_compressed/population_decode");
    let ull = |bytes: &[Vec<u8>]| -> usize {
        bytes.iter().map(|c| usize::from(UltraLogLog::from_bytes(c).expect("valid").precision())).sum()
    };
    g.bench_function(id(&cfg, "synopses_compressed"), |b| {
        let coded = &population().coded;
        b.iter(|| ull(black_box(coded)))
    });
    g.bench_function(id(&cfg, "synopses_plain"), |b| {
        let plain = &population().plain;
        b.iter(|| ull(black_box(plain)))
    });
    g.bench_function(id(&cfg, "datasketches_cpc"), |b| {
        let theirs = &population().theirs;
        b.iter(|| {
            black_box(theirs)
                .iter()
                .map(|c| usize::from(CpcSketch::deserialize(c).expect("valid").lg_k()))
                .sum::<usize>()
        })
    });
    g.finish();
}

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

fn bench_ull_ell_observe(c: &mut Criterion) {
    let items = &data().u64s[..];
    let mut g = big_group(c, "ull_ell/observe_u64");
    g.throughput(Throughput::Elements(items.len() as u64));
    for p in PRECISIONS {
        observe_case(&mut g, p, "ultraloglog", items, || ull(p), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "ultraloglog_observe_all", items, || ull(p), |s, xs| s.observe_all(xs));
        observe_all_case(
            &mut g,
            p,
            "ultraloglog_hash_words",
            items,
            || ull(p),
            |s, xs| {
                in_hashed_chunks(xs, |hashes| s.observe_hashes(hashes.iter().copied()));
            },
        );
        observe_case(&mut g, p, "exaloglog", items, || ell(p), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "exaloglog_observe_all", items, || ell(p), |s, xs| s.observe_all(xs));
        observe_case(&mut g, p, "crate_ultraloglog", items, || CrateUll::new(p), |s, x| s.observe(*x));
        observe_case(&mut g, p, "crate_exaloglog", items, || CrateEll::new(p), |s, x| s.observe(*x));
        observe_case(&mut g, p, "crate_exaloglog_dense", items, || CrateEll::dense(p), |s, x| s.observe(*x));
        observe_case(&mut g, p, "hyperloglog", items, || synopses_hll(p), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "hyperloglog_observe_all", items, || synopses_hll(p), |s, xs| s.observe_all(xs));
        for (name, t) in DS_HLL_TYPES {
            observe_case(&mut g, p, name, items, || ds_hll(p, t), |s, x| s.update(*x));
        }
        observe_case(&mut g, p, "datasketches_cpc", items, || ds_cpc(p), |s, x| s.update(*x));
    }
    g.finish();
}

/// The merge (by `merge`) of a sketch that saw `left` and one that saw `right`.
fn merged_halves<S>(
    (left, right): (&[u64], &[u64]),
    make: impl Fn() -> S,
    push: impl Fn(&mut S, u64) + Copy,
    merge: impl Fn(&mut S, &S),
) -> S {
    let mut s = filled(left, &make, push);
    merge(&mut s, &filled(right, &make, push));
    s
}

/// The `N` items of `ull_ell/observe_u64` again, each into a sketch that already saw
/// `N_STEADY` other items. Late in a stream few items change a register (of 10^6 items into a
/// fresh sketch at p = 14, ExaLogLog changes one for 25 %, UltraLogLog for 8.6 %, HyperLogLog
/// for 5.9 %), so this is the per-item cost of a long stream, where the fresh-sketch group is
/// that of many short ones.
fn bench_ull_ell_observe_steady(c: &mut Criterion) {
    let items = &data().u64s[..];
    // The first `N` outputs of the generator are `items`; the history is the next ones.
    let history = &gen_u64s(N + N_STEADY)[N..];
    let mut g = big_group(c, "ull_ell/observe_u64_steady");
    g.throughput(Throughput::Elements(items.len() as u64));
    for p in PRECISIONS {
        let seen = filled(history, || ull(p), |s, x| s.observe(x));
        observe_case(&mut g, p, "ultraloglog", items, || seen.clone(), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "ultraloglog_observe_all", items, || seen.clone(), |s, xs| s.observe_all(xs));
        let seen = filled(history, || ell(p), |s, x| s.observe(x));
        observe_case(&mut g, p, "exaloglog", items, || seen.clone(), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "exaloglog_observe_all", items, || seen.clone(), |s, xs| s.observe_all(xs));
        let seen = filled(history, || CrateUll::new(p), |s, x| s.observe(x));
        observe_case(&mut g, p, "crate_ultraloglog", items, || seen.clone(), |s, x| s.observe(*x));
        let seen = filled(history, || CrateEll::new(p), |s, x| s.observe(x));
        observe_case(&mut g, p, "crate_exaloglog", items, || seen.clone(), |s, x| s.observe(*x));
        let seen = filled(history, || CrateEll::dense(p), |s, x| s.observe(x));
        observe_case(&mut g, p, "crate_exaloglog_dense", items, || seen.clone(), |s, x| s.observe(*x));
        let seen = filled(history, || synopses_hll(p), |s, x| s.observe(x));
        observe_case(&mut g, p, "hyperloglog", items, || seen.clone(), |s, x| s.observe(*x));
        observe_all_case(&mut g, p, "hyperloglog_observe_all", items, || seen.clone(), |s, xs| s.observe_all(xs));
        for (name, t) in DS_HLL_TYPES {
            let seen = filled(history, || ds_hll(p, t), |s, x| s.update(x));
            observe_case(&mut g, p, name, items, || seen.clone(), |s, x| s.update(*x));
        }
        let seen = filled(history, || ds_cpc(p), |s, x| s.update(x));
        observe_case(&mut g, p, "datasketches_cpc", items, || seen.clone(), |s, x| s.update(*x));
    }
    g.finish();
}

/// The sketches of the `ull_ell` estimate group: each saw all `N` items, and the `merged`
/// ones are the merge of two sketches of the two halves.
struct Histories {
    ull: UltraLogLog,
    ull_merged: UltraLogLog,
    ell: ExaLogLog,
    ell_merged: ExaLogLog,
    hll: HyperLogLog,
    hll_merged: HyperLogLog,
    crate_ull: CrateUll,
    crate_ull_merged: CrateUll,
    crate_ell: CrateEll,
    crate_ell_merged: CrateEll,
    hll8: HllSketch,
    hll8_merged: HllSketch,
    cpc: CpcSketch,
    cpc_merged: CpcSketch,
}

fn histories(p: u8, items: &[u64]) -> Histories {
    let halves = items.split_at(items.len() / 2);
    let (left, right) = halves;
    let mut hll_union = HllUnion::new(p).expect("lg_k in range");
    hll_union.update(&filled(left, || ds_hll(p, HllType::Hll8), |s, x| s.update(x)));
    hll_union.update(&filled(right, || ds_hll(p, HllType::Hll8), |s, x| s.update(x)));
    let mut cpc_union = CpcUnion::new(p).expect("lg_k in range");
    cpc_union.update(&filled(left, || ds_cpc(p), |s, x| s.update(x))).expect("same seed");
    cpc_union.update(&filled(right, || ds_cpc(p), |s, x| s.update(x))).expect("same seed");
    Histories {
        ull: filled(items, || ull(p), |s, x| s.observe(x)),
        ull_merged: merged_halves(halves, || ull(p), |s, x| s.observe(x), |s, o| s.merge(o).expect("same config")),
        ell: filled(items, || ell(p), |s, x| s.observe(x)),
        ell_merged: merged_halves(halves, || ell(p), |s, x| s.observe(x), |s, o| s.merge(o).expect("same config")),
        hll: filled(items, || synopses_hll(p), |s, x| s.observe(x)),
        hll_merged: merged_halves(
            halves,
            || synopses_hll(p),
            |s, x| s.observe(x),
            |s, o| s.merge(o).expect("same config"),
        ),
        crate_ull: filled(items, || CrateUll::new(p), |s, x| s.observe(x)),
        crate_ull_merged: merged_halves(
            halves,
            || CrateUll::new(p),
            |s, x| s.observe(x),
            |s, o| {
                s.0.add_sketch(&o.0).expect("same precision");
            },
        ),
        // Dense from the start, so that it has a martingale to read.
        crate_ell: filled(items, || CrateEll::dense(p), |s, x| s.observe(x)),
        crate_ell_merged: merged_halves(
            halves,
            || CrateEll::new(p),
            |s, x| s.observe(x),
            |s, o| s.0.merge(&o.0).expect("same precision"),
        ),
        hll8: filled(items, || ds_hll(p, HllType::Hll8), |s, x| s.update(x)),
        hll8_merged: hll_union.to_sketch(HllType::Hll8),
        cpc: filled(items, || ds_cpc(p), |s, x| s.update(x)),
        cpc_merged: cpc_union.to_sketch(),
    }
}

fn bench_ull_ell_estimate(c: &mut Criterion) {
    use UltraLogLogEstimator::{Fgra, MaximumLikelihood};
    let items = &data().u64s[..];
    let p = P_ULL;
    let h = histories(p, items);
    eprintln!(
        "ull_ell estimate inputs p{p} (truth {N}): ultraloglog martingale {:.0} ML {:.0} FGRA {:.0} merged {:.0}, \
         exaloglog martingale {:.0} ML {:.0} merged {:.0}, crate ultraloglog FGRA {:.0} ML {:.0} merged {:.0}, \
         crate exaloglog martingale {:?} ML {:.0} merged {:.0}, hyperloglog {:.0} register {:.0} merged {:.0}, \
         datasketches hll8 HIP {:.0} composite {:.0} merged {:.0}, cpc HIP {:.0} merged (ICON) {:.0}",
        h.ull.estimate(),
        h.ull.register_estimate(MaximumLikelihood),
        h.ull.register_estimate(Fgra),
        h.ull_merged.estimate(),
        h.ell.estimate(),
        h.ell.register_estimate(),
        h.ell_merged.estimate(),
        h.crate_ull.0.get_distinct_count_estimate(),
        ultraloglog::MaximumLikelihoodEstimator.estimate(&h.crate_ull.0),
        h.crate_ull_merged.0.get_distinct_count_estimate(),
        h.crate_ell.0.estimate_martingale(),
        h.crate_ell.0.estimate_ml(),
        h.crate_ell_merged.0.estimate(),
        h.hll.estimate(),
        h.hll.register_estimate(),
        h.hll_merged.estimate(),
        h.hll8.estimate(),
        h.hll8.composite_estimate(),
        h.hll8_merged.estimate(),
        h.cpc.estimate(),
        h.cpc_merged.estimate(),
    );
    let cfg = format!("p{p}");
    let mut g = small_group(c, "ull_ell/estimate");
    // The martingale is a stored number; `estimate` returns it while the sketch is unmerged.
    g.bench_function(id(&cfg, "ultraloglog_martingale"), |b| b.iter(|| black_box(&h.ull).estimate()));
    g.bench_function(id(&cfg, "ultraloglog_ml"), |b| b.iter(|| black_box(&h.ull).register_estimate(MaximumLikelihood)));
    g.bench_function(id(&cfg, "ultraloglog_fgra"), |b| b.iter(|| black_box(&h.ull).register_estimate(Fgra)));
    // After a merge `estimate` is maximum likelihood: the same work as `ultraloglog_ml`.
    g.bench_function(id(&cfg, "ultraloglog_merged"), |b| b.iter(|| black_box(&h.ull_merged).estimate()));
    g.bench_function(id(&cfg, "exaloglog_martingale"), |b| b.iter(|| black_box(&h.ell).estimate()));
    g.bench_function(id(&cfg, "exaloglog_ml"), |b| b.iter(|| black_box(&h.ell).register_estimate()));
    g.bench_function(id(&cfg, "exaloglog_merged"), |b| b.iter(|| black_box(&h.ell_merged).estimate()));
    g.bench_function(id(&cfg, "crate_ultraloglog_fgra"), |b| {
        b.iter(|| black_box(&h.crate_ull).0.get_distinct_count_estimate())
    });
    g.bench_function(id(&cfg, "crate_ultraloglog_ml"), |b| {
        b.iter(|| ultraloglog::MaximumLikelihoodEstimator.estimate(&black_box(&h.crate_ull).0))
    });
    g.bench_function(id(&cfg, "crate_exaloglog_martingale"), |b| {
        b.iter(|| black_box(&h.crate_ell).0.estimate_martingale())
    });
    g.bench_function(id(&cfg, "crate_exaloglog_ml"), |b| b.iter(|| black_box(&h.crate_ell).0.estimate_ml()));
    g.bench_function(id(&cfg, "hyperloglog_martingale"), |b| b.iter(|| black_box(&h.hll).estimate()));
    g.bench_function(id(&cfg, "hyperloglog_register"), |b| b.iter(|| black_box(&h.hll).register_estimate()));
    g.bench_function(id(&cfg, "hyperloglog_merged"), |b| b.iter(|| black_box(&h.hll_merged).estimate()));
    g.bench_function(id(&cfg, "datasketches_hll8_hip"), |b| b.iter(|| black_box(&h.hll8).estimate()));
    g.bench_function(id(&cfg, "datasketches_hll8_composite"), |b| b.iter(|| black_box(&h.hll8).composite_estimate()));
    g.bench_function(id(&cfg, "datasketches_hll8_merged"), |b| b.iter(|| black_box(&h.hll8_merged).estimate()));
    g.bench_function(id(&cfg, "datasketches_cpc_hip"), |b| b.iter(|| black_box(&h.cpc).estimate()));
    g.bench_function(id(&cfg, "datasketches_cpc_merged"), |b| b.iter(|| black_box(&h.cpc_merged).estimate()));
    g.finish();
}

fn bench_ull_ell_merge(c: &mut Criterion) {
    // Two sketches of N items each, no item in common: the first N of the data and the next N.
    let both = gen_u64s(2 * N);
    let (l, r) = both.split_at(N);
    let p = P_ULL;
    let cfg = format!("p{p}");
    let mut g = small_group(c, "ull_ell/merge");

    let (left, right) = (filled(l, || ull(p), |s, x| s.observe(x)), filled(r, || ull(p), |s, x| s.observe(x)));
    merge_case(&mut g, id(&cfg, "ultraloglog"), &left, &right, |t, o| t.merge(o).expect("same config"));
    let (left, right) = (filled(l, || ell(p), |s, x| s.observe(x)), filled(r, || ell(p), |s, x| s.observe(x)));
    merge_case(&mut g, id(&cfg, "exaloglog"), &left, &right, |t, o| t.merge(o).expect("same config"));
    let build = |items: &[u64]| filled(items, || synopses_hll(p), |s, x| s.observe(x));
    merge_case(&mut g, id(&cfg, "hyperloglog"), &build(l), &build(r), |t, o| t.merge(o).expect("same config"));
    let build = |items: &[u64]| filled(items, || CrateUll::new(p), |s, x| s.observe(x));
    merge_case(&mut g, id(&cfg, "crate_ultraloglog"), &build(l), &build(r), |t, o| {
        t.0.add_sketch(&o.0).expect("same precision");
    });
    let build = |items: &[u64]| filled(items, || CrateEll::new(p), |s, x| s.observe(x));
    merge_case(&mut g, id(&cfg, "crate_exaloglog"), &build(l), &build(r), |t, o| {
        t.0.merge(&o.0).expect("same precision");
    });

    for (name, t) in DS_HLL_TYPES {
        ds_hll_union_case(&mut g, id(&cfg, name), p, t, (l, r));
    }
    ds_cpc_union_case(&mut g, id(&cfg, "datasketches_cpc"), p, (l, r));
    g.finish();
}

/// Sizes of the `fresh` group: a pane of a window, a part of the timely operator.
const FRESH_SIZES: [usize; 2] = [10_000, 1_000_000];

/// `n` items through `observe_all` into a fresh sketch (`fresh`), against the same `n` items
/// into a clone of a sketch that saw `N_STEADY` others (`steady`, made in setup): what a
/// window or a timely part pays for starting a sketch, over a long-running one. A fresh
/// sketch goes through the sparse mode, its densification and the early dense phase, where
/// most items change a register.
fn bench_fresh(c: &mut Criterion) {
    let history = &gen_u64s(N + N_STEADY)[N..];
    let mut g = big_group(c, "fresh/observe_all");
    for n in FRESH_SIZES {
        let items = &data().u64s[..n];
        g.throughput(Throughput::Elements(n as u64));
        let case = |g: &mut BenchmarkGroup<'_, WallTime>, name: String, make: &dyn Fn() -> Sketch| {
            g.bench_function(id(format_args!("n{n}"), &name), |b| {
                b.iter_batched(
                    make,
                    |mut s| {
                        s.observe_all(items);
                        s
                    },
                    BatchSize::LargeInput,
                );
            });
        };
        let hll_seen = filled(history, || synopses_hll(14), |s, x| s.observe(x));
        case(&mut g, "hll_p14_fresh".into(), &|| Sketch::Hll(synopses_hll(14)));
        case(&mut g, "hll_p14_steady".into(), &|| Sketch::Hll(hll_seen.clone()));
        let ull_seen = filled(history, || ull(12), |s, x| s.observe(x));
        case(&mut g, "ull_p12_fresh".into(), &|| Sketch::Ull(ull(12)));
        case(&mut g, "ull_p12_steady".into(), &|| Sketch::Ull(ull_seen.clone()));
        case(&mut g, "ell_p12_fresh".into(), &|| Sketch::Ell(ell(12)));
    }
    g.finish();
}

/// Redis's HyperLogLog (`formats::RedisHyperLogLog`, 16 384 registers): adding strings (against
/// the crate's HyperLogLog at p = 14 and DataSketches' HLL_8 on the same strings), `PFCOUNT`'s
/// count, and its string both ways, sparse (1 000 strings) and dense (all of them).
fn bench_redis(c: &mut Criterion) {
    let strs = &data().strs;
    let mut g = big_group(c, "redis/observe_str");
    g.throughput(Throughput::Elements(strs.len() as u64));
    observe_case(&mut g, 14, "redis_hyperloglog", strs, RedisHyperLogLog::new, |s, x| {
        s.observe(x);
    });
    observe_case(&mut g, 14, "synopses_hyperloglog", strs, || synopses_hll(14), |s, x| s.observe(x.as_str()));
    observe_case(&mut g, 14, "datasketches_hll8", strs, || ds_hll(14, HllType::Hll8), |s, x| s.update(x.as_str()));
    g.finish();

    let mut g = c.benchmark_group("redis/bytes");
    for (label, n) in [("sparse_1000", 1_000), ("dense_1000000", strs.len())] {
        let mut hll = RedisHyperLogLog::new();
        strs[..n].iter().for_each(|x| {
            hll.observe(x);
        });
        let bytes = hll.to_bytes();
        g.bench_function(id(label, "count"), |b| b.iter(|| black_box(&hll).count()));
        g.bench_function(id(label, "to_bytes"), |b| b.iter(|| black_box(&hll).to_bytes()));
        g.bench_function(id(label, "from_bytes"), |b| {
            b.iter(|| RedisHyperLogLog::from_bytes(black_box(&bytes)).expect("its own string"))
        });
    }
    g.finish();
}

/// DataSketches' HLL sketch (`formats::DataSketchesHll`) against datasketches-rust on the same
/// items and the same images: updates (integers, strings), the estimate, the union of two
/// sketches, and the images both ways (compact), in set mode (300 items) and HLL mode (all).
fn bench_datasketches(c: &mut Criterion) {
    let (u64s, strs) = (&data().u64s, &data().strs);
    for (kind, t, ours_t) in [("hll4", HllType::Hll4, DsType::Hll4), ("hll8", HllType::Hll8, DsType::Hll8)] {
        let ours = || DataSketchesHll::new(12, ours_t).expect("lg_k");
        let mut g = big_group(c, &format!("datasketches/update_u64/{kind}"));
        g.throughput(Throughput::Elements(u64s.len() as u64));
        observe_case(&mut g, 12, "synopses", u64s, ours, |s, &x| s.update(x));
        observe_case(&mut g, 12, "datasketches_rust", u64s, || ds_hll(12, t), |s, &x| s.update(x));
        g.finish();
        let mut g = big_group(c, &format!("datasketches/update_str/{kind}"));
        g.throughput(Throughput::Elements(strs.len() as u64));
        observe_case(&mut g, 12, "synopses", strs, ours, |s, x| s.update(x.as_str()));
        observe_case(&mut g, 12, "datasketches_rust", strs, || ds_hll(12, t), |s, x| s.update(x.as_str()));
        g.finish();

        let mut g = c.benchmark_group(format!("datasketches/bytes/{kind}"));
        for (label, n) in [("set_300", 300), ("hll_1000000", u64s.len())] {
            let mut sketch = ours();
            u64s[..n].iter().for_each(|&x| sketch.update(x));
            let image = sketch.to_bytes();
            let theirs = HllSketch::deserialize(&image).expect("our image reads there");
            g.bench_function(id(label, "synopses/to_bytes"), |b| b.iter(|| black_box(&sketch).to_bytes()));
            g.bench_function(id(label, "datasketches_rust/serialize"), |b| b.iter(|| black_box(&theirs).serialize()));
            g.bench_function(id(label, "synopses/from_bytes"), |b| {
                b.iter(|| DataSketchesHll::from_bytes(black_box(&image)).expect("its image"))
            });
            g.bench_function(id(label, "datasketches_rust/deserialize"), |b| {
                b.iter(|| HllSketch::deserialize(black_box(&image)).expect("the image"))
            });
            g.bench_function(id(label, "synopses/estimate"), |b| b.iter(|| black_box(&sketch).estimate()));
            g.bench_function(id(label, "datasketches_rust/estimate"), |b| b.iter(|| black_box(&theirs).estimate()));
        }
        g.finish();

        let mut g = c.benchmark_group(format!("datasketches/union/{kind}"));
        let half = u64s.len() / 2;
        let (left, right) = (&u64s[..half + half / 2], &u64s[half / 2..]);
        let build = |items: &[u64]| filled(items, ours, |s: &mut DataSketchesHll, x| s.update(x));
        let (ours_l, ours_r) = (build(left), build(right));
        let (ds_l, ds_r) = (
            HllSketch::deserialize(&ours_l.to_bytes()).expect("ours"),
            HllSketch::deserialize(&ours_r.to_bytes()).expect("ours"),
        );
        g.bench_function(id("p12", "synopses/merge"), |b| {
            b.iter(|| {
                let mut m = ours_l.clone();
                m.merge(black_box(&ours_r)).expect("merge");
                m.estimate()
            })
        });
        g.bench_function(id("p12", "datasketches_rust/union"), |b| {
            b.iter(|| {
                let mut u = HllUnion::new(12).expect("lg_k");
                u.update(black_box(&ds_l));
                u.update(black_box(&ds_r));
                u.to_sketch(t).estimate()
            })
        });
        g.finish();
    }
}

/// The sketches of the `fresh` group, behind one `observe_all`.
enum Sketch {
    Hll(HyperLogLog),
    Ull(UltraLogLog),
    Ell(ExaLogLog),
}

impl Sketch {
    fn observe_all(&mut self, items: &[u64]) {
        match self {
            Self::Hll(s) => s.observe_all(items),
            Self::Ull(s) => s.observe_all(items),
            Self::Ell(s) => s.observe_all(items),
        }
    }
}

criterion_group!(
    benches,
    bench_observe_u64,
    bench_observe_str,
    bench_estimate,
    bench_merge,
    bench_bytes,
    bench_ull_compressed,
    bench_ull_compressed_population,
    bench_parallel,
    bench_fm,
    bench_ull_ell_observe,
    bench_ull_ell_observe_steady,
    bench_ull_ell_estimate,
    bench_ull_ell_merge,
    bench_fresh,
    bench_redis,
    bench_datasketches
);
criterion_main!(benches);
