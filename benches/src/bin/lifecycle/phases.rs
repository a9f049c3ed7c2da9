//! The key lifecycle split in two, on a limiter whose automatic removal is off: creating keys
//! (the first `check_and_hit` of a key never seen, one tick per call) and removing them
//! (`remove_idle` once per cycle), each in a function of its own that callgrind counts alone
//! ([`measured_create`], [`measured_remove`]).
//!
//! One cycle creates `cycle_calls` keys and then removes every idle one. With the default
//! lateness tolerance (one window) a key is idle two windows after its hit, so in steady state
//! the map holds two windows of keys after a removal and one cycle more before it, and each
//! removal removes one cycle's keys: with cycles of one window, 40,000 to 60,000 keys, about
//! what the automatic sweep keeps under key churn.

use std::hint::black_box;

use slidelimit::RateLimiter;
use slidelimit_trace::rng::mix64;

use crate::contenders::WINDOW_TICKS;

/// Default keys created per cycle: one window.
pub const CYCLE_CALLS: u64 = WINDOW_TICKS;
/// Cycles before the measured ones: the map reaches its steady size and the allocator its
/// steady free lists.
const WARM_CYCLES: u64 = 20;

/// Never-seen keys at one tick per call.
struct Fresh {
    next_key: u64,
    tick: u64,
}

impl Fresh {
    #[inline(always)]
    fn create(&mut self, limiter: &dyn RateLimiter<u64>, calls: u64) -> u64 {
        let mut admitted = 0;
        for _ in 0..calls {
            self.next_key += 1;
            self.tick += 1;
            let key = mix64(self.next_key);
            admitted += u64::from(limiter.check_and_hit(black_box(&key), black_box(self.tick)));
        }
        admitted
    }
}

/// The creations callgrind counts.
#[inline(never)]
fn measured_create(fresh: &mut Fresh, limiter: &dyn RateLimiter<u64>, calls: u64) -> u64 {
    fresh.create(limiter, calls)
}

/// The removals callgrind counts.
#[inline(never)]
fn measured_remove(limiter: &dyn RateLimiter<u64>, now: u64) -> usize {
    limiter.remove_idle(black_box(now))
}

#[inline(never)]
fn warm_up(fresh: &mut Fresh, limiter: &dyn RateLimiter<u64>, calls: u64) {
    for _ in 0..WARM_CYCLES {
        black_box(fresh.create(limiter, calls));
        black_box(limiter.remove_idle(fresh.tick));
    }
}

/// What the measured cycles did.
pub struct Counts {
    /// Keys created (every measured call creates one).
    pub created: u64,
    /// Calls admitted (all of them: a new key has room).
    pub admitted: u64,
    /// Keys the measured `remove_idle` calls removed.
    pub removed: u64,
    /// Keys tracked at the end.
    pub tracked: usize,
}

/// Warms `limiter` up, then runs `cycles` measured cycles of `cycle_calls` creations and one
/// removal each.
pub fn run(limiter: &dyn RateLimiter<u64>, cycles: u64, cycle_calls: u64) -> Counts {
    let mut fresh = Fresh {
        next_key: 0,
        tick: 0,
    };
    warm_up(&mut fresh, limiter, cycle_calls);
    let (mut admitted, mut removed) = (0, 0);
    for _ in 0..cycles {
        admitted += measured_create(&mut fresh, limiter, cycle_calls);
        removed += measured_remove(limiter, fresh.tick) as u64;
    }
    Counts {
        created: cycles * cycle_calls,
        admitted,
        removed,
        tracked: limiter.tracked_keys(),
    }
}
