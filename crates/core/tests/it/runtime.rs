//! Runtime limits and saved state on every variant and both windows: `set_limit`, per-key
//! limits, snapshots and their restore, usage import, the clock-skew cap, and bad snapshots.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use slidelimit::raw::Algorithm;
use slidelimit::{
    Conversion, LimitControl, LockFreeLimiter, ManualClock, Options, RateLimiter, RollingBuckets,
    SavedState, Snapshot, SnapshotError,
};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;
use slidelimit_trace::audit::Audit;

use crate::variants::limit;

/// Everything a limiter of this workspace offers, as one object type for the tests.
pub trait Full<K>: LimitControl<K> + SavedState<K>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
}
impl<K, T> Full<K> for T
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    T: LimitControl<K> + SavedState<K>,
{
}

/// The four variants with `window` (the exact log or the buckets), shareable.
pub(crate) fn variants_with<K, W>(window: W, options: Options) -> Vec<Arc<dyn Full<K>>>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
{
    vec![
        Arc::new(LockFreeLimiter::<K, W>::with_options(
            window.clone(),
            options,
        )),
        Arc::new(MutexLimiter::<K, W>::with_options(window.clone(), options)),
        Arc::new(PerKeyLockLimiter::<K, W>::with_options(
            window.clone(),
            options,
        )),
        Arc::new(RwLockLimiter::<K, W>::with_options(window, options)),
    ]
}

/// Every variant with the exact log, then every variant with 5 rolling buckets.
pub(crate) fn every_limiter<K>(max_requests: u64, window_ticks: u64) -> Vec<Arc<dyn Full<K>>>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    let l = limit(max_requests, window_ticks);
    let mut all = variants_with::<K, _>(slidelimit::ExactLog::new(l), Options::default());
    all.extend(variants_with::<K, _>(
        RollingBuckets::new(l, 5).expect("valid buckets"),
        Options::default(),
    ));
    all
}

pub(crate) fn describe(limiter: &dyn Full<u64>) -> String {
    format!("{} {}", limiter.name(), limiter.algorithm())
}

#[test]
fn lowering_the_limit_counts_the_hits_already_recorded() {
    for limiter in every_limiter::<u64>(3, 10) {
        let who = describe(limiter.as_ref());
        for t in [1, 2, 3] {
            assert!(limiter.check_and_hit(&1, t), "{who}");
        }
        limiter.set_limit(limit(2, 10));
        assert_eq!(limiter.limit(), limit(2, 10), "{who}");
        assert!(
            !limiter.allowed(&1, 5),
            "{who}: three hits live, limit now 2"
        );
        assert!(!limiter.check_and_hit(&1, 5), "{who}");
        assert_eq!(limiter.status(&1, 5).remaining, 0, "{who}");
        assert!(limiter.check_and_hit(&7, 5), "{who}: a new key has room");
        assert!(limiter.check_and_hit(&7, 6), "{who}");
        assert!(
            !limiter.check_and_hit(&7, 7),
            "{who}: the new limit holds for new keys"
        );
    }
}

#[test]
fn raising_the_limit_admits_more_at_once() {
    for limiter in every_limiter::<u64>(1, 10) {
        let who = describe(limiter.as_ref());
        assert!(limiter.check_and_hit(&1, 1), "{who}");
        assert!(!limiter.check_and_hit(&1, 2), "{who}");
        limiter.set_limit(limit(3, 10));
        assert!(limiter.check_and_hit(&1, 2), "{who}: raised to 3");
        assert!(limiter.check_and_hit(&1, 3), "{who}");
        assert!(
            !limiter.check_and_hit(&1, 4),
            "{who}: the old hit counts too"
        );
    }
}

#[test]
fn the_exact_log_keeps_exact_answers_across_a_change() {
    // After lowering 4 -> 2 the ring keeps the two newest hits (3 and 4): at 13 the hit at 3
    // has left the window (3, 13], so one slot is free; at 13 again the window holds 4 and 13.
    for limiter in
        variants_with::<u64, _>(slidelimit::ExactLog::new(limit(4, 10)), Options::default())
    {
        let who = describe(limiter.as_ref());
        for t in 1..=4 {
            assert!(limiter.check_and_hit(&1, t), "{who}");
        }
        limiter.set_limit(limit(2, 10));
        assert!(!limiter.check_and_hit(&1, 12), "{who}: 3 and 4 live");
        assert!(limiter.check_and_hit(&1, 13), "{who}");
        assert!(!limiter.check_and_hit(&1, 13), "{who}");
        assert_eq!(limiter.status(&1, 13).count, 2, "{who}");
    }
}

