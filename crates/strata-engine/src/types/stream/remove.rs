//! Removing entries: XDEL (`delete`) and trimming by MAXLEN or MINID,
//! exactly or by whole nodes (`trim`), as `t_stream.c` does; a part on
//! flash is dropped whole, unread, when every node of it would go.

use super::{node_enc, Stream, StreamId, Trim};

impl Stream {
    /// Deletes the live entry `id` (`streamDeleteItem`): it becomes a
    /// tombstone, or its node goes if it was the node's last live entry.
    fn delete_one(&mut self, id: StreamId) -> bool {
        let Some((pi, ni)) = self.locate(id) else {
            return false;
        };
        let p = &mut self.parts[pi];
        let Some(ns) = p.nodes.as_mut() else {
            return false;
        };
        let n = &mut ns[ni];
        let Some(i) = n.find(id) else {
            return false;
        };
        if n.entries[i].deleted {
            return false;
        }
        if n.live == 1 {
            let n = ns.remove(ni).unwrap_or_else(|| unreachable!());
            let e = node_enc(&n);
            p.enc -= e;
            p.set_node_count(p.node_count() - 1);
            self.enc -= e;
            self.node_count -= 1;
        } else {
            n.kill(i);
        }
        p.live -= 1;
        self.length -= 1;
        self.part_changed(pi);
        self.drop_empty_front();
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
    ///
    /// A part on flash goes whole, unread, when every node of it would
    /// (`whole_part`); else it must be in RAM (`plan`).
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        'parts: while let Some(p) = self.parts.first() {
            if p.node_count() == 0 {
                self.drop_front_part();
                continue;
            }
            if !p.is_resident() {
                if self.trim_stops(0, self.length, how) {
                    break;
                }
                if self.whole_part(0, self.length, deleted, how, limit) {
                    let live = p.live;
                    self.drop_front_part();
                    self.length -= live;
                    deleted += live;
                    continue;
                }
                debug_assert!(false, "trimmed part not loaded");
                break;
            }
            loop {
                let p = &mut self.parts[0];
                let Some(ns) = p.nodes.as_mut() else {
                    break 'parts;
                };
                let Some(n) = ns.front() else {
                    self.drop_front_part();
                    continue 'parts;
                };
                if let Trim::MaxLen(max) = how {
                    if self.length <= max {
                        break 'parts;
                    }
                }
                let entries = n.live;
                if limit != 0 && deleted + entries > limit {
                    break 'parts;
                }
                let whole = match how {
                    Trim::MaxLen(max) => self.length - entries >= max,
                    Trim::MinId(min) => n.last_id().is_some_and(|l| l < min),
                };
                if whole {
                    let n = ns.pop_front().unwrap_or_else(|| unreachable!());
                    let e = node_enc(&n);
                    p.enc -= e;
                    p.live -= entries;
                    p.set_node_count(p.node_count() - 1);
                    self.enc -= e;
                    self.node_count -= 1;
                    self.length -= entries;
                    deleted += entries;
                    self.part_changed(0);
                    continue;
                }
                if approx {
                    break 'parts;
                }
                let Some(n) = ns.front_mut() else {
                    break 'parts;
                };
                let mut killed = 0;
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
                        killed += 1;
                    }
                }
                if killed > 0 {
                    p.live -= killed;
                    deleted += killed;
                    self.part_changed(0);
                }
                break 'parts;
            }
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.first_valid_id();
        }
        deleted
    }

    /// Whether trimming stops before part `i` with `length` entries left
    /// (MAXLEN reached; MINID at or below the part's first id, so no node
    /// of it goes).
    pub(super) fn trim_stops(&self, i: usize, length: u64, how: Trim) -> bool {
        match how {
            Trim::MaxLen(max) => length <= max,
            Trim::MinId(min) => min <= self.parts[i].first(),
        }
    }

    /// Whether every node of part `i` goes whole when trimming reaches it
    /// with `length` entries left and `deleted` gone so far: then trimming
    /// drops it without reading it. For MAXLEN the part must leave more
    /// than `max` entries (a node with no live entry, left by an exact
    /// trim, stops Redis's loop once `length` is `max`); for MINID the
    /// next part must start at or below `min` (every id of this one is
    /// below it).
    pub(super) fn whole_part(
        &self,
        i: usize,
        length: u64,
        deleted: u64,
        how: Trim,
        limit: u64,
    ) -> bool {
        let p = &self.parts[i];
        if limit != 0 && deleted + p.live > limit {
            return false;
        }
        match how {
            Trim::MaxLen(max) => length - p.live > max,
            Trim::MinId(min) => self.parts.get(i + 1).is_some_and(|q| q.first() <= min),
        }
    }
}
