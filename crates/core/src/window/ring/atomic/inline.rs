//! The atomic ring's inline form: a ring made for a new key keeps its first slot in the ring's
//! header and allocates no slots until a hit needs a second one.
//!
//! Under key churn (per-IP traffic) most keys are hit once in their life, so a slot array
//! allocated at creation was an allocation, a zeroing and a free per key for one value. An
//! inline ring is the exact log's ring of `N` slots in which slots `1..N` are empty and cannot
//! be written: the same algorithm runs on it ([`InlineCells`]), slot 0 is a CAS on the
//! header's word, and an operation that would write any other slot (a second live hit, a
//! forced hit that must carry a dropped one) records nothing and answers `Err(Retired)` with
//! the slot still unsealed. The keyed limiter sees [`AtomicRing::needs_slots`] and replaces
//! the entry by one whose ring has its slots allocated and holds what the inline ring held,
//! slot for slot and with its cursor, so that it answers every later call as a ring allocated
//! from the start would have (out-of-order timestamps included: which expired slot a probe
//! takes depends on the layout). The replacement is the handshake that limit changes use
//! (seal for good, build, swap by pointer identity): no new concurrent step. A single-window
//! limit only; the raw API and layered limits always allocate.
//!
//! # Words of the header in each form
//! | word | allocated form | inline form |
//! |---|---|---|
//! | `slots` | the `N` slots and the words after them | empty (allocates nothing): marks the form |
//! | `window_ticks` | `W` | `W` |
//! | `blocked_until` | the refusal bound | slot 0's value (`EMPTY`, a tick + 1, or `SEALED`) |
//! | `cursor` | the probe hint | `N`, the capacity (written once) |
//! | `resort_generation` | the re-sort seqlock | the probe hint, 0 or 1 (an inline ring never re-sorts) |
//!
//! # Why the guarantees carry over
//! - **Never over-admits**: the inline ring is a ring of `N` slots whose slots past the first
//!   hold `EMPTY`; the pigeonhole argument of the parent module holds for it, and an admission
//!   that needs a slot past the first is not made here but on the allocated ring, which holds
//!   every hit the inline ring held (the replacement seals slot 0 first).
//! - **No refusal is lost**: an inline ring holds at most one hit, so for `N >= 2` it never
//!   refuses and never needs `blocked_until`; for `N = 1` a refusal rests on slot 0 alone
//!   (the bound is not kept: each refusal reads the slot).
//! - **Seals are for good**: with one slot a seal (a sweeper's or a replacement's) is never
//!   given back, so `SEALED` in slot 0 means retired, and a slot 0 not sealed after an
//!   `Err(Retired)` means the ring needs its slots.

use super::super::algorithm::{idle_from_newest, reserve, undo, RingTaken};
use super::super::{capacity_of, limit_of, slot_is_live, RingCells, EMPTY, SEALED};
use super::AtomicRing;
use crate::limit::Limit;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::window::state::{Carried, WindowState};
use crate::window::{InlineSlot, Retired};

