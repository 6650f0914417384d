//! The value of a part change record (kind 13): what changed in one part of
//! a chunked collection since the part's base record, as steps of byte
//! spans of the part's chunk body (docs/format.md, "Part change records").
//!
//! ```text
//! | chunk prefix (18 B, as kind 9) | base u64 LE | step | step | ... |
//! step: | len u32 LE | len bytes of spans |
//! span: | at u32 LE | cut u32 LE | len u32 LE | len bytes |
//! ```
//!
//! Each step is one change: its spans are in increasing `at` order and do
//! not overlap; each replaces `cut` bytes of the body before the step at
//! `at` (an offset in that body) by its bytes. Applying the steps in order
//! to the body the record `base` left gives the body this record leaves.
//! The journal writes one step per record; a record that restates a cold
//! part's changes since its image (for a checkpoint) holds all of them. A
//! diff is about the size of the change: a field set in place, an element
//! appended, a bit flipped, a count updated.

use super::chunked::{decode_chunk_prefix, ChunkName, CHUNK_PREFIX_LEN};
use super::{le_u32, le_u64};

/// Bytes of a span's own fields.
pub const SPAN_HEADER_LEN: usize = 12;
/// Most spans a diff makes before it takes the rest as one span.
const MAX_SPANS: usize = 8;
/// Equal bytes at the same offset that end a same-length span (a count
/// or a value rewritten in place) rather than the whole rest.
const RESYNC: usize = 8;
/// How far past a mismatch a same-length span may reach.
const LOOKAHEAD: usize = 64;
/// Bytes besides the change in length that the rest of two bodies of
/// different lengths may differ by, to be taken as one span (`diff`).
const SHIFT_SLACK: usize = 32;

/// A part change record's value, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartChange<'a> {
    pub name: ChunkName,
    /// Sequence number of the part's record whose body this one changes.
    pub base: u64,
    /// The encoded steps.
    pub steps: &'a [u8],
}

/// The value of a part change record of part `name` whose steps are
/// `steps` (each as `push_step` appended it).
pub fn encode(name: &ChunkName, base: u64, steps: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(CHUNK_PREFIX_LEN + 8 + steps.len());
    v.extend_from_slice(&super::chunked::chunk_prefix(name));
    v.extend_from_slice(&base.to_le_bytes());
    v.extend_from_slice(steps);
    v
}

/// Appends one step of `spans` (as `diff` made them) to `steps`.
pub fn push_step(steps: &mut Vec<u8>, spans: &[u8]) {
    steps.extend_from_slice(&(spans.len() as u32).to_le_bytes());
    steps.extend_from_slice(spans);
}

/// Reads a part change record's value (None if malformed).
pub fn decode(value: &[u8]) -> Option<PartChange<'_>> {
    let (name, rest) = decode_chunk_prefix(value)?;
    let base = le_u64(rest.get(..8)?);
    Some(PartChange {
        name,
        base,
        steps: rest.get(8..)?,
    })
}

/// Applies encoded `steps` to body `old` in order; None if one does not
/// fit the body before it.
pub fn apply_steps(old: &[u8], steps: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::with_capacity(old.len() + steps.len());
    body.extend_from_slice(old);
    apply_steps_to(&mut body, steps)?;
    Some(body)
}

/// Applies encoded `steps` to `body` in place, in order; None if one does
/// not fit the body before it (`body` is then partly changed). A blind
/// add's step (the count, and an entry appended) costs its own bytes,
/// not a copy of the body.
pub fn apply_steps_to(body: &mut Vec<u8>, mut steps: &[u8]) -> Option<()> {
    while !steps.is_empty() {
        let len = le_u32(steps.get(..4)?) as usize;
        let spans = steps.get(4..4usize.checked_add(len)?)?;
        apply_to(body, spans)?;
        steps = &steps[4 + len..];
    }
    Some(())
}

/// The spans of encoded `spans` as (at, cut, bytes), checked against a body
/// of `len` bytes: in order, not overlapping, within it (None if not, or
/// if the encoding is torn).
type Spans<'a> = smallvec::SmallVec<[(usize, usize, &'a [u8]); 4]>;
fn spans_of(spans: &[u8], len: usize) -> Option<Spans<'_>> {
    let mut list = Spans::new();
    let mut from = 0usize;
    let mut r = spans;
    while !r.is_empty() {
        let at = le_u32(r.get(..4)?) as usize;
        let cut = le_u32(r.get(4..8)?) as usize;
        let n = le_u32(r.get(8..12)?) as usize;
        let bytes = r.get(SPAN_HEADER_LEN..SPAN_HEADER_LEN.checked_add(n)?)?;
        if at < from {
            return None;
        }
        from = at.checked_add(cut)?;
        if from > len {
            return None;
        }
        list.push((at, cut, bytes));
        r = &r[SPAN_HEADER_LEN + n..];
    }
    Some(list)
}

