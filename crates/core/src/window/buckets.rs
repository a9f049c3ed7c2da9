//! Rolling bucket counters with a running total: an approximate window in `O(B)` memory per key, with
//! weighted hits, one algorithm over two storages (plain integers under a lock, atomics
//! decided by CAS).
//!
//! # Geometry
//! The window of `W` ticks is cut into `B` buckets of `w = ceil(W / B)` ticks; epoch
//! `e(t) = t / w` names the bucket of tick `t`. When `B` does not divide `W`, `B` buckets of
//! `ceil(W / B)` ticks would cover more than needed, so the window keeps only
//! `ceil(W / w)` of them (`W = 10, B = 6`: width 2, 5 buckets); their span `B·w` is at least
//! `W` and less than `W + w`. [`RollingBuckets::buckets`] and
//! [`RollingBuckets::span_ticks`] report the effective numbers. A caller may be up to `L`
//! buckets late ([`RollingBuckets::lateness_buckets`], default 1); the window keeps
//! `NB = B + 1 + L` physical buckets, bucket `s` holding the epochs `≡ s (mod NB)`.
//!
//! For a limit of several windows ([`Limit::and`](crate::Limit::and)) each window `i` gets
//! rolling buckets of its own: the configured `B` clamped to its own `Wᵢ` (at most one bucket
//! per tick), cut as above (`wᵢ = ceil(Wᵢ / min(B, Wᵢ))`, `Bᵢ = ceil(Wᵢ / wᵢ)` kept), and the
//! same lateness, so `NBᵢ = Bᵢ + 1 + L`. The clamp starts from the `B` asked, not from the
//! count the widest window kept. Each window's bucket width, lateness in ticks (`L·wᵢ`) and
//! bounded false negatives (below) are its own: its refusal reach is
//! `Bᵢ·wᵢ + (L + 1)·wᵢ`, which is `Wᵢ + (L + 1)·wᵢ` where `min(B, Wᵢ)` divides `Wᵢ`.
//! [`RollingBuckets::windows`] reports each window's geometry. With `B = 6` over 3 per 6 ticks
//! and 5 per 10, the narrow window has 6 buckets of one tick (reach 8), the wide one 5 of two
//! (reach 14); a per-second window of 60 buckets counts in 17 ms steps while the hourly one
//! beside it counts in minutes.
//!
//! ```
//! use slidelimit::{Limit, LockFreeLimiter, RateLimiter, RollingBuckets};
//! // 100,000 tokens per 5 hours (ticks in seconds), 60 buckets of 5 minutes.
//! let limit = Limit::new(100_000, 18_000)?;
//! let limiter = LockFreeLimiter::<&str, RollingBuckets>::bucketed(limit, 60)?;
//! assert_eq!(limiter.check_and_hit_n(&"pk_test", 1_000, 60_000), Ok(true));
//! assert_eq!(limiter.check_and_hit_n(&"pk_test", 1_300, 50_000), Ok(false), "all or nothing");
//! assert_eq!(limiter.status(&"pk_test", 1_300).remaining, 40_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bit layouts
//! The head word:
//!
//! | bits   | field        | meaning                                                        |
//! |--------|--------------|----------------------------------------------------------------|
//! | 63..32 | `head_epoch` | the newest epoch the window has advanced to, modulo 2^32         |
//! | 31     | `SEALED`     | sealed for removal by a sweeper (lock-free form only)          |
//! | 30..0  | `total`      | weight of the retained buckets + reservations not yet recorded |
//!
//! Each bucket word:
//!
//! | bits   | field       | meaning                                          |
//! |--------|-------------|--------------------------------------------------|
//! | 63..32 | `tag_epoch` | the epoch whose weight the bucket holds, mod 2^32  |
//! | 31     | (zero)      | never set: a count is part of the total          |
//! | 30..0  | `count`     | that weight                                      |
//!
//! `total` never passes `max_requests` (≤ 2^24) through `check_and_hit`, and `hit` saturates
//! it at [`MAX_TOTAL_WEIGHT`] = 2^31 − 1; a count is part of the total, so neither low field
//! ever carries into an epoch. The truncated epochs are read back with a full-width epoch
//! kept beside them (see *Epochs beyond 32 bits*).
//!
//! # Algorithm
//! One word packs (head epoch | running total); the total is the weight of every retained
//! bucket plus reservations not yet recorded. A caller at epoch `e`:
//! 1. if `e` is past the head, advances the head to `e` by a CAS on the word;
//! 2. is refused if `e + L < head`: it is too late to be checked against every window that
//!    holds its tick;
//! 3. makes sure the buckets are *recycled* for the head: the bucket of every epoch the head
//!    passed (at most `NB` of them) is reset to that epoch by one CAS on its packed
//!    (tag | count) word if its tag is older, and the CAS winner subtracts the count it
//!    cleared from the total. A full-width `cleaned` epoch records that recycling for a head
//!    is complete, so callers help finish it instead of deciding on a half-recycled total;
//! 4. is refused if `total + n > max_requests`, else reserves `n` by a CAS `total → total + n`
//!    on the word (the same CAS re-checks the head, so nothing recycled in between);
//! 5. only then records `n` in its bucket: a `fetch_add` if the bucket's tag is its epoch or
//!    newer, else a CAS from the stale (tag | count) to (`e` | `n`) whose winner subtracts the
//!    stale count.
//!
//! `hit` is the same flow without the refusals of steps 2 and 4: a hit `NB` or more buckets
//! older than the head is dropped (no call that can still be admitted would count it), and
//! the total saturates at [`MAX_TOTAL_WEIGHT`] (weight beyond it is forgotten). `allowed` and
//! `status` compute what the same steps would see, from loads alone.
//!
//! Cost: in the steady state a decision is three loads and one CAS on the head word's cache
//! line, then two loads and one `fetch_add` on a bucket; a refusal is loads only. Each epoch
//! the head passes costs one bucket CAS once, whoever does it. Memory: `8·NB` bytes of
//! buckets and one cache line of header per key, whatever the limit.
//!
//! # Guarantees
//! - **Never over-admits**, in any interleaving and timestamp order: the weight admitted in
//!   any `W` ticks is at most `max_requests`. A bucket is reset only after the head moved
//!   `NB` epochs past it, and an admitted caller is at most `L` behind the head, so a bucket
//!   reset before a reservation is at least `B + 1` epochs (more than `W` ticks) older than the
//!   reserving caller. (Forced `hit` weight above [`MAX_TOTAL_WEIGHT`] retained at once is the
//!   one exception: it is forgotten.)
//! - **Bounded false negatives**: a refusal of `n` at `t` means the weight recorded at ticks
//!   in `(t − span − (L + 1)·w, ∞)` is at least `max_requests − n + 1`, or the caller is more
//!   than `L` buckets late. With `B` dividing `W`, `span = W`. The bound is tight: weight
//!   recorded at the first tick of a bucket refuses through the tick before
//!   `span + (L + 1)·w` later, and is gone at it. For a limit of several windows, a refusal
//!   means this of one window `i`, with its own `Nᵢ`, span and `wᵢ`. This is exact for a
//!   single-threaded trace; under concurrency a refusal may also count weight whose bucket
//!   another thread has just reset but not yet subtracted (a transient false negative).
//! - **Exactly-once recycling**: the tag and the count of a bucket change together, so a
//!   stale bucket is reset by exactly one CAS and no concurrent increment is lost; weight is
//!   only ever credited to its own epoch or a newer one (expiring later, never earlier).
//! - Answers are identical for the sequential and the atomic form on any single-threaded
//!   trace: they run this module's code.
//!
//! # Epochs beyond 32 bits
//! The words keep epochs modulo 2^32 and `cleaned` keeps the full one, so no key needs to be
//! touched or swept on any schedule. Every epoch in the words lies in
//! `[cleaned − (NB − 1), cleaned − (NB − 1) + 2^32)`, which decodes it exactly: the head
//! moves at most `2^32 − NB + 1` epochs past `cleaned` per step. A jump further than that (a
//! key idle for ~2^32 buckets, or a timestamp far in the future) first *shifts* `cleaned` by
//! a multiple of 2^32, which leaves every word's bits as they are and only re-reads the old
//! state 2^32·k epochs later (its weight then expires later, never earlier), then takes at
//! most two steps of recycling. A jump of any length costs at most three rounds of `NB`
//! bucket CASes. The one residual assumption: no single call stalls while other threads move
//! its key by 2^32 epochs and bring one of its bucket words back to the same 64 bits.
//!
//! # Atomic orderings
//! The guarantee users get: an admission is decided by one successful CAS on the head word
//! (its linearization point), a refusal by the last load of that word. Every handshake is an
//! RMW on one word: loads are `Acquire`, CASes and `fetch_add`s `AcqRel` (the record's Release
//! and the recycle's Acquire put a recycler's subtraction after the reservations it
//! accounts for), and `cleaned` is raised with `Release` after the recycles it vouches for
//! and loaded `Acquire` before the head word, then once more after it to confirm the pair.
//! No `SeqCst` anywhere.

