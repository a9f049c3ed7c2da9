//! Loom models of the exact log's atomic form (`AtomicRing`): R1–R6, with W = 10 and explicit ticks.
//!
//! Every model runs the core's real ring code through its `sync` shim, then checks at
//! quiescence: the window oracle over every admitted tick, slot values only grew, the
//! `blocked_until` hint is at most the oldest slot + W, and every refusal is justified by the
//! final slots. Negative controls (built only with `--cfg slidelimit_loom_mutant="..."`) run
//! the same models against the core's deliberately broken variants and must panic.

#![cfg(slidelimit_loom)]

use loom::sync::Arc;
use loom::thread;
use slidelimit::raw::{AtomicRing, AtomicWindow};
use slidelimit::Limit;
use slidelimit_loom::{
    assert_blocked_until_bound, assert_refusal_justified, assert_slots_grew, assert_window_safe,
    check, slot_value, RingState, WINDOW_TICKS,
};

/// One call a model thread makes on the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// `check_and_hit(now)`.
    CheckAndHit(u64),
    /// `hit(now)`: records unconditionally.
    Hit(u64),
}

/// A ring scenario: the limit, the `check_and_hit` ticks admitted before the threads start,
/// and each thread's calls, made in order.
struct Scenario {
    max_requests: usize,
    prefix: &'static [u64],
    threads: &'static [&'static [Op]],
}

/// What a scenario ended with.
struct Outcome {
    /// Each thread's calls with their answers (`hit` reports true).
    calls: Vec<Vec<(Op, bool)>>,
    /// The ring at quiescence.
    end: RingState,
}

impl Outcome {
    /// The ticks of the `check_and_hit` calls the threads got admitted.
    fn admitted(&self) -> Vec<u64> {
        self.calls
            .iter()
            .flatten()
            .filter_map(|&(op, answer)| match op {
                Op::CheckAndHit(now) if answer => Some(now),
                _ => None,
            })
            .collect()
    }
}

