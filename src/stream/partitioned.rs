//! The partitioned runner: N instances of an operator behind a partitioner. The teaching
//! text is in the [family docs](super).

use super::partitioner::{KEY_SEED, Partitioner, routing_hash};
#[cfg(feature = "rayon")]
use crate::core::ObserveHash;
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
        let Some(fill) = items.first() else { return };
        let seed = self.partitioner.routing_seed();
        let mut buffers = Buffers::new(self.parts.len());
        for round in items.chunks(ROUND) {
            buffers.route(&mut self.partitioner, round, fill, |item| (routing_hash(item.hash64(KEY_SEED), seed), item));
            for (worker, part) in self.parts.iter_mut().enumerate() {
                part.observe_all(buffers.get(worker).iter().copied());
            }
        }
    }

    /// Observes a slice on rayon's thread pool: one sender per thread routes a contiguous
    /// share of each round of the slice with its own [`sender`](Partitioner::sender) copy of
    /// the partitioner (its local view of the loads, starting from zero, as every sender has
    /// in a real system) into its buffers, one per worker; then every instance observes, in
    /// parallel, its items from each sender in slice order, while the senders route the next
    /// round. The senders' loads are added to this partitioner's. Needs the `rayon` feature.
    ///
    /// The merged state of the sketches whose merge is exact (see [`Partitioned`]) is that of
    /// a sequential pass, whatever the number of threads; which worker a load-aware
    /// partitioner picks depends on how many senders there were. An
    /// [`oblivious`](Partitioner::oblivious) partitioner (shuffle grouping) gets one contiguous
    /// block per worker instead, sized by [`advance`](Partitioner::advance), with no routing.
    ///
    /// For a synopsis that hashes its items (HyperLogLog, Count-Min, the Bloom filters),
    /// [`par_observe_hashed`](Self::par_observe_hashed) routes the same way, hashing each
    /// item once instead of twice.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let items: Vec<u64> = (0..1_000_000).collect();
    /// let mut parts = Partitioned::new(&Reservoir::new(100, 7)?, KeyGrouping::new(4)?)?;
    /// parts.par_observe(&items);
    /// assert_eq!(parts.merged()?.seen(), 1_000_000);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[cfg(feature = "rayon")]
    pub fn par_observe<T: Hashable + Sync>(&mut self, items: &[T])
    where
        O: for<'a> Operator<&'a T> + Send,
        P: Send + Sync,
    {
        if self.observe_blocks(items) {
            return;
        }
        let Some(fill) = items.first() else { return };
        let seed = self.partitioner.routing_seed();
        par_route(
            &mut self.parts,
            &mut self.partitioner,
            items,
            fill,
            |item| (routing_hash(item.hash64(KEY_SEED), seed), item),
            |part, items| part.observe_all(items.iter().copied()),
        );
    }

    /// [`par_observe`](Self::par_observe) for a synopsis that hashes its items
    /// ([`ObserveHash`]: the cardinality sketches, Count-Min, the Bloom filters): each item is
    /// hashed once, under the synopsis's [`hash_seed`](ObserveHash::hash_seed), its route is
    /// that hash mixed with the partitioner's seed ([`routing_hash`]), and its worker's
    /// instance observes the hash ([`observe_hash`](ObserveHash::observe_hash)): the
    /// senders buffer 8-byte hashes rather than items. Needs the `rayon` feature.
    ///
    /// Items go to the same workers as through [`observe`](Self::observe),
    /// [`observe_slice`](Self::observe_slice) and [`par_observe`](Self::par_observe), all of
    /// which route by the item's hash under [`KEY_SEED`], the sketches' default seed. A
    /// synopsis of another seed is therefore hashed twice here (once to route, once for
    /// itself), which keeps every route the same whatever the synopsis's seed.
    ///
    /// (Why a method of its own rather than `par_observe` choosing the path: without
    /// specialization one generic method cannot ask whether `O` hashes, and the samplers,
    /// which keep their items, must still be given items.)
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let items: Vec<u64> = (0..1_000_000).collect();
    /// let mut parts = Partitioned::new(&HyperLogLog::new(14)?, KeyGrouping::new(4)?)?;
    /// parts.par_observe_hashed(&items);
    /// let mut sequential = HyperLogLog::new(14)?;
    /// sequential.observe_all(&items);
    /// assert_eq!(parts.merged()?.register_estimate(), sequential.register_estimate());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[cfg(feature = "rayon")]
    pub fn par_observe_hashed<T: Hashable + Sync>(&mut self, items: &[T])
    where
        O: ObserveHash + for<'a> Operator<&'a T> + Send,
        P: Send + Sync,
    {
        if self.observe_blocks(items) {
            return;
        }
        let (Some(first), Some(_)) = (self.parts.first(), items.first()) else { return };
        let (seed, routing_seed) = (first.hash_seed(), self.partitioner.routing_seed());
        let feed = |part: &mut O, hashes: &[u64]| hashes.iter().for_each(|&hash| part.observe_hash(hash));
        let (parts, partitioner) = (&mut self.parts, &mut self.partitioner);
        if seed == KEY_SEED {
            par_route(
                parts,
                partitioner,
                items,
                0,
                |item| {
                    let hash = item.hash64(seed);
                    (routing_hash(hash, routing_seed), hash)
                },
                feed,
            );
        } else {
            par_route(
                parts,
                partitioner,
                items,
                0,
                |item| (routing_hash(item.hash64(KEY_SEED), routing_seed), item.hash64(seed)),
                feed,
            );
        }
    }

    /// For an [`oblivious`](Partitioner::oblivious) partitioner (shuffle grouping): observes
    /// one contiguous block per worker, each as large as the share a round robin from the
    /// partitioner's position would give it, with no routing, and returns `true`; `false`
    /// (having done nothing) for any other partitioner.
    #[cfg(feature = "rayon")]
    fn observe_blocks<T: Sync>(&mut self, items: &[T]) -> bool
    where
        O: for<'a> Operator<&'a T> + Send,
    {
        use rayon::prelude::*;
        if !self.partitioner.oblivious() {
            return false;
        }
        let sizes = self.partitioner.advance(items.len() as u64);
        let mut blocks = Vec::with_capacity(sizes.len());
        let mut rest = items;
        for &size in &sizes {
            let (block, tail) = rest.split_at(usize::try_from(size).unwrap_or(usize::MAX).min(rest.len()));
            blocks.push(block);
            rest = tail;
        }
        padded(&mut self.parts, |slots| {
            slots.par_iter_mut().zip(&blocks).for_each(|(slot, block)| slot.0.observe_all(block.iter()));
        });
        true
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

    /// The instances merged into one, consuming them: [`merged`](Self::merged) without a
    /// fresh instance to merge into (the first part takes the others in), for the end of a
    /// stream.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{Partitioned, ShuffleGrouping};
    ///
    /// let mut parts = Partitioned::new(&HyperLogLog::new(12)?, ShuffleGrouping::new(3)?)?;
    /// (0..1000_u64).for_each(|i| parts.observe(i));
    /// let merged = parts.merged()?;
    /// assert_eq!(parts.into_merged()?, merged);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn into_merged(self) -> Result<O, MergeError> {
        let mut parts = self.parts.into_iter();
        let mut out = parts.next().ok_or_else(|| MergeError::new("workers", 0, "at least 1"))?;
        parts.try_for_each(|part| out.merge(&part))?;
        Ok(out)
    }

    /// A partitioned operator from its parts and its partitioner, as a checkpoint saved them
    /// (each part and the partitioner through their [codecs](crate::codec::Codec)): part `i`
    /// is worker `i`'s. A [`ConfigError`] naming `workers` unless there is one part per
    /// worker.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{KeyGrouping, Partitioned};
    ///
    /// let mut parts = Partitioned::new(&HyperLogLog::new(10)?, KeyGrouping::new(2)?)?;
    /// (0..1000_u64).for_each(|i| parts.observe(i));
    /// let saved: Vec<Vec<u8>> = parts.parts().iter().map(|p| p.to_bytes()).collect();
    /// let partitioner = KeyGrouping::from_bytes(&parts.partitioner().to_bytes())?;
    /// let restored: Vec<HyperLogLog> = saved.iter().map(|b| HyperLogLog::from_bytes(b)).collect::<Result<_, _>>()?;
    /// let restored = Partitioned::from_parts(restored, partitioner)?;
    /// assert_eq!(restored.merged()?, parts.merged()?);
    /// assert!(Partitioned::from_parts(vec![HyperLogLog::new(10)?], KeyGrouping::new(2)?).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn from_parts(parts: Vec<O>, partitioner: P) -> Result<Self, ConfigError> {
        let workers = partitioner.workers();
        if parts.len() != workers || workers == 0 {
            return Err(ConfigError::new("workers", workers, "the number of parts, at least 1"));
        }
        Ok(Self { parts, partitioner })
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

