//! Reads and writes of part of a string: GETRANGE, SETRANGE, APPEND and
//! the bit commands. A string of one record goes through GET's and the
//! read-modify-write path (`strings`); a chunked string (`types::bigstr`)
//! loads only the parts holding the bytes the command names (a
//! `Need::Indexes` counts bytes of a string) and changes them in place, so
//! a bit of a cold 512 MB string costs one device read.
//!
//! Invariants:
//! 1. A closure sees one state of the key and runs once per attempt under
//!    its shard's lock; a write that changed nothing leaves the key's
//!    version, its journal state and its watchers alone.
//! 2. A chunked string's part outside the need is never read or written
//!    (`NotLoaded` is an error reply, never a guess of its bytes).

use crate::base::ValueType;
use crate::index::Value;
use crate::keyspace::chunks::Need;
use crate::keyspace::strings::{update_cold, Current, ExpireUpdate, Mutation, Retry};
use crate::tiering::fetch::Read;
use crate::types::bigstr::{NotLoaded, Piece, STR_CHUNKED_AT, STR_PART};
use crate::types::{ChunkedStr, Collection};
use crate::{Engine, EngineError, ValueRef};
use bytes::Bytes;

impl From<NotLoaded> for EngineError {
    fn from(_: NotLoaded) -> EngineError {
        EngineError::Corrupt("a string part the command needs is not loaded")
    }
}

