//! Windowed synopses: tumbling and sliding windows by item count and by event time.

use std::collections::BTreeMap;
use std::fmt;

use super::panes::{SlidingPanes, get_nested, invalid, nested_len, put_nested};
use crate::codec::{Codec, ENVELOPE_LEN, Reader, Writer, codec_impl};
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable, Operator};

/// The shape of a window: its size and how far it slides, in items for a
/// [`CountWindow`] and in ticks of the caller's clock (milliseconds, say) for a
/// [`TimeWindow`].
///
/// # Windows from panes
///
/// "Distinct users in the last hour, every minute" is a *sliding* window of size 60 min and
/// slide 1 min; "every hour, the distinct users of that hour" a *tumbling* one (slide =
/// size). A synopsis cannot forget items, so a window is cut into *panes* of one slide each
/// (Li et al., "No pane, no gain"), one synopsis per pane; the window's answer is the merge
/// of its last `size / slide` panes, and a pane leaving the window is simply dropped:
///
/// ```text
///  items   ──────────────────────────────────────────────────▶ time
///  panes   │ p0 │ p1 │ p2 │ p3 │ p4 │ p5 │ ...      size = 3 slides
///  window at the end of p3:   └─ p1 ∪ p2 ∪ p3 ─┘
///  window at the end of p4:        └─ p2 ∪ p3 ∪ p4 ─┘
/// ```
///
/// Merging every pane afresh at each slide costs `panes − 1` merges; [`SlidingPanes`] (the
/// two-stacks algorithm of Tangwongsan, Hirzel and Schneider) keeps the merge up to date in
/// two merges per slide, amortized, plus a copy and a merge per answer, whatever the number
/// of panes (`benches/stream.rs`, group `window`, measures both ways).
///
/// # Memory and error
///
/// A window holds at most `panes + 3` synopses (the panes or their suffix merges, the
/// aggregator's running merge, an empty prototype, and the open pane of a [`CountWindow`]),
/// plus, for a [`TimeWindow`], its open panes that received items: those still within the
/// lateness (about `lateness / slide`) and any ahead of the watermark (at most
/// [`TimeWindow::MAX_OPEN_PANES`] in all). So about `(panes + lateness / slide + 3) × the
/// synopsis's size`: a HyperLogLog of precision 14 (16 KiB) over 60 panes takes about 1 MiB.
/// Choose the slide for the memory and the freshness you need: the answer changes once per
/// slide.
///
/// The answer over a window is a merge, so its error is that of one synopsis that observed
/// exactly the window's items: the merge of the crate's sketches and filters is exact
/// (HyperLogLog's registers are those of one pass, with the merged estimator's standard
/// error `1.04/√m` for `m` registers, not the lower error of the single-stream martingale,
/// which no merge keeps; Count-Min overestimates by at most `ε·N` for the window's `N`
/// items; a Bloom filter's false positive rate is that of the window's distinct items); a
/// sampler's window holds a uniform sample of the window's items.
///
/// # Event time
///
/// A [`TimeWindow`] places each item by its timestamp, not by its arrival: pane `k` holds
/// the items of times `[k·slide, (k+1)·slide)`. The caller's *watermark* `w` says that no
/// more items older than `w` are expected; the *allowed lateness* `L` keeps each pane open
/// for items up to `L` ticks behind the watermark. A pane closes when `end + L <= w`, and
/// the window ending with it is then complete and returned by
/// [`advance_to`](TimeWindow::advance_to). An item whose pane has closed is *late*: it is
/// handed back to the caller and counted, never silently dropped nor folded into an answer
/// already given.
///
/// # When not to use it
///
/// * An exact answer over a few items: keep the items.
/// * Windows that end at every item (a slide of one item): one pane per item costs a
///   synopsis per item; use a coarser slide, or a structure built for exponential decay.
/// * A synopsis whose merge is not exact (heavy hitters): the window's answer keeps the
///   merged guarantee, which is weaker than one pass.
///
/// # References
///
/// * K. Tangwongsan, M. Hirzel, S. Schneider. *General incremental sliding-window
///   aggregation.* PVLDB 8(7), 2015.
/// * K. Tangwongsan, M. Hirzel, S. Schneider. *Low-latency sliding-window aggregation in
///   worst-case constant time.* DEBS 2017 (DABA, a worst-case variant of two-stacks).
/// * J. Li, D. Maier, K. Tufte, V. Papadimos, P. A. Tucker. *No pane, no gain: efficient
///   evaluation of sliding-window aggregates over data streams.* SIGMOD Record 34(1), 2005.
///
/// ```
/// use synopses::stream::Window;
///
/// let hourly_every_minute = Window::sliding(60 * 60_000, 60_000)?; // milliseconds
/// assert_eq!(hourly_every_minute.panes(), 60);
/// assert_eq!(Window::tumbling(1000)?.panes(), 1);
/// # Ok::<(), synopses::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    size: u64,
    slide: u64,
}

impl Window {
    /// The most panes a window may have: `size / slide <= 2^16`.
    ///
    /// ```
    /// # use synopses::stream::Window;
    /// assert!(Window::sliding(1 << 16, 1).is_ok());
    /// assert!(Window::sliding(1 << 17, 1).is_err());
    /// ```
    pub const MAX_PANES: usize = 1 << 16;

