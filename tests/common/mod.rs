//! What the generic suites need to know of each type, written once: every answer it gives
//! (`Answers`), and real states in each of its internal modes (`Subject::examples`). The suites
//! themselves (`tests/laws.rs`, `tests/robustness.rs`, `tests/states.rs`) are generic over
//! these traits; adding a type to them means implementing these two here.
#![allow(dead_code)] // Each test binary uses its own part of this module.

use std::fmt::Debug;

use synopses::cardinality::{
    ExaLogLog, ExaLogLogShape, FlajoletMartin, HyperLogLog, UltraLogLog, UltraLogLogEstimator,
};
use synopses::codec::Codec;
use synopses::core::{Confidence, Mergeable, Weight};
use synopses::frequency::{CountMin, Guarantee, HeavyHitters, Update};
use synopses::hash::DEFAULT_SEED;
use synopses::hash::hash_bytes;
use synopses::membership::{Bloom, CounterWidth, CountingBloom};
use synopses::quantiles::{Collapse, DDSketch, IndexMapping, Kll, Search};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};

/// Every confidence level, for answers that take one.
pub const CONFIDENCES: [Confidence; 4] =
    [Confidence::OneSigma, Confidence::TwoSigma, Confidence::ThreeSigma, Confidence::NinetyFivePercent];

/// Header (4 bytes) plus checksum trailer (8 bytes).
pub const ENVELOPE_LEN: usize = 12;

/// A hand-built encoding: header, `body`, and its valid checksum.
pub fn envelope(family: u8, body: &[u8]) -> Vec<u8> {
    envelope_with(*b"SY", 1, family, body)
}

/// As [`envelope`], with any magic and version.
pub fn envelope_with(magic: [u8; 2], version: u8, family: u8, body: &[u8]) -> Vec<u8> {
    let mut bytes = magic.to_vec();
    bytes.extend_from_slice(&[version, family]);
    bytes.extend_from_slice(body);
    let sum = hash_bytes(&bytes, 0);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
}

/// The body of an encoding (between header and checksum).
pub fn body(bytes: &[u8]) -> &[u8] {
    &bytes[4..bytes.len() - 8]
}

/// A type's answers: every number it gives, in a fixed order. Two states that are `==` must
/// give the same answers, bit for bit; every answer of every reachable state is finite.
pub trait Answers {
    /// Every numeric answer, in a fixed order.
    fn answers(&self) -> Vec<f64>;
}

/// Calls `$suite!` with every [`Subject`], `module_name: Type` each: the one list a new type
/// joins to be checked by every generic suite.
#[allow(unused_macros)] // (Not every test binary instantiates a suite.)
macro_rules! for_each_subject {
    ($suite:ident) => {
        $suite! {
            flajolet_martin: FlajoletMartin,
            hyperloglog: HyperLogLog,
            ultraloglog: UltraLogLog,
            exaloglog: ExaLogLog,
            count_min: CountMin,
            heavy_hitters: HeavyHitters<u64>,
            heavy_hitters_of_strings: HeavyHitters<String>,
            bloom: Bloom,
            counting_bloom: CountingBloom,
            reservoir: Reservoir<u64>,
            weighted_reservoir: WeightedReservoir<u64>,
            priority_sample: PrioritySample<u64>,
            ddsketch: DDSketch,
            kll: Kll<f64>,
            kll_of_strings: Kll<String>,
        }
    };
}
#[allow(unused_imports)]
pub(crate) use for_each_subject;

/// A synopsis with an encoding, for the generic suites.
pub trait Subject: Answers + Codec + Mergeable + Clone + PartialEq + Debug {
    /// Real states in each internal mode (empty, sparse, dense, merged, saturated), labelled.
    /// Most are small, so that mutating their encodings is quick; at least one is large, so
    /// that the allocation checks see a large claim.
    fn examples() -> Vec<(String, Self)>;

