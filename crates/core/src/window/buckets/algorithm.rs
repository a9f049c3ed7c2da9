//! The rolling-bucket algorithm, written once over [`BucketCells`]: the sequential form runs
//! it on plain integers, the atomic form on `&AtomicBuckets` with CAS (see the parent
//! module's docs for the steps and the guarantees).

mod mutants;

use mutants::{reserve_total_only, sum_then_cas};

use super::packed::MAX_TOTAL_WEIGHT;
use super::packed::{advance_reach, decode, is_sealed, low, pack, with_low, EPOCH_MODULUS};
use super::Geometry;
use crate::sync::retry_hint;
use crate::window::{Retired, Status, MAX_TICK};

/// The storage the algorithm runs on. The atomic form's `replace_*` are CASes that may fail
/// with the value found; the sequential form's always succeed.
pub(super) trait BucketCells {
    fn geometry(&self) -> Geometry;
    /// The full epoch for which recycling is complete.
    fn cleaned(&self) -> u64;
    /// Raises `cleaned` to `epoch` unless it is higher already.
    fn raise_cleaned(&mut self, epoch: u64);
    /// Moves `cleaned` from `current` to `new` (a shift by a multiple of 2^32); false if it
    /// was no longer `current`.
    fn shift_cleaned(&mut self, current: u64, new: u64) -> bool;
    /// The head word (head epoch | total).
    fn word(&self) -> u64;
    fn replace_word(&mut self, current: u64, new: u64) -> Result<(), u64>;
    /// A bucket word (tag epoch | count).
    fn bucket(&self, slot: usize) -> u64;
    fn replace_bucket(&mut self, slot: usize, current: u64, new: u64) -> Result<(), u64>;
    /// Adds `n` to a bucket's count whatever its tag.
    fn add_to_bucket(&mut self, slot: usize, n: u64);
    /// Overwrites a bucket; only the `buckets_split_tag_count` mutant does this.
    fn store_bucket(&mut self, slot: usize, value: u64);
    /// `Some(slot)` if the storage knows that every bucket but `slot` holds a count of zero
    /// (a window kept by use, before its array exists), so a scan for weight reads one
    /// bucket; `None` if any may hold weight.
    fn counts_only_in(&self) -> Option<usize> {
        None
    }
    /// Whether the storage can write the head word and the head's bucket at the head's
    /// epoch alone (a lock-free window in its inline form, `window/buckets/inline.rs`): a
    /// call that would write anything else answers `Err(Retired)` before its first write.
    fn head_bucket_only(&self) -> bool {
        false
    }
}

/// The head word read together with the `cleaned` epoch that decodes it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Snapshot {
    word: u64,
    pub(super) cleaned: u64,
    pub(super) head: u64,
    total: u64,
}

/// Reads `cleaned`, the head word, and `cleaned` again until the two agree. Then the head is
/// in `[cleaned, cleaned + reach)`: whoever wrote the word had read a `cleaned` no newer than
/// ours, and whoever raised `cleaned` to ours had seen that head.
pub(super) fn snapshot<C: BucketCells>(cells: &C) -> Snapshot {
    let physical = cells.geometry().physical();
    let mut cleaned = cells.cleaned();
    loop {
        let word = cells.word();
        let again = cells.cleaned();
        if again == cleaned {
            return Snapshot {
                word,
                cleaned,
                head: decode(word, cleaned, physical),
                total: low(word),
            };
        }
        cleaned = again;
        retry_hint();
    }
}

/// Reads bucket `slot` with a `cleaned` epoch that decodes its tag: `cleaned` is a value read
/// before the call, re-read after the bucket until it agrees. Returns the word and the tag.
pub(super) fn read_bucket<C: BucketCells>(cells: &C, slot: usize, cleaned: &mut u64) -> (u64, u64) {
    let physical = cells.geometry().physical();
    loop {
        let value = cells.bucket(slot);
        let again = cells.cleaned();
        if again == *cleaned {
            return (value, decode(value, again, physical));
        }
        *cleaned = again;
        retry_hint();
    }
}

/// Subtracts weight cleared from a bucket from the running total.
pub(super) fn subtract_from_total<C: BucketCells>(cells: &mut C, weight: u64) {
    let mut word = cells.word();
    loop {
        let total = low(word);
        debug_assert!(
            total >= weight,
            "total underflow: subtracting {weight} from a running total of {total}"
        );
        match cells.replace_word(word, with_low(word, total.saturating_sub(weight))) {
            Ok(()) => return,
            Err(found) => {
                word = found;
                retry_hint();
            }
        }
    }
}

