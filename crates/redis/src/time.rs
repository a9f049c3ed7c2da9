//! Whose clock decides: the Redis server's `TIME` (the default) or the caller's.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use slidelimit::Clock;

/// Where a call's timestamp comes from. Ticks are **microseconds** in both cases (`TIME`'s
/// resolution), so a limit of 100 per second is `Limit::new(100, 1_000_000)`, or a limit
/// built from durations in any tick (`Limit::per_second(100, Duration::from_nanos(1))`),
/// which every Redis limiter converts to microseconds ([`Limit::in_ticks_of`]).
///
/// [`Limit::in_ticks_of`]: slidelimit::Limit::in_ticks_of
///
/// - [`TimeSource::Server`] (default): the script reads the server's `TIME`. One clock
///   decides for every process and host, so clock skew between clients cannot break the
///   limit, and a client needs no clock at all. What remains: the server's wall clock may
///   be stepped (NTP, a failover to a replica with another clock); a step back of `s`
///   makes hits up to `s` in the future count as live (conservative), a step forward of `s`
///   ages every hit by `s` at once (up to `s` of the window's hits may be forgotten early).
/// - [`TimeSource::Caller`]: each call carries the caller's tick. Needed to replay traces
///   or to test with a manual clock, and it saves the server a `TIME` call, but across
///   hosts the limit then holds only in the callers' own timelines: a caller whose clock
///   runs `s` behind the others sees their hits as `s` newer (conservative for it), while
///   its own hits look `s` older to them, so over real time a window can admit the
///   hits of up to `W + s` ticks. Hits more than the lateness tolerance behind the newest
///   call of a key are refused (see [`Options::lateness_ticks`](crate::Options)), and the
///   keys' expiry assumes the callers' clocks agree within the expiry slack
///   ([`Options::expiry_slack`](crate::Options::expiry_slack)).
#[derive(Clone, Default)]
pub enum TimeSource {
    /// The Redis server's `TIME`, in microseconds.
    #[default]
    Server,
    /// The caller's clock, in microseconds, shared by every process (for example
    /// [`UnixMicros`]).
    Caller(Arc<dyn Clock>),
}

impl std::fmt::Debug for TimeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Server => f.write_str("Server"),
            Self::Caller(_) => f.write_str("Caller(..)"),
        }
    }
}

/// Microseconds since the Unix epoch from the system clock, plus a fixed offset: a clock
/// that processes on one host (or hosts kept in sync) share. The offset lets tests skew one
/// process against another.
///
/// ```
/// use slidelimit::Clock;
/// use slidelimit_redis::UnixMicros;
/// let early = UnixMicros::with_offset(-5_000_000);
/// assert!(UnixMicros::new().now_ticks() > early.now_ticks());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct UnixMicros {
    offset_micros: i64,
}

impl UnixMicros {
    /// The system clock, no offset.
    #[must_use]
    pub const fn new() -> Self {
        Self { offset_micros: 0 }
    }

    /// The system clock shifted by `offset_micros` (negative: behind).
    #[must_use]
    pub const fn with_offset(offset_micros: i64) -> Self {
        Self { offset_micros }
    }
}

impl Clock for UnixMicros {
    fn now_ticks(&self) -> u64 {
        // A clock before 1970 reads as 0; u64 microseconds last 584,000 years.
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        micros.saturating_add_signed(self.offset_micros)
    }
}
