//! The life of a register sketch, one set of rules for [`HyperLogLog`](super::HyperLogLog),
//! [`UltraLogLog`](super::UltraLogLog) and [`ExaLogLog`](super::ExaLogLog): a new sketch is
//! *sparse*, an exact set of [entries](super::sparse), and turns *dense*, an array of
//! registers, when one more distinct entry arrives than its sparse form holds.
//!
//! ```text
//!   new ──► sparse: entries, the exact count ──(limit + 1 distinct entries)──► dense: registers
//!                                                                             martingale starts
//!                                                                             at the exact count
//! ```
//!
//! The rules, written once here for every register sketch ([`Lifecycle`]):
//!
//! * **Limit.** The sparse form holds at most [`limit`](Lifecycle::limit) entries, so that it
//!   never takes more bytes than the registers; a shape whose registers are too few for the
//!   smallest table, or too many for an entry to address, has none and is born dense.
//! * **Martingale start.** A sketch that turns dense while observing its own stream starts its
//!   martingale at the exact count; entries of another sketch (merges, reductions, decoding)
//!   turn it dense without one, because they are not a stream in its own order.
//! * **Merges.** The empty sketch is the identity on both sides (merged into, it becomes the
//!   other sketch, martingale and all). Otherwise entries merge as entries, a sparse side
//!   joins the registers of a dense one, two dense sides take their union, and a dense result
//!   has no martingale.
//! * **Reductions.** A sparse sketch's entries hold every coarser precision: its reduction is
//!   the coarse sketch of the same entries, without a martingale if that is dense.
//! * **Equality.** The same entries, or the same registers and the same martingale.
//!
//! Each type keeps its own registers and per-item path (HyperLogLog's byte ranks with their
//! running sums; the history registers' unseen mass): what a type implements is how an entry
//! reaches its registers and how two register arrays join.

use super::sparse::{self, Sparse};
use crate::codec::Reader;
use crate::core::{Bounds, Confidence, DecodeError};

/// A register sketch with a sparse mode. The required methods reach the type's own state;
/// the provided ones are the rules of the [module docs](self).
pub(crate) trait Lifecycle: Clone {
    /// The most entries the sparse form holds; 0 for a shape born dense.
    fn limit(&self) -> usize;

    /// The entries, while the sketch is sparse.
    fn sparse(&self) -> Option<&Sparse>;

    /// The entries, mutably, while the sketch is sparse.
    fn sparse_mut(&mut self) -> Option<&mut Sparse>;

    /// Turns the sparse sketch dense: registers holding what its entries hold, their
    /// aggregates counted, and `martingale`.
    fn densify(&mut self, martingale: Option<f64>);

    /// Applies one entry to the registers of a dense sketch: as an item of its own stream
    /// (`observed`: the martingale counts it, if there is one) or as one of another sketch's
    /// (not counted; the aggregates may wait for [`forget_history`](Self::forget_history)).
    fn apply_entry(&mut self, entry: u32, observed: bool);

    /// Joins the registers of `other` into these, both dense and of the same shape.
    fn union_registers(&mut self, other: &Self);

    /// After entries or registers of another sketch joined a dense sketch: its aggregates
    /// follow its registers again, and it has no martingale.
    fn forget_history(&mut self);

    /// The martingale estimate as it stands, while the sketch has one.
    fn martingale(&self) -> Option<f64>;

    /// Whether two dense sketches of the same shape hold the same registers.
    fn same_registers(&self, other: &Self) -> bool;

    /// Whether the sketch has seen nothing.
    fn is_empty(&self) -> bool;

    /// The exact count of distinct entries, while the sketch is sparse.
    fn exact(&self) -> Option<f64> {
        self.sparse().map(|s| s.len() as f64)
    }

    /// The bounds of a sparse sketch: its count, and the coincidences it may hide.
    fn sparse_bounds(&self, confidence: Confidence) -> Option<Bounds> {
        self.sparse().map(|s| sparse::bounds(s.len(), confidence))
    }

    /// Adds one entry, in either mode, turning the sketch dense past its limit.
    /// `observed`: an entry of the sketch's own stream, which the martingale counts.
    fn add_entry(&mut self, entry: u32, observed: bool) {
        let limit = self.limit();
        if let Some(sparse) = self.sparse_mut() {
            let Err(empty_slot) = sparse.find(entry) else { return };
            let count = sparse.len();
            if count < limit {
                sparse.insert_at(empty_slot, entry, limit);
                return;
            }
            // In a stream, the exact count so far starts the martingale, which then goes on
            // as usual.
            self.densify(observed.then_some(count as f64));
        }
        self.apply_entry(entry, observed);
    }

