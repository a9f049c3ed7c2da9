//! The pool's control word: every decision of a key pool is one CAS on it.
//!
//! | bits    | field  | meaning                                                              |
//! |---------|--------|----------------------------------------------------------------------|
//! | 0..23   | `seq`  | uses handed out so far, modulo 2^23                                  |
//! | 23      | `far`  | the newest bucket was opened by a far-ahead call (see `algorithm.rs`) |
//! | 24..44  | `head` | ring slot of the oldest bucket still held                            |
//! | 44..64  | `live` | buckets held (slots `head .. head + live`, modulo the ring's size)   |
//!
//! `seq` is modular: a slot keeps the full 64-bit sequence number of its bucket's first use,
//! and `seq - first` (mod 2^23) is exact because at most `L < 2^23` uses are held at once.
//! A word repeats only after 2^23 uses with the same head and count, so a CAS from a stale
//! word cannot succeed by accident.

/// `seq` counts modulo this.
pub(crate) const SEQ_MODULUS: u64 = 1 << 23;
/// `head` and `live` are below this.
pub(crate) const SLOT_MODULUS: u64 = 1 << 20;

const SEQ_MASK: u64 = SEQ_MODULUS - 1;
const FAR_BIT: u64 = SEQ_MODULUS;
const SLOT_MASK: u64 = SLOT_MODULUS - 1;
const HEAD_SHIFT: u32 = 24;
const LIVE_SHIFT: u32 = 44;

/// The unpacked control word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Control {
    /// Uses handed out, modulo 2^23.
    pub(crate) seq: u64,
    /// Whether the newest bucket was opened by a far-ahead call: its cooldown end is in its
    /// slot's far word, and the next call to change this word flags the slot.
    pub(crate) far: bool,
    /// Slot of the oldest held bucket.
    pub(crate) head: u64,
    /// Buckets held.
    pub(crate) live: u64,
}

impl Control {
    /// The state of a new pool: nothing handed out, no bucket.
    pub(crate) const EMPTY: Self = Self {
        seq: 0,
        far: false,
        head: 0,
        live: 0,
    };

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.seq <= SEQ_MASK && self.head <= SLOT_MASK && self.live <= SLOT_MASK);
        self.seq
            | if self.far { FAR_BIT } else { 0 }
            | (self.head << HEAD_SHIFT)
            | (self.live << LIVE_SHIFT)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            seq: word & SEQ_MASK,
            far: word & FAR_BIT != 0,
            head: (word >> HEAD_SHIFT) & SLOT_MASK,
            live: word >> LIVE_SHIFT,
        }
    }

    /// Uses handed out since the use whose full sequence number is `first`.
    pub(crate) fn uses_since(self, first: u64) -> u64 {
        self.seq.wrapping_sub(first) & SEQ_MASK
    }

    /// This word with one more use handed out.
    pub(crate) fn after_use(self) -> Self {
        self.after_uses(1)
    }

    /// This word with `uses` more uses numbered (`uses` at most `L < 2^23`).
    pub(crate) fn after_uses(self, uses: u64) -> Self {
        Self {
            seq: self.seq.wrapping_add(uses) & SEQ_MASK,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_their_limits() {
        for control in [
            Control::EMPTY,
            Control {
                seq: SEQ_MASK,
                far: true,
                head: SLOT_MASK,
                live: SLOT_MASK,
            },
            Control {
                seq: 5,
                far: false,
                head: 0,
                live: SLOT_MASK,
            },
        ] {
            assert_eq!(Control::unpack(control.pack()), control);
        }
    }

    #[test]
    fn seq_wraps_and_differences_stay_exact() {
        let control = Control {
            seq: SEQ_MASK,
            ..Control::EMPTY
        }
        .after_use();
        assert_eq!(control.seq, 0);
        assert_eq!(control.uses_since(SEQ_MODULUS * 7 - 3), 3);
    }
}
