//! A list in RAM: a deque of elements (Redis 7.0 reports every list as
//! `quicklist`).

use super::packed_len;
use std::collections::VecDeque;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct List {
    items: VecDeque<Box<[u8]>>,
    body: usize,
}

impl List {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub(crate) fn body_len(&self) -> usize {
        self.body
    }
    pub fn push_back(&mut self, e: Box<[u8]>) {
        self.body += packed_len(e.len());
        self.items.push_back(e);
    }
    pub fn push_front(&mut self, e: Box<[u8]>) {
        self.body += packed_len(e.len());
        self.items.push_front(e);
    }
    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        let e = self.items.pop_front()?;
        self.body -= packed_len(e.len());
        Some(e)
    }
    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        let e = self.items.pop_back()?;
        self.body -= packed_len(e.len());
        Some(e)
    }
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.items.get(i).map(|e| &**e)
    }
    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, e: &[u8]) -> bool {
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
        self.body += packed_len(e.len());
        self.items.insert(i, e.into());
    }
    pub fn remove(&mut self, i: usize) -> Option<Box<[u8]>> {
        let e = self.items.remove(i)?;
        self.body -= packed_len(e.len());
        Some(e)
    }
    /// Keeps only elements `start..=end` (clamped by the caller).
    pub fn keep_range(&mut self, start: usize, end_incl: usize) {
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
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator + '_ {
        self.items.iter().map(|e| &**e)
    }
}
