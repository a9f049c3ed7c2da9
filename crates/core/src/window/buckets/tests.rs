//! Unit tests of the rolling-bucket algorithm: geometry, refusals, expiry, status, freshness,
//! saturation, epochs past 32 bits, and the two storages agreeing step by step.

use super::algorithm::{check_and_hit, BucketCells};
use super::packed::{decode, low};
use super::*;
use crate::sync::Ordering;
use crate::window::{AtomicWindow, Retired, SequentialWindow, WeightError};

fn limit(max_requests: u64, window_ticks: u64) -> Limit {
    Limit::new(max_requests, window_ticks).unwrap()
}

/// `B = 2` over `W = 10`: buckets of 5 ticks, `NB = 3 + L`.
fn window(max_requests: u64, lateness: u64) -> RollingBuckets {
    RollingBuckets::new(limit(max_requests, 10), 2)
        .unwrap()
        .lateness_buckets(lateness)
        .unwrap()
}

#[test]
fn configuration_errors_are_typed() {
    assert_eq!(
        RollingBuckets::new(limit(1, 10), 0),
        Err(BucketError::ZeroBuckets)
    );
    assert_eq!(
        RollingBuckets::new(limit(1, 10), 11),
        Err(BucketError::NarrowerThanATick {
            buckets: 11,
            window_ticks: 10
        })
    );
    assert_eq!(
        RollingBuckets::new(
            limit(1, 2 * (MAX_PHYSICAL_BUCKETS - 1)),
            MAX_PHYSICAL_BUCKETS - 1
        ),
        Err(BucketError::TooManyBuckets {
            physical: MAX_PHYSICAL_BUCKETS + 1,
            max: MAX_PHYSICAL_BUCKETS
        })
    );
    assert!(matches!(
        window(1, 1).lateness_buckets(u64::MAX),
        Err(BucketError::TooManyBuckets { .. })
    ));
    let widest = RollingBuckets::new(
        limit(1, 2 * (MAX_PHYSICAL_BUCKETS - 2)),
        MAX_PHYSICAL_BUCKETS - 2,
    )
    .unwrap();
    assert_eq!(widest.physical_buckets(), MAX_PHYSICAL_BUCKETS);
    assert!(!BucketError::ZeroBuckets.to_string().is_empty());
}

#[test]
fn a_bucket_count_that_does_not_divide_the_window_keeps_only_the_buckets_needed() {
    let cases = [
        // (W, B asked) -> (width, B kept, span)
        ((10, 6), (2, 5, 10)),
        ((10, 4), (3, 4, 12)),
        ((10, 3), (4, 3, 12)),
        ((10, 10), (1, 10, 10)),
        ((7, 2), (4, 2, 8)),
        ((u64::MAX, 2), (1 << 63, 2, u64::MAX)),
    ];
    for ((window_ticks, asked), (width, kept, span)) in cases {
        let w = RollingBuckets::new(limit(1, window_ticks), asked).unwrap();
        assert_eq!(
            (w.bucket_ticks(), w.buckets(), w.span_ticks()),
            (width, kept, span),
            "W = {window_ticks}, B = {asked}"
        );
        assert!(w.span_ticks() >= window_ticks);
    }
}

#[test]
fn another_window_gets_the_asked_count_clamped_to_it_not_the_effective_one() {
    // 6 asked over 10 ticks keep 5 of 2 ticks; 6 ticks still get 6 of one (issue 35).
    let asked = RollingBuckets::new(limit(1, 10), 6)
        .unwrap()
        .lateness_buckets(2)
        .unwrap();
    assert_eq!((asked.bucket_ticks(), asked.buckets()), (2, 5));
    let cases = [
        // W -> (width, B kept, NB, reach)
        (6, (1, 6, 9, 9)),
        (3, (1, 3, 6, 6)),
        (10, (2, 5, 8, 16)),
        (60, (10, 6, 9, 90)),
        (11, (2, 6, 9, 18)),
    ];
    for (window_ticks, geometry) in cases {
        let other = asked.with_limit(limit(1, window_ticks));
        assert_eq!(
            (
                other.bucket_ticks(),
                other.buckets(),
                other.physical_buckets(),
                other.refusal_reach_ticks()
            ),
            geometry,
            "W = {window_ticks}"
        );
        assert_eq!(other.tolerated_lateness(), 2);
        // Clamping forgets nothing: back to 10 ticks, the same window again.
        assert_eq!(other.with_limit(limit(1, 10)), asked, "W = {window_ticks}");
    }
}

