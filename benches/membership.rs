//! Membership: the `synopses` Bloom and counting Bloom filters against peer crates.
//!
//! Run with `cargo bench -p synopses-benches --bench membership`. Every benchmark id reads
//! `family/operation/config/implementation`, e.g. `bloom/insert/1e6_1pct/synopses`: a Bloom
//! filter sized by each implementation's own constructor for 10^6 expected items at a 1 %
//! false-positive rate (about 9.6 bits per item, 7 hashes). The `counting_bloom` family
//! (`counting_bloom/insert/1e6_1pct/synopses`, ...) does the same for filters that also remove
//! items: `synopses`' `CountingBloom` with 4-bit counters (`synopses`, its default), 8-bit
//! (`synopses_8bit`) and 16-bit (`synopses_16bit`), against the peers' cuckoo filters (no peer
//! has a counting Bloom filter; a cuckoo filter is the structure that does the same job).
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
//! - `remove` (`counting_bloom` only): one iteration removes every other inserted item (`N/2`
//!   removals, the present half of the queries) from a copy of a filter that holds all `N`
//!   items. The copy is made in setup, untimed: a clone, except for probabilistic-collections,
//!   whose cuckoo filter has no `Clone` and is rebuilt by inserting the `N` items. Throughput is
//!   `N/2` elements.
//!
//! Before each query group, each implementation's measured false-positive rate (on the `N/2`
//! absent queries), its false negatives on the `N/2` present ones (must be 0), its shape and
//! its memory (bytes of the bit array or table; `synopses` reports `size_in_bytes`, which adds
//! its struct) are printed to stderr. Before `counting_bloom/remove`, each implementation's
//! failed removals, its false negatives on the `N/2` items kept and how many of the removed
//! items it still finds are printed too, and before `counting_bloom/merge`, whether the cuckoo
//! filter's union succeeded.
//!
//! The `bloom` family's peers, each used the way its documentation shows (so each with its own
//! hasher); all are *classic* Bloom filters (the `k` bits of an item anywhere in the array),
//! none blocked:
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
//!
//! The `counting_bloom` family. `synopses`' `CountingBloom` has the `m` and `k` of its `Bloom`
//! (`with_false_positive_rate(N, 0.01)`: m = 9 585 059 counters, k = 7, the same xxh3 hash and
//! positions, so it answers `contains` exactly as `Bloom` does: measured rate 0.9860 %); the
//! 8- and 16-bit filters come from `builder_for_false_positive_rate` with that width (the same `m`, `k`
//! and seed). Memory: 4 792 536 B of
//! counter words (4-bit), 9 585 064 B (8-bit), 19 170 120 B (16-bit), plus the struct. `remove`
//! decrements the `k` counters (an error, changing nothing, if one is zero); `merge` adds
//! counters lane by lane, saturating. Peers, each built by its own constructor for `N` items at
//! 1 %, with fixed seeds where it takes one; no peer has a counting Bloom filter:
//! - `pdatastructs` 0.7 `filters::cuckoofilter::CuckooFilter<u64, StdRng>` (features `rand`
//!   and `succinct`), `with_properties_4(0.01, N, StdRng::seed_from_u64(..))`: buckets of 4
//!   slots, fingerprints of l = ceil(log2(2·4/p)) = 10 bits, but n_buckets =
//!   next_pow2(ceil(n/0.95)) = 2^21, which divides by the load factor but not by the bucket
//!   size: 8 388 608 slots for 10^6 items (load 11.9 %), hence a measured rate of 0.0928 %, far
//!   below 1 %. Its table, a `succinct` `IntVector<u64>` of 10-bit fields, needs 10 485 760 B,
//!   but pdatastructs sizes the backing store as `64·slots/l` words instead of `slots·l/64`, so
//!   it allocates 429 496 736 B (the rest stays zero; `clone` copies all of it and `union`
//!   walks all of it, which is why its merge is slow). Three SipHash-1-3 per operation (`std`'s
//!   `DefaultHasher`, fixed keys, a 0 or 1 written first): fingerprint `1 + H0(x) mod (2^l −
//!   1)`, bucket `i1 = H1(x) mod n_buckets`, alternate `i2 = i1 ^ H1(fingerprint)`. Insertion
//!   kicks a random slot (the seeded `rand` 0.8 `StdRng`, ChaCha12, re-exported as
//!   `pdatastructs::rand`) up to 500 times, then returns `Err(CuckooFilterFull)` and leaves the
//!   filter unchanged; at this size no insertion fails (the stderr report counts them). It
//!   stores duplicates; `delete` removes one copy and reports whether it found one. `union`
//!   re-inserts every fingerprint of the other filter (may fail when full; checked, then
//!   timed).
//! - `probabilistic-collections` 0.7 `cuckoo::CuckooFilter<u64>`,
//!   `from_entries_per_index_with_hashers(N, 0.01, 4, ..)` (4 slots per bucket, its default):
//!   fingerprints of ceil(log2(2 / (1 − (1 − p)^(1/8)))) = 11 bits, next_pow2(n/4) = 262 144
//!   buckets, 1 048 576 slots (load 95.4 %), 1 441 792 B of packed fingerprints (a `Vec<u8>`).
//!   Measured rate about 0.37 %. Two SipHash-2-4 (`siphasher`, fixed keys here; its `new` seeds
//!   them from the thread RNG): the fingerprint is the low 11 bits of `H0(x)` (rehashed if
//!   zero), bucket `i1 = H1(x) mod buckets`, alternate `(i1 ^ fingerprint) mod buckets`; every
//!   slot read copies the fingerprint into a fresh `Vec<u8>`. Insertion kicks for up to 512
//!   rounds with an `XorShiftRng` seeded from entropy (it cannot be seeded, so runs differ
//!   slightly), and what still has no slot goes to a side list that every operation scans (35
//!   to 39 of the 10^6 items in trial runs; printed): it never fails. Its `insert` skips an
//!   item whose fingerprint its buckets already hold, and its `remove` clears every matching
//!   slot and returns nothing, so after the `remove` run it misses about 900 of the kept items
//!   (false negatives, printed). No union, no `Clone`.
//! - `datasketches`, `fastbloom` and `streaming_algorithms` have no filter that removes items.

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
use pdatastructs::filters::cuckoofilter::CuckooFilter as PdCuckoo;
use pdatastructs::rand::SeedableRng as _;
use pdatastructs::rand::rngs::StdRng;
use probabilistic_collections::SipHasherBuilder;
use probabilistic_collections::bloom::BloomFilter as PcBloom;
use probabilistic_collections::cuckoo::CuckooFilter as PcCuckoo;
use synopses::hash::DEFAULT_SEED;
use synopses::membership::{Bloom, CounterWidth, CountingBloom};
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
/// Seed of the RNG with which pdatastructs' cuckoo filter picks the fingerprints it kicks out.
const CUCKOO_RNG_SEED: u64 = 0xC0C0_5EED;
/// The `synopses` counting filters: implementation name and counter width.
const WIDTHS: [(&str, CounterWidth); 3] = [
    ("synopses", CounterWidth::Four),
    ("synopses_8bit", CounterWidth::Eight),
    ("synopses_16bit", CounterWidth::Sixteen),
];

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
    report_shape(name, &format!("m {bits:>8}, k {hashes}"), bytes, contains);
}

