//! The harness of slidelimit's loom models: a model runner with the project's defaults, and
//! the oracles and quiescent checks that the model files share.
//!
//! Everything here exists only under `--cfg slidelimit_loom` (`ci/loom.sh` sets it); without
//! it this crate is empty, so a plain `cargo test` never builds loom. The models themselves
//! live in `tests/*.rs`, one file per structure (`ring.rs`, `keyed.rs`, and a new file for
//! each new lock-free structure); see `README.md` beside this crate.
//!
//! # What a check means
//! Every assertion message starts with a fixed tag (`window oracle:`, `slot shrank:`,
//! `blocked_until above the true bound:`, `unjustified refusal:`, `lost hit:`, `seal left
//! behind:`), so that a negative control can say which check must catch its mutant.

#![cfg(slidelimit_loom)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use slidelimit::raw::AtomicRing;
use slidelimit_trace::audit::Audit;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// The window length of every model, in ticks.
pub const WINDOW_TICKS: u64 = 10;

/// The preemption bound used when `LOOM_MAX_PREEMPTIONS` is not set.
pub const DEFAULT_PREEMPTION_BOUND: usize = 2;

/// Explores every interleaving of `model` up to the preemption bound, then prints one
/// summary line: `loom-model name=... executions=... preemption_bound=... seconds=...`
/// (`ci/loom.sh` counts these lines).
///
/// Honours loom's environment variables (`LOOM_MAX_PREEMPTIONS`, `LOOM_MAX_BRANCHES`,
/// `LOOM_CHECKPOINT_FILE` with the `checkpoint` feature, `LOOM_LOG`, `LOOM_LOCATION`); only
/// the preemption bound gets a default of its own, [`DEFAULT_PREEMPTION_BOUND`], so that a
/// model run alone is bounded the way CI runs it.
///
/// # Panics
/// When some explored execution panics: the model found a bug (or, for a negative control,
/// caught its mutant).
pub fn check<F>(name: &str, model: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    let bound = *builder
        .preemption_bound
        .get_or_insert(DEFAULT_PREEMPTION_BOUND);
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executions);
    // The same subscriber `loom::model` installs, so that `LOOM_LOG` prints the schedule.
    let _log = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_env("LOOM_LOG"))
        .with_test_writer()
        .without_time()
        .finish()
        .set_default();
    let start = Instant::now();
    builder.check(move || {
        // Relaxed: a std counter of executions, outside loom's view; read after `check`.
        counter.fetch_add(1, Ordering::Relaxed);
        model();
    });
    println!(
        "loom-model name={name} executions={} preemption_bound={bound} seconds={:.2}",
        executions.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}

/// The value of a ring slot sealed by a sweeper.
pub const SEALED_SLOT: u64 = u64::MAX;

/// No slot of a ring that is still in the key map is sealed: a sweeper that gave up on a
/// removal restored every slot it had sealed.
///
/// # Panics
/// `seal left behind:` otherwise.
pub fn assert_no_seal(slots: &[u64]) {
    assert!(
        !slots.contains(&SEALED_SLOT),
        "seal left behind: a live entry's slots are {slots:?}"
    );
}

/// The tick a ring slot value holds, `None` for an empty slot (the ring stores `tick + 1`).
#[must_use]
pub fn slot_tick(value: u64) -> Option<u64> {
    value.checked_sub(1)
}

/// The slot value a tick is stored as.
#[must_use]
pub fn slot_value(tick: u64) -> u64 {
    tick + 1
}

/// Whether a hit at `hit_tick` counts for a caller at `now` (the contract's `s + W > now`).
#[must_use]
pub fn is_live(hit_tick: u64, now: u64) -> bool {
    hit_tick + WINDOW_TICKS > now
}

