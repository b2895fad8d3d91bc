//! The state of a sketch with history registers, shared by [`UltraLogLog`](super::UltraLogLog)
//! and [`ExaLogLog`](super::ExaLogLog): the [registers](super::registers), the exact mass of
//! the values they know they have not seen, and the martingale; or, while few items have been
//! seen, the exact set of their [entries](super::sparse), under the rules of the
//! [lifecycle](super::lifecycle). The per-item path, merges, reductions and what the
//! estimators read of the registers are here; the estimators themselves are in
//! [`optimal`](super::optimal), the encoding in [`history_codec`](super::history_codec).

use super::estimators::{capped, pow2, wide_to_f64};
use super::lifecycle::Lifecycle;
use super::optimal;
use super::registers::{Cell, Shape, ULL_CHANGES, YOUNG_SHIFT, with_constants};
use super::sparse::{self, Sparse};
use super::tally::Tally;
use crate::core::{Bounds, Confidence, ConfigError, alloc};

/// The state both sketches share: the registers, the exact unseen mass, the martingale; or,
/// while few items have been seen, the exact set of their [sparse entries](super::sparse).
#[derive(Clone)]
pub(crate) struct Core<R> {
    pub(crate) shape: Shape,
    pub(crate) seed: u64,
    /// The registers; none while the sketch is sparse. The per-item path then finds the
    /// index out of range: the dense mode's bounds check is the sparse mode's test. (The call
    /// to the sparse path makes a loop of `observe` reload, for every item, whatever that call
    /// could change: [`Boxed`] keeps the shape and the seed out of its reach.)
    pub(crate) registers: Box<[R]>,
    /// The entries while the sketch is sparse; empty once it is dense.
    pub(crate) sparse: Sparse,
    /// `Σ change_fixed(r)` over the registers: `m · 2^64` times the probability that a new
    /// distinct item changes the sketch, and the `α` of the likelihood.
    pub(crate) unseen: u128,
    /// The martingale estimate, while the sketch has seen only its own stream.
    pub(crate) martingale: Option<f64>,
}

impl<R: Cell> Core<R> {
    /// The empty sketch: sparse where the shape has a sparse mode, dense otherwise.
    pub(crate) fn new(shape: Shape, seed: u64) -> Self {
        if Self::limit_of(shape) == 0 {
            return Self::new_dense(shape, seed);
        }
        let unseen = (shape.registers() as u128) << 64;
        Self { shape, seed, registers: Box::default(), sparse: Sparse::new(), unseen, martingale: None }
    }

    /// [`new`](Self::new) for a constructor: the registers a sketch holds once dense (up to
    /// 256 MiB, allocated now for a shape born dense, later for the others) are first checked
    /// to be allocatable (see [`alloc`]).
    pub(crate) fn try_new(shape: Shape, seed: u64) -> Result<Self, ConfigError> {
        alloc::check(shape.registers() * size_of::<R>(), "precision", shape.p)?;
        Ok(Self::new(shape, seed))
    }

    /// The empty sketch with its registers.
    pub(crate) fn new_dense(shape: Shape, seed: u64) -> Self {
        debug_assert!(R::FIXED.is_none_or(|(t, d)| (shape.t, shape.d) == (t, d)));
        let m = shape.registers();
        Self {
            shape,
            seed,
            registers: vec![R::default(); m].into_boxed_slice(),
            sparse: Sparse::new(),
            unseen: (m as u128) << 64,
            martingale: Some(0.0),
        }
    }

    /// The most entries the sparse mode of `shape` holds (0: it has none). Entries keep the
    /// index bits of precisions up to `26 − t`, and their table never takes more bytes than
    /// the registers.
    pub(crate) fn limit_of(shape: Shape) -> usize {
        if u32::from(shape.p) + u32::from(shape.t) > sparse::SPARSE_BITS {
            return 0;
        }
        sparse::limit(shape.registers() * size_of::<R>())
    }