/// [`report`] for a filter whose shape is not `m` bits and `k` hashes, described by `shape`.
fn report_shape(name: &str, shape: &str, bytes: usize, contains: impl Fn(u64) -> bool) {
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
         {shape}, {bytes:>8} B",
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
    report("synopses", f.syn.bits() as u64, u64::from(f.syn.hashes()), f.syn.size_in_bytes(), |q| f.syn.contains(q));
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

/// The `synopses` counting filter with counters of `width` bits, of the size and hash count
/// that `with_false_positive_rate` picks for `N` items at `FPR`.
fn syn_counting(width: CounterWidth) -> CountingBloom {
    let builder = CountingBloom::builder_for_false_positive_rate(N as u64, FPR);
    builder.counter_width(width).build().expect("valid configuration")
}

type PdCuckooFilter = PdCuckoo<u64, StdRng>;

fn pd_cuckoo() -> PdCuckooFilter {
    PdCuckooFilter::with_properties_4(FPR, N, StdRng::seed_from_u64(CUCKOO_RNG_SEED))
}

fn pc_cuckoo() -> PcCuckoo<u64> {
    PcCuckoo::<u64>::from_entries_per_index_with_hashers(
        N,
        FPR,
        4,
        [SipHasherBuilder::from_seed(1, 2), SipHasherBuilder::from_seed(3, 4)],
    )
}

fn pd_cuckoo_insert(s: &mut PdCuckooFilter, x: u64) {
    // A full filter answers `Err(CuckooFilterFull)` and stays unchanged, `len` included, so
    // `N − len` counts the failures; the query report prints them (the fill is seeded, so the
    // timed fills fail the same way).
    let _ = s.insert(&x);
}

fn pc_cuckoo_insert(s: &mut PcCuckoo<u64>, x: u64) {
    s.insert(&x);
}

/// Bytes pdatastructs allocates for a cuckoo table: its `all_zero_intvector` asks `succinct` for
/// `ceil(64·slots / l)` `u64` blocks (instead of `ceil(slots·l / 64)`).
fn pd_cuckoo_allocated(s: &PdCuckooFilter) -> usize {
    (64 * s.n_buckets() * s.bucketsize()).div_ceil(s.l_fingerprint()) * 8
}

/// Bytes of a cuckoo table of `slots` fingerprints of `bits` bits, packed.
fn packed_bytes(slots: usize, bits: usize) -> usize {
    (slots * bits).div_ceil(8)
}

fn bench_counting_insert(c: &mut Criterion) {
    let items = &data().items[..];
    let mut g = big_group(c, "counting_bloom/insert");
    g.throughput(Throughput::Elements(items.len() as u64));
    for (name, width) in WIDTHS {
        insert_case(&mut g, name, items, || syn_counting(width), |s, x| s.observe(x));
    }
    insert_case(&mut g, "pdatastructs", items, pd_cuckoo, pd_cuckoo_insert);
    insert_case(&mut g, "probabilistic_collections", items, pc_cuckoo, pc_cuckoo_insert);
    g.finish();
}

/// Counting filters of every implementation that hold all the items.
struct FullCounting {
    /// One per entry of [`WIDTHS`].
    syn: [CountingBloom; 3],
    pd: PdCuckooFilter,
    pc: PcCuckoo<u64>,
}

fn full_counting(items: &[u64]) -> FullCounting {
    FullCounting {
        syn: WIDTHS.map(|(_, width)| filled(items, || syn_counting(width), |s, x| s.observe(x))),
        pd: filled(items, pd_cuckoo, pd_cuckoo_insert),
        pc: filled(items, pc_cuckoo, pc_cuckoo_insert),
    }
}

fn bench_counting_query(c: &mut Criterion) {
    let d = data();
    let f = full_counting(&d.items);
    eprintln!(
        "counting query inputs {CFG}: {N} items inserted, {N} queries ({} present, {} absent), per filter:",
        d.present.iter().filter(|&&p| p).count(),
        d.present.iter().filter(|&&p| !p).count(),
    );
    for ((name, _), s) in WIDTHS.iter().zip(&f.syn) {
        let shape = format!(
            "m {:>8}, k {}, {:>2}-bit counters, {} saturated",
            s.counters(),
            s.hashes(),
            s.counter_width().bits(),
            s.saturated_counters()
        );
        report_shape(name, &shape, s.size_in_bytes(), |q| s.contains(q));
    }
    let slots = f.pd.n_buckets() * f.pd.bucketsize();
    let shape = format!(
        "{} buckets x {} slots x {}-bit fingerprints ({} B used), {} of {N} insertions failed (full)",
        f.pd.n_buckets(),
        f.pd.bucketsize(),
        f.pd.l_fingerprint(),
        packed_bytes(slots, f.pd.l_fingerprint()),
        N - f.pd.len(),
    );
    report_shape("pdatastructs", &shape, pd_cuckoo_allocated(&f.pd), |q| f.pd.query(&q));
    let shape = format!(
        "{} buckets x {} slots x {}-bit fingerprints, {} slots used, {} items on its side list",
        f.pc.bucket_len(),
        f.pc.entries_per_index(),
        f.pc.fingerprint_bit_count(),
        f.pc.len(),
        f.pc.extra_items_len(),
    );
    report_shape(
        "probabilistic_collections",
        &shape,
        packed_bytes(f.pc.capacity(), f.pc.fingerprint_bit_count()),
        |q| f.pc.contains(&q),
    );

    let queries = &d.queries[..];
    let mut g = big_group(c, "counting_bloom/query");
    g.throughput(Throughput::Elements(queries.len() as u64));
    for ((name, _), s) in WIDTHS.iter().zip(&f.syn) {
        query_case(&mut g, name, queries, s, |s, q| s.contains(q));
    }
    query_case(&mut g, "pdatastructs", queries, &f.pd, |s, q| s.query(&q));
    query_case(&mut g, "probabilistic_collections", queries, &f.pc, |s, q| s.contains(&q));
    g.finish();
}

/// Removes one occurrence of `x`: `Some(false)` if one of its counters was zero (nothing changed).
fn syn_remove(s: &mut CountingBloom, x: u64) -> Option<bool> {
    Some(s.remove(x).is_ok())
}

/// Deletes one copy of `x`'s fingerprint: `Some(false)` if neither bucket held one.
fn pd_remove(s: &mut PdCuckooFilter, x: u64) -> Option<bool> {
    Some(s.delete(&x))
}

/// Clears every slot of `x`'s buckets that holds its fingerprint: `None`, it does not say
/// whether it found one.
fn pc_remove(s: &mut PcCuckoo<u64>, x: u64) -> Option<bool> {
    s.remove(&x);
    None
}

/// Removes every item of `removed` from `s`, then prints the failed removals, the false
/// negatives on the items `kept` (must be 0) and how many removed items `s` still finds.
fn removal_report<S>(
    name: &str,
    mut s: S,
    removed: &[u64],
    kept: &[u64],
    remove: impl Fn(&mut S, u64) -> Option<bool>,
    contains: impl Fn(&S, u64) -> bool,
) {
    let results: Vec<Option<bool>> = removed.iter().map(|&x| remove(&mut s, x)).collect();
    let failed = if results.iter().all(Option::is_some) {
        results.iter().filter(|&&r| r == Some(false)).count().to_string()
    } else {
        "(not reported)".to_owned()
    };
    let false_neg = kept.iter().filter(|&&x| !contains(&s, x)).count();
    let still = removed.iter().filter(|&&x| contains(&s, x)).count();
    eprintln!(
        "  {name:<26} failed removals {failed}, false negatives {false_neg} of {} kept, \
         {still} of {} removed still found",
        kept.len(),
        removed.len(),
    );
}

/// Times removing every item of `removed` from a full filter from `make` (untimed).
fn remove_case<S>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    removed: &[u64],
    make: impl Fn() -> S,
    remove: impl Fn(&mut S, u64) -> Option<bool>,
) {
    g.bench_function(id(name), |b| {
        b.iter_batched(
            &make,
            |mut s| {
                let mut failed = 0u64;
                for &x in removed {
                    failed += u64::from(remove(&mut s, x) == Some(false));
                }
                (s, failed)
            },
            BatchSize::LargeInput,
        );
    });
}

