//! Limits of several windows ("3 per 10 and 7 per 50"): the rules a limit must keep, exact
//! answers against a brute-force model for in-order traces, every window's guarantee for
//! out-of-order traces and under contention, in every variant and both algorithms, and no
//! capacity left behind by a refused call.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use slidelimit::{
    Limit, LimitControl, LimitError, LockFreeLimiter, Options, RateLimiter, RollingBuckets,
    MAX_WINDOWS,
};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;
use slidelimit_trace::audit::Audit;
use slidelimit_trace::rng::SplitMix64;

use crate::variants::{default_variants, limit, shared_variant, NAMES};

fn layered(windows: &[(u64, u64)]) -> Limit {
    windows
        .iter()
        .map(|&(n, w)| limit(n, w))
        .reduce(|all, window| all.and(window).expect("a valid layered limit"))
        .expect("at least one window")
}

/// Every variant with the rolling buckets over `limit`, `buckets` per window.
fn bucketed_variants(limit: Limit, buckets: u64) -> Vec<Box<dyn RateLimiter<u64>>> {
    variants_of(RollingBuckets::new(limit, buckets).expect("valid buckets"))
}

/// Every variant with `window` as its rolling buckets.
fn variants_of(window: RollingBuckets) -> Vec<Box<dyn RateLimiter<u64>>> {
    let options = Options::default();
    vec![
        Box::new(LockFreeLimiter::<u64, RollingBuckets>::with_options(
            window, options,
        )),
        Box::new(MutexLimiter::<u64, RollingBuckets>::with_options(
            window, options,
        )),
        Box::new(PerKeyLockLimiter::<u64, RollingBuckets>::with_options(
            window, options,
        )),
        Box::new(RwLockLimiter::<u64, RollingBuckets>::with_options(
            window, options,
        )),
    ]
}

/// Checks every window of `limit` over one key's admissions `(tick, weight)`.
fn assert_every_window_holds(limit: Limit, admitted: &[(u64, u64)], context: &str) {
    for window in limit.windows() {
        let audit = Audit::new(window.max_requests(), window.window_ticks()).expect("W > 0");
        let report = audit.key(admitted.iter().copied());
        assert!(
            report.check().is_ok(),
            "{context}: {} per {} over-admitted (peak {})",
            window.max_requests(),
            window.window_ticks(),
            report.peak()
        );
    }
}

#[test]
fn a_limit_keeps_its_rules() {
    let burst = limit(10, 1);
    let hour = limit(600, 3_600);
    assert_eq!(burst.and(hour), hour.and(burst), "order does not matter");
    let both = burst.and(hour).unwrap();
    assert!(both.is_layered());
    assert_eq!((both.max_requests(), both.window_ticks()), (600, 3_600));
    assert_eq!(both.max_weight(), 10);
    assert_eq!(both.windows().collect::<Vec<_>>(), [burst, hour]);
    assert_eq!(both.widest(), hour);

    assert_eq!(
        limit(5, 10).and(limit(9, 10)),
        Err(LimitError::DuplicateWindow { window_ticks: 10 })
    );
    // A wider window with no more hits makes the narrower one redundant.
    assert_eq!(
        limit(5, 10).and(limit(5, 100)),
        Err(LimitError::WindowNeverBinds {
            max_requests: 5,
            window_ticks: 10
        })
    );
    // 3 per 10 already caps any 50 ticks at 15.
    assert_eq!(
        limit(3, 10).and(limit(15, 50)),
        Err(LimitError::WindowNeverBinds {
            max_requests: 15,
            window_ticks: 50
        })
    );
    assert!(limit(3, 10).and(limit(14, 50)).is_ok(), "14 can bind");
    // 51 ticks hold six spans of 10: 17 still binds.
    assert!(limit(3, 10).and(limit(17, 51)).is_ok());
    let four = layered(&[(2, 1), (10, 10), (50, 100), (200, 1_000)]);
    assert_eq!(four.window_count(), MAX_WINDOWS);
    assert_eq!(
        four.and(limit(1_000, 10_000)),
        Err(LimitError::TooManyWindows { windows: 5 })
    );
    let message = limit(3, 10).and(limit(15, 50)).unwrap_err().to_string();
    assert!(message.contains("never bind"), "{message}");
}

