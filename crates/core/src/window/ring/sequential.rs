//! The exact log in plain integers, for use under a lock.

use super::algorithm::{
    allowed, check_and_hit, hit, idle_from_newest, is_idle_by, reserve, status, undo, RingTaken,
};
use super::{capacity_of, limit_of, slot_is_live, RingCells, EMPTY};
use crate::limit::Limit;
use crate::window::by_use::WordsByUse;
use crate::window::layers::SequentialLayer;
use crate::window::state::Carried;
use crate::window::state::WindowState;
use crate::window::{never_sealed, Retired, SequentialWindow, Status};

// The slots never written read zero in `WordsByUse`: they must read as empty.
const _: () = assert!(EMPTY == 0, "an empty slot is zero");

/// The exact log in plain integers, for use under a lock.
#[derive(Clone, Debug)]
pub struct SequentialRing {
    /// The slot values, inline while one slot holds a value (see [`WordsByUse`]: most keys
    /// under churn are hit once and never allocate their slots).
    slots: WordsByUse,
    /// How many slots the ring has: the limit's `max_requests` (at most 2^24, so `u32`: with
    /// the cursor and [`Descents`] in 32 bits the ring is 80 bytes, and a per-key-lock entry
    /// in papaya's node is a 128-byte block, the largest glibc keeps on its fast lists; at
    /// 96 it was 144 and every free went through the arena's lock and bins).
    capacity: u32,
    window_ticks: u64,
    cursor: u32,
    pub(super) blocked_until: u64,
    /// The descending neighbours around the ring, kept exact on every write, so the ring
    /// knows whether it ascends around and from where, in O(1) (see [`Descents`] and
    /// `RingCells::known_order`).
    descents: Descents,
    /// Displacement counted since the last re-sort (see the parent module's docs).
    displacement: u64,
    /// Hits kept from before a lowered limit (see [`Carried`]).
    carried: Carried,
}

impl SequentialRing {
    /// An empty ring for `limit`.
    #[must_use]
    #[inline]
    pub fn new(limit: Limit) -> Self {
        Self {
            slots: WordsByUse::zeroed(),
            capacity: limit.max_requests_u32(),
            window_ticks: limit.window_ticks(),
            cursor: 0,
            blocked_until: 0,
            // All empty: no descent.
            descents: Descents {
                count: 0,
                index_sum: 0,
            },
            displacement: 0,
            carried: Carried::NONE,
        }
    }

    /// A ring for `limit` holding `values` (slot values, as many as the limit's requests).
    pub(super) fn from_slot_values(limit: Limit, values: Vec<u64>, carried: Carried) -> Self {
        debug_assert_eq!(values.len(), capacity_of(limit));
        let mut ring = Self::new(limit);
        ring.slots = WordsByUse::from_values(values);
        ring.carried = carried;
        ring.recount_descents();
        ring
    }

    /// Every slot's value, in slot order.
    #[cfg(test)]
    pub(super) fn slot_values(&self) -> Vec<u64> {
        self.slots.to_vec(self.len())
    }

    /// How many slots the ring has.
    #[inline]
    fn len(&self) -> usize {
        self.capacity as usize
    }

    /// The index after `index`, around the ring.
    fn next(&self, index: usize) -> usize {
        next(self.len(), index)
    }

    /// Recounts every descent (after a re-sort or a restore).
    fn recount_descents(&mut self) {
        let capacity = self.len();
        self.descents = match self.slots.allocated_mut() {
            Some(slots) => Descents::count(slots),
            // Slot 0 alone may hold a value: the pair (0, 1) descends if it does (a ring of
            // one slot has no pair of distinct neighbours).
            None => Descents::of_first(self.slots.first_unallocated().unwrap_or(EMPTY), capacity),
        };
    }

    /// The index before `index`, around the ring.
    fn previous(&self, index: usize) -> usize {
        previous(self.len(), index)
    }
}

/// How many neighbours `(i, i + 1)` of a ring, around it, descend (`slots[i] > slots[i + 1]`),
/// and the sum of their `i`: a write changes two pairs, so both stay exact at O(1) a write.
/// At most one descent means the ring ascends around, from the slot after it.
///
/// In 32 bits each (see `SequentialRing::capacity`): the count is at most the slot count
/// (2^24); the sum wraps, and is read only when the count is one, when it is that descent's
/// index (below 2^24), which arithmetic modulo 2^32 gives exactly.
#[derive(Clone, Copy, Debug)]
struct Descents {
    count: u32,
    index_sum: u32,
}

