//! Frequency: how often has each item occurred?
//!
//! Counting every item exactly takes a counter per distinct item. A Count-Min sketch keeps a
//! fixed grid of counters instead and answers any item's count with an error that is a small
//! fraction of the stream's total, always erring upward.
//!
//! | type | memory | error | use it for |
//! |---|---|---|---|
//! | [`CountMin`] | `width · depth` counters of 8 bytes (or 4, 2, 1) | `≤ ε·N` with probability `1 − δ`, `ε = e/width`, `δ = e^-depth`; never an under-count | point counts of items you name, join sizes |
//! | [`HeavyHitters`] | `capacity` (up to `2·capacity`) items and counts | `≤ N/(capacity+1)`, always; never an over-count | the most frequent items themselves, top-k |
//!
//! # The idea: hash into a few small counter arrays, take the minimum
//!
//! Keep `depth` rows of `width` counters, and one hash function per row. To count an item,
//! add to the counter its hash picks in every row. Every counter an item maps to holds at
//! least its own count, plus the counts of the other items that collided with it there; so
//! each row over-estimates, and the least over-estimated row, the minimum, is the answer.
//!
//! ```text
//!   observe("cat")           row 0:  . . . . [+1] . . . . . . .
//!                            row 1:  . [+1] . . . . . . . . . .
//!                            row 2:  . . . . . . . . . [+1] . .
//!   estimate("cat") = min(row0[h0(cat)], row1[h1(cat)], row2[h2(cat)])
//! ```
//!
//! The rows' hash functions come from one 64-bit hash per item, each row multiplying it by
//! its own odd constant, so an update costs one hash, not `depth`. (Double hashing,
//! `g_i = h1 + i·h2`, would cost the same but ties the rows together: two items that share
//! two counters share nearly all, and the `δ` below then fails for deep sketches.)
//!
//! # The error bound
//!
//! In one row, the other items that land on our item's counter add, in expectation,
//! `N/width` (N = total count). By Markov's inequality that excess exceeds `e·N/width` with
//! probability at most `1/e`; the rows are independent, so all `depth` of them do with
//! probability at most `e^-depth`. Hence, with `ε = e/width` and `δ = e^-depth`:
//!
//! ```text
//!   f(x)  ≤  estimate(x)  ≤  f(x) + ε·N     with probability at least 1 − δ
//! ```
//!
//! | width × depth | memory (64-bit counters) | ε | δ |
//! |---|---|---|---|
//! | 272 × 3 | 6.4 KiB | 1 % of N | 5 % |
//! | 2 719 × 5 | 106 KiB | 0.1 % of N | 0.7 % |
//! | 27 183 × 7 | 1.45 MiB | 0.01 % of N | 0.09 % |
//!
//! The bound is relative to the *total*, so it is tight for frequent items and meaningless
//! for rare ones: an item seen 3 times in a stream of 10⁹ is estimated within ±10⁶ at 0.1 %.
//!
//! # Counter width
//!
//! No counter ever holds more than the total count `N`. So the counters need only as many
//! bits as `N` does: with [`CounterWidth::ThirtyTwo`] a sketch of a stream of fewer than 2^32
//! counts is exactly the sketch 64-bit counters would hold, in half the memory (80 KiB
//! instead of 160 KiB at 4096 × 5; 16-bit counters take 40 KiB, 8-bit ones 20 KiB). Choose
//! it with [`CountMinBuilder::counter_width`].
//!
//! Past that, counters saturate as a [`CountingBloom`](crate::membership::CountingBloom)'s
//! do: a counter that reaches its maximum stays there. Saturation only ever lowers a counter
//! below what it would count, so an estimate *below* the maximum is still never below the
//! true count (the minimum over the rows is then a counter that counted exactly), and the
//! `ε·N` bound still holds. An estimate *equal* to the maximum means that all the item's
//! counters saturated: its count is unknown, up to `N`, which is what
//! [`CountMin::bounds`] answers then. [`CountMin::saturated_counters`] says whether any
//! counter saturated. Sketches merge only with sketches of the same width; widths do not mix.
//!
//! # Conservative update
//!
//! Estan and Varghese's *conservative update* raises each of the item's counters only to
//! `estimate + count`, never beyond: a counter that is already higher (because of
//! collisions) is left alone. Every counter still holds at least the true count of every item
//! mapped to it, so estimates are still never below the truth, and each counter is at most
//! what the standard update would hold, so the error is never larger; on skewed streams it is
//! several times smaller. The price: counts can only be added (no deletions, no negative
//! weights), an update reads before it writes, and a merge is no longer exact (below).
//!
//! # Merging
//!
//! With the standard update the sketch is *linear*: the counters of two streams add up to the
//! counters of their union, so merging by counter sums is exact, whatever the split
//! (`tests/laws.rs`). With the conservative update the sum of two sketches is a valid sketch
//! of the union in the sense that matters, never below the truth and never above what a
//! standard sketch would say, but it is not the conservative sketch of the union. Sketches
//! merge only with the same width, depth, seed, update rule and counter width.
//!
//! # Heavy hitters: keep the candidates
//!
//! Count-Min answers for items you name; to *find* the frequent items, [`HeavyHitters`] keeps
//! them. Misra and Gries's summary holds at most `k` items with counters. An item already
//! kept has its counter raised; a new one gets a counter; and when there are more than `k`,
//! every counter is lowered by the `(k+1)`-th largest and those at zero are dropped:
//!
//! ```text
//!   k = 2, stream a a b c a d
//!   a a b  → {a:2, b:1}
//!   c      → {a:2, b:1, c:1} → lower all by 1 → {a:1}
//!   a d    → {a:2, d:1}
//! ```
//!
//! Each lowering takes the same amount from at least `k + 1` counters, so the total lowered
//! over the stream is at most `N`, and no counter is lowered by more than `N/(k+1)`: every
//! kept count `c(x)` satisfies `f(x) − N/(k+1) ≤ c(x) ≤ f(x)`, deterministically, and any item
//! above `N/(k+1)` is kept. We lower only once the summary holds more than `2k` items (O(1) amortized
//! per item, same guarantee) and track the exact total lowered, which is the error.
//!
//! Two summaries merge (Agarwal et al.) by adding counts item by item and lowering back to
//! `k`: the guarantee holds for the union, whatever the split, though the kept counts depend
//! on the split (the merge is commutative, not associative in state).
//!
//! # Limits
//!
//! Counts are `u64` and saturate at `u64::MAX` rather than wrap: the totals, every 64-bit
//! counter (narrower ones at their maximum, above), a merge's sums, the heavy hitters' error. A saturated total says "at least `u64::MAX`";
//! the guarantees hold up to it. [`CountMin::inner_product`] sums its products in 128 bits,
//! saturating, and answers at most `u64::MAX`.
//!
//! # Adversaries
//!
//! With a public seed (the default) an adversary who chooses items can compute items of any
//! hash (`tests/states.rs` does), and so:
//!
//! * **Count-Min**: items that share every counter of a target item, which then inflate its
//!   estimate at will (never below the truth: the guarantee "never under" survives, the bound
//!   `ε·N` with probability `1 − δ` does not).
//! * **Heavy hitters**: distinct items of one hash. They cannot share a counter (items are
//!   compared, not only their hashes), so every count stays at most its item's frequency;
//!   but each update then walks past all of them, which an adversary can make slow.
//!
//! On items an adversary chooses, hash with a secret seed ([`CountMin::with_error_and_seed`],
//! [`HeavyHitters::with_seed`]).
//!
//! # When not to use it
//!
//! * You need the counts of rare items: the error is a fraction of the whole stream.
//! * Counts can go down (a turnstile stream): use the standard update and read with care,
//!   or a Count sketch (median estimator) instead.
//! * You want the top-k items themselves: use [`HeavyHitters`], which keeps the candidates.
//!
//! # References
//!
//! * J. Misra, D. Gries. *Finding repeated elements.* Science of Computer Programming 2(2),
//!   1982.
//! * P. K. Agarwal, G. Cormode, Z. Huang, J. M. Phillips, Z. Wei, K. Yi. *Mergeable
//!   summaries.* ACM TODS 38(4), 2013.
//! * G. Cormode, S. Muthukrishnan. *An improved data stream summary: the count-min sketch and
//!   its applications.* Journal of Algorithms 55(1), 2005.
//! * C. Estan, G. Varghese. *New directions in traffic measurement and accounting.* SIGCOMM
//!   2002 (conservative update).
//! * A. Kirsch, M. Mitzenmacher. *Less hashing, same performance: building a better Bloom
//!   filter.* ESA 2006 (double hashing).

mod count_min;
mod counters;
mod heavy_hitters;

pub use crate::core::CounterWidth;
pub use count_min::{CountMin, CountMinBuilder, Update};
pub use heavy_hitters::{Guarantee, HeavyHitters};
