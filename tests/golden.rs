//! Golden values: pins the hash path, the binary format and the estimators, so that any change
//! to them fails here instead of silently breaking sketches stored or shipped by an older build.
//!
//! * Hashes: `Hashable::hash64` of a table of items (primitives, then composites: tuples,
//!   options, sequences, a struct through `hashable!`) under seed 0 and [`DEFAULT_SEED`], as
//!   literals, with a few values cross-checked against xxh3 of their documented encoding.
//! * Encodings: the files in `tests/fixtures/v<version>/` (the version each type writes, its
//!   `Codec::VERSION`), each rebuilt here from a deterministic recipe and compared byte for
//!   byte, then decoded and compared with the rebuilt sketch; and the read-only files an older
//!   version of a type wrote, decoded and compared with the rebuilt sketch.
//! * Estimates: the exact `f64` bit patterns of the estimates of a few seeded sketches, and of
//!   every answer of every fixture (as a digest).
//!
//! To regenerate the fixtures after an *intended* format change (which also needs a new format
//! version for the type, since the files of the older one stay, read-only, and must stay
//! readable):
//!
//! ```text
//! SYNOPSES_BLESS=1 cargo test --test golden
//! ```

use std::error::Error;
use std::fs;
use std::path::PathBuf;
use std::sync::Once;

mod common;

use common::{Answers, Subject};
use synopses::DecodeError;
use synopses::cardinality::{ExaLogLog, FlajoletMartin, HyperLogLog, UltraLogLog, UltraLogLogEstimator};
use synopses::codec::Codec;
use synopses::frequency::{CountMin, HeavyHitters};
use synopses::hash::{DEFAULT_SEED, Hashable, hash_bytes};
use synopses::membership::{Bloom, CountingBloom};
use synopses::quantiles::{DDSketch, Kll};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};
use xxhash_rust::xxh3::xxh3_64_with_seed;

type TestResult = Result<(), Box<dyn Error>>;

// ---------------------------------------------------------------------------------------------
// Hashes
// ---------------------------------------------------------------------------------------------

/// The hash of every item of the golden table under `seed`, named as in [`GOLDEN_HASHES`].
fn item_hashes(seed: u64) -> Vec<(&'static str, u64)> {
    vec![
        ("0u64", 0u64.hash64(seed)),
        ("1u64", 1u64.hash64(seed)),
        ("5u64", 5u64.hash64(seed)),
        ("u64::MAX", u64::MAX.hash64(seed)),
        ("-1i64", (-1i64).hash64(seed)),
        ("i64::MIN", i64::MIN.hash64(seed)),
        ("42u32", 42u32.hash64(seed)),
        ("42u8", 42u8.hash64(seed)),
        ("-7i32", (-7i32).hash64(seed)),
        ("7usize", 7usize.hash64(seed)),
        ("-7isize", (-7isize).hash64(seed)),
        ("true", true.hash64(seed)),
        ("false", false.hash64(seed)),
        ("'x'", 'x'.hash64(seed)),
        ("'é'", 'é'.hash64(seed)),
        ("1u128", 1u128.hash64(seed)),
        ("-1i128", (-1i128).hash64(seed)),
        ("u128::MAX", u128::MAX.hash64(seed)),
        ("\"\"", "".hash64(seed)),
        ("\"hello\"", "hello".hash64(seed)),
        ("b\"hello\"", b"hello".hash64(seed)),
        ("String(\"hello\")", String::from("hello").hash64(seed)),
        ("\"héllo wörld\"", "héllo wörld".hash64(seed)),
        ("[0u8; 8]", [0u8; 8].hash64(seed)),
        ("vec![1u8, 2, 3]", vec![1u8, 2, 3].hash64(seed)),
        ("[0u8; 300]", [0u8; 300][..].hash64(seed)),
        ("(5u64, \"hello\")", (5u64, "hello").hash64(seed)),
        ("(\"ab\", \"c\")", ("ab", "c").hash64(seed)),
        ("(\"a\", \"bc\")", ("a", "bc").hash64(seed)),
        ("(1u32, -1i64, true)", (1u32, -1i64, true).hash64(seed)),
        ("(0u8, 1u8, ..., 11u8)", (0u8, 1u8, 2u8, 3u8, 4u8, 5u8, 6u8, 7u8, 8u8, 9u8, 10u8, 11u8).hash64(seed)),
        ("Some(5u64)", Some(5u64).hash64(seed)),
        ("None::<u64>", None::<u64>.hash64(seed)),
        ("Some(\"hello\")", Some("hello").hash64(seed)),
        ("[1u32, 2, 3]", [1u32, 2, 3].hash64(seed)),
        ("vec![String(\"a\"), String(\"bc\")]", vec![String::from("a"), String::from("bc")].hash64(seed)),
        ("((1u8, \"x\"), vec![2u16, 3], Some(-4i8))", ((1u8, "x"), vec![2u16, 3], Some(-4i8)).hash64(seed)),
        ("Visit { user: \"ann\", day: 19000 }", Visit { user: String::from("ann"), day: 19_000 }.hash64(seed)),
    ]
}

