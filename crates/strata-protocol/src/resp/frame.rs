//! Generic RESP2+RESP3 value ([`Frame`]) and parser, for clients, tests and
//! benchmarks. The server's hot paths use [`decode_request`] and the writers
//! in [`encode`] instead.
//!
//! The parser copies payloads into owned [`Bytes`]. It bounds line lengths,
//! bulk lengths and aggregate counts by [`Limits`], and nesting depth by
//! [`MAX_FRAME_DEPTH`]. RESP3 attributes (`|`) are parsed and dropped: the
//! value they annotate is returned. Streamed strings/aggregates (`$?`) are
//! not supported and are reported as invalid lengths.
//!
//! [`decode_request`]: super::request::decode_request
//! [`encode`]: super::encode

use bytes::{Bytes, BytesMut};

use super::encode::{self, Version};
use super::num::parse_i64;
use super::{scan_line, LineScan};
use crate::error::ProtocolError;
use crate::limits::Limits;

/// Deepest aggregate nesting [`parse_frame`] accepts.
pub const MAX_FRAME_DEPTH: usize = 128;

/// Most elements reserved up front, whatever count the peer declares.
const MAX_PREALLOC: usize = 1024;

/// A RESP2 or RESP3 value.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `+` simple string.
    Simple(Bytes),
    /// `-` simple error (code included, e.g. `ERR ...`).
    Error(Bytes),
    /// `:` integer.
    Integer(i64),
    /// `$` bulk string.
    Bulk(Bytes),
    /// RESP2 `$-1` / `*-1`, RESP3 `_`.
    Null,
    /// `*` array.
    Array(Vec<Frame>),
    /// RESP3 `,` double.
    Double(f64),
    /// RESP3 `#` boolean.
    Boolean(bool),
    /// RESP3 `(` big number (decimal digits, optional sign).
    BigNumber(Bytes),
    /// RESP3 `=` verbatim string.
    Verbatim {
        /// Three-byte format, e.g. `txt` or `mkd`.
        format: [u8; 3],
        /// Payload after `fmt:`.
        data: Bytes,
    },
    /// RESP3 `%` map.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 `~` set.
    Set(Vec<Frame>),
    /// RESP3 `>` push.
    Push(Vec<Frame>),
    /// RESP3 `!` bulk error.
    BulkError(Bytes),
}

/// Outcome of parsing from a buffer that may hold a partial value.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed<T> {
    /// A whole value was parsed from the first `consumed` bytes.
    Complete {
        /// The parsed value.
        value: T,
        /// Bytes used, always `<= buf.len()`.
        consumed: usize,
    },
    /// Need more bytes.
    Incomplete,
}

/// Parses one frame of either RESP version from the front of `buf`.
///
/// RESP2 null bulk `$-1\r\n` and null array `*-1\r\n` become
/// [`Frame::Null`], as does RESP3 `_\r\n`. Nesting deeper than
/// [`MAX_FRAME_DEPTH`] is an error.
pub fn parse_frame(buf: &[u8], limits: &Limits) -> Result<Parsed<Frame>, ProtocolError> {
    Ok(match parse_at(buf, 0, limits, 0)? {
        Some((value, consumed)) => Parsed::Complete { value, consumed },
        None => Parsed::Incomplete,
    })
}

type Step = Result<Option<(Frame, usize)>, ProtocolError>;

fn line_at<'a>(
    buf: &'a [u8],
    pos: usize,
    limits: &Limits,
) -> Result<Option<(&'a [u8], usize)>, ProtocolError> {
    match scan_line(buf, pos, limits.max_inline_len) {
        LineScan::Line { body, next } => Ok(Some((body.get(1..).unwrap_or(&[]), next))),
        LineScan::Incomplete => Ok(None),
        LineScan::TooLong => Err(ProtocolError::LineTooLong),
        LineScan::BadTerminator => Err(ProtocolError::LineNotTerminated),
    }
}

