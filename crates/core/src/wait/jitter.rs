//! The jitter option: a random extra delay in `[0, max]` added to each sleep, drawn from a
//! small seeded generator (splitmix64), so no `rand` dependency is needed.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Extra delays of at most `max_nanos`, from one generator shared by every waiter of an
/// [`AsyncLimiter`](super::AsyncLimiter).
#[derive(Debug)]
pub(super) struct Jitter {
    max_nanos: u64,
    // A std mutex around one word: taken once per sleep, never across an await. Waiting is
    // not on the limiters' lock-free path, so it uses std's lock directly (loom models
    // threads, not tasks).
    state: Mutex<SplitMix64>,
}

impl Jitter {
    /// Delays in `[0, max]` (`max` saturated at `u64::MAX` nanoseconds), from `seed`.
    pub(super) fn seeded(max: Duration, seed: u64) -> Self {
        Self {
            max_nanos: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
            state: Mutex::new(SplitMix64(seed)),
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
        // A panic elsewhere cannot leave one word half-written: keep using it.
        let word = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next_u64();
        Duration::from_nanos(scale(word, self.max_nanos))
    }
}

/// Maps a uniform 64-bit word onto `[0, max]` by a widening multiply (the high word of
/// `word * (max + 1)`): every value is hit, none more than once more often than another.
fn scale(word: u64, max: u64) -> u64 {
    let span = u128::from(max) + 1;
    // word < 2^64, so the product is below span * 2^64 and the high word below span.
    ((u128::from(word) * span) >> 64) as u64
}

/// Sebastiano Vigna's splitmix64: a 64-bit counter through a bijective mixer. Not
/// cryptographic; enough to spread wake-ups apart.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::{scale, Jitter, SplitMix64};
    use std::time::Duration;

    #[test]
    fn splitmix64_matches_its_reference_outputs() {
        // The first outputs from seed 1234567, as the algorithm's published C code gives them.
        let mut g = SplitMix64(1_234_567);
        assert_eq!(g.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(g.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(g.next_u64(), 9_817_491_932_198_370_423);
    }

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
        assert_eq!(Jitter::seeded(Duration::ZERO, 42).draw(), Duration::ZERO);
    }
}
