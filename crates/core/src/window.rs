//! The window algorithms: what one key's state is and how it decides, in two forms each.
//!
//! A [`Algorithm`] is an algorithm's configuration; it builds the algorithm's sequential form
//! (plain integers, for use under a lock) and its atomic form (decided by CAS). Both forms run
//! the same code, so every limiter gives the same answers to a single-threaded trace.

pub mod buckets;
mod by_use;
pub mod layers;
pub mod ring;
pub mod state;

use std::fmt;

use crate::limit::Limit;
pub use state::{StateError, WindowState};

/// The largest tick a window stores; `u64::MAX` and `u64::MAX - 1` are treated as
/// `u64::MAX - 2`, which frees two slot values of the exact log: "empty" and "sealed".
pub const MAX_TICK: u64 = u64::MAX - 2;

/// A window algorithm and its configuration.
pub trait Algorithm: Clone + Send + Sync + 'static {
    /// The form used under a lock.
    type Sequential: SequentialWindow;
    /// The form decided by CAS, for the lock-free limiter.
    type Atomic: AtomicWindow;

    /// A short name for reports: `"exact"` or `"buckets"`.
    fn algorithm(&self) -> &'static str;
    /// The limit this window enforces.
    fn limit(&self) -> Limit;
    /// Whether a request of weight `n` can be asked of this window at all.
    ///
    /// # Errors
    /// A [`WeightError`] saying why not.
    fn check_weight(&self, n: u64) -> Result<(), WeightError>;
    /// A fresh, empty window in the sequential form.
    fn new_sequential(&self) -> Self::Sequential;
    /// A fresh, empty window in the atomic form.
    fn new_atomic(&self) -> Self::Atomic;
    /// A fresh, empty window in the sequential form, made for a key whose first call is at
    /// `now`: it answers every call at or after `now` as [`Self::new_sequential`] does, and
    /// may already judge calls before `now` late, as that first call would make them.
    /// The rolling buckets come already moved to `now`'s bucket, so a new key's first call
    /// does not recycle every bucket on its way there.
    fn new_sequential_at(&self, now: u64) -> Self::Sequential {
        let _ = now;
        self.new_sequential()
    }
    /// [`Self::new_sequential_at`] in the atomic form.
    fn new_atomic_at(&self, now: u64) -> Self::Atomic {
        let _ = now;
        self.new_atomic()
    }

    /// The same algorithm and configuration for another limit. The rolling buckets keep
    /// their bucket count and lateness, but never more buckets than the window has ticks.
    #[must_use]
    fn with_limit(&self, limit: Limit) -> Self;
    /// The algorithm and its configuration, as snapshots record it.
    fn kind(&self) -> WindowKind;
    /// At most how long after a hit at `t` a window holding only that hit is fresh (answers
    /// as an empty one): `W` for the exact log; for the rolling buckets their reach (the
    /// hit's bucket, the span and the tolerated lateness must pass). The automatic sweep's
    /// first look at a new key is due then, plus the lateness tolerance.
    fn fresh_after_hit_ticks(&self) -> u64 {
        self.limit().window_ticks()
    }
    /// A window in the sequential form holding `state`, converted as [`state`] describes
    /// (never admitting more than the state's own window would).
    fn sequential_from(&self, state: &WindowState) -> Self::Sequential;
    /// A window in the atomic form holding `state` (see [`Algorithm::sequential_from`]).
    fn atomic_from(&self, state: &WindowState) -> Self::Atomic;

    /// [`Algorithm::check_weight`] against the largest limit any key may have
    /// ([`crate::MAX_REQUESTS`]) instead of this window's: a limiter whose keys may have
    /// limits of their own checks this, and a weight above a key's limit is then simply
    /// never admitted.
    ///
    /// # Errors
    /// A [`WeightError`]; [`WeightError::ExceedsLimit`] only above `MAX_REQUESTS`.
    fn check_weight_shape(&self, n: u64) -> Result<(), WeightError> {
        match self.check_weight(n) {
            Err(WeightError::ExceedsLimit { .. }) if n <= crate::limit::MAX_REQUESTS => Ok(()),
            other => other,
        }
    }
}

