//! What changed in a collection held in RAM as one packed record, as the
//! journal logs it: a *change record* (docs/format.md, record kind 12)
//! holds the operations since the key's previous record, and recovery
//! applies them to the value that record left (`Collection::apply_change`).
//!
//! A collection records only while it has a [`Recorder`] with a log, which
//! the journal starts when it captures the value's image; its mutating
//! methods (`Hash::insert`, `List::pop_front` ...) append one [`Op`] each.
//! The log also holds the *chain*: the image record and the change records
//! written since, which the entry owns (their bytes are live) until the
//! next image.
//!
//! A stream records no ops: its log keeps the bytes of its last record
//! (`ChangeLog::base`), and its change is one `Op::Spans`, the byte spans
//! between those bytes and its encoding now (`flash::format::part_change`
//! spans), found when the journal captures it. A string changed in place
//! (APPEND, SETRANGE, SETBIT ...) records the same way, its recorder
//! beside its backing (`index::Hot::start_str_log`).
//!
//! Invariants:
//! 1. While a log records, every change of the collection's elements since
//!    the chain's last record is in `ops`, in order, except after an
//!    overflow (then the next record must be an image). The encoding bit
//!    (Redis's `hashtable`/`skiplist`) is not an op: a change record
//!    carries the bits after its changes.
//! 2. A clone of a collection never records (a copy is another key, or a
//!    record's image): `Recorder::clone` is empty.
//! 3. Applying a change record's ops to the value its base record holds
//!    gives the value as it was when the change record was captured.

use super::{Collection, Reader, BIG_ENCODING};
use crate::base::{FlashLoc, Malformed};

/// Ops past this many bytes stop being recorded: an image is cheaper.
pub const OPS_MAX: usize = 64 * 1024;

/// A collection's change log, if it records (module doc).
#[derive(Debug, Default)]
pub struct Recorder(Option<Box<ChangeLog>>);

impl Clone for Recorder {
    /// Invariant 2.
    fn clone(&self) -> Recorder {
        Recorder(None)
    }
}

/// Applies a string's change record (a spans op) to its bytes (invariant
/// 3): malformed if it holds another op or does not fit.
pub fn apply_str_change(old: &[u8], ops: &[u8]) -> Result<Vec<u8>, Malformed> {
    let mut now = old.to_vec();
    for op in Ops::new(ops) {
        let Op::Spans(spans) = op? else {
            return Err(Malformed);
        };
        now = crate::flash::format::part_change::apply(&now, spans).ok_or(Malformed)?;
    }
    Ok(now)
}

/// The ops since the chain's last record, and the chain.
#[derive(Debug, Default)]
pub struct ChangeLog {
    ops: Vec<u8>,
    /// A value logged by its byte spans (a stream): the bytes of its
    /// chain's last record, which the next change is diffed against.
    pub base: Option<bytes::Bytes>,
    /// Ops were dropped (past `OPS_MAX`): the next record is an image.
    overflow: bool,
    pub chain: Chain,
}

/// The records that hold a collection's state: an image, then change
/// records (module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    /// Sequence number of the chain's last record (its image, then each
    /// change record), taken when the journal captured it.
    pub last_seq: u64,
    /// That record is on the device and published to the entry (until
    /// then, a change record may not follow it).
    pub confirmed: bool,
    /// The image, once published.
    pub image: Option<FlashLoc>,
    /// The change records since the image, in order.
    pub changes: Vec<FlashLoc>,
    /// Their bytes.
    pub bytes: u64,
    /// The records of the chain this one replaced: live until this chain's
    /// image is published, then released.
    pub superseded: Vec<FlashLoc>,
    /// The next record must be an image (a checkpoint wants one).
    pub want_image: bool,
}

impl Chain {
    /// The chain an image captured at `version` starts, replacing `old`'s
    /// (whose records stay live until the image is published).
    pub fn after(old: Option<Box<ChangeLog>>, version: u64) -> Chain {
        Chain {
            last_seq: version,
            superseded: old.map(|l| l.chain.locs().collect()).unwrap_or_default(),
            ..Chain::default()
        }
    }
    /// Takes `old`, the value's backing before a change, as a record of
    /// the chain: its image if the chain has none yet and its last record
    /// is published (the backing is that record), else a record it
    /// replaces.
    pub fn adopt_backing(&mut self, old: FlashLoc) {
        if self.image.is_none() && self.confirmed {
            self.image = Some(old);
        } else {
            self.superseded.push(old);
        }
    }
    /// Every record the chain holds live (the image, its changes, and
    /// what it has not yet replaced).
    pub fn locs(&self) -> impl Iterator<Item = FlashLoc> + '_ {
        self.image
            .iter()
            .chain(&self.changes)
            .chain(&self.superseded)
            .copied()
    }
}

