//! Clients blocked on lists, sorted sets and streams (BLPOP, BRPOP,
//! BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP; XREAD and
//! XREADGROUP with BLOCK).
//!
//! A blocking command first tries its pop at once. If every key it watches
//! is empty it registers a [`Waiter`] in the queue of each watched key (in
//! arrival order) and tries once more, so a push between the first try and
//! the registration is not missed. A command that adds elements to a list
//! or sorted set (any command whose `KeysView` stored one, tracked while
//! someone waits) then *serves* the waiters of those keys before its own
//! reply goes out: it runs each waiter's pop on the waiter's behalf, in
//! arrival order, until the key is empty again, and hands the reply to the
//! waiting connection. So, as in Redis, the client that blocked first gets
//! the element, and a pusher that reads the list right after its push sees
//! it already served.
//!
//! Invariants:
//! 1. A waiter is in the queue of every key it watches, or in none: it is
//!    removed from all of them at once (served, timed out, or its
//!    connection gone).
//! 2. A waiter's pop runs only if its connection still waits (its reply
//!    channel is open), so an element is not popped for a client that
//!    left; the window between that check and the delivery is a few
//!    instructions long.
//! 3. No lock of this module is held while the engine runs a pop.
//! 4. A stream read consumes nothing: when one waiter cannot be served,
//!    the waiters after it on the key are still tried. A group read
//!    (XREADGROUP) is also tried when its key changes in any way
//!    (`key_changed`: deleted, expired, overwritten, its group destroyed),
//!    so it gets Redis's UNBLOCKED or NOGROUP error at once.

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use strata_engine::{Engine, KeysView, Need, Read};
use strata_protocol::Version;
use tokio::sync::oneshot;

/// A waiter's pop: writes the reply and returns true if it found elements;
/// returns false (writing nothing) if every watched key is still empty.
/// The last argument is true when it runs for a blocked client: a watched
/// key of the wrong type is then skipped (as Redis serves only clients
/// blocked for the key's type), not an error.
pub type PopOp = Arc<dyn Fn(&mut KeysView<'_>, &mut BytesMut, Version, bool) -> bool + Send + Sync>;

pub struct Waiter {
    id: u64,
    /// The client's id (CLIENT UNBLOCK).
    client: u64,
    db: usize,
    /// The keys the pop needs (watched keys and a destination), and which
    /// of their elements (a pop touches one end of a list).
    keys: Vec<Bytes>,
    needs: Vec<Need>,
    /// The keys whose pushes wake it.
    watch: Vec<Bytes>,
    op: PopOp,
    version: Version,
    tx: Mutex<Option<oneshot::Sender<BytesMut>>>,
    /// Its pop waits for a flash read: others are served meanwhile.
    busy: std::sync::atomic::AtomicBool,
    kind: Kind,
}

/// What a waiter waits for (invariant 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A pop: the first waiter takes the element.
    Pop,
    /// XREAD.
    Read,
    /// XREADGROUP.
    GroupRead,
}

impl Waiter {
    fn waiting(&self) -> bool {
        self.tx.lock().as_ref().is_some_and(|t| !t.is_closed())
    }
}

/// Waiters per (db, key), in arrival order.
type Queues = HashMap<(usize, Bytes), VecDeque<Arc<Waiter>>>;

#[derive(Default)]
pub struct Blocking {
    queues: Mutex<Queues>,
    /// Waiters registered now (a quick test for writers).
    waiting: AtomicUsize,
    next_id: AtomicUsize,
    /// XREADGROUP waiters registered now.
    group_readers: AtomicUsize,
    /// Keys changed under group readers, to try them on (`key_changed`).
    changed: Mutex<Vec<(usize, Bytes)>>,
    changed_notify: tokio::sync::Notify,
}

/// Removes its waiter when dropped (timeout, or the connection went away).
pub struct Registration {
    blocking: Arc<Blocking>,
    waiter: Arc<Waiter>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.blocking.remove(&self.waiter);
    }
}

