//! The concurrent key map: papaya natively (lookups of existing keys take no lock), and under
//! loom a `RwLock<HashMap>` stand-in with the same interface, because papaya is not loom-aware.
//!
//! Entries are reached through closures so that both can hand out a reference that lives as
//! long as the lookup: papaya's guard keeps the entry's memory alive, the stand-in an `Arc`.

use std::hash::Hash;

use super::KeyHasher;

/// Entries retired per thread before seize tries to free them (its default is 32 per thread,
/// or the CPU count). The batch is freed at once by whichever thread drops it last, so its
/// size is a tail latency: at one thread the call that fills a batch frees it.
///
/// 31 by default: 31 entries of 32 bytes (992) stay below glibc's large-request size, so
/// starting a batch does not make glibc fold every freed small block first
/// (`malloc_consolidate`, 6 % of the lock-free limiter's instructions per churn call at 128).
/// A small batch is cheap because papaya and seize are built without `fast-barrier` (see the
/// workspace manifest): a batch then costs one fence. Side by side (`results/seize-barrier.md`):
/// fences with a batch of 31 against the barrier with 128, the lock-free limiter's p99.9 on
/// churn at one thread 20-26 against 21-40 µs, at two threads 20-53 (most near 24) against
/// 44-101 µs, throughput within the VM's noise.
#[cfg(all(not(slidelimit_loom), not(feature = "fast-barrier")))]
const RECLAIM_BATCH: usize = 31;

/// With `fast-barrier` every batch issues a process-wide barrier (`membarrier`: an interrupt
/// to every core running one of the process's threads, about 11 µs at two threads on the
/// 2-core VM), so a batch must be large enough for the barriers to stay rare: at 31 two
/// threads lost a quarter of their churn throughput, at 512 the one-thread p99.9 tripled;
/// 128 was the compromise (`results/reclaim-batch.md`). This cfg sees only this crate's
/// feature: a build where another crate turns on papaya's or seize's `fast-barrier` gets the
/// barrier with the batch of 31 unless it enables this feature too (the crate README says so).
#[cfg(all(not(slidelimit_loom), feature = "fast-barrier"))]
const RECLAIM_BATCH: usize = 128;

#[cfg(not(slidelimit_loom))]
type Shard<K, V> = papaya::HashMap<K, V, KeyHasher>;

#[cfg(not(slidelimit_loom))]
pub(crate) struct KeyMap<K, V> {
    /// Created on first insert, so a limiter with a handful of keys builds a handful of
    /// shards. All share one collector, so one guard protects a sweep across them.
    shards: Box<[std::sync::OnceLock<Shard<K, V>>]>,
    collector: std::sync::Arc<seize::Collector>,
    hasher: KeyHasher,
}

#[cfg(not(slidelimit_loom))]
impl<K: Hash + Eq + Clone + Send + Sync + 'static, V: Send + Sync + 'static> KeyMap<K, V> {
    pub(crate) fn new(hasher: KeyHasher, shards: usize) -> Self {
        Self {
            shards: (0..shards).map(|_| std::sync::OnceLock::new()).collect(),
            collector: std::sync::Arc::new(seize::Collector::new().batch_size(RECLAIM_BATCH)),
            hasher,
        }
    }

