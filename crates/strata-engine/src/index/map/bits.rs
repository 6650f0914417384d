//! `Bits`: one bit per bucket position, set where the bucket's cell is
//! boxed whole (`Cell::Full`: every entry in RAM is). The demotion hand
//! walks these words instead of the 32-byte buckets: in a flash-sized
//! dataset most keys are packed and cold, and reading their buckets only
//! to pass them was a fifth of the tiering thread's time (`perf record -t`
//! of it under SETs that demote).
//!
//! Invariant (`KeyMap`, 4): bit `i` is set iff `buckets[i]` is boxed whole;
//! bits at or past `buckets.len()` are clear.

#[derive(Clone, Default, Debug)]
pub(super) struct Bits {
    words: Vec<u64>,
}

impl Bits {
    pub fn set(&mut self, i: usize, on: bool) {
        let w = i / 64;
        if w >= self.words.len() {
            if !on {
                return;
            }
            self.words.resize(w + 1, 0);
        }
        let m = 1u64 << (i % 64);
        if on {
            self.words[w] |= m;
        } else {
            self.words[w] &= !m;
        }
    }

    pub fn get(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 != 0)
    }

    /// The first set bit in `from..end`.
    pub fn next(&self, from: usize, end: usize) -> Option<usize> {
        let mut i = from;
        while i < end {
            let w = i / 64;
            let word = *self.words.get(w)? >> (i % 64);
            if word != 0 {
                let p = i + word.trailing_zeros() as usize;
                return (p < end).then_some(p);
            }
            i = (w + 1) * 64;
        }
        None
    }

    /// Bit `last` moves to `i` (a bucket's swap removal).
    pub fn swap_remove(&mut self, i: usize, last: usize) {
        let b = self.get(last);
        self.set(last, false);
        if i != last {
            self.set(i, b);
        }
    }

    /// Gives back the words past position `len` (all clear, by the
    /// invariant) when they are most of them.
    pub fn shrink(&mut self, len: usize) {
        let keep = len.div_ceil(64);
        if self.words.capacity() > keep * 2 + 8 {
            self.words.truncate(keep);
            self.words.shrink_to_fit();
        }
    }

    #[cfg(test)]
    pub fn clear(&mut self) {
        self.words.clear();
    }

    pub fn allocated_bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_finds_the_set_bits_in_range() {
        let mut b = Bits::default();
        for i in [3, 64, 65, 200] {
            b.set(i, true);
        }
        assert_eq!(b.next(0, 300), Some(3));
        assert_eq!(b.next(4, 300), Some(64));
        assert_eq!(b.next(66, 300), Some(200));
        assert_eq!(b.next(66, 200), None);
        assert_eq!(b.next(201, 1000), None);
        b.swap_remove(3, 200);
        assert!(b.get(3) && !b.get(200));
        b.swap_remove(64, 65);
        assert!(b.get(64) && !b.get(65));
        b.set(64, false);
        assert_eq!(b.next(4, 300), None);
        // Clearing past the end allocates nothing.
        let mut e = Bits::default();
        e.set(1 << 20, false);
        assert_eq!(e.allocated_bytes(), 0);
    }
}
