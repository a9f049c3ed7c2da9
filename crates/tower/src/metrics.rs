//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`, off by
//! default): every response the layer returns, by HTTP status and by what decided it.
//!
//! | name | type | unit | labels | meaning |
//! |---|---|---|---|---|
//! | `slidelimit_http_responses_total` | counter | responses | `status` (e.g. `200`, `429`, `503`), `decision` = `admitted` / `refused` / `fail_open` / `fail_closed` / `missing_key` | responses the layer returned: the inner service's (`admitted`, `fail_open`, and `missing_key` under `MissingKey::Allow`) when its future completes, and the layer's own 429, 503 and missing-key rejections |
//!
//! `decision`: `admitted` and `refused` are the limiter's answers; `fail_open` and
//! `fail_closed` are the failure policy's while a remote limiter could not decide (a
//! `slidelimit-redis` limiter's [`FailurePolicy`](https://docs.rs/slidelimit-redis): fail
//! open passes the request on, fail closed answers 503); `missing_key` is a request the key
//! extractor found no key in. A local failure-policy limiter's answers count as `admitted` /
//! `refused`, as the limiter decided them. An inner service's error is no response and is not
//! counted.
//!
//! The status is known only per response, so each response looks its counter up in the
//! installed recorder (the facade's `counter!`), rather than through a handle registered
//! in advance. Call [`describe`] once, after installing the recorder.

use http::StatusCode;

/// Counter: responses, by `status` and `decision`.
pub const RESPONSES: &str = "slidelimit_http_responses_total";

/// Without the feature `metrics` nothing is recorded, so there is nothing to describe: this
/// does nothing (it exists so that callers need no `cfg` of their own).
#[cfg(not(feature = "metrics"))]
pub fn describe() {}

/// Gives the installed recorder the metric's unit and description.
#[cfg(feature = "metrics")]
pub fn describe() {
    metrics::describe_counter!(
        RESPONSES,
        metrics::Unit::Count,
        "responses of the rate-limit layer, by HTTP status and decision"
    );
}

/// What let a request through to the inner service, counted with the status of the
/// response it gives. Zero-sized without the feature.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Passed {
    #[cfg(feature = "metrics")]
    decision: &'static str,
}

impl Passed {
    /// The limiter admitted it.
    pub(crate) const ADMITTED: Self = Self::new("admitted");
    /// The failure policy let it through.
    pub(crate) const FAIL_OPEN: Self = Self::new("fail_open");
    /// It had no key and `MissingKey::Allow` let it through.
    pub(crate) const MISSING_KEY: Self = Self::new("missing_key");

    #[allow(unused_variables)] // `decision` is kept only with the feature.
    const fn new(decision: &'static str) -> Self {
        Self {
            #[cfg(feature = "metrics")]
            decision,
        }
    }

    /// The inner service answered with `status`.
    #[inline]
    pub(crate) fn responded(self, status: StatusCode) {
        #[cfg(feature = "metrics")]
        answered(status, self.decision);
        #[cfg(not(feature = "metrics"))]
        let _ = status;
    }
}

/// The layer answered with `status` itself; `decision` is the label value.
#[inline]
pub(crate) fn answered(status: StatusCode, decision: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(
        RESPONSES,
        "status" => status.as_str().to_owned(),
        "decision" => decision
    )
    .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (status, decision);
}
