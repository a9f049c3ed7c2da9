//! Keys in a concurrent map, each entry guarding its own window: the shape shared by the
//! lock-free limiter (an atomic window behind a [`Gate`](super::gate::Gate)) and the
//! per-key-lock limiter (a sequential window behind its own mutex).
//!
//! The entry type chooses the guard; everything else (creation, retries off retired entries,
//! watermarks, the automatic sweep) is here, once.

use std::hash::Hash;
use std::marker::PhantomData;

use super::map::KeyMap;
use super::{EntryWatermark, KeyPolicy, Options};
use crate::sync::retry_hint;
use crate::window::buckets::{BucketError, RollingBuckets};
use crate::window::{ring::ExactLog, Status, WeightError, Window, MAX_TICK};
use crate::{Limit, RateLimiter};

/// One key's guarded window in a [`ConcurrentKeys`] map.
pub trait KeyEntry: Send + Sync + 'static {
    /// The window algorithm inside.
    type Window: Window;
    /// Access to the window while the guard is held (pinned, or locked).
    type Access<'a>: WindowAccess
    where
        Self: 'a;
    /// The variant name reported by [`RateLimiter::name`].
    const NAME: &'static str;

    /// A fresh entry with an empty window and an unresolved watermark.
    fn new(window: &Self::Window) -> Self;

    /// The key's removal watermark as this entry sees it (decisions below it are refused):
    /// resolved on first use, see [`EntryWatermark`].
    fn watermark(&self) -> &EntryWatermark;

    /// Takes the guard; `None` if the entry is retired (the caller looks the key up again).
    fn enter(&self) -> Option<Self::Access<'_>>;

    /// True if `check_and_hit_n(now, n)` would certainly refuse, read without the guard
    /// (see [`crate::AtomicWindow::refuses_at_a_glance`]). An entry that can only be read
    /// under its guard answers false.
    ///
    /// Sound without the guard: a refusal changes nothing, and the hint only ever holds
    /// bounds derived from hits that were recorded, so a refusal read from an entry that a
    /// sweeper is retiring refuses a call that the live state would refuse too.
    fn refuses_unguarded(&self, now: u64, n: u64) -> bool {
        let _ = (now, n);
        false
    }

    /// Retires the entry if its window is fresh for every call at or after `horizon`, so that
    /// no operation can touch it again; returns the tick from which it was fresh.
    fn retire_if_fresh(&self, horizon: u64) -> Option<u64>;
}

/// The window operations available while an entry's guard is held.
pub trait WindowAccess {
    /// See [`crate::SequentialWindow::hit_n`].
    fn hit_n(&mut self, now: u64, n: u64);
    /// See [`crate::SequentialWindow::check_and_hit_n`].
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool;
    /// See [`crate::SequentialWindow::allowed_n`].
    fn allowed_n(&self, now: u64, n: u64) -> bool;
    /// See [`crate::SequentialWindow::status`].
    fn status(&self, now: u64) -> Status;
}

/// A keyed limiter over a concurrent map whose entries guard their own windows.
///
/// Use it through its aliases: [`crate::LockFreeLimiter`] and `slidelimit_per_key_lock::
/// PerKeyLockLimiter`.
pub struct ConcurrentKeys<K, E: KeyEntry> {
    map: KeyMap<K, E>,
    policy: KeyPolicy<E::Window>,
    _keys: PhantomData<fn(K)>,
}

impl<K, E> ConcurrentKeys<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: KeyEntry<Window = ExactLog>,
{
    /// A limiter with the exact sliding log and default [`Options`].
    #[must_use]
    pub fn new(limit: Limit) -> Self {
        Self::with_options(ExactLog::new(limit), Options::default())
    }
}

impl<K, E> ConcurrentKeys<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: KeyEntry<Window = RollingBuckets>,
{
    /// A limiter with [`RollingBuckets`] (`buckets` buckets over the window, lateness one
    /// bucket) and default [`Options`].
    ///
    /// # Errors
    /// See [`RollingBuckets::new`].
    pub fn bucketed(limit: Limit, buckets: u64) -> Result<Self, BucketError> {
        Ok(Self::with_options(
            RollingBuckets::new(limit, buckets)?,
            Options::default(),
        ))
    }
}

impl<K, E> ConcurrentKeys<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: KeyEntry,
{
    /// A limiter with any window algorithm and explicit [`Options`].
    #[must_use]
    pub fn with_options(window: E::Window, options: Options) -> Self {
        let policy = KeyPolicy::new(window, options);
        Self {
            map: KeyMap::new(policy.hasher.clone()),
            policy,
            _keys: PhantomData,
        }
    }

