//! The timely operators (feature `timely`): for every timestamp, the synopsis `sketch` emits
//! and every per-key synopsis `sketch_by_key` emits under partial key grouping equal the
//! sequential ones over that timestamp's items, with 1, 2 and 4 worker threads and with two
//! processes talking over 127.0.0.1; and configuration errors are reported, not hung on.
//!
//! The two-process test starts this test binary twice more, running only
//! `timely_process_child`, which does nothing unless the environment names its role.
#![cfg(feature = "timely")]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::error::Error;
use std::net::TcpListener;
use std::process::{Child, Command};
use std::rc::Rc;
use std::time::{Duration, Instant};

use synopses::cardinality::HyperLogLog;
use synopses::codec::Codec;
use synopses::core::{Mergeable, Operator};
use synopses::frequency::CountMin;
use synopses::stream::PartialKeyGrouping;
use synopses::stream::timely::{SketchByKey, SketchStream, Sketched, config_from_args, execute};
use timely::dataflow::InputHandle;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Input, Inspect, Probe};

const EPOCHS: u64 = 5;
/// An epoch with no items anywhere: it must produce nothing.
const EMPTY_EPOCH: u64 = 2;
const PER_EPOCH: u64 = 20_000;
/// The key of `sketch`'s results in the common (time, key) form.
const GLOBAL: u64 = u64::MAX;

type Item = (u64, u64);
/// (time, key) → the encoded synopsis; and the workers that emitted a `sketch` result.
type Results = (BTreeMap<(u64, u64), Vec<u8>>, Vec<usize>);

/// Item `g` of the stream: a third of the items on one hot key (which partial key grouping
/// splits over two workers), the rest over 40 keys; values from a scramble of `g`.
fn item(g: u64) -> Item {
    let key = if g.is_multiple_of(3) { 0 } else { g % 41 };
    (key, g.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) % 6_000)
}

fn epoch_items(epoch: u64) -> impl Iterator<Item = u64> {
    let count = if epoch == EMPTY_EPOCH { 0 } else { PER_EPOCH };
    (0..count).map(move |i| epoch * PER_EPOCH + i)
}

/// Runs both operators over the stream, each worker reading the items `g` with
/// `g % workers == index`, one timestamp per epoch; returns this process's results.
fn run<O>(config: timely::Config, proto: O, by_key: bool) -> Result<Results, Box<dyn Error>>
where
    O: Operator<Item> + Mergeable + Codec + Send + Sync + 'static,
{
    let guards = execute(config, Duration::from_secs(60), move |worker| -> Result<Results, String> {
        let (index, peers) = (worker.index(), worker.peers());
        let found = Rc::new(RefCell::new((BTreeMap::new(), Vec::new())));
        let sink = Rc::clone(&found);
        let mut input = InputHandle::<u64, _>::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| -> Result<_, String> {
            let items = scope.input_from(&mut input);
            let results: Sketched<'_, u64, (u64, O)> = if by_key {
                let grouping = PartialKeyGrouping::new(peers).map_err(|e| e.to_string())?;
                items.sketch_by_key(&proto, grouping, |&(key, _): &Item| key).map_err(|e| e.to_string())?
            } else {
                items.sketch(&proto).map(|result| result.map(|synopsis| (GLOBAL, synopsis)))
            };
            let (probe, _) = results
                .inspect_core(move |event| {
                    let Ok((stamp, batch)) = event else { return };
                    let mut found = sink.borrow_mut();
                    for result in batch {
                        let time = stamp.least().copied().unwrap_or(u64::MAX);
                        match result {
                            Ok((key, synopsis)) => {
                                let fresh = found.0.insert((time, *key), synopsis.to_bytes()).is_none();
                                assert!(fresh, "two results for time {time}, key {key}");
                                if *key == GLOBAL {
                                    found.1.push(index);
                                }
                            }
                            Err(e) => panic!("a part failed at time {time}: {e}"),
                        }
                    }
                })
                .probe();
            Ok(probe)
        })?;
        for epoch in 0..EPOCHS {
            epoch_items(epoch).filter(|g| g % peers as u64 == index as u64).for_each(|g| input.send(item(g)));
            input.advance_to(epoch + 1);
            worker.step_while(|| probe.less_than(input.time()));
        }
        drop(input);
        worker.step_or_park_while(None, || !probe.done());
        Ok(found.take())
    })?;
    let mut all: Results = (BTreeMap::new(), Vec::new());
    for result in guards.join() {
        let (found, workers) = result??;
        for (at, bytes) in found {
            assert!(all.0.insert(at, bytes).is_none(), "two workers emitted time and key {at:?}");
        }
        all.1.extend(workers);
    }
    Ok(all)
}

