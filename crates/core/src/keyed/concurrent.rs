//! Keys in a concurrent map, each entry guarding its own window: the shape shared by the
//! lock-free limiter (an atomic window that a sweeper seals) and the per-key-lock limiter (a
//! sequential window behind its own mutex).
//!
//! The entry type chooses the guard; everything else (creation, retries off retired entries,
//! watermarks, the automatic sweep) is here, once.

use std::borrow::Borrow;
use std::hash::Hash;
use std::marker::PhantomData;

use super::limits::{LimitResolver, LimitTable};
use super::map::{KeyMap, Pinned};
use super::schedule::{self, Look, ShardBook, TakenKeys};
use super::{
    fits_limit, EntryWatermark, KeyPolicy, Options, SweepBounds, SweepStep, WEIGHT_ONE_FITS,
};
use crate::limit::Limit;
use crate::limiter::RateLimiter;
use crate::snapshot::{group_usage, saved_key, Conversion, Restored, Snapshot, SnapshotError};
use crate::sync::retry_hint;
use crate::window::buckets::{BucketError, RollingBuckets};
use crate::window::ring::ExactLog;
use crate::window::state::WindowState;
use crate::window::{Algorithm, Retired, Status, WeightError, WindowStatuses};

/// One key's guarded window in a [`EntryGuardedLimiter`] map.
///
/// Every operation answers `Err(Retired)` on an entry that a sweeper has retired (or is
/// retiring): it decided and recorded nothing, and the caller looks the key up again.
pub trait GuardedEntry: Send + Sync + 'static {
    /// The window algorithm inside.
    type Algorithm: Algorithm;
    /// The variant name reported by [`RateLimiter::name`].
    const NAME: &'static str;
    /// What sealing the entry for growth overwrote (see
    /// [`crate::window::AtomicWindow::Outgrown`]); `()` for entries that never grow.
    type Outgrown: Copy;

    /// A fresh entry with an empty window and an unresolved watermark, built under limits
    /// version `limits_version` for a key whose first call is at `now` (see
    /// [`Algorithm::new_atomic_at`]).
    fn new(window: &Self::Algorithm, limits_version: u64, now: u64) -> Self;

    /// An entry whose window holds `state` (converted for `window`, see
    /// [`crate::window::state`]) and whose watermark is already resolved to `watermark`: the
    /// replacement of a retired entry (a limit change) or a restored one.
    fn from_state(
        window: &Self::Algorithm,
        state: &WindowState,
        limits_version: u64,
        watermark: u64,
    ) -> Self;

    /// The limits version this entry's limit is current for (see [`super::limits`]).
    fn limits_version(&self) -> u64;

    /// Records that this entry's limit is still the key's limit at `version`.
    fn confirm_limits_version(&self, version: u64);

    /// The limit this entry's window enforces.
    fn limit(&self) -> Limit;

    /// The window's content at one moment, while other threads may decide.
    ///
    /// # Errors
    /// [`Retired`]: look the key up again.
    fn export(&self) -> Result<WindowState, Retired>;

    /// Retires the entry for good, whatever its window holds, and returns the window's
    /// content, so that an entry built from it can take its place. `None`: someone else
    /// retired it (or is retiring it); nothing changed.
    fn retire_for_swap(&self) -> Option<WindowState>;

    /// The key's removal watermark as this entry sees it (decisions below it are refused):
    /// resolved on first use, see [`EntryWatermark`].
    fn watermark(&self) -> &EntryWatermark;

    /// See [`crate::raw::SequentialWindow::hit_n`].
    ///
    /// # Errors
    /// [`Retired`]: nothing was recorded; look the key up again.
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired>;
    /// See [`crate::raw::SequentialWindow::check_and_hit_n`].
    ///
    /// # Errors
    /// [`Retired`]: nothing was decided or recorded; look the key up again.
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired>;
    /// See [`crate::raw::SequentialWindow::allowed_n`].
    ///
    /// # Errors
    /// [`Retired`]: look the key up again.
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired>;
    /// See [`crate::raw::SequentialWindow::status_n`].
    ///
    /// # Errors
    /// [`Retired`]: look the key up again.
    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired>;
    /// See [`crate::raw::SequentialWindow::window_statuses`].
    ///
    /// # Errors
    /// [`Retired`]: look the key up again.
    fn window_statuses(&self, now: u64, n: u64) -> Result<WindowStatuses, Retired>;

    /// Retires the entry if its window is fresh for every call at or after `horizon`, so that
    /// no operation records anything in it again; returns the tick from which it was fresh.
    fn retire_if_idle(&self, horizon: u64) -> Option<u64>;

    /// The tick from which the window is fresh, as far as a look without retiring it says:
    /// when the automatic sweep looks at the key again (see
    /// [`crate::window::AtomicWindow::fresh_from_hint`]).
    fn idle_from_hint(&self) -> u64;

    /// The automatic sweep's look at the entry: [`Self::retire_if_idle`], and if that did not
    /// retire it, [`Self::idle_from_hint`] for when to look again. `Ok`: retired, fresh from
    /// that tick; `Err`: left as it was, fresh from that tick as far as this look tells. An
    /// entry whose look takes a lock overrides it to take the lock once.
    #[inline]
    fn retire_or_hint(&self, horizon: u64) -> Result<u64, u64> {
        self.retire_if_idle(horizon)
            .ok_or_else(|| self.idle_from_hint())
    }

    /// Whether an operation that answered `Err(Retired)` did so because the window needs a
    /// larger form (see [`crate::window::AtomicWindow::needs_slots`]): the limiter then
    /// replaces the entry by its grown form ([`Self::seal_for_growth`], [`Self::grown`]).
    /// False for entries that never do.
    fn needs_slots(&self) -> bool {
        false
    }

    /// Retires the entry for good so that [`Self::grown`] can replace it (see
    /// [`crate::window::AtomicWindow::seal_for_growth`]); `None` if someone else retired it,
    /// or it has no smaller form.
    fn seal_for_growth(&self) -> Option<Self::Outgrown> {
        None
    }

    /// The entry that replaces this one, sealed by [`Self::seal_for_growth`]: the same limit
    /// and limits version, watermark `watermark`, the window in its full form holding exactly
    /// what this one held.
    fn grown(&self, outgrown: Self::Outgrown, watermark: u64) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = (outgrown, watermark);
        None
    }
}