    /// A tumbling window of `size` (positive): windows that do not overlap, one pane each.
    ///
    /// ```
    /// # use synopses::stream::Window;
    /// let w = Window::tumbling(500)?;
    /// assert_eq!((w.size(), w.slide(), w.panes()), (500, 500, 1));
    /// assert_eq!(Window::tumbling(0).unwrap_err().parameter(), "size");
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn tumbling(size: u64) -> Result<Self, ConfigError> {
        if size == 0 {
            return Err(ConfigError::new("size", size, "a positive integer"));
        }
        Self::sliding(size, size)
    }

    /// A window of `size` that slides by `slide`: `size` must be a positive multiple of
    /// `slide`, with at most [`MAX_PANES`](Self::MAX_PANES) panes.
    ///
    /// ```
    /// # use synopses::stream::Window;
    /// assert_eq!(Window::sliding(600, 10)?.panes(), 60);
    /// assert_eq!(Window::sliding(600, 7).unwrap_err().parameter(), "size");
    /// assert_eq!(Window::sliding(600, 0).unwrap_err().parameter(), "slide");
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    pub fn sliding(size: u64, slide: u64) -> Result<Self, ConfigError> {
        if slide == 0 {
            return Err(ConfigError::new("slide", slide, "a positive integer"));
        }
        if size == 0 || !size.is_multiple_of(slide) {
            return Err(ConfigError::new("size", size, "a positive multiple of slide"));
        }
        if size / slide > Self::MAX_PANES as u64 {
            return Err(ConfigError::new("size", size, "at most 2^16 slides"));
        }
        Ok(Self { size, slide })
    }

    /// The window's size, in items or ticks.
    ///
    /// ```
    /// # use synopses::stream::Window;
    /// assert_eq!(Window::sliding(600, 10)?.size(), 600);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// How far the window slides, in items or ticks: the length of one pane.
    ///
    /// ```
    /// # use synopses::stream::Window;
    /// assert_eq!(Window::sliding(600, 10)?.slide(), 10);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn slide(&self) -> u64 {
        self.slide
    }

    /// The number of panes of a window, `size / slide`.
    ///
    /// ```
    /// # use synopses::stream::Window;
    /// assert_eq!(Window::sliding(600, 10)?.panes(), 60);
    /// # Ok::<(), synopses::ConfigError>(())
    /// ```
    #[must_use]
    pub fn panes(&self) -> usize {
        (self.size / self.slide) as usize
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Self::sliding(r.u64()?, r.u64()?).map_err(|_| invalid("window", "not a valid size and slide"))
    }
}

// ---------------------------------------------------------------------------------------------
// Count windows
// ---------------------------------------------------------------------------------------------

/// A synopsis of the last items of a stream by count: every `slide` items a pane closes, and
/// [`window`](Self::window) answers over the last `size` items before that boundary. See
/// [`Window`] for the idea, the memory and the error.
///
/// Pane `i` (the items `i·slide .. (i+1)·slide`, counting from 0) is observed into
/// `proto.empty_part(i)`, so the panes of a sampler draw independent random numbers.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{CountWindow, Window};
///
/// // Distinct items among the last 10 000, every 1 000 items.
/// let mut window = CountWindow::new(&HyperLogLog::new(12)?, Window::sliding(10_000, 1_000)?)?;
/// for i in 0..25_500u64 {
///     window.observe(i % 20_000); // the last 10 000 items before 25 000: 15 000..25 000
/// }
/// assert_eq!(window.boundary(), 25_000);
/// let distinct = window.window()?.estimate();
/// assert!((distinct / 10_000.0 - 1.0).abs() < 4.0 * 1.04 / 64.0);
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CountWindow<O> {
    shape: Window,
    panes: SlidingPanes<O>,
    /// The pane being observed.
    open: O,
    /// Items in `open`: less than a slide.
    in_open: u64,
    /// Panes closed so far: the open pane's number.
    closed: u64,
}

