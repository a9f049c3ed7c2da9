//! One request decided now or later: the interface that middleware asks, so that a limiter
//! in this process and one across the network (`slidelimit-redis`) sit behind the same
//! layer.
//!
//! A limiter in this process answers at once ([`Decision::Ready`], no allocation, no
//! future); a remote one answers with a future ([`Decision::Pending`]) that the caller
//! awaits, and that never blocks a thread of the runtime. Every limiter of this crate
//! implements [`Decide`], and so does `dyn RateLimiter<K>`; [`Local`] makes any other
//! [`RateLimiter`] one.

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

mod refusals;

pub use refusals::{Asking, CachedRefusals, RefusalMemory, Remembering};

use crate::keyed::concurrent::{EntryGuardedLimiter, GuardedEntry};
use crate::keyed::sequential::{KeyTable, MapGuardedLimiter, TableLock};
use crate::limit::Limit;
use crate::limiter::RateLimiter;
use crate::window::Algorithm;
use crate::window::{Status, WindowStatuses};

/// What a limiter answered for one request of weight 1.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The limiter decided, and recorded the request if `admitted`.
    Decided {
        /// Whether the request may go ahead.
        admitted: bool,
        /// The limit the answer is about (the limiter's default limit).
        limit: Limit,
        /// The key's window after the call, in the limiter's ticks; `None` only for an
        /// admission of a limiter asked not to read it (see [`Decide::decide`]). For a limit
        /// of several windows, the binding one ([`WindowStatuses::tightest`]).
        status: Option<Status>,
        /// Every window's status, narrowest first, when the limiter read them (an
        /// in-process limiter does whenever it reads `status`); `None` otherwise.
        windows: Option<WindowStatuses>,
    },
    /// The limiter could not decide (its backend is down, slow or restarting) and its
    /// failure policy answered instead: `admitted` (fail open) or not (fail closed, in
    /// which case the service is unavailable rather than the client over its limit).
    Undecided {
        /// Whether the failure policy lets the request through.
        admitted: bool,
        /// When to try again, for a refusal.
        retry_after: Duration,
    },
}

impl Answer {
    /// Whether the request may go ahead.
    #[must_use]
    pub const fn admitted(&self) -> bool {
        match self {
            Self::Decided { admitted, .. } | Self::Undecided { admitted, .. } => *admitted,
        }
    }
}

/// An answer now, or one to await.
// An in-process limiter answers `Ready` on every call and never builds `Pending` (its future
// type is the empty `NeverPending`); boxing the answer would allocate on every decision.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Decision<F> {
    /// Decided in this call.
    Ready(Answer),
    /// Decided when the future completes (a round trip to a remote limiter).
    Pending(F),
}

/// A limiter that decides one request at a time, now or later (see the
/// [module docs](self)).
///
/// Every `Decide` is also a [`LimitInTicks`], which a middleware reads when it is built (a
/// limiter of your own can take its default with `impl LimitInTicks for MyLimiter {}`).
pub trait Decide<K: ?Sized>: LimitInTicks + Send + Sync + 'static {
    /// The future of a decision that is not ready at once. Limiters in this process never
    /// return one: theirs is [`NeverPending`].
    type Pending: Future<Output = Answer> + Send + 'static;

    /// Decides a request of weight 1 on `key` at tick `now` (of the caller's clock; a
    /// limiter that keeps its own time, see [`Decide::tick`], may decide by its own), and
    /// records it if admitted. With `status_if_admitted` false an in-process limiter skips
    /// reading the window after an admission (the status of a refusal is always read).
    fn decide(
        this: &Arc<Self>,
        key: &K,
        now: u64,
        status_if_admitted: bool,
    ) -> Decision<Self::Pending>;

    /// The length of the limiter's tick if it keeps its own time (a remote limiter deciding
    /// by its server's clock, in microseconds); `None` if it decides at the caller's `now`,
    /// in the caller's ticks.
    fn tick(&self) -> Option<Duration> {
        None
    }

    /// Whether each decision costs a round trip, so that caching refusals pays.
    fn is_remote(&self) -> bool {
        false
    }
}

