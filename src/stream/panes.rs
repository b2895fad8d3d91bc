//! The two-stacks sliding-window aggregator over pane synopses.

use crate::codec::{Codec, Reader, Writer};
use crate::core::{ConfigError, DecodeError, MergeError, Mergeable};

use super::window::Window;

/// The merge of the last `panes` pane synopses pushed, kept up to date in O(1) merges per
/// push, amortized: the incremental sliding-window aggregator under
/// [`CountWindow`](super::CountWindow) and [`TimeWindow`](super::TimeWindow), usable alone
/// with panes of your own.
///
/// # Two stacks
///
/// Merging is associative but has no inverse: a pane leaving the window cannot be
/// subtracted from a running merge. The two-stacks algorithm (Tangwongsan, Hirzel and
/// Schneider) keeps the window as two halves. The *back* holds the newest panes as they
/// came, plus one running merge of them; the *front* holds the oldest panes, each slot the
/// merge of its pane and every newer pane of the front (a suffix merge). The window is the
/// front's top merged with the back's running merge; evicting the oldest pane pops the
/// front. When the front runs empty, the back is *flipped* onto it: its panes are merged
/// newest first into suffix merges, once each.
///
/// ```text
///  4 panes, after pushing a b c d e f (a, b evicted):
///
///  front (suffix merges)      back (panes)   back merge
///  ┌─────────┐
///  │  c∪d    │  ← top         ┌───┬───┐
///  ├─────────┤                │ e │ f │      e∪f
///  │    d    │                └───┴───┘
///  └─────────┘
///  window = (c∪d) ∪ (e∪f)
///
///  push g: the front pops c∪d; the back is e f g, its merge e∪f∪g
///  push h: the front pops d; the back is e f g h
///  push i: the front is empty: flip e f g h onto it as e∪f∪g∪h, f∪g∪h, g∪h, h
///          (3 merges), pop e∪f∪g∪h; the back is i
/// ```
///
/// A push costs one merge into the back's running merge, plus a pop; a flip costs one merge
/// per pane flipped, and each pane is flipped once: two merges per push, amortized (and, once
/// per flip, a copy of the first pane of the new back). [`window`](Self::window) costs a copy
/// of the front's top and one merge, against a copy and `panes − 1` merges for merging every
/// pane afresh. The memory is at most `panes + 2` synopses (the panes or their suffix merges,
/// which replace the panes they merge, the back's running merge, and an empty prototype), one
/// more for a moment during a push, plus `O(panes)` words.
///
/// Panes are `Option`s inside: a pane known to be empty (a time pane with no items) costs a
/// word and no merge.
///
/// # Random streams
///
/// A randomized synopsis (a sampler) refuses to merge two non-empty instances of one random
/// stream, which would make correlated choices. Push panes made by
/// [`empty_part`](Mergeable::empty_part) of the prototype with distinct indexes, as
/// [`CountWindow`](super::CountWindow) and [`TimeWindow`](super::TimeWindow) do (the pane's
/// sequence number): every merge the aggregator makes is then between disjoint sets of
/// panes, whose streams differ.
///
/// ```
/// use synopses::cardinality::HyperLogLog;
/// use synopses::core::Mergeable;
/// use synopses::stream::SlidingPanes;
///
/// let proto = HyperLogLog::new(12)?;
/// let mut window = SlidingPanes::new(&proto, 3)?;
/// for pane in 0..10u64 {
///     let mut h = proto.empty_part(pane);
///     h.observe_all(pane * 100..(pane + 1) * 100); // 100 distinct items per pane
///     window.push(h)?;
/// }
/// assert_eq!(window.len(), 3);
/// assert_eq!(window.window()?.estimate().round(), 300.0);
/// # Ok::<(), synopses::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SlidingPanes<O> {
    /// Empty, with the configuration every pane must have: what `window` returns when no
    /// pane holds anything, and what new panes are made from.
    proto: O,
    /// How many panes the window holds.
    capacity: usize,
    /// The oldest panes as suffix merges: `front[0]` stands for the newest of them, the last
    /// slot (the top) for the oldest, and each slot for the merge of its pane and every newer
    /// pane of the front: `merges[i]` for `Some(i)`, nothing for `None` (only empty panes). An
    /// empty pane shares the slot below it, so it costs no copy.
    front: Vec<Option<u32>>,
    /// The distinct suffix merges of the front, bottom first.
    merges: Vec<O>,
    /// The newest panes, oldest first.
    back: Vec<Option<O>>,
    /// The merge of `back`.
    back_merge: Option<O>,
}

