//! A hash in RAM: fields in insertion order (as Redis's listpack keeps
//! them while the hash is small), with O(1) lookup.

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
}

impl PartialEq for Hash {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big
            && self.map.len() == o.map.len()
            && self.map.iter().all(|(k, v)| o.map.get(k) == Some(v))
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
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub(crate) fn body_len(&self) -> usize {
        self.body
    }
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.map.get(field).map(|v| &**v)
    }
    pub fn contains(&self, field: &[u8]) -> bool {
        self.map.contains_key(field)
    }
    /// Sets `field`; returns whether it is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
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
        self.map.iter().map(|(k, v)| (&**k, &**v))
    }
    /// The field and value at position `i` (for random picks and scans).
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.map.get_index(i).map(|(k, v)| (&**k, &**v))
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