/// Runs one execution of `scenario` and applies the checks every ring model shares.
fn run(scenario: &Scenario) -> Outcome {
    let limit = Limit::new(scenario.max_requests as u64, WINDOW_TICKS).unwrap();
    let ring = Arc::new(AtomicRing::new(limit));
    for &now in scenario.prefix {
        assert_eq!(
            ring.check_and_hit_n(now, 1),
            Ok(true),
            "prefix check_and_hit({now})"
        );
    }
    let start = RingState::of(&ring);

    let handles: Vec<_> = scenario
        .threads
        .iter()
        .map(|&ops| {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                ops.iter()
                    .map(|&op| match op {
                        // Nothing seals a bare ring, so `Retired` would be a bug.
                        Op::CheckAndHit(now) => {
                            (op, ring.check_and_hit_n(now, 1).expect("no sweeper here"))
                        }
                        Op::Hit(now) => {
                            ring.hit_n(now, 1).expect("no sweeper here");
                            (op, true)
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let calls: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let outcome = Outcome {
        calls,
        end: RingState::of(&ring),
    };

    let mut admitted = scenario.prefix.to_vec();
    admitted.extend(outcome.admitted());
    assert_window_safe(&admitted, scenario.max_requests);
    assert_slots_grew(&start.slots, &outcome.end.slots);
    assert_blocked_until_bound(&outcome.end.slots, outcome.end.blocked_until);
    for &(op, answer) in outcome.calls.iter().flatten() {
        if let Op::CheckAndHit(now) = op {
            if !answer {
                assert_refusal_justified(now, &outcome.end.slots);
            }
        }
    }
    outcome
}

use Op::{CheckAndHit as Cah, Hit};

/// R1: two threads race for the last (only) slot: exactly one wins.
fn r1_last_slot() {
    check("ring::r1_last_slot", || {
        let out = run(&Scenario {
            max_requests: 1,
            prefix: &[],
            threads: &[&[Cah(10)], &[Cah(10)]],
        });
        assert_eq!(out.admitted().len(), 1, "exactly one of two takes the slot");
    });
}

/// R2: three threads, two free slots: a CAS loser re-probes and takes the other slot, so
/// exactly two are admitted, never fewer.
fn r2_cas_loser_reprobes() {
    check("ring::r2_cas_loser_reprobes", || {
        let out = run(&Scenario {
            max_requests: 2,
            prefix: &[],
            threads: &[&[Cah(10)], &[Cah(10)], &[Cah(10)]],
        });
        assert_eq!(out.admitted().len(), 2, "two slots, two admitted");
    });
}

/// R3: out-of-order timestamps from three threads, one slot: whatever order the CASes land
/// in, the oracle holds and exactly one is admitted (the empty slot goes to the first CAS).
fn r3_out_of_order() {
    check("ring::r3_out_of_order", || {
        let out = run(&Scenario {
            max_requests: 1,
            prefix: &[],
            threads: &[&[Cah(15)], &[Cah(8)], &[Cah(12)]],
        });
        assert_eq!(out.admitted().len(), 1, "the slot goes to exactly one");
    });
}

/// R4: a half-full ring (5 and a free slot) with callers at 14, 16 and 9: the oracle holds,
/// a refusal happens only over slots all live for it, and 16 (for which 5 has expired) is
/// always admitted.
fn r4_refusal_only_when_full() {
    check("ring::r4_refusal_only_when_full", || {
        let out = run(&Scenario {
            max_requests: 2,
            prefix: &[5],
            threads: &[&[Cah(14)], &[Cah(16)], &[Cah(9)]],
        });
        assert!(out.admitted().contains(&16), "16 always finds a slot");
    });
}

/// R5: `hit` replaces the true minimum while a `check_and_hit` races it for that very slot:
/// slots 3 and 6, `hit(12)` against `check_and_hit(13)` (3 has expired for it) and a late
/// `check_and_hit(7)`. Whatever wins, the ring ends holding the two newest hits, so neither
/// the admitted hit nor the recorded one is lost.
fn r5_hit_replaces_minimum() {
    check("ring::r5_hit_replaces_minimum", || {
        let out = run(&Scenario {
            max_requests: 2,
            prefix: &[3, 6],
            threads: &[&[Hit(12)], &[Cah(13)], &[Cah(7)]],
        });
        let mut recorded = vec![3, 6, 12];
        recorded.extend(out.admitted());
        recorded.sort_unstable();
        let newest = recorded[recorded.len() - 2..].to_vec();
        assert_eq!(
            out.end.ticks(),
            newest,
            "lost hit: the ring must hold the two newest of {recorded:?}"
        );
    });
}

/// R6: the `blocked_until` fast path never refuses once the oldest slot has expired. Slots 5
/// and 8; one thread is refused at 12 (raising the bound to 15) and then must be admitted at
/// 15; another is refused at 13 meanwhile. A bound taken from the wrong slot, or one kept
/// after the slot it came from expired, refuses 15.
fn r6_blocked_until_is_a_lower_bound() {
    check("ring::r6_blocked_until_is_a_lower_bound", || {
        let out = run(&Scenario {
            max_requests: 2,
            prefix: &[5, 8],
            threads: &[&[Cah(12), Cah(15)], &[Cah(13)]],
        });
        assert_eq!(
            out.calls[0],
            vec![(Cah(12), false), (Cah(15), true)],
            "unjustified refusal: 5 has expired for 15"
        );
        assert_eq!(out.calls[1], vec![(Cah(13), false)]);
        assert!(out.end.slots.contains(&slot_value(15)));
    });
}

#[test]
fn r1() {
    r1_last_slot();
}

#[test]
fn r2() {
    r2_cas_loser_reprobes();
}

#[test]
fn r3() {
    r3_out_of_order();
}

#[test]
fn r4() {
    r4_refusal_only_when_full();
}

#[test]
fn r5() {
    r5_hit_replaces_minimum();
}

#[test]
fn r6() {
    r6_blocked_until_is_a_lower_bound();
}

// Negative controls: they exist only in the build of their mutant (`ci/loom.sh` builds each
// one and runs only these), where the model must fail with the named check.

/// X1: a slot written by load-then-store instead of CAS lets both racers take the last slot.
#[test]
#[cfg(slidelimit_loom_mutant = "ring_store_not_cas")]
#[should_panic(expected = "window oracle:")]
fn mutant_ring_store_not_cas_caught_by_r1() {
    r1_last_slot();
}

/// X2: a CAS loser that refuses instead of re-probing is refused while a slot is free.
#[test]
#[cfg(slidelimit_loom_mutant = "ring_cas_loser_refuses")]
#[should_panic(expected = "unjustified refusal:")]
fn mutant_ring_cas_loser_refuses_caught_by_r2() {
    r2_cas_loser_reprobes();
}
