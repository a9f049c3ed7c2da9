//! Loom models of the rolling buckets' inline form on the keyed lock-free limiter
//! (`crates/core/src/window/buckets/inline.rs`): a new key's window keeps its words in its
//! header (the head's bucket counts the running total), and the call that needs any other
//! bucket replaces the entry by its allocated form (seal the head word for good, build the
//! array from the sealed words, swap it in by pointer identity). B0 (the window alone: its
//! seal for growth racing an admission at the head's epoch), B1 (two calls at a later epoch,
//! both needing the array, through the limiter). The growth racing a sweeper is the keyed
//! models' M7, whose key is inline when its writer and the sweep start.
//!
//! The key map is the loom stand-in (`crates/core/src/keyed/map.rs`); the inline window, the
//! seals, the growth and every retry loop are the real code.
//!
//! Setup: limit 2 per W = 10 in 2 buckets of 5 ticks (default lateness), one hit admitted at
//! 1 (epoch 0) before the threads start, so the window is inline with a total of 1. At
//! quiescence: the window oracle over every admitted tick, and a window whose running total
//! and bucket counts both hold every admitted hit.

#![cfg(slidelimit_loom)]

use loom::sync::Arc;
use loom::thread;
use slidelimit::raw::{Algorithm, AtomicBuckets, AtomicWindow, Layers};
use slidelimit::{Limit, LockFreeLimiter, Options, RollingBuckets};
use slidelimit_loom::{assert_window_safe, check, check_and_hit_racing, WINDOW_TICKS};

const KEY: u64 = 7;

/// Limit 2 per W in 2 buckets.
fn config() -> RollingBuckets {
    RollingBuckets::new(Limit::new(2, WINDOW_TICKS).unwrap(), 2).unwrap()
}

/// B0: the inline window alone. It holds one hit at 1; one thread seals it for growth and
/// builds the allocated window, the other's `check_and_hit(2)` (the same epoch) reserves in
/// the head word. Either the reservation's CAS came first (admitted, and the grown window's
/// total and head bucket hold it) or it met the seal (`Retired`: nothing was decided). A
/// growth that read the words without sealing them would build a window without 2.
fn b0_seal_for_growth_vs_writer() {
    check("inline_buckets::b0_seal_for_growth_vs_writer", || {
        let window: Arc<Layers<AtomicBuckets>> = Arc::new(config().new_atomic_at(1));
        assert_eq!(window.check_and_hit_n(1, 1), Ok(true), "prefix at 1");
        let writer = {
            let window = Arc::clone(&window);
            thread::spawn(move || window.check_and_hit_n(2, 1))
        };
        let grown = window
            .seal_for_growth()
            .and_then(|()| window.grown(()))
            .expect("nobody else seals");
        let written = writer.join().unwrap();
        let held = if written == Ok(true) { 2 } else { 1 };
        assert_ne!(written, Ok(false), "2 fits: only 1 is in the window");
        assert_eq!(
            grown.widest().quiescent_totals(),
            (held, held),
            "lost hit: the grown window does not hold every admission ({written:?})"
        );
        // The grown window decides as a window allocated from the start: full at 2.
        assert_eq!(grown.check_and_hit_n(3, 1), Ok(held < 2));
    });
}

/// B1: two calls at a later epoch race on the inline window holding 1: each needs the array
/// (the head must advance), one grows it, and exactly one of the two is admitted (1 is live
/// for both, limit 2); the key's current window holds both admitted hits.
fn b1_two_growers() {
    check("inline_buckets::b1_two_growers", || {
        let options = Options::default()
            .lateness_ticks(0)
            .sweep_floor_keys(usize::MAX);
        let limiter = Arc::new(LockFreeLimiter::<u64, RollingBuckets>::with_options(
            config(),
            options,
        ));
        assert!(limiter.check_and_hit(&KEY, 1), "prefix check_and_hit(1)");
        let answers = check_and_hit_racing(&limiter, KEY, &[6, 7]);
        let mut admitted = vec![1];
        admitted.extend(answers.iter().filter(|call| call.1).map(|call| call.0));
        assert_window_safe(&admitted, 2);
        assert_eq!(admitted.len(), 2, "exactly one of 6 and 7: {answers:?}");
        let totals = limiter.model_entry(&KEY, |entry| entry.window().widest().quiescent_totals());
        assert_eq!(
            totals,
            Some((2, 2)),
            "lost hit: the key's window does not hold both admissions"
        );
    });
}

#[test]
fn b0() {
    b0_seal_for_growth_vs_writer();
}

#[test]
fn b1() {
    b1_two_growers();
}

// Negative controls: they exist only in the build of their mutant (`ci/loom.sh` builds each
// one and runs only these), where the model must fail with the named check.

/// X-B0: a growth that builds the allocated window from a look, without sealing, loses an
/// admission made after the look: it stays in the inline window, which is replaced.
#[test]
#[cfg(slidelimit_loom_mutant = "buckets_grow_without_seal")]
#[should_panic(expected = "lost hit:")]
fn mutant_buckets_grow_without_seal_caught_by_b0() {
    b0_seal_for_growth_vs_writer();
}