/// A window algorithm and the configuration that shapes its state, as snapshots record it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowKind {
    /// The exact sliding log.
    ExactLog,
    /// The rolling buckets.
    RollingBuckets {
        /// `B`, the effective buckets over the window.
        buckets: u64,
        /// `L`, the lateness in buckets.
        lateness_buckets: u64,
    },
}

/// One key's window under a lock. Weights reaching it have passed [`Algorithm::check_weight`].
pub trait SequentialWindow: Send + Sync + 'static {
    /// Records `n` hits at `now` unconditionally.
    fn hit_n(&mut self, now: u64, n: u64);
    /// Records `n` hits at `now` if the window has room for all of them.
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool;
    /// Whether `n` more hits at `now` would be admitted. Changes nothing.
    fn allowed_n(&self, now: u64, n: u64) -> bool;
    /// What the window holds for a caller at `now`, with the wait for one more hit.
    /// Changes nothing.
    fn status(&self, now: u64) -> Status {
        self.status_n(now, 1)
    }
    /// What the window holds for a caller at `now`, with the wait until `n` more hits fit
    /// (see [`Status::retry_after_ticks`]). `n` is at most the window's `max_requests`
    /// (the keyed limiters answer a heavier weight with an error before asking). Changes
    /// nothing.
    fn status_n(&self, now: u64, n: u64) -> Status;
    /// [`SequentialWindow::status_n`] of every window of the limit, narrowest first (see
    /// [`WindowStatuses`]). Changes nothing.
    fn window_statuses(&self, now: u64, n: u64) -> WindowStatuses {
        WindowStatuses::single(self.status_n(now, n))
    }
    /// The limit this window enforces.
    fn limit(&self) -> Limit;
    /// The window's content (see [`WindowState`]). Changes nothing.
    fn export(&self) -> WindowState;
    /// The first tick from which this state answers every call as an empty window would.
    fn idle_from(&self) -> u64;
    /// Whether [`idle_from`](Self::idle_from) is at most `horizon`: the sweep's question,
    /// which a window may answer without reading all of its state (most keys a sweep looks
    /// at are live, and one recent hit settles it).
    fn is_idle_by(&self, horizon: u64) -> bool {
        self.idle_from() <= horizon
    }
}

/// One key's window shared between threads, decided by CAS. Same contract as
/// [`SequentialWindow`], through `&self`, plus the seal that lets a sweeper remove it.
///
/// Every operation answers `Err(Retired)` when it meets a window that a sweeper has sealed
/// (or is sealing): it decided nothing and recorded nothing, and the caller looks the key up
/// again. A window nobody seals never answers it.
pub trait AtomicWindow: Send + Sync + 'static {
    /// What sealing this window for growth overwrote and [`Self::grown`] needs back (see
    /// [`Self::seal_for_growth`]): an exact log's inline slot ([`InlineSlot`]), nothing for
    /// rolling buckets (`()`, the seal is one bit of a word that keeps its value).
    type Outgrown: Copy + Send + Sync + std::fmt::Debug;

    /// Records `n` hits at `now` unconditionally.
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed; nothing was recorded.
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired>;
    /// Atomically records `n` hits at `now` if the window has room for all of them.
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed; nothing was decided or recorded.
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired>;
    /// Whether `n` more hits at `now` would be admitted. Changes nothing.
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed.
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired>;
    /// What the window holds for a caller at `now`, with the wait for one more hit.
    /// Changes nothing.
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed.
    fn status(&self, now: u64) -> Result<Status, Retired> {
        self.status_n(now, 1)
    }
    /// What the window holds for a caller at `now`, with the wait until `n` more hits fit;
    /// `n` is at most the window's `max_requests`. Changes nothing.
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed.
    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired>;
    /// [`AtomicWindow::status_n`] of every window of the limit, narrowest first. Changes
    /// nothing.
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed.
    fn window_statuses(&self, now: u64, n: u64) -> Result<WindowStatuses, Retired> {
        self.status_n(now, n).map(WindowStatuses::single)
    }
    /// The limit this window enforces.
    fn limit(&self) -> Limit;
    /// The window's content at one moment between the call and its return, while other
    /// threads may decide (no torn state: a double collect of every word, falling back to a
    /// seal that briefly holds writers off). Changes no answer.
    ///
    /// # Errors
    /// [`Retired`]: a sweeper or a replacement sealed the window; look the key up again.
    fn export(&self) -> Result<WindowState, Retired>;
    /// Seals the window for good, whatever it holds, and returns its content: the first step
    /// of replacing it by a window built from that content (a limit change, a restore). From
    /// the seal on no operation records anything in it. `None`: someone else holds a seal
    /// (a sweeper, another replacement); nothing was changed.
    fn seal_for_swap(&self) -> Option<WindowState>;
    /// Seals the window for removal if it is fresh (equal to an empty window) for every call
    /// at or after `horizon`, and returns the tick from which it is fresh. From a successful
    /// seal on, no operation records anything in it again. `None`: not fresh, sealed by
    /// someone else, or a write raced the seal (then the window is left as it was).
    fn try_seal(&self, horizon: u64) -> Option<u64>;
    /// The tick from which the window is fresh, as one look at its words says, without a
    /// seal: when the automatic sweep should look at the key again (a later write only moves
    /// it later, and the sweep's look then finds the key live and asks again).
    fn fresh_from_hint(&self) -> u64;
    /// Whether an operation that answered `Err(Retired)` did so because the window keeps its
    /// state in a form too small for the write (an exact log's inline ring, see
    /// `window/ring/atomic/inline.rs`), not because it was sealed: the keyed limiter then
    /// replaces the entry by its full form ([`Self::seal_for_growth`], [`Self::grown`]).
    /// False for windows that are always full.
    fn needs_slots(&self) -> bool {
        false
    }
    /// Seals the window for good so that it can be replaced by its full form, and returns
    /// what [`Self::grown`] needs to build that form; `None` if it is sealed, or not in a
    /// small form (see [`Self::needs_slots`]).
    fn seal_for_growth(&self) -> Option<Self::Outgrown> {
        None
    }
    /// The full form of this window, sealed by [`Self::seal_for_growth`], holding exactly
    /// what it held (so it answers every later call as this window would have); `None` for a
    /// window that has no small form.
    fn grown(&self, outgrown: Self::Outgrown) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = outgrown;
        None
    }
}

