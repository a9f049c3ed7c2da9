//! Keys in a plain `HashMap` behind one lock: the shape shared by the global-`Mutex` and the
//! `RwLock` limiters. The lock crate chooses only the lock ([`TableLock`]); the map, the
//! policy and the window algorithm are here and in [`crate::window`].

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::marker::PhantomData;

use super::limits::{LimitResolver, LimitTable};
use super::schedule::{self, DueQueue, Look};
use super::{fits_limit, KeyHasher, KeyPolicy, Options, SweepBounds, SweepStep, WEIGHT_ONE_FITS};
use crate::limit::Limit;
use crate::limiter::RateLimiter;
use crate::snapshot::{group_usage, saved_key, Conversion, Restored, Snapshot, SnapshotError};
use crate::window::buckets::{BucketError, RollingBuckets};
use crate::window::state::WindowState;
use crate::window::{
    ring::ExactLog, Algorithm, SequentialWindow, Status, WeightError, WindowStatuses, MAX_TICK,
};

/// Each key's window, the removal watermark it was created with, and the limits version its
/// limit is current for.
type Shard<K, W> = HashMap<K, (<W as Algorithm>::Sequential, u64, u64), KeyHasher>;

/// Every key's sequential window, in shards by key hash (like the concurrent map, so that a
/// table grows one shard at a time and the sweep steps match), with the shared key policy.
/// Not synchronised: a [`TableLock`] guards it.
pub struct KeyTable<K, W: Algorithm> {
    shards: Box<[Shard<K, W>]>,
    /// Removed keys' watermarks above the removal floor (see [`super::Tombstone`]), in the
    /// same shards.
    tombstones: Box<[HashMap<K, u64, KeyHasher>]>,
    /// Each shard's key count and due queue (see [`super::schedule`]).
    books: Box<[Book<K>]>,
    tracked: usize,
    policy: KeyPolicy<W>,
    limits: LimitTable<K, W>,
}

/// One shard's sweep bookkeeping: the concurrent shape's `ShardBook`, under the table's lock.
struct Book<K> {
    keys: usize,
    /// Decisions on new keys refused because the shard's budget was full (for the observed
    /// clock's sampling, see `KeyPolicy::refused_by_budget`).
    refused: usize,
    /// Keys ever created or installed here (see `KeyPolicy::after_creation`).
    created: usize,
    queue: DueQueue<K>,
}

impl<K> Book<K> {
    fn new() -> Self {
        Self {
            keys: 0,
            refused: 0,
            created: 0,
            queue: DueQueue::new(),
        }
    }
}

