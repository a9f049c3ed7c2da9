//! Loom models of a layered limit's atomic form (`Layers<AtomicRing>`, the exact log with
//! several windows, and the rolling buckets'): LY1-LY4.
//!
//! Every model runs the core's real code through its `sync` shim, then checks at quiescence
//! that no window of the limit holds more than its count of admitted ticks (`window oracle:`).
//! Negative controls (built only with `--cfg slidelimit_loom_mutant="..."`) run the same models
//! against the core's deliberately broken variants and must panic.

#![cfg(slidelimit_loom)]

use loom::sync::Arc;
use loom::thread;
use slidelimit::raw::{Algorithm, AtomicWindow};
use slidelimit::{ExactLog, Limit, RollingBuckets};
use slidelimit_loom::check;
use slidelimit_trace::audit::Audit;

/// A layered scenario: the windows `(N, W)`, the ticks admitted before the threads start,
/// each thread's `check_and_hit` ticks, and the ticks asked after they joined.
struct Scenario {
    windows: &'static [(u64, u64)],
    prefix: &'static [u64],
    threads: &'static [&'static [u64]],
    tail: &'static [u64],
}

/// The window oracle for every window of the limit.
fn assert_every_window_safe(limit: Limit, admitted: &[u64]) {
    for window in limit.windows() {
        let audit = Audit::new(window.max_requests(), window.window_ticks()).expect("W > 0");
        if let Err(over) = audit.key(admitted.iter().map(|&tick| (tick, 1))).check() {
            panic!(
                "window oracle: {} per {}: {over}; admitted {admitted:?}",
                window.max_requests(),
                window.window_ticks()
            );
        }
    }
}

/// Runs one execution of `scenario` on the exact log; returns each thread's answers.
fn run(scenario: &Scenario) -> Vec<Vec<bool>> {
    let limit = limit_of(scenario);
    run_on(scenario, limit, ExactLog::new(limit).new_atomic())
}

fn limit_of(scenario: &Scenario) -> Limit {
    scenario
        .windows
        .iter()
        .map(|&(n, w)| Limit::new(n, w).unwrap())
        .reduce(|all, window| all.and(window).unwrap())
        .unwrap()
}

