//! Wire formats for the two protocols: encoding GET/SET requests and parsing
//! their replies into [`Reply`]. RESP goes through `strata-protocol`; the
//! memcached text protocol (`get`/`set` only) is implemented here. No I/O.

use bytes::{Bytes, BytesMut};
use strata_protocol::{parse_frame, write_request, Frame, Limits, Parsed};

use crate::options::Protocol;
use crate::workload::Cmd;

/// What a reply meant to the benchmark.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// SET acknowledged (`+OK` / `STORED`), or any other non-error reply.
    Ok,
    /// GET hit with this value.
    Hit(Bytes),
    /// GET miss (null / `END`).
    Miss,
    /// Server error reply (its text).
    Error(String),
}

/// Appends a request to `out`.
pub fn encode(proto: Protocol, cmd: Cmd, key: &[u8], value: &[u8], out: &mut BytesMut) {
    match (proto, cmd) {
        (Protocol::Redis, Cmd::Set) => write_request(out, &[b"SET", key, value]),
        (Protocol::Redis, Cmd::Get) => write_request(out, &[b"GET", key]),
        (Protocol::MemcacheText, Cmd::Set) => {
            out.extend_from_slice(b"set ");
            out.extend_from_slice(key);
            out.extend_from_slice(format!(" 0 0 {}\r\n", value.len()).as_bytes());
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        (Protocol::MemcacheText, Cmd::Get) => {
            out.extend_from_slice(b"get ");
            out.extend_from_slice(key);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Parses one reply to `cmd` from the front of `buf`: `Ok(Some((reply,
/// consumed)))`, `Ok(None)` if more bytes are needed, `Err` if the stream is
/// not a valid reply (the connection cannot continue).
pub fn parse_reply(
    proto: Protocol,
    cmd: Cmd,
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(Reply, usize)>, String> {
    match proto {
        Protocol::Redis => parse_resp(cmd, buf, limits),
        Protocol::MemcacheText => parse_memcache(cmd, buf),
    }
}

fn parse_resp(cmd: Cmd, buf: &[u8], limits: &Limits) -> Result<Option<(Reply, usize)>, String> {
    let (frame, consumed) = match parse_frame(buf, limits).map_err(|e| e.to_string())? {
        Parsed::Complete { value, consumed } => (value, consumed),
        Parsed::Incomplete => return Ok(None),
    };
    let reply = match (frame, cmd) {
        (Frame::Error(e) | Frame::BulkError(e), _) => {
            Reply::Error(String::from_utf8_lossy(&e).into_owned())
        }
        (Frame::Null, Cmd::Get) => Reply::Miss,
        (Frame::Bulk(b), Cmd::Get) => Reply::Hit(b),
        (Frame::Verbatim { data, .. }, Cmd::Get) => Reply::Hit(data),
        (Frame::Simple(b), Cmd::Get) => Reply::Hit(b),
        _ => Reply::Ok,
    };
    Ok(Some((reply, consumed)))
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| p + from)
}

/// Longest header line accepted before declaring the stream broken.
const MAX_LINE: usize = 64 * 1024;

fn parse_memcache(cmd: Cmd, buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(end) = find_crlf(buf, 0) else {
        if buf.len() > MAX_LINE {
            return Err("memcache reply line too long".into());
        }
        return Ok(None);
    };
    let line = &buf[..end];
    let after = end + 2;
    if line == b"ERROR" || line.starts_with(b"CLIENT_ERROR") || line.starts_with(b"SERVER_ERROR") {
        return Ok(Some((
            Reply::Error(String::from_utf8_lossy(line).into_owned()),
            after,
        )));
    }
    match cmd {
        Cmd::Set => Ok(Some((
            if line == b"STORED" {
                Reply::Ok
            } else {
                Reply::Error(String::from_utf8_lossy(line).into_owned())
            },
            after,
        ))),
        Cmd::Get => {
            if line == b"END" {
                return Ok(Some((Reply::Miss, after)));
            }
            // VALUE <key> <flags> <bytes> [<cas>]
            let text = std::str::from_utf8(line).map_err(|_| "bad memcache line")?;
            let mut parts = text.split(' ');
            if parts.next() != Some("VALUE") {
                return Err(format!("unexpected memcache reply {text:?}"));
            }
            let len: usize = parts
                .nth(2)
                .and_then(|l| l.parse().ok())
                .ok_or_else(|| format!("bad VALUE line {text:?}"))?;
            let data_end = after + len;
            let total = data_end + 2 + 5; // data, CRLF, "END\r\n"
            if buf.len() < total {
                return Ok(None);
            }
            if &buf[data_end..total] != b"\r\nEND\r\n" {
                return Err("VALUE not followed by END".into());
            }
            Ok(Some((
                Reply::Hit(Bytes::copy_from_slice(&buf[after..data_end])),
                total,
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(proto: Protocol, cmd: Cmd, wire: &[u8]) -> (Reply, usize) {
        let limits = Limits::default();
        for cut in 0..wire.len() {
            assert_eq!(parse_reply(proto, cmd, &wire[..cut], &limits), Ok(None));
        }
        parse_reply(proto, cmd, wire, &limits).unwrap().unwrap()
    }

    #[test]
    fn resp_requests_and_replies() {
        let mut b = BytesMut::new();
        encode(Protocol::Redis, Cmd::Set, b"k", b"vv", &mut b);
        encode(Protocol::Redis, Cmd::Get, b"k", b"", &mut b);
        assert_eq!(
            &b[..],
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
        );
        assert_eq!(all(Protocol::Redis, Cmd::Set, b"+OK\r\n"), (Reply::Ok, 5));
        assert_eq!(
            all(Protocol::Redis, Cmd::Get, b"$2\r\nvv\r\n"),
            (Reply::Hit(Bytes::from_static(b"vv")), 8)
        );
        assert_eq!(all(Protocol::Redis, Cmd::Get, b"$-1\r\n"), (Reply::Miss, 5));
        assert_eq!(
            all(Protocol::Redis, Cmd::Set, b"-OOM no\r\n"),
            (Reply::Error("OOM no".into()), 9)
        );
    }

    #[test]
    fn memcache_requests_and_replies() {
        let mut b = BytesMut::new();
        encode(Protocol::MemcacheText, Cmd::Set, b"k", b"vv", &mut b);
        encode(Protocol::MemcacheText, Cmd::Get, b"k", b"", &mut b);
        assert_eq!(&b[..], b"set k 0 0 2\r\nvv\r\nget k\r\n");
        let p = Protocol::MemcacheText;
        assert_eq!(all(p, Cmd::Set, b"STORED\r\n"), (Reply::Ok, 8));
        assert_eq!(all(p, Cmd::Get, b"END\r\n"), (Reply::Miss, 5));
        let hit = b"VALUE k 0 4\r\na\r\nb\r\nEND\r\n";
        assert_eq!(
            all(p, Cmd::Get, hit),
            (Reply::Hit(Bytes::from_static(b"a\r\nb")), hit.len())
        );
        assert_eq!(
            all(p, Cmd::Set, b"SERVER_ERROR out of memory\r\n").0,
            Reply::Error("SERVER_ERROR out of memory".into())
        );
        assert!(parse_reply(p, Cmd::Get, b"HUH\r\n", &Limits::default()).is_err());
    }
}
