//! Several windows on one key, decided at once: a limit such as "10 per second and 600 per
//! hour" keeps one window of the algorithm per `(N, W)` and admits only where every window has
//! room, counting the hit in all of them.
//!
//! # Algorithm
//! Each window is the algorithm's own, so each keeps its own guarantee: an exact ring of `Nᵢ`
//! slots, or rolling buckets with their own geometry, the configured `B` clamped to the
//! window's own `Wᵢ` (buckets of `wᵢ = ceil(Wᵢ / min(B, Wᵢ))` ticks, `Bᵢ = ceil(Wᵢ / wᵢ)` of
//! them, the same lateness `L`; see `buckets`' *Geometry*). A refusal is then one window's:
//! the ring's `Nᵢ` hits within `Wᵢ`, or the buckets' `Nᵢ − n + 1` weight within their own
//! reach `Bᵢ·wᵢ + (L + 1)·wᵢ` (or a caller more than `L` of that window's buckets late).
//! `check_and_hit` *reserves* in the windows in order, narrowest first and the widest last:
//! a reservation is the window's own admission step (the ring's slot CAS; the buckets' CAS
//! on the running total, not yet recorded in a bucket). A window that refuses makes the call
//! *undo* the reservations it already holds, in reverse order, and refuse; once the widest
//! window has reserved, the call *commits* (the buckets record their weight) and is admitted.
//! - **Never over-admits any window**: every admitted hit holds a reservation in every window,
//!   made by that window's own decision, and an undo only takes back a reservation whose call
//!   is refused (see `ring::algorithm::undo` and `buckets::algorithm::undo`, which restore
//!   exactly the state without it). Each window's own argument then bounds its admitted hits.
//! - **All or nothing**: a refused call leaves nothing behind, except where a ring's undo CAS
//!   finds its slot already replaced (by another call's reservation, or a `hit`): the undo then
//!   does nothing, and the refused call's tick may stand in the slot again (the other call's
//!   own undo restores it) as a phantom hit until it expires or is replaced (loom model LY3):
//!   more refusals, never fewer.
//! - **One CAS per window**: an admission costs one reservation per window, and a refusal by
//!   window `i` costs the undos of the `i` before it. A single-window limit takes none of this
//!   path: [`Layers::One`] calls the window directly. One CAS per *admission* is not possible
//!   with the exact log's guarantee: a ring of the newest `max Nᵢ` ticks does know every
//!   narrower window's count, but two calls that read the same count of a narrower window and
//!   CAS two different expired slots both get in (the ring's pigeonhole, two admissions in one
//!   slot at least `W` apart, holds for the window the slots expire by, the widest, only), and
//!   with out-of-order ticks the `Nᵢ`-th newest by position is not the `Nᵢ`-th newest in time.
//!   A window of its own per `(Nᵢ, Wᵢ)` gives each window that argument back, at `Σ Nᵢ` slots
//!   per key instead of `max Nᵢ` (610 instead of 600 for 10 per second and 600 per hour).
//! - **Removal and limit changes** act on the widest window only: it holds every hit the
//!   others hold (every admission reserves in it, `hit` records in it), so its state is the
//!   key's state ([`WindowState`]); the narrower windows are
//!   rebuilt from it. A sweeper seals the widest window, after checking that the others are
//!   idle too; the widest reserves last, so a call that meets its seal undoes the narrower
//!   reservations and looks the key up again, and an admission that beat the seal made the
//!   seal fail. The narrower windows are never sealed and never re-sorted, which is what lets
//!   their undo trust a slot value; the widest, reserved last and never undone, re-sorts as a
//!   single window does.
//!
//! The loom models LY1-LY4 (`loom-tests/tests/layers.rs`) check these rules under every
//! interleaving, with broken twins that validate only the widest window or undo by a plain
//! store.

use std::ops::Deref;

use crate::limit::{Limit, MAX_WINDOWS};
use crate::window::{AtomicWindow, Retired, SequentialWindow, Status, WindowState, WindowStatuses};

