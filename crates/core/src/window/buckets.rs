//! Rolling bucket counters (seed 003): an approximate window in `O(B)` memory per key, with
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
//! | 31..0  | `total`      | weight of the retained buckets + reservations not yet recorded |
//!
//! Each bucket word:
//!
//! | bits   | field       | meaning                                          |
//! |--------|-------------|--------------------------------------------------|
//! | 63..32 | `tag_epoch` | the epoch whose weight the bucket holds, mod 2^32  |
//! | 31..0  | `count`     | that weight                                      |
//!
//! `total` never passes `max_requests` (≤ 2^24) through `check_and_hit`, and `hit` saturates
//! it at [`MAX_TOTAL_WEIGHT`] = 2^32 − 1; a count is part of the total, so neither low field
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
//!   than `L` buckets late. With `B` dividing `W`, `span = W`. This is exact for a
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

mod packed;

use std::fmt;

pub use packed::MAX_TOTAL_WEIGHT;
use packed::{advance_reach, decode, low, pack, with_low, EPOCH_MODULUS};

use crate::sync::{retry_hint, AtomicU64, Ordering};
use crate::window::{AtomicWindow, SequentialWindow, Status, WeightError, Window, MAX_TICK};
use crate::Limit;

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
    /// `B + 1 + L` physical buckets exceed [`MAX_PHYSICAL_BUCKETS`].
    TooManyBuckets {
        /// The physical buckets the configuration needs.
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
/// use slidelimit::{Limit, RollingBuckets, SequentialWindow, Window};
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
    buckets: u64,
    bucket_ticks: u64,
    lateness: u64,
}

impl RollingBuckets {
    /// `buckets` buckets over `limit`'s window, lateness 1 bucket.
    ///
    /// The bucket width is `ceil(W / buckets)`; if `buckets` does not divide `W`, only the
    /// `ceil(W / width)` buckets needed to cover `W` are kept (see [`Self::buckets`]).
    ///
    /// # Errors
    /// [`BucketError::ZeroBuckets`], [`BucketError::NarrowerThanATick`] if
    /// `buckets > window_ticks`, [`BucketError::TooManyBuckets`] if `buckets + 2` exceeds
    /// [`MAX_PHYSICAL_BUCKETS`].
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
        let bucket_ticks = window_ticks.div_ceil(buckets);
        let window = Self {
            limit,
            buckets: window_ticks.div_ceil(bucket_ticks),
            bucket_ticks,
            lateness: 0,
        };
        window.lateness_buckets(1)
    }

    /// How many buckets late a caller may be and still be checked (`L`, default 1). A caller
    /// more than `L` buckets behind the newest bucket the key has seen is refused; each unit
    /// of `L` costs one more bucket of memory and widens the false-negative bound by one
    /// bucket. `L = 0` gives the tightest bound, `W + w`, but refuses every caller whose tick
    /// falls in an older bucket than one already seen.
    ///
    /// # Errors
    /// [`BucketError::TooManyBuckets`] if `B + 1 + L` exceeds [`MAX_PHYSICAL_BUCKETS`].
    pub const fn lateness_buckets(self, lateness: u64) -> Result<Self, BucketError> {
        // B <= MAX_PHYSICAL_BUCKETS is not known yet (B <= W only), so add with care.
        let physical = self.buckets.saturating_add(1).saturating_add(lateness);
        if physical > MAX_PHYSICAL_BUCKETS {
            return Err(BucketError::TooManyBuckets {
                physical,
                max: MAX_PHYSICAL_BUCKETS,
            });
        }
        Ok(Self { lateness, ..self })
    }

    /// The effective number of buckets `B` covering the window (see [`Self::new`]).
    #[must_use]
    pub const fn buckets(&self) -> u64 {
        self.buckets
    }

    /// The bucket width `w`, in ticks.
    #[must_use]
    pub const fn bucket_ticks(&self) -> u64 {
        self.bucket_ticks
    }

    /// `B·w`: the ticks the buckets cover, at least `W` and less than `W + w` (saturating).
    #[must_use]
    pub const fn span_ticks(&self) -> u64 {
        self.buckets.saturating_mul(self.bucket_ticks)
    }

    /// The lateness `L`, in buckets.
    #[must_use]
    pub const fn tolerated_lateness(&self) -> u64 {
        self.lateness
    }

    /// `NB = B + 1 + L`, the buckets each key keeps.
    #[must_use]
    pub const fn physical_buckets(&self) -> u64 {
        self.buckets + 1 + self.lateness
    }

    /// The reach of a refusal: a refused caller at `t` has at least `max_requests − n + 1`
    /// weight recorded in `(t − this, ∞)`, unless it was more than `L` buckets late.
    /// `span + (L + 1)·w`, saturating.
    #[must_use]
    pub const fn refusal_reach_ticks(&self) -> u64 {
        self.span_ticks()
            .saturating_add((self.lateness + 1).saturating_mul(self.bucket_ticks))
    }

    const fn geometry(&self) -> Geometry {
        Geometry {
            bucket_ticks: self.bucket_ticks,
            physical: self.physical_buckets(),
            lateness: self.lateness,
            max_requests: self.limit.max_requests(),
        }
    }
}