    #[inline]
    fn shard_of<Q>(&self, key: &Q) -> &std::sync::OnceLock<Shard<K, V>>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        &self.shards[super::shard_index(
            std::hash::BuildHasher::hash_one(&self.hasher, key),
            self.shards.len(),
        )]
    }

    /// Runs `f` on the entry of `key`, if there is one.
    #[inline]
    pub(crate) fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let shard = self.shard_of(key).get()?;
        let guard = shard.guard();
        shard.get(key, &guard).map(f)
    }

    /// Runs `f` on the entry of `key`; if there is none, or `f` fails, hands back the
    /// lookup's shard and guard with the failure, for the caller to insert through
    /// ([`Pinned::get_or_insert_with`]) without entering the shard again: a new key costs one
    /// guard, not two. The guard lives as long as the `Pinned`; on success it is left here.
    #[inline]
    pub(crate) fn get_or_pinned<Q, R, M>(
        &self,
        key: &Q,
        f: impl FnOnce(&V) -> Result<R, M>,
    ) -> Result<R, (Option<M>, Pinned<'_, K, V>)>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Some(shard) = self.shard_of(key).get() else {
            return Err((
                None,
                Pinned {
                    map: self,
                    held: None,
                },
            ));
        };
        let guard = shard.guard();
        let failed = match shard.get(key, &guard).map(f) {
            Some(Ok(result)) => return Ok(result),
            Some(Err(failed)) => Some(failed),
            None => None,
        };
        Err((
            failed,
            Pinned {
                map: self,
                held: Some((shard, guard)),
            },
        ))
    }

    /// Runs `f` on the entry of `key`, creating it with `make` in one atomic get-or-insert if
    /// there is none; also says whether this call inserted it. For callers whose lookup just
    /// missed: it goes straight to the insert (which finds an entry that appeared meanwhile),
    /// so a new key costs one probe of the table, not two.
    #[inline]
    pub(crate) fn get_or_insert_with<Q, R>(
        &self,
        key: &Q,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> (R, bool)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let shard = self.shard_or_create(key);
        let guard = shard.guard();
        insert_or_found(shard, key, make, f, &guard)
    }

    /// Visits every entry of shard `shard`; `f` returns whether to unlink it. Unlinks only
    /// the very entry visited (pointer identity), never one that replaced it. Returns how
    /// many were unlinked.
    pub(crate) fn sweep_shard(&self, shard: usize, mut f: impl FnMut(&K, &V) -> bool) -> usize {
        let Some(shard) = self.shards[shard].get() else {
            return 0;
        };
        let guard = shard.guard();
        let mut removed = 0;
        for (key, entry) in shard.iter(&guard) {
            if f(key, entry) {
                let unlinked =
                    shard.remove_if(key, |_, current| std::ptr::eq(current, entry), &guard);
                if matches!(unlinked, Ok(Some(_))) {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Puts `value` at `key`, replacing any entry there.
    pub(crate) fn insert(&self, key: K, value: V) {
        let shard = self.shard_or_create(&key);
        let guard = shard.guard();
        shard.insert(key, value, &guard);
    }

    /// Removes the entry of `key`, if any; says whether there was one.
    pub(crate) fn remove<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Some(shard) = self.shard_of(key).get() else {
            return false;
        };
        let guard = shard.guard();
        shard.remove(key, &guard).is_some()
    }

    /// Runs `f` on the entry of `key`, if there is one, and unlinks that very entry (pointer
    /// identity) if `f` says so. `None`: no entry; `Some(true)`: unlinked.
    ///
    /// One probe of the table: `f` decides inside papaya's conditional removal. papaya asks
    /// again when its unlink has to retry (a table copy moved the entry, or the slot changed);
    /// `f` runs at most once, and the entry it said yes to stays a yes, because `f` may have
    /// acted on it (retired it) and nothing but this call may unlink it afterwards.
    pub(crate) fn remove_if_with<Q>(&self, key: &Q, f: impl FnOnce(&V) -> bool) -> Option<bool>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let shard = self.shard_of(key).get()?;
        let guard = shard.guard();
        let mut f = Some(f);
        // The entry `f` judged and its verdict (compared by address only, never read).
        let mut judged: Option<(*const V, bool)> = None;
        let outcome = shard.remove_if(
            key,
            |_, current| match judged {
                Some((entry, verdict)) if std::ptr::eq(entry, current) => verdict,
                // papaya's retry found another entry in the key's slot: `f` judged the one
                // it replaced, so this one stays.
                Some(_) => false,
                None => {
                    let verdict = f.take().is_some_and(|f| f(current));
                    judged = Some((current, verdict));
                    verdict
                }
            },
            &guard,
        );
        match outcome {
            Ok(Some(_)) => Some(true),
            Ok(None) => judged.map(|_| false),
            Err(_) => Some(false),
        }
    }

    /// Whether `key` has an entry.
    pub(crate) fn contains<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.get_with(key, |_| ()).is_some()
    }

    /// Replaces the entry of `key` with `make()` if it is still the very entry `current`
    /// (pointer identity); says whether it did. The caller holds `current` retired, so no
    /// one else unlinks or replaces it meanwhile.
    pub(crate) fn replace_same<Q>(&self, key: &Q, current: &V, mut make: impl FnMut() -> V) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Some(shard) = self.shard_of(key).get() else {
            return false;
        };
        let guard = shard.guard();
        loop {
            let mut fresh = Some(make());
            let outcome = shard.compute(
                key.to_owned(),
                |entry| match entry {
                    Some((_, found)) if std::ptr::eq(found, current) => match fresh.take() {
                        Some(value) => papaya::Operation::Insert(value),
                        // Called again after the value went into a failed attempt: build
                        // another one (below).
                        None => papaya::Operation::Abort(true),
                    },
                    _ => papaya::Operation::Abort(false),
                },
                &guard,
            );
            match outcome {
                papaya::Compute::Updated { .. } => return true,
                papaya::Compute::Aborted(true) => continue,
                _ => return false,
            }
        }
    }

    /// Visits every entry of shard `shard`.
    pub(crate) fn for_each_in_shard(&self, shard: usize, mut f: impl FnMut(&K, &V)) {
        let Some(shard) = self.shards[shard].get() else {
            return;
        };
        let guard = shard.guard();
        for (key, entry) in shard.iter(&guard) {
            f(key, entry);
        }
    }

    /// The shard count.
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    fn shard_or_create<Q>(&self, key: &Q) -> &Shard<K, V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.shard_of(key).get_or_init(|| {
            papaya::HashMap::builder()
                .hasher(self.hasher.clone())
                .shared_collector(std::sync::Arc::clone(&self.collector))
                .resize_mode(papaya::ResizeMode::Blocking)
                .build()
        })
    }

    /// The entries of every shard, counted by papaya (a sum over its per-thread counts):
    /// for gauges and snapshots, not for paths every call takes.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .filter_map(std::sync::OnceLock::get)
            .map(papaya::HashMap::len)
            .sum()
    }
}

