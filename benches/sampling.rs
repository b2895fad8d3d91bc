//! Sampling: the `synopses` samplers against peer crates.
//!
//! Run with `cargo bench -p synopses-benches --bench sampling`. Every benchmark id reads
//! `family/operation/config/implementation`, e.g. `reservoir/iterator/1e7_k1000/synopses`: a
//! uniform sample of k = 1000 of 10^7 items taken from an iterator of unknown length. Every
//! sampler keeps k = 1000 items.
//!
//! Data: `N` = 10^7 distinct `u64` items, the outputs of the seeded splitmix64 of
//! `benches/common` (`DATA_SEED`). Since splitmix64 is a bijection of its counter, the bench
//! inverts it to find the position in the stream of any sampled item (checked on load). The
//! weighted groups pair the same items with weights log-uniform on [1, 1000) (`1000^u`, `u`
//! from a second seeded splitmix64: mean 144.6, the heaviest item about 7·10^-7 of the total),
//! validated into `Weight`s once, outside the timing.
//!
//! Timing model: one iteration runs a sampler over the whole input. The sampler (and, for the
//! peers, its seeded generator) is made by `iter_batched`'s setup (`BatchSize::LargeInput`),
//! outside the timing; the filled sampler is returned and dropped outside the timing too.
//! Throughput is the input's item count, so time / n is ns per item. Every generator is
//! seeded with `SAMPLER_SEED`, so each iteration draws the same sample.
//! - `reservoir/iterator/1e7_k1000`: the items through `items.iter().copied().filter(|_| true)`,
//!   an iterator whose `size_hint` is `(0, Some(n))`, like any of unknown length (lines of a
//!   file, records of a cursor), at its cheapest: a sampler must walk it item by item.
//!   `synopses` is `Reservoir::observe_all(iter)`, `synopses_observe` a `for_each` of
//!   `observe`. Floors, no sampler: `floor_sum` folds the items into a wrapping sum (which the
//!   compiler vectorizes) and `floor_each` hands each item to `black_box` (which it cannot):
//!   the cost of merely walking the iterator.
//! - `reservoir/exact_iterator/vec_1e7_k1000`: the items through `items.iter().copied()`, and
//!   `range_1e7_k1000`: the range `0..10^7` (its values are positions; no `floor_sum`, which
//!   the compiler may compute in closed form). Both have an exact `size_hint` and an `O(1)`
//!   `nth`, with which `synopses`' `observe_all` passes over the skipped items unseen. The
//!   peers walk them as before.
//! - `reservoir/slice/{1e5,1e6,1e7}_k1000`: `Reservoir::observe_slice` on the first 10^5,
//!   10^6 and 10^7 items; it touches only the items that enter, about `k·(1 + 2 ln(n/k))`
//!   random draws (printed, with the draws counted by `random_draws`), so its time should grow
//!   with `k·log(n/k)`, not `n`. Peer `rand_indexed`: `rand` 0.10 `IndexedRandom::sample(rng,
//!   1000)` on the slice, which knows `n` upfront and draws `k` distinct indices
//!   (`seq::index::sample`: a partial Fisher–Yates over an index vector of all `n` at 10^5,
//!   rejection sampling into a hash set at 10^6 and 10^7), then copies the `k` items: the
//!   floor of any exact sampler, but neither streaming nor mergeable.
//! - `weighted/observe/1e7_k1000`: `WeightedReservoir::observe_weighted(x, w)` over the pairs, and
//!   `priority/observe/1e7_k1000`: `PrioritySample::observe_weighted(x, w)` over the same pairs; the
//!   `synopses_observe_all` lines time their batch entry point over the same pairs.
//! - `{reservoir,weighted,priority}/merge/k1000`: merge a sampler of the second 5·10^6 items
//!   into a clone (made in setup, untimed) of a sampler of the first 5·10^6. The `synopses`
//!   parts are `empty_part(0)` and `empty_part(1)` of one sampler (distinct random streams).
//!
//! Before each timing, the bench runs the sampler once and prints to stderr a sanity line:
//! the sample size and its distinct items (both must be 1000), and means checked within 4
//! standard errors (derived, printed as `want mean ± tolerance`), flagged `OUT OF TOLERANCE`
//! otherwise. Uniform samples: the mean value (`x / 2^64`) against the stream's, and the mean
//! position / n against (n − 1)/2n (a sampler keeping the first or last items fails this one),
//! standard error `sd/√k · √((n − k)/(n − 1))`. Weighted samples: the means of weight, value
//! and position / n under drawing with probability proportional to weight, standard error
//! `sd/√k` (the without-replacement shift is under 1 % of it here). Priority samples: the
//! estimated total weight of all items, of the items with an even value and of the first half
//! of the stream, each divided by the truth, within 4 of the sample's own estimated standard
//! deviations (`subset_sum`'s variance). The slice group also prints `synopses`' random draws
//! against `k·(1 + 2 ln(n/k))`.
//!
//! Peers, each used the way its documentation shows, each generator seeded explicitly:
//! - `rand` 0.10 `IteratorRandom::sample(rng, 1000)` (needs `rand`'s `alloc` feature, which
//!   the core crate does not enable; this bench package does):
//!   Algorithm R, exact. It collects the first k items, then draws `random_range(..i + 1 + k)`
//!   for every later item (one draw per item) and replaces that slot if below k. It walks exact-size iterators too (only its `choose` uses `nth`). No
//!   state, no merge. Generator: `rand::rngs::SmallRng` (xoshiro256++, the generator of
//!   `synopses`), `seed_from_u64`.
//! - `streaming_algorithms` 0.3 `SampleUnstable::<u64>::new(1000)`, `push(x, &mut rng)`:
//!   Algorithm R with one `gen_range(0, i)` per item after the fill, `i` the count of *earlier*
//!   items (off by one: the 1001st item always enters; the first k end with inclusion
//!   probability (k − 1)/(n − 1) and the rest k/(n − 1) instead of k/n, far too little to
//!   see here). It takes the generator by argument, a `rand` 0.7 `Rng`, so the bench names
//!   `rand` 0.7 (already in the tree through this crate) as the dependency `rand_07`:
//!   `SmallRng` (PCG64-MCG), `seed_from_u64`. Its merge, `+=`, consumes the other sample: k
//!   times it picks a side with probability m/(m + n) (binomial, not hypergeometric:
//!   approximate) and pops that side's last item, with a `SmallRng` seeded from the low bytes
//!   of the two counts and k; both clones are made in the untimed setup. It panics (`unwrap`
//!   of an exhausted side) when a side holds fewer than k items and the draw asks more of it:
//!   with k = 1000, 194 of 768 merges tried (sides of 1000..1256 and 1..=3 items) panicked,
//!   e.g. 1002 + 1 items. `new(0)` panics on the first `push` (`gen_range(0, 0)`). Neither
//!   case is timed.
//! - `pdatastructs` 0.7 `reservoirsampling::ReservoirSampling<u64, StdRng>` (feature `rand`),
//!   `new(1000, StdRng::seed_from_u64(..))` (`rand` 0.8's `StdRng`, ChaCha12, re-exported as
//!   `pdatastructs::rand`): Algorithm R (with the same off-by-one) up to 4k items, then
//!   Erlandson's "fast skipping approximation": a geometric skip with the acceptance
//!   probability k/(i + 1) of its first item held fixed (approximate: the true probability
//!   falls along a skip, by about 0.1 % here), then the item into a random slot. `add` is still called for every item, and costs a compare
//!   while skipping. No merge; `new(0)` panics (assert).
//! - Weighted, `rand_sample_weighted`: `rand` 0.10 `IndexedRandom::sample_weighted(rng, 1000,
//!   |p| p.1.get())` on the slice of pairs (needs `rand`'s `std` feature, on in this bench
//!   package only), then the 1000 pairs collected: Efraimidis and Spirakis' A-ExpJ,
//!   the algorithm of `WeightedReservoir`, with keys `ln u / w` in a `BinaryHeap`, over a
//!   slice (not streaming), no merge. Generator `SmallRng`, `seed_from_u64`.
//! - No dependency has a priority sampler or another weighted one (datasketches 0.6,
//!   pdatastructs, streaming_algorithms, probabilistic-collections, topk, fastbloom), so
//!   `priority/*` and the weighted merge time `synopses` alone; neither `rand` nor
//!   pdatastructs merges.

