//! Which limit each key answers with: the default (`set_limit`), a per-key override
//! (`set_limit_for`), or what a resolver the user passed in says; and the version that tells
//! an entry its limit is out of date.
//!
//! # How a change reaches the entries
//! Every entry records the *limits version* it was built (or last confirmed) under. A change
//! writes the new default or override first, then bumps the version. The hot path compares
//! the entry's version with the current one (one load of a word that only changes with the
//! limits, on its own cache line); on a mismatch the caller resolves the key's limit again
//! and, if it differs from the entry's, replaces the entry by one built from its state under
//! the new limit ([`crate::window::state`]), through the same retire-then-replace handshake
//! a removal uses. A decision runs on one entry, and an entry has one limit, so no decision
//! mixes two limits.
//!
//! # Atomic orderings
//! Changes run one at a time under a lock that no decision takes (two changes interleaving
//! their writes could leave the default of one with the weight bound of the other). The
//! version is bumped with `Release` after the maps are written and loaded with `Acquire`
//! before they are read, so a caller that sees version `v` resolves a limit at least as new
//! as the change that made `v` (it may see a newer one and label it `v`; the next caller then
//! confirms it again: only extra work, never an old limit).

use std::hash::Hash;
use std::sync::Arc;

use super::map::KeyMap;
use super::KeyHasher;
use crate::limit::{Limit, MAX_REQUESTS};
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering};
use crate::window::{Algorithm, WeightError};

/// A user's rule for per-key limits: `Some(limit)` for a key with its own limit, `None` for
/// the default. Called when a key's state is created and after each limit change, never on
/// the hot path.
pub type LimitResolver<K> = Arc<dyn Fn(&K) -> Option<Limit> + Send + Sync>;

/// The limits of one limiter (see the module docs).
pub(crate) struct LimitTable<K, W> {
    /// Bumped after every change; entries built under another value re-resolve. Padded: it
    /// is read by every call and written only by changes, so it must not share a line with
    /// the counters that key creations write.
    version: crossbeam_utils::CachePadded<AtomicU64>,
    /// The largest weight any key may be asked for: the default's `max_requests` while no
    /// key has a limit of its own, [`MAX_REQUESTS`] once one may.
    max_weight: AtomicU64,
    /// The window the limiter was built with: the default until the first `set_limit`.
    initial: W,
    /// Set by the first `set_limit`; until then key creation reads `initial` and skips the
    /// map (a lookup and a guard, which key-creating workloads would pay on every new key).
    default_changed: AtomicBool,
    /// The default window (its limit is the default limit), under the unit key.
    default: KeyMap<(), W>,
    overrides: KeyMap<K, Limit>,
    /// Set once the first override is written: until then resolution skips the map.
    has_overrides: AtomicBool,
    resolver: Option<LimitResolver<K>>,
    /// Serialises the changes (never taken by a decision): a change writes the default or an
    /// override, then `max_weight`, then bumps the version, and two changes interleaving
    /// those steps would leave the default of one with the weight bound of the other.
    changes: Mutex<()>,
}

impl<K, W> LimitTable<K, W>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    W: Algorithm,
{
    pub(crate) fn new(window: W, hasher: &KeyHasher, shards: usize) -> Self {
        let default = KeyMap::new(hasher.clone(), 1);
        default.insert((), window.clone());
        Self {
            initial: window.clone(),
            default_changed: AtomicBool::new(false),
            version: crossbeam_utils::CachePadded::new(AtomicU64::new(0)),
            max_weight: AtomicU64::new(window.limit().max_weight()),
            default,
            overrides: KeyMap::new(hasher.clone(), shards),
            has_overrides: AtomicBool::new(false),
            resolver: None,
            changes: Mutex::new(()),
        }
    }

    pub(crate) fn set_resolver(&mut self, resolver: LimitResolver<K>) {
        self.resolver = Some(resolver);
        // Relaxed: `&mut self`, no other thread sees the table yet.
        self.max_weight.store(MAX_REQUESTS, Ordering::Relaxed);
        // Relaxed: `&mut self`, no other thread sees the table yet.
        self.version.fetch_add(1, Ordering::Relaxed);
    }