/// One atomic get-or-insert in `shard` under `guard` (see [`KeyMap::get_or_insert_with`]).
#[cfg(not(slidelimit_loom))]
#[inline]
fn insert_or_found<K, V, Q, R>(
    shard: &Shard<K, V>,
    key: &Q,
    make: impl FnOnce() -> V,
    f: impl FnOnce(&V) -> R,
    guard: &papaya::LocalGuard<'_>,
) -> (R, bool)
where
    K: Hash + Eq + std::borrow::Borrow<Q>,
    Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    match shard.try_insert_with(key.to_owned(), make, guard) {
        Ok(entry) => (f(entry), true),
        Err(entry) => (f(entry), false),
    }
}

/// A missed lookup's shard and guard (see [`KeyMap::get_or_pinned`]); none if the key's shard
/// did not exist yet.
#[cfg(not(slidelimit_loom))]
pub(crate) struct Pinned<'a, K, V> {
    map: &'a KeyMap<K, V>,
    held: Option<(&'a Shard<K, V>, papaya::LocalGuard<'a>)>,
}

#[cfg(not(slidelimit_loom))]
impl<K: Hash + Eq + Clone + Send + Sync + 'static, V: Send + Sync + 'static> Pinned<'_, K, V> {
    /// [`KeyMap::get_or_insert_with`] under the lookup's guard.
    #[inline]
    pub(crate) fn get_or_insert_with<Q, R>(
        &self,
        key: &Q,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> (R, bool)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match &self.held {
            Some((shard, guard)) => insert_or_found(shard, key, make, f, guard),
            None => self.map.get_or_insert_with(key, make, f),
        }
    }
}

#[cfg(slidelimit_loom)]
pub(crate) struct KeyMap<K, V> {
    inner: crate::sync::RwLock<std::collections::HashMap<K, crate::sync::Arc<V>, KeyHasher>>,
}

#[cfg(slidelimit_loom)]
impl<K: Hash + Eq + Clone + Send + Sync + 'static, V: Send + Sync + 'static> KeyMap<K, V> {
    /// One shard whatever is asked: the models' maps hold a key or two.
    pub(crate) fn new(hasher: KeyHasher, _shards: usize) -> Self {
        Self {
            inner: crate::sync::RwLock::new(std::collections::HashMap::with_hasher(hasher)),
        }
    }

