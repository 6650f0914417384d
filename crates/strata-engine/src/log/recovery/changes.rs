//! Change records (kind 12, `types::changes`) at recovery: the replay keeps
//! each admitted one per key; once the log is replayed, a key whose record
//! is the base of some of them gets its value read, the chain of changes
//! applied in order (each on the state its base left), and is left in RAM
//! with that chain as its records, recording its changes on. A change
//! whose base is not the key's state (an older chain's, one an image or
//! a tombstone replaced) counts for nothing.

use super::RecoveryReport;
use crate::base::{FlashLoc, ValueType};
use crate::flash::format;
use crate::index::{Hot, Slot, Value};
use crate::types::changes::{Chain, Recorder};
use crate::types::Collection;
use crate::Inner;

/// A change record seen by the replay.
pub(super) struct ChangeRec {
    seq: u64,
    base: u64,
    expire_at_ms: u64,
    vtype: ValueType,
    bits: u8,
    ops: Box<[u8]>,
    loc: FlashLoc,
}

/// The change records the replay kept, per (db id, key).
#[derive(Default)]
pub(super) struct Seen(std::collections::HashMap<(u16, Box<[u8]>), Vec<ChangeRec>>);

impl Seen {
    /// A change record of (db, key) the replay admitted (no flush or
    /// tombstone seen so far is newer); false if its value does not decode.
    pub(super) fn note(
        &mut self,
        h: format::RecordHeader,
        key: &[u8],
        value: &[u8],
        loc: FlashLoc,
    ) -> bool {
        let Some(c) = format::change::decode(value) else {
            return false;
        };
        self.0
            .entry((h.db, Box::from(key)))
            .or_default()
            .push(ChangeRec {
                seq: h.seq,
                base: c.base,
                expire_at_ms: h.expire_at_ms,
                vtype: c.vtype,
                bits: c.bits,
                ops: c.ops.into(),
                loc,
            });
        true
    }
}

/// Applies the chains of every key (module doc).
pub(super) fn resolve_all(inner: &Inner, seen: Seen, now: u64, report: &mut RecoveryReport) {
    for ((db, key), mut recs) in seen.0 {
        recs.sort_unstable_by_key(|r| r.seq);
        if !resolve(inner, now, db as usize, &key, &recs) {
            report.corrupt_records += 1;
        }
    }
}

/// The chain of `key`'s changes from its record on; false if a record of
/// it could not be read or applied (the key keeps its record's state).
fn resolve(inner: &Inner, now: u64, d: usize, key: &[u8], recs: &[ChangeRec]) -> bool {
    let (loc, seq, vtype) = {
        let sh = inner.shard(key).lock();
        let Some(e) = sh.dbs.get(d).and_then(|m| m.get(key)) else {
            return true;
        };
        let Slot::Cold(loc) = e.slot else {
            return true;
        };
        (loc, e.version, e.value_type())
    };
    // The changes whose bases follow one another from the record's state.
    let mut chain: Vec<&ChangeRec> = Vec::new();
    let mut at = seq;
    for r in recs {
        if r.base == at && r.seq > at && r.vtype == vtype {
            chain.push(r);
            at = r.seq;
        }
    }
    let Some(last) = chain.last() else {
        return true;
    };
    if last.expire_at_ms != 0 && last.expire_at_ms <= now {
        let mut sh = inner.shard(key).lock();
        if let Some((k, e)) = sh.dbs[d]
            .get_index_of(key)
            .and_then(|i| sh.dbs[d].swap_remove_index(i))
        {
            sh.acct.entry_removed(d, k.heap_bytes(), &e);
        }
        return true;
    }
    let Some(image) = crate::log::read_value_blocking(inner, key, loc, seq) else {
        tracing::error!("recovery: the record a chain of changes starts from is unreadable");
        return false;
    };
    // Without the journal nothing records (the value is saved whole by the
    // next checkpoint; its chain's records are garbage).
    let chain_on = inner.journal.enabled;
    let ch = Chain {
        last_seq: last.seq,
        confirmed: true,
        image: Some(loc),
        changes: chain.iter().map(|r| r.loc).collect(),
        bytes: chain.iter().map(|r| r.loc.len as u64).sum(),
        ..Chain::default()
    };
    let Some(value) = applied(vtype, &image, &chain, chain_on.then_some(ch)) else {
        tracing::error!(
            "recovery: a change record does not apply to its base; the key keeps its older state"
        );
        return false;
    };
    let mut sh = inner.shard(key).lock();
    let sh = &mut *sh;
    let Some(i) = sh.dbs[d].get_index_of(key) else {
        return true;
    };
    let e = sh.dbs[d].at_mut(i);
    if e.version != seq {
        return true;
    }
    let value_len = value.value.len() as u32;
    if let Value::Coll(c) = &value.value {
        e.client_flags = crate::types::aux(c.len(), c.encoding_is_big());
    }
    sh.acct.remove(&e.slot, e.value_len, e.vtype);
    sh.acct.ttl_remove(d, e.expire_at_ms);
    e.slot = Slot::Hot(value);
    e.value_len = value_len;
    e.version = last.seq;
    e.expire_at_ms = last.expire_at_ms;
    sh.acct.add(&e.slot, value_len, e.vtype);
    sh.acct.ttl_add(d, last.expire_at_ms);
    true
}

/// The value `image` (a record of type `vtype`) holds once `chain`'s
/// changes are applied to it, recording from `ch` (with the journal on);
/// None if a change does not apply.
fn applied(vtype: ValueType, image: &[u8], chain: &[&ChangeRec], ch: Option<Chain>) -> Option<Hot> {
    if vtype == ValueType::String {
        let mut bytes = image.to_vec();
        for r in chain {
            bytes = crate::types::changes::apply_str_change(&bytes, &r.ops).ok()?;
        }
        let bytes = bytes::Bytes::from(bytes);
        let mut hot = Hot::new(Value::Str(bytes.clone()), None);
        if let Some(ch) = ch {
            let mut rec = Recorder::default();
            rec.start_spans(ch, bytes);
            hot.start_str_log(rec);
        }
        return Some(hot);
    }
    let mut value = Collection::decode(vtype, image).ok()?;
    for r in chain {
        value.apply_change(r.bits, &r.ops).ok()?;
    }
    value.recorder()?;
    if let Some(ch) = ch {
        value.start_recording(ch, Collection::to_bytes);
    }
    Some(Hot::new(Value::Coll(Box::new(value)), None))
}
