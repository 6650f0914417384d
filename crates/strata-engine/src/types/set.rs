//! A set in RAM: members with O(1) lookup and O(1) access by position
//! (SPOP, SRANDMEMBER). While every member is an integer and there are
//! few, Redis would report `intset` and list them in numeric order; the
//! differential tests compare set replies as sets.

use super::changes::{Op, Recorder};
use super::chunked::Chunked;
use super::{is_int_member, packed_len, EncodingLimits};
use indexmap::IndexSet;

type Members = IndexSet<Box<[u8]>, foldhash::fast::RandomState>;

/// A set: small (its members in a map) or chunked (its parts), never both.
#[derive(Clone, Debug)]
pub struct Set {
    repr: Repr,
    /// Redis would report `hashtable` (one-way).
    pub big: bool,
    /// The journal's log of changes, while it records (`changes`).
    pub rec: Recorder,
}

#[derive(Clone, Debug)]
enum Repr {
    /// The members, and the bytes of their packed form.
    Small { members: Members, body: usize },
    /// The parts, some of which may be on flash.
    Chunked(Box<Chunked<()>>),
}

impl Default for Set {
    fn default() -> Set {
        Set::with_capacity(0)
    }
}

impl PartialEq for Set {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big && self.len() == o.len() && self.iter().all(|m| o.contains(m))
    }
}

impl Set {
    pub fn with_capacity(n: usize) -> Set {
        Set {
            repr: Repr::Small {
                members: Members::with_capacity_and_hasher(n, Default::default()),
                body: 0,
            },
            big: false,
            rec: Recorder::default(),
        }
    }
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Chunked(c) => c.len(),
            Repr::Small { members, .. } => members.len(),
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
    pub fn contains(&self, m: &[u8]) -> bool {
        match &self.repr {
            Repr::Chunked(c) => c.contains(m),
            Repr::Small { members, .. } => members.contains(m),
        }
    }
    /// Adds `m`; returns whether it is new.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        let (members, body) = match &mut self.repr {
            Repr::Chunked(c) => return c.insert(m, ()),
            Repr::Small { members, body } => (members, body),
        };
        if members.contains(m) {
            return false;
        }
        self.rec.note(Op::SAdd(m));
        *body += packed_len(m.len());
        members.insert(m.into());
        true
    }
    pub(crate) fn insert_raw(&mut self, m: &[u8]) -> bool {
        self.insert(m)
    }
    /// Removes `m`; returns whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let (members, body) = match &mut self.repr {
            Repr::Chunked(c) => return c.remove(m).is_some(),
            Repr::Small { members, body } => (members, body),
        };
        if members.swap_remove(m) {
            self.rec.note(Op::SRem(m));
            *body -= packed_len(m.len());
            true
        } else {
            false
        }
    }
    /// Removes and returns the member at position `i`.
    pub fn remove_index(&mut self, i: usize) -> Option<Box<[u8]>> {
        let (members, body) = match &mut self.repr {
            Repr::Chunked(c) => return c.remove_index(i).map(|(k, ())| k),
            Repr::Small { members, body } => (members, body),
        };
        let m = members.swap_remove_index(i)?;
        self.rec.note(Op::SRem(&m));
        *body -= packed_len(m.len());
        Some(m)
    }
    pub fn get_index(&self, i: usize) -> Option<&[u8]> {
        match &self.repr {
            Repr::Chunked(c) => c.get_index(i).map(|(k, _)| k),
            Repr::Small { members, .. } => members.get_index(i).map(|m| &**m),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let (small, parts) = match &self.repr {
            Repr::Small { members, .. } => (Some(members.iter().map(|m| &**m)), None),
            Repr::Chunked(c) => (None, Some(c.iter().map(|(k, _)| k))),
        };
        small
            .into_iter()
            .flatten()
            .chain(parts.into_iter().flatten())
    }
    /// The members of the directory's parts `r` of a chunked set (in
    /// RAM), or of the whole set if it is not chunked.
    pub fn iter_parts(&self, r: std::ops::Range<usize>) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match &self.repr {
            Repr::Chunked(c) => Box::new(c.iter_parts(r).map(|(m, _)| m)),
            Repr::Small { .. } => Box::new(self.iter()),
        }
    }
    /// The members whose partition hash (`parts::elem_hash`) lies in
    /// `[lo, hi]`: of a chunked set, from the parts holding that range (in
    /// RAM: `Engine::stream_windows` loads them); of another, the whole
    /// set filtered.
    pub fn iter_hashes(&self, lo: u64, hi: u64) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        let all = lo == 0 && hi == u64::MAX;
        let keep = move |m: &&[u8]| all || (lo..=hi).contains(&super::parts::elem_hash(m));
        match &self.repr {
            Repr::Chunked(c) => {
                let parts = c.part_of(lo)..c.part_of(hi) + 1;
                Box::new(c.iter_parts(parts).map(|(m, _)| m).filter(keep))
            }
            Repr::Small { .. } => Box::new(self.iter().filter(keep)),
        }
    }
    /// One SSCAN step over a chunked set (`Chunked::scan`); None if the
    /// set is not chunked (its cursors are positions).
    pub fn chunk_scan(&self, from: u64, count: usize) -> Option<(Vec<&[u8]>, u64)> {
        self.chunks().map(|c| {
            let (items, next) = c.scan(from, count);
            (items.into_iter().map(|(m, _)| m).collect(), next)
        })
    }
    /// Parts of its directory (0 if not chunked).
    pub fn part_count(&self) -> usize {
        self.chunks().map_or(0, |c| c.parts().len())
    }
    /// Whether the set is chunked.
    pub fn is_chunked(&self) -> bool {
        matches!(self.repr, Repr::Chunked(_))
    }
    /// Its parts, when chunked.
    pub(crate) fn chunks(&self) -> Option<&Chunked<()>> {
        match &self.repr {
            Repr::Chunked(c) => Some(c),
            Repr::Small { .. } => None,
        }
    }
    /// Its parts, when chunked.
    pub(crate) fn chunks_mut(&mut self) -> Option<&mut Chunked<()>> {
        match &mut self.repr {
            Repr::Chunked(c) => Some(c),
            Repr::Small { .. } => None,
        }
    }
    /// A chunked one of these parts.
    pub(crate) fn from_chunks(big: bool, c: Chunked<()>) -> Self {
        Self {
            repr: Repr::Chunked(Box::new(c)),
            big,
            rec: Recorder::default(),
        }
    }
    /// Makes the set chunked (a big one past `CHUNKED_AT`), with
    /// collection id `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        if let Repr::Small { members, .. } = &mut self.repr {
            let members = std::mem::take(members);
            self.repr = Repr::Chunked(Box::new(Chunked::build(
                cid,
                members.into_iter().map(|m| (m, ())),
            )));
        }
    }
    pub(crate) fn update_encoding(&mut self, lim: &EncodingLimits) {
        let Repr::Small { members, .. } = &self.repr else {
            return;
        };
        if !self.big
            && (members.len() > lim.set_intset_entries || !members.iter().all(|m| is_int_member(m)))
        {
            self.big = true;
        }
    }
}
