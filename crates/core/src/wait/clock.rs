//! Clocks whose ticks map back to timer instants, so a waiter can sleep until a tick.

use std::time::Duration;

use tokio::time::Instant;

use crate::clock::{Clock, MonotonicClock};

/// About thirty years: where a wake-up that does not fit in an [`Instant`] is put (tokio's
/// timers treat anything that far as "never" in practice).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A [`Clock`] whose ticks a waiter can sleep until: [`WaitClock::instant_at`] is the first
/// instant at which [`Clock::now_ticks`] reads at least a given tick.
///
/// The contract a waiter relies on: after `tokio::time::sleep_until(clock.instant_at(t))`
/// returns, `clock.now_ticks() >= t`. An `instant_at` that is later than the truth only
/// makes waiters wake late; one that is earlier makes them wake, find the key still full and
/// sleep again.
pub trait WaitClock: Clock {
    /// The first instant at which this clock reads `tick` or more; a far-future instant if
    /// that is beyond what an [`Instant`] holds.
    fn instant_at(&self, tick: u64) -> Instant;
}

/// Ticks of a chosen length since an origin, read from tokio's clock
/// ([`tokio::time::Instant`]): under a paused test runtime (`start_paused`,
/// `tokio::time::advance`) its ticks stop and jump with tokio's timers, which
/// `std::time::Instant`, and so [`MonotonicClock`], does not.
///
/// A tick is `floor((now - origin) / tick)`, so [`WaitClock::instant_at`] is exact:
/// `origin + t * tick`.
///
/// ```
/// use std::time::Duration;
/// use slidelimit::Clock;
/// use slidelimit::wait::{TokioClock, WaitClock};
///
/// let clock = TokioClock::new(Duration::from_millis(1));
/// assert_eq!(clock.instant_at(1_500) - clock.origin(), Duration::from_millis(1_500));
/// assert!(clock.now_ticks() < 1_000, "a second has not passed since the clock was made");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: Instant,
    tick_nanos: u64,
}

impl TokioClock {
    /// A clock counting ticks of length `tick` from now (tokio's now: the paused clock's,
    /// inside a paused runtime).
    ///
    /// # Panics
    /// If `tick` is zero or longer than `u64::MAX` nanoseconds (584 years).
    #[must_use]
    pub fn new(tick: Duration) -> Self {
        Self::with_origin(Instant::now(), tick)
    }

    /// A clock counting ticks of length `tick` from `origin`, so that several clocks (and
    /// the processes or tasks that built them) agree on tick numbers.
    ///
    /// # Panics
    /// If `tick` is zero or longer than `u64::MAX` nanoseconds.
    #[must_use]
    pub fn with_origin(origin: Instant, tick: Duration) -> Self {
        let tick_nanos = u64::try_from(tick.as_nanos()).expect("a tick of at most u64::MAX ns");
        assert!(tick_nanos > 0, "a tick must last at least a nanosecond");
        Self { origin, tick_nanos }
    }

    /// The instant of tick 0.
    #[must_use]
    pub const fn origin(&self) -> Instant {
        self.origin
    }

    /// The length of one tick.
    #[must_use]
    pub const fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_nanos)
    }
}

impl Clock for TokioClock {
    fn now_ticks(&self) -> u64 {
        let elapsed = Instant::now().saturating_duration_since(self.origin);
        // The quotient of a u128 by a nonzero u64 only fits in a u64 for 584 years of
        // nanosecond ticks; saturate past that, as MonotonicClock does.
        u64::try_from(elapsed.as_nanos() / u128::from(self.tick_nanos)).unwrap_or(u64::MAX)
    }
}

impl WaitClock for TokioClock {
    fn instant_at(&self, tick: u64) -> Instant {
        let nanos = u128::from(tick) * u128::from(self.tick_nanos);
        duration_from_nanos(nanos)
            .and_then(|offset| self.origin.checked_add(offset))
            .unwrap_or_else(|| Instant::now() + FAR_FUTURE)
    }
}

/// Real time only: `MonotonicClock` reads `std::time::Instant`, which a paused tokio runtime
/// does not pause. The instant is found from one reading of each clock: the tick read first,
/// then tokio's now, so the answer is never early (it may be late by the nanoseconds between
/// the two readings).
impl WaitClock for MonotonicClock {
    fn instant_at(&self, tick: u64) -> Instant {
        let now_ticks = self.now_ticks();
        let now = Instant::now();
        let ahead = Duration::from_nanos(tick.saturating_sub(now_ticks));
        now.checked_add(ahead).unwrap_or(now + FAR_FUTURE)
    }
}

/// `nanos` as a `Duration`, if it fits.
fn duration_from_nanos(nanos: u128) -> Option<Duration> {
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    // The remainder is below 1e9, so it fits in a u32.
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

#[cfg(test)]
mod tests {
    use super::{duration_from_nanos, WaitClock};
    use crate::clock::{Clock, MonotonicClock};
    use std::time::Duration;
    use tokio::time::Instant;

    #[test]
    fn a_monotonic_clocks_instants_are_never_early_and_at_most_the_ticks_ahead() {
        let clock = MonotonicClock::new();
        let past = clock.now_ticks();
        assert!(
            clock.instant_at(past) <= Instant::now(),
            "a tick already read is now"
        );
        let ahead = clock.now_ticks() + 1_000_000_000;
        let at = clock.instant_at(ahead);
        // `at` is tokio's now plus the ticks still to go, read after the tick: no more
        // than a second from any later now.
        assert!(at.saturating_duration_since(Instant::now()) <= Duration::from_secs(1));
        assert!(clock.instant_at(u64::MAX) > Instant::now() + Duration::from_secs(86_400));
    }

    #[test]
    fn nanos_convert_exactly_or_not_at_all() {
        assert_eq!(
            duration_from_nanos(1_500_000_001),
            Some(Duration::new(1, 500_000_001))
        );
        assert_eq!(
            duration_from_nanos(u128::from(u64::MAX) * 1_000_000_000 + 999_999_999),
            Some(Duration::MAX)
        );
        assert_eq!(duration_from_nanos(u128::MAX), None);
    }
}
