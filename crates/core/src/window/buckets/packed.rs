//! The two packed 64-bit words of the rolling-bucket window, and how a truncated epoch is read
//! back as a full one.
//!
//! # Bit layout of the head word
//! | bits   | field        | meaning                                                          |
//! |--------|--------------|------------------------------------------------------------------|
//! | 63..32 | `head_epoch` | the newest epoch the window has advanced to, modulo 2^32           |
//! | 31     | `SEALED`     | a sweeper has sealed the window for removal (lock-free form only) |
//! | 30..0  | `total`      | weight in the retained buckets + reservations not yet recorded   |
//!
//! # Bit layout of a bucket word
//! | bits   | field       | meaning                                                    |
//! |--------|-------------|------------------------------------------------------------|
//! | 63..32 | `tag_epoch` | the epoch whose weight the bucket holds, modulo 2^32         |
//! | 31     | (zero)      | a count is part of the total, so it never reaches this bit   |
//! | 30..0  | `count`     | that weight                                                |
//!
//! # Why 32 | 32
//! `total` must hold every weight a window can retain: `check_and_hit` never lets it pass
//! `max_requests` (at most 2^24, [`crate::MAX_REQUESTS`]), and `hit` saturates it at
//! [`MAX_TOTAL_WEIGHT`] = 2^31 − 1, 128 times the largest limit. A bucket's count is part of
//! the total, so it never carries into bit 31 or the tag either.
//!
//! # Why the seal is in the head word
//! Every reservation and every head advance is a CAS on the head word, so a sweeper that
//! sets `SEALED` there with a CAS orders itself against all of them on one word: a writer's
//! CAS either precedes the seal (and the sweeper's re-check after sealing sees its weight) or
//! fails on it. Subtractions keep the bit (they rewrite the total alone).
//!
//! Epochs (`tick / bucket_ticks`) are full `u64`s and do not fit in 32 bits, so the words keep
//! them modulo 2^32 and the window keeps one full-width epoch beside them, `cleaned`. Every
//! truncated epoch in the words lies in `[cleaned − (NB − 1), cleaned − (NB − 1) + 2^32)`
//! (`NB` physical buckets), so [`decode`] recovers it exactly; the window keeps that true by
//! never moving its head more than [`advance_reach`] epochs past `cleaned` in one step. The
//! algorithm in the parent module says how far jumps are made in bounded steps.

/// Bits below the epoch (seal bit and `total`, or zero bit and `count`).
const LOW_BITS: u32 = 32;
/// Mask of the bits below the epoch.
const LOW_MASK: u64 = (1 << LOW_BITS) - 1;
/// The head word's seal bit.
pub(super) const SEALED: u64 = 1 << (LOW_BITS - 1);
/// Mask of the low field (`total` or `count`).
const COUNT_MASK: u64 = SEALED - 1;
/// Epochs are kept modulo this.
pub(super) const EPOCH_MODULUS: u64 = 1 << (64 - LOW_BITS);

/// The most weight a window retains at once: `hit` saturates the running total here.
pub const MAX_TOTAL_WEIGHT: u64 = COUNT_MASK;

/// A word holding `epoch` (truncated) in the high half and `low` in the low half.
#[inline]
pub(super) const fn pack(epoch: u64, low: u64) -> u64 {
    debug_assert!(low <= COUNT_MASK);
    (epoch << LOW_BITS) | low
}

/// The low field: `total` of the head word, `count` of a bucket.
#[inline]
pub(super) const fn low(word: u64) -> u64 {
    word & COUNT_MASK
}

/// Whether the head word is sealed.
#[inline]
pub(super) const fn is_sealed(word: u64) -> bool {
    word & SEALED != 0
}

/// `word` with its low field replaced by `low`, its epoch and seal bits unchanged.
#[inline]
pub(super) const fn with_low(word: u64, low: u64) -> u64 {
    debug_assert!(low <= COUNT_MASK);
    (word & !COUNT_MASK) | low
}

