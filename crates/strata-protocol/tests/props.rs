//! Property tests: round trips, no panics / no over-consumption on arbitrary
//! bytes, and split-independence (feeding input in pieces gives the same
//! results as feeding it whole).

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use strata_protocol::{decode_request, parse_frame, write_request, Frame, Limits, Parsed};

type Outcome = Result<Option<Vec<Bytes>>, strata_protocol::ProtocolError>;

/// Decodes everything decodable from `input` given whole.
fn decode_all(input: &[u8], limits: &Limits) -> (Vec<Outcome>, usize) {
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    loop {
        let before = buf.len();
        let r = decode_request(&mut buf, limits);
        assert!(buf.len() <= before);
        let stop = !matches!(r, Ok(Some(_)));
        if let Ok(None) = r {
            assert_eq!(buf.len(), before, "Ok(None) must leave buf untouched");
        }
        if !matches!(r, Ok(None)) {
            out.push(r);
        }
        if stop {
            return (out, buf.len());
        }
    }
}

/// Feeds `input` in the given chunks, decoding after each chunk.
fn decode_chunked(chunks: &[&[u8]], limits: &Limits) -> (Vec<Outcome>, usize) {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut failed = false;
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        // after an error the connection is dead; just account for the bytes
        while !failed {
            let r = decode_request(&mut buf, limits);
            match r {
                Ok(None) => break,
                Ok(Some(_)) => out.push(r),
                Err(_) => {
                    out.push(r);
                    failed = true;
                }
            }
        }
    }
    (out, buf.len())
}

fn small_limits() -> Limits {
    Limits {
        max_bulk_len: 64,
        max_multibulk_len: 8,
        max_inline_len: 48,
        unauthenticated: false,
    }
}

/// Bytes biased towards RESP syntax so the parsers get past the first byte.
fn resp_ish() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"*".to_vec()),
        Just(b"$".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"'".to_vec()),
        Just(b"\\x4".to_vec()),
        Just(b" ".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"%|~>=!_#,(:+".to_vec()),
        (0u8..10).prop_map(|d| vec![b'0' + d]),
        any::<u8>().prop_map(|b| vec![b]),
    ];
    prop::collection::vec(token, 0..40).prop_map(|v| v.concat())
}

/// A request that is valid in either form.
fn request() -> impl Strategy<Value = (Vec<Vec<u8>>, Vec<u8>)> {
    let multibulk = prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 0..5)
        .prop_map(|args| {
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            let mut out = BytesMut::new();
            write_request(&mut out, &refs);
            (args, out.to_vec())
        });
    let inline = prop::collection::vec("[a-zA-Z0-9]{1,6}", 0..4).prop_map(|words| {
        let line = format!("{}\r\n", words.join(" "));
        let args = words.into_iter().map(String::into_bytes).collect();
        (args, line.into_bytes())
    });
    prop_oneof![3 => multibulk, 1 => inline]
}

fn frame() -> impl Strategy<Value = Frame> {
    let bytes = || prop::collection::vec(any::<u8>(), 0..16).prop_map(Bytes::from);
    let line = || "[^\r\n]{0,12}".prop_map(Bytes::from);
    let leaf = prop_oneof![
        line().prop_map(Frame::Simple),
        line().prop_map(Frame::Error),
        any::<i64>().prop_map(Frame::Integer),
        bytes().prop_map(Frame::Bulk),
        Just(Frame::Null),
        any::<f64>()
            .prop_filter("finite", |d| d.is_finite())
            .prop_map(Frame::Double),
        prop_oneof![Just(f64::INFINITY), Just(f64::NEG_INFINITY)].prop_map(Frame::Double),
        any::<bool>().prop_map(Frame::Boolean),
        "-?[0-9]{1,30}".prop_map(|s| Frame::BigNumber(Bytes::from(s))),
        (any::<[u8; 3]>(), bytes()).prop_map(|(format, data)| Frame::Verbatim { format, data }),
        bytes().prop_map(Frame::BulkError),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
            prop::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (a) any args written with write_request decode back, whole input consumed.
    #[test]
    fn request_round_trip(args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..16)) {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let mut buf = BytesMut::new();
        write_request(&mut buf, &refs);
        let got = decode_request(&mut buf, &Limits::default()).unwrap().unwrap();
        prop_assert!(buf.is_empty());
        let got: Vec<Vec<u8>> = got.iter().map(|b| b.to_vec()).collect();
        prop_assert_eq!(got, args);
    }

    /// (b) arbitrary bytes: no panic, never over-consume, and decoding is
    /// split-independent even for garbage (errors included).
    #[test]
    fn arbitrary_bytes_request(input in prop_oneof![resp_ish(), prop::collection::vec(any::<u8>(), 0..128)]) {
        for limits in [Limits::default(), small_limits()] {
            let whole = decode_all(&input, &limits);
            let bytewise: Vec<&[u8]> = input.chunks(1).collect();
            prop_assert_eq!(&decode_chunked(&bytewise, &limits), &whole);
        }
    }

    /// (b) arbitrary bytes: parse_frame never panics or over-consumes, and
    /// any prefix of a complete frame is Incomplete or the same error.
    #[test]
    fn arbitrary_bytes_frame(input in prop_oneof![resp_ish(), prop::collection::vec(any::<u8>(), 0..128)]) {
        for limits in [Limits::default(), small_limits()] {
            let whole = parse_frame(&input, &limits);
            if let Ok(Parsed::Complete { consumed, .. }) = &whole {
                prop_assert!(*consumed <= input.len());
                prop_assert!(*consumed > 0);
                for k in 0..*consumed {
                    prop_assert_eq!(parse_frame(&input[..k], &limits), Ok(Parsed::Incomplete));
                }
            }
            if let Err(e) = &whole {
                for k in 0..input.len() {
                    let r = parse_frame(&input[..k], &limits);
                    prop_assert!(r == Ok(Parsed::Incomplete) || r == Err(e.clone()), "prefix {}: {:?}", k, r);
                }
            }
        }
    }

    /// (c) a valid pipeline split at every byte boundary decodes to the same
    /// sequence of requests.
    #[test]
    fn pipeline_split_anywhere(reqs in prop::collection::vec(request(), 1..6)) {
        let wire: Vec<u8> = reqs.iter().flat_map(|(_, w)| w.clone()).collect();
        let want: Vec<Outcome> = reqs
            .iter()
            .map(|(a, _)| Ok(Some(a.iter().map(|x| Bytes::from(x.clone())).collect())))
            .collect();
        let limits = Limits::default();
        prop_assert_eq!(decode_all(&wire, &limits), (want.clone(), 0));
        for k in 0..=wire.len() {
            let (a, b) = wire.split_at(k);
            prop_assert_eq!(decode_chunked(&[a, b], &limits), (want.clone(), 0));
        }
        let bytewise: Vec<&[u8]> = wire.chunks(1).collect();
        prop_assert_eq!(decode_chunked(&bytewise, &limits), (want, 0));
    }

    /// (d) Frame encode -> parse_frame round trip.
    #[test]
    fn frame_round_trip(f in frame(), tail in prop::collection::vec(any::<u8>(), 0..4)) {
        let mut out = BytesMut::new();
        f.encode(&mut out);
        let len = out.len();
        out.extend_from_slice(&tail);
        let parsed = parse_frame(&out, &Limits::default()).unwrap();
        prop_assert_eq!(parsed, Parsed::Complete { value: f, consumed: len });
    }
}
