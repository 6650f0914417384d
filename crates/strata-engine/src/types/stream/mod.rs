//! A stream in RAM (Redis 7.0's `stream`): entries in id order, cut into
//! nodes as Redis cuts its listpacks (`node`), the stream's counters, and
//! its consumer groups (`group`).
//!
//! This module owns the semantics Redis's `t_stream.c` gives the data
//! (appending, deleting, trimming exactly or by whole nodes, the read
//! counters and lag of groups); the command layer parses arguments and
//! writes replies.
//!
//! Invariants:
//! 1. Nodes are in id order and do not overlap; `length` is the number of
//!    live entries over all nodes; a node with no live entry exists only
//!    when exact trimming left one (as in Redis: XDEL of a node's last
//!    live entry removes the node).
//! 2. `last_id` is at least every entry's id (XSETID may raise it);
//!    `first_id` is the first live entry's id (0-0 when empty);
//!    `max_deleted` the largest id XDEL removed (or XSETID set).
//! 3. `enc` is exactly the bytes the nodes take in the packed encoding;
//!    with the groups' own (`Group::enc_len`) and the fixed fields it makes
//!    `encoded_len` exact (types invariant 2).
//! 4. A stream may be empty: it is a key until deleted (XADD with
//!    MAXLEN 0, XDEL of every entry, XGROUP CREATE MKSTREAM).
//! 5. The nodes are held in parts (`part`): one part (or none, when
//!    empty) unless the stream is chunked (`chunks`), when each part is a
//!    flash record of its own and may be on flash. `length`, `enc` and
//!    `node_count` are the sums over the parts, in RAM or not.
//!
//! Rooms: this file is the stream, appending and its groups' counters;
//! `read` entries by id and ranges; `remove` XDEL and trimming; `id` ids
//! and the trimming settings; `node` one node and the listpack size model;
//! `part` a run of nodes; `chunks` a chunked stream's directory (the engine's
//! `Dir`); `plan` which parts a command needs in RAM; `group` consumer
//! groups; `pel` a chunked stream's pending lists in parts; `codec` the packed record, the chunk and head bodies, and the
//! DUMP/RESTORE views (`NodeRef`, `Builder`).
//!
//! Packed layout (after the collection header; docs/format.md, "Streams"):
//! last id, first id, max deleted id, entries added (u64), length (u64),
//! node count (u32) and each node (master id, master field names, live and
//! deleted counts, modelled listpack bytes, entries: id, a deleted byte,
//! its packed pairs), then the group count (u32) and
//! each group (`Group::encode`). Ids are ms then seq, u64 LE each.

mod chunks;
mod codec;
mod dir;
mod group;
mod id;
mod node;
mod part;
mod pel;
mod plan;
mod read;
mod remove;

pub use chunks::{StreamPartInfo, STREAM_DEPTH};
pub use codec::{measure_stream_part, Builder, NodeRef};
pub use group::{Consumer, Group, Nack, ENTRIES_READ_UNKNOWN};
pub use id::{NodeLimits, StreamId, Trim};
pub use part::BOUND_LEN;
pub use pel::{measure_pel_part, record_low as pel_record_low, PEL_DEPTH};
pub use plan::{Planner, StreamNeed};

use super::chunked::CHUNK_MAX;
use super::{Malformed, Reader};
use node::{Entry, Node};
use part::SPart;
use std::collections::BTreeMap;

/// `STREAM_LISTPACK_MAX_SIZE`: the largest listpack (and entry) Redis
/// builds.
pub const LISTPACK_MAX: u64 = 1 << 30;

/// Bytes of an encoded id.
const ID_LEN: usize = 16;
/// Bytes of the fixed fields after the collection header.
const FIXED_ENC: usize = 3 * ID_LEN + 8 + 8 + 4 + 4;
/// Bytes of a node's fixed fields (master id, field count, counts, bytes,
/// entry count).
const NODE_ENC: usize = ID_LEN + 4 + 8 + 8 + 8 + 4;

/// A live entry: its id and its packed field-value pairs.
#[derive(Clone, Copy, Debug)]
pub struct EntryRef<'a> {
    pub id: StreamId,
    data: &'a [u8],
}

