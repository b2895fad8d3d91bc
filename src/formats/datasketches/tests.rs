//! The DataSketches sketch against images made by the `datasketches` Python package
//! (`tests/fixtures/datasketches/`, made by `make.py` there), and its own laws.

use super::*;
use proptest::prelude::*;
use std::path::Path;

fn manifest() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/datasketches/manifest.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the manifest")).expect("JSON")
}

fn image(name: &str, form: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/datasketches/{name}.{form}.bin"));
    std::fs::read(path).expect("the image")
}

fn hll_type(name: &str) -> HllType {
    match name {
        "HLL_4" => HllType::Hll4,
        "HLL_6" => HllType::Hll6,
        "HLL_8" => HllType::Hll8,
        other => panic!("unknown type {other}"),
    }
}

/// The sketch of a fixture case's items, by the rule of `make.py`.
fn built(kind: &str, n: u64, lg_k: u8, target: HllType) -> DataSketchesHll {
    let mut sketch = DataSketchesHll::new(lg_k, target).expect("lg_k");
    for i in 0..n {
        match kind {
            "ints" => sketch.update(i as i64),
            "strings" => sketch.update(format!("user-{i}")),
            "floats" => sketch.update(i as f64 + 0.5),
            other => panic!("unknown kind {other}"),
        }
    }
    sketch
}

fn case_sketch(case: &serde_json::Value) -> DataSketchesHll {
    built(
        case["kind"].as_str().expect("kind"),
        case["n"].as_u64().expect("n"),
        case["lg_k"].as_u64().expect("lg_k") as u8,
        hll_type(case["type"].as_str().expect("type")),
    )
}

/// The estimate and the bounds at 1, 2 and 3 standard deviations are DataSketches' own, to the
/// last bit.
fn assert_answers(name: &str, sketch: &DataSketchesHll, expected: &serde_json::Value) {
    assert_eq!(sketch.estimate(), expected["estimate"].as_f64().expect("estimate"), "{name}: estimate");
    for sd in 1..=3 {
        let at = usize::from(sd - 1);
        assert_eq!(
            sketch.lower_bound(sd).expect("sd"),
            expected["lower"][at].as_f64().expect("lower"),
            "{name}: lower {sd}"
        );
        assert_eq!(
            sketch.upper_bound(sd).expect("sd"),
            expected["upper"][at].as_f64().expect("upper"),
            "{name}: upper {sd}"
        );
    }
}

/// What a sketch holds, whatever its history: `lg_k`, mode, and its coupons (a list's or
/// set's, or the registers' as coupons), sorted.
fn shape(sketch: &DataSketchesHll) -> (u8, HllMode, Vec<u32>) {
    let mut coupons: Vec<u32> = sketch.coupons().collect();
    coupons.sort_unstable();
    (sketch.lg_k(), sketch.mode(), coupons)
}

#[test]
fn sketches_updated_here_are_byte_for_byte_those_of_datasketches() {
    let manifest = manifest();
    let cases = manifest["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 105);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let sketch = case_sketch(case);
        assert_eq!(format!("{:?}", sketch.mode()).to_uppercase(), case["mode"].as_str().expect("mode"), "{name}");
        assert_eq!(sketch.to_bytes(), image(name, "compact"), "{name}: the compact image");
        assert_eq!(sketch.to_updatable_bytes(), image(name, "updatable"), "{name}: the updatable image");
        assert_answers(name, &sketch, case);
    }
}

#[test]
fn images_read_as_the_sketches_that_made_them() {
    let manifest = manifest();
    for case in manifest["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let sketch = case_sketch(case);
        let updatable = DataSketchesHll::from_bytes(&image(name, "updatable")).expect(name);
        assert_eq!(updatable, sketch, "{name}: from the updatable image");
        // A compact set is rebuilt by inserting its coupons (DataSketches does the same), so
        // its table may be laid out differently: the same coupons, the same answers.
        let compact = DataSketchesHll::from_bytes(&image(name, "compact")).expect(name);
        assert_eq!(shape(&compact), shape(&sketch), "{name}: from the compact image");
        assert_answers(name, &compact, case);
        accepted_state_is_whole(&compact);
    }
}

