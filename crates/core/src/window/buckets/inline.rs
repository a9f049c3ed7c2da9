//! The atomic rolling buckets' inline form: a window made for a new key by the lock-free
//! limiter keeps its words in its header and allocates no bucket array until a call needs a
//! bucket other than its head's.
//!
//! Under key churn (per-IP traffic) most keys are hit at one epoch of their life and never
//! again, so the array built at creation (`NB` words tagged one by one) was an allocation, a
//! pass and a free per key for one count. A window created at `now` has its head and
//! `cleaned` at `now`'s epoch and every other bucket tagged with the epoch it stands for,
//! counts zero (`super::state::empty_words_at`); its calls at that same epoch only ever
//! reserve in the head word and record in the head's bucket. The inline form is that window
//! with the array left out:
//! - every bucket but the head's is computed from `cleaned` (`super::state::empty_bucket`);
//! - the head's bucket is computed too: its count *is* the running total. Every reservation
//!   the inline form admits is at the head's epoch, so all the weight it holds is in that one
//!   bucket, and recording it there has nothing left to do: no weight is ever "reserved but
//!   not yet recorded", and a sweeper's look reads one word;
//! - a call that would write anything else (a call at a later epoch, which advances the head
//!   and recycles; a late one still retained, which records in an older bucket) writes
//!   nothing and answers `Err(Retired)` with the window unsealed (the algorithm asks
//!   [`super::algorithm::BucketCells::head_bucket_only`] before any write).
//!
//! The algorithm runs on the inline form through its own cells, [`InlineCells`]; each
//! operation of the window picks the cells of its form once (`with_cells!` in
//! `storage.rs`), so the allocated form's bucket accesses never test the form.
//!
//! The keyed limiter then sees `needs_slots` and replaces the entry by one whose array is
//! allocated and holds exactly the words the inline form stood for: the replacement
//! handshake limit changes use (seal for good, build, swap by pointer identity), no new
//! concurrent step. The seal is the head word's `SEALED` bit, as a sweeper's: one CAS decides
//! who holds it, and from the seal on the total cannot move, so the grown window's words are
//! read from the sealed one. A single-window limit only; the raw API, layered limits and
//! restored windows always allocate.
//!
//! # Words in each form
//! | word | allocated form | inline form |
//! |---|---|---|
//! | `buckets` | the `NB` bucket words | empty (allocates nothing): marks the form |
//! | head word | head epoch, seal, total | the same; the head never moves |
//! | `cleaned` | recycling complete up to here | the head's epoch, never moves |
//! | bucket `slot(head)` | its word | computed: `pack(head, total)` |
//! | any other bucket | its word | computed: the epoch it stands for, count zero |
//!
//! # Why the guarantees carry over
//! - **Never over-admits**: the inline form is the allocated window at the same words, and
//!   its reservations are the same CAS on the same head word; an admission that needs any
//!   other write is not made here but on the grown window, which holds every unit of weight
//!   the inline one held (the total, in the head's bucket).
//! - **Exact growth**: the grown words are the words the inline form stood for, so the grown
//!   window answers every later call as a window allocated at creation would have.
//! - **Seals**: a sweeper's seal may be given back (its re-check found a write); a growth's
//!   seal is for good. `needs_slots` asks whether the window is inline and unsealed: after an
//!   `Err(Retired)` that a given-back seal caused it may also say yes, and the window grows
//!   one call early, which changes no answer.

use super::algorithm::BucketCells;
use super::packed::{decode, is_sealed, low, pack, SEALED};
use super::state::{buckets_with_head_only, empty_bucket};
use super::storage::{AtomicBuckets, Header};
use super::Geometry;
use crate::sync::{AtomicU64, Ordering};

/// The algorithm's cells on an inline window: the header's two words as in the allocated
/// form, every bucket computed (see the module docs). The algorithm stops every call that
/// would advance the head or write another bucket before its first write
/// ([`BucketCells::head_bucket_only`]), so the writes below that cannot happen say so.
pub(super) struct InlineCells<'a>(pub(super) &'a AtomicBuckets);

impl InlineCells<'_> {
    /// The head's epoch and slot: `cleaned`, which an inline window never moves.
    #[inline]
    fn head(&self) -> (u64, usize) {
        let head = self.0.header.cleaned();
        (head, self.0.geometry.slot(head))
    }
}

