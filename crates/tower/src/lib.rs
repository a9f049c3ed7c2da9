//! HTTP rate limiting as a [`tower`](https://docs.rs/tower) layer: each request is counted
//! against a key taken from it (peer IP, a header, the path, any closure) in a shared
//! slidelimit limiter, and refused with `429 Too Many Requests`, `Retry-After` and the IETF
//! `RateLimit` / `RateLimit-Policy` fields when the key's sliding window is full.
//!
//! An axum server limited per client IP. The doc tests compile it but do not run it, since it
//! serves until stopped; [What clients see](#what-clients-see) has an example that runs, request
//! by request, without a server.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use axum::{routing::get, Router};
//! use slidelimit::{Limit, LockFreeLimiter};
//! use slidelimit_tower::{PeerIp, RateLimitLayer};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // 100 requests per minute per client IP, in the nanosecond ticks of the default clock.
//! let limit = Limit::per_minute(100, Duration::from_nanos(1))?;
//! let limiter = Arc::new(LockFreeLimiter::new(limit));
//! let app = Router::new()
//!     .route("/", get(|| async { "hello" }))
//!     .layer(RateLimitLayer::new(limiter, PeerIp::new()));
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! // The peer address PeerIp reads (with this crate's `axum` feature; without it,
//! // `Router::layer` above panics at start-up, naming the feature).
//! let app = app.into_make_service_with_connect_info::<SocketAddr>();
//! axum::serve(listener, app).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # What clients see
//!
//! Admitted responses carry the key's state after its request was counted; a refusal does not
//! reach the service. With a limit of 2 per 60 s keyed by `X-Api-Key` (times in seconds
//! since the client's first request):
//!
//! ```text
//! t=0   GET /  X-Api-Key: k1   ->  200  RateLimit-Policy: "default";q=2;w=60
//!                                       RateLimit: "default";r=1
//! t=20  GET /  X-Api-Key: k1   ->  200  RateLimit-Policy: "default";q=2;w=60
//!                                       RateLimit: "default";r=0;t=40
//! t=30  GET /  X-Api-Key: k1   ->  429  RateLimit-Policy: "default";q=2;w=60
//!                                       RateLimit: "default";r=0;t=30
//!                                       Retry-After: 30
//! t=60  GET /  X-Api-Key: k1   ->  200  (the hit at t=0 has left the window)
//! ```
//!
//! The same exchange, run (a [`ManualClock`](slidelimit::ManualClock) in seconds stands in
//! for time):
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use http::{Request, Response, StatusCode};
//! use slidelimit::{Limit, ManualClock};
//! use slidelimit_mutex::MutexLimiter;
//! use slidelimit_tower::{Header, RateLimitLayer};
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let limiter = Arc::new(MutexLimiter::<String>::new(Limit::new(2, 60)?));
//! let clock = Arc::new(ManualClock::new(0));
//! let layer = RateLimitLayer::new(limiter, Header::new("x-api-key".parse()?))
//!     .with_clock(Arc::clone(&clock), Duration::from_secs(1))?;
//! let service = ServiceBuilder::new()
//!     .layer(layer)
//!     .service(service_fn(|_req: Request<String>| async {
//!         Ok::<_, std::convert::Infallible>(Response::new(String::from("hello")))
//!     }));
//! let get = || Request::get("/").header("x-api-key", "k1").body(String::new());
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//!
//! let mut answers = Vec::new();
//! for at in [0, 20, 30, 60] {
//!     clock.set(at);
//!     answers.push(runtime.block_on(service.clone().oneshot(get()?))?);
//! }
//! let field = |i: usize, name: &str| answers[i].headers()[name].to_str().unwrap().to_owned();
//! assert_eq!(answers[0].status(), StatusCode::OK);
//! assert_eq!(field(0, "ratelimit-policy"), r#""default";q=2;w=60"#);
//! assert_eq!(field(0, "ratelimit"), r#""default";r=1"#);
//! assert_eq!(field(1, "ratelimit"), r#""default";r=0;t=40"#);
//! assert_eq!(answers[2].status(), StatusCode::TOO_MANY_REQUESTS);
//! assert_eq!(field(2, "ratelimit"), r#""default";r=0;t=30"#);
//! assert_eq!(field(2, "retry-after"), "30");
//! assert_eq!(answers[3].status(), StatusCode::OK);
//! # Ok(())
//! # }
//! ```
//!
//! # Headers
//!
//! The fields follow draft-ietf-httpapi-ratelimit-headers in its structured-field form (RFC
//! 9651), as in draft 10 and the working group's text since (the draft may still change):
//! - `RateLimit-Policy: "<name>";q=<max_requests>;w=<window in seconds>`, on refusals and,
//!   unless [`RateLimitLayer::informational_headers`] turns them off, on admitted responses;
//! - `RateLimit: "<name>";r=<remaining>;t=<seconds>` beside it: `r` is what the key has left
//!   after this request; `t`, the wait until one more request would be admitted, is sent when
//!   nothing is left (`r=0`) and on every refusal. With quota left, a sliding window frees its
//!   next unit when its oldest hit leaves, which the limiter's `status` does not report, and the
//!   draft makes `t` optional: it is left out rather than guessed;
//! - `Retry-After: <seconds>` on 429s, equal to `t`.
//!
//! `t` is the limiter's own wait (`Status::retry_after_ticks`): at most the window for the
//! exact log; with the rolling buckets a hit counts until its whole bucket has left the window,
//! so `t` can exceed `w` by up to two buckets.
//!
//! Every duration is whole seconds rounded **up** (a window of 1.5 s is `w=2`, a wait of 1 ns is
//! `t=1`), and a refusal's wait is at least 1 s, so a client that waits what it is told is never
//! early. The name is `"default"` unless set with [`RateLimitLayer::policy_name`]; fields are
//! appended, so stacked layers with different names report side by side. Integers above the
//! 15 digits structured fields allow are sent as 999999999999999.
//!
//! # Keys
//!
//! [`KeyExtractor`] takes a key from the request; ready-made ones are [`PeerIp`] (the
//! connection's address, or the client named in `X-Forwarded-For` / `Forwarded` by your
//! [`TrustedProxies`]: read its spoofing notes), [`Header`], [`Path`] and [`from_fn`] for any
//! closure. The key type is the
//! limiter's: `LockFreeLimiter<IpAddr>` for `PeerIp`, `LockFreeLimiter<String>` for `Header`
//! and `Path`. A request without a key is rejected with 400 by default ([`MissingKey`]).
//!
//! [`PeerIp::new`] reads axum's `ConnectInfo` only with this crate's `axum` feature. Without
//! it, applying the layer with `PeerIp::new()` to an axum service panics at start-up, naming
//! the feature, instead of answering every request with 400; [`PeerIp::from_peer_addr`] is
//! for code that inserts [`PeerAddr`] itself.
//!
//! # Ticks
//!
//! The layer's clock counts 1 ns ticks (a [`MonotonicClock`](slidelimit::MonotonicClock))
//! unless [`RateLimitLayer::with_clock`] gives another clock and tick, and an in-process
//! limiter's `Limit` must be in those ticks. A `Limit` built from durations carries its tick
//! (`slidelimit::Limit::tick`), so applying the layer checks it: a limit in milliseconds under
//! the default clock panics at start-up with the fix, instead of windows a million times too
//! short. A `Limit::new` of raw ticks is taken to be in the layer's unit. The Redis limiters
//! count in their own microseconds and convert a duration-built limit themselves, so the
//! nanosecond limit of the example above means the same minute behind them.
//!
//! Every limiter of the workspace works (lock-free, mutex, per-key-lock, rwlock, with the exact
//! log or rolling buckets), as does an `Arc<dyn RateLimiter<K>>`: the layer asks any
//! [`slidelimit::Decide`]. So do the Redis limiters of `slidelimit-redis` (feature `tokio`), for
//! one limit across a fleet of servers: `AsyncRedisLimiter` answers after its round trip,
//! `LeasedLimiter` mostly from its lease; both remember their refusals, so a key refused with
//! a retry-after is refused here until it ends, without a round trip
//! (`slidelimit::decide::CachedRefusals` does the same for any other remote limiter). A
//! decision that waits never blocks a runtime thread; while it
//! waits, the request holds the service made ready for it, so the inner service must be
//! `Clone`.
//!
//! # Remote limiters
//!
//! The fields and `Retry-After` come from the remote limiter's answer, in its own ticks. When it
//! cannot decide (its server is slow, down or restarting) its failure policy answers, within its
//! timeout: fail open passes the request on without fields; fail closed answers
//! `503 Service Unavailable` with `Retry-After` (1 s for Redis); a local share decides and reports
//! its own policy.
//!
//! # Plain hyper
//!
//! hyper 1 serves a tower service through hyper-util's `TowerToHyperService`; record each
//! connection's peer as a [`PeerAddr`] for [`PeerIp`]:
//!
//! ```no_run
//! use std::convert::Infallible;
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use http::{Request, Response};
//! use hyper::body::Incoming;
//! use hyper::server::conn::http1;
//! use hyper_util::rt::TokioIo;
//! use hyper_util::service::TowerToHyperService;
//! use slidelimit::{Limit, LockFreeLimiter};
//! use slidelimit_tower::{PeerAddr, PeerIp, RateLimitLayer};
//! use tower::ServiceBuilder;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let limiter = Arc::new(LockFreeLimiter::new(Limit::per_second(10, Duration::from_nanos(1))?));
//! let layer = RateLimitLayer::new(limiter, PeerIp::new());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! loop {
//!     let (stream, peer) = listener.accept().await?;
//!     let service = ServiceBuilder::new()
//!         .map_request(move |mut request: Request<Incoming>| {
//!             request.extensions_mut().insert(PeerAddr(peer));
//!             request
//!         })
//!         .layer(layer.clone())
//!         .service_fn(|_request| async { Ok::<_, Infallible>(Response::new(String::from("hi"))) });
//!     tokio::spawn(
//!         http1::Builder::new().serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)),
//!     );
//! }
//! # }
//! ```
//!
//! # Guarantees
//! - The limiter's: never more than `max_requests` admitted requests per key in any window,
//!   whatever the concurrency; the layer asks the limiter once per request with a key (an
//!   in-process limiter's `check_and_hit`); a remote limiter's refusal cache only refuses.
//! - A refused request never reaches the inner service; an admitted one always does.
//! - `Retry-After` and `t` are never below the limiter's own wait, rounded up to seconds.
//!
//! # Implementation
//! [`key`] holds the extractors, `headers` the field formatting (pure functions, unit-tested),
//! `layer` the configuration and `service` the middleware and its future; `body` is the response
//! body, the inner one or the layer's own short text.

mod body;
mod headers;
pub mod key;
mod layer;
pub mod metrics;
mod service;

pub use body::ResponseBody;
pub use headers::{PolicyName, PolicyNameError, RATELIMIT, RATELIMIT_POLICY};
pub use key::{
    from_fn, FromFn, Header, KeyExtractor, Path, PeerAddr, PeerIp, ProxyListError, TrustedProxies,
};
pub use layer::{MissingKey, RateLimitLayer};
pub use service::{RateLimit, ResponseFuture};

/// The user guide (`docs/`), compiled and run as doc tests.
#[cfg(doctest)]
mod guide;

/// The crate's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
