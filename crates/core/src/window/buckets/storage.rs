//! The two storages the algorithm runs on: plain integers for use under a lock, and atomics
//! decided by CAS. Each implements the algorithm's cells; neither decides anything itself.
//!
//! # Atomic orderings
//! See the parent module: loads `Acquire`, CASes and `fetch_add`s `AcqRel`, `cleaned` raised
//! with `Release`; each site says which operation it pairs with.

use super::algorithm::{
    allowed, check_and_hit, fresh_from, hit, refuses_at_a_glance, snapshot, status, BucketCells,
};
use super::packed::low;
use super::{Geometry, RollingBuckets};
use crate::sync::{AtomicU64, Ordering};
use crate::window::{AtomicWindow, SequentialWindow, Status};

/// The rolling-bucket window in plain integers, for use under a lock.
#[derive(Clone, Debug)]
pub struct SequentialBuckets {
    pub(super) geometry: Geometry,
    pub(super) word: u64,
    pub(super) cleaned: u64,
    pub(super) buckets: Box<[u64]>,
}

impl SequentialBuckets {
    /// An empty window.
    #[must_use]
    pub fn new(window: RollingBuckets) -> Self {
        let geometry = window.geometry();
        Self {
            geometry,
            word: 0,
            cleaned: 0,
            buckets: vec![0; geometry.physical as usize].into_boxed_slice(),
        }
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
    fn bucket(&self, slot: usize) -> u64 {
        self.buckets[slot]
    }
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.buckets[slot], current);
        self.buckets[slot] = new;
        Ok(())
    }
    fn add_to_bucket(&mut self, slot: usize, n: u64) {
        self.buckets[slot] += n;
    }
    fn store_bucket(&mut self, slot: usize, value: u64) {
        self.buckets[slot] = value;
    }
}

impl SequentialWindow for SequentialBuckets {
    fn hit_n(&mut self, now: u64, n: u64) {
        hit(self, now, n);
    }
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        check_and_hit(self, now, n)
    }
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        allowed(self, now, n)
    }
    fn status(&self, now: u64) -> Status {
        status(self, now)
    }
    fn fresh_from(&self) -> u64 {
        fresh_from(self)
    }
}

/// The head word and `cleaned`, on a cache line of their own.
#[repr(align(64))]
#[derive(Debug)]
pub(super) struct Header {
    /// (head epoch | total), see the module docs.
    pub(super) word: AtomicU64,
    /// The full epoch whose recycling is complete; decodes the truncated epochs.
    pub(super) cleaned: AtomicU64,
}

/// The rolling-bucket window in atomics: every decision is a CAS on the head word, every
/// bucket update a CAS or `fetch_add` on its packed word; no lock.
#[derive(Debug)]
pub struct AtomicBuckets {
    pub(super) header: Header,
    geometry: Geometry,
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
            buckets: (0..geometry.physical).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// `(running total, sum of the bucket counts)`, for quiescent checks in tests and models:
    /// once no call is in flight the two are equal.
    #[must_use]
    pub fn quiescent_totals(&self) -> (u64, u64) {
        // Acquire: pairs with the AcqRel CASes and fetch_adds that wrote these words.
        let total = low(self.header.word.load(Ordering::Acquire));
        let counts = self
            .buckets
            .iter()
            .map(|bucket| low(bucket.load(Ordering::Acquire)))
            .sum();
        (total, counts)
    }

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
        // Acquire: pairs with the Release raise after a round of recycles (and the shift
        // CAS), so the word and bucket loads that follow see those recycles.
        self.header.cleaned.load(Ordering::Acquire)
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
        // Acquire: pairs with the AcqRel CASes on the word (advance, reserve, subtract).
        self.header.word.load(Ordering::Acquire)
    }
    #[inline]
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        // Success AcqRel: the one serialization point; Acquire sees the subtractions and
        // advances before it, Release publishes this reservation before the record that
        // follows. Failure Acquire: the value found is re-decided like a fresh load.
        self.header
            .word
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
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
    #[inline]
    fn hit_n(&self, now: u64, n: u64) {
        hit(&mut &*self, now, n);
    }
    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> bool {
        check_and_hit(&mut &*self, now, n)
    }
    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        allowed(&self, now, n)
    }
    fn status(&self, now: u64) -> Status {
        status(&self, now)
    }
    fn fresh_from(&self) -> u64 {
        fresh_from(&self)
    }
    #[inline]
    fn refuses_at_a_glance(&self, now: u64, n: u64) -> bool {
        refuses_at_a_glance(&self, now, n)
    }
}