/// A struct hashed from its fields by the crate's macro, for the golden table.
struct Visit {
    user: String,
    day: u32,
}
synopses::hashable!(Visit { user, day });

/// `(item, hash64 with seed 0, hash64 with DEFAULT_SEED)`, computed once and pasted.
const GOLDEN_HASHES: &[(&str, u64, u64)] = &[
    ("0u64", 0xC77B_3ABB_6F87_ACD9, 0x42D6_9D29_2B28_530F),
    ("1u64", 0x2FBC_5935_64DB_792E, 0x96C8_DE6D_7EE3_B014),
    ("5u64", 0x8E03_E9AA_39AA_A78C, 0xD7AD_B570_141A_0F11),
    ("u64::MAX", 0x5111_C7E4_7D78_4413, 0x4789_A7A3_43DE_5F5B),
    ("-1i64", 0x5111_C7E4_7D78_4413, 0x4789_A7A3_43DE_5F5B),
    ("i64::MIN", 0x828F_2476_789A_0E5F, 0xED6D_8FE6_C559_A7DB),
    ("42u32", 0xD5A6_F8C8_38DF_27C8, 0x22B4_0790_B892_5401),
    ("42u8", 0xD5A6_F8C8_38DF_27C8, 0x22B4_0790_B892_5401),
    ("-7i32", 0xCDED_DD5C_0859_7FB4, 0x9FB7_817F_0BEB_20BC),
    ("7usize", 0x8167_1E58_D6B5_96AF, 0xC61E_CFE3_9652_E7BB),
    ("-7isize", 0xCDED_DD5C_0859_7FB4, 0x9FB7_817F_0BEB_20BC),
    ("true", 0x2FBC_5935_64DB_792E, 0x96C8_DE6D_7EE3_B014),
    ("false", 0xC77B_3ABB_6F87_ACD9, 0x42D6_9D29_2B28_530F),
    ("'x'", 0x4F60_8B7C_87BD_51B7, 0xBC65_3DE3_B542_634F),
    ("'é'", 0xEA0D_0448_15FC_8466, 0x555E_8632_93BF_B1B7),
    ("1u128", 0x26F2_A114_8CF5_2011, 0x8169_8DF7_C7A5_12D5),
    ("-1i128", 0x722A_202F_07A4_B313, 0x00EE_838A_71AD_0D52),
    ("u128::MAX", 0x722A_202F_07A4_B313, 0x00EE_838A_71AD_0D52),
    ("\"\"", 0x2D06_8005_38D3_94C2, 0x8B35_B76B_673E_D3F8),
    ("\"hello\"", 0x9555_E855_5C62_DCFD, 0xE08B_CABE_9392_5BD6),
    ("b\"hello\"", 0x9555_E855_5C62_DCFD, 0xE08B_CABE_9392_5BD6),
    ("String(\"hello\")", 0x9555_E855_5C62_DCFD, 0xE08B_CABE_9392_5BD6),
    ("\"héllo wörld\"", 0xCA5A_EB8D_A2D7_6864, 0x9CB0_1531_5B38_EA47),
    ("[0u8; 8]", 0xC77B_3ABB_6F87_ACD9, 0x42D6_9D29_2B28_530F),
    ("vec![1u8, 2, 3]", 0xEBCE_9B76_32AE_733B, 0xFA71_89FA_0B01_7EE0),
    ("[0u8; 300]", 0x56D0_762B_2008_5F91, 0x359A_5931_570B_BAFD),
    ("(5u64, \"hello\")", 0x53EA_5FF2_CEC7_5218, 0xE348_7454_5D28_6903),
    ("(\"ab\", \"c\")", 0x642D_4DEB_FEBF_33AE, 0x4DA0_4879_9B16_8A83),
    ("(\"a\", \"bc\")", 0xF42E_E0DF_2A02_3EF1, 0x781E_81EB_1B8E_AF9D),
    ("(1u32, -1i64, true)", 0xC260_A2F2_6BA7_3104, 0x47B1_E60D_54C1_0936),
    ("(0u8, 1u8, ..., 11u8)", 0xCA18_5A06_36EB_095F, 0x8E64_E007_BAC7_5E24),
    ("Some(5u64)", 0xD7AA_C30B_7EE8_29FB, 0xAB1D_1531_4BF6_0152),
    ("None::<u64>", 0xC44B_DFF4_074E_ECDB, 0x5C0B_D088_196A_F3E6),
    ("Some(\"hello\")", 0x1B39_290D_ED72_6C1E, 0x5A48_29C1_2D46_8F4D),
    ("[1u32, 2, 3]", 0x7C68_B490_6E7E_A780, 0x1752_8AA2_0106_B7B3),
    ("vec![String(\"a\"), String(\"bc\")]", 0xF42E_E0DF_2A02_3EF1, 0x781E_81EB_1B8E_AF9D),
    ("((1u8, \"x\"), vec![2u16, 3], Some(-4i8))", 0x6990_F133_30D9_F12F, 0xCF12_9E46_0034_D922),
    ("Visit { user: \"ann\", day: 19000 }", 0x65B1_3D94_E272_56C0, 0x251D_04FE_CFFF_86A4),
];