#[test]
fn the_asked_count_bounds_the_physical_buckets_of_every_window() {
    // 65,535 buckets over 100,000 ticks keep 50,000 of 2 ticks, but a window of 65,535
    // ticks would keep them all: 65,537 physical, refused up front so that moving to any
    // limit stays infallible.
    let asked = MAX_PHYSICAL_BUCKETS - 1;
    assert_eq!(
        RollingBuckets::new(limit(1, 100_000), asked),
        Err(BucketError::TooManyBuckets {
            physical: MAX_PHYSICAL_BUCKETS + 1,
            max: MAX_PHYSICAL_BUCKETS
        })
    );
    let most = RollingBuckets::new(limit(1, 100_000), asked - 1).unwrap();
    assert_eq!(most.physical_buckets(), 50_002);
    let clamped = most.with_limit(limit(1, asked - 1));
    assert_eq!(clamped.physical_buckets(), MAX_PHYSICAL_BUCKETS);
}

#[test]
fn weights_are_all_or_nothing() {
    let mut s = window(10, 1).new_sequential();
    assert!(s.check_and_hit_n(0, 6));
    assert!(!s.allowed_n(1, 5));
    assert!(!s.check_and_hit_n(1, 5), "6 + 5 > 10: nothing recorded");
    assert!(s.check_and_hit_n(1, 4));
    assert!(!s.check_and_hit_n(2, 1));
    assert_eq!(s.status(2).count, 10);
    assert_eq!(window(10, 1).check_weight(0), Err(WeightError::Zero));
    assert_eq!(
        window(10, 1).check_weight(11),
        Err(WeightError::ExceedsLimit {
            n: 11,
            max_requests: 10
        })
    );
}

#[test]
fn a_bucket_expires_once_the_head_is_a_full_ring_past_it() {
    // L = 1, NB = 4: the hit at 1 (epoch 0) counts until the head reaches epoch 4.
    let mut s = window(1, 1).new_sequential();
    assert!(s.check_and_hit_n(1, 1));
    for t in [10, 11, 15, 19] {
        assert!(
            !s.check_and_hit_n(t, 1),
            "epoch {} still retains epoch 0",
            t / 5
        );
    }
    assert!(s.check_and_hit_n(20, 1));
    // L = 0, NB = 3: gone at epoch 3, the contract's W + W/B.
    let mut s = window(1, 0).new_sequential();
    assert!(s.check_and_hit_n(1, 1));
    assert!(!s.check_and_hit_n(14, 1));
    assert!(s.check_and_hit_n(15, 1));
}

#[test]
fn late_callers_are_refused_and_dead_hits_dropped() {
    let mut s = window(5, 1).new_sequential();
    assert!(s.check_and_hit_n(22, 1)); // epoch 4
    assert!(s.check_and_hit_n(17, 1), "one bucket late is checked");
    assert!(!s.allowed_n(14, 1), "two buckets late cannot be checked");
    assert!(!s.check_and_hit_n(14, 1));
    s.hit_n(14, 1); // epoch 2: still retained at head 4, so recorded
    assert_eq!(s.status(22).count, 3);
    s.hit_n(3, 1); // epoch 0: expired at head 4, dropped
    assert_eq!(s.status(22).count, 3);
    let late = s.status(12);
    assert_eq!((late.count, late.remaining), (3, 0));
    assert_eq!(late.retry_after_ticks, 15 - 12, "not late from epoch 3 on");
}

