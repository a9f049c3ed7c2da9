//! The key pool (`slidelimit::pool`), lock-free and behind a `Mutex`.
//!
//! [`Log`] is the reference: every grant's tick, in time order, and what each mode allows at
//! a tick. [`InOrder`] runs one pool call by call beside it (non-decreasing `now`) and checks
//! each answer; the submodules are the constructor's errors, a five-key pool end to end, traces that
//! reach the bucket bound, late callers and extreme ticks by hand, bad clocks, property tests,
//! and multi-threaded stress tests ([`contended`] drives their threads over a shared clock).

mod bad_clock;
mod bound;
mod construction;
mod late;
mod properties;
mod reasons;
mod seed_example;
mod stress;

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;

use slidelimit::pool::{KeyPool, PoolError, PoolMode, PoolStatus, Refusal, UseLedger};
use slidelimit_mutex::MutexKeyPool;
use slidelimit_trace::rng::SplitMix64;

/// The same pool twice: lock-free and behind a `Mutex`.
pub fn both_pools<N: Hash + Eq + Send + Sync + Clone>(
    names: &[N],
    uses_per_key: u64,
    cooldown_ticks: u64,
    mode: PoolMode,
) -> Result<(KeyPool<N>, MutexKeyPool<N>), PoolError> {
    Ok((
        KeyPool::new(names.iter().cloned(), uses_per_key, cooldown_ticks, mode)?,
        MutexKeyPool::new(names.iter().cloned(), uses_per_key, cooldown_ticks, mode)?,
    ))
}

/// A shared clock for contended calls: a counter every call advances, one tick per
/// `calls_per_tick` calls in all, read with a skew of up to `skew` ticks either way.
#[derive(Clone, Copy, Debug)]
pub struct SkewedClock {
    pub start_tick: u64,
    pub calls_per_tick: u64,
    pub skew: u64,
}

/// Runs `calls` calls on each of `threads` threads, released together by a barrier; call `i`
/// of a thread gets `(thread, now, its generator)` and records into the thread's own `R`.
/// Returns each thread's `R`, in thread order. The generator of thread `t` is seeded `seed + t`.
pub fn contended<R: Default + Send>(
    threads: u64,
    calls: u64,
    clock: SkewedClock,
    seed: u64,
    call: impl Fn(u64, u64, &mut SplitMix64, &mut R) + Sync,
) -> Vec<R> {
    let counter = AtomicU64::new(clock.start_tick * clock.calls_per_tick);
    let start = Barrier::new(threads as usize);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (counter, start, call) = (&counter, &start, &call);
                scope.spawn(move || {
                    let mut rng = SplitMix64::new(seed + thread);
                    let mut record = R::default();
                    start.wait();
                    for _ in 0..calls {
                        // Relaxed: the counter is only a clock; the joins publish the records.
                        let base = counter.fetch_add(1, Ordering::Relaxed) / clock.calls_per_tick;
                        let now = base + rng.below(2 * clock.skew + 1) - clock.skew;
                        call(thread, now, &mut rng, &mut record);
                    }
                    record
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .collect()
    })
}

/// The mode's time threshold `τ` (if any) and the most uses a bucket takes `k`.
pub fn thresholds(mode: PoolMode, total_uses: u64) -> (Option<u64>, u64) {
    match mode {
        PoolMode::Exact => (None, 1),
        PoolMode::TimeBound { threshold_ticks } => (Some(threshold_ticks), total_uses),
        PoolMode::CountBound { key_threshold } => (None, key_threshold),
        PoolMode::Both {
            threshold_ticks,
            key_threshold,
        } => (Some(threshold_ticks), key_threshold),
        other => panic!("a mode these tests do not know: {other:?}"),
    }
}

/// The sorted log of grants (ticks never decrease): the exact answer, and where each mode may
/// refuse.
#[derive(Clone, Debug)]
pub struct Log {
    total_uses: u64,
    cooldown_ticks: u64,
    grants: Vec<u64>,
}

impl Log {
    pub fn new(total_uses: u64, cooldown_ticks: u64) -> Self {
        Self {
            total_uses,
            cooldown_ticks,
            grants: Vec::new(),
        }
    }

    pub fn grant(&mut self, now: u64) {
        assert!(self.grants.last().is_none_or(|&last| last <= now));
        self.grants.push(now);
    }

