//! Server-side request decoding (Redis `processMultibulkBuffer` /
//! `processInlineBuffer`).
//!
//! [`decode_request`] decodes at most one request per call. It scans the
//! front of the buffer without consuming; only when a whole request is
//! present does it split it off (zero-copy), so an incomplete request leaves
//! the buffer untouched and is re-scanned on the next call. Bulk payloads are
//! skipped by length, never scanned, so re-scanning costs O(number of
//! headers), not O(bytes).
//!
//! Differences from Redis, all stricter or split-independent:
//! - a bulk payload must be followed by `\r\n`;
//! - a header line's `\r` must be followed by `\n`;
//! - line-length limits are judged on the first `max_inline_len + 1` bytes,
//!   so the outcome never depends on how input was split across reads.

use bytes::{Buf, Bytes, BytesMut};
use smallvec::SmallVec;

use super::inline::split_args;
use super::num::parse_i64;
use super::{scan_line, LineScan};
use crate::error::ProtocolError;
use crate::limits::Limits;

/// Most argument slots reserved up front, whatever count the client declares.
const MAX_PREALLOC_ARGS: usize = 1024;

/// Decodes one client request from the front of `buf`.
///
/// - `Ok(Some(args))`: a whole request was consumed from `buf` (split off,
///   zero-copy: args are slices of the frozen split-off bytes).
/// - `Ok(None)`: need more bytes; `buf` is untouched.
/// - `Err(e)`: protocol error; the server replies `-ERR {e}` and closes.
///
/// Multibulk form: `*<n>\r\n` then n × `$<len>\r\n<bytes>\r\n`. `*0\r\n` and
/// `*-1\r\n` (any n <= 0, as in Redis) are consumed and yield an empty
/// request, which the server ignores.
///
/// Inline form (first byte not `*`): a line ending in `\n` (optional `\r`
/// before it) split like Redis `sdssplitargs`. A blank line yields an empty
/// request.
pub fn decode_request(
    buf: &mut BytesMut,
    limits: &Limits,
) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let mut args = Vec::new();
    Ok(decode_request_into(buf, limits, &mut args)?.then_some(args))
}

/// As [`decode_request`], into `args` (cleared first), so a connection
/// reuses one vector for all its requests: true when a whole request was
/// consumed (`args` then holds it; empty for `*0` or a blank line).
pub fn decode_request_into(
    buf: &mut BytesMut,
    limits: &Limits,
    args: &mut Vec<Bytes>,
) -> Result<bool, ProtocolError> {
    args.clear();
    match buf.first() {
        None => Ok(false),
        Some(b'*') => decode_multibulk(buf, limits, args),
        Some(_) => decode_inline(buf, limits, args),
    }
}

