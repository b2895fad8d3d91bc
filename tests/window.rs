//! Windowed synopses (`stream::{SlidingPanes, CountWindow, TimeWindow}`), checked against a
//! naive model: every window's answer equals one synopsis fed exactly the window's items, for
//! count and event-time windows, with out-of-order, late, early and pre-aggregated items;
//! restore-and-continue equals the uninterrupted run; hostile bytes never panic.
//!
//! The deterministic synopses (HyperLogLog, Count-Min, Bloom) must match the single synopsis
//! state for state, without the single-stream history a merge cannot keep. A window of a
//! sampler (Reservoir) is a different random draw than the single reservoir, so it is checked
//! for what holds for every draw: its count, its size, and that every sampled item is one of
//! the window's.

mod common;

use std::fmt::Debug;

use common::{Subject, body, envelope};
use proptest::prelude::*;
use synopses::DecodeError;
use synopses::cardinality::HyperLogLog;
use synopses::codec::Codec;
use synopses::core::{Mergeable, Operator};
use synopses::frequency::CountMin;
use synopses::membership::Bloom;
use synopses::sampling::Reservoir;
use synopses::stream::{Admission, Closed, CountWindow, Late, MergeAtError, SlidingPanes, TimeWindow, Window};

/// A synopsis under test, with what its window's answer must satisfy given the window's items.
trait Windowed: Subject + Operator<u64> {
    /// Fails unless `got` is what one instance of `proto` fed exactly `items` answers.
    fn check(proto: &Self, got: &Self, items: &[u64]) -> Result<(), TestCaseError> {
        let mut single = proto.empty_like();
        single.observe_all(items.iter().copied());
        prop_assert_eq!(got.without_history(), single.without_history());
        Ok(())
    }
}

impl Windowed for HyperLogLog {}
impl Windowed for CountMin {}
impl Windowed for Bloom {}

impl Windowed for Reservoir<u64> {
    fn check(proto: &Self, got: &Self, items: &[u64]) -> Result<(), TestCaseError> {
        prop_assert_eq!(got.seen(), items.len() as u64);
        prop_assert_eq!(got.len(), items.len().min(proto.capacity()));
        let mut left = items.to_vec();
        for x in got.iter() {
            // Each sampled item is one of the window's, each occurrence used once.
            let at = left.iter().position(|y| y == x);
            prop_assert!(at.is_some(), "{} is not in the window", x);
            left.swap_remove(at.unwrap_or(0));
        }
        Ok(())
    }
}

fn hll() -> HyperLogLog {
    HyperLogLog::new(8).unwrap()
}
fn count_min() -> CountMin {
    CountMin::new(64, 3).unwrap()
}
fn bloom() -> Bloom {
    Bloom::new(256, 3).unwrap()
}
fn reservoir() -> Reservoir<u64> {
    Reservoir::new(4, 11).unwrap()
}

// ---------------------------------------------------------------------------------------------
// SlidingPanes against merging the last panes afresh
// ---------------------------------------------------------------------------------------------

/// Pushes panes (`None` = an empty pane) and checks after every push that the window is the
/// merge of the last `capacity` panes.
fn sliding_law<O: Windowed>(proto: &O, panes: &[Option<Vec<u64>>], capacity: usize) -> Result<(), TestCaseError> {
    let mut window = SlidingPanes::new(proto, capacity).unwrap();
    for (i, pane) in panes.iter().enumerate() {
        match pane {
            Some(items) => {
                let mut p = proto.empty_part(i as u64);
                p.observe_all(items.iter().copied());
                window.push(p).unwrap();
            }
            None => window.push_empty().unwrap(),
        }
        let held = &panes[(i + 1).saturating_sub(capacity)..=i];
        prop_assert_eq!(window.len(), held.len());
        prop_assert_eq!(window.has_items(), held.iter().any(Option::is_some));
        let items: Vec<u64> = held.iter().flatten().flatten().copied().collect();
        O::check(proto, &window.window().unwrap(), &items)?;
    }
    Ok(())
}