/// One window's admission in two steps, for a window of a layered limit under a lock.
pub trait SequentialLayer: SequentialWindow {
    /// What [`SequentialLayer::undo`] and [`SequentialLayer::commit`] need.
    type Taken: Copy;
    /// Reserves `n` hits at `now` if they fit; `None` if the window refuses. `final_window`:
    /// the reservation is the decision's last (the widest window), never undone, so it may
    /// do what an undo could not survive (a ring's re-sort).
    fn reserve(&mut self, now: u64, n: u64, final_window: bool) -> Option<Self::Taken>;
    /// Completes a reservation (the call is admitted).
    fn commit(&mut self, taken: Self::Taken);
    /// Takes back a reservation (the call is refused).
    fn undo(&mut self, taken: Self::Taken);
}

/// [`SequentialLayer`] for a window shared between threads.
pub trait AtomicLayer: AtomicWindow {
    /// What [`AtomicLayer::undo`] and [`AtomicLayer::commit`] need.
    type Taken: Copy;
    /// Reserves `n` hits at `now` if they fit; `Ok(None)` if the window refuses. Unless
    /// `final_window` (the decision's last reservation, the widest window's, never undone),
    /// it leaves the window as an undo needs it (a ring is not re-sorted: see the module docs).
    ///
    /// # Errors
    /// [`Retired`]: the window is sealed; nothing was reserved.
    fn reserve(&self, now: u64, n: u64, final_window: bool)
        -> Result<Option<Self::Taken>, Retired>;
    /// Completes a reservation (the call is admitted).
    fn commit(&self, taken: Self::Taken);
    /// Takes back a reservation (the call is refused).
    fn undo(&self, taken: Self::Taken);
    /// The first tick from which the window answers every call as an empty one would.
    fn fresh_from(&self) -> u64;
}

/// The windows of one key: a single window, or several.
#[derive(Debug)]
pub enum Layers<W> {
    /// A limit of one window: every operation goes straight to it.
    One(W),
    /// A limit of several windows, narrowest first; the widest, last, is the key's state and
    /// the one a sweeper seals. One allocation, read through one pointer.
    Many(Box<[W]>),
}

impl<W> Layers<W> {
    /// One window per window of `limit`, each built by `build` from its single-window limit.
    #[inline]
    pub(crate) fn build(limit: Limit, mut build: impl FnMut(Limit) -> W) -> Self {
        if !limit.is_layered() {
            return Self::One(build(limit));
        }
        Self::Many(limit.windows().map(build).collect())
    }

    /// The widest window (the only one, for a single-window limit).
    #[inline]
    #[must_use]
    pub fn widest(&self) -> &W {
        match self {
            Self::One(window) => window,
            Self::Many(many) => &many[many.len() - 1],
        }
    }

    /// Every window, narrowest first.
    pub fn windows(&self) -> &[W] {
        match self {
            Self::One(window) => std::slice::from_ref(window),
            Self::Many(many) => many,
        }
    }
}

/// The widest window's own methods (a ring's slots, say) stay at hand.
impl<W> Deref for Layers<W> {
    type Target = W;
    fn deref(&self) -> &W {
        self.widest()
    }
}

/// The limit whose windows are `windows` (each a valid single window, in the order a valid
/// limit lists them, so they join again).
fn limit_of(mut windows: impl Iterator<Item = Limit>) -> Limit {
    let first = windows.next().expect("a layered limit has windows");
    windows.fold(first, |limit, window| {
        limit
            .and(window)
            .expect("the windows of a valid limit join again")
    })
}

/// One window as the layered decision uses it: the sequential form through `&mut`, the
/// atomic form through `&`.
trait LayerHandle {
    type Taken: Copy;
    fn reserve(
        &mut self,
        now: u64,
        n: u64,
        final_window: bool,
    ) -> Result<Option<Self::Taken>, Retired>;
    /// Only the widest-only mutant asks without reserving.
    fn ask(&mut self, now: u64, n: u64) -> Result<bool, Retired>;
    fn commit(&mut self, taken: Self::Taken);
    fn undo(&mut self, taken: Self::Taken);
}

