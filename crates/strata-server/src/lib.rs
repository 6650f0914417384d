//! # strata-server
//!
//! The only crate that knows both the protocol and the engine: it accepts
//! connections, decodes RESP requests, dispatches commands to the tiered
//! engine and renders replies and INFO.
//!
//! Threads: the main thread's runtime accepts (`net`); `threads` event
//! loops, each a tokio `current_thread` runtime, serve the connections
//! (`loops`; `server-runtime shared`: one multi-thread runtime instead);
//! the engine adds its background and journal threads. No lock is global on the request path: the engine
//! index is sharded, each client has its own handle, and server counters
//! are atomics.

pub mod acl;
pub mod alloc;
pub mod client_buffers;
pub mod clients;
pub mod command;
pub mod commands;
pub mod config;
pub mod connection;
pub mod dispatch;
pub mod engine_config;
pub mod glob;
pub mod info;
pub mod loops;
pub mod memcache;
pub mod metrics;
pub mod net;
pub mod rdb;
pub mod reply;
pub mod session;

use clients::Clients;
use config::Config;
pub use engine_config::engine_config;
use engine_config::{encoding_limits, eviction, fsync_policy, lfu, promote};
use loops::Protocol;
use metrics::slowlog::SlowLog;
use net::{listen, Listening};
use parking_lot::RwLock;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::{Admission, Engine};
use strata_protocol::Limits;
use tokio::sync::Notify;

/// Server-level counters (INFO stats / clients).
#[derive(Default)]
pub struct ServerStats {
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// Striped: every command of every loop counts here.
    pub commands_processed: strata_engine::stats::Striped,
    pub unknown_commands: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub oom_rejections: AtomicU64,
    /// Times a write waited for demotion to make room.
    pub write_waits: AtomicU64,
    /// Clients closed for passing `client-output-buffer-limit`.
    pub output_buffer_limit_disconnections: AtomicU64,
    /// Clients closed for passing `client-query-buffer-limit`.
    pub query_buffer_limit_disconnections: AtomicU64,
    /// Clients closed by `maxmemory-clients` (INFO `evicted_clients`).
    pub evicted_clients: AtomicU64,
}

/// Longest a write waits for demotion (or the collector) to make room.
const ROOM_WAIT_LIMIT: Duration = Duration::from_secs(10);

/// Why a write was refused admission.
pub enum Refusal {
    /// The memory limits are reached and the policy does not evict.
    OutOfMemory,
    /// The flash log cannot be written (full device, failed write or fsync).
    Log(String),
}

/// Changes the log level of the running process (installed by the binary).
pub type LogReloader = Box<dyn Fn(&config::LogLevel) + Send + Sync>;