    /// The current version, for the hot path's comparison.
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        // Acquire: pairs with the Release bump in `bump`, so the maps read after this load
        // hold at least the change that made this version.
        self.version.load(Ordering::Acquire)
    }

    fn bump(&self) {
        // Release: publishes the map writes before it to callers whose Acquire load reads
        // the new version (see the module docs). An RMW, so concurrent changes each count.
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Checks a weight against the window's rules and the largest limit a key may have.
    #[inline]
    pub(crate) fn check_weight(&self, window: &W, n: u64) -> Result<(), WeightError> {
        window.check_weight_shape(n)?;
        if n > 1 {
            // Relaxed: see set_default.
            let max_requests = self.max_weight.load(Ordering::Relaxed);
            if n > max_requests {
                return Err(WeightError::ExceedsLimit { n, max_requests });
            }
        }
        Ok(())
    }

    /// The default window (its limit is the default limit).
    pub(crate) fn default_window(&self) -> W {
        // Acquire: pairs with the Release store in set_default, so a caller that sees the
        // flag finds the new default in the map (the map insert happens before the store).
        if !self.default_changed.load(Ordering::Acquire) {
            return self.initial.clone();
        }
        self.default
            .get_with(&(), W::clone)
            .expect("the default window is inserted at construction and never removed")
    }

    /// Runs a change under the change lock. A change panics only if the key's `Hash` or
    /// `Eq` does, which leaves the maps consistent, so a poisoned lock is entered anyway.
    fn changing<R>(&self, change: impl FnOnce() -> R) -> R {
        let _serialised = self
            .changes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change()
    }

    pub(crate) fn set_default(&self, limit: Limit) {
        self.changing(|| self.set_default_serialised(limit));
    }

    fn set_default_serialised(&self, limit: Limit) {
        let window = self.default_window().with_limit(limit);
        self.default.insert((), window);
        // Release: see default_window.
        self.default_changed.store(true, Ordering::Release);
        if self.resolver.is_none() && !self.has_overrides.load(Ordering::Relaxed) {
            // Relaxed (both): the change lock orders this check after any earlier
            // set_override's store of `has_overrides` (no override can be set between the
            // check and the store); the bound is checked before any state is read, and a
            // weight it lets through is still refused by a window whose limit is lower.
            self.max_weight.store(limit.max_weight(), Ordering::Relaxed);
        }
        self.bump();
    }

    pub(crate) fn set_override(&self, key: &K, limit: Limit) {
        self.changing(|| self.set_override_serialised(key, limit));
    }

    fn set_override_serialised(&self, key: &K, limit: Limit) {
        // Relaxed: a hint that lets resolution skip an empty map; the override itself is
        // published by the version bump below.
        self.has_overrides.store(true, Ordering::Relaxed);
        // Relaxed: see set_default.
        self.max_weight.store(MAX_REQUESTS, Ordering::Relaxed);
        self.overrides.insert(key.clone(), limit);
        self.bump();
    }

    pub(crate) fn clear_override(&self, key: &K) -> bool {
        self.changing(|| self.clear_override_serialised(key))
    }

    fn clear_override_serialised(&self, key: &K) -> bool {
        let removed = self.overrides.remove(key);
        if removed {
            self.bump();
        }
        removed
    }

    /// [`Self::resolve`] for a key's creation, lending the window to `make` rather than
    /// returning a copy: while no override, resolver or new default exists (most limiters,
    /// always), `make` gets the limiter's own window, and a creation copies no `Limit` (a
    /// few dozen instructions per created key, callgrind).
    #[inline]
    pub(crate) fn with_resolved<Q, R>(&self, key: &Q, make: impl FnOnce(u64, &W) -> R) -> R
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let version = self.version();
        if self.resolver.is_none()
            // Acquire: pairs with set_default's Release store, as in `default_window`.
            && !self.default_changed.load(Ordering::Acquire)
            // Relaxed: see set_override; the version load above orders the map read.
            && !self.has_overrides.load(Ordering::Relaxed)
        {
            return make(version, &self.initial);
        }
        let (version, window) = self.resolve(key);
        make(version, &window)
    }

    /// The limit `key` answers with, from the overrides, the resolver or the default, and
    /// the version it is current for: `(version, window)`.
    pub(crate) fn resolve<Q>(&self, key: &Q) -> (u64, W)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let version = self.version();
        let default = self.default_window();
        // Relaxed: see set_override; the version load above orders the map read.
        let own = if self.has_overrides.load(Ordering::Relaxed) {
            self.overrides.get_with(key, |limit| *limit)
        } else {
            None
        };
        // The resolver takes the owned key: only this cold path (a key's creation, its
        // first call after a change) pays for the copy of a borrowed one.
        let own = own.or_else(|| {
            self.resolver
                .as_ref()
                .and_then(|resolve| resolve(&key.to_owned()))
        });
        let window = match own {
            Some(limit) if limit != default.limit() => default.with_limit(limit),
            _ => default,
        };
        (version, window)
    }
}
