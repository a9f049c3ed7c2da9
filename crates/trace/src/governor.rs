//! governor, the limiter Rust users reach for today, as a peer (feature `governor`): its keyed
//! limiter with the default DashMap store, and its direct (unkeyed) limiter, on a fake clock
//! the caller moves or on governor's own clock. Written once for the benchmarks and the CLI's
//! `--compare`.
//!
//! governor implements GCRA (a virtual-scheduling token bucket), not a sliding window: it is
//! compared on cost per decision and on what it admits, never held to the window bound. Its
//! quota is matched to a limit as closely as GCRA allows ([`quota`]).
//!
//! Clocks: on a [`FakeRelativeClock`] governor reads the very clock its caller advances (a
//! clone shares its atomic), so it sees the same time as the limiters beside it. On
//! [`DefaultClock`] it reads quanta's TSC clock, the one its users get.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// Why governor cannot stand in for a limit.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    /// GCRA needs a replenishment period of at least a nanosecond per request, and a burst
    /// of 1 to `u32::MAX`.
    #[error("governor cannot express {max_requests} requests per {window_ns} ns (it needs a window of at least 1 ns per request and 1 to u32::MAX requests)")]
    Unexpressible {
        /// The limit's requests per window.
        max_requests: u64,
        /// The window in nanoseconds.
        window_ns: u64,
    },
}

/// governor's quota closest to `max_requests` per `window_ns`: a burst of `max_requests`,
/// one cell back every `window_ns / max_requests` nanoseconds.
///
/// # Errors
/// [`QuotaError::Unexpressible`] when the window is shorter than `max_requests` nanoseconds,
/// or `max_requests` is 0 or above `u32::MAX`.
pub fn quota(max_requests: u64, window_ns: u64) -> Result<Quota, QuotaError> {
    let unexpressible = QuotaError::Unexpressible {
        max_requests,
        window_ns,
    };
    let burst = u32::try_from(max_requests)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or(unexpressible)?;
    let period = Duration::from_nanos(window_ns / max_requests);
    Ok(Quota::with_period(period)
        .ok_or(unexpressible)?
        .allow_burst(burst))
}

type KeyedOn<C> =
    RateLimiter<u64, DashMapStateStore<u64>, C, NoOpMiddleware<<C as Clock>::Instant>>;
type DirectOn<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// governor's keyed limiter (DashMap store) on `u64` keys.
pub enum GovernorKeyed {
    /// On a fake clock its caller advances.
    Fake(KeyedOn<FakeRelativeClock>),
    /// On governor's default (quanta) clock.
    Real(KeyedOn<DefaultClock>),
}

impl GovernorKeyed {
    /// A keyed limiter reading `clock` (a clone shares its time).
    #[must_use]
    pub fn on_fake_clock(quota: Quota, clock: &FakeRelativeClock) -> Self {
        Self::Fake(RateLimiter::dashmap_with_clock(quota, clock.clone()))
    }

    /// A keyed limiter on governor's default clock.
    #[must_use]
    pub fn on_default_clock(quota: Quota) -> Self {
        Self::Real(RateLimiter::dashmap(quota))
    }

    /// Admits (true) and records, or refuses (false), a request of `key` now.
    #[inline]
    pub fn check_key(&self, key: u64) -> bool {
        match self {
            Self::Fake(limiter) => limiter.check_key(&key).is_ok(),
            Self::Real(limiter) => limiter.check_key(&key).is_ok(),
        }
    }

    /// How many keys it holds state for.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Self::Fake(limiter) => limiter.len(),
            Self::Real(limiter) => limiter.len(),
        }
    }

    /// Whether it holds no key.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets the keys whose bucket is full again (`retain_recent`), gives the map's memory
    /// back (`shrink_to_fit`), and says how many keys went.
    pub fn remove_idle(&self) -> usize {
        let before = self.len();
        match self {
            Self::Fake(limiter) => {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
            Self::Real(limiter) => {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
        }
        before.saturating_sub(self.len())
    }
}

/// governor's direct limiter: one state word, no key lookup (a per-call cost reference).
pub enum GovernorDirect {
    /// On a fake clock its caller advances.
    Fake(DirectOn<FakeRelativeClock>),
    /// On governor's default (quanta) clock.
    Real(DirectOn<DefaultClock>),
}

impl GovernorDirect {
    /// A direct limiter reading `clock` (a clone shares its time).
    #[must_use]
    pub fn on_fake_clock(quota: Quota, clock: &FakeRelativeClock) -> Self {
        Self::Fake(RateLimiter::direct_with_clock(quota, clock.clone()))
    }

    /// A direct limiter on governor's default clock.
    #[must_use]
    pub fn on_default_clock(quota: Quota) -> Self {
        Self::Real(RateLimiter::direct(quota))
    }

    /// Admits (true) and records, or refuses (false), a request now.
    #[inline]
    pub fn check(&self) -> bool {
        match self {
            Self::Fake(limiter) => limiter.check().is_ok(),
            Self::Real(limiter) => limiter.check().is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyed_limiter_refills_one_cell_per_period() {
        // 2 per 10 ns: a burst of 2, one cell back every 5 ns.
        let clock = FakeRelativeClock::default();
        let keyed = GovernorKeyed::on_fake_clock(quota(2, 10).unwrap(), &clock);
        assert!(keyed.check_key(1) && keyed.check_key(1) && !keyed.check_key(1));
        clock.advance(Duration::from_nanos(5));
        assert!(keyed.check_key(1) && !keyed.check_key(1));
        assert!(keyed.check_key(2));
        assert_eq!(keyed.len(), 2);
        clock.advance(Duration::from_nanos(100));
        assert_eq!(keyed.remove_idle(), 2);
        assert!(keyed.is_empty());
        let direct = GovernorDirect::on_fake_clock(quota(1, 10).unwrap(), &clock);
        assert!(direct.check() && !direct.check());
    }

    #[test]
    fn a_limit_gcra_cannot_express_is_an_error() {
        for (max_requests, window_ns) in [(20, 10), (0, 10), (u64::from(u32::MAX) + 1, u64::MAX)] {
            assert_eq!(
                quota(max_requests, window_ns).err(),
                Some(QuotaError::Unexpressible {
                    max_requests,
                    window_ns
                })
            );
        }
    }
}
