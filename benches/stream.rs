//! Partitioned observation: the partitioned runner against one sequential pass.
//!
//! Run with `cargo bench -p synopses-benches --bench stream -- stream/`. Ids read
//! `stream/structure/implementation`.
//!
//! Data: `N` = 10^7 distinct `u64` items (seeded splitmix64). One iteration observes all `N`
//! into empty instances cloned in the untimed setup (cloning touches their memory there;
//! freshly allocated pages would fault during the timed run, which on this virtual machine
//! costs more than the work) and, for the partitioned runs, merges the parts (`into_merged`,
//! timed: it is part of the answer). `chunks` allocates its parts inside the timed run, as it
//! does in use. Throughput is `N` elements.
//!
//! - `sequential`: one instance, `observe_all` over the slice.
//! - `chunks`: `OperatorExt::par_observe`: one contiguous part per thread, merged.
//! - `key_grouping`, `partial_key_grouping`, `shuffle_grouping`:
//!   `Partitioned::par_observe_hashed` with one worker per thread: each item hashed once (the
//!   sketch's hash, mixed with the routing seed to route), one sender per thread routing its
//!   share of each round into per-worker buffers of hashes while the workers observe the
//!   round before; shuffle grouping observes one contiguous block per worker, unrouted.
//! - `key_grouping_items`: `Partitioned::par_observe`, the generic path (buffers of item
//!   references; each item hashed to route, then again by its part).
//!
//! The goals on 2 cores: key and partial key grouping at least 1.3× `sequential` for
//! HyperLogLog p = 14 and Count-Min 4096×5, shuffle grouping at least 1.7×.
//!
//! Measured on the 2-vCPU virtual machine of issue 15 (AMD EPYC), ratio of throughput to
//! `sequential` (higher is better). Before: criterion, this bench at commit 98a7ff1
//! (`par_observe`, index lists, two hashes an item). After: median over 21 interleaved
//! (sequential, partitioned) pairs at 1.6–1.7 CPUs utilized; criterion runs of the same code
//! were taken while other builds held a core (`chunks` then ran at 1.0×), so they only bound
//! it from below (in brackets).
//!
//! | structure | path | before | after |
//! |---|---|---|---|
//! | hll_p14 | key_grouping | 0.55× | 0.60× (0.65×) |
//! | hll_p14 | partial_key_grouping | 0.41× | 0.45× (0.38×) |
//! | hll_p14 | shuffle_grouping | 2.25× | 1.80× (1.11×) |
//! | hll_p14 | key_grouping_items | – | 0.55× (0.44×) |
//! | countmin_4096x5 | key_grouping | 0.84× | 1.10× (0.85×) |
//! | countmin_4096x5 | partial_key_grouping | 0.70× | 0.85× (0.77×) |
//! | countmin_4096x5 | shuffle_grouping | 1.57× | 1.85× (2.01×) |
//! | countmin_4096x5 | key_grouping_items | – | 1.00× (0.83×) |
//! | counting_bloom_1e6_1pct | key_grouping | 1.10× | (1.16×) |
//! | counting_bloom_1e6_1pct | partial_key_grouping | 0.76× | (0.73×) |
//! | counting_bloom_1e6_1pct | shuffle_grouping | 0.61× | (0.36×) |
//!
//! One thread's work per item (CPU time, `RAYON_NUM_THREADS=1`): HyperLogLog 2.0 ns
//! sequential against 4.1 ns partitioned by key (hash 1.5, routing mix and worker 0.6,
//! buffering about 1, observing the hash 1.2), so two threads cannot reach 1.3× for it: the
//! routing alone costs what the whole sequential loop does. Count-Min 7.1 ns against 10.3 ns
//! (1.38× at best on two cores). The counting Bloom filter (4.8 MB of counters, memory-bound)
//! does not scale on this machine even in `chunks`.
//!
//! # Windows (groups `window/structure/slide_.../...`)
//!
//! A sliding window of 60 panes answered at every slide, panes of `slide` = 10^4 items (the
//! window holds 600 000 items: "distinct users over the last hour, every minute" at about 170
//! items per second) and, for HyperLogLog, of 10^5 items. Each iteration observes the next
//! slides (100 of 10^4 items, or 40 of 10^5) into a window already holding 60 panes (cloned
//! in the untimed setup; any 40 or 100 consecutive slides include one or two rebuilds of the
//! front stack, the amortized rate or slightly above). Throughput is the items observed.
//!
//! - `sliding_panes`: `CountWindow` (two-stacks), `window()` asked at every slide.
//! - `remerge`: the same panes, the answer merged from all 60 panes afresh at every slide.
//! - `fresh_panes`: only observing each slide into a fresh pane (`empty_part`), no answer: what
//!   any pane-based window pays for starting a synopsis per pane (HyperLogLog's sparse phase,
//!   up to `3m/16` items, is the part that grows with the number of panes).
//! - `single`: the same items observed into one synopsis, no window.
//! - `answer_two_stacks` and `answer_remerge`: one slide's window work alone on a full window
//!   (push a finished pane, answer), the pane's copy included in both.
//!
//! The goals: an answer at least 10× faster than merging afresh
//! (`answer_remerge / answer_two_stacks`), and `sliding_panes` within 3× of `single`.

