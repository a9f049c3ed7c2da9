//! The exact log in plain integers, for use under a lock.

use super::algorithm::{allowed, check_and_hit, fresh_from_newest, hit, is_fresh_by, status};
use super::{capacity_of, RingCells, EMPTY};
use crate::window::{never_sealed, SequentialWindow, Status};
use crate::Limit;

/// The exact log in plain integers, for use under a lock.
#[derive(Clone, Debug)]
pub struct SequentialRing {
    pub(super) slots: Box<[u64]>,
    window_ticks: u64,
    cursor: usize,
    pub(super) blocked_until: u64,
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
