//! The harness: servers on loopback ports (axum and plain hyper), a real HTTP client sending
//! requests from many tasks at once, every limiter variant, and a parser for the fields.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use slidelimit::{Limit, LockFreeLimiter, RateLimiter, RollingBuckets};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;
use slidelimit_tower::{PeerAddr, PeerIp, RateLimitLayer};
use tokio::net::TcpListener;
use tokio::sync::Barrier;
use tokio::task::JoinHandle;
use tower::ServiceBuilder;

/// Ten minutes, in the layer's default nanosecond ticks: every test's requests fall in one
/// window, however slow the machine.
pub const WINDOW_SECS: u64 = 600;

/// `max_requests` per [`WINDOW_SECS`], in nanosecond ticks.
pub fn limit(max_requests: u64) -> Limit {
    Limit::per(
        max_requests,
        Duration::from_secs(WINDOW_SECS),
        Duration::from_nanos(1),
    )
    .expect("a valid limit")
}

/// The rolling buckets' count: 60 buckets of 10 s, so a test's hits land in one or two.
const BUCKETS: u64 = 60;

/// The longest wait the exact log can ask for: one window.
pub const EXACT_MAX_T: u64 = WINDOW_SECS;

/// The longest wait the rolling buckets can ask for: a hit counts until its bucket, one
/// bucket of lateness included, has left the window (`refusal_reach_ticks`: the window plus
/// two buckets).
pub const BUCKETS_MAX_T: u64 = WINDOW_SECS + 2 * (WINDOW_SECS / BUCKETS);

/// The longest wait `algorithm` can ask for.
pub fn max_t(algorithm: &str) -> u64 {
    match algorithm {
        "exact" => EXACT_MAX_T,
        "buckets" => BUCKETS_MAX_T,
        other => panic!("unknown window algorithm {other}"),
    }
}

/// One limiter of every variant and both windows, with its window algorithm's name.
pub fn all_limiters<K>(limit: Limit) -> Vec<(String, &'static str, Arc<dyn RateLimiter<K>>)>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    let limiters: Vec<Arc<dyn RateLimiter<K>>> = vec![
        Arc::new(LockFreeLimiter::<K>::new(limit)),
        Arc::new(MutexLimiter::<K>::new(limit)),
        Arc::new(PerKeyLockLimiter::<K>::new(limit)),
        Arc::new(RwLockLimiter::<K>::new(limit)),
        Arc::new(LockFreeLimiter::<K, RollingBuckets>::bucketed(limit, BUCKETS).unwrap()),
        Arc::new(MutexLimiter::<K, RollingBuckets>::bucketed(limit, BUCKETS).unwrap()),
        Arc::new(PerKeyLockLimiter::<K, RollingBuckets>::bucketed(limit, BUCKETS).unwrap()),
        Arc::new(RwLockLimiter::<K, RollingBuckets>::bucketed(limit, BUCKETS).unwrap()),
    ];
    limiters
        .into_iter()
        .map(|limiter| {
            let name = format!("{}/{}", limiter.name(), limiter.algorithm());
            (name, limiter.algorithm(), limiter)
        })
        .collect()
}

