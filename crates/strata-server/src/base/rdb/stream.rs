//! A stream in a DUMP payload (`RDB_TYPE_STREAM_LISTPACKS_2`, as Redis 7.0
//! writes it; RESTORE also reads Redis 5/6's `RDB_TYPE_STREAM_LISTPACKS`):
//! each node as its radix-tree key (the master id, 128-bit big endian) and
//! its listpack, the stream's counters, then each consumer group with its
//! pending list (raw ids, delivery times, counts) and its consumers (their
//! pending ids).
//!
//! A node's listpack: the master entry (live count, deleted count, field
//! count, the field names, 0), then each entry: flags (1 deleted, 2 same
//! fields as the master), the id as ms and seq deltas from the master, the
//! field count and pairs (or only the values), and the number of elements
//! the entry took.

use super::listpack::{self, Entry, Writer};
use super::{put_len, put_string, Reader};
use std::collections::BTreeMap;
use strata_engine::types::stream::{Builder, StreamId, ENTRIES_READ_UNKNOWN};
use strata_engine::types::Stream;

pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

const DELETED: i64 = 1;
const SAMEFIELDS: i64 = 2;

fn raw_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_be_bytes());
    out.extend_from_slice(&id.seq.to_be_bytes());
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// Appends the stream's payload body (after its type byte).
pub fn dump(out: &mut Vec<u8>, s: &Stream) {
    put_len(out, s.node_count() as u64);
    for n in s.nodes() {
        let mut key = Vec::with_capacity(16);
        raw_id(&mut key, n.master);
        put_string(out, &key);
        let mut w = Writer::default();
        w.int(n.live as i64);
        w.int(n.deleted as i64);
        w.int(n.master_fields.len() as i64);
        for f in n.master_fields {
            w.str(f);
        }
        w.int(0);
        for (e, deleted) in n.entries() {
            let same = n.same_fields(&e);
            let flags = if same { SAMEFIELDS } else { 0 } | if deleted { DELETED } else { 0 };
            w.int(flags);
            w.int(e.id.ms.wrapping_sub(n.master.ms) as i64);
            w.int(e.id.seq.wrapping_sub(n.master.seq) as i64);
            let pairs = e.pairs();
            if same {
                for v in e.elems().skip(1).step_by(2) {
                    w.str(v);
                }
                w.int(pairs as i64 + 3);
            } else {
                w.int(pairs as i64);
                for x in e.elems() {
                    w.str(x);
                }
                w.int(2 * pairs as i64 + 4);
            }
        }
        put_string(out, &w.finish());
    }
    put_len(out, s.len());
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_len(out, s.entries_added);
    put_len(out, s.group_count() as u64);
    for (name, g) in s.groups() {
        put_string(out, name);
        put_id(out, g.last_id);
        put_len(out, g.entries_read as u64);
        put_len(out, g.pel_len() as u64);
        for (id, nack) in g.pel_range(StreamId::MIN, StreamId::MAX) {
            raw_id(out, id);
            out.extend_from_slice(&nack.delivery_time.to_le_bytes());
            put_len(out, nack.delivery_count);
        }
        put_len(out, g.consumer_count() as u64);
        for (cname, c) in g.consumers() {
            put_string(out, cname);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            put_len(out, c.pending() as u64);
            for id in c.pel_from(StreamId::MIN) {
                raw_id(out, id);
            }
        }
    }
}

fn int(e: &Entry<'_>) -> Option<i64> {
    match e {
        Entry::Int(i) => Some(*i),
        Entry::Str(s) => crate::base::args::parse_i64(s),
    }
}