impl Window for RollingBuckets {
    type Sequential = SequentialBuckets;
    type Atomic = AtomicBuckets;

    fn algorithm(&self) -> &'static str {
        "buckets"
    }

    fn limit(&self) -> Limit {
        self.limit
    }

    fn check_weight(&self, n: u64) -> Result<(), WeightError> {
        let max_requests = self.limit.max_requests();
        match n {
            0 => Err(WeightError::Zero),
            n if n > max_requests => Err(WeightError::ExceedsLimit { n, max_requests }),
            _ => Ok(()),
        }
    }

    fn new_sequential(&self) -> SequentialBuckets {
        SequentialBuckets::new(*self)
    }

    fn new_atomic(&self) -> AtomicBuckets {
        AtomicBuckets::new(*self)
    }
}

/// What the algorithm needs of the configuration, copied into each key's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    bucket_ticks: u64,
    /// `NB`.
    physical: u64,
    /// `L`.
    lateness: u64,
    max_requests: u64,
}

impl Geometry {
    #[inline]
    fn epoch(&self, now: u64) -> u64 {
        now.min(MAX_TICK) / self.bucket_ticks
    }

    #[inline]
    const fn slot(&self, epoch: u64) -> usize {
        // physical <= MAX_PHYSICAL_BUCKETS, so the remainder fits any usize.
        (epoch % self.physical) as usize
    }

    /// Whether weight of epoch `tag` is no longer retained once the head is at `head`.
    #[inline]
    const fn expired(&self, tag: u64, head: u64) -> bool {
        tag.saturating_add(self.physical) <= head
    }

    #[inline]
    const fn too_late(&self, epoch: u64, head: u64) -> bool {
        epoch.saturating_add(self.lateness) < head
    }
}

/// The storage the algorithm runs on. The atomic form's `replace_*` are CASes that may fail
/// with the value found; the sequential form's always succeed.
trait BucketCells {
    fn geometry(&self) -> Geometry;
    /// The full epoch for which recycling is complete.
    fn cleaned(&self) -> u64;
    /// Raises `cleaned` to `epoch` unless it is higher already.
    fn raise_cleaned(&mut self, epoch: u64);
    /// Moves `cleaned` from `current` to `new` (a shift by a multiple of 2^32); false if it
    /// was no longer `current`.
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool;
    /// The head word (head epoch | total).
    fn word(&self) -> u64;
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64>;
    /// A bucket word (tag epoch | count).
    fn bucket(&self, slot: usize) -> u64;
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64>;
    /// Adds `n` to a bucket's count whatever its tag.
    fn add_to_bucket(&mut self, slot: usize, n: u64);
    /// Overwrites a bucket; only the `buckets_split_tag_count` mutant does this.
    fn store_bucket(&mut self, slot: usize, value: u64);
}

/// The head word read together with the `cleaned` epoch that decodes it.
#[derive(Clone, Copy, Debug)]
struct Snapshot {
    word: u64,
    cleaned: u64,
    head: u64,
    total: u64,
}

/// Reads `cleaned`, the head word, and `cleaned` again until the two agree. Then the head is
/// in `[cleaned, cleaned + reach)`: whoever wrote the word had read a `cleaned` no newer than
/// ours, and whoever raised `cleaned` to ours had seen that head.
fn snapshot<C: BucketCells>(cells: &C) -> Snapshot {
    let physical = cells.geometry().physical;
    let mut cleaned = cells.cleaned();
    loop {
        let word = cells.word();
        let again = cells.cleaned();
        if again == cleaned {
            return Snapshot {
                word,
                cleaned,
                head: decode(word, cleaned, physical),
                total: low(word),
            };
        }
        cleaned = again;
        retry_hint();
    }
}