mod algorithm;
mod by_use;
mod inline;
mod packed;
mod state;
mod storage;

use std::fmt;

pub use packed::MAX_TOTAL_WEIGHT;
pub use storage::{AtomicBuckets, SequentialBuckets};

use crate::limit::Limit;
use crate::window::layers::Layers;
use crate::window::state::WindowState;
use crate::window::{Algorithm, WeightError, WindowKind, MAX_TICK};

/// The most physical buckets (`B + 1 + L`) one window may have: 65,536, 512 KiB per key.
pub const MAX_PHYSICAL_BUCKETS: u64 = 1 << 16;

/// Why a [`RollingBuckets`] configuration was refused.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketError {
    /// Zero buckets cannot hold any weight.
    ZeroBuckets,
    /// More buckets than the window has ticks: a bucket would be narrower than one tick.
    NarrowerThanATick {
        /// The buckets asked for.
        buckets: u64,
        /// The limit's window.
        window_ticks: u64,
    },
    /// `B + 1 + L` physical buckets exceed [`MAX_PHYSICAL_BUCKETS`] (with the `B` asked,
    /// which a window of `B` ticks or more keeps in full).
    TooManyBuckets {
        /// The physical buckets the configuration needs: `B + 1 + L`.
        physical: u64,
        /// The most allowed.
        max: u64,
    },
}