/// A keyed limiter over a concurrent map whose entries guard their own windows.
///
/// Use it through its aliases: [`crate::LockFreeLimiter`] and `slidelimit_per_key_lock::
/// PerKeyLockLimiter`.
pub struct EntryGuardedLimiter<K, E: GuardedEntry> {
    map: KeyMap<K, E>,
    /// Keys a sweep removed while their state was fresh only from a tick above the removal
    /// floor (see [`super::Tombstone`]), in the same shards as `map`.
    tombstones: KeyMap<K, super::Tombstone>,
    /// Each shard's key count and due queue (see [`super::schedule`]).
    books: Box<[ShardBook<K>]>,
    policy: KeyPolicy<E::Algorithm>,
    limits: LimitTable<K, E::Algorithm>,
    _keys: PhantomData<fn(K)>,
}

/// Why the hot path's lookup could not answer: the entry is retired, or built under an older
/// limits version.
enum Miss {
    Retired,
    StaleLimit,
}

impl<K, E> EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry<Algorithm = ExactLog>,
{
    /// A limiter with the exact sliding log and default [`Options`].
    #[must_use]
    pub fn new(limit: Limit) -> Self {
        Self::with_options(ExactLog::new(limit), Options::default())
    }
}

impl<K, E> EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry<Algorithm = RollingBuckets>,
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

impl<K, E> EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry,
{
    /// A limiter with any window algorithm and explicit [`Options`].
    #[must_use]
    pub fn with_options(window: E::Algorithm, options: Options) -> Self {
        let policy = KeyPolicy::new(window.clone(), options);
        Self {
            map: KeyMap::new(policy.hasher.clone(), policy.shards),
            tombstones: KeyMap::new(policy.hasher.clone(), policy.shards),
            books: (0..policy.shards).map(|_| ShardBook::new()).collect(),
            limits: LimitTable::new(window, &policy.hasher, policy.shards),
            policy,
            _keys: PhantomData,
        }
    }

    /// The limiter with per-key limits from `resolver`: `Some(limit)` gives a key its own
    /// limit, `None` the default. Consulted when a key's state is created and after a limit
    /// change, never on the hot path; [`crate::LimitControl::set_limit_for`] overrides it.
    #[must_use]
    pub fn with_limit_resolver(
        mut self,
        resolver: impl Fn(&K) -> Option<Limit> + Send + Sync + 'static,
    ) -> Self {
        self.limits
            .set_resolver(std::sync::Arc::new(resolver) as LimitResolver<K>);
        self
    }

