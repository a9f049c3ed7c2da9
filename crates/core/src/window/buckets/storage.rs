//! The two storages the algorithm runs on: plain integers for use under a lock, and atomics
//! decided by CAS. Each implements the algorithm's cells; neither decides anything itself.
//!
//! # Atomic orderings
//! See the parent module: loads `Acquire`, CASes and `fetch_add`s `AcqRel`, `cleaned` raised
//! with `Release`; each site says which operation it pairs with.

use super::algorithm::{
    allowed, check_and_hit, commit, hit, idle_from, is_idle_by, reserve, snapshot, status,
    surely_live_by, undo, BucketCells, BucketsTaken,
};
use super::by_use::BucketsByUse;
use super::inline::InlineCells;
use super::packed::{is_sealed, low, pack, SEALED};
use super::state::export_words;
use super::{Geometry, RollingBuckets};
use crate::limit::Limit;
use crate::sync::{retry_hint, AtomicU64, Ordering};
use crate::window::layers::{AtomicLayer, SequentialLayer};
use crate::window::state::WindowState;
use crate::window::{never_sealed, AtomicWindow, Retired, SequentialWindow, Status};

/// The rolling-bucket window in plain integers, for use under a lock. Its buckets are stored
/// by use (`window/buckets/by_use.rs`): a window that has counted only in its head's bucket
/// allocates nothing.
#[derive(Clone, Debug)]
pub struct SequentialBuckets {
    pub(super) geometry: Geometry,
    pub(super) word: u64,
    pub(super) cleaned: u64,
    buckets: BucketsByUse,
}

impl SequentialBuckets {
    /// An empty window.
    #[must_use]
    pub fn new(window: RollingBuckets) -> Self {
        // An empty window is the one created at tick 0: head, `cleaned` and every word 0.
        Self::empty_at(window.geometry(), 0)
    }

    /// An empty window whose head has moved to `now`'s epoch (see
    /// [`super::state::empty_words_at`], the words this stands for).
    pub(super) fn empty_at(geometry: Geometry, now: u64) -> Self {
        let head = geometry.epoch(now);
        Self {
            geometry,
            word: pack(head, 0),
            cleaned: head,
            buckets: BucketsByUse::fresh(head, geometry.slot(head)),
        }
    }

    pub(super) fn from_words(
        geometry: Geometry,
        word: u64,
        cleaned: u64,
        buckets: Vec<u64>,
    ) -> Self {
        Self {
            geometry,
            word,
            cleaned,
            buckets: BucketsByUse::from_words(buckets),
        }
    }

    /// The number of physical buckets, as an index bound.
    #[inline]
    fn physical(&self) -> usize {
        self.geometry.physical() as usize
    }

    /// Whether the bucket array is allocated (for the tests).
    #[cfg(test)]
    pub(super) fn buckets_allocated(&self) -> bool {
        self.buckets.is_allocated()
    }

    /// Every bucket word, in slot order (for the tests).
    #[cfg(test)]
    pub(super) fn bucket_words(&self) -> Vec<u64> {
        self.buckets.to_vec(self.physical())
    }
}

impl BucketCells for SequentialBuckets {
    fn geometry(&self) -> Geometry {
        self.geometry
    }
    fn cleaned(&self) -> u64 {
        self.cleaned
    }
    fn raise_cleaned(&mut self, epoch: u64) {
        self.cleaned = self.cleaned.max(epoch);
    }
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool {
        debug_assert_eq!(self.cleaned, current);
        self.cleaned = new;
        true
    }
    fn word(&self) -> u64 {
        self.word
    }
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.word, current);
        self.word = new;
        Ok(())
    }
    #[inline]
    fn bucket(&self, slot: usize) -> u64 {
        self.buckets.get(slot, self.physical())
    }
    #[inline]
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.bucket(slot), current);
        let physical = self.physical();
        self.buckets.set(slot, physical, new);
        Ok(())
    }
    #[inline]
    fn add_to_bucket(&mut self, slot: usize, n: u64) {
        let physical = self.physical();
        self.buckets.add(slot, physical, n);
    }
    fn store_bucket(&mut self, slot: usize, value: u64) {
        let physical = self.physical();
        self.buckets.set(slot, physical, value);
    }
    #[inline]
    fn counts_only_in(&self) -> Option<usize> {
        self.buckets.counts_only_in()
    }
}

