//! [`CachedRefusals`]: a remote limiter's refusals remembered in this process, so that a key
//! refused with a retry-after of `r` is refused here until `r` has passed, without a round
//! trip.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{Answer, Decide, Decision};
use crate::keyed::{process_hasher, KeyHasher};
use crate::limit::Limit;
use crate::window::Status;

/// Shards of the cache, each behind its own lock: a flood of refusals on many keys from many
/// tasks does not queue on one mutex.
const SHARDS: usize = 16;

/// A shard purges its expired refusals once it holds this many more than after its last
/// purge: memory follows the keys refused within the last retry-after, at the cost of one
/// pass per that many insertions.
const PURGE_GROWTH: usize = 1024;

/// A refusal to repeat until `until`.
#[derive(Clone, Copy, Debug)]
struct Refusal {
    until: Instant,
    limit: Limit,
}

#[derive(Debug)]
struct Shard<K> {
    refused: HashMap<K, Refusal, KeyHasher>,
    purge_at: usize,
}

/// A remote limiter's refusals, remembered in this process: a key refused with a
/// retry-after of `r` is refused again, at once and without asking, until `r` has passed,
/// with the wait that is left. The memory behind [`CachedRefusals`], for a [`Decide`] that
/// keeps one of its own (the Redis limiters do, on by default).
///
/// - **It can only refuse.** Admissions always come from the limiter; the memory answers only
///   keys the limiter refused, and only within the wait it gave, counted from when the
///   question was sent. So it never admits more than the limiter would.
/// - **What it can cost:** a refusal that the limiter would have lifted early. A raised limit
///   (or a key's window cleared on the server) takes effect for a remembered key only when its
///   wait ends: at most the retry-after it was refused with (one window for the exact log).
/// - **Time** is this process's monotonic clock, and the wait is read in the limiter's own
///   tick ([`Decide::tick`]).
/// - **Memory** follows the keys refused within the last retry-after: each shard purges its
///   expired entries as it grows.
pub struct RefusalMemory<K> {
    shards: Box<[Mutex<Shard<K>>]>,
    hasher: KeyHasher,
    served: AtomicU64,
    asked: AtomicU64,
}

impl<K: Hash + Eq + Clone> Default for RefusalMemory<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Clone> RefusalMemory<K> {
    /// An empty memory.
    #[must_use]
    pub fn new() -> Self {
        let hasher = process_hasher();
        Self {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        refused: HashMap::with_hasher(hasher.clone()),
                        purge_at: PURGE_GROWTH,
                    })
                })
                .collect(),
            hasher,
            served: AtomicU64::new(0),
            asked: AtomicU64::new(0),
        }
    }

    /// Requests refused from memory: each a round trip saved.
    pub fn served_locally(&self) -> u64 {
        // Relaxed: a count for reports; it orders nothing.
        self.served.load(Ordering::Relaxed)
    }

    /// Requests passed on to the limiter (for a remote one, its round trips).
    pub fn asked(&self) -> u64 {
        // Relaxed: as above.
        self.asked.load(Ordering::Relaxed)
    }

    /// Counts one request passed on to the limiter.
    fn count_asked(&self) {
        // Relaxed: a count for reports.
        self.asked.fetch_add(1, Ordering::Relaxed);
    }

    /// Keys whose refusal is remembered, expired ones not yet purged included.
    pub fn remembered(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| lock(shard).refused.len())
            .sum()
    }

    fn shard(&self, key: &K) -> &Mutex<Shard<K>> {
        // The top bits: the shards' maps index with the low ones.
        &self.shards[(self.hasher.hash_one(key) >> 60) as usize % SHARDS]
    }

    /// The refusal to answer `key` with now, in ticks of `tick` (the limiter's own), if one
    /// is remembered and its wait has not ended (an expired one is dropped); otherwise counts
    /// the request as passed on and gives the [`Asking`] to remember the limiter's answer
    /// with.
    ///
    /// # Errors
    /// `Err(Asking)`: nothing remembered; ask the limiter.
    pub fn check(&self, key: &K, tick: Duration) -> Result<Answer, Asking> {
        let at = Instant::now();
        let asking = Asking { at, tick };
        let refusal = {
            let mut shard = lock(self.shard(key));
            match shard.refused.get(key).copied() {
                Some(refusal) if refusal.until > at => Some(refusal),
                Some(_) => {
                    shard.refused.remove(key);
                    None
                }
                None => None,
            }
        };
        let Some(refusal) = refusal else {
            self.count_asked();
            return Err(asking);
        };
        // Relaxed: a count for reports.
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(Answer::Decided {
            admitted: false,
            limit: refusal.limit,
            status: Some(Status {
                count: refusal.limit.max_requests(),
                remaining: 0,
                retry_after_ticks: duration_to_ticks(refusal.until - at, tick).max(1),
            }),
            windows: None,
        })
    }

    /// Remembers `answer` (to the question `asking` stands for) for `key` if it is a refusal
    /// with a wait: from when the question was sent, so the remembered wait never outlasts
    /// the limiter's, for the wait in the limiter's tick.
    pub fn remember(&self, key: &K, asking: Asking, answer: Answer) {
        let Asking { at: asked_at, tick } = asking;
        let Answer::Decided {
            admitted: false,
            limit,
            status: Some(status),
            ..
        } = answer
        else {
            return;
        };
        if status.retry_after_ticks == 0 {
            return;
        }
        let refusal = Refusal {
            until: asked_at + ticks_to_duration(status.retry_after_ticks, tick),
            limit,
        };
        let mut shard = lock(self.shard(key));
        let shard = &mut *shard;
        shard
            .refused
            .entry(key.clone())
            .and_modify(|held| {
                if refusal.until > held.until {
                    *held = refusal;
                }
            })
            .or_insert(refusal);
        if shard.refused.len() >= shard.purge_at {
            let now = Instant::now();
            shard.refused.retain(|_, held| held.until > now);
            shard.purge_at = shard.refused.len() + PURGE_GROWTH;
        }
    }
}

