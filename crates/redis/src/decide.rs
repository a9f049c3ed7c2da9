//! [`AsyncRedisLimiter`] as a [`Decide`]: the limiter the tower layer and other middleware
//! ask, answering after one round trip that never blocks a runtime thread (feature `tokio`).
//!
//! Every answer comes within the configured timeout: Redis's decision with the key's window
//! from the script's reply, or, when Redis is slow, down or restarting, the failure policy's
//! ([`FailurePolicy`](crate::FailurePolicy)): fail open admits with no window to report,
//! fail closed answers [`Answer::Undecided`] with a retry-after of [`UNAVAILABLE_RETRY`]
//! (the tower layer's 503), the local share decides in this process and reports its own
//! window.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use slidelimit::{Answer, Decide, Decision};

use crate::AsyncRedisLimiter;

/// The wait a fail-closed refusal suggests (`Retry-After` of the tower layer's 503): a
/// restarting server is usually back within a second or two, and a client that retries
/// sooner only adds load to an outage.
pub const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);

impl<K: Display + ?Sized> Decide<K> for AsyncRedisLimiter {
    /// One allocation per request for the key's text and the future: a round trip costs far
    /// more.
    type Pending = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn decide(
        this: &Arc<Self>,
        key: &K,
        _now: u64,
        _status_if_admitted: bool,
    ) -> Decision<Self::Pending> {
        let limiter = Arc::clone(this);
        let key = key.to_string();
        Decision::Pending(Box::pin(async move { limiter.answer(&key).await }))
    }

    /// The Redis limiters' ticks are microseconds, of the server's `TIME` or of the
    /// configured caller clock, never the layer's.
    fn tick(&self) -> Option<Duration> {
        Some(Duration::from_micros(1))
    }

    fn is_remote(&self) -> bool {
        true
    }
}

impl AsyncRedisLimiter {
    /// One request of weight 1 on `key`: Redis's answer, or the failure policy's.
    pub(crate) async fn answer(&self, key: &str) -> Answer {
        match self.check_and_hit_n(key, 1).await {
            Ok(decision) => Answer::Decided {
                admitted: decision.admitted,
                limit: self.limit(),
                status: Some(decision.status),
            },
            Err(err) => self.fallback_answer(key, err),
        }
    }
}
