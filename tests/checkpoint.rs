//! Checkpoints: restore-and-continue equals the uninterrupted run, and a damaged or
//! half-written checkpoint never costs the previous one.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

mod common;

use common::{Subject, for_each_subject};
use proptest::prelude::*;
use synopses::cardinality::{ExaLogLog, FlajoletMartin, HyperLogLog, UltraLogLog};
use synopses::core::{Operator, Weight};
use synopses::frequency::{CountMin, HeavyHitters};
use synopses::membership::{Bloom, CountingBloom};
use synopses::quantiles::{DDSketch, Kll};
use synopses::sampling::{PrioritySample, Reservoir, WeightedReservoir};
use synopses::stream::{Checkpoints, Snapshot};

/// A fresh directory under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("synopses-test-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn epoch_dir(dir: &Path, epoch: u64) -> PathBuf {
    dir.join(format!("epoch-{epoch:020}"))
}

/// The items of one epoch of a replayable input: `BATCH` items a epoch.
fn epoch_items(epoch: u64) -> Vec<u64> {
    (epoch * BATCH..(epoch + 1) * BATCH).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 50_000).collect()
}

const BATCH: u64 = 5_000;

#[test]
fn restore_and_continue_equals_the_uninterrupted_run() -> Result<(), Box<dyn Error>> {
    const EPOCHS: u64 = 10;
    let tmp = TempDir::new("continue");
    let store = Checkpoints::open(&tmp.0)?;

    // The uninterrupted run.
    let mut hll = HyperLogLog::new(12)?;
    let mut sample = Reservoir::new(50, 7)?;
    for epoch in 0..EPOCHS {
        let items = epoch_items(epoch);
        hll.observe_all(&items);
        sample.observe_all(items.iter().copied());
    }

    // A run that crashes after checkpointing epoch 5, restarts from the checkpoint and
    // replays from there.
    let mut first = (HyperLogLog::new(12)?, Reservoir::new(50, 7)?);
    for epoch in 0..6 {
        let items = epoch_items(epoch);
        first.0.observe_all(&items);
        first.1.observe_all(items.iter().copied());
        store.save(epoch + 1, &first.0)?;
        Checkpoints::open(tmp.0.join("sample"))?.save(epoch + 1, &first.1)?;
    }
    drop(first);
    let restored = store.latest::<HyperLogLog>()?.ok_or("no checkpoint")?;
    let restored_sample = Checkpoints::open(tmp.0.join("sample"))?.latest::<Reservoir<u64>>()?.ok_or("none")?;
    assert_eq!((restored.epoch, restored_sample.epoch), (6, 6));
    assert!(restored.skipped.is_empty());
    let (mut hll_again, mut sample_again) = (restored.state, restored_sample.state);
    for epoch in restored.epoch..EPOCHS {
        let items = epoch_items(epoch);
        hll_again.observe_all(&items);
        sample_again.observe_all(items.iter().copied());
    }
    // Bit for bit: the one-stream martingale continues, and the same seed draws the same
    // sample.
    assert_eq!(hll_again, hll);
    assert_eq!(hll_again.to_bytes(), hll.to_bytes());
    assert_eq!(sample_again, sample);
    assert!(sample_again.iter().eq(sample.iter()));
    Ok(())
}

/// Saves checkpoints 1 and 2 of a sketch, damages checkpoint 2 with `damage`, and checks that
/// checkpoint 1 is restored and 2 reported.
fn survives(damage: impl FnOnce(&Path) -> Result<(), Box<dyn Error>>) -> Result<(), Box<dyn Error>> {
    let tmp = TempDir::new("damage");
    let store = Checkpoints::open(&tmp.0)?;
    let mut hll = HyperLogLog::new(10)?;
    hll.observe_all(0..100_u64);
    store.save(1, &hll)?;
    let first = hll.clone();
    hll.observe_all(100..200_u64);
    store.save(2, &hll)?;
    damage(&epoch_dir(&tmp.0, 2))?;
    let restored = Checkpoints::open(&tmp.0)?.latest::<HyperLogLog>()?.ok_or("nothing restored")?;
    assert_eq!(restored.epoch, 1);
    assert_eq!(restored.state, first);
    assert_eq!(restored.skipped.iter().map(|(e, _)| *e).collect::<Vec<_>>(), [2]);
    Ok(())
}