/// How far past `cleaned` the head may be moved in one step, so that every epoch in the words
/// stays inside the window [`decode`] reads: `[cleaned − (NB − 1), cleaned + reach)` has
/// exactly 2^32 epochs.
#[inline]
pub(super) const fn advance_reach(physical_buckets: u64) -> u64 {
    EPOCH_MODULUS - (physical_buckets - 1)
}

/// The full epoch whose truncation `word` holds, given the full `cleaned` epoch it was read
/// with: the one value congruent to it modulo 2^32 in
/// `[cleaned − (NB − 1), cleaned − (NB − 1) + 2^32)`.
#[inline]
pub(super) const fn decode(word: u64, cleaned: u64, physical_buckets: u64) -> u64 {
    let base = cleaned.saturating_sub(physical_buckets - 1);
    let offset = (word >> LOW_BITS).wrapping_sub(base) & LOW_MASK;
    // A sum past u64::MAX would stand for an epoch no tick has: saturate, never wrap.
    base.saturating_add(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_stay_apart() {
        let word = pack(0x1_2345_6789, MAX_TOTAL_WEIGHT);
        assert_eq!(low(word), MAX_TOTAL_WEIGHT);
        assert_eq!(word >> 32, 0x2345_6789, "the epoch is kept modulo 2^32");
        let word = with_low(word, 7);
        assert_eq!((word >> 32, low(word)), (0x2345_6789, 7));
        assert_eq!(pack(u64::MAX, 0) >> 32, u64::from(u32::MAX));
    }

    #[test]
    fn the_seal_bit_stays_out_of_total_and_epoch() {
        let word = pack(9, MAX_TOTAL_WEIGHT) | SEALED;
        assert!(is_sealed(word));
        assert_eq!(low(word), MAX_TOTAL_WEIGHT);
        assert_eq!(decode(word, 9, 4), 9);
        let word = with_low(word, 3);
        assert!(is_sealed(word), "rewriting the total keeps the seal");
        assert_eq!((low(word), decode(word, 9, 4)), (3, 9));
        assert!(!is_sealed(pack(u64::MAX, MAX_TOTAL_WEIGHT)));
    }

    #[test]
    fn a_full_total_never_carries_into_the_epoch() {
        let word = pack(5, MAX_TOTAL_WEIGHT - 3);
        let word = with_low(word, low(word) + 3);
        assert_eq!(decode(word, 5, 4), 5);
        assert_eq!(low(word), MAX_TOTAL_WEIGHT);
    }

    #[test]
    fn decode_recovers_every_epoch_of_its_range() {
        let nb = 4;
        for cleaned in [
            0,
            1,
            2,
            3,
            10,
            EPOCH_MODULUS - 2,
            EPOCH_MODULUS + 7,
            5 << 40,
        ] {
            let base = cleaned.saturating_sub(nb - 1);
            let top = cleaned + advance_reach(nb) - 1;
            if cleaned >= nb - 1 {
                assert_eq!(
                    top - base,
                    EPOCH_MODULUS - 1,
                    "the range is exactly 2^32 wide"
                );
            }
            for epoch in [base, base + 1, cleaned, cleaned + 1, top - 1, top] {
                assert_eq!(
                    decode(pack(epoch, 3), cleaned, nb),
                    epoch,
                    "cleaned {cleaned}"
                );
            }
        }
    }

    #[test]
    fn decode_near_the_top_of_u64_saturates() {
        let cleaned = u64::MAX - 2;
        let epoch = u64::MAX - 1;
        assert_eq!(decode(pack(epoch, 0), cleaned, 3), epoch);
        // An epoch that would lie past u64::MAX cannot be stored; it reads as u64::MAX.
        assert_eq!(decode(pack(5, 0), cleaned, 3), u64::MAX);
    }
}
