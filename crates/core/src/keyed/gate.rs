//! The per-entry gate: lets a sweeper remove an entry without ever losing a concurrent hit,
//! and without any lock shared across keys.
//!
//! # Bit layout of the gate word
//! | bits  | field     | meaning                                                    |
//! |-------|-----------|------------------------------------------------------------|
//! | 63    | `RETIRED` | a sweeper has claimed the entry; nobody may touch its state |
//! | 0..63 | pins      | callers currently operating on the entry's state           |
//!
//! A caller pins with one `fetch_add`; if the word it got back has `RETIRED`, it unpins and
//! looks the key up again (the sweeper is about to unlink the entry). A sweeper retires with a
//! CAS from exactly 0 (no pins, not retired), re-checks that the state is idle, and either
//! unlinks the entry or un-retires it with `fetch_and` (never a store: a caller may have
//! pinned and bounced in between, and a store would erase its count).
//!
//! # Atomic orderings
//! Every handshake is a read-modify-write on this one word. Pin is `Acquire` and unpin
//! `Release`, so the retire CAS (`AcqRel`) happens-after every completed operation and the
//! sweeper's idle re-check sees all their writes; a pin after the retire reads `RETIRED`.

use crate::sync::{AtomicU64, Ordering};

const RETIRED: u64 = 1 << 63;

/// The gate word of one entry.
#[derive(Debug)]
pub struct Gate {
    word: AtomicU64,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// An open gate: not retired, nobody pinned.
    #[must_use]
    pub fn new() -> Self {
        Self {
            word: AtomicU64::new(0),
        }
    }

    /// Pins the entry; false if it is retired (the caller must look the key up again).
    #[inline]
    #[must_use]
    pub fn pin(&self) -> bool {
        // Acquire: the state accesses that follow cannot move above the pin, and pair with
        // the un-retire's Release.
        let before = self.word.fetch_add(1, Ordering::Acquire);
        if before & RETIRED != 0 {
            // Relaxed: nothing was touched under this pin, so there is nothing to publish.
            self.word.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Unpins after a successful [`Gate::pin`].
    #[inline]
    pub fn unpin(&self) {
        // Release: publishes this caller's writes to the state to the sweeper's retire CAS.
        self.word.fetch_sub(1, Ordering::Release);
    }

    /// Claims the entry for removal if nobody has it pinned and nobody has claimed it.
    #[must_use]
    pub fn try_retire(&self) -> bool {
        if cfg!(slidelimit_loom_mutant = "removal_without_gate") {
            // Deliberately broken for the loom negative control: retire without looking.
            return true;
        }
        // Success AcqRel: Acquire pairs with every unpin's Release, so the re-check after
        // this sees all completed hits; Release orders the watermark raise before it.
        // Failure Relaxed: a pinned or retired entry is simply skipped.
        self.word
            .compare_exchange(0, RETIRED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Gives a retired entry back: a hit slipped in before the retire.
    pub fn unretire(&self) {
        if cfg!(slidelimit_loom_mutant = "unretire_with_store") {
            // Deliberately broken for the loom negative control: a store erases bounced pins.
            // Release: same as below; the mutant is in the store, not the ordering.
            self.word.store(0, Ordering::Release);
            return;
        }
        // Release: pairs with the next pin's Acquire. An RMW, so pins that bounced off the
        // RETIRED bit meanwhile keep their counts.
        self.word.fetch_and(!RETIRED, Ordering::Release);
    }

    /// The raw gate word, for quiescent checks in tests and models (0 when idle and open).
    #[must_use]
    pub fn word(&self) -> u64 {
        // Acquire: a quiescent reader sees the final unpins.
        self.word.load(Ordering::Acquire)
    }
}
