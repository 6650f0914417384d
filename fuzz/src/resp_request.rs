//! Fuzzes `decode_request` and checks invariants, not just absence of panics:
//! - a decode never consumes more than the buffer holds, and `Ok(None)`
//!   leaves the buffer untouched;
//! - on `Ok(Some(args))`, re-encoding the args with `write_request` and
//!   decoding again yields the same args and consumes exactly that encoding;
//! - decoding the whole input gives the same sequence of results as feeding
//!   it in two halves (split-independence).

use bytes::{Bytes, BytesMut};
use strata_protocol::{decode_request, write_request, Limits, ProtocolError};

type Outcome = Result<Option<Vec<Bytes>>, ProtocolError>;

fn limits_for(selector: u8) -> Limits {
    // Bit 0: tiny limits; the selector's top bit: a client that has not
    // authenticated (Redis's pre-AUTH limits).
    let base = if selector & 1 == 0 {
        Limits::default()
    } else {
        Limits {
            max_bulk_len: 64,
            max_multibulk_len: 8,
            max_inline_len: 48,
            unauthenticated: false,
        }
    };
    Limits {
        unauthenticated: selector & 0x80 != 0,
        ..base
    }
}

/// Feeds `chunks` one after another, decoding as much as possible after
/// each; stops decoding after the first error.
fn run(chunks: &[&[u8]], limits: &Limits) -> Vec<Outcome> {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            let before = buf.len();
            let r = decode_request(&mut buf, limits);
            assert!(buf.len() <= before, "consumed more than available");
            match r {
                Ok(None) => {
                    assert_eq!(buf.len(), before, "Ok(None) must not consume");
                    break;
                }
                Ok(Some(ref args)) => {
                    check_reencode(args, limits);
                    out.push(r);
                }
                Err(_) => {
                    out.push(r);
                    return out;
                }
            }
        }
    }
    out
}

fn check_reencode(args: &[Bytes], limits: &Limits) {
    let (max_args, max_bulk) = if limits.unauthenticated {
        (
            Limits::UNAUTHENTICATED_MULTIBULK_LEN as usize,
            Limits::UNAUTHENTICATED_BULK_LEN,
        )
    } else {
        (limits.max_multibulk_len, limits.max_bulk_len)
    };
    if args.len() > max_args.min(limits.max_multibulk_len)
        || args
            .iter()
            .any(|a| a.len() > max_bulk.min(limits.max_bulk_len))
    {
        // Inline args may exceed the multibulk limits (Redis's pre-AUTH
        // limits too: its inline path has none).
        return;
    }
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
    let mut enc = BytesMut::new();
    write_request(&mut enc, &refs);
    let len = enc.len();
    let mut enc_plus = enc.clone();
    enc_plus.extend_from_slice(b"*1\r\n"); // trailing bytes must not be consumed
    let again = decode_request(&mut enc_plus, limits);
    assert_eq!(
        enc_plus.len(),
        4,
        "re-encoded request consumed {len} bytes wrongly"
    );
    assert_eq!(again, Ok(Some(args.to_vec())), "re-encode round trip");
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limits = limits_for(selector);
    let whole = run(&[input], &limits);
    let mid = usize::from(selector >> 1) * input.len() / 127;
    let (a, b) = input.split_at(mid.min(input.len()));
    let halves = run(&[a, b], &limits);
    assert_eq!(whole, halves, "split at {mid} changed the result");
}
