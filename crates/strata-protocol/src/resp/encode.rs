//! Reply and request encoding for the server hot path.
//!
//! Writers append RESP bytes to a `BytesMut` without building a [`Frame`]
//! and without heap allocation beyond growing `out`. RESP3-only types are
//! downgraded for RESP2 clients the same way Redis does.
//!
//! [`Frame`]: super::frame::Frame

use bytes::{BufMut, BytesMut};

use super::num::{fmt_double, fmt_double_resp3, fmt_i64, fmt_u64};

/// Protocol version negotiated with a client (`HELLO 2` / `HELLO 3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// RESP2 (default for new connections).
    Resp2,
    /// RESP3.
    Resp3,
}

const CRLF: &[u8] = b"\r\n";

#[inline]
fn write_line_sanitized(out: &mut BytesMut, prefix: u8, s: &[u8]) {
    out.reserve(s.len() + 3);
    out.put_u8(prefix);
    if s.iter().any(|&b| b == b'\r' || b == b'\n') {
        for &b in s {
            out.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
    } else {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(CRLF);
}

#[inline]
fn write_header(out: &mut BytesMut, prefix: u8, n: usize) {
    let digits = fmt_u64(n as u64);
    out.reserve(digits.as_bytes().len() + 3);
    out.put_u8(prefix);
    out.extend_from_slice(digits.as_bytes());
    out.extend_from_slice(CRLF);
}

/// `+<s>\r\n`. Any `\r` or `\n` in `s` is replaced by a space.
pub fn write_simple(out: &mut BytesMut, s: &[u8]) {
    write_line_sanitized(out, b'+', s);
}

/// `-<msg>\r\n`; `msg` includes the code (e.g. `b"ERR unknown command"`).
/// Any `\r` or `\n` in `msg` is replaced by a space.
pub fn write_error(out: &mut BytesMut, msg: &[u8]) {
    write_line_sanitized(out, b'-', msg);
}

/// `:<n>\r\n`.
pub fn write_integer(out: &mut BytesMut, n: i64) {
    let digits = fmt_i64(n);
    out.reserve(digits.as_bytes().len() + 3);
    out.put_u8(b':');
    out.extend_from_slice(digits.as_bytes());
    out.extend_from_slice(CRLF);
}

/// `$<len>\r\n<data>\r\n`.
pub fn write_bulk(out: &mut BytesMut, data: &[u8]) {
    write_header(out, b'$', data.len());
    out.reserve(data.len() + 2);
    out.extend_from_slice(data);
    out.extend_from_slice(CRLF);
}

/// The header of a bulk string of `n` bytes (`$n\r\n`): the bytes and
/// the closing CRLF follow (a reply built in steps).
pub fn write_bulk_len(out: &mut BytesMut, n: usize) {
    write_header(out, b'$', n);
}

/// Null bulk: RESP2 `$-1\r\n`, RESP3 `_\r\n`.
pub fn write_null(out: &mut BytesMut, v: Version) {
    out.extend_from_slice(match v {
        Version::Resp2 => b"$-1\r\n",
        Version::Resp3 => b"_\r\n",
    });
}

/// Null array: RESP2 `*-1\r\n`, RESP3 `_\r\n`.
pub fn write_null_array(out: &mut BytesMut, v: Version) {
    out.extend_from_slice(match v {
        Version::Resp2 => b"*-1\r\n",
        Version::Resp3 => b"_\r\n",
    });
}

/// `*<n>\r\n`.
pub fn write_array_len(out: &mut BytesMut, n: usize) {
    write_header(out, b'*', n);
}

/// Map header for `n` key/value pairs: RESP3 `%<n>`, RESP2 `*<2n>`.
pub fn write_map_len(out: &mut BytesMut, v: Version, n: usize) {
    match v {
        Version::Resp2 => write_header(out, b'*', n.saturating_mul(2)),
        Version::Resp3 => write_header(out, b'%', n),
    }
}

/// Set header: RESP3 `~<n>`, RESP2 `*<n>`.
pub fn write_set_len(out: &mut BytesMut, v: Version, n: usize) {
    match v {
        Version::Resp2 => write_header(out, b'*', n),
        Version::Resp3 => write_header(out, b'~', n),
    }
}

/// Push header (RESP3 `><n>`, RESP2 `*<n>`), for pub/sub messages.
pub fn write_push_len(out: &mut BytesMut, v: Version, n: usize) {
    match v {
        Version::Resp2 => write_header(out, b'*', n),
        Version::Resp3 => write_header(out, b'>', n),
    }
}

/// RESP3 `,<d>\r\n` (Redis `d2string`: `inf`, `-inf`, `nan`, integral values
/// as integers); RESP2 a bulk string of Redis `fpconv_dtoa` formatting.
pub fn write_double(out: &mut BytesMut, v: Version, d: f64) {
    match v {
        Version::Resp2 => write_bulk(out, fmt_double(d).as_bytes()),
        Version::Resp3 => {
            let s = fmt_double_resp3(d);
            out.reserve(s.as_bytes().len() + 3);
            out.put_u8(b',');
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(CRLF);
        }
    }
}

/// RESP3 `#t\r\n` / `#f\r\n`; RESP2 integer 1 / 0.
pub fn write_bool(out: &mut BytesMut, v: Version, b: bool) {
    match v {
        Version::Resp2 => write_integer(out, i64::from(b)),
        Version::Resp3 => out.extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
    }
}

/// RESP3 `=<len>\r\n<fmt>:<data>\r\n`; RESP2 a plain bulk of `data`.
pub fn write_verbatim(out: &mut BytesMut, v: Version, format: &[u8; 3], data: &[u8]) {
    match v {
        Version::Resp2 => write_bulk(out, data),
        Version::Resp3 => {
            write_header(out, b'=', data.len().saturating_add(4));
            out.reserve(data.len() + 6);
            out.extend_from_slice(format);
            out.put_u8(b':');
            out.extend_from_slice(data);
            out.extend_from_slice(CRLF);
        }
    }
}

/// Client side: a request as a multibulk of bulk strings.
pub fn write_request(out: &mut BytesMut, args: &[&[u8]]) {
    write_array_len(out, args.len());
    for a in args {
        write_bulk(out, a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
        let mut b = BytesMut::new();
        f(&mut b);
        b.to_vec()
    }

    #[test]
    fn writers_produce_exact_bytes() {
        use Version::*;
        let cases: Vec<(Vec<u8>, &[u8])> = vec![
            (enc(|o| write_simple(o, b"OK")), b"+OK\r\n"),
            // newlines in simple strings / errors become spaces
            (enc(|o| write_simple(o, b"a\r\nb")), b"+a  b\r\n"),
            (
                enc(|o| write_error(o, b"ERR bad\nthing")),
                b"-ERR bad thing\r\n",
            ),
            (enc(|o| write_integer(o, 0)), b":0\r\n"),
            (enc(|o| write_integer(o, -42)), b":-42\r\n"),
            (
                enc(|o| write_integer(o, i64::MIN)),
                b":-9223372036854775808\r\n",
            ),
            (enc(|o| write_bulk(o, b"")), b"$0\r\n\r\n"),
            (enc(|o| write_bulk(o, b"a\r\nb")), b"$4\r\na\r\nb\r\n"),
            (enc(|o| write_null(o, Resp2)), b"$-1\r\n"),
            (enc(|o| write_null(o, Resp3)), b"_\r\n"),
            (enc(|o| write_null_array(o, Resp2)), b"*-1\r\n"),
            (enc(|o| write_null_array(o, Resp3)), b"_\r\n"),
            (enc(|o| write_array_len(o, 3)), b"*3\r\n"),
            (enc(|o| write_map_len(o, Resp2, 2)), b"*4\r\n"),
            (enc(|o| write_map_len(o, Resp3, 2)), b"%2\r\n"),
            (enc(|o| write_set_len(o, Resp2, 5)), b"*5\r\n"),
            (enc(|o| write_set_len(o, Resp3, 5)), b"~5\r\n"),
            (enc(|o| write_push_len(o, Resp3, 3)), b">3\r\n"),
            (enc(|o| write_push_len(o, Resp2, 3)), b"*3\r\n"),
            (enc(|o| write_double(o, Resp3, 1.5)), b",1.5\r\n"),
            (enc(|o| write_double(o, Resp3, f64::INFINITY)), b",inf\r\n"),
            (
                enc(|o| write_double(o, Resp3, f64::NEG_INFINITY)),
                b",-inf\r\n",
            ),
            (enc(|o| write_double(o, Resp3, f64::NAN)), b",nan\r\n"),
            (enc(|o| write_double(o, Resp3, 3.0)), b",3\r\n"),
            (enc(|o| write_double(o, Resp2, 1.5)), b"$3\r\n1.5\r\n"),
            (
                enc(|o| write_double(o, Resp2, f64::NEG_INFINITY)),
                b"$4\r\n-inf\r\n",
            ),
            (enc(|o| write_bool(o, Resp3, true)), b"#t\r\n"),
            (enc(|o| write_bool(o, Resp3, false)), b"#f\r\n"),
            (enc(|o| write_bool(o, Resp2, true)), b":1\r\n"),
            (enc(|o| write_bool(o, Resp2, false)), b":0\r\n"),
            (
                enc(|o| write_verbatim(o, Resp3, b"txt", b"hi")),
                b"=6\r\ntxt:hi\r\n",
            ),
            (
                enc(|o| write_verbatim(o, Resp2, b"txt", b"hi")),
                b"$2\r\nhi\r\n",
            ),
            (
                enc(|o| write_request(o, &[b"SET", b"k", b""])),
                b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
            ),
            (enc(|o| write_request(o, &[])), b"*0\r\n"),
        ];
        for (i, (got, want)) in cases.iter().enumerate() {
            assert_eq!(got.as_slice(), *want, "case {i}");
        }
    }
}
