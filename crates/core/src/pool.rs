//! A pool of API keys: `K` keys, each usable `X` times per
//! cooldown `T`; [`KeyPool::get_next_key`] names a key that may be used now, or none.
//!
//! ```
//! use slidelimit::pool::{KeyPool, PoolMode};
//!
//! // Each key 500 times per 10 minutes (ticks in ms). Relaxation AB: a refusal only
//! // when fewer than 50 uses are truly free and every held use is under 11 minutes old.
//! let mode = PoolMode::Both { threshold_ticks: 60_000, key_threshold: 50 };
//! let pool: KeyPool<&str> = KeyPool::new(["k1", "k2", "k3"], 500, 600_000, mode)?;
//! assert_eq!(pool.get_next_key(0), Some(&"k1"));
//! assert_eq!(pool.get_next_key(5), Some(&"k2"));
//! assert_eq!(pool.get_next_key(9), Some(&"k3"));
//! assert_eq!(pool.get_next_key(9), Some(&"k1"), "names cycle in the order given");
//! assert_eq!(pool.available(10), 1_500 - 4);
//! // At most 10 time-closed + 29 full buckets + the one opening are held at once.
//! assert_eq!(pool.geometry().bucket_bound(), 40);
//! # Ok::<(), slidelimit::PoolError>(())
//! ```
//!
//! # The algorithm
//! The pool treats its `L = K·X` uses as anonymous and numbers them `0, 1, 2, …` in the order
//! it hands them out; use `s` gets name `s mod K`. Uses are grouped in **buckets**:
//! a bucket opens with a use, takes more while it holds fewer than `k` uses, has not cooled
//! down, and, with a time threshold `τ` (at most `T`), while `now < opened_at + τ`; it remembers its first use's number, its opening
//! tick and its cooldown end (newest use + `T`). A bucket **cools down** at its newest use + `T` and is then released,
//! oldest first. A call:
//! 1. is refused as **late** if its `now` is below the release watermark, the latest cooldown
//!    end of a bucket released so far (by a call with a later `now`);
//! 2. if all `L` uses are held, releases the oldest bucket if it has cooled down by `now`,
//!    and is refused ([`Refusal::Exhausted`]) otherwise (but a bad clock's bucket in front
//!    is first moved to the back: see "A bad clock" below); if no bucket takes the use and the
//!    ring already holds as many buckets as the bound (cooled ones are released lazily),
//!    releases the oldest bucket if it has cooled down by `now`, and otherwise joins the
//!    newest bucket past its thresholds (only out-of-order `now`s get here: see below);
//! 3. joins the newest bucket if it takes the use, or opens the next one.
//!
//! `Exact` is the same algorithm with `k = 1` and no `τ` (one bucket per use, `L + 1` slots);
//! `TimeBound` has `k = L`, `CountBound` no `τ`. Memory is `64` bytes per ring slot (three
//! 64-bit words for steady use, two 128-bit ones for a bad clock's buckets: see
//! `pool/atomic.rs`) over [`PoolGeometry::slots`] (the bound plus one, and
//! [`FAR_FUTURE_HEADROOM`] where buckets take several uses; the lock-free ledger rounds the
//! ring up to a power of two and
//! spreads consecutive slots three apart, so that two threads opening consecutive buckets
//! never write one cache line), whatever the traffic.
//!
//! # Contention
//! With one use per bucket (`Exact`), every use releases a bucket and opens one, so calls on
//! two cores used to pass three cache lines back and forth per use (the control word, the
//! newest slot and its neighbour) and both cores retried their CAS together: on the 2-core
//! development VM the exact pool was bimodal, about 45 ns per call at two threads in some
//! periods and 240–320 ns in others (when line transfers between its two vCPUs were slow),
//! where the mutex pool took 52–119. A call now reads the held uses' numbers from the oldest
//! bucket instead of the newest (a line nobody is writing), publishes the release watermark
//! last before its CAS, and backs off across calls (`Backoff`: a thread that keeps losing
//! waits longer, so the winner runs several calls on lines it holds): 17–27 ns in the fast
//! periods and 36–45 ns in the slow ones, side by side in 15 interleaved rounds. The
//! bad-clock handling (below) added 2.5 ns per call on one thread, 3.6 with a time
//! threshold (`results/pool-bad-clock.md`); a steady-use call still touches only 64-bit
//! words.
//!
//! # Guarantees
//! - **Never a false positive**, for every interleaving and every order of `now`: no name is
//!   handed out more than `uses_per_key` times in any window `(x - T, x]` of the `now` values
//!   passed in.
//! - With non-decreasing `now`: `Exact` answers exactly like a sorted log of every use;
//!   `TimeBound` refuses only when every held use was made within `T + τ` (relaxation A),
//!   `CountBound` only when fewer than `k` uses are truly free (B), `Both` only when both hold
//!   (AB). No more than [`bucket_bound`] buckets are ever held, so step 2 never joins a
//!   bucket past its thresholds.
//! - Under concurrency, calls are linearised by their CAS. A call whose `now` lags behind a
//!   release is refused as [`Refusal::Late`] (like a late caller of the keyed limiters); a
//!   thread that lost a race to open or join a bucket may still have raised that bucket's
//!   opening or newest-use tick to its own `now` (never another bucket's), so the relaxations
//!   stretch by how far apart racing `now`s are, never the other way.
//! - Refusal reasons mean what they say, in any order and under any contention: a call is
//!   refused only as [`Refusal::Exhausted`] (every use is held by a bucket that has not
//!   cooled down by its `now`, as its own decision read the ledger) or [`Refusal::Late`].
//!   Out-of-order `now`s may open more buckets than the bound; a call that then finds every
//!   slot held joins the newest bucket past its `k`/`τ` thresholds instead of being refused
//!   (a join is safe in any bucket: it holds the bucket's uses until this use's cooldown end
//!   too; the thresholds only shape false negatives).
//! - Out-of-order `now` never panics and never breaks safety. For `now`s far from the pool's
//!   time, see "A bad clock".
//!
//! # A bad clock
//! From the ticks alone, a `now` far in the future looks like the first call after a long
//! idle gap, so the pool takes it as given: a use at that tick, whose key stays held until
//! that tick plus `T` (as a far-future hit of the keyed limiters stays in its key). What it
//! must not do is hold anything else:
//! - **It is never in front.** A call that needs the oldest bucket's uses (every use held)
//!   and finds it holding a use more than `T` after its own `now`, or cooled down but more
//!   than `T` ahead of the bucket behind it or of the newest (a bad clock's; checked only
//!   when its cooldown end is `2T` past the release watermark), **moves it to the back**
//!   instead of releasing it or refusing: one CAS renumbers its `n` uses `L` later (the same
//!   key names: `L = K·X`, and with every use held the next number is the head's first plus
//!   `L`) with its own cooldown end, then the call goes on with the bucket behind it. At most
//!   [`MAX_REQUEUES_PER_CALL`] such moves per call. So a far-future use costs the use it took
//!   and nothing more, for as long as it lasts; a well-timed call never waits behind it.
//! - **It never moves the release watermark.** A far-future call releases only buckets that
//!   are in front, never a bad clock's (moved instead), so the watermark stays at most one
//!   cooldown past the well-timed uses: well-timed calls are refused as late for at most `T`
//!   after one (and then only where the pool's other uses were held anyway in the exact pool).
//! - **It takes no well-timed use with it.** A bucket holding a use more than `T` after a
//!   call's `now` takes no join from that call, and a far-future call finds every well-timed
//!   bucket cooled down by its tick, so it opens its own.
//! - **It never reaches a well-timed bucket.** A call whose use is more than `T` after the
//!   newest well-timed use the pool knows of (the release watermark's bucket, the oldest and
//!   the newest held where well-timed calls opened them; a bad clock's, or the first calls
//!   after an idle gap) opens its bucket *far-ahead*: its cooldown end goes to its slot's far
//!   word, never to the well-timed cooldown end that well-timed buckets are read by, and the
//!   control word says so until the next call flags the slot. A far-ahead call that loses the
//!   race to open a slot to a well-timed call so leaves nothing the well-timed bucket reads
//!   (losers' raises are otherwise kept, as a winner's cannot be told from theirs), and the
//!   well-timed cooldown end, which only grows across the slot's buckets, never holds a
//!   far-future tick.
//! - **It never outlives its bucket.** The far words (its cooldown end, and with a time
//!   threshold its opening tick) are 128 bits: a tick with the bucket it belongs to, and a
//!   write for a newer bucket replaces it, so the next far-ahead bucket opened in the slot
//!   starts from its own ticks; a bucket moved to the back is written anew in its new slot.
//!   (When every slot tick only grew, a far-future tick was inherited by every later bucket
//!   of its slot.)
//!
//! Relaxed pools keep [`FAR_FUTURE_HEADROOM`] ring slots beyond the bound for such buckets.
//! A `now` far in the past is refused as late once a call with a later `now` has released a
//! bucket that cooled down after it;
//! callers whose ticks come from a clock they cannot trust use [`KeyPool::take_stamped`],
//! which also caps a stamp at their own clock and refuses one a cooldown behind it.
//!
//! Safe in any order of `now`, moves included: number the uses of one key `j + K·i` and split
//! them by `i mod X`. Within one class, consecutive uses are `L` numbers apart, and the
//! later was handed out only after the bucket holding the earlier one (or, if that bucket was
//! moved, the copy that kept its cooldown end and now holds the number in between) was
//! released by a call whose `now` had reached that cooldown end: at least `T` apart. So each
//! of the `X` classes has at most one use in any window of length `T`.
//!
//! # Why a fixed cyclic order of names is safe
//! A fixed order of names is plainly enough when time only moves forward. The ledger gives
//! more, in any order of `now`. Let use `s + L` be handed out at `now = t'`. It
//! was granted with fewer than `L` uses held, and buckets hold consecutive numbers and are
//! released oldest first, so the bucket holding use `s` had been released (or moved to the
//! back: see "A bad clock"). Every use raises its bucket's cooldown end to its `now + T`
//! before the CAS that counts it; the call that released the bucket read that cooldown end in
//! a view its own CAS confirmed (so after every use the bucket got) and raised the release
//! watermark to it before that CAS. The call of `s + L`
//! read the watermark after a control word that reflects the release and was not late:
//! `t' ≥ t_s + T`. Now take any `X + 1` uses of one name: they are
//! uses `j + K·i` for `X + 1` distinct `i`, two of which are congruent modulo `X`, say
//! `i < i + c·X`; stepping `L = K·X` numbers at a time, each step at least `T` later,
//! `t_{j+K(i+cX)} ≥ t_{j+Ki} + c·T`. Two of the `X + 1` uses are `T` or more apart: they do not
//! fit in one window of length `T`.
//!
//! # The bucket bound
//! **Theorem.** With non-decreasing `now`, the number of buckets held at once (opened and not
//! cooled down) is at most, and can reach,
//!
//! `B = max(F(c₀, 0), F(c₁, 1))`, `F(c, e) = c + ⌊(L - 1 - c - e) / k⌋ + 1`,
//!
//! with `c₀ = min(⌊(T - 1) / τ⌋, L - 1)`, `c₁ = ⌈(T - 1) / τ⌉` (the second term only when
//! `c₁ > c₀` and `c₁ < L - 1`), and `B = ⌈L / k⌉` without `τ` ([`bucket_bound`]).
//!
//! *Upper bound.* The held count grows only when a bucket opens; take such a moment `t` and the
//! held buckets `b_1, …, b_m`, oldest first, `b_m` the one opening at `t`, `o_i` their opening
//! ticks (non-decreasing), `u_i` their newest uses. Each `b_i`, `i < m`, stopped taking uses
//! before `b_{i+1}` opened (not by cooling down, or it would not be held at `t`): it was
//! **full** (`k` uses) or **time-closed** (the call that
//! opened `b_{i+1}` had `now ≥ o_i + τ`, so `o_{i+1} ≥ o_i + τ`). Let `f` be the full ones and
//! `c` the others.
//! - *Uses:* `b_m` opened only with fewer than `L` uses held and every bucket holds one, so
//!   `c + f·k ≤ L - 1`.
//! - *Time:* `b_1` is held at `t`, so `u_1 ≥ t - T + 1`, and a bucket takes uses only before
//!   `o + τ`, so `o_1 ≥ u_1 - τ + 1 ≥ t - T - τ + 2`. Each time-closed bucket pushes the next
//!   opening tick up by `τ`: `c·τ ≤ t - o_1 ≤ T + τ - 2`, so `c ≤ c₁`. If `c > ⌊(T - 1)/τ⌋`,
//!   then `o_1 < u_1`: `b_1` holds a use at `o_1` and a later one, and it is one of the `c`
//!   (were it full, `b_2` would open no earlier than `u_1` and `c·τ ≤ T - 1`); so the `c`
//!   buckets hold `c + 1` uses: `c + 1 + f·k ≤ L - 1`.
//!
//! So `m = c + f + 1 ≤ F(c, e)` with `e = 1` exactly when `c > c₀`; `F` grows with `c` for a
//! fixed `e`, hence `m ≤ B`.
//!
//! *Reached.* Open `b_1` at `o_1 = t - T - τ + 2` and use it again at `o_1 + τ - 1` (or, for
//! `F(c₀, 0)`, open it at `t - T + 1` with one use), pack the `f` full buckets of `k` uses at
//! the next opening tick, then open one bucket with one use every `τ` ticks; the last opens at
//! `t` while `b_1` is still held. `tests/it/pool.rs` drives a pool of 500 uses per 10 minutes (`τ` = 1 minute, `k` = 50) there, and
//! `bound_search.rs` (a unit test) runs every trace of non-decreasing `now` through the real
//! ledger for all `L ≤ 6`, `T ≤ 7`, `τ ≤ T + 1`, `k ≤ L` and finds exactly `B` every time.
//!
//! *The additive sizing `⌈T / τ⌉ + ⌈L / k⌉`.* It holds for a ledger that releases a bucket at `o + τ + T`, not at its newest
//! use + `T`; the same argument then gives `o_1 ≥ t - T - τ + 1`, `c ≤ ⌈T / τ⌉`, no extra use,
//! and a maximum of `c + ⌊(L - 1 - c)/k⌋ + 1` with `c = min(⌈T / τ⌉, L - 1)`. That equals the
//! additive sizing exactly when `(L - 1) mod k ≥ ⌈T / τ⌉`, as for 500 uses per 10 minutes with
//! `τ` = 1 minute and `k` = 50 (`499 mod 50 = 49 ≥ 10`): 20 is right there, and one less fails because the bucket being opened is held
//! together with `⌈T / τ⌉` time-closed buckets whose opening ticks span up to `T + τ - 1`, not
//! `T`. The formula is never too small, and is too large by up to `⌈T / τ⌉ - 1` buckets where
//! `(L - 1) mod k` is small. This crate releases at the newest use + `T` (sooner, so never more
//! buckets): that pool needs 20 buckets in millisecond ticks and 19 in minute ticks.
//!
//! # Atomic orderings
//! One CAS on the control word decides each call ([`AtomicLedger`]). The release watermark
//! only grows (`fetch_max`) and a slot word only grows within its bucket; both are raised
//! before that CAS, so a reader that sees the CAS sees them. A reader re-reads the control
//! word after the slot words and decides only on a view where it did not change. See
//! `pool/atomic.rs` for each ordering.