#[test]
fn per_key_limits_from_a_resolver_and_overrides() {
    let l = limit(1, 10);
    let resolver = |key: &u64| (*key >= 100).then(|| limit(3, 10));
    let limiters: Vec<Arc<dyn Full<u64>>> = vec![
        Arc::new(LockFreeLimiter::<u64>::new(l).with_limit_resolver(resolver)),
        Arc::new(MutexLimiter::<u64>::new(l).with_limit_resolver(resolver)),
        Arc::new(PerKeyLockLimiter::<u64>::new(l).with_limit_resolver(resolver)),
        Arc::new(RwLockLimiter::<u64>::new(l).with_limit_resolver(resolver)),
    ];
    for limiter in limiters {
        let who = describe(limiter.as_ref());
        assert_eq!(limiter.limit_for(&1), l, "{who}");
        assert_eq!(limiter.limit_for(&100), limit(3, 10), "{who}");
        let admitted = |key: u64| (0..5).filter(|t| limiter.check_and_hit(&key, *t)).count();
        assert_eq!(admitted(1), 1, "{who}: the default");
        assert_eq!(admitted(100), 3, "{who}: the resolver's limit");
        limiter.set_limit_for(&1, limit(4, 10));
        assert_eq!(limiter.limit_for(&1), limit(4, 10), "{who}");
        assert_eq!(admitted(1), 3, "{who}: one hit already counted against 4");
        limiter.set_limit(limit(2, 10));
        assert_eq!(limiter.limit_for(&1), limit(4, 10), "{who}: overrides win");
        assert_eq!(
            limiter.limit_for(&100),
            limit(3, 10),
            "{who}: the resolver wins"
        );
        assert_eq!(limiter.limit_for(&2), limit(2, 10), "{who}");
        assert!(limiter.clear_limit_for(&1), "{who}");
        assert!(!limiter.clear_limit_for(&1), "{who}");
        assert!(
            !limiter.check_and_hit(&1, 5),
            "{who}: back to 2, four hits live"
        );
        assert!(
            !limiter.check_and_hit(&1, 10),
            "{who}: hits at 0, 0, 1, 2: 1 and 2 live"
        );
        assert!(
            limiter.check_and_hit(&1, 11),
            "{who}: only 2 live in (1, 11]"
        );
        // Raised to 5: live in (1, 11] are 2 and 11, so three more fit.
        limiter.set_limit(limit(5, 10));
        for _ in 0..3 {
            assert!(limiter.check_and_hit(&1, 11), "{who}");
        }
        assert!(!limiter.check_and_hit(&1, 11), "{who}: 2 and four at 11");
    }
}

/// Records every admission (key, tick) of a stress run.
type Admissions = Mutex<Vec<(u64, u64)>>;

/// Per key, the most admissions in any window of `window_ticks` that ends at an admission at
/// or after `from`, by the workspace's one window audit.
fn worst_window_from(admissions: &[(u64, u64)], window_ticks: u64, from: u64) -> u64 {
    Audit::new(u64::MAX, window_ticks)
        .unwrap()
        .windows_ending_from(from)
        .keys(admissions.iter().map(|&(key, tick)| (key, tick, 1)))
        .peak()
}

