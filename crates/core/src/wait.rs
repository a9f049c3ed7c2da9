//! Waiting instead of refusing: [`AsyncLimiter::until_ready`] sleeps until a key has room,
//! then takes it, on tokio (feature `tokio`).
//!
//! ```
//! use std::time::Duration;
//! use slidelimit::{Limit, LockFreeLimiter};
//! use slidelimit::wait::AsyncLimiter;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A paused runtime makes the example's timing exact; a real one waits the same way.
//! let runtime = tokio::runtime::Builder::new_current_thread()
//!     .enable_time()
//!     .start_paused(true)
//!     .build()?;
//! runtime.block_on(async {
//!     let ms = Duration::from_millis(1);
//!     // 2 requests per second, in ticks of a millisecond.
//!     let limiter = AsyncLimiter::new(LockFreeLimiter::<u64>::new(Limit::per_second(2, ms)?), ms);
//!     let start = tokio::time::Instant::now();
//!     limiter.until_ready(&7).await?;
//!     tokio::time::sleep(Duration::from_millis(300)).await;
//!     limiter.until_ready(&7).await?;
//!     limiter.until_ready(&7).await?; // the key is full: this one sleeps until 1 s
//!     assert_eq!(start.elapsed(), Duration::from_secs(1), "the first hit left at 1 s");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(())
//! # }
//! ```
//!
//! # Guarantees
//! - **Never early, exact when the clock is.** A refused waiter asks the limiter, without
//!   recording anything, for the first tick at which its request would fit if no other call
//!   came, and sleeps until that tick begins ([`WaitClock::instant_at`]), never less; then it
//!   calls `check_and_hit_n` again (another caller may have taken the room: it loops). For
//!   weight `n` that tick is `now + retry_after_ticks` of the key's
//!   [`status_n`](crate::RateLimiter::status_n), which every window reads from its own
//!   state (the rolling buckets from their counters). With [`TokioClock`] the wake-up is
//!   the tick's first instant, which tokio's timer serves at millisecond granularity: a
//!   tick finer than a millisecond may be woken up to a millisecond late, never early.
//! - **Arrival order per key.** Waiters on one key are served first come, first served:
//!   each key with waiters has a queue (a tokio mutex, which hands its lock out in the order
//!   it was asked for); only its head checks, sleeps and retries, and a newcomer that finds
//!   a queue joins it even if the key has room at that moment, so it cannot overtake a
//!   waiter woken at the same instant. This is strict: a head asking for a heavy weight
//!   holds back lighter requests behind it (none of them starves; a heavy request would if
//!   light ones could pass). The queue orders only this `AsyncLimiter`'s waiters: plain
//!   synchronous calls on the same limiter (`check_and_hit` from elsewhere) are not blocked
//!   by it and may take the room a waiter was woken for; the waiter then sleeps again.
//! - **Cancellation safety.** Dropping an `until_ready*` future at any point records
//!   nothing and leaves nothing behind: the only call that records is the synchronous
//!   `check_and_hit_n`, which is never split by an await, and the waiter's registration
//!   and its place in the queue are released by drop guards (the next waiter moves up).
//! - **Memory follows waiting keys.** A key's queue exists while it has waiters and is
//!   removed when the last one leaves, however it leaves ([`AsyncLimiter::waiting_keys`]).
//! - **Impossible requests fail at once.** A weight the limiter rejects
//!   ([`WaitError::Weight`]) or one above the key's own limit ([`WaitError::NeverAdmitted`])
//!   is an error before any waiting, not a wait forever.
//!
//! # Jitter
//! [`AsyncLimiter::with_jitter`] adds a random delay in `[0, max]` to every sleep, so that
//! waiters in many processes (or many `AsyncLimiter`s over one shared limit) that would
//! all wake at the same instant spread out. Within one `AsyncLimiter` the queue already
//! serialises a key's waiters; jitter there only delays them. Each delay is a seeded hash
//! of the draw's index (foldhash), seeded from the process's hash randomness, or from a fixed seed with
//! [`AsyncLimiter::with_seeded_jitter`] for reproducible runs.
//!
//! # Implementation
//! [`AsyncLimiter`] holds the limiter (in an `Arc`, so it can be shared with synchronous
//! callers), a [`WaitClock`], the optional jitter and the waiter map: 32 maps from key to
//! queue, each behind a std mutex and chosen by the key's hash, touched once when a call
//! starts to wait and once when it leaves, never across an await. A call on a key without
//! waiters does not register: it looks the key up once (under its part's lock) to see
//! that, then calls the limiter, and returns at once if admitted.

