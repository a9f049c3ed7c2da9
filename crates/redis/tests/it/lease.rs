//! Quota leasing: round trips cut by the batch, give-back of unused permits, and the window
//! invariant across several leasing "processes" (limiters with separate state).

use std::sync::Arc;

use slidelimit::ManualClock;
use slidelimit_redis::{LeasedLimiter, Options, TimeSource};

use crate::over_admissions;
use crate::{limit, shared, TIMEOUT};
use slidelimit_trace::rng::SplitMix64;

fn leased(
    prefix: &str,
    max: u64,
    window: u64,
    batch: u64,
    d: u64,
    time: TimeSource,
) -> LeasedLimiter {
    // A lease needs the timeout below the expiry slack; the tests' timeout is generous.
    let options = Options::new()
        .prefix(prefix)
        .timeout(TIMEOUT)
        .expiry_slack(TIMEOUT * 2)
        .time(time);
    LeasedLimiter::new(&shared().url(), limit(max, window), options, batch, d).unwrap()
}

#[test]
fn a_batch_of_b_costs_one_round_trip() {
    let clock = Arc::new(ManualClock::new(1_000));
    let limiter = leased(
        "lease-trips",
        1_000,
        1_000_000,
        20,
        100_000,
        TimeSource::Caller(clock.clone()),
    );
    let mut admitted = 0;
    let mut remote = 0;
    for i in 0..200 {
        clock.set(1_000 + i);
        let decision = limiter.check_and_hit("k").unwrap();
        admitted += u64::from(decision.admitted);
        remote += u64::from(decision.remote);
    }
    assert_eq!(admitted, 200);
    assert_eq!(remote, 10, "one lease per 20 admissions");
    // Plus the script's load, if this test process had not loaded it yet.
    assert!(
        (10..=11).contains(&limiter.round_trips()),
        "{}",
        limiter.round_trips()
    );
}

#[test]
fn unused_permits_go_back_and_expired_leases_are_not_used() {
    let clock = Arc::new(ManualClock::new(10_000));
    let time = TimeSource::Caller(clock.clone());
    let a = leased("lease-back", 10, 1_000, 8, 100, time.clone());
    let b = leased("lease-back", 10, 1_000, 8, 100, time);
    let mut con = shared().connection();
    let card = |con: &mut redis::Connection| -> u64 {
        redis::cmd("ZCARD")
            .arg("lease-back:lease:{#k}:log")
            .query(con)
            .unwrap()
    };
    assert!(a.check_and_hit("k").unwrap().admitted);
    assert_eq!(card(&mut con), 8, "A leased 8");
    let from_b = b.check_and_hit("k").unwrap();
    assert!(from_b.admitted && from_b.remote);
    assert_eq!(card(&mut con), 10, "B got only the 2 left");
    assert!(b.check_and_hit("k").unwrap().admitted);
    let refused = b.check_and_hit("k").unwrap();
    assert!(
        !refused.admitted && refused.remote,
        "B's lease is spent, none left"
    );
    assert!(
        !b.check_and_hit("k").unwrap().remote,
        "refused locally until the retry-after"
    );
    // A's lease expires at 10_100: its unused 7 are not used, and its next lease gives them
    // back in the same round trip.
    clock.set(10_100);
    let again = a.check_and_hit("k").unwrap();
    assert!(again.remote);
    assert!(
        again.admitted,
        "A's own 7 came back and one was taken again"
    );
    assert_eq!(card(&mut con), 3 + 7, "1 + 2 used, then a new lease of 7");
    assert_eq!(a.release_all().unwrap(), 6);
    assert_eq!(card(&mut con), 4);
}

/// Four leasing limiters (each its own local state, as four processes would have) on a
/// shared clock, threads hammering skewed keys: every admission recorded at its local tick,
/// no window over the limit.
#[test]
fn several_leasing_processes_never_over_admit() {
    let max = 40;
    let window = 50_000; // 40 per 50 ms
    let handles: Vec<_> = (0..4u64)
        .map(|p| {
            std::thread::spawn(move || {
                let limiter = leased(
                    "lease-procs",
                    max,
                    window,
                    8,
                    5_000,
                    TimeSource::Caller(Arc::new(slidelimit_redis::UnixMicros::new())),
                );
                let mut admitted = Vec::new();
                let mut rng = SplitMix64::new(p + 11);
                let start = std::time::Instant::now();
                let mut calls = 0;
                while calls < 20_000 && start.elapsed() < std::time::Duration::from_millis(700) {
                    calls += 1;
                    let key = if rng.below(4) == 0 { "cold" } else { "hot" };
                    let decision = limiter.check_and_hit(key).unwrap();
                    if decision.admitted {
                        admitted.push((key, decision.now));
                    }
                    // Local decisions take a microsecond: pace the calls so the run spans
                    // many windows.
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
                admitted
            })
        })
        .collect();
    let all: Vec<(&str, u64)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    for key in ["hot", "cold"] {
        let ticks: Vec<(u64, u64)> = all
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|&(_, t)| (t, 1))
            .collect();
        assert!(
            ticks.len() > max as usize,
            "{key}: {} admitted",
            ticks.len()
        );
        assert_eq!(over_admissions(ticks, max, window), 0, "{key}");
    }
}

