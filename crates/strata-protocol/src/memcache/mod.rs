//! The Memcached text and meta protocols: request decoding with memcached's
//! own rules and error lines, and reply writers.
//!
//! [`decode`] takes one request from the front of a buffer. It returns
//! [`McFrame::Request`] for a well-formed command, or the error line
//! memcached would send ([`McFrame::Reply`]), or a refusal that must be
//! followed by discarding the rest of a too-large value
//! ([`McFrame::Swallow`]), or a reply after which the connection closes
//! ([`McFrame::Close`]: a line that never ends, the binary protocol).
//!
//! Rules kept from memcached 1.6 (`proto_text.c`, `proto_parser.c`):
//! - commands are lower case and tokens are separated by spaces; a line
//!   ends with `\n`, an optional `\r` before it is dropped;
//! - a key is 1 to 250 bytes without spaces or NUL; other control bytes are
//!   part of it, as memcached 1.6 takes them (a longer key is `CLIENT_ERROR
//!   bad command line format`);
//! - storage commands carry `<flags> <exptime> <bytes>` (+ `<cas unique>`
//!   for `cas`) and an optional `noreply`; the data block follows and must
//!   end with `\r\n` (`CLIENT_ERROR bad data chunk` otherwise);
//! - a value larger than the item size limit is refused with `SERVER_ERROR
//!   object too large for cache` and its bytes are swallowed, so the
//!   connection stays in sync;
//! - a data block is never read as commands: a storage line refused for
//!   any reason (a bad key, say) whose `<bytes>` reads as a length has its
//!   block swallowed too (memcached runs a too-long key's block as
//!   commands: a cross-protocol hole); one whose length cannot be read is
//!   answered and the connection closed, since what follows may be a block
//!   of unknown size; a line whose first word is `POST` or `Host:` (an HTTP
//!   request, as a web page can make a browser send) closes the
//!   connection, as on the RESP port;
//! - an unknown command is `ERROR`; a first byte of 0x80 (the deprecated
//!   binary protocol) is refused and the connection closed.
//!
//! Invariants: no panic is reachable from input bytes; on "need more
//! bytes" the buffer is left untouched; results do not depend on how the
//! input was split across reads.

mod meta;
mod peek;
pub mod reply;
mod store;

pub use meta::{base64_decode, base64_encode};
use meta::{decode_meta_set, meta_key_and_flags};
pub use peek::peek_keys;
use store::{decode_store, store_head, take_data_block, StoreHead, StoreRefusal};

use bytes::{Buf, Bytes, BytesMut};
use smallvec::SmallVec;

/// Longest key memcached accepts.
pub const KEY_MAX_LEN: usize = 250;
/// Most tokens on one line (memcached's MAX_TOKENS is 24; `get` may take
/// more keys, which memcached handles by re-tokenizing).
const MAX_META_FLAGS: usize = 32;

/// Decoder limits.
#[derive(Clone, Copy, Debug)]
pub struct McLimits {
    /// Largest value accepted (`memcached-max-item-size`). Default 1 MiB.
    pub max_item_size: usize,
    /// Longest command line. Default 64 KiB.
    pub max_line_len: usize,
    /// Longest `get`/`gets`/`gat`/`gats` line: memcached reads a multi-get
    /// of any length (10,000 keys of 250 bytes are 2.5 MB); this bounds the
    /// input held for one. Default 8 MiB.
    pub max_multiget_len: usize,
}

impl Default for McLimits {
    fn default() -> Self {
        McLimits {
            max_item_size: 1 << 20,
            max_line_len: 64 << 10,
            max_multiget_len: 8 << 20,
        }
    }
}

/// What a storage command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    /// `cas`: store only if the item's CAS is the given one.
    Cas,
}

/// One meta-command flag: its letter and the token after it (may be empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaFlag {
    pub flag: u8,
    pub token: Bytes,
}

/// The meta commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaCmd {
    Get,
    Set,
    Delete,
    Arithmetic,
    Noop,
    Debug,
}