fn bench_counting_remove(c: &mut Criterion) {
    let items = &data().items[..];
    // Removed: the even-indexed items (the present queries); kept: the odd-indexed ones.
    let removed: Vec<u64> = items.iter().step_by(2).copied().collect();
    let kept: Vec<u64> = items.iter().skip(1).step_by(2).copied().collect();
    let f = full_counting(items);
    eprintln!("counting remove inputs {CFG}: {N} items inserted, {} removed, per filter:", removed.len());
    for ((name, _), s) in WIDTHS.iter().zip(&f.syn) {
        removal_report(name, s.clone(), &removed, &kept, syn_remove, |s, x| s.contains(x));
    }
    removal_report("pdatastructs", f.pd.clone(), &removed, &kept, pd_remove, |s, x| s.query(&x));
    removal_report("probabilistic_collections", f.pc, &removed, &kept, pc_remove, |s, x| s.contains(&x));

    let mut g = big_group(c, "counting_bloom/remove");
    g.throughput(Throughput::Elements(removed.len() as u64));
    for ((name, _), s) in WIDTHS.iter().zip(&f.syn) {
        remove_case(&mut g, name, &removed, || s.clone(), syn_remove);
    }
    remove_case(&mut g, "pdatastructs", &removed, || f.pd.clone(), pd_remove);
    // No `Clone`: rebuilt from the items in the (untimed) setup.
    remove_case(
        &mut g,
        "probabilistic_collections",
        &removed,
        || filled(items, pc_cuckoo, pc_cuckoo_insert),
        pc_remove,
    );
    g.finish();
}

