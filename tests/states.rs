//! Every reachable state is valid, finite and round-trips; no accumulator overflows.
//!
//! One generic suite, instantiated for every type:
//!
//! * **Reachable states** (proptest): from a fresh instance, a random sequence of the type's
//!   public operations (observations of ordinary items and of hashes crafted to reach the
//!   largest register values, weighted observations with counts and weights at their limits,
//!   merges with peers, with itself and into an empty instance, reductions, width changes,
//!   removals); after each, every answer is a finite number, and
//!   `from_bytes(to_bytes(x)) == x` with the same answers, bit for bit.
//! * **Extremes** (deterministic): every register at its largest value, counters and counts
//!   driven to `u64::MAX` by weighted observations and ~70 self-merges, weights at
//!   `f64::MAX` and at the smallest subnormal; the same checks.
//!
//! Then the rest of the audit's classes: allocations refused before they are made,
//! controllers that recover from hostile loads, and what an adversary who knows a seed can
//! and cannot do. The decoders' cross-field checks are in `tests/robustness.rs`.

mod common;

use std::fmt::Debug;

use common::{Answers, CONFIDENCES};
use proptest::prelude::*;
use synopses::DecodeError;
use synopses::cardinality::{ExaLogLog, ExaLogLogShape, FlajoletMartin, HyperLogLog, UltraLogLog};
use synopses::codec::Codec;
use synopses::core::{Confidence, Mergeable, Weight};
use synopses::frequency::{CountMin, HeavyHitters, Update};
use synopses::hash::{DEFAULT_SEED, Hashable};
use synopses::membership::{Bloom, CounterWidth, CountingBloom};
use synopses::quantiles::{DDSketch, Kll};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};
use synopses::shedding::{
    FixedRate, Headroom, HorvitzThompson, KeyHashDrop, Load, LoadShedder, PiController, PiGains, RandomDrop,
    RateController,
};
use synopses::stream::{DChoices, KeyGrouping, PartialKeyGrouping, Partitioned, Partitioner, ShuffleGrouping};

// ---------------------------------------------------------------------------------------------
// The generic suite
// ---------------------------------------------------------------------------------------------

/// A type under test: its operations, everything it answers, and its codec.
trait Reachable: Answers + Clone + PartialEq + Debug {
    /// One public operation and its arguments.
    type Op: Debug + Clone;

    /// The operations a strategy draws, reaching every internal mode and the extremes.
    fn op() -> BoxedStrategy<Self::Op>;

    /// Applies `op`. An operation the state refuses (a merge of another configuration, a
    /// removal of an absent item) must fail and leave it as it was, which `apply` checks.
    fn apply(&mut self, op: &Self::Op);

    /// `from_bytes(to_bytes(self))`; `None` for a type without an encoding.
    fn roundtrip(&self) -> Option<Result<Self, DecodeError>>;

    /// What the state converts to, checked as states in their own right.
    fn companions(&self) -> Result<(), TestCaseError> {
        Ok(())
    }
}

/// `from_bytes(to_bytes(state))`, checking that `encoded_len` told the encoding's length.
fn codec_roundtrip<S: Codec>(state: &S) -> Option<Result<S, DecodeError>> {
    let bytes = state.to_bytes();
    assert_eq!(state.encoded_len(), bytes.len(), "encoded_len disagrees with the encoding");
    Some(S::from_bytes(&bytes))
}

fn bits(answers: &[f64]) -> Vec<u64> {
    answers.iter().map(|a| a.to_bits()).collect()
}

/// The checks every state must pass: finite answers, and a round trip to an equal state with
/// the same answers.
fn check_state<S: Reachable>(state: &S) -> Result<(), TestCaseError> {
    let answers = state.answers();
    for (i, a) in answers.iter().enumerate() {
        prop_assert!(a.is_finite(), "answer {} is {} for {:?}", i, a, state);
    }
    if let Some(back) = state.roundtrip() {
        let back = back.map_err(|e| TestCaseError::fail(format!("own encoding rejected ({e}) for {state:?}")))?;
        prop_assert_eq!(&back, state);
        prop_assert_eq!(bits(&back.answers()), bits(&answers), "answers after a round trip of {:?}", state);
    }
    state.companions()
}

/// Applies `ops` to `state`, checking it before and after each.
fn run<S: Reachable>(mut state: S, ops: &[S::Op]) -> Result<S, TestCaseError> {
    check_state(&state)?;
    for op in ops {
        state.apply(op);
        check_state(&state).map_err(|e| TestCaseError::fail(format!("after {op:?}: {e}")))?;
    }
    Ok(state)
}

/// A merge that may be refused: refused, it must change nothing.
fn merge_or_unchanged<S: Mergeable + Clone + PartialEq + Debug>(state: &mut S, other: &S) {
    let before = state.clone();
    if state.merge(other).is_err() {
        assert_eq!(*state, before, "a refused merge changed the state");
    }
}

/// A merge of a peer of another size: `merge` must refuse it and change nothing, then
/// `reducing` (a reducing merge of the same seed) must accept it.
fn merge_reducing<S: Mergeable + Clone + PartialEq + Debug>(
    state: &mut S,
    peer: &S,
    reducing: impl Fn(&mut S, &S) -> Result<(), synopses::MergeError>,
) {
    merge_or_unchanged(state, peer);
    assert!(reducing(state, peer).is_ok(), "a reducing merge of the same seed was refused");
}

/// The state becomes the empty instance's merge with it (which must be accepted).
fn into_empty<S: Mergeable>(state: &mut S) {
    let mut empty = state.empty_like();
    assert!(empty.merge(state).is_ok(), "the empty instance refused a merge");
    *state = empty;
}

/// `n` self-merges: each doubles every count, so ~70 of them drive any count to `u64::MAX`.
fn merge_self_times<S: Mergeable + Clone + PartialEq + Debug>(state: &mut S, n: usize) {
    for _ in 0..n {
        let copy = state.clone();
        merge_or_unchanged(state, &copy);
    }
}

/// Hashes that reach every register value: uniform ones, and ones whose low bits are zero
/// (the all-zero geometric part gives a register's largest value).
fn hash() -> BoxedStrategy<u64> {
    prop_oneof![
        2 => any::<u64>(),
        2 => (any::<u64>(), 1_u32..64).prop_map(|(x, zeros)| x & (u64::MAX << zeros)),
        1 => (any::<u64>(), 0_u32..8).prop_map(|(x, keep)| x & !(u64::MAX >> keep)),
        1 => Just(0_u64),
        1 => Just(u64::MAX),
    ]
    .boxed()
}

/// Counts for weighted observations, at their limits among others.
fn count() -> BoxedStrategy<u64> {
    prop_oneof![3 => 1_u64..100, 1 => Just(u64::MAX), 1 => Just(u64::MAX / 2 + 1), 1 => any::<u64>()].boxed()
}

/// Weights at their limits among ordinary ones.
fn weight() -> BoxedStrategy<Weight> {
    prop_oneof![
        4 => 0.5_f64..10.0,
        1 => Just(f64::MAX),
        1 => 1e300_f64..f64::MAX,
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(5e-324),
        1 => 1e-310_f64..1e-300,
    ]
    .prop_map(|w| Weight::new(w).expect("a positive finite weight"))
    .boxed()
}

/// Values for the Horvitz–Thompson sums, at their limits among ordinary ones.
fn value() -> BoxedStrategy<f64> {
    prop_oneof![4 => -100.0_f64..100.0, 1 => Just(f64::MAX), 1 => Just(-f64::MAX), 1 => Just(f64::NAN), 1 => Just(f64::INFINITY)]
        .boxed()
}

/// The hash that gives register `index` the value `k` in a sketch of precision `p` and `t`
/// sub-level bits (HyperLogLog and UltraLogLog: `t = 0`, `k` the rank).
fn hash_for(p: u8, t: u8, index: u64, k: u32) -> u64 {
    let (p, t) = (u32::from(p), u32::from(t));
    let top = 64 - p - t;
    let (z, sub) = ((k - 1) >> t, u64::from((k - 1) & ((1 << t) - 1)));
    let geometric = if z >= top { 0 } else { 1_u64 << z };
    (index << (64 - p)) | (geometric << t) | sub
}