    /// Whether the sketch is in its exact, sparse small-range mode.
    pub(crate) fn is_sparse(&self) -> bool {
        self.registers.is_empty()
    }

    /// The martingale estimate, if the sketch has one, at most
    /// [`MAX_ESTIMATE`](super::estimators::MAX_ESTIMATE).
    pub(crate) fn martingale_estimate(&self) -> Option<f64> {
        self.martingale.map(capped)
    }

    /// The bytes the state holds on the heap, held in a [`Boxed`]: the core itself, and the
    /// entry table or the registers.
    pub(crate) fn heap_bytes(&self) -> usize {
        size_of::<Self>() + self.sparse.heap_bytes() + self.registers.len() * size_of::<R>()
    }

    /// Observes a hash of a sparse sketch (the per-item path sends it here).
    #[cold]
    #[inline(never)]
    fn observe_sparse(&mut self, hash: u64) {
        self.add_entry(sparse::entry(hash, u32::from(self.shape.t)), true);
    }

    /// Sets the register of `entry` as a dense sketch that saw it, leaving `unseen` as it is.
    fn absorb_entry(&mut self, entry: u32) {
        let shape = self.shape;
        let (index, k) = sparse::entry_value(entry, u32::from(shape.p), u32::from(shape.t));
        if let Some(slot) = self.registers.get_mut(index) {
            *slot = R::put(shape.updated(slot.get(), k));
        }
    }

    /// The empty sketch of the same configuration.
    pub(crate) fn empty_like(&self) -> Self {
        Self::new(self.shape, self.seed)
    }

    /// Observes one hash. The shape's `t` and `d` reach the per-item code as constants for
    /// UltraLogLog and for ExaLogLog's default `(2, 20)` (see [`with_constants`]), and as
    /// variables otherwise. `shape` is this
    /// sketch's, read by the caller (see [`Boxed`]).
    #[inline(always)]
    pub(crate) fn observe_hash_as(&mut self, shape: Shape, hash: u64) {
        debug_assert_eq!(shape, self.shape);
        with_constants!(R, shape => self.observe_in(shape, hash); else self.observe_other(shape, hash));
    }

    /// [`observe_in`](Self::observe_in) for the shapes whose `t` and `d` are not constants, out
    /// of line: the per-item code of the others then stays small enough to be inlined into
    /// the caller's loop.
    #[inline(never)]
    fn observe_other(&mut self, shape: Shape, hash: u64) {
        self.observe_in(shape, hash);
    }

    /// Observes many hashes: the same updates as [`observe_hash_as`](Self::observe_hash_as) one by
    /// one. Once the sketch is dense, the loop has no sparse path, and the shape's constants are
    /// settled once for the whole batch. ExaLogLog's loop makes no call that reaches the
    /// sketch, so nothing in it can change the shape or move the registers: the compiler keeps
    /// them (and the caller's seed) in registers instead of reloading them for each item.
    #[inline]
    pub(crate) fn observe_hashes(&mut self, mut hashes: impl Iterator<Item = u64>) {
        self.expect_items(hashes.size_hint().0);
        let t = u32::from(self.shape.t);
        self.observe_while_sparse(&mut hashes, |hash| sparse::entry(hash, t));
        let shape = self.shape;
        with_constants!(R, shape => self.observe_dense(shape, hashes));
    }