mod common;
use common::{DATA_SEED, big_group, filled, merge_case, merge_owned_case, small_group, splitmix64};
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use pdatastructs::rand::SeedableRng as _;
use pdatastructs::rand::rngs::StdRng;
use pdatastructs::reservoirsampling::ReservoirSampling;
use rand::SeedableRng as _;
use rand::rngs::SmallRng;
use rand::seq::{IndexedRandom, IteratorRandom};
use rand_07::SeedableRng as _;
use rand_07::rngs::SmallRng as SmallRng07;
use streaming_algorithms::SampleUnstable;
use synopses::core::{Mergeable as _, Weight};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};

/// Items of every stream (the slice group also takes the first 10^5 and 10^6).
const N: usize = 10_000_000;
/// The sample size of every sampler.
const K: usize = 1000;
/// The configuration of the groups over all `N` items.
const CFG: &str = "1e7_k1000";
/// The prefixes of the data the slice group samples, with their configurations.
const SLICES: [(usize, &str); 3] = [(100_000, "1e5_k1000"), (1_000_000, "1e6_k1000"), (N, "1e7_k1000")];
/// The configuration of the merge groups.
const MERGE_CFG: &str = "k1000";
/// The seed of every sampler's random numbers (each generator seeded by its `seed_from_u64`).
const SAMPLER_SEED: u64 = 0x5A3B_1E5E_ED00_0001;
/// The seed of the weights.
const WEIGHT_SEED: u64 = 0x3E16_47E5_EED0_0002;
/// Weights are log-uniform on `[1, MAX_WEIGHT)`.
const MAX_WEIGHT: f64 = 1000.0;
/// Half-width of every sanity check, in standard errors.
const TOLERANCE_SE: f64 = 4.0;

