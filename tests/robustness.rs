//! Bad input never panics and always gives a clear error.
//!
//! One generic suite, instantiated for every type with an encoding (`decoder_suite!`, over the
//! `Subject` trait of `tests/common`):
//!
//! * arbitrary bytes, arbitrary bytes after a valid header, and arbitrary bodies under a valid
//!   checksum decode to an error that says why, or to a canonical state that answers finitely
//!   and survives use;
//! * every change to a real encoding (of every internal mode) gives the exact error the
//!   documented order of the checks predicts, for the type's own decoder and every other;
//!   changes to a body under a valid checksum are caught by the fields' validation, or decode
//!   canonically;
//! * every truncation is rejected, and a decoder never allocates more than in proportion to
//!   the bytes it was given, whatever lengths they claim;
//! * serde (feature `serde`): JSON round trips, and corrupted or malformed JSON is an error
//!   exactly when the bytes are.
//!
//! Then, per type, what no generic test can know: structure-aware bodies that reach the deep
//! checks, hand-crafted encodings with a *valid* checksum but one invalid field (each next to
//! a valid control built by the same helper), constructor parameters out of range, and merges
//! of mismatched configurations, which must leave the target unchanged.
//!
//! The test binary installs a global allocator that records, per thread and only while asked
//! to, the largest single allocation.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::error::Error;
use std::time::{Duration, Instant};

use common::{ENVELOPE_LEN, Subject, body, envelope, envelope_with};
use proptest::prelude::*;
use proptest::sample::Index;
use synopses::DecodeError;
use synopses::cardinality::{ExaLogLog, ExaLogLogShape, FlajoletMartin, HyperLogLog, UltraLogLog};
use synopses::codec::Codec;
use synopses::core::{Confidence, Weight};
use synopses::frequency::{CountMin, HeavyHitters, Update};
use synopses::hash::DEFAULT_SEED;
use synopses::membership::{Bloom, CounterWidth, CountingBloom};
use synopses::quantiles::{DDSketch, Kll};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};

type TestResult = Result<(), Box<dyn Error>>;

/// Family codes of the format.
const FM: u8 = FlajoletMartin::FAMILY;
const HLL: u8 = HyperLogLog::FAMILY;
const CM: u8 = CountMin::FAMILY;
const BLOOM: u8 = Bloom::FAMILY;
const HH: u8 = HeavyHitters::<u64>::FAMILY;
const CBF: u8 = CountingBloom::FAMILY;
const RES: u8 = Reservoir::<u64>::FAMILY;
const WRES: u8 = WeightedReservoir::<u64>::FAMILY;
const PRIO: u8 = PrioritySample::<u64>::FAMILY;
const ULL: u8 = UltraLogLog::FAMILY;
const ELL: u8 = ExaLogLog::FAMILY;

// ---------------------------------------------------------------------------------------------
// Allocation tracking
// ---------------------------------------------------------------------------------------------

/// The system allocator, noting the largest request of the current thread while tracking.
struct LargestAllocation;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    let tracking = TRACKING.try_with(Cell::get).unwrap_or(false);
    if tracking {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Runs `f` and returns its result with the largest single allocation it made on this thread
/// and how long it took.
fn measured<R>(f: impl FnOnce() -> R) -> (R, usize, Duration) {
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|t| t.set(true));
    let start = Instant::now();
    let out = f();
    let elapsed = start.elapsed();
    TRACKING.with(|t| t.set(false));
    (out, LARGEST.with(Cell::get), elapsed)
}

// ---------------------------------------------------------------------------------------------
// Hand-built encodings
// ---------------------------------------------------------------------------------------------

/// The start of a HyperLogLog body: precision, flags, seed, and the martingale if given.
fn hll_head(precision: u8, flags: u8, seed: u64, martingale: Option<f64>) -> Vec<u8> {
    let mut body = vec![precision, flags];
    body.extend_from_slice(&seed.to_le_bytes());
    if let Some(x) = martingale {
        body.extend_from_slice(&x.to_bits().to_le_bytes());
    }
    body
}

/// A sparse HyperLogLog body: flags 0, the entry count, then the entries as given.
fn hll_sparse_body(precision: u8, seed: u64, count: u32, entries: &[u32]) -> Vec<u8> {
    let mut body = hll_head(precision, 0, seed, None);
    body.extend_from_slice(&count.to_le_bytes());
    entries.iter().for_each(|e| body.extend_from_slice(&e.to_le_bytes()));
    body
}

/// A sparse HyperLogLog encoding whose count is the number of entries.
fn hll_sparse(precision: u8, seed: u64, entries: &[u32]) -> Vec<u8> {
    envelope(HLL, &hll_sparse_body(precision, seed, entries.len() as u32, entries))
}

/// Packs registers 6 bits each, four to three bytes, least significant first.
fn pack_registers(registers: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(registers.len() / 4 * 3);
    for quad in registers.chunks(4) {
        let v = quad.iter().enumerate().fold(0u32, |acc, (k, &r)| acc | (u32::from(r & 0x3f) << (6 * k)));
        out.extend_from_slice(&v.to_le_bytes()[..3]);
    }
    out
}

/// A dense HyperLogLog body (flags: dense, and martingale when given).
fn hll_dense_body(precision: u8, seed: u64, martingale: Option<f64>, registers: &[u8]) -> Vec<u8> {
    let flags = 1 | (u8::from(martingale.is_some()) << 1);
    let mut body = hll_head(precision, flags, seed, martingale);
    body.extend_from_slice(&pack_registers(registers));
    body
}

fn hll_dense(precision: u8, seed: u64, martingale: Option<f64>, registers: &[u8]) -> Vec<u8> {
    envelope(HLL, &hll_dense_body(precision, seed, martingale, registers))
}

/// A sparse entry: the top 26 hash bits, then the 6-bit rank.
fn entry(top: u32, rank: u32) -> u32 {
    (top << 6) | rank
}

/// The most entries a sparse sketch of precision `p` holds: `3 · 2^p / 16`.
fn sparse_limit(p: u8) -> usize {
    3 * (1usize << p) / 16
}

/// `n` valid, ascending, distinct sparse entries.
fn ascending_entries(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| entry(i * 1021 + 3, 1 + i % 39)).collect()
}

/// A FlajoletMartin body: log2 of the bitmap count, seed, bitmaps.
fn fm_body(log2: u8, seed: u64, bitmaps: &[u32]) -> Vec<u8> {
    let mut body = vec![log2];
    body.extend_from_slice(&seed.to_le_bytes());
    bitmaps.iter().for_each(|b| body.extend_from_slice(&b.to_le_bytes()));
    body
}

fn fm_encoding(log2: u8, seed: u64, bitmaps: &[u32]) -> Vec<u8> {
    envelope(FM, &fm_body(log2, seed, bitmaps))
}

fn is_invalid_field(r: &Result<impl std::fmt::Debug, DecodeError>, name: &str) -> bool {
    matches!(r, Err(DecodeError::InvalidField { field, .. }) if *field == name)
}

// ---------------------------------------------------------------------------------------------
// The generic decoder suite
// ---------------------------------------------------------------------------------------------

/// Decodes `bytes` as an `S`. An error must say something; a state must be canonical
/// (re-encodes to the same bytes, or in the current version from an older one, which decode
/// to an equal state), answer finitely, be its own merge with the empty instance, and survive
/// use.
fn check_decoded<S: Subject>(bytes: &[u8]) -> Result<(), TestCaseError> {
    let s = match S::from_bytes(bytes) {
        Err(e) => {
            prop_assert!(!e.to_string().is_empty());
            return Ok(());
        }
        Ok(s) => s,
    };
    let again = s.to_bytes();
    if bytes[2] == S::VERSION {
        let canonical = s.encodings().iter().any(|e| e == bytes);
        prop_assert!(canonical, "an accepted encoding is not canonical: {:?}", s);
    } else {
        // An older version is read, never written: the state re-encodes in the current one.
        prop_assert_eq!(again[2], S::VERSION);
    }
    prop_assert_eq!(s.encoded_len(), again.len());
    let back = S::from_bytes(&again);
    prop_assert_eq!(back.as_ref(), Ok(&s));
    for (i, a) in s.answers().iter().enumerate() {
        prop_assert!(a.is_finite(), "answer {} is {} for {:?}", i, a, s);
    }
    let mut merged = s.empty_like();
    merged.merge(&s).map_err(|e| TestCaseError::fail(format!("the empty instance refused a merge: {e}")))?;
    prop_assert_eq!(&merged, &s);
    let _ = format!("{s:?}");
    s.exercise();
    Ok(())
}

/// A decoder reporting only the error.
type Decoder = fn(&[u8]) -> Result<(), DecodeError>;

/// Family codes are never shared: two types of one code would read each other's bytes.
#[test]
fn family_codes_are_distinct() {
    use synopses::stream::{CountWindow, DChoices, KeyGrouping, PartialKeyGrouping, ShuffleGrouping, TimeWindow};
    let mut seen = std::collections::HashMap::new();
    // Every type with an encoding: the synopses, and the stream operators' state.
    let stream = [
        (CountWindow::<HyperLogLog>::FAMILY, "CountWindow"),
        (TimeWindow::<HyperLogLog>::FAMILY, "TimeWindow"),
        (KeyGrouping::FAMILY, "KeyGrouping"),
        (ShuffleGrouping::FAMILY, "ShuffleGrouping"),
        (PartialKeyGrouping::FAMILY, "PartialKeyGrouping"),
        (DChoices::FAMILY, "DChoices"),
    ];
    for (code, name) in families().into_iter().chain(stream) {
        let first = *seen.entry(code).or_insert(name);
        assert_eq!(first, name, "family code {code} is used twice");
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    /// A bit of one of the 4 header bytes, where the error variant is most specific.
    FlipHeaderBit(usize, u8),
    Truncate(Index),
    Append(Vec<u8>),
    Overwrite(Index, u8),
}

fn mutation_strategy() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, bit)| Mutation::FlipBit(i, bit)),
        any::<Index>().prop_map(Mutation::Truncate),
        proptest::collection::vec(any::<u8>(), 1..64).prop_map(Mutation::Append),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Overwrite(i, b)),
        (0usize..4, 0u8..8).prop_map(|(i, bit)| Mutation::FlipHeaderBit(i, bit)),
    ]
}

impl Mutation {
    /// The mutated bytes; `None` when the mutation cannot apply (an empty body, say).
    fn apply(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut out = bytes.to_vec();
        let n = out.len().max(1);
        match self {
            Self::FlipBit(i, bit) => *out.get_mut(i.index(n))? ^= 1 << bit,
            Self::FlipHeaderBit(at, bit) => *out.get_mut(*at)? ^= 1 << bit,
            Self::Truncate(i) => out.truncate(i.index(bytes.len().max(1))),
            Self::Append(extra) => out.extend_from_slice(extra),
            Self::Overwrite(i, b) => *out.get_mut(i.index(n))? = *b,
        }
        Some(out)
    }
}

/// The error that the documented check order (length, magic, family, version, checksum) gives
/// for a changed encoding read by the decoder of `decoder_family`, which reads the versions
/// from 1 to `newest`.
fn expected_envelope_error(bytes: &[u8], decoder_family: u8, newest: u8) -> DecodeError {
    if bytes.len() < ENVELOPE_LEN {
        DecodeError::Truncated { needed: ENVELOPE_LEN, available: bytes.len() }
    } else if bytes[..2] != *b"SY" {
        DecodeError::BadMagic
    } else if bytes[3] != decoder_family {
        DecodeError::WrongFamily { expected: decoder_family, found: bytes[3] }
    } else if !(1..=newest).contains(&bytes[2]) {
        DecodeError::UnsupportedVersion(bytes[2])
    } else {
        DecodeError::ChecksumMismatch
    }
}

/// A changed real encoding is rejected by every decoder, with the error the check order gives.
fn mutation_is_rejected<S: Subject>(original: &[u8], mutation: &Mutation) -> Result<(), TestCaseError> {
    let Some(mutated) = mutation.apply(original).filter(|m| m != original) else {
        return Ok(()); // Overwrote a byte with itself, or truncated to the full length.
    };
    for &(family, newest, decode) in DECODERS {
        prop_assert_eq!(decode(&mutated), Err(expected_envelope_error(&mutated, family, newest)), "{:?}", mutation);
    }
    let own = S::from_bytes(&mutated).map(drop);
    match mutation {
        Mutation::Truncate(_) => {
            let truncated = matches!(own, Err(DecodeError::Truncated { .. } | DecodeError::ChecksumMismatch));
            prop_assert!(truncated, "{:?}", own);
        }
        _ if mutated[..4] != original[..4] => {
            let header = matches!(
                own,
                Err(DecodeError::BadMagic | DecodeError::UnsupportedVersion(_) | DecodeError::WrongFamily { .. })
            );
            prop_assert!(header, "{:?}", own);
        }
        _ => prop_assert_eq!(own, Err(DecodeError::ChecksumMismatch)),
    }
    Ok(())
}

/// Decoding `bytes` fails as truncated (its claims run past its end), allocating no more than
/// the bytes it was given.
fn assert_allocates_at_most_its_input<S: Subject>(bytes: &[u8]) {
    let (r, largest, _) = measured(|| S::from_bytes(bytes).map(drop));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
    assert!(largest <= bytes.len(), "allocated {largest} bytes for a {}-byte input", bytes.len());
}

