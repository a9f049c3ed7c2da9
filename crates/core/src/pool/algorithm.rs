//! The key-pool algorithm, written once over [`LedgerCells`]: the sequential form runs it on
//! plain integers under a lock, the atomic form on atomics with one CAS per decision (see the
//! parent module for the steps, the bound and the guarantees).

use super::control::Control;
use super::geometry::PoolGeometry;
use super::{PoolStatus, Refusal, RefusalWitness};
use crate::sync::{retry_hint, Backoff};
use crate::window::MAX_TICK;

/// What the algorithm reads: the control word ([`Control`]), the release watermark and each
/// bucket slot's fields.
pub(crate) trait LedgerReads {
    fn geometry(&self) -> &PoolGeometry;
    /// The control word.
    fn control(&self) -> u64;
    /// The release watermark: the highest cooldown end of a bucket released so far (raised
    /// only by releasing calls, to the value they checked against their own `now`). A call
    /// below it is late.
    fn released_through(&self) -> u64;
    /// The first-use word of `slot`: the bucket's tag ([`tag_of`]) shifted left by one, its
    /// low bit set once the bucket is flagged as opened by a far-ahead call. It only grows:
    /// a newer bucket's tag is larger, flag or not.
    fn first_use_word(&self, slot: usize) -> u64;
    /// The cooldown end (newest use + `T`) of a bucket opened by a well-timed call. It only
    /// grows, across the slot's buckets too: far-ahead ticks never go there.
    fn cooled_word(&self, slot: usize) -> u64;
    /// The far word of `slot`: a tag and the cooldown end of a bucket opened by a far-ahead
    /// call, raised within its bucket (see [`LedgerCells`]).
    fn far_word(&self, slot: usize) -> (u64, u64);
    /// The tick a bucket opened by a well-timed call opened at (written with a time
    /// threshold only). It only grows, like the well-timed cooldown end.
    fn opened_word(&self, slot: usize) -> u64;
    /// The far-opened word of `slot`: a tag and the tick a bucket opened by a far-ahead call
    /// opened at (with a time threshold only), raised within its bucket.
    fn far_opened_word(&self, slot: usize) -> (u64, u64);
}

impl<T: LedgerReads> LedgerReads for &T {
    fn geometry(&self) -> &PoolGeometry {
        (**self).geometry()
    }
    fn control(&self) -> u64 {
        (**self).control()
    }
    fn released_through(&self) -> u64 {
        (**self).released_through()
    }
    fn first_use_word(&self, slot: usize) -> u64 {
        (**self).first_use_word(slot)
    }
    fn cooled_word(&self, slot: usize) -> u64 {
        (**self).cooled_word(slot)
    }
    fn far_word(&self, slot: usize) -> (u64, u64) {
        (**self).far_word(slot)
    }
    fn opened_word(&self, slot: usize) -> u64 {
        (**self).opened_word(slot)
    }
    fn far_opened_word(&self, slot: usize) -> (u64, u64) {
        (**self).far_opened_word(slot)
    }
}

/// The full sequence number of the first use in the bucket at `slot` (`u64::MAX`, that is
/// -1, in a slot never opened).
#[inline]
pub(crate) fn first_seq<C: LedgerReads>(cells: &C, slot: usize) -> u64 {
    (cells.first_use_word(slot) >> 1).wrapping_sub(1)
}

/// Whether the bucket at `slot` is flagged as opened by a far-ahead call.
#[inline]
fn flagged_far<C: LedgerReads>(cells: &C, slot: usize) -> bool {
    cells.first_use_word(slot) & 1 != 0
}

/// The tick at which the bucket at `slot` opened (unused without a time threshold).
#[inline]
pub(crate) fn opened_at<C: LedgerReads>(cells: &C, slot: usize, control: Control) -> u64 {
    let first_use = cells.first_use_word(slot);
    opened_tick(
        cells,
        slot,
        first_use,
        is_far(cells, slot, first_use, control),
    )
}