#[test]
fn hash_values_are_pinned() {
    let zero = item_hashes(0);
    let default = item_hashes(DEFAULT_SEED);
    assert_eq!(zero.len(), GOLDEN_HASHES.len(), "the table of items and the golden values differ in length");
    for (((name, h0), (_, hd)), &(golden_name, g0, gd)) in zero.iter().zip(&default).zip(GOLDEN_HASHES) {
        assert_eq!(*name, golden_name, "the golden table is out of order");
        assert_eq!(*h0, g0, "{name}.hash64(0): got 0x{h0:016X}, pinned 0x{g0:016X}");
        assert_eq!(*hd, gd, "{name}.hash64(DEFAULT_SEED): got 0x{hd:016X}, pinned 0x{gd:016X}");
    }
}

/// The documented canonical encodings: equal items under the encoding hash alike.
#[test]
fn equal_encodings_hash_alike() {
    for seed in [0, DEFAULT_SEED, 7] {
        assert_eq!(0u64.hash64(seed), [0u8; 8].hash64(seed));
        assert_eq!(u64::MAX.hash64(seed), (-1i64).hash64(seed));
        assert_eq!(u64::MAX.hash64(seed), (-1i8).hash64(seed));
        assert_eq!(42u32.hash64(seed), 42u8.hash64(seed));
        assert_eq!(42u32.hash64(seed), 42usize.hash64(seed));
        assert_eq!((-7i32).hash64(seed), (-7isize).hash64(seed));
        assert_eq!(true.hash64(seed), 1u64.hash64(seed));
        assert_eq!('x'.hash64(seed), 120u64.hash64(seed));
        assert_eq!("hello".hash64(seed), b"hello".hash64(seed));
        assert_eq!("hello".hash64(seed), String::from("hello").hash64(seed));
        assert_eq!("hello".hash64(seed), b"hello".to_vec().hash64(seed));
        assert_eq!(1u128.hash64(seed), hash_bytes(&1u128.to_le_bytes(), seed));
        assert_ne!(1u128.hash64(seed), 1u64.hash64(seed));
        assert_eq!([1u32, 2, 3].hash64(seed), vec![1u32, 2, 3].hash64(seed));
        assert_eq!([1u32, 2, 3].hash64(seed), (1u32, 2u32, 3u32).hash64(seed));
        assert_eq!(vec![String::from("a")].hash64(seed), ("a",).hash64(seed));
        let visit = Visit { user: String::from("ann"), day: 19_000 };
        assert_eq!(visit.hash64(seed), ("ann", 19_000u32).hash64(seed));
    }
}

/// Two values checked against xxh3 itself rather than against our own earlier output.
#[test]
fn hashes_agree_with_reference_xxh3() {
    for seed in [0, 1, DEFAULT_SEED, u64::MAX] {
        assert_eq!(5u64.hash64(seed), xxh3_64_with_seed(&5u64.to_le_bytes(), seed), "seed {seed:#x}");
    }
    // A composite against its documented encoding, built here by hand: each component's own
    // bytes, a variable-length one preceded by its length as 8 little-endian bytes.
    let by_hand = [&5u64.to_le_bytes()[..], &5u64.to_le_bytes(), b"hello"].concat();
    assert_eq!((5u64, "hello").hash64(7), xxh3_64_with_seed(&by_hand, 7));
    let by_hand = [&[1u8][..], &2u64.to_le_bytes(), b"ab"].concat();
    assert_eq!(Some("ab").hash64(7), xxh3_64_with_seed(&by_hand, 7));
    // The published xxh3-64 of the empty input with seed 0.
    const XXH3_64_EMPTY: u64 = 0x2D06_8005_38D3_94C2;
    assert_eq!(xxh3_64_with_seed(b"", 0), XXH3_64_EMPTY);
    assert_eq!("".hash64(0), XXH3_64_EMPTY);
    assert_eq!(hash_bytes(b"", 0), XXH3_64_EMPTY);
    let pinned = GOLDEN_HASHES.iter().find(|g| g.0 == "\"\"").map(|g| g.1);
    assert_eq!(pinned, Some(XXH3_64_EMPTY));
}