/// splitmix64's increment.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The inverse of an odd `a` modulo 2^64 (Newton's iteration: each step doubles the correct
/// low bits, from 3).
const fn inverse_odd(a: u64) -> u64 {
    let mut x = a;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

/// The `z` with `z ^ (z >> s) == y`.
fn unxorshift(y: u64, s: u32) -> u64 {
    let mut z = y;
    for _ in 0..64 / s {
        z = y ^ (z >> s);
    }
    z
}

/// The index `i` in the data of the item `x`, the `(i + 1)`-th output of `splitmix64` from
/// `DATA_SEED`: splitmix64 inverted, so that a sample's positions in the stream can be
/// checked without a table.
fn position(x: u64) -> u64 {
    let mut z = unxorshift(x, 31);
    z = unxorshift(z.wrapping_mul(inverse_odd(0x94D0_49BB_1331_11EB)), 27);
    z = unxorshift(z.wrapping_mul(inverse_odd(0xBF58_476D_1CE4_E5B9)), 30);
    z.wrapping_sub(DATA_SEED).wrapping_mul(inverse_odd(GAMMA)).wrapping_sub(1)
}

/// An item as a number in [0, 1).
fn unit(x: u64) -> f64 {
    x as f64 / 2f64.powi(64)
}

struct Data {
    /// `N` distinct `u64`, the outputs of splitmix64 from `DATA_SEED`.
    items: Vec<u64>,
    /// The same items with weights log-uniform on `[1, MAX_WEIGHT)`.
    weighted: Vec<(u64, Weight)>,
}

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut state = DATA_SEED;
        let items: Vec<u64> = (0..N).map(|_| splitmix64(&mut state)).collect();
        for i in [0, 1, K, N / 2, N - 1] {
            assert_eq!(position(items[i]), i as u64, "splitmix64 inverted");
        }
        let mut state = WEIGHT_SEED;
        let weighted = items
            .iter()
            .map(|&x| {
                let u = (splitmix64(&mut state) >> 11) as f64 / 2f64.powi(53);
                (x, Weight::new(MAX_WEIGHT.powf(u)).expect("in [1, MAX_WEIGHT)"))
            })
            .collect();
        Data { items, weighted }
    })
}

