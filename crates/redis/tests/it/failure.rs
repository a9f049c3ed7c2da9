//! Faults against real servers: killed and restarted on the same port, paused (SIGSTOP)
//! past the timeout. Every call gives a typed error within the timeout (plus slack for a
//! loaded machine), each failure policy answers as documented, and calls recover.

use std::time::{Duration, Instant};

use slidelimit_redis::{Error, FailurePolicy, LeasedLimiter, Options, RedisLimiter, Source};

use crate::{limit, Server};

/// Slack over the configured timeout for a loaded 2-core machine.
const SLACK: Duration = Duration::from_secs(2);

fn limiter(
    server: &Server,
    prefix: &str,
    timeout: Duration,
    failure: FailurePolicy,
) -> RedisLimiter {
    let options = Options::new()
        .prefix(prefix)
        .timeout(timeout)
        .failure(failure);
    RedisLimiter::new(&server.url(), limit(10, 60_000_000), options).unwrap()
}

#[test]
fn kill_and_restart_give_typed_errors_then_recover() {
    let mut server = Server::start();
    let timeout = Duration::from_millis(300);
    let closed = limiter(&server, "closed", timeout, FailurePolicy::FailClosed);
    let open = limiter(&server, "open", timeout, FailurePolicy::FailOpen);
    let local = limiter(
        &server,
        "local",
        timeout,
        FailurePolicy::Local { max_requests: 3 },
    );
    let leased = LeasedLimiter::new(
        &server.url(),
        limit(10, 60_000_000),
        Options::new().prefix("leased").timeout(timeout),
        2,
        1_000,
    )
    .unwrap();
    for l in [&closed, &open, &local] {
        assert!(
            l.check_and_hit("k").unwrap().admitted,
            "warm: a pooled connection"
        );
    }
    assert!(leased.check_and_hit("k").unwrap().admitted);

    server.kill();
    for l in [&closed, &open, &local] {
        let start = Instant::now();
        let err = l.check_and_hit("k").unwrap_err();
        assert!(start.elapsed() < timeout + SLACK, "{:?}", start.elapsed());
        assert!(matches!(err, Error::Connection(_)), "{err:?}");
        assert!(err.is_backend_failure());
    }
    let verdict = closed.decide("k", 1).unwrap();
    assert_eq!(
        (verdict.admitted, verdict.source),
        (false, Source::FailClosed)
    );
    assert!(matches!(verdict.error, Some(Error::Connection(_))));
    let verdict = open.decide("k", 1).unwrap();
    assert_eq!((verdict.admitted, verdict.source), (true, Source::FailOpen));
    let local_admits: Vec<bool> = (0..5)
        .map(|_| local.decide("k", 1).unwrap().admitted)
        .collect();
    assert_eq!(
        local_admits,
        [true, true, true, false, false],
        "the local share is 3"
    );
    assert_eq!(local.decide("k", 1).unwrap().source, Source::Local);
    assert!(
        local.decide("k", 2).is_ok_and(|v| !v.admitted),
        "weighted: refused locally"
    );
    // The lease in hand (1 unused permit, usable 1 ms) may still answer locally; past it,
    // the lease call fails with a typed error.
    std::thread::sleep(Duration::from_millis(5));
    let err = leased.check_and_hit("k").unwrap_err();
    assert!(matches!(err, Error::Connection(_)), "{err:?}");

    server.restart();
    for l in [&closed, &open, &local] {
        // A pooled connection from before the restart may fail once; then a new one works.
        let recovered = (0..5).find_map(|_| l.check_and_hit("k").ok());
        let decision = recovered.expect("recovers after the restart");
        assert!(
            decision.admitted,
            "the restarted server forgot the window (no persistence)"
        );
        assert_eq!(l.decide("k", 1).unwrap().source, Source::Redis);
    }
    assert!((0..5)
        .find_map(|_| leased.check_and_hit("k").ok())
        .is_some());
}

