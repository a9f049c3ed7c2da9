//! The key pool's cells: `get_next_key` on a pool of API keys, exact against AB, lock-free
//! against mutex, driven by the same thread driver and shared fake clock as every limiter.
//!
//! A pool setup is a [`Workload`] on the hot key (the pool takes no key), so the driver, the
//! runner's trials and latency samples and the criterion visitors run it unchanged; its two
//! variants are registered by [`for_each`] beside (not inside) the limiter registry, so no
//! limiter runs a pool workload and no pool runs a limiter's.
//!
//! The setup is a pool of 500 uses per key per 10 minutes, scaled to the fake clock's pace (one tick, 1 µs, per
//! [`OPS_PER_TICK`] calls in all): 50 keys × 500 uses = 25,000 uses per cooldown of 500 ticks,
//! against 32,000 calls per cooldown. The pool hands out uses in a burst until it is
//! exhausted, refuses until the burst's first uses have cooled down, and from then on mirrors
//! the burst one cooldown later: at most 78% of calls are granted, whatever a variant's speed
//! or the thread count (a real clock would grant a fast variant a smaller share than a slow
//! one and compare different mixes of grants and refusals). AB uses τ = T/10 and k = L/10.

use std::hint::black_box;

use slidelimit::pool::{AtomicLedger, KeyPool, PoolMode, UseLedger};
use slidelimit_mutex::MutexKeyPool;

use crate::clock::{OPS_PER_TICK, TICK_NS};
use crate::target::Target;
use crate::variants::{Context, Family, Meta, Visitor};
use crate::workload::{ClockKind, Keys, Mix, Workload};

/// Keys in the pool.
pub const KEYS: usize = 50;
/// Uses per key per cooldown.
pub const USES_PER_KEY: u64 = 500;
/// The cooldown `T`, in fake-clock ticks (nanoseconds, as every limiter sees them).
pub const COOLDOWN_NS: u64 = 500 * TICK_NS;
/// `L`: uses per cooldown, all keys.
pub const TOTAL_USES: u64 = KEYS as u64 * USES_PER_KEY;

/// One pool configuration of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSetup {
    /// The workload name on the command line and in reports.
    pub name: &'static str,
    /// The pool's false-negative mode.
    pub mode: PoolMode,
}

impl PoolSetup {
    /// The workload the driver runs: every call a `get_next_key` at the shared fake clock.
    #[must_use]
    pub fn workload(&self) -> Workload {
        Workload {
            name: self.name,
            about: match self.mode {
                PoolMode::Exact => {
                    "key pool, exact: one bucket per use (a ring of about L slots), no false \
                     negative"
                }
                _ => {
                    "key pool, AB: a bucket closes after τ = T/10 or k = L/10 uses; false \
                     negatives only when fewer than k uses are free and all were used within \
                     T + τ"
                }
            },
            keys: Keys::Hot,
            max_requests: TOTAL_USES,
            window_ns: COOLDOWN_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: false,
            worst_call: false,
        }
    }

    /// A fresh pool of this setup's geometry, keys named `key-00` … `key-49`.
    ///
    /// # Panics
    /// Never: the built-in setups are valid.
    #[must_use]
    pub fn build<G: UseLedger>(&self) -> KeyPool<String, G> {
        KeyPool::new(
            (0..KEYS).map(|k| format!("key-{k:02}")),
            USES_PER_KEY,
            COOLDOWN_NS,
            self.mode,
        )
        .expect("the built-in pool setups are valid")
    }

    /// The most calls in a cooldown a pool can grant at the fake clock's pace (the share a
    /// variant gets is measured; late calls and AB's buckets make it lower).
    #[must_use]
    pub fn grant_ceiling(&self) -> f64 {
        TOTAL_USES as f64 / (COOLDOWN_NS / TICK_NS * OPS_PER_TICK) as f64
    }
}

/// The pool setups: exact, then AB with τ = T/10 and k = L/10.
#[must_use]
pub fn setups() -> Vec<PoolSetup> {
    vec![
        PoolSetup {
            name: "pool-exact",
            mode: PoolMode::Exact,
        },
        PoolSetup {
            name: "pool-ab",
            mode: PoolMode::Both {
                threshold_ticks: COOLDOWN_NS / 10,
                key_threshold: TOTAL_USES / 10,
            },
        },
    ]
}

/// The pool setup whose workload is called `name`.
#[must_use]
pub fn find(name: &str) -> Option<PoolSetup> {
    setups().into_iter().find(|s| s.name == name)
}

/// A key pool as a [`Target`]: `check_and_hit` is `get_next_key(now)`, the key ignored.
pub struct PoolTarget<G>(pub KeyPool<String, G>);