/// The limit a limiter applies to its caller's `now`, readable without naming a key type:
/// what a middleware checks when it is built, against the unit its clock counts in.
///
/// [`Decide`] is generic over the key, which a middleware learns only per request; this
/// trait is not, so the tower layer can read it at start-up and refuse an in-process limiter
/// whose [`Limit`] carries another tick than the layer's clock ([`Limit::tick`]): a limit of
/// 100 per minute built in milliseconds, counted in nanoseconds, would be 100 per 60 µs.
///
/// It is a supertrait of [`Decide`], so code generic over `L: Decide<K>` may read it too.
/// Every limiter of this crate implements it, as do `dyn RateLimiter<K>`, [`CachedRefusals`]
/// (its inner limiter's answer) and the Redis limiters (which answer `None`: they count in
/// their own microseconds and convert a limit's tick themselves). [`Local`] answers `None`:
/// it cannot name the key type its limiter's [`RateLimiter::limit`] needs. For a [`Decide`]
/// of your own, `impl LimitInTicks for MyLimiter {}` answers `None`, which checks nothing;
/// an in-process one should answer its limit.
///
/// ```
/// use std::time::Duration;
/// use slidelimit::decide::LimitInTicks;
/// use slidelimit::{Limit, LockFreeLimiter};
///
/// let limit = Limit::per_minute(100, Duration::from_millis(1))?;
/// let limiter = LockFreeLimiter::<String>::new(limit);
/// assert_eq!(limiter.limit_in_callers_ticks().and_then(|limit| limit.tick()), Some(Duration::from_millis(1)));
/// # Ok::<(), slidelimit::LimitError>(())
/// ```
pub trait LimitInTicks {
    /// The limiter's default limit, in the ticks of the `now` its callers pass, if it decides
    /// at the caller's `now` and can say; `None` for a limiter that keeps its own time (see
    /// [`Decide::tick`]) or does not say.
    fn limit_in_callers_ticks(&self) -> Option<Limit> {
        None
    }
}

/// `None`: [`RateLimiter::limit`] needs the key type, which `Local<L>` does not name.
impl<L> LimitInTicks for Local<L> {}

impl<D: LimitInTicks + ?Sized, K: Hash + Eq + Clone> LimitInTicks for CachedRefusals<D, K> {
    fn limit_in_callers_ticks(&self) -> Option<Limit> {
        self.inner().limit_in_callers_ticks()
    }
}

/// [`LimitInTicks`] for in-process limiters: their [`RateLimiter::limit`], which they apply
/// to the caller's `now`.
macro_rules! limit_in_callers_ticks {
    ($([$($generics:tt)*] $limiter:ty { $($bounds:tt)* };)*) => {$(
        impl<$($generics)*> LimitInTicks for $limiter
        where
            K: Hash + Eq + Clone + Send + Sync + 'static,
            $($bounds)*
        {
            fn limit_in_callers_ticks(&self) -> Option<Limit> {
                Some(RateLimiter::limit(self))
            }
        }
    )*};
}

limit_in_callers_ticks! {
    [K] dyn RateLimiter<K> {};
    [K, E] EntryGuardedLimiter<K, E> { E: GuardedEntry, };
    [K, W, L] MapGuardedLimiter<K, W, L> {
        W: Algorithm,
        L: TableLock<KeyTable<K, W>> + 'static,
    };
}

/// The future of a limiter that always answers at once: never constructed.
#[derive(Debug)]
pub enum NeverPending {}

