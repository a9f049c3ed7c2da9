//! The exact log's algorithm, written once over [`RingCells`]: the sequential form runs it on
//! plain integers, the atomic form on atomics with CAS (see the parent module's docs, which
//! give each operation's cost).

use super::{
    count_probes, encode, expired_at_most, scan_is_consistent, slot_is_live, RingCells, EMPTY,
};
use crate::sync::retry_hint;
use crate::window::{Retired, Status, MAX_TICK};

/// The cursor moves in strides of one cache line of slots: an admission stores it only when
/// it leaves the line the cursor points into. Between stores, callers probe a few live slots
/// of one line they already hold (loads only); in exchange, threads admitting on one hot key
/// stop writing the cursor's line on every call, which halved the cache-line traffic per
/// admission at 2 threads (measured: 7.2 to 15 M admissions/s on one key).
const CURSOR_STRIDE: usize = 8;

/// A re-sort runs once the displacement counted since the last one reaches this many times
/// the capacity. A re-sort costs about as much as a few full scans (a seal and a sort), so at
/// 4 it at most adds a fraction of the probe work that slow admissions had already done,
/// while a permutation left by a late phase is gone after at most `5 N` probes.
pub(super) const RESORT_DISPLACEMENT: u64 = 4;

#[inline]
fn next_index(index: usize, capacity: usize) -> usize {
    if index + 1 == capacity {
        0
    } else {
        index + 1
    }
}

#[inline]
fn index_after(index: usize, offset: usize, capacity: usize) -> usize {
    // index, offset < capacity <= 2^24: no overflow.
    let sum = index + offset;
    if sum >= capacity {
        sum - capacity
    } else {
        sum
    }
}

/// One slot read, counted for the tests.
#[inline]
fn probe<C: RingCells>(cells: &C, index: usize) -> u64 {
    count_probes(1);
    cells.slot(index)
}

/// After an admission at `index`, probed from the cursor `start`: moves the cursor on a line
/// crossing, and counts displacement (re-sorting when it is due, in a ring that `RESORTS`).
#[inline]
fn after_admission<C: RingCells, const RESORTS: bool>(cells: &mut C, start: usize, index: usize) {
    let capacity = cells.capacity();
    let next = next_index(index, capacity);
    if next % CURSOR_STRIDE == 0 || index / CURSOR_STRIDE != start / CURSOR_STRIDE {
        cells.set_cursor(next);
    }
    let distance = if index >= start {
        index - start
    } else {
        index + capacity - start
    };
    if RESORTS && distance >= CURSOR_STRIDE {
        displaced(cells, (distance + 1 - CURSOR_STRIDE) as u64);
    }
}

#[cold]
fn displaced<C: RingCells>(cells: &mut C, slots: u64) {
    let capacity = cells.capacity() as u64;
    if cells.add_displacement(slots) >= RESORT_DISPLACEMENT.saturating_mul(capacity) {
        count_probes(cells.capacity());
        cells.resort();
    }
}

/// What one slot of an admitting probe gave.
enum Probe {
    /// The slot was expired (it held this value) and now holds the caller's hit.
    Admitted(u64),
    /// The slot holds this live value.
    Live(u64),
    /// The slot is sealed.
    Sealed,
    /// Lost a race and gave up (only the `ring_cas_loser_refuses` mutant).
    GaveUp,
}

/// Tries to admit `now` into slot `index`: a CAS if the slot is expired, again with the
/// value found if the CAS loses (the slot may still be expired for us).
#[inline(always)]
fn try_slot<C: RingCells>(cells: &mut C, index: usize, expired_at_most: u64, now: u64) -> Probe {
    let mut value = probe(cells, index);
    loop {
        if value > expired_at_most {
            if C::is_sealed(value) {
                return Probe::Sealed;
            }
            return Probe::Live(value);
        }
        match cells.replace_slot(index, value, encode(now)) {
            Ok(()) => return Probe::Admitted(value),
            Err(found) => {
                if cfg!(slidelimit_loom_mutant = "ring_cas_loser_refuses") {
                    return Probe::GaveUp;
                }
                value = found;
                retry_hint();
            }
        }
    }
}

#[inline]
pub(super) fn check_and_hit<C: RingCells>(cells: &mut C, now: u64) -> Result<bool, Retired> {
    reserve::<C, true, ()>(cells, now).map(|taken| taken.is_some())
}

/// What an admission reports: nothing (`()`: a plain `check_and_hit`, whose probe then
/// returns a flag, as cheap as before layered limits) or the slot it took ([`RingTaken`]).
pub(super) trait Admission: Copy {
    fn at(index: usize, replaced: u64, written: u64) -> Self;
}