    #[inline(always)]
    fn observe_dense(&mut self, shape: Shape, hashes: impl Iterator<Item = u64>) {
        // ExaLogLog's batch loop inlines its updates, which change a register for up to a
        // quarter of the items early in a stream, and its loop has room for them: faster early,
        // the same late. UltraLogLog's loop, whose updates are rarer, is faster with them out
        // of line, as in `observe`.
        let inline_update = R::FIXED.is_none();
        // The probability that the next item changes a register is the unseen mass over
        // `2^(64 + p)` (the martingale's increment is its inverse): young above `2^-YOUNG_SHIFT`.
        if inline_update || self.unseen >> (64 + u32::from(shape.p) - YOUNG_SHIFT) == 0 {
            for hash in hashes {
                let (index, k) = shape.locate(hash);
                self.observe_value(shape, index, k, inline_update);
            }
            return;
        }
        // A young UltraLogLog (see `YOUNG_SHIFT`): in blocks of 64 items, first the
        // branch-free test of each (does it change its register?), then the updates of those in
        // order. A register only learns, so an item that leaves the block's first registers as
        // they are leaves them after the block's earlier updates too; the others are tested
        // again as they come. The test loop's loads overlap even when the registers have left
        // the cache (a group's sketch under `GROUP BY`).
        let mut hashes = hashes;
        loop {
            let mut block = [0_u64; 64];
            let (mut len, mut changes) = (0, 0_u64);
            let registers = &self.registers[..];
            for (slot, hash) in block.iter_mut().zip(&mut hashes) {
                let (index, k) = shape.locate(hash);
                *slot = hash;
                let changes_it = registers.get(index).is_some_and(|&old| !Self::leaves(shape, old, k));
                changes |= u64::from(changes_it) << len;
                len += 1;
            }
            while changes != 0 {
                let (index, k) = shape.locate(block[changes.trailing_zeros() as usize]);
                changes &= changes - 1;
                self.observe_value(shape, index, k, false);
            }
            if len < block.len() {
                return;
            }
        }
    }

    /// Whether value `k` leaves register `old` as it is.
    #[inline(always)]
    fn leaves(shape: Shape, old: R, k: u32) -> bool {
        match R::FIXED {
            Some((0, 2)) => ULL_CHANGES[old.get() as usize & 255] >> k & 1 == 0,
            _ => shape.leaves(old.get(), k),
        }
    }

    #[inline(always)]
    fn observe_in(&mut self, shape: Shape, hash: u64) {
        let (index, k) = shape.locate(hash);
        if index >= self.registers.len() {
            return self.observe_sparse(hash);
        }
        self.observe_value(shape, index, k, false);
    }

    /// Observes value `k` at register `index`: the branch-free test, and the update for the
    /// few values that change the register, inlined or [out of line](Self::update).
    #[inline(always)]
    fn observe_value(&mut self, shape: Shape, index: usize, k: u32, inline_update: bool) {
        let Some(&old) = self.registers.get(index) else { return };
        if !Self::leaves(shape, old, k) {
            if inline_update { self.update_in(shape, index, k) } else { self.update(shape, index, k) }
        }
    }

    /// [`update_in`](Self::update_in) out of line, `shape`'s constants restored inside. The
    /// per-item code then stays small, and inlines into the caller's loop. Few items change a
    /// register (a few percent early in a stream, a quarter at most for ExaLogLog at high
    /// precisions, almost none later), so the call costs less than the larger loop would.
    #[cold]
    #[inline(never)]
    fn update(&mut self, shape: Shape, index: usize, k: u32) {
        with_constants!(R, shape => self.update_in(shape, index, k));
    }

