//! Streams over parallel partitions and over time: partitioners, a runner that splits a
//! stream over N instances of any mergeable operator and merges them back, and windows.
//!
//! A stream too fast for one core is split over workers, each with its own instance of the
//! operator; because the state of every synopsis in this crate merges, the workers' states
//! combine into the state one instance would have had. Two questions remain: which worker
//! gets which item (the *partitioner*), and how evenly the work spreads (the *load
//! imbalance*, `(max − mean) / mean` of the workers' loads).
//!
//! | partitioner | a key's state lives on | balance under skew | use it when |
//! |---|---|---|---|
//! | [`KeyGrouping`] | one worker | poor: a hot key overloads its worker | the operator cannot merge, or keys are uniform |
//! | [`ShuffleGrouping`] | every worker | perfect | the state merges and per-key state is cheap |
//! | [`PartialKeyGrouping`] | at most two workers | near perfect while no key exceeds `2/n` of the stream | skewed keys, mergeable state |
//! | [`DChoices`] | at most `d` workers | near perfect while no key exceeds `d/n` | heavier skew |
//!
//! # Balls into bins
//!
//! Throw `m` balls into `n` bins, each into a random bin: the fullest bin holds about
//! `m/n + √(2·(m/n)·ln n)` balls, a gap above the mean that grows with `√m`. Let each ball
//! pick two random bins and go to the emptier one, and the gap drops to about
//! `ln ln n / ln 2`, independent of `m` (Azar, Broder, Karlin and Upfal): the *power of two
//! choices*. For `m = 10^6` balls into `n = 100` bins that is a gap of about 300 with one
//! choice and 2 to 3 with two (`tests/accuracy.rs` measures both).
//!
//! Partial key grouping (Nasir et al., ICDE 2015) applies this to keys: each key has two
//! candidate workers from its hash, and each *item* goes to whichever of the two the sender
//! has loaded less, judged from the sender's own counts (no coordination between senders).
//! A hot key is then split over two workers, so the state of a key lives in up to two
//! places and must be **merged** to answer for the key: exactly what the mergeable state of
//! this crate provides. When one key is more than `2/n` of the stream two workers cannot
//! carry it, and [`DChoices`] gives the hot keys `d` candidates instead.
//!
//! # The partitioned runner
//!
//! [`Partitioned`] holds one instance per worker, made by
//! [`empty_part`](crate::core::Mergeable::empty_part) so that randomized operators draw
//! independent random numbers, routes each item to its worker's instance, and merges the
//! instances on demand. With the `rayon` feature, [`Partitioned::par_observe`] routes a
//! slice with one sender per thread and lets the instances observe in parallel, and
//! [`Partitioned::par_observe_hashed`] does the same for a synopsis that hashes its items
//! with one hash per item: the partitioner routes by the item's hash under the sketches'
//! default seed ([`KEY_SEED`]) mixed with its own seed ([`routing_hash`]), so the hash that
//! routes an item is the one its sketch observes. Every path routes an item alike. For the
//! sketches whose merge is exact (HyperLogLog, Flajolet–Martin, standard Count-Min, Bloom and
//! counting Bloom filters) the merged state is exactly that of one sequential pass, whatever
//! the partitioner and the number of workers (`tests/laws.rs` checks 1, 2, 4 and 8); heavy
//! hitters keep their guarantee; the samplers are distributed as one pass.
//!
//! # Windows: answers over the recent past
//!
//! [`CountWindow`] (the last N items) and [`TimeWindow`] (the last hour of event time, with
//! a watermark and an allowed lateness) keep one synopsis per *pane* of one slide and answer
//! over a window by merging its panes, through [`SlidingPanes`], an incremental two-stacks
//! aggregator: two merges per slide, amortized, and a copy and a merge per answer, whatever
//! the number of panes. They work for any mergeable synopsis: distinct users in the last
//! hour, frequencies over the last ten minutes, a uniform sample of the last window, "seen in
//! the last N items". Late items are handed back to the caller and counted. [`Window`]
//! teaches the idea, the memory (`panes + O(1)` synopses) and the error (that of one
//! synopsis over the window's items).
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::stream::{CountWindow, Window};
//!
//! let mut last_10k = CountWindow::new(&HyperLogLog::new(12)?, Window::sliding(10_000, 1_000)?)?;
//! last_10k.observe_all(0..50_000u64);
//! // Within 4 standard errors of a merged sketch, 1.04/√4096.
//! assert!((last_10k.window()?.estimate() / 10_000.0 - 1.0).abs() < 4.0 * 1.04 / 64.0);
//! # Ok::<(), synopses::Error>(())
//! ```
//!
//! # Several processes or machines: timely dataflow
//!
//! With the `timely` feature, [`SketchStream`],
//! [`SketchByKey`] and [`SketchWindows`] make any
//! synopsis an operator inside a [timely dataflow](https://docs.rs/timely) computation:
//! `sketch` gives one synopsis per completed timestamp, `sketch_by_key` one per key per
//! timestamp, with items routed by these partitioners (partial key grouping included: the two
//! halves of a hot key merge downstream), and `windows` one per tumbling or sliding window of
//! timestamps. Each worker folds its own items; when timely's progress tracking says a
//! time is complete, only the parts' [encodings](crate::codec::Codec) cross workers, and
//! per-time state is dropped, so memory does not grow with the stream. Threads, processes and
//! machines are timely's `-w`, `-n`, `-p` and `-h` flags, read and checked by
//! [`config_from_args`] (`examples/timely.rs`); `tests/timely.rs`
//! checks every time's result against a sequential pass, with 1, 2 and 4 threads and 2
//! processes on 127.0.0.1.
//!
//! # Checkpoints
//!
//! [`Checkpoints`] saves an operator's whole state at a consistent point (between batches on
//! rayon; at a completed timestamp in timely, where every worker has seen the same prefix) to
//! a directory, one file per part, atomically, and restores the newest intact checkpoint: a
//! synopsis, a window with all its panes, a [`Partitioned`] with its partitioner's loads and
//! its parts, a sampler with its random generator. Restore-and-continue gives the state of the
//! run that never stopped, bit for bit (`tests/checkpoint.rs` checks every reachable state of
//! every synopsis, windows and partitioned operators; `tests/timely.rs` a dataflow crashed
//! mid-epoch; `examples/timely.rs --kill-demo` a process killed by SIGKILL). The
//! [module](checkpoint) teaches snapshots and state backends.
//!
//! # Limits and adversaries
//!
//! Loads saturate at `u64::MAX` (and [`Partitioner::imbalance`] sums them in 128 bits).
//! [`Partitioned::new`] checks the memory of its parts before it makes them: at most
//! [`Partitioned::MAX_BYTES`] (64 GiB), or a `ConfigError`.
//!
//! The partitioners route by the hash of each key under [`KEY_SEED`] mixed with
//! [`ROUTING_SEED`], both public: an adversary who chooses the keys can send every one of
//! them to one worker of a key grouping (or two of a partial key grouping), and so overload
//! it. On untrusted keys, route with a secret seed (`with_seed` on each partitioner); what
//! the mix then hides and what it does not is in [`routing_hash`].
//!
//! # When not to use it
//!
//! * The stream fits one core: a single instance avoids the routing and the merge.
//! * The operator's state does not merge: only key grouping is correct, and skew will show.
//! * The work per item is tiny next to routing it (a hash and a move): partitioning costs
//!   more than it saves; observe contiguous chunks instead
//!   ([`OperatorExt::par_observe`]).
//!
//! # References
//!
//! * Y. Azar, A. Z. Broder, A. R. Karlin, E. Upfal. *Balanced allocations.* SIAM J. Comput.
//!   29(1), 1999.
//! * M. A. U. Nasir, G. De Francisci Morales, D. García-Soriano, N. Kourtellis, M. Serafini.
//!   *The power of both choices: practical load balancing for distributed stream processing
//!   engines.* ICDE 2015.
//! * M. A. U. Nasir et al. *When two choices are not enough: balancing at scale in
//!   distributed stream processing.* ICDE 2016.
//! * M. Raab, A. Steger. *"Balls into bins" — a simple and tight analysis.* RANDOM 1998.
//!
// Without `rayon` the links to `par_observe` point at the types that gain it.
#![cfg_attr(feature = "rayon", doc = "[`OperatorExt::par_observe`]: crate::core::OperatorExt::par_observe")]
#![cfg_attr(not(feature = "rayon"), doc = "[`OperatorExt::par_observe`]: crate::core::OperatorExt")]
#![cfg_attr(not(feature = "rayon"), doc = "[`Partitioned::par_observe`]: Partitioned")]
#![cfg_attr(not(feature = "rayon"), doc = "[`Partitioned::par_observe_hashed`]: Partitioned")]
// Without `timely` the links to its operators point at this module.
#![cfg_attr(feature = "timely", doc = "[`SketchStream`]: timely::SketchStream")]
#![cfg_attr(feature = "timely", doc = "[`SketchByKey`]: timely::SketchByKey")]
#![cfg_attr(feature = "timely", doc = "[`SketchWindows`]: timely::SketchWindows")]
#![cfg_attr(feature = "timely", doc = "[`config_from_args`]: timely::config_from_args")]
#![cfg_attr(not(feature = "timely"), doc = "[`SketchStream`]: self")]
#![cfg_attr(not(feature = "timely"), doc = "[`SketchByKey`]: self")]
#![cfg_attr(not(feature = "timely"), doc = "[`SketchWindows`]: self")]
#![cfg_attr(not(feature = "timely"), doc = "[`config_from_args`]: self")]

pub mod checkpoint;
mod panes;
mod partitioned;
mod partitioner;
#[cfg(feature = "timely")]
pub mod timely;
mod window;

pub use checkpoint::{CheckpointError, Checkpoints, Restored, Snapshot};
pub use panes::SlidingPanes;
pub use partitioned::Partitioned;
pub use partitioner::{
    DChoices, KEY_SEED, KeyGrouping, PartialKeyGrouping, Partitioner, ROUTING_SEED, ShuffleGrouping, routing_hash,
};
pub use window::{Admission, Closed, CountWindow, Late, MergeAtError, TimeWindow, Window};