/// A decoded request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McRequest {
    /// get / gets / gat / gats: `touch` is the new exptime for gat(s).
    Get {
        keys: Vec<Bytes>,
        with_cas: bool,
        touch: Option<i64>,
    },
    Store {
        mode: StoreMode,
        key: Bytes,
        flags: u32,
        exptime: i64,
        data: Bytes,
        /// The `<cas unique>` of `cas` (0 otherwise).
        cas: u64,
        noreply: bool,
    },
    Delete {
        key: Bytes,
        noreply: bool,
    },
    /// incr / decr
    Arith {
        key: Bytes,
        incr: bool,
        delta: u64,
        noreply: bool,
    },
    Touch {
        key: Bytes,
        exptime: i64,
        noreply: bool,
    },
    FlushAll {
        delay: i64,
        noreply: bool,
    },
    Version,
    Verbosity {
        noreply: bool,
    },
    Quit,
    Stats {
        args: Vec<Bytes>,
    },
    /// `lru_crawler metadump all|hash|<class ids>`: one line per item
    /// (memcached-tool's `dump` and `keys` use it).
    Metadump,
    /// mg / ms / md / ma / mn / me. `key` is empty for `mn`; `data` is the
    /// value of `ms`.
    Meta {
        cmd: MetaCmd,
        key: Bytes,
        /// The key was given base64-encoded (`b` flag); `key` is decoded.
        base64_key: bool,
        flags: Vec<MetaFlag>,
        data: Option<Bytes>,
    },
}

