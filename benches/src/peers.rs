//! governor, the limiter Rust users reach for today, as a peer: its keyed limiter with the
//! default DashMap store, and its direct (unkeyed) limiter as a per-call cost reference. The
//! adapters themselves are `slidelimit_trace::governor`'s, shared with the CLI; this module
//! builds them for a workload and makes them [`Target`]s.
//!
//! governor implements GCRA (a virtual-scheduling token bucket), not a sliding window: it is
//! compared on cost per decision, never on which requests it admits. Its quota is matched to
//! the workload's limit as closely as GCRA allows: a burst of `max_requests`, replenished one
//! cell every `window / max_requests`.
//!
//! Clocks: with the fake clock, governor runs on the very `FakeRelativeClock` the driver
//! advances for every variant (a clone shares its atomic), so all variants see the same time
//! and pay one load to read it. With the real clock, governor keeps its default clock
//! (quanta's TSC reads), the one its users get; slidelimit's variants read
//! `std::time::Instant` there, and the difference is part of what that workload shows.

use governor::Quota;
use slidelimit_trace::governor::{GovernorDirect, GovernorKeyed};

use crate::clock::BenchClock;
use crate::target::Target;
use crate::workload::Workload;

/// governor's quota closest to the workload's limit.
///
/// # Panics
/// If the window is shorter than `max_requests` nanoseconds or the limit exceeds `u32` (the
/// matrix's workloads are all expressible).
#[must_use]
pub fn quota(workload: &Workload) -> Quota {
    slidelimit_trace::governor::quota(workload.max_requests, workload.window_ns)
        .expect("every workload's limit is expressible in GCRA")
}

/// governor's keyed limiter for `workload`, reading `clock` when it is fake.
#[must_use]
pub fn keyed(workload: &Workload, clock: &BenchClock) -> GovernorKeyed {
    match clock {
        BenchClock::Fake(fake) => GovernorKeyed::on_fake_clock(quota(workload), fake),
        BenchClock::Real(_) => GovernorKeyed::on_default_clock(quota(workload)),
    }
}

/// governor's direct limiter for `workload`, reading `clock` when it is fake.
#[must_use]
pub fn direct(workload: &Workload, clock: &BenchClock) -> GovernorDirect {
    match clock {
        BenchClock::Fake(fake) => GovernorDirect::on_fake_clock(quota(workload), fake),
        BenchClock::Real(_) => GovernorDirect::on_default_clock(quota(workload)),
    }
}

impl Target for GovernorKeyed {
    const READS_NOW: bool = false;

    #[inline]
    fn check_and_hit(&self, key: u64, _now: u64) -> bool {
        self.check_key(key)
    }

    fn allowed(&self, _key: u64, _now: u64) -> bool {
        unreachable!("governor has no non-consuming check; the registry keeps it off read mixes")
    }

    fn tracked_keys(&self) -> Option<usize> {
        Some(self.len())
    }

    fn remove_idle(&self, _now: u64) -> Option<usize> {
        Some(GovernorKeyed::remove_idle(self))
    }
}

impl Target for GovernorDirect {
    const READS_NOW: bool = false;

    #[inline]
    fn check_and_hit(&self, _key: u64, _now: u64) -> bool {
        self.check()
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
