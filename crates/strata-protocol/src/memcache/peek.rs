//! The keys of the whole requests at the front of a memcached input
//! buffer, read without consuming it: a server prefetches a pipeline's
//! keys before it runs it (as `resp::request::peek_keys` does for RESP).
//! Lenient by design: it stops at the first line it does not know or
//! cannot read whole, and `decode` judges every request as before.

use super::tokenize;

/// Calls `f` with each key of the whole requests at the front of `buf`,
/// at most `max` keys: the key of a storage, meta, delete, incr/decr or
/// touch command, every key of get/gets (and gat/gats after their
/// expiry). A storage command's data block is skipped by its length.
pub fn peek_keys<'a>(buf: &'a [u8], max: usize, mut f: impl FnMut(&'a [u8])) {
    let mut pos = 0;
    let mut seen = 0;
    while seen < max {
        let Some(rest) = buf.get(pos..) else {
            return;
        };
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            return;
        };
        let line = rest.get(..nl).unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let tokens = tokenize(line);
        let Some(&cmd) = tokens.first() else {
            return;
        };
        // (The keys, and the data block's length if one follows.)
        let (keys, data): (&[&[u8]], Option<&[u8]>) = match cmd {
            b"get" | b"gets" => (tokens.get(1..).unwrap_or_default(), None),
            b"gat" | b"gats" => (tokens.get(2..).unwrap_or_default(), None),
            b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" => {
                (tokens.get(1..2).unwrap_or_default(), tokens.get(4).copied())
            }
            b"ms" => (tokens.get(1..2).unwrap_or_default(), tokens.get(2).copied()),
            b"mg" | b"md" | b"ma" | b"delete" | b"incr" | b"decr" | b"touch" => {
                (tokens.get(1..2).unwrap_or_default(), None)
            }
            _ => return,
        };
        let mut next = pos + nl + 1;
        if let Some(len) = data {
            let Some(len) = std::str::from_utf8(len)
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
            else {
                return;
            };
            next = match next.checked_add(len).and_then(|n| n.checked_add(2)) {
                Some(n) if n <= buf.len() => n,
                _ => return,
            };
        }
        for &k in keys.iter().take(max - seen) {
            f(k);
            seen += 1;
        }
        pos = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peeked(buf: &[u8], max: usize) -> Vec<String> {
        let mut keys = Vec::new();
        peek_keys(buf, max, |k| {
            keys.push(String::from_utf8_lossy(k).into_owned())
        });
        keys
    }

    #[test]
    fn keys_of_whole_requests_data_blocks_skipped() {
        let buf = b"set a 0 0 3\r\nxyz\r\nget b c\r\nmg d v\r\nms e 2 T0\r\nhi\r\ngat 10 f\r\ndelete g\r\n";
        assert_eq!(peeked(buf, 32), ["a", "b", "c", "d", "e", "f", "g"]);
        assert_eq!(peeked(buf, 2), ["a", "b"]);
        // A data block not all here, an unknown command, a bad length or
        // a line not ended stop the scan where they start.
        assert_eq!(peeked(b"get a\r\nset b 0 0 10\r\nxyz", 32), ["a"]);
        assert_eq!(peeked(b"get a\r\nstats\r\nget b\r\n", 32), ["a"]);
        assert_eq!(
            peeked(b"get a\r\nset b 0 0 x\r\nxyz\r\nget c\r\n", 32),
            ["a"]
        );
        assert_eq!(peeked(b"get a\r\nget b", 32), ["a"]);
        assert!(peeked(b"", 32).is_empty());
    }
}