impl<O: Mergeable + Clone> SlidingPanes<O> {
    /// An empty window of `panes` panes (in `1..=`[`Window::MAX_PANES`]) of `proto`'s
    /// configuration; `proto`'s own contents are not used.
    ///
    /// ```
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::SlidingPanes;
    ///
    /// let window = SlidingPanes::new(&CountMin::new(256, 4)?, 60)?;
    /// assert!(window.is_empty());
    /// assert!(SlidingPanes::new(&CountMin::new(256, 4)?, 0).is_err());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn new(proto: &O, panes: usize) -> Result<Self, ConfigError> {
        if !(1..=Window::MAX_PANES).contains(&panes) {
            return Err(ConfigError::new("panes", panes, "an integer in 1..=2^16"));
        }
        Ok(Self {
            proto: proto.empty_like(),
            capacity: panes,
            front: Vec::new(),
            merges: Vec::new(),
            back: Vec::new(),
            back_merge: None,
        })
    }

    /// The number of panes the window holds when full.
    ///
    /// ```
    /// # use synopses::membership::Bloom;
    /// # use synopses::stream::SlidingPanes;
    /// assert_eq!(SlidingPanes::new(&Bloom::new(1024, 3)?, 5)?.capacity(), 5);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The number of panes held: those pushed, up to [`capacity`](Self::capacity).
    ///
    /// ```
    /// # use synopses::membership::Bloom;
    /// # use synopses::stream::SlidingPanes;
    /// let proto = Bloom::new(1024, 3)?;
    /// let mut window = SlidingPanes::new(&proto, 2)?;
    /// for _ in 0..3 {
    ///     window.push(proto.clone())?;
    /// }
    /// assert_eq!(window.len(), 2);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.front.len() + self.back.len()
    }

    /// Whether no pane is held.
    ///
    /// ```
    /// # use synopses::membership::Bloom;
    /// # use synopses::stream::SlidingPanes;
    /// assert!(SlidingPanes::new(&Bloom::new(1024, 3)?, 2)?.is_empty());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The empty synopsis of the window's configuration, from which panes are made
    /// (`proto.empty_part(i)` for pane `i`).
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::SlidingPanes;
    /// let mut h = HyperLogLog::new(10)?;
    /// h.observe("x");
    /// let window = SlidingPanes::new(&h, 4)?;
    /// assert_eq!(window.proto().estimate(), 0.0);
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn proto(&self) -> &O {
        &self.proto
    }

    /// Pushes the newest pane, evicting the oldest when [`capacity`](Self::capacity) panes
    /// are held.
    ///
    /// Fails, leaving the window unchanged, when the pane does not merge with the window's
    /// configuration. Panes that share a random stream (samplers' panes not made by
    /// [`empty_part`](Mergeable::empty_part) with distinct indexes) may also fail here, when
    /// the back is flipped: then the oldest panes that could not be merged leave the window
    /// early, the pane is not pushed, and the error says which stream clashed.
    ///
    /// ```
    /// use synopses::cardinality::HyperLogLog;
    /// use synopses::stream::SlidingPanes;
    ///
    /// let mut window = SlidingPanes::new(&HyperLogLog::new(12)?, 2)?;
    /// assert!(window.push(HyperLogLog::new(14)?).is_err());
    /// assert!(window.is_empty());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn push(&mut self, pane: O) -> Result<(), MergeError> {
        self.push_slot(Some(pane))
    }

    /// Pushes an empty pane: no synopsis is stored and nothing is merged.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::SlidingPanes;
    /// let mut window = SlidingPanes::new(&HyperLogLog::new(12)?, 2)?;
    /// window.push_empty()?;
    /// assert_eq!((window.len(), window.has_items()), (1, false));
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn push_empty(&mut self) -> Result<(), MergeError> {
        self.push_slot(None)
    }

    /// Whether any held pane was pushed as a synopsis (by [`push`](Self::push), not
    /// [`push_empty`](Self::push_empty)): otherwise [`window`](Self::window) is empty.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::SlidingPanes;
    /// let proto = HyperLogLog::new(12)?;
    /// let mut window = SlidingPanes::new(&proto, 2)?;
    /// window.push(proto.clone())?;
    /// window.push_empty()?;
    /// assert!(window.has_items());
    /// window.push_empty()?;
    /// assert!(!window.has_items());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn has_items(&self) -> bool {
        self.front_top().is_some() || self.back_merge.is_some()
    }

    /// Drops every pane.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::SlidingPanes;
    /// let proto = HyperLogLog::new(12)?;
    /// let mut window = SlidingPanes::new(&proto, 2)?;
    /// window.push(proto.clone())?;
    /// window.clear();
    /// assert!(window.is_empty());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.front.clear();
        self.merges.clear();
        self.back.clear();
        self.back_merge = None;
    }

    /// Whether a held pane was pushed empty.
    pub(crate) fn holds_empty(&self) -> bool {
        self.front.contains(&None) || self.back.iter().any(Option::is_none)
    }

    fn push_slot(&mut self, pane: Option<O>) -> Result<(), MergeError> {
        let full = self.len() == self.capacity;
        if full && self.front.is_empty() {
            self.flip()?;
        }
        // The only merge involving the new pane: made before anything else changes, so a pane
        // that does not merge leaves the window as it was (a flip rearranges, it loses nothing).
        if let Some(pane) = &pane {
            match &mut self.back_merge {
                Some(merged) => merged.merge(pane)?,
                None => {
                    // A copy, not a merge into an empty synopsis: a window of one pane is then
                    // that pane exactly, history (a sketch's martingale) included.
                    self.proto.empty_like().merge(pane)?;
                    self.back_merge = Some(pane.clone());
                }
            }
        }
        if self.len() == self.capacity {
            self.pop_front();
        }
        self.back.push(pane);
        Ok(())
    }

    /// Moves the back onto the front as suffix merges, newest first, without copying a pane.
    fn flip(&mut self) -> Result<(), MergeError> {
        debug_assert!(self.front.is_empty() && self.merges.is_empty());
        self.back_merge = None;
        // On an error the panes left in `back`, the oldest, are dropped with it: what remains
        // is a valid window of the newer panes.
        let mut back = std::mem::take(&mut self.back);
        while let Some(pane) = back.pop() {
            let below = self.front.last().copied().flatten();
            let slot = match pane {
                Some(mut pane) => {
                    if let Some(newer) = self.merges.last() {
                        pane.merge(newer)?;
                    }
                    self.merges.push(pane);
                    Some((self.merges.len() - 1) as u32)
                }
                None => below,
            };
            self.front.push(slot);
        }
        Ok(())
    }

    /// Evicts the oldest pane.
    fn pop_front(&mut self) {
        let top = self.front.pop().flatten();
        if top.is_some() && self.front.last().copied().flatten() != top {
            self.merges.pop();
        }
    }

    /// The merge of the front's panes, if any holds items.
    fn front_top(&self) -> Option<&O> {
        let top = self.front.last().copied().flatten()?;
        self.merges.get(top as usize)
    }

    /// The merge of the held panes: an empty synopsis of the configuration when none holds
    /// anything. Fails only when two panes share a random stream (see [`push`](Self::push)).
    ///
    /// ```
    /// use synopses::core::Mergeable;
    /// use synopses::frequency::CountMin;
    /// use synopses::stream::SlidingPanes;
    ///
    /// let proto = CountMin::new(512, 4)?;
    /// let mut window = SlidingPanes::new(&proto, 2)?;
    /// for word in ["a", "b", "a"] {
    ///     let mut pane = proto.empty_part(0);
    ///     pane.observe(word);
    ///     window.push(pane)?;
    /// }
    /// let last_two = window.window()?;
    /// assert_eq!((last_two.estimate("a"), last_two.estimate("b")), (1, 1));
    /// # Ok::<(), synopses::Error>(())
    /// ```
    pub fn window(&self) -> Result<O, MergeError> {
        match (self.front_top(), self.back_merge.as_ref()) {
            (Some(front), Some(back)) => {
                let mut out = front.clone();
                out.merge(back)?;
                Ok(out)
            }
            (Some(one), None) | (None, Some(one)) => Ok(one.clone()),
            (None, None) => Ok(self.proto.empty_like()),
        }
    }

    /// Bytes of memory held: the prototype, the panes and the merges.
    ///
    /// ```
    /// # use synopses::cardinality::HyperLogLog;
    /// # use synopses::stream::SlidingPanes;
    /// let proto = HyperLogLog::new(12)?;
    /// let window = SlidingPanes::new(&proto, 8)?;
    /// assert!(window.size_in_bytes() >= proto.size_in_bytes());
    /// # Ok::<(), synopses::Error>(())
    /// ```
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        let slots = self.back.iter().chain(std::iter::once(&self.back_merge));
        std::mem::size_of::<Self>()
            + self.proto.size_in_bytes()
            + self.front.capacity() * std::mem::size_of::<Option<u32>>()
            + self.merges.iter().map(Mergeable::size_in_bytes).sum::<usize>()
            + slots
                .map(|s| s.as_ref().map_or(std::mem::size_of::<Option<O>>(), Mergeable::size_in_bytes))
                .sum::<usize>()
    }
}

