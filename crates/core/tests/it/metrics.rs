//! Feature `metrics`: every variant's counters, gauges and histogram after a known sequence
//! of calls, read from a `DebuggingRecorder` installed on this thread only (so tests running
//! in parallel never share a recorder).

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::CompositeKey;
use slidelimit::{metrics as names, ExactLog, Options, RateLimiter};

use crate::variants::{limit, shared_variant, NAMES};

/// A recorder for one test, and a limiter of variant `variant` built while it was installed
/// on this thread (handles are registered at construction).
fn recorded(
    variant: &str,
    options: Options,
) -> (Snapshotter, std::sync::Arc<dyn RateLimiter<u64>>) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let limiter = metrics::with_local_recorder(&recorder, || {
        shared_variant::<u64>(variant, limit(3, 10), options)
    });
    (snapshotter, limiter)
}

/// One snapshot of the recorder. Taking it resets the recorder (counters to zero, gauges to
/// zero, histograms emptied), so a test reads each checkpoint from one snapshot and counters
/// count from the previous one.
struct Readings(Vec<(CompositeKey, DebugValue)>);

impl Readings {
    fn take(snapshotter: &Snapshotter) -> Self {
        Self(
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| (key, value))
                .collect(),
        )
    }

    /// The value of metric `name` labelled `limiter = limiter` (and `outcome`, if given).
    fn value(&self, name: &str, limiter: &str, outcome: Option<&str>) -> Option<&DebugValue> {
        self.0
            .iter()
            .find(|(key, _)| {
                let key = key.key();
                let label = |wanted: &str| {
                    key.labels()
                        .find(|label| label.key() == wanted)
                        .map(|label| label.value().to_owned())
                };
                key.name() == name
                    && label("limiter").as_deref() == Some(limiter)
                    && label("outcome").as_deref() == outcome
            })
            .map(|(_, value)| value)
    }

    fn counter(&self, name: &str, limiter: &str, outcome: Option<&str>) -> u64 {
        match self.value(name, limiter, outcome) {
            Some(DebugValue::Counter(count)) => *count,
            other => panic!("{name}: expected a counter, found {other:?}"),
        }
    }

    fn gauge(&self, name: &str, limiter: &str) -> f64 {
        match self.value(name, limiter, None) {
            Some(DebugValue::Gauge(level)) => level.into_inner(),
            other => panic!("{name}: expected a gauge, found {other:?}"),
        }
    }

    /// Keys created and removed since the last reading, and tracked now.
    fn keys(&self, limiter: &str) -> (u64, u64, f64) {
        (
            self.counter(names::KEYS_CREATED, limiter, None),
            self.counter(names::KEYS_REMOVED, limiter, None),
            self.gauge(names::KEYS_TRACKED, limiter),
        )
    }

    fn histogram_len(&self, name: &str, limiter: &str) -> usize {
        match self.value(name, limiter, None) {
            Some(DebugValue::Histogram(values)) => values.len(),
            other => panic!("{name}: expected a histogram, found {other:?}"),
        }
    }
}

#[test]
fn decisions_keys_sweeps_and_tombstones_in_every_variant() {
    // One shard: the observed clock then records every creation. With the default 512
    // shards it records a shard's first creation and one in eight after it, so whether the
    // nine creations at 200 below are all sampled depends on how the process's random hasher
    // spreads twelve keys.
    let options = Options::default().limiter_name("api").key_shards(1);
    for variant in NAMES {
        let (metrics, limiter) = recorded(variant, options);
        // 3 per 10 ticks: three admissions, then two refusals.
        for now in 1..=5 {
            let _ = limiter.check_and_hit(&1, now);
        }
        assert_eq!(limiter.check_and_hit_n(&2, 5, 1), Ok(true), "{variant}");
        // Not decisions: hit, allowed, status, and a weight the exact log refuses.
        limiter.hit(&3, 5);
        let _ = limiter.allowed(&3, 5);
        let _ = limiter.status(&3, 5);
        assert!(limiter.check_and_hit_n(&3, 5, 2).is_err(), "{variant}");
        let read = Readings::take(&metrics);
        assert_eq!(
            read.counter(names::DECISIONS, "api", Some("admitted")),
            4,
            "{variant}"
        );
        assert_eq!(
            read.counter(names::DECISIONS, "api", Some("refused")),
            2,
            "{variant}"
        );
        assert_eq!(
            read.keys("api"),
            (3, 0, 3.0),
            "{variant}: created, removed, tracked"
        );

        // A sweep far ahead of the observed time (the keys were created at 1 and 5): every
        // key is idle by 100 - 10, and each leaves a tombstone (its last hit + 10 is above
        // the floor, 0).
        assert_eq!(limiter.remove_idle(100), 3, "{variant}");
        let read = Readings::take(&metrics);
        assert_eq!(read.keys("api"), (0, 3, 0.0), "{variant}");
        assert_eq!(read.gauge(names::TOMBSTONES, "api"), 3.0, "{variant}");
        assert_eq!(
            read.histogram_len(names::SWEEP_SECONDS, "api"),
            1,
            "{variant}"
        );

        // Nine creations at 200 move the observed time there (three quarters of the twelve
        // samples); the next sweep raises the floor to 190, past every tombstone, and removes
        // nothing live.
        for key in 10..19 {
            assert!(limiter.check_and_hit(&key, 200), "{variant}");
        }
        assert_eq!(limiter.remove_idle(200), 0, "{variant}");
        let read = Readings::take(&metrics);
        assert_eq!(read.gauge(names::TOMBSTONES, "api"), 0.0, "{variant}");
        assert_eq!(read.keys("api"), (9, 0, 9.0), "{variant}");
        assert_eq!(
            read.counter(names::DECISIONS, "api", Some("admitted")),
            9,
            "{variant}"
        );
        assert_eq!(
            read.histogram_len(names::SWEEP_SECONDS, "api"),
            1,
            "{variant}"
        );
    }
}

