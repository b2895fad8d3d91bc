//! # synopses
//!
//! Sketches and approximate stream operators with mergeable state.
//!
//! A stream is too large to store; a *synopsis* answers a question about it in small, bounded
//! memory with a known error. Every synopsis in this crate is a stream operator that observes
//! one item at a time, and its state *merges*: two instances that observed two parts of a
//! stream combine into the instance that would have observed the whole. That one contract lets
//! the same code run in a loop, over parallel partitions, or across machines.
//!
//! # Quick start
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::core::Confidence;
//!
//! // Count distinct visitors in 4 KiB, on two servers, then combine.
//! let mut server_a = HyperLogLog::new(12)?;
//! let mut server_b = HyperLogLog::new(12)?;
//! for i in 0..60_000_u64 {
//!     server_a.observe(format!("user-{}", i % 40_000));
//!     server_b.observe(format!("user-{}", 20_000 + i % 40_000));
//! }
//! // Ship one sketch as bytes, merge it into the other.
//! let shipped = HyperLogLog::from_bytes(&server_b.to_bytes())?;
//! server_a.merge(&shipped)?;
//!
//! let bounds = server_a.bounds(Confidence::ThreeSigma);
//! assert!(bounds.contains(60_000.0)); // users 0 ..< 60 000
//! # Ok::<(), synopses::Error>(())
//! ```
//!
//! # Choosing a synopsis
//!
//! | question | type | error | memory |
//! |---|---|---|---|
//! | how many distinct items? | [`cardinality::HyperLogLog`] | `0.83/√m` (one stream), `1.04/√m` (merged) | `m` bytes, `m = 2^p` |
//! | how many distinct items? (teaching baseline) | [`cardinality::FlajoletMartin`] | `0.78/√m` | `4m` bytes |
//! | how often did this item occur? | [`frequency::CountMin`] | `≤ e·N/width` with probability `1 − e^-depth`, never under | `8·width·depth` bytes (64-bit counters; 32-, 16- and 8-bit ones take 4, 2, 1) |
//! | which items are most frequent? | [`frequency::HeavyHitters`] | counts within `N/(k+1)` below the truth, always | `k` to `2k` items and counts |
//! | have I seen this item? | [`membership::Bloom`] | false positives `≈ (1 − e^(−kn/m))^k`, no false negatives | `m` bits, ≈ 9.6 per item at 1 % |
//! | is this item in the set now (with removals)? | [`membership::CountingBloom`] | as Bloom, while only members are removed | `m` counters of 4 bits, ≈ 4.8 bytes per item at 1 % |
//! | what are the p50, p99, p99.9 of these numbers? | [`quantiles::DDSketch`] | within `α·|x|` of every true quantile `x`, deterministically | one counter a bucket, `ln(max/min)/ln((1+α)/(1−α))` buckets, at most 2048 a sign by default |
//! | what fraction of these items lies below `x`? their median? (any ordered items) | [`quantiles::Kll`] | rank within `ε·n`, `ε ≈ 2.296/k^0.9723` (1.33 % at k = 200), 99 % confidence per query | about `3k` items (641 at k = 200) |
//! | a few typical items, for any later question | [`sampling::Reservoir`] | a uniform sample: a mean's error `σ/√k` | `k` items |
//! | items drawn in proportion to weight | [`sampling::WeightedReservoir`] | without replacement (PPSWOR) | `k` items and weights |
//! | the total weight of any subset, decided later | [`sampling::PrioritySample`] | unbiased, with an unbiased variance estimate | `k + 1` items and weights |
//! | keep up with an overloaded stream | [`shedding::LoadShedder`] in front of any of them | unbiased counts and sums ([`shedding::HorvitzThompson`]) with their variance | that of the operator behind it |
//! | any of these over the last N items, or the last hour of event time | [`stream::CountWindow`], [`stream::TimeWindow`] around any mergeable one | that of one synopsis over the window's items | `panes + 3` synopses, plus the panes open for late items |
//! | a Redis HyperLogLog (`PFADD`, `PFCOUNT`, `PFMERGE`): read, update, merge, write back | [`formats::RedisHyperLogLog`] | `1.04/√16 384` = 0.81 %, `PFCOUNT`'s own number | 12 304 bytes dense, less sparse (Redis's string) |
//! | an Apache DataSketches HLL sketch (Java, C++, Python): read, update, union, write back | [`formats::DataSketchesHll`] | HIP `0.83/√k`, composite `1.04/√k`: DataSketches' own numbers | `k/2` to `k` bytes (HLL_4 to HLL_8), less in list and set mode |
//!
//! # Merging and parallel partitions
//!
//! Every synopsis implements [`core::Mergeable`] (in scope with `use synopses::prelude::*`,
//! which brings every trait a user needs): `merge` combines two instances of the same
//! configuration, and `empty_like` makes the identity. Merging instances of different
//! configurations returns a [`MergeError`] and changes nothing. With the `rayon` feature,
//! [`core::OperatorExt::par_observe`] splits a slice over the thread pool, observes each part
//! into its own instance and merges them; for the deterministic synopses the result holds
//! exactly the state of a sequential pass (a distinct-count sketch's registers; only the
//! martingale estimate, a record of one stream's history, is not kept by a merge, so the
//! merged sketch answers with its register estimator). The samplers and the random load shedder are randomized:
//! each part draws from its own random stream ([`core::Mergeable::empty_part`]), the merged
//! result is distributed exactly as a sequential pass, and it is the same for the same seed
//! and partitioning.
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::prelude::*;
//!
//! let parts: Vec<HyperLogLog> = (0..4_u64)
//!     .map(|p| {
//!         let mut h = HyperLogLog::new(12)?;
//!         (p * 1000..(p + 1) * 1000).for_each(|i| h.observe(i));
//!         Ok(h)
//!     })
//!     .collect::<Result<_, synopses::ConfigError>>()?;
//! let mut union = parts[0].empty_like();
//! union.merge_all(&parts)?;
//! assert!((union.estimate() - 4000.0).abs() < 4000.0 * 0.05);
//! # Ok::<(), synopses::Error>(())
//! ```
//!
//! # Streams over time
//!
//! A stream's answers change as it flows, and a long-running job must survive failures:
//!
//! * **Windows** ([`stream::CountWindow`], [`stream::TimeWindow`]): any mergeable synopsis over
//!   the last N items, or the last hour of event time with a watermark and an allowed
//!   lateness (late items are handed back and counted, never lost). One synopsis per pane of
//!   one slide; a window's answer merges its panes through a two-stacks aggregator
//!   ([`stream::SlidingPanes`]), O(1) merges per slide, with the error of one synopsis over
//!   the window's items.
//! * **Checkpoints** ([`stream::Checkpoints`]): a whole operator (a synopsis, a window with all
//!   its panes, a [`stream::Partitioned`] with its parts and partitioner) written to a
//!   directory atomically at a consistent point, and the newest intact one restored after a
//!   crash; restore-and-continue gives the uninterrupted run's state, bit for bit.
//! * **Engines**: with the `timely` feature, synopses are operators of a timely dataflow:
//!   each worker folds its own items and only synopsis bytes cross workers, with one answer
//!   per completed timestamp, per key, or per window.
//!
//! ```
//! use synopses::cardinality::HyperLogLog;
//! use synopses::stream::{Checkpoints, CountWindow, Window};
//!
//! // Distinct users among the last 10 000 views, every 1 000 views.
//! let mut recent = CountWindow::new(&HyperLogLog::new(12)?, Window::sliding(10_000, 1_000)?)?;
//! recent.observe_all((0..25_000_u64).map(|view| view % 7_000));
//! let dir = std::env::temp_dir().join(format!("synopses-guide-{}", std::process::id()));
//! let store = Checkpoints::open(&dir)?;
//! store.save(25_000, &recent)?; // the position to replay the views from
//!
//! // After a crash: restore, replay from the saved position, and go on.
//! let restored = store.latest::<CountWindow<HyperLogLog>>()?.ok_or("no checkpoint")?;
//! let mut resumed = restored.state;
//! resumed.observe_all((restored.epoch..30_000).map(|view| view % 7_000));
//! recent.observe_all((25_000..30_000_u64).map(|view| view % 7_000));
//! assert_eq!(resumed, recent);
//! // The 10 000 views hold all 7 000 users: within 3σ of a merged sketch, 3 · 1.04/√4096.
//! assert!((resumed.window()?.estimate() / 7_000.0 - 1.0).abs() < 3.0 * 1.04 / 64.0);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Determinism and hashing
//!
//! Items are hashed with seeded xxh3-64 over a canonical little-endian encoding
//! ([`hash`]), never with `std::hash::Hash`, so a sketch built on one machine merges with a
//! sketch built on another, today or in a later version. Golden tests pin the hash values and
//! the encodings. Tuples, options and sequences of items are items, and so is a struct of
//! them through [`hashable!`]: `hll.observe((user, day))`. Every structure also accepts a
//! pre-computed hash (`observe_hash`), to hash an item once and feed several structures.
//!
//! # Limits and adversaries
//!
//! Every answer is a finite number, for every state the public API can reach: counts
//! saturate at `u64::MAX`, sums of weights at `f64::MAX`, distinct counts at `2^64`, and each
//! type's docs say which of its numbers saturate. Sizes are capped and allocated fallibly, so
//! an absurd one is a [`ConfigError`], not an aborted process.
//!
//! The hash is seeded but not cryptographic: whoever knows a structure's seed can compute
//! items of any hash, and so steer what it answers (each family's docs say how far). The
//! default seeds are public, so that sketches built anywhere merge. On items an adversary
//! chooses, give every structure a secret seed (`with_seed`, `with_error_and_seed`, ...):
//! each hashed structure takes one, and each randomized operator takes its own.
//!
//! # Serialization
//!
//! `to_bytes` / `from_bytes` use one versioned, checksummed binary format ([`codec`]), and
//! `encoded_len` tells its size without encoding; [`codec::Codec`] is the same for generic code.
//! Decoding validates every field and never panics or over-allocates on hostile input. A
//! decoded synopsis continues exactly as the encoded one would have, samplers included
//! (their encodings hold their random generators), so restoring a checkpoint and continuing
//! gives the uninterrupted run's answers. The format version is per family, and every
//! version a type ever wrote stays readable. With the `serde` feature, the same bytes back
//! `Serialize` and `Deserialize`.
//!
//! # Cargo features
//!
//! * `serde`: `Serialize` / `Deserialize` for every synopsis, through the validating decoder.
//! * `rayon`: [`core::OperatorExt::par_observe`] and [`stream::Partitioned::par_observe`],
//!   parallel observation over rayon's pool.
//! * `timely`: `stream::timely::{SketchStream, SketchByKey, SketchWindows}`, synopses as
//!   operators of a [timely dataflow](https://docs.rs/timely) computation (one result per
//!   completed timestamp, per key or per window if asked), in threads, processes or machines
//!   (timely pinned to 0.32.x).
//!
//! No feature is on by default. The crate needs `std` (for floating-point functions).
//!
// Without `rayon` the links to `par_observe` point at the types that gain it.
#![cfg_attr(not(feature = "rayon"), doc = "[`core::OperatorExt::par_observe`]: core::OperatorExt")]
#![cfg_attr(not(feature = "rayon"), doc = "[`stream::Partitioned::par_observe`]: stream::Partitioned")]
// docs.rs badges the items behind a feature: on current nightly `doc_cfg` does it by itself
// (`doc_auto_cfg` is gone).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// `unsafe` only to call a function compiled for a CPU feature after checking at run time that
// the CPU has it: AVX2 register sums (`cardinality/register_sums.rs`, measured 4.4× faster) and
// AVX2 or AVX-512 word hashing (`hash/words.rs`, 2.6× and 5.3× faster).
#![deny(unsafe_code)]

pub mod cardinality;
pub mod codec;
pub mod core;
pub mod formats;
pub mod frequency;
pub mod hash;
pub mod membership;
pub mod prelude;
pub mod quantiles;
pub mod sampling;
pub mod shedding;
pub mod stream;

pub use crate::core::{ConfigError, DecodeError, Error, MergeError, RemoveError};

// The README's Rust examples run as doctests, so they cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