impl Admission for () {
    #[inline(always)]
    fn at(_index: usize, _replaced: u64, _written: u64) -> Self {}
}

impl Admission for RingTaken {
    #[inline(always)]
    fn at(index: usize, replaced: u64, written: u64) -> Self {
        Self {
            index,
            replaced,
            written,
        }
    }
}

/// An admission of a ring that is one window of several ([`crate::window::layers`]), as
/// [`undo`] can take it back: the slot, the value the admission replaced, and its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingTaken {
    index: usize,
    replaced: u64,
    written: u64,
}

/// [`check_and_hit`] that says which slot it took. `RESORTS`: whether the admission may
/// re-sort the ring; a ring whose admissions may be undone never re-sorts (see [`undo`]).
#[inline]
pub(super) fn reserve<C: RingCells, const RESORTS: bool, A: Admission>(
    cells: &mut C,
    now: u64,
) -> Result<Option<A>, Retired> {
    let now = now.min(MAX_TICK);
    if now < cells.blocked_until() {
        return Ok(None);
    }
    probe_and_admit::<C, RESORTS, A>(cells, now)
}

/// Takes back an admission [`reserve`] made (without re-sorting) in a ring that nobody
/// re-sorts or seals: a CAS from the admission's value back to the value it replaced. In such
/// a ring a slot that holds the admission's value still holds that admission: values only
/// grow (an admission needs a value at least `W` older, `hit` replaces a smaller one), except
/// for undos, and an undo restores a value from before its own admission, which the slot had
/// passed only through that admission. So the undo restores exactly the slot's history
/// without the admission, and the pigeonhole argument of the module docs holds for the
/// admissions that stay. If the CAS fails (a later reservation or `hit` replaced the value),
/// the undo does nothing, and the reservation's tick may stand again later (the later
/// reservation's own undo restores it) as a hit no call was admitted for, until it expires or
/// is replaced: it only ever refuses more, and the slot's chain of values is what the
/// argument above needs either way.
pub(super) fn undo<C: RingCells>(cells: &mut C, taken: RingTaken) {
    let current = if cfg!(slidelimit_loom_mutant = "layers_undo_by_store") {
        // Deliberately broken: restores whatever the slot holds now, as a plain store would,
        // so a later admission that replaced the undone one is erased too.
        cells.slot(taken.index)
    } else {
        taken.written
    };
    let _ = cells.replace_slot(taken.index, current, taken.replaced);
}

fn probe_and_admit<C: RingCells, const RESORTS: bool, A: Admission>(
    cells: &mut C,
    now: u64,
) -> Result<Option<A>, Retired> {
    let written = encode(now);
    let taken = |index: usize, replaced: u64| A::at(index, replaced, written);
    let capacity = cells.capacity();
    let expired_at_most = expired_at_most(cells.window_ticks(), now);
    loop {
        let start = cells.cursor();
        if let Some(oldest_at) = cells.known_order() {
            return Ok(check_and_hit_in_order::<C, RESORTS, A>(
                cells,
                now,
                start,
                oldest_at,
                expired_at_most,
            ));
        }
        // The cursor's line first: in time order the oldest slot is there.
        let mut index = start;
        for _ in 0..CURSOR_STRIDE.min(capacity) {
            match try_slot(cells, index, expired_at_most, now) {
                Probe::Admitted(replaced) => {
                    after_admission::<C, RESORTS>(cells, start, index);
                    return Ok(Some(taken(index, replaced)));
                }
                Probe::Live(_) => {}
                Probe::Sealed => {
                    cells.settle_seal(index)?;
                    retry_hint();
                    continue;
                }
                Probe::GaveUp => return Ok(None),
            }
            index = next_index(index, capacity);
        }
        if let Some(answer) = probe_whole_ring::<C, RESORTS>(cells, now, start, expired_at_most)? {
            return Ok(answer.map(|(index, replaced)| taken(index, replaced)));
        }
        // A re-sort overlapped the probe.
        retry_hint();
    }
}

