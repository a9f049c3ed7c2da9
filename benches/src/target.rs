//! The one trait the driver calls: a decision on a `u64` key at a tick. Implemented for every
//! [`slidelimit::RateLimiter`] through [`Ours`], and by the peers and the floor.
//!
//! The driver is generic over it, so every call is statically dispatched and inlined: no
//! variant pays for an indirect call the others do not.

use slidelimit::RateLimiter;

/// Something that decides requests: a variant, a peer, or the machine floor.
pub trait Target: Sync {
    /// Whether the driver must read the shared clock and pass its value. Governor reads the
    /// (same) clock itself, so it sets this to false and the driver skips the read.
    const READS_NOW: bool = true;

    /// The atomic decision: admit and record, or refuse and record nothing.
    fn check_and_hit(&self, key: u64, now: u64) -> bool;

    /// The non-consuming check (only called on workloads the variant supports).
    fn allowed(&self, key: u64, now: u64) -> bool;

    /// How many keys it holds state for, where it can say.
    fn tracked_keys(&self) -> Option<usize>;

    /// Forgets idle keys as of `now`, returning how many went, where it can.
    fn remove_idle(&self, now: u64) -> Option<usize>;
}

/// Any slidelimit variant (present or future) as a [`Target`].
pub struct Ours<L>(pub L);

impl<L: RateLimiter<u64>> Target for Ours<L> {
    #[inline]
    fn check_and_hit(&self, key: u64, now: u64) -> bool {
        self.0.check_and_hit(&key, now)
    }

    #[inline]
    fn allowed(&self, key: u64, now: u64) -> bool {
        self.0.allowed(&key, now)
    }

    fn tracked_keys(&self) -> Option<usize> {
        Some(self.0.tracked_keys())
    }

    fn remove_idle(&self, now: u64) -> Option<usize> {
        Some(self.0.remove_idle(now))
    }
}
