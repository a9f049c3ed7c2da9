//! The exact log keeps its in-order fast path through a late phase: after
//! out-of-order calls on a key, in-order calls cost what they cost before (the ring re-sorts
//! itself), in every variant. Work is counted in slot reads on this thread
//! (`slot_probes_on_this_thread`, debug builds), never timed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;

use slidelimit::raw::{AtomicRing, AtomicWindow};
use slidelimit::window::ring::slot_probes_on_this_thread;
use slidelimit::RateLimiter;

use crate::trace::check_safety;
use crate::variants::{default_variants, limit};
use slidelimit_trace::rng::SplitMix64;

/// Slots per ring: above the cursor's line of 8, so that disorder costs something.
const N: u64 = 512;
/// Slots in the cursor's line: an in-order admission reads at most these and one more.
const CURSOR_LINE: u64 = 8;
/// A ring re-sorts once the displacement reaches this many times its size.
const RESORT_AT: u64 = 4;

/// Slot reads that `call` made on this thread.
fn probes_of<T>(call: impl FnOnce() -> T) -> (T, u64) {
    let before = slot_probes_on_this_thread().expect("tests are debug builds");
    let answer = call();
    (answer, slot_probes_on_this_thread().unwrap() - before)
}

/// Every variant side by side on one key, one call each per step: the answers must agree,
/// and the slot reads are kept per variant.
struct Lockstep {
    limiters: Vec<Box<dyn RateLimiter<u64>>>,
    admitted: Vec<Vec<(u64, u64)>>,
}

impl Lockstep {
    fn new() -> Self {
        let limiters = default_variants::<u64>(limit(N, N));
        let admitted = vec![Vec::new(); limiters.len()];
        Self { limiters, admitted }
    }

    /// `check_and_hit(now)` on every variant: the common answer and each one's slot reads.
    fn check_and_hit(&mut self, now: u64) -> (bool, Vec<u64>) {
        let mut answers = Vec::new();
        let mut probes = Vec::new();
        for (limiter, admitted) in self.limiters.iter().zip(&mut self.admitted) {
            let (answer, reads) = probes_of(|| limiter.check_and_hit(&7, now));
            if answer {
                admitted.push((7, now));
            }
            answers.push(answer);
            probes.push(reads);
        }
        assert!(
            answers.iter().all(|&answer| answer == answers[0]),
            "variants disagree at {now}: {answers:?}"
        );
        (answers[0], probes)
    }

    fn names(&self) -> Vec<&'static str> {
        self.limiters.iter().map(|limiter| limiter.name()).collect()
    }

    fn check_safety(&self) {
        for (name, admitted) in self.names().into_iter().zip(&self.admitted) {
            check_safety(admitted, N, N).unwrap_or_else(|error| panic!("{name}: {error}"));
        }
    }
}

