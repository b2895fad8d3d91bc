//! Synopses as timely dataflow operators: each worker folds its own items, and only synopsis
//! bytes cross workers.
//!
//! Two extension traits give timely's streams (totally ordered timestamps such as `u64`) two
//! operators, so a synopsis sits inside a user's own dataflow and answers once per completed
//! timestamp:
//!
//! * [`SketchStream::sketch`]: one synopsis per timestamp, over the items of every worker
//!   (any container: `Vec<D>`, or one that lends `&D` without a copy).
//! * [`SketchByKey::sketch_by_key`]: one synopsis per key per timestamp, the items (a
//!   `Vec<D>` stream) routed by key with one of the crate's [partitioners](super::Partitioner).
//!
//! # How it works
//!
//! ```text
//!  worker 0: items @t ─► fold into part(t) ─┐  bytes when t completes   ┌─► merge parts of t ─► one synopsis @t
//!  worker 1: items @t ─► fold into part(t) ─┴──── exchange ─────────────┘   (worker 0)
//! ```
//!
//! 1. *Fold.* Each worker observes its items of timestamp `t` into its own part for `t`, an
//!    [`empty_part`](crate::core::Mergeable::empty_part) of the prototype, of index the hash of
//!    `(worker, t)` (and the key, per key), so that samplers draw independent random streams on
//!    every worker, at every time and for every key, and the same ones when a restarted
//!    computation replays a time: timestamps must be [`Hashable`], as `u64` is). For `sketch` the items stay on their worker; for
//!    `sketch_by_key` they are first routed by key (each worker routes with its own
//!    [`sender`](super::Partitioner::sender), as partial key grouping intends).
//! 2. *Ship.* When timely's progress tracking says that no more items of `t` can reach the
//!    operator (its input frontier has passed `t`), the worker encodes its parts of `t`
//!    ([`Codec::to_bytes`]) and drops them: per-time state lives only until the time completes.
//! 3. *Merge.* The bytes go to one worker: for `sketch`, worker 0 (so every answer lands on
//!    one worker, in time order, and a running total downstream needs no further exchange);
//!    for `sketch_by_key`, the worker of a plain hash of the key (the key's first candidate
//!    under the partitioner's routing seed, so under key grouping no bytes leave their worker and
//!    under partial key grouping at most one half does). When the time completes there too,
//!    that worker decodes the parts, merges them in worker order, and emits one result.
//!
//! A time at which no worker saw an item produces nothing: timely never learns of it, and an
//! empty synopsis would say nothing the absence of output does not.
//!
//! Raw items never cross workers for `sketch`, and cross once for `sketch_by_key` (routing is
//! what puts a key's items together). Memory is the open times' parts plus timely's batches,
//! whatever the length of the stream: feed the input in epochs and step the worker (see
//! `examples/timely.rs`, which prints its peak memory).
//!
//! For the sketches whose merge is exact (HyperLogLog, Flajolet–Martin, Count-Min, Bloom and
//! counting Bloom filters) the synopsis of a time holds exactly the state one sequential pass
//! over that time's items builds, but for a HyperLogLog's single-stream martingale, which a
//! merge of parts ends (`tests/timely.rs` checks 1, 2 and 4 threads and 2 processes).
//!
//! # Errors
//!
//! Each result is a `Result<_, `[`Error`]`>`: the bytes come from another process, so a part
//! that does not decode, or does not merge (two processes started with different parameters),
//! becomes an `Err` for its time (and key), never a panic. Split them with timely's `OkErr`.
//! [`sketch_by_key`](SketchByKey::sketch_by_key) returns a [`ConfigError`] while the dataflow is
//! built when the partitioner does not have one worker per timely worker.
//!
//! # Threads, processes, machines
//!
//! The workers are timely's: `-w` threads per process, `-n` processes, `-p` this process's
//! index, `-h` a file of `host:port` lines, one per process, in process order. Read them with
//! [`config_from_args`], which checks the host file before any connection is tried (timely's
//! own parser takes the first `-n` lines and ignores the rest, or fails on fewer):
//!
//! ```text
//! printf '127.0.0.1:2101\n127.0.0.1:2102\n' > hosts.txt
//! cargo run --release --features timely --example timely -- -n 2 -p 0 -h hosts.txt &
//! cargo run --release --features timely --example timely -- -n 2 -p 1 -h hosts.txt
//! ```
//!
//! Connecting: timely 0.32 retries a peer that does not answer every second, forever (it
//! prints `error connecting to worker i ... retrying`), and waits forever for the peers that
//! should connect to it, so a process whose peer is never started hangs. [`execute`] runs the
//! same computation with a time limit on connecting: past it, an `io::Error` of kind
//! `TimedOut` names the missing process.
//!
//! A process that dies mid-run takes the computation down: the others' receive threads fail
//! ("timely communication error: reading data: socket closed"), their workers panic on the
//! poisoned channel ("MergeQueue poisoned"), and joining the workers panics in timely's
//! communication guard, so each survivor exits within moments, with status 101 from `main`
//! (observed with `examples/timely.rs`, killing one of two processes mid-stream). Nothing is
//! recovered in place: restart every process, from the last checkpoint.
//!
//! ```
//! use std::cell::RefCell;
//! use std::rc::Rc;
//! use synopses::cardinality::HyperLogLog;
//! use synopses::stream::timely::SketchStream;
//! use timely::dataflow::InputHandle;
//! use timely::dataflow::operators::{Input, Inspect, Probe};
//!
//! let proto = HyperLogLog::new(12)?;
//! let per_worker = timely::execute(timely::Config::process(2), move |worker| {
//!     let (index, peers) = (worker.index() as u64, worker.peers() as u64);
//!     let mut input = InputHandle::new();
//!     let seen = Rc::new(RefCell::new(Vec::new()));
//!     let sink = Rc::clone(&seen);
//!     let probe = worker.dataflow::<u64, _, _>(|scope| {
//!         let (probe, _) = scope
//!             .input_from(&mut input)
//!             .container::<Vec<u64>>()
//!             .sketch(&proto)
//!             .inspect(move |result| sink.borrow_mut().push(result.clone()))
//!             .probe();
//!         probe
//!     });
//!     // Three epochs; this worker reads every `peers`-th user of each.
//!     for epoch in 0..3_u64 {
//!         (index..1000).step_by(peers as usize).for_each(|user| input.send(epoch * 500 + user));
//!         input.advance_to(epoch + 1);
//!         worker.step_while(|| probe.less_than(input.time()));
//!     }
//!     seen.take()
//! })?
//! .join();
//! let mut estimates = Vec::new();
//! for results in per_worker {
//!     for sketch in results? {
//!         estimates.push(sketch?.register_estimate());
//!     }
//! }
//! // All on worker 0, one per epoch, each exactly the sequential sketch's registers.
//! let mut sequential = Vec::new();
//! for epoch in 0..3_u64 {
//!     let mut hll = HyperLogLog::new(12)?;
//!     hll.observe_all((0..1000).map(|user| epoch * 500 + user));
//!     sequential.push(hll.register_estimate());
//! }
//! assert_eq!(estimates, sequential);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::rc::Rc;
use std::time::{Duration, Instant};