impl fmt::Display for BucketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroBuckets => f.write_str("a rolling window needs at least one bucket"),
            Self::NarrowerThanATick {
                buckets,
                window_ticks,
            } => write!(
                f,
                "{buckets} buckets over a window of {window_ticks} ticks would be narrower than a tick"
            ),
            Self::TooManyBuckets { physical, max } => write!(
                f,
                "{physical} physical buckets (buckets + 1 + lateness) exceed the maximum {max}"
            ),
        }
    }
}

impl std::error::Error for BucketError {}

/// The rolling-bucket window: `B` buckets and a running total per key, `O(B)` memory whatever
/// the limit, weighted hits, never over-admitting (see the [module docs](self)). Every
/// limiter takes it: `LockFreeLimiter::<K, RollingBuckets>::bucketed(limit, buckets)`, and the
/// same for the three lock variants.
///
/// ```
/// use slidelimit::{Limit, RollingBuckets};
/// use slidelimit::raw::{SequentialWindow, Algorithm};
/// // 100 tokens per 60 ticks, in 6 buckets of 10 ticks.
/// let window = RollingBuckets::new(Limit::new(100, 60)?, 6)?;
/// assert_eq!((window.bucket_ticks(), window.physical_buckets()), (10, 8));
/// let mut state = window.new_sequential();
/// assert!(state.check_and_hit_n(5, 60));
/// assert!(!state.check_and_hit_n(30, 41), "60 + 41 > 100");
/// assert!(state.check_and_hit_n(30, 40));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollingBuckets {
    limit: Limit,
    /// `B` as configured, before it is clamped to a window: every window of the limit, and
    /// of any limit [`Algorithm::with_limit`] moves to, gets it clamped to its own `W`. The
    /// effective count is derived from the width ([`Self::buckets`]).
    asked_buckets: u64,
    bucket_ticks: u64,
    lateness: u64,
}

