//! The merge contract, checked with proptest for every mergeable type: the partition law (any
//! split of a stream, observed part by part and merged, gives the state of one pass over the
//! whole), commutativity, associativity, the empty identity, idempotence, and
//! serialize → deserialize → merge = in-memory merge. The generators reach every internal
//! mode: HyperLogLog precisions from 4 (dense at the 4th distinct item) to 10 with streams up to
//! 1500 items cross the sparse → dense switch in the middle of streams and of merges.

mod common;

use std::collections::HashMap;
use std::fmt::Debug;

use common::Subject;
use proptest::prelude::*;
use proptest::sample::Index;
use synopses::cardinality::{ExaLogLog, ExaLogLogShape, FlajoletMartin, HyperLogLog, UltraLogLog};
use synopses::core::{Mergeable, Operator};
use synopses::frequency::{CountMin, Update};
use synopses::membership::{Bloom, CounterWidth, CountingBloom};
use synopses::quantiles::{Collapse, DDSketch, IndexMapping};

/// What the laws take of a type: `tests/common`'s `Subject` (answers, codec, merge), fed `u64`
/// items.
trait Lawful: Subject + Operator<u64> {}

impl<S: Subject + Operator<u64>> Lawful for S {}

/// `from_bytes(to_bytes(s))`.
fn roundtrip<S: Subject>(s: &S) -> S {
    S::from_bytes(&s.to_bytes()).expect("own encoding decodes")
}

/// What a sketch with this state answers, bit for bit, without what only its history gives
/// (the martingale, compared separately).
fn state_answers<S: Subject>(s: &S) -> Vec<u64> {
    s.without_history().answers().iter().map(|a| a.to_bits()).collect()
}

fn merged<S: Mergeable + Clone>(a: &S, b: &S) -> S {
    let mut out = a.clone();
    out.merge(b).expect("same configuration");
    out
}

fn observed<S: Lawful>(empty: &S, items: &[u64]) -> S {
    let mut s = empty.clone();
    Operator::observe_all(&mut s, items.iter().copied());
    s
}

/// Splits `items` at the given cut points (in any order, duplicates allowed).
fn split<'a>(items: &'a [u64], cuts: &[Index]) -> Vec<&'a [u64]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(items.len() + 1)).collect();
    at.sort_unstable();
    let mut parts = Vec::new();
    let mut start = 0;
    for cut in at.into_iter().chain([items.len()]) {
        parts.push(&items[start..cut]);
        start = cut;
    }
    parts
}

fn partition_law<S: Lawful>(empty: &S, items: &[u64], cuts: &[Index]) -> Result<(), TestCaseError> {
    let whole = observed(empty, items);
    let mut union = empty.empty_like();
    let parts = split(items, cuts);
    for part in &parts {
        union.merge(&observed(empty, part)).expect("same configuration");
    }
    if parts.iter().filter(|part| !part.is_empty()).count() <= 1 {
        // Merges with the empty sketch only, which keep everything.
        prop_assert_eq!(&union, &whole);
    }
    prop_assert_eq!(union.without_history(), whole.without_history());
    prop_assert_eq!(state_answers(&union), state_answers(&whole));
    Ok(())
}

/// Commutativity, associativity, the empty identity, and serialize → deserialize → merge =
/// in-memory merge; idempotence too where the merge is a maximum (`a ⊕ a` holds the state of
/// `a`, but for a martingale, which ends), not a sum.
fn algebra_laws<S: Lawful>(empty: &S, a: &[u64], b: &[u64], c: &[u64], idempotent: bool) -> Result<(), TestCaseError> {
    let (a, b, c) = (observed(empty, a), observed(empty, b), observed(empty, c));
    // Commutative.
    let ab = merged(&a, &b);
    prop_assert_eq!(&ab, &merged(&b, &a));
    prop_assert_eq!(state_answers(&ab), state_answers(&merged(&b, &a)));
    // Associative.
    prop_assert_eq!(merged(&ab, &c), merged(&a, &merged(&b, &c)));
    // Identity, both sides.
    let e = empty.empty_like();
    prop_assert_eq!(&merged(&a, &e), &a);
    prop_assert_eq!(&merged(&e, &a), &a);
    if idempotent {
        // A self-merge keeps every register (and ends a martingale, which a second one keeps
        // ended).
        let aa = merged(&a, &a);
        prop_assert_eq!(state_answers(&aa), state_answers(&a));
        prop_assert_eq!(&merged(&aa, &a), &aa);
    }
    // Serialize → deserialize → merge equals the in-memory merge.
    let via_bytes = merged(&roundtrip(&a), &roundtrip(&b));
    prop_assert_eq!(&via_bytes, &ab);
    prop_assert_eq!(state_answers(&via_bytes), state_answers(&ab));
    Ok(())
}

/// A type whose sketches of different sizes combine by reducing the finer one.
trait Reducing: Lawful {
    /// The size a sketch reduces to: its precision, or its number of bitmaps.
    fn size(&self) -> usize;
    fn reduce_to(&self, size: usize) -> Self;
    fn merge_reducing(&mut self, other: &Self) -> Result<(), synopses::MergeError>;
}

macro_rules! reducing_by_precision {
    ($($ty:ty),*) => {$(
        impl Reducing for $ty {
            fn size(&self) -> usize {
                usize::from(self.precision())
            }
            fn reduce_to(&self, size: usize) -> Self {
                self.reduce(size as u8).expect("a coarser precision")
            }
            fn merge_reducing(&mut self, other: &Self) -> Result<(), synopses::MergeError> {
                <$ty>::merge_reducing(self, other)
            }
        }
    )*};
}
reducing_by_precision!(HyperLogLog, UltraLogLog, ExaLogLog);

impl Reducing for FlajoletMartin {
    fn size(&self) -> usize {
        self.bitmaps()
    }
    fn reduce_to(&self, size: usize) -> Self {
        self.reduce(size).expect("fewer bitmaps")
    }
    fn merge_reducing(&mut self, other: &Self) -> Result<(), synopses::MergeError> {
        FlajoletMartin::merge_reducing(self, other)
    }
}

/// `fine` and `coarse` empty sketches, and the same `items` observed by both: `fine` reduced to
/// `coarse`'s size is `coarse` without its history, and each reduced to its own size is
/// itself.
fn reduce_law<S: Reducing>(fine: &S, coarse: &S, items: &[u64]) -> Result<(), TestCaseError> {
    let (fine, coarse) = (observed(fine, items), observed(coarse, items));
    let reduced = fine.reduce_to(coarse.size());
    prop_assert_eq!(reduced.without_history(), coarse.without_history());
    prop_assert_eq!(state_answers(&reduced), state_answers(&coarse));
    prop_assert_eq!(&fine.reduce_to(fine.size()), &fine);
    prop_assert_eq!(&coarse.reduce_to(coarse.size()), &coarse);
    Ok(())
}

/// Sketches `a` and `b` of sizes `empty_a` and `empty_b`: a plain merge of different sizes is
/// refused and changes nothing, and `merge_reducing` equals the merge of both reduced to the
/// smaller size, in either order, estimates included.
fn reducing_law<S: Reducing>(empty_a: &S, empty_b: &S, a: &[u64], b: &[u64]) -> Result<(), TestCaseError> {
    let (a, b) = (observed(empty_a, a), observed(empty_b, b));
    let q = a.size().min(b.size());
    let expected = merged(&a.reduce_to(q), &b.reduce_to(q));
    for (x, y) in [(&a, &b), (&b, &a)] {
        let mut strict = x.clone();
        if x.size() != y.size() {
            prop_assert!(strict.merge(y).is_err());
            prop_assert_eq!(&strict, x);
        }
        let mut out = x.clone();
        out.merge_reducing(y).expect("same seed");
        prop_assert_eq!(out.size(), q);
        prop_assert_eq!(&out, &expected);
        prop_assert_eq!(state_answers(&out), state_answers(&expected));
    }
    Ok(())
}

/// Equality means equal answers: `a == b` exactly when their bytes are equal, and then every
/// answer is equal, bit for bit. Checked on pairs that may or may not be equal: a sketch and
/// its round trip, a merge of two streams and one pass over both (equal registers, but the
/// martingale of the one pass only), and a sketch and itself without its history.
fn equality_law<S: Lawful>(empty: &S, a: &[u64], b: &[u64]) -> Result<(), TestCaseError> {
    let (sa, sb) = (observed(empty, a), observed(empty, b));
    let whole: Vec<u64> = a.iter().chain(b).copied().collect();
    let one_pass = observed(empty, &whole);
    let union = merged(&sa, &sb);
    prop_assert_eq!(&roundtrip(&sa), &sa);
    prop_assert_eq!(union.without_history(), one_pass.without_history());
    for (x, y) in [(&sa, &roundtrip(&sa)), (&union, &one_pass), (&one_pass, &one_pass.without_history()), (&sa, &union)]
    {
        prop_assert_eq!(x == y, x.to_bytes() == y.to_bytes(), "{:?} and {:?}", x, y);
        if x == y {
            let bits = |s: &S| s.answers().iter().map(|a| a.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(x), bits(y), "{:?} and {:?}", x, y);
        }
    }
    Ok(())
}

/// Inside a proptest: a fresh `$sketch` fed `$parts` through `observe_all` holds the state, and
/// gives the estimate and the martingale bit for bit, of one fed the same items one by one.
macro_rules! batch_equals_one_by_one {
    ($sketch:expr, $parts:expr) => {{
        let mut batch = $sketch;
        let mut single = batch.clone();
        for part in $parts {
            batch.observe_all(part);
            part.iter().for_each(|x| single.observe(x));
        }
        prop_assert_eq!(&batch, &single);
        prop_assert_eq!(batch.estimate().to_bits(), single.estimate().to_bits());
        prop_assert_eq!(batch.martingale_estimate().map(f64::to_bits), single.martingale_estimate().map(f64::to_bits));
    }};
}