    /// Seeded recipes pinned by the committed files of `tests/fixtures/v<version>/`, the
    /// version the type writes (`tests/golden.rs`): each file's name and the state it must
    /// hold, byte for byte.
    fn fixtures() -> Vec<(&'static str, Self)>;

    /// Files an older format version of the type wrote, kept read-only: each one's version,
    /// name (in `tests/fixtures/v<version>/`) and the state it must decode to (by `==`, with
    /// the same answers).
    fn read_only_fixtures() -> Vec<(u8, &'static str, Self)> {
        Vec::new()
    }

    /// Uses a decoded state as a user would (observes, converts, reduces, removes), which must
    /// not panic; the answers are checked by the caller.
    fn exercise(&self) {}

    /// Every encoding the type writes of this state: [`to_bytes`](Codec::to_bytes)'s, and
    /// UltraLogLog's entropy-coded one where it differs. The decoder must take each back to
    /// this state, and accept no other encoding of it.
    fn encodings(&self) -> Vec<Vec<u8>> {
        vec![self.to_bytes()]
    }

    /// The same state without what only its history gives (the martingale of a sketch that
    /// saw one stream): what a merge of two of its non-empty parts holds.
    fn without_history(&self) -> Self {
        self.clone()
    }
}

fn bounds_answers(out: &mut Vec<f64>, bounds: impl Fn(Confidence) -> synopses::core::Bounds) {
    for c in CONFIDENCES {
        let b = bounds(c);
        out.extend([b.lower, b.upper]);
    }
}

// ---------------------------------------------------------------------------------------------
// Cardinality
// ---------------------------------------------------------------------------------------------

macro_rules! cardinality_answers {
    ($ty:ty, |$s:ident| $answers:expr) => {
        impl Answers for $ty {
            fn answers(&self) -> Vec<f64> {
                let $s = self;
                let mut out: Vec<f64> = $answers;
                out.push($s.martingale_estimate().unwrap_or(-1.0));
                out.push($s.relative_standard_error());
                bounds_answers(&mut out, |c| $s.bounds(c));
                out
            }
        }
    };
}
cardinality_answers!(HyperLogLog, |s| vec![s.estimate(), s.register_estimate()]);
cardinality_answers!(UltraLogLog, |s| vec![
    s.estimate(),
    s.register_estimate(UltraLogLogEstimator::MaximumLikelihood),
    s.register_estimate(UltraLogLogEstimator::Fgra)
]);
cardinality_answers!(ExaLogLog, |s| vec![s.estimate(), s.register_estimate()]);

impl Answers for FlajoletMartin {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.estimate(), self.relative_standard_error()];
        bounds_answers(&mut out, |c| self.bounds(c));
        out
    }
}

/// `s` after observing `n` items, and merged with a peer that saw the next `n`.
fn observed_and_merged<S: Mergeable + Clone>(s: &S, n: u64, observe: impl Fn(&mut S, u64)) -> (S, S) {
    let mut one = s.clone();
    (0..n).for_each(|i| observe(&mut one, i));
    let mut peer = s.empty_like();
    (n..2 * n).for_each(|i| observe(&mut peer, i));
    let mut merged = one.clone();
    merged.merge(&peer).expect("the same configuration");
    (one, merged)
}

/// Labelled states of a type made by `make(parameters)`: empty, after `n` items, and merged
/// with a peer that saw the next `n`, for each `(parameters, n)`.
fn sketch_examples<S: Mergeable + Clone, P: Debug + Copy>(
    name: &str,
    cases: &[(P, u64)],
    make: impl Fn(P) -> S,
    observe: impl Fn(&mut S, u64) + Copy,
) -> Vec<(String, S)> {
    let mut out = Vec::new();
    for &(parameters, n) in cases {
        let empty = make(parameters);
        let (one, merged) = observed_and_merged(&empty, n, observe);
        out.push((format!("{name} {parameters:?} empty"), empty));
        out.push((format!("{name} {parameters:?} after {n}"), one));
        out.push((format!("{name} {parameters:?} merged after {n}"), merged));
    }
    out
}

/// A distinct-count sketch with a martingale: `$extra` uses a decoded state further, and
/// `$examples` are its examples.
macro_rules! distinct_count_subject {
    ($ty:ty, |$s:ident| $extra:expr, $examples:expr, $fixtures:expr) => {
        distinct_count_subject!($ty, |$s| $extra, $examples, $fixtures, |e| vec![e.to_bytes()]);
    };
    ($ty:ty, |$s:ident| $extra:expr, $examples:expr, $fixtures:expr, |$e:ident| $encodings:expr) => {
        impl Subject for $ty {
            fn encodings(&self) -> Vec<Vec<u8>> {
                let $e = self;
                $encodings
            }

            fn without_history(&self) -> Self {
                // A self-merge ends a martingale and changes no register.
                let mut out = self.clone();
                out.merge(self).expect("the same configuration");
                out
            }

            fn exercise(&self) {
                let mut more = self.clone();
                more.observe_hash(0);
                more.observe_hash(u64::MAX);
                assert!(more.estimate() >= 0.0);
                assert!(self.reduce(<$ty>::MIN_PRECISION).is_ok());
                let $s = self;
                $extra
            }

            fn examples() -> Vec<(String, Self)> {
                $examples
            }

            fn fixtures() -> Vec<(&'static str, Self)> {
                $fixtures
            }
        }
    };
}

/// A sketch made by `make` that observed `items`.
fn fed<S, T>(make: Result<S, synopses::ConfigError>, items: impl IntoIterator<Item = T>) -> S
where
    S: synopses::core::Operator<T>,
{
    let mut s = make.expect("valid parameters");
    items.into_iter().for_each(|i| s.observe(i));
    s
}