impl<O: Mergeable + Clone> CountWindow<O> {
    /// An empty window of synopses with `proto`'s configuration (its contents are not used).
    ///
    /// ```
    /// use synopses::membership::Bloom;
    /// use synopses::stream::{CountWindow, Window};
    ///
    /// // "Seen among the last 100 000 items?", refreshed every 10 000.
    /// let window = CountWindow::new(&Bloom::new(1 << 20, 5)?, Window::sliding(100_000, 10_000)?)?;
    /// assert_eq!(window.seen(), 0);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn new(proto: &O, window: Window) -> Result<Self, ConfigError> {
        let panes = SlidingPanes::new(proto, window.panes())?;
        let open = panes.proto().empty_part(0);
        Ok(Self { shape: window, panes, open, in_open: 0, closed: 0 })
    }

    /// The window's shape.
    ///
    /// ```
    /// # use synopses::membership::Bloom;
    /// # use synopses::stream::{CountWindow, Window};
    /// let shape = Window::tumbling(100)?;
    /// assert_eq!(CountWindow::new(&Bloom::new(1024, 3)?, shape)?.shape(), shape);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn shape(&self) -> Window {
        self.shape
    }

    /// Items observed so far (saturating at `u64::MAX`).
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let mut window = CountWindow::new(&HyperLogLog::new(10)?, Window::tumbling(4)?)?;
    /// window.observe_all(0..10u64);
    /// assert_eq!(window.seen(), 10);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.closed.saturating_mul(self.shape.slide).saturating_add(self.in_open)
    }

    /// Items observed before the last pane boundary: [`window`](Self::window) covers the
    /// items `boundary − size .. boundary` (from 0 while fewer than `size` were seen),
    /// counting items from 0.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let mut window = CountWindow::new(&HyperLogLog::new(10)?, Window::sliding(8, 4)?)?;
    /// window.observe_all(0..10u64);
    /// assert_eq!(window.boundary(), 8); // the window holds items 0..8; 8 and 9 are open
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn boundary(&self) -> u64 {
        self.closed.saturating_mul(self.shape.slide)
    }

    /// Observes the next item; closes the pane when it holds `slide` items.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::{CountWindow, Window};
    ///
    /// let mut window = CountWindow::new(&CountMin::new(1024, 4)?, Window::tumbling(3)?)?;
    /// for word in ["a", "a", "b", "b"] {
    ///     window.observe(word);
    /// }
    /// let last = window.window()?; // "a", "a", "b"
    /// assert_eq!((last.estimate("a"), last.estimate("b")), (2, 1));
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn observe<T>(&mut self, item: T)
    where
        O: Operator<T>,
    {
        self.open.observe(item);
        self.in_open += 1;
        if self.in_open == self.shape.slide {
            self.close_pane();
        }
    }

    /// Observes every item of an iterator, in order; each pane's items go to the synopsis's
    /// own batch loop.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let mut window = CountWindow::new(&HyperLogLog::new(12)?, Window::tumbling(1000)?)?;
    /// window.observe_all(0..2500u64);
    /// let mut single = HyperLogLog::new(12)?;
    /// single.observe_all(1000..2000u64);
    /// assert_eq!(window.window()?, single); // a window of one pane is that pane
    /// assert_eq!(window.seen(), 2500);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn observe_all<T, I: IntoIterator<Item = T>>(&mut self, items: I)
    where
        O: Operator<T>,
    {
        let mut items = items.into_iter();
        loop {
            let room = self.shape.slide - self.in_open;
            let mut taken = 0u64;
            let batch = items.by_ref().take(usize::try_from(room).unwrap_or(usize::MAX)).inspect(|_| taken += 1);
            self.open.observe_all(batch);
            self.in_open += taken;
            if self.in_open == self.shape.slide {
                self.close_pane();
            }
            if taken < room {
                return;
            }
        }
    }

    fn close_pane(&mut self) {
        if self.closed == u64::MAX {
            // The pane counter is spent (2^64 panes, beyond any stream but not beyond crafted
            // bytes): the next pane cannot have a number of its own, so the window restarts
            // with the closing pane alone rather than hold two panes of one random stream.
            self.panes.clear();
        }
        self.closed = self.closed.saturating_add(1);
        let next = self.panes.proto().empty_part(self.closed);
        let pane = std::mem::replace(&mut self.open, next);
        self.in_open = 0;
        // Cannot fail: the pane has the prototype's configuration, and the panes held and the
        // open one are of the streams of their distinct numbers (`from_bytes` checks both),
        // so every merge is between distinct streams (see `SlidingPanes`).
        let pushed = self.panes.push(pane);
        debug_assert!(pushed.is_ok(), "panes of one prototype merge");
    }

    /// The synopsis of the last `size` items before the last pane boundary (all of them
    /// while fewer were seen; see [`boundary`](Self::boundary)). Fails only for panes that
    /// share a random stream, which this window never makes.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let mut window = CountWindow::new(&HyperLogLog::new(12)?, Window::sliding(100, 50)?)?;
    /// window.observe_all(0..120u64); // the window holds items 0..100
    /// assert_eq!(window.window()?.estimate().round(), 100.0);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn window(&self) -> Result<O, MergeError> {
        self.panes.window()
    }

    /// The synopsis of the [`window`](Self::window) and the open pane: the last
    /// `size + seen − boundary` items, every item after the boundary included.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let mut window = CountWindow::new(&HyperLogLog::new(12)?, Window::sliding(100, 50)?)?;
    /// window.observe_all(0..120u64); // items 0..100 and the open 100..120
    /// assert_eq!(window.current()?.estimate().round(), 120.0);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn current(&self) -> Result<O, MergeError> {
        let mut out = self.panes.window()?;
        out.merge(&self.open)?;
        Ok(out)
    }

    /// Bytes of memory held: the panes, the merges and the open pane.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let mut window = CountWindow::new(&HyperLogLog::new(14)?, Window::sliding(600_000, 10_000)?)?;
    /// window.observe_all(0..1_000_000u64);
    /// let one = window.window()?.size_in_bytes(); // 16 KiB and a little
    /// assert!(window.size_in_bytes() <= 63 * one); // 60 panes, 2 merges, the open pane
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        self.panes.size_in_bytes() + self.open.size_in_bytes()
    }
}

impl<T, O: Operator<T> + Mergeable + Clone> Operator<T> for CountWindow<O> {
    fn observe(&mut self, item: T) {
        CountWindow::observe(self, item);
    }

    fn observe_all<I: IntoIterator<Item = T>>(&mut self, items: I) {
        CountWindow::observe_all(self, items);
    }
}