/// State shared by every connection.
pub struct Shared {
    pub engine: Engine,
    pub config: RwLock<Config>,
    /// ACL users and the ACL LOG.
    pub acl: acl::Acl,
    /// `min-replicas-to-write` and `min-replicas-max-lag` both above 0:
    /// with no replicas, writes are refused (NOREPLICAS).
    pub no_good_replicas: AtomicBool,
    pub config_file: Option<std::path::PathBuf>,
    pub clients: Clients,
    pub stats: ServerStats,
    /// The memcached listener's counters.
    pub mc: memcache::McStats,
    pub slowlog: SlowLog,
    /// MONITOR clients.
    pub monitors: session::monitor::Monitors,
    /// The latency monitor (LATENCY LATEST / HISTORY / RESET).
    pub latency: Arc<metrics::latency::LatencyMonitor>,
    /// Per-command calls, time, errors and latency (INFO commandstats).
    pub cmdstats: metrics::commands::CommandStats,
    pub errorstats: metrics::errors::ErrorStats,
    /// CLIENT PAUSE in force.
    pub pause: clients::Pause,
    /// Clients blocked on lists and sorted sets (BLPOP ...).
    pub blocking: Arc<session::blocking::Blocking>,
    /// Channels, patterns and shard channels and their subscribers.
    pub pubsub: Arc<session::pubsub::PubSub>,
    /// The Lua VM and the script cache.
    pub scripts: session::scripting::Scripts,
    /// Keyspace notifications (the engine's key observer).
    pub notifier: Arc<session::notify::Notifier>,
    /// Client tracking (client-side caching).
    pub tracking: Arc<session::tracking::Tracking>,
    pub started: Instant,
    /// Bytes allocated when the server was ready (MEMORY STATS).
    pub startup_allocated: u64,
    pub run_id: String,
    pub tcp_port: AtomicU64,
    /// The memcached listener's port (0 = off).
    pub mc_port: AtomicU64,
    /// The TLS configuration new TLS connections handshake with.
    pub tls: net::tls::Tls,
    max_bulk_len: AtomicUsize,
    idle_timeout_secs: AtomicU64,
    /// `client-output-buffer-limit`, per class.
    pub out_limits: client_buffers::OutputLimits,
    /// `client-query-buffer-limit`: bytes of unparsed input a client may
    /// hold.
    pub query_limit: AtomicU64,
    /// `maxmemory-clients` in bytes (0 = none), and the lock one evictor
    /// at a time holds (`connection::guards::evict_clients`).
    pub clients_limit: AtomicU64,
    pub evicting: parking_lot::Mutex<()>,
    shutdown: Notify,
    shutting_down: AtomicBool,
    /// Set by SHUTDOWN: how to save; `main` waits for it beside signals.
    shutdown_request: parking_lot::Mutex<Option<strata_engine::ShutdownSave>>,
    shutdown_requested: Notify,
    log_reloader: std::sync::OnceLock<LogReloader>,
    /// The connection loops (DEBUG LOOPS, INFO), once started.
    pub loops: std::sync::OnceLock<Arc<loops::Pool>>,
    /// The lock on `dir` (`strata_engine::flash::lock`), held for the
    /// server's life.
    _dir_lock: Option<strata_engine::flash::lock::DirLock>,
    /// When (ms since the start) the last cross-protocol attack was
    /// logged: once a minute at most, as Redis.
    security_warned: AtomicU64,
}

impl Shared {
    /// The protocol limits currently configured.
    pub fn limits(&self) -> Limits {
        Limits {
            max_bulk_len: self.max_bulk_len.load(Relaxed),
            ..Limits::default()
        }
    }

    /// The idle timeout of clients (`timeout`), if any.
    pub fn idle_timeout(&self) -> Option<Duration> {
        match self.idle_timeout_secs.load(Relaxed) {
            0 => None,
            s => Some(Duration::from_secs(s)),
        }
    }

    /// Admits a write (both protocols): `first` is the engine's admission
    /// already asked for; while it says Wait, waits for demotion to make
    /// room (backpressure), up to `ROOM_WAIT_LIMIT`, then refuses with OOM.
    pub async fn admit_write(&self, first: Admission) -> Result<(), Refusal> {
        let deadline = Instant::now() + ROOM_WAIT_LIMIT;
        let mut admission = first;
        loop {
            match admission {
                Admission::Admit => return Ok(()),
                Admission::Wait if Instant::now() < deadline => {
                    self.stats.write_waits.fetch_add(1, Relaxed);
                    let _ = tokio::time::timeout(
                        Duration::from_millis(10),
                        self.engine.wait_for_room(),
                    )
                    .await;
                }
                Admission::Wait | Admission::OutOfMemory => return Err(Refusal::OutOfMemory),
                Admission::LogUnavailable => {
                    return Err(Refusal::Log(self.engine.log_error().unwrap_or_default()))
                }
            }
            admission = self.engine.admission();
        }
    }

    /// A client sent `POST` or `Host:` (an HTTP request: a web page making
    /// a browser talk to the server, "cross protocol scripting"): logged
    /// once a minute at most, as Redis's `securityWarningCommand`; the
    /// caller closes the connection.
    pub fn warn_security_attack(&self) {
        let now = self.started.elapsed().as_millis() as u64 + 60_000;
        let last = self.security_warned.load(Relaxed);
        if (last == 0 || now >= last + 60_000)
            && self
                .security_warned
                .compare_exchange(last, now, Relaxed, Relaxed)
                .is_ok()
        {
            tracing::warn!(
                "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: \
                 commands to Redis. This is likely due to an attacker attempting to use Cross \
                 Protocol Scripting to compromise your Redis instance. Connection aborted."
            );
        }
    }

