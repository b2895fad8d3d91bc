//! Frequency sketches: the `synopses` Count-Min sketch and heavy-hitters summary against peer
//! crates.
//!
//! Run with `cargo bench -p synopses-benches --bench frequency`. Every benchmark id reads
//! `family/operation/config/implementation`, e.g. `countmin/update/4096x5/synopses`: a
//! Count-Min sketch of width 4096 (counters per row) and depth 5 (rows) everywhere, or
//! `heavy_hitters/top10/k1000/synopses`: a heavy-hitters summary of about 1000 counters.
//!
//! Data: `N` = 1M `u64` items drawn from a Zipf(1.0) distribution over `KEYS` = 100k distinct
//! keys (inverse CDF over precomputed cumulative weights, binary search, uniforms from a seeded
//! splitmix64), so a few keys are hot and most are rare, as in real frequency workloads.
//!
//! Timing model:
//! - `update`: one iteration inserts all `N` items (count 1 each) into a fresh sketch. The empty
//!   sketch is made by `iter_batched`'s setup (`BatchSize::LargeInput`), outside the timing; the
//!   filled sketch is returned and dropped outside the timing too. Throughput is `N` elements,
//!   so time / `N` is ns per item.
//! - `query`: one iteration asks for the point estimate of each of the `KEYS` keys (once each,
//!   in rank order) on a sketch that has seen all `N` items. Throughput is `KEYS` elements.
//! - `merge`: merge a sketch of the second 500k items into a clone (made in setup, untimed) of a
//!   sketch of the first 500k items.
//!
//! Peers, each used the way its documentation shows (so each with its own hasher):
//! - `datasketches` 0.6 `countmin::CountMinSketch<u64>` (feature `countmin`), `new(5, 4096)`:
//!   standard update, one MurmurHash3 x64/128 per row (per-row seeds derived from 9001) through
//!   `std::hash::Hash`; `merge` adds the tables.
//! - `pdatastructs` 0.7 `countminsketch::CountMinSketch<u64, u64>`, `with_params(4096, 5)`:
//!   standard update, two SipHash-1-3 hashes (`std`'s `DefaultHasher`, fixed keys) combined by
//!   enhanced double hashing and `%`; `merge` collects a new table.
//! - `probabilistic-collections` 0.7 `count_min_sketch::CountMinSketch<CountMinStrategy, u64>`,
//!   `with_hashers(5, 4096, ..)`: standard update on `i64` counters, two SipHash-2-4 hashes
//!   (`siphasher`) combined by double hashing and `%`. Its `new` seeds the two hashers from
//!   the thread RNG; here they get fixed keys (same cost). No merge, no `Clone`.
//! - `streaming_algorithms` 0.3 `CountMinSketch<u64, u64>`, `new(p, 2/4096, ())` with
//!   `p = 1 - 2^-5.5` (its depth is `floor(-log2(1 - p))` = 5, its width the power of two
//!   `round(2 / tolerance)` = 4096): *conservative* update (always, for integer counters),
//!   `twox-hash` XXH64 (seed 0) streamed once per row; no merge of whole sketches. Compare it
//!   with `synopses_conservative`.
//! - `synopses_32bit`, `synopses_16bit`: `synopses` with narrower saturating counters (half and a
//!   quarter of the memory; at 16 bits the hottest key, 82 888 times, saturates its counters).
//! - `xxh3_floor`: no sketch, only `xxh3_64_with_seed` over the same bytes `synopses` hashes,
//!   xor-folded into an accumulator: the cost of the hash alone.
//!
//! Heavy hitters (`heavy_hitters/*/k1000`), same items, same timing model for `update` and
//! `merge`; `synopses` is `HeavyHitters::<u64>::new(1000)` (Misra–Gries, 1000 to 2000 counters,
//! error at most `N/1001`), `synopses_observe_all` its batch entry point. `top10`: one iteration
//! asks a summary that saw all `N` items for its 10 largest items with their counts, the
//! cheapest way its public API allows. The bench prints to stderr how many of the true top-10
//! keys (counted exactly from the items) each top 10 holds, after `update` and after `merge`.
//! Peers:
//! - `datasketches` 0.6 `frequencies::FrequentItemsSketch<u64>` (feature `frequencies`),
//!   `new(2048)`: the Misra–Gries variant of Anderson et al. (2017) in a linear-probing map
//!   (MurmurHash3 through `std::hash::Hash`) of 2048 slots, purged by the median of a sample of
//!   counts once it holds more than `0.75 * 2048` = 1536 counters: the smallest power-of-two map
//!   with at least 1000 counters (error at most `3.5 N / 2048`). Top 10: the first 10 rows of
//!   `frequent_items(NoFalseNegatives)` (every kept item, cloned and sorted). `merge` re-inserts
//!   the other's counters.
//! - `topk` 0.7 `FilteredSpaceSaving<u64>`, `new(1000)`: Filtered Space-Saving, 1000 monitored
//!   items in a priority queue (`ahash`, randomly seeded) plus `6 * 1000` filter counters
//!   (`AHasher`, fixed keys); counts over-estimate. Top 10: `iter()` (arbitrary order, as
//!   `into_sorted_vec` consumes the summary) sorted by count, first 10. `merge` sums the monitored
//!   counts, using the filter counters for keys one side does not monitor.
//! - `streaming_algorithms` 0.3 `Top<u64, u64>`, `new(1000, p, 2/4096, ())`: 1000 tracked keys in
//!   an ordered linked hash map, the other keys in the conservative-update Count-Min sketch of
//!   `countmin/*/streaming_algorithms` (4096x5); no error bound. Top 10: the first 10 of
//!   `iter()` (already in descending order). Its merge is `+=`, which consumes the other
//!   summary: both clones are made in the untimed setup. It sums the two top lists and pushes
//!   them into a cleared summary, dropping both Count-Min sketches.
//! - not timed: `pdatastructs` 0.7 `topk::cmsheap::CMSHeap` (Count-Min plus `BTreeSet`) exposes
//!   no counts and no merge (its `LossyCounter` no counts either), and the bench keeps to three
//!   peers.