// ---------------------------------------------------------------------------------------------
// Serialized fixtures
// ---------------------------------------------------------------------------------------------

/// A fixture: a seeded state of any type of the generic suites, behind one interface so
/// that the fixtures share one table.
trait Pinned {
    fn to_bytes(&self) -> Vec<u8>;
    fn family(&self) -> u8;
    fn version(&self) -> u8;
    fn encoded_len(&self) -> usize;
    fn answers(&self) -> Vec<f64>;
    /// Decodes `bytes` as the same type: whether the result equals `self`, its answers, and its
    /// re-encoding.
    fn decode_like(&self, bytes: &[u8]) -> Result<(bool, Vec<f64>, Vec<u8>), DecodeError>;
}

impl<S: Subject> Pinned for S {
    fn to_bytes(&self) -> Vec<u8> {
        Codec::to_bytes(self)
    }

    fn family(&self) -> u8 {
        S::FAMILY
    }

    fn version(&self) -> u8 {
        S::VERSION
    }

    fn encoded_len(&self) -> usize {
        Codec::encoded_len(self)
    }

    fn answers(&self) -> Vec<f64> {
        Answers::answers(self)
    }

    fn decode_like(&self, bytes: &[u8]) -> Result<(bool, Vec<f64>, Vec<u8>), DecodeError> {
        let decoded = S::from_bytes(bytes)?;
        Ok((decoded == *self, Answers::answers(&decoded), Codec::to_bytes(&decoded)))
    }
}

/// A fixture's file name and its recipe's state.
type Fixture = (&'static str, Box<dyn Pinned>);

/// A read-only fixture's format version, file name and recipe's state.
type ReadOnlyFixture = (u8, &'static str, Box<dyn Pinned>);

/// A digest of every answer, bit for bit: what a fixture answers, pinned in one number.
fn digest(answers: &[f64]) -> u64 {
    let bytes: Vec<u8> = answers.iter().flat_map(|a| a.to_bits().to_le_bytes()).collect();
    hash_bytes(&bytes, 0)
}

/// The recipe of every fixture file, from each subject's `fixtures` (`tests/common`): its name
/// and the state it holds. Each recipe also asserts the mode it is meant to pin, so a change of
/// the sparse/dense switch shows up as such.
fn fixtures() -> Result<Vec<Fixture>, Box<dyn Error>> {
    macro_rules! all_fixtures {
        ($($name:ident: $ty:ty),* $(,)?) => {{
            let mut out: Vec<Fixture> = Vec::new();
            $(out.extend(<$ty>::fixtures().into_iter().map(|(file, s)| (file, Box::new(s) as Box<dyn Pinned>)));)*
            out
        }};
    }
    Ok(common::for_each_subject!(all_fixtures))
}

/// The files an older format version of a type wrote, from each subject's
/// `read_only_fixtures`: never rewritten, since no build writes that version any more.
fn read_only_fixtures() -> Vec<ReadOnlyFixture> {
    macro_rules! all_read_only {
        ($($name:ident: $ty:ty),* $(,)?) => {{
            let mut out: Vec<ReadOnlyFixture> = Vec::new();
            $(out.extend(<$ty>::read_only_fixtures().into_iter().map(|(v, file, s)| (v, file, Box::new(s) as Box<dyn Pinned>)));)*
            out
        }};
    }
    common::for_each_subject!(all_read_only)
}

/// Where the fixtures of format version `version` are.
fn fixture_dir(version: u8) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join(format!("v{version}"))
}

fn blessing() -> bool {
    std::env::var_os("SYNOPSES_BLESS").is_some_and(|v| v == "1")
}

/// The first offset at which two byte strings differ (or the shorter length).
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()))
}

/// Writes every fixture from its recipe, once per test run, when `SYNOPSES_BLESS=1`. Every
/// reader calls it first, so no test reads a file while another one writes it.
fn bless_once() {
    static BLESS: Once = Once::new();
    BLESS.call_once(|| {
        if !blessing() {
            return;
        }
        for (name, sketch) in fixtures().expect("build the fixtures") {
            let dir = fixture_dir(sketch.version());
            fs::create_dir_all(&dir).expect("create the fixture directory");
            fs::write(dir.join(name), sketch.to_bytes()).expect("write a fixture");
        }
    });
}

/// The committed bytes of fixture `name` of format version `version`.
fn stored_fixture(version: u8, name: &str) -> Result<Vec<u8>, Box<dyn Error>> {
    bless_once();
    let path = fixture_dir(version).join(name);
    fs::read(&path).map_err(|e| {
        format!("{}: {e} (run `SYNOPSES_BLESS=1 cargo test --test golden` to create it)", path.display()).into()
    })
}