use timely::container::CapacityContainerBuilder;
use timely::container::DrainContainer;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator as _;
use timely::order::TotalOrder;
use timely::progress::Timestamp;
use timely::{Container, ExchangeData};

use super::partitioner::Partitioner;
use crate::codec::Codec;
use crate::core::{ConfigError, Error, Mergeable, Operator};
use crate::hash::{Hashable, derived_index};

/// The results of a sketching operator: one per completed timestamp (and key).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::timely::{SketchStream, Sketched};
/// use timely::dataflow::operators::ToStream;
///
/// let proto = HyperLogLog::new(10)?;
/// timely::example(move |scope| {
///     let numbers = (0..10_u64).to_stream(scope).container::<Vec<_>>();
///     let _sketched: Sketched<'_, u64, HyperLogLog> = numbers.sketch(&proto);
/// });
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub type Sketched<'scope, T, R> = Stream<'scope, T, Vec<Result<R, Error>>>;

/// One worker's part of a time, on its way to the merging worker: the key (`()` for a global
/// synopsis), the sending worker (parts merge in worker order, so results do not depend on
/// arrival order), and the encoding.
type Part<K> = (K, u64, Vec<u8>);

/// Timely streams that sketch their items, one synopsis per timestamp: see the
/// [module docs](self).
///
/// Implemented for every `Stream<'scope, T, C>` with a totally ordered timestamp and any
/// container `C` timely can drain (`Vec<D>` gives owned items; a container that lends
/// `&D` from shared memory, such as `Rc<Vec<D>>`, spares a copy of the input).
pub trait SketchStream<'scope, T: Timestamp, C: DrainContainer> {
    /// One synopsis per completed timestamp, over the items every worker saw at that time,
    /// emitted on worker 0 (the other workers emit nothing). Each worker folds its own items
    /// into its own parts, [`empty_part`](Mergeable::empty_part)s of `proto` (whose
    /// configuration alone counts, not what it saw); only the parts'
    /// encodings cross workers. A part that fails to decode or merge makes its time's
    /// result an `Err`.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::timely::SketchStream;
    /// use timely::dataflow::operators::{Capture, ToStream};
    ///
    /// let proto = CountMin::new(256, 4)?;
    /// let captured = timely::example(move |scope| {
    ///     (0..100_u64).to_stream(scope).container::<Vec<_>>().sketch(&proto).capture()
    /// });
    /// let mut results = Vec::new();
    /// for event in captured.try_iter() {
    ///     if let timely::dataflow::operators::capture::Event::Messages(_, batch) = event {
    ///         results.extend(batch);
    ///     }
    /// }
    /// assert_eq!(results.len(), 1); // one timestamp, one synopsis
    /// let cm = results.pop().ok_or("no result")??;
    /// assert_eq!((cm.total(), cm.estimate(&7_u64)), (100, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn sketch<O>(self, proto: &O) -> Sketched<'scope, T, O>
    where
        O: for<'a> Operator<C::Item<'a>> + Mergeable + Codec + 'static;
}

