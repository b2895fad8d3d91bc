//! Membership: has this item been seen before?
//!
//! A set answers exactly but grows with every item. A Bloom filter answers in about 10 bits
//! per item at a 1 % error rate, whatever the items' size, and its only errors are false
//! positives: an item that was inserted is always found.
//!
//! | type | memory | error | use it for |
//! |---|---|---|---|
//! | [`Bloom`] | `m` bits; `1.44·log2(1/p)` bits per item | false positives with probability `p ≈ (1 − e^(−kn/m))^k`; no false negatives | "have I seen it?" filters in front of slow lookups, joins, dedup |
//! | [`CountingBloom`] | `m` counters of 4 (8, 16) bits: 4× a Bloom filter | the same false positives; no false negatives while only members are removed | sets that shrink as well as grow: open sessions, cache contents, sliding windows |
//!
//! # The idea: set a few bits per item
//!
//! Keep `m` bits, all zero. To insert an item, hash it to `k` positions and set those bits.
//! To look an item up, check its `k` bits: if any is zero, the item was never inserted; if
//! all are set, it probably was, unless other items happened to set all `k` of them.
//!
//! ```text
//!   insert "cat" → positions 3, 9, 14      bits: 0001000001000010...
//!   insert "dog" → positions 1, 9, 20      bits: 0101000001000010000010...
//!   "cow" → positions 3, 14, 20: all set   → a false positive
//!   "emu" → positions 2, 9, 14: bit 2 is 0 → certainly absent
//! ```
//!
//! The `k` positions come from one 64-bit hash by double hashing (`g_i = h1 + i·h2`, Kirsch
//! and Mitzenmacher), which keeps the false-positive rate of `k` independent hashes at the
//! cost of one.
//!
//! # The error bound
//!
//! After `n` distinct items, a given bit is still zero with probability
//! `(1 − 1/m)^(kn) ≈ e^(−kn/m)`, and a new item is a false positive when its `k` bits are all
//! set:
//!
//! ```text
//!   p ≈ (1 − e^(−k·n/m))^k,    minimized at k = (m/n)·ln 2, where p = 2^(−k) ≈ 0.6185^(m/n)
//!   so for a target p:  m = −n·ln p / (ln 2)²  bits,  k = (m/n)·ln 2
//! ```
//!
//! | target p | bits per item | k |
//! |---|---|---|
//! | 10 % | 4.8 | 3 |
//! | 1 % | 9.6 | 7 |
//! | 0.1 % | 14.4 | 10 |
//! | 0.01 % | 19.2 | 13 |
//!
//! Given the filter itself, the rate is exactly `fill^k` ([`Bloom::false_positive_rate`]),
//! and the fill also estimates how many distinct items went in ([`Bloom::estimated_items`],
//! Swamidass and Baldi). A filter filled past its design size degrades smoothly: at twice the
//! items of a 1 % design the rate is about 16 %.
//!
//! # Merging
//!
//! Two filters of the same size, hash count and seed merge by OR-ing their bits: exactly the
//! filter of the union of their sets, whatever the split (`tests/laws.rs`). Intersection by
//! AND is not offered: it is not the filter of the intersection (its false-positive rate is
//! higher than the formula says).
//!
//! # Counting Bloom filters: removing items
//!
//! A Bloom filter cannot forget: clearing an item's bits could clear bits that other items
//! share. A counting Bloom filter (Fan, Cao, Almeida and Broder) keeps a small counter where
//! the Bloom filter keeps a bit. Inserting adds one to the item's `k` counters, removing
//! subtracts one, and an item is present when all its counters are above zero: the filter
//! answers exactly as the Bloom filter of the items currently in it
//! ([`CountingBloom::to_bloom`] gives that filter, in a quarter of the memory).
//!
//! ```text
//!   insert "cat" → counters 3, 9, 14      counters: 0 0 0 1 0 0 0 0 0 1 0 0 0 0 1 ...
//!   insert "dog" → counters 1, 9, 20      counters: 0 1 0 1 0 0 0 0 0 2 0 0 0 0 1 ... 1
//!   remove "cat" → counters 3, 9, 14      counters: 0 1 0 0 0 0 0 0 0 1 0 0 0 0 0 ... 1
//!   "dog" is still found: counter 9 counted both and is still 1
//!   remove "emu" → counter 2 is 0: an error, and nothing changes
//! ```
//!
//! ## How many bits per counter
//!
//! A counter holds the number of (item, hash) pairs that land on it, about Poisson with mean
//! `kn/m`, which is `ln 2 ≈ 0.69` at the optimal `k`. Fan et al. bound the chance that any of
//! the `m` counters ever reaches `i`:
//!
//! ```text
//!   P(some counter ≥ i) ≤ m · (e · ln 2 / i)^i,     for i = 15:  m · 3.1·10^-14
//! ```
//!
//! (15 because a 4-bit counter saturates on reaching 15, the largest value it holds.) So
//! 4-bit counters suffice for sets: a filter of 10^9 counters saturates one with probability
//! at most 3·10^-5 by this bound, and about 1.6·10^-6 by the exact Poisson tail
//! (`tests/accuracy.rs` checks the saturation rate against the exact binomial tail). The bound is about distinct items: an item inserted 15 times saturates its own
//! counters. For multisets with repeats use [`CounterWidth::Eight`] or
//! [`CounterWidth::Sixteen`], at 2× and 4× the memory.
//!
//! A counter that reaches its maximum *saturates* and stays there: it no longer knows its
//! count, so it is never decremented. It can only make false positives, never a false
//! negative; [`CountingBloom::saturated_counters`] shows how many there are. (The same
//! [`CounterWidth`] and sticky saturation size the counters of a
//! [`CountMin`](crate::frequency::CountMin) sketch, from 8 to 64 bits.)
//!
//! ## Removing what was never inserted
//!
//! `remove` fails, and changes nothing, for an item the filter knows is absent (a counter
//! is zero). It cannot refuse a *false positive*: an absent item whose counters are all above
//! zero looks exactly like a member. Removing it decrements counters that members rely on,
//! and a member whose only contribution to a counter is taken away becomes a false negative.
//! At the design load about 70 % of a false positive's counters are at 1, so each such
//! removal costs several members. Measured (`tests/laws.rs`): a 1 % filter holding 10^4
//! members, asked to remove 10^5 items that were never inserted, refuses 99 229, removes the
//! 771 false positives, and then misses 3 175 members. Every counting or fingerprint filter
//! (cuckoo and quotient filters included) shares this limit; only removing items known to be
//! members, as a cache that removes what it evicted does, keeps the no-false-negative
//! guarantee.
//!
//! ## Merging counting filters
//!
//! Two counting filters of the same size, hashes, width and seed merge by adding counters,
//! saturating at the maximum: the filter of the union of the two multisets. For insertions,
//! `min(a + b, max)` is also what one filter that saw both streams holds, saturation
//! included, so splitting a stream over partitions and merging gives exactly the one-pass
//! filter (`tests/laws.rs`).
//!
//! # Limits
//!
//! A counting filter's count of items saturates at `u64::MAX` (its counters saturate at
//! their width's maximum, as above). A full Bloom filter's
//! [`estimated_items`](Bloom::estimated_items) is the largest the filter can give,
//! `(m/k)·ln m`, not an infinity.
//!
//! # Adversaries
//!
//! With a public seed (the default) an adversary who chooses items can compute items whose
//! bits are those of a member (a false positive on demand), fill a filter with far fewer
//! items than its design size, or, in a counting filter, remove an item they never inserted
//! and so take members out. On items an adversary chooses, hash with a secret seed
//! ([`Bloom::with_false_positive_rate_and_seed`],
//! [`CountingBloom::with_false_positive_rate_and_seed`]).
//!
//! # When not to use it
//!
//! * Items must be removed but memory is tight: a counting Bloom filter takes 4× a Bloom
//!   filter. Rebuilding a Bloom filter now and then, or a cuckoo filter (Fan et al., 2014:
//!   deletions at about the size of a Bloom filter), may serve better.
//! * Removals may name items that were never inserted (see above): keep the exact set, or
//!   check against it before removing.
//! * You need to list or count the items: a Bloom filter only answers "maybe" or "no", and a
//!   counting filter's [`estimate`](CountingBloom::estimate) is only an upper bound; for how often
//!   each item occurs use [`CountMin`](crate::frequency::CountMin).
//! * The set is small: a `HashSet` of the items (or of their 64-bit hashes) may be smaller
//!   than you think, and it is exact.
//! * You need the last few percent of speed at a fixed memory: blocked Bloom filters keep
//!   each item's bits in one cache line, at a slightly higher false-positive rate.
//!
//! # References
//!
//! * B. H. Bloom. *Space/time trade-offs in hash coding with allowable errors.* CACM 13(7),
//!   1970.
//! * A. Kirsch, M. Mitzenmacher. *Less hashing, same performance: building a better Bloom
//!   filter.* ESA 2006.
//! * L. Fan, P. Cao, J. Almeida, A. Z. Broder. *Summary cache: a scalable wide-area web cache
//!   sharing protocol.* IEEE/ACM Transactions on Networking 8(3), 2000 (counting Bloom filters
//!   and the counter overflow bound).
//! * B. Fan, D. G. Andersen, M. Kaminsky, M. D. Mitzenmacher. *Cuckoo filter: practically
//!   better than Bloom.* CoNEXT 2014.
//! * S. J. Swamidass, P. Baldi. *Mathematical correction for fingerprint similarity measures
//!   to improve chemical retrieval.* J. Chem. Inf. Model. 47(3), 2007 (the item estimate).

mod bloom;
mod counting_bloom;

pub use crate::core::CounterWidth;
pub use bloom::Bloom;
pub use counting_bloom::{CountingBloom, CountingBloomBuilder};