#[test]
fn unions_are_datasketches_unions() {
    let manifest = manifest();
    let cases: std::collections::HashMap<&str, &serde_json::Value> =
        manifest["cases"].as_array().expect("cases").iter().map(|c| (c["name"].as_str().expect("name"), c)).collect();
    for union in manifest["unions"].as_array().expect("unions") {
        let name = union["name"].as_str().expect("name");
        let parts: Vec<DataSketchesHll> = union["of"]
            .as_array()
            .expect("parts")
            .iter()
            .map(|p| case_sketch(cases[p.as_str().expect("part")]))
            .collect();
        let lg_max_k = union["lg_max_k"].as_u64().expect("lg_max_k") as u8;
        let ours = DataSketchesHll::union(lg_max_k, &parts, hll_type(union["type"].as_str().expect("type")))
            .expect("lg_max_k");
        let theirs = DataSketchesHll::from_bytes(&image(name, "compact")).expect(name);
        if name == "union_3" {
            // DataSketches C++ 5.2 loses the first part here (see the module docs): its result
            // is the second part alone, folded to lg_k = 8. Ours holds both.
            let folded = |s: &DataSketchesHll| match &s.state {
                State::Hll(r) => DataSketchesHll::gadget(r.folded_copy(s.target, 8)),
                _ => panic!("{name}: an HLL-mode part"),
            };
            assert_eq!(shape(&theirs), shape(&folded(&parts[1])), "{name}: DataSketches kept the second part only");
            let mut both = folded(&parts[0]);
            both.absorb(8, &parts[1]);
            assert_eq!(shape(&ours), shape(&both));
            assert!(ours.is_out_of_order());
            continue;
        }
        assert_eq!(ours.to_bytes(), image(name, "compact"), "{name}: the compact image");
        assert_eq!(ours.to_updatable_bytes(), image(name, "updatable"), "{name}: the updatable image");
        assert_eq!(shape(&theirs), shape(&ours), "{name}: read");
        assert_answers(name, &ours, union);
        assert_answers(name, &theirs, union);
    }
}

#[test]
fn the_hash_of_each_kind_of_item_is_datasketches() {
    // Integers of every width are their i64 (unsigned ones through the signed type of their
    // width, as DataSketches C++ casts them); floats their f64; text its bytes.
    assert_eq!(5_i32.coupon(), 5_i64.coupon());
    assert_eq!((-5_i8).coupon(), (-5_i64).coupon());
    assert_eq!(u8::MAX.coupon(), (-1_i64).coupon());
    assert_eq!(u16::MAX.coupon(), (-1_i64).coupon());
    assert_eq!(u64::MAX.coupon(), (-1_i64).coupon());
    assert_eq!(1.5_f32.coupon(), 1.5_f64.coupon());
    assert_eq!((-0.0_f64).coupon(), 0.0_f64.coupon());
    assert_eq!(f64::NAN.coupon(), (-f64::NAN).coupon());
    // 0.0 has the bits of the integer 0: the same item, as in DataSketches.
    assert_eq!(0.0_f64.coupon(), 0_i64.coupon());
    assert_eq!(String::from("ab").coupon(), vec![b'a', b'b'].coupon());
    assert_eq!(Vec::<u8>::new().coupon(), None);
    // Every coupon has a value from 1 to 63 above its 26-bit address.
    for i in 0..10_000_i64 {
        let v = i.coupon().expect("an item") >> KEY_BITS;
        assert!((1..=63).contains(&v));
    }
}

proptest! {
    /// The 8-byte path of the hash is MurmurHash3 x64 128 of the word's bytes.
    #[test]
    fn the_word_hash_is_murmur3(word in any::<u64>()) {
        prop_assert_eq!(coupon_of_word(word), coupon_of(&word.to_le_bytes()));
    }
}

