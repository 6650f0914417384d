//! Pub/sub: who listens to which channels, patterns and shard channels, and
//! delivering a message to them (PUBLISH, SPUBLISH).
//!
//! A subscribed connection owns a `Listener`: the receiving end of its
//! message queue and the names it listens to. The registry maps each name
//! to the `Subscriber`s (the sending ends) listening to it. A message is
//! queued to every subscriber under no lock of the registry's, and the
//! connection writes it in the protocol it speaks.
//!
//! Invariants:
//! 1. A name is in the registry under a client exactly when that client's
//!    `Listener` holds it; a `Listener` removes all of its names when
//!    dropped (the connection ended).
//! 2. A subscriber's `queued` counts the bytes of messages queued to it and
//!    not yet written to its output: a subscriber past the pubsub class of
//!    `client-output-buffer-limit` (hard, or soft for longer than its
//!    seconds) is killed, and receives nothing more, so a slow subscriber
//!    cannot make the server's memory grow without bound.

use crate::base::glob::glob_match;
use crate::services::clients::ClientHandle;
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;
use strata_protocol::{write_bulk, write_push_len, Version};
use tokio::sync::mpsc;

/// The three namespaces.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn index(self) -> usize {
        self as usize
    }
}

/// A message on its way to one subscriber.
pub struct Message {
    kind: Kind,
    /// The pattern that matched (pmessage).
    pattern: Option<Bytes>,
    channel: Bytes,
    payload: Bytes,
    /// A client tracking invalidation instead (`services::tracking`): the
    /// keys, or None for all (FLUSHALL).
    invalidate: Option<Option<Vec<Bytes>>>,
    /// Bytes written as they are instead (a MONITOR line).
    raw: Option<Bytes>,
}

/// The channel RESP2 clients receive redirected invalidations on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

impl Message {
    fn size(&self) -> usize {
        let keys = match &self.invalidate {
            Some(Some(k)) => k.iter().map(|k| k.len() + 8).sum(),
            _ => 0,
        };
        self.channel.len()
            + self.payload.len()
            + self.raw.as_ref().map_or(0, |r| r.len())
            + self.pattern.as_ref().map_or(0, |p| p.len())
            + 32
            + keys
    }

    /// An invalidation of `keys` (None: every key).
    pub fn invalidate(keys: Option<Vec<Bytes>>) -> Message {
        Message {
            kind: Kind::Channel,
            pattern: None,
            channel: Bytes::from_static(INVALIDATE_CHANNEL),
            payload: Bytes::new(),
            invalidate: Some(keys),
            raw: None,
        }
    }

    /// Bytes sent as they are (a MONITOR line, already RESP).
    pub fn raw(line: Bytes) -> Message {
        Message {
            kind: Kind::Channel,
            pattern: None,
            channel: Bytes::new(),
            payload: Bytes::new(),
            invalidate: None,
            raw: Some(line),
        }
    }

    /// Writes the message as Redis does: `message`, `pmessage` or
    /// `smessage`, a push in RESP3; an invalidation as RESP3's
    /// `invalidate` push, or RESP2's message on `__redis__:invalidate`
    /// whose payload is the array of keys.
    pub fn write(&self, out: &mut BytesMut, v: Version) {
        if let Some(raw) = &self.raw {
            out.extend_from_slice(raw);
            return;
        }
        if let Some(keys) = &self.invalidate {
            if v == Version::Resp3 {
                write_push_len(out, v, 2);
                write_bulk(out, b"invalidate");
            } else {
                write_push_len(out, v, 3);
                write_bulk(out, b"message");
                write_bulk(out, INVALIDATE_CHANNEL);
            }
            match keys {
                Some(keys) => {
                    strata_protocol::write_array_len(out, keys.len());
                    for k in keys {
                        write_bulk(out, k);
                    }
                }
                None => strata_protocol::write_null_array(out, v),
            }
            return;
        }
        let (name, n): (&[u8], usize) = match self.kind {
            Kind::Channel => (b"message", 3),
            Kind::Pattern => (b"pmessage", 4),
            Kind::Shard => (b"smessage", 3),
        };
        write_push_len(out, v, n);
        write_bulk(out, name);
        if let Some(p) = &self.pattern {
            write_bulk(out, p);
        }
        write_bulk(out, &self.channel);
        write_bulk(out, &self.payload);
    }
}