#[test]
fn status_reports_when_enough_buckets_expire() {
    let mut s = window(2, 1).new_sequential();
    assert!(s.check_and_hit_n(1, 1));
    assert!(s.check_and_hit_n(6, 1));
    let st = s.status(7);
    assert_eq!((st.count, st.remaining, st.retry_after_ticks), (2, 0, 13));
    assert!(!s.clone().check_and_hit_n(19, 1));
    assert!(
        s.clone().check_and_hit_n(20, 1),
        "7 + 13: epoch 0 has expired"
    );
    assert_eq!(s.status(20).remaining, 1);
    assert_eq!(s.status(25).remaining, 2);
    // Two buckets must expire when the first does not free enough.
    let mut s = window(3, 1).new_sequential();
    assert!(s.check_and_hit_n(1, 1));
    s.hit_n(6, 3);
    assert_eq!(s.status(8).count, 4);
    assert_eq!(s.status(8).retry_after_ticks, 25 - 8);
    assert!(!s.clone().check_and_hit_n(24, 1));
    assert!(s.check_and_hit_n(25, 1));
}

#[test]
fn fresh_from_is_when_nothing_is_retained_and_nobody_is_late() {
    let window = window(2, 1);
    let mut s = window.new_sequential();
    assert_eq!(s.idle_from(), 0);
    assert!(s.check_and_hit_n(1, 1));
    assert!(s.check_and_hit_n(6, 1));
    assert_eq!(s.idle_from(), 25, "epoch 1 expires at head 1 + NB = 5");
    let before = s.status(24);
    assert_eq!(before.count, 1);
    let fresh = window.new_sequential();
    for t in [25, 26, 40] {
        assert_eq!(s.status(t), fresh.status(t));
    }
    // A late caller is refused until head - L.
    let mut s = window.new_sequential();
    s.hit_n(50, 1);
    s.hit_n(10, 1); // expired: dropped
    assert_eq!(s.idle_from(), 70);
    let mut s = window.new_sequential();
    assert!(s.check_and_hit_n(100, 1));
    assert!(s.check_and_hit_n(200, 1));
    assert_eq!(s.idle_from(), (40 + 4) * 5);
}

#[test]
fn hit_saturates_the_total_and_nothing_carries() {
    let window = RollingBuckets::new(limit(crate::limit::MAX_REQUESTS, 10), 2).unwrap();
    let mut s = window.new_sequential();
    let atomic = window.new_atomic();
    for i in 0..260 {
        s.hit_n(i % 10, crate::limit::MAX_REQUESTS);
        atomic.hit_n(i % 10, crate::limit::MAX_REQUESTS).unwrap();
    }
    assert_eq!(s.status(9).count, MAX_TOTAL_WEIGHT);
    assert_eq!(
        atomic.quiescent_totals(),
        (MAX_TOTAL_WEIGHT, MAX_TOTAL_WEIGHT)
    );
    assert_eq!(atomic.quiescent_epochs(), (1, 1));
    assert!(!s.check_and_hit_n(9, 1));
    let epoch_1 = s.status(20).count;
    assert!(
        0 < epoch_1 && epoch_1 < MAX_TOTAL_WEIGHT,
        "epoch 1 is retained at epoch 4"
    );
    assert_eq!(s.status(25).count, 0, "all of it expires with its buckets");
    assert!(s.check_and_hit_n(25, crate::limit::MAX_REQUESTS));
}