fn items() -> impl Strategy<Value = Vec<u64>> {
    // A small domain gives repeats; lengths reach both modes at every tested precision.
    prop::collection::vec(0..3000_u64, 0..1500)
}

fn widths() -> impl Strategy<Value = CounterWidth> {
    prop_oneof![Just(CounterWidth::Four), Just(CounterWidth::Eight), Just(CounterWidth::Sixteen)]
}

/// Count-Min's counter widths. At 8 bits, streams of up to 1500 items over rows of a few
/// counters saturate some, so the laws are checked across saturation.
fn cm_widths() -> impl Strategy<Value = CounterWidth> {
    prop_oneof![
        Just(CounterWidth::Eight),
        Just(CounterWidth::Sixteen),
        Just(CounterWidth::ThirtyTwo),
        Just(CounterWidth::SixtyFour)
    ]
}

/// Count-Min's update rule.
fn cm_rule(conservative: bool) -> Update {
    if conservative { Update::Conservative } else { Update::Standard }
}

/// A DDSketch of the given configuration (the mapping by its number).
fn ddsketch(alpha: f64, mapping: u8, bins: u32, highest: bool) -> DDSketch {
    let mapping = [IndexMapping::Logarithmic, IndexMapping::LinearInterpolation, IndexMapping::CubicInterpolation]
        [usize::from(mapping)];
    let collapse = if highest { Collapse::Highest } else { Collapse::Lowest };
    DDSketch::builder(alpha).mapping(mapping).max_bins(bins).collapse(collapse).build().expect("valid")
}

/// A DDSketch that added `items` as values of both signs, zeros and 60 orders of magnitude
/// (`tests/common`'s `spread_value`).
fn dd_observed(empty: &DDSketch, items: &[u64]) -> DDSketch {
    let mut s = empty.clone();
    items.iter().for_each(|&i| s.add(common::spread_value(i)).expect("finite"));
    s
}

