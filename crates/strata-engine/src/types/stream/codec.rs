//! A stream as bytes: its packed record (`Stream::encode` / `decode`,
//! the layout in the parent module's doc and docs/format.md), and the
//! views DUMP and RESTORE use: each node as Redis's listpack holds it
//! (`NodeRef`), and a stream built node by node from one (`Builder`).

use super::node::Node;
use super::part::{SPart, BOUND_LEN};
use super::{get_id, node_enc, part_nodes, put_bytes, put_id, EntryRef, Group, Stream, StreamId};
use crate::types::{Malformed, Reader};
use std::collections::{BTreeMap, VecDeque};

/// Appends a node's packed encoding.
fn encode_node(n: &Node, out: &mut Vec<u8>) {
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
        put_bytes(out, n.data_of(e));
    }
}

/// Decodes a node, checking that its entries follow `prev` in order and
/// are at or below `last` (types invariant 3).
fn decode_node(
    r: &mut Reader<'_>,
    prev: &mut Option<StreamId>,
    last: StreamId,
) -> Result<Node, Malformed> {
    let master = get_id(r)?;
    let nf = r.u32()? as usize;
    let mut fields = Vec::with_capacity(nf.min(1024));
    for _ in 0..nf {
        fields.push(Box::<[u8]>::from(r.bytes()?));
    }
    let mut n = Node::with_fields(master, fields);
    n.live = r.u64()?;
    n.deleted = r.u64()?;
    n.lp_entries = r.u64()?;
    let ne = r.u32()? as usize;
    n.entries.reserve_exact(ne.min(1 << 16));
    n.reserve_data(data_bytes(r.b, ne));
    let (mut live, mut dead) = (0, 0);
    for _ in 0..ne {
        let id = get_id(r)?;
        if id < master || prev.is_some_and(|p| id <= p) || id > last {
            return Err(Malformed);
        }
        *prev = Some(id);
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
        n.push_packed(id, data, deleted);
    }
    if (live, dead) != (n.live, n.deleted) || (ne == 0) {
        return Err(Malformed);
    }
    Ok(n)
}

/// The packed pairs' bytes of the `ne` entries at the start of `b` (a
/// decode sizes the node's buffer once); a short count if `b` ends first.
fn data_bytes(b: &[u8], ne: usize) -> usize {
    let mut r = Reader { b };
    let mut total = 0usize;
    for _ in 0..ne {
        let ok = r.take(super::ID_LEN + 1).is_ok();
        match r.bytes() {
            Ok(d) if ok => total += d.len(),
            _ => break,
        }
    }
    total
}

/// A chunk body decoded: the part's first id, its nodes, live entries and
/// encoded bytes.
pub(super) struct PartBody {
    pub first: StreamId,
    pub nodes: VecDeque<Node>,
    pub live: u64,
    pub enc: usize,
}

/// Decodes a stream chunk body (`Stream::encode_part`): the bound (first
/// id, node count) and the nodes, each at or above the first id.
pub(super) fn decode_part(b: &[u8]) -> Result<PartBody, Malformed> {
    let mut r = Reader { b };
    let first = get_id(&mut r)?;
    let nn = r.u32()? as usize;
    let mut nodes = VecDeque::with_capacity(nn.min(1024));
    let (mut prev, mut live, mut enc) = (None, 0, 0);
    for _ in 0..nn {
        let n = decode_node(&mut r, &mut prev, StreamId::MAX)?;
        if n.master < first {
            return Err(Malformed);
        }
        live += n.live;
        enc += node_enc(&n);
        nodes.push_back(n);
    }
    if !r.b.is_empty() {
        return Err(Malformed);
    }
    Ok(PartBody {
        first,
        nodes,
        live,
        enc,
    })
}

/// A chunked stream's head fields after the directory's (docs/format.md,
/// "Chunked streams"): the counters, and the groups.
pub(super) struct Meta {
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub length: u64,
    pub node_count: u64,
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

impl Stream {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        self.encode_counters(out);
        out.extend_from_slice(&(self.node_count as u32).to_le_bytes());
        for n in self.all_nodes() {
            encode_node(n, out);
        }
        self.encode_groups(out);
    }