impl Blocking {
    /// Whether any client waits (writers then track the keys they fill).
    pub fn any_waiting(&self) -> bool {
        self.waiting.load(Relaxed) > 0
    }

    /// The keys clients wait on in database `db` (after SWAPDB brought
    /// other contents there, they are served from them).
    pub fn keys_waited_in(&self, db: usize) -> Vec<Bytes> {
        self.queues
            .lock()
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// Number of clients blocked now (INFO `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.waiting.load(Relaxed)
    }

    /// Registers a waiter (invariant 1); the receiver gets its reply.
    #[allow(clippy::too_many_arguments)]
    pub fn block(
        self: &Arc<Self>,
        client: u64,
        db: usize,
        watch: Vec<Bytes>,
        (keys, needs): (Vec<Bytes>, Vec<Need>),
        op: PopOp,
        version: Version,
        kind: Kind,
    ) -> (Registration, oneshot::Receiver<BytesMut>) {
        let (tx, rx) = oneshot::channel();
        let waiter = Arc::new(Waiter {
            id: self.next_id.fetch_add(1, Relaxed) as u64,
            client,
            db,
            keys,
            needs,
            watch,
            op,
            version,
            tx: Mutex::new(Some(tx)),
            busy: Default::default(),
            kind,
        });
        {
            let mut q = self.queues.lock();
            for k in &waiter.watch {
                let queue = q.entry((db, k.clone())).or_default();
                if !queue.iter().any(|w| w.id == waiter.id) {
                    queue.push_back(waiter.clone());
                }
            }
            self.waiting.fetch_add(1, Relaxed);
            if kind == Kind::GroupRead {
                self.group_readers.fetch_add(1, Relaxed);
            }
        }
        (
            Registration {
                blocking: self.clone(),
                waiter,
            },
            rx,
        )
    }

    /// Takes `w` out of every queue (once).
    fn remove(&self, w: &Arc<Waiter>) {
        let mut q = self.queues.lock();
        let mut found = false;
        for k in &w.watch {
            let key = (w.db, k.clone());
            if let Some(queue) = q.get_mut(&key) {
                let before = queue.len();
                queue.retain(|x| x.id != w.id);
                found |= queue.len() != before;
                if queue.is_empty() {
                    q.remove(&key);
                }
            }
        }
        if found {
            self.waiting.fetch_sub(1, Relaxed);
            if w.kind == Kind::GroupRead {
                self.group_readers.fetch_sub(1, Relaxed);
            }
        }
    }

    /// The first waiter on `key` that is not busy and not in `tried`,
    /// dropping ones whose connection is gone (invariant 2).
    fn first(&self, db: usize, key: &Bytes, tried: &[u64]) -> Option<Arc<Waiter>> {
        loop {
            let w = {
                let q = self.queues.lock();
                q.get(&(db, key.clone()))?
                    .iter()
                    .find(|w| !w.busy.load(Relaxed) && !tried.contains(&w.id))?
                    .clone()
            };
            if w.waiting() {
                return Some(w);
            }
            self.remove(&w);
        }
    }

