//! A key pool's validated configuration, and the bucket bound that sizes its ring.

use std::fmt;

use super::control::{SEQ_MODULUS, SLOT_MODULUS};

/// At most this many uses per cooldown in one pool (`keys × uses_per_key`, 2^23 - 1): the
/// control word counts uses in 23 bits.
pub const MAX_TOTAL_USES: u64 = SEQ_MODULUS - 1;

/// At most this many bucket slots in one pool's ring (2^20 - 1): the control word holds the
/// head slot and the number of held buckets in 20 bits each.
pub const MAX_BUCKET_SLOTS: u64 = SLOT_MODULUS - 1;

/// Where a pool may give a false negative (its relaxations). It never gives a false
/// positive in any mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PoolMode {
    /// Never a false negative: one timestamp per use (`keys × uses_per_key` buckets of one).
    Exact,
    /// Relaxation A: a refusal only when every use still held was made within
    /// `cooldown + threshold_ticks`. A bucket takes uses for `threshold_ticks` after it opens.
    TimeBound {
        /// How much longer than the cooldown a use may be held (`τ`).
        threshold_ticks: u64,
    },
    /// Relaxation B: a refusal only when fewer than `key_threshold` uses are truly free. A
    /// bucket takes at most `key_threshold` uses.
    CountBound {
        /// How many truly free uses the pool may fail to see (`k`).
        key_threshold: u64,
    },
    /// Relaxation AB: a refusal only when both A and B allow it. A bucket closes after
    /// `threshold_ticks` or `key_threshold` uses, whichever comes first.
    Both {
        /// As in [`PoolMode::TimeBound`].
        threshold_ticks: u64,
        /// As in [`PoolMode::CountBound`].
        key_threshold: u64,
    },
}

impl PoolMode {
    /// The time threshold `τ` a bucket stays open for (none for `Exact` and `CountBound`) and
    /// the most uses a bucket takes, `k`, in a pool of `total_uses` uses: `k = 1` for `Exact`,
    /// `k = total_uses` for `TimeBound`.
    #[must_use]
    pub fn thresholds(&self, total_uses: u64) -> (Option<u64>, u64) {
        match *self {
            Self::Exact => (None, 1),
            Self::TimeBound { threshold_ticks } => (Some(threshold_ticks), total_uses),
            Self::CountBound { key_threshold } => (None, key_threshold),
            Self::Both {
                threshold_ticks,
                key_threshold,
            } => (Some(threshold_ticks), key_threshold),
        }
    }

    /// A short name for reports: `"exact"`, `"A"`, `"B"` or `"AB"`.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::TimeBound { .. } => "A",
            Self::CountBound { .. } => "B",
            Self::Both { .. } => "AB",
        }
    }
}

/// Why a key pool could not be built.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// The key list was empty.
    NoKeys,
    /// The same key name appeared twice (at `first` and `second`): cycling would hand it
    /// out twice as often as allowed.
    DuplicateKey {
        /// Index of its first appearance.
        first: usize,
        /// Index of the repeat.
        second: usize,
    },
    /// `uses_per_key` was zero.
    ZeroUsesPerKey,
    /// `cooldown_ticks` was zero.
    ZeroCooldown,
    /// A time threshold of zero (a bucket that never takes a use).
    ZeroTimeThreshold,
    /// A key threshold of zero (a bucket that never takes a use).
    ZeroKeyThreshold,
    /// A key threshold above `keys × uses_per_key`: no pool has that many uses to miss.
    KeyThresholdTooLarge {
        /// The threshold asked for.
        key_threshold: u64,
        /// `keys × uses_per_key`.
        total_uses: u64,
    },
    /// A time threshold above the cooldown: a bucket cools down `T` after its newest use and
    /// then takes no more uses, so a longer threshold would only weaken A's promise (uses made
    /// within `T + τ`, more than twice the cooldown) without keeping a bucket open any longer
    /// on a steady stream.
    TimeThresholdTooLarge {
        /// The threshold asked for.
        threshold_ticks: u64,
    },
    /// `keys × uses_per_key` overflows or is above [`MAX_TOTAL_USES`].
    TooManyUses {
        /// The number of keys.
        keys: usize,
        /// Uses per key per cooldown.
        uses_per_key: u64,
    },
    /// The ring the mode needs (its bucket bound, plus one spare slot) is above
    /// [`MAX_BUCKET_SLOTS`]; use a larger threshold.
    TooManyBuckets {
        /// Slots the configuration would need.
        needed: u64,
    },
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoKeys => f.write_str("a key pool needs at least one key"),
            Self::DuplicateKey { first, second } => {
                write!(f, "key {second} repeats key {first}: key names must be distinct")
            }
            Self::ZeroUsesPerKey => f.write_str("uses_per_key must be at least 1"),
            Self::ZeroCooldown => f.write_str("cooldown_ticks must be at least 1"),
            Self::ZeroTimeThreshold => f.write_str("a time threshold must be at least 1 tick"),
            Self::ZeroKeyThreshold => f.write_str("a key threshold must be at least 1"),
            Self::KeyThresholdTooLarge { key_threshold, total_uses } => write!(
                f,
                "key threshold {key_threshold} is above the pool's {total_uses} uses per cooldown"
            ),
            Self::TimeThresholdTooLarge { threshold_ticks } => write!(
                f,
                "time threshold {threshold_ticks} is above the cooldown"
            ),
            Self::TooManyUses { keys, uses_per_key } => write!(
                f,
                "{keys} keys x {uses_per_key} uses is above the supported {MAX_TOTAL_USES} uses per cooldown"
            ),
            Self::TooManyBuckets { needed } => write!(
                f,
                "the mode needs {needed} bucket slots, above the supported {MAX_BUCKET_SLOTS}; \
                 raise a threshold"
            ),
        }
    }
}