/// Items each sender routes per round: its buffers (8 bytes an item, double-buffered in
/// `par_route`) stay in the core's L2 cache beside the part it observes into.
const ROUND: usize = 1 << 14;

/// Workers up to which a sender writes every item into every worker's buffer and advances
/// only the right one (see [`Buffers::route`]).
const SCATTER_UP_TO: usize = 8;

/// One sender's buffers of routed entries (item references or hashes), one per worker,
/// reused from round to round: `lists[w][..filled[w]]` is what worker `w` gets.
struct Buffers<E> {
    lists: Vec<Vec<E>>,
    filled: Vec<usize>,
}

impl<E: Copy> Buffers<E> {
    fn new(workers: usize) -> Self {
        Self { lists: (0..workers).map(|_| Vec::new()).collect(), filled: vec![0; workers] }
    }

    /// Worker `worker`'s entries of the last round, in slice order.
    fn get(&self, worker: usize) -> &[E] {
        let filled = self.filled.get(worker).copied().unwrap_or(0);
        self.lists.get(worker).and_then(|list| list.get(..filled)).unwrap_or(&[])
    }

    /// Routes `items` with `partitioner`, replacing what the buffers held: `entry` gives each
    /// item's routing hash and what is buffered for it (`fill` pads the buffers, never read).
    /// A worker out of range (a faulty partitioner) drops the item, as `observe` does.
    ///
    /// In blocks of [`BLOCK`] items, each in three passes: the items' routing hashes and
    /// entries (independent of one another, so many items are in flight at once); their
    /// workers, by [`choose`](Partitioner::choose) for a partitioner that routes by the hash
    /// alone (counted per worker at the end, not per item) or else by
    /// [`route_hashes`](Partitioner::route_hashes); then the stores. For a few workers every
    /// entry is written at the end of every worker's buffer and only its worker's length moves
    /// on (`slot[w][len[w]] = e; len[w] += (worker == w)`), with the lengths in registers:
    /// pushing onto the right list instead chains each item to the last through the lists'
    /// lengths in memory (profiled: 70 % of the routing time).
    fn route<'a, T, P: Partitioner>(
        &mut self,
        partitioner: &mut P,
        items: &'a [T],
        fill: E,
        entry: impl Fn(&'a T) -> (u64, E),
    ) {
        let by_hash_alone = partitioner.choose(0).is_some();
        let workers = self.lists.len();
        let small = workers <= SCATTER_UP_TO;
        for list in &mut self.lists {
            if !small {
                list.clear();
            } else if list.len() < items.len() {
                list.resize(items.len(), fill);
            }
        }
        let mut lens = [0_usize; SCATTER_UP_TO];
        let (mut hashes, mut entries, mut chosen) = ([0_u64; BLOCK], [fill; BLOCK], [0_usize; BLOCK]);
        for block in items.chunks(BLOCK) {
            for ((item, hash), e) in block.iter().zip(&mut hashes).zip(&mut entries) {
                (*hash, *e) = entry(item);
            }
            let (hashes, entries, chosen) =
                (&hashes[..block.len()], &entries[..block.len()], &mut chosen[..block.len()]);
            if by_hash_alone {
                for (w, &hash) in chosen.iter_mut().zip(hashes) {
                    *w = partitioner.choose(hash).unwrap_or(usize::MAX);
                }
            } else {
                partitioner.route_hashes(hashes, chosen);
            }
            macro_rules! scatter_for {
                ($($w:literal)*) => {
                    match workers {
                        $($w => scatter::<$w, E>(&mut self.lists, &mut lens, entries, chosen),)*
                        _ => push(&mut self.lists, entries, chosen),
                    }
                };
            }
            scatter_for!(1 2 3 4 5 6 7 8);
        }
        const _: () = assert!(SCATTER_UP_TO == 8, "the list of `scatter_for!`");
        for (worker, filled) in self.filled.iter_mut().enumerate() {
            *filled =
                if small { lens.get(worker).copied().unwrap_or(0) } else { self.lists.get(worker).map_or(0, Vec::len) };
            if by_hash_alone {
                partitioner.add_load(worker, *filled as u64);
            }
        }
    }
}