impl<O: Mergeable + Clone + Codec + PartialEq> CountWindow<O> {
    /// The length of [`to_bytes`](Self::to_bytes)'s output.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let window = CountWindow::new(&HyperLogLog::new(10)?, Window::sliding(8, 4)?)?;
    /// assert_eq!(window.encoded_len(), window.to_bytes().len());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN + 32 + self.panes.encoded_body_len() + nested_len(Some(&self.open))
    }

    /// The whole state in the crate's [format](crate::codec) (family 12): size, slide, panes
    /// closed and items in the open pane (u64 each), the pane aggregator (its capacity, the
    /// prototype, its panes and merges, each synopsis a u64 length and its own encoding),
    /// then the open pane. Decoding and continuing gives the same states as never stopping,
    /// bit for bit, for the samplers too (their encodings hold their generators).
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{CountWindow, Window};
    ///
    /// let mut window = CountWindow::new(&HyperLogLog::new(10)?, Window::sliding(100, 10)?)?;
    /// window.observe_all(0..1234u64);
    /// let mut restored = CountWindow::<HyperLogLog>::from_bytes(&window.to_bytes())?;
    /// assert_eq!(restored, window);
    /// restored.observe_all(1234..2000u64);
    /// window.observe_all(1234..2000u64);
    /// assert_eq!(restored, window);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(<Self as Codec>::FAMILY, self.encoded_len());
        w.put_u64(self.shape.size);
        w.put_u64(self.shape.slide);
        w.put_u64(self.closed);
        w.put_u64(self.in_open);
        self.panes.encode_body(&mut w);
        put_nested(&mut w, Some(&self.open));
        w.finish()
    }

    /// Decodes and validates [`to_bytes`](Self::to_bytes)'s output: the shape, the counts
    /// against the shape and the panes held, every synopsis's encoding and configuration, and
    /// that each pane (and each merge of panes) is of the random stream its number gives it,
    /// so that no later merge meets two panes of one stream.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{CountWindow, Window};
    /// let window = CountWindow::new(&HyperLogLog::new(10)?, Window::sliding(8, 4)?)?;
    /// let bytes = window.to_bytes();
    /// assert!(CountWindow::<HyperLogLog>::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::open(bytes, <Self as Codec>::FAMILY)?;
        let shape = Window::decode(&mut r)?;
        let (closed, in_open) = (r.u64()?, r.u64()?);
        if in_open >= shape.slide {
            return Err(invalid("items in the open pane", "a whole slide or more"));
        }
        let panes = SlidingPanes::<O>::decode_body(&mut r, shape.panes())?;
        if panes.len() as u64 != closed.min(shape.panes() as u64) || panes.holds_empty() {
            return Err(invalid("panes", "not the panes closed"));
        }
        let open = get_nested::<O>(&mut r)?.ok_or(invalid("open pane", "missing"))?;
        panes.proto().empty_like().merge(&open).map_err(|_| invalid("open pane", "of another configuration"))?;
        // Panes of the streams their numbers give them, as `close_pane` makes them: no merge
        // can then meet two panes of one stream.
        if open.empty_like() != panes.proto().empty_part(closed) {
            return Err(invalid("open pane", "of another random stream than its number's"));
        }
        panes.check_streams(closed.wrapping_sub(1))?;
        r.finish()?;
        Ok(Self { shape, panes, open, in_open, closed })
    }
}

codec_impl!([O: Mergeable + Clone + Codec + PartialEq] CountWindow<O>, 12);

// ---------------------------------------------------------------------------------------------
// Event-time windows
// ---------------------------------------------------------------------------------------------

/// An item that a [`TimeWindow`] did not take, handed back with its timestamp: *late* when
/// its pane had already closed (pane `time / slide` at most the newest closed one, which
/// implies `time + lateness < watermark`), *early* when its pane was
/// [`TimeWindow::MAX_OPEN_PANES`] or more panes after the oldest open one (`time / slide −
/// oldest open pane >= MAX_OPEN_PANES`, which implies `time >= watermark`); see
/// [`TimeWindow::admission`].
/// The window counts both ([`late`](TimeWindow::late), [`early`](TimeWindow::early)).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{Late, TimeWindow, Window};
///
/// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(100)?, 0)?;
/// window.advance_to(200)?;
/// let Late { time, item } = window.observe_at(150, "bob").unwrap_err();
/// assert_eq!((time, item, window.late()), (150, "bob", 1));
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Late<T> {
    /// The item's timestamp.
    pub time: u64,
    /// The item.
    pub item: T,
}

impl<T> fmt::Display for Late<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item of time {} refused: its pane is closed or too far ahead", self.time)
    }
}

impl<T: fmt::Debug> std::error::Error for Late<T> {}

/// Why [`TimeWindow::merge_at`] refused a synopsis (which stays with the caller).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{MergeAtError, TimeWindow, Window};
///
/// let proto = HyperLogLog::new(10)?;
/// let mut window = TimeWindow::new(&proto, Window::tumbling(100)?, 0)?;
/// window.advance_to(200)?;
/// assert_eq!(window.merge_at(150, &proto), Err(MergeAtError::Late));
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeAtError {
    /// The time's pane has closed.
    Late,
    /// The time's pane is too far ahead of the oldest open pane.
    Early,
    /// The synopsis does not merge with the pane (another configuration).
    Merge(MergeError),
}

impl fmt::Display for MergeAtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Late => f.write_str("synopsis refused: its pane has closed"),
            Self::Early => f.write_str("synopsis refused: its pane is too far ahead of the watermark"),
            Self::Merge(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MergeAtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Merge(e) => Some(e),
            _ => None,
        }
    }
}

impl From<MergeError> for MergeAtError {
    fn from(e: MergeError) -> Self {
        Self::Merge(e)
    }
}