    /// SHUTDOWN: asks `main` to shut down cleanly with this save mode.
    pub fn request_shutdown(&self, save: strata_engine::ShutdownSave) {
        *self.shutdown_request.lock() = Some(save);
        self.shutdown_requested.notify_one();
    }

    /// Resolves with the save mode when SHUTDOWN was sent.
    pub async fn shutdown_command(&self) -> strata_engine::ShutdownSave {
        loop {
            let n = self.shutdown_requested.notified();
            if let Some(s) = *self.shutdown_request.lock() {
                return s;
            }
            n.await;
        }
    }

    /// Worker threads of the runtime (`threads`, 0 = one per core).
    pub fn threads(&self) -> usize {
        self.config.read().threads
    }

    /// Whether shutdown was requested.
    pub fn shutdown_requested(&self) -> bool {
        self.shutting_down.load(Relaxed)
    }

    /// Resolves when the server shuts down.
    pub async fn shutdown_signal(&self) {
        if self.shutting_down.load(Relaxed) {
            return;
        }
        self.shutdown.notified().await;
    }

    /// Installs the function that applies `loglevel` changes.
    pub fn set_log_reloader(&self, f: LogReloader) {
        let _ = self.log_reloader.set(f);
    }

    /// Pushes run-time configuration into the engine and the limits.
    pub fn apply_config(&self) {
        let c = self.config.read();
        self.acl.set_requirepass(c.requirepass.as_deref());
        self.no_good_replicas.store(
            c.min_replicas_to_write > 0 && c.min_replicas_max_lag > 0,
            Relaxed,
        );
        self.acl
            .log
            .max_len
            .store(c.acllog_max_len as usize, Relaxed);
        self.acl.log.trim();
        if let Some(reload) = self.log_reloader.get() {
            reload(&c.loglevel);
        }
        self.max_bulk_len
            .store(c.proto_max_bulk_len as usize, Relaxed);
        self.idle_timeout_secs.store(c.timeout, Relaxed);
        self.notifier.flags.store(c.notify_keyspace_events, Relaxed);
        self.tracking
            .max_keys
            .store(c.tracking_table_max_keys as usize, Relaxed);
        self.scripts
            .busy
            .threshold_ms
            .store(c.busy_reply_threshold, Relaxed);
        self.out_limits.set(c.client_output_buffer_limit);
        self.query_limit.store(c.client_query_buffer_limit, Relaxed);
        self.clients_limit
            .store(c.maxmemory_clients.bytes(c.maxmemory_ram), Relaxed);
        let [hard, soft, soft_secs] = c.client_output_buffer_limit[2];
        *self.pubsub.limit.lock() = session::pubsub::Limit {
            hard,
            soft,
            soft_secs,
        };
        self.slowlog
            .slower_than
            .store(c.slowlog_log_slower_than, Relaxed);
        self.slowlog.max_len.store(c.slowlog_max_len, Relaxed);
        self.latency
            .threshold_ms
            .store(c.latency_monitor_threshold, Relaxed);
        let e = &self.engine;
        e.set_maxmemory_ram(c.maxmemory_ram);
        e.set_maxmemory(c.maxmemory);
        e.set_eviction(eviction(&c.maxmemory_policy));
        e.set_maxmemory_samples(c.maxmemory_samples);
        e.set_lfu(lfu(&c));
        e.set_min_value_size(c.tiering_min_value_size);
        e.set_gc_garbage_ratio(c.flash_gc_garbage_ratio);
        strata_engine::set_flash_poll_us(c.flash_poll_us);
        e.set_defrag(c.activedefrag);
        e.set_promote(promote(&c.tiering_promote));
        e.set_fsync_policy(fsync_policy(&c.appendfsync));
        e.set_encoding_limits(encoding_limits(&c));
        drop(c);
        // Over a lowered maxmemory: evict now, as Redis does.
        e.evict_to_limit();
    }
}