/// The stream as an iterator of unknown length: its `size_hint` is `(0, Some(n))`, so a
/// sampler must walk it item by item.
fn unknown_len(items: &[u64]) -> impl Iterator<Item = u64> + '_ {
    items.iter().copied().filter(|_| true)
}

/// A (weighted) mean and standard deviation.
#[derive(Clone, Copy)]
struct Moments {
    mean: f64,
    sd: f64,
}

impl Moments {
    /// Of `(value, weight)` pairs: the moments of the value drawn with probability
    /// proportional to its weight.
    fn of(pairs: impl Iterator<Item = (f64, f64)>) -> Self {
        let (mut w, mut wx, mut wxx) = (0.0, 0.0, 0.0);
        for (x, weight) in pairs {
            w += weight;
            wx += weight * x;
            wxx += weight * x * x;
        }
        let mean = wx / w;
        Moments { mean, sd: (wxx / w - mean * mean).max(0.0).sqrt() }
    }

    /// Of `i / n` for `i` uniform on `0..n`.
    fn positions(n: usize) -> Self {
        let n = n as f64;
        Moments { mean: (n - 1.0) / 2.0 / n, sd: ((n * n - 1.0) / 12.0).sqrt() / n }
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut count) = (0.0, 0usize);
    for v in values {
        sum += v;
        count += 1;
    }
    sum / count as f64
}

/// One checked statistic of a sample: what it gave, what the design expects, and the
/// tolerance (`TOLERANCE_SE` standard errors).
struct Stat {
    what: &'static str,
    got: f64,
    want: f64,
    tol: f64,
}

/// Prints one sanity line: the sample size (and how many distinct items it holds) against
/// `K`, and each statistic against its expectation; flags anything out of tolerance.
fn report(name: &str, size: usize, distinct: usize, stats: &[Stat]) {
    let ok = size == K && distinct == K && stats.iter().all(|s| (s.got - s.want).abs() <= s.tol);
    let parts: Vec<String> =
        stats.iter().map(|s| format!("{} {:.4} (want {:.4} ± {:.4})", s.what, s.got, s.want, s.tol)).collect();
    let verdict = if ok { "ok" } else { "OUT OF TOLERANCE" };
    eprintln!("  {name:<28} size {size} ({distinct} distinct) of {K}, {}: {verdict}", parts.join(", "));
}

fn distinct(mut items: Vec<u64>) -> usize {
    items.sort_unstable();
    items.dedup();
    items.len()
}

/// What a uniform sample of `K` of `n` items is checked against: the mean of its values (`x`
/// mapped to [0, 1)) and of its positions (divided by `n`), each within `TOLERANCE_SE`
/// standard errors `sd / √K · √((n − K)/(n − 1))`.
struct Uniform {
    n: usize,
    /// The moments of the stream's values; `None` for a range, whose values are positions.
    value: Option<Moments>,
    /// The position of an item in the stream.
    position_of: fn(u64) -> u64,
}

impl Uniform {
    fn of_data(items: &[u64]) -> Self {
        Uniform {
            n: items.len(),
            value: Some(Moments::of(items.iter().map(|&x| (unit(x), 1.0)))),
            position_of: position,
        }
    }

    fn of_range(n: usize) -> Self {
        Uniform { n, value: None, position_of: |x| x }
    }

    fn check(&self, name: &str, sample: &[u64]) {
        let n = self.n as f64;
        let tol = |m: Moments| TOLERANCE_SE * m.sd / (K as f64).sqrt() * ((n - K as f64) / (n - 1.0)).sqrt();
        let mut stats = Vec::new();
        if let Some(v) = self.value {
            stats.push(Stat {
                what: "mean value",
                got: mean(sample.iter().map(|&x| unit(x))),
                want: v.mean,
                tol: tol(v),
            });
        }
        let p = Moments::positions(self.n);
        let got = mean(sample.iter().map(|&x| (self.position_of)(x) as f64 / n));
        stats.push(Stat { what: "mean position/n", got, want: p.mean, tol: tol(p) });
        report(name, sample.len(), distinct(sample.to_vec()), &stats);
    }
}