fn bench_counting_merge(c: &mut Criterion) {
    let items = &data().items[..];
    let (l, r) = items.split_at(N / 2);
    // The few samples of a big group: pdatastructs' union takes most of a second.
    let mut g = big_group(c, "counting_bloom/merge");

    for (name, width) in WIDTHS {
        let left = filled(l, || syn_counting(width), |s, x| s.observe(x));
        let right = filled(r, || syn_counting(width), |s, x| s.observe(x));
        merge_case(&mut g, id(name), &left, &right, |t, o| t.merge(o).expect("same config"));
    }

    // pdatastructs' union re-inserts the other filter's fingerprints and fails if the filter
    // fills up. A trial on a clone (same RNG state, so the same outcome as the timed runs)
    // checks that it does not.
    let left = filled(l, pd_cuckoo, pd_cuckoo_insert);
    let right = filled(r, pd_cuckoo, pd_cuckoo_insert);
    let mut trial = left.clone();
    match trial.union(&right) {
        Ok(()) => {
            let false_neg = items.iter().filter(|&&x| !trial.query(&x)).count();
            eprintln!(
                "counting merge {CFG}: pdatastructs union holds {} items, false negatives {false_neg}",
                trial.len()
            );
            drop(trial);
            merge_case(&mut g, id("pdatastructs"), &left, &right, |t, o| {
                black_box(t.union(o).is_ok());
            });
        }
        Err(_) => eprintln!("counting merge {CFG}: pdatastructs union failed (filter full), not timed"),
    }

    // probabilistic-collections' CuckooFilter has no union and no `Clone`.
    g.finish();
}

criterion_group!(
    benches,
    bench_insert,
    bench_query,
    bench_merge,
    bench_counting_insert,
    bench_counting_query,
    bench_counting_remove,
    bench_counting_merge
);
criterion_main!(benches);