/// The sequential answers: per (time, key), or per (time, `GLOBAL`).
fn sequential<O: Operator<Item> + Mergeable>(proto: &O, by_key: bool) -> BTreeMap<(u64, u64), O> {
    let mut out = BTreeMap::new();
    for epoch in 0..EPOCHS {
        for g in epoch_items(epoch) {
            let (key, value) = item(g);
            let at = (epoch, if by_key { key } else { GLOBAL });
            out.entry(at).or_insert_with(|| proto.empty_like()).observe((key, value));
        }
    }
    out
}

/// A synopsis without its history: a self-merge keeps every register of a HyperLogLog and ends
/// its single-stream martingale, which a merge of parts cannot keep. (For Count-Min it doubles
/// every counter on both sides alike, so comparing through it is no weaker.)
fn without_history<O: Mergeable + Clone>(s: &O) -> Result<O, Box<dyn Error>> {
    let mut out = s.clone();
    out.merge(s)?;
    Ok(out)
}

/// Checks the results of a run against the sequential pass, time by time (and key by key).
fn check<O>(found: &Results, proto: &O, by_key: bool, exact: bool) -> Result<(), Box<dyn Error>>
where
    O: Operator<Item> + Mergeable + Codec + Clone + PartialEq + std::fmt::Debug,
{
    let expected = sequential(proto, by_key);
    let keys: Vec<_> = found.0.keys().copied().collect();
    assert_eq!(keys, expected.keys().copied().collect::<Vec<_>>(), "the (time, key) pairs emitted");
    assert!(!keys.iter().any(|&(time, _)| time == EMPTY_EPOCH), "an empty time produced a result");
    for (at, want) in &expected {
        let got = O::from_bytes(&found.0[at])?;
        if exact {
            assert_eq!(&got, want, "at {at:?}");
        } else {
            assert_eq!(without_history(&got)?, without_history(want)?, "at {at:?}");
        }
    }
    if !by_key {
        assert!(found.1.iter().all(|&worker| worker == 0), "sketch's results come out on worker 0");
    }
    Ok(())
}

fn hll() -> HyperLogLog {
    HyperLogLog::new(12).expect("a valid precision")
}

fn count_min() -> CountMin {
    CountMin::new(512, 4).expect("a valid shape")
}

#[test]
fn sketch_equals_the_sequential_pass_at_every_time() -> Result<(), Box<dyn Error>> {
    for workers in [1, 2, 4] {
        let config = || if workers == 1 { timely::Config::thread() } else { timely::Config::process(workers) };
        check(&run(config(), hll(), false)?, &hll(), false, false)?;
        check(&run(config(), count_min(), false)?, &count_min(), false, true)?;
    }
    Ok(())
}

#[test]
fn sketch_by_key_under_partial_key_grouping_equals_the_sequential_pass() -> Result<(), Box<dyn Error>> {
    for workers in [1, 2, 4] {
        let config = || if workers == 1 { timely::Config::thread() } else { timely::Config::process(workers) };
        check(&run(config(), hll(), true)?, &hll(), true, false)?;
        check(&run(config(), count_min(), true)?, &count_min(), true, true)?;
    }
    Ok(())
}

#[test]
fn a_partitioner_for_another_number_of_workers_is_a_config_error() -> Result<(), Box<dyn Error>> {
    let refused = timely::execute(timely::Config::process(2), |worker| {
        let mut input = InputHandle::new();
        worker.dataflow::<u64, _, _>(|scope| {
            let grouping = PartialKeyGrouping::new(3).map_err(|e| e.to_string())?;
            let items = scope.input_from(&mut input).container::<Vec<Item>>();
            let outcome = items.sketch_by_key(&hll(), grouping, |&(key, _): &Item| key);
            Ok::<_, String>(outcome.err().map(|e| e.parameter()))
        })
    })?
    .join();
    for result in refused {
        assert_eq!(result??, Some("partitioner workers"));
    }
    Ok(())
}

