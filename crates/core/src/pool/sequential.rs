//! The key-pool ledger in plain integers, for use under a lock (the `Mutex` sibling).

use super::algorithm::{
    raised_within_bucket, status, take, take_witnessed, LedgerCells, LedgerReads,
};
use super::control::Control;
use super::geometry::PoolGeometry;
use super::{PoolStatus, Refusal, RefusalWitness, UseLedger};
use crate::keyed::sequential::TableLock;

/// One bucket slot: the atomic ledger's five words (see `pool/atomic.rs`).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    first_use: u64,
    cooled: u64,
    opened: u64,
    far: (u64, u64),
    far_opened: (u64, u64),
}

/// Raises `word` within the bucket tagged `tag` to `tick` (see [`LedgerCells`]).
fn raise_within_bucket(word: &mut (u64, u64), tag: u64, tick: u64) {
    if let Some(raised) = raised_within_bucket(*word, tag, tick) {
        *word = raised;
    }
}

/// The pool's buckets in plain integers; not synchronised (a [`TableLock`] guards it in
/// [`LockedLedger`]).
#[derive(Clone, Debug)]
pub struct SequentialLedger {
    geometry: PoolGeometry,
    control: u64,
    released_through: u64,
    slots: Box<[Slot]>,
}

impl SequentialLedger {
    /// An empty ledger: every use free.
    #[must_use]
    pub fn new(geometry: PoolGeometry) -> Self {
        Self {
            geometry,
            control: Control::EMPTY.pack(),
            released_through: 0,
            slots: vec![Slot::default(); geometry.slots as usize].into_boxed_slice(),
        }
    }

    /// Hands out one use at `now`: its sequence number, or why not. `now` is trusted (see
    /// [`KeyPool::take`](crate::pool::KeyPool::take); for stamps from untrusted clocks,
    /// [`KeyPool::take_stamped`](crate::pool::KeyPool::take_stamped)).
    ///
    /// # Errors
    /// The [`Refusal`] that applies.
    pub fn take(&mut self, now: u64) -> Result<u64, Refusal> {
        take(self, now)
    }

    /// What a call at `now` would get, without taking anything.
    #[must_use]
    pub fn status(&self, now: u64) -> PoolStatus {
        status(self, now)
    }
}

impl LedgerReads for SequentialLedger {
    fn released_through(&self) -> u64 {
        self.released_through
    }
    fn geometry(&self) -> &PoolGeometry {
        &self.geometry
    }
    fn control(&self) -> u64 {
        self.control
    }
    fn first_use_word(&self, slot: usize) -> u64 {
        self.slots[slot].first_use
    }
    fn cooled_word(&self, slot: usize) -> u64 {
        self.slots[slot].cooled
    }
    fn far_word(&self, slot: usize) -> (u64, u64) {
        self.slots[slot].far
    }
    fn opened_word(&self, slot: usize) -> u64 {
        self.slots[slot].opened
    }
    fn far_opened_word(&self, slot: usize) -> (u64, u64) {
        self.slots[slot].far_opened
    }
}

impl LedgerCells for SequentialLedger {
    fn raise_released_through(&mut self, tick: u64) {
        self.released_through = self.released_through.max(tick);
    }
    fn replace_control(&mut self, current: u64, new: u64) -> Result<(), u64> {
        debug_assert_eq!(self.control, current);
        self.control = new;
        Ok(())
    }
    fn raise_first_use_word(&mut self, slot: usize, word: u64) {
        let field = &mut self.slots[slot].first_use;
        *field = (*field).max(word);
    }
    fn raise_cooled_word(&mut self, slot: usize, tick: u64) {
        let field = &mut self.slots[slot].cooled;
        *field = (*field).max(tick);
    }
    fn raise_far_word(&mut self, slot: usize, tag: u64, tick: u64) {
        raise_within_bucket(&mut self.slots[slot].far, tag, tick);
    }
    fn raise_opened_word(&mut self, slot: usize, tick: u64) {
        let field = &mut self.slots[slot].opened;
        *field = (*field).max(tick);
    }
    fn raise_far_opened_word(&mut self, slot: usize, tag: u64, tick: u64) {
        raise_within_bucket(&mut self.slots[slot].far_opened, tag, tick);
    }
}

/// The sequential ledger behind a lock `L` (`slidelimit_mutex::MutexKeyPool` uses a global
/// `Mutex`): the same algorithm as [`super::AtomicLedger`], one call at a time.
pub struct LockedLedger<L> {
    state: L,
    geometry: PoolGeometry,
}

impl<L: TableLock<SequentialLedger>> UseLedger for LockedLedger<L> {
    fn new(geometry: PoolGeometry) -> Self {
        Self {
            state: L::new(SequentialLedger::new(geometry)),
            geometry,
        }
    }
    fn name(&self) -> &'static str {
        L::NAME
    }
    fn geometry(&self) -> &PoolGeometry {
        &self.geometry
    }
    fn take(&self, now: u64) -> Result<u64, Refusal> {
        self.state.write(|ledger| ledger.take(now))
    }
    fn take_witnessed(&self, now: u64) -> Result<u64, RefusalWitness> {
        self.state.write(|ledger| take_witnessed(ledger, now))
    }
    fn status(&self, now: u64) -> PoolStatus {
        self.state.read(|ledger| ledger.status(now))
    }
    fn ledger_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.geometry.slots as usize * std::mem::size_of::<Slot>()
    }
}
