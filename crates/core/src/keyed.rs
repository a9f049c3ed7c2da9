//! Keys and memory: per-key state created on first use, idle keys removed by an automatic
//! sweep and by `remove_idle`, and the removal watermarks that keep removal safe.
//!
//! The policy here is the one every limiter runs; the limiters differ only in how they guard
//! each key's window ([`concurrent`] for per-entry guards in a concurrent map, [`sequential`]
//! for one lock over a plain map).
//!
//! # Removal watermarks
//! A sweep removes a key only when its state is fresh (equal to an empty window) from a tick
//! at or below the *removal floor*, which it first raises to its `now - D` (`D` the lateness
//! tolerance), but never past what the limiter has observed as real time ([`floor`]); the
//! automatic sweep removes only keys fresh by that floor, so it leaves no tombstones
//! (`remove_idle` removes by its own `now - D`, and leaves one for each key it removes while
//! fresh only above the floor). A key
//! re-created after a removal answers with the floor it finds, so `allowed` and
//! `check_and_hit` below it are refused (a documented false negative: they may have needed the
//! forgotten hits); `hit` always records. A key never seen, or not removed, is refused only
//! below the floor, which a far-future timestamp cannot raise. The entry keeps the floor it
//! resolved, so the hot path reads it from the entry it already holds.
//!
//! # Shards and sweep steps
//! Keys are spread over [`Options::key_shards`] shards by their hash. A shard grows on its own
//! (a resize copies one shard, not the map), and keeps its own key count and a queue of its
//! keys by the tick each is due for a look (module `schedule`): a key-creating call looks at up to
//! eight due keys of its own shard, so no call pays for the map, and a sweep visits about one
//! key per key it removes. `remove_idle` sweeps every shard on the caller's thread, for users
//! who want removal off the request path.
//!
//! # What a created or removed key writes
//! Its shard's words only (the map shard, the shard's key counts and due queue), with two
//! limiter-wide exceptions, both rare: the observed clock records one creation in
//! [`OBSERVE_EVERY`] per shard, and the removal floor is written when a sweep step raises it
//! (once per tick that sweeps see). The allocator's settling is paced per thread.

pub mod concurrent;
pub mod floor;
pub mod limits;
mod map;
mod schedule;
pub mod sequential;

use std::hash::{BuildHasher, Hash};

use crate::limit::Limit;
use crate::sync::{AtomicU64, Ordering};
use crate::window::{Algorithm, Status, WeightError, WindowStatuses, MAX_TICK};
use floor::RemovalFloor;

/// How a limiter manages its keys. Build with [`Options::default`] and the setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    lateness_ticks: Option<u64>,
    sweep_floor_keys: usize,
    key_shards: usize,
    tick_nanos: Option<u64>,
    limiter_name: &'static str,
    max_keys: usize,
}

/// The default of [`Options::key_shards`].
pub const DEFAULT_KEY_SHARDS: usize = 512;

impl Default for Options {
    fn default() -> Self {
        Self {
            lateness_ticks: None,
            sweep_floor_keys: 4096,
            key_shards: DEFAULT_KEY_SHARDS,
            tick_nanos: None,
            limiter_name: crate::metrics::DEFAULT_LIMITER_NAME,
            max_keys: usize::MAX,
        }
    }
}

impl Options {
    /// The lateness tolerance `D`: how far a caller's `now` may lag behind a sweeper's and
    /// still be answered exactly. A sweep at `now_s` keeps every key that a call at
    /// `now_s - D` could still see. Default: one window.
    #[must_use]
    pub const fn lateness_ticks(mut self, ticks: u64) -> Self {
        self.lateness_ticks = Some(ticks);
        self
    }

    /// Below this many tracked keys the limiter never sweeps on its own: each of the
    /// [`Self::key_shards`] shards starts its automatic sweep once it holds its share of
    /// them (rounded up), and from then on its key-creating calls look at its keys that are
    /// due: every such call while the shard holds fewer than 16 keys, one in up to eight as it
    /// holds more, each looking at up to 64 due keys (eight per creation it stands for at the
    /// widest stride; see [`crate::keyed`]). Default 4096. `usize::MAX` turns the
    /// automatic sweep off (then only `remove_idle` removes keys).
    #[must_use]
    pub const fn sweep_floor_keys(mut self, keys: usize) -> Self {
        self.sweep_floor_keys = keys;
        self
    }