/// Adds to the running total after the fact: only the mutants do this.
pub(super) fn add_to_total<C: BucketCells>(cells: &mut C, weight: u64) {
    let mut word = cells.word();
    loop {
        let total = (low(word) + weight).min(MAX_TOTAL_WEIGHT);
        match cells.replace_word(word, with_low(word, total)) {
            Ok(()) => return,
            Err(found) => {
                word = found;
                retry_hint();
            }
        }
    }
}

/// Recycles the buckets for `head` (see the module docs, step 3), then raises `cleaned`.
/// Recycling is complete for `cleaned`, so only the buckets of the epochs in
/// `(cleaned, head]` have a new target (that very epoch): at most `NB` of them, however far
/// the head moved, and one per epoch in order.
fn recycle_for<C: BucketCells>(cells: &mut C, mut cleaned: u64, head: u64) {
    let geometry = cells.geometry();
    let first = head - (head - cleaned).min(geometry.physical()) + 1;
    for target in first..=head {
        let slot = geometry.slot(target);
        loop {
            let (value, tag) = read_bucket(cells, slot, &mut cleaned);
            if cleaned >= head {
                // Someone finished this round (every tag is now >= its target).
                return;
            }
            if tag >= target {
                break;
            }
            let split = cfg!(slidelimit_loom_mutant = "buckets_split_tag_count");
            // The split mutant moves the tag alone and clears the count with a later store,
            // as if tag and count were two atomics: an increment in between is lost.
            let reset = pack(target, if split { low(value) } else { 0 });
            if cells.replace_bucket(slot, value, reset).is_ok() {
                if low(value) > 0 {
                    subtract_from_total(cells, low(value));
                }
                if split {
                    cells.store_bucket(slot, pack(target, 0));
                }
                break;
            }
            retry_hint();
        }
    }
    cells.raise_cleaned(head);
}

/// Moves the head towards `epoch` (> head) by one step: straight there when it is within
/// reach of `cleaned`; else shifts `cleaned` by a multiple of 2^32 if the jump is long enough
/// for the old state to stay expired; else one step of `reach`, recycling first if the head
/// is already a full step ahead. The caller re-reads the state after every step.
fn advance_towards<C: BucketCells>(cells: &mut C, snap: Snapshot, epoch: u64) {
    let geometry = cells.geometry();
    let reach = advance_reach(geometry.physical());
    let step_to = if epoch < snap.cleaned.saturating_add(reach) {
        epoch
    } else {
        // `epoch > head >= cleaned`, so this cannot underflow.
        let distance = epoch - snap.cleaned;
        let shift_floor = reach + geometry.physical() + EPOCH_MODULUS;
        if distance >= shift_floor {
            let shift = (distance - reach - geometry.physical()) / EPOCH_MODULUS * EPOCH_MODULUS;
            if !cells.shift_cleaned(snap.cleaned, snap.cleaned + shift) {
                retry_hint();
            }
            return;
        }
        snap.cleaned + reach - 1
    };
    if step_to > snap.head {
        if cells
            .replace_word(snap.word, pack(step_to, snap.total))
            .is_err()
        {
            retry_hint();
        }
    } else {
        // The head is a full step past `cleaned` (so `cleaned < head`): recycle, then step.
        recycle_for(cells, snap.cleaned, snap.head);
    }
}

/// Records `n` reserved at `epoch` in its bucket (step 5). `cleaned` is a value read before.
#[inline]
pub(super) fn record<C: BucketCells>(cells: &mut C, epoch: u64, n: u64, mut cleaned: u64) {
    let slot = cells.geometry().slot(epoch);
    loop {
        let (value, tag) = read_bucket(cells, slot, &mut cleaned);
        if tag >= epoch {
            // Its own epoch, or a newer one after a recycle: the weight expires no earlier.
            cells.add_to_bucket(slot, n);
            return;
        }
        // The bucket holds an expired epoch (the head passed `epoch >= tag + NB`): replace it.
        if cells.replace_bucket(slot, value, pack(epoch, n)).is_ok() {
            if low(value) > 0 {
                subtract_from_total(cells, low(value));
            }
            return;
        }
        retry_hint();
    }
}

