//! Loom models of the key-pool throttler's lock-free ledger (`AtomicLedger`): P1–P5 of issue
//! 11, P5b, and P6–P7 of issue 26 (a bad clock's buckets moved to the back, never released by
//! another far-future call), with T = 10 ticks, 1–3 keys of 1–3 uses, and explicit ticks.
//!
//! Every model runs the core's real pool code (`take` and `status` in
//! `crates/core/src/pool/algorithm.rs`) through its `sync` shim: each decision is one CAS on
//! the packed control word, after the slot fields it needs were raised (`fetch_max`); a call
//! below the cooldown end of the last bucket released (kept in the slot before the head) is
//! refused as late. At quiescence every model checks, over every use handed out (prefix,
//! threads and the main thread's tail, each with the `now` it was asked at):
//! - the **window oracle**: per key name (`seq % keys`) no interval `(x - T, x]` holds more
//!   than `uses_per_key` of its uses, whatever order the `now`s came in (`window oracle:`);
//! - the **sequence**: the sequence numbers are distinct and are exactly `0 .. n` (where no
//!   tick is a bad clock's: a bucket moved to the back renumbers its uses)
//!   (`sequence:`);
//! - the **status**: `status(x)` at the latest granted `x` holds no more uses than the pool
//!   has or than were handed out, no more buckets than the bound (`status:`), and at least
//!   every use made within `(x - T, x]` (`lost use:`): a bucket holding such a use cannot have
//!   cooled down by `x`, so no call up to `x` may have released it;
//! - **late refusals**: a call refused as `Late` at `x` had a call with a later `now` release
//!   a bucket, and that call got a use, so some use was granted after `x`
//!   (`unjustified late:`).
//!
//! Where a model's answers do not depend on the interleaving, or depend on it in one known
//! way, the model pins them. Negative controls (built only with
//! `--cfg slidelimit_loom_mutant="..."`) run the same models against the core's deliberately
//! broken variants and must panic.
//!
//! P3 found a real bug in an earlier core (a false negative: calls refused as late with no
//! later call), fixed by the release watermark; see its docs.

#![cfg(slidelimit_loom)]

use loom::sync::Arc;
use loom::thread;
use slidelimit::pool::{AtomicLedger, PoolGeometry, PoolMode, Refusal, UseLedger};
use slidelimit_loom::{check, WINDOW_TICKS};
use slidelimit_trace::audit::Audit;

/// The cooldown of every model: the window of the oracle.
const COOLDOWN: u64 = WINDOW_TICKS;

/// Ticks from here up are a bad clock's in these models (the well-timed ones stay below 100):
/// their buckets may be moved to the back of the ring, which numbers their uses again.
const FAR_FUTURE: u64 = 1_000;

/// What one `take(now)` got: its sequence number, or the refusal.
type Answer = Result<u64, Refusal>;

/// A scenario: the pool, the calls made before the threads start (each must be granted, in
/// sequence order), each thread's calls in order, and the calls the model's main thread
/// makes after joining them all.
struct Scenario {
    keys: usize,
    uses_per_key: u64,
    mode: PoolMode,
    prefix: &'static [u64],
    threads: &'static [&'static [u64]],
    tail: &'static [u64],
}

/// What a scenario ended with: each thread's calls with their answers, then the tail's.
struct Outcome {
    threads: Vec<Vec<(u64, Answer)>>,
    tail: Vec<(u64, Answer)>,
}

impl Outcome {
    /// The answers of thread `index`, in call order.
    fn answers(&self, index: usize) -> Vec<Answer> {
        self.threads[index].iter().map(|&(_, a)| a).collect()
    }

    /// The answers of the tail, in call order.
    fn tail_answers(&self) -> Vec<Answer> {
        self.tail.iter().map(|&(_, a)| a).collect()
    }

    /// Uses the threads got.
    fn granted_in_threads(&self) -> usize {
        self.threads
            .iter()
            .flatten()
            .filter(|(_, a)| a.is_ok())
            .count()
    }
}

