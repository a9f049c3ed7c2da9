//! axum's `Router::layer` with the per-IP key: exact admission counts under concurrent load,
//! for every variant; a limit in other ticks than the layer's clock refused when the router is
//! built.

use std::net::IpAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use slidelimit::{Clock, Limit, LockFreeLimiter, MonotonicClock};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;
use slidelimit_tower::{PeerIp, RateLimitLayer};

use crate::support::{
    all_limiters, check_batch, check_fields, client, counted_router, get_request, limit, max_t,
    send, send_concurrently, serve_axum, EXACT_MAX_T,
};

/// 20 of 60 simultaneous requests from one IP are admitted, for every variant and window;
/// the refused 40 never reach the handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_n_of_m_concurrent_requests_per_variant() {
    const N: u64 = 20;
    const M: usize = 60;
    for (name, algorithm, limiter) in all_limiters::<IpAddr>(limit(N)) {
        let calls = Arc::new(AtomicUsize::new(0));
        let app = counted_router(&calls).layer(RateLimitLayer::new(limiter, PeerIp::new()));
        let server = serve_axum(app, calls).await;
        let requests = (0..M)
            .map(|i| get_request(server.addr, if i % 2 == 0 { "/" } else { "/other" }, &[]))
            .collect();
        let replies = send_concurrently(requests).await;
        check_batch(&replies, "default", N, max_t(algorithm));
        assert_eq!(
            server.calls(),
            N as usize,
            "{name}: refusals reach no handler"
        );
    }
}

/// One client in sequence: `r` counts down by one per request to 0, `t` appears with the last
/// unit, and the refusals that follow wait no longer than it said (time only moves on).
#[tokio::test]
async fn sequential_requests_count_down() {
    const N: u64 = 5;
    let limiter = Arc::new(LockFreeLimiter::<IpAddr>::new(limit(N)));
    let calls = Arc::new(AtomicUsize::new(0));
    let app =
        counted_router(&calls).layer(RateLimitLayer::new(Arc::clone(&limiter), PeerIp::new()));
    let server = serve_axum(app, calls).await;
    let client = client();

    let mut last_t = None;
    for expected_r in (0..N).rev() {
        let reply = send(&client, get_request(server.addr, "/", &[])).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, "root");
        let fields = check_fields(&reply, "default", N, EXACT_MAX_T);
        assert_eq!(fields.r, expected_r);
        last_t = fields.t;
    }
    let last_t = last_t.expect("t comes with r=0");
    for _ in 0..3 {
        let reply = send(&client, get_request(server.addr, "/", &[])).await;
        assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
        let fields = check_fields(&reply, "default", N, EXACT_MAX_T);
        assert!(fields.t.unwrap() <= last_t, "the wait only shrinks");
    }
    assert_eq!(server.calls(), N as usize);
    // The limiter the layer shares is the caller's: it saw exactly the admitted hits.
    let status = limiter.status(
        &IpAddr::from([127, 0, 0, 1]),
        MonotonicClock::new().now_ticks(),
    );
    assert_eq!((status.count, status.remaining), (N, 0));
}

/// The panic message of `build`, which must panic.
fn panic_message(build: impl FnOnce()) -> String {
    let panicked = catch_unwind(AssertUnwindSafe(build)).expect_err("a panic at start-up");
    panicked
        .downcast_ref::<String>()
        .cloned()
        .expect("a formatted message")
}

/// 100 per minute built in milliseconds, under the layer's default nanosecond clock, would
/// be 100 per 60 µs: `Router::layer` panics with the fix, for every variant (as `dyn
/// RateLimiter` and as each concrete type); the same limit converted to nanoseconds builds.
#[test]
fn a_limit_in_other_ticks_than_the_clock_panics_when_the_router_is_built() {
    let in_ms = Limit::per_minute(100, Duration::from_millis(1)).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let expect_refused = |name: &str, message: String| {
        assert!(
            message.contains("built in ticks of 1ms") && message.contains("in_ticks_of(1ns)"),
            "{name}: {message}"
        );
    };
    for (name, _, limiter) in all_limiters::<IpAddr>(in_ms) {
        let message = panic_message(|| {
            let _ = counted_router(&calls).layer(RateLimitLayer::new(limiter, PeerIp::new()));
        });
        expect_refused(&name, message);
    }
    macro_rules! refused_as_concrete {
        ($($limiter:ty),*) => {$(
            let limiter = Arc::new(<$limiter>::new(in_ms));
            let message = panic_message(|| {
                let _ = counted_router(&calls).layer(RateLimitLayer::new(limiter, PeerIp::new()));
            });
            expect_refused(stringify!($limiter), message);
        )*};
    }
    refused_as_concrete!(
        LockFreeLimiter<IpAddr>,
        MutexLimiter<IpAddr>,
        PerKeyLockLimiter<IpAddr>,
        RwLockLimiter<IpAddr>
    );
    let in_ns = in_ms.in_ticks_of(Duration::from_nanos(1)).unwrap();
    for (_, _, limiter) in all_limiters::<IpAddr>(in_ns) {
        let _ = counted_router(&calls).layer(RateLimitLayer::new(limiter, PeerIp::new()));
    }
}