/// Per window: the count of `admitted` hits live at `now` and the wait for one more.
fn model_status(limit: Limit, admitted: &[u64], now: u64) -> (u64, u64) {
    let mut remaining = u64::MAX;
    let mut wait = 0;
    for window in limit.windows() {
        let (n, w) = (window.max_requests(), window.window_ticks());
        let live: Vec<u64> = admitted
            .iter()
            .copied()
            .filter(|&s| s.saturating_add(w) > now)
            .collect();
        let count = live.len() as u64;
        remaining = remaining.min(n.saturating_sub(count));
        if count >= n {
            // In order: the oldest of the newest n live hits leaves first.
            let oldest = live[live.len() - n as usize];
            wait = wait.max(oldest + w - now);
        }
    }
    (remaining, wait)
}

#[test]
fn in_order_traces_match_a_brute_force_model_in_every_variant() {
    let limit = layered(&[(3, 10), (7, 50), (12, 200)]);
    for seed in 0..12 {
        for limiter in default_variants::<u64>(limit) {
            let name = limiter.name();
            let mut rng = SplitMix64::new(seed);
            let mut admitted: Vec<Vec<u64>> = vec![Vec::new(); 3];
            let mut now = 0;
            for step in 0..1_500 {
                now += rng.below(4);
                let key = rng.below(3);
                let hits = &mut admitted[key as usize];
                let (remaining, wait) = model_status(limit, hits, now);
                let status = limiter.status(&key, now);
                assert_eq!(
                    (status.remaining, status.retry_after_ticks),
                    (remaining, wait),
                    "{name}, seed {seed}, step {step}: status at {now}"
                );
                let expected = remaining > 0;
                assert_eq!(
                    limiter.check_and_hit(&key, now),
                    expected,
                    "{name}, seed {seed}, step {step}: check_and_hit at {now}"
                );
                if expected {
                    hits.push(now);
                }
            }
        }
    }
}

#[test]
fn out_of_order_traces_never_over_admit_any_window_in_any_variant() {
    let limit = layered(&[(2, 8), (5, 40), (9, 160)]);
    for seed in 0..8 {
        let variants = default_variants::<u64>(limit)
            .into_iter()
            .chain(bucketed_variants(limit, 8));
        for limiter in variants {
            let context = format!("{} {}, seed {seed}", limiter.name(), limiter.algorithm());
            let mut rng = SplitMix64::new(seed);
            let mut admitted = Vec::new();
            let mut clock = 100;
            for _ in 0..3_000 {
                clock += rng.below(3);
                // Up to 6 ticks late, within the default lateness of one window.
                let now = clock - rng.below(7);
                if limiter.check_and_hit(&0, now) {
                    admitted.push((now, 1));
                }
            }
            assert!(admitted.len() > 50, "{context}: the trace admits");
            assert_every_window_holds(limit, &admitted, &context);
        }
    }
}

#[test]
fn weighted_hits_fit_every_window_of_the_buckets() {
    let limit = layered(&[(10, 20), (40, 200)]);
    for limiter in bucketed_variants(limit, 20) {
        let context = format!("{} buckets", limiter.name());
        let mut rng = SplitMix64::new(7);
        let mut admitted = Vec::new();
        for now in 0..4_000 {
            let weight = 1 + rng.below(4);
            if limiter.check_and_hit_n(&0, now, weight) == Ok(true) {
                admitted.push((now, weight));
            }
        }
        assert_every_window_holds(limit, &admitted, &context);
        assert!(
            limiter.check_and_hit_n(&0, 5_000, 11).is_err(),
            "{context}: a weight above the narrowest window's count never fits"
        );
    }
}

