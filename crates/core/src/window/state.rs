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
//!   algorithm itself would drop it;
//! - into a *longer* window than the source's: a window forgets what its own length no longer
//!   needs (the ring replaces a hit that has left its window, the buckets drop their oldest
//!   bucket), which the longer window could still count. An exported state says what its
//!   source may have forgotten (`Forgotten`), and `WindowState::for_target` adds, before
//!   the conversion above, the busiest history that rule allows: assumed hits, each at or
//!   after the tick of a forgotten one it stands for, so every window counts at least what
//!   the true history held. Usage history and states already expanded are complete: nothing
//!   is assumed for them.
//!
//! Exporting a window and importing the state into the same configuration gives a window
//! that answers every later call in time order exactly as the original would have (the exact
//! log holds the same multiset of hits, and its cursor and `blocked_until` are hints that
//! never decide an admission; the buckets hold the same weight per epoch, the same head and
//! the same total). A late call to the exact log may differ: which expired slot an admission
//! replaces depends on the layout, which a state does not record (see
//! [`crate::snapshot`], "Exact for in-order calls").

use super::MAX_TICK;

/// A key's window content, independent of the algorithm (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowState {
    usage: Vec<(u64, u64)>,
    newest_tick: u64,
    /// What the window that exported this state may have forgotten (see [`Forgotten`]);
    /// `None` for a complete log (usage history, an empty window).
    forgotten: Option<Forgotten>,
}

/// Hits a window no longer holds that a *longer* window could still count, described by the
/// rule that bounds them, so that a conversion into a longer window can assume the busiest
/// history the rule allows (see [`WindowState::for_target`]). A conversion into a window no
/// longer than the source's needs none of it (the module docs say why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Forgotten {
    /// The exact log over `window_ticks`: a ring slot is written only over a value that has
    /// left the window (`s + W <= now`, and values only grow), so every hit held may have
    /// been preceded, in its slot, by earlier hits at least `window_ticks` apart, the newest
    /// of them at least `window_ticks` before it. Nothing else is forgotten.
    Chains {
        /// The source window's length `W`.
        window_ticks: u64,
    },
    /// The rolling buckets: weight at ticks up to `through_tick` may have been dropped
    /// with its buckets, how much is not known (forced hits are not bounded by the limit).
    Dropped {
        /// The last tick of the newest bucket that may have been dropped.
        through_tick: u64,
        /// The source window's length `W`: a dropped bucket had left every window of
        /// this length that the source still admitted calls for.
        window_ticks: u64,
    },
}

impl Forgotten {
    /// The source window's length.
    const fn window_ticks(self) -> u64 {
        match self {
            Self::Chains { window_ticks } | Self::Dropped { window_ticks, .. } => window_ticks,
        }
    }
}

/// A weight that fills any window: more than the largest `max_requests` a limit may have.
/// An assumed hit of this weight at `t` stands for "as many as it takes" while `t` is live.
const FILLS_ANY_WINDOW: u64 = crate::limit::MAX_REQUESTS + 1;

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
            forgotten: None,
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
        Ok(Self {
            usage,
            newest_tick,
            forgotten: None,
        })
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
        Self {
            usage,
            newest_tick,
            forgotten: None,
        }
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
        let forgotten = match self.forgotten {
            Some(Forgotten::Dropped {
                through_tick,
                window_ticks,
            }) => Some(Forgotten::Dropped {
                through_tick: through_tick.min(now),
                window_ticks,
            }),
            other => other,
        };
        Self {
            usage,
            newest_tick: now,
            forgotten,
        }
    }

    /// The state with `newest_tick` raised to at least `tick`.
    pub(crate) fn with_newest_tick(mut self, tick: u64) -> Self {
        self.newest_tick = self.newest_tick.max(tick.min(MAX_TICK));
        self
    }

    /// The state with what its source window may have forgotten (see [`Forgotten`]).
    pub(crate) fn with_forgotten(mut self, forgotten: Option<Forgotten>) -> Self {
        self.forgotten = forgotten;
        self
    }

    /// Builds a state from the exact log's slot values (`tick + 1`, 0 empty), any order, and
    /// the hits it carries (see [`Carried`]), for a ring over `window_ticks`.
    pub(crate) fn from_slot_values(
        values: impl IntoIterator<Item = u64>,
        carried: Carried,
        window_ticks: u64,
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
        Self {
            usage,
            newest_tick,
            forgotten: Some(Forgotten::Chains { window_ticks }),
        }
    }

    /// The state as a window of `target_window_ticks` and `target_max` must see it: itself,
    /// unless the target window is longer than the source's and the source may have
    /// forgotten hits; then with the busiest history [`Forgotten`] allows added as assumed
    /// hits, newest first, until they alone fill the target (the last of them weighs
    /// [`FILLS_ANY_WINDOW`], standing for every older one). Each forgotten hit is matched
    /// with an assumed hit at the same tick or later, so the result counts at least as much
    /// as the true history in every window: the conversion that follows stays conservative.
    /// O((r + target_max) log r) for r records; limit changes and restores only.
    #[must_use]
    pub(crate) fn for_target(
        &self,
        target_window_ticks: u64,
        target_max: u64,
    ) -> std::borrow::Cow<'_, Self> {
        use std::collections::BinaryHeap;
        let Some(forgotten) = self.forgotten else {
            return std::borrow::Cow::Borrowed(self);
        };
        let step = forgotten.window_ticks();
        if target_window_ticks <= step {
            return std::borrow::Cow::Borrowed(self);
        }
        // Each source of assumed hits: (its next tick, its weight), stepping back by `step`.
        let mut sources: BinaryHeap<(u64, u64)> = match forgotten {
            Forgotten::Chains { .. } => self
                .usage
                .iter()
                .filter(|&&(tick, _)| tick >= step)
                .map(|&(tick, weight)| (tick - step, weight))
                .collect(),
            // As many as it takes, at the newest tick they may have: the target refuses
            // until the source's dropped span has left its window.
            Forgotten::Dropped { through_tick, .. } => {
                BinaryHeap::from([(through_tick, FILLS_ANY_WINDOW)])
            }
        };
        let mut assumed: Vec<(u64, u64)> = Vec::new();
        let mut assumed_weight = 0u64;
        while let Some((tick, mut weight)) = sources.pop() {
            // Merge every source at the same tick.
            while let Some(&(next, more)) = sources.peek() {
                if next != tick {
                    break;
                }
                sources.pop();
                weight = weight.saturating_add(more);
            }
            if assumed_weight.saturating_add(weight) >= target_max {
                // Enough to fill the target while this tick is live; older assumed hits
                // would only count while it does.
                assumed.push((tick, FILLS_ANY_WINDOW));
                break;
            }
            assumed.push((tick, weight));
            assumed_weight += weight;
            if tick >= step {
                // Every merged chain steps back by the same `step`: they stay merged, so
                // one entry serves them all.
                sources.push((tick - step, weight));
            }
        }
        let mut records = self.usage.clone();
        records.extend(assumed);
        let mut state = Self::from_unordered(records).with_newest_tick(self.newest_tick);
        // The assumed history is part of the state now: it is complete as far as any
        // window up to the target's is concerned.
        state.forgotten = None;
        std::borrow::Cow::Owned(state)
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

