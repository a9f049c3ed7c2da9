//! The exact sliding log: a ring of `max_requests` timestamp slots, one algorithm over two
//! storages (plain integers under a lock, atomics decided by CAS).
//!
//! # Algorithm
//! Slot values encode a tick `s` as `s + 1`; 0 is an empty slot and `u64::MAX` a sealed one
//! (below). A slot is *expired* for a caller at `now` when it is empty or `s + W <= now`.
//! - `check_and_hit(now)` first refuses below `blocked_until` (a load); else it admits only by
//!   replacing an expired slot with `now` (a CAS in the atomic form), probing from the cursor,
//!   which in time order points at the oldest slot's line (it moves a line of slots at a
//!   time). A CAS loser goes on probing with the value it found, so it moves to the next slot
//!   instead of retrying the one just taken. When every slot is seen live it refuses, and
//!   raises `blocked_until` to `min(s) + W`.
//! - `hit(now)` replaces the minimum slot if it is older than `now`, so the ring always holds
//!   the `max_requests` newest hits (a hit older than all of them can never change an answer).
//! - `allowed(now)` is the probe without the write.
//!
//! # Sealing (the atomic form only)
//! A sweeper removes a ring by sealing it: it CASes every slot, in index order, from a value
//! it judged expired for its horizon to `SEALED`, remembering the values. Every write to a
//! slot is a CAS from an unsealed value, so a writer's CAS either comes before the seal of its
//! slot in that slot's modification order (and the sweeper's seal CAS sees the new value: if
//! it is live for the horizon the sweeper restores every slot it sealed and keeps the ring;
//! if not, the hit is in the value the sweeper turns into the key's removal watermark) or
//! after it (and fails). A caller that reads `SEALED` stops and looks the key up again. So no
//! hit is ever lost to a removal, with no extra read-modify-write on the hot path: the seal
//! is a handshake on each slot word itself.
//!
//! # Guarantees
//! Slot values only grow while a ring is live (a restore puts back the very value a seal
//! took), and an admission replaces a value at least `W` older, so two admissions in one slot
//! are at least `W` apart: by pigeonhole no window of `W` ticks holds more than
//! `max_requests` admitted hits, in any interleaving and any timestamp order. For
//! non-decreasing timestamps the answers equal a full sorted log's. `cursor` and
//! `blocked_until` are hints: they are never the reason for an admission.
//!
//! # Atomic orderings
//! Safety needs only per-slot coherence and RMW atomicity. Slot loads are `Acquire` and
//! successful CASes `AcqRel` so that a refusal, the `blocked_until` bound and the sweeper's
//! seal all happen-after the slot writes they read. The cursor is `Relaxed` (a hint).

use crate::sync::{retry_hint, AtomicU32, AtomicU64, Ordering};
use crate::window::{
    is_live, never_sealed, AtomicWindow, Retired, SequentialWindow, Status, WeightError, Window,
    MAX_TICK,
};
use crate::Limit;

/// The exact sliding log: never more than `max_requests` hits in any window, answers exact
/// for non-decreasing timestamps. Memory: `8 × max_requests` bytes of slots per key, plus a
/// header of 40 bytes in the lock-free form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactLog {
    limit: Limit,
}

impl ExactLog {
    /// The exact log for `limit`.
    #[must_use]
    pub const fn new(limit: Limit) -> Self {
        Self { limit }
    }
}

impl Window for ExactLog {
    type Sequential = SequentialRing;
    type Atomic = AtomicRing;

    fn algorithm(&self) -> &'static str {
        "exact"
    }

    fn limit(&self) -> Limit {
        self.limit
    }

    fn check_weight(&self, n: u64) -> Result<(), WeightError> {
        match n {
            0 => Err(WeightError::Zero),
            1 => Ok(()),
            n => Err(WeightError::Unsupported { n }),
        }
    }

    fn new_sequential(&self) -> SequentialRing {
        SequentialRing::new(self.limit)
    }

    fn new_atomic(&self) -> AtomicRing {
        AtomicRing::new(self.limit)
    }
}