impl Recorder {
    /// The log, if recording.
    pub fn log(&self) -> Option<&ChangeLog> {
        self.0.as_deref()
    }
    pub fn log_mut(&mut self) -> Option<&mut ChangeLog> {
        self.0.as_deref_mut()
    }
    /// Starts (or restarts) recording with `chain`.
    pub fn start(&mut self, chain: Chain) {
        self.0 = Some(ChangeLog::new(chain, None));
    }
    /// Starts recording with `chain`, whose last record holds `base` (a
    /// value logged by its byte spans: a string).
    pub fn start_spans(&mut self, chain: Chain, base: bytes::Bytes) {
        self.0 = Some(ChangeLog::new(chain, Some(base)));
    }
    /// Stops recording; returns the log.
    pub fn stop(&mut self) -> Option<Box<ChangeLog>> {
        self.0.take()
    }
    /// Appends `op` if recording (invariant 1).
    #[inline]
    pub fn note(&mut self, op: Op<'_>) {
        if let Some(l) = self.0.as_deref_mut() {
            if !l.overflow {
                op.encode(&mut l.ops);
                if l.ops.len() > OPS_MAX {
                    l.overflow = true;
                    l.ops = Vec::new();
                }
            }
        }
    }
}

/// Records on with a log taken (`Recorder::stop`) from the value this one
/// replaces in place, if any.
impl From<Option<Box<ChangeLog>>> for Recorder {
    fn from(log: Option<Box<ChangeLog>>) -> Recorder {
        Recorder(log)
    }
}

impl ChangeLog {
    /// A log of no ops yet for `chain`, whose last record holds `base` if
    /// the value is logged by its byte spans.
    pub fn new(chain: Chain, base: Option<bytes::Bytes>) -> Box<ChangeLog> {
        Box::new(ChangeLog {
            ops: Vec::new(),
            base,
            overflow: false,
            chain,
        })
    }
    /// The ops recorded since the chain's last record (None after an
    /// overflow).
    pub fn ops(&self) -> Option<&[u8]> {
        (!self.overflow).then_some(&self.ops[..])
    }
    /// Takes the ops (a change record captured them).
    pub fn take_ops(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.ops)
    }
}

