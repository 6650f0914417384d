//! Logging a chunked collection's parts by their changes: what the journal
//! writes for one part (a part change record while the part's chain allows
//! one, else an image), and what a written record does to the part and its
//! chain once published (`types::parts::chains`, docs/format.md "Part
//! change records").
//!
//! The policy: a part the journal logs keeps the body of its last record
//! (its chain's `base`); its next change is the byte spans between that
//! body and the new one, while its chain is confirmed, its image is the
//! part's record, it has fewer than `CHAIN_MAX` changes, and the change
//! and the chain add up to less than the part. Else, and for saves and
//! demotion's writes, an image.

use super::chunks::CapturedPart;
use crate::base::FlashLoc;
use crate::flash::format::{self, part_change, RECORD_HEADER_LEN};
use crate::types::parts::{chains::CHAIN_MAX, Dir, PartChain};

/// The parts the journal writes for `d`: the changed ones and those whose
/// chain wants an image, in order. Chains whose part is gone (split,
/// merged, emptied, renamed) are orphaned here (chains invariant 2), when
/// the parts changed in number since the last look, or every
/// `SWEEP_EVERY` captures (a look costs a search per chain).
pub(super) fn due(d: &mut dyn Dir) -> Vec<usize> {
    let mut list = d.dirty_parts();
    if d.chains().is_empty() {
        return list;
    }
    let parts = d.part_count();
    let sweep = d.chains_mut().sweep_due(parts, SWEEP_EVERY);
    let names = if sweep {
        d.chains().names()
    } else {
        d.chains().wanting_image()
    };
    for name in names {
        match d.find_part(name.0, name.1, 0) {
            Some(i) if d.part_name(i) == name => {
                if d.chains().get(name).is_some_and(|c| c.want_image) {
                    list.push(i);
                }
            }
            _ => d.chains_mut().orphan(name),
        }
    }
    list.sort_unstable();
    list.dedup();
    list
}

/// Captures between two looks for chains whose part is gone (`due`).
const SWEEP_EVERY: u32 = 64;

/// Part `i` of `d` as the record to write (module doc): a change when
/// `logged` (the journal's) and its chain allows one; else an image, which
/// starts the part's chain anew when logged and the part stays in RAM (the
/// old chain's records stay live until it is published). A cold part (a
/// cold chain a checkpoint wants restated) is written as one record of
/// all its steps in RAM, on its last spilled record or its image.
pub(super) fn capture_part(
    vtype: crate::base::ValueType,
    d: &mut dyn Dir,
    i: usize,
    version: u64,
    evict: bool,
    logged: bool,
) -> CapturedPart {
    let p = d.part(i);
    let name = (p.low, p.depth);
    let chunk = format::ChunkName {
        vtype,
        headed: true,
        cid: d.cid(),
        depth: p.depth,
        low: p.low,
    };
    let mut out = CapturedPart {
        low: p.low,
        depth: p.depth,
        index: i,
        ver: p.ver,
        evict,
        value: Vec::new(),
        change: false,
        chained: logged && !evict,
    };
    if !p.resident {
        // A cold chain: the steps of its blind adds since its last record,
        // on that record, while the chain allows a change; else all its
        // steps restated on its image.
        let record = d.chains_mut().update(name, |ch| {
            let open = ch.unlogged()
                && logged
                && ch.confirmed
                && !ch.want_image
                && ch.last_seq < version
                && ch.changes.len() < CHAIN_MAX
                && ch.image.is_some()
                && ch.image == p.loc;
            let value = if open {
                ch.captured(false);
                part_change::encode(&chunk, ch.last_seq, &ch.pending[ch.logged..])
            } else {
                // Restated from the last spilled record (chains invariant
                // 5), or from the image.
                let keep = ch.spilled.min(ch.changes.len());
                ch.restate_from(keep);
                ch.captured(ch.pending_diff);
                ch.want_image = false;
                let base = if keep > 0 {
                    ch.spilled_seq
                } else {
                    ch.image_seq
                };
                part_change::encode(&chunk, base, &ch.pending)
            };
            ch.logged = ch.pending.len();
            ch.last_seq = version;
            ch.confirmed = false;
            value
        });
        out.value = record.unwrap_or_default();
        out.change = true;
        return out;
    }
    let mut body = Vec::new();
    d.encode_part(i, &mut body);
    if !logged || evict {
        // An image that ends the chain: its records stay live until no
        // part is changed.
        d.chains_mut().orphan(name);
        out.value = format::chunk_value(&chunk, &body);
        return out;
    }
    let image_len = format::CHUNK_PREFIX_LEN + body.len();
    let spans = d.chains().get(name).and_then(|ch| {
        let open = ch.confirmed
            && !ch.want_image
            && ch.last_seq < version
            && ch.changes.len() < CHAIN_MAX
            && ch.image.is_some()
            && ch.image == p.loc;
        let spans = part_change::diff(ch.base.as_deref().filter(|_| open)?, &body)?;
        let record = RECORD_HEADER_LEN + format::CHUNK_PREFIX_LEN + 12 + spans.len();
        (record + (ch.bytes as usize) < image_len
            && 2 * (ch.pending.len() + spans.len()) < image_len)
            .then_some(spans)
    });
    if let Some(spans) = spans {
        let mut step = Vec::with_capacity(4 + spans.len());
        part_change::push_step(&mut step, &spans);
        let body = bytes::Bytes::from(body);
        let tagged = d.tags_changes();
        let base = d.chains_mut().update(name, |ch| {
            let base = ch.last_seq;
            ch.last_seq = version;
            ch.confirmed = false;
            ch.pending.extend_from_slice(&step);
            ch.logged = ch.pending.len();
            ch.opaque |= !tagged;
            ch.pending_diff = true;
            ch.captured(true);
            ch.base = Some(body);
            base
        });
        out.value = part_change::encode(&chunk, base.unwrap_or_default(), &step);
        out.change = true;
        return out;
    }
    out.value = format::chunk_value(&chunk, &body);
    let superseded = d
        .chains_mut()
        .remove(name)
        .map(|mut c| c.take_locs())
        .unwrap_or_default();
    d.chains_mut().insert(
        name,
        PartChain::new(version, bytes::Bytes::from(body), superseded),
    );
    out
}