/// The probe once the cursor's line had no expired slot: every slot from the cursor, all
/// read after the re-sort generation (a refusal rests on every slot it read; see
/// scan_is_consistent), so the first line is read again. `Ok(None)`: a re-sort overlapped
/// it; start again.
#[inline(never)]
fn probe_whole_ring<C: RingCells, const RESORTS: bool>(
    cells: &mut C,
    now: u64,
    start: usize,
    expired_at_most: u64,
) -> Result<Option<Option<(usize, u64)>>, Retired> {
    let capacity = cells.capacity();
    let before = cells.resort_generation();
    if before % 2 == 1 {
        return Ok(None);
    }
    let mut index = start;
    let mut oldest_live = u64::MAX;
    for _ in 0..capacity {
        match try_slot(cells, index, expired_at_most, now) {
            Probe::Admitted(replaced) => {
                after_admission::<C, RESORTS>(cells, start, index);
                return Ok(Some(Some((index, replaced))));
            }
            Probe::Live(value) => oldest_live = oldest_live.min(value),
            Probe::Sealed => {
                cells.settle_seal(index)?;
                return Ok(None);
            }
            Probe::GaveUp => return Ok(Some(None)),
        }
        index = next_index(index, capacity);
    }
    if !scan_is_consistent(cells, before) && !cfg!(slidelimit_loom_mutant = "resort_unchecked_scan")
    {
        return Ok(None);
    }
    // Every slot was seen live, and no re-sort moved a value meanwhile: each value read is a
    // lower bound on what some slot holds from then on, so min + W bounds the first tick at
    // which any slot can expire.
    let window_ticks = cells.window_ticks();
    cells.raise_blocked_until((oldest_live - 1).saturating_add(window_ticks));
    Ok(Some(None))
}

/// [`check_and_hit`] on cells that know their ring ascends from `oldest_at`: the slots from
/// the cursor up to `oldest_at` hold the newest hits, ascending, so if the cursor's slot is
/// live the full probe would pass all of them and stop at `oldest_at` (or refuse there). Two
/// reads, the same slot and the same displacement as the full probe.
fn check_and_hit_in_order<C: RingCells, const RESORTS: bool, A: Admission>(
    cells: &mut C,
    now: u64,
    start: usize,
    oldest_at: usize,
    expired_at_most: u64,
) -> Option<A> {
    let mut index = start;
    let mut value = probe(cells, start);
    if value > expired_at_most && start != oldest_at {
        index = oldest_at;
        value = probe(cells, oldest_at);
    }
    if value > expired_at_most {
        // The oldest value is live, so every value is.
        let window_ticks = cells.window_ticks();
        cells.raise_blocked_until((value - 1).saturating_add(window_ticks));
        return None;
    }
    let written = encode(now);
    let replaced = cells.replace_slot(index, value, written);
    debug_assert!(replaced.is_ok(), "only the atomic form's CAS can fail");
    after_admission::<C, RESORTS>(cells, start, index);
    Some(A::at(index, value, written))
}

pub(super) fn hit<C: RingCells>(cells: &mut C, now: u64) -> Result<(), Retired> {
    let new = encode(now.min(MAX_TICK));
    let capacity = cells.capacity();
    loop {
        let start = cells.cursor();
        let (min_index, min_value) = match cells.known_order() {
            Some(oldest_at) => {
                // The first minimum from the cursor, as the scan below would find it: the
                // cursor's slot if it holds the oldest value, else `oldest_at`.
                let first = probe(cells, start);
                let oldest = probe(cells, oldest_at);
                if first == oldest {
                    (start, first)
                } else {
                    (oldest_at, oldest)
                }
            }
            None => match minimum_from(cells, start)? {
                Some(found) => found,
                None => {
                    retry_hint();
                    continue;
                }
            },
        };
        if min_value >= new {
            // Older than every retained hit: it can never change an answer under this
            // limit, but a raised or longer one must count it.
            cells.carry_dropped(new);
            if cfg!(slidelimit_loom_mutant = "hit_drop_unpublished") {
                // Deliberately broken for the loom negative control: no slot RMW orders the
                // count before a later seal.
                return Ok(());
            }
            return cells.publish_carried(min_index, min_value);
        }
        if slot_is_live(min_value, cells.window_ticks(), now.min(MAX_TICK)) {
            // A forced hit beyond the limit drops a live one: no admission needs it under
            // this limit, but a raised one must count it (and the slot's chain no longer
            // keeps `W` between its hits, which the longer-window rule relies on).
            cells.carry_dropped(min_value);
        }
        if cells.replace_slot(min_index, min_value, new).is_ok() {
            cells.set_cursor(next_index(min_index, capacity));
            return Ok(());
        }
        retry_hint();
    }
}

/// The first minimum slot from `start` (index and value), reading every slot unless it meets
/// an empty one; `Ok(None)` when a re-sort moved values meanwhile (the caller starts again).
fn minimum_from<C: RingCells>(
    cells: &mut C,
    start: usize,
) -> Result<Option<(usize, u64)>, Retired> {
    let capacity = cells.capacity();
    let before = cells.resort_generation();
    if before % 2 == 1 {
        return Ok(None);
    }
    let (mut min_index, mut min_value) = (start, probe(cells, start));
    let mut index = next_index(start, capacity);
    while index != start && min_value != EMPTY {
        let value = probe(cells, index);
        if C::is_sealed(value) {
            cells.settle_seal(index)?;
            return Ok(None);
        }
        if value < min_value {
            (min_index, min_value) = (index, value);
        }
        index = next_index(index, capacity);
    }
    if C::is_sealed(min_value) {
        cells.settle_seal(min_index)?;
        return Ok(None);
    }
    if !scan_is_consistent(cells, before) {
        return Ok(None);
    }
    Ok(Some((min_index, min_value)))
}