mod common;
use common::{DATA_SEED, big_group, small_group, splitmix64};
use std::hint::black_box;
use std::sync::OnceLock;

use criterion::{
    BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main, measurement::WallTime,
};
use synopses::cardinality::HyperLogLog;
use synopses::core::{Mergeable, ObserveHash, Operator, OperatorExt};
use synopses::frequency::CountMin;
use synopses::membership::CountingBloom;
use synopses::stream::{
    CountWindow, KeyGrouping, PartialKeyGrouping, Partitioned, Partitioner, ShuffleGrouping, SlidingPanes, Window,
};

const N: usize = 10_000_000;

fn items() -> &'static [u64] {
    static ITEMS: OnceLock<Vec<u64>> = OnceLock::new();
    ITEMS.get_or_init(|| {
        let mut state = DATA_SEED;
        (0..N).map(|_| splitmix64(&mut state)).collect()
    })
}

fn partitioned_case<O, P>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, proto: &O, partitioner: P)
where
    O: Mergeable + ObserveHash + Clone + for<'a> Operator<&'a u64> + Send + Sync,
    P: Partitioner + Send + Sync,
{
    let items = items();
    // Cloned in the setup, so that the parts' pages are touched there (fresh allocations
    // page-fault during the timed run, which on this virtual machine costs more than the work).
    let template = Partitioned::new(proto, partitioner).expect("parts that fit in memory");
    g.bench_function(name, |b| {
        b.iter_batched(
            || template.clone(),
            |mut parts| {
                parts.par_observe_hashed(items);
                parts.into_merged().expect("parts of one configuration")
            },
            BatchSize::LargeInput,
        );
    });
}