impl AtomicRing {
    // Hidden: a hook for the tests and loom models (the keyed limiter makes its new keys'
    // rings inline; the raw API's rings are allocated); not part of the API a user builds on.
    #[doc(hidden)]
    /// An empty ring for `limit` (a single window) in the inline form (see the module docs).
    #[must_use]
    pub fn inline(limit: Limit) -> Self {
        debug_assert!(!limit.is_layered(), "one window per ring");
        let capacity = capacity_of(limit);
        Self {
            slots: Box::default(),
            window_ticks: limit.window_ticks(),
            blocked_until: AtomicU64::new(EMPTY),
            // `Limit` caps the capacity at 2^24: it fits.
            cursor: AtomicU32::new(capacity as u32),
            resort_generation: AtomicU32::new(0),
            #[cfg(all(debug_assertions, not(slidelimit_loom)))]
            lost_races: std::sync::atomic::AtomicU64::new(0),
            #[cfg(all(debug_assertions, not(slidelimit_loom)))]
            resorts: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether the ring is in the inline form: an allocated ring has at least its one slot
    /// and the words after it.
    #[inline]
    pub(super) fn is_inline(&self) -> bool {
        self.slots.is_empty()
    }

    /// The inline form's slot 0.
    #[inline]
    fn inline_slot(&self) -> &AtomicU64 {
        &self.blocked_until
    }

    /// The inline form's capacity (`N`).
    fn inline_capacity(&self) -> usize {
        // Relaxed: written before the ring was shared and never again.
        self.cursor.load(Ordering::Relaxed) as usize
    }

    /// Whether an operation that answered `Err(Retired)` did so because this inline ring
    /// needs its slots allocated (slot 0 is not sealed), not because it was retired.
    pub(super) fn needs_slots(&self) -> bool {
        // Relaxed: only chooses between growing and looking again; the replacement's seal
        // CAS is the handshake (an unsealed slot read here may be sealed by then: the
        // replacement then gives up and the caller looks again).
        self.is_inline() && self.inline_slot().load(Ordering::Relaxed) != SEALED
    }

    /// [`InlineCells`] over this (inline) ring.
    #[inline]
    pub(super) fn inline_cells(&self) -> InlineCells<'_> {
        InlineCells {
            slot: self.inline_slot(),
            cursor: self.inline_cursor(),
            capacity: self.inline_capacity(),
            window_ticks: self.window_ticks,
            outgrown: false,
        }
    }

    pub(super) fn inline_limit(&self) -> Limit {
        limit_of(self.inline_capacity(), self.window_ticks)
    }

    /// The inline ring's slot values: slot 0, then `EMPTY`s.
    pub(super) fn inline_slot_values(&self) -> Vec<u64> {
        let mut values = vec![EMPTY; self.inline_capacity()];
        // Acquire: pairs with the slot CASes, as every slot load.
        values[0] = self.inline_slot().load(Ordering::Acquire);
        values
    }

    fn inline_state(&self, values: Vec<u64>) -> WindowState {
        WindowState::from_slot_values(values, Carried::default(), self.window_ticks)
    }

    /// One load is one moment's content; `Err(Retired)` on a seal (always for good here).
    pub(super) fn inline_export(&self) -> Result<WindowState, Retired> {
        let values = self.inline_slot_values();
        if values[0] == SEALED {
            return Err(Retired);
        }
        Ok(self.inline_state(values))
    }

    /// The inline form's probe hint.
    fn inline_cursor(&self) -> &AtomicU32 {
        &self.resort_generation
    }

    /// Seals slot 0 for good (a replacement) and returns the state; `None` if it is sealed.
    pub(super) fn inline_seal_for_swap(&self) -> Option<WindowState> {
        let value = self.inline_seal()?;
        let mut values = vec![EMPTY; self.inline_capacity()];
        values[0] = value;
        Some(self.inline_state(values))
    }

    /// Seals slot 0 for good so that the ring can be replaced by its allocated form, and
    /// returns what that form needs; `None` if it is sealed (or not inline).
    pub(super) fn inline_seal_for_growth(&self) -> Option<InlineSlot> {
        if !self.is_inline() {
            return None;
        }
        let first = self.inline_seal()?;
        // Relaxed: a probe hint, as in the allocated form; a `hit` that raced the seal may
        // have moved it after its slot CAS, which only changes where a later probe starts.
        let cursor = self.inline_cursor().load(Ordering::Relaxed);
        Some(InlineSlot { first, cursor })
    }

    /// The allocated form of this inline ring, as [`Self::inline_seal_for_growth`] found it:
    /// slot 0 and the cursor as they were, every other slot empty, no bound, nothing
    /// carried (what an allocated ring holds after the same calls).
    pub(super) fn inline_grown(&self, outgrown: InlineSlot) -> Option<Self> {
        if !self.is_inline() {
            return None;
        }
        let ring = Self::new(self.inline_limit());
        // Relaxed (both): the ring is not shared yet; publishing it (the map's replacement)
        // orders this.
        ring.slots[0].store(outgrown.first, Ordering::Relaxed);
        ring.cursor.store(outgrown.cursor, Ordering::Relaxed);
        Some(ring)
    }

    /// CASes slot 0 to `SEALED` and returns the value it replaced; `None` if it is sealed.
    fn inline_seal(&self) -> Option<u64> {
        let slot = self.inline_slot();
        // Acquire: pairs with the writers' AcqRel CASes, so the value sealed includes the
        // hit behind it.
        let mut value = slot.load(Ordering::Acquire);
        loop {
            if value == SEALED {
                return None;
            }
            if cfg!(slidelimit_loom_mutant = "inline_seal_with_store") {
                // Deliberately broken for the loom negative control: load-then-store, so a
                // hit CASed into slot 0 between the two is in neither ring.
                // Relaxed: the mutant is wrong whatever the ordering.
                slot.store(SEALED, Ordering::Relaxed);
                break;
            }
            // Success AcqRel: Acquire orders the seal after the value it replaces; Release
            // publishes it to writers whose CAS fails on it. Failure Acquire: the value
            // found is judged like a fresh load.
            match slot.compare_exchange(value, SEALED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(found) => value = found,
            }
            crate::sync::retry_hint();
        }
        Some(value)
    }

    /// [`crate::window::AtomicWindow::try_seal`] on the inline form: seals slot 0 if its hit
    /// (if any) is expired for `horizon`.
    pub(super) fn inline_try_seal(&self, horizon: u64) -> Option<u64> {
        let slot = self.inline_slot();
        // Acquire: as in inline_seal.
        let mut value = slot.load(Ordering::Acquire);
        loop {
            if value == SEALED || slot_is_live(value, self.window_ticks, horizon) {
                return None;
            }
            if cfg!(slidelimit_loom_mutant = "seal_with_store") {
                // Deliberately broken for the loom negative control (the allocated form's
                // seal has the same twin): load-then-store, so a writer's CAS between the
                // two lands in a ring about to vanish.
                // Relaxed: the mutant is wrong whatever the ordering.
                slot.store(SEALED, Ordering::Relaxed);
                return Some(idle_from_newest(value, self.window_ticks));
            }
            // Success AcqRel, failure Acquire: as in inline_seal.
            match slot.compare_exchange(value, SEALED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(idle_from_newest(value, self.window_ticks)),
                Err(found) => value = found,
            }
            crate::sync::retry_hint();
        }
    }

    /// The first tick from which the inline ring is fresh (its hit's tick + `W`).
    pub(super) fn inline_fresh_from(&self) -> u64 {
        // Acquire: pairs with the slot CASes, as every slot load.
        idle_from_newest(
            self.inline_slot().load(Ordering::Acquire),
            self.window_ticks,
        )
    }

    pub(super) fn inline_reserve<const FINAL: bool>(
        &self,
        now: u64,
    ) -> Result<Option<RingTaken>, Retired> {
        reserve::<_, FINAL, RingTaken>(&mut self.inline_cells(), now)
    }

    pub(super) fn inline_undo(&self, taken: RingTaken) {
        undo(&mut self.inline_cells(), taken);
    }
}

/// The ring algorithm's view of an inline ring: `capacity` slots, slot 0 in the header, the
/// others `EMPTY`. A write to any other slot (or a carried count) marks the cells
/// `outgrown`: from then on every slot reads `SEALED` and every seal settles as `Retired`,
/// so the operation ends with `Err(Retired)` having recorded nothing.
pub(super) struct InlineCells<'a> {
    slot: &'a AtomicU64,
    cursor: &'a AtomicU32,
    capacity: usize,
    window_ticks: u64,
    outgrown: bool,
}

