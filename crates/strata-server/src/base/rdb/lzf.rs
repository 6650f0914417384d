//! LZF decompression (liblzf's format), for strings Redis compressed in a
//! DUMP payload.

/// Most bytes one input byte can become: a back reference of three bytes
/// copies at most 264.
const MAX_EXPANSION: usize = 88;

/// Decompresses `input` into exactly `out_len` bytes; None if the input is
/// malformed or does not produce that length. A length the input cannot
/// produce is refused before anything is allocated (a RESTORE payload is
/// a client's bytes: it must not make the server allocate what it says).
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    if out_len > input.len().saturating_mul(MAX_EXPANSION) {
        return None;
    }
    // (Grown as the input produces it: a length the input could reach is
    // still a client's word.)
    let mut out: Vec<u8> = Vec::with_capacity(out_len.min(1 << 20));
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

    #[test]
    fn a_length_the_input_cannot_produce_allocates_nothing() {
        // (Found by the rdb_payload fuzz target: 72 PB asked for.)
        assert_eq!(super::decompress(b"\x00a", 72_059_793_151_911_276), None);
        // The longest expansion there is: a literal, then a back
        // reference of 264 bytes from three.
        let mut input = vec![0u8, b'x'];
        input.extend_from_slice(&[0xe0, 255, 0]);
        assert_eq!(super::decompress(&input, 265).map(|v| v.len()), Some(265));
    }
}
