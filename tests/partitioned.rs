//! The partitioned runner's hashed path and the partitioners' codec.
//!
//! - `par_observe_hashed` (one hash per item, shared by the route and the sketch) gives the
//!   merged state of one sequential pass, and of `observe` item by item, for HyperLogLog,
//!   Count-Min, Bloom and counting Bloom filters, under every partitioner and 1 to 4 workers;
//!   with key grouping every part is the same as through `observe` (the routes are the same).
//! - Every partitioner encodes and decodes exactly (configuration, seed, loads, position), and
//!   arbitrary or mutated bytes decode to an error or a valid partitioner, never a panic.

use std::fmt::Debug;

use proptest::prelude::*;
use synopses::cardinality::HyperLogLog;
use synopses::core::{Mergeable, ObserveHash, Operator};
use synopses::frequency::CountMin;
use synopses::membership::{Bloom, CountingBloom};
use synopses::stream::{DChoices, KeyGrouping, PartialKeyGrouping, Partitioned, Partitioner, ShuffleGrouping};

/// The state without what only one stream's history gives: a self-merge ends a
/// HyperLogLog's martingale and changes nothing else of these types.
fn settled<O: Mergeable + Clone>(o: &O) -> O {
    let mut out = o.clone();
    out.merge(o).expect("the same configuration");
    out
}

/// Every observe path of `Partitioned` against one sequential synopsis (merged states), the
/// sequential paths' loads against each other, and with key grouping every part of the
/// parallel paths against the parts of `observe` item by item.
fn check_paths<O, P>(proto: &O, partitioner: P, items: &[u64]) -> Result<(), TestCaseError>
where
    O: Mergeable + ObserveHash + Clone + PartialEq + Debug + Operator<u64> + for<'a> Operator<&'a u64> + Send,
    P: Partitioner + Send + Sync,
{
    let mut sequential = proto.empty_like();
    sequential.observe_all(items.iter().copied());
    let sequential = settled(&sequential);
    let mut one = Partitioned::new(proto, partitioner.clone()).unwrap();
    items.iter().for_each(|&x| one.observe(x));
    prop_assert_eq!(&settled(&one.merged().unwrap()), &sequential);
    let mut slice = Partitioned::new(proto, partitioner.clone()).unwrap();
    slice.observe_slice(items);
    prop_assert_eq!(slice.partitioner().loads(), one.partitioner().loads());
    prop_assert_eq!(slice.parts(), one.parts());
    #[cfg(feature = "rayon")]
    {
        let key_grouping = partitioner.choose(0).is_some();
        let mut hashed = Partitioned::new(proto, partitioner.clone()).unwrap();
        hashed.par_observe_hashed(items);
        prop_assert_eq!(&settled(&hashed.merged().unwrap()), &sequential);
        prop_assert_eq!(hashed.partitioner().loads().iter().sum::<u64>(), items.len() as u64);
        let mut generic = Partitioned::new(proto, partitioner).unwrap();
        generic.par_observe(items);
        prop_assert_eq!(&settled(&generic.merged().unwrap()), &sequential);
        if key_grouping {
            // Same routes, and each worker's items in slice order: the same parts, loads too.
            prop_assert_eq!(hashed.parts(), one.parts());
            prop_assert_eq!(generic.parts(), one.parts());
            prop_assert_eq!(hashed.partitioner().loads(), one.partitioner().loads());
        }
        prop_assert_eq!(settled(&hashed.into_merged().unwrap()), sequential);
    }
    Ok(())
}

fn items() -> impl Strategy<Value = Vec<u64>> {
    // A small domain gives repeats; HyperLogLog p = 8 turns dense within the longer streams.
    prop::collection::vec(0..3000_u64, 0..1500)
}

/// Every partitioner over `workers` workers, for `check_paths`.
macro_rules! every_partitioner {
    ($proto:expr, $workers:expr, $items:expr) => {
        check_paths($proto, KeyGrouping::new($workers).unwrap(), $items)?;
        check_paths($proto, KeyGrouping::with_seed($workers, 0x5EC2E7).unwrap(), $items)?;
        check_paths($proto, ShuffleGrouping::new($workers).unwrap(), $items)?;
        check_paths($proto, PartialKeyGrouping::new($workers).unwrap(), $items)?;
        check_paths($proto, DChoices::new($workers, 3).unwrap(), $items)?;
    };
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// HyperLogLog, Count-Min, Bloom and counting Bloom filters, at their default seed (one
    /// hash per item) and another (the route then hashes apart), 1 to 4 workers.
    #[test]
    fn hashed_path_equals_one_pass(workers in 1_usize..=4, seed in any::<u64>(), items in items()) {
        for proto_seed in [synopses::hash::DEFAULT_SEED, seed] {
            every_partitioner!(&HyperLogLog::with_seed(8, proto_seed).unwrap(), workers, &items);
            every_partitioner!(&CountMin::with_seed(64, 3, proto_seed).unwrap(), workers, &items);
            every_partitioner!(&Bloom::with_seed(4000, 3, proto_seed).unwrap(), workers, &items);
            every_partitioner!(&CountingBloom::with_seed(500, 3, proto_seed).unwrap(), workers, &items);
        }
    }
}