#[test]
fn a_refused_call_leaves_no_capacity_behind() {
    // 2 per 10 and 3 per 100. At the fifth and sixth call the narrow window has room but the
    // wide one is full: both are refused. Two stacked limiters would have counted them in
    // the narrow window and refused the last call too; a layered limit admits it (20 and 21
    // have left the wide window). The buckets (10 ticks wide, one of lateness) reach 20
    // ticks further back, so their calls come 20 ticks later.
    let limit = layered(&[(2, 10), (3, 100)]);
    let expected = [true, true, false, true, false, false, true];
    for limiter in default_variants::<u64>(limit) {
        let answers: Vec<bool> = [20, 21, 22, 50, 115, 116, 121]
            .iter()
            .map(|&now| limiter.check_and_hit(&0, now))
            .collect();
        assert_eq!(answers, expected, "{} exact", limiter.name());
    }
    for limiter in bucketed_variants(limit, 10) {
        let answers: Vec<bool> = [20, 21, 22, 50, 135, 136, 141]
            .iter()
            .map(|&now| limiter.check_and_hit(&0, now))
            .collect();
        assert_eq!(answers, expected, "{} buckets", limiter.name());
    }
}

#[test]
fn status_names_the_binding_window_and_the_longest_wait() {
    let limit = layered(&[(2, 10), (3, 100)]);
    for limiter in default_variants::<u64>(limit) {
        let name = limiter.name();
        assert!(limiter.check_and_hit(&0, 0));
        assert!(limiter.check_and_hit(&0, 1));
        let status = limiter.status(&0, 2);
        assert_eq!(
            (status.count, status.remaining),
            (2, 0),
            "{name}: narrow binds"
        );
        assert_eq!(
            status.retry_after_ticks, 8,
            "{name}: 0 leaves the narrow window at 10"
        );
        assert!(limiter.check_and_hit(&0, 20));
        let status = limiter.status(&0, 21);
        assert_eq!(
            (status.count, status.remaining),
            (3, 0),
            "{name}: wide binds"
        );
        assert_eq!(
            status.retry_after_ticks, 79,
            "{name}: 0 leaves the wide window at 100"
        );
        let unknown = limiter.status(&9, 21);
        assert_eq!(
            unknown.remaining, 2,
            "{name}: a new key has the narrowest room"
        );
    }
}

fn limit_changes_hold<L: LimitControl<u64>>(limiter: &L) {
    let name = limiter.name();
    for now in 0..3 {
        assert!(limiter.check_and_hit(&0, now), "{name}");
    }
    // Now at most 2 per 10 as well: the three hits at 0..3 already fill it.
    limiter.set_limit(layered(&[(2, 10), (5, 100)]));
    assert!(
        !limiter.check_and_hit(&0, 5),
        "{name}: the narrow window is full"
    );
    assert!(
        limiter.check_and_hit(&0, 12),
        "{name}: 0..3 left the narrow window"
    );
    assert!(limiter.check_and_hit(&0, 13), "{name}");
    assert!(!limiter.check_and_hit(&0, 14), "{name}: 5 per 100 reached");
    limiter.set_limit(limit(6, 100));
    assert!(
        limiter.check_and_hit(&0, 15),
        "{name}: back to one window, raised"
    );
    assert!(!limiter.check_and_hit(&0, 16), "{name}");
    limiter.set_limit_for(&1, layered(&[(1, 10), (3, 100)]));
    assert!(
        limiter.check_and_hit(&1, 20),
        "{name}: a key's own layered limit"
    );
    assert!(!limiter.check_and_hit(&1, 21), "{name}");
    assert_eq!(limiter.limit_for(&1).window_count(), 2, "{name}");
}

#[test]
fn set_limit_moves_keys_between_single_and_layered_limits() {
    let single = limit(5, 100);
    limit_changes_hold(&LockFreeLimiter::<u64>::new(single));
    limit_changes_hold(&MutexLimiter::<u64>::new(single));
    limit_changes_hold(&PerKeyLockLimiter::<u64>::new(single));
    limit_changes_hold(&RwLockLimiter::<u64>::new(single));
}