/// The window oracle per key name over `(now, seq)` of every use handed out, in any order
/// of `now`: no name has more than `uses_per_key` uses in an interval of `COOLDOWN` ticks, by
/// the workspace's one window audit.
///
/// # Panics
/// `window oracle:` when some interval holds more.
fn assert_window_safe(granted: &[(u64, u64)], keys: u64, uses_per_key: u64) {
    let audit = Audit::new(uses_per_key, COOLDOWN).expect("a cooldown of at least one tick");
    let names = granted.iter().map(|&(now, seq)| (seq % keys, now, 1));
    if let Err(over) = audit.keys(names).check() {
        panic!("window oracle: {over}; granted (now, seq) {granted:?}");
    }
}

/// Sequence numbers are distinct, and exactly `0 .. n` unless a far-future use was moved to
/// the back of the ring (which skips the numbers it takes again).
///
/// # Panics
/// `sequence:` otherwise.
fn assert_sequence(granted: &[(u64, u64)], renumbered: bool) {
    let mut seqs: Vec<u64> = granted.iter().map(|&(_, s)| s).collect();
    seqs.sort_unstable();
    let distinct = seqs.windows(2).all(|pair| pair[0] < pair[1]);
    assert!(
        distinct && (renumbered || seqs.iter().copied().eq(0..seqs.len() as u64)),
        "sequence: sequence numbers {seqs:?} are not distinct or not 0 .. {}; granted (now, seq) \
         {granted:?}",
        seqs.len()
    );
}

/// A call is refused as late only below the cooldown end of a bucket that a call with a
/// later `now` released, and that call got a use: so some use was granted at a later `now`.
///
/// # Panics
/// `unjustified late:` for a `Late` refusal at `x` with no use granted after `x`.
fn assert_late_justified(late: &[u64], granted: &[(u64, u64)]) {
    for &x in late {
        assert!(
            granted.iter().any(|&(t, _)| t > x),
            "unjustified late: take({x}) refused as late, but no use was granted after {x}; \
             granted (now, seq) {granted:?}"
        );
    }
}

/// The quiescent `status` at the latest granted `now`.
///
/// # Panics
/// `status:` for more held uses than the pool has or than were handed out, more held
/// buckets than the bound, or `available` not the complement of `held_uses`; `lost use:`
/// when a use made within `(x - T, x]` is not held.
fn assert_quiescent_status(ledger: &AtomicLedger, granted: &[(u64, u64)]) {
    let Some(x) = granted.iter().map(|&(t, _)| t).max() else {
        return;
    };
    let geometry = ledger.geometry();
    let status = ledger.status(x);
    let handed_out = granted.len() as u64;
    assert!(
        status.held_uses <= geometry.total_uses() && status.held_uses <= handed_out,
        "status: {} uses held at {x} with {} in the pool and {handed_out} handed out; {status:?}",
        status.held_uses,
        geometry.total_uses()
    );
    assert!(
        status.held_buckets <= geometry.bucket_bound(),
        "status: {} buckets held at {x}, above the bound {}; {status:?}",
        status.held_buckets,
        geometry.bucket_bound()
    );
    assert!(
        status.available == 0 || status.available == geometry.total_uses() - status.held_uses,
        "status: {} available at {x} beside {} held of {}; {status:?}",
        status.available,
        status.held_uses,
        geometry.total_uses()
    );
    let must_count = granted.iter().filter(|&&(t, _)| t + COOLDOWN > x).count() as u64;
    assert!(
        status.held_uses >= must_count,
        "lost use: {must_count} uses made within ({}, {x}] but status({x}) holds {}; \
         granted (now, seq) {granted:?}",
        x.saturating_sub(COOLDOWN),
        status.held_uses
    );
}