/// A string as a read sees it.
pub enum StrRef<'a> {
    Flat(&'a Bytes),
    Chunked(&'a ChunkedStr),
}

impl StrRef<'_> {
    pub fn len(&self) -> u64 {
        match self {
            StrRef::Flat(b) => b.len() as u64,
            StrRef::Chunked(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` on the pieces of bytes `[a, b)` (clamped to the length).
    pub fn pieces(&self, a: u64, b: u64, mut f: impl FnMut(Piece<'_>)) -> Result<(), EngineError> {
        match self {
            StrRef::Flat(v) => {
                let b = (b.min(v.len() as u64)) as usize;
                if (a as usize) < b {
                    f(Piece::Bytes(&v[a as usize..b]));
                }
                Ok(())
            }
            StrRef::Chunked(s) => Ok(s.pieces(a, b, f)?),
        }
    }

    /// Bytes `[a, b)` (clamped to the length) as one value: a string of
    /// one record shares its bytes, a chunked one copies them.
    pub fn slice(&self, a: u64, b: u64) -> Result<Bytes, EngineError> {
        let b = b.min(self.len());
        if a >= b {
            return Ok(Bytes::new());
        }
        match self {
            StrRef::Flat(v) => Ok(v.slice(a as usize..b as usize)),
            StrRef::Chunked(_) => {
                let mut v = vec![0u8; (b - a) as usize];
                self.read(a, &mut v)?;
                Ok(Bytes::from(v))
            }
        }
    }

    /// Copies bytes from `off` into `out` (zeros past the end).
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result<(), EngineError> {
        match self {
            StrRef::Flat(v) => {
                read_flat(v, off, out);
                Ok(())
            }
            StrRef::Chunked(s) => Ok(s.read(off, out)?),
        }
    }
}

/// Copies bytes of `v` from `off` into `out` (zeros past the end).
fn read_flat(v: &[u8], off: u64, out: &mut [u8]) {
    let from = off.min(v.len() as u64) as usize;
    let n = (v.len() - from).min(out.len());
    out[..n].copy_from_slice(&v[from..from + n]);
    out[n..].fill(0);
}

/// A string a write changes; a missing key reads as an empty string and
/// is created by the first write.
pub struct StrEdit<'a> {
    target: Target<'a>,
    changed: bool,
    raw: bool,
}

enum Target<'a> {
    Flat {
        old: Option<&'a [u8]>,
        new: Option<Vec<u8>>,
    },
    /// A flat string a write grew past `STR_CHUNKED_AT`, cut into parts
    /// (so a SETBIT far past the end makes holes, not gigabytes of zeros).
    Grown(Box<ChunkedStr>),
    Chunked(&'a mut ChunkedStr),
}

impl<'a> StrEdit<'a> {
    fn flat(old: Option<&'a [u8]>) -> StrEdit<'a> {
        StrEdit {
            target: Target::Flat { old, new: None },
            changed: false,
            raw: false,
        }
    }

    /// Whether the key exists (a missing one reads as "").
    pub fn exists(&self) -> bool {
        match &self.target {
            Target::Flat { old, new } => old.is_some() || new.is_some(),
            Target::Grown(_) | Target::Chunked(_) => true,
        }
    }

    pub fn len(&self) -> u64 {
        match &self.target {
            Target::Flat { old, new } => match new {
                Some(v) => v.len() as u64,
                None => old.map_or(0, |o| o.len() as u64),
            },
            Target::Grown(s) => s.len(),
            Target::Chunked(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies bytes from `off` into `out` (zeros past the end).
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result<(), EngineError> {
        match &self.target {
            Target::Flat { old, new } => {
                read_flat(new.as_deref().or(*old).unwrap_or_default(), off, out);
                Ok(())
            }
            Target::Grown(s) => Ok(s.read(off, out)?),
            Target::Chunked(s) => Ok(s.read(off, out)?),
        }
    }

    /// Writes `data` at `off`, growing the string with zeros to reach it.
    pub fn write(&mut self, off: u64, data: &[u8]) -> Result<(), EngineError> {
        let end = off as usize + data.len();
        if let Target::Flat { old, new } = &mut self.target {
            if end > STR_CHUNKED_AT {
                let base = new.as_deref().or(*old).unwrap_or_default();
                self.target = Target::Grown(Box::new(ChunkedStr::from_bytes(0, base)));
            }
        }
        match &mut self.target {
            Target::Flat { old, new } => {
                // One copy of the old bytes, with room for the write.
                let v = new.get_or_insert_with(|| {
                    let old = old.unwrap_or_default();
                    let mut v = Vec::with_capacity(old.len().max(end));
                    v.extend_from_slice(old);
                    v
                });
                if v.len() < end {
                    v.resize(end, 0);
                }
                v[off as usize..end].copy_from_slice(data);
            }
            Target::Grown(s) => s.write(off, data)?,
            Target::Chunked(s) => s.write(off, data)?,
        }
        self.changed = true;
        Ok(())
    }

    /// The string is reported `raw` from now on (OBJECT ENCODING), as
    /// Redis does once it unshared it for a change that may not come
    /// (SETBIT that flips nothing), or created it for a change in place
    /// (SETBIT, SETRANGE of a new key; APPEND's new key is not raw).
    pub fn mark_raw(&mut self) {
        self.raw = true;
    }
}

impl Engine {
    /// Reads part of the string at `key`: `need` names the bytes `f` looks
    /// at (inclusive ranges, negative from the end, as GETRANGE's), `f`
    /// gets the string (None if missing). `WrongType` for another type.
    pub fn read_str<R, F>(
        &self,
        db: usize,
        key: Bytes,
        need: Need,
        f: F,
    ) -> Read<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(Option<StrRef<'_>>) -> Result<R, EngineError> + Send + 'static,
    {
        if let Some(read) = self.get_flat(db, &key) {
            return read.map(|r| r.and_then(|v| f(v.as_ref().map(StrRef::Flat))));
        }
        let k = key.clone();
        self.with_keys_need(db, vec![key], need, move |v| match v.get(&k) {
            None => f(None),
            Some(ValueRef::Str(b)) => f(Some(StrRef::Flat(b))),
            Some(ValueRef::Coll(Collection::Str(s))) => f(Some(StrRef::Chunked(s))),
            Some(ValueRef::Coll(_)) => Err(EngineError::WrongType),
        })
        .map(|r| r.and_then(|x| x))
    }

    /// Changes part of the string at `key` (created if missing and `f`
    /// writes): `need` names the bytes `f` reads or writes, as for
    /// `read_str`; a write past the end also needs the last byte (`-1`).
    /// The key keeps its TTL and memcached flags. `f` may run more than
    /// once (a race with a flash read), each time on the current string.
    pub fn write_str<R, F>(
        &self,
        db: usize,
        key: Bytes,
        need: Need,
        f: F,
    ) -> Read<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnMut(&mut StrEdit<'_>) -> Result<R, EngineError> + Send + 'static,
    {
        // One look at the key (the read-modify-write path); a chunked
        // string leaves it to change its parts alone.
        let mut f = f;
        let first = self
            .inner
            .try_update(db, &key, &mut |cur| flat_step(&mut f, cur), None, false);
        match first {
            Ok((r, _)) => return Read::Ready(r),
            Err(Retry::Fail(e)) => return Read::Ready(Err(e)),
            // Cold (one record): read it, then as any read-modify-write
            // (taken whole if it became chunked meanwhile).
            Err(Retry::Fetch(t)) => {
                let inner = self.inner.clone();
                let flat = move |cur: Option<Current<'_>>| flat_step(&mut f, cur);
                return Read::Pending(Box::pin(async move {
                    update_cold(inner, t, flat).await.and_then(|(r, _)| r)
                }));
            }
            Err(Retry::Chunked | Retry::Parts(_)) => {}
        }
        let k = key.clone();
        self.with_keys_need(db, vec![key], need, move |v| {
            let mut f = f;
            let flat = match v.get(&k) {
                None => None,
                Some(ValueRef::Str(b)) => Some(b.clone()),
                Some(ValueRef::Coll(Collection::Str(_))) => {
                    let c = v.coll_mut(&k, ValueType::String, false)?;
                    let Some(Collection::Str(s)) = c else {
                        return Err(EngineError::WrongType);
                    };
                    let mut ed = StrEdit {
                        target: Target::Chunked(s),
                        changed: false,
                        raw: false,
                    };
                    let r = f(&mut ed);
                    if !ed.changed {
                        v.unchanged(&k);
                    }
                    return r;
                }
                Some(ValueRef::Coll(_)) => return Err(EngineError::WrongType),
            };
            // Not chunked (any more): as the read-modify-write path.
            let exists = flat.is_some();
            let mut ed = StrEdit::flat(flat.as_deref());
            let r = f(&mut ed);
            let raw = exists || ed.raw;
            match (r.is_ok(), ed.target) {
                (true, Target::Flat { new: Some(n), .. }) => {
                    v.put_str(&k, Value::Str(Bytes::from(n)), raw);
                }
                (true, Target::Grown(s)) => {
                    v.put_str(&k, Value::Coll(Box::new(Collection::Str(s))), true);
                }
                _ => {}
            }
            r
        })
        .map(|r| r.and_then(|x| x))
    }
}

/// One attempt of `write_str` on a string of one record (or none): `f`
/// on a `StrEdit` of it, and the mutation its writes make.
fn flat_step<R, F>(f: &mut F, cur: Option<Current<'_>>) -> (Mutation, Result<R, EngineError>)
where
    F: FnMut(&mut StrEdit<'_>) -> Result<R, EngineError>,
{
    let exists = cur.is_some();
    let mut ed = StrEdit::flat(cur.as_ref().map(|c| &c.value[..]));
    let r = f(&mut ed);
    let raw = ed.raw;
    let m = match (r.is_ok(), ed.target) {
        // A change of an existing string is in place (`raw`); a new one
        // is, if the command says so.
        (true, Target::Flat { new: Some(v), .. }) if exists || raw => Mutation::SetRaw {
            value: Bytes::from(v),
            expire: ExpireUpdate::Keep,
        },
        (true, Target::Flat { new: Some(v), .. }) => Mutation::Set {
            value: Bytes::from(v),
            expire: ExpireUpdate::Keep,
        },
        (true, Target::Grown(s)) => Mutation::SetParts {
            value: s,
            expire: ExpireUpdate::Keep,
        },
        (true, _) if exists && raw => Mutation::MarkRaw,
        _ => Mutation::None,
    };
    (m, r)
}

/// A streamed read's state (`Engine::scan_str`).
struct Scan<S> {
    user: S,
    /// The bytes `[a, b)` being read, and where the next piece starts.
    b: u64,
    at: u64,
    err: Option<EngineError>,
}

impl<S> Scan<S> {
    /// Hands the pieces of `[from, to)` to `emit` until it says stop.
    fn feed<E>(&mut self, s: StrRef<'_>, from: u64, to: u64, emit: &mut E) -> bool
    where
        E: FnMut(&mut S, u64, Piece<'_>) -> bool,
    {
        let mut more = true;
        let (user, at) = (&mut self.user, &mut self.at);
        let r = s.pieces(from, to, |p| {
            if more {
                more = emit(user, *at, p);
            }
            *at += match p {
                Piece::Bytes(b) => b.len() as u64,
                Piece::Zeros(n) => n as u64,
            };
        });
        if let Err(e) = r {
            self.err = Some(e);
            return false;
        }
        more
    }
}

impl Engine {
    /// Reads bytes of the string at `key` in order: a chunked string a
    /// batch of parts at a time (`stream_coll`), so BITCOUNT, BITPOS or
    /// GETRANGE over a string larger than RAM never holds it in RAM at
    /// once. `init(len)` makes the state (`len` None: no such key), and
    /// `range(len)` names the bytes `[a, b)` to read; `emit(state, offset,
    /// piece)` gets them in order and returns whether to go on. `init`
    /// runs again if the key changes between batches. `WrongType` for
    /// another type.
    pub fn scan_str<S, I, R, E>(
        &self,
        db: usize,
        key: Bytes,
        mut init: I,
        mut range: R,
        mut emit: E,
    ) -> Read<Result<S, EngineError>>
    where
        S: Send + 'static,
        I: FnMut(Option<u64>) -> S + Send + 'static,
        R: FnMut(u64) -> Option<(u64, u64)> + Send + 'static,
        E: FnMut(&mut S, u64, Piece<'_>) -> bool + Send + 'static,
    {
        let mut start = move |len: Option<u64>| {
            let mut st = Scan {
                user: init(len),
                b: 0,
                at: 0,
                err: None,
            };
            if let Some(len) = len {
                if let Some((a, b)) = range(len).filter(|&(a, b)| a < b.min(len)) {
                    (st.at, st.b) = (a, b.min(len));
                }
            }
            st
        };
        if let Some(read) = self.get_flat(db, &key) {
            return read.map(move |r| {
                let v = r?;
                let mut st = start(v.as_ref().map(|v| v.len() as u64));
                if let Some(v) = &v {
                    let (a, b) = (st.at, st.b);
                    st.feed(StrRef::Flat(v), a, b, &mut emit);
                }
                st.err.map_or(Ok(st.user), Err)
            });
        }
        // Both steps below hand pieces to `emit` (one at a time).
        let emit = std::sync::Arc::new(parking_lot::Mutex::new(emit));
        let k = key.clone();
        let emit2 = emit.clone();
        let read = self.stream_coll(
            db,
            key,
            move |view| match view.get(&k) {
                None => (start(None), None),
                Some(ValueRef::Coll(Collection::Str(s))) => {
                    let st = start(Some(s.len()));
                    let parts = (st.at < st.b).then(|| {
                        ChunkedStr::part_of_byte(st.at)..ChunkedStr::part_of_byte(st.b - 1) + 1
                    });
                    (st, parts)
                }
                Some(ValueRef::Str(v)) => {
                    // Not chunked any more: read here, at once.
                    let mut st = start(Some(v.len() as u64));
                    let (a, b) = (st.at, st.b);
                    st.feed(StrRef::Flat(v), a, b, &mut *emit2.lock());
                    (st, None)
                }
                Some(ValueRef::Coll(_)) => {
                    let mut st = start(None);
                    st.err = Some(EngineError::WrongType);
                    (st, None)
                }
            },
            move |c, parts, st| {
                let Collection::Str(s) = c else {
                    st.err = Some(EngineError::WrongType);
                    return false;
                };
                let to = st.b.min((parts.end * STR_PART) as u64);
                let from = st.at;
                st.feed(StrRef::Chunked(s), from, to, &mut *emit.lock())
            },
        );
        read.map(|r| r.and_then(|st| st.err.map_or(Ok(st.user), Err)))
    }
}