/// Runs `ops` on both forms and checks every answer, status and the raw words agree.
fn run_both(window: RollingBuckets, ops: &[(u8, u64, u64)]) -> Vec<bool> {
    let mut s = window.new_sequential();
    let a = window.new_atomic();
    let mut answers = Vec::new();
    for &(kind, now, n) in ops {
        let (x, y) = match kind % 3 {
            0 => (s.check_and_hit_n(now, n), a.check_and_hit_n(now, n)),
            1 => {
                s.hit_n(now, n);
                a.hit_n(now, n).unwrap();
                (true, Ok(true))
            }
            _ => (s.allowed_n(now, n), a.allowed_n(now, n)),
        };
        assert_eq!(Ok(x), y, "op {kind} at {now} weight {n}");
        answers.push(x);
        assert_eq!(Ok(s.status(now)), a.status(now), "status at {now}");
        assert_eq!(s.idle_from(), super::algorithm::idle_from(&&*a));
        assert_eq!(s.word, a.header.word.load(Ordering::Relaxed));
        assert_eq!(s.cleaned, a.header.cleaned.load(Ordering::Relaxed));
        let buckets: Vec<u64> = a
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(s.bucket_words(), buckets);
        let (total, counts) = a.quiescent_totals();
        assert_eq!(total, counts, "quiescent total is the sum of the buckets");
        let (head, cleaned) = a.quiescent_epochs();
        assert_eq!(head, cleaned, "recycling is complete at rest");
    }
    answers
}

/// A reproducible trace of `(key, tick, weight)` from the workspace's seeded generator.
fn trace(seed: u64, len: usize, spread: u64, max_n: u64) -> Vec<(u8, u64, u64)> {
    let mut rng = slidelimit_trace::rng::SplitMix64::new(seed);
    let mut next = move || rng.next_u64();
    let mut now = 0u64;
    (0..len)
        .map(|_| {
            let r = next();
            // Mostly forward, sometimes back (out of order), sometimes a long jump.
            now = match r % 16 {
                0 => now.saturating_sub(r % spread),
                1 => now.saturating_add((r >> 8) % (spread * 100)),
                _ => now + (r >> 8) % spread,
            };
            ((r >> 40) as u8, now, 1 + (r >> 20) % max_n)
        })
        .collect()
}

#[test]
fn sequential_and_atomic_agree_step_by_step() {
    for (seed, max_requests, window_ticks, buckets, lateness) in [
        (1, 3, 10, 2, 1),
        (2, 10, 60, 6, 1),
        (3, 5, 10, 3, 0),
        (4, 7, 100, 7, 3),
        (5, 1, 4, 4, 1),
    ] {
        let window = RollingBuckets::new(limit(max_requests, window_ticks), buckets)
            .unwrap()
            .lateness_buckets(lateness)
            .unwrap();
        run_both(window, &trace(seed, 400, window_ticks, max_requests));
    }
}

#[test]
fn answers_do_not_depend_on_where_in_u64_the_trace_runs() {
    // Width 1, so epochs are ticks: the offsets cross 2^32 and run up to the top of u64.
    let window = RollingBuckets::new(limit(3, 8), 8).unwrap();
    let base = trace(7, 300, 8, 3)
        .into_iter()
        .map(|(kind, now, n)| (kind, now % 5_000, n))
        .collect::<Vec<_>>();
    let reference = run_both(window, &base);
    let top = u64::MAX - 1 - 5_000;
    for offset in [
        64,
        (1 << 32) - 2_500,
        1 << 32,
        (1 << 33) + 12,
        1 << 40,
        (1 << 63) + 5,
        top - top % 64,
    ] {
        // The first call of each trace jumps from epoch 0; start both at the same point.
        let shifted: Vec<_> = base
            .iter()
            .map(|&(kind, now, n)| (kind, now + offset, n))
            .collect();
        assert_eq!(run_both(window, &shifted), reference, "offset {offset}");
    }
}

