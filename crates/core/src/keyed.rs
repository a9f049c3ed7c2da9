//! Keys and memory: per-key state created on first use, idle keys removed by an automatic
//! sweep and by `remove_idle`, and the removal watermarks that keep removal safe.
//!
//! The policy here is the one every limiter runs; the limiters differ only in how they guard
//! each key's window ([`concurrent`] for per-entry guards in a concurrent map, [`sequential`]
//! for one lock over a plain map).
//!
//! # Removal watermarks
//! A sweep at `now_s` removes a key only when its state is fresh (equal to an empty window) for
//! every call at or after `now_s - D`, `D` being the lateness tolerance. Removing it forgets
//! hits that a later call with an older timestamp would still have to count, so before the key
//! can be re-created the sweep raises a *removal watermark* to the tick from which the removed
//! state was fresh; `allowed` and `check_and_hit` below it are refused (a documented false
//! negative), `hit` always records. Watermarks are kept per key hash in a small fixed table,
//! not one global value: a collision only refuses more, and one far-future timestamp that
//! drives a sweep cannot make every later call refused (see [`Options`]). A re-created key
//! copies its watermark into its new state, so the hot path reads it from the entry it
//! already holds instead of hashing the key again.

pub mod concurrent;
mod map;
pub mod sequential;

use std::hash::{BuildHasher, Hash};

use crate::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::window::{Window, MAX_TICK};

/// How a limiter manages its keys. Build with [`Options::default`] and the setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    lateness_ticks: Option<u64>,
    sweep_floor_keys: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            lateness_ticks: None,
            sweep_floor_keys: 4096,
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

    /// Below this many tracked keys the limiter never sweeps on its own; above it, it sweeps
    /// whenever the key map has doubled since the last sweep. Default 4096. `usize::MAX`
    /// turns the automatic sweep off (then only `remove_idle` removes keys).
    #[must_use]
    pub const fn sweep_floor_keys(mut self, keys: usize) -> Self {
        self.sweep_floor_keys = keys;
        self
    }
}

/// The hasher of the key maps and the watermark table: foldhash, randomly seeded once per
/// process, so attacker-chosen keys cannot aim at one bucket, while every limiter in the
/// process hashes alike and so shares watermark-slot collisions: that keeps the variants'
/// answers identical on any trace, removals included.
#[cfg(not(slidelimit_loom))]
pub(crate) type KeyHasher = foldhash::fast::RandomState;
/// Under loom the seed is fixed, so that every explored execution walks the map alike.
#[cfg(slidelimit_loom)]
pub(crate) type KeyHasher = foldhash::fast::FixedState;

#[cfg(not(slidelimit_loom))]
fn process_hasher() -> KeyHasher {
    static HASHER: std::sync::OnceLock<KeyHasher> = std::sync::OnceLock::new();
    HASHER.get_or_init(KeyHasher::default).clone()
}

#[cfg(slidelimit_loom)]
fn process_hasher() -> KeyHasher {
    KeyHasher::default()
}

/// Slots in the removal-watermark table (a power of two; 8 KiB).
const WATERMARK_SLOTS: usize = 1024;

/// Per-key-hash removal watermarks (see the module docs).
struct Watermarks {
    slots: Box<[AtomicU64]>,
}

