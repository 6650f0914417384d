//! The memcached decoder: one table row per rule, then properties (any
//! split of the input gives the same frames; any bytes never panic).

use super::*;
use proptest::prelude::*;

fn decode_all(input: &[u8]) -> Vec<McFrame> {
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    let limits = McLimits {
        max_item_size: 64,
        max_line_len: 512,
        max_multiget_len: 1024,
    };
    let mut swallow = 0usize;
    loop {
        if swallow > 0 {
            let n = swallow.min(buf.len());
            buf.advance(n);
            swallow -= n;
            if swallow > 0 {
                break;
            }
        }
        match decode(&mut buf, &limits) {
            None => break,
            Some(f) => {
                let stop = matches!(f, McFrame::Close(_));
                if let McFrame::Swallow { bytes, .. } = f {
                    swallow = bytes;
                }
                out.push(f);
                if stop {
                    break;
                }
            }
        }
    }
    out
}

fn one(input: &[u8]) -> McFrame {
    let mut f = decode_all(input);
    assert_eq!(f.len(), 1, "{:?} -> {f:?}", String::from_utf8_lossy(input));
    f.remove(0)
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[test]
fn storage_commands() {
    assert_eq!(
        one(b"set k 5 100 3\r\nabc\r\n"),
        McFrame::Request(McRequest::Store {
            mode: StoreMode::Set,
            key: b("k"),
            flags: 5,
            exptime: 100,
            data: b("abc"),
            cas: 0,
            noreply: false
        })
    );
    assert_eq!(
        one(b"cas k 0 -1 0 99 noreply\r\n\r\n"),
        McFrame::Request(McRequest::Store {
            mode: StoreMode::Cas,
            key: b("k"),
            flags: 0,
            exptime: -1,
            data: b(""),
            cas: 99,
            noreply: true
        })
    );
    for (cmd, mode) in [
        ("add", StoreMode::Add),
        ("replace", StoreMode::Replace),
        ("append", StoreMode::Append),
        ("prepend", StoreMode::Prepend),
    ] {
        let f = one(format!("{cmd} key 1 2 1\r\nx\r\n").as_bytes());
        assert!(matches!(f, McFrame::Request(McRequest::Store { mode: m, .. }) if m == mode));
    }
    // Binary data with \r\n inside is fine: the length decides.
    let f = one(b"set k 0 0 4\r\n\r\n\r\n\r\n");
    assert!(
        matches!(f, McFrame::Request(McRequest::Store { data, .. }) if &data[..] == b"\r\n\r\n")
    );
}

#[test]
fn storage_errors_keep_the_connection_in_sync() {
    let cases: &[(&[u8], &[McFrame])] = &[
        // Data not followed by \r\n: len + 2 bytes are consumed, as memcached
        // does, and the rest parses (here a `get` of nothing yet).
        (
            b"set k 0 0 3\r\nabcXY\r\n",
            &[McFrame::Reply(BAD_CHUNK), McFrame::Reply(ERROR)],
        ),
        // Flags over 32 bits, a negative length, junk numbers. A refused
        // line whose length reads has its data block swallowed (never
        // read as commands: memcached 1.6.18 would read it so); one whose
        // length does not read closes the connection.
        (
            b"set k 4294967296 0 1\r\n",
            &[McFrame::Swallow {
                reply: BAD_FORMAT,
                bytes: 3,
            }],
        ),
        (b"set k 0 0 -1\r\n", &[McFrame::Close(BAD_FORMAT)]),
        (
            b"set k 0 0 1x\r\nflush_all\r\n",
            &[McFrame::Close(BAD_FORMAT)],
        ),
        (
            b"set k x 0 1\r\n",
            &[McFrame::Swallow {
                reply: BAD_FORMAT,
                bytes: 3,
            }],
        ),
        (b"set k 0 0\r\n", &[McFrame::Reply(ERROR)]),
        (
            b"set k x 0 9\r\nflush_all\r\nget k\r\n",
            &[
                McFrame::Swallow {
                    reply: BAD_FORMAT,
                    bytes: 0,
                },
                McFrame::Request(McRequest::Get {
                    keys: vec![b("k")],
                    with_cas: false,
                    touch: None,
                }),
            ],
        ),
        (
            b"cas k 0 0 1\r\nx\r\n",
            &[McFrame::Swallow {
                reply: ERROR,
                bytes: 0,
            }],
        ),
        (
            b"cas k 0 0 9\r\nflush_all\r\nget k\r\n",
            &[
                McFrame::Swallow {
                    reply: ERROR,
                    bytes: 0,
                },
                McFrame::Request(McRequest::Get {
                    keys: vec![b("k")],
                    with_cas: false,
                    touch: None,
                }),
            ],
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\n\r\nflush_all\r\n",
            &[McFrame::Close(ERROR)],
        ),
        (b"Host: x\r\nflush_all\r\n", &[McFrame::Close(ERROR)]),
        (
            b"cas k 0 0 1 -5\r\n",
            &[McFrame::Swallow {
                reply: BAD_FORMAT,
                bytes: 3,
            }],
        ),
    ];
    for (input, want) in cases {
        assert_eq!(
            decode_all(input),
            *want,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    // A too-large value is refused and swallowed; the next command parses.
    let mut big = b"set k 0 0 100\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 100));
    big.extend(b"\r\nget k\r\n");
    let f = decode_all(&big);
    assert_eq!(
        f,
        vec![
            McFrame::Swallow {
                reply: TOO_LARGE,
                bytes: 0
            },
            McFrame::Request(McRequest::Get {
                keys: vec![b("k")],
                with_cas: false,
                touch: None
            })
        ]
    );
}

#[test]
fn retrieval_and_other_commands() {
    assert_eq!(
        one(b"gets a b  c\r\n"),
        McFrame::Request(McRequest::Get {
            keys: vec![b("a"), b("b"), b("c")],
            with_cas: true,
            touch: None
        })
    );
    assert_eq!(
        one(b"gat 10 a\n"),
        McFrame::Request(McRequest::Get {
            keys: vec![b("a")],
            with_cas: false,
            touch: Some(10)
        })
    );
    assert_eq!(one(b"gat x a\r\n"), McFrame::Reply(BAD_EXPTIME));
    assert_eq!(one(b"get\r\n"), McFrame::Reply(ERROR));
    assert_eq!(
        one(b"delete k 0 noreply\r\n"),
        McFrame::Request(McRequest::Delete {
            key: b("k"),
            noreply: true
        })
    );
    assert_eq!(one(b"delete k 5\r\n"), McFrame::Reply(DELETE_USAGE));
    assert_eq!(
        one(b"decr k 18446744073709551615\r\n"),
        McFrame::Request(McRequest::Arith {
            key: b("k"),
            incr: false,
            delta: u64::MAX,
            noreply: false
        })
    );
    assert_eq!(one(b"incr k -1\r\n"), McFrame::Reply(BAD_DELTA));
    assert_eq!(
        one(b"incr k 18446744073709551616\r\n"),
        McFrame::Reply(BAD_DELTA)
    );
    assert_eq!(
        one(b"touch k -1 noreply\r\n"),
        McFrame::Request(McRequest::Touch {
            key: b("k"),
            exptime: -1,
            noreply: true
        })
    );
    assert_eq!(one(b"touch k soon\r\n"), McFrame::Reply(BAD_EXPTIME));
    assert_eq!(
        one(b"flush_all 10 noreply\r\n"),
        McFrame::Request(McRequest::FlushAll {
            delay: 10,
            noreply: true
        })
    );
    assert_eq!(
        one(b"flush_all noreply\r\n"),
        McFrame::Request(McRequest::FlushAll {
            delay: 0,
            noreply: true
        })
    );
    assert_eq!(one(b"flush_all later\r\n"), McFrame::Reply(BAD_EXPTIME));
    // An unknown trailing token of a storage command is ignored.
    assert!(matches!(
        one(b"set k 0 0 1 extra\r\nx\r\n"),
        McFrame::Request(McRequest::Store { noreply: false, .. })
    ));
    assert_eq!(one(b"version\r\n"), McFrame::Request(McRequest::Version));
    assert_eq!(
        one(b"verbosity 1 noreply\r\n"),
        McFrame::Request(McRequest::Verbosity { noreply: true })
    );
    assert_eq!(one(b"verbosity\r\n"), McFrame::Reply(ERROR));
    assert_eq!(one(b"quit\r\n"), McFrame::Request(McRequest::Quit));
    assert_eq!(
        one(b"stats settings\r\n"),
        McFrame::Request(McRequest::Stats {
            args: vec![b("settings")]
        })
    );
    // lru_crawler: only metadump, of all classes, the hash, or class ids.
    for ok in ["all", "hash", "1", "1,2,40"] {
        let line = format!("lru_crawler metadump {ok}\r\n");
        assert_eq!(one(line.as_bytes()), McFrame::Request(McRequest::Metadump));
    }
    assert_eq!(
        one(b"lru_crawler metadump bogus\r\n"),
        McFrame::Reply(BAD_CLASS)
    );
    assert_eq!(one(b"lru_crawler metadump\r\n"), McFrame::Reply(ERROR));
    assert_eq!(one(b"lru_crawler crawl all\r\n"), McFrame::Reply(ERROR));
    // Commands are lower case, as in memcached.
    assert_eq!(one(b"GET k\r\n"), McFrame::Reply(ERROR));
    assert_eq!(one(b"bogus\r\n"), McFrame::Reply(ERROR));
    assert_eq!(one(b"\r\n"), McFrame::Reply(ERROR));
}

#[test]
fn key_rules() {
    let long = "k".repeat(KEY_MAX_LEN);
    assert!(matches!(
        one(format!("get {long}\r\n").as_bytes()),
        McFrame::Request(_)
    ));
    let too_long = "k".repeat(KEY_MAX_LEN + 1);
    assert_eq!(
        one(format!("get {too_long}\r\n").as_bytes()),
        McFrame::Reply(BAD_FORMAT)
    );
    assert_eq!(
        decode_all(format!("set {too_long} 0 0 1\r\nx\r\n").as_bytes()),
        vec![McFrame::Swallow {
            reply: BAD_FORMAT,
            bytes: 0
        }]
    );
    // Control bytes belong to a key, as memcached 1.6 takes them; a NUL
    // does not (it ends memcached's line).
    assert!(matches!(one(b"get a\x01b\r\n"), McFrame::Request(_)));
    assert!(matches!(one(b"get a\x7fb\r\n"), McFrame::Request(_)));
    assert_eq!(one(b"get a\x00b\r\n"), McFrame::Reply(BAD_FORMAT));
    assert!(!valid_key(b""));
    assert!(!valid_key(b"a b"));
}

#[test]
fn meta_commands() {
    // Flag letters no meta command defines, and repeated flags, fail the
    // command with memcached's words (md and ma have their own); flags a
    // command has no use for are accepted; `me` ignores its flags.
    assert_eq!(one(b"mg a Q\r\n"), McFrame::Reply(INVALID_FLAG));
    assert_eq!(one(b"mg a v v\r\n"), McFrame::Reply(DUPLICATE_FLAG));
    assert_eq!(
        one(b"ms a 1 T1 T2\r\nx\r\n"),
        McFrame::Reply(DUPLICATE_FLAG)
    );
    assert_eq!(one(b"md a Q\r\n"), McFrame::Reply(BAD_KEY));
    assert_eq!(one(b"ma a q q\r\n"), McFrame::Reply(BAD_KEY));
    assert!(matches!(one(b"mg a D5 J1\r\n"), McFrame::Request(_)));
    assert!(matches!(one(b"me a Q Q\r\n"), McFrame::Request(_)));
    assert_eq!(
        one(b"mg foo v f t k Oabc q\r\n"),
        McFrame::Request(McRequest::Meta {
            cmd: MetaCmd::Get,
            key: b("foo"),
            base64_key: false,
            flags: vec![
                MetaFlag {
                    flag: b'v',
                    token: b("")
                },
                MetaFlag {
                    flag: b'f',
                    token: b("")
                },
                MetaFlag {
                    flag: b't',
                    token: b("")
                },
                MetaFlag {
                    flag: b'k',
                    token: b("")
                },
                MetaFlag {
                    flag: b'O',
                    token: b("abc")
                },
                MetaFlag {
                    flag: b'q',
                    token: b("")
                },
            ],
            data: None
        })
    );
    assert_eq!(
        one(b"ms foo 2 T60 F7 MA\r\nhi\r\n"),
        McFrame::Request(McRequest::Meta {
            cmd: MetaCmd::Set,
            key: b("foo"),
            base64_key: false,
            flags: vec![
                MetaFlag {
                    flag: b'T',
                    token: b("60")
                },
                MetaFlag {
                    flag: b'F',
                    token: b("7")
                },
                MetaFlag {
                    flag: b'M',
                    token: b("A")
                },
            ],
            data: Some(b("hi"))
        })
    );
    // Base64 key.
    let f = one(b"md Zm9v b q\r\n");
    assert!(
        matches!(f, McFrame::Request(McRequest::Meta { key, base64_key: true, .. }) if &key[..] == b"foo")
    );
    assert_eq!(one(b"mg foo 5\r\n"), McFrame::Reply(INVALID_FLAG));
    assert_eq!(one(b"mg\r\n"), McFrame::Reply(ERROR));
    assert_eq!(one(b"ms foo x\r\n"), McFrame::Close(BAD_FORMAT));
    assert_eq!(one(b"ms foo 2\r\nhiXX"), McFrame::Reply(BAD_CHUNK));
    assert_eq!(one(b"md !!!! b\r\n"), McFrame::Reply(BAD_KEY));
    assert!(matches!(
        one(b"mn\r\n"),
        McFrame::Request(McRequest::Meta {
            cmd: MetaCmd::Noop,
            ..
        })
    ));
    assert!(matches!(
        one(b"ma n D5 J10 N0 MD\r\n"),
        McFrame::Request(McRequest::Meta {
            cmd: MetaCmd::Arithmetic,
            ..
        })
    ));
}

#[test]
fn binary_protocol_and_endless_lines_close_the_connection() {
    assert_eq!(
        one(b"\x80\x00\x00\x05\x00\x00\x00\x00"),
        McFrame::Close(BINARY_REFUSED)
    );
    assert_eq!(one(&[b'g'; 600]), McFrame::Close(LINE_TOO_LONG));
    // Incomplete input: nothing yet, the buffer untouched.
    let mut buf = BytesMut::from(&b"set k 0 0 5\r\nab"[..]);
    assert_eq!(decode(&mut buf, &McLimits::default()), None);
    assert_eq!(&buf[..], b"set k 0 0 5\r\nab");
}

#[test]
fn base64_round_trips() {
    for s in [&b""[..], b"f", b"fo", b"foo", b"foob", b"\x00\xff\x10"] {
        let e = base64_encode(s);
        if !s.is_empty() {
            assert_eq!(base64_decode(&e).as_deref(), Some(s));
        }
    }
    assert_eq!(base64_encode(b"foo"), b"Zm9v");
    assert_eq!(base64_decode(b"Zm8="), Some(b"fo".to_vec()));
    assert_eq!(base64_decode(b"Zm8"), None);
}

fn pipeline() -> Vec<u8> {
    b"set a 1 0 3\r\nabc\r\nget a b\r\ngets a\r\ndelete a noreply\r\nincr n 5\r\nms k 2 T1\r\nhi\r\nmg k v\r\nmn\r\nset b 0 0 100\r\n"
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b'z', 100))
        .chain(b"\r\nversion\r\nbogus\r\n".iter().copied())
        .collect()
}

proptest! {
    #[test]
    fn any_split_gives_the_same_frames(cuts in proptest::collection::vec(0usize..400, 0..6)) {
        let input = pipeline();
        let whole = decode_all(&input);
        // Feed the same bytes in pieces.
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let limits = McLimits { max_item_size: 64, max_line_len: 512, max_multiget_len: 1024 };
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut swallow = 0usize;
        let mut prev = 0;
        for end in cuts.into_iter().chain(std::iter::once(input.len())) {
            buf.extend_from_slice(&input[prev..end]);
            prev = end;
            loop {
                if swallow > 0 {
                    let n = swallow.min(buf.len());
                    buf.advance(n);
                    swallow -= n;
                    if swallow > 0 { break; }
                }
                match decode(&mut buf, &limits) {
                    None => break,
                    Some(f) => {
                        if let McFrame::Swallow { bytes, .. } = f { swallow = bytes; }
                        // Normalise: how much was swallowed inline depends on the split.
                        got.push(match f { McFrame::Swallow { reply, .. } => McFrame::Reply(reply), f => f });
                    }
                }
            }
        }
        let whole: Vec<McFrame> = whole.into_iter().map(|f| match f { McFrame::Swallow { reply, .. } => McFrame::Reply(reply), f => f }).collect();
        prop_assert_eq!(got, whole);
    }

    #[test]
    fn any_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_all(&input);
    }

    #[test]
    fn any_store_round_trips(key in "[a-z0-9:_-]{1,40}", flags in any::<u32>(), exptime in -100i64..10_000_000, data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut input = format!("set {key} {flags} {exptime} {}\r\n", data.len()).into_bytes();
        input.extend_from_slice(&data);
        input.extend_from_slice(b"\r\n");
        let f = one(&input);
        prop_assert_eq!(f, McFrame::Request(McRequest::Store {
            mode: StoreMode::Set, key: Bytes::from(key.into_bytes()), flags, exptime,
            data: Bytes::from(data), cas: 0, noreply: false
        }));
    }
}