/// The opening tick of the bucket at `slot` (first-use word `first_use`): from the far-opened
/// word if `far`, else from the well-timed one. Read as opened at 0 (closed to joins) in a far
/// word not yet the bucket's.
#[inline]
fn opened_tick<C: LedgerReads>(cells: &C, slot: usize, first_use: u64, far: bool) -> u64 {
    if far {
        far_tick(cells.far_opened_word(slot), first_use, 0)
    } else {
        cells.opened_word(slot)
    }
}

/// The cooldown end of the bucket at `slot` (first-use word `first_use`): from the far word if
/// `far`, else from the well-timed one. Held for good in a far word not yet the bucket's.
#[inline]
fn cooled_tick<C: LedgerReads>(cells: &C, slot: usize, first_use: u64, far: bool) -> u64 {
    if far {
        far_tick(cells.far_word(slot), first_use, u64::MAX)
    } else {
        cells.cooled_word(slot)
    }
}

/// The tick of a 128-bit far word `(tag, tick)` for the bucket whose first-use word is
/// `first_use`, or `otherwise` if the word is not that bucket's. Its opener raised it before
/// the CAS that opened the bucket, so a view the control word confirms never sees `otherwise`.
#[inline]
fn far_tick(word: (u64, u64), first_use: u64, otherwise: u64) -> u64 {
    let (tag, tick) = word;
    if tag == first_use >> 1 {
        tick
    } else {
        otherwise
    }
}

/// Whether the bucket at `slot`, whose first-use word is `first_use`, was opened by a
/// far-ahead call: its slot is flagged, or it is the newest and the control word says so.
#[inline]
fn is_far<C: LedgerReads>(cells: &C, slot: usize, first_use: u64, control: Control) -> bool {
    first_use & 1 != 0
        || (control.far
            && control.live > 0
            && slot as u64 == cells.geometry().newest_slot(control.head, control.live))
}

/// The tick from which the bucket at `slot` has cooled down (its newest use + `T`), for a
/// reader whose control word says `control`: from the far word where the bucket was opened
/// by a far-ahead call (its slot flagged, or it is the newest and the word says so), else
/// from the bucket word.
#[inline]
pub(crate) fn cooled_at<C: LedgerReads>(cells: &C, slot: usize, control: Control) -> u64 {
    cooled_at_with(cells, slot, cells.first_use_word(slot), control)
}

/// [`cooled_at`] for a slot whose first-use word was read as `first_use`.
#[inline]
fn cooled_at_with<C: LedgerReads>(cells: &C, slot: usize, first_use: u64, control: Control) -> u64 {
    cooled_tick(
        cells,
        slot,
        first_use,
        is_far(cells, slot, first_use, control),
    )
}

/// What the algorithm writes. `replace_control` is a CAS in the atomic form (it may fail with
/// the word found) and always succeeds in the sequential form. Every slot write comes before
/// the CAS that counts its use (or moves its bucket), and only raises:
/// - the first-use word and the well-timed cooldown end and opening tick grow (`fetch_max`)
///   across the slot's buckets, as sequence numbers and well-timed ticks do; a writer that
///   lost a race can never lower what the winner wrote;
/// - the far and far-opened words are 128-bit, a tick with the tag of its bucket, and raise
///   **within their bucket**: a write for a newer bucket replaces an older bucket's word
///   (so a far-ahead tick is gone from the slot once the next bucket there is written), the
///   larger tick is kept within one bucket, and a stale writer's (an older bucket's) changes
///   nothing.
///
/// Far-ahead ticks go only to the far and far-opened words, which only far-ahead openers (and
/// joiners of their buckets) write: so a far-ahead call that loses a slot to a well-timed one leaves nothing
/// the well-timed bucket reads, and no far-ahead tick outlives its bucket.
pub(crate) trait LedgerCells: LedgerReads {
    fn replace_control(&mut self, current: u64, new: u64) -> Result<(), u64>;
    fn raise_released_through(&mut self, tick: u64);
    /// Raises `slot`'s first-use word to `word` (`fetch_max`).
    fn raise_first_use_word(&mut self, slot: usize, word: u64);
    /// Raises `slot`'s well-timed cooldown end to `tick` (`fetch_max`).
    fn raise_cooled_word(&mut self, slot: usize, tick: u64);
    /// Raises `slot`'s far word within the bucket tagged `tag` to `tick`.
    fn raise_far_word(&mut self, slot: usize, tag: u64, tick: u64);
    /// Raises `slot`'s well-timed opening tick to `tick` (`fetch_max`).
    fn raise_opened_word(&mut self, slot: usize, tick: u64);
    /// Raises `slot`'s far-opened word within the bucket tagged `tag` to `tick`.
    fn raise_far_opened_word(&mut self, slot: usize, tag: u64, tick: u64);
}

