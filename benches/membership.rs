//! Membership: the `synopses` Bloom filter against peer crates.
//!
//! Run with `cargo bench --all-features --bench membership`. Every benchmark id reads
//! `family/operation/config/implementation`, e.g. `bloom/insert/1e6_1pct/synopses`: a Bloom
//! filter sized by each implementation's own constructor for 10^6 expected items at a 1 %
//! false-positive rate (about 9.6 bits per item, 7 hashes).
//!
//! Data: `N` = 1M distinct `u64` items to insert (seeded splitmix64, a bijection of its
//! counter), and `N` queries: every other inserted item (present, `N/2`) and the next `N/2`
//! outputs of the same generator (absent: distinct from every inserted item), shuffled
//! together by a seeded Fisher-Yates, so present and absent queries interleave unpredictably.
//!
//! Timing model:
//! - `insert`: one iteration inserts all `N` items into a fresh filter. The empty filter is made
//!   by `iter_batched`'s setup (`BatchSize::LargeInput`), outside the timing; the filled filter
//!   is returned and dropped outside the timing too. Throughput is `N` elements, so time / `N`
//!   is ns per item.
//! - `query`: one iteration asks `contains` for each of the `N` queries on a filter that holds
//!   all `N` items, counting hits into a sum (`black_box`ed). Throughput is `N` elements. Half
//!   the queries are absent and most of those stop at their first unset bit, as in real use.
//! - `merge`: merge a filter of the second 500k items into a clone (made in setup, untimed) of
//!   a filter of the first 500k items, both sized for 10^6 items.
//!
//! Before the query group, each implementation's measured false-positive rate (on the `N/2`
//! absent queries), its false negatives on the `N/2` present ones (must be 0), its `m` and `k`
//! and its memory (bytes of the bit array; `synopses` reports `size_in_bytes`, which adds its
//! struct) are printed to stderr.
//!
//! Peers, each used the way its documentation shows (so each with its own hasher); all are
//! *classic* Bloom filters (the `k` bits of an item anywhere in the array), none blocked:
//! - `fastbloom` 0.17 `BloomFilter`, `with_false_pos(0.01).seed(..).expected_items(N)`:
//!   m = 9 585 088 (rounded up to whole `u64` words), k = round(m/n · ln 2) = 7. One SipHash-1-3
//!   (`siphasher`, 128-bit key; `seed` fixes it, by default it is random) through
//!   `std::hash::Hash`, the other `k − 1` positions by `h = h.rotl(5) + h·π-constant`, mapped by
//!   multiply-shift. `union` ORs the words (panics on a mismatch).
//! - `datasketches` 0.6 `bloom::BloomFilter` (feature `bloom`),
//!   `BloomFilterBuilder::with_accuracy(N, 0.01)`: m = 9 585 088 (rounded up to `u64` words),
//!   k = ceil(m/n · ln 2) = 7. Two XXHash64 passes through `std::hash::Hash` (seed 9001, then
//!   seed `h0`), positions `((h0 + i·h1) >> 1) % m`; it keeps a count of set bits, so `insert`
//!   tests each bit first. `union` ORs and recounts (errors on a mismatch).
//! - `pdatastructs` 0.7 `filters::bloomfilter::BloomFilter<u64>` (feature `fixedbitset`),
//!   `with_properties(N, 0.01)`: m = floor(−n·ln p / ln²2) = 9 585 058 but k = floor(log2(1/p))
//!   = **6**, so it does one hash fewer and gets a slightly higher rate. Two SipHash-1-3 (`std`'s
//!   `DefaultHasher`, fixed keys, the index written first), positions
//!   `(h1 + i·h2 + f_i) % m` over a `FixedBitSet` of `u32` blocks. `Filter::union` (panics on a
//!   mismatch).
//! - `probabilistic-collections` 0.7 `bloom::BloomFilter<u64>`, `with_hashers(N, 0.01, ..)`:
//!   m = ceil(log2(1/p) · n / ln 2) = 9 585 059, k = ceil(m/n · ln 2) = 7. Two SipHash-2-4
//!   (`siphasher`) combined by enhanced double hashing, `% m`, over a `Vec<u8>`. Its `new` seeds
//!   the two hashers from the thread RNG; here they get fixed keys (same cost). No union, no
//!   `Clone`.
//! - `streaming_algorithms` 0.3 has no Bloom filter (its Count-Min is a counting sketch).
//! - `xxh3_floor`: no filter, only `xxh3_64_with_seed` over the same bytes `synopses` hashes,
//!   xor-folded (insert) or summed (query) into an accumulator: the cost of the hash alone.

