//! The jitter option: a random extra delay in `[0, max]` added to each sleep. Draw `i` is
//! the seeded foldhash (quality variant) of `i`: a counter through a keyed mixer, so the
//! core needs no generator of its own (the workspace's one seeded generator, for tools and
//! tests, is `slidelimit_trace::rng`) and no `rand`, and drawing takes no lock.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use foldhash::quality::FixedState;

/// Extra delays of at most `max_nanos`, drawn by every waiter of an
/// [`AsyncLimiter`](super::AsyncLimiter) from one seeded stream.
#[derive(Debug)]
pub(super) struct Jitter {
    max_nanos: u64,
    /// The seed: draw `i` is `mixer.hash_one(i)`.
    mixer: FixedState,
    /// How many delays were drawn: the next draw's index. Waiting is not on the limiters'
    /// lock-free path and not modelled by loom (loom models threads, not tasks), so it uses
    /// std's atomic directly.
    draws: AtomicU64,
}

impl Jitter {
    /// Delays in `[0, max]` (`max` saturated at `u64::MAX` nanoseconds), from `seed`.
    pub(super) fn seeded(max: Duration, seed: u64) -> Self {
        Self {
            max_nanos: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
            mixer: FixedState::with_seed(seed),
            draws: AtomicU64::new(0),
        }
    }

    /// Delays in `[0, max]`, seeded from the process's hash randomness (`RandomState`), so
    /// two limiters (or two processes) draw different delays.
    pub(super) fn random(max: Duration) -> Self {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x6a69_7474_6572); // Any word: the state's keys are what is random.
        Self::seeded(max, hasher.finish())
    }

    /// The largest delay drawn.
    pub(super) fn max(&self) -> Duration {
        Duration::from_nanos(self.max_nanos)
    }

    /// The next extra delay.
    pub(super) fn draw(&self) -> Duration {
        // Relaxed: only hands each draw its own index; no other memory is published with it.
        let index = self.draws.fetch_add(1, Ordering::Relaxed);
        Duration::from_nanos(scale(self.mixer.hash_one(index), self.max_nanos))
    }
}

/// Maps a uniform 64-bit word onto `[0, max]` by a widening multiply (the high word of
/// `word * (max + 1)`): every value is hit, none more than once more often than another.
fn scale(word: u64, max: u64) -> u64 {
    let span = u128::from(max) + 1;
    // word < 2^64, so the product is below span * 2^64 and the high word below span.
    ((u128::from(word) * span) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::{scale, Jitter};
    use std::time::Duration;

    #[test]
    fn scale_covers_exactly_zero_to_max() {
        assert_eq!(scale(0, 10), 0);
        assert_eq!(scale(u64::MAX, 10), 10);
        assert_eq!(scale(u64::MAX, 0), 0);
        assert_eq!(scale(u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(scale(1 << 63, 9), 5, "the middle word lands in the middle");
    }

    #[test]
    fn draws_stay_in_bounds_and_repeat_with_the_seed() {
        let max = Duration::from_millis(7);
        let (a, b) = (Jitter::seeded(max, 42), Jitter::seeded(max, 42));
        let draws: Vec<Duration> = (0..1_000).map(|_| a.draw()).collect();
        assert!(draws.iter().all(|d| *d <= max));
        assert!(draws.iter().any(|d| *d > max / 2) && draws.iter().any(|d| *d < max / 2));
        assert!((0..1_000).map(|_| b.draw()).eq(draws.iter().copied()));
        let c = Jitter::seeded(max, 43);
        let other: Vec<Duration> = (0..1_000).map(|_| c.draw()).collect();
        assert_ne!(other, draws, "another seed, another stream");
        // Spread over the range, not bunched: every tenth of it is drawn.
        let mut tenths = [0u32; 10];
        for d in &draws {
            tenths[((d.as_nanos() * 10 / (max.as_nanos() + 1)) as usize).min(9)] += 1;
        }
        assert!(tenths.iter().all(|&n| (50..150).contains(&n)), "{tenths:?}");
        assert_eq!(Jitter::seeded(Duration::ZERO, 42).draw(), Duration::ZERO);
    }
}
