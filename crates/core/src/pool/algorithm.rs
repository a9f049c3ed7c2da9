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
    /// The bucket at `slot`'s tag: the full sequence number of its first use plus one (0 in
    /// a slot never opened), with [`OPENING`] set while the bucket's opener has not yet
    /// published its fields (see [`LedgerCells`]).
    fn first_seq(&self, slot: usize) -> u64;
    /// The tick at which the bucket at `slot` opened (unused without a time threshold).
    fn opened_at(&self, slot: usize) -> u64;
    /// The tick from which the bucket at `slot` has cooled down: its newest use + `T`.
    fn cooled_at(&self, slot: usize) -> u64;
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
    fn first_seq(&self, slot: usize) -> u64 {
        (**self).first_seq(slot)
    }
    fn opened_at(&self, slot: usize) -> u64 {
        (**self).opened_at(slot)
    }
    fn cooled_at(&self, slot: usize) -> u64 {
        (**self).cooled_at(slot)
    }
}

/// What the algorithm writes. `replace_control` is a CAS in the atomic form (it may fail with
/// the word found) and always succeeds in the sequential form.
///
/// A bucket is opened in three steps: [`mark_opening`](LedgerCells::mark_opening) writes
/// `tag | OPENING` into the free slot's `first_seq` (unless it already holds a tag at least
/// `tag`: a newer bucket's, or the same mark; tags are first sequence numbers plus one, so
/// that a slot never opened, 0, is below every bucket's), the control CAS opens the bucket,
/// and only its winner [`publish`](LedgerCells::publish)es the fields by plain stores,
/// `first_seq = tag` last.
/// Losers leave nothing but a mark in a free slot, and every generation of a slot starts from
/// its opener's own values: a far-future tick held by one bucket is gone from the slot once
/// the next bucket opened there is published. A reader that finds `OPENING` knows the bucket's
/// first number but not its ticks: it neither releases nor joins that bucket.
///
/// `raise_*` keep the larger of the stored and the given value (joins, the watermark), so a
/// writer that lost a race can never lower what a winner wrote.
pub(crate) trait LedgerCells: LedgerReads {
    fn replace_control(&mut self, current: u64, new: u64) -> Result<(), u64>;
    fn raise_released_through(&mut self, tick: u64);
    /// Marks the free `slot` as being opened by the bucket tagged `tag` (see above).
    fn mark_opening(&mut self, slot: usize, tag: u64);
    /// The opener's fields, after its CAS: `opened_at` (with a time threshold), `cooled_at`,
    /// then `first_seq = tag`, which clears the mark.
    fn publish(&mut self, slot: usize, tag: u64, opened_at: Option<u64>, cooled_at: u64);
    fn raise_cooled_at(&mut self, slot: usize, tick: u64);
}

/// The bit of a slot's `first_seq` that says its bucket is being opened (its fields not yet
/// published). Sequence numbers stay far below it (2^63 uses).
pub(crate) const OPENING: u64 = 1 << 63;

/// The tag of a bucket whose first use is `seq`.
fn tag_of(seq: u64) -> u64 {
    seq + 1
}

/// A slot's `first_seq` word split: its bucket's first sequence number, and whether the
/// bucket's fields are published.
fn split_first_seq(raw: u64) -> (u64, bool) {
    ((raw & !OPENING).wrapping_sub(1), raw & OPENING == 0)
}

/// The cooldown end of the bucket at `slot`, if its fields are published.
fn published_cooled_at<C: LedgerReads>(cells: &C, slot: usize) -> Option<u64> {
    let (_, published) = split_first_seq(cells.first_seq(slot));
    // Read after `first_seq`: a published number pairs with the opener's stores before it.
    published.then(|| cells.cooled_at(slot))
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
    /// Whether the newest bucket's fields are published (always true in the exact pool,
    /// which never reads its newest slot and never joins).
    newest_published: bool,
    /// The tick from which the oldest held bucket has cooled down (`u64::MAX` if none, or if
    /// its opener has not published it yet).
    head_cooled_at: u64,
    /// The full sequence number of the oldest held bucket's first use (0 if none).
    head_first: u64,
    /// Whether the oldest held bucket's fields are published (true if none is held).
    head_published: bool,
}