mod algorithm;
mod atomic;
mod control;
mod geometry;
mod sequential;

use std::collections::HashMap;
use std::hash::Hash;

use crate::clock::Clock;

pub use algorithm::MAX_REQUEUES_PER_CALL;
pub use atomic::AtomicLedger;
pub use geometry::{
    additive_bucket_formula, bucket_bound, PoolError, PoolGeometry, PoolMode, FAR_FUTURE_HEADROOM,
    MAX_BUCKET_SLOTS, MAX_TOTAL_USES,
};
pub use sequential::{LockedLedger, SequentialLedger};

/// Why a call got no key.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Every use is held by a bucket that has not cooled down (a false negative only where
    /// the pool's mode allows one).
    Exhausted,
    /// Never returned any more; kept so that existing matches compile. It meant that every
    /// bucket slot was held and none had cooled down while uses were free: out-of-order
    /// `now`s (and a race with a concurrent join) could cause it, so under contention it
    /// answered where [`Refusal::Exhausted`] was meant. Such a call now joins the newest
    /// bucket instead (see the module docs).
    NoBucket,
    /// The call's `now` is below the cooldown end of a bucket that a call with a later `now`
    /// already released: the caller is late (descheduled after reading its clock, or out of
    /// order), and using what that release freed could break the limit at its own `now`.
    Late,
}

