//! The straightforward thread-safe sliding log, as a peer: one global lock over a map from
//! key to a deque of timestamps, cleaned on access, with an atomic `check_and_hit`.
//!
//! This is the baseline the project improves on, written as a careful engineer writes it
//! first: a `HashMap` with foldhash (the fast hasher the key maps use too), a `VecDeque` per
//! key, old timestamps popped from the front on every access, and every
//! [`FORGET_EVERY_CALLS`] calls one pass that forgets every key whose newest timestamp has left
//! the window (so memory follows active keys). A `hit` on a new key appends to a fresh deque,
//! and the expiry test is `front + window <= timestamp`, which cannot underflow.
//! `remove_idle` runs the same cleanup over every key. [`DequeLimiter::without_forgetting`]
//! leaves the forgetting to `remove_idle` alone, so that a measurement can count creating keys
//! and removing them apart.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

use slidelimit::{Limit, RateLimiter, Status, WeightError};

/// Calls between two passes that forget idle keys (a power of two).
pub const FORGET_EVERY_CALLS: u64 = 65_536;
const _: () = assert!(FORGET_EVERY_CALLS.is_power_of_two(), "tested by a mask");

type Hits<K> = HashMap<K, VecDeque<u64>, foldhash::fast::RandomState>;

/// The map and the calls made since the last pass that forgot idle keys.
struct Table<K> {
    hits: Hits<K>,
    calls: u64,
}

/// One global lock over per-key deques, with an atomic `check_and_hit`.
pub struct DequeLimiter<K> {
    limit: Limit,
    /// A pass runs after call `c` when `c & forget_mask == 0`: [`FORGET_EVERY_CALLS`] - 1,
    /// or `u64::MAX` for never (the call count starts at 1 and never wraps). A mask rather
    /// than a remainder, so the per-call test stays one AND, as with the constant.
    forget_mask: u64,
    table: Mutex<Table<K>>,
}

impl<K: Hash + Eq> DequeLimiter<K> {
    /// `RateLimiter(max_requests, window_seconds)`.
    #[must_use]
    pub fn new(limit: Limit) -> Self {
        Self::with_forget_mask(limit, FORGET_EVERY_CALLS - 1)
    }

    /// The same limiter with no passes of its own: keys are forgotten only when their last
    /// timestamp is popped by a call on them, or by `remove_idle`.
    #[must_use]
    pub fn without_forgetting(limit: Limit) -> Self {
        Self::with_forget_mask(limit, u64::MAX)
    }

    fn with_forget_mask(limit: Limit, forget_mask: u64) -> Self {
        Self {
            limit,
            forget_mask,
            table: Mutex::new(Table {
                hits: HashMap::default(),
                calls: 0,
            }),
        }
    }

    /// The table, after counting this call and, every [`FORGET_EVERY_CALLS`] calls,
    /// forgetting the keys idle at `now`.
    fn lock_at(&self, now: u64) -> MutexGuard<'_, Table<K>> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.calls += 1;
        if table.calls & self.forget_mask == 0 {
            let window = self.limit.window_ticks();
            table.hits.retain(|_, deque| {
                deque
                    .back()
                    .is_some_and(|&newest| newest.saturating_add(window) > now)
            });
        }
        table
    }

    fn lock(&self) -> MutexGuard<'_, Table<K>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cleanup: pop expired timestamps from the front; delete an emptied key.
    fn cleanup(&self, hits: &mut Hits<K>, key: &K, timestamp: u64) {
        let window = self.limit.window_ticks();
        let Some(deque) = hits.get_mut(key) else {
            return;
        };
        while deque
            .front()
            .is_some_and(|&front| front.saturating_add(window) <= timestamp)
        {
            deque.pop_front();
        }
        if deque.is_empty() {
            hits.remove(key);
        }
    }
}

fn single_hit(n: u64) -> Result<(), WeightError> {
    match n {
        0 => Err(WeightError::Zero),
        1 => Ok(()),
        n => Err(WeightError::Unsupported { n }),
    }
}