impl std::error::Error for PoolError {}

/// A pool's validated numbers: `L = keys × uses_per_key` uses per cooldown `T`, buckets that
/// take at most `k` uses and (with a time threshold) close `τ` ticks after they open, and a
/// ring of [`bucket_bound`]` + 1` slots, plus [`FAR_FUTURE_HEADROOM`] where buckets take more
/// than one use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeometry {
    pub(crate) keys: u64,
    pub(crate) total_uses: u64,
    pub(crate) cooldown_ticks: u64,
    pub(crate) open_ticks: Option<u64>,
    pub(crate) bucket_uses: u64,
    pub(crate) slots: u64,
    pub(crate) bound: u64,
    pub(crate) mode: PoolMode,
}

/// Ring slots a pool whose buckets take several uses keeps beyond its [`bucket_bound`]: room
/// for this many buckets holding far-future uses (a bad clock's), which stay held until their
/// own tick plus `T` and would otherwise take room the well-timed calls need (a full ring
/// makes them join buckets past their thresholds). In-order calls never use it.
pub const FAR_FUTURE_HEADROOM: u64 = 8;

impl PoolGeometry {
    /// Validates a pool of `keys` keys, each usable `uses_per_key` times per `cooldown_ticks`.
    ///
    /// # Errors
    /// A [`PoolError`] for zero keys, uses, cooldown or thresholds, a key threshold above the
    /// pool's uses, a time threshold above the cooldown, and anything that would overflow the
    /// packed words.
    pub fn new(
        keys: usize,
        uses_per_key: u64,
        cooldown_ticks: u64,
        mode: PoolMode,
    ) -> Result<Self, PoolError> {
        if keys == 0 {
            return Err(PoolError::NoKeys);
        }
        if uses_per_key == 0 {
            return Err(PoolError::ZeroUsesPerKey);
        }
        if cooldown_ticks == 0 {
            return Err(PoolError::ZeroCooldown);
        }
        let total_uses = u64::try_from(keys)
            .ok()
            .and_then(|keys| keys.checked_mul(uses_per_key))
            .filter(|&total| total <= MAX_TOTAL_USES)
            .ok_or(PoolError::TooManyUses { keys, uses_per_key })?;
        let (open_ticks, bucket_uses) = mode.thresholds(total_uses);
        if let Some(threshold_ticks) = open_ticks {
            if threshold_ticks == 0 {
                return Err(PoolError::ZeroTimeThreshold);
            }
            if threshold_ticks > cooldown_ticks {
                return Err(PoolError::TimeThresholdTooLarge { threshold_ticks });
            }
        }
        if bucket_uses == 0 {
            return Err(PoolError::ZeroKeyThreshold);
        }
        if bucket_uses > total_uses {
            return Err(PoolError::KeyThresholdTooLarge {
                key_threshold: bucket_uses,
                total_uses,
            });
        }
        let bound = bucket_bound(total_uses, cooldown_ticks, open_ticks, bucket_uses);
        // The exact pool runs out of uses exactly when its ring is full, so far-future
        // buckets cost it uses, never room.
        let headroom = if bucket_uses == 1 {
            0
        } else {
            FAR_FUTURE_HEADROOM
        };
        let needed = bound + headroom + 1;
        if needed > MAX_BUCKET_SLOTS {
            return Err(PoolError::TooManyBuckets { needed });
        }
        Ok(Self {
            keys: keys as u64,
            total_uses,
            cooldown_ticks,
            open_ticks,
            bucket_uses,
            slots: needed,
            bound,
            mode,
        })
    }

    // Hidden: for the loom models, whose few calls must reach a full ring; not part of the
    // API a user builds on.
    #[doc(hidden)]
    /// This geometry without [`FAR_FUTURE_HEADROOM`]: a ring of the bound plus one.
    #[must_use]
    pub fn without_far_future_headroom(self) -> Self {
        Self {
            slots: self.bound + 1,
            ..self
        }
    }

    /// `keys × uses_per_key`: uses per cooldown across the pool.
    #[must_use]
    pub fn total_uses(&self) -> u64 {
        self.total_uses
    }

