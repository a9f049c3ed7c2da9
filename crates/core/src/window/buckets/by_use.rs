//! The bucket words of a rolling-bucket window under a lock, stored by use: while every word is
//! what the window's creation made it, except the count of its head's bucket, the words are
//! computed from three numbers in the window's header, and the array is allocated only when
//! another word changes.
//!
//! A window created at `now` starts with its head at `now`'s epoch and every bucket tagged
//! with the epoch it stands for, counts zero ([`super::state::empty_bucket`]); its first
//! calls at that epoch add to the head's bucket alone. Under key churn most keys live and go
//! in that state (per-IP traffic: a client seen once), and the array built at creation was an
//! allocation, a pass over every bucket and a free per key. The logical words are unchanged:
//! only where they live differs. Nothing shrinks back: an array once allocated stays until
//! the key is removed.
//!
//! The price is 16 bytes in every such window's header (the three numbers), allocated array
//! or not; a window hit once saves its array (`NB` words) and the allocator's header.
//!
//! Not used by the lock-free form, whose words other threads CAS: a word moving from the
//! header to the array would need a handshake of its own.

use super::packed::{low, pack};
use super::state::empty_bucket;

/// The `NB` bucket words of a window (see the module docs); `NB` is kept by the window.
#[derive(Clone, Debug)]
pub(super) struct BucketsByUse {
    /// Every word, once allocated; empty before (an empty boxed slice allocates nothing).
    all: Box<[u64]>,
    /// Before the array is allocated: the epoch the window was created at, which fixes every
    /// word but the count of its bucket.
    head: u64,
    /// `head`'s slot, `head % NB` (below 65,536), kept so that a read divides nothing.
    head_slot: u32,
    /// The count in `head`'s bucket (a count is below 2^31).
    head_count: u32,
}

impl BucketsByUse {
    /// The words of a window created with its head at `head` (slot `head_slot`): every
    /// bucket tagged with the epoch it stands for, counts zero. Allocates nothing.
    pub(super) fn fresh(head: u64, head_slot: usize) -> Self {
        // A slot is below the physical bucket count, at most 65,536 (MAX_PHYSICAL_BUCKETS).
        debug_assert!(head_slot < 1 << 16, "slot {head_slot}");
        Self {
            all: Box::default(),
            head,
            head_slot: u32::try_from(head_slot).unwrap_or(u32::MAX),
            head_count: 0,
        }
    }

    /// The words `words`, in an allocated array.
    pub(super) fn from_words(words: Vec<u64>) -> Self {
        Self {
            all: words.into_boxed_slice(),
            head: 0,
            head_slot: 0,
            head_count: 0,
        }
    }

    /// Word `slot` of `physical`.
    #[inline]
    pub(super) fn get(&self, slot: usize, physical: usize) -> u64 {
        match self.all.get(slot) {
            Some(&word) => word,
            None => self.get_unallocated(slot, physical),
        }
    }

    /// Writes word `slot` of `physical`.
    #[inline]
    pub(super) fn set(&mut self, slot: usize, physical: usize, value: u64) {
        match self.all.get_mut(slot) {
            Some(word) => *word = value,
            None => self.set_unallocated(slot, physical, value),
        }
    }

    /// Adds `n` to word `slot` of `physical` (to its count: a bucket's count never carries
    /// into its tag, see [`super::packed`]).
    #[inline]
    pub(super) fn add(&mut self, slot: usize, physical: usize, n: u64) {
        match self.all.get_mut(slot) {
            Some(word) => *word += n,
            None => self.add_unallocated(slot, physical, n),
        }
    }

    #[inline(never)]
    fn add_unallocated(&mut self, slot: usize, physical: usize, n: u64) {
        // An addition keeps the tag: in the head's bucket it is the count's alone.
        if slot == self.head_slot as usize {
            if let Some(count) = u32::try_from(n)
                .ok()
                .and_then(|n| self.head_count.checked_add(n))
            {
                self.head_count = count;
                return;
            }
        }
        let value = self.get_unallocated(slot, physical) + n;
        self.set_unallocated(slot, physical, value);
    }

