//! Index checkpoints: the RAM index written to one file, so a restart
//! loads it and scans only the log written after it (docs/format.md,
//! "Checkpoint file").
//!
//! A checkpoint is taken at a *log position* P (under the writer lock, after
//! a flush): every record before P whose entry still points at it is in the
//! checkpoint or superseded by a record after P; everything after P is
//! replayed at recovery. Entries whose value is only in RAM (not yet
//! journaled) are left out: their records come after P (appendonly yes:
//! the file becomes the checkpoint only once the journal synced every note
//! taken while the shards were copied), or `save_unbacked` wrote them first
//! (appendonly no, clean shutdown).
//!
//! Invariants:
//! 1. The file is written to `checkpoint.tmp`, fsynced, renamed over
//!    `checkpoint` and the directory fsynced: a crash leaves the old or the
//!    new checkpoint, never a mix.
//! 2. A checkpoint is trusted only if its header, version and both CRCs
//!    check; otherwise recovery falls back to a full scan of the log.
//! 3. Every entry present from position P to the end of the copy is in
//!    the file. Each map is copied from its last position down,
//!    `WALK_STEP` entries per hold of its shard's lock (a shard of 300k
//!    keys held it for tens of ms, stalling every request to it). A
//!    removal moves the last bucket into the hole (`KeyMap` invariant 2):
//!    walking down, that bucket was copied already, so none that stays is
//!    missed; one may be copied twice (recovery keeps the last copy, and
//!    counts its key once). What changes between two steps is in the log
//!    after P, as what changes between two shards always was. A SWAPDB
//!    between two steps (it swaps the maps) starts the shard's copy again;
//!    after three such restarts each of its maps is copied in one hold.
//!
//! Rooms: this file takes checkpoints (and, with `appendonly no`, first
//! saves what is only in RAM); `file` is the file's layout (header,
//! entries, directories of chunked collections, trailer) and loading it.

mod file;

pub use file::*;

use crate::base::FlashLoc;
use crate::clock::now_ms;
use crate::flash::format::{ItemMeta, RecordHeader};
use crate::index::lock::ShardLock;
use crate::index::{Entry, Shard, Slot, F_STASHING};
use crate::log::writer::AppendError;
use crate::stats::Stats;
use crate::Inner;
use bytes::Bytes;
use std::io::{BufWriter, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// Entries a checkpoint copies per hold of a shard's lock (invariant 3).
const WALK_STEP: usize = if cfg!(test) { 16 } else { 1024 };

/// What a checkpoint run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Done {
    pub entries: u64,
    pub bytes: u64,
    pub duration_ms: u64,
    /// Values written to the log first (appendonly no).
    pub saved_values: u64,
}

/// Writes every hot value that has no flash copy to the log and makes the
/// records its backing, so the index can be checkpointed whole
/// (appendonly no). Values changed meanwhile stay as they are.
pub(crate) fn save_unbacked(inner: &Inner) -> Result<u64, AppendError> {
    struct Pending {
        /// The database's id (what the record names).
        db: u16,
        key: Box<[u8]>,
        value: Bytes,
        version: u64,
        expire_at_ms: u64,
        meta: ItemMeta,
    }
    let mut saved = 0;
    let mut w = inner.flash.writer.lock();
    for si in 0..inner.shards.len() {
        let mut pending = Vec::new();
        {
            let sh = inner.shards[si].lock();
            for (db, map) in sh.dbs.iter().enumerate() {
                for (k, e) in map.iter() {
                    if let Slot::Hot(h) = &e.slot {
                        if h.backing().is_none() && e.flags & F_STASHING == 0 {
                            pending.push(Pending {
                                db: inner.keys.dbmap.id(db),
                                key: Box::from(k),
                                value: h.value.to_bytes(),
                                version: e.version,
                                expire_at_ms: e.expire_at_ms,
                                meta: sh.item_meta(db, k, &e),
                            });
                        }
                    }
                }
            }
        }
        let chunked = save_chunked(inner, &mut w, si)?;
        saved += chunked;
        let mut locs = Vec::with_capacity(pending.len());
        for p in &pending {
            let h = RecordHeader::value(p.db, &p.key, p.value.len(), p.version, p.expire_at_ms);
            locs.push(w.append_item(&h, &p.key, &p.meta, &p.value, inner.flash.capacity)?);
        }
        let r = w.flush_counted(&inner.stats.device.checkpoint);
        r.map_err(AppendError::Io)?;
        let mut sh = inner.shards[si].lock();
        let sh = &mut *sh;
        for (p, loc) in pending.iter().zip(locs) {
            let d = inner.keys.dbmap.logical(p.db);
            let Some(e) = sh.dbs[d].get_mut(&p.key) else {
                continue;
            };
            if e.version != p.version {
                continue;
            }
            if let Slot::Hot(h) = &mut e.slot {
                if h.backing().is_none() {
                    h.set_backing(Some(loc));
                    inner.retain_flash(loc);
                    saved += 1;
                }
            }
        }
    }
    Ok(saved)
}