/// Reads bucket `slot` with a `cleaned` epoch that decodes its tag: `cleaned` is a value read
/// before the call, re-read after the bucket until it agrees. Returns the word and the tag.
fn read_bucket<C: BucketCells>(cells: &C, slot: usize, cleaned: &mut u64) -> (u64, u64) {
    let physical = cells.geometry().physical;
    loop {
        let value = cells.bucket(slot);
        let again = cells.cleaned();
        if again == *cleaned {
            return (value, decode(value, again, physical));
        }
        *cleaned = again;
        retry_hint();
    }
}

/// Subtracts weight cleared from a bucket from the running total.
fn subtract_from_total<C: BucketCells>(cells: &mut C, weight: u64) {
    let mut word = cells.word();
    loop {
        let total = low(word);
        debug_assert!(
            total >= weight,
            "total underflow: subtracting {weight} from a running total of {total}"
        );
        match cells.replace_word(word, with_low(word, total.saturating_sub(weight))) {
            Ok(()) => return,
            Err(found) => {
                word = found;
                retry_hint();
            }
        }
    }
}

/// Adds to the running total after the fact: only the mutants do this.
fn add_to_total<C: BucketCells>(cells: &mut C, weight: u64) {
    let mut word = cells.word();
    loop {
        let total = (low(word) + weight).min(MAX_TOTAL_WEIGHT);
        match cells.replace_word(word, with_low(word, total)) {
            Ok(()) => return,
            Err(found) => {
                word = found;
                retry_hint();
            }
        }
    }
}

/// Recycles the buckets for `head` (see the module docs, step 3), then raises `cleaned`.
/// Recycling is complete for `cleaned`, so only the buckets of the epochs in
/// `(cleaned, head]` have a new target (that very epoch): at most `NB` of them, however far
/// the head moved, and one per epoch in order.
fn recycle_for<C: BucketCells>(cells: &mut C, mut cleaned: u64, head: u64) {
    let geometry = cells.geometry();
    let first = head - (head - cleaned).min(geometry.physical) + 1;
    for target in first..=head {
        let slot = geometry.slot(target);
        loop {
            let (value, tag) = read_bucket(cells, slot, &mut cleaned);
            if cleaned >= head {
                // Someone finished this round (every tag is now >= its target).
                return;
            }
            if tag >= target {
                break;
            }
            let split = cfg!(slidelimit_loom_mutant = "buckets_split_tag_count");
            // The split mutant moves the tag alone and clears the count with a later store,
            // as if tag and count were two atomics: an increment in between is lost.
            let reset = pack(target, if split { low(value) } else { 0 });
            if cells.replace_bucket(slot, value, reset).is_ok() {
                if low(value) > 0 {
                    subtract_from_total(cells, low(value));
                }
                if split {
                    cells.store_bucket(slot, pack(target, 0));
                }
                break;
            }
            retry_hint();
        }
    }
    cells.raise_cleaned(head);
}

/// Moves the head towards `epoch` (> head) by one step: straight there when it is within
/// reach of `cleaned`; else shifts `cleaned` by a multiple of 2^32 if the jump is long enough
/// for the old state to stay expired; else one step of `reach`, recycling first if the head
/// is already a full step ahead. The caller re-reads the state after every step.
fn advance_towards<C: BucketCells>(cells: &mut C, snap: Snapshot, epoch: u64) {
    let geometry = cells.geometry();
    let reach = advance_reach(geometry.physical);
    let step_to = if epoch < snap.cleaned.saturating_add(reach) {
        epoch
    } else {
        // `epoch > head >= cleaned`, so this cannot underflow.
        let distance = epoch - snap.cleaned;
        let shift_floor = reach + geometry.physical + EPOCH_MODULUS;
        if distance >= shift_floor {
            let shift = (distance - reach - geometry.physical) / EPOCH_MODULUS * EPOCH_MODULUS;
            if !cells.shift_cleaned(snap.cleaned, snap.cleaned + shift) {
                retry_hint();
            }
            return;
        }
        snap.cleaned + reach - 1
    };
    if step_to > snap.head {
        if cells
            .replace_word(snap.word, pack(step_to, snap.total))
            .is_err()
        {
            retry_hint();
        }
    } else {
        // The head is a full step past `cleaned` (so `cleaned < head`): recycle, then step.
        recycle_for(cells, snap.cleaned, snap.head);
    }
}

