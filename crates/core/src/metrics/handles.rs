//! The limiter's metric handles (feature `metrics` on): registered once when the limiter is
//! built, then only incremented or set.

use metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};

use super::{
    BUDGET_REFUSALS, DECISIONS, KEYS_CREATED, KEYS_REMOVED, KEYS_TRACKED, LIMITER_LABEL,
    SWEEP_SECONDS, TOMBSTONES,
};

/// One limiter's handles, labelled with its name.
pub(crate) struct LimiterMetrics {
    admitted: Counter,
    refused: Counter,
    keys_created: Counter,
    keys_removed: Counter,
    budget_refusals: Counter,
    keys_tracked: Gauge,
    tombstones: Gauge,
    sweep_seconds: Histogram,
}

impl LimiterMetrics {
    /// Registers the handles with the recorder installed now (no-op handles if none is).
    pub(crate) fn new(name: &'static str) -> Self {
        Self {
            admitted: counter!(DECISIONS, LIMITER_LABEL => name, "outcome" => "admitted"),
            refused: counter!(DECISIONS, LIMITER_LABEL => name, "outcome" => "refused"),
            keys_created: counter!(KEYS_CREATED, LIMITER_LABEL => name),
            keys_removed: counter!(KEYS_REMOVED, LIMITER_LABEL => name),
            budget_refusals: counter!(BUDGET_REFUSALS, LIMITER_LABEL => name),
            keys_tracked: gauge!(KEYS_TRACKED, LIMITER_LABEL => name),
            tombstones: gauge!(TOMBSTONES, LIMITER_LABEL => name),
            sweep_seconds: histogram!(SWEEP_SECONDS, LIMITER_LABEL => name),
        }
    }

    /// Counts a decision; gives `admitted` back, so the call site stays an expression.
    #[inline]
    pub(crate) fn decided(&self, admitted: bool) -> bool {
        if admitted {
            self.admitted.increment(1);
        } else {
            self.refused.increment(1);
        }
        admitted
    }

    /// A call created a key's state: one more key tracked. The gauge moves by one rather
    /// than being set to the limiter's count, which is a sum over its shards (see
    /// `crate::keyed`), too costly to read per creation.
    pub(crate) fn key_created(&self) {
        self.keys_created.increment(1);
        self.keys_tracked.increment(1.0);
    }

    /// The automatic sweep of one shard removed `removed` keys: that many fewer tracked.
    pub(crate) fn swept(&self, removed: usize) {
        self.keys_removed(removed);
        self.keys_tracked.decrement(removed as f64);
    }

    /// A decision on a key with no state was refused: the key budget was full.
    pub(crate) fn refused_by_budget(&self) {
        self.budget_refusals.increment(1);
    }

    /// A sweep removed `removed` keys.
    pub(crate) fn keys_removed(&self, removed: usize) {
        self.keys_removed.increment(removed as u64);
    }

    /// `tracked` keys have state now.
    pub(crate) fn tracked(&self, tracked: usize) {
        self.keys_tracked.set(tracked as f64);
    }

    /// The tombstones held now, counted by `count` (called only with the feature on).
    pub(crate) fn tombstones_held(&self, count: impl FnOnce() -> usize) {
        self.tombstones.set(count() as f64);
    }

    /// Runs the sweep `sweep`, recording its duration.
    pub(crate) fn timed_sweep<R>(&self, sweep: impl FnOnce() -> R) -> R {
        let start = std::time::Instant::now();
        let result = sweep();
        self.sweep_seconds.record(start.elapsed().as_secs_f64());
        result
    }
}
