//! MONITOR: clients that are sent every command the server runs, as Redis
//! 7.0 formats it (`replicationFeedMonitors`): `+<unix time>.<µs> [<db>
//! <client address>|lua] "arg" ...`, each argument quoted as `sdscatrepr`
//! quotes it, AUTH's, ACL SETUSER's and HELLO's (and MIGRATE's) secrets
//! `(redacted)`.
//! A command is sent once it ran, except scripts and functions (EVAL,
//! FCALL ...), sent before the commands they run, which follow as
//! `[<db> lua]`; EXEC is sent after the transaction's commands. Admin
//! commands (CONFIG, DEBUG ...) are not sent, as in Redis.
//!
//! Invariant: a monitor leaves the list when it disconnects or runs RESET.

use crate::services::pubsub::{Message, PubSub, Subscriber};
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

#[derive(Default)]
pub struct Monitors {
    list: Mutex<Vec<(u64, Arc<Subscriber>)>>,
    count: AtomicUsize,
}

impl Monitors {
    /// Whether any client monitors (a cheap check on every command).
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    /// Client `id` monitors from now on, its lines queued on `sub`.
    pub fn add(&self, id: u64, sub: Arc<Subscriber>) {
        let mut l = self.list.lock();
        if !l.iter().any(|(i, _)| *i == id) {
            l.push((id, sub));
            self.count.store(l.len(), Relaxed);
        }
    }

    /// Client `id` monitors no more (disconnect, RESET).
    pub fn remove(&self, id: u64) {
        let mut l = self.list.lock();
        l.retain(|(i, _)| *i != id);
        self.count.store(l.len(), Relaxed);
    }

    /// Sends every monitor the line of the command `args`, run in `db` by
    /// the client at `origin` (its address, or "lua" for a script's call).
    pub fn feed(&self, pubsub: &PubSub, db: usize, origin: &str, args: &[Bytes]) {
        if !self.active() {
            return;
        }
        let line = Bytes::from(line(db, origin, args));
        for (_, sub) in self.list.lock().iter() {
            pubsub.send_to(sub, Message::raw(line.clone()));
        }
    }
}

/// The monitor line of one command.
fn line(db: usize, origin: &str, args: &[Bytes]) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = format!(
        "+{}.{:06} [{db} {origin}] ",
        now.as_secs(),
        now.subsec_micros()
    )
    .into_bytes();
    let secret = redacted(args);
    for (j, a) in args.iter().enumerate() {
        if j > 0 {
            out.push(b' ');
        }
        if secret.contains(&j) {
            repr(&mut out, b"(redacted)");
        } else {
            repr(&mut out, a);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The arguments Redis redacts (`redactClientCommandArgument`): AUTH's,
/// ACL SETUSER's, HELLO's AUTH username and password, MIGRATE's AUTH /
/// AUTH2 secrets.
fn redacted(args: &[Bytes]) -> Vec<usize> {
    let is = |a: &Bytes, w: &str| a.eq_ignore_ascii_case(w.as_bytes());
    let Some(name) = args.first() else {
        return Vec::new();
    };
    if is(name, "auth") {
        return (1..args.len()).collect();
    }
    if is(name, "acl") && args.get(1).is_some_and(|s| is(s, "setuser")) {
        return (2..args.len()).collect();
    }
    let mut out = Vec::new();
    if is(name, "hello") {
        if let Some(j) = args.iter().position(|a| is(a, "auth")) {
            out.extend([j + 1, j + 2].into_iter().filter(|&i| i < args.len()));
        }
    } else if is(name, "migrate") {
        for (j, a) in args.iter().enumerate() {
            if is(a, "auth") {
                out.push(j + 1);
            } else if is(a, "auth2") {
                out.extend([j + 1, j + 2]);
            }
        }
        out.retain(|&i| i < args.len());
    }
    out
}

/// `sdscatrepr`: a quoted string with `\\`, `\"`, `\n`, `\r`, `\t`, `\a`,
/// `\b` escaped and other unprintable bytes as `\xHH`.
fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => {
                out.push(b'\\');
                out.push(c);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_quote_as_redis_and_redact_secrets() {
        let a = |xs: &[&str]| {
            xs.iter()
                .map(|x| Bytes::from(x.to_string()))
                .collect::<Vec<_>>()
        };
        let l =
            String::from_utf8(line(3, "1.2.3.4:5", &a(&["set", "k", "a \"b\"\n\x01"]))).unwrap();
        let want = concat!(r#" [3 1.2.3.4:5] "set" "k" "a \"b\"\n\x01""#, "\r\n");
        assert!(l.ends_with(want), "{l}");
        assert!(l.starts_with('+'));
        let l = String::from_utf8(line(0, "lua", &a(&["AUTH", "u", "p"]))).unwrap();
        assert!(l.contains(r#""AUTH" "(redacted)" "(redacted)""#), "{l}");
        let l = String::from_utf8(line(0, "x", &a(&["acl", "SETUSER", "u", ">p"]))).unwrap();
        assert!(
            l.contains(r#""acl" "SETUSER" "(redacted)" "(redacted)""#),
            "{l}"
        );
        let l = String::from_utf8(line(0, "x", &a(&["hello", "2", "AUTH", "u", "p"]))).unwrap();
        assert!(
            l.contains(r#""hello" "2" "AUTH" "(redacted)" "(redacted)""#),
            "{l}"
        );
    }
}