/// Records `n` reserved at `epoch` in its bucket (step 5). `cleaned` is a value read before.
fn record<C: BucketCells>(cells: &mut C, epoch: u64, n: u64, mut cleaned: u64) {
    let slot = cells.geometry().slot(epoch);
    loop {
        let (value, tag) = read_bucket(cells, slot, &mut cleaned);
        if tag >= epoch {
            // Its own epoch, or a newer one after a recycle: the weight expires no earlier.
            cells.add_to_bucket(slot, n);
            return;
        }
        // The bucket holds an expired epoch (the head passed `epoch >= tag + NB`): replace it.
        if cells.replace_bucket(slot, value, pack(epoch, n)).is_ok() {
            if low(value) > 0 {
                subtract_from_total(cells, low(value));
            }
            return;
        }
        retry_hint();
    }
}

fn check_and_hit<C: BucketCells>(cells: &mut C, now: u64, n: u64) -> bool {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    let snap = loop {
        let snap = snapshot(cells);
        if epoch > snap.head {
            advance_towards(cells, snap, epoch);
            continue;
        }
        if geometry.too_late(epoch, snap.head) {
            return false;
        }
        if snap.cleaned < snap.head {
            recycle_for(cells, snap.cleaned, snap.head);
            continue;
        }
        if cfg!(slidelimit_loom_mutant = "buckets_sum_then_cas") {
            return sum_then_cas(cells, epoch, n, snap);
        }
        if cfg!(slidelimit_loom_mutant = "buckets_split_head_total") {
            // Deliberately broken: the lateness check above used this head, but the
            // reservation re-reads the total alone, as if head and total were two atomics.
            return reserve_total_only(cells, epoch, n, snap.cleaned);
        }
        if snap.total + n > geometry.max_requests {
            return false;
        }
        if cfg!(slidelimit_loom_mutant = "buckets_record_before_reserve") {
            // Deliberately broken: records, then adds to the total, so a recycler can
            // subtract this weight before the total holds it.
            record(cells, epoch, n, snap.cleaned);
            add_to_total(cells, n);
            return true;
        }
        // The reservation: the linearization point of an admission. The CAS fails if the
        // head moved or anything was added or subtracted since the snapshot.
        match cells.replace_word(snap.word, with_low(snap.word, snap.total + n)) {
            Ok(()) => break snap,
            Err(_) => retry_hint(),
        }
    };
    record(cells, epoch, n, snap.cleaned);
    true
}

fn hit<C: BucketCells>(cells: &mut C, now: u64, n: u64) {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    let (snap, weight) = loop {
        let snap = snapshot(cells);
        if epoch > snap.head {
            advance_towards(cells, snap, epoch);
            continue;
        }
        if geometry.expired(epoch, snap.head) {
            // Already expired for every caller that can still be admitted.
            return;
        }
        if snap.cleaned < snap.head {
            recycle_for(cells, snap.cleaned, snap.head);
            continue;
        }
        let weight = n.min(MAX_TOTAL_WEIGHT - snap.total);
        if weight == 0 {
            return;
        }
        match cells.replace_word(snap.word, with_low(snap.word, snap.total + weight)) {
            Ok(()) => break (snap, weight),
            Err(_) => retry_hint(),
        }
    };
    record(cells, epoch, weight, snap.cleaned);
}

/// What a caller at `now` would see, from loads alone.
#[derive(Clone, Copy, Debug)]
struct View {
    snap: Snapshot,
    epoch: u64,
    /// `max(head, epoch)`: the head once the caller has advanced it.
    head: u64,
    /// The weight counted against the caller: the total minus every bucket that the advance
    /// to `head` would recycle.
    count: u64,
}

impl View {
    fn too_late(&self, geometry: Geometry) -> bool {
        geometry.too_late(self.epoch, self.snap.head)
    }
}

