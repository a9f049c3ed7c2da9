//! The benchmark's time: one shared fake clock that every thread advances as it works, so the
//! window keeps sliding at a rate tied to work done, not to how fast a variant runs; or the
//! real monotonic clock, to show what reading it costs.
//!
//! The fake clock is governor's [`FakeRelativeClock`], shared by every variant: governor reads
//! it itself, slidelimit's variants are handed its value. Both read the same atomic, so the
//! clock costs every variant the same. Its unit is the nanosecond; a tick is [`TICK_NS`].

use std::time::Duration;

use governor::clock::{Clock as _, FakeRelativeClock};
use slidelimit::{Clock as _, MonotonicClock};

/// One tick of the fake clock, in nanoseconds (the unit every limiter sees).
pub const TICK_NS: u64 = 1_000;

/// Each thread advances the fake clock by one tick after this many of its own decisions, so
/// the clock moves one tick per this many decisions in all, whatever the thread count.
pub const OPS_PER_TICK: u64 = 64;

/// The clock of one cell.
#[derive(Clone, Debug)]
pub enum BenchClock {
    /// Shared fake time, advanced by the workers.
    Fake(FakeRelativeClock),
    /// `std::time::Instant` nanoseconds through [`slidelimit::MonotonicClock`].
    Real(MonotonicClock),
}

impl BenchClock {
    /// A fresh fake clock at 0.
    #[must_use]
    pub fn fake() -> Self {
        Self::Fake(FakeRelativeClock::default())
    }

    /// The real monotonic clock, 0 now.
    #[must_use]
    pub fn real() -> Self {
        Self::Real(MonotonicClock::new())
    }

    /// The current time in nanoseconds.
    #[inline]
    #[must_use]
    pub fn now(&self) -> u64 {
        match self {
            Self::Fake(clock) => clock.now().as_u64(),
            Self::Real(clock) => clock.now_ticks(),
        }
    }

    /// Advances fake time by one tick; real time moves by itself.
    #[inline]
    pub fn tick(&self) {
        if let Self::Fake(clock) = self {
            clock.advance(Duration::from_nanos(TICK_NS));
        }
    }
}