mod clock;
mod jitter;
mod queue;
mod ready;
mod remote;

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::limiter::RateLimiter;
use crate::window::{WeightError, MAX_TICK};

pub use clock::{TokioClock, WaitClock};
use jitter::Jitter;
use queue::WaiterMap;
use ready::{first_admitting_tick, Ready};
pub use remote::until_admitted;

/// Why a wait ended without an admission.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// The limiter rejects the weight itself, at every tick (zero, above every limit it
    /// has, or above 1 on the exact log).
    Weight(WeightError),
    /// No tick admits `n` hits of this key: `n` is above the key's own limit (a per-key
    /// or resolved limit below the default, or one lowered while the caller waited).
    NeverAdmitted {
        /// The weight asked for.
        n: u64,
    },
    /// The request could not be admitted by the deadline: either the key's first tick with
    /// room for it lies after the deadline (known before sleeping, so the call returns at
    /// once), or the deadline passed while the caller was queued behind other waiters.
    DeadlineExceeded,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Weight(error) => write!(f, "the limiter rejects the weight: {error}"),
            Self::NeverAdmitted { n } => {
                write!(
                    f,
                    "weight {n} is above the key's limit and is never admitted"
                )
            }
            Self::DeadlineExceeded => f.write_str("the request cannot be admitted by the deadline"),
        }
    }
}

impl std::error::Error for WaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Weight(error) => Some(error),
            _ => None,
        }
    }
}

/// A [`RateLimiter`] that callers can wait on: [`AsyncLimiter::until_ready`] sleeps until
/// the key has room and then takes it. Works over every variant and both windows.
///
/// `L` is the limiter (any `RateLimiter<K>`, also `dyn RateLimiter<K>` through
/// [`AsyncLimiter::from_arc`]), `C` the clock that stamps its calls and tells when a tick
/// begins. Share one `AsyncLimiter` (in an `Arc`, or by reference) between the tasks that
/// wait on the same keys: arrival order is kept among the waiters of one `AsyncLimiter`.
/// Synchronous callers of the same limits use [`AsyncLimiter::limiter`] with ticks from
/// [`AsyncLimiter::clock`]. See the [module docs](self) for the guarantees.
pub struct AsyncLimiter<L: ?Sized, K, C = TokioClock> {
    clock: C,
    jitter: Option<Jitter>,
    waiters: WaiterMap<K>,
    limiter: Arc<L>,
}

impl<L, K> AsyncLimiter<L, K, TokioClock>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: RateLimiter<K>,
{
    /// Waits on `limiter`, whose limits are in ticks of length `tick`, counted by a
    /// [`TokioClock`] from now.
    ///
    /// # Panics
    /// If `tick` is zero or longer than `u64::MAX` nanoseconds (see [`TokioClock::new`]), or
    /// if the limiter's default limit carries another tick ([`Limit::tick`]: it was built
    /// from durations in another unit, so every window would last the wrong time): at
    /// start-up, with the fix in the message, never as a wrong wait later.
    ///
    /// [`Limit::tick`]: crate::Limit::tick
    #[must_use]
    pub fn new(limiter: L, tick: Duration) -> Self {
        if let Err(err) = limiter.limit().check_counted_in(tick) {
            panic!("AsyncLimiter::new: {err}");
        }
        Self::with_clock(limiter, TokioClock::new(tick))
    }
}

