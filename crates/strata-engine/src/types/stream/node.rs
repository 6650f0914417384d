//! One node of a stream: a run of consecutive entries, as Redis keeps them
//! in one listpack under one radix-tree key (its *master* id). Nodes are
//! where Redis's observable behaviour depends on layout: `MAXLEN ~` and
//! `MINID ~` drop whole nodes only, XDEL of a node's last live entry drops
//! the node with its tombstones, and XINFO counts nodes. So a node here is
//! cut exactly where Redis cuts its listpack: when it holds
//! `stream-node-max-entries` entries (live and deleted) or when its
//! listpack's bytes plus the new entry's field and value bytes reach
//! `stream-node-max-bytes`. The listpack's size is *modelled* (`lp_bytes`):
//! the encoding sizes of listpack.c, not a listpack.
//!
//! Invariants:
//! 1. `entries` are in id order, all above `master` or equal to it (the
//!    first entry added to a node is its master).
//! 2. A deleted entry stays in `entries` as a tombstone (`deleted`, its
//!    data kept), as Redis keeps deleted entries flagged in the listpack
//!    (DUMP writes them); `live` and `deleted` count them.
//! 3. `lp_entries` is the modelled listpack bytes of every entry ever
//!    added to the node (a tombstone keeps its bytes, as in Redis).
//! 4. `data` holds the packed pairs of every entry, in entry order, each
//!    entry naming its own bytes there.

use super::StreamId;

/// Listpack bytes of an integer element (encoding + back length).
pub(super) fn lp_int(v: i64) -> usize {
    let enc = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    };
    enc + backlen(enc)
}

/// Listpack bytes of a string element: an integer if listpack.c would
/// store it as one (a canonical decimal i64), else length header + bytes.
pub(super) fn lp_str(s: &[u8]) -> usize {
    if crate::types::is_int_member(s) {
        if let Some(v) = std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
        {
            return lp_int(v);
        }
    }
    let enc = match s.len() {
        0..=63 => 1 + s.len(),
        64..=4095 => 2 + s.len(),
        n => 5 + n,
    };
    enc + backlen(enc)
}

fn backlen(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// Listpack header (total bytes, element count) and end byte.
const LP_EMPTY: usize = 7;

/// Flag of an entry whose fields are the master's (listpack encoding).
const SAMEFIELDS: i64 = 2;

/// An entry of a node: its id, and where its packed field-value pairs
/// (`pack_into`) are in the node's `data`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Entry {
    pub id: StreamId,
    off: u32,
    len: u32,
    pub deleted: bool,
}

