//! The deliberately broken variants the loom models must catch, kept beside the real code
//! path they replace (each runs only when `cfg(slidelimit_loom_mutant = "...")` names it).

use super::super::packed::{low, pack, with_low};
use super::{add_to_total, read_bucket, record, subtract_from_total, BucketCells, Snapshot};
use crate::sync::retry_hint;

/// The `buckets_split_head_total` mutant's reservation: re-reads the word and reserves
/// against whatever total it holds now, without re-checking the head.
pub(super) fn reserve_total_only<C: BucketCells>(
    cells: &mut C,
    epoch: u64,
    n: u64,
    cleaned: u64,
) -> bool {
    let max_requests = cells.geometry().max_requests();
    let mut word = cells.word();
    loop {
        if low(word) + n > max_requests {
            return false;
        }
        match cells.replace_word(word, with_low(word, low(word) + n)) {
            Ok(()) => break,
            Err(found) => {
                word = found;
                retry_hint();
            }
        }
    }
    record(cells, epoch, n, cleaned);
    true
}

/// The `buckets_sum_then_cas` mutant's decision: sums the other retained buckets, then CASes
/// its own bucket alone, with no single reservation word; the total follows afterwards.
pub(super) fn sum_then_cas<C: BucketCells>(
    cells: &mut C,
    epoch: u64,
    n: u64,
    snap: Snapshot,
) -> bool {
    let geometry = cells.geometry();
    let own = geometry.slot(epoch);
    let mut cleaned = snap.cleaned;
    loop {
        let mut others = 0;
        for slot in (0..geometry.physical() as usize).filter(|&slot| slot != own) {
            let (value, tag) = read_bucket(cells, slot, &mut cleaned);
            if !geometry.expired(tag, snap.head) {
                others += low(value);
            }
        }
        let (value, tag) = read_bucket(cells, own, &mut cleaned);
        let current = if tag >= epoch { low(value) } else { 0 };
        if others + current + n > geometry.max_requests() {
            return false;
        }
        let new = if tag >= epoch {
            value + n
        } else {
            pack(epoch, n)
        };
        if cells.replace_bucket(own, value, new).is_ok() {
            if tag < epoch && low(value) > 0 {
                subtract_from_total(cells, low(value));
            }
            add_to_total(cells, n);
            return true;
        }
        retry_hint();
    }
}