/// Items per block of [`Buffers::route`]: its arrays (8 + 8 + 8 bytes an item for hashes,
/// entries, workers) take 6 KiB, in L1.
const BLOCK: usize = 256;

/// Stores a block of `entries` for `W` workers, `lens` the lengths so far: every entry written
/// into every buffer (each as long as the round), the lengths in registers.
#[inline]
fn scatter<const W: usize, E: Copy>(lists: &mut [Vec<E>], lens: &mut [usize], entries: &[E], workers: &[usize]) {
    let (Ok(lists), Some(Ok(lens))) =
        (<&mut [Vec<E>; W]>::try_from(lists), lens.get_mut(..W).map(<&mut [usize; W]>::try_from))
    else {
        return;
    };
    let slots = lists.each_mut().map(|list| list.as_mut_slice());
    let mut at = *lens;
    for (&e, &worker) in entries.iter().zip(workers) {
        for w in 0..W {
            if let Some(slot) = slots[w].get_mut(at[w]) {
                *slot = e;
            }
            at[w] += usize::from(worker == w);
        }
    }
    *lens = at;
}

/// Stores a block of `entries` for many workers: each pushed onto its worker's list.
fn push<E: Copy>(lists: &mut [Vec<E>], entries: &[E], workers: &[usize]) {
    for (&e, &worker) in entries.iter().zip(workers) {
        if let Some(list) = lists.get_mut(worker) {
            list.push(e);
        }
    }
}