// The encoding, written inside the windows' encodings (it has no envelope of its own).
impl<O: Mergeable + Clone + Codec + PartialEq> SlidingPanes<O> {
    pub(crate) fn encoded_body_len(&self) -> usize {
        let synopses = std::iter::once(&self.proto).chain(&self.merges);
        let slots = self.back.iter().chain(std::iter::once(&self.back_merge));
        12 + 4 * self.front.len()
            + synopses.map(|o| nested_len(Some(o))).sum::<usize>()
            + slots.map(|s| nested_len(s.as_ref())).sum::<usize>()
    }

    /// Capacity (u32), the prototype, the front's length (u32) and its slots bottom first
    /// (u32 each: 0 for none, `i + 1` for the `i`-th suffix merge), the suffix merges bottom
    /// first, the back's length (u32) and panes oldest first, the back's merge; each synopsis
    /// as a [nested](put_nested) encoding. The number of suffix merges is that of distinct
    /// front slots.
    pub(crate) fn encode_body(&self, w: &mut Writer) {
        w.put_u32(self.capacity as u32);
        put_nested(w, Some(&self.proto));
        w.put_u32(self.front.len() as u32);
        for slot in &self.front {
            w.put_u32(slot.map_or(0, |i| i + 1));
        }
        for merge in &self.merges {
            put_nested(w, Some(merge));
        }
        w.put_u32(self.back.len() as u32);
        for slot in self.back.iter().chain(std::iter::once(&self.back_merge)) {
            put_nested(w, slot.as_ref());
        }
    }

