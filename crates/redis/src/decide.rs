//! The Redis limiters as a [`Decide`]: what the tower layer and other middleware ask
//! (feature `tokio`). No call blocks a runtime thread:
//! - [`AsyncRedisLimiter`] (the exact log or the rolling buckets) answers after one round trip
//!   on its multiplexed connection, and remembers its refusals (on by default,
//!   [`Options::refusal_cache`](crate::Options::refusal_cache)): a key it refused is refused
//!   again here until the retry-after has passed, without a round trip, with Redis's status
//!   and every window's, the waits counted down (`slidelimit::decide::RefusalMemory`);
//! - [`LeasedLimiter`] answers at once from the lease in hand (or a refusal it remembers), and
//!   takes a new lease on tokio's blocking pool (`spawn_blocking`), so its blocking round trip
//!   holds a pool thread, never a runtime worker. An admission from a lease carries no window
//!   (a lease knows its own permits, not the key's count), so the layer's informational
//!   fields are left off; a refusal carries the retry-after Redis gave.
//!
//! The blocking [`RedisLimiter`](crate::RedisLimiter) is not one: use the async limiter.
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

use slidelimit::{Answer, Decide, Decision, Status};

use crate::limiter::MICROSECOND;
use crate::{AsyncRedisLimiter, LeaseDecision, LeasedLimiter};

pub use crate::failure::UNAVAILABLE_RETRY;

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
        let key = key.to_string();
        let asking = match this
            .refusal_cache()
            .map(|refusals| refusals.check(&key, MICROSECOND))
        {
            Some(Ok(answer)) => return Decision::Ready(answer),
            Some(Err(asking)) => Some(asking),
            None => None,
        };
        let limiter = Arc::clone(this);
        Decision::Pending(Box::pin(async move {
            let answer = limiter.answer(&key).await;
            if let (Some(refusals), Some(asking)) = (limiter.refusal_cache(), asking) {
                refusals.remember(&key, asking, answer);
            }
            answer
        }))
    }

    /// The Redis limiters' ticks are microseconds, of the server's `TIME` or of the
    /// configured caller clock, never the layer's.
    fn tick(&self) -> Option<Duration> {
        Some(MICROSECOND)
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
                windows: Some(decision.windows),
            },
            Err(err) => self.fallback_answer(key, &err),
        }
    }
}

impl<K: Display + ?Sized> Decide<K> for LeasedLimiter {
    /// Only when a new lease is needed: one allocation for the key's text and the future.
    type Pending = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn decide(
        this: &Arc<Self>,
        key: &K,
        _now: u64,
        _status_if_admitted: bool,
    ) -> Decision<Self::Pending> {
        let key = key.to_string();
        if let Some(decision) = this.try_check_and_hit_locally(&key) {
            return Decision::Ready(this.lease_answer(decision));
        }
        let limiter = Arc::clone(this);
        Decision::Pending(Box::pin(async move {
            let asked = Arc::clone(&limiter);
            let asked_key = key.clone();
            match tokio::task::spawn_blocking(move || asked.check_and_hit(&asked_key)).await {
                Ok(Ok(decision)) => limiter.lease_answer(decision),
                Ok(Err(err)) => limiter.fallback_answer(&key, &err),
                // The blocking call panicked or the runtime is shutting down: no decision.
                Err(_) => Answer::Undecided {
                    admitted: false,
                    retry_after: UNAVAILABLE_RETRY,
                },
            }
        }))
    }

    fn tick(&self) -> Option<Duration> {
        Some(MICROSECOND)
    }

    fn is_remote(&self) -> bool {
        true
    }
}

impl LeasedLimiter {
    /// A lease decision as an answer: no window for an admission, the retry-after for a
    /// refusal.
    fn lease_answer(&self, decision: LeaseDecision) -> Answer {
        let limit = self.limit();
        Answer::Decided {
            admitted: decision.admitted,
            limit,
            status: (!decision.admitted).then_some(Status {
                count: limit.max_requests(),
                remaining: 0,
                retry_after_ticks: decision.retry_after_ticks.max(1),
            }),
            windows: None,
        }
    }
}