#[test]
fn a_far_jump_forgets_the_old_state_and_refuses_the_past() {
    let window = RollingBuckets::new(limit(2, 4), 4).unwrap(); // width 1, NB = 6
    for far in [
        (1 << 32) - 7,
        1 << 32,
        (1 << 33) + 5,
        (1 << 34) + 3,
        1 << 50,
        MAX_TICK,
        u64::MAX,
    ] {
        let mut s = window.new_sequential();
        let a = window.new_atomic();
        for t in [3, 3] {
            assert!(s.check_and_hit_n(t, 1));
            assert_eq!(a.check_and_hit_n(t, 1), Ok(true));
        }
        assert!(!s.allowed_n(4, 1));
        assert!(s.check_and_hit_n(far, 2), "far = {far}");
        assert_eq!(a.check_and_hit_n(far, 2), Ok(true), "far = {far}");
        assert_eq!(a.quiescent_epochs(), (far.min(MAX_TICK), far.min(MAX_TICK)));
        assert_eq!(a.quiescent_totals(), (2, 2));
        assert!(!s.check_and_hit_n(far, 1));
        assert!(!s.check_and_hit_n(3, 1), "far in the past: refused");
        s.hit_n(3, 1);
        assert_eq!(s.status(far).count, 2, "a dead hit is dropped");
        assert_eq!(s.idle_from(), far.min(MAX_TICK).saturating_add(6));
    }
}

/// The sequential storage with CASes that lose races on a schedule: before a scheduled
/// failure, an interfering `check_and_hit` runs to completion on the same state (another
/// thread winning the race), then the CAS fails with the value now there. A deterministic
/// way to take every retry path with a real change behind it.
struct Contended {
    inner: SequentialBuckets,
    cas_calls: u64,
    fail_every: u64,
    word_failures: u64,
    bucket_failures: u64,
    interfere_at: Vec<u64>,
    /// `(tick, weight)` of every admission, interfering ones included, in order.
    admitted: Vec<(u64, u64)>,
}

impl Contended {
    fn scheduled_failure(&mut self) -> bool {
        self.cas_calls += 1;
        if self.cas_calls % self.fail_every != 0 {
            return false;
        }
        if let Some(t) = self.interfere_at.pop() {
            if check_and_hit(&mut self.inner, t, 1) == Ok(true) {
                self.admitted.push((t, 1));
            }
        }
        true
    }
}

impl BucketCells for Contended {
    fn geometry(&self) -> Geometry {
        self.inner.geometry
    }
    fn cleaned(&self) -> u64 {
        self.inner.cleaned
    }
    fn raise_cleaned(&mut self, epoch: u64) {
        self.inner.raise_cleaned(epoch);
    }
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool {
        self.inner.cleaned == current && self.inner.shift_cleaned(current, new)
    }
    fn word(&self) -> u64 {
        self.inner.word
    }
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        if self.scheduled_failure() || self.inner.word != current {
            self.word_failures += 1;
            return Err(self.inner.word);
        }
        self.inner.replace_word(current, new)
    }
    fn bucket(&self, slot: usize) -> u64 {
        self.inner.bucket(slot)
    }
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64> {
        if self.scheduled_failure() || self.inner.bucket(slot) != current {
            self.bucket_failures += 1;
            return Err(self.inner.bucket(slot));
        }
        self.inner.replace_bucket(slot, current, new)
    }
    fn add_to_bucket(&mut self, slot: usize, n: u64) {
        self.inner.add_to_bucket(slot, n);
    }
    fn store_bucket(&mut self, slot: usize, value: u64) {
        self.inner.store_bucket(slot, value);
    }
}