/// A [`Decide`] that remembers the refusals of the one it wraps, in a [`RefusalMemory`]:
/// for a remote limiter that keeps no memory of its own. A limiter without a tick of its own
/// (one that decides at the caller's `now`) gives no wait this can time, and every call
/// passes through.
pub struct CachedRefusals<D: ?Sized, K> {
    memory: RefusalMemory<K>,
    inner: Arc<D>,
}

impl<D: ?Sized, K: Hash + Eq + Clone> CachedRefusals<D, K> {
    /// Remembers the refusals of `inner`.
    pub fn new(inner: Arc<D>) -> Self {
        Self {
            memory: RefusalMemory::new(),
            inner,
        }
    }

    /// The wrapped limiter.
    pub fn inner(&self) -> &Arc<D> {
        &self.inner
    }

    /// The refusals remembered, and the counts of requests answered from them and passed on.
    pub fn memory(&self) -> &RefusalMemory<K> {
        &self.memory
    }
}

/// A shard's lock. A panic while one was held left a map that is still consistent (every
/// change to it is one std call), so a poisoned lock is taken as it is.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `ticks` of length `tick` as a duration, saturating.
fn ticks_to_duration(ticks: u64, tick: Duration) -> Duration {
    let nanos = u128::from(ticks).saturating_mul(tick.as_nanos());
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// `duration` in whole ticks of `tick`, rounded up (never a shorter wait), saturating.
fn duration_to_ticks(duration: Duration, tick: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(tick.as_nanos().max(1))).unwrap_or(u64::MAX)
}

impl<D, K> Decide<K> for CachedRefusals<D, K>
where
    D: Decide<K> + ?Sized,
    D::Pending: Unpin,
    K: Hash + Eq + Clone + Send + Sync + Unpin + 'static,
{
    type Pending = Remembering<D::Pending, D, K>;

    fn decide(
        this: &Arc<Self>,
        key: &K,
        now: u64,
        status_if_admitted: bool,
    ) -> Decision<Self::Pending> {
        // Without a tick of its own the limiter's waits cannot be timed: pass through.
        let asking = match this.inner.tick().map(|tick| this.memory.check(key, tick)) {
            Some(Ok(answer)) => return Decision::Ready(answer),
            Some(Err(asking)) => Some(asking),
            None => {
                this.memory.count_asked();
                None
            }
        };
        match D::decide(&this.inner, key, now, status_if_admitted) {
            Decision::Ready(answer) => {
                if let Some(asking) = asking {
                    this.memory.remember(key, asking, answer);
                }
                Decision::Ready(answer)
            }
            Decision::Pending(pending) => Decision::Pending(Remembering {
                pending,
                cache: asking.map(|asking| Asked {
                    cache: Arc::clone(this),
                    key: key.clone(),
                    asking,
                }),
            }),
        }
    }

    fn tick(&self) -> Option<Duration> {
        self.inner.tick()
    }

    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }
}

/// The future of [`CachedRefusals`]: the wrapped limiter's, remembering a refusal it
/// answers.
pub struct Remembering<F, D: ?Sized, K> {
    pending: F,
    cache: Option<Asked<D, K>>,
}

/// A question a [`Remembering`] future will remember the refusal of: the cache, the key and
/// the question.
struct Asked<D: ?Sized, K> {
    cache: Arc<CachedRefusals<D, K>>,
    key: K,
    asking: Asking,
}

/// A question passed on to the limiter because no refusal was remembered for its key: when it
/// was sent and the limiter's tick, which [`RefusalMemory::remember`] needs to time a refusal.
#[derive(Clone, Copy, Debug)]
pub struct Asking {
    at: Instant,
    tick: Duration,
}