/// What a [`TimeWindow`] does with an item of a given time: the test behind
/// [`observe_at`](TimeWindow::observe_at) and [`merge_at`](TimeWindow::merge_at).
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{Admission, TimeWindow, Window};
///
/// let window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(100)?, 0)?;
/// assert_eq!(window.admission(5), Admission::Open);
/// assert_eq!(window.admission(u64::MAX), Admission::Early);
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Admission {
    /// Its pane is open: the item is taken.
    Open,
    /// Its pane has closed.
    Late,
    /// Its pane is more than [`TimeWindow::MAX_OPEN_PANES`] ahead of the oldest open pane.
    Early,
}

/// A window that became complete: the synopsis of the items of times `[start, end)`.
///
/// `start` is 0 for the first windows, which begin before the clock; the last pane of the
/// clock, which holds `u64::MAX`, reports `end = u64::MAX`.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{Closed, TimeWindow, Window};
///
/// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::sliding(200, 100)?, 0)?;
/// window.observe_at(250, "x")?;
/// let closed = window.advance_to(1000)?;
/// let spans: Vec<(u64, u64)> = closed.iter().map(|c| (c.start, c.end)).collect();
/// assert_eq!(spans, [(100, 300), (200, 400)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Closed<O> {
    /// The first time of the window.
    pub start: u64,
    /// The time after the window's last.
    pub end: u64,
    /// The synopsis of the window's items.
    pub synopsis: O,
}

/// A synopsis over windows of event time: items come with timestamps, possibly out of
/// order; a watermark closes panes, and each window that becomes complete is returned once.
/// See [`Window`] for the idea, the memory and the error.
///
/// * Pane `k` holds the times `[k·slide, (k+1)·slide)`, in a synopsis made by
///   `proto.empty_part(k)` when its first item or synopsis arrives; a pane without any costs
///   nothing, and a jump of the watermark over empty panes costs nothing per pane.
/// * [`advance_to(w)`](Self::advance_to) closes every pane with `end + lateness <= w`, and
///   returns the windows ending with them that hold at least one non-empty pane. The
///   watermark never goes back; `advance_to(u64::MAX)` closes every pane (the end of the
///   stream).
/// * [`observe_at`](Self::observe_at) hands back an item whose pane has closed (late) or lies
///   [`MAX_OPEN_PANES`](Self::MAX_OPEN_PANES) or more panes after the oldest open one
///   (early), so that a wild timestamp cannot make the window allocate without bound.
///   Before the first [`advance_to`](Self::advance_to) the watermark is 0: with a clock that
///   does not start near 0 (Unix time), advance it to the stream's start first.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::stream::{TimeWindow, Window};
///
/// // Distinct users over the last 10 s, every second, up to 2 s late.
/// let mut window = TimeWindow::new(&HyperLogLog::new(12)?, Window::sliding(10_000, 1_000)?, 2_000)?;
/// window.observe_at(1_500, "ann")?;
/// window.observe_at(500, "bob")?; // out of order: fine
/// let closed = window.advance_to(4_000)?; // panes ending at 1 s and 2 s close
/// assert_eq!(closed.len(), 2);
/// assert_eq!((closed[1].start, closed[1].end), (0, 2_000));
/// assert_eq!(closed[1].synopsis.estimate().round(), 2.0);
/// assert!(window.observe_at(900, "cy").is_err()); // its pane has closed: late
/// assert_eq!(window.late(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TimeWindow<O> {
    shape: Window,
    lateness: u64,
    watermark: u64,
    /// The newest closed pane.
    closed: Option<u64>,
    /// The closed panes of the last window: the newest is `closed`, the ones before those
    /// held are empty.
    panes: SlidingPanes<O>,
    /// The open panes that received something, by number.
    open: BTreeMap<u64, O>,
    seen: u64,
    late: u64,
    early: u64,
}

impl<O: Mergeable + Clone> TimeWindow<O> {
    /// How far ahead items are taken: a pane at least this many panes after the oldest open
    /// one is refused as early. The open panes are at most this many synopses.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(1)?, 0)?;
    /// assert!(window.observe_at(TimeWindow::<HyperLogLog>::MAX_OPEN_PANES - 1, 1).is_ok());
    /// assert!(window.observe_at(TimeWindow::<HyperLogLog>::MAX_OPEN_PANES, 2).is_err());
    /// assert_eq!(window.early(), 1);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub const MAX_OPEN_PANES: u64 = 1 << 16;