    /// How many shards the key map is split into, rounded up to a power of two (at least
    /// 1). A shard's table grows by itself (the longest pause any call takes for the map is
    /// about `tracked keys / key_shards` entries' worth of copying), and a key's creation
    /// and removal write only its shard's words. Map shards are created on first use.
    /// Default [`DEFAULT_KEY_SHARDS`].
    #[must_use]
    pub const fn key_shards(mut self, shards: usize) -> Self {
        self.key_shards = shards;
        self
    }

    /// The length of one tick, if the caller wants snapshots to record it: a snapshot
    /// carries it, and a restore into a limiter with another tick length is refused
    /// (`SnapshotError::TickMismatch`). Ticks are the caller's unit either way; unset (the
    /// default), snapshots say nothing about it and restores do not check it.
    #[must_use]
    pub const fn tick(mut self, tick: std::time::Duration) -> Self {
        let nanos = tick.as_nanos();
        self.tick_nanos = Some(if nanos > u64::MAX as u128 {
            u64::MAX
        } else {
            nanos as u64
        });
        self
    }

    /// The key budget: the most keys a decision may make the limiter track. Each of the
    /// [`Self::key_shards`] shards holds its share (rounded up, so the limiter tracks at most
    /// `keys` plus one per shard, plus one per thread racing to create a key in a full shard).
    ///
    /// When a `check_and_hit` on a key with no state finds its shard full, the shard first
    /// takes a budget step: up to 64 looks at its keys due by the call's `now`, removing those
    /// idle by `now` minus the lateness tolerance, as `remove_idle(now)` would in that shard
    /// (a key fresh only above the removal floor leaves a tombstone, so no call within the
    /// tolerance of that `now` loses a hit it needs). If the shard is still full, the call is
    /// **refused** and no state is created, so a flood of fresh keys cannot grow memory past
    /// the budget and never over-admits. Keys that already have state are decided as before.
    /// While its shard is full, a key with no state is refused by `allowed` too, and `status`
    /// reports nothing remaining with a `retry_after_ticks` of one refusal reach plus the
    /// lateness tolerance (`W + D` for the exact log, `W + (L + 1)·w + D` for rolling
    /// buckets): a key retried then is admitted if the shard's keys were not used in between,
    /// each being idle by then. A full budget so trusts the refused caller's clock for its own
    /// shard's idle keys: a clock far ahead can make them go early, each then refused below
    /// its tombstone, never over-admitted. `hit` always records (it is the caller's own
    /// accounting, not a decision), so it may create state past the budget.
    ///
    /// Default: no budget (`usize::MAX`). What a key costs depends on the limit (an exact
    /// log of `N` hits keeps `8·N` bytes), so no one budget fits every limiter; set one for
    /// any limiter whose keys come from clients (docs/guarantees.md, "Hostile traffic", has the
    /// measured flood).
    #[must_use]
    pub const fn max_keys(mut self, keys: usize) -> Self {
        self.max_keys = keys;
        self
    }

    /// The limiter's name in its metrics (the `limiter` label, feature `metrics`; see
    /// [`crate::metrics`]). Default [`crate::metrics::DEFAULT_LIMITER_NAME`]. Without the
    /// feature it is kept and unused.
    #[must_use]
    pub const fn limiter_name(mut self, name: &'static str) -> Self {
        self.limiter_name = name;
        self
    }

    fn shard_count(&self) -> usize {
        if cfg!(slidelimit_loom) {
            // The loom stand-in map is one shard, whatever is asked.
            return 1;
        }
        let shards = if self.key_shards == 0 {
            1
        } else {
            self.key_shards
        };
        match shards.checked_next_power_of_two() {
            Some(count) => count.min(1 << 16),
            None => 1 << 16,
        }
    }
}

