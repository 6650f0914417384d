//! RESP wire format: request decoding, generic frames, reply encoding.
//!
//! Also holds the small shared scanning helpers (line scanning with a bounded
//! window, Redis `string2ll`-compatible integer parsing, number formatting).

pub mod encode;
pub mod frame;
pub(crate) mod inline;
pub(crate) mod num;
pub mod request;

/// Result of looking for a `\r\n`-terminated line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineScan<'a> {
    /// A line was found; `body` excludes the CRLF, `next` indexes the byte
    /// after the `\n`.
    Line { body: &'a [u8], next: usize },
    /// A `\r` was found but the following byte is not `\n`.
    BadTerminator,
    /// No line end yet; wait for more bytes.
    Incomplete,
    /// More than `max` bytes without a `\r`.
    TooLong,
}

/// Scans for a line starting at `start`, looking for `\r` in at most
/// `max + 1` bytes. Deterministic regardless of how input was split: the
/// outcome depends only on the first `max + 2` bytes after `start`.
pub(crate) fn scan_line(buf: &[u8], start: usize, max: usize) -> LineScan<'_> {
    let rest = buf.get(start..).unwrap_or(&[]);
    let window = rest.get(..max.saturating_add(1)).unwrap_or(rest);
    match window.iter().position(|&b| b == b'\r') {
        Some(i) => match rest.get(i + 1) {
            None => LineScan::Incomplete,
            Some(b'\n') => LineScan::Line {
                body: rest.get(..i).unwrap_or(&[]),
                next: start + i + 2,
            },
            Some(_) => LineScan::BadTerminator,
        },
        None if rest.len() > max => LineScan::TooLong,
        None => LineScan::Incomplete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_line_cases() {
        // a complete line
        assert_eq!(
            scan_line(b"$3\r\nabc", 0, 10),
            LineScan::Line {
                body: b"$3",
                next: 4
            }
        );
        // starting mid-buffer
        assert_eq!(
            scan_line(b"xx$3\r\n", 2, 10),
            LineScan::Line {
                body: b"$3",
                next: 6
            }
        );
        // '\r' as last byte: need the '\n'
        assert_eq!(scan_line(b"$3\r", 0, 10), LineScan::Incomplete);
        // '\r' followed by something else
        assert_eq!(scan_line(b"$3\rx", 0, 10), LineScan::BadTerminator);
        // exactly max bytes without '\r' is still incomplete, max+1 is too long
        assert_eq!(scan_line(b"1234", 0, 4), LineScan::Incomplete);
        assert_eq!(scan_line(b"12345", 0, 4), LineScan::TooLong);
        // a '\r' at index max is still inside the window
        assert_eq!(
            scan_line(b"1234\r\n", 0, 4),
            LineScan::Line {
                body: b"1234",
                next: 6
            }
        );
        // start past the end
        assert_eq!(scan_line(b"ab", 5, 4), LineScan::Incomplete);
    }
}
