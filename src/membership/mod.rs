//! Membership: has this item been seen before?
//!
//! A set answers exactly but grows with every item. A Bloom filter answers in about 10 bits
//! per item at a 1 % error rate, whatever the items' size, and its only errors are false
//! positives: an item that was inserted is always found.
//!
//! | type | memory | error | use it for |
//! |---|---|---|---|
//! | [`Bloom`] | `m` bits; `1.44·log2(1/p)` bits per item | false positives with probability `p ≈ (1 − e^(−kn/m))^k`; no false negatives | "have I seen it?" filters in front of slow lookups, joins, dedup |
//!
//! (The counting Bloom filter, which also removes items, is planned.)
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
//! # When not to use it
//!
//! * Items must be removed: use a counting Bloom filter (planned), or rebuild.
//! * You need to list or count the items: a Bloom filter only answers "maybe" or "no".
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
//! * S. J. Swamidass, P. Baldi. *Mathematical correction for fingerprint similarity measures
//!   to improve chemical retrieval.* J. Chem. Inf. Model. 47(3), 2007 (the item estimate).

mod bloom;

pub use bloom::Bloom;
