//! Loom models of the rolling-bucket window's atomic form (`AtomicBuckets`): B1–B6, with
//! W = 10, B = 2 (buckets of 5 ticks)
//! and explicit ticks, weights included.
//!
//! Every model runs the core's real bucket code through its `sync` shim, then checks at
//! quiescence: the window oracle over the admitted weight (prefix included), the running
//! total equals the sum of the buckets (`total drift:`), and recycling is complete
//! (`recycling incomplete:`). A total that would go below zero trips the core's own
//! `total underflow:` debug assertion (the models run with `-C debug-assertions`).
//! Negative controls (built only with `--cfg slidelimit_loom_mutant="..."`) run the same
//! models against the core's deliberately broken variants and must panic.
//!
//! Refusals are checked only where a model pins the expected answer: under concurrency a
//! refusal may also count weight whose bucket another thread is recycling at that instant
//! (a transient false negative the bucket module documents).

#![cfg(slidelimit_loom)]

use loom::sync::Arc;
use loom::thread;
use slidelimit::raw::{Algorithm, AtomicBuckets, AtomicWindow};
use slidelimit::{Limit, RollingBuckets};
use slidelimit_loom::{check, WINDOW_TICKS};

/// Buckets per window: 2 buckets of 5 ticks.
const BUCKETS: u64 = 2;

/// One call a model thread makes on the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// `check_and_hit_n(now, n)`.
    CheckAndHit(u64, u64),
    /// `hit_n(now, n)`: records unconditionally.
    Hit(u64, u64),
}

use Op::{CheckAndHit as Cah, Hit};

/// A scenario: the limit, the lateness `L` (physical buckets `3 + L`), the calls made before
/// the threads start with the answers they must get, and each thread's calls, in order.
struct Scenario {
    max_requests: u64,
    lateness: u64,
    prefix: &'static [(Op, bool)],
    threads: &'static [&'static [Op]],
}

/// What a scenario ended with: each thread's calls with their answers (`hit` reports true).
struct Outcome {
    calls: Vec<Vec<(Op, bool)>>,
}

impl Outcome {
    /// `(tick, weight)` of the `check_and_hit` calls the threads got admitted.
    fn admitted(&self) -> Vec<(u64, u64)> {
        self.calls
            .iter()
            .flatten()
            .filter_map(|&(op, answer)| match op {
                Cah(now, n) if answer => Some((now, n)),
                _ => None,
            })
            .collect()
    }
}

/// The weighted window oracle: no interval `(x - W, x]` holds more than `max_requests` of the
/// admitted weight.
///
/// # Panics
/// `window oracle:` when some interval holds more.
fn assert_window_safe(admitted: &[(u64, u64)], max_requests: u64) {
    for &(first, _) in admitted {
        let inside: u64 = admitted
            .iter()
            .filter(|&&(t, _)| first <= t && t < first + WINDOW_TICKS)
            .map(|&(_, n)| n)
            .sum();
        assert!(
            inside <= max_requests,
            "window oracle: weight {inside} admitted in [{first}, {}) with max_requests {max_requests}; admitted {admitted:?}",
            first + WINDOW_TICKS
        );
    }
}

/// The books at quiescence: total == sum of the buckets, head == cleaned.
///
/// # Panics
/// `total drift:` or `recycling incomplete:`.
fn assert_quiescent_books(window: &AtomicBuckets) {
    let (total, counts) = window.quiescent_totals();
    assert_eq!(
        total, counts,
        "total drift: running total {total} but the buckets hold {counts}"
    );
    let (head, cleaned) = window.quiescent_epochs();
    assert_eq!(
        head, cleaned,
        "recycling incomplete: head epoch {head}, cleaned {cleaned}"
    );
}

/// Applies `op`; nothing seals a bare window, so `Retired` would be a bug.
fn apply(window: &AtomicBuckets, op: Op) -> bool {
    match op {
        Cah(now, n) => window
            .check_and_hit_n(now, n)
            .expect("only a sweeper seals, and these models have none"),
        Hit(now, n) => {
            window
                .hit_n(now, n)
                .expect("only a sweeper seals, and these models have none");
            true
        }
    }
}