/// Streams of several rounds (each sender routes 2^14 items a round), with fewer and more
/// senders than workers.
#[cfg(feature = "rayon")]
#[test]
fn long_streams_over_pools_of_one_to_three_threads() -> Result<(), Box<dyn std::error::Error>> {
    let items: Vec<u64> = (0..150_001_u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 90_000).collect();
    for threads in 1..=3 {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        let proto = HyperLogLog::new(12)?;
        pool.install(|| -> Result<(), String> {
            for workers in [1, 2, 4, 9] {
                let run = || -> Result<(), TestCaseError> {
                    every_partitioner!(&proto, workers, &items);
                    Ok(())
                };
                run().map_err(|e| format!("{threads} threads, {workers} workers: {e}"))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// The hashed path is deterministic: the same parts for the same input and thread count.
#[cfg(feature = "rayon")]
#[test]
fn hashed_path_is_deterministic() -> Result<(), Box<dyn std::error::Error>> {
    let items: Vec<u64> = (0..100_000_u64).map(|i| i % 7919).collect();
    let proto = CountMin::new(256, 4)?;
    let run = || -> Result<_, Box<dyn std::error::Error>> {
        let mut parts = Partitioned::new(&proto, PartialKeyGrouping::new(3)?)?;
        parts.par_observe_hashed(&items);
        parts.par_observe_hashed(&items[..5000]);
        Ok(parts)
    };
    let (a, b) = (run()?, run()?);
    assert_eq!(a.parts(), b.parts());
    assert_eq!(a.partitioner(), b.partitioner());
    Ok(())
}

#[test]
fn from_parts_needs_one_part_per_worker() -> Result<(), Box<dyn std::error::Error>> {
    let proto = HyperLogLog::new(10)?;
    let mut parts = Partitioned::new(&proto, PartialKeyGrouping::new(3)?)?;
    (0..10_000_u64).for_each(|i| parts.observe(i % 500));
    let rebuilt = Partitioned::from_parts(parts.parts().to_vec(), parts.partitioner().clone())?;
    assert_eq!(rebuilt.parts(), parts.parts());
    for wrong in [0, 2, 4] {
        let err = Partitioned::from_parts(vec![proto.clone(); wrong], PartialKeyGrouping::new(3)?).err();
        assert_eq!(err.map(|e| e.parameter()), Some("workers"), "{wrong} parts");
    }
    Ok(())
}

/// Encodes, decodes, checks equality and that the restored partitioner routes on as the
/// original would; then arbitrary bytes and every single-byte mutation of the encoding decode
/// without a panic, to an error or a partitioner that re-encodes to the same bytes.
fn check_codec<P, F, D>(mut p: P, keys: &[u64], to_bytes: F, from_bytes: D) -> Result<(), TestCaseError>
where
    P: Partitioner + PartialEq + Debug,
    F: Fn(&P) -> Vec<u8>,
    D: Fn(&[u8]) -> Result<P, synopses::DecodeError>,
{
    let (head, tail) = keys.split_at(keys.len() / 2);
    for k in head {
        let _ = p.route(k);
    }
    let bytes = to_bytes(&p);
    let mut restored = from_bytes(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&restored, &p);
    for k in tail {
        prop_assert_eq!(restored.route(k), p.route(k));
    }
    prop_assert_eq!(&restored, &p);
    for cut in 0..bytes.len() {
        prop_assert!(from_bytes(&bytes[..cut]).is_err());
    }
    for i in 0..bytes.len() {
        let mut mutated = bytes.clone();
        mutated[i] ^= 0x5A;
        if let Ok(q) = from_bytes(&mutated) {
            prop_assert_eq!(from_bytes(&to_bytes(&q)).ok(), Some(q));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn partitioners_round_trip(workers in 1_usize..=40, choices in 1_usize..=64, seed in any::<u64>(), keys in prop::collection::vec(0..500_u64, 0..300)) {
        check_codec(KeyGrouping::with_seed(workers, seed).unwrap(), &keys, KeyGrouping::to_bytes, KeyGrouping::from_bytes)?;
        check_codec(ShuffleGrouping::new(workers).unwrap(), &keys, ShuffleGrouping::to_bytes, ShuffleGrouping::from_bytes)?;
        check_codec(PartialKeyGrouping::with_seed(workers, seed).unwrap(), &keys, PartialKeyGrouping::to_bytes, PartialKeyGrouping::from_bytes)?;
        check_codec(DChoices::with_seed(workers, choices, seed).unwrap(), &keys, DChoices::to_bytes, DChoices::from_bytes)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = KeyGrouping::from_bytes(&bytes);
        let _ = ShuffleGrouping::from_bytes(&bytes);
        let _ = PartialKeyGrouping::from_bytes(&bytes);
        let _ = DChoices::from_bytes(&bytes);
    }
}

/// Family codes 14 to 17; a decoder refuses another family's bytes, and a body claiming more
/// workers than allowed, or more loads than present, before it allocates.
#[test]
fn partitioner_codec_fields_are_checked() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::DecodeError;
    use synopses::codec::Codec;
    assert_eq!(
        [KeyGrouping::FAMILY, ShuffleGrouping::FAMILY, PartialKeyGrouping::FAMILY, DChoices::FAMILY],
        [14, 15, 16, 17]
    );
    let kg = KeyGrouping::new(2)?.to_bytes();
    assert!(matches!(PartialKeyGrouping::from_bytes(&kg), Err(DecodeError::WrongFamily { .. })));
    // Re-seal a body with the envelope: magic, version, family, body, checksum.
    let seal = |family: u8, body: &[u8]| {
        let mut out = vec![b'S', b'Y', synopses::codec::FORMAT_VERSION, family];
        out.extend_from_slice(body);
        let sum = synopses::hash::hash_bytes(&out, 0);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    };
    let body = |workers: u32, loads: usize, tail: &[u8]| {
        let mut b = workers.to_le_bytes().to_vec();
        b.extend(std::iter::repeat_n(0_u8, 8 * loads));
        b.extend_from_slice(tail);
        b
    };
    assert_eq!(KeyGrouping::from_bytes(&seal(14, &body(2, 2, &[0; 8])))?, KeyGrouping::with_seed(2, 0)?);
    for (workers, loads) in [(0, 0), (65_537, 0), (u32::MAX, 1), (3, 2)] {
        assert!(KeyGrouping::from_bytes(&seal(14, &body(workers, loads, &[0; 8]))).is_err(), "{workers} {loads}");
    }
    // Shuffle grouping's position must be a worker; DChoices' choices in 1..=64.
    assert!(ShuffleGrouping::from_bytes(&seal(15, &body(2, 2, &1_u32.to_le_bytes()))).is_ok());
    assert!(ShuffleGrouping::from_bytes(&seal(15, &body(2, 2, &2_u32.to_le_bytes()))).is_err());
    for choices in [0_u8, 65] {
        let mut tail = vec![choices];
        tail.extend_from_slice(&[0; 8]);
        assert!(DChoices::from_bytes(&seal(17, &body(4, 4, &tail))).is_err());
    }
    assert!(DChoices::from_bytes(&seal(17, &body(4, 4, &[64, 0, 0, 0, 0, 0, 0, 0, 0]))).is_ok());
    Ok(())
}

proptest! {
    /// Partial key grouping's block routing (its loads in registers up to 8 workers) routes
    /// and counts as `route_hash` item by item, from any loads.
    #[test]
    fn block_routing_equals_routing_one_by_one(workers in 1_usize..=12, before in prop::collection::vec(any::<u64>(), 0..50), hashes in prop::collection::vec(any::<u64>(), 0..600)) {
        let mut one = PartialKeyGrouping::new(workers).unwrap();
        for &h in &before {
            let _ = one.route_hash(h % 7);
        }
        let mut block = one.clone();
        let mut routed = vec![usize::MAX; hashes.len()];
        block.route_hashes(&hashes, &mut routed);
        let expected: Vec<usize> = hashes.iter().map(|&h| one.route_hash(h)).collect();
        prop_assert_eq!(routed, expected);
        prop_assert_eq!(block, one);
    }
}

/// Routes and encodings are part of the format: a checkpoint restored by a later version
/// must route on as before. Pinned values.
#[test]
fn routes_and_bytes_are_pinned() -> Result<(), Box<dyn std::error::Error>> {
    use synopses::stream::{KEY_SEED, ROUTING_SEED, routing_hash};
    assert_eq!(routing_hash(0, 0), 0);
    assert_eq!(routing_hash(1, ROUTING_SEED), 0x5BA0_7EC2_8CB9_A750);
    let mut kg = KeyGrouping::new(16)?;
    let mut pkg = PartialKeyGrouping::new(16)?;
    let routes: Vec<(usize, usize)> = (0..8_u64).map(|i| (kg.route(&i), pkg.route(&i))).collect();
    assert_eq!(routes, [(14, 14), (0, 0), (13, 13), (15, 15), (12, 12), (5, 5), (9, 9), (5, 5)]);
    assert_eq!(kg.route_key_hash(synopses::hash::Hashable::hash64(&3_u64, KEY_SEED)), routes[3].0);
    let bytes = KeyGrouping::with_seed(2, 7)?.to_bytes();
    let mut body = vec![b'S', b'Y', 1, 14, 2, 0, 0, 0];
    body.extend([0; 16]);
    body.extend(7_u64.to_le_bytes());
    assert_eq!(&bytes[..bytes.len() - 8], &body[..]);
    Ok(())
}