fn view<C: BucketCells>(cells: &C, now: u64) -> View {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    loop {
        let snap = snapshot(cells);
        let head = snap.head.max(epoch);
        if snap.cleaned == head {
            // Nothing left to recycle for this caller: the total is its count.
            return View {
                snap,
                epoch,
                head,
                count: snap.total,
            };
        }
        // As in `recycle_for`: only the buckets of the epochs in (cleaned, head] can expire.
        let mut cleaned = snap.cleaned;
        let mut expired = 0u64;
        let first = head - (head - snap.cleaned).min(geometry.physical) + 1;
        for epoch in first..=head {
            let (value, tag) = read_bucket(cells, geometry.slot(epoch), &mut cleaned);
            if tag < epoch {
                expired += low(value);
            }
        }
        if cleaned == snap.cleaned {
            return View {
                snap,
                epoch,
                head,
                count: snap.total.saturating_sub(expired),
            };
        }
        retry_hint();
    }
}

fn allowed<C: BucketCells>(cells: &C, now: u64, n: u64) -> bool {
    let geometry = cells.geometry();
    let view = view(cells, now);
    !view.too_late(geometry) && view.count + n <= geometry.max_requests
}

fn status<C: BucketCells>(cells: &C, now: u64) -> Status {
    let geometry = cells.geometry();
    let now = now.min(MAX_TICK);
    let view = view(cells, now);
    let late = view.too_late(geometry);
    let max_requests = geometry.max_requests;
    let remaining = if late {
        0
    } else {
        max_requests.saturating_sub(view.count)
    };
    // The first epoch at which a hit of weight 1 would be admitted, no other call assumed:
    // not late, and enough of the oldest retained buckets recycled.
    let mut admit_at = view
        .epoch
        .max(view.snap.head.saturating_sub(geometry.lateness));
    if view.count >= max_requests {
        let need = view.count - (max_requests - 1);
        let mut dropped = 0u64;
        let mut cleaned = view.snap.cleaned;
        let oldest = view.head.saturating_sub(geometry.physical - 1);
        // Retained epochs in order: the bucket of epoch j expires when the head reaches
        // j + NB. (Weight still only reserved expires with no bucket: then the last one.)
        for epoch in oldest..=view.head {
            let (value, tag) = read_bucket(cells, geometry.slot(epoch), &mut cleaned);
            if tag != epoch || low(value) == 0 {
                continue;
            }
            admit_at = admit_at.max(epoch.saturating_add(geometry.physical));
            dropped += low(value);
            if dropped >= need {
                break;
            }
        }
    }
    let retry_after_ticks = if admit_at <= view.epoch {
        0
    } else {
        admit_at
            .saturating_mul(geometry.bucket_ticks)
            .saturating_sub(now)
    };
    Status {
        count: view.count,
        remaining,
        retry_after_ticks,
    }
}

fn fresh_from<C: BucketCells>(cells: &C) -> u64 {
    let geometry = cells.geometry();
    let snap = snapshot(cells);
    let mut cleaned = snap.cleaned;
    let mut recorded = 0u64;
    // Not late for any caller from here on; then no retained bucket may hold weight.
    let mut fresh_epoch = snap.head.saturating_sub(geometry.lateness);
    for slot in 0..geometry.physical as usize {
        let (value, tag) = read_bucket(cells, slot, &mut cleaned);
        recorded += low(value);
        if low(value) > 0 && !geometry.expired(tag, snap.head) {
            fresh_epoch = fresh_epoch.max(tag.saturating_add(geometry.physical));
        }
    }
    if recorded != snap.total || cleaned != snap.cleaned {
        // A reservation not yet recorded, or a recycle not yet subtracted: in flight.
        return u64::MAX;
    }
    fresh_epoch.saturating_mul(geometry.bucket_ticks)
}

fn refuses_at_a_glance<C: BucketCells>(cells: &C, now: u64, n: u64) -> bool {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    let snap = snapshot(cells);
    geometry.too_late(epoch, snap.head)
        || (epoch <= snap.head
            && snap.cleaned >= snap.head
            && snap.total + n > geometry.max_requests)
}