#[test]
fn limit_changes_under_load_never_over_admit() {
    const WINDOW: u64 = 50;
    for limiter in every_limiter::<u64>(4, WINDOW) {
        let who = describe(limiter.as_ref());
        let clock = Arc::new(AtomicU64::new(0));
        let admissions: Arc<Admissions> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let (limiter, clock, admissions, stop) = (
                    limiter.clone(),
                    clock.clone(),
                    admissions.clone(),
                    stop.clone(),
                );
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) && i < 40_000 {
                        i += 1;
                        let t = clock.fetch_add(1, Ordering::Relaxed) / 8;
                        let key = i % 3;
                        if limiter.check_and_hit(&key, t) {
                            admissions.lock().unwrap().push((key, t));
                        }
                    }
                })
            })
            .collect();
        for round in 0..200u64 {
            limiter.set_limit(limit(if round % 2 == 0 { 8 } else { 2 }, WINDOW));
            std::thread::yield_now();
        }
        limiter.set_limit(limit(2, WINDOW));
        let lowered_at = clock.load(Ordering::Relaxed) / 8 + 1;
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.join().unwrap();
        }
        // After the last change: single-threaded calls past every stamp used so far.
        let after: u64 = clock.load(Ordering::Relaxed) / 8 + 1;
        let mut all = admissions.lock().unwrap().clone();
        for t in after..after + 3 * WINDOW {
            for key in 0..3 {
                if limiter.check_and_hit(&key, t) {
                    all.push((key, t));
                }
            }
        }
        assert!(
            worst_window_from(&all, WINDOW, 0) <= 8,
            "{who}: above the largest limit"
        );
        assert!(
            worst_window_from(&all, WINDOW, after.max(lowered_at)) <= 2,
            "{who}: a window holding an admission after the last change exceeds it"
        );
    }
}

/// An in-order trace of calls on a few keys.
fn trace_strategy() -> impl Strategy<Value = Vec<(u64, u64, bool)>> {
    prop::collection::vec((0u64..4, 0u64..6, any::<bool>()), 1..60).prop_map(|steps| {
        let mut t = 0;
        steps
            .into_iter()
            .map(|(key, dt, hit)| {
                t += dt;
                (key, t, hit)
            })
            .collect()
    })
}

