//! A limit means the same time in every limiter: the nanosecond limit the in-process limiters
//! (and the tower layer's default clock) take is converted to the Redis limiters'
//! microseconds, against a real server; a limit that is no whole number of microseconds is
//! refused with a typed error instead of being rounded.

use std::sync::Arc;
use std::time::Duration;

use slidelimit::{Limit, LimitError, ManualClock};
use slidelimit_redis::{Error, LeasedLimiter, Options, RedisLimiter, TimeSource};

use crate::{shared, TIMEOUT};

const NS: Duration = Duration::from_nanos(1);
const US: Duration = Duration::from_micros(1);
/// A minute in the Redis limiters' microseconds.
const MINUTE_US: u64 = 60_000_000;

/// 100 per minute, written for the nanosecond ticks of `MonotonicClock` (docs/http.md's
/// in-process layer example, reused as is).
fn per_minute_in_nanoseconds() -> Limit {
    Limit::per_minute(100, NS).expect("valid limit")
}

/// One request per 1.5 µs: no whole number of microseconds.
fn one_and_a_half_microseconds() -> Limit {
    Limit::per(1, Duration::from_nanos(1_500), NS).expect("valid limit")
}

fn is_not_whole_microseconds(err: &Error) -> bool {
    matches!(
        err,
        Error::Limit(LimitError::NotWholeTicks { period, tick: US })
            if *period == Duration::from_nanos(1_500)
    )
}

/// The key's log's time to live, in milliseconds.
fn log_pttl(prefix: &str, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(format!("{prefix}:{{#{key}}}:log"))
        .query(&mut shared().connection())
        .expect("PTTL")
}

/// The key lives one window, its lateness (a sixteenth of the window with the server's
/// clock) and the expiry slack (1 s): 64.75 s for a minute. Hours (the window read as 60e9
/// microseconds) is the bug.
fn assert_lives_about_a_minute(pttl: i64) {
    assert!(
        (60_000..=64_750).contains(&pttl),
        "PTTL {pttl} ms: a 60 s window, 3.75 s lateness and 1 s slack"
    );
}

#[test]
fn a_nanosecond_limit_is_a_minute_in_redis() {
    let limit = per_minute_in_nanoseconds();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let options = Options::new()
        .prefix("ticks-enforce")
        .timeout(TIMEOUT)
        .time(TimeSource::Caller(clock.clone()));
    let limiter = RedisLimiter::new(&shared().url(), limit, options).expect("limiter");
    assert_eq!(
        (
            limiter.limit().max_requests(),
            limiter.limit().window_ticks()
        ),
        (100, MINUTE_US)
    );
    assert_eq!(limiter.limit().tick(), Some(US));
    for _ in 0..100 {
        assert!(limiter.check_and_hit("k").expect("decided").admitted);
    }
    let refused = limiter.check_and_hit("k").expect("decided");
    assert!(!refused.admitted, "the 101st of a minute");
    assert_eq!(refused.status.retry_after_ticks, MINUTE_US);
    // Just under a minute later the window still holds all 100; at a minute they have left.
    clock.set(1_000_000 + MINUTE_US - 1);
    assert!(!limiter.check_and_hit("k").expect("decided").admitted);
    clock.set(1_000_000 + MINUTE_US);
    assert!(limiter.check_and_hit("k").expect("decided").admitted);

    // By the server's clock the key expires after about a minute.
    let options = Options::new().prefix("ticks-pttl").timeout(TIMEOUT);
    let limiter = RedisLimiter::new(&shared().url(), limit, options).expect("limiter");
    assert!(limiter.check_and_hit("k").expect("decided").admitted);
    assert_lives_about_a_minute(log_pttl("ticks-pttl", "k"));
}

#[test]
fn a_limit_of_no_whole_microseconds_is_refused() {
    let url = shared().url();
    let short = one_and_a_half_microseconds();
    let err = RedisLimiter::new(&url, short, Options::new()).unwrap_err();
    assert!(is_not_whole_microseconds(&err), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the limit cannot be counted in the Redis limiters' microseconds: period 1.5µs is not \
         a whole, nonzero number of 1µs ticks"
    );
    assert!(!err.is_backend_failure());
    let err = LeasedLimiter::new(&url, short, Options::new(), 1, 1_000).unwrap_err();
    assert!(is_not_whole_microseconds(&err), "{err:?}");
    // 3 µs is whole: accepted, as 3 ticks.
    let three = Limit::per(1, Duration::from_nanos(3_000), NS).expect("valid limit");
    let limiter = RedisLimiter::new(&url, three, Options::new()).expect("limiter");
    assert_eq!(limiter.limit().window_ticks(), 3);
    // A limit of raw ticks is taken to be in microseconds, as before.
    let raw = Limit::new(100, MINUTE_US).expect("valid limit");
    let limiter = RedisLimiter::new(&url, raw, Options::new()).expect("limiter");
    assert_eq!(limiter.limit().window_ticks(), MINUTE_US);
}

