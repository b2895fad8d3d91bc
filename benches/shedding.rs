//! Load shedding: what a shedder costs per offered item.
//!
//! Run with `cargo bench -p synopses-benches --bench shedding`. Ids read
//! `shedding/operation/keep_probability/implementation`.
//!
//! Data: `N` = 10^7 distinct `u64` items (seeded splitmix64). No peer crate sheds load, so the
//! comparison is with the floor: a loop that only reads every item and sums it.
//!
//! Timing model: one iteration offers all `N` items to a fresh shedder (made in the untimed
//! setup) with a fixed keep probability, in front of an inner operator that only counts the
//! kept items (so the time is the shedder's, not the work behind it).
//! Throughput is `N` elements: time / `N` is ns per offered item. The goal: under
//! 2 ns per offered item at p = 0.1, 0.5 and 0.9.
//!
//! - `observe`: `LoadShedder::observe` per item, with `RandomDrop` (geometric runs) and
//!   `KeyHashDrop` (one xxh3 per item).
//! - `random_slice_horvitz_thompson`: the batch path in front of a Horvitz–Thompson
//!   estimator, what a shedder that estimates sums costs per offered item.
//! - `horvitz_thompson`: the estimator's cost per kept item, its mean and its merge.
//! - `random_slice`, `key_hash_slice`: `LoadShedder::observe_slice` over the whole slice, the
//!   batch path: the random policy passes over runs of drops (or decides 64 items per few
//!   random words) without reading them; the key-hash policy hashes 64 items into a list of
//!   the kept ones without a branch.

mod common;
use common::{DATA_SEED, big_group, splitmix64};
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use synopses::core::{Mergeable, Operator, Weight};
use synopses::shedding::{FixedRate, HorvitzThompson, KeyHashDrop, LoadShedder, RandomDrop};

const N: usize = 10_000_000;
const PROBABILITIES: [f64; 3] = [0.1, 0.5, 0.9];

fn items() -> &'static [u64] {
    static ITEMS: OnceLock<Vec<u64>> = OnceLock::new();
    ITEMS.get_or_init(|| {
        let mut state = DATA_SEED;
        (0..N).map(|_| splitmix64(&mut state)).collect()
    })
}

/// The cheapest inner operator: counts the kept items. (Summing their weights too makes a
/// floating-point dependency chain, about 4 cycles per kept item, that would be the inner
/// operator's cost, not the shedder's.)
#[derive(Default)]
struct Tally {
    kept: u64,
}

impl Operator<(u64, Weight)> for Tally {
    fn observe(&mut self, _: (u64, Weight)) {
        self.kept += 1;
    }
}

fn bench_observe(c: &mut Criterion) {
    let items = items();
    let mut g = big_group(c, "shedding/observe");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("floor", |b| b.iter(|| black_box(items).iter().fold(0_u64, |acc, &x| acc.wrapping_add(x))));
    for p in PROBABILITIES {
        let fixed = FixedRate::new(p).expect("valid probability");
        g.bench_function(BenchmarkId::new(format!("p{p}"), "random"), |b| {
            b.iter_batched(
                || LoadShedder::new(Tally::default(), RandomDrop::new(7), fixed),
                |mut s| {
                    for &x in items {
                        s.observe(x);
                    }
                    s
                },
                BatchSize::LargeInput,
            );
        });
        g.bench_function(BenchmarkId::new(format!("p{p}"), "key_hash"), |b| {
            b.iter_batched(
                || LoadShedder::new(Tally::default(), KeyHashDrop::new(), fixed),
                |mut s| {
                    for &x in items {
                        s.observe(x);
                    }
                    s
                },
                BatchSize::LargeInput,
            );
        });
        g.bench_function(BenchmarkId::new(format!("p{p}"), "random_slice"), |b| {
            b.iter_batched(
                || LoadShedder::new(Tally::default(), RandomDrop::new(7), fixed),
                |mut s| {
                    s.observe_slice(items);
                    s
                },
                BatchSize::LargeInput,
            );
        });
        g.bench_function(BenchmarkId::new(format!("p{p}"), "random_slice_horvitz_thompson"), |b| {
            b.iter_batched(
                || LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(7), fixed),
                |mut s| {
                    s.observe_slice(items);
                    s
                },
                BatchSize::LargeInput,
            );
        });
        g.bench_function(BenchmarkId::new(format!("p{p}"), "key_hash_slice"), |b| {
            b.iter_batched(
                || LoadShedder::new(Tally::default(), KeyHashDrop::new(), fixed),
                |mut s| {
                    s.observe_slice(items);
                    s
                },
                BatchSize::LargeInput,
            );
        });
    }
    g.finish();
}

/// The Horvitz–Thompson estimator behind a shedder: what it costs per kept item to add a
/// value and its weight to its sums (`observe_weighted`), to answer the mean (`mean`), and to merge.
/// Weights `1/p` for p from 0.1 to 1, values from 0 to 1000.
fn bench_horvitz_thompson(c: &mut Criterion) {
    let kept: Vec<(f64, Weight)> = items()[..1_000_000]
        .iter()
        .map(|&x| ((x % 1000) as f64, Weight::new(1.0 + (x >> 60) as f64 * 0.6).expect("a weight")))
        .collect();
    let mut g = big_group(c, "shedding/horvitz_thompson");
    g.throughput(Throughput::Elements(kept.len() as u64));
    g.bench_function("observe", |b| {
        b.iter(|| {
            let mut ht = HorvitzThompson::new();
            kept.iter().for_each(|&(v, w)| ht.observe_weighted(v, w));
            ht
        });
    });
    let mut full = HorvitzThompson::new();
    kept.iter().for_each(|&(v, w)| full.observe_weighted(v, w));
    g.throughput(Throughput::Elements(1));
    g.bench_function("mean", |b| b.iter(|| black_box(&full).mean()));
    g.bench_function("merge", |b| {
        b.iter(|| {
            let mut a = *black_box(&full);
            a.merge(black_box(&full)).expect("estimators merge");
            a
        });
    });
    g.finish();
}

criterion_group!(benches, bench_observe, bench_horvitz_thompson);
criterion_main!(benches);
