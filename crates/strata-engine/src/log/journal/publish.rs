//! Publishing a written batch: each record becomes its entry's flash copy
//! if the entry still has the captured state (journal invariants 2 and 6
//! in `mod.rs`), shard by shard, with the misses of a big batch overlapped
//! by prefetching.

use super::batch::{Captured, Placed, State};
use super::collection::RECORD_FROM;
use crate::base::FlashLoc;
use crate::index::{Slot, Value, F_DIRTY};
use crate::Inner;

/// Most records published under one hold of a shard lock.
const PUBLISH_RUN: usize = 64;

/// Publishes the single records of a batch shard by shard: a shard is
/// locked once per run of its records (at most `PUBLISH_RUN`), and each
/// record's bucket and entry are prefetched ahead of it. A batch holds
/// thousands of keys spread over the whole index, so without this each
/// record waited for two cache misses in turn (the bucket, then the boxed
/// entry: a third of the journal's time per record).
pub(super) fn publish_all(inner: &Inner, placed: &[(&Captured, Placed)]) {
    let mut ones: Vec<(u32, u32)> = placed
        .iter()
        .enumerate()
        .filter(|(_, (_, p))| matches!(p, Placed::One(_)))
        .map(|(k, (c, _))| (inner.shard_index(&c.key) as u32, k as u32))
        .collect();
    ones.sort_unstable();
    for run in ones.chunk_by(|a, b| a.0 == b.0) {
        for run in run.chunks(PUBLISH_RUN) {
            let mut guard = inner.shards[run[0].0 as usize].lock();
            guard.pipelined(
                run,
                |&(_, k)| {
                    let c = placed[k as usize].0;
                    (inner.keys.dbmap.logical(c.db), c.pos)
                },
                |sh, &(_, k)| {
                    if let (c, Placed::One(loc)) = &placed[k as usize] {
                        publish(inner, sh, c, *loc);
                    }
                },
            );
        }
    }
}

/// Points the entry at its new record if it still has the captured state
/// (the caller holds the key's shard lock).
fn publish(inner: &Inner, sh: &mut crate::index::Shard, c: &Captured, loc: FlashLoc) {
    let db = inner.keys.dbmap.logical(c.db);
    let Some(idx) = sh.dbs[db].get_index_of_from(c.pos, &c.key) else {
        return;
    };
    if publish_chained(inner, sh, db, idx, c, loc) {
        return;
    }
    if sh.item_meta(db, &c.key, &sh.dbs[db].at(idx)) != c.meta {
        // Changed since the capture: a later batch logs it (still dirty).
        // After a value note, a newer record of the same write (demotion's,
        // with the item state set after the store) may precede this one in
        // the log, and recovery takes the later: log the state again
        // (invariant 6).
        let v = sh.dbs[db].at(idx).version;
        if matches!(c.what, State::Hot { version, .. } if version == v) {
            inner.log_again(sh, db, idx);
        }
        return;
    }
    let e = sh.dbs[db].at_mut(idx);
    let (version, expire_at_ms) = match &c.what {
        State::Hot {
            version,
            expire_at_ms,
            ..
        }
        | State::Cold {
            version,
            expire_at_ms,
            ..
        } => (*version, *expire_at_ms),
        State::Gone { .. } | State::Chunked(_) | State::Change { .. } => return,
    };
    if e.version != version || e.expire_at_ms != expire_at_ms {
        return;
    }
    // Same version, TTL and item state: the new record is the entry's whole
    // current state, wherever the value went meanwhile (demoted, promoted,
    // moved by the collector), so it becomes the entry's record. (Leaving
    // it unpublished would leave the entry dirty with no note queued, and
    // an older record of the same write could later be copied after it.)
    let old = match &mut e.slot {
        // The hot value's bytes are unchanged (same version): only its
        // flash copy moves, so the shard's byte counters stay as they are.
        Slot::Hot(h) => h.set_backing(Some(loc)),
        Slot::Cold(cur) => {
            let old = Some(*cur);
            e.replace_slot(&mut sh.acct, Slot::Cold(loc));
            old
        }
        // Another incarnation now (a chunked state publishes its own way).
        Slot::Chunked(_) => return,
    };
    e.flags &= !F_DIRTY;
    sh.dbs[db].pack(idx);
    if let Some(old) = old {
        inner.release_flash_quiet(old);
    }
    inner.retain_flash(loc);
}

/// The records of a collection's chain (`types::changes`): a change record
/// joins the chain it was captured for, and an image starts the chain the
/// value records from its capture on, releasing the records of the chain
/// it replaces. Returns whether the record was dealt with here; an image
/// whose entry has not changed since goes on to become its backing too,
/// as any record of a current state. A record whose chain is gone (the
/// value replaced, moved to flash, or its chain restarted) is garbage
/// from birth.
fn publish_chained(
    inner: &Inner,
    sh: &mut crate::index::Shard,
    db: usize,
    idx: usize,
    c: &Captured,
    loc: FlashLoc,
) -> bool {
    let (version, expire_at_ms, change) = match &c.what {
        State::Change {
            version,
            expire_at_ms,
            ..
        } => (*version, *expire_at_ms, true),
        State::Hot {
            version,
            expire_at_ms,
            ..
        } => (*version, *expire_at_ms, false),
        _ => return false,
    };
    let same_meta = sh.item_meta(db, &c.key, &sh.dbs[db].at(idx)) == c.meta;
    let e = sh.dbs[db].at_mut(idx);
    let current = same_meta && e.version == version && e.expire_at_ms == expire_at_ms;
    let Slot::Hot(h) = &mut e.slot else {
        return change;
    };
    let small = matches!(&h.value, Value::Coll(c) if c.encoded_len() < RECORD_FROM);
    let Some(chain) = h.chain_mut() else {
        return change;
    };
    if chain.last_seq != version || chain.confirmed {
        return change;
    }
    chain.confirmed = true;
    if change {
        chain.changes.push(loc);
        chain.bytes += loc.len as u64;
        inner.retain_flash(loc);
        if current {
            // The chain holds the whole current state (invariant 3).
            e.flags &= !F_DIRTY;
        }
        return true;
    }
    debug_assert!(
        chain.changes.is_empty(),
        "changes of a chain before its image"
    );
    for old in std::mem::take(&mut chain.superseded) {
        inner.release_flash_quiet(old);
    }
    if small {
        // It records no more (`batch::RECORD_FROM`): unchanged since, the
        // image is its backing (below); else a later image replaces it.
        if let Value::Coll(c) = &mut h.value {
            c.stop_recording();
        }
        return !current;
    }
    if current {
        // Unchanged since: the image is the backing (below), which the
        // chain's next change takes as its image (`KeysView::finish`).
        return false;
    }
    chain.image = Some(loc);
    inner.retain_flash(loc);
    true
}