    /// Runs `op` on the entry of `key` with the watermark it answers with, creating the entry
    /// if needed, then runs the automatic sweep if this call grew the map past its trigger.
    /// `BUDGETED` (a decision): a key with no entry in a shard whose key budget stays full
    /// gets `R::default()` (a refusal) instead (see [`Options::max_keys`]).
    ///
    /// The hot path, kept small so it inlines: one lookup, then `op` on the entry found.
    #[inline]
    fn with_entry<const BUDGETED: bool, Q, R: Default>(
        &self,
        key: &Q,
        now: u64,
        op: impl Fn(u64, &E) -> Result<R, Retired>,
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let version = self.limits.version();
        let missed = self.map.get_or_pinned(key, |entry| {
            if entry.limits_version() != version {
                return Err(Miss::StaleLimit);
            }
            op(self.watermark_of(key, entry), entry).map_err(|Retired| {
                // A window that needs its larger form grows from this lookup, so the look
                // below finds the grown entry at once (not after failing on it once more:
                // about 250 of the ~1,740 instructions a key's growth cost).
                if entry.needs_slots() {
                    self.grow(key, entry);
                }
                Miss::Retired
            })
        });
        match missed {
            Ok(result) => result,
            // The key has state (being retired or replaced): the budget does not apply.
            Err((Some(Miss::Retired | Miss::StaleLimit), pinned)) => {
                self.with_new_or_retired_entry::<false, _, _>(&pinned, key, now, op)
            }
            Err((None, pinned)) => {
                self.with_new_or_retired_entry::<BUDGETED, _, _>(&pinned, key, now, op)
            }
        }
    }