/// Called by the automatic sweep once its steps have removed [`SETTLE_AFTER_REMOVALS`] keys:
/// one short-lived allocation too large for the allocator's small-object caches. glibc's
/// malloc keeps small freed blocks (a removed key's map node and slots) in "fastbins" and
/// folds them back only when a large request arrives, walking every block freed since the
/// last one; with the sweep freeing keys step by step and nothing else allocating large
/// blocks, millions piled up and one unrelated call paid 25 ms to fold them. A large request
/// now and then folds the frees in lumps bounded by the removals between two of them. Not
/// after every step: folding merges the freed blocks, so the next keys' small allocations
/// must split them again instead of reusing a freed block of their size, which cost key
/// churn (nearly every call creates a key, the sweep keeps removing them) a tenth of its
/// time. Other allocators just serve and free one block.
pub(crate) fn settle_allocator() {
    /// Above glibc's per-thread cache (1032 bytes) and its large-request threshold.
    const LARGE_REQUEST_BYTES: usize = 4096;
    drop(std::hint::black_box(Vec::<u8>::with_capacity(
        LARGE_REQUEST_BYTES,
    )));
}

/// A shard's creations the observed clock records (see [`floor`]): one in this many, so that
/// a creation writes the limiter-wide clock only now and then, while the clock stays fresh
/// (with shards, every one creates its first key and every eighth after it).
pub const OBSERVE_EVERY: usize = 8;
// `KeyPolicy::observe_mask` relies on it.
const _: () = assert!(OBSERVE_EVERY.is_power_of_two());

/// Keys the automatic sweep removes on one thread between two [`settle_allocator`] calls: the
/// frees one fold walks (two small blocks per key, a few tens of microseconds for the lot),
/// and few enough folds that key churn reuses freed blocks as they are.
const SETTLE_AFTER_REMOVALS: usize = 4096;

