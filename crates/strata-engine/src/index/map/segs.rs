//! `Segs`: a map's buckets, in segments of [`SEG`] buckets (128 KiB)
//! instead of one array. Growing adds a segment: no copy of the buckets
//! already there (a map of 3M keys no longer stalls its shard for a
//! 100 MB copy when it grows), and no spare room but the last segment's
//! (one array grown by an eighth kept 6% idle on average).
//!
//! Invariants:
//! 1. Bucket `i` is `segs[i / SEG][i % SEG]`: every segment before the
//!    last holds exactly `SEG` buckets.
//! 2. The first segment grows by doubling up to `SEG` (a small map stays
//!    small); every later one is allocated whole, with room for `SEG`.
//! 3. At most one segment past the one the next bucket goes to is kept,
//!    empty (so a map whose size swings across a boundary does not
//!    allocate and free a segment each time), until `shrink` (each tick
//!    of the background thread) gives it back.

use super::Bucket;

const SHIFT: u32 = 12;
/// Buckets per segment.
pub(super) const SEG: usize = 1 << SHIFT;

#[derive(Clone, Default)]
pub(super) struct Segs {
    segs: Vec<Vec<Bucket>>,
    len: usize,
}

impl Segs {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes allocated: every segment's room and the list of segments.
    pub fn allocated_bytes(&self) -> usize {
        let room: usize = self.segs.iter().map(Vec::capacity).sum();
        room * std::mem::size_of::<Bucket>()
            + self.segs.capacity() * std::mem::size_of::<Vec<Bucket>>()
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&Bucket> {
        if i >= self.len {
            return None;
        }
        Some(&self.segs[i >> SHIFT][i & (SEG - 1)])
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Bucket> {
        if i >= self.len {
            return None;
        }
        Some(&mut self.segs[i >> SHIFT][i & (SEG - 1)])
    }

    pub fn push(&mut self, b: Bucket) {
        let s = self.len >> SHIFT;
        if s == self.segs.len() {
            self.segs
                .push(Vec::with_capacity(if s == 0 { 16 } else { SEG }));
        }
        let v = &mut self.segs[s];
        if v.len() == v.capacity() {
            // Only the first segment gets here (invariant 2).
            v.reserve_exact(v.len().min(SEG - v.len()));
        }
        v.push(b);
        self.len += 1;
    }

    /// Removes bucket `i`, moving the last bucket into its place.
    pub fn swap_remove(&mut self, i: usize) -> Bucket {
        assert!(i < self.len, "swap_remove({i}) of {}", self.len);
        self.len -= 1;
        let last = self.segs[self.len >> SHIFT]
            .pop()
            .expect("invariant 1: the last bucket's segment");
        let out = if i == self.len {
            last
        } else {
            std::mem::replace(&mut self.segs[i >> SHIFT][i & (SEG - 1)], last)
        };
        // Invariant 3: the segment the next bucket goes to, and one more.
        while self.segs.len() > (self.len >> SHIFT) + 2 {
            self.segs.pop();
        }
        out
    }

    /// Gives back the spare segment (invariant 3) and, when only the
    /// first segment is in use, what it holds beyond twice its buckets
    /// (at least 16); whether anything was given back.
    pub fn shrink(&mut self) -> bool {
        let used = self.len.div_ceil(SEG).max(1);
        let mut shrunk = false;
        while self.segs.len() > used {
            self.segs.pop();
            shrunk = true;
        }
        if let (1, Some(first)) = (self.segs.len(), self.segs.first_mut()) {
            let keep = (self.len * 2).max(16);
            if first.capacity() > keep * 2 {
                first.shrink_to(keep);
                shrunk = true;
            }
        }
        shrunk
    }

    /// Room for `n` more buckets without allocating.
    pub fn reserve_exact(&mut self, n: usize) {
        let want = self.len + n;
        if want == 0 {
            return;
        }
        if self.segs.is_empty() {
            self.segs.push(Vec::new());
        }
        let first = &mut self.segs[0];
        let target = want.min(SEG);
        if target > first.len() {
            first.reserve_exact(target - first.len());
        }
        while self.segs.len() < want.div_ceil(SEG) {
            self.segs.push(Vec::with_capacity(SEG));
        }
    }

    pub fn first(&self) -> Option<&Bucket> {
        self.get(0)
    }

    pub fn iter(
        &self,
    ) -> impl ExactSizeIterator<Item = &Bucket> + DoubleEndedIterator + Clone + '_ {
        (0..self.len).map(move |i| &self.segs[i >> SHIFT][i & (SEG - 1)])
    }

    /// Keeps the buckets `f` approves, in their order.
    #[cfg(test)]
    pub fn retain(&mut self, mut f: impl FnMut(&Bucket) -> bool) {
        let all = std::mem::take(self);
        for b in all {
            if f(&b) {
                self.push(b);
            }
        }
    }
}

impl std::ops::Index<usize> for Segs {
    type Output = Bucket;
    #[inline]
    fn index(&self, i: usize) -> &Bucket {
        self.get(i).expect("a bucket position in range")
    }
}

impl std::ops::IndexMut<usize> for Segs {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Bucket {
        self.get_mut(i).expect("a bucket position in range")
    }
}

impl IntoIterator for Segs {
    type Item = Bucket;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<Bucket>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.segs.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::cell::Cell;
    use super::super::tests::entry;
    use super::*;
    use crate::index::Key;

    fn bucket(i: usize) -> Bucket {
        let k = format!("{i}");
        Bucket::new(Key::from(k.as_bytes()), Cell::new(k.len(), entry(i as u64)))
    }

    fn id(b: &Bucket) -> usize {
        std::str::from_utf8(b.key()).unwrap().parse().unwrap()
    }

    /// Positions follow a plain `Vec` through pushes and swap-removes
    /// across segment boundaries, and the room kept stays within one
    /// segment or two of what is used.
    #[test]
    fn segments_behave_as_one_array() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut s = Segs::default();
        let mut model: Vec<usize> = Vec::new();
        let mut next = 0;
        for step in 0..60_000 {
            // Grow to ~3 segments, shrink to ~1, grow again.
            let grow = (step / 20_000) % 2 == 0;
            if model.is_empty() || rng.gen_ratio(if grow { 3 } else { 1 }, 4) {
                s.push(bucket(next));
                model.push(next);
                next += 1;
            } else {
                let i = rng.gen_range(0..model.len());
                assert_eq!(id(&s.swap_remove(i)), model.swap_remove(i));
            }
            assert_eq!(s.len(), model.len());
            if step % 997 == 0 {
                assert!(s.iter().map(id).eq(model.iter().copied()));
                assert!(s.iter().rev().map(id).eq(model.iter().rev().copied()));
                let room = s.allocated_bytes() / std::mem::size_of::<Bucket>();
                assert!(room < s.len() + 2 * SEG + 64, "{room} for {}", s.len());
            }
        }
        for (i, &m) in model.iter().enumerate() {
            assert_eq!(id(&s[i]), m);
        }
        assert!(s
            .clone()
            .into_iter()
            .map(|b| id(&b))
            .eq(model.iter().copied()));
        let mut r = Segs::default();
        r.reserve_exact(3 * SEG + 5);
        let before = r.allocated_bytes();
        for i in 0..3 * SEG + 5 {
            r.push(bucket(i));
        }
        assert_eq!(
            r.allocated_bytes(),
            before,
            "reserved room is used, not grown"
        );
    }
}
