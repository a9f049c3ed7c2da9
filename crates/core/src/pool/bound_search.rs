//! Exhaustive search for the most buckets a pool holds at once: every trace of calls with
//! non-decreasing `now`, over small parameters, run through the real sequential ledger.

use std::collections::{HashSet, VecDeque};

use super::algorithm::{cooled_at, first_seq, opened_at, LedgerReads};
use super::control::Control;
use super::geometry::{additive_bucket_formula, PoolGeometry, PoolMode};
use super::sequential::SequentialLedger;
use super::Refusal;

/// The ledger's state as far as any later call can tell: per held slot, oldest first, its
/// uses, how long ago it opened and how long until it cools down, clipped where older no longer differs.
fn canonical(ledger: &SequentialLedger, now: u64, clip: u64) -> Vec<u64> {
    let geometry = *ledger.geometry();
    let control = Control::unpack(ledger.control());
    let mut key = Vec::new();
    for i in 0..control.live {
        let slot = ((control.head + i) % geometry.slots) as usize;
        let uses = if i + 1 < control.live {
            let next = ((control.head + i + 1) % geometry.slots) as usize;
            first_seq(ledger, next) - first_seq(ledger, slot)
        } else {
            control.uses_since(first_seq(ledger, slot))
        };
        key.extend([
            uses,
            (now - opened_at(ledger, slot, control)).min(clip),
            cooled_at(ledger, slot, control)
                .saturating_sub(now)
                .min(clip),
        ]);
    }
    key
}

/// The most buckets held at once over every trace, and whether any call was refused for want
/// of a bucket slot.
fn search(geometry: PoolGeometry, threshold: u64) -> (u64, bool) {
    let clip = geometry.cooldown_ticks.max(threshold) + 1;
    let start = 10 * clip;
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(SequentialLedger::new(geometry), start)]);
    let mut most = 0;
    let mut slot_refusal = false;
    while let Some((ledger, now)) = queue.pop_front() {
        for gap in 0..=clip {
            let mut next = ledger.clone();
            let at = now + gap;
            if next.take(at) == Err(Refusal::NoBucket) {
                slot_refusal = true;
            }
            most = most.max(next.status(at).held_buckets);
            if seen.insert(canonical(&next, at, clip)) {
                queue.push_back((next, at));
            }
        }
    }
    (most, slot_refusal)
}

fn modes(cooldown: u64, total: u64) -> Vec<(PoolMode, u64)> {
    let mut modes = vec![(PoolMode::Exact, 0)];
    for threshold in 1..=cooldown {
        modes.push((
            PoolMode::TimeBound {
                threshold_ticks: threshold,
            },
            threshold,
        ));
        for key_threshold in 1..=total {
            modes.push((
                PoolMode::Both {
                    threshold_ticks: threshold,
                    key_threshold,
                },
                threshold,
            ));
        }
    }
    for key_threshold in 1..=total {
        modes.push((PoolMode::CountBound { key_threshold }, 0));
    }
    modes
}

#[test]
fn the_bucket_bound_is_reached_and_never_exceeded() {
    let mut checked = 0;
    for total in 1..=6 {
        for cooldown in 1..=7 {
            for (mode, threshold) in modes(cooldown, total) {
                let geometry = PoolGeometry::new(1, total, cooldown, mode).unwrap();
                let (most, slot_refusal) = search(geometry, threshold);
                assert_eq!(
                    most,
                    geometry.bucket_bound(),
                    "L={total} T={cooldown} {mode:?}: the search found {most} buckets held at once"
                );
                let additive = additive_bucket_formula(
                    total,
                    cooldown,
                    geometry.open_ticks,
                    geometry.bucket_uses,
                );
                assert!(
                    most <= additive,
                    "L={total} T={cooldown} {mode:?}: above the additive sizing"
                );
                assert!(
                    !slot_refusal,
                    "L={total} T={cooldown} {mode:?}: a call found no slot"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 300);
}