#[test]
fn the_automatic_sweep_counts_its_removals() {
    for variant in NAMES {
        // The automatic sweep from the second key on, over one shard.
        let options = Options::default().sweep_floor_keys(1).key_shards(1);
        let (metrics, limiter) = recorded(variant, options);
        assert!(limiter.check_and_hit(&1, 0));
        // Key 1 is fresh from 10. Once the last eight creations are at 100, the floor is
        // 100 - 10, and the sweep step of the eighth removes key 1.
        for key in 2..=9 {
            assert!(limiter.check_and_hit(&key, 100));
        }
        assert_eq!(limiter.tracked_keys(), 8, "{variant}");
        let read = Readings::take(&metrics);
        assert_eq!(read.keys("default"), (9, 1, 8.0), "{variant}");
    }
}

#[test]
fn budget_refusals_are_counted() {
    for variant in NAMES {
        let options = Options::default().key_shards(1).max_keys(2);
        let (metrics, limiter) = recorded(variant, options);
        assert!(limiter.check_and_hit(&1, 0));
        assert!(limiter.check_and_hit(&2, 0));
        assert!(
            !limiter.check_and_hit(&3, 0),
            "{variant}: the budget is full"
        );
        assert!(!limiter.check_and_hit(&4, 0), "{variant}");
        let read = Readings::take(&metrics);
        assert_eq!(
            read.counter(names::BUDGET_REFUSALS, "default", None),
            2,
            "{variant}"
        );
        assert_eq!(
            read.counter(names::DECISIONS, "default", Some("refused")),
            2,
            "{variant}: each is also a refused decision"
        );
        assert_eq!(read.keys("default"), (2, 0, 2.0), "{variant}");
    }
}

#[test]
fn two_limiters_are_told_apart_by_name() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (login, api) = metrics::with_local_recorder(&recorder, || {
        let window = ExactLog::new(limit(1, 10));
        (
            slidelimit::LockFreeLimiter::<u64>::with_options(
                window,
                Options::default().limiter_name("login"),
            ),
            slidelimit_mutex::MutexLimiter::<u64>::with_options(
                window,
                Options::default().limiter_name("api"),
            ),
        )
    });
    assert!(login.check_and_hit(&1, 0));
    assert!(!login.check_and_hit(&1, 1));
    assert!(api.check_and_hit(&1, 0));
    let read = Readings::take(&snapshotter);
    assert_eq!(read.counter(names::DECISIONS, "login", Some("refused")), 1);
    assert_eq!(read.counter(names::DECISIONS, "api", Some("refused")), 0);
    assert_eq!(read.counter(names::DECISIONS, "api", Some("admitted")), 1);
}

#[test]
fn a_limiter_built_before_the_recorder_records_nothing() {
    let limiter = slidelimit::LockFreeLimiter::<u64>::new(limit(1, 10));
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        assert!(limiter.check_and_hit(&1, 0));
    });
    assert!(snapshotter.snapshot().into_vec().is_empty());
}

#[test]
fn describe_gives_units_and_descriptions() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        names::describe();
        let limiter = slidelimit::LockFreeLimiter::<u64>::new(limit(1, 10));
        let _ = limiter.check_and_hit(&1, 0);
        let _ = limiter.remove_idle(0);
    });
    let described = snapshotter.snapshot().into_vec();
    let sweep = described
        .iter()
        .find(|(key, ..)| key.key().name() == names::SWEEP_SECONDS)
        .expect("the sweep histogram");
    assert_eq!(sweep.1, Some(metrics::Unit::Seconds));
    assert!(sweep.2.is_some(), "a description");
    let decisions = described
        .iter()
        .find(|(key, ..)| key.key().name() == names::DECISIONS)
        .expect("the decisions counter");
    assert_eq!(decisions.1, Some(metrics::Unit::Count));
}