/// Reads the slots the decision needs, then the control word again, until the word is the
/// same on both sides: then no bucket was opened or released in between, so the fields read
/// belong to the buckets `word` describes.
fn read_view<C: LedgerReads>(cells: &C, mut word: u64, now: u64) -> View {
    let geometry = *cells.geometry();
    loop {
        let control = Control::unpack(word);
        let newest = ((control.head + control.live + geometry.slots - 1) % geometry.slots) as usize;
        let (held, head_cooled_at, head_first, head_published) = if control.live == 0 {
            (0, u64::MAX, 0, true)
        } else {
            let head = control.head as usize;
            let (head_first, published) = split_first_seq(cells.first_seq(head));
            // An unpublished bucket has not cooled down for anyone: its opener's CAS has
            // counted a use whose tick no reader knows yet.
            let cooled_at = if published {
                cells.cooled_at(head)
            } else {
                u64::MAX
            };
            (
                control.uses_since(head_first),
                cooled_at,
                head_first,
                published,
            )
        };
        let (next_seq, newest_accepts, newest_published) =
            if control.live > 0 && geometry.bucket_uses == 1 {
                // One use per bucket (the exact pool): the newest bucket is full, and the held
                // uses run from the head's first to the next. Not reading the newest slot keeps
                // the line its opener (most likely another thread) just wrote out of this call.
                (head_first.wrapping_add(held), false, true)
            } else {
                let (newest_first, published) = split_first_seq(cells.first_seq(newest));
                let newest_uses = control.uses_since(newest_first);
                // A bucket that has cooled down takes no more uses: joining it would hold its old
                // uses for another T (possible only without a time threshold, or with τ > T). One
                // holding a use more than T after `now` (a bad clock's) takes none from this call
                // either: joining would hold this call's use until that far tick too. An
                // unpublished one takes none: its opener's stores would overwrite the join's.
                let newest_cooled_at = cells.cooled_at(newest);
                let accepts = control.live > 0
                    && published
                    && newest_uses < geometry.bucket_uses
                    && newest_cooled_at > now
                    && !geometry.holds_use_far_after(newest_cooled_at, now)
                    && !geometry.time_closed(cells.opened_at(newest), now);
                (newest_first.wrapping_add(newest_uses), accepts, published)
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
                newest_published,
                head_cooled_at,
                head_first,
                head_published,
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
fn head_jumps<C: LedgerReads>(
    cells: &C,
    head: u64,
    live: u64,
    head_cooled_at: u64,
    released_through: u64,
) -> bool {
    let geometry = cells.geometry();
    if live < 2 || !geometry.holds_use_far_after(head_cooled_at, released_through) {
        return false;
    }
    let behind = ((head + 1) % geometry.slots) as usize;
    let newest = ((head + live - 1) % geometry.slots) as usize;
    // A bucket whose opener has not published it yet counts as well-timed: passing the head
    // costs its uses one more turn of the ring at worst, releasing a bad clock's head would
    // move the watermark that far.
    let earliest = published_cooled_at(cells, behind)
        .unwrap_or(0)
        .min(published_cooled_at(cells, newest).unwrap_or(0));
    geometry.holds_use_far_after(
        head_cooled_at,
        earliest.saturating_sub(geometry.cooldown_ticks),
    )
}

/// Whether a call at `now` that needs the oldest bucket's uses (every use is held) moves that
/// bucket to the back of the ring rather than release it or be refused: when the bucket holds
/// a use more than `T` after `now` (not cooled down, and far ahead), or has cooled down but
/// [jumps](head_jumps) ahead of the pool.
fn should_requeue<C: LedgerReads>(cells: &C, view: &View, now: u64, released_through: u64) -> bool {
    let geometry = cells.geometry();
    if view.control.live < 2 || view.held < geometry.total_uses || !view.head_published {
        return false;
    }
    if view.head_cooled_at > now {
        return geometry.holds_use_far_after(view.head_cooled_at, now);
    }
    !cfg!(slidelimit_loom_mutant = "pool_release_far_head")
        && head_jumps(
            cells,
            view.control.head,
            view.control.live,
            view.head_cooled_at,
            released_through,
        )
}

/// Moves the oldest bucket, unreleased, to the back of the ring: its `n` uses are numbered
/// again `L` later (the same key names, since `L = K·X`; every use is held, so the next
/// number is the head's first plus `L`) and keep its cooldown end. Nothing is freed and no
/// watermark moves; the buckets behind it come to the head. One CAS, then the new slot is
/// published like an opened bucket's: `Err(word found)` if the CAS lost. Why it is safe: the
/// pool's docs, "A bad clock".
fn requeue_head<C: LedgerCells>(cells: &mut C, view: &View, now: u64) -> Result<(), u64> {
    let geometry = *cells.geometry();
    let control = view.control;
    let head = control.head as usize;
    let behind = ((control.head + 1) % geometry.slots) as usize;
    let (behind_first, _) = split_first_seq(cells.first_seq(behind));
    let uses = behind_first.wrapping_sub(view.head_first);
    let tail = ((control.head + control.live) % geometry.slots) as usize;
    // Read before the CAS, while the head is still held (its opener published it: see
    // `should_requeue`); the CAS confirms the view they belong to.
    let opened_at = geometry.open_ticks.map(|_| cells.opened_at(head));
    // The `pool_requeue_cools_at_now` mutant deliberately gives the moved uses the caller's
    // cooldown end instead of their own, so a far-future use's key is free again long before
    // that use's tick plus T.
    let cooled_at = if cfg!(slidelimit_loom_mutant = "pool_requeue_cools_at_now") {
        geometry.cooled_at(now)
    } else {
        view.head_cooled_at
    };
    cells.mark_opening(tail, tag_of(view.next_seq));
    let next = Control {
        head: (control.head + 1) % geometry.slots,
        ..control
    }
    .after_uses(uses);
    cells.replace_control(view.word, next.pack())?;
    cells.publish(tail, tag_of(view.next_seq), opened_at, cooled_at);
    Ok(())
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
            if requeues_left > 0 && should_requeue(cells, &view, now, released_through) {
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
                if !view.newest_published {
                    // Its opener is between its CAS and its stores: a join now would be
                    // overwritten. Read again.
                    word = cells.control();
                    backoff.lost();
                    continue;
                }
                join = true;
                join_past_thresholds = true;
            } else {
                release_through = Some(view.head_cooled_at);
                next.head = (next.head + 1) % geometry.slots;
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
                cells.raise_cooled_at(view.newest, cooled_at);
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
        // The slot this call opens, if it opens one.
        let mut opening = None;
        if join {
            if !skip_raise {
                cells.raise_cooled_at(view.newest, cooled_at);
            }
        } else {
            let slot = ((next.head + next.live) % geometry.slots) as usize;
            cells.mark_opening(slot, tag_of(seq));
            opening = Some(slot);
            next.live += 1;
        }
        publish_release(cells);
        match cells.replace_control(view.word, next.after_use().pack()) {
            Ok(()) => {
                if let Some(slot) = opening {
                    let opened_at = geometry.open_ticks.map(|_| now);
                    cells.publish(slot, tag_of(seq), opened_at, cooled_at);
                }
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
        let mut head_published = view.head_published;
        // Uses of the buckets a call would move to the back of the ring (`requeue_head`):
        // still held, but they no longer stand in front of the others.
        let mut requeued_uses = 0;
        let mut requeues_left = MAX_REQUEUES_PER_CALL;
        while live > 0 {
            let requeue = requeues_left > 0
                && live >= 2
                && head_published
                && if head_cooled_at > now {
                    geometry.holds_use_far_after(head_cooled_at, now)
                } else {
                    head_jumps(cells, head, live, head_cooled_at, released_through)
                };
            if requeue {
                let behind = (head + 1) % geometry.slots;
                let (behind_first, _) = split_first_seq(cells.first_seq(behind as usize));
                let (head_first, _) = split_first_seq(cells.first_seq(head as usize));
                requeued_uses += behind_first.wrapping_sub(head_first);
                requeues_left -= 1;
            } else if head_cooled_at > now {
                break;
            }
            head = (head + 1) % geometry.slots;
            live -= 1;
            (head_cooled_at, head_published) = if live == 0 {
                (u64::MAX, true)
            } else {
                published_cooled_at(cells, head as usize).map_or((u64::MAX, false), |c| (c, true))
            };
        }
        let held = requeued_uses
            + if live == 0 {
                0
            } else {
                let (head_first, _) = split_first_seq(cells.first_seq(head as usize));
                view.control.uses_since(head_first)
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
