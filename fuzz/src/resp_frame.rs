//! Fuzzes `parse_frame` and checks invariants, not just absence of panics:
//! - `consumed` is within `1..=len`;
//! - a complete frame re-encodes and parses back to itself (modulo NaN,
//!   which compares unequal), and re-parsing its own prefix bytes gives the
//!   same frame and length;
//! - every strict prefix of a complete frame is `Incomplete`, and every
//!   prefix of an erroneous input is `Incomplete` or the same error.

use bytes::BytesMut;
use strata_protocol::{parse_frame, Frame, Limits, Parsed};

fn has_nan(f: &Frame) -> bool {
    match f {
        Frame::Double(d) => d.is_nan(),
        Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => v.iter().any(has_nan),
        Frame::Map(v) => v.iter().any(|(k, x)| has_nan(k) || has_nan(x)),
        _ => false,
    }
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    let limits = Limits {
        max_bulk_len: 1 << 20,
        max_multibulk_len: 1 << 16,
        max_inline_len: 1 << 12,
        unauthenticated: false,
    };
    let whole = parse_frame(data, &limits);
    // prefix checks are quadratic; keep them to small inputs
    let check_prefixes = data.len() <= 512;
    match &whole {
        Ok(Parsed::Complete { value, consumed }) => {
            assert!(*consumed > 0 && *consumed <= data.len());
            let again = parse_frame(&data[..*consumed], &limits);
            if !has_nan(value) {
                assert_eq!(again, whole, "re-parse of own bytes");
                let mut enc = BytesMut::new();
                value.encode(&mut enc);
                let back = parse_frame(&enc, &limits);
                // encoding may exceed the test limits only for lines we sanitize
                if let Ok(Parsed::Complete {
                    value: v2,
                    consumed: c2,
                }) = back
                {
                    assert_eq!(c2, enc.len());
                    assert_eq!(&v2, value, "encode round trip");
                }
            }
            if check_prefixes {
                for k in 0..*consumed {
                    assert_eq!(parse_frame(&data[..k], &limits), Ok(Parsed::Incomplete));
                }
            }
        }
        Ok(Parsed::Incomplete) => {}
        Err(e) => {
            if check_prefixes {
                for k in 0..data.len() {
                    let r = parse_frame(&data[..k], &limits);
                    assert!(
                        r == Ok(Parsed::Incomplete) || r.as_ref() == Err(e),
                        "prefix {k}"
                    );
                }
            }
        }
    }
}