fn syn_reservoir() -> Reservoir<u64> {
    Reservoir::new(K, SAMPLER_SEED).expect("valid capacity")
}

fn syn_sample(s: &Reservoir<u64>) -> Vec<u64> {
    s.iter().copied().collect()
}

/// `rand`'s `IteratorRandom::sample` keeps no state between calls: its "sampler" is the
/// generator and the sample it returned.
type RandState = (SmallRng, Vec<u64>);

fn rand_state() -> RandState {
    (SmallRng::seed_from_u64(SAMPLER_SEED), Vec::new())
}

type SaState = (SampleUnstable<u64>, SmallRng07);

fn sa_state() -> SaState {
    (SampleUnstable::new(K), SmallRng07::seed_from_u64(SAMPLER_SEED))
}

fn sa_sample(s: &SampleUnstable<u64>) -> Vec<u64> {
    s.clone().into_iter().collect()
}

type PdSampler = ReservoirSampling<u64, StdRng>;

fn pd_sampler() -> PdSampler {
    ReservoirSampling::new(K, StdRng::seed_from_u64(SAMPLER_SEED))
}

/// Checks `run` once on a fresh sampler from `make` (`check` reads and reports the sample it
/// leaves), then times it: each iteration runs `run` over a fresh input from `input` (an
/// iterator or a slice) on a fresh sampler made in the untimed setup; the filled sampler is
/// returned and dropped outside the timing.
fn sampler_case<S, I>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    input: &impl Fn() -> I,
    make: impl Fn() -> S,
    run: impl Fn(&mut S, I),
    check: impl Fn(&S),
) {
    let mut s = make();
    run(&mut s, input());
    check(&s);
    g.bench_function(id, |b| {
        b.iter_batched(
            &make,
            |mut s| {
                run(&mut s, input());
                s
            },
            BatchSize::LargeInput,
        );
    });
}

/// Times the floors of walking the iterators of `iter`: summing its items (wrapping), which
/// the compiler may vectorize, and handing each item to `black_box`, which it may not.
fn floor_cases<I: Iterator<Item = u64>>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    cfg: &str,
    iter: &impl Fn() -> I,
    sum: bool,
) {
    if sum {
        g.bench_function(BenchmarkId::new(cfg, "floor_sum"), |b| b.iter(|| iter().fold(0u64, u64::wrapping_add)));
    }
    g.bench_function(BenchmarkId::new(cfg, "floor_each"), |b| {
        b.iter(|| {
            for x in iter() {
                black_box(x);
            }
        })
    });
}

/// Every uniform sampler over the iterators of `iter`: `synopses` through `observe_all` (and,
/// when `observe` is set, through a loop of `observe`) and the three peers.
fn uniform_cases<I: Iterator<Item = u64>>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    cfg: &str,
    expect: &Uniform,
    iter: &impl Fn() -> I,
    observe: bool,
) {
    let id = |name| BenchmarkId::new(cfg, name);
    let check = |name| move |sample: Vec<u64>| expect.check(name, &sample);
    let syn = check("synopses");
    sampler_case(g, id("synopses"), iter, syn_reservoir, |s, it| s.observe_all(it), |s| syn(syn_sample(s)));
    if observe {
        let syn = check("synopses_observe");
        let run = |s: &mut Reservoir<u64>, it: I| it.for_each(|x| s.observe(x));
        sampler_case(g, id("synopses_observe"), iter, syn_reservoir, run, |s| syn(syn_sample(s)));
    }
    let rand = check("rand");
    sampler_case(g, id("rand"), iter, rand_state, |(rng, out), it| *out = it.sample(rng, K), |s| rand(s.1.clone()));
    let sa = check("streaming_algorithms");
    let run = |(s, rng): &mut SaState, it: I| it.for_each(|x| s.push(x, rng));
    sampler_case(g, id("streaming_algorithms"), iter, sa_state, run, |s| sa(sa_sample(&s.0)));
    let pd = check("pdatastructs");
    let run = |s: &mut PdSampler, it: I| it.for_each(|x| s.add(x));
    sampler_case(g, id("pdatastructs"), iter, pd_sampler, run, |s| pd(s.reservoir().clone()));
}