impl<G: UseLedger> Target for PoolTarget<G> {
    #[inline]
    fn check_and_hit(&self, _key: u64, now: u64) -> bool {
        // The name is materialised (the index mod 50 and the slice access), as a caller
        // using it would; `is_some` alone would let the compiler drop both.
        black_box(self.0.get_next_key(now)).is_some()
    }

    #[inline]
    fn allowed(&self, _key: u64, now: u64) -> bool {
        self.0.available(now) > 0
    }

    fn tracked_keys(&self) -> Option<usize> {
        None
    }

    fn remove_idle(&self, _now: u64) -> Option<usize> {
        None
    }
}

fn pool_workloads(workload: &Workload) -> bool {
    find(workload.name).is_some()
}

fn setup_of(cx: &Context<'_>) -> PoolSetup {
    find(cx.workload.name).expect("pool variants run only pool workloads")
}

/// Visits the pool's two variants: the lock-free `KeyPool` and `MutexKeyPool`. Their names
/// are the ledgers' own (`variant()`), so `--variants lock-free,mutex` selects them too.
pub fn for_each(visitor: &mut impl Visitor) {
    visitor.visit(
        &Meta {
            name: "lock-free",
            family: Family::Ours,
            algorithm: "pool",
            about: "KeyPool: one CAS on a packed control word per decision",
            supports: pool_workloads,
        },
        &|cx| PoolTarget(setup_of(cx).build::<AtomicLedger>()),
    );
    visitor.visit(
        &Meta {
            name: "mutex",
            family: Family::Ours,
            algorithm: "pool",
            about: "MutexKeyPool: the same algorithm on plain integers under one Mutex",
            supports: pool_workloads,
        },
        &|cx| {
            let pool: MutexKeyPool<String> = setup_of(cx).build();
            PoolTarget(pool)
        },
    );
}

#[cfg(test)]
mod tests {
    use slidelimit::pool::AtomicLedger;

    use super::{find, setups, PoolTarget};
    use crate::clock::{BenchClock, OPS_PER_TICK};
    use crate::drive;
    use crate::target::Target;
    use crate::variants::{Context, Meta, Visitor};

    /// Builds each variant on each setup and runs two cooldowns on one thread.
    struct Check(Vec<(&'static str, &'static str, u64, u64)>);

    impl Visitor for Check {
        fn visit<T: Target + 'static>(&mut self, meta: &Meta, make: &dyn Fn(&Context<'_>) -> T) {
            for setup in setups() {
                let workload = setup.workload();
                assert!((meta.supports)(&workload));
                let clock = BenchClock::fake();
                let target = make(&Context {
                    workload: &workload,
                    clock: &clock,
                });
                let stream = workload.stream();
                let ops = 2 * workload.warmup_ops();
                let (granted, _) =
                    drive::run_inline(&target, workload.mix, &stream, &clock, 0, ops);
                self.0.push((meta.name, setup.name, granted, ops));
            }
        }
    }

    #[test]
    fn both_variants_grant_and_refuse_alike() {
        let mut check = Check(Vec::new());
        super::for_each(&mut check);
        assert_eq!(check.0.len(), 4);
        for &(variant, setup, granted, ops) in &check.0 {
            let ceiling = find(setup).unwrap().grant_ceiling();
            let share = granted as f64 / ops as f64;
            assert!(
                share > 0.5 && share <= ceiling + 1e-9,
                "{variant} on {setup}: {granted} of {ops}"
            );
        }
        // One thread, one sequence of `now`: the two ledgers decide identically.
        let (lock_free, mutex) = check.0.split_at(2);
        for (a, b) in lock_free.iter().zip(mutex) {
            assert_eq!((a.1, a.2), (b.1, b.2), "{} against {}", a.0, b.0);
        }
        assert_eq!(
            OPS_PER_TICK, 64,
            "the setup's numbers assume 64 calls per tick"
        );
    }

    #[test]
    fn pool_workload_names_are_their_own() {
        // `--workloads` selects both kinds by name: a shared name would run both.
        for setup in setups() {
            assert!(
                crate::workload::find(setup.name).is_none(),
                "{}",
                setup.name
            );
        }
    }

    #[test]
    fn the_target_names_a_key() {
        let target = PoolTarget(find("pool-exact").unwrap().build::<AtomicLedger>());
        assert_eq!(target.0.get_next_key(0).map(String::as_str), Some("key-00"));
        assert!(target.check_and_hit(0, 0));
        assert_eq!(target.0.variant(), "lock-free");
    }
}