/// Brings a key's window to the key's limit at the current limits version, keeping its hits
/// (see [`crate::window::state`]). Out of line: it runs once per key after a limit change.
#[cold]
#[inline(never)]
fn refresh_limit<K, Q, W>(
    limits: &LimitTable<K, W>,
    key: &Q,
    window: &mut W::Sequential,
    limits_version: &mut u64,
) where
    K: Hash + Eq + Clone + Send + Sync + 'static + Borrow<Q>,
    Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    W: Algorithm,
{
    let (version, current) = limits.resolve(key);
    if window.limit() != current.limit() {
        *window = current.sequential_from(&window.export());
    }
    *limits_version = version;
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static, W: Algorithm> KeyTable<K, W> {
    /// An empty map.
    #[must_use]
    pub fn new(window: W, options: Options) -> Self {
        let policy = KeyPolicy::new(window.clone(), options);
        let limits = LimitTable::new(window, &policy.hasher, policy.shards);
        Self {
            limits,
            shards: (0..policy.shards)
                .map(|_| HashMap::with_hasher(policy.hasher.clone()))
                .collect(),
            tombstones: (0..policy.shards)
                .map(|_| HashMap::with_hasher(policy.hasher.clone()))
                .collect(),
            books: (0..policy.shards).map(|_| Book::new()).collect(),
            tracked: 0,
            policy,
        }
    }

    fn shard<Q>(&self, key: &Q) -> &Shard<K, W>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        &self.shards[self.policy.shard_of(key)]
    }

    /// The removal watermark of `key`, in shard `shard`, for state created now (see the
    /// concurrent shape).
    fn removal_watermark<Q>(&self, shard: usize, key: &Q) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let tombstone = self.tombstones[shard].get(key).copied();
        self.policy.watermark(tombstone)
    }

    /// Runs `op` on the window of `key` with its watermark: the hot path, kept small so it
    /// inlines (a lookup and a version comparison); everything else is in
    /// [`Self::with_window_slow`].
    #[inline]
    fn with_window<const BUDGETED: bool, Q, R: Default>(
        &mut self,
        key: &Q,
        now: u64,
        op: impl FnOnce(u64, &mut W::Sequential) -> R,
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let shard = self.policy.shard_of(key);
        let version = self.limits.version();
        match self.shards[shard].get_mut(key) {
            Some((window, watermark, limits_version)) => {
                if *limits_version != version {
                    refresh_limit(&self.limits, key, window, limits_version);
                }
                op(*watermark, window)
            }
            None => self.with_new_window::<BUDGETED, _, _>(shard, key, now, op),
        }
    }

    /// [`Self::with_window`] for a key with no window in shard `shard`: its lookup just
    /// missed, under this same borrow, so the insert goes straight in (a new key probes its
    /// shard twice, the miss and the insert). `BUDGETED` (a decision): a full shard that a
    /// sweep step cannot free answers `R::default()` (a refusal) instead (see
    /// [`Options::max_keys`]).
    #[cold]
    #[inline(never)]
    fn with_new_window<const BUDGETED: bool, Q, R: Default>(
        &mut self,
        shard: usize,
        key: &Q,
        now: u64,
        op: impl FnOnce(u64, &mut W::Sequential) -> R,
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if BUDGETED && self.full_after_reclaim(shard, now) {
            let book = &mut self.books[shard];
            self.policy.refused_by_budget(now, book.refused);
            book.refused += 1;
            // The refusal (`false` for `check_and_hit`).
            return R::default();
        }
        let watermark = self.removal_watermark(shard, key);
        let (new_window, version) = self.limits.with_resolved(key, |version, current| {
            (current.new_sequential_at(now), version)
        });
        let (window, watermark, _) = self.shards[shard]
            .entry(key.to_owned())
            .or_insert_with(|| (new_window, watermark, version));
        let result = op(*watermark, window);
        self.after_creation(shard, key, now);
        result
    }

    /// After a call at `now` created the window of `key` in shard `shard`: the concurrent
    /// shape's `after_creation`, on plain maps.
    fn after_creation<Q>(&mut self, shard: usize, key: &Q, now: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.tracked += 1;
        let book = &mut self.books[shard];
        let created_before = book.created;
        self.policy.after_creation(now, created_before);
        book.created += 1;
        book.keys += 1;
        if !book.queue.is_armed() {
            if !self.policy.shard_sweeps(book.keys) {
                return;
            }
            // Arming takes a step whatever the count, as in the concurrent shape.
            self.arm(shard, now);
        } else {
            book.queue
                .push(key.to_owned(), now, self.policy.recheck_ticks);
            if !schedule::steps_at(created_before, book.keys) {
                return;
            }
        }
        if self.policy.shard_sweeps(self.books[shard].keys) {
            self.sweep_step(shard);
        }
    }

    /// Arms shard `shard`'s queue with the keys it holds, due at `now`.
    fn arm(&mut self, shard: usize, now: u64) {
        let held: Vec<K> = self.shards[shard].keys().cloned().collect();
        self.books[shard].queue.arm(held, now);
    }

    /// One step of the automatic sweep in shard `shard` (its queue armed).
    fn sweep_step(&mut self, shard: usize) {
        let step = self.policy.automatic_step();
        self.step(shard, step);
    }

    /// The looks of `step` at shard `shard`'s due keys, under the one borrow: the concurrent
    /// shape's take, looks and put-back in one go.
    fn step(&mut self, shard: usize, step: SweepStep) {
        let book = &mut self.books[shard];
        let (windows, tombstones) = (&mut self.shards[shard], &mut self.tombstones[shard]);
        let removed = self
            .policy
            .sweep_step(&mut book.queue, step, |key, bounds| {
                look::<K, W>(windows, tombstones, key, bounds)
            });
        book.keys -= removed;
        self.tracked -= removed;
    }

    /// Whether shard `shard` is at its share of the key budget after a budget step at `now`
    /// (which removes what is idle by `now - D`, as `remove_idle(now)` would; see
    /// [`Options::max_keys`]).
    fn full_after_reclaim(&mut self, shard: usize, now: u64) -> bool {
        if !self.policy.shard_full(self.books[shard].keys) {
            return false;
        }
        if !self.books[shard].queue.is_armed() {
            self.arm(shard, now);
        }
        let step = self.policy.budget_step_at(now);
        self.step(shard, step);
        self.policy.shard_full(self.books[shard].keys)
    }

    /// The watermark a key with no state in shard `shard` answers with at `now`: its removal
    /// watermark, or later while the shard's budget is full.
    fn unknown_key_watermark<Q>(&self, shard: usize, key: &Q, now: u64) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let full = self.policy.shard_full(self.books[shard].keys);
        self.policy
            .unknown_key_watermark(self.removal_watermark(shard, key), full, now)
    }

    #[inline]
    fn hit_n<Q>(&mut self, key: &Q, now: u64, n: u64) -> Result<(), WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        self.with_window::<false, _, _>(key, now, |_, window| window.hit_n(now, n));
        Ok(())
    }

    #[inline]
    fn check_and_hit_n<Q>(&mut self, key: &Q, now: u64, n: u64) -> Result<bool, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        let admitted = self.with_window::<true, _, _>(key, now, |watermark, window| {
            now >= watermark && window.check_and_hit_n(now, n)
        });
        Ok(self.policy.metrics.decided(admitted))
    }

    #[inline]
    fn allowed_n<Q>(&self, key: &Q, now: u64, n: u64) -> Result<bool, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.limits.check_weight(&self.policy.window, n)?;
        Ok(match self.shard(key).get(key) {
            Some((window, watermark, limits_version)) => {
                now >= *watermark
                    && self.with_current_limit(key, window, *limits_version, |window| {
                        window.allowed_n(now, n)
                    })
            }
            None => self.policy.allowed_of_unknown_key(
                self.limits.resolve(key).1.limit(),
                self.unknown_key_watermark(self.policy.shard_of(key), key, now),
                now,
                n,
            ),
        })
    }

    /// The status for weight `n` (already checked against the window's rules), or why the
    /// key's own limit can never admit it.
    fn status_of<Q>(&self, key: &Q, now: u64, n: u64) -> Result<Status, WeightError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match self.shard(key).get(key) {
            Some((window, watermark, limits_version)) => {
                self.with_current_limit(key, window, *limits_version, |window| {
                    fits_limit(n, || window.limit()).map(|()| {
                        self.policy
                            .clamp_status(window.status_n(now, n), *watermark, now)
                    })
                })
            }
            None => self.policy.status_of_unknown_key(
                self.limits.resolve(key).1.limit(),
                self.unknown_key_watermark(self.policy.shard_of(key), key, now),
                now,
                n,
            ),
        }
    }

    /// Every window's status for weight 1 (see [`RateLimiter::window_statuses`]).
    fn window_statuses_of<Q>(&self, key: &Q, now: u64) -> WindowStatuses
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match self.shard(key).get(key) {
            Some((window, watermark, limits_version)) => {
                self.with_current_limit(key, window, *limits_version, |window| {
                    window
                        .window_statuses(now, 1)
                        .map(|status| self.policy.clamp_status(status, *watermark, now))
                })
            }
            None => self.policy.window_statuses_of_unknown_key(
                self.limits.resolve(key).1.limit(),
                self.unknown_key_watermark(self.policy.shard_of(key), key, now),
                now,
            ),
        }
    }

    /// Runs a read-only `f` on `window` as the key's current limit sees it: the window itself
    /// if its limit is current, else a converted copy (a read-only call cannot replace it;
    /// the key's next write does).
    fn with_current_limit<Q, R>(
        &self,
        key: &Q,
        window: &W::Sequential,
        limits_version: u64,
        f: impl FnOnce(&W::Sequential) -> R,
    ) -> R
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if limits_version == self.limits.version() {
            return f(window);
        }
        let current = self.limits.resolve(key).1;
        if window.limit() == current.limit() {
            f(window)
        } else {
            f(&current.sequential_from(&window.export()))
        }
    }

    fn remove_idle(&mut self, now: u64) -> usize {
        let (windows, tombstones, tracked, books) = (
            &mut self.shards,
            &mut self.tombstones,
            &mut self.tracked,
            &mut self.books,
        );
        let removed = self.policy.remove_idle(now, |shard, bounds| {
            let (windows, tombstones) = (&mut windows[shard], &mut tombstones[shard]);
            let removed = sweep_shard::<K, W>(windows, tombstones, bounds);
            *tracked -= removed;
            let book = &mut books[shard];
            book.keys -= removed;
            if removed > 0 && book.queue.is_armed() {
                // As in the concurrent shape: forget the keys removed here, unless a
                // tombstone of theirs waits for the floor.
                book.queue.retain_tracked(|key| {
                    windows.contains_key(key) || tombstones.contains_key(key)
                });
            }
            removed
        });
        self.report_held();
        removed
    }

    /// Sets the key and tombstone gauges (feature `metrics`) after a sweep, a restore or an
    /// import.
    fn report_held(&self) {
        self.policy.metrics.tracked(self.tracked);
        self.policy
            .metrics
            .tombstones_held(|| tombstones_held(&self.tombstones));
    }
}