#[test]
fn fixtures_are_reproduced_byte_for_byte() -> TestResult {
    for (name, sketch) in fixtures()? {
        let rebuilt = sketch.to_bytes();
        let stored = stored_fixture(sketch.version(), name)?;
        assert!(
            stored == rebuilt,
            "{name}: the rebuilt encoding differs from the committed fixture at byte {} \
             (stored {} bytes, rebuilt {} bytes)",
            first_difference(&stored, &rebuilt),
            stored.len(),
            rebuilt.len(),
        );
    }
    Ok(())
}

#[test]
fn fixtures_decode_to_their_recipe() -> TestResult {
    for (name, sketch) in fixtures()? {
        let stored = stored_fixture(sketch.version(), name)?;
        let header = [b'S', b'Y', sketch.version(), sketch.family()];
        assert_eq!(&stored[..4], &header, "{name}: magic, version and family");
        assert_eq!(stored.len(), sketch.encoded_len(), "{name}: encoded_len");
        let (equal, answers, again) = sketch.decode_like(&stored)?;
        assert!(equal, "{name}: the decoded sketch differs from its recipe");
        let bits = |a: &[f64]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&answers), bits(&sketch.answers()), "{name}: answers");
        assert_eq!(again, stored, "{name}: re-encoding the decoded fixture");
        let (content, sum) = stored.split_at(stored.len() - 8);
        assert_eq!(sum, xxh3_64_with_seed(content, 0).to_le_bytes(), "{name}: checksum trailer");
    }
    Ok(())
}

/// The files of an older format version still decode to their recipe, with the same answers
/// bit for bit (so the digest pinned for the current file pins them too). Re-encoding writes
/// the current version, so the bytes are not compared.
#[test]
fn read_only_fixtures_decode_to_their_recipe() -> TestResult {
    let all = read_only_fixtures();
    assert!(!all.is_empty(), "the samplers' version 1 files are read-only fixtures");
    for (version, name, sketch) in all {
        assert!(version < sketch.version(), "{name}: a read-only fixture is of an older version");
        let stored = stored_fixture(version, name)?;
        assert_eq!(&stored[..4], &[b'S', b'Y', version, sketch.family()], "v{version}/{name}: header");
        let (equal, answers, again) = sketch.decode_like(&stored)?;
        assert!(equal, "v{version}/{name}: the decoded sketch differs from its recipe");
        let bits = |a: &[f64]| a.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&answers), bits(&sketch.answers()), "v{version}/{name}: answers");
        assert_eq!(again[..4], [b'S', b'Y', sketch.version(), sketch.family()], "v{version}/{name}: re-encoded");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Estimates
// ---------------------------------------------------------------------------------------------

/// HyperLogLog of precision `p` and `seed` that observed `items`.
fn hll(p: u8, seed: u64, items: impl IntoIterator<Item = u64>) -> Result<HyperLogLog, Box<dyn Error>> {
    let mut h = HyperLogLog::with_seed(p, seed)?;
    items.into_iter().for_each(|i| h.observe(i));
    Ok(h)
}

/// FlajoletMartin of `bitmaps` bitmaps and `seed` that observed `items`.
fn fm(bitmaps: usize, seed: u64, items: impl IntoIterator<Item = u64>) -> Result<FlajoletMartin, Box<dyn Error>> {
    let mut f = FlajoletMartin::with_seed(bitmaps, seed)?;
    items.into_iter().for_each(|i| f.observe(i));
    Ok(f)
}

/// Named estimates of seeded sketches, for [`ESTIMATE_BITS`].
fn estimates() -> Result<Vec<(&'static str, f64)>, Box<dyn Error>> {
    let mut out = Vec::new();
    for (name, sketch) in fixtures()? {
        // The first answer (the estimate, for a distinct count) and a digest of them all.
        let answers = sketch.answers();
        out.push((name, answers[0]));
        let label: &'static str = Box::leak(format!("{name} digest of the answers").into_boxed_str());
        out.push((label, f64::from_bits(digest(&answers))));
    }
    let dense = hll(12, DEFAULT_SEED, 0..100_000)?;
    out.push(("hll p12 0..100k register_estimate", dense.register_estimate()));
    out.push(("hll p12 0..100k reduce(8)", dense.reduce(8)?.estimate()));
    let big = hll(14, 7, 0..1_000_000)?;
    out.push(("hll p14 seed 7 0..1M estimate", big.estimate()));
    out.push(("hll p14 seed 7 0..1M register_estimate", big.register_estimate()));
    out.push(("hll p4 0..1000 register_estimate", hll(4, DEFAULT_SEED, 0..1_000)?.register_estimate()));
    let switch = hll(8, 3, 0..49)?;
    out.push(("hll p8 seed 3 0..49 (just dense)", switch.estimate()));
    out.push(("fm 64 seed 5 0..100", fm(64, 5, 0..100)?.estimate()));
    out.push(("fm 64 seed 5 0..100k", fm(64, 5, 0..100_000)?.estimate()));
    out.push(("fm 4096 0..1M", fm(4096, DEFAULT_SEED, 0..1_000_000)?.estimate()));
    let mut ull = UltraLogLog::new(10)?;
    ull.observe_all(0..100_000_u64);
    out.push(("ull p10 0..100k ML", ull.register_estimate(UltraLogLogEstimator::MaximumLikelihood)));
    out.push(("ull p10 0..100k FGRA", ull.register_estimate(UltraLogLogEstimator::Fgra)));
    out.push(("ull p10 0..100k reduce(6)", ull.reduce(6)?.estimate()));
    let mut ell = ExaLogLog::new(8)?;
    ell.observe_all(0..100_000_u64);
    out.push(("ell p8 0..100k ML", ell.register_estimate()));
    out.push(("ell p8 0..100k reduce(4)", ell.reduce(4)?.estimate()));
    Ok(out)
}

