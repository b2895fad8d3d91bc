//! Partitioners: which worker each item goes to. The teaching text is in the
//! [family docs](super).

use std::fmt;

use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::{ConfigError, DecodeError};
use crate::hash::{DEFAULT_SEED, Hashable, derived_index};

/// The seed of the routing mix unless a partitioner is given another (`with_seed`; see
/// [`routing_hash`]).
///
/// It is public, and so is every item's route under it: an adversary who chooses the keys
/// can send them all to one worker of a [`KeyGrouping`] (or to one pair of a
/// [`PartialKeyGrouping`]). On untrusted keys, route with a secret seed.
pub const ROUTING_SEED: u64 = DEFAULT_SEED ^ 0xA5A5_A5A5_A5A5_A5A5;

/// The seed a key is hashed with before [`routing_hash`] mixes in the routing seed: the
/// sketches' default seed ([`DEFAULT_SEED`]), so that a default-seeded sketch and the
/// partitioner in front of it share the item's one hash
/// (`Partitioned::par_observe_hashed`, with the `rayon` feature, hashes each item once).
///
/// ```
/// use synopses::hash::{DEFAULT_SEED, Hashable};
/// use synopses::stream::{KEY_SEED, KeyGrouping, Partitioner, routing_hash};
///
/// let p = KeyGrouping::new(4)?;
/// assert_eq!(KEY_SEED, DEFAULT_SEED);
/// let worker = p.choose(routing_hash("k".hash64(KEY_SEED), p.routing_seed()));
/// assert_eq!(worker, Some(p.clone().route(&"k")));
/// # Ok::<(), synopses::ConfigError>(())
/// ```
pub const KEY_SEED: u64 = DEFAULT_SEED;

