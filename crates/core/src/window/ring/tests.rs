//! Unit tests of the exact log's arithmetic and of the two storages taking the same slots.

use super::algorithm::idle_from_newest;
use super::*;
use crate::window::random_traces::{LateTicks, XorShift};
use crate::window::state::Carried;
use crate::window::{AtomicWindow, Retired, SequentialWindow, MAX_TICK};

fn ring(max: u64, window: u64) -> SequentialRing {
    SequentialRing::new(Limit::new(max, window).unwrap())
}

#[test]
fn expired_at_most_agrees_with_slot_is_live() {
    let ticks = [
        0,
        1,
        2,
        5,
        9,
        10,
        11,
        100,
        MAX_TICK - 11,
        MAX_TICK - 1,
        MAX_TICK,
    ];
    for window_ticks in [1, 2, 10, 100, u64::MAX - 1, u64::MAX] {
        for now in ticks {
            let bound = expired_at_most(window_ticks, now);
            // Every encoded tick, and the empty slot, which is never live.
            for value in ticks.map(encode).into_iter().chain([EMPTY]) {
                assert_eq!(
                    value > bound,
                    slot_is_live(value, window_ticks, now),
                    "slot value {value}, W {window_ticks}, now {now}"
                );
            }
        }
    }
}

#[test]
fn blocked_until_is_the_oldest_live_hit_plus_window() {
    let mut r = ring(2, 10);
    assert!(r.check_and_hit_n(3, 1));
    assert!(r.check_and_hit_n(5, 1));
    assert!(!r.check_and_hit_n(6, 1));
    assert_eq!(r.blocked_until, 13);
    assert!(
        r.check_and_hit_n(13, 1),
        "the bound must not outlive the oldest hit"
    );
}

#[test]
fn hit_keeps_the_newest_hits() {
    let mut r = ring(2, 10);
    r.hit_n(20, 1);
    r.hit_n(5, 1);
    r.hit_n(8, 1); // replaces 5, the minimum
    r.hit_n(1, 1); // older than both: dropped
    let mut slots = r.slot_values();
    slots.sort_unstable();
    assert_eq!(slots, vec![encode(8), encode(20)]);
}

#[test]
fn status_reports_retry_after_from_the_oldest_live_hit() {
    let mut r = ring(2, 10);
    r.hit_n(4, 1);
    r.hit_n(6, 1);
    let s = r.status(7);
    assert_eq!((s.count, s.remaining, s.retry_after_ticks), (2, 0, 7));
    assert_eq!(r.status(14).remaining, 1);
    assert_eq!(r.idle_from(), 16);
}

#[test]
fn is_fresh_by_agrees_with_fresh_from_in_any_order() {
    let mut r = ring(3, 10);
    for t in [40, 7, 25, 3, 31, 12] {
        r.hit_n(t, 1);
        for horizon in 0..60 {
            assert_eq!(r.is_idle_by(horizon), r.idle_from() <= horizon, "{horizon}");
        }
    }
    assert!(
        ring(2, 10).is_idle_by(0),
        "an empty ring is fresh from tick 0"
    );
}

#[test]
fn atomic_and_sequential_take_the_same_slots() {
    let limit = Limit::new(3, 10).unwrap();
    let mut seq = SequentialRing::new(limit);
    let atomic = AtomicRing::new(limit);
    for (i, t) in [5u64, 1, 9, 30, 12, 31, 31, 2, 45].into_iter().enumerate() {
        if i % 3 == 0 {
            seq.hit_n(t, 1);
            atomic.hit_n(t, 1).unwrap();
        } else {
            assert_eq!(Ok(seq.check_and_hit_n(t, 1)), atomic.check_and_hit_n(t, 1));
        }
        assert_eq!(seq.slot_values(), atomic.slot_values());
    }
}

/// A ring of more slots than a seal keeps on its stack, with one live hit past that point:
/// the seal takes the first 80 slots, meets the live one, and must give every value back,
/// the spilled ones included.
#[test]
fn a_seal_given_back_restores_every_slot_beyond_the_stack_buffer() {
    let limit = Limit::new(100, 10).unwrap();
    let ring = AtomicRing::new(limit);
    for t in 1..=80 {
        assert_eq!(ring.check_and_hit_n(t, 1), Ok(true));
    }
    ring.hit_n(1000, 1).unwrap(); // into slot 80, the first empty one
    for t in 81..=99 {
        assert_eq!(ring.check_and_hit_n(t, 1), Ok(true));
    }
    let before = ring.slot_values();
    assert_eq!(before[80], encode(1000));
    assert_eq!(
        ring.try_seal(500),
        None,
        "the hit at 1000 is live for a sweep at 500"
    );
    assert_eq!(
        ring.slot_values(),
        before,
        "every sealed value is given back"
    );
    assert_eq!(
        ring.check_and_hit_n(1005, 1),
        Ok(true),
        "the ring still decides"
    );
}

