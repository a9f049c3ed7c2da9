//! The exact log's algorithm, written once over [`RingCells`]: the sequential form runs it on
//! plain integers, the atomic form on atomics with CAS (see the parent module's docs).

use super::{encode, expired_at_most, slot_is_live, RingCells, EMPTY};
use crate::sync::retry_hint;
use crate::window::{Retired, Status, MAX_TICK};

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

pub(super) fn check_and_hit<C: RingCells>(cells: &mut C, now: u64) -> Result<bool, Retired> {
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

pub(super) fn hit<C: RingCells>(cells: &mut C, now: u64) -> Result<(), Retired> {
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

pub(super) fn allowed<C: RingCells>(cells: &C, now: u64) -> Result<bool, Retired> {
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

pub(super) fn status<C: RingCells>(cells: &C, now: u64) -> Result<Status, Retired> {
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
pub(super) fn fresh_from_newest(newest: u64, window_ticks: u64) -> u64 {
    if newest == EMPTY {
        0
    } else {
        (newest - 1).saturating_add(window_ticks)
    }
}

/// Whether every slot's hit has left the window of a caller at `horizon` (a sealed slot
/// counts as not fresh). Walks back from the slot written last, which in time order holds the
/// newest hit, so a live key is settled by its first load.
pub(super) fn is_fresh_by<C: RingCells>(cells: &C, horizon: u64) -> bool {
    let capacity = cells.capacity();
    let window_ticks = cells.window_ticks();
    let newest_first = cells.cursor() + capacity - 1;
    (0..capacity).all(|back| {
        let value = cells.slot((newest_first - back) % capacity);
        !C::is_sealed(value) && !slot_is_live(value, window_ticks, horizon)
    })
}