#[test]
fn lost_races_retry_and_keep_the_window_and_the_books() {
    for (lateness, fail_every) in [(0, 2), (1, 3), (2, 2), (1, 5)] {
        let window = window(3, lateness);
        let ops = trace(11 + fail_every, 300, 10, 3);
        let mut cells = Contended {
            inner: SequentialBuckets::new(window),
            cas_calls: 0,
            fail_every,
            word_failures: 0,
            bucket_failures: 0,
            // Interfering calls a little before, at and after the traced ones.
            interfere_at: ops
                .iter()
                .rev()
                .enumerate()
                .map(|(i, &(_, now, _))| (now + [0, 3, 6, 11][i % 4]).saturating_sub(4))
                .collect(),
            admitted: Vec::new(),
        };
        for &(_, now, n) in &ops {
            if check_and_hit(&mut cells, now, n) == Ok(true) {
                cells.admitted.push((now, n));
            }
        }
        assert!(cells.word_failures > 50, "the head-word retry path ran");
        assert!(cells.bucket_failures > 10, "the bucket retry path ran");
        // Quiescent books.
        let counts: u64 = cells.inner.bucket_words().iter().map(|&b| low(b)).sum();
        assert_eq!(low(cells.inner.word), counts, "total == sum of the buckets");
        let head = decode(
            cells.inner.word,
            cells.inner.cleaned,
            window.physical_buckets(),
        );
        assert_eq!(head, cells.inner.cleaned, "recycling complete");
        // The window: no 10 ticks hold more than 3 admitted.
        let mut admitted = cells.admitted.clone();
        admitted.sort_unstable();
        for &(start, _) in &admitted {
            let inside: u64 = admitted
                .iter()
                .filter(|&&(t, _)| start <= t && t < start + 10)
                .map(|&(_, n)| n)
                .sum();
            assert!(
                inside <= 3,
                "{inside} admitted in [{start}, {}): {admitted:?}",
                start + 10
            );
        }
        assert!(admitted.len() > 20, "something was admitted");
    }
}

/// A window made for a first call at `now` answers that call and every later one as a fresh
/// window does, in both forms, whatever the geometry and however far `now` is from zero
/// (epochs past 32 bits and the clamp to `MAX_TICK` included).
#[test]
fn a_window_made_at_the_first_call_answers_as_a_fresh_one() {
    let geometries = [
        RollingBuckets::new(limit(3, 10), 2).unwrap(),
        RollingBuckets::new(limit(4, 20_000), 16).unwrap(),
        RollingBuckets::new(limit(5, 7), 7)
            .unwrap()
            .lateness_buckets(3)
            .unwrap(),
        RollingBuckets::new(limit(2, 1), 1)
            .unwrap()
            .lateness_buckets(0)
            .unwrap(),
    ];
    let nows = [
        0,
        1,
        9,
        26,
        1_234_567,
        (1 << 32) * 5 + 3,
        MAX_TICK - 1,
        MAX_TICK,
        u64::MAX,
    ];
    for window in geometries {
        let width = window.bucket_ticks();
        for first in nows {
            let mut fresh = window.new_sequential();
            let mut made = window.new_sequential_at(first);
            let fresh_atomic = window.new_atomic();
            let mut made_atomic = window.new_atomic_at(first);
            // The first call, then calls around it: late ones, the same bucket, later
            // buckets, and one far past the window.
            let later = [
                first,
                first.saturating_sub(width),
                first.saturating_sub(3 * width),
                first,
                first.saturating_add(1),
                first.saturating_add(width),
                first.saturating_add(window.span_ticks()),
                first.saturating_add(3 * window.span_ticks()),
            ];
            for (step, &now) in later.iter().enumerate() {
                let context = format!("{window:?}, first call at {first}, call {step} at {now}");
                assert_eq!(
                    fresh.check_and_hit_n(now, 1),
                    made.check_and_hit_n(now, 1),
                    "{context}"
                );
                assert_eq!(
                    fresh_atomic.check_and_hit_n(now, 1),
                    grown_as_needed(&mut made_atomic, |made| made.check_and_hit_n(now, 1)),
                    "{context}"
                );
                assert_eq!(fresh.status(now), made.status(now), "{context}");
                assert_eq!(
                    made.status(now),
                    made_atomic.status(now).unwrap(),
                    "{context}"
                );
                assert_eq!(fresh.idle_from(), made.idle_from(), "{context}");
                assert_eq!(
                    fresh_atomic.status(now),
                    made_atomic.status(now),
                    "{context}"
                );
                // The sequential window keeps its buckets by use; its words are the atomic
                // one's, and what the sweep reads of them agrees.
                assert_eq!(made.export(), made_atomic.export().unwrap(), "{context}");
                for horizon in [now.saturating_sub(width), now, now.saturating_add(width)] {
                    assert_eq!(
                        made.is_idle_by(horizon),
                        fresh.is_idle_by(horizon),
                        "{context}, horizon {horizon}"
                    );
                }
                if step == 0 && first <= MAX_TICK {
                    assert!(
                        !made.buckets_allocated(),
                        "{context}: the first call counts in the head's bucket alone"
                    );
                }
            }
        }
    }
}

