//! Saving a limiter's state and restoring it, in this process or another: every key's window
//! content, removal watermarks and limits, in a versioned format (JSON for people, postcard
//! for size, with the `serde` feature).
//!
//! ```
//! use slidelimit::{Limit, LockFreeLimiter, RateLimiter, SavedState, Conversion};
//! use slidelimit_mutex::MutexLimiter;
//!
//! let limit = Limit::new(2, 10)?;
//! let original: LockFreeLimiter<String> = LockFreeLimiter::new(limit);
//! assert!(original.check_and_hit(&"a".to_string(), 100));
//! assert!(original.check_and_hit(&"a".to_string(), 101));
//!
//! let bytes = original.snapshot(101).to_bytes()?;
//! let snapshot = slidelimit::Snapshot::<String>::from_bytes(&bytes)?;
//!
//! // Any variant restores any variant's snapshot.
//! let restored: MutexLimiter<String> = MutexLimiter::new(limit);
//! restored.restore(&snapshot, 102, Conversion::Exact)?;
//! assert!(!restored.check_and_hit(&"a".to_string(), 105), "both hits still count");
//! assert!(restored.check_and_hit(&"a".to_string(), 110));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Consistency under load
//! A snapshot reads each key's window at one moment between the call's start and its end
//! (no torn entry): the lock-free windows by a double collect of their words, falling back to
//! a seal that holds writers off for a few loads (the exact log: a re-sort's seal; the
//! buckets: the head word's seal bit, then collects until the in-flight records land), the
//! locked variants under their lock. Keys are read one after another, so the snapshot as a
//! whole is a per-key cut, not one instant: each key's state is one its own history went
//! through.
//!
//! # Why a restored limiter never admits more than the original would have
//! Restoring a key's state into the same configuration gives a window that holds what the
//! original's held at the moment its state was read (see [`crate::window::state`]: the exact
//! log the same hits, the buckets the same weight per bucket, head and total, with weight in
//! flight moved to the head bucket, which only counts it longer). For the buckets that is
//! the same state, so one window fed the original's calls and then the restored one's would
//! have admitted the same: at most `max_requests` in any window. For the exact log, take a
//! window `(x − W, x]` and a slot of the restored ring: an admission after the restore into
//! it replaced a value at most `x − W`, so at most one lands in the window, and only if the
//! slot's restored hit is outside it. Each hit the original had admitted and no longer holds
//! preceded, in its slot, a hit it holds by at least `W`: if it is in the window, the held
//! hit is after `x`, and that hit's slot takes no admission in the window. So every slot
//! accounts for at most one hit of the window, old or new: at most `max_requests`. Removal
//! watermarks and tombstones carry over, so a key the original had forgotten is refused
//! where the original would have refused it. A limit conversion ([`Conversion::ToLimiter`])
//! only keeps hits, moves them later, drops hits no later call counts, or (into a longer
//! window) assumes the busiest history the source allows. The clock-skew cap moves ticks
//! *earlier* (to `now`), which is the one relaxation: see [`Snapshot`]'s restore rules.
//!
//! # Exact for in-order calls
//! The restored exact log answers every call at or after the newest tick it holds, in time
//! order, as the original would have: both hold the same hits, and which expired hit an
//! admission replaces never matters to a later call in time order (an expired hit stays
//! expired). A late call may be answered differently: a snapshot records hits, not slots,
//! and the original's slot layout after out-of-order calls decides which expired hit its
//! next admission replaces, which a late call may still count. Both answers keep the window
//! (above).
//!
//! # Clock skew
//! Restoring at `now`, every tick in the snapshot above `now` counts as `now` (an effective
//! timestamp is `min(t, now)`), and so do watermarks and tombstones. A snapshot taken by a
//! clock ahead of the restoring one by `δ` therefore has its newest hits counted up to `δ`
//! less long in the restoring clock's frame than in its own: they still count for a full
//! window from `now`, which is all the restoring process can vouch for. A snapshot from a
//! clock behind the restoring one needs no cap: its hits simply expire earlier in the new
//! frame, exactly as they would have in real time.
//!
//! # Bad input
//! Decoding and restoring never panic: a truncated, corrupted, wrong-version or hostile
//! snapshot gives a [`SnapshotError`] (unknown version, a limit that [`Limit::new`] refuses,
//! unordered or zero-weight records, a key claiming more weight than its limit could ever
//! have admitted in its newest window, a key listed twice). Memory stays bounded by the input:
//! postcard and serde_json allocate for what the bytes hold, not for what a length prefix
//! claims.
//!
//! # Limits of several windows
//! A key of a limit of several windows ([`Limit::and`]) saves one state: its widest window's,
//! which holds every hit the narrower windows hold (see [`crate::window::layers`]). The
//! snapshot records that widest window as the key's limit; a restore rebuilds every window of
//! the restoring limiter's limit from the state, each converted to its own window and count,
//! so the narrower windows come back holding what they held (or less: only ever refusing
//! more). The narrower windows themselves are not recorded, and [`Conversion::Exact`]
//! compares the widest window only: a restore never needs them to be safe.

