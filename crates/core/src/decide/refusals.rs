//! [`CachedRefusals`]: a remote limiter's refusals remembered in this process, so that a key
//! refused with a retry-after of `r` is refused here until `r` has passed, without a round
//! trip.

use std::collections::hash_map::Entry;
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
use crate::window::{Status, WindowStatuses};

/// Shards of the cache, each behind its own lock: a flood of refusals on many keys from many
/// tasks does not queue on one mutex.
const SHARDS: usize = 16;

/// A shard purges its expired refusals once it holds this many more than after its last
/// purge: memory follows the keys refused within the last retry-after, at the cost of one
/// pass per that many insertions.
const PURGE_GROWTH: usize = 1024;

/// A refusal to repeat until `until`: the limiter's answer, whose waits are counted down
/// when it is repeated ([`Refusal::answer`]).
#[derive(Debug)]
struct Refusal {
    until: Instant,
    limit: Limit,
    /// The status the limiter answered, its wait the one `until` ends.
    status: Status,
    windows: Windows,
}

/// A refusal's window statuses, kept in as little room as the common cases allow: a
/// [`Refusal`] is 120 bytes with these on x86-64 Linux (80 before the windows were kept), where
/// four statuses inline would make it 216.
#[derive(Debug)]
enum Windows {
    /// The limiter gave none.
    Absent,
    /// A single window's, [`WindowStatuses::single`] of the refusal's status (a Redis
    /// limiter's, or an in-process limiter's default): rebuilt from it, not kept twice.
    Single,
    /// Any other (a limit of several windows), on the heap: one allocation per remembered
    /// refusal, after a round trip that costs far more.
    Kept(Box<WindowStatuses>),
}

