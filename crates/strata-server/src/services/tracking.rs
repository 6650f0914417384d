//! Client-side caching: CLIENT TRACKING, as Redis 7.0 does it.
//!
//! A tracking client in the default mode is remembered for every key its
//! read-only commands read (OPTIN: only after CLIENT CACHING yes; OPTOUT:
//! unless CLIENT CACHING no); the first change of such a key (the
//! engine's key observer, `services::notify`) sends it one invalidation
//! and forgets it. A BCAST client is sent every change of a key under one
//! of its prefixes (all keys without one), gathered as Redis gathers them
//! until its event loop sleeps: the keys changed meanwhile go in one
//! message per prefix, in key order (`flush_bcast`, run when a
//! connection has answered a batch of commands, and shortly after a
//! change made elsewhere: expiry, eviction). Invalidations go to the client
//! itself as RESP3 `invalidate` pushes, or to its REDIRECT client (a RESP3
//! push, or for RESP2 a message on `__redis__:invalidate` if it listens to
//! that channel). NOLOOP leaves out the client's own changes. FLUSHDB and
//! FLUSHALL invalidate everything (a null key list), as Redis does.
//!
//! Invariants: the table of keys names only clients tracking in the
//! default mode; a client leaves every table when it turns tracking off,
//! runs RESET, or disconnects. Keys are names, not (database, name), as
//! in Redis.

use crate::services::pubsub::{Message, PubSub, Subscriber, INVALIDATE_CHANNEL};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// One client's tracking settings.
#[derive(Clone)]
pub struct Settings {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// The client invalidations go to (0: itself).
    pub redirect: u64,
    pub prefixes: Vec<Bytes>,
}

struct Tracker {
    settings: Settings,
    /// Where its own invalidations go (its queue).
    me: Arc<Subscriber>,
    resp3: bool,
    /// Its REDIRECT client disconnected: its invalidations are dropped,
    /// and a RESP3 client is told so instead (`tracking-redir-broken`).
    redir_broken: bool,
}

/// The registry (module doc).
#[derive(Default)]
pub struct Tracking {
    clients: Mutex<HashMap<u64, Tracker>>,
    /// Default mode: key -> the clients that read it.
    keys: Mutex<HashMap<Bytes, HashSet<u64>>>,
    /// Clients tracking (a cheap check for the hot paths).
    count: AtomicUsize,
    /// `tracking-table-max-keys` (0: no limit).
    pub max_keys: AtomicUsize,
    /// BCAST: keys changed since the last broadcast, each with the client
    /// that changed it last (NOLOOP), in key order.
    bcast_keys: Mutex<BTreeMap<Bytes, Option<u64>>>,
    /// `bcast_keys` is not empty (a cheap check after every batch).
    bcast_due: AtomicBool,
    /// Woken when `bcast_keys` gets its first key (`broadcast_changes`).
    pub bcast_wake: tokio::sync::Notify,
}

impl Tracking {
    /// Whether any client tracks.
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    pub fn settings(&self, id: u64) -> Option<Settings> {
        self.clients.lock().get(&id).map(|t| t.settings.clone())
    }

    /// Turns tracking on for client `id` (replacing its settings).
    pub fn on(&self, id: u64, settings: Settings, me: Arc<Subscriber>, resp3: bool) {
        let mut c = self.clients.lock();
        if c.insert(
            id,
            Tracker {
                settings,
                me,
                resp3,
                redir_broken: false,
            },
        )
        .is_none()
        {
            self.count.fetch_add(1, Relaxed);
        }
    }

    /// Turns tracking off for client `id` (OFF, RESET, disconnect).
    pub fn off(&self, id: u64) {
        if self.clients.lock().remove(&id).is_some() {
            self.count.fetch_sub(1, Relaxed);
            self.keys.lock().retain(|_, ids| {
                ids.remove(&id);
                !ids.is_empty()
            });
        }
    }

    /// Client `id` disconnected: the clients that redirect to it have a
    /// broken redirection (Redis finds no client by that id).
    pub fn gone(&self, id: u64) {
        if self.count.load(Relaxed) == 0 {
            return;
        }
        for t in self.clients.lock().values_mut() {
            if t.settings.redirect == id {
                t.redir_broken = true;
            }
        }
    }

    /// Remembers that client `id` read `keys` (a read-only command;
    /// `caching`: CLIENT CACHING's answer for this command, if given).
    /// Past `tracking-table-max-keys`, keys are dropped from the table and
    /// their readers told to drop them, as Redis does, so the table's
    /// memory stays bounded.
    pub fn remember(&self, pubsub: &PubSub, id: u64, keys: &[Bytes], caching: Option<bool>) {
        let ok = match self.clients.lock().get(&id) {
            Some(t) if t.settings.bcast => false,
            Some(t) if t.settings.optin => caching == Some(true),
            Some(t) if t.settings.optout => caching != Some(false),
            Some(_) => true,
            None => false,
        };
        if !ok {
            return;
        }
        let max = self.max_keys.load(Relaxed);
        let mut evicted = Vec::new();
        {
            let mut table = self.keys.lock();
            for k in keys {
                match table.get_mut(k) {
                    Some(readers) => {
                        readers.insert(id);
                    }
                    // A copy: a slice of the request would keep the
                    // client's read buffer alive while the key is tracked.
                    None => {
                        table.insert(Bytes::copy_from_slice(k), HashSet::from([id]));
                    }
                }
            }
            while max > 0 && table.len() > max {
                let Some(k) = table.keys().next().cloned() else {
                    break;
                };
                if let Some(readers) = table.remove(&k) {
                    evicted.push((k, readers));
                }
            }
        }
        // Their readers are told to drop them: they are tracked no more.
        let clients = self.clients.lock();
        for (k, readers) in evicted {
            for r in readers {
                if let Some(t) = clients.get(&r) {
                    self.deliver(pubsub, &clients, t, Some(vec![k.clone()]));
                }
            }
        }
    }

