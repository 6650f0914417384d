//! The registry of connected clients, for CLIENT LIST / INFO / KILL and
//! INFO clients. The registry lock is taken only on connect, disconnect
//! and CLIENT commands; per-command updates touch only the client's own
//! handle (atomics and a small lock of its own).

pub mod buffers;

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;

/// A connection's buffers as CLIENT LIST shows them (Redis's names):
/// the input's bytes and free room, the output's bytes, the backlog's
/// blocks and bytes, and all of it.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct BufferSizes {
    pub qbuf: usize,
    pub qbuf_free: usize,
    pub obl: usize,
    pub oll: usize,
    pub omem: usize,
    pub tot_mem: usize,
}

/// `BufferSizes` kept where CLIENT LIST reads them (each field a relaxed
/// atomic: a reader may see one update half applied, as any snapshot of
/// a running connection is).
#[derive(Default)]
pub struct SharedSizes([AtomicU64; 6]);

impl SharedSizes {
    pub fn store(&self, s: BufferSizes) {
        let v = [s.qbuf, s.qbuf_free, s.obl, s.oll, s.omem, s.tot_mem];
        for (a, v) in self.0.iter().zip(v) {
            a.store(v as u64, Relaxed);
        }
    }

    pub fn load(&self) -> BufferSizes {
        let [qbuf, qbuf_free, obl, oll, omem, tot_mem] =
            self.0.each_ref().map(|a| a.load(Relaxed) as usize);
        BufferSizes {
            qbuf,
            qbuf_free,
            obl,
            oll,
            omem,
            tot_mem,
        }
    }
}

/// What the server knows about one connection.
pub struct ClientHandle {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub created: quanta::Instant,
    /// Milliseconds since `created` of the last command.
    last_ms: AtomicU64,
    pub db: AtomicU64,
    pub resp: AtomicU64,
    /// Written only by the connection's task (`touch`).
    pub commands: AtomicU64,
    pub info: Mutex<ClientInfo>,
    /// The address and length of `info.last_cmd` (`touch` locks `info`
    /// only when the command changes).
    last_cmd_at: [AtomicUsize; 2],
    /// Channels, patterns and shard channels subscribed to (kept by the
    /// connection's pub/sub listener).
    pub subs: [AtomicU64; 3],
    /// Its buffers' sizes (CLIENT LIST's qbuf ... tot-mem), kept by the
    /// connection (`buffers::BufGauge`).
    pub buffers: SharedSizes,
    /// The socket's descriptor (CLIENT LIST's fd), once serving.
    pub fd: std::sync::atomic::AtomicI32,
    killed: AtomicBool,
    kill: Notify,
}

/// The parts of a client's state that are text.
#[derive(Default, Clone)]
pub struct ClientInfo {
    /// CLIENT NO-EVICT ON (flag `e`; Strata evicts no clients anyway).
    pub no_evict: bool,
    /// CLIENT NO-TOUCH ON (flag `T`).
    pub no_touch: bool,
    pub name: String,
    pub lib_name: String,
    pub lib_ver: String,
    pub last_cmd: &'static str,
    /// The ACL user's name (`user=`).
    pub user: bytes::Bytes,
}

impl ClientHandle {
    /// Whether the client connects from a loopback address
    /// (`enable-debug-command local`).
    pub fn is_local(&self) -> bool {
        self.addr
            .rsplit_once(':')
            .and_then(|(ip, _)| ip.trim_matches(['[', ']']).parse::<std::net::IpAddr>().ok())
            .is_some_and(|ip| ip.is_loopback())
    }

    pub fn new(id: u64, addr: String, laddr: String) -> ClientHandle {
        ClientHandle {
            id,
            addr,
            laddr,
            created: quanta::Instant::now(),
            last_ms: AtomicU64::new(0),
            db: AtomicU64::new(0),
            resp: AtomicU64::new(2),
            commands: AtomicU64::new(0),
            info: Mutex::new(ClientInfo {
                last_cmd: "NULL",
                user: bytes::Bytes::from_static(b"default"),
                ..ClientInfo::default()
            }),
            last_cmd_at: ["NULL".as_ptr() as usize, 4].map(AtomicUsize::new),
            subs: Default::default(),
            buffers: SharedSizes::default(),
            fd: std::sync::atomic::AtomicI32::new(-1),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }

    /// Whether it is subscribed to anything (CLIENT LIST's `P`, its
    /// `pubsub` type).
    pub fn is_pubsub(&self) -> bool {
        self.subs.iter().any(|n| n.load(Relaxed) > 0)
    }

    /// Records that a command runs from `now`.
    pub fn touch(&self, cmd: &'static str, now: quanta::Instant) {
        self.last_ms.store(
            now.saturating_duration_since(self.created).as_millis() as u64,
            Relaxed,
        );
        // Only this connection's task runs `touch`, one command at a
        // time: no read-modify-write, and no lock for a repeated command.
        self.commands
            .store(self.commands.load(Relaxed) + 1, Relaxed);
        let at = [cmd.as_ptr() as usize, cmd.len()];
        if self.last_cmd_at[0].load(Relaxed) != at[0] || self.last_cmd_at[1].load(Relaxed) != at[1]
        {
            self.info.lock().last_cmd = cmd;
            self.last_cmd_at[0].store(at[0], Relaxed);
            self.last_cmd_at[1].store(at[1], Relaxed);
        }
    }

    /// Seconds since the last command.
    pub fn idle_secs(&self) -> u64 {
        (self.created.elapsed().as_millis() as u64).saturating_sub(self.last_ms.load(Relaxed))
            / 1000
    }

    /// Asks the connection to close (CLIENT KILL).
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        self.kill.notify_one();
    }

