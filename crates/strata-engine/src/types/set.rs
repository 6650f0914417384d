//! A set in RAM: members with O(1) lookup and O(1) access by position
//! (SPOP, SRANDMEMBER). While every member is an integer and there are
//! few, Redis would report `intset` and list them in numeric order; the
//! differential tests compare set replies as sets.

use super::chunked::Chunked;
use super::{is_int_member, packed_len, EncodingLimits};
use indexmap::IndexSet;

type Members = IndexSet<Box<[u8]>, foldhash::fast::RandomState>;

#[derive(Clone, Debug, Default)]
pub struct Set {
    members: Members,
    body: usize,
    /// Redis would report `hashtable` (one-way).
    pub big: bool,
    /// The parts, when chunked (then `members` is empty and unused).
    pub(crate) chunks: Option<Box<Chunked<()>>>,
}

impl PartialEq for Set {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big && self.len() == o.len() && self.iter().all(|m| o.contains(m))
    }
}

impl Set {
    pub fn with_capacity(n: usize) -> Set {
        Set {
            members: Members::with_capacity_and_hasher(n, Default::default()),
            ..Set::default()
        }
    }
    pub fn len(&self) -> usize {
        match &self.chunks {
            Some(c) => c.len(),
            None => self.members.len(),
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
    pub fn contains(&self, m: &[u8]) -> bool {
        match &self.chunks {
            Some(c) => c.contains(m),
            None => self.members.contains(m),
        }
    }
    /// Adds `m`; returns whether it is new.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if let Some(c) = &mut self.chunks {
            return c.insert(m, ());
        }
        if self.members.contains(m) {
            return false;
        }
        self.body += packed_len(m.len());
        self.members.insert(m.into());
        true
    }
    pub(crate) fn insert_raw(&mut self, m: &[u8]) -> bool {
        self.insert(m)
    }
    /// Removes `m`; returns whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        if let Some(c) = &mut self.chunks {
            return c.remove(m).is_some();
        }
        if self.members.swap_remove(m) {
            self.body -= packed_len(m.len());
            true
        } else {
            false
        }
    }
    /// Removes and returns the member at position `i`.
    pub fn remove_index(&mut self, i: usize) -> Option<Box<[u8]>> {
        if let Some(c) = &mut self.chunks {
            return c.remove_index(i).map(|(k, ())| k);
        }
        let m = self.members.swap_remove_index(i)?;
        self.body -= packed_len(m.len());
        Some(m)
    }
    pub fn get_index(&self, i: usize) -> Option<&[u8]> {
        match &self.chunks {
            Some(c) => c.get_index(i).map(|(k, _)| k),
            None => self.members.get_index(i).map(|m| &**m),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let parts = self.chunks.iter().flat_map(|c| c.iter().map(|(k, _)| k));
        self.members.iter().map(|m| &**m).chain(parts)
    }
    /// The members of the directory's parts `r` of a chunked set (in
    /// RAM), or of the whole set if it is not chunked.
    pub fn iter_parts(&self, r: std::ops::Range<usize>) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match &self.chunks {
            Some(c) => Box::new(c.iter_parts(r).map(|(m, _)| m)),
            None => Box::new(self.iter()),
        }
    }
    /// The members whose partition hash (`chunked::elem_hash`) lies in
    /// `[lo, hi]`: of a chunked set, from the parts holding that range (in
    /// RAM: `Engine::stream_windows` loads them); of another, the whole
    /// set filtered.
    pub fn iter_hashes(&self, lo: u64, hi: u64) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        let all = lo == 0 && hi == u64::MAX;
        let keep = move |m: &&[u8]| all || (lo..=hi).contains(&super::chunked::elem_hash(m));
        match &self.chunks {
            Some(c) => {
                let parts = c.part_of(lo)..c.part_of(hi) + 1;
                Box::new(c.iter_parts(parts).map(|(m, _)| m).filter(keep))
            }
            None => Box::new(self.iter().filter(keep)),
        }
    }
    /// One SSCAN step over a chunked set (`Chunked::scan`); None if the
    /// set is not chunked (its cursors are positions).
    pub fn chunk_scan(&self, from: u64, count: usize) -> Option<(Vec<&[u8]>, u64)> {
        self.chunks.as_ref().map(|c| {
            let (items, next) = c.scan(from, count);
            (items.into_iter().map(|(m, _)| m).collect(), next)
        })
    }
    /// Whether the set is chunked.
    /// Parts of its directory (0 if not chunked).
    pub fn part_count(&self) -> usize {
        self.chunks.as_ref().map_or(0, |c| c.parts().len())
    }
    pub fn is_chunked(&self) -> bool {
        self.chunks.is_some()
    }
    /// A chunked one of these parts.
    pub(crate) fn from_chunks(big: bool, c: Chunked<()>) -> Self {
        Self {
            big,
            chunks: Some(Box::new(c)),
            ..Self::default()
        }
    }
    /// Makes the set chunked (a big one past `CHUNKED_AT`), with
    /// collection id `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        let members = std::mem::take(&mut self.members);
        self.body = 0;
        self.chunks = Some(Box::new(Chunked::build(
            cid,
            members.into_iter().map(|m| (m, ())),
        )));
    }
    pub(crate) fn update_encoding(&mut self, lim: &EncodingLimits) {
        if !self.big
            && (self.members.len() > lim.set_intset_entries
                || !self.members.iter().all(|m| is_int_member(m)))
        {
            self.big = true;
        }
    }
}