    /// An empty window of synopses with `proto`'s configuration, keeping each pane open for
    /// `allowed_lateness` ticks after the watermark passes its end; the lateness must be
    /// less than half of [`MAX_OPEN_PANES`](Self::MAX_OPEN_PANES) slides, so that at least
    /// as many panes stay open ahead of the watermark.
    ///
    /// ```
    /// use synopses::sampling::Reservoir;
    /// use synopses::stream::{TimeWindow, Window};
    ///
    /// // A uniform sample of 100 events of the last minute, every 10 s.
    /// let shape = Window::sliding(60_000, 10_000)?;
    /// let window = TimeWindow::<Reservoir<u64>>::new(&Reservoir::new(100, 7)?, shape, 5_000)?;
    /// assert_eq!(window.allowed_lateness(), 5_000);
    /// assert!(TimeWindow::new(&Reservoir::<u64>::new(100, 7)?, shape, u64::MAX).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn new(proto: &O, window: Window, allowed_lateness: u64) -> Result<Self, ConfigError> {
        if allowed_lateness / window.slide >= Self::MAX_OPEN_PANES / 2 {
            return Err(ConfigError::new("allowed_lateness", allowed_lateness, "less than 2^15 slides"));
        }
        Ok(Self {
            shape: window,
            lateness: allowed_lateness,
            watermark: 0,
            closed: None,
            panes: SlidingPanes::new(proto, window.panes())?,
            open: BTreeMap::new(),
            seen: 0,
            late: 0,
            early: 0,
        })
    }

    /// The window's shape.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let shape = Window::tumbling(60)?;
    /// assert_eq!(TimeWindow::new(&HyperLogLog::new(10)?, shape, 0)?.shape(), shape);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn shape(&self) -> Window {
        self.shape
    }

    /// The allowed lateness, in ticks.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// assert_eq!(TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 30)?.allowed_lateness(), 30);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn allowed_lateness(&self) -> u64 {
        self.lateness
    }

    /// The watermark: the largest given to [`advance_to`](Self::advance_to), 0 before.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 0)?;
    /// window.advance_to(500)?;
    /// window.advance_to(400)?; // never goes back
    /// assert_eq!(window.watermark(), 500);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn watermark(&self) -> u64 {
        self.watermark
    }

    /// Items taken by [`observe_at`](Self::observe_at) (saturating).
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 0)?;
    /// window.observe_at(5, "a")?;
    /// assert_eq!(window.seen(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Items handed back by [`observe_at`](Self::observe_at) because their pane had closed
    /// (saturating).
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 0)?;
    /// window.advance_to(120)?;
    /// assert!(window.observe_at(100, "a").is_err());
    /// assert_eq!(window.late(), 1);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Items handed back by [`observe_at`](Self::observe_at) because their pane was too far
    /// ahead (saturating).
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 0)?;
    /// assert!(window.observe_at(u64::MAX, "a").is_err());
    /// assert_eq!(window.early(), 1);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn early(&self) -> u64 {
        self.early
    }

    /// The number of open panes that received something.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 0)?;
    /// window.observe_at(5, "a")?;
    /// window.observe_at(6000, "b")?;
    /// assert_eq!(window.open_panes(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn open_panes(&self) -> usize {
        self.open.len()
    }

    /// Whether an item of time `time` would be taken now, or why not.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{Admission, TimeWindow, Window};
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::tumbling(60)?, 0)?;
    /// window.advance_to(120)?;
    /// assert_eq!(window.admission(119), Admission::Late);
    /// assert_eq!(window.admission(120), Admission::Open);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn admission(&self, time: u64) -> Admission {
        let pane = time / self.shape.slide;
        match self.closed {
            Some(closed) if pane <= closed => Admission::Late,
            _ if pane - self.oldest_open() >= Self::MAX_OPEN_PANES => Admission::Early,
            _ => Admission::Open,
        }
    }

    /// The number of the oldest pane that is not closed (`closed < u64::MAX` whenever a pane
    /// after it exists).
    fn oldest_open(&self) -> u64 {
        self.closed.map_or(0, |c| c.saturating_add(1))
    }

    /// Observes `item` at time `time` into its pane, or hands it back when the pane has
    /// closed or is too far ahead ([`Late`], counted by [`late`](Self::late) or
    /// [`early`](Self::early)).
    ///
    /// ```
    /// # use synopses::frequency::CountMin;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let mut window = TimeWindow::new(&CountMin::new(256, 4)?, Window::tumbling(60)?, 0)?;
    /// window.observe_at(10, "a")?;
    /// window.observe_at(70, "a")?;
    /// let closed = window.advance_to(60)?;
    /// assert_eq!(closed[0].synopsis.estimate("a"), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn observe_at<T>(&mut self, time: u64, item: T) -> Result<(), Late<T>>
    where
        O: Operator<T>,
    {
        match self.admission(time) {
            Admission::Open => {}
            Admission::Late => {
                self.late = self.late.saturating_add(1);
                return Err(Late { time, item });
            }
            Admission::Early => {
                self.early = self.early.saturating_add(1);
                return Err(Late { time, item });
            }
        }
        let pane = time / self.shape.slide;
        let proto = self.panes.proto();
        self.open.entry(pane).or_insert_with(|| proto.empty_part(pane)).observe(item);
        self.seen = self.seen.saturating_add(1);
        Ok(())
    }

    /// Merges a synopsis of items of time `time` (pre-aggregated elsewhere, by another
    /// worker, say) into its pane. Refuses it, leaving everything unchanged (the refusal is
    /// not counted by [`late`](Self::late) or [`early`](Self::early): the caller keeps the
    /// synopsis), when the pane has closed or is too far ahead, or the synopsis is of another
    /// configuration. Merged
    /// synopses of a sampler must not share a random stream with each other or with the
    /// window's panes: make them with [`empty_part`](Mergeable::empty_part) of the
    /// prototype, with indexes of their own.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{TimeWindow, Window};
    ///
    /// let proto = HyperLogLog::new(12)?;
    /// let mut window = TimeWindow::new(&proto, Window::tumbling(100)?, 0)?;
    /// let mut batch = proto.clone();
    /// batch.observe_all(0..50u64);
    /// window.merge_at(42, &batch)?;
    /// window.observe_at(43, 50u64)?;
    /// let closed = window.advance_to(100)?;
    /// assert_eq!(closed[0].synopsis.estimate().round(), 51.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge_at(&mut self, time: u64, pane: &O) -> Result<(), MergeAtError> {
        match self.admission(time) {
            Admission::Open => {}
            Admission::Late => return Err(MergeAtError::Late),
            Admission::Early => return Err(MergeAtError::Early),
        }
        let number = time / self.shape.slide;
        match self.open.get_mut(&number) {
            Some(open) => open.merge(pane)?,
            None => {
                let mut open = self.panes.proto().empty_part(number);
                open.merge(pane)?;
                self.open.insert(number, open);
            }
        }
        Ok(())
    }

    /// The newest pane that closes at watermark `w`: `(k + 1)·slide + lateness <= w`, or
    /// every pane at `u64::MAX`.
    fn last_closing(&self, w: u64) -> Option<u64> {
        if w == u64::MAX {
            return Some(u64::MAX / self.shape.slide);
        }
        (w.checked_sub(self.lateness)? / self.shape.slide).checked_sub(1)
    }

    /// Advances the watermark to `watermark` (a smaller one changes nothing), closes every
    /// pane with `end + lateness <= watermark`, and returns, oldest first, each window
    /// ending with a closed pane that holds items.
    ///
    /// Fails only when two panes share a random stream (synopses given to
    /// [`merge_at`](Self::merge_at) not made by `empty_part`). Even then every pane due
    /// closes, so none is left open behind the watermark: a pane that does not merge closes
    /// empty (its items are dropped; so are, if the clash is among older panes, those of the
    /// panes [`SlidingPanes::push`] lets leave early), a window that does not merge is left
    /// out, and the first error is returned in place of this call's windows.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{TimeWindow, Window};
    ///
    /// let mut window = TimeWindow::new(&HyperLogLog::new(12)?, Window::tumbling(10)?, 0)?;
    /// window.observe_at(3, "a")?;
    /// assert_eq!(window.advance_to(10)?.len(), 1);
    /// // A jump over 10^11 empty panes: nothing is done for them.
    /// assert!(window.advance_to(1_000_000_000_000)?.is_empty());
    /// window.observe_at(1_000_000_000_005, "b")?;
    /// let closed = window.advance_to(u64::MAX)?; // the end of the stream
    /// assert_eq!(closed.len(), 1);
    /// assert_eq!((closed[0].start, closed[0].end), (1_000_000_000_000, 1_000_000_000_010));
    /// assert_eq!((closed.len(), closed[0].start), (1, 1_000_000_000_000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn advance_to(&mut self, watermark: u64) -> Result<Vec<Closed<O>>, MergeError> {
        let mut out = Vec::new();
        if watermark <= self.watermark {
            return Ok(out);
        }
        self.watermark = watermark;
        let Some(last) = self.last_closing(watermark) else { return Ok(out) };
        let mut next = match self.closed {
            Some(closed) if closed >= last => return Ok(out),
            Some(closed) => closed + 1,
            None => 0,
        };
        let mut failed = None;
        loop {
            if !self.panes.has_items() {
                // Only empty panes until the next one with items: jump there at once.
                match self.open.first_key_value() {
                    Some((&first, _)) if first <= last => {
                        if first > next {
                            self.panes.clear();
                            next = first;
                        }
                    }
                    _ => {
                        self.panes.clear();
                        self.closed = Some(last);
                        return failed.map_or(Ok(out), Err);
                    }
                }
            }
            let pushed = match self.open.remove(&next) {
                Some(pane) => self.panes.push(pane).inspect_err(|_| {
                    // In its place an empty pane, so that the windows keep their panes: after
                    // the failed push (a flip, if any, is done) this one cannot fail.
                    let refilled = self.panes.push_empty();
                    debug_assert!(refilled.is_ok(), "no flip after a failed push");
                }),
                None => self.panes.push_empty(),
            };
            self.closed = Some(next);
            let window = pushed.and_then(|()| self.panes.window());
            match window {
                Ok(synopsis) if self.panes.has_items() => {
                    let slide = self.shape.slide;
                    let start = next.saturating_sub(self.shape.panes() as u64 - 1) * slide;
                    let end = next.checked_add(1).and_then(|n| n.checked_mul(slide)).unwrap_or(u64::MAX);
                    out.push(Closed { start, end, synopsis });
                }
                Ok(_) => {}
                Err(e) => failed = failed.or(Some(e)),
            }
            if next == last {
                return failed.map_or(Ok(out), Err);
            }
            next += 1;
        }
    }

    /// Bytes of memory held: the closed panes of the last window, their merges and the open
    /// panes.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let proto = HyperLogLog::new(12)?;
    /// let mut window = TimeWindow::new(&proto, Window::sliding(100, 10)?, 0)?;
    /// window.observe_at(5, "a")?;
    /// assert!(window.size_in_bytes() >= 2 * proto.size_in_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        // A B-tree entry costs about its key, its value and a share of its node.
        self.panes.size_in_bytes() + self.open.values().map(|o| o.size_in_bytes() + 16).sum::<usize>()
    }
}