mod common;
use common::{DATA_SEED, big_group, filled, merge_case, merge_owned_case, small_group, splitmix64};
use std::cmp::Reverse;
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use datasketches::countmin::CountMinSketch as DsCountMin;
use datasketches::frequencies::{ErrorType, FrequentItemsSketch as DsFrequent};
use pdatastructs::countminsketch::CountMinSketch as PdCountMin;
use probabilistic_collections::SipHasherBuilder;
use probabilistic_collections::count_min_sketch::{CountMinSketch as PcCountMin, CountMinStrategy};
use streaming_algorithms::{CountMinSketch as SaCountMin, Top as SaTop};
use synopses::frequency::{CountMin, HeavyHitters, Update};
use synopses::hash::DEFAULT_SEED;
use synopses::membership::CounterWidth;
use topk::FilteredSpaceSaving;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Items per update iteration, and items seen by the sketches of `query`.
const N: usize = 1_000_000;
/// Distinct keys the items are drawn from; `query` asks for each of them once.
const KEYS: usize = 100_000;
/// Exponent of the Zipf distribution of the items over the keys.
const ZIPF_S: f64 = 1.0;
/// Seed of the key values (rank -> key).
const KEY_SEED: u64 = 0xFEDC_BA98_7654_3210;
/// The configuration of every sketch: width x depth.
const CFG: &str = "4096x5";

/// Zipf(s) over ranks `0..n` (rank `r` has weight `1 / (r + 1)^s`), sampled by inverse CDF.
struct Zipf {
    /// `cdf[r]` = total weight of ranks `0..=r`.
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut total = 0.0;
        let cdf = (1..=n)
            .map(|k| {
                total += (k as f64).powf(-s);
                total
            })
            .collect();
        Zipf { cdf }
    }

    fn sample(&self, state: &mut u64) -> usize {
        let total = *self.cdf.last().expect("n > 0");
        // A uniform in [0, total): 53 random bits scaled.
        let u = (splitmix64(state) >> 11) as f64 * (1.0 / (1u64 << 53) as f64) * total;
        // The first rank whose cumulative weight exceeds `u`.
        self.cdf.partition_point(|&c| c <= u).min(self.cdf.len() - 1)
    }
}

struct Data {
    /// The stream: `N` keys drawn by Zipf rank.
    items: Vec<u64>,
    /// The key of each rank (distinct, spread over `u64`); `query` asks for these.
    keys: Vec<u64>,
    /// The true count of each rank's key in `items`.
    truth: Vec<u64>,
}

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut key_state = KEY_SEED;
        let keys: Vec<u64> = (0..KEYS).map(|_| splitmix64(&mut key_state)).collect();
        let zipf = Zipf::new(KEYS, ZIPF_S);
        let mut state = DATA_SEED;
        let mut truth = vec![0u64; KEYS];
        let items = (0..N)
            .map(|_| {
                let r = zipf.sample(&mut state);
                truth[r] += 1;
                keys[r]
            })
            .collect();
        Data { items, keys, truth }
    })
}

