//! Reading a stream: an entry by id, ranges both ways, and the first and
//! last live entries. Found by binary searches over the parts, their
//! nodes and the nodes' entries; the parts read must be in RAM (a chunked
//! stream's command loads them first: `plan`).

use super::node::{Entry, Node};
use super::{live_ref, part_nodes, EntryRef, Stream, StreamId};

impl Stream {
    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<EntryRef<'_>> {
        let (pi, ni) = self.locate(id)?;
        let n = self.parts[pi].nodes.as_deref()?.get(ni)?;
        live_ref((n, &n.entries[n.find(id)?]))
    }

    pub fn exists(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    /// The live entries from `start` to `end` (inclusive), ascending or
    /// descending. The parts holding them must be in RAM (a chunked
    /// stream's command loads them first: `plan`).
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = EntryRef<'_>> + '_> {
        if start > end || self.parts.is_empty() {
            return Box::new(std::iter::empty());
        }
        if !rev {
            Box::new(
                self.entries_from(start)
                    .take_while(move |(_, e)| e.id <= end)
                    .filter_map(live_ref),
            )
        } else {
            Box::new(
                self.entries_back_from(end)
                    .take_while(move |(_, e)| e.id >= start)
                    .filter_map(live_ref),
            )
        }
    }

    /// Every entry (tombstones too) from the first at or after `start`, in
    /// order, found by binary searches (parts, nodes, entries). It ends at
    /// the first part on flash with a live entry: the caller's plan loaded
    /// the parts it reads (so walking on past a cold stream's parts costs
    /// nothing); a part on flash without one is passed over.
    pub(super) fn entries_from(
        &self,
        start: StreamId,
    ) -> impl Iterator<Item = (&Node, &Entry)> + '_ {
        let pi = self.part_for(start);
        let (ni, ei) = match self.parts.get(pi).and_then(|p| p.nodes.as_deref()) {
            Some(ns) => {
                let ni = ns.partition_point(|n| n.master <= start).saturating_sub(1);
                let ei = ns
                    .get(ni)
                    .map_or(0, |n| n.entries.partition_point(|e| e.id < start));
                (ni, ei)
            }
            None => (0, 0),
        };
        self.parts[pi.min(self.parts.len())..]
            .iter()
            .take_while(|p| p.is_resident() || p.live == 0)
            .enumerate()
            .flat_map(move |(k, p)| {
                let (ni, ei) = if k == 0 { (ni, ei) } else { (0, 0) };
                p.nodes.as_deref().into_iter().flat_map(move |ns| {
                    ns.range(ni.min(ns.len())..)
                        .enumerate()
                        .flat_map(move |(j, n)| {
                            let from = if j == 0 { ei.min(n.entries.len()) } else { 0 };
                            n.entries[from..].iter().map(move |e| (n, e))
                        })
                })
            })
    }

    /// Every entry (tombstones too) at or before `end`, last first (as
    /// `entries_from`).
    pub(super) fn entries_back_from(
        &self,
        end: StreamId,
    ) -> impl Iterator<Item = (&Node, &Entry)> + '_ {
        let pi = self.part_for(end);
        let (nn, ei) = match self.parts.get(pi).and_then(|p| p.nodes.as_deref()) {
            Some(ns) => {
                let nn = ns.partition_point(|n| n.master <= end);
                let ei = nn
                    .checked_sub(1)
                    .map_or(0, |i| ns[i].entries.partition_point(|e| e.id <= end));
                (nn, ei)
            }
            None => (0, 0),
        };
        let upto = if self.parts.is_empty() { 0 } else { pi + 1 };
        self.parts[..upto]
            .iter()
            .rev()
            .take_while(|p| p.is_resident() || p.live == 0)
            .enumerate()
            .flat_map(move |(k, p)| {
                p.nodes.as_deref().into_iter().flat_map(move |ns| {
                    let (nn, ei) = if k == 0 {
                        (nn, ei)
                    } else {
                        (ns.len(), usize::MAX)
                    };
                    ns.range(..nn.min(ns.len()))
                        .rev()
                        .enumerate()
                        .flat_map(move |(j, n)| {
                            let to = if j == 0 {
                                ei.min(n.entries.len())
                            } else {
                                n.entries.len()
                            };
                            n.entries[..to].iter().rev().map(move |e| (n, e))
                        })
                })
            })
    }

    /// The last live entry's id (`streamLastValidID`); the last part with
    /// a live entry must be in RAM.
    pub fn last_valid_id(&self) -> Option<StreamId> {
        let p = self.parts.iter().rev().find(|p| p.live > 0)?;
        debug_assert!(p.is_resident(), "last live part not loaded");
        part_nodes(p)
            .rev()
            .flat_map(|n| n.entries.iter().rev())
            .find(|e| !e.deleted)
            .map(|e| e.id)
    }

    /// The first live entry's id (the first part with one must be in RAM).
    pub(super) fn first_valid_id(&self) -> StreamId {
        let Some(p) = self.parts.iter().find(|p| p.live > 0) else {
            return StreamId::MAX;
        };
        debug_assert!(p.is_resident(), "first live part not loaded");
        part_nodes(p)
            .flat_map(|n| n.entries.iter())
            .find(|e| !e.deleted)
            .map_or(p.first(), |e| e.id)
    }
}
