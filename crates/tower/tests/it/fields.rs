//! The options that shape the fields: turning the informational ones off, naming the policy,
//! stacking two layers.

use std::net::IpAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use http::StatusCode;
use slidelimit::LockFreeLimiter;
use slidelimit_tower::{Header, PeerIp, PolicyName, RateLimitLayer};

use crate::support::{
    check_fields, client, counted_router, get_request, limit, parse_item, send, serve_axum,
    EXACT_MAX_T,
};

/// With informational fields off, admitted responses carry none; refusals still carry them
/// all, with the configured name.
#[tokio::test]
async fn informational_headers_off() {
    const N: u64 = 2;
    let limiter = Arc::new(LockFreeLimiter::<IpAddr>::new(limit(N)));
    let layer = RateLimitLayer::new(limiter, PeerIp::new())
        .informational_headers(false)
        .policy_name(PolicyName::new("per \"ip\"").unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let server = serve_axum(counted_router(&calls).layer(layer), calls).await;
    let client = client();
    for _ in 0..N {
        let reply = send(&client, get_request(server.addr, "/", &[])).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.headers.get("ratelimit").is_none());
        assert!(reply.headers.get("ratelimit-policy").is_none());
    }
    let reply = send(&client, get_request(server.addr, "/", &[])).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        reply.headers["ratelimit"]
            .to_str()
            .unwrap()
            .split(';')
            .next(),
        Some(r#""per \"ip\"""#),
        "the name is sent escaped"
    );
    check_fields(&reply, "per \"ip\"", N, EXACT_MAX_T);
}

/// Two layers (per IP outside, per API key inside) each add their own line to both list
/// fields; the inner one's refusal still reports the outer one's state.
#[tokio::test]
async fn stacked_layers_report_side_by_side() {
    let per_ip = RateLimitLayer::new(
        Arc::new(LockFreeLimiter::<IpAddr>::new(limit(100))),
        PeerIp::new(),
    )
    .policy_name(PolicyName::new("ip").unwrap());
    let per_key = RateLimitLayer::new(
        Arc::new(LockFreeLimiter::<String>::new(limit(1))),
        Header::new(http::HeaderName::from_static("x-api-key")),
    )
    .policy_name(PolicyName::new("key").unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    // Router::layer wraps what is already there: the last layer added runs first.
    let app = counted_router(&calls).layer(per_key).layer(per_ip);
    let server = serve_axum(app, calls).await;
    let client = client();
    let request = || get_request(server.addr, "/", &[("x-api-key", "k")]);

    let lines = |reply: &crate::support::Reply, field: &str| -> Vec<(String, Vec<(String, u64)>)> {
        reply
            .headers
            .get_all(field)
            .iter()
            .map(|value| {
                let (name, params) = parse_item(value.to_str().unwrap()).unwrap();
                (name, params.into_iter().collect())
            })
            .collect()
    };
    let first = send(&client, request()).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(
        lines(&first, "ratelimit-policy"),
        [
            (
                "key".to_owned(),
                vec![("q".to_owned(), 1), ("w".to_owned(), 600)]
            ),
            (
                "ip".to_owned(),
                vec![("q".to_owned(), 100), ("w".to_owned(), 600)]
            ),
        ]
    );
    let ratelimit = lines(&first, "ratelimit");
    assert_eq!(ratelimit[1], ("ip".to_owned(), vec![("r".to_owned(), 99)]));
    assert_eq!(ratelimit[0].0, "key");
    assert_eq!(ratelimit[0].1[0], ("r".to_owned(), 0));

    let second = send(&client, request()).await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
    let ratelimit = lines(&second, "ratelimit");
    assert_eq!(ratelimit[1], ("ip".to_owned(), vec![("r".to_owned(), 98)]));
    assert_eq!(ratelimit[0].0, "key");
    assert_eq!(server.calls(), 1);
}

/// A limit of two windows (2 per 5 minutes and 3 per 10) sends one item per window in both
/// fields, narrowest first, each with its own count; the refusal's `Retry-After` is the
/// binding window's wait.
#[tokio::test]
async fn a_layered_limit_sends_one_item_per_window() {
    let ns = std::time::Duration::from_nanos(1);
    let layered = slidelimit::Limit::per(2, std::time::Duration::from_secs(300), ns)
        .unwrap()
        .and(limit(3))
        .unwrap();
    let limiter = Arc::new(LockFreeLimiter::<IpAddr>::new(layered));
    let layer = RateLimitLayer::new(limiter, PeerIp::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let server = serve_axum(counted_router(&calls).layer(layer), calls).await;
    let client = client();
    let first = send(&client, get_request(server.addr, "/", &[])).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(
        first.headers["ratelimit-policy"].to_str().unwrap(),
        r#""default-300s";q=2;w=300, "default-600s";q=3;w=600"#
    );
    assert_eq!(
        first.headers["ratelimit"].to_str().unwrap(),
        r#""default-300s";r=1, "default-600s";r=2"#
    );
    let second = send(&client, get_request(server.addr, "/", &[])).await;
    assert_eq!(second.status, StatusCode::OK);
    let ratelimit = second.headers["ratelimit"].to_str().unwrap().to_owned();
    assert!(
        ratelimit.starts_with(r#""default-300s";r=0;t="#),
        "{ratelimit}"
    );
    assert!(
        ratelimit.ends_with(r#", "default-600s";r=1"#),
        "{ratelimit}"
    );
    let refused = send(&client, get_request(server.addr, "/", &[])).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=300).contains(&wait),
        "the 5-minute window binds: {wait}"
    );
}