impl<W: SequentialLayer> LayerHandle for &mut W {
    type Taken = W::Taken;
    #[inline]
    fn reserve(
        &mut self,
        now: u64,
        n: u64,
        final_window: bool,
    ) -> Result<Option<W::Taken>, Retired> {
        Ok(SequentialLayer::reserve(&mut **self, now, n, final_window))
    }
    fn ask(&mut self, now: u64, n: u64) -> Result<bool, Retired> {
        Ok(SequentialWindow::allowed_n(&**self, now, n))
    }
    #[inline]
    fn commit(&mut self, taken: W::Taken) {
        SequentialLayer::commit(&mut **self, taken);
    }
    fn undo(&mut self, taken: W::Taken) {
        SequentialLayer::undo(&mut **self, taken);
    }
}

impl<W: AtomicLayer> LayerHandle for &W {
    type Taken = W::Taken;
    #[inline]
    fn reserve(
        &mut self,
        now: u64,
        n: u64,
        final_window: bool,
    ) -> Result<Option<W::Taken>, Retired> {
        AtomicLayer::reserve(*self, now, n, final_window)
    }
    fn ask(&mut self, now: u64, n: u64) -> Result<bool, Retired> {
        AtomicWindow::allowed_n(*self, now, n)
    }
    #[inline]
    fn commit(&mut self, taken: W::Taken) {
        AtomicLayer::commit(*self, taken);
    }
    fn undo(&mut self, taken: W::Taken) {
        AtomicLayer::undo(*self, taken);
    }
}

/// The layered decision, written once for both forms: reserve in the first window, then
/// decide the rest the same way; commit once they admit, undo if they refuse (or meet a
/// seal). The windows come narrowest first, so the widest reserves last and the undos run
/// in reverse order.
fn all_or_nothing<H: LayerHandle>(
    mut windows: impl ExactSizeIterator<Item = H>,
    now: u64,
    n: u64,
) -> Result<bool, Retired> {
    let Some(mut window) = windows.next() else {
        return Ok(true);
    };
    if cfg!(slidelimit_loom_mutant = "layers_widest_only") && windows.len() > 0 {
        // Deliberately broken: the narrower windows are only asked, never reserved in, so
        // two calls can both see the last room of a narrower window.
        return if window.ask(now, n)? {
            all_or_nothing(windows, now, n)
        } else {
            Ok(false)
        };
    }
    let Some(taken) = window.reserve(now, n, windows.len() == 0)? else {
        return Ok(false);
    };
    let rest = all_or_nothing(windows, now, n);
    if rest == Ok(true) {
        window.commit(taken);
    } else {
        window.undo(taken);
    }
    rest
}

/// The layered decision of the sequential form, out of line so that a single window's call
/// stays small enough to inline into the limiters.
#[inline(never)]
fn check_and_hit_many<W: SequentialLayer>(many: &mut [W], now: u64, n: u64) -> bool {
    match all_or_nothing(many.iter_mut(), now, n) {
        Ok(admitted) => admitted,
        Err(Retired) => unreachable!("a sequential window is never sealed"),
    }
}

/// The layered decision of the atomic form, out of line (see [`check_and_hit_many`]).
#[inline(never)]
fn check_and_hit_many_atomic<W: AtomicLayer>(
    many: &[W],
    now: u64,
    n: u64,
) -> Result<bool, Retired> {
    all_or_nothing(many.iter(), now, n)
}

impl<W: SequentialLayer> SequentialWindow for Layers<W> {
    #[inline]
    fn hit_n(&mut self, now: u64, n: u64) {
        match self {
            Self::One(window) => window.hit_n(now, n),
            Self::Many(many) => {
                for window in many.iter_mut() {
                    window.hit_n(now, n);
                }
            }
        }
    }

    #[inline]
    fn check_and_hit_n(&mut self, now: u64, n: u64) -> bool {
        match self {
            Self::One(window) => window.check_and_hit_n(now, n),
            Self::Many(many) => check_and_hit_many(many, now, n),
        }
    }

    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> bool {
        match self {
            Self::One(window) => window.allowed_n(now, n),
            Self::Many(many) => many.iter().all(|window| window.allowed_n(now, n)),
        }
    }

