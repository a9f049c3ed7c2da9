//! The machine floor: the least any keyed limiter built from a map and a CAS can cost. One
//! lookup in a read-only, pre-filled hash map (foldhash, like slidelimit's maps) and one CAS
//! on the `u64` found there. No allocation, no key creation, no window logic.
//!
//! The CAS is attempted once; a lost race still counts as a decision (the floor has no
//! retry loop, so contention shows only as cache-line traffic).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::target::Target;
use crate::workload::Workload;

/// A read-only map from every key of the workload's universe to an atomic word.
pub struct Floor {
    map: HashMap<u64, AtomicU64, foldhash::fast::RandomState>,
}

impl Floor {
    /// The floor for `workload`, pre-filled with its whole key universe.
    #[must_use]
    pub fn new(workload: &Workload) -> Self {
        let mut map = HashMap::with_capacity_and_hasher(
            usize::try_from(workload.keys.universe_size()).unwrap_or(usize::MAX),
            foldhash::fast::RandomState::default(),
        );
        map.extend(workload.keys.universe().map(|key| (key, AtomicU64::new(0))));
        Self { map }
    }
}

impl Target for Floor {
    #[inline]
    fn check_and_hit(&self, key: u64, now: u64) -> bool {
        self.map.get(&key).is_some_and(|word| {
            // Acquire load, AcqRel/Relaxed CAS: the orderings a window slot uses, so the floor
            // pays what a slot costs; the result is only counted.
            let seen = word.load(Ordering::Acquire);
            let _ = word.compare_exchange(seen, now, Ordering::AcqRel, Ordering::Relaxed);
            true
        })
    }

    #[inline]
    fn allowed(&self, key: u64, now: u64) -> bool {
        self.map
            .get(&key)
            // Acquire: the ordering of a window slot's load, as in check_and_hit above.
            .is_some_and(|word| word.load(Ordering::Acquire) <= now)
    }

    fn tracked_keys(&self) -> Option<usize> {
        Some(self.map.len())
    }

    fn remove_idle(&self, _now: u64) -> Option<usize> {
        None
    }
}