/// A skewed stream: key `k` occurs `1000 / (k + 1)` times.
fn skewed() -> impl Iterator<Item = u64> {
    (0..1000_u64).flat_map(|k| std::iter::repeat_n(k, (1000 / (k + 1)) as usize))
}

/// `n` user names.
fn users(n: u64) -> impl Iterator<Item = String> {
    (0..n).map(|i| format!("user-{i}"))
}

// Sparse, the switch, dense; the largest precisions dense for the allocation checks.
distinct_count_subject!(
    HyperLogLog,
    |_s| (),
    sketch_examples(
        "hll",
        &[(4, 3), (8, 30), (8, 1000), (12, 100), (18, 300_000)],
        |p| HyperLogLog::with_seed(p, u64::from(p)).expect("a precision"),
        |s, i| s.observe(i),
    ),
    {
        let hll = |p, seed, items| fed(HyperLogLog::with_seed(p, seed), items);
        let sparse = hll(12, DEFAULT_SEED, 0..300_u64);
        let strings = fed(HyperLogLog::with_seed(10, 0), users(150));
        let dense = hll(12, DEFAULT_SEED, 0..100_000);
        let mut merged = hll(12, 42, 0..60_000);
        merged.merge(&hll(12, 42, 40_000..100_000)).expect("the same configuration");
        let p4 = hll(4, DEFAULT_SEED, 0..1_000);
        assert!(sparse.is_sparse() && strings.is_sparse() && !p4.is_sparse());
        assert!(!dense.is_sparse() && dense.martingale_estimate().is_some());
        assert!(!merged.is_sparse() && merged.martingale_estimate().is_none());
        vec![
            ("hll_p12_empty.bin", HyperLogLog::new(12).expect("a precision")),
            ("hll_p12_sparse.bin", sparse),
            ("hll_p10_sparse_strings.bin", strings),
            ("hll_p12_dense.bin", dense),
            ("hll_p12_merged.bin", merged),
            ("hll_p4_dense.bin", p4),
        ]
    },
    // The plain encoding, and the entropy-coded one of a dense sketch it shrinks.
    |e| {
        let (plain, coded) = (e.to_bytes(), e.to_compressed_bytes());
        if coded == plain { vec![plain] } else { vec![plain, coded] }
    }
);
distinct_count_subject!(
    UltraLogLog,
    // A HyperLogLog of the same precision, which its own codec takes back, or an error.
    |s| match s.to_hyperloglog() {
        Ok(hll) => assert_eq!(HyperLogLog::from_bytes(&hll.to_bytes()).as_ref(), Ok(&hll)),
        Err(e) => assert_eq!(e.parameter(), "precision"),
    },
    sketch_examples(
        "ull",
        &[(3, 5), (6, 1000), (8, 100_000), (10, 50), (20, 1_500_000)],
        |p| UltraLogLog::with_seed(p, 9).expect("a precision"),
        |s, i| s.observe(i),
    ),
    {
        // One stream (with its martingale), a merge of two, the empty sketch, a sparse one.
        let ull = fed(UltraLogLog::new(10), 0..100_000_u64);
        let mut merged = fed(UltraLogLog::with_seed(8, 42), 0..60_000_u64);
        merged.merge(&fed(UltraLogLog::with_seed(8, 42), 40_000..100_000_u64)).expect("the same configuration");
        let sparse = fed(UltraLogLog::with_seed(12, 0), users(150));
        assert!(!ull.is_sparse() && !merged.is_sparse() && sparse.is_sparse());
        vec![
            ("ull_p10.bin", ull),
            ("ull_p8_seed42_merged.bin", merged),
            ("ull_p12_empty.bin", UltraLogLog::new(12).expect("a precision")),
            ("ull_p12_sparse_strings.bin", sparse),
        ]
    },
    // The plain encoding, and the entropy-coded one of a dense sketch it shrinks.
    |e| {
        let (plain, coded) = (e.to_bytes(), e.to_compressed_bytes());
        if coded == plain { vec![plain] } else { vec![plain, coded] }
    }
);
distinct_count_subject!(
    ExaLogLog,
    |_s| (),
    {
        let mut out = sketch_examples(
            "ell",
            &[(2, 10), (5, 100), (8, 100_000), (18, 1_000_000)],
            |p| ExaLogLog::with_seed(p, 1).expect("a precision"),
            |s, i| s.observe(i),
        );
        let shapes = [((5, 0, 0), 100), ((6, 1, 9), 5000), ((4, 4, 22), 300), ((2, 1, 3), 2)];
        out.extend(sketch_examples(
            "ell",
            &shapes,
            |(precision, t, d)| ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision, t, d }, 1).expect("a shape"),
            |s, i| s.observe(i),
        ));
        out
    },
    {
        // The recommended (2, 20), and (1, 9) whose 16-bit registers pack evenly; a sparse one.
        let ell = fed(ExaLogLog::new(8), 0..100_000_u64);
        let shape = ExaLogLogShape { precision: 6, t: 1, d: 9 };
        let ell_19 = fed(ExaLogLog::with_shape_and_seed(shape, 3), users(500));
        let sparse = fed(ExaLogLog::new(10), 0..300_u64);
        assert!(!ell.is_sparse() && !ell_19.is_sparse() && sparse.is_sparse());
        vec![("ell_p8.bin", ell), ("ell_p6_t1_d9_strings.bin", ell_19), ("ell_p10_sparse.bin", sparse)]
    }
);