impl<F, D, K> Future for Remembering<F, D, K>
where
    F: Future<Output = Answer> + Unpin,
    D: ?Sized,
    K: Hash + Eq + Clone + Unpin,
{
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let answer = std::task::ready!(Pin::new(&mut self.pending).poll(cx));
        if let Some(asked) = self.cache.take() {
            asked
                .cache
                .memory
                .remember(&asked.key, asked.asking, answer);
        }
        Poll::Ready(answer)
    }
}

impl<K: Hash + Eq + Clone> std::fmt::Debug for RefusalMemory<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefusalMemory")
            .field("served_locally", &self.served_locally())
            .field("asked", &self.asked())
            .finish_non_exhaustive()
    }
}

impl<D: ?Sized, K: Hash + Eq + Clone> std::fmt::Debug for CachedRefusals<D, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedRefusals")
            .field("memory", &self.memory)
            .finish_non_exhaustive()
    }
}

impl<F, D: ?Sized, K> std::fmt::Debug for Remembering<F, D, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remembering").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::RateLimiter;
    use crate::lockfree::LockFreeLimiter;

    /// An in-process limiter dressed as one with its own tick (1 ms of real time), so the
    /// cache has waits to time: answers at once, counts its calls.
    struct Timed {
        limiter: LockFreeLimiter<u64>,
        start: Instant,
        calls: AtomicU64,
    }

    impl Decide<u64> for Timed {
        type Pending = super::super::NeverPending;
        fn decide(
            this: &Arc<Self>,
            key: &u64,
            _now: u64,
            _status: bool,
        ) -> Decision<Self::Pending> {
            // Relaxed: a count the test reads after the calls; it orders nothing.
            this.calls.fetch_add(1, Ordering::Relaxed);
            let now = u64::try_from(this.start.elapsed().as_millis()).unwrap_or(u64::MAX);
            let admitted = this.limiter.check_and_hit(key, now);
            Decision::Ready(Answer::Decided {
                admitted,
                limit: this.limiter.limit(),
                status: Some(this.limiter.status(key, now)),
                windows: None,
            })
        }
        fn tick(&self) -> Option<Duration> {
            Some(Duration::from_millis(1))
        }
    }

    fn answer_of(decision: Decision<impl Sized>) -> Answer {
        match decision {
            Decision::Ready(answer) => answer,
            Decision::Pending(_) => unreachable!("answers at once"),
        }
    }

    #[test]
    fn a_refused_key_is_refused_locally_until_its_wait_ends_and_others_pass() {
        let inner = Arc::new(Timed {
            limiter: LockFreeLimiter::new(Limit::new(2, 200).unwrap()),
            start: Instant::now(),
            calls: AtomicU64::new(0),
        });
        let cache = Arc::new(CachedRefusals::new(Arc::clone(&inner)));
        let decide = |key: u64| answer_of(CachedRefusals::decide(&cache, &key, 0, true));
        assert!(decide(1).admitted());
        assert!(decide(1).admitted());
        let refused = decide(1);
        assert!(!refused.admitted());
        let flood: Vec<Answer> = (0..100).map(|_| decide(1)).collect();
        assert!(flood.iter().all(|answer| !answer.admitted()));
        // Relaxed: one thread made every call.
        assert_eq!(
            inner.calls.load(Ordering::Relaxed),
            3,
            "the flood asked nothing"
        );
        assert_eq!(
            (cache.memory().served_locally(), cache.memory().asked()),
            (100, 3)
        );
        let Answer::Decided {
            status: Some(status),
            limit,
            ..
        } = flood[99]
        else {
            panic!("a decided refusal")
        };
        assert_eq!((status.remaining, limit.max_requests()), (0, 2));
        assert!((1..=200).contains(&status.retry_after_ticks), "{status:?}");
        assert!(decide(2).admitted(), "another key is asked, and admitted");
        assert_eq!(cache.memory().remembered(), 1);

        // Once the wait has passed, the limiter is asked again and admits.
        std::thread::sleep(Duration::from_millis(260));
        assert!(decide(1).admitted());
        assert_eq!(
            cache.memory().remembered(),
            0,
            "the expired refusal is dropped"
        );
    }

    #[test]
    fn a_limiter_without_its_own_tick_passes_every_call_through() {
        let inner: Arc<LockFreeLimiter<u64>> =
            Arc::new(LockFreeLimiter::new(Limit::new(1, 1_000).unwrap()));
        let cache = Arc::new(CachedRefusals::new(Arc::clone(&inner)));
        assert!(answer_of(CachedRefusals::decide(&cache, &7, 10, true)).admitted());
        assert!(!answer_of(CachedRefusals::decide(&cache, &7, 11, true)).admitted());
        assert!(!answer_of(CachedRefusals::decide(&cache, &7, 12, true)).admitted());
        assert_eq!(
            (cache.memory().served_locally(), cache.memory().asked()),
            (0, 3)
        );
        assert!(answer_of(CachedRefusals::decide(&cache, &7, 1_010, true)).admitted());
    }
}
