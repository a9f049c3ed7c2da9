//! The removal handshake under real concurrency: a sweeper's seal (`try_seal`) racing writers
//! on one atomic ring, round after round. Either the seal wins, and then no writer was admitted
//! (every one that reached a slot found it sealed), or a writer's hit landed first and the seal
//! was given back whole, with every admitted hit in the ring and no slot left sealed. The
//! rounds go on until the race has gone both ways, so the test shows it ran. The rolling
//! buckets' seal gets the same treatment. Natively these rounds catch a seal that is not given
//! back (the `seal_without_restore` mutant fails here); the narrower windows (a seal by
//! load-then-store, a bucket seal that trusts its first look) are the loom models' job (M1–M7
//! and their broken twins, exhaustive on tiny instances).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use slidelimit::raw::{AtomicBuckets, AtomicRing, AtomicWindow, Retired};
use slidelimit::RollingBuckets;

use crate::variants::limit;

const MAX_REQUESTS: u64 = 24;
const WINDOW_TICKS: u64 = 10;
/// The prefix: hits at 1..=20 in slots 0..19, which leaves the cursor at slot 16 (it moves a
/// line of 8 slots at a time), so the writers start there while the sealer starts at slot 0.
const PREFIX: u64 = 20;
const WRITERS: usize = 3;
/// The writers' ticks: 40, 41, 42 (every prefix hit is expired for them).
const FIRST_WRITE: u64 = 40;
/// The prefix is expired for a sweep with this horizon (its newest hit, 20, + W = 30), the
/// writers' hits are live for it.
const HORIZON: u64 = 35;
const MAX_ROUNDS: usize = 5000;
/// Stop once both outcomes of the race have happened this many times.
const ENOUGH: usize = 5;

/// What one writer got: admitted, refused, or sent to look the key up again.
type Answer = Result<bool, Retired>;

/// Releases `WRITERS` writers (writer `i` calls `write(i)`) and one sealer (`seal()`) together
/// on `window`, and returns the writers' answers and the sealer's result.
fn race_seal<W: AtomicWindow>(
    window: &W,
    write: impl Fn(&W, u64) -> Answer + Sync,
    seal: impl FnOnce(&W) -> Option<u64> + Send,
) -> (Vec<Answer>, Option<u64>) {
    let ready = AtomicUsize::new(0);
    let start = |ready: &AtomicUsize| {
        // AcqRel/Acquire: a start line; the answers travel through the joins.
        ready.fetch_add(1, Ordering::AcqRel);
        while ready.load(Ordering::Acquire) <= WRITERS {
            thread::yield_now();
        }
    };
    thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS as u64)
            .map(|writer| {
                let (ready, write, start) = (&ready, &write, &start);
                scope.spawn(move || {
                    start(ready);
                    write(window, writer)
                })
            })
            .collect();
        let sealer = scope.spawn(|| {
            start(&ready);
            seal(window)
        });
        let answers: Vec<Answer> = writers
            .into_iter()
            .map(|writer| writer.join().expect("writer panicked"))
            .collect();
        (answers, sealer.join().expect("sealer panicked"))
    })
}

/// One round: a ring holding the prefix, `WRITERS` writers and one sealer, released together.
fn round() -> (Vec<Answer>, Option<u64>, AtomicRing) {
    let ring = AtomicRing::new(limit(MAX_REQUESTS, WINDOW_TICKS));
    for now in 1..=PREFIX {
        assert_eq!(ring.check_and_hit_n(now, 1), Ok(true));
    }
    let (answers, sealed) = race_seal(
        &ring,
        |ring, writer| ring.check_and_hit_n(FIRST_WRITE + writer, 1),
        |ring| ring.try_seal(HORIZON),
    );
    (answers, sealed, ring)
}