impl<O: Mergeable + Clone + Codec + PartialEq> TimeWindow<O> {
    /// The length of [`to_bytes`](Self::to_bytes)'s output.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let window = TimeWindow::new(&HyperLogLog::new(10)?, Window::sliding(8, 4)?, 2)?;
    /// assert_eq!(window.encoded_len(), window.to_bytes().len());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        ENVELOPE_LEN
            + 65
            + self.panes.encoded_body_len()
            + 4
            + self.open.values().map(|o| 8 + nested_len(Some(o))).sum::<usize>()
    }

    /// The whole state in the crate's [format](crate::codec) (family 13): size, slide,
    /// lateness, watermark (u64 each), whether a pane has closed (u8) and the newest closed
    /// pane (u64, 0 if none), items seen, late and early (u64 each), the pane aggregator as in
    /// [`CountWindow::to_bytes`], then the number of open panes (u32) and each one's number
    /// (u64) and synopsis (a u64 length and its encoding), oldest first.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::{TimeWindow, Window};
    ///
    /// let mut window = TimeWindow::new(&HyperLogLog::new(10)?, Window::sliding(100, 10)?, 20)?;
    /// for t in 0..500u64 {
    ///     window.observe_at(t * 7 % 500, t)?;
    /// }
    /// window.advance_to(250)?;
    /// let mut restored = TimeWindow::<HyperLogLog>::from_bytes(&window.to_bytes())?;
    /// assert_eq!(restored, window);
    /// assert_eq!(restored.advance_to(600)?, window.advance_to(600)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new(<Self as Codec>::FAMILY, self.encoded_len());
        w.put_u64(self.shape.size);
        w.put_u64(self.shape.slide);
        w.put_u64(self.lateness);
        w.put_u64(self.watermark);
        w.put_u8(u8::from(self.closed.is_some()));
        w.put_u64(self.closed.unwrap_or(0));
        w.put_u64(self.seen);
        w.put_u64(self.late);
        w.put_u64(self.early);
        self.panes.encode_body(&mut w);
        w.put_u32(self.open.len() as u32);
        for (&number, pane) in &self.open {
            w.put_u64(number);
            put_nested(&mut w, Some(pane));
        }
        w.finish()
    }

    /// Decodes and validates [`to_bytes`](Self::to_bytes)'s output: the shape and lateness,
    /// the closed pane against the watermark, the open panes' numbers (increasing, open,
    /// within [`MAX_OPEN_PANES`](Self::MAX_OPEN_PANES)), every synopsis's encoding and
    /// configuration, and, for a sampler, that no two synopses a later merge may meet share a
    /// random stream.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::{TimeWindow, Window};
    /// let window = TimeWindow::new(&HyperLogLog::new(10)?, Window::sliding(8, 4)?, 2)?;
    /// let bytes = window.to_bytes();
    /// assert_eq!(TimeWindow::<HyperLogLog>::from_bytes(&bytes)?, window);
    /// assert!(TimeWindow::<HyperLogLog>::from_bytes(&bytes[1..]).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::open(bytes, <Self as Codec>::FAMILY)?;
        let shape = Window::decode(&mut r)?;
        let lateness = r.u64()?;
        let watermark = r.u64()?;
        let closed = match (r.u8()?, r.u64()?) {
            (0, 0) => None,
            (1, closed) => Some(closed),
            _ => return Err(invalid("closed pane", "not a flag and a pane number")),
        };
        let (seen, late, early) = (r.u64()?, r.u64()?, r.u64()?);
        let panes = SlidingPanes::<O>::decode_body(&mut r, shape.panes())?;
        let mut window =
            Self::new(panes.proto(), shape, lateness).map_err(|_| invalid("allowed lateness", "too many slides"))?;
        let closes = window.last_closing(watermark);
        // Every pane the watermark closes is closed (one left open would never close: a
        // watermark does not go back), and every closed pane is held or empty.
        if closed != closes || (panes.len() as u64) > closed.map_or(0, |c| c.saturating_add(1)) {
            return Err(invalid("closed pane", "inconsistent with the watermark or the panes"));
        }
        (window.watermark, window.closed, window.panes) = (watermark, closed, panes);
        (window.seen, window.late, window.early) = (seen, late, early);
        let count = r.u32()? as u64;
        if count > Self::MAX_OPEN_PANES {
            return Err(invalid("open panes", "more than MAX_OPEN_PANES"));
        }
        // Each open pane takes at least its number and a length.
        r.expect_items(count as usize, 16)?;
        let mut previous = None;
        for _ in 0..count {
            let number = r.u64()?;
            let pane = get_nested::<O>(&mut r)?.ok_or(invalid("open panes", "missing"))?;
            let admitted = number.checked_mul(shape.slide).map(|t| window.admission(t));
            if admitted != Some(Admission::Open) || previous.is_some_and(|p| p >= number) {
                return Err(invalid("open panes", "not open, or not in increasing order"));
            }
            window
                .panes
                .proto()
                .empty_like()
                .merge(&pane)
                .map_err(|_| invalid("open panes", "of another configuration"))?;
            window.open.insert(number, pane);
            previous = Some(number);
        }
        // A pane takes the stream of the synopsis `merge_at` gives it, so a stream cannot be
        // checked against the pane's number; but no two synopses that a later merge may meet
        // share a stream in any state reached by merging synopses of streams of their own, as
        // `merge_at` asks.
        if window.panes.randomized() {
            let mut streams =
                window.panes.held_streams().ok_or(invalid("panes", "the back's merge of another stream"))?;
            streams.extend(window.open.values().filter(|o| **o != o.empty_like()).map(|o| o.empty_like().to_bytes()));
            streams.sort_unstable();
            if streams.windows(2).any(|w| w[0] == w[1]) {
                return Err(invalid("open panes", "two panes of one random stream"));
            }
        }
        r.finish()?;
        Ok(window)
    }
}

codec_impl!([O: Mergeable + Clone + Codec + PartialEq] TimeWindow<O>, 13);
