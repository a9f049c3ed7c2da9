//! Loom models of the exact log's re-sort (`crates/core/src/window/ring/atomic/resort.rs`):
//! a re-sort seals every slot, puts the values back in time order and bumps a seqlock
//! generation, while writers CAS slots and scans decide on what they read. W = 10, explicit
//! ticks; the re-sort is started directly (`resort_for_model`) rather than by the
//! displacement of many admissions.
//!
//! Checks at quiescence: the window oracle over every admitted tick, no slot left sealed,
//! every refusal justified by the final slots, and the multiset of values exactly what the
//! calls made of it (a re-sort loses no hit and invents none). Negative controls (built only
//! with `--cfg slidelimit_loom_mutant="..."`) run the same models against the core's
//! deliberately broken re-sorts and must panic.

#![cfg(slidelimit_loom)]

use loom::sync::Arc;
use loom::thread;
use slidelimit::raw::{AtomicRing, AtomicWindow};
use slidelimit::Limit;
use slidelimit_loom::{
    assert_no_seal, assert_refusal_justified, assert_window_safe, check, RingState, WINDOW_TICKS,
};

/// Fills a ring of `prefix.len()` slots with `check_and_hit` at the ticks of `prefix`, in
/// order (each must be admitted), so slot `i` holds `prefix[i]`.
fn ring_holding(prefix: &[u64]) -> Arc<AtomicRing> {
    let limit = Limit::new(prefix.len() as u64, WINDOW_TICKS).unwrap();
    let ring = Arc::new(AtomicRing::new(limit));
    for &now in prefix {
        assert_eq!(ring.check_and_hit_n(now, 1), Ok(true), "prefix {now}");
    }
    ring
}

/// A re-sort racing one `check_and_hit(now)`: returns the answer and the ring at quiescence,
/// after the checks every re-sort model shares. `expected` is the sorted multiset of ticks
/// the ring must end with if the call is admitted (the prefix with its oldest expired tick
/// replaced by `now`).
fn resort_racing_check_and_hit(prefix: &[u64], now: u64, expected: &[u64]) -> bool {
    let ring = ring_holding(prefix);
    let sorter = {
        let ring = Arc::clone(&ring);
        thread::spawn(move || {
            ring.resort_for_model();
        })
    };
    // Nothing seals this ring for removal, so `Retired` would be a bug: a writer that
    // meets the re-sort's seal must wait for it.
    let admitted = ring.check_and_hit_n(now, 1).expect("no sweeper here");
    sorter.join().unwrap();
    let end = RingState::of(&ring);
    assert_no_seal(&end.slots);
    let mut ticks = prefix.to_vec();
    if admitted {
        ticks.push(now);
    } else {
        assert_refusal_justified(now, &end.slots);
    }
    assert_window_safe(&ticks, prefix.len());
    if admitted {
        assert_eq!(
            end.ticks(),
            expected,
            "lost or invented a hit: slots {:?}",
            end.slots
        );
    }
    admitted
}

/// O1: a scan that a re-sort overlaps must not be trusted. Nine slots (one more than the
/// cursor's line, so the whole-ring probe runs after the line's): ticks 20..=27 in slots
/// 0..=7 and a late 5 in slot 8, cursor at 0. A caller at 16 finds only slot 8 expired; a
/// re-sort moves 5 to slot 0. A scan that read slot 0 before the re-sort and slots 1..=8
/// after it saw nine live values; it must start again (and then take the 5), never refuse.
fn o1_scan_across_resort() {
    check("ring_order::o1_scan_across_resort", || {
        let prefix = [20, 21, 22, 23, 24, 25, 26, 27, 5];
        let admitted =
            resort_racing_check_and_hit(&prefix, 16, &[16, 20, 21, 22, 23, 24, 25, 26, 27]);
        assert!(admitted, "a slot was free for 16 all along");
    });
}

/// O2: a writer's CAS racing the re-sort's seal: two slots, 20 and a late 5, a caller at
/// 16. Whether its CAS lands before the seal of its slot (the re-sort carries the 16) or
/// after (it waits, then takes the 5 where the re-sort put it), the ring ends with 16 and
/// 20: no hit lost, none doubled.
fn o2_writer_racing_the_seal() {
    check("ring_order::o2_writer_racing_the_seal", || {
        let admitted = resort_racing_check_and_hit(&[20, 5], 16, &[16, 20]);
        assert!(admitted, "a slot was free for 16 all along");
    });
}

#[test]
fn o1() {
    o1_scan_across_resort();
}

#[test]
fn o2() {
    o2_writer_racing_the_seal();
}

// Negative controls: they exist only in the build of their mutant (`ci/loom.sh` builds each
// one and runs only these), where the model must fail with the named check.

/// Y1: a whole-ring probe that does not check the re-sort generation refuses on a scan that
/// saw the late 5's slot only after the re-sort had moved it behind the scan.
#[test]
#[cfg(slidelimit_loom_mutant = "resort_unchecked_scan")]
#[should_panic(expected = "unjustified refusal:")]
fn mutant_resort_unchecked_scan_caught_by_o1() {
    o1_scan_across_resort();
}

/// Y2: a re-sort that reads and writes the values back without sealing overwrites a
/// writer's CAS in between: its hit is lost.
#[test]
#[cfg(slidelimit_loom_mutant = "resort_without_seal")]
#[should_panic(expected = "lost or invented a hit")]
fn mutant_resort_without_seal_caught_by_o2() {
    o2_writer_racing_the_seal();
}