fn panes() -> impl Strategy<Value = Vec<Option<Vec<u64>>>> {
    prop::collection::vec(prop::option::weighted(0.8, prop::collection::vec(0..100u64, 0..8)), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sliding_panes_merge_the_last_panes(panes in panes(), capacity in 1usize..8) {
        sliding_law(&hll(), &panes, capacity)?;
        sliding_law(&count_min(), &panes, capacity)?;
        sliding_law(&bloom(), &panes, capacity)?;
        sliding_law(&reservoir(), &panes, capacity)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Count windows
// ---------------------------------------------------------------------------------------------

/// Observes `items` one by one, checking both answers after every item against the model,
/// and that batches (`observe_all`, cut at `cuts`) and a restore from bytes at `restore_at`
/// reach the same states.
fn count_law<O: Windowed>(
    proto: &O,
    items: &[u64],
    shape: Window,
    cuts: &[usize],
    restore_at: usize,
) -> Result<(), TestCaseError> {
    let (size, slide) = (shape.size() as usize, shape.slide() as usize);
    let mut window = CountWindow::new(proto, shape).unwrap();
    let mut restored = None;
    for (i, &x) in items.iter().enumerate() {
        if i == restore_at {
            restored = Some(CountWindow::<O>::from_bytes(&window.to_bytes()).unwrap());
            prop_assert_eq!(restored.as_ref().unwrap(), &window);
        }
        window.observe(x);
        if let Some(r) = restored.as_mut() {
            r.observe(x);
        }
        let seen = i + 1;
        let boundary = seen / slide * slide;
        prop_assert_eq!((window.seen(), window.boundary()), (seen as u64, boundary as u64));
        O::check(proto, &window.window().unwrap(), &items[boundary.saturating_sub(size)..boundary])?;
        O::check(proto, &window.current().unwrap(), &items[boundary.saturating_sub(size)..seen])?;
    }
    if let Some(r) = restored {
        // Every family continues bit for bit, samplers' generators included (compared through
        // the encodings: a sampler's `==` leaves its generator out).
        prop_assert_eq!(r.to_bytes(), window.to_bytes());
    }
    let mut batched = CountWindow::new(proto, shape).unwrap();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&items.len())) {
        let cut = cut.clamp(start, items.len());
        batched.observe_all(items[start..cut].iter().copied());
        start = cut;
    }
    if O::FAMILY != Reservoir::<u64>::FAMILY {
        prop_assert_eq!(&batched, &window);
    }
    let decoded = CountWindow::<O>::from_bytes(&window.to_bytes()).unwrap();
    prop_assert_eq!(decoded.to_bytes(), window.to_bytes());
    Ok(())
}

fn shapes() -> impl Strategy<Value = Window> {
    (1u64..6, 1u64..6).prop_map(|(slide, panes)| Window::sliding(slide * panes, slide).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn count_windows_answer_over_exactly_their_items(
        items in prop::collection::vec(0..300u64, 0..120),
        shape in shapes(),
        mut cuts in prop::collection::vec(0..120usize, 0..6),
        restore_at in 0..130usize,
    ) {
        cuts.sort_unstable();
        count_law(&hll(), &items, shape, &cuts, restore_at)?;
        count_law(&count_min(), &items, shape, &cuts, restore_at)?;
        count_law(&bloom(), &items, shape, &cuts, restore_at)?;
        count_law(&reservoir(), &items, shape, &cuts, restore_at)?;
    }
}

#[test]
fn a_tumbling_window_is_its_last_pane_exactly() {
    assert_eq!(Window::tumbling(7).unwrap(), Window::sliding(7, 7).unwrap());
    assert_eq!(Window::tumbling(7).unwrap().panes(), 1);
    let mut window = CountWindow::new(&HyperLogLog::new(12).unwrap(), Window::tumbling(1000).unwrap()).unwrap();
    window.observe_all(0..3500u64);
    let mut single = HyperLogLog::new(12).unwrap();
    single.observe_all(2000..3000u64);
    // History included: one pane is one stream.
    assert_eq!(window.window().unwrap(), single);
    assert!(window.window().unwrap().martingale_estimate().is_some());
}

// ---------------------------------------------------------------------------------------------
// Event-time windows
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    /// An item at a time; `true` sends it as a one-item synopsis through `merge_at`.
    Item(u64, bool),
    /// Advances the watermark by this much.
    Advance(u64),
    /// Encodes and decodes the window, which must continue as if nothing happened.
    Restore,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..80u64, any::<bool>()).prop_map(|(t, m)| Op::Item(t, m)),
        2 => (0..25u64).prop_map(Op::Advance),
        1 => Just(Op::Restore),
    ];
    prop::collection::vec(op, 0..80)
}

/// The model: accepted items with their times; the newest closed pane.
struct Model {
    items: Vec<(u64, u64)>,
    closed: Option<u64>,
}

