//! The [synopses](https://docs.rs/synopses) sketches as [Apache DataFusion](https://datafusion.apache.org)
//! functions: build a sketch in SQL, store it as a `Binary` value, merge stored sketches
//! later without rescanning (a rollup), and ask it for an estimate with bounds.
//!
//! ```
//! use datafusion::prelude::SessionContext;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> datafusion::error::Result<()> {
//! let ctx = SessionContext::new();
//! synopses_datafusion::register(&ctx);
//! ctx.sql("CREATE TABLE visits (day INT, user_id BIGINT) AS VALUES (1, 7), (1, 8), (2, 7), (2, 9)").await?;
//! // A sketch per day, stored as a table ...
//! ctx.sql("CREATE TABLE daily AS SELECT day, ull_sketch(user_id) AS users FROM visits GROUP BY day").await?;
//! // ... rolled up without the visits.
//! let batches = ctx
//!     .sql("SELECT sketch_estimate(sketch_union(users)) AS users FROM daily")
//!     .await?
//!     .collect()
//!     .await?;
//! let users = batches[0].column(0).as_any().downcast_ref::<datafusion::arrow::array::Float64Array>();
//! assert_eq!(users.map(|u| u.value(0)), Some(3.0));
//! # Ok(())
//! # }
//! ```
//!
//! # The functions
//!
//! | SQL | returns | what |
//! |---|---|---|
//! | `ull_sketch(x [, p])` | `Binary` | an [`UltraLogLog`](synopses::cardinality::UltraLogLog) of the values (default `p` = 13, 8 KiB) |
//! | `hll_sketch(x [, p])` | `Binary` | a [`HyperLogLog`](synopses::cardinality::HyperLogLog) (default `p` = 14, 16 KiB) |
//! | `ell_sketch(x [, p])` | `Binary` | an [`ExaLogLog`](synopses::cardinality::ExaLogLog), `t = 2, d = 20` (default `p` = 11, 7 KiB) |
//! | `distinct_count(x [, p])`, `distinct_count_hll`, `distinct_count_ell` | `UInt64` | the estimate of the same sketch, rounded: a replacement for `approx_distinct` |
//! | `cms_sketch(x [, width, depth])` | `Binary` | a [`CountMin`](synopses::frequency::CountMin) of the values' frequencies (default 2048 × 5, 80 KiB) |
//! | `bloom_sketch(x [, n, rate])` | `Binary` | a [`Bloom`](synopses::membership::Bloom) filter sized for `n` values at false-positive rate `rate` (default 10⁶ at 0.01, 1.2 MB) |
//! | `heavy_hitters(x [, k])` | list of `{value, count, lower, upper}` | the most frequent values of integers, strings or bytes, most frequent first, from a mergeable Misra–Gries summary of `k` counters (default 100): every value more frequent than `N/(k+1)` is listed, and `lower ≤` its true count `≤ upper` |
//! | `sample(x [, k])` | list of `x`'s type | `k` values (default 100) drawn uniformly at random without replacement, from a [`Reservoir`](synopses::sampling::Reservoir); `x` may be a struct of columns, to sample rows |
//! | `weighted_sample(x, w [, k])` | list of `x`'s type | `k` values drawn one after another with probability proportional to `w` among those not yet drawn, from a [`WeightedReservoir`](synopses::sampling::WeightedReservoir) |
//! | `sample_sketch(x [, k])`, `weighted_sample_sketch(x, w [, k])` | `{sampler: Binary, values: list}` | the same samples as a value to store: the sampler's bytes (items are positions in `values`) and the values |
//! | `sample_union(s)` | the same struct | the merge of stored samples (of one kind and size): distributed as the sample of all their rows |
//! | `sketch_sample(s)` | list of the values' type | a stored sample's values, in the order `sample` gives |
//! | `kll_sketch(x [, k])` | `Binary` | a [`Kll`](synopses::quantiles::Kll) of the numbers `x` (default `k` = 200: rank error 1.33 % with 99 % confidence per query, about 5 KiB) |
//! | `dd_sketch(x [, alpha])` | `Binary` | a [`DDSketch`](synopses::quantiles::DDSketch) of the numbers `x`: every quantile within `alpha` relative of the true one (default 0.01) |
//! | `kll_quantile(x, q [, k])`, `dd_quantile(x, q [, alpha])` | `Float64` | the `q`-quantile of the same sketch: a replacement for `approx_percentile_cont` with a stated error, in rank (KLL) or in value (DDSketch) |
//! | `sketch_quantile(s, q)` | `Float64` | a stored quantile sketch's `q`-quantile |
//! | `sketch_rank(s, x)` | `Float64` | a stored KLL sketch's estimate of the fraction of values `≤ x` |
//! | `sketch_union(s)` | `Binary` | the merge of the non-null sketches `s` (of one kind and configuration; KLL sketches of any `k`), `NULL` if none |
//! | `sketch_estimate(s)` | `Float64` | a distinct count's estimate of its number of distinct values |
//! | `sketch_lower_bound(s [, c])`, `sketch_upper_bound(s [, c])` | `Float64` | its confidence interval: `c` = 0.95 (the default) or 1, 2, 3 standard deviations |
//! | `sketch_frequency(s, x)` | `UInt64` | a Count-Min sketch's estimate of how often `x` occurred: never below the truth |
//! | `sketch_contains(s, x)` | `Boolean` | whether a Bloom filter may hold `x`: never false for a value it holds |
//!
//! The sketches are the bytes of the crate's versioned format (`Codec::to_bytes`): a sketch
//! built here decodes in Rust with `UltraLogLog::from_bytes` (or `CountMin::from_bytes`, ...)
//! and the other way round, and `sketch_union` merges both. A Bloom filter built by one
//! query pre-filters another: `... WHERE sketch_contains((SELECT users FROM filters), user_id)`;
//! the sketch of a constant is decoded once per batch.
//!
//! # The error
//!
//! An estimate is off by about its relative standard error, `σ ≈ c/√m` for `m = 2^p`
//! registers: `c` = 0.76 for UltraLogLog, 1.04 for HyperLogLog, 0.36 for ExaLogLog once the
//! sketch has been merged (as every aggregate over more than one partition is), less for a
//! sketch that saw one stream (0.66, 0.83 and 0.32: its martingale estimator). About 95 % of
//! estimates fall within `1.96·σ`, which is what the default bounds say. The defaults give
//! `σ` ≈ 0.8 % merged, the error of DataFusion's `approx_distinct` (a HyperLogLog at `p` =
//! 14): UltraLogLog at half its memory, ExaLogLog at less than half. Up to a few thousand
//! distinct values every sketch holds them exactly (its sparse form), and the estimate is the
//! count.
//!
//! A Count-Min sketch of `N` values over-counts a value by at most `e·N/width` with
//! probability `1 − e^−depth` (0.13 % of `N` with probability 99.3 % by default); a Bloom
//! filter holding `n` values answers `true` for a value it does not hold with probability
//! `rate` (more once it holds more than the `n` it was sized for).
//!
//! # Partitions and merges
//!
//! DataFusion aggregates each partition on its own and merges the partial states: here a
//! state is a sketch's bytes, and the merge is the sketches' own, register by register, so
//! the merged sketch holds exactly the registers of one sketch over all the rows, whatever
//! the partitioning. What a merge loses is the martingale of a single stream: with several
//! partitions the estimate comes from the registers (the `c` of a merged sketch above), with
//! one from the martingale, so the two can differ within their errors; the sketches, merged
//! in Rust, are equal. Count-Min's counters and Bloom's bits merge exactly, with no history:
//! their sketches are the same whatever the partitioning.
//!
//! # Quantiles
//!
//! `kll_sketch` and `dd_sketch` read any numeric column as `Float64` (integers beyond 2^53
//! rounded), skip NULLs, and count NaN (and, for DDSketch, ±∞) as rejected rather than
//! order it. Which to use: a KLL sketch errs in rank (its p99 is a value whose true rank is
//! within 1.33 % of 99 %), a DDSketch in value (its p99 is within 1 % of the true p99), which
//! is what a tail-latency SLO wants. DDSketches merge exactly, so theirs is the sketch of one
//! pass whatever the partitioning. A KLL sketch flips coins as it compacts: like the samples
//! below, each partial aggregate (and each group) draws its own, so a query's KLL answers vary
//! from run to run within the bound.
//!
//! # Samples
//!
//! `sample` and `weighted_sample` keep the values of the `k` smallest random keys, and merge
//! partial samples exactly (the `k` smallest keys of all), so the sample of a query is
//! distributed as one pass over all its rows would draw it, however many partitions or
//! machines ran it. A uniform sample of `k` of `n` rows estimates a fraction `p` with
//! standard error `√(p(1 − p)/k)` and a mean with `σ/√k` (each times `√((n − k)/(n − 1))`).
//! Each partial aggregate reads only the rows that enter its sample, about `k·(1 + ln(n/k))`.
//!
//! DataFusion does not tell an aggregate which partition it runs in, and two parts drawing
//! one random stream would give the same rows the same keys; so every partial aggregate seeds
//! its own stream from the operating system's randomness, and a query gives a different
//! sample (as uniform) on every run. For a sample that a seed fixes, use
//! [`Reservoir`](synopses::sampling::Reservoir) in Rust.
//!
//! # Values
//!
//! Each value is hashed as the Rust value it holds ([`Hashable`](synopses::hash::Hashable)),
//! so `ull_sketch(x)` over a column equals `UltraLogLog::new(13)` fed the same values in
//! Rust:
//!
//! | Arrow type | hashed as the Rust value |
//! |---|---|
//! | `Int8`, `Int16`, `Int32`, `Int64` | `i8`, `i16`, `i32`, `i64` (equal values hash alike across widths) |
//! | `UInt8`, `UInt16`, `UInt32`, `UInt64` | `u8`, `u16`, `u32`, `u64` (the same) |
//! | `Boolean` | `bool` |
//! | `Utf8`, `LargeUtf8`, `Utf8View` | `&str` |
//! | `Binary`, `LargeBinary`, `BinaryView`, `FixedSizeBinary` | `&[u8]` |
//! | `Date32` | `i32`, days since 1970-01-01 |
//! | `Date64`, `Timestamp(unit, _)`, `Time64`, `Duration` | `i64` in the type's unit (a time zone is not hashed) |
//! | `Time32` | `i32` in the type's unit |
//! | `Decimal128(_, _)` | `i128`, the unscaled value |
//! | `Float32`, `Float64` | `u32` / `u64` of the IEEE bits, after `-0.0` becomes `0.0` and every NaN the canonical one |
//! | `Dictionary(_, V)` | as `V` |
//!
//! NULLs are skipped, as `COUNT(DISTINCT x)` skips them. Other types are refused when the
//! query is planned.
//!
//! # Errors
//!
//! A wrong argument type, count or constant (a precision out of range, a precision that is
//! not a constant) fails when the query is planned or its aggregate is set up, with the
//! function's name in the message. Bytes that are not a sketch, a damaged sketch (every
//! encoding carries a checksum) or sketches of different kinds or precisions fail when the
//! query runs, with the function's name and the row. Nothing panics.
//!
//! # When not to use them
//!
//! * The exact count is required, or the table is small: `COUNT(DISTINCT x)`.
//! * Sketches of values hashed by another system (DataSketches, Redis): their hashes differ,
//!   and so do their registers.