/// Hits an exact log no longer has slots for, after its limit was lowered or a forced `hit`
/// replaced a live one: their number and the newest of their ticks. They can decide no
/// admission under the current limit (each is older than every hit in the ring), but a later
/// raise must count them again while they may be live, so the ring keeps them and exports
/// them, all at the newest of their ticks (later, never earlier).
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

    /// These hits and one more at `tick`, dropped from a ring whose values are all at or
    /// above it.
    pub(crate) fn with_dropped(self, tick: u64) -> Self {
        Self {
            tick: self.tick.max(tick),
            count: self.count.saturating_add(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Carried, WindowState};

    #[test]
    fn slot_values_keep_the_newest_hits_in_time_order() {
        let state = WindowState::from_slot_values([0, 6, 3, 6, 9], Carried::NONE, 10);
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
            WindowState::from_slot_values(values, carried, 10).usage(),
            &[(5, 3), (8, 1)]
        );
        assert_eq!(state.to_slot_values(6).0, vec![0, 0, 3, 6, 6, 9]);
    }

    #[test]
    fn a_longer_target_assumes_the_busiest_history_of_each_slot() {
        use super::FILLS_ANY_WINDOW;
        // 2 per 10: the ring holds 1 and 30 (10 replaced 0, 30 replaced 10).
        let state = WindowState::from_slot_values([31, 2], Carried::NONE, 10);
        assert!(
            matches!(state.for_target(10, 2), std::borrow::Cow::Borrowed(_)),
            "a window no longer than the source's needs nothing assumed"
        );
        let longer = state.for_target(25, 2);
        assert_eq!(
            longer.usage(),
            &[(1, 1), (10, FILLS_ANY_WINDOW), (20, 1), (30, 1)],
            "30's slot may have held 20, 10, ...: the last assumed stands for all older"
        );
        assert_eq!(longer.newest_tick(), 30);
        let (values, carried) = longer.to_slot_values(2);
        assert_eq!(values, vec![21, 31], "(5, 30] is full under 2 per 25");
        assert_eq!(carried.tick, 10);
        // A complete log (usage history) assumes nothing.
        let complete = WindowState::from_unordered(vec![(1, 1), (30, 1)]);
        assert!(matches!(
            complete.for_target(25, 2),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn dropped_buckets_fill_a_longer_target_at_their_last_tick() {
        use super::{Forgotten, FILLS_ANY_WINDOW};
        let state = WindowState::from_parts(vec![(31, 1)], 31)
            .unwrap()
            .with_forgotten(Some(Forgotten::Dropped {
                through_tick: 3,
                window_ticks: 20,
            }));
        assert_eq!(
            state.for_target(40, 2).usage(),
            &[(3, FILLS_ANY_WINDOW), (31, 1)]
        );
        assert_eq!(state.for_target(20, 2).usage(), &[(31, 1)]);
        // The clock-skew cap never leaves an assumed tick above `now`.
        let capped = state.capped_at(2);
        assert_eq!(
            capped.for_target(40, 2).usage(),
            &[(2, FILLS_ANY_WINDOW + 1)]
        );
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