mod common;
use common::{DATA_SEED, big_group, filled, merge_case, small_group, splitmix64};
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use datasketches::bloom::{BloomFilter as DsBloom, BloomFilterBuilder};
use fastbloom::BloomFilter as FbBloom;
use pdatastructs::filters::Filter as _;
use pdatastructs::filters::bloomfilter::BloomFilter as PdBloom;
use probabilistic_collections::SipHasherBuilder;
use probabilistic_collections::bloom::BloomFilter as PcBloom;
use synopses::hash::DEFAULT_SEED;
use synopses::membership::Bloom;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Items inserted per insert iteration, and items held by the filters of `query`; also the
/// number of queries.
const N: usize = 1_000_000;
/// The design false-positive rate of every filter.
const FPR: f64 = 0.01;
/// Seed of the query shuffle.
const SHUFFLE_SEED: u64 = 0x0F1E_2D3C_4B5A_6978;
/// Key of fastbloom's SipHash (fixed so that filters merge and runs repeat).
const FASTBLOOM_SEED: u128 = 0x5EED;
/// The configuration of every filter: expected items and false-positive rate.
const CFG: &str = "1e6_1pct";

struct Data {
    /// The `N` distinct items inserted.
    items: Vec<u64>,
    /// The `N` queries, shuffled: `N/2` of `items` and `N/2` values not in `items`.
    queries: Vec<u64>,
    /// `present[i]`: whether `queries[i]` is in `items`.
    present: Vec<bool>,
}

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut state = DATA_SEED;
        let items: Vec<u64> = (0..N).map(|_| splitmix64(&mut state)).collect();
        // Present: every other inserted item. Absent: the generator's next outputs, distinct
        // from all `N` items because splitmix64 never repeats within 2^64 steps.
        let mut tagged: Vec<(u64, bool)> = items.iter().step_by(2).map(|&x| (x, true)).collect();
        tagged.extend((0..N / 2).map(|_| (splitmix64(&mut state), false)));
        let mut shuffle = SHUFFLE_SEED;
        for i in (1..tagged.len()).rev() {
            // Multiply-shift onto 0..=i: bias below 2^-40, irrelevant here.
            let j = ((u128::from(splitmix64(&mut shuffle)) * (i as u128 + 1)) >> 64) as usize;
            tagged.swap(i, j);
        }
        let (queries, present) = tagged.into_iter().unzip();
        Data { items, queries, present }
    })
}

fn id(name: &str) -> BenchmarkId {
    BenchmarkId::new(CFG, name)
}

fn syn_bloom() -> Bloom {
    Bloom::with_false_positive_rate(N as u64, FPR).expect("valid configuration")
}

fn fb_bloom() -> FbBloom {
    FbBloom::with_false_pos(FPR).seed(&FASTBLOOM_SEED).expected_items(N)
}

fn ds_bloom() -> DsBloom {
    BloomFilterBuilder::with_accuracy(N as u64, FPR).build().expect("valid configuration")
}

fn pd_bloom() -> PdBloom<u64> {
    PdBloom::<u64>::with_properties(N, FPR)
}

fn pc_bloom() -> PcBloom<u64> {
    PcBloom::<u64>::with_hashers(N, FPR, [SipHasherBuilder::from_seed(1, 2), SipHasherBuilder::from_seed(3, 4)])
}

fn pd_insert(s: &mut PdBloom<u64>, x: u64) {
    let Ok(_) = s.insert(&x);
}

/// Times inserting every item of `items` into a fresh filter from `make`.
fn insert_case<S>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    items: &[u64],
    make: impl Fn() -> S,
    push: impl Fn(&mut S, u64),
) {
    g.bench_function(id(name), |b| {
        b.iter_batched(
            &make,
            |mut s| {
                for &x in items {
                    push(&mut s, x);
                }
                s
            },
            BatchSize::LargeInput,
        );
    });
}

fn bench_insert(c: &mut Criterion) {
    let items = &data().items[..];
    let mut g = big_group(c, "bloom/insert");
    g.throughput(Throughput::Elements(items.len() as u64));
    insert_case(
        &mut g,
        "xxh3_floor",
        items,
        || 0u64,
        |acc, x| {
            *acc ^= xxh3_64_with_seed(&x.to_le_bytes(), DEFAULT_SEED);
        },
    );
    insert_case(&mut g, "synopses", items, syn_bloom, |s, x| s.observe(x));
    // The batch entry point, against the per-item loop above.
    g.bench_function(id("synopses_observe_all"), |b| {
        b.iter_batched(
            syn_bloom,
            |mut s| {
                s.observe_all(items);
                s
            },
            BatchSize::LargeInput,
        );
    });
    insert_case(&mut g, "fastbloom", items, fb_bloom, |s, x| {
        s.insert(&x);
    });
    insert_case(&mut g, "datasketches", items, ds_bloom, |s, x| s.insert(x));
    insert_case(&mut g, "pdatastructs", items, pd_bloom, pd_insert);
    insert_case(&mut g, "probabilistic_collections", items, pc_bloom, |s, x| s.insert(&x));
    g.finish();
}

/// Filters of every implementation that hold all the items.
struct Full {
    syn: Bloom,
    fb: FbBloom,
    ds: DsBloom,
    pd: PdBloom<u64>,
    pc: PcBloom<u64>,
}