impl Future for NeverPending {
    type Output = Answer;
    fn poll(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Answer> {
        match *self {}
    }
}

/// The answer of an in-process limiter: `check_and_hit`, then `status` at the same tick
/// unless the caller does not want it after an admission.
#[inline]
fn decide_here<K, L>(limiter: &L, key: &K, now: u64, status_if_admitted: bool) -> Answer
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: RateLimiter<K> + ?Sized,
{
    let admitted = limiter.check_and_hit(key, now);
    let windows = (!admitted || status_if_admitted).then(|| limiter.window_statuses(key, now));
    Answer::Decided {
        admitted,
        limit: limiter.limit(),
        status: windows.as_ref().map(WindowStatuses::tightest),
        windows,
    }
}

/// Any [`RateLimiter`] as a [`Decide`]: for limiters other than this crate's own (which
/// implement it already).
#[derive(Debug)]
pub struct Local<L>(pub L);

/// [`Decide`] for in-process limiters: decided at once by [`decide_here`] on the
/// [`RateLimiter`] that `|this| inner` reaches from the shared handle, written once for
/// [`Local`] and each of this crate's limiter shapes.
macro_rules! decide_in_process {
    ($([$($generics:tt)*] $limiter:ty { $($bounds:tt)* } |$this:ident| $inner:expr;)*) => {$(
        impl<$($generics)*> Decide<K> for $limiter
        where
            K: Hash + Eq + Clone + Send + Sync + 'static,
            $($bounds)*
        {
            type Pending = NeverPending;
            #[inline]
            fn decide(
                this: &Arc<Self>,
                key: &K,
                now: u64,
                status_if_admitted: bool,
            ) -> Decision<NeverPending> {
                let $this = this;
                Decision::Ready(decide_here($inner, key, now, status_if_admitted))
            }
        }
    )*};
}

decide_in_process! {
    [K, L] Local<L> { L: RateLimiter<K> + 'static, } |this| &this.0;
    [K] dyn RateLimiter<K> {} |this| &**this;
    [K, E] EntryGuardedLimiter<K, E> { E: GuardedEntry, } |this| &**this;
    [K, W, L] MapGuardedLimiter<K, W, L> {
        W: Algorithm,
        L: TableLock<KeyTable<K, W>> + 'static,
    } |this| &**this;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockfree::LockFreeLimiter;

    fn ready(decision: Decision<NeverPending>) -> Answer {
        match decision {
            Decision::Ready(answer) => answer,
            Decision::Pending(never) => match never {},
        }
    }

    #[test]
    fn an_in_process_limiter_answers_at_once_and_reads_the_window_only_when_asked() {
        let limit = Limit::new(1, 10).unwrap();
        let local = Arc::new(Local(LockFreeLimiter::<u64>::new(limit)));
        let admitted = ready(Local::decide(&local, &7, 100, false));
        assert_eq!(
            admitted,
            Answer::Decided {
                admitted: true,
                limit,
                status: None,
                windows: None,
            },
            "no status read after an admission unless asked"
        );
        let refused = ready(Local::decide(&local, &7, 105, false));
        let Answer::Decided {
            admitted: false,
            status: Some(status),
            ..
        } = refused
        else {
            panic!("a refusal with its window: {refused:?}")
        };
        assert_eq!((status.remaining, status.retry_after_ticks), (0, 5));
        let dynamic: Arc<dyn RateLimiter<u64>> = Arc::new(LockFreeLimiter::<u64>::new(limit));
        assert!(ready(Decide::decide(&dynamic, &7, 100, true)).admitted());
        assert!(!ready(Decide::decide(&dynamic, &7, 101, true)).admitted());
    }

    #[test]
    fn in_process_limiters_say_their_limit_and_its_tick() {
        let ms = Duration::from_millis(1);
        let limit = Limit::per_second(5, ms).unwrap();
        let lock_free = Arc::new(LockFreeLimiter::<u64>::new(limit));
        let said = lock_free.limit_in_callers_ticks().unwrap();
        assert_eq!((said, said.tick()), (limit, Some(ms)));
        let dynamic: Arc<dyn RateLimiter<u64>> = Arc::new(LockFreeLimiter::<u64>::new(limit));
        assert_eq!(dynamic.limit_in_callers_ticks().unwrap().tick(), Some(ms));
        // Through a refusal cache: the inner limiter's answer, and a set_limit shows.
        let cached = CachedRefusals::<_, u64>::new(Arc::clone(&lock_free));
        assert_eq!(cached.limit_in_callers_ticks().unwrap().tick(), Some(ms));
        let ns = Duration::from_nanos(1);
        crate::limiter::LimitControl::set_limit(&*lock_free, Limit::per_second(5, ns).unwrap());
        assert_eq!(cached.limit_in_callers_ticks().unwrap().tick(), Some(ns));
        // Local cannot name its limiter's key type: no answer.
        assert_eq!(
            Local(LockFreeLimiter::<u64>::new(limit)).limit_in_callers_ticks(),
            None
        );
    }
}
