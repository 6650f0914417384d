//! Redis's serialization format for one value (the payload of DUMP and
//! RESTORE, RDB version 10 as redis-server 7.0 writes it): the value's RDB
//! type and encoding, the RDB version (2 bytes LE) and a CRC-64 of all of
//! that (8 bytes LE).
//!
//! DUMP writes the plain encodings every Redis since 2.x reads (string,
//! list, set, sorted set with binary scores, hash) and Redis 7.0's stream
//! encoding (`stream`); RESTORE reads those and
//! the compact ones Redis 7.0 itself dumps (int-encoded and LZF-compressed
//! strings, intsets, listpacks of hashes and sorted sets, quicklists of
//! listpacks). A payload that does not verify or decode is refused with
//! Redis's error and changes nothing.

mod crc64;
mod listpack;
mod lzf;
mod stream;

use bytes::Bytes;
use listpack::Entry;
use strata_engine::types::{Hash, List, Set, ZSet};
use strata_engine::{Collection, Value, ValueRef};

/// The RDB version of the payloads written (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;

/// The DUMP payload of `v`.
pub fn dump(v: ValueRef<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        ValueRef::Str(s) => {
            out.push(TYPE_STRING);
            put_string(&mut out, s);
        }
        ValueRef::Coll(c) => match c {
            // DUMP reads its key whole: every part is in RAM.
            Collection::Str(s) => {
                let b = s.to_vec().unwrap_or_default();
                debug_assert_eq!(b.len() as u64, s.len());
                out.push(TYPE_STRING);
                put_string(&mut out, &b);
            }
            Collection::List(l) => {
                out.push(TYPE_LIST);
                put_len(&mut out, l.len() as u64);
                for e in l.iter() {
                    put_string(&mut out, e);
                }
            }
            Collection::Set(s) => {
                out.push(TYPE_SET);
                put_len(&mut out, s.len() as u64);
                for m in s.iter() {
                    put_string(&mut out, m);
                }
            }
            Collection::ZSet(z) => {
                out.push(TYPE_ZSET_2);
                put_len(&mut out, z.len() as u64);
                for (m, score) in z.iter() {
                    put_string(&mut out, m);
                    out.extend_from_slice(&score.to_le_bytes());
                }
            }
            Collection::Hash(h) => {
                out.push(TYPE_HASH);
                put_len(&mut out, h.len() as u64);
                for (f, v) in h.iter() {
                    put_string(&mut out, f);
                    put_string(&mut out, v);
                }
            }
            Collection::Stream(st) => {
                out.push(stream::TYPE_STREAM_LISTPACKS_2);
                stream::dump(&mut out, st);
            }
        },
    }
    seal(out)
}

/// Why a payload was refused (each is a Redis error reply).
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// `ERR DUMP payload version or checksum are wrong`
    VersionOrChecksum,
    /// `ERR Bad data format`
    BadFormat,
}

