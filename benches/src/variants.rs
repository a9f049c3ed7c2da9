//! The registry: every variant and peer the benchmarks run, in one list.
//!
//! A new variant is one more `visit` call in [`for_each`]; the runner, the criterion suites and
//! the memory measurements all walk this list, so it gets every workload at once. The calls are
//! generic (a visitor, not trait objects), so the driver's loop is compiled for each variant.

use slidelimit::{LockFreeLimiter, RollingBuckets};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;

use crate::clock::BenchClock;
use crate::deque_baseline::DequeLimiter;
use crate::floor::Floor;
use crate::peers;
use crate::target::{Ours, Target};
use crate::workload::{Mix, Workload};

/// Where a variant comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// One of slidelimit's limiters.
    Ours,
    /// Another implementation run beside them.
    Peer,
    /// The machine floor: a lookup and a CAS.
    Floor,
}

/// What the reports say about a variant.
#[derive(Clone, Copy, Debug)]
pub struct Meta {
    /// The name on the command line and in reports.
    pub name: &'static str,
    /// Where it comes from.
    pub family: Family,
    /// Its window algorithm (`exact`, `gcra`, …).
    pub algorithm: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Which workloads it runs.
    pub supports: fn(&Workload) -> bool,
}

/// What a variant is built from: the workload (its limit, its keys) and the cell's clock.
pub struct Context<'a> {
    /// The workload.
    pub workload: &'a Workload,
    /// The clock the cell runs on (governor reads it itself).
    pub clock: &'a BenchClock,
}

/// Something done with each variant: run it, measure it, list it.
pub trait Visitor {
    /// Called once per registered variant, with a way to build a fresh instance.
    fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T);
}

/// Buckets per window for the bucketed variants.
pub const BUCKETS: u64 = 8;

fn every(_: &Workload) -> bool {
    true
}

fn consuming_only(workload: &Workload) -> bool {
    workload.mix == Mix::CheckAndHit
}

fn hot_consuming_only(workload: &Workload) -> bool {
    workload.is_hot() && workload.mix == Mix::CheckAndHit
}

/// The lock-based bucketed siblings run a reduced set (the hot key, 10k uniform keys, the
/// read-heavy mix) so that the default matrix stays within about three minutes; every workload
/// is one edit away.
fn bucket_siblings(workload: &Workload) -> bool {
    matches!(
        workload.name,
        "hot-allowed" | "uniform-allowed" | "read-heavy"
    )
}

fn floor_workloads(workload: &Workload) -> bool {
    workload.floor
}