    /// `Ok` if `entry`'s limit is the key's limit at limits version `version` (confirming
    /// it when only the version moved); otherwise replaces the entry by one built from its
    /// state under the key's current limit and answers `Err(Retired)`: look the key up
    /// again.
    #[inline]
    fn ensure_current_limit<Q>(&self, key: &Q, entry: &E, version: u64) -> Result<(), Retired>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if entry.limits_version() == version {
            return Ok(());
        }
        self.refresh_limit(key, entry)
    }

    /// The key's current limits version and window if `entry`'s limit is no longer the key's;
    /// otherwise confirms `entry` at the current version and gives `None`.
    fn changed_limit<Q>(&self, key: &Q, entry: &E) -> Option<(u64, E::Algorithm)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let (version, window) = self.limits.resolve(key);
        if entry.limit() == window.limit() {
            entry.confirm_limits_version(version);
            return None;
        }
        Some((version, window))
    }

    #[cold]
    #[inline(never)]
    fn refresh_limit<Q>(&self, key: &Q, entry: &E) -> Result<(), Retired>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Some((version, window)) = self.changed_limit(key, entry) else {
            return Ok(());
        };
        self.replace_entry(key, entry, |state, watermark| {
            E::from_state(&window, state, version, watermark)
        });
        Err(Retired)
    }

    /// Replaces `entry`, whose window needs a larger form than it has (a key's inline ring
    /// meeting its second hit, see [`GuardedEntry::needs_slots`]), by the same entry in the
    /// full form, through the replacement handshake: retire it for good, then swap by pointer
    /// identity. If someone else retired it first nothing happens; the caller looks again
    /// either way.
    #[cold]
    #[inline(never)]
    fn grow<Q>(&self, key: &Q, entry: &E)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let watermark = self.watermark_of(key, entry);
        let Some(outgrown) = entry.seal_for_growth() else {
            return;
        };
        // Built again only if papaya's replacement has to retry (the first build went into
        // a failed attempt).
        let mut first = entry.grown(outgrown, watermark);
        let replaced = self.map.replace_same(key, entry, || {
            first
                .take()
                .or_else(|| entry.grown(outgrown, watermark))
                .expect("an entry sealed for growth has a grown form")
        });
        debug_assert!(
            replaced,
            "a retired entry is unlinked or replaced only by its retirer"
        );
    }

    /// Replaces `entry` (the entry of `key`, just found in the map) by `make(its state, its
    /// watermark)`, through the removal handshake: retire it for good (no write lands in it
    /// afterwards), then swap the new entry in by pointer identity. If someone else retired
    /// it first (a sweeper, another replacement) nothing happens; the caller looks again.
    fn replace_entry<Q>(&self, key: &Q, entry: &E, make: impl Fn(&WindowState, u64) -> E) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let watermark = self.watermark_of(key, entry);
        if cfg!(slidelimit_loom_mutant = "swap_without_retire") {
            // Deliberately broken for the loom negative control: copies the state without
            // retiring the entry, so a write between the copy and the swap is lost.
            return entry.export().is_ok_and(|state| {
                self.map
                    .replace_same(key, entry, || make(&state, watermark))
            });
        }
        let Some(state) = entry.retire_for_swap() else {
            return false;
        };
        let replaced = self
            .map
            .replace_same(key, entry, || make(&state, watermark));
        debug_assert!(
            replaced,
            "a retired entry is unlinked or replaced only by its retirer"
        );
        replaced
    }

    /// Gives `key` the state `state` under its current limit, with removal watermark
    /// `watermark`: a new entry, or one that replaces the key's entry through
    /// [`Self::replace_entry`].
    fn install(&self, key: &K, state: &WindowState, watermark: u64, now: u64) {
        loop {
            let (version, window) = self.limits.resolve(key);
            let make = || E::from_state(&window, state, version, watermark);
            let done = match self
                .map
                .get_with(key, |entry| self.replace_entry(key, entry, |_, _| make()))
            {
                Some(replaced) => replaced,
                None => {
                    let inserted = self.map.get_or_insert_with(key, make, |_| ()).1;
                    if inserted {
                        self.after_install(key, now);
                    }
                    inserted
                }
            };
            if done {
                return;
            }
            retry_hint();
        }
    }

    /// [`Self::with_entry`] for a key with no entry, or whose entry was being retired.
    #[cold]
    #[inline(never)]
    fn with_new_or_retired_entry<const BUDGETED: bool, Q, R: Default>(
        &self,
        pinned: &Pinned<'_, K, E>,
        key: &Q,
        now: u64,
        op: impl Fn(u64, &E) -> Result<R, Retired>,
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if BUDGETED && self.policy.budgeted() {
            let shard = self.policy.shard_of(key);
            if self.full_after_reclaim(shard, now) {
                let refused_before = self.books[shard].count_refusal();
                self.policy.refused_by_budget(now, refused_before);
                // The refusal (`false` for `check_and_hit`).
                return R::default();
            }
        }
        let mut insertions = 0;
        let result = loop {
            let version = self.limits.version();
            let (result, inserted) = pinned.get_or_insert_with(
                key,
                || {
                    self.limits
                        .with_resolved(key, |version, window| E::new(window, version, now))
                },
                |entry| {
                    self.ensure_current_limit(key, entry, version)?;
                    op(self.watermark_of(key, entry), entry).inspect_err(|_| {
                        if entry.needs_slots() {
                            self.grow(key, entry);
                        }
                    })
                },
            );
            insertions += usize::from(inserted);
            if let Ok(result) = result {
                break result;
            }
            // Retired: its sweeper is about to unlink it (or to give it back); look again.
            retry_hint();
        };
        if insertions > 0 {
            self.after_creation(key, now, insertions);
        }
        result
    }

    /// After a call at `now` created the entry of `key` (`insertions` times: a sweep may
    /// have removed its first one before it decided): counts it in its shard, and if the
    /// shard sweeps itself, queues the key and takes one step of the automatic sweep there.
    /// Writes only the shard's words (see [`super::schedule`]).
    fn after_creation<Q>(&self, key: &Q, now: u64, insertions: usize)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let shard = self.policy.shard_of(key);
        let book = &self.books[shard];
        let created = book.count_in(insertions);
        self.policy.after_creation(now, created.created_before);
        if !created.armed && !self.policy.shard_sweeps(created.keys) {
            return;
        }
        let steps = schedule::steps_at(created.created_before, created.keys);
        // The buffer only where a step may follow: this call arms the shard (it found the
        // queue unarmed), or its count says it steps. Most creations of an armed shard only
        // push their key.
        let mut taken = (steps || !created.armed).then(TakenKeys::new);
        let step = book.with_queue(
            now,
            || self.held_keys(shard),
            |queue, arming| {
                if !arming {
                    queue.push(key.to_owned(), now, self.policy.recheck_ticks);
                }
                let taken = taken.as_mut().filter(|_| arming || steps)?;
                self.policy.shard_sweeps(book.keys()).then(|| {
                    self.policy
                        .take_due(queue, self.policy.automatic_step(), taken)
                })
            },
        );
        if let (Some(step), Some(taken)) = (step, taken.as_mut()) {
            self.finish_sweep_step(book, taken, step);
        }
    }

    /// The rest of a sweep step whose keys were taken under `book`'s lock: the looks, with the
    /// lock released (a look unlinks and retires entries, and may free a reclamation batch:
    /// no other creator of the shard waits on that), then the keys found live back in the
    /// queue under the lock again.
    fn finish_sweep_step(&self, book: &ShardBook<K>, taken: &mut TakenKeys<K>, step: SweepStep) {
        let removed = self
            .policy
            .look_at(taken, step, |key, bounds| self.look(key, bounds));
        book.removed(removed);
        book.put_back(
            taken,
            step.requeue_after,
            self.policy.lateness_ticks,
            self.policy.recheck_ticks,
        );
    }

    /// After a restore or an import installed a new entry for `key`: counts it, and queues
    /// it if its shard keeps a queue.
    fn after_install(&self, key: &K, now: u64) {
        let book = &self.books[self.policy.shard_of(key)];
        if book.count_in(1).armed {
            book.with_queue(now, Vec::new, |queue, arming| {
                if !arming {
                    queue.push(key.clone(), now, self.policy.recheck_ticks);
                }
            });
        }
    }

    /// Whether shard `shard` is at its share of the key budget after a budget step at `now`
    /// (which removes what is idle by `now - D`, as `remove_idle(now)` would; see
    /// [`Options::max_keys`]).
    fn full_after_reclaim(&self, shard: usize, now: u64) -> bool {
        let book = &self.books[shard];
        if !self.policy.shard_full(book.keys()) {
            return false;
        }
        let mut taken = TakenKeys::new();
        let step = book.with_queue(
            now,
            || self.held_keys(shard),
            |queue, _| {
                self.policy
                    .take_due(queue, self.policy.budget_step_at(now), &mut taken)
            },
        );
        self.finish_sweep_step(book, &mut taken, step);
        self.policy.shard_full(book.keys())
    }

    /// The watermark a key with no state answers with at `now`: its removal watermark, or
    /// later while its shard's budget is full.
    fn unknown_key_watermark<Q>(&self, key: &Q, now: u64) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let full = self.policy.budgeted()
            && self
                .policy
                .shard_full(self.books[self.policy.shard_of(key)].keys());
        self.policy
            .unknown_key_watermark(self.removal_watermark(key), full, now)
    }

    /// The keys of shard `shard`, for arming its queue (which orders them).
    fn held_keys(&self, shard: usize) -> Vec<K> {
        let mut held = Vec::new();
        self.map
            .for_each_in_shard(shard, |key, _| held.push(key.clone()));
        held
    }

    /// A sweep step's look at a due key: removes its entry if its state is fresh by the
    /// bounds' horizon, leaving the tombstone they ask for (a budget step's, above the floor)
    /// before the unlink; drops its tombstone once the floor covers it if `remove_idle` or a
    /// budget step removed it.
    fn look(&self, key: &K, bounds: SweepBounds) -> Look {
        let mut idle_from = bounds.horizon();
        let mut tombstone = None;
        let removed = self.map.remove_if_with(key, |entry| {
            if cfg!(slidelimit_loom_mutant = "look_without_seal") {
                // Deliberately broken for the loom negative control: judges the entry by a
                // look at its words and unlinks it without retiring it.
                return entry.idle_from_hint() <= bounds.horizon();
            }
            match entry.retire_or_hint(bounds.horizon()) {
                Ok(fresh_from) => {
                    if !bounds.may_leave_tombstones() {
                        // The automatic sweep's common case: nothing more to do.
                        return true;
                    }
                    // Written before the unlink (papaya unlinks after this verdict), so that
                    // whoever re-creates the key finds it, as in `sweep_shard`.
                    tombstone = bounds.tombstone_for(fresh_from);
                    if let Some(tombstone) = tombstone {
                        if !cfg!(slidelimit_loom_mutant = "tombstone_after_unlink") {
                            self.leave_tombstone(key, tombstone);
                        }
                    }
                    true
                }
                Err(hint) => {
                    idle_from = hint;
                    false
                }
            }
        });
        if cfg!(slidelimit_loom_mutant = "tombstone_after_unlink") {
            // Deliberately broken for the loom negative control: the tombstone after the
            // unlink.
            if let (Some(true), Some(idle_from)) = (removed, tombstone) {
                self.leave_tombstone(key, idle_from);
            }
        }
        match removed {
            Some(true) => match tombstone {
                Some(idle_from) => Look::Tombstoned { idle_from },
                None => Look::Removed,
            },
            Some(false) => Look::Live { idle_from },
            None => {
                let dropped = self.tombstones.remove_if_with(key, |tombstone| {
                    idle_from = tombstone.idle_from();
                    bounds.drops_tombstone(idle_from)
                });
                match dropped {
                    // A tombstone above the floor: look again once the floor may cover it.
                    Some(false) => Look::Live { idle_from },
                    None | Some(true) => Look::Gone,
                }
            }
        }
    }

    /// Leaves (or raises) the tombstone of `key`, removed while fresh only from `idle_from`,
    /// above the floor; written before the key's entry is unlinked.
    fn leave_tombstone(&self, key: &K, idle_from: u64) {
        self.tombstones.get_or_insert_with(
            key,
            || super::Tombstone::new(idle_from),
            |tombstone| tombstone.raise(idle_from),
        );
    }

    /// Keys tracked: the shards' counts summed.
    fn tracked(&self) -> usize {
        self.books.iter().map(ShardBook::keys).sum()
    }

    /// Runs a read-only `op` on the entry of `key` if there is one, as the key's current
    /// limit sees it, never creating or replacing an entry: on an entry built for an older
    /// limit, `op` runs on a converted copy, so a read changes no later answer (the key's
    /// next write converts the entry itself, from the same state).
    #[inline]
    fn read_existing<Q, R>(&self, key: &Q, op: impl Fn(u64, &E) -> Result<R, Retired>) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        loop {
            let version = self.limits.version();
            match self.map.get_with(key, |entry| {
                let watermark = self.watermark_of(key, entry);
                if entry.limits_version() == version {
                    return op(watermark, entry);
                }
                self.read_under_current_limit(key, entry, watermark, &op)
            }) {
                None => return None,
                Some(Ok(result)) => return Some(result),
                Some(Err(Retired)) => retry_hint(),
            }
        }
    }

    /// [`Self::read_existing`] on an entry built under an older limits version: `op` on the
    /// entry itself if its limit is still the key's (confirming it), else on a copy converted
    /// to the key's current limit.
    #[cold]
    #[inline(never)]
    fn read_under_current_limit<Q, R>(
        &self,
        key: &Q,
        entry: &E,
        watermark: u64,
        op: &impl Fn(u64, &E) -> Result<R, Retired>,
    ) -> Result<R, Retired>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Some((version, window)) = self.changed_limit(key, entry) else {
            return op(watermark, entry);
        };
        let converted = E::from_state(&window, &entry.export()?, version, watermark);
        op(watermark, &converted)
    }

    /// The watermark `entry` answers with, resolved on first use. Call it only on an entry
    /// just found in the map (see [`EntryWatermark`]).
    #[inline]
    fn watermark_of<Q>(&self, key: &Q, entry: &E) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        entry
            .watermark()
            .get_or_resolve(|| self.removal_watermark(key))
    }

    /// The removal watermark of `key` for state created now: its tombstone, if a sweep left
    /// one, and the removal floor. The tombstone is read first: a sweep drops one only after
    /// raising the floor past it, so a caller that misses a dropped tombstone sees that floor.
    fn removal_watermark<Q>(&self, key: &Q) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let tombstone = self.tombstones.get_with(key, super::Tombstone::idle_from);
        self.policy.watermark(tombstone)
    }

    /// Sets the key and tombstone gauges (feature `metrics`) after a restore or an import.
    fn report_held(&self) {
        self.policy.metrics.tracked(self.tracked());
        self.policy
            .metrics
            .tombstones_held(|| self.tombstones.len());
    }

    /// One step of a sweep: drops the shard's tombstones the floor covers, then removes its
    /// entries fresh by the horizon, each leaving the tombstone `bounds` asks for before it is
    /// unlinked.
    fn sweep_shard(&self, shard: usize, bounds: SweepBounds) -> usize {
        self.tombstones.sweep_shard(shard, |_, tombstone| {
            bounds.drops_tombstone(tombstone.idle_from())
        });
        let leave_tombstone = |key: &K, idle_from: u64| self.leave_tombstone(key, idle_from);
        // Used only by the loom mutant below.
        let mut left_for_later = Vec::new();
        let removed = self.map.sweep_shard(shard, |key, entry| {
            let Some(idle_from) = entry.retire_if_idle(bounds.horizon()) else {
                return false;
            };
            if let Some(tombstone) = bounds.tombstone_for(idle_from) {
                if cfg!(slidelimit_loom_mutant = "tombstone_after_unlink") {
                    // Deliberately broken for the loom negative control.
                    left_for_later.push((key.clone(), tombstone));
                } else {
                    leave_tombstone(key, tombstone);
                }
            }
            true
        });
        for (key, tombstone) in left_for_later {
            leave_tombstone(&key, tombstone);
        }
        let book = &self.books[shard];
        book.removed(removed);
        if removed > 0 {
            // The queue forgets the keys removed here, unless a tombstone of theirs waits for
            // the floor: the automatic sweep drops it then.
            book.retain_tracked(|key| self.map.contains(key) || self.tombstones.contains(key));
        }
        self.policy
            .metrics
            .tombstones_held(|| self.tombstones.len());
        removed
    }
}