    /// Grants in `(now - T, now]`.
    pub fn in_window(&self, now: u64) -> u64 {
        let first = self
            .grants
            .partition_point(|&g| now - g >= self.cooldown_ticks);
        (self.grants.len() - first) as u64
    }

    /// `L` minus the grants in `(now - T, now]`: what an exact pool would still hand out.
    pub fn truly_free(&self, now: u64) -> u64 {
        self.total_uses - self.in_window(now)
    }

    /// The `L`-th most recent grant, if there were `L`.
    pub fn lth_most_recent(&self) -> Option<u64> {
        let len = self.grants.len() as u64;
        (len >= self.total_uses).then(|| self.grants[(len - self.total_uses) as usize])
    }

    /// Whether `mode` may refuse a call at `now` (non-decreasing `now`).
    ///
    /// - Exact: no use is truly free.
    /// - A (`τ`): the `L` most recent grants are all held. A refusal means the oldest held
    ///   bucket has not cooled down (`last_use + T > now`) and it took uses for less than `τ`
    ///   ticks after it opened (`last_use ≤ opened_at + τ - 1`), so its first use, the `L`-th
    ///   most recent grant, is at or after `now - T - τ + 2`: inside the seed's "within
    ///   `T + τ`", one tick tighter than `> now - T - τ` at each end of the bucket.
    /// - B (`k`): the oldest held bucket holds at most `k` uses, its newest one in the window,
    ///   and every later bucket's uses are in the window: fewer than `k` truly free.
    /// - AB: both.
    pub fn refusal_allowed(&self, mode: PoolMode, now: u64) -> bool {
        let (open, k) = thresholds(mode, self.total_uses);
        let time_ok = || {
            open.is_none_or(|tau| {
                self.lth_most_recent()
                    .is_some_and(|g| now - g + 2 <= self.cooldown_ticks + tau)
            })
        };
        let count_ok = || self.truly_free(now) < k;
        match mode {
            PoolMode::Exact => self.truly_free(now) == 0,
            PoolMode::TimeBound { .. } => time_ok(),
            PoolMode::CountBound { .. } => count_ok(),
            _ => time_ok() && count_ok(),
        }
    }

    /// Tick from which an exact pool has a use again (the `L`-th most recent grant + `T`).
    pub fn exact_retry_at(&self, now: u64) -> u64 {
        self.lth_most_recent()
            .map_or(now, |g| (g + self.cooldown_ticks).max(now))
    }
}

/// What a pool call answered (for comparing the two pools call by call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `take`: the key index or the refusal.
    Take(Result<usize, Refusal>),
    /// `next_key_index`.
    Index(Option<usize>),
    /// `try_use_key`.
    Used(bool),
    /// `available`.
    Available(u64),
}

/// The calls a trace makes.
#[derive(Clone, Copy, Debug)]
pub enum Call {
    Take,
    NextKey,
    TryUse,
    Available,
}

impl Call {
    pub fn run<N: Hash + Eq + Send + Sync, G: UseLedger>(
        self,
        pool: &KeyPool<N, G>,
        now: u64,
    ) -> Answer {
        match self {
            Self::Take => Answer::Take(pool.take(now)),
            Self::NextKey => Answer::Index(pool.next_key_index(now)),
            Self::TryUse => Answer::Used(pool.try_use_key(now)),
            Self::Available => Answer::Available(pool.available(now)),
        }
    }
}

impl Answer {
    /// `Some(granted)` for a call that tries to take a use; `None` for `available`.
    fn granted(&self) -> Option<bool> {
        match self {
            Self::Take(r) => Some(r.is_ok()),
            Self::Index(i) => Some(i.is_some()),
            Self::Used(u) => Some(*u),
            Self::Available(_) => None,
        }
    }

    /// The key index handed out, where the call names one.
    fn index(&self) -> Option<usize> {
        match self {
            Self::Take(Ok(i)) | Self::Index(Some(i)) => Some(*i),
            _ => None,
        }
    }
}

/// A pool driven with non-decreasing `now`, checked call by call against a [`Log`].
pub struct InOrder {
    pub log: Log,
    mode: PoolMode,
    keys: usize,
    bound: u64,
    last_now: u64,
    /// Every named grant: `(key index, now)`.
    pub named: Vec<(usize, u64)>,
    /// Refusals seen.
    pub refusals: u64,
}

