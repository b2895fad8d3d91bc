//! Partitioners: which worker each item goes to. The teaching text is in the
//! [family docs](super).

use std::fmt;

use crate::core::ConfigError;
use crate::hash::{DEFAULT_SEED, Hashable, derived_index};

/// The seed of the routing hash unless a partitioner is given another (`with_seed`):
/// distinct from the sketches' default seed, so the worker an item goes to says nothing about
/// where it lands in the sketch it goes into.
///
/// It is public, and so is every item's route under it: an adversary who chooses the keys
/// can send them all to one worker of a [`KeyGrouping`] (or to one pair of a
/// [`PartialKeyGrouping`]). On untrusted keys, route with a secret seed.
pub const ROUTING_SEED: u64 = DEFAULT_SEED ^ 0xA5A5_A5A5_A5A5_A5A5;

/// The most workers a partitioner routes to.
const MAX_WORKERS: usize = 1 << 16;

/// The most choices a [`DChoices`] partitioner weighs.
const MAX_CHOICES: usize = 64;

/// Routes the items of a stream to `workers` parallel instances, and counts how many each
/// received.
///
/// A partitioner is one *sender's* view: a load-aware partitioner decides from the loads it
/// has sent itself (as in Nasir et al., where every source keeps local counts). The
/// partitioned runner clones one per sending thread.
///
/// ```
/// use synopses::stream::{KeyGrouping, Partitioner};
///
/// let mut p = KeyGrouping::new(4)?;
/// let worker = p.route(&"user-17");
/// assert_eq!(p.route(&"user-17"), worker); // a key always goes to the same worker
/// assert_eq!(p.loads().iter().sum::<u64>(), 2);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub trait Partitioner: Clone {
    /// The number of workers, `n`.
    fn workers(&self) -> usize;

    /// The worker of an item given by its routing hash (of its key, hashed with
    /// [`routing_seed`](Self::routing_seed)), counting it in that worker's load. Always below
    /// [`workers`](Self::workers) (an index out of range drops the item).
    fn route_hash(&mut self, hash: u64) -> usize;

    /// Items routed to each worker so far (by this sender, plus any loads absorbed),
    /// saturating at `u64::MAX`.
    fn loads(&self) -> &[u64];

    /// Adds another sender's loads to these (for reporting; it does not change how this
    /// sender routes unless it is load-aware).
    fn absorb(&mut self, other: &Self);

    /// A new sender of the same configuration, with no loads: what each sending thread of
    /// [`Partitioned`](super::Partitioned)'s `par_observe` routes with.
    #[must_use]
    fn sender(&self) -> Self;

    /// Whether the worker of an item depends on nothing but its position, so that a slice can
    /// be split into one contiguous block per worker instead of being routed item by item
    /// (shuffle grouping). `false` unless a partitioner says otherwise.
    ///
    /// ```
    /// use synopses::stream::{KeyGrouping, Partitioner, ShuffleGrouping};
    /// assert!(ShuffleGrouping::new(4)?.oblivious() && !KeyGrouping::new(4)?.oblivious());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn oblivious(&self) -> bool {
        false
    }

    /// For an [`oblivious`](Self::oblivious) partitioner: routes the next `items` items, all
    /// at once, counts them in the loads, and returns how many each worker gets (in worker
    /// order). The default gives each worker an even share, the first `items % workers` one
    /// more; a round robin overrides it to continue from where it stands.
    fn advance(&mut self, items: u64) -> Vec<u64> {
        let workers = self.workers().max(1) as u64;
        let (base, extra) = (items / workers, items % workers);
        (0..workers)
            .map(|worker| {
                let share = base + u64::from(worker < extra);
                self.add_load(worker as usize, share);
                share
            })
            .collect()
    }

    /// Counts `items` routed to `worker` without routing them (for [`oblivious`](Self::oblivious)
    /// partitioners, which place blocks themselves, and for [`choose`](Self::choose)).
    fn add_load(&mut self, worker: usize, items: u64);

    /// The worker of a routing hash *without counting it*, for partitioners whose choice
    /// depends on the hash alone (key grouping): a batch can then be routed without updating
    /// a load per item, and counted afterwards with [`add_load`](Self::add_load). `None` (the
    /// default) for load-aware or stateful partitioners.
    ///
    /// ```
    /// use synopses::stream::{KeyGrouping, PartialKeyGrouping, Partitioner};
    ///
    /// assert!(KeyGrouping::new(4)?.choose(42).is_some());
    /// assert!(PartialKeyGrouping::new(4)?.choose(42).is_none());
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn choose(&self, hash: u64) -> Option<usize> {
        let _ = hash;
        None
    }

    /// The seed keys are hashed with to route them: [`ROUTING_SEED`] unless the partitioner
    /// was given another.
    ///
    /// ```
    /// use synopses::stream::{KeyGrouping, Partitioner, ROUTING_SEED};
    /// assert_eq!(KeyGrouping::new(4)?.routing_seed(), ROUTING_SEED);
    /// assert_eq!(KeyGrouping::with_seed(4, 99)?.routing_seed(), 99);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn routing_seed(&self) -> u64 {
        ROUTING_SEED
    }

    /// The worker of an item: its routing hash, then [`route_hash`](Self::route_hash).
    #[inline]
    fn route<T: Hashable + ?Sized>(&mut self, item: &T) -> usize {
        self.route_hash(item.hash64(self.routing_seed()))
    }

    /// The load imbalance `(max − mean) / mean` of the workers' loads: 0 when perfectly
    /// balanced, `n − 1` when one worker has everything (0 before any item).
    ///
    /// ```
    /// use synopses::stream::{Partitioner, ShuffleGrouping};
    ///
    /// let mut p = ShuffleGrouping::new(4)?;
    /// (0..1000_u64).for_each(|x| drop(p.route(&x)));
    /// assert_eq!(p.imbalance(), 0.0);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn imbalance(&self) -> f64 {
        let loads = self.loads();
        // (In 128 bits: 65 536 loads of up to 2^64 − 1 each cannot overflow it.)
        let total: u128 = loads.iter().map(|&l| u128::from(l)).sum();
        if total == 0 || loads.is_empty() {
            return 0.0;
        }
        let mean = total as f64 / loads.len() as f64;
        let max = loads.iter().copied().max().unwrap_or(0) as f64;
        (max - mean) / mean
    }
}