/// The body of a payload whose footer (RDB version, CRC-64) verifies.
fn verified_body(payload: &[u8]) -> Result<&[u8], Refused> {
    if payload.len() < 10 {
        return Err(Refused::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(
        footer[2..10]
            .try_into()
            .map_err(|_| Refused::VersionOrChecksum)?,
    );
    if version > RDB_VERSION || crc64::crc64(0, &payload[..payload.len() - 8]) != crc {
        return Err(Refused::VersionOrChecksum);
    }
    Ok(body)
}

/// A payload of the body `out`: Redis's footer (the RDB version, then the
/// CRC-64 of everything before the CRC) appended, as DUMP ends its
/// payloads.
pub fn seal(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The RDB opcode of one function library (its code) in Redis 7.0.
const OPCODE_FUNCTION2: u8 = 245;

/// FUNCTION DUMP's payload of the libraries with these codes.
pub fn dump_functions(codes: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        put_string(&mut out, code);
    }
    seal(out)
}

/// The library codes of a FUNCTION RESTORE payload, or Redis's error.
pub fn restore_functions(payload: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let body = verified_body(payload).map_err(|_| crate::base::reply::BAD_DUMP.to_string())?;
    let mut r = Reader { b: body };
    let mut codes = Vec::new();
    while let Some(t) = r.byte() {
        if t != OPCODE_FUNCTION2 {
            return Err("ERR given type is not a function".into());
        }
        codes.push(r.string().ok_or(crate::base::reply::BAD_DATA_FORMAT)?);
    }
    Ok(codes)
}

/// The value a RESTORE payload holds.
pub fn restore(payload: &[u8]) -> Result<Value, Refused> {
    let body = verified_body(payload)?;
    let mut r = Reader { b: body };
    let v = r.value().ok_or(Refused::BadFormat)?;
    if !r.b.is_empty() {
        return Err(Refused::BadFormat);
    }
    Ok(v)
}

fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

struct Reader<'a> {
    b: &'a [u8],
}

/// A length, or a special string encoding.
enum Len {
    Plain(u64),
    Special(u8),
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Some(a)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn len_or_special(&mut self) -> Option<Len> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => Len::Plain((b & 0x3f) as u64),
            1 => Len::Plain((((b & 0x3f) as u64) << 8) | self.byte()? as u64),
            2 => match b {
                0x80 => Len::Plain(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as u64),
                0x81 => Len::Plain(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
                _ => return None,
            },
            _ => Len::Special(b & 0x3f),
        })
    }

    fn len(&mut self) -> Option<usize> {
        match self.len_or_special()? {
            Len::Plain(n) => usize::try_from(n).ok(),
            Len::Special(_) => None,
        }
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        match self.len_or_special()? {
            Len::Plain(n) => Some(self.take(usize::try_from(n).ok()?)?.to_vec()),
            Len::Special(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Len::Special(1) => Some(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Len::Special(2) => Some(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Len::Special(3) => {
                let clen = self.len()?;
                let len = self.len()?;
                lzf::decompress(self.take(clen)?, len)
            }
            Len::Special(_) => None,
        }
    }

    /// An element count, bounded by what the rest of the payload can hold.
    fn count(&mut self) -> Option<usize> {
        let n = self.len()?;
        (n <= self.b.len()).then_some(n)
    }

    fn value(&mut self) -> Option<Value> {
        let t = self.byte()?;
        let c = match t {
            TYPE_STRING => return Some(Value::Str(Bytes::from(self.string()?))),
            TYPE_LIST => {
                let mut l = List::default();
                for _ in 0..self.count()? {
                    l.push_back(self.string()?.into());
                }
                Collection::List(l)
            }
            TYPE_SET => {
                let mut s = Set::default();
                for _ in 0..self.count()? {
                    s.insert(&self.string()?);
                }
                Collection::Set(s)
            }
            TYPE_SET_INTSET => {
                let mut s = Set::default();
                for i in listpack::intset(&self.string()?)? {
                    s.insert(i.to_string().as_bytes());
                }
                Collection::Set(s)
            }
            TYPE_ZSET | TYPE_ZSET_2 => {
                let mut z = ZSet::default();
                for _ in 0..self.count()? {
                    let m = self.string()?;
                    let score = if t == TYPE_ZSET_2 {
                        f64::from_le_bytes(self.take(8)?.try_into().ok()?)
                    } else {
                        self.old_score()?
                    };
                    if score.is_nan() {
                        return None;
                    }
                    z.insert(&m, score);
                }
                Collection::ZSet(z)
            }
            TYPE_HASH => {
                let mut h = Hash::default();
                for _ in 0..self.count()? {
                    let f = self.string()?;
                    let v = self.string()?;
                    h.insert(&f, &v);
                }
                Collection::Hash(h)
            }
            TYPE_HASH_LISTPACK => {
                let lp = self.string()?;
                let e = listpack::entries(&lp)?;
                if e.len() % 2 != 0 {
                    return None;
                }
                let mut h = Hash::default();
                for p in e.chunks(2) {
                    h.insert(&p[0].to_bytes(), &p[1].to_bytes());
                }
                Collection::Hash(h)
            }
            TYPE_ZSET_LISTPACK => {
                let lp = self.string()?;
                let e = listpack::entries(&lp)?;
                if e.len() % 2 != 0 {
                    return None;
                }
                let mut z = ZSet::default();
                for p in e.chunks(2) {
                    let score = match &p[1] {
                        Entry::Int(i) => *i as f64,
                        Entry::Str(s) => std::str::from_utf8(s).ok()?.parse::<f64>().ok()?,
                    };
                    if score.is_nan() {
                        return None;
                    }
                    z.insert(&p[0].to_bytes(), score);
                }
                Collection::ZSet(z)
            }
            TYPE_LIST_QUICKLIST_2 => {
                let mut l = List::default();
                for _ in 0..self.count()? {
                    let container = self.len()?;
                    let data = self.string()?;
                    match container {
                        // PLAIN: one element.
                        1 => l.push_back(data.into()),
                        // PACKED: a listpack of elements.
                        2 => {
                            for e in listpack::entries(&data)? {
                                l.push_back(e.to_bytes().into());
                            }
                        }
                        _ => return None,
                    }
                }
                Collection::List(l)
            }
            stream::TYPE_STREAM_LISTPACKS | stream::TYPE_STREAM_LISTPACKS_2 => {
                Collection::Stream(Box::new(self.stream(t)?))
            }
            _ => return None,
        };
        if c.is_empty() {
            return None;
        }
        Some(Value::Coll(Box::new(c)))
    }

    /// A score of the old ZSET type: a length byte then its text, with 253
    /// = NaN, 254 = +inf, 255 = -inf.
    fn old_score(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            n => std::str::from_utf8(self.take(n as usize)?)
                .ok()?
                .parse()
                .ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn as_ref(v: &Value) -> ValueRef<'_> {
        match v {
            Value::Str(s) => ValueRef::Str(s),
            Value::Coll(c) => ValueRef::Coll(c),
        }
    }

    #[test]
    fn dump_restore_round_trip_every_type() {
        let mut h = Hash::default();
        h.insert(b"f", b"v");
        let mut z = ZSet::default();
        z.insert(b"m", -1.5);
        z.insert(b"n", f64::INFINITY);
        let mut l = List::default();
        l.push_back(vec![7u8; 100].into());
        let mut s = Set::default();
        s.insert(b"12");
        for v in [
            Value::Str(Bytes::from_static(b"hello")),
            Value::Coll(Box::new(Collection::Hash(h))),
            Value::Coll(Box::new(Collection::ZSet(z))),
            Value::Coll(Box::new(Collection::List(l))),
            Value::Coll(Box::new(Collection::Set(s))),
        ] {
            let p = dump(as_ref(&v));
            let back = restore(&p).unwrap();
            assert_eq!(dump(as_ref(&back)), p);
            let mut bad = p.clone();
            let n = bad.len();
            bad[n - 1] ^= 1;
            assert!(matches!(restore(&bad), Err(Refused::VersionOrChecksum)));
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Payloads taken from redis-server 7.0.15's DUMP (int-encoded and
    /// LZF-compressed strings, listpack hash and sorted sets, an intset, a
    /// plain set, a quicklist of a listpack).
    #[test]
    fn restores_what_redis_7_dumps() {
        let cases: &[(&str, &str)] = &[
            ("00c139300a009d94ea2793fc08b9", "s:12345"),
            ("00c0f90a005e26d130d7a242ab", "s:-7"),
            (
                "00c3094064016161e057000161610a00e8a3b507b06df271",
                "s:a*100",
            ),
            (
                "10151500000004008266310382763103826632037b01ff0a004ac585b69f9c1e83",
                "h:f1=v1,f2=123",
            ),
            (
                "111a1a0000000600816202dffe0281610283312e35048163020301ff0a00e5c16814373f6b4e",
                "z:b=-2,a=1.5,c=3",
            ),
            (
                "0b18040000000400000001000000020000002c010000701101000a001440c9b9e6eb5e6a",
                "set:1,2,300,70000",
            ),
            ("0202017801790a00ac3a8d681184aa31", "set:x,y"),
            (
                "120102121200000004008161020101816202c3e802ff0a005dc24e12f55226bc",
                "l:a,1,b,1000",
            ),
            (
                "110f0f000000020081610283696e6604ff0a00535a91958f3ba945",
                "z:a=inf",
            ),
        ];
        for (payload, want) in cases {
            let v = restore(&hex(payload)).unwrap_or_else(|e| panic!("{want}: {e:?}"));
            let got = match &v {
                Value::Str(s) if s.len() == 100 && s.iter().all(|&c| c == b'a') => {
                    "s:a*100".to_string()
                }
                Value::Str(s) => format!("s:{}", String::from_utf8_lossy(s)),
                Value::Coll(c) => match &**c {
                    Collection::Hash(h) => {
                        let mut f: Vec<String> = h
                            .iter()
                            .map(|(k, v)| {
                                format!(
                                    "{}={}",
                                    String::from_utf8_lossy(k),
                                    String::from_utf8_lossy(v)
                                )
                            })
                            .collect();
                        f.sort();
                        format!("h:{}", f.join(","))
                    }
                    Collection::ZSet(z) => format!(
                        "z:{}",
                        z.iter()
                            .map(|(m, s)| format!("{}={s}", String::from_utf8_lossy(m)))
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    Collection::Set(s) => {
                        let mut m: Vec<String> = s
                            .iter()
                            .map(|m| String::from_utf8_lossy(m).into_owned())
                            .collect();
                        m.sort_by_key(|x| (x.parse::<i64>().unwrap_or(i64::MAX), x.clone()));
                        format!("set:{}", m.join(","))
                    }
                    Collection::List(l) => format!(
                        "l:{}",
                        l.iter()
                            .map(|e| String::from_utf8_lossy(e).into_owned())
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    Collection::Stream(_) => "stream".to_string(),
                    Collection::Str(_) => "chunked string".to_string(),
                },
            };
            assert_eq!(&got, want);
        }
    }
}