    /// Reads what [`encode_body`](Self::encode_body) wrote, for a window of `capacity` panes.
    pub(crate) fn decode_body(r: &mut Reader<'_>, capacity: usize) -> Result<Self, DecodeError> {
        if r.u32()? as usize != capacity {
            return Err(invalid("panes", "not the window's number of panes"));
        }
        let proto = get_nested::<O>(r)?.ok_or(invalid("prototype", "missing"))?;
        if proto != proto.empty_like() {
            return Err(invalid("prototype", "not empty"));
        }
        let front_len = r.u32()? as usize;
        if front_len > capacity {
            return Err(invalid("panes", "more panes than the window holds"));
        }
        r.expect_items(front_len, 4)?;
        let mut front = Vec::with_capacity(front_len);
        // Slots bottom first: none until the first merge, then each the same merge as the slot
        // below or the next one.
        let mut distinct = 0u32;
        for _ in 0..front_len {
            let slot = r.u32()?;
            match slot {
                0 if distinct == 0 => front.push(None),
                s if s == distinct || s == distinct + 1 && s > 0 => {
                    distinct = s;
                    front.push(Some(s - 1));
                }
                _ => return Err(invalid("panes", "front slots out of order")),
            }
        }
        let pane = |r: &mut Reader<'_>| -> Result<Option<O>, DecodeError> {
            let pane = get_nested::<O>(r)?;
            if let Some(pane) = &pane {
                proto.empty_like().merge(pane).map_err(|_| invalid("panes", "a pane of another configuration"))?;
            }
            Ok(pane)
        };
        // Each merge and back slot takes at least its 8-byte length.
        r.expect_items(distinct as usize, 8)?;
        let merges = (0..distinct)
            .map(|_| pane(r)?.ok_or(invalid("panes", "a missing suffix merge")))
            .collect::<Result<Vec<_>, _>>()?;
        let back_len = r.u32()? as usize;
        if front_len + back_len > capacity {
            return Err(invalid("panes", "more panes than the window holds"));
        }
        r.expect_items(back_len + 1, 8)?;
        let back = (0..back_len).map(|_| pane(r)).collect::<Result<Vec<_>, _>>()?;
        let back_merge = pane(r)?;
        if back_merge.is_some() != back.iter().any(Option::is_some) {
            return Err(invalid("panes", "the back's merge inconsistent with its panes"));
        }
        Ok(Self { proto, capacity, front, merges, back, back_merge })
    }
}

