//! The state every sampler shares: the bottom-k sample, the count, and the random stream.

use super::bottom::Bottom;
use crate::codec::{ENVELOPE_LEN, Item, Reader, Writer};
use crate::core::random::{Stream, part_stream, resumed_stream};
use crate::core::{ConfigError, DecodeError, MergeError};

/// The largest sample a sampler may keep: 2^24 items.
pub(crate) const MAX_CAPACITY: usize = 1 << 24;

/// The samplers' format version. Version 2 stores the generator's state and draw count, and
/// each sampler's pending draw (the reservoir's skip, the weighted reservoir's jump), so that
/// a decoded sampler continues exactly as the encoded one would have; version 1 stored
/// neither, and a sampler decoded from it continues on [`resumed_stream`] with a fresh draw.
///
/// One exception: items whose keys tie (weights below about 1e-308, whose keys overflow to
/// +∞). Which of the tied items a later merge keeps depends on where they sit in memory, which
/// the encoding does not record, so a decoded sample may keep another of them. The encoding
/// itself is canonical (ties in the order of their items' bytes).
pub(crate) const VERSION: u8 = 2;

/// A bottom-k sample with its count of observed items and its random stream `(seed, stream)`.
#[derive(Clone, Debug)]
pub(crate) struct State<T> {
    pub(crate) sample: Bottom<T>,
    pub(crate) seen: u64,
    pub(crate) seed: u64,
    pub(crate) stream: u64,
    pub(crate) rng: Stream,
}

impl<T> State<T> {
    /// An empty state keeping `capacity` items; `capacity` must be in `1..=2^24` (`kept` is
    /// what the user asked for, `capacity` may be one more, for the priority sample).
    pub(crate) fn new(kept: usize, capacity: usize, seed: u64) -> Result<Self, ConfigError> {
        if !(1..=MAX_CAPACITY).contains(&kept) {
            return Err(ConfigError::new("capacity", kept, "an integer in 1..=2^24"));
        }
        Ok(Self::on_stream(capacity, seed, 0))
    }

    fn on_stream(capacity: usize, seed: u64, stream: u64) -> Self {
        Self { sample: Bottom::new(capacity), seen: 0, seed, stream, rng: Stream::new(seed, stream) }
    }

    /// The same state with each sampled item replaced by `f(item)`.
    pub(crate) fn map<U>(self, f: impl FnMut(T) -> U) -> State<U> {
        State { sample: self.sample.map(f), seen: self.seen, seed: self.seed, stream: self.stream, rng: self.rng }
    }

    /// The empty state of the same stream: the identity of `merge`.
    pub(crate) fn empty_like(&self) -> Self {
        Self::on_stream(self.sample.capacity(), self.seed, self.stream)
    }

    /// The empty state of part `index`, on a stream of its own.
    pub(crate) fn empty_part(&self, index: u64) -> Self {
        Self::on_stream(self.sample.capacity(), self.seed, part_stream(self.stream, self.seen, index))
    }

    /// Merges `other`'s sample and count in. Refuses different capacities, and two non-empty
    /// states of the same random stream: their items would have the same keys, position by
    /// position, and be kept or dropped together.
    pub(crate) fn merge(&mut self, other: &Self) -> Result<(), MergeError>
    where
        T: Clone,
    {
        MergeError::check("capacity", self.sample.capacity(), other.sample.capacity())?;
        if (self.seed, self.stream) == (other.seed, other.stream) && self.seen > 0 && other.seen > 0 {
            return Err(MergeError::new(
                "random stream",
                format!("seed {} stream {}", self.seed, self.stream),
                "the same (make parts with empty_part, or give them distinct seeds)",
            ));
        }
        if self.seen == 0 && other.seen > 0 {
            // An empty sampler merging a non-empty one becomes it, generator included: keeping
            // its own generator, restarted at the beginning of a stream, could replay draws the
            // other has made (an `empty_like` of it restarts its very stream).
            *self = other.clone();
            return Ok(());
        }
        self.sample.merge(&other.sample);
        self.seen = self.seen.saturating_add(other.seen);
        Ok(())
    }

    /// Whether two states hold the same configuration, count and sample (keys bit for bit);
    /// the generator's state, which decides only what happens next, is not compared.
    pub(crate) fn same(&self, other: &Self) -> bool
    where
        T: PartialEq,
    {
        (self.seed, self.stream, self.seen) == (other.seed, other.stream, other.seen) && self.sample == other.sample
    }

    /// The length of what [`encode`](Self::encode) writes.
    pub(crate) fn encoded_len(&self) -> usize
    where
        T: Item,
    {
        28 + Stream::ENCODED_LEN + self.sample.iter().map(|keyed| 8 + keyed.item.encoded_len()).sum::<usize>()
    }

    /// Writes seed (u64), stream (u64), seen (u64), the generator (its 32-byte state and its
    /// draw count, u64), the sample size (u32), then each key (f64) and item, smallest key
    /// first.
    pub(crate) fn encode(&self, w: &mut Writer)
    where
        T: Item,
    {
        w.put_u64(self.seed);
        w.put_u64(self.stream);
        w.put_u64(self.seen);
        self.rng.encode(w);
        let sorted = self.sample.sorted();
        w.put_u32(sorted.len() as u32);
        for group in sorted.chunk_by(|a, b| a.key.to_bits() == b.key.to_bits()) {
            if let [keyed] = group {
                w.put_f64(keyed.key);
                w.put_item(&keyed.item);
                continue;
            }
            // Equal keys (rare: +∞ from the tiniest weights, or a coincidence of draws) go in
            // the order of their items' bytes, so that one sample has one encoding.
            let mut items: Vec<Vec<u8>> = group
                .iter()
                .map(|keyed| {
                    let mut bytes = Vec::new();
                    keyed.item.encode(&mut bytes);
                    bytes
                })
                .collect();
            items.sort_unstable();
            for bytes in &items {
                w.put_f64(group[0].key);
                w.put_bytes(bytes);
            }
        }
    }

