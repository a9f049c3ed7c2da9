//! The key-pool throttler of seeds 000 and 001: `K` API keys, each usable `X` times per
//! cooldown `T`; [`KeyPool::get_next_key`] names a key that may be used now, or none.
//!
//! PROOF-DOCS

mod algorithm;
mod atomic;
mod control;
mod geometry;
mod sequential;

use std::collections::HashMap;
use std::hash::Hash;

pub use atomic::AtomicLedger;
pub use geometry::{
    bucket_bound, seed_bucket_formula, PoolError, PoolGeometry, PoolMode, MAX_BUCKET_SLOTS,
    MAX_TOTAL_USES,
};
pub use sequential::{LockedLedger, SequentialLedger};

/// Why a call got no key.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Every use is held by a bucket that has not cooled down (a false negative only where
    /// the pool's mode allows one).
    Exhausted,
    /// Every bucket slot is held and none has cooled down. With non-decreasing `now` this
    /// never happens (the ring is sized by [`bucket_bound`]); out-of-order `now` can cause it.
    NoBucket,
    /// The call's `now` is below the cooldown end of a bucket that a call with a later `now`
    /// already released: the caller is late (descheduled after reading its clock, or out of
    /// order), and using what that release freed could break the limit at its own `now`.
    Late,
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
    ///
    /// # Errors
    /// The [`Refusal`] that applies.
    fn take(&self, now: u64) -> Result<u64, Refusal>;
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
    /// # Errors
    /// The [`Refusal`] that applies.
    pub fn take(&self, now: u64) -> Result<usize, Refusal> {
        let seq = self.ledger.take(now)?;
        // The remainder is below the number of names, which is a usize.
        Ok((seq % self.ledger.geometry().keys) as usize)
    }

    /// Takes one use at `now` without naming a key (the seed's anonymous `tryUseKey`).
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