/// What publishing one part's record did to the references the engine
/// counts.
#[derive(Default)]
pub(super) struct Published {
    pub retain: Option<FlashLoc>,
    pub release: Vec<FlashLoc>,
    pub evicted: bool,
}

/// Points part `p` (captured at `version`) at its record `loc`: an image
/// becomes the part's record (the part is clean if unchanged since) and
/// its chain's image; a change record joins the part's chain. A record
/// whose part or chain moved on meanwhile is garbage from birth.
pub(super) fn publish_part(
    dir: &mut dyn Dir,
    p: &CapturedPart,
    loc: FlashLoc,
    version: u64,
) -> Published {
    let mut r = Published::default();
    let name = (p.low, p.depth);
    let Some(i) = dir
        .find_part(p.low, p.depth, p.index)
        .filter(|&i| dir.part_name(i) == name)
    else {
        dir.chains_mut().orphan(name);
        return r;
    };
    // The chain this record was captured for, if it still is (a save's
    // or demotion's image of the same version is not the chain's).
    let ours = p.chained
        && dir
            .chains()
            .get(name)
            .is_some_and(|c| c.last_seq == version && !c.confirmed);
    if p.change {
        if !ours {
            return r;
        }
        // The part's record must still be the chain's image (a save may
        // have written the part whole meanwhile): else the chain is over,
        // its records live until no part is changed.
        let record = dir.part(i).loc;
        if dir
            .chains()
            .get(name)
            .is_none_or(|c| c.image.is_none() || c.image != record)
        {
            dir.chains_mut().update(name, |ch| ch.changes.push(loc));
            dir.chains_mut().orphan(name);
            r.retain = Some(loc);
            return r;
        }
        let mut release = Vec::new();
        let chain = dir.chains_mut().update(name, |ch| {
            ch.confirmed = true;
            ch.push_record(loc);
            ch.bytes += loc.len as u64;
            // A restatement replaces the change records before it.
            release.append(&mut ch.superseded);
            (ch.image, ch.image_seq)
        });
        r.release = release;
        r.retain = Some(loc);
        // Clean if unchanged since: the part's record stays its image.
        if let Some((Some(image), image_seq)) = chain {
            if let Some(Some(old)) = dir.published(i, p.ver, image, image_seq) {
                if old != image {
                    // (Cannot happen: the capture checked the image.)
                    r.release.push(old);
                }
            }
        }
        return r;
    }
    match dir.published(i, p.ver, loc, version) {
        Some(old) => {
            r.retain = Some(loc);
            r.release.extend(old);
            if ours {
                let gone = dir.chains_mut().update(name, |ch| {
                    ch.confirmed = true;
                    ch.image = Some(loc);
                    ch.image_seq = version;
                    std::mem::take(&mut ch.superseded)
                });
                r.release.extend(gone.into_iter().flatten());
            }
            if p.evict {
                dir.evict(i);
                r.evicted = true;
            }
        }
        // A newer record of the part is published: this chain is broken.
        None if ours => dir.chains_mut().orphan(name),
        None => {}
    }
    r
}