impl Subject for FlajoletMartin {
    fn exercise(&self) {
        let mut more = self.clone();
        more.observe_hash(0);
        more.observe_hash(u64::MAX);
        assert!(more.estimate() >= 0.0);
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [(0, 10), (1, 20), (4, 160), (8, 2560), (16, 1 << 17)];
        sketch_examples(
            "fm",
            &cases,
            |log2| FlajoletMartin::with_seed(1 << log2, 3).expect("a power of two"),
            |s, i| s.observe(i),
        )
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        vec![
            ("fm_256.bin", fed(FlajoletMartin::with_seed(256, DEFAULT_SEED), 0..100_000_u64)),
            ("fm_16_seed99.bin", fed(FlajoletMartin::with_seed(16, 99), 0..20_u64)),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// Frequency
// ---------------------------------------------------------------------------------------------

impl Answers for CountMin {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.total() as f64, self.epsilon(), self.delta(), self.saturated_counters() as f64];
        for item in 0..12_u64 {
            let b = self.bounds(item);
            out.extend([self.estimate(item) as f64, b.lower, b.upper]);
        }
        out.push(self.inner_product(self).map_or(-1.0, |p| p as f64));
        out
    }
}

impl Subject for CountMin {
    fn exercise(&self) {
        let mut more = self.clone();
        more.observe_weighted(1_u64, u64::MAX);
        assert!(more.estimate(1_u64) >= self.estimate(1_u64));
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [
            ((1, 1, Update::Standard, CounterWidth::SixtyFour), 200),
            ((7, 3, Update::Conservative, CounterWidth::SixtyFour), 200),
            ((64, 4, Update::Standard, CounterWidth::SixtyFour), 200),
            ((64, 4, Update::Standard, CounterWidth::Eight), 200),
            ((32, 3, Update::Conservative, CounterWidth::Sixteen), 200),
            ((16, 2, Update::Standard, CounterWidth::ThirtyTwo), 200),
            ((1 << 16, 8, Update::Standard, CounterWidth::SixtyFour), 200),
        ];
        let make = |(width, depth, update, counters)| {
            CountMin::builder(width, depth).seed(11).update_rule(update).counter_width(counters).build()
        };
        let mut out =
            sketch_examples("cm", &cases, |p| make(p).expect("valid parameters"), |s, i| s.observe_weighted(i % 13, i));
        let mut saturated = CountMin::new(4, 2).expect("valid parameters");
        saturated.observe_weighted(1_u64, u64::MAX);
        saturated.observe_weighted(2_u64, 3);
        out.push(("cm saturated".into(), saturated));
        out
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        // Both rules over the skewed stream; the same with 8-bit counters (some saturated: key 0
        // alone is 1000) and 16-bit conservative ones (none saturated).
        let conservative = || CountMin::builder(64, 3).seed(5).update_rule(Update::Conservative);
        let cm8 = fed(CountMin::builder(64, 3).counter_width(CounterWidth::Eight).build(), skewed());
        let cu16 = fed(conservative().counter_width(CounterWidth::Sixteen).build(), skewed());
        assert!(cm8.saturated_counters() > 0 && cu16.saturated_counters() == 0);
        vec![
            ("cm_64x3.bin", fed(CountMin::new(64, 3), skewed())),
            ("cu_64x3_seed5.bin", fed(conservative().build(), skewed())),
            ("cm_64x3_8bit.bin", cm8),
            ("cu_64x3_seed5_16bit.bin", cu16),
        ]
    }
}

/// The items a heavy-hitters summary of `T` is asked about.
pub trait Probe: Sized {
    /// Item number `i`.
    fn probe(i: u64) -> Self;
    /// A number standing for the item in the answers.
    fn number(&self) -> f64;
    /// The fixtures' item for key `k`, for the item types whose summaries are pinned.
    fn key(k: u64) -> Option<Self>;
}

impl Probe for u64 {
    fn probe(i: u64) -> Self {
        i
    }
    fn number(&self) -> f64 {
        *self as f64
    }
    fn key(_: u64) -> Option<Self> {
        None
    }
}

impl Probe for String {
    fn probe(i: u64) -> Self {
        format!("k{i}")
    }
    fn number(&self) -> f64 {
        self.get(1..).and_then(|n| n.parse().ok()).unwrap_or(-1.0)
    }
    fn key(k: u64) -> Option<Self> {
        Some(format!("key-{k}"))
    }
}

impl<T: Probe + synopses::hash::Hashable + synopses::codec::Item + Clone + Eq> Answers for HeavyHitters<T> {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.total() as f64, self.error() as f64, self.len() as f64];
        for i in 0..12_u64 {
            let item = T::probe(i);
            let b = self.bounds(&item);
            out.extend([self.estimate(&item) as f64, b.lower, b.upper]);
        }
        out.extend(self.top(5).iter().map(|(item, count)| item.number() * 1000.0 + *count as f64));
        for guarantee in [Guarantee::NoFalsePositives, Guarantee::NoFalseNegatives] {
            for (item, b) in self.frequent(0.1, guarantee).expect("a valid phi") {
                out.extend([item.number(), b.lower, b.upper]);
            }
        }
        out
    }
}

