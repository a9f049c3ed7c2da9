//! The key-pool ledger in atomics: every decision is one CAS on the control word.
//!
//! # Atomic orderings
//! - Loads are `Acquire`: a load of the control word pairs with the `Release` half of the CAS
//!   that wrote it, so the marks and raises its caller made before it are visible; a slot
//!   load pairs with the `Release` write that wrote it (a mark, a publishing store or a raise),
//!   so the control word re-read after it is at least as new as the one that writer had read
//!   (for a publishing store: the word of the writer's own opening CAS).
//! - Marks (a CAS on `first_seq`), publishing stores and raises (`fetch_max`) are `Release`:
//!   a reader that sees one must see the control word its writer started from, and a reader
//!   that sees a published tag must see the stores its opener made before it.
//! - The control CAS is `AcqRel` on success (it publishes the marks and raises before it and
//!   reads the previous decision's) and `Acquire` on failure (the word found is read like a
//!   load).
//! - Nothing relies on `SeqCst`: a decision is valid exactly when its CAS succeeds.

use super::algorithm::{status, take, take_witnessed, LedgerCells, LedgerReads, OPENING};
use super::control::Control;
use super::geometry::PoolGeometry;
use super::{PoolStatus, Refusal, RefusalWitness, UseLedger};
use crate::sync::{retry_hint, AtomicU64, Ordering};

/// One bucket slot's three words (see [`LedgerReads`] for what each holds, and
/// [`LedgerCells`] for how a bucket is opened in them).
#[derive(Debug, Default)]
struct Slot {
    first_seq: AtomicU64,
    opened_at: AtomicU64,
    cooled_at: AtomicU64,
}

/// The lock-free ledger: a packed control word, a release watermark and a ring of bucket
/// slots. [`KeyPool`](super::KeyPool)'s default.
#[derive(Debug)]
pub struct AtomicLedger {
    geometry: PoolGeometry,
    control: AtomicU64,
    released_through: AtomicU64,
    /// The ring, spread out (see [`AtomicLedger::slot`]): a power of two of slots, at least
    /// the geometry's.
    slots: Box<[Slot]>,
    /// Control-word CASes lost to another thread (each retried), so the stress tests can show
    /// that contention really exercised the retry path. Debug builds only; not under loom.
    #[cfg(all(debug_assertions, not(slidelimit_loom)))]
    lost_races: std::sync::atomic::AtomicU64,
}

impl AtomicLedger {
    /// Hands out one use at `now` (anonymous: the caller needs no key name).
    #[must_use]
    pub fn try_use(&self, now: u64) -> bool {
        self.take(now).is_ok()
    }

    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// How many control-word CASes this ledger lost to another thread (each was retried), in
    /// debug builds; `None` in release and loom builds, which do not count them.
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
}

/// The length of the spread-out ring for `slots` ring positions: the next power of two.
fn spread_len(slots: u64) -> usize {
    usize::try_from(slots.next_power_of_two()).expect("the ring's slots fit in memory")
}

/// Ring positions this many slots apart are neighbours in memory: odd, so the map below is a
/// bijection of the power-of-two array, and 3 × 24 bytes, so neighbouring positions never
/// share a 64-byte line.
const SPREAD: usize = 3;

impl AtomicLedger {
    /// The slot at ring position `position`. Consecutive positions are opened by consecutive
    /// uses, often by different threads: spread `SPREAD` slots apart, two openers never write
    /// one cache line (in the exact pool every use opens a slot, and a shared line cost a
    /// transfer per use).
    #[inline]
    fn slot(&self, position: usize) -> &Slot {
        &self.slots[position.wrapping_mul(SPREAD) & (self.slots.len() - 1)]
    }
}

impl UseLedger for AtomicLedger {
    fn new(geometry: PoolGeometry) -> Self {
        Self {
            geometry,
            control: AtomicU64::new(Control::EMPTY.pack()),
            released_through: AtomicU64::new(0),
            slots: (0..spread_len(geometry.slots))
                .map(|_| Slot::default())
                .collect(),
            #[cfg(all(debug_assertions, not(slidelimit_loom)))]
            lost_races: std::sync::atomic::AtomicU64::new(0),
        }
    }
    fn name(&self) -> &'static str {
        "lock-free"
    }
    fn geometry(&self) -> &PoolGeometry {
        &self.geometry
    }
    fn take(&self, now: u64) -> Result<u64, Refusal> {
        take(&mut &*self, now)
    }
    fn take_witnessed(&self, now: u64) -> Result<u64, RefusalWitness> {
        take_witnessed(&mut &*self, now)
    }
    fn status(&self, now: u64) -> PoolStatus {
        status(self, now)
    }
    fn ledger_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.slots.len() * std::mem::size_of::<Slot>()
    }
}

