//! The exact log in atomics: admissions are CASes on slots, never a lock; a sweeper removes
//! a ring by sealing its slots ([`seal`]); a re-sort puts the values back in time order under
//! a seal of its own ([`resort`]); a new key's ring keeps its first slot inline ([`inline`]).

mod inline;
mod resort;
mod seal;

use super::algorithm::{
    allowed, check_and_hit, hit, idle_from_newest, reserve, status, undo, RingTaken,
};
use super::{capacity_of, limit_of, slot_is_live, RingCells, EMPTY, SEALED};
use crate::sync::{retry_hint, AtomicU32, AtomicU64, Ordering};
use crate::window::layers::AtomicLayer;
use crate::window::state::Carried;
use crate::window::state::WindowState;
use crate::window::{AtomicWindow, InlineSlot, Retired, Status};

/// Words after the slots: the displacement, the carried hits' tick and their count.
const AFTER_SLOTS: usize = 3;
use crate::limit::Limit;

/// The exact log in atomics: admissions are CASes on slots, never a lock.
///
/// The header is what the decision reads before its slot: the slots' address and length,
/// the window length, the cursor and `blocked_until`, plus the re-sort generation that only
/// slow paths read (40 bytes, no padding: it shares the key map's node with the key, so one
/// line brings both).
#[derive(Debug)]
pub struct AtomicRing {
    /// `max_requests` slots, then [`AFTER_SLOTS`] words more: the displacement counted since
    /// the last re-sort (read and written by slow admissions only, so it stays out of the
    /// header, which has no room left; see [`AtomicRing::slots`]), then the carried hits'
    /// tick and count (see [`Carried`]; written before the ring is shared, read only when it
    /// is exported).
    slots: Box<[AtomicU64]>,
    window_ticks: u64,
    /// Every call below this tick is refused: a bound derived from slot values read.
    blocked_until: AtomicU64,
    /// Index of the slot to probe first (in order, the oldest). A hint only. `u32`: the
    /// capacity is at most 2^24 (`Limit` caps it).
    cursor: AtomicU32,
    /// The re-sort seqlock: odd while a re-sort holds the slots sealed. See [`resort`].
    resort_generation: AtomicU32,
    /// Slot CASes lost to another thread, counted on the retry path only: lets the stress
    /// tests show that contention really exercised it. Only in debug builds (the tests), so
    /// a release build's keys do not pay 8 bytes each for it; not modelled under loom.
    #[cfg(all(debug_assertions, not(slidelimit_loom)))]
    lost_races: std::sync::atomic::AtomicU64,
    /// Re-sorts completed, in debug builds only (like `lost_races`): lets the stress tests
    /// show that re-sorts really raced writers.
    #[cfg(all(debug_assertions, not(slidelimit_loom)))]
    resorts: std::sync::atomic::AtomicU64,
}

