//! The per-key waiter queues: a FIFO-fair tokio mutex per key that has waiters, in a map
//! that holds a key only while some waiter is registered on it.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One key's queue: the mutex its waiters take in arrival order, and how many waiters are
/// registered (queued or at the head).
#[derive(Debug)]
struct Queue {
    turn: Arc<tokio::sync::Mutex<()>>,
    waiters: usize,
}

/// How many independently locked parts the map has: every call on a key without waiters
/// looks its key up once, so one lock for all keys would serialise callers of different
/// keys.
const SHARDS: usize = 32;

/// The queues of every key with waiters, in [`SHARDS`] maps chosen by the key's hash.
///
/// A std mutex guards each map: each critical section is one hash lookup and a counter
/// update, never an await, so it is never held while a task is suspended. Waiting is not on
/// the limiters' lock-free path, so this uses std's lock directly (loom models threads, not
/// tasks).
#[derive(Debug)]
pub(super) struct WaiterMap<K> {
    hasher: RandomState,
    shards: Box<[Mutex<HashMap<K, Queue>>]>,
}

impl<K: Hash + Eq + Clone> WaiterMap<K> {
    pub(super) fn new() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    fn lock_shard(shard: &Mutex<HashMap<K, Queue>>) -> MutexGuard<'_, HashMap<K, Queue>> {
        // Every update below completes before it can panic (no user code runs under the
        // lock but K's Hash, Eq and Clone): the map is consistent even after a poisoning.
        shard.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The map `key` lives in, locked.
    fn lock(&self, key: &K) -> MutexGuard<'_, HashMap<K, Queue>> {
        // The remainder is below SHARDS, so the cast back to usize is lossless.
        let shard = (self.hasher.hash_one(key) % SHARDS as u64) as usize;
        Self::lock_shard(&self.shards[shard])
    }

    /// Whether `key` has any registered waiter.
    pub(super) fn is_waited_on(&self, key: &K) -> bool {
        self.lock(key).contains_key(key)
    }

    /// Registers a waiter on `key`, creating its queue if it is the first. The returned
    /// guard unregisters it when dropped, whatever await point its future was dropped at.
    pub(super) fn register(&self, key: &K) -> Waiter<'_, K> {
        let mut queues = self.lock(key);
        let turn = match queues.get_mut(key) {
            Some(queue) => {
                queue.waiters += 1;
                Arc::clone(&queue.turn)
            }
            None => {
                let turn = Arc::new(tokio::sync::Mutex::new(()));
                let queue = Queue {
                    turn: Arc::clone(&turn),
                    waiters: 1,
                };
                queues.insert(key.clone(), queue);
                turn
            }
        };
        Waiter {
            map: self,
            key: key.clone(),
            turn,
        }
    }

    /// How many keys have registered waiters (each part counted under its own lock, so
    /// not one instant's snapshot while waiters come and go).
    pub(super) fn keys(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| Self::lock_shard(shard).len())
            .sum()
    }

    /// How many waiters are registered on `key`.
    pub(super) fn waiters_on(&self, key: &K) -> usize {
        self.lock(key).get(key).map_or(0, |queue| queue.waiters)
    }

    fn unregister(&self, key: &K) {
        let mut queues = self.lock(key);
        // A registered waiter's queue stays until it unregisters; only a key whose Hash or
        // Eq changed its mind could miss it, and then there is nothing to undo.
        let last = queues.get_mut(key).is_some_and(|queue| {
            queue.waiters -= 1;
            queue.waiters == 0
        });
        if last {
            queues.remove(key);
        }
    }
}

/// A registered waiter. Its queue's turn is taken with [`Waiter::turn`]; dropping the
/// waiter unregisters it, and the last waiter of a key removes the key's queue.
#[derive(Debug)]
pub(super) struct Waiter<'a, K: Hash + Eq + Clone> {
    map: &'a WaiterMap<K>,
    key: K,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl<K: Hash + Eq + Clone> Waiter<'_, K> {
    /// Waits until every waiter registered on the key before this one has left, then holds
    /// the key's turn until the guard is dropped.
    ///
    /// tokio's mutex hands the lock out in the order the `lock` futures were first polled,
    /// and its `lock` is cancellation-safe: dropping the future gives up the place in line.
    pub(super) async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }
}

impl<K: Hash + Eq + Clone> Drop for Waiter<'_, K> {
    fn drop(&mut self) {
        self.map.unregister(&self.key);
    }
}