fn parse_at(buf: &[u8], pos: usize, limits: &Limits, depth: usize) -> Step {
    let Some(&kind) = buf.get(pos) else {
        return Ok(None);
    };
    let Some((line, next)) = line_at(buf, pos, limits)? else {
        return Ok(None);
    };
    let done = |f: Frame| Ok(Some((f, next)));
    if matches!(kind, b'+' | b'-') && line.contains(&b'\n') {
        return Err(ProtocolError::LineNotTerminated); // bare LF inside a line
    }
    match kind {
        b'+' => done(Frame::Simple(Bytes::copy_from_slice(line))),
        b'-' => done(Frame::Error(Bytes::copy_from_slice(line))),
        b':' => done(Frame::Integer(
            parse_i64(line).ok_or(ProtocolError::InvalidInteger)?,
        )),
        b'_' if line.is_empty() => done(Frame::Null),
        b'_' => Err(ProtocolError::InvalidNull),
        b'#' => match line {
            b"t" => done(Frame::Boolean(true)),
            b"f" => done(Frame::Boolean(false)),
            _ => Err(ProtocolError::InvalidBoolean),
        },
        b',' => done(Frame::Double(parse_double(line)?)),
        b'(' => {
            let digits = line.strip_prefix(b"-").or(line.strip_prefix(b"+"));
            let digits = digits.unwrap_or(line);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(ProtocolError::InvalidBigNumber);
            }
            done(Frame::BigNumber(Bytes::copy_from_slice(line)))
        }
        b'$' | b'!' | b'=' => {
            let n = parse_i64(line).ok_or(ProtocolError::InvalidBulkLength)?;
            if n == -1 && kind == b'$' {
                return done(Frame::Null);
            }
            let n = usize::try_from(n).map_err(|_| ProtocolError::InvalidBulkLength)?;
            if n > limits.max_bulk_len {
                return Err(ProtocolError::InvalidBulkLength);
            }
            let end = next.saturating_add(n);
            let payload = match (buf.get(next..end), buf.get(end..end.saturating_add(2))) {
                (Some(p), Some(b"\r\n")) => p,
                (Some(_), Some(_)) => return Err(ProtocolError::BulkNotTerminated),
                _ => return Ok(None),
            };
            let frame = match kind {
                b'$' => Frame::Bulk(Bytes::copy_from_slice(payload)),
                b'!' => Frame::BulkError(Bytes::copy_from_slice(payload)),
                _ => match (payload.get(..3), payload.get(3), payload.get(4..)) {
                    (Some(&[a, b, c]), Some(b':'), Some(data)) => Frame::Verbatim {
                        format: [a, b, c],
                        data: Bytes::copy_from_slice(data),
                    },
                    _ => return Err(ProtocolError::InvalidVerbatim),
                },
            };
            Ok(Some((frame, end + 2)))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            if depth >= MAX_FRAME_DEPTH {
                return Err(ProtocolError::NestingTooDeep);
            }
            let n = parse_i64(line).ok_or(ProtocolError::InvalidMultibulkLength)?;
            if n == -1 && kind == b'*' {
                return done(Frame::Null);
            }
            let n = usize::try_from(n).map_err(|_| ProtocolError::InvalidMultibulkLength)?;
            if n > limits.max_multibulk_len {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            let paired = matches!(kind, b'%' | b'|');
            let total = if paired { n.saturating_mul(2) } else { n };
            let mut items = Vec::with_capacity(total.min(MAX_PREALLOC));
            let mut at = next;
            for _ in 0..total {
                match parse_at(buf, at, limits, depth + 1)? {
                    Some((f, after)) => {
                        items.push(f);
                        at = after;
                    }
                    None => return Ok(None),
                }
            }
            let frame = match kind {
                b'*' => Frame::Array(items),
                b'~' => Frame::Set(items),
                b'>' => Frame::Push(items),
                b'%' => Frame::Map(pairs(items)),
                // attribute: drop it and return the value it annotates
                _ => return parse_at(buf, at, limits, depth),
            };
            Ok(Some((frame, at)))
        }
        other => Err(ProtocolError::UnknownFrameType(other)),
    }
}

fn pairs(items: Vec<Frame>) -> Vec<(Frame, Frame)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

fn parse_double(line: &[u8]) -> Result<f64, ProtocolError> {
    let s = std::str::from_utf8(line).map_err(|_| ProtocolError::InvalidDouble)?;
    match s {
        "inf" | "+inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "nan" | "-nan" => Ok(f64::NAN),
        // Rust also accepts "infinity"/"NaN" spellings; RESP does not.
        _ if s
            .bytes()
            .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E') =>
        {
            Err(ProtocolError::InvalidDouble)
        }
        _ => s.parse().map_err(|_| ProtocolError::InvalidDouble),
    }
}

impl Frame {
    /// Encodes in RESP3 syntax for RESP3-only types and RESP2 syntax for the
    /// RESP2 ones (so [`Frame::Null`] is `$-1\r\n`). Output parses back with
    /// [`parse_frame`] to an equal frame (for non-NaN doubles).
    pub fn encode(&self, out: &mut BytesMut) {
        self.encode_inner(out, None);
    }