use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;

use crate::limit::{Limit, LimitError};
use crate::window::state::Forgotten;
use crate::window::state::{StateError, WindowState};
use crate::window::{WindowKind, MAX_TICK};

/// The snapshot format version this build writes and reads.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// A limiter's saved state (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Snapshot<K> {
    /// [`SNAPSHOT_FORMAT`] when written.
    pub format: u32,
    /// The window algorithm and its shape.
    pub window: SavedWindow,
    /// The default limit: `(max_requests, window_ticks)`.
    pub default_limit: (u64, u64),
    /// The length of one tick in nanoseconds, if the limiter was told it (`Options::tick`)
    /// or, failing that, its default limit carries one ([`Limit::tick`]).
    pub tick_nanos: Option<u64>,
    /// The `now` the snapshot was taken at.
    pub taken_at: u64,
    /// The removal floor (see [`crate::keyed`]).
    pub removal_floor: u64,
    /// Every tracked key.
    pub keys: Vec<SavedKey<K>>,
    /// Removed keys' tombstones: the tick below which each is refused.
    pub tombstones: Vec<(K, u64)>,
}

/// The window algorithm, as a snapshot records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SavedWindow {
    /// The exact sliding log.
    ExactLog,
    /// The rolling buckets: `(buckets, lateness_buckets)`.
    RollingBuckets(u64, u64),
}

impl From<WindowKind> for SavedWindow {
    fn from(kind: WindowKind) -> Self {
        match kind {
            WindowKind::ExactLog => Self::ExactLog,
            WindowKind::RollingBuckets {
                buckets,
                lateness_buckets,
            } => Self::RollingBuckets(buckets, lateness_buckets),
        }
    }
}

/// One key's saved state.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SavedKey<K> {
    /// The key.
    pub key: K,
    /// The limit its window enforced: `(max_requests, window_ticks)`.
    pub limit: (u64, u64),
    /// Its removal watermark: calls below it are refused.
    pub watermark: u64,
    /// `(tick, weight)` records, strictly ascending by tick (see [`WindowState`]).
    pub usage: Vec<(u64, u64)>,
    /// The newest tick its window had seen.
    pub newest_tick: u64,
}

/// How [`SavedState::restore`] treats a snapshot whose window or default limit differs from
/// the limiter's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    /// Refuse it: [`SnapshotError::Mismatch`].
    Exact,
    /// Convert each key's state to the limit it has in the restoring limiter, conservatively
    /// (see [`crate::window::state`]).
    ToLimiter,
}

/// What a restore did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restored {
    /// Keys whose state was restored (replacing any state the limiter had for them).
    pub keys: usize,
    /// Tombstones restored.
    pub tombstones: usize,
}

