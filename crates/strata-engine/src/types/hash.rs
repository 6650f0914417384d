//! A hash in RAM: fields in insertion order (as Redis's listpack keeps
//! them while the hash is small), with O(1) lookup; or, once big and
//! larger than a chunk, partitioned into parts that may be on flash
//! (`chunked`).

use super::changes::{Op, Recorder};
use super::chunked::Chunked;
use super::{packed_len, EncodingLimits};
use indexmap::IndexMap;

type Map = IndexMap<Box<[u8]>, Box<[u8]>, foldhash::fast::RandomState>;

/// A hash: small (its fields in a map) or chunked (its parts), never both.
#[derive(Clone, Debug)]
pub struct Hash {
    repr: Repr,
    /// Redis would report `hashtable` (one-way).
    pub big: bool,
    /// The journal's log of changes, while it records (`changes`).
    pub rec: Recorder,
}

#[derive(Clone, Debug)]
enum Repr {
    /// The fields in insertion order, and the bytes of their packed form
    /// (`packed_len` of each field and value).
    Small { map: Map, body: usize },
    /// The parts, some of which may be on flash.
    Chunked(Box<Chunked<Box<[u8]>>>),
}

impl Default for Hash {
    fn default() -> Hash {
        Hash {
            repr: Repr::Small {
                map: Map::default(),
                body: 0,
            },
            big: false,
            rec: Recorder::default(),
        }
    }
}

impl PartialEq for Hash {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big && self.len() == o.len() && self.iter().all(|(k, v)| o.get(k) == Some(v))
    }
}

impl Hash {
    pub fn with_capacity(n: usize) -> Hash {
        Hash {
            repr: Repr::Small {
                map: Map::with_capacity_and_hasher(n, Default::default()),
                body: 0,
            },
            big: false,
            rec: Recorder::default(),
        }
    }
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Chunked(c) => c.len(),
            Repr::Small { map, .. } => map.len(),
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
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Chunked(c) => c.get(field),
            Repr::Small { map, .. } => map.get(field).map(|v| &**v),
        }
    }
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }
    /// Sets `field`; returns whether it is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let (map, body) = match &mut self.repr {
            Repr::Chunked(c) => return c.insert(field, value.into()),
            Repr::Small { map, body } => (map, body),
        };
        self.rec.note(Op::HSet(field, value));
        match map.get_mut(field) {
            Some(v) => {
                *body = *body - v.len() + value.len();
                *v = value.into();
                false
            }
            None => {
                *body += packed_len(field.len()) + packed_len(value.len());
                map.insert(field.into(), value.into());
                true
            }
        }
    }
    /// Inserts a field known to be new (decoding); false if it was not.
    pub(crate) fn insert_raw(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.insert(field, value)
    }
    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let (map, body) = match &mut self.repr {
            Repr::Chunked(c) => return c.remove(field).is_some(),
            Repr::Small { map, body } => (map, body),
        };
        let removed = if self.big {
            map.swap_remove(field)
        } else {
            map.shift_remove(field)
        };
        match removed {
            Some(v) => {
                self.rec.note(Op::HDel(field, self.big));
                *body -= packed_len(field.len()) + packed_len(v.len());
                true
            }
            None => false,
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let (small, parts) = match &self.repr {
            Repr::Small { map, .. } => (Some(map.iter().map(|(k, v)| (&**k, &**v))), None),
            Repr::Chunked(c) => (None, Some(c.iter())),
        };
        small
            .into_iter()
            .flatten()
            .chain(parts.into_iter().flatten())
    }
    /// The fields and values of the directory's parts `r` of a chunked
    /// hash (in RAM), or of the whole hash if it is not chunked.
    pub fn iter_parts(
        &self,
        r: std::ops::Range<usize>,
    ) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match &self.repr {
            Repr::Chunked(c) => Box::new(c.iter_parts(r)),
            Repr::Small { .. } => Box::new(self.iter()),
        }
    }
    /// The field and value at position `i` (for random picks and scans).
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Chunked(c) => c.get_index(i),
            Repr::Small { map, .. } => map.get_index(i).map(|(k, v)| (&**k, &**v)),
        }
    }
    /// One HSCAN step over a chunked hash (`Chunked::scan`): fields and
    /// values with hash at least `from`, and the next cursor; None if the
    /// hash is not chunked (its cursors are positions).
    pub fn chunk_scan(&self, from: u64, count: usize) -> Option<super::parts::ScanStep<'_>> {
        self.chunks().map(|c| c.scan(from, count))
    }
    /// Parts of its directory (0 if not chunked).
    pub fn part_count(&self) -> usize {
        self.chunks().map_or(0, |c| c.parts().len())
    }
    /// Whether the hash is chunked.
    pub fn is_chunked(&self) -> bool {
        matches!(self.repr, Repr::Chunked(_))
    }
    /// Its parts, when chunked.
    pub(crate) fn chunks(&self) -> Option<&Chunked<Box<[u8]>>> {
        match &self.repr {
            Repr::Chunked(c) => Some(c),
            Repr::Small { .. } => None,
        }
    }
    /// Its parts, when chunked.
    pub(crate) fn chunks_mut(&mut self) -> Option<&mut Chunked<Box<[u8]>>> {
        match &mut self.repr {
            Repr::Chunked(c) => Some(c),
            Repr::Small { .. } => None,
        }
    }
    /// A chunked one of these parts.
    pub(crate) fn from_chunks(big: bool, c: Chunked<Box<[u8]>>) -> Self {
        Self {
            repr: Repr::Chunked(Box::new(c)),
            big,
            rec: Recorder::default(),
        }
    }
    /// Makes the hash chunked (a big one past `CHUNKED_AT`), with
    /// collection id `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        if let Repr::Small { map, .. } = &mut self.repr {
            let map = std::mem::take(map);
            self.repr = Repr::Chunked(Box::new(Chunked::build(cid, map)));
        }
    }
    pub(crate) fn update_encoding(&mut self, lim: &EncodingLimits) {
        let Repr::Small { map, .. } = &self.repr else {
            return;
        };
        if !self.big
            && (map.len() > lim.hash_entries
                || map
                    .iter()
                    .any(|(k, v)| k.len() > lim.hash_value || v.len() > lim.hash_value))
        {
            self.big = true;
        }
    }
}