impl InlineCells<'_> {
    fn outgrow(&mut self) {
        self.outgrown = true;
    }
}

impl RingCells for InlineCells<'_> {
    const SEALABLE: bool = true;
    #[inline]
    fn capacity(&self) -> usize {
        self.capacity
    }
    #[inline]
    fn window_ticks(&self) -> u64 {
        self.window_ticks
    }
    #[inline]
    fn slot(&self, index: usize) -> u64 {
        if self.outgrown {
            SEALED
        } else if index == 0 {
            // Acquire: pairs with the AcqRel slot CASes, as in the allocated form.
            self.slot.load(Ordering::Acquire)
        } else {
            EMPTY
        }
    }
    #[inline]
    fn replace_slot(&mut self, index: usize, current: u64, new: u64) -> Result<(), u64> {
        if index != 0 || self.outgrown {
            if cfg!(slidelimit_loom_mutant = "inline_drops_second_hit") {
                // Deliberately broken for the loom negative control: answers as if the hit
                // were recorded, so the key's second hit is counted nowhere.
                return Ok(());
            }
            self.outgrow();
            return Err(SEALED);
        }
        // Success AcqRel, failure Acquire: as in the allocated form's slot CAS.
        self.slot
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }
    #[inline]
    fn cursor(&self) -> usize {
        // Relaxed: a probe-order hint, as in the allocated form.
        let index = self.cursor.load(Ordering::Relaxed) as usize;
        if index < self.capacity {
            index
        } else {
            0
        }
    }
    #[inline]
    fn set_cursor(&mut self, index: usize) {
        // Relaxed: as in the allocated form. index < capacity <= 2^24: it fits.
        self.cursor.store(index as u32, Ordering::Relaxed);
    }
    #[inline]
    fn blocked_until(&self) -> u64 {
        EMPTY
    }
    #[inline]
    fn raise_blocked_until(&mut self, _tick: u64) {
        // No bound is kept (see the module docs): a refusal reads slot 0 again.
    }
    fn carry_dropped(&mut self, _value: u64) {
        // The carried words are the allocated form's.
        self.outgrow();
    }
    fn publish_carried(&mut self, _index: usize, _value: u64) -> Result<(), Retired> {
        self.outgrow();
        Err(Retired)
    }
    #[inline]
    fn known_order(&self) -> Option<usize> {
        None
    }
    fn add_displacement(&mut self, slots: u64) -> u64 {
        // Every admission takes slot 0, probed first: no displacement, never a re-sort.
        slots
    }
    fn resort(&mut self) -> bool {
        false
    }
    #[inline]
    fn resort_generation(&self) -> u32 {
        0
    }
    fn settle_seal(&self, _index: usize) -> Result<(), Retired> {
        // Acquire: pairs with the seal CASes.
        if self.outgrown || self.slot.load(Ordering::Acquire) == SEALED {
            Err(Retired)
        } else {
            Ok(())
        }
    }
}