impl LedgerReads for AtomicLedger {
    fn released_through(&self) -> u64 {
        // Read after the control word; pairs with a releaser's raise (Release) made before
        // its CAS, so a caller that saw a release sees its watermark.
        self.released_through.load(Ordering::Acquire)
    }
    fn geometry(&self) -> &PoolGeometry {
        &self.geometry
    }
    fn control(&self) -> u64 {
        // Pairs with the control CAS (AcqRel) that wrote the word.
        self.control.load(Ordering::Acquire)
    }
    fn first_seq(&self, slot: usize) -> u64 {
        // Pairs with a mark (Release) before an opening CAS, or the opener's publishing
        // store (Release) after it.
        self.slot(slot).first_seq.load(Ordering::Acquire)
    }
    fn opened_at(&self, slot: usize) -> u64 {
        // Pairs with the opener's publishing store (Release).
        self.slot(slot).opened_at.load(Ordering::Acquire)
    }
    fn cooled_at(&self, slot: usize) -> u64 {
        // Pairs with the opener's publishing store and each joiner's raise (Release) before
        // its CAS: a releaser that saw a use's CAS sees its cooldown end.
        self.slot(slot).cooled_at.load(Ordering::Acquire)
    }
}

impl LedgerCells for &AtomicLedger {
    fn raise_released_through(&mut self, tick: u64) {
        // Before the releasing CAS; pairs with the load above. The load first only skips a
        // read-modify-write that would change nothing.
        if self.released_through.load(Ordering::Relaxed) < tick {
            self.released_through.fetch_max(tick, Ordering::Release);
        }
    }
    fn replace_control(&mut self, current: u64, new: u64) -> Result<(), u64> {
        if cfg!(slidelimit_loom_mutant = "pool_decide_then_store") {
            // Deliberately broken: decides on a load and writes with a store, so two callers
            // that loaded the same word both hand out its next use.
            // Acquire: as the load in `control`; Release: as the CAS's success half.
            let found = self.control.load(Ordering::Acquire);
            if found != current {
                return Err(found);
            }
            // Release: as the CAS's success half, publishing this call's raises.
            self.control.store(new, Ordering::Release);
            return Ok(());
        }
        let result = self
            .control
            // Success: publishes this call's raises to whoever loads the word (Acquire).
            // Failure: the word found is read like a load, paired with its writer's CAS.
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(drop);
        #[cfg(all(debug_assertions, not(slidelimit_loom)))]
        if result.is_err() {
            // Relaxed: a statistic, read after the threads are joined.
            self.lost_races
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        result
    }
    fn mark_opening(&mut self, slot: usize, tag: u64) {
        let cell = &self.slot(slot).first_seq;
        // Acquire: as the load in `first_seq`, so that a newer bucket's number is seen.
        let mut current = cell.load(Ordering::Acquire);
        while current & !OPENING < tag {
            if cfg!(slidelimit_loom_mutant = "pool_open_without_mark") {
                // Deliberately broken: the slot keeps its last bucket's fields between this
                // call's CAS and its stores, so a reader may judge the new bucket by them.
                return;
            }
            match cell.compare_exchange_weak(
                current,
                tag | OPENING,
                // Success: before the opening CAS, which publishes it (AcqRel) to whoever
                // sees the new bucket. Failure: the word found is read like the load above.
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(found) => {
                    current = found;
                    retry_hint();
                }
            }
        }
    }
    fn publish(&mut self, slot: usize, tag: u64, opened_at: Option<u64>, cooled_at: u64) {
        let cells = self.slot(slot);
        // Release, all three: pairs with the Acquire loads of a reader that sees any of them,
        // so that the control word it reads again afterwards is at least the opening CAS's
        // word (and its view is discarded if it began before); a reader that sees the tag
        // without the mark also sees the two stores before it.
        if let Some(tick) = opened_at {
            cells.opened_at.store(tick, Ordering::Release);
        }
        cells.cooled_at.store(cooled_at, Ordering::Release);
        cells.first_seq.store(tag, Ordering::Release);
    }
    fn raise_cooled_at(&mut self, slot: usize, tick: u64) {
        let cell = &self.slot(slot).cooled_at;
        if cfg!(slidelimit_loom_mutant = "pool_raise_by_load_store") {
            // Deliberately broken: a maximum by load-then-store, so a smaller raise that
            // loaded before a larger one landed can overwrite it.
            // Acquire/Release: as the load in `cooled_at` and the `fetch_max` below.
            if cell.load(Ordering::Acquire) < tick {
                cell.store(tick, Ordering::Release);
            }
            return;
        }
        // Only a hint to skip the read-modify-write when calls share a tick: a stale (lower)
        // value just means a `fetch_max` that changes nothing; the control CAS publishes.
        if cell.load(Ordering::Relaxed) < tick {
            // Before the CAS that counts the use; pairs with the load above.
            cell.fetch_max(tick, Ordering::Release);
        }
    }
}
