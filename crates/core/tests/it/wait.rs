//! Waiting (`slidelimit::wait`, feature `tokio`) on every variant and both windows, under
//! tokio's paused clock, so every wake-up instant is exact: a waiter wakes when its key's
//! first tick with room begins, waiters on one key are admitted in arrival order, keys are
//! independent, impossible weights fail at once, a dropped wait records nothing and leaves no
//! queue behind, jitter stays in its bounds, and the waiter map drains.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use slidelimit::raw::Algorithm;
use slidelimit::wait::{AsyncLimiter, TokioClock, WaitError};
use slidelimit::{
    Clock, ExactLog, LimitControl, LockFreeLimiter, Options, RollingBuckets, WeightError,
};
use slidelimit_mutex::MutexLimiter;
use slidelimit_per_key_lock::PerKeyLockLimiter;
use slidelimit_rwlock::RwLockLimiter;
use tokio::time::{sleep, sleep_until, timeout, Instant};

use crate::variants::{limit, no_auto_sweep};

const MS: Duration = Duration::from_millis(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

type Shared = Arc<dyn LimitControl<u64>>;
type Waiting = Arc<AsyncLimiter<dyn LimitControl<u64>, u64>>;

/// The four variants with `window`.
fn variants_with<W: Algorithm>(window: W) -> Vec<Shared> {
    let options: Options = no_auto_sweep();
    vec![
        Arc::new(LockFreeLimiter::<u64, W>::with_options(
            window.clone(),
            options,
        )),
        Arc::new(MutexLimiter::<u64, W>::with_options(
            window.clone(),
            options,
        )),
        Arc::new(PerKeyLockLimiter::<u64, W>::with_options(
            window.clone(),
            options,
        )),
        Arc::new(RwLockLimiter::<u64, W>::with_options(window, options)),
    ]
}

/// Every variant with the exact log of `max_requests` per `window_ms`.
fn exact(max_requests: u64, window_ms: u64) -> Vec<Shared> {
    variants_with(ExactLog::new(limit(max_requests, window_ms)))
}

/// Every variant with `buckets` rolling buckets over `max_requests` per `window_ms`.
fn bucketed(max_requests: u64, window_ms: u64, buckets: u64) -> Vec<Shared> {
    variants_with(RollingBuckets::new(limit(max_requests, window_ms), buckets).unwrap())
}

/// Every variant with both windows.
fn every_limiter(max_requests: u64, window_ms: u64) -> Vec<Shared> {
    let mut all = exact(max_requests, window_ms);
    all.extend(bucketed(max_requests, window_ms, 10));
    all
}

/// An `AsyncLimiter` over `limiter`, in ticks of a millisecond from now.
fn waiting(limiter: &Shared) -> Waiting {
    Arc::new(AsyncLimiter::from_arc(
        Arc::clone(limiter),
        TokioClock::new(MS),
    ))
}

fn who(limiter: &Shared) -> String {
    format!("{} {}", limiter.name(), limiter.algorithm())
}

/// When a hit at tick 0 leaves a window of 100: at 100 from the exact log; from 10
/// buckets of 10 ticks with the default lateness of 1 bucket, when its bucket is recycled,
/// `B + 1 + L = 12` buckets after its own: at 120.
fn free_at(limiter: &Shared) -> u64 {
    if limiter.algorithm() == "exact" {
        100
    } else {
        120
    }
}

/// Milliseconds since `start`, exactly (the paused clock moves in whole milliseconds here).
fn ms_since(start: Instant) -> u64 {
    let elapsed = start.elapsed();
    assert_eq!(elapsed.subsec_nanos() % 1_000_000, 0, "{elapsed:?}");
    u64::try_from(elapsed.as_millis()).unwrap()
}

/// Spawns a waiter for `n` hits of `key` that logs `(name, ms since start)` when admitted.
fn spawn_waiter(
    waiting: &Waiting,
    key: u64,
    n: u64,
    name: &'static str,
    start: Instant,
    log: &Arc<Mutex<Vec<(&'static str, u64)>>>,
) -> tokio::task::JoinHandle<()> {
    let (waiting, log) = (Arc::clone(waiting), Arc::clone(log));
    tokio::spawn(async move {
        waiting.until_ready_n(&key, n).await.expect("admitted");
        log.lock().unwrap().push((name, ms_since(start)));
    })
}

/// Lets every task that can run now run, without moving the paused clock.
async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_waiter_on_a_full_key_wakes_exactly_when_the_oldest_hit_leaves() {
    for limiter in exact(2, 1_000) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        waiting.until_ready(&7).await.unwrap();
        sleep(ms(300)).await;
        waiting.until_ready(&7).await.unwrap();
        assert_eq!(ms_since(start), 300, "{who}: room, no wait");
        waiting.until_ready(&7).await.unwrap();
        assert_eq!(ms_since(start), 1_000, "{who}: the hit at 0 left at 1000");
        waiting.until_ready(&7).await.unwrap();
        assert_eq!(ms_since(start), 1_300, "{who}: the hit at 300 left at 1300");
        let status = limiter.status(&7, waiting.clock().now_ticks());
        assert_eq!((status.count, status.retry_after_ticks), (2, 700), "{who}");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn nanosecond_ticks_wake_exactly_at_millisecond_boundaries() {
    // Tokio's timer serves whole milliseconds: with a window of whole milliseconds,
    // nanosecond ticks are exact too.
    let limiter = LockFreeLimiter::<u64>::new(limit(1, 250_000_000));
    let waiting = AsyncLimiter::new(limiter, Duration::from_nanos(1));
    let start = Instant::now();
    waiting.until_ready(&1).await.unwrap();
    waiting.until_ready(&1).await.unwrap();
    assert_eq!(start.elapsed(), ms(250));
    assert_eq!(waiting.clock().now_ticks(), 250_000_000);
}

#[tokio::test(start_paused = true)]
async fn every_variant_and_both_windows_wake_at_their_retry_after() {
    for limiter in every_limiter(3, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        for at in [5, 37, 61] {
            sleep_until(start + ms(at)).await;
            waiting.until_ready(&1).await.unwrap();
        }
        sleep_until(start + ms(70)).await;
        let retry_after = limiter.status(&1, 70).retry_after_ticks;
        assert!(retry_after > 0, "{who}: full");
        waiting.until_ready(&1).await.unwrap();
        assert_eq!(ms_since(start), 70 + retry_after, "{who}");
        // The exact log frees the hit at 5 at 105; the buckets recycle its bucket (epoch 0)
        // at 120 (see `free_at`).
        let expected = if limiter.algorithm() == "exact" {
            105
        } else {
            120
        };
        assert_eq!(ms_since(start), expected, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn waiters_on_one_key_are_admitted_in_arrival_order() {
    for limiter in every_limiter(1, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        let log = Arc::new(Mutex::new(Vec::new()));
        waiting.until_ready(&1).await.unwrap();
        let mut tasks = Vec::new();
        for name in ["a", "b", "c", "d", "e"] {
            tasks.push(spawn_waiter(&waiting, 1, 1, name, start, &log));
            sleep(MS).await;
        }
        assert_eq!(waiting.waiters(&1), 5, "{who}: all five queued");
        for task in tasks {
            task.await.unwrap();
        }
        // Each admission at `free` after the one before (the buckets: from its bucket's start).
        let free = free_at(&limiter);
        let expected: Vec<(&str, u64)> = ["a", "b", "c", "d", "e"]
            .into_iter()
            .zip((1..).map(|i| i * free))
            .collect();
        assert_eq!(*log.lock().unwrap(), expected, "{who}");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_newcomer_does_not_overtake_a_sleeping_waiter_but_a_synchronous_caller_does() {
    for limiter in every_limiter(1, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        let log = Arc::new(Mutex::new(Vec::new()));
        waiting.until_ready(&1).await.unwrap();
        let first = spawn_waiter(&waiting, 1, 1, "first", start, &log);
        sleep(ms(50)).await;
        // Room appears at 50; the first waiter sleeps on until 100, when it computed it would.
        limiter.set_limit(limit(3, 100));
        let newcomer = spawn_waiter(&waiting, 1, 1, "newcomer", start, &log);
        settle().await;
        assert_eq!(waiting.waiters(&1), 2, "{who}: the newcomer queued behind");
        assert!(
            limiter.check_and_hit(&1, 50),
            "{who}: synchronous callers are not queued"
        );
        first.await.unwrap();
        newcomer.await.unwrap();
        let free = free_at(&limiter);
        let expected = vec![("first", free), ("newcomer", free)];
        assert_eq!(*log.lock().unwrap(), expected, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_heavy_head_holds_back_lighter_waiters_behind_it() {
    // 10 per 100 ms in buckets of 10 ms, each recycled 12 buckets after its own (see
    // `free_at`): 4 at 0, 6 at 50. Weight 5 fits once the bucket of 50 is recycled (170);
    // weight 1 alone would fit once the bucket of 0 is (120), but it arrived second.
    for limiter in bucketed(10, 100, 10) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        let log = Arc::new(Mutex::new(Vec::new()));
        waiting.until_ready_n(&1, 4).await.unwrap();
        sleep(ms(50)).await;
        waiting.until_ready_n(&1, 6).await.unwrap();
        sleep(ms(10)).await;
        let heavy = spawn_waiter(&waiting, 1, 5, "heavy", start, &log);
        sleep(MS).await;
        let light = spawn_waiter(&waiting, 1, 1, "light", start, &log);
        heavy.await.unwrap();
        light.await.unwrap();
        let expected = vec![("heavy", 170), ("light", 170)];
        assert_eq!(*log.lock().unwrap(), expected, "{who}");
        assert_eq!(limiter.status(&1, 170).count, 6, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn keys_are_independent() {
    for limiter in every_limiter(1, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        let log = Arc::new(Mutex::new(Vec::new()));
        waiting.until_ready(&1).await.unwrap();
        let blocked = spawn_waiter(&waiting, 1, 1, "key 1", start, &log);
        settle().await;
        assert_eq!(waiting.waiting_keys(), 1, "{who}");
        sleep(ms(30)).await;
        waiting.until_ready(&2).await.unwrap();
        assert_eq!(ms_since(start), 30, "{who}: key 2 has room and no waiters");
        let other = spawn_waiter(&waiting, 2, 1, "key 2", start, &log);
        settle().await;
        assert_eq!(waiting.waiting_keys(), 2, "{who}");
        blocked.await.unwrap();
        other.await.unwrap();
        let free = free_at(&limiter);
        let expected = vec![("key 1", free), ("key 2", 30 + free)];
        assert_eq!(*log.lock().unwrap(), expected, "{who}");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn weights_on_buckets_wait_until_enough_has_left() {
    // 10 per 100 ms in buckets of 10 ms, each recycled 12 buckets after its own (see
    // `free_at`): 3 at 0, 3 at 20, 4 at 40. Weight 5 needs the buckets of 0 and 20
    // recycled: 140. Weight 10 then needs those of 40 (160) and of the 5 at 140: 260.
    for limiter in bucketed(10, 100, 10) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        for (at, n) in [(0, 3), (20, 3), (40, 4)] {
            sleep_until(start + ms(at)).await;
            waiting.until_ready_n(&1, n).await.unwrap();
            assert_eq!(ms_since(start), at, "{who}: room for {n} at {at}");
        }
        waiting.until_ready_n(&1, 5).await.unwrap();
        assert_eq!(ms_since(start), 140, "{who}");
        waiting.until_ready_n(&1, 10).await.unwrap();
        assert_eq!(ms_since(start), 260, "{who}");
        assert_eq!(limiter.status(&1, 260).count, 10, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn impossible_weights_fail_at_once_even_behind_waiters() {
    for limiter in every_limiter(5, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        waiting.until_ready(&1).await.unwrap();
        let mut tasks = Vec::new();
        for _ in 0..5 {
            let waiting = Arc::clone(&waiting);
            tasks.push(tokio::spawn(async move {
                waiting.until_ready(&1).await.unwrap();
            }));
        }
        settle().await;
        assert!(waiting.waiters(&1) > 0, "{who}: the key has a queue");
        let exact = limiter.algorithm() == "exact";
        if exact {
            let unsupported = WaitError::Weight(WeightError::Unsupported { n: 2 });
            assert_eq!(
                waiting.until_ready_n(&1, 2).await,
                Err(unsupported),
                "{who}"
            );
        }
        let zero = WaitError::Weight(WeightError::Zero);
        assert_eq!(waiting.until_ready_n(&1, 0).await, Err(zero), "{who}");
        let six = waiting.until_ready_n(&1, 6).await;
        let expected = if exact {
            WeightError::Unsupported { n: 6 }
        } else {
            WeightError::ExceedsLimit {
                n: 6,
                max_requests: 5,
            }
        };
        assert_eq!(six, Err(WaitError::Weight(expected)), "{who}");
        assert_eq!(ms_since(start), 0, "{who}: no error waited");
        for task in tasks {
            task.await.unwrap();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_weight_above_the_keys_own_limit_is_never_admitted() {
    for limiter in bucketed(10, 100, 10) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        limiter.set_limit_for(&1, limit(3, 100));
        let never = WaitError::NeverAdmitted { n: 4 };
        assert_eq!(waiting.until_ready_n(&1, 4).await, Err(never), "{who}");
        assert_eq!(limiter.status(&1, 0).count, 0, "{who}");

        // Lowered while waiting: the waiter finds out when it wakes.
        let start = Instant::now();
        waiting.until_ready_n(&2, 10).await.unwrap();
        let task = {
            let waiting = Arc::clone(&waiting);
            tokio::spawn(async move { waiting.until_ready_n(&2, 5).await })
        };
        settle().await;
        limiter.set_limit_for(&2, limit(4, 100));
        let never = WaitError::NeverAdmitted { n: 5 };
        assert_eq!(task.await.unwrap(), Err(never), "{who}");
        assert_eq!(ms_since(start), 120, "{who}: found at the wake-up");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_dropped_wait_records_nothing_and_leaves_no_queue() {
    for limiter in every_limiter(1, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        waiting.until_ready(&1).await.unwrap();
        // Dropped while sleeping at the head of the queue.
        let cut = timeout(ms(50), waiting.until_ready(&1)).await;
        assert!(cut.is_err(), "{who}: the wait was cut short");
        assert_eq!(limiter.status(&1, 50).count, 1, "{who}: nothing recorded");
        assert_eq!(waiting.waiting_keys(), 0, "{who}: no queue left");

        // Dropped while queued behind a head, and a head dropped with a waiter behind it.
        let log = Arc::new(Mutex::new(Vec::new()));
        let head = {
            let waiting = Arc::clone(&waiting);
            tokio::spawn(async move { waiting.until_ready(&1).await })
        };
        settle().await;
        let queued = timeout(ms(20), waiting.until_ready(&1)).await;
        assert!(queued.is_err(), "{who}");
        assert_eq!(waiting.waiters(&1), 1, "{who}: only the head is left");
        let behind = spawn_waiter(&waiting, 1, 1, "behind", start, &log);
        settle().await;
        assert_eq!(waiting.waiters(&1), 2, "{who}");
        head.abort();
        assert!(head.await.unwrap_err().is_cancelled(), "{who}");
        assert_eq!(waiting.waiters(&1), 1, "{who}: the head left");
        behind.await.unwrap();
        let free = free_at(&limiter);
        assert_eq!(*log.lock().unwrap(), vec![("behind", free)], "{who}");
        assert_eq!(limiter.status(&1, free).count, 1, "{who}: one admission");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_fails_at_once_when_the_room_comes_too_late() {
    for limiter in every_limiter(1, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let start = Instant::now();
        let free = free_at(&limiter);
        waiting.until_ready(&1).await.unwrap();
        let late = waiting.until_ready_by(&1, start + ms(free - 1)).await;
        assert_eq!(late, Err(WaitError::DeadlineExceeded), "{who}");
        assert_eq!(ms_since(start), 0, "{who}: known without sleeping");
        assert_eq!(limiter.status(&1, 0).count, 1, "{who}: nothing recorded");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
        waiting.until_ready_by(&1, start + ms(free)).await.unwrap();
        assert_eq!(
            ms_since(start),
            free,
            "{who}: a deadline at the instant itself"
        );
        let past = waiting.until_ready_by(&2, start).await;
        assert_eq!(
            past,
            Err(WaitError::DeadlineExceeded),
            "{who}: even with room"
        );
        assert_eq!(limiter.status(&2, free).count, 0, "{who}");

        // Queued behind a waiter who takes the room at 2 free: a deadline half a window
        // later than now passes in line.
        let head = {
            let waiting = Arc::clone(&waiting);
            tokio::spawn(async move { waiting.until_ready(&1).await })
        };
        settle().await;
        let queued = waiting.until_ready_by(&1, start + ms(free + 50)).await;
        assert_eq!(queued, Err(WaitError::DeadlineExceeded), "{who}");
        assert_eq!(ms_since(start), free + 50, "{who}");
        head.await.unwrap().unwrap();
        assert_eq!(ms_since(start), 2 * free, "{who}");
        assert_eq!(limiter.status(&1, 2 * free).count, 1, "{who}");
        assert_eq!(waiting.waiting_keys(), 0, "{who}");
    }
}

#[tokio::test(start_paused = true)]
async fn jitter_delays_each_sleep_within_its_bound_and_repeats_with_its_seed() {
    async fn admissions(seed: u64) -> Vec<u64> {
        let limiter = LockFreeLimiter::<u64>::new(limit(1, 100));
        let waiting = AsyncLimiter::new(limiter, MS).with_seeded_jitter(ms(30), seed);
        assert_eq!(waiting.jitter(), ms(30));
        let start = Instant::now();
        let mut at = Vec::new();
        for _ in 0..20 {
            waiting.until_ready(&1).await.unwrap();
            at.push(ms_since(start));
        }
        at
    }
    let at = admissions(7).await;
    assert_eq!(at[0], 0, "the first call has room and does not sleep");
    for pair in at.windows(2) {
        let delay = pair[1] - pair[0] - 100;
        assert!(delay <= 30, "{at:?}: jitter above its bound");
    }
    let delays: Vec<u64> = at.windows(2).map(|p| p[1] - p[0] - 100).collect();
    assert!(
        delays.iter().any(|&d| d >= 15),
        "{delays:?}: jitter spreads"
    );
    assert_eq!(admissions(7).await, at, "the same seed, the same delays");
    assert_ne!(admissions(8).await, at, "another seed, other delays");

    let unseeded = AsyncLimiter::new(LockFreeLimiter::<u64>::new(limit(1, 100)), MS)
        .with_jitter(ms(10))
        .with_jitter(Duration::ZERO);
    assert_eq!(
        unseeded.jitter(),
        Duration::ZERO,
        "a zero bound turns it off"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_cuts_jitter_short() {
    let limiter = LockFreeLimiter::<u64>::new(limit(1, 100));
    let waiting = AsyncLimiter::new(limiter, MS).with_seeded_jitter(Duration::from_secs(60), 1);
    let start = Instant::now();
    waiting.until_ready(&1).await.unwrap();
    waiting.until_ready_by(&1, start + ms(100)).await.unwrap();
    assert_eq!(ms_since(start), 100);
}

#[tokio::test(start_paused = true)]
async fn the_waiter_map_follows_the_keys_being_waited_on() {
    for limiter in every_limiter(2, 100) {
        let who = who(&limiter);
        let waiting = waiting(&limiter);
        let mut tasks = Vec::new();
        for key in 0..50u64 {
            for _ in 0..4 {
                let waiting = Arc::clone(&waiting);
                tasks.push(tokio::spawn(async move {
                    waiting.until_ready(&key).await.unwrap();
                }));
            }
        }
        settle().await;
        // Each key admitted two at once; the other two wait.
        assert_eq!(waiting.waiting_keys(), 50, "{who}");
        assert!((0..50).all(|key| waiting.waiters(&key) == 2), "{who}");
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(waiting.waiting_keys(), 0, "{who}: drained");
        let now = waiting.clock().now_ticks();
        assert!(
            (0..50).all(|key| limiter.status(&key, now).count == 2),
            "{who}"
        );
    }
}

#[test]
fn futures_are_send_and_the_limiter_is_shareable() {
    fn send<T: Send>(_: &T) {}
    fn shareable<T: Send + Sync>() {}
    shareable::<AsyncLimiter<LockFreeLimiter<String>, String>>();
    shareable::<Waiting>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let waiting = runtime
        .block_on(async { AsyncLimiter::new(LockFreeLimiter::<String>::new(limit(1, 10)), MS) });
    send(&waiting.until_ready(&"a".to_owned()));
    send(&waiting.until_ready_n_by(&"a".to_owned(), 1, Instant::now()));
    let debug = format!("{waiting:?}");
    assert!(debug.starts_with("AsyncLimiter"), "{debug}");
}

/// A limit built from durations carries its tick: waiting on it with a clock of another tick
/// would make every window last the wrong time, so `AsyncLimiter::new` refuses it at once,
/// naming the fix; the same limit converted, or a clock of its tick, is taken.
#[tokio::test(start_paused = true)]
async fn a_limit_in_another_tick_is_refused_where_the_waiter_is_built() {
    let in_ms = slidelimit::Limit::per_second(2, MS).expect("valid limit");
    let refused = std::panic::catch_unwind(|| {
        AsyncLimiter::new(LockFreeLimiter::<u64>::new(in_ms), Duration::from_nanos(1))
    })
    .expect_err("a limit in milliseconds under a nanosecond clock");
    let message = refused
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(message.contains("in_ticks_of(1ns)"), "{message}");
    let in_ns = in_ms
        .in_ticks_of(Duration::from_nanos(1))
        .expect("whole nanoseconds");
    let waiting = AsyncLimiter::new(LockFreeLimiter::<u64>::new(in_ns), Duration::from_nanos(1));
    assert_eq!(waiting.until_ready(&1).await, Ok(()));
    let _ = AsyncLimiter::new(LockFreeLimiter::<u64>::new(in_ms), MS);
}