/// The generic suite for one type, in a module of its own.
macro_rules! decoder_suite {
    ($name:ident, $ty:ty) => {
        mod $name {
            use super::*;

            fn encodings() -> &'static [(String, Vec<u8>)] {
                static ENCODINGS: std::sync::LazyLock<Vec<(String, Vec<u8>)>> = std::sync::LazyLock::new(|| {
                    <$ty as Subject>::examples()
                        .into_iter()
                        .flat_map(|(label, s)| {
                            s.encodings().into_iter().enumerate().map(move |(i, b)| (format!("{label} #{i}"), b))
                        })
                        .collect()
                });
                &ENCODINGS
            }

            /// The small encodings, quick to mutate.
            fn small() -> Vec<&'static [u8]> {
                encodings().iter().map(|(_, b)| b.as_slice()).filter(|b| b.len() <= 4096).collect()
            }

            proptest! {
                #[test]
                fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
                    check_decoded::<$ty>(&bytes)?;
                }

                #[test]
                fn arbitrary_bytes_after_a_valid_header_never_panic(version in 1..=<$ty>::VERSION, rest in proptest::collection::vec(any::<u8>(), 0..1500)) {
                    let mut bytes = b"SY".to_vec();
                    bytes.extend_from_slice(&[version, <$ty>::FAMILY]);
                    bytes.extend_from_slice(&rest);
                    check_decoded::<$ty>(&bytes)?;
                }

                /// In every version the type reads.
                #[test]
                fn arbitrary_bodies_with_a_valid_checksum_never_panic(version in 1..=<$ty>::VERSION, body in proptest::collection::vec(any::<u8>(), 0..1500)) {
                    check_decoded::<$ty>(&envelope_with(*b"SY", version, <$ty>::FAMILY, &body))?;
                }

                #[test]
                fn every_change_to_a_real_encoding_is_rejected(which in any::<Index>(), mutation in mutation_strategy()) {
                    let small = small();
                    mutation_is_rejected::<$ty>(small[which.index(small.len())], &mutation)?;
                }

                /// What the checksum would catch first, the validation of the fields must
                /// catch, or the result must be canonical.
                #[test]
                fn changed_bodies_under_a_valid_checksum_are_validated(which in any::<Index>(), mutation in mutation_strategy()) {
                    let small = small();
                    let original = small[which.index(small.len())];
                    if let Some(changed) = mutation.apply(body(original)) {
                        check_decoded::<$ty>(&envelope_with(*b"SY", original[2], <$ty>::FAMILY, &changed))?;
                    }
                }
            }

            #[test]
            fn real_encodings_decode_and_other_families_refuse_them() -> TestResult {
                for (label, bytes) in encodings() {
                    let s = <$ty>::from_bytes(bytes)?;
                    assert!(s.encodings().contains(bytes), "{label}");
                    assert_eq!(s.encoded_len(), s.to_bytes().len(), "{label}");
                    check_decoded::<$ty>(bytes).map_err(|e| format!("{label}: {e}"))?;
                    assert_eq!(bytes[2], <$ty>::VERSION, "{label}: the version the type writes");
                    for &(family, _, decode) in DECODERS.iter().filter(|(f, _, _)| *f != <$ty>::FAMILY) {
                        let expected = DecodeError::WrongFamily { expected: family, found: <$ty>::FAMILY };
                        assert_eq!(decode(bytes), Err(expected), "{label}");
                    }
                }
                Ok(())
            }

            #[test]
            fn every_truncation_is_rejected() {
                for bytes in small().into_iter().take(6) {
                    for len in 0..bytes.len() {
                        let cut = &bytes[..len];
                        let expected = expected_envelope_error(cut, <$ty>::FAMILY, <$ty>::VERSION);
                        assert_eq!(<$ty>::from_bytes(cut).map(drop), Err(expected), "truncated to {len}");
                    }
                }
            }

            /// Each real body cut short and sealed with a valid checksum: its fields claim
            /// more than is there, and the decoder must find out before it allocates.
            #[test]
            fn decoding_allocates_in_proportion_to_its_input() {
                for (label, bytes) in encodings() {
                    let body = body(bytes);
                    let cuts = (0..=32).map(|i| body.len() * i / 32).chain(0..body.len().min(40));
                    for cut in cuts {
                        let resealed = envelope_with(*b"SY", bytes[2], <$ty>::FAMILY, &body[..cut]);
                        let (r, largest, _) = measured(|| <$ty>::from_bytes(&resealed).map(drop));
                        if r.is_err() {
                            // In proportion, not equal: what a decoder builds from the bytes it
                            // read may be a few times their size (a hash table of counters
                            // holds 24-byte entries at a load of 1/2 to 7/8 for each 16-byte
                            // counter read), and small fixed buffers are fine. A claimed
                            // length believed before the bytes are there is off this scale.
                            assert!(largest <= 8 * resealed.len() + 1024, "{label} cut at {cut}: allocated {largest} bytes for {}", resealed.len());
                        }
                    }
                }
            }

            #[cfg(feature = "serde")]
            mod serde_json_input {
                use super::*;

                #[test]
                fn json_round_trips_and_corrupted_json_is_an_error() -> TestResult {
                    for (label, bytes) in small().iter().map(|b| ("", *b)).chain(encodings().iter().map(|(l, b)| (l.as_str(), b.as_slice())).take(3)) {
                        let s = <$ty>::from_bytes(bytes)?;
                        let json = serde_json::to_string(&s)?;
                        let back: $ty = serde_json::from_str(&json)?;
                        assert_eq!(&back, &s, "{label}");
                        assert!(back.encodings().iter().any(|e| e == bytes), "{label}");
                        for at in [0, 2, 3, 4, bytes.len() / 2, bytes.len() - 1] {
                            let mut corrupted = bytes.to_vec();
                            corrupted[at] ^= 0x10;
                            let json = serde_json::to_string(&corrupted)?;
                            assert!(serde_json::from_str::<$ty>(&json).is_err(), "{label}, byte {at}");
                        }
                        let json = serde_json::to_string(&bytes[..bytes.len() - 1])?;
                        assert!(serde_json::from_str::<$ty>(&json).is_err());
                        let json = serde_json::to_string(&[bytes, &[0]].concat())?;
                        assert!(serde_json::from_str::<$ty>(&json).is_err());
                    }
                    Ok(())
                }

                #[test]
                fn malformed_json_is_an_error() {
                    for json in [
                        "", "null", "true", "0", "-1", "\"\"", "\"SY\"", "{}", "[]", "[1,2,3]", "[256]", "[-1]",
                        "[1.5]", "[\"a\"]", "[null]", "[[1]]", "[83,89,1,2", "[83,89,1,2,]", "{\"bytes\":[83,89]}",
                    ] {
                        assert!(serde_json::from_str::<$ty>(json).is_err(), "{json:?}");
                    }
                }

                proptest! {
                    /// JSON of any byte array decodes exactly when `from_bytes` does.
                    #[test]
                    fn json_agrees_with_from_bytes(body in proptest::collection::vec(any::<u8>(), 0..300), wrap in any::<bool>()) {
                        let bytes = if wrap { envelope_with(*b"SY", <$ty>::VERSION, <$ty>::FAMILY, &body) } else { body };
                        let json = serde_json::to_string(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
                        prop_assert_eq!(serde_json::from_str::<$ty>(&json).ok(), <$ty>::from_bytes(&bytes).ok());
                    }
                }
            }
        }
    };
}

/// The suite for every type, and the list of every type's decoder.
macro_rules! decoder_suites {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(decoder_suite!($name, $ty);)*

        /// Every type's decoder, with its family code and the newest version it reads: what
        /// any encoding must meet.
        const DECODERS: &[(u8, u8, Decoder)] = &[$((<$ty>::FAMILY, <$ty>::VERSION, |b| <$ty>::from_bytes(b).map(drop))),*];

        /// Every type's family code and name (without its item type).
        fn families() -> Vec<(u8, &'static str)> {
            let base = |name: &'static str| name.split('<').next().unwrap_or(name);
            vec![$((<$ty>::FAMILY, base(std::any::type_name::<$ty>()))),*]
        }
    };
}
common::for_each_subject!(decoder_suites);

// ---------------------------------------------------------------------------------------------
// HyperLogLog and Flajolet–Martin
// ---------------------------------------------------------------------------------------------

/// A structure-aware HyperLogLog body: a plausible header and a payload near the right shape,
/// sometimes off by a little, so the decoder's deeper checks are reached.
fn hll_body_strategy() -> impl Strategy<Value = Vec<u8>> {
    let precision = prop_oneof![8 => 4u8..=10, 1 => 0u8..=3, 1 => 19u8..=255];
    (precision, any::<u64>(), any::<bool>(), any::<bool>()).prop_flat_map(|(p, seed, dense, with_martingale)| {
        let m = 1usize << p.min(10);
        let max_rank = 65u8.saturating_sub(p.min(10));
        let martingale = prop_oneof![
            4 => (0.0f64..1e9).prop_map(Some),
            1 => any::<f64>().prop_map(Some),
            1 => Just(None),
        ];
        let registers = prop_oneof![
            6 => proptest::collection::vec(0..=max_rank, m),
            1 => proptest::collection::vec(0u8..64, m),
            1 => proptest::collection::vec(0..=max_rank, m.saturating_sub(4)..=m + 4),
        ];
        let limit = sparse_limit(p.min(10));
        let entries =
            proptest::collection::vec((0u32..1 << 26, prop_oneof![9 => 1u32..=39, 1 => 0u32..64]), 0..=limit + 2);
        let count_delta = prop_oneof![8 => Just(0i64), 1 => -2i64..=2, 1 => Just(i64::from(u32::MAX))];
        let flag_noise = prop_oneof![9 => Just(0u8), 1 => any::<u8>()];
        (martingale, registers, entries, count_delta, any::<bool>(), flag_noise).prop_map(
            move |(martingale, registers, mut entries, count_delta, sort, noise)| {
                let martingale = if dense && with_martingale { martingale } else { None };
                let flags = (u8::from(dense) | (u8::from(martingale.is_some()) << 1)) ^ noise;
                let mut body = hll_head(p, flags, seed, martingale);
                if dense {
                    body.extend_from_slice(&pack_registers(&registers));
                } else {
                    if sort {
                        entries.sort_unstable();
                        entries.dedup();
                    }
                    let count = (entries.len() as i64 + count_delta).clamp(0, i64::from(u32::MAX)) as u32;
                    body.extend_from_slice(&count.to_le_bytes());
                    for (top, rank) in entries {
                        body.extend_from_slice(&entry(top, rank).to_le_bytes());
                    }
                }
                body
            },
        )
    })
}

/// A structure-aware FlajoletMartin body.
fn fm_body_strategy() -> impl Strategy<Value = Vec<u8>> {
    let log2 = prop_oneof![8 => 0u8..=8, 1 => 9u8..=20, 1 => any::<u8>()];
    (log2, any::<u64>()).prop_flat_map(|(log2, seed)| {
        let n = 1usize << log2.min(8);
        let bitmaps = prop_oneof![
            6 => proptest::collection::vec(any::<u32>(), n),
            1 => proptest::collection::vec(any::<u32>(), n.saturating_sub(2)..=n + 2),
        ];
        bitmaps.prop_map(move |b| fm_body(log2, seed, &b))
    })
}

