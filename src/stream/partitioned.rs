//! The partitioned runner: N instances of an operator behind a partitioner. The teaching
//! text is in the [family docs](super).

use super::partitioner::Partitioner;
use crate::core::{ConfigError, MergeError, Mergeable, Operator, alloc};
use crate::hash::Hashable;

/// `N` instances of a mergeable operator, one per worker of a [`Partitioner`]: items are
/// routed to their worker's instance, the instances observe in parallel (with the `rayon`
/// feature), and [`merged`](Self::merged) combines them. For the sketches whose merge is
/// exact (HyperLogLog's registers, Flajolet–Martin, Count-Min with standard update, Bloom
/// and counting Bloom filters) the merged state is exactly that of one sequential pass over
/// the whole stream, whatever the partitioner and the number of workers. A merged
/// HyperLogLog answers with its register estimator (the single-stream martingale does not
/// survive a merge); heavy hitters and conservative Count-Min keep their guarantees but not
/// the sequential state; the samplers are distributed as one pass (each part draws from its
/// own random stream, [`Mergeable::empty_part`]).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{PartialKeyGrouping, Partitioned};
///
/// let mut parts = Partitioned::new(&HyperLogLog::new(12)?, PartialKeyGrouping::new(4)?)?;
/// for i in 0..100_000_u64 {
///     parts.observe(i % 30_000);
/// }
/// let mut sequential = HyperLogLog::new(12)?;
/// (0..100_000_u64).for_each(|i| sequential.observe(i % 30_000));
/// assert_eq!(parts.merged()?.register_estimate(), sequential.register_estimate());
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Partitioned<O, P> {
    parts: Vec<O>,
    partitioner: P,
}

