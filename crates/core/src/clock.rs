//! Clocks that turn time into ticks for callers who do not bring their own timestamps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A source of `u64` ticks for the limiters' `now` arguments.
///
/// The limiters accept ticks in any order: a clock that goes backwards only makes calls out of
/// order, which are answered conservatively (see the crate's guarantees). Answers are exact
/// when each key's calls see non-decreasing ticks, which a monotonic clock gives:
/// [`MonotonicClock`] never goes backwards; [`ManualClock`] goes wherever a test sets it.
pub trait Clock: Send + Sync {
    /// The current tick.
    fn now_ticks(&self) -> u64;
}

/// Monotonic nanoseconds since one origin shared by every `MonotonicClock` in the process
/// (`std::time::Instant`), so ticks read from two clocks compare.
///
/// Use a window in nanoseconds with it: `Limit::new(100, 1_000_000_000)` is 100 per second.
///
/// ```
/// use slidelimit::{Clock, MonotonicClock};
/// let (a, b) = (MonotonicClock::new(), MonotonicClock::new());
/// let first = a.now_ticks();
/// assert!(b.now_ticks() >= first, "one origin: b's tick is later than a's");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock on the process's shared origin (the first `MonotonicClock` created).
    #[must_use]
    pub fn new() -> Self {
        static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        Self {
            origin: *ORIGIN.get_or_init(Instant::now),
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