pub(super) fn allowed<C: RingCells>(cells: &C, now: u64) -> Result<bool, Retired> {
    let now = now.min(MAX_TICK);
    if now < cells.blocked_until() {
        return Ok(false);
    }
    let window_ticks = cells.window_ticks();
    if let Some(oldest_at) = cells.known_order() {
        return Ok(!slot_is_live(probe(cells, oldest_at), window_ticks, now));
    }
    'call: loop {
        let before = cells.resort_generation();
        if before % 2 == 1 {
            retry_hint();
            continue;
        }
        for index in 0..cells.capacity() {
            let value = probe(cells, index);
            if C::is_sealed(value) {
                cells.settle_seal(index)?;
                retry_hint();
                continue 'call;
            }
            if !slot_is_live(value, window_ticks, now) {
                // Room now, whatever a sweeper or a re-sort does next: a read changes
                // nothing, so it linearizes at this load.
                return Ok(true);
            }
        }
        if scan_is_consistent(cells, before) {
            return Ok(false);
        }
        retry_hint();
    }
}

pub(super) fn status<C: RingCells>(cells: &C, now: u64) -> Result<Status, Retired> {
    let now = now.min(MAX_TICK);
    let window_ticks = cells.window_ticks();
    let capacity = cells.capacity();
    let (count, oldest_live) = match cells.known_order() {
        Some(oldest_at) => live_in_order(cells, oldest_at, window_ticks, now),
        None => live_by_scan(cells, window_ticks, now)?,
    };
    let max_requests = capacity as u64;
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

/// Live count and oldest live value of a ring ascending from `oldest_at`: the expired values
/// are a prefix from there, found by binary search (O(log N) reads).
fn live_in_order<C: RingCells>(
    cells: &C,
    oldest_at: usize,
    window_ticks: u64,
    now: u64,
) -> (u64, u64) {
    let capacity = cells.capacity();
    let (mut expired, mut live_from) = (0, capacity);
    // Invariant: offsets below `expired` are expired, offsets from `live_from` are live.
    while expired < live_from {
        let middle = expired + (live_from - expired) / 2;
        let value = probe(cells, index_after(oldest_at, middle, capacity));
        if slot_is_live(value, window_ticks, now) {
            live_from = middle;
        } else {
            expired = middle + 1;
        }
    }
    let oldest_live = if live_from < capacity {
        probe(cells, index_after(oldest_at, live_from, capacity))
    } else {
        u64::MAX
    };
    ((capacity - live_from) as u64, oldest_live)
}

fn live_by_scan<C: RingCells>(
    cells: &C,
    window_ticks: u64,
    now: u64,
) -> Result<(u64, u64), Retired> {
    'call: loop {
        let before = cells.resort_generation();
        if before % 2 == 1 {
            retry_hint();
            continue;
        }
        let mut count = 0u64;
        let mut oldest_live = u64::MAX;
        for index in 0..cells.capacity() {
            let value = probe(cells, index);
            if C::is_sealed(value) {
                cells.settle_seal(index)?;
                retry_hint();
                continue 'call;
            }
            if slot_is_live(value, window_ticks, now) {
                count += 1;
                oldest_live = oldest_live.min(value);
            }
        }
        if scan_is_consistent(cells, before) {
            return Ok((count, oldest_live));
        }
        retry_hint();
    }
}

/// The first tick from which a ring whose newest slot value is `newest` answers every call
/// as an empty ring would.
pub(super) fn idle_from_newest(newest: u64, window_ticks: u64) -> u64 {
    if newest == EMPTY {
        0
    } else {
        (newest - 1).saturating_add(window_ticks)
    }
}

/// Whether every slot's hit has left the window of a caller at `horizon` (a sealed slot
/// counts as not fresh). Walks back from the slot written last, which in time order holds the
/// newest hit, so a live key is settled by its first load.
pub(super) fn is_idle_by<C: RingCells>(cells: &C, horizon: u64) -> bool {
    let capacity = cells.capacity();
    let window_ticks = cells.window_ticks();
    let newest_first = cells.cursor() + capacity - 1;
    (0..capacity).all(|back| {
        let value = cells.slot((newest_first - back) % capacity);
        !C::is_sealed(value) && !slot_is_live(value, window_ticks, horizon)
    })
}
