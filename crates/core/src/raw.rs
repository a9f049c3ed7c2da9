//! The implementor surface: what the lock crates build on, and what anyone writing another
//! guard or window algorithm needs. Users of the limiters need none of it: the crate root has
//! the limiters, `Limit`, `Options`, the clocks, `Status`, the errors and the traits.
//!
//! - [`MapGuardedLimiter`] is a limiter whose whole key map sits behind one [`TableLock`]
//!   (`slidelimit-mutex` and `slidelimit-rwlock` choose the lock); [`KeyTable`] is that map.
//! - [`EntryGuardedLimiter`] is a limiter over a concurrent map whose entries guard their own
//!   windows ([`GuardedEntry`]): `LockFreeLimiter` is it with [`LockFreeEntry`],
//!   `slidelimit-per-key-lock` with a mutex per entry.
//! - [`Algorithm`] is a window algorithm (the exact log, the rolling buckets), each with a
//!   [`SequentialWindow`] form used under a lock and an [`AtomicWindow`] form decided by CAS;
//!   [`WindowState`] is a key's window content in a form both read and write.
//!
//! The modules [`crate::keyed`] and [`crate::window`] hold the implementations and their
//! proofs, for reading.

pub use crate::keyed::concurrent::{EntryGuardedLimiter, GuardedEntry};
pub use crate::keyed::sequential::{KeyTable, MapGuardedLimiter, TableLock};
pub use crate::keyed::{EntryWatermark, DEFAULT_KEY_SHARDS};
pub use crate::lockfree::LockFreeEntry;
pub use crate::window::buckets::{
    AtomicBuckets, SequentialBuckets, MAX_PHYSICAL_BUCKETS, MAX_TOTAL_WEIGHT,
};
pub use crate::window::layers::{AtomicLayer, Layers, SequentialLayer};
pub use crate::window::ring::{AtomicRing, SequentialRing};
pub use crate::window::{
    Algorithm, AtomicWindow, InlineSlot, Retired, SequentialWindow, StateError, WindowKind,
    WindowState, MAX_TICK,
};