fn run(limiter: &dyn Full<u64>, trace: &[(u64, u64, bool)]) -> Vec<bool> {
    trace
        .iter()
        .map(|&(key, t, hit)| {
            if hit {
                limiter.hit(&key, t);
                true
            } else {
                limiter.check_and_hit(&key, t)
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A snapshot restored into any variant answers the rest of an in-order trace exactly
    /// as the original does, through JSON and through postcard.
    #[test]
    fn a_restored_limiter_answers_like_the_original(
        before in trace_strategy(),
        after in trace_strategy(),
        use_json in any::<bool>(),
    ) {
        let shift = before.last().map_or(0, |step| step.1);
        let after: Vec<_> = after.into_iter().map(|(k, t, h)| (k, t + shift, h)).collect();
        let originals = every_limiter::<u64>(3, 10);
        for (index, original) in originals.iter().enumerate() {
            run(original.as_ref(), &before);
            let snapshot = original.snapshot(shift);
            let decoded = if use_json {
                Snapshot::<u64>::from_json(&snapshot.to_json().unwrap()).unwrap()
            } else {
                Snapshot::<u64>::from_bytes(&snapshot.to_bytes().unwrap()).unwrap()
            };
            prop_assert_eq!(&decoded, &snapshot);
            let expected = run(original.as_ref(), &after);
            // Into every variant of the same window algorithm.
            let family = if index < 4 { 0..4 } else { 4..8 };
            for restored in &every_limiter::<u64>(3, 10)[family] {
                restored.restore(&decoded, shift, Conversion::Exact).unwrap();
                prop_assert_eq!(
                    &run(restored.as_ref(), &after),
                    &expected,
                    "{} into {}", describe(original.as_ref()), describe(restored.as_ref())
                );
            }
        }
    }
}

#[test]
fn a_snapshot_under_load_restores_without_over_admitting_across_the_seam() {
    const WINDOW: u64 = 40;
    const N: u64 = 3;
    for original in every_limiter::<u64>(N, WINDOW) {
        let who = describe(original.as_ref());
        let clock = Arc::new(AtomicU64::new(0));
        let admissions: Arc<Admissions> = Arc::default();
        let snapshot_started = Arc::new(AtomicBool::new(false));
        let before_snapshot: Arc<Admissions> = Arc::default();
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let (limiter, clock, admissions, started, before) = (
                    original.clone(),
                    clock.clone(),
                    admissions.clone(),
                    snapshot_started.clone(),
                    before_snapshot.clone(),
                );
                std::thread::spawn(move || {
                    for i in 0..30_000u64 {
                        let t = clock.fetch_add(1, Ordering::Relaxed) / 16;
                        let key = i % 4;
                        if limiter.check_and_hit(&key, t) {
                            admissions.lock().unwrap().push((key, t));
                            if !started.load(Ordering::SeqCst) {
                                before.lock().unwrap().push((key, t));
                            }
                        }
                    }
                })
            })
            .collect();
        while clock.load(Ordering::Relaxed) < 20_000 {
            std::thread::yield_now();
        }
        snapshot_started.store(true, Ordering::SeqCst);
        let taken_at = clock.load(Ordering::Relaxed) / 16;
        let snapshot = original.snapshot(taken_at);
        // No writer had used a tick above this when the snapshot returned, so a hit admitted
        // before it started that is live at this tick cannot have been replaced.
        let max_seen = clock.load(Ordering::SeqCst) / 16;
        for writer in writers {
            writer.join().unwrap();
        }
        // Nothing admitted before the snapshot began, and still live then, is missing.
        let saved: HashMap<u64, Vec<(u64, u64)>> = snapshot
            .keys
            .iter()
            .map(|key| (key.key, key.usage.clone()))
            .collect();
        for &(key, t) in before_snapshot.lock().unwrap().iter() {
            if t + WINDOW > max_seen && original.algorithm() == "exact" {
                assert!(
                    saved[&key].iter().any(|&(tick, _)| tick == t),
                    "{who}: hit ({key}, {t}) admitted before the snapshot is missing"
                );
            }
        }
        // The seam: the snapshot's hits, then the restored limiter's admissions.
        let restored = every_limiter::<u64>(N, WINDOW)
            .into_iter()
            .find(|candidate| describe(candidate.as_ref()) == who)
            .unwrap();
        // Restored at a `now` no earlier than any tick the writers used, so that the skew cap
        // (tested on its own below) moves nothing.
        restored
            .restore(&snapshot, max_seen, Conversion::Exact)
            .unwrap();
        let mut seam: Vec<(u64, u64)> = snapshot
            .keys
            .iter()
            .flat_map(|key| {
                key.usage
                    .iter()
                    .flat_map(move |&(tick, weight)| (0..weight).map(move |_| (key.key, tick)))
            })
            .collect();
        for t in max_seen..max_seen + 2 * WINDOW {
            for key in 0..4 {
                if restored.check_and_hit(&key, t) {
                    seam.push((key, t));
                }
            }
        }
        // The buckets' weight sits at each bucket's last tick, where the restored limiter
        // counts it too; the exact log's at the hits' own ticks.
        assert!(worst_window_from(&seam, WINDOW, 0) <= N, "{who}");
        assert!(!admissions.lock().unwrap().is_empty(), "{who}");
    }
}

#[test]
fn the_clock_skew_cap_counts_future_hits_at_now() {
    for limiter in every_limiter::<u64>(2, 10) {
        let who = describe(limiter.as_ref());
        assert!(limiter.check_and_hit(&1, 1_000), "{who}");
        assert!(limiter.check_and_hit(&1, 1_000), "{who}");
        let snapshot = limiter.snapshot(1_000);
        let restored = every_limiter::<u64>(2, 10)
            .into_iter()
            .find(|candidate| describe(candidate.as_ref()) == who)
            .unwrap();
        // The restoring clock reads 500: the hits count as made at 500.
        restored.restore(&snapshot, 500, Conversion::Exact).unwrap();
        assert!(
            !restored.check_and_hit(&1, 505),
            "{who}: both hits live at 505"
        );
        let reopens = if restored.algorithm() == "exact" {
            510
        } else {
            525
        };
        assert!(
            restored.check_and_hit(&1, reopens),
            "{who}: capped hits expire from 500"
        );
    }
    let limiter = LockFreeLimiter::<u64>::new(limit(1, 10));
    let clock = ManualClock::new(100);
    assert!(
        limiter.check_and_hit_stamped(&1, 5_000, &clock),
        "counted at 100"
    );
    clock.set(110);
    assert!(
        limiter.check_and_hit_stamped(&1, 9_999, &clock),
        "the first hit counted at 100, not at 5,000"
    );
}

#[test]
fn usage_history_imports_in_any_order() {
    for limiter in every_limiter::<u64>(3, 10) {
        let who = describe(limiter.as_ref());
        let mut records = vec![
            (1u64, 7u64, 1u64),
            (2, 3, 1),
            (1, 5, 1),
            (1, 9, 1),
            (2, 1, 1),
        ];
        records.reverse();
        let restored = limiter.import_usage(&mut records.into_iter(), 9);
        assert_eq!(restored.keys, 2, "{who}");
        assert!(!limiter.check_and_hit(&1, 9), "{who}: 5, 7, 9 live");
        assert!(
            limiter.check_and_hit(&2, 9),
            "{who}: 1 and 3 live, one free"
        );
        assert!(!limiter.check_and_hit(&2, 9), "{who}");
    }
}

#[test]
fn a_different_limit_is_refused_or_converted_as_asked() {
    let source = LockFreeLimiter::<u64>::new(limit(4, 10));
    for t in 0..4 {
        assert!(source.check_and_hit(&1, t));
    }
    let snapshot = source.snapshot(3);
    for target in every_limiter::<u64>(2, 10) {
        let who = describe(target.as_ref());
        assert!(
            matches!(
                target.restore(&snapshot, 3, Conversion::Exact),
                Err(SnapshotError::Mismatch { .. })
            ),
            "{who}"
        );
        target.restore(&snapshot, 3, Conversion::ToLimiter).unwrap();
        assert!(
            !target.check_and_hit(&1, 5),
            "{who}: converted hits still count"
        );
    }
}

#[test]
fn hostile_snapshots_are_typed_errors() {
    let source = LockFreeLimiter::<u64>::new(limit(2, 10));
    assert!(source.check_and_hit(&1, 5));
    let good = source.snapshot(5);
    let target = MutexLimiter::<u64>::new(limit(2, 10));

    let mut over = good.clone();
    // A ring of 2 holds 2 hits beside what it carries at its oldest tick: 3 newer ones are
    // more than any ring of this limit keeps.
    over.keys[0].usage = vec![(1, 1), (2, 1), (3, 1), (4, 1)];
    over.keys[0].newest_tick = 4;
    assert!(matches!(
        target.restore(&over, 5, Conversion::Exact),
        Err(SnapshotError::OverLimit { index: 0 })
    ));
    let mut unordered = good.clone();
    unordered.keys[0].usage = vec![(3, 1), (1, 1)];
    assert!(matches!(
        target.restore(&unordered, 5, Conversion::Exact),
        Err(SnapshotError::State { index: 0, .. })
    ));
    let mut twice = good.clone();
    twice.keys.push(twice.keys[0].clone());
    assert!(matches!(
        target.restore(&twice, 5, Conversion::Exact),
        Err(SnapshotError::DuplicateKey { index: 1 })
    ));
    let mut version = good.clone();
    version.format = 99;
    assert!(matches!(
        Snapshot::<u64>::from_bytes(&version.to_bytes().unwrap()),
        Err(SnapshotError::UnknownFormat { found: 99 })
    ));
    let mut zero = good.clone();
    zero.default_limit = (0, 10);
    assert!(matches!(
        target.restore(&zero, 5, Conversion::Exact),
        Err(SnapshotError::Limit(_))
    ));
    // A billion keys claimed by a length prefix, with nothing behind it.
    let mut claim = good.to_bytes().unwrap();
    let keys_at = claim.len() - 2 - good.keys[0].usage.len() * 2 - 5;
    claim.truncate(keys_at.min(claim.len()));
    claim.extend([0x80, 0x94, 0xeb, 0xdc, 0x03]);
    assert!(Snapshot::<u64>::from_bytes(&claim).is_err());
    assert!(Snapshot::<u64>::from_bytes(&[]).is_err());
    assert!(Snapshot::<u64>::from_json("{\"format\":1}").is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random bytes and bit flips of a real snapshot never panic the decoder or restore,
    /// and whatever restores never lets a window hold more than the limit.
    #[test]
    fn the_decoder_never_panics(
        noise in prop::collection::vec(any::<u8>(), 0..200),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
    ) {
        let _ = Snapshot::<u64>::from_bytes(&noise);
        let _ = Snapshot::<String>::from_json(&String::from_utf8_lossy(&noise));
        let source = LockFreeLimiter::<u64>::new(limit(3, 10));
        for t in 0..5 {
            let _ = source.check_and_hit(&(t % 2), t);
        }
        let mut bytes = source.snapshot(5).to_bytes().unwrap();
        for (index, bits) in flips {
            let at = index.index(bytes.len());
            bytes[at] ^= bits;
        }
        if let Ok(snapshot) = Snapshot::<u64>::from_bytes(&bytes) {
            let target = LockFreeLimiter::<u64>::new(limit(3, 10));
            if target.restore(&snapshot, 5, Conversion::Exact).is_ok() {
                for key in snapshot.keys.iter().map(|key| key.key) {
                    prop_assert!(target.status(&key, 5).count <= 3);
                }
            }
        }
    }
}

#[test]
fn one_key_saves_and_restores_alone() {
    for limiter in every_limiter::<u64>(2, 10) {
        let who = describe(limiter.as_ref());
        assert!(limiter.check_and_hit(&1, 5), "{who}");
        assert!(limiter.check_and_hit(&1, 6), "{who}");
        assert!(limiter.check_and_hit(&2, 6), "{who}");
        let one = limiter.snapshot_key(&1, 6);
        assert_eq!(one.keys.len(), 1, "{who}");
        assert_eq!(one.keys[0].key, 1, "{who}");
        assert!(
            limiter.snapshot_key(&9, 6).keys.is_empty(),
            "{who}: an unknown key"
        );
        let target = every_limiter::<u64>(2, 10)
            .into_iter()
            .find(|candidate| describe(candidate.as_ref()) == who)
            .unwrap();
        let restored = target.restore(&one, 7, Conversion::Exact).unwrap();
        assert_eq!(restored.keys, 1, "{who}");
        assert!(
            !target.check_and_hit(&1, 7),
            "{who}: key 1's two hits came along"
        );
        assert!(target.check_and_hit(&2, 7), "{who}: key 2 stayed behind");
        assert_eq!(target.tracked_keys(), 2, "{who}");
    }
}

#[test]
fn snapshots_carry_the_tick_length_and_refuse_another() {
    let millis = Options::default().tick(std::time::Duration::from_millis(1));
    let seconds = Options::default().tick(std::time::Duration::from_secs(1));
    let window = slidelimit::ExactLog::new(limit(2, 10));
    let source = LockFreeLimiter::<u64>::with_options(window, millis);
    assert!(source.check_and_hit(&1, 5));
    let snapshot = source.snapshot(5);
    assert_eq!(snapshot.tick_nanos, Some(1_000_000));
    let other = MutexLimiter::<u64>::with_options(window, seconds);
    assert!(matches!(
        other.restore(&snapshot, 5, Conversion::ToLimiter),
        Err(SnapshotError::TickMismatch {
            snapshot: 1_000_000,
            limiter: 1_000_000_000
        })
    ));
    let same = MutexLimiter::<u64>::with_options(window, millis);
    assert!(same.restore(&snapshot, 5, Conversion::Exact).is_ok());
    let unspecified = MutexLimiter::<u64>::new(limit(2, 10));
    assert!(
        unspecified.restore(&snapshot, 5, Conversion::Exact).is_ok(),
        "a limiter told no tick length does not check it"
    );
}

#[test]
fn string_keys_are_asked_with_str() {
    let l = limit(1, 10);
    let lock_free = LockFreeLimiter::<String>::new(l);
    let per_key = PerKeyLockLimiter::<String>::new(l);
    let mutex = MutexLimiter::<String>::new(l);
    let rwlock = RwLockLimiter::<String>::new(l);
    assert!(lock_free.check_and_hit("user-1", 5));
    assert!(!lock_free.allowed("user-1", 6));
    assert_eq!(lock_free.status("user-1", 6).remaining, 0);
    assert!(per_key.check_and_hit("user-1", 5));
    assert!(!per_key.check_and_hit("user-1", 6));
    assert!(mutex.check_and_hit("user-1", 5));
    assert!(!mutex.allowed("user-1", 6));
    assert!(rwlock.check_and_hit("user-1", 5));
    assert_eq!(rwlock.status("user-1", 6).count, 1);
    // The owned key and the borrowed one are the same key.
    assert!(!RateLimiter::check_and_hit(
        &lock_free,
        &"user-1".to_string(),
        7
    ));
    assert!(!RateLimiter::check_and_hit(
        &mutex,
        &"user-1".to_string(),
        7
    ));
    assert_eq!(lock_free.tracked_keys() + mutex.tracked_keys(), 2);
}
