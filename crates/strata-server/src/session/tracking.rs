//! Client-side caching: CLIENT TRACKING, as Redis 7.0 does it.
//!
//! A tracking client in the default mode is remembered for every key its
//! read-only commands read (OPTIN: only after CLIENT CACHING yes; OPTOUT:
//! unless CLIENT CACHING no); the first change of such a key (the
//! engine's key observer, `session::notify`) sends it one invalidation
//! and forgets it. A BCAST client is sent every change of a key under one
//! of its prefixes (all keys without one). Invalidations go to the client
//! itself as RESP3 `invalidate` pushes, or to its REDIRECT client (a RESP3
//! push, or for RESP2 a message on `__redis__:invalidate` if it listens to
//! that channel). NOLOOP leaves out the client's own changes. FLUSHDB and
//! FLUSHALL invalidate everything (a null key list), as Redis does.
//!
//! Invariants: the table of keys names only clients tracking in the
//! default mode; a client leaves every table when it turns tracking off,
//! runs RESET, or disconnects. Keys are names, not (database, name), as
//! in Redis.

use crate::session::pubsub::{Message, PubSub, Subscriber, INVALIDATE_CHANNEL};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
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
                table.entry(k.clone()).or_default().insert(id);
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

    /// A key changed (by client `by`, if a client's command changed it).
    pub fn invalidate(&self, pubsub: &PubSub, key: &[u8], by: Option<u64>) {
        let readers = self.keys.lock().remove(key);
        let clients = self.clients.lock();
        let mut to: Vec<u64> = readers.into_iter().flatten().collect();
        for (id, t) in clients.iter() {
            if t.settings.bcast
                && (t.settings.prefixes.is_empty()
                    || t.settings.prefixes.iter().any(|p| key.starts_with(p)))
            {
                to.push(*id);
            }
        }
        for id in to {
            let Some(t) = clients.get(&id) else { continue };
            if t.settings.noloop && by == Some(id) {
                continue;
            }
            self.deliver(pubsub, &clients, t, Some(vec![Bytes::copy_from_slice(key)]));
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
