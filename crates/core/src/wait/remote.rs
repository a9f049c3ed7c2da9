//! Waiting on any [`Decide`], a remote limiter's included: [`until_admitted`].

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::clock::WaitClock;
use super::WaitError;
use crate::decide::{Answer, Decide, Decision};

/// What a refusal without a wait of its own waits before asking again: one that reports no
/// window, or a kind of answer this function does not know.
const UNKNOWN_WAIT: Duration = Duration::from_secs(1);

/// Waits until `limiter` admits one request on `key`, then returns with it counted: asks,
/// and after a refusal sleeps the wait it gave, then asks again.
///
/// For any [`Decide`]: an in-process limiter, decided at `clock`'s tick and woken when
/// `clock` reaches the refusal's tick, or a remote one (`slidelimit-redis`'s, which keep
/// their own time) whose wait is slept from when its answer came, so it is never early on
/// the server's clock either. When the limiter cannot decide and its failure policy refuses,
/// the policy's wait is slept.
///
/// Unlike [`AsyncLimiter`](super::AsyncLimiter), this keeps no queue: callers, here and in
/// other processes, meet only at the limiter, so the first to ask after a wait wins.
///
/// # Errors
/// [`WaitError::DeadlineExceeded`] when the next question would come after `deadline`, or
/// `deadline` passed while a remote decision was in flight (a dropped call to a remote
/// limiter may still have been counted: a sent request cannot be taken back).
pub async fn until_admitted<K, D, C>(
    limiter: &Arc<D>,
    key: &K,
    clock: &C,
    deadline: Option<Instant>,
) -> Result<(), WaitError>
where
    K: ?Sized,
    D: Decide<K> + ?Sized,
    C: WaitClock,
{
    loop {
        let now = clock.now_ticks();
        let answer = match D::decide(limiter, key, now, false) {
            Decision::Ready(answer) => answer,
            Decision::Pending(pending) => match deadline {
                None => pending.await,
                Some(deadline) => tokio::time::timeout_at(deadline, pending)
                    .await
                    .map_err(|_| WaitError::DeadlineExceeded)?,
            },
        };
        let wake = match answer {
            Answer::Decided { admitted: true, .. } | Answer::Undecided { admitted: true, .. } => {
                return Ok(());
            }
            Answer::Decided {
                status: Some(status),
                ..
            } => match limiter.tick() {
                // Its own time: from now, in its tick.
                Some(tick) => Instant::now() + ticks(status.retry_after_ticks.max(1), tick),
                // The caller's clock: when it reaches the refusal's tick.
                None => clock.instant_at(now.saturating_add(status.retry_after_ticks.max(1))),
            },
            Answer::Undecided { retry_after, .. } => Instant::now() + retry_after,
            _ => Instant::now() + UNKNOWN_WAIT,
        };
        if deadline.is_some_and(|deadline| wake > deadline) {
            return Err(WaitError::DeadlineExceeded);
        }
        tokio::time::sleep_until(wake).await;
    }
}

/// `count` ticks of length `tick`, saturating.
fn ticks(count: u64, tick: Duration) -> Duration {
    let nanos = u128::from(count).saturating_mul(tick.as_nanos());
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::Limit;
    use crate::lockfree::LockFreeLimiter;
    use crate::wait::clock::TokioClock;

    #[tokio::test(start_paused = true)]
    async fn an_in_process_limiter_is_waited_on_by_its_clock() {
        let ms = Duration::from_millis(1);
        let clock = TokioClock::new(ms);
        let limiter = Arc::new(LockFreeLimiter::<u64>::new(
            Limit::per_second(2, ms).unwrap(),
        ));
        let start = Instant::now();
        until_admitted(&limiter, &7, &clock, None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        until_admitted(&limiter, &7, &clock, None).await.unwrap();
        until_admitted(&limiter, &7, &clock, None).await.unwrap();
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(1),
            "the first hit left at 1 s"
        );
        let soon = Some(Instant::now() + Duration::from_millis(100));
        assert_eq!(
            until_admitted(&limiter, &7, &clock, soon).await,
            Err(WaitError::DeadlineExceeded),
            "the next room is at 1.3 s, past the deadline"
        );
    }
}
