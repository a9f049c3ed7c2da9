//! Sealing an atomic ring for removal (see the parent module's docs): every slot CASed from
//! a value judged expired to `SEALED`, or every value given back.

use super::super::{slot_is_live, EMPTY, SEALED};
use super::AtomicRing;
use crate::sync::{retry_hint, Ordering};

impl AtomicRing {
    /// Seals every slot (see the module docs) if every hit is expired for `horizon`; returns
    /// the newest slot value sealed, or `None` after restoring what it had sealed.
    pub(super) fn seal(&self, horizon: u64) -> Option<u64> {
        let mut newest = EMPTY;
        self.seal_slots(Some(horizon), |value| newest = newest.max(value))
            .then_some(newest)
    }

    /// Seals every slot whatever it holds, for good (a replacement of the ring), and returns
    /// the values sealed; `None` (after restoring what it had sealed) if another seal holds a
    /// slot: a sweeper's, a re-sort's or another replacement's.
    pub(super) fn seal_all(&self) -> Option<Vec<u64>> {
        let mut values = Vec::with_capacity(self.slots().len());
        self.seal_slots(None, |value| values.push(value))
            .then_some(values)
    }

    /// Seals every slot, in index order; with a `horizon`, only while every value is expired
    /// for it. `sealed` sees each value sealed (those of a seal given back too). False after
    /// giving back what was sealed.
    ///
    /// The values are kept on the stack in a buffer sized for the ring: zeroing the largest
    /// buffer for every ring cost a sweep 126 instructions per removed key of 4 slots
    /// (`results/lifecycle.md`), more than the seal's own CASes.
    #[inline]
    fn seal_slots(&self, horizon: Option<u64>, sealed_value: impl FnMut(u64)) -> bool {
        match self.slots().len() {
            0..=8 => self.seal_slots_into::<8>(horizon, sealed_value),
            9..=32 => self.seal_slots_into::<32>(horizon, sealed_value),
            _ => self.seal_slots_into::<64>(horizon, sealed_value),
        }
    }

    /// [`Self::seal_slots`] with `INLINE` values on the stack before the buffer spills.
    #[inline]
    fn seal_slots_into<const INLINE: usize>(
        &self,
        horizon: Option<u64>,
        mut sealed_value: impl FnMut(u64),
    ) -> bool {
        let mut sealed = SealedValues::<INLINE>::new();
        for slot in self.slots() {
            // Acquire: pairs with the writers' AcqRel CASes, so the value judged below
            // includes every hit written before it.
            let mut value = slot.load(Ordering::Acquire);
            loop {
                if value == SEALED
                    || horizon
                        .is_some_and(|horizon| slot_is_live(value, self.window_ticks, horizon))
                {
                    // Live after all (a write slipped in after the look), or another
                    // sweeper holds the seal: give back what was sealed.
                    self.restore(&sealed);
                    return false;
                }
                if cfg!(slidelimit_loom_mutant = "seal_with_store") {
                    // Deliberately broken for the loom negative control: load-then-store,
                    // so a writer's CAS between the two lands in a ring about to vanish.
                    // Relaxed: the mutant is wrong whatever the ordering.
                    slot.store(SEALED, Ordering::Relaxed);
                    break;
                }
                // Success AcqRel: Acquire orders the seal after the value it replaces (and
                // the hit behind it); Release publishes the seal to writers whose CAS fails
                // on it. Failure Acquire: the value found is judged like a fresh load.
                match slot.compare_exchange(value, SEALED, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => break,
                    Err(found) => {
                        value = found;
                        retry_hint();
                    }
                }
            }
            sealed.push(value);
            sealed_value(value);
        }
        true
    }

    /// Puts back the values a failed seal took from the first slots, last first, so that a
    /// sweeper that finds the first slot sealed can be sure the ring is not free yet.
    fn restore<const INLINE: usize>(&self, sealed: &SealedValues<INLINE>) {
        if cfg!(slidelimit_loom_mutant = "seal_without_restore") {
            // Deliberately broken for the loom negative control: gives up, seals left on.
            return;
        }
        for index in (0..sealed.len).rev() {
            // Release: pairs with the Acquire loads of writers that wait on the seal; only
            // this sweeper writes a slot it sealed, so the swap finds SEALED.
            let previous = self.slots[index].swap(sealed.get(index), Ordering::Release);
            debug_assert_eq!(previous, SEALED);
        }
    }
}

/// The values a seal took, in slot order, so that a seal given back restores them: the
/// first `INLINE` on the stack (every ring of up to 64 slots seals without allocating;
/// sweeps seal many rings), the rest in a vector.
struct SealedValues<const INLINE: usize> {
    inline: [u64; INLINE],
    spill: Vec<u64>,
    len: usize,
}

impl<const INLINE: usize> SealedValues<INLINE> {
    fn new() -> Self {
        Self {
            inline: [EMPTY; INLINE],
            spill: Vec::new(),
            len: 0,
        }
    }

    fn push(&mut self, value: u64) {
        match self.inline.get_mut(self.len) {
            Some(cell) => *cell = value,
            None => self.spill.push(value),
        }
        self.len += 1;
    }

    fn get(&self, index: usize) -> u64 {
        self.inline
            .get(index)
            .copied()
            .unwrap_or_else(|| self.spill[index - INLINE])
    }
}