    /// All `physical` words, in slot order.
    pub(super) fn to_vec(&self, physical: usize) -> Vec<u64> {
        if self.all.is_empty() {
            (0..physical)
                .map(|slot| self.get_unallocated(slot, physical))
                .collect()
        } else {
            self.all.to_vec()
        }
    }

    /// `Some(slot)` while the array is not allocated: every bucket but the head's (`slot`)
    /// then counts zero.
    #[inline]
    pub(super) fn counts_only_in(&self) -> Option<usize> {
        self.all.is_empty().then_some(self.head_slot as usize)
    }

    /// Whether the array is allocated (for the tests).
    #[cfg(test)]
    pub(super) fn is_allocated(&self) -> bool {
        !self.all.is_empty()
    }

    // Out of line, like the other paths of a window not yet allocated: `get`, `set` and `add`
    // stay small enough to inline into the algorithm's steps, which a hot key (allocated)
    // runs on every call.
    #[inline(never)]
    fn get_unallocated(&self, slot: usize, physical: usize) -> u64 {
        let head_slot = self.head_slot as usize;
        if slot == head_slot {
            // The bucket every read of a window in this state starts with.
            pack(self.head, u64::from(self.head_count))
        } else {
            empty_bucket(self.head, head_slot, slot, physical)
        }
    }

    #[inline(never)]
    fn set_unallocated(&mut self, slot: usize, physical: usize, value: u64) {
        // The head's bucket keeps its count inline while its tag stays the head's: the word
        // reads back exactly as written.
        if slot == self.head_slot as usize && pack(self.head, low(value)) == value {
            if let Ok(count) = u32::try_from(low(value)) {
                self.head_count = count;
                return;
            }
        }
        self.allocate(physical)[slot] = value;
    }

    /// Every word in an array, allocating it from the computed words.
    #[cold]
    fn allocate(&mut self, physical: usize) -> &mut [u64] {
        if self.all.is_empty() {
            self.all = self.to_vec(physical).into_boxed_slice();
        }
        &mut self.all
    }
}

#[cfg(test)]
mod tests {
    use super::super::packed::pack;
    use super::BucketsByUse;

    #[test]
    fn the_head_count_stays_inline_and_any_other_word_allocates() {
        // Five buckets, head epoch 12 in slot 2: slots 0..=2 stand for 10..=12, 3 and 4 for
        // 8 and 9.
        let mut words = BucketsByUse::fresh(12, 2);
        let tags = [10, 11, 12, 8, 9].map(|epoch| pack(epoch, 0));
        assert_eq!(words.to_vec(5), tags);
        words.add(2, 5, 3);
        words.set(2, 5, pack(12, 4));
        assert!(!words.is_allocated());
        assert_eq!(words.get(2, 5), pack(12, 4));
        // A new tag in the head's slot, or any word elsewhere, moves every word to the array.
        let mut moved = words.clone();
        moved.set(2, 5, pack(17, 1));
        assert!(moved.is_allocated());
        assert_eq!(
            moved.to_vec(5),
            [tags[0], tags[1], pack(17, 1), tags[3], tags[4]]
        );
        words.add(0, 5, 2);
        assert!(words.is_allocated());
        assert_eq!(
            words.to_vec(5),
            [pack(10, 2), tags[1], pack(12, 4), tags[3], tags[4]]
        );
    }

    #[test]
    fn a_head_younger_than_the_ring_leaves_the_older_slots_zero() {
        // Head epoch 1 of four buckets: slots 0 and 1 stand for epochs 0 and 1, the others
        // for epochs before 0: never written, zero.
        let words = BucketsByUse::fresh(1, 1);
        assert_eq!(words.to_vec(4), [pack(0, 0), pack(1, 0), 0, 0]);
        assert_eq!(BucketsByUse::fresh(0, 0).to_vec(3), [0; 3]);
    }
}
