//! Quantiles: what is the median, the 99th percentile, of a stream too large to sort?
//!
//! An exact answer needs every value. A quantile sketch keeps a few kilobytes and answers
//! within a stated error; the question is *which* error.
//!
//! | type | memory | error | use it for |
//! |---|---|---|---|
//! | [`DDSketch`] | one counter a bucket; `ln(max/min) / ln γ` buckets for values from `min` to `max`, `γ = (1+α)/(1−α)` (at α = 1 %: about 700 for six orders of magnitude), at most `max_bins` a sign | **value error**: the answer is within `α·|x|` of the true quantile `x`, always, at every quantile | latencies and sizes: p99 and p99.9 SLOs, long tails, values over many orders of magnitude |
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
//! what fraction of the values lie below the answer, wants rank error (KLL, planned next in
//! this family).
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
//! # Papers
//!
//! - Masson, Rim, Lee. *DDSketch: a fast and fully-mergeable quantile sketch with
//!   relative-error guarantees.* PVLDB 12(12), 2019.
//! - Karnin, Lang, Liberty. *Optimal quantile approximation in streams.* FOCS 2016 (KLL, the
//!   rank-error counterpart).

mod ddsketch;
mod mapping;
mod store;

pub use ddsketch::{Collapse, DDSketch, DDSketchBuilder};
pub use mapping::IndexMapping;