impl<T: Probe + synopses::hash::Hashable + synopses::codec::Item + Clone + Eq + Debug> Subject for HeavyHitters<T> {
    fn exercise(&self) {
        let mut more = self.clone();
        more.observe_weighted(T::probe(1), u64::MAX);
        let _ = more.top(3);
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [((1, None), 10), ((5, None), 300), ((5, Some(7)), 300), ((1000, None), 100_000)];
        let make = |(capacity, seed): (usize, Option<u64>)| {
            match seed {
                Some(seed) => HeavyHitters::with_seed(capacity, seed),
                None => HeavyHitters::new(capacity),
            }
            .expect("a valid capacity")
        };
        sketch_examples("hh", &cases, make, |s, i| s.observe(T::probe(i % 17 + i % 3 * 100)))
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        // The skewed stream's keys as strings, capacity 8 (reduced many times), with the
        // default seed and with one of its own (the capacity's flag bit, then the seed).
        if T::key(0).is_none() {
            return Vec::new(); // Only the string summaries are pinned.
        }
        let hh = fed(HeavyHitters::new(8), skewed().filter_map(T::key));
        assert!(hh.error() > 0);
        let seeded = fed(HeavyHitters::with_seed(8, 7), skewed().filter_map(T::key));
        vec![("hh_8_strings.bin", hh), ("hh_8_strings_seed7.bin", seeded)]
    }
}

// ---------------------------------------------------------------------------------------------
// Membership
// ---------------------------------------------------------------------------------------------

impl Answers for Bloom {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![
            self.set_bits() as f64,
            self.false_positive_rate(),
            self.expected_false_positive_rate(1000),
            self.expected_false_positive_rate(u64::MAX),
            self.estimated_items(),
        ];
        out.extend((0..40_u64).map(|i| f64::from(u8::from(self.contains(i)))));
        out
    }
}

impl Subject for Bloom {
    fn exercise(&self) {
        let mut more = self.clone();
        more.observe(1_u64);
        assert!(more.contains(1_u64));
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [(1, 3), (100, 10), (700, 100), (1 << 24, 10_000)];
        sketch_examples(
            "bloom",
            &cases,
            |bits| Bloom::with_seed(bits, 3, 9).expect("valid parameters"),
            |s, i| s.observe(i),
        )
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        // A 1 % filter for 500 items holding 400, and one whose length is not a multiple of 64.
        vec![
            ("bloom_500_1pct.bin", fed(Bloom::with_false_positive_rate(500, 0.01), 0..400_u64)),
            ("bloom_100x3_seed8.bin", fed(Bloom::with_seed(100, 3, 8), ["a", "b", "c"])),
        ]
    }
}

impl Answers for CountingBloom {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![
            self.total() as f64,
            self.saturated_counters() as f64,
            self.nonzero_counters() as f64,
            self.false_positive_rate(),
            self.expected_false_positive_rate(u64::MAX),
        ];
        out.extend((0..40_u64).map(|i| self.estimate(i) as f64));
        out
    }
}