impl Descents {
    /// Every descent of `slots`, around the ring.
    fn count(slots: &[u64]) -> Self {
        let mut counts = Self {
            count: 0,
            index_sum: 0,
        };
        if slots.len() > 1 {
            for index in 0..slots.len() {
                counts.pair(slots, index, next(slots.len(), index), true);
            }
        }
        counts
    }

    /// The descents of a ring of `capacity` slots whose slot 0 holds `first` and every other
    /// is empty: the pair (0, 1) descends if `first` is a hit.
    fn of_first(first: u64, capacity: usize) -> Self {
        Self {
            count: u32::from(capacity > 1 && first > EMPTY),
            index_sum: 0,
        }
    }

    /// Counts the pair `(index, next)` as a descent (`add`) or takes it back.
    #[inline]
    fn pair(&mut self, slots: &[u64], index: usize, next: usize, add: bool) {
        if slots[index] > slots[next] {
            // A slot index is below 2^24: it fits, and the sum is kept modulo 2^32.
            let index = index as u32;
            if add {
                self.count += 1;
                self.index_sum = self.index_sum.wrapping_add(index);
            } else {
                self.count -= 1;
                self.index_sum = self.index_sum.wrapping_sub(index);
            }
        }
    }

    /// Writes `new` in `slots[index]`, keeping the counts exact: a write changes the two
    /// pairs the slot is part of.
    #[inline]
    fn write(&mut self, slots: &mut [u64], index: usize, new: u64) {
        let len = slots.len();
        if len == 1 {
            // No pair of distinct neighbours: never a descent.
            slots[index] = new;
            return;
        }
        let (previous, next) = (previous(len, index), next(len, index));
        if self.count == 1 && self.index_sum as usize == previous && new >= slots[previous] {
            // The in-order write: the newest value over the oldest (the slot after the only
            // descent). The descent moves to this slot unless its successor equals `new`.
            slots[index] = new;
            if new > slots[next] {
                // Below 2^24 (see `pair`).
                self.index_sum = index as u32;
            } else {
                (self.count, self.index_sum) = (0, 0);
            }
            return;
        }
        self.pair(slots, previous, index, false);
        self.pair(slots, index, next, false);
        slots[index] = new;
        self.pair(slots, previous, index, true);
        self.pair(slots, index, next, true);
    }
}

/// The index after `index` in a ring of `len` slots.
#[inline]
fn next(len: usize, index: usize) -> usize {
    if index + 1 == len {
        0
    } else {
        index + 1
    }
}

/// The index before `index` in a ring of `len` slots.
#[inline]
fn previous(len: usize, index: usize) -> usize {
    if index == 0 {
        len - 1
    } else {
        index - 1
    }
}