fn id(name: &str) -> BenchmarkId {
    BenchmarkId::new(CFG, name)
}

fn syn_standard() -> CountMin {
    CountMin::new(4096, 5).expect("valid dimensions")
}

fn syn_conservative() -> CountMin {
    CountMin::builder(4096, 5).update_rule(Update::Conservative).build().expect("valid dimensions")
}

fn syn_32bit() -> CountMin {
    CountMin::builder(4096, 5).counter_width(CounterWidth::ThirtyTwo).build().expect("valid dimensions")
}

fn syn_16bit() -> CountMin {
    CountMin::builder(4096, 5).counter_width(CounterWidth::Sixteen).build().expect("valid dimensions")
}

fn ds_cm() -> DsCountMin<u64> {
    DsCountMin::<u64>::new(5, 4096).expect("valid dimensions")
}

fn pd_cm() -> PdCountMin<u64, u64> {
    PdCountMin::<u64, u64>::with_params(4096, 5)
}

type PcCm = PcCountMin<CountMinStrategy, u64>;

fn pc_cm() -> PcCm {
    PcCm::with_hashers(5, 4096, [SipHasherBuilder::from_seed(1, 2), SipHasherBuilder::from_seed(3, 4)])
}

fn sa_cm() -> SaCountMin<u64, u64> {
    // depth floor(-log2(1 - p)) = floor(5.5) = 5; width next_pow2(round(2 / (2 / 4096))) = 4096.
    SaCountMin::<u64, u64>::new(1.0 - 2f64.powf(-5.5), 2.0 / 4096.0, ())
}

/// Times inserting every item of `items` into a fresh sketch from `make`.
fn update_case<S>(
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

/// Times the batch entry point (`observe_all`) of `synopses` on every item of `items`.
fn observe_all_case(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, items: &[u64], make: impl Fn() -> CountMin) {
    g.bench_function(id(name), |b| {
        b.iter_batched(
            &make,
            |mut s| {
                s.observe_all(items);
                s
            },
            BatchSize::LargeInput,
        );
    });
}

fn bench_update(c: &mut Criterion) {
    let items = &data().items[..];
    let mut g = big_group(c, "countmin/update");
    g.throughput(Throughput::Elements(items.len() as u64));
    update_case(
        &mut g,
        "xxh3_floor",
        items,
        || 0u64,
        |acc, x| {
            *acc ^= xxh3_64_with_seed(&x.to_le_bytes(), DEFAULT_SEED);
        },
    );
    update_case(&mut g, "synopses", items, syn_standard, |s, x| s.observe(x));
    observe_all_case(&mut g, "synopses_observe_all", items, syn_standard);
    update_case(&mut g, "synopses_32bit", items, syn_32bit, |s, x| s.observe(x));
    observe_all_case(&mut g, "synopses_32bit_observe_all", items, syn_32bit);
    update_case(&mut g, "synopses_16bit", items, syn_16bit, |s, x| s.observe(x));
    observe_all_case(&mut g, "synopses_16bit_observe_all", items, syn_16bit);
    update_case(&mut g, "synopses_conservative", items, syn_conservative, |s, x| s.observe(x));
    observe_all_case(&mut g, "synopses_conservative_observe_all", items, syn_conservative);
    update_case(&mut g, "datasketches", items, ds_cm, |s, x| s.update(x));
    update_case(&mut g, "pdatastructs", items, pd_cm, |s, x| {
        s.add(&x);
    });
    update_case(&mut g, "probabilistic_collections", items, pc_cm, |s, x| s.insert(&x, 1));
    update_case(&mut g, "streaming_algorithms", items, sa_cm, |s, x| {
        s.push(&x, &1u64);
    });
    g.finish();
}

/// Sketches of every implementation that saw all the items.
struct Full {
    standard: CountMin,
    conservative: CountMin,
    narrow32: CountMin,
    narrow16: CountMin,
    ds: DsCountMin<u64>,
    pd: PdCountMin<u64, u64>,
    pc: PcCm,
    sa: SaCountMin<u64, u64>,
}

fn full(items: &[u64]) -> Full {
    let mut f = Full {
        standard: syn_standard(),
        conservative: syn_conservative(),
        narrow32: syn_32bit(),
        narrow16: syn_16bit(),
        ds: ds_cm(),
        pd: pd_cm(),
        pc: pc_cm(),
        sa: sa_cm(),
    };
    for &x in items {
        f.standard.observe(x);
        f.conservative.observe(x);
        f.narrow32.observe(x);
        f.narrow16.observe(x);
        f.ds.update(x);
        f.pd.add(&x);
        f.pc.insert(&x, 1);
        f.sa.push(&x, &1u64);
    }
    f
}

/// Prints the overestimate (estimate - truth) over all keys: mean, max, and how many keys are
/// below the truth (must be 0 for a Count-Min sketch).
fn report_error(name: &str, estimate: impl Fn(u64) -> i128) {
    let d = data();
    let (mut sum, mut max, mut under) = (0i128, 0i128, 0usize);
    for (&k, &t) in d.keys.iter().zip(&d.truth) {
        let e = estimate(k) - i128::from(t);
        sum += e;
        max = max.max(e);
        under += usize::from(e < 0);
    }
    eprintln!("  {name:<28} mean overestimate {:>8.2}, max {:>6}, under truth {under}", sum as f64 / KEYS as f64, max);
}

/// Times asking for the estimate of every key of `keys` on `s`.
fn query_case<S>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, keys: &[u64], s: &S, est: impl Fn(&S, u64) -> u64) {
    g.bench_function(id(name), |b| {
        b.iter(|| {
            let s = black_box(s);
            let mut acc = 0u64;
            for &k in keys {
                acc = acc.wrapping_add(est(s, k));
            }
            acc
        })
    });
}