std::thread_local! {
    /// Keys this thread's sweep steps removed since it last called [`settle_allocator`]:
    /// per thread (glibc's caches and arenas are per thread too), so that no removal writes
    /// a word other threads write.
    static UNSETTLED_REMOVALS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A sweep step between its halves: what its looks remove, and the time it trusted when it
/// took its keys (see [`KeyPolicy::take_due`]).
#[derive(Clone, Copy)]
struct SweepStep {
    bounds: SweepBounds,
    trusted: u64,
    /// The time the keys its looks put back are queued after: the automatic sweep's trusted
    /// time, also for a budget step, whose own `now` is one caller's word (a key put back
    /// after a far-ahead `now` would wait there, its tombstone kept, for good).
    requeue_after: u64,
}

/// Counts `removed` keys toward the next [`settle_allocator`] call on this thread.
fn settle_after(removed: usize) {
    let due = UNSETTLED_REMOVALS.with(|unsettled| {
        let total = unsettled.get() + removed;
        let due = total >= SETTLE_AFTER_REMOVALS;
        unsettled.set(if due { 0 } else { total });
        due
    });
    if due {
        settle_allocator();
    }
}

/// Why `status` of weight 1 cannot fail: every limit admits at least one hit.
pub(crate) const WEIGHT_ONE_FITS: &str = "every limit admits a hit of weight 1";

/// Whether weight `n`, already valid for the window's rules, can ever fit under the key's
/// `limit`: a key's own limit may be below the heaviest weight the limiter accepts. Weight 1
/// fits every limit, so the status of a single hit never reads the limit.
#[inline]
pub(crate) fn fits_limit(n: u64, limit: impl FnOnce() -> Limit) -> Result<(), WeightError> {
    if n <= 1 {
        return Ok(());
    }
    let max_requests = limit().max_weight();
    if n > max_requests {
        return Err(WeightError::ExceedsLimit { n, max_requests });
    }
    Ok(())
}

/// The shard of a key with hash `hash`, of `shards` (a power of two): bits 32 and up of the
/// hash times an odd constant (the shards' tables index with the hash's low bits and tag with
/// its top seven).
///
/// The multiply is there because foldhash's fast hash of an integer is close to a multiply:
/// for some process seeds (about one in twelve, measured over processes), the plain bits 32
/// and up of consecutive integer keys (user IDs, counters) cycle through a few shards at a
/// time, so a shard could go thousands of ticks without a new key, and a shard sweeps only
/// when it creates one: its idle keys stayed (a rotation of 4,000 active keys tracked
/// 10,000–14,000). Product bits 32 and up depend on every hash bit below them, and the
/// shards fill like independent draws whatever the seed: over 2,000 seeds, 68 went over
/// 2,000 ticks without a key in some shard with the plain bits, none with the multiply
/// (longest 1,738 ticks), none with an xor-shift before it (1,740: the shift bought nothing
/// and cost the hot path three instructions, so it went).
#[inline]
pub(crate) fn shard_index(hash: u64, shards: usize) -> usize {
    (hash.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 32) as usize & (shards - 1)
}

/// The hasher of the key maps and their shards: foldhash, randomly seeded once per process,
/// so attacker-chosen keys cannot aim at one bucket, while every limiter in the process
/// shards alike: that keeps the variants' sweep steps, and so their answers, identical on any
/// trace.
#[cfg(not(slidelimit_loom))]
pub(crate) type KeyHasher = foldhash::fast::RandomState;
/// Under loom the seed is fixed, so that every explored execution walks the map alike.
#[cfg(slidelimit_loom)]
pub(crate) type KeyHasher = foldhash::fast::FixedState;

#[cfg(not(slidelimit_loom))]
pub(crate) fn process_hasher() -> KeyHasher {
    static HASHER: std::sync::OnceLock<KeyHasher> = std::sync::OnceLock::new();
    HASHER.get_or_init(KeyHasher::default).clone()
}

#[cfg(slidelimit_loom)]
pub(crate) fn process_hasher() -> KeyHasher {
    KeyHasher::default()
}

/// The order in which a shard's due queue takes the keys it already holds when it is armed
/// (see [`schedule`]): by this rank, the key's hash under the process's key hasher, so that
/// every variant (whatever order its map iterates in) queues them alike.
#[doc(hidden)]
#[must_use]
pub fn arming_rank<K: Hash + ?Sized>(key: &K) -> u64 {
    process_hasher().hash_one(key)
}

/// The removal watermark an entry answers with: the removal floor, read once, lazily, by the
/// first caller that reaches the entry through the map.
///
/// Not when the entry is built: the map may publish a value long after it was built (a
/// get-or-insert that retries, or a thread descheduled before its insert), and a sweep may
/// remove an earlier entry of the key and raise the watermark in between. A caller that found
/// this entry in the map found it after every earlier entry of the key was unlinked, so its
/// read of the floor sees every raise those removals made.
///
/// | value   | meaning                           |
/// |---------|-----------------------------------|
/// | 0       | not yet read from the table       |
/// | `w + 1` | the key's watermark is `w`        |
///
/// Watermarks never exceed [`MAX_TICK`] (sweeps clamp their `now`), so `w + 1` fits.
#[derive(Debug, Default)]
pub struct EntryWatermark {
    word: AtomicU64,
}

impl EntryWatermark {
    /// Not yet read.
    #[must_use]
    pub fn unresolved() -> Self {
        Self::default()
    }

    /// Already resolved to `watermark` (an entry that replaces one whose watermark was
    /// resolved, or a restored one).
    #[must_use]
    pub fn resolved(watermark: u64) -> Self {
        Self {
            word: AtomicU64::new(watermark.min(MAX_TICK) + 1),
        }
    }

    /// The watermark, reading it with `resolve` on first use.
    #[inline]
    pub(crate) fn get_or_resolve(&self, resolve: impl FnOnce() -> u64) -> u64 {
        // Relaxed: the value is a bound read from the floor by a caller that already
        // synchronised with the removals behind it; it publishes no other memory.
        match self.word.load(Ordering::Relaxed) {
            0 => self.resolve(resolve()),
            stored => stored - 1,
        }
    }

    #[cold]
    fn resolve(&self, watermark: u64) -> u64 {
        let stored = watermark.min(MAX_TICK) + 1;
        // Relaxed: see get_or_resolve. fetch_max keeps the highest of racing resolutions (a
        // later one may include a later raise: only more conservative).
        self.word.fetch_max(stored, Ordering::Relaxed).max(stored) - 1
    }
}

/// A removed key's watermark, kept while it is above the removal floor: a sweep at a `now`
/// far ahead of the observed time removes keys whose hits a late caller could still need, and
/// only these keys, not every key, must refuse below the tick they were fresh from.
#[derive(Debug)]
pub struct Tombstone {
    idle_from: AtomicU64,
}

impl Tombstone {
    pub(crate) fn new(idle_from: u64) -> Self {
        Self {
            idle_from: AtomicU64::new(idle_from),
        }
    }

    pub(crate) fn idle_from(&self) -> u64 {
        // Acquire: pairs with the AcqRel fetch_max in `raise`, run before the unlink of the
        // entry it stands for.
        self.idle_from.load(Ordering::Acquire)
    }

    pub(crate) fn raise(&self, idle_from: u64) {
        // AcqRel: see `idle_from`; fetch_max keeps the highest of two sweeps' values.
        self.idle_from.fetch_max(idle_from, Ordering::AcqRel);
    }
}

/// What one sweep removes, the same in both map shapes: keys whose state is fresh by
/// `horizon` (`now - D`); of those, the ones fresh only from a tick above `floor` (the removal
/// floor, already raised) leave a tombstone, and tombstones at or below the floor are dropped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SweepBounds {
    horizon: u64,
    floor: u64,
}

