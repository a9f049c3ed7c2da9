//! The `RateLimiter` trait: the one surface every variant implements, so that tests,
//! benchmarks and the CLI run the same code against all of them.

use std::hash::Hash;

use crate::clock::Clock;
use crate::limit::Limit;
use crate::window::{Status, WeightError, WindowStatuses};

/// A keyed rate limiter: may a request of `key` at tick `now` go through?
///
/// Every implementation keeps one contract: never more than `max_requests`
/// `check_and_hit` admissions in any window of `window_ticks`, per key, in any interleaving
/// and any timestamp order; exact answers for non-decreasing timestamps.
pub trait RateLimiter<K>: Send + Sync
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// The variant's name for reports: `"lock-free"`, `"mutex"`, `"per-key-lock"`, `"rwlock"`.
    fn name(&self) -> &'static str;

    /// The window algorithm's name: `"exact"` or `"buckets"`.
    fn algorithm(&self) -> &'static str;

    /// The default limit: what every key without a limit of its own answers with.
    fn limit(&self) -> Limit;

    /// Records a hit of `key` at `now`, unconditionally (it never refuses).
    fn hit(&self, key: &K, now: u64) {
        // A weight of 1 is valid for every window, so there is no error to drop here.
        let _ = self.hit_n(key, now, 1);
    }

    /// Whether a hit of `key` at `now` would be admitted. Changes no later answer.
    #[must_use]
    fn allowed(&self, key: &K, now: u64) -> bool {
        self.allowed_n(key, now, 1).unwrap_or(false)
    }

    /// Atomically: if `key` has room at `now`, records a hit and returns true; otherwise
    /// records nothing and returns false. Two callers never both take the last slot.
    #[must_use]
    fn check_and_hit(&self, key: &K, now: u64) -> bool {
        self.check_and_hit_n(key, now, 1).unwrap_or(false)
    }

    /// Records `n` hits of `key` at `now`, unconditionally and all at once.
    ///
    /// # Errors
    /// [`WeightError`] if the window cannot take weight `n` (the exact log takes only 1).
    fn hit_n(&self, key: &K, now: u64, n: u64) -> Result<(), WeightError>;

    /// Whether `n` hits of `key` at `now` would all be admitted.
    ///
    /// # Errors
    /// [`WeightError`] if the window cannot take weight `n`.
    fn allowed_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError>;

    /// Atomically records `n` hits of `key` at `now` if all fit; all or nothing.
    ///
    /// # Errors
    /// [`WeightError`] if the window cannot take weight `n`.
    fn check_and_hit_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError>;

    /// What `key`'s window holds at `now`: live count, remaining, retry-after for one more
    /// hit. Consumes nothing and creates no key.
    #[must_use]
    fn status(&self, key: &K, now: u64) -> Status;

    /// [`RateLimiter::status`] with the wait until `n` more hits of `key` would be admitted
    /// if no other call came ([`Status::retry_after_ticks`]; 0 when they fit at `now`).
    /// Read from the window itself: for the rolling buckets, from their counters, exact on
    /// their bucket grid. Consumes nothing and creates no key.
    ///
    /// # Errors
    /// [`WeightError`] if the window cannot take weight `n`, and
    /// [`WeightError::ExceedsLimit`] if `n` is above `key`'s own limit, which never
    /// admits it.
    fn status_n(&self, key: &K, now: u64, n: u64) -> Result<Status, WeightError>;

    /// [`RateLimiter::status`] of every window of `key`'s limit, narrowest first, in the
    /// order of [`Limit::windows`] for [`LimitControl::limit_for`] (one status for a
    /// single-window limit; [`WindowStatuses::tightest`] is `status`). Consumes nothing and
    /// creates no key. The default, for limiters of one window only, answers `status`.
    #[must_use]
    fn window_statuses(&self, key: &K, now: u64) -> WindowStatuses {
        WindowStatuses::single(self.status(key, now))
    }

    /// Removes every key whose state is idle for all calls at or after `now - D` (the
    /// lateness tolerance) and returns how many were removed.
    fn remove_idle(&self, now: u64) -> usize;

    /// How many keys the limiter holds state for.
    #[must_use]
    fn tracked_keys(&self) -> usize;

    /// [`RateLimiter::check_and_hit`] at the clock's current tick.
    #[must_use]
    fn check_and_hit_now(&self, key: &K, clock: &dyn Clock) -> bool {
        self.check_and_hit(key, clock.now_ticks())
    }

    /// [`RateLimiter::check_and_hit`] for a request stamped `stamped` by its sender, capped
    /// at the clock's current tick: a request stamped in the future (a sender's clock ahead
    /// of ours) counts as made now, so it cannot hold its slot beyond a window from now, nor
    /// be judged against a window that has not happened yet. A request stamped in the past
    /// keeps its stamp (it may be refused as late; see the removal watermarks).
    #[must_use]
    fn check_and_hit_stamped(&self, key: &K, stamped: u64, clock: &dyn Clock) -> bool {
        self.check_and_hit(key, stamped.min(clock.now_ticks()))
    }

    /// [`RateLimiter::hit`] for a request stamped `stamped`, capped at the clock's current
    /// tick (see [`RateLimiter::check_and_hit_stamped`]).
    fn hit_stamped(&self, key: &K, stamped: u64, clock: &dyn Clock) {
        self.hit(key, stamped.min(clock.now_ticks()));
    }
}

/// Limits that change at run time: a default limit to set while other threads decide, and
/// per-key limits. Every limiter of this workspace implements it (each variant runs the
/// core's one policy for it).
pub trait LimitControl<K>: RateLimiter<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// Sets the default limit, while other threads decide. Once it returns, every decision
    /// on a key without a limit of its own uses the new limit, and no decision mixes the old
    /// and the new: each runs on one key state built for one limit. The key's recorded hits
    /// carry over: a window that holds a hit admitted after the change holds at most the
    /// new limit's `max_requests` hits in all (hits from before the change count too);
    /// windows that end before the change are as the old limit left them. Raising the limit
    /// admits more at once. The exact log keeps its newest `max_requests` hits (a ring of
    /// the new size, built from the old one through the removal handshake); the rolling
    /// buckets keep their counts (rebucketed, later never earlier, if the window changes).
    /// Cost: nothing on the hot path but one comparison; each key's first call after a change
    /// re-resolves its limit, and a key whose limit changed rebuilds its state once.
    fn set_limit(&self, limit: Limit);

    /// Gives `key` a limit of its own (it takes precedence over a resolver and the default),
    /// with the same guarantees as [`LimitControl::set_limit`]. Kept while the key is idle or
    /// removed, until [`LimitControl::clear_limit_for`].
    fn set_limit_for(&self, key: &K, limit: Limit);

    /// Drops `key`'s own limit (back to the resolver's or the default); says whether it had
    /// one.
    fn clear_limit_for(&self, key: &K) -> bool;

    /// The limit `key` answers with now.
    #[must_use]
    fn limit_for(&self, key: &K) -> Limit;
}