fn cuts() -> impl Strategy<Value = Vec<Index>> {
    prop::collection::vec(any::<Index>(), 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn hll_partition_law(p in 4_u8..=10, seed in any::<u64>(), items in items(), cuts in cuts()) {
        partition_law(&HyperLogLog::with_seed(p, seed).unwrap(), &items, &cuts)?;
    }

    #[test]
    fn hll_algebra(p in 4_u8..=10, a in items(), b in items(), c in items()) {
        algebra_laws(&HyperLogLog::new(p).unwrap(), &a, &b, &c, true)?;
    }

    #[test]
    fn ull_partition_law(p in 3_u8..=10, seed in any::<u64>(), items in items(), cuts in cuts()) {
        partition_law(&UltraLogLog::with_seed(p, seed).unwrap(), &items, &cuts)?;
    }

    #[test]
    fn ull_algebra(p in 3_u8..=10, a in items(), b in items(), c in items()) {
        algebra_laws(&UltraLogLog::new(p).unwrap(), &a, &b, &c, true)?;
    }

    /// Every (t, d) with registers of up to 32 bits, including d = 0 (no history) and t = 0.
    #[test]
    fn ell_partition_law(p in 2_u8..=9, t in 0_u8..=4, d in 0_u8..=26, seed in any::<u64>(), items in items(), cuts in cuts()) {
        let d = d.min(26 - t);
        partition_law(&ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t, d }, seed).unwrap(), &items, &cuts)?;
    }

    #[test]
    fn ell_algebra(p in 2_u8..=9, t in 0_u8..=4, d in 0_u8..=26, a in items(), b in items(), c in items()) {
        let d = d.min(26 - t);
        algebra_laws(&ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t, d }, 5).unwrap(), &a, &b, &c, true)?;
    }

    /// DDSketch adds counts bucket by bucket: the partition law holds bit for bit, bucket
    /// limits (which collapse the same keys whatever the order) included.
    #[test]
    fn ddsketch_partition_law(alpha in 0.001_f64..0.2, mapping in 0_u8..3, bins in 1_u32..=64, highest in any::<bool>(), items in items(), cuts in cuts()) {
        let empty = ddsketch(alpha, mapping, bins, highest);
        let whole = dd_observed(&empty, &items);
        let mut union = empty.empty_like();
        for part in split(&items, &cuts) {
            union.merge(&dd_observed(&empty, part)).expect("same configuration");
        }
        prop_assert_eq!(&union, &whole);
        prop_assert_eq!(state_answers(&union), state_answers(&whole));
    }

    /// Commutative, associative, the empty identity, and merging decoded sketches is merging
    /// the sketches (a sum: not idempotent).
    #[test]
    fn ddsketch_algebra(alpha in 0.001_f64..0.2, mapping in 0_u8..3, bins in 1_u32..=64, highest in any::<bool>(), a in items(), b in items(), c in items()) {
        let e = ddsketch(alpha, mapping, bins, highest);
        let (a, b, c) = (dd_observed(&e, &a), dd_observed(&e, &b), dd_observed(&e, &c));
        let ab = merged(&a, &b);
        prop_assert_eq!(&ab, &merged(&b, &a));
        prop_assert_eq!(merged(&ab, &c), merged(&a, &merged(&b, &c)));
        prop_assert_eq!(&merged(&a, &e), &a);
        prop_assert_eq!(&merged(&e, &a), &a);
        prop_assert_eq!(merged(&roundtrip(&a), &roundtrip(&b)), ab);
        // Another configuration: an error, and nothing changed.
        let mut other = a.clone();
        prop_assert!(other.merge(&ddsketch(alpha * 1.5, mapping, bins, highest)).is_err());
        prop_assert_eq!(&other, &a);
    }

    /// `a == b` exactly when the bytes are equal, and then every answer is equal.
    #[test]
    fn equal_sketches_answer_alike(p in 3_u8..=10, t in 0_u8..=4, a in items(), b in items()) {
        equality_law(&HyperLogLog::new(p.max(4)).unwrap(), &a, &b)?;
        equality_law(&UltraLogLog::new(p).unwrap(), &a, &b)?;
        equality_law(&ExaLogLog::new(p).unwrap(), &a, &b)?;
        equality_law(&ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t, d: 26 - t }, 2).unwrap(), &a, &b)?;
        equality_law(&FlajoletMartin::new(1 << p).unwrap(), &a, &b)?;
    }

    /// `merge` refuses another precision and changes nothing; `merge_reducing(a, b)` is
    /// `a.reduce(q).merge(b.reduce(q))` at the coarser precision `q`, in either order, for
    /// every type that reduces.
    #[test]
    fn merge_reducing_is_merge_of_the_reduced(p in 3_u8..=10, q in 3_u8..=10, a in items(), b in items()) {
        reducing_law(&HyperLogLog::new(p.max(4)).unwrap(), &HyperLogLog::new(q.max(4)).unwrap(), &a, &b)?;
        reducing_law(&UltraLogLog::new(p).unwrap(), &UltraLogLog::new(q).unwrap(), &a, &b)?;
        reducing_law(&ExaLogLog::new(p).unwrap(), &ExaLogLog::new(q).unwrap(), &a, &b)?;
        reducing_law(&ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t: 1, d: 9 }, 0).unwrap(), &ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: q, t: 1, d: 9 }, 0).unwrap(), &a, &b)?;
        reducing_law(&FlajoletMartin::new(1 << p).unwrap(), &FlajoletMartin::new(1 << q).unwrap(), &a, &b)?;
    }

    /// A reduced sketch is the sketch the coarser precision builds from the same items (but
    /// for the martingale, which a reduction ends), and reducing to its own size changes
    /// nothing.
    #[test]
    fn reduce_equals_direct(p in 3_u8..=10, q in 3_u8..=10, items in items()) {
        let (fine, coarse) = (usize::from(p.max(q)), usize::from(p.min(q)));
        reduce_law(&HyperLogLog::new(fine.max(4) as u8).unwrap(), &HyperLogLog::new(coarse.max(4) as u8).unwrap(), &items)?;
        reduce_law(&UltraLogLog::new(fine as u8).unwrap(), &UltraLogLog::new(coarse as u8).unwrap(), &items)?;
        reduce_law(&ExaLogLog::new(fine as u8).unwrap(), &ExaLogLog::new(coarse as u8).unwrap(), &items)?;
        reduce_law(&ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: fine as u8, t: 3, d: 0 }, 1).unwrap(), &ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: coarse as u8, t: 3, d: 0 }, 1).unwrap(), &items)?;
        reduce_law(&FlajoletMartin::new(1 << fine).unwrap(), &FlajoletMartin::new(1 << coarse).unwrap(), &items)?;
    }

    /// An UltraLogLog's update values are the HyperLogLog registers of the same items.
    #[test]
    fn ull_converts_to_the_hyperloglog_of_the_same_items(p in 3_u8..=10, items in items()) {
        if p < 4 {
            // Below HyperLogLog's precisions: an error, not a sketch its own decoder refuses.
            prop_assert!(UltraLogLog::new(p).unwrap().to_hyperloglog().is_err());
            return Ok(());
        }
        let ull = observed(&UltraLogLog::new(p).unwrap(), &items);
        let hll = ull.to_hyperloglog().unwrap();
        prop_assert_eq!(hll.precision(), p);
        // The sketch that saw the items: the same entries while both are sparse (their sparse
        // modes hold as many), the same registers once both are dense.
        let mut direct = HyperLogLog::new(p).unwrap();
        direct.observe_all(&items);
        prop_assert_eq!(hll.without_history(), direct.without_history());
        prop_assert_eq!(hll.is_sparse(), ull.is_sparse());
        if ull.is_sparse() {
            // Both count their entries exactly.
            prop_assert_eq!(hll.estimate(), ull.estimate());
        }
    }

    #[test]
    fn fm_partition_law(log2 in 0_u32..=10, items in items(), cuts in cuts()) {
        partition_law(&FlajoletMartin::new(1 << log2).unwrap(), &items, &cuts)?;
    }

    #[test]
    fn fm_algebra(log2 in 0_u32..=10, a in items(), b in items(), c in items()) {
        algebra_laws(&FlajoletMartin::new(1 << log2).unwrap(), &a, &b, &c, true)?;
    }

    /// With saturating counters too: `min(a + b, max)` is what one pass gives.
    #[test]
    fn cm_partition_law(width in 1_usize..200, depth in 1_u32..6, counters in cm_widths(), seed in any::<u64>(), items in items(), cuts in cuts()) {
        let empty = CountMin::builder(width, depth).seed(seed).counter_width(counters).build().unwrap();
        partition_law(&empty, &items, &cuts)?;
    }

    #[test]
    fn cm_algebra(width in 1_usize..200, depth in 1_u32..6, counters in cm_widths(), conservative in any::<bool>(), a in items(), b in items(), c in items()) {
        let update = cm_rule(conservative);
        let empty = CountMin::builder(width, depth).update_rule(update).counter_width(counters).build().unwrap();
        algebra_laws(&empty, &a, &b, &c, false)?;
    }

    #[test]
    fn bloom_partition_law(bits in 1_usize..5000, hashes in 1_u32..12, seed in any::<u64>(), items in items(), cuts in cuts()) {
        partition_law(&Bloom::with_seed(bits, hashes, seed).unwrap(), &items, &cuts)?;
    }

    #[test]
    fn bloom_algebra(bits in 1_usize..5000, hashes in 1_u32..12, a in items(), b in items(), c in items()) {
        algebra_laws(&Bloom::new(bits, hashes).unwrap(), &a, &b, &c, true)?;
    }

    /// Small filters with up to 1500 items saturate many 4-bit and some 8-bit counters, so the
    /// laws are checked across saturation: `min(a + b, max)` is what one pass gives.
    #[test]
    fn counting_bloom_partition_law(counters in 1_usize..2000, hashes in 1_u32..12, width in widths(), seed in any::<u64>(), items in items(), cuts in cuts()) {
        partition_law(&CountingBloom::builder(counters, hashes).counter_width(width).seed(seed).build().unwrap(), &items, &cuts)?;
    }

    #[test]
    fn counting_bloom_algebra(counters in 1_usize..2000, hashes in 1_u32..12, width in widths(), a in items(), b in items(), c in items()) {
        algebra_laws(&CountingBloom::builder(counters, hashes).counter_width(width).seed(3).build().unwrap(), &a, &b, &c, false)?;
    }

    /// Any sequence of inserts and removes, against an exact multiset. Removing an item that
    /// is in the multiset succeeds; removing one the filter says is absent fails and changes
    /// nothing; items of the multiset are always found (no false negative, through saturation
    /// too), and their `count` never under-counts unless it saturated. A false positive is
    /// never removed here: that breaks the contract (see the family docs), and
    /// `removing_false_positives_is_outside_the_contract` below shows what it costs.
    #[test]
    fn counting_bloom_against_a_multiset(
        counters in 1_usize..400, hashes in 1_u32..10, width in widths(),
        ops in prop::collection::vec((any::<bool>(), 0..60_u64), 0..1500),
    ) {
        let mut filter = CountingBloom::builder(counters, hashes).counter_width(width).seed(11).build().unwrap();
        let mut model: HashMap<u64, u32> = HashMap::new();
        for (insert, x) in ops {
            let held = model.get(&x).copied().unwrap_or(0);
            if insert {
                filter.observe(x);
                *model.entry(x).or_default() += 1;
            } else if held > 0 {
                prop_assert!(filter.remove(x).is_ok(), "member {} could not be removed", x);
                model.insert(x, held - 1);
            } else if !filter.contains(x) {
                let before = filter.clone();
                prop_assert!(filter.remove(x).is_err());
                prop_assert_eq!(&filter, &before);
            }
            for (&y, &n) in &model {
                prop_assert!(n == 0 || filter.contains(y), "false negative: {} held {} times", y, n);
                let count = filter.estimate(y);
                prop_assert!(count >= u64::from(n) || count == width.max(), "count {} < {} for {}", count, n, y);
            }
            prop_assert_eq!(filter.total(), model.values().map(|&n| u64::from(n)).sum::<u64>());
        }
        // A counter that never saturated is exact (saturated counters never come back down),
        // so without saturation the filter is the one built from the multiset directly.
        if filter.saturated_counters() == 0 {
            let mut direct = filter.empty_like();
            for (&y, &n) in &model {
                (0..n).for_each(|_| direct.observe(y));
            }
            prop_assert_eq!(&filter, &direct);
            let mut bloom = Bloom::with_seed(counters, hashes, 11).unwrap();
            bloom.observe_all(model.iter().filter(|&(_, &n)| n > 0).map(|(&y, _)| y));
            prop_assert_eq!(filter.to_bloom(), bloom);
        }
    }

    /// Converting between widths keeps every member, and widening then narrowing back is the
    /// identity.
    #[test]
    fn counting_bloom_width_conversions(counters in 1_usize..400, hashes in 1_u32..8, from in widths(), to in widths(), items in items()) {
        let filter = observed(&CountingBloom::builder(counters, hashes).counter_width(from).seed(5).build().unwrap(), &items);
        let converted = filter.with_counter_width(to).unwrap();
        prop_assert!(items.iter().all(|&x| converted.contains(x)));
        prop_assert_eq!(converted.to_bloom(), filter.to_bloom());
        prop_assert_eq!(converted.total(), filter.total());
        if to.bits() >= from.bits() {
            prop_assert_eq!(converted.with_counter_width(from).unwrap(), filter);
        }
    }

    /// Against an exact `HashSet`: no false negatives, ever, and an empty filter holds nothing.
    #[test]
    fn bloom_has_no_false_negatives(bits in 1_usize..20_000, hashes in 1_u32..16, items in prop::collection::vec(any::<u64>(), 0..2000)) {
        let empty = Bloom::new(bits, hashes).unwrap();
        prop_assert!(items.iter().all(|x| !empty.contains(x)));
        let filter = observed(&empty, &items);
        prop_assert!(items.iter().all(|x| filter.contains(x)));
    }

    /// Against an exact `HashMap`: neither rule ever under-counts (but for an answer at the
    /// counters' maximum, which says "saturated"), and the conservative estimate is never
    /// above the standard one on the same stream (uniform and skewed keys, weighted counts).
    #[test]
    fn cm_never_undercounts(width in 1_usize..300, depth in 1_u32..6, counters in cm_widths(), skew in any::<bool>(),
                            stream in prop::collection::vec((0..5000_u64, 1..20_u64), 0..2000)) {
        let builder = CountMin::builder(width, depth).seed(3).counter_width(counters);
        let standard = builder.build().unwrap();
        let conservative = builder.update_rule(Update::Conservative).build().unwrap();
        let (mut cm, mut cu) = (standard.empty_like(), conservative.empty_like());
        let mut truth = std::collections::HashMap::new();
        for &(key, count) in &stream {
            // A square root of a uniform key concentrates the stream on small keys.
            let key = if skew { (key as f64).sqrt() as u64 } else { key };
            cm.observe_weighted(key, count);
            cu.observe_weighted(key, count);
            *truth.entry(key).or_insert(0_u64) += count;
        }
        let max = counters.max();
        for (&key, &f) in &truth {
            prop_assert!(f <= cu.estimate(key) || cu.estimate(key) == max, "key {key}: {f}");
            prop_assert!(cu.estimate(key) <= cm.estimate(key), "key {key}: {f}");
            // The upper bound holds always, saturated or not.
            prop_assert!(f as f64 <= cm.bounds(key).upper && f as f64 <= cu.bounds(key).upper, "key {key}: {f}");
        }
        let n: u64 = truth.values().sum();
        prop_assert_eq!((cm.total(), cu.total()), (n, n));
    }

    /// Under the standard rule a narrow counter is its 64-bit counterpart clamped at the
    /// maximum, and the minimum commutes with the clamp: a narrow sketch answers exactly
    /// `min(64-bit estimate, max)`, whether built in one pass or merged from parts.
    #[test]
    fn cm_narrow_counters_are_the_wide_ones_clamped(
        width in 1_usize..100, depth in 1_u32..5, counters in cm_widths(),
        stream in prop::collection::vec((0..300_u64, 1..200_u64), 0..500), cuts in cuts(),
    ) {
        let wide = CountMin::builder(width, depth).seed(5).build().unwrap();
        let narrow = CountMin::builder(width, depth).seed(5).counter_width(counters).build().unwrap();
        let (mut w, mut n) = (wide.clone(), narrow.clone());
        for &(key, count) in &stream {
            w.observe_weighted(key, count);
            n.observe_weighted(key, count);
        }
        let keys: Vec<u64> = stream.iter().map(|&(k, _)| k).collect();
        let mut merged = narrow.empty_like();
        for part in split(&keys, &cuts) {
            let mut piece = narrow.clone();
            part.iter().for_each(|&k| piece.observe(k));
            merged.merge(&piece).unwrap();
        }
        let once = observed(&narrow, &keys);
        let wide_once = observed(&wide, &keys);
        for key in 0..300_u64 {
            prop_assert_eq!(n.estimate(key), w.estimate(key).min(counters.max()));
            prop_assert_eq!(once.estimate(key), wide_once.estimate(key).min(counters.max()));
        }
        prop_assert_eq!(&merged, &once);
        prop_assert_eq!(n.total(), w.total());
    }

    /// Conservative update is not linear, so its merge is not the sketch of the whole stream.
    /// What the docs promise holds instead: every merged estimate is at least the true count
    /// and at most the standard sketch's estimate over the whole stream.
    #[test]
    fn cu_merge_is_sandwiched(width in 1_usize..100, depth in 1_u32..5, counters in cm_widths(), items in items(), cuts in cuts()) {
        let builder = CountMin::builder(width, depth).counter_width(counters);
        let cu = builder.update_rule(Update::Conservative).build().unwrap();
        let mut union = cu.empty_like();
        for part in split(&items, &cuts) {
            union.merge(&observed(&cu, part)).unwrap();
        }
        let standard = observed(&builder.build().unwrap(), &items);
        let mut truth = std::collections::HashMap::new();
        items.iter().for_each(|&x| *truth.entry(x).or_insert(0_u64) += 1);
        for (&x, &f) in &truth {
            prop_assert!(f <= union.estimate(x) || union.estimate(x) == counters.max());
            prop_assert!(union.estimate(x) <= standard.estimate(x));
        }
        prop_assert_eq!(union.total(), items.len() as u64);
    }

    /// Merging in the empty sketch, or merging a sketch into the empty one, changes nothing:
    /// not even the martingale estimate, bit for bit.
    #[test]
    fn hll_empty_merge_keeps_every_estimate(p in 4_u8..=10, a in items()) {
        let a = observed(&HyperLogLog::new(p).unwrap(), &a);
        for m in [merged(&a, &a.empty_like()), merged(&a.empty_like(), &a)] {
            prop_assert_eq!(m.estimate().to_bits(), a.estimate().to_bits());
            prop_assert_eq!(m.martingale_estimate().map(f64::to_bits), a.martingale_estimate().map(f64::to_bits));
        }
    }

    /// The batch path gives the state, and the estimates bit for bit, of observing one by one,
    /// across the sparse → dense switch and from a non-empty start.
    #[test]
    fn observe_all_equals_one_by_one(p in 4_u8..=10, head in items(), tail in items()) {
        batch_equals_one_by_one!(HyperLogLog::new(p).unwrap(), [&head, &tail]);

        let mut batch = FlajoletMartin::new(1 << (p - 4)).unwrap();
        let mut single = batch.clone();
        batch.observe_all(&head);
        head.iter().for_each(|x| single.observe(x));
        prop_assert_eq!(batch, single);
    }

    /// The same for UltraLogLog and ExaLogLog (whose batch path, once dense, has no sparse
    /// branch): every shape kind, the constant ones and a run-time one.
    #[test]
    fn history_observe_all_equals_one_by_one(p in 3_u8..=10, t in 0_u8..=4, head in items(), tail in items()) {
        batch_equals_one_by_one!(UltraLogLog::new(p).unwrap(), [&head, &tail]);
        for (t, d) in [(2, 20), (t, 26 - t), (t, 0)] {
            batch_equals_one_by_one!(ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: p, t, d }, 3).unwrap(), [&head, &tail]);
        }
    }

    /// Count-Min's batch path (the depth as a constant for depths 1 to 8, the run-time depth
    /// above) gives the state of observing one by one, for both rules, and from a start whose
    /// total is within a few counts of saturating.
    #[test]
    fn cm_observe_all_equals_one_by_one(
        width in 1_usize..300, depth in 1_u32..12, counters in cm_widths(), conservative in any::<bool>(),
        head in 0_u64..=u64::MAX, near_full in any::<bool>(), items in items(),
    ) {
        let builder = CountMin::builder(width, depth).seed(9).update_rule(cm_rule(conservative));
        let mut batch = builder.counter_width(counters).build().unwrap();
        batch.observe_weighted(0_u64, if near_full { u64::MAX - 3 } else { head % 1000 });
        let mut single = batch.clone();
        batch.observe_all(&items);
        items.iter().for_each(|x| single.observe(x));
        prop_assert_eq!(&batch, &single);
        for k in 0..20_u64 {
            prop_assert_eq!(batch.estimate(k), single.estimate(k));
        }
    }

    /// While sparse, the sketch is exact (it agrees with a `HashSet`) but for items whose 32-bit
    /// entries coincide: with at most 150 items the number of such pairs is Poisson with mean
    /// at most 150²/2 · 2^-26/3 ≈ 5.6e-5, so more than one happens once in 10^9 cases.
    #[test]
    fn hll_sparse_mode_is_exact(p in 10_u8..=18, items in prop::collection::vec(any::<u64>(), 0..150)) {
        let h = observed(&HyperLogLog::new(p).unwrap(), &items);
        let exact = items.iter().collect::<std::collections::HashSet<_>>().len() as f64;
        prop_assert!(h.is_sparse());
        prop_assert!(h.estimate() <= exact && exact - h.estimate() <= 1.0, "{} for {exact}", h.estimate());
        prop_assert!(h.bounds(synopses::core::Confidence::ThreeSigma).contains(exact));
    }

    /// A merge of two non-empty sketches that leaves a dense sketch has no martingale (it would
    /// describe neither stream), whichever modes the two were in.
    #[test]
    fn hll_merges_end_the_martingale(p in 4_u8..=10, a in items(), b in items()) {
        let (a, b) = (observed(&HyperLogLog::new(p).unwrap(), &a), observed(&HyperLogLog::new(p).unwrap(), &b));
        let empty = HyperLogLog::new(p).unwrap();
        prop_assume!(a != empty && b != empty);
        for m in [merged(&a, &b), merged(&b, &a)] {
            prop_assert!(m.is_sparse() || m.martingale_estimate().is_none());
        }
    }
}