#[cfg(slidelimit_loom)]
impl<K, E> EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry,
{
    // Hidden: a hook for the tests, loom models and benchmarks to inspect quiescent
    // state; not part of the API a user builds on.
    #[doc(hidden)]
    /// Runs `f` on the entry currently mapped for `key` (without pinning it), for the loom
    /// models' quiescent assertions: which entry survived and what its window holds.
    /// Exists only under `cfg(slidelimit_loom)`.
    pub fn model_entry<R>(&self, key: &K, f: impl FnOnce(&E) -> R) -> Option<R> {
        self.map.get_with(key, f)
    }
}

/// The calls of [`RateLimiter`], asked with any borrowed form of the key: a limiter of
/// `String` keys answers a `&str` without allocating (a key's first call, which creates its
/// state, copies it once). Method calls on the limiter itself resolve to these.
impl<K, E> EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry,
{
    /// [`RateLimiter::hit`], asked with any borrowed form of the key.
    #[inline]
    pub fn hit<Q>(&self, key: &Q, now: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        // A weight of 1 is valid for every window, so there is no error to drop here.
        let _ = self.hit_n(key, now, 1);
    }

    /// [`RateLimiter::allowed`], asked with any borrowed form of the key.
    #[inline]
    #[must_use]
    pub fn allowed<Q>(&self, key: &Q, now: u64) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.allowed_n(key, now, 1).unwrap_or(false)
    }

    /// [`RateLimiter::check_and_hit`], asked with any borrowed form of the key.
    #[inline]
    #[must_use]
    pub fn check_and_hit<Q>(&self, key: &Q, now: u64) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.check_and_hit_n(key, now, 1).unwrap_or(false)
    }

    // No clamp of `now` here: the windows clamp it (once each), and watermarks never exceed
    // MAX_TICK, so comparing the raw `now` with them gives the clamped answer.
    /// [`RateLimiter::hit_n`], asked with any borrowed form of the key.
    ///
    /// # Errors
    /// See [`RateLimiter::hit_n`].
    #[inline]
    pub fn hit_n<Q>(&self, key: &Q, now: u64, n: u64) -> Result<(), WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        self.with_entry::<false, _, _>(key, now, |_, entry| entry.hit_n(now, n));
        Ok(())
    }

    /// [`RateLimiter::allowed_n`], asked with any borrowed form of the key.
    ///
    /// # Errors
    /// See [`RateLimiter::allowed_n`].
    #[inline]
    pub fn allowed_n<Q>(&self, key: &Q, now: u64, n: u64) -> Result<bool, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        let verdict = self.read_existing(key, |watermark, entry| {
            if now < watermark {
                return Ok(false);
            }
            entry.allowed_n(now, n)
        });
        Ok(verdict.unwrap_or_else(|| {
            self.policy.allowed_of_unknown_key(
                self.limits.resolve(key).1.limit(),
                self.unknown_key_watermark(key, now),
                now,
                n,
            )
        }))
    }

    /// [`RateLimiter::check_and_hit_n`], asked with any borrowed form of the key.
    ///
    /// # Errors
    /// See [`RateLimiter::check_and_hit_n`].
    #[inline]
    pub fn check_and_hit_n<Q>(&self, key: &Q, now: u64, n: u64) -> Result<bool, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        let admitted = self.with_entry::<true, _, _>(key, now, |watermark, entry| {
            if now < watermark {
                return Ok(false);
            }
            entry.check_and_hit_n(now, n)
        });
        Ok(self.policy.metrics.decided(admitted))
    }

    /// [`RateLimiter::status`], asked with any borrowed form of the key.
    #[must_use]
    pub fn status<Q>(&self, key: &Q, now: u64) -> Status
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.status_of(key, now, 1).expect(WEIGHT_ONE_FITS)
    }

    /// [`RateLimiter::status_n`], asked with any borrowed form of the key.
    ///
    /// # Errors
    /// See [`RateLimiter::status_n`].
    pub fn status_n<Q>(&self, key: &Q, now: u64, n: u64) -> Result<Status, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        self.status_of(key, now, n)
    }

    /// [`RateLimiter::window_statuses`], asked with any borrowed form of the key.
    #[must_use]
    pub fn window_statuses<Q>(&self, key: &Q, now: u64) -> WindowStatuses
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.read_existing(key, |watermark, entry| {
            Ok(entry
                .window_statuses(now, 1)?
                .map(|status| self.policy.clamp_status(status, watermark, now)))
        })
        .unwrap_or_else(|| {
            self.policy.window_statuses_of_unknown_key(
                self.limits.resolve(key).1.limit(),
                self.unknown_key_watermark(key, now),
                now,
            )
        })
    }

    /// The status for weight `n` (already checked against the window's rules), or why the
    /// key's own limit can never admit it.
    fn status_of<Q>(&self, key: &Q, now: u64, n: u64) -> Result<Status, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.read_existing(key, |watermark, entry| {
            Ok(match fits_limit(n, || entry.limit()) {
                Ok(()) => Ok(self
                    .policy
                    .clamp_status(entry.status_n(now, n)?, watermark, now)),
                Err(never) => Err(never),
            })
        })
        .unwrap_or_else(|| {
            self.policy.status_of_unknown_key(
                self.limits.resolve(key).1.limit(),
                self.unknown_key_watermark(key, now),
                now,
                n,
            )
        })
    }
}

