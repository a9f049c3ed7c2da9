//! The async limiter (feature `tokio`) against real servers: the same answers, the window
//! invariant under many tasks on one multiplexed connection, a paused server against the
//! timeout, and recovery after a restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use slidelimit::ManualClock;
use slidelimit_redis::{AsyncRedisLimiter, Error, FailurePolicy, Options, Source, TimeSource};

use crate::over_admissions;
use crate::{limit, runtime, shared, Server, TIMEOUT};

#[test]
fn async_answers_like_the_blocking_limiter() {
    runtime().block_on(async {
        let clock = Arc::new(ManualClock::new(100));
        let options = Options::new()
            .prefix("async-answers")
            .timeout(TIMEOUT)
            .time(TimeSource::Caller(clock.clone()));
        let limiter = AsyncRedisLimiter::new(&shared().url(), limit(2, 10), options).unwrap();
        assert!(limiter.check_and_hit("k").await.unwrap().admitted);
        clock.set(103);
        assert!(limiter.check_and_hit("k").await.unwrap().admitted);
        clock.set(105);
        let refused = limiter.check_and_hit("k").await.unwrap();
        assert!(!refused.admitted);
        assert_eq!(refused.status.retry_after_ticks, 5);
        assert!(!limiter.allowed_n("k", 1).await.unwrap());
        assert_eq!(limiter.status("k").await.unwrap().count, 2);
        clock.set(110);
        assert!(limiter.check_and_hit("k").await.unwrap().admitted);
        limiter.hit_n("k", 2).await.unwrap();
        assert_eq!(limiter.status("k").await.unwrap().count, 2, "newest N kept");
        assert!(matches!(
            limiter.check_and_hit_n("k", 3).await,
            Err(Error::Weight(_))
        ));
    });
}

#[test]
fn async_tasks_on_one_connection_never_over_admit() {
    runtime().block_on(async {
        let options = Options::new().prefix("async-tasks").timeout(TIMEOUT);
        let limiter =
            Arc::new(AsyncRedisLimiter::new(&shared().url(), limit(20, 20_000), options).unwrap());
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                tokio::spawn(async move {
                    let mut admitted = Vec::new();
                    for _ in 0..150 {
                        let decision = limiter.check_and_hit("hot").await.unwrap();
                        if decision.admitted {
                            admitted.push((decision.now, 1));
                        }
                    }
                    admitted
                })
            })
            .collect();
        let mut admitted = Vec::new();
        for task in tasks {
            admitted.extend(task.await.unwrap());
        }
        assert!(!admitted.is_empty() && admitted.len() < 16 * 150);
        assert_eq!(over_admissions(admitted, 20, 20_000), 0);
    });
}

#[test]
fn async_faults_give_typed_errors_within_the_timeout_then_recover() {
    let mut server = Server::start();
    let timeout = Duration::from_millis(200);
    let slack = Duration::from_secs(2);
    runtime().block_on(async {
        let options = Options::new()
            .prefix("async-faults")
            .timeout(timeout)
            .failure(FailurePolicy::FailOpen);
        let limiter =
            AsyncRedisLimiter::new(&server.url(), limit(10, 60_000_000), options).unwrap();
        assert!(limiter.check_and_hit("k").await.unwrap().admitted);

        server.signal("-STOP");
        let start = Instant::now();
        let paused = limiter.check_and_hit("k").await;
        let elapsed = start.elapsed();
        let verdict = limiter.decide("k", 1).await.unwrap();
        server.signal("-CONT");
        assert!(matches!(paused, Err(Error::Timeout { .. })), "{paused:?}");
        assert!(elapsed < timeout + slack, "{elapsed:?}");
        assert_eq!((verdict.admitted, verdict.source), (true, Source::FailOpen));
        assert!(
            limiter.check_and_hit("k2").await.unwrap().admitted,
            "resumed"
        );

        server.kill();
        let start = Instant::now();
        let down = limiter.check_and_hit("k").await;
        assert!(start.elapsed() < timeout + slack);
        assert!(
            down.as_ref().is_err_and(Error::is_backend_failure),
            "{down:?}"
        );
        server.restart();
        let mut recovered = None;
        for _ in 0..5 {
            if let Ok(decision) = limiter.check_and_hit("k").await {
                recovered = Some(decision);
                break;
            }
        }
        assert!(recovered.expect("recovers after the restart").admitted);
    });
}

#[test]
fn async_until_admitted_waits_out_the_servers_retry_after() {
    runtime().block_on(async {
        let options = Options::new().prefix("async-wait").timeout(TIMEOUT);
        // 2 per 300 ms, by the server's clock.
        let limiter =
            Arc::new(AsyncRedisLimiter::new(&shared().url(), limit(2, 300_000), options).unwrap());
        let clock = slidelimit::TokioClock::new(Duration::from_micros(1));
        let start = Instant::now();
        for _ in 0..3 {
            slidelimit::wait::until_admitted(&limiter, "k", &clock, None)
                .await
                .unwrap();
        }
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(250) && elapsed < Duration::from_secs(3),
            "the third waited for the first to leave the window: {elapsed:?}"
        );
        let count = limiter.status("k").await.unwrap().count;
        assert!(
            (1..=2).contains(&count),
            "the third hit and perhaps the second: {count}"
        );
        // A full key whose room comes back in ~300 ms, and a deadline of 50 ms.
        for _ in 0..2 {
            slidelimit::wait::until_admitted(&limiter, "full", &clock, None)
                .await
                .unwrap();
        }
        let soon = Some(tokio::time::Instant::now() + Duration::from_millis(50));
        assert_eq!(
            slidelimit::wait::until_admitted(&limiter, "full", &clock, soon).await,
            Err(slidelimit::WaitError::DeadlineExceeded)
        );
    });
}