/// Timely streams of owned items that sketch them per key, routed by key: see the
/// [module docs](self).
///
/// Implemented for every `Stream<'scope, T, Vec<D>>` with a totally ordered timestamp (routing
/// moves the items, so they are owned and exchangeable).
pub trait SketchByKey<'scope, T: Timestamp, D> {
    /// One synopsis per key per completed timestamp. Items are routed to workers by
    /// `partitioner` over `key(item)` (each worker routes with its own
    /// [`sender`](Partitioner::sender)); each worker folds the items of each key into its own
    /// part of `proto`; when a time completes, the parts of a key (two under partial key
    /// grouping) travel as bytes to the worker of a plain hash of the key
    /// ([`Hashable::hash64`] under the partitioner's routing seed), which merges them and
    /// emits `(key, synopsis)`. Keys come out in no particular order within a time.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] while the dataflow is built if the partitioner does not have one
    /// worker per timely worker (`peers()`).
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::PartialKeyGrouping;
    /// use synopses::stream::timely::SketchByKey;
    /// use timely::dataflow::operators::{Capture, ToStream};
    /// use timely::dataflow::operators::capture::Event;
    ///
    /// // (page, user) views: distinct users per page.
    /// let views: Vec<(u64, u64)> = (0..1000).map(|i| (i % 3, i)).collect();
    /// let proto = HyperLogLog::new(12)?;
    /// let captured = timely::example(move |scope| {
    ///     let views = views.to_stream(scope).container::<Vec<_>>();
    ///     let grouping = PartialKeyGrouping::new(1)?; // one per worker
    ///     let per_page = views.sketch_by_key(&proto, grouping, |&(page, _)| page)?;
    ///     Ok::<_, synopses::ConfigError>(per_page.capture())
    /// })?;
    /// let mut pages = Vec::new();
    /// for event in captured.try_iter() {
    ///     if let Event::Messages(_, batch) = event {
    ///         for result in batch {
    ///             let (page, users) = result?;
    ///             pages.push((page, users.estimate().round()));
    ///         }
    ///     }
    /// }
    /// pages.sort_by_key(|&(page, _)| page);
    /// assert_eq!(pages, [(0, 334.0), (1, 333.0), (2, 333.0)]);
    /// // A partitioner for another number of workers is refused.
    /// let refused = timely::example(|scope| {
    ///     let views = (0..10_u64).map(|i| (i, i)).to_stream(scope).container::<Vec<_>>();
    ///     views.sketch_by_key(&HyperLogLog::new(12).ok()?, PartialKeyGrouping::new(2).ok()?, |v| v.0).err()
    /// });
    /// assert_eq!(refused.map(|e| e.parameter()), Some("partitioner workers"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn sketch_by_key<O, P, K, F>(
        self,
        proto: &O,
        partitioner: P,
        key: F,
    ) -> Result<Sketched<'scope, T, (K, O)>, ConfigError>
    where
        O: Operator<D> + Mergeable + Codec + 'static,
        P: Partitioner + 'static,
        D: ExchangeData,
        K: Hashable + Hash + Eq + ExchangeData,
        F: Fn(&D) -> K + 'static;
}