/// An empty slot.
const EMPTY: u64 = 0;
/// A slot sealed by a sweeper: above every encoded tick (`encode(MAX_TICK) = u64::MAX - 1`).
const SEALED: u64 = u64::MAX;

#[inline]
const fn encode(tick: u64) -> u64 {
    // tick <= MAX_TICK, so this cannot overflow or reach SEALED.
    tick + 1
}

/// Whether slot value `v` (not `SEALED`) holds a hit that is live for a caller at `now`.
#[inline]
const fn slot_is_live(v: u64, window_ticks: u64, now: u64) -> bool {
    v != EMPTY && is_live(v - 1, window_ticks, now)
}

/// The largest slot value that is *not* live for a caller at `now`: a value above it holds a
/// live hit (or is `SEALED`), at or below it is empty or expired. One comparison per slot in
/// the probe loop instead of [`slot_is_live`]'s test and saturating add; the same answer: for
/// `now >= W`, `s + W > now` exactly when `s > now - W`, i.e. `s + 1 > now - W + 1`; for
/// `now < W` every recorded hit is live (`s + W >= W > now`), so only 0 (empty) is not.
#[inline]
const fn expired_at_most(window_ticks: u64, now: u64) -> u64 {
    if now >= window_ticks {
        now - window_ticks + 1
    } else {
        EMPTY
    }
}

/// The storage the ring algorithm runs on. The atomic form's `replace_slot` is a CAS and may
/// fail with the value it found; the sequential form's always succeeds.
trait RingCells {
    /// Whether a slot can hold `SEALED`: false for the sequential form, so the checks
    /// compile away there.
    const SEALABLE: bool;
    fn capacity(&self) -> usize;
    fn window_ticks(&self) -> u64;
    fn slot(&self, index: usize) -> u64;
    fn replace_slot(&mut self, index: usize, current: u64, new: u64) -> Result<(), u64>;
    fn cursor(&self) -> usize;
    fn set_cursor(&mut self, index: usize);
    fn blocked_until(&self) -> u64;
    fn raise_blocked_until(&mut self, tick: u64);

    #[inline]
    fn is_sealed(value: u64) -> bool {
        Self::SEALABLE && value == SEALED
    }
}

/// The cursor moves in strides of one cache line of slots: an admission stores it only when
/// it leaves the line the cursor points into. Between stores, callers probe a few live slots
/// of one line they already hold (loads only); in exchange, threads admitting on one hot key
/// stop writing the cursor's line on every call, which halved the cache-line traffic per
/// admission at 2 threads (measured: 7.2 to 15 M admissions/s on one key).
const CURSOR_STRIDE: usize = 8;

#[inline]
fn next_index(index: usize, capacity: usize) -> usize {
    if index + 1 == capacity {
        0
    } else {
        index + 1
    }
}

fn check_and_hit<C: RingCells>(cells: &mut C, now: u64) -> Result<bool, Retired> {
    let now = now.min(MAX_TICK);
    if now < cells.blocked_until() {
        return Ok(false);
    }
    let capacity = cells.capacity();
    let window_ticks = cells.window_ticks();
    let expired_at_most = expired_at_most(window_ticks, now);
    let start = cells.cursor();
    let mut index = start;
    let mut oldest_live = u64::MAX;
    for _ in 0..capacity {
        let mut value = cells.slot(index);
        loop {
            if value > expired_at_most {
                if C::is_sealed(value) {
                    return Err(Retired);
                }
                oldest_live = oldest_live.min(value);
                break;
            }
            match cells.replace_slot(index, value, encode(now)) {
                Ok(()) => {
                    let next = next_index(index, capacity);
                    if next % CURSOR_STRIDE == 0 || index / CURSOR_STRIDE != start / CURSOR_STRIDE {
                        cells.set_cursor(next);
                    }
                    return Ok(true);
                }
                Err(found) => {
                    // Lost a race for this slot; it may still be expired for us.
                    if cfg!(slidelimit_loom_mutant = "ring_cas_loser_refuses") {
                        return Ok(false);
                    }
                    value = found;
                    retry_hint();
                }
            }
        }
        index = next_index(index, capacity);
    }
    // Every slot was seen live: each value read is a lower bound on that slot while the ring
    // is live, so min + W bounds the first tick at which any slot can expire.
    cells.raise_blocked_until((oldest_live - 1).saturating_add(window_ticks));
    Ok(false)
}

