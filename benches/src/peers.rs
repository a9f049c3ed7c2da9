//! governor, the limiter Rust users reach for today, as a peer: its keyed limiter with the
//! default DashMap store, and its direct (unkeyed) limiter as a per-call cost reference.
//!
//! governor implements GCRA (a virtual-scheduling token bucket), not a sliding window: it is
//! compared on cost per decision, never on which requests it admits. Its quota is matched to
//! the workload's limit as closely as GCRA allows: a burst of `max_requests`, replenished one
//! cell every `window / max_requests`.
//!
//! Clocks: with the fake clock, governor runs on [`FakeRelativeClock`], the very clock the
//! driver advances for every variant (a clone shares its atomic), so all variants see the
//! same time and pay one load to read it. With the real clock, governor keeps its default
//! clock (quanta's TSC reads), the one its users get; slidelimit's variants read
//! `std::time::Instant` there, and the difference is part of what that workload shows.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

use crate::clock::BenchClock;
use crate::target::Target;
use crate::workload::Workload;

/// governor's quota closest to `max_requests` per `window_ns`.
///
/// # Panics
/// If the window is shorter than `max_requests` nanoseconds or the limit exceeds `u32`.
#[must_use]
pub fn quota(workload: &Workload) -> Quota {
    let burst = NonZeroU32::new(u32::try_from(workload.max_requests).expect("limit fits u32"))
        .expect("max_requests >= 1");
    let period = Duration::from_nanos(workload.window_ns / workload.max_requests);
    Quota::with_period(period)
        .expect("window of at least max_requests nanoseconds")
        .allow_burst(burst)
}

type KeyedOn<C> =
    RateLimiter<u64, DashMapStateStore<u64>, C, NoOpMiddleware<<C as Clock>::Instant>>;
type DirectOn<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// governor's keyed limiter (DashMap store) on the workload's clock.
pub enum GovernorKeyed {
    /// On the shared fake clock.
    Fake(KeyedOn<FakeRelativeClock>),
    /// On governor's default (quanta) clock.
    Real(KeyedOn<DefaultClock>),
}

impl GovernorKeyed {
    /// A keyed limiter for `workload`, reading `clock` when it is fake.
    #[must_use]
    pub fn new(workload: &Workload, clock: &BenchClock) -> Self {
        match clock {
            BenchClock::Fake(fake) => Self::Fake(RateLimiter::dashmap_with_clock(
                quota(workload),
                fake.clone(),
            )),
            BenchClock::Real(_) => Self::Real(RateLimiter::dashmap(quota(workload))),
        }
    }
}

impl Target for GovernorKeyed {
    const READS_NOW: bool = false;

    #[inline]
    fn check_and_hit(&self, key: u64, _now: u64) -> bool {
        match self {
            Self::Fake(limiter) => limiter.check_key(&key).is_ok(),
            Self::Real(limiter) => limiter.check_key(&key).is_ok(),
        }
    }

    fn allowed(&self, _key: u64, _now: u64) -> bool {
        unreachable!("governor has no non-consuming check; the registry keeps it off read mixes")
    }

    fn tracked_keys(&self) -> Option<usize> {
        Some(match self {
            Self::Fake(limiter) => limiter.len(),
            Self::Real(limiter) => limiter.len(),
        })
    }

    fn remove_idle(&self, _now: u64) -> Option<usize> {
        // governor forgets keys whose bucket is full again (`retain_recent`); then its map
        // gives memory back with `shrink_to_fit`.
        let before = self.tracked_keys().unwrap_or(0);
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
        Some(before - self.tracked_keys().unwrap_or(0))
    }
}

/// governor's direct limiter: one state word, no key lookup. A per-call cost reference, run
/// on the hot-key workloads only (it has no keys).
pub enum GovernorDirect {
    /// On the shared fake clock.
    Fake(DirectOn<FakeRelativeClock>),
    /// On governor's default (quanta) clock.
    Real(DirectOn<DefaultClock>),
}

impl GovernorDirect {
    /// A direct limiter for `workload`, reading `clock` when it is fake.
    #[must_use]
    pub fn new(workload: &Workload, clock: &BenchClock) -> Self {
        match clock {
            BenchClock::Fake(fake) => Self::Fake(RateLimiter::direct_with_clock(
                quota(workload),
                fake.clone(),
            )),
            BenchClock::Real(_) => Self::Real(RateLimiter::direct(quota(workload))),
        }
    }
}

impl Target for GovernorDirect {
    const READS_NOW: bool = false;

    #[inline]
    fn check_and_hit(&self, _key: u64, _now: u64) -> bool {
        match self {
            Self::Fake(limiter) => limiter.check().is_ok(),
            Self::Real(limiter) => limiter.check().is_ok(),
        }
    }

    fn allowed(&self, _key: u64, _now: u64) -> bool {
        unreachable!("governor has no non-consuming check; the registry keeps it off read mixes")
    }

    fn tracked_keys(&self) -> Option<usize> {
        None
    }

    fn remove_idle(&self, _now: u64) -> Option<usize> {
        None
    }
}