impl<K, E> RateLimiter<K> for EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry,
{
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn algorithm(&self) -> &'static str {
        self.policy.window.algorithm()
    }

    fn limit(&self) -> Limit {
        self.limits.default_window().limit()
    }

    #[inline]
    fn hit_n(&self, key: &K, now: u64, n: u64) -> Result<(), WeightError> {
        Self::hit_n(self, key, now, n)
    }

    #[inline]
    fn allowed_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError> {
        Self::allowed_n(self, key, now, n)
    }

    #[inline]
    fn check_and_hit_n(&self, key: &K, now: u64, n: u64) -> Result<bool, WeightError> {
        Self::check_and_hit_n(self, key, now, n)
    }

    fn status(&self, key: &K, now: u64) -> Status {
        Self::status(self, key, now)
    }

    fn status_n(&self, key: &K, now: u64, n: u64) -> Result<Status, WeightError> {
        Self::status_n(self, key, now, n)
    }

    fn window_statuses(&self, key: &K, now: u64) -> WindowStatuses {
        Self::window_statuses(self, key, now)
    }

    fn remove_idle(&self, now: u64) -> usize {
        let removed = self
            .policy
            .remove_idle(now, |shard, bounds| self.sweep_shard(shard, bounds));
        self.policy.metrics.tracked(self.tracked());
        removed
    }

    fn tracked_keys(&self) -> usize {
        self.tracked()
    }
}