impl<'scope, T, C> SketchStream<'scope, T, C> for Stream<'scope, T, C>
where
    T: Timestamp + TotalOrder + Hashable,
    C: Container + DrainContainer,
{
    fn sketch<O>(self, proto: &O) -> Sketched<'scope, T, O>
    where
        O: for<'a> Operator<C::Item<'a>> + Mergeable + Codec + 'static,
    {
        let scope = self.scope();
        let worker = scope.index() as u64;
        let proto = proto.empty_like();
        let parts = self.unary_frontier::<CapacityContainerBuilder<Vec<Part<()>>>, _, _, _>(
            Pipeline,
            "SketchFold",
            move |_, _| {
                let mut open: BTreeMap<T, (Capability<T>, O)> = BTreeMap::new();
                move |(input, frontier), output| {
                    let port = output.output_index();
                    input.for_each_stamp(|stamp, batches| {
                        // A message without a time (an empty stamp, which a user operator must
                        // opt into sending) belongs to no time and has no result to join.
                        let Some(capability) = stamp.retain_least(port) else { return };
                        let time = capability.time().clone();
                        let index = (worker, time.clone()).hash64(PARTS_SEED);
                        let (_, part) = open.entry(time).or_insert_with(|| (capability, proto.empty_part(index)));
                        for batch in batches {
                            part.observe_all(batch.drain());
                        }
                    });
                    ship(&mut open, frontier, |capability, part| {
                        output.session(&capability).give(((), worker, part.to_bytes()));
                    });
                }
            },
        );
        merge_parts::<T, (), O, O>(parts, |_| 0, |(), synopsis| synopsis)
    }
}

impl<'scope, T, D> SketchByKey<'scope, T, D> for Stream<'scope, T, Vec<D>>
where
    T: Timestamp + TotalOrder + Hashable,
    D: 'static,
{
    fn sketch_by_key<O, P, K, F>(
        self,
        proto: &O,
        partitioner: P,
        key: F,
    ) -> Result<Sketched<'scope, T, (K, O)>, ConfigError>
    where
        O: Operator<D> + Mergeable + Codec + 'static,
        P: Partitioner + 'static,
        D: ExchangeData,
        K: Hashable + Hash + Eq + ExchangeData,
        F: Fn(&D) -> K + 'static,
    {
        let scope = self.scope();
        let (worker, peers) = (scope.index() as u64, scope.peers() as u64);
        if partitioner.workers() != scope.peers() {
            return Err(ConfigError::new(
                "partitioner workers",
                partitioner.workers(),
                "one per timely worker (the scope's peers())",
            ));
        }
        let key = Rc::new(key);
        let route_key = Rc::clone(&key);
        let mut sender = partitioner.sender();
        let routing = Exchange::new(move |item: &D| sender.route(&route_key(item)) as u64);
        let seed = partitioner.routing_seed();
        let proto = proto.empty_like();
        let parts = self.unary_frontier::<CapacityContainerBuilder<Vec<Part<K>>>, _, _, _>(
            routing,
            "SketchByKeyFold",
            move |_, _| {
                let mut open: BTreeMap<T, (Capability<T>, HashMap<K, O>)> = BTreeMap::new();
                move |(input, frontier), output| {
                    let port = output.output_index();
                    input.for_each_stamp(|stamp, batches| {
                        let Some(capability) = stamp.retain_least(port) else { return };
                        let time = capability.time().clone();
                        let (_, parts) = open.entry(time.clone()).or_insert_with(|| (capability, HashMap::new()));
                        for item in batches.flat_map(|batch| batch.drain(..)) {
                            let part = match parts.entry(key(&item)) {
                                Entry::Occupied(part) => part.into_mut(),
                                Entry::Vacant(slot) => {
                                    let index = (worker, time.clone(), slot.key()).hash64(PARTS_SEED);
                                    slot.insert(proto.empty_part(index))
                                }
                            };
                            part.observe(item);
                        }
                    });
                    ship(&mut open, frontier, |capability, parts| {
                        let mut session = output.session(&capability);
                        for (key, part) in parts {
                            session.give((key, worker, part.to_bytes()));
                        }
                    });
                }
            },
        );
        // The key's first candidate worker: where key grouping already put it.
        let home = move |key: &K| derived_index(key.hash64(seed), 0, peers) as u64;
        Ok(merge_parts::<T, K, O, (K, O)>(parts, home, |key, synopsis| (key, synopsis)))
    }
}

