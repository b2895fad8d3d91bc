//! The operator and merge traits, and the conveniences built on them.

use super::MergeError;

/// A stream operator: something that observes the items of a stream one at a time.
///
/// This is the one method an implementer writes. Queries (estimates, bounds, membership,
/// samples) are inherent methods of each type, because they differ by family. Every synopsis
/// of this crate implements `Operator<T>` for each item type it accepts; the cardinality
/// sketches accept anything [`Hashable`](crate::hash::Hashable).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::core::Operator;
///
/// // Generic code sees only the trait.
/// fn feed<O: Operator<u64>>(op: &mut O, n: u64) {
///     for i in 0..n {
///         op.observe(i);
///     }
/// }
/// let mut hll = HyperLogLog::new(12)?;
/// feed(&mut hll, 100);
/// assert_eq!(hll.estimate().round(), 100.0);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub trait Operator<T> {
    /// Observes one item of the stream.
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    /// use synopses::core::Operator;
    ///
    /// let mut fm = FlajoletMartin::new(64)?;
    /// for word in ["to", "be", "or", "not", "to", "be"] {
    ///     Operator::observe(&mut fm, word);
    /// }
    /// assert_ne!(fm, FlajoletMartin::new(64)?);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn observe(&mut self, item: T);

    /// Observes every item of an iterator, in order.
    ///
    /// The result is the same as calling [`observe`](Operator::observe) for each item; an
    /// implementation may override this method with a faster loop (the sketches of this crate
    /// do, keeping their state in locals for the whole batch), so generic code that has many
    /// items should call it rather than loop itself.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::core::Operator;
    ///
    /// let mut hll = HyperLogLog::new(12)?;
    /// Operator::observe_all(&mut hll, ["a", "b", "a"]);
    /// assert_eq!(hll.estimate().round(), 2.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I)
    where
        Self: Sized,
    {
        for item in items {
            self.observe(item);
        }
    }
}

