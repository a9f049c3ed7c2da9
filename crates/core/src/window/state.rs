//! A key's window content in a form every algorithm reads and writes: the weight recorded at
//! each tick. Limit changes, snapshots and imported usage history all pass through it, so one
//! conversion serves the three.
//!
//! # What a state holds
//! `usage` lists `(tick, weight)` in strictly ascending tick order; `newest_tick` is the newest
//! tick the window has seen (at least every tick in `usage`). The exact log exports every hit
//! it holds (weight 1 each, merged per tick); the rolling buckets export each retained
//! bucket's weight at the bucket's *last* tick, the latest its hits can have, and put weight
//! reserved but not yet recorded at the head bucket's last tick.
//!
//! # Why a conversion never over-admits
//! Moving a hit to a later tick makes it count for at least as long as before (a hit at `s`
//! counts for every call before `s + W`), so every conversion here only keeps hits, moves them
//! later, or drops hits that no call the window can still admit would count:
//! - into the exact log of `N` slots: the `N` newest hits, in slot order; an older hit can
//!   decide no admission under `N`, because an admission needs one of the `N` newest to have
//!   expired and every older hit expired before it (the design's ring argument, see
//!   [`crate::window::ring`]); the older hits are *carried* beside the ring, all at the newest
//!   of their ticks, so that a later conversion (a raise) counts them again;
//! - into rolling buckets: each hit's weight goes to the bucket of its tick, the head to the
//!   bucket of `newest_tick`; a bucket the head has passed by `B + 1 + L` is dropped, as the
//!   algorithm itself would drop it.
//!
//! Exporting a window and importing the state into the same configuration gives a window
//! that answers every later call exactly as the original would have (the exact log holds the
//! same multiset of hits, and its cursor and `blocked_until` are hints that never decide an
//! admission; the buckets hold the same weight per epoch, the same head and the same total).

use super::MAX_TICK;

/// A key's window content, independent of the algorithm (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowState {
    usage: Vec<(u64, u64)>,
    newest_tick: u64,
}

/// Why a [`WindowState`] could not be built from raw parts.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateError {
    /// A weight of zero: a state never stores an empty record.
    ZeroWeight {
        /// The tick of that record.
        tick: u64,
    },
    /// The ticks are not strictly ascending.
    OutOfOrder {
        /// The tick that came after an equal or newer one.
        tick: u64,
    },
    /// A tick is above `newest_tick` or above [`MAX_TICK`].
    TickOutOfRange {
        /// The offending tick.
        tick: u64,
    },
    /// The weights add up to more than any window holds (2^63).
    WeightOverflow,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ZeroWeight { tick } => write!(f, "a record at tick {tick} has weight 0"),
            Self::OutOfOrder { tick } => {
                write!(f, "tick {tick} is not after the tick before it")
            }
            Self::TickOutOfRange { tick } => {
                write!(
                    f,
                    "tick {tick} is above the newest tick or the largest tick"
                )
            }
            Self::WeightOverflow => f.write_str("the weights add up to more than 2^63"),
        }
    }
}

impl std::error::Error for StateError {}

impl WindowState {
    /// An empty window.
    #[must_use]
    pub const fn empty() -> Self {
        Self {
            usage: Vec::new(),
            newest_tick: 0,
        }
    }

    /// A state from `(tick, weight)` records in strictly ascending tick order, all at or
    /// below `newest_tick`.
    ///
    /// # Errors
    /// A [`StateError`] naming the first record that breaks those rules.
    pub fn from_parts(usage: Vec<(u64, u64)>, newest_tick: u64) -> Result<Self, StateError> {
        if newest_tick > MAX_TICK {
            return Err(StateError::TickOutOfRange { tick: newest_tick });
        }
        let mut previous: Option<u64> = None;
        let mut total: u64 = 0;
        for &(tick, weight) in &usage {
            if weight == 0 {
                return Err(StateError::ZeroWeight { tick });
            }
            if previous.is_some_and(|p| p >= tick) {
                return Err(StateError::OutOfOrder { tick });
            }
            if tick > newest_tick {
                return Err(StateError::TickOutOfRange { tick });
            }
            total = total
                .checked_add(weight)
                .filter(|t| *t <= 1 << 63)
                .ok_or(StateError::WeightOverflow)?;
            previous = Some(tick);
        }
        Ok(Self { usage, newest_tick })
    }

