//! Reading cold values: one device read per fetch (invariant 4), verified,
//! then promoted to RAM according to the [`PromotePolicy`].
//!
//! A fetch captures the entry's version and location under the shard lock,
//! releases the lock, reads, and re-locks only to promote — and only if the
//! entry still has the same version and location (invariant 5).

use crate::base::FlashLoc;
use crate::flash::buf::{align_down, align_up, AlignedBuf};
use crate::flash::format;
use crate::flash::io;
use crate::flash::segment::Segment;
use crate::index::{Slot, F_TOUCHED};
use crate::stats::Stats;
use crate::{EngineError, Inner, PromotePolicy};
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The result of an engine operation: available now (RAM only) or after a
/// flash read.
pub enum Read<T> {
    Ready(T),
    Pending(Pin<Box<dyn Future<Output = T> + Send + 'static>>),
}

impl<T: Send + 'static> Read<T> {
    /// Waits for the result (either way).
    pub async fn wait(self) -> T {
        match self {
            Read::Ready(v) => v,
            Read::Pending(f) => f.await,
        }
    }

    /// Whether the result is available now.
    pub fn is_ready(&self) -> bool {
        matches!(self, Read::Ready(_))
    }

    /// The result if it is available now.
    pub fn into_ready(self) -> Option<T> {
        match self {
            Read::Ready(v) => Some(v),
            Read::Pending(_) => None,
        }
    }

    /// Maps the eventual result.
    pub fn map<U: Send + 'static>(self, f: impl FnOnce(T) -> U + Send + 'static) -> Read<U> {
        match self {
            Read::Ready(v) => Read::Ready(f(v)),
            Read::Pending(fut) => Read::Pending(Box::pin(async move { f(fut.await) })),
        }
    }
}

/// What a fetch needs to know about the entry it reads for.
pub(crate) struct FetchTarget {
    pub db: usize,
    pub key: Box<[u8]>,
    pub loc: FlashLoc,
    pub version: u64,
    /// Looked up while the shard lock was held, so the segment cannot have
    /// been freed yet; holding it keeps the file readable (segment
    /// invariant 3) even if the collector frees it before the read.
    pub segment: Option<Arc<Segment>>,
}

impl FetchTarget {
    /// Caller holds the shard lock of `key`.
    pub fn new(inner: &Inner, db: usize, key: &[u8], loc: FlashLoc, version: u64) -> FetchTarget {
        FetchTarget {
            db,
            key: key.into(),
            loc,
            version,
            segment: inner.flash.table.get(loc.segment),
        }
    }
}

/// `FetchTarget::version` of a record whose sequence number the reader
/// learns from it (a part change record a spilled chain names: the chain
/// checks how its records link, `parts::chains`).
pub(crate) const ANY_SEQ: u64 = u64::MAX;

/// Reads and verifies the value of a cold entry. Does not promote.
pub(crate) async fn fetch_value(inner: Arc<Inner>, t: &FetchTarget) -> Result<Bytes, EngineError> {
    fetch_record(inner, t).await.map(|(_, v)| v)
}

/// Reads and verifies the record `t` names: its sequence number and value.
pub(crate) async fn fetch_record(
    inner: Arc<Inner>,
    t: &FetchTarget,
) -> Result<(u64, Bytes), EngineError> {
    let Some(seg) = t.segment.clone() else {
        Stats::inc(&inner.stats.read_errors);
        return Err(EngineError::Corrupt("segment missing"));
    };
    let start = align_down(t.loc.offset as u64);
    let end = align_up(t.loc.offset as usize + t.loc.len as usize) as u64;
    let buf = AlignedBuf::for_read((end - start) as usize);
    inner.stats.pending_reads.fetch_add(1, Ordering::Relaxed);
    let (buf, r) = if crate::index::lock::in_section() {
        // A section waits for its reads on its own thread, not through a
        // runtime whose workers may be waiting for its shards
        // (`keyspace::exclusive` invariant 1).
        let mut buf = buf;
        let r = crate::flash::io::psync::read_full(&seg.file, &mut buf, start);
        (buf, r)
    } else {
        io::read(&*inner.flash.io, seg.file.clone(), start, buf).await
    };
    inner.stats.pending_reads.fetch_sub(1, Ordering::Relaxed);
    Stats::inc(&inner.stats.fetches);
    drop(seg);
    let n = match r {
        Ok(n) => n,
        Err(e) => {
            Stats::inc(&inner.stats.read_errors);
            return Err(EngineError::Io(e));
        }
    };
    let off = (t.loc.offset as u64 - start) as usize;
    let rec_end = off + t.loc.len as usize;
    if n < rec_end {
        Stats::inc(&inner.stats.read_errors);
        return Err(EngineError::Corrupt("short read"));
    }
    let (seq, vstart, vlen) = match format::decode_record(&buf[off..rec_end]) {
        Ok(rec) if rec.key == &*t.key && (rec.header.seq == t.version || t.version == ANY_SEQ) => (
            rec.header.seq,
            // Where the value's bytes start (after the flags of kind 4).
            off + rec.header.record_len() - rec.value.len(),
            rec.value.len(),
        ),
        Ok(_) => {
            Stats::inc(&inner.stats.read_errors);
            return Err(EngineError::Corrupt("record does not match the index"));
        }
        Err(_) => {
            Stats::inc(&inner.stats.read_errors);
            return Err(EngineError::Corrupt("checksum mismatch"));
        }
    };
    // Small values get an exact allocation; large ones keep the read buffer.
    if vlen * 2 < buf.capacity() {
        let v = Bytes::copy_from_slice(&buf[vstart..vstart + vlen]);
        buf.recycle();
        Ok((seq, v))
    } else {
        Ok((seq, Bytes::from_owner(buf).slice(vstart..vstart + vlen)))
    }
}