impl<K, E> crate::limiter::LimitControl<K> for EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry,
{
    fn set_limit(&self, limit: Limit) {
        self.limits.set_default(limit);
    }

    fn set_limit_for(&self, key: &K, limit: Limit) {
        self.limits.set_override(key, limit);
    }

    fn clear_limit_for(&self, key: &K) -> bool {
        self.limits.clear_override(key)
    }

    fn limit_for(&self, key: &K) -> Limit {
        self.limits.resolve(key).1.limit()
    }
}

impl<K, E> crate::snapshot::SavedState<K> for EntryGuardedLimiter<K, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    E: GuardedEntry,
{
    fn snapshot(&self, now: u64) -> Snapshot<K> {
        let mut keys = Vec::with_capacity(self.tracked());
        let mut tombstones = Vec::new();
        for shard in 0..self.map.shard_count() {
            self.map.for_each_in_shard(shard, |key, _| {
                // Through the lookup: an entry retired meanwhile is looked up again, one
                // built under an older limit read through a converted copy.
                let saved = self.read_existing(key, |watermark, entry| {
                    let state = entry.export()?;
                    Ok(saved_key(key.clone(), entry.limit(), watermark, &state))
                });
                keys.extend(saved);
            });
            self.tombstones.for_each_in_shard(shard, |key, tombstone| {
                tombstones.push((key.clone(), tombstone.idle_from()));
            });
        }
        let mut snapshot = Snapshot::empty(
            &self.limits.default_window(),
            self.policy.tick_nanos,
            self.policy.floor(),
            now,
        );
        snapshot.keys = keys;
        snapshot.tombstones = tombstones;
        snapshot
    }