#[test]
fn a_damaged_image_gives_a_sketch_or_an_error() {
    let manifest = manifest();
    for case in manifest["cases"].as_array().expect("cases").iter().step_by(5) {
        let bytes = image(case["name"].as_str().expect("name"), "updatable");
        let whole = DataSketchesHll::from_bytes(&bytes).expect("the image");
        for cut in 0..bytes.len() {
            // A cut image is an error, unless what was cut off held nothing (the empty
            // slots after an empty sketch): nothing is lost silently.
            if let Ok(sketch) = DataSketchesHll::from_bytes(&bytes[..cut]) {
                assert_eq!(sketch, whole);
            }
        }
        for at in 0..bytes.len().min(48) {
            for xor in [1, 0x10, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] ^= xor;
                if let Ok(sketch) = DataSketchesHll::from_bytes(&damaged) {
                    accepted_state_is_whole(&sketch);
                }
            }
        }
    }
}

/// What a decoded sketch must satisfy: its estimates are finite, and it writes an image that
/// reads back as itself.
fn accepted_state_is_whole(sketch: &DataSketchesHll) {
    assert!(sketch.estimate().is_finite() && sketch.estimate() >= 0.0);
    assert!(sketch.composite_estimate().is_finite());
    for sd in 1..=3 {
        assert!(sketch.lower_bound(sd).expect("sd").is_finite());
        assert!(sketch.upper_bound(sd).expect("sd").is_finite());
    }
    for bytes in [sketch.to_bytes(), sketch.to_updatable_bytes()] {
        let again = DataSketchesHll::from_bytes(&bytes).expect("what we write reads back");
        assert_eq!(shape(&again), shape(sketch));
    }
    assert_eq!(DataSketchesHll::from_bytes(&sketch.to_updatable_bytes()).expect("updatable"), *sketch);
}

#[test]
fn an_hll_4_image_with_an_impossible_floor_is_refused() {
    let mut bytes = image("ints_k8_HLL_4_100000", "compact");
    bytes[6] = 250; // cur_min: nibbles above it would pass 63
    assert!(DataSketchesHll::from_bytes(&bytes).is_err());
    let mut bytes = image("ints_k12_HLL_8_3000", "compact");
    bytes[16..24].copy_from_slice(&1e-300_f64.to_le_bytes()); // kxq0: an infinite estimate
    assert!(DataSketchesHll::from_bytes(&bytes).is_err());
    let mut bytes = image("ints_k12_HLL_8_3000", "compact");
    bytes[8..16].copy_from_slice(&f64::MAX.to_le_bytes()); // HIP: an infinite upper bound
    assert!(DataSketchesHll::from_bytes(&bytes).is_err());
}

#[test]
fn sums_that_disagree_with_the_registers_never_give_an_infinite_estimate() {
    // An image whose registers are small but whose sums claim they are all near 63: updates
    // would subtract 2^-r from a sum that holds less, and drive it to zero or below.
    let mut sketch = DataSketchesHll::new(4, HllType::Hll8).expect("lg_k");
    (0..100_i64).for_each(|i| sketch.update(i));
    let mut bytes = sketch.to_bytes();
    bytes[16..24].copy_from_slice(&(16.0 * 2_f64.powi(-62)).to_le_bytes()); // kxq0
    bytes[24..32].copy_from_slice(&0.0_f64.to_le_bytes()); // kxq1
    bytes[40..56].fill(0); // every register back to zero
    let mut damaged = DataSketchesHll::from_bytes(&bytes).expect("sums in range");
    for i in 0..1_000_i64 {
        damaged.update(i);
        assert!(damaged.estimate().is_finite() && damaged.estimate() >= 0.0);
        assert!(damaged.composite_estimate().is_finite() && damaged.composite_estimate() >= 0.0);
    }
    accepted_state_is_whole(&damaged);
}

#[test]
fn a_hip_at_its_largest_stays_readable_through_updates() {
    let mut sketch = DataSketchesHll::new(8, HllType::Hll4).expect("lg_k");
    (0..1_000_i64).for_each(|i| sketch.update(i));
    let mut bytes = sketch.to_bytes();
    bytes[8..16].copy_from_slice(&HIP_MAX.to_le_bytes());
    let mut read = DataSketchesHll::from_bytes(&bytes).expect("HIP at its largest");
    (1_000..50_000_i64).for_each(|i| read.update(i));
    assert_eq!(read.estimate(), HIP_MAX);
    accepted_state_is_whole(&read);
}