    /// Applies value `k`, which changes it, to register `index`: the path of the items that
    /// reach a register's window (most early in a stream, few later). The martingale adds the
    /// inverse of the probability of a change (Horvitz–Thompson), then the unseen mass follows
    /// the register.
    #[inline(always)]
    fn update_in(&mut self, shape: Shape, index: usize, k: u32) {
        let Some(slot) = self.registers.get_mut(index) else { return };
        let old = slot.get();
        let d = u32::from(shape.d);
        let u = (old >> d) as u32;
        let (new, lost) = if k > u {
            let (raised, new) = (k - u, shape.raised(old, k));
            if (shape.t, shape.d) == (0, 2) {
                (new, shape.ull_lost(old, new))
            } else if u == 0 || raised > d {
                (new, shape.change_fixed(old) - shape.change_fixed(new))
            } else {
                // The maximum rose by `raised <= d` to k: the tail lost k and the values
                // between, which the new window holds unseen (a net loss of ρ_k alone), and
                // the window's lowest `raised` values fell out of it, the unseen ones with
                // their mass.
                let mut lost = u128::from(shape.rho_fixed(k));
                let mut dropped = !old & ((1 << raised) - 1);
                while dropped != 0 {
                    let j = dropped.trailing_zeros();
                    dropped &= dropped - 1;
                    // Bit j stands for value u + j − d, which exists from 1 on.
                    if u + j > d {
                        lost += u128::from(shape.rho_fixed(u + j - d));
                    }
                }
                (new, lost)
            }
        } else {
            // Value k, unseen in the window (`leaves` said so), became seen.
            debug_assert!(k < u && u - k <= d && old >> (d - (u - k)) & 1 == 0);
            (shape.marked(old, k), u128::from(shape.rho_fixed(k)))
        };
        *slot = R::put(new);
        if let Some(x) = &mut self.martingale {
            *x += pow2(64 + i32::from(shape.p)) / wide_to_f64(self.unseen);
        }
        self.unseen -= lost;
    }

    /// Recomputes the unseen mass from the registers: from a histogram of the states for
    /// one-byte registers, by a [`Tally`] for wider ones.
    pub(crate) fn recount(&mut self) {
        self.recount_from(None);
    }

    /// [`recount`](Self::recount), from the registers' [byte histogram](Self::byte_histogram)
    /// when the caller has it (one-byte registers only).
    pub(crate) fn recount_from(&mut self, histogram: Option<&[u32; 256]>) {
        let shape = self.shape;
        if self.is_sparse() {
            return;
        }
        self.unseen = if size_of::<R>() == 1 {
            let own;
            let histogram = match histogram {
                Some(histogram) => histogram,
                None => {
                    own = self.byte_histogram();
                    &own
                }
            };
            histogram
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(r, &n)| u128::from(n) * shape.change_fixed(r as u64))
                .sum()
        } else {
            self.tally().unseen_mass()
        };
    }

    /// How many registers hold each byte value (one-byte registers only).
    pub(crate) fn byte_histogram(&self) -> [u32; 256] {
        super::register_sums::histogram(&self.registers, |r| r.get() as usize & 255)
    }

    /// The number of (register, value) pairs known seen: each took a distinct item and a
    /// change of its own, a floor for any estimate and for the martingale.
    pub(crate) fn seen_pairs(&self) -> u64 {
        self.seen_pairs_from(None)
    }

    /// [`seen_pairs`](Self::seen_pairs), from the registers' byte histogram when the caller
    /// has it (one-byte registers only).
    pub(crate) fn seen_pairs_from(&self, histogram: Option<&[u32; 256]>) -> u64 {
        let mask = self.shape.history_mask();
        let pairs = |r: u64| if r == 0 { 0 } else { 1 + u64::from((r & mask).count_ones()) };
        match histogram {
            Some(histogram) => histogram.iter().enumerate().map(|(r, &n)| u64::from(n) * pairs(r as u64)).sum(),
            None => self.registers.iter().map(|r| pairs(r.get())).sum(),
        }
    }

    /// The counts of values known seen, level by level.
    pub(crate) fn seen_by_level(&self) -> Vec<u32> {
        if size_of::<R>() == 1 {
            // One-byte registers: count each state once, from a histogram of the bytes.
            let mut seen = vec![0u32; self.shape.levels()];
            let histogram = self.byte_histogram();
            for (r, &times) in histogram.iter().enumerate().filter(|&(_, &times)| times > 0) {
                self.shape.count_seen(r as u64, times, &mut seen);
            }
            seen
        } else {
            self.tally().seen_by_level()
        }
    }

    /// The [`Tally`] of the registers.
    fn tally(&self) -> Tally {
        Tally::new(self.shape, self.registers.iter().map(|r| r.get()))
    }

    /// The bias-corrected maximum-likelihood estimate from the registers (of a dense sketch).
    pub(crate) fn ml_estimate(&self) -> f64 {
        optimal::corrected_ml(self.shape, self.unseen, &self.seen_by_level())
    }

    /// Merges a sketch of the same `t`, `d` and seed (the callers check them), at the smaller
    /// of the two precisions: the finer sketch is reduced first, exactly.
    pub(crate) fn merge_reducing(&mut self, other: &Self) {
        let (ours, theirs) = (self.shape.p, other.shape.p);
        if theirs < ours {
            *self = self.reduce(theirs);
        }
        if theirs > ours { self.merge_same(&other.reduce(ours)) } else { self.merge_same(other) }
    }

    /// The relative standard error of the estimate as the sketch stands: the martingale's
    /// while it has one, maximum likelihood's otherwise.
    pub(crate) fn relative_standard_error(&self) -> f64 {
        let shape = self.shape;
        if self.is_sparse() {
            return 0.0;
        }
        let mvp = if self.martingale.is_some() { optimal::mvp_martingale(shape) } else { optimal::mvp_ml(shape) };
        optimal::relative_standard_error(mvp, shape)
    }

    /// `estimate · (1 ± z · relative standard error)`, its lower end raised to the number of
    /// (register, value) pairs known seen; the exact count while sparse.
    pub(crate) fn bounds(&self, estimate: f64, confidence: Confidence) -> Bounds {
        if let Some(bounds) = self.sparse_bounds(confidence) {
            return bounds;
        }
        Bounds::relative(estimate, self.relative_standard_error(), confidence, self.seen_pairs() as f64)
    }

    /// This sketch at precision `p` (at most its own): as if a sketch of that precision had
    /// seen the same items. The martingale does not carry over.
    pub(crate) fn reduce(&self, p: u8) -> Self {
        if p == self.shape.p {
            return self.clone();
        }
        let coarse = Shape { p, ..self.shape };
        if self.is_sparse() {
            return self.reduce_sparse(Self::new(coarse, self.seed));
        }
        let mut out = Self::new_dense(coarse, self.seed);
        let shift = self.shape.p - p;
        for (i, r) in self.registers.iter().enumerate() {
            let reduced = self.shape.reduced(r.get(), i, coarse);
            if let Some(slot) = out.registers.get_mut(i >> shift) {
                *slot = R::put(coarse.union(slot.get(), reduced));
            }
        }
        if out.is_empty() {
            return Self::new(coarse, self.seed);
        }
        out.recount();
        out.martingale = None;
        out
    }
}

