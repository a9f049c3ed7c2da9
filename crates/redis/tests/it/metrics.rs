//! Feature `metrics`: exact counts after known sequences of calls against real servers, read
//! from a `DebuggingRecorder` installed on the test's thread only (every call here is
//! synchronous, on that thread), so tests running in parallel never share a recorder.

use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use slidelimit::ManualClock;
use slidelimit_redis::metrics as names;
use slidelimit_redis::{Error, FailurePolicy, LeasedLimiter, Options, TimeSource};

use crate::{limit, manual, shared, Server, TIMEOUT};

/// One counter's reading: its name, its labels and its count.
type Reading = (String, Vec<(String, String)>, u64);

/// Every counter of one snapshot (taking it resets them).
fn counters(snapshotter: &Snapshotter) -> Vec<Reading> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| match value {
            DebugValue::Counter(count) => {
                let key = key.key();
                let labels = key
                    .labels()
                    .map(|label| (label.key().to_owned(), label.value().to_owned()))
                    .collect();
                Some((key.name().to_owned(), labels, count))
            }
            _ => None,
        })
        .collect()
}

/// The count of `name` with exactly `labels` in `read` (0 if never incremented).
fn count(read: &[Reading], name: &str, labels: &[(&str, &str)]) -> u64 {
    read.iter()
        .filter(|(n, l, _)| {
            n == name
                && l.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|(.., count)| count)
        .sum()
}

#[test]
fn round_trips_are_counted_as_the_limiter_counts_them() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let (limiter, _clock) = manual("metrics-trips", limit(3, 1_000), Options::new());
        let admitted = (0..5)
            .filter(|_| limiter.check_and_hit("k").unwrap().admitted)
            .count();
        assert_eq!(admitted, 3, "3 admitted, 2 refused");
        let read = counters(&snapshotter);
        // One EVALSHA per call, plus the script's load if this process had not loaded it.
        assert_eq!(count(&read, names::ROUND_TRIPS, &[]), limiter.round_trips());
        assert!((5..=6).contains(&limiter.round_trips()));
        assert_eq!(count(&read, names::ERRORS, &[("kind", "connection")]), 0);
    });
}

#[test]
fn errors_and_fallbacks_by_kind_and_policy() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let mut server = Server::start();
    let timeout = Duration::from_millis(300);
    let build = |prefix: &str, failure: FailurePolicy| {
        let options = Options::new()
            .prefix(prefix)
            .timeout(timeout)
            .failure(failure);
        slidelimit_redis::RedisLimiter::new(&server.url(), limit(10, 60_000_000), options).unwrap()
    };
    let closed = build("closed", FailurePolicy::FailClosed);
    let open = build("open", FailurePolicy::FailOpen);
    let local = build("local", FailurePolicy::Local { max_requests: 1 });
    server.kill();
    metrics::with_local_recorder(&recorder, || {
        assert!(!closed.decide("k", 1).unwrap().admitted);
        assert!(open.decide("k", 1).unwrap().admitted);
        assert!(local.decide("k", 1).unwrap().admitted);
        assert!(
            !local.decide("k", 1).unwrap().admitted,
            "the local share is 1"
        );
        assert!(matches!(
            closed.check_and_hit_n("k", 0),
            Err(Error::Weight(_))
        ));
    });
    let read = counters(&snapshotter);
    assert_eq!(count(&read, names::ERRORS, &[("kind", "connection")]), 4);
    assert_eq!(count(&read, names::ERRORS, &[("kind", "weight")]), 1);
    let fallback = |policy, outcome| {
        count(
            &read,
            names::FALLBACK_DECISIONS,
            &[("policy", policy), ("outcome", outcome)],
        )
    };
    assert_eq!(fallback("fail_closed", "refused"), 1);
    assert_eq!(fallback("fail_open", "admitted"), 1);
    assert_eq!(fallback("local", "admitted"), 1);
    assert_eq!(fallback("local", "refused"), 1);
}

#[test]
fn leases_taken_renewed_and_decisions_from_the_lease_in_hand() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = Arc::new(ManualClock::new(1_000));
    let options = Options::new()
        .prefix("metrics-lease")
        .timeout(TIMEOUT)
        .expiry_slack(TIMEOUT * 2)
        .time(TimeSource::Caller(clock.clone()));
    metrics::with_local_recorder(&recorder, || {
        // 5 per window, leases of 2: take 2 (first), 1 from the lease; take 2 (renewal), 1
        // from it; take the last 1 (renewal); then refused by Redis, then by the refusal it
        // remembers.
        let limiter =
            LeasedLimiter::new(&shared().url(), limit(5, 1_000_000), options, 2, 100_000).unwrap();
        let remote: Vec<(bool, bool)> = (0..7)
            .map(|i| {
                clock.set(1_000 + i);
                let decision = limiter.check_and_hit("k").unwrap();
                (decision.admitted, decision.remote)
            })
            .collect();
        assert_eq!(
            remote,
            [
                (true, true),
                (true, false),
                (true, true),
                (true, false),
                (true, true),
                (false, true),
                (false, false)
            ]
        );
        let read = counters(&snapshotter);
        assert_eq!(count(&read, names::LEASES, &[("kind", "first")]), 1);
        assert_eq!(count(&read, names::LEASES, &[("kind", "renewal")]), 2);
        let local = |outcome| count(&read, names::LEASE_DECISIONS, &[("outcome", outcome)]);
        assert_eq!((local("admitted"), local("refused")), (2, 1));
        assert_eq!(count(&read, names::ROUND_TRIPS, &[]), limiter.round_trips());
    });
}
