//! Races for the last slots: many threads released together call `check_and_hit` at the same
//! tick, and exactly as many win as there were free slots, round after round, against every
//! variant and against the atomic ring alone.
//!
//! # What these tests can and cannot show about the CAS retry path
//! A thread that loses a slot CAS re-reads that slot and probes on; a broken ring that
//! refused on a lost CAS would admit fewer than the free slots (or refuse the newest of
//! several racers), and a ring that stored without a CAS would admit more. Those outcomes are
//! asserted here, on every round. But a correct ring is linearizable: every outcome of a
//! round where some CAS failed and was retried is also the outcome of some order without any
//! failure, so no answer, status or slot value can show that the retry path actually ran.
//! What the tests do establish is that the calls really overlapped in time (each racer takes
//! a ticket from one shared counter before and after its call; two calls overlapped when
//! each started before the other ended), and, through the ring's own counter of lost CASes
//! (`AtomicRing::lost_races`), that the retry path really ran while every round still
//! admitted exactly the free slots. The loom models (R1/R2 and the mutant
//! `ring_cas_loser_refuses`) cover the retry path exhaustively on tiny instances.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread;

use slidelimit::raw::{AtomicRing, AtomicWindow};
use slidelimit::Options;

use crate::variants::{all_variants, limit};

const RACERS: usize = 8;
/// Rounds run at least this many times, then until enough of them overlapped.
const MIN_ROUNDS: u64 = 100;
/// Stop once this many rounds overlapped (after `MIN_ROUNDS`)...
const ENOUGH_OVERLAPS: u64 = 20;
/// ...or after this many rounds, whichever comes first.
const MAX_ROUNDS: u64 = 3000;

/// Releases `RACERS` threads together; each makes one call. Returns each racer's answer and
/// whether any two calls overlapped in time.
fn race(call: impl Fn(usize) -> bool + Sync) -> (Vec<bool>, bool) {
    let ready = AtomicUsize::new(0);
    let tickets = AtomicU64::new(0);
    let results: Vec<(bool, u64, u64)> = thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|racer| {
                let (ready, tickets, call) = (&ready, &tickets, &call);
                scope.spawn(move || {
                    // AcqRel/Acquire: a start line; the answers travel through the joins.
                    ready.fetch_add(1, Ordering::AcqRel);
                    while ready.load(Ordering::Acquire) < RACERS {
                        thread::yield_now();
                    }
                    // AcqRel: one total order of tickets (a single RMW location) is all the
                    // overlap test needs.
                    let before = tickets.fetch_add(1, Ordering::AcqRel);
                    let answer = call(racer);
                    let after = tickets.fetch_add(1, Ordering::AcqRel);
                    (answer, before, after)
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|racer| racer.join().expect("racer panicked"))
            .collect()
    });
    let overlapped = results
        .iter()
        .enumerate()
        .any(|(i, a)| results[i + 1..].iter().any(|b| a.1 < b.2 && b.1 < a.2));
    (
        results.into_iter().map(|(answer, ..)| answer).collect(),
        overlapped,
    )
}

/// Runs `round` (which returns whether its race overlapped) until enough rounds overlapped,
/// then asserts that some did.
fn rounds(what: &str, mut round: impl FnMut(u64) -> bool) {
    let mut overlapped = 0;
    let mut played = 0;
    while played < MAX_ROUNDS && (played < MIN_ROUNDS || overlapped < ENOUGH_OVERLAPS) {
        overlapped += u64::from(round(played));
        played += 1;
    }
    assert!(
        overlapped > 0,
        "{what}: no two calls overlapped in {played} rounds, so nothing raced"
    );
}

fn wins(answers: &[bool]) -> u64 {
    answers.iter().filter(|&&won| won).count() as u64
}

