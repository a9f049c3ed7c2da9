//! The integration tests of slidelimit-redis, against real `redis-server` processes that the
//! tests start on free loopback ports (`redis-server` must be on PATH: `bash ci/redis.sh`).

#[cfg(feature = "tokio")]
mod asynchronous;
#[cfg(feature = "tokio")]
mod asynchronous_fleet;
#[cfg(feature = "tokio")]
mod asynchronous_layer;
mod buckets;
mod check;
#[cfg(feature = "cluster")]
mod cluster;
mod exact;
mod failure;
mod lease;
#[cfg(feature = "metrics")]
mod metrics;
mod multiprocess;
mod recipe;
mod server;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use slidelimit::{Limit, ManualClock};
use slidelimit_redis::{Options, RedisLimiter, TimeSource};

pub(crate) use server::Server;

/// One server shared by the tests that do not kill or pause it (each test uses its own
/// key prefix); it exits with the test process.
pub(crate) fn shared() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(Server::start_watched)
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

/// A tiny deterministic generator (xorshift), so traces are reproducible without a
/// dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