impl<'a> EntryRef<'a> {
    /// Number of field-value pairs.
    pub fn pairs(&self) -> usize {
        self.data
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    /// The fields and values, alternating.
    pub fn elems(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut rest = self.data.get(4..).unwrap_or_default();
        std::iter::from_fn(move || {
            let n = rest.get(..4)?;
            let n = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize;
            let e = rest.get(4..4 + n)?;
            rest = &rest[4 + n..];
            Some(e)
        })
    }
}

/// Appends field-value pairs packed as an entry's data: a count of pairs,
/// then each element length-prefixed (u32 LE).
fn pack_into(out: &mut Vec<u8>, pairs: &[&[u8]]) {
    out.reserve(packed_pairs_len(pairs));
    out.extend_from_slice(&((pairs.len() / 2) as u32).to_le_bytes());
    for p in pairs {
        put_bytes(out, p);
    }
}

/// Bytes `pack_into` writes for `pairs`.
fn packed_pairs_len(pairs: &[&[u8]]) -> usize {
    4 + pairs.iter().map(|p| 4 + p.len()).sum::<usize>()
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_le_bytes());
    out.extend_from_slice(&id.seq.to_le_bytes());
}

fn get_id(r: &mut Reader<'_>) -> Result<StreamId, Malformed> {
    Ok(StreamId::new(r.u64()?, r.u64()?))
}

/// Encoded bytes of an entry with `data_len` bytes of packed pairs (a
/// tombstone keeps its data).
fn entry_enc(data_len: usize) -> usize {
    ID_LEN + 1 + 4 + data_len
}

#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// The nodes, in parts (one part unless chunked; `part`).
    parts: Vec<SPart>,
    length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    groups: BTreeMap<Box<[u8]>, Group>,
    /// Bytes of the nodes' encoding (invariant 3).
    enc: usize,
    /// Nodes over all parts.
    node_count: usize,
    /// The directory's bookkeeping, when chunked (`chunks`).
    chunks: Option<Box<chunks::Chunks>>,
    /// The journal's log of changes, while it records (`types::changes`:
    /// by byte spans, while not chunked).
    pub rec: crate::types::changes::Recorder,
}

impl PartialEq for Stream {
    /// The same entries in the same nodes, counters and groups, whatever
    /// the parts (every part in RAM).
    fn eq(&self, o: &Self) -> bool {
        self.length == o.length
            && self.last_id == o.last_id
            && self.first_id == o.first_id
            && self.max_deleted == o.max_deleted
            && self.entries_added == o.entries_added
            && self.groups == o.groups
            && self.node_count == o.node_count
            && self.all_nodes().eq(o.all_nodes())
    }
}

/// The nodes of a part that is in RAM (none for one on flash).
fn part_nodes(p: &SPart) -> impl DoubleEndedIterator<Item = &Node> + '_ {
    p.nodes.iter().flat_map(|ns| ns.iter())
}

impl Stream {
    /// Number of live entries (XLEN).
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Nodes (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// Bytes of the packed encoding after the collection header.
    pub fn body_len(&self) -> usize {
        FIXED_ENC + self.enc + self.groups_enc()
    }

    /// Bytes of the groups' encoding.
    fn groups_enc(&self) -> usize {
        self.groups.values().map(|g| g.enc_len()).sum::<usize>()
    }

    /// Every node of the parts in RAM, in order.
    fn all_nodes(&self) -> impl DoubleEndedIterator<Item = &Node> + '_ {
        self.parts.iter().flat_map(part_nodes)
    }

    /// Index of the part whose ids would hold `id`: the last whose first
    /// id is at or below it (0 if none; part invariant 1).
    fn part_for(&self, id: StreamId) -> usize {
        self.parts
            .partition_point(|p| p.first() <= id)
            .saturating_sub(1)
    }

    /// The part and node that would hold `id` (None if none could, or the
    /// part is not in RAM).
    fn locate(&self, id: StreamId) -> Option<(usize, usize)> {
        let pi = self.part_for(id);
        let ns = self.parts.get(pi)?.nodes.as_deref()?;
        let ni = ns.partition_point(|n| n.master <= id).checked_sub(1)?;
        Some((pi, ni))
    }

