//! Restart: rebuild the index from the checkpoint and the log written after
//! it, without reading values or rewriting anything.
//!
//! Steps:
//! 1. The state file (`strata.state`) says how the last run ended. A run
//!    with `appendonly no` that did not shut down cleanly promised nothing:
//!    its files are removed and the store starts empty (logged).
//! 2. A valid checkpoint (`checkpoint::load`) fills the index; a missing,
//!    corrupt or older-version one means a full scan from the first segment.
//! 3. Every record from the checkpoint's log position on is replayed in log
//!    order (segment id, offset): a value record wins over what the index
//!    holds if its sequence number is not older (equal = a later copy of the
//!    same write, e.g. a moved record or a new TTL); a tombstone removes
//!    older states; a flush record removes older keys of its database(s).
//!    Expired records count as deletions.
//! 4. Damage: a record that fails its checksum is skipped (counted, logged)
//!    and the scan resynchronises on the next valid record; an incomplete
//!    record at the end of the newest segment is a torn tail (counted,
//!    logged, left as garbage: new writes go to a new segment).
//! 5. Live bytes of every segment are recomputed from the index.

mod ahead;
mod cand;
mod changes;
mod chunks;
mod numbered;
mod order;
mod part_changes;
mod replay;

use crate::base::ORDER_DEPTH;
use crate::base::{PEL_DEPTH, STREAM_DEPTH};
use crate::clock::now_ms;
use crate::flash::format::{self, SEGMENT_DATA_START};
use crate::index::{CompactKey, Entry, Shard, Slot};
use crate::log::checkpoint;
use crate::log::writer::LogPosition;
use crate::types::chunked::OrderInfo;
use crate::types::parts::PartInfo;
use crate::types::stream::StreamPartInfo;
use crate::types::Collection;
use crate::Inner;
use replay::Replay;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// What the last recovery found (INFO persistence).
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub duration_ms: u64,
    pub keys: u64,
    pub from_checkpoint: bool,
    /// Why the checkpoint was not used, if there was one.
    pub checkpoint_error: Option<String>,
    pub checkpoint_entries: u64,
    pub segments_scanned: u64,
    pub bytes_scanned: u64,
    pub records_replayed: u64,
    /// Records skipped because their checksum or header was bad.
    pub corrupt_records: u64,
    /// Bytes dropped at the torn tail of the newest segment.
    pub torn_tail_bytes: u64,
    /// Checkpoint entries or records naming a segment that is gone.
    pub missing_segment_entries: u64,
    /// The last run had appendonly no and did not shut down cleanly.
    pub discarded_unclean: bool,
    /// Records of an atomic batch the log ended inside (a crash while the
    /// journal wrote a transaction): dropped, so no half of it returns.
    pub torn_batch_records: u64,
    /// Records of atomic batches abandoned after a failed write.
    pub aborted_batch_records: u64,
}

/// The state file: how the last run was configured and whether it ended
/// cleanly. Text, `key=value` per line.
pub(crate) fn state_path(dir: &Path) -> std::path::PathBuf {
    dir.join("strata.state")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunState {
    pub appendonly: bool,
    pub clean: bool,
}

pub(crate) fn read_state(dir: &Path) -> Option<RunState> {
    let text = std::fs::read_to_string(state_path(dir)).ok()?;
    let mut appendonly = None;
    let mut clean = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("appendonly", v)) => appendonly = Some(v == "yes"),
            Some(("clean", v)) => clean = Some(v == "yes"),
            _ => {}
        }
    }
    Some(RunState {
        appendonly: appendonly?,
        clean: clean?,
    })
}

/// Writes the state file atomically (tmp, fsync, rename, fsync dir).
pub(crate) fn write_state(dir: &Path, s: RunState) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join("strata.state.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(
        f,
        "format={}\nappendonly={}\nclean={}",
        format::FORMAT_VERSION,
        if s.appendonly { "yes" } else { "no" },
        if s.clean { "yes" } else { "no" }
    )?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, state_path(dir))?;
    std::fs::File::open(dir)?.sync_all()
}