impl SweepBounds {
    /// Keys whose state is fresh by this tick are removed.
    fn horizon(self) -> u64 {
        self.horizon
    }

    /// The tombstone a key removed with state fresh from `idle_from` must leave, if any.
    /// It is written before the key is unlinked, so whoever re-creates the key finds it.
    fn tombstone_for(self, idle_from: u64) -> Option<u64> {
        (idle_from > self.floor).then_some(idle_from)
    }

    /// Whether a key removed within these bounds may need a tombstone: only when the horizon
    /// lies above the floor (`remove_idle`, a budget step), never for the automatic sweep.
    fn may_leave_tombstones(self) -> bool {
        self.horizon > self.floor
    }

    /// Whether a tombstone at `idle_from` is covered by the floor and can go.
    fn drops_tombstone(self, idle_from: u64) -> bool {
        idle_from <= self.floor
    }
}

/// The policy every limiter shares: the window, the lateness tolerance, the removal floor,
/// the sweep schedule, the shard count and the key hasher.
pub(crate) struct KeyPolicy<W> {
    window: W,
    lateness_ticks: u64,
    floor: RemovalFloor,
    /// The time the limiter has observed (see [`floor`]).
    observed: floor::ObservedClock,
    /// A shard's creations the observed clock records: those whose count has these bits
    /// clear, one in [`OBSERVE_EVERY`] (or in the shard count if fewer: both powers of two, so
    /// the test is a mask, not a division on every creation).
    observe_mask: usize,
    /// A shard refuses to create state for a decision once it holds this many keys: its share
    /// of [`Options::max_keys`] (`usize::MAX`: no budget).
    shard_max_keys: usize,
    /// A shard sweeps itself once it holds this many keys: its share of
    /// [`Options::sweep_floor_keys`] (`usize::MAX` shares out as more than any shard holds).
    shard_floor_keys: usize,
    /// One window (the rolling buckets' reach) plus the lateness tolerance: how long after
    /// its creation a key is due for a look.
    recheck_ticks: u64,
    shards: usize,
    hasher: KeyHasher,
    /// [`Options::tick`], recorded in snapshots.
    tick_nanos: Option<u64>,
    /// The metrics every shape emits through this policy (zero-sized without the feature).
    metrics: crate::metrics::LimiterMetrics,
}

