//! Which parts of a chunked stream a command needs in RAM (`StreamNeed`),
//! decided from what RAM holds of every part (its first id, live entries
//! and node count) before anything is read. Planned and run under the
//! same lock, so the command finds what it reads in RAM; a part it does
//! not name is never read (`Stream::range` and `trim` rely on it).

use super::{Stream, StreamId, Trim};
use smallvec::SmallVec;
use std::sync::Arc;

/// Part indexes, in order.
pub type Parts = SmallVec<[usize; 4]>;

/// What a stream command reads or changes.
#[derive(Clone, Debug)]
pub enum StreamNeed {
    /// XADD: the last part (the entry joins its last node or starts one),
    /// and what trimming (how, limit) the stream one entry longer reaches.
    Append(Option<(Trim, u64)>),
    /// XTRIM (how, limit): the parts trimming changes without dropping
    /// them whole, and the one where the first live entry is then. (Whether
    /// it is approximate does not change which parts: the part trimming
    /// stops in is read either way.)
    Trim(Trim, u64),
    /// The entries of these ids (XCLAIM, a consumer's history); with
    /// `deletes` (XDEL), also the parts where the first live entry may be
    /// once they are gone.
    Ids { ids: Vec<StreamId>, deletes: bool },
    /// The live entries from `start` to `end`, at most `count`, ascending
    /// or (`rev`) descending (XRANGE, XREVRANGE, XREAD, XREADGROUP).
    Range {
        start: StreamId,
        end: StreamId,
        rev: bool,
        count: u64,
    },
    /// The first and last live entries (XINFO STREAM, XSETID, whether
    /// XREAD has anything to serve).
    Edges,
    /// The parts where a range starts and ends (a whole range read in
    /// batches counts its entries from them first: `Stream::range_len`).
    Ends { start: StreamId, end: StreamId },
    /// Every part (DUMP, copies).
    Whole,
    /// What the command works out from the stream under the lock (the ids
    /// an XREAD resolved at its first try, a group's last id, a
    /// consumer's pending ids).
    Planned(Planner),
}

/// Works out needs from the stream under the lock.
pub type PlanFn = dyn Fn(&Stream) -> Vec<StreamNeed> + Send + Sync;

/// A need computed from the stream itself (`StreamNeed::Planned`).
#[derive(Clone)]
pub struct Planner(pub Arc<PlanFn>);

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Planner")
    }
}

impl Stream {
    /// The parts `needs` name, in order, each once.
    pub fn need_parts(&self, needs: &[StreamNeed]) -> Parts {
        let mut out = Parts::new();
        if self.parts.is_empty() {
            return out;
        }
        for need in needs {
            match need {
                StreamNeed::Whole => out.extend(0..self.parts.len()),
                StreamNeed::Append(trim) => {
                    out.push(self.parts.len() - 1);
                    if let Some((how, limit)) = *trim {
                        self.trim_parts(how, limit, self.length + 1, &mut out);
                    }
                }
                StreamNeed::Trim(how, limit) => {
                    self.trim_parts(*how, *limit, self.length, &mut out)
                }
                StreamNeed::Ids { ids, deletes } => self.id_parts(ids, *deletes, &mut out),
                StreamNeed::Range {
                    start,
                    end,
                    rev,
                    count,
                } => self.range_parts(*start, *end, *rev, *count, &mut out),
                StreamNeed::Planned(p) => out.extend(self.need_parts(&(p.0)(self))),
                StreamNeed::Ends { start, end } => {
                    if start <= end {
                        out.push(self.part_for(*start));
                        out.push(self.part_for(*end));
                    }
                }
                StreamNeed::Edges => {
                    out.extend(self.parts.iter().position(|p| p.live > 0));
                    out.extend(self.parts.iter().rposition(|p| p.live > 0));
                }
            }
        }
        if out.len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
        out
    }

    /// The first part from `i` on with a live entry.
    fn live_from(&self, i: usize) -> Option<usize> {
        (i..self.parts.len()).find(|&j| self.parts[j].live > 0)
    }

    /// The parts trimming reaches (`Stream::trim`) from `length` entries:
    /// the first it cannot drop whole, unread; and the first live part
    /// after it if that part may be emptied (the new first entry), or the
    /// first live part where trimming stopped after dropping some.
    fn trim_parts(&self, how: Trim, limit: u64, length: u64, out: &mut Parts) {
        let (mut len, mut deleted) = (length, 0u64);
        for i in 0..self.parts.len() {
            let p = &self.parts[i];
            if p.node_count() == 0 {
                continue;
            }
            if self.trim_stops(i, len, how) {
                if deleted > 0 {
                    out.extend(self.live_from(i));
                }
                return;
            }
            if self.whole_part(i, len, deleted, how, limit) {
                len -= p.live;
                deleted += p.live;
                continue;
            }
            out.push(i);
            let keeps = matches!(how, Trim::MaxLen(max) if len - p.live < max);
            if !keeps {
                out.extend(self.live_from(i + 1));
            }
            return;
        }
    }