/// Writes the changed parts (and due heads) of shard `si`'s chunked
/// collections and publishes them; returns how many collections had any.
fn save_chunked(
    inner: &Inner,
    w: &mut crate::log::writer::SegmentWriter,
    si: usize,
) -> Result<u64, AppendError> {
    use crate::log::chunks::{append_chunked, capture_chunked, publish_chunked};
    let mut states = Vec::new();
    {
        let mut guard = inner.shards[si].lock();
        let sh = &mut *guard;
        for db in 0..sh.dbs.len() {
            for i in 0..sh.dbs[db].len() {
                if !matches!(sh.dbs[db].at(i).slot, Slot::Chunked(_)) {
                    continue;
                }
                if let Some(st) = capture_chunked(sh.dbs[db].at_mut(i), &mut sh.acct, false) {
                    let k = sh.dbs[db].get_index(i).map(|(k, _)| Box::<[u8]>::from(k));
                    states.extend(k.map(|k| (inner.keys.dbmap.id(db), k, st)));
                }
            }
        }
    }
    if states.is_empty() {
        return Ok(0);
    }
    let mut placed = Vec::with_capacity(states.len());
    for (db, key, st) in &states {
        placed.push(append_chunked(inner, w, *db, key, st)?);
    }
    let r = w.flush_counted(&inner.stats.device.checkpoint);
    r.map_err(AppendError::Io)?;
    for ((db, key, st), (parts, head)) in states.iter().zip(placed) {
        publish_chunked(inner, *db, key, st, &parts, head);
    }
    Ok(states.len() as u64)
}

