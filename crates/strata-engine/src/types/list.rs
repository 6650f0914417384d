//! A list in RAM: a deque of elements (Redis 7.0 reports every list as
//! `quicklist`); or, once larger than `CHUNKED_AT`, cut into parts of
//! consecutive elements that may be on flash (`chunked::ChunkedList`).

use super::changes::{Op, Recorder};
use super::chunked::ChunkedList;
use super::packed_len;
use std::collections::VecDeque;

/// An iterator over a list's elements from both ends, with its length.
pub trait ElemIter<'a>: DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator {}
impl<'a, T: DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator> ElemIter<'a> for T {}

/// A list: small (a deque of its elements) or chunked (its parts), never
/// both.
#[derive(Clone, Debug, Default)]
pub struct List {
    repr: Repr,
    /// The journal's log of changes, while it records (`changes`).
    pub rec: Recorder,
}

#[derive(Clone, Debug)]
enum Repr {
    /// The elements, and the bytes of their packed form.
    Small {
        items: VecDeque<Box<[u8]>>,
        body: usize,
    },
    /// The parts, some of which may be on flash.
    Chunked(Box<ChunkedList>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Small {
            items: VecDeque::new(),
            body: 0,
        }
    }
}

impl PartialEq for List {
    fn eq(&self, o: &Self) -> bool {
        self.len() == o.len() && self.iter().eq(o.iter())
    }
}

impl List {
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Chunked(c) => c.len(),
            Repr::Small { items, .. } => items.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Packed bytes of the elements (each length-prefixed; a sorted set's
    /// with its score; a chunked sorted set's counted in both families).
    pub fn body_len(&self) -> usize {
        match &self.repr {
            Repr::Chunked(c) => c.body_len(),
            Repr::Small { body, .. } => *body,
        }
    }
    /// The chunked form, if chunked.
    pub fn chunked(&self) -> Option<&ChunkedList> {
        match &self.repr {
            Repr::Chunked(c) => Some(c),
            Repr::Small { .. } => None,
        }
    }
    /// The chunked form, if chunked.
    pub(crate) fn chunked_mut(&mut self) -> Option<&mut ChunkedList> {
        match &mut self.repr {
            Repr::Chunked(c) => Some(c),
            Repr::Small { .. } => None,
        }
    }
    /// Whether the list is chunked.
    pub fn is_chunked(&self) -> bool {
        matches!(self.repr, Repr::Chunked(_))
    }
    pub fn push_back(&mut self, e: Box<[u8]>) {
        match &mut self.repr {
            Repr::Chunked(c) => c.push_back(e),
            Repr::Small { items, body } => {
                self.rec.note(Op::LPushBack(&e));
                *body += packed_len(e.len());
                items.push_back(e);
            }
        }
    }
    pub fn push_front(&mut self, e: Box<[u8]>) {
        match &mut self.repr {
            Repr::Chunked(c) => c.push_front(e),
            Repr::Small { items, body } => {
                self.rec.note(Op::LPushFront(&e));
                *body += packed_len(e.len());
                items.push_front(e);
            }
        }
    }
    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        match &mut self.repr {
            Repr::Chunked(c) => c.pop_front(),
            Repr::Small { items, body } => {
                let e = items.pop_front()?;
                self.rec.note(Op::LPopFront);
                *body -= packed_len(e.len());
                Some(e)
            }
        }
    }
    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        match &mut self.repr {
            Repr::Chunked(c) => c.pop_back(),
            Repr::Small { items, body } => {
                let e = items.pop_back()?;
                self.rec.note(Op::LPopBack);
                *body -= packed_len(e.len());
                Some(e)
            }
        }
    }
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        match &self.repr {
            Repr::Chunked(c) => c.get(i),
            Repr::Small { items, .. } => items.get(i).map(|e| &**e),
        }
    }
    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, e: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Chunked(c) => c.set(i, e),
            Repr::Small { items, body } => match items.get_mut(i) {
                Some(old) => {
                    self.rec.note(Op::LSet(i as u32, e));
                    *body = *body - old.len() + e.len();
                    *old = e.into();
                    true
                }
                None => false,
            },
        }
    }
    pub fn insert(&mut self, i: usize, e: &[u8]) {
        match &mut self.repr {
            Repr::Chunked(c) => c.insert(i, e),
            Repr::Small { items, body } => {
                self.rec.note(Op::LInsert(i as u32, e));
                *body += packed_len(e.len());
                items.insert(i, e.into());
            }
        }
    }
    /// Removes element `i` of a list that is not chunked (a change
    /// record's `LRemAt`); false if there is none.
    pub(crate) fn remove_at(&mut self, i: usize) -> bool {
        match &mut self.repr {
            Repr::Chunked(_) => false,
            Repr::Small { items, body } => match items.remove(i) {
                Some(e) => {
                    self.rec.note(Op::LRemAt(i as u32));
                    *body -= packed_len(e.len());
                    true
                }
                None => false,
            },
        }
    }
    /// Keeps only elements `start..=end` (clamped by the caller).
    pub fn keep_range(&mut self, start: usize, end_incl: usize) {
        let (items, body) = match &mut self.repr {
            Repr::Chunked(c) => return c.keep_range(start, end_incl),
            Repr::Small { items, body } => (items, body),
        };
        self.rec.note(Op::LTrim(
            start.min(u32::MAX as usize) as u32,
            end_incl.min(u32::MAX as usize) as u32,
        ));
        if start > end_incl || start >= items.len() {
            items.clear();
            *body = 0;
            return;
        }
        for e in items.drain(end_incl.saturating_add(1).min(items.len())..) {
            *body -= packed_len(e.len());
        }
        for e in items.drain(..start) {
            *body -= packed_len(e.len());
        }
    }
    /// Keeps the elements for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        match &mut self.repr {
            Repr::Chunked(c) => c.retain(keep),
            Repr::Small { items, body } => {
                let (rec, mut kept) = (&mut self.rec, 0u32);
                items.retain(|e| {
                    let k = keep(e);
                    if k {
                        kept += 1;
                    } else {
                        rec.note(Op::LRemAt(kept));
                        *body -= packed_len(e.len());
                    }
                    k
                })
            }
        }
    }
    /// Every element in order (of a chunked list, all parts must be in RAM).
    pub fn iter(&self) -> Box<dyn ElemIter<'_> + '_> {
        match &self.repr {
            Repr::Chunked(c) => Box::new(c.iter()),
            Repr::Small { items, .. } => Box::new(items.iter().map(|e| &**e)),
        }
    }
    /// Elements `first..` in order (LRANGE: of a chunked list, only the
    /// parts holding the range need be in RAM; take no more than those).
    pub fn iter_from(&self, first: usize) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match &self.repr {
            Repr::Chunked(c) => Box::new(c.iter_from(first)),
            Repr::Small { items, .. } => Box::new(items.iter().skip(first).map(|e| &**e)),
        }
    }
    /// Makes the list chunked (past `CHUNKED_AT`), as incarnation `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        if let Repr::Small { items, .. } = &mut self.repr {
            let items = std::mem::take(items);
            self.repr = Repr::Chunked(Box::new(ChunkedList::build(cid, items)));
        }
    }
    /// A chunked list of these parts.
    pub(crate) fn from_chunks(c: ChunkedList) -> Self {
        List {
            repr: Repr::Chunked(Box::new(c)),
            rec: Recorder::default(),
        }
    }
}
