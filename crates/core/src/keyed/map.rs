//! The concurrent key map: papaya natively (lookups of existing keys take no lock), and under
//! loom a `RwLock<HashMap>` stand-in with the same interface, because papaya is not loom-aware.
//!
//! Entries are reached through closures so that both can hand out a reference that lives as
//! long as the lookup: papaya's guard keeps the entry's memory alive, the stand-in an `Arc`.

use std::hash::Hash;

use super::KeyHasher;

#[cfg(not(slidelimit_loom))]
pub(crate) struct KeyMap<K, V> {
    inner: papaya::HashMap<K, V, KeyHasher>,
}

#[cfg(not(slidelimit_loom))]
impl<K: Hash + Eq + Clone + Send + Sync + 'static, V: Send + Sync + 'static> KeyMap<K, V> {
    pub(crate) fn new(hasher: KeyHasher) -> Self {
        Self {
            inner: papaya::HashMap::builder()
                .hasher(hasher)
                .resize_mode(papaya::ResizeMode::Blocking)
                .build(),
        }
    }

    /// Runs `f` on the entry of `key`, if there is one.
    #[inline]
    pub(crate) fn get_with<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        let guard = self.inner.guard();
        self.inner.get(key, &guard).map(f)
    }

    /// Runs `f` on the entry of `key`, creating it with `make` in one atomic get-or-insert if
    /// there is none; also says whether this call inserted it. For callers whose lookup just
    /// missed: it goes straight to the insert (which finds an entry that appeared meanwhile),
    /// so a new key costs one probe of the table, not two.
    #[inline]
    pub(crate) fn get_or_insert_with<R>(
        &self,
        key: &K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> (R, bool) {
        let guard = self.inner.guard();
        match self.inner.try_insert_with(key.clone(), make, &guard) {
            Ok(entry) => (f(entry), true),
            Err(entry) => (f(entry), false),
        }
    }

    /// Visits every entry; `f` returns whether to unlink it. Unlinks only the very entry
    /// visited (pointer identity), never one that replaced it. Returns how many were unlinked.
    pub(crate) fn sweep(&self, mut f: impl FnMut(&K, &V) -> bool) -> usize {
        let guard = self.inner.guard();
        let mut removed = 0;
        for (key, entry) in self.inner.iter(&guard) {
            if f(key, entry) {
                let unlinked =
                    self.inner
                        .remove_if(key, |_, current| std::ptr::eq(current, entry), &guard);
                if matches!(unlinked, Ok(Some(_))) {
                    removed += 1;
                }
            }
        }
        removed
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.len()
    }
}

#[cfg(slidelimit_loom)]
pub(crate) struct KeyMap<K, V> {
    inner: crate::sync::RwLock<std::collections::HashMap<K, crate::sync::Arc<V>, KeyHasher>>,
}

#[cfg(slidelimit_loom)]
impl<K: Hash + Eq + Clone + Send + Sync + 'static, V: Send + Sync + 'static> KeyMap<K, V> {
    pub(crate) fn new(hasher: KeyHasher) -> Self {
        Self {
            inner: crate::sync::RwLock::new(std::collections::HashMap::with_hasher(hasher)),
        }
    }

    pub(crate) fn get_with<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        let entry = self.inner.read().unwrap().get(key).cloned();
        entry.map(|entry| f(&entry))
    }

    pub(crate) fn get_or_insert_with<R>(
        &self,
        key: &K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> (R, bool) {
        let existing = self.inner.read().unwrap().get(key).cloned();
        if let Some(entry) = existing {
            return (f(&entry), false);
        }
        let (entry, inserted) = {
            let mut map = self.inner.write().unwrap();
            if cfg!(slidelimit_loom_mutant = "get_then_insert") {
                // Deliberately broken for the loom negative control: blind insert after a miss.
                let entry = crate::sync::Arc::new(make());
                map.insert(key.clone(), entry.clone());
                (entry, true)
            } else {
                match map.get(key) {
                    Some(entry) => (entry.clone(), false),
                    None => {
                        let entry = crate::sync::Arc::new(make());
                        map.insert(key.clone(), entry.clone());
                        (entry, true)
                    }
                }
            }
        };
        (f(&entry), inserted)
    }

    pub(crate) fn sweep(&self, mut f: impl FnMut(&K, &V) -> bool) -> usize {
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

    pub(crate) fn len(&self) -> usize {
        self.inner.read().unwrap().len()
    }
}