/// Runs one execution of `scenario` and applies the checks every bucket model shares.
fn run(scenario: &Scenario) -> Outcome {
    let limit = Limit::new(scenario.max_requests, WINDOW_TICKS).unwrap();
    let config = RollingBuckets::new(limit, BUCKETS)
        .unwrap()
        .lateness_buckets(scenario.lateness)
        .unwrap();
    let window = Arc::new(config.new_atomic());
    let mut admitted = Vec::new();
    for &(op, expected) in scenario.prefix {
        assert_eq!(apply(&window, op), expected, "prefix {op:?}");
        if let (Cah(now, n), true) = (op, expected) {
            admitted.push((now, n));
        }
    }

    let handles: Vec<_> = scenario
        .threads
        .iter()
        .map(|&ops| {
            let window = Arc::clone(&window);
            thread::spawn(move || {
                ops.iter()
                    .map(|&op| (op, apply(&window, op)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let outcome = Outcome {
        calls: handles.into_iter().map(|h| h.join().unwrap()).collect(),
    };

    admitted.extend(outcome.admitted());
    assert_window_safe(&admitted, scenario.max_requests);
    assert_quiescent_books(&window);
    outcome
}

/// B1: two callers in one epoch race for the last token (K = 1, L = 0): exactly one wins.
fn b1_same_epoch_last_token() {
    check("buckets::b1_same_epoch_last_token", || {
        let out = run(&Scenario {
            max_requests: 1,
            lateness: 0,
            prefix: &[],
            threads: &[&[Cah(11, 1)], &[Cah(11, 1)]],
        });
        assert_eq!(
            out.admitted().len(),
            1,
            "exactly one of two takes the token"
        );
    });
}

/// B2: a boundary race and a late caller (K = 1, L = 0): 1 is admitted, 14 refused (it
/// moves the head to epoch 2); then 15 opens epoch 3 and recycles the bucket of 1 while 10
/// (epoch 2) decides. A caller at 10 that passed the lateness check at head 2 must not
/// reserve against the total after that recycle: (0, 10] holds 1.
fn b2_boundary_and_late() {
    check("buckets::b2_boundary_and_late", || {
        let out = run(&Scenario {
            max_requests: 1,
            lateness: 0,
            prefix: &[(Cah(1, 1), true), (Cah(14, 1), false)],
            threads: &[&[Cah(15, 1)], &[Cah(10, 1)]],
        });
        assert_eq!(
            out.calls[0],
            vec![(Cah(15, 1), true)],
            "1 has expired for 15"
        );
        assert_eq!(out.calls[1], vec![(Cah(10, 1), false)], "(0, 10] holds 1");
    });
}

/// B3: recycling races recording (K = 2, L = 0, prefix `check_and_hit(4)`, `hit(9)`): 20
/// (epoch 4) records by replacing the stale bucket of 9 while 35 (epoch 7) recycles that
/// very bucket for its own head. Exactly one of them clears the weight of 9, and 20's
/// weight lands in epoch 4 or, if 35 got there first, in epoch 7: the books balance. (20 is
/// refused only when 35 moved the head past it first: then it is three epochs late.)
fn b3_recycle_races_record() {
    check("buckets::b3_recycle_races_record", || {
        run(&Scenario {
            max_requests: 2,
            lateness: 0,
            prefix: &[(Cah(4, 1), true), (Hit(9, 1), true)],
            threads: &[&[Cah(20, 1)], &[Hit(35, 1)]],
        });
    });
}

/// B3b: two callers of one epoch behind a stale bucket (K = 2, L = 1, prefix 4): one
/// recycles the bucket of 4 while the other, having helped, records into the same bucket.
fn b3b_helper_records_into_a_bucket_being_recycled() {
    check(
        "buckets::b3b_helper_records_into_a_bucket_being_recycled",
        || {
            let out = run(&Scenario {
                max_requests: 2,
                lateness: 1,
                prefix: &[(Cah(4, 1), true)],
                threads: &[&[Cah(20, 1)], &[Cah(21, 1)]],
            });
            assert_eq!(
                out.admitted().len(),
                2,
                "the bucket of 4 has expired for both"
            );
        },
    );
}

/// B4: a jump of several epochs (K = 2, L = 1, prefix 17 and 22): 31 moves the head from
/// epoch 4 to 6, while 24 and 26 (epoch 4 and 5, within L) still decide; the helping
/// recycle converges and the window holds.
fn b4_multi_epoch_jump() {
    check("buckets::b4_multi_epoch_jump", || {
        run(&Scenario {
            max_requests: 2,
            lateness: 1,
            prefix: &[(Cah(17, 1), true), (Cah(22, 1), true)],
            threads: &[&[Cah(31, 1)], &[Cah(24, 1)], &[Cah(26, 1)]],
        });
    });
}

/// B5: weighted (K = 3, L = 1, prefix 3): two weight-2 requests at 12 and 13 race for the
/// two tokens left, then a forced hit at 16. Exactly one weight-2 request is admitted, all
/// or nothing; admitted weight, not calls, is what the oracle sums.
fn b5_weighted() {
    check("buckets::b5_weighted", || {
        let out = run(&Scenario {
            max_requests: 3,
            lateness: 1,
            prefix: &[(Cah(3, 1), true)],
            threads: &[&[Cah(12, 2)], &[Cah(13, 2), Hit(16, 1)]],
        });
        assert_eq!(
            out.admitted().len(),
            1,
            "one weight-2 request fits beside 3"
        );
    });
}

/// B6: adjacent epochs share one window (K = 1, L = 1, empty): 9 and 11 both fall in
/// (1, 11], so at most one is admitted, and exactly one is.
fn b6_adjacent_epochs() {
    check("buckets::b6_adjacent_epochs", || {
        let out = run(&Scenario {
            max_requests: 1,
            lateness: 1,
            prefix: &[],
            threads: &[&[Cah(9, 1)], &[Cah(11, 1)]],
        });
        assert_eq!(out.admitted().len(), 1, "one of 9 and 11");
    });
}

#[test]
fn b1() {
    b1_same_epoch_last_token();
}

#[test]
fn b2() {
    b2_boundary_and_late();
}

#[test]
fn b3() {
    b3_recycle_races_record();
}

#[test]
fn b3b() {
    b3b_helper_records_into_a_bucket_being_recycled();
}

#[test]
fn b4() {
    b4_multi_epoch_jump();
}

#[test]
fn b5() {
    b5_weighted();
}

#[test]
fn b6() {
    b6_adjacent_epochs();
}

// Negative controls: they exist only in the build of their mutant (`ci/loom.sh` builds each
// one and runs only these), where the model must fail with the named check.

/// X3: recording before reserving: the weight reaches a bucket before the total, so two
/// callers both decide on the old total.
#[test]
#[cfg(slidelimit_loom_mutant = "buckets_record_before_reserve")]
#[should_panic(expected = "window oracle:")]
fn mutant_buckets_record_before_reserve_caught_by_b1() {
    b1_same_epoch_last_token();
}

/// X4: tag and count as if in two atomics (move the tag by CAS, clear the count by a later
/// store): an increment landing in between is lost and the total drifts up for good.
#[test]
#[cfg(slidelimit_loom_mutant = "buckets_split_tag_count")]
#[should_panic(expected = "total drift:")]
fn mutant_buckets_split_tag_count_caught_by_b3b() {
    b3b_helper_records_into_a_bucket_being_recycled();
}

/// X5: head and total as if in two atomics: the late caller at 10 passes the lateness check
/// at head 2, then reserves against the total after 15 recycled the hit at 1.
#[test]
#[cfg(slidelimit_loom_mutant = "buckets_split_head_total")]
#[should_panic(expected = "window oracle:")]
fn mutant_buckets_split_head_total_caught_by_b2() {
    b2_boundary_and_late();
}

/// X6: summing the other buckets, then CASing one's own: 9 and 11 write different buckets
/// and both see an empty window.
#[test]
#[cfg(slidelimit_loom_mutant = "buckets_sum_then_cas")]
#[should_panic(expected = "window oracle:")]
fn mutant_buckets_sum_then_cas_caught_by_b6() {
    b6_adjacent_epochs();
}