    pub(crate) fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let entry = self.inner.read().unwrap().get(key).cloned();
        entry.map(|entry| f(&entry))
    }

    pub(crate) fn get_or_pinned<Q, R, M>(
        &self,
        key: &Q,
        f: impl FnOnce(&V) -> Result<R, M>,
    ) -> Result<R, (Option<M>, Pinned<'_, K, V>)>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match self.get_with(key, f) {
            Some(Ok(result)) => Ok(result),
            Some(Err(failed)) => Err((Some(failed), Pinned { map: self })),
            None => Err((None, Pinned { map: self })),
        }
    }

    pub(crate) fn get_or_insert_with<Q, R>(
        &self,
        key: &Q,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> (R, bool)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let existing = self.inner.read().unwrap().get(key).cloned();
        if let Some(entry) = existing {
            return (f(&entry), false);
        }
        let (entry, inserted) = {
            let mut map = self.inner.write().unwrap();
            if cfg!(slidelimit_loom_mutant = "get_then_insert") {
                // Deliberately broken for the loom negative control: blind insert after a miss.
                let entry = crate::sync::Arc::new(make());
                map.insert(key.to_owned(), entry.clone());
                (entry, true)
            } else {
                match map.get(key) {
                    Some(entry) => (entry.clone(), false),
                    None => {
                        let entry = crate::sync::Arc::new(make());
                        map.insert(key.to_owned(), entry.clone());
                        (entry, true)
                    }
                }
            }
        };
        (f(&entry), inserted)
    }

    pub(crate) fn sweep_shard(&self, _shard: usize, mut f: impl FnMut(&K, &V) -> bool) -> usize {
        let snapshot: Vec<(K, crate::sync::Arc<V>)> = self
            .inner
            .read()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut removed = 0;
        for (key, entry) in snapshot {
            if f(&key, &entry) {
                let mut map = self.inner.write().unwrap();
                if map
                    .get(&key)
                    .is_some_and(|current| crate::sync::Arc::ptr_eq(current, &entry))
                {
                    map.remove(&key);
                    removed += 1;
                }
            }
        }
        removed
    }

    pub(crate) fn insert(&self, key: K, value: V) {
        self.inner
            .write()
            .unwrap()
            .insert(key, crate::sync::Arc::new(value));
    }

    pub(crate) fn remove<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.inner.write().unwrap().remove(key).is_some()
    }

    pub(crate) fn remove_if_with<Q>(&self, key: &Q, f: impl FnOnce(&V) -> bool) -> Option<bool>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let entry = self.inner.read().unwrap().get(key).cloned()?;
        if !f(&entry) {
            return Some(false);
        }
        let mut map = self.inner.write().unwrap();
        if map
            .get(key)
            .is_some_and(|current| crate::sync::Arc::ptr_eq(current, &entry))
        {
            map.remove(key);
            return Some(true);
        }
        Some(false)
    }

    pub(crate) fn contains<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.inner.read().unwrap().contains_key(key)
    }

    pub(crate) fn replace_same<Q>(&self, key: &Q, current: &V, mut make: impl FnMut() -> V) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut map = self.inner.write().unwrap();
        match map.get_mut(key) {
            Some(found) if std::ptr::eq(&**found, current) => {
                *found = crate::sync::Arc::new(make());
                true
            }
            _ => false,
        }
    }

    pub(crate) fn for_each_in_shard(&self, _shard: usize, mut f: impl FnMut(&K, &V)) {
        let snapshot: Vec<(K, crate::sync::Arc<V>)> = self
            .inner
            .read()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, entry) in snapshot {
            f(&key, &entry);
        }
    }

    pub(crate) fn shard_count(&self) -> usize {
        1
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.read().unwrap().len()
    }
}

/// The stand-in's [`KeyMap::get_or_pinned`] handle: it holds no guard (the stand-in's entries
/// are `Arc`s), only the map to insert into.
#[cfg(slidelimit_loom)]
pub(crate) struct Pinned<'a, K, V> {
    map: &'a KeyMap<K, V>,
}

#[cfg(slidelimit_loom)]
impl<K: Hash + Eq + Clone + Send + Sync + 'static, V: Send + Sync + 'static> Pinned<'_, K, V> {
    pub(crate) fn get_or_insert_with<Q, R>(
        &self,
        key: &Q,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> (R, bool)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.map.get_or_insert_with(key, make, f)
    }
}

#[cfg(all(test, not(slidelimit_loom)))]
mod tests {
    use super::KeyMap;

    /// A removal whose unlink meets a table copy is retried by papaya, which asks again
    /// whether to remove: the verdict on an entry must stay what `f` said (here a yes), or an
    /// entry `f` acted on stays linked. One thread inserts keys without end (one shard, so
    /// its table is copied every few hundred inserts), the other removes each key once `f`
    /// says yes; every key `f` said yes to must be gone.
    #[test]
    fn a_removal_that_meets_a_table_copy_keeps_its_verdict() {
        let map = KeyMap::<u64, u64>::new(crate::keyed::process_hasher(), 1);
        let keys = 200_000;
        let inserted = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for key in 0..keys {
                    map.insert(key, key);
                    // Release: pairs with the remover's Acquire load, so the key is there.
                    inserted.store(key + 1, std::sync::atomic::Ordering::Release);
                }
            });
            let mut next = 0;
            while next < keys {
                // Acquire: pairs with the inserter's Release store.
                let ready = inserted.load(std::sync::atomic::Ordering::Acquire);
                for key in next..ready {
                    let mut asked = 0;
                    let outcome = map.remove_if_with(&key, |value| {
                        asked += 1;
                        // Widens the gap between the verdict and the unlink, where a copy
                        // that starts makes papaya retry.
                        for _ in 0..200 {
                            std::hint::spin_loop();
                        }
                        *value == key
                    });
                    assert_eq!(outcome, Some(true), "key {key}");
                    assert_eq!(asked, 1, "key {key}");
                    assert!(!map.contains(&key), "key {key} left linked");
                }
                next = ready;
            }
        });
        assert_eq!(map.len(), 0);
    }
}