/// Fetches a cold value and promotes it if the policy says so.
pub(crate) async fn fetch_and_promote(
    inner: Arc<Inner>,
    t: FetchTarget,
) -> Result<Option<Bytes>, EngineError> {
    let value = fetch_value(inner.clone(), &t).await?;
    if inner.tun.promote() != PromotePolicy::Never {
        let mut guard = inner.shard(&t.key).lock();
        let sh = &mut *guard;
        let promoted = promote_fetched(inner.as_ref(), sh, &t, &value);
        drop(guard);
        if promoted {
            inner.wake_if_pressured();
        }
    }
    Ok(Some(value))
}

/// Brings a value read from flash back to RAM if the promotion policy says
/// so and its entry did not change since the read was planned; returns
/// whether it did. Caller holds the key's shard lock.
pub(crate) fn promote_fetched(
    inner: &Inner,
    sh: &mut crate::index::Shard,
    t: &FetchTarget,
    value: &Bytes,
) -> bool {
    let policy = inner.tun.promote();
    let Some(e) = sh.dbs[t.db].get_mut(&t.key) else {
        return false;
    };
    let same = e.version == t.version && matches!(e.slot, Slot::Cold(l) if l == t.loc);
    let promote = same
        && match policy {
            PromotePolicy::FirstRead => true,
            PromotePolicy::SecondRead => e.flags & F_TOUCHED != 0,
            PromotePolicy::Never => false,
        };
    if promote {
        e.flags &= !F_TOUCHED;
        let hot = Slot::hot(value.clone(), Some(t.loc));
        e.replace_slot(&mut sh.acct, hot);
        Stats::inc(&inner.stats.uploads);
    } else if same {
        e.flags |= F_TOUCHED;
    }
    promote
}

impl crate::Engine {
    /// Drops from RAM every value and collection part that has an
    /// unchanged copy on flash, so that the next read of each decodes its
    /// record (DEBUG RELOAD after a checkpoint: what Redis's save-and-load
    /// does to every value). Values changed since their record, and those
    /// being written, stay. Returns (values, parts) dropped.
    pub fn drop_ram_copies(&self) -> (usize, usize) {
        let (mut values, mut parts) = (0, 0);
        for shard in self.inner.shards.iter() {
            let mut guard = shard.lock();
            let sh = &mut *guard;
            for db in 0..sh.dbs.len() {
                for i in 0..sh.dbs[db].len() {
                    if sh.dbs[db].boxed_at(i).is_none() {
                        continue; // packed: cold already
                    }
                    let Some((_, e)) = sh.dbs[db].get_index_mut(i) else {
                        break;
                    };
                    if e.flags & crate::index::F_STASHING != 0 {
                        continue;
                    }
                    match &e.slot {
                        Slot::Hot(h) => {
                            if let Some(loc) = h.backing() {
                                let old = e.replace_slot(&mut sh.acct, Slot::Cold(loc));
                                for l in old.locs().into_iter().filter(|&l| l != loc) {
                                    self.inner.release_flash_quiet(l);
                                }
                                sh.dbs[db].pack(i);
                                values += 1;
                            }
                        }
                        Slot::Chunked(_) => {
                            parts += e
                                .with_dir(&mut sh.acct, |d| {
                                    (0..d.part_count()).filter(|&p| d.evict(p) > 0).count()
                                })
                                .unwrap_or(0);
                        }
                        Slot::Cold(_) => {}
                    }
                }
            }
        }
        (values, parts)
    }
}