/// `operation` on `window`, which is replaced by its grown form (as the keyed limiter does)
/// whenever it answers `Retired` because its inline form cannot take the write.
fn grown_as_needed<T>(
    window: &mut Layers<AtomicBuckets>,
    operation: impl Fn(&Layers<AtomicBuckets>) -> Result<T, Retired>,
) -> Result<T, Retired> {
    loop {
        match operation(window) {
            Err(Retired) if window.needs_slots() => {
                window.seal_for_growth().expect("an inline window seals");
                *window = window.grown(()).expect("an inline window grows");
            }
            answer => return answer,
        }
    }
}

/// The sweep's first look at a window never calls a window live that `idle_from` calls idle
/// by the same horizon, and it settles the common case (a recent hit in the head's bucket).
#[test]
fn the_first_look_is_a_lower_bound_of_idle_from() {
    let window = RollingBuckets::new(limit(4, 20), 4)
        .unwrap()
        .lateness_buckets(2)
        .unwrap();
    let mut s = window.new_sequential();
    let mut settled = 0;
    for (step, now) in [3u64, 4, 9, 30, 29, 26, 80, 81, 200, 190, 500]
        .into_iter()
        .enumerate()
    {
        if step % 3 == 2 {
            s.hit_n(now, 2);
        } else {
            let _ = s.check_and_hit_n(now, 1);
        }
        let idle_from = s.idle_from();
        for horizon in now.saturating_sub(60)..now + 60 {
            if super::algorithm::surely_live_by(&*s, horizon) {
                settled += 1;
                assert!(
                    idle_from > horizon,
                    "after a call at {now}, horizon {horizon}"
                );
            }
            assert_eq!(s.is_idle_by(horizon), idle_from <= horizon);
        }
    }
    assert!(settled > 0, "the first look settles some windows");
}