    /// A state from records in any order, ticks clamped to [`MAX_TICK`], weights of zero
    /// skipped, equal ticks merged, weights saturating. O(r log r) for r records.
    #[must_use]
    pub fn from_unordered(mut records: Vec<(u64, u64)>) -> Self {
        for record in &mut records {
            record.0 = record.0.min(MAX_TICK);
        }
        records.sort_unstable_by_key(|&(tick, _)| tick);
        Self::from_sorted(records)
    }

    /// [`WindowState::from_unordered`] for records already in non-decreasing tick order (and
    /// clamped to [`MAX_TICK`]): O(r).
    pub(crate) fn from_sorted(mut records: Vec<(u64, u64)>) -> Self {
        records.retain(|&(_, weight)| weight > 0);
        debug_assert!(records.windows(2).all(|pair| pair[0].0 <= pair[1].0));
        let mut usage: Vec<(u64, u64)> = Vec::with_capacity(records.len());
        for (tick, weight) in records {
            match usage.last_mut() {
                Some(last) if last.0 == tick => last.1 = last.1.saturating_add(weight).min(1 << 62),
                _ => usage.push((tick, weight.min(1 << 62))),
            }
        }
        let newest_tick = usage.last().map_or(0, |&(tick, _)| tick);
        Self { usage, newest_tick }
    }

    /// The `(tick, weight)` records, ascending by tick.
    #[must_use]
    pub fn usage(&self) -> &[(u64, u64)] {
        &self.usage
    }

    /// The newest tick the window has seen.
    #[must_use]
    pub const fn newest_tick(&self) -> u64 {
        self.newest_tick
    }

    /// The total weight recorded.
    #[must_use]
    pub fn total_weight(&self) -> u64 {
        self.usage
            .iter()
            .fold(0u64, |sum, &(_, weight)| sum.saturating_add(weight))
    }

    /// The state with every tick above `now` moved to `now` (the clock-skew cap: a hit
    /// stamped in the future of the restoring clock counts as made at `now`). Merges ticks
    /// that become equal.
    #[must_use]
    pub fn capped_at(&self, now: u64) -> Self {
        let now = now.min(MAX_TICK);
        if self.newest_tick <= now {
            return self.clone();
        }
        let mut usage: Vec<(u64, u64)> = Vec::with_capacity(self.usage.len());
        for &(tick, weight) in &self.usage {
            let tick = tick.min(now);
            match usage.last_mut() {
                Some(last) if last.0 == tick => last.1 = last.1.saturating_add(weight),
                _ => usage.push((tick, weight)),
            }
        }
        Self {
            usage,
            newest_tick: now,
        }
    }

    /// The state with `newest_tick` raised to at least `tick`.
    pub(crate) fn with_newest_tick(mut self, tick: u64) -> Self {
        self.newest_tick = self.newest_tick.max(tick.min(MAX_TICK));
        self
    }

    /// Builds a state from the exact log's slot values (`tick + 1`, 0 empty), any order, and
    /// the hits it carries (see [`Carried`]).
    pub(crate) fn from_slot_values(
        values: impl IntoIterator<Item = u64>,
        carried: Carried,
    ) -> Self {
        let mut ticks: Vec<u64> = values
            .into_iter()
            .filter(|&v| v != 0)
            .map(|v| v - 1)
            .collect();
        ticks.sort_unstable();
        let mut usage: Vec<(u64, u64)> = Vec::with_capacity(ticks.len() + 1);
        if carried.count > 0 {
            usage.push((carried.tick, carried.count));
        }
        for tick in ticks {
            match usage.last_mut() {
                Some(last) if last.0 == tick => last.1 += 1,
                _ => usage.push((tick, 1)),
            }
        }
        let newest_tick = usage.last().map_or(0, |&(tick, _)| tick);
        Self { usage, newest_tick }
    }