#[inline]
pub(super) fn check_and_hit<C: BucketCells>(
    cells: &mut C,
    now: u64,
    n: u64,
) -> Result<bool, Retired> {
    match reserve(cells, now, n)? {
        Some(taken) => {
            commit(cells, taken);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// A reservation of `n` in the running total (steps 1-4) not yet recorded in its bucket:
/// [`commit`] records it, [`undo`] takes it back. Used alone by the windows of a layered
/// limit ([`crate::window::layers`]), which reserve in every window before recording in any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketsTaken {
    epoch: u64,
    n: u64,
    cleaned: u64,
}

/// Step 5: records a reservation in its bucket.
#[inline]
pub(super) fn commit<C: BucketCells>(cells: &mut C, taken: BucketsTaken) {
    let mutant_recorded = cfg!(any(
        slidelimit_loom_mutant = "buckets_sum_then_cas",
        slidelimit_loom_mutant = "buckets_split_head_total",
        slidelimit_loom_mutant = "buckets_record_before_reserve"
    )) && taken.n == 0;
    if mutant_recorded {
        // The mutants above record their own weight (or none); nothing is left to record.
        return;
    }
    record(cells, taken.epoch, taken.n, taken.cleaned);
}

/// Takes back a reservation never recorded: the total holds it and no bucket does, so
/// subtracting it leaves the total as if it had never been made (recycling only ever
/// subtracts what buckets hold). Callers that read the higher total meanwhile refused
/// more, never less.
pub(super) fn undo<C: BucketCells>(cells: &mut C, taken: BucketsTaken) {
    subtract_from_total(cells, taken.n);
}

/// Steps 1-4: reserves `n` at `now` in the total, or refuses (`None`).
#[inline]
pub(super) fn reserve<C: BucketCells>(
    cells: &mut C,
    now: u64,
    n: u64,
) -> Result<Option<BucketsTaken>, Retired> {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    let snap = loop {
        let snap = snapshot(cells);
        if is_sealed(snap.word) {
            return Err(Retired);
        }
        if epoch != snap.head && cells.head_bucket_only() && !geometry.too_late(epoch, snap.head) {
            // An advance, or a record in an older bucket: the window must grow first.
            return Err(Retired);
        }
        if epoch > snap.head {
            advance_towards(cells, snap, epoch);
            continue;
        }
        if geometry.too_late(epoch, snap.head) {
            return Ok(None);
        }
        if snap.cleaned < snap.head {
            recycle_for(cells, snap.cleaned, snap.head);
            continue;
        }
        if cfg!(slidelimit_loom_mutant = "buckets_sum_then_cas") {
            return Ok(sum_then_cas(cells, epoch, n, snap).then_some(BucketsTaken {
                epoch,
                n: 0,
                cleaned: snap.cleaned,
            }));
        }
        if cfg!(slidelimit_loom_mutant = "buckets_split_head_total") {
            // Deliberately broken: the lateness check above used this head, but the
            // reservation re-reads the total alone, as if head and total were two atomics.
            return Ok(
                reserve_total_only(cells, epoch, n, snap.cleaned).then_some(BucketsTaken {
                    epoch,
                    n: 0,
                    cleaned: snap.cleaned,
                }),
            );
        }
        if snap.total + n > geometry.max_requests() {
            return Ok(None);
        }
        if cfg!(slidelimit_loom_mutant = "buckets_record_before_reserve") {
            // Deliberately broken: records, then adds to the total, so a recycler can
            // subtract this weight before the total holds it.
            record(cells, epoch, n, snap.cleaned);
            add_to_total(cells, n);
            return Ok(Some(BucketsTaken {
                epoch,
                n: 0,
                cleaned: snap.cleaned,
            }));
        }
        // The reservation: the linearization point of an admission. The CAS fails if the
        // head moved or anything was added or subtracted since the snapshot.
        match cells.replace_word(snap.word, with_low(snap.word, snap.total + n)) {
            Ok(()) => break snap,
            Err(_) => retry_hint(),
        }
    };
    Ok(Some(BucketsTaken {
        epoch,
        n,
        cleaned: snap.cleaned,
    }))
}

pub(super) fn hit<C: BucketCells>(cells: &mut C, now: u64, n: u64) -> Result<(), Retired> {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    let (snap, weight) = loop {
        let snap = snapshot(cells);
        if is_sealed(snap.word) {
            return Err(Retired);
        }
        if epoch != snap.head && cells.head_bucket_only() && !geometry.expired(epoch, snap.head) {
            // An advance, or a record in an older bucket: the window must grow first.
            return Err(Retired);
        }
        if epoch > snap.head {
            advance_towards(cells, snap, epoch);
            continue;
        }
        if geometry.expired(epoch, snap.head) {
            // Already expired for every caller that can still be admitted.
            return Ok(());
        }
        if snap.cleaned < snap.head {
            recycle_for(cells, snap.cleaned, snap.head);
            continue;
        }
        let weight = n.min(MAX_TOTAL_WEIGHT - snap.total);
        if weight == 0 {
            return Ok(());
        }
        match cells.replace_word(snap.word, with_low(snap.word, snap.total + weight)) {
            Ok(()) => break (snap, weight),
            Err(_) => retry_hint(),
        }
    };
    record(cells, epoch, weight, snap.cleaned);
    Ok(())
}

/// What a caller at `now` would see, from loads alone.
#[derive(Clone, Copy, Debug)]
struct View {
    snap: Snapshot,
    epoch: u64,
    /// `max(head, epoch)`: the head once the caller has advanced it.
    head: u64,
    /// The weight counted against the caller: the total minus every bucket that the advance
    /// to `head` would recycle.
    count: u64,
}

impl View {
    fn too_late(&self, geometry: Geometry) -> bool {
        geometry.too_late(self.epoch, self.snap.head)
    }
}

fn view<C: BucketCells>(cells: &C, now: u64) -> Result<View, Retired> {
    let geometry = cells.geometry();
    let epoch = geometry.epoch(now);
    loop {
        let snap = snapshot(cells);
        if is_sealed(snap.word) {
            return Err(Retired);
        }
        let head = snap.head.max(epoch);
        if snap.cleaned == head {
            // Nothing left to recycle for this caller: the total is its count.
            return Ok(View {
                snap,
                epoch,
                head,
                count: snap.total,
            });
        }
        // As in `recycle_for`: only the buckets of the epochs in (cleaned, head] can expire.
        let mut cleaned = snap.cleaned;
        let mut expired = 0u64;
        let first = head - (head - snap.cleaned).min(geometry.physical()) + 1;
        for epoch in first..=head {
            let (value, tag) = read_bucket(cells, geometry.slot(epoch), &mut cleaned);
            if tag < epoch {
                expired += low(value);
            }
        }
        if cleaned == snap.cleaned {
            return Ok(View {
                snap,
                epoch,
                head,
                count: snap.total.saturating_sub(expired),
            });
        }
        retry_hint();
    }
}

pub(super) fn allowed<C: BucketCells>(cells: &C, now: u64, n: u64) -> Result<bool, Retired> {
    let geometry = cells.geometry();
    let view = view(cells, now)?;
    Ok(!view.too_late(geometry) && view.count + n <= geometry.max_requests())
}

/// The window at `now`, with the wait until weight `n` (at most `max_requests`) fits.
pub(super) fn status<C: BucketCells>(cells: &C, now: u64, n: u64) -> Result<Status, Retired> {
    let geometry = cells.geometry();
    let now = now.min(MAX_TICK);
    let view = view(cells, now)?;
    let late = view.too_late(geometry);
    let max_requests = geometry.max_requests();
    let remaining = if late {
        0
    } else {
        max_requests.saturating_sub(view.count)
    };
    // The first epoch at which weight `n` would be admitted, no other call assumed: not
    // late, and enough of the oldest retained buckets recycled to free `n` of room. Each
    // bucket leaves whole at its expiry, so the answer is exact on the bucket grid.
    let mut admit_at = view
        .epoch
        .max(view.snap.head.saturating_sub(geometry.lateness));
    let fits_at_most = max_requests.saturating_sub(n);
    if view.count > fits_at_most {
        let need = view.count - fits_at_most;
        let mut dropped = 0u64;
        let mut cleaned = view.snap.cleaned;
        let oldest = view.head.saturating_sub(geometry.physical() - 1);
        // Retained epochs in order: the bucket of epoch j expires when the head reaches
        // j + NB. (Weight still only reserved expires with no bucket: then the last one.)
        for epoch in oldest..=view.head {
            let (value, tag) = read_bucket(cells, geometry.slot(epoch), &mut cleaned);
            if tag != epoch || low(value) == 0 {
                continue;
            }
            admit_at = admit_at.max(epoch.saturating_add(geometry.physical()));
            dropped += low(value);
            if dropped >= need {
                break;
            }
        }
    }
    let retry_after_ticks = if admit_at <= view.epoch {
        0
    } else {
        admit_at
            .saturating_mul(geometry.bucket_ticks)
            .saturating_sub(now)
    };
    Ok(Status {
        count: view.count,
        remaining,
        retry_after_ticks,
    })
}

/// Whether the window is fresh for every call at or after `horizon` (the sweep's look under
/// a lock): the first look settles a recent hit in the head's bucket without the scan, unless
/// the head's bucket is the only one the scan would read.
#[inline]
pub(super) fn is_idle_by<C: BucketCells>(cells: &C, horizon: u64) -> bool {
    if cells.counts_only_in().is_none() && surely_live_by(cells, horizon) {
        return false;
    }
    idle_from(cells) <= horizon
}

/// Whether the window is surely not idle by `horizon`, from the header and the head's own
/// bucket alone: a lower bound of [`idle_from`] (the head's bucket holds the newest epoch's
/// weight, so when it has any, the bound is exact). A sweep's first look at each window it
/// visits: most are live, and [`idle_from`] reads every bucket (at 16 buckets, three such
/// scans per removed key were 40% of a removal's instructions on key churn). `false` says
/// nothing; the caller reads the whole window.
pub(super) fn surely_live_by<C: BucketCells>(cells: &C, horizon: u64) -> bool {
    let geometry = cells.geometry();
    let snap = snapshot(cells);
    let mut cleaned = snap.cleaned;
    let (value, tag) = read_bucket(cells, geometry.slot(snap.head), &mut cleaned);
    let fresh_epoch = if low(value) > 0 && tag == snap.head {
        snap.head.saturating_add(geometry.physical())
    } else {
        snap.head.saturating_sub(geometry.lateness)
    };
    fresh_epoch.saturating_mul(geometry.bucket_ticks) > horizon
}

/// The first tick from which the window answers every call as an empty one would, or
/// `u64::MAX` while a reservation or a recycle is in flight. Reads through a seal: the
/// sweeper judges the sealed state with it.
///
/// Reads the buckets newest first (the head's slot, then back) and stops once the counts
/// read add up to the running total read before them. A count only ever moves weight the
/// total already holds (a reservation raises the total before it records, a recycle clears
/// a count before it subtracts), so in a window no reservation can enter (sealed, or under
/// a lock) the counts read never exceed that total, and once they reach it every bucket not
/// read counts zero: it cannot change the answer. A window hit once (key churn) is judged
/// from one bucket instead of `NB`. Without a seal a reservation may land behind the scan;
/// a look without a seal is a filter the sealed re-check confirms, or a hint.
#[inline]
pub(super) fn idle_from<C: BucketCells>(cells: &C) -> u64 {
    let geometry = cells.geometry();
    let snap = snapshot(cells);
    if cells.head_bucket_only() {
        // An inline window (`window/buckets/inline.rs`): all its weight is at the head's
        // epoch, counted by the total itself, so nothing is ever in flight and the scan
        // below would read that one bucket to find exactly this.
        let fresh_epoch = if snap.total > 0 {
            snap.head.saturating_add(geometry.physical())
        } else {
            snap.head.saturating_sub(geometry.lateness)
        };
        return fresh_epoch.saturating_mul(geometry.bucket_ticks);
    }
    let mut cleaned = snap.cleaned;
    let mut recorded = 0u64;
    // Not late for any caller from here on; then no retained bucket may hold weight.
    let mut fresh_epoch = snap.head.saturating_sub(geometry.lateness);
    let physical = geometry.physical() as usize;
    // Every bucket holding weight, newest first; a bucket counting zero changes nothing.
    let (mut slot, to_read) = match cells.counts_only_in() {
        Some(slot) => (slot, 1),
        None => (geometry.slot(snap.head), physical),
    };
    for _ in 0..to_read {
        if recorded == snap.total {
            // Every unit of the total is in a bucket read: the rest count zero.
            break;
        }
        let (value, tag) = read_bucket(cells, slot, &mut cleaned);
        recorded += low(value);
        if low(value) > 0 && !geometry.expired(tag, snap.head) {
            fresh_epoch = fresh_epoch.max(tag.saturating_add(geometry.physical()));
        }
        slot = slot.checked_sub(1).unwrap_or(physical - 1);
    }
    if recorded != snap.total || cleaned != snap.cleaned {
        // A reservation not yet recorded, or a recycle not yet subtracted: in flight.
        return u64::MAX;
    }
    fresh_epoch.saturating_mul(geometry.bucket_ticks)
}