impl Model {
    /// The newest pane closed by watermark `w`.
    fn closing(shape: Window, lateness: u64, w: u64) -> Option<u64> {
        (0..=w / shape.slide()).rev().find(|k| (k + 1) * shape.slide() + lateness <= w)
    }

    /// The windows closing when the newest closed pane becomes `last`, with their items.
    fn windows(&self, shape: Window, last: Option<u64>) -> Vec<(u64, u64, Vec<u64>)> {
        let (slide, panes) = (shape.slide(), shape.panes() as u64);
        let mut ends: Vec<u64> = self
            .items
            .iter()
            .flat_map(|&(t, _)| t / slide..t / slide + panes)
            .filter(|&k| Some(k) <= last && self.closed.is_none_or(|c| k > c))
            .collect();
        ends.sort_unstable();
        ends.dedup();
        ends.into_iter()
            .map(|k| {
                let (start, end) = ((k + 1).saturating_sub(panes) * slide, (k + 1) * slide);
                let items = self.items.iter().filter(|&&(t, _)| (start..end).contains(&t)).map(|&(_, x)| x).collect();
                (start, end, items)
            })
            .collect()
    }
}

fn check_closed<O: Windowed>(proto: &O, got: &[Closed<O>], want: &[(u64, u64, Vec<u64>)]) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (g, (start, end, items)) in got.iter().zip(want) {
        prop_assert_eq!((g.start, g.end), (*start, *end));
        O::check(proto, &g.synopsis, items)?;
    }
    Ok(())
}