/// The items a sender routed to each worker: the state every partitioner keeps, kept once.
#[derive(Clone, PartialEq, Eq)]
struct Loads(Vec<u64>);

impl Loads {
    fn new(workers: usize) -> Self {
        Self(vec![0; workers])
    }

    fn workers(&self) -> usize {
        self.0.len()
    }

    fn as_slice(&self) -> &[u64] {
        &self.0
    }

    /// The load of `worker`; `u64::MAX` out of range, so that it is never the least loaded.
    fn get(&self, worker: usize) -> u64 {
        self.0.get(worker).copied().unwrap_or(u64::MAX)
    }

    /// Counts `items` for `worker` (nothing out of range, where the items are dropped),
    /// saturating at `u64::MAX`.
    #[inline]
    fn add(&mut self, worker: usize, items: u64) {
        if let Some(load) = self.0.get_mut(worker) {
            *load = load.saturating_add(items);
        }
    }

    /// Adds another sender's loads, saturating at `u64::MAX`.
    fn absorb(&mut self, other: &Self) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a = a.saturating_add(*b));
    }

    /// The same workers with no load: a new sender's.
    fn cleared(&self) -> Self {
        Self::new(self.workers())
    }
}

impl fmt::Debug for Loads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

fn check_workers(workers: usize) -> Result<(), ConfigError> {
    if (1..=MAX_WORKERS).contains(&workers) {
        Ok(())
    } else {
        Err(ConfigError::new("workers", workers, "an integer in 1..=65536"))
    }
}

/// Candidate worker `i` of a routing hash: [`derived_index`] `i` onto `0..workers`.
#[inline]
fn candidate(hash: u64, i: usize, workers: usize) -> usize {
    derived_index(hash, i, workers as u64)
}

/// Key grouping: every item of a key goes to one worker, chosen by the key's hash. Each key's
/// state lives in one place, but a heavy key overloads its worker.
///
/// ```
/// use synopses::stream::{KeyGrouping, Partitioner};
///
/// let mut p = KeyGrouping::new(8)?;
/// assert!(p.route(&42_u64) < 8);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyGrouping {
    loads: Loads,
    seed: u64,
}

impl KeyGrouping {
    /// Key grouping over `workers` workers (`1..=65536`), routing with [`ROUTING_SEED`].
    ///
    /// ```
    /// # use synopses::stream::KeyGrouping;
    /// assert!(KeyGrouping::new(0).is_err());
    /// ```
    pub fn new(workers: usize) -> Result<Self, ConfigError> {
        Self::with_seed(workers, ROUTING_SEED)
    }

    /// Key grouping over `workers` workers, hashing keys with `seed` (a secret one keeps an
    /// adversary from choosing keys that all go to one worker).
    ///
    /// ```
    /// use synopses::stream::{KeyGrouping, Partitioner};
    ///
    /// let mut p = KeyGrouping::with_seed(8, 0x5EC2E7)?;
    /// assert!(p.route(&"user-1") < 8);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(workers: usize, seed: u64) -> Result<Self, ConfigError> {
        check_workers(workers)?;
        Ok(Self { loads: Loads::new(workers), seed })
    }
}

impl Partitioner for KeyGrouping {
    fn workers(&self) -> usize {
        self.loads.workers()
    }