#[test]
fn contended_keys_never_over_admit_any_window() {
    const WORKERS: u64 = 4;
    const OPS: u64 = 20_000;
    let limit = layered(&[(2, 8), (5, 40)]);
    for name in NAMES {
        let limiter = shared_variant::<u64>(name, limit, Options::default());
        let clock = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sweeper = {
            let (limiter, clock, stop) = (limiter.clone(), clock.clone(), stop.clone());
            thread::spawn(move || {
                // Relaxed (both): a stop flag and the counter that stands for the clock; they
                // order nothing else (the join does).
                while !stop.load(Ordering::Relaxed) {
                    limiter.remove_idle(clock.load(Ordering::Relaxed) / 4);
                    thread::yield_now();
                }
            })
        };
        let workers: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let (limiter, clock) = (limiter.clone(), clock.clone());
                thread::spawn(move || {
                    let mut rng = SplitMix64::new(worker);
                    let mut admitted = Vec::new();
                    for _ in 0..OPS {
                        // Relaxed: the shared call counter is the clock; it orders nothing.
                        let now = clock.fetch_add(1, Ordering::Relaxed) / 4 + rng.below(3);
                        let key = rng.below(3);
                        if rng.below(10) == 0 {
                            // Forced hits count against later calls but are not judged.
                            limiter.hit(&key, now);
                        } else if limiter.check_and_hit(&key, now) {
                            admitted.push((key, now));
                        }
                    }
                    admitted
                })
            })
            .collect();
        let mut per_key: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 3];
        for worker in workers {
            for (key, now) in worker.join().expect("worker") {
                per_key[key as usize].push((now, 1));
            }
        }
        // Relaxed: the sweeper only has to see it eventually; the join orders the rest.
        stop.store(true, Ordering::Relaxed);
        sweeper.join().expect("sweeper");
        for (key, admitted) in per_key.iter().enumerate() {
            assert_every_window_holds(limit, admitted, &format!("{name}, key {key}"));
        }
    }
}

#[test]
fn window_statuses_report_every_window_in_every_variant() {
    let limit = layered(&[(2, 10), (3, 100)]);
    let variants = default_variants::<u64>(limit)
        .into_iter()
        .chain(bucketed_variants(limit, 10));
    for limiter in variants {
        let context = format!("{} {}", limiter.name(), limiter.algorithm());
        let fresh = limiter.window_statuses(&0, 0);
        let remaining: Vec<u64> = fresh.iter().map(|status| status.remaining).collect();
        assert_eq!(
            remaining,
            [2, 3],
            "{context}: a new key, each window's count"
        );
        assert!(limiter.check_and_hit(&0, 0));
        assert!(limiter.check_and_hit(&0, 1));
        let statuses = limiter.window_statuses(&0, 2);
        let counts: Vec<(u64, u64)> = statuses
            .iter()
            .map(|status| (status.count, status.remaining))
            .collect();
        assert_eq!(counts, [(2, 0), (2, 1)], "{context}");
        assert!(
            statuses.iter().next().unwrap().retry_after_ticks > 0,
            "{context}"
        );
        assert_eq!(statuses.tightest(), limiter.status(&0, 2), "{context}");
    }
    let single = LockFreeLimiter::<u64>::new(crate::variants::limit(4, 10));
    assert!(single.check_and_hit(&0, 0));
    let statuses = single.window_statuses(&0, 1);
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses.tightest(), single.status(&0, 1));
}

#[test]
fn a_snapshot_restores_every_window_from_the_widest_state() {
    use slidelimit::{Conversion, SavedState, Snapshot};
    let limit = layered(&[(2, 10), (3, 100)]);
    let before = LockFreeLimiter::<u64>::new(limit);
    for now in [0, 1, 50] {
        assert!(before.check_and_hit(&7, now));
    }
    let json = before.snapshot(52).to_json().unwrap();
    let snapshot = Snapshot::<u64>::from_json(&json).unwrap();
    assert_eq!(
        snapshot.default_limit,
        (3, 100),
        "the widest window is recorded"
    );
    let single = limit.widest();
    for after in [
        Box::new(LockFreeLimiter::<u64>::new(limit)) as Box<dyn SavedStateLimiter>,
        Box::new(MutexLimiter::<u64>::new(limit)),
    ] {
        after.restore_dyn(&snapshot, 52);
        assert!(
            !after.check_and_hit_dyn(53),
            "the wide window holds 0, 1, 50"
        );
        assert!(
            after.check_and_hit_dyn(100),
            "0 left it; the narrow one is empty"
        );
        assert!(
            !after.check_and_hit_dyn(100),
            "1, 50, 100 fill the wide window"
        );
    }
    // Into a limiter with only the widest window, the same state: its own limit applies.
    let widest_only = LockFreeLimiter::<u64>::new(single);
    widest_only
        .restore(&snapshot, 52, Conversion::Exact)
        .unwrap();
    assert!(!widest_only.check_and_hit(&7, 53));
}

