//! One journal batch: capture each noted key's current state under its
//! shard lock, append the records (and flush and mapping records) through
//! the writer, then publish each record to its entry if the entry still
//! has the captured state (`publish.rs`; the journal invariants in `mod.rs`).

use super::publish::publish_all;
use super::Note;
use crate::base::FlashLoc;
use crate::clock::now_ms;
use crate::flash::format::{self, ItemMeta, RecordHeader, RecordKind, TOMBSTONE_ORIGIN_HERE};
use crate::index::{prefetch_lines, CompactKey, Slot, Value, F_DIRTY};
use crate::log::chunks::{append_chunked, capture_chunked, publish_chunked, ChunkedState};
use crate::log::in_force::{append_db_map, append_functions};
use crate::log::writer::{AppendError, SegmentWriter};
use crate::stats::Stats;
use crate::Inner;
use bytes::Bytes;
use std::collections::HashSet;

/// A state captured for writing.
pub(super) struct Captured {
    /// The database's id (what the record names).
    pub(super) db: u16,
    pub(super) key: CompactKey,
    /// The entry's position in its map when captured: `publish` looks
    /// there first (a key compare, not a hash probe; a removal may have
    /// moved it since).
    pub(super) pos: usize,
    /// Memcached item metadata of the value (default for a tombstone).
    pub(super) meta: ItemMeta,
    pub(super) what: State,
}

pub(super) enum State {
    /// The key is gone (or expired): a tombstone with this sequence
    /// number, taken under the shard lock so that any later write of the
    /// key has a larger one.
    Gone { seq: u64 },
    /// A value in RAM, at this version and expiry.
    Hot {
        value: Bytes,
        version: u64,
        expire_at_ms: u64,
    },
    /// A cold value whose metadata changed: rewrite its record.
    Cold {
        loc: FlashLoc,
        version: u64,
        expire_at_ms: u64,
    },
    /// A chunked collection: its dirty parts, then its head if it must be
    /// written (chunked invariant 4: dirty parts are in RAM).
    Chunked(ChunkedState),
    /// What changed in a collection held as one packed record since its
    /// chain's last record (`types::changes`): a change record's value,
    /// the version it leaves, and the TTL.
    Change {
        value: Vec<u8>,
        version: u64,
        expire_at_ms: u64,
    },
}

/// Where a captured state's records went.
pub(super) enum Placed {
    One(FlashLoc),
    Chunked {
        parts: Vec<FlashLoc>,
        head: Option<FlashLoc>,
    },
}

/// What one batch captured: the keys' states (with the index of their
/// note), flushes in note order, the mapping and libraries to write, and
/// whether it holds group ends (then it is one atomic batch).
pub(super) struct Captures {
    states: Vec<(usize, Captured)>,
    flushes: Vec<(usize, u16, u64)>,
    db_map: Option<u64>,
    functions: Option<u64>,
    atomic: bool,
}

/// Captures the state of every noted key, once per key per batch: its last
/// note decides. A value note carries the state its write stored (no later
/// write of the key was noted before the batch was taken); after a key
/// note, the key's current state is read under its shard lock. A value
/// note's value moves into the batch and the note becomes a key note (if
/// the batch is queued again, the key's state then is written). Called
/// with no group running (`groups`).
pub(super) fn capture_notes(inner: &Inner, notes: &mut [Note]) -> Captures {
    let now = now_ms();
    let mut caps = Captures {
        states: Vec::with_capacity(notes.len()),
        flushes: Vec::new(),
        db_map: None,
        functions: None,
        atomic: false,
    };
    // Backwards: the first note of a key met is its last.
    let mut last = Vec::with_capacity(notes.len());
    {
        let mut seen: HashSet<(u16, &[u8]), crate::index::Hasher> =
            HashSet::with_capacity_and_hasher(notes.len(), Default::default());
        for (i, n) in notes.iter().enumerate().rev() {
            match n {
                Note::Flush { db, seq } => caps.flushes.push((i, *db, *seq)),
                Note::DbMap { seq } => caps.db_map = caps.db_map.max(Some(*seq)),
                Note::Functions { seq } => caps.functions = caps.functions.max(Some(*seq)),
                Note::GroupEnd => caps.atomic = true,
                Note::Key { .. } | Note::Value(_) => {
                    if n.key().is_some_and(|k| seen.insert(k)) {
                        last.push(i);
                    }
                }
            }
        }
    }
    // In note order (flush records keep their place among the keys').
    caps.flushes.reverse();
    for &i in last.iter().rev() {
        let c = match &mut notes[i] {
            Note::Key { db, key } => capture(inner, *db, key, now),
            Note::Value(v) if v.expire_at_ms != 0 && v.expire_at_ms <= now => {
                // Expired since: the key's state now (a tombstone's
                // sequence number is taken under its shard lock).
                capture(inner, v.db, &v.key, now)
            }
            Note::Value(v) => {
                // Its value moves into the batch (no second reference to
                // count up and down): the note becomes a key note.
                let value = std::mem::take(&mut v.value);
                let what = State::Hot {
                    value,
                    version: v.version,
                    expire_at_ms: v.expire_at_ms,
                };
                let c = Captured {
                    db: v.db,
                    key: v.key.clone(),
                    pos: v.pos as usize,
                    meta: ItemMeta::flags(v.client_flags),
                    what,
                };
                notes[i] = Note::Key {
                    db: c.db,
                    key: c.key.clone(),
                };
                Some(c)
            }
            _ => None,
        };
        if let Some(c) = c {
            caps.states.push((i, c));
        }
    }
    caps
}