#![deny(missing_docs)]
#![deny(unsafe_code)]

mod aggregate;
mod heavy;
mod quantile;
mod sample;
mod scalar;
mod sketch;
mod values;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

/// Registers every function of this crate with `ctx`.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
/// use datafusion::prelude::SessionContext;
///
/// let ctx = SessionContext::new();
/// synopses_datafusion::register(&ctx);
/// assert!(ctx.udaf("ull_sketch").is_ok() && ctx.udf("sketch_estimate").is_ok());
/// ```
pub fn register(ctx: &SessionContext) {
    aggregate_functions().into_iter().for_each(|f| ctx.register_udaf(f));
    scalar_functions().into_iter().for_each(|f| ctx.register_udf(f));
}

/// The aggregate functions of this crate, for a registry other than a `SessionContext` (a
/// `SessionStateBuilder`, a distributed engine's executors).
///
/// ```
/// let names: Vec<String> =
///     synopses_datafusion::aggregate_functions().iter().map(|f| f.name().to_string()).collect();
/// assert!(names.contains(&"distinct_count".to_string()));
/// ```
#[must_use]
pub fn aggregate_functions() -> Vec<AggregateUDF> {
    aggregate::aggregates()
}

/// The scalar functions of this crate, for a registry other than a `SessionContext`.
///
/// ```
/// assert_eq!(synopses_datafusion::scalar_functions().len(), 8);
/// ```
#[must_use]
pub fn scalar_functions() -> Vec<ScalarUDF> {
    scalar::functions()
}
