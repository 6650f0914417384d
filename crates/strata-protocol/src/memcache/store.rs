//! The storage commands' lines and data blocks (`set`, `add`, `replace`,
//! `append`, `prepend`, `cas`; `ms` takes its block here too): the line
//! parsed, the block taken, and a refused line's block swallowed or the
//! connection closed (`super`'s module doc: a data block is never read as
//! commands).

use super::{
    key_at, noreply_lenient, parse_i64, parse_u32, parse_u64, tok, McFrame, McLimits, McRequest,
    StoreMode,
};
use super::{BAD_CHUNK, BAD_FORMAT, ERROR, TOO_LARGE};
use bytes::{Buf, Bytes, BytesMut};

/// The parsed command line of a storage command.
pub(super) struct StoreHead {
    mode: StoreMode,
    key: Bytes,
    flags: u32,
    exptime: i64,
    len: usize,
    cas: u64,
    noreply: bool,
}

/// A refused storage line: the reply, and the length of the data block
/// that follows it when `<bytes>` reads as one (swallowed), else None (the
/// connection closes: module doc).
pub(super) struct StoreRefusal {
    reply: &'static str,
    block: Option<usize>,
}

/// Parses a storage command's line.
pub(super) fn store_head(tokens: &[&[u8]], mode: StoreMode) -> Result<StoreHead, StoreRefusal> {
    let want = if mode == StoreMode::Cas { 6 } else { 5 };
    let block = parse_u64(tok(tokens, 4)).and_then(|n| usize::try_from(n).ok());
    if tokens.len() < want {
        // Too few tokens (a `cas` without its unique): memcached's ERROR;
        // a `<bytes>` there still declares a block, swallowed.
        return Err(StoreRefusal {
            reply: ERROR,
            block: block.filter(|_| tokens.len() >= 5),
        });
    }
    let refuse = |reply| StoreRefusal { reply, block };
    let key = key_at(tokens, 1).map_err(refuse)?;
    let (Some(flags), Some(exptime), Some(len)) =
        (parse_u32(tok(tokens, 2)), parse_i64(tok(tokens, 3)), block)
    else {
        return Err(refuse(BAD_FORMAT));
    };
    let cas = if mode == StoreMode::Cas {
        parse_u64(tok(tokens, 5)).ok_or(refuse(BAD_FORMAT))?
    } else {
        0
    };
    Ok(StoreHead {
        mode,
        key,
        flags,
        exptime,
        len,
        cas,
        noreply: tokens.len() > want && noreply_lenient(tokens),
    })
}

pub(super) fn decode_store(
    buf: &mut BytesMut,
    nl: usize,
    head: Result<StoreHead, StoreRefusal>,
    limits: &McLimits,
) -> Option<McFrame> {
    let head = match head {
        Ok(h) => h,
        Err(StoreRefusal {
            reply: ERROR,
            block: None,
        }) => {
            buf.advance(nl + 1);
            return Some(McFrame::Reply(ERROR));
        }
        Err(StoreRefusal {
            reply,
            block: Some(len),
        }) => return Some(swallow(buf, nl, len, reply)),
        Err(StoreRefusal { reply, block: None }) => return Some(McFrame::Close(reply)),
    };
    let data = match take_data_block(buf, nl, head.len, limits)? {
        Ok(d) => d,
        Err(frame) => return Some(frame),
    };
    Some(McFrame::Request(McRequest::Store {
        mode: head.mode,
        key: head.key,
        flags: head.flags,
        exptime: head.exptime,
        data,
        cas: head.cas,
        noreply: head.noreply,
    }))
}

/// Consumes the line ending at `nl` and what is here of the `len` bytes of
/// its data block and their `\r\n`; the frame says how many more to
/// discard, so the next command parses where it starts.
fn swallow(buf: &mut BytesMut, nl: usize, len: usize, reply: &'static str) -> McFrame {
    let data_start = nl + 1;
    let have = buf.len() - data_start;
    let total = len.saturating_add(2);
    buf.advance(data_start + have.min(total));
    McFrame::Swallow {
        reply,
        bytes: total - have.min(total),
    }
}

/// The data block of a storage command whose line ends at `nl`: None = not
/// all here yet (nothing consumed); Some(Ok(data)) = line and block
/// consumed; Some(Err(frame)) = refused (too large: swallowed; not ended by
/// \r\n: `len + 2` bytes consumed, as memcached reads them).
pub(super) fn take_data_block(
    buf: &mut BytesMut,
    nl: usize,
    len: usize,
    limits: &McLimits,
) -> Option<Result<Bytes, McFrame>> {
    let data_start = nl + 1;
    if len > limits.max_item_size {
        return Some(Err(swallow(buf, nl, len, TOO_LARGE)));
    }
    if buf.len() < data_start + len + 2 {
        return None;
    }
    let ok = buf.get(data_start + len..data_start + len + 2) == Some(b"\r\n");
    buf.advance(data_start);
    let data = buf.split_to(len).freeze();
    buf.advance(2);
    if !ok {
        return Some(Err(McFrame::Reply(BAD_CHUNK)));
    }
    Some(Ok(data))
}