impl<W: Algorithm> KeyPolicy<W> {
    fn new(window: W, options: Options) -> Self {
        let lateness_ticks = options
            .lateness_ticks
            .unwrap_or(window.limit().window_ticks());
        let shards = options.shard_count();
        let recheck_ticks = window
            .fresh_after_hit_ticks()
            .saturating_add(lateness_ticks);
        Self {
            window,
            lateness_ticks,
            floor: RemovalFloor::new(),
            observed: floor::ObservedClock::new(),
            // Both powers of two (`shard_count` rounds up to one), so the smaller is one too.
            observe_mask: OBSERVE_EVERY.min(shards) - 1,
            shard_floor_keys: options.sweep_floor_keys.div_ceil(shards).max(1),
            shard_max_keys: if options.max_keys == usize::MAX {
                usize::MAX
            } else {
                options.max_keys.div_ceil(shards)
            },
            recheck_ticks,
            shards,
            hasher: process_hasher(),
            tick_nanos: options.tick_nanos,
            metrics: crate::metrics::LimiterMetrics::new(options.limiter_name),
        }
    }

    /// The removal floor: decisions below it on a newly created entry are refused.
    fn floor(&self) -> u64 {
        self.floor.get()
    }

    /// The shard of `key`.
    fn shard_of<K: Hash + ?Sized>(&self, key: &K) -> usize {
        shard_index(self.hasher.hash_one(key), self.shards)
    }

    /// Raises the removal floor for a sweep at `now` and returns the bounds the sweep applies.
    fn sweep_bounds(&self, now: u64) -> SweepBounds {
        SweepBounds {
            floor: self
                .floor
                .raise_for_sweep(now, self.observed.time(), self.lateness_ticks),
            horizon: now.min(MAX_TICK).saturating_sub(self.lateness_ticks),
        }
    }

    /// The removal watermark of state created now, given the key's tombstone (if any).
    fn watermark(&self, tombstone: Option<u64>) -> u64 {
        self.floor().max(tombstone.unwrap_or(0))
    }

    /// After a call at `now` created a key in a shard that created or installed
    /// `created_before` keys before it: counts it, and records `now` in the observed clock if
    /// this is one of the shard's creations it samples: one in [`OBSERVE_EVERY`] (one in the
    /// shard count if fewer), the shard's first included.
    #[inline]
    fn after_creation(&self, now: u64, created_before: usize) {
        self.metrics.key_created();
        if created_before & self.observe_mask == 0 {
            self.observe(now);
        }
    }

    /// Records a sampled creation or budget refusal at `now` in the observed clock, unless
    /// `now` lies below the removal floor: no caller within the lateness tolerance of real
    /// time is that late, so such a `now` is a clock far behind, and must not hold the
    /// observed time back (see [`floor`]).
    #[cold]
    fn observe(&self, now: u64) {
        if now >= self.floor() {
            self.observed.observe(now);
        }
    }

    /// Whether a key budget is set.
    #[inline]
    fn budgeted(&self) -> bool {
        self.shard_max_keys != usize::MAX
    }

    /// Whether a shard holding `keys` keys has reached its share of the key budget.
    #[inline]
    fn shard_full(&self, keys: usize) -> bool {
        keys >= self.shard_max_keys
    }

    /// The watermark a key with no state answers with, given its removal watermark: while
    /// its shard's budget is full (`full`), it is refused until one refusal reach plus the
    /// lateness tolerance from `now` (see [`Options::max_keys`]).
    fn unknown_key_watermark(&self, removal_watermark: u64, full: bool, now: u64) -> u64 {
        if full {
            removal_watermark.max(
                now.min(MAX_TICK)
                    .saturating_add(self.recheck_ticks)
                    .min(MAX_TICK),
            )
        } else {
            removal_watermark
        }
    }

    /// A decision on a key with no state was refused because its shard's budget was full:
    /// counts it, and records `now` in the observed clock if this refusal is one it samples
    /// (`refused_before` such refusals in the shard came before it): a full shard creates no
    /// keys, and its refusals must still move the floor, or its keys would never be fresh by
    /// it and the budget would never free.
    fn refused_by_budget(&self, now: u64, refused_before: usize) {
        self.metrics.refused_by_budget();
        if refused_before & self.observe_mask == 0 {
            self.observe(now);
        }
    }

    /// Whether a shard holding `keys` keys sweeps itself: at its share of
    /// [`Options::sweep_floor_keys`] and above.
    #[inline]
    fn shard_sweeps(&self, keys: usize) -> bool {
        keys >= self.shard_floor_keys
    }