/// The two calls the snapshot test makes, on any limiter (the trait is not object safe).
trait SavedStateLimiter {
    fn restore_dyn(&self, snapshot: &slidelimit::Snapshot<u64>, now: u64);
    fn check_and_hit_dyn(&self, now: u64) -> bool;
}

impl<L: slidelimit::SavedState<u64> + RateLimiter<u64>> SavedStateLimiter for L {
    fn restore_dyn(&self, snapshot: &slidelimit::Snapshot<u64>, now: u64) {
        self.restore(snapshot, now, slidelimit::Conversion::Exact)
            .expect("the same limit restores exactly");
    }
    fn check_and_hit_dyn(&self, now: u64) -> bool {
        self.check_and_hit(&7, now)
    }
}

#[test]
fn a_resolver_gives_keys_layered_limits() {
    let burst = layered(&[(1, 10), (2, 100)]);
    let limiter = LockFreeLimiter::<u64>::new(crate::variants::limit(5, 100))
        .with_limit_resolver(move |key| (*key >= 100).then_some(burst));
    assert_eq!(limiter.limit_for(&100), burst);
    assert!(limiter.check_and_hit(&100, 0));
    assert!(!limiter.check_and_hit(&100, 5), "1 per 10");
    assert!(limiter.check_and_hit(&100, 10));
    assert!(!limiter.check_and_hit(&100, 20), "2 per 100");
    assert_eq!(
        (0..5).filter(|t| limiter.check_and_hit(&1, *t)).count(),
        5,
        "the default"
    );
}

/// The widest window of a layered limit reserves last and is never undone, so it re-sorts
/// after out-of-order traffic as a single window does (the narrower ones never do).
#[test]
fn the_widest_ring_still_re_sorts_after_disorder() {
    use slidelimit::raw::{Algorithm, AtomicWindow};
    use slidelimit::ExactLog;
    let limit = layered(&[(4, 10), (64, 200)]);
    let window = ExactLog::new(limit).new_atomic();
    let mut rng = SplitMix64::new(3);
    let mut admitted = Vec::new();
    for clock in 100..40_000 {
        let now = clock - rng.below(40);
        if window.check_and_hit_n(now, 1) == Ok(true) {
            admitted.push((now, 1));
        }
    }
    assert_every_window_holds(limit, &admitted, "layered ring");
    let resorts = window.widest().resorts();
    assert!(
        resorts.is_none_or(|resorts| resorts > 0),
        "the widest ring re-sorted: {resorts:?}"
    );
    assert!(
        window.windows()[0]
            .resorts()
            .is_none_or(|resorts| resorts == 0),
        "the narrower ring never does"
    );
}

/// One window's rolling buckets as the docs state them (`window/buckets.rs`, *Geometry*):
/// the limit's `B` clamped to the window's own `W`, buckets of `w = ceil(W / B)` ticks, the
/// `ceil(W / w)` of them needed to cover `W`, `NB = B + 1 + L` kept. Returns `(w, NB)`; the
/// window's refusal reach `span + (L + 1)·w` is then `NB·w`.
fn documented_geometry(buckets: u64, window_ticks: u64, lateness: u64) -> (u64, u64) {
    let clamped = buckets.min(window_ticks);
    let bucket_ticks = window_ticks.div_ceil(clamped);
    let kept = window_ticks.div_ceil(bucket_ticks);
    (bucket_ticks, kept + 1 + lateness)
}