    fn routing_seed(&self) -> u64 {
        self.seed
    }

    #[inline]
    fn route_hash(&mut self, hash: u64) -> usize {
        let worker = candidate(hash, 0, self.loads.workers());
        self.loads.add(worker, 1);
        worker
    }

    #[inline]
    fn choose(&self, hash: u64) -> Option<usize> {
        Some(candidate(hash, 0, self.loads.workers()))
    }

    fn loads(&self) -> &[u64] {
        self.loads.as_slice()
    }

    fn absorb(&mut self, other: &Self) {
        self.loads.absorb(&other.loads);
    }

    fn sender(&self) -> Self {
        Self { loads: self.loads.cleared(), seed: self.seed }
    }

    fn add_load(&mut self, worker: usize, items: u64) {
        self.loads.add(worker, items);
    }
}

/// Shuffle grouping: items go to the workers in turn, whatever their key. Perfect balance,
/// but every key's state is spread over every worker.
///
/// ```
/// use synopses::stream::{Partitioner, ShuffleGrouping};
///
/// let mut p = ShuffleGrouping::new(3)?;
/// assert_eq!([p.route(&"a"), p.route(&"a"), p.route(&"a"), p.route(&"a")], [0, 1, 2, 0]);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShuffleGrouping {
    loads: Loads,
    next: usize,
}

impl ShuffleGrouping {
    /// Shuffle grouping over `workers` workers (`1..=65536`).
    ///
    /// ```
    /// # use synopses::stream::ShuffleGrouping;
    /// assert!(ShuffleGrouping::new(70_000).is_err());
    /// ```
    pub fn new(workers: usize) -> Result<Self, ConfigError> {
        check_workers(workers)?;
        Ok(Self { loads: Loads::new(workers), next: 0 })
    }
}

impl Partitioner for ShuffleGrouping {
    fn workers(&self) -> usize {
        self.loads.workers()
    }

    #[inline]
    fn route_hash(&mut self, _: u64) -> usize {
        let worker = self.next;
        self.next = if worker + 1 == self.loads.workers() { 0 } else { worker + 1 };
        self.loads.add(worker, 1);
        worker
    }

    fn loads(&self) -> &[u64] {
        self.loads.as_slice()
    }

    fn absorb(&mut self, other: &Self) {
        self.loads.absorb(&other.loads);
    }

    fn sender(&self) -> Self {
        Self { loads: self.loads.cleared(), next: 0 }
    }

    /// Shuffle grouping balances by position only: a slice may go to the workers in blocks.
    fn oblivious(&self) -> bool {
        true
    }

    /// Each worker's share of the next `items` in turn from the current position, which
    /// moves on as if they had been routed one by one.
    fn advance(&mut self, items: u64) -> Vec<u64> {
        let workers = self.loads.workers() as u64;
        let (base, extra) = (items / workers, items % workers);
        let next = self.next as u64;
        let shares: Vec<u64> = (0..workers).map(|w| base + u64::from((w + workers - next) % workers < extra)).collect();
        shares.iter().enumerate().for_each(|(worker, &share)| self.loads.add(worker, share));
        self.next = ((next + extra) % workers) as usize;
        shares
    }

    fn add_load(&mut self, worker: usize, items: u64) {
        self.loads.add(worker, items);
    }
}

/// Partial key grouping (Nasir et al., ICDE 2015): each key has two candidate workers from
/// its hash, and each item goes to the one this sender has loaded less. The power of two
/// choices balances skewed keys almost perfectly, and a key's state lives on at most two
/// workers, to be merged: which is why it needs mergeable state.
///
/// ```
/// use synopses::stream::{KeyGrouping, PartialKeyGrouping, Partitioner};
///
/// let mut two = PartialKeyGrouping::new(4)?;
/// let mut one = KeyGrouping::new(4)?;
/// for _ in 0..1000 {
///     two.route(&"hot key");
///     one.route(&"hot key");
/// }
/// assert_eq!(one.imbalance(), 3.0); // everything on one worker
/// assert!(two.imbalance() <= 1.0 + 1e-9); // split over its two choices
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialKeyGrouping {
    loads: Loads,
    seed: u64,
}

impl PartialKeyGrouping {
    /// Partial key grouping over `workers` workers (`1..=65536`), routing with
    /// [`ROUTING_SEED`].
    ///
    /// ```
    /// # use synopses::stream::PartialKeyGrouping;
    /// assert!(PartialKeyGrouping::new(0).is_err());
    /// ```
    pub fn new(workers: usize) -> Result<Self, ConfigError> {
        Self::with_seed(workers, ROUTING_SEED)
    }