fn time_law<O: Windowed>(proto: &O, ops: &[Op], shape: Window, lateness: u64) -> Result<(), TestCaseError> {
    let mut window = TimeWindow::new(proto, shape, lateness).unwrap();
    let mut model = Model { items: Vec::new(), closed: None };
    let mut watermark = 0;
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Item(t, via_merge) => {
                let item = i as u64; // distinct, so a sample's membership is exact
                let late = Model::closing(shape, lateness, watermark).is_some_and(|c| t / shape.slide() <= c);
                prop_assert_eq!(window.admission(t), if late { Admission::Late } else { Admission::Open });
                if via_merge {
                    // A synopsis of its own random stream, as from another worker.
                    let mut one = proto.empty_part(1 << 40 | i as u64);
                    one.observe(item);
                    let merged = window.merge_at(t, &one);
                    prop_assert_eq!(merged, if late { Err(MergeAtError::Late) } else { Ok(()) });
                } else {
                    let before = window.late();
                    match window.observe_at(t, item) {
                        Ok(()) => prop_assert!(!late),
                        Err(Late { time, item: back }) => {
                            prop_assert!(late);
                            prop_assert_eq!((time, back, window.late()), (t, item, before + 1));
                        }
                    }
                }
                if !late {
                    model.items.push((t, item));
                }
            }
            Op::Advance(by) => {
                watermark += by;
                let last = Model::closing(shape, lateness, watermark);
                let want = model.windows(shape, last);
                check_closed(proto, &window.advance_to(watermark).unwrap(), &want)?;
                model.closed = last.max(model.closed);
                prop_assert_eq!(window.watermark(), watermark);
            }
            Op::Restore => {
                let restored = TimeWindow::<O>::from_bytes(&window.to_bytes()).unwrap();
                prop_assert_eq!(&restored, &window);
                prop_assert_eq!(restored.to_bytes(), window.to_bytes());
                // Both continue alike, generators included (a sampler's `==` leaves them out).
                let (mut a, mut b) = (restored.clone(), window.clone());
                for k in 0..20u64 {
                    let _ = (a.observe_at(watermark + k, k), b.observe_at(watermark + k, k));
                }
                let (got, want) = (a.advance_to(watermark + 100).unwrap(), b.advance_to(watermark + 100).unwrap());
                prop_assert_eq!(
                    got.iter().map(|c| c.synopsis.to_bytes()).collect::<Vec<_>>(),
                    want.iter().map(|c| c.synopsis.to_bytes()).collect::<Vec<_>>()
                );
                prop_assert_eq!(a.to_bytes(), b.to_bytes());
                window = restored;
            }
        }
    }
    // The end of the stream closes everything.
    let want = model.windows(shape, Some(u64::MAX / shape.slide()));
    let got = window.advance_to(u64::MAX).unwrap();
    // Windows that would end past u64::MAX do not exist here: every time is below 100.
    check_closed(proto, &got, &want)?;
    prop_assert_eq!(window.open_panes(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn time_windows_answer_over_exactly_their_items(ops in ops(), shape in shapes(), lateness in 0..12u64) {
        time_law(&hll(), &ops, shape, lateness)?;
        time_law(&count_min(), &ops, shape, lateness)?;
        time_law(&bloom(), &ops, shape, lateness)?;
        time_law(&reservoir(), &ops, shape, lateness)?;
    }
}

/// Restoring a time window mid-stream and continuing gives the same windows and state as the
/// uninterrupted run (a restored window of a deterministic synopsis is bit-identical).
#[test]
fn time_window_restore_and_continue_equals_uninterrupted() {
    let shape = Window::sliding(60, 10).unwrap();
    let mut straight = TimeWindow::new(&HyperLogLog::new(10).unwrap(), shape, 15).unwrap();
    let mut resumed = straight.clone();
    // Up to 60 ticks behind the watermark and 40 ahead: some items are late.
    let times = |i: u64| (i / 3 + (i * 37) % 100).saturating_sub(60);
    let mut all_straight = Vec::new();
    let mut all_resumed = Vec::new();
    for i in 0..6000u64 {
        let (t, w) = (times(i), i / 3);
        let _ = straight.observe_at(t, i);
        let _ = resumed.observe_at(t, i);
        if i % 50 == 0 {
            all_straight.extend(straight.advance_to(w).unwrap());
            all_resumed.extend(resumed.advance_to(w).unwrap());
        }
        if i % 700 == 0 {
            resumed = TimeWindow::from_bytes(&resumed.to_bytes()).unwrap();
        }
    }
    all_straight.extend(straight.advance_to(u64::MAX).unwrap());
    all_resumed.extend(resumed.advance_to(u64::MAX).unwrap());
    assert_eq!(resumed, straight);
    assert_eq!(all_resumed, all_straight);
    assert!(straight.late() > 0 && all_straight.len() > 150);
}

#[test]
fn items_too_far_ahead_are_handed_back_and_counted() {
    let mut window = TimeWindow::new(&HyperLogLog::new(10).unwrap(), Window::sliding(40, 10).unwrap(), 0).unwrap();
    window.advance_to(1_000).unwrap();
    let max_open = TimeWindow::<HyperLogLog>::MAX_OPEN_PANES;
    let horizon = 1_000 + max_open * 10; // the oldest open pane starts at 1000
    assert!(window.observe_at(horizon - 1, 1u64).is_ok());
    assert_eq!(window.observe_at(horizon, 2u64), Err(Late { time: horizon, item: 2 }));
    assert_eq!(window.merge_at(horizon, &HyperLogLog::new(10).unwrap()), Err(MergeAtError::Early));
    assert_eq!((window.early(), window.late(), window.seen(), window.open_panes()), (1, 0, 1, 1));
    // A wild stream of future timestamps holds at most MAX_OPEN_PANES panes.
    for i in 0..1000u64 {
        let _ = window.observe_at(u64::MAX - i * 1_000_000, i);
    }
    assert_eq!((window.early(), window.open_panes()), (1001, 1));
    assert!(matches!(window.merge_at(2_000, &HyperLogLog::new(12).unwrap()), Err(MergeAtError::Merge(_))));
    assert_eq!(window.open_panes(), 1);
}

#[test]
fn timestamps_near_the_end_of_the_clock() {
    for slide in [1, 10, 1 << 63, u64::MAX] {
        let shape = Window::sliding(slide, slide).unwrap();
        let mut window = TimeWindow::new(&CountMin::new(64, 3).unwrap(), shape, 0).unwrap();
        window.advance_to(u64::MAX - 5).unwrap();
        let _ = window.observe_at(u64::MAX, "last");
        let _ = window.observe_at(u64::MAX - 1, "last");
        let closed = window.advance_to(u64::MAX).unwrap();
        let last = closed.last().expect("the last pane closes at the end of the clock");
        assert_eq!(last.end, u64::MAX);
        assert_eq!(last.start, u64::MAX / slide * slide);
        assert!(last.synopsis.estimate("last") >= 1);
        assert_eq!(window.admission(u64::MAX), Admission::Late);
        assert!(window.advance_to(u64::MAX).unwrap().is_empty());
        assert_eq!(TimeWindow::from_bytes(&window.to_bytes()).unwrap(), window);
    }
    // Sliding windows ending at the last pane: starts do not overflow either.
    let mut window = TimeWindow::new(&HyperLogLog::new(8).unwrap(), Window::sliding(40, 10).unwrap(), 5).unwrap();
    window.advance_to(u64::MAX - 100).unwrap();
    window.observe_at(u64::MAX - 20, 1u64).unwrap();
    let closed = window.advance_to(u64::MAX).unwrap();
    // The pane of u64::MAX − 20 is the third from the clock's last: three windows hold it.
    assert_eq!(u64::MAX / 10 - (u64::MAX - 20) / 10, 2);
    let spans: Vec<(u64, u64)> = closed.iter().map(|c| (c.start, c.end)).collect();
    let k = (u64::MAX - 20) / 10;
    assert_eq!(spans, [((k - 3) * 10, (k + 1) * 10), ((k - 2) * 10, (k + 2) * 10), ((k - 1) * 10, u64::MAX)]);
}

// ---------------------------------------------------------------------------------------------
// Configuration and bytes
// ---------------------------------------------------------------------------------------------

#[test]
fn configuration_errors_name_their_parameter() {
    assert_eq!(Window::tumbling(0).unwrap_err().parameter(), "size");
    assert_eq!(Window::sliding(10, 0).unwrap_err().parameter(), "slide");
    assert_eq!(Window::sliding(10, 3).unwrap_err().parameter(), "size");
    assert_eq!(Window::sliding(0, 3).unwrap_err().parameter(), "size");
    assert_eq!(Window::sliding((Window::MAX_PANES as u64 + 1) * 2, 2).unwrap_err().parameter(), "size");
    assert_eq!(Window::sliding(u64::MAX, 1).unwrap_err().parameter(), "size");
    assert!(Window::sliding(Window::MAX_PANES as u64 * 3, 3).is_ok());
    assert_eq!(SlidingPanes::new(&hll(), 0).unwrap_err().parameter(), "panes");
    assert_eq!(SlidingPanes::new(&hll(), Window::MAX_PANES + 1).unwrap_err().parameter(), "panes");
    let shape = Window::tumbling(10).unwrap();
    let half = TimeWindow::<HyperLogLog>::MAX_OPEN_PANES / 2;
    assert!(TimeWindow::new(&hll(), shape, half * 10 - 1).is_ok());
    assert_eq!(TimeWindow::new(&hll(), shape, half * 10).unwrap_err().parameter(), "allowed_lateness");
    let mut panes = SlidingPanes::new(&hll(), 2).unwrap();
    assert!(panes.push(HyperLogLog::new(9).unwrap()).is_err());
    assert!(panes.is_empty());
}

/// Windows in several states, each with its encoding.
fn count_examples() -> Vec<CountWindow<HyperLogLog>> {
    let mut out = Vec::new();
    for (n, shape) in [(0, (4, 2)), (3, (4, 2)), (37, (12, 3)), (5000, (2000, 1000))] {
        let mut w =
            CountWindow::new(&HyperLogLog::new(6).unwrap(), Window::sliding(shape.0, shape.1).unwrap()).unwrap();
        w.observe_all(0..n as u64);
        out.push(w);
    }
    out
}

fn time_examples() -> Vec<TimeWindow<CountMin>> {
    let mut out = Vec::new();
    for (n, shape, lateness) in [(0, (4, 2), 0), (30, (8, 2), 3), (300, (60, 10), 25)] {
        let mut w =
            TimeWindow::new(&CountMin::new(16, 2).unwrap(), Window::sliding(shape.0, shape.1).unwrap(), lateness)
                .unwrap();
        for i in 0..n as u64 {
            let _ = w.observe_at(i * 7 % 50 + i, i);
            if i % 10 == 0 {
                w.advance_to(i).unwrap();
            }
        }
        out.push(w);
    }
    out
}

fn every_truncation_fails<S: Codec + Debug>(bytes: &[u8]) {
    for len in 0..bytes.len() {
        assert!(S::from_bytes(&bytes[..len]).is_err(), "a prefix of {len} bytes decoded");
    }
}

#[test]
fn truncations_and_trailing_bytes_are_errors() {
    for w in count_examples() {
        let bytes = w.to_bytes();
        every_truncation_fails::<CountWindow<HyperLogLog>>(&bytes);
        let mut longer = body(&bytes).to_vec();
        longer.push(0);
        let extended = envelope(CountWindow::<HyperLogLog>::FAMILY, &longer);
        assert_eq!(CountWindow::<HyperLogLog>::from_bytes(&extended), Err(DecodeError::TrailingBytes(1)));
    }
    for w in time_examples() {
        every_truncation_fails::<TimeWindow<CountMin>>(&w.to_bytes());
    }
    assert_eq!(CountWindow::<HyperLogLog>::FAMILY, 12);
    assert_eq!(TimeWindow::<HyperLogLog>::FAMILY, 13);
}

/// Decodes `bytes` with a valid envelope around a mutated body: never a panic, and whatever
/// decodes encodes back to the same bytes (one state, one encoding).
fn decode_mutated<S: Codec + Debug>(bytes: &[u8], at: usize, value: u8) -> Result<(), TestCaseError> {
    let mut mutated = body(bytes).to_vec();
    if mutated.is_empty() {
        return Ok(());
    }
    let at = at % mutated.len();
    mutated[at] = value;
    let framed = envelope(S::FAMILY, &mutated);
    if let Ok(s) = S::from_bytes(&framed) {
        prop_assert_eq!(s.to_bytes(), framed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), family in 12u8..14) {
        let framed = envelope(family, &bytes);
        let _ = CountWindow::<HyperLogLog>::from_bytes(&bytes);
        let _ = CountWindow::<HyperLogLog>::from_bytes(&framed);
        let _ = TimeWindow::<CountMin>::from_bytes(&framed);
        let _ = TimeWindow::<Reservoir<u64>>::from_bytes(&framed);
    }

    #[test]
    fn mutated_encodings_never_panic(example in 0..7usize, at in any::<usize>(), value in any::<u8>()) {
        let counts = count_examples();
        let times = time_examples();
        if example < counts.len() {
            decode_mutated::<CountWindow<HyperLogLog>>(&counts[example].to_bytes(), at, value)?;
        } else {
            decode_mutated::<TimeWindow<CountMin>>(&times[example - counts.len()].to_bytes(), at, value)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Crafted states: refused, or safe to use
// ---------------------------------------------------------------------------------------------

/// The offsets, in a window's body, of the nested synopses' length prefixes (a u64 length,
/// then an encoding with the crate's magic): found by their magic and length.
fn nested_at(body: &[u8]) -> Vec<(usize, usize)> {
    (8..body.len().saturating_sub(4))
        .filter(|&at| body[at..at + 2] == *b"SY")
        .filter_map(|at| {
            let len = u64::from_le_bytes(body[at - 8..at].try_into().unwrap()) as usize;
            (len >= 12 && len <= body.len() - at).then(|| (at - 8, 8 + len))
        })
        .collect()
}

/// A count window of a sampler whose open pane is a copy of a held pane's stream, sealed with
/// a valid checksum.
#[test]
fn crafted_count_windows_are_refused() {
    let mut window = CountWindow::new(&reservoir(), Window::sliding(2, 1).unwrap()).unwrap();
    window.observe_all([1u64, 2]);
    let bytes = window.to_bytes();
    // The pane counter at its end (bytes 20..28 of the encoding): the next pane cannot have
    // a stream of its own.
    let mut spent = body(&bytes).to_vec();
    spent[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(CountWindow::<Reservoir<u64>>::from_bytes(&envelope(12, &spent)).is_err());
    // The open pane (the last nested synopsis) of the stream of held pane 1.
    let mut copied = body(&bytes).to_vec();
    let &(open_at, _) = nested_at(&copied).last().unwrap();
    copied.truncate(open_at);
    let twin = reservoir().empty_part(1).to_bytes();
    copied.extend_from_slice(&(twin.len() as u64).to_le_bytes());
    copied.extend_from_slice(&twin);
    assert!(CountWindow::<Reservoir<u64>>::from_bytes(&envelope(12, &copied)).is_err());
    // The same open pane of its own stream decodes: the check is the stream, not the bytes.
    let mut own = body(&bytes).to_vec();
    own.truncate(open_at);
    let open = reservoir().empty_part(2).to_bytes();
    own.extend_from_slice(&(open.len() as u64).to_le_bytes());
    own.extend_from_slice(&open);
    let mut decoded = CountWindow::<Reservoir<u64>>::from_bytes(&envelope(12, &own)).unwrap();
    decoded.observe_all([3u64, 4, 5]);
    assert_eq!(decoded.window().unwrap().seen(), 2);
}

/// A count window decoded with its pane counter near the end keeps working past it: once
/// the counter is spent, each pane closes alone instead of sharing a stream with the next.
#[test]
fn a_count_window_past_its_pane_counter_never_panics() {
    let proto = reservoir();
    let nested = |body: &mut Vec<u8>, r: &Reservoir<u64>| {
        let bytes = r.to_bytes();
        body.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        body.extend_from_slice(&bytes);
    };
    let pane = |number: u64, item: u64| {
        let mut p = proto.empty_part(number);
        p.observe(item);
        p
    };
    let closed = u64::MAX - 1;
    let (a, b) = (pane(closed - 2, 1), pane(closed - 1, 2));
    let mut merged = a.clone();
    merged.merge(&b).unwrap();
    let mut body = Vec::new();
    for word in [2u64, 1, closed, 0] {
        body.extend_from_slice(&word.to_le_bytes()); // size, slide, panes closed, in the open one
    }
    body.extend_from_slice(&2u32.to_le_bytes()); // capacity
    nested(&mut body, &proto.empty_like());
    body.extend_from_slice(&0u32.to_le_bytes()); // an empty front
    body.extend_from_slice(&2u32.to_le_bytes());
    for p in [&a, &b, &merged, &proto.empty_part(closed)] {
        nested(&mut body, p); // the back, its merge, the open pane
    }
    let mut window = CountWindow::<Reservoir<u64>>::from_bytes(&envelope(12, &body)).unwrap();
    for item in 3..10u64 {
        window.observe(item);
        assert_eq!(window.window().unwrap().iter().max(), Some(&item));
    }
    assert_eq!(window.seen(), u64::MAX);
}

/// A time window whose two open panes were given one random stream by crafted bytes is
/// refused; with streams of their own, as `merge_at` asks, it decodes.
#[test]
fn crafted_time_windows_of_one_stream_are_refused() {
    let proto = reservoir();
    let mut window = TimeWindow::new(&proto, Window::tumbling(10).unwrap(), 0).unwrap();
    for (time, stream) in [(5, 98), (15, 99)] {
        let mut part = proto.empty_part(stream);
        part.observe(stream);
        window.merge_at(time, &part).unwrap();
    }
    let bytes = window.to_bytes();
    let mut twins = body(&bytes).to_vec();
    let nested = nested_at(&twins);
    let (first, last) = (nested[nested.len() - 2], nested[nested.len() - 1]);
    assert_eq!(first.1, last.1);
    let copy = twins[first.0..first.0 + first.1].to_vec();
    twins[last.0..last.0 + last.1].copy_from_slice(&copy);
    assert!(TimeWindow::<Reservoir<u64>>::from_bytes(&envelope(13, &twins)).is_err());
    assert_eq!(TimeWindow::<Reservoir<u64>>::from_bytes(&envelope(13, body(&bytes))).unwrap(), window);
    // A watermark (body bytes 24..32) past panes still open: they would never close.
    let mut stranded = body(&bytes).to_vec();
    stranded[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(TimeWindow::<Reservoir<u64>>::from_bytes(&envelope(13, &stranded)).is_err());
}

/// Two synopses of one random stream merged into two panes (a misuse `merge_at` cannot see):
/// the advance fails, yet closes every pane due, and the window goes on.
#[test]
fn a_failed_advance_still_closes_every_pane_due() {
    let proto = reservoir();
    let mut window = TimeWindow::new(&proto, Window::sliding(20, 10).unwrap(), 0).unwrap();
    let mut twin = proto.empty_part(99);
    twin.observe(1);
    window.merge_at(5, &twin).unwrap();
    window.merge_at(15, &twin).unwrap();
    window.observe_at(25, 2).unwrap();
    assert!(window.advance_to(30).is_err());
    assert_eq!(window.open_panes(), 0);
    assert_eq!(window.admission(25), Admission::Late);
    window.observe_at(35, 3).unwrap();
    let closed = window.advance_to(50).unwrap();
    let spans: Vec<(u64, u64, u64)> = closed.iter().map(|c| (c.start, c.end, c.synopsis.seen())).collect();
    assert_eq!(spans, [(20, 40, 2), (30, 50, 1)]);
}

#[derive(Clone, Debug)]
enum Mutation {
    /// A byte of the body set to a value.
    Byte(usize, u8),
    /// Eight bytes of the body set to a little-endian u64.
    Word(usize, u64),
    /// A nested synopsis replaced by a copy of another one.
    Transplant(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let word = prop_oneof![Just(0u64), Just(1), Just(2), Just(u64::MAX), Just(u64::MAX - 1), any::<u64>()];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, v)| Mutation::Byte(at, v)),
        (any::<usize>(), word).prop_map(|(at, v)| Mutation::Word(at, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Transplant(a, b)),
    ]
}

/// `bytes` with its body mutated and a valid checksum, so that the fields' checks are reached.
fn mutate<S: Codec>(bytes: &[u8], mutation: &Mutation) -> Vec<u8> {
    let mut mutated = body(bytes).to_vec();
    let len = mutated.len();
    match *mutation {
        Mutation::Byte(at, v) => mutated[at % len] = v,
        Mutation::Word(at, v) if len >= 8 => {
            let at = at % (len - 7);
            mutated[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        Mutation::Word(..) => {}
        Mutation::Transplant(to, from) => {
            let nested = nested_at(&mutated);
            if !nested.is_empty() {
                let (to, from) = (nested[to % nested.len()], nested[from % nested.len()]);
                let copy = mutated[from.0..from.0 + from.1].to_vec();
                mutated.splice(to.0..to.0 + to.1, copy);
            }
        }
    }
    envelope(S::FAMILY, &mutated)
}

/// Count windows of a sampler in several states.
fn sampler_counts() -> Vec<CountWindow<Reservoir<u64>>> {
    let mut counts = Vec::new();
    for (n, (size, slide)) in [(2, (2, 1)), (7, (3, 1)), (9, (6, 2)), (40, (12, 3))] {
        let mut w = CountWindow::new(&reservoir(), Window::sliding(size, slide).unwrap()).unwrap();
        w.observe_all(0..n);
        counts.push(w);
    }
    counts
}

/// Time windows of a sampler in several states, some with synopses merged in.
fn sampler_times() -> Vec<TimeWindow<Reservoir<u64>>> {
    let mut times = Vec::new();
    for (n, (size, slide), lateness) in [(6, (4, 2), 0), (30, (8, 2), 3), (60, (30, 10), 12)] {
        let mut w = TimeWindow::new(&reservoir(), Window::sliding(size, slide).unwrap(), lateness).unwrap();
        for i in 0..n {
            let t = i * 7 % 23 + i;
            if i % 3 == 0 {
                let mut one = reservoir().empty_part(1 << 40 | i);
                one.observe(i);
                let _ = w.merge_at(t, &one);
            } else {
                let _ = w.observe_at(t, i);
            }
            if i % 5 == 0 {
                w.advance_to(i).unwrap();
            }
        }
        times.push(w);
    }
    times
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A crafted encoding either fails to decode, or decodes into a state that every operation
    /// can use without a panic (in debug builds, where the internal assertions are on).
    #[test]
    fn crafted_encodings_decode_to_usable_states(example in 0..7usize, mutations in prop::collection::vec(mutation(), 1..3)) {
        let (counts, times) = (sampler_counts(), sampler_times());
        if example < counts.len() {
            let mut bytes = counts[example].to_bytes();
            for m in &mutations {
                bytes = mutate::<CountWindow<Reservoir<u64>>>(&bytes, m);
            }
            if let Ok(mut w) = CountWindow::<Reservoir<u64>>::from_bytes(&bytes) {
                for i in 0..40u64 {
                    w.observe(i);
                    let _ = (w.window(), w.current(), w.seen(), w.boundary());
                }
                w.observe_all(0..100u64);
                let _ = CountWindow::<Reservoir<u64>>::from_bytes(&w.to_bytes());
            }
        } else {
            let mut bytes = times[example - counts.len()].to_bytes();
            for m in &mutations {
                bytes = mutate::<TimeWindow<Reservoir<u64>>>(&bytes, m);
            }
            if let Ok(mut w) = TimeWindow::<Reservoir<u64>>::from_bytes(&bytes) {
                let start = w.watermark();
                for i in 0..40u64 {
                    let t = start.saturating_add(i * 3 % 17);
                    let _ = w.observe_at(t, i);
                    let _ = w.observe_at(t.saturating_sub(20), i);
                    let mut one = reservoir().empty_part(1 << 50 | i);
                    one.observe(i);
                    let _ = w.merge_at(t, &one);
                    if i % 4 == 0 {
                        let _ = w.advance_to(start.saturating_add(i));
                    }
                }
                let _ = w.advance_to(u64::MAX);
                prop_assert_eq!(w.open_panes(), 0);
                let _ = TimeWindow::<Reservoir<u64>>::from_bytes(&w.to_bytes());
            }
        }
    }
}