    /// One sweep step (from [`Self::automatic_step`] or [`Self::budget_step_at`]) in a shard whose
    /// queue is `queue`, by a call that holds it throughout: looks at the keys due by it (see
    /// [`schedule::DueQueue::service`]). `look` removes a key if its state is fresh by the
    /// step's horizon (the floor for the automatic sweep, which so leaves no tombstone; a
    /// budget step's `now - D`, leaving one above the floor) and says what it found. Returns
    /// the keys removed.
    fn sweep_step<K>(
        &self,
        queue: &mut schedule::DueQueue<K>,
        step: SweepStep,
        mut look: impl FnMut(&K, SweepBounds) -> schedule::Look,
    ) -> usize {
        let removed = queue.service(
            step.trusted,
            step.requeue_after,
            self.lateness_ticks,
            self.recheck_ticks,
            |key| look(key, step.bounds),
        );
        self.after_looks(removed);
        removed
    }

    /// The first half of a sweep step on a queue shared behind a lock: takes the keys due by
    /// `step` (from [`Self::automatic_step`] or [`Self::budget_step_at`]) from `queue` into `taken`
    /// (see [`schedule::DueQueue::take_due`]); the caller looks at them ([`Self::look_at`])
    /// after releasing the lock.
    fn take_due<K>(
        &self,
        queue: &mut schedule::DueQueue<K>,
        step: SweepStep,
        taken: &mut schedule::TakenKeys<K>,
    ) -> SweepStep {
        queue.take_due(step.trusted, self.recheck_ticks, |key| taken.push(key));
        step
    }

    /// The looks of a sweep step whose keys are in `taken` (as in [`Self::sweep_step`]).
    /// Returns the keys removed; those found live stay in `taken`, to go back to the queue.
    fn look_at<K>(
        &self,
        taken: &mut schedule::TakenKeys<K>,
        step: SweepStep,
        mut look: impl FnMut(&K, SweepBounds) -> schedule::Look,
    ) -> usize {
        let removed = taken.look(|key| look(key, step.bounds));
        self.after_looks(removed);
        removed
    }

    /// Raises the floor for a step of the automatic sweep by the observed clock: its looks
    /// remove what is fresh by the floor, and it trusts the floor plus the lateness
    /// tolerance. The stepping call's own `now` does not cap the raise: the observed time is
    /// already one that most callers reached, and a step that fell to a call stamped far
    /// behind (with one shard, every eighth creation steps, and a client making every other
    /// creation would make every step) must still move the floor for everyone else.
    fn automatic_step(&self) -> SweepStep {
        let floor = self
            .floor
            .raise_for_sweep(u64::MAX, self.observed.time(), self.lateness_ticks);
        SweepStep {
            bounds: SweepBounds {
                horizon: floor,
                floor,
            },
            trusted: floor.saturating_add(self.lateness_ticks),
            requeue_after: floor.saturating_add(self.lateness_ticks),
        }
    }

    /// A sweep step for a decision at `now` on a key with no state whose shard's budget is
    /// full: it raises the floor as [`Self::automatic_step`] does, then takes the shard's keys due by
    /// `now` and removes those fresh by `now - D`, as `remove_idle(now)` would in this shard,
    /// each fresh only above the floor leaving a tombstone. A full budget trusts the refused
    /// caller's clock for its own shard's idle keys, as `remove_idle` trusts its caller's:
    /// otherwise, with nothing else going on, the observed time (a statistic of many
    /// callers) never moves and the budget never frees. A clock that runs ahead can make a
    /// full shard's keys go early; each is then refused below the tick its state is fresh
    /// from (its tombstone), never over-admitted, and keys that were never seen, keys of
    /// shards with room, and the floor are untouched.
    fn budget_step_at(&self, now: u64) -> SweepStep {
        let floor = self.automatic_step().bounds.floor;
        let now = now.min(MAX_TICK);
        SweepStep {
            bounds: SweepBounds {
                horizon: now.saturating_sub(self.lateness_ticks),
                floor,
            },
            trusted: now.max(floor.saturating_add(self.lateness_ticks)),
            requeue_after: floor.saturating_add(self.lateness_ticks),
        }
    }

