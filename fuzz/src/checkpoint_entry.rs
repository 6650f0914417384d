//! Fuzzes the checkpoint file's decoders (header, entry, trailer: what a
//! restart reads back) and checks invariants, not only the absence of
//! panics:
//! - a header that decodes encodes to bytes that decode to it again;
//! - an entry that decodes says how long it is, within the input, and
//!   its key lies inside those bytes; an entry without a directory
//!   re-encodes to bytes that decode to the same entry;
//! - a trailer that decodes encodes to the same bytes.

use strata_engine::log::checkpoint::{
    decode_entry, decode_header, decode_trailer, encode_entry, encode_header, encode_trailer,
    HEADER_LEN, TRAILER_LEN,
};

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    if let Ok(h) = decode_header(data) {
        let bytes = encode_header(&h);
        assert_eq!(decode_header(&bytes), Ok(h));
    }
    if data.len() >= HEADER_LEN {
        let _ = decode_header(&data[..HEADER_LEN]);
    }
    if let Some((e, n)) = decode_entry(data) {
        assert!(
            n <= data.len(),
            "entry length {n} past {} bytes",
            data.len()
        );
        let key_at = e.key.as_ptr() as usize - data.as_ptr() as usize;
        assert!(key_at + e.key.len() <= n, "the key lies past the entry");
        if e.chunks.is_none() {
            // (Semantically: bits no field uses are not kept.)
            let mut out = Vec::new();
            encode_entry(&mut out, &e);
            let (again, m) = decode_entry(&out).expect("an encoded entry decodes");
            assert_eq!(m, out.len());
            assert_eq!(again, e, "an entry re-encodes differently");
        }
    }
    if data.len() >= TRAILER_LEN {
        if let Ok((entries, crc)) = decode_trailer(&data[..TRAILER_LEN]) {
            assert_eq!(&encode_trailer(entries, crc)[..], &data[..TRAILER_LEN]);
        }
    }
}