#[test]
fn a_damaged_checkpoint_falls_back_to_the_previous_one() -> Result<(), Box<dyn Error>> {
    survives(|dir| Ok(fs::remove_file(dir.join("MANIFEST"))?))?;
    survives(|dir| Ok(fs::remove_file(dir.join("part-0"))?))?;
    survives(|dir| Ok(fs::write(dir.join("MANIFEST"), b"")?))?;
    survives(|dir| Ok(fs::write(dir.join("part-0"), b"SY\x01\x02")?))?;
    survives(|dir| {
        let part = fs::read(dir.join("part-0"))?;
        Ok(fs::write(dir.join("part-0"), &part[..part.len() / 2])?)
    })?;
    survives(|dir| {
        let mut part = fs::read(dir.join("part-0"))?;
        part.push(0);
        Ok(fs::write(dir.join("part-0"), part)?)
    })?;
    // An intact checkpoint of another kind of state.
    survives(|dir| {
        let store = Checkpoints::open(dir.parent().ok_or("no parent")?)?;
        Ok(store.save(2, &synopses::membership::Bloom::new(64, 2)?)?)
    })?;
    Ok(())
}

#[test]
fn a_half_written_checkpoint_is_never_restored_and_is_cleaned_up() -> Result<(), Box<dyn Error>> {
    let tmp = TempDir::new("half");
    let store = Checkpoints::open(&tmp.0)?;
    let hll = HyperLogLog::new(10)?;
    store.save(1, &hll)?;
    // A save that crashed before its rename: a temporary directory with some parts.
    let temp = tmp.0.join(".saving-1-00000000000000000002");
    fs::create_dir(&temp)?;
    fs::write(temp.join("part-0"), b"partial")?;
    let store = Checkpoints::open(&tmp.0)?;
    assert!(!temp.exists());
    assert_eq!(store.epochs()?, [1]);
    assert_eq!(store.latest::<HyperLogLog>()?.map(|r| r.epoch), Some(1));
    Ok(())
}

#[test]
fn nothing_to_restore_is_none_not_an_error() -> Result<(), Box<dyn Error>> {
    let tmp = TempDir::new("empty");
    assert!(Checkpoints::open(&tmp.0)?.latest::<HyperLogLog>()?.is_none());
    // A snapshot of one synopsis is one part.
    assert!(HyperLogLog::restore(&[]).is_err());
    assert!(HyperLogLog::restore(&[vec![], vec![]]).is_err());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any change of any byte of the newest checkpoint's files is caught: the previous
    /// checkpoint is restored.
    #[test]
    fn any_corrupted_byte_is_caught(manifest in any::<bool>(), at in any::<prop::sample::Index>(), xor in 1..=255_u8) {
        let result = survives(|dir| {
            let path = dir.join(if manifest { "MANIFEST" } else { "part-0" });
            let mut bytes = fs::read(&path)?;
            let i = at.index(bytes.len());
            bytes[i] ^= xor;
            Ok(fs::write(&path, bytes)?)
        });
        prop_assert!(result.is_ok(), "{result:?}");
    }

    /// A checkpoint's files truncated anywhere are caught.
    #[test]
    fn any_truncation_is_caught(manifest in any::<bool>(), at in any::<prop::sample::Index>()) {
        let result = survives(|dir| {
            let path = dir.join(if manifest { "MANIFEST" } else { "part-0" });
            let bytes = fs::read(&path)?;
            Ok(fs::write(&path, &bytes[..at.index(bytes.len())])?)
        });
        prop_assert!(result.is_ok(), "{result:?}");
    }
}

