//! Quantiles: what is the median, the 99th percentile, of a stream too large to sort?
//!
//! An exact answer needs every value. A quantile sketch keeps a few kilobytes and answers
//! within a stated error; the question is *which* error.
//!
//! | type | memory | error | use it for |
//! |---|---|---|---|
//! | [`DDSketch`] | one counter a bucket; `ln(max/min) / ln γ` buckets for values from `min` to `max`, `γ = (1+α)/(1−α)` (at α = 1 %: about 700 for six orders of magnitude), at most `max_bins` a sign | **value error**: the answer is within `α·|x|` of the true quantile `x`, always, at every quantile | latencies and sizes: p99 and p99.9 SLOs, long tails, values over many orders of magnitude |
//! | [`Kll`] | about `3k` items (k = 200: 641 items at n = 10⁷, 5.4 KB of `f64`), whatever the stream's length or range | **rank error**: the answer's true rank is within `ε·n` of `q·n`, `ε ≈ 2.296 / k^0.9723` (1.33 % at k = 200), with 99 % confidence per query | medians and ranks of any ordered items (strings, timestamps, integers); "what fraction lies below x"; CDFs and histograms |
//!
//! # Rank error against value error
//!
//! Take the `n` values sorted. The `q`-quantile is the value at rank `q·n`. A sketch can err in
//! two ways:
//!
//! - in **rank**: it returns a value whose rank is within `ε·n` of `q·n`. KLL and the other
//!   comparison-based sketches (DataSketches' KLL and REQ) do this. The value returned is a
//!   real one, but where the distribution is sparse (a long tail) a rank error of 1 % can be a
//!   value error of 100 %: the 99th percentile of latencies may come back as the 98th, which
//!   is half of it.
//! - in **value**: it returns a value within `α·|x|` of the true `x`. DDSketch does this. Its
//!   p99.9 of a heavy-tailed latency is within 1 % of the true p99.9, however sparse the tail,
//!   but it needs numbers (it buckets them on a logarithmic scale), and its memory grows with
//!   the range of the values rather than with nothing.
//!
//! Which to choose: a tail-latency SLO, or any "how large is the p-th percentile" of
//! positive measurements, wants value error (DDSketch). A median of arbitrary ordered keys
//! (strings, timestamps, where "within 1 % of the value" means nothing), or a guarantee on
//! what fraction of the values lie below the answer, wants rank error ([`Kll`]).
//!
//! # DDSketch: how it works
//!
//! Fix `γ = (1+α)/(1−α)`. A positive value `x` goes to bucket `i = ⌈log_γ x⌉`, which holds the
//! values of `(γ^(i−1), γ^i]`; the sketch counts the values of each bucket. The value that
//! stands for bucket `i` is `2γ^i/(γ+1)`, within `(γ−1)/(γ+1) = α` of every value of the
//! bucket, relatively. For the `q`-quantile the sketch walks the buckets in order until their
//! counts pass the rank `q·(n−1)`, and answers with that bucket's value, so it errs by at most
//! α. Negative values have their own buckets (by magnitude), and values of magnitude below
//! the smallest normal double count as zero.
//!
//! ```text
//!   α = 1 %: γ = 1.0202    values 100, 101, 150, 151, 5 000
//!   bucket  ⌈log_γ 100⌉ = 231:  100, 101        stands for 100.5
//!   bucket  ⌈log_γ 150⌉ = 251:  150, 151        stands for 149.9
//!   bucket  ⌈log_γ 5000⌉ = 426: 5 000           stands for 4 965
//!   median (rank ⌊0.5·4⌋ = 2): 150 → 149.9, within 1 %
//! ```
//!
//! The logarithm can be replaced by a cheaper function of the double's exponent and mantissa
//! ([`IndexMapping`]); the sketch keeps α exactly by using a finer scale, spending a few
//! more buckets.
//!
//! # The error bound
//!
//! For every `q` in `[0, 1]`, the answer `y` and the value `x` of rank `⌊q·(n − 1)⌋` (from 0)
//! satisfy `|y − x| ≤ α·|x|` (up to floating-point rounding, about 10⁻¹⁵ relative). There is no
//! probability in it: the guarantee is deterministic. It holds for every quantile whose value
//! lies in the buckets the sketch keeps: with a bucket limit (`max_bins`, 2048 by default for
//! each sign), a stream whose values span more than `γ^max_bins` (10¹⁷ at α = 1 %) has its
//! lowest buckets (or highest, [`Collapse`]) merged into one, and the quantiles that fall there
//! lose the guarantee. The exact minimum and maximum are kept and bound every answer.
//!
//! # Merging
//!
//! Two sketches of the same α, mapping, bucket limit and collapse merge by adding their counts
//! bucket by bucket: exactly the sketch of the union of their streams, bit for bit, whatever
//! the order and grouping, the collapse included (a count lands at the larger of its own bucket
//! and the limit's floor below the largest bucket ever seen, a function of the values alone).
//! Sketches of another configuration do not merge ([`MergeError`](crate::MergeError)).
//!
//! # When not to use it
//!
//! - For ordered items that are not numbers, or a rank guarantee: a rank-error sketch.
//! - For values that are nearly all equal, or whose differences matter more than their sizes
//!   (temperatures around zero, timestamps): relative error is measured from zero, so
//!   `1 000 000.0 ± 1 %` is `± 10 000`.
//! - When every value matters (an audit): nothing approximate will do.
//!
//! # KLL: how it works
//!
//! A *compactor* holds items that each stand for `2^h` items of the stream (its level `h`).
//! When it is full it sorts its items, keeps every other one, starting at the first or the
//! second by a fair coin, and passes them up to level `h + 1`, where they weigh twice as much.
//! The others are dropped. Take the sorted items `1 3 4 6 7 9` of level 0:
//!
//! ```text
//!   coin: odd     keep 1 . 4 . 7 .   → level 1 gets 1, 4, 7 (weight 2 each)
//!   rank of 5 before: 3 items ≤ 5 (1, 3, 4)       after: 2 · |{1, 4}| = 4
//!   coin: even    keep . 3 . 6 . 9   → level 1 gets 3, 6, 9
//!   rank of 5 before: 3                          after: 2 · |{3}| = 2
//! ```
//!
//! Each compaction moves the rank of any item by `±2^h` or not at all, with mean zero, so the
//! errors of many compactions cancel like a random walk. KLL's insight (Karnin, Lang and
//! Liberty) is to size the compactors geometrically: the top one holds `k` items and each one
//! below `2/3` of the one above (at least 8). High levels, whose compactions cost the most
//! (`2^h` each), are few and run rarely; the many cheap low levels are small. The error is then
//! within `ε·n` for `k ≈ 1/ε` (up to a logarithmic factor in the confidence), in `O(k)` items
//! whatever `n` is. This crate runs the *lazy* variant DataSketches uses: a compactor compacts
//! only when the sketch as a whole is full, the lowest full one first, so the free room is
//! shared and fewer compactions run.
//!
//! # The error bound
//!
//! Write `R(x)` for the true normalized rank of `x` (the fraction of items `≤ x`) and `R̂(x)`
//! for the sketch's. For every query, with probability at least 99 %,
//!
//! ```text
//!   |R̂(x) − R(x)| ≤ ε = 2.296 / k^0.9723          (single-sided: one rank, one quantile)
//!   |P̂ − P| ≤ ε_pmf = 2.446 / k^0.9433             (each bucket of a PMF, a difference of two ranks)
//! ```
//!
//! These are DataSketches' fits to the measured errors of this algorithm ([`Kll::rank_error`],
//! [`Kll::pmf_error`]; k = 200 gives 1.33 % and 1.65 %), independent of `n` and of the order of
//! the stream. A quantile query returns an item whose true rank is within `ε` of the asked
//! rank. The sketch is exact while it holds every item (up to `k`), and the extremes are
//! always exact. The tests check the bound over hundreds of seeds, in sorted, reversed,
//! shuffled and adversarial "zoom" orders, one pass and merged from 2 to 64 parts.
//!
//! | k | ε (single-sided) | ε (PMF) | items kept at n = 10⁷ | bytes (`f64`, [`Kll::size_in_bytes`]) |
//! |---|---|---|---|---|
//! | 50 | 5.1 % | 6.1 % | 234 | 2.3 K |
//! | 200 | 1.33 % | 1.65 % | 641 | 5.4 K |
//! | 800 | 0.35 % | 0.45 % | 2 397 | 19 K |
//! | 3 200 | 0.09 % | 0.12 % | 9 524 | 76 K |
//!
//! (The items kept grow by at most 8 a level, so by a few dozen from n = 10⁴ to 10¹².)
//!
//! # Merging KLL
//!
//! Two sketches merge by joining their compactors level by level and compacting what is over
//! capacity. Any two merge, of any `k` and seed; the result keeps the receiver's `k` and
//! carries the error of the smaller one ([`Kll::min_k`]). The merge flips coins, so it equals
//! one pass over the whole stream in distribution, not bit for bit, and the bound holds for
//! the merged sketch as for one pass. Parallel parts should draw their own coins: make them
//! with [`empty_part`](crate::core::Mergeable::empty_part).
//!
//! # When not to use KLL
//!
//! - For the tail of a long-tailed distribution: a rank error of 0.5 % at p99.5 can be any
//!   value between p99 and p100. Use [`DDSketch`].
//! - When answers must be reproducible bit for bit across merge orders: use DDSketch, whose
//!   merge is exact.
//! - For tiny `n` where every item fits: KLL is exact then anyway, but a sorted vector is
//!   simpler.
//!
//! # Papers
//!
//! - Masson, Rim, Lee. *DDSketch: a fast and fully-mergeable quantile sketch with
//!   relative-error guarantees.* PVLDB 12(12), 2019.
//! - Karnin, Lang, Liberty. *Optimal quantile approximation in streams.* FOCS 2016 (KLL).
//! - Ivkin, Liberty, Lang, Karnin, Braverman. *Streaming quantiles algorithms with small space
//!   and update time.* Sensors 22(24), 2022 (the lazy compaction of DataSketches' KLL).

mod ddsketch;
mod kll;
mod mapping;
mod store;

pub use ddsketch::{Collapse, DDSketch, DDSketchBuilder};
pub use kll::{Kll, Search, SortedView};
pub use mapping::IndexMapping;