#[test]
fn mismatched_merges_fail_and_change_nothing() -> Result<(), Box<dyn std::error::Error>> {
    let mut a = HyperLogLog::with_seed(10, 1)?;
    a.observe_all(0..5000_u64);
    let before = a.clone();
    for (other, parameter) in [(HyperLogLog::with_seed(11, 1)?, "precision"), (HyperLogLog::with_seed(10, 2)?, "seed")]
    {
        assert_eq!(a.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(a, before);
        assert_eq!(a.estimate().to_bits(), before.estimate().to_bits());
    }
    let mut f = FlajoletMartin::with_seed(64, 1)?;
    f.observe_all(0..5000_u64);
    let before = f.clone();
    for (other, parameter) in
        [(FlajoletMartin::with_seed(128, 1)?, "bitmaps"), (FlajoletMartin::with_seed(64, 2)?, "seed")]
    {
        assert_eq!(f.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(f, before);
    }
    Ok(())
}

#[cfg(feature = "rayon")]
mod parallel {
    use super::*;
    use synopses::core::OperatorExt;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Observing in parallel gives the state of a sequential pass, whatever rayon's split.
        #[test]
        fn par_observe_equals_sequential(p in 4_u8..=12, items in prop::collection::vec(any::<u64>(), 0..20_000)) {
            let mut par = HyperLogLog::new(p).unwrap();
            par.par_observe(&items);
            prop_assert_eq!(par.without_history(), observed(&HyperLogLog::new(p).unwrap(), &items).without_history());

            let mut par = FlajoletMartin::new(1 << (p - 4)).unwrap();
            par.par_observe(&items);
            prop_assert_eq!(par, observed(&FlajoletMartin::new(1 << (p - 4)).unwrap(), &items));
        }
    }

    #[test]
    fn par_observe_into_a_non_empty_sketch() -> Result<(), synopses::ConfigError> {
        let items: Vec<u64> = (0..200_000).collect();
        let mut par = HyperLogLog::new(12)?;
        par.observe_all(&items[..1000]);
        par.par_observe(&items[1000..]);
        let mut seq = HyperLogLog::new(12)?;
        seq.observe_all(&items);
        assert_eq!(par.without_history(), seq.without_history());
        Ok(())
    }
}

mod heavy_hitters {
    use super::*;
    use std::collections::HashMap;
    use synopses::frequency::HeavyHitters;

    /// The deterministic guarantee against the exact counts: every kept count is within
    /// `error` below the truth, `error ≤ N/(k+1)`, and every item above `error` is kept.
    fn guarantee_holds(hh: &HeavyHitters<u64>, stream: &[u64]) -> Result<(), TestCaseError> {
        let mut truth: HashMap<u64, u64> = HashMap::new();
        stream.iter().for_each(|&x| *truth.entry(x).or_insert(0) += 1);
        let n = stream.len() as u64;
        prop_assert_eq!(hh.total(), n);
        prop_assert!(hh.error() <= n / (hh.capacity() as u64 + 1), "error {} for N {}", hh.error(), n);
        for (&x, &f) in &truth {
            let est = hh.estimate(&x);
            prop_assert!(est <= f && f <= est + hh.error(), "item {}: {} kept for {}", x, est, f);
        }
        for (x, c) in hh.top(usize::MAX) {
            prop_assert!(truth.get(&x).is_some_and(|&f| c <= f), "kept {} was never seen so often", x);
        }
        Ok(())
    }

    fn summary(capacity: usize, items: &[u64]) -> HeavyHitters<u64> {
        let mut hh = HeavyHitters::new(capacity).unwrap();
        hh.observe_all(items.iter().copied());
        hh
    }

    fn merged_of(a: &HeavyHitters<u64>, b: &HeavyHitters<u64>) -> HeavyHitters<u64> {
        let mut out = a.clone();
        out.merge(b).unwrap();
        out
    }

    /// Skewed streams (a square root of a uniform key) so that some items are frequent.
    fn stream() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec((0..4000_u64).prop_map(|x| (x as f64).sqrt() as u64), 0..1500)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The partition law of a summary that is not linear: any split, merged in order, keeps
        /// the guarantee for the whole stream, as one pass does.
        #[test]
        fn guarantee_on_any_split(capacity in 1_usize..40, items in stream(), cuts in cuts()) {
            guarantee_holds(&summary(capacity, &items), &items)?;
            let mut union = HeavyHitters::new(capacity).unwrap();
            for part in split(&items, &cuts) {
                union.merge(&summary(capacity, part)).unwrap();
            }
            guarantee_holds(&union, &items)?;
        }

        /// Commutative and with the empty identity exactly; associative in guarantee; and
        /// serialize → deserialize → merge equals the in-memory merge.
        #[test]
        fn hh_algebra(capacity in 1_usize..40, a in stream(), b in stream(), c in stream()) {
            let (sa, sb, sc) = (summary(capacity, &a), summary(capacity, &b), summary(capacity, &c));
            prop_assert_eq!(merged_of(&sa, &sb), merged_of(&sb, &sa));
            let empty = HeavyHitters::new(capacity).unwrap();
            prop_assert_eq!(&merged_of(&sa, &empty), &sa);
            prop_assert_eq!(&merged_of(&empty, &sa), &sa);
            let all: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
            guarantee_holds(&merged_of(&merged_of(&sa, &sb), &sc), &all)?;
            guarantee_holds(&merged_of(&sa, &merged_of(&sb, &sc)), &all)?;
            let decoded = |s: &HeavyHitters<u64>| HeavyHitters::<u64>::from_bytes(&s.to_bytes()).unwrap();
            prop_assert_eq!(merged_of(&decoded(&sa), &decoded(&sb)), merged_of(&sa, &sb));
        }

        #[test]
        fn mismatched_capacities_do_not_merge(a in 1_usize..40, b in 1_usize..40, items in stream()) {
            prop_assume!(a != b);
            let mut x = summary(a, &items);
            let before = x.clone();
            prop_assert_eq!(x.merge(&summary(b, &items)).map_err(|e| e.parameter()), Err("capacity"));
            prop_assert_eq!(x, before);
        }
    }
}