/// The results worker 0 sees when worker 1 folds with `other` and worker 0 with `ours`.
fn mixed<A, B>(ours: A, other: B) -> Result<Vec<Result<(), synopses::Error>>, Box<dyn Error>>
where
    A: Operator<u64> + Mergeable + Codec + Send + Sync + 'static,
    B: Operator<u64> + Mergeable + Codec + Send + Sync + 'static,
{
    let guards = execute(timely::Config::process(2), Duration::from_secs(60), move |worker| {
        let index = worker.index();
        let found = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&found);
        let mut input = InputHandle::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let items = scope.input_from(&mut input).container::<Vec<u64>>();
            // The same dataflow shape on both workers, but two synopses: the bytes worker 0
            // receives from worker 1 are not what it expects.
            let results = if index == 0 {
                items.sketch(&ours).map(|r| r.map(drop))
            } else {
                items.sketch(&other).map(|r| r.map(drop))
            };
            results.inspect(move |r| sink.borrow_mut().push(r.clone())).probe().0
        });
        (0..1000_u64).filter(|i| i % 2 == index as u64).for_each(|i| input.send(i));
        drop(input);
        worker.step_or_park_while(None, || !probe.done());
        found.take()
    })?;
    let mut all = Vec::new();
    for results in guards.join() {
        all.extend(results?);
    }
    Ok(all)
}

#[test]
fn parts_that_do_not_decode_or_merge_are_errors_not_panics() -> Result<(), Box<dyn Error>> {
    let decode = mixed(hll(), count_min())?;
    assert!(matches!(decode.as_slice(), [Err(synopses::Error::Decode(_))]), "{decode:?}");
    let merge = mixed(hll(), HyperLogLog::new(14)?)?;
    assert!(matches!(merge.as_slice(), [Err(synopses::Error::Merge(_))]), "{merge:?}");
    Ok(())
}

fn args(list: &[&str]) -> Vec<String> {
    std::iter::once("test").chain(list.iter().copied()).map(String::from).collect()
}

#[test]
fn bad_process_options_and_host_files_fail_before_connecting() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("synopses-timely-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let write = |name: &str, text: &str| -> Result<String, Box<dyn Error>> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        Ok(path.to_str().ok_or("a UTF-8 path")?.to_string())
    };
    let two = write("two.txt", "127.0.0.1:2101\n127.0.0.1:2102\n")?;
    let one = write("one.txt", "127.0.0.1:2101\n")?;
    let three = write("three.txt", "127.0.0.1:2101\n127.0.0.1:2102\n127.0.0.1:2103\n")?;
    let no_port = write("no_port.txt", "127.0.0.1\n127.0.0.1:2102\n")?;
    let blank_first = write("blank_first.txt", "\n127.0.0.1:2101\n127.0.0.1:2102\n")?;
    let padded = write("padded.txt", "127.0.0.1:2101 \n127.0.0.1:2102\n")?;
    let blank_after = write("blank_after.txt", "127.0.0.1:2101\n127.0.0.1:2102\n\n")?;
    let missing = dir.join("missing.txt").to_str().ok_or("a UTF-8 path")?.to_string();

    assert!(config_from_args(args(&["-n", "2", "-p", "0", "-h", &two])).is_ok());
    assert!(config_from_args(args(&["-n", "2", "-p", "1", "-h", &blank_after])).is_ok());
    assert!(config_from_args(args(&["-w", "4"])).is_ok());
    for (list, option) in [
        (vec!["-n", "2", "-p", "0", "-h", &one], "-h"),
        (vec!["-n", "2", "-p", "0", "-h", &three], "-h"),
        (vec!["-n", "2", "-p", "0", "-h", &no_port], "-h"),
        (vec!["-n", "2", "-p", "0", "-h", &blank_first], "-h"),
        (vec!["-n", "2", "-p", "0", "-h", &padded], "-h"),
        (vec!["-n", "2", "-p", "0", "-h", &missing], "-h"),
        (vec!["-n", "2", "-p", "2", "-h", &two], "-p"),
        (vec!["-n", "0"], "-n"),
        (vec!["-w", "0"], "-w"),
        (vec!["-w", "two"], "-w"),
        (vec!["--items", "5"], "timely options"),
    ] {
        let err = config_from_args(args(&list)).err().ok_or(format!("{list:?} accepted"))?;
        assert_eq!(err.parameter(), option, "{list:?}: {err}");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn a_peer_that_never_starts_is_a_timeout_not_a_hang() -> Result<(), Box<dyn Error>> {
    let hosts = std::env::temp_dir().join(format!("synopses-timely-lonely-{}.txt", std::process::id()));
    std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port()?, free_port()?))?;
    let hosts_arg = hosts.to_str().ok_or("a UTF-8 path")?;
    // Process 1 dials process 0, process 0 waits for process 1: neither peer exists.
    for process in ["0", "1"] {
        let config = config_from_args(args(&["-n", "2", "-p", process, "-h", hosts_arg]))?;
        let started = Instant::now();
        let outcome = execute(config, Duration::from_millis(500), |worker| worker.index());
        assert_eq!(outcome.err().map(|e| e.kind()), Some(std::io::ErrorKind::TimedOut), "process {process}");
        assert!(started.elapsed() < Duration::from_secs(10), "process {process} gave up late");
    }
    std::fs::remove_file(&hosts)?;
    Ok(())
}