/// A ring of more slots than the stack buffer, all expired: the seal takes every slot, says
/// from when the ring was fresh, and every later operation is told to look the key up again.
#[test]
fn a_full_seal_of_a_large_ring_retires_it() {
    let ring = AtomicRing::new(Limit::new(100, 10).unwrap());
    for t in 1..=100 {
        assert_eq!(ring.check_and_hit_n(t, 1), Ok(true));
    }
    assert_eq!(ring.try_seal(200), Some(110), "the newest hit (100) + W");
    assert!(ring.slot_values().iter().all(|&value| value == SEALED));
    assert_eq!(ring.check_and_hit_n(300, 1), Err(Retired));
    assert_eq!(ring.hit_n(300, 1), Err(Retired));
    assert_eq!(ring.allowed_n(300, 1), Err(Retired));
    assert_eq!(ring.try_seal(400), None, "sealed once only");
}

/// Whether `slots` ascend around the ring from `start`.
fn ascends_from(slots: &[u64], start: usize) -> bool {
    (1..slots.len()).all(|offset| {
        let index = (start + offset) % slots.len();
        let previous = (start + offset - 1) % slots.len();
        slots[previous] <= slots[index]
    })
}

/// Slot reads that `operation` made on this thread.
fn probes_of<T>(operation: impl FnOnce() -> T) -> (T, u64) {
    let before = slot_probes_on_this_thread().expect("tests are debug builds");
    let answer = operation();
    let after = slot_probes_on_this_thread().expect("tests are debug builds");
    (answer, after - before)
}

/// Random traces in any order, with rings large enough to re-sort: the two forms take the
/// same slots call by call (so they re-sort at the same calls), answer alike, and whenever
/// the sequential form says it knows its order, the ring really ascends from there.
#[test]
fn forms_agree_and_the_known_order_is_true_on_random_traces() {
    let mut random = XorShift(0x2545_F491_4F6C_DD1D);
    for round in 0..300 {
        let max = 1 + random.below(24);
        let window = 1 + random.below(40);
        let limit = Limit::new(max, window).unwrap();
        let mut seq = SequentialRing::new(limit);
        let atomic = AtomicRing::new(limit);
        let mut ticks = LateTicks::new(&mut random, window);
        for call in 0..400 {
            let now = ticks.next(&mut random);
            let what = format!("round {round} call {call} now {now} (N {max}, W {window})");
            match random.below(10) {
                0..=5 => assert_eq!(
                    Ok(seq.check_and_hit_n(now, 1)),
                    atomic.check_and_hit_n(now, 1),
                    "{what}"
                ),
                6 | 7 => {
                    seq.hit_n(now, 1);
                    atomic.hit_n(now, 1).unwrap();
                }
                8 => assert_eq!(
                    Ok(seq.allowed_n(now, 1)),
                    atomic.allowed_n(now, 1),
                    "{what}"
                ),
                _ => assert_eq!(Ok(seq.status(now)), atomic.status(now), "{what}"),
            }
            assert_eq!(seq.slot_values(), atomic.slot_values(), "{what}");
            let slots = seq.slot_values();
            if let Some(oldest_at) = seq.known_order() {
                assert!(ascends_from(&slots, oldest_at), "{what}: {slots:?}");
            }
            let newest = slots.iter().copied().max().unwrap();
            assert_eq!(seq.idle_from(), idle_from_newest(newest, window), "{what}");
        }
    }
}