/// The limit of every counting Bloom filter, pinned so the docs stay true. The issue's
/// scenario: 10^4 members at a 1 % design, then removals tried on 10^5 items that were never
/// inserted. Removals of items the filter knows to be absent fail and change nothing; the
/// ~1 % that are false positives cannot be told from members, are removed, and their
/// decrements zero counters that members relied on. Removing the members themselves, the
/// contract, never does.
#[test]
fn removing_false_positives_is_outside_the_contract() -> Result<(), Box<dyn std::error::Error>> {
    const MEMBERS: u64 = 10_000;
    let mut filter = CountingBloom::with_false_positive_rate(MEMBERS, 0.01)?;
    filter.observe_all(0..MEMBERS);
    let full = filter.clone();

    let mut refused = 0;
    let mut removed = 0;
    for stranger in MEMBERS..11 * MEMBERS {
        let before_contains = filter.contains(stranger);
        match filter.remove(stranger) {
            Ok(()) => {
                assert!(before_contains);
                removed += 1;
            }
            Err(_) => {
                assert!(!before_contains);
                refused += 1;
            }
        }
    }
    let false_negatives = (0..MEMBERS).filter(|&x| !filter.contains(x)).count();
    println!("{removed} false positives removed, {refused} refused: {false_negatives} members lost");
    assert_eq!(refused + removed, 10 * MEMBERS);
    assert!(removed > 0 && false_negatives > 0, "the limit the docs describe did not show");

    // The contract: remove only members. Half of them go; the other half all stay.
    let mut filter = full;
    (0..MEMBERS / 2).try_for_each(|x| filter.remove(x))?;
    assert!((MEMBERS / 2..MEMBERS).all(|x| filter.contains(x)));
    assert_eq!(filter.total(), MEMBERS / 2);
    Ok(())
}

