//! A window's array of words under a lock (the exact log's slots), stored by use: while only the
//! first word may be other than zero it lives inline in the window's header, and the array is
//! allocated only when another word needs a value.
//!
//! Under key churn most keys are hit once in their whole life (per-IP traffic: a client seen
//! briefly), so an array allocated at creation was an allocation and a free per key that held
//! one value. The logical array is unchanged: `len` words, zero where never written (zero is
//! an empty slot); only where the values live differs. Nothing shrinks back: an array once
//! allocated stays until the key is removed.
//!
//! Not used by the lock-free forms, whose words other threads CAS: a word moving from inline
//! to the array would need a handshake of its own. Nor by the rolling buckets: a new key's
//! window is built with every bucket tagged with the epoch it stands for, so no bucket word is
//! zero; they keep words by use of their own (`window/buckets/by_use.rs`).

/// The words `0..len` of a window (see the module docs); `len` is kept by the window.
///
/// Before the array is allocated (`all` empty: an empty boxed slice allocates nothing) word 0
/// lives in `first` and every other word is zero: a ring writes its slots from slot 0, so a
/// key hit once holds its hit there. A window whose array is allocated (every key hit more
/// than once: the hot path) works on the array as a plain slice.
#[derive(Clone, Debug)]
pub(crate) struct WordsByUse {
    /// Every word, once allocated; empty before.
    all: Box<[u64]>,
    /// Word 0 while `all` is empty; unused after.
    first: u64,
}

impl WordsByUse {
    /// Every word zero, nothing allocated.
    pub(crate) fn zeroed() -> Self {
        Self {
            all: Box::default(),
            first: 0,
        }
    }

    /// The words `values`, allocated only if a word past the first is not zero.
    pub(crate) fn from_values(values: Vec<u64>) -> Self {
        if values.iter().skip(1).all(|&value| value == 0) {
            Self {
                all: Box::default(),
                first: values.first().copied().unwrap_or(0),
            }
        } else {
            Self {
                all: values.into_boxed_slice(),
                first: 0,
            }
        }
    }

    /// Word `index` (below `len`).
    #[inline]
    pub(crate) fn get(&self, index: usize) -> u64 {
        match self.all.get(index) {
            Some(&word) => word,
            None => self.get_unallocated(index),
        }
    }

    /// The array, if it is allocated.
    #[inline]
    pub(crate) fn allocated_mut(&mut self) -> Option<&mut [u64]> {
        if self.all.is_empty() {
            None
        } else {
            Some(&mut self.all)
        }
    }

    /// Word 0 while the array is not allocated (every other word is zero then).
    pub(crate) fn first_unallocated(&self) -> Option<u64> {
        self.all.is_empty().then_some(self.first)
    }

    /// Writes word 0 of a window whose array is not allocated.
    pub(crate) fn set_first_unallocated(&mut self, new: u64) {
        debug_assert!(self.all.is_empty(), "allocated: word 0 is in the array");
        self.first = new;
    }

    /// Every word as a slice, allocating the array if it is not yet.
    #[cold]
    pub(crate) fn allocate(&mut self, len: usize) -> &mut [u64] {
        if self.all.is_empty() {
            // Zero-filled by `malloc` and a fill, not `calloc`: a zero fill compiles to
            // `calloc`, which glibc serves past its per-thread cache of freed blocks, so the
            // value is hidden from the optimiser and new keys reuse the blocks removed keys
            // free.
            let mut all: Box<[u64]> = std::iter::repeat_n(std::hint::black_box(0), len).collect();
            if let Some(word) = all.first_mut() {
                *word = std::mem::take(&mut self.first);
            }
            self.all = all;
        }
        &mut self.all
    }

    /// The largest word.
    pub(crate) fn max(&self) -> u64 {
        match self.first_unallocated() {
            Some(first) => first,
            None => self.all.iter().copied().max().unwrap_or(0),
        }
    }

    /// All `len` words, in order.
    pub(crate) fn to_vec(&self, len: usize) -> Vec<u64> {
        if self.all.is_empty() {
            (0..len).map(|index| self.get_unallocated(index)).collect()
        } else {
            self.all.to_vec()
        }
    }

    #[cold]
    fn get_unallocated(&self, index: usize) -> u64 {
        if index == 0 {
            self.first
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WordsByUse;

    #[test]
    fn word_zero_stays_inline_and_another_word_allocates_the_array() {
        let mut words = WordsByUse::zeroed();
        assert_eq!(words.to_vec(4), [0; 4]);
        words.set_first_unallocated(7);
        assert_eq!(words.first_unallocated(), Some(7));
        assert_eq!((words.get(0), words.get(1), words.max()), (7, 0, 7));
        words.allocate(4)[3] = 9;
        assert_eq!(words.first_unallocated(), None);
        assert_eq!(words.to_vec(4), [7, 0, 0, 9]);
        assert_eq!(words.max(), 9);
        words.allocated_mut().unwrap()[0] = 10;
        assert_eq!(words.to_vec(4), [10, 0, 0, 9]);
    }

    #[test]
    fn restored_values_are_inline_only_when_no_word_past_the_first_is_set() {
        let inline = WordsByUse::from_values(vec![4, 0, 0]);
        assert_eq!(inline.first_unallocated(), Some(4));
        assert_eq!(inline.to_vec(3), [4, 0, 0]);
        let mut words = WordsByUse::from_values(vec![0, 3, 5]);
        assert!(words.allocated_mut().is_some());
        assert_eq!(words.to_vec(3), [0, 3, 5]);
        let mut sorted = WordsByUse::from_values(vec![9, 0, 0]);
        sorted.allocate(3).sort_unstable();
        assert_eq!(sorted.to_vec(3), [0, 0, 9]);
    }
}