impl RollingBuckets {
    /// `buckets` buckets over `limit`'s window, lateness 1 bucket.
    ///
    /// The bucket width is `ceil(W / buckets)`; if `buckets` does not divide `W`, only the
    /// `ceil(W / width)` buckets needed to cover `W` are kept (see [`Self::buckets`]). Each
    /// narrower window of a layered limit, and any limit set later, gets `buckets` clamped to
    /// its own window the same way (see [`Self::windows`]).
    ///
    /// # Errors
    /// [`BucketError::ZeroBuckets`], [`BucketError::NarrowerThanATick`] if
    /// `buckets > window_ticks` (the widest window's), [`BucketError::TooManyBuckets`] if
    /// `buckets + 2` exceeds [`MAX_PHYSICAL_BUCKETS`] (even where the window keeps fewer: a
    /// window of `buckets` ticks would keep them all).
    pub const fn new(limit: Limit, buckets: u64) -> Result<Self, BucketError> {
        let window_ticks = limit.window_ticks();
        if buckets == 0 {
            return Err(BucketError::ZeroBuckets);
        }
        if buckets > window_ticks {
            return Err(BucketError::NarrowerThanATick {
                buckets,
                window_ticks,
            });
        }
        Self::clamped(limit, buckets, 0).lateness_buckets(1)
    }

    /// `asked_buckets` (at least 1) clamped to `limit`'s window, and their width. Checks
    /// nothing: `asked_buckets + 1 + lateness` was checked against [`MAX_PHYSICAL_BUCKETS`]
    /// when configured, and clamping only lowers it.
    const fn clamped(limit: Limit, asked_buckets: u64, lateness: u64) -> Self {
        let window_ticks = limit.window_ticks();
        let buckets = if asked_buckets < window_ticks {
            asked_buckets
        } else {
            window_ticks
        };
        Self {
            limit,
            asked_buckets,
            bucket_ticks: window_ticks.div_ceil(buckets),
            lateness,
        }
    }

    /// How many buckets late a caller may be and still be checked (`L`, default 1). A caller
    /// more than `L` buckets behind the newest bucket the key has seen is refused; each unit
    /// of `L` costs one more bucket of memory and widens the false-negative bound by one
    /// bucket. `L = 0` gives the tightest bound, `W + w`, but refuses every caller whose tick
    /// falls in an older bucket than one already seen.
    ///
    /// # Errors
    /// [`BucketError::TooManyBuckets`] if `B + 1 + L`, with the `B` asked of [`Self::new`],
    /// exceeds [`MAX_PHYSICAL_BUCKETS`].
    pub const fn lateness_buckets(self, lateness: u64) -> Result<Self, BucketError> {
        // The B asked, not the effective count: a window it is clamped to (a narrower window
        // of a layered limit, or a limit set later) may keep all of them. B <=
        // MAX_PHYSICAL_BUCKETS is not known yet (B <= W only), so add with care.
        let physical = self
            .asked_buckets
            .saturating_add(1)
            .saturating_add(lateness);
        if physical > MAX_PHYSICAL_BUCKETS {
            return Err(BucketError::TooManyBuckets {
                physical,
                max: MAX_PHYSICAL_BUCKETS,
            });
        }
        Ok(Self { lateness, ..self })
    }

    /// The effective number of buckets `B` covering the window (see [`Self::new`]); for a
    /// limit of several windows, the widest window's (see [`Self::windows`]).
    #[must_use]
    pub const fn buckets(&self) -> u64 {
        self.limit.window_ticks().div_ceil(self.bucket_ticks)
    }