fn bench_query(c: &mut Criterion) {
    let d = data();
    let f = full(&d.items);
    eprintln!(
        "query inputs {CFG}: {N} items, Zipf({ZIPF_S}) over {KEYS} keys (top key {} times), error over all keys:",
        d.truth[0]
    );
    report_error("synopses", |k| i128::from(f.standard.estimate(k)));
    report_error("synopses_conservative", |k| i128::from(f.conservative.estimate(k)));
    report_error("synopses_32bit", |k| i128::from(f.narrow32.estimate(k)));
    report_error("synopses_16bit", |k| i128::from(f.narrow16.estimate(k)));
    report_error("datasketches", |k| i128::from(f.ds.estimate(k)));
    report_error("pdatastructs", |k| i128::from(f.pd.query_point(&k)));
    report_error("probabilistic_collections", |k| i128::from(f.pc.count(&k)));
    report_error("streaming_algorithms", |k| i128::from(f.sa.get(&k)));

    let keys = &d.keys[..];
    let mut g = small_group(c, "countmin/query");
    g.throughput(Throughput::Elements(keys.len() as u64));
    query_case(&mut g, "xxh3_floor", keys, &(), |_, k| xxh3_64_with_seed(&k.to_le_bytes(), DEFAULT_SEED));
    query_case(&mut g, "synopses", keys, &f.standard, |s, k| s.estimate(k));
    query_case(&mut g, "synopses_conservative", keys, &f.conservative, |s, k| s.estimate(k));
    query_case(&mut g, "synopses_32bit", keys, &f.narrow32, |s, k| s.estimate(k));
    query_case(&mut g, "synopses_16bit", keys, &f.narrow16, |s, k| s.estimate(k));
    query_case(&mut g, "datasketches", keys, &f.ds, |s, k| s.estimate(k));
    query_case(&mut g, "pdatastructs", keys, &f.pd, |s, k| s.query_point(&k));
    query_case(&mut g, "probabilistic_collections", keys, &f.pc, |s, k| s.count(&k) as u64);
    query_case(&mut g, "streaming_algorithms", keys, &f.sa, |s, k| s.get(&k));
    g.finish();
}