/// Calls `f` with the arguments of each whole multibulk request at the
/// front of `buf` (at most `max` requests, each of at most `MAX_PEEKED`
/// arguments; a longer one is passed with its first `MAX_PEEKED` and
/// `true`), consuming nothing: a server looks at a pipeline's next
/// requests before it runs them. Stops at the first request it cannot
/// read whole (incomplete, inline or malformed: `decode_request` judges
/// those).
pub fn peek_requests<'a>(buf: &'a [u8], max: usize, mut f: impl FnMut(&[&'a [u8]], bool)) {
    let mut pos = 0;
    let mut args: [&[u8]; MAX_PEEKED] = [&[]; MAX_PEEKED];
    for _ in 0..max {
        let Some((count, mut p)) = peek_header(buf, pos, b'*') else {
            return;
        };
        for i in 0..count {
            let Some((len, start)) = peek_header(buf, p, b'$') else {
                return;
            };
            let Some(end) = start.checked_add(len) else {
                return;
            };
            if buf.get(end..end.saturating_add(2)) != Some(b"\r\n") {
                return;
            }
            if let (Some(slot), Some(a)) = (args.get_mut(i), buf.get(start..end)) {
                *slot = a;
            }
            p = end + 2;
        }
        f(args.get(..count).unwrap_or(&args), count > MAX_PEEKED);
        pos = p;
    }
}

/// Most arguments of a request `peek_requests` passes.
pub const MAX_PEEKED: usize = 16;

/// Calls `f` with the second argument (for most commands, the key) of
/// each whole multibulk request at the front of `buf`, at most `max`
/// requests, consuming nothing: a server prefetches a pipeline's keys
/// before it runs it (`peek_requests`).
pub fn peek_keys<'a>(buf: &'a [u8], max: usize, mut f: impl FnMut(&'a [u8])) {
    peek_requests(buf, max, |args, _| {
        if let Some(k) = args.get(1) {
            f(k);
        }
    });
}

/// `<tag><digits>\r\n` at `pos`: the number and where the line ends.
fn peek_header(buf: &[u8], pos: usize, tag: u8) -> Option<(usize, usize)> {
    if *buf.get(pos)? != tag {
        return None;
    }
    let mut n = 0usize;
    let mut i = pos + 1;
    loop {
        match *buf.get(i)? {
            d @ b'0'..=b'9' if i - pos <= 19 => {
                n = n * 10 + (d - b'0') as usize;
                i += 1;
            }
            b'\r' if i > pos + 1 => break,
            _ => return None,
        }
    }
    (*buf.get(i + 1)? == b'\n').then_some((n, i + 2))
}

/// Requests longer than this are copied out of the input buffer
/// (`decode_multibulk`).
const COPY_FRAME_OVER: usize = 64 * 1024;

fn decode_multibulk(
    buf: &mut BytesMut,
    limits: &Limits,
    args: &mut Vec<Bytes>,
) -> Result<bool, ProtocolError> {
    let (count, mut pos) = match scan_line(buf, 0, limits.max_inline_len) {
        LineScan::Incomplete => return Ok(false),
        LineScan::TooLong => return Err(ProtocolError::TooBigMbulkCount),
        LineScan::BadTerminator => return Err(ProtocolError::InvalidMultibulkLength),
        LineScan::Line { body, next } => {
            let n = body
                .get(1..)
                .and_then(parse_i64)
                .ok_or(ProtocolError::InvalidMultibulkLength)?;
            if n > 0 && n as u64 > limits.max_multibulk_len as u64 {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            if limits.unauthenticated && n > Limits::UNAUTHENTICATED_MULTIBULK_LEN {
                return Err(ProtocolError::UnauthenticatedMultibulkLength);
            }
            (n, next)
        }
    };
    if count <= 0 {
        let _ = buf.split_to(pos);
        return Ok(true);
    }
    let count = count as usize;
    // (Inline for up to 8 arguments: most requests then allocate only
    // their argument vector.)
    let mut spans: SmallVec<[(usize, usize); 8]> = SmallVec::new();
    spans.reserve(count.min(MAX_PREALLOC_ARGS));
    for _ in 0..count {
        let len = match scan_line(buf, pos, limits.max_inline_len) {
            LineScan::Incomplete => return Ok(false),
            LineScan::TooLong => return Err(ProtocolError::TooBigBulkCount),
            LineScan::BadTerminator => return Err(ProtocolError::InvalidBulkLength),
            LineScan::Line { body, next } => {
                match body.first() {
                    Some(b'$') => {}
                    Some(&other) => return Err(ProtocolError::ExpectedDollar(other)),
                    // empty line: Redis reports the byte it finds there, '\r'
                    None => return Err(ProtocolError::ExpectedDollar(b'\r')),
                }
                let n = body
                    .get(1..)
                    .and_then(parse_i64)
                    .ok_or(ProtocolError::InvalidBulkLength)?;
                let n = usize::try_from(n).map_err(|_| ProtocolError::InvalidBulkLength)?;
                if n > limits.max_bulk_len {
                    return Err(ProtocolError::InvalidBulkLength);
                }
                if limits.unauthenticated && n > Limits::UNAUTHENTICATED_BULK_LEN {
                    return Err(ProtocolError::UnauthenticatedBulkLength);
                }
                pos = next;
                n
            }
        };
        let end = pos.saturating_add(len);
        match buf.get(end..end.saturating_add(2)) {
            None => return Ok(false),
            Some(b"\r\n") => {}
            Some(_) => return Err(ProtocolError::BulkNotTerminated),
        }
        spans.push((pos, len));
        pos = end + 2;
    }
    let frozen = if pos > COPY_FRAME_OVER {
        // A large request gets its own allocation: its arguments then pin
        // only it, not the connection's input buffer (which, shared, could
        // not be reused, and each later read would copy what it holds into
        // a new one: a pipeline of big commands would pin one buffer each).
        let f = Bytes::copy_from_slice(buf.get(..pos).unwrap_or_default());
        buf.advance(pos);
        f
    } else {
        buf.split_to(pos).freeze()
    };
    args.extend(
        spans
            .into_iter()
            .map(|(start, len)| frozen.slice(start..start + len)),
    );
    Ok(true)
}

fn decode_inline(
    buf: &mut BytesMut,
    limits: &Limits,
    args: &mut Vec<Bytes>,
) -> Result<bool, ProtocolError> {
    let window = buf
        .get(..limits.max_inline_len.saturating_add(1))
        .unwrap_or(buf);
    let Some(nl) = window.iter().position(|&b| b == b'\n') else {
        return if buf.len() > limits.max_inline_len {
            Err(ProtocolError::TooBigInlineRequest)
        } else {
            Ok(false)
        };
    };
    let line = buf.get(..nl).unwrap_or(&[]);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    args.extend(split_args(line)?);
    let _ = buf.split_to(nl + 1);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolError::*;

    type Out = Result<Option<Vec<Vec<u8>>>, ProtocolError>;

    fn small() -> Limits {
        Limits {
            max_bulk_len: 16,
            max_multibulk_len: 4,
            max_inline_len: 32,
            unauthenticated: false,
        }
    }

    fn peeked(buf: &[u8], max: usize) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        peek_keys(buf, max, |k| keys.push(k.to_vec()));
        keys
    }

    /// Each whole request's arguments, and whether it had more than were
    /// passed; nothing past the first request not whole.
    #[test]
    fn peek_requests_gives_each_requests_arguments() {
        let mut buf = b"*3\r\n$4\r\nHGET\r\n$1\r\nh\r\n$1\r\nf\r\n*1\r\n$4\r\nPING\r\n".to_vec();
        let n = MAX_PEEKED + 4;
        buf.extend_from_slice(format!("*{n}\r\n").as_bytes());
        for i in 0..n {
            let a = format!("a{i}");
            buf.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        buf.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$1\r\n");
        let mut seen: Vec<(Vec<Vec<u8>>, bool)> = Vec::new();
        peek_requests(&buf, 16, |args, cut| {
            seen.push((args.iter().map(|a| a.to_vec()).collect(), cut))
        });
        assert_eq!(seen.len(), 3);
        assert_eq!(
            seen[0],
            (vec![b"HGET".to_vec(), b"h".to_vec(), b"f".to_vec()], false)
        );
        assert_eq!(seen[1], (vec![b"PING".to_vec()], false));
        assert_eq!(seen[2].0.len(), MAX_PEEKED);
        assert_eq!(
            seen[2].0[MAX_PEEKED - 1],
            format!("a{}", MAX_PEEKED - 1).into_bytes()
        );
        assert!(seen[2].1);
        let mut first = 0;
        peek_requests(&buf, 1, |_, _| first += 1);
        assert_eq!(first, 1);
    }

    #[test]
    fn peek_keys_reads_whole_requests_only_and_consumes_nothing() {
        let two = b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$1\r\nv\r\n";
        assert_eq!(peeked(two, 16), vec![b"k1".to_vec(), b"k2".to_vec()]);
        assert_eq!(peeked(two, 1), vec![b"k1".to_vec()]);
        // A request without a second argument gives none; the next still counts.
        let ping = b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(peeked(ping, 16), vec![b"k".to_vec()]);
        // The first incomplete, inline or malformed request ends the scan.
        for stop in [
            &b"*2\r\n$3\r\nGET\r\n$2\r\nk"[..],
            b"GET k\r\n",
            b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\r",
            b"*2\r\n$3\r\nGET\r\n$-1\r\n",
            b"*2\r\n$\r\nGET\r\n$2\r\nk1\r\n",
            b"*99999999999999999999999\r\n",
            b"*2\r\n$99999999999999999999\r\nGET\r\n",
            b"",
        ] {
            assert!(
                peeked(stop, 16).is_empty(),
                "{:?}",
                String::from_utf8_lossy(stop)
            );
            let mut buf = two.to_vec();
            buf.extend_from_slice(stop);
            assert_eq!(peeked(&buf, 16).len(), 2);
        }
    }

    #[test]
    fn decode_into_reuses_the_vector_and_leaves_it_empty_without_a_request() {
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING\r\n*1\r\n$4\r\nPI"[..]);
        let mut args = Vec::new();
        assert!(decode_request_into(&mut buf, &small(), &mut args).unwrap());
        assert_eq!(args, [&b"GET"[..], b"a"]);
        let cap = args.capacity();
        assert!(decode_request_into(&mut buf, &small(), &mut args).unwrap());
        assert_eq!(args, [&b"PING"[..]]);
        assert!(!decode_request_into(&mut buf, &small(), &mut args).unwrap());
        assert!(args.is_empty());
        assert_eq!(args.capacity(), cap);
        assert_eq!(&buf[..], b"*1\r\n$4\r\nPI");
    }

    /// Decodes once; returns the outcome and how many bytes were consumed.
    fn dec(input: &[u8], limits: &Limits) -> (Out, usize) {
        let mut buf = BytesMut::from(input);
        let r = decode_request(&mut buf, limits);
        let consumed = input.len() - buf.len();
        (
            r.map(|o| o.map(|v| v.iter().map(|b| b.to_vec()).collect())),
            consumed,
        )
    }

    fn args(a: &[&[u8]]) -> Out {
        Ok(Some(a.iter().map(|x| x.to_vec()).collect()))
    }

    #[test]
    fn table() {
        let big = vec![b'x'; 40];
        let mut big_hdr = b"*1\r\n".to_vec();
        big_hdr.extend_from_slice(&big);
        let mut big_star = b"*".to_vec();
        big_star.extend_from_slice(&big);
        let mut big_inline = b"PING ".to_vec();
        big_inline.extend_from_slice(&big);
        #[rustfmt::skip]
        let cases: Vec<(&str, &[u8], Out, usize)> = vec![
            ("simple multibulk", b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", args(&[b"GET", b"k"]), 20),
            ("key is binary safe", b"*1\r\n$3\r\n\x00\xff\n\r\n", args(&[b"\x00\xff\n"]), 13),
            ("bulk with CRLF inside payload", b"*1\r\n$4\r\na\r\nb\r\n", args(&[b"a\r\nb"]), 14),
            ("empty bulk", b"*1\r\n$0\r\n\r\n", args(&[b""]), 10),
            ("lowercase/uppercase irrelevant here", b"*1\r\n$3\r\ngEt\r\n", args(&[b"gEt"]), 13),
            ("*0 is consumed, empty request", b"*0\r\n", args(&[]), 4),
            ("*-1 is consumed, empty request", b"*-1\r\n", args(&[]), 5),
            ("negative count other than -1 also empty (Redis)", b"*-7\r\n", args(&[]), 5),
            ("empty buffer needs more", b"", Ok(None), 0),
            ("partial header needs more", b"*2", Ok(None), 0),
            ("CR without LF yet needs more", b"*2\r", Ok(None), 0),
            ("partial payload needs more", b"*1\r\n$5\r\nab", Ok(None), 0),
            ("payload without CRLF yet needs more", b"*1\r\n$2\r\nab", Ok(None), 0),
            ("missing element needs more", b"*2\r\n$1\r\na\r\n", Ok(None), 0),
            ("only the first of a pipeline is consumed", b"*1\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n", args(&[b"a"]), 11),
            ("non-numeric multibulk length", b"*x\r\n", Err(InvalidMultibulkLength), 0),
            ("empty multibulk length", b"*\r\n", Err(InvalidMultibulkLength), 0),
            ("plus sign not accepted (string2ll)", b"*+1\r\n", Err(InvalidMultibulkLength), 0),
            ("multibulk length above limit", b"*5\r\n", Err(InvalidMultibulkLength), 0),
            ("multibulk header CR not followed by LF", b"*1\rx", Err(InvalidMultibulkLength), 0),
            ("non-numeric bulk length", b"*1\r\n$x\r\n", Err(InvalidBulkLength), 0),
            ("negative bulk length rejected", b"*1\r\n$-1\r\n", Err(InvalidBulkLength), 0),
            ("declared length above limit rejected before payload arrives", b"*1\r\n$17\r\n", Err(InvalidBulkLength), 0),
            ("bulk header CR not followed by LF", b"*1\r\n$1\rx", Err(InvalidBulkLength), 0),
            ("expected '$'", b"*1\r\n:1\r\n", Err(ExpectedDollar(b':')), 0),
            ("expected '$' on an empty line", b"*1\r\n\r\n", Err(ExpectedDollar(b'\r')), 0),
            ("payload not followed by CRLF", b"*1\r\n$1\r\nabc\r\n", Err(BulkNotTerminated), 0),
            ("too big mbulk count string", &big_star, Err(TooBigMbulkCount), 0),
            ("too big bulk count string", &big_hdr, Err(TooBigBulkCount), 0),
            ("inline", b"PING\r\n", args(&[b"PING"]), 6),
            ("inline with bare LF", b"GET k\n", args(&[b"GET", b"k"]), 6),
            ("inline with quotes", b"SET k \"a b\\n\"\r\n", args(&[b"SET", b"k", b"a b\n"]), 15),
            ("empty inline line", b"\r\n", args(&[]), 2),
            ("blank inline line", b"   \n", args(&[]), 4),
            ("inline needs newline", b"PING", Ok(None), 0),
            ("inline pipeline: one line at a time", b"PING\r\nPING\r\n", args(&[b"PING"]), 6),
            ("unbalanced quotes", b"SET \"k\r\n", Err(UnbalancedQuotes), 0),
            ("too big inline request", &big_inline, Err(TooBigInlineRequest), 0),
        ];
        for (name, input, want, consumed) in cases {
            let (got, used) = dec(input, &small());
            assert_eq!(got, want, "{name}");
            assert_eq!(used, consumed, "{name}: consumed");
        }
    }

    #[test]
    fn error_texts_are_exact() {
        let cases: &[(ProtocolError, &str)] = &[
            (
                InvalidMultibulkLength,
                "Protocol error: invalid multibulk length",
            ),
            (InvalidBulkLength, "Protocol error: invalid bulk length"),
            (
                ExpectedDollar(b'x'),
                "Protocol error: expected '$', got 'x'",
            ),
            (
                TooBigMbulkCount,
                "Protocol error: too big mbulk count string",
            ),
            (TooBigBulkCount, "Protocol error: too big bulk count string"),
            (
                TooBigInlineRequest,
                "Protocol error: too big inline request",
            ),
            (
                UnbalancedQuotes,
                "Protocol error: unbalanced quotes in request",
            ),
            (
                BulkNotTerminated,
                "Protocol error: bulk string not terminated by CRLF",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), *text);
        }
    }

    #[test]
    fn pipeline_of_two_requests_decodes_one_at_a_time() {
        let mut buf = BytesMut::from(&b"*1\r\n$4\r\nPING\r\nECHO x\r\n"[..]);
        let l = Limits::default();
        let first = decode_request(&mut buf, &l).unwrap().unwrap();
        assert_eq!(first, vec![Bytes::from_static(b"PING")]);
        assert_eq!(&buf[..], b"ECHO x\r\n");
        let second = decode_request(&mut buf, &l).unwrap().unwrap();
        assert_eq!(
            second,
            vec![Bytes::from_static(b"ECHO"), Bytes::from_static(b"x")]
        );
        assert!(buf.is_empty());
        assert_eq!(decode_request(&mut buf, &l), Ok(None));
    }

    #[test]
    fn huge_declared_lengths_rejected_immediately_with_default_limits() {
        let l = Limits::default();
        let (r, _) = dec(b"*1\r\n$536870913\r\n", &l);
        assert_eq!(r, Err(InvalidBulkLength));
        let (r, _) = dec(b"*1073741825\r\n", &l);
        assert_eq!(r, Err(InvalidMultibulkLength));
        // exactly at the limit is accepted and waits for the payload
        let (r, _) = dec(b"*1\r\n$536870912\r\n", &l);
        assert_eq!(r, Ok(None));
        // overflowing i64 is just invalid
        let (r, _) = dec(b"*1\r\n$99999999999999999999\r\n", &l);
        assert_eq!(r, Err(InvalidBulkLength));
    }

    #[test]
    fn unauthenticated_limits_as_redis() {
        let l = Limits {
            unauthenticated: true,
            ..Limits::default()
        };
        // The header alone is refused: nothing of the payload is awaited.
        assert_eq!(dec(b"*11\r\n", &l).0, Err(UnauthenticatedMultibulkLength));
        assert_eq!(
            dec(b"*1\r\n$16385\r\n", &l).0,
            Err(UnauthenticatedBulkLength)
        );
        // At the limits: accepted.
        assert_eq!(dec(b"*10\r\n", &l).0, Ok(None));
        assert_eq!(dec(b"*1\r\n$16384\r\n", &l).0, Ok(None));
        // The absolute maximum is checked first, as Redis does.
        assert_eq!(dec(b"*1\r\n$536870913\r\n", &l).0, Err(InvalidBulkLength));
        // Authenticated: no such limit.
        assert_eq!(dec(b"*11\r\n", &Limits::default()).0, Ok(None));
    }

    #[test]
    fn header_window_is_split_independent() {
        // a header of exactly max_inline_len bytes (incl. '*') is accepted
        let l = Limits {
            max_inline_len: 4,
            ..Limits::default()
        };
        assert_eq!(dec(b"*001", &l).0, Ok(None));
        assert_eq!(dec(b"*001\r\n", &l).0, Err(InvalidMultibulkLength));
        assert_eq!(dec(b"*0012", &l).0, Err(TooBigMbulkCount));
        assert_eq!(dec(b"*0012\r\n", &l).0, Err(TooBigMbulkCount));
    }

    #[test]
    fn args_are_zero_copy_slices() {
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n"[..]);
        let args = decode_request(&mut buf, &Limits::default())
            .unwrap()
            .unwrap();
        // both args live in one allocation, 8 bytes apart ("foo\r\n$3\r\n")
        let gap = args[1].as_ptr() as usize - args[0].as_ptr() as usize;
        assert_eq!(gap, 3 + 2 + 4);
    }

    #[test]
    fn a_large_request_does_not_share_the_input_buffer() {
        let big = vec![b'x'; 100 * 1024];
        let mut frame = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", big.len()).into_bytes();
        frame.extend_from_slice(&big);
        frame.extend_from_slice(b"\r\n*1\r\n$4\r\nPING\r\n");
        let mut buf = BytesMut::from(&frame[..]);
        let args = decode_request(&mut buf, &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(args.len(), 3);
        assert_eq!(&args[2][..], &big[..]);
        // The rest of the input is the next request, and the arguments do
        // not live in the input buffer (shared, they would be right before
        // the rest of it).
        assert_eq!(&buf[..], b"*1\r\n$4\r\nPING\r\n");
        let after_arg = args[2].as_ptr().wrapping_add(big.len() + 2);
        assert_ne!(after_arg, buf.as_ptr());
        drop(args);
        let args = decode_request(&mut buf, &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(args, vec![Bytes::from_static(b"PING")]);
    }
}