impl Entry {
    /// Bytes of the packed pairs.
    pub fn data_len(&self) -> usize {
        self.len as usize
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Node {
    pub master: StreamId,
    /// The field names of the node's first entry (its master entry).
    pub master_fields: Vec<Box<[u8]>>,
    pub entries: Vec<Entry>,
    /// Every entry's packed pairs, one after the other (invariant 4): one
    /// allocation per node, not one per entry.
    data: Vec<u8>,
    pub live: u64,
    pub deleted: u64,
    /// Modelled listpack bytes of the entries (invariant 3).
    pub lp_entries: u64,
}

impl Node {
    /// A node whose master entry takes its fields from `pairs`.
    pub fn new(master: StreamId, pairs: &[&[u8]]) -> Node {
        Node::with_fields(
            master,
            pairs.iter().step_by(2).map(|f| Box::from(*f)).collect(),
        )
    }

    /// A node whose master entry has `fields`.
    pub fn with_fields(master: StreamId, fields: Vec<Box<[u8]>>) -> Node {
        Node {
            master,
            master_fields: fields,
            entries: Vec::new(),
            data: Vec::new(),
            live: 0,
            deleted: 0,
            lp_entries: 0,
        }
    }

    /// The modelled `lpBytes` of the node's listpack.
    pub fn lp_bytes(&self) -> u64 {
        let master: usize = self.master_fields.iter().map(|f| lp_str(f)).sum();
        (LP_EMPTY
            + lp_int(self.live as i64)
            + lp_int(self.deleted as i64)
            + lp_int(self.master_fields.len() as i64)
            + master
            + lp_int(0)) as u64
            + self.lp_entries
    }

    /// Whether Redis would start a new node rather than add an entry whose
    /// fields and values total `elems` bytes (`streamAppendItem`).
    pub fn full(&self, elems: usize, max_bytes: u64, max_entries: u64) -> bool {
        let max_bytes = if max_bytes == 0 || max_bytes > super::LISTPACK_MAX {
            super::LISTPACK_MAX
        } else {
            max_bytes
        };
        if self.lp_bytes() + elems as u64 >= max_bytes {
            return true;
        }
        max_entries != 0 && self.live + self.deleted >= max_entries
    }

    /// Whether an entry of `pairs` would be written with the master's
    /// field names left out (listpack flag SAMEFIELDS).
    pub fn same_fields(&self, pairs: &[&[u8]]) -> bool {
        pairs.len() / 2 == self.master_fields.len()
            && pairs
                .iter()
                .step_by(2)
                .zip(&self.master_fields)
                .all(|(a, b)| *a == &b[..])
    }

    /// The packed pairs of entry `e` (of this node).
    pub fn data_of(&self, e: &Entry) -> &[u8] {
        self.data
            .get(e.off as usize..e.off as usize + e.len as usize)
            .unwrap_or_default()
    }

    /// Adds an entry whose packed pairs are `data` (decoding).
    pub fn push_packed(&mut self, id: StreamId, data: &[u8], deleted: bool) {
        let off = self.data.len() as u32;
        self.data.extend_from_slice(data);
        self.entries.push(Entry {
            id,
            off,
            len: data.len() as u32,
            deleted,
        });
    }

    /// Makes room for `n` more bytes of packed pairs, exactly.
    pub fn reserve_data(&mut self, n: usize) {
        self.data.reserve_exact(n);
    }

    /// Gives back the spare capacity (a node that is full).
    pub fn shrink(&mut self) {
        self.data.shrink_to_fit();
        self.entries.shrink_to_fit();
    }

    /// Adds an entry (after every entry of the node), counting its
    /// modelled bytes.
    pub fn push(&mut self, id: StreamId, pairs: &[&[u8]]) {
        let n = pairs.len() / 2;
        let same = self.same_fields(pairs);
        let mut b = lp_int(if same { SAMEFIELDS } else { 0 })
            + lp_int(id.ms.wrapping_sub(self.master.ms) as i64)
            + lp_int(id.seq.wrapping_sub(self.master.seq) as i64);
        let mut parts = n + 3;
        if !same {
            b += lp_int(n as i64);
            b += pairs.iter().step_by(2).map(|f| lp_str(f)).sum::<usize>();
            parts += n + 1;
        }
        b += pairs
            .iter()
            .skip(1)
            .step_by(2)
            .map(|v| lp_str(v))
            .sum::<usize>();
        b += lp_int(parts as i64);
        self.lp_entries += b as u64;
        self.live += 1;
        let off = self.data.len() as u32;
        super::pack_into(&mut self.data, pairs);
        self.entries.push(Entry {
            id,
            off,
            len: self.data.len() as u32 - off,
            deleted: false,
        });
    }

    /// Position of the entry `id` (live or not).
    pub fn find(&self, id: StreamId) -> Option<usize> {
        self.entries.binary_search_by(|e| e.id.cmp(&id)).ok()
    }

    /// The id of the last entry, tombstones included (`lpGetEdgeStreamID`).
    pub fn last_id(&self) -> Option<StreamId> {
        self.entries.last().map(|e| e.id)
    }

    /// Marks entry `i` deleted.
    pub fn kill(&mut self, i: usize) {
        self.entries[i].deleted = true;
        self.live -= 1;
        self.deleted += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_sizes_follow_listpack_c() {
        assert_eq!(lp_int(0), 2);
        assert_eq!(lp_int(127), 2);
        assert_eq!(lp_int(128), 3);
        assert_eq!(lp_int(-1), 3);
        assert_eq!(lp_int(40000), 5);
        assert_eq!(lp_int(i64::MAX), 10);
        assert_eq!(lp_str(b"12"), 2);
        assert_eq!(lp_str(b"012"), 5);
        assert_eq!(lp_str(b""), 2);
        assert_eq!(lp_str(&[b'a'; 63]), 65);
        assert_eq!(lp_str(&[b'a'; 64]), 67);
        assert_eq!(lp_str(&[b'a'; 200]), 204);
    }
}