    /// Runs `op` on the entry of `key` (with its watermark) with its guard held, creating the
    /// entry if needed, then runs the automatic sweep if this call grew the map past its
    /// trigger.
    #[inline]
    fn with_entry<R>(
        &self,
        key: &K,
        now: u64,
        glance: impl FnOnce(u64, &E) -> Option<R>,
        mut op: impl FnMut(u64, &mut E::Access<'_>) -> R,
    ) -> R {
        // The hot path, kept small so it inlines: an existing entry that is not retired, or
        // a decision read off it at a glance.
        let found = self.map.get_with(key, |entry| {
            let watermark = self.watermark_of(key, entry);
            if let Some(result) = glance(watermark, entry) {
                return Some(result);
            }
            entry.enter().map(|mut access| op(watermark, &mut access))
        });
        match found {
            Some(Some(result)) => result,
            _ => self.with_new_or_retired_entry(key, now, op),
        }
    }

    /// [`Self::with_entry`] for a key with no entry, or whose entry was being retired.
    #[cold]
    #[inline(never)]
    fn with_new_or_retired_entry<R>(
        &self,
        key: &K,
        now: u64,
        mut op: impl FnMut(u64, &mut E::Access<'_>) -> R,
    ) -> R {
        let mut inserted_any = false;
        let result = loop {
            let (result, inserted) = self.map.get_or_insert_with(
                key,
                || E::new(&self.policy.window),
                |entry| {
                    let watermark = self.watermark_of(key, entry);
                    entry.enter().map(|mut access| op(watermark, &mut access))
                },
            );
            inserted_any |= inserted;
            if let Some(result) = result {
                break result;
            }
            // Retired: its sweeper is about to unlink it; look the key up again.
            retry_hint();
        };
        if inserted_any && self.policy.schedule.claim(self.map.len()) {
            self.sweep(now);
            self.policy.schedule.finish(self.map.len());
        }
        result
    }

    /// Runs `op` on the entry of `key` if there is one, never creating it.
    #[inline]
    fn with_existing<R>(
        &self,
        key: &K,
        glance: impl Fn(u64, &E) -> Option<R>,
        mut op: impl FnMut(u64, &E::Access<'_>) -> R,
    ) -> Option<R> {
        loop {
            match self.map.get_with(key, |entry| {
                let watermark = self.watermark_of(key, entry);
                if let Some(result) = glance(watermark, entry) {
                    return Some(result);
                }
                entry.enter().map(|access| op(watermark, &access))
            }) {
                None => return None,
                Some(Some(result)) => return Some(result),
                Some(None) => retry_hint(),
            }
        }
    }

    /// The watermark `entry` answers with, reading the key's from the table on first use.
    /// Call it only on an entry just found in the map (see [`EntryWatermark`]).
    #[inline]
    fn watermark_of(&self, key: &K, entry: &E) -> u64 {
        entry
            .watermark()
            .get_or_resolve(|| self.policy.watermark_of(key))
    }

    fn sweep(&self, now: u64) -> usize {
        let horizon = self.policy.horizon(now);
        self.map
            .sweep(|key, entry| match entry.retire_if_fresh(horizon) {
                Some(fresh_from) => {
                    // Before the unlink, so whoever re-creates the key sees the raised watermark.
                    self.policy.forget(key, fresh_from);
                    true
                }
                None => false,
            })
    }
}

#[cfg(slidelimit_loom)]
impl<K, E> ConcurrentKeys<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: KeyEntry,
{
    /// Runs `f` on the entry currently mapped for `key` (without pinning it), for the loom
    /// models' quiescent assertions: which entry survived, what its window and gate hold.
    /// Exists only under `cfg(slidelimit_loom)`.
    pub fn model_entry<R>(&self, key: &K, f: impl FnOnce(&E) -> R) -> Option<R> {
        self.map.get_with(key, f)
    }
}

impl<K, E> RateLimiter<K> for ConcurrentKeys<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: KeyEntry,
{
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn algorithm(&self) -> &'static str {
        self.policy.window.algorithm()
    }

    fn limit(&self) -> Limit {
        self.policy.window.limit()
    }

    fn hit_n(&self, key: &K, now: u64, n: u64) -> Result<(), WeightError> {
        let now = now.min(MAX_TICK);
        self.policy.window.check_weight(n)?;
        self.with_entry(key, now, |_, _| None, |_, window| window.hit_n(now, n));
        Ok(())
    }

    fn allowed_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError> {
        let now = now.min(MAX_TICK);
        self.policy.window.check_weight(n)?;
        let verdict = self.with_existing(
            key,
            |watermark, entry| {
                (now < watermark || entry.refuses_unguarded(now, n)).then_some(false)
            },
            |watermark, window| now >= watermark && window.allowed_n(now, n),
        );
        Ok(verdict.unwrap_or_else(|| self.policy.allows_unknown_key(key, now)))
    }

    fn check_and_hit_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError> {
        let now = now.min(MAX_TICK);
        self.policy.window.check_weight(n)?;
        Ok(self.with_entry(
            key,
            now,
            |watermark, entry| {
                (now < watermark || entry.refuses_unguarded(now, n)).then_some(false)
            },
            |watermark, window| now >= watermark && window.check_and_hit_n(now, n),
        ))
    }

    fn status(&self, key: &K, now: u64) -> Status {
        let now = now.min(MAX_TICK);
        self.with_existing(
            key,
            |_, _| None,
            |watermark, window| self.policy.clamp_status(window.status(now), watermark, now),
        )
        .unwrap_or_else(|| self.policy.status_of_unknown_key(key, now))
    }

    fn remove_idle(&self, now: u64) -> usize {
        let now = now.min(MAX_TICK);
        self.sweep(now)
    }

    fn tracked_keys(&self) -> usize {
        self.map.len()
    }
}