// Hidden: a hook for the stress tests, which check every refusal's reason against the ledger
// its decision read; not part of the API a user builds on.
#[doc(hidden)]
/// A refusal with what its decision read: one consistent view of the ledger (the control
/// word, re-read after the slot fields, had not changed) and the release watermark read after
/// it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusalWitness {
    /// The reason given.
    pub refusal: Refusal,
    /// The call's `now` (clamped as the ledger stores ticks).
    pub now: u64,
    /// Uses held by the buckets in the view.
    pub held_uses: u64,
    /// When the oldest held bucket cools down (`u64::MAX` with none held).
    pub head_cooled_at: u64,
    /// The release watermark.
    pub released_through: u64,
}

/// What a call at `now` would get, without taking anything ([`KeyPool::status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStatus {
    /// Uses a call at `now` could take, as the algorithm knows it: the pool's uses minus
    /// those held by buckets not cooled down by `now` (0 when a call would be refused).
    pub available: u64,
    /// Uses held by buckets not cooled down by `now`.
    pub held_uses: u64,
    /// Buckets not cooled down by `now`.
    pub held_buckets: u64,
    /// The earliest tick at which a call may get a key: `now` when one is available, else
    /// when the oldest held bucket cools down (or, for a late call, the release watermark).
    pub retry_at: u64,
    /// Why a call at `now` would be refused, if it would.
    pub refusal: Option<Refusal>,
}