/// `apply` in place: the spans are checked against the body first, then
/// applied from the last to the first (each one's offset still that of
/// the body before the step).
fn apply_to(body: &mut Vec<u8>, spans: &[u8]) -> Option<()> {
    let list = spans_of(spans, body.len())?;
    for &(at, cut, bytes) in list.iter().rev() {
        if cut == bytes.len() {
            body[at..at + cut].copy_from_slice(bytes);
        } else if at == body.len() {
            body.extend_from_slice(bytes);
        } else {
            body.splice(at..at + cut, bytes.iter().copied());
        }
    }
    Some(())
}

/// Applies to `image` (the body of part `name`'s record at sequence number
/// `image_seq`) the steps of the change records `records` (each its
/// sequence number and value), in order, each on the one before (its
/// `base`), then encoded steps `then`; None if a record is another part's,
/// does not follow the one before, or a step does not fit the body
/// (`parts::chains`: a spilled chain's records read back, then its steps
/// in RAM).
pub fn apply_chain(
    image: &[u8],
    name: (u64, u8),
    image_seq: u64,
    records: &[(u64, &[u8])],
    then: &[u8],
) -> Option<Vec<u8>> {
    let mut body = Vec::with_capacity(image.len() + then.len());
    body.extend_from_slice(image);
    let mut at = image_seq;
    for &(seq, value) in records {
        let c = decode(value)?;
        if (c.name.low, c.name.depth) != name || c.base != at {
            return None;
        }
        apply_steps_to(&mut body, c.steps)?;
        at = seq;
    }
    apply_steps_to(&mut body, then)?;
    Some(body)
}

/// Appends one span: `cut` bytes of the old body at `at` become `new`.
pub fn put_span(out: &mut Vec<u8>, at: usize, cut: usize, new: &[u8]) {
    out.extend_from_slice(&(at as u32).to_le_bytes());
    out.extend_from_slice(&(cut as u32).to_le_bytes());
    out.extend_from_slice(&(new.len() as u32).to_le_bytes());
    out.extend_from_slice(new);
}

/// The spans that turn body `old` into body `new` (encoded), found by
/// walking both from the front: a mismatch followed within `LOOKAHEAD`
/// bytes by `RESYNC` equal bytes at the same offsets is a same-length span
/// (a count, a value of the same size); otherwise what is left, less its
/// common tail, is one span. Where the bodies differ in length, what is
/// left is taken as that one span as soon as it is not much more than the
/// difference (an element inserted or removed here): elements alike, one
/// after another (a stream's pending entries, a sorted set's order), would
/// otherwise each look like a same-length change of the one before.
/// Bodies over 4 GiB are not diffed (None).
pub fn diff(old: &[u8], new: &[u8]) -> Option<Vec<u8>> {
    if old.len() > u32::MAX as usize || new.len() > u32::MAX as usize {
        return None;
    }
    let mut out = Vec::new();
    let mut at = 0;
    let mut spans = 0;
    loop {
        // Skip the common run from `at`.
        at += common_prefix(old.get(at..).unwrap_or(&[]), new.get(at..).unwrap_or(&[]));
        if at >= old.len() && at >= new.len() {
            return Some(out);
        }
        if old.len() != new.len() {
            // An insertion or a removal here, and nothing else after it?
            let (o, n) = (&old[at.min(old.len())..], &new[at.min(new.len())..]);
            let tail = common_suffix(o, n);
            let rest = (o.len() - tail) + (n.len() - tail);
            if rest <= old.len().abs_diff(new.len()) + SHIFT_SLACK {
                put_span(&mut out, at, o.len() - tail, &n[..n.len() - tail]);
                return Some(out);
            }
        }
        if spans + 1 < MAX_SPANS && at < old.len().min(new.len()) {
            if let Some(end) = resync(old, new, at) {
                put_span(&mut out, at, end - at, &new[at..end]);
                spans += 1;
                at = end;
                continue;
            }
        }
        // The rest: less the tail both share.
        let (o, n) = (&old[at.min(old.len())..], &new[at.min(new.len())..]);
        let tail = common_suffix(o, n);
        put_span(&mut out, at, o.len() - tail, &n[..n.len() - tail]);
        return Some(out);
    }
}

