//! Partitioned synopses on timely dataflow: workers in threads, processes or machines.

use std::cell::RefCell;
use std::rc::Rc;

use timely::communication::Allocate;
use timely::dataflow::operators::{Exchange, Input, Inspect, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

use super::partitioner::Partitioner;
use crate::codec::Codec;
use crate::core::{ConfigError, Mergeable, Operator};
use crate::hash::Hashable;

/// Runs one partitioned synopsis over all the workers of a timely computation, from inside
/// each worker's closure: this worker's `items` enter a dataflow, are routed to their
/// worker by `partitioner` (one copy per sending worker, judging from its own loads), are
/// observed there into that worker's part ([`empty_part`](Mergeable::empty_part) of
/// `proto`), and when the input ends every part travels, as its [encoding](Codec), to
/// worker 0, which merges them. Returns the merged synopsis on worker 0 and `None` on the
/// others.
///
/// The partitioner must have one worker per timely worker (`worker.peers()`). For the
/// sketches whose merge is exact (see [`Partitioned`](super::Partitioned)) the result holds
/// the state of the sequential one (but for its single-stream martingale, which a merge
/// ends), however many workers, threads or processes; run the same
/// computation with `-w`, or with `-n`, `-p` and `-h` over processes (see
/// `examples/timely.rs`).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{PartialKeyGrouping, timely::partitioned};
///
/// let (proto, grouping) = (HyperLogLog::new(12)?, PartialKeyGrouping::new(2)?);
/// let results = timely::execute(timely::Config::process(2), move |worker| {
///     let index = worker.index() as u64;
///     // Each worker reads its own share of the input: here, every other number.
///     let items = (0..10_000_u64).filter(move |x| x % 2 == index);
///     partitioned(worker, &proto, grouping.clone(), items)
/// })?
/// .join();
/// let mut sequential = HyperLogLog::new(12)?;
/// sequential.observe_all(0..10_000_u64);
/// let mut merged = None;
/// for result in results {
///     merged = merged.or(result??); // worker 0's is `Some`
/// }
/// assert_eq!(merged.map(|m| m.register_estimate()), Some(sequential.register_estimate()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn partitioned<A, O, P, D, I>(
    worker: &mut Worker<A>,
    proto: &O,
    partitioner: P,
    items: I,
) -> Result<Option<O>, crate::Error>
where
    A: Allocate,
    O: Mergeable + Codec + Operator<D> + 'static,
    P: Partitioner + 'static,
    D: timely::ExchangeData + Hashable,
    I: IntoIterator<Item = D>,
{
    if partitioner.workers() != worker.peers() {
        return Err(ConfigError::new("partitioner workers", partitioner.workers(), "one per timely worker").into());
    }
    let index = worker.index();
    let part = Rc::new(RefCell::new(proto.empty_part(index as u64)));

    // Route the items to their workers and observe them there.
    let mut input = InputHandle::<u64, D>::new();
    let probe = ProbeHandle::new();
    let sink = Rc::clone(&part);
    let mut sender = partitioner.sender();
    worker.dataflow::<u64, _, _>(|scope| {
        scope
            .input_from(&mut input)
            .exchange(move |item: &D| sender.route(item) as u64)
            .inspect(move |item: &D| sink.borrow_mut().observe(item.clone()))
            .probe_with(&probe);
    });
    for item in items {
        input.send(item);
    }
    input.close();
    while !probe.done() {
        worker.step();
    }

    // Send every part to worker 0, which decodes and merges them.
    let merged: Rc<RefCell<Result<Option<O>, crate::Error>>> = Rc::new(RefCell::new(Ok(None)));
    let mut parts = InputHandle::<u64, Vec<u8>>::new();
    let probe = ProbeHandle::new();
    let into = Rc::clone(&merged);
    worker.dataflow::<u64, _, _>(|scope| {
        scope
            .input_from(&mut parts)
            .exchange(|_: &Vec<u8>| 0)
            .inspect(move |bytes: &Vec<u8>| {
                let mut slot = into.borrow_mut();
                let step = O::from_bytes(bytes).map_err(crate::Error::from).and_then(|part| match slot.as_mut() {
                    Ok(Some(acc)) => acc.merge(&part).map_err(crate::Error::from),
                    Ok(None) => {
                        *slot = Ok(Some(part));
                        Ok(())
                    }
                    Err(_) => Ok(()),
                });
                if let Err(e) = step {
                    *slot = Err(e);
                }
            })
            .probe_with(&probe);
    });
    parts.send(part.borrow().to_bytes());
    parts.close();
    while !probe.done() {
        worker.step();
    }
    merged.replace(Ok(None))
}
