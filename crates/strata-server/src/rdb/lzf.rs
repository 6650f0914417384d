//! LZF decompression (liblzf's format), for strings Redis compressed in a
//! DUMP payload.

/// Decompresses `input` into exactly `out_len` bytes; None if the input is
/// malformed or does not produce that length.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = *input.get(i)? as usize;
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let n = ctrl + 1;
            out.extend_from_slice(input.get(i..i + n)?);
            i += n;
        } else {
            // A back reference: length (ctrl >> 5) + 2, or more bytes.
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i)? as usize;
                i += 1;
            }
            len += 2;
            let off = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(off)?;
            for k in 0..len {
                let b = *out.get(start + k)?;
                out.push(b);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn literal_and_back_reference() {
        // "abcabcabc": literal "abc", then a back reference of 6 at offset 3.
        let input = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(
            super::decompress(&input, 9).as_deref(),
            Some(&b"abcabcabc"[..])
        );
        assert_eq!(super::decompress(&input, 8), None);
        assert_eq!(
            super::decompress(&[0x20, 5], 3),
            None,
            "reference before the start"
        );
    }
}