fn bench_iterator(c: &mut Criterion) {
    let items = &data().items[..];
    let expect = Uniform::of_data(items);
    eprintln!("reservoir/iterator/{CFG}: {N} items through `filter(|_| true)`, size_hint (0, Some(n)); per sampler:");
    let mut g = big_group(c, "reservoir/iterator");
    g.throughput(Throughput::Elements(N as u64));
    let iter = || unknown_len(black_box(items));
    floor_cases(&mut g, CFG, &iter, true);
    uniform_cases(&mut g, CFG, &expect, &iter, true);
    g.finish();
}

fn bench_exact_iterator(c: &mut Criterion) {
    let items = &data().items[..];
    let mut g = big_group(c, "reservoir/exact_iterator");
    g.throughput(Throughput::Elements(N as u64));

    let cfg = format!("vec_{CFG}");
    eprintln!("reservoir/exact_iterator/{cfg}: {N} items through `iter().copied()`, exact size_hint; per sampler:");
    let iter = || black_box(items).iter().copied();
    floor_cases(&mut g, &cfg, &iter, true);
    uniform_cases(&mut g, &cfg, &Uniform::of_data(items), &iter, false);

    let cfg = format!("range_{CFG}");
    eprintln!("reservoir/exact_iterator/{cfg}: the range 0..{N} (values are positions); per sampler:");
    let iter = || black_box(0..N as u64);
    floor_cases(&mut g, &cfg, &iter, false);
    uniform_cases(&mut g, &cfg, &Uniform::of_range(N), &iter, false);
    g.finish();
}

fn bench_slice(c: &mut Criterion) {
    let items = &data().items[..];
    eprintln!("reservoir/slice: `synopses` observe_slice and `rand` IndexedRandom::sample on prefixes; per size:");
    let mut g = small_group(c, "reservoir/slice");
    for (n, cfg) in SLICES {
        let slice = &items[..n];
        let expect = Uniform::of_data(slice);
        g.throughput(Throughput::Elements(n as u64));
        let mut s = syn_reservoir();
        s.observe_slice(slice);
        let predicted = K as f64 * (1.0 + 2.0 * (n as f64 / K as f64).ln());
        eprintln!("  {cfg}: synopses drew {} random numbers (k·(1 + 2 ln(n/k)) = {predicted:.0})", s.random_draws());
        let input = || slice;
        let check = |s: &Reservoir<u64>| expect.check("synopses", &syn_sample(s));
        sampler_case(
            &mut g,
            BenchmarkId::new(cfg, "synopses"),
            &input,
            syn_reservoir,
            |s, sl| s.observe_slice(sl),
            check,
        );
        let run = |(rng, out): &mut RandState, sl: &[u64]| *out = sl.sample(rng, K).copied().collect();
        let check = |s: &RandState| expect.check("rand_indexed", &s.1);
        sampler_case(&mut g, BenchmarkId::new(cfg, "rand_indexed"), &input, rand_state, run, check);
    }
    g.finish();
}

/// What a weighted sample of `K` items is checked against: the means of its weights, values
/// and positions (divided by `n`) when items are drawn with probability proportional to their
/// weight, within `TOLERANCE_SE` standard errors `sd / √K`. That is sampling *with*
/// replacement; without it (PPSWOR) the means shift by under 1 % of a standard error here,
/// as the sample holds about 3.5·10^-4 of the total weight.
struct Weighted {
    weight: Moments,
    value: Moments,
    position: Moments,
    n: usize,
}

impl Weighted {
    fn of(pairs: &[(u64, Weight)]) -> Self {
        let n = pairs.len();
        let w = |p: &(u64, Weight)| p.1.get();
        Weighted {
            weight: Moments::of(pairs.iter().map(|p| (w(p), w(p)))),
            value: Moments::of(pairs.iter().map(|p| (unit(p.0), w(p)))),
            position: Moments::of(pairs.iter().enumerate().map(|(i, p)| (i as f64 / n as f64, w(p)))),
            n,
        }
    }

