//! A hash in RAM: fields in insertion order (as Redis's listpack keeps
//! them while the hash is small), with O(1) lookup; or, once big and
//! larger than a chunk, partitioned into parts that may be on flash
//! (`chunked`).

use super::chunked::Chunked;
use super::{packed_len, EncodingLimits};
use indexmap::IndexMap;

type Map = IndexMap<Box<[u8]>, Box<[u8]>, foldhash::fast::RandomState>;

#[derive(Clone, Debug, Default)]
pub struct Hash {
    map: Map,
    /// Bytes of the packed elements (`packed_len` of each field and value).
    body: usize,
    /// Redis would report `hashtable` (one-way).
    pub big: bool,
    /// The parts, when chunked (then `map` is empty and unused).
    pub(crate) chunks: Option<Box<Chunked<Box<[u8]>>>>,
}

impl PartialEq for Hash {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big && self.len() == o.len() && self.iter().all(|(k, v)| o.get(k) == Some(v))
    }
}

impl Hash {
    pub fn with_capacity(n: usize) -> Hash {
        Hash {
            map: Map::with_capacity_and_hasher(n, Default::default()),
            ..Hash::default()
        }
    }
    pub fn len(&self) -> usize {
        match &self.chunks {
            Some(c) => c.len(),
            None => self.map.len(),
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
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.chunks {
            Some(c) => c.get(field),
            None => self.map.get(field).map(|v| &**v),
        }
    }
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }
    /// Sets `field`; returns whether it is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Some(c) = &mut self.chunks {
            return c.insert(field, value.into());
        }
        match self.map.get_mut(field) {
            Some(v) => {
                self.body = self.body - v.len() + value.len();
                *v = value.into();
                false
            }
            None => {
                self.body += packed_len(field.len()) + packed_len(value.len());
                self.map.insert(field.into(), value.into());
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
        if let Some(c) = &mut self.chunks {
            return c.remove(field).is_some();
        }
        let removed = if self.big {
            self.map.swap_remove(field)
        } else {
            self.map.shift_remove(field)
        };
        match removed {
            Some(v) => {
                self.body -= packed_len(field.len()) + packed_len(v.len());
                true
            }
            None => false,
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let parts = self.chunks.iter().flat_map(|c| c.iter());
        self.map.iter().map(|(k, v)| (&**k, &**v)).chain(parts)
    }
    /// The fields and values of the directory's parts `r` of a chunked
    /// hash (in RAM), or of the whole hash if it is not chunked.
    pub fn iter_parts(
        &self,
        r: std::ops::Range<usize>,
    ) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match &self.chunks {
            Some(c) => Box::new(c.iter_parts(r)),
            None => Box::new(self.iter()),
        }
    }
    /// The field and value at position `i` (for random picks and scans).
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.chunks {
            Some(c) => c.get_index(i),
            None => self.map.get_index(i).map(|(k, v)| (&**k, &**v)),
        }
    }
    /// One HSCAN step over a chunked hash (`Chunked::scan`): fields and
    /// values with hash at least `from`, and the next cursor; None if the
    /// hash is not chunked (its cursors are positions).
    pub fn chunk_scan(&self, from: u64, count: usize) -> Option<super::chunked::ScanStep<'_>> {
        self.chunks.as_ref().map(|c| c.scan(from, count))
    }
    /// Whether the hash is chunked.
    /// Parts of its directory (0 if not chunked).
    pub fn part_count(&self) -> usize {
        self.chunks.as_ref().map_or(0, |c| c.parts().len())
    }
    pub fn is_chunked(&self) -> bool {
        self.chunks.is_some()
    }
    /// A chunked one of these parts.
    pub(crate) fn from_chunks(big: bool, c: Chunked<Box<[u8]>>) -> Self {
        Self {
            big,
            chunks: Some(Box::new(c)),
            ..Self::default()
        }
    }
    /// Makes the hash chunked (a big one past `CHUNKED_AT`), with
    /// collection id `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        let map = std::mem::take(&mut self.map);
        self.body = 0;
        self.chunks = Some(Box::new(Chunked::build(cid, map)));
    }
    pub(crate) fn update_encoding(&mut self, lim: &EncodingLimits) {
        if !self.big
            && (self.map.len() > lim.hash_entries
                || self
                    .map
                    .iter()
                    .any(|(k, v)| k.len() > lim.hash_value || v.len() > lim.hash_value))
        {
            self.big = true;
        }
    }
}
