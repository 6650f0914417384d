//! Table-driven tests for `parse_frame`: one case per rule, each error
//! variant with its exact type.

use bytes::Bytes;
use strata_protocol::{parse_frame, Frame, Limits, Parsed, ProtocolError};
use ProtocolError::*;

type Want = Result<Parsed<Frame>, ProtocolError>;

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

fn parse(input: &[u8]) -> Want {
    let limits = Limits {
        max_bulk_len: 16,
        max_multibulk_len: 4,
        max_inline_len: 32,
        unauthenticated: false,
    };
    parse_frame(input, &limits)
}

fn done(value: Frame, consumed: usize) -> Want {
    Ok(Parsed::Complete { value, consumed })
}

#[test]
fn error_texts_are_exact() {
    let cases: &[(ProtocolError, &str)] = &[
        (LineTooLong, "Protocol error: too big line"),
        (
            LineNotTerminated,
            "Protocol error: line not terminated by CRLF",
        ),
        (
            UnknownFrameType(b'?'),
            "Protocol error: unknown frame type '?'",
        ),
        (InvalidInteger, "Protocol error: invalid integer"),
        (InvalidDouble, "Protocol error: invalid double"),
        (InvalidBoolean, "Protocol error: invalid boolean"),
        (InvalidBigNumber, "Protocol error: invalid big number"),
        (InvalidVerbatim, "Protocol error: invalid verbatim string"),
        (InvalidNull, "Protocol error: invalid null"),
        (NestingTooDeep, "Protocol error: nesting too deep"),
    ];
    for (e, text) in cases {
        assert_eq!(e.to_string(), *text);
    }
}

#[test]
fn table() {
    use Frame::*;
    #[rustfmt::skip]
    let cases: Vec<(&str, &[u8], Want)> = vec![
        ("simple string", b"+OK\r\n", done(Simple(b(b"OK")), 5)),
        ("error", b"-ERR x\r\n", done(Error(b(b"ERR x")), 8)),
        ("integer", b":-12\r\n", done(Integer(-12), 6)),
        ("bulk is binary safe, CRLF inside payload", b"$4\r\na\r\n\0\r\n", done(Bulk(b(b"a\r\n\0")), 10)),
        ("RESP2 null bulk", b"$-1\r\n", done(Null, 5)),
        ("RESP2 null array", b"*-1\r\n", done(Null, 5)),
        ("RESP3 null", b"_\r\n", done(Null, 3)),
        ("array, trailing bytes not consumed", b"*2\r\n:1\r\n+a\r\nXX", done(Array(vec![Integer(1), Simple(b(b"a"))]), 12)),
        ("empty array", b"*0\r\n", done(Array(vec![]), 4)),
        ("double", b",1.5\r\n", done(Double(1.5), 6)),
        ("double exponent", b",1e+20\r\n", done(Double(1e20), 8)),
        ("double inf", b",-inf\r\n", done(Double(f64::NEG_INFINITY), 7)),
        ("booleans", b"#t\r\n", done(Boolean(true), 4)),
        ("big number", b"(-123\r\n", done(BigNumber(b(b"-123")), 7)),
        ("verbatim", b"=6\r\ntxt:hi\r\n", done(Verbatim { format: *b"txt", data: b(b"hi") }, 12)),
        ("map", b"%1\r\n+k\r\n:1\r\n", done(Map(vec![(Simple(b(b"k")), Integer(1))]), 12)),
        ("set", b"~1\r\n#f\r\n", done(Set(vec![Boolean(false)]), 8)),
        ("push", b">1\r\n+m\r\n", done(Push(vec![Simple(b(b"m"))]), 8)),
        ("bulk error", b"!3\r\nERR\r\n", done(BulkError(b(b"ERR")), 9)),
        ("attribute is dropped", b"|1\r\n+a\r\n+b\r\n:7\r\n", done(Integer(7), 16)),
        ("empty input", b"", Ok(Parsed::Incomplete)),
        ("partial line", b"+OK\r", Ok(Parsed::Incomplete)),
        ("partial bulk", b"$3\r\nab", Ok(Parsed::Incomplete)),
        ("partial array", b"*2\r\n:1\r\n", Ok(Parsed::Incomplete)),
        ("unknown type byte", b"?x\r\n", Err(UnknownFrameType(b'?'))),
        ("bad integer", b":1x\r\n", Err(InvalidInteger)),
        ("bad double", b",abc\r\n", Err(InvalidDouble)),
        ("rust-only double spelling", b",infinity\r\n", Err(InvalidDouble)),
        ("bad boolean", b"#x\r\n", Err(InvalidBoolean)),
        ("bad big number", b"(12a\r\n", Err(InvalidBigNumber)),
        ("verbatim too short", b"=2\r\ntx\r\n", Err(InvalidVerbatim)),
        ("verbatim without colon", b"=4\r\ntxtx\r\n", Err(InvalidVerbatim)),
        ("junk after _", b"_x\r\n", Err(InvalidNull)),
        ("negative bulk length other than -1", b"$-2\r\n", Err(InvalidBulkLength)),
        ("null bulk error not allowed", b"!-1\r\n", Err(InvalidBulkLength)),
        ("streamed strings unsupported", b"$?\r\n", Err(InvalidBulkLength)),
        ("bulk above limit rejected before payload", b"$17\r\n", Err(InvalidBulkLength)),
        ("bulk not terminated", b"$1\r\nab\r\n", Err(BulkNotTerminated)),
        ("aggregate above limit", b"*5\r\n", Err(InvalidMultibulkLength)),
        ("negative map length", b"%-1\r\n", Err(InvalidMultibulkLength)),
        ("CR without LF", b"+OK\rX", Err(LineNotTerminated)),
        ("bare LF inside simple string", b"+O\nK\r\n", Err(LineNotTerminated)),
        ("line too long", &[b'+'; 40], Err(LineTooLong)),
    ];
    for (name, input, want) in cases {
        assert_eq!(parse(input), want, "{name}");
    }
}