/// The `buckets_split_head_total` mutant's reservation: re-reads the word and reserves
/// against whatever total it holds now, without re-checking the head.
fn reserve_total_only<C: BucketCells>(cells: &mut C, epoch: u64, n: u64, cleaned: u64) -> bool {
    let max_requests = cells.geometry().max_requests;
    let mut word = cells.word();
    loop {
        if low(word) + n > max_requests {
            return false;
        }
        match cells.replace_word(word, with_low(word, low(word) + n)) {
            Ok(()) => break,
            Err(found) => {
                word = found;
                retry_hint();
            }
        }
    }
    record(cells, epoch, n, cleaned);
    true
}

/// The `buckets_sum_then_cas` mutant's decision: sums the other retained buckets, then CASes
/// its own bucket alone, with no single reservation word; the total follows afterwards.
fn sum_then_cas<C: BucketCells>(cells: &mut C, epoch: u64, n: u64, snap: Snapshot) -> bool {
    let geometry = cells.geometry();
    let own = geometry.slot(epoch);
    let mut cleaned = snap.cleaned;
    loop {
        let mut others = 0;
        for slot in (0..geometry.physical as usize).filter(|&slot| slot != own) {
            let (value, tag) = read_bucket(cells, slot, &mut cleaned);
            if !geometry.expired(tag, snap.head) {
                others += low(value);
            }
        }
        let (value, tag) = read_bucket(cells, own, &mut cleaned);
        let current = if tag >= epoch { low(value) } else { 0 };
        if others + current + n > geometry.max_requests {
            return false;
        }
        let new = if tag >= epoch {
            value + n
        } else {
            pack(epoch, n)
        };
        if cells.replace_bucket(own, value, new).is_ok() {
            if tag < epoch && low(value) > 0 {
                subtract_from_total(cells, low(value));
            }
            add_to_total(cells, n);
            return true;
        }
        retry_hint();
    }
}

/// The rolling-bucket window in plain integers, for use under a lock.
#[derive(Clone, Debug)]
pub struct SequentialBuckets {
    geometry: Geometry,
    word: u64,
    cleaned: u64,
    buckets: Box<[u64]>,
}

impl SequentialBuckets {
    /// An empty window.
    #[must_use]
    pub fn new(window: RollingBuckets) -> Self {
        let geometry = window.geometry();
        Self {
            geometry,
            word: 0,
            cleaned: 0,
            buckets: vec![0; geometry.physical as usize].into_boxed_slice(),
        }
    }
}

impl BucketCells for SequentialBuckets {
    fn geometry(&self) -> Geometry {
        self.geometry
    }
    fn cleaned(&self) -> u64 {
        self.cleaned
    }
    fn raise_cleaned(&mut self, epoch: u64) {
        self.cleaned = self.cleaned.max(epoch);
    }
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool {
        debug_assert_eq!(self.cleaned, current);
        self.cleaned = new;
        true
    }
    fn word(&self) -> u64 {
        self.word
    }
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.word, current);
        self.word = new;
        Ok(())
    }
    fn bucket(&self, slot: usize) -> u64 {
        self.buckets[slot]
    }
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.buckets[slot], current);
        self.buckets[slot] = new;
        Ok(())
    }
    fn add_to_bucket(&mut self, slot: usize, n: u64) {
        self.buckets[slot] += n;
    }
    fn store_bucket(&mut self, slot: usize, value: u64) {
        self.buckets[slot] = value;
    }
}

impl SequentialWindow for SequentialBuckets {
    fn hit_n(&mut self, now: u64, n: u64) {
        hit(self, now, n);
    }
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        check_and_hit(self, now, n)
    }
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        allowed(self, now, n)
    }
    fn status(&self, now: u64) -> Status {
        status(self, now)
    }
    fn fresh_from(&self) -> u64 {
        fresh_from(self)
    }
}

/// The head word and `cleaned`, on a cache line of their own.
#[repr(align(64))]
#[derive(Debug)]
struct Header {
    /// (head epoch | total), see the module docs.
    word: AtomicU64,
    /// The full epoch whose recycling is complete; decodes the truncated epochs.
    cleaned: AtomicU64,
}

/// The rolling-bucket window in atomics: every decision is a CAS on the head word, every
/// bucket update a CAS or `fetch_add` on its packed word; no lock.
#[derive(Debug)]
pub struct AtomicBuckets {
    header: Header,
    geometry: Geometry,
    buckets: Box<[AtomicU64]>,
}