/// A subject fed the items of a replayable input.
trait Feed: Subject {
    fn feed(&mut self, items: &[u64]);
}

macro_rules! feeds {
    ($($ty:ty => |$s:ident, $i:ident| $e:expr;)*) => {
        $(impl Feed for $ty {
            fn feed(&mut self, items: &[u64]) {
                let $s = self;
                for &$i in items {
                    $e;
                }
            }
        })*
    };
}

feeds! {
    FlajoletMartin => |s, i| s.observe(i);
    HyperLogLog => |s, i| s.observe(i);
    UltraLogLog => |s, i| s.observe(i);
    ExaLogLog => |s, i| s.observe(i);
    CountMin => |s, i| s.observe(i % 300);
    HeavyHitters<u64> => |s, i| Operator::observe(s, i % 300);
    HeavyHitters<String> => |s, i| Operator::observe(s, format!("k{}", i % 300));
    Bloom => |s, i| s.observe(i);
    CountingBloom => |s, i| s.observe(i);
    Reservoir<u64> => |s, i| s.observe(i);
    WeightedReservoir<u64> => |s, i| s.observe_weighted(i, Weight::new(1.0 + (i % 7) as f64).expect("positive"));
    PrioritySample<u64> => |s, i| s.observe_weighted(i, Weight::new(1.0 + (i % 7) as f64).expect("positive"));
    DDSketch => |s, i| s.add(common::spread_value(i)).expect("finite");
    Kll<f64> => |s, i| s.add(common::spread_value(i)).expect("finite");
    Kll<String> => |s, i| s.add(format!("k{}", i % 300)).expect("ordered");
}

/// Every reachable state of `S` (its examples: empty, sparse, dense, merged, full, ...),
/// snapshotted, restored and continued, ends bit for bit where the uninterrupted state ends.
fn continues_exactly<S: Feed>() -> Result<(), Box<dyn Error>> {
    let more: Vec<u64> = (0..3_000_u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20).collect();
    for (label, state) in S::examples() {
        let mut restored = S::restore(&state.snapshot())?;
        let mut uninterrupted = state.clone();
        restored.feed(&more);
        uninterrupted.feed(&more);
        assert_eq!(restored.to_bytes(), uninterrupted.to_bytes(), "{label}: restored and continued");
        assert_eq!(restored, uninterrupted, "{label}");
    }
    Ok(())
}

macro_rules! continue_suite {
    ($($name:ident: $ty:ty),* $(,)?) => {
        mod restored_continues_exactly {
            use super::*;
            $(#[test]
            fn $name() -> Result<(), Box<dyn Error>> {
                continues_exactly::<$ty>()
            })*
        }
    };
}

for_each_subject!(continue_suite);