fn bench_merge(c: &mut Criterion) {
    let (l, r) = data().items.split_at(N / 2);
    let mut g = small_group(c, "countmin/merge");

    for (name, make) in [
        ("synopses", syn_standard as fn() -> CountMin),
        ("synopses_conservative", syn_conservative as fn() -> CountMin),
        ("synopses_32bit", syn_32bit as fn() -> CountMin),
        ("synopses_16bit", syn_16bit as fn() -> CountMin),
    ] {
        let left = filled(l, make, |s, x| s.observe(x));
        let right = filled(r, make, |s, x| s.observe(x));
        // A sketch kind that refuses to merge is reported and skipped, not timed.
        if let Err(e) = left.clone().merge(&right) {
            eprintln!("countmin/merge/{CFG}/{name}: skipped, merge refused: {e:?}");
            continue;
        }
        merge_case(&mut g, id(name), &left, &right, |t, o| t.merge(o).expect("same config"));
    }

    let left = filled(l, ds_cm, |s, x| s.update(x));
    let right = filled(r, ds_cm, |s, x| s.update(x));
    merge_case(&mut g, id("datasketches"), &left, &right, |t, o| t.merge(o).expect("same config"));

    let left = filled(l, pd_cm, |s, x| {
        s.add(&x);
    });
    let right = filled(r, pd_cm, |s, x| {
        s.add(&x);
    });
    merge_case(&mut g, id("pdatastructs"), &left, &right, |t, o| t.merge(o));

    // probabilistic-collections and streaming_algorithms have no whole-sketch merge.
    g.finish();
}

/// Counters of every heavy-hitters summary (`synopses`' capacity, `topk`'s and
/// `streaming_algorithms`' tracked keys).
const HH_K: usize = 1000;
/// `datasketches`' map size: a power of two, whose `0.75 * 2048` = 1536 counters are the
/// fewest at or above `HH_K`.
const DS_MAP_SIZE: usize = 2048;
/// The configuration of every heavy-hitters summary.
const HH_CFG: &str = "k1000";
/// How many items `top10` asks for.
const TOP: usize = 10;

fn hh_id(name: &str) -> BenchmarkId {
    BenchmarkId::new(HH_CFG, name)
}

fn syn_hh() -> HeavyHitters<u64> {
    HeavyHitters::new(HH_K).expect("valid capacity")
}

fn ds_hh() -> DsFrequent<u64> {
    DsFrequent::<u64>::new(DS_MAP_SIZE).expect("a power of two in range")
}

fn tk_hh() -> FilteredSpaceSaving<u64> {
    FilteredSpaceSaving::new(HH_K)
}

type SaHh = SaTop<u64, u64>;

fn sa_hh() -> SaHh {
    // The Count-Min sketch of `sa_cm`: depth 5, width 4096.
    SaHh::new(HH_K, 1.0 - 2f64.powf(-5.5), 2.0 / 4096.0, ())
}

fn syn_top(s: &HeavyHitters<u64>) -> Vec<(u64, u64)> {
    s.top(TOP)
}

fn ds_top(s: &DsFrequent<u64>) -> Vec<(u64, u64)> {
    s.frequent_items(ErrorType::NoFalseNegatives).iter().take(TOP).map(|r| (*r.item(), r.estimate())).collect()
}

fn tk_top(s: &FilteredSpaceSaving<u64>) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = s.iter().map(|(&k, c)| (k, c.estimated_count())).collect();
    all.sort_unstable_by_key(|&(_, c)| Reverse(c));
    all.truncate(TOP);
    all
}

fn sa_top(s: &SaHh) -> Vec<(u64, u64)> {
    s.iter().take(TOP).map(|(&k, &c)| (k, c)).collect()
}

/// Times `fill` on a fresh summary from `make`; making and dropping it are outside the timing.
fn fill_case<S>(g: &mut BenchmarkGroup<'_, WallTime>, id: BenchmarkId, make: impl Fn() -> S, fill: impl Fn(&mut S)) {
    g.bench_function(id, |b| {
        b.iter_batched(
            &make,
            |mut s| {
                fill(&mut s);
                s
            },
            BatchSize::LargeInput,
        );
    });
}

fn bench_hh_update(c: &mut Criterion) {
    let items = &data().items[..];
    let mut g = big_group(c, "heavy_hitters/update");
    g.throughput(Throughput::Elements(items.len() as u64));
    fill_case(&mut g, hh_id("synopses"), syn_hh, |s| items.iter().for_each(|&x| s.observe(x)));
    fill_case(&mut g, hh_id("synopses_observe_all"), syn_hh, |s| s.observe_all(items.iter().copied()));
    fill_case(&mut g, hh_id("datasketches"), ds_hh, |s| items.iter().for_each(|&x| s.update(x)));
    fill_case(&mut g, hh_id("topk"), tk_hh, |s| items.iter().for_each(|&x| s.insert(x, 1)));
    fill_case(&mut g, hh_id("streaming_algorithms"), sa_hh, |s| items.iter().for_each(|&x| s.push(x, &1u64)));
    g.finish();
}