impl RingCells for SequentialRing {
    const SEALABLE: bool = false;
    fn capacity(&self) -> usize {
        self.len()
    }
    fn window_ticks(&self) -> u64 {
        self.window_ticks
    }
    fn slot(&self, index: usize) -> u64 {
        self.slots.get(index)
    }
    fn replace_slot(&mut self, index: usize, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.slots.get(index), current);
        // Slot values only grow, but for the undo of a layered window's reservation (which
        // restores the value it replaced; the in-order shortcut below never applies to it:
        // it needs `new` at or above a value above `current`).
        debug_assert_ne!(new, current, "a write changes the slot");
        match self.slots.allocated_mut() {
            Some(slots) => self.descents.write(slots, index, new),
            None if index == 0 => {
                // A key's first hit: slot 0, inline (see `WordsByUse`).
                self.slots.set_first_unallocated(new);
                self.descents = Descents::of_first(new, self.len());
            }
            None => self
                .descents
                .write(self.slots.allocate(self.len()), index, new),
        }
        Ok(())
    }
    fn cursor(&self) -> usize {
        self.cursor as usize
    }
    fn set_cursor(&mut self, index: usize) {
        // A slot index: below the slot count, a `u32`.
        self.cursor = index as u32;
    }
    fn blocked_until(&self) -> u64 {
        self.blocked_until
    }
    fn raise_blocked_until(&mut self, tick: u64) {
        self.blocked_until = self.blocked_until.max(tick);
    }
    fn carry_dropped(&mut self, value: u64) {
        self.carried = self.carried.with_dropped(value - 1);
    }
    fn publish_carried(&mut self, _index: usize, _value: u64) -> Result<(), Retired> {
        // Under a lock: nothing to order.
        Ok(())
    }
    fn known_order(&self) -> Option<usize> {
        match self.descents.count {
            // Every value equal: ascending from anywhere, so from where the probe starts.
            0 => Some(self.cursor as usize),
            // Ascending from the slot after the only descent.
            1 => Some(self.next(self.descents.index_sum as usize)),
            _ => None,
        }
    }
    fn add_displacement(&mut self, slots: u64) -> u64 {
        self.displacement = self.displacement.saturating_add(slots);
        self.displacement
    }
    fn resort(&mut self) -> bool {
        let len = self.len();
        self.slots.allocate(len).sort_unstable();
        self.cursor = 0;
        self.displacement = 0;
        self.recount_descents();
        true
    }
    fn resort_generation(&self) -> u32 {
        0
    }
    fn settle_seal(&self, _index: usize) -> Result<(), Retired> {
        unreachable!("a sequential ring holds no SEALED value")
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
    fn status_n(&self, now: u64, n: u64) -> Status {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        never_sealed(status(self, now))
    }
    fn limit(&self) -> Limit {
        limit_of(self.len(), self.window_ticks)
    }
    fn export(&self) -> WindowState {
        WindowState::from_slot_values(
            self.slots.to_vec(self.len()),
            self.carried,
            self.window_ticks,
        )
    }
    fn idle_from(&self) -> u64 {
        let newest = match self.known_order() {
            // Ascending from the oldest: the newest is just before it.
            Some(oldest_at) => self.slots.get(self.previous(oldest_at)),
            None => self.slots.max(),
        };
        idle_from_newest(newest, self.window_ticks)
    }
    fn is_idle_by(&self, horizon: u64) -> bool {
        match self.known_order() {
            Some(oldest_at) => !slot_is_live(
                self.slots.get(self.previous(oldest_at)),
                self.window_ticks,
                horizon,
            ),
            None => is_idle_by(self, horizon),
        }
    }
}

impl SequentialLayer for SequentialRing {
    type Taken = RingTaken;
    fn reserve(&mut self, now: u64, n: u64, final_window: bool) -> Option<RingTaken> {
        debug_assert_eq!(n, 1, "weights are checked by ExactLog::check_weight");
        // A reservation that may be undone never re-sorts: an undo trusts the slot it
        // reserved (see `undo`).
        never_sealed(if final_window {
            reserve::<_, true, RingTaken>(self, now)
        } else {
            reserve::<_, false, RingTaken>(self, now)
        })
    }
    fn commit(&mut self, _taken: RingTaken) {}
    fn undo(&mut self, taken: RingTaken) {
        undo(self, taken);
    }
}

#[cfg(test)]
mod tests {
    use super::Descents;

    /// The descents' index sum is kept modulo 2^32: a ring with enough descents wraps it,
    /// and once writes bring the ring back to one descent the sum is that descent's index
    /// again, as a recount says.
    #[test]
    fn the_descent_sum_comes_back_exact_after_it_wrapped() {
        let len = 200_000_u64;
        // Every odd slot far above its successor: a descent at each odd index, whose indices
        // sum to about 10^10, past 2^32.
        let mut slots: Vec<u64> = (0..len).map(|i| (i % 2) * 1_000_000 + i + 1).collect();
        let mut descents = Descents::count(&slots);
        assert_eq!(u64::from(descents.count), len / 2);
        // In order again, slot by slot, each above every value before.
        for index in 0..slots.len() {
            descents.write(&mut slots, index, 10_000_000 + index as u64);
        }
        let recounted = Descents::count(&slots);
        assert_eq!((descents.count, descents.index_sum), (1, (len - 1) as u32));
        assert_eq!(
            (descents.count, descents.index_sum),
            (recounted.count, recounted.index_sum)
        );
    }
}