/// Sketched streams over `u64` timestamps answered per window: see [`windows`](Self::windows).
///
/// Implemented for every [`Sketched`] stream of `u64` times, such as the output of
/// [`SketchStream::sketch`].
pub trait SketchWindows<'scope, O> {
    /// Tumbling or sliding windows over the per-time synopses of a [`sketch`](SketchStream::sketch):
    /// each time's synopsis is merged into the [pane](super::Window) of its timestamp (timestamps
    /// are the window's clock: an epoch number, or milliseconds), and every window is emitted,
    /// once, as a [`Closed`](super::Closed) when timely's progress tracking says that every time
    /// before its end is complete, at the time `end − 1`. Windows without any item are not
    /// emitted. The synopsis of a window is exactly that of one synopsis over the window's
    /// items (the panes merge through [`TimeWindow`](super::TimeWindow)'s two-stacks aggregator,
    /// O(1) merges per slide), with the error of its type over those items (for a distinct
    /// count, the merged estimator's `1.04/√m`). Memory: `panes + O(1)` synopses, on the worker
    /// the results arrive at (worker 0 after `sketch`).
    ///
    /// Timely's progress makes lateness moot: a time's synopsis arrives before its time
    /// completes. An `Err` result passes through at its time; a synopsis that does not merge
    /// into its pane, or whose time is more than [`TimeWindow::MAX_OPEN_PANES`](super::TimeWindow::MAX_OPEN_PANES)
    /// panes ahead of the oldest incomplete time, becomes an `Err` result at its time.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] while the dataflow is built if `proto` cannot start a window of this
    /// shape.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::Window;
    /// use synopses::stream::timely::{SketchStream, SketchWindows};
    /// use timely::dataflow::InputHandle;
    /// use timely::dataflow::operators::{Input, Inspect};
    ///
    /// // 10 epochs of 100 users each, shifting by 50 users an epoch: distinct users over the
    /// // last 4 epochs, every 2 epochs.
    /// let proto = HyperLogLog::new(12)?;
    /// let windows = timely::execute_directly(move |worker| {
    ///     let mut input = InputHandle::new();
    ///     let windows = Rc::new(RefCell::new(Vec::new()));
    ///     let sink = Rc::clone(&windows);
    ///     worker.dataflow::<u64, _, _>(|scope| {
    ///         let sketched = scope.input_from(&mut input).container::<Vec<u64>>().sketch(&proto);
    ///         let windowed = sketched.windows(&proto, Window::sliding(4, 2)?)?;
    ///         windowed.inspect(move |w| sink.borrow_mut().push(w.clone()));
    ///         Ok::<_, synopses::ConfigError>(())
    ///     })?;
    ///     for epoch in 0..10_u64 {
    ///         (0..100).for_each(|user| input.send(epoch * 50 + user));
    ///         input.advance_to(epoch + 1);
    ///     }
    ///     drop(input);
    ///     while worker.step() {}
    ///     windows.take().into_iter().map(|w| w.map(|w| (w.start, w.end, w.synopsis.estimate())))
    ///         .collect::<Result<Vec<_>, _>>()
    /// })?;
    /// // Epochs 0 and 1 hold users 0..150, epochs 0..4 users 0..250, epochs 2..6 100..350, ...
    /// assert_eq!(windows[..3], [(0, 2, 150.0), (0, 4, 250.0), (2, 6, 250.0)]);
    /// // ... and after the last epoch, the windows still holding its items.
    /// assert_eq!(windows.last(), Some(&(8, 12, 150.0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn windows(self, proto: &O, window: super::Window) -> Result<Sketched<'scope, u64, super::Closed<O>>, ConfigError>;
}

impl<'scope, O> SketchWindows<'scope, O> for Sketched<'scope, u64, O>
where
    O: Mergeable + Clone + 'static,
{
    fn windows(self, proto: &O, window: super::Window) -> Result<Sketched<'scope, u64, super::Closed<O>>, ConfigError> {
        let mut panes = super::TimeWindow::new(proto, window, 0)?;
        let size = window.size();
        Ok(self.unary_frontier::<CapacityContainerBuilder<Vec<Result<super::Closed<O>, Error>>>, _, _, _>(
            Pipeline,
            "SketchWindows",
            move |_, _| {
                // The capability of the oldest time whose items may still be in a window to
                // come, and the newest time with items: once the frontier is a window's size
                // past it, no window to come holds an item.
                let mut held: Option<Capability<u64>> = None;
                let mut newest = None::<u64>;
                move |(input, frontier), output| {
                    // Every time below the frontier is complete (all of them, once it is empty),
                    // and every message waiting has a time at or after it: the watermark moves
                    // there first, so a time far after a quiet stretch is not refused as too
                    // early, and even while nothing is held.
                    let complete = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    let closed = panes.advance_to(complete);
                    if let Some(capability) = held.as_ref() {
                        match closed {
                            Ok(closed) => {
                                for window in closed {
                                    // (A window holds an item of a time at or after the held
                                    // one, so `end − 1` is not before it.)
                                    let at = capability.delayed(&window.end.saturating_sub(1).max(*capability.time()));
                                    output.session(&at).give(Ok(window));
                                }
                            }
                            Err(e) => output.session(capability).give(Err(Error::Merge(e))),
                        }
                    } else {
                        // Nothing held: no window holds an item, and windows without one are
                        // not emitted; a merge fails only over items.
                        debug_assert!(closed.is_ok_and(|closed| closed.is_empty()));
                    }
                    let port = output.output_index();
                    input.for_each_stamp(|stamp, batches| {
                        let Some(capability) = stamp.retain_least(port) else { return };
                        let time = *capability.time();
                        let mut session = output.session(&capability);
                        for result in batches.flat_map(|batch| batch.drain(..)) {
                            let merged = result.and_then(|synopsis| {
                                panes.merge_at(time, &synopsis).map_err(|e| match e {
                                    super::MergeAtError::Merge(e) => Error::Merge(e),
                                    other => Error::Merge(crate::MergeError::new("time", time, other)),
                                })
                            });
                            match merged {
                                Ok(()) => newest = Some(newest.map_or(time, |n| n.max(time))),
                                Err(e) => session.give(Err(e)),
                            }
                        }
                        drop(session);
                        if held.as_ref().is_none_or(|h| *h.time() > time) {
                            held = Some(capability);
                        }
                    });
                    let done = newest.is_none_or(|n| complete == u64::MAX || complete > n.saturating_add(size));
                    if done {
                        held = None;
                    } else if let Some(capability) = held.as_mut()
                        && complete > *capability.time()
                    {
                        capability.downgrade(&complete);
                    }
                }
            },
        ))
    }
}