/// Runs one execution of `scenario` and applies the checks every pool model shares.
fn run(scenario: &Scenario) -> Outcome {
    let geometry = PoolGeometry::new(
        scenario.keys,
        scenario.uses_per_key,
        COOLDOWN,
        scenario.mode,
    )
    .unwrap()
    // A ring of the bound plus one, as the models were written for: their few calls must
    // fill it.
    .without_far_future_headroom();
    let ledger = Arc::new(AtomicLedger::new(geometry));
    let mut granted = Vec::new();
    for (seq, &now) in (0..).zip(scenario.prefix) {
        assert_eq!(ledger.take(now), Ok(seq), "prefix take({now})");
        granted.push((now, seq));
    }

    let handles: Vec<_> = scenario
        .threads
        .iter()
        .map(|&nows| {
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || {
                nows.iter()
                    .map(|&now| (now, ledger.take(now)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let threads: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let tail: Vec<_> = scenario
        .tail
        .iter()
        .map(|&now| (now, ledger.take(now)))
        .collect();

    granted.extend(
        threads
            .iter()
            .flatten()
            .chain(&tail)
            .filter_map(|&(now, answer)| answer.ok().map(|seq| (now, seq))),
    );
    let late: Vec<u64> = threads
        .iter()
        .flatten()
        .chain(&tail)
        .filter(|&&(_, answer)| answer == Err(Refusal::Late))
        .map(|&(now, _)| now)
        .collect();
    assert_window_safe(&granted, scenario.keys as u64, scenario.uses_per_key);
    let renumbered = scenario
        .prefix
        .iter()
        .chain(scenario.threads.iter().copied().flatten())
        .chain(scenario.tail)
        .any(|&now| now >= FAR_FUTURE);
    assert_sequence(&granted, renumbered);
    assert_quiescent_status(&ledger, &granted);
    assert_late_justified(&late, &granted);
    Outcome { threads, tail }
}

/// P1: two threads race for the last free use (1 key, X = 2, exact: one use per bucket;
/// prefix 10): exactly one gets sequence 1, the other is refused as exhausted.
fn p1_last_free_use() {
    check("pool::p1_last_free_use", || {
        let out = run(&Scenario {
            keys: 1,
            uses_per_key: 2,
            mode: PoolMode::Exact,
            prefix: &[10],
            threads: &[&[12], &[12]],
            tail: &[],
        });
        let mut answers = [out.answers(0)[0], out.answers(1)[0]];
        answers.sort_unstable_by_key(|a| a.is_err());
        assert_eq!(
            answers,
            [Ok(1), Err(Refusal::Exhausted)],
            "exactly one of two takes the last use"
        );
    });
}

/// P1b: the same race inside one bucket (1 key, X = 2, count-bound k = 2: one bucket of two
/// uses, prefix 10): both try to join the active bucket with its last use; one gets it.
fn p1b_last_use_of_the_active_bucket() {
    check("pool::p1b_last_use_of_the_active_bucket", || {
        let out = run(&Scenario {
            keys: 1,
            uses_per_key: 2,
            mode: PoolMode::CountBound { key_threshold: 2 },
            prefix: &[10],
            threads: &[&[12], &[12]],
            tail: &[],
        });
        let mut answers = [out.answers(0)[0], out.answers(1)[0]];
        answers.sort_unstable_by_key(|a| a.is_err());
        assert_eq!(
            answers,
            [Ok(1), Err(Refusal::Exhausted)],
            "exactly one of two takes the last use"
        );
    });
}

/// P2: rotation by time racing a join (1 key, X = 3, time-bound τ = 3; prefix 10 opens
/// bucket 0). 13 finds bucket 0 closed by time and opens bucket 1 while 12 joins bucket 0
/// (or, after the rotation, bucket 1, which is open for 12). Both get a use; then 14 is
/// exhausted: all three uses are held until 20 at least.
fn p2_time_rotation_races_a_join() {
    check("pool::p2_time_rotation_races_a_join", || {
        let out = run(&Scenario {
            keys: 1,
            uses_per_key: 3,
            mode: PoolMode::TimeBound { threshold_ticks: 3 },
            prefix: &[10],
            threads: &[&[13], &[12]],
            tail: &[14],
        });
        assert_eq!(out.granted_in_threads(), 2, "13 and 12 both get a use");
        assert_eq!(out.tail_answers(), [Err(Refusal::Exhausted)]);
    });
}

/// P2b: rotation by count, three threads (3 keys, X = 1, count-bound k = 2: buckets of two
/// uses; empty). 10, 11 and 12 race: two of them fill bucket 0, the third opens bucket 1,
/// and all three get a use. At 20 all three uses are held (bucket 0's newest use is 11 or
/// 12); at 22 bucket 0 has cooled down, is released, and 22 gets sequence 3.
fn p2b_count_rotation() {
    check("pool::p2b_count_rotation", || {
        let out = run(&Scenario {
            keys: 3,
            uses_per_key: 1,
            mode: PoolMode::CountBound { key_threshold: 2 },
            prefix: &[],
            threads: &[&[10], &[11], &[12]],
            tail: &[20, 22],
        });
        assert_eq!(out.granted_in_threads(), 3, "10, 11 and 12 all get a use");
        assert_eq!(out.tail_answers(), [Err(Refusal::Exhausted), Ok(3)]);
    });
}

/// P3: a bucket cooling down while it is being filled (1 key, X = 2, time-bound τ = 10: a
/// ring limit of one bucket, so opening a second needs the first released; prefix 5 opens
/// bucket 0). Thread A at 15 finds bucket 0 closed by time and cooled down (5 + T),
/// releases it and opens bucket 1, then takes again at 16; thread B at 14 joins bucket 0,
/// still open for it. Exactly one side wins: either B joins first (its use at 14 keeps
/// bucket 0 held until 24, so A is exhausted twice), or A releases first (then B, below the
/// released bucket's cooldown end 15, is late, and A gets 15 and 16).
///
/// It failed (`unjustified late:`) on a core whose late check read the released bucket's own
/// cooldown end from its slot: B reads its view (bucket 0 newest and open), A reads its view
/// (bucket 0 cooled down at 15), B raises bucket 0's cooldown end to 24 before its CAS, A's
/// CAS releases bucket 0 and opens bucket 1, B's CAS fails; the late check then read 24,
/// raised by a use that never happened, and refused A's call at 16 and every call below 24
/// until bucket 1 was released. The core now checks a release watermark that only releasing
/// calls raise, to the cooldown end they checked against their own `now`.
fn p3_release_races_a_join() {
    check("pool::p3_release_races_a_join", || {
        let out = run(&p3_scenario(&[]));
        assert_p3_answers(&out);
    });
}

/// P3's pool and calls (1 key, X = 2, time-bound τ = 10; prefix 5; threads at 15, 16 and at
/// 14), then the main thread's `tail`.
fn p3_scenario(tail: &'static [u64]) -> Scenario {
    Scenario {
        keys: 1,
        uses_per_key: 2,
        mode: PoolMode::TimeBound {
            threshold_ticks: 10,
        },
        prefix: &[5],
        threads: &[&[15, 16], &[14]],
        tail,
    }
}

/// The three ways P3 can end, and the answers P3b's tail at 24, 24 may get after each.
fn assert_p3_answers(out: &Outcome) -> Vec<[Answer; 2]> {
    let a = out.answers(0);
    let b = out.answers(1);
    if b == [Ok(1)] {
        // 14 joined bucket 0 first: it is held until 24, and both of A's calls are refused
        // as exhausted (never `NoBucket`, even when A read its view after 14 raised bucket
        // 0's cooldown end but before 14's CAS counted the use: see P3b).
        assert_eq!(
            a,
            [Err(Refusal::Exhausted), Err(Refusal::Exhausted)],
            "14 joined bucket 0: it is held until 24"
        );
        // Bucket 0 cooled down at 24, unless a call of A that lost its CAS raised its end
        // to 25 or 26 first (a raise for a use that never happened only holds it longer).
        vec![
            [Ok(2), Ok(3)],
            [Err(Refusal::Exhausted), Err(Refusal::Exhausted)],
        ]
    } else if a == [Ok(1), Ok(2)] {
        assert_eq!(
            b,
            [Err(Refusal::Late)],
            "15 released bucket 0 before 14 came"
        );
        vec![[Err(Refusal::Exhausted), Err(Refusal::Exhausted)]]
    } else {
        // A read its view after 14 raised bucket 0's cooldown end to 24 and before 14's CAS:
        // bucket 0 seemed closed, held and not cooled down, with a use free and no slot to
        // open. A joins it past its time threshold (its cooldown end becomes 25); 14's CAS
        // fails and 14 finds every use held.
        assert_eq!(a, [Ok(1), Err(Refusal::Exhausted)], "15 joined bucket 0");
        assert_eq!(b, [Err(Refusal::Exhausted)], "bucket 0 holds 5 and 15");
        vec![[Err(Refusal::Exhausted), Err(Refusal::Exhausted)]]
    }
}

/// P3b: P3, then the main thread at 24 twice. Where 15 joined bucket 0 past its threshold, the
/// join must have raised bucket 0's cooldown end to 25 (14's raise to 24 was for a use that
/// never happened): 24 finds every use held. Elsewhere 24 gets two uses (bucket 0 cooled down
/// at 24, unless a lost raise held it longer) or none (15 and 16 hold bucket 1 until 26).
fn p3b_a_full_ring_join_extends_the_cooldown() {
    check("pool::p3b_a_full_ring_join_extends_the_cooldown", || {
        let out = run(&p3_scenario(&[24, 24]));
        let allowed = assert_p3_answers(&out);
        let tail = out.tail_answers();
        assert!(
            allowed.iter().any(|answers| answers[..] == tail[..]),
            "tail at 24, 24 got {tail:?}, expected one of {allowed:?}"
        );
    });
}

/// P4: a late caller after a release (1 key, X = 2, count-bound k = 2: one bucket of two
/// uses, a ring limit of one; prefix 5, 6 fill bucket 0). Thread A at 17 releases bucket 0
/// (cooled down at 16) and opens bucket 1; thread B at 10 is exhausted before it and late
/// after it: the uses A freed were made at 5 and 6, within T of 10. Then the main thread at
/// 16 (at the released bucket's cooldown end, not late) joins bucket 1.
fn p4_late_caller_after_a_release() {
    check("pool::p4_late_caller_after_a_release", || {
        let out = run(&Scenario {
            keys: 1,
            uses_per_key: 2,
            mode: PoolMode::CountBound { key_threshold: 2 },
            prefix: &[5, 6],
            threads: &[&[17], &[10]],
            tail: &[16],
        });
        assert_eq!(out.answers(0), [Ok(2)], "17 releases bucket 0");
        let b = out.answers(1);
        assert!(
            b == [Err(Refusal::Exhausted)] || b == [Err(Refusal::Late)],
            "10 is refused: {b:?}"
        );
        assert_eq!(out.tail_answers(), [Ok(3)], "16 joins bucket 1");
    });
}

/// P5: two first uses out of time order raise one bucket's newest use (1 key, X = 2,
/// count-bound k = 2; empty). 12 and 11 race to open bucket 0; the loser joins it. Its
/// newest use must end at 12, whichever raise came last: 21 is exhausted (twice), 22 gets
/// sequence 2.
fn p5_out_of_order_uses_raise_the_newest() {
    check("pool::p5_out_of_order_uses_raise_the_newest", || {
        let out = run(&Scenario {
            keys: 1,
            uses_per_key: 2,
            mode: PoolMode::CountBound { key_threshold: 2 },
            prefix: &[],
            threads: &[&[12], &[11]],
            tail: &[21, 21, 22],
        });
        assert_eq!(out.granted_in_threads(), 2, "12 and 11 both get a use");
        assert_eq!(
            out.tail_answers(),
            [Err(Refusal::Exhausted), Err(Refusal::Exhausted), Ok(2)],
            "bucket 0 cools down at 22"
        );
    });
}

/// P5b: two joins out of time order raise one bucket's cooldown end (1 key, X = 3,
/// count-bound k = 3; prefix 10 opens bucket 0, published). 12 and 11 both join it; its
/// cooldown end must be 22 whichever raise lands last: three calls at 21 are exhausted, 22
/// releases the bucket and gets sequence 3.
fn p5b_concurrent_joins_raise_the_newest() {
    check("pool::p5b_concurrent_joins_raise_the_newest", || {
        let out = run(&Scenario {
            keys: 1,
            uses_per_key: 3,
            mode: PoolMode::CountBound { key_threshold: 3 },
            prefix: &[10],
            threads: &[&[12], &[11]],
            tail: &[21, 21, 21, 22],
        });
        assert_eq!(out.granted_in_threads(), 2, "12 and 11 both join bucket 0");
        assert_eq!(
            out.tail_answers(),
            [
                Err(Refusal::Exhausted),
                Err(Refusal::Exhausted),
                Err(Refusal::Exhausted),
                Ok(3)
            ],
            "bucket 0 cools down at 22"
        );
    });
}

/// P6: a far-future use passed, not released (1 key, X = 2, exact; prefix 1000, a bad
/// clock's, then 0: every use held, the far-future one the oldest). 25 and 26 race for the
/// use that 0 frees at 10: each finds the far-future bucket in front, moves it to the back
/// (its use keeps its cooldown end, 1010), and the one that then releases 0's bucket gets the
/// use; the other finds it gone (the far-future bucket, moved again, and the winner's use)
/// and is refused as exhausted. Then 1001 releases the winner's bucket and gets a use; 1002
/// is exhausted: the far-future use at 1000 still holds its key until 1010.
fn p6_a_far_future_bucket_is_passed_not_released() {
    check(
        "pool::p6_a_far_future_bucket_is_passed_not_released",
        || {
            let out = run(&Scenario {
                keys: 1,
                uses_per_key: 2,
                mode: PoolMode::Exact,
                prefix: &[1_000, 0],
                threads: &[&[25], &[26]],
                tail: &[1_001, 1_002],
            });
            assert_eq!(out.granted_in_threads(), 1, "one of 25 and 26 gets 0's use");
            let tail = out.tail_answers();
            assert!(
                tail.first().is_some_and(Result::is_ok) && tail[1] == Err(Refusal::Exhausted),
                "1001 gets a use, 1002 is exhausted: {tail:?}; threads {:?}",
                out.threads
            );
        },
    );
}

/// P7: a far-future call never releases an earlier far-future bucket (1 key, X = 2, exact;
/// prefix 1000 then 0, as in P6). 2000 (a bad clock's too) and 15 race. Whoever finds the
/// bucket of 1000 in front moves it to the back: releasing it would raise the release
/// watermark to 1010 and refuse every well-timed call as late until then. So the watermark
/// never passes the cooldown end of a well-timed use (25 at most), and the well-timed 30 is
/// never late.
fn p7_a_far_future_call_does_not_release_another() {
    check(
        "pool::p7_a_far_future_call_does_not_release_another",
        || {
            let out = run(&Scenario {
                keys: 1,
                uses_per_key: 2,
                mode: PoolMode::Exact,
                prefix: &[1_000, 0],
                threads: &[&[2_000], &[15]],
                tail: &[30],
            });
            assert_ne!(
                out.tail_answers(),
                [Err(Refusal::Late)],
                "the watermark passed a well-timed cooldown end"
            );
        },
    );
}

/// P8: a move to the back racing a release into the same slot (1 key, X = 2, exact; prefix
/// 1000 then 1001, both far-ahead of a fresh pool). 25 (late, far behind) finds the bucket of
/// 1000 holding a use far after it and moves it to the back; 1015 finds it cooled down (not
/// ahead of the bucket behind it), releases it and opens the same slot with the same first
/// number. Whichever wins, no key is used three times in a cooldown: 1012 and 1013 come after,
/// and the slot's winner is read by its own ticks.
fn p8_a_move_races_a_release_into_one_slot() {
    check("pool::p8_a_move_races_a_release_into_one_slot", || {
        run(&Scenario {
            keys: 1,
            uses_per_key: 2,
            mode: PoolMode::Exact,
            prefix: &[1_000, 1_001],
            threads: &[&[25], &[1_015]],
            tail: &[1_012, 1_013],
        });
    });
}

#[test]
fn p1() {
    p1_last_free_use();
}

#[test]
fn p1b() {
    p1b_last_use_of_the_active_bucket();
}

#[test]
fn p2() {
    p2_time_rotation_races_a_join();
}

#[test]
fn p2b() {
    p2b_count_rotation();
}

#[test]
fn p3() {
    p3_release_races_a_join();
}

#[test]
fn p3b() {
    p3b_a_full_ring_join_extends_the_cooldown();
}

#[test]
fn p4() {
    p4_late_caller_after_a_release();
}

#[test]
fn p5() {
    p5_out_of_order_uses_raise_the_newest();
}

#[test]
fn p5b() {
    p5b_concurrent_joins_raise_the_newest();
}

#[test]
fn p6() {
    p6_a_far_future_bucket_is_passed_not_released();
}

#[test]
fn p8() {
    p8_a_move_races_a_release_into_one_slot();
}

#[test]
fn p7() {
    p7_a_far_future_call_does_not_release_another();
}

// Negative controls: they exist only in the build of their mutant (`ci/loom.sh` builds each
// one and runs only these), where the model must fail with the named check.

/// The use's time recorded after the CAS that counts it: A at 15 reads bucket 0's newest
/// use as 5 after B's CAS counted 14, releases it, and 15 and 16 join 14 in one window.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_join_after_cas")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_join_after_cas_caught_by_p3() {
    p3_release_races_a_join();
}

/// The control word written by load-then-store: both threads decide on the same word and
/// both hand out sequence 1, key 0's third use within T.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_decide_then_store")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_decide_then_store_caught_by_p1() {
    p1_last_free_use();
}

/// No late check: B at 10, after A released bucket 0 (cooled down at 16), joins bucket 1
/// with a use that 5 and 6 freed: three uses in [5, 15).
#[test]
#[cfg(slidelimit_loom_mutant = "pool_skip_late_check")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_skip_late_check_caught_by_p4() {
    p4_late_caller_after_a_release();
}

/// A raise by load-then-store instead of `fetch_max`: 11's store lands after 12's, bucket 0
/// seems cooled down at 21, and the three 21s get a use beside 12.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_raise_by_load_store")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_raise_by_load_store_caught_by_p5b() {
    p5b_concurrent_joins_raise_the_newest();
}

/// A join past the thresholds of a full ring that does not extend the bucket's cooldown end:
/// 15 joins bucket 0, whose end stays at 24 (raised for 14's use, which never happened); 24
/// releases it and takes two uses beside 15, three in (14, 24].
#[test]
#[cfg(slidelimit_loom_mutant = "pool_full_join_without_raise")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_full_join_without_raise_caught_by_p3b() {
    p3b_a_full_ring_join_extends_the_cooldown();
}

