//! Helpers shared by the benchmark files: the data generator and the criterion settings.

#![allow(dead_code)] // Each bench file uses its own subset.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion};

/// The seed of every bench's data.
pub const DATA_SEED: u64 = 0x0123_4567_89AB_CDEF;

/// splitmix64: a bijection of its counter, so successive outputs are distinct.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A group for benchmarks over the whole data set (milliseconds each): few samples.
pub fn big_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    g
}

/// A group for short benchmarks (nanoseconds to microseconds each).
pub fn small_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(30).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    g
}

/// Times merging `right` into a clone of `left`; the clone is made in the untimed setup.
pub fn merge_case<S: Clone>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    left: &S,
    right: &S,
    merge: impl Fn(&mut S, &S),
) {
    g.bench_function(id, |b| {
        b.iter_batched(
            || left.clone(),
            |mut t| {
                merge(&mut t, black_box(right));
                t
            },
            BatchSize::LargeInput,
        );
    });
}

/// Times merging `right` into a clone of `left` for a merge that consumes its argument: both
/// clones are made in the untimed setup.
pub fn merge_owned_case<S: Clone>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    left: &S,
    right: &S,
    merge: impl Fn(&mut S, S),
) {
    g.bench_function(id, |b| {
        b.iter_batched(
            || (left.clone(), right.clone()),
            |(mut t, o)| {
                merge(&mut t, black_box(o));
                t
            },
            BatchSize::LargeInput,
        );
    });
}

/// A structure from `make` that saw `items` through `push`.
pub fn filled<S>(items: &[u64], make: impl Fn() -> S, push: impl Fn(&mut S, u64)) -> S {
    let mut s = make();
    items.iter().for_each(|&x| push(&mut s, x));
    s
}
