//! A list in RAM: a deque of elements (Redis 7.0 reports every list as
//! `quicklist`); or, once larger than `CHUNKED_AT`, cut into parts of
//! consecutive elements that may be on flash (`chunked::ChunkedList`).

use super::chunked::ChunkedList;
use super::packed_len;
use std::collections::VecDeque;

/// An iterator over a list's elements from both ends, with its length.
pub trait ElemIter<'a>: DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator {}
impl<'a, T: DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator> ElemIter<'a> for T {}

#[derive(Clone, Debug, Default)]
pub struct List {
    items: VecDeque<Box<[u8]>>,
    body: usize,
    /// The parts, when chunked (then `items` is empty and unused).
    pub(crate) chunks: Option<Box<ChunkedList>>,
}

impl PartialEq for List {
    fn eq(&self, o: &Self) -> bool {
        self.len() == o.len() && self.iter().eq(o.iter())
    }
}

impl List {
    pub fn len(&self) -> usize {
        match &self.chunks {
            Some(c) => c.len(),
            None => self.items.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Packed bytes of the elements (each length-prefixed; a sorted set's
    /// with its score; a chunked sorted set's counted in both families).
    pub fn body_len(&self) -> usize {
        match &self.chunks {
            Some(c) => c.body_len(),
            None => self.body,
        }
    }
    /// Whether the list is chunked.
    /// The chunked form, if chunked.
    pub fn chunked(&self) -> Option<&ChunkedList> {
        self.chunks.as_deref()
    }
    pub fn is_chunked(&self) -> bool {
        self.chunks.is_some()
    }
    pub fn push_back(&mut self, e: Box<[u8]>) {
        if let Some(c) = &mut self.chunks {
            return c.push_back(e);
        }
        self.body += packed_len(e.len());
        self.items.push_back(e);
    }
    pub fn push_front(&mut self, e: Box<[u8]>) {
        if let Some(c) = &mut self.chunks {
            return c.push_front(e);
        }
        self.body += packed_len(e.len());
        self.items.push_front(e);
    }
    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        if let Some(c) = &mut self.chunks {
            return c.pop_front();
        }
        let e = self.items.pop_front()?;
        self.body -= packed_len(e.len());
        Some(e)
    }
    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        if let Some(c) = &mut self.chunks {
            return c.pop_back();
        }
        let e = self.items.pop_back()?;
        self.body -= packed_len(e.len());
        Some(e)
    }
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        match &self.chunks {
            Some(c) => c.get(i),
            None => self.items.get(i).map(|e| &**e),
        }
    }
    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, e: &[u8]) -> bool {
        if let Some(c) = &mut self.chunks {
            return c.set(i, e);
        }
        match self.items.get_mut(i) {
            Some(old) => {
                self.body = self.body - old.len() + e.len();
                *old = e.into();
                true
            }
            None => false,
        }
    }
    pub fn insert(&mut self, i: usize, e: &[u8]) {
        if let Some(c) = &mut self.chunks {
            return c.insert(i, e);
        }
        self.body += packed_len(e.len());
        self.items.insert(i, e.into());
    }
    /// Keeps only elements `start..=end` (clamped by the caller).
    pub fn keep_range(&mut self, start: usize, end_incl: usize) {
        if let Some(c) = &mut self.chunks {
            return c.keep_range(start, end_incl);
        }
        if start > end_incl || start >= self.items.len() {
            self.items.clear();
            self.body = 0;
            return;
        }
        for _ in end_incl + 1..self.items.len() {
            self.pop_back();
        }
        for _ in 0..start {
            self.pop_front();
        }
    }
    /// Keeps the elements for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        if let Some(c) = &mut self.chunks {
            return c.retain(keep);
        }
        let mut body = self.body;
        self.items.retain(|e| {
            let k = keep(e);
            if !k {
                body -= packed_len(e.len());
            }
            k
        });
        self.body = body;
    }
    /// Every element in order (of a chunked list, all parts must be in RAM).
    pub fn iter(&self) -> Box<dyn ElemIter<'_> + '_> {
        match &self.chunks {
            Some(c) => Box::new(c.iter()),
            None => Box::new(self.items.iter().map(|e| &**e)),
        }
    }
    /// Elements `first..` in order (LRANGE: of a chunked list, only the
    /// parts holding the range need be in RAM; take no more than those).
    pub fn iter_from(&self, first: usize) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match &self.chunks {
            Some(c) => Box::new(c.iter_from(first)),
            None => Box::new(self.items.iter().skip(first).map(|e| &**e)),
        }
    }
    /// Makes the list chunked (past `CHUNKED_AT`), as incarnation `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        let items = std::mem::take(&mut self.items);
        self.body = 0;
        self.chunks = Some(Box::new(ChunkedList::build(cid, items)));
    }
    /// A chunked list of these parts.
    pub(crate) fn from_chunks(c: ChunkedList) -> Self {
        Self {
            chunks: Some(Box::new(c)),
            ..Self::default()
        }
    }
}
