//! A hot value's record as the journal writes it, for a value that
//! records its changes (`types::changes`): a collection held as one packed
//! record, or a string changed in place. Its change record (kind 12: the
//! ops recorded since the chain's last record, or its byte spans against
//! that record) or its image, and the chain it starts.

use super::batch::State;
use crate::base::ValueType;
use crate::flash::format::{self, RECORD_HEADER_LEN};
use crate::index::{Hot, Value};
use crate::types::changes::{Chain, ChangeLog, Op};
use crate::types::Collection;
use bytes::Bytes;

/// Most change records after an image: past them, the next record is an
/// image (recovery applies at most this many to one value).
const MAX_CHANGES: usize = 32;
/// A value records its changes only from this packed size on: below it an
/// image costs little more than a change record, and the log's ~130 bytes
/// of RAM per value would cost more than it saves.
pub(crate) const RECORD_FROM: usize = 512;

/// A hot collection's state to log: what changed since its chain's last
/// record, while that is confirmed, the value's ops were all recorded and
/// the chain stays smaller than the value; else its image, from which
/// the value records its changes anew (the old chain's records stay live
/// until the image is published: `types::changes`). The policy: a value
/// changed a little is logged by its changes until they add up to its
/// size (or `MAX_CHANGES` records); then, or when it leaves RAM or a
/// checkpoint wants it, whole.
pub(super) fn capture(c: &mut Collection, version: u64, expire_at_ms: u64) -> State {
    let (size, vtype, bits) = (c.encoded_len(), c.vtype(), c.encoding_bits());
    // A value logged by its spans is encoded first: its change is diffed
    // from that (`types::changes`).
    let spans_mode = c.logs_spans();
    let encoded =
        (spans_mode && c.change_log().is_some_and(|l| l.base.is_some())).then(|| c.to_bytes());
    if let Some(log) = c.change_log_mut() {
        let change = match &encoded {
            Some(now) => spans_change(log, now, vtype, bits, version, expire_at_ms),
            None if spans_mode => None,
            None => {
                let open = takes_change(&log.chain, version);
                let fits = log.ops().is_some_and(|ops| {
                    ops.len() + log.chain.bytes as usize + RECORD_HEADER_LEN < size
                });
                (open && fits).then(|| {
                    let ops = log.take_ops();
                    change(log, vtype, bits, &ops, version, expire_at_ms)
                })
            }
        };
        if let Some(st) = change {
            return st;
        }
    }
    let value = encoded.unwrap_or_else(|| c.to_bytes());
    if c.recorder().is_some() {
        let chain = Chain::after(c.stop_recording(), version);
        // (A value below `RECORD_FROM` with an old chain keeps a log only
        // until this image is published, to release that chain then.)
        if size >= RECORD_FROM || !chain.superseded.is_empty() {
            c.start_recording(chain, |_| value.clone());
        }
    }
    State::Hot {
        value,
        version,
        expire_at_ms,
    }
}

/// The change record of `now` by its byte spans against `log`'s base (a
/// stream's or a string's encoding), if the chain takes a change and the
/// change and the chain stay smaller than the value; `now` becomes the
/// base.
fn spans_change(
    log: &mut ChangeLog,
    now: &Bytes,
    vtype: ValueType,
    bits: u8,
    version: u64,
    expire_at_ms: u64,
) -> Option<State> {
    if !takes_change(&log.chain, version) {
        return None;
    }
    let spans = format::part_change::diff(log.base.as_ref()?, now)?;
    // (A spans op is its code and a length before the spans.)
    if spans.len() + 5 + log.chain.bytes as usize + RECORD_HEADER_LEN >= now.len() {
        return None;
    }
    log.base = Some(now.clone());
    let mut ops = Vec::with_capacity(spans.len() + 5);
    Op::Spans(&spans).encode(&mut ops);
    Some(change(log, vtype, bits, &ops, version, expire_at_ms))
}

/// Whether `ch` may take a change record of the state at `version`: its
/// last record is confirmed, no checkpoint wants an image, and it is not
/// at `MAX_CHANGES` yet.
fn takes_change(ch: &Chain, version: u64) -> bool {
    ch.confirmed && !ch.want_image && ch.last_seq < version && ch.changes.len() < MAX_CHANGES
}

/// The change record of `ops`, which `log`'s chain takes as its last.
fn change(
    log: &mut ChangeLog,
    vtype: ValueType,
    bits: u8,
    ops: &[u8],
    version: u64,
    expire_at_ms: u64,
) -> State {
    let base = log.chain.last_seq;
    log.chain.last_seq = version;
    log.chain.confirmed = false;
    let value = format::change::Change {
        base,
        vtype,
        bits,
        ops,
    }
    .encode();
    State::Change {
        value,
        version,
        expire_at_ms,
    }
}

/// A hot string's state to log. A string changed in place of at least
/// `RECORD_FROM` bytes (`Inner::store_in_place`) is logged by its byte
/// spans against its chain's last record, as `capture` logs a stream, or
/// by an image, from which it records anew. Any other string is its image
/// (a copy, `copies`), recording nothing: a SET rewrites the whole value
/// anyway.
pub(super) fn capture_str(h: &mut Hot, version: u64, expire_at_ms: u64) -> State {
    let image = |value: Bytes| State::Hot {
        value,
        version,
        expire_at_ms,
    };
    let Some((bytes, rec)) = h.str_recorder_mut() else {
        return image(match &h.value {
            Value::Str(b) => super::copies::for_note(b),
            v => v.to_bytes(),
        });
    };
    if let Some(st) = rec
        .log_mut()
        .and_then(|log| spans_change(log, bytes, ValueType::String, 0, version, expire_at_ms))
    {
        return st;
    }
    // An image: the chain it replaces stays live until it is published
    // (`types::changes`).
    let chain = Chain::after(rec.stop(), version);
    rec.start_spans(chain, bytes.clone());
    image(bytes.clone())
}