    /// Encodes for a specific protocol version: `Resp3` is like
    /// [`Frame::encode`] but writes `_\r\n` for null; `Resp2` downgrades
    /// RESP3 types the way Redis does (map → flat array, set/push → array,
    /// double/big number/verbatim → bulk, boolean → integer, bulk error →
    /// simple error).
    pub fn encode_version(&self, out: &mut BytesMut, v: Version) {
        self.encode_inner(out, Some(v));
    }

    fn encode_inner(&self, out: &mut BytesMut, v: Option<Version>) {
        let v3 = v.unwrap_or(Version::Resp3);
        match self {
            Frame::Simple(s) => encode::write_simple(out, s),
            Frame::Error(s) => encode::write_error(out, s),
            Frame::Integer(n) => encode::write_integer(out, *n),
            Frame::Bulk(b) => encode::write_bulk(out, b),
            Frame::Null => encode::write_null(out, v.unwrap_or(Version::Resp2)),
            Frame::Array(items) => {
                encode::write_array_len(out, items.len());
                items.iter().for_each(|f| f.encode_inner(out, v));
            }
            Frame::Double(d) => encode::write_double(out, v3, *d),
            Frame::Boolean(b) => encode::write_bool(out, v3, *b),
            Frame::BigNumber(n) if v3 == Version::Resp2 => encode::write_bulk(out, n),
            Frame::BigNumber(n) => {
                out.extend_from_slice(b"(");
                out.extend_from_slice(n);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Verbatim { format, data } => encode::write_verbatim(out, v3, format, data),
            Frame::Map(pairs) => {
                encode::write_map_len(out, v3, pairs.len());
                for (k, val) in pairs {
                    k.encode_inner(out, v);
                    val.encode_inner(out, v);
                }
            }
            Frame::Set(items) => {
                encode::write_set_len(out, v3, items.len());
                items.iter().for_each(|f| f.encode_inner(out, v));
            }
            Frame::Push(items) => {
                encode::write_push_len(out, v3, items.len());
                items.iter().for_each(|f| f.encode_inner(out, v));
            }
            Frame::BulkError(e) if v3 == Version::Resp2 => encode::write_error(out, e),
            Frame::BulkError(e) => {
                out.extend_from_slice(b"!");
                out.extend_from_slice(super::num::fmt_u64(e.len() as u64).as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(e);
                out.extend_from_slice(b"\r\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolError::*;

    fn b(s: &'static [u8]) -> Bytes {
        Bytes::from_static(s)
    }

    fn parse(input: &[u8]) -> Result<Parsed<Frame>, ProtocolError> {
        let limits = Limits {
            max_bulk_len: 16,
            max_multibulk_len: 4,
            max_inline_len: 32,
            unauthenticated: false,
        };
        parse_frame(input, &limits)
    }

    #[test]
    fn nesting_depth_is_limited() {
        let ok = "*1\r\n".repeat(MAX_FRAME_DEPTH) + ":1\r\n";
        assert!(matches!(parse(ok.as_bytes()), Ok(Parsed::Complete { .. })));
        let deep = "*1\r\n".repeat(MAX_FRAME_DEPTH + 1) + ":1\r\n";
        assert_eq!(parse(deep.as_bytes()), Err(NestingTooDeep));
        assert_eq!(
            NestingTooDeep.to_string(),
            "Protocol error: nesting too deep"
        );
    }

    #[test]
    fn encode_versions() {
        use Frame::*;
        let f = Array(vec![
            Null,
            Map(vec![(Bulk(b(b"k")), Double(0.5))]),
            Boolean(true),
            Verbatim {
                format: *b"txt",
                data: b(b"x"),
            },
            BigNumber(b(b"12")),
            BulkError(b(b"E\r\nx")),
        ]);
        let enc = |v: Option<Version>| {
            let mut out = BytesMut::new();
            match v {
                None => f.encode(&mut out),
                Some(v) => f.encode_version(&mut out, v),
            }
            out.to_vec()
        };
        let want3 =
            b"*6\r\n$-1\r\n%1\r\n$1\r\nk\r\n,0.5\r\n#t\r\n=5\r\ntxt:x\r\n(12\r\n!4\r\nE\r\nx\r\n";
        assert_eq!(enc(None), want3.to_vec());
        assert_eq!(&enc(Some(Version::Resp3))[4..7], b"_\r\n");
        let want2 =
            b"*6\r\n$-1\r\n*2\r\n$1\r\nk\r\n$3\r\n0.5\r\n:1\r\n$1\r\nx\r\n$2\r\n12\r\n-E  x\r\n";
        assert_eq!(enc(Some(Version::Resp2)), want2.to_vec());
        let back = parse_frame(want3, &Limits::default()).unwrap();
        assert_eq!(
            back,
            Parsed::Complete {
                value: f.clone(),
                consumed: want3.len()
            }
        );
    }
}