/// What an exact log's inline ring held when it was sealed for growth: its one slot's value
/// and its probe hint (see `window/ring/atomic/inline.rs`), which the seal overwrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineSlot {
    pub(crate) first: u64,
    pub(crate) cursor: u32,
}

/// An operation met a window sealed for removal: it decided and recorded nothing; look the
/// key up again (the sweeper is about to unlink the entry, or to unseal it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retired;

/// Unwraps an algorithm's answer on sequential cells, which nothing ever seals (only the
/// lock-free limiter's sweeper seals, and only atomic windows).
#[inline]
pub(crate) fn never_sealed<T>(result: Result<T, Retired>) -> T {
    match result {
        Ok(value) => value,
        Err(Retired) => unreachable!("a sequential window is never sealed"),
    }
}

/// What a key's window holds for a caller at some tick, without consuming anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// Live hits in the window (for the exact log: recorded hits `s` with `s + W > now`, of
    /// which it keeps the newest `max_requests`, so never more than that; for the
    /// rolling buckets: the weight of the buckets retained for a caller at `now`).
    pub count: u64,
    /// How many more hits would be admitted now.
    pub remaining: u64,
    /// Ticks until the asked weight (1 for `status`, `n` for `status_n`) would be admitted
    /// if no other call came: 0 when it fits now; for the exact log (weight 1 only),
    /// otherwise the oldest live hit + W - now; for the rolling buckets, the first tick at
    /// which enough of the oldest retained buckets have expired (and the caller is no
    /// longer late), minus now, read from the bucket counters.
    pub retry_after_ticks: u64,
}

/// The status of every window of a key's limit, narrowest first (one for a single-window
/// limit), in the order of [`Limit::windows`]: what a caller that reports each window (an
/// HTTP layer sending one `RateLimit` item per window) reads. [`WindowStatuses::tightest`]
/// is what [`RateLimiter::status`](crate::RateLimiter::status) answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowStatuses {
    len: usize,
    statuses: [Status; crate::limit::MAX_WINDOWS],
}

impl WindowStatuses {
    /// The status of a single-window limit.
    #[must_use]
    pub const fn single(status: Status) -> Self {
        Self {
            len: 1,
            statuses: [status; crate::limit::MAX_WINDOWS],
        }
    }