/// The scenario at N = 512, one admission per tick (the limit rate): before the fix,
/// every in-order call after the late phase read O(N) slots for ever, in every variant.
#[test]
fn in_order_calls_after_a_late_phase_cost_what_they_cost_before_it() {
    let mut all = Lockstep::new();
    let mut now = 1;
    for _ in 0..2 * N {
        assert!(all.check_and_hit(now).0);
        now += 1;
    }
    let mut before = vec![0; all.limiters.len()];
    for _ in 0..N {
        let (admitted, probes) = all.check_and_hit(now);
        assert!(admitted);
        for (most, reads) in before.iter_mut().zip(probes) {
            *most = (*most).max(reads);
        }
        now += 1;
    }
    assert!(
        before.iter().all(|&most| most <= CURSOR_LINE + 1),
        "{before:?}"
    );

    // The late phase: after a pause of a window (every hit expires), a window's worth of
    // calls whose ticks come in a shuffled order. Each is admitted into the next slot in ring
    // order, so ring order no longer follows time order; at the limit rate exactly one slot
    // expires per call afterwards, somewhere else each time, and each admission reuses it.
    now += N;
    let mut ticks: Vec<u64> = (now..now + N).collect();
    let mut rng = SplitMix64::new(10);
    for i in (1..ticks.len()).rev() {
        ticks.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for &tick in &ticks {
        assert!(all.check_and_hit(tick).0);
    }
    now += N;
    // Settling, for one window: the displacement the late phase left triggers a re-sort
    // within a few calls (its reads are counted too: one per slot), and the late values that
    // are still in order enough not to trigger one leave the ring within the window (until
    // then, an admission reads at most its cursor's line).
    let mut settling = vec![0; all.limiters.len()];
    for _ in 0..N {
        let (_, probes) = all.check_and_hit(now);
        for (sum, reads) in settling.iter_mut().zip(probes) {
            *sum += reads;
        }
        now += 1;
    }
    assert!(
        settling
            .iter()
            .all(|&sum| sum <= (RESORT_AT + 2) * N + (CURSOR_LINE + 1) * N),
        "settling read {settling:?} slots per variant ({:?})",
        all.names()
    );
    for _ in 0..3 * N {
        let (_, probes) = all.check_and_hit(now);
        for (name, (reads, most)) in all.names().iter().zip(probes.iter().zip(&before)) {
            assert!(
                reads <= most,
                "{name}: an in-order call at {now} read {reads} slots, at most {most} before the late phase"
            );
        }
        now += 1;
    }
    all.check_safety();
}

/// At saturation in order (ten calls per tick): the locked variants refuse, `hit` and
/// `status` with a constant or logarithmic number of reads; the lock-free variant's refusals
/// read the whole ring (and the cursor's line again) at most once per admission, its
/// documented bound; its other refusals read no slot.
#[test]
fn saturated_in_order_work_is_bounded_in_every_variant() {
    for limiter in default_variants::<u64>(limit(N, N)) {
        let name = limiter.name();
        let mut now = 1;
        for _ in 0..N {
            assert!(limiter.check_and_hit(&7, now));
            now += 1;
        }
        let (mut admitted, mut total) = (0u64, 0u64);
        let mut most_per_call = 0;
        for _ in 0..N {
            for _ in 0..10 {
                let (answer, reads) = probes_of(|| limiter.check_and_hit(&7, now));
                admitted += u64::from(answer);
                total += reads;
                most_per_call = most_per_call.max(reads);
            }
            now += 1;
        }
        assert_eq!(admitted, N, "{name}: one admission per tick");
        let (status, status_reads) = probes_of(|| limiter.status(&7, now));
        assert_eq!(status.remaining, 1, "{name}");
        let ((), hit_reads) = probes_of(|| limiter.hit(&7, now));
        if name == "lock-free" {
            assert!(
                total <= admitted * (2 * (CURSOR_LINE + 1) + N),
                "{name}: {total} reads for {admitted} admissions"
            );
        } else {
            assert!(
                most_per_call <= 2,
                "{name}: a call read {most_per_call} slots"
            );
            // Binary search over 512 slots, and the oldest live one.
            assert!(
                status_reads <= 11,
                "{name}: status read {status_reads} slots"
            );
            assert!(hit_reads <= 2, "{name}: hit read {hit_reads} slots");
        }
    }
}

/// Re-sorts racing writers on one atomic ring: two threads in order and one up to a window
/// late, on a shared clock. Every admission must keep the window invariant, no call may be
/// told the ring was retired (nobody sweeps it), and re-sorts must really have run during
/// the race (otherwise the test shows nothing about them).
#[test]
fn resorts_racing_writers_keep_the_window_invariant() {
    const SLOTS: u64 = 32;
    const WINDOW: u64 = 64;
    const CALLS: u64 = 20_000;
    let ring = AtomicRing::new(limit(SLOTS, WINDOW));
    let clock = AtomicU64::new(4 * WINDOW);
    let admitted = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for writer in 0..3u64 {
            let (ring, clock, admitted) = (&ring, &clock, &admitted);
            scope.spawn(move || {
                let mut rng = SplitMix64::new(writer + 1);
                let mut mine = Vec::new();
                for _ in 0..CALLS {
                    // Relaxed: the clock only hands out ticks; nothing is published by it.
                    let tick = clock.fetch_add(1, Ordering::Relaxed) / 2;
                    let now = if writer == 2 {
                        tick - rng.below(WINDOW)
                    } else {
                        tick
                    };
                    if ring
                        .check_and_hit_n(now, 1)
                        .expect("nobody seals this ring")
                    {
                        mine.push((0u8, now));
                    }
                    if rng.below(16) == 0 {
                        let _ = ring.status(now).expect("nobody seals this ring");
                        let _ = ring.allowed_n(now, 1).expect("nobody seals this ring");
                    }
                }
                admitted.lock().unwrap().extend(mine);
            });
        }
    });
    let admitted = admitted.into_inner().unwrap();
    check_safety(&admitted, SLOTS, WINDOW).unwrap();
    assert!(!admitted.is_empty());
    assert!(
        ring.resorts() > Some(0),
        "no re-sort ran during the race: the test proves nothing about them"
    );
    assert!(
        ring.slot_values().iter().all(|&value| value != u64::MAX),
        "a re-sort left a slot sealed"
    );
}