/// The tombstones of every shard (for the metrics gauge: only counted with feature `metrics`).
fn tombstones_held<K>(tombstones: &[HashMap<K, u64, KeyHasher>]) -> usize {
    tombstones.iter().map(HashMap::len).sum()
}

/// The automatic sweep's look at a due key: the concurrent shape's `look`, on plain maps.
fn look<K: Hash + Eq + Clone, W: Algorithm>(
    windows: &mut Shard<K, W>,
    tombstones: &mut HashMap<K, u64, KeyHasher>,
    key: &K,
    bounds: SweepBounds,
) -> Look {
    // Out first, back in if live: a look finds most keys idle (under key churn, nearly all),
    // and one hash and probe each beats a lookup followed by a removal.
    match windows.remove_entry(key) {
        Some((key, (window, _, _))) if window.is_idle_by(bounds.horizon()) => {
            // The automatic sweep's bounds leave no tombstone: no second pass over the window
            // for the tick it is fresh from.
            let fresh_from = bounds.may_leave_tombstones().then(|| window.idle_from());
            match fresh_from.and_then(|fresh_from| bounds.tombstone_for(fresh_from)) {
                Some(idle_from) => {
                    let tombstone = tombstones.entry(key).or_insert(idle_from);
                    *tombstone = (*tombstone).max(idle_from);
                    Look::Tombstoned { idle_from }
                }
                None => Look::Removed,
            }
        }
        Some((key, entry)) => {
            let idle_from = entry.0.idle_from();
            windows.insert(key, entry);
            Look::Live { idle_from }
        }
        None => match tombstones.get(key) {
            Some(&idle_from) if !bounds.drops_tombstone(idle_from) => Look::Live { idle_from },
            Some(_) => {
                tombstones.remove(key);
                Look::Gone
            }
            None => Look::Gone,
        },
    }
}