#[test]
fn a_sketch_states_the_error_it_keeps() {
    // HIP's relative standard error √(ln 2 / k) and the composite estimator's √((3 ln 2 − 1)/k),
    // measured over independent streams at lg_k = 10, n = 20 000 (HLL mode, far from the
    // small-range corrections). With T streams the mean relative error has standard error
    // σ/√T and the mean square error relative standard error √(2/T): 4 of each is the slack.
    let (lg_k, n, trials) = (10_u8, 20_000_i64, 160);
    let k = f64::from(1_u32 << lg_k);
    let (mut hip, mut composite) = (Vec::new(), Vec::new());
    for t in 0..trials {
        let mut sketch = DataSketchesHll::new(lg_k, HllType::Hll4).expect("lg_k");
        (t * n..(t + 1) * n).for_each(|i| sketch.update(i));
        hip.push(sketch.estimate() / n as f64 - 1.0);
        composite.push(sketch.composite_estimate() / n as f64 - 1.0);
    }
    for (errors, sigma) in [(hip, (2_f64.ln() / k).sqrt()), (composite, ((3.0 * 2_f64.ln() - 1.0) / k).sqrt())] {
        let t = errors.len() as f64;
        let mean = errors.iter().sum::<f64>() / t;
        let mse = errors.iter().map(|e| e * e).sum::<f64>() / t;
        assert!(mean.abs() <= 4.0 * sigma / t.sqrt(), "bias {mean} against σ = {sigma}");
        let ratio = mse / (sigma * sigma);
        assert!(
            (ratio - 1.0).abs() <= 4.0 * (2.0 / t).sqrt(),
            "mean square error {mse} against σ² = {}",
            sigma * sigma
        );
    }
}

#[test]
fn conversions_to_the_crates_hyperloglog_keep_the_registers() {
    for (lg_k, n) in [(4_u8, 3_i64), (8, 100), (12, 100_000), (18, 1_000)] {
        let mut sketch = DataSketchesHll::new(lg_k, HllType::Hll4).expect("lg_k");
        let mut hll = HyperLogLog::with_seed(lg_k, HYPERLOGLOG_SEED).expect("precision");
        for i in 0..n {
            sketch.update(i);
            hll.observe_hash(hyperloglog_hash(&i, lg_k).expect("an item"));
        }
        let converted = sketch.to_hyperloglog().expect("convertible");
        assert_eq!(converted.dense_registers(), hll.dense_registers(), "lg_k {lg_k}");
        let back = DataSketchesHll::from_hyperloglog(&converted, HllType::Hll6).expect("its own seed");
        let mut registers = sketch.clone();
        if registers.mode() != HllMode::Hll {
            registers.state = DataSketchesHll::promoted(lg_k, &sketch.coupons().collect::<Vec<_>>(), 0);
        }
        let (_, _, ours) = shape(&registers);
        let (_, _, theirs) = shape(&back);
        assert_eq!(ours, theirs, "lg_k {lg_k}");
    }
    let big = DataSketchesHll::new(20, HllType::Hll8).expect("lg_k");
    assert_eq!(big.to_hyperloglog().unwrap_err().parameter(), "lg_k");
}

fn sketch_of(items: &[u32], lg_k: u8, target: HllType) -> DataSketchesHll {
    let mut sketch = DataSketchesHll::new(lg_k, target).expect("lg_k");
    items.iter().for_each(|&i| sketch.update(i64::from(i)));
    sketch
}

fn target() -> impl Strategy<Value = HllType> {
    prop::sample::select(vec![HllType::Hll4, HllType::Hll6, HllType::Hll8])
}