/// State that merges: two instances of the same configuration that observed two parts of a
/// stream merge into the state of one instance that observed the whole.
///
/// For the deterministic synopses of this crate "the state of one instance that observed the
/// whole" holds exactly, whatever the split; the tests in `tests/laws.rs` check it, with
/// commutativity, associativity, idempotence where it holds, and the empty identity. What a
/// merge of two non-empty parts cannot keep is history: a distinct-count sketch's martingale
/// describes one stream, so the merged sketch holds the registers of the one pass, not its
/// martingale, and answers from its registers.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::core::Mergeable;
///
/// let mut left = HyperLogLog::new(12)?;
/// let mut right = left.empty_like();
/// (0..500u64).for_each(|i| left.observe(i));
/// (500..1000u64).for_each(|i| right.observe(i));
/// left.merge(&right)?;
///
/// let mut whole = HyperLogLog::new(12)?;
/// (0..1000u64).for_each(|i| whole.observe(i));
/// assert_eq!(left.register_estimate(), whole.register_estimate());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Mergeable: Sized {
    /// Merges `other` into `self`.
    ///
    /// Fails with a [`MergeError`], leaving `self` unchanged, when the two configurations
    /// differ (size, precision, seed, ...).
    ///
    /// ```
    /// use synopses::cardinality::FlajoletMartin;
    /// use synopses::core::Mergeable;
    ///
    /// let mut a = FlajoletMartin::new(64)?;
    /// let b = FlajoletMartin::new(128)?;
    /// assert!(Mergeable::merge(&mut a, &b).is_err());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn merge(&mut self, other: &Self) -> Result<(), MergeError>;

    /// A new, empty instance with the same configuration as `self`: the identity of
    /// [`merge`](Mergeable::merge). (`Default` cannot know the configuration.)
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::core::Mergeable;
    ///
    /// let mut a = HyperLogLog::new(10)?;
    /// a.observe("x");
    /// let empty = a.empty_like();
    /// assert_eq!((empty.precision(), empty.estimate()), (10, 0.0));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    fn empty_like(&self) -> Self;

    /// A new, empty instance for part `index` of a stream split over partitions, to be
    /// merged back into `self`: the same configuration as [`empty_like`](Mergeable::empty_like)
    /// and, for a randomized synopsis (the samplers), its own random stream, derived from
    /// `self`'s seed, stream, history and `index`. Parts merged together must have distinct
    /// indexes. Deterministic synopses return `empty_like()`, which this method does unless
    /// a type overrides it.
    ///
    /// Two instances drawing the same random numbers would make correlated choices and bias
    /// the merged result, which is why a sampler refuses to merge a non-empty instance of its
    /// own stream (its `empty_like`), and why parallel code should call this method.
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::sampling::Reservoir;
    ///
    /// let mut whole = Reservoir::new(10, 42)?;
    /// let mut parts: Vec<Reservoir<u64>> = (0..4).map(|i| whole.empty_part(i)).collect();
    /// for (i, part) in parts.iter_mut().enumerate() {
    ///     part.observe_all(i as u64 * 1000..(i as u64 + 1) * 1000);
    /// }
    /// whole.merge_all(&parts)?;
    /// assert_eq!((whole.seen(), whole.len()), (4000, 10));
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    fn empty_part(&self, index: u64) -> Self {
        let _ = index;
        self.empty_like()
    }

    /// Bytes of memory the instance holds, its heap allocations included: what
    /// [`Partitioned::new`](crate::stream::Partitioned::new) multiplies by the number of
    /// workers to check a configuration before it allocates one. The default counts the value
    /// alone; every synopsis of this crate counts its heap too (its inherent `size_in_bytes`).
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::frequency::CountMin;
    ///
    /// let cm = CountMin::new(1024, 4)?;
    /// assert!(Mergeable::size_in_bytes(&cm) >= 8 * 1024 * 4);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn size_in_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// Merges every instance of `others` into `self`, stopping at the first error.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::core::Mergeable;
    ///
    /// let mut parts = Vec::new();
    /// for p in 0..4u64 {
    ///     let mut h = HyperLogLog::new(12)?;
    ///     (p * 100..(p + 1) * 100).for_each(|i| h.observe(i));
    ///     parts.push(h);
    /// }
    /// let mut all = parts[0].empty_like();
    /// all.merge_all(&parts)?;
    /// assert_eq!(all.estimate().round(), 400.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn merge_all<'a, I>(&mut self, others: I) -> Result<(), MergeError>
    where
        I: IntoIterator<Item = &'a Self>,
        Self: 'a,
    {
        others.into_iter().try_for_each(|other| self.merge(other))
    }
}

/// Conveniences for every [`Operator`]; implemented for all of them, never by hand.
///
/// (Observing a whole iterator is [`Operator::observe_all`], a provided method of the core
/// trait, so that each type can give it a faster loop.)
pub trait OperatorExt<T>: Operator<T> {
    /// Observes the items of a slice on rayon's thread pool: the slice is cut into one
    /// contiguous part per thread, part `i` is observed into the instance
    /// [`empty_part(i)`](Mergeable::empty_part) of `self`, and the parts are merged into
    /// `self` in slice order.
    ///
    /// For the deterministic synopses (the sketches and filters) the state is identical to
    /// observing the items sequentially, whatever the number of threads, and so is every
    /// answer computed from the state. What merging the parts drops is their history: a
    /// HyperLogLog observed in more than one part answers with its register estimator, not
    /// the single-stream martingale. For the samplers the result is distributed as a
    /// sequential pass, and is the same for the same seed and number of threads. Needs the
    /// `rayon` feature.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::core::OperatorExt;
    ///
    /// let items: Vec<u64> = (0..100_000).collect();
    /// let mut parallel = HyperLogLog::new(12)?;
    /// parallel.par_observe(&items);
    /// let mut sequential = HyperLogLog::new(12)?;
    /// sequential.observe_all(&items);
    /// assert_eq!(parallel.register_estimate(), sequential.register_estimate());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[cfg(feature = "rayon")]
    fn par_observe(&mut self, items: &[T])
    where
        T: Sync,
        Self: for<'a> Operator<&'a T> + Mergeable + Send + Sync + Sized,
    {
        use rayon::prelude::*;
        // One part per thread: per-part setup and the final merges then cost O(threads), and
        // the parts are large enough for the sketches to reach their steady state.
        let parts = rayon::current_num_threads().max(1);
        let part_len = items.len().div_ceil(parts).max(1);
        let this = &*self;
        let observed: Vec<Self> = items
            .par_chunks(part_len)
            .enumerate()
            .map(|(index, part)| {
                let mut op = this.empty_part(index as u64);
                op.observe_all(part);
                op
            })
            .collect();
        for op in &observed {
            // Every part was made by `empty_part` of `self`, so the configurations match.
            let merged = self.merge(op);
            debug_assert!(merged.is_ok(), "instances made by empty_part merge into their parent");
        }
    }
}

