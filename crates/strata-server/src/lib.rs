//! # strata-server
//!
//! The only crate that knows both the protocols and the engine: it accepts
//! connections, decodes requests, runs commands on the tiered engine and
//! renders replies and INFO.
//!
//! Floors, each importing only the floors below it (ARCHITECTURE.md draws
//! them): `net` (listeners, connection loops, the RESP and memcached
//! connections) → `exec` (dispatch, transactions, scripts) → `commands`
//! (the families) → `command` (what a handler gets: `Ctx`, `ConnState`,
//! `Shared`) → `services` (acl, config, clients, metrics, pub/sub ...) →
//! `registry` (every command's facts) → `base` (replies, arguments,
//! glob, allocator, RDB). This file only composes them (`start`).
//!
//! Threads: the main thread's runtime accepts (`net`); `threads` event
//! loops, each a tokio `current_thread` runtime, serve the connections
//! (`net::loops`; `server-runtime shared`: one multi-thread runtime
//! instead); the engine adds its background and journal threads. No lock
//! is global on the request path: the engine index is sharded, each
//! client has its own handle, and server counters are atomics.

pub mod base;
pub mod command;
pub mod commands;
pub mod exec;
pub mod net;
pub mod registry;
pub mod services;

pub use services::engine_config::engine_config;

use command::{ServerStats, Shared};
use net::loops::{self, Protocol};
use net::{listen, memcache, Listening};
use parking_lot::RwLock;
use services::clients::Clients;
use services::config::Config;
use services::metrics::{self, slowlog::SlowLog};
use services::{acl, blocking, notify, pubsub, tracking};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::Engine;
use tokio::sync::Notify;

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
/// called inside a tokio runtime. In order: the data directory's lock,
/// the engine (recovery runs in the background: commands get -LOADING
/// meanwhile), the listeners, the users, the shared state, the loops,
/// the accept loops.
pub async fn start(
    config: Config,
    config_file: Option<std::path::PathBuf>,
) -> std::io::Result<ServerHandle> {
    std::fs::create_dir_all(&config.dir)?;
    let dir_lock = lock_dir(&config)?;
    let (engine, latency) = open_engine(&config)?;
    let (bound, tls) = bind(&config)?;
    let acl = users(&config)?;
    let shared = compose(config, config_file, engine, latency, acl, tls, dir_lock);
    shared.apply_config();
    // The TSC clock commands are timed with calibrates on its first use
    // (~0.6 ms here): before the first command, not during it.
    let _ = quanta::Instant::now();
    let per_core = shared.config.read().server_runtime == "per-core";
    let scaling = shared.config.read().loop_scaling == "auto";
    let loops = Arc::new(loops::Loops::start(shared.threads(), per_core, scaling)?);
    let _ = shared
        .loops
        .set(loops.pool().clone() as Arc<dyn command::LoopControl>);
    let addrs = accept(&shared, bound, &loops)?;
    tokio::spawn(shared.blocking.clone().serve_changed(shared.engine.clone()));
    tokio::spawn(tracking::broadcast_changes(
        shared.tracking.clone(),
        shared.pubsub.clone(),
    ));
    Ok(ServerHandle { shared, addrs })
}

/// One server per data directory (the engine locks its flash-dir too,
/// which may be `dir` itself: then its lock is the one).
fn lock_dir(config: &Config) -> std::io::Result<Option<strata_engine::flash::lock::DirLock>> {
    let same = |a: &std::path::Path, b: &std::path::Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
    Ok(if same(&config.dir, &config.flash_dir()) {
        None
    } else {
        Some(strata_engine::flash::lock::DirLock::acquire(
            &config.dir,
            "dir",
        )?)
    })
}

/// The engine, with the latency monitor it reports to.
fn open_engine(
    config: &Config,
) -> std::io::Result<(Engine, Arc<metrics::latency::LatencyMonitor>)> {
    let latency: Arc<metrics::latency::LatencyMonitor> = Arc::default();
    latency
        .threshold_ms
        .store(config.latency_monitor_threshold, Relaxed);
    let mut ecfg = engine_config(config);
    let sink = latency.clone();
    ecfg.latency_sink = Some(Arc::new(move |event, ms| sink.sample_if_needed(event, ms)));
    let engine = Engine::start(ecfg).map_err(std::io::Error::other)?;
    Ok((engine, latency))
}

/// The listeners the configuration asks for, bound.
struct Bound {
    resp: Vec<tokio::net::TcpListener>,
    resp_tls: Vec<tokio::net::TcpListener>,
    memcached: Vec<tokio::net::TcpListener>,
}

/// Binds the listeners, with TLS's configuration when one speaks TLS
/// (before the users are read, as Redis: a port in use fails the start
/// first).
fn bind(config: &Config) -> std::io::Result<(Bound, services::tls::Tls)> {
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
    let tls = services::tls::Tls::default();
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
    let bound = Bound {
        resp: listeners,
        resp_tls: tls_listeners,
        memcached: mc_listeners,
    };
    Ok((bound, tls))
}

/// The command registry, then the ACL users of the configuration (its
/// `user` lines or `aclfile`), `rename-command`, and the memcached port's
/// refusal while a password guards the server.
fn users(config: &Config) -> std::io::Result<acl::Acl> {
    commands::install();
    registry::describe::init();
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
    registry::rename(&config.renames).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("rename-command: {e}"),
        )
    })?;
    let guarded = config.requirepass.is_some() || acl.guarded();
    if let Some(refusal) = memcache::refuse_unauthenticated(config, guarded) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            refusal,
        ));
    }
    Ok(acl)
}

/// The shared state: the engine and every service.
fn compose(
    config: Config,
    config_file: Option<std::path::PathBuf>,
    engine: Engine,
    latency: Arc<metrics::latency::LatencyMonitor>,
    acl: acl::Acl,
    tls: services::tls::Tls,
    dir_lock: Option<strata_engine::flash::lock::DirLock>,
) -> Arc<Shared> {
    let pubsub: Arc<pubsub::PubSub> = Arc::default();
    let tracking: Arc<tracking::Tracking> = Arc::default();
    let blocking: Arc<blocking::Blocking> = Arc::default();
    let notifier = Arc::new(notify::Notifier::new(
        pubsub.clone(),
        tracking.clone(),
        blocking.clone(),
    ));
    engine.set_observer(notifier.clone());
    Arc::new(Shared {
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
        mc: metrics::memcache::McStats::default(),
        started: Instant::now(),
        startup_allocated: base::alloc::allocated_bytes().unwrap_or(0),
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
    })
}

/// Starts an accept loop per listener; the addresses clients use.
fn accept(
    shared: &Arc<Shared>,
    bound: Bound,
    loops: &Arc<loops::Loops>,
) -> std::io::Result<Vec<SocketAddr>> {
    let mut addrs = Vec::new();
    let resp = Listening {
        protocol: Protocol::Resp,
        tls: false,
    };
    for l in bound.resp {
        let addr = l.local_addr()?;
        shared.tcp_port.store(addr.port() as u64, Relaxed);
        addrs.push(addr);
        tokio::spawn(net::accept_loop(shared.clone(), l, resp, loops.clone()));
    }
    let mut other_addrs = Vec::new();
    for l in bound.resp_tls {
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
    for l in bound.memcached {
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
    Ok(addrs)
}

fn run_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| char::from_digit(rng.gen_range(0..16), 16).unwrap_or('0'))
        .collect()
}