impl<K> RateLimiter<K> for DequeLimiter<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn name(&self) -> &'static str {
        "deque-mutex"
    }

    fn algorithm(&self) -> &'static str {
        "deque"
    }

    fn limit(&self) -> Limit {
        self.limit
    }

    fn hit_n(&self, key: &K, now: u64, n: u64) -> Result<(), WeightError> {
        single_hit(n)?;
        let mut table = self.lock_at(now);
        self.cleanup(&mut table.hits, key, now);
        table.hits.entry(key.clone()).or_default().push_back(now);
        Ok(())
    }

    fn allowed_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError> {
        single_hit(n)?;
        let mut table = self.lock_at(now);
        self.cleanup(&mut table.hits, key, now);
        Ok(table
            .hits
            .get(key)
            .is_none_or(|deque| (deque.len() as u64) < self.limit.max_requests()))
    }

    fn check_and_hit_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError> {
        single_hit(n)?;
        let mut table = self.lock_at(now);
        self.cleanup(&mut table.hits, key, now);
        let deque = table.hits.entry(key.clone()).or_default();
        if (deque.len() as u64) < self.limit.max_requests() {
            deque.push_back(now);
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn status(&self, key: &K, now: u64) -> Status {
        let window = self.limit.window_ticks();
        let max_requests = self.limit.max_requests();
        let table = self.lock();
        let live = table.hits.get(key).into_iter().flatten().copied();
        let (count, oldest) = live
            .filter(|&s| s.saturating_add(window) > now)
            .fold((0u64, u64::MAX), |(c, o), s| (c + 1, o.min(s)));
        let remaining = max_requests.saturating_sub(count);
        Status {
            count,
            remaining,
            retry_after_ticks: if remaining > 0 {
                0
            } else {
                oldest.saturating_add(window).saturating_sub(now)
            },
        }
    }

    fn status_n(&self, key: &K, now: u64, n: u64) -> Result<Status, WeightError> {
        single_hit(n)?;
        Ok(self.status(key, now))
    }

    fn remove_idle(&self, now: u64) -> usize {
        let window = self.limit.window_ticks();
        let mut table = self.lock();
        let hits = &mut table.hits;
        let before = hits.len();
        hits.retain(|_, deque| {
            while deque
                .front()
                .is_some_and(|&front| front.saturating_add(window) <= now)
            {
                deque.pop_front();
            }
            !deque.is_empty()
        });
        before - hits.len()
    }

    fn tracked_keys(&self) -> usize {
        self.lock().hits.len()
    }
}

#[cfg(test)]
mod tests {
    use slidelimit::{Limit, RateLimiter};

    use super::DequeLimiter;

    #[test]
    fn worked_examples_of_3_per_10_ticks() {
        let limiter = DequeLimiter::new(Limit::new(3, 10).unwrap());
        limiter.hit(&"user_1", 1);
        limiter.hit(&"user_1", 2);
        assert!(limiter.allowed(&"user_1", 3));
        limiter.hit(&"user_1", 3);
        assert!(!limiter.allowed(&"user_1", 4));
        assert!(limiter.allowed(&"user_1", 12));
        assert!(limiter.allowed(&"user_2", 5));
        // Burst at one tick.
        limiter.hit(&"burst", 5);
        limiter.hit(&"burst", 5);
        assert!(limiter.allowed(&"burst", 5));
        limiter.hit(&"burst", 5);
        assert!(!limiter.allowed(&"burst", 5));
        // Long gap.
        limiter.hit(&"user_3", 1);
        limiter.hit(&"user_3", 2);
        assert!(limiter.allowed(&"user_3", 1000));
    }

    #[test]
    fn check_and_hit_admits_exactly_the_limit_and_cleanup_forgets_keys() {
        let limiter = DequeLimiter::new(Limit::new(2, 10).unwrap());
        assert!(limiter.check_and_hit(&1u64, 0));
        assert!(limiter.check_and_hit(&1, 1));
        assert!(!limiter.check_and_hit(&1, 9));
        assert!(limiter.check_and_hit(&1, 10));
        assert_eq!(limiter.status(&1, 10).count, 2);
        limiter.hit(&2, 3);
        assert_eq!(limiter.tracked_keys(), 2);
        assert_eq!(limiter.remove_idle(13), 1, "key 2's hit at 3 is dead at 13");
        assert_eq!(limiter.remove_idle(100), 1);
        assert_eq!(limiter.tracked_keys(), 0);
    }

    #[test]
    fn idle_keys_are_forgotten_every_so_many_calls() {
        let limiter = DequeLimiter::new(Limit::new(2, 10).unwrap());
        let never = DequeLimiter::without_forgetting(Limit::new(2, 10).unwrap());
        for key in 0..100u64 {
            assert!(limiter.check_and_hit(&key, 0));
            assert!(never.check_and_hit(&key, 0));
        }
        assert_eq!(limiter.tracked_keys(), 100);
        // Calls on one key at tick 10, where every other key is idle.
        for _ in 100..super::FORGET_EVERY_CALLS {
            let _ = limiter.allowed(&1000, 10);
            let _ = never.allowed(&1000, 10);
        }
        assert_eq!(
            limiter.tracked_keys(),
            0,
            "the pass at call 65,536 forgot them"
        );
        assert_eq!(never.tracked_keys(), 100, "no pass of its own");
        assert_eq!(never.remove_idle(10), 100, "remove_idle still forgets them");
    }
}