mod sampling {
    use super::*;
    use synopses::core::Weight;
    use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};

    /// Three instances of distinct random streams, as parts of one stream would be.
    fn parts(capacity: usize, streams: [&[u64]; 3]) -> [Reservoir<u64>; 3] {
        let whole = Reservoir::new(capacity, 7).unwrap();
        let mut out = [0, 1, 2].map(|i| whole.empty_part(i));
        for (r, items) in out.iter_mut().zip(streams) {
            r.observe_all(items.iter().copied());
        }
        out
    }

    fn merged<S: Mergeable + Clone>(a: &S, b: &S) -> S {
        let mut out = a.clone();
        out.merge(b).expect("distinct streams");
        out
    }

    /// A sample as a comparable value: the items in key order, and the count.
    fn content(r: &Reservoir<u64>) -> (Vec<u64>, u64) {
        (r.clone().into_vec(), r.seen())
    }

    fn small() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(any::<u64>(), 0..300)
    }

    proptest! {
        /// Merging keeps the smallest keys of both: commutative and associative in the sample,
        /// the empty instance an identity on both sides, whatever the sizes (parts smaller
        /// than the capacity included), and through bytes the same as in memory.
        #[test]
        fn reservoir_merge_algebra(capacity in 1_usize..60, a in small(), b in small(), c in small()) {
            let [a, b, c] = parts(capacity, [&a, &b, &c]);
            let ab = merged(&a, &b);
            prop_assert_eq!(content(&ab), content(&merged(&b, &a)));
            prop_assert_eq!(content(&merged(&ab, &c)), content(&merged(&a, &merged(&b, &c))));
            prop_assert_eq!(&merged(&a, &a.empty_like()), &a);
            prop_assert_eq!(&merged(&a.empty_like(), &a), &a);
            let via_bytes = merged(&Reservoir::from_bytes(&a.to_bytes()).unwrap(), &Reservoir::from_bytes(&b.to_bytes()).unwrap());
            prop_assert_eq!(&via_bytes, &ab);
            prop_assert_eq!(ab.len() as u64, (a.seen() + b.seen()).min(capacity as u64));
        }

        /// Every entry point draws the same random numbers at the same items, so they give
        /// the same sample: one by one, an iterator of known length (skipped with `nth`), one of
        /// unknown length, a slice, and any of them in several calls.
        #[test]
        fn reservoir_entry_points_agree(capacity in 1_usize..40, n in 0_u64..3000, cut in any::<Index>(), seed in any::<u64>()) {
            let mut one = Reservoir::new(capacity, seed).unwrap();
            (0..n).for_each(|i| one.observe(i));
            let mut exact = Reservoir::new(capacity, seed).unwrap();
            let at = cut.index(n as usize + 1) as u64;
            exact.observe_all(0..at);
            exact.observe_all(at..n);
            let mut unknown = Reservoir::new(capacity, seed).unwrap();
            unknown.observe_all((0..n).filter(|_| true));
            let items: Vec<u64> = (0..n).collect();
            let mut slice = Reservoir::new(capacity, seed).unwrap();
            slice.observe_slice(&items[..at as usize]);
            slice.observe_slice(&items[at as usize..]);
            prop_assert_eq!(&exact, &one);
            prop_assert_eq!(&unknown, &one);
            prop_assert_eq!(&slice, &one);
            prop_assert_eq!(exact.random_draws(), one.random_draws());
            // Row numbers made into items only when they enter: the same sample.
            let mut made = Reservoir::new(capacity, seed).unwrap();
            made.observe_all_with(0..at, |i| i);
            made.observe_all_with((at..n).filter(|_| true), |i| i);
            prop_assert_eq!(&made, &one);
        }

        /// `map` changes the items and nothing else: a mapped sampler continues and merges as
        /// the original would have, then mapped.
        #[test]
        fn mapped_samplers_continue_and_merge_as_the_original(capacity in 1_usize..40, seed in any::<u64>(),
                                                               n in 0_u64..2000, m in 0_u64..2000) {
            let mut whole = Reservoir::new(capacity, seed).unwrap();
            whole.observe_all(0..n);
            let mut other = whole.empty_part(1);
            other.observe_all(n..n + m);
            let mut mapped = whole.clone().map(|i| i.to_string());
            mapped.observe_all((n..n + 2 * m).map(|i| i.to_string()));
            mapped.merge(&other.clone().map(|i| i.to_string())).unwrap();
            whole.observe_all(n..n + 2 * m);
            whole.merge(&other).unwrap();
            prop_assert_eq!(&mapped, &whole.map(|i| i.to_string()));

            let weight = |i: u64| Weight::new(1.0 + (i % 17) as f64).unwrap();
            let mut whole = WeightedReservoir::new(capacity, seed).unwrap();
            whole.observe_all((0..n).map(|i| (i, weight(i))));
            let mut other = whole.empty_part(1);
            other.observe_all((n..n + m).map(|i| (i, weight(i))));
            let mut mapped = whole.clone().map(|i| i.to_string());
            mapped.observe_all_with((n..n + 2 * m).map(|i| (i, weight(i))), |i| i.to_string());
            mapped.merge(&other.clone().map(|i| i.to_string())).unwrap();
            whole.observe_all((n..n + 2 * m).map(|i| (i, weight(i))));
            whole.merge(&other).unwrap();
            prop_assert_eq!(&mapped, &whole.map(|i| i.to_string()));
        }

        /// The batch entry points of the weighted samplers make the draws, and so the samples,
        /// of observing one by one.
        #[test]
        fn weighted_batch_equals_one_by_one(capacity in 1_usize..40, seed in any::<u64>(),
                                            pairs in prop::collection::vec((any::<u64>(), 0.001_f64..1e6), 0..400)) {
            let pairs: Vec<(u64, Weight)> = pairs.into_iter().map(|(x, w)| (x, Weight::new(w).unwrap())).collect();
            let mut one = WeightedReservoir::new(capacity, seed).unwrap();
            pairs.iter().for_each(|&(x, w)| one.observe_weighted(x, w));
            let mut batch = WeightedReservoir::new(capacity, seed).unwrap();
            batch.observe_all(pairs.iter().copied());
            prop_assert_eq!(&batch, &one);
            prop_assert_eq!(batch.random_draws(), one.random_draws());
            let mut one = PrioritySample::new(capacity, seed).unwrap();
            pairs.iter().for_each(|&(x, w)| one.observe_weighted(x, w));
            let mut batch = PrioritySample::new(capacity, seed).unwrap();
            batch.observe_all(pairs.iter().copied());
            prop_assert_eq!(&batch, &one);
        }

        #[test]
        fn weighted_merge_algebra(capacity in 1_usize..40, a in small(), b in small(), c in small()) {
            let whole = WeightedReservoir::new(capacity, 3).unwrap();
            let [a, b, c] = [(0, a), (1, b), (2, c)].map(|(i, items)| {
                let mut r = whole.empty_part(i);
                items.iter().for_each(|&x| r.observe_weighted(x, Weight::new(1.0 + (x % 100) as f64).unwrap()));
                r
            });
            let content = |r: &WeightedReservoir<u64>| (r.clone().into_vec(), r.seen());
            let ab = merged(&a, &b);
            prop_assert_eq!(content(&ab), content(&merged(&b, &a)));
            prop_assert_eq!(content(&merged(&ab, &c)), content(&merged(&a, &merged(&b, &c))));
            prop_assert_eq!(&merged(&a, &a.empty_like()), &a);
            let via_bytes = merged(&WeightedReservoir::from_bytes(&a.to_bytes()).unwrap(), &WeightedReservoir::from_bytes(&b.to_bytes()).unwrap());
            prop_assert_eq!(content(&via_bytes), content(&ab));
        }

        /// The priority sample's subset sums are those of its kept items whatever the merge
        /// order, and exact while no more than `capacity` items were seen.
        #[test]
        fn priority_merge_algebra(capacity in 1_usize..40, a in small(), b in small(), c in small()) {
            let whole = PrioritySample::new(capacity, 5).unwrap();
            let [a, b, c] = [(0, a), (1, b), (2, c)].map(|(i, items)| {
                let mut r = whole.empty_part(i);
                items.iter().for_each(|&x| r.observe_weighted(x, Weight::new(1.0 + (x % 100) as f64).unwrap()));
                r
            });
            let sums = |p: &PrioritySample<u64>| {
                let mut kept: Vec<(u64, u64)> = p.sample().map(|(&x, _, est)| (x, est.to_bits())).collect();
                kept.sort_unstable();
                (kept, p.seen(), p.threshold().to_bits())
            };
            let ab = merged(&a, &b);
            prop_assert_eq!(sums(&ab), sums(&merged(&b, &a)));
            prop_assert_eq!(sums(&merged(&ab, &c)), sums(&merged(&a, &merged(&b, &c))));
            prop_assert_eq!(&merged(&a, &a.empty_like()), &a);
            let via_bytes = merged(&PrioritySample::from_bytes(&a.to_bytes()).unwrap(), &PrioritySample::from_bytes(&b.to_bytes()).unwrap());
            prop_assert_eq!(sums(&via_bytes), sums(&ab));
            if ab.seen() <= capacity as u64 {
                prop_assert_eq!(ab.subset_sum(|_| true).value, ab.total_weight());
                prop_assert_eq!(ab.subset_sum(|_| true).variance, 0.0);
            }
        }
    }

    /// Two non-empty instances of one random stream would give their items identical keys:
    /// the merge is refused and changes nothing, for every sampler.
    #[test]
    fn merging_one_random_stream_twice_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let mut r = Reservoir::new(10, 1)?;
        r.observe_all(0..100_u64);
        let mut twin = r.empty_like();
        twin.observe_all(100..200_u64);
        let before = r.clone();
        assert_eq!(r.merge(&twin).map_err(|e| e.parameter()), Err("random stream"));
        assert_eq!(r.merge(&r.clone()).map_err(|e| e.parameter()), Err("random stream"));
        assert_eq!(r, before);
        assert!(r.merge(&r.empty_part(0)).is_ok()); // empty, and another stream
        let mut part = r.empty_part(0);
        part.observe(5);
        assert!(r.merge(&part).is_ok());
        assert_eq!(r.merge(&Reservoir::new(11, 9)?).map_err(|e| e.parameter()), Err("capacity"));

        let mut w = WeightedReservoir::new(3, 1)?;
        w.observe_weighted(1_u64, Weight::ONE);
        assert_eq!(w.merge(&w.clone()).map_err(|e| e.parameter()), Err("random stream"));
        let mut p = PrioritySample::new(3, 1)?;
        p.observe_weighted(1_u64, Weight::ONE);
        assert_eq!(p.merge(&p.clone()).map_err(|e| e.parameter()), Err("random stream"));
        Ok(())
    }

    /// Parts made by `empty_part` at different points of the parent's history draw different
    /// streams, so observing in two rounds of parts does not repeat keys.
    #[test]
    fn parts_of_later_rounds_draw_new_streams() -> Result<(), Box<dyn std::error::Error>> {
        let mut whole = Reservoir::new(50, 3)?;
        for round in 0..2_u64 {
            let mut part = whole.empty_part(0);
            part.observe_all(round * 1000..(round + 1) * 1000);
            whole.merge(&part)?;
        }
        // With repeated streams, item i and item 1000 + i would have equal keys, and the
        // sample would hold both or neither of every such pair.
        let items = whole.into_vec();
        let paired = items.iter().filter(|&&x| items.contains(&((x + 1000) % 2000))).count();
        assert!(paired < items.len(), "every sampled item came with its twin");
        Ok(())
    }
}

#[cfg(feature = "rayon")]
mod parallel_quantiles {
    use synopses::core::OperatorExt;
    use synopses::quantiles::{DDSketch, Kll, Search};

    /// A KLL sketch observed in parallel keeps the count and extremes, and its ranks stay
    /// within twice the a priori error `ε` (the parts draw their own coins, and how many there
    /// are depends on rayon's threads): `ε` is the 99th percentile of a roughly normal error, so
    /// `2ε ≥ 5.2σ`, a tail below 2·10⁻⁷ per query. A DDSketch observed in parallel is the
    /// sequential one.
    #[test]
    fn par_observe_of_quantile_sketches() -> Result<(), Box<dyn std::error::Error>> {
        let values: Vec<f64> = (0..200_000_u64).map(|i| ((i * 7919) % 200_000) as f64).collect();
        let mut kll = Kll::new(200, 3)?;
        kll.par_observe(&values);
        assert_eq!((kll.count(), kll.min(), kll.max()), (200_000, Some(&0.0), Some(&199_999.0)));
        for x in [20_000.0, 100_000.0, 190_000.0] {
            let rank = kll.rank(&x, Search::Inclusive)?.ok_or("empty")?;
            assert!((rank - (x + 1.0) / 200_000.0).abs() <= 2.0 * kll.rank_error(), "rank of {x}: {rank}");
        }
        let (mut parallel, mut sequential) = (DDSketch::new(0.01)?, DDSketch::new(0.01)?);
        parallel.par_observe(&values);
        values.iter().try_for_each(|&x| sequential.add(x))?;
        assert_eq!(parallel, sequential);
        Ok(())
    }
}

#[cfg(feature = "rayon")]
mod parallel_sampling {
    use synopses::core::OperatorExt;
    use synopses::sampling::Reservoir;

    /// The same seed and thread count give the same sample; the sample covers all parts.
    #[test]
    fn par_observe_is_reproducible() -> Result<(), synopses::ConfigError> {
        let items: Vec<u64> = (0..100_000).collect();
        let mut a = Reservoir::new(100, 9)?;
        a.par_observe(&items);
        let mut b = Reservoir::new(100, 9)?;
        b.par_observe(&items);
        assert_eq!(a, b);
        assert_eq!((a.seen(), a.len()), (100_000, 100));
        Ok(())
    }
}

mod shedding {
    use super::*;
    use synopses::core::Weight;
    use synopses::shedding::{DropPolicy, FixedRate, HorvitzThompson, KeyHashDrop, LoadShedder, RandomDrop};