// ---------------------------------------------------------------------------------------------
// The cardinality sketches
// ---------------------------------------------------------------------------------------------

/// The operations of the distinct-count sketches.
#[derive(Debug, Clone)]
enum Card {
    Items(Vec<u64>),
    Hashes(Vec<u64>),
    /// Merge a peer of the same configuration that saw these hashes.
    Merge(Vec<u64>),
    /// Merge a peer `drop` precisions coarser (or with `2^drop` times fewer bitmaps): refused
    /// by `merge`, reduced to by `merge_reducing`.
    MergeCoarser(u8, Vec<u64>),
    MergeSelf,
    /// Become the empty sketch's merge with this one.
    IntoEmpty,
    Reduce(u8),
}

fn card_op() -> BoxedStrategy<Card> {
    let hashes = || prop::collection::vec(hash(), 0..40);
    prop_oneof![
        3 => prop::collection::vec(any::<u64>(), 0..300).prop_map(Card::Items),
        3 => hashes().prop_map(Card::Hashes),
        2 => hashes().prop_map(Card::Merge),
        1 => (1_u8..4, hashes()).prop_map(|(d, h)| Card::MergeCoarser(d, h)),
        1 => Just(Card::MergeSelf),
        1 => Just(Card::IntoEmpty),
        1 => (1_u8..4).prop_map(Card::Reduce),
    ]
    .boxed()
}

/// The distinct-count sketches' operations; `reduced(s, drop)` is `s` at a size `drop` steps
/// coarser (or its smallest).
macro_rules! cardinality_subject {
    ($ty:ty, |$r:ident, $drop:ident| $reduced:expr, |$c:ident| $companions:expr) => {
        impl Reachable for $ty {
            type Op = Card;

            fn op() -> BoxedStrategy<Card> {
                card_op()
            }

            fn apply(&mut self, op: &Card) {
                let reduced = |$r: &Self, $drop: u8| -> Self { $reduced.expect("a size in range") };
                match op {
                    Card::Items(items) => self.observe_all(items),
                    Card::Hashes(hashes) => hashes.iter().for_each(|&h| self.observe_hash(h)),
                    Card::Merge(hashes) => {
                        let mut peer = self.empty_like();
                        hashes.iter().for_each(|&h| peer.observe_hash(h));
                        merge_or_unchanged(self, &peer);
                    }
                    Card::MergeCoarser(drop, hashes) => {
                        let mut peer = reduced(&self.empty_like(), *drop);
                        hashes.iter().for_each(|&h| peer.observe_hash(h));
                        merge_reducing(self, &peer, |s, o| s.merge_reducing(o));
                    }
                    Card::MergeSelf => merge_self_times(self, 1),
                    Card::IntoEmpty => {
                        into_empty(self);
                    }
                    Card::Reduce(drop) => *self = reduced(self, *drop),
                }
            }

            fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
                codec_roundtrip(self)
            }

            fn companions(&self) -> Result<(), TestCaseError> {
                let $c = self;
                $companions
            }
        }
    };
}

cardinality_subject!(
    HyperLogLog,
    |s, drop| s.reduce(s.precision().saturating_sub(drop).max(HyperLogLog::MIN_PRECISION)),
    |c| {
        // The entropy-coded form: never longer than the plain one, and the same sketch back.
        let (plain, coded) = (c.to_bytes(), c.to_compressed_bytes());
        prop_assert!(coded.len() <= plain.len(), "coded {} > plain {}", coded.len(), plain.len());
        prop_assert_eq!(&HyperLogLog::from_bytes(&coded).map_err(|e| TestCaseError::fail(e.to_string()))?, c);
        Ok(())
    }
);
cardinality_subject!(
    UltraLogLog,
    |s, drop| s.reduce(s.precision().saturating_sub(drop).max(UltraLogLog::MIN_PRECISION)),
    |c| {
        // The entropy-coded form: never longer than the plain one, and the same sketch back.
        let (plain, coded) = (c.to_bytes(), c.to_compressed_bytes());
        prop_assert!(coded.len() <= plain.len(), "coded {} > plain {}", coded.len(), plain.len());
        prop_assert_eq!(&UltraLogLog::from_bytes(&coded).map_err(|e| TestCaseError::fail(e.to_string()))?, c);
        match c.to_hyperloglog() {
            Ok(hll) => check_state(&hll),
            Err(_) => Ok(()),
        }
    }
);
cardinality_subject!(
    ExaLogLog,
    |s, drop| s.reduce(s.precision().saturating_sub(drop).max(ExaLogLog::MIN_PRECISION)),
    |_c| Ok(())
);
cardinality_subject!(FlajoletMartin, |s, drop| s.reduce((s.bitmaps() >> drop).max(1)), |_c| Ok(()));

/// Every register at every value up to its largest: the state of a sketch whose items were
/// crafted to hash that way (each register's window full, nothing left unseen).
fn fill(p: u8, t: u8, max_value: u32, mut observe: impl FnMut(u64)) {
    for index in 0..1_u64 << p {
        for k in 1..=max_value {
            observe(hash_for(p, t, index, k));
        }
    }
}