    /// Observes `hashes` while the sketch stays sparse (the caller goes on with the rest,
    /// dense): the updates of [`add_entry`](Self::add_entry) on each hash's `entry`, in order.
    /// In blocks of 64 whose entries are all computed before the first is inserted, so that
    /// the hashing of the next items does not wait behind a mispredicted probe of the table,
    /// and the table's insert can read the block's home slots ahead
    /// ([`Sparse::insert_while_room`](super::sparse::Sparse::insert_while_room)).
    /// Items of a block that arrive after the sketch turned dense take the dense path through
    /// `add_entry`.
    #[inline]
    fn observe_while_sparse(&mut self, hashes: &mut impl Iterator<Item = u64>, entry: impl Fn(u64) -> u32) {
        const BLOCK: usize = 64;
        let mut block = [0_u32; BLOCK];
        while self.sparse().is_some() {
            let mut filled = 0;
            for (slot, hash) in block.iter_mut().zip(&mut *hashes) {
                *slot = entry(hash);
                filled += 1;
            }
            let block = block.get(..filled).unwrap_or_default();
            let limit = self.limit();
            let inserted = self.sparse_mut().map_or(0, |sparse| sparse.insert_while_room(block, limit));
            block.iter().skip(inserted).for_each(|&e| self.add_entry(e, true));
            if filled < BLOCK {
                return;
            }
        }
    }

    /// Readies a sparse sketch for a batch of at least `items` items: one that could fill
    /// the sparse form gets its full table now (see [`Sparse::presize`]). The entries, and
    /// so every answer, stay those the items give.
    fn expect_items(&mut self, items: usize) {
        let limit = self.limit();
        if items > limit
            && let Some(sparse) = self.sparse_mut()
        {
            sparse.presize(limit);
        }
    }

    /// Merges a sketch of the same shape and seed (the callers check them).
    fn merge_same(&mut self, other: &Self) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.clone_from(other);
            return;
        }
        if let Some(theirs) = other.sparse() {
            theirs.entries().for_each(|entry| self.add_entry(entry, false));
        } else if self.sparse().is_some() {
            let ours = std::mem::replace(self, other.clone());
            if let Some(entries) = ours.sparse() {
                entries.entries().for_each(|entry| self.add_entry(entry, false));
            }
        } else {
            self.union_registers(other);
        }
        if self.sparse().is_none() {
            self.forget_history();
        }
    }

    /// `coarse`, the empty sketch of a coarser precision, with the entries of this sparse
    /// sketch. Entries hold every coarser precision, so this is the coarse sketch that saw
    /// the same items (without a martingale if it is dense).
    fn reduce_sparse(&self, mut coarse: Self) -> Self {
        if let Some(entries) = self.sparse() {
            entries.entries().for_each(|entry| coarse.add_entry(entry, false));
        }
        if coarse.sparse().is_none() && !coarse.is_empty() {
            coarse.forget_history();
        }
        coarse
    }

    /// Equality: the same entries, or the same registers and the same martingale, bit for bit.
    fn same_state(&self, other: &Self) -> bool {
        match (self.sparse(), other.sparse()) {
            (Some(ours), Some(theirs)) => ours.same_entries(theirs),
            (None, None) => {
                self.martingale().map(f64::to_bits) == other.martingale().map(f64::to_bits)
                    && self.same_registers(other)
            }
            _ => false,
        }
    }

    /// Reads the entries of a sparse encoding into this empty sparse sketch: plain (see
    /// [`sparse::decode_entries`]) or `coded` ([`sparse::decode_coded_entries`]).
    fn decode_entries(mut self, r: &mut Reader<'_>, coded: bool) -> Result<Self, DecodeError> {
        let limit = self.limit();
        let Some(set) = self.sparse_mut() else {
            return Err(DecodeError::InvalidField { field: "flags", reason: "this shape has no sparse mode" });
        };
        if coded {
            sparse::decode_coded_entries(r, limit, set)?
        } else {
            sparse::decode_entries(r, limit, set)?
        }
        Ok(self)
    }
}