    proptest! {
        /// A key-hash shedder in front of a sketch is deterministic, so the partition law holds
        /// exactly: parts shed and observed apart, then merged, equal one pass.
        #[test]
        fn key_hash_shedder_partition_law(p in 0.01_f64..=1.0, items in items(), cuts in cuts()) {
            let make = || LoadShedder::unweighted(HyperLogLog::new(8).unwrap(), KeyHashDrop::new(), FixedRate::new(p).unwrap());
            let mut whole = make();
            for &x in &items {
                whole.observe(x);
            }
            let mut union = make();
            for (i, part) in split(&items, &cuts).into_iter().enumerate() {
                let mut shed = union.empty_part(i as u64);
                for &x in part {
                    shed.observe(x);
                }
                union.merge(&shed).unwrap();
            }
            prop_assert_eq!(union.inner().without_history(), whole.inner().without_history());
            prop_assert_eq!(union.stats(), whole.stats());
        }

        /// Horvitz–Thompson sums merge by addition: commutative exactly, associative up to the
        /// rounding of a few additions, the empty estimator an identity.
        #[test]
        fn horvitz_thompson_merge_algebra(a in prop::collection::vec((0.0_f64..1e3, 1.0_f64..100.0), 0..50),
                                          b in prop::collection::vec((0.0_f64..1e3, 1.0_f64..100.0), 0..50),
                                          c in prop::collection::vec((0.0_f64..1e3, 1.0_f64..100.0), 0..50)) {
            let of = |pairs: &[(f64, f64)]| {
                let mut ht = HorvitzThompson::new();
                pairs.iter().for_each(|&(v, w)| ht.observe_weighted(v, Weight::new(w).unwrap()));
                ht
            };
            let (a, b, c) = (of(&a), of(&b), of(&c));
            let merged = |x: &HorvitzThompson, y: &HorvitzThompson| { let mut m = *x; m.merge(y).unwrap(); m };
            prop_assert_eq!(merged(&a, &b), merged(&b, &a));
            prop_assert_eq!(merged(&a, &HorvitzThompson::new()), a);
            let (left, right) = (merged(&merged(&a, &b), &c), merged(&a, &merged(&b, &c)));
            for (l, r) in [(left.sum(), right.sum()), (left.count(), right.count())] {
                // Three sums of at most 150 terms: the two orders differ by a few ulps.
                prop_assert!((l.value - r.value).abs() <= 8.0 * f64::EPSILON * l.value.abs().max(1.0));
                prop_assert!((l.variance - r.variance).abs() <= 8.0 * f64::EPSILON * l.variance.abs().max(1.0));
            }
        }

        /// A shedder's batch path leaves the state of offering one by one, for both policies.
        #[test]
        fn shedder_observe_slice_equals_one_by_one(p in 0.001_f64..=1.0, seed in any::<u64>(), items in items()) {
            let fixed = FixedRate::new(p).unwrap();
            let mut one = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(seed), fixed);
            items.iter().for_each(|&x| one.observe(x));
            let mut batch = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(seed), fixed);
            batch.observe_slice(&items);
            prop_assert_eq!(batch.inner(), one.inner());
            prop_assert_eq!(batch.stats(), one.stats());
            let mut one = LoadShedder::new(HorvitzThompson::new(), KeyHashDrop::with_seed(seed), fixed);
            items.iter().for_each(|&x| one.observe(x));
            let mut batch = LoadShedder::new(HorvitzThompson::new(), KeyHashDrop::with_seed(seed), fixed);
            batch.observe_slice(&items);
            prop_assert_eq!(batch.inner(), one.inner());
            prop_assert_eq!(batch.stats(), one.stats());
        }

        /// Deciding a slice at once makes the decisions of deciding item by item.
        #[test]
        fn random_drop_slice_equals_item_by_item(p in 0.0_f64..=1.0, seed in any::<u64>(), n in 0_usize..5000, cut in any::<Index>()) {
            let items: Vec<u64> = (0..n as u64).collect();
            let mut one = RandomDrop::new(seed);
            let by_item: Vec<u64> = items.iter().copied().filter(|x| one.decide(x, p).is_some()).collect();
            let mut batch = RandomDrop::new(seed);
            let at = cut.index(n + 1);
            let mut by_slice = Vec::new();
            batch.decide_slice(&items[..at], p, |&x, _| by_slice.push(x));
            batch.decide_slice(&items[at..], p, |&x, _| by_slice.push(x));
            prop_assert_eq!(by_slice, by_item);
            prop_assert_eq!(batch.random_draws(), one.random_draws());
        }
    }
}

mod partitioned {
    use super::*;
    use synopses::stream::{DChoices, KeyGrouping, PartialKeyGrouping, Partitioned, Partitioner, ShuffleGrouping};

    /// The merged state of every partitioned run equals one sequential pass (without the
    /// martingale of that one pass, which a merge of two non-empty parts ends).
    fn check_all<O, P>(proto: &O, partitioner: P, items: &[u64]) -> Result<(), TestCaseError>
    where
        O: Mergeable
            + Clone
            + PartialEq
            + Debug
            + Subject
            + for<'a> synopses::core::Operator<&'a u64>
            + synopses::core::Operator<u64>
            + Send,
        P: Partitioner + Send + Sync,
    {
        let sequential = observed(proto, items).without_history();
        let mut one = Partitioned::new(proto, partitioner.clone()).unwrap();
        items.iter().for_each(|&x| one.observe(x));
        prop_assert_eq!(&one.merged().unwrap().without_history(), &sequential);
        let mut batch = Partitioned::new(proto, partitioner.clone()).unwrap();
        batch.observe_slice(items);
        prop_assert_eq!(&batch.merged().unwrap().without_history(), &sequential);
        prop_assert_eq!(batch.partitioner().loads(), one.partitioner().loads());
        #[cfg(feature = "rayon")]
        {
            let mut parallel = Partitioned::new(proto, partitioner.clone()).unwrap();
            parallel.par_observe(items);
            prop_assert_eq!(&parallel.merged().unwrap().without_history(), &sequential);
            prop_assert_eq!(parallel.partitioner().loads().iter().sum::<u64>(), items.len() as u64);
            let mut chunked = Partitioned::new(proto, partitioner).unwrap();
            chunked.par_observe_iter(items.iter().copied());
            prop_assert_eq!(&chunked.merged().unwrap().without_history(), &sequential);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// HyperLogLog, UltraLogLog, ExaLogLog, Count-Min and the counting Bloom filter over 1,
        /// 2, 4 and 8 workers, with every partitioner: the merged state is the sequential one.
        #[test]
        fn partitioned_runs_equal_one_pass(workers in prop_oneof![Just(1_usize), Just(2), Just(4), Just(8)], items in items()) {
            let hll = HyperLogLog::new(8).unwrap();
            let cm = CountMin::new(64, 3).unwrap();
            let cbf = CountingBloom::with_seed(500, 3, 1).unwrap();
            macro_rules! every_partitioner {
                ($proto:expr) => {
                    check_all($proto, KeyGrouping::new(workers).unwrap(), &items)?;
                    check_all($proto, ShuffleGrouping::new(workers).unwrap(), &items)?;
                    check_all($proto, PartialKeyGrouping::new(workers).unwrap(), &items)?;
                    check_all($proto, DChoices::new(workers, 3).unwrap(), &items)?;
                };
            }
            every_partitioner!(&hll);
            every_partitioner!(&cm);
            every_partitioner!(&cbf);
            every_partitioner!(&UltraLogLog::new(8).unwrap());
            every_partitioner!(&ExaLogLog::new(6).unwrap());
        }
    }
}

/// Shuffle grouping's blocks in `par_observe` continue the round robin where it stands, call
/// after call, so loads match routing item by item; single items go through too.
#[cfg(feature = "rayon")]
#[test]
fn shuffle_blocks_continue_the_round_robin() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::stream::{Partitioned, Partitioner, ShuffleGrouping};
    let items: Vec<u64> = (0..40).collect();
    let proto = HyperLogLog::new(8)?;
    let mut one_by_one = ShuffleGrouping::new(3)?;
    let mut parallel = Partitioned::new(&proto, ShuffleGrouping::new(3)?)?;
    let mut start = 0;
    for size in [5, 7, 1, 1, 0, 2, 11, 13] {
        let block = &items[start..start + size];
        parallel.par_observe(block);
        block.iter().for_each(|x| {
            one_by_one.route(x);
        });
        start += size;
        assert_eq!(parallel.partitioner().loads(), one_by_one.loads(), "after {start} items");
    }
    let mut sequential = proto.empty_like();
    sequential.observe_all(items.iter());
    assert_eq!(parallel.merged()?, sequential);
    Ok(())
}

/// A faulty partitioner that names a worker out of range: every entry point drops the
/// item (none wraps it onto another worker, none panics).
#[test]
fn items_routed_out_of_range_are_dropped() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::stream::{Partitioned, Partitioner};
    #[derive(Clone)]
    struct Beyond(Vec<u64>);
    impl Partitioner for Beyond {
        fn workers(&self) -> usize {
            self.0.len()
        }
        fn route_hash(&mut self, _: u64) -> usize {
            self.0.len() + 256
        }
        fn loads(&self) -> &[u64] {
            &self.0
        }
        fn absorb(&mut self, _: &Self) {}
        fn sender(&self) -> Self {
            self.clone()
        }
        fn add_load(&mut self, worker: usize, items: u64) {
            if let Some(load) = self.0.get_mut(worker) {
                *load += items;
            }
        }
    }
    let proto = HyperLogLog::new(8)?;
    let items: Vec<u64> = (0..1000).collect();
    for workers in [1, 3, 40] {
        let mut parts = Partitioned::new(&proto, Beyond(vec![0; workers]))?;
        items.iter().for_each(|&x| parts.observe(x));
        parts.observe_slice(&items);
        #[cfg(feature = "rayon")]
        parts.par_observe(&items);
        assert_eq!(parts.merged()?, proto.empty_like(), "{workers} workers");
    }
    Ok(())
}