impl<R: Cell> Lifecycle for Core<R> {
    fn limit(&self) -> usize {
        Self::limit_of(self.shape)
    }

    fn sparse(&self) -> Option<&Sparse> {
        self.is_sparse().then_some(&self.sparse)
    }

    fn sparse_mut(&mut self) -> Option<&mut Sparse> {
        self.is_sparse().then_some(&mut self.sparse)
    }

    fn densify(&mut self, martingale: Option<f64>) {
        let entries = std::mem::take(&mut self.sparse);
        self.registers = vec![R::default(); self.shape.registers()].into_boxed_slice();
        entries.entries().for_each(|entry| self.absorb_entry(entry));
        self.recount();
        self.martingale = martingale;
    }

    /// An observed entry takes the per-item path (the martingale, the unseen mass); another
    /// sketch's sets its register only, and leaves the unseen mass to
    /// [`forget_history`](Lifecycle::forget_history).
    fn apply_entry(&mut self, entry: u32, observed: bool) {
        if observed {
            let shape = self.shape;
            let (index, k) = sparse::entry_value(entry, u32::from(shape.p), u32::from(shape.t));
            self.observe_value(shape, index, k, false);
        } else {
            self.absorb_entry(entry);
        }
    }

    fn union_registers(&mut self, other: &Self) {
        R::union_all(self.shape, &mut self.registers, &other.registers);
    }

    fn forget_history(&mut self) {
        self.recount();
        self.martingale = None;
    }