/// Writes the captured states and publishes the records (invariants 2
/// and 5). A batch is written only if it fits whole; one with group ends
/// is one atomic batch.
pub(super) fn write_captures(
    inner: &Inner,
    w: &mut SegmentWriter,
    caps: &Captures,
) -> Result<(), AppendError> {
    let atomic = caps.atomic;
    // Written only if it fits whole: an atomic batch must (a full log would
    // leave half of it), and a batch that fails part way is retried whole,
    // its records written so far garbage from birth. Such garbage in each
    // retry's tail fed the collector segments to move (its rule 9).
    let (mut bytes, mut largest) = (64 * (caps.flushes.len() as u64 + 2), 64);
    for (_, c) in &caps.states {
        let (all, one) = estimate(c);
        bytes += all;
        largest = largest.max(one);
    }
    if !w.room_for(bytes, largest, inner.flash.capacity) {
        return Err(AppendError::Full);
    }
    if atomic {
        w.begin_batch();
    }
    let mut tally = Tally::default();
    let mut placed: Vec<(&Captured, Placed)> = Vec::with_capacity(caps.states.len());
    let mut result = Ok(());
    let flushes = &caps.flushes;
    let mut fi = 0;
    for (k, (i, c)) in caps.states.iter().enumerate() {
        // The value copied a few records from now was written by another
        // core: start bringing it over (its copy was a quarter of the
        // journal's time per record).
        if let Some((
            _,
            Captured {
                what: State::Hot { value, .. },
                ..
            },
        )) = caps.states.get(k + VALUE_AHEAD)
        {
            prefetch_lines(&value[..], value.len().min(VALUE_PREFETCH_MAX));
        }
        // Flush records keep their place among the key records.
        while fi < flushes.len() && flushes[fi].0 < *i {
            let (_, db, seq) = flushes[fi];
            if let Err(e) = append_flush(inner, w, &mut tally, db, seq) {
                result = Err(e);
                break;
            }
            fi += 1;
        }
        if result.is_err() {
            break;
        }
        match append_state(inner, w, &mut tally, c) {
            Ok(Some(loc)) => placed.push((c, loc)),
            Ok(None) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() {
        for &(_, db, seq) in &flushes[fi..] {
            if let Err(e) = append_flush(inner, w, &mut tally, db, seq) {
                result = Err(e);
                break;
            }
        }
    }
    // The mapping in force now (a later swap's note writes it again).
    let mut db_map_loc = None;
    if let (Some(seq), true) = (caps.db_map, result.is_ok()) {
        match append_db_map(inner, w, seq) {
            Ok(loc) => {
                count(&mut tally, loc);
                db_map_loc = Some(loc);
            }
            Err(e) => result = Err(e),
        }
    }
    // The function libraries now (invariant 1 of `keyspace::functions`).
    let mut functions_loc = None;
    if let (Some(seq), true) = (caps.functions, result.is_ok()) {
        match append_functions(inner, w, seq) {
            Ok(Some(loc)) => {
                count(&mut tally, loc);
                functions_loc = Some(loc);
            }
            Ok(None) => {}
            Err(e) => result = Err(e),
        }
    }
    if atomic {
        // The end says whether the members count: an abandoned batch (a
        // failed write) is ended as such, so nothing after it applies half.
        let end = w.end_batch(result.is_ok());
        if result.is_ok() {
            result = end;
        }
    }
    let flushed = w.flush_counted(&inner.stats.device.journal);
    if let Err(e) = flushed {
        return Err(AppendError::Io(e));
    }
    // A failed append may have dropped records buffered before it (a chunk
    // write that failed inside it): publish nothing, the batch is retried
    // whole (records that did reach the device are garbage from birth).
    result?;
    Stats::add(&inner.journal.records, tally.records);
    Stats::add(&inner.journal.record_bytes, tally.bytes);
    Stats::add(&inner.journal.change_records, tally.changes);
    Stats::add(&inner.journal.change_bytes, tally.change_bytes);
    if atomic {
        Stats::inc(&inner.journal.atomic_batches);
    }
    publish_all(inner, &placed);
    for (c, p) in &placed {
        if let (Placed::Chunked { parts, head }, State::Chunked(st)) = (p, &c.what) {
            publish_chunked(inner, c.db, &c.key, st, parts, *head);
        }
    }
    if let Some(loc) = db_map_loc {
        inner.keys.dbmap.record.publish(inner, loc);
    }
    if let Some(loc) = functions_loc {
        inner.keys.functions.record.publish(inner, loc);
    }
    Ok(())
}

/// At least the bytes a captured state's records take, in all and in the
/// longest one.
fn estimate(c: &Captured) -> (u64, u64) {
    let head = (format::RECORD_HEADER_LEN + c.key.len() + 64) as u64;
    match &c.what {
        State::Gone { .. } => (head, head),
        State::Hot { value, .. } => (head + value.len() as u64, head + value.len() as u64),
        State::Change { value, .. } => (head + value.len() as u64, head + value.len() as u64),
        State::Cold { loc, .. } => (head + loc.len as u64, head + loc.len as u64),
        State::Chunked(st) => st.parts.iter().fold((head, head), |(all, one), p| {
            let n = head + p.value.len() as u64;
            (all + n, one.max(n))
        }),
    }
}

fn append_flush(
    inner: &Inner,
    w: &mut SegmentWriter,
    tally: &mut Tally,
    db: u16,
    seq: u64,
) -> Result<(), AppendError> {
    let origin = format::origin_value(TOMBSTONE_ORIGIN_HERE);
    let h = RecordHeader {
        kind: RecordKind::Flush,
        db,
        key_len: 0,
        value_len: origin.len() as u32,
        seq,
        expire_at_ms: 0,
    };
    let loc = w.append(&h, &[], &origin, inner.flash.capacity)?;
    count(tally, loc);
    Ok(())
}

/// Records appended by one batch, counted once the batch is on the device.
#[derive(Default)]
struct Tally {
    records: u64,
    bytes: u64,
    changes: u64,
    change_bytes: u64,
}

fn count(tally: &mut Tally, loc: FlashLoc) {
    tally.records += 1;
    tally.bytes += loc.len as u64;
}

/// The state to log for a noted key, or None if its log copy is current.
fn capture(inner: &Inner, db: u16, key: &CompactKey, now: u64) -> Option<Captured> {
    let mut guard = inner.shard(key).lock();
    let d = inner.keys.dbmap.logical(db);
    let found = guard.dbs.get(d)?.get_full(&key[..]);
    let pos = found.as_ref().map_or(usize::MAX, |(i, _, _)| *i);
    let entry = found.map(|(_, _, e)| e);
    let meta = entry
        .as_ref()
        .map(|e| guard.item_meta(d, key, e))
        .unwrap_or_default();
    let what = match entry {
        None => State::Gone {
            seq: inner.next_seq(),
        },
        Some(e) if e.is_expired(now) => State::Gone {
            seq: inner.next_seq(),
        },
        Some(e) if e.flags & F_DIRTY == 0 => return None,
        Some(e) if matches!(&e.slot, Slot::Hot(h) if matches!(h.value, Value::Coll(_))) => {
            let (version, expire_at_ms) = (e.version, e.expire_at_ms);
            let Slot::Hot(h) = &mut guard.dbs[d].at_mut(pos).slot else {
                return None;
            };
            let Value::Coll(c) = &mut h.value else {
                return None;
            };
            super::collection::capture(c, version, expire_at_ms)
        }
        Some(e) if matches!(e.slot, Slot::Chunked(_)) => {
            let sh = &mut *guard;
            State::Chunked(capture_chunked(sh.dbs[d].at_mut(pos), &mut sh.acct, true)?)
        }
        Some(e) => match &e.slot {
            Slot::Chunked(_) => return None,
            Slot::Hot(_) => {
                let (version, expire_at_ms) = (e.version, e.expire_at_ms);
                let Slot::Hot(h) = &mut guard.dbs[d].at_mut(pos).slot else {
                    return None;
                };
                super::collection::capture_str(h, version, expire_at_ms)
            }
            Slot::Cold(loc) => State::Cold {
                loc: *loc,
                version: e.version,
                expire_at_ms: e.expire_at_ms,
            },
        },
    };
    Some(Captured {
        db,
        key: key.clone(),
        pos,
        meta,
        what,
    })
}

/// Appends one captured state; returns the locations to publish (None for
/// a tombstone, or a cold record that could not be read).
fn append_state(
    inner: &Inner,
    w: &mut SegmentWriter,
    tally: &mut Tally,
    c: &Captured,
) -> Result<Option<Placed>, AppendError> {
    if let State::Chunked(st) = &c.what {
        let (parts, head) = append_chunked(inner, w, c.db, &c.key, st)?;
        for &loc in parts.iter().chain(head.iter()) {
            count(tally, loc);
        }
        return Ok(Some(Placed::Chunked { parts, head }));
    }
    Ok(append_one(inner, w, tally, c)?.map(Placed::One))
}

fn append_one(
    inner: &Inner,
    w: &mut SegmentWriter,
    tally: &mut Tally,
    c: &Captured,
) -> Result<Option<FlashLoc>, AppendError> {
    match &c.what {
        State::Chunked(_) => Ok(None),
        State::Gone { seq } => {
            let origin = format::origin_value(TOMBSTONE_ORIGIN_HERE);
            let h = RecordHeader {
                kind: RecordKind::Tombstone,
                db: c.db,
                key_len: c.key.len() as u32,
                value_len: origin.len() as u32,
                seq: *seq,
                expire_at_ms: 0,
            };
            let loc = w.append(&h, &c.key, &origin, inner.flash.capacity)?;
            count(tally, loc);
            Ok(None)
        }
        State::Hot {
            value,
            version,
            expire_at_ms,
        } => {
            let loc = w.append_item(
                &RecordHeader::value(c.db, &c.key, value.len(), *version, *expire_at_ms),
                &c.key,
                &c.meta,
                value,
                inner.flash.capacity,
            )?;
            count(tally, loc);
            Ok(Some(loc))
        }
        State::Change {
            value,
            version,
            expire_at_ms,
        } => {
            let h = RecordHeader {
                kind: RecordKind::Change,
                db: c.db,
                key_len: c.key.len() as u32,
                value_len: value.len() as u32,
                seq: *version,
                expire_at_ms: *expire_at_ms,
            };
            let loc = w.append(&h, &c.key, value, inner.flash.capacity)?;
            count(tally, loc);
            tally.changes += 1;
            tally.change_bytes += loc.len as u64;
            Ok(Some(loc))
        }
        State::Cold {
            loc,
            version,
            expire_at_ms,
        } => {
            // Only the TTL changed: the record is rewritten with the new one
            // (same sequence number; the later copy wins at recovery).
            let Some(value) = read_value(inner, c, *loc, *version) else {
                return Ok(None);
            };
            let new = w.append_item(
                &RecordHeader::value(c.db, &c.key, value.len(), *version, *expire_at_ms),
                &c.key,
                &c.meta,
                &value,
                inner.flash.capacity,
            )?;
            count(tally, new);
            Ok(Some(new))
        }
    }
}

/// Reads and verifies a cold record's value (blocking; journal thread).
fn read_value(inner: &Inner, c: &Captured, loc: FlashLoc, version: u64) -> Option<Vec<u8>> {
    let v = crate::log::read_value_blocking(inner, &c.key, loc, version);
    if v.is_none() {
        Stats::inc(&inner.stats.read_errors);
        tracing::error!(
            "journal: the flash record of a key in db {} is unreadable; its new TTL is not logged",
            c.db
        );
    }
    v
}

/// Records ahead of the one being written whose values are prefetched,
/// and how much of each.
const VALUE_AHEAD: usize = 4;
const VALUE_PREFETCH_MAX: usize = 2048;