/// A running server: its address, and a way to stop it.
pub struct ServerHandle {
    pub shared: Arc<Shared>,
    pub addrs: Vec<SocketAddr>,
}

impl ServerHandle {
    /// Stops accepting, closes connections.
    pub fn shutdown(&self) {
        self.shared.shutting_down.store(true, Relaxed);
        self.shared.shutdown.notify_waiters();
    }

    /// Clean shutdown: stop accepting, give in-flight commands up to two
    /// seconds to finish, then drain and sync the log and checkpoint per
    /// `save` (engine `shutdown`).
    pub async fn shutdown_cleanly(&self, save: strata_engine::ShutdownSave) -> Result<(), String> {
        self.shutdown();
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.shared.clients.count() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let engine = self.shared.engine.clone();
        tokio::task::spawn_blocking(move || engine.shutdown(save))
            .await
            .map_err(|e| e.to_string())?
    }
}

/// Opens the engine, binds the listeners and starts accepting. Must be
/// called inside a tokio runtime.
pub async fn start(
    config: Config,
    config_file: Option<std::path::PathBuf>,
) -> std::io::Result<ServerHandle> {
    std::fs::create_dir_all(&config.dir)?;
    // One server per data directory (the engine locks its flash-dir too,
    // which may be `dir` itself: then its lock is the one).
    let same = |a: &std::path::Path, b: &std::path::Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
    let dir_lock = if same(&config.dir, &config.flash_dir()) {
        None
    } else {
        Some(strata_engine::flash::lock::DirLock::acquire(
            &config.dir,
            "dir",
        )?)
    };
    // Recovery runs in the background; commands get -LOADING meanwhile.
    let latency: Arc<metrics::latency::LatencyMonitor> = Arc::default();
    latency
        .threshold_ms
        .store(config.latency_monitor_threshold, Relaxed);
    let mut ecfg = engine_config(&config);
    let sink = latency.clone();
    ecfg.latency_sink = Some(Arc::new(move |event, ms| sink.sample_if_needed(event, ms)));
    let engine = Engine::start(ecfg).map_err(std::io::Error::other)?;
    let backlog = config.tcp_backlog;
    listen::check_backlog(backlog);
    let mc_listeners = if config.memcached_port != 0 {
        listen::bind_all(
            &config.bind,
            config.memcached_port,
            backlog,
            "memcached-port",
        )?
    } else {
        Vec::new()
    };
    let listeners = if config.port != 0 {
        listen::bind_all(&config.bind, config.port, backlog, "port")?
    } else {
        Vec::new()
    };
    let tls = net::tls::Tls::default();
    if config.tls_port != 0 || config.memcached_tls {
        tls.reload(&config.tls).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("Failed to configure TLS: {e}"),
            )
        })?;
    }
    let tls_listeners = if config.tls_port != 0 {
        listen::bind_all(&config.bind, config.tls_port, backlog, "tls-port")?
    } else {
        Vec::new()
    };
    commands::server::init_command_table();
    let acl = acl::Acl::default();
    for u in &config.users {
        acl.load_user(u)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    }
    if !config.aclfile.is_empty() {
        if !config.users.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both."));
        }
        acl.load_file(&config.aclfile).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("aclfile: {e}"))
        })?;
    }
    commands::table::rename(&config.renames).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("rename-command: {e}"),
        )
    })?;
    let guarded = config.requirepass.is_some() || acl.guarded();
    if let Some(refusal) = memcache::refuse_unauthenticated(&config, guarded) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            refusal,
        ));
    }
    let pubsub: Arc<session::pubsub::PubSub> = Arc::default();
    let tracking: Arc<session::tracking::Tracking> = Arc::default();
    let blocking: Arc<session::blocking::Blocking> = Arc::default();
    let notifier = Arc::new(session::notify::Notifier::new(
        pubsub.clone(),
        tracking.clone(),
        blocking.clone(),
    ));
    engine.set_observer(notifier.clone());
    let shared = Arc::new(Shared {
        engine,
        notifier,
        tracking,
        cmdstats: Default::default(),
        errorstats: Default::default(),
        pause: Default::default(),
        slowlog: SlowLog::new(config.slowlog_log_slower_than, config.slowlog_max_len),
        latency,
        monitors: Default::default(),
        blocking: blocking.clone(),
        pubsub,
        scripts: Default::default(),
        max_bulk_len: AtomicUsize::new(config.proto_max_bulk_len as usize),
        idle_timeout_secs: AtomicU64::new(config.timeout),
        out_limits: Default::default(),
        query_limit: AtomicU64::new(config.client_query_buffer_limit),
        clients_limit: AtomicU64::new(0),
        evicting: parking_lot::Mutex::new(()),
        config: RwLock::new(config),
        acl,
        no_good_replicas: AtomicBool::new(false),
        config_file,
        clients: Clients::default(),
        stats: ServerStats::default(),
        mc: memcache::McStats::default(),
        started: Instant::now(),
        startup_allocated: alloc::allocated_bytes().unwrap_or(0),
        run_id: run_id(),
        tcp_port: AtomicU64::new(0),
        mc_port: AtomicU64::new(0),
        tls,
        shutdown: Notify::new(),
        shutting_down: AtomicBool::new(false),
        shutdown_request: parking_lot::Mutex::new(None),
        shutdown_requested: Notify::new(),
        log_reloader: std::sync::OnceLock::new(),
        loops: std::sync::OnceLock::new(),
        _dir_lock: dir_lock,
        security_warned: AtomicU64::new(0),
    });
    shared.apply_config();
    // The TSC clock commands are timed with calibrates on its first use
    // (~0.6 ms here): before the first command, not during it.
    let _ = quanta::Instant::now();
    let per_core = shared.config.read().server_runtime == "per-core";
    let scaling = shared.config.read().loop_scaling == "auto";
    let loops = Arc::new(loops::Loops::start(shared.threads(), per_core, scaling)?);
    let _ = shared.loops.set(loops.pool().clone());
    let mut addrs = Vec::new();
    let resp = Listening {
        protocol: Protocol::Resp,
        tls: false,
    };
    for l in listeners {
        let addr = l.local_addr()?;
        shared.tcp_port.store(addr.port() as u64, Relaxed);
        addrs.push(addr);
        tokio::spawn(net::accept_loop(shared.clone(), l, resp, loops.clone()));
    }
    let mut other_addrs = Vec::new();
    for l in tls_listeners {
        let addr = l.local_addr()?;
        other_addrs.push(addr);
        tracing::info!("RESP over TLS on {addr}");
        let tls = Listening { tls: true, ..resp };
        tokio::spawn(net::accept_loop(shared.clone(), l, tls, loops.clone()));
    }
    let memcached = Listening {
        protocol: Protocol::Memcached,
        tls: shared.config.read().memcached_tls,
    };
    for l in mc_listeners {
        let addr = l.local_addr()?;
        other_addrs.push(addr);
        let over = if memcached.tls { " over TLS" } else { "" };
        tracing::info!("Memcached protocol{over} on {addr}");
        shared.mc_port.store(addr.port() as u64, Relaxed);
        tokio::spawn(net::accept_loop(
            shared.clone(),
            l,
            memcached,
            loops.clone(),
        ));
    }
    {
        let c = shared.config.read();
        let all: Vec<SocketAddr> = addrs.iter().chain(&other_addrs).copied().collect();
        listen::warn_exposure(&all, c.protected_mode, !shared.acl.default_nopass());
    }
    tokio::spawn(blocking.serve_changed(shared.engine.clone()));
    tokio::spawn(session::tracking::broadcast_changes(
        shared.tracking.clone(),
        shared.pubsub.clone(),
    ));
    Ok(ServerHandle { shared, addrs })
}

fn run_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| char::from_digit(rng.gen_range(0..16), 16).unwrap_or('0'))
        .collect()
}
