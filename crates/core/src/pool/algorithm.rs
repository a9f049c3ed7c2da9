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
    /// The full sequence number of the first use in the bucket at `slot`.
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
/// the word found) and always succeeds in the sequential form. Every `raise_*` keeps the
/// larger of the stored and the given value, so a writer that lost a race can never lower
/// what the winner wrote.
pub(crate) trait LedgerCells: LedgerReads {
    fn replace_control(&mut self, current: u64, new: u64) -> Result<(), u64>;
    fn raise_released_through(&mut self, tick: u64);
    fn raise_first_seq(&mut self, slot: usize, seq: u64);
    fn raise_opened_at(&mut self, slot: usize, tick: u64);
    fn raise_cooled_at(&mut self, slot: usize, tick: u64);
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
    /// The tick from which the oldest held bucket has cooled down (`u64::MAX` if none).
    head_cooled_at: u64,
}

/// Reads the slots the decision needs, then the control word again, until the word is the
/// same on both sides: then no bucket was opened or released in between, so the fields read
/// belong to the buckets `word` describes.
fn read_view<C: LedgerReads>(cells: &C, mut word: u64, now: u64) -> View {
    let geometry = *cells.geometry();
    loop {
        let control = Control::unpack(word);
        let newest = ((control.head + control.live + geometry.slots - 1) % geometry.slots) as usize;
        let (held, head_cooled_at, head_first) = if control.live == 0 {
            (0, u64::MAX, 0)
        } else {
            let head = control.head as usize;
            let head_first = cells.first_seq(head);
            (
                control.uses_since(head_first),
                cells.cooled_at(head),
                head_first,
            )
        };
        let (next_seq, newest_accepts) = if control.live > 0 && geometry.bucket_uses == 1 {
            // One use per bucket (the exact pool): the newest bucket is full, and the held
            // uses run from the head's first to the next. Not reading the newest slot keeps
            // the line its opener (most likely another thread) just wrote out of this call.
            (head_first.wrapping_add(held), false)
        } else {
            let newest_first = cells.first_seq(newest);
            let newest_uses = control.uses_since(newest_first);
            // A bucket that has cooled down takes no more uses: joining it would hold its old
            // uses for another T (possible only without a time threshold, or with τ > T).
            let accepts = control.live > 0
                && newest_uses < geometry.bucket_uses
                && cells.cooled_at(newest) > now
                && !geometry.time_closed(cells.opened_at(newest), now);
            (newest_first.wrapping_add(newest_uses), accepts)
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
                head_cooled_at,
            };
        }
        word = again;
        retry_hint();
    }
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
        if join {
            if !skip_raise {
                cells.raise_cooled_at(view.newest, cooled_at);
            }
        } else {
            let slot = ((next.head + next.live) % geometry.slots) as usize;
            cells.raise_first_seq(slot, seq);
            if geometry.open_ticks.is_some() {
                cells.raise_opened_at(slot, now);
            }
            cells.raise_cooled_at(slot, cooled_at);
            next.live += 1;
        }
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
        while live > 0 && head_cooled_at <= now {
            head = (head + 1) % geometry.slots;
            live -= 1;
            head_cooled_at = if live == 0 {
                u64::MAX
            } else {
                cells.cooled_at(head as usize)
            };
        }
        let held = if live == 0 {
            0
        } else {
            view.control.uses_since(cells.first_seq(head as usize))
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