/// Visits every variant, slidelimit's first, then the peers, then the floor.
pub fn for_each(visitor: &mut impl Visitor) {
    visitor.visit(
        &Meta {
            name: "lock-free",
            family: Family::Ours,
            algorithm: "exact",
            about: "atomic ring per key in a papaya map; decided by CAS, removed by sealing",
            supports: every,
        },
        &|cx| Ours(LockFreeLimiter::<u64>::new(cx.workload.limit())),
    );
    visitor.visit(
        &Meta {
            name: "mutex",
            family: Family::Ours,
            algorithm: "exact",
            about: "the core's sequential ring per key, one global Mutex over the map",
            supports: every,
        },
        &|cx| Ours(MutexLimiter::<u64>::new(cx.workload.limit())),
    );
    visitor.visit(
        &Meta {
            name: "per-key-lock",
            family: Family::Ours,
            algorithm: "exact",
            about: "a Mutex per key in a papaya map",
            supports: every,
        },
        &|cx| Ours(PerKeyLockLimiter::<u64>::new(cx.workload.limit())),
    );
    visitor.visit(
        &Meta {
            name: "rwlock",
            family: Family::Ours,
            algorithm: "exact",
            about: "one RwLock over the map: allowed reads, check_and_hit writes",
            supports: every,
        },
        &|cx| Ours(RwLockLimiter::<u64>::new(cx.workload.limit())),
    );
    // Bucketed (approximate) variants go here, one `visit` each: `algorithm: "buckets"`, a
    // name ending in "-buckets", and the limiter's `bucketed` (or `with_options`) constructor.
    visitor.visit(
        &Meta {
            name: "lock-free-buckets",
            family: Family::Ours,
            algorithm: "buckets",
            about: "the lock-free limiter with rolling bucket counters (8 buckets): approximate",
            supports: every,
        },
        &|cx| {
            Ours(
                LockFreeLimiter::<u64, RollingBuckets>::bucketed(cx.workload.limit(), BUCKETS)
                    .expect("every workload's window has at least BUCKETS ticks"),
            )
        },
    );
    visitor.visit(
        &Meta {
            name: "mutex-buckets",
            family: Family::Ours,
            algorithm: "buckets",
            about: "rolling bucket counters (8 buckets) per key, one global Mutex over the map",
            supports: bucket_siblings,
        },
        &|cx| {
            Ours(
                MutexLimiter::<u64, RollingBuckets>::bucketed(cx.workload.limit(), BUCKETS)
                    .expect("every workload's window has at least BUCKETS ticks"),
            )
        },
    );
    visitor.visit(
        &Meta {
            name: "per-key-lock-buckets",
            family: Family::Ours,
            algorithm: "buckets",
            about: "rolling bucket counters (8 buckets) behind a Mutex per key, in a papaya map",
            supports: bucket_siblings,
        },
        &|cx| {
            Ours(
                PerKeyLockLimiter::<u64, RollingBuckets>::bucketed(cx.workload.limit(), BUCKETS)
                    .expect("every workload's window has at least BUCKETS ticks"),
            )
        },
    );
    visitor.visit(
        &Meta {
            name: "rwlock-buckets",
            family: Family::Ours,
            algorithm: "buckets",
            about: "rolling bucket counters (8 buckets) per key, one RwLock over the map",
            supports: bucket_siblings,
        },
        &|cx| {
            Ours(
                RwLockLimiter::<u64, RollingBuckets>::bucketed(cx.workload.limit(), BUCKETS)
                    .expect("every workload's window has at least BUCKETS ticks"),
            )
        },
    );
    visitor.visit(
        &Meta {
            name: "deque-mutex",
            family: Family::Peer,
            algorithm: "deque",
            about: "the plain baseline: one Mutex over HashMap<key, VecDeque<tick>>",
            supports: every,
        },
        &|cx| Ours(DequeLimiter::<u64>::new(cx.workload.limit())),
    );
    visitor.visit(
        &Meta {
            name: "governor-keyed",
            family: Family::Peer,
            algorithm: "gcra",
            about: "governor's keyed limiter, default DashMap store (GCRA, not a sliding window)",
            supports: consuming_only,
        },
        &|cx| peers::keyed(cx.workload, cx.clock),
    );
    visitor.visit(
        &Meta {
            name: "governor-direct",
            family: Family::Peer,
            algorithm: "gcra",
            about: "governor's direct (unkeyed) limiter: a per-call cost reference, hot key only",
            supports: hot_consuming_only,
        },
        &|cx| peers::direct(cx.workload, cx.clock),
    );
    visitor.visit(
        &Meta {
            name: "floor",
            family: Family::Floor,
            algorithm: "-",
            about: "machine floor: one lookup in a pre-filled read-only map + one CAS",
            supports: floor_workloads,
        },
        &|cx| Floor::new(cx.workload),
    );
}

/// Every registered variant's [`Meta`], in registry order.
#[must_use]
pub fn metas() -> Vec<Meta> {
    struct Collect(Vec<Meta>);
    impl Visitor for Collect {
        fn visit<T: Target + 'static>(&mut self, meta: &Meta, _: &dyn Fn(&Context<'_>) -> T) {
            self.0.push(*meta);
        }
    }
    let mut collect = Collect(Vec::new());
    for_each(&mut collect);
    collect.0
}
