//! A hot collection's record as the journal writes it: its change record
//! (kind 12: the ops recorded since the chain's last record, or a stream's
//! byte spans against it) or its image, and the chain it starts
//! (`types::changes`).

use super::batch::State;
use crate::base::FlashLoc;
use crate::flash::format::{self, RECORD_HEADER_LEN};
use crate::types::changes::Chain;
use crate::types::Collection;

/// Most change records after an image: past them, the next record is an
/// image (recovery applies at most this many to one value).
const MAX_CHANGES: usize = 32;
/// A value records its changes only from this packed size on: below it an
/// image costs little more than a change record, and the log's ~130 bytes
/// of RAM per value would cost more than it saves.
pub(super) const RECORD_FROM: usize = 512;

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
        let ch = &log.chain;
        let open = ch.confirmed
            && !ch.want_image
            && ch.last_seq < version
            && ch.changes.len() < MAX_CHANGES;
        let spans = match (&log.base, &encoded) {
            (Some(base), Some(new)) if open => format::part_change::diff(base, new),
            _ => None,
        };
        // (A spans op is its code and a length before the spans.)
        let pending = if spans_mode {
            spans.as_ref().map(|sp| sp.len() + 5)
        } else {
            log.ops().map(<[u8]>::len)
        };
        let fits =
            open && pending.is_some_and(|n| n + ch.bytes as usize + RECORD_HEADER_LEN < size);
        if fits {
            let ops = match spans {
                Some(sp) => {
                    let mut ops = Vec::with_capacity(sp.len() + 5);
                    crate::types::changes::Op::Spans(&sp).encode(&mut ops);
                    log.base = encoded;
                    ops
                }
                None => log.take_ops(),
            };
            let base = log.chain.last_seq;
            log.chain.last_seq = version;
            log.chain.confirmed = false;
            let value = format::change::Change {
                base,
                vtype,
                bits,
                ops: &ops,
            }
            .encode();
            return State::Change {
                value,
                version,
                expire_at_ms,
            };
        }
    }
    let value = encoded.unwrap_or_else(|| c.to_bytes());
    if c.recorder().is_some() {
        let superseded: Vec<FlashLoc> = c
            .stop_recording()
            .map(|l| l.chain.locs().collect())
            .unwrap_or_default();
        // (A value below `RECORD_FROM` with an old chain keeps a log only
        // until this image is published, to release that chain then.)
        if size >= RECORD_FROM || !superseded.is_empty() {
            let chain = Chain {
                last_seq: version,
                superseded,
                ..Chain::default()
            };
            c.start_recording(chain, |_| value.clone());
        }
    }
    State::Hot {
        value,
        version,
        expire_at_ms,
    }
}
