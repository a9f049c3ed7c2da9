//! What the layer adds to a request over an in-process limiter: one call through the
//! middleware to a service that answers at once, polled to completion without a runtime (a
//! no-op waker: every future here is ready on its first poll). Admitted requests spread
//! over 10,000 keys, and refusals of one saturated key.
//!
//! ```text
//! cargo bench -p slidelimit-tower --bench layer
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::Criterion;
use http::{HeaderValue, Request, Response};
use slidelimit::{Limit, LockFreeLimiter, ManualClock};
use slidelimit_tower::{Header, RateLimitLayer};
use tower::{service_fn, Layer, Service};

const KEYS: usize = 10_000;

fn request(key: &HeaderValue) -> Request<()> {
    let mut request = Request::new(());
    request.headers_mut().insert("x-api-key", key.clone());
    request
}

/// One request through `service`, polled once (it is ready at once).
fn call<S>(service: &mut S, request: Request<()>) -> u16
where
    S: Service<Request<()>, Response = Response<slidelimit_tower::ResponseBody<()>>>,
    S::Error: std::fmt::Debug,
{
    let mut future = std::pin::pin!(service.call(request));
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(response) => response.expect("infallible").status().as_u16(),
        Poll::Pending => unreachable!("every future here is ready at once"),
    }
}

fn layer(c: &mut Criterion) {
    let keys: Vec<HeaderValue> = (0..KEYS)
        .map(|i| HeaderValue::from_str(&format!("key-{i}")).expect("ascii"))
        .collect();
    let clock = Arc::new(ManualClock::new(1));
    // One request per tick: the admitting run moves the clock a tick per call.
    let service = || {
        let limiter = Arc::new(LockFreeLimiter::<String>::new(
            Limit::new(1, 1).expect("limit"),
        ));
        RateLimitLayer::new(limiter, Header::new("x-api-key".parse().expect("name")))
            .with_clock(Arc::clone(&clock), Duration::from_nanos(1))
            .expect("tick")
            .layer(service_fn(|_request: Request<()>| async {
                Ok::<_, Infallible>(Response::new(()))
            }))
    };

    let mut admitting = service();
    let mut next = 0;
    c.bench_function("layer/admitted, 10k keys", |b| {
        b.iter(|| {
            next = (next + 1) % KEYS;
            clock.advance(1);
            black_box(call(&mut admitting, request(&keys[next])))
        });
    });

    let mut refusing = service();
    assert_eq!(call(&mut refusing, request(&keys[0])), 200);
    c.bench_function("layer/refused, one key", |b| {
        b.iter(|| black_box(call(&mut refusing, request(&keys[0]))));
    });
}

// Not `criterion_group!`: the function it generates has no docs, which the workspace's lints
// refuse.
fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    layer(&mut criterion);
    criterion.final_summary();
}
