//! Keyspace notifications (`notify-keyspace-events`), as Redis 7.0 sends
//! them: for each change of a key, `__keyspace@<db>__:<key>` gets the
//! event's name and `__keyevent@<db>__:<event>` the key, when the event's
//! class is enabled.
//!
//! The engine reports every change of a key (`strata_engine::KeyObserver`,
//! under the key's shard lock); the command running on this thread
//! (`Running`, set by `dispatch` around a command and around each poll of
//! its pending reply) names the event, as Redis's command code does:
//! LPUSH's `lpush`, an emptied list's extra `del`, RENAME's `rename_from`
//! and `rename_to`. Expiry and eviction need no command. With no class
//! enabled, nothing is recorded and nothing is sent.

use crate::services::config::events::*;
use crate::services::pubsub::{Kind, PubSub as Registry};
use bytes::Bytes;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use strata_engine::{KeyChange, KeyObserver};

/// A command that may send notifications: its arguments, and the events
/// it sent (the engine may report one change of a key twice, as a new
/// key and as its first value: each event goes once per key).
pub struct Command {
    args: Vec<Bytes>,
    /// The client running it (NOLOOP of client tracking).
    client: u64,
    sent: parking_lot::Mutex<Vec<(usize, Bytes, &'static str)>>,
    /// Stream events the command reported (`stream_events`), by key.
    staged: parking_lot::Mutex<Vec<(Bytes, &'static str)>>,
    /// The command's writes are not modifications for Redis
    /// (`no_modification`): its name's events are not sent.
    silent: std::sync::atomic::AtomicBool,
}

impl Command {
    pub fn new(args: &[Bytes], client: u64) -> Arc<Command> {
        Arc::new(Command {
            args: args.to_vec(),
            client,
            sent: Default::default(),
            staged: Default::default(),
            silent: Default::default(),
        })
    }

    /// Whether `event` of `key` is new for this command (and note it).
    fn first(&self, db: usize, key: &[u8], event: &'static str) -> bool {
        let mut sent = self.sent.lock();
        if sent
            .iter()
            .any(|(d, k, e)| *d == db && *e == event && &k[..] == key)
        {
            return false;
        }
        sent.push((db, Bytes::copy_from_slice(key), event));
        true
    }
}

/// Records that the running command caused the stream events `names` on
/// `key` (which stream events fire depends on what the command did, not
/// only on its name: XADD's `xtrim`, a consumer created by XREADGROUP).
pub fn stream_events(key: &[u8], names: &[&'static str]) {
    RUNNING.with(|r| {
        if let Some(c) = r.borrow().as_ref() {
            let mut st = c.staged.lock();
            for n in names {
                st.push((Bytes::copy_from_slice(key), n));
            }
        }
    });
}

/// Records that the running command's write is one Redis makes without
/// signalling a modification (BITFIELD that only grew its string, every
/// field write having failed): no event is sent for it beyond `new`.
pub fn no_modification() {
    RUNNING.with(|r| {
        if let Some(c) = r.borrow().as_ref() {
            c.silent.store(true, Relaxed);
        }
    });
}

thread_local! {
    /// The command running on this thread.
    static RUNNING: RefCell<Option<Arc<Command>>> = const { RefCell::new(None) };
}

/// Marks a command as the one running on this thread until dropped.
pub struct Running(Option<Option<Arc<Command>>>);

impl Running {
    pub fn enter(cmd: Arc<Command>) -> Running {
        Running(Some(RUNNING.with(|r| r.replace(Some(cmd)))))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(prev) = self.0.take() {
            RUNNING.with(|r| *r.borrow_mut() = prev);
        }
    }
}

/// The server's notifier (installed as the engine's key observer).
pub struct Notifier {
    pub flags: AtomicU32,
    pubsub: Arc<Registry>,
    /// Client tracking, told of every change too.
    tracking: Arc<crate::services::tracking::Tracking>,
    /// Blocked XREADGROUP clients, told of every change too.
    blocking: Arc<crate::services::blocking::Blocking>,
}

impl Notifier {
    pub fn new(
        pubsub: Arc<Registry>,
        tracking: Arc<crate::services::tracking::Tracking>,
        blocking: Arc<crate::services::blocking::Blocking>,
    ) -> Notifier {
        Notifier {
            flags: AtomicU32::new(0),
            pubsub,
            tracking,
            blocking,
        }
    }

    /// Whether any notification can be sent or any client tracks
    /// (commands then record themselves as `Running`).
    pub fn on(&self) -> bool {
        let f = self.flags.load(Relaxed);
        (f & (KEYSPACE | KEYEVENT) != 0 && f & !(KEYSPACE | KEYEVENT | KEY_MISS) != 0)
            || self.tracking.active()
    }

    fn send(&self, class: u32, event: &str, db: usize, key: &[u8]) {
        let f = self.flags.load(Relaxed);
        if f & class == 0 {
            return;
        }
        if f & KEYSPACE != 0 {
            let mut chan = format!("__keyspace@{db}__:").into_bytes();
            chan.extend_from_slice(key);
            let msg = Bytes::copy_from_slice(event.as_bytes());
            self.pubsub.publish(Kind::Channel, &Bytes::from(chan), &msg);
        }
        if f & KEYEVENT != 0 {
            let chan = Bytes::from(format!("__keyevent@{db}__:{event}"));
            self.pubsub
                .publish(Kind::Channel, &chan, &Bytes::copy_from_slice(key));
        }
    }
}

impl KeyObserver for Notifier {
    fn key_changed(&self, db: usize, key: &[u8], change: KeyChange) {
        self.blocking.key_changed(db, key);
        // A quiet change is no modification for client tracking (Redis
        // does not signal it), but its events are sent.
        if self.tracking.active() && change != KeyChange::Quiet {
            // One invalidation per key per command (the engine may report
            // a new key twice: created, then its first value).
            let cmd = RUNNING.with(|r| r.borrow().clone());
            if cmd.as_ref().is_none_or(|c| c.first(db, key, "\0tracking")) {
                // An expiry or eviction is no client's change (Redis signals
                // it with no client): NOLOOP does not hide it.
                let by = match change {
                    KeyChange::Expired | KeyChange::Evicted => None,
                    _ => cmd.as_ref().map(|c| c.client),
                };
                self.tracking.invalidate(&self.pubsub, key, by);
            }
        }
        if self.flags.load(Relaxed) & (KEYSPACE | KEYEVENT) == 0 {
            return;
        }
        match change {
            KeyChange::Expired => return self.send(EXPIRED, "expired", db, key),
            KeyChange::Evicted => return self.send(EVICTED, "evicted", db, key),
            _ => {}
        }
        let Some(cmd) = RUNNING.with(|r| r.borrow().clone()) else {
            return;
        };
        if change == KeyChange::Created && cmd.first(db, key, "new") {
            self.send(NEW, "new", db, key);
        }
        let staged: Vec<&'static str> = cmd
            .staged
            .lock()
            .iter()
            .filter(|(k, _)| &k[..] == key)
            .map(|(_, e)| *e)
            .collect();
        for e in staged {
            if cmd.first(db, key, e) {
                self.send(STREAM, e, db, key);
            }
        }
        if cmd.silent.load(Relaxed) {
            return;
        }
        for (class, event) in events(&cmd.args, key, change) {
            if cmd.first(db, key, event) {
                self.send(class, event, db, key);
            }
        }
    }
}

/// SORT's STORE key, if any.
fn store_key(args: &[Bytes]) -> Option<&[u8]> {
    let i = args.iter().position(|a| a.eq_ignore_ascii_case(b"store"))?;
    args.get(i + 1).map(|k| &k[..])
}

fn upper(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_ascii_uppercase()
}

/// The events a change of `key` by the command `args` sends, as Redis's
/// command code sends them.
fn events(args: &[Bytes], key: &[u8], change: KeyChange) -> Vec<(u32, &'static str)> {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let deleted = change == KeyChange::Deleted;
    let is_arg = |i: usize| args.get(i).is_some_and(|a| &a[..] == key);
    let del = (GENERIC, "del");
    // The event of a write; an emptied collection adds `del`.
    let with_del = |e: (u32, &'static str)| if deleted { vec![e, del] } else { vec![e] };
    let has_expire = || {
        args[1..]
            .iter()
            .any(|a| ["EX", "PX", "EXAT", "PXAT"].contains(&upper(a).as_str()))
    };
    match name.as_str() {
        "del" | "unlink" | "getdel" => vec![del],
        "expire" | "pexpire" | "expireat" | "pexpireat" => {
            vec![if deleted { del } else { (GENERIC, "expire") }]
        }
        "persist" => vec![(GENERIC, "persist")],
        "getex" if deleted => vec![del],
        "getex" if args[2..].iter().any(|a| upper(a) == "PERSIST") => vec![(GENERIC, "persist")],
        "getex" => vec![(GENERIC, "expire")],
        "rename" | "renamenx" => {
            if is_arg(1) && deleted {
                vec![(GENERIC, "rename_from")]
            } else {
                vec![(GENERIC, "rename_to")]
            }
        }
        "move" => vec![if deleted {
            (GENERIC, "move_from")
        } else {
            (GENERIC, "move_to")
        }],
        "copy" => vec![(GENERIC, "copy_to")],
        "restore" => vec![(GENERIC, "restore")],
        // Only STORE's key (SORT may convert its input's encoding).
        "sort" | "sort_ro" if store_key(args) != Some(key) => Vec::new(),
        "sort" if deleted => vec![del],
        "sort" => vec![(LIST, "sortstore")],
        "set" if deleted => vec![del],
        "set" if has_expire() => vec![(STRING, "set"), (GENERIC, "expire")],
        "setex" | "psetex" => vec![(STRING, "set"), (GENERIC, "expire")],
        "set" | "setnx" | "mset" | "msetnx" | "getset" => vec![(STRING, "set")],
        "append" => vec![(STRING, "append")],
        "setrange" => vec![(STRING, "setrange")],
        "incr" | "decr" | "incrby" | "decrby" => vec![(STRING, "incrby")],
        "incrbyfloat" => vec![(STRING, "incrbyfloat")],
        "setbit" | "bitfield" => vec![(STRING, "setbit")],
        "bitop" => vec![if deleted { del } else { (STRING, "set") }],
        "pfadd" | "pfmerge" => vec![(STRING, "pfadd")],
        "lpush" | "lpushx" => vec![(LIST, "lpush")],
        "rpush" | "rpushx" => vec![(LIST, "rpush")],
        "lpop" | "blpop" => with_del((LIST, "lpop")),
        "rpop" | "brpop" => with_del((LIST, "rpop")),
        "lmpop" | "blmpop" => {
            let left = args.iter().any(|a| upper(a) == "LEFT");
            with_del((LIST, if left { "lpop" } else { "rpop" }))
        }
        "rpoplpush" | "brpoplpush" if is_arg(1) && is_arg(2) => {
            vec![(LIST, "rpop"), (LIST, "lpush")]
        }
        "rpoplpush" | "brpoplpush" => {
            if is_arg(1) && (deleted || !is_arg(2)) {
                with_del((LIST, "rpop"))
            } else {
                vec![(LIST, "lpush")]
            }
        }
        "lmove" | "blmove" => {
            let (from, to) = (upper(&args[3]), upper(&args[4]));
            let pop = if from == "LEFT" { "lpop" } else { "rpop" };
            let push = if to == "LEFT" { "lpush" } else { "rpush" };
            if is_arg(1) && is_arg(2) {
                vec![(LIST, pop), (LIST, push)]
            } else if is_arg(1) && (deleted || !is_arg(2)) {
                with_del((LIST, pop))
            } else {
                vec![(LIST, push)]
            }
        }
        "linsert" => vec![(LIST, "linsert")],
        "lset" => vec![(LIST, "lset")],
        "lrem" => with_del((LIST, "lrem")),
        "ltrim" => with_del((LIST, "ltrim")),
        "hset" | "hmset" | "hsetnx" => vec![(HASH, "hset")],
        "hdel" => with_del((HASH, "hdel")),
        "hincrby" => vec![(HASH, "hincrby")],
        "hincrbyfloat" => vec![(HASH, "hincrbyfloat")],
        "sadd" => vec![(SET, "sadd")],
        "srem" => with_del((SET, "srem")),
        "spop" => with_del((SET, "spop")),
        "smove" => {
            if is_arg(1) && (deleted || !is_arg(2)) {
                with_del((SET, "srem"))
            } else {
                vec![(SET, "sadd")]
            }
        }
        "sinterstore" | "sunionstore" | "sdiffstore" if deleted => vec![del],
        "sinterstore" => vec![(SET, "sinterstore")],
        "sunionstore" => vec![(SET, "sunionstore")],
        "sdiffstore" => vec![(SET, "sdiffstore")],
        "zadd" if args[2..].iter().any(|a| upper(a) == "INCR") => vec![(ZSET, "zincr")],
        "zadd" | "geoadd" => vec![(ZSET, "zadd")],
        "zincrby" => vec![(ZSET, "zincr")],
        "zrem" => with_del((ZSET, "zrem")),
        "zremrangebyscore" => with_del((ZSET, "zremrangebyscore")),
        "zremrangebyrank" => with_del((ZSET, "zremrangebyrank")),
        "zremrangebylex" => with_del((ZSET, "zremrangebylex")),
        "zpopmin" | "bzpopmin" => with_del((ZSET, "zpopmin")),
        "zpopmax" | "bzpopmax" => with_del((ZSET, "zpopmax")),
        "zmpop" | "bzmpop" => {
            let min = args.iter().any(|a| upper(a) == "MIN");
            with_del((ZSET, if min { "zpopmin" } else { "zpopmax" }))
        }
        "zunionstore" | "zinterstore" | "zdiffstore" | "zrangestore" | "georadius"
        | "georadiusbymember" | "geosearchstore"
            if deleted =>
        {
            vec![del]
        }
        "zunionstore" => vec![(ZSET, "zunionstore")],
        "zinterstore" => vec![(ZSET, "zinterstore")],
        "zdiffstore" => vec![(ZSET, "zdiffstore")],
        "zrangestore" => vec![(ZSET, "zrangestore")],
        "georadius" | "georadiusbymember" => vec![(ZSET, "georadiusstore")],
        "geosearchstore" => vec![(ZSET, "geosearchstore")],
        _ if deleted => vec![del],
        _ => Vec::new(),
    }
}

/// A pending reply whose polls run as `args` (`Running`): a cold write
/// changes its key when the reply is polled.
pub fn wrap(
    args: Arc<Command>,
    fut: std::pin::Pin<Box<dyn std::future::Future<Output = bytes::BytesMut> + Send>>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = bytes::BytesMut> + Send>> {
    Box::pin(AsRunning { args, fut })
}

struct AsRunning {
    args: Arc<Command>,
    fut: std::pin::Pin<Box<dyn std::future::Future<Output = bytes::BytesMut> + Send>>,
}

impl std::future::Future for AsRunning {
    type Output = bytes::BytesMut;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<bytes::BytesMut> {
        let _running = Running::enter(self.args.clone());
        self.fut.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_and_print_as_redis() {
        assert_eq!(render(parse("KEA").unwrap()), "AKE");
        assert_eq!(render(parse("Kl$").unwrap()), "$lK");
        assert_eq!(render(parse("").unwrap()), "");
        assert_eq!(render(parse("Exn").unwrap()), "xnE");
        assert!(parse("Q").is_none());
    }
}