/// Two leasing limiters ("processes"), three threads each on one hot key: within a process
/// the threads meet each other's renewals (one renews without the key's lock, the others
/// wait for its lease or decide from the lease in hand), and still no window is over the
/// limit.
#[test]
fn threads_sharing_renewals_never_over_admit() {
    let max = 30;
    let window = 40_000; // 30 per 40 ms
    let processes: Vec<Arc<LeasedLimiter>> = (0..2)
        .map(|_| {
            Arc::new(leased(
                "lease-threads",
                max,
                window,
                6,
                4_000,
                TimeSource::Caller(Arc::new(slidelimit_redis::UnixMicros::new())),
            ))
        })
        .collect();
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let limiter = Arc::clone(&processes[t % 2]);
            std::thread::spawn(move || {
                let mut admitted = Vec::new();
                let start = std::time::Instant::now();
                let mut calls = 0;
                while calls < 20_000 && start.elapsed() < std::time::Duration::from_millis(600) {
                    calls += 1;
                    let decision = limiter.check_and_hit("hot").unwrap();
                    if decision.admitted {
                        admitted.push((decision.now, 1));
                    }
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
                admitted
            })
        })
        .collect();
    let all: Vec<(u64, u64)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(all.len() > max as usize, "{} admitted", all.len());
    assert_eq!(over_admissions(all, max, window), 0);
}

/// A key that expired (here: deleted) and was recreated numbers its members anew; a give-back
/// of a lease from its earlier life must not remove the new life's members.
#[test]
fn a_give_back_never_touches_a_reborn_key() {
    let clock = Arc::new(ManualClock::new(10_000));
    let time = TimeSource::Caller(clock.clone());
    let a = leased("lease-reborn", 10, 1_000, 8, 100, time.clone());
    let b = leased("lease-reborn", 10, 1_000, 8, 100, time);
    let mut con = shared().connection();
    assert!(
        a.check_and_hit("k").unwrap().admitted,
        "A leases 8 (members 1..=8)"
    );
    let _: () = redis::cmd("DEL")
        .arg("lease-reborn:lease:{#k}:log")
        .arg("lease-reborn:lease:{#k}:meta")
        .query(&mut con)
        .unwrap();
    clock.set(10_001);
    assert!(
        b.check_and_hit("k").unwrap().admitted,
        "B leases 8 of the new life (1..=8)"
    );
    clock.set(10_100);
    let again = a.check_and_hit("k").unwrap();
    assert!(
        again.remote && again.admitted,
        "A's next lease: only the 2 left"
    );
    let card: u64 = redis::cmd("ZCARD")
        .arg("lease-reborn:lease:{#k}:log")
        .query(&mut con)
        .unwrap();
    assert_eq!(card, 10, "B's 8 members untouched, A's new 2");
}

/// The proof's boundary, tick by tick: a lease serves requests only in `[t_l, t_l + d)`,
/// and holds its permits in the lease log for `W + d`, so the last request of one lease and
/// the first of the next lease of the full quota are at least `W` apart.
#[test]
fn a_lease_serves_only_its_own_span_and_blocks_for_w_plus_d() {
    let (max, window, d) = (3, 100, 20);
    let clock = Arc::new(ManualClock::new(1_000));
    let time = TimeSource::Caller(clock.clone());
    let a = leased("lease-span", max, window, max, d, time.clone());
    let b = leased("lease-span", max, window, max, d, time);
    let mut admitted = Vec::new();
    // A leases the whole quota at 1_000 and uses it at the end of its span.
    assert!(a.check_and_hit("k").unwrap().admitted);
    admitted.push((1_000, 1));
    clock.set(1_000 + d - 1);
    for _ in 0..2 {
        let decision = a.check_and_hit("k").unwrap();
        assert!(decision.admitted && !decision.remote);
        admitted.push((decision.now, 1));
    }
    // A used the whole quota; B finds none until W + d after the lease (not W after the
    // last use: the lease log cannot know when within its span a permit was used).
    clock.set(1_000 + window + d - 1);
    assert!(
        !b.check_and_hit("k").unwrap().admitted,
        "the lease log still holds 3"
    );
    clock.set(1_000 + window + d);
    let next = b.check_and_hit("k").unwrap();
    assert!(next.admitted && next.remote);
    admitted.push((next.now, 1));
    assert_eq!(over_admissions(admitted, max, window), 0);
}