impl<L, K, C> AsyncLimiter<L, K, C>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: RateLimiter<K>,
    C: WaitClock,
{
    /// Waits on `limiter`, with ticks from `clock`.
    #[must_use]
    pub fn with_clock(limiter: L, clock: C) -> Self {
        Self::from_arc(Arc::new(limiter), clock)
    }
}

impl<L, K, C> AsyncLimiter<L, K, C>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: RateLimiter<K> + ?Sized,
    C: WaitClock,
{
    /// Waits on a limiter shared with other code (a `dyn RateLimiter<K>` included), with
    /// ticks from `clock`.
    #[must_use]
    pub fn from_arc(limiter: Arc<L>, clock: C) -> Self {
        Self {
            clock,
            jitter: None,
            waiters: WaiterMap::new(),
            limiter,
        }
    }

    /// Adds a random delay in `[0, max]` to every sleep, seeded from the process's hash
    /// randomness (see the [module docs](self#jitter)). A zero `max` turns jitter off.
    #[must_use]
    pub fn with_jitter(mut self, max: Duration) -> Self {
        self.jitter = (!max.is_zero()).then(|| Jitter::random(max));
        self
    }

    /// [`AsyncLimiter::with_jitter`] with delays drawn from `seed`, the same sequence on
    /// every run.
    #[must_use]
    pub fn with_seeded_jitter(mut self, max: Duration, seed: u64) -> Self {
        self.jitter = (!max.is_zero()).then(|| Jitter::seeded(max, seed));
        self
    }

    /// The largest extra delay added to a sleep; zero without jitter.
    #[must_use]
    pub fn jitter(&self) -> Duration {
        self.jitter.as_ref().map_or(Duration::ZERO, Jitter::max)
    }

    /// The limiter, to share with synchronous callers.
    #[must_use]
    pub fn limiter(&self) -> &Arc<L> {
        &self.limiter
    }

    /// The clock every call is stamped with.
    #[must_use]
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// How many keys have waiters now (each such key holds one queue).
    #[must_use]
    pub fn waiting_keys(&self) -> usize {
        self.waiters.keys()
    }

    /// How many callers are waiting on `key` now, the one at the head included.
    #[must_use]
    pub fn waiters(&self, key: &K) -> usize {
        self.waiters.waiters_on(key)
    }

    /// Waits until one hit of `key` is admitted, and records it: [`AsyncLimiter::until_ready_n`]
    /// with `n = 1`.
    ///
    /// # Errors
    /// Those of [`AsyncLimiter::until_ready_n`]; for one hit only
    /// [`WaitError::NeverAdmitted`] is possible, and only on a key that holds hits stamped at
    /// the last tick (`u64::MAX`), after which no tick exists.
    pub async fn until_ready(&self, key: &K) -> Result<(), WaitError> {
        self.wait(key, 1, None).await
    }

    /// Waits until `n` hits of `key` are admitted together, and records them: returns at
    /// once if the key has room and no one waits on it; otherwise joins the key's queue, and
    /// at its head sleeps until the first tick with room for `n` and tries again, until
    /// admitted. Dropping the future cancels the wait and records nothing.
    ///
    /// # Errors
    /// At once, without waiting: [`WaitError::Weight`] for a weight the limiter rejects
    /// (zero, above every limit, above 1 on the exact log); [`WaitError::NeverAdmitted`]
    /// for one above the key's own limit, also if the limit is lowered below `n` while the
    /// caller waits.
    pub async fn until_ready_n(&self, key: &K, n: u64) -> Result<(), WaitError> {
        self.wait(key, n, None).await
    }

    /// [`AsyncLimiter::until_ready`], giving up at `deadline`.
    ///
    /// # Errors
    /// Those of [`AsyncLimiter::until_ready_n_by`].
    pub async fn until_ready_by(&self, key: &K, deadline: Instant) -> Result<(), WaitError> {
        self.wait(key, 1, Some(deadline)).await
    }

    /// [`AsyncLimiter::until_ready_n`], admitted by `deadline` or not at all: no sleep
    /// reaches past `deadline` (jitter is cut short there), so the last attempt is made when
    /// the timer fires for it (tokio's timers fire at or after their instant, to the
    /// millisecond).
    ///
    /// # Errors
    /// Those of [`AsyncLimiter::until_ready_n`], and [`WaitError::DeadlineExceeded`] as
    /// soon as it is known that the request cannot be admitted by `deadline`: at once if
    /// `deadline` has passed or the key's first tick with room lies after it (without
    /// sleeping), or when `deadline` passes while the caller is queued behind other
    /// waiters. Nothing is recorded then.
    pub async fn until_ready_n_by(
        &self,
        key: &K,
        n: u64,
        deadline: Instant,
    ) -> Result<(), WaitError> {
        self.wait(key, n, Some(deadline)).await
    }

    async fn wait(&self, key: &K, n: u64, deadline: Option<Instant>) -> Result<(), WaitError> {
        if deadline.is_some_and(|deadline| Instant::now() > deadline) {
            return Err(WaitError::DeadlineExceeded);
        }
        // No one waits on the key: taking its room now overtakes no one.
        if !self.waiters.is_waited_on(key) && self.try_now(key, n)? {
            return Ok(());
        }
        // About to wait: a request no tick admits fails now, not at the head of the queue.
        match self.limiter.allowed_n(key, MAX_TICK, n) {
            Err(error) => return Err(WaitError::Weight(error)),
            Ok(false) => return Err(WaitError::NeverAdmitted { n }),
            Ok(true) => {}
        }
        let waiter = self.waiters.register(key);
        // Await points from here: taking the turn and each sleep. Dropped at either, the
        // guards give back the turn, then unregister the waiter (in that order: the guard
        // borrows the waiter).
        let _turn = match deadline {
            None => waiter.turn().await,
            Some(deadline) => tokio::time::timeout_at(deadline, waiter.turn())
                .await
                .map_err(|_| WaitError::DeadlineExceeded)?,
        };
        loop {
            let now = self.clock.now_ticks();
            // The one call that records: synchronous, so no cancellation can split it.
            if self.try_at(key, now, n)? {
                return Ok(());
            }
            let tick = match first_admitting_tick(&*self.limiter, key, now, n) {
                Ready::At(tick) => tick,
                Ready::Never => return Err(WaitError::NeverAdmitted { n }),
            };
            let ready = self.clock.instant_at(tick);
            let mut wake = match &self.jitter {
                Some(jitter) => ready.checked_add(jitter.draw()).unwrap_or(ready),
                None => ready,
            };
            if let Some(deadline) = deadline {
                if ready > deadline {
                    return Err(WaitError::DeadlineExceeded);
                }
                wake = wake.min(deadline);
            }
            tokio::time::sleep_until(wake).await;
        }
    }

    fn try_now(&self, key: &K, n: u64) -> Result<bool, WaitError> {
        self.try_at(key, self.clock.now_ticks(), n)
    }

    fn try_at(&self, key: &K, now: u64, n: u64) -> Result<bool, WaitError> {
        self.limiter
            .check_and_hit_n(key, now, n)
            .map_err(WaitError::Weight)
    }
}

impl<L, K, C> fmt::Debug for AsyncLimiter<L, K, C>
where
    K: Hash + Eq + Clone,
    L: ?Sized,
    C: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncLimiter")
            .field("clock", &self.clock)
            .field("jitter", &self.jitter.as_ref().map(Jitter::max))
            .field("waiting_keys", &self.waiters.keys())
            .finish_non_exhaustive()
    }
}