    fn encode_counters(&self, out: &mut Vec<u8>) {
        put_id(out, self.last_id);
        put_id(out, self.first_id);
        put_id(out, self.max_deleted);
        out.extend_from_slice(&self.entries_added.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
    }

    fn encode_groups(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        for (name, g) in &self.groups {
            g.encode(name, out);
        }
    }

    /// A chunked stream's head fields (`Meta`): counters, node count
    /// (u64 LE), groups (each PEL by its parts' numbers: `pel`).
    pub(super) fn encode_meta(&self, out: &mut Vec<u8>) {
        self.encode_counters(out);
        out.extend_from_slice(&(self.node_count as u64).to_le_bytes());
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        for (name, g) in &self.groups {
            g.encode_head(name, out);
        }
    }

    /// Part `i`'s chunk body (it must be in RAM): its bound, then its
    /// nodes.
    pub(super) fn encode_part_body(&self, i: usize, out: &mut Vec<u8>) {
        let p = &self.parts[i];
        out.reserve(BOUND_LEN + p.enc);
        out.extend_from_slice(&p.bound);
        for n in part_nodes(p) {
            encode_node(n, out);
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
            let n = decode_node(r, &mut prev, s.last_id)?;
            s.push_node(n);
        }
        if s.length != length {
            return Err(Malformed);
        }
        s.groups = decode_groups(r)?;
        Ok(s)
    }

    /// Adds a whole node after every other (decoding, building, cutting a
    /// stream into parts): in a new part when there is none, or when the
    /// stream is chunked and the last part holds `CHUNK_MAX` bytes.
    pub(super) fn push_node(&mut self, n: Node) {
        let full =
            self.chunks.is_some() && self.parts.last().is_some_and(|p| p.enc >= super::CHUNK_MAX);
        if self.parts.is_empty() || full {
            let num = self.take_part_number();
            self.parts.push(SPart::new(num, n.master));
        }
        let e = node_enc(&n);
        let p = self.parts.last_mut().unwrap_or_else(|| unreachable!());
        p.enc += e;
        p.live += n.live;
        p.set_node_count(p.node_count() + 1);
        self.enc += e;
        self.length += n.live;
        self.node_count += 1;
        if let Some(ns) = p.nodes.as_mut() {
            ns.push_back(n);
        }
    }
}

fn decode_groups(r: &mut Reader<'_>) -> Result<BTreeMap<Box<[u8]>, Group>, Malformed> {
    let mut groups = BTreeMap::new();
    let ng = r.u32()? as usize;
    for _ in 0..ng {
        let (name, g) = Group::decode(r)?;
        if groups.insert(name, g).is_some() {
            return Err(Malformed);
        }
    }
    Ok(groups)
}

/// Decodes a chunked stream's head fields (`Stream::encode_meta`).
pub(super) fn decode_meta(b: &[u8]) -> Result<Meta, Malformed> {
    let mut r = Reader { b };
    let m = Meta {
        last_id: get_id(&mut r)?,
        first_id: get_id(&mut r)?,
        max_deleted: get_id(&mut r)?,
        entries_added: r.u64()?,
        length: r.u64()?,
        node_count: r.u64()?,
        groups: decode_groups(&mut r)?,
    };
    if !r.b.is_empty() {
        return Err(Malformed);
    }
    Ok(m)
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
                    data: self.node.data_of(e),
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
    /// The nodes, in id order (DUMP; every part must be in RAM).
    pub fn nodes(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        self.all_nodes().map(|n| NodeRef {
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
    /// The node being built.
    node: Option<Node>,
    last: Option<StreamId>,
}

impl Builder {
    /// Starts a node whose master entry has `fields`.
    pub fn node(&mut self, master: StreamId, fields: Vec<Box<[u8]>>) -> Result<(), Malformed> {
        if self.last.is_some_and(|l| master <= l)
            || self.node.as_ref().is_some_and(|n| n.entries.is_empty())
        {
            return Err(Malformed);
        }
        if let Some(n) = self.node.take() {
            self.s.push_node(n);
        }
        self.node = Some(Node::with_fields(master, fields));
        Ok(())
    }

    /// Adds an entry of `pairs` (fields and values alternating) to the
    /// current node.
    pub fn entry(&mut self, id: StreamId, pairs: &[&[u8]], deleted: bool) -> Result<(), Malformed> {
        let last = self.last;
        let Some(n) = self.node.as_mut() else {
            return Err(Malformed);
        };
        if id < n.master
            || last.is_some_and(|l| id <= l)
            || pairs.is_empty()
            || !pairs.len().is_multiple_of(2)
        {
            return Err(Malformed);
        }
        n.push(id, pairs);
        if deleted {
            n.kill(n.entries.len() - 1);
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
        if let Some(n) = self.node.take() {
            if n.entries.is_empty() {
                return Err(Malformed);
            }
            self.s.push_node(n);
        }
        if length != self.s.length || self.last.is_some_and(|l| l > last_id) {
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

/// Measures a stream chunk body: its bound, live entries and bytes.
pub fn measure_stream_part(body: &[u8]) -> Result<([u8; BOUND_LEN], u32, u32), Malformed> {
    let b = decode_part(body)?;
    Ok((
        super::part::bound_of(b.first, b.nodes.len() as u32),
        u32::try_from(b.live).map_err(|_| Malformed)?,
        u32::try_from(b.enc).map_err(|_| Malformed)?,
    ))
}