    /// Each window's own rolling buckets, narrowest first (the one window of a single-window
    /// limit): the configured `B` clamped to that window's `W`, the same lateness. Their
    /// [`Self::bucket_ticks`], [`Self::buckets`] and [`Self::refusal_reach_ticks`] are that
    /// window's.
    ///
    /// ```
    /// use slidelimit::{Limit, RollingBuckets};
    /// // 3 per 6 ticks and 5 per 10, 6 buckets: one tick wide over 6 ticks, while over
    /// // 10 ticks 2-tick buckets keep 5 of them.
    /// let limit = Limit::new(3, 6)?.and(Limit::new(5, 10)?)?;
    /// let window = RollingBuckets::new(limit, 6)?;
    /// let geometry: Vec<_> = window
    ///     .windows()
    ///     .map(|w| (w.bucket_ticks(), w.buckets(), w.refusal_reach_ticks()))
    ///     .collect();
    /// assert_eq!(geometry, [(1, 6, 8), (2, 5, 14)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn windows(&self) -> impl ExactSizeIterator<Item = Self> + '_ {
        self.limit.windows().map(|window| self.with_limit(window))
    }

    /// The bucket width `w`, in ticks.
    #[must_use]
    pub const fn bucket_ticks(&self) -> u64 {
        self.bucket_ticks
    }

    /// `B·w`: the ticks the buckets cover, at least `W` and less than `W + w` (saturating);
    /// for a limit of several windows, the widest window's.
    #[must_use]
    pub const fn span_ticks(&self) -> u64 {
        self.buckets().saturating_mul(self.bucket_ticks)
    }

    /// The lateness `L`, in buckets.
    #[must_use]
    pub const fn tolerated_lateness(&self) -> u64 {
        self.lateness
    }

    /// `NB = B + 1 + L`, the buckets each key keeps (in the widest window, for a limit of
    /// several windows).
    #[must_use]
    pub const fn physical_buckets(&self) -> u64 {
        self.buckets() + 1 + self.lateness
    }

    /// The reach of a refusal: a refused caller at `t` has at least `max_requests − n + 1`
    /// weight recorded in `(t − this, ∞)`, unless it was more than `L` buckets late.
    /// `span + (L + 1)·w`, saturating. For a limit of several windows this is the widest
    /// window's; each window has its own ([`Self::windows`]), and a refusal means one window
    /// `i` had `Nᵢ − n + 1` within its reach, or the caller was more than `L` of its buckets
    /// late.
    #[must_use]
    pub const fn refusal_reach_ticks(&self) -> u64 {
        self.span_ticks()
            .saturating_add((self.lateness + 1).saturating_mul(self.bucket_ticks))
    }

    /// What these buckets may have dropped once their newest tick is `newest_tick`.
    pub(crate) fn dropped_by(&self, newest_tick: u64) -> Option<crate::window::state::Forgotten> {
        let geometry = self.geometry();
        state::dropped_before(geometry, geometry.epoch(newest_tick))
    }

    /// The geometry of `window`, one of this limit's windows (each built window's): this
    /// limit's own when it has one window (a key's creation then clamps nothing again).
    fn window_geometry(&self, window: Limit) -> Geometry {
        if self.limit.is_layered() {
            self.with_limit(window).geometry()
        } else {
            self.geometry()
        }
    }

    const fn geometry(&self) -> Geometry {
        Geometry {
            window_ticks: self.limit.window_ticks(),
            bucket_ticks: self.bucket_ticks,
            // At most MAX_PHYSICAL_BUCKETS (65,536): it fits.
            physical: self.physical_buckets() as u32,
            lateness: self.lateness,
            max_requests: self.limit.max_requests_u32(),
        }
    }
}

impl Algorithm for RollingBuckets {
    type Sequential = Layers<SequentialBuckets>;
    type Atomic = Layers<AtomicBuckets>;