/// The seed of the parts' indexes (see the module docs, *Fold*).
const PARTS_SEED: u64 = 0x7061_7274_7331_3500;

/// Hands every open time the frontier has passed to `send`, oldest first, and forgets it.
/// (Over a total order the times still open after the first incomplete one are incomplete too.)
fn ship<T: Timestamp + TotalOrder, S>(
    open: &mut BTreeMap<T, (Capability<T>, S)>,
    frontier: &timely::progress::frontier::MutableAntichain<T>,
    mut send: impl FnMut(Capability<T>, S),
) {
    while let Some(entry) = open.first_entry() {
        if frontier.less_equal(entry.key()) {
            break;
        }
        let (capability, state) = entry.remove();
        send(capability, state);
    }
}

/// The merging half of both operators: collects the encoded parts of each (time, key) on the
/// worker `target(key)`, and when the time completes decodes and merges them in worker order
/// and emits `finish(key, merged)`.
fn merge_parts<'scope, T, K, O, R>(
    parts: Stream<'scope, T, Vec<Part<K>>>,
    target: impl Fn(&K) -> u64 + 'static,
    finish: impl Fn(K, O) -> R + 'static,
) -> Sketched<'scope, T, R>
where
    T: Timestamp + TotalOrder,
    K: Hash + Eq + ExchangeData,
    O: Mergeable + Codec + 'static,
    R: 'static,
{
    let pact = Exchange::new(move |(key, _, _): &Part<K>| target(key));
    type Received<K> = HashMap<K, Vec<(u64, Vec<u8>)>>;
    parts.unary_frontier::<CapacityContainerBuilder<Vec<Result<R, Error>>>, _, _, _>(
        pact,
        "SketchMerge",
        move |_, _| {
            let mut open: BTreeMap<T, (Capability<T>, Received<K>)> = BTreeMap::new();
            move |(input, frontier), output| {
                let port = output.output_index();
                input.for_each_stamp(|stamp, batches| {
                    let Some(capability) = stamp.retain_least(port) else { return };
                    let (_, received) =
                        open.entry(capability.time().clone()).or_insert_with(|| (capability, HashMap::new()));
                    for (key, worker, bytes) in batches.flat_map(|batch| batch.drain(..)) {
                        received.entry(key).or_default().push((worker, bytes));
                    }
                });
                ship(&mut open, frontier, |capability, received| {
                    let mut session = output.session(&capability);
                    for (key, mut parts) in received {
                        parts.sort_unstable_by_key(|&(worker, _)| worker);
                        session.give(decode_and_merge::<O>(&parts).map(|merged| finish(key, merged)));
                    }
                });
            }
        },
    )
}

/// The merge of encoded parts (at least one, in the order given).
fn decode_and_merge<O: Mergeable + Codec>(parts: &[(u64, Vec<u8>)]) -> Result<O, Error> {
    let mut merged: Option<O> = None;
    for (_, bytes) in parts {
        let part = O::from_bytes(bytes)?;
        match merged.as_mut() {
            Some(merged) => merged.merge(&part)?,
            None => merged = Some(part),
        }
    }
    // Never reached: a (time, key) is recorded only with a part.
    merged.ok_or_else(|| ConfigError::new("parts", 0, "at least one part per time and key").into())
}