/// Bytes `a` and `b` share at their start (compared a block at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 32 <= n && a[i..i + 32] == b[i..i + 32] {
        i += 32;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Bytes `a` and `b` share at their end.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + 32 <= n && a[n - i - 32..n - i] == b[n - i - 32..n - i] {
        i += 32;
    }
    while i < n && a[n - i - 1] == b[n - i - 1] {
        i += 1;
    }
    i
}

/// Where a same-length span starting at the mismatch `at` ends: the start
/// of the first run of `RESYNC` equal bytes at the same offsets within
/// `LOOKAHEAD` bytes (None if there is none).
fn resync(old: &[u8], new: &[u8], at: usize) -> Option<usize> {
    let limit = (at + LOOKAHEAD).min(old.len()).min(new.len());
    let mut run = 0;
    for i in at..limit {
        if old[i] == new[i] {
            run += 1;
            if run == RESYNC {
                return Some(i + 1 - RESYNC);
            }
        } else {
            run = 0;
        }
    }
    None
}

/// Applies encoded `spans` to body `old`; None if they do not fit it (a
/// span out of order or past the end, or a torn encoding).
pub fn apply(old: &[u8], spans: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(old.len() + spans.len());
    let mut from = 0usize; // next byte of `old` not yet copied
    for (at, cut, bytes) in spans_of(spans, old.len())? {
        out.extend_from_slice(&old[from..at]);
        out.extend_from_slice(bytes);
        from = at + cut;
    }
    out.extend_from_slice(&old[from..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A spilled chain's records apply in order, each on the one before;
    /// a record out of order, of another part or that does not fit is
    /// refused.
    #[test]
    fn a_chain_applies_only_in_its_order() {
        let name = ChunkName {
            vtype: crate::base::ValueType::Hash,
            headed: true,
            cid: 7,
            depth: 3,
            low: 1 << 61,
        };
        let bodies: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 40 + i as usize * 5]).collect();
        let mut recs = Vec::new();
        for (k, w) in bodies.windows(2).enumerate() {
            let mut steps = Vec::new();
            push_step(&mut steps, &diff(&w[0], &w[1]).unwrap());
            recs.push((100 + k as u64, encode(&name, 99 + k as u64, &steps)));
        }
        let view: Vec<(u64, &[u8])> = recs.iter().map(|(s, v)| (*s, &v[..])).collect();
        let key = (name.low, name.depth);
        assert_eq!(
            apply_chain(&bodies[0], key, 99, &view, &[]).unwrap(),
            bodies[3]
        );
        assert_eq!(
            apply_chain(&bodies[0], key, 99, &view[..1], &[]).unwrap(),
            bodies[1]
        );
        assert!(
            apply_chain(&bodies[0], key, 98, &view, &[]).is_none(),
            "wrong image"
        );
        let swapped = [view[1], view[0], view[2]];
        assert!(
            apply_chain(&bodies[0], key, 99, &swapped, &[]).is_none(),
            "out of order"
        );
        assert!(
            apply_chain(&bodies[0], (name.low, 4), 99, &view, &[]).is_none(),
            "other part"
        );
        assert!(
            apply_chain(&bodies[0][..10], key, 99, &view, &[]).is_none(),
            "does not fit"
        );
    }

    fn round(old: &[u8], new: &[u8]) -> usize {
        let d = diff(old, new).unwrap();
        assert_eq!(apply(old, &d).unwrap(), new, "old {old:?} new {new:?}");
        let mut b = old.to_vec();
        apply_to(&mut b, &d).unwrap();
        assert_eq!(b, new, "in place: old {old:?} new {new:?}");
        d.len()
    }

    /// In place or not, spans apply alike, and the same spans are refused.
    #[test]
    fn spans_apply_in_place_as_by_copy() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(46);
        for _ in 0..2000 {
            let n = rng.gen_range(0..64);
            let old: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            let mut spans = Vec::new();
            let mut at = 0usize;
            for _ in 0..rng.gen_range(0..4) {
                at += rng.gen_range(0..8);
                let cut = rng.gen_range(0..6);
                let new: Vec<u8> = (0..rng.gen_range(0..6)).map(|_| rng.gen()).collect();
                put_span(&mut spans, at, cut, &new);
                at += cut;
            }
            let mut b = old.clone();
            match apply(&old, &spans) {
                Some(v) => {
                    apply_to(&mut b, &spans).unwrap();
                    assert_eq!(b, v);
                }
                None => assert!(apply_to(&mut b, &spans).is_none()),
            }
        }
    }

    #[test]
    fn a_diff_applied_to_its_base_gives_the_new_body() {
        let mut r = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..3000 {
            let n = r.gen_range(0..300);
            let old: Vec<u8> = (0..n).map(|_| r.gen_range(0..4u8)).collect();
            let mut new = old.clone();
            for _ in 0..r.gen_range(0..4) {
                let at = r.gen_range(0..=new.len());
                match r.gen_range(0..3) {
                    0 => {
                        let k = r.gen_range(0..20);
                        new.splice(at..at, (0..k).map(|_| r.gen_range(0..4u8)));
                    }
                    1 => {
                        let end = (at + r.gen_range(0..20)).min(new.len());
                        new.drain(at..end);
                    }
                    _ => {
                        if at < new.len() {
                            new[at] ^= 1;
                        }
                    }
                }
            }
            round(&old, &new);
        }
    }

    #[test]
    fn a_change_costs_about_its_size() {
        let old: Vec<u8> = (0..6000u32).map(|i| (i * 7 % 251) as u8).collect();
        // A count at the front and an element appended at the end.
        let mut new = old.clone();
        new[0] = 99;
        new.extend_from_slice(&[1u8; 110]);
        assert!(round(&old, &new) < 110 + 2 * SPAN_HEADER_LEN + 4);
        // A value rewritten in place in the middle, longer by 3 bytes.
        let mut new = old.clone();
        new.splice(3000..3050, [5u8; 53]);
        assert!(round(&old, &new) < 60 + 2 * SPAN_HEADER_LEN);
        // One bit flipped.
        let mut new = old.clone();
        new[4321] ^= 0x10;
        assert_eq!(round(&old, &new), SPAN_HEADER_LEN + 1);
        // Nothing changed.
        assert_eq!(round(&old, &old), 0);
    }

    #[test]
    fn an_element_removed_among_alike_ones_is_one_span() {
        // 100 entries of 36 bytes that differ in one byte each (a stream's
        // pending entries); the count at the front drops and entry 40 goes.
        let entry = |i: u8| {
            let mut e = [0u8; 36];
            e[7] = i;
            e
        };
        let mut old = vec![100u8, 0, 0, 0];
        for i in 0..100 {
            old.extend_from_slice(&entry(i));
        }
        let mut new = vec![99u8, 0, 0, 0];
        for i in (0..100).filter(|&i| i != 40) {
            new.extend_from_slice(&entry(i));
        }
        let d = diff(&old, &new).unwrap();
        assert_eq!(apply(&old, &d).unwrap(), new);
        // The count's byte and the removal: two spans of 12-byte headers.
        assert!(
            d.len() <= 2 * SPAN_HEADER_LEN + 1,
            "{} bytes of spans",
            d.len()
        );
        // And one inserted among them.
        let d = diff(&new, &old).unwrap();
        assert_eq!(apply(&new, &d).unwrap(), old);
        assert!(
            d.len() <= 2 * SPAN_HEADER_LEN + 1 + 36,
            "{} bytes of spans",
            d.len()
        );
    }

    #[test]
    fn steps_apply_in_order() {
        let (a, b, c) = (
            b"hello world".to_vec(),
            b"hello, world".to_vec(),
            b"yello, world!".to_vec(),
        );
        let mut steps = Vec::new();
        push_step(&mut steps, &diff(&a, &b).unwrap());
        push_step(&mut steps, &diff(&b, &c).unwrap());
        assert_eq!(apply_steps(&a, &steps).unwrap(), c);
        assert!(apply_steps(&a, &steps[..steps.len() - 1]).is_none());
    }

    #[test]
    fn spans_that_do_not_fit_their_base_are_refused() {
        let d = diff(b"abcdef", b"abXdef").unwrap();
        assert!(apply(b"ab", &d).is_none());
        assert!(apply(b"abcdef", &d[..d.len() - 1]).is_none());
        let mut bad = Vec::new();
        put_span(&mut bad, 4, 1, b"x");
        put_span(&mut bad, 1, 1, b"y");
        assert!(apply(b"abcdef", &bad).is_none());
    }
}