impl SequentialWindow for SequentialBuckets {
    fn hit_n(&mut self, now: u64, n: u64) {
        never_sealed(hit(self, now, n));
    }
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        never_sealed(check_and_hit(self, now, n))
    }
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        never_sealed(allowed(self, now, n))
    }
    fn status_n(&self, now: u64, n: u64) -> Status {
        never_sealed(status(self, now, n))
    }
    fn limit(&self) -> Limit {
        self.geometry.limit()
    }
    fn export(&self) -> WindowState {
        let buckets = self.buckets.to_vec(self.physical());
        export_words(self.geometry, self.word, self.cleaned, &buckets)
    }
    fn idle_from(&self) -> u64 {
        idle_from(self)
    }
    fn is_idle_by(&self, horizon: u64) -> bool {
        is_idle_by(self, horizon)
    }
}

/// The head word and `cleaned`. Not padded to a cache line: in the lock-free limiter the
/// header shares the key map's node with the key, so one line brings both.
#[derive(Debug)]
pub(super) struct Header {
    /// (head epoch | total), see the module docs.
    pub(super) word: AtomicU64,
    /// The full epoch whose recycling is complete; decodes the truncated epochs.
    pub(super) cleaned: AtomicU64,
}

impl Header {
    /// `cleaned`, as the algorithm's cells read it (both forms).
    #[inline]
    pub(super) fn cleaned(&self) -> u64 {
        // Acquire: pairs with the Release raise after a round of recycles (and the shift
        // CAS), so the word and bucket loads that follow see those recycles.
        self.cleaned.load(Ordering::Acquire)
    }

    /// The head word, as the algorithm's cells read it (both forms).
    #[inline]
    pub(super) fn word(&self) -> u64 {
        // Acquire: pairs with the AcqRel CASes on the word (advance, reserve, subtract).
        self.word.load(Ordering::Acquire)
    }

    /// Sets the head word's seal for good, whatever the window holds (a replacement's seal:
    /// a limit change, a restore, a growth); false if someone else holds it.
    pub(super) fn seal(&self) -> bool {
        // Acquire: pairs with the AcqRel CASes on the word, like every head load.
        let mut word = self.word.load(Ordering::Acquire);
        while !is_sealed(word) {
            match self.word.compare_exchange(
                word,
                word | SEALED,
                // AcqRel: Acquire orders the seal after every reservation CAS before it (the
                // replacement reads their total); Release publishes it to their head CASes.
                Ordering::AcqRel,
                // Acquire: the word found is judged like a fresh head load.
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(found) => {
                    word = found;
                    retry_hint();
                }
            }
        }
        false
    }

    /// The CAS on the head word (both forms).
    #[inline]
    pub(super) fn replace_word(&self, current: u64, new: u64) -> Result<(), u64> {
        // Success AcqRel: the one serialization point; Acquire sees the subtractions and
        // advances before it, Release publishes this reservation before the record that
        // follows. Failure Acquire: the value found is re-decided like a fresh load.
        self.word
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }
}

/// Runs `$body` with `$cells` bound to the algorithm's cells for `$window`'s form: its bucket
/// array, or the inline form's computed words (`inline.rs`). One test of the form per
/// operation, so no bucket access in either form tests it.
macro_rules! with_cells {
    ($window:expr, |$cells:ident| $body:expr) => {
        if $window.is_inline() {
            #[allow(unused_mut)]
            let mut $cells = InlineCells($window);
            $body
        } else {
            #[allow(unused_mut)]
            let mut $cells = $window;
            $body
        }
    };
}

/// The rolling-bucket window in atomics: every decision is a CAS on the head word, every
/// bucket update a CAS or `fetch_add` on its packed word; no lock.
///
/// A window the lock-free limiter makes for a new key starts in an inline form, its bucket
/// array not yet allocated (`window/buckets/inline.rs`).
#[derive(Debug)]
pub struct AtomicBuckets {
    pub(super) header: Header,
    pub(super) geometry: Geometry,
    /// The `NB` bucket words; empty in the inline form.
    pub(super) buckets: Box<[AtomicU64]>,
}

