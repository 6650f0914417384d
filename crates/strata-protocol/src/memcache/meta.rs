//! The meta commands' decoding: a meta line's key (base64 with `b`) and
//! flags, `ms` with its data block, and memcached's base64.

use super::{
    parse_u64, take_data_block, valid_key, McFrame, McLimits, McRequest, MetaCmd, MetaFlag,
    BAD_FORMAT, BAD_KEY, DUPLICATE_FLAG, ERROR, INVALID_FLAG, KEY_MAX_LEN, MAX_META_FLAGS,
    META_FLAGS,
};
use bytes::{Bytes, BytesMut};

/// The key (decoded if the `b` flag is present) and the flags of a meta
/// command line `<cmd> <key> <flags>*` (for `ms`, the datalen token is
/// removed by the caller).
pub(super) fn meta_key_and_flags(
    tokens: &[&[u8]],
    cmd: MetaCmd,
) -> Result<(Bytes, bool, Vec<MetaFlag>), &'static str> {
    let Some(raw_key) = tokens.get(1) else {
        return Err(ERROR);
    };
    // As memcached: a flag letter no meta command defines, or one given
    // twice, fails the command (md and ma word it differently); `me`
    // ignores its flags.
    let (invalid, duplicate) = match cmd {
        MetaCmd::Delete | MetaCmd::Arithmetic => (BAD_KEY, BAD_KEY),
        _ => (INVALID_FLAG, DUPLICATE_FLAG),
    };
    let mut flags: Vec<MetaFlag> = Vec::new();
    for t in tokens.get(2..).unwrap_or(&[]) {
        let Some((&f, token)) = t.split_first() else {
            continue;
        };
        if !f.is_ascii_alphabetic() {
            return Err(INVALID_FLAG);
        }
        if cmd != MetaCmd::Debug {
            if !META_FLAGS.contains(&f) {
                return Err(invalid);
            }
            if flags.iter().any(|x| x.flag == f) {
                return Err(duplicate);
            }
        }
        if flags.len() >= MAX_META_FLAGS {
            return Err(BAD_FORMAT);
        }
        flags.push(MetaFlag {
            flag: f,
            token: Bytes::copy_from_slice(token),
        });
    }
    let base64_key = flags.iter().any(|f| f.flag == b'b');
    let key = if base64_key {
        match base64_decode(raw_key) {
            Some(k) if !k.is_empty() && k.len() <= KEY_MAX_LEN => Bytes::from(k),
            _ => return Err(BAD_KEY),
        }
    } else if valid_key(raw_key) {
        Bytes::copy_from_slice(raw_key)
    } else {
        return Err(BAD_FORMAT);
    };
    Ok((key, base64_key, flags))
}

pub(super) fn decode_meta_set(
    buf: &mut BytesMut,
    nl: usize,
    tokens: &[&[u8]],
    limits: &McLimits,
) -> Option<McFrame> {
    // A length that does not read: what follows may be a data block of
    // unknown size, never to be read as commands (`super` module doc).
    let Some(len) = tokens.get(2).and_then(|t| parse_u64(t)) else {
        return Some(McFrame::Close(BAD_FORMAT));
    };
    let Ok(len) = usize::try_from(len) else {
        return Some(McFrame::Close(BAD_FORMAT));
    };
    let mut rest: Vec<&[u8]> = Vec::with_capacity(tokens.len());
    rest.push(b"ms");
    rest.extend(tokens.get(1).copied());
    rest.extend(tokens.get(3..).unwrap_or(&[]).iter().copied());
    let parsed = meta_key_and_flags(&rest, MetaCmd::Set);
    let data = match take_data_block(buf, nl, len, limits)? {
        Ok(d) => d,
        Err(frame) => return Some(frame),
    };
    match parsed {
        Ok((key, base64_key, flags)) => Some(McFrame::Request(McRequest::Meta {
            cmd: MetaCmd::Set,
            key,
            base64_key,
            flags,
            data: Some(data),
        })),
        Err(e) => Some(McFrame::Reply(e)),
    }
}

/// Standard base64 (RFC 4648, with padding), as meta's `b` flag uses.
pub fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    if s.is_empty() || !s.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.chunks(4) {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            let v = if i >= 4 - pad { 0 } else { val(c)? };
            n = (n << 6) | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(bytes.get(..3 - pad)?);
    }
    Some(out)
}

/// Standard base64 with padding.
pub fn base64_encode(b: &[u8]) -> Vec<u8> {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = (*chunk.first().unwrap_or(&0) as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(
                    T.get(((n >> (18 - 6 * i)) & 63) as usize)
                        .copied()
                        .unwrap_or(b'A'),
                );
            } else {
                out.push(b'=');
            }
        }
    }
    out
}