    /// Reads what [`encode`](Self::encode) wrote in format version `version`, for a sample of
    /// `capacity` items: exactly `min(seen, capacity)` entries, keys accepted by `valid`
    /// (which also sees the item) and in increasing order, entries of equal keys in increasing
    /// order of their items' bytes. Version 1 holds no generator: the decoded state then
    /// draws from a stream derived from its seed, stream and count.
    pub(crate) fn decode(
        r: &mut Reader<'_>,
        version: u8,
        capacity: usize,
        valid: impl Fn(f64, &T) -> bool,
    ) -> Result<Self, DecodeError>
    where
        T: Item,
    {
        let (seed, stream, seen) = (r.u64()?, r.u64()?, r.u64()?);
        let rng = if version >= 2 { Stream::decode(r)? } else { Stream::new(seed, resumed_stream(stream, seen)) };
        let mut state = Self::on_stream(capacity, seed, stream);
        state.seen = seen;
        state.rng = rng;
        let count = r.u32()? as usize;
        if count as u64 != seen.min(capacity as u64) {
            return Err(DecodeError::InvalidField {
                field: "sample size",
                reason: "not the smaller of the items seen and the capacity",
            });
        }
        // Each entry takes at least its 8-byte key: check before decoding any.
        r.expect_items(count, 8)?;
        let mut previous: (f64, &[u8]) = (f64::NEG_INFINITY, &[]);
        for _ in 0..count {
            let key = r.f64()?;
            let (item, bytes) = r.item_and_bytes::<T>()?;
            // Keys are never negative (nor −0): with `total_cmp` order, and ties in the order of
            // the items' bytes, the encoding is then the one `encode` writes, and a summary has
            // exactly one.
            let order = key.total_cmp(&previous.0).then_with(|| bytes.cmp(previous.1));
            if key.is_sign_negative() || !valid(key, &item) || order.is_lt() {
                return Err(DecodeError::InvalidField {
                    field: "keys",
                    reason: "out of range or not in increasing order",
                });
            }
            previous = (key, bytes);
            state.sample.offer(key, item);
        }
        Ok(state)
    }

    /// The encoding of a weighted sampler (family `family`) up to its pending draw, if it has
    /// one (`pending` more bytes, which the caller writes before `finish`): its capacity `k`
    /// as the user gave it (u32), the total weight (f64), then the state as
    /// [`encode`](Self::encode) writes it, each item followed by its weight.
    pub(crate) fn weighted_writer(&self, family: u8, capacity: usize, total_weight: f64, pending: usize) -> Writer
    where
        T: Item,
    {
        let mut w = Writer::versioned(family, VERSION, self.weighted_encoded_len() + pending);
        w.put_u32(capacity as u32);
        w.put_f64(total_weight);
        self.encode(&mut w);
        w
    }

    /// The length of what [`weighted_writer`](Self::weighted_writer) writes, envelope included
    /// and pending draw excluded.
    pub(crate) fn weighted_encoded_len(&self) -> usize
    where
        T: Item,
    {
        ENVELOPE_LEN + 12 + self.encoded_len()
    }

    /// Bytes of memory held by the sample entries.
    pub(crate) fn entry_bytes(&self) -> usize {
        self.sample.len() * std::mem::size_of::<(f64, T)>()
    }
}

/// The weighted samplers' state: items with their weights.
impl<U: Item> State<(U, f64)> {
    /// Reads what [`State::weighted_writer`] wrote in format version `version`: a capacity in
    /// `1..=2^24` (the sample keeps `capacity + extra` items), a finite total weight `>= 0`,
    /// and the state with keys accepted by `valid`. Returns the state and the total weight;
    /// the caller reads its pending draw and finishes the reader.
    pub(crate) fn decode_weighted(
        r: &mut Reader<'_>,
        version: u8,
        extra: usize,
        valid: impl Fn(f64, &(U, f64)) -> bool,
    ) -> Result<(Self, f64), DecodeError> {
        let capacity = r.u32()? as usize;
        let total_weight = r.f64()?;
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(DecodeError::InvalidField { field: "capacity", reason: "outside 1..=2^24" });
        }
        // (Not −0 either: a sum of positive weights from 0 is +0, and one state has one
        // encoding.)
        if !(total_weight >= 0.0 && total_weight.is_finite()) || total_weight.is_sign_negative() {
            return Err(DecodeError::InvalidField { field: "total weight", reason: "not a finite number ≥ 0" });
        }
        let state = State::decode(r, version, capacity + extra, valid)?;
        // The total is a sum of every weight seen, the sampled ones among them. Floating-point
        // sums of `n` terms are within `n·2^−53` of the truth, relatively (`n`: the items
        // seen, plus the sample's own sum); a saturated total is `f64::MAX`.
        let sampled = state.sample.iter().map(|keyed| keyed.item.1).sum::<f64>().min(f64::MAX);
        let terms = (state.seen as f64 + state.sample.len() as f64 + 2.0) * f64::EPSILON;
        if total_weight < sampled * (1.0 - terms) {
            return Err(DecodeError::InvalidField { field: "total weight", reason: "below the sampled weights" });
        }
        Ok((state, total_weight))
    }
}
