//! Unit tests of the exact log's arithmetic and of the two storages taking the same slots.

use super::*;
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
    let mut slots = r.slots.to_vec();
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
    assert_eq!(r.fresh_from(), 16);
}

#[test]
fn is_fresh_by_agrees_with_fresh_from_in_any_order() {
    let mut r = ring(3, 10);
    for t in [40, 7, 25, 3, 31, 12] {
        r.hit_n(t, 1);
        for horizon in 0..60 {
            assert_eq!(
                r.is_fresh_by(horizon),
                r.fresh_from() <= horizon,
                "{horizon}"
            );
        }
    }
    assert!(
        ring(2, 10).is_fresh_by(0),
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
        assert_eq!(seq.slots.to_vec(), atomic.slot_values());
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