/// Streams that reach every mode at lg_k 4 to 9: lists, sets, and registers.
fn stream() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(0_u32..5_000, 0..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any preamble a hostile writer can pick, any body: a sketch that is whole, or an error.
    #[test]
    fn arbitrary_images_give_a_whole_sketch_or_an_error(
        pre_ints in prop::sample::select(vec![2_u8, 3, 10, 0, 255]),
        lg_k in 0_u8..=25,
        lg_arr in 0_u8..=40,
        flags in any::<u8>(),
        byte6 in any::<u8>(),
        mode in any::<u8>(),
        body in prop::collection::vec(any::<u8>(), 0..700),
    ) {
        let mut bytes = vec![pre_ints, 1, 7, lg_k, lg_arr, flags, byte6, mode];
        bytes.extend_from_slice(&body);
        if let Ok(sketch) = DataSketchesHll::from_bytes(&bytes) {
            accepted_state_is_whole(&sketch);
        }
    }

    /// An image's estimator fields, whatever they hold: refused, or a sketch that stays whole
    /// (finite estimates, images that read back) through further updates and merges.
    #[test]
    fn any_estimator_fields_give_a_whole_sketch_or_an_error(
        fields in prop::collection::vec(prop_oneof![
            any::<f64>(),
            prop::sample::select(vec![0.0, -0.0, 1e-300, 2_f64.powi(-59), 2_f64.powi(-58), 0.5, 16.0, 256.0, 1e30, HIP_MAX]),
        ], 3),
        zero_from in 0_usize..=256,
        more in stream(),
    ) {
        let mut sketch = DataSketchesHll::new(8, HllType::Hll8).expect("lg_k");
        (0..5_000_i64).for_each(|i| sketch.update(i));
        let mut bytes = sketch.to_bytes();
        for (at, f) in fields.iter().enumerate() {
            bytes[8 + 8 * at..16 + 8 * at].copy_from_slice(&f.to_le_bytes());
        }
        bytes[40 + zero_from..].fill(0);
        if let Ok(mut read) = DataSketchesHll::from_bytes(&bytes) {
            more.iter().for_each(|&i| read.update(i64::from(i)));
            accepted_state_is_whole(&read);
            read.merge(&sketch).expect("merge");
            accepted_state_is_whole(&read);
        }
    }

    /// Every reachable state (updated, merged, converted) writes images that read back as it.
    #[test]
    fn every_state_round_trips(a in stream(), b in stream(), lg_k in 4_u8..=9, t in target(), u in target()) {
        let x = sketch_of(&a, lg_k, t);
        let mut merged = x.clone();
        merged.merge(&sketch_of(&b, lg_k.saturating_sub(1).max(4), u)).expect("merge");
        for sketch in [x.clone(), merged.clone(), merged.with_target_type(u)] {
            accepted_state_is_whole(&sketch);
        }
    }

    /// Splitting a stream and merging the parts holds what one sketch of the whole holds.
    #[test]
    fn parts_merge_into_the_whole(items in stream(), cut in any::<prop::sample::Index>(), lg_k in 4_u8..=9, t in target(), u in target()) {
        let at = cut.index(items.len() + 1);
        let mut left = sketch_of(&items[..at], lg_k, t);
        left.merge(&sketch_of(&items[at..], lg_k, u)).expect("merge");
        let whole = sketch_of(&items, lg_k, t);
        prop_assert_eq!(shape(&left), shape(&whole));
        prop_assert_eq!(left.target_type(), t);
    }

    /// Commutative, associative, with the empty sketch as identity (in what the sketches hold;
    /// across lg_k too: the smaller wins).
    #[test]
    fn merge_is_a_semilattice(a in stream(), b in stream(), c in stream(), ka in 4_u8..=9, kb in 4_u8..=9, kc in 4_u8..=9) {
        let (a, b, c) = (sketch_of(&a, ka, HllType::Hll4), sketch_of(&b, kb, HllType::Hll6), sketch_of(&c, kc, HllType::Hll8));
        let merged = |x: &DataSketchesHll, y: &DataSketchesHll| {
            let mut m = x.clone();
            m.merge(y).expect("merge");
            m
        };
        prop_assert_eq!(shape(&merged(&a, &b)), shape(&merged(&b, &a)));
        prop_assert_eq!(shape(&merged(&merged(&a, &b), &c)), shape(&merged(&a, &merged(&b, &c))));
        prop_assert_eq!(shape(&merged(&a, &a.empty_like())), shape(&a));
        prop_assert_eq!(shape(&merged(&a.empty_like(), &a)), shape(&a));
    }
}