/// The tag a slot word holds for the bucket whose first use is `first_seq`: the number plus
/// one, so that a slot never opened (tag 0) is older than every bucket.
#[inline]
pub(crate) fn tag_of(first_seq: u64) -> u64 {
    first_seq.wrapping_add(1)
}

/// The raise within a bucket (see [`LedgerCells`]) of a 128-bit slot word `(tag, tick)` for
/// the bucket tagged `tag` to `tick`: the new word, or `None` where the word does not change.
pub(crate) fn raised_within_bucket(word: (u64, u64), tag: u64, tick: u64) -> Option<(u64, u64)> {
    let (found_tag, found_tick) = word;
    if found_tag > tag || (found_tag == tag && found_tick >= tick) {
        None
    } else if found_tag < tag {
        Some((tag, tick))
    } else {
        Some((tag, found_tick.max(tick)))
    }
}

/// One consistent reading of the pool: the slot fields were read while the control word held
/// `word` (it was read again after them and had not changed).
#[derive(Clone, Copy, Debug)]
struct View {
    word: u64,
    control: Control,
    /// The full sequence number the next use gets.
    next_seq: u64,
    /// Uses in held buckets.
    held: u64,
    /// Slot of the newest bucket (of the last one released when none is held).
    newest: usize,
    /// Whether the newest bucket takes another use at the caller's `now`.
    newest_accepts: bool,
    /// The full sequence number of the newest bucket's first use (0 in the exact pool, which
    /// never reads its newest slot and never joins).
    newest_first: u64,
    /// The tick from which the oldest held bucket has cooled down (`u64::MAX` if none).
    head_cooled_at: u64,
    /// The full sequence number of the oldest held bucket's first use (0 if none).
    head_first: u64,
}

/// Reads the slots the decision needs, then the control word again, until the word is the
/// same on both sides: then no bucket was opened or released in between, so the fields read
/// belong to the buckets `word` describes.
#[inline(always)]
fn read_view<C: LedgerReads>(cells: &C, mut word: u64, now: u64) -> View {
    let geometry = cells.geometry();
    loop {
        let control = Control::unpack(word);
        let newest = geometry.newest_slot(control.head, control.live) as usize;
        let (held, head_cooled_at, head_first) = if control.live == 0 {
            (0, u64::MAX, 0)
        } else {
            let head = control.head as usize;
            let first_use = cells.first_use_word(head);
            let head_first = (first_use >> 1).wrapping_sub(1);
            (
                control.uses_since(head_first),
                cooled_at_with(cells, head, first_use, control),
                head_first,
            )
        };
        let (next_seq, newest_accepts, newest_first) =
            if control.live > 0 && geometry.bucket_uses == 1 {
                // One use per bucket (the exact pool): the newest bucket is full, and the held
                // uses run from the head's first to the next. Not reading the newest slot keeps
                // the line its opener (most likely another thread) just wrote out of this call.
                (head_first.wrapping_add(held), false, 0)
            } else {
                let first_use = cells.first_use_word(newest);
                let newest_first = (first_use >> 1).wrapping_sub(1);
                let newest_uses = control.uses_since(newest_first);
                // The newest bucket is a far-ahead one if its slot is flagged or the word says
                // so (read once here, for both ticks).
                let far = first_use & 1 != 0 || control.far;
                // A bucket that has cooled down takes no more uses: joining it would hold its
                // old uses for another T (possible only without a time threshold, or with
                // τ > T). One holding a use more than T after `now` (a bad clock's) takes
                // none from this call either: joining would hold this call's use until that
                // far tick too.
                let newest_cooled_at = cooled_tick(cells, newest, first_use, far);
                let accepts = control.live > 0
                    && newest_uses < geometry.bucket_uses
                    && newest_cooled_at > now
                    && !geometry.holds_use_far_after(newest_cooled_at, now)
                    && !geometry.time_closed(opened_tick(cells, newest, first_use, far), now);
                (
                    newest_first.wrapping_add(newest_uses),
                    accepts,
                    newest_first,
                )
            };
        let again = cells.control();
        if again == word {
            return View {
                word,
                control,
                next_seq,
                held,
                newest,
                newest_accepts,
                newest_first,
                head_cooled_at,
                head_first,
            };
        }
        word = again;
        retry_hint();
    }
}