/// The sending end of one client's message queue.
pub struct Subscriber {
    tx: mpsc::UnboundedSender<Message>,
    queued: AtomicUsize,
    /// Milliseconds since the server's start when the queue went past the
    /// soft limit (0: it is not past it).
    soft_since_ms: AtomicU64,
    handle: Arc<ClientHandle>,
}

/// The pubsub class of `client-output-buffer-limit`: bytes (0 = no limit)
/// and seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// For each name of one namespace, its subscribers by client id.
type Names = HashMap<Bytes, HashMap<u64, Arc<Subscriber>>>;

/// The registry (module doc).
pub struct PubSub {
    names: Mutex<[Names; 3]>,
    pub limit: Mutex<Limit>,
    started: Instant,
}

impl Default for PubSub {
    fn default() -> PubSub {
        PubSub {
            names: Mutex::new(Default::default()),
            limit: Mutex::new(Limit {
                hard: 32 << 20,
                soft: 8 << 20,
                soft_secs: 60,
            }),
            started: Instant::now(),
        }
    }
}

/// What one connection listens to, and its queue (module doc).
pub struct Listener {
    pubsub: Arc<PubSub>,
    me: Arc<Subscriber>,
    rx: mpsc::UnboundedReceiver<Message>,
    names: [BTreeSet<Bytes>; 3],
}

impl PubSub {
    /// Delivers `payload` on `channel` (`Kind::Channel`: to its subscribers
    /// and those of every matching pattern; `Kind::Shard`: to its shard
    /// subscribers). Returns how many received it.
    pub fn publish(&self, kind: Kind, channel: &Bytes, payload: &Bytes) -> usize {
        let mut to: Vec<(Arc<Subscriber>, Option<Bytes>)> = Vec::new();
        {
            let names = self.names.lock();
            let direct = if kind == Kind::Shard {
                Kind::Shard
            } else {
                Kind::Channel
            };
            if let Some(subs) = names[direct.index()].get(channel) {
                to.extend(subs.values().map(|s| (s.clone(), None)));
            }
            if kind == Kind::Channel {
                for (pat, subs) in &names[Kind::Pattern.index()] {
                    if glob_match(pat, channel, false) {
                        to.extend(subs.values().map(|s| (s.clone(), Some(pat.clone()))));
                    }
                }
            }
        }
        let limit = *self.limit.lock();
        let now_ms = self.started.elapsed().as_millis() as u64 + 1;
        let mut n = 0;
        for (sub, pattern) in to {
            let msg = Message {
                kind: match (kind, &pattern) {
                    (Kind::Shard, _) => Kind::Shard,
                    (_, Some(_)) => Kind::Pattern,
                    _ => Kind::Channel,
                },
                pattern,
                channel: channel.clone(),
                payload: payload.clone(),
                invalidate: None,
                raw: None,
            };
            n += 1;
            let queued = sub.queued.fetch_add(msg.size(), Relaxed) + msg.size();
            if over_limit(&sub, &limit, queued as u64, now_ms) {
                sub.handle.kill();
                continue;
            }
            let _ = sub.tx.send(msg);
        }
        n
    }

    /// Queues `msg` to `sub` under the output limit (false: the
    /// subscriber was killed for passing it).
    pub fn send_to(&self, sub: &Arc<Subscriber>, msg: Message) -> bool {
        let limit = *self.limit.lock();
        let now_ms = self.started.elapsed().as_millis() as u64 + 1;
        let queued = sub.queued.fetch_add(msg.size(), Relaxed) + msg.size();
        if over_limit(sub, &limit, queued as u64, now_ms) {
            sub.handle.kill();
            return false;
        }
        sub.tx.send(msg).is_ok()
    }

    /// The subscriber of client `id` on `channel`, if it listens to it.
    pub fn subscriber_of(&self, channel: &[u8], id: u64) -> Option<Arc<Subscriber>> {
        self.names.lock()[Kind::Channel.index()]
            .get(channel)
            .and_then(|s| s.get(&id).cloned())
    }

    /// Names with at least one subscriber in `kind`, matching `pattern`.
    pub fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let names = self.names.lock();
        names[kind.index()]
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// What client `id` listens to: its channels, patterns and shard
    /// channels (a scan of every name: for ACL SETUSER's revocations).
    pub fn names_of(&self, id: u64) -> [Vec<Bytes>; 3] {
        let names = self.names.lock();
        [0, 1, 2].map(|k| {
            names[k]
                .iter()
                .filter(|(_, subs)| subs.contains_key(&id))
                .map(|(n, _)| n.clone())
                .collect()
        })
    }