/// What the decoder produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McFrame {
    Request(McRequest),
    /// Send this error line; the offending request was consumed.
    Reply(&'static str),
    /// Send this line, then discard `bytes` more input (the rest of a value
    /// too large to store).
    Swallow {
        reply: &'static str,
        bytes: usize,
    },
    /// Send this line and close the connection.
    Close(&'static str),
}

pub const ERROR: &str = "ERROR";
pub const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";
pub const BAD_CHUNK: &str = "CLIENT_ERROR bad data chunk";
pub const TOO_LARGE: &str = "SERVER_ERROR object too large for cache";
pub const LINE_TOO_LONG: &str = "CLIENT_ERROR line too long";
pub const BINARY_REFUSED: &str =
    "CLIENT_ERROR the binary protocol is not supported (deprecated by memcached); use the text or meta protocol";
pub const BAD_DELTA: &str = "CLIENT_ERROR invalid numeric delta argument";
pub const BAD_EXPTIME: &str = "CLIENT_ERROR invalid exptime argument";
pub const DELETE_USAGE: &str =
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
pub const INVALID_FLAG: &str = "CLIENT_ERROR invalid flag";
pub const BAD_CLASS: &str = "BADCLASS invalid class id";
/// What memcached 1.6 answers for a `b` key that is not valid base64.
pub const BAD_KEY: &str = "CLIENT_ERROR invalid or duplicate flag";
pub const DUPLICATE_FLAG: &str = "CLIENT_ERROR duplicate flag";
/// The flag letters memcached's meta commands define (each command
/// accepts all of them, and ignores those it has no use for).
const META_FLAGS: &[u8] = b"bNTRlOPLkstcfvhuqxFCEMJDI";

/// Whether `key` is a valid memcached key: 1..=250 bytes, no spaces, line
/// ends or NUL (memcached 1.6 keeps other control bytes in a key; a NUL
/// ends its line).
pub fn valid_key(key: &[u8]) -> bool {
    !key.is_empty()
        && key.len() <= KEY_MAX_LEN
        && key.iter().all(|&b| !matches!(b, b' ' | b'\n' | 0))
}

fn parse_u64(t: &[u8]) -> Option<u64> {
    if t.is_empty() || t.len() > 20 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

fn parse_i64(t: &[u8]) -> Option<i64> {
    let (neg, digits) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    let v = parse_u64(digits)?;
    let v = i64::try_from(v).ok()?;
    Some(if neg { -v } else { v })
}

fn parse_u32(t: &[u8]) -> Option<u32> {
    parse_u64(t).and_then(|v| u32::try_from(v).ok())
}

/// Decodes one request from the front of `buf`; `Ok(None)` = need more bytes
/// (the buffer is untouched).
pub fn decode(buf: &mut BytesMut, limits: &McLimits) -> Option<McFrame> {
    decode_from(buf, limits, &mut 0)
}

/// `decode`, told that the first `*searched` bytes of `buf` hold no line
/// end (a line still arriving is not scanned again from its start on
/// every read: an 8 MiB `get` line in 64 KiB reads would cost 128 scans of
/// up to 8 MiB). `*searched` is set when more bytes are needed, and
/// cleared when a frame is returned.
pub fn decode_from(buf: &mut BytesMut, limits: &McLimits, searched: &mut usize) -> Option<McFrame> {
    if buf.first() == Some(&0x80) {
        return Some(McFrame::Close(BINARY_REFUSED));
    }
    let max_line = if is_multiget(buf) {
        limits.max_multiget_len
    } else {
        limits.max_line_len
    };
    let from = (*searched).min(buf.len());
    let Some(nl) = buf
        .get(from..)
        .unwrap_or_default()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| from + i)
    else {
        if buf.len() > max_line {
            return Some(McFrame::Close(LINE_TOO_LONG));
        }
        *searched = buf.len();
        return None;
    };
    *searched = 0;
    if nl > max_line {
        return Some(McFrame::Close(LINE_TOO_LONG));
    }
    let line_end = if nl > 0 && buf.get(nl - 1) == Some(&b'\r') {
        nl - 1
    } else {
        nl
    };
    // What the command line says is worked out while its tokens borrow
    // the buffer; then the buffer is advanced (past the line, or with a
    // storage command past its data block too).
    enum Next {
        Frame(McFrame),
        Store(Result<StoreHead, StoreRefusal>),
        MetaSet(Vec<u8>),
    }
    let next = {
        let line = buf.get(..line_end).unwrap_or(&[]);
        let tokens = tokenize(line);
        match tokens.first().copied() {
            None => Next::Frame(McFrame::Reply(ERROR)),
            Some(b"set") => Next::Store(store_head(&tokens, StoreMode::Set)),
            Some(b"add") => Next::Store(store_head(&tokens, StoreMode::Add)),
            Some(b"replace") => Next::Store(store_head(&tokens, StoreMode::Replace)),
            Some(b"append") => Next::Store(store_head(&tokens, StoreMode::Append)),
            Some(b"prepend") => Next::Store(store_head(&tokens, StoreMode::Prepend)),
            Some(b"cas") => Next::Store(store_head(&tokens, StoreMode::Cas)),
            // ms consumes a data block too; its (short) line is copied.
            Some(b"ms") => Next::MetaSet(line.to_vec()),
            // An HTTP request (a web page posting to the port): closed
            // before its body, which could hold commands, is read. Every
            // HTTP request has a `Host:` line before its body.
            Some(t) if t.eq_ignore_ascii_case(b"post") || t.eq_ignore_ascii_case(b"host:") => {
                Next::Frame(McFrame::Close(ERROR))
            }
            Some(_) => Next::Frame(decode_line(&tokens)),
        }
    };
    match next {
        Next::Frame(frame) => {
            buf.advance(nl + 1);
            Some(frame)
        }
        Next::Store(head) => decode_store(buf, nl, head, limits),
        Next::MetaSet(line) => decode_meta_set(buf, nl, &tokenize(&line), limits),
    }
}

/// Whether the line at the front of `buf` is a retrieval command, whose
/// key list may be long (`McLimits::max_multiget_len`).
fn is_multiget(buf: &[u8]) -> bool {
    [&b"get "[..], b"gets ", b"gat ", b"gats "]
        .iter()
        .any(|p| buf.starts_with(p))
}

/// Token `i`, or an empty slice past the end.
fn tok<'a>(tokens: &[&'a [u8]], i: usize) -> &'a [u8] {
    tokens.get(i).copied().unwrap_or(b"")
}

