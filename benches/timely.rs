//! The timely operator (`SketchStream::sketch`) against one sequential pass.
//!
//! Run with `cargo bench -p synopses-benches --bench timely`. Ids read
//! `timely/structure/implementation`.
//!
//! Data: `N` = 10^7 distinct `u64` items (seeded splitmix64), generated once and shared by
//! every worker thread. Throughput is `N` elements.
//!
//! - `sequential`: one instance cloned in the untimed setup, `observe_all` over the slice.
//! - `workers_1`, `workers_2`: one timely computation per iteration with 1 or 2 worker threads
//!   (their start is timed: it is part of the answer). Worker `i` reads its contiguous share
//!   of the slice in batches of `BATCH` = 10^6 items, one timestamp per batch, lent to the
//!   dataflow as `&u64` items (the `Lent` container, no copy): it hands the batch to its
//!   input, advances the input's time, steps, and parks while more than `LAG` times are
//!   incomplete. `sketch` folds each worker's batch into its own part and merges the parts of
//!   each time on worker 0, where a running total merges the times: the total is the answer,
//!   as `sequential`'s.
//! - `workers_2_copied`: the same with each batch copied into a `Vec<u64>` (what a stream of
//!   owned items costs).
//! - `workers_2_batch_1e5`: timestamps of 10^5 items per worker: twenty times as many parts
//!   to start, encode and merge (a HyperLogLog part starts sparse, which costs per part).
//! - `workers_2_batch_5e6`: one timestamp for each worker's whole half: one part per worker,
//!   the bound the fresh parts' start leaves to the finer timestamps.
//!
//! The goal: `workers_2` at least 1.6× the sequential throughput on 2 cores.

mod common;
use common::{DATA_SEED, big_group, splitmix64};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use synopses::cardinality::HyperLogLog;
use synopses::codec::Codec;
use synopses::core::{Mergeable, Operator};
use synopses::frequency::CountMin;
use synopses::stream::timely::SketchStream;
use timely::dataflow::InputHandle;
use timely::dataflow::operators::{Input, Inspect, Probe};

const N: usize = 10_000_000;
/// Items per worker per timestamp.
const BATCH: usize = 1_000_000;
/// Timestamps a worker may run ahead of the completed ones.
const LAG: u64 = 4;

/// A batch of the shared slice, lent to the dataflow without a copy: a timely container whose
/// items are `&u64`, as the sequential loop's.
#[derive(Clone, Copy, Default)]
struct Lent(&'static [u64]);

impl timely::Accountable for Lent {
    fn record_count(&self) -> i64 {
        self.0.len() as i64
    }
}

impl timely::container::DrainContainer for Lent {
    type Item<'a> = &'a u64;
    type DrainIter<'a> = std::slice::Iter<'a, u64>;
    fn drain(&mut self) -> Self::DrainIter<'_> {
        self.0.iter()
    }
}

fn items() -> &'static [u64] {
    static ITEMS: OnceLock<Vec<u64>> = OnceLock::new();
    ITEMS.get_or_init(|| {
        let mut state = DATA_SEED;
        (0..N).map(|_| splitmix64(&mut state)).collect()
    })
}

/// The whole slice through `sketch` on `workers` threads, lent in batches of `batch` items
/// (or copied into vectors, if `copied`); the running total of worker 0.
fn operator<O>(proto: &O, workers: usize, batch: usize, copied: bool) -> O
where
    O: Operator<u64> + for<'a> Operator<&'a u64> + Mergeable + Codec + Clone + Send + Sync + 'static,
{
    let proto = proto.clone();
    let config = if workers == 1 { timely::Config::thread() } else { timely::Config::process(workers) };
    let guards = timely::execute(config, move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let share = &items()[index * N / peers..(index + 1) * N / peers];
        let total = Rc::new(RefCell::new(proto.empty_like()));
        let sink = Rc::clone(&total);
        let (mut lent, mut owned) = (InputHandle::new(), InputHandle::new());
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let results = if copied {
                scope.input_from(&mut owned).container::<Vec<u64>>().sketch(&proto)
            } else {
                scope.input_from(&mut lent).container::<Lent>().sketch(&proto)
            };
            let (probe, _) = results
                .inspect(move |time| {
                    let part = time.as_ref().expect("parts of one process decode");
                    sink.borrow_mut().merge(part).expect("parts of one configuration");
                })
                .probe();
            probe
        });
        for (time, batch) in share.chunks(batch).enumerate() {
            if copied {
                owned.send_batch(&mut batch.to_vec());
            } else {
                lent.send_batch(&mut Lent(batch));
            }
            lent.advance_to(time as u64 + 1);
            owned.advance_to(time as u64 + 1);
            worker.step();
            // At most `LAG` times in flight: memory stays bounded, and a worker a little ahead
            // of the other does not wait for it at every batch.
            let oldest = (time as u64 + 1).saturating_sub(LAG);
            worker.step_or_park_while(None, || probe.less_than(&oldest));
        }
        drop((lent, owned));
        worker.step_or_park_while(None, || !probe.done());
        drop(probe);
        total.replace(proto.empty_like())
    })
    .expect("worker threads start");
    guards.join().into_iter().next().expect("worker 0").expect("worker 0 finishes")
}

fn structure<O>(c: &mut Criterion, name: &str, proto: O)
where
    O: Operator<u64> + for<'a> Operator<&'a u64> + Mergeable + Codec + Clone + Send + Sync + 'static,
{
    let items = items();
    let mut g = big_group(c, &format!("timely/{name}"));
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
    for workers in [1, 2] {
        g.bench_function(format!("workers_{workers}"), |b| b.iter(|| operator(&proto, workers, BATCH, false)));
    }
    g.bench_function("workers_2_copied", |b| b.iter(|| operator(&proto, 2, BATCH, true)));
    g.bench_function("workers_2_batch_1e5", |b| b.iter(|| operator(&proto, 2, 100_000, false)));
    g.bench_function("workers_2_batch_5e6", |b| b.iter(|| operator(&proto, 2, N / 2, false)));
    g.finish();
}

fn bench_timely(c: &mut Criterion) {
    structure(c, "hll_p14", HyperLogLog::new(14).expect("valid"));
    structure(c, "countmin_4096x5", CountMin::new(4096, 5).expect("valid"));
}

criterion_group!(benches, bench_timely);
criterion_main!(benches);