#[test]
fn a_leased_limiter_converts_before_building_its_lease() {
    // A lease needs a timeout below the expiry slack.
    let options = Options::new()
        .prefix("ticks-lease")
        .timeout(TIMEOUT)
        .expiry_slack(TIMEOUT * 2);
    let limiter = LeasedLimiter::new(
        &shared().url(),
        per_minute_in_nanoseconds(),
        options,
        10,
        1_000,
    )
    .expect("limiter");
    assert_eq!(limiter.limit().window_ticks(), MINUTE_US);
    assert_eq!(limiter.limit().tick(), Some(US));
}

#[cfg(feature = "tokio")]
mod asynchronous {
    use std::convert::Infallible;

    use http::{Request, Response, StatusCode};
    use slidelimit_redis::AsyncRedisLimiter;
    use slidelimit_tower::{Header, RateLimitLayer};
    use tower::{service_fn, Layer, ServiceExt};

    use super::*;
    use crate::runtime;

    #[test]
    fn a_nanosecond_limit_is_a_minute_in_async_redis() {
        runtime().block_on(async {
            let clock = Arc::new(ManualClock::new(1_000_000));
            let options = Options::new()
                .prefix("ticks-async-enforce")
                .timeout(TIMEOUT)
                .time(TimeSource::Caller(clock.clone()));
            let limiter =
                AsyncRedisLimiter::new(&shared().url(), per_minute_in_nanoseconds(), options)
                    .expect("limiter");
            assert_eq!(limiter.limit().window_ticks(), MINUTE_US);
            for _ in 0..100 {
                assert!(limiter.check_and_hit("k").await.expect("decided").admitted);
            }
            let refused = limiter.check_and_hit("k").await.expect("decided");
            assert!(!refused.admitted);
            assert_eq!(refused.status.retry_after_ticks, MINUTE_US);
            clock.set(1_000_000 + MINUTE_US);
            assert!(limiter.check_and_hit("k").await.expect("decided").admitted);

            let options = Options::new().prefix("ticks-async-pttl").timeout(TIMEOUT);
            let limiter =
                AsyncRedisLimiter::new(&shared().url(), per_minute_in_nanoseconds(), options)
                    .expect("limiter");
            assert!(limiter.check_and_hit("k").await.expect("decided").admitted);
            assert_lives_about_a_minute(log_pttl("ticks-async-pttl", "k"));
        });
        let err = AsyncRedisLimiter::new(
            &shared().url(),
            one_and_a_half_microseconds(),
            Options::new(),
        )
        .unwrap_err();
        assert!(is_not_whole_microseconds(&err), "{err:?}");
    }

    /// The issue's symptom, end to end: the layer over the async limiter reported `w=60000`
    /// (a minute of nanoseconds read as microseconds, in seconds) for a limit of a minute.
    #[test]
    fn the_layer_reports_a_minute_for_a_nanosecond_limit() {
        runtime().block_on(async {
            let options = Options::new().prefix("ticks-layer").timeout(TIMEOUT);
            let limiter =
                AsyncRedisLimiter::new(&shared().url(), per_minute_in_nanoseconds(), options)
                    .expect("limiter");
            let layer = RateLimitLayer::new(
                Arc::new(limiter),
                Header::new("x-api-key".parse().expect("name")),
            );
            let service = layer.layer(service_fn(|_request: Request<String>| async {
                Ok::<_, Infallible>(Response::new(String::from("ok")))
            }));
            let request = Request::get("/")
                .header("x-api-key", "k")
                .body(String::new())
                .expect("request");
            let response = service.oneshot(request).await.expect("infallible");
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response.headers()["ratelimit-policy"],
                r#""default";q=100;w=60"#
            );
        });
    }
}