/// At most this many buckets one call of a key pool moves to the back of its ring (a bad
/// clock's buckets: see the [pool's docs](crate::pool)): a burst of up to this many
/// far-future uses, opened one after another, is passed by a single well-timed call.
pub const MAX_REQUEUES_PER_CALL: u32 = 8;

/// Whether the oldest held bucket (at `head`, `live ≥ 2` held, cooling down at
/// `head_cooled_at`) holds a use more than `T` after a use of the bucket behind it or of the
/// newest bucket: out of order by more than a cooldown, so a bad clock's, and whichever call
/// releases it would raise the release watermark that far ahead of the pool (and refuse every
/// well-timed call as late until then). Read only when its cooldown end is already more than
/// `2T` past the release watermark, so that a pool in steady use never reads the two slots.
#[cold]
#[inline(never)]
fn head_jumps<C: LedgerReads>(
    cells: &C,
    control: Control,
    head_cooled_at: u64,
    released_through: u64,
) -> bool {
    let geometry = cells.geometry();
    let (head, live) = (control.head, control.live);
    if live < 2 || !geometry.holds_use_far_after(head_cooled_at, released_through) {
        return false;
    }
    let behind = geometry.ring_slot(head, 1) as usize;
    let newest = geometry.ring_slot(head, live - 1) as usize;
    let earliest = cooled_at(cells, behind, control).min(cooled_at(cells, newest, control));
    geometry.holds_use_far_after(
        head_cooled_at,
        earliest.saturating_sub(geometry.cooldown_ticks),
    )
}

/// Whether a call at `now` that needs the oldest bucket's uses (every use is held) moves that
/// bucket to the back of the ring rather than release it or be refused: when the bucket holds
/// a use more than `T` after `now` (not cooled down, and far ahead), or has cooled down but
/// [jumps](head_jumps) ahead of the pool.
#[inline(always)]
fn should_requeue<C: LedgerReads>(cells: &C, view: &View, now: u64, released_through: u64) -> bool {
    let geometry = cells.geometry();
    if view.control.live < 2 || view.held < geometry.total_uses {
        return false;
    }
    // The common case, checked first: the head cooled down no later than 2T past the
    // watermark (a pool in steady use), so it is released.
    if view.head_cooled_at <= now
        && !geometry.holds_use_far_after(view.head_cooled_at, released_through)
    {
        return false;
    }
    if view.head_cooled_at > now {
        return geometry.holds_use_far_after(view.head_cooled_at, now);
    }
    !cfg!(slidelimit_loom_mutant = "pool_release_far_head")
        && head_jumps(cells, view.control, view.head_cooled_at, released_through)
}