#[test]
fn racing_for_the_last_slots_admits_exactly_that_many() {
    const MAX: u64 = 5;
    const WINDOW: u64 = 1000;
    for limiter in all_variants::<u32>(limit(MAX, WINDOW), Options::default()) {
        let name = limiter.name();
        rounds(name, |round| {
            // A fresh tick each round: the previous round's hits have all expired.
            let now = 10_000 + round * 2 * WINDOW;
            for _ in 0..MAX - 2 {
                assert!(limiter.check_and_hit(&7, now), "{name}: round {round}");
            }
            let (answers, overlapped) = race(|_| limiter.check_and_hit(&7, now));
            assert_eq!(wins(&answers), 2, "{name}: round {round}: {answers:?}");
            assert_eq!(limiter.status(&7, now).count, MAX, "{name}: round {round}");
            assert!(!limiter.check_and_hit(&7, now), "{name}: round {round}");
            overlapped
        });
    }
}

#[test]
fn racing_to_create_a_key_admits_exactly_the_limit() {
    // Every racer meets a key nobody has seen: one atomic get-or-insert, one window.
    const MAX: u64 = 3;
    for limiter in all_variants::<u64>(limit(MAX, 100), Options::default()) {
        let name = limiter.name();
        rounds(name, |round| {
            let (answers, overlapped) = race(|_| limiter.check_and_hit(&round, 50));
            assert_eq!(wins(&answers), MAX, "{name}: round {round}: {answers:?}");
            assert_eq!(limiter.tracked_keys() as u64, round + 1, "{name}");
            overlapped
        });
    }
}

#[test]
fn the_atomic_ring_admits_exactly_its_free_slots_under_contention() {
    const MAX: u64 = 4;
    const WINDOW: u64 = 100;
    let ring = AtomicRing::new(limit(MAX, WINDOW));
    rounds("AtomicRing", |round| {
        let now = 1000 + round * WINDOW;
        let (answers, overlapped) = race(|_| ring.check_and_hit_n(now, 1).unwrap());
        assert_eq!(wins(&answers), MAX, "round {round}: {answers:?}");
        // Every slot holds this round's tick (encoded + 1), and the refusals' bound is exact.
        assert_eq!(
            ring.slot_values(),
            vec![now + 1; MAX as usize],
            "round {round}"
        );
        assert_eq!(ring.blocked_until_hint(), now + WINDOW, "round {round}");
        overlapped
    });
}

#[test]
fn the_atomic_ring_never_refuses_the_newest_of_several_racers() {
    // Limit 1 per 10, racers at ticks a window apart: whatever the order, the newest racer
    // finds the slot expired (every other value is at least a window older), so it must be
    // admitted; an older racer is admitted only if it went before every newer winner. A ring
    // that gave up after losing the slot's CAS to an older racer would refuse the newest.
    const WINDOW: u64 = 10;
    let ring = AtomicRing::new(limit(1, WINDOW));
    rounds("AtomicRing", |round| {
        let base = 1000 + round * WINDOW * RACERS as u64;
        let tick = |racer: usize| base + racer as u64 * WINDOW;
        let (answers, overlapped) = race(|racer| ring.check_and_hit_n(tick(racer), 1).unwrap());
        let newest = RACERS - 1;
        assert!(answers[newest], "round {round}: {answers:?}");
        assert_eq!(ring.slot_values(), vec![tick(newest) + 1], "round {round}");
        overlapped
    });
}

/// Debug builds only: release builds do not count lost races.
#[cfg(debug_assertions)]
#[test]
fn the_cas_retry_path_is_taken_and_still_admits_exactly_the_free_slots() {
    const MAX: u64 = 2;
    const WINDOW: u64 = 100;
    let ring = AtomicRing::new(limit(MAX, WINDOW));
    let mut round = 0;
    while ring.lost_races() == Some(0) && round < MAX_ROUNDS {
        let now = 1000 + round * WINDOW;
        let (answers, _) = race(|_| ring.check_and_hit_n(now, 1).unwrap());
        assert_eq!(wins(&answers), MAX, "round {round}: {answers:?}");
        round += 1;
    }
    assert!(
        ring.lost_races() > Some(0),
        "no slot CAS was ever lost in {round} rounds of {RACERS} racers: the retry path never ran"
    );
}