/// The inline form against the allocated one on random traces in any order: an inline ring
/// (grown by hand, as the keyed limiter grows it, whenever an operation answers `Retired`
/// with [`AtomicRing::needs_slots`]) answers every call as a ring allocated from the start
/// does and, once grown, holds the same slots in the same places with the same cursor. An
/// inline ring never answers `Retired` without needing its slots, reads never need them, and
/// it grows at most once, on the first write that needs a second slot (or, at `N` = 1, a
/// forced hit that drops a live one).
#[test]
fn the_inline_form_answers_as_the_allocated_one_on_random_traces() {
    let mut random = XorShift(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let max = 1 + random.below(12);
        let window = 1 + random.below(40);
        let limit = Limit::new(max, window).unwrap();
        let allocated = AtomicRing::new(limit);
        let mut ring = AtomicRing::inline(limit);
        assert_eq!(ring.limit(), limit);
        let mut grown_at = None;
        let mut ticks = LateTicks::new(&mut random, window);
        for call in 0..60 {
            let now = ticks.next(&mut random);
            let what = format!("round {round} call {call} now {now} (N {max}, W {window})");
            let operation = random.below(10);
            loop {
                let answered = match operation {
                    0..=5 => ring.check_and_hit_n(now, 1).map(|admitted| {
                        assert_eq!(Ok(admitted), allocated.check_and_hit_n(now, 1), "{what}");
                    }),
                    6 | 7 => ring
                        .hit_n(now, 1)
                        .map(|()| allocated.hit_n(now, 1).unwrap()),
                    8 => ring.allowed_n(now, 1).map(|allowed| {
                        assert_eq!(Ok(allowed), allocated.allowed_n(now, 1), "{what}");
                    }),
                    _ => ring.status(now).map(|status| {
                        assert_eq!(Ok(status), allocated.status(now), "{what}");
                    }),
                };
                if answered.is_ok() {
                    break;
                }
                assert!(ring.needs_slots(), "{what}: Retired only to grow");
                assert!(operation <= 7, "{what}: a read never needs the slots");
                assert_eq!(grown_at, None, "{what}: grown once");
                let outgrown = ring.seal_for_growth().expect("an inline ring seals");
                assert!(!ring.needs_slots(), "{what}: sealed for good");
                ring = ring.grown(outgrown).expect("an inline ring grows");
                grown_at = Some(call);
            }
            assert_eq!(ring.slot_values(), allocated.slot_values(), "{what}");
            assert_eq!(ring.limit(), limit, "{what}");
            assert_eq!(
                ring.fresh_from_hint(),
                allocated.fresh_from_hint(),
                "{what}"
            );
        }
        // (`blocked_until` is a hint: an inline ring at `N` = 1 keeps none, so the two may
        // differ there while every answer agrees.)
        assert_eq!(ring.export(), allocated.export(), "round {round}");
    }
}

/// An inline ring's seals: the sweeper's (only when its hit is expired for the horizon) and
/// the replacement's are both for good, and a sealed inline ring answers `Retired` without
/// asking to grow.
#[test]
fn an_inline_ring_is_sealed_for_good() {
    let limit = Limit::new(3, 10).unwrap();
    let ring = AtomicRing::inline(limit);
    assert_eq!(ring.check_and_hit_n(5, 1), Ok(true));
    assert_eq!(ring.try_seal(14), None, "5 is live for 14");
    assert_eq!(ring.try_seal(15), Some(15));
    assert_eq!(ring.check_and_hit_n(20, 1), Err(Retired));
    assert!(!ring.needs_slots());
    assert_eq!(ring.seal_for_growth(), None);
    assert_eq!(ring.seal_for_swap(), None);
    assert_eq!(ring.export(), Err(Retired));

    let swapped = AtomicRing::inline(limit);
    assert_eq!(swapped.check_and_hit_n(5, 1), Ok(true));
    let state = swapped.seal_for_swap().expect("not sealed yet");
    assert_eq!(
        state,
        AtomicRing::from_slot_values(limit, vec![6, 0, 0], Carried::NONE)
            .export()
            .unwrap()
    );
    assert_eq!(swapped.hit_n(6, 1), Err(Retired));
    assert_eq!(swapped.try_seal(100), None);
}

/// N = 1000 at the limit rate (one admission per tick, W = N): in order, an admission reads
/// at most the cursor's line of slots. A late phase (a window of calls in shuffled order)
/// leaves the ring out of time order; at the limit rate exactly one slot expires per call,
/// somewhere else each time, and each admission reuses it, so without a re-sort every
/// in-order call would scan O(N) slots for ever. After it,
/// the displacement re-sorts the ring within a few calls, and in-order calls read no more
/// slots than before it, in both forms.
#[test]
fn in_order_admissions_are_cheap_again_after_a_late_phase() {
    const N: u64 = 1000;
    let limit = Limit::new(N, N).unwrap();
    let mut seq = SequentialRing::new(limit);
    let atomic = AtomicRing::new(limit);
    let mut call = |now: u64| -> (bool, u64) {
        let (answer, probes) = probes_of(|| seq.check_and_hit_n(now, 1));
        let (atomic_answer, atomic_probes) = probes_of(|| atomic.check_and_hit_n(now, 1));
        assert_eq!(Ok(answer), atomic_answer, "now {now}");
        (answer, probes.max(atomic_probes))
    };
    let mut now = 1;
    for _ in 0..2 * N {
        assert!(call(now).0);
        now += 1;
    }
    let (_, before) = (0..N).fold((0, 0), |(_, most), _| {
        let (admitted, probes) = call(now);
        assert!(admitted);
        now += 1;
        (0, most.max(probes))
    });
    assert!(
        before <= CURSOR_LINE + 1,
        "in order, an admission reads {before} slots"
    );

    // The late phase: after a pause of a window (every hit expires), a window's worth of
    // calls whose ticks come in a shuffled order, each admitted into the next slot in ring
    // order, so ring order no longer follows time order.
    now += N;
    let mut ticks: Vec<u64> = (now..now + N).collect();
    let mut random = XorShift(7);
    for i in (1..ticks.len()).rev() {
        ticks.swap(i, random.below(i as u64 + 1) as usize);
    }
    for &tick in &ticks {
        assert!(call(tick).0);
    }
    now += N;
    // The late phase is over. Settling: the displacement it left re-sorts the ring.
    let settling: u64 = (0..20)
        .map(|_| {
            let (_, probes) = call(now);
            now += 1;
            probes
        })
        .sum();
    assert!(
        settling <= (RESORT_BOUND + 2) * N,
        "settling after the late phase read {settling} slots"
    );
    for _ in 0..2 * N {
        let (_, probes) = call(now);
        now += 1;
        assert!(
            probes <= before,
            "an in-order call after the late phase read {probes} slots"
        );
    }
}

