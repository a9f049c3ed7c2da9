//! The tower layer over the async Redis limiter (feature `tokio`), against real servers: one
//! limit shared by several layers (as by several front-ends), the fields and `Retry-After`
//! from Redis's answer, and each failure policy in HTTP terms while the server is paused,
//! killed and restarted.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use slidelimit::ManualClock;
use slidelimit_redis::{AsyncRedisLimiter, FailurePolicy, LeasedLimiter, Options, TimeSource};
use slidelimit_tower::{Header, RateLimitLayer};
use tower::{service_fn, Layer, Service, ServiceExt};

use crate::{limit, runtime, shared, Server, TIMEOUT};

/// A minute in the Redis limiters' microsecond ticks.
const MINUTE: u64 = 60_000_000;

/// A service behind the layer over `limiter`, keyed by `x-api-key`.
fn service(
    limiter: Arc<AsyncRedisLimiter>,
) -> impl Service<
    Request<String>,
    Response = Response<slidelimit_tower::ResponseBody<String>>,
    Error = Infallible,
    Future: Send,
> + Clone
       + Send
       + 'static {
    let layer = RateLimitLayer::new(limiter, Header::new("x-api-key".parse().expect("name")));
    layer.layer(service_fn(|_request: Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::from("ok")))
    }))
}

fn get(key: &str) -> Request<String> {
    Request::get("/")
        .header("x-api-key", key)
        .body(String::new())
        .expect("request")
}

fn field(
    response: &Response<slidelimit_tower::ResponseBody<String>>,
    name: &str,
) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().expect("ascii").to_owned())
}