/// A rolling-bucket configuration of a layered limit: `(B, L, windows)`.
type Geometry = (u64, u64, &'static [(u64, u64)]);

/// Limits of several windows whose bucket count does not divide every window, or exceeds
/// the narrowest.
const GEOMETRIES: [Geometry; 5] = [
    (6, 1, &[(3, 6), (5, 10)]),
    (4, 1, &[(2, 3), (4, 10), (9, 50)]),
    (7, 0, &[(1, 5), (3, 20), (10, 100)]),
    (5, 2, &[(2, 7), (6, 30)]),
    (3, 1, &[(2, 4), (5, 11), (7, 19), (20, 100)]),
];

fn buckets_of(buckets: u64, lateness: u64, windows: &[(u64, u64)]) -> RollingBuckets {
    RollingBuckets::new(layered(windows), buckets)
        .and_then(|window| window.lateness_buckets(lateness))
        .expect("valid buckets")
}

/// Issue 35: with `B = 6` the wide window of 10 ticks keeps 5 buckets of 2 ticks, but the
/// narrow window of 6 ticks gets its own 6 buckets of one tick, so its refusal reach is
/// `6 + 2·1 = 8` ticks: 3 at tick 0 fill it through tick 7 and have left it at tick 8.
#[test]
fn each_window_of_the_buckets_gets_the_configured_count_clamped_to_it() {
    let limit = layered(&[(3, 6), (5, 10)]);
    for limiter in bucketed_variants(limit, 6) {
        let name = limiter.name();
        assert_eq!(limiter.check_and_hit_n(&0, 0, 3), Ok(true), "{name}");
        let statuses = |now| -> Vec<(u64, u64, u64)> {
            limiter
                .window_statuses(&0, now)
                .iter()
                .map(|s| (s.count, s.remaining, s.retry_after_ticks))
                .collect()
        };
        // (count, remaining, retry): the narrow window's wait is one one-tick bucket.
        assert_eq!(statuses(7), [(3, 0, 1), (3, 2, 0)], "{name} at 7");
        assert!(!limiter.allowed(&0, 7), "{name}: 7 is within the reach");
        assert_eq!(statuses(8), [(0, 3, 0), (3, 2, 0)], "{name} at 8");
        assert!(limiter.check_and_hit(&0, 8), "{name}: 8 is past the reach");
        assert_eq!(statuses(8), [(1, 2, 0), (4, 1, 0)], "{name} after 8");
    }
}

/// Each window's refusal reach is exactly `NB·w` of its own geometry: weight at the start
/// of a bucket refuses through one tick before that and not at it, whatever else the limit
/// holds; weight later in the bucket leaves with the bucket.
#[test]
fn each_window_refuses_for_exactly_its_documented_reach() {
    for (buckets, lateness, windows) in GEOMETRIES {
        let window = buckets_of(buckets, lateness, windows);
        let narrowest = windows[0].0;
        for limiter in variants_of(window) {
            for (index, &(max_requests, window_ticks)) in windows.iter().enumerate() {
                let (bucket_ticks, physical) = documented_geometry(buckets, window_ticks, lateness);
                let reach = physical * bucket_ticks;
                for offset in 0..bucket_ticks {
                    let context = format!(
                        "{} B = {buckets}, L = {lateness}, {windows:?}: window {index}, offset {offset}",
                        limiter.name()
                    );
                    // A fresh key per case; its first bucket starts well after 0.
                    let key = (index as u64) << 32 | offset;
                    let start = 1_000 * bucket_ticks;
                    // Forced hits fill this window (and the narrower ones past theirs) at once.
                    let mut left = max_requests;
                    while left > 0 {
                        let n = left.min(narrowest);
                        limiter
                            .hit_n(&key, start + offset, n)
                            .expect("a valid weight");
                        left -= n;
                    }
                    let status = |now: u64| limiter.window_statuses(&key, now).iter().nth(index);
                    let last = status(start + reach - 1).expect("every window");
                    assert_eq!(
                        (last.count, last.remaining, last.retry_after_ticks),
                        (max_requests, 0, 1),
                        "{context}: still within the reach one tick before it ends"
                    );
                    let after = status(start + reach).expect("every window");
                    assert_eq!(
                        (after.count, after.remaining),
                        (0, max_requests),
                        "{context}: gone at the reach"
                    );
                    let first = status(start + offset).expect("every window");
                    assert_eq!(
                        first.retry_after_ticks,
                        reach - offset,
                        "{context}: the wait at the hit"
                    );
                }
            }
        }
    }
}

/// The rolling buckets of several windows as the docs state them, for in-order traces (no
/// caller is ever late): window `i` keeps the weight recorded in the `NBᵢ` newest of its
/// own buckets, and a call is admitted where every window has room.
struct LayeredBucketModel {
    /// `(max_requests, bucket_ticks, physical)` per window, narrowest first.
    windows: Vec<(u64, u64, u64)>,
    recorded: Vec<(u64, u64)>,
}

impl LayeredBucketModel {
    fn new(buckets: u64, lateness: u64, windows: &[(u64, u64)]) -> Self {
        let windows = windows
            .iter()
            .map(|&(max_requests, window_ticks)| {
                let (bucket_ticks, physical) = documented_geometry(buckets, window_ticks, lateness);
                (max_requests, bucket_ticks, physical)
            })
            .collect();
        Self {
            windows,
            recorded: Vec::new(),
        }
    }

    /// The weight window `(_, w, nb)` retains for a caller at `now`.
    fn count(&self, (_, w, nb): (u64, u64, u64), now: u64) -> u64 {
        self.recorded
            .iter()
            .filter(|&&(s, _)| s / w + nb > now / w)
            .map(|&(_, n)| n)
            .sum()
    }

    /// Per window: (count, remaining, ticks until one more fits).
    fn statuses(&self, now: u64) -> Vec<(u64, u64, u64)> {
        self.windows
            .iter()
            .map(|&window| {
                let (max_requests, w, nb) = window;
                let count = self.count(window, now);
                let wait = (0..=nb * w)
                    .find(|&d| self.count(window, now + d) < max_requests)
                    .expect("every bucket leaves");
                (count, max_requests.saturating_sub(count), wait)
            })
            .collect()
    }

    fn admits(&self, now: u64, n: u64) -> bool {
        self.windows
            .iter()
            .all(|&window| self.count(window, now) + n <= window.0)
    }
}

/// In-order traces of checks, forced hits and questions against the brute-force model of
/// the documented geometry, in every variant: every answer and every window's status.
#[test]
fn in_order_bucket_traces_match_the_documented_geometry_in_every_variant() {
    for (buckets, lateness, windows) in GEOMETRIES {
        let window = buckets_of(buckets, lateness, windows);
        let narrowest = windows[0].0;
        for seed in 0..3 {
            for limiter in variants_of(window) {
                let context = format!(
                    "{} B = {buckets}, L = {lateness}, {windows:?}, seed {seed}",
                    limiter.name()
                );
                let mut model = LayeredBucketModel::new(buckets, lateness, windows);
                let mut rng = SplitMix64::new(seed);
                let mut now = 0;
                let mut admitted = 0;
                for step in 0..1_200 {
                    now += if rng.below(20) == 0 {
                        rng.below(60)
                    } else {
                        rng.below(3)
                    };
                    let n = 1 + rng.below(narrowest);
                    let statuses: Vec<(u64, u64, u64)> = limiter
                        .window_statuses(&0, now)
                        .iter()
                        .map(|s| (s.count, s.remaining, s.retry_after_ticks))
                        .collect();
                    assert_eq!(
                        statuses,
                        model.statuses(now),
                        "{context}, step {step}: window_statuses at {now}"
                    );
                    match rng.below(10) {
                        0 => {
                            limiter.hit_n(&0, now, n).expect("a valid weight");
                            model.recorded.push((now, n));
                        }
                        1 => assert_eq!(
                            limiter.allowed_n(&0, now, n),
                            Ok(model.admits(now, n)),
                            "{context}, step {step}: allowed_n({now}, {n})"
                        ),
                        _ => {
                            let expected = model.admits(now, n);
                            assert_eq!(
                                limiter.check_and_hit_n(&0, now, n),
                                Ok(expected),
                                "{context}, step {step}: check_and_hit_n({now}, {n})"
                            );
                            if expected {
                                model.recorded.push((now, n));
                                admitted += 1;
                            }
                        }
                    }
                }
                assert!(admitted > 50, "{context}: the trace admits ({admitted})");
            }
        }
    }
}