/// `noreply` as memcached reads it: the last token, if it is exactly
/// `noreply`. Other trailing tokens are ignored for storage commands
/// (`set_noreply_maybe`); commands with a fixed shape pass `strict`.
fn noreply_at(tokens: &[&[u8]], i: usize) -> Option<bool> {
    match tokens.get(i) {
        None => Some(false),
        Some(&b"noreply") if tokens.len() == i + 1 => Some(true),
        _ => None,
    }
}

fn noreply_lenient(tokens: &[&[u8]]) -> bool {
    tokens.last() == Some(&&b"noreply"[..])
}

fn key_at(tokens: &[&[u8]], i: usize) -> Result<Bytes, &'static str> {
    match tokens.get(i) {
        Some(k) if valid_key(k) => Ok(Bytes::copy_from_slice(k)),
        Some(_) => Err(BAD_FORMAT),
        None => Err(ERROR),
    }
}

/// A command line other than a storage command, decoded: one function per
/// command below, this the table.
fn decode_line(tokens: &[&[u8]]) -> McFrame {
    let decoded = match tokens.first().copied().unwrap_or(b"") {
        b"get" => retrieve(tokens, false, false),
        b"gets" => retrieve(tokens, true, false),
        b"gat" => retrieve(tokens, false, true),
        b"gats" => retrieve(tokens, true, true),
        b"delete" => delete(tokens),
        b"incr" => arith(tokens, true),
        b"decr" => arith(tokens, false),
        b"touch" => touch(tokens),
        b"flush_all" => flush_all(tokens),
        b"version" => Ok(McRequest::Version),
        b"verbosity" => verbosity(tokens),
        b"quit" => Ok(McRequest::Quit),
        b"lru_crawler" => lru_crawler(tokens),
        b"stats" => Ok(McRequest::Stats {
            args: tokens
                .get(1..)
                .unwrap_or(&[])
                .iter()
                .map(|t| Bytes::copy_from_slice(t))
                .collect(),
        }),
        b"mn" => Ok(McRequest::Meta {
            cmd: MetaCmd::Noop,
            key: Bytes::new(),
            base64_key: false,
            flags: Vec::new(),
            data: None,
        }),
        b"mg" => meta(tokens, MetaCmd::Get),
        b"md" => meta(tokens, MetaCmd::Delete),
        b"ma" => meta(tokens, MetaCmd::Arithmetic),
        b"me" => meta(tokens, MetaCmd::Debug),
        _ => Err(ERROR),
    };
    match decoded {
        Ok(r) => McFrame::Request(r),
        Err(e) => McFrame::Reply(e),
    }
}

/// `get`/`gets <key>*`, `gat`/`gats <exptime> <key>*`.
fn retrieve(tokens: &[&[u8]], with_cas: bool, with_touch: bool) -> Result<McRequest, &'static str> {
    let first = if with_touch { 2 } else { 1 };
    if tokens.len() < first + 1 {
        return Err(ERROR);
    }
    let touch = match with_touch {
        true => Some(parse_i64(tok(tokens, 1)).ok_or(BAD_EXPTIME)?),
        false => None,
    };
    let keys = tokens
        .get(first..)
        .unwrap_or(&[])
        .iter()
        .map(|k| key_or_err(k))
        .collect::<Result<_, _>>()?;
    Ok(McRequest::Get {
        keys,
        with_cas,
        touch,
    })
}

/// `delete <key> [0] [noreply]` (the 0: an old time argument).
fn delete(tokens: &[&[u8]]) -> Result<McRequest, &'static str> {
    let key = key_at(tokens, 1)?;
    let rest = match tokens.get(2) {
        Some(&b"0") => 3,
        _ => 2,
    };
    let noreply = noreply_at(tokens, rest).ok_or(DELETE_USAGE)?;
    Ok(McRequest::Delete { key, noreply })
}