    /// Statuses of the windows in order, narrowest first; at most
    /// [`MAX_WINDOWS`](crate::MAX_WINDOWS) are kept.
    ///
    /// # Panics
    /// If `statuses` is empty: every limit has a window.
    #[must_use]
    pub fn from_windows(statuses: impl IntoIterator<Item = Status>) -> Self {
        let mut all = Self::single(Status {
            count: 0,
            remaining: 0,
            retry_after_ticks: 0,
        });
        all.len = 0;
        for status in statuses.into_iter().take(crate::limit::MAX_WINDOWS) {
            all.statuses[all.len] = status;
            all.len += 1;
        }
        assert!(all.len > 0, "a limit has at least one window");
        all
    }

    /// How many windows.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Never: every limit has a window (for the `len` convention).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each window's status, narrowest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Status> + '_ {
        self.statuses[..self.len].iter().copied()
    }

    /// The index of the window that binds: the least remaining, then the longest wait, then
    /// the narrowest.
    #[must_use]
    pub fn binding(&self) -> usize {
        let statuses = &self.statuses[..self.len];
        (0..statuses.len())
            .min_by_key(|&index| {
                let status = statuses[index];
                (
                    status.remaining,
                    std::cmp::Reverse(status.retry_after_ticks),
                )
            })
            .unwrap_or(0)
    }

    /// The window that binds ([`WindowStatuses::binding`]) gives `count` and `remaining`;
    /// `retry_after_ticks` is the longest wait of all windows, the first tick at which the
    /// asked weight fits every one of them (each window's room only grows while no call
    /// comes).
    #[must_use]
    pub fn tightest(&self) -> Status {
        let statuses = &self.statuses[..self.len];
        let binding = statuses[self.binding()];
        let wait = statuses
            .iter()
            .map(|status| status.retry_after_ticks)
            .max()
            .unwrap_or(0);
        Status {
            retry_after_ticks: wait,
            ..binding
        }
    }

    /// Every status mapped by `f` (the keyed limiters clamp each one by the key's watermark).
    #[must_use]
    pub fn map(mut self, f: impl Fn(Status) -> Status) -> Self {
        for status in &mut self.statuses[..self.len] {
            *status = f(*status);
        }
        self
    }
}

/// Why a weighted request was rejected before it reached the window.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightError {
    /// A weight of zero asks nothing; it is almost certainly a caller's bug.
    Zero,
    /// The weight is above `max_requests`, so no window could ever admit it.
    ExceedsLimit {
        /// The weight asked for.
        n: u64,
        /// The limit's `max_requests`.
        max_requests: u64,
    },
    /// This window admits only single hits: the exact log cannot take `n > 1` slots in one
    /// atomic step, and taking them one by one would not be all-or-nothing.
    Unsupported {
        /// The weight asked for.
        n: u64,
    },
}

impl fmt::Display for WeightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Zero => f.write_str("a request must weigh at least 1"),
            Self::ExceedsLimit { n, max_requests } => {
                write!(f, "weight {n} is above the limit's max_requests {max_requests}")
            }
            Self::Unsupported { n } => write!(
                f,
                "weight {n} is not supported by the exact log (single hits only); use the bucketed window"
            ),
        }
    }
}

impl std::error::Error for WeightError {}

/// Whether a hit at `s` is in the window of `now`: `s + W > now`, with a saturating add so
/// that nothing wraps near `u64::MAX` (a window `(now - W, now]` reaching below zero holds
/// tick 0).
#[inline]
#[must_use]
pub(crate) const fn is_live(s: u64, window_ticks: u64, now: u64) -> bool {
    s.saturating_add(window_ticks) > now
}

#[cfg(test)]
pub(crate) mod random_traces;

#[cfg(test)]
mod tests {
    use super::is_live;

    #[test]
    fn window_is_half_open_and_never_wraps() {
        assert!(is_live(0, 10, 5), "window (-5, 5] holds tick 0");
        assert!(is_live(0, 10, 9));
        assert!(!is_live(0, 10, 10), "window (0, 10] excludes tick 0");
        assert!(is_live(u64::MAX - 3, 10, u64::MAX - 1));
        assert!(is_live(7, u64::MAX, u64::MAX - 1));
        assert!(is_live(12, 10, 4), "a future hit is live");
    }
}
