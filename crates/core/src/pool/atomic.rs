//! The key-pool ledger in atomics: every decision is one CAS on the control word.
//!
//! # Slot words
//! Each ring slot holds five words (see [`LedgerCells`] for how each is raised):
//!
//! | word         | bits                                              | written by |
//! |--------------|---------------------------------------------------|------------|
//! | `first_use`  | 1..64: tag (first sequence number + 1); 0: far-ahead flag | openers; the flag by the call after a far-ahead opener |
//! | `cooled`     | 0..64: cooldown end (newest use + T) of a well-timed bucket | well-timed openers and joiners |
//! | `opened`     | 0..64: opening tick of a well-timed bucket (with `τ` only) | well-timed openers |
//! | `far`        | 64..128: tag; 0..64: cooldown end of a far-ahead bucket | far-ahead openers and joiners |
//! | `far_opened` | 64..128: tag; 0..64: opening tick of a far-ahead bucket (with `τ` only) | far-ahead openers |
//!
//! Tag 0 is a slot never opened. A call in steady use touches only the 64-bit words; the
//! 128-bit ones are read and written for a bad clock's buckets alone.

//! # Atomic orderings
//! - Loads are `Acquire`: a load of the control word pairs with the `Release` half of the CAS
//!   that wrote it, so the slot words its caller raised before it are visible; a slot load
//!   pairs with the `Release` CAS that wrote it, so the control word re-read after it is at
//!   least as new as the one that writer had read.
//! - Slot raises are `Release` (`fetch_max` on the 64-bit words; CASes on the 128-bit ones,
//!   their failure `Acquire`, read like a load): they come before the caller's control CAS,
//!   and a reader that sees one must see the control word its writer started from. The
//!   watermark's raise (`fetch_max`) is `Release` for the same reason.
//! - The control CAS is `AcqRel` on success (it publishes the raises before it and reads the
//!   previous decision's) and `Acquire` on failure (the word found is read like a load).
//! - Nothing relies on `SeqCst`: a decision is valid exactly when its CAS succeeds.

use super::algorithm::{
    raised_within_bucket, status, take, take_witnessed, LedgerCells, LedgerReads,
};
use super::control::Control;
use super::geometry::PoolGeometry;
use super::{PoolStatus, Refusal, RefusalWitness, UseLedger};
use crate::sync::{retry_hint, AtomicU128, AtomicU64, Ordering};

/// One bucket slot's words (the table above).
#[derive(Debug)]
struct Slot {
    first_use: AtomicU64,
    cooled: AtomicU64,
    opened: AtomicU64,
    far: AtomicU128,
    far_opened: AtomicU128,
}

impl Slot {
    fn new() -> Self {
        Self {
            first_use: AtomicU64::new(0),
            cooled: AtomicU64::new(0),
            opened: AtomicU64::new(0),
            far: AtomicU128::new(0),
            far_opened: AtomicU128::new(0),
        }
    }
}

/// A slot word from its tag and tick.
fn pack(tag: u64, tick: u64) -> u128 {
    (u128::from(tag) << 64) | u128::from(tick)
}

/// A slot word's tag and tick.
fn unpack(word: u128) -> (u64, u64) {
    // Truncation intended: the two halves.
    ((word >> 64) as u64, word as u64)
}

/// Raises `cell` within the bucket tagged `tag` to `tick` (see [`LedgerCells`]).
fn raise_within_bucket(cell: &AtomicU128, tag: u64, tick: u64) {
    // Acquire: as the loads below; a newer bucket's word is then seen and left alone.
    let mut current = cell.load(Ordering::Acquire);
    while let Some((new_tag, new_tick)) = raised_within_bucket(unpack(current), tag, tick) {
        match cell.compare_exchange(
            current,
            pack(new_tag, new_tick),
            // Success: before the caller's control CAS; pairs with a reader's Acquire load.
            // Failure: the word found is read like the load above.
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
/// bijection of the power-of-two array, and 3 × 64 bytes, so neighbouring positions never
/// share a 64-byte line (a slot's 64-bit words, the only ones steady use touches, share one).
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
                .map(|_| Slot::new())
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
    fn first_use_word(&self, slot: usize) -> u64 {
        // Pairs with the opener's (or flagger's) Release raise before its CAS.
        self.slot(slot).first_use.load(Ordering::Acquire)
    }
    fn cooled_word(&self, slot: usize) -> u64 {
        // Pairs with each user's Release raise before its CAS: a releaser that saw a use's
        // CAS sees its cooldown end.
        self.slot(slot).cooled.load(Ordering::Acquire)
    }
    fn far_word(&self, slot: usize) -> (u64, u64) {
        // Pairs with the far-ahead opener's Release raise before its CAS.
        unpack(self.slot(slot).far.load(Ordering::Acquire))
    }
    fn opened_word(&self, slot: usize) -> u64 {
        // Pairs with the opener's Release raise before its CAS.
        self.slot(slot).opened.load(Ordering::Acquire)
    }
    fn far_opened_word(&self, slot: usize) -> (u64, u64) {
        // Pairs with the far-ahead opener's Release raise before its CAS.
        unpack(self.slot(slot).far_opened.load(Ordering::Acquire))
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
    fn raise_first_use_word(&mut self, slot: usize, word: u64) {
        let cell = &self.slot(slot).first_use;
        // Only a hint to skip the read-modify-write when the word is already there.
        if cell.load(Ordering::Relaxed) < word {
            // Before the CAS that counts the use; pairs with the load in `first_use_word`.
            cell.fetch_max(word, Ordering::Release);
        }
    }
    fn raise_cooled_word(&mut self, slot: usize, tick: u64) {
        let cell = &self.slot(slot).cooled;
        if cfg!(slidelimit_loom_mutant = "pool_raise_by_load_store") {
            // Deliberately broken: a maximum by load-then-store, so a smaller raise that
            // loaded before a larger one landed can overwrite it.
            // Acquire/Release: as the load in `cooled_word` and the `fetch_max` below.
            if cell.load(Ordering::Acquire) < tick {
                cell.store(tick, Ordering::Release);
            }
            return;
        }
        // Only a hint to skip the read-modify-write when calls share a tick: a stale (lower)
        // value just means a `fetch_max` that changes nothing; the control CAS publishes.
        if cell.load(Ordering::Relaxed) < tick {
            // Before the CAS that counts the use; pairs with the load in `cooled_word`.
            cell.fetch_max(tick, Ordering::Release);
        }
    }
    fn raise_far_word(&mut self, slot: usize, tag: u64, tick: u64) {
        raise_within_bucket(&self.slot(slot).far, tag, tick);
    }
    fn raise_opened_word(&mut self, slot: usize, tick: u64) {
        let cell = &self.slot(slot).opened;
        // Only a hint to skip the read-modify-write when the tick is already there.
        if cell.load(Ordering::Relaxed) < tick {
            // Before the opening CAS; pairs with the load in `opened_word`.
            cell.fetch_max(tick, Ordering::Release);
        }
    }
    fn raise_far_opened_word(&mut self, slot: usize, tag: u64, tick: u64) {
        raise_within_bucket(&self.slot(slot).far_opened, tag, tick);
    }
}