/// One step of a sweep over one shard: the concurrent shape's `sweep_shard`, on plain maps.
/// Returns how many keys it removed.
fn sweep_shard<K: Hash + Eq + Clone, W: Algorithm>(
    windows: &mut Shard<K, W>,
    tombstones: &mut HashMap<K, u64, KeyHasher>,
    bounds: SweepBounds,
) -> usize {
    tombstones.retain(|_, idle_from| !bounds.drops_tombstone(*idle_from));
    let before = windows.len();
    windows.retain(|key, (window, _, _)| {
        if !window.is_idle_by(bounds.horizon()) {
            return true;
        }
        if let Some(idle_from) = bounds.tombstone_for(window.idle_from()) {
            let tombstone = tombstones.entry(key.clone()).or_insert(idle_from);
            *tombstone = (*tombstone).max(idle_from);
        }
        false
    });
    before - windows.len()
}

/// The lock a lock crate puts around [`KeyTable`]: `read` serves `allowed` and `status`,
/// `write` everything that records or removes.
pub trait TableLock<T>: Send + Sync {
    /// The variant name reported by [`RateLimiter::name`].
    const NAME: &'static str;
    /// Wraps `state` in the lock.
    fn new(state: T) -> Self;
    /// Runs `f` with shared access.
    fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R;
    /// Runs `f` with exclusive access.
    fn write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

/// A keyed limiter whose whole key map sits behind one lock `L`.
///
/// Use it through its aliases `slidelimit_mutex::MutexLimiter` and
/// `slidelimit_rwlock::RwLockLimiter`.
pub struct MapGuardedLimiter<K, W, L> {
    state: L,
    algorithm: &'static str,
    _state: PhantomData<fn(K, W)>,
}

impl<K, L> MapGuardedLimiter<K, ExactLog, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: TableLock<KeyTable<K, ExactLog>>,
{
    /// A limiter with the exact sliding log and default [`Options`].
    #[must_use]
    pub fn new(limit: Limit) -> Self {
        Self::with_options(ExactLog::new(limit), Options::default())
    }
}

impl<K, L> MapGuardedLimiter<K, RollingBuckets, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    L: TableLock<KeyTable<K, RollingBuckets>>,
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

impl<K, W, L> MapGuardedLimiter<K, W, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
    L: TableLock<KeyTable<K, W>>,
{
    /// A limiter with any window algorithm and explicit [`Options`].
    #[must_use]
    pub fn with_options(window: W, options: Options) -> Self {
        Self {
            algorithm: window.algorithm(),
            state: L::new(KeyTable::new(window, options)),
            _state: PhantomData,
        }
    }

    /// The limiter with per-key limits from `resolver` (see
    /// `EntryGuardedLimiter::with_limit_resolver`).
    #[must_use]
    pub fn with_limit_resolver(
        self,
        resolver: impl Fn(&K) -> Option<Limit> + Send + Sync + 'static,
    ) -> Self {
        let resolver = std::sync::Arc::new(resolver) as LimitResolver<K>;
        self.state
            .write(|state| state.limits.set_resolver(resolver));
        self
    }
}

/// The calls of [`RateLimiter`], asked with any borrowed form of the key: a limiter of
/// `String` keys answers a `&str` without allocating (a key's first call, which creates its
/// state, copies it once). Method calls on the limiter itself resolve to these.
impl<K, W, L> MapGuardedLimiter<K, W, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
    L: TableLock<KeyTable<K, W>>,
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
        let now = now.min(MAX_TICK);
        self.state.write(|state| state.hit_n(key, now, n))
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
        let now = now.min(MAX_TICK);
        self.state.read(|state| state.allowed_n(key, now, n))
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
        let now = now.min(MAX_TICK);
        self.state.write(|state| state.check_and_hit_n(key, now, n))
    }

    /// [`RateLimiter::status`], asked with any borrowed form of the key.
    #[must_use]
    pub fn status<Q>(&self, key: &Q, now: u64) -> Status
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let now = now.min(MAX_TICK);
        self.state
            .read(|state| state.status_of(key, now, 1))
            .expect(WEIGHT_ONE_FITS)
    }

    /// [`RateLimiter::window_statuses`], asked with any borrowed form of the key.
    #[must_use]
    pub fn window_statuses<Q>(&self, key: &Q, now: u64) -> WindowStatuses
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let now = now.min(MAX_TICK);
        self.state.read(|state| state.window_statuses_of(key, now))
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
        let now = now.min(MAX_TICK);
        self.state.read(|state| {
            state.limits.check_weight(&state.policy.window, n)?;
            state.status_of(key, now, n)
        })
    }
}