impl AtomicRing {
    /// An empty ring for `limit`.
    #[must_use]
    #[inline]
    pub fn new(limit: Limit) -> Self {
        Self {
            // The slots, then the displacement word and the carried hits.
            slots: (0..capacity_of(limit) + AFTER_SLOTS)
                .map(|_| AtomicU64::new(EMPTY))
                .collect(),
            window_ticks: limit.window_ticks(),
            cursor: AtomicU32::new(0),
            blocked_until: AtomicU64::new(0),
            resort_generation: AtomicU32::new(0),
            #[cfg(all(debug_assertions, not(slidelimit_loom)))]
            lost_races: std::sync::atomic::AtomicU64::new(0),
            #[cfg(all(debug_assertions, not(slidelimit_loom)))]
            resorts: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A ring for `limit` holding `values` (slot values, as many as the limit's requests).
    pub(super) fn from_slot_values(limit: Limit, values: Vec<u64>, carried: Carried) -> Self {
        debug_assert_eq!(values.len(), capacity_of(limit));
        let ring = Self::new(limit);
        for (slot, value) in ring.slots().iter().zip(values) {
            // Relaxed: the ring is not shared yet; publishing it (the map insert) orders this.
            slot.store(value, Ordering::Relaxed);
        }
        let len = ring.slots.len();
        // Relaxed (both): as above.
        ring.slots[len - 2].store(carried.tick, Ordering::Relaxed);
        ring.slots[len - 1].store(carried.count, Ordering::Relaxed);
        ring
    }

    /// The hits carried: from before a lowered limit (written before the ring is shared),
    /// and live hits a forced `hit` replaced (see `RingCells::carry_dropped`).
    fn carried(&self) -> Carried {
        let len = self.slots.len();
        // Relaxed (both): written before the ring was published, or by a forced hit before
        // its slot CAS (Release); read after Acquire slot loads that saw that CAS.
        Carried {
            tick: self.slots[len - 2].load(Ordering::Relaxed),
            count: self.slots[len - 1].load(Ordering::Relaxed),
        }
    }

    /// Reads every slot twice, with the re-sort generation before and after; the values if
    /// the two reads agree and no re-sort ran (then every slot held its value at the moment
    /// between the two reads: slot values only grow, outside a re-sort, so a slot that reads
    /// the same twice was not written in between). `Err(Retired)` on a sweeper's or a
    /// replacement's seal; `Ok(None)` when writers or a re-sort moved something.
    fn double_collect(&self) -> Result<Option<Vec<u64>>, Retired> {
        // Acquire: pairs with the re-sort's Release bumps (see resort.rs).
        let before = self.resort_generation.load(Ordering::Acquire);
        if before % 2 == 1 {
            return Ok(None);
        }
        // Acquire: pairs with the writers' AcqRel CASes, so each value read includes the hit
        // behind it.
        let first: Vec<u64> = self
            .slots()
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .collect();
        if let Some(index) = first.iter().position(|&value| value == SEALED) {
            self.settle_seal(index)?;
            return Ok(None);
        }
        let same = self
            .slots()
            .iter()
            .zip(&first)
            // Acquire: as above.
            .all(|(slot, &value)| slot.load(Ordering::Acquire) == value);
        // Acquire: as above.
        let after = self.resort_generation.load(Ordering::Acquire);
        Ok((same && after == before).then_some(first))
    }

    /// The slots, without the displacement word after them.
    fn slots(&self) -> &[AtomicU64] {
        &self.slots[..self.slots.len() - AFTER_SLOTS]
    }

    /// The word after the slots: displacement counted since the last re-sort.
    fn displacement(&self) -> &AtomicU64 {
        &self.slots[self.slots.len() - AFTER_SLOTS]
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// How many slot CASes this ring lost to another thread (each was retried), in debug
    /// builds; `None` in release and loom builds, which do not count them.
    #[must_use]
    pub fn lost_races(&self) -> Option<u64> {
        #[cfg(all(debug_assertions, not(slidelimit_loom)))]
        {
            // Relaxed: a statistic read after the racing threads were joined.
            Some(self.lost_races.load(std::sync::atomic::Ordering::Relaxed))
        }
        #[cfg(not(all(debug_assertions, not(slidelimit_loom))))]
        {
            None
        }
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// How many re-sorts this ring completed, in debug builds; `None` in release and loom
    /// builds, which do not count them.
    #[must_use]
    pub fn resorts(&self) -> Option<u64> {
        #[cfg(all(debug_assertions, not(slidelimit_loom)))]
        {
            // Relaxed: a statistic read after the racing threads were joined.
            Some(self.resorts.load(std::sync::atomic::Ordering::Relaxed))
        }
        #[cfg(not(all(debug_assertions, not(slidelimit_loom))))]
        {
            None
        }
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// Re-sorts the ring now (what an admission does once the displacement is due), for the
    /// loom models of the re-sort; false if it gave up.
    #[cfg(slidelimit_loom)]
    pub fn resort_for_model(&self) -> bool {
        !self.is_inline() && self.resort()
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// The raw slot values (tick + 1, 0 for empty, `u64::MAX` sealed), for quiescent checks
    /// in tests and models.
    #[must_use]
    pub fn slot_values(&self) -> Vec<u64> {
        if self.is_inline() {
            return self.inline_slot_values();
        }
        self.slots()
            .iter()
            // Acquire: pairs with the slot CASes, so a quiescent reader sees their values.
            .map(|slot| slot.load(Ordering::Acquire))
            .collect()
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// The current `blocked_until` hint, for quiescent checks in tests and models.
    #[must_use]
    pub fn blocked_until_hint(&self) -> u64 {
        if self.is_inline() {
            // The inline form keeps no bound (its word is slot 0).
            return 0;
        }
        // Acquire: pairs with the AcqRel fetch_max that raised it.
        self.blocked_until.load(Ordering::Acquire)
    }
}

/// One call's view of an [`AtomicRing`]: the slots' address and length and the window length
/// copied into locals once, so the probe loop keeps them in registers (through `&AtomicRing`
/// every slot load, an `Acquire`, would make the compiler reload them).
struct AtomicCells<'a> {
    ring: &'a AtomicRing,
    /// The slots and the displacement word after them (slicing it off would cost a check
    /// per call; the algorithm never indexes past `capacity`).
    slots: &'a [AtomicU64],
    capacity: usize,
    window_ticks: u64,
}

impl<'a> AtomicCells<'a> {
    #[inline]
    fn of(ring: &'a AtomicRing) -> Self {
        Self {
            ring,
            slots: &ring.slots,
            // At least the displacement word: no underflow.
            capacity: ring.slots.len() - AFTER_SLOTS,
            window_ticks: ring.window_ticks,
        }
    }
}

impl RingCells for AtomicCells<'_> {
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
        // Acquire: pairs with the AcqRel slot CASes, so a refusal happens-after the writes
        // of the hits it counted.
        self.slots[index].load(Ordering::Acquire)
    }
    #[inline]
    fn replace_slot(&mut self, index: usize, current: u64, new: u64) -> Result<(), u64> {
        let cell = &self.slots[index];
        if cfg!(slidelimit_loom_mutant = "ring_store_not_cas") {
            // Deliberately broken for the loom negative control: load-then-store.
            // Relaxed: the mutant is wrong whatever the ordering.
            cell.store(new, Ordering::Relaxed);
            return Ok(());
        }
        // Success AcqRel: Release publishes the admitted hit to later slot loads (refusals,
        // the sweeper's seal); Acquire orders it after the value it replaces. Failure
        // Acquire: the value found is re-examined like a fresh slot load.
        let result = cell
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ());
        #[cfg(all(debug_assertions, not(slidelimit_loom)))]
        if result.is_err() {
            let lost_races = &self.ring.lost_races;
            // Relaxed: a statistic; only the retry path pays for it.
            lost_races.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        result
    }
    #[inline]
    fn cursor(&self) -> usize {
        // Relaxed: a probe-order hint; no decision rests on it.
        let index = self.ring.cursor.load(Ordering::Relaxed) as usize;
        if index < self.capacity {
            index
        } else {
            0
        }
    }
    #[inline]
    fn set_cursor(&mut self, index: usize) {
        // Relaxed: a hint; a plain store (not an RMW) keeps the hot path to one RMW.
        // index < capacity <= 2^24, so it fits.
        self.ring.cursor.store(index as u32, Ordering::Relaxed);
    }
    #[inline]
    fn blocked_until(&self) -> u64 {
        // Acquire: pairs with the AcqRel fetch_max in raise_blocked_until, so a refusal on
        // the bound happens-after the slot reads that justified it.
        self.ring.blocked_until.load(Ordering::Acquire)
    }
    #[inline]
    fn raise_blocked_until(&mut self, tick: u64) {
        // AcqRel: Release publishes the slot reads behind the bound to readers of the load
        // above; fetch_max keeps the bound monotone, so a stale one never lowers it. Only a
        // refusal that scanned every slot gets here, never an admission.
        self.ring.blocked_until.fetch_max(tick, Ordering::AcqRel);
    }
    fn carry_dropped(&mut self, value: u64) {
        let len = self.slots.len();
        // Relaxed (both): published by the slot CAS (AcqRel) that follows; an exporter reads
        // them after Acquire slot loads. A reader that sees one word and not the other still
        // sees a tick at or below every slot value (the dropped value was the minimum, and
        // slot values only grow), so the state it builds stays ordered.
        self.slots[len - 2].fetch_max(value - 1, Ordering::Relaxed);
        self.slots[len - 1].fetch_add(1, Ordering::Relaxed);
    }
    fn publish_carried(&mut self, index: usize, value: u64) -> Result<(), Retired> {
        let mut value = value;
        loop {
            if value == SEALED {
                // A sweeper's or replacement's seal: retired, look again. A re-sort's: wait
                // it out and publish on the value it leaves.
                self.ring.settle_seal(index)?;
                retry_hint();
                // Acquire: pairs with the re-sort's restoring write, like a slot load.
                value = self.slots[index].load(Ordering::Acquire);
                continue;
            }
            // Success AcqRel: Release publishes the carried count (Relaxed RMWs sequenced
            // before) to the sealer whose seal CAS reads this slot later; failure Acquire:
            // the value found is examined like a slot load.
            match self.slots[index].compare_exchange(
                value,
                value,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(found) => {
                    // A concurrent write or a seal: try again on the value it left.
                    value = found;
                    retry_hint();
                }
            }
        }
    }
    #[inline]
    fn known_order(&self) -> Option<usize> {
        // Writers race: no order is ever known here (see the parent module's docs).
        None
    }
    fn add_displacement(&mut self, slots: u64) -> u64 {
        // Relaxed: a heuristic count that only decides when to re-sort; no decision about a
        // request rests on it. Only admissions that probed past the cursor's line pay this RMW.
        self.ring.displacement().fetch_add(slots, Ordering::Relaxed) + slots
    }
    fn resort(&mut self) -> bool {
        self.ring.resort()
    }
    #[inline]
    fn resort_generation(&self) -> u32 {
        // Acquire: pairs with the Release increment that ends a re-sort, so the slot reads
        // after this load see the values that re-sort wrote (see resort.rs).
        self.ring.resort_generation.load(Ordering::Acquire)
    }
    fn settle_seal(&self, index: usize) -> Result<(), Retired> {
        self.ring.settle_seal(index)
    }
}

impl AtomicWindow for AtomicRing {
    type Outgrown = InlineSlot;

    #[inline]
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        if self.is_inline() {
            return hit(&mut self.inline_cells(), now);
        }
        hit(&mut AtomicCells::of(self), now)
    }
    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        if self.is_inline() {
            return check_and_hit(&mut self.inline_cells(), now);
        }
        check_and_hit(&mut AtomicCells::of(self), now)
    }
    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        if self.is_inline() {
            return allowed(&self.inline_cells(), now);
        }
        allowed(&AtomicCells::of(self), now)
    }
    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        if self.is_inline() {
            return status(&self.inline_cells(), now);
        }
        status(&AtomicCells::of(self), now)
    }
    fn limit(&self) -> Limit {
        if self.is_inline() {
            return self.inline_limit();
        }
        limit_of(self.slots().len(), self.window_ticks)
    }
    fn needs_slots(&self) -> bool {
        AtomicRing::needs_slots(self)
    }
    fn seal_for_growth(&self) -> Option<InlineSlot> {
        self.inline_seal_for_growth()
    }
    fn grown(&self, outgrown: InlineSlot) -> Option<Self> {
        self.inline_grown(outgrown)
    }
    fn export(&self) -> Result<WindowState, Retired> {
        if self.is_inline() {
            return self.inline_export();
        }
        /// Double collects tried before holding writers off with a re-sort's seal.
        const OPTIMISTIC_ATTEMPTS: usize = 4;
        let mut attempts = 0;
        loop {
            if attempts < OPTIMISTIC_ATTEMPTS {
                attempts += 1;
                if let Some(values) = self.double_collect()? {
                    return Ok(WindowState::from_slot_values(
                        values,
                        self.carried(),
                        self.window_ticks,
                    ));
                }
            } else if let Some(values) = self.resort_capturing() {
                // Every slot was sealed while the values were taken: one moment's content.
                return Ok(WindowState::from_slot_values(
                    values,
                    self.carried(),
                    self.window_ticks,
                ));
            } else if let Some(index) = self.slots().iter().position(|slot| {
                // Acquire: pairs with the seal CASes; see settle_seal.
                slot.load(Ordering::Acquire) == SEALED
            }) {
                // The re-sort gave up on a seal: a sweeper's or a replacement's means retired.
                self.settle_seal(index)?;
            }
            retry_hint();
        }
    }
    fn seal_for_swap(&self) -> Option<WindowState> {
        if self.is_inline() {
            return self.inline_seal_for_swap();
        }
        self.seal_all()
            .map(|values| WindowState::from_slot_values(values, self.carried(), self.window_ticks))
    }
    fn fresh_from_hint(&self) -> u64 {
        AtomicLayer::fresh_from(self)
    }
    fn try_seal(&self, horizon: u64) -> Option<u64> {
        // A look at the slot written last first: most entries a sweep visits are live, and
        // in time order that slot holds the newest hit. The seal judges every slot itself
        // (a re-sort under way makes it give up: it meets the re-sort's seal).
        if self.is_inline() {
            return self.inline_try_seal(horizon);
        }
        let cells = AtomicCells::of(self);
        let capacity = cells.capacity();
        let newest_written = cells.slot((cells.cursor() + capacity - 1) % capacity);
        if newest_written == SEALED || slot_is_live(newest_written, self.window_ticks, horizon) {
            return None;
        }
        let newest = self.seal(horizon)?;
        Some(idle_from_newest(newest, self.window_ticks))
    }
}

impl AtomicLayer for AtomicRing {
    type Taken = RingTaken;
    fn reserve(&self, now: u64, n: u64, final_window: bool) -> Result<Option<RingTaken>, Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        // A reservation that may be undone never re-sorts: an undo trusts the slot it
        // reserved (see `undo`).
        if self.is_inline() {
            return if final_window {
                self.inline_reserve::<true>(now)
            } else {
                self.inline_reserve::<false>(now)
            };
        }
        let cells = &mut AtomicCells::of(self);
        if final_window {
            reserve::<_, true, RingTaken>(cells, now)
        } else {
            reserve::<_, false, RingTaken>(cells, now)
        }
    }
    fn commit(&self, _taken: RingTaken) {}
    fn undo(&self, taken: RingTaken) {
        if self.is_inline() {
            return self.inline_undo(taken);
        }
        undo(&mut AtomicCells::of(self), taken);
    }
    fn fresh_from(&self) -> u64 {
        if self.is_inline() {
            return self.inline_fresh_from();
        }
        // A narrower window of a layered limit is never sealed, so every value is a tick.
        let newest = self
            .slots()
            .iter()
            // Acquire: pairs with the slot CASes (AcqRel), as every slot load.
            .map(|slot| slot.load(Ordering::Acquire))
            .max()
            .unwrap_or(EMPTY);
        idle_from_newest(newest, self.window_ticks)
    }
}