/// Rebuilds the index (see the module doc). Runs before any other thread
/// touches the engine.
pub(crate) fn recover(inner: &Inner, appendonly: bool) -> RecoveryReport {
    let t0 = Instant::now();
    let dir = inner.flash.table.dir().to_path_buf();
    let segments = inner.flash.table.snapshot();
    let state = read_state(&dir);
    let has_data = !segments.is_empty() || checkpoint::path(&dir).exists();
    let mut replay = Replay {
        inner,
        now: now_ms(),
        deleted: HashMap::new(),
        flushed: vec![0; inner.keys.databases],
        max_seq: 0,
        db_map: None,
        functions: None,
        chunks: HashMap::new(),
        part_changes: HashMap::new(),
        changes: Default::default(),
        batch: Vec::new(),
        report: RecoveryReport::default(),
    };
    let unclean_cache = match state {
        Some(s) => !s.appendonly && !s.clean,
        None => has_data, // files of a build without a state file: no guarantees
    };
    if unclean_cache && has_data {
        tracing::warn!(
            "the last run (appendonly no) did not shut down cleanly: its data were never \
             durable and are discarded; use appendonly yes to keep data across crashes"
        );
        for s in &segments {
            inner.flash.table.free(s.id);
        }
        let _ = std::fs::remove_file(checkpoint::path(&dir));
        replay.report.discarded_unclean = true;
        finish(inner, &mut replay, appendonly, t0);
        return replay.report;
    }
    let mut start = LogPosition {
        segment: 0,
        offset: 0,
    };
    match checkpoint::load(&dir) {
        Ok(Some(cp)) if cp.header.databases as usize <= inner.keys.databases => {
            replay.report.from_checkpoint = true;
            start = cp.header.position;
            replay.max_seq = cp.header.next_seq.saturating_sub(1);
            inner
                .durability
                .persist
                .checkpoint_segment
                .store(start.segment, Relaxed);
            load_entries(inner, &cp, &mut replay);
            for (id, rec) in part_changes::checkpoint_chains(inner, &cp) {
                replay.part_changes.entry(id).or_default().push(rec);
            }
        }
        Ok(Some(cp)) => {
            replay.report.checkpoint_error = Some(format!(
                "written with {} databases, this run has {}",
                cp.header.databases, inner.keys.databases
            ));
        }
        Ok(None) => {}
        Err(e) => {
            tracing::error!("checkpoint unusable ({e}); recovering by a full scan of the log");
            replay.report.checkpoint_error = Some(e);
        }
    }
    let newest = segments.last().map(|s| s.id);
    for seg in &segments {
        if seg.id < start.segment {
            continue;
        }
        let from = if seg.id == start.segment {
            start.offset.max(SEGMENT_DATA_START)
        } else {
            SEGMENT_DATA_START
        };
        let tomb = replay.segment(seg.id, &seg.path, from, Some(seg.id) == newest);
        // A segment scanned from its start has an exact count.
        let known = from == SEGMENT_DATA_START;
        seg.tomb_bytes
            .store(if known { tomb } else { tomb.max(1) }, Relaxed);
    }
    replay.drop_torn_batch();
    chunks::resolve_all(inner, &mut replay);
    let seen = std::mem::take(&mut replay.changes);
    changes::resolve_all(inner, seen, replay.now, &mut replay.report);
    finish(inner, &mut replay, appendonly, t0);
    replay.report
}

fn load_entries(inner: &Inner, cp: &checkpoint::Loaded, replay: &mut Replay<'_>) {
    if cp.header.shards as usize == inner.shards.len()
        && cp.header.shard_seed == inner.shard_seed
        && cp.sections.len() == inner.shards.len()
    {
        replay.report.checkpoint_entries = load_sections(inner, cp, replay.now);
        return;
    }
    // Another shard layout: hash every key to its shard.
    // Most keys are in few databases; size the maps for an even spread.
    let per_shard = (cp.entries as usize / inner.shards.len()) + 16;
    for s in inner.shards.iter() {
        s.lock().dbs[0].reserve_exact(per_shard);
    }
    let now = replay.now;
    for e in cp.iter() {
        replay.report.checkpoint_entries += 1;
        let mut guard = inner.shard(e.key).lock();
        insert_checkpoint_entry(inner, &mut guard, &e, now);
    }
}