    fn check(&self, name: &str, sample: &[(u64, f64)]) {
        let tol = |m: Moments| TOLERANCE_SE * m.sd / (K as f64).sqrt();
        let stat = |what, got, m: Moments| Stat { what, got, want: m.mean, tol: tol(m) };
        let stats = [
            stat("mean weight", mean(sample.iter().map(|p| p.1)), self.weight),
            stat("mean value", mean(sample.iter().map(|p| unit(p.0))), self.value),
            stat("mean position/n", mean(sample.iter().map(|p| position(p.0) as f64 / self.n as f64)), self.position),
        ];
        report(name, sample.len(), distinct(sample.iter().map(|p| p.0).collect()), &stats);
    }
}

fn syn_weighted() -> WeightedReservoir<u64> {
    WeightedReservoir::new(K, SAMPLER_SEED).expect("valid capacity")
}

fn syn_priority() -> PrioritySample<u64> {
    PrioritySample::new(K, SAMPLER_SEED).expect("valid capacity")
}

/// The state of `rand`'s `IndexedRandom::sample_weighted`: the generator and the sample.
type RandWeighted = (SmallRng, Vec<(u64, f64)>);

/// A named subset of the stream: whether the item `x` is in it, given half the stream's length.
type Subset = (&'static str, fn(u64, u64) -> bool);

/// Checks a priority sample's unbiased subset sums against the true sums: of all items, of
/// the items with an even value and of the first half of the stream, each as a ratio to the
/// truth, within `TOLERANCE_SE` of its estimated standard deviation.
fn priority_check(name: &str, p: &PrioritySample<u64>, pairs: &[(u64, Weight)]) {
    let half = pairs.len() as u64 / 2;
    let subsets: [Subset; 3] = [
        ("all / true", |_, _| true),
        ("even values / true", |x, _| x % 2 == 0),
        ("first half / true", |x, half| position(x) < half),
    ];
    let stats = subsets.map(|(what, keep)| {
        let truth: f64 = pairs.iter().filter(|p| keep(p.0, half)).map(|p| p.1.get()).sum();
        let e = p.subset_sum(|&x| keep(x, half));
        Stat { what, got: e.value / truth, want: 1.0, tol: TOLERANCE_SE * e.variance.sqrt() / truth }
    });
    let sample: Vec<u64> = p.sample().map(|(&x, _, _)| x).collect();
    report(name, sample.len(), distinct(sample), &stats);
}

fn bench_weighted(c: &mut Criterion) {
    let pairs = &data().weighted[..];
    let expect = Weighted::of(pairs);
    eprintln!("weighted/observe/{CFG}: {N} items, weights log-uniform on [1, {MAX_WEIGHT}); per sampler:");
    let mut g = big_group(c, "weighted/observe");
    g.throughput(Throughput::Elements(N as u64));
    let input = || black_box(pairs);
    let run =
        |s: &mut WeightedReservoir<u64>, ps: &[(u64, Weight)]| ps.iter().for_each(|&(x, w)| s.observe_weighted(x, w));
    let check = |s: &WeightedReservoir<u64>| expect.check("synopses", &s.iter().copied().collect::<Vec<_>>());
    sampler_case(&mut g, BenchmarkId::new(CFG, "synopses"), &input, syn_weighted, run, check);
    let run = |s: &mut WeightedReservoir<u64>, ps: &[(u64, Weight)]| s.observe_all(ps.iter().copied());
    sampler_case(&mut g, BenchmarkId::new(CFG, "synopses_observe_all"), &input, syn_weighted, run, check);
    let make = || (SmallRng::seed_from_u64(SAMPLER_SEED), Vec::new());
    let run = |(rng, out): &mut RandWeighted, ps: &[(u64, Weight)]| {
        let sample = ps.sample_weighted(rng, K, |p| p.1.get()).expect("valid weights");
        *out = sample.map(|&(x, w)| (x, w.get())).collect();
    };
    let check = |s: &RandWeighted| expect.check("rand_sample_weighted", &s.1);
    sampler_case(&mut g, BenchmarkId::new(CFG, "rand_sample_weighted"), &input, make, run, check);
    g.finish();

    eprintln!("priority/observe/{CFG}: the same items and weights; subset sums:");
    let mut g = big_group(c, "priority/observe");
    g.throughput(Throughput::Elements(N as u64));
    let run =
        |s: &mut PrioritySample<u64>, ps: &[(u64, Weight)]| ps.iter().for_each(|&(x, w)| s.observe_weighted(x, w));
    let check = |s: &PrioritySample<u64>| priority_check("synopses", s, pairs);
    sampler_case(&mut g, BenchmarkId::new(CFG, "synopses"), &input, syn_priority, run, check);
    let run = |s: &mut PrioritySample<u64>, ps: &[(u64, Weight)]| s.observe_all(ps.iter().copied());
    sampler_case(&mut g, BenchmarkId::new(CFG, "synopses_observe_all"), &input, syn_priority, run, check);
    g.finish();
}

fn bench_merge(c: &mut Criterion) {
    let d = data();
    let (l, r) = d.items.split_at(N / 2);
    let expect = Uniform::of_data(&d.items);
    let id = |name| BenchmarkId::new(MERGE_CFG, name);
    eprintln!("reservoir/merge/{MERGE_CFG}: samples of the two halves ({} items each), merged:", N / 2);
    let mut g = small_group(c, "reservoir/merge");

    let proto = syn_reservoir();
    let left = filled(l, || proto.empty_part(0), |s, x| s.observe(x));
    let right = filled(r, || proto.empty_part(1), |s, x| s.observe(x));
    let mut merged = left.clone();
    merged.merge(&right).expect("same capacity, distinct streams");
    expect.check("synopses", &syn_sample(&merged));
    merge_case(&mut g, id("synopses"), &left, &right, |t, o| t.merge(o).expect("same capacity, distinct streams"));

    let sa_part = |items, seed| {
        let make = || (SampleUnstable::new(K), SmallRng07::seed_from_u64(seed));
        filled(items, make, |(s, rng): &mut SaState, x| s.push(x, rng)).0
    };
    let left = sa_part(l, SAMPLER_SEED);
    let right = sa_part(r, SAMPLER_SEED + 1);
    expect.check("streaming_algorithms", &sa_sample(&(left.clone() + right.clone())));
    merge_owned_case(&mut g, id("streaming_algorithms"), &left, &right, |t, o| *t += o);
    // rand and pdatastructs have no merge.
    g.finish();

    let (l, r) = d.weighted.split_at(N / 2);
    let expect = Weighted::of(&d.weighted);
    eprintln!("weighted/merge/{MERGE_CFG}: samples of the two weighted halves, merged:");
    let mut g = small_group(c, "weighted/merge");
    let proto = syn_weighted();
    let fill = |items: &[(u64, Weight)], part| {
        let mut s = proto.empty_part(part);
        items.iter().for_each(|&(x, w)| s.observe_weighted(x, w));
        s
    };
    let (left, right) = (fill(l, 0), fill(r, 1));
    let mut merged = left.clone();
    merged.merge(&right).expect("same capacity, distinct streams");
    expect.check("synopses", &merged.iter().copied().collect::<Vec<_>>());
    merge_case(&mut g, id("synopses"), &left, &right, |t, o| t.merge(o).expect("same capacity, distinct streams"));
    g.finish();

    eprintln!("priority/merge/{MERGE_CFG}: samples of the two weighted halves, merged; subset sums:");
    let mut g = small_group(c, "priority/merge");
    let proto = syn_priority();
    let fill = |items: &[(u64, Weight)], part| {
        let mut s = proto.empty_part(part);
        items.iter().for_each(|&(x, w)| s.observe_weighted(x, w));
        s
    };
    let (left, right) = (fill(l, 0), fill(r, 1));
    let mut merged = left.clone();
    merged.merge(&right).expect("same capacity, distinct streams");
    priority_check("synopses", &merged, &d.weighted);
    merge_case(&mut g, id("synopses"), &left, &right, |t, o| t.merge(o).expect("same capacity, distinct streams"));
    g.finish();
}

criterion_group!(benches, bench_iterator, bench_exact_iterator, bench_slice, bench_weighted, bench_merge);
criterion_main!(benches);