    /// A key changed (by client `by`, if a client's command changed it):
    /// its readers are told now; BCAST clients at the next `flush_bcast`.
    pub fn invalidate(&self, pubsub: &PubSub, key: &[u8], by: Option<u64>) {
        let readers = self.keys.lock().remove(key);
        let clients = self.clients.lock();
        let bcast = clients.values().any(|t| {
            t.settings.bcast
                && (t.settings.prefixes.is_empty()
                    || t.settings.prefixes.iter().any(|p| key.starts_with(p)))
        });
        if bcast {
            let mut keys = self.bcast_keys.lock();
            keys.insert(Bytes::copy_from_slice(key), by);
            if !self.bcast_due.swap(true, Relaxed) {
                self.bcast_wake.notify_one();
            }
        }
        for id in readers.into_iter().flatten() {
            let Some(t) = clients.get(&id) else { continue };
            // A reader that switched to BCAST since: its broadcast tells it.
            if t.settings.bcast || (t.settings.noloop && by == Some(id)) {
                continue;
            }
            self.deliver(pubsub, &clients, t, Some(vec![Bytes::copy_from_slice(key)]));
        }
    }

    /// Sends BCAST clients the keys changed since the last call under
    /// their prefixes (`trackingBroadcastInvalidationMessages`): per
    /// prefix, in prefix order, one message of those keys in key order,
    /// without a NOLOOP client's own changes.
    pub fn flush_bcast(&self, pubsub: &PubSub) {
        if !self.bcast_due.load(Relaxed) {
            return;
        }
        let keys = {
            let mut keys = self.bcast_keys.lock();
            self.bcast_due.store(false, Relaxed);
            std::mem::take(&mut *keys)
        };
        let clients = self.clients.lock();
        let mut prefixes: BTreeMap<&[u8], Vec<u64>> = BTreeMap::new();
        for (id, t) in clients.iter().filter(|(_, t)| t.settings.bcast) {
            if t.settings.prefixes.is_empty() {
                prefixes.entry(b"").or_default().push(*id);
            }
            for p in &t.settings.prefixes {
                prefixes.entry(&p[..]).or_default().push(*id);
            }
        }
        for (prefix, ids) in prefixes {
            let under: Vec<(&Bytes, Option<u64>)> = keys
                .range::<[u8], _>((
                    std::ops::Bound::Included(prefix),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, by)| (k, *by))
                .collect();
            if under.is_empty() {
                continue;
            }
            for id in ids {
                let Some(t) = clients.get(&id) else { continue };
                let mine = |by: Option<u64>| t.settings.noloop && by == Some(id);
                let list: Vec<Bytes> = under
                    .iter()
                    .filter(|(_, by)| !mine(*by))
                    .map(|(k, _)| (*k).clone())
                    .collect();
                if !list.is_empty() {
                    self.deliver(pubsub, &clients, t, Some(list));
                }
            }
        }
    }

    /// FLUSHDB / FLUSHALL: every tracking client is told to drop all.
    pub fn flush(&self, pubsub: &PubSub) {
        self.keys.lock().clear();
        let clients = self.clients.lock();
        for t in clients.values() {
            self.deliver(pubsub, &clients, t, None);
        }
    }

    fn deliver(
        &self,
        pubsub: &PubSub,
        clients: &HashMap<u64, Tracker>,
        t: &Tracker,
        keys: Option<Vec<Bytes>>,
    ) {
        if t.redir_broken {
            // As Redis's `sendTrackingMessage`: the invalidation is lost,
            // and a RESP3 client hears why.
            if t.resp3 {
                let mut push = bytes::BytesMut::new();
                strata_protocol::write_push_len(&mut push, strata_protocol::Version::Resp3, 2);
                strata_protocol::write_bulk(&mut push, b"tracking-redir-broken");
                strata_protocol::write_integer(&mut push, t.settings.redirect as i64);
                pubsub.send_to(&t.me, Message::raw(push.freeze()));
            }
            return;
        }
        let target = match t.settings.redirect {
            0 if t.resp3 => Some(t.me.clone()),
            // RESP2 without a redirect: nowhere to send it (as Redis).
            0 => None,
            r => match clients.get(&r) {
                Some(rt) if rt.resp3 => Some(rt.me.clone()),
                _ => pubsub.subscriber_of(INVALIDATE_CHANNEL, r),
            },
        };
        if let Some(sub) = target {
            pubsub.send_to(&sub, Message::invalidate(keys));
        }
    }
}

/// Broadcasts the changes made outside a connection's batch (expiry,
/// eviction, a reply that waited for flash) shortly after the first one.
pub async fn broadcast_changes(tracking: Arc<Tracking>, pubsub: Arc<PubSub>) {
    loop {
        tracking.bcast_wake.notified().await;
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        tracking.flush_bcast(&pubsub);
    }
}
