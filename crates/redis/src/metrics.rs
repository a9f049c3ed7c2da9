//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`, off by
//! default): the Redis traffic, its failures and what answered instead.
//!
//! | name | type | unit | labels | meaning |
//! |---|---|---|---|---|
//! | `slidelimit_redis_round_trips_total` | counter | commands | none | commands sent to Redis (each script call, and each `SCRIPT LOAD`), by every limiter of the crate |
//! | `slidelimit_redis_errors_total` | counter | errors | `kind` = `timeout` / `connection` / `server` / `reply` / `weight` / `config` / `limit` / `tick_out_of_range` | calls that gave no decision, by [`Error`] variant |
//! | `slidelimit_redis_fallback_decisions_total` | counter | decisions | `policy` = `fail_open` / `fail_closed` / `local`, `outcome` = `admitted` / `refused` | answers the [`FailurePolicy`](crate::FailurePolicy) gave because Redis did not |
//! | `slidelimit_redis_leases_total` | counter | leases | `kind` = `first` / `renewal` | leases the [`LeasedLimiter`](crate::LeasedLimiter) took with permits in them; a renewal replaces a lease the key held (spent or expired) |
//! | `slidelimit_redis_lease_decisions_total` | counter | decisions | `outcome` = `admitted` / `refused` | decisions the leased limiter answered without a round trip: from the lease in hand, or from the refusal it remembers |
//!
//! Every call here costs a round trip or stands in for one (tens of microseconds at least),
//! so these use the facade's macros, which look the metric up in the installed recorder at
//! each event, rather than handles; a recorder installed at any time sees what follows. Call
//! [`describe`] once, after installing the recorder, for the units and descriptions.

use crate::Error;

/// Counter: commands sent to Redis.
pub const ROUND_TRIPS: &str = "slidelimit_redis_round_trips_total";
/// Counter: calls that gave no decision, by `kind`.
pub const ERRORS: &str = "slidelimit_redis_errors_total";
/// Counter: the failure policy's answers, by `policy` and `outcome`.
pub const FALLBACK_DECISIONS: &str = "slidelimit_redis_fallback_decisions_total";
/// Counter: leases taken with permits, by `kind` (`first`, `renewal`).
pub const LEASES: &str = "slidelimit_redis_leases_total";
/// Counter: leased decisions made without a round trip, by `outcome`.
pub const LEASE_DECISIONS: &str = "slidelimit_redis_lease_decisions_total";

/// Without the feature `metrics` nothing is recorded, so there is nothing to describe: this
/// does nothing (it exists so that callers need no `cfg` of their own).
#[cfg(not(feature = "metrics"))]
pub fn describe() {}

/// Gives the installed recorder each metric's unit and description. Call it once, after
/// installing the recorder.
#[cfg(feature = "metrics")]
pub fn describe() {
    use metrics::{describe_counter, Unit};
    describe_counter!(ROUND_TRIPS, Unit::Count, "commands sent to Redis");
    describe_counter!(
        ERRORS,
        Unit::Count,
        "Redis calls that gave no decision, by kind"
    );
    describe_counter!(
        FALLBACK_DECISIONS,
        Unit::Count,
        "answers of the failure policy while Redis could not decide, by policy and outcome"
    );
    describe_counter!(LEASES, Unit::Count, "leases taken with permits, by kind");
    describe_counter!(
        LEASE_DECISIONS,
        Unit::Count,
        "leased decisions answered without a round trip, by outcome"
    );
}

/// A command is about to be sent.
#[inline]
pub(crate) fn round_trip() {
    #[cfg(feature = "metrics")]
    metrics::counter!(ROUND_TRIPS).increment(1);
}

/// A call gave `result`; counts its error, if any.
#[inline]
pub(crate) fn result<T>(result: &Result<T, Error>) {
    #[cfg(feature = "metrics")]
    if let Err(err) = result {
        metrics::counter!(ERRORS, "kind" => error_kind(err)).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = result;
}

#[cfg(feature = "metrics")]
fn error_kind(err: &Error) -> &'static str {
    match err {
        Error::Timeout { .. } => "timeout",
        Error::Connection(_) => "connection",
        Error::Server(_) => "server",
        Error::Reply(_) => "reply",
        Error::Weight(_) => "weight",
        Error::Config(_) => "config",
        Error::Limit(_) => "limit",
        Error::TickOutOfRange { .. } => "tick_out_of_range",
    }
}

/// The failure policy answered `admitted` for a request; `policy` is its label value.
#[inline]
pub(crate) fn fallback(policy: &'static str, admitted: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(FALLBACK_DECISIONS, "policy" => policy, "outcome" => outcome(admitted))
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (policy, admitted);
}

/// The leased limiter took a lease with permits; `renewal`: it replaces one the key held.
#[inline]
pub(crate) fn lease_taken(renewal: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(LEASES, "kind" => if renewal { "renewal" } else { "first" }).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = renewal;
}

/// The leased limiter answered `admitted` without a round trip.
#[inline]
pub(crate) fn lease_decision(admitted: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(LEASE_DECISIONS, "outcome" => outcome(admitted)).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = admitted;
}

#[cfg(feature = "metrics")]
const fn outcome(admitted: bool) -> &'static str {
    if admitted {
        "admitted"
    } else {
        "refused"
    }
}