impl Refusal {
    /// The answer to repeat at `at`, before `until`: the limiter's, each wait counted down
    /// by the time since the question was sent, rounded up (never a shorter wait than is
    /// left), the binding window's and the status's at least 1 tick. Counts and remaining
    /// are the limiter's: the cache cannot see what they became.
    fn answer(&self, at: Instant, tick: Duration) -> Answer {
        let left = self.until.saturating_duration_since(at);
        let remembered = ticks_to_duration(self.status.retry_after_ticks, tick);
        // Each wait ends as long before or after `until` as the limiter's answer put it
        // before or after the remembered one: the binding window's (the longest) ends at
        // `until`, a shorter one earlier, down to 0.
        let count_down = |wait: u64| {
            duration_to_ticks(
                left.saturating_add(ticks_to_duration(wait, tick))
                    .saturating_sub(remembered),
                tick,
            )
        };
        let status = Status {
            retry_after_ticks: count_down(self.status.retry_after_ticks).max(1),
            ..self.status
        };
        let windows = match &self.windows {
            Windows::Absent => None,
            Windows::Single => Some(WindowStatuses::single(status)),
            Windows::Kept(windows) => {
                let binding = windows.binding();
                Some(WindowStatuses::from_windows(
                    windows.iter().enumerate().map(|(index, window)| {
                        let wait = count_down(window.retry_after_ticks);
                        Status {
                            retry_after_ticks: if index == binding { wait.max(1) } else { wait },
                            ..window
                        }
                    }),
                ))
            }
        };
        Answer::Decided {
            admitted: false,
            limit: self.limit,
            status: Some(status),
            windows,
        }
    }
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
/// - **What it answers** is the limiter's refusal: its limit, status and every window's status
///   (for a limit of several windows, so that a layer reports each window as the limiter
///   did), with counts and remaining as the limiter gave them and each wait counted down by
///   the time since the question was sent, rounded up to whole ticks (never shorter than what
///   is left; the binding window's and the status's at least 1 tick, a narrower window's down
///   to 0 once it has passed).
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
        let answer = {
            let mut shard = lock(self.shard(key));
            match shard.refused.get(key) {
                // Read under the lock: a few multiplications, and no copy of the windows.
                Some(refusal) if refusal.until > at => Some(refusal.answer(at, tick)),
                Some(_) => {
                    shard.refused.remove(key);
                    None
                }
                None => None,
            }
        };
        let Some(answer) = answer else {
            self.count_asked();
            return Err(asking);
        };
        // Relaxed: a count for reports.
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(answer)
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
            windows,
        } = answer
        else {
            return;
        };
        if status.retry_after_ticks == 0 {
            return;
        }
        let windows = match windows {
            None => Windows::Absent,
            Some(windows) if windows == WindowStatuses::single(status) => Windows::Single,
            Some(windows) => Windows::Kept(Box::new(windows)),
        };
        let refusal = Refusal {
            until: asked_at + ticks_to_duration(status.retry_after_ticks, tick),
            limit,
            status,
            windows,
        };
        let mut shard = lock(self.shard(key));
        let shard = &mut *shard;
        match shard.refused.entry(key.clone()) {
            Entry::Occupied(mut held) => {
                // The later end wins: a refusal answered out of order never shortens a wait.
                if refusal.until > held.get().until {
                    held.insert(refusal);
                }
            }
            Entry::Vacant(vacant) => {
                vacant.insert(refusal);
            }
        }
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

    impl crate::decide::LimitInTicks for Timed {}

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
            // Every window, as an in-process limiter answers (see `decide_here`).
            let windows = this.limiter.window_statuses(key, now);
            Decision::Ready(Answer::Decided {
                admitted,
                limit: this.limiter.limit(),
                status: Some(windows.tightest()),
                windows: Some(windows),
            })
        }
        fn tick(&self) -> Option<Duration> {
            Some(Duration::from_millis(1))
        }
    }

    fn timed(limit: Limit) -> Arc<Timed> {
        Arc::new(Timed {
            limiter: LockFreeLimiter::new(limit),
            start: Instant::now(),
            calls: AtomicU64::new(0),
        })
    }

    fn answer_of(decision: Decision<impl Sized>) -> Answer {
        match decision {
            Decision::Ready(answer) => answer,
            Decision::Pending(_) => unreachable!("answers at once"),
        }
    }

    fn status(count: u64, remaining: u64, retry_after_ticks: u64) -> Status {
        Status {
            count,
            remaining,
            retry_after_ticks,
        }
    }

    /// A refusal with `windows`, as the binding status reports it.
    fn refusal(limit: Limit, windows: WindowStatuses) -> Answer {
        Answer::Decided {
            admitted: false,
            limit,
            status: Some(windows.tightest()),
            windows: Some(windows),
        }
    }

    /// Remembers `answer` for key 1 as asked `ago`, in ticks of `tick`, and repeats it.
    fn remembered_and_repeated(answer: Answer, ago: Duration, tick: Duration) -> Answer {
        let memory = RefusalMemory::new();
        let at = Instant::now()
            .checked_sub(ago)
            .expect("a monotonic clock that has run that long");
        memory.remember(&1_u64, Asking { at, tick }, answer);
        let repeated = memory.check(&1, tick).expect("remembered");
        assert_eq!((memory.served_locally(), memory.asked()), (1, 0));
        repeated
    }

    #[test]
    fn a_repeated_refusal_carries_every_window_its_waits_counted_down() {
        // Ticks of 4 s, the question sent 6 s ago: a wait of 12 s has 6 s left, 2 ticks
        // rounded up, for as long as the test takes under 2 s from `remember` to `check`.
        let tick = Duration::from_secs(4);
        let ago = Duration::from_secs(6);
        let layered = Limit::new(5, 1)
            .unwrap()
            .and(Limit::new(12, 4).unwrap())
            .unwrap();

        // Both windows full; the wider, waiting longer, binds.
        let fresh = WindowStatuses::from_windows([status(5, 0, 1), status(12, 0, 3)]);
        let repeated = remembered_and_repeated(refusal(layered, fresh), ago, tick);
        let counted = WindowStatuses::from_windows([status(5, 0, 0), status(12, 0, 2)]);
        assert_eq!(
            repeated,
            Answer::Decided {
                admitted: false,
                limit: layered,
                status: Some(status(12, 0, 2)),
                windows: Some(counted),
            },
            "names and remaining as the limiter said; the narrow window's wait has passed"
        );
        let Answer::Decided {
            windows: Some(windows),
            status: Some(binding),
            ..
        } = repeated
        else {
            unreachable!()
        };
        assert_eq!(
            (windows.binding(), windows.tightest()),
            (1, binding),
            "the same window binds, and the status is still its"
        );

        // The narrow window binds with a wait shorter than the wide one's (which still had
        // room when the limiter looked): its wait has passed, but it is shown as 1 tick.
        let fresh = WindowStatuses::from_windows([status(5, 0, 1), status(11, 1, 3)]);
        let repeated = remembered_and_repeated(refusal(layered, fresh), ago, tick);
        assert_eq!(
            repeated,
            Answer::Decided {
                admitted: false,
                limit: layered,
                status: Some(status(5, 0, 2)),
                windows: Some(WindowStatuses::from_windows([
                    status(5, 0, 1),
                    status(11, 1, 2)
                ])),
            }
        );

        // A single window's statuses, and none.
        let single = Limit::new(5, 3).unwrap();
        let repeated = remembered_and_repeated(
            refusal(single, WindowStatuses::single(status(5, 0, 3))),
            ago,
            tick,
        );
        assert_eq!(
            repeated,
            refusal(single, WindowStatuses::single(status(5, 0, 2)))
        );
        let without = Answer::Decided {
            admitted: false,
            limit: single,
            status: Some(status(5, 0, 3)),
            windows: None,
        };
        let repeated = remembered_and_repeated(without, ago, tick);
        assert_eq!(
            repeated,
            Answer::Decided {
                admitted: false,
                limit: single,
                status: Some(status(5, 0, 2)),
                windows: None,
            }
        );
    }

    #[test]
    fn cached_refusals_of_a_layered_limit_repeat_the_limiters_windows() {
        // 2 per 200 ms and 3 per 2 s, in ticks of 1 ms: the third call is refused by the
        // narrow window, with 1 left in the wide one.
        let layered = Limit::new(2, 200)
            .unwrap()
            .and(Limit::new(3, 2_000).unwrap())
            .unwrap();
        let inner = timed(layered);
        let cache = Arc::new(CachedRefusals::new(Arc::clone(&inner)));
        let decide = || answer_of(CachedRefusals::decide(&cache, &1, 0, true));
        assert!(decide().admitted() && decide().admitted());
        let fresh = decide();
        let cached = decide();
        // Relaxed: one thread made every call.
        assert_eq!(
            inner.calls.load(Ordering::Relaxed),
            3,
            "the fourth was cached"
        );
        assert_eq!(cache.memory().served_locally(), 1);
        let windows = |answer: Answer| match answer {
            Answer::Decided {
                admitted: false,
                limit,
                status: Some(status),
                windows: Some(windows),
            } => (limit, status, windows),
            other => panic!("a refusal with every window: {other:?}"),
        };
        let (fresh_limit, fresh_status, fresh_windows) = windows(fresh);
        let (cached_limit, cached_status, cached_windows) = windows(cached);
        assert_eq!(cached_limit, fresh_limit);
        assert_eq!(
            (fresh_windows.len(), fresh_windows.binding()),
            (2, 0),
            "{fresh_windows:?}"
        );
        assert_eq!(
            (cached_windows.len(), cached_windows.binding()),
            (2, 0),
            "{cached_windows:?}"
        );
        for (fresh, cached) in fresh_windows.iter().zip(cached_windows.iter()) {
            assert_eq!(
                (cached.count, cached.remaining),
                (fresh.count, fresh.remaining)
            );
            assert!(
                cached.retry_after_ticks <= fresh.retry_after_ticks,
                "never longer: {cached:?} after {fresh:?}"
            );
        }
        assert_eq!(fresh_windows.iter().nth(1).unwrap().remaining, 1);
        assert!(
            (1..=fresh_status.retry_after_ticks).contains(&cached_status.retry_after_ticks),
            "{cached_status:?} after {fresh_status:?}"
        );
        assert_eq!(
            (cached_status.count, cached_status.remaining),
            (fresh_status.count, fresh_status.remaining),
            "the binding window's, not the widest's"
        );
    }

    #[test]
    fn a_remembered_refusal_stays_small() {
        // 16 (Instant) + 64 (Limit) + 24 (Status) + 16 (windows: a tag and a pointer): the
        // four statuses inline would add 96.
        assert!(
            std::mem::size_of::<Refusal>() <= 120,
            "{}",
            std::mem::size_of::<Refusal>()
        );
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
