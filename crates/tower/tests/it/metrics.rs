//! Feature `metrics`: the layer's responses by status and decision, after a known sequence
//! of requests driven as a tower service on this thread, read from a `DebuggingRecorder`
//! installed on this thread only.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use slidelimit::decide::NeverPending;
use slidelimit::{Answer, Decide, Decision, LockFreeLimiter};
use slidelimit_tower::metrics::RESPONSES;
use slidelimit_tower::{Header, MissingKey, RateLimitLayer};
use tower::{service_fn, Layer, ServiceExt};

use crate::support::limit;

/// A remote limiter that cannot decide: its failure policy answers `admitted` every time.
struct Down {
    admitted: bool,
}

/// Remote: no limit in the caller's ticks for the layer to check.
impl slidelimit::decide::LimitInTicks for Down {}

impl Decide<String> for Down {
    type Pending = NeverPending;

    fn decide(this: &Arc<Self>, _: &String, _: u64, _: bool) -> Decision<NeverPending> {
        Decision::Ready(Answer::Undecided {
            admitted: this.admitted,
            retry_after: Duration::from_secs(1),
        })
    }
}

/// The count of responses with `status` and `decision` in one snapshot of `snapshotter`.
fn responses(snapshotter: &Snapshotter) -> Vec<(String, String, u64)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let key = key.key();
            let label = |wanted: &str| {
                key.labels()
                    .find(|label| label.key() == wanted)
                    .map(|label| label.value().to_owned())
                    .unwrap_or_default()
            };
            match value {
                DebugValue::Counter(count) if key.name() == RESPONSES => {
                    Some((label("status"), label("decision"), count))
                }
                _ => None,
            }
        })
        .collect()
}

fn count(read: &[(String, String, u64)], status: &str, decision: &str) -> u64 {
    read.iter()
        .filter(|(s, d, _)| s == status && d == decision)
        .map(|(.., count)| count)
        .sum()
}

/// Sends `requests` (each with key `key`, or none) through `layer` over a service that
/// answers 200, or 500 for path `/fail`, on a current-thread runtime; gives the statuses.
fn drive<L>(layer: RateLimitLayer<L, Header>, requests: &[(Option<&str>, &str)]) -> Vec<StatusCode>
where
    L: Decide<String> + ?Sized,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let inner = service_fn(|request: Request<String>| async move {
        let status = if request.uri().path() == "/fail" {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        };
        let mut response = Response::new(String::new());
        *response.status_mut() = status;
        Ok::<_, std::convert::Infallible>(response)
    });
    let service = layer.layer(inner);
    requests
        .iter()
        .map(|(key, path)| {
            let mut request = Request::builder().uri(*path);
            if let Some(key) = key {
                request = request.header("x-key", *key);
            }
            let request = request.body(String::new()).unwrap();
            let response = runtime.block_on(service.clone().oneshot(request)).unwrap();
            response.status()
        })
        .collect()
}

#[test]
fn responses_by_status_and_decision() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        // 2 per window: two admitted (one of them answered 500 by the service), then two
        // refused; one request without a key, rejected with 400.
        let limiter = Arc::new(LockFreeLimiter::<String>::new(limit(2)));
        let layer = RateLimitLayer::new(limiter, Header::new("x-key".parse().unwrap()))
            .on_missing_key(MissingKey::Reject(StatusCode::BAD_REQUEST));
        let statuses = drive(
            layer,
            &[
                (Some("a"), "/"),
                (Some("a"), "/fail"),
                (Some("a"), "/"),
                (Some("a"), "/"),
                (None, "/"),
            ],
        );
        assert_eq!(statuses, [200, 500, 429, 429, 400]);
    });
    let read = responses(&snapshotter);
    assert_eq!(count(&read, "200", "admitted"), 1);
    assert_eq!(count(&read, "500", "admitted"), 1);
    assert_eq!(count(&read, "429", "refused"), 2);
    assert_eq!(count(&read, "400", "missing_key"), 1);
    assert_eq!(read.iter().map(|(.., count)| count).sum::<u64>(), 5);
}

#[test]
fn responses_of_the_failure_policy_and_of_a_missing_key_let_through() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let key = || Header::new("x-key".parse().unwrap());
        let open = RateLimitLayer::new(Arc::new(Down { admitted: true }), key())
            .on_missing_key(MissingKey::Allow);
        let statuses = drive(open, &[(Some("a"), "/"), (Some("a"), "/"), (None, "/")]);
        assert_eq!(statuses, [200, 200, 200]);
        let closed = RateLimitLayer::new(Arc::new(Down { admitted: false }), key());
        assert_eq!(drive(closed, &[(Some("a"), "/")]), [503]);
    });
    let read = responses(&snapshotter);
    assert_eq!(count(&read, "200", "fail_open"), 2);
    assert_eq!(count(&read, "200", "missing_key"), 1);
    assert_eq!(count(&read, "503", "fail_closed"), 1);
}