    /// Subscribers of `channel` in `kind` (not counting patterns).
    pub fn count(&self, kind: Kind, channel: &[u8]) -> usize {
        self.names.lock()[kind.index()]
            .get(channel)
            .map_or(0, HashMap::len)
    }

    /// Distinct patterns with at least one subscriber.
    pub fn patterns(&self) -> usize {
        self.names.lock()[Kind::Pattern.index()].len()
    }

    /// A new listener for the client `handle`.
    pub fn listener(self: &Arc<Self>, handle: Arc<ClientHandle>) -> Listener {
        let (tx, rx) = mpsc::unbounded_channel();
        Listener {
            pubsub: self.clone(),
            me: Arc::new(Subscriber {
                tx,
                queued: AtomicUsize::new(0),
                soft_since_ms: AtomicU64::new(0),
                handle,
            }),
            rx,
            names: Default::default(),
        }
    }
}

/// Whether a subscriber with `queued` bytes waiting passed its limits
/// (marking when it passed the soft one).
fn over_limit(sub: &Subscriber, limit: &Limit, queued: u64, now_ms: u64) -> bool {
    if limit.hard > 0 && queued > limit.hard {
        return true;
    }
    if limit.soft == 0 || queued <= limit.soft {
        sub.soft_since_ms.store(0, Relaxed);
        return false;
    }
    let since = match sub.soft_since_ms.load(Relaxed) {
        0 => {
            sub.soft_since_ms.store(now_ms, Relaxed);
            now_ms
        }
        t => t,
    };
    now_ms.saturating_sub(since) >= limit.soft_secs * 1000
}

impl Listener {
    /// Listens to `name`; returns false if it already did.
    pub fn add(&mut self, kind: Kind, name: &Bytes) -> bool {
        if self.names[kind.index()].contains(name) {
            return false;
        }
        // A copy: a slice of the request would keep the client's read
        // buffer alive as long as the subscription.
        let name = &Bytes::copy_from_slice(name);
        self.names[kind.index()].insert(name.clone());
        self.pubsub.names.lock()[kind.index()]
            .entry(name.clone())
            .or_default()
            .insert(self.me.handle.id, self.me.clone());
        self.me.handle.subs[kind.index()].fetch_add(1, Relaxed);
        true
    }

    /// Stops listening to `name`; returns false if it did not.
    pub fn remove(&mut self, kind: Kind, name: &[u8]) -> bool {
        if !self.names[kind.index()].remove(name) {
            return false;
        }
        let mut names = self.pubsub.names.lock();
        let map = &mut names[kind.index()];
        if let Some(subs) = map.get_mut(name) {
            subs.remove(&self.me.handle.id);
            if subs.is_empty() {
                map.remove(name);
            }
        }
        self.me.handle.subs[kind.index()].fetch_sub(1, Relaxed);
        true
    }

    /// The names listened to in `kind`.
    pub fn names(&self, kind: Kind) -> Vec<Bytes> {
        self.names[kind.index()].iter().cloned().collect()
    }

    /// Channels and patterns (what SUBSCRIBE's replies count).
    pub fn count(&self) -> usize {
        self.names[0].len() + self.names[1].len()
    }

    /// Shard channels (what SSUBSCRIBE's replies count).
    pub fn shard_count(&self) -> usize {
        self.names[2].len()
    }

    /// The sending end of its queue (client tracking delivers there too).
    pub fn me(&self) -> Arc<Subscriber> {
        self.me.clone()
    }

    /// Whether it listens to anything (RESP2's subscriber mode).
    pub fn active(&self) -> bool {
        self.count() + self.shard_count() > 0
    }

    /// The next message (waits; forever while nothing is listened to and
    /// nothing queued).
    pub async fn next(&mut self) -> Message {
        match self.rx.recv().await {
            Some(m) => {
                self.me.queued.fetch_sub(m.size(), Relaxed);
                m
            }
            // The sender lives in `self.me`: the queue never closes.
            None => std::future::pending().await,
        }
    }

    /// A message already queued, if any.
    pub fn try_next(&mut self) -> Option<Message> {
        let m = self.rx.try_recv().ok()?;
        self.me.queued.fetch_sub(m.size(), Relaxed);
        Some(m)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in self.names(kind) {
                self.remove(kind, &name);
            }
        }
    }
}