/// The `TOP` keys with the largest true counts (ties by rank), and the true count of the next.
fn true_top() -> (Vec<u64>, u64) {
    let d = data();
    let mut ranks: Vec<usize> = (0..KEYS).collect();
    ranks.sort_by_key(|&r| (Reverse(d.truth[r]), r));
    (ranks[..TOP].iter().map(|&r| d.keys[r]).collect(), d.truth[ranks[TOP]])
}

/// Prints how many of the true top-`TOP` keys `top` holds.
fn report_recall(name: &str, top: &[(u64, u64)]) {
    let (truth, _) = true_top();
    let hits = top.iter().filter(|(k, _)| truth.contains(k)).count();
    eprintln!("  {name:<28} {hits}/{TOP} of the true top {TOP} ({} listed)", top.len());
}

fn bench_hh_top(c: &mut Criterion) {
    let d = data();
    let items = &d.items[..];
    let syn = filled(items, syn_hh, |s, x| s.observe(x));
    let ds = filled(items, ds_hh, |s, x| s.update(x));
    let tk = filled(items, tk_hh, |s, x| s.insert(x, 1));
    let sa = filled(items, sa_hh, |s, x| s.push(x, &1u64));
    let (truth, next) = true_top();
    let counts: Vec<u64> = truth.iter().map(|k| d.truth[d.keys.iter().position(|x| x == k).expect("a key")]).collect();
    eprintln!("heavy_hitters {HH_CFG}: true top {TOP} counts {counts:?}, next {next}; top-{TOP} recall after update:");
    report_recall("synopses", &syn_top(&syn));
    report_recall("datasketches", &ds_top(&ds));
    report_recall("topk", &tk_top(&tk));
    report_recall("streaming_algorithms", &sa_top(&sa));

    let mut g = small_group(c, "heavy_hitters/top10");
    g.bench_function(hh_id("synopses"), |b| b.iter(|| syn_top(black_box(&syn))));
    g.bench_function(hh_id("datasketches"), |b| b.iter(|| ds_top(black_box(&ds))));
    g.bench_function(hh_id("topk"), |b| b.iter(|| tk_top(black_box(&tk))));
    g.bench_function(hh_id("streaming_algorithms"), |b| b.iter(|| sa_top(black_box(&sa))));
    g.finish();
}

fn bench_hh_merge(c: &mut Criterion) {
    let (l, r) = data().items.split_at(N / 2);
    eprintln!("heavy_hitters {HH_CFG}: top-{TOP} recall after merging the two halves:");
    let mut g = small_group(c, "heavy_hitters/merge");

    let left = filled(l, syn_hh, |s, x| s.observe(x));
    let right = filled(r, syn_hh, |s, x| s.observe(x));
    let mut merged = left.clone();
    merged.merge(&right).expect("same capacity");
    report_recall("synopses", &syn_top(&merged));
    merge_case(&mut g, hh_id("synopses"), &left, &right, |t, o| t.merge(o).expect("same capacity"));

    let left = filled(l, ds_hh, |s, x| s.update(x));
    let right = filled(r, ds_hh, |s, x| s.update(x));
    let mut merged = left.clone();
    merged.merge(&right);
    report_recall("datasketches", &ds_top(&merged));
    merge_case(&mut g, hh_id("datasketches"), &left, &right, |t, o| t.merge(o));

    let left = filled(l, tk_hh, |s, x| s.insert(x, 1));
    let right = filled(r, tk_hh, |s, x| s.insert(x, 1));
    let mut merged = left.clone();
    merged.merge(&right).expect("same k");
    report_recall("topk", &tk_top(&merged));
    merge_case(&mut g, hh_id("topk"), &left, &right, |t, o| t.merge(o).expect("same k"));

    let left = filled(l, sa_hh, |s, x| s.push(x, &1u64));
    let right = filled(r, sa_hh, |s, x| s.push(x, &1u64));
    report_recall("streaming_algorithms", &sa_top(&(left.clone() + right.clone())));
    merge_owned_case(&mut g, hh_id("streaming_algorithms"), &left, &right, |t, o| *t += o);
    g.finish();
}

criterion_group!(benches, bench_update, bench_query, bench_merge, bench_hh_update, bench_hh_top, bench_hh_merge);
criterion_main!(benches);