fn hit<C: RingCells>(cells: &mut C, now: u64) -> Result<(), Retired> {
    let new = encode(now.min(MAX_TICK));
    let capacity = cells.capacity();
    loop {
        let start = cells.cursor();
        let (mut min_index, mut min_value) = (start, cells.slot(start));
        let mut index = next_index(start, capacity);
        while index != start && min_value != EMPTY {
            let value = cells.slot(index);
            if C::is_sealed(value) {
                return Err(Retired);
            }
            if value < min_value {
                (min_index, min_value) = (index, value);
            }
            index = next_index(index, capacity);
        }
        if C::is_sealed(min_value) {
            return Err(Retired);
        }
        if min_value >= new {
            // Older than every retained hit: it can never change an answer.
            return Ok(());
        }
        if cells.replace_slot(min_index, min_value, new).is_ok() {
            cells.set_cursor(next_index(min_index, capacity));
            return Ok(());
        }
        retry_hint();
    }
}

fn allowed<C: RingCells>(cells: &C, now: u64) -> Result<bool, Retired> {
    let now = now.min(MAX_TICK);
    if now < cells.blocked_until() {
        return Ok(false);
    }
    let window_ticks = cells.window_ticks();
    for index in 0..cells.capacity() {
        let value = cells.slot(index);
        if C::is_sealed(value) {
            return Err(Retired);
        }
        if !slot_is_live(value, window_ticks, now) {
            // Room now, whatever a sweeper does next: a read changes nothing, so it
            // linearizes at this load.
            return Ok(true);
        }
    }
    Ok(false)
}

fn status<C: RingCells>(cells: &C, now: u64) -> Result<Status, Retired> {
    let now = now.min(MAX_TICK);
    let window_ticks = cells.window_ticks();
    let mut count = 0u64;
    let mut oldest_live = u64::MAX;
    for index in 0..cells.capacity() {
        let value = cells.slot(index);
        if C::is_sealed(value) {
            return Err(Retired);
        }
        if slot_is_live(value, window_ticks, now) {
            count += 1;
            oldest_live = oldest_live.min(value);
        }
    }
    let max_requests = cells.capacity() as u64;
    let retry_after_ticks = if count < max_requests {
        0
    } else {
        (oldest_live - 1).saturating_add(window_ticks) - now
    };
    Ok(Status {
        count,
        remaining: max_requests - count,
        retry_after_ticks,
    })
}

/// The first tick from which a ring whose newest slot value is `newest` answers every call
/// as an empty ring would.
fn fresh_from_newest(newest: u64, window_ticks: u64) -> u64 {
    if newest == EMPTY {
        0
    } else {
        (newest - 1).saturating_add(window_ticks)
    }
}

/// Whether every slot's hit has left the window of a caller at `horizon` (a sealed slot
/// counts as not fresh). Walks back from the slot written last, which in time order holds the
/// newest hit, so a live key is settled by its first load.
fn is_fresh_by<C: RingCells>(cells: &C, horizon: u64) -> bool {
    let capacity = cells.capacity();
    let window_ticks = cells.window_ticks();
    let newest_first = cells.cursor() + capacity - 1;
    (0..capacity).all(|back| {
        let value = cells.slot((newest_first - back) % capacity);
        !C::is_sealed(value) && !slot_is_live(value, window_ticks, horizon)
    })
}

