//! A stream as bytes: its packed record (`Stream::encode` / `decode`,
//! the layout in the parent module's doc and docs/format.md), and the
//! views DUMP and RESTORE use: each node as Redis's listpack holds it
//! (`NodeRef`), and a stream built node by node from one (`Builder`).

use super::node::{Entry, Node};
use super::{
    entry_enc, get_id, node_enc, pack, put_bytes, put_id, EntryRef, Group, Stream, StreamId,
    NODE_ENC,
};
use crate::types::{Malformed, Reader};

impl Stream {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_id(out, self.last_id);
        put_id(out, self.first_id);
        put_id(out, self.max_deleted);
        out.extend_from_slice(&self.entries_added.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&(self.nodes.len() as u32).to_le_bytes());
        for n in &self.nodes {
            put_id(out, n.master);
            out.extend_from_slice(&(n.master_fields.len() as u32).to_le_bytes());
            for f in &n.master_fields {
                put_bytes(out, f);
            }
            out.extend_from_slice(&n.live.to_le_bytes());
            out.extend_from_slice(&n.deleted.to_le_bytes());
            out.extend_from_slice(&n.lp_entries.to_le_bytes());
            out.extend_from_slice(&(n.entries.len() as u32).to_le_bytes());
            for e in &n.entries {
                put_id(out, e.id);
                out.push(e.deleted as u8);
                put_bytes(out, &e.data);
            }
        }
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        for (name, g) in &self.groups {
            g.encode(name, out);
        }
    }

    /// Decodes what `encode` wrote, checking the invariants it relies on
    /// (types invariant 3).
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Stream, Malformed> {
        let mut s = Stream {
            last_id: get_id(r)?,
            first_id: get_id(r)?,
            max_deleted: get_id(r)?,
            entries_added: r.u64()?,
            ..Stream::default()
        };
        let length = r.u64()?;
        let nn = r.u32()? as usize;
        let mut prev: Option<StreamId> = None;
        for _ in 0..nn {
            let master = get_id(r)?;
            let nf = r.u32()? as usize;
            let mut fields = Vec::with_capacity(nf.min(1024));
            for _ in 0..nf {
                fields.push(Box::<[u8]>::from(r.bytes()?));
            }
            let mut n = Node {
                master,
                master_fields: fields,
                entries: Vec::new(),
                live: r.u64()?,
                deleted: r.u64()?,
                lp_entries: r.u64()?,
            };
            let ne = r.u32()? as usize;
            let (mut live, mut dead) = (0, 0);
            for _ in 0..ne {
                let id = get_id(r)?;
                if id < master || prev.is_some_and(|p| id <= p) || id > s.last_id {
                    return Err(Malformed);
                }
                prev = Some(id);
                let deleted = match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(Malformed),
                };
                let data = r.bytes()?;
                check_pairs(data)?;
                if deleted {
                    dead += 1;
                } else {
                    live += 1;
                }
                n.entries.push(Entry {
                    id,
                    data: data.into(),
                    deleted,
                });
            }
            if (live, dead) != (n.live, n.deleted) || (ne == 0) {
                return Err(Malformed);
            }
            s.length += live;
            s.enc += node_enc(&n);
            s.nodes.push_back(n);
        }
        if s.length != length {
            return Err(Malformed);
        }
        let ng = r.u32()? as usize;
        for _ in 0..ng {
            let (name, g) = Group::decode(r)?;
            if s.groups.insert(name, g).is_some() {
                return Err(Malformed);
            }
        }
        Ok(s)
    }
}

/// A node as DUMP writes it (one listpack of Redis's radix tree).
pub struct NodeRef<'a> {
    pub master: StreamId,
    pub master_fields: &'a [Box<[u8]>],
    pub live: u64,
    pub deleted: u64,
    node: &'a Node,
}

impl<'a> NodeRef<'a> {
    /// Every entry, tombstones included, with whether it is deleted.
    pub fn entries(&self) -> impl Iterator<Item = (EntryRef<'a>, bool)> + 'a {
        self.node.entries.iter().map(|e| {
            (
                EntryRef {
                    id: e.id,
                    data: &e.data,
                },
                e.deleted,
            )
        })
    }

    /// Whether the entry's field names are the master's (listpack flag
    /// SAMEFIELDS: they are left out).
    pub fn same_fields(&self, e: &EntryRef<'_>) -> bool {
        let pairs: Vec<&[u8]> = e.elems().collect();
        self.node.same_fields(&pairs)
    }
}

impl Stream {
    /// The nodes, in id order (DUMP).
    pub fn nodes(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        self.nodes.iter().map(|n| NodeRef {
            master: n.master,
            master_fields: &n.master_fields,
            live: n.live,
            deleted: n.deleted,
            node: n,
        })
    }
}

/// Builds a stream node by node, entry by entry (RESTORE of a payload of
/// Redis's), checking what the stream's invariants need.
#[derive(Default)]
pub struct Builder {
    s: Stream,
    last: Option<StreamId>,
}

impl Builder {
    /// Starts a node whose master entry has `fields`.
    pub fn node(&mut self, master: StreamId, fields: Vec<Box<[u8]>>) -> Result<(), Malformed> {
        if self.last.is_some_and(|l| master <= l)
            || self.s.nodes.back().is_some_and(|n| n.entries.is_empty())
        {
            return Err(Malformed);
        }
        self.s.enc += NODE_ENC + fields.iter().map(|f| 4 + f.len()).sum::<usize>();
        self.s.nodes.push_back(Node::with_fields(master, fields));
        Ok(())
    }

    /// Adds an entry of `pairs` (fields and values alternating) to the
    /// current node.
    pub fn entry(&mut self, id: StreamId, pairs: &[&[u8]], deleted: bool) -> Result<(), Malformed> {
        let last = self.last;
        let Some(n) = self.s.nodes.back_mut() else {
            return Err(Malformed);
        };
        if id < n.master
            || last.is_some_and(|l| id <= l)
            || pairs.is_empty()
            || !pairs.len().is_multiple_of(2)
        {
            return Err(Malformed);
        }
        let data = pack(pairs);
        self.s.enc += entry_enc(&data);
        n.push(id, pairs, data);
        if deleted {
            n.kill(n.entries.len() - 1);
        } else {
            self.s.length += 1;
        }
        self.last = Some(id);
        Ok(())
    }

    /// The stream, with its counters as the payload gives them.
    pub fn finish(
        mut self,
        length: u64,
        last_id: StreamId,
        first_id: StreamId,
        max_deleted: StreamId,
        entries_added: u64,
    ) -> Result<Stream, Malformed> {
        if self.s.nodes.back().is_some_and(|n| n.entries.is_empty())
            || length != self.s.length
            || self.last.is_some_and(|l| l > last_id)
        {
            return Err(Malformed);
        }
        self.s.last_id = last_id;
        self.s.first_id = first_id;
        self.s.max_deleted = max_deleted;
        self.s.entries_added = entries_added;
        Ok(self.s)
    }
}

/// Checks packed pairs: a count, then that many pairs exactly.
fn check_pairs(d: &[u8]) -> Result<(), Malformed> {
    let e = EntryRef {
        id: StreamId::MIN,
        data: d,
    };
    let n = e.pairs();
    if d.len() < 4 || n == 0 {
        return Err(Malformed);
    }
    let (count, bytes) = e.elems().fold((0, 4), |(c, b), x| (c + 1, b + 4 + x.len()));
    if count != 2 * n || bytes != d.len() {
        return Err(Malformed);
    }
    Ok(())
}