/// A port that was free a moment ago (the child binds it soon after; a clash fails the test
/// with a clear error rather than hanging, thanks to the time limit).
fn free_port() -> Result<u16, Box<dyn Error>> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits for `child` at most until `deadline`, killing it then.
fn wait(mut child: Child, deadline: Instant) -> Result<bool, Box<dyn Error>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.success());
        }
        if Instant::now() > deadline {
            child.kill()?;
            child.wait()?;
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The results a child process wrote: (time, key, encoding) records, little-endian lengths.
fn read_results(bytes: &[u8]) -> Result<Results, Box<dyn Error>> {
    let mut found = (BTreeMap::new(), Vec::new());
    let mut rest = bytes;
    let mut take = |n: usize| -> Result<&[u8], Box<dyn Error>> {
        let (head, tail) = rest.split_at_checked(n).ok_or("a truncated results file")?;
        rest = tail;
        Ok(head)
    };
    let word = |b: &[u8]| -> Result<u64, Box<dyn Error>> { Ok(u64::from_le_bytes(b.try_into()?)) };
    let count = word(take(8)?)?;
    for _ in 0..count {
        let (time, key, len) = (word(take(8)?)?, word(take(8)?)?, word(take(8)?)?);
        found.0.insert((time, key), take(usize::try_from(len)?)?.to_vec());
    }
    let workers = word(take(8)?)?;
    for _ in 0..workers {
        found.1.push(usize::try_from(word(take(8)?)?)?);
    }
    Ok(found)
}

fn write_results(found: &Results) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((found.0.len() as u64).to_le_bytes());
    for (&(time, key), bytes) in &found.0 {
        for word in [time, key, bytes.len() as u64] {
            out.extend(word.to_le_bytes());
        }
        out.extend(bytes);
    }
    out.extend((found.1.len() as u64).to_le_bytes());
    for &worker in &found.1 {
        out.extend((worker as u64).to_le_bytes());
    }
    out
}