impl Watermarks {
    fn new() -> Self {
        Self {
            slots: (0..WATERMARK_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    #[inline]
    fn slot(&self, key_hash: u64) -> &AtomicU64 {
        // The high bits: the maps index their tables with the low ones.
        &self.slots[(key_hash >> (64 - WATERMARK_SLOTS.trailing_zeros())) as usize]
    }

    #[inline]
    fn get(&self, key_hash: u64) -> u64 {
        // Acquire: pairs with the AcqRel fetch_max in `raise`, which a sweep runs before it
        // retires the entry; a caller that saw the retirement (or the removal) sees this.
        self.slot(key_hash).load(Ordering::Acquire)
    }

    fn raise(&self, key_hash: u64, tick: u64) {
        // AcqRel: Release publishes the raise before the retire/removal that follows it;
        // fetch_max keeps watermarks monotone under concurrent sweeps.
        self.slot(key_hash).fetch_max(tick, Ordering::AcqRel);
    }
}

/// The removal watermark an entry answers with: its key's watermark, read once, lazily, by
/// the first caller that reaches the entry through the map.
///
/// Not when the entry is built: the map may publish a value long after it was built (a
/// get-or-insert that retries, or a thread descheduled before its insert), and a sweep may
/// remove an earlier entry of the key and raise the watermark in between. A caller that found
/// this entry in the map found it after every earlier entry of the key was unlinked, so its
/// read of the table sees every raise those removals made.
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

    /// The watermark, reading it with `resolve` on first use.
    #[inline]
    pub(crate) fn get_or_resolve(&self, resolve: impl FnOnce() -> u64) -> u64 {
        // Relaxed: the value is a bound read from the table by a caller that already
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
        // later one may include a colliding key's raise: only more conservative).
        self.word.fetch_max(stored, Ordering::Relaxed).max(stored) - 1
    }
}

/// When the automatic sweep runs: when the map has doubled since the last one, above a floor.
struct SweepSchedule {
    floor_keys: usize,
    /// The key count that triggers the next sweep; `usize::MAX` while one is running.
    next_at: AtomicUsize,
}

impl SweepSchedule {
    fn new(floor_keys: usize) -> Self {
        Self {
            floor_keys,
            next_at: AtomicUsize::new(floor_keys),
        }
    }

    /// Called after an insert grew the map to `tracked_keys`; true if this caller must sweep.
    fn claim(&self, tracked_keys: usize) -> bool {
        // Relaxed: a trigger count; the sweep's safety rests on the seals, not on this.
        let next_at = self.next_at.load(Ordering::Relaxed);
        tracked_keys >= next_at
            && next_at != usize::MAX
            // Relaxed both ways: the CAS only elects one sweeper; it publishes no data.
            && self
                .next_at
                .compare_exchange(next_at, usize::MAX, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Called by the elected sweeper when it is done, with the keys left.
    fn finish(&self, tracked_keys: usize) {
        let next = tracked_keys.saturating_mul(2).max(self.floor_keys);
        // Relaxed: only the elected sweeper writes here while the trigger is held.
        self.next_at.store(next, Ordering::Relaxed);
    }
}

/// The policy every limiter shares: the window, the lateness tolerance, the watermarks, the
/// sweep schedule and the key hasher.
pub(crate) struct KeyPolicy<W> {
    window: W,
    lateness_ticks: u64,
    watermarks: Watermarks,
    schedule: SweepSchedule,
    hasher: KeyHasher,
}

impl<W: Window> KeyPolicy<W> {
    fn new(window: W, options: Options) -> Self {
        let lateness_ticks = options
            .lateness_ticks
            .unwrap_or(window.limit().window_ticks());
        Self {
            window,
            lateness_ticks,
            watermarks: Watermarks::new(),
            schedule: SweepSchedule::new(options.sweep_floor_keys),
            hasher: process_hasher(),
        }
    }

    /// The removal watermark of `key` in the table: decisions below it are refused, because a
    /// sweep forgot hits of this key (or of one sharing its slot) that would still count. A key
    /// with state reads it once, when its state is first used, and keeps it there.
    fn watermark_of<K: Hash>(&self, key: &K) -> u64 {
        self.watermarks.get(self.hasher.hash_one(key))
    }

    /// Records that a sweep removed `key`, whose state was fresh from tick `fresh_from`.
    /// Must happen before the key can be re-created (before the unlink).
    fn forget<K: Hash>(&self, key: &K, fresh_from: u64) {
        self.watermarks.raise(self.hasher.hash_one(key), fresh_from);
    }

    /// The oldest tick a sweep at `now` must still answer exactly for.
    fn horizon(&self, now: u64) -> u64 {
        now.min(MAX_TICK).saturating_sub(self.lateness_ticks)
    }
}

impl<W: Window> KeyPolicy<W> {
    /// `allowed` for a key with no state: an empty window, unless below its watermark.
    fn allows_unknown_key<K: Hash>(&self, key: &K, now: u64) -> bool {
        now >= self.watermark_of(key)
    }

    /// `status` for a key with no state: an empty window, as the watermark lets it be seen.
    fn status_of_unknown_key<K: Hash>(&self, key: &K, now: u64) -> crate::Status {
        let empty = crate::Status {
            count: 0,
            remaining: self.window.limit().max_requests(),
            retry_after_ticks: 0,
        };
        self.clamp_status(empty, self.watermark_of(key), now)
    }

    /// A status as the decisions see it: nothing remains below the key's watermark.
    fn clamp_status(&self, status: crate::Status, watermark: u64, now: u64) -> crate::Status {
        if now < watermark {
            crate::Status {
                remaining: 0,
                retry_after_ticks: status.retry_after_ticks.max(watermark - now),
                ..status
            }
        } else {
            status
        }
    }
}