    /// Appends an entry of `pairs` (fields and values alternating) at `id`,
    /// which must be above `last_id` (`streamAppendItem`). The last part
    /// must be in RAM.
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]], lim: NodeLimits) {
        debug_assert!(id > self.last_id);
        let elems: usize = pairs.iter().map(|p| p.len()).sum();
        let last_node = self
            .parts
            .last()
            .and_then(|p| p.nodes.as_deref())
            .and_then(|ns| ns.back());
        debug_assert!(
            self.parts.last().is_none_or(|p| p.is_resident()),
            "last part not loaded"
        );
        let fresh = last_node.is_none_or(|n| n.full(elems, lim.max_bytes, lim.max_entries));
        if fresh {
            // The node before is full: its spare capacity goes back.
            if let Some(n) = self
                .parts
                .last_mut()
                .and_then(|p| p.nodes.as_mut())
                .and_then(|ns| ns.back_mut())
            {
                n.shrink();
            }
            let new_part = match self.parts.last() {
                None => true,
                Some(p) => !p.is_resident() || (self.chunks.is_some() && p.enc >= CHUNK_MAX),
            };
            if new_part {
                let num = self.take_part_number();
                self.parts.push(SPart::new(num, id));
            }
            let n = Node::new(id, pairs);
            let e = NODE_ENC + n.master_fields.iter().map(|f| 4 + f.len()).sum::<usize>();
            let p = self.parts.last_mut().unwrap_or_else(|| unreachable!());
            if let Some(ns) = p.nodes.as_mut() {
                ns.push_back(n);
            }
            p.enc += e;
            p.set_node_count(p.node_count() + 1);
            self.enc += e;
            self.node_count += 1;
        }
        let e = entry_enc(packed_pairs_len(pairs));
        let pi = self.parts.len() - 1;
        let p = &mut self.parts[pi];
        if let Some(n) = p.nodes.as_mut().and_then(|ns| ns.back_mut()) {
            n.push(id, pairs);
        }
        p.enc += e;
        p.live += 1;
        self.enc += e;
        self.part_changed(pi);
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// Whether a tombstone may lie at or after `start`
    /// (`streamRangeHasTombstones` with no end).
    fn tombstones_from(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() || self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted
    }

    /// The logical read counter of `id`, if it can be known
    /// (`streamEstimateDistanceFromFirstEverEntry`).
    pub fn counter_of(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(self.entries_added - self.length),
                std::cmp::Ordering::Equal => return Some(self.entries_added - self.length + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// A group's lag (`streamReplyWithCGLag`), None if it cannot be known.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != ENTRIES_READ_UNKNOWN && !self.tombstones_from(g.last_id) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        self.counter_of(g.last_id)
            .map(|r| self.entries_added as i64 - r as i64)
    }

    /// Moves group `name`'s last id to `id`, read by it, keeping its read
    /// counter (as `streamReplyWithRange` does for each entry it serves).
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let tomb = self.tombstones_from(id);
        let counter = self.counter_of(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(name) else {
            return;
        };
        if id <= g.last_id {
            return;
        }
        if g.entries_read != ENTRIES_READ_UNKNOWN && !tomb {
            g.entries_read += 1;
        } else if added != 0 {
            g.entries_read = counter.map_or(ENTRIES_READ_UNKNOWN, |c| c as i64);
        }
        g.last_id = id;
    }

    pub fn groups(&self) -> impl Iterator<Item = (&[u8], &Group)> + '_ {
        self.groups.iter().map(|(k, g)| (&k[..], g))
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    /// Creates group `name`; false if it exists.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        let mut g = Group::new(name, last_id, entries_read);
        if let Some(c) = self.chunks.as_deref_mut() {
            g.parts = Some(Box::new(pel::PelParts::new(c.next_group)));
            c.next_group += 1;
        }
        self.groups.insert(name.into(), g);
        true
    }

    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        let Some(g) = self.groups.remove(name) else {
            return false;
        };
        if let (Some(c), Some(p)) = (self.chunks.as_deref_mut(), g.parts) {
            c.dropped.extend(p.dropped);
            c.dropped.extend(p.parts.iter().filter_map(|x| x.loc));
        }
        true
    }
}

impl Stream {
    /// The same stream, not chunked (every part must be in RAM): a copy
    /// for another key (COPY, RENAME, MOVE), whose records name their key.
    pub fn detached(&self) -> Stream {
        let mut s = Stream {
            last_id: self.last_id,
            first_id: self.first_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
            groups: self.groups.clone(),
            ..Stream::default()
        };
        for g in s.groups.values_mut() {
            g.parts = None;
        }
        for n in self.parts.iter().flat_map(part_nodes) {
            s.push_node(n.clone());
        }
        s
    }
}

/// An entry as seen by readers, None for a tombstone.
fn live_ref<'a>((n, e): (&'a Node, &'a Entry)) -> Option<EntryRef<'a>> {
    (!e.deleted).then(|| EntryRef {
        id: e.id,
        data: n.data_of(e),
    })
}

/// Encoded bytes of a whole node.
fn node_enc(n: &Node) -> usize {
    NODE_ENC
        + n.master_fields.iter().map(|f| 4 + f.len()).sum::<usize>()
        + n.entries
            .iter()
            .map(|e| entry_enc(e.data_len()))
            .sum::<usize>()
}

#[cfg(test)]
mod tests;