/// Moves the oldest bucket, unreleased, to the back of the ring: its `n` uses are numbered
/// again `L` later (the same key names, since `L = K·X`; every use is held, so the next
/// number is the head's first plus `L`) and keep its cooldown end. Nothing is freed and no
/// watermark moves; the buckets behind it come to the head. The new slot is written like an
/// opened bucket's, before the CAS: `Err(word found)` if the CAS lost. Why it is safe: the
/// pool's docs, "A bad clock".
#[cold]
#[inline(never)]
fn requeue_head<C: LedgerCells>(cells: &mut C, view: &View, now: u64) -> Result<(), u64> {
    let geometry = *cells.geometry();
    let control = view.control;
    let head = control.head as usize;
    let behind = geometry.ring_slot(control.head, 1) as usize;
    let uses = first_seq(cells, behind).wrapping_sub(view.head_first);
    let tail = geometry.ring_slot(control.head, control.live) as usize;
    // With two buckets held or more, a far-ahead head's flag is in its slot (the call that
    // opened the bucket behind it wrote it).
    let head_far = flagged_far(cells, head);
    // The `pool_requeue_cools_at_now` mutant deliberately gives the moved uses the caller's
    // cooldown end instead of their own, so a far-future use's key is free again long before
    // that use's tick plus T.
    let cooled_at = if cfg!(slidelimit_loom_mutant = "pool_requeue_cools_at_now") {
        geometry.cooled_at(now)
    } else {
        view.head_cooled_at
    };
    let opened_at = geometry.open_ticks.map(|_| opened_at(cells, head, control));
    // Its far-ahead state goes in the control word, like an opener's, never as a flag before
    // the CAS: a well-timed call that releases the head and opens the same slot from the same
    // view (with the same tag) would find its bucket flagged and read by the far word.
    raise_bucket_ticks(cells, tail, view.next_seq, head_far, cooled_at, opened_at);
    if head_far && cfg!(slidelimit_loom_mutant = "pool_requeue_flags_before_cas") {
        // Deliberately broken: flags the moved bucket's slot before the CAS.
        cells.raise_first_use_word(tail, tag_of(view.next_seq) << 1 | 1);
    }
    flag_far_newest(cells, view);
    let next = Control {
        head: geometry.ring_slot(control.head, 1),
        far: head_far,
        ..control
    }
    .after_uses(uses);
    cells.replace_control(view.word, next.pack())
}

/// Writes the ticks of the bucket whose first use is `first_seq` into the free `slot` before
/// the CAS that opens it (or moves a bucket there): to the far words if `far`, else to the
/// well-timed ones, then its tag, unflagged (its far-ahead state goes in the control word,
/// and the next call flags the slot). Only far-ahead writers touch far words and they never
/// touch the well-timed ones, so a loser of one kind leaves nothing the winner of the other
/// reads.
fn raise_bucket_ticks<C: LedgerCells>(
    cells: &mut C,
    slot: usize,
    first_seq: u64,
    far: bool,
    cooled_at: u64,
    opened_at: Option<u64>,
) {
    let tag = tag_of(first_seq);
    if let Some(opened_at) = opened_at {
        if far {
            cells.raise_far_opened_word(slot, tag, opened_at);
        } else {
            cells.raise_opened_word(slot, opened_at);
        }
    }
    if far {
        cells.raise_far_word(slot, tag, cooled_at);
        if cfg!(slidelimit_loom_mutant = "pool_far_writes_cooled_word") {
            // Deliberately broken: the far-ahead tick goes to the well-timed word too, where
            // a well-timed winner of the same slot inherits it.
            cells.raise_cooled_word(slot, cooled_at);
        }
    } else {
        cells.raise_cooled_word(slot, cooled_at);
    }
    cells.raise_first_use_word(slot, tag << 1);
}

/// Raises the newest bucket's cooldown end to `cooled_at` for a join: in its far word if a
/// far-ahead call opened it.
fn raise_use<C: LedgerCells>(cells: &mut C, view: &View, cooled_at: u64) {
    let tag = tag_of(view.newest_first);
    if view.control.far || flagged_far(cells, view.newest) {
        cells.raise_far_word(view.newest, tag, cooled_at);
    } else {
        cells.raise_cooled_word(view.newest, cooled_at);
    }
}