impl<O: Mergeable, P: Partitioner> Partitioned<O, P> {
    /// One empty instance per worker of `partitioner`, part `i` made by
    /// [`empty_part(i)`](Mergeable::empty_part) of `proto` (its configuration, not its state).
    ///
    /// The parts are checked before they are made: their memory, the
    /// [`size_in_bytes`](Mergeable::size_in_bytes) of an empty part times the number of
    /// workers, must be at most [`MAX_BYTES`](Self::MAX_BYTES) (64 GiB), and the system must
    /// grant it (all of it at once, which an address-space limit, or on Linux more than the
    /// memory and swap, refuses); otherwise a [`ConfigError`] naming `workers` (a Count-Min of
    /// 64 MiB on 65 536 workers would ask for 4 TiB). What the parts take as they fill (a
    /// sparse sketch turning dense, a sample filling up) is each type's documented size, and
    /// is not checked here.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let parts = Partitioned::new(&CountMin::new(1024, 4)?, KeyGrouping::new(8)?)?;
    /// assert_eq!(parts.parts().len(), 8);
    /// let huge = Partitioned::new(&CountMin::new(1 << 20, 8)?, KeyGrouping::new(65_536)?);
    /// assert_eq!(huge.err().map(|e| e.parameter()), Some("workers"));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn new(proto: &O, partitioner: P) -> Result<Self, ConfigError> {
        let workers = partitioner.workers();
        let Some(first) = (workers > 0).then(|| proto.empty_part(0)) else {
            return Err(ConfigError::new("workers", 0, "at least 1"));
        };
        let bytes = (first.size_in_bytes() as u128).saturating_mul(workers as u128);
        let too_many =
            || ConfigError::new("workers", workers, "a number whose parts fit in 64 GiB (and can be allocated)");
        if bytes > Self::MAX_BYTES as u128 {
            return Err(too_many());
        }
        // The parts are allocated one by one, and infallibly: ask for all of their memory at
        // once first (see `core::alloc`), so that a total the system cannot provide is an
        // error here rather than an abort part way.
        alloc::check(usize::try_from(bytes).unwrap_or(usize::MAX), "workers", workers)?;
        let mut parts = Vec::new();
        parts.try_reserve_exact(workers).map_err(|_| too_many())?;
        parts.push(first);
        parts.extend((1..workers).map(|i| proto.empty_part(i as u64)));
        Ok(Self { parts, partitioner })
    }

    /// The most memory the parts of a new [`Partitioned`] may take together: 64 GiB.
    ///
    /// ```
    /// use synopses::stream::{KeyGrouping, Partitioned};
    /// use synopses::frequency::CountMin;
    ///
    /// assert_eq!(Partitioned::<CountMin, KeyGrouping>::MAX_BYTES, 1 << 36);
    /// ```
    pub const MAX_BYTES: u64 = 1 << 36;

    /// Routes one item to its worker's instance.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{KeyGrouping, Partitioned, Partitioner};
    ///
    /// let mut parts = Partitioned::new(&HyperLogLog::new(10)?, KeyGrouping::new(2)?)?;
    /// parts.observe("a");
    /// assert_eq!(parts.partitioner().loads().iter().sum::<u64>(), 1);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe<T: Hashable>(&mut self, item: T)
    where
        O: Operator<T>,
    {
        let worker = self.partitioner.route(&item);
        if let Some(part) = self.parts.get_mut(worker) {
            part.observe(item);
        }
    }

    /// Routes an item by a key of its own and has that worker's instance observe it: for
    /// items that are not themselves the key, such as `(item, weight)` pairs for a weighted
    /// sampler, or records routed by their id.
    ///
    /// ```
    /// use synopses::core::Weight;
    /// use synopses::sampling::WeightedReservoir;
    /// use synopses::stream::{PartialKeyGrouping, Partitioned};
    ///
    /// let mut parts = Partitioned::new(&WeightedReservoir::new(5, 7)?, PartialKeyGrouping::new(4)?)?;
    /// for flow in 0..1000_u64 {
    ///     parts.observe_by(&flow, (flow, Weight::new(1.0 + (flow % 10) as f64)?));
    /// }
    /// assert_eq!(parts.merged()?.seen(), 1000);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn observe_by<K: Hashable + ?Sized, T>(&mut self, key: &K, item: T)
    where
        O: Operator<T>,
    {
        let worker = self.partitioner.route(key);
        if let Some(part) = self.parts.get_mut(worker) {
            part.observe(item);
        }
    }

    /// Routes every item of a slice, then has each instance observe its items in one batch
    /// (its `observe_all`), in slice order. The same state as [`observe`](Self::observe) item
    /// by item.
    ///
    /// ```
    /// use synopses::membership::CountingBloom;
    /// use synopses::stream::{Partitioned, ShuffleGrouping};
    ///
    /// let items: Vec<u64> = (0..10_000).collect();
    /// let mut parts = Partitioned::new(&CountingBloom::new(50_000, 4)?, ShuffleGrouping::new(3)?)?;
    /// parts.observe_slice(&items);
    /// assert!(items.iter().all(|x| parts.merged().is_ok_and(|f| f.contains(x))));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn observe_slice<T: Hashable>(&mut self, items: &[T])
    where
        O: for<'a> Operator<&'a T>,
    {
        // In batches of `BATCH`, which keeps the index lists small and reused.
        for batch in items.chunks(BATCH) {
            let lists = route(&mut self.partitioner, batch);
            for (part, list) in self.parts.iter_mut().zip(&lists) {
                part.observe_all(list.iter().filter_map(|&i| batch.get(i as usize)));
            }
        }
    }

    /// Observes a slice on rayon's thread pool: one sender per thread routes a contiguous
    /// share of the slice with its own [`sender`](Partitioner::sender) copy of the
    /// partitioner (its local view of the loads, starting from zero, as every sender has in a
    /// real system), then every instance observes, in parallel, its items from each sender in
    /// slice order. The senders' loads are added to this partitioner's. Needs the `rayon`
    /// feature.
    ///
    /// The merged state of the sketches whose merge is exact (see [`Partitioned`]) is that of
    /// a sequential pass, whatever the number of threads; which worker a load-aware
    /// partitioner picks depends on how many senders there were. An
    /// [`oblivious`](Partitioner::oblivious) partitioner (shuffle grouping) gets one contiguous
    /// block per worker instead, sized by [`advance`](Partitioner::advance), with no routing.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let items: Vec<u64> = (0..1_000_000).collect();
    /// let mut parts = Partitioned::new(&HyperLogLog::new(14)?, KeyGrouping::new(4)?)?;
    /// parts.par_observe(&items);
    /// let mut sequential = HyperLogLog::new(14)?;
    /// sequential.observe_all(&items);
    /// assert_eq!(parts.merged()?.register_estimate(), sequential.register_estimate());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[cfg(feature = "rayon")]
    pub fn par_observe<T: Hashable + Sync>(&mut self, items: &[T])
    where
        O: for<'a> Operator<&'a T> + Send,
        P: Send + Sync,
    {
        use rayon::prelude::*;
        if self.partitioner.oblivious() {
            // Shuffle grouping: one contiguous block per worker, each as large as the share a
            // round robin from the partitioner's position would give it, and no routing.
            let sizes = self.partitioner.advance(items.len() as u64);
            let mut blocks = Vec::with_capacity(sizes.len());
            let mut rest = items;
            for &size in &sizes {
                let (block, tail) = rest.split_at(usize::try_from(size).unwrap_or(usize::MAX).min(rest.len()));
                blocks.push(block);
                rest = tail;
            }
            self.parts.par_iter_mut().zip(&blocks).for_each(|(part, block)| part.observe_all(block.iter()));
            return;
        }
        // Batches of `BATCH` items per sender, with index lists reused from batch to batch: a
        // few hundred kilobytes that stay in cache, where lists for the whole slice (4 bytes
        // an item, fresh memory every call) cost more in page faults than the routing saves.
        let senders = rayon::current_num_threads().max(1);
        let workers = self.parts.len();
        let mut states: Vec<(P, Vec<Vec<u32>>)> = (0..senders)
            .map(|_| (self.partitioner.sender(), vec![Vec::with_capacity(BATCH / workers.max(1) + 64); workers]))
            .collect();
        for batch in items.chunks(BATCH * senders) {
            let share = batch.len().div_ceil(senders).max(1);
            let chunks: Vec<&[T]> = batch.chunks(share).collect();
            states.par_iter_mut().zip(&chunks).for_each(|((sender, lists), chunk)| route_into(sender, chunk, lists));
            let states = &states;
            let chunks = &chunks;
            self.parts.par_iter_mut().enumerate().for_each(|(worker, part)| {
                for ((_, lists), chunk) in states.iter().zip(chunks) {
                    if let Some(list) = lists.get(worker) {
                        part.observe_all(list.iter().filter_map(|&i| chunk.get(i as usize)));
                    }
                }
            });
        }
        for (sender, _) in &states {
            self.partitioner.absorb(sender);
        }
    }

    /// Observes the items of an iterator on rayon's thread pool, in chunks of 2^20 items
    /// collected into a buffer and handed to [`par_observe`](Self::par_observe) one after
    /// another: for a stream that does not come as one slice. Needs the `rayon` feature.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let mut parts = Partitioned::new(&CountMin::new(2048, 4)?, KeyGrouping::new(2)?)?;
    /// parts.par_observe_iter((0..3_000_000_u64).map(|i| i % 1000));
    /// assert_eq!(parts.merged()?.estimate(7_u64), 3000);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[cfg(feature = "rayon")]
    pub fn par_observe_iter<T, I>(&mut self, items: I)
    where
        T: Hashable + Sync,
        I: IntoIterator<Item = T>,
        O: for<'a> Operator<&'a T> + Send,
        P: Send + Sync,
    {
        const CHUNK: usize = 1 << 20;
        let mut items = items.into_iter();
        let mut buffer: Vec<T> = Vec::with_capacity(CHUNK.min(items.size_hint().0.max(1)));
        loop {
            buffer.clear();
            buffer.extend(items.by_ref().take(CHUNK));
            if buffer.is_empty() {
                return;
            }
            self.par_observe(&buffer);
        }
    }

    /// The instances merged into one: the answer of the whole stream.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let mut parts = Partitioned::new(&CountMin::new(1024, 4)?, KeyGrouping::new(4)?)?;
    /// (0..1000_u64).for_each(|i| parts.observe(i % 10));
    /// assert_eq!(parts.merged()?.estimate(3_u64), 100);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn merged(&self) -> Result<O, MergeError> {
        // A partitioner has at least one worker (its constructors check it).
        let (first, rest) = self.parts.split_first().ok_or_else(|| MergeError::new("workers", 0, "at least 1"))?;
        // (An empty sampler merging a part adopts its state, generator included.)
        let mut out = first.empty_like();
        out.merge(first)?;
        out.merge_all(rest)?;
        Ok(out)
    }

    /// The instances, one per worker.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let parts = Partitioned::new(&HyperLogLog::new(10)?, KeyGrouping::new(2)?)?;
    /// assert!(parts.parts().iter().all(|p| p.estimate() == 0.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn parts(&self) -> &[O] {
        &self.parts
    }

    /// The partitioner, with the loads it routed.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{Partitioned, Partitioner, ShuffleGrouping};
    ///
    /// let mut parts = Partitioned::new(&HyperLogLog::new(10)?, ShuffleGrouping::new(2)?)?;
    /// (0..10_u64).for_each(|i| parts.observe(i));
    /// assert_eq!(parts.partitioner().loads(), &[5, 5]);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn partitioner(&self) -> &P {
        &self.partitioner
    }
}