/// Where a pool records its uses: the lock-free [`AtomicLedger`] or a [`SequentialLedger`]
/// behind a lock ([`LockedLedger`]). Both run the same algorithm; [`KeyPool`] adds the names.
pub trait UseLedger: Send + Sync + Sized {
    /// An empty ledger for `geometry`.
    fn new(geometry: PoolGeometry) -> Self;
    /// The variant name for reports (`"lock-free"`, `"mutex"`).
    fn name(&self) -> &'static str;
    /// The pool's validated numbers.
    fn geometry(&self) -> &PoolGeometry;
    /// Hands out one use at `now`: its sequence number (0, 1, 2, … in hand-out order).
    /// `now` is trusted (see [`KeyPool::take`]; [`KeyPool::take_stamped`] is the form for
    /// stamps from untrusted clocks).
    ///
    /// # Errors
    /// The [`Refusal`] that applies.
    fn take(&self, now: u64) -> Result<u64, Refusal>;
    // Hidden: for the stress tests (see `RefusalWitness`).
    #[doc(hidden)]
    /// [`UseLedger::take`], each refusal with what its decision read.
    ///
    /// # Errors
    /// The [`Refusal`] that applies, with its witness.
    fn take_witnessed(&self, now: u64) -> Result<u64, RefusalWitness>;
    /// What a call at `now` would get, without taking anything.
    fn status(&self, now: u64) -> PoolStatus;
    /// Bytes this ledger holds (its ring included), for memory reports.
    fn ledger_bytes(&self) -> usize;
}

