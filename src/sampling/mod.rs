//! Sampling: keep a few items of the stream, chosen at random, and answer from them.
//!
//! A sketch answers one question; a sample answers questions you did not know you would ask
//! (an average, a quantile, a subset sum, a look at typical records), with an error that
//! shrinks as `1/√k` for `k` sampled items. The samplers here keep at most `k` items of a
//! stream of unknown length, in one pass, and merge exactly across partitions.
//!
//! | type | sample | per item | use it for |
//! |---|---|---|---|
//! | [`Reservoir`] | uniform: every `k`-subset of the `n` items equally likely | `O(1)`, and only `O(k·log(n/k))` random numbers in all | averages, quantiles, examples of typical records |
//! | [`WeightedReservoir`] | without replacement, inclusion proportional to weight at each draw (PPSWOR) | `O(1)` | picking heavy items more often: large transactions, busy hosts |
//! | [`PrioritySample`] | priority sampling | `O(1)`, one random number | unbiased sums over any subset of weighted items, with their variance |
//!
//! # The idea: keep the smallest random keys
//!
//! Give every item an independent random key and keep the `k` items with the smallest keys.
//! All orders of the keys are equally likely, so every `k`-subset is equally likely to hold
//! the smallest ones: a uniform sample. A weight changes only the key's distribution; the
//! rule "keep the `k` smallest" stays. And because "the `k` smallest of a union" is "the `k`
//! smallest of the two `k`-smallest sets", two samples of two parts of a stream merge into
//! exactly the sample of the whole:
//!
//! ```text
//!   part A: keys  .07 (a3)  .21 (a9)  .40 (a1)       k = 3
//!   part B: keys  .02 (b5)  .33 (b2)  .35 (b8)
//!   merged:       .02 (b5)  .07 (a3)  .21 (a9)       the 3 smallest of all six
//! ```
//!
//! A merge that re-samples by counts instead (take `j` items from A with a hypergeometric
//! `j`) is also exact, but needs fresh random numbers and is exact only in distribution; with
//! keys the merge is a pure function, commutative and associative.
//!
//! # Skipping: Algorithm L
//!
//! Once the reservoir is full, a new item enters only if its key is below the largest key
//! kept, `W`, which happens with probability `W`. Rather than draw a key for every item, Li's
//! Algorithm L draws how many items to pass over before the next one enters, a geometric
//! number `⌊ln U / ln(1 − W)⌋`, and gives the entering item a key uniform on `(0, W)`. The
//! `i`-th item enters with probability `k/i`, so after the first `k` about `k·ln(n/k)` items
//! enter; each costs two random numbers (its key and the next skip). For `k = 1000` and
//! `n = 10^7` that is about 19 000 random numbers instead of 10^7, and over a slice or a
//! range the skipped items are not even looked at.
//!
//! # Weighted sampling: A-ExpJ
//!
//! Efraimidis and Spirakis give item `i` of weight `w_i` the key `U_i^(1/w_i)` and keep the
//! `k` largest, which draws items one after another with probability proportional to their
//! weight among those not yet drawn. Here the key is the equivalent `E_i / w_i` with
//! `E_i = −ln U_i` exponential, kept smallest (the same order, and the same merge). Their
//! A-ExpJ skips as Algorithm L does: it draws how much *weight* to pass over before the next
//! item enters, `E / W` for the largest kept key `W`, so it draws random numbers only for the
//! items that enter.
//!
//! # Priority sampling: unbiased subset sums
//!
//! Duffield, Lund and Thorup give item `i` the priority `w_i / U_i` and keep the `k` highest
//! (here, the keys `U_i / w_i`, kept smallest). With `τ` the `(k+1)`-th highest priority, a
//! sampled item stands for weight `max(w_i, τ)` and an unsampled one for 0. Every such
//! estimate is unbiased, any two are uncorrelated, and the variance of each is estimated
//! without bias by `τ·max(0, τ − w_i)`, so the sum over *any* subset chosen after the fact
//! comes with an unbiased estimate and an unbiased variance:
//!
//! ```text
//!   Σ_{i ∈ S} w_i  ≈  Σ_{i ∈ S ∩ sample} max(w_i, τ)      variance ≈ Σ_{i ∈ S ∩ sample} τ · max(0, τ − w_i)
//! ```
//!
//! Heavy items (`w_i ≥ τ`) are sampled with certainty and contribute no variance; Szegedy
//! showed that priority sampling with `k + 1` items is at least as good as the best
//! unbiased scheme with `k`.
//!
//! # The error bound
//!
//! For a uniform sample of `k` of `n` items, the sample mean of a value with standard
//! deviation `σ` has standard error `σ/√k · √((n − k)/(n − 1))` (the finite-population
//! correction), and the estimate `n · mean` of the stream's sum has `n` times that. A
//! fraction `p` estimated from the sample has standard error `√(p(1 − p)/k)` (times the same
//! correction).
//!
//! | k | standard error of a fraction near 1/2 | of a mean, in units of σ |
//! |---|---|---|
//! | 100 | 5 % | 0.10 σ |
//! | 1 000 | 1.6 % | 0.032 σ |
//! | 10 000 | 0.5 % | 0.010 σ |
//!
//! For priority sampling, an item at least as heavy as `τ` is estimated exactly, and each
//! lighter sampled item adds `τ·(τ − w_i)` to the variance estimate: the variance of a subset
//! sum comes only from its light items, and shrinks as `k` grows and `τ` falls.
//! `tests/accuracy.rs` checks the unbiasedness of the estimate and of its variance.
//!
//! # Merging and parallel partitions
//!
//! Every sampler merges exactly: the merged sample is distributed as the sample of one pass
//! over the two streams, whatever the split, and merging never fails for being given fewer
//! than `k` items. Two instances must not draw the same random numbers, or their items would
//! get identical keys and be kept or dropped together; each instance has a seed and a stream
//! number, [`empty_part`](crate::core::Mergeable::empty_part) gives each partition its own
//! stream, and a merge of two non-empty instances of the same seed and stream is refused.
//! Results are reproducible for a given seed and partitioning.
//!
//! # Checkpoints
//!
//! A sampler's encoding (`to_bytes`, format version 2) holds its random generator's exact
//! state and what it has drawn ahead (the reservoir's skip, the weighted reservoir's jump),
//! so a sampler decoded mid-stream continues exactly as the encoded one would have: the same
//! sample, and the same bytes, as an uninterrupted run. One exception for the weighted and
//! priority samples: items of weights below about 1e-308, whose keys overflow to +∞, tie, and
//! which of the tied items a later merge keeps depends on where they sit in memory, which the
//! encoding does not record. Version 1 encodings, which held no
//! generator, are still read; a sampler decoded from one continues on a fresh stream derived
//! from its seed, stream and count, with a sample as uniform (or weighted) but not the same.
//!
//! ```
//! use synopses::sampling::Reservoir;
//!
//! let mut uninterrupted = Reservoir::new(50, 7)?;
//! uninterrupted.observe_all(0..50_000_u64);
//! let checkpoint = uninterrupted.to_bytes();
//! let mut restored = Reservoir::<u64>::from_bytes(&checkpoint)?;
//! uninterrupted.observe_all(50_000..100_000_u64);
//! restored.observe_all(50_000..100_000_u64);
//! assert!(restored.iter().eq(uninterrupted.iter()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Limits
//!
//! Counts of items seen saturate at `u64::MAX`, total weights at `f64::MAX`. Weights may be
//! any finite positive number: keys of the heaviest items underflow to 0 and of the lightest
//! overflow to +∞, and the samples stay exact; a priority sample's threshold and its sums and
//! variances saturate at `f64::MAX` (a variance does from weights near `10^154`).
//!
//! # Adversaries
//!
//! The samplers hash nothing: their choices come from their random streams, which a seed
//! fixes. Someone who knows the seed and orders the stream knows which positions will be
//! sampled, and can put whatever items they like there. Where the stream is untrusted, seed
//! from a secret (or from the operating system's randomness) and keep it; the samples are
//! then uniform (or weighted) whatever the items.
//!
//! # When not to use it
//!
//! * The question is known and is a count, a distinct count or a membership test: the
//!   sketches of the other families answer it with far less error per byte.
//! * Rare items matter (a needle in the haystack): a uniform sample of `k` sees an item of
//!   frequency `f` only with probability about `k·f/n`; use heavy hitters, or a weighted or
//!   stratified sample.
//! * Distinct counts: a sample of rows cannot estimate how many distinct values the stream
//!   holds (a value seen once in the sample may be one of many or unique); keep the items
//!   whose key *hashes* below a threshold instead, so that every occurrence of a kept key is
//!   kept, and feed them to a distinct-count sketch.
//!
//! # References
//!
//! * J. S. Vitter. *Random sampling with a reservoir.* ACM TOMS 11(1), 1985.
//! * K.-H. Li. *Reservoir-sampling algorithms of time complexity O(n(1 + log(N/n))).* ACM
//!   TOMS 20(4), 1994 (Algorithm L).
//! * P. S. Efraimidis, P. G. Spirakis. *Weighted random sampling with a reservoir.* IPL
//!   97(5), 2006 (A-Res, A-ExpJ).
//! * N. Duffield, C. Lund, M. Thorup. *Priority sampling for estimation of arbitrary subset
//!   sums.* J. ACM 54(6), 2007.
//! * M. Szegedy. *The DLT priority sampling is essentially optimal.* STOC 2006.
//! * E. Cohen, H. Kaplan. *Summarizing data using bottom-k sketches.* PODC 2007.

mod bottom;
mod priority;
mod reservoir;
mod state;
mod weighted;

pub use priority::PrioritySample;
pub use reservoir::Reservoir;
pub use weighted::WeightedReservoir;