    /// The number of key names.
    #[must_use]
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The cooldown `T` in ticks.
    #[must_use]
    pub fn cooldown_ticks(&self) -> u64 {
        self.cooldown_ticks
    }

    /// The mode the pool was built with.
    #[must_use]
    pub fn mode(&self) -> PoolMode {
        self.mode
    }

    /// The most buckets that can be held (not yet cooled down) at once: [`bucket_bound`].
    #[must_use]
    pub fn bucket_bound(&self) -> u64 {
        self.bound
    }

    /// Slots in the ring: the bound ([`FAR_FUTURE_HEADROOM`] more where buckets take several
    /// uses) plus one spare, so that a call that releases the oldest bucket and opens a new
    /// one in a single CAS opens it in a free slot, never in the one it releases: a thread
    /// that loses that CAS has raised only a free slot's words.
    #[must_use]
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Buckets the ring may hold (cooled ones included) before a call that needs a new
    /// bucket must release the oldest first: the bound and the headroom.
    pub(crate) fn ring_limit(&self) -> u64 {
        self.slots - 1
    }

    /// Whether a bucket opened at `opened_at` has stopped taking uses at `now`.
    pub(crate) fn time_closed(&self, opened_at: u64, now: u64) -> bool {
        self.open_ticks
            .is_some_and(|open| now >= opened_at.saturating_add(open))
    }

    /// The tick from which a bucket whose newest use is at `last_use` has cooled down.
    pub(crate) fn cooled_at(&self, last_use: u64) -> u64 {
        last_use.saturating_add(self.cooldown_ticks)
    }

    /// The ring slot `offset` positions after `slot` (`slot` below [`PoolGeometry::slots`],
    /// `offset` at most that): a subtraction where a division is not needed.
    #[inline]
    pub(crate) fn ring_slot(&self, slot: u64, offset: u64) -> u64 {
        let position = slot + offset;
        if position >= self.slots {
            position - self.slots
        } else {
            position
        }
    }

    /// The slot of the newest of `live` buckets from `head` (the one before `head` if none).
    #[inline]
    pub(crate) fn newest_slot(&self, head: u64, live: u64) -> u64 {
        if live == 0 {
            self.ring_slot(head, self.slots - 1)
        } else {
            self.ring_slot(head, live - 1)
        }
    }

    /// Whether a bucket that cools down at `cooled_at` holds a use more than `T` after `tick`
    /// (`cooled_at - T > tick + T`, compared without wrapping): far enough ahead that no
    /// window of length `T` holds both.
    pub(crate) fn holds_use_far_after(&self, cooled_at: u64, tick: u64) -> bool {
        cooled_at > tick.saturating_add(self.cooldown_ticks.saturating_mul(2))
    }
}

/// The exact maximum number of buckets held at once (opened, not yet cooled down) by a pool
/// of `total_uses` uses (`L`) per `cooldown_ticks` (`T`), whose buckets take at most
/// `bucket_uses` (`k`) uses and, with `open_ticks = Some(τ)`, stop taking uses `τ` ticks after
/// they open, when calls come with non-decreasing `now`:
///
/// `max(F(c, 0), F(c', 1))` with `F(c, e) = c + ⌊(L - 1 - c - e) / k⌋ + 1`,
/// `c = min(⌊(T - 1) / τ⌋, L - 1)` and `c' = ⌈(T - 1) / τ⌉` (the second term only when
/// `c' > c` and `c' + 1 ≤ L - 1`; without `τ`, just `F(0, 0) = ⌈L / k⌉`).
///
/// `c` counts buckets closed by time, `e` an extra use the oldest of them spends to stretch
/// the chain. See the [module docs](crate::pool) for the proof and how it compares with the
/// additive sizing `⌈T / τ⌉ + ⌈L / k⌉`.
#[must_use]
pub fn bucket_bound(
    total_uses: u64,
    cooldown_ticks: u64,
    open_ticks: Option<u64>,
    bucket_uses: u64,
) -> u64 {
    let last = total_uses.saturating_sub(1);
    let k = bucket_uses.max(1);
    let held = |time_closed: u64, extra: u64| time_closed + (last - time_closed - extra) / k + 1;
    let Some(open) = open_ticks.map(|open| open.max(1)) else {
        return held(0, 0);
    };
    let gap = cooldown_ticks.saturating_sub(1);
    let short = (gap / open).min(last);
    let long = gap.div_ceil(open);
    if long > short && long < last {
        held(short, 0).max(held(long, 1))
    } else {
        held(short, 0)
    }
}

/// The additive sizing, `⌈T / τ⌉ + ⌈L / k⌉` (`τ` absent counts as 0 time buckets), kept for the
/// comparison in the docs and the bound tests.
#[must_use]
pub fn additive_bucket_formula(
    total_uses: u64,
    cooldown_ticks: u64,
    open_ticks: Option<u64>,
    bucket_uses: u64,
) -> u64 {
    open_ticks.map_or(0, |open| cooldown_ticks.div_ceil(open.max(1)))
        + total_uses.div_ceil(bucket_uses.max(1))
}