impl Subject for CountingBloom {
    fn exercise(&self) {
        let mut changed = self.clone();
        changed.observe(2_u64);
        if changed.remove(3_u64).is_err() {
            changed.remove(2_u64).expect("just inserted");
        }
        for width in [CounterWidth::Four, CounterWidth::Eight, CounterWidth::Sixteen] {
            let _ = self.with_counter_width(width);
        }
        let bloom = self.to_bloom();
        assert_eq!(Bloom::from_bytes(&bloom.to_bytes()).as_ref(), Ok(&bloom));
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [
            ((1, CounterWidth::Four), 3),
            ((100, CounterWidth::Four), 30),
            ((300, CounterWidth::Eight), 100),
            ((64, CounterWidth::Sixteen), 50),
            ((1 << 22, CounterWidth::Four), 10_000),
        ];
        let make = |(counters, width)| {
            CountingBloom::builder(counters, 3).counter_width(width).seed(9).build().expect("valid parameters")
        };
        sketch_examples("cbf", &cases, make, |s, i| s.observe(i % 7))
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        // A 4-bit filter for 500 items: 400 inserted, 100 of them removed, and one item
        // inserted 20 times, which saturates its counters; and an 8-bit one of odd length.
        let mut counting = fed(CountingBloom::with_false_positive_rate(500, 0.01), 0..400_u64);
        (0..100_u64).for_each(|i| counting.remove(i).expect("a member"));
        (0..20).for_each(|_| counting.observe("hot"));
        assert!(counting.saturated_counters() > 0);
        let wide = CountingBloom::builder(100, 3).counter_width(CounterWidth::Eight).seed(8).build();
        vec![("cbf_500_1pct.bin", counting), ("cbf_100x3_8bit_seed8.bin", fed(wide, ["a", "b", "c", "a"]))]
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

/// The answers of a sample, in an order of their own (samples come in no particular order).
fn sorted(mut answers: Vec<[f64; 3]>) -> impl Iterator<Item = f64> {
    answers.sort_by(|a, b| {
        a.iter().zip(b).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    });
    answers.into_iter().flatten()
}

impl Answers for Reservoir<u64> {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.seen() as f64, self.len() as f64, self.inclusion_probability()];
        out.extend(sorted(self.iter().map(|&i| [(i >> 11) as f64, 0.0, 0.0]).collect()));
        out
    }
}

impl Answers for WeightedReservoir<u64> {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.seen() as f64, self.len() as f64, self.total_weight()];
        out.extend(sorted(self.iter().map(|&(i, w)| [(i >> 11) as f64, w, 0.0]).collect()));
        out
    }
}

impl Answers for PrioritySample<u64> {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.seen() as f64, self.total_weight(), self.threshold()];
        for subset in [self.subset_sum(|_| true), self.subset_sum(|i| i % 2 == 0)] {
            out.extend([subset.value, subset.variance, subset.standard_error()]);
            bounds_answers(&mut out, |c| subset.bounds(c));
        }
        out.extend(sorted(self.sample().map(|(&i, w, est)| [(i >> 11) as f64, w, est]).collect()));
        out
    }
}

/// Labelled states of a sampler made by `make(capacity)`, fed `(item, weight)` by `observe`:
/// empty, after `n` items, and merged with a part.
fn sampler_examples<S: Mergeable + Clone>(
    name: &str,
    make: impl Fn(usize) -> S,
    observe: impl Fn(&mut S, u64, Weight),
) -> Vec<(String, S)> {
    let mut out = Vec::new();
    for (capacity, n) in [(1, 3), (4, 2), (4, 50), (100_000, 300_000)] {
        let empty = make(capacity);
        let mut one = empty.clone();
        let mut part = empty.empty_part(1);
        for i in 0..n {
            let w = Weight::new(1.0 + (i % 10) as f64).expect("a weight");
            observe(&mut one, i, w);
            observe(&mut part, n + i, w);
        }
        let mut merged = one.clone();
        merged.merge(&part).expect("parts of one sampler");
        out.push((format!("{name} {capacity} empty"), empty));
        out.push((format!("{name} {capacity} after {n}"), one));
        out.push((format!("{name} {capacity} merged after {n}"), merged));
    }
    out
}

/// 0..1000 weighted by `1 + i % 7`, for the weighted samplers' fixtures.
fn weighted_stream() -> impl Iterator<Item = (u64, Weight)> {
    (0..1000_u64).map(|i| (i, Weight::new(1.0 + (i % 7) as f64).expect("a weight")))
}

impl Subject for Reservoir<u64> {
    fn exercise(&self) {
        let mut more = self.clone();
        more.observe_all(0..100_u64);
        let _ = more.merge(&self.empty_part(0));
    }

    fn examples() -> Vec<(String, Self)> {
        sampler_examples("reservoir", |k| Reservoir::new(k, 3).expect("a capacity"), |s, i, _| s.observe(i))
    }

    fn read_only_fixtures() -> Vec<(u8, &'static str, Self)> {
        // Version 1 held no generator: the same recipes, read back.
        Self::fixtures().into_iter().map(|(name, s)| (1, name, s)).collect()
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        // 10 of 0..100 000, uniformly: the fixture pins the seeded draws.
        vec![("reservoir_10_seed2024.bin", fed(Reservoir::new(10, 2024), 0..100_000_u64))]
    }
}