    /// The `capacity` newest hits as the exact log's slot values (`tick + 1`), ascending,
    /// preceded by empty slots (a ring in time order from slot 0), and the older hits that do
    /// not fit, as [`Carried`] hits.
    pub(crate) fn to_slot_values(&self, capacity: usize) -> (Vec<u64>, Carried) {
        let mut newest: Vec<u64> = Vec::with_capacity(capacity);
        let mut carried = Carried::NONE;
        for &(tick, weight) in self.usage.iter().rev() {
            let room = (capacity - newest.len()) as u64;
            let kept = weight.min(room);
            newest.extend((0..kept).map(|_| tick + 1));
            if kept < weight {
                if carried.count == 0 {
                    carried.tick = tick;
                }
                carried.count = carried.count.saturating_add(weight - kept);
            }
        }
        let mut values = vec![0; capacity - newest.len()];
        values.extend(newest.iter().rev());
        (values, carried)
    }
}

/// Hits an exact log no longer has slots for, after its limit was lowered: their number and
/// the newest of their ticks. They can decide no admission under the lowered limit (each is
/// older than every hit in the ring), but a later raise must count them again while they may
/// be live, so the ring keeps them and exports them, all at the newest of their ticks (later,
/// never earlier).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Carried {
    /// The newest tick among them.
    pub(crate) tick: u64,
    /// How many.
    pub(crate) count: u64,
}

impl Carried {
    /// No hit carried.
    pub(crate) const NONE: Self = Self { tick: 0, count: 0 };
}

#[cfg(test)]
mod tests {
    use super::{Carried, WindowState};

    #[test]
    fn slot_values_keep_the_newest_hits_in_time_order() {
        let state = WindowState::from_slot_values([0, 6, 3, 6, 9], Carried::NONE);
        assert_eq!(state.usage(), &[(2, 1), (5, 2), (8, 1)]);
        assert_eq!(state.newest_tick(), 8);
        let (values, carried) = state.to_slot_values(2);
        assert_eq!(values, vec![6, 9]);
        assert_eq!(
            carried,
            Carried { tick: 5, count: 2 },
            "the hit at 2 counts at 5"
        );
        assert_eq!(
            WindowState::from_slot_values(values, carried).usage(),
            &[(5, 3), (8, 1)]
        );
        assert_eq!(state.to_slot_values(6).0, vec![0, 0, 3, 6, 6, 9]);
    }

    #[test]
    fn from_parts_rejects_what_a_window_cannot_hold() {
        use super::StateError;
        assert_eq!(
            WindowState::from_parts(vec![(5, 1), (5, 1)], 9),
            Err(StateError::OutOfOrder { tick: 5 })
        );
        assert_eq!(
            WindowState::from_parts(vec![(5, 0)], 9),
            Err(StateError::ZeroWeight { tick: 5 })
        );
        assert_eq!(
            WindowState::from_parts(vec![(10, 1)], 9),
            Err(StateError::TickOutOfRange { tick: 10 })
        );
        assert_eq!(
            WindowState::from_parts(vec![(1, 1 << 62), (2, 1 << 62), (3, 1)], 9),
            Err(StateError::WeightOverflow)
        );
    }

    #[test]
    fn the_skew_cap_moves_future_hits_to_now() {
        let state = WindowState::from_parts(vec![(3, 1), (8, 2), (12, 1)], 20).unwrap();
        let capped = state.capped_at(8);
        assert_eq!(capped.usage(), &[(3, 1), (8, 3)]);
        assert_eq!(capped.newest_tick(), 8);
        assert_eq!(state.capped_at(25), state);
    }
}