/// `(name, f64::to_bits of the estimate)`, computed once and pasted; for each fixture, its first
/// answer and a digest of all its answers (`tests/common`'s `Answers`).
const ESTIMATE_BITS: &[(&str, u64)] = &[
    ("fm_256.bin", 0x40FBB5FD1AE2AFB6), // 113503.81906384122
    ("fm_256.bin digest of the answers", 0xFF6253F35440DAE4),
    ("fm_16_seed99.bin", 0x40357AE8506BED20), // 21.480107332562625
    ("fm_16_seed99.bin digest of the answers", 0x18780A07ABA6EBEC),
    ("hll_p12_empty.bin", 0x0000000000000000), // 0
    ("hll_p12_empty.bin digest of the answers", 0x04007D3C9B5E38CB),
    ("hll_p12_sparse.bin", 0x4072C00000000000), // 300
    ("hll_p12_sparse.bin digest of the answers", 0x4C5311D1FA1B8701),
    ("hll_p10_sparse_strings.bin", 0x4062C00000000000), // 150
    ("hll_p10_sparse_strings.bin digest of the answers", 0xDB4EE4F7EFDDA4CC),
    ("hll_p12_dense.bin", 0x40F82E938036CC69), // 99049.2188022599
    ("hll_p12_dense.bin digest of the answers", 0xDE65FB5D569961FC),
    ("hll_p12_merged.bin", 0x40F853CC01EEC7EC), // 99644.75047185988
    ("hll_p12_merged.bin digest of the answers", 0xEBFFAECBA93A3BC5),
    ("hll_p4_dense.bin", 0x409218DD1D199184), // 1158.2159313197199
    ("hll_p4_dense.bin digest of the answers", 0x8A5BF841B6D34C05),
    ("ull_p10.bin", 0x40F7B6FA451F41F7), // 97135.64187551277
    ("ull_p10.bin digest of the answers", 0x25A41A33E4A0FE2E),
    ("ull_p8_seed42_merged.bin", 0x40F75EE3D99D814E), // 95726.24062872419
    ("ull_p8_seed42_merged.bin digest of the answers", 0x0E6686519323B5F6),
    ("ull_p12_empty.bin", 0x0000000000000000), // 0
    ("ull_p12_empty.bin digest of the answers", 0xAF1BF82DD1054BC4),
    ("ull_p12_sparse_strings.bin", 0x4062C00000000000), // 150
    ("ull_p12_sparse_strings.bin digest of the answers", 0x28B8F9C88E367F61),
    ("ell_p8.bin", 0x40F8B95DA3F88918), // 101269.85253194382
    ("ell_p8.bin digest of the answers", 0x4A7824F395A2CDD9),
    ("ell_p6_t1_d9_strings.bin", 0x40804F4C9D203AB9), // 521.912409068863
    ("ell_p6_t1_d9_strings.bin digest of the answers", 0xE86AB354AFC34342),
    ("ell_p10_sparse.bin", 0x4072C00000000000), // 300
    ("ell_p10_sparse.bin digest of the answers", 0x4C5311D1FA1B8701),
    ("cm_64x3.bin", 0x40BB9D0000000000), // 7069
    ("cm_64x3.bin digest of the answers", 0x6A9668F5D6C61487),
    ("cu_64x3_seed5.bin", 0x40BB9D0000000000), // 7069
    ("cu_64x3_seed5.bin digest of the answers", 0x24251361F14B14EF),
    ("cm_64x3_8bit.bin", 0x40BB9D0000000000), // 7069
    ("cm_64x3_8bit.bin digest of the answers", 0xD6ECE55D5369D4BC),
    ("cu_64x3_seed5_16bit.bin", 0x40BB9D0000000000), // 7069
    ("cu_64x3_seed5_16bit.bin digest of the answers", 0x24251361F14B14EF),
    ("hh_8_strings.bin", 0x40BB9D0000000000), // 7069
    ("hh_8_strings.bin digest of the answers", 0x9D04295B5F79F413),
    ("hh_8_strings_seed7.bin", 0x40BB9D0000000000), // 7069
    ("hh_8_strings_seed7.bin digest of the answers", 0x9D04295B5F79F413),
    ("bloom_500_1pct.bin", 0x40A0820000000000), // 2113
    ("bloom_500_1pct.bin digest of the answers", 0x174EC72337961052),
    ("bloom_100x3_seed8.bin", 0x4022000000000000), // 9
    ("bloom_100x3_seed8.bin digest of the answers", 0x697321755B6B3543),
    ("cbf_500_1pct.bin", 0x4074000000000000), // 320
    ("cbf_500_1pct.bin digest of the answers", 0x42FA6FFAC45BDA8B),
    ("cbf_100x3_8bit_seed8.bin", 0x4010000000000000), // 4
    ("cbf_100x3_8bit_seed8.bin digest of the answers", 0x67FE13D20F1C6A04),
    ("reservoir_10_seed2024.bin", 0x40F86A0000000000), // 100000
    ("reservoir_10_seed2024.bin digest of the answers", 0x4EEDB160B3FA00CD),
    ("weighted_5_seed2024.bin", 0x408F400000000000), // 1000
    ("weighted_5_seed2024.bin digest of the answers", 0x957C8AA801CF0467),
    ("priority_8_seed2024.bin", 0x408F400000000000), // 1000
    ("priority_8_seed2024.bin digest of the answers", 0xE8BFDEEA60204DE9),
    ("dd_1pct_empty.bin", 0x0000000000000000), // 0
    ("dd_1pct_empty.bin digest of the answers", 0xEE8769F148511BF5),
    ("dd_1pct_latencies.bin", 0x40B3880000000000), // 5000
    ("dd_1pct_latencies.bin digest of the answers", 0x3B6EC7FB67082E30),
    ("dd_2pct_cubic_spread.bin", 0x40A7700000000000), // 3000
    ("dd_2pct_cubic_spread.bin digest of the answers", 0xD899FE2187FE39DB),
    ("dd_5pct_linear_64bins_highest.bin", 0x40A7700000000000), // 3000
    ("dd_5pct_linear_64bins_highest.bin digest of the answers", 0x51C1115B3B8632D9),
    ("kll_200_empty.bin", 0x0000000000000000), // 0
    ("kll_200_empty.bin digest of the answers", 0x2232F427097AD34E),
    ("kll_200_spread_seed7.bin", 0x40C3880000000000), // 10000
    ("kll_200_spread_seed7.bin digest of the answers", 0xBA00FD0BCBA5ACFB),
    ("kll_50_merged_weighted_seed9.bin", 0x40C1940000000000), // 9000
    ("kll_50_merged_weighted_seed9.bin digest of the answers", 0x040159727F7FB640),
    ("kll_20_words_seed3.bin", 0x408F400000000000), // 1000
    ("kll_20_words_seed3.bin digest of the answers", 0xBC3F1D315F28C830),
    ("hll p12 0..100k register_estimate", 0x40F8C5934BA36353), // 101465.2059663658
    ("hll p12 0..100k reduce(8)", 0x40F8BC1E909F04AC),         // 101313.91030790162
    ("hll p14 seed 7 0..1M estimate", 0x412E319560005665),     // 989386.6875025748
    ("hll p14 seed 7 0..1M register_estimate", 0x412E7601962BAFFC), // 998144.7933020587
    ("hll p4 0..1000 register_estimate", 0x40963B0FCA176308),  // 1422.7654193548387
    ("hll p8 seed 3 0..49 (just dense)", 0x4048912BF6BE539E),  // 49.13415416997235
    ("fm 64 seed 5 0..100", 0x40582071B7DBA258),               // 96.50694080780647
    ("fm 64 seed 5 0..100k", 0x40F70D0D51D718B5),              // 94416.83248052264
    ("fm 4096 0..1M", 0x412E748054A61B4F),                     // 997952.1653297934
    ("ull p10 0..100k ML", 0x40F84CB690DBA4B2),                // 99531.41036571821
    ("ull p10 0..100k FGRA", 0x40F7FEF1A6ACFBF1),              // 98287.10319231429
    ("ull p10 0..100k reduce(6)", 0x40F63A3E241D0DB9),         // 91043.88381677018
    ("ell p8 0..100k ML", 0x40F8C99FAE00196E),                 // 101529.97998056348
    ("ell p8 0..100k reduce(4)", 0x40F8ED30863839AC),          // 102099.03276846436
];