impl BucketCells for InlineCells<'_> {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.0.geometry
    }
    #[inline]
    fn cleaned(&self) -> u64 {
        self.0.header.cleaned()
    }
    fn raise_cleaned(&mut self, _epoch: u64) {
        unreachable!("an inline window never recycles: its head never moves")
    }
    fn shift_cleaned(&mut self, _current: u64, _new: u64) -> bool {
        unreachable!("an inline window never advances its head")
    }
    #[inline]
    fn word(&self) -> u64 {
        self.0.header.word()
    }
    #[inline]
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        self.0.header.replace_word(current, new)
    }
    #[inline]
    fn bucket(&self, slot: usize) -> u64 {
        let (head, head_slot) = self.head();
        if slot == head_slot {
            // The head's bucket counts the running total (the word's Acquire load pairs
            // with the reservations' AcqRel CASes).
            pack(head, low(self.word()))
        } else {
            empty_bucket(head, head_slot, slot, self.0.geometry.physical() as usize)
        }
    }
    fn replace_bucket(&mut self, _slot: usize, _current: u64, _new: u64) -> Result<(), u64> {
        unreachable!("an inline window replaces no bucket: its calls write the head word alone")
    }
    #[inline]
    fn add_to_bucket(&mut self, slot: usize, _n: u64) {
        // The head's bucket counts the total, which holds `n` since the reservation: nothing
        // is left to record.
        debug_assert_eq!(
            slot,
            self.head().1,
            "an inline window records in its head alone"
        );
    }
    fn store_bucket(&mut self, _slot: usize, _value: u64) {
        unreachable!("only a recycle stores, and an inline window never recycles")
    }
    #[inline]
    fn counts_only_in(&self) -> Option<usize> {
        Some(self.head().1)
    }
    #[inline]
    fn head_bucket_only(&self) -> bool {
        true
    }
}

impl AtomicBuckets {
    /// An empty window whose head is at `now`'s epoch, in the inline form (see the module
    /// docs): the words `super::state::empty_words_at` builds, with no array.
    pub(super) fn inline_at(geometry: Geometry, now: u64) -> Self {
        let head = geometry.epoch(now);
        Self {
            header: Header {
                word: AtomicU64::new(pack(head, 0)),
                cleaned: AtomicU64::new(head),
            },
            geometry,
            buckets: Box::default(),
        }
    }

    /// Whether the window is in the inline form (a window's array is never empty: `NB >= 2`).
    #[inline]
    pub(super) fn is_inline(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Every bucket word of an inline window whose head word is `word` and `cleaned`
    /// `cleaned` (read together), in slot order.
    pub(super) fn inline_words(
        &self,
        word: u64,
        cleaned: u64,
    ) -> impl Iterator<Item = u64> + 'static {
        let head = decode(word, cleaned, self.geometry.physical());
        buckets_with_head_only(self.geometry, head, low(word))
    }

    /// Seals an inline window for good so that [`Self::inline_grown`] can replace it; `None`
    /// if it is sealed already (a sweeper, a replacement) or not inline.
    pub(super) fn inline_seal_for_growth(&self) -> Option<()> {
        if !self.is_inline() {
            return None;
        }
        if cfg!(slidelimit_loom_mutant = "buckets_grow_without_seal") {
            // Deliberately broken for the loom negative control: grows from a look, so an
            // admission after it stays in the old window, lost with it.
            return (!is_sealed(self.header.word())).then_some(());
        }
        self.header.seal().then_some(())
    }

    /// The allocated window holding exactly the words this inline window, sealed by
    /// [`Self::inline_seal_for_growth`], stands for; `None` if it is not inline.
    pub(super) fn inline_grown(&self) -> Option<Self> {
        if !self.is_inline() {
            return None;
        }
        // Acquire (both): pair with the seal's AcqRel CAS and the reservations before it;
        // sealed, the words no longer move (an inline window subtracts nothing).
        let word = self.header.word.load(Ordering::Acquire) & !SEALED;
        let cleaned = self.header.cleaned.load(Ordering::Acquire);
        let buckets = self.inline_words(word, cleaned);
        Some(Self::from_word_iter(self.geometry, word, cleaned, buckets))
    }
}
