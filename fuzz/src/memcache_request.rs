//! Fuzzes the memcached decoder and checks invariants, not just absence of
//! panics:
//! - a decode never consumes more than the buffer holds, and `None` leaves
//!   the buffer untouched;
//! - a decoded request's keys obey memcached's key rules;
//! - decoding the whole input gives the same frames as feeding it in two
//!   halves (split-independence; swallowed bytes normalised).

use bytes::{Buf, BytesMut};
use strata_protocol::memcache::{decode, valid_key, McFrame, McLimits, McRequest};

fn run(chunks: &[&[u8]], limits: &McLimits) -> Vec<McFrame> {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut swallow = 0usize;
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            if swallow > 0 {
                let n = swallow.min(buf.len());
                buf.advance(n);
                swallow -= n;
                if swallow > 0 {
                    break;
                }
            }
            let before = buf.len();
            match decode(&mut buf, limits) {
                None => {
                    assert_eq!(buf.len(), before, "None must not consume");
                    break;
                }
                Some(f) => {
                    assert!(buf.len() <= before);
                    if let McFrame::Request(McRequest::Get { keys, .. }) = &f {
                        assert!(keys.iter().all(|k| valid_key(k)));
                    }
                    let close = matches!(f, McFrame::Close(_));
                    let f = match f {
                        McFrame::Swallow { reply, bytes } => {
                            swallow = bytes;
                            McFrame::Reply(reply)
                        }
                        f => f,
                    };
                    out.push(f);
                    if close {
                        return out;
                    }
                }
            }
        }
    }
    out
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limits = McLimits {
        max_item_size: 64,
        max_line_len: 256,
        max_multiget_len: 512,
    };
    let whole = run(&[input], &limits);
    let mid = usize::from(selector) * input.len() / 255;
    let (a, b) = input.split_at(mid.min(input.len()));
    let halves = run(&[a, b], &limits);
    assert_eq!(whole, halves, "split at {mid} changed the result");
}
