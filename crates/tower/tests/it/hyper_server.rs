//! Plain hyper 1: the layer in a `tower::ServiceBuilder` stack served through hyper-util's
//! `TowerToHyperService`, with the peer recorded as a `PeerAddr`.

use std::net::IpAddr;
use std::sync::Arc;

use http::StatusCode;
use slidelimit::{LockFreeLimiter, RateLimiter};
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_tower::{PeerIp, RateLimitLayer};

use crate::support::{
    check_batch, get_request, limit, send_concurrently, serve_hyper, EXACT_MAX_T,
};

/// 15 of 50 simultaneous requests are admitted over plain hyper connections; the refused ones
/// never reach the handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plain_hyper_admits_exactly_n_of_m() {
    const N: u64 = 15;
    const M: usize = 50;
    let limiter = Arc::new(PerKeyLockLimiter::<IpAddr>::new(limit(N)));
    let server = serve_hyper(RateLimitLayer::new(limiter, PeerIp::new())).await;
    let replies =
        send_concurrently((0..M).map(|_| get_request(server.addr, "/", &[])).collect()).await;
    check_batch(&replies, "default", N, EXACT_MAX_T);
    assert!(replies
        .iter()
        .filter(|reply| reply.status == StatusCode::OK)
        .all(|reply| reply.body == "hyper"));
    assert_eq!(server.calls(), N as usize);
}

/// The limiter can be chosen at run time: an `Arc<dyn RateLimiter<IpAddr>>` works as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_hyper_with_a_dyn_limiter() {
    const N: u64 = 4;
    let limiter: Arc<dyn RateLimiter<IpAddr>> = Arc::new(LockFreeLimiter::<IpAddr>::new(limit(N)));
    let server = serve_hyper(RateLimitLayer::new(limiter, PeerIp::new())).await;
    let replies = send_concurrently(
        (0..10)
            .map(|_| get_request(server.addr, "/", &[]))
            .collect(),
    )
    .await;
    check_batch(&replies, "default", N, EXACT_MAX_T);
    assert_eq!(server.calls(), N as usize);
}