    fn snapshot_key(&self, key: &K, now: u64) -> Snapshot<K> {
        let mut snapshot = Snapshot::empty(
            &self.limits.default_window(),
            self.policy.tick_nanos,
            self.policy.floor(),
            now,
        );
        snapshot
            .keys
            .extend(self.read_existing(key, |watermark, entry| {
                let state = entry.export()?;
                Ok(saved_key(key.clone(), entry.limit(), watermark, &state))
            }));
        snapshot.tombstones.extend(
            self.tombstones
                .get_with(key, |tombstone| (key.clone(), tombstone.idle_from())),
        );
        snapshot
    }

    fn restore(
        &self,
        snapshot: &Snapshot<K>,
        now: u64,
        conversion: Conversion,
    ) -> Result<Restored, SnapshotError> {
        let states = snapshot.validated(now)?;
        snapshot.check_fits(
            &self.limits.default_window(),
            self.policy.tick_nanos,
            conversion,
        )?;
        let now = now.min(crate::window::MAX_TICK);
        self.policy.floor.raise_to(snapshot.removal_floor.min(now));
        for (key, idle_from) in &snapshot.tombstones {
            let idle_from = (*idle_from).min(now);
            self.tombstones.get_or_insert_with(
                key,
                || super::Tombstone::new(idle_from),
                |tombstone| tombstone.raise(idle_from),
            );
        }
        for (key, state, watermark) in &states {
            // The key's own tombstone and the floor, as a new entry would resolve them.
            let watermark = (*watermark).max(self.removal_watermark(key));
            self.install(key, state, watermark, now);
        }
        self.report_held();
        Ok(Restored {
            keys: states.len(),
            tombstones: snapshot.tombstones.len(),
        })
    }

    fn import_usage(&self, records: &mut dyn Iterator<Item = (K, u64, u64)>, now: u64) -> Restored {
        let grouped = group_usage(records, now);
        for (key, state) in &grouped {
            self.install(key, state, self.removal_watermark(key), now);
        }
        self.report_held();
        Restored {
            keys: grouped.len(),
            tombstones: 0,
        }
    }
}