/// One change of a collection's elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op<'a> {
    /// A hash field set.
    HSet(&'a [u8], &'a [u8]),
    /// A hash field removed (`swap`: the big encoding's unordered removal).
    HDel(&'a [u8], bool),
    SAdd(&'a [u8]),
    SRem(&'a [u8]),
    /// A sorted set member's score set.
    ZSet(&'a [u8], f64),
    ZRem(&'a [u8]),
    LPushFront(&'a [u8]),
    LPushBack(&'a [u8]),
    LPopFront,
    LPopBack,
    /// Element `i` replaced.
    LSet(u32, &'a [u8]),
    /// An element inserted at position `i`.
    LInsert(u32, &'a [u8]),
    /// Element `i` removed.
    LRemAt(u32),
    /// Only elements `start..=end` kept.
    LTrim(u32, u32),
    /// Byte spans of the value's encoding (`part_change::diff`), for a
    /// value that records no ops (a stream).
    Spans(&'a [u8]),
}

const HSET: u8 = 1;
const HDEL: u8 = 2;
const HDEL_SWAP: u8 = 3;
const SADD: u8 = 4;
const SREM: u8 = 5;
const ZSET: u8 = 6;
const ZREM: u8 = 7;
const LPUSH_FRONT: u8 = 8;
const LPUSH_BACK: u8 = 9;
const LPOP_FRONT: u8 = 10;
const LPOP_BACK: u8 = 11;
const LSET: u8 = 12;
const LINSERT: u8 = 13;
const LREM_AT: u8 = 14;
const LTRIM: u8 = 15;
const SPANS: u8 = 16;

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

impl<'a> Op<'a> {
    /// Appends the op's encoding (docs/format.md, kind 12).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Op::HSet(f, v) => {
                out.push(HSET);
                put(out, f);
                put(out, v);
            }
            Op::HDel(f, swap) => {
                out.push(if swap { HDEL_SWAP } else { HDEL });
                put(out, f);
            }
            Op::SAdd(m) => {
                out.push(SADD);
                put(out, m);
            }
            Op::SRem(m) => {
                out.push(SREM);
                put(out, m);
            }
            Op::ZSet(m, score) => {
                out.push(ZSET);
                out.extend_from_slice(&score.to_bits().to_le_bytes());
                put(out, m);
            }
            Op::ZRem(m) => {
                out.push(ZREM);
                put(out, m);
            }
            Op::LPushFront(e) => {
                out.push(LPUSH_FRONT);
                put(out, e);
            }
            Op::LPushBack(e) => {
                out.push(LPUSH_BACK);
                put(out, e);
            }
            Op::LPopFront => out.push(LPOP_FRONT),
            Op::LPopBack => out.push(LPOP_BACK),
            Op::LSet(i, e) => {
                out.push(LSET);
                out.extend_from_slice(&i.to_le_bytes());
                put(out, e);
            }
            Op::LInsert(i, e) => {
                out.push(LINSERT);
                out.extend_from_slice(&i.to_le_bytes());
                put(out, e);
            }
            Op::LRemAt(i) => {
                out.push(LREM_AT);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Op::LTrim(a, b) => {
                out.push(LTRIM);
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
            }
            Op::Spans(b) => {
                out.push(SPANS);
                put(out, b);
            }
        }
    }
}

/// The ops of an encoded run, in order (`decode` of each), read with the
/// packed encoding's reader.
pub struct Ops<'a> {
    r: Reader<'a>,
}

impl<'a> Ops<'a> {
    pub fn new(b: &'a [u8]) -> Ops<'a> {
        Ops { r: Reader { b } }
    }
    fn op(&mut self) -> Result<Op<'a>, Malformed> {
        let r = &mut self.r;
        let code = r.u8()?;
        Ok(match code {
            HSET => Op::HSet(r.bytes()?, r.bytes()?),
            HDEL => Op::HDel(r.bytes()?, false),
            HDEL_SWAP => Op::HDel(r.bytes()?, true),
            SADD => Op::SAdd(r.bytes()?),
            SREM => Op::SRem(r.bytes()?),
            ZSET => {
                let score = f64::from_bits(r.u64()?);
                if score.is_nan() {
                    return Err(Malformed);
                }
                Op::ZSet(r.bytes()?, score)
            }
            ZREM => Op::ZRem(r.bytes()?),
            LPUSH_FRONT => Op::LPushFront(r.bytes()?),
            LPUSH_BACK => Op::LPushBack(r.bytes()?),
            LPOP_FRONT => Op::LPopFront,
            LPOP_BACK => Op::LPopBack,
            LSET => Op::LSet(r.u32()?, r.bytes()?),
            LINSERT => Op::LInsert(r.u32()?, r.bytes()?),
            LREM_AT => Op::LRemAt(r.u32()?),
            LTRIM => Op::LTrim(r.u32()?, r.u32()?),
            SPANS => Op::Spans(r.bytes()?),
            _ => return Err(Malformed),
        })
    }
}

impl<'a> Iterator for Ops<'a> {
    type Item = Result<Op<'a>, Malformed>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.r.b.is_empty() {
            return None;
        }
        let op = self.op();
        if op.is_err() {
            self.r.b = &[];
        }
        Some(op)
    }
}

impl Collection {
    /// The change recorder of a collection that can record: a hash, set,
    /// sorted set or list held as one packed record (not chunked).
    pub fn recorder(&self) -> Option<&Recorder> {
        match self {
            Collection::Hash(h) if h.chunks().is_none() => Some(&h.rec),
            Collection::Set(s) if s.chunks().is_none() => Some(&s.rec),
            Collection::ZSet(z) if !z.is_chunked() => Some(&z.rec),
            Collection::List(l) if !l.is_chunked() => Some(&l.rec),
            Collection::Stream(st) if !st.is_chunked() => Some(&st.rec),
            _ => None,
        }
    }
    pub fn recorder_mut(&mut self) -> Option<&mut Recorder> {
        match self {
            Collection::Hash(h) if h.chunks().is_none() => Some(&mut h.rec),
            Collection::Set(s) if s.chunks().is_none() => Some(&mut s.rec),
            Collection::ZSet(z) if !z.is_chunked() => Some(&mut z.rec),
            Collection::List(l) if !l.is_chunked() => Some(&mut l.rec),
            Collection::Stream(st) if !st.is_chunked() => Some(&mut st.rec),
            _ => None,
        }
    }
    /// Whether the collection records by byte spans, not ops (a stream:
    /// module doc).
    pub fn logs_spans(&self) -> bool {
        matches!(self, Collection::Stream(_))
    }
    /// Starts (or restarts) recording with `chain`, whose last record holds
    /// this value's encoding (`encoded` makes it: a value logged by its
    /// spans keeps it as the base of its next change).
    pub fn start_recording(&mut self, chain: Chain, encoded: impl FnOnce(&Self) -> bytes::Bytes) {
        let base = self.logs_spans().then(|| encoded(self));
        if let Some(rec) = self.recorder_mut() {
            rec.start(chain);
            if let Some(l) = rec.log_mut() {
                l.base = base;
            }
        }
    }
    /// The change log, if the collection records.
    pub fn change_log(&self) -> Option<&ChangeLog> {
        self.recorder().and_then(Recorder::log)
    }
    pub fn change_log_mut(&mut self) -> Option<&mut ChangeLog> {
        self.recorder_mut().and_then(Recorder::log_mut)
    }
    /// Stops recording (a record of the whole value replaces the chain, or
    /// the value leaves the chain's entry); returns the log.
    pub fn stop_recording(&mut self) -> Option<Box<ChangeLog>> {
        self.recorder_mut().and_then(Recorder::stop)
    }

    /// Applies a change record's ops and bits (invariant 3). A record that
    /// does not fit the value (an op of another type, an element that is
    /// not there to remove) is malformed: the value may then hold some of
    /// its ops, and must not be used.
    pub fn apply_change(&mut self, bits: u8, ops: &[u8]) -> Result<(), Malformed> {
        let saved = self.stop_recording();
        let r = self.apply_ops(ops);
        let big = bits & BIG_ENCODING != 0;
        match self {
            Collection::Hash(h) => h.big = big,
            Collection::Set(s) => s.big = big,
            Collection::ZSet(z) => z.big = big,
            _ => {}
        }
        if let (Some(log), Some(rec)) = (saved, self.recorder_mut()) {
            rec.0 = Some(log);
        }
        r
    }

    fn apply_ops(&mut self, ops: &[u8]) -> Result<(), Malformed> {
        if self.recorder().is_none() {
            return Err(Malformed);
        }
        for op in Ops::new(ops) {
            let done = match (op?, &mut *self) {
                (Op::Spans(spans), c) => {
                    let old = c.to_bytes();
                    let new =
                        crate::flash::format::part_change::apply(&old, spans).ok_or(Malformed)?;
                    *c = Collection::decode(c.vtype(), &new)?;
                    true
                }
                (Op::HSet(f, v), Collection::Hash(h)) => {
                    h.insert(f, v);
                    true
                }
                (Op::HDel(f, swap), Collection::Hash(h)) => {
                    // The encoding the removal ran under (one-way).
                    h.big = swap;
                    h.remove(f)
                }
                (Op::SAdd(m), Collection::Set(s)) => s.insert(m),
                (Op::SRem(m), Collection::Set(s)) => s.remove(m),
                (Op::ZSet(m, score), Collection::ZSet(z)) => {
                    z.insert(m, score);
                    true
                }
                (Op::ZRem(m), Collection::ZSet(z)) => z.remove(m),
                (Op::LPushFront(e), Collection::List(l)) => {
                    l.push_front(e.into());
                    true
                }
                (Op::LPushBack(e), Collection::List(l)) => {
                    l.push_back(e.into());
                    true
                }
                (Op::LPopFront, Collection::List(l)) => l.pop_front().is_some(),
                (Op::LPopBack, Collection::List(l)) => l.pop_back().is_some(),
                (Op::LSet(i, e), Collection::List(l)) => l.set(i as usize, e),
                (Op::LInsert(i, e), Collection::List(l)) if i as usize <= l.len() => {
                    l.insert(i as usize, e);
                    true
                }
                (Op::LRemAt(i), Collection::List(l)) => l.remove_at(i as usize),
                (Op::LTrim(a, b), Collection::List(l)) => {
                    l.keep_range(a as usize, b as usize);
                    true
                }
                _ => false,
            };
            if !done {
                return Err(Malformed);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