    fn id_parts(&self, ids: &[StreamId], deletes: bool, out: &mut Parts) {
        out.extend(ids.iter().map(|&id| self.part_for(id)));
        if !deletes || !ids.contains(&self.first_id) {
            return;
        }
        let mut i = self.part_for(self.first_id);
        while i < self.parts.len() {
            out.push(i);
            let here = ids.iter().filter(|&&id| self.part_for(id) == i).count() as u64;
            if self.parts[i].live > here {
                return;
            }
            i += 1;
        }
    }

    /// The parts of a range: from the part where it starts, until those
    /// after it hold `count` live entries. The first part's entries in the
    /// range are counted once it is in RAM (a second round of planning:
    /// until then it alone is named), so a short range inside one part
    /// reads that part only; and only when the next part is on flash (else
    /// naming it costs nothing).
    fn range_parts(&self, start: StreamId, end: StreamId, rev: bool, count: u64, out: &mut Parts) {
        if start > end || count == 0 {
            return;
        }
        let (a, b) = (self.part_for(start), self.part_for(end));
        let mut got = 0u64;
        let order: Box<dyn Iterator<Item = usize>> = if rev {
            Box::new((a..=b).rev())
        } else {
            Box::new(a..=b)
        };
        let mut order = order.peekable();
        let mut first = true;
        while let Some(i) = order.next() {
            out.push(i);
            // `got` is a lower bound of the entries the named parts hold.
            // The first part's are counted only when that decides whether
            // the next part must be read (it is on flash): else 0 will do.
            let next_cold = order.peek().is_some_and(|&j| !self.parts[j].is_resident());
            got += if !first {
                self.parts[i].live
            } else if next_cold {
                match self.live_at_end(start, end, rev, count) {
                    Some(n) => n,
                    None => return,
                }
            } else {
                0
            };
            first = false;
            if got >= count {
                return;
            }
        }
    }
}

impl Stream {
    /// The live entries from `start` to `end`, counted from the parts'
    /// counts and the two end parts (which must be in RAM: `Ends`); None
    /// if one is not.
    pub fn range_len(&self, start: StreamId, end: StreamId) -> Option<u64> {
        if start > end || self.parts.is_empty() {
            return Some(0);
        }
        let (a, b) = (self.part_for(start), self.part_for(end));
        if a == b {
            return self.live_at_end(start, end, false, u64::MAX);
        }
        let middle: u64 = self.parts[a + 1..b].iter().map(|p| p.live).sum();
        Some(
            self.live_at_end(start, end, false, u64::MAX)?
                + middle
                + self.live_at_end(start, end, true, u64::MAX)?,
        )
    }

    /// The live entries from `start` to `end` in the part where the range
    /// starts (or, `rev`, ends), at most `cap`, walked from that end of the
    /// range: O(cap), not O(part). None if that part is on flash.
    fn live_at_end(&self, start: StreamId, end: StreamId, rev: bool, cap: u64) -> Option<u64> {
        let i = self.part_for(if rev { end } else { start });
        self.parts.get(i)?.nodes.as_ref()?;
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        // Only this part's entries (the iterators go on past it).
        let n = if rev {
            let low = start.max(self.parts[i].first());
            self.entries_back_from(end)
                .take_while(|(_, e)| e.id >= low)
                .filter(|(_, e)| !e.deleted)
                .take(cap)
                .count()
        } else {
            let next = self.parts.get(i + 1).map(|q| q.first());
            self.entries_from(start)
                .take_while(|(_, e)| e.id <= end && next.is_none_or(|f| e.id < f))
                .filter(|(_, e)| !e.deleted)
                .take(cap)
                .count()
        };
        Some(n as u64)
    }

    /// The parts a range from `start` to `end` lies in.
    pub fn range_part_indexes(&self, start: StreamId, end: StreamId) -> std::ops::Range<usize> {
        if start > end || self.parts.is_empty() {
            return 0..0;
        }
        self.part_for(start)..self.part_for(end) + 1
    }

    /// The live entries of parts `parts` (in RAM) from `start` to `end`,
    /// ascending (a batch of a whole range read).
    pub fn range_in_parts(
        &self,
        parts: std::ops::Range<usize>,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = super::EntryRef<'_>> + '_ {
        let parts = parts.start.min(self.parts.len())..parts.end.min(self.parts.len());
        self.parts[parts]
            .iter()
            .flat_map(super::part_nodes)
            .flat_map(|n| n.entries.iter().map(move |e| (n, e)))
            .filter(move |(_, e)| e.id >= start && e.id <= end)
            .filter_map(super::live_ref)
    }
}