    fn status_n(&self, now: u64, n: u64) -> Status {
        match self {
            Self::One(window) => window.status_n(now, n),
            Self::Many(_) => self.window_statuses(now, n).tightest(),
        }
    }

    fn window_statuses(&self, now: u64, n: u64) -> WindowStatuses {
        WindowStatuses::from_windows(self.windows().iter().map(|window| window.status_n(now, n)))
    }

    fn limit(&self) -> Limit {
        match self {
            Self::One(window) => window.limit(),
            Self::Many(many) => limit_of(many.iter().map(SequentialWindow::limit)),
        }
    }

    fn export(&self) -> WindowState {
        self.widest().export()
    }

    #[inline]
    fn idle_from(&self) -> u64 {
        match self {
            Self::One(window) => window.idle_from(),
            Self::Many(many) => many
                .iter()
                .map(SequentialWindow::idle_from)
                .max()
                .unwrap_or(0),
        }
    }

    #[inline]
    fn is_idle_by(&self, horizon: u64) -> bool {
        match self {
            Self::One(window) => window.is_idle_by(horizon),
            Self::Many(many) => many.iter().all(|window| window.is_idle_by(horizon)),
        }
    }
}

impl<W: AtomicLayer> AtomicWindow for Layers<W> {
    type Outgrown = W::Outgrown;

    #[inline]
    fn hit_n(&self, now: u64, n: u64) -> Result<(), Retired> {
        let Self::Many(many) = self else {
            return self.widest().hit_n(now, n);
        };
        // The widest last: a `hit` that meets its seal has recorded in narrower windows of a
        // state being removed or replaced, which no one reads again (or which a restored
        // seal keeps, counting the hit twice: more refusals, never fewer).
        for window in many.iter() {
            window.hit_n(now, n)?;
        }
        Ok(())
    }