impl Subject for WeightedReservoir<u64> {
    fn exercise(&self) {
        let mut more = self.clone();
        (0..100_u64).for_each(|i| more.observe_weighted(i, Weight::ONE));
    }

    fn examples() -> Vec<(String, Self)> {
        sampler_examples(
            "weighted",
            |k| WeightedReservoir::new(k, 3).expect("a capacity"),
            |s, i, w| s.observe_weighted(i, w),
        )
    }

    fn read_only_fixtures() -> Vec<(u8, &'static str, Self)> {
        // Version 1 held no generator: the same recipes, read back.
        Self::fixtures().into_iter().map(|(name, s)| (1, name, s)).collect()
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        vec![("weighted_5_seed2024.bin", fed(WeightedReservoir::new(5, 2024), weighted_stream()))]
    }
}

impl Subject for PrioritySample<u64> {
    fn exercise(&self) {
        let mut more = self.clone();
        (0..100_u64).for_each(|i| more.observe_weighted(i, Weight::ONE));
        let _ = more.subset_sum(|_| true);
    }

    fn examples() -> Vec<(String, Self)> {
        sampler_examples(
            "priority",
            |k| PrioritySample::new(k, 3).expect("a capacity"),
            |s, i, w| s.observe_weighted(i, w),
        )
    }

    fn read_only_fixtures() -> Vec<(u8, &'static str, Self)> {
        // Version 1 held no generator: the same recipes, read back.
        Self::fixtures().into_iter().map(|(name, s)| (1, name, s)).collect()
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        vec![("priority_8_seed2024.bin", fed(PrioritySample::new(8, 2024), weighted_stream()))]
    }
}

// ---------------------------------------------------------------------------------------------
// Quantiles
// ---------------------------------------------------------------------------------------------

/// The value a quantile sketch's examples take for item `i`: both signs, zeros, and magnitudes
/// over 60 orders of magnitude, so that small bucket limits collapse.
pub fn spread_value(i: u64) -> f64 {
    let u = (i as f64 * 0.618_033_988_749_895).fract();
    match i % 11 {
        0 => 0.0,
        1..=3 => -(u * 138.0 - 69.0).exp(),
        _ => (u * 138.0 - 69.0).exp(),
    }
}

impl Answers for DDSketch {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![
            self.count() as f64,
            self.rejected() as f64,
            self.buckets() as f64,
            self.min().unwrap_or(0.0),
            self.max().unwrap_or(0.0),
        ];
        out.extend((0..=100).map(|i| self.quantile(f64::from(i) / 100.0).expect("q").unwrap_or(0.0)));
        out.extend([0.999, 0.9999].map(|q| self.quantile(q).expect("q").unwrap_or(0.0)));
        out
    }
}

impl Subject for DDSketch {
    fn exercise(&self) {
        let mut more = self.clone();
        more.add(1.5).expect("finite");
        more.add_weighted(-3.0, 7).expect("finite");
        let _ = more.quantile(0.5);
        let mut twice = more.clone();
        twice.merge(&more).expect("the same configuration");
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [
            ((0.01, IndexMapping::Logarithmic, 2048, Collapse::Lowest), 3),
            ((0.02, IndexMapping::LinearInterpolation, 16, Collapse::Lowest), 500),
            ((0.05, IndexMapping::CubicInterpolation, 8, Collapse::Highest), 2_000),
            ((0.001, IndexMapping::Logarithmic, 1 << 16, Collapse::Highest), 20_000),
        ];
        sketch_examples(
            "ddsketch",
            &cases,
            |(alpha, mapping, bins, collapse)| {
                DDSketch::builder(alpha).mapping(mapping).max_bins(bins).collapse(collapse).build().expect("valid")
            },
            |s, i| s.add(spread_value(i)).expect("finite"),
        )
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        let spread = |s: Result<DDSketch, synopses::ConfigError>, n: u64| {
            let mut s = s.expect("valid");
            (0..n).for_each(|i| s.add(spread_value(i)).expect("finite"));
            s
        };
        vec![
            ("dd_1pct_empty.bin", DDSketch::new(0.01).expect("valid")),
            ("dd_1pct_latencies.bin", fed(DDSketch::new(0.01), (1..=5_000_u64).map(|i| (i * i) % 9_973))),
            (
                "dd_2pct_cubic_spread.bin",
                spread(DDSketch::builder(0.02).mapping(IndexMapping::CubicInterpolation).build(), 3_000),
            ),
            (
                "dd_5pct_linear_64bins_highest.bin",
                spread(
                    DDSketch::builder(0.05)
                        .mapping(IndexMapping::LinearInterpolation)
                        .max_bins(64)
                        .collapse(Collapse::Highest)
                        .build(),
                    3_000,
                ),
            ),
        ]
    }
}