/// The routing hash of a key: its hash under [`KEY_SEED`] (or under the seed of the synopsis
/// it feeds) mixed with a partitioner's [`routing_seed`](Partitioner::routing_seed), what
/// [`Partitioner::route_hash`] takes.
///
/// The mix is a bijection of the key hash for each seed (an xor with the seed, then two
/// rounds of xorshift-multiply, the seed again between them): distinct keys keep distinct
/// routing hashes, and every bit of the route depends on every bit of the key hash, so the
/// worker an item goes to says nothing about where it lands in the sketch it feeds (a
/// HyperLogLog's register, a Count-Min's columns), even under the public [`ROUTING_SEED`]. It
/// costs two multiplications, against a second xxh3 of the item.
///
/// What an adversary can do: the key hash is public (xxh3 under a known seed; items with a
/// chosen hash can be crafted), so under the public [`ROUTING_SEED`] every route is too, and
/// chosen keys can all be sent to one worker of a [`KeyGrouping`]. Under a secret routing
/// seed the routes of crafted keys look random to the adversary, who can still (a) send
/// items of one key hash, which the sketch counts as one item anyway, to one worker, and
/// (b) learn about the seed by watching routes (the mix is not a cryptographic function):
/// where loads can be observed, prefer [`PartialKeyGrouping`], whose routing by load bounds
/// what a targeted key can do to two workers' share.
///
/// ```
/// use synopses::stream::{ROUTING_SEED, routing_hash};
///
/// assert_ne!(routing_hash(1, ROUTING_SEED), routing_hash(2, ROUTING_SEED));
/// assert_ne!(routing_hash(1, ROUTING_SEED), routing_hash(1, 7));
/// ```
#[inline]
#[must_use]
pub fn routing_hash(key_hash: u64, routing_seed: u64) -> u64 {
    // Murmur3's finalizer constant, odd: the multiplication is a bijection, and so is the
    // xorshift by 32 (its own inverse). The product's high half depends on every bit of the
    // key hash and seed; the shift folds it into the low half that `derived_index` reads.
    const MULTIPLIER: u64 = 0xFF51_AFD7_ED55_8CCD;
    let x = (key_hash ^ routing_seed).wrapping_mul(MULTIPLIER);
    x ^ (x >> 32)
}

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

    /// The worker of an item given by its routing hash (its key's [`routing_hash`] under
    /// [`routing_seed`](Self::routing_seed)), counting it in that worker's load. Always below
    /// [`workers`](Self::workers) (an index out of range drops the item).
    fn route_hash(&mut self, hash: u64) -> usize;

    /// Routes a block of routing hashes, writing each one's worker into `workers` (as far as
    /// the shorter of the two goes): the same workers and loads as
    /// [`route_hash`](Self::route_hash) one by one, which is what it does unless a partitioner
    /// overrides it to keep its loads in registers for the block (partial key grouping over
    /// at most 8 workers does: its loads in memory chain each item to the last).
    ///
    /// ```
    /// use synopses::stream::{PartialKeyGrouping, Partitioner};
    ///
    /// let (mut one, mut block) = (PartialKeyGrouping::new(4)?, PartialKeyGrouping::new(4)?);
    /// let hashes: Vec<u64> = (0..100_u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
    /// let mut workers = vec![0; 100];
    /// block.route_hashes(&hashes, &mut workers);
    /// assert!(hashes.iter().zip(&workers).all(|(&h, &w)| one.route_hash(h) == w));
    /// assert_eq!(one, block);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    fn route_hashes(&mut self, hashes: &[u64], workers: &mut [usize]) {
        for (&hash, worker) in hashes.iter().zip(workers) {
            *worker = self.route_hash(hash);
        }
    }

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

    /// The seed mixed into the keys' hashes to route them ([`routing_hash`]):
    /// [`ROUTING_SEED`] unless the partitioner was given another.
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

    /// The worker of an item: its hash under [`KEY_SEED`], then
    /// [`route_key_hash`](Self::route_key_hash).
    #[inline]
    fn route<T: Hashable + ?Sized>(&mut self, item: &T) -> usize {
        self.route_key_hash(item.hash64(KEY_SEED))
    }

    /// The worker of an item given by its key's hash (under [`KEY_SEED`] for the route of
    /// [`route`](Self::route)): [`routing_hash`] with this partitioner's seed, then
    /// [`route_hash`](Self::route_hash). For a caller that already hashed the item to feed a
    /// sketch of that seed.
    ///
    /// ```
    /// use synopses::hash::Hashable;
    /// use synopses::stream::{KEY_SEED, PartialKeyGrouping, Partitioner};
    ///
    /// let (mut a, mut b) = (PartialKeyGrouping::new(8)?, PartialKeyGrouping::new(8)?);
    /// assert_eq!(a.route(&"k"), b.route_key_hash("k".hash64(KEY_SEED)));
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[inline]
    fn route_key_hash(&mut self, key_hash: u64) -> usize {
        self.route_hash(routing_hash(key_hash, self.routing_seed()))
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

    /// Bytes of [`put`](Self::put)'s output.
    fn encoded_len(&self) -> usize {
        4 + 8 * self.0.len()
    }

    /// The number of workers (u32), then each worker's load (u64).
    fn put(&self, w: &mut Writer) {
        // At most `MAX_WORKERS`, checked by every constructor and decoder.
        w.put_u32(u32::try_from(self.0.len()).unwrap_or(u32::MAX));
        self.0.iter().for_each(|&load| w.put_u64(load));
    }

    /// Reads what [`put`](Self::put) wrote: the number of workers is checked against
    /// `1..=65536`, and against the bytes present, before the loads are allocated.
    fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let workers = usize::try_from(r.u32()?).unwrap_or(usize::MAX);
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(DecodeError::InvalidField { field: "workers", reason: "not in 1..=65536" });
        }
        r.expect_items(workers, 8)?;
        (0..workers).map(|_| r.u64()).collect::<Result<_, _>>().map(Self)
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

    fn route_hashes(&mut self, hashes: &[u64], workers: &mut [usize]) {
        macro_rules! in_registers {
            ($($n:literal)*) => {
                match self.loads.workers() {
                    $($n => two_choices::<$n>(&mut self.loads.0, hashes, workers),)*
                    _ => hashes.iter().zip(workers).for_each(|(&hash, worker)| *worker = self.route_hash(hash)),
                }
            };
        }
        in_registers!(1 2 3 4 5 6 7 8);
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

/// [`PartialKeyGrouping::route_hashes`] over `N` workers: `route_hash`'s rule with the loads
/// in registers (each read by a select over the `N`, each update a masked add to all).
#[inline]
fn two_choices<const N: usize>(loads: &mut [u64], hashes: &[u64], workers: &mut [usize]) {
    let Ok(loads) = <&mut [u64; N]>::try_from(loads) else { return };
    let mut l = *loads;
    for (&hash, worker) in hashes.iter().zip(workers) {
        let (a, b) = (candidate(hash, 0, N), candidate(hash, 1, N));
        let (mut la, mut lb) = (u64::MAX, u64::MAX);
        for (w, &load) in l.iter().enumerate() {
            la = if w == a { load } else { la };
            lb = if w == b { load } else { lb };
        }
        let pick = if lb < la { b } else { a };
        for (w, load) in l.iter_mut().enumerate() {
            *load = load.saturating_add(u64::from(w == pick));
        }
        *worker = pick;
    }
    *loads = l;
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

/// The crate's [binary format](crate::codec) for the partitioners, so that a checkpoint can
/// save one and restore it exactly: its configuration, seed, the loads it routed and (shuffle
/// grouping) its position. Every body starts with the loads: the number of workers (u32),
/// then each worker's load (u64).
macro_rules! partitioner_codec {
    ($ty:ident, $family:expr, $doc_new:expr, $doc_body:expr, |$this:ident, $w:ident| $put:block, $extra_len:expr, |$loads:ident, $r:ident| $read:block) => {
        impl $ty {
            /// The length of [`to_bytes`](Self::to_bytes)'s output.
            ///
            /// ```
            #[doc = concat!("use synopses::stream::", stringify!($ty), ";")]
            #[doc = concat!("let p = ", $doc_new, ";")]
            /// assert_eq!(p.encoded_len(), p.to_bytes().len());
            /// # Ok::<(), synopses::ConfigError>(())
            /// ```
            #[must_use]
            pub fn encoded_len(&self) -> usize {
                ENVELOPE_LEN + self.loads.encoded_len() + $extra_len
            }

            #[doc = concat!("Encodes the partitioner in the crate's [binary format](crate::codec), family code ", stringify!($family), ".")]
            #[doc = concat!("Body: the loads (the number of workers as u32, then each worker's load as u64), then ", $doc_body, ".")]
            ///
            /// ```
            /// use synopses::stream::Partitioner;
            #[doc = concat!("use synopses::stream::", stringify!($ty), ";")]
            ///
            #[doc = concat!("let mut p = ", $doc_new, ";")]
            /// (0..100_u64).for_each(|i| drop(p.route(&i)));
            #[doc = concat!("assert_eq!(", stringify!($ty), "::from_bytes(&p.to_bytes())?, p);")]
            /// # Ok::<(), synopses::Error>(())
            /// ```
            #[must_use]
            pub fn to_bytes(&self) -> Vec<u8> {
                let mut $w = Writer::new(<Self as Codec>::FAMILY, self.encoded_len());
                self.loads.put(&mut $w);
                let $this = self;
                $put
                $w.finish()
            }

            /// Decodes a partitioner written by [`to_bytes`](Self::to_bytes), validating every
            /// field (workers in `1..=65536`, one load per worker, the configuration's ranges).
            ///
            /// ```
            #[doc = concat!("use synopses::stream::", stringify!($ty), ";")]
            ///
            #[doc = concat!("let bytes = ", $doc_new, ".to_bytes();")]
            #[doc = concat!("assert!(", stringify!($ty), "::from_bytes(&bytes[..bytes.len() - 1]).is_err());")]
            /// # Ok::<(), synopses::ConfigError>(())
            /// ```
            pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
                let mut $r = Reader::open(bytes, <Self as Codec>::FAMILY)?;
                let $loads = Loads::read(&mut $r)?;
                let out = $read;
                $r.finish()?;
                Ok(out)
            }
        }

        codec_impl!($ty, $family);
    };
}

partitioner_codec!(
    KeyGrouping,
    14,
    "KeyGrouping::with_seed(4, 7)?",
    "the routing seed (u64)",
    |p, w| { w.put_u64(p.seed) },
    8,
    |loads, r| { Self { loads, seed: r.u64()? } }
);

partitioner_codec!(
    ShuffleGrouping,
    15,
    "ShuffleGrouping::new(3)?",
    "the next worker of the round robin (u32, below the number of workers)",
    |p, w| { w.put_u32(u32::try_from(p.next).unwrap_or(u32::MAX)) },
    4,
    |loads, r| {
        let next = usize::try_from(r.u32()?).unwrap_or(usize::MAX);
        if next >= loads.workers() {
            return Err(DecodeError::InvalidField { field: "next", reason: "not below the number of workers" });
        }
        Self { loads, next }
    }
);

partitioner_codec!(
    PartialKeyGrouping,
    16,
    "PartialKeyGrouping::with_seed(4, 7)?",
    "the routing seed (u64)",
    |p, w| { w.put_u64(p.seed) },
    8,
    |loads, r| { Self { loads, seed: r.u64()? } }
);

partitioner_codec!(
    DChoices,
    17,
    "DChoices::with_seed(8, 3, 7)?",
    "the number of choices (u8, in `1..=64`) and the routing seed (u64)",
    |p, w| {
        w.put_u8(u8::try_from(p.choices).unwrap_or(u8::MAX));
        w.put_u64(p.seed);
    },
    9,
    |loads, r| {
        let choices = usize::from(r.u8()?);
        if !(1..=MAX_CHOICES).contains(&choices) {
            return Err(DecodeError::InvalidField { field: "choices", reason: "not in 1..=64" });
        }
        Self { loads, choices, seed: r.u64()? }
    }
);