fn full(items: &[u64]) -> Full {
    let mut f = Full { syn: syn_bloom(), fb: fb_bloom(), ds: ds_bloom(), pd: pd_bloom(), pc: pc_bloom() };
    for &x in items {
        f.syn.observe(x);
        f.fb.insert(&x);
        f.ds.insert(x);
        pd_insert(&mut f.pd, x);
        f.pc.insert(&x);
    }
    f
}

/// Prints the measured false-positive rate on the absent queries, the false negatives on the
/// present ones (must be 0), the filter's shape and its memory.
fn report(name: &str, bits: u64, hashes: u64, bytes: usize, contains: impl Fn(u64) -> bool) {
    let d = data();
    let (mut false_pos, mut absent, mut false_neg) = (0usize, 0usize, 0usize);
    for (&q, &present) in d.queries.iter().zip(&d.present) {
        let hit = contains(q);
        if present {
            false_neg += usize::from(!hit);
        } else {
            absent += 1;
            false_pos += usize::from(hit);
        }
    }
    eprintln!(
        "  {name:<26} fpr {:>7.4} % ({false_pos:>5} of {absent}), false negatives {false_neg}, \
         m {bits:>8}, k {hashes}, {bytes:>8} B",
        100.0 * false_pos as f64 / absent as f64,
    );
}

/// Times asking `contains` for every query of `queries` on `s`, counting the hits.
fn query_case<S>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    queries: &[u64],
    s: &S,
    contains: impl Fn(&S, u64) -> bool,
) {
    g.bench_function(id(name), |b| {
        b.iter(|| {
            let s = black_box(s);
            let mut hits = 0u64;
            for &q in queries {
                hits += u64::from(contains(s, q));
            }
            black_box(hits)
        })
    });
}

fn bench_query(c: &mut Criterion) {
    let d = data();
    let f = full(&d.items);
    eprintln!(
        "query inputs {CFG}: {N} items inserted, {N} queries ({} present, {} absent), per filter:",
        d.present.iter().filter(|&&p| p).count(),
        d.present.iter().filter(|&&p| !p).count(),
    );
    report("synopses", f.syn.bits(), u64::from(f.syn.hashes()), f.syn.size_in_bytes(), |q| f.syn.contains(q));
    report("fastbloom", f.fb.num_bits() as u64, u64::from(f.fb.num_hashes()), size_of_val(f.fb.as_slice()), |q| {
        f.fb.contains(&q)
    });
    report("datasketches", f.ds.capacity() as u64, u64::from(f.ds.num_hashes()), f.ds.estimated_size(), |q| {
        f.ds.contains(&q)
    });
    // FixedBitSet 0.4 stores `u32` blocks.
    report("pdatastructs", f.pd.m() as u64, f.pd.k() as u64, f.pd.m().div_ceil(32) * 4, |q| f.pd.query(&q));
    report("probabilistic_collections", f.pc.len() as u64, f.pc.hasher_count() as u64, f.pc.len().div_ceil(8), |q| {
        f.pc.contains(&q)
    });

    let queries = &d.queries[..];
    let mut g = big_group(c, "bloom/query");
    g.throughput(Throughput::Elements(queries.len() as u64));
    query_case(&mut g, "xxh3_floor", queries, &(), |_, q| xxh3_64_with_seed(&q.to_le_bytes(), DEFAULT_SEED) & 1 == 1);
    query_case(&mut g, "synopses", queries, &f.syn, |s, q| s.contains(q));
    query_case(&mut g, "fastbloom", queries, &f.fb, |s, q| s.contains(&q));
    query_case(&mut g, "datasketches", queries, &f.ds, |s, q| s.contains(&q));
    query_case(&mut g, "pdatastructs", queries, &f.pd, |s, q| s.query(&q));
    query_case(&mut g, "probabilistic_collections", queries, &f.pc, |s, q| s.contains(&q));
    g.finish();
}

fn bench_merge(c: &mut Criterion) {
    let (l, r) = data().items.split_at(N / 2);
    let mut g = small_group(c, "bloom/merge");

    let left = filled(l, syn_bloom, |s, x| s.observe(x));
    let right = filled(r, syn_bloom, |s, x| s.observe(x));
    merge_case(&mut g, id("synopses"), &left, &right, |t, o| t.merge(o).expect("same config"));

    let left = filled(l, fb_bloom, |s, x| {
        s.insert(&x);
    });
    let right = filled(r, fb_bloom, |s, x| {
        s.insert(&x);
    });
    merge_case(&mut g, id("fastbloom"), &left, &right, |t, o| t.union(o));

    let left = filled(l, ds_bloom, |s, x| s.insert(x));
    let right = filled(r, ds_bloom, |s, x| s.insert(x));
    merge_case(&mut g, id("datasketches"), &left, &right, |t, o| t.union(o).expect("same config"));

    let left = filled(l, pd_bloom, pd_insert);
    let right = filled(r, pd_bloom, pd_insert);
    merge_case(&mut g, id("pdatastructs"), &left, &right, |t, o| {
        let Ok(()) = t.union(o);
    });

    // probabilistic-collections' BloomFilter has no union and no `Clone`.
    g.finish();
}

criterion_group!(benches, bench_insert, bench_query, bench_merge);
criterion_main!(benches);