    fn martingale(&self) -> Option<f64> {
        self.martingale
    }

    fn same_registers(&self, other: &Self) -> bool {
        self.registers == other.registers
    }

    fn is_empty(&self) -> bool {
        match self.sparse() {
            Some(entries) => entries.len() == 0,
            None => self.registers.iter().all(|r| r.get() == 0),
        }
    }
}

/// A [`Core`] on the heap, its shape and seed copied beside the pointer. A loop of `observe`
/// reads the shape and the seed from here; the only calls the per-item path makes (into the
/// sparse mode) get the heap `Core`, which cannot reach this copy, so the compiler keeps shape
/// and seed in registers across items instead of reloading them, and the seed-dependent part
/// of the hash with them.
#[derive(Clone)]
pub(crate) struct Boxed<R> {
    pub(crate) shape: Shape,
    pub(crate) seed: u64,
    core: Box<Core<R>>,
}

impl<R: Cell> Boxed<R> {
    pub(crate) fn new(core: Core<R>) -> Self {
        Self { shape: core.shape, seed: core.seed, core: Box::new(core) }
    }

    /// See [`Core::observe_hash_as`].
    #[inline(always)]
    pub(crate) fn observe_hash(&mut self, hash: u64) {
        self.core.observe_hash_as(self.shape, hash);
    }

    /// See [`Core::observe_hashes`].
    #[inline]
    pub(crate) fn observe_hashes(&mut self, hashes: impl Iterator<Item = u64>) {
        self.core.observe_hashes(hashes);
    }

    /// See [`Core::merge_same`].
    pub(crate) fn merge_same(&mut self, other: &Self) {
        self.core.merge_same(&other.core);
    }

    /// See [`Core::merge_reducing`]: the precision may fall.
    pub(crate) fn merge_reducing(&mut self, other: &Self) {
        self.core.merge_reducing(&other.core);
        self.shape = self.core.shape;
    }
}

impl<R: Cell> PartialEq for Boxed<R> {
    /// The same configuration and [state](Lifecycle::same_state): the entries, or the
    /// registers and the martingale, on which every answer depends. (An empty sketch of a
    /// shape is always the same one, sparse or born dense with its martingale at 0, whatever
    /// made it.)
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.seed == other.seed && self.core.same_state(&other.core)
    }
}

impl<R> std::ops::Deref for Boxed<R> {
    type Target = Core<R>;
    fn deref(&self) -> &Core<R> {
        &self.core
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cardinality::registers::tests::{SHAPES, splitmix};

    #[test]
    fn the_unseen_mass_follows_the_registers() {
        /// Item by item and in batches (whose updates are inlined for `u32` cells, out of
        /// line for `u8`), the unseen mass stays the recount of the registers.
        fn check<R: Cell>(shape: Shape, state: &mut u64) {
            let (mut one, mut batch) = (Core::<R>::new(shape, 0), Core::<R>::new(shape, 0));
            for i in 0..200_u64 {
                let hashes: Vec<u64> = (0..100).map(|j| splitmix(state) >> ((i + j) % 7)).collect();
                hashes.iter().for_each(|&h| one.observe_hash_as(shape, h));
                batch.observe_hashes(hashes.into_iter());
                for core in [&one, &batch] {
                    let mut fresh = core.clone();
                    fresh.recount();
                    assert_eq!(core.unseen, fresh.unseen, "{shape:?} after {} items", 100 * (i + 1));
                }
                assert_eq!(one.unseen, batch.unseen, "{shape:?} after {} items", 100 * (i + 1));
            }
        }
        let mut state = 11;
        for shape in SHAPES.into_iter().chain([Shape { p: 4, t: 0, d: 26 }, Shape { p: 3, t: 4, d: 0 }]) {
            check::<u32>(shape, &mut state);
            if (shape.t, shape.d) == (0, 2) {
                check::<u8>(shape, &mut state);
            }
        }
    }
}
