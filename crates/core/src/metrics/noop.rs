//! The limiter's metrics with feature `metrics` off: a zero-sized type whose methods do
//! nothing and inline away, so the hot path is what it was without metrics.

/// No handles, no state.
pub(crate) struct LimiterMetrics;

// Every method has the signature of its twin in `handles.rs`, so call sites need no `cfg`.
impl LimiterMetrics {
    #[inline(always)]
    pub(crate) fn new(_name: &'static str) -> Self {
        Self
    }

    #[inline(always)]
    pub(crate) fn decided(&self, admitted: bool) -> bool {
        admitted
    }

    #[inline(always)]
    pub(crate) fn key_created(&self) {}

    #[inline(always)]
    pub(crate) fn refused_by_budget(&self) {}

    #[inline(always)]
    pub(crate) fn swept(&self, _removed: usize) {}

    #[inline(always)]
    pub(crate) fn keys_removed(&self, _removed: usize) {}

    #[inline(always)]
    pub(crate) fn tracked(&self, _tracked: usize) {}

    #[inline(always)]
    pub(crate) fn tombstones_held(&self, _count: impl FnOnce() -> usize) {}

    #[inline(always)]
    pub(crate) fn timed_sweep<R>(&self, sweep: impl FnOnce() -> R) -> R {
        sweep()
    }
}