#[test]
fn a_paused_server_times_out_within_the_timeout() {
    let server = Server::start();
    let timeout = Duration::from_millis(200);
    let warm = limiter(&server, "paused", timeout, FailurePolicy::FailClosed);
    assert!(warm.check_and_hit("k").unwrap().admitted);
    let cold = limiter(&server, "paused", timeout, FailurePolicy::FailOpen);

    server.signal("-STOP");
    let start = Instant::now();
    let warm_result = warm.check_and_hit("k");
    let warm_elapsed = start.elapsed();
    // A new connection: the kernel accepts it, the paused server never answers.
    let start = Instant::now();
    let cold_verdict = cold.decide("k", 1);
    let cold_elapsed = start.elapsed();
    server.signal("-CONT");

    assert!(
        matches!(warm_result, Err(Error::Timeout { after }) if after == timeout),
        "{warm_result:?}"
    );
    assert!(
        warm_elapsed >= timeout / 2 && warm_elapsed < timeout + SLACK,
        "{warm_elapsed:?}"
    );
    let cold_verdict = cold_verdict.unwrap();
    assert_eq!(
        (cold_verdict.admitted, cold_verdict.source),
        (true, Source::FailOpen)
    );
    assert!(
        matches!(cold_verdict.error, Some(Error::Timeout { .. })),
        "{cold_verdict:?}"
    );
    assert!(cold_elapsed < timeout + SLACK, "{cold_elapsed:?}");

    // Resumed: the timed-out connection was dropped, so no late reply is misread.
    let after = warm.status("k").unwrap();
    assert!(after.count >= 1, "the first admission is still there");
    assert!(warm.check_and_hit("k2").unwrap().admitted);
}

/// The server killed and restarted while 4 threads hammer it: no call panics or outlasts the
/// timeout (plus slack), the failures are typed, and the threads recover on their own.
#[test]
fn kill_and_restart_mid_run_under_load() {
    let mut server = Server::start();
    let timeout = Duration::from_millis(300);
    let limiter = std::sync::Arc::new(limiter(
        &server,
        "midrun",
        timeout,
        FailurePolicy::FailClosed,
    ));
    let start = Instant::now();
    // The threads run until 500 ms after the restart (bounded: 30 s, 100,000 calls).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let limiter = std::sync::Arc::clone(&limiter);
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let (mut slowest, mut failures, mut last_ok) = (Duration::ZERO, 0u32, None);
                let mut calls = 0;
                // Relaxed: a stop flag; no data is published with it.
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && start.elapsed() < Duration::from_secs(30)
                    && calls < 100_000
                {
                    calls += 1;
                    let call = Instant::now();
                    let verdict = limiter.decide(&format!("k{i}"), 1).unwrap();
                    slowest = slowest.max(call.elapsed());
                    match verdict.source {
                        Source::Redis => last_ok = Some(start.elapsed()),
                        Source::FailClosed => {
                            assert!(!verdict.admitted);
                            assert!(verdict
                                .error
                                .as_ref()
                                .is_some_and(Error::is_backend_failure));
                            failures += 1;
                        }
                        other => panic!("unexpected source {other:?}"),
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                (slowest, failures, last_ok)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    std::thread::sleep(Duration::from_millis(300));
    server.restart();
    let restarted = start.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    // Relaxed: see the load.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for handle in threads {
        let (slowest, failures, last_ok) = handle.join().unwrap();
        assert!(slowest < timeout + SLACK, "a call took {slowest:?}");
        assert!(failures > 0, "the outage was seen");
        assert!(
            last_ok.is_some_and(|t| t > restarted),
            "recovered after the restart"
        );
    }
}

/// Threads queued on one key's lease renewal behind a paused server: each call's deadline
/// starts before it waits, so the last in the queue does not wait the others' timeouts too
/// (each waits for the renewal in flight, then renews with what is left of its own).
#[test]
fn leased_threads_queued_on_one_key_share_their_timeout() {
    let server = Server::start();
    let timeout = Duration::from_millis(500);
    let options = Options::new().prefix("lease-queue").timeout(timeout);
    // Batch 1, lease 1 µs: every call goes to the server.
    let leased = std::sync::Arc::new(
        LeasedLimiter::new(&server.url(), limit(100, 60_000_000), options, 1, 1).unwrap(),
    );
    assert!(leased.check_and_hit("k").unwrap().admitted);
    server.signal("-STOP");
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let leased = std::sync::Arc::clone(&leased);
            std::thread::spawn(move || {
                let start = Instant::now();
                let result = leased.check_and_hit("k");
                (start.elapsed(), result)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    server.signal("-CONT");
    for (elapsed, result) in results {
        // Without the shared deadline the sixth thread would wait 6 x 500 ms.
        assert!(elapsed < timeout + Duration::from_secs(1), "{elapsed:?}");
        assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");
    }
}