#[test]
fn a_long_multiget_is_read_as_memcached_reads_it() {
    // Past the line limit (512 here) a get still parses, up to its own
    // limit; any other command's line is too long.
    let keys: Vec<String> = (0..100).map(|i| format!("key{i:04}")).collect();
    let line = format!("get {}\r\n", keys.join(" "));
    assert!(line.len() > 512 && line.len() < 1024);
    match decode_all(line.as_bytes()).as_slice() {
        [McFrame::Request(McRequest::Get { keys: got, .. })] => assert_eq!(got.len(), 100),
        other => panic!("{other:?}"),
    }
    let touch = format!("touch {} 0\r\n", "k".repeat(600));
    assert_eq!(
        decode_all(touch.as_bytes()),
        vec![McFrame::Close(LINE_TOO_LONG)]
    );
    let huge = format!("get {}\r\n", "k ".repeat(600));
    assert_eq!(
        decode_all(huge.as_bytes()),
        vec![McFrame::Close(LINE_TOO_LONG)]
    );
}

#[test]
fn a_line_arriving_in_pieces_is_scanned_once() {
    // Fed a byte at a time, `decode_from` gives what `decode` gives for
    // the whole input, and `searched` only moves forward until a frame.
    let limits = McLimits::default();
    let input = b"get a b c d e f\r\nset k 0 0 2\r\nhi\r\ndelete k\r\n";
    let mut whole = BytesMut::from(&input[..]);
    let mut want = Vec::new();
    while let Some(f) = decode(&mut whole, &limits) {
        want.push(f);
    }
    let mut buf = BytesMut::new();
    let mut searched = 0;
    let mut got = Vec::new();
    for &b in input.iter() {
        buf.extend_from_slice(&[b]);
        let before = searched;
        while let Some(f) = decode_from(&mut buf, &limits, &mut searched) {
            got.push(f);
        }
        assert!(searched == 0 || searched >= before);
        assert!(searched <= buf.len());
    }
    assert_eq!(got, want);
}
