//! Writing the parts of chunked collections (`types::chunked`) to the log,
//! for the journal, demotion and checkpoint saves alike: capture the dirty
//! parts (and the head, if due) under the shard lock, append them (chunks
//! before the head that makes them count, docs/format.md), and publish each
//! part only if it did not change since it was captured. And, for the
//! collector, whether a chunk or head record is live and moving it.

use crate::base::FlashLoc;
use crate::flash::format::{self, RecordHeader, RecordKind};
use crate::index::{Entry, ShardCounters, Slot, F_DIRTY};
use crate::log::part_chains;
use crate::log::writer::{AppendError, SegmentWriter};
use crate::stats::Stats;
use crate::Inner;

/// The records a chunked collection's change needs.
pub(crate) struct ChunkedState {
    pub cid: u64,
    pub vtype: crate::base::ValueType,
    pub bits: u8,
    pub version: u64,
    pub expire_at_ms: u64,
    pub parts: Vec<CapturedPart>,
    /// Elements added blindly since the last capture (`chunked::blind`).
    pub blind_adds: u64,
    pub head: bool,
    /// A list's positions (a stream's part numbers), for its head.
    pub span: Option<(u64, u64)>,
    /// A stream's head fields, and the version they were captured at
    /// (`Dir::head_version`).
    pub meta: Vec<u8>,
    pub head_version: u64,
}

/// One part to write, encoded under the shard lock.
pub(crate) struct CapturedPart {
    pub low: u64,
    pub depth: u8,
    /// The part's index when captured (where to look for it first).
    pub index: usize,
    pub ver: u32,
    /// Drop the part from RAM once its record is published (demotion).
    pub evict: bool,
    /// The value: kind 9's (prefix and body: an image), or kind 13's (a
    /// part change record, `part_chains`).
    pub value: Vec<u8>,
    pub change: bool,
    /// The journal's record of a logged part: it joins (or starts) the
    /// part's chain when published (`part_chains`).
    pub chained: bool,
}

/// The changed parts of chunked entry `e` and its head; None if nothing
/// is due (the log copy is current). `logged`: the journal's capture,
/// which logs a chained part by its changes (`part_chains`); a
/// checkpoint's save writes images. See `capture_dir`.
pub(crate) fn capture_chunked(
    e: &mut Entry,
    acct: &mut ShardCounters,
    logged: bool,
) -> Option<ChunkedState> {
    let (version, expire_at_ms) = (e.version, e.expire_at_ms);
    let (vtype, bits) = match &e.slot {
        Slot::Chunked(c) if c.encoding_is_big() => (c.vtype(), crate::types::BIG_ENCODING),
        Slot::Chunked(c) => (c.vtype(), 0),
        _ => return None,
    };
    let st = e.with_dir(acct, |d| {
        capture_dir(vtype, bits, d, version, expire_at_ms, None, logged)
    })?;
    (!st.parts.is_empty() || st.head).then_some(st)
}

/// The changed parts of directory `d` (or only `picks`, which then leave
/// RAM once published: demotion without the journal) and its head.
///
/// The journal and saves capture every changed part together, and the head
/// is written after them whenever a part is: a part's record counts only
/// under a head at least as new (docs/format.md, "headed" chunks), so a
/// write torn before the head leaves the collection as it was, never half
/// changed (a sorted set's two families, a split's halves, a multi-field
/// HSET). Demotion writes its picks alone only without the journal, where
/// a crash discards the files and a clean shutdown saves every dirty part.
/// The journal also writes the parts whose chain wants an image.
pub(crate) fn capture_dir(
    vtype: crate::base::ValueType,
    bits: u8,
    d: &mut dyn crate::types::parts::Dir,
    version: u64,
    expire_at_ms: u64,
    picks: Option<&[usize]>,
    logged: bool,
) -> ChunkedState {
    let evict = picks.is_some();
    let list = match picks {
        Some(p) => p.to_vec(),
        None if logged => part_chains::due(d),
        None => d.dirty_parts(),
    };
    let parts: Vec<CapturedPart> = list
        .into_iter()
        .map(|i| part_chains::capture_part(vtype, d, i, version, evict, logged))
        .collect();
    let head = !parts.is_empty() || d.head_dirty() || d.head_loc().is_none();
    let mut meta = Vec::new();
    if head {
        d.head_meta(&mut meta);
    }
    ChunkedState {
        cid: d.cid(),
        vtype,
        bits,
        version,
        expire_at_ms,
        head,
        parts,
        blind_adds: d.take_blind_adds(),
        span: d.head_span(),
        meta,
        head_version: d.head_version(),
    }
}

/// Appends a chunked collection's parts, then its head if due (chunk
/// records before the head that makes them count, docs/format.md).
pub(crate) fn append_chunked(
    inner: &Inner,
    w: &mut SegmentWriter,
    db: u16,
    key: &[u8],
    st: &ChunkedState,
) -> Result<(Vec<FlashLoc>, Option<FlashLoc>), AppendError> {
    let mut parts = Vec::with_capacity(st.parts.len());
    for p in &st.parts {
        let h = RecordHeader {
            kind: if p.change {
                RecordKind::PartChange
            } else {
                RecordKind::Chunk
            },
            db,
            key_len: key.len() as u32,
            value_len: p.value.len() as u32,
            seq: st.version,
            expire_at_ms: 0,
        };
        parts.push(w.append(&h, key, &p.value, inner.flash.capacity)?);
    }
    let changes = st.parts.iter().filter(|p| p.change).count() as u64;
    Stats::add(&inner.stats.chunks_written, parts.len() as u64 - changes);
    Stats::add(&inner.stats.part_changes_written, changes);
    Stats::add(&inner.stats.part_blind_adds, st.blind_adds);
    let head = if st.head {
        let value = format::head_value(&format::Head {
            vtype: st.vtype,
            bits: st.bits,
            cid: st.cid,
            span: st.span,
            meta: &st.meta,
        });
        let h = RecordHeader {
            kind: RecordKind::CollHead,
            db,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
            seq: st.version,
            expire_at_ms: st.expire_at_ms,
        };
        Some(w.append(&h, key, &value, inner.flash.capacity)?)
    } else {
        None
    };
    Ok((parts, head))
}