impl AtomicBuckets {
    /// An empty window.
    #[must_use]
    pub fn new(window: RollingBuckets) -> Self {
        let geometry = window.geometry();
        Self {
            header: Header {
                word: AtomicU64::new(0),
                cleaned: AtomicU64::new(0),
            },
            geometry,
            buckets: (0..geometry.physical).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// `(running total, sum of the bucket counts)`, for quiescent checks in tests and models:
    /// once no call is in flight the two are equal.
    #[must_use]
    pub fn quiescent_totals(&self) -> (u64, u64) {
        // Acquire: pairs with the AcqRel CASes and fetch_adds that wrote these words.
        let total = low(self.header.word.load(Ordering::Acquire));
        let counts = self
            .buckets
            .iter()
            .map(|bucket| low(bucket.load(Ordering::Acquire)))
            .sum();
        (total, counts)
    }

    /// `(head epoch, cleaned epoch)`, full width, for quiescent checks in tests and models:
    /// once no call is in flight recycling is complete and the two are equal.
    #[must_use]
    pub fn quiescent_epochs(&self) -> (u64, u64) {
        let snap = snapshot(&self);
        (snap.head, snap.cleaned)
    }
}

impl BucketCells for &AtomicBuckets {
    #[inline]
    fn geometry(&self) -> Geometry {
        self.geometry
    }
    #[inline]
    fn cleaned(&self) -> u64 {
        // Acquire: pairs with the Release raise after a round of recycles (and the shift
        // CAS), so the word and bucket loads that follow see those recycles.
        self.header.cleaned.load(Ordering::Acquire)
    }
    #[inline]
    fn raise_cleaned(&mut self, epoch: u64) {
        // Release: publishes the recycles (and their subtractions) of this round to every
        // caller that loads `cleaned` before the head word; fetch_max keeps it monotone.
        self.header.cleaned.fetch_max(epoch, Ordering::Release);
    }
    #[inline]
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool {
        // Success AcqRel: Acquire orders the shift after the head word it was decided on,
        // Release publishes it like a raise. Failure Relaxed: the caller re-reads everything.
        self.header
            .cleaned
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
    #[inline]
    fn word(&self) -> u64 {
        // Acquire: pairs with the AcqRel CASes on the word (advance, reserve, subtract).
        self.header.word.load(Ordering::Acquire)
    }
    #[inline]
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64> {
        // Success AcqRel: the one serialization point; Acquire sees the subtractions and
        // advances before it, Release publishes this reservation before the record that
        // follows. Failure Acquire: the value found is re-decided like a fresh load.
        self.header
            .word
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }
    #[inline]
    fn bucket(&self, slot: usize) -> u64 {
        // Acquire: pairs with the records' and recycles' AcqRel writes of this bucket.
        self.buckets[slot].load(Ordering::Acquire)
    }
    #[inline]
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64> {
        // Success AcqRel: a recycle's Acquire pairs with the Release of every record it
        // clears, so its subtraction follows their reservations in the word's order; a
        // record's Release publishes its reservation to that recycler. Failure Acquire: the
        // value found is re-decided like a fresh load.
        self.buckets[slot]
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }
    #[inline]
    fn add_to_bucket(&mut self, slot: usize, n: u64) {
        // AcqRel: the Release is essential (a recycler that clears this weight must
        // happen-after its reservation); see `replace_bucket`.
        self.buckets[slot].fetch_add(n, Ordering::AcqRel);
    }
    fn store_bucket(&mut self, slot: usize, value: u64) {
        // Only the split-tag-count mutant stores; it is wrong whatever the ordering.
        self.buckets[slot].store(value, Ordering::Release);
    }
}

impl AtomicWindow for AtomicBuckets {
    #[inline]
    fn hit_n(&self, now: u64, n: u64) {
        hit(&mut &*self, now, n);
    }
    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> bool {
        check_and_hit(&mut &*self, now, n)
    }
    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        allowed(&self, now, n)
    }
    fn status(&self, now: u64) -> Status {
        status(&self, now)
    }
    fn fresh_from(&self) -> u64 {
        fresh_from(&self)
    }
    #[inline]
    fn refuses_at_a_glance(&self, now: u64, n: u64) -> bool {
        refuses_at_a_glance(&self, now, n)
    }
}

#[cfg(test)]
mod tests;