impl<O: Mergeable + Clone + PartialEq> SlidingPanes<O> {
    /// Checks that every synopsis held is of the random stream the aggregator would have
    /// given it, the held panes being numbered up to `newest` and made by
    /// `proto.empty_part(number)`: a pane of its number's stream, a merge of the stream of one
    /// of the panes it merges (a sampler's merge into an empty one takes the other's stream).
    /// Then every merge the aggregator makes is between synopses of disjoint sets of panes,
    /// whose streams differ, and never fails; a decoder that skipped this would accept panes
    /// that share a stream, whose merges fail later.
    pub(crate) fn check_streams(&self, newest: u64) -> Result<(), DecodeError> {
        if self.proto.empty_part(0) == self.proto.empty_part(1) {
            // A deterministic synopsis: one "stream" for every pane, and nothing to check (a
            // copy of each pane, which the checks below make, costs as much as decoding it).
            return Ok(());
        }
        let bad = || invalid("panes", "a synopsis of another random stream than its pane's");
        let is_empty = |o: &O| *o == o.empty_like();
        let of_stream = |o: &O, number: u64| o.empty_like() == self.proto.empty_part(number);
        let back_len = self.back.len() as u64;
        // The newest pane is `newest`; the back's panes come last, oldest first.
        let back_number = |j: usize| newest.wrapping_sub(back_len - 1 - j as u64);
        let front_number = |i: usize| newest.wrapping_sub(back_len + i as u64);
        for (j, pane) in self.back.iter().enumerate() {
            if pane.as_ref().is_some_and(|p| !of_stream(p, back_number(j))) {
                return Err(bad());
            }
        }
        if let Some(merged) = &self.back_merge {
            // The running merge started as a copy of the oldest pane, and took the stream of
            // the first non-empty one if that pane was empty.
            let mut held = self.back.iter().enumerate().filter_map(|(j, p)| p.as_ref().map(|p| (j, p)));
            let first = held.clone().next().map(|(j, _)| j);
            let expected = held.find(|(_, p)| !is_empty(p)).map(|(j, _)| j).or(first);
            if !expected.is_some_and(|j| of_stream(merged, back_number(j))) {
                return Err(bad());
            }
        }
        // `merges[m]` was made at the newest slot that refers to it, as that slot's pane merged
        // with `merges[m - 1]`: of that pane's stream, or of `merges[m - 1]`'s when the pane
        // was empty.
        let mut m = 0;
        for (i, slot) in self.front.iter().enumerate() {
            if *slot != Some(m as u32) {
                continue;
            }
            let merge = &self.merges[m];
            let inherited =
                m > 0 && !is_empty(&self.merges[m - 1]) && merge.empty_like() == self.merges[m - 1].empty_like();
            if !(of_stream(merge, front_number(i)) || inherited) {
                return Err(bad());
            }
            m += 1;
        }
        Ok(())
    }
}

impl<O: Mergeable + Clone + Codec + PartialEq> SlidingPanes<O> {
    /// Whether the panes may have random streams of their own (a sampler's), so that two of
    /// them can clash.
    pub(crate) fn randomized(&self) -> bool {
        self.proto.empty_part(0) != self.proto.empty_part(1)
    }