fn capacity_of(limit: Limit) -> usize {
    // Limit::new caps max_requests at 2^24, which fits every usize this crate builds for.
    usize::try_from(limit.max_requests()).unwrap_or(usize::MAX)
}

/// The exact log in plain integers, for use under a lock.
#[derive(Clone, Debug)]
pub struct SequentialRing {
    slots: Box<[u64]>,
    window_ticks: u64,
    cursor: usize,
    blocked_until: u64,
}

impl SequentialRing {
    /// An empty ring for `limit`.
    #[must_use]
    pub fn new(limit: Limit) -> Self {
        Self {
            slots: vec![EMPTY; capacity_of(limit)].into_boxed_slice(),
            window_ticks: limit.window_ticks(),
            cursor: 0,
            blocked_until: 0,
        }
    }
}

impl RingCells for SequentialRing {
    const SEALABLE: bool = false;
    fn capacity(&self) -> usize {
        self.slots.len()
    }
    fn window_ticks(&self) -> u64 {
        self.window_ticks
    }
    fn slot(&self, index: usize) -> u64 {
        self.slots[index]
    }
    fn replace_slot(&mut self, index: usize, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.slots[index], current);
        debug_assert!(new > current, "slot values only grow");
        self.slots[index] = new;
        Ok(())
    }
    fn cursor(&self) -> usize {
        self.cursor
    }
    fn set_cursor(&mut self, index: usize) {
        self.cursor = index;
    }
    fn blocked_until(&self) -> u64 {
        self.blocked_until
    }
    fn raise_blocked_until(&mut self, tick: u64) {
        self.blocked_until = self.blocked_until.max(tick);
    }
}

impl SequentialWindow for SequentialRing {
    fn hit_n(&mut self, now: u64, n: u64) {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        never_sealed(hit(self, now));
    }
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        never_sealed(check_and_hit(self, now))
    }
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        never_sealed(allowed(self, now))
    }
    fn status(&self, now: u64) -> Status {
        never_sealed(status(self, now))
    }
    fn fresh_from(&self) -> u64 {
        let newest = self.slots.iter().copied().max().unwrap_or(EMPTY);
        fresh_from_newest(newest, self.window_ticks)
    }
    fn is_fresh_by(&self, horizon: u64) -> bool {
        is_fresh_by(self, horizon)
    }
}

/// The exact log in atomics: admissions are CASes on slots, never a lock.
///
/// The header is what the decision reads before its slot: the slots' address and length,
/// the window length, the cursor and `blocked_until` (40 bytes, no padding: it shares the key
/// map's node with the key, so one line brings both).
#[derive(Debug)]
pub struct AtomicRing {
    slots: Box<[AtomicU64]>,
    window_ticks: u64,
    /// Every call below this tick is refused: a bound derived from slot values read.
    blocked_until: AtomicU64,
    /// Index of the slot to probe first (in order, the oldest). A hint only. `u32`: the
    /// capacity is at most 2^24 (`Limit` caps it).
    cursor: AtomicU32,
    /// Slot CASes lost to another thread, counted on the retry path only: lets the stress
    /// tests show that contention really exercised it. Only in debug builds (the tests), so
    /// a release build's keys do not pay 8 bytes each for it; not modelled under loom.
    #[cfg(all(debug_assertions, not(slidelimit_loom)))]
    lost_races: std::sync::atomic::AtomicU64,
}

impl AtomicRing {
    /// An empty ring for `limit`.
    #[must_use]
    pub fn new(limit: Limit) -> Self {
        Self {
            slots: (0..capacity_of(limit))
                .map(|_| AtomicU64::new(EMPTY))
                .collect(),
            window_ticks: limit.window_ticks(),
            cursor: AtomicU32::new(0),
            blocked_until: AtomicU64::new(0),
            #[cfg(all(debug_assertions, not(slidelimit_loom)))]
            lost_races: std::sync::atomic::AtomicU64::new(0),
        }
    }

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