    /// Whether CLIENT KILL reached this client (it is closing).
    pub fn is_killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// Resolves once the client was killed.
    pub async fn killed(&self) {
        if self.killed.load(Relaxed) {
            return;
        }
        self.kill.notified().await;
    }

    /// The CLIENT LIST line of this client.
    pub fn list_line(&self) -> String {
        let info = self.info.lock().clone();
        // In Redis's order (`getClientInfoString`).
        let mut flags = String::new();
        for (on, c) in [
            (self.is_pubsub(), 'P'),
            (info.no_evict, 'e'),
            (info.no_touch, 'T'),
        ] {
            if on {
                flags.push(c);
            }
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let [sub, psub, ssub] = [0, 1, 2].map(|i| self.subs[i].load(Relaxed));
        let BufferSizes {
            qbuf,
            qbuf_free,
            obl,
            oll,
            omem,
            tot_mem,
        } = self.buffers.load();
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} multi=-1 qbuf={qbuf} qbuf-free={qbuf_free} argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl={obl} oll={oll} omem={omem} tot-mem={tot_mem} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd.load(Relaxed),
            info.name,
            self.created.elapsed().as_secs(),
            self.idle_secs(),
            self.db.load(Relaxed),
            info.last_cmd,
            String::from_utf8_lossy(&info.user),
            self.resp.load(Relaxed),
            info.lib_name,
            info.lib_ver,
        )
    }
}

#[derive(Default)]
pub struct Clients {
    map: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    next_id: AtomicU64,
}

impl Clients {
    pub fn register(&self, addr: String, laddr: String) -> Arc<ClientHandle> {
        let id = self.next_id.fetch_add(1, Relaxed) + 1;
        let h = Arc::new(ClientHandle::new(id, addr, laddr));
        self.map.lock().insert(id, h.clone());
        h
    }

    pub fn unregister(&self, id: u64) {
        self.map.lock().remove(&id);
    }

    pub fn count(&self) -> usize {
        self.map.lock().len()
    }

    pub fn all(&self) -> Vec<Arc<ClientHandle>> {
        self.map.lock().values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.map.lock().get(&id).cloned()
    }
}

/// CLIENT PAUSE: until a time, every command (ALL) or the writes (WRITE)
/// wait before they run, as Redis postpones them; CLIENT UNPAUSE (itself
/// paused under ALL, as in Redis) or the time lifts it.
#[derive(Default)]
pub struct Pause {
    until: Mutex<Option<(Instant, bool)>>,
    /// A pause was set and not lifted (it may have run out): the check
    /// every command makes, without the lock.
    armed: AtomicBool,
    lifted: Notify,
    /// Clients waiting in `wait` now: Redis counts its postponed clients
    /// in INFO `blocked_clients`.
    pub waiting: AtomicUsize,
}

impl Pause {
    pub fn pause(&self, d: std::time::Duration, all: bool) {
        // A timeout past any real instant pauses for a century.
        let until = Instant::now()
            .checked_add(d)
            .unwrap_or_else(|| Instant::now() + std::time::Duration::from_secs(100 * 365 * 86400));
        let mut p = self.until.lock();
        // A later or wider pause wins over the one in force.
        let (until, all) = match *p {
            Some((u, a)) if u > Instant::now() => (u.max(until), a || all),
            _ => (until, all),
        };
        *p = Some((until, all));
        self.armed.store(true, Relaxed);
    }

    pub fn unpause(&self) {
        *self.until.lock() = None;
        self.armed.store(false, Relaxed);
        self.lifted.notify_waiters();
    }

    /// Waits while a command of this kind is paused (`write`: it writes
    /// or may propagate).
    pub async fn wait(&self, write: bool) {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Relaxed);
            }
        }
        self.waiting.fetch_add(1, Relaxed);
        let _waiting = Waiting(&self.waiting);
        loop {
            let lifted = self.lifted.notified();
            let left = match *self.until.lock() {
                Some((until, all)) if all || write => {
                    until.saturating_duration_since(Instant::now())
                }
                _ => return,
            };
            if left.is_zero() {
                return;
            }
            let _ = tokio::time::timeout(left, lifted).await;
        }
    }

    /// Whether a pause may be in force (no lock: every command asks).
    pub fn armed(&self) -> bool {
        self.armed.load(Relaxed)
    }

    /// Whether a command of this kind is held now (`write`: it writes or
    /// may propagate).
    pub fn holds(&self, write: bool) -> bool {
        match *self.until.lock() {
            Some((until, all)) if until > Instant::now() => all || write,
            _ => false,
        }
    }
}