/// Whether a call at `now` that opens a bucket opens it as a far-ahead one: its use is more
/// than `T` after the newest well-timed use the pool knows of (the release watermark's
/// bucket, the oldest and the newest held where a well-timed call opened them). A bad
/// clock's, or the first after an idle gap (and the calls after it, until a release moves
/// the watermark): its cooldown end goes to its slot's far word, which well-timed openers
/// never write, so that a race between the two for one slot leaves the well-timed winner's
/// bucket its own tick, and a far-ahead tick never reaches a well-timed cooldown end (which
/// only grows, across the slot's buckets too).
#[inline(always)]
fn opens_far_ahead<C: LedgerReads>(
    cells: &C,
    view: &View,
    now: u64,
    released_through: u64,
) -> bool {
    // A pool in steady use: the watermark is within a cooldown of every call.
    now > released_through.saturating_add(cells.geometry().cooldown_ticks)
        && opens_far_ahead_of_the_pool(cells, view, now, released_through)
}

/// [`opens_far_ahead`] past its first check.
#[cold]
#[inline(never)]
fn opens_far_ahead_of_the_pool<C: LedgerReads>(
    cells: &C,
    view: &View,
    now: u64,
    released_through: u64,
) -> bool {
    let geometry = cells.geometry();
    let threshold = |known: u64| known.saturating_add(geometry.cooldown_ticks);
    let mut known = released_through;
    if view.control.live > 0 {
        let head = view.control.head as usize;
        let head_far = flagged_far(cells, head) || (view.control.far && view.control.live == 1);
        if !head_far {
            known = known.max(view.head_cooled_at);
        }
        if now > threshold(known) && !view.control.far && !flagged_far(cells, view.newest) {
            // Read only here: a pool in steady use never reads its newest slot for this.
            known = known.max(cells.cooled_word(view.newest));
        }
    }
    now > threshold(known)
}

/// Before a CAS from a word whose newest bucket was opened by a far-ahead call: flags that
/// bucket's slot, so that it is known as such once a newer bucket (or none) is the newest.
/// Every call that changes such a word writes the same flag, so a lost CAS leaves nothing
/// that is not true.
#[inline(always)]
fn flag_far_newest<C: LedgerCells>(cells: &mut C, view: &View) {
    if view.control.far && view.control.live > 0 {
        flag_newest(cells, view);
    }
}

/// [`flag_far_newest`]'s write.
#[cold]
#[inline(never)]
fn flag_newest<C: LedgerCells>(cells: &mut C, view: &View) {
    if cfg!(slidelimit_loom_mutant = "pool_far_flag_not_kept") {
        // The `pool_far_flag_not_kept` mutant deliberately forgets which buckets far-ahead
        // calls opened once they are no longer the newest.
        return;
    }
    let newest_first = first_seq(cells, view.newest);
    cells.raise_first_use_word(view.newest, tag_of(newest_first) << 1 | 1);
}

/// Hands out one use at `now`: its full sequence number (the caller names it `seq mod keys`),
/// or why not.
///
/// One decision, one CAS: release the oldest bucket if the pool needs its uses or its slot
/// and it has cooled down, then join the newest bucket or open the next one.
#[inline]
pub(crate) fn take<C: LedgerCells>(cells: &mut C, now: u64) -> Result<u64, Refusal> {
    decide(cells, now, |refusal, _| refusal)
}

/// [`take`], with each refusal given with the ledger as the decision read it.
pub(crate) fn take_witnessed<C: LedgerCells>(
    cells: &mut C,
    now: u64,
) -> Result<u64, RefusalWitness> {
    decide(cells, now, |refusal, witness| RefusalWitness {
        refusal,
        ..witness
    })
}