/// Takes a checkpoint (see the module doc). With `save`, values only in
/// RAM are written to the log first (appendonly no needs that; with the
/// journal on they are in the log already or about to be).
pub(crate) fn take(inner: &Inner, save: bool) -> Result<Done, String> {
    let t0 = Instant::now();
    let mut done = Done::default();
    if save {
        done.saved_values = save_unbacked(inner).map_err(|e| match e {
            AppendError::Full => "the flash log is full".to_string(),
            AppendError::Io(e) => format!("flash write failed: {e}"),
        })?;
    }
    let (position, next_seq, log_bytes, ticket) = {
        let mut w = inner.flash.writer.lock();
        w.flush_counted(&inner.stats.device.checkpoint)
            .map_err(|e| format!("flash write failed: {e}"))?;
        let position = w.position();
        // After a SWAPDB, the tail starts with the mapping in force, so a
        // restart from this checkpoint knows it (`keyspace::swapdb`).
        if inner.keys.dbmap.needs_record() {
            let loc = crate::log::in_force::append_db_map(inner, &mut w, inner.next_seq())
                .map_err(|e| format!("flash write failed: {e:?}"))?;
            w.flush_counted(&inner.stats.device.checkpoint)
                .map_err(|e| format!("flash write failed: {e}"))?;
            inner.keys.dbmap.record.publish(inner, loc);
        }
        // Likewise the function libraries (`keyspace::functions`).
        if inner.keys.functions.needs_record() {
            let loc = crate::log::in_force::append_functions(inner, &mut w, inner.next_seq())
                .map_err(|e| format!("flash write failed: {e:?}"))?;
            w.flush_counted(&inner.stats.device.checkpoint)
                .map_err(|e| format!("flash write failed: {e}"))?;
            if let Some(loc) = loc {
                inner.keys.functions.record.publish(inner, loc);
            }
        }
        w.sync().map_err(|e| format!("fsync failed: {e}"))?;
        (
            position,
            inner.seq.load(Relaxed),
            inner.stats.device.log(),
            inner.journal.last_ticket(),
        )
    };
    let dir = inner.flash.table.dir();
    let tmp = dir.join("checkpoint.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| format!("cannot create: {e}"))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let io = |e: std::io::Error| format!("checkpoint write failed: {e}");
    let header = Header {
        version: CHECKPOINT_VERSION,
        databases: inner.keys.databases as u32,
        created_ms: now_ms(),
        position,
        next_seq,
        shards: inner.shards.len() as u32,
        shard_seed: inner.shard_seed,
    };
    out.write_all(&encode_header(&header)).map_err(io)?;
    let mut crc = 0u32;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut table = Vec::with_capacity(table_len(header.shards));
    let now = now_ms();
    for s in inner.shards.iter() {
        let n = copy_shard(inner, s, now, &mut buf);
        done.entries += n;
        crc = crc32c::crc32c_append(crc, &buf);
        out.write_all(&buf).map_err(io)?;
        table.extend_from_slice(&(buf.len() as u64).to_le_bytes());
        table.extend_from_slice(&n.to_le_bytes());
    }
    // An entry left out above (its state only in RAM, or changed after its
    // shard was copied) has its newest record after `position` — once the
    // journal writes it. Until then a restart from this checkpoint would
    // miss the key altogether (its older record is before `position`), or
    // restore another shard's half of a transaction: wait until every note
    // taken so far is in the log and synced.
    if inner.journal.enabled {
        inner.journal.wait_synced(inner.journal.last_ticket())?;
    }
    crc = crc32c::crc32c_append(crc, &table);
    out.write_all(&table).map_err(io)?;
    out.write_all(&encode_trailer(done.entries, crc))
        .map_err(io)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    done.bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    Stats::add(&inner.stats.device.checkpoint_files, done.bytes);
    drop(file);
    std::fs::rename(&tmp, path(dir)).map_err(io)?;
    inner.flash.table.sync_dir().map_err(io)?;
    // Only now is this the checkpoint a restart loads (collector rule 5).
    inner
        .durability
        .persist
        .checkpoint_segment
        .store(position.segment, Relaxed);
    done.duration_ms = t0.elapsed().as_millis() as u64;
    let p = &inner.durability.persist;
    p.last_checkpoint_ms.store(now_ms(), Relaxed);
    p.checkpoint_log_bytes.store(log_bytes, Relaxed);
    p.checkpoint_ticket.store(ticket, Relaxed);
    p.last_checkpoint_bytes.store(done.bytes, Relaxed);
    p.last_checkpoint_entries.store(done.entries, Relaxed);
    p.last_checkpoint_duration_ms
        .store(done.duration_ms, Relaxed);
    Stats::inc(&p.checkpoints);
    tracing::info!(
        "checkpoint: {} keys, {} bytes, {} ms",
        done.entries,
        done.bytes,
        done.duration_ms
    );
    Ok(done)
}

/// Copies one shard's entries into `buf` (invariant 3): each map from its
/// last position down, `WALK_STEP` entries per hold of the shard's lock,
/// from the start again if a SWAPDB moved the maps meanwhile. Returns how
/// many entries it copied.
fn copy_shard(inner: &Inner, s: &ShardLock, now: u64, buf: &mut Vec<u8>) -> u64 {
    let mut restarts = 0;
    'shard: loop {
        // After a few restarts (SWAPDB after SWAPDB), each map is copied
        // under one hold, so the copy ends.
        let step = if restarts < 3 { WALK_STEP } else { usize::MAX };
        buf.clear();
        let mut n = 0;
        let (databases, mapping) = {
            let sh = s.lock();
            (sh.dbs.len(), inner.keys.dbmap.changes())
        };
        for db in 0..databases {
            // Positions below `next` are still to copy.
            let mut next = usize::MAX;
            loop {
                let mut sh = s.lock();
                if inner.keys.dbmap.changes() != mapping {
                    restarts += 1;
                    continue 'shard;
                }
                let map = &sh.dbs[db];
                let end = next.min(map.len());
                if end == 0 {
                    break;
                }
                next = end.saturating_sub(step);
                let mut chained = Vec::new();
                for i in (next..end).rev() {
                    if let Some((k, e)) = map.get_index(i) {
                        n += copy_entry(inner, &sh, db, k, &e, now, buf) as u64;
                        if matches!(&e.slot, Slot::Hot(h) if h.backing().is_none() && h.chain().is_some())
                        {
                            chained.push(i);
                        }
                        if matches!(&e.slot, Slot::Chunked(c) if c.dir().is_some_and(|d| !d.chains().is_empty()))
                        {
                            chained.push(i);
                        }
                    }
                }
                // A value whose state is its chain of records (an image
                // and changes, `types::changes`) before the position is
                // written whole after it: the journal's next record of it
                // is an image (waited for below).
                // So is a part whose state is its chain (`parts::chains`).
                for i in chained {
                    let sh = &mut *sh;
                    let e = sh.dbs[db].at_mut(i);
                    let again = match &mut e.slot {
                        Slot::Hot(h) => h.chain_mut().map(|c| c.want_image = true).is_some(),
                        Slot::Chunked(_) => e
                            .with_dir(&mut sh.acct, |d| d.chains_mut().want_images())
                            .unwrap_or(false),
                        Slot::Cold(_) => false,
                    };
                    if again {
                        inner.log_again(sh, db, i);
                    }
                }
            }
        }
        return n;
    }
}

