//! A consumer group: its last delivered id, its read counter, its pending
//! entries list (PEL) and its consumers, as Redis keeps them (`streamCG`).
//!
//! Invariants:
//! 1. Every NACK of the group PEL names a consumer of the group, and that
//!    consumer's own PEL holds its id; a consumer's PEL holds nothing else.
//! 2. `enc` is exactly the bytes `encode` writes for the group.
//! 3. In a chunked stream the PEL is also cut into parts (`parts`, the
//!    `pel` module), told of every NACK that comes, goes or changes.

use super::pel::{decode_pel_part, PelParts};
use super::{put_bytes, StreamId, ID_LEN};
use crate::base::FlashLoc;
use crate::types::Malformed;
use std::collections::{BTreeMap, BTreeSet};

/// In a chunked stream's head, the count that stands for "the PEL is in
/// parts, named as runs of numbers" (format version 20; docs/format.md).
const PEL_RUNS: u32 = u32::MAX - 1;
/// As `PEL_RUNS`, the part numbers one by one (versions 15 to 19).
const PEL_NUMBERS: u32 = u32::MAX;

/// `entries_read` when the group's read counter is unknown.
pub const ENTRIES_READ_UNKNOWN: i64 = -1;

/// Encoded bytes of one NACK: id, delivery time, delivery count, consumer.
pub(super) const NACK_ENC: usize = ID_LEN + 8 + 8 + 4;

/// A pending entry: delivered to `consumer`, not yet acknowledged.
#[derive(Clone, Debug, PartialEq)]
pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: u64,
    pub delivery_count: u64,
    consumer: Box<[u8]>,
}

impl Nack {
    pub fn consumer(&self) -> &[u8] {
        &self.consumer
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Consumer {
    /// Unix ms the consumer was last seen (read or claimed).
    pub seen_time: u64,
    pel: BTreeSet<StreamId>,
}

impl Consumer {
    pub fn pending(&self) -> usize {
        self.pel.len()
    }
    /// Its pending ids from `start` on.
    pub fn pel_from(&self, start: StreamId) -> impl Iterator<Item = StreamId> + '_ {
        self.pel.range(start..).copied()
    }
}

#[derive(Clone, Debug)]
pub struct Group {
    pub last_id: StreamId,
    /// Entries the group has read (the logical counter), or
    /// `ENTRIES_READ_UNKNOWN`.
    pub entries_read: i64,
    pub(super) pel: BTreeMap<StreamId, Nack>,
    consumers: BTreeMap<Box<[u8]>, Consumer>,
    enc: usize,
    /// The PEL's parts, when the stream is chunked (invariant 3).
    pub(super) parts: Option<Box<PelParts>>,
}

impl PartialEq for Group {
    /// The same counters, PEL and consumers, however the PEL is cut.
    fn eq(&self, o: &Self) -> bool {
        self.last_id == o.last_id
            && self.entries_read == o.entries_read
            && self.pel == o.pel
            && self.consumers == o.consumers
            && self.enc == o.enc
    }
}

impl Group {
    pub(super) fn new(name: &[u8], last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
            enc: 4 + name.len() + ID_LEN + 8 + 4 + 4,
            parts: None,
        }
    }

    pub(super) fn enc_len(&self) -> usize {
        self.enc
    }

    pub fn pel_len(&self) -> usize {
        self.pel.len()
    }

    pub fn nack(&self, id: StreamId) -> Option<&Nack> {
        self.pel.get(&id)
    }