    /// Serves the clients blocked on `ready` keys of `db` (module doc).
    pub fn serve(self: &Arc<Self>, engine: &Engine, db: usize, ready: Vec<Bytes>) {
        if !self.any_waiting() {
            return;
        }
        let mut todo: VecDeque<Bytes> = ready.into();
        while let Some(key) = todo.pop_front() {
            let mut tried = Vec::new();
            while let Some(w) = self.first(db, &key, &tried) {
                let op = w.op.clone();
                let version = w.version;
                let (keys, needs) = (w.keys.clone(), w.needs.clone());
                let read = engine.with_keys_needs(db, keys, needs, true, move |view| {
                    let mut out = BytesMut::new();
                    let served = op(view, &mut out, version, true);
                    (served, out)
                });
                match read {
                    Read::Ready(Ok(((true, out), more))) => {
                        self.deliver(&w, out);
                        todo.extend(more);
                    }
                    Read::Ready(Ok(((false, _), _))) if w.kind != Kind::Pop => tried.push(w.id),
                    Read::Ready(Ok(((false, _), _))) => break,
                    // A stream reader's key now of another type: a group
                    // reader gets Redis's UNBLOCKED, a plain reader waits on.
                    Read::Ready(Err(strata_engine::EngineError::WrongType))
                        if w.kind == Kind::GroupRead =>
                    {
                        let mut out = BytesMut::new();
                        crate::base::reply::error(&mut out, crate::base::reply::STREAM_GONE);
                        self.deliver(&w, out);
                    }
                    Read::Ready(Err(strata_engine::EngineError::WrongType))
                        if w.kind == Kind::Read =>
                    {
                        tried.push(w.id)
                    }
                    Read::Ready(Err(e)) => {
                        let mut out = BytesMut::new();
                        crate::base::reply::engine(&mut out, &e);
                        self.deliver(&w, out);
                    }
                    Read::Pending(fut) => {
                        // One of its keys went to flash meanwhile: finish
                        // its pop when the value is back (it keeps its
                        // place; others are served meanwhile), then serve
                        // the key again.
                        w.busy.store(true, Relaxed);
                        let me = self.clone();
                        let engine = engine.clone();
                        let key = key.clone();
                        tokio::spawn(async move {
                            match fut.await {
                                Ok(((true, out), mut more)) => {
                                    me.deliver(&w, out);
                                    more.push(key);
                                    me.serve(&engine, db, more);
                                }
                                Ok(((false, _), _)) => w.busy.store(false, Relaxed),
                                Err(e) => {
                                    let mut out = BytesMut::new();
                                    crate::base::reply::engine(&mut out, &e);
                                    me.deliver(&w, out);
                                }
                            }
                        });
                    }
                }
            }
        }
    }

    /// Notes a change of `key` (any: from the engine's key observer, with
    /// a shard lock held, so it only queues): group readers blocked on it
    /// are tried again by `serve_changed` (invariant 4).
    pub fn key_changed(&self, db: usize, key: &[u8]) {
        if self.group_readers.load(Relaxed) == 0 {
            return;
        }
        let waited = self
            .queues
            .lock()
            .get(&(db, Bytes::copy_from_slice(key)))
            .is_some_and(|q| q.iter().any(|w| w.kind == Kind::GroupRead));
        if waited {
            self.changed.lock().push((db, Bytes::copy_from_slice(key)));
            self.changed_notify.notify_one();
        }
    }

    /// Tries the group readers of the keys `key_changed` queued, for as
    /// long as the server runs.
    pub async fn serve_changed(self: Arc<Self>, engine: Engine) {
        loop {
            self.changed_notify.notified().await;
            let keys = std::mem::take(&mut *self.changed.lock());
            for (db, key) in keys {
                self.serve(&engine, db, vec![key]);
            }
        }
    }

    /// CLIENT UNBLOCK: ends `client`'s wait with the reply of a timeout,
    /// or with Redis's UNBLOCKED error; false if it was not blocked.
    pub fn unblock(&self, client: u64, error: bool) -> bool {
        let w = self
            .queues
            .lock()
            .values()
            .flat_map(|q| q.iter())
            .find(|w| w.client == client && w.waiting())
            .cloned();
        let Some(w) = w else { return false };
        let mut out = BytesMut::new();
        if error {
            crate::base::reply::error(&mut out, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
        } else {
            strata_protocol::write_null_array(&mut out, w.version);
        }
        self.deliver(&w, out);
        true
    }

    fn deliver(&self, w: &Arc<Waiter>, out: BytesMut) {
        self.remove(w);
        if let Some(tx) = w.tx.lock().take() {
            let _ = tx.send(out);
        }
    }
}