/// Encodes the entry of `k` into `buf`, unless it expired or has no
/// record (its state is only in RAM); returns whether it did.
fn copy_entry(
    inner: &Inner,
    sh: &Shard,
    db: usize,
    k: &[u8],
    e: &Entry,
    now: u64,
    buf: &mut Vec<u8>,
) -> bool {
    if e.is_expired(now) {
        return false;
    }
    let Some(loc) = e.flash_loc() else {
        return false;
    };
    let entry = CpEntry {
        db: inner.keys.dbmap.id(db),
        seq: e.version,
        expire_at_ms: e.expire_at_ms,
        loc,
        meta: sh.item_meta(db, k, e),
        key: k,
        chunks: None,
    };
    match &e.slot {
        Slot::Chunked(c) => {
            let Some(d) = c.dir() else {
                return false;
            };
            encode_entry_head(buf, &entry, true);
            let (parts, firsts, chains) = cp_parts(d);
            encode_chunks(buf, d.cid(), d.head_seq(), &parts, &firsts, &chains);
        }
        _ => encode_entry(buf, &entry),
    }
    true
}

/// The parts of a directory that have a record (a part without one is
/// new: its records follow the checkpoint's position, or recovery finds
/// its range empty), the lower bounds of those that are order parts, and
/// the records of parts' spilled chains (`parts::chains`: their
/// steps are in no record after the position; a record restating the
/// rest of such a chain follows it, as for every chain, `want_images`).
fn cp_parts(d: &dyn crate::types::parts::Dir) -> (Vec<CpPart>, Vec<&[u8]>, Vec<FlashLoc>) {
    let mut firsts = Vec::new();
    let mut chains = Vec::new();
    let parts = (0..d.part_count())
        .filter_map(|i| {
            let p = d.part(i);
            let loc = p.loc?;
            let spilled = d
                .chains()
                .get((p.low, p.depth))
                .filter(|c| c.image == Some(loc))
                .map_or(&[][..], |c| c.spilled_locs());
            // A changed part's record (a chained part's image) holds other
            // elements than the part now: recovery measures it
            // (`UNKNOWN_COUNT`).
            let (count, body) = if p.dirty || d.chains().spread((p.low, p.depth)) {
                chains.extend_from_slice(spilled);
                (UNKNOWN_COUNT, spilled.len() as u32)
            } else {
                (p.count, p.body)
            };
            firsts.extend(d.part_first(i));
            Some(CpPart {
                depth: p.depth,
                low: p.low,
                loc,
                seq: p.seq,
                count,
                body,
            })
        })
        .collect();
    (parts, firsts, chains)
}