impl<K, W, L> RateLimiter<K> for MapGuardedLimiter<K, W, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
    L: TableLock<KeyTable<K, W>>,
{
    fn name(&self) -> &'static str {
        L::NAME
    }

    fn algorithm(&self) -> &'static str {
        self.algorithm
    }

    fn limit(&self) -> Limit {
        self.state
            .read(|state| state.limits.default_window().limit())
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
        let now = now.min(MAX_TICK);
        self.state.write(|state| state.remove_idle(now))
    }

    fn tracked_keys(&self) -> usize {
        self.state.read(|state| state.tracked)
    }
}

impl<K, W, L> crate::limiter::LimitControl<K> for MapGuardedLimiter<K, W, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
    L: TableLock<KeyTable<K, W>>,
{
    fn set_limit(&self, limit: Limit) {
        self.state.write(|state| state.limits.set_default(limit));
    }

    fn set_limit_for(&self, key: &K, limit: Limit) {
        self.state
            .write(|state| state.limits.set_override(key, limit));
    }

    fn clear_limit_for(&self, key: &K) -> bool {
        self.state.write(|state| state.limits.clear_override(key))
    }

    fn limit_for(&self, key: &K) -> Limit {
        self.state.read(|state| state.limits.resolve(key).1.limit())
    }
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static, W: Algorithm> KeyTable<K, W> {
    fn snapshot(&self, now: u64) -> Snapshot<K> {
        let mut keys = Vec::with_capacity(self.tracked);
        for shard in self.shards.iter() {
            for (key, (window, watermark, limits_version)) in shard {
                let state = self.with_current_limit(key, window, *limits_version, |window| {
                    (window.limit(), window.export())
                });
                keys.push(saved_key(key.clone(), state.0, *watermark, &state.1));
            }
        }
        let tombstones = self
            .tombstones
            .iter()
            .flat_map(|shard| shard.iter().map(|(key, f)| (key.clone(), *f)))
            .collect();
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
        let shard = self.policy.shard_of(key);
        if let Some((window, watermark, limits_version)) = self.shards[shard].get(key) {
            let (limit, state) = self.with_current_limit(key, window, *limits_version, |window| {
                (window.limit(), window.export())
            });
            snapshot
                .keys
                .push(saved_key(key.clone(), limit, *watermark, &state));
        }
        if let Some(idle_from) = self.tombstones[shard].get(key) {
            snapshot.tombstones.push((key.clone(), *idle_from));
        }
        snapshot
    }

    /// Gives `key` the state `state` under its current limit, with watermark `watermark`.
    fn install(&mut self, key: &K, state: &WindowState, watermark: u64, now: u64) {
        let (version, current) = self.limits.resolve(key);
        let shard = self.policy.shard_of(key);
        let entry = (current.sequential_from(state), watermark, version);
        if self.shards[shard].insert(key.clone(), entry).is_none() {
            self.tracked += 1;
            let book = &mut self.books[shard];
            book.keys += 1;
            book.created += 1;
            book.queue.push(key.clone(), now, self.policy.recheck_ticks);
        }
    }

    fn restore(
        &mut self,
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
        let now = now.min(MAX_TICK);
        self.policy.floor.raise_to(snapshot.removal_floor.min(now));
        for (key, idle_from) in &snapshot.tombstones {
            let shard = self.policy.shard_of(key);
            let tombstone = self.tombstones[shard].entry(key.clone()).or_insert(0);
            *tombstone = (*tombstone).max((*idle_from).min(now));
        }
        for (key, state, watermark) in &states {
            // The key's own tombstone and the floor, as a new entry would resolve them.
            let watermark =
                (*watermark).max(self.removal_watermark(self.policy.shard_of(key), key));
            self.install(key, state, watermark, now);
        }
        self.report_held();
        Ok(Restored {
            keys: states.len(),
            tombstones: snapshot.tombstones.len(),
        })
    }

    fn import_usage(
        &mut self,
        records: &mut dyn Iterator<Item = (K, u64, u64)>,
        now: u64,
    ) -> Restored {
        let grouped = group_usage(records, now);
        for (key, state) in &grouped {
            let watermark = self.removal_watermark(self.policy.shard_of(key), key);
            self.install(key, state, watermark, now);
        }
        self.report_held();
        Restored {
            keys: grouped.len(),
            tombstones: 0,
        }
    }
}

impl<K, W, L> crate::snapshot::SavedState<K> for MapGuardedLimiter<K, W, L>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
    L: TableLock<KeyTable<K, W>>,
{
    fn snapshot(&self, now: u64) -> Snapshot<K> {
        self.state.read(|state| state.snapshot(now))
    }

    fn snapshot_key(&self, key: &K, now: u64) -> Snapshot<K> {
        self.state.read(|state| state.snapshot_key(key, now))
    }

    fn restore(
        &self,
        snapshot: &Snapshot<K>,
        now: u64,
        conversion: Conversion,
    ) -> Result<Restored, SnapshotError> {
        self.state
            .write(|state| state.restore(snapshot, now, conversion))
    }

    fn import_usage(&self, records: &mut dyn Iterator<Item = (K, u64, u64)>, now: u64) -> Restored {
        self.state.write(|state| state.import_usage(records, now))
    }
}
