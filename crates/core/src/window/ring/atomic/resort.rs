//! Re-sorting an atomic ring: every value back in time order, under a seal of every slot.
//!
//! # Protocol
//! The re-sort generation (`AtomicRing::resort_generation`) is a seqlock word.
//! 1. Claim: CAS the generation from even `g` to `g + 1`. Only one re-sort runs at a time; a
//!    caller that finds it odd leaves the re-sort to the one under way.
//! 2. Seal: CAS every slot, in index order, from the value read to `SEALED`, keeping the
//!    values (as a sweeper's seal does). A slot found `SEALED` belongs to a sweeper: put back
//!    what was sealed, bump the generation to `g + 2`, give up.
//! 3. Sort the values; store them back ascending from slot 0 (each slot is held by this
//!    re-sort alone); set the cursor to 0 and the displacement to 0.
//! 4. Release: bump the generation to `g + 2`.
//!
//! # Why it is safe
//! - **No admission is lost or doubled.** Every write to a slot is a CAS from a value that
//!   is not `SEALED`, so a writer's CAS either comes before the seal of its slot in that
//!   slot's modification order (the seal captures its value, which the re-sort writes back
//!   somewhere) or after it (and fails). While every slot is sealed nothing is admitted, and
//!   the values written back are exactly the values sealed: the multiset of values, and so
//!   the safety argument of the parent module (one chain of admissions at least `W` apart per
//!   value), carries over; `blocked_until` (the oldest value + W) stays a lower bound.
//! - **A writer that meets the re-sort's seal waits** instead of answering `Retired`
//!   ([`AtomicRing::settle_seal`]): it reads the generation, then the slot again, then the
//!   generation again. The claim is sequenced before every seal CAS, so a reader that saw a
//!   re-sort's `SEALED` (an `Acquire` load of a Release CAS) sees a generation at least that
//!   re-sort's odd one: if both reads gave the same even value, the seal is a sweeper's.
//! - **A scan that a re-sort overlapped is not trusted** (`scan_is_consistent`): a decision
//!   that rests on several slots reads the generation before its first slot and after its
//!   last. A scan that read one slot before a re-sort's seal and another after its write-back
//!   read that write-back with `Acquire`, which happens-after the claim, so its second read
//!   of the generation differs from its first (or the first was odd). A scan whose first read
//!   saw the final (even) bump of a re-sort happens-after its write-backs, so it reads no
//!   value from before it. Loom checks this with a broken twin (`resort_unchecked_scan`).
//! - **Sweepers:** a sweeper's seal that meets a re-sort's `SEALED` gives back what it sealed
//!   and reports the ring as not free; a re-sort that meets a sweeper's gives up (step 2).

use super::super::SEALED;
use super::AtomicRing;
use crate::sync::{retry_hint, Ordering};
use crate::window::Retired;

impl AtomicRing {
    /// Re-sorts the ring (see the module docs). False when it gave up: another re-sort was
    /// under way, or a sweeper's seal holds a slot.
    pub(super) fn resort(&self) -> bool {
        self.resort_capturing().is_some()
    }

    /// [`Self::resort`], returning the values it held sealed: the ring's content at one
    /// moment (no admission runs while every slot is sealed). `None` when it gave up.
    pub(super) fn resort_capturing(&self) -> Option<Vec<u64>> {
        // Relaxed: only to pick the value to CAS from; the CAS below decides.
        let generation = self.resort_generation.load(Ordering::Relaxed);
        if generation % 2 == 1 {
            return None;
        }
        // Success Acquire: pairs with the Release bump that ended the previous re-sort, so this
        // one starts from its write-backs. Failure Relaxed: another re-sort claimed it; give
        // up without reading anything it wrote.
        if self
            .resort_generation
            .compare_exchange(
                generation,
                generation + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return None;
        }
        let slots = self.slots();
        let mut values = Vec::with_capacity(slots.len());
        if cfg!(slidelimit_loom_mutant = "resort_without_seal") {
            // Deliberately broken for the loom negative control: reads the values and writes
            // them back sorted without sealing, so a writer's CAS in between is overwritten.
            // Acquire: the mutant is wrong whatever the ordering.
            values.extend(slots.iter().map(|slot| slot.load(Ordering::Acquire)));
            values.sort_unstable();
            for (slot, &value) in slots.iter().zip(&values) {
                // Relaxed: the mutant is wrong whatever the ordering.
                slot.store(value, Ordering::Relaxed);
            }
            self.end_resort(generation);
            return Some(values);
        }
        for slot in slots {
            // Acquire: pairs with the writers' AcqRel CASes, so the value sealed below
            // includes every hit written before it.
            let mut value = slot.load(Ordering::Acquire);
            loop {
                if value == SEALED {
                    // A sweeper holds this slot: give back what this re-sort sealed.
                    for (slot, &value) in slots.iter().zip(&values) {
                        // Release: pairs with the Acquire loads of writers waiting on the
                        // seal; only this re-sort writes a slot it sealed.
                        slot.store(value, Ordering::Release);
                    }
                    self.end_resort(generation);
                    return None;
                }
                // Success AcqRel: Acquire orders the seal after the value it takes (and the
                // hit behind it); Release publishes the seal, and the claim before it, to the
                // writers whose CAS fails on it. Failure Acquire: the value found is sealed
                // like a fresh load.
                match slot.compare_exchange(value, SEALED, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => break,
                    Err(found) => {
                        value = found;
                        retry_hint();
                    }
                }
            }
            values.push(value);
        }
        values.sort_unstable();
        for (slot, &value) in slots.iter().zip(&values) {
            // Release: pairs with the Acquire slot loads of scans and writers, so a reader of
            // this value happens-after the claim (see the module docs).
            slot.store(value, Ordering::Release);
        }
        // Relaxed: a hint (see AtomicCells::set_cursor).
        self.cursor.store(0, Ordering::Relaxed);
        // Relaxed: a heuristic count (see AtomicCells::add_displacement).
        self.displacement().store(0, Ordering::Relaxed);
        self.end_resort(generation);
        #[cfg(all(debug_assertions, not(slidelimit_loom)))]
        // Relaxed: a statistic.
        self.resorts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(values)
    }

    /// Ends the re-sort claimed from even `generation`.
    fn end_resort(&self, generation: u32) {
        // Release: pairs with the Acquire generation loads of scans and writers, so one that
        // reads the new even value happens-after every write-back above.
        self.resort_generation
            .store(generation.wrapping_add(2), Ordering::Release);
    }

    /// After a caller read `SEALED` at `index`: `Err(Retired)` if a sweeper sealed the
    /// ring, `Ok` if a re-sort holds (or held) the slot and the caller should start again.
    pub(super) fn settle_seal(&self, index: usize) -> Result<(), Retired> {
        // Acquire (all three loads): pairs with the re-sort's Release seal CAS, write-back and
        // final bump, so the reads below see at least what the SEALED read implies (see the
        // module docs).
        let before = self.resort_generation.load(Ordering::Acquire);
        if before % 2 == 1 {
            return Ok(());
        }
        if self.slots()[index].load(Ordering::Acquire) != SEALED {
            return Ok(());
        }
        if self.resort_generation.load(Ordering::Acquire) == before {
            Err(Retired)
        } else {
            Ok(())
        }
    }
}