impl AtomicBuckets {
    /// An empty window.
    #[must_use]
    pub fn new(window: RollingBuckets) -> Self {
        let geometry = window.geometry();
        Self {
            header: Header {
                word: AtomicU64::new(0),
                cleaned: AtomicU64::new(0),
            },
            geometry,
            buckets: (0..geometry.physical())
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    pub(super) fn from_words(geometry: Geometry, word: u64, cleaned: u64, buckets: &[u64]) -> Self {
        Self::from_word_iter(geometry, word, cleaned, buckets.iter().copied())
    }

    pub(super) fn from_word_iter(
        geometry: Geometry,
        word: u64,
        cleaned: u64,
        buckets: impl Iterator<Item = u64>,
    ) -> Self {
        Self {
            header: Header {
                word: AtomicU64::new(word),
                cleaned: AtomicU64::new(cleaned),
            },
            geometry,
            buckets: buckets.map(AtomicU64::new).collect(),
        }
    }

    /// Every word, `cleaned` first, then the head word, then the buckets.
    fn collect(&self, into: &mut Vec<u64>) {
        into.clear();
        // Acquire (every load): pairs with the Release and AcqRel writes of these words, so
        // the values read include the reservations and recycles behind them.
        into.push(self.header.cleaned.load(Ordering::Acquire));
        into.push(self.header.word.load(Ordering::Acquire));
        if self.is_inline() {
            into.extend(self.inline_words(into[1], into[0]));
            return;
        }
        into.extend(
            self.buckets
                .iter()
                .map(|bucket| bucket.load(Ordering::Acquire)),
        );
    }

    /// Collects every word until two collects in a row agree, and exports what they read.
    /// Every word only moves forward (epochs and counts grow, `cleaned` grows; the total
    /// falls only with a recycle, which changes a bucket's tag for good), so two equal
    /// collects read one moment's state. With `sealed_by_caller`, the caller holds the
    /// seal; otherwise a seal met means retired.
    fn export_stable(&self, sealed_by_caller: bool) -> Result<WindowState, Retired> {
        let (mut first, mut second) = (Vec::new(), Vec::new());
        self.collect(&mut first);
        loop {
            if !sealed_by_caller && is_sealed(first[1]) {
                return Err(Retired);
            }
            self.collect(&mut second);
            if first == second {
                let word = first[1] & !SEALED;
                return Ok(export_words(self.geometry, word, first[0], &first[2..]));
            }
            std::mem::swap(&mut first, &mut second);
            retry_hint();
        }
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// `(running total, sum of the bucket counts)`, for quiescent checks in tests and models:
    /// once no call is in flight the two are equal.
    #[must_use]
    pub fn quiescent_totals(&self) -> (u64, u64) {
        // Acquire: pairs with the AcqRel CASes and fetch_adds that wrote these words.
        let total = low(self.header.word.load(Ordering::Acquire));
        if self.is_inline() {
            // The head's bucket counts the total (see `inline.rs`).
            return (total, total);
        }
        let counts = self
            .buckets
            .iter()
            .map(|bucket| low(bucket.load(Ordering::Acquire)))
            .sum();
        (total, counts)
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// `(head epoch, cleaned epoch)`, full width, for quiescent checks in tests and models:
    /// once no call is in flight recycling is complete and the two are equal.
    #[must_use]
    pub fn quiescent_epochs(&self) -> (u64, u64) {
        let snap = snapshot(&self);
        (snap.head, snap.cleaned)
    }
}

impl BucketCells for &AtomicBuckets {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }
    #[inline]
    fn cleaned(&self) -> u64 {
        self.header.cleaned()
    }
    #[inline]
    fn raise_cleaned(&mut self, epoch: u64) {
        // Release: publishes the recycles (and their subtractions) of this round to every
        // caller that loads `cleaned` before the head word; fetch_max keeps it monotone.
        self.header.cleaned.fetch_max(epoch, Ordering::Release);
    }
    #[inline]
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool {
        // Success AcqRel: Acquire orders the shift after the head word it was decided on,
        // Release publishes it like a raise. Failure Relaxed: the caller re-reads everything.
        self.header
            .cleaned
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
    #[inline]
    fn word(&self) -> u64 {
        self.header.word()
    }
    #[inline]
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        self.header.replace_word(current, new)
    }
    #[inline]
    fn bucket(&self, slot: usize) -> u64 {
        // Acquire: pairs with the records' and recycles' AcqRel writes of this bucket.
        self.buckets[slot].load(Ordering::Acquire)
    }
    #[inline]
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64> {
        // Success AcqRel: a recycle's Acquire pairs with the Release of every record it
        // clears, so its subtraction follows their reservations in the word's order; a
        // record's Release publishes its reservation to that recycler. Failure Acquire: the
        // value found is re-decided like a fresh load.
        self.buckets[slot]
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }
    #[inline]
    fn add_to_bucket(&mut self, slot: usize, n: u64) {
        // AcqRel: the Release is essential (a recycler that clears this weight must
        // happen-after its reservation); see `replace_bucket`.
        self.buckets[slot].fetch_add(n, Ordering::AcqRel);
    }
    fn store_bucket(&mut self, slot: usize, value: u64) {
        // Only the split-tag-count mutant stores; it is wrong whatever the ordering.
        self.buckets[slot].store(value, Ordering::Release);
    }
}

impl AtomicWindow for AtomicBuckets {
    type Outgrown = ();

    #[inline]
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired> {
        with_cells!(self, |cells| hit(&mut cells, now, n))
    }
    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        with_cells!(self, |cells| check_and_hit(&mut cells, now, n))
    }
    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        with_cells!(self, |cells| allowed(&cells, now, n))
    }
    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired> {
        with_cells!(self, |cells| status(&cells, now, n))
    }
    fn limit(&self) -> Limit {
        self.geometry.limit()
    }
    fn export(&self) -> Result<WindowState, Retired> {
        // Writers move the words on every admission; the collects settle between them
        // (a hot key's writers rarely keep every one of a few words moving for long).
        self.export_stable(false)
    }
    fn seal_for_swap(&self) -> Option<WindowState> {
        if !self.header.seal() {
            return None;
        }
        // Sealed for good: no reservation or advance can start; records and recycles in
        // flight finish, and the collects settle once they have.
        self.export_stable(true).ok()
    }
    fn fresh_from_hint(&self) -> u64 {
        AtomicLayer::fresh_from(self)
    }
    fn needs_slots(&self) -> bool {
        // Acquire: pairs with the seals' AcqRel CASes, like every head load.
        self.is_inline() && !is_sealed(self.header.word.load(Ordering::Acquire))
    }
    fn seal_for_growth(&self) -> Option<()> {
        self.inline_seal_for_growth()
    }
    fn grown(&self, (): ()) -> Option<Self> {
        self.inline_grown()
    }
    fn try_seal(&self, horizon: u64) -> Option<u64> {
        // A look first: most windows a sweep visits are live, and this changes nothing. The
        // head's bucket first, then every bucket (an inline window's look reads its header
        // alone: the first step would only read it twice).
        let looked = with_cells!(self, |cells| {
            if !cells.head_bucket_only() && surely_live_by(&cells, horizon) {
                return None;
            }
            idle_from(&cells)
        });
        if looked > horizon {
            return None;
        }
        // Acquire: pairs with the AcqRel CASes on the word, like every head load.
        let word = self.header.word.load(Ordering::Acquire);
        if is_sealed(word) {
            return None;
        }
        // Success AcqRel: Acquire makes every reservation and subtraction ordered before
        // the seal visible to the re-check below; Release publishes the seal to the writers
        // whose head CAS fails on it. Failure Relaxed: the window changed since the look;
        // it is simply not removed this time.
        self.header
            .word
            .compare_exchange(word, word | SEALED, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        if cfg!(slidelimit_loom_mutant = "buckets_seal_without_recheck") {
            // Deliberately broken for the loom negative control: trusts the look, so a
            // reservation between the look and the seal is lost with the window, and the
            // watermark stops short of it.
            return Some(looked);
        }
        // Sealed: no reservation or head advance can happen any more, so this judges every
        // admission there will ever be in this window (one still being recorded, or a
        // recycle not yet subtracted, reads as in flight: u64::MAX).
        let idle_from = AtomicLayer::fresh_from(self);
        if idle_from > horizon {
            // AcqRel: Release hands the window back to the writers that wait on the seal
            // (their snapshot's Acquire load pairs with it); an RMW, so a subtraction that
            // raced the seal keeps its total.
            self.header.word.fetch_and(!SEALED, Ordering::AcqRel);
            return None;
        }
        Some(idle_from)
    }
}

impl SequentialLayer for SequentialBuckets {
    type Taken = BucketsTaken;
    fn reserve(&mut self, now: u64, n: u64, _final_window: bool) -> Option<BucketsTaken> {
        never_sealed(reserve(self, now, n))
    }
    fn commit(&mut self, taken: BucketsTaken) {
        commit(self, taken);
    }
    fn undo(&mut self, taken: BucketsTaken) {
        undo(self, taken);
    }
}

impl AtomicLayer for AtomicBuckets {
    type Taken = BucketsTaken;
    fn reserve(
        &self,
        now: u64,
        n: u64,
        _final_window: bool,
    ) -> Result<Option<BucketsTaken>, Retired> {
        with_cells!(self, |cells| reserve(&mut cells, now, n))
    }
    fn commit(&self, taken: BucketsTaken) {
        with_cells!(self, |cells| commit(&mut cells, taken));
    }
    fn undo(&self, taken: BucketsTaken) {
        with_cells!(self, |cells| undo(&mut cells, taken));
    }
    fn fresh_from(&self) -> u64 {
        with_cells!(self, |cells| idle_from(&cells))
    }
}