/// Reads timely's command-line options (`-w`, `-n`, `-p`, `-h`, `-r`, `-z`, after the program
/// name; free arguments are ignored, other options are an error: take yours out first) into a [`timely::Config`], after checking what timely would
/// otherwise discover by hanging or by silently dropping lines: that `-p` is below `-n`, and
/// that the host file exists and holds exactly `-n` non-empty `host:port` lines.
///
/// # Errors
///
/// A [`ConfigError`] naming the option (`-w`, `-n`, `-p`, `-h`) and the offending value.
///
/// ```
/// use synopses::stream::timely::config_from_args;
///
/// let dir = std::env::temp_dir().join(format!("synopses-doc-hosts-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let hosts = dir.join("hosts.txt");
/// std::fs::write(&hosts, "127.0.0.1:2101\n127.0.0.1:2102\n")?;
/// let hosts = hosts.to_str().ok_or("a path in UTF-8")?;
/// let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
///
/// config_from_args(args(&["prog", "-w", "2"]))?;
/// config_from_args(args(&["prog", "-n", "2", "-p", "1", "-h", hosts]))?;
/// let err = config_from_args(args(&["prog", "-n", "3", "-p", "0", "-h", hosts])).unwrap_err();
/// assert_eq!(err.parameter(), "-h");
/// assert_eq!(config_from_args(args(&["prog", "-n", "2", "-p", "2", "-h", hosts])).unwrap_err().parameter(), "-p");
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn config_from_args<I: IntoIterator<Item = String>>(args: I) -> Result<timely::Config, ConfigError> {
    let mut options = getopts::Options::new();
    timely::Config::install_options(&mut options);
    // The program name first, as in `std::env::args()`.
    let matches = options
        .parse(args.into_iter().skip(1))
        .map_err(|e| ConfigError::new("timely options", e, "-w, -n, -p, -h, -r, -z with their values"))?;
    let number = |option: &'static str, default: usize| -> Result<usize, ConfigError> {
        match matches.opt_str(option.trim_start_matches('-')) {
            None => Ok(default),
            Some(value) => value.parse().map_err(|_| ConfigError::new(option, value, "a non-negative integer")),
        }
    };
    let threads = number("-w", 1)?;
    let processes = number("-n", 1)?;
    let process = number("-p", 0)?;
    if threads == 0 {
        return Err(ConfigError::new("-w", threads, "at least one worker thread"));
    }
    if processes == 0 {
        return Err(ConfigError::new("-n", processes, "at least one process"));
    }
    if process >= processes {
        return Err(ConfigError::new("-p", format!("{process} with -n {processes}"), "a process index below -n"));
    }
    if processes > 1
        && let Some(path) = matches.opt_str("h")
    {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ConfigError::new("-h", format!("{path} ({e})"), "a readable host file"))?;
        let addresses = text.lines().filter(|l| !l.trim().is_empty()).count();
        if addresses != processes {
            return Err(ConfigError::new(
                "-h",
                format!("{path} with {addresses} addresses for -n {processes}"),
                "exactly one host:port line per process",
            ));
        }
        // Timely takes the first `-n` lines as they are written: a blank or padded one among
        // them would be an address nobody can reach.
        if let Some(bad) = text.lines().take(processes).find(|line| !is_address(line)) {
            return Err(ConfigError::new(
                "-h",
                format!("{path}: {bad:?}"),
                "the first -n lines of the form host:port, without blanks or spaces",
            ));
        }
    }
    timely::Config::from_matches(&matches).map_err(|e| ConfigError::new("timely options", e, "options timely accepts"))
}

/// `host:port` with a port number and no white space (timely connects to the line as written).
fn is_address(line: &str) -> bool {
    !line.contains(char::is_whitespace)
        && line.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

/// [`timely::execute()`], but processes that cannot all connect within `connect_timeout` fail
/// with an [`io::Error`] of kind `TimedOut` instead of waiting forever (timely 0.32 retries a
/// silent peer every second, without end). Threads and single processes run as
/// `timely::execute` runs them; timely's own errors become `io::Error`s.
///
/// The processes connect as timely's do (each listens on its line of the host file, dials the
/// processes before it and introduces itself by its index), and the connected sockets are then
/// handed to timely's networking, so the computation is timely's from there on.
///
/// # Errors
///
/// `TimedOut` naming the process not reached; `InvalidData` if a peer introduces itself with
/// an index it cannot have; any error binding or connecting a socket.
///
/// ```
/// use std::time::Duration;
/// use synopses::stream::timely::{config_from_args, execute};
///
/// // Two processes, of which only process 1 is started: it gives up after the timeout.
/// let free = || -> std::io::Result<u16> { Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()) };
/// let hosts = std::env::temp_dir().join(format!("synopses-doc-execute-{}.txt", std::process::id()));
/// std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free()?, free()?))?;
/// let args = ["prog", "-n", "2", "-p", "1", "-h", hosts.to_str().ok_or("UTF-8")?];
/// let config = config_from_args(args.map(String::from))?;
/// let outcome = execute(config, Duration::from_millis(300), |worker| worker.index());
/// assert_eq!(outcome.err().map(|e| e.kind()), Some(std::io::ErrorKind::TimedOut));
/// std::fs::remove_file(&hosts)?;
/// // Threads are unaffected.
/// let indexes = execute(timely::Config::process(2), Duration::from_secs(1), |w| w.index())?.join();
/// assert_eq!(indexes.into_iter().collect::<Result<Vec<_>, _>>()?, [0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn execute<R, F>(
    config: timely::Config,
    connect_timeout: Duration,
    func: F,
) -> io::Result<timely::communication::WorkerGuards<R>>
where
    R: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> R + Send + Sync + 'static,
{
    use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
    use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
    use timely::communication::{Config as Communication, Hooks};

    let timely::Config { communication, worker } = config;
    let Communication::Cluster { threads, process, addresses, report, zerocopy } = communication else {
        return timely::execute(timely::Config { communication, worker }, func).map_err(io::Error::other);
    };
    let sockets = connect(&addresses, process, connect_timeout, report)?;
    let hooks = Hooks::default();
    let (refill, spill) = (hooks.refill.clone(), hooks.spill.clone());
    let local = if zerocopy {
        ProcessBuilder::new_bytes_vector(threads, refill, spill)
    } else {
        ProcessBuilder::new_typed_vector(threads, refill, spill)
    };
    let (builders, guard) = initialize_networking_from_sockets(local, sockets, process, threads, hooks)?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    timely::execute::execute_from(builders, Box::new(guard), worker, func).map_err(io::Error::other)
}