/// The decision of [`take`]; a refusal is answered by `refused(reason, what the decision
/// read)` (the witness's own `refusal` field is a placeholder there).
#[inline(always)]
fn decide<C: LedgerCells, E>(
    cells: &mut C,
    now: u64,
    refused: impl Fn(Refusal, RefusalWitness) -> E,
) -> Result<u64, E> {
    let now = now.min(MAX_TICK);
    let geometry = *cells.geometry();
    let mut word = cells.control();
    let mut backoff = Backoff::new();
    let mut requeues_left = MAX_REQUEUES_PER_CALL;
    loop {
        let view = read_view(cells, word, now);
        // The `pool_skip_late_check` mutant deliberately lets a late call use what a release
        // by a later call freed.
        let skip_late_check = cfg!(slidelimit_loom_mutant = "pool_skip_late_check");
        // Read after the view's control word: a release that word reflects raised the
        // watermark before its CAS.
        let released_through = cells.released_through();
        let witness = || RefusalWitness {
            refusal: Refusal::Late,
            now,
            held_uses: view.held,
            head_cooled_at: view.head_cooled_at,
            released_through,
        };
        if now < released_through && !skip_late_check {
            // A call with a later `now` released a bucket that has not cooled down by this
            // call's `now`; using its uses here could hand a key out twice within T.
            return Err(refused(Refusal::Late, witness()));
        }
        let mut next = view.control;
        let mut join = view.newest_accepts;
        // Whether this call joins the newest bucket past its thresholds (below).
        let mut join_past_thresholds = false;
        // The cooldown end of the bucket this call releases, if it releases one.
        let mut release_through = None;
        let out_of_uses = view.held >= geometry.total_uses;
        if out_of_uses || (!join && next.live >= geometry.ring_limit()) {
            // The common case first, without a call: a head cooled down within 2T of the
            // watermark is released (see `should_requeue`).
            let released_in_steady_use = view.head_cooled_at <= now
                && !geometry.holds_use_far_after(view.head_cooled_at, released_through);
            if !released_in_steady_use
                && requeues_left > 0
                && should_requeue(cells, &view, now, released_through)
            {
                // A bad clock's bucket stands at the head: pass it without releasing it.
                match requeue_head(cells, &view, now) {
                    Ok(()) => {
                        requeues_left -= 1;
                        backoff.won();
                        word = cells.control();
                    }
                    Err(found) => {
                        word = found;
                        backoff.lost();
                    }
                }
                continue;
            }
            if view.head_cooled_at > now {
                if out_of_uses {
                    return Err(refused(Refusal::Exhausted, witness()));
                }
                // Uses are free, but every slot holds a bucket and the oldest has not cooled
                // down: out-of-order `now`s (or a join racing this call's view) opened more
                // buckets than the bound. Join the newest bucket past its `k`/`τ` thresholds
                // rather than refuse: a join is safe in any bucket (it only holds the
                // bucket's uses until this use's cooldown end too), and the thresholds only
                // shape false negatives, which never come from here with ordered `now`s.
                join = true;
                join_past_thresholds = true;
            } else {
                release_through = Some(view.head_cooled_at);
                next.head = geometry.ring_slot(next.head, 1);
                next.live -= 1;
                join &= next.live > 0;
            }
        }
        let seq = view.next_seq;
        let cooled_at = geometry.cooled_at(now);
        // Published before the CAS that releases: whoever sees the new head sees it. A
        // releaser that loses its CAS leaves a value no later than its own `now`. Raised
        // last before the CAS, so this call holds the control word's line (the watermark
        // shares it) for as short a time as it can before the CAS needs it.
        let publish_release = |cells: &mut C| {
            if let Some(tick) = release_through {
                cells.raise_released_through(tick);
            }
        };
        if cfg!(slidelimit_loom_mutant = "pool_join_after_cas") && join {
            publish_release(cells);
            // Deliberately broken: records the use's cooldown end after the CAS that counts
            // it, so a release in between judges the bucket by an older newest use.
            if cells
                .replace_control(view.word, next.after_use().pack())
                .is_ok()
            {
                raise_use(cells, &view, cooled_at);
                return Ok(seq);
            }
            word = cells.control();
            retry_hint();
            continue;
        }
        // The `pool_full_join_without_raise` mutant deliberately joins a full ring's newest
        // bucket without extending its cooldown end, so the bucket may be released while
        // this use is still within T.
        let skip_raise =
            join_past_thresholds && cfg!(slidelimit_loom_mutant = "pool_full_join_without_raise");
        if join {
            if !skip_raise {
                raise_use(cells, &view, cooled_at);
            }
        } else {
            let slot = geometry.ring_slot(next.head, next.live) as usize;
            next.far = opens_far_ahead(cells, &view, now, released_through);
            let opened_at = geometry.open_ticks.map(|_| now);
            raise_bucket_ticks(cells, slot, seq, next.far, cooled_at, opened_at);
            next.live += 1;
        }
        flag_far_newest(cells, &view);
        publish_release(cells);
        match cells.replace_control(view.word, next.after_use().pack()) {
            Ok(()) => {
                backoff.won();
                return Ok(seq);
            }
            Err(found) => {
                word = found;
                backoff.lost();
            }
        }
    }
}

