//! Protocol handling on raw sockets: malformed input gets
//! `-ERR Protocol error: ...` and the connection is closed (as Redis does),
//! while the server keeps serving everyone else; split frames, inline
//! commands and deep pipelines are answered correctly.

mod common;
use common::probe::read_to_close;
use common::*;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// The process runs, a fresh connection gets PONG, and `old` (a connection
/// opened before the abuse) still works.
fn assert_serving(srv: &mut Server, old: &mut TcpStream, what: &str) {
    assert!(srv.alive(), "server died after {what}");
    let mut fresh = srv.raw();
    assert_eq!(
        roundtrip(&mut fresh, b"PING\r\n", 7),
        b"+PONG\r\n",
        "fresh PING after {what}"
    );
    assert_eq!(
        roundtrip(old, b"*1\r\n$4\r\nPING\r\n", 7),
        b"+PONG\r\n",
        "other client after {what}"
    );
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn malformed_requests_get_error_then_close() {
    let mut srv = Server::start(&["--maxmemory-ram", "16mb"]);
    let mut bystander = srv.raw();
    let long_star = {
        let mut v = b"*".to_vec();
        v.extend(std::iter::repeat_n(b'1', 100 * 1024));
        v
    };
    let long_dollar = {
        let mut v = b"*1\r\n$".to_vec();
        v.extend(std::iter::repeat_n(b'1', 100 * 1024));
        v
    };
    // (what, bytes sent, exact reply before the close)
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // A multibulk count that is not a number.
        (
            "*abc",
            b"*abc\r\n".to_vec(),
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        // Binary garbage after '*'.
        (
            "garbage count",
            b"*\xff\xfe\x00\x01\r\n".to_vec(),
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        // A multibulk count above the limit (1 << 30).
        (
            "huge count",
            b"*2000000000\r\n".to_vec(),
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        // A negative bulk length.
        (
            "$-5",
            b"*2\r\n$3\r\nGET\r\n$-5\r\n".to_vec(),
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        // A bulk length that is not a number.
        (
            "$x",
            b"*1\r\n$x\r\n".to_vec(),
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        // Above proto-max-bulk-len: refused at once, the payload never sent.
        (
            "$999999999999",
            b"*1\r\n$999999999999\r\n".to_vec(),
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        // An element that is not a bulk string.
        (
            "+foo element",
            b"*1\r\n+foo\r\n".to_vec(),
            "-ERR Protocol error: expected '$', got '+'\r\n",
        ),
        (
            ":1 element",
            b"*2\r\n$3\r\nGET\r\n:1\r\n".to_vec(),
            "-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        // A payload longer than declared.
        (
            "unterminated bulk",
            b"*1\r\n$3\r\nPINGPONG\r\n".to_vec(),
            "-ERR Protocol error: bulk string not terminated by CRLF\r\n",
        ),
        // Header lines longer than 64 KiB without a line end.
        (
            "100 KB count line",
            long_star,
            "-ERR Protocol error: too big mbulk count string\r\n",
        ),
        (
            "100 KB bulk length line",
            long_dollar,
            "-ERR Protocol error: too big bulk count string\r\n",
        ),
        // Inline: unbalanced quotes, or a closing quote glued to more text.
        (
            "unbalanced quote",
            b"SET \"abc\r\n".to_vec(),
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            "quote then text",
            b"SET \"a\"b c\r\n".to_vec(),
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            "single quote garbage",
            b"'\x01\x02\xff\r\n".to_vec(),
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        // Replies to complete requests before the error are still sent.
        (
            "valid then invalid",
            b"PING\r\n*1\r\n$4\r\nPING\r\n*abc\r\nPING\r\n".to_vec(),
            "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
        ),
    ];
    for (what, send, want) in cases {
        let mut s = srv.raw();
        // The server may close before reading everything: ignore EPIPE.
        let _ = s.write_all(&send);
        let (got, closed) = read_to_close(&mut s);
        assert_eq!(show(&got), want, "{what}");
        assert!(closed, "{what}: connection not closed");
        assert_serving(&mut srv, &mut bystander, what);
    }
}

#[test]
fn inline_line_too_big() {
    let mut srv = Server::start(&["--maxmemory-ram", "16mb"]);
    let mut bystander = srv.raw();
    let mut s = srv.raw();
    // 100 KB of an inline command without a newline.
    let mut line = b"SET k ".to_vec();
    line.extend(std::iter::repeat_n(b'v', 100 * 1024));
    let _ = s.write_all(&line);
    let (got, closed) = read_to_close(&mut s);
    assert_eq!(
        show(&got),
        "-ERR Protocol error: too big inline request\r\n"
    );
    assert!(closed);
    assert_serving(&mut srv, &mut bystander, "too big inline");
}

#[test]
fn unknown_command_and_arity_keep_connection_open() {
    let mut srv = Server::start(&["--maxmemory-ram", "16mb"]);
    let mut bystander = srv.raw();
    let mut s = srv.raw();
    // (request, exact reply); the connection stays usable after each.
    let cases: &[(&[u8], &str)] = &[
        (
            b"FOO a b\r\n",
            "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n",
        ),
        (
            b"*1\r\n$6\r\nNOSUCH\r\n",
            "-ERR unknown command 'NOSUCH', with args beginning with: \r\n",
        ),
        // The name's case is kept in the message.
        (
            b"*2\r\n$3\r\nfOo\r\n$1\r\nx\r\n",
            "-ERR unknown command 'fOo', with args beginning with: 'x' \r\n",
        ),
        (
            b"*1\r\n$3\r\nGET\r\n",
            "-ERR wrong number of arguments for 'get' command\r\n",
        ),
        (
            b"get a b\r\n",
            "-ERR wrong number of arguments for 'get' command\r\n",
        ),
        // Arguments are listed until their text reaches 128 bytes.
        (
            b"FOO a b c d e f g h i j\r\n",
            "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' 'c' 'd' 'e' 'f' 'g' 'h' 'i' 'j' \r\n",
        ),
        // Empty requests (`*0`, `*-1`, blank lines) are ignored.
        (b"*0\r\n*-1\r\n\r\n  \r\nPING\r\n", "+PONG\r\n"),
    ];
    // A long argument is cut so the list stays near 128 bytes.
    let long_arg = format!("FOO {} next\r\n", "x".repeat(200));
    let long_want = format!(
        "-ERR unknown command 'FOO', with args beginning with: '{}' \r\n",
        "x".repeat(128)
    );
    let mut cases = cases.to_vec();
    cases.push((long_arg.as_bytes(), long_want.as_str()));
    for (send, want) in cases {
        s.write_all(send).unwrap();
        assert_eq!(show(&read_n(&mut s, want.len())), want, "{}", show(send));
        assert_eq!(roundtrip(&mut s, b"PING\r\n", 7), b"+PONG\r\n");
    }
    assert_serving(&mut srv, &mut bystander, "unknown commands");
}

#[test]
fn half_sent_frame_is_answered() {
    let mut srv = Server::start(&["--maxmemory-ram", "16mb"]);
    let mut bystander = srv.raw();
    let mut s = srv.raw();
    // Part of a frame, a pause, then the rest: one reply, when complete.
    s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhel")
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    s.write_all(b"lo\r\n").unwrap();
    assert_eq!(read_n(&mut s, 5), b"+OK\r\n");
    // Split inside a header line and between CR and LF.
    for part in [
        &b"*2\r"[..],
        b"\n$3\r\nG",
        b"ET\r\n$",
        b"1\r",
        b"\nk\r",
        b"\n",
    ] {
        s.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(read_n(&mut s, 11), b"$5\r\nhello\r\n");
    // An inline command byte by byte.
    for b in b"GET k\r\n" {
        s.write_all(&[*b]).unwrap();
    }
    assert_eq!(read_n(&mut s, 11), b"$5\r\nhello\r\n");
    // Nothing extra was sent.
    assert_eq!(roundtrip(&mut s, b"PING\r\n", 7), b"+PONG\r\n");
    assert_serving(&mut srv, &mut bystander, "split frames");
}

#[test]
fn inline_commands_and_quoting() {
    let srv = Server::start(&["--maxmemory-ram", "16mb"]);
    let mut s = srv.raw();
    // Plain inline commands, pipelined, CRLF or bare LF.
    let want = "+OK\r\n$1\r\nv\r\n+PONG\r\n";
    assert_eq!(
        show(&roundtrip(
            &mut s,
            b"SET k v\r\nGET k\r\nPING\n",
            want.len()
        )),
        want
    );
    // Extra whitespace between arguments is ignored.
    let want = "+OK\r\n$2\r\nv2\r\n";
    assert_eq!(
        show(&roundtrip(
            &mut s,
            b"  SET   k \t v2  \r\nGET k\r\n",
            want.len()
        )),
        want
    );
    let mut con = srv.client();
    // (inline line, key, stored value)
    let cases: &[(&[u8], &[u8], &[u8])] = &[
        // Double quotes keep spaces and take escapes.
        (b"SET \"a key\" \"x y\"\r\n", b"a key", b"x y"),
        (
            b"SET esc \"q\\\"\\n\\r\\t\\x41\\x00z\"\r\n",
            b"esc",
            b"q\"\n\r\tA\0z",
        ),
        // Single quotes take only \'.
        (b"SET 'b k' 'it\\'s \\n'\r\n", b"b k", b"it's \\n"),
        // An empty quoted argument is an empty string.
        (b"SET empty \"\"\r\n", b"empty", b""),
    ];
    for (line, key, value) in cases {
        assert_eq!(roundtrip(&mut s, line, 5), b"+OK\r\n", "{}", show(line));
        let got: Vec<u8> = redis::cmd("GET").arg(*key).query(&mut con).unwrap();
        assert_eq!(got, *value, "{}", show(line));
    }
}

#[test]
fn pipeline_of_ten_thousand_set_get() {
    let mut srv = Server::start(&["--maxmemory-ram", "64mb"]);
    let mut s = srv.raw();
    let n = 10_000;
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..n {
        let k = format!("key:{i}");
        let v = format!("value-{i}");
        for (cmd, args) in [
            ("SET", vec![k.as_str(), v.as_str()]),
            ("GET", vec![k.as_str()]),
        ] {
            req.extend_from_slice(
                format!("*{}\r\n${}\r\n{cmd}\r\n", args.len() + 1, cmd.len()).as_bytes(),
            );
            for a in args {
                req.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
            }
        }
        want.extend_from_slice(b"+OK\r\n");
        want.extend_from_slice(format!("${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    // One write (from another thread, so neither side's buffers can stall
    // the other); every reply correct and in order.
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&req).unwrap());
    let got = read_n(&mut s, want.len());
    writer.join().unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "pipelined replies differ");
    assert_eq!(roundtrip(&mut s, b"DBSIZE\r\n", 8), b":10000\r\n");
    let mut other = srv.raw();
    assert_serving(&mut srv, &mut other, "deep pipeline");
}

/// A client that writes its whole pipeline before it reads a reply (a
/// plain `sendall`, then `recv`): megabytes of requests and of replies,
/// more than both sides' socket buffers hold. Redis reads on and buffers
/// the replies; so must we (before, the server waited for the client to
/// take its replies while the client waited for the server to take its
/// requests: both stuck).
#[test]
fn a_client_that_writes_its_whole_pipeline_before_reading_gets_every_reply() {
    let mut srv = Server::start(&["--maxmemory-ram", "64mb"]);
    let mut s = srv.raw();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let value = "v".repeat(100);
    assert_eq!(
        roundtrip(&mut s, format!("SET k {value}\r\n").as_bytes(), 5),
        b"+OK\r\n"
    );
    let n = 300_000;
    let req = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".repeat(n);
    let one = format!("${}\r\n{value}\r\n", value.len());
    // All of it written first, on this thread.
    s.write_all(&req)
        .expect("the server stopped reading the pipeline");
    let got = read_n(&mut s, one.len() * n);
    assert_eq!(got.len(), one.len() * n);
    assert!(got == one.repeat(n).as_bytes(), "pipelined replies differ");
    let mut other = srv.raw();
    assert_serving(&mut srv, &mut other, "a pipeline written before reading");
}

#[test]
fn proto_max_bulk_len_is_respected() {
    let mut srv = Server::start(&["--maxmemory-ram", "16mb", "--proto-max-bulk-len", "1mb"]);
    let mut bystander = srv.raw();
    let mut con = srv.client();
    let got: Vec<(String, String)> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("proto-max-bulk-len")
        .query(&mut con)
        .unwrap();
    assert_eq!(got[0].1, "1048576");
    // A bulk just under the limit is accepted.
    let ok = value_for("ok", 0, 1_000_000);
    let _: () = redis::cmd("SET")
        .arg("ok")
        .arg(&ok)
        .query(&mut con)
        .unwrap();
    let back: Vec<u8> = redis::cmd("GET").arg("ok").query(&mut con).unwrap();
    assert_eq!(back, ok);
    // A 2 MB bulk: the header alone is refused, before any payload.
    let mut s = srv.raw();
    s.write_all(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$2097152\r\n")
        .unwrap();
    let (got, closed) = read_to_close(&mut s);
    assert_eq!(show(&got), "-ERR Protocol error: invalid bulk length\r\n");
    assert!(closed);
    assert_serving(&mut srv, &mut bystander, "2 MB bulk");
    // Commands building strings respect the same limit.
    let mut s = srv.raw();
    let want = "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";
    assert_eq!(
        show(&roundtrip(&mut s, b"SETRANGE k 1048576 x\r\n", want.len())),
        want
    );
    assert_eq!(
        show(&roundtrip(
            &mut s,
            b"SETRANGE ok 1048570 123456789\r\n",
            want.len()
        )),
        want
    );
    // Raising it at runtime lets the 2 MB bulk through.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("proto-max-bulk-len")
        .arg("4mb")
        .query(&mut con)
        .unwrap();
    let big = value_for("big", 0, 2 << 20);
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut con)
        .unwrap();
    let n: i64 = redis::cmd("STRLEN").arg("big").query(&mut con).unwrap();
    assert_eq!(n, 2 << 20);
}