/// Races one `check_and_hit(key, tick)` per tick in `ticks`, each on a thread of its own over
/// the shared `limiter`; joins them all and returns each tick with its answer, in the order of
/// `ticks`.
///
/// # Panics
/// When a call panics (the model found a bug, or a negative control caught its mutant).
pub fn check_and_hit_racing<L>(
    limiter: &loom::sync::Arc<L>,
    key: u64,
    ticks: &[u64],
) -> Vec<(u64, bool)>
where
    L: slidelimit::RateLimiter<u64> + Send + Sync + 'static,
{
    let callers: Vec<_> = ticks
        .iter()
        .map(|&now| {
            let limiter = loom::sync::Arc::clone(limiter);
            loom::thread::spawn(move || (now, limiter.check_and_hit(&key, now)))
        })
        .collect();
    callers
        .into_iter()
        .map(|caller| caller.join().expect("a racing call panicked"))
        .collect()
}

/// The window oracle: no interval `(x - W, x]` holds more than `max_requests` of the
/// `admitted` ticks (every `check_and_hit` that returned true, prefix included), by the
/// workspace's one window audit.
///
/// # Panics
/// `window oracle:` when some interval holds more.
pub fn assert_window_safe(admitted: &[u64], max_requests: usize) {
    let audit = Audit::new(max_requests as u64, WINDOW_TICKS).expect("a window of 10 ticks");
    if let Err(over) = audit.key(admitted.iter().map(|&tick| (tick, 1))).check() {
        panic!("window oracle: {over}; admitted {admitted:?}");
    }
}

/// Slot values only grow: each slot now holds at least what it held before.
///
/// # Panics
/// `slot shrank:` when a slot went down.
pub fn assert_slots_grew(before: &[u64], after: &[u64]) {
    for (index, (old, new)) in before.iter().zip(after).enumerate() {
        assert!(
            new >= old,
            "slot shrank: slot {index} went from {old} to {new} (before {before:?}, after {after:?})"
        );
    }
}

/// `blocked_until` is a lower bound on the first tick at which a slot can expire: never above
/// the oldest slot's tick + W, and only ever raised over a full ring.
///
/// # Panics
/// `blocked_until above the true bound:` otherwise.
pub fn assert_blocked_until_bound(slots: &[u64], blocked_until: u64) {
    if blocked_until == 0 {
        return;
    }
    let oldest = slots.iter().map(|&v| slot_tick(v)).min().flatten();
    let bound = oldest.map(|tick| tick + WINDOW_TICKS);
    assert!(
        bound.is_some_and(|bound| blocked_until <= bound),
        "blocked_until above the true bound: {blocked_until} with slots {slots:?} (bound {bound:?})"
    );
}

/// A refusal at `now` is justified only if every slot was seen live for `now`. Slots only
/// grow, so every slot of the final state must be live for `now` too.
///
/// # Panics
/// `unjustified refusal:` when some final slot is empty or expired for `now`.
pub fn assert_refusal_justified(now: u64, slots: &[u64]) {
    let free = slots
        .iter()
        .position(|&v| slot_tick(v).is_none_or(|tick| !is_live(tick, now)));
    assert!(
        free.is_none(),
        "unjustified refusal: check_and_hit({now}) refused but slot {free:?} is free for it; final slots {slots:?}"
    );
}

/// The quiescent state of an atomic ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingState {
    /// The raw slot values (`tick + 1`, 0 for empty).
    pub slots: Vec<u64>,
    /// The `blocked_until` hint.
    pub blocked_until: u64,
}

impl RingState {
    /// Reads a ring at quiescence (after every model thread was joined).
    #[must_use]
    pub fn of(ring: &AtomicRing) -> Self {
        Self {
            slots: ring.slot_values(),
            blocked_until: ring.blocked_until_hint(),
        }
    }

    /// The ticks held, sorted, empty slots left out.
    #[must_use]
    pub fn ticks(&self) -> Vec<u64> {
        let mut ticks: Vec<u64> = self.slots.iter().filter_map(|&v| slot_tick(v)).collect();
        ticks.sort_unstable();
        ticks
    }
}