/// A far-future bucket moved to the back with the mover's cooldown end instead of its own:
/// it cools down at 35 or 36, 1002 releases it and gets a use beside 1000 and 1001, three in
/// [1000, 1010).
#[test]
#[cfg(slidelimit_loom_mutant = "pool_requeue_cools_at_now")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_requeue_cools_at_now_caught_by_p6() {
    p6_a_far_future_bucket_is_passed_not_released();
}

/// No check that the bucket in front jumps ahead of the pool: 2000, run first, releases the
/// bucket of 1000 and raises the watermark to 1010, and 30 is refused as late.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_release_far_head")]
#[should_panic(expected = "the watermark passed a well-timed cooldown end")]
fn mutant_pool_release_far_head_caught_by_p7() {
    p7_a_far_future_call_does_not_release_another();
}

/// A far-ahead opener that writes its tick to the well-timed cooldown end too: 2000, racing
/// 15 for the slot 15 opens, leaves 2010 in 15's bucket, so the bucket of 1000 no longer
/// looks ahead of the pool and 2000 releases it: the watermark goes to 1010 and 30 is late.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_far_writes_cooled_word")]
#[should_panic(expected = "the watermark passed a well-timed cooldown end")]
fn mutant_pool_far_writes_cooled_word_caught_by_p7() {
    p7_a_far_future_call_does_not_release_another();
}

/// The far-ahead flag not written into the slot once the bucket is no longer the newest: the
/// bucket of 1000 is read by its well-timed cooldown end (0, cooled down at once), released
/// at 25, and its key is used at 1001 and 1002 beside 1000.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_far_flag_not_kept")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_far_flag_not_kept_caught_by_p6() {
    p6_a_far_future_bucket_is_passed_not_released();
}

/// A move to the back that flags the moved bucket's slot before its CAS: 25 loses to 1015,
/// whose bucket in that slot is then read as far-ahead, by 25's far word (cooled down at
/// 1010, not 1025); 1013 releases it and takes a third use within T of 1012 and 1015.
#[test]
#[cfg(slidelimit_loom_mutant = "pool_requeue_flags_before_cas")]
#[should_panic(expected = "window oracle:")]
fn mutant_pool_requeue_flags_before_cas_caught_by_p8() {
    p8_a_move_races_a_release_into_one_slot();
}