/// Points a chunked collection's parts and head at their new records,
/// each part only if it did not change since it was captured (and drops
/// the parts captured to `evict` from RAM); clears the entry's dirty mark
/// if nothing changed at all (journal invariant 3). Returns how many parts
/// left RAM.
///
/// Parts count only under their head (`capture_dir`): when the head cannot
/// be published (the TTL moved on, and a newer note rewrites it), neither
/// are the parts, which stay changed for that note's capture. So a part in
/// RAM never points at a record newer than its directory's head.
pub(crate) fn publish_chunked(
    inner: &Inner,
    db: u16,
    key: &[u8],
    st: &ChunkedState,
    parts: &[FlashLoc],
    head: Option<FlashLoc>,
) -> usize {
    let mut guard = inner.shard(key).lock();
    let sh = &mut *guard;
    let d = inner.keys.dbmap.logical(db);
    let Some(e) = sh.dbs[d].get_mut(key) else {
        return 0;
    };
    let (version, expire_at_ms) = (e.version, e.expire_at_ms);
    let mut retain = Vec::new();
    let mut release = Vec::new();
    let mut evicted = 0;
    let clean = e.with_dir(&mut sh.acct, |dir| {
        if dir.cid() != st.cid || (head.is_some() && expire_at_ms != st.expire_at_ms) {
            return false;
        }
        for (p, &loc) in st.parts.iter().zip(parts) {
            let r = part_chains::publish_part(dir, p, loc, st.version);
            retain.extend(r.retain);
            release.extend(r.release);
            evicted += r.evicted as usize;
        }
        if let Some(loc) = head {
            retain.push(loc);
            release.extend(dir.head_loc());
            dir.set_head_loc(Some(loc));
            dir.set_head_seq(st.version);
            // A list's positions (a stream's fields) may have moved since
            // the capture.
            if dir.head_span() == st.span && dir.head_version() == st.head_version {
                dir.set_head_dirty(false);
            }
        }
        let clean = !dir.any_dirty();
        if clean {
            // Chains invariant 2: every part's state is in its records.
            release.extend(dir.chains_mut().take_orphans());
        }
        version == st.version && expire_at_ms == st.expire_at_ms && !dir.head_dirty() && clean
    });
    if clean == Some(true) {
        e.flags &= !F_DIRTY;
    }
    for loc in retain {
        inner.retain_flash(loc);
    }
    for loc in release {
        inner.release_flash_quiet(loc);
    }
    evicted
}

/// Whether entry `e` refers to the chunk or head record (`kind`, `value`)
/// at `loc`: a chunked collection of the record's collection id whose head
/// or one of whose parts is there (collector rule 2).
pub(crate) fn refers_to(e: &Entry, kind: RecordKind, value: &[u8], loc: FlashLoc) -> bool {
    let Slot::Chunked(c) = &e.slot else {
        return false;
    };
    let Some(d) = c.dir() else {
        return false;
    };
    match kind {
        RecordKind::CollHead => d.head_loc() == Some(loc),
        RecordKind::Chunk => format::decode_chunk(value).is_some_and(|(name, body)| {
            d.cid() == name.cid && !d.parts_at(loc, name.low, name.depth, &body).is_empty()
        }),
        RecordKind::PartChange => format::decode_chunk(value).is_some_and(|(name, _)| {
            d.cid() == name.cid && d.chains().holds((name.low, name.depth), loc)
        }),
        _ => false,
    }
}

/// Points a chunked collection's head or parts that referred to the record
/// (`kind`, `value`) at `old` to its copy at `new`; returns how many
/// references moved (each is released at `old` and retained at `new`).
pub(crate) fn move_record(
    e: &mut Entry,
    acct: &mut ShardCounters,
    kind: RecordKind,
    value: &[u8],
    old: FlashLoc,
    new: FlashLoc,
) -> usize {
    e.with_dir(acct, |d| {
        if kind == RecordKind::CollHead {
            if d.head_loc() == Some(old) {
                d.set_head_loc(Some(new));
                return 1;
            }
            return 0;
        }
        let Some((name, body)) = format::decode_chunk(value) else {
            return 0;
        };
        if d.cid() != name.cid {
            return 0;
        }
        if kind == RecordKind::PartChange {
            return d.chains_mut().moved((name.low, name.depth), old, new);
        }
        let parts = d.parts_at(old, name.low, name.depth, &body);
        for &i in &parts {
            d.set_part_loc(i, new);
            // (A part's chain is under the part's name, which may differ
            // from its record's: a split part, a list's renamed head.)
            let part = d.part_name(i);
            d.chains_mut().image_moved(part, old, new);
        }
        parts.len()
    })
    .unwrap_or(0)
}