impl InOrder {
    pub fn new<N: Hash + Eq + Send + Sync, G: UseLedger>(pool: &KeyPool<N, G>) -> Self {
        let geometry = pool.geometry();
        Self {
            log: Log::new(geometry.total_uses(), geometry.cooldown_ticks()),
            mode: geometry.mode(),
            keys: pool.names().len(),
            bound: geometry.bucket_bound(),
            last_now: 0,
            named: Vec::new(),
            refusals: 0,
        }
    }

    /// Checks one status against the log.
    fn check_status(&self, status: &PoolStatus, now: u64) -> Result<(), String> {
        let free = self.log.truly_free(now);
        let at = format!(
            "at {now} ({:?}, {} grants before)",
            self.mode,
            self.log.grants.len()
        );
        if status.held_buckets > self.bound {
            return Err(format!(
                "{at}: {status:?} holds more than the bound {}",
                self.bound
            ));
        }
        match status.refusal {
            None => {
                if status.available == 0 || status.retry_at != now {
                    return Err(format!("{at}: not refused but {status:?}"));
                }
            }
            Some(Refusal::Exhausted) => {
                if status.available != 0 || status.retry_at <= now {
                    return Err(format!("{at}: refused but {status:?}"));
                }
            }
            Some(other) => {
                return Err(format!(
                    "{at}: {other:?} with non-decreasing now: {status:?}"
                ));
            }
        }
        if status.available > free {
            return Err(format!("{at}: {status:?} but only {free} truly free"));
        }
        if self.mode == PoolMode::Exact {
            if status.available != free {
                return Err(format!(
                    "{at}: exact pool says {status:?}, truly free {free}"
                ));
            }
            if status.refusal.is_some() && status.retry_at != self.log.exact_retry_at(now) {
                return Err(format!(
                    "{at}: exact pool retry_at {} but the log says {}",
                    status.retry_at,
                    self.log.exact_retry_at(now)
                ));
            }
        }
        Ok(())
    }

    /// Makes `call` at `now` on `pool` and checks it; returns the answer.
    pub fn call<N: Hash + Eq + Send + Sync, G: UseLedger>(
        &mut self,
        pool: &KeyPool<N, G>,
        call: Call,
        now: u64,
    ) -> Result<Answer, String> {
        assert!(now >= self.last_now, "InOrder needs non-decreasing now");
        self.last_now = now;
        let before = pool.status(now);
        self.check_status(&before, now)?;
        if let Some(retry_at) = before.refusal.map(|_| before.retry_at) {
            // Nothing changes between now and retry_at without a call: refused just before
            // it, served at it.
            let just_before = pool.status(retry_at - 1);
            let at_retry = pool.status(retry_at);
            if retry_at > now && just_before.refusal.is_none() {
                return Err(format!(
                    "at {now}: retry_at {retry_at} but served at {}",
                    retry_at - 1
                ));
            }
            if at_retry.refusal.is_some() {
                return Err(format!(
                    "at {now}: retry_at {retry_at} but {at_retry:?} there"
                ));
            }
        }
        let answer = call.run(pool, now);
        let at = format!(
            "at {now} ({:?}, {} grants before)",
            self.mode,
            self.log.grants.len()
        );
        if let Answer::Take(Err(refusal)) = &answer {
            if before.refusal != Some(*refusal) {
                return Err(format!(
                    "{at}: take refused {refusal:?} but status said {before:?}"
                ));
            }
        }
        if let Answer::Available(available) = answer {
            if available != before.available {
                return Err(format!("{at}: available {available}, status {before:?}"));
            }
        }
        if let Some(granted) = answer.granted() {
            if granted != before.refusal.is_none() {
                return Err(format!("{at}: {answer:?} but status said {before:?}"));
            }
            let free = self.log.truly_free(now);
            if granted {
                if free == 0 {
                    return Err(format!(
                        "{at}: granted with no use truly free (false positive)"
                    ));
                }
                if let Some(index) = answer.index() {
                    let expected = self.log.grants.len() % self.keys;
                    if index != expected {
                        return Err(format!(
                            "{at}: key {index} handed out, the cycle says {expected}"
                        ));
                    }
                    self.named.push((index, now));
                }
                self.log.grant(now);
            } else {
                self.refusals += 1;
                if !self.log.refusal_allowed(self.mode, now) {
                    return Err(format!(
                        "{at}: refused with {free} truly free, L-th most recent grant {:?}: \
                         the mode does not allow it",
                        self.log.lth_most_recent()
                    ));
                }
            }
        }
        self.check_status(&pool.status(now), now)?;
        Ok(answer)
    }
}
