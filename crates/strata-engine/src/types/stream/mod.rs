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
//!
//! Rooms: this file is the stream and its operations; `node` one node and
//! the listpack size model; `group` consumer groups; `codec` the packed
//! record and the DUMP/RESTORE views (`NodeRef`, `Builder`).
//!
//! Packed layout (after the collection header; docs/format.md, "Streams"):
//! last id, first id, max deleted id, entries added (u64), length (u64),
//! node count (u32) and each node (master id, master field names, live and
//! deleted counts, modelled listpack bytes, entries: id, a deleted byte,
//! its packed pairs), then the group count (u32) and
//! each group (`Group::encode`). Ids are ms then seq, u64 LE each.

mod codec;
mod group;
mod node;

pub use codec::{Builder, NodeRef};
pub use group::{Consumer, Group, Nack, ENTRIES_READ_UNKNOWN};

use super::{Malformed, Reader};
use node::{Entry, Node};
use std::collections::{BTreeMap, VecDeque};

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

/// A stream entry id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next id (`streamIncrID`); None past the last one.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId::new(self.ms, self.seq + 1))
        } else if self.ms < u64::MAX {
            Some(StreamId::new(self.ms + 1, 0))
        } else {
            None
        }
    }

    /// The id XADD `*` gives after `self` at `now_ms` (`streamNextID`),
    /// None when `self` is the largest id there is.
    pub fn next_after(self, now_ms: u64) -> Option<StreamId> {
        if now_ms > self.ms {
            Some(StreamId::new(now_ms, 0))
        } else {
            self.incr()
        }
    }

    /// The previous id (`streamDecrID`); None before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId::new(self.ms, self.seq - 1))
        } else if self.ms > 0 {
            Some(StreamId::new(self.ms - 1, u64::MAX))
        } else {
            None
        }
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How XADD and XTRIM trim (`streamAddTrimArgs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// The node limits in force (`stream-node-max-bytes`, `-entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

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

/// Packs field-value pairs as an entry's data: a count of pairs, then each
/// element length-prefixed (u32 LE).
fn pack(pairs: &[&[u8]]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(4 + pairs.iter().map(|p| 4 + p.len()).sum::<usize>());
    v.extend_from_slice(&((pairs.len() / 2) as u32).to_le_bytes());
    for p in pairs {
        put_bytes(&mut v, p);
    }
    v.into()
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

/// Encoded bytes of an entry with `data` (a tombstone keeps its data).
fn entry_enc(data: &[u8]) -> usize {
    ID_LEN + 1 + 4 + data.len()
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    nodes: VecDeque<Node>,
    length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    groups: BTreeMap<Box<[u8]>, Group>,
    /// Bytes of the nodes' encoding (invariant 3).
    enc: usize,
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
        self.nodes.len()
    }

    /// Bytes of the packed encoding after the collection header.
    pub fn body_len(&self) -> usize {
        FIXED_ENC + self.enc + self.groups.values().map(|g| g.enc_len()).sum::<usize>()
    }

    /// Appends an entry of `pairs` (fields and values alternating) at `id`,
    /// which must be above `last_id` (`streamAppendItem`).
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]], lim: NodeLimits) {
        debug_assert!(id > self.last_id);
        let elems: usize = pairs.iter().map(|p| p.len()).sum();
        let fresh = match self.nodes.back() {
            Some(n) => n.full(elems, lim.max_bytes, lim.max_entries),
            None => true,
        };
        if fresh {
            let n = Node::new(id, pairs);
            self.enc += NODE_ENC + n.master_fields.iter().map(|f| 4 + f.len()).sum::<usize>();
            self.nodes.push_back(n);
        }
        let data = pack(pairs);
        self.enc += entry_enc(&data);
        if let Some(n) = self.nodes.back_mut() {
            n.push(id, pairs, data);
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// Index of the node that would hold `id`: the last whose master is at
    /// or below it (0 if none).
    fn node_of(&self, id: StreamId) -> usize {
        self.nodes
            .partition_point(|n| n.master <= id)
            .saturating_sub(1)
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<EntryRef<'_>> {
        let n = self.nodes.get(self.node_of(id))?;
        live_ref(&n.entries[n.find(id)?])
    }

    pub fn exists(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    /// The live entries from `start` to `end` (inclusive), ascending or
    /// descending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = EntryRef<'_>> + '_> {
        if start > end || self.nodes.is_empty() {
            return Box::new(std::iter::empty());
        }
        if !rev {
            let first = self.node_of(start);
            Box::new(
                self.nodes
                    .range(first..)
                    .flat_map(|n| n.entries.iter())
                    .skip_while(move |e| e.id < start)
                    .take_while(move |e| e.id <= end)
                    .filter_map(live_ref),
            )
        } else {
            let last = self.node_of(end);
            Box::new(
                self.nodes
                    .range(..=last)
                    .rev()
                    .flat_map(|n| n.entries.iter().rev())
                    .skip_while(move |e| e.id > end)
                    .take_while(move |e| e.id >= start)
                    .filter_map(live_ref),
            )
        }
    }

    /// The last live entry's id (`streamLastValidID`).
    pub fn last_valid_id(&self) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, true)
            .next()
            .map(|e| e.id)
    }

    fn first_valid_id(&self) -> StreamId {
        self.range(StreamId::MIN, StreamId::MAX, false)
            .next()
            .map_or(StreamId::MAX, |e| e.id)
    }

    /// Deletes the live entry `id` (`streamDeleteItem`): it becomes a
    /// tombstone, or its node goes if it was the node's last live entry.
    fn delete_one(&mut self, id: StreamId) -> bool {
        let ni = self.node_of(id);
        let Some(n) = self.nodes.get_mut(ni) else {
            return false;
        };
        let Some(i) = n.find(id) else {
            return false;
        };
        if n.entries[i].deleted {
            return false;
        }
        if n.live == 1 {
            let n = self.nodes.remove(ni).unwrap_or_else(|| unreachable!());
            self.enc -= node_enc(&n);
        } else {
            n.kill(i);
        }
        self.length -= 1;
        true
    }

    /// XDEL: deletes the live entries among `ids`; returns how many.
    pub fn delete(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first = false;
        for &id in ids {
            if self.delete_one(id) {
                first |= id == self.first_id;
                if id > self.max_deleted {
                    self.max_deleted = id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first {
                self.first_id = self.first_valid_id();
            }
        }
        deleted
    }

    /// Trims as `streamTrim` does: whole nodes from the head while they may
    /// go, then (unless `approx`) entries inside the next node; at most
    /// `limit` entries when `limit` is not 0. Returns how many went.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some(n) = self.nodes.front() {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let entries = n.live;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let whole = match how {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => n.last_id().is_some_and(|l| l < min),
            };
            if whole {
                let n = self.nodes.pop_front().unwrap_or_else(|| unreachable!());
                self.enc -= node_enc(&n);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let Some(n) = self.nodes.front_mut() else {
                break;
            };
            for i in 0..n.entries.len() {
                let stop = match how {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => n.entries[i].id >= min,
                };
                if stop {
                    break;
                }
                if !n.entries[i].deleted {
                    n.kill(i);
                    self.length -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.first_valid_id();
        }
        deleted
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
        self.groups
            .insert(name.into(), Group::new(name, last_id, entries_read));
        true
    }

    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }
}

/// An entry as seen by readers, None for a tombstone.
fn live_ref(e: &Entry) -> Option<EntryRef<'_>> {
    (!e.deleted).then_some(EntryRef {
        id: e.id,
        data: &e.data,
    })
}

/// Encoded bytes of a whole node.
fn node_enc(n: &Node) -> usize {
    NODE_ENC
        + n.master_fields.iter().map(|f| 4 + f.len()).sum::<usize>()
        + n.entries.iter().map(|e| entry_enc(&e.data)).sum::<usize>()
}

#[cfg(test)]
mod tests;