    /// The raw slot values (tick + 1, 0 for empty, `u64::MAX` sealed), for quiescent checks
    /// in tests and models.
    #[must_use]
    pub fn slot_values(&self) -> Vec<u64> {
        // Acquire: pairs with the slot CASes, so a quiescent reader sees their values.
        self.slots
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .collect()
    }

    /// The current `blocked_until` hint, for quiescent checks in tests and models.
    #[must_use]
    pub fn blocked_until_hint(&self) -> u64 {
        // Acquire: pairs with the AcqRel fetch_max that raised it.
        self.blocked_until.load(Ordering::Acquire)
    }

    /// Seals every slot (see the module docs) if every hit is expired for `horizon`; returns
    /// the newest slot value sealed, or `None` after restoring what it had sealed.
    fn seal(&self, horizon: u64) -> Option<u64> {
        let mut sealed = SealedValues::new();
        let mut newest = EMPTY;
        for slot in self.slots.iter() {
            // Acquire: pairs with the writers' AcqRel CASes, so the value judged below
            // includes every hit written before it.
            let mut value = slot.load(Ordering::Acquire);
            loop {
                if value == SEALED || slot_is_live(value, self.window_ticks, horizon) {
                    // Live after all (a write slipped in after the look), or another
                    // sweeper holds the seal: give back what was sealed.
                    self.restore(&sealed);
                    return None;
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
            newest = newest.max(value);
        }
        Some(newest)
    }

    /// Puts back the values a failed seal took from the first slots, last first, so that a
    /// sweeper that finds the first slot sealed can be sure the ring is not free yet.
    fn restore(&self, sealed: &SealedValues) {
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
/// first [`SealedValues::INLINE`] on the stack (every ring of up to that many slots seals
/// without allocating; sweeps seal many rings), the rest in a vector.
struct SealedValues {
    inline: [u64; SealedValues::INLINE],
    spill: Vec<u64>,
    len: usize,
}

impl SealedValues {
    const INLINE: usize = 64;

    fn new() -> Self {
        Self {
            inline: [EMPTY; Self::INLINE],
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
            .unwrap_or_else(|| self.spill[index - Self::INLINE])
    }
}

/// One call's view of an [`AtomicRing`]: the slots' address and length and the window length
/// copied into locals once, so the probe loop keeps them in registers (through `&AtomicRing`
/// every slot load, an `Acquire`, would make the compiler reload them).
struct AtomicCells<'a> {
    ring: &'a AtomicRing,
    slots: &'a [AtomicU64],
    window_ticks: u64,
}

impl<'a> AtomicCells<'a> {
    #[inline]
    fn of(ring: &'a AtomicRing) -> Self {
        Self {
            ring,
            slots: &ring.slots,
            window_ticks: ring.window_ticks,
        }
    }
}

impl RingCells for AtomicCells<'_> {
    const SEALABLE: bool = true;
    #[inline]
    fn capacity(&self) -> usize {
        self.slots.len()
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
            // Relaxed: a statistic; only the retry path pays for it.
            self.ring
                .lost_races
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        result
    }
    #[inline]
    fn cursor(&self) -> usize {
        // Relaxed: a probe-order hint; no decision rests on it.
        let index = self.ring.cursor.load(Ordering::Relaxed) as usize;
        if index < self.slots.len() {
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
}

impl AtomicWindow for AtomicRing {
    #[inline]
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        hit(&mut AtomicCells::of(self), now)
    }
    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        check_and_hit(&mut AtomicCells::of(self), now)
    }
    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        allowed(&AtomicCells::of(self), now)
    }
    fn status(&self, now: u64) -> Result<Status, Retired> {
        status(&AtomicCells::of(self), now)
    }
    fn try_seal(&self, horizon: u64) -> Option<u64> {
        // A look at the slot written last first: most entries a sweep visits are live, and
        // in time order that slot holds the newest hit. The seal judges every slot itself.
        let cells = AtomicCells::of(self);
        let capacity = cells.capacity();
        let newest_written = cells.slot((cells.cursor() + capacity - 1) % capacity);
        if newest_written == SEALED || slot_is_live(newest_written, self.window_ticks, horizon) {
            return None;
        }
        let newest = self.seal(horizon)?;
        Some(fresh_from_newest(newest, self.window_ticks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(max: u64, window: u64) -> SequentialRing {
        SequentialRing::new(Limit::new(max, window).unwrap())
    }

    #[test]
    fn expired_at_most_agrees_with_slot_is_live() {
        let ticks = [
            0,
            1,
            2,
            5,
            9,
            10,
            11,
            100,
            MAX_TICK - 11,
            MAX_TICK - 1,
            MAX_TICK,
        ];
        for window_ticks in [1, 2, 10, 100, u64::MAX - 1, u64::MAX] {
            for now in ticks {
                let bound = expired_at_most(window_ticks, now);
                assert!(EMPTY <= bound, "an empty slot is never live");
                for tick in ticks {
                    let value = encode(tick);
                    assert_eq!(
                        value > bound,
                        slot_is_live(value, window_ticks, now),
                        "tick {tick}, W {window_ticks}, now {now}"
                    );
                }
            }
        }
    }

    #[test]
    fn blocked_until_is_the_oldest_live_hit_plus_window() {
        let mut r = ring(2, 10);
        assert!(r.check_and_hit_n(3, 1));
        assert!(r.check_and_hit_n(5, 1));
        assert!(!r.check_and_hit_n(6, 1));
        assert_eq!(r.blocked_until, 13);
        assert!(
            r.check_and_hit_n(13, 1),
            "the bound must not outlive the oldest hit"
        );
    }

    #[test]
    fn hit_keeps_the_newest_hits() {
        let mut r = ring(2, 10);
        r.hit_n(20, 1);
        r.hit_n(5, 1);
        r.hit_n(8, 1); // replaces 5, the minimum
        r.hit_n(1, 1); // older than both: dropped
        let mut slots = r.slots.to_vec();
        slots.sort_unstable();
        assert_eq!(slots, vec![encode(8), encode(20)]);
    }

    #[test]
    fn status_reports_retry_after_from_the_oldest_live_hit() {
        let mut r = ring(2, 10);
        r.hit_n(4, 1);
        r.hit_n(6, 1);
        let s = r.status(7);
        assert_eq!((s.count, s.remaining, s.retry_after_ticks), (2, 0, 7));
        assert_eq!(r.status(14).remaining, 1);
        assert_eq!(r.fresh_from(), 16);
    }

    #[test]
    fn is_fresh_by_agrees_with_fresh_from_in_any_order() {
        let mut r = ring(3, 10);
        for t in [40, 7, 25, 3, 31, 12] {
            r.hit_n(t, 1);
            for horizon in 0..60 {
                assert_eq!(
                    r.is_fresh_by(horizon),
                    r.fresh_from() <= horizon,
                    "{horizon}"
                );
            }
        }
        assert!(
            ring(2, 10).is_fresh_by(0),
            "an empty ring is fresh from tick 0"
        );
    }

    #[test]
    fn atomic_and_sequential_take_the_same_slots() {
        let limit = Limit::new(3, 10).unwrap();
        let mut seq = SequentialRing::new(limit);
        let atomic = AtomicRing::new(limit);
        for (i, t) in [5u64, 1, 9, 30, 12, 31, 31, 2, 45].into_iter().enumerate() {
            if i % 3 == 0 {
                seq.hit_n(t, 1);
                atomic.hit_n(t, 1).unwrap();
            } else {
                assert_eq!(Ok(seq.check_and_hit_n(t, 1)), atomic.check_and_hit_n(t, 1));
            }
            assert_eq!(seq.slots.to_vec(), atomic.slot_values());
        }
    }
}