    /// Counts the keys a sweep step's looks removed.
    fn after_looks(&self, removed: usize) {
        if removed > 0 {
            self.metrics.swept(removed);
            settle_after(removed);
        }
    }

    /// `remove_idle(now)`: every shard, under one raise of the floor. `step` sweeps the shard
    /// it is given and returns how many keys it removed.
    fn remove_idle(&self, now: u64, mut step: impl FnMut(usize, SweepBounds) -> usize) -> usize {
        let removed = self.metrics.timed_sweep(|| {
            let bounds = self.sweep_bounds(now);
            (0..self.shards).map(|shard| step(shard, bounds)).sum()
        });
        self.metrics.keys_removed(removed);
        removed
    }
}

impl<W: Algorithm> KeyPolicy<W> {
    /// `status` for a key with no state whose limit is `limit`: an empty window, as the
    /// watermark lets it be seen.
    fn status_of_unknown_key(
        &self,
        limit: Limit,
        watermark: u64,
        now: u64,
        n: u64,
    ) -> Result<Status, WeightError> {
        fits_limit(n, || limit)?;
        let empty = Status {
            count: 0,
            remaining: limit.max_weight(),
            retry_after_ticks: 0,
        };
        Ok(self.clamp_status(empty, watermark, now))
    }

    /// [`Self::status_of_unknown_key`] of every window of `limit` (weight 1).
    fn window_statuses_of_unknown_key(
        &self,
        limit: Limit,
        watermark: u64,
        now: u64,
    ) -> WindowStatuses {
        WindowStatuses::from_windows(limit.windows().map(|window| {
            let empty = Status {
                count: 0,
                remaining: window.max_requests(),
                retry_after_ticks: 0,
            };
            self.clamp_status(empty, watermark, now)
        }))
    }

    /// `allowed_n` for a key with no state whose limit is `limit`: what an empty window
    /// answers (room for any weight up to `max_requests`, for both algorithms), as the
    /// watermark lets it be seen, so that `check_and_hit_n` agrees.
    fn allowed_of_unknown_key(&self, limit: Limit, watermark: u64, now: u64, n: u64) -> bool {
        now >= watermark && n <= limit.max_weight()
    }

    /// A status as the decisions see it: nothing remains below the key's watermark.
    fn clamp_status(&self, status: Status, watermark: u64, now: u64) -> Status {
        if now < watermark {
            Status {
                remaining: 0,
                retry_after_ticks: status.retry_after_ticks.max(watermark - now),
                ..status
            }
        } else {
            status
        }
    }
}

#[cfg(all(test, not(slidelimit_loom)))]
mod tests {
    use std::hash::BuildHasher;

    /// Consecutive integer keys, five new ones a tick for 4,000 ticks, spread over 512 shards:
    /// under every one of 300 process seeds, each shard gets a new key at least every 2,000
    /// ticks (independent draws give about 1,000 at most). A shard sweeps only when it creates
    /// a key, so a longer gap is that long with its idle keys kept. The plain bits 32 and up of
    /// foldhash's output failed this for 5 of these seeds (one shard went the whole 4,000
    /// ticks without a key).
    #[test]
    fn consecutive_keys_reach_every_shard_under_every_seed() {
        const SHARDS: usize = 512;
        const TICKS: u64 = 4_000;
        const PER_TICK: u64 = 5;
        for seed in 0..300_u64 {
            let shared: &'static foldhash::SharedSeed =
                Box::leak(Box::new(foldhash::SharedSeed::from_u64(seed)));
            let hasher = foldhash::fast::SeedableRandomState::with_seed(
                seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                shared,
            );
            let mut last = [0_u64; SHARDS];
            let mut longest = 0;
            for tick in 0..TICKS {
                for j in 0..PER_TICK {
                    let shard = super::shard_index(hasher.hash_one(tick * PER_TICK + j), SHARDS);
                    longest = longest.max(tick - last[shard]);
                    last[shard] = tick;
                }
            }
            longest = last.iter().fold(longest, |most, &at| most.max(TICKS - at));
            assert!(
                longest <= 2_000,
                "seed {seed}: a shard went {longest} ticks without a new key"
            );
        }
    }
}