impl Reader<'_> {
    fn u64_len(&mut self) -> Option<u64> {
        match self.len_or_special()? {
            super::Len::Plain(n) => Some(n),
            super::Len::Special(_) => None,
        }
    }

    fn id(&mut self) -> Option<StreamId> {
        Some(StreamId::new(self.u64_len()?, self.u64_len()?))
    }

    fn raw_id(&mut self) -> Option<StreamId> {
        let b = self.take(16)?;
        Some(StreamId::new(
            u64::from_be_bytes(b[..8].try_into().ok()?),
            u64::from_be_bytes(b[8..].try_into().ok()?),
        ))
    }

    fn ms_time(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A stream of payload type `t` (after its type byte).
    pub(super) fn stream(&mut self, t: u8) -> Option<Stream> {
        let mut b = Builder::default();
        for _ in 0..self.count()? {
            let key = self.string()?;
            if key.len() != 16 {
                return None;
            }
            let master = StreamId::new(
                u64::from_be_bytes(key[..8].try_into().ok()?),
                u64::from_be_bytes(key[8..].try_into().ok()?),
            );
            node(&mut b, master, &self.string()?)?;
        }
        let length = self.u64_len()?;
        let last_id = self.id()?;
        let v2 = t == TYPE_STREAM_LISTPACKS_2;
        let (first_id, max_deleted, added) = if v2 {
            (self.id()?, self.id()?, Some(self.u64_len()?))
        } else {
            (StreamId::MIN, StreamId::MIN, None)
        };
        let mut s = b
            .finish(
                length,
                last_id,
                first_id,
                max_deleted,
                added.unwrap_or(length),
            )
            .ok()?;
        if !v2 {
            let first = s
                .range(StreamId::MIN, StreamId::MAX, false)
                .next()
                .map(|e| e.id);
            s.first_id = first.unwrap_or(StreamId::MAX);
        }
        for _ in 0..self.count()? {
            let name = self.string()?;
            let last = self.id()?;
            let read = if v2 {
                self.u64_len()? as i64
            } else {
                s.counter_of(last)
                    .map_or(ENTRIES_READ_UNKNOWN, |c| c as i64)
            };
            if !s.create_group(&name, last, read) {
                return None;
            }
            let mut pel = BTreeMap::new();
            for _ in 0..self.count()? {
                let id = self.raw_id()?;
                let time = self.ms_time()?;
                let count = self.u64_len()?;
                if pel.insert(id, (time, count, false)).is_some() {
                    return None;
                }
            }
            let g = s.group_mut(&name)?;
            for _ in 0..self.count()? {
                let cname = self.string()?;
                let seen = self.ms_time()?;
                if !g.create_consumer(&cname, seen) {
                    return None;
                }
                for _ in 0..self.count()? {
                    let id = self.raw_id()?;
                    let nack = pel.get_mut(&id)?;
                    if nack.2 {
                        return None;
                    }
                    nack.2 = true;
                    g.assign(id, &cname, nack.0, Some(nack.1));
                }
            }
            // Every pending entry belongs to a consumer.
            if pel.values().any(|n| !n.2) {
                return None;
            }
        }
        Some(s)
    }
}

/// Adds one node, read from its listpack, to `b`.
fn node(b: &mut Builder, master: StreamId, lp: &[u8]) -> Option<()> {
    let e = listpack::entries(lp)?;
    let mut it = e.iter();
    let live = int(it.next()?)?;
    let dead = int(it.next()?)?;
    let nf = usize::try_from(int(it.next()?)?).ok()?;
    let mut fields = Vec::with_capacity(nf.min(e.len()));
    for _ in 0..nf {
        fields.push(it.next()?.to_bytes().into_boxed_slice());
    }
    if int(it.next()?)? != 0 {
        return None;
    }
    b.node(master, fields.clone()).ok()?;
    let (mut seen_live, mut seen_dead) = (0, 0);
    while let Some(flags) = it.next() {
        let flags = int(flags)?;
        let ms = master.ms.wrapping_add(int(it.next()?)? as u64);
        let seq = master.seq.wrapping_add(int(it.next()?)? as u64);
        let mut pairs: Vec<Vec<u8>> = Vec::new();
        let taken = if flags & SAMEFIELDS != 0 {
            for f in &fields {
                pairs.push(f.to_vec());
                pairs.push(it.next()?.to_bytes());
            }
            nf.checked_add(3)?
        } else {
            let n = usize::try_from(int(it.next()?)?).ok()?;
            for _ in 0..n.checked_mul(2)? {
                pairs.push(it.next()?.to_bytes());
            }
            n.checked_mul(2)?.checked_add(4)?
        };
        if usize::try_from(int(it.next()?)?).ok()? != taken {
            return None;
        }
        let deleted = flags & DELETED != 0;
        if deleted {
            seen_dead += 1;
        } else {
            seen_live += 1;
        }
        let refs: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
        b.entry(StreamId::new(ms, seq), &refs, deleted).ok()?;
    }
    (seen_live == live && seen_dead == dead).then_some(())
}

#[cfg(test)]
mod tests {
    use super::super::{dump, restore};
    use strata_engine::{Collection, Value, ValueRef};

    /// `XADD s 1-1 a 1; DUMP s` on redis-server 7.0.15.
    const REDIS_PAYLOAD: &[u8] = b"\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x1c\x1c\x00\x00\x00\n\x00\x01\x01\x00\x01\x01\x01\x81a\x02\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x04\x01\xff\x01\x01\x01\x01\x01\x00\x00\x01\x00\n\x00)}x\x0f\xd8\x8a\xa6,";

    #[test]
    fn reads_redis_payload_and_writes_it_back() {
        let v = restore(REDIS_PAYLOAD).expect("restores");
        let Value::Coll(c) = &v else {
            panic!("not a collection")
        };
        let Collection::Stream(s) = &**c else {
            panic!("not a stream")
        };
        assert_eq!(s.len(), 1);
        assert_eq!(dump(ValueRef::Coll(c)), REDIS_PAYLOAD);
    }

    /// Cut or changed payloads are refused or read, never a panic (the
    /// checksum is made right again after each change).
    #[test]
    fn hostile_payloads_do_not_panic() {
        let body = &REDIS_PAYLOAD[..REDIS_PAYLOAD.len() - 10];
        for i in 0..body.len() {
            for x in [0u8, 1, 0x7f, 0x80, 0xc3, 0xff] {
                let mut b = body.to_vec();
                b[i] = x;
                let _ = restore(&super::super::seal(b));
            }
            let _ = restore(&super::super::seal(body[..i].to_vec()));
        }
    }
}