/// A windowed sampler and a windowed sketch by event time, with items out of order, late and
/// too early: checkpointed mid-stream through a store, restored and continued, they close the
/// same windows with the same synopses, bit for bit, as the uninterrupted ones.
#[test]
fn windows_restore_and_continue_exactly() -> Result<(), Box<dyn Error>> {
    use synopses::core::Mergeable;
    use synopses::stream::{Closed, CountWindow, TimeWindow, Window};

    fn events(from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> {
        // Times mostly increasing, with jitter of up to 300 ticks back and a jump ahead now
        // and then.
        (from..to).map(|i| {
            let jitter = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 55;
            let jump = if i % 997 == 0 { 50_000 } else { 0 };
            (i * 10 + jump - jitter.min(i * 10), i % 2_000)
        })
    }
    fn run<O: Operator<u64> + Mergeable + Clone>(
        w: &mut TimeWindow<O>,
        from: u64,
        to: u64,
    ) -> Result<Vec<Closed<O>>, Box<dyn Error>> {
        let mut closed = Vec::new();
        for (time, item) in events(from, to) {
            let _late = w.observe_at(time, item);
            if time % 100 == 0 {
                closed.extend(w.advance_to(time.saturating_sub(200))?);
            }
        }
        Ok(closed)
    }

    let tmp = TempDir::new("windows");
    let store = Checkpoints::open(&tmp.0)?;
    let shape = Window::sliding(5_000, 1_000)?;
    let mut sampled = TimeWindow::new(&Reservoir::new(20, 9)?, shape, 100)?;
    let mut counted = TimeWindow::new(&CountMin::new(128, 3)?, shape, 100)?;
    run(&mut sampled, 0, 3_000)?;
    run(&mut counted, 0, 3_000)?;
    store.save(1, &sampled)?;
    Checkpoints::open(tmp.0.join("cm"))?.save(1, &counted)?;

    let mut sampled_again = store.latest::<TimeWindow<Reservoir<u64>>>()?.ok_or("none")?.state;
    let mut counted_again = Checkpoints::open(tmp.0.join("cm"))?.latest::<TimeWindow<CountMin>>()?.ok_or("none")?.state;
    let closed = run(&mut sampled, 3_000, 6_000)?;
    let closed_again = run(&mut sampled_again, 3_000, 6_000)?;
    assert!(!closed.is_empty());
    assert_eq!(closed.len(), closed_again.len());
    for (a, b) in closed.iter().zip(&closed_again) {
        assert_eq!((a.start, a.end, a.synopsis.to_bytes()), (b.start, b.end, b.synopsis.to_bytes()));
    }
    assert_eq!(sampled.to_bytes(), sampled_again.to_bytes());
    let closed = run(&mut counted, 3_000, 6_000)?;
    let closed_again = run(&mut counted_again, 3_000, 6_000)?;
    assert_eq!(closed, closed_again);
    assert_eq!(counted.to_bytes(), counted_again.to_bytes());

    // By count, through a snapshot alone.
    let mut last = CountWindow::new(&HyperLogLog::new(10)?, Window::sliding(4_000, 500)?)?;
    last.observe_all(0..7_321_u64);
    let mut last_again = CountWindow::<HyperLogLog>::restore(&last.snapshot())?;
    last.observe_all(7_321..20_000_u64);
    last_again.observe_all(7_321..20_000_u64);
    assert_eq!(last.to_bytes(), last_again.to_bytes());
    assert_eq!(last.window()?, last_again.window()?);
    Ok(())
}

/// A partitioned operator checkpointed between two parallel batches (a consistent cut: every
/// part has seen the same prefix), restored and continued, holds the uninterrupted run's parts
/// and partitioner loads, bit for bit: a sketch under partial key grouping (whose loads decide
/// the routes to come) and a sampler under shuffle grouping (whose parts' random streams
/// decide the sample).
#[cfg(feature = "rayon")]
#[test]
fn partitioned_operators_restore_between_batches() -> Result<(), Box<dyn Error>> {
    use synopses::stream::{PartialKeyGrouping, Partitioned, ShuffleGrouping};

    fn batches<O, P>(run: &mut Partitioned<O, P>, from: u64, to: u64)
    where
        O: for<'a> Operator<&'a u64> + synopses::core::Mergeable + Send,
        P: synopses::stream::Partitioner + Send + Sync,
    {
        for batch in from..to {
            let items: Vec<u64> = epoch_items(batch).into_iter().map(|i| i % 3_000).collect();
            run.par_observe(&items);
        }
    }
    fn check<O, P>(mut run: Partitioned<O, P>, dir: &Path) -> Result<(), Box<dyn Error>>
    where
        O: for<'a> Operator<&'a u64> + synopses::core::Mergeable + synopses::codec::Codec + Send,
        P: synopses::stream::Partitioner + synopses::codec::Codec + Send + Sync,
    {
        let store = Checkpoints::open(dir)?;
        batches(&mut run, 0, 4);
        store.save(4, &run)?;
        let restored = store.latest::<Partitioned<O, P>>()?.ok_or("no checkpoint")?;
        assert_eq!(restored.epoch, 4);
        let mut resumed = restored.state;
        batches(&mut run, 4, 8);
        batches(&mut resumed, 4, 8);
        assert_eq!(resumed.snapshot(), run.snapshot());
        Ok(())
    }

    let tmp = TempDir::new("partitioned");
    check(Partitioned::new(&HyperLogLog::new(11)?, PartialKeyGrouping::new(3)?)?, &tmp.0.join("pkg"))?;
    check(Partitioned::new(&Reservoir::<u64>::new(40, 5)?, ShuffleGrouping::new(2)?)?, &tmp.0.join("shuffle"))?;
    check(Partitioned::new(&CountMin::new(256, 4)?, PartialKeyGrouping::new(4)?)?, &tmp.0.join("cm"))?;

    // A checkpoint whose parts disagree on their configuration is damaged: the previous one is
    // restored.
    let store = Checkpoints::open(tmp.0.join("mixed"))?;
    let good = Partitioned::new(&HyperLogLog::new(11)?, PartialKeyGrouping::new(2)?)?;
    store.save(1, &good)?;
    let mut mixed = good.snapshot();
    mixed[2] = HyperLogLog::new(12)?.to_bytes();
    // Saved whole (a manifest that matches its files), through a state of raw parts.
    struct Raw(Vec<Vec<u8>>);
    impl Snapshot for Raw {
        fn snapshot(&self) -> Vec<Vec<u8>> {
            self.0.clone()
        }
        fn restore(parts: &[Vec<u8>]) -> Result<Self, synopses::DecodeError> {
            Ok(Self(parts.to_vec()))
        }
    }
    store.save(2, &Raw(mixed))?;
    let restored = store.latest::<Partitioned<HyperLogLog, PartialKeyGrouping>>()?.ok_or("none")?;
    assert_eq!((restored.epoch, restored.skipped.len()), (1, 1));
    Ok(())
}

/// Saving an epoch again replaces its checkpoint; a crash between setting the old one aside
/// and putting the new one in place loses neither; names `save` never writes are ignored.
#[test]
fn replacing_a_checkpoint_never_leaves_none() -> Result<(), Box<dyn Error>> {
    let tmp = TempDir::new("replace");
    let store = Checkpoints::open(&tmp.0)?.keep(1)?;
    let mut hll = HyperLogLog::new(10)?;
    hll.observe_all(0..50_u64);
    store.save(3, &hll)?;
    let old = hll.clone();
    hll.observe_all(50..100_u64);
    store.save(3, &hll)?;
    assert_eq!(store.load::<HyperLogLog>(3)?, hll);
    assert_eq!(store.epochs()?, [3]);

    // A crash after the old checkpoint was set aside, before the new one landed.
    let epoch_3 = epoch_dir(&tmp.0, 3);
    let aside = tmp.0.join(format!(".replaced-{:020}", 3));
    fs::rename(&epoch_3, &aside)?;
    fs::create_dir(tmp.0.join(".saving-1-0-00000000000000000003"))?;
    let store = Checkpoints::open(&tmp.0)?;
    assert!(!aside.exists());
    assert_eq!(store.latest::<HyperLogLog>()?.map(|r| (r.epoch, r.state)), Some((3, hll.clone())));

    // A crash after the new one landed, before the old one was deleted.
    Checkpoints::open(tmp.0.join("elsewhere"))?.save(3, &old)?;
    fs::rename(epoch_dir(&tmp.0.join("elsewhere"), 3), &aside)?;
    let store = Checkpoints::open(&tmp.0)?;
    assert!(!aside.exists());
    assert_eq!(store.load::<HyperLogLog>(3)?, hll);

    // Only 20-digit names are checkpoints.
    fs::create_dir(tmp.0.join("epoch-5"))?;
    fs::create_dir(tmp.0.join("epoch-+0000000000000000007"))?;
    assert_eq!(store.epochs()?, [3]);
    store.save(4, &hll)?;
    assert_eq!(store.latest::<HyperLogLog>()?.map(|r| r.epoch), Some(4));
    Ok(())
}
