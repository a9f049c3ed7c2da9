//! The integration tests of slidelimit-redis, against real `redis-server` processes that the
//! tests start on free loopback ports (`redis-server` must be on PATH: `bash ci/redis.sh`).

#[cfg(feature = "tokio")]
mod asynchronous;
#[cfg(feature = "tokio")]
mod asynchronous_fleet;
#[cfg(feature = "tokio")]
mod asynchronous_layer;
mod buckets;
#[cfg(feature = "cluster")]
mod cluster;
mod exact;
mod failure;
mod layered;
mod lease;
#[cfg(feature = "metrics")]
mod metrics;
mod multiprocess;
mod production_async;
mod production_blocking;
mod production_tls;
mod production_tls_async;
mod recipe;
mod server;
mod ticks;
mod timeouts;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use slidelimit::{Limit, ManualClock};
use slidelimit_redis::{Options, RedisLimiter, TimeSource};
use slidelimit_trace::audit::Audit;

pub(crate) use server::Server;

/// One server shared by the tests that do not kill or pause it (each test uses its own
/// key prefix); it exits with the test process.
pub(crate) fn shared() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(Server::start_watched)
}

/// A runtime on the test's own thread, for the async limiter's tests.
#[cfg(feature = "tokio")]
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Generous: the machine is shared with other builds.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) fn limit(max_requests: u64, window_ticks: u64) -> Limit {
    Limit::new(max_requests, window_ticks).expect("valid limit")
}

/// A limiter on the shared server with a manual clock, under a prefix of its own.
pub(crate) fn manual(
    prefix: &str,
    limit: Limit,
    options: Options,
) -> (RedisLimiter, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(0));
    let options = options
        .prefix(prefix)
        .timeout(TIMEOUT)
        .time(TimeSource::Caller(clock.clone()));
    let limiter = RedisLimiter::new(&shared().url(), limit, options).expect("limiter");
    (limiter, clock)
}

/// How many windows of `window` ticks hold more than `max_requests` of the admissions
/// `(tick, weight)`, by the workspace's one window audit.
pub(crate) fn over_admissions(admitted: Vec<(u64, u64)>, max_requests: u64, window: u64) -> u64 {
    Audit::new(max_requests, window)
        .expect("a window of at least one tick")
        .key(admitted)
        .over_limit_windows
}