proptest! {
    #[test]
    fn structured_hll_bodies_never_panic(body in hll_body_strategy()) {
        check_decoded::<HyperLogLog>(&envelope(HLL, &body))?;
    }

    #[test]
    fn structured_fm_bodies_never_panic(body in fm_body_strategy()) {
        check_decoded::<FlajoletMartin>(&envelope(FM, &body))?;
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-crafted encodings: valid checksum, invalid fields
// ---------------------------------------------------------------------------------------------

/// The helpers above write exactly what the crate writes, so the invalid encodings below
/// differ from valid ones only in the field under test.
#[test]
fn helpers_reproduce_real_encodings() -> TestResult {
    assert_eq!(hll_sparse(12, DEFAULT_SEED, &[]), HyperLogLog::new(12)?.to_bytes());
    // A hash with only its top bit set: top 26 bits 1 << 25, and the 38 bits after them all
    // zero, which is the largest rank, 39.
    let mut one = HyperLogLog::with_seed(12, 5)?;
    one.observe_hash(1 << 63);
    assert_eq!(hll_sparse(12, 5, &[entry(1 << 25, 39)]), one.to_bytes());
    let mut two = HyperLogLog::with_seed(12, 5)?;
    two.observe_hash(u64::MAX);
    two.observe_hash(1 << 63);
    assert_eq!(hll_sparse(12, 5, &[entry(1 << 25, 39), entry((1 << 26) - 1, 1)]), two.to_bytes());

    assert_eq!(fm_encoding(6, 9, &[0; 64]), FlajoletMartin::with_seed(64, 9)?.to_bytes());
    let mut fm = FlajoletMartin::with_seed(1, 9)?;
    fm.observe_hash(0b1000);
    assert_eq!(fm_encoding(0, 9, &[0b1000]), fm.to_bytes());

    // Dense: crafted registers decode, and re-encode to the same bytes.
    for p in [4u8, 5, 12, 18] {
        let m = 1usize << p;
        let registers: Vec<u8> = (0..m).map(|i| (i % usize::from(66 - p)) as u8).collect();
        // A martingale a sketch of these registers can have: above the registers set.
        let set = registers.iter().filter(|&&r| r > 0).count() as f64;
        for martingale in [None, Some(set * 1.5)] {
            let bytes = hll_dense(p, 1, martingale, &registers);
            let hll = HyperLogLog::from_bytes(&bytes)?;
            assert!(!hll.is_sparse());
            assert_eq!(hll.martingale_estimate(), martingale);
            assert_eq!(hll.to_bytes(), bytes, "p {p}");
        }
    }
    Ok(())
}

#[test]
fn precision_outside_4_to_18_is_an_invalid_field() -> TestResult {
    for p in [0u8, 1, 2, 3, 19, 20, 26, 64, 255] {
        let sparse = envelope(HLL, &hll_sparse_body(p, 0, 0, &[]));
        let r = HyperLogLog::from_bytes(&sparse);
        assert!(is_invalid_field(&r, "precision"), "sparse, p {p}: {r:?}");
        let registers = vec![1u8; 1 << p.min(12)];
        let r = HyperLogLog::from_bytes(&hll_dense(p, 0, None, &registers));
        assert!(is_invalid_field(&r, "precision"), "dense, p {p}: {r:?}");
    }
    for p in [4u8, 18] {
        assert_eq!(HyperLogLog::from_bytes(&hll_sparse(p, 0, &[]))?.precision(), p);
    }
    Ok(())
}

#[test]
fn unknown_flag_bits_are_an_invalid_field() -> TestResult {
    // A sparse sketch (bit 0 clear) has no martingale (bit 1), coded (bit 2) or not; bit 3
    // (default seed) needs bit 2; bits 4 to 7 are unknown.
    for flags in [0b010u8, 0b110, 0b1000, 0b1001, 0x10, 0x11, 0x80, 0xF0, 0xFF] {
        let mut body = hll_head(12, flags, 0, None);
        body.extend_from_slice(&0u32.to_le_bytes());
        let r = HyperLogLog::from_bytes(&envelope(HLL, &body));
        assert!(is_invalid_field(&r, "flags"), "flags {flags:#b}: {r:?}");
    }
    Ok(())
}

#[test]
fn a_sparse_sketch_with_a_martingale_is_an_invalid_field() -> TestResult {
    let mut body = hll_head(12, 0b10, 0, Some(3.0));
    body.extend_from_slice(&0u32.to_le_bytes());
    let r = HyperLogLog::from_bytes(&envelope(HLL, &body));
    assert!(is_invalid_field(&r, "flags"), "{r:?}");
    Ok(())
}

#[test]
fn a_martingale_that_is_not_a_finite_count_is_an_invalid_field() -> TestResult {
    // Every register set: the martingale must be at least 1024 (and the sparse limit, 192).
    let registers = vec![1u8; 1 << 10];
    let nan_with_payload = f64::from_bits(0x7FF0_0000_0000_0001);
    let negative_nan = -f64::NAN;
    for x in [f64::NAN, nan_with_payload, negative_nan, -1.0, -1e-300, f64::MIN, f64::INFINITY, f64::NEG_INFINITY] {
        let r = HyperLogLog::from_bytes(&hll_dense(10, 0, Some(x), &registers));
        assert!(is_invalid_field(&r, "martingale"), "martingale {x}: {r:?}");
    }
    for x in [0.0, 1.0, 191.0, 1023.5] {
        let r = HyperLogLog::from_bytes(&hll_dense(10, 0, Some(x), &registers));
        assert!(is_invalid_field(&r, "martingale"), "martingale {x} below the registers set: {r:?}");
    }
    // A dense encoding with no register set is no state a sketch can reach.
    let r = HyperLogLog::from_bytes(&hll_dense(10, 0, None, &vec![0u8; 1 << 10]));
    assert!(is_invalid_field(&r, "registers"), "all-zero dense registers: {r:?}");
    for x in [1024.0, 2000.0] {
        let hll = HyperLogLog::from_bytes(&hll_dense(10, 0, Some(x), &registers))?;
        assert_eq!(hll.martingale_estimate(), Some(x));
        assert_eq!(hll.estimate(), x);
    }
    Ok(())
}

/// A martingale above what its registers allow (the audit's example: `f64::MAX` over
/// registers that say about 10^5) is rejected. Each change of a register adds `m·2^64` over
/// the unseen mass before it, which was at least the mass now: with every register at 1 at
/// precision 10 that is at most 2 per change, at most 1024 changes, after a start of at most
/// the sparse limit (192), so nothing above 2240.
#[test]
fn a_martingale_above_the_registers_is_rejected() -> TestResult {
    let registers = vec![1u8; 1 << 10];
    for x in [2300.0, 1e6, 1e300, f64::MAX] {
        let r = HyperLogLog::from_bytes(&hll_dense(10, 0, Some(x), &registers));
        assert!(is_invalid_field(&r, "martingale"), "martingale {x}: {r:?}");
    }
    // A real sketch of 10^5 items, its martingale replaced by f64::MAX.
    let mut real = HyperLogLog::new(12)?;
    real.observe_all(0..100_000_u64);
    let mut bytes = real.to_bytes();
    bytes[14..22].copy_from_slice(&f64::MAX.to_le_bytes());
    let bytes = envelope(HLL, &bytes[4..bytes.len() - 8]);
    assert!(is_invalid_field(&HyperLogLog::from_bytes(&bytes), "martingale"));
    for ull in [true, false] {
        let (family, bytes) = if ull {
            let mut s = UltraLogLog::new(12)?;
            s.observe_all(0..100_000_u64);
            (ULL, s.to_bytes())
        } else {
            let mut s = ExaLogLog::new(12)?;
            s.observe_all(0..100_000_u64);
            (ELL, s.to_bytes())
        };
        // The martingale follows the precision (and ExaLogLog's t, d and flags) and the seed.
        let at = if ull { 4 + 2 + 8 } else { 4 + 4 + 8 };
        let mut body = bytes[4..bytes.len() - 8].to_vec();
        let real: f64 = f64::from_le_bytes(body[at - 4..at + 4].try_into()?);
        assert!((real / 100_000.0 - 1.0).abs() < 0.1, "{real}");
        body[at - 4..at + 4].copy_from_slice(&f64::MAX.to_le_bytes());
        let r = if ull {
            UltraLogLog::from_bytes(&envelope(family, &body)).map(|_| ())
        } else {
            ExaLogLog::from_bytes(&envelope(family, &body)).map(|_| ())
        };
        assert!(is_invalid_field(&r, "martingale"), "{r:?}");
    }
    Ok(())
}

#[test]
fn a_dense_register_above_65_minus_p_is_an_invalid_field() -> TestResult {
    for p in [4u8, 5, 12, 18] {
        let m = 1usize << p;
        let max_rank = 65 - p;
        for position in [0, 1, 3, m / 2 + 1, m - 1] {
            let mut registers = vec![1u8; m];
            registers[position] = max_rank;
            let valid = HyperLogLog::from_bytes(&hll_dense(p, 0, None, &registers))?;
            assert!(!valid.is_sparse());
            for bad in (max_rank + 1)..64 {
                registers[position] = bad;
                let r = HyperLogLog::from_bytes(&hll_dense(p, 0, None, &registers));
                assert!(is_invalid_field(&r, "registers"), "p {p}, register {position} = {bad}: {r:?}");
            }
        }
    }
    Ok(())
}

#[test]
fn a_dense_payload_of_the_wrong_length_is_rejected() -> TestResult {
    let registers = vec![3u8; 1 << 8];
    let full = hll_dense_body(8, 0, None, &registers);
    for cut in [1, 2, 3, 100, 192] {
        let body = &full[..full.len() - cut];
        let r = HyperLogLog::from_bytes(&envelope(HLL, body));
        assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{cut} bytes short: {r:?}");
    }
    for extra in [1usize, 3, 4, 1000] {
        let mut body = full.clone();
        body.extend(std::iter::repeat_n(0u8, extra));
        assert_eq!(HyperLogLog::from_bytes(&envelope(HLL, &body)), Err(DecodeError::TrailingBytes(extra)));
    }
    Ok(())
}

#[test]
fn a_sparse_count_above_the_limit_is_an_invalid_field() -> TestResult {
    for p in [4u8, 5, 12, 18] {
        let limit = sparse_limit(p);
        let entries = ascending_entries(limit + 1);
        let at_limit = HyperLogLog::from_bytes(&hll_sparse(p, 0, &entries[..limit]))?;
        assert!(at_limit.is_sparse());
        assert_eq!(at_limit.estimate(), limit as f64);
        let r = HyperLogLog::from_bytes(&hll_sparse(p, 0, &entries));
        assert!(is_invalid_field(&r, "sparse count"), "p {p}, {} entries: {r:?}", limit + 1);
    }
    Ok(())
}

#[test]
fn a_huge_sparse_count_fails_fast_without_allocating() -> TestResult {
    let cases = [
        // Far above the limit: rejected as a field before anything else.
        (hll_sparse_body(12, 0, u32::MAX, &[]), false),
        (hll_sparse_body(12, 0, u32::MAX, &[entry(1, 1), entry(2, 1)]), false),
        (hll_sparse_body(18, 0, u32::MAX, &ascending_entries(100)), false),
        // At the limit, with too few bytes: truncated, checked before the entries are read.
        (hll_sparse_body(18, 0, sparse_limit(18) as u32, &[]), true),
        (hll_sparse_body(18, 0, sparse_limit(18) as u32, &[entry(1, 1)]), true),
    ];
    for (body, truncated) in cases {
        let bytes = envelope(HLL, &body);
        let (r, largest, elapsed) = measured(|| HyperLogLog::from_bytes(&bytes));
        if truncated {
            assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
        } else {
            assert!(is_invalid_field(&r, "sparse count"), "{r:?}");
        }
        assert!(largest <= bytes.len(), "allocated {largest} bytes for a {}-byte input", bytes.len());
        assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    }
    Ok(())
}

#[test]
fn hll_decoding_allocates_in_proportion_to_its_input() -> TestResult {
    // A dense header claiming 2^18 registers with none present.
    let dense = envelope(HLL, &hll_head(18, 1, 0, None));
    let martingale = envelope(HLL, &hll_head(18, 3, 0, Some(1.0)));
    for bytes in [dense, martingale] {
        let (r, largest, _) = measured(|| HyperLogLog::from_bytes(&bytes));
        assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
        assert!(largest <= bytes.len(), "allocated {largest} bytes for a {}-byte input", bytes.len());
    }
    Ok(())
}

#[test]
fn fm_decoding_allocates_in_proportion_to_its_input() {
    // 21 bytes claiming 65 536 bitmaps.
    let bytes = fm_encoding(16, 0, &[]);
    assert_allocates_at_most_its_input::<FlajoletMartin>(&bytes);
}

#[test]
fn sparse_entries_must_be_ascending_distinct_and_ranked_1_to_39() -> TestResult {
    let valid = [entry(3, 1), entry(3, 39), entry(4, 1), entry((1 << 26) - 1, 20)];
    assert_eq!(HyperLogLog::from_bytes(&hll_sparse(12, 0, &valid))?.estimate(), 4.0);
    let invalid: &[(&str, &[u32])] = &[
        ("descending", &[entry(5, 1), entry(3, 1)]),
        ("duplicated", &[entry(5, 1), entry(5, 1)]),
        ("duplicated after others", &[entry(1, 1), entry(5, 2), entry(6, 1), entry(6, 1)]),
        ("descending by rank", &[entry(5, 2), entry(5, 1)]),
        ("zero", &[0]),
        ("rank 0", &[entry(5, 0)]),
        ("rank 0 after a valid entry", &[entry(5, 1), entry(6, 0)]),
        ("rank 40", &[entry(5, 40)]),
        ("rank 63", &[entry(5, 63)]),
        ("rank 40 at the top", &[entry((1 << 26) - 1, 40)]),
    ];
    for (what, entries) in invalid {
        let r = HyperLogLog::from_bytes(&hll_sparse(12, 0, entries));
        assert!(is_invalid_field(&r, "sparse entries"), "{what}: {r:?}");
    }
    Ok(())
}

#[test]
fn trailing_bytes_are_rejected() -> TestResult {
    // A sparse count below the number of entries present.
    let body = hll_sparse_body(12, 0, 1, &[entry(1, 1), entry(2, 1)]);
    assert_eq!(HyperLogLog::from_bytes(&envelope(HLL, &body)), Err(DecodeError::TrailingBytes(4)));
    let mut body = hll_sparse_body(12, 0, 0, &[]);
    body.push(0xAA);
    assert_eq!(HyperLogLog::from_bytes(&envelope(HLL, &body)), Err(DecodeError::TrailingBytes(1)));
    for extra in [1usize, 4, 7] {
        let mut body = fm_body(2, 0, &[1, 2, 3, 4]);
        body.extend(std::iter::repeat_n(0u8, extra));
        assert_eq!(FlajoletMartin::from_bytes(&envelope(FM, &body)), Err(DecodeError::TrailingBytes(extra)));
    }
    Ok(())
}

#[test]
fn fm_with_more_than_65536_bitmaps_is_an_invalid_field() -> TestResult {
    for log2 in [17u8, 18, 31, 32, 63, 64, 128, 255] {
        let r = FlajoletMartin::from_bytes(&fm_encoding(log2, 0, &[0; 16]));
        assert!(is_invalid_field(&r, "bitmaps"), "log2 {log2}: {r:?}");
    }
    let max = FlajoletMartin::from_bytes(&fm_encoding(16, 0, &vec![1; 1 << 16]))?;
    assert_eq!(max.bitmaps(), 1 << 16);
    Ok(())
}

#[test]
fn fm_with_missing_bitmaps_is_truncated() -> TestResult {
    let r = FlajoletMartin::from_bytes(&fm_encoding(8, 0, &[0; 255]));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
    let r = FlajoletMartin::from_bytes(&fm_encoding(16, 0, &[]));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
    let mut body = fm_body(2, 0, &[1, 2, 3, 4]);
    body.truncate(body.len() - 1);
    let r = FlajoletMartin::from_bytes(&envelope(FM, &body));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
    // Too short for the log2 and the seed.
    for len in 0..9 {
        let r = FlajoletMartin::from_bytes(&envelope(FM, &fm_body(2, 0, &[])[..len]));
        assert!(matches!(r, Err(DecodeError::Truncated { .. })), "body of {len} bytes: {r:?}");
    }
    assert_eq!(FlajoletMartin::from_bytes(&fm_encoding(2, 0, &[1, 2, 3, 4]))?.bitmap(3), Some(4));
    Ok(())
}

#[test]
fn hll_with_a_short_body_is_truncated() -> TestResult {
    let full = hll_sparse_body(12, 0, 0, &[]);
    for len in 0..full.len() {
        let r = HyperLogLog::from_bytes(&envelope(HLL, &full[..len]));
        assert!(matches!(r, Err(DecodeError::Truncated { .. })), "body of {len} bytes: {r:?}");
    }
    let r = HyperLogLog::from_bytes(&envelope(HLL, &hll_head(12, 3, 0, None)));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "martingale missing: {r:?}");
    Ok(())
}

#[test]
fn the_header_is_checked_with_a_valid_checksum() {
    let headers: [([u8; 2], u8, u8); 12] = [
        (*b"SY", 1, HLL), // The controls: valid for their own decoder.
        (*b"SY", 1, FM),
        (*b"SY", 1, 0),
        (*b"SY", 1, 3),
        (*b"SY", 1, 255),
        (*b"SY", 0, HLL),
        (*b"SY", 2, FM),
        (*b"SY", 255, HLL),
        (*b"sy", 1, HLL),
        (*b"YS", 1, FM),
        (*b"\0\0", 1, HLL),
        (*b"SY", 2, 3),
    ];
    for (magic, version, family) in headers {
        for decoder in [HLL, FM] {
            let body = if decoder == HLL { hll_sparse_body(12, 0, 0, &[]) } else { fm_body(0, 0, &[7]) };
            let bytes = envelope_with(magic, version, family, &body);
            let got = if decoder == HLL {
                HyperLogLog::from_bytes(&bytes).map(|_| ())
            } else {
                FlajoletMartin::from_bytes(&bytes).map(|_| ())
            };
            // The checksum is valid, so a header that passes its checks decodes.
            let expected = match expected_envelope_error(&bytes, decoder, 1) {
                DecodeError::ChecksumMismatch => Ok(()),
                e => Err(e),
            };
            assert_eq!(got, expected, "{magic:?} version {version} family {family}, decoder {decoder}");
        }
    }
}

#[test]
fn wrong_family_between_real_sketches() -> TestResult {
    let mut fm = FlajoletMartin::new(64)?;
    fm.observe("x");
    let mut hll = HyperLogLog::new(12)?;
    hll.observe("x");
    assert_eq!(HyperLogLog::from_bytes(&fm.to_bytes()), Err(DecodeError::WrongFamily { expected: HLL, found: FM }));
    assert_eq!(FlajoletMartin::from_bytes(&hll.to_bytes()), Err(DecodeError::WrongFamily { expected: FM, found: HLL }));
    Ok(())
}

#[test]
fn short_inputs_are_truncated() {
    for len in 0..ENVELOPE_LEN {
        let bytes = &b"SY\x01\x02\0\0\0\0\0\0\0\0"[..len];
        assert_eq!(HyperLogLog::from_bytes(bytes), Err(DecodeError::Truncated { needed: 12, available: len }));
        assert_eq!(FlajoletMartin::from_bytes(bytes), Err(DecodeError::Truncated { needed: 12, available: len }));
    }
}

#[test]
fn decode_errors_display_clearly() {
    let errors = [
        DecodeError::Truncated { needed: 12, available: 3 },
        DecodeError::BadMagic,
        DecodeError::UnsupportedVersion(9),
        DecodeError::WrongFamily { expected: 2, found: 1 },
        DecodeError::ChecksumMismatch,
        DecodeError::InvalidField { field: "precision", reason: "outside 4..=18" },
        DecodeError::TrailingBytes(5),
    ];
    for e in errors {
        let text = e.to_string();
        assert!(!text.is_empty() && !text.contains('{'), "{e:?}: {text}");
        let any: synopses::Error = e.clone().into();
        assert_eq!(any.to_string(), text);
        assert!(std::error::Error::source(&any).is_some());
    }
}

/// A crafted martingale below the number of registers that are set (impossible for a real
/// sketch: it starts at the exact count and grows by at least 1 per register change) is
/// rejected; accepted, it would make the bounds no interval.
#[test]
fn a_martingale_below_the_set_registers_is_rejected() {
    let registers = vec![5u8; 1 << 10];
    let bytes = hll_dense(10, 0, Some(0.0), &registers);
    let r = HyperLogLog::from_bytes(&bytes);
    if let Ok(hll) = &r {
        let b = hll.bounds(Confidence::TwoSigma);
        assert!(b.lower <= b.upper, "bounds {b:?} of a decoded sketch with estimate {}", hll.estimate());
    }
    assert!(is_invalid_field(&r, "martingale"), "{r:?}");
}

// ---------------------------------------------------------------------------------------------
// Invalid parameters
// ---------------------------------------------------------------------------------------------

#[test]
fn hll_precision_outside_4_to_18_is_a_config_error() -> TestResult {
    for p in (0..=3).chain(19..=255u8) {
        for r in [HyperLogLog::new(p), HyperLogLog::with_seed(p, 7)] {
            let e = r.expect_err("precision out of range");
            assert_eq!(e.parameter(), "precision");
            assert_eq!(e.value(), p.to_string());
            assert!(e.to_string().contains("precision"), "{e}");
        }
    }
    for p in 4..=18u8 {
        assert_eq!(HyperLogLog::new(p)?.precision(), p);
    }
    Ok(())
}

/// The documented range of `with_error`: `[0.00203, 0.2765]`, precision 18 to 4.
const WITH_ERROR_RANGE: (f64, f64) = (0.00203, 0.2765);

#[test]
fn hll_with_error_accepts_exactly_the_documented_range() -> TestResult {
    let (low, high) = WITH_ERROR_RANGE;
    for e in [f64::NAN, -f64::NAN, f64::NEG_INFINITY, 0.0, -0.0, -0.01, -1.0, 1e-9, 0.002, low * 0.999] {
        let err = HyperLogLog::with_error(e).expect_err("below the documented range");
        assert_eq!(err.parameter(), "relative_error", "{e}");
    }
    assert_eq!(HyperLogLog::with_error(f64::INFINITY).expect_err("infinite").parameter(), "relative_error");
    assert_eq!(HyperLogLog::with_error(low)?.precision(), 18);
    assert_eq!(HyperLogLog::with_error(high)?.precision(), 4);
    assert_eq!(HyperLogLog::with_error(0.01)?.precision(), 14);
    // Across the range: always a sketch, never finer when more error is allowed.
    let mut previous = 18;
    for k in 0..=200 {
        let e = low * (high / low).powf(f64::from(k) / 200.0);
        let p = HyperLogLog::with_error(e.clamp(low, high))?.precision();
        assert!(p <= previous, "with_error({e}) = precision {p}, after {previous} for a smaller error");
        previous = p;
    }
    Ok(())
}

#[test]
fn hll_with_error_above_the_documented_range_is_an_error() {
    for e in [WITH_ERROR_RANGE.1 * 1.01, 0.5, 1.0, 1e9, f64::MAX] {
        let r = HyperLogLog::with_error(e);
        assert!(r.is_err(), "with_error({e}) = {:?}", r.map(|h| h.precision()));
    }
}

/// UltraLogLog's and ExaLogLog's `with_error` accept their documented ranges, about
/// `[0.0000929, 0.2690]` (precision 26 to 3) and `[0.0000443, 0.1811]` (26 to 2), and nothing else, and never
/// give a finer sketch when more error is allowed. (ExaLogLog's finest end is checked by its
/// precision's error alone: a sketch of precision 26 allocates 256 MiB at once.)
#[test]
fn history_sketches_with_error_accept_exactly_the_documented_range() -> TestResult {
    let precision = |r: Result<UltraLogLog, synopses::ConfigError>| r.map(|s| s.precision());
    let ell_precision = |r: Result<ExaLogLog, synopses::ConfigError>| r.map(|s| s.precision());
    for e in [f64::NAN, f64::NEG_INFINITY, 0.0, -0.01, 1e-9, 0.0000928, 0.2691, 0.5, f64::INFINITY] {
        assert_eq!(precision(UltraLogLog::with_error(e)).map_err(|e| e.parameter()), Err("relative_error"), "{e}");
    }
    for e in [f64::NAN, f64::NEG_INFINITY, 0.0, -0.01, 1e-9, 0.0000442, 0.1812, 0.5, f64::INFINITY] {
        assert_eq!(ell_precision(ExaLogLog::with_error(e)).map_err(|e| e.parameter()), Err("relative_error"), "{e}");
    }
    assert_eq!(precision(UltraLogLog::with_error(0.0000929))?, 26);
    // The coarsest precision errs a little more than its rounded bound: the next answers.
    assert_eq!(precision(UltraLogLog::with_error(0.2690))?, 4);
    assert_eq!(ell_precision(ExaLogLog::with_error(0.1810))?, 3);
    assert_eq!(ell_precision(ExaLogLog::with_error(1e-4))?, 24);
    let (mut ull_previous, mut ell_previous) = (26, 24);
    for k in 0..=100 {
        let e = 1e-4 * (0.18_f64 / 1e-4).powf(f64::from(k) / 100.0);
        let (ull, ell) = (precision(UltraLogLog::with_error(e))?, ell_precision(ExaLogLog::with_error(e))?);
        assert!(ull <= ull_previous && ell <= ell_previous, "with_error({e}): {ull}, {ell}");
        // An ExaLogLog register errs less than an UltraLogLog one: never more of them.
        assert!(ell <= ull, "with_error({e}): {ull}, {ell}");
        (ull_previous, ell_previous) = (ull, ell);
    }
    Ok(())
}

#[test]
fn fm_bitmaps_outside_powers_of_two_to_65536_are_a_config_error() -> TestResult {
    for b in [0usize, 3, 6, 1000, (1 << 16) + 1, 1 << 17, 1 << 40, usize::MAX] {
        for r in [FlajoletMartin::new(b), FlajoletMartin::with_seed(b, 7)] {
            let e = r.expect_err("bitmaps out of range");
            assert_eq!(e.parameter(), "bitmaps");
            assert_eq!(e.value(), b.to_string());
        }
    }
    for b in [1usize, 2, 64, 1 << 16] {
        assert_eq!(FlajoletMartin::new(b)?.bitmaps(), b);
    }
    Ok(())
}

#[test]
fn reduce_outside_4_to_own_precision_is_a_config_error() -> TestResult {
    let mut sparse = HyperLogLog::new(12)?;
    (0..100u64).for_each(|i| sparse.observe(i));
    let mut dense = HyperLogLog::new(12)?;
    (0..100_000u64).for_each(|i| dense.observe(i));
    for hll in [HyperLogLog::new(12)?, sparse, dense] {
        for p in [0u8, 1, 3, 13, 18, 19, 255] {
            let e = hll.reduce(p).expect_err("reduce out of range");
            assert_eq!(e.parameter(), "precision");
            assert_eq!(e.value(), p.to_string());
        }
        for p in [4u8, 11, 12] {
            assert_eq!(hll.reduce(p)?.precision(), p);
        }
        assert_eq!(hll.reduce(12)?, hll);
    }
    let p4 = HyperLogLog::new(4)?;
    assert!(p4.reduce(3).is_err() && p4.reduce(5).is_err());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Mismatched merges
// ---------------------------------------------------------------------------------------------

fn hll_with(p: u8, seed: u64, n: u64) -> Result<HyperLogLog, Box<dyn Error>> {
    let mut h = HyperLogLog::with_seed(p, seed)?;
    (0..n).for_each(|i| h.observe(i));
    Ok(h)
}

/// Merges `other` into a copy of `target`; the error must name `parameter` and the copy must
/// be unchanged, down to its encoding (which includes the martingale).
fn assert_hll_merge_fails(target: &HyperLogLog, other: &HyperLogLog, parameter: &str) {
    let mut merged = target.clone();
    let e = merged.merge(other).expect_err("mismatched merge");
    assert_eq!(e.parameter(), parameter, "{e}");
    assert_eq!(&merged, target);
    assert_eq!(merged.to_bytes(), target.to_bytes());
    assert_eq!(merged.estimate().to_bits(), target.estimate().to_bits());
    // Through the trait too.
    let mut merged = target.clone();
    let e = synopses::core::Mergeable::merge_all(&mut merged, [other]).expect_err("mismatched merge_all");
    assert_eq!(e.parameter(), parameter);
    assert_eq!(merged.to_bytes(), target.to_bytes());
}

#[test]
fn hll_merges_of_different_configurations_fail_and_change_nothing() -> TestResult {
    // Empty, sparse and dense on either side.
    for n_ours in [0u64, 100, 20_000] {
        for n_theirs in [0u64, 100, 20_000] {
            let ours = hll_with(12, 1, n_ours)?;
            for (other, parameter) in [
                (hll_with(14, 1, n_theirs)?, "precision"),
                (hll_with(11, 1, n_theirs)?, "precision"),
                (hll_with(12, 2, n_theirs)?, "seed"),
                (hll_with(12, DEFAULT_SEED, n_theirs)?, "seed"),
            ] {
                assert_hll_merge_fails(&ours, &other, parameter);
            }
        }
    }
    let e = HyperLogLog::with_seed(12, 1)?.merge(&HyperLogLog::with_seed(14, 1)?).expect_err("precision");
    assert_eq!((e.ours(), e.theirs()), ("12", "14"));
    let e = HyperLogLog::with_seed(12, 1)?.merge(&HyperLogLog::with_seed(12, 2)?).expect_err("seed");
    assert_eq!((e.ours(), e.theirs()), ("1", "2"));
    // Both differ: either may be named, and nothing changes.
    let ours = hll_with(12, 1, 20_000)?;
    let mut merged = ours.clone();
    let e = merged.merge(&hll_with(13, 2, 100)?).expect_err("both differ");
    assert!(matches!(e.parameter(), "precision" | "seed"), "{e}");
    assert_eq!(merged.to_bytes(), ours.to_bytes());
    Ok(())
}

#[test]
fn fm_merges_of_different_configurations_fail_and_change_nothing() -> TestResult {
    let mut ours = FlajoletMartin::with_seed(64, 1)?;
    (0..1000u64).for_each(|i| ours.observe(i));
    for (bitmaps, seed, parameter) in
        [(128usize, 1u64, "bitmaps"), (32, 1, "bitmaps"), (64, 2, "seed"), (1, 1, "bitmaps")]
    {
        let mut other = FlajoletMartin::with_seed(bitmaps, seed)?;
        (0..5000u64).for_each(|i| other.observe(i));
        let mut merged = ours.clone();
        let e = merged.merge(&other).expect_err("mismatched merge");
        assert_eq!(e.parameter(), parameter, "{e}");
        assert_eq!(merged, ours);
        assert_eq!(merged.to_bytes(), ours.to_bytes());
    }
    let e = FlajoletMartin::with_seed(64, 1)?.merge(&FlajoletMartin::with_seed(128, 1)?).expect_err("bitmaps");
    assert_eq!((e.ours(), e.theirs()), ("64", "128"));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Count-Min
// ---------------------------------------------------------------------------------------------

/// A Count-Min body: width, depth, update byte, seed, total, counters, each of the width the
/// update byte's bits 6..4 name (code 0 → 8 bytes, 1 → 4, 2 → 2, 3 → 1; 8 for the others).
fn cm_body(width: u32, depth: u8, update: u8, seed: u64, total: u64, counters: &[u64]) -> Vec<u8> {
    let mut body = width.to_le_bytes().to_vec();
    body.extend_from_slice(&[depth, update]);
    body.extend_from_slice(&seed.to_le_bytes());
    body.extend_from_slice(&total.to_le_bytes());
    let bytes = match update >> 4 & 0x07 {
        code @ 0..=3 => 8 >> code,
        _ => 8,
    };
    counters.iter().for_each(|c| body.extend_from_slice(&c.to_le_bytes()[..bytes]));
    body
}

proptest! {
    #[test]
    fn structured_cm_bodies_never_panic(
        width in 0_u32..20, depth in 0_u8..5, update in 0_u8..3, total in 0_u64..50,
        counters in proptest::collection::vec(0_u64..50, 0..60),
    ) {
        check_decoded::<CountMin>(&envelope(CM, &cm_body(width, depth, update, 0, total, &counters)))?;
    }
}

#[test]
fn cm_crafted_invalid_fields_are_rejected() -> TestResult {
    let valid = envelope(CM, &cm_body(2, 1, 0x80, 0, 3, &[1, 2]));
    assert_eq!(CountMin::from_bytes(&valid)?.total(), 3, "the control decodes");
    for (what, body, field) in [
        ("width 0", cm_body(0, 1, 0x80, 0, 0, &[]), "width and depth"),
        ("depth 0", cm_body(2, 0, 0x80, 0, 0, &[]), "width and depth"),
        ("depth 33", cm_body(2, 33, 0x80, 0, 0, &[0; 66]), "width and depth"),
        ("2^28 counters", cm_body(1 << 23, 32, 0x80, 0, 0, &[]), "width and depth"),
        ("update 2", cm_body(2, 1, 0x82, 0, 3, &[1, 2]), "update"),
        // The double-hashed rows of a layout that was never published: refused, not guessed.
        ("standard, double-hashed rows", cm_body(2, 1, 0, 0, 3, &[1, 2]), "update"),
        ("conservative, double-hashed rows", cm_body(2, 1, 1, 0, 2, &[1, 2]), "update"),
        ("standard row sum below the total", cm_body(2, 1, 0x80, 0, 4, &[1, 2]), "counters"),
        ("standard row sum above the total", cm_body(2, 1, 0x80, 0, 2, &[1, 2]), "counters"),
        ("conservative counter above the total", cm_body(2, 1, 0x81, 0, 2, &[0, 3]), "counters"),
        ("conservative row above the total", cm_body(2, 1, 0x81, 0, 3, &[2, 2]), "counters"),
        ("counter width code 4", cm_body(2, 1, 0xC0, 0, 3, &[1, 2]), "counter width"),
        ("bits 3..1 set", cm_body(2, 1, 0x88, 0, 3, &[1, 2]), "update"),
        // 8-bit counters (code 3): a saturated counter (255) lost at least what passed 255.
        ("8-bit row below the total", cm_body(2, 1, 0xB0, 0, 141, &[100, 40]), "counters"),
        ("8-bit saturated row above the total", cm_body(2, 1, 0xB0, 0, 290, &[255, 40]), "counters"),
        ("8-bit counter above the total", cm_body(2, 1, 0xB1, 0, 100, &[255, 0]), "counters"),
    ] {
        let r = CountMin::from_bytes(&envelope(CM, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    for (what, body) in [
        ("8-bit, exact", cm_body(2, 1, 0xB0, 0, 140, &[100, 40])),
        ("8-bit, one saturated", cm_body(2, 1, 0xB0, 0, 300, &[255, 40])),
        ("16-bit conservative", cm_body(2, 1, 0xA1, 0, 300, &[100, 40])),
        ("32-bit", cm_body(2, 1, 0x90, 0, 7, &[3, 4])),
    ] {
        assert!(CountMin::from_bytes(&envelope(CM, &body)).is_ok(), "{what}");
    }
    let truncated = CountMin::from_bytes(&envelope(CM, &cm_body(2, 2, 0x80, 0, 3, &[1, 2, 3])));
    assert!(matches!(truncated, Err(DecodeError::Truncated { .. })), "{truncated:?}");
    let trailing = CountMin::from_bytes(&envelope(CM, &cm_body(1, 1, 0x80, 0, 3, &[3, 0])));
    assert_eq!(trailing, Err(DecodeError::TrailingBytes(8)));
    Ok(())
}

#[test]
fn cm_decoding_allocates_in_proportion_to_its_input() {
    // 34 bytes of body claiming 2^27 counters (1 GiB).
    let bytes = envelope(CM, &cm_body(1 << 22, 32, 0x80, 0, 0, &[]));
    assert_allocates_at_most_its_input::<CountMin>(&bytes);
}

#[test]
fn cm_invalid_parameters_are_config_errors() {
    for (width, depth, parameter) in [(0, 1, "width"), (1, 0, "depth"), (1, 33, "depth"), (1 << 23, 32, "width")] {
        let err = CountMin::new(width, depth).expect_err("invalid size");
        assert_eq!(err.parameter(), parameter, "{width} × {depth}");
    }
    // 1 GiB of counters at most, whatever their width: 2^30 8-bit ones, 2^27 64-bit ones.
    let eight_bit = |width| CountMin::builder(width, 1).counter_width(CounterWidth::Eight).build();
    assert!(eight_bit(1 << 30).is_ok());
    assert_eq!(eight_bit((1 << 30) + 1).map_err(|e| e.parameter()).err(), Some("width"));
    let four_bit = CountMin::builder(8, 1).counter_width(CounterWidth::Four).build();
    assert_eq!(four_bit.map_err(|e| e.parameter()).err(), Some("counter_width"));
    for (epsilon, delta, parameter) in [
        (f64::NAN, 0.1, "epsilon"),
        (0.0, 0.1, "epsilon"),
        (-0.1, 0.1, "epsilon"),
        (1.5, 0.1, "epsilon"),
        (f64::INFINITY, 0.1, "epsilon"),
        (0.1, 0.0, "delta"),
        (0.1, 1.0, "delta"),
        (0.1, f64::NAN, "delta"),
        (1e-12, 0.1, "epsilon"),
        (0.1, 1e-300, "delta"),
    ] {
        let err = CountMin::with_error(epsilon, delta).expect_err("invalid target");
        assert_eq!(err.parameter(), parameter, "ε {epsilon}, δ {delta}");
    }
}

#[test]
fn cm_mismatched_merges_fail_and_change_nothing() -> TestResult {
    let mut a = CountMin::with_seed(64, 3, 1)?;
    a.observe_all(0..100_u64);
    let before = a.clone();
    for (other, parameter) in [
        (CountMin::with_seed(65, 3, 1)?, "width"),
        (CountMin::with_seed(64, 4, 1)?, "depth"),
        (CountMin::with_seed(64, 3, 2)?, "seed"),
        (CountMin::builder(64, 3).seed(1).update_rule(Update::Conservative).build()?, "update"),
        (CountMin::builder(64, 3).seed(1).counter_width(CounterWidth::ThirtyTwo).build()?, "counter width"),
    ] {
        assert_eq!(a.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(a, before);
        // An inner product needs only the same rows and columns.
        if parameter != "update" && parameter != "counter width" {
            assert_eq!(a.inner_product(&other).map_err(|e| e.parameter()), Err(parameter));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Bloom
// ---------------------------------------------------------------------------------------------

/// A Bloom body: bits, hashes, seed, words.
fn bloom_body(bits: u64, hashes: u8, seed: u64, words: &[u64]) -> Vec<u8> {
    let mut body = bits.to_le_bytes().to_vec();
    body.push(hashes);
    body.extend_from_slice(&seed.to_le_bytes());
    words.iter().for_each(|w| body.extend_from_slice(&w.to_le_bytes()));
    body
}

proptest! {
    #[test]
    fn structured_bloom_bodies_never_panic(
        bits in 0_u64..300, hashes in 0_u8..40, words in proptest::collection::vec(any::<u64>(), 0..6),
    ) {
        check_decoded::<Bloom>(&envelope(BLOOM, &bloom_body(bits, hashes, 0, &words)))?;
    }
}

#[test]
fn bloom_crafted_invalid_fields_are_rejected() -> TestResult {
    assert_eq!(Bloom::from_bytes(&envelope(BLOOM, &bloom_body(70, 3, 0, &[u64::MAX, 0b11_1111])))?.set_bits(), 70);
    for (what, body, field) in [
        ("no bits", bloom_body(0, 3, 0, &[]), "bits and hashes"),
        ("2^33 + 1 bits", bloom_body((1 << 33) + 1, 3, 0, &[]), "bits and hashes"),
        ("no hashes", bloom_body(64, 0, 0, &[0]), "bits and hashes"),
        ("33 hashes", bloom_body(64, 33, 0, &[0]), "bits and hashes"),
        ("a bit past the end", bloom_body(70, 3, 0, &[0, 1 << 6]), "bits"),
        ("the last spare bit", bloom_body(1, 3, 0, &[1 << 63]), "bits"),
    ] {
        let r = Bloom::from_bytes(&envelope(BLOOM, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    assert!(matches!(
        Bloom::from_bytes(&envelope(BLOOM, &bloom_body(128, 3, 0, &[0]))),
        Err(DecodeError::Truncated { .. })
    ));
    assert_eq!(Bloom::from_bytes(&envelope(BLOOM, &bloom_body(64, 3, 0, &[0, 0]))), Err(DecodeError::TrailingBytes(8)));
    Ok(())
}

#[test]
fn bloom_decoding_allocates_in_proportion_to_its_input() {
    // 17 bytes of body claiming 2^33 bits (1 GiB).
    let bytes = envelope(BLOOM, &bloom_body(1 << 33, 7, 0, &[]));
    assert_allocates_at_most_its_input::<Bloom>(&bytes);
}

#[test]
fn bloom_invalid_parameters_are_config_errors() {
    for (bits, hashes, parameter) in
        [(0, 3, "bits"), ((1 << 33) + 1, 3, "bits"), (100, 0, "hashes"), (100, 33, "hashes")]
    {
        assert_eq!(Bloom::new(bits, hashes).map_err(|e| e.parameter()).err(), Some(parameter), "{bits}, {hashes}");
    }
    for (n, p, parameter) in [
        (0, 0.01, "expected_items"),
        (100, 0.0, "false_positive_rate"),
        (100, 1.0, "false_positive_rate"),
        (100, f64::NAN, "false_positive_rate"),
        (100, -0.5, "false_positive_rate"),
        (u64::MAX, 0.01, "expected_items"),
    ] {
        let err = Bloom::with_false_positive_rate(n, p).expect_err("invalid target");
        assert_eq!(err.parameter(), parameter, "{n} items at {p}");
    }
}

#[test]
fn bloom_mismatched_merges_fail_and_change_nothing() -> TestResult {
    let mut a = Bloom::with_seed(1000, 3, 1)?;
    a.observe_all(0..100_u64);
    let before = a.clone();
    for (other, parameter) in [
        (Bloom::with_seed(1001, 3, 1)?, "bits"),
        (Bloom::with_seed(1000, 4, 1)?, "hashes"),
        (Bloom::with_seed(1000, 3, 2)?, "seed"),
    ] {
        assert_eq!(a.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(a, before);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Counting Bloom
// ---------------------------------------------------------------------------------------------

/// A counting Bloom body: counters, width, hashes, seed, items, words.
fn cbf_body(counters: u64, width: u8, hashes: u8, seed: u64, items: u64, words: &[u64]) -> Vec<u8> {
    let mut body = counters.to_le_bytes().to_vec();
    body.extend_from_slice(&[width, hashes]);
    body.extend_from_slice(&seed.to_le_bytes());
    body.extend_from_slice(&items.to_le_bytes());
    words.iter().for_each(|w| body.extend_from_slice(&w.to_le_bytes()));
    body
}

proptest! {
    #[test]
    fn structured_cbf_bodies_never_panic(
        counters in 0_u64..60, width in prop_oneof![Just(4_u8), Just(8), Just(16), any::<u8>()], hashes in 0_u8..40,
        items in any::<u64>(), words in proptest::collection::vec(any::<u64>(), 0..16),
    ) {
        check_decoded::<CountingBloom>(&envelope(CBF, &cbf_body(counters, width, hashes, 0, items, &words)))?;
    }
}

#[test]
fn cbf_crafted_invalid_fields_are_rejected() -> TestResult {
    // The control: 20 four-bit counters in 2 words, all 15 (saturated).
    let control = CountingBloom::from_bytes(&envelope(CBF, &cbf_body(20, 4, 3, 0, 7, &[u64::MAX, 0xFFFF])))?;
    assert_eq!((control.saturated_counters(), control.total()), (20, 7));
    let mut written = CountingBloom::with_seed(20, 3, 0)?;
    written.observe_hash(5);
    let mut words = vec![0_u64; 2];
    let encoded = written.to_bytes();
    for (w, chunk) in words.iter_mut().zip(encoded[4 + 26..4 + 26 + 16].chunks_exact(8)) {
        *w = u64::from_le_bytes(chunk.try_into()?);
    }
    assert_eq!(envelope(CBF, &cbf_body(20, 4, 3, 0, 1, &words)), encoded);
    for (what, body, field) in [
        ("no counters", cbf_body(0, 4, 3, 0, 0, &[]), "counters and hashes"),
        ("2^31 + 1 four-bit counters", cbf_body((1 << 31) + 1, 4, 3, 0, 0, &[]), "counters and hashes"),
        ("2^29 + 1 sixteen-bit counters", cbf_body((1 << 29) + 1, 16, 3, 0, 0, &[]), "counters and hashes"),
        ("no hashes", cbf_body(16, 4, 0, 0, 0, &[0]), "counters and hashes"),
        ("33 hashes", cbf_body(16, 4, 33, 0, 0, &[0]), "counters and hashes"),
        ("a 5-bit width", cbf_body(16, 5, 3, 0, 0, &[0]), "counter width"),
        ("a 32-bit width", cbf_body(16, 32, 3, 0, 0, &[0; 8]), "counter width"),
        ("a bit past the last counter", cbf_body(20, 4, 3, 0, 0, &[0, 1 << 16]), "counters"),
        ("the last spare bit", cbf_body(1, 16, 3, 0, 0, &[1 << 63]), "counters"),
        // The audit's example: no items, counters set (none saturated: each insertion added
        // exactly k = 3 to the counters, each removal took 3 away).
        ("no items, counters set", cbf_body(16, 4, 3, 0, 0, &[0x111]), "total"),
        ("counters short of k times the items", cbf_body(16, 4, 3, 0, 2, &[0x111]), "total"),
    ] {
        let r = CountingBloom::from_bytes(&envelope(CBF, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    assert!(matches!(
        CountingBloom::from_bytes(&envelope(CBF, &cbf_body(32, 4, 3, 0, 0, &[0]))),
        Err(DecodeError::Truncated { .. })
    ));
    assert_eq!(
        CountingBloom::from_bytes(&envelope(CBF, &cbf_body(16, 4, 3, 0, 0, &[0, 0]))),
        Err(DecodeError::TrailingBytes(8))
    );
    assert!(matches!(Bloom::from_bytes(&control.to_bytes()), Err(DecodeError::WrongFamily { expected: 4, found: 6 })));
    // Saturated counters break the count (a saturated item removed as often as it went in
    // leaves them set), so with one the items are not checked against them.
    let mut saturated = CountingBloom::with_seed(20, 3, 0)?;
    (0..20).for_each(|_| saturated.observe_hash(5));
    (0..20).for_each(|_| saturated.remove_hash(5).expect("a member"));
    assert_eq!((saturated.total(), saturated.saturated_counters() > 0), (0, true));
    assert_eq!(CountingBloom::from_bytes(&saturated.to_bytes())?, saturated);
    Ok(())
}

#[test]
fn cbf_decoding_allocates_in_proportion_to_its_input() {
    // 26 bytes of body claiming 2^31 four-bit counters (1 GiB).
    let bytes = envelope(CBF, &cbf_body(1 << 31, 4, 7, 0, 0, &[]));
    assert_allocates_at_most_its_input::<CountingBloom>(&bytes);
}

#[test]
fn cbf_invalid_parameters_are_config_errors() {
    use CounterWidth::{Eight, Four, Sixteen, SixtyFour, ThirtyTwo};
    for (counters, hashes, width, parameter) in [
        (100, 3, ThirtyTwo, "counter_width"),
        (100, 3, SixtyFour, "counter_width"),
        (0, 3, Four, "counters"),
        ((1 << 31) + 1, 3, Four, "counters"),
        ((1 << 30) + 1, 3, Eight, "counters"),
        ((1 << 29) + 1, 3, Sixteen, "counters"),
        (100, 0, Four, "hashes"),
        (100, 33, Four, "hashes"),
    ] {
        let r = CountingBloom::builder(counters, hashes).counter_width(width).seed(0).build();
        assert_eq!(r.map_err(|e| e.parameter()).err(), Some(parameter), "{counters}, {hashes}, {width:?}");
    }
    for (n, p, parameter) in [
        (0, 0.01, "expected_items"),
        (100, 0.0, "false_positive_rate"),
        (100, 1.0, "false_positive_rate"),
        (100, f64::NAN, "false_positive_rate"),
        (100, f64::INFINITY, "false_positive_rate"),
        (u64::MAX, 0.01, "expected_items"),
        // 2^31 counters is the 4-bit limit: about 2.2e8 items at 1 %.
        (300_000_000, 0.01, "expected_items"),
    ] {
        let err = CountingBloom::with_false_positive_rate(n, p).expect_err("invalid target");
        assert_eq!(err.parameter(), parameter, "{n} items at {p}");
    }
    // A target within the 4-bit limit but past the 8-bit one: 2^30 eight-bit counters hold
    // about 1.1e8 items at 1 %.
    let eight_bit = CountingBloom::builder_for_false_positive_rate(150_000_000, 0.01).counter_width(Eight).build();
    assert_eq!(eight_bit.map_err(|e| e.parameter()).err(), Some("expected_items"));
    // Widening past the memory limit is an error too, not a huge allocation.
    // (2^29 + 1 four-bit counters, 256 MiB of zeroed and so untouched pages, cannot widen.)
    let big = CountingBloom::new((1 << 29) + 1, 1).map(|f| f.with_counter_width(Sixteen).map_err(|e| e.parameter()));
    assert_eq!(big.ok().and_then(Result::err), Some("counters"));
}

#[test]
fn cbf_mismatched_merges_fail_and_change_nothing() -> TestResult {
    let mut a = CountingBloom::with_seed(1000, 3, 1)?;
    a.observe_all(0..100_u64);
    let before = a.clone();
    for (other, parameter) in [
        (CountingBloom::with_seed(1001, 3, 1)?, "counters"),
        (CountingBloom::with_seed(1000, 4, 1)?, "hashes"),
        (CountingBloom::builder(1000, 3).counter_width(CounterWidth::Eight).seed(1).build()?, "counter width"),
        (CountingBloom::with_seed(1000, 3, 2)?, "seed"),
    ] {
        assert_eq!(a.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(a, before);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Samplers
// ---------------------------------------------------------------------------------------------

/// A sampler body after its own head: seed, stream, seen, count, then (key, item) entries.
fn sampler_tail(seed: u64, stream: u64, seen: u64, entries: &[(f64, Vec<u8>)]) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [seed, stream, seen] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (key, item) in entries {
        body.extend_from_slice(&key.to_le_bytes());
        body.extend_from_slice(item);
    }
    body
}

/// A reservoir body over u64 items.
fn res_body(capacity: u32, seen: u64, entries: &[(f64, u64)]) -> Vec<u8> {
    let mut body = capacity.to_le_bytes().to_vec();
    let entries: Vec<(f64, Vec<u8>)> = entries.iter().map(|&(k, x)| (k, x.to_le_bytes().to_vec())).collect();
    body.extend_from_slice(&sampler_tail(1, 0, seen, &entries));
    body
}

/// A weighted or priority body over u64 items: capacity, total weight, then (key, item,
/// weight) entries.
fn weighted_body(capacity: u32, total: f64, seen: u64, entries: &[(f64, u64, f64)]) -> Vec<u8> {
    let mut body = capacity.to_le_bytes().to_vec();
    body.extend_from_slice(&total.to_le_bytes());
    let entries: Vec<(f64, Vec<u8>)> =
        entries.iter().map(|&(k, x, w)| (k, [x.to_le_bytes(), w.to_le_bytes()].concat())).collect();
    body.extend_from_slice(&sampler_tail(1, 0, seen, &entries));
    body
}

/// The version-2 body of a sampler from its version-1 body `v1` (as [`res_body`] or
/// [`weighted_body`] write it, with `head` bytes before the seed): the generator's `state`
/// and `draws` after `seen`, and the pending skip or jump, if the sampler has one, last.
fn v2_body(v1: &[u8], head: usize, state: [u8; 32], draws: u64, pending: Option<[u8; 8]>) -> Vec<u8> {
    let at = head + 24;
    let mut body = v1[..at].to_vec();
    body.extend_from_slice(&state);
    body.extend_from_slice(&draws.to_le_bytes());
    body.extend_from_slice(&v1[at..]);
    body.extend_from_slice(pending.as_ref().map_or(&[][..], |p| &p[..]));
    body
}

/// The generator's state in a real version-2 encoding with `head` bytes before the seed.
fn generator_of(bytes: &[u8], head: usize) -> ([u8; 32], u64) {
    let at = 4 + head + 24;
    let state = bytes[at..at + 32].try_into().expect("32 bytes");
    (state, u64::from_le_bytes(bytes[at + 32..at + 40].try_into().expect("8 bytes")))
}

/// The last 8 bytes of a body: a reservoir's skip or a weighted reservoir's jump.
fn pending_of(bytes: &[u8]) -> [u8; 8] {
    body(bytes)[body(bytes).len() - 8..].try_into().expect("8 bytes")
}

fn key_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![0.0..1.0_f64, any::<f64>(), Just(0.0), Just(1.0), Just(f64::NAN), Just(-0.5)]
}

proptest! {
    #[test]
    fn structured_sampler_bodies_never_panic(
        capacity in 0_u32..6, seen in 0_u64..10, total in prop_oneof![0.0..100.0_f64, any::<f64>()],
        entries in proptest::collection::vec((key_strategy(), 0_u64..5, prop_oneof![0.1..10.0_f64, any::<f64>()]), 0..8),
    ) {
        let plain: Vec<(f64, u64)> = entries.iter().map(|&(k, x, _)| (k, x)).collect();
        check_decoded::<Reservoir<u64>>(&envelope(RES, &res_body(capacity, seen, &plain)))?;
        check_decoded::<WeightedReservoir<u64>>(&envelope(WRES, &weighted_body(capacity, total, seen, &entries)))?;
        check_decoded::<PrioritySample<u64>>(&envelope(PRIO, &weighted_body(capacity, total, seen, &entries)))?;
    }

    /// Version 2: the same bodies with a generator (all zeros, or a real state) and a pending
    /// skip or jump of every kind.
    #[test]
    fn structured_v2_sampler_bodies_never_panic(
        capacity in 0_u32..6, seen in 0_u64..10, total in prop_oneof![0.0..100.0_f64, any::<f64>()],
        entries in proptest::collection::vec((key_strategy(), 0_u64..5, prop_oneof![0.1..10.0_f64, any::<f64>()]), 0..8),
        zero_state in any::<bool>(), draws in prop_oneof![0_u64..12, any::<u64>()],
        skip in prop_oneof![0_u64..100, any::<u64>()], jump in prop_oneof![0.0..100.0_f64, any::<f64>()],
    ) {
        let state = if zero_state { [0; 32] } else { std::array::from_fn(|i| i as u8) };
        let plain: Vec<(f64, u64)> = entries.iter().map(|&(k, x, _)| (k, x)).collect();
        let res = v2_body(&res_body(capacity, seen, &plain), 4, state, draws, Some(skip.to_le_bytes()));
        check_decoded::<Reservoir<u64>>(&envelope_with(*b"SY", 2, RES, &res))?;
        let weighted = weighted_body(capacity, total, seen, &entries);
        let wres = v2_body(&weighted, 12, state, draws, Some(jump.to_le_bytes()));
        check_decoded::<WeightedReservoir<u64>>(&envelope_with(*b"SY", 2, WRES, &wres))?;
        let prio = v2_body(&weighted, 12, state, draws, None);
        check_decoded::<PrioritySample<u64>>(&envelope_with(*b"SY", 2, PRIO, &prio))?;
    }
}

#[test]
fn sampler_crafted_invalid_v2_fields_are_rejected() -> TestResult {
    let zeros = [0u8; 32];
    // The reservoir: full (a skip up to what the generator draws at its threshold) and filling
    // (a skip of 0).
    let mut full = Reservoir::new(2, 1)?;
    full.observe_all(0..1000_u64);
    let mut filling = Reservoir::new(3, 1)?;
    filling.observe_all([5_u64, 6]);
    for (what, r) in [("full", &full), ("filling", &filling)] {
        let bytes = r.to_bytes();
        let (state, draws) = generator_of(&bytes, 4);
        let reseal = |state: [u8; 32], skip: u64| {
            let mut body = body(&bytes).to_vec();
            body[28..60].copy_from_slice(&state);
            let end = body.len() - 8;
            body[end..].copy_from_slice(&skip.to_le_bytes());
            Reservoir::<u64>::from_bytes(&envelope_with(*b"SY", 2, RES, &body))
        };
        let skip = u64::from_le_bytes(pending_of(&bytes));
        assert_eq!(reseal(state, skip)?.to_bytes(), bytes, "{what}: the control");
        assert!(draws > 0, "{what}");
        assert!(is_invalid_field(&reseal(zeros, skip), "generator"), "{what}");
        assert!(is_invalid_field(&reseal(state, u64::MAX), "skip"), "{what}");
    }
    let bytes = filling.to_bytes();
    let skip_while_filling = [&body(&bytes)[..body(&bytes).len() - 8], &1_u64.to_le_bytes()].concat();
    let r = Reservoir::<u64>::from_bytes(&envelope_with(*b"SY", 2, RES, &skip_while_filling));
    assert!(is_invalid_field(&r, "skip"), "{r:?}");

    // The weighted reservoir: a jump in [0, E_max / W], exactly +0 while filling.
    let mut full = WeightedReservoir::new(2, 1)?;
    let mut filling = WeightedReservoir::new(3, 1)?;
    for i in 0..1000_u64 {
        full.observe_weighted(i, Weight::new(1.0 + (i % 3) as f64)?);
    }
    filling.observe_weighted(5_u64, Weight::ONE);
    for (what, w, bad) in [
        ("full", &full, vec![-1.0, -0.0, f64::NAN, f64::INFINITY, 1e6]),
        ("filling", &filling, vec![-0.0, 1e-300, 1.0, f64::NAN]),
    ] {
        let bytes = w.to_bytes();
        let reseal = |state: [u8; 32], jump: [u8; 8]| {
            let mut body = body(&bytes).to_vec();
            body[36..68].copy_from_slice(&state);
            let end = body.len() - 8;
            body[end..].copy_from_slice(&jump);
            WeightedReservoir::<u64>::from_bytes(&envelope_with(*b"SY", 2, WRES, &body))
        };
        let (state, _) = generator_of(&bytes, 12);
        assert_eq!(reseal(state, pending_of(&bytes))?.to_bytes(), bytes, "{what}: the control");
        assert!(is_invalid_field(&reseal(zeros, pending_of(&bytes)), "generator"), "{what}");
        for jump in bad {
            let r = reseal(state, jump.to_le_bytes());
            assert!(is_invalid_field(&r, "jump"), "{what}, jump {jump}: {r:?}");
        }
    }

    // The priority sample: no pending draw, at most one draw per item seen.
    let mut p = PrioritySample::new(2, 1)?;
    (0..10_u64).for_each(|i| p.observe_weighted(i, Weight::ONE));
    let bytes = p.to_bytes();
    let (state, draws) = generator_of(&bytes, 12);
    assert_eq!(draws, 10);
    let reseal = |state: [u8; 32], draws: u64| {
        let mut body = body(&bytes).to_vec();
        body[36..68].copy_from_slice(&state);
        body[68..76].copy_from_slice(&draws.to_le_bytes());
        PrioritySample::<u64>::from_bytes(&envelope_with(*b"SY", 2, PRIO, &body))
    };
    assert_eq!(reseal(state, 10)?.to_bytes(), bytes);
    assert!(reseal(state, 3).is_ok());
    assert!(is_invalid_field(&reseal(state, 11), "generator"));
    assert!(is_invalid_field(&reseal(zeros, 10), "generator"));

    // Versions: 1 and 2 are read; others are not, and other families refuse the bytes first.
    for version in [0, 3, 255] {
        let bytes = envelope_with(*b"SY", version, PRIO, body(&bytes));
        assert_eq!(PrioritySample::<u64>::from_bytes(&bytes), Err(DecodeError::UnsupportedVersion(version)));
        let wrong = DecodeError::WrongFamily { expected: HLL, found: PRIO };
        assert_eq!(HyperLogLog::from_bytes(&bytes), Err(wrong));
    }
    Ok(())
}

#[test]
fn sampler_crafted_invalid_fields_are_rejected() -> TestResult {
    // Controls: the helpers write what the crate writes.
    let mut r = Reservoir::new(2, 1)?;
    r.observe_all([5_u64, 6, 7]);
    let entries: Vec<(f64, u64)> = {
        let decoded = Reservoir::<u64>::from_bytes(&r.to_bytes())?;
        assert_eq!(decoded, r);
        // Keys are not public: read them back from the encoding (after the 32-byte head and
        // the 40-byte generator).
        let bytes = r.to_bytes();
        (0..2)
            .map(|i| {
                let at = 4 + 32 + 40 + 16 * i;
                (
                    f64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()),
                    u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()),
                )
            })
            .collect()
    };
    // The version-1 body of the same sample decodes to it; the version-2 one is the encoding.
    assert_eq!(Reservoir::<u64>::from_bytes(&envelope(RES, &res_body(2, 3, &entries)))?, r);
    let (state, draws) = generator_of(&r.to_bytes(), 4);
    let v2 = v2_body(&res_body(2, 3, &entries), 4, state, draws, Some(pending_of(&r.to_bytes())));
    assert_eq!(envelope_with(*b"SY", 2, RES, &v2), r.to_bytes());
    assert!(Reservoir::<u64>::from_bytes(&envelope(RES, &res_body(2, 1, &[(0.5, 9)]))).is_ok());
    for (what, body, field) in [
        ("capacity 0", res_body(0, 0, &[]), "capacity"),
        ("capacity 2^24 + 1", res_body((1 << 24) + 1, 0, &[]), "capacity"),
        ("more items than seen", res_body(2, 1, &[(0.1, 1), (0.2, 2)]), "sample size"),
        ("fewer items than min(seen, k)", res_body(2, 5, &[(0.1, 1)]), "sample size"),
        ("a key of 0", res_body(2, 1, &[(0.0, 1)]), "keys"),
        ("a key of 1", res_body(2, 1, &[(1.0, 1)]), "keys"),
        ("a NaN key", res_body(2, 1, &[(f64::NAN, 1)]), "keys"),
        ("keys out of order", res_body(2, 2, &[(0.5, 1), (0.2, 2)]), "keys"),
    ] {
        let r = Reservoir::<u64>::from_bytes(&envelope(RES, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    for family in [WRES, PRIO] {
        let decode = |body: &[u8]| -> Result<(), DecodeError> {
            if family == WRES {
                WeightedReservoir::<u64>::from_bytes(&envelope(family, body)).map(|_| ())
            } else {
                PrioritySample::<u64>::from_bytes(&envelope(family, body)).map(|_| ())
            }
        };
        assert_eq!(decode(&weighted_body(2, 3.0, 1, &[(0.1, 1, 3.0)])), Ok(()));
        for (what, body, field) in [
            ("capacity 0", weighted_body(0, 0.0, 0, &[]), "capacity"),
            ("a NaN total", weighted_body(2, f64::NAN, 0, &[]), "total weight"),
            ("a negative total", weighted_body(2, -1.0, 0, &[]), "total weight"),
            ("a zero weight", weighted_body(2, 1.0, 1, &[(0.1, 1, 0.0)]), "keys"),
            ("an infinite weight", weighted_body(2, 1.0, 1, &[(0.1, 1, f64::INFINITY)]), "keys"),
            ("a negative weight", weighted_body(2, 1.0, 1, &[(0.1, 1, -2.0)]), "keys"),
            ("a NaN key", weighted_body(2, 1.0, 1, &[(f64::NAN, 1, 1.0)]), "keys"),
            ("keys out of order", weighted_body(2, 2.0, 2, &[(0.5, 1, 1.0), (0.2, 2, 1.0)]), "keys"),
            ("more items than seen", weighted_body(2, 2.0, 1, &[(0.1, 1, 1.0), (0.2, 2, 1.0)]), "sample size"),
        ] {
            let r = decode(&body);
            assert!(is_invalid_field(&r, field), "family {family}, {what}: {r:?}");
        }
    }
    // A priority key is U/w with U < 1: a key above 1/w is impossible.
    let r = PrioritySample::<u64>::from_bytes(&envelope(PRIO, &weighted_body(2, 4.0, 1, &[(0.5, 1, 4.0)])));
    assert!(is_invalid_field(&r, "keys"), "{r:?}");
    // The audit's example: keys of 0 (a threshold of +∞, a subset sum of 0 for a total of
    // 2). U is at least 2^-53, so U/w is 0 only for weights near f64::MAX.
    let zeros = weighted_body(1, 2.0, 2, &[(0.0, 1, 1.0), (0.0, 2, 1.0)]);
    assert!(is_invalid_field(&PrioritySample::<u64>::from_bytes(&envelope(PRIO, &zeros)), "keys"));
    let below = weighted_body(1, 2.0, 1, &[(1e-17, 1, 1.0)]);
    assert!(is_invalid_field(&PrioritySample::<u64>::from_bytes(&envelope(PRIO, &below)), "keys"));
    let huge = weighted_body(1, f64::MAX, 1, &[(0.0, 1, f64::MAX)]);
    assert!(PrioritySample::<u64>::from_bytes(&envelope(PRIO, &huge)).is_ok());
    // A weighted key is E/w with E below 37.
    let r = WeightedReservoir::<u64>::from_bytes(&envelope(WRES, &weighted_body(2, 4.0, 1, &[(20.0, 1, 4.0)])));
    assert!(is_invalid_field(&r, "keys"), "{r:?}");
    // The audit's example: a total weight below the sampled weights.
    for family in [WRES, PRIO] {
        let body = weighted_body(2, 3.0, 2, &[(0.01, 1, 2.0), (0.02, 2, 2.0)]);
        let r = if family == WRES {
            WeightedReservoir::<u64>::from_bytes(&envelope(family, &body)).map(|_| ())
        } else {
            PrioritySample::<u64>::from_bytes(&envelope(family, &body)).map(|_| ())
        };
        assert!(is_invalid_field(&r, "total weight"), "family {family}: {r:?}");
    }
    // An infinite key comes only from a weight so tiny that the key overflows.
    let inf = f64::INFINITY;
    for family in [WRES, PRIO] {
        let decode = |body: &[u8]| -> Result<(), DecodeError> {
            if family == WRES {
                WeightedReservoir::<u64>::from_bytes(&envelope(family, body)).map(|_| ())
            } else {
                PrioritySample::<u64>::from_bytes(&envelope(family, body)).map(|_| ())
            }
        };
        assert_eq!(decode(&weighted_body(3, 1e-320, 1, &[(inf, 1, 1e-320)])), Ok(()), "family {family}");
        let r = decode(&weighted_body(3, 1.0, 1, &[(inf, 1, 1.0)]));
        assert!(is_invalid_field(&r, "keys"), "family {family}: {r:?}");
        // Equal keys go in the order of their items' bytes: one sample, one encoding.
        let tied = |a: u64, b: u64| weighted_body(3, 2e-320, 2, &[(inf, a, 1e-320), (inf, b, 1e-320)]);
        assert_eq!(decode(&tied(1, 2)), Ok(()), "family {family}");
        assert_eq!(decode(&tied(2, 2)), Ok(()), "family {family}");
        let r = decode(&tied(2, 1));
        assert!(is_invalid_field(&r, "keys"), "family {family}: {r:?}");
    }
    Ok(())
}

#[test]
fn samples_with_tied_keys_compare_and_encode_whatever_the_order_of_arrival() -> TestResult {
    // Weights this tiny overflow every key to +∞, so all the kept items tie.
    let tiny = Weight::new(1e-320)?;
    let (mut p, mut q) = (PrioritySample::new(3, 9)?, PrioritySample::new(3, 9)?);
    let (mut w, mut v) = (WeightedReservoir::new(3, 9)?, WeightedReservoir::new(3, 9)?);
    for item in [5_u64, 1, 3] {
        p.observe_weighted(item, tiny);
        w.observe_weighted(item, tiny);
    }
    for item in [3_u64, 5, 1] {
        q.observe_weighted(item, tiny);
        v.observe_weighted(item, tiny);
    }
    assert_eq!(p, q);
    assert_eq!(p.to_bytes(), q.to_bytes());
    assert_eq!(PrioritySample::<u64>::from_bytes(&p.to_bytes())?, p);
    assert_eq!(w, v);
    assert_eq!(w.to_bytes(), v.to_bytes());
    assert_eq!(WeightedReservoir::<u64>::from_bytes(&w.to_bytes())?, w);
    // A different item in a tied group is a different sample.
    let mut other = PrioritySample::new(3, 9)?;
    for item in [3_u64, 5, 2] {
        other.observe_weighted(item, tiny);
    }
    assert_ne!(other, p);
    Ok(())
}

#[test]
fn sampler_decoding_allocates_in_proportion_to_its_input() {
    // A claim of 2^24 sampled items, with none present.
    let mut body = res_body(1 << 24, u64::MAX, &[]);
    let at = body.len() - 4;
    body[at..].copy_from_slice(&(1_u32 << 24).to_le_bytes());
    let bytes = envelope(RES, &body);
    assert_allocates_at_most_its_input::<Reservoir<u64>>(&bytes);
}

#[test]
fn sampler_invalid_parameters_are_config_errors() {
    for capacity in [0, (1 << 24) + 1, usize::MAX] {
        assert_eq!(Reservoir::<u64>::new(capacity, 0).map_err(|e| e.parameter()).err(), Some("capacity"));
        assert_eq!(WeightedReservoir::<u64>::new(capacity, 0).map_err(|e| e.parameter()).err(), Some("capacity"));
        assert_eq!(PrioritySample::<u64>::new(capacity, 0).map_err(|e| e.parameter()).err(), Some("capacity"));
    }
    // A weight the samplers cannot use is refused where it is made: they never see one.
    for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(Weight::new(bad).map_err(|e| e.parameter()).err(), Some("weight"), "{bad}");
    }
    let mut w = WeightedReservoir::new(3, 0).expect("valid");
    let mut p = PrioritySample::new(3, 0).expect("valid");
    // Tiny and huge weights are valid and keep the samplers working.
    for weight in [f64::MIN_POSITIVE, 1e-300, 1e300, f64::MAX] {
        let weight = Weight::new(weight).expect("valid weight");
        w.observe_weighted(2_u64, weight);
        p.observe_weighted(2_u64, weight);
    }
    assert_eq!((w.len(), p.seen()), (3, 4));
    let _ = (p.subset_sum(|_| true), w.clone().into_vec());
    // ...and still encode and decode.
    assert_eq!(WeightedReservoir::<u64>::from_bytes(&w.to_bytes()).as_ref(), Ok(&w));
    assert_eq!(PrioritySample::<u64>::from_bytes(&p.to_bytes()).as_ref(), Ok(&p));
}

// ---------------------------------------------------------------------------------------------
// Heavy hitters
// ---------------------------------------------------------------------------------------------

/// A heavy-hitters body over u64 items: capacity, total, error, count, (item, count) pairs.
fn hh_body(capacity: u32, total: u64, error: u64, counters: &[(u64, u64)]) -> Vec<u8> {
    let mut body = capacity.to_le_bytes().to_vec();
    body.extend_from_slice(&total.to_le_bytes());
    body.extend_from_slice(&error.to_le_bytes());
    body.extend_from_slice(&(counters.len() as u32).to_le_bytes());
    for (item, count) in counters {
        body.extend_from_slice(&item.to_le_bytes());
        body.extend_from_slice(&count.to_le_bytes());
    }
    body
}

proptest! {
    #[test]
    fn structured_hh_bodies_never_panic(
        capacity in 0_u32..4, total in 0_u64..50, error in 0_u64..10,
        counters in proptest::collection::vec((0_u64..5, 0_u64..20), 0..10),
    ) {
        check_decoded::<HeavyHitters<u64>>(&envelope(HH, &hh_body(capacity, total, error, &counters)))?;
    }
}

#[test]
fn hh_crafted_invalid_fields_are_rejected() -> TestResult {
    assert_eq!(HeavyHitters::<u64>::from_bytes(&envelope(HH, &hh_body(2, 7, 1, &[(7, 3), (8, 1)])))?.estimate(&7), 3);
    let out_of_order = HeavyHitters::<u64>::from_bytes(&envelope(HH, &hh_body(2, 7, 1, &[(8, 1), (7, 3)])));
    assert!(is_invalid_field(&out_of_order, "counters"), "{out_of_order:?}");
    for (what, body, field) in [
        ("capacity 0", hh_body(0, 0, 0, &[]), "capacity"),
        ("more than 2k counters", hh_body(1, 9, 0, &[(1, 1), (2, 1), (3, 1)]), "counters"),
        ("a zero count", hh_body(2, 5, 0, &[(1, 0)]), "counters"),
        ("an item twice", hh_body(2, 5, 0, &[(1, 2), (1, 2)]), "counters"),
        ("counts above the total", hh_body(2, 2, 0, &[(1, 3)]), "total"),
        ("error above the total", hh_body(2, 2, 3, &[]), "total"),
        // Each reduction took its cut from at least capacity + 1 = 3 counters: with an error
        // of 1, the counts (4) and 3 more were seen, at least 7.
        ("counts and error above the total", hh_body(2, 6, 1, &[(7, 3), (8, 1)]), "total"),
    ] {
        let r = HeavyHitters::<u64>::from_bytes(&envelope(HH, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    // A string item whose length runs past the end, and one that is not UTF-8.
    let mut body = 2_u32.to_le_bytes().to_vec();
    body.extend_from_slice(&[5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
    let mut long = body.clone();
    long.extend_from_slice(&1000_u32.to_le_bytes());
    long.extend_from_slice(b"abc");
    long.extend_from_slice(&1_u64.to_le_bytes());
    assert!(is_invalid_field(&HeavyHitters::<String>::from_bytes(&envelope(HH, &long)), "item"));
    let mut bad_utf8 = body;
    bad_utf8.extend_from_slice(&2_u32.to_le_bytes());
    bad_utf8.extend_from_slice(&[0xFF, 0xFE]);
    bad_utf8.extend_from_slice(&1_u64.to_le_bytes());
    assert!(is_invalid_field(&HeavyHitters::<String>::from_bytes(&envelope(HH, &bad_utf8)), "item"));
    Ok(())
}

#[test]
fn hh_decoding_allocates_in_proportion_to_its_input() {
    // A capacity of 2^24 and a claim of 2^25 counters, with none present.
    let bytes = envelope(HH, &{
        let mut b = hh_body(1 << 24, 0, 0, &[]);
        b[20..24].copy_from_slice(&(1_u32 << 25).to_le_bytes());
        b
    });
    assert_allocates_at_most_its_input::<HeavyHitters<u64>>(&bytes);
}

#[test]
fn hh_invalid_parameters_are_config_errors() -> TestResult {
    assert_eq!(HeavyHitters::<u64>::new(0).map_err(|e| e.parameter()).err(), Some("capacity"));
    assert_eq!(HeavyHitters::<u64>::new((1 << 24) + 1).map_err(|e| e.parameter()).err(), Some("capacity"));
    let hh = HeavyHitters::<u64>::new(5)?;
    for phi in [0.0, -0.1, 1.5, f64::NAN] {
        assert_eq!(
            hh.frequent(phi, synopses::frequency::Guarantee::NoFalsePositives).map_err(|e| e.parameter()).err(),
            Some("phi")
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Load shedding
// ---------------------------------------------------------------------------------------------

mod shedding_input {
    use super::*;
    use synopses::shedding::{
        DropPolicy, FixedRate, Headroom, KeyHashDrop, Load, Phase, PiController, PiGains, RandomDrop, RateController,
        SemanticDrop, Simulation,
    };

    proptest! {
        /// A keep probability out of range (negative, above 1, NaN, infinite) never panics: at
        /// or below 0 and NaN nothing is kept, at or above 1 everything.
        #[test]
        fn policies_take_any_probability(p in any::<f64>(), items in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut random = RandomDrop::new(1);
            let mut hashed = KeyHashDrop::new();
            let mut semantic = SemanticDrop::new(|x: &u64| *x as f64);
            for x in &items {
                for w in [random.decide(x, p), hashed.decide(x, p), semantic.decide(x, p)].into_iter().flatten() {
                    prop_assert!(w.get() >= 1.0 && w.get().is_finite());
                }
                if p.is_nan() || p <= 0.0 {
                    prop_assert!(random.decide(x, p).is_none() && hashed.decide(x, p).is_none());
                }
            }
            let mut kept = 0;
            random.decide_slice(&items, p, |_, _| kept += 1);
            prop_assert!(kept <= items.len());
        }

        /// Controllers fed arbitrary loads keep their probability in `[MIN, 1]`.
        #[test]
        fn controllers_take_any_load(offered in any::<u64>(), elapsed in any::<f64>(), queue in any::<u64>(), cost in any::<f64>(), delay in any::<f64>()) {
            let load = Load { offered, elapsed, queue_len: queue, cost_per_item: cost, queue_delay: delay };
            let mut headroom = Headroom::new(0.9).unwrap();
            let mut pi = PiController::new(0.05, PiGains { proportional: 0.2, integral: 2.0 }).unwrap();
            for _ in 0..3 {
                headroom.update(&load);
                pi.update(&load);
                for p in [headroom.keep_probability(), pi.keep_probability()] {
                    prop_assert!((synopses::shedding::MIN_KEEP_PROBABILITY..=1.0).contains(&p), "{p}");
                }
            }
        }
    }

    #[test]
    fn invalid_shedding_parameters_are_config_errors() {
        for p in [0.0, -0.1, 1.5, f64::NAN] {
            assert_eq!(FixedRate::new(p).map_err(|e| e.parameter()).err(), Some("keep_probability"));
        }
        let h = Headroom::new(0.9).expect("valid");
        assert_eq!(h.with_capacity(0.0).map_err(|e| e.parameter()).err(), Some("capacity"));
        assert_eq!(h.with_capacity(f64::INFINITY).map_err(|e| e.parameter()).err(), Some("capacity"));
        assert_eq!(Headroom::new(1.1).map_err(|e| e.parameter()).err(), Some("headroom"));
        assert_eq!(h.with_drain_time(-1.0).map_err(|e| e.parameter()).err(), Some("drain_time"));
        assert_eq!(h.with_smoothing(0.0).map_err(|e| e.parameter()).err(), Some("smoothing"));
        let gains = |proportional, integral| PiGains { proportional, integral };
        assert_eq!(
            PiController::new(0.05, gains(f64::NAN, 1.0)).map_err(|e| e.parameter()).err(),
            Some("proportional")
        );
        assert_eq!(PiController::new(0.05, gains(1.0, -1.0)).map_err(|e| e.parameter()).err(), Some("integral"));
        let phase = |duration, rate| Phase { duration, rate };
        for (phases, cost, tick, parameter) in [
            (vec![phase(-1.0, 1.0)], 0.001, 0.01, "duration"),
            (vec![phase(f64::MAX, 0.0), phase(f64::MAX, 0.0)], 0.001, 0.01, "duration"),
            (vec![phase(1.0, f64::NAN)], 0.001, 0.01, "rate"),
            (vec![phase(1e9, 1e9)], 0.001, 0.01, "phases"),
            (vec![phase(1.0, 1.0)], 0.0, 0.01, "cost_per_item"),
            (vec![phase(1.0, 1.0)], 0.001, 0.0, "tick"),
            (vec![phase(1e6, 1.0)], 0.001, 1e-6, "tick"),
        ] {
            let sim = Simulation::new(phases, cost, 0).and_then(|sim| sim.with_tick(tick));
            assert_eq!(sim.map_err(|e| e.parameter()).err(), Some(parameter));
        }
        // An empty or idle simulation runs and reports nothing.
        let idle = Simulation::new(vec![phase(1.0, 0.0)], 0.001, 0)
            .expect("valid")
            .with_tick(0.1)
            .expect("valid")
            .run(FixedRate::new(1.0).expect("valid"));
        assert_eq!((idle.offered, idle.max_queue, idle.latency_p99), (0, 0, 0.0));
    }
}

/// Regressions from review: inputs that used to hang, panic or misbehave.
mod review_regressions {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;
    use synopses::core::Operator;
    use synopses::shedding::{
        DropPolicy, FixedRate, Load, Phase, PiController, PiGains, RateController, SemanticDrop, ShedStats, Simulation,
    };

    #[test]
    fn a_phase_shorter_than_the_clock_resolution_ends() {
        let phases = vec![Phase { duration: 1.0, rate: 10.0 }, Phase { duration: 1e-300, rate: 1e300 }];
        let report = Simulation::new(phases, 0.001, 1)
            .expect("valid")
            .with_tick(0.1)
            .expect("valid")
            .run(FixedRate::new(1.0).expect("valid"));
        assert!(report.offered < 1000, "{} arrivals", report.offered);
    }

    #[test]
    fn a_pi_controller_never_takes_a_nan_step() {
        let mut pi = PiController::new(0.05, PiGains { proportional: 0.2, integral: 2.0 }).expect("valid");
        let load = Load { offered: 1, elapsed: f64::INFINITY, queue_len: 0, cost_per_item: 0.001, queue_delay: 0.05 };
        pi.update(&load);
        assert_eq!(pi.keep_probability(), 1.0);
    }

    #[test]
    fn semantic_drops_keep_nothing_at_zero_and_rank_nan_lowest() {
        let mut none = SemanticDrop::new(|x: &f64| *x);
        assert!((0..100).all(|i| none.decide(&f64::from(i), 0.0).is_none()));
        let mut half_nan = SemanticDrop::new(|x: &f64| *x);
        let kept = (0..10_000)
            .filter(|&i| half_nan.decide(&if i % 2 == 0 { f64::NAN } else { f64::from(i % 100) }, 0.9).is_some())
            .count();
        assert!(kept >= 8_500, "kept {kept} of 10 000 at p = 0.9");
    }

    #[test]
    fn stats_with_more_kept_than_offered_do_not_panic() {
        assert_eq!(ShedStats { offered: 1, kept: 2 }.dropped(), 0);
    }

    /// An item counting its clones.
    #[derive(Debug)]
    struct Counted(Rc<Cell<usize>>);

    impl Clone for Counted {
        fn clone(&self) -> Self {
            self.0.set(self.0.get() + 1);
            Counted(Rc::clone(&self.0))
        }
    }

    /// Through `Operator<&T>` (what `par_observe` and the partitioned runner call), the
    /// reservoir clones only the items that enter: `k` to fill, then one per entry, and each
    /// entry after the fill draws two numbers (its key and the next skip) after one first skip.
    #[test]
    fn a_reservoir_clones_only_entering_items() {
        let clones = Rc::new(Cell::new(0));
        let items: Vec<Counted> = (0..100_000).map(|_| Counted(Rc::clone(&clones))).collect();
        let k = 10;
        let mut r: Reservoir<Counted> = Reservoir::new(k, 4).expect("valid capacity");
        Operator::<&Counted>::observe_all(&mut r, items.iter());
        let entries = k as u64 + (r.random_draws() - k as u64 - 1) / 2;
        assert_eq!(clones.get() as u64, entries);
    }
}

// ---------------------------------------------------------------------------------------------
// UltraLogLog and ExaLogLog
// ---------------------------------------------------------------------------------------------

/// An UltraLogLog body: precision, flags, seed, the martingale if any, the register bytes.
fn ull_body(p: u8, martingale: Option<f64>, registers: &[u8]) -> Vec<u8> {
    let mut body = vec![p, u8::from(martingale.is_some())];
    body.extend_from_slice(&9_u64.to_le_bytes());
    if let Some(x) = martingale {
        body.extend_from_slice(&x.to_le_bytes());
    }
    body.extend_from_slice(registers);
    body
}

/// An UltraLogLog body with flag bits `flags | 2` (sparse), the bytes `extra` after the seed,
/// then the count and the entries.
fn sparse_body(p: u8, flags: u8, extra: &[u8], entries: &[u32]) -> Vec<u8> {
    let mut body = vec![p, flags | 2];
    body.extend_from_slice(&9_u64.to_le_bytes());
    body.extend_from_slice(extra);
    body.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    entries.iter().for_each(|e| body.extend_from_slice(&e.to_le_bytes()));
    body
}

proptest! {
    /// Bodies that pass the outer checks: a valid precision (and t, d), flags and length,
    /// with arbitrary register bytes, so the register validation itself is exercised.
    #[test]
    fn structured_history_bodies_never_panic(
        p in 2_u8..=7, t in 0_u8..=5, d in 0_u8..=27, flags in 0_u8..=2, martingale in any::<f64>(),
        registers in proptest::collection::vec(any::<u8>(), 0..700),
    ) {
        let ull = ull_body(p, (flags == 1).then_some(martingale), &registers);
        check_decoded::<UltraLogLog>(&envelope(ULL, &ull))?;
        let mut ell = vec![p, t, d];
        ell.extend_from_slice(&ull[1..]);
        check_decoded::<ExaLogLog>(&envelope(ELL, &ell))?;
    }
}

#[test]
fn history_sketches_crafted_invalid_fields_are_rejected() -> TestResult {
    let m = 8;
    let ok = |regs: &[u8]| ull_body(3, None, regs);
    let mut regs = vec![0_u8; m];
    regs[0] = 4 * 5 + 3;
    assert!(UltraLogLog::from_bytes(&envelope(ULL, &ok(&regs))).is_ok());
    for (what, body, field) in [
        ("precision 2", ull_body(2, None, &[0; 4]), "precision"),
        ("precision 27", ull_body(27, None, &[]), "precision"),
        (
            "unknown flags",
            {
                let mut b = ok(&regs);
                b[1] = 8;
                b
            },
            "flags",
        ),
        ("sparse at a precision without a sparse mode", sparse_body(3, 0, &[], &[]), "flags"),
        ("history in an empty register", ok(&[1, 0, 0, 0, 0, 0, 0, 0]), "registers"),
        ("a value below 1 in the history", ok(&[4 + 2, 0, 0, 0, 0, 0, 0, 0]), "registers"),
        ("an update value above 65 − p", ok(&[4 * 63, 0, 0, 0, 0, 0, 0, 0]), "registers"),
        ("a martingale on an empty sketch", ull_body(3, Some(2.0), &[0; 8]), "martingale"),
        ("no martingale on an empty sketch", ull_body(3, None, &[0; 8]), "martingale"),
        ("a martingale below the registers", ull_body(3, Some(1.5), &regs), "martingale"),
        ("a NaN martingale", ull_body(3, Some(f64::NAN), &regs), "martingale"),
        ("a negative zero martingale", ull_body(3, Some(-0.0), &[0; 8]), "martingale"),
    ] {
        let r = UltraLogLog::from_bytes(&envelope(ULL, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    // Sparse encodings: what the sparse mode holds, ascending valid entries, no martingale.
    let entry = |top: u32, rank: u32| top << 6 | rank;
    assert!(UltraLogLog::from_bytes(&envelope(ULL, &sparse_body(10, 0, &[], &[entry(1, 1), entry(2, 39)]))).is_ok());
    for (what, body, field) in [
        ("a sparse martingale", sparse_body(10, 1, &[0; 8], &[]), "flags"),
        (
            "more entries than the mode holds",
            sparse_body(4, 0, &[], &[1, 2, 3, 4].map(|i| entry(i, 1))),
            "sparse count",
        ),
        ("entries out of order", sparse_body(10, 0, &[], &[entry(2, 1), entry(1, 1)]), "sparse entries"),
        ("a repeated entry", sparse_body(10, 0, &[], &[entry(2, 1), entry(2, 1)]), "sparse entries"),
        ("a rank of 0", sparse_body(10, 0, &[], &[entry(2, 0)]), "sparse entries"),
        ("a rank above 39", sparse_body(10, 0, &[], &[entry(2, 40)]), "sparse entries"),
    ] {
        let r = UltraLogLog::from_bytes(&envelope(ULL, &body));
        assert!(is_invalid_field(&r, field), "{what}: {r:?}");
    }
    let mut huge = sparse_body(10, 0, &[], &[]);
    huge[10..14].copy_from_slice(&150_u32.to_le_bytes());
    assert!(matches!(UltraLogLog::from_bytes(&envelope(ULL, &huge)), Err(DecodeError::Truncated { .. })));
    // Missing and trailing register bytes.
    assert!(matches!(UltraLogLog::from_bytes(&envelope(ULL, &ok(&regs[..7]))), Err(DecodeError::Truncated { .. })));
    assert!(matches!(
        UltraLogLog::from_bytes(&envelope(ULL, &ok(&[&regs[..], &[0]].concat()))),
        Err(DecodeError::TrailingBytes(1))
    ));
    // ExaLogLog: out-of-range parameters, and padding bits in the last byte.
    let ell = |p: u8, t: u8, d: u8, packed: &[u8]| {
        let mut body = vec![p, t, d, 0];
        body.extend_from_slice(&9_u64.to_le_bytes());
        body.extend_from_slice(packed);
        body
    };
    for (p, t, d, field) in [(1, 2, 20, "precision"), (27, 2, 20, "precision"), (8, 5, 0, "t"), (8, 2, 25, "d")] {
        let r = ExaLogLog::from_bytes(&envelope(ELL, &ell(p, t, d, &[])));
        assert!(is_invalid_field(&r, field), "({p}, {t}, {d}): {r:?}");
    }
    // p = 2, t = 0, d = 1: four 7-bit registers in 28 bits, four bits of padding; the first
    // register has u = 1 (and, without a martingale, the sketch is a merged one).
    assert!(ExaLogLog::from_bytes(&envelope(ELL, &ell(2, 0, 1, &[2, 0, 0, 0]))).is_ok());
    let r = ExaLogLog::from_bytes(&envelope(ELL, &ell(2, 0, 1, &[2, 0, 0, 0x10])));
    assert!(is_invalid_field(&r, "registers"), "{r:?}");
    Ok(())
}

/// States no stream makes, which an outside audit found the decoders accepting: a dense
/// sketch of a shape with a sparse mode holds more than the sparse limit of distinct entries
/// (so at least one register set, and at the highest precisions several), and its martingale
/// started at that count.
#[test]
fn dense_sketches_hold_what_turned_them_dense() -> TestResult {
    // UltraLogLog p = 10: a real dense sketch, its martingale patched below the limit (192).
    let mut ull = UltraLogLog::new(10)?;
    (0..400_u64).for_each(|j| ull.observe_hash((j << 38) | (1 << 53) | 1));
    assert!(!ull.is_sparse() && ull.martingale_estimate().is_some_and(|x| x >= 192.0));
    let bytes = ull.to_bytes();
    for x in [1.0, 5.0, 100.0, 191.0] {
        let mut body = bytes[4..bytes.len() - 8].to_vec();
        body[10..18].copy_from_slice(&f64::to_le_bytes(x));
        let r = UltraLogLog::from_bytes(&envelope(ULL, &body));
        assert!(is_invalid_field(&r, "martingale"), "martingale {x}: {r:?}");
    }
    // A dense empty UltraLogLog at a precision with a sparse mode.
    let r = UltraLogLog::from_bytes(&envelope(ULL, &ull_body(10, Some(0.0), &[0; 1024])));
    assert!(is_invalid_field(&r, "registers"), "{r:?}");
    // At p = 3 (no sparse mode) it is the empty sketch.
    assert_eq!(
        UltraLogLog::from_bytes(&envelope(ULL, &ull_body(3, Some(0.0), &[0; 8])))?,
        UltraLogLog::with_seed(3, 9)?
    );
    // HyperLogLog p = 18: one register holds at most 2^8 · 39 = 9 984 entries, the sparse
    // limit is 49 152: a dense sketch has at least 5 registers set.
    for set in [1_usize, 4] {
        let mut registers = vec![0_u8; 1 << 18];
        registers.iter_mut().take(set).for_each(|r| *r = 1);
        let r = HyperLogLog::from_bytes(&hll_dense(18, 0, None, &registers));
        assert!(is_invalid_field(&r, "registers"), "{set} set: {r:?}");
    }
    let mut registers = vec![0_u8; 1 << 18];
    registers.iter_mut().take(5).for_each(|r| *r = 1);
    assert!(HyperLogLog::from_bytes(&hll_dense(18, 0, None, &registers)).is_ok());
    // Count-Min, standard update: a saturated total, yet counters that sum to nothing.
    let r = CountMin::from_bytes(&envelope(CM, &cm_body(4, 2, 0x80, 0, u64::MAX, &[0; 8])));
    assert!(is_invalid_field(&r, "counters"), "{r:?}");
    let mut saturated = CountMin::new(4, 2)?;
    saturated.observe_weighted(1_u64, u64::MAX);
    saturated.observe_weighted(2_u64, 3);
    assert_eq!(CountMin::from_bytes(&saturated.to_bytes())?, saturated);
    Ok(())
}

#[test]
fn history_sketches_invalid_parameters_are_config_errors() {
    for p in [0, 2, 27, u8::MAX] {
        assert_eq!(UltraLogLog::new(p).map_err(|e| e.parameter()).err(), Some("precision"), "{p}");
    }
    for p in [0, 1, 27] {
        assert_eq!(ExaLogLog::new(p).map_err(|e| e.parameter()).err(), Some("precision"), "{p}");
    }
    assert_eq!(
        ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: 8, t: 5, d: 0 }, 0).map_err(|e| e.parameter()).err(),
        Some("t")
    );
    assert_eq!(
        ExaLogLog::with_shape_and_seed(ExaLogLogShape { precision: 8, t: 4, d: 23 }, 0)
            .map_err(|e| e.parameter())
            .err(),
        Some("d")
    );
    let ull = UltraLogLog::new(8).expect("valid");
    assert_eq!(ull.reduce(9).map_err(|e| e.parameter()).err(), Some("precision"));
    assert_eq!(ull.reduce(2).map_err(|e| e.parameter()).err(), Some("precision"));
}

#[test]
fn history_sketches_mismatched_merges_fail_and_change_nothing() -> TestResult {
    let mut a = UltraLogLog::with_seed(8, 1)?;
    a.observe_all(0..1000_u64);
    let before = a.clone();
    for (other, parameter) in [(UltraLogLog::with_seed(8, 2)?, "seed"), (UltraLogLog::with_seed(7, 1)?, "precision")] {
        assert_eq!(a.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(a, before);
    }
    assert_eq!(a.merge_reducing(&UltraLogLog::with_seed(7, 2)?).map_err(|e| e.parameter()), Err("seed"));
    assert_eq!(a, before);
    let mut e = ExaLogLog::new(8)?;
    e.observe_all(0..1000_u64);
    let before = e.clone();
    for (other, parameter) in [
        (ExaLogLog::with_shape(ExaLogLogShape { precision: 8, t: 1, d: 20 })?, "t"),
        (ExaLogLog::with_shape(ExaLogLogShape { precision: 8, t: 2, d: 19 })?, "d"),
        (ExaLogLog::with_seed(8, 3)?, "seed"),
        (ExaLogLog::with_shape(ExaLogLogShape { precision: 9, t: 2, d: 20 })?, "precision"),
    ] {
        assert_eq!(e.merge(&other).map_err(|e| e.parameter()), Err(parameter));
        assert_eq!(e, before);
        if parameter != "precision" {
            assert_eq!(e.merge_reducing(&other).map_err(|e| e.parameter()), Err(parameter));
            assert_eq!(e, before);
        }
    }
    Ok(())
}

#[test]
fn history_sketch_decoding_allocates_in_proportion_to_its_input() {
    // A claim of 2^26 registers with none present.
    let bytes = envelope(ULL, &ull_body(26, None, &[]));
    assert_allocates_at_most_its_input::<UltraLogLog>(&bytes);
    let mut body = vec![26, 2, 20, 0];
    body.extend_from_slice(&0_u64.to_le_bytes());
    let bytes = envelope(ELL, &body);
    assert_allocates_at_most_its_input::<ExaLogLog>(&bytes);
}

/// The entropy-coded UltraLogLog body (`to_compressed_bytes`): every field is checked. A coded
/// length outside what the registers can take is refused before anything is allocated (a
/// 23-byte body cannot claim 2^26 registers), and a stream is accepted only as the encoder
/// writes it: its scale that of the registers' estimate, ending where the registers do, shorter
/// than the plain registers; so each state has one coded encoding.
#[test]
fn coded_ultraloglog_fields_are_validated() -> TestResult {
    let mut ull = UltraLogLog::with_seed(10, 5)?;
    ull.observe_all(0..50_000_u64);
    let coded = ull.to_compressed_bytes();
    let body = common::body(&coded).to_vec();
    // precision, flags, seed (8), martingale (8), scale (2), the byte lengths of the first
    // three streams (varints), the four streams.
    assert_eq!(body[1], 1 | 4);
    let scale = u16::from_le_bytes(body[18..20].try_into()?);
    let (mut at, mut lens) = (20, Vec::new());
    for _ in 0..3 {
        let (mut v, mut shift) = (0_u64, 0);
        loop {
            let b = body[at];
            at += 1;
            v |= u64::from(b & 0x7F) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        lens.push(v as usize);
    }
    let first: usize = lens.iter().sum();
    assert!(body.len() > at + first, "a fourth stream");
    let with = |offset: usize, bytes: &[u8]| {
        let mut b = body.clone();
        b[offset..offset + bytes.len()].copy_from_slice(bytes);
        envelope(ULL, &b)
    };
    for (what, bytes, field) in [
        ("a scale one step off", with(18, &(scale + 1).to_le_bytes()), "coded registers"),
        // (Read with another code: streams that end elsewhere, or other registers.)
        ("a scale far off", with(18, &(scale / 2).to_le_bytes()), ""),
        ("a scale above 2^64 a register", with(18, &2049_u16.to_le_bytes()), "scale"),
        ("a first stream of no bytes", with(20, &[0]), "coded length"),
    ] {
        let r = UltraLogLog::from_bytes(&bytes);
        let any = field.is_empty() && matches!(r, Err(DecodeError::InvalidField { .. }));
        assert!(any || is_invalid_field(&r, field), "{what}: {r:?}");
    }
    // Lengths claiming more bytes than the registers can take: refused before they are read.
    let mut huge_lens = body[..20].to_vec();
    for _ in 0..3 {
        huge_lens.extend_from_slice(&[0xFF, 0xFF, 0x03]); // 65 535 bytes each
    }
    assert!(is_invalid_field(&UltraLogLog::from_bytes(&envelope(ULL, &huge_lens)), "coded length"));
    // The last stream cut short or grown by a byte: it no longer ends with its registers.
    for bytes in [envelope(ULL, &body[..body.len() - 1]), envelope(ULL, &[&body[..], &[0]].concat())] {
        assert!(is_invalid_field(&UltraLogLog::from_bytes(&bytes), "registers"));
    }
    // The default seed: left out (flag bit 3), and refused written out or on a plain sketch.
    let mut default = UltraLogLog::new(10)?;
    default.observe_all(0..50_000_u64);
    let default_body = common::body(&default.to_compressed_bytes()).to_vec();
    assert_eq!(default_body[1], 1 | 4 | 8);
    let mut written_out = default_body[..2].to_vec();
    written_out[1] = 1 | 4;
    written_out.extend_from_slice(&DEFAULT_SEED.to_le_bytes());
    written_out.extend_from_slice(&default_body[2..]);
    assert!(is_invalid_field(&UltraLogLog::from_bytes(&envelope(ULL, &written_out)), "seed"));
    let mut plain = common::body(&default.to_bytes()).to_vec();
    plain[1] |= 8;
    assert!(is_invalid_field(&UltraLogLog::from_bytes(&envelope(ULL, &plain)), "flags"));
    // A changed byte: a different or invalid set of registers, never a panic.
    for at in [at, at + first / 2, body.len() - 1] {
        let mut b = body.clone();
        b[at] ^= 0x5A;
        if let Ok(other) = UltraLogLog::from_bytes(&envelope(ULL, &b)) {
            assert_ne!(other, ull);
            assert_eq!(common::body(&other.to_compressed_bytes()), &b[..], "one coded form a state");
        }
    }
    // The flag on a shape without a coded form (ExaLogLog), and with the sparse flag.
    let mut ell = ExaLogLog::new(4)?;
    ell.observe_all(0..1_000_u64);
    let mut ell_body = common::body(&ell.to_bytes()).to_vec();
    ell_body[3] |= 4;
    assert!(is_invalid_field(&ExaLogLog::from_bytes(&envelope(ELL, &ell_body)), "flags"));
    // The sparse flag on coded registers: read as coded entries, and refused.
    let mut sparse = body.clone();
    sparse[1] = 2 | 4;
    assert!(UltraLogLog::from_bytes(&envelope(ULL, &sparse)).is_err());
    sparse[1] = 1 | 2 | 4;
    assert!(is_invalid_field(&UltraLogLog::from_bytes(&envelope(ULL, &sparse)), "flags"));
    // A 23-byte body claiming 2^26 registers: refused as a field, allocating nothing large.
    let mut huge = vec![26_u8, 4 | 8];
    huge.extend_from_slice(&scale.to_le_bytes());
    huge.extend_from_slice(&[1, 1, 1]);
    huge.extend_from_slice(&[1; 16]);
    let bytes = envelope(ULL, &huge);
    let (r, largest, _) = measured(|| UltraLogLog::from_bytes(&bytes));
    assert!(is_invalid_field(&r, "coded length"), "{r:?}");
    assert!(largest <= bytes.len(), "allocated {largest} bytes for a {}-byte input", bytes.len());
    Ok(())
}

/// The gap-coded entries of a sparse sketch (`to_compressed_bytes`, flags sparse and coded):
/// a count above the sparse limit or beyond what the bits can hold is refused before anything
/// is allocated; a martingale, a written-out default seed, set padding bits and a coded form no
/// shorter than the plain one are refused; every changed byte gives an error or another sketch.
#[test]
fn coded_sparse_entries_are_validated() -> TestResult {
    let mut ull = UltraLogLog::new(12)?;
    ull.observe_all(0..300_u64);
    let mut hll = HyperLogLog::new(12)?;
    hll.observe_all(0..300_u64);
    assert!(ull.is_sparse() && hll.is_sparse());
    let (ull_coded, hll_coded) = (ull.to_compressed_bytes(), hll.to_compressed_bytes());
    assert!(ull_coded.len() < ull.to_bytes().len() * 3 / 4 && hll_coded.len() < hll.to_bytes().len() * 3 / 4);
    assert_eq!(UltraLogLog::from_bytes(&ull_coded)?, ull);
    assert_eq!(HyperLogLog::from_bytes(&hll_coded)?, hll);
    // UltraLogLog: precision, flags (sparse, coded, default seed), count (varint), stream.
    let body = common::body(&ull_coded).to_vec();
    assert_eq!(&body[..4], &[12, 2 | 4 | 8, 0xAC, 0x02]); // 300 entries
    let with = |head: &[u8], rest: &[u8]| envelope(ULL, &[head, rest].concat());
    for (what, bytes, field) in [
        ("a count above the limit", with(&[12, 2 | 4 | 8, 0x81, 0x06], &body[4..]), "sparse count"), // 769
        ("a martingale", with(&[12, 1 | 2 | 4 | 8], &body[2..]), "flags"),
        (
            "the default seed written out",
            with(&[&[12, 2 | 4][..], &DEFAULT_SEED.to_le_bytes()].concat(), &body[2..]),
            "seed",
        ),
    ] {
        let r = UltraLogLog::from_bytes(&bytes);
        let any = field.is_empty() && matches!(r, Err(DecodeError::InvalidField { .. }));
        assert!(any || is_invalid_field(&r, field), "{what}: {r:?}");
    }
    // A count of as many entries as the limit allows, in a few bytes: refused before the loop.
    let claim = with(&[12, 2 | 4 | 8, 0x80, 0x06], &[0; 16]); // 768 entries (the limit) in 128 bits
    let (r, largest, _) = measured(|| UltraLogLog::from_bytes(&claim));
    assert!(matches!(r, Err(DecodeError::Truncated { .. })), "{r:?}");
    assert!(largest <= claim.len(), "allocated {largest} bytes for a {}-byte input", claim.len());
    // Padding bits set in the last byte, or a byte more: refused.
    let mut padded = body.clone();
    *padded.last_mut().ok_or("a stream")? |= 0x80;
    let r = UltraLogLog::from_bytes(&envelope(ULL, &padded));
    assert!(r.is_err() && r != Ok(ull.clone()), "{r:?}");
    assert!(matches!(UltraLogLog::from_bytes(&with(&body, &[0])), Err(DecodeError::TrailingBytes(1))));
    // Every byte changed: an error, or a sketch of other entries.
    for at in 2..body.len() {
        let mut b = body.clone();
        b[at] ^= 0x5A;
        if let Ok(other) = UltraLogLog::from_bytes(&envelope(ULL, &b)) {
            assert_ne!(other, ull);
            assert_eq!(common::body(&other.to_compressed_bytes()), &b[..], "one coded form a state");
        }
    }
    // HyperLogLog: precision, flags (coded, default seed; sparse: bit 0 clear), count, stream.
    let body = common::body(&hll_coded).to_vec();
    assert_eq!(&body[..2], &[12, 4 | 8]);
    let mut with_martingale = body[..2].to_vec();
    with_martingale[1] |= 2;
    with_martingale.extend_from_slice(&3.0_f64.to_bits().to_le_bytes());
    with_martingale.extend_from_slice(&body[2..]);
    assert!(is_invalid_field(&HyperLogLog::from_bytes(&envelope(HLL, &with_martingale)), "flags"));
    for at in 2..body.len() {
        let mut b = body.clone();
        b[at] ^= 0x5A;
        if let Ok(other) = HyperLogLog::from_bytes(&envelope(HLL, &b)) {
            assert_ne!(other, hll);
        }
    }
    Ok(())
}

proptest! {
    /// Coded sparse bodies (flags sparse, coded and default seed; a count, then arbitrary bits):
    /// never a panic, and whatever is accepted is the encoder's form of what it decodes to.
    #[test]
    fn structured_coded_sparse_bodies_never_panic(
        p in 4_u8..=14, n in 0_u8..100, stream in proptest::collection::vec(any::<u8>(), 0..300), hll in any::<bool>(),
    ) {
        let mut body = vec![p, if hll { 4 | 8 } else { 2 | 4 | 8 }, n];
        body.extend_from_slice(&stream);
        if hll {
            check_decoded::<HyperLogLog>(&envelope(HLL, &body))?;
        } else {
            check_decoded::<UltraLogLog>(&envelope(ULL, &body))?;
        }
    }

    /// Coded dense sketches (p = 3 to 9, 1 to 60 items a register) with one to three edits
    /// anywhere in their bodies, a bit flipped, a byte dropped or a byte added (re-enveloped,
    /// so the checksum holds): never a panic, and whatever is accepted is the encoder's form of
    /// what it decodes to. A flip in a stream that swaps a codeword for one as long keeps the
    /// stream's length, and is accepted where the registers it gives are valid at that scale.
    #[test]
    fn edited_coded_dense_sketches_never_panic(
        p in 3_u8..=9, per_register in 1_u64..60, start in any::<u32>(), hll in any::<bool>(),
        edits in proptest::collection::vec((any::<u16>(), 0_u8..3, any::<u8>()), 1..4),
    ) {
        let items = u64::from(start)..u64::from(start) + (per_register << p);
        let coded = if hll {
            let mut s = HyperLogLog::new(p.max(4)).expect("a precision");
            s.observe_all(items);
            s.to_compressed_bytes()
        } else {
            let mut s = UltraLogLog::new(p).expect("a precision");
            s.observe_all(items);
            s.to_compressed_bytes()
        };
        let mut body = common::body(&coded).to_vec();
        for (at, kind, byte) in edits {
            let at = usize::from(at) % body.len();
            match kind {
                0 => body[at] ^= 1 << (byte % 8),
                1 if body.len() > 1 => drop(body.remove(at)),
                _ => body.insert(at, byte),
            }
        }
        if hll {
            check_decoded::<HyperLogLog>(&envelope(HLL, &body))?;
        } else {
            check_decoded::<UltraLogLog>(&envelope(ULL, &body))?;
        }
    }
}