/// Why a snapshot could not be decoded or restored.
#[non_exhaustive]
#[derive(Debug)]
pub enum SnapshotError {
    /// The bytes are not a snapshot (truncated, corrupted, not this format).
    Decode(String),
    /// Encoding failed (a key type serde cannot write).
    Encode(String),
    /// A format version this build does not read.
    UnknownFormat {
        /// The version found.
        found: u32,
    },
    /// A limit no limiter could have had.
    Limit(LimitError),
    /// A key's records break the state rules.
    State {
        /// Which key, by its position in the snapshot.
        index: usize,
        /// What is wrong.
        error: StateError,
    },
    /// A key claims more weight than its window could hold.
    OverLimit {
        /// Which key, by its position in the snapshot.
        index: usize,
    },
    /// A key is listed twice.
    DuplicateKey {
        /// The second position.
        index: usize,
    },
    /// The snapshot and the limiter were told different tick lengths (`Options::tick`, or
    /// the tick of the default limit, [`Limit::tick`]): their timestamps do not mean the
    /// same time.
    TickMismatch {
        /// The snapshot's tick, in nanoseconds.
        snapshot: u64,
        /// The limiter's.
        limiter: u64,
    },
    /// The snapshot's window or default limit differs from the limiter's, under
    /// [`Conversion::Exact`].
    Mismatch {
        /// The snapshot's window and default limit.
        snapshot: (SavedWindow, (u64, u64)),
        /// The limiter's.
        limiter: (SavedWindow, (u64, u64)),
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decode(why) => write!(f, "not a valid snapshot: {why}"),
            Self::Encode(why) => write!(f, "the snapshot could not be encoded: {why}"),
            Self::UnknownFormat { found } => write!(
                f,
                "snapshot format {found} is not supported (this build reads {SNAPSHOT_FORMAT})"
            ),
            Self::Limit(error) => write!(f, "the snapshot holds an invalid limit: {error}"),
            Self::State { index, error } => write!(f, "key #{index}: {error}"),
            Self::OverLimit { index } => write!(
                f,
                "key #{index} holds more weight than its window keeps under its limit"
            ),
            Self::DuplicateKey { index } => write!(f, "key #{index} is listed twice"),
            Self::TickMismatch { snapshot, limiter } => write!(
                f,
                "the snapshot's ticks are {snapshot} ns long, the limiter's {limiter} ns"
            ),
            Self::Mismatch { snapshot, limiter } => write!(
                f,
                "the snapshot's window {snapshot:?} differs from the limiter's {limiter:?}; \
                 restore with Conversion::ToLimiter to convert"
            ),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// Saving and restoring a limiter's state. Every limiter of this workspace implements it.
pub trait SavedState<K> {
    /// Every key's state, watermark and limit, read while other threads may decide (see the
    /// [module docs](self)), stamped `now`.
    fn snapshot(&self, now: u64) -> Snapshot<K>;

    /// [`SavedState::snapshot`] of one key: a snapshot holding that key's state (none if the
    /// limiter tracks none) and its tombstone, if it has one. Restores like any snapshot.
    fn snapshot_key(&self, key: &K, now: u64) -> Snapshot<K>;

    /// Restores `snapshot` at `now`: every key in it gets the snapshot's state (replacing
    /// what the limiter had for it, through the same retire-then-replace handshake as a limit
    /// change), with every tick capped at `now`; the removal floor rises to the snapshot's
    /// (capped) and its tombstones are added. Keys not in the snapshot keep their state.
    ///
    /// # Errors
    /// [`SnapshotError`] for an invalid snapshot, or a mismatch under [`Conversion::Exact`];
    /// nothing is restored then.
    fn restore(
        &self,
        snapshot: &Snapshot<K>,
        now: u64,
        conversion: Conversion,
    ) -> Result<Restored, SnapshotError>;

    /// Builds state from usage history: `(key, tick, weight)` records in any order, as if
    /// each had been recorded by `hit_n` (ticks capped at `now`; the exact log keeps each
    /// key's newest `max_requests` hits and carries the rest, see
    /// [`crate::window::state`]), replacing the state of the keys they name. O(r) for r
    /// records in any order (one pass grouping them by key, then each key's list sorted by
    /// tick: a short list by comparison, a long one by a radix sort).
    fn import_usage(&self, records: &mut dyn Iterator<Item = (K, u64, u64)>, now: u64) -> Restored;
}

impl<K> Snapshot<K> {
    /// Checks every rule a snapshot must keep (see the [module docs](self)) and returns each
    /// key's state, capped at `now`.
    pub(crate) fn validated(&self, now: u64) -> Result<Vec<(&K, WindowState, u64)>, SnapshotError>
    where
        K: Hash + Eq,
    {
        if self.format != SNAPSHOT_FORMAT {
            return Err(SnapshotError::UnknownFormat { found: self.format });
        }
        let (max, window) = self.default_limit;
        Limit::new(max, window).map_err(SnapshotError::Limit)?;
        let mut seen = HashSet::with_capacity(self.keys.len().min(1 << 20));
        let mut states = Vec::with_capacity(self.keys.len().min(1 << 20));
        for (index, saved) in self.keys.iter().enumerate() {
            if !seen.insert(&saved.key) {
                return Err(SnapshotError::DuplicateKey { index });
            }
            let limit = Limit::new(saved.limit.0, saved.limit.1).map_err(SnapshotError::Limit)?;
            let state = WindowState::from_parts(saved.usage.clone(), saved.newest_tick)
                .map_err(|error| SnapshotError::State { index, error })?;
            // What the saving window may have forgotten follows from its shape and limit.
            let state = state.with_forgotten(forgotten_by(self.window, limit, saved.newest_tick));
            if over_limit(&state, limit, self.window) {
                return Err(SnapshotError::OverLimit { index });
            }
            states.push((&saved.key, state.capped_at(now), saved.watermark.min(now)));
        }
        Ok(states)
    }

    /// The window and default limit, as [`SnapshotError::Mismatch`] reports them.
    pub(crate) fn shape(&self) -> (SavedWindow, (u64, u64)) {
        (self.window, self.default_limit)
    }

    /// Checks that this snapshot may be restored into a limiter of window `window`, default
    /// limit `default` and tick `tick_nanos` under `conversion`.
    pub(crate) fn check_fits<W: crate::raw::Algorithm>(
        &self,
        window: &W,
        tick_nanos: Option<u64>,
        conversion: Conversion,
    ) -> Result<(), SnapshotError> {
        let tick_nanos = tick_nanos.or_else(|| tick_nanos_of(window.limit()));
        if let (Some(snapshot), Some(limiter)) = (self.tick_nanos, tick_nanos) {
            if snapshot != limiter {
                return Err(SnapshotError::TickMismatch { snapshot, limiter });
            }
        }
        let limit = window.limit();
        let limiter = (
            SavedWindow::from(window.kind()),
            (limit.max_requests(), limit.window_ticks()),
        );
        if conversion == Conversion::Exact && self.shape() != limiter {
            return Err(SnapshotError::Mismatch {
                snapshot: self.shape(),
                limiter,
            });
        }
        Ok(())
    }

    /// An empty snapshot of a limiter with `window` as its default, stamped `now`.
    pub(crate) fn empty<W: crate::raw::Algorithm>(
        window: &W,
        tick_nanos: Option<u64>,
        removal_floor: u64,
        now: u64,
    ) -> Self {
        let limit = window.limit();
        Self {
            format: SNAPSHOT_FORMAT,
            window: window.kind().into(),
            default_limit: (limit.max_requests(), limit.window_ticks()),
            tick_nanos: tick_nanos.or_else(|| tick_nanos_of(limit)),
            taken_at: now,
            removal_floor,
            keys: Vec::new(),
            tombstones: Vec::new(),
        }
    }
}

/// The tick a limit carries, in nanoseconds (saturated as `Options::tick` saturates), so that
/// a limiter told no tick still records and checks the unit its limit was built in.
fn tick_nanos_of(limit: Limit) -> Option<u64> {
    let nanos = limit.tick()?.as_nanos();
    Some(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// What a window of shape `window` and limit `limit`, whose newest tick is `newest_tick`, may
/// have forgotten (see [`crate::window::state`]): an exact log, its slots' earlier hits; the
/// rolling buckets, the buckets their head has passed (all of them, most conservatively,
/// if the saved shape is not a valid configuration).
fn forgotten_by(window: SavedWindow, limit: Limit, newest_tick: u64) -> Option<Forgotten> {
    match window {
        SavedWindow::ExactLog => Some(Forgotten::Chains {
            window_ticks: limit.window_ticks(),
        }),
        SavedWindow::RollingBuckets(buckets, lateness) => {
            match crate::window::buckets::RollingBuckets::new(limit, buckets)
                .and_then(|window| window.lateness_buckets(lateness))
            {
                Ok(window) => window.dropped_by(newest_tick),
                Err(_) => Some(Forgotten::Dropped {
                    through_tick: newest_tick,
                    window_ticks: limit.window_ticks(),
                }),
            }
        }
    }
}

/// Whether a state holds more weight than a window of `limit` could: the exact log keeps at
/// most `max_requests` hits in its ring, plus any number *carried* at its oldest tick (hits
/// it no longer has room for, or that a forced hit replaced: see
/// [`crate::window::state::Carried`]), so every record but the oldest holds at most
/// `max_requests` in all; the rolling buckets retain at most their total's cap (forced `hit`s
/// may go past the limit, so the limit itself does not bound them).
fn over_limit(state: &WindowState, limit: Limit, window: SavedWindow) -> bool {
    match window {
        SavedWindow::ExactLog => {
            let newer: u64 = state
                .usage()
                .iter()
                .skip(1)
                .fold(0u64, |sum, &(_, weight)| sum.saturating_add(weight));
            newer > limit.max_requests()
        }
        SavedWindow::RollingBuckets(..) => state.total_weight() > crate::raw::MAX_TOTAL_WEIGHT,
    }
}

/// Builds a [`SavedKey`].
pub(crate) fn saved_key<K>(
    key: K,
    limit: Limit,
    watermark: u64,
    state: &WindowState,
) -> SavedKey<K> {
    SavedKey {
        key,
        limit: (limit.max_requests(), limit.window_ticks()),
        watermark: watermark.min(MAX_TICK),
        usage: state.usage().to_vec(),
        newest_tick: state.newest_tick(),
    }
}

/// Groups usage records by key into window states (see [`SavedState::import_usage`]), in
/// O(r) for r records in any order: one pass appends each record to its key's list, then
/// each list is sorted by tick, a short one (at most [`SHORT_LIST`] records, a bounded cost
/// each) by comparison, a longer one by a radix sort.
pub(crate) fn group_usage<K: Hash + Eq>(
    records: &mut dyn Iterator<Item = (K, u64, u64)>,
    now: u64,
) -> Vec<(K, WindowState)> {
    let now = now.min(MAX_TICK);
    // The key maps' own hasher: randomly seeded, so chosen keys cannot aim at one bucket.
    let mut by_key: std::collections::HashMap<K, Vec<(u64, u64)>, crate::keyed::KeyHasher> =
        std::collections::HashMap::default();
    for (key, tick, weight) in records {
        by_key.entry(key).or_default().push((tick.min(now), weight));
    }
    by_key
        .into_iter()
        .map(|(key, mut records)| {
            sort_by_tick(&mut records);
            (key, WindowState::from_sorted(records))
        })
        .collect()
}

/// Up to this many records, a key's list is sorted by comparison (at most
/// `SHORT_LIST · log2(SHORT_LIST)` steps, a constant); above it, by radix.
const SHORT_LIST: usize = 64;

/// Sorts `(tick, weight)` records by tick in O(n).
fn sort_by_tick(records: &mut Vec<(u64, u64)>) {
    if records.len() <= SHORT_LIST {
        records.sort_unstable_by_key(|&(tick, _)| tick);
    } else {
        radix_sort_by_tick(records);
    }
}

/// Sorts `(tick, weight)` records by tick, stably, in O(n): least significant byte first, one
/// counting pass per byte in which the ticks differ.
fn radix_sort_by_tick(records: &mut Vec<(u64, u64)>) {
    let (all_or, all_and) = records
        .iter()
        .fold((0u64, u64::MAX), |(or, and), &(tick, _)| {
            (or | tick, and & tick)
        });
    let differing = all_or ^ all_and;
    let mut scratch = vec![(0u64, 0u64); records.len()];
    for shift in (0..64).step_by(8) {
        if (differing >> shift) & 0xFF == 0 {
            continue;
        }
        let mut starts = [0usize; 257];
        for &(tick, _) in records.iter() {
            starts[((tick >> shift) & 0xFF) as usize + 1] += 1;
        }
        for byte in 0..256 {
            starts[byte + 1] += starts[byte];
        }
        for &record in records.iter() {
            let byte = ((record.0 >> shift) & 0xFF) as usize;
            scratch[starts[byte]] = record;
            starts[byte] += 1;
        }
        std::mem::swap(records, &mut scratch);
    }
}

#[cfg(feature = "serde")]
impl<K: serde::Serialize> Snapshot<K> {
    /// The snapshot as JSON, for people and tools.
    ///
    /// # Errors
    /// [`SnapshotError::Encode`] if the key type cannot be written as JSON (a map key that
    /// is not a string, say).
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        serde_json::to_string(self).map_err(|error| SnapshotError::Encode(error.to_string()))
    }

    /// The snapshot in postcard's compact binary format.
    ///
    /// # Errors
    /// [`SnapshotError::Encode`] if the key type cannot be written.
    pub fn to_bytes(&self) -> Result<Vec<u8>, SnapshotError> {
        postcard::to_allocvec(self).map_err(|error| SnapshotError::Encode(error.to_string()))
    }
}

#[cfg(feature = "serde")]
impl<K: serde::de::DeserializeOwned> Snapshot<K> {
    /// Reads a snapshot written by [`Snapshot::to_json`]. Only decodes: restoring validates.
    ///
    /// # Errors
    /// [`SnapshotError::Decode`], or [`SnapshotError::UnknownFormat`].
    pub fn from_json(json: &str) -> Result<Self, SnapshotError> {
        let snapshot: Self =
            serde_json::from_str(json).map_err(|error| SnapshotError::Decode(error.to_string()))?;
        snapshot.check_format()
    }

    /// Reads a snapshot written by [`Snapshot::to_bytes`]. Only decodes: restoring validates.
    ///
    /// # Errors
    /// [`SnapshotError::Decode`], or [`SnapshotError::UnknownFormat`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let snapshot: Self = postcard::from_bytes(bytes)
            .map_err(|error| SnapshotError::Decode(error.to_string()))?;
        snapshot.check_format()
    }

    fn check_format(self) -> Result<Self, SnapshotError> {
        if self.format == SNAPSHOT_FORMAT {
            Ok(self)
        } else {
            Err(SnapshotError::UnknownFormat { found: self.format })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{group_usage, radix_sort_by_tick};
    use crate::window::state::WindowState;
    use proptest::prelude::*;

    proptest! {
        /// The radix sort is a stable sort by tick, whatever bytes the ticks differ in.
        #[test]
        fn radix_sort_is_a_stable_sort_by_tick(
            ticks in proptest::collection::vec(
                prop_oneof![0u64..300, any::<u64>(), (0u64..4).prop_map(|b| b << 40)],
                0..300,
            ),
        ) {
            let mut records: Vec<(u64, u64)> =
                ticks.iter().enumerate().map(|(i, &t)| (t, i as u64)).collect();
            let mut expected = records.clone();
            expected.sort_by_key(|&(tick, _)| tick);
            radix_sort_by_tick(&mut records);
            prop_assert_eq!(records, expected);
        }

        /// Grouping equals building each key's state from its records in any order.
        #[test]
        fn grouping_equals_per_key_sorting(
            records in proptest::collection::vec(
                (0u8..3, prop_oneof![any::<u64>(), 0u64..500], 0u64..4),
                0..400,
            ),
            now in any::<u64>(),
        ) {
            let mut grouped = group_usage(&mut records.iter().copied(), now);
            grouped.sort_by_key(|(key, _)| *key);
            let mut keys: Vec<u8> = records.iter().map(|r| r.0).collect();
            keys.sort_unstable();
            keys.dedup();
            let expected: Vec<(u8, WindowState)> = keys
                .into_iter()
                .map(|key| {
                    let mine = records
                        .iter()
                        .filter(|r| r.0 == key)
                        .map(|&(_, tick, weight)| (tick.min(now), weight))
                        .collect();
                    (key, WindowState::from_unordered(mine))
                })
                .collect();
            prop_assert_eq!(grouped, expected);
        }
    }
}