#[test]
fn two_processes_equal_the_sequential_pass() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("synopses-timely-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let hosts = dir.join("hosts.txt");
    std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port()?, free_port()?))?;
    let exe = std::env::current_exe()?;
    let children: Vec<Child> = (0..2)
        .map(|process| {
            Command::new(&exe)
                .args(["--exact", "timely_process_child", "--nocapture", "--test-threads", "1"])
                .env("SYNOPSES_TIMELY_PROCESS", process.to_string())
                .env("SYNOPSES_TIMELY_HOSTS", &hosts)
                .env("SYNOPSES_TIMELY_OUT", &dir)
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut ok = true;
    for child in children {
        ok &= wait(child, deadline)?;
    }
    assert!(ok, "a timely process failed or ran out of time");
    for (name, by_key) in [("sketch", false), ("by_key", true)] {
        let mut all: Results = (BTreeMap::new(), Vec::new());
        for process in 0..2 {
            let (found, workers) = read_results(&std::fs::read(dir.join(format!("{name}-{process}.bin")))?)?;
            for (at, bytes) in found {
                assert!(all.0.insert(at, bytes).is_none(), "two processes emitted {at:?}");
            }
            all.1.extend(workers);
        }
        check(&all, &hll(), by_key, false)?;
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// One process of `two_processes_equal_the_sequential_pass`; a no-op unless the environment
/// says which.
#[test]
fn timely_process_child() -> Result<(), Box<dyn Error>> {
    let (Ok(process), Ok(hosts), Ok(out)) = (
        std::env::var("SYNOPSES_TIMELY_PROCESS"),
        std::env::var("SYNOPSES_TIMELY_HOSTS"),
        std::env::var("SYNOPSES_TIMELY_OUT"),
    ) else {
        return Ok(());
    };
    let config = || config_from_args(args(&["-n", "2", "-p", process.as_str(), "-h", hosts.as_str()]));
    for (name, by_key) in [("sketch", false), ("by_key", true)] {
        let found = run(config()?, hll(), by_key)?;
        std::fs::write(std::path::Path::new(&out).join(format!("{name}-{process}.bin")), write_results(&found))?;
    }
    Ok(())
}

/// The windows of `sketch` over 1, 2 and 4 worker threads equal those of a sequential
/// [`TimeWindow`] fed every item at its epoch: the same windows, each with the same synopsis
/// (an empty epoch in the middle included).
#[test]
fn windows_equal_the_sequential_windows() -> Result<(), Box<dyn Error>> {
    use synopses::stream::timely::SketchWindows;
    use synopses::stream::{TimeWindow, Window};

    let shape = Window::sliding(3, 1)?;
    let mut sequential = TimeWindow::new(&count_min(), shape, 0)?;
    for epoch in 0..EPOCHS {
        for g in epoch_items(epoch) {
            sequential.observe_at(epoch, item(g)).map_err(|_| "late")?;
        }
    }
    let expected: Vec<(u64, u64, CountMin)> =
        sequential.advance_to(u64::MAX)?.into_iter().map(|w| (w.start, w.end, w.synopsis)).collect();
    assert!(expected.len() > EPOCHS as usize - 1);

    for workers in [1, 2, 4] {
        let config = if workers == 1 { timely::Config::thread() } else { timely::Config::process(workers) };
        let guards = execute(config, Duration::from_secs(60), move |worker| -> Result<Vec<_>, String> {
            let (index, peers) = (worker.index() as u64, worker.peers() as u64);
            let found = Rc::new(RefCell::new(Vec::new()));
            let sink = Rc::clone(&found);
            let mut input = InputHandle::<u64, _>::new();
            worker.dataflow::<u64, _, _>(|scope| -> Result<(), String> {
                let sketched = scope.input_from(&mut input).container::<Vec<Item>>().sketch(&count_min());
                let windows = sketched.windows(&count_min(), shape).map_err(|e| e.to_string())?;
                windows.inspect(move |w| sink.borrow_mut().push(w.clone()));
                Ok(())
            })?;
            for epoch in 0..EPOCHS {
                epoch_items(epoch).filter(|g| g % peers == index).for_each(|g| input.send(item(g)));
                input.advance_to(epoch + 1);
                worker.step();
            }
            drop(input);
            while worker.step() {}
            found
                .take()
                .into_iter()
                .map(|w| w.map(|w| (w.start, w.end, w.synopsis)).map_err(|e| e.to_string()))
                .collect()
        })?;
        let mut found = Vec::new();
        for windows in guards.join() {
            found.extend(windows??);
        }
        assert_eq!(found, expected, "{workers} workers");
    }
    Ok(())
}

/// A computation that crashes half way through epoch 4 (its workers drop everything, the
/// epoch incomplete), restarted from its last checkpoint, ends with the running total of an
/// uninterrupted run: the checkpoint is taken at a completed time, where every worker has fed
/// exactly the epochs before it, and the input is replayed from there.
#[test]
fn a_crashed_computation_restored_from_its_checkpoint_finishes_with_the_uninterrupted_answer()
-> Result<(), Box<dyn Error>> {
    use synopses::stream::Checkpoints;

    /// Epochs `from..to` on 2 workers, the running total on worker 0 checkpointed after each.
    fn run_epochs<O>(
        store: &Checkpoints,
        proto: &O,
        from: u64,
        to: u64,
        total: O,
        crash_in: Option<u64>,
    ) -> Result<O, Box<dyn Error>>
    where
        O: Operator<u64> + Mergeable + Codec + Clone + Send + Sync + 'static,
    {
        let (store, proto) = (store.clone(), proto.clone());
        let guards = execute(timely::Config::process(2), Duration::from_secs(60), move |worker| {
            let (index, peers) = (worker.index() as u64, worker.peers() as u64);
            let total = Rc::new(RefCell::new(total.clone()));
            let sink = Rc::clone(&total);
            let failed = Rc::new(RefCell::new(None::<String>));
            let report = Rc::clone(&failed);
            let store = store.clone();
            // After a crash nothing more reaches the disk (timely, given back the worker, still
            // drains the dataflow, closing the input: a crashed process would not).
            let dead = Rc::new(std::cell::Cell::new(false));
            let dead_here = Rc::clone(&dead);
            let mut input = InputHandle::<u64, _>::new();
            let probe = worker.dataflow::<u64, _, _>(|scope| {
                let (probe, _) = scope
                    .input_from(&mut input)
                    .container::<Vec<u64>>()
                    .sketch(&proto)
                    .inspect_core(move |event| {
                        let Ok((stamp, batch)) = event else { return };
                        let epoch = stamp.least().copied().unwrap_or(u64::MAX);
                        // The synopsis of a completed epoch: merge it, and checkpoint the total
                        // as of the end of the epoch (resume from `epoch + 1`).
                        for result in batch.iter().filter(|_| !dead_here.get()) {
                            let step = result
                                .as_ref()
                                .map_err(|e| e.to_string())
                                .and_then(|part| sink.borrow_mut().merge(part).map_err(|e| e.to_string()))
                                .and_then(|()| store.save(epoch + 1, &*sink.borrow()).map_err(|e| e.to_string()));
                            if let Err(e) = step {
                                *report.borrow_mut() = Some(e);
                            }
                        }
                    })
                    .probe();
                probe
            });
            input.advance_to(from);
            for epoch in from..to {
                let mine = epoch_items(epoch).filter(|g| g % peers == index);
                if crash_in == Some(epoch) {
                    mine.take(PER_EPOCH as usize / 4).for_each(|g| input.send(item(g).1));
                    worker.step();
                    dead.set(true);
                    return Err("crashed".to_string());
                }
                mine.for_each(|g| input.send(item(g).1));
                input.advance_to(epoch + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            drop(input);
            while worker.step() {}
            match failed.take() {
                Some(e) => Err(e),
                None => Ok((worker.index(), total.replace(proto.empty_like()))),
            }
        })?;
        // Only worker 0 receives the results.
        for result in guards.join() {
            if let (0, total) = result?? {
                return Ok(total);
            }
        }
        Err("no worker 0".into())
    }

    /// The crash and the restart against the uninterrupted run, bit for bit.
    fn check<O>(proto: &O, dir: &std::path::Path) -> Result<(), Box<dyn Error>>
    where
        O: Operator<u64> + Mergeable + Codec + Clone + Send + Sync + 'static,
    {
        let whole = Checkpoints::open(dir.join("whole"))?;
        let uninterrupted = run_epochs(&whole, proto, 0, EPOCHS, proto.empty_like(), None)?;
        let store = Checkpoints::open(dir.join("crashed"))?;
        assert!(run_epochs(&store, proto, 0, EPOCHS, proto.empty_like(), Some(4)).is_err());
        let restored = store.latest::<O>()?.ok_or("no checkpoint")?;
        assert_eq!(restored.epoch, 4);
        let finished = run_epochs(&store, proto, restored.epoch, EPOCHS, restored.state, None)?;
        assert_eq!(finished.to_bytes(), uninterrupted.to_bytes());
        Ok(())
    }

    let dir = std::env::temp_dir().join(format!("synopses-timely-checkpoints-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    check(&hll(), &dir.join("hll"))?;
    // A sampler: after the restart its parts draw the streams the uninterrupted run's drew
    // (their indexes come from the worker and the time, not from a count of parts made).
    check(&synopses::sampling::Reservoir::<u64>::new(30, 11)?, &dir.join("reservoir"))?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// Times far apart (more open panes' worth than a window keeps ahead of its watermark) are
/// windowed like any others: the watermark follows timely's frontier through quiet stretches.
#[test]
fn windows_follow_the_frontier_across_long_gaps() -> Result<(), Box<dyn Error>> {
    use synopses::stream::timely::SketchWindows;
    use synopses::stream::{TimeWindow, Window};

    const TIMES: [u64; 5] = [0, 1, 2, 200_000, 10_000_000_000];
    let shape = Window::sliding(2, 1)?;
    let mut sequential = TimeWindow::new(&count_min(), shape, 0)?;
    let mut expected = Vec::new();
    for time in TIMES {
        expected.extend(sequential.advance_to(time)?.into_iter().map(|w| (w.start, w.end, w.synopsis)));
        (0..100).for_each(|i| drop(sequential.observe_at(time, item(time + i))));
    }
    expected.extend(sequential.advance_to(u64::MAX)?.into_iter().map(|w| (w.start, w.end, w.synopsis)));
    let found = timely::execute_directly(move |worker| {
        let found = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&found);
        let mut input = InputHandle::<u64, _>::new();
        worker.dataflow::<u64, _, _>(|scope| -> Result<(), String> {
            let sketched = scope.input_from(&mut input).container::<Vec<Item>>().sketch(&count_min());
            let windows = sketched.windows(&count_min(), shape).map_err(|e| e.to_string())?;
            windows.inspect(move |w| sink.borrow_mut().push(w.clone()));
            Ok(())
        })?;
        for time in TIMES {
            input.advance_to(time);
            (0..100).for_each(|i| input.send(item(time + i)));
            worker.step();
        }
        drop(input);
        while worker.step() {}
        found
            .take()
            .into_iter()
            .map(|w| w.map(|w| (w.start, w.end, w.synopsis)).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, String>>()
    })?;
    // Times 0, 1 and 2 share windows: 4 windows for them, 2 for each of the others.
    assert_eq!(found.len(), 8);
    assert_eq!(found, expected);
    Ok(())
}

/// `windows` emits each window at the time `end − 1`, and holds no capability older than it
/// needs: with the input still open at time 10, its output's frontier has reached 10.
#[test]
fn windows_are_emitted_at_their_last_time_and_release_their_capability() -> Result<(), Box<dyn Error>> {
    use synopses::stream::Window;
    use synopses::stream::timely::SketchWindows;
    use timely::dataflow::operators::Capture;
    use timely::dataflow::operators::capture::Event;

    let (frontier_reached, captured) = timely::execute_directly(move |worker| {
        let mut input = InputHandle::<u64, _>::new();
        let (probe, captured) = worker.dataflow::<u64, _, _>(|scope| {
            let sketched = scope.input_from(&mut input).container::<Vec<u64>>().sketch(&count_min_u64());
            let windows =
                sketched.windows(&count_min_u64(), Window::sliding(4, 2).expect("a shape")).expect("a window");
            let (probe, windows) = windows.probe();
            (probe, windows.capture())
        });
        for epoch in 0..10_u64 {
            (0..50).for_each(|i| input.send(epoch * 1000 + i));
            input.advance_to(epoch + 1);
            worker.step_while(|| probe.less_than(input.time()));
        }
        // The input is open at 10: every window ending at 10 or before is out, and the output
        // can make no promise older than 10.
        let reached = !probe.less_than(&10);
        drop(input);
        while worker.step() {}
        (reached, captured)
    });
    assert!(frontier_reached, "the windows' capability was held back");
    let mut emitted = Vec::new();
    for event in captured.try_iter() {
        if let Event::Messages(stamp, batch) = event {
            let time = stamp.least().copied();
            for window in batch {
                let window = window?;
                assert_eq!(time, Some(window.end - 1), "window [{}, {}) emitted at {time:?}", window.start, window.end);
                emitted.push((window.start, window.end));
            }
        }
    }
    assert_eq!(emitted, [(0, 2), (0, 4), (2, 6), (4, 8), (6, 10), (8, 12)]);
    Ok(())
}

fn count_min_u64() -> CountMin {
    CountMin::new(256, 3).expect("a valid shape")
}