#[test]
fn every_register_at_its_largest_value_answers_finitely() -> Result<(), TestCaseError> {
    for p in [4_u8, 10, 18] {
        let mut hll = HyperLogLog::new(p).expect("a valid precision");
        // Only the largest rank: the martingale, then the registers.
        (0..1_u64 << p).for_each(|i| hll.observe_hash(hash_for(p, 0, i, 65 - u32::from(p))));
        let full = run(hll, &[Card::MergeSelf, Card::IntoEmpty, Card::Reduce(3), Card::MergeSelf])?;
        assert!(full.estimate() >= 1e18, "p {p}: {}", full.estimate());
    }
    for p in [3_u8, 4, 8, 16] {
        let mut ull = UltraLogLog::new(p).expect("a valid precision");
        fill(p, 0, 65 - u32::from(p), |h| ull.observe_hash(h));
        run(ull, &[Card::MergeSelf, Card::Reduce(1), Card::IntoEmpty])?;
    }
    for (p, t, d) in
        [(2_u8, 0_u8, 0_u8), (2, 0, 26), (2, 4, 22), (2, 4, 0), (3, 2, 20), (8, 2, 20), (6, 1, 9), (4, 3, 21)]
    {
        let mut ell = ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t, d }, 7).expect("a valid shape");
        let max_value = (65 - u32::from(p) - u32::from(t)) << t;
        fill(p, t, max_value, |h| ell.observe_hash(h));
        run(ell, &[Card::MergeSelf, Card::Reduce(1), Card::IntoEmpty])?;
    }
    let mut fm = FlajoletMartin::new(16).expect("a valid size");
    for i in 0..16_u64 {
        for z in 0..64 {
            fm.observe_hash(i | (1 << z));
        }
        fm.observe_hash(i);
    }
    run(fm, &[Card::MergeSelf])?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn hll_states_are_valid(p in 4_u8..=12, seed in any::<u64>(), ops in prop::collection::vec(HyperLogLog::op(), 0..12)) {
        run(HyperLogLog::with_seed(p, seed).expect("a valid precision"), &ops)?;
    }

    #[test]
    fn ull_states_are_valid(p in 3_u8..=12, seed in any::<u64>(), ops in prop::collection::vec(UltraLogLog::op(), 0..12)) {
        run(UltraLogLog::with_seed(p, seed).expect("a valid precision"), &ops)?;
    }

    #[test]
    fn ell_states_are_valid(
        p in 2_u8..=10, t in 0_u8..=4, d in 0_u8..=26, seed in any::<u64>(),
        ops in prop::collection::vec(ExaLogLog::op(), 0..12),
    ) {
        let d = d.min(26 - t);
        run(ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t, d }, seed).expect("a valid shape"), &ops)?;
    }

    #[test]
    fn fm_states_are_valid(log2 in 0_u32..=8, ops in prop::collection::vec(FlajoletMartin::op(), 0..12)) {
        run(FlajoletMartin::new(1 << log2).expect("a valid size"), &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Frequency
// ---------------------------------------------------------------------------------------------

/// The operations of the counting summaries (Count-Min, heavy hitters).
#[derive(Debug, Clone)]
enum Freq {
    Observe(u64, u64),
    Merge(Vec<(u64, u64)>),
    MergeSelf(usize),
    IntoEmpty,
}

fn freq_op() -> BoxedStrategy<Freq> {
    prop_oneof![
        4 => (0_u64..12, count()).prop_map(|(i, c)| Freq::Observe(i, c)),
        2 => prop::collection::vec((0_u64..12, count()), 0..6).prop_map(Freq::Merge),
        1 => (1_usize..70).prop_map(Freq::MergeSelf),
        1 => Just(Freq::IntoEmpty),
    ]
    .boxed()
}

impl Reachable for CountMin {
    type Op = Freq;

    fn op() -> BoxedStrategy<Freq> {
        freq_op()
    }

    fn apply(&mut self, op: &Freq) {
        match op {
            Freq::Observe(item, count) => self.observe_weighted(item, *count),
            Freq::Merge(pairs) => {
                let mut peer = self.empty_like();
                pairs.iter().for_each(|(i, c)| peer.observe_weighted(i, *c));
                merge_or_unchanged(self, &peer);
            }
            Freq::MergeSelf(n) => merge_self_times(self, *n),
            Freq::IntoEmpty => {
                into_empty(self);
            }
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        codec_roundtrip(self)
    }
}

impl Reachable for HeavyHitters<u64> {
    type Op = Freq;

    fn op() -> BoxedStrategy<Freq> {
        freq_op()
    }

    fn apply(&mut self, op: &Freq) {
        match op {
            Freq::Observe(item, count) => self.observe_weighted(*item, *count),
            Freq::Merge(pairs) => {
                let mut peer = self.empty_like();
                pairs.iter().for_each(|&(i, c)| peer.observe_weighted(i, c));
                merge_or_unchanged(self, &peer);
            }
            Freq::MergeSelf(n) => merge_self_times(self, *n),
            Freq::IntoEmpty => {
                into_empty(self);
            }
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        codec_roundtrip(self)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every counter width; at 8 and 16 bits the counts of `count()` and the self-merges
    /// saturate counters long before the total.
    #[test]
    fn cm_states_are_valid(
        width in 1_usize..64, depth in 1_u32..6, conservative in any::<bool>(), seed in any::<u64>(),
        counters in prop_oneof![
            Just(CounterWidth::Eight), Just(CounterWidth::Sixteen), Just(CounterWidth::ThirtyTwo), Just(CounterWidth::SixtyFour)
        ],
        ops in prop::collection::vec(CountMin::op(), 0..16),
    ) {
        let update = if conservative { Update::Conservative } else { Update::Standard };
        let empty = CountMin::builder(width, depth).seed(seed).update_rule(update).counter_width(counters).build();
        run(empty.expect("valid parameters"), &ops)?;
    }

    #[test]
    fn hh_states_are_valid(capacity in 1_usize..6, seed in any::<u64>(), ops in prop::collection::vec(HeavyHitters::<u64>::op(), 0..16)) {
        run(HeavyHitters::with_seed(capacity, seed).expect("a valid capacity"), &ops)?;
    }
}

#[test]
fn counts_saturate_at_u64_max() -> Result<(), TestCaseError> {
    let saturate = [Freq::Observe(1, u64::MAX), Freq::Observe(2, u64::MAX), Freq::Observe(1, 5), Freq::MergeSelf(70)];
    for update in [Update::Standard, Update::Conservative] {
        let cm =
            run(CountMin::builder(4, 3).seed(9).update_rule(update).build().expect("valid parameters"), &saturate)?;
        assert_eq!((cm.total(), cm.estimate(1_u64)), (u64::MAX, u64::MAX));
        assert_eq!(cm.inner_product(&cm), Ok(u64::MAX));
        // Narrow counters saturate at their maximum, long before the total, and stay there.
        let narrow = CountMin::builder(4, 3).seed(9).update_rule(update).counter_width(CounterWidth::Eight);
        let cm = run(narrow.build().expect("valid parameters"), &[Freq::Observe(1, 200), Freq::Observe(1, 100)])?;
        assert_eq!((cm.total(), cm.estimate(1_u64), cm.bounds(1_u64).upper), (300, 255, 300.0));
        assert!(cm.saturated_counters() >= 3);
        let cm = run(cm, &saturate)?;
        assert_eq!((cm.total(), cm.estimate(1_u64)), (u64::MAX, 255));
    }
    let hh = run(HeavyHitters::<u64>::new(2).expect("a valid capacity"), &saturate)?;
    assert_eq!(hh.total(), u64::MAX);
    let mut filter = CountingBloom::new(64, 3).expect("valid parameters");
    filter.observe(1_u64);
    merge_self_times(&mut filter, 70);
    assert_eq!(filter.total(), u64::MAX);
    check_state(&filter)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Membership
// ---------------------------------------------------------------------------------------------

/// The operations of the filters.
#[derive(Debug, Clone)]
enum Member {
    Insert(Vec<u64>),
    /// Insert one item this many times (saturating its counters).
    Repeat(u64, u16),
    Remove(u64),
    Merge(Vec<u64>),
    MergeSelf(usize),
    IntoEmpty,
    Width(u8),
}

fn member_op() -> BoxedStrategy<Member> {
    prop_oneof![
        3 => prop::collection::vec(0_u64..40, 0..30).prop_map(Member::Insert),
        1 => (0_u64..40, 1_u16..300).prop_map(|(i, n)| Member::Repeat(i, n)),
        3 => (0_u64..40).prop_map(Member::Remove),
        2 => prop::collection::vec(0_u64..40, 0..20).prop_map(Member::Merge),
        1 => (1_usize..70).prop_map(Member::MergeSelf),
        1 => Just(Member::IntoEmpty),
        1 => (0_u8..3).prop_map(Member::Width),
    ]
    .boxed()
}

impl Reachable for Bloom {
    type Op = Member;

    fn op() -> BoxedStrategy<Member> {
        member_op()
    }

    fn apply(&mut self, op: &Member) {
        match op {
            Member::Insert(items) | Member::Merge(items) if items.len() % 2 == 0 => self.observe_all(items),
            Member::Insert(items) | Member::Merge(items) => {
                let mut peer = self.empty_like();
                peer.observe_all(items);
                merge_or_unchanged(self, &peer);
            }
            Member::Repeat(item, _) | Member::Remove(item) => self.observe(item),
            Member::MergeSelf(n) => merge_self_times(self, (*n).min(2)),
            Member::IntoEmpty | Member::Width(_) => {
                into_empty(self);
            }
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        codec_roundtrip(self)
    }
}

impl Reachable for CountingBloom {
    type Op = Member;

    fn op() -> BoxedStrategy<Member> {
        member_op()
    }

    fn apply(&mut self, op: &Member) {
        match op {
            Member::Insert(items) => self.observe_all(items),
            Member::Repeat(item, n) => (0..*n).for_each(|_| self.observe(item)),
            Member::Remove(item) => {
                let before = self.clone();
                if self.remove(item).is_err() {
                    assert_eq!(*self, before, "a refused removal changed the filter");
                }
            }
            Member::Merge(items) => {
                let mut peer = self.empty_like();
                peer.observe_all(items);
                merge_or_unchanged(self, &peer);
            }
            Member::MergeSelf(n) => merge_self_times(self, *n),
            Member::IntoEmpty => {
                into_empty(self);
            }
            Member::Width(w) => {
                let width = [CounterWidth::Four, CounterWidth::Eight, CounterWidth::Sixteen][usize::from(*w)];
                *self = self.with_counter_width(width).expect("a width change of a valid filter");
            }
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        codec_roundtrip(self)
    }

    fn companions(&self) -> Result<(), TestCaseError> {
        check_state(&self.to_bloom())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bloom_states_are_valid(bits in 1_usize..300, hashes in 1_u32..8, ops in prop::collection::vec(Bloom::op(), 0..16)) {
        run(Bloom::new(bits, hashes).expect("valid parameters"), &ops)?;
    }

    #[test]
    fn counting_bloom_states_are_valid(
        counters in 1_usize..200, hashes in 1_u32..8, w in 0_usize..3,
        ops in prop::collection::vec(CountingBloom::op(), 0..16),
    ) {
        let width = [CounterWidth::Four, CounterWidth::Eight, CounterWidth::Sixteen][w];
        run(CountingBloom::builder(counters, hashes).counter_width(width).seed(3).build().expect("valid parameters"), &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

/// The operations of the samplers.
#[derive(Debug, Clone)]
enum Sample {
    Observe(Vec<(u64, Weight)>),
    /// Merge part `i` (its own random stream) that saw these items.
    MergePart(u64, Vec<(u64, Weight)>),
    /// Merge a copy of itself (refused unless one side is empty).
    MergeSelf,
    IntoEmpty,
}

fn sample_op() -> BoxedStrategy<Sample> {
    sample_op_with(weight)
}

/// Weights whose keys cannot tie (in `[1e-300, 1e300]`): see [`untied_ops`].
fn untied_weight() -> BoxedStrategy<Weight> {
    prop_oneof![4 => 0.5_f64..10.0, 1 => 1e-300_f64..1e-200, 1 => 1e200_f64..1e300]
        .prop_map(|w| Weight::new(w).expect("a positive finite weight"))
        .boxed()
}

fn sample_op_with(weight: fn() -> BoxedStrategy<Weight>) -> BoxedStrategy<Sample> {
    let items = move || prop::collection::vec((any::<u64>(), weight()), 0..20);
    prop_oneof![
        3 => items().prop_map(Sample::Observe),
        2 => (any::<u64>(), items()).prop_map(|(i, v)| Sample::MergePart(i, v)),
        1 => Just(Sample::MergeSelf),
        1 => Just(Sample::IntoEmpty),
    ]
    .boxed()
}

macro_rules! sampler_subject {
    ($ty:ty, |$s:ident, $item:ident, $weight:ident| $observe:expr) => {
        impl Reachable for $ty {
            type Op = Sample;

            fn op() -> BoxedStrategy<Sample> {
                sample_op()
            }

            fn apply(&mut self, op: &Sample) {
                let feed = |$s: &mut Self, items: &[(u64, Weight)]| {
                    for &($item, $weight) in items {
                        $observe;
                    }
                };
                match op {
                    Sample::Observe(items) => feed(self, items),
                    Sample::MergePart(index, items) => {
                        let mut part = self.empty_part(*index);
                        feed(&mut part, items);
                        merge_or_unchanged(self, &part);
                    }
                    Sample::MergeSelf => merge_self_times(self, 1),
                    Sample::IntoEmpty => {
                        let mut empty = self.empty_like();
                        merge_or_unchanged(&mut empty, self);
                        *self = empty;
                    }
                }
            }

            fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
                codec_roundtrip(self)
            }
        }
    };
}

sampler_subject!(Reservoir<u64>, |s, item, _w| s.observe(item));
sampler_subject!(WeightedReservoir<u64>, |s, item, w| s.observe_weighted(item, w));
sampler_subject!(PrioritySample<u64>, |s, item, w| s.observe_weighted(item, w));

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reservoir_states_are_valid(k in 1_usize..8, seed in any::<u64>(), ops in prop::collection::vec(Reservoir::<u64>::op(), 0..10)) {
        run(Reservoir::new(k, seed).expect("a valid capacity"), &ops)?;
    }

    #[test]
    fn weighted_states_are_valid(k in 1_usize..8, seed in any::<u64>(), ops in prop::collection::vec(WeightedReservoir::<u64>::op(), 0..10)) {
        run(WeightedReservoir::new(k, seed).expect("a valid capacity"), &ops)?;
    }

    #[test]
    fn priority_states_are_valid(k in 1_usize..8, seed in any::<u64>(), ops in prop::collection::vec(PrioritySample::<u64>::op(), 0..10)) {
        run(PrioritySample::new(k, seed).expect("a valid capacity"), &ops)?;
    }
}

/// Restore-and-continue: a sampler put through `before`, encoded, decoded, and put through
/// `after` and `tail` (bulk observation, which skips items) encodes, and samples, exactly as the
/// uninterrupted one: the encoding holds the generator and the pending skip or jump.
fn continues_exactly<S: Reachable<Op = Sample> + Codec>(
    start: S,
    before: &[Sample],
    after: &[Sample],
    tail: impl Fn(&mut S),
) -> Result<(), TestCaseError> {
    let mut uninterrupted = start;
    before.iter().for_each(|op| uninterrupted.apply(op));
    let mut resumed = S::from_bytes(&uninterrupted.to_bytes())
        .map_err(|e| TestCaseError::fail(format!("own encoding rejected: {e}")))?;
    prop_assert_eq!(resumed.to_bytes(), uninterrupted.to_bytes());
    for op in after {
        uninterrupted.apply(op);
        resumed.apply(op);
        prop_assert!(resumed.to_bytes() == uninterrupted.to_bytes(), "after {:?}", op);
    }
    tail(&mut uninterrupted);
    tail(&mut resumed);
    prop_assert!(resumed.to_bytes() == uninterrupted.to_bytes(), "after the tail");
    prop_assert_eq!(bits(&resumed.answers()), bits(&uninterrupted.answers()));
    Ok(())
}

fn ops() -> impl Strategy<Value = Vec<Sample>> {
    prop::collection::vec(sample_op(), 0..8)
}

/// Operations whose weights keep every key finite and apart. Weights below about 1e-308 give
/// keys that overflow to +∞ and tie; which of the tied items a later merge keeps then depends
/// on where they sit in memory, which an encoding does not record, so a decoded weighted or
/// priority sample may keep the other one (found by this test: `k = 5`, two items of weight
/// 5e-324 in one part, then a merge of two more). Until the format stores a tie-break, the
/// exact continuation is checked on weights that cannot tie; the limitation is in the
/// samplers' docs.
fn untied_ops() -> impl Strategy<Value = Vec<Sample>> {
    prop::collection::vec(sample_op_with(untied_weight), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_decoded_reservoir_continues_exactly(k in 1_usize..8, seed in any::<u64>(), before in ops(), after in ops(), n in 0_u64..5000) {
        continues_exactly(Reservoir::new(k, seed).expect("a valid capacity"), &before, &after, |s| s.observe_all(0..n))?;
    }

    #[test]
    fn a_decoded_weighted_reservoir_continues_exactly(k in 1_usize..8, seed in any::<u64>(), before in untied_ops(), after in untied_ops(), n in 0_u64..5000) {
        let tail = |s: &mut WeightedReservoir<u64>| s.observe_all((0..n).map(|i| (i, Weight::new(1.0 + (i % 7) as f64).expect("a weight"))));
        continues_exactly(WeightedReservoir::new(k, seed).expect("a valid capacity"), &before, &after, tail)?;
    }

    #[test]
    fn a_decoded_priority_sample_continues_exactly(k in 1_usize..8, seed in any::<u64>(), before in untied_ops(), after in untied_ops(), n in 0_u64..5000) {
        let tail = |s: &mut PrioritySample<u64>| s.observe_all((0..n).map(|i| (i, Weight::new(1.0 + (i % 7) as f64).expect("a weight"))));
        continues_exactly(PrioritySample::new(k, seed).expect("a valid capacity"), &before, &after, tail)?;
    }
}

/// Issue 15's checkpoint test: the same sample for the same seed, whether or not the reservoir
/// was encoded and decoded half way.
#[test]
fn a_reservoir_restored_half_way_draws_the_uninterrupted_sample() -> Result<(), Box<dyn std::error::Error>> {
    let (first_half, second_half) = (0..50_000_u64, 50_000..100_000_u64);
    let mut a = Reservoir::new(50, 7)?;
    a.observe_all(first_half);
    let mut b = Reservoir::<u64>::from_bytes(&a.to_bytes())?;
    a.observe_all(second_half.clone());
    b.observe_all(second_half);
    assert!(a.iter().eq(b.iter()));
    assert_eq!(a.to_bytes(), b.to_bytes());
    assert_eq!(a.random_draws(), b.random_draws());
    Ok(())
}

/// Regressions the suite found: a merge into a sample that is not full dropped the entries of
/// key +∞ (weights below `1/f64::MAX`), leaving fewer items than it counted, so its own
/// encoding was refused; and a priority sample summed its subset in heap order, so that a
/// decoded copy answered a different last bit.
#[test]
fn sampler_regressions() -> Result<(), TestCaseError> {
    let w = |x: f64| Weight::new(x).expect("a weight");
    let part = vec![(5_941_316_098_422_561_211, w(5e-324)), (3_304_664_349_288_634_744, w(6.0e-302)), (10, w(3.08))];
    let ops = [Sample::MergePart(0, vec![(0, w(0.5))]), Sample::MergePart(400_693, part)];
    let merged = run(PrioritySample::new(7, 0).expect("a capacity"), &ops)?;
    assert_eq!(merged.seen(), 4);
    run(WeightedReservoir::new(7, 0).expect("a capacity"), &ops)?;
    let items = vec![
        (0, w(0.5)),
        (0, w(0.5)),
        (9_300_087, w(8.842_389_412_035_663)),
        (3_039_036_627_067_976_016, w(7.320_773_001_311_742)),
        (7_112_956_166_238_332_028, w(1.514_344_425_488_412_2)),
        (4_708_460_097_030_910_181, w(1.736_558_629_770_012_2)),
        (9_309_729_675_784_968_752, w(2.225_073_858_507_201_4e-308)),
    ];
    run(PrioritySample::new(6, 603_747_557_436_957_310).expect("a capacity"), &[Sample::Observe(items)])?;
    Ok(())
}

#[test]
fn samplers_answer_finitely_at_the_weight_limits() -> Result<(), TestCaseError> {
    let huge = Weight::new(f64::MAX).expect("a weight");
    let tiny = Weight::new(5e-324).expect("a weight");
    let near = Weight::new(1e300).expect("a weight");
    let ops: Vec<Sample> = vec![
        Sample::Observe(vec![(1, huge), (2, huge), (3, near), (4, near), (5, tiny), (6, tiny)]),
        Sample::MergePart(1, vec![(7, huge), (8, near)]),
        Sample::Observe((10..40).map(|i| (i, if i % 2 == 0 { huge } else { near })).collect()),
    ];
    for k in [1, 3, 50] {
        let priority = run(PrioritySample::new(k, 11).expect("a valid capacity"), &ops)?;
        assert!(priority.subset_sum(|_| true).variance.is_finite());
        run(WeightedReservoir::new(k, 11).expect("a valid capacity"), &ops)?;
        run(Reservoir::new(k, 11).expect("a valid capacity"), &ops)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Load shedding
// ---------------------------------------------------------------------------------------------

/// The operations of the shedding estimators.
#[derive(Debug, Clone)]
enum Shed {
    Observe(Vec<(f64, Weight)>),
    MergeSelf(usize),
    IntoEmpty,
}

fn shed_op() -> BoxedStrategy<Shed> {
    prop_oneof![
        3 => prop::collection::vec((value(), weight()), 0..10).prop_map(Shed::Observe),
        1 => (1_usize..70).prop_map(Shed::MergeSelf),
        1 => Just(Shed::IntoEmpty),
    ]
    .boxed()
}

fn estimate_answers(out: &mut Vec<f64>, e: synopses::core::Estimate) {
    out.extend([e.value, e.variance, e.standard_error()]);
    for c in CONFIDENCES {
        let b = e.bounds(c);
        out.extend([b.lower, b.upper]);
    }
}

impl Answers for HorvitzThompson {
    fn answers(&self) -> Vec<f64> {
        let mut out = vec![self.kept() as f64, self.skipped() as f64];
        for e in [self.count(), self.sum(), self.mean()] {
            estimate_answers(&mut out, e);
        }
        out
    }
}

impl Reachable for HorvitzThompson {
    type Op = Shed;

    fn op() -> BoxedStrategy<Shed> {
        shed_op()
    }

    fn apply(&mut self, op: &Shed) {
        match op {
            Shed::Observe(items) => items.iter().for_each(|&(v, w)| self.observe_weighted(v, w)),
            Shed::MergeSelf(n) => merge_self_times(self, *n),
            Shed::IntoEmpty => {
                into_empty(self);
            }
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        None
    }
}

/// A load shedder in front of the estimator, compared by what it counted and estimated.
#[derive(Clone, Debug)]
struct Shedder(LoadShedder<HorvitzThompson, RandomDrop, FixedRate>);

impl PartialEq for Shedder {
    fn eq(&self, other: &Self) -> bool {
        self.0.stats() == other.0.stats() && self.0.inner() == other.0.inner()
    }
}

impl Answers for Shedder {
    fn answers(&self) -> Vec<f64> {
        let stats = self.0.stats();
        let mut out = vec![
            stats.offered as f64,
            stats.kept as f64,
            stats.dropped() as f64,
            stats.kept_fraction(),
            self.0.keep_probability(),
        ];
        out.extend(self.0.inner().answers());
        out
    }
}

impl Reachable for Shedder {
    type Op = Shed;

    fn op() -> BoxedStrategy<Shed> {
        shed_op()
    }

    fn apply(&mut self, op: &Shed) {
        let s = &mut self.0;
        match op {
            Shed::Observe(items) => items.iter().for_each(|&(v, _)| {
                s.observe(v);
            }),
            Shed::MergeSelf(n) => {
                for i in 0..*n {
                    // A copy of one random stream is refused; a part of its own is not.
                    let mut part = s.empty_part(i as u64);
                    part.merge(s).expect("an empty part merges");
                    let before = s.clone();
                    if s.merge(&part).is_err() {
                        assert_eq!(Shedder(before), Shedder(s.clone()), "a refused merge changed the shedder");
                    }
                }
            }
            Shed::IntoEmpty => {
                into_empty(s);
            }
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        None
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn horvitz_thompson_states_are_valid(ops in prop::collection::vec(HorvitzThompson::op(), 0..12)) {
        run(HorvitzThompson::new(), &ops)?;
    }

    #[test]
    fn shedder_states_are_valid(p in 0.01_f64..=1.0, seed in any::<u64>(), ops in prop::collection::vec(Shedder::op(), 0..12)) {
        let shedder = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(seed), FixedRate::new(p).expect("a probability"));
        run(Shedder(shedder), &ops)?;
    }
}

#[test]
fn estimators_answer_finitely_at_the_weight_limits() -> Result<(), TestCaseError> {
    let max = Weight::new(f64::MAX).expect("a weight");
    // The audit's example: two observations of weight f64::MAX made the mean NaN.
    let mut ht = run(HorvitzThompson::new(), &[Shed::Observe(vec![(1.0, max), (3.0, max)])])?;
    assert_eq!(ht.mean().value, 2.0);
    assert_eq!(ht.count().value, f64::MAX);
    ht = run(ht, &[Shed::Observe(vec![(f64::MAX, max), (-f64::MAX, max), (f64::NAN, max)]), Shed::MergeSelf(70)])?;
    assert_eq!((ht.kept(), ht.skipped()), (u64::MAX, u64::MAX));
    // The audit's example: merging a state with a copy of itself ~70 times overflowed.
    let mut shedder = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(0.5).expect("p"));
    (0..10_u64).for_each(|i| shedder.observe(i));
    let shedder = run(Shedder(shedder), &[Shed::MergeSelf(70)])?;
    assert_eq!(shedder.0.stats().offered, u64::MAX);
    Ok(())
}

/// Loads no controller can act on, and loads that are merely extreme.
fn hostile_loads() -> Vec<Load> {
    let ok = Load { offered: 100, elapsed: 0.1, queue_len: 10, cost_per_item: 0.001, queue_delay: 0.01 };
    vec![
        Load { elapsed: 1e-320, ..ok },
        Load { elapsed: 1e-300, offered: u64::MAX, ..ok },
        Load { elapsed: f64::NAN, ..ok },
        Load { elapsed: f64::INFINITY, ..ok },
        Load { elapsed: -1.0, ..ok },
        Load { elapsed: 1e300, ..ok },
        Load { cost_per_item: f64::NAN, ..ok },
        Load { cost_per_item: f64::INFINITY, ..ok },
        Load { cost_per_item: f64::MAX, queue_len: u64::MAX, ..ok },
        Load { cost_per_item: -1.0, ..ok },
        Load { queue_delay: f64::NAN, ..ok },
        Load { queue_delay: f64::MAX, ..ok },
        Load { queue_delay: -5.0, ..ok },
        Load { offered: u64::MAX, elapsed: 1e-9, ..ok },
        Load { offered: 0, elapsed: 0.0, ..ok },
    ]
}

/// Drives `controller` with `steps` steps of a steady 3× overload and returns the keep
/// probability it settles at.
fn settle(controller: &mut (impl RateController + ?Sized), steps: usize) -> f64 {
    let overload = Load { offered: 300, elapsed: 0.1, queue_len: 5, cost_per_item: 0.001, queue_delay: 0.2 };
    for _ in 0..steps {
        controller.update(&overload);
        let p = controller.keep_probability();
        assert!(p.is_finite() && (synopses::shedding::MIN_KEEP_PROBABILITY..=1.0).contains(&p), "p = {p}");
    }
    controller.keep_probability()
}

#[test]
fn controllers_recover_from_hostile_loads() {
    fn check(make: impl Fn() -> Box<dyn RateController>, steps: usize, name: &str) {
        let mut calm = make();
        let expected = settle(&mut *calm, steps);
        for hostile in hostile_loads() {
            let mut c = make();
            settle(&mut *c, 5);
            // Hostile readings, each followed by normal ones: the controller must come back
            // to where a controller that never saw them stands.
            c.update(&hostile);
            assert!(c.keep_probability().is_finite(), "{name}: {hostile:?}");
            let p = settle(&mut *c, steps);
            // The controllers are deterministic: a hostile reading the controller ignores, or
            // that restarts Headroom's average, leaves it exactly where the calm one is; one
            // within its average (a reading 1/3 of the rate) decays by the smoothing weight per
            // step, to (1 − 0.1)^200 ≈ 7e-10 at worst here, and the PI controller sits at its
            // clamp under this overload. 1 % is room to spare.
            assert!(
                (p - expected).abs() < 0.01 * expected.max(0.01),
                "{name} after {hostile:?}: {p} against {expected}"
            );
        }
    }
    check(|| Box::new(FixedRate::new(0.3).expect("p")), 10, "fixed");
    check(|| Box::new(Headroom::new(0.9).expect("valid")), 20, "headroom");
    check(|| Box::new(Headroom::new(0.9).expect("valid").with_smoothing(0.1).expect("valid")), 200, "smooth");
    check(
        || Box::new(PiController::new(0.05, PiGains { proportional: 0.2, integral: 2.0 }).expect("valid")),
        400,
        "pi",
    );
}

#[test]
fn a_shedder_refuses_a_load_it_cannot_act_on_and_loses_no_count() -> Result<(), Box<dyn std::error::Error>> {
    let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), Headroom::new(0.9)?);
    (0..3000_u64).for_each(|x| s.observe(x));
    // (The shedder counts the items offered itself: a load is judged with that count.)
    for hostile in hostile_loads().into_iter().filter(|l| Load { offered: 3000, ..*l }.validate().is_err()) {
        assert!(s.control(hostile).is_err(), "{hostile:?}");
        assert_eq!(s.keep_probability(), 1.0);
    }
    // The 3000 items offered before the refused steps count in the next one.
    s.control(Load { offered: 0, elapsed: 1.0, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 })?;
    assert!((s.keep_probability() - 0.3).abs() < 1e-9, "{}", s.keep_probability());
    Ok(())
}

#[test]
fn items_offered_in_no_time_are_refused_and_counted_later() -> Result<(), Box<dyn std::error::Error>> {
    let mut s = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), Headroom::new(0.9)?);
    (0..3000_u64).for_each(|x| s.observe(x));
    let instant = Load { offered: 0, elapsed: 0.0, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.0 };
    assert_eq!(s.control(instant).err().map(|e| e.parameter()), Some("elapsed"));
    s.control(Load { elapsed: 1.0, ..instant })?;
    assert!((s.keep_probability() - 0.3).abs() < 1e-9, "{}", s.keep_probability());
    // With nothing offered, a step of no time is an empty step.
    s.control(instant)?;
    Ok(())
}

#[test]
fn a_simulation_of_absurd_costs_reports_finite_numbers() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::shedding::{Credits, Phase, Simulation};
    // Absurd costs, and credits that take absurdly long to return, behind buffers of any size.
    let flows = [
        None,
        Some(Credits { buffer: 1, delay: f64::MAX, source_buffer: None }),
        Some(Credits { buffer: 2, delay: 1e308, source_buffer: Some(0) }),
        Some(Credits { buffer: u64::MAX, delay: 0.0, source_buffer: Some(u64::MAX) }),
    ];
    for cost in [1e308, f64::MAX / 4.0, f64::MAX, 0.001] {
        for flow in flows {
            let mut sim = Simulation::new(vec![Phase { duration: 10.0, rate: 10.0 }], cost, 1)?.with_tick(1.0)?;
            if let Some(credits) = flow {
                sim = sim.with_credits(credits)?;
            }
            for report in [sim.run(FixedRate::new(1.0)?), sim.run(Headroom::new(0.9)?)] {
                let numbers = [report.latency_p50, report.latency_p99, report.latency_max, report.kept_rate(0.0, 10.0)];
                assert!(numbers.iter().all(|x| x.is_finite()), "cost {cost}, {flow:?}: {numbers:?}");
                assert!(report.series.iter().all(|s| {
                    [s.keep_probability, s.kept_rate, s.served_rate, s.counted, s.count_error()]
                        .iter()
                        .all(|x| x.is_finite())
                }));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Partitioners and partitioned runs
// ---------------------------------------------------------------------------------------------

fn check_loads<P: Partitioner>(p: &P) {
    assert!(p.imbalance().is_finite(), "imbalance of {:?}", p.loads());
}

#[test]
fn partitioner_loads_saturate() {
    fn drive<P: Partitioner>(mut p: P) {
        // The audit's examples: add_load(0, MAX) then add_load(0, 1); absorb of itself; the
        // sum inside imbalance().
        p.add_load(0, u64::MAX);
        p.add_load(0, 1);
        assert_eq!(p.loads()[0], u64::MAX);
        let copy = p.clone();
        p.absorb(&copy);
        let last = p.workers() - 1;
        p.add_load(last, u64::MAX);
        check_loads(&p);
        for _ in 0..70 {
            let copy = p.clone();
            p.absorb(&copy);
        }
        let _ = p.route(&7_u64);
        let _ = p.advance(u64::MAX);
        check_loads(&p);
    }
    drive(KeyGrouping::new(3).expect("workers"));
    drive(ShuffleGrouping::new(3).expect("workers"));
    drive(PartialKeyGrouping::new(3).expect("workers"));
    drive(DChoices::new(3, 2).expect("workers"));
    drive(KeyGrouping::new(65_536).expect("workers"));
}

#[test]
fn partitions_too_large_to_allocate_are_refused() -> Result<(), Box<dyn std::error::Error>> {
    // The audit's example: 64 MiB per part on 65 536 workers asked for 4 TiB and aborted.
    let huge = Partitioned::new(&CountMin::new(1 << 20, 8)?, KeyGrouping::new(65_536)?);
    assert_eq!(huge.err().map(|e| e.parameter()), Some("workers"));
    let big_filter = Partitioned::new(&Bloom::new(1 << 27, 3)?, ShuffleGrouping::new(1 << 13)?);
    assert!(big_filter.is_err());
    let fine = Partitioned::new(&CountMin::new(1024, 4)?, KeyGrouping::new(1024)?)?;
    assert_eq!(fine.parts().len(), 1024);
    Ok(())
}

#[test]
fn absurd_sizes_are_config_errors() {
    assert!(CountMin::new(usize::MAX, 32).is_err());
    assert!(Bloom::new(usize::MAX, 3).is_err());
    assert!(CountingBloom::new(usize::MAX, 3).is_err());
    assert!(HeavyHitters::<u64>::new(usize::MAX).is_err());
    assert!(Reservoir::<u64>::new(usize::MAX, 1).is_err());
    assert!(PrioritySample::<u64>::new(usize::MAX, 1).is_err());
    assert!(Bloom::with_false_positive_rate(u64::MAX, 1e-300).is_err());
    assert!(CountMin::with_error(f64::MIN_POSITIVE, 0.01).is_err());
}

// ---------------------------------------------------------------------------------------------
// The audit's reachable-but-rejected states
// ---------------------------------------------------------------------------------------------

#[test]
fn a_sparse_sketch_reduced_to_a_shape_born_dense_keeps_its_count() -> Result<(), Box<dyn std::error::Error>> {
    let mut ull = UltraLogLog::new(12)?;
    ull.observe_all(0..20_u64);
    assert!(ull.is_sparse());
    let reduced = ull.reduce(3)?;
    assert!(reduced.estimate() >= 5.0, "{}", reduced.estimate());
    assert_eq!(UltraLogLog::from_bytes(&reduced.to_bytes())?, reduced);
    let mut empty = UltraLogLog::new(3)?;
    empty.merge_reducing(&ull)?;
    assert_eq!(UltraLogLog::from_bytes(&empty.to_bytes())?, empty);
    assert_eq!(empty.estimate(), reduced.estimate());
    // ExaLogLog: a sparse sketch reduced far, and shapes born dense (p + t > 26) reduced to
    // precisions with a sparse mode, where the result is dense with few items (an outside
    // review found the decoder refusing those).
    let mut ell = ExaLogLog::with_seed(20, 1)?;
    ell.observe_all(0..20_u64);
    let reduced = ell.reduce(2)?;
    assert_eq!(ExaLogLog::from_bytes(&reduced.to_bytes())?, reduced);
    for (t, d) in [(4_u8, 0_u8), (4, 22)] {
        let mut born_dense = ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: 23, t, d }, 1)?;
        assert!(!born_dense.is_sparse());
        born_dense.observe(7_u64);
        for p in [22, 10, 2] {
            let reduced = born_dense.reduce(p)?;
            assert_eq!(ExaLogLog::from_bytes(&reduced.to_bytes())?, reduced, "({t}, {d}) reduced to {p}");
        }
        let mut small = ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: 22, t, d }, 1)?;
        small.merge_reducing(&born_dense)?;
        assert_eq!(ExaLogLog::from_bytes(&small.to_bytes())?, small, "({t}, {d}) merged into an empty one");
        let mut sparse = ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: 22, t, d }, 1)?;
        sparse.observe_all(0..5_u64);
        sparse.merge_reducing(&born_dense)?;
        assert_eq!(ExaLogLog::from_bytes(&sparse.to_bytes())?, sparse, "({t}, {d}) merged into a sparse one");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Adversaries who know the seed
// ---------------------------------------------------------------------------------------------

/// xxh3-64's avalanche step and its inverse (both bijections of 64 bits).
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

fn inverse_avalanche(mut h: u64) -> u64 {
    h ^= h >> 32;
    let mut inverse = 0x1656_6791_9E37_79F9_u64;
    for _ in 0..6 {
        inverse = inverse.wrapping_mul(2_u64.wrapping_sub(0x1656_6791_9E37_79F9_u64.wrapping_mul(inverse)));
    }
    h = h.wrapping_mul(inverse);
    h ^ (h >> 37)
}

/// The 16-byte items whose xxh3 accumulator under `seed` is `acc` (even): one with its first
/// half cancelling the secret (the product term vanishes), one with a first half of 1 (the
/// product term is the second half). xxh3 of 9 to 16 bytes is
/// `avalanche(len + swap(lo) + hi + fold(lo · hi))` with `lo`, `hi` the input's halves
/// xored with seed-shifted words of its default secret: public facts, which is the point.
fn colliding_items(seed: u64, acc: u64) -> [Vec<u8>; 2] {
    const SECRET: [u64; 4] =
        [0x1F67_B3B7_A4A4_4072, 0x78E5_C0CC_4EE6_79CB, 0x2172_FFCC_7DD0_5A82, 0x8E24_43F7_7446_08B8];
    let flip1 = (SECRET[0] ^ SECRET[1]).wrapping_add(seed);
    let flip2 = (SECRET[2] ^ SECRET[3]).wrapping_sub(seed);
    let item = |lo: u64, hi: u64| [(lo ^ flip1).to_le_bytes(), (hi ^ flip2).to_le_bytes()].concat();
    let hi_a = acc.wrapping_sub(16);
    let hi_b = acc.wrapping_sub(16).wrapping_sub(1_u64.swap_bytes()) >> 1;
    [item(0, hi_a), item(1, hi_b)]
}

/// An item whose hash under `seed` is exactly `target`.
fn item_with_hash(seed: u64, target: u64) -> Vec<u8> {
    let [item, _] = colliding_items(seed, inverse_avalanche(target));
    item
}

#[test]
fn the_crafting_works() {
    for (seed, acc) in [(DEFAULT_SEED, 42_u64), (0, 1 << 40), (u64::MAX, 0x1234)] {
        let [a, b] = colliding_items(seed, acc);
        assert_ne!(a, b);
        assert_eq!(a.hash64(seed), avalanche(acc), "seed {seed}");
        assert_eq!(b.hash64(seed), a.hash64(seed), "seed {seed}");
    }
    assert_eq!(item_with_hash(DEFAULT_SEED, 99).hash64(DEFAULT_SEED), 99);
    assert_eq!(avalanche(inverse_avalanche(0xDEAD_BEEF)), 0xDEAD_BEEF);
}

#[test]
fn heavy_hitters_never_overcount_items_that_share_a_hash() -> Result<(), Box<dyn std::error::Error>> {
    for seed in [DEFAULT_SEED, 7] {
        let [a, b] = colliding_items(seed, 0x5EED_0000);
        assert_eq!(a.hash64(seed), b.hash64(seed));
        let mut hh = HeavyHitters::with_seed(4, seed)?;
        (0..3).for_each(|_| hh.observe(a.clone()));
        (0..2).for_each(|_| hh.observe(b.clone()));
        assert_eq!((hh.estimate(&a), hh.estimate(&b)), (3, 2));
        let back = HeavyHitters::<Vec<u8>>::from_bytes(&hh.to_bytes())?;
        assert_eq!(back, hh);
        let mut merged = hh.clone();
        merged.merge(&back)?;
        assert_eq!((merged.estimate(&a), merged.estimate(&b)), (6, 4));
    }
    Ok(())
}

#[test]
fn crafted_items_fool_a_public_seed_and_not_a_secret_one() -> Result<(), Box<dyn std::error::Error>> {
    // 10^5 distinct items crafted to hash, under the default seed, to register 0 with rank 1.
    let items: Vec<Vec<u8>> = (0..100_000_u64).map(|i| item_with_hash(DEFAULT_SEED, (i << 1) | 1)).collect();
    let mut public = HyperLogLog::new(12)?;
    let mut public_ull = UltraLogLog::new(12)?;
    public.observe_all(&items);
    public_ull.observe_all(&items);
    assert!(public.estimate() < 2.0 && public_ull.estimate() < 2.0, "{} {}", public.estimate(), public_ull.estimate());
    let mut secret = HyperLogLog::with_error_and_seed(0.02, 0x5EC2E7)?;
    secret.observe_all(&items);
    assert!(secret.bounds(Confidence::ThreeSigma).contains(100_000.0), "{}", secret.estimate());
    // A key-hash shedder at p = 0.01 keeps every crafted key under its public seed.
    let low: Vec<Vec<u8>> = (0..1000_u64).map(|i| item_with_hash(KeyHashDrop::DEFAULT_SEED, i)).collect();
    let mut public_kept = 0;
    let mut secret_kept = 0;
    let (mut a, mut b) = (KeyHashDrop::new(), KeyHashDrop::with_seed(0x5EC2E7));
    for item in &low {
        use synopses::shedding::DropPolicy;
        public_kept += usize::from(a.decide(item, 0.01).is_some());
        secret_kept += usize::from(b.decide(item, 0.01).is_some());
    }
    assert_eq!(public_kept, 1000);
    assert!(secret_kept < 40, "{secret_kept}");
    // Key grouping under the public routing seed: every crafted key to one worker. The route
    // reads the low half of `routing_hash(key hash, seed)`, a bijection that the adversary
    // inverts (xorshift by 32 is its own inverse; the multiplier's inverse mod 2^64 by Newton).
    let unroute = |target: u64, seed: u64| {
        const MULTIPLIER: u64 = 0xFF51_AFD7_ED55_8CCD;
        let inverse = (0..6).fold(MULTIPLIER, |x, _| x.wrapping_mul(2_u64.wrapping_sub(MULTIPLIER.wrapping_mul(x))));
        let x = target ^ (target >> 32);
        x.wrapping_mul(inverse) ^ seed
    };
    let public = synopses::stream::ROUTING_SEED;
    assert_eq!(synopses::stream::routing_hash(unroute(7 << 32, public), public), 7 << 32);
    let routed: Vec<Vec<u8>> =
        (0..1000_u64).map(|i| item_with_hash(synopses::stream::KEY_SEED, unroute(i << 32, public))).collect();
    let mut public_route = KeyGrouping::new(16)?;
    let mut secret_route = KeyGrouping::with_seed(16, 0x5EC2E7)?;
    for item in &routed {
        public_route.route(item);
        secret_route.route(item);
    }
    assert_eq!(public_route.imbalance(), 15.0);
    assert!(secret_route.imbalance() < 0.5, "{}", secret_route.imbalance());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Quantiles
// ---------------------------------------------------------------------------------------------

/// A quantile sketch's operations: values (the extremes, zeros, subnormals, NaN and
/// infinities among them), weighted values up to `u64::MAX`, merges with a part, with itself
/// and into an empty sketch, and (for KLL) with a sketch of another `k`.
#[derive(Debug, Clone)]
enum Quant {
    Add(Vec<f64>),
    Weighted(Vec<(f64, u64)>),
    MergePart(u64, Vec<f64>),
    MergeOtherK(u16, Vec<f64>),
    MergeSelf(usize),
    IntoEmpty,
}

fn quant_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -1e6_f64..1e6,
        1 => prop::sample::select(vec![
            0.0, -0.0, f64::MAX, -f64::MAX, f64::MIN_POSITIVE, 5e-324, -5e-324, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0,
        ]),
        1 => any::<f64>(),
    ]
}

fn quant_op() -> BoxedStrategy<Quant> {
    let values = || prop::collection::vec(quant_value(), 0..400);
    let weight = prop_oneof![1_u64..1000, Just(u64::MAX), Just(u64::MAX / 3), any::<u64>()];
    prop_oneof![
        4 => values().prop_map(Quant::Add),
        2 => prop::collection::vec((quant_value(), weight), 0..5).prop_map(Quant::Weighted),
        2 => (any::<u64>(), values()).prop_map(|(i, v)| Quant::MergePart(i, v)),
        1 => (8_u16..300, values()).prop_map(|(k, v)| Quant::MergeOtherK(k, v)),
        1 => (1_usize..70).prop_map(Quant::MergeSelf),
        1 => Just(Quant::IntoEmpty),
    ]
    .boxed()
}

impl Reachable for Kll<f64> {
    type Op = Quant;

    fn op() -> BoxedStrategy<Quant> {
        quant_op()
    }

    fn apply(&mut self, op: &Quant) {
        let refused_unchanged = |s: &mut Self, result: Result<(), synopses::ConfigError>, before: &Self| {
            if result.is_err() {
                assert_eq!(s, before, "a refused add changed the sketch");
            }
        };
        match op {
            Quant::Add(values) => {
                for &x in values {
                    let before = self.clone();
                    let r = self.add(x);
                    refused_unchanged(self, r, &before);
                }
            }
            Quant::Weighted(pairs) => {
                for &(x, w) in pairs {
                    let before = self.clone();
                    let r = self.add_weighted(x, w);
                    refused_unchanged(self, r, &before);
                }
            }
            Quant::MergePart(index, values) => {
                let mut part = self.empty_part(*index);
                values.iter().for_each(|&x| synopses::core::Operator::observe(&mut part, x));
                merge_or_unchanged(self, &part);
            }
            Quant::MergeOtherK(k, values) => {
                let mut other = Kll::new(*k, 3).expect("a valid k");
                values.iter().for_each(|&x| synopses::core::Operator::observe(&mut other, x));
                merge_or_unchanged(self, &other);
            }
            Quant::MergeSelf(n) => merge_self_times(self, *n),
            Quant::IntoEmpty => into_empty(self),
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        codec_roundtrip(self)
    }
}

impl Reachable for DDSketch {
    type Op = Quant;

    fn op() -> BoxedStrategy<Quant> {
        quant_op()
    }

    fn apply(&mut self, op: &Quant) {
        match op {
            Quant::Add(values) => values.iter().for_each(|&x| synopses::core::Operator::observe(self, x)),
            Quant::Weighted(pairs) => {
                for &(x, w) in pairs {
                    let before = self.clone();
                    if self.add_weighted(x, w).is_err() {
                        assert_eq!(*self, before, "a refused add changed the sketch");
                    }
                }
            }
            Quant::MergePart(_, values) | Quant::MergeOtherK(_, values) => {
                let mut part = self.empty_like();
                values.iter().for_each(|&x| synopses::core::Operator::observe(&mut part, x));
                merge_or_unchanged(self, &part);
            }
            Quant::MergeSelf(n) => merge_self_times(self, *n),
            Quant::IntoEmpty => into_empty(self),
        }
    }

    fn roundtrip(&self) -> Option<Result<Self, DecodeError>> {
        codec_roundtrip(self)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn kll_states_are_valid(k in 8_u16..=300, seed in any::<u64>(), ops in prop::collection::vec(Kll::<f64>::op(), 0..10)) {
        run(Kll::new(k, seed).expect("a valid k"), &ops)?;
    }

    #[test]
    fn ddsketch_states_are_valid(alpha in 0.001_f64..0.5, bins in 1_u32..=256, ops in prop::collection::vec(DDSketch::op(), 0..10)) {
        run(DDSketch::builder(alpha).max_bins(bins).build().expect("valid"), &ops)?;
    }
}

/// A dense UltraLogLog whose set registers are all at the lowest indices: the scale the coder
/// estimates from one register in every `m/256` sees one set register at most, far from the
/// sketch's, and the coded form is long or written plain; it round-trips either way.
#[test]
fn a_dense_ultraloglog_with_only_its_first_registers_set_round_trips_coded() -> Result<(), TestCaseError> {
    for p in [11_u8, 12, 14] {
        let mut ull = UltraLogLog::new(p).expect("a valid precision");
        // Hashes with the top p bits zero (all in register 0), distinct in the 26 − p bits
        // below them, which is what the sparse mode tells apart.
        (1..1_u64 << (26 - p)).for_each(|j| ull.observe_hash(j << 38 | j));
        prop_assert!(!ull.is_sparse(), "p {p}: dense");
        let coded = ull.to_compressed_bytes();
        prop_assert_eq!(
            &UltraLogLog::from_bytes(&coded).map_err(|e| TestCaseError::fail(format!("p {p}: {e}")))?,
            &ull
        );
        check_state(&ull)?;
    }
    Ok(())
}