    fn algorithm(&self) -> &'static str {
        "buckets"
    }

    fn fresh_after_hit_ticks(&self) -> u64 {
        self.refusal_reach_ticks()
    }

    fn limit(&self) -> Limit {
        self.limit
    }

    fn check_weight(&self, n: u64) -> Result<(), WeightError> {
        // The narrowest window's count: no heavier request can ever fit all of them.
        let max_requests = self.limit.max_weight();
        match n {
            0 => Err(WeightError::Zero),
            n if n > max_requests => Err(WeightError::ExceedsLimit { n, max_requests }),
            _ => Ok(()),
        }
    }

    fn new_sequential(&self) -> Layers<SequentialBuckets> {
        Layers::build(self.limit, |window| {
            SequentialBuckets::new(self.with_limit(window))
        })
    }

    fn new_atomic(&self) -> Layers<AtomicBuckets> {
        Layers::build(self.limit, |window| {
            AtomicBuckets::new(self.with_limit(window))
        })
    }

    fn new_sequential_at(&self, now: u64) -> Layers<SequentialBuckets> {
        Layers::build(self.limit, |window| {
            SequentialBuckets::empty_at(self.window_geometry(window), now)
        })
    }

    /// A single window starts inline (`window/buckets/inline.rs`); the windows of a layered
    /// limit are built with their arrays.
    fn new_atomic_at(&self, now: u64) -> Layers<AtomicBuckets> {
        let layered = self.limit.is_layered();
        Layers::build(self.limit, |window| {
            let geometry = self.window_geometry(window);
            if !layered {
                return AtomicBuckets::inline_at(geometry, now);
            }
            let (word, cleaned, buckets) = state::empty_words_at(geometry, now);
            AtomicBuckets::from_word_iter(geometry, word, cleaned, buckets)
        })
    }

    fn with_limit(&self, limit: Limit) -> Self {
        // The B asked, clamped to this limit's window: not the effective count of the window
        // this one was built for, which a width that does not divide it may have lowered
        // (10 ticks in 6 buckets keep 5 of 2 ticks; 6 ticks still get 6 of one).
        Self::clamped(limit, self.asked_buckets, self.lateness)
    }

    fn kind(&self) -> WindowKind {
        WindowKind::RollingBuckets {
            buckets: self.buckets(),
            lateness_buckets: self.lateness,
        }
    }

    /// Every window of a layered limit is built from the one state (the widest window's),
    /// each rebucketed to its own geometry.
    fn sequential_from(&self, state: &WindowState) -> Layers<SequentialBuckets> {
        Layers::build(self.limit, |window| {
            let geometry = self.window_geometry(window);
            let state = state.for_target(window.window_ticks(), window.max_requests());
            let (word, cleaned, buckets) = state::words_from_state(geometry, &state);
            SequentialBuckets::from_words(geometry, word, cleaned, buckets)
        })
    }

    fn atomic_from(&self, state: &WindowState) -> Layers<AtomicBuckets> {
        Layers::build(self.limit, |window| {
            let geometry = self.window_geometry(window);
            let state = state.for_target(window.window_ticks(), window.max_requests());
            let (word, cleaned, buckets) = state::words_from_state(geometry, &state);
            AtomicBuckets::from_words(geometry, word, cleaned, &buckets)
        })
    }
}

/// What the algorithm needs of the configuration, copied into each key's state.
///
/// The bucket count and the limit's requests in 32 bits (at most 65,536 and 2^24): 32 bytes
/// instead of 40, so a per-key-lock entry of rolling buckets in papaya's node is a 128-byte
/// block, the largest glibc keeps on its fast lists (see `SequentialRing::capacity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    /// `W`, kept so that a key's state knows its limit.
    window_ticks: u64,
    bucket_ticks: u64,
    /// `L`.
    lateness: u64,
    /// `NB`; read through [`Self::physical`].
    physical: u32,
    max_requests: u32,
}

const _: () = assert!(MAX_PHYSICAL_BUCKETS <= u32::MAX as u64);

impl Geometry {
    /// `NB`, the physical bucket count.
    #[inline]
    const fn physical(&self) -> u64 {
        self.physical as u64
    }

    /// The limit's requests.
    #[inline]
    const fn max_requests(&self) -> u64 {
        self.max_requests as u64
    }

    fn limit(&self) -> Limit {
        match Limit::new(self.max_requests(), self.window_ticks) {
            Ok(limit) => limit,
            Err(error) => unreachable!("{error}: a geometry is built from a valid limit"),
        }
    }

    #[inline]
    fn epoch(&self, now: u64) -> u64 {
        now.min(MAX_TICK) / self.bucket_ticks
    }

    #[inline]
    const fn slot(&self, epoch: u64) -> usize {
        // physical <= MAX_PHYSICAL_BUCKETS, so the remainder fits any usize.
        (epoch % self.physical()) as usize
    }

    /// Whether weight of epoch `tag` is no longer retained once the head is at `head`.
    #[inline]
    const fn expired(&self, tag: u64, head: u64) -> bool {
        tag.saturating_add(self.physical()) <= head
    }

    #[inline]
    const fn too_late(&self, epoch: u64, head: u64) -> bool {
        epoch.saturating_add(self.lateness) < head
    }
}

#[cfg(test)]
mod tests;