#[test]
fn a_seal_racing_writers_never_loses_an_admitted_hit() {
    // Rounds where a writer's hit landed first and the seal was given back (the sealer always
    // seals slots 0..15 first, all expired prefix, before it meets slot 16, where the writers
    // start), and rounds where the seal won and a writer bounced off it.
    let (mut given_back, mut sealed_over_writer) = (0, 0);
    let mut rounds = 0;
    while rounds < MAX_ROUNDS && (given_back < ENOUGH || sealed_over_writer < ENOUGH) {
        let (answers, sealed, ring) = round();
        rounds += 1;
        let admitted: Vec<u64> = (0..WRITERS as u64)
            .filter(|&writer| answers[writer as usize] == Ok(true))
            .map(|writer| FIRST_WRITE + writer)
            .collect();
        let bounced = answers.contains(&Err(Retired));
        let slots = ring.slot_values();
        match sealed {
            Some(idle_from) => {
                sealed_over_writer += usize::from(bounced);
                assert!(
                    admitted.is_empty(),
                    "round {rounds}: sealed, yet {admitted:?} were admitted: a lost hit"
                );
                assert_eq!(idle_from, PREFIX + WINDOW_TICKS, "the prefix's newest + W");
                assert!(slots.iter().all(|&value| value == u64::MAX), "{slots:?}");
            }
            None => {
                given_back += 1;
                assert!(
                    !slots.contains(&u64::MAX),
                    "round {rounds}: a seal given back left a sealed slot: {slots:?}"
                );
                for tick in &admitted {
                    assert!(
                        slots.contains(&(tick + 1)),
                        "round {rounds}: admitted {tick} is not in the ring {slots:?}"
                    );
                }
                // A seal gives up only on a live hit (there is no other sweeper).
                assert!(
                    !admitted.is_empty(),
                    "round {rounds}: the seal gave up with nothing live: {answers:?}, {slots:?}"
                );
            }
        }
    }
    assert!(
        given_back > 0 && sealed_over_writer > 0,
        "in {rounds} rounds, {given_back} seals were given back and {sealed_over_writer} won \
         over a writer: the race did not go both ways"
    );
}

/// The rolling buckets' seal (a bit in the head word, then a re-judgement under it) racing
/// writers, round after round: a seal that wins admitted nobody after the prefix; a seal
/// given back leaves a window that still decides, and whose books (running total and bucket
/// counts) hold every admitted weight.
#[test]
fn a_bucket_seal_racing_writers_never_loses_an_admitted_weight() {
    const HORIZON: u64 = 100;
    let (mut given_back, mut sealed_over_writer) = (0, 0);
    let mut rounds = 0;
    while rounds < MAX_ROUNDS && (given_back < ENOUGH || sealed_over_writer < ENOUGH) {
        rounds += 1;
        let window = RollingBuckets::new(limit(4, WINDOW_TICKS), 2).expect("a valid window");
        let buckets = AtomicBuckets::new(window);
        // Weight at tick 1: expired for the horizon. The writers at 95.. are live for it.
        assert_eq!(buckets.check_and_hit_n(1, 1), Ok(true));
        let (answers, sealed) = race_seal(
            &buckets,
            |buckets, writer| buckets.check_and_hit_n(95 + writer, 1),
            |buckets| buckets.try_seal(HORIZON),
        );
        let admitted = answers.iter().filter(|&&answer| answer == Ok(true)).count() as u64;
        match sealed {
            Some(idle_from) => {
                sealed_over_writer += usize::from(answers.contains(&Err(Retired)));
                assert_eq!(
                    admitted, 0,
                    "round {rounds}: sealed (fresh from {idle_from}), yet {answers:?}"
                );
                assert!(
                    idle_from <= HORIZON,
                    "round {rounds}: fresh from {idle_from}"
                );
                assert_eq!(buckets.check_and_hit_n(96, 1), Err(Retired));
            }
            None => {
                given_back += 1;
                assert!(admitted > 0, "round {rounds}: given back with nothing live");
                let (total, counts) = buckets.quiescent_totals();
                assert_eq!(
                    (total, counts),
                    (admitted, admitted),
                    "round {rounds}: the books lost a weight ({answers:?})"
                );
                assert!(
                    buckets.check_and_hit_n(96, 1).is_ok(),
                    "round {rounds}: a seal given back left the window sealed"
                );
            }
        }
    }
    assert!(
        given_back > 0 && sealed_over_writer > 0,
        "in {rounds} rounds, {given_back} bucket seals were given back and \
         {sealed_over_writer} won over a writer: the race did not go both ways"
    );
}
