//! Broken clocks among good ones: a client whose clock runs far ahead or far behind, making a
//! share of the new keys mixed among everyone else's, never refuses another key (the removal
//! floor follows the lower quartile of the sampled creations, which such a client moves only
//! by making three quarters of them), and the sweep keeps removing the others' idle keys. A
//! clock that jumps for everyone is taken as real. Every variant, the exact log and rolling
//! buckets, the default 512 shards and one.
//!
//! The first test is the field report's repro: 6,000 keys at real time, then a fresh key
//! stamped far in the future and a fresh key at real time, in turn. With the old observed
//! clock (the oldest of the last eight sampled creations) the far time filled all eight
//! samples by chance within 83 to 4,401 pairs, and from then on every new key at real time was
//! refused, for good.

use slidelimit::{Options, RateLimiter};

use crate::variants::{every_limiter, limit};

/// The window.
const W: u64 = 1_000;
/// Real time when the traffic starts; two key creations a tick from then on.
const REAL: u64 = 1_000_000_000;
/// Keys made at real time before the mix.
const POPULATION: u64 = 6_000;
/// Key creations in the mix, good and bad together.
const MIX: u64 = 36_000;
/// Never-seen keys asked after the mix, then again two windows later.
const STRANGERS: u64 = 10_000;

/// What one limiter made of one mix.
#[derive(Debug, Default)]
struct Outcome {
    /// Fresh keys at real time refused during the mix.
    good_refused: u64,
    /// Never-seen keys at real time refused just after it.
    strangers_refused: u64,
    /// ... and two windows later.
    strangers_refused_later: u64,
    /// Keys tracked at the end of the mix.
    tracked: usize,
}

/// Runs the mix: every `one_in`-th creation is the broken client's, stamped `bad(real now)`;
/// the others are fresh keys at real time. Returns what the good ones met.
fn mix(limiter: &dyn RateLimiter<u64>, one_in: u64, bad: impl Fn(u64) -> u64) -> Outcome {
    let mut outcome = Outcome::default();
    let mut next_key = 0_u64;
    let mut fresh = || {
        next_key += 1;
        next_key
    };
    for i in 0..POPULATION {
        assert!(limiter.check_and_hit(&fresh(), REAL + i / 2));
    }
    let mut now = REAL + POPULATION / 2;
    for i in 0..MIX {
        now = REAL + (POPULATION + i) / 2;
        if i % one_in == 0 {
            // The broken client's answer is its own business.
            let _ = limiter.check_and_hit(&fresh(), bad(now));
        } else if !limiter.check_and_hit(&fresh(), now) {
            outcome.good_refused += 1;
        }
    }
    outcome.tracked = limiter.tracked_keys();
    for later in [0, 2 * W] {
        let refused = (0..STRANGERS)
            .filter(|_| !limiter.check_and_hit(&fresh(), now + later))
            .count() as u64;
        if later == 0 {
            outcome.strangers_refused = refused;
        } else {
            outcome.strangers_refused_later = refused;
        }
    }
    outcome
}

/// Every limiter, with the default 512 shards and with one.
fn limiters() -> Vec<(String, Box<dyn RateLimiter<u64>>)> {
    [Options::default(), Options::default().key_shards(1)]
        .into_iter()
        .flat_map(|options| {
            every_limiter(limit(1, W), options)
                .into_iter()
                .map(move |(name, limiter)| {
                    let shards = if options.key_shards(1) == options {
                        1
                    } else {
                        512
                    };
                    (format!("{name}, {shards} shards"), limiter)
                })
        })
        .collect()
}

#[test]
fn a_far_future_clock_making_up_to_half_of_the_new_keys_refuses_nobody_else() {
    for one_in in [2, 3, 10] {
        for (name, limiter) in limiters() {
            let outcome = mix(&*limiter, one_in, |now| (1 << 60) + now);
            let name = format!("{name}, one creation in {one_in} far ahead");
            assert_eq!(outcome.good_refused, 0, "{name}: {outcome:?}");
            assert_eq!(outcome.strangers_refused, 0, "{name}: {outcome:?}");
            assert_eq!(outcome.strangers_refused_later, 0, "{name}: {outcome:?}");
        }
    }
}

#[test]
fn a_far_past_clock_making_up_to_half_of_the_new_keys_holds_no_removal_back() {
    // The same traffic without the broken client's keys: what the sweep keeps of it.
    let honest: Vec<usize> = limiters()
        .iter()
        .map(|(_, limiter)| mix(&**limiter, MIX + 1, |now| now).tracked)
        .collect();
    for one_in in [2, 3, 10] {
        for ((name, limiter), &honest) in limiters().iter().zip(&honest) {
            let outcome = mix(&**limiter, one_in, |now| now - 500_000);
            let name = format!("{name}, one creation in {one_in} far behind");
            assert_eq!(outcome.good_refused, 0, "{name}: {outcome:?}");
            assert_eq!(outcome.strangers_refused, 0, "{name}: {outcome:?}");
            assert_eq!(outcome.strangers_refused_later, 0, "{name}: {outcome:?}");
            // The far-behind keys are refused and so idle at once, and their creations are
            // not sampled (they lie below the floor): the sweep keeps about what it keeps of
            // the good traffic alone (fewer good keys in the same time, the same lag).
            assert!(
                outcome.tracked <= honest + honest / 4,
                "{name}: {outcome:?}, {honest} without the broken client"
            );
        }
    }
}

#[test]
fn a_clock_that_jumps_for_everyone_is_taken_as_real() {
    const JUMP: u64 = 1 << 40;
    for (name, limiter) in limiters() {
        let outcome = mix(&*limiter, 1, |now| now + JUMP);
        assert_eq!(outcome.good_refused, 0, "{name}: {outcome:?}");
        // Everyone's clock is at the new time: the sweep follows it, so the map holds the
        // keys of a few windows, not the whole history.
        assert!(outcome.tracked < 12_000, "{name}: {outcome:?}");
        // A never-seen key at the old time is now below the floor: the old time is gone.
        let end = REAL + (POPULATION + MIX) / 2;
        assert!(!limiter.check_and_hit(&u64::MAX, end), "{name}");
        assert!(limiter.check_and_hit(&u64::MAX, end + JUMP), "{name}");
    }
}