    /// The random streams (each as the encoding of an empty synopsis of it) of the non-empty
    /// synopses that a later merge may meet with another: those of the front's merges (once
    /// each: a merge may carry the stream of the one below it) and of the back's panes.
    /// `None` when the back's merge is of none of its panes' streams.
    pub(crate) fn held_streams(&self) -> Option<Vec<Vec<u8>>> {
        let key = |o: &O| (*o != o.empty_like()).then(|| o.empty_like().to_bytes());
        let mut out: Vec<Vec<u8>> = self.merges.iter().filter_map(key).collect();
        out.dedup();
        let back: Vec<Vec<u8>> = self.back.iter().flatten().filter_map(key).collect();
        if let Some(merged) = self.back_merge.as_ref().and_then(key)
            && !back.contains(&merged)
        {
            return None;
        }
        out.extend(back);
        Some(out)
    }
}

/// The length of a [nested](put_nested) encoding.
pub(crate) fn nested_len<O: Codec>(o: Option<&O>) -> usize {
    8 + o.map_or(0, Codec::encoded_len)
}

/// A synopsis inside another encoding: its length (u64; 0 for none, which no encoding has),
/// then its own encoding, envelope and checksum included.
pub(crate) fn put_nested<O: Codec>(w: &mut Writer, o: Option<&O>) {
    match o {
        Some(o) => {
            let bytes = o.to_bytes();
            w.put_u64(bytes.len() as u64);
            w.put_bytes(&bytes);
        }
        None => w.put_u64(0),
    }
}

/// Reads a [nested](put_nested) encoding; its length is checked against the bytes left
/// before anything is decoded.
pub(crate) fn get_nested<O: Codec>(r: &mut Reader<'_>) -> Result<Option<O>, DecodeError> {
    let len = r.u64()?;
    if len == 0 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| invalid("nested length", "larger than the address space"))?;
    O::from_bytes(r.take(len)?).map(Some)
}

pub(crate) fn invalid(field: &'static str, reason: &'static str) -> DecodeError {
    DecodeError::InvalidField { field, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frequency::CountMin;

    /// The states of the diagram in the type's docs, with a Count-Min pane per letter.
    #[test]
    fn the_two_stacks_move_as_drawn() {
        let proto = CountMin::new(64, 2).unwrap();
        let mut window = SlidingPanes::new(&proto, 4).unwrap();
        let push = |window: &mut SlidingPanes<CountMin>, letter: &str| {
            let mut pane = proto.empty_like();
            pane.observe(letter);
            window.push(pane).unwrap();
        };
        for letter in ["a", "b", "c", "d", "e", "f"] {
            push(&mut window, letter);
        }
        assert_eq!((window.front.len(), window.merges.len(), window.back.len()), (2, 2, 2));
        let answer = window.window().unwrap();
        assert_eq!(["a", "b", "c", "d", "e", "f"].map(|l| answer.estimate(l)), [0, 0, 1, 1, 1, 1]);
        push(&mut window, "g");
        push(&mut window, "h");
        assert_eq!((window.front.len(), window.back.len()), (0, 4));
        push(&mut window, "i");
        assert_eq!((window.front.len(), window.merges.len(), window.back.len()), (3, 3, 1));
        let answer = window.window().unwrap();
        assert_eq!(["e", "f", "g", "h", "i"].map(|l| answer.estimate(l)), [0, 1, 1, 1, 1]);
    }

    /// Empty panes share the suffix merge below them instead of copying it.
    #[test]
    fn empty_panes_cost_no_copy() {
        let proto = CountMin::new(64, 2).unwrap();
        let mut window = SlidingPanes::new(&proto, 5).unwrap();
        let mut pane = proto.empty_like();
        pane.observe("x");
        window.push(pane).unwrap();
        for _ in 0..5 {
            window.push_empty().unwrap();
        }
        // The flip at the sixth push put five slots on the front with no merge nor copy, then
        // the oldest, the one pane with items, left.
        assert_eq!((window.front.len(), window.merges.len(), window.has_items()), (4, 0, false));
    }
}