fn structure<O>(c: &mut Criterion, name: &str, proto: O)
where
    O: Mergeable + ObserveHash + Operator<u64> + for<'a> Operator<&'a u64> + Send + Sync + Clone,
{
    let items = items();
    let threads = rayon::current_num_threads();
    let mut g = big_group(c, &format!("stream/{name}"));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("sequential", |b| {
        b.iter_batched(
            || proto.clone(),
            |mut op| {
                op.observe_all(items);
                op
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("chunks", |b| {
        b.iter_batched(
            || proto.clone(),
            |mut op| {
                OperatorExt::<u64>::par_observe(&mut op, items);
                op
            },
            BatchSize::LargeInput,
        );
    });
    partitioned_case(&mut g, "key_grouping", &proto, KeyGrouping::new(threads).expect("valid"));
    let template =
        Partitioned::new(&proto, KeyGrouping::new(threads).expect("valid")).expect("parts that fit in memory");
    g.bench_function("key_grouping_items", |b| {
        b.iter_batched(
            || template.clone(),
            |mut parts| {
                parts.par_observe(items);
                parts.into_merged().expect("parts of one configuration")
            },
            BatchSize::LargeInput,
        );
    });
    partitioned_case(&mut g, "partial_key_grouping", &proto, PartialKeyGrouping::new(threads).expect("valid"));
    partitioned_case(&mut g, "shuffle_grouping", &proto, ShuffleGrouping::new(threads).expect("valid"));
    g.finish();
}

fn bench_stream(c: &mut Criterion) {
    structure(c, "hll_p14", HyperLogLog::new(14).expect("valid"));
    structure(c, "countmin_4096x5", CountMin::new(4096, 5).expect("valid"));
    structure(c, "counting_bloom_1e6_1pct", CountingBloom::with_false_positive_rate(1_000_000, 0.01).expect("valid"));
}

const PANES: usize = 60;

fn window_case<O>(c: &mut Criterion, name: &str, proto: O, slide: usize, slides: usize)
where
    O: Mergeable + Operator<u64> + for<'a> Operator<&'a u64> + Clone,
{
    let items = items();
    let (warm, timed) = items.split_at(PANES * slide);
    let timed = &timed[..slides * slide];
    let shape = Window::sliding((PANES * slide) as u64, slide as u64).expect("valid");
    let mut full = CountWindow::new(&proto, shape).expect("valid");
    full.observe_all(warm);
    let panes: std::collections::VecDeque<O> = warm
        .chunks(slide)
        .enumerate()
        .map(|(i, chunk)| {
            let mut pane = proto.empty_part(i as u64);
            pane.observe_all(chunk);
            pane
        })
        .collect();

    let group = format!("window/{name}/slide_1e{}", slide.ilog10());
    let mut g = big_group(c, &group);
    g.throughput(Throughput::Elements(timed.len() as u64));
    g.bench_function("sliding_panes", |b| {
        b.iter_batched(
            || full.clone(),
            |mut window| {
                for chunk in timed.chunks(slide) {
                    window.observe_all(chunk);
                    black_box(window.window().expect("panes of one prototype"));
                }
                window
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("remerge", |b| {
        b.iter_batched(
            || panes.clone(),
            |mut panes| {
                for (i, chunk) in timed.chunks(slide).enumerate() {
                    let mut pane = proto.empty_part((PANES + i) as u64);
                    pane.observe_all(chunk);
                    panes.pop_front();
                    panes.push_back(pane);
                    let mut answer = panes[0].clone();
                    answer.merge_all(panes.range(1..)).expect("panes of one prototype");
                    black_box(answer);
                }
                panes
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("fresh_panes", |b| {
        b.iter(|| {
            for (i, chunk) in timed.chunks(slide).enumerate() {
                let mut pane = proto.empty_part(i as u64);
                pane.observe_all(chunk);
                black_box(pane);
            }
        });
    });
    g.bench_function("single", |b| {
        b.iter_batched(
            || proto.clone(),
            |mut op| {
                op.observe_all(timed);
                op
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();

    // One slide's window work: the pane is ready, only pushing and answering are timed.
    let mut g = small_group(c, &group);
    let pane = panes.back().expect("60 panes").clone();
    let mut two_stacks = SlidingPanes::new(&proto, PANES).expect("valid");
    for p in &panes {
        two_stacks.push(p.clone()).expect("panes of one prototype");
    }
    // The same pane pushed over and over merges like any other (the synopses here are
    // deterministic), and each push flips and pops exactly as a new pane would.
    g.bench_function("answer_two_stacks", |b| {
        b.iter(|| {
            two_stacks.push(pane.clone()).expect("panes of one prototype");
            two_stacks.window().expect("panes of one prototype")
        });
    });
    let mut fresh = panes.clone();
    g.bench_function("answer_remerge", |b| {
        b.iter(|| {
            fresh.pop_front();
            fresh.push_back(pane.clone());
            let mut answer = fresh[0].clone();
            answer.merge_all(fresh.range(1..)).expect("panes of one prototype");
            answer
        });
    });
    g.finish();
}

fn bench_window(c: &mut Criterion) {
    window_case(c, "hll_p14", HyperLogLog::new(14).expect("valid"), 10_000, 100);
    window_case(c, "hll_p14", HyperLogLog::new(14).expect("valid"), 100_000, 40);
    window_case(c, "countmin_4096x5", CountMin::new(4096, 5).expect("valid"), 10_000, 100);
}

criterion_group!(benches, bench_stream, bench_window);
criterion_main!(benches);
