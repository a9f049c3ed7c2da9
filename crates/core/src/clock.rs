//! Clocks that turn time into ticks for callers who do not bring their own timestamps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A source of `u64` ticks for the limiters' `now` arguments.
pub trait Clock: Send + Sync {
    /// The current tick. Successive calls on one thread never go backwards.
    fn now_ticks(&self) -> u64;
}

/// Monotonic nanoseconds since the clock was created (`std::time::Instant`).
///
/// Use a window in nanoseconds with it: `Limit::new(100, 1_000_000_000)` is 100 per second.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose tick 0 is now.
    #[must_use]
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ticks(&self) -> u64 {
        // u64 nanoseconds last 584 years; saturate rather than wrap past that.
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to: for tests and simulations.
///
/// ```
/// use slidelimit::{Clock, ManualClock};
/// let clock = ManualClock::new(10);
/// clock.advance(5);
/// assert_eq!(clock.now_ticks(), 15);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    ticks: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `ticks`.
    #[must_use]
    pub const fn new(ticks: u64) -> Self {
        Self {
            ticks: AtomicU64::new(ticks),
        }
    }

    /// Moves the clock to `ticks` (it may go backwards: tests use that for late callers).
    pub fn set(&self, ticks: u64) {
        // Relaxed: the clock value is the only data; no other memory is published with it.
        self.ticks.store(ticks, Ordering::Relaxed);
    }

    /// Moves the clock forward by `ticks`, saturating at `u64::MAX`.
    pub fn advance(&self, ticks: u64) {
        // Relaxed: a counter with no data behind it; fetch_update keeps the add saturating.
        let _ = self
            .ticks
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(ticks))
            });
    }
}

impl Clock for ManualClock {
    fn now_ticks(&self) -> u64 {
        // Relaxed: pairs with the Relaxed store in `set`; the tick carries no other data.
        self.ticks.load(Ordering::Relaxed)
    }
}