impl<T, O: Operator<T> + ?Sized> OperatorExt<T> for O {}

/// A synopsis that hashes its items with the crate's seeded hash ([`hash`](crate::hash)) and
/// can be given the hash instead of the item: what lets generic code hash an item once and
/// feed it to several structures of one seed. Implemented by the cardinality sketches,
/// Count-Min and the Bloom filters.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::core::ObserveHash;
/// use synopses::hash::Hashable;
///
/// let mut by_hash = HyperLogLog::new(12)?;
/// let h = "alice".hash64(by_hash.hash_seed());
/// ObserveHash::observe_hash(&mut by_hash, h);
/// let mut by_item = HyperLogLog::new(12)?;
/// by_item.observe("alice");
/// assert_eq!(by_hash, by_item);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub trait ObserveHash {
    /// The seed this synopsis hashes items with.
    fn hash_seed(&self) -> u64;

    /// Observes an item given by its hash under [`hash_seed`](Self::hash_seed).
    fn observe_hash(&mut self, hash: u64);

    /// Observes many items given by their hashes: the same state as
    /// [`observe_hash`](Self::observe_hash) on each, in order. The distinct-count sketches
    /// override it with their batch loops (as fast as `observe_all`, for a caller that hashed
    /// the items itself: a query engine, a router).
    ///
    /// ```
    /// use synopses::cardinality::UltraLogLog;
    /// use synopses::core::ObserveHash;
    /// use synopses::hash::Hashable;
    ///
    /// let mut by_hash = UltraLogLog::new(10)?;
    /// let seed = by_hash.hash_seed();
    /// by_hash.observe_hashes((0..5000_u64).map(|i| i.hash64(seed)));
    /// let mut by_item = UltraLogLog::new(10)?;
    /// by_item.observe_all(0..5000_u64);
    /// assert_eq!(by_hash, by_item);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn observe_hashes<I: IntoIterator<Item = u64>>(&mut self, hashes: I)
    where
        Self: Sized,
    {
        hashes.into_iter().for_each(|hash| self.observe_hash(hash));
    }
}

/// Implements [`Operator`] for every [`Hashable`](crate::hash::Hashable) item type, and
/// `Extend`, for a type with inherent `observe` and `observe_all` methods generic over
/// `Hashable` items: the shape of every hashing synopsis. With `batch`, the type's inherent
/// `observe_hashes` also serves [`ObserveHash::observe_hashes`].
macro_rules! hashed_operator {
    ($ty:ty, batch) => {
        $crate::core::hashed_operator!($ty, {
            fn observe_hashes<I: IntoIterator<Item = u64>>(&mut self, hashes: I) {
                <$ty>::observe_hashes(self, hashes);
            }
        });
    };
    ($ty:ty) => {
        $crate::core::hashed_operator!($ty, {});
    };
    ($ty:ty, { $($batch:tt)* }) => {
        impl<T: $crate::hash::Hashable> $crate::core::Operator<T> for $ty {
            #[inline]
            fn observe(&mut self, item: T) {
                <$ty>::observe(self, item);
            }

            fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I) {
                <$ty>::observe_all(self, items);
            }
        }

        impl $crate::core::ObserveHash for $ty {
            fn hash_seed(&self) -> u64 {
                <$ty>::seed(self)
            }

            #[inline]
            fn observe_hash(&mut self, hash: u64) {
                <$ty>::observe_hash(self, hash);
            }

            $($batch)*
        }

        impl<T: $crate::hash::Hashable> Extend<T> for $ty {
            fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
                <$ty>::observe_all(self, iter);
            }
        }
    };
}
pub(crate) use hashed_operator;
