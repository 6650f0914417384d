//! Inline request splitting: a port of Redis `sdssplitargs`.
//!
//! Rules: arguments are separated by whitespace; `"double quotes"` support
//! `\n \r \t \b \a \\ \"` and `\xHH` escapes (any other escaped byte stands
//! for itself); `'single quotes'` support only `\'`. A closing quote must be
//! followed by whitespace or end of line, and an unterminated quote is an
//! error. As in Redis (which works on C strings), a NUL byte ends the line.

use bytes::Bytes;

use crate::error::ProtocolError;

/// C-locale `isspace`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits one inline line (without its line terminator) into arguments.
pub fn split_args(line: &[u8]) -> Result<Vec<Bytes>, ProtocolError> {
    // Reads like a C string: past the end (or at a NUL) reads as 0.
    let at = |i: usize| -> u8 { line.get(i).copied().unwrap_or(0) };
    let mut p = 0usize;
    let mut args = Vec::new();
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Ok(args);
        }
        let (mut in_dq, mut in_sq, mut done) = (false, false, false);
        let mut cur = Vec::new();
        while !done {
            let c = at(p);
            if in_dq {
                let hex = (at(p + 1) == b'x')
                    .then(|| Some(hex_val(at(p + 2))? * 16 + hex_val(at(p + 3))?))
                    .flatten();
                if let (b'\\', Some(byte)) = (c, hex) {
                    cur.push(byte);
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // closing quote must be followed by a space or nothing
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    done = true;
                } else if c == 0 {
                    return Err(ProtocolError::UnbalancedQuotes);
                } else {
                    cur.push(c);
                }
            } else if in_sq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    done = true;
                } else if c == 0 {
                    return Err(ProtocolError::UnbalancedQuotes);
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    _ => cur.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        args.push(Bytes::from(cur));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        split_args(s).map(|v| v.into_iter().map(|b| b.to_vec()).collect())
    }

    type Want = Result<Vec<Vec<u8>>, ProtocolError>;

    fn ok(parts: &[&[u8]]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        Ok(parts.iter().map(|p| p.to_vec()).collect())
    }

    #[test]
    fn sdssplitargs_table() {
        let unbalanced = Err(ProtocolError::UnbalancedQuotes);
        let cases: Vec<(&[u8], Want)> = vec![
            // whitespace separated, runs of blanks collapse
            (b"SET  key\tvalue", ok(&[b"SET", b"key", b"value"])),
            // leading/trailing blanks ignored
            (b"   PING   ", ok(&[b"PING"])),
            // blank line has no args
            (b"", ok(&[])),
            (b" \t ", ok(&[])),
            // double quotes keep spaces
            (b"SET k \"a b\"", ok(&[b"SET", b"k", b"a b"])),
            // escapes inside double quotes
            (
                b"\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"",
                ok(&[b"\n\r\t\x08\x07\\\"q"]),
            ),
            // hex escape, case-insensitive digits
            (b"\"\\x41\\x6a\\xFF\"", ok(&[b"Aj\xff"])),
            // incomplete hex escape: backslash-x is just 'x'
            (b"\"\\x4\"", ok(&[b"x4"])),
            // single quotes: only \' is an escape
            (b"'it\\'s' '\\n'", ok(&[b"it's", b"\\n"])),
            // empty quoted args are args
            (b"SET k \"\"", ok(&[b"SET", b"k", b""])),
            (b"''", ok(&[b""])),
            // quote starting mid-word joins the word
            (b"ab\"c d\"", ok(&[b"abc d"])),
            // closing quote must be followed by space or end
            (b"\"a\"b", unbalanced.clone()),
            (b"'a'b", unbalanced.clone()),
            // unterminated quotes
            (b"\"abc", unbalanced.clone()),
            (b"'abc", unbalanced.clone()),
            (b"\"abc\\", unbalanced.clone()),
            // vertical tab separates only between args (isspace), not inside
            (b"a\x0bb", ok(&[b"a\x0bb"])),
            (b"\x0ba", ok(&[b"a"])),
            // NUL ends the line like a C string
            (b"GET a\0b c", ok(&[b"GET", b"a"])),
            // high bytes are ordinary
            (b"\xff\xfe", ok(&[b"\xff\xfe"])),
        ];
        for (input, want) in cases {
            assert_eq!(split(input), want, "{:?}", String::from_utf8_lossy(input));
        }
    }
}