    #[inline]
    fn check_and_hit_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        match self {
            Self::One(window) => window.check_and_hit_n(now, n),
            Self::Many(many) => check_and_hit_many_atomic(many, now, n),
        }
    }

    #[inline]
    fn allowed_n(&self, now: u64, n: u64) -> Result<bool, Retired> {
        let Self::Many(many) = self else {
            return self.widest().allowed_n(now, n);
        };
        for window in many.iter() {
            if !window.allowed_n(now, n)? {
                // The widest is asked too, so a sealed key says so.
                return self.widest().allowed_n(now, n).map(|_| false);
            }
        }
        Ok(true)
    }

    fn status_n(&self, now: u64, n: u64) -> Result<Status, Retired> {
        match self {
            Self::One(window) => window.status_n(now, n),
            Self::Many(_) => Ok(self.window_statuses(now, n)?.tightest()),
        }
    }

    fn window_statuses(&self, now: u64, n: u64) -> Result<WindowStatuses, Retired> {
        let mut statuses = [None; MAX_WINDOWS];
        for (slot, window) in statuses.iter_mut().zip(self.windows()) {
            *slot = Some(window.status_n(now, n)?);
        }
        Ok(WindowStatuses::from_windows(statuses.into_iter().flatten()))
    }

    fn limit(&self) -> Limit {
        match self {
            Self::One(window) => window.limit(),
            Self::Many(many) => limit_of(many.iter().map(AtomicWindow::limit)),
        }
    }

    fn export(&self) -> Result<WindowState, Retired> {
        self.widest().export()
    }

    fn seal_for_swap(&self) -> Option<WindowState> {
        self.widest().seal_for_swap()
    }

    fn needs_slots(&self) -> bool {
        // A layered limit's windows are built full.
        matches!(self, Self::One(window) if window.needs_slots())
    }

    fn seal_for_growth(&self) -> Option<W::Outgrown> {
        match self {
            Self::One(window) => window.seal_for_growth(),
            Self::Many(_) => None,
        }
    }

    fn grown(&self, outgrown: W::Outgrown) -> Option<Self> {
        match self {
            Self::One(window) => window.grown(outgrown).map(Self::One),
            Self::Many(_) => None,
        }
    }

    fn fresh_from_hint(&self) -> u64 {
        self.windows()
            .iter()
            .map(AtomicLayer::fresh_from)
            .max()
            .unwrap_or(0)
    }

    #[inline]
    fn try_seal(&self, horizon: u64) -> Option<u64> {
        let Self::Many(many) = self else {
            return self.widest().try_seal(horizon);
        };
        // The narrower windows first: a hit they hold that is still live for the horizon
        // keeps the key. One that lands after this look reserves in the widest too, and
        // either beats the seal (which then fails) or meets it and is undone.
        let (widest, narrower) = many.split_last().expect("a layered limit has windows");
        let mut fresh_from = 0;
        for window in narrower {
            let window_fresh_from = window.fresh_from();
            if window_fresh_from > horizon {
                return None;
            }
            fresh_from = fresh_from.max(window_fresh_from);
        }
        widest
            .try_seal(horizon)
            .map(|widest_fresh_from| widest_fresh_from.max(fresh_from))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::{all_or_nothing, LayerHandle};
    use crate::window::Retired;

    /// A window that answers as told and logs what the decision did to it.
    struct Fake<'a> {
        index: u8,
        answer: Result<bool, Retired>,
        log: &'a RefCell<Vec<String>>,
    }

    impl LayerHandle for Fake<'_> {
        type Taken = u8;
        fn reserve(
            &mut self,
            _now: u64,
            _n: u64,
            _final_window: bool,
        ) -> Result<Option<u8>, Retired> {
            self.log
                .borrow_mut()
                .push(format!("reserve {}", self.index));
            self.answer.map(|admits| admits.then_some(self.index))
        }
        fn ask(&mut self, _now: u64, _n: u64) -> Result<bool, Retired> {
            self.answer
        }
        fn commit(&mut self, taken: u8) {
            assert_eq!(taken, self.index);
            self.log.borrow_mut().push(format!("commit {taken}"));
        }
        fn undo(&mut self, taken: u8) {
            assert_eq!(taken, self.index);
            self.log.borrow_mut().push(format!("undo {taken}"));
        }
    }

    fn run(answers: &[Result<bool, Retired>]) -> (Result<bool, Retired>, Vec<String>) {
        let log = RefCell::new(Vec::new());
        let windows: Vec<Fake<'_>> = answers
            .iter()
            .enumerate()
            .map(|(index, &answer)| Fake {
                index: index as u8,
                answer,
                log: &log,
            })
            .collect();
        let answer = all_or_nothing(windows.into_iter(), 0, 1);
        (answer, log.into_inner())
    }

    #[test]
    fn a_refusal_undoes_what_was_reserved_in_reverse_order() {
        let (answer, log) = run(&[Ok(true), Ok(true), Ok(false)]);
        assert_eq!(answer, Ok(false));
        assert_eq!(
            log,
            ["reserve 0", "reserve 1", "reserve 2", "undo 1", "undo 0"]
        );
    }

    #[test]
    fn an_admission_commits_every_window() {
        let (answer, log) = run(&[Ok(true), Ok(true)]);
        assert_eq!(answer, Ok(true));
        assert_eq!(log, ["reserve 0", "reserve 1", "commit 1", "commit 0"]);
    }

    #[test]
    fn a_seal_on_the_widest_undoes_the_others() {
        let (answer, log) = run(&[Ok(true), Err(Retired)]);
        assert_eq!(answer, Err(Retired));
        assert_eq!(log, ["reserve 0", "reserve 1", "undo 0"]);
    }
}

#[cfg(all(test, not(slidelimit_loom)))]
mod size {
    use super::Layers;
    use crate::window::buckets::AtomicBuckets;
    use crate::window::ring::AtomicRing;

    #[test]
    fn a_single_window_key_pays_no_space_for_layers() {
        // The enum keeps `Many` in the niche of the window's own pointer: a key of a
        // single-window limit is as large as before layered limits existed.
        assert_eq!(
            std::mem::size_of::<Layers<AtomicRing>>(),
            std::mem::size_of::<AtomicRing>()
        );
        assert_eq!(
            std::mem::size_of::<Layers<AtomicBuckets>>(),
            std::mem::size_of::<AtomicBuckets>()
        );
    }
}