#[test]
fn asynchronous_layers_share_one_limit_and_report_redis_answers() {
    runtime().block_on(async {
        // Two front-ends: two limiters (two connections) on one server and prefix.
        let options = Options::new().prefix("layer-shared").timeout(TIMEOUT);
        let front_ends: Vec<_> = (0..2)
            .map(|_| {
                service(Arc::new(
                    AsyncRedisLimiter::new(&shared().url(), limit(3, MINUTE), options.clone())
                        .expect("limiter"),
                ))
            })
            .collect();
        let mut statuses = Vec::new();
        let mut remaining = Vec::new();
        for i in 0..6 {
            let response = front_ends[i % 2].clone().oneshot(get("k")).await.unwrap();
            statuses.push(response.status());
            remaining.push(field(&response, "ratelimit"));
            if response.status() == StatusCode::TOO_MANY_REQUESTS {
                let retry: u64 = field(&response, "retry-after")
                    .expect("Retry-After on a 429")
                    .parse()
                    .expect("seconds");
                assert!((1..=60).contains(&retry), "{retry}");
                assert_eq!(
                    field(&response, "ratelimit-policy").as_deref(),
                    Some(r#""default";q=3;w=60"#)
                );
            }
        }
        let admitted = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        assert_eq!(
            admitted, 3,
            "one limit across both front-ends: {statuses:?}"
        );
        assert_eq!(
            remaining[..3],
            [
                Some(r#""default";r=2"#.to_owned()),
                Some(r#""default";r=1"#.to_owned()),
                Some(r#""default";r=0;t=60"#.to_owned()),
            ],
            "the fields come from Redis's answer, after each admission"
        );
        let other = front_ends[1].clone().oneshot(get("other")).await.unwrap();
        assert_eq!(other.status(), StatusCode::OK, "keys are apart");
    });
}

#[test]
fn asynchronous_layer_answers_each_failure_policy_in_http_terms() {
    let mut server = Server::start();
    let timeout = Duration::from_millis(200);
    let slack = Duration::from_secs(2);
    runtime().block_on(async {
        let with = |policy, prefix: &str| {
            let options = Options::new()
                .prefix(prefix)
                .timeout(timeout)
                .failure(policy);
            service(Arc::new(
                AsyncRedisLimiter::new(&server.url(), limit(2, MINUTE), options).expect("limiter"),
            ))
        };
        let closed = with(FailurePolicy::FailClosed, "layer-closed");
        let open = with(FailurePolicy::FailOpen, "layer-open");
        let local = with(FailurePolicy::Local { max_requests: 1 }, "layer-local");
        for front_end in [&closed, &open, &local] {
            let response = front_end.clone().oneshot(get("k")).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "Redis decides while up");
        }

        for outage in ["paused", "killed"] {
            if outage == "paused" {
                server.signal("-STOP");
            } else {
                server.kill();
            }
            let start = Instant::now();
            let refused = closed.clone().oneshot(get("k")).await.unwrap();
            let opened = open.clone().oneshot(get("k")).await.unwrap();
            // A key of its own per outage: the local share keeps its window across both.
            let fresh = format!("fresh-{outage}");
            let shared_first = local.clone().oneshot(get(&fresh)).await.unwrap();
            let shared_second = local.clone().oneshot(get(&fresh)).await.unwrap();
            let elapsed = start.elapsed();
            assert!(elapsed < 4 * timeout + slack, "{outage}: {elapsed:?}");

            assert_eq!(
                refused.status(),
                StatusCode::SERVICE_UNAVAILABLE,
                "{outage}"
            );
            assert_eq!(
                field(&refused, "retry-after").as_deref(),
                Some("1"),
                "{outage}"
            );
            assert_eq!(field(&refused, "ratelimit"), None, "no window to report");

            assert_eq!(
                opened.status(),
                StatusCode::OK,
                "{outage}: fail open admits"
            );
            assert_eq!(field(&opened, "ratelimit"), None, "{outage}");

            assert_eq!(
                shared_first.status(),
                StatusCode::OK,
                "{outage}: the local share"
            );
            assert_eq!(
                field(&shared_first, "ratelimit-policy").as_deref(),
                Some(r#""default";q=1;w=60"#),
                "{outage}: the local share's own policy"
            );
            assert_eq!(
                shared_second.status(),
                StatusCode::TOO_MANY_REQUESTS,
                "{outage}: the local share of 1 is spent"
            );

            if outage == "paused" {
                server.signal("-CONT");
                // The paused server still runs the script it had queued for the timed-out
                // request once it resumes: "k" may now hold both hits (a timeout can only
                // count more, never admit more). A fresh key shows Redis deciding again.
                let back = closed.clone().oneshot(get("after-pause")).await.unwrap();
                assert_eq!(back.status(), StatusCode::OK, "resumed");
                assert!(field(&back, "ratelimit").is_some(), "Redis decides again");
            } else {
                server.restart();
                let mut status = None;
                for _ in 0..5 {
                    let response = closed.clone().oneshot(get("after-restart")).await.unwrap();
                    status = Some(response.status());
                    if response.status() == StatusCode::OK {
                        assert!(
                            field(&response, "ratelimit").is_some(),
                            "Redis decides again"
                        );
                        break;
                    }
                }
                assert_eq!(status, Some(StatusCode::OK), "recovers after the restart");
            }
        }
    });
}

#[test]
fn asynchronous_refusal_cache_answers_a_flood_without_round_trips() {
    runtime().block_on(async {
        let options = Options::new().prefix("layer-flood").timeout(TIMEOUT);
        let limiter = Arc::new(
            AsyncRedisLimiter::new(&shared().url(), limit(5, MINUTE), options).expect("limiter"),
        );
        let layer = RateLimitLayer::new(
            Arc::clone(&limiter),
            Header::new("x-api-key".parse().expect("name")),
        );
        let service = layer.layer(service_fn(|_request: Request<String>| async {
            Ok::<_, Infallible>(Response::new(String::from("ok")))
        }));
        let (tasks, each) = (20, 50);
        let flood: Vec<_> = (0..tasks)
            .map(|_| {
                let service = service.clone();
                tokio::spawn(async move {
                    let mut statuses = Vec::new();
                    for _ in 0..each {
                        let response = service.clone().oneshot(get("flooded")).await.unwrap();
                        if response.status() == StatusCode::TOO_MANY_REQUESTS {
                            assert!(field(&response, "retry-after").is_some());
                        }
                        statuses.push(response.status());
                    }
                    statuses
                })
            })
            .collect();
        let mut admitted = 0;
        for task in flood {
            admitted += task
                .await
                .unwrap()
                .iter()
                .filter(|status| **status == StatusCode::OK)
                .count();
        }
        let cache = limiter.refusal_cache().expect("on by default");
        assert_eq!(admitted, 5, "the limit holds");
        assert_eq!(
            cache.asked() + cache.served_locally(),
            (tasks * each) as u64
        );
        // Each task may have one refusal in flight before the first one is remembered.
        assert!(
            cache.asked() <= 5 + tasks as u64,
            "round trips: {} of {}",
            cache.asked(),
            tasks * each
        );
        assert_eq!(cache.remembered(), 1);
    });
}

/// What a 429 carries: `RateLimit-Policy`, `RateLimit` and `Retry-After`.
type Refusal = (Option<String>, Option<String>, Option<String>);

#[test]
fn asynchronous_refusal_cache_repeats_every_window_of_a_layered_limit() {
    runtime().block_on(async {
        // Redis decides on a frozen caller clock, so its answers are exact; the cache counts
        // its waits down in this process's real time.
        let clock = Arc::new(ManualClock::new(1_000_000));
        let options = Options::new()
            .prefix("layer-layered-cache")
            .timeout(TIMEOUT)
            .time(TimeSource::Caller(clock.clone()));
        let layered = limit(5, 1_000_000)
            .and(limit(12, 4_000_000))
            .expect("a layered limit");
        let limiter =
            Arc::new(AsyncRedisLimiter::new(&shared().url(), layered, options).expect("limiter"));
        let front_end = service(Arc::clone(&limiter));
        let cache = limiter.refusal_cache().expect("on by default");
        let refused = |key: &'static str| {
            let front_end = front_end.clone();
            async move {
                let response = front_end.oneshot(get(key)).await.unwrap();
                assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{key}");
                (
                    field(&response, "ratelimit-policy"),
                    field(&response, "ratelimit"),
                    field(&response, "retry-after"),
                )
            }
        };
        let admit = |key: &'static str, n: usize| {
            let front_end = front_end.clone();
            async move {
                for _ in 0..n {
                    let response = front_end.clone().oneshot(get(key)).await.unwrap();
                    assert_eq!(response.status(), StatusCode::OK, "{key}");
                }
            }
        };
        let policy = Some(r#""default-1s";q=5;w=1, "default-4s";q=12;w=4"#.to_owned());

        // The second binds: 5 in its second, 7 left of the 4 s window.
        admit("narrow", 5).await;
        let fresh: Refusal = refused("narrow").await;
        assert_eq!(
            fresh,
            (
                policy.clone(),
                Some(r#""default-1s";r=0;t=1, "default-4s";r=7"#.to_owned()),
                Some("1".to_owned())
            ),
            "Redis's refusal"
        );
        assert_eq!((cache.asked(), cache.served_locally()), (6, 0));
        for _ in 0..3 {
            assert_eq!(refused("narrow").await, fresh, "a refusal from the cache");
        }
        assert_eq!(
            (cache.asked(), cache.served_locally()),
            (6, 3),
            "answered without a round trip"
        );

        // The 4 s window binds: 5 + 5 + 2 over three seconds, its oldest hits leaving 2 s
        // after the refusal while the second has 3 left.
        clock.set(10_000_000);
        admit("wide", 5).await;
        clock.set(11_000_000);
        admit("wide", 5).await;
        clock.set(12_000_000);
        admit("wide", 2).await;
        let asked = cache.asked();
        let fresh = refused("wide").await;
        assert_eq!(
            fresh,
            (
                policy.clone(),
                Some(r#""default-1s";r=3, "default-4s";r=0;t=2"#.to_owned()),
                Some("2".to_owned())
            ),
            "Redis's refusal"
        );
        let cached = refused("wide").await;
        assert_eq!(
            cached, fresh,
            "a refusal from the cache, within the same second"
        );
        // 1.2 s later, 0.8 s of the wait is left: the binding window's reset counts down.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        let later = refused("wide").await;
        assert_eq!(
            later,
            (
                policy,
                Some(r#""default-1s";r=3, "default-4s";r=0;t=1"#.to_owned()),
                Some("1".to_owned())
            ),
            "the wait counted down from the moment Redis was asked"
        );
        assert_eq!(
            (cache.asked() - asked, cache.served_locally()),
            (1, 5),
            "one round trip for the three refusals"
        );
    });
}

#[test]
fn asynchronous_layer_over_leases_decides_locally_and_keeps_the_limit() {
    runtime().block_on(async {
        let options = Options::new()
            .prefix("layer-leases")
            .timeout(TIMEOUT)
            .expiry_slack(Duration::from_secs(10));
        // 10 per minute, leases of 4 permits usable for 10 s.
        let leased = Arc::new(
            LeasedLimiter::new(&shared().url(), limit(10, MINUTE), options, 4, 10_000_000)
                .expect("limiter"),
        );
        let layer = RateLimitLayer::new(
            Arc::clone(&leased),
            Header::new("x-api-key".parse().expect("name")),
        );
        let service = layer.layer(service_fn(|_request: Request<String>| async {
            Ok::<_, Infallible>(Response::new(String::from("ok")))
        }));
        let mut admitted = 0;
        let mut refused = 0;
        for _ in 0..30 {
            let response = service.clone().oneshot(get("k")).await.unwrap();
            match response.status() {
                StatusCode::OK => admitted += 1,
                StatusCode::TOO_MANY_REQUESTS => {
                    refused += 1;
                    let retry: u64 = field(&response, "retry-after")
                        .expect("Retry-After")
                        .parse()
                        .expect("seconds");
                    // A lease's permits count for the window plus the lease duration.
                    assert!((1..=70).contains(&retry), "{retry}");
                }
                other => panic!("{other}"),
            }
        }
        assert_eq!((admitted, refused), (10, 20), "the limit, in leases of 4");
        // A round trip per lease (4 + 4 + 2, the last one short) and for the refused
        // lease calls that learn the retry-after; the other refusals are answered from it.
        assert!(
            leased.round_trips() <= 6,
            "{} round trips",
            leased.round_trips()
        );
    });
}

#[test]
fn asynchronous_layer_under_load_answers_within_the_timeout_through_a_restart() {
    let server = Arc::new(Mutex::new(Server::start()));
    let timeout = Duration::from_millis(200);
    let slack = Duration::from_secs(2);
    runtime().block_on(async {
        let options = Options::new().prefix("layer-load").timeout(timeout);
        let url = server.lock().expect("server").url();
        let front_end = service(Arc::new(
            AsyncRedisLimiter::new(&url, limit(50, 1_000_000), options).expect("limiter"),
        ));
        let start = Instant::now();
        let run = Duration::from_millis(4_000);
        let tasks: Vec<_> = (0..16)
            .map(|task| {
                let front_end = front_end.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut slowest = Duration::ZERO;
                    let mut i = 0u64;
                    while start.elapsed() < run {
                        let asked = Instant::now();
                        let key = format!("k{}", (task as u64 * 31 + i) % 8);
                        let response = front_end.clone().oneshot(get(&key)).await.unwrap();
                        slowest = slowest.max(asked.elapsed());
                        seen.push((start.elapsed(), response.status()));
                        i += 1;
                        tokio::task::yield_now().await;
                    }
                    (seen, slowest)
                })
            })
            .collect();
        // The outage, from another thread: killed at 1 s, restarted at 2 s.
        let outage = {
            let server = Arc::clone(&server);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1_000));
                server.lock().expect("server").kill();
                std::thread::sleep(Duration::from_millis(1_000));
                server.lock().expect("server").restart();
                start.elapsed()
            })
        };
        let mut seen = Vec::new();
        for task in tasks {
            let (statuses, slowest) = task.await.unwrap();
            assert!(slowest < timeout + slack, "a request took {slowest:?}");
            seen.extend(statuses);
        }
        let restarted_at = outage.join().expect("outage thread");
        let count = |from: Duration, to: Duration, status: StatusCode| {
            seen.iter()
                .filter(|(at, s)| *at >= from && *at < to && *s == status)
                .count()
        };
        let during = (Duration::from_millis(1_100), Duration::from_millis(1_900));
        assert!(
            seen.iter().all(|(_, s)| [
                StatusCode::OK,
                StatusCode::TOO_MANY_REQUESTS,
                StatusCode::SERVICE_UNAVAILABLE
            ]
            .contains(s)),
            "only decisions or the failure policy's 503"
        );
        assert!(count(Duration::ZERO, Duration::from_millis(900), StatusCode::OK) > 0);
        assert!(
            count(during.0, during.1, StatusCode::SERVICE_UNAVAILABLE) > 0,
            "fails closed"
        );
        assert_eq!(
            count(during.0, during.1, StatusCode::OK),
            0,
            "nothing admitted while down"
        );
        assert!(
            count(during.1.min(restarted_at), run, StatusCode::OK) > 0,
            "admits again after the restart (at {restarted_at:?})"
        );
    });
}