/// What the settling phase above may read: the displacement before a re-sort, the re-sort,
/// and the call that brought the count over.
const RESORT_BOUND: u64 = 4 + 1 + 1;
/// Slots in the cursor's line.
const CURSOR_LINE: u64 = 8;

/// The locked form at saturation, in order: a refusal reads the oldest slot only, even right
/// after the admission that replaced the previous oldest; `hit` on the full ring reads two
/// slots; `status` a binary search; `allowed` one slot.
#[test]
fn the_locked_ring_in_order_reads_a_constant_number_of_slots() {
    const N: u64 = 1 << 12;
    let mut r = ring(N, N);
    for now in 1..=N {
        assert!(r.check_and_hit_n(now, 1));
    }
    for now in N + 1..N + 200 {
        // The oldest hit (now - N) has just expired: one admission, then refusals.
        let (admitted, probes) = probes_of(|| r.check_and_hit_n(now, 1));
        assert!(admitted);
        assert!(probes <= 2, "{probes}");
        for _ in 0..3 {
            let (admitted, probes) = probes_of(|| r.check_and_hit_n(now, 1));
            assert!(!admitted);
            assert!(probes <= 2, "a refusal read {probes} slots");
        }
        let (allowed, probes) = probes_of(|| r.allowed_n(now, 1));
        assert!(!allowed && probes <= 1, "{probes}");
        let (status, probes) = probes_of(|| r.status(now));
        assert_eq!((status.count, status.retry_after_ticks), (N, 1));
        assert!(probes <= 2 + 12, "status read {probes} slots");
    }
    // hit replaces the oldest, in order: two reads.
    for now in N + 200..N + 400 {
        let ((), probes) = probes_of(|| r.hit_n(now, 1));
        assert!(probes <= 2, "hit read {probes} slots");
    }
    assert!(r.known_order().is_some());
}

/// The locked ring knows its order exactly, with no scan: a late write loses it, and the
/// in-order writes that replace the late value give it back.
#[test]
fn the_locked_ring_knows_when_its_order_comes_back() {
    let mut r = ring(4, 10);
    for now in [1, 2, 3, 4] {
        assert!(r.check_and_hit_n(now, 1));
    }
    assert_eq!(r.known_order(), Some(0));
    assert!(r.check_and_hit_n(12, 1)); // replaces 1: [12, 2, 3, 4]
    assert_eq!(r.known_order(), Some(1));
    r.hit_n(11, 1); // late: replaces 2, the oldest, with 11 < 12: [12, 11, 3, 4]
    assert_eq!(r.known_order(), None);
    assert!(!r.check_and_hit_n(12, 1));
    for now in [13, 14] {
        assert!(r.check_and_hit_n(now, 1)); // replaces 3, 4: [12, 11, 13, 14]
    }
    assert_eq!(r.known_order(), None);
    // Tick 22 replaces 12 (the first expired slot from the cursor): [22, 11, 13, 14]
    // ascends from slot 1 again.
    assert!(r.check_and_hit_n(22, 1));
    assert_eq!(r.slot_values(), [22, 11, 13, 14].map(encode));
    assert_eq!(r.known_order(), Some(1));
    let ((), probes) = probes_of(|| r.hit_n(23, 1));
    assert_eq!(probes, 2, "hit on a ring in known order reads two slots");
    assert_eq!(r.status(23).count, 3, "13 left the window (13, 23]");
}