#[test]
fn estimates_are_pinned() -> TestResult {
    let got = estimates()?;
    // On an intended change of an estimator (or of this list), the message is the table to paste.
    let table: String = got
        .iter()
        .map(|(name, e)| match name.ends_with("digest of the answers") {
            true => format!("    ({name:?}, 0x{:016X}),\n", e.to_bits()),
            false => format!("    ({name:?}, 0x{:016X}), // {e}\n", e.to_bits()),
        })
        .collect();
    let names: Vec<&str> = got.iter().map(|g| g.0).collect();
    let pinned: Vec<&str> = ESTIMATE_BITS.iter().map(|g| g.0).collect();
    assert!(names == pinned, "the estimate list and ESTIMATE_BITS name different sketches; new table:\n{table}");
    let changed: Vec<String> = got
        .iter()
        .zip(ESTIMATE_BITS)
        .filter(|((_, estimate), (_, bits))| estimate.to_bits() != *bits)
        .map(|((name, estimate), (_, bits))| format!("  {name}: {estimate}, pinned {}", f64::from_bits(*bits)))
        .collect();
    assert!(changed.is_empty(), "estimates changed:\n{}\nnew table:\n{table}", changed.join("\n"));
    Ok(())
}

/// HyperLogLog's entropy-coded encoding (`to_compressed_bytes`), pinned like UltraLogLog's
/// below, for one stream (martingale kept, default seed left out), a merge of a seed, a
/// sparse sketch (its entries gap-coded), and a sketch of 3900 items a register, whose code's
/// tables are shifted from those of a lower scale (these bytes, like the others, are the ones
/// the coder wrote before it shifted tables).
#[test]
fn compressed_hyperloglog_bytes_are_pinned() -> TestResult {
    let one = hll(12, DEFAULT_SEED, 0..100_000)?;
    let mut merged = hll(10, 7, 0..60_000)?;
    merged.merge(&hll(10, 7, 40_000..100_000)?)?;
    let sparse = hll(12, DEFAULT_SEED, 0..500)?;
    assert!(sparse.is_sparse());
    let large = hll(8, DEFAULT_SEED, 0..1_000_000)?;
    let pinned: [(u64, usize); 4] = [
        (7099343344785123818, 1485),
        (11824653448521407852, 391),
        (13559301128779491312, 1305),
        (11149399369879249831, 121),
    ];
    for (sketch, (digest, len)) in [one, merged, sparse, large].iter().zip(pinned) {
        let bytes = sketch.to_compressed_bytes();
        assert!(bytes.len() < sketch.to_bytes().len(), "the coded form is the smaller");
        assert_eq!((xxh3_64_with_seed(&bytes, 0), bytes.len()), (digest, len), "{sketch:?}");
        assert_eq!(&HyperLogLog::from_bytes(&bytes)?, sketch);
    }
    Ok(())
}