    /// Partial key grouping over `workers` workers, hashing keys with `seed`.
    ///
    /// ```
    /// use synopses::stream::{PartialKeyGrouping, Partitioner};
    /// assert_eq!(PartialKeyGrouping::with_seed(4, 7)?.routing_seed(), 7);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(workers: usize, seed: u64) -> Result<Self, ConfigError> {
        check_workers(workers)?;
        Ok(Self { loads: Loads::new(workers), seed })
    }
}

impl Partitioner for PartialKeyGrouping {
    fn workers(&self) -> usize {
        self.loads.workers()
    }

    fn routing_seed(&self) -> u64 {
        self.seed
    }

    #[inline]
    fn route_hash(&mut self, hash: u64) -> usize {
        let n = self.loads.workers();
        let (a, b) = (candidate(hash, 0, n), candidate(hash, 1, n));
        let load = |w: usize| self.loads.get(w);
        let worker = if load(b) < load(a) { b } else { a };
        self.loads.add(worker, 1);
        worker
    }

    fn loads(&self) -> &[u64] {
        self.loads.as_slice()
    }

    fn absorb(&mut self, other: &Self) {
        self.loads.absorb(&other.loads);
    }

    fn sender(&self) -> Self {
        Self { loads: self.loads.cleared(), seed: self.seed }
    }

    fn add_load(&mut self, worker: usize, items: u64) {
        self.loads.add(worker, items);
    }
}

/// `d` choices: each key has up to `d` distinct candidate workers (the first distinct ones
/// among 64 derived from its hash; fewer only when `d` is close to the number of workers)
/// and each item goes to the least loaded,
/// for skew so heavy that two workers cannot carry the hottest key (a key above `2/n` of the
/// stream). A key's state lives on up to `d` workers.
///
/// ```
/// use synopses::stream::{DChoices, Partitioner};
///
/// let mut p = DChoices::new(8, 4)?;
/// for _ in 0..8000 {
///     p.route(&"hot key");
/// }
/// assert!(p.loads().iter().filter(|&&l| l > 0).count() >= 3); // spread over its choices
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DChoices {
    loads: Loads,
    choices: usize,
    seed: u64,
}

impl DChoices {
    /// `choices` choices (`1..=64`) over `workers` workers (`1..=65536`).
    ///
    /// ```
    /// # use synopses::stream::DChoices;
    /// assert!(DChoices::new(8, 0).is_err() && DChoices::new(8, 65).is_err());
    /// ```
    pub fn new(workers: usize, choices: usize) -> Result<Self, ConfigError> {
        Self::with_seed(workers, choices, ROUTING_SEED)
    }

    /// `choices` choices over `workers` workers, hashing keys with `seed`.
    ///
    /// ```
    /// use synopses::stream::{DChoices, Partitioner};
    /// assert_eq!(DChoices::with_seed(8, 3, 7)?.routing_seed(), 7);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn with_seed(workers: usize, choices: usize, seed: u64) -> Result<Self, ConfigError> {
        check_workers(workers)?;
        if !(1..=MAX_CHOICES).contains(&choices) {
            return Err(ConfigError::new("choices", choices, "an integer in 1..=64"));
        }
        Ok(Self { loads: Loads::new(workers), choices, seed })
    }

    /// The number of choices, `d`.
    ///
    /// ```
    /// # use synopses::stream::DChoices;
    /// assert_eq!(DChoices::new(8, 3)?.choices(), 3);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn choices(&self) -> usize {
        self.choices
    }
}

impl Partitioner for DChoices {
    fn workers(&self) -> usize {
        self.loads.workers()
    }

    fn routing_seed(&self) -> u64 {
        self.seed
    }

    #[inline]
    fn route_hash(&mut self, hash: u64) -> usize {
        let n = self.loads.workers();
        let load = |w: usize| self.loads.get(w);
        // The first `d` distinct candidates (of at most 64 tries): with repeats a hot key would
        // get fewer workers than it was promised (7 draws among 10 workers give 5.2 distinct).
        let mut chosen = [usize::MAX; MAX_CHOICES];
        let mut count = 0;
        for i in 0..MAX_CHOICES {
            if count == self.choices.min(n) {
                break;
            }
            let w = candidate(hash, i, n);
            if !chosen[..count].contains(&w) {
                chosen[count] = w;
                count += 1;
            }
        }
        let worker =
            chosen[..count].iter().copied().fold(chosen[0], |best, w| if load(w) < load(best) { w } else { best });
        self.loads.add(worker, 1);
        worker
    }

    fn loads(&self) -> &[u64] {
        self.loads.as_slice()
    }

    fn absorb(&mut self, other: &Self) {
        self.loads.absorb(&other.loads);
    }

    fn sender(&self) -> Self {
        Self { loads: self.loads.cleared(), choices: self.choices, seed: self.seed }
    }

    fn add_load(&mut self, worker: usize, items: u64) {
        self.loads.add(worker, items);
    }
}