/// `incr`/`decr <key> <delta> [noreply]`.
fn arith(tokens: &[&[u8]], incr: bool) -> Result<McRequest, &'static str> {
    if tokens.len() < 3 {
        return Err(ERROR);
    }
    let key = key_at(tokens, 1)?;
    let delta = parse_u64(tok(tokens, 2)).ok_or(BAD_DELTA)?;
    let noreply = noreply_at(tokens, 3).ok_or(ERROR)?;
    Ok(McRequest::Arith {
        key,
        incr,
        delta,
        noreply,
    })
}

/// `touch <key> <exptime> [noreply]`.
fn touch(tokens: &[&[u8]]) -> Result<McRequest, &'static str> {
    if tokens.len() < 3 {
        return Err(ERROR);
    }
    let key = key_at(tokens, 1)?;
    let exptime = parse_i64(tok(tokens, 2)).ok_or(BAD_EXPTIME)?;
    let noreply = noreply_at(tokens, 3).ok_or(ERROR)?;
    Ok(McRequest::Touch {
        key,
        exptime,
        noreply,
    })
}

/// `flush_all [delay] [noreply]`.
fn flush_all(tokens: &[&[u8]]) -> Result<McRequest, &'static str> {
    let (delay, rest) = match tokens.get(1) {
        Some(&b"noreply") | None => (0, 1),
        Some(t) => (parse_i64(t).ok_or(BAD_EXPTIME)?, 2),
    };
    let noreply = noreply_at(tokens, rest).ok_or(BAD_EXPTIME)?;
    Ok(McRequest::FlushAll { delay, noreply })
}

/// `verbosity <level> [noreply]`.
fn verbosity(tokens: &[&[u8]]) -> Result<McRequest, &'static str> {
    if tokens.len() < 2 || parse_u64(tok(tokens, 1)).is_none() {
        return Err(ERROR);
    }
    let noreply = noreply_at(tokens, 2).ok_or(ERROR)?;
    Ok(McRequest::Verbosity { noreply })
}

/// Only `lru_crawler metadump`: the other lru_crawler controls tune
/// memcached's crawler, which Strata does not have (its expiry sweep runs
/// on its own).
fn lru_crawler(tokens: &[&[u8]]) -> Result<McRequest, &'static str> {
    match (tokens.get(1).copied(), tokens.get(2).copied()) {
        (Some(b"metadump"), Some(b"all" | b"hash")) => Ok(McRequest::Metadump),
        // Strata's items form one class, as memcached's `cls=1`.
        (Some(b"metadump"), Some(ids))
            if ids.split(|&b| b == b',').all(|id| parse_u64(id).is_some()) =>
        {
            Ok(McRequest::Metadump)
        }
        (Some(b"metadump"), Some(_)) => Err(BAD_CLASS),
        _ => Err(ERROR),
    }
}

/// `mg`, `md`, `ma`, `me <key> <flags>*`.
fn meta(tokens: &[&[u8]], cmd: MetaCmd) -> Result<McRequest, &'static str> {
    let (key, base64_key, flags) = meta_key_and_flags(tokens, cmd)?;
    Ok(McRequest::Meta {
        cmd,
        key,
        base64_key,
        flags,
        data: None,
    })
}

fn key_or_err(k: &[u8]) -> Result<Bytes, &'static str> {
    if valid_key(k) {
        Ok(Bytes::copy_from_slice(k))
    } else {
        Err(BAD_FORMAT)
    }
}

/// A command line's space-separated tokens (on the stack for the usual
/// short lines).
fn tokenize(line: &[u8]) -> SmallVec<[&[u8]; 8]> {
    line.split(|&b| b == b' ')
        .filter(|t| !t.is_empty())
        .collect()
}

#[cfg(test)]
mod tests;