/// UltraLogLog's entropy-coded encoding (`to_compressed_bytes`), pinned by length and digest
/// for a sketch of one stream (martingale kept), a merged one, a small one, a sparse one (its
/// entries gap-coded) and one of 3900 items a register (its code's tables shifted from a lower
/// scale's, the same bytes as before they were): a change to the register model, the exponential it is computed
/// with, the scale's sample, the construction of the Huffman code (its lengths, their limit,
/// the escape, the canonical order), the streams or the entries' code changes these bytes,
/// and would leave stored sketches undecodable.
#[test]
fn compressed_ultraloglog_bytes_are_pinned() -> TestResult {
    let mut one = UltraLogLog::new(10)?;
    one.observe_all(0..100_000_u64);
    let mut merged = UltraLogLog::with_seed(12, 7)?;
    let mut half = UltraLogLog::with_seed(12, 7)?;
    merged.observe_all(0..500_000_u64);
    half.observe_all(500_000..1_000_000_u64);
    merged.merge(&half)?;
    let mut small = UltraLogLog::with_seed(8, 42)?;
    small.observe_all(0..300_u64);
    let mut sparse = UltraLogLog::with_seed(14, 3)?;
    sparse.observe_all(0..1_000_u64);
    assert!(sparse.is_sparse());
    let mut large = UltraLogLog::new(8)?;
    large.observe_all(0..1_000_000_u64);
    let pinned: [(u64, usize); 5] = [
        (13650774835723930160, 546),
        (3245108650905199036, 2076),
        (15045058497608015355, 131),
        (10941741779291806994, 2481),
        (2226643275646902339, 155),
    ];
    for (sketch, (digest, len)) in [one, merged, small, sparse, large].iter().zip(pinned) {
        let bytes = sketch.to_compressed_bytes();
        assert!(bytes.len() < sketch.to_bytes().len(), "the coded form is the smaller");
        assert_eq!((xxh3_64_with_seed(&bytes, 0), bytes.len()), (digest, len), "{sketch:?}");
        assert_eq!(&UltraLogLog::from_bytes(&bytes)?, sketch);
    }
    Ok(())
}
