//! The rolling buckets' words to and from a [`WindowState`] (see [`crate::window::state`] for
//! why every conversion is conservative).

use super::packed::{decode, low, pack, MAX_TOTAL_WEIGHT};
use super::Geometry;
use crate::window::state::Forgotten;
use crate::window::state::WindowState;
use crate::window::MAX_TICK;

/// The last tick of epoch `epoch`: the latest tick any weight in its bucket can have.
fn last_tick(geometry: Geometry, epoch: u64) -> u64 {
    epoch
        .saturating_mul(geometry.bucket_ticks)
        .saturating_add(geometry.bucket_ticks - 1)
        .min(MAX_TICK)
}

/// The content of a window whose head word, `cleaned` epoch and bucket words were read at one
/// moment: each retained bucket's weight at its last tick, and weight reserved but not yet
/// recorded (or cleared but not yet subtracted) at the head's last tick.
pub(super) fn export_words(
    geometry: Geometry,
    word: u64,
    cleaned: u64,
    buckets: &[u64],
) -> WindowState {
    let head = decode(word, cleaned, geometry.physical());
    let mut recorded = 0u64;
    let mut usage = Vec::with_capacity(buckets.len() + 1);
    for &value in buckets {
        let count = low(value);
        recorded += count;
        let tag = decode(value, cleaned, geometry.physical()).min(head);
        if count > 0 && !geometry.expired(tag, head) {
            usage.push((last_tick(geometry, tag), count));
        }
    }
    let in_flight = low(word).saturating_sub(recorded);
    if in_flight > 0 {
        usage.push((last_tick(geometry, head), in_flight));
    }
    WindowState::from_unordered(usage)
        .with_newest_tick(last_tick(geometry, head))
        .with_forgotten(dropped_before(geometry, head))
}

/// What buckets whose head is at epoch `head` may have dropped: every epoch the head has
/// passed by the physical bucket count (`None` while it has passed none).
pub(super) fn dropped_before(geometry: Geometry, head: u64) -> Option<Forgotten> {
    // The oldest epoch still retained at `head`; every older one may have been dropped.
    let oldest_retained = (head + 1).checked_sub(geometry.physical())?;
    let through_tick = last_tick(geometry, oldest_retained.checked_sub(1)?);
    Some(Forgotten::Dropped {
        through_tick,
        window_ticks: geometry.window_ticks,
    })
}

/// The words of an empty window whose head has moved to `now`'s epoch: the state a fresh
/// window reaches when its first call, at `now`, advances the head and recycles every bucket
/// on the way (`cleaned` = head, each bucket tagged with the epoch it now stands for), built
/// directly. A new key's first call on a fresh window spent more on that pass (about 500
/// instructions at 16 buckets, `results/lifecycle.md`) than on its decision.
/// The buckets come as an iterator in slot order, so each form builds its own storage from
/// it in one pass.
pub(super) fn empty_words_at(
    geometry: Geometry,
    now: u64,
) -> (u64, u64, impl Iterator<Item = u64>) {
    let head = geometry.epoch(now);
    (
        pack(head, 0),
        head,
        buckets_with_head_only(geometry, head, 0),
    )
}

/// The bucket words, in slot order, of a window whose head is at epoch `head` and whose only
/// weight is `head_count` in the head's own bucket: every other bucket as in an empty window
/// ([`empty_bucket`]). An empty window (`head_count` 0) and a grown inline window (its count)
/// both start from these.
pub(super) fn buckets_with_head_only(
    geometry: Geometry,
    head: u64,
    head_count: u64,
) -> impl Iterator<Item = u64> {
    let head_slot = geometry.slot(head);
    let physical = geometry.physical() as usize;
    (0..physical).map(move |slot| {
        if slot == head_slot {
            pack(head, head_count)
        } else {
            empty_bucket(head, head_slot, slot, physical)
        }
    })
}

/// Bucket `slot`'s word in an empty window of `physical` buckets whose head is at epoch
/// `head`, in slot `head_slot` (`head % physical`): tagged with the epoch in
/// `(head - physical, head]` that the slot stands for, count zero; zero if that epoch would
/// be below 0 (a slot never written).
#[inline]
pub(super) fn empty_bucket(head: u64, head_slot: usize, slot: usize, physical: usize) -> u64 {
    let behind = if slot <= head_slot {
        head_slot - slot
    } else {
        head_slot + physical - slot
    };
    head.checked_sub(behind as u64)
        .map_or(0, |epoch| pack(epoch, 0))
}

/// The words of a window holding `state`: `(head word, cleaned, buckets)`, recycling complete
/// for the head (`cleaned` = head), each retained epoch's bucket tagged with it. The weight
/// retained is capped at [`MAX_TOTAL_WEIGHT`], as `hit` caps it.
pub(super) fn words_from_state(geometry: Geometry, state: &WindowState) -> (u64, u64, Vec<u64>) {
    let head = geometry.epoch(state.newest_tick());
    let physical = geometry.physical() as usize;
    let mut counts = vec![0u64; physical];
    let mut total = 0u64;
    for &(tick, weight) in state.usage() {
        let epoch = geometry.epoch(tick).min(head);
        if geometry.expired(epoch, head) {
            continue;
        }
        let weight = weight.min(MAX_TOTAL_WEIGHT - total);
        counts[geometry.slot(epoch)] += weight;
        total += weight;
    }
    let mut buckets = vec![0u64; physical];
    for epoch in head.saturating_sub(geometry.physical() - 1)..=head {
        let slot = geometry.slot(epoch);
        buckets[slot] = pack(epoch, counts[slot]);
    }
    (pack(head, total), head, buckets)
}