/// Items routed per batch: small index lists, reused and in cache.
const BATCH: usize = 1 << 16;

/// The indexes of `items` routed to each worker, in order.
fn route<T: Hashable, P: Partitioner>(partitioner: &mut P, items: &[T]) -> Vec<Vec<u32>> {
    let workers = partitioner.workers().max(1);
    let mut lists = vec![Vec::new(); workers];
    route_into(partitioner, items, &mut lists);
    lists
}

/// Routes `items` into `lists` (one per worker), replacing what they held.
///
/// First each item's worker, in order; then, for a few workers, each worker's list by a
/// branch-free pass (`list[count] = i; count += (worker == w)`). Pushing item by item onto the
/// lists instead, and counting each item's load as it goes, chains every item to the last
/// through the lists' lengths and the loads in memory (profiled: 70 % of the routing time).
/// A partitioner that [`choose`](Partitioner::choose)s by the hash alone is counted per
/// worker afterwards.
fn route_into<T: Hashable, P: Partitioner>(partitioner: &mut P, items: &[T], lists: &mut [Vec<u32>]) {
    const COMPACT_UP_TO: usize = 8;
    let by_hash_alone = partitioner.choose(0).is_some();
    let seed = partitioner.routing_seed();
    let route = |p: &mut P, item: &T| {
        let hash = item.hash64(seed);
        if by_hash_alone { p.choose(hash).unwrap_or(0) } else { p.route_hash(hash) }
    };
    if lists.len() > COMPACT_UP_TO {
        lists.iter_mut().for_each(Vec::clear);
        for (i, item) in items.iter().enumerate() {
            if let Some(list) = lists.get_mut(route(partitioner, item)) {
                list.push(i as u32);
            }
        }
    } else {
        // (A worker index out of range, from a faulty partitioner, drops the item, as
        // `observe` does, rather than wrapping onto another worker.)
        let workers: Vec<u8> =
            items.iter().map(|item| u8::try_from(route(partitioner, item)).unwrap_or(u8::MAX)).collect();
        for (w, list) in lists.iter_mut().enumerate() {
            list.clear();
            list.resize(items.len(), 0);
            let mut count = 0;
            for (i, &worker) in workers.iter().enumerate() {
                if let Some(slot) = list.get_mut(count) {
                    *slot = i as u32;
                }
                count += usize::from(usize::from(worker) == w);
            }
            list.truncate(count);
        }
    }
    if by_hash_alone {
        for (w, list) in lists.iter().enumerate() {
            partitioner.add_load(w, list.len() as u64);
        }
    }
}