/// A pool of named keys, each usable `uses_per_key` times per cooldown; lock-free by default
/// (`slidelimit_mutex::MutexKeyPool` is the same pool behind a `Mutex`).
pub struct KeyPool<N, G = AtomicLedger> {
    names: Box<[N]>,
    ledger: G,
}

impl<N: Hash + Eq + Send + Sync, G: UseLedger> KeyPool<N, G> {
    /// A pool of the given key names, each usable `uses_per_key` times per `cooldown_ticks`,
    /// allowed false negatives as `mode` says.
    ///
    /// # Errors
    /// [`PoolError`] for an empty or repeating key list and the cases of
    /// [`PoolGeometry::new`].
    pub fn new(
        names: impl IntoIterator<Item = N>,
        uses_per_key: u64,
        cooldown_ticks: u64,
        mode: PoolMode,
    ) -> Result<Self, PoolError> {
        let names: Box<[N]> = names.into_iter().collect();
        let mut seen = HashMap::with_capacity(names.len());
        for (index, name) in names.iter().enumerate() {
            if let Some(&first) = seen.get(name) {
                return Err(PoolError::DuplicateKey {
                    first,
                    second: index,
                });
            }
            seen.insert(name, index);
        }
        let geometry = PoolGeometry::new(names.len(), uses_per_key, cooldown_ticks, mode)?;
        Ok(Self {
            names,
            ledger: G::new(geometry),
        })
    }