/// What a call at `now` would get, without taking anything: the held buckets that have
/// cooled down by `now` count as released (the next use would release them one by one).
pub(crate) fn status<C: LedgerReads>(cells: &C, now: u64) -> PoolStatus {
    let now = now.min(MAX_TICK);
    let geometry = *cells.geometry();
    let mut word = cells.control();
    loop {
        let view = read_view(cells, word, now);
        let released_through = cells.released_through();
        let mut head = view.control.head;
        let mut live = view.control.live;
        let mut head_cooled_at = view.head_cooled_at;
        // Uses of the buckets a call would move to the back of the ring (`requeue_head`):
        // still held, but they no longer stand in front of the others.
        let mut requeued_uses = 0;
        let mut requeues_left = MAX_REQUEUES_PER_CALL;
        while live > 0 {
            let requeue = requeues_left > 0
                && live >= 2
                && if head_cooled_at > now {
                    geometry.holds_use_far_after(head_cooled_at, now)
                } else {
                    let walked = Control {
                        head,
                        live,
                        ..view.control
                    };
                    head_jumps(cells, walked, head_cooled_at, released_through)
                };
            if requeue {
                let behind = geometry.ring_slot(head, 1);
                requeued_uses +=
                    first_seq(cells, behind as usize).wrapping_sub(first_seq(cells, head as usize));
                requeues_left -= 1;
            } else if head_cooled_at > now {
                break;
            }
            head = geometry.ring_slot(head, 1);
            live -= 1;
            head_cooled_at = if live == 0 {
                u64::MAX
            } else {
                // The newest bucket stays where it was: `head + live` does not move.
                cooled_at(cells, head as usize, view.control)
            };
        }
        let held = requeued_uses
            + if live == 0 {
                0
            } else {
                view.control.uses_since(first_seq(cells, head as usize))
            };
        let again = cells.control();
        if again != word {
            word = again;
            retry_hint();
            continue;
        }
        // A call that finds every slot held with uses free joins the newest bucket (see
        // `take`), so the only refusals are these two.
        let refusal = if now < released_through {
            Some(Refusal::Late)
        } else if held >= geometry.total_uses {
            Some(Refusal::Exhausted)
        } else {
            None
        };
        let available = if refusal.is_some() {
            0
        } else {
            geometry.total_uses - held
        };
        let retry_at = match refusal {
            None => now,
            Some(Refusal::Late) => released_through,
            Some(_) => head_cooled_at,
        };
        return PoolStatus {
            available,
            held_uses: held,
            held_buckets: live,
            retry_at,
            refusal,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::raised_within_bucket;

    #[test]
    fn a_raise_stays_within_its_bucket() {
        // A newer bucket replaces an older bucket's tick, however large.
        assert_eq!(raised_within_bucket((3, u64::MAX), 9, 5), Some((9, 5)));
        // Within one bucket the larger tick stays.
        assert_eq!(raised_within_bucket((9, 7), 9, 5), None);
        assert_eq!(raised_within_bucket((9, 7), 9, 8), Some((9, 8)));
        // A stale writer (an older bucket's) changes nothing.
        assert_eq!(raised_within_bucket((9, 1), 3, u64::MAX), None);
        // A slot never opened is older than every bucket.
        assert_eq!(raised_within_bucket((0, 0), 1, 0), Some((1, 0)));
    }
}
