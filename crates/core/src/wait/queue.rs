//! The per-key waiter queues: a FIFO-fair tokio mutex per key that has waiters, in a map
//! that holds a key only while some waiter is registered on it.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One key's queue: the mutex its waiters take in arrival order, and how many waiters are
/// registered (queued or at the head).
#[derive(Debug)]
struct Queue {
    turn: Arc<tokio::sync::Mutex<()>>,
    waiters: usize,
}

/// The queues of every key with waiters.
///
/// A std mutex guards the map: each critical section is one hash lookup and a counter
/// update, never an await, so it is never held while a task is suspended. Waiting is not on
/// the limiters' lock-free path, so this uses std's lock directly (loom models threads, not
/// tasks).
#[derive(Debug)]
pub(super) struct WaiterMap<K> {
    queues: Mutex<HashMap<K, Queue>>,
}

impl<K: Hash + Eq + Clone> WaiterMap<K> {
    pub(super) fn new() -> Self {
        Self {
            queues: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Queue>> {
        // Every update below completes before it can panic (no user code runs under the
        // lock but K's Hash, Eq and Clone): the map is consistent even after a poisoning.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `key` has any registered waiter.
    pub(super) fn is_waited_on(&self, key: &K) -> bool {
        self.lock().contains_key(key)
    }

    /// Registers a waiter on `key`, creating its queue if it is the first. The returned
    /// guard unregisters it when dropped, whatever await point its future was dropped at.
    pub(super) fn register(&self, key: &K) -> Waiter<'_, K> {
        let mut queues = self.lock();
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

    /// How many keys have registered waiters.
    pub(super) fn keys(&self) -> usize {
        self.lock().len()
    }

    /// How many waiters are registered on `key`.
    pub(super) fn waiters_on(&self, key: &K) -> usize {
        self.lock().get(key).map_or(0, |queue| queue.waiters)
    }

    fn unregister(&self, key: &K) {
        let mut queues = self.lock();
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