/// The inline form against a window allocated at creation, on random traces in any order:
/// the inline window (grown by hand, as the keyed limiter grows it, whenever an operation
/// answers `Retired` with `needs_slots`) answers every call as the allocated one does and
/// holds the same words; reads never need the array, and it grows at most once, on the first
/// write at another epoch than its creation's (a refused late call or an expired hit writes
/// nothing and does not grow it).
#[test]
fn the_inline_form_answers_as_the_allocated_one_on_random_traces() {
    use crate::window::random_traces::{LateTicks, XorShift};
    let mut random = XorShift(0x2545_F491_4F6C_DD1D);
    let mut grew = 0;
    for round in 0..400 {
        let max = 1 + random.below(5);
        let window_ticks = 1 + random.below(40);
        let asked = 1 + random.below(window_ticks.min(5));
        let config = RollingBuckets::new(limit(max, window_ticks), asked)
            .unwrap()
            .lateness_buckets(random.below(3))
            .unwrap();
        let geometry = config.geometry();
        // Epochs past 32 bits in some rounds: the words keep them truncated.
        let base = random.below(3) << 34;
        let mut ticks = LateTicks::new(&mut random, window_ticks);
        let created = base + ticks.next(&mut random);
        let (word, cleaned, words) = state::empty_words_at(geometry, created);
        let allocated = AtomicBuckets::from_word_iter(geometry, word, cleaned, words);
        let mut window = AtomicBuckets::inline_at(geometry, created);
        let mut grown_at = None;
        for call in 0..1 + random.below(12) {
            let now = if call == 0 {
                created
            } else {
                base + ticks.next(&mut random)
            };
            let n = 1 + random.below(2);
            let what = format!(
                "round {round} call {call} now {now} (N {max}, W {window_ticks}, {geometry:?})"
            );
            let operation = random.below(10);
            loop {
                let answered = match operation {
                    0..=5 => window.check_and_hit_n(now, n).map(|admitted| {
                        assert_eq!(Ok(admitted), allocated.check_and_hit_n(now, n), "{what}");
                    }),
                    6 | 7 => window
                        .hit_n(now, n)
                        .map(|()| allocated.hit_n(now, n).unwrap()),
                    8 => window.allowed_n(now, n).map(|allowed| {
                        assert_eq!(Ok(allowed), allocated.allowed_n(now, n), "{what}");
                    }),
                    _ => window.status_n(now, n).map(|status| {
                        assert_eq!(Ok(status), allocated.status_n(now, n), "{what}");
                    }),
                };
                if answered.is_ok() {
                    break;
                }
                assert!(window.needs_slots(), "{what}: Retired only to grow");
                assert!(operation <= 7, "{what}: a read never needs the array");
                assert_eq!(grown_at, None, "{what}: grown once");
                window.seal_for_growth().expect("an inline window seals");
                assert!(!window.needs_slots(), "{what}: sealed for good");
                window = window.grown(()).expect("an inline window grows");
                assert!(!window.is_inline(), "{what}");
                grown_at = Some(call);
            }
            assert_eq!(window.export(), allocated.export(), "{what}");
            assert_eq!(
                window.quiescent_totals(),
                allocated.quiescent_totals(),
                "{what}"
            );
            assert_eq!(
                window.quiescent_epochs(),
                allocated.quiescent_epochs(),
                "{what}"
            );
            assert_eq!(
                window.fresh_from_hint(),
                allocated.fresh_from_hint(),
                "{what}"
            );
        }
        grew += usize::from(grown_at.is_some());
        // The sweeper's judgement, at a horizon where the window may or may not be idle.
        let horizon = base + ticks.next(&mut random) + random.below(3 * window_ticks);
        assert_eq!(
            window.try_seal(horizon),
            allocated.try_seal(horizon),
            "round {round}: try_seal({horizon})"
        );
    }
    assert!(
        grew > 100 && grew < 400,
        "the traces exercise both forms: {grew} grew"
    );
}

/// An inline window's seals: a sweeper's (only when its weight has expired for the horizon)
/// leaves it answering `Retired` without asking to grow; a growth's seal is the one seal a
/// grower takes, and neither a second grower nor a sweeper gets another.
#[test]
fn an_inline_window_grows_only_unsealed() {
    let config = window(3, 1);
    let geometry = config.geometry();
    let swept = AtomicBuckets::inline_at(geometry, 7);
    assert_eq!(swept.check_and_hit_n(7, 2), Ok(true));
    assert_eq!(swept.quiescent_totals(), (2, 2));
    // Epoch 1 (ticks 5..10) is retained until the head reaches epoch 1 + NB = 5.
    assert_eq!(swept.try_seal(24), None, "7's bucket is retained at 24");
    assert_eq!(swept.try_seal(25), Some(25));
    assert_eq!(swept.check_and_hit_n(30, 1), Err(Retired));
    assert!(!swept.needs_slots(), "sealed by the sweeper: retired");
    assert_eq!(swept.seal_for_growth(), None);

    let growing = AtomicBuckets::inline_at(geometry, 7);
    assert_eq!(growing.check_and_hit_n(8, 1), Ok(true));
    assert_eq!(
        growing.check_and_hit_n(12, 1),
        Err(Retired),
        "a later epoch"
    );
    assert!(growing.needs_slots());
    assert_eq!(growing.seal_for_growth(), Some(()));
    assert_eq!(growing.seal_for_growth(), None, "one grower");
    assert_eq!(growing.try_seal(u64::MAX), None, "no sweeper either");
    let grown = growing.grown(()).expect("grows");
    assert_eq!(grown.check_and_hit_n(12, 2), Ok(true));
    assert_eq!(
        grown.check_and_hit_n(12, 1),
        Ok(false),
        "3 of 3 in the window"
    );
}