/// The sockets to every other process (`None` at `me`), by timely's handshake: listen on this
/// process's address, dial the processes before it and send them this index (8 bytes, big
/// endian), accept the processes after it and read theirs; all before `deadline`.
fn connect(addresses: &[String], me: usize, timeout: Duration, report: bool) -> io::Result<Vec<Option<TcpStream>>> {
    let deadline = Instant::now() + timeout;
    let late = |what: String| io::Error::new(io::ErrorKind::TimedOut, format!("{what} within {timeout:?}"));
    let mine = addresses.get(me).ok_or_else(|| io::Error::other(format!("no address for process {me}")))?;
    // Listening first: the later processes' connections wait in the backlog while this one
    // dials the earlier ones, so the order of starts does not matter.
    let listeners = mine.split_whitespace().map(TcpListener::bind).collect::<io::Result<Vec<_>>>()?;
    for listener in &listeners {
        listener.set_nonblocking(true)?;
    }
    let mut sockets: Vec<Option<TcpStream>> = addresses.iter().map(|_| None).collect();
    for (index, address) in addresses.iter().enumerate().take(me) {
        let mut stream = loop {
            // Each attempt within what is left of the time limit (a host that drops the
            // packets would otherwise hold a plain `connect` for minutes).
            let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
            let attempt = address
                .to_socket_addrs()
                .and_then(|mut found| found.next().ok_or_else(|| io::Error::other("no address")))
                .and_then(|socket| TcpStream::connect_timeout(&socket, left));
            match attempt {
                Ok(stream) => break stream,
                Err(e) if Instant::now() >= deadline => {
                    return Err(late(format!("process {me} could not reach process {index} at {address} ({e})")));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream.set_nodelay(true)?;
        stream.write_all(&(me as u64).to_be_bytes())?;
        if report {
            println!("process {me}: connected to process {index}");
        }
        sockets[index] = Some(stream);
    }
    while sockets.iter().skip(me + 1).any(Option::is_none) {
        let mut accepted = false;
        for listener in &listeners {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false)?;
                    stream.set_nodelay(true)?;
                    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                    stream.set_read_timeout(Some(left))?;
                    let mut index = [0; 8];
                    // (A read timeout is `WouldBlock` on Unix and `TimedOut` elsewhere.)
                    stream.read_exact(&mut index).map_err(|e| match e.kind() {
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                            late(format!("process {me}: a peer connected but did not say which process it is"))
                        }
                        _ => e,
                    })?;
                    stream.set_read_timeout(None)?;
                    let index = usize::try_from(u64::from_be_bytes(index)).unwrap_or(usize::MAX);
                    match sockets.get_mut(index) {
                        Some(slot @ None) if index > me => *slot = Some(stream),
                        _ => {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidData,
                                format!("process {me}: a peer introduced itself as process {index}"),
                            ));
                        }
                    }
                    if report {
                        println!("process {me}: connection from process {index}");
                    }
                    accepted = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        if !accepted {
            if Instant::now() >= deadline {
                let missing: Vec<usize> =
                    (me + 1..addresses.len()).filter(|&i| sockets.get(i).is_some_and(Option::is_none)).collect();
                return Err(late(format!("process {me} heard from no process {missing:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(sockets)
}