/// Inserts one checkpoint entry into its shard as a cold entry (skipped if
/// its database is out of range, it expired, or its length is impossible).
fn insert_checkpoint_entry(inner: &Inner, sh: &mut Shard, e: &checkpoint::CpEntry<'_>, now: u64) {
    let d = e.db as usize;
    if d >= inner.keys.databases || (e.expire_at_ms != 0 && e.expire_at_ms <= now) {
        return;
    }
    let (slot, value_len) = match &e.chunks {
        // A chunked collection: its directory, every part on flash (a
        // part with an unknown count or a gap is settled by
        // `chunks::resolve`).
        Some(c) => {
            let mut firsts = c.firsts();
            let mut order = Vec::new();
            let mut parts: Vec<PartInfo> = Vec::new();
            let mut stream = Vec::new();
            let mut pel = Vec::new();
            for p in c.parts() {
                if p.depth == PEL_DEPTH {
                    pel.push(PartInfo::on_flash(
                        p.low, p.depth, p.count, p.body, p.loc, p.seq,
                    ));
                    continue;
                }
                if p.depth == STREAM_DEPTH {
                    let Some(bound) = firsts.next().and_then(|b| b.try_into().ok()) else {
                        return;
                    };
                    stream.push(StreamPartInfo {
                        info: PartInfo::on_flash(p.low, p.depth, p.count, p.body, p.loc, p.seq),
                        bound,
                    });
                    continue;
                }
                if p.depth == ORDER_DEPTH {
                    let Some(first) = firsts.next() else { return };
                    order.push(OrderInfo {
                        id: p.low as u32,
                        first: first.into(),
                        count: p.count,
                        body: p.body,
                        loc: Some(p.loc),
                        seq: p.seq,
                    });
                    continue;
                }
                parts.push(PartInfo::on_flash(
                    p.low, p.depth, p.count, p.body, p.loc, p.seq,
                ));
            }
            let big = e.meta.client_flags & crate::types::AUX_BIG != 0;
            let coll = if e.meta.vtype == crate::base::ValueType::Stream {
                Some(Collection::stream_from_directory(
                    c.cid,
                    &stream,
                    &pel,
                    Some(e.loc),
                    c.head_seq,
                ))
            } else {
                Collection::from_directory(
                    e.meta.vtype,
                    big,
                    c.cid,
                    &parts,
                    &order,
                    Some(e.loc),
                    c.head_seq,
                    None,
                )
            };
            let Some(coll) = coll else {
                return;
            };
            let len = coll.encoded_len().min(u32::MAX as usize) as u32;
            (Slot::Chunked(Box::new(coll)), len)
        }
        None => match checkpoint::value_len(e) {
            Some(n) => (Slot::Cold(e.loc), n),
            None => return,
        },
    };
    let entry = Entry {
        slot,
        expire_at_ms: e.expire_at_ms,
        version: e.seq,
        // (`now_secs` of `now`: a clock read per entry was 8% of loading.)
        lru_secs: (now / 1000) as u32,
        lfu: crate::index::access::LFU_INIT_VAL,
        flags: 0,
        value_len,
        client_flags: e.meta.client_flags,
        vtype: e.meta.vtype as u8,
    };
    let k = CompactKey::from(e.key);
    let heap = k.heap_bytes();
    sh.acct.entry_added(d, heap, &entry);
    let (idx, old) = sh.dbs[d].insert_full(k, entry);
    if let Some(old) = old {
        // A key copied twice (checkpoint invariant 3): counted once.
        sh.acct.entry_removed(d, heap, &old);
    }
    if e.meta.stale || e.meta.explicit_cas.is_some() {
        sh.apply_item_meta(d, idx, &e.meta);
    }
}

/// Threads recovery splits the shards among: one per core (at most 8).
pub(super) fn recovery_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// Loads each shard's section into its shard, on as many threads as there
/// are cores (each shard is filled by one thread). Returns the entries read.
fn load_sections(inner: &Inner, cp: &checkpoint::Loaded, now: u64) -> u64 {
    let threads = recovery_threads();
    let read = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let read = &read;
            scope.spawn(move || {
                for si in (t..inner.shards.len()).step_by(threads) {
                    let mut guard = inner.shards[si].lock();
                    let sh = &mut *guard;
                    let count = cp.sections[si].2 as usize;
                    sh.dbs[0].reserve_exact(count);
                    let mut n = 0;
                    for e in cp.section(si) {
                        n += 1;
                        insert_checkpoint_entry(inner, sh, &e, now);
                    }
                    read.fetch_add(n, Relaxed);
                }
            });
        }
    });
    read.load(Relaxed)
}