/// The routed path of `par_observe` and `par_observe_hashed`, in rounds of [`ROUND`] items
/// per sender: in each round, in one parallel step, every sender routes its contiguous share
/// of the round into its buffers (`entry`: an item's routing hash and what is buffered for
/// it) while every part observes (`feed`) what the senders routed in the round before, sender
/// by sender, so in slice order. Two sets of buffers alternate; one parallel step per round,
/// run inside one rayon scope so that each is a cheap join between pool threads. The
/// senders' loads are added to `partitioner`'s at the end.
#[cfg(feature = "rayon")]
fn par_route<'a, T, E, O, P>(
    parts: &mut Vec<O>,
    partitioner: &mut P,
    items: &'a [T],
    fill: E,
    entry: impl Fn(&'a T) -> (u64, E) + Sync,
    feed: impl Fn(&mut O, &[E]) + Sync,
) where
    T: Sync,
    E: Copy + Send + Sync,
    O: Send,
    P: Partitioner + Send,
{
    padded(parts, |slots| route_rounds(slots, partitioner, items, fill, entry, feed));
}

/// [`par_route`] on parts in their own cache lines.
#[cfg(feature = "rayon")]
fn route_rounds<'a, T, E, O, P>(
    slots: &mut [Padded<O>],
    partitioner: &mut P,
    items: &'a [T],
    fill: E,
    entry: impl Fn(&'a T) -> (u64, E) + Sync,
    feed: impl Fn(&mut O, &[E]) + Sync,
) where
    T: Sync,
    E: Copy + Send + Sync,
    O: Send,
    P: Partitioner + Send,
{
    use rayon::prelude::*;
    let senders = rayon::current_num_threads().max(1);
    let workers = slots.len();
    let mut routers: Vec<P> = (0..senders).map(|_| partitioner.sender()).collect();
    let mut front: Vec<Buffers<E>> = (0..senders).map(|_| Buffers::new(workers)).collect();
    let mut back: Vec<Buffers<E>> = (0..senders).map(|_| Buffers::new(workers)).collect();
    rayon::scope(|_| {
        let mut rounds = items.chunks(ROUND * senders);
        let mut routed_before = false;
        loop {
            let round = rounds.next();
            if round.is_none() && !routed_before {
                break;
            }
            let share = round.map_or(1, |round| round.len().div_ceil(senders).max(1));
            let mut shares = round.unwrap_or_default().chunks(share);
            let mut to_route = routers.iter_mut().zip(back.iter_mut());
            let mut to_feed = slots.iter_mut().map(|slot| &mut slot.0);
            let tasks: Vec<_> = (0..senders.max(workers))
                .map(|_| (to_feed.next().filter(|_| routed_before), to_route.next().zip(shares.next())))
                .collect();
            let ready = &front;
            tasks.into_par_iter().enumerate().for_each(|(worker, (part, route))| {
                if let Some(part) = part {
                    ready.iter().for_each(|buffers| feed(part, buffers.get(worker)));
                }
                if let Some(((router, buffers), share)) = route {
                    buffers.route(router, share, fill, &entry);
                }
            });
            std::mem::swap(&mut front, &mut back);
            // A sender without a share this round left its buffers as they were: empty them so
            // that the next step does not feed them again.
            front.iter_mut().skip(round.map_or(0, |round| round.len().div_ceil(share))).for_each(|b| b.filled.fill(0));
            routed_before = round.is_some();
        }
    });
    for router in &routers {
        partitioner.absorb(router);
    }
}

/// Runs `f` on the parts, each moved into its own cache lines, and moves them back: side by
/// side in one vector, two parts' per-item fields (Count-Min's total, say) shared a line
/// while two threads updated them, and the ping-pong between cores tripled the cost of every
/// observation (measured). Only the values move; their heap memory stays where it is.
#[cfg(feature = "rayon")]
fn padded<O>(parts: &mut Vec<O>, f: impl FnOnce(&mut [Padded<O>])) {
    let mut slots: Vec<Padded<O>> = std::mem::take(parts).into_iter().map(Padded).collect();
    f(&mut slots);
    *parts = slots.into_iter().map(|slot| slot.0).collect();
}

/// A value alone in its cache lines (128 bytes: a line and the one its neighbour prefetcher
/// pulls in with it).
#[cfg(feature = "rayon")]
#[repr(align(128))]
struct Padded<O>(O);