/// A load shedder in front of each partition: parts shed and observe apart, and the merged
/// shedder holds what one shedder in front of one sketch would (the key-hash policy decides
/// by key, so partitioning changes nothing).
#[test]
fn partitions_behind_load_shedders_equal_one_pass() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::shedding::{FixedRate, KeyHashDrop, LoadShedder};
    use synopses::stream::{PartialKeyGrouping, Partitioned};
    let proto = LoadShedder::unweighted(HyperLogLog::new(12)?, KeyHashDrop::new(), FixedRate::new(0.3)?);
    let items: Vec<u64> = (0..200_000).map(|i| i % 50_000).collect();
    let mut whole = proto.empty_like();
    items.iter().for_each(|&x| whole.observe(x));
    for workers in [1, 2, 4, 8] {
        let mut parts = Partitioned::new(&proto, PartialKeyGrouping::new(workers)?)?;
        parts.observe_slice(&items);
        let merged = parts.merged()?;
        assert_eq!(merged.inner().without_history(), whole.inner().without_history(), "{workers} workers");
        assert_eq!(merged.stats(), whole.stats(), "{workers} workers");
    }
    Ok(())
}

/// Shedders merge only when their choices are independent (random policy: not two used
/// copies of one stream) or coordinated alike (key-hash policy: the same seed).
#[test]
fn shedder_merges_check_their_policies() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::shedding::{FixedRate, HorvitzThompson, KeyHashDrop, LoadShedder, RandomDrop};
    let mut a = LoadShedder::new(HorvitzThompson::new(), RandomDrop::new(1), FixedRate::new(0.5)?);
    let mut twin = a.clone();
    let mut fresh = a.empty_like();
    for x in 0..100_u64 {
        a.observe(x);
        twin.observe(x);
        fresh.observe(x);
    }
    assert_eq!(a.clone().merge(&twin).map_err(|e| e.parameter()), Err("random stream"));
    assert!(a.clone().merge(&fresh).is_ok());
    let mut k1 = LoadShedder::new(HorvitzThompson::new(), KeyHashDrop::with_seed(1), FixedRate::new(0.5)?);
    let k2 = LoadShedder::new(HorvitzThompson::new(), KeyHashDrop::with_seed(2), FixedRate::new(0.5)?);
    assert_eq!(k1.merge(&k2).map_err(|e| e.parameter()), Err("key-hash seed"));
    Ok(())
}

/// KLL's merges flip coins, so the partition law holds in distribution (checked statistically
/// in `tests/accuracy.rs`, merges of 2 to 64 parts); here, what holds exactly.
mod kll {
    use super::*;
    use synopses::quantiles::{Kll, Search};

    /// Every retained item with its weight, in order, the count and the exact extremes.
    type Content = (Vec<(u64, u64)>, u64, Option<u64>, Option<u64>);

    /// What a sketch stands for.
    fn content(s: &Kll<u64>) -> Content {
        let items = s.sorted_view().iter().map(|(&x, w)| (x, w)).collect();
        (items, s.count(), s.min().copied(), s.max().copied())
    }

    /// The exact content of a stream: each item once, weight 1.
    fn exact(items: &[u64]) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = items.iter().map(|&x| (x, 1)).collect();
        out.sort_unstable();
        out
    }

    /// Parts of `whole` on their own random streams, fed the pieces of `items`.
    fn parts(whole: &Kll<u64>, items: &[u64], cuts: &[Index]) -> Vec<Kll<u64>> {
        split(items, cuts)
            .into_iter()
            .enumerate()
            .map(|(i, piece)| {
                let mut part = whole.empty_part(i as u64);
                piece.iter().for_each(|&x| part.add(x).expect("ordered"));
                part
            })
            .collect()
    }

    /// The parts' count, extremes and total weight are the whole's, and each retained item is
    /// one of the stream's.
    fn sound(s: &Kll<u64>, items: &[u64]) -> Result<(), TestCaseError> {
        prop_assert_eq!(s.count(), items.len() as u64);
        prop_assert_eq!(s.min(), items.iter().min());
        prop_assert_eq!(s.max(), items.iter().max());
        let view = s.sorted_view();
        prop_assert_eq!(view.total_weight(), items.len() as u64);
        let stream: std::collections::HashSet<u64> = items.iter().copied().collect();
        prop_assert!(view.iter().all(|(x, _)| stream.contains(x)));
        Ok(())
    }

    fn stream() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(0..5000_u64, 0..3000)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// While the whole stream fits in level 0 (`k` items), nothing is compacted: any
        /// split merges into exactly the stream, in any order and grouping, with the empty
        /// sketch an identity on both sides.
        #[test]
        fn kll_exact_below_capacity(k in 8_u16..=200, seed in any::<u64>(), items in prop::collection::vec(any::<u64>(), 0..200), cuts in cuts()) {
            let items = &items[..items.len().min(usize::from(k))];
            let whole = Kll::new(k, seed).unwrap();
            let parts = parts(&whole, items, &cuts);
            let mut forward = whole.clone();
            forward.merge_all(&parts).unwrap();
            let mut backward = whole.clone();
            backward.merge_all(parts.iter().rev()).unwrap();
            let mut grouped = whole.clone();
            for pair in parts.chunks(2) {
                let mut group = whole.empty_part(99);
                group.merge_all(pair).unwrap();
                grouped.merge(&group).unwrap();
            }
            for s in [&forward, &backward, &grouped] {
                prop_assert_eq!(content(s), (exact(items), items.len() as u64, items.iter().min().copied(), items.iter().max().copied()));
            }
        }

        /// Above it, merges compact: any split keeps the count, the exact extremes and the
        /// total weight, and holds only items of the stream; the empty sketch is an identity
        /// on both sides, a merge is a function of the two states (the same through bytes),
        /// and sketches of any `k` merge, keeping the receiver's `k` and the smaller error.
        #[test]
        fn kll_merges_are_sound(k in 8_u16..=64, other_k in 8_u16..=64, seed in any::<u64>(), items in stream(), cuts in cuts()) {
            let whole = Kll::new(k, seed).unwrap();
            let parts = parts(&whole, &items, &cuts);
            let mut merged = whole.clone();
            merged.merge_all(&parts).unwrap();
            sound(&merged, &items)?;
            let mut reversed = whole.clone();
            reversed.merge_all(parts.iter().rev()).unwrap();
            sound(&reversed, &items)?;

            let a = &parts[0];
            let mut left = a.empty_like();
            left.merge(a).unwrap();
            prop_assert_eq!(content(&left), content(a));
            let mut right = a.clone();
            right.merge(&a.empty_part(5)).unwrap();
            prop_assert_eq!(&right, a);

            let b = parts.last().unwrap();
            let mut in_memory = a.clone();
            in_memory.merge(b).unwrap();
            let mut via_bytes = Kll::<u64>::from_bytes(&a.to_bytes()).unwrap();
            via_bytes.merge(&Kll::from_bytes(&b.to_bytes()).unwrap()).unwrap();
            prop_assert_eq!(via_bytes.to_bytes(), in_memory.to_bytes());

            // A rank asked of the sketch (searched level by level) is the sorted view's.
            let view = merged.sorted_view();
            for probe in [0, 1, 2500, 4999, 5000, items.first().copied().unwrap_or(7)] {
                for search in [Search::Inclusive, Search::Exclusive] {
                    prop_assert_eq!(merged.rank(&probe, search).unwrap(), view.rank(&probe, search).unwrap());
                }
            }

            let mut other = Kll::new(other_k, seed ^ 1).unwrap();
            items.iter().for_each(|&x| other.add(x).unwrap());
            let mut mixed = merged.clone();
            mixed.merge(&other).unwrap();
            prop_assert_eq!(mixed.k(), k);
            if other.levels() > 1 {
                prop_assert_eq!(mixed.min_k(), k.min(other_k));
            }
            prop_assert_eq!(mixed.count(), 2 * items.len() as u64);
            prop_assert_eq!(mixed.sorted_view().total_weight(), 2 * items.len() as u64);
        }

        /// A weighted item stands for its weight exactly: `add_weighted(x, w)` answers as `w`
        /// adds of `x` would, every rank exact. With `k` ≥ 1000 the levels hold about `3k`
        /// items, more than the at most 20 · 20 copies of these weights, so nothing compacts.
        #[test]
        fn kll_weights_are_exact(k in 1000_u16..=4000, pairs in prop::collection::vec((0..100_u64, 1..1_000_000_u64), 1..20)) {
            let mut s = Kll::new(k, 1).unwrap();
            pairs.iter().for_each(|&(x, w)| s.add_weighted(x, w).unwrap());
            let total: u64 = pairs.iter().map(|p| p.1).sum();
            prop_assert_eq!(s.count(), total);
            // One copy a set bit of each weight, each at its own weight's level.
            prop_assert_eq!(s.retained(), pairs.iter().map(|p| p.1.count_ones() as usize).sum::<usize>());
            for probe in 0..100_u64 {
                let below: u64 = pairs.iter().filter(|p| p.0 <= probe).map(|p| p.1).sum();
                prop_assert_eq!(s.rank(&probe, Search::Inclusive).unwrap(), Some(below as f64 / total as f64));
            }
        }
    }

    /// Merging a count past `u64::MAX` is refused and changes nothing.
    #[test]
    fn kll_count_overflow_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let mut a = Kll::new(8, 1)?;
        a.add_weighted(1_u64, u64::MAX - 1)?;
        let mut b = a.empty_part(0);
        b.add_weighted(2, 2)?;
        let before = a.clone();
        assert_eq!(a.merge(&b).map_err(|e| e.parameter()), Err("count"));
        assert_eq!(a, before);
        Ok(())
    }
}
