//! Keys other than the peer: independent header keys, a trusted proxy's X-Forwarded-For, and
//! what happens to a request without a key.

use std::net::IpAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use http::StatusCode;
use slidelimit::LockFreeLimiter;
use slidelimit_mutex::MutexLimiter;
use slidelimit_rwlock::RwLockLimiter;
use slidelimit_tower::{Header, MissingKey, PeerIp, RateLimitLayer};

use crate::support::{
    check_batch, client, counted_router, get_request, limit, send, send_concurrently, serve_axum,
    Reply, EXACT_MAX_T,
};

fn api_key() -> Header {
    Header::new(http::HeaderName::from_static("x-api-key"))
}

fn replies_for<'a>(replies: &'a [Reply], keys: &[&str], key: &str) -> Vec<&'a Reply> {
    keys.iter()
        .zip(replies)
        .filter(|(k, _)| **k == key)
        .map(|(_, reply)| reply)
        .collect()
}

/// Three keys hammered at once, interleaved: each gets exactly its own N.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn header_keys_are_independent() {
    const N: u64 = 8;
    let limiter = Arc::new(MutexLimiter::<String>::new(limit(N)));
    let calls = Arc::new(AtomicUsize::new(0));
    let app = counted_router(&calls).layer(RateLimitLayer::new(limiter, api_key()));
    let server = serve_axum(app, calls).await;
    let keys: Vec<&str> = (0..75).map(|i| ["a", "b", "c"][i % 3]).collect();
    let requests = keys
        .iter()
        .map(|key| get_request(server.addr, "/", &[("x-api-key", key)]))
        .collect();
    let replies = send_concurrently(requests).await;
    for key in ["a", "b", "c"] {
        let mine: Vec<Reply> = replies_for(&replies, &keys, key)
            .into_iter()
            .map(|reply| Reply {
                status: reply.status,
                headers: reply.headers.clone(),
                body: reply.body.clone(),
            })
            .collect();
        assert_eq!(mine.len(), 25);
        check_batch(&mine, "default", N, EXACT_MAX_T);
    }
    assert_eq!(server.calls(), 3 * N as usize);
}

/// Behind one proxy, X-Forwarded-For's last entry is the client: two clients forging the
/// same left-hand entry still get a quota each, and all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn x_forwarded_for_keys_by_the_proxy_appended_address() {
    const N: u64 = 5;
    let limiter = Arc::new(RwLockLimiter::<IpAddr>::new(limit(N)));
    let calls = Arc::new(AtomicUsize::new(0));
    let app =
        counted_router(&calls).layer(RateLimitLayer::new(limiter, PeerIp::x_forwarded_for(1)));
    let server = serve_axum(app, calls).await;
    let clients: Vec<&str> = (0..30).map(|i| ["192.0.2.1", "192.0.2.2"][i % 2]).collect();
    let requests = clients
        .iter()
        .map(|client| {
            let header = format!("6.6.6.6, {client}");
            get_request(server.addr, "/", &[("x-forwarded-for", &header)])
        })
        .collect();
    let replies = send_concurrently(requests).await;
    for client in ["192.0.2.1", "192.0.2.2"] {
        let admitted = replies_for(&replies, &clients, client)
            .iter()
            .filter(|reply| reply.status == StatusCode::OK)
            .count();
        assert_eq!(admitted, N as usize, "{client}");
    }
    // No header: no key, rejected (the default), though the connection has an address.
    let reply = send(&client(), get_request(server.addr, "/", &[])).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(server.calls(), 2 * N as usize);
}

/// By default a request without a key is answered 400, reaches no handler, and carries no
/// rate-limit fields; a chosen status is used instead when set.
#[tokio::test]
async fn missing_key_is_rejected_by_default() {
    for (policy, status) in [
        (None, StatusCode::BAD_REQUEST),
        (
            Some(MissingKey::Reject(StatusCode::UNAUTHORIZED)),
            StatusCode::UNAUTHORIZED,
        ),
    ] {
        let limiter = Arc::new(LockFreeLimiter::<String>::new(limit(3)));
        let mut layer = RateLimitLayer::new(limiter, api_key());
        if let Some(policy) = policy {
            layer = layer.on_missing_key(policy);
        }
        let calls = Arc::new(AtomicUsize::new(0));
        let server = serve_axum(counted_router(&calls).layer(layer), calls).await;
        let client = client();
        let reply = send(&client, get_request(server.addr, "/", &[])).await;
        assert_eq!(reply.status, status);
        assert_eq!(reply.body, "request has no rate-limit key\n");
        assert!(reply.headers.get("ratelimit").is_none());
        assert!(reply.headers.get("ratelimit-policy").is_none());
        assert_eq!(server.calls(), 0);
        // A request with a key is served as usual.
        let reply = send(
            &client,
            get_request(server.addr, "/", &[("x-api-key", "k")]),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(server.calls(), 1);
    }
}

/// With `MissingKey::Allow` requests without a key are served unlimited and unannotated,
/// while keyed requests stay limited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_key_allow_passes_unlimited() {
    const N: u64 = 2;
    let limiter = Arc::new(LockFreeLimiter::<String>::new(limit(N)));
    let layer = RateLimitLayer::new(limiter, api_key()).on_missing_key(MissingKey::Allow);
    let calls = Arc::new(AtomicUsize::new(0));
    let server = serve_axum(counted_router(&calls).layer(layer), calls).await;
    let unkeyed = send_concurrently(
        (0..10)
            .map(|_| get_request(server.addr, "/", &[]))
            .collect(),
    )
    .await;
    for reply in &unkeyed {
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.headers.get("ratelimit").is_none());
    }
    let keyed = send_concurrently(
        (0..6)
            .map(|_| get_request(server.addr, "/", &[("x-api-key", "k")]))
            .collect(),
    )
    .await;
    check_batch(&keyed, "default", N, EXACT_MAX_T);
    assert_eq!(server.calls(), 10 + N as usize);
}

/// A key budget (`Options::max_keys`) full of other clients' keys: a new client is refused
/// with 429, told to come back after one window plus the lateness tolerance, and creates no
/// state; a client that has state is answered as before.
#[tokio::test]
async fn a_full_key_budget_answers_new_clients_429() {
    let options = slidelimit::Options::default().key_shards(1).max_keys(1);
    let limiter = Arc::new(LockFreeLimiter::<IpAddr>::with_options(
        slidelimit::ExactLog::new(limit(5)),
        options,
    ));
    let calls = Arc::new(AtomicUsize::new(0));
    let app = counted_router(&calls).layer(RateLimitLayer::new(
        Arc::clone(&limiter),
        PeerIp::x_forwarded_for(1),
    ));
    let server = serve_axum(app, calls).await;
    let ask = |address: &'static str| {
        let server = server.addr;
        async move {
            send(
                &client(),
                get_request(server, "/", &[("x-forwarded-for", address)]),
            )
            .await
        }
    };
    assert_eq!(ask("192.0.2.1").await.status, StatusCode::OK);
    let refused = ask("192.0.2.2").await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // One window (600 s) plus the lateness tolerance (one window).
    assert_eq!(wait, 2 * crate::support::WINDOW_SECS, "{refused:?}");
    assert_eq!(ask("192.0.2.1").await.status, StatusCode::OK, "has state");
    assert_eq!(slidelimit::RateLimiter::tracked_keys(&*limiter), 1);
    assert_eq!(server.calls(), 2);
}