/// An item a KLL sketch returns, as an answer: the item as it was added (0 for none), an
/// infinite one as `±f64::MAX`. The sketch accepts infinities, which are ordered; returning one
/// is data, not an estimate that overflowed, which is what the finite-answer checks look for.
fn item_answer(item: Option<&f64>) -> f64 {
    item.map_or(0.0, |x| x.clamp(-f64::MAX, f64::MAX))
}

impl Answers for Kll<f64> {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![
            self.count() as f64,
            self.rejected() as f64,
            self.retained() as f64,
            self.levels() as f64,
            f64::from(self.min_k()),
            self.rank_error(),
            self.pmf_error(),
            item_answer(self.min()),
            item_answer(self.max()),
        ];
        let view = self.sorted_view();
        for search in [Search::Inclusive, Search::Exclusive] {
            out.extend((0..=100).map(|i| item_answer(view.quantile(f64::from(i) / 100.0, search).expect("q"))));
            let points = [-1e6, -1.0, 0.0, 1e-3, 1.0, 1e6];
            out.extend(view.cdf(&points, search).expect("increasing").unwrap_or_default());
            out.extend(view.pmf(&points, search).expect("increasing").unwrap_or_default());
            let bounds = self.rank_bounds(view.rank(&1.0, search).expect("ordered").unwrap_or(0.0));
            out.extend([bounds.lower, bounds.upper]);
        }
        out
    }
}

impl Subject for Kll<f64> {
    fn exercise(&self) {
        let mut more = self.clone();
        more.add(1.5).expect("ordered");
        let _ = more.add_weighted(-3.0, 7);
        let _ = more.quantile(0.5, Search::Inclusive);
        let mut twice = more.clone();
        let _ = twice.merge(&more);
        let mut part = self.empty_part(3);
        (0..500).for_each(|i| part.add(spread_value(i)).expect("finite"));
        let _ = more.merge(&part);
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [(8_u16, 3), (8, 500), (200, 2_000), (50, 20_000), (2_000, 300_000)];
        sketch_examples(
            "kll",
            &cases,
            |k| Kll::new(k, 5).expect("valid"),
            |s, i| {
                if i % 97 == 3 {
                    s.add_weighted(spread_value(i), i).expect("finite");
                } else {
                    s.add(spread_value(i)).expect("finite");
                }
            },
        )
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        let spread = |k: u16, seed: u64, n: u64| {
            let mut s = Kll::new(k, seed).expect("valid");
            (0..n).for_each(|i| s.add(spread_value(i)).expect("finite"));
            s
        };
        let mut merged = spread(50, 9, 3_000);
        let mut part = merged.empty_part(1);
        (0..2_000).for_each(|i| part.add_weighted(spread_value(i), 1 + i % 5).expect("finite"));
        merged.merge(&part).expect("counts fit");
        vec![
            ("kll_200_empty.bin", Kll::new(200, 1).expect("valid")),
            ("kll_200_spread_seed7.bin", spread(200, 7, 10_000)),
            ("kll_50_merged_weighted_seed9.bin", merged),
        ]
    }
}

impl Answers for Kll<String> {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.count() as f64, self.retained() as f64, self.levels() as f64, self.rank_error()];
        let view = self.sorted_view();
        let probes = ["", "a", "m", "zz"].map(String::from);
        for search in [Search::Inclusive, Search::Exclusive] {
            out.extend(probes.iter().map(|p| view.rank(p, search).expect("ordered").unwrap_or(-1.0)));
            out.extend(
                (0..=10)
                    .map(|i| view.quantile(f64::from(i) / 10.0, search).expect("q").map_or(-1.0, |s| s.len() as f64)),
            );
        }
        out
    }
}

/// Item `i` as a word, for the string sketches.
fn word(i: u64) -> String {
    format!("{:x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40)
}

impl Subject for Kll<String> {
    fn exercise(&self) {
        let mut more = self.clone();
        more.add("x".into()).expect("ordered");
        let _ = more.add_weighted("y".into(), 3);
        let _ = more.merge(self);
    }

    fn examples() -> Vec<(String, Self)> {
        let cases = [(8_u16, 3), (20, 1_000), (200, 5_000)];
        sketch_examples(
            "kll strings",
            &cases,
            |k| Kll::new(k, 5).expect("valid"),
            |s, i| {
                s.add(word(i)).expect("ordered");
            },
        )
    }

    fn fixtures() -> Vec<(&'static str, Self)> {
        let mut s = Kll::new(20, 3).expect("valid");
        (0..1_000).for_each(|i| s.add(word(i)).expect("ordered"));
        vec![("kll_20_words_seed3.bin", s)]
    }
}