/// Runs one execution of `scenario` on `window`, built for `limit`.
fn run_on<W: AtomicWindow>(scenario: &Scenario, limit: Limit, window: W) -> Vec<Vec<bool>> {
    let window = Arc::new(window);
    let mut admitted = Vec::new();
    for &now in scenario.prefix {
        assert_eq!(window.check_and_hit_n(now, 1), Ok(true), "prefix {now}");
        admitted.push(now);
    }
    let handles: Vec<_> = scenario
        .threads
        .iter()
        .map(|&ticks| {
            let window = Arc::clone(&window);
            thread::spawn(move || {
                ticks
                    .iter()
                    // Nothing seals a bare window, so `Retired` would be a bug.
                    .map(|&now| window.check_and_hit_n(now, 1).expect("no sweeper here"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: Vec<Vec<bool>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (ticks, answers) in scenario.threads.iter().zip(&answers) {
        admitted.extend(
            ticks
                .iter()
                .zip(answers)
                .filter(|(_, &a)| a)
                .map(|(&t, _)| t),
        );
    }
    for &now in scenario.tail {
        if window.check_and_hit_n(now, 1).expect("no sweeper here") {
            admitted.push(now);
        }
    }
    assert_every_window_safe(limit, &admitted);
    answers
}

/// LY1: two calls race for the narrow window's only room (1 per 10, 3 per 100): exactly one
/// is admitted, whichever reserves the narrow slot first.
fn ly1_race_for_the_narrow_window() {
    check("layers::ly1_race_for_the_narrow_window", || {
        let answers = run(&Scenario {
            windows: &[(1, 10), (3, 100)],
            prefix: &[],
            threads: &[&[5], &[6]],
            tail: &[],
        });
        let admitted = answers.iter().flatten().filter(|&&a| a).count();
        assert_eq!(admitted, 1, "window oracle: not exactly one admitted");
    });
}

/// LY2: a refusal by the wide window undoes its narrow reservation while a later call takes
/// that narrow slot (1 per 10, 4 per 100; prefix 0, 10, 40, 50). 95 reserves the narrow slot,
/// the wide window is full; 111 replaces 95's tick in the narrow slot and is admitted
/// (0 and 10 have left the wide window); 95's undo must not erase 111, or 115 gets in.
fn ly2_undo_keeps_a_later_admission() {
    check("layers::ly2_undo_keeps_a_later_admission", || {
        run(&Scenario {
            windows: &[(1, 10), (4, 100)],
            prefix: &[0, 10, 40, 50],
            threads: &[&[95], &[111]],
            tail: &[115],
        });
    });
}

/// LY3: undos racing each other (1 per 4, 2 per 20, 3 per 100; prefix 0, 8). 13 and 17 both
/// pass the narrow window and are refused by the middle one; 17 may take the narrow slot
/// from 13's reservation and undo back to it, so 13's undo fails and its tick stays as a
/// phantom. Then 21 is admitted, 30 refused by the wide window, and no window over-admits.
fn ly3_undos_race() {
    check("layers::ly3_undos_race", || {
        let answers = run(&Scenario {
            windows: &[(1, 4), (2, 20), (3, 100)],
            prefix: &[0, 8],
            threads: &[&[13], &[17]],
            tail: &[21, 30],
        });
        assert_eq!(
            answers,
            [[false], [false]],
            "window oracle: the middle window binds"
        );
    });
}

/// LY4: LY1 on the rolling buckets (one bucket per tick in the narrow window, ten in the
/// wide one): the reservations are CASes on each window's running total, and the narrow
/// window's last room goes to exactly one call.
fn ly4_buckets_race_for_the_narrow_window() {
    check("layers::ly4_buckets_race_for_the_narrow_window", || {
        let scenario = Scenario {
            windows: &[(1, 10), (3, 100)],
            prefix: &[],
            threads: &[&[5], &[6]],
            tail: &[],
        };
        let limit = limit_of(&scenario);
        let buckets = RollingBuckets::new(limit, 10).unwrap();
        let answers = run_on(&scenario, limit, buckets.new_atomic());
        let admitted = answers.iter().flatten().filter(|&&a| a).count();
        assert_eq!(admitted, 1, "window oracle: not exactly one admitted");
    });
}

#[test]
fn ly4() {
    ly4_buckets_race_for_the_narrow_window();
}

#[test]
fn ly1() {
    ly1_race_for_the_narrow_window();
}

#[test]
fn ly2() {
    ly2_undo_keeps_a_later_admission();
}

#[test]
fn ly3() {
    ly3_undos_race();
}

/// Validating only the widest window: both calls see the narrow window's room, and both are
/// admitted at 5 and 6.
#[test]
#[cfg(slidelimit_loom_mutant = "layers_widest_only")]
#[should_panic(expected = "window oracle:")]
fn mutant_layers_widest_only_caught_by_ly1() {
    ly1_race_for_the_narrow_window();
}

/// The same broken decision on the rolling buckets.
#[test]
#[cfg(slidelimit_loom_mutant = "layers_widest_only")]
#[should_panic(expected = "window oracle:")]
fn mutant_layers_widest_only_caught_by_ly4() {
    ly4_buckets_race_for_the_narrow_window();
}

/// An undo by plain store: 95's undo writes 50 back over 111, and 115 is admitted within
/// 10 ticks of 111.
#[test]
#[cfg(slidelimit_loom_mutant = "layers_undo_by_store")]
#[should_panic(expected = "window oracle:")]
fn mutant_layers_undo_by_store_caught_by_ly2() {
    ly2_undo_keeps_a_later_admission();
}