/// A running server; aborted when dropped.
pub struct Server {
    pub addr: SocketAddr,
    /// How many requests reached the handlers.
    pub calls: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Server {
    pub fn calls(&self) -> usize {
        // Pairs with the handlers' fetch_add, read after their responses arrived; SeqCst on
        // a test counter, so the count needs no argument about what else orders it.
        self.calls.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Routes `/` and `/other`, each counting its calls in `calls`.
pub fn counted_router(calls: &Arc<AtomicUsize>) -> Router {
    let (a, b) = (Arc::clone(calls), Arc::clone(calls));
    Router::new()
        .route(
            "/",
            get(move || async move {
                // Pairs with `Server::calls`' load (SeqCst: a test counter, cost irrelevant).
                a.fetch_add(1, Ordering::SeqCst);
                "root"
            }),
        )
        .route(
            "/other",
            get(move || async move {
                // Pairs with `Server::calls`' load (SeqCst: a test counter, cost irrelevant).
                b.fetch_add(1, Ordering::SeqCst);
                "other"
            }),
        )
}

/// Serves `app` (built around `calls`) with axum on 127.0.0.1 on a free port, with the peer
/// address recorded as axum's `ConnectInfo`.
pub async fn serve_axum(app: Router, calls: Arc<AtomicUsize>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    Server { addr, calls, task }
}

/// Serves `layer` over a counting handler with plain hyper (http1 connections, a tower stack
/// through `TowerToHyperService`), recording each connection's peer as a [`PeerAddr`].
pub async fn serve_hyper<L>(layer: RateLimitLayer<L, PeerIp>) -> Server
where
    L: slidelimit::Decide<IpAddr> + ?Sized,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let handler_calls = Arc::clone(&calls);
    let task = tokio::spawn(async move {
        loop {
            let (stream, peer) = listener.accept().await.unwrap();
            let calls = Arc::clone(&handler_calls);
            let service = ServiceBuilder::new()
                .map_request(move |mut request: Request<Incoming>| {
                    request.extensions_mut().insert(PeerAddr(peer));
                    request
                })
                .layer(layer.clone())
                .service_fn(move |_request: Request<Incoming>| {
                    // Pairs with `Server::calls`' load (SeqCst: a test counter).
                    calls.fetch_add(1, Ordering::SeqCst);
                    async { Ok::<_, Infallible>(Response::new(String::from("hyper"))) }
                });
            tokio::spawn(async move {
                // A client closing its connection is not the test's concern.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                    .await;
            });
        }
    });
    Server { addr, calls, task }
}

/// A response as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

/// An HTTP/1 client over real TCP connections.
pub fn client() -> Client<HttpConnector, Empty<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// `GET http://{addr}{path}` with `headers`.
pub fn get_request(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Request<Empty<Bytes>> {
    let mut builder = Request::get(format!("http://{addr}{path}"));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Empty::new()).unwrap()
}

/// Sends `request` and reads the whole response.
pub async fn send(
    client: &Client<HttpConnector, Empty<Bytes>>,
    request: Request<Empty<Bytes>>,
) -> Reply {
    let response = client.request(request).await.expect("the server answers");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("a whole body").to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: String::from_utf8(body.to_vec()).expect("a text body"),
    }
}

/// Sends every request at once: one task each, released together by a barrier.
pub async fn send_concurrently(requests: Vec<Request<Empty<Bytes>>>) -> Vec<Reply> {
    let client = client();
    let barrier = Arc::new(Barrier::new(requests.len()));
    let tasks: Vec<_> = requests
        .into_iter()
        .map(|request| {
            let (client, barrier) = (client.clone(), Arc::clone(&barrier));
            tokio::spawn(async move {
                barrier.wait().await;
                send(&client, request).await
            })
        })
        .collect();
    let mut replies = Vec::with_capacity(tasks.len());
    for task in tasks {
        replies.push(task.await.expect("a request task"));
    }
    replies
}

/// One structured-field Item with Integer parameters: `"name";key=1;key=2`, parsed strictly
/// (RFC 9651: a quoted String with `\"` and `\\` escapes, then `;key=integer` parameters with
/// lowercase keys, integers of at most 15 digits).
pub fn parse_item(text: &str) -> Result<(String, BTreeMap<String, u64>), String> {
    let rest = text
        .strip_prefix('"')
        .ok_or_else(|| format!("{text:?}: no opening quote"))?;
    let mut name = String::new();
    let mut chars = rest.char_indices();
    let params_at = loop {
        match chars.next() {
            Some((_, '\\')) => match chars.next() {
                Some((_, c @ ('"' | '\\'))) => name.push(c),
                other => return Err(format!("{text:?}: bad escape {other:?}")),
            },
            Some((i, '"')) => break i + 1,
            Some((_, c)) if (' '..='~').contains(&c) => name.push(c),
            other => return Err(format!("{text:?}: bad string character {other:?}")),
        }
    };
    let mut params = BTreeMap::new();
    let params_text = &rest[params_at..];
    if !params_text.is_empty() {
        let params_text = params_text
            .strip_prefix(';')
            .ok_or_else(|| format!("{text:?}: junk after the string"))?;
        for param in params_text.split(';') {
            let (key, value) = param
                .split_once('=')
                .ok_or_else(|| format!("{text:?}: parameter {param:?} has no value"))?;
            let key_ok = key.starts_with(|c: char| c.is_ascii_lowercase())
                && key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.*".contains(c));
            let value_ok =
                !value.is_empty() && value.len() <= 15 && value.chars().all(|c| c.is_ascii_digit());
            if !key_ok || !value_ok {
                return Err(format!("{text:?}: bad parameter {param:?}"));
            }
            if params
                .insert(key.to_owned(), value.parse().unwrap())
                .is_some()
            {
                return Err(format!("{text:?}: repeated parameter {key}"));
            }
        }
    }
    Ok((name, params))
}

/// The fields of one reply from a layer with policy `name`, `max_requests` per
/// [`WINDOW_SECS`], checked as far as they do not depend on the reply's place among the
/// others: the policy line is exact; `r` is at most `max_requests - 1` when admitted, 0 when
/// refused; `t` is present exactly when `r` is 0 or the request was refused, and then in
/// `1..=max_t`; a refusal's `Retry-After` equals `t`.
#[derive(Debug)]
pub struct Fields {
    pub r: u64,
    pub t: Option<u64>,
}

pub fn check_fields(reply: &Reply, name: &str, max_requests: u64, max_t: u64) -> Fields {
    let one = |field: &str| {
        let lines: Vec<_> = reply.headers.get_all(field).iter().collect();
        assert_eq!(lines.len(), 1, "one {field} line in {reply:?}");
        lines[0].to_str().unwrap().to_owned()
    };
    let (policy_name, policy) = parse_item(&one("ratelimit-policy")).unwrap();
    assert_eq!(policy_name, name);
    assert_eq!(
        policy,
        BTreeMap::from([
            ("q".to_owned(), max_requests),
            ("w".to_owned(), WINDOW_SECS)
        ]),
        "{reply:?}"
    );
    let (limit_name, params) = parse_item(&one("ratelimit")).unwrap();
    assert_eq!(limit_name, name);
    assert!(
        params.keys().all(|key| key == "r" || key == "t"),
        "{reply:?}"
    );
    let r = *params.get("r").expect("r is required");
    let t = params.get("t").copied();
    let refused = reply.status == StatusCode::TOO_MANY_REQUESTS;
    if refused {
        assert_eq!(r, 0, "a refused key has nothing left: {reply:?}");
        let retry_after: u64 = reply.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(Some(retry_after), t, "Retry-After is t: {reply:?}");
        assert_eq!(reply.body, "too many requests\n");
    } else {
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        assert!(r < max_requests, "r counts this request: {reply:?}");
        assert!(reply.headers.get("retry-after").is_none(), "{reply:?}");
    }
    assert_eq!(
        t.is_some(),
        refused || r == 0,
        "t only when nothing is left: {reply:?}"
    );
    if let Some(t) = t {
        assert!((1..=max_t).contains(&t), "t = {t} above {max_t}: {reply:?}");
    }
    Fields { r, t }
}

/// Checks a batch of concurrent replies for one key: exactly `max_requests` admitted and
/// the rest refused, each reply's fields valid, and the admitted `r` values consistent with
/// some order of admission: the `k`-th admitted request saw at least `k` hits, so at most
/// `max_requests - v` replies have `r >= v` (sorted descending, the `k`-th `r` is at most
/// `max_requests - 1 - k`).
pub fn check_batch(replies: &[Reply], name: &str, max_requests: u64, max_t: u64) {
    // A request that read its clock before others' hits landed is a late caller: those hits
    // are newer than its `now`, so its wait runs from its own `now` and may pass the window by
    // the batch's spread (milliseconds here), one second once rounded up.
    let max_t = max_t + 1;
    let admitted: Vec<_> = replies
        .iter()
        .filter(|reply| reply.status == StatusCode::OK)
        .collect();
    let refused = replies
        .iter()
        .filter(|reply| reply.status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(admitted.len() as u64, max_requests, "admitted");
    assert_eq!(refused + admitted.len(), replies.len(), "only 200 and 429");
    let mut rs: Vec<u64> = admitted
        .iter()
        .map(|reply| check_fields(reply, name, max_requests, max_t).r)
        .collect();
    rs.sort_unstable_by(|a, b| b.cmp(a));
    for (k, r) in rs.iter().enumerate() {
        assert!(*r < max_requests - k as u64, "sorted r values {rs:?}");
    }
    // The last admission read its status after every hit of the batch.
    assert_eq!(rs.last(), Some(&0), "sorted r values {rs:?}");
    for reply in replies
        .iter()
        .filter(|reply| reply.status != StatusCode::OK)
    {
        check_fields(reply, name, max_requests, max_t);
    }
}