    /// The group PEL from `start` to `end` (inclusive), in id order.
    pub fn pel_range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, &Nack)> + '_ {
        let r = if start <= end {
            Some(self.pel.range(start..=end))
        } else {
            None
        };
        r.into_iter().flatten().map(|(k, v)| (*k, v))
    }

    pub fn first_pending(&self) -> Option<StreamId> {
        self.pel.keys().next().copied()
    }

    pub fn last_pending(&self) -> Option<StreamId> {
        self.pel.keys().next_back().copied()
    }

    pub fn consumers(&self) -> impl Iterator<Item = (&[u8], &Consumer)> + '_ {
        self.consumers.iter().map(|(k, v)| (&k[..], v))
    }

    pub fn consumer_count(&self) -> usize {
        self.consumers.len()
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }

    /// Marks `name` seen at `now`; false if there is no such consumer
    /// (`streamLookupConsumer`).
    pub fn touch_consumer(&mut self, name: &[u8], now: u64) -> bool {
        match self.consumers.get_mut(name) {
            Some(c) => {
                c.seen_time = now;
                true
            }
            None => false,
        }
    }

    /// Creates consumer `name` seen at `now`; false if it exists.
    pub fn create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            name.into(),
            Consumer {
                seen_time: now,
                pel: BTreeSet::new(),
            },
        );
        self.enc += 4 + name.len() + 8;
        true
    }

    /// Looks `name` up (seen now), creating it if missing; returns whether
    /// it was created.
    pub fn get_or_create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        !self.touch_consumer(name, now) && self.create_consumer(name, now)
    }

    /// Deletes consumer `name` and its pending entries; returns how many it
    /// had, None if there is no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
            if let Some(p) = self.parts.as_deref_mut() {
                p.removed(*id);
            }
        }
        self.enc -= 4 + name.len() + 8 + c.pel.len() * NACK_ENC;
        Some(c.pel.len())
    }

    /// Records the delivery of `id` to `consumer` (which must exist) at
    /// `now`: a new NACK, or an existing one moved to it with its count
    /// reset to 1 (`streamReplyWithRange`).
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now: u64) {
        self.assign(id, consumer, now, Some(1));
    }

    /// Gives the NACK of `id` (created if missing) to `consumer` (which
    /// must exist), with `time` as its delivery time and the count set to
    /// `count` if given (else unchanged, 0 for a new NACK).
    pub fn assign(&mut self, id: StreamId, consumer: &[u8], time: u64, count: Option<u64>) {
        let old = match self.pel.get_mut(&id) {
            Some(n) => {
                if let Some(p) = self.parts.as_deref_mut() {
                    p.changed(id);
                }
                n.delivery_time = time;
                if let Some(c) = count {
                    n.delivery_count = c;
                }
                if &n.consumer[..] == consumer {
                    return;
                }
                Some(std::mem::replace(&mut n.consumer, consumer.into()))
            }
            None => {
                self.pel.insert(
                    id,
                    Nack {
                        delivery_time: time,
                        delivery_count: count.unwrap_or(0),
                        consumer: consumer.into(),
                    },
                );
                self.enc += NACK_ENC;
                if let Some(p) = self.parts.as_deref_mut() {
                    p.added(&self.pel, id);
                }
                None
            }
        };
        if let Some(old) = old {
            if let Some(c) = self.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// Changes the delivery time and count of the NACK of `id`.
    pub fn set_delivery(&mut self, id: StreamId, time: u64, count: u64) {
        if let Some(n) = self.pel.get_mut(&id) {
            n.delivery_time = time;
            n.delivery_count = count;
            if let Some(p) = self.parts.as_deref_mut() {
                p.changed(id);
            }
        }
    }

    /// Acknowledges `id`: removes its NACK from the group and its
    /// consumer; false if it was not pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(n) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&n.consumer) {
            c.pel.remove(&id);
        }
        self.enc -= NACK_ENC;
        if let Some(p) = self.parts.as_deref_mut() {
            p.removed(id);
        }
        true
    }

    /// The group as the packed record holds it (with its whole PEL).
    pub(super) fn encode(&self, name: &[u8], out: &mut Vec<u8>) {
        self.encode_as(name, out, false);
    }

    /// The group as a chunked stream's head holds it: the PEL's part
    /// numbers in place of its NACKs (a count of `u32::MAX` marks them).
    pub(super) fn encode_head(&self, name: &[u8], out: &mut Vec<u8>) {
        self.encode_as(name, out, true);
    }

    fn encode_as(&self, name: &[u8], out: &mut Vec<u8>, head: bool) {
        put_bytes(out, name);
        super::put_id(out, self.last_id);
        out.extend_from_slice(&self.entries_read.to_le_bytes());
        out.extend_from_slice(&(self.consumers.len() as u32).to_le_bytes());
        let mut index = BTreeMap::new();
        for (i, (cname, c)) in self.consumers.iter().enumerate() {
            put_bytes(out, cname);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            index.insert(&cname[..], i as u32);
        }
        if let (true, Some(p)) = (head, self.parts.as_deref()) {
            out.extend_from_slice(&PEL_RUNS.to_le_bytes());
            p.encode_named(out);
            return;
        }
        out.extend_from_slice(&(self.pel.len() as u32).to_le_bytes());
        for (id, n) in &self.pel {
            super::put_id(out, *id);
            out.extend_from_slice(&n.delivery_time.to_le_bytes());
            out.extend_from_slice(&n.delivery_count.to_le_bytes());
            let i = index.get(&n.consumer[..]).copied().unwrap_or(u32::MAX);
            out.extend_from_slice(&i.to_le_bytes());
        }
    }

    pub(super) fn decode(
        r: &mut super::super::Reader<'_>,
    ) -> Result<(Box<[u8]>, Group), super::Malformed> {
        let name: Box<[u8]> = r.bytes()?.into();
        let last_id = super::get_id(r)?;
        let entries_read = r.u64()? as i64;
        let mut g = Group::new(&name, last_id, entries_read);
        let nc = r.u32()? as usize;
        let mut names = Vec::with_capacity(nc.min(1 << 16));
        for _ in 0..nc {
            let cname = r.bytes()?;
            let seen = r.u64()?;
            if !g.create_consumer(cname, seen) {
                return Err(super::Malformed);
            }
            names.push(Box::<[u8]>::from(cname));
        }
        let np = r.u32()?;
        if np == PEL_RUNS || np == PEL_NUMBERS {
            // A chunked stream's head: the PEL is in parts, read by
            // recovery (`install_pel_part`).
            g.parts = Some(Box::new(PelParts::decode_named(r, np == PEL_RUNS)?));
            return Ok((name, g));
        }
        for _ in 0..np {
            let id = super::get_id(r)?;
            let time = r.u64()?;
            let count = r.u64()?;
            let i = r.u32()? as usize;
            let cname = names.get(i).ok_or(super::Malformed)?;
            if g.pel.contains_key(&id) {
                return Err(super::Malformed);
            }
            g.assign(id, cname, time, Some(count));
        }
        Ok((name, g))
    }

    /// The PEL's part numbers a recovered head named and no record
    /// installed yet.
    pub(super) fn named_pel_parts(&self) -> Vec<u64> {
        self.parts
            .as_deref()
            .map_or(Vec::new(), |p| p.named.clone())
    }

    /// Installs the NACKs of PEL part `num`'s record (recovery): each must
    /// name a consumer of the group and be pending nowhere else.
    pub(super) fn install_pel_part(
        &mut self,
        name: &[u8],
        num: u64,
        body: &[u8],
        loc: FlashLoc,
        seq: u64,
    ) -> Result<(), Malformed> {
        let b = decode_pel_part(body)?;
        if b.group != name
            || b.nacks
                .iter()
                .any(|(id, _, _, c)| self.pel.contains_key(id) || !self.consumers.contains_key(*c))
        {
            return Err(Malformed);
        }
        let parts = self.parts.take();
        for (id, time, count, c) in &b.nacks {
            self.assign(*id, c, *time, Some(*count));
        }
        self.parts = parts;
        if let Some(p) = self.parts.as_deref_mut() {
            p.named.retain(|&n| n != num);
            p.parts.push(super::pel::PelPart {
                lo: b.nacks[0].0,
                num,
                count: b.nacks.len(),
                dirty: false,
                ver: 0,
                loc: Some(loc),
                seq,
            });
        }
        Ok(())
    }

    /// Ends recovery's installs: the parts in id order; if their ranges
    /// overlap (damage), or a named part was not installed, the PEL is cut
    /// anew (every part rewritten; the old records were never counted
    /// live by recovery's recount, so none is released). Returns how many
    /// named parts were not installed.
    pub(super) fn finish_pel_parts(&mut self) -> u64 {
        let Some(p) = self.parts.as_deref_mut() else {
            return 0;
        };
        let lost = p.named.len() as u64;
        p.named.clear();
        p.parts.sort_by_key(|x| x.lo);
        if let Some(f) = p.parts.first_mut() {
            f.lo = StreamId::MIN;
        }
        if lost > 0 || p.check(&self.pel).is_err() {
            let mut fresh = PelParts::cut(p.ordinal, &self.pel);
            // Numbers above every old one: no stale record is taken for
            // a new part.
            let base = p.next;
            for x in fresh.parts.iter_mut() {
                x.num += base;
            }
            fresh.next = base + fresh.parts.len() as u64;
            *p = fresh;
        }
        lost
    }
}