    /// A key that may be used at `now`, or `None`. Keys come in the order they were given,
    /// cycling; never more than `uses_per_key` times per name in any window of
    /// `cooldown_ticks`.
    ///
    /// `now` is trusted: it should come from this process's clock. A far-future `now` is a
    /// use at that tick, whose key stays held until that tick plus the cooldown. For a tick
    /// stamped by a clock this process does not trust (a client's), call
    /// [`KeyPool::get_next_key_stamped`] with the process's own clock, which bounds what a bad
    /// stamp costs.
    #[must_use]
    pub fn get_next_key(&self, now: u64) -> Option<&N> {
        self.next_key_index(now).map(|index| &self.names[index])
    }

    /// The index (into [`KeyPool::names`]) of a key that may be used at `now`, or `None`.
    #[must_use]
    pub fn next_key_index(&self, now: u64) -> Option<usize> {
        self.take(now).ok()
    }

    /// Like [`KeyPool::next_key_index`], saying why when there is no key.
    ///
    /// `now` is trusted, as for [`KeyPool::get_next_key`]: a far-future `now` holds its use
    /// (and its key) until that tick plus the cooldown. A stamp from a clock this process does
    /// not trust goes through [`KeyPool::take_stamped`] instead.
    ///
    /// # Errors
    /// The [`Refusal`] that applies.
    pub fn take(&self, now: u64) -> Result<usize, Refusal> {
        let seq = self.ledger.take(now)?;
        // The remainder is below the number of names, which is a usize.
        Ok((seq % self.ledger.geometry().keys) as usize)
    }

    /// [`KeyPool::take`] for a use stamped `stamped` by a caller whose clock this process
    /// does not trust, judged against `clock` (this process's own time, in the pool's ticks):
    /// - a stamp ahead of the clock counts as made at the clock's tick, as
    ///   [`RateLimiter::check_and_hit_stamped`](crate::limiter::RateLimiter::check_and_hit_stamped)
    ///   counts it: however far ahead (`u64::MAX` included), the use it takes is held one
    ///   cooldown from the clock's tick, and the pool serves everyone else as before;
    /// - a stamp a whole cooldown or more behind the clock is refused as
    ///   [`Refusal::Late`] and recorded nowhere: the use it asks for would already have cooled
    ///   down, and the key is wanted now;
    /// - any other stamp is taken as it is (it may be refused as late, like any call).
    ///
    /// The pool's guarantee holds for the ticks it records: the stamps, capped at the clock.
    ///
    /// # Errors
    /// The [`Refusal`] that applies.
    pub fn take_stamped(&self, stamped: u64, clock: &dyn Clock) -> Result<usize, Refusal> {
        let now = clock.now_ticks();
        if stamped.saturating_add(self.ledger.geometry().cooldown_ticks()) <= now {
            return Err(Refusal::Late);
        }
        self.take(stamped.min(now))
    }

    /// [`KeyPool::get_next_key`] for a use stamped by an untrusted clock, judged against
    /// `clock` as [`KeyPool::take_stamped`] does.
    #[must_use]
    pub fn get_next_key_stamped(&self, stamped: u64, clock: &dyn Clock) -> Option<&N> {
        self.take_stamped(stamped, clock)
            .ok()
            .map(|index| &self.names[index])
    }

    /// Takes one use at `now` without naming a key (anonymous: the caller needs no key name).
    #[must_use]
    pub fn try_use_key(&self, now: u64) -> bool {
        self.ledger.take(now).is_ok()
    }

    /// How many uses a call at `now` could take, as the algorithm knows it.
    #[must_use]
    pub fn available(&self, now: u64) -> u64 {
        self.ledger.status(now).available
    }

    /// What a call at `now` would get, with the tick the next use frees up.
    #[must_use]
    pub fn status(&self, now: u64) -> PoolStatus {
        self.ledger.status(now)
    }

    /// The key names, in hand-out order.
    #[must_use]
    pub fn names(&self) -> &[N] {
        &self.names
    }

    /// The pool's validated numbers (uses, bucket bound, ring size).
    #[must_use]
    pub fn geometry(&self) -> &PoolGeometry {
        self.ledger.geometry()
    }

    /// The ledger's variant name (`"lock-free"`, `"mutex"`).
    #[must_use]
    pub fn variant(&self) -> &'static str {
        self.ledger.name()
    }

    /// The ledger underneath (the anonymous pool).
    #[must_use]
    pub fn ledger(&self) -> &G {
        &self.ledger
    }
}

#[cfg(test)]
mod bound_search;