/// Drops entries that point at missing segments, counts live bytes,
/// seeds the sequence counter and writes the state file for this run.
fn finish(inner: &Inner, replay: &mut Replay<'_>, appendonly: bool, t0: Instant) {
    // Segment sizes by id, read once (not a table lookup per key).
    let segs: HashMap<u32, u64> = inner
        .flash
        .table
        .snapshot()
        .iter()
        .map(|s| (s.id, s.written.load(Relaxed)))
        .collect();
    let threads = recovery_threads();
    let db_map = &replay.db_map;
    // Per thread: live bytes by segment, keys, entries dropped.
    let results: Vec<(HashMap<u32, u64>, u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let segs = &segs;
                scope.spawn(move || {
                    let mut live: HashMap<u32, u64> = HashMap::new();
                    let (mut keys, mut missing) = (0u64, 0u64);
                    for si in (t..inner.shards.len()).step_by(threads) {
                        let mut guard = inner.shards[si].lock();
                        let sh = &mut *guard;
                        // Maps were filled by database id: arrange them by
                        // the mapping in force (`keyspace::swapdb`).
                        if let Some((_, ids, _)) = db_map {
                            sh.arrange(ids);
                        }
                        for d in 0..sh.dbs.len() {
                            let mut i = 0;
                            while i < sh.dbs[d].len() {
                                // (Most entries are cold: one record, no
                                // list to allocate.)
                                let e = sh.dbs[d].at(i);
                                let (one, many);
                                let locs: &[crate::base::FlashLoc] = match &e.slot {
                                    Slot::Cold(l) => {
                                        one = [*l];
                                        &one
                                    }
                                    _ => {
                                        many = e.flash_locs();
                                        &many
                                    }
                                };
                                let ok = locs.iter().all(|l| {
                                    segs.get(&l.segment).is_some_and(|&written| {
                                        l.offset as u64 + l.len as u64 <= written
                                    })
                                });
                                if !ok {
                                    missing += 1;
                                    Replay::remove(sh, d, i);
                                    continue;
                                }
                                for l in locs {
                                    *live.entry(l.segment).or_insert(0) += l.len as u64;
                                }
                                drop(e);
                                // Replay boxed what it changed.
                                sh.dbs[d].pack(i);
                                i += 1;
                            }
                            keys += sh.dbs[d].len() as u64;
                        }
                    }
                    (live, keys, missing)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut keys = 0u64;
    for (live, k, missing) in results {
        keys += k;
        replay.report.missing_segment_entries += missing;
        for (id, bytes) in live {
            if let Some(seg) = inner.flash.table.get(id) {
                seg.live_bytes.fetch_add(bytes, Relaxed);
            }
            inner.flash.live_bytes.add(bytes);
        }
    }
    if let Some((_, ids, loc)) = &replay.db_map {
        inner.keys.dbmap.set(ids);
        inner.keys.dbmap.record.publish(inner, *loc);
    }
    if let Some((_, blob, loc)) = replay.functions.take() {
        inner.keys.functions.recovered(blob);
        inner.keys.functions.record.publish(inner, loc);
    }
    if replay.report.missing_segment_entries > 0 {
        tracing::error!(
            "recovery: {} keys pointed at log data that is gone; they were dropped",
            replay.report.missing_segment_entries
        );
    }
    inner.seq.fetch_max(replay.max_seq + 1, Relaxed);
    replay.report.keys = keys;
    replay.report.duration_ms = t0.elapsed().as_millis() as u64;
    let dir = inner.flash.table.dir();
    if let Err(e) = write_state(
        dir,
        RunState {
            appendonly,
            clean: false,
        },
    ) {
        tracing::error!("cannot write {}: {e}", state_path(dir).display());
    }
    if !appendonly {
        // A crash of this run must not bring the loaded state back.
        let _ = std::fs::remove_file(checkpoint::path(dir));
    }
    tracing::info!(
        "recovery: {} keys in {} ms ({}; {} segments, {} bytes scanned, {} records replayed, \
         {} damaged, {} torn-tail bytes)",
        keys,
        replay.report.duration_ms,
        if replay.report.from_checkpoint {
            "checkpoint + log tail"
        } else {
            "full log scan"
        },
        replay.report.segments_scanned,
        replay.report.bytes_scanned,
        replay.report.records_replayed,
        replay.report.corrupt_records,
        replay.report.torn_tail_bytes
    );
}
