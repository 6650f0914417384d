//! The server's shared state (`Shared`): the engine and every service a
//! command may use, one per server, behind an `Arc` each connection holds;
//! and the server-level counters and refusals that go with it.

use crate::services::clients::{buffers, Clients, Pause};
use crate::services::config::{self, Config};
use crate::services::engine_config::{encoding_limits, eviction, fsync_policy, lfu, promote};
use crate::services::metrics::slowlog::SlowLog;
use crate::services::{self, acl, metrics};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::{Admission, Engine, WaitFor};
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
    /// Bytes of the keys, values, elements and options of the writes
    /// clients made (the arguments after a write command's name, once it
    /// ran without an error reply; a memcached store's key and data): the
    /// divisor of INFO's `flash_write_amplification`. Striped, as
    /// `commands_processed`.
    pub client_write_bytes: strata_engine::stats::Striped,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub oom_rejections: AtomicU64,
    /// Times a write waited for room, by what it waited for (RAM: demotion
    /// or the journal; the journal's queue; the flash log), and the
    /// microseconds writes waited in all.
    pub write_waits: AtomicU64,
    pub write_waits_ram: AtomicU64,
    pub write_waits_journal: AtomicU64,
    pub write_waits_flash: AtomicU64,
    pub write_wait_micros: AtomicU64,
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
    pub mc: metrics::memcache::McStats,
    pub slowlog: SlowLog,
    /// MONITOR clients.
    pub monitors: services::monitor::Monitors,
    /// The latency monitor (LATENCY LATEST / HISTORY / RESET).
    pub latency: Arc<metrics::latency::LatencyMonitor>,
    /// Per-command calls, time, errors and latency (INFO commandstats).
    pub cmdstats: metrics::commands::CommandStats,
    pub errorstats: metrics::errors::ErrorStats,
    /// CLIENT PAUSE in force.
    pub pause: Pause,
    /// Clients blocked on lists and sorted sets (BLPOP ...).
    pub blocking: Arc<services::blocking::Blocking>,
    /// Channels, patterns and shard channels and their subscribers.
    pub pubsub: Arc<services::pubsub::PubSub>,
    /// The Lua VM and the script cache.
    pub scripts: services::scripts::Scripts,
    /// Keyspace notifications (the engine's key observer).
    pub notifier: Arc<services::notify::Notifier>,
    /// Client tracking (client-side caching).
    pub tracking: Arc<services::tracking::Tracking>,
    pub started: Instant,
    /// Bytes allocated when the server was ready (MEMORY STATS).
    pub startup_allocated: u64,
    pub run_id: String,
    pub tcp_port: AtomicU64,
    /// The memcached listener's port (0 = off).
    pub mc_port: AtomicU64,
    /// The TLS configuration new TLS connections handshake with.
    pub tls: services::tls::Tls,
    pub(crate) max_bulk_len: AtomicUsize,
    pub(crate) idle_timeout_secs: AtomicU64,
    /// `client-output-buffer-limit`, per class.
    pub out_limits: buffers::OutputLimits,
    /// `client-query-buffer-limit`: bytes of unparsed input a client may
    /// hold.
    pub query_limit: AtomicU64,
    /// `maxmemory-clients` in bytes (0 = none), and the lock one evictor
    /// at a time holds (`connection::guards::evict_clients`).
    pub clients_limit: AtomicU64,
    pub evicting: parking_lot::Mutex<()>,
    pub(crate) shutdown: Notify,
    pub(crate) shutting_down: AtomicBool,
    /// Set by SHUTDOWN: how to save; `main` waits for it beside signals.
    pub(crate) shutdown_request: parking_lot::Mutex<Option<strata_engine::ShutdownSave>>,
    pub(crate) shutdown_requested: Notify,
    pub(crate) log_reloader: std::sync::OnceLock<LogReloader>,
    /// The connection loops (DEBUG LOOPS, INFO), once started.
    pub loops: std::sync::OnceLock<Arc<dyn LoopControl>>,
    /// The lock on `dir` (`strata_engine::flash::lock`), held for the
    /// server's life.
    pub(crate) _dir_lock: Option<strata_engine::flash::lock::DirLock>,
    /// When (ms since the start) the last cross-protocol attack was
    /// logged: once a minute at most, as Redis.
    pub(crate) security_warned: AtomicU64,
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
        if first == Admission::Admit {
            return Ok(());
        }
        let started = Instant::now();
        let deadline = started + ROOM_WAIT_LIMIT;
        let mut admission = first;
        let r = loop {
            match admission {
                Admission::Admit => break Ok(()),
                Admission::Wait(why) if Instant::now() < deadline => {
                    self.stats.write_waits.fetch_add(1, Relaxed);
                    let by = match why {
                        WaitFor::Ram => &self.stats.write_waits_ram,
                        WaitFor::Journal => &self.stats.write_waits_journal,
                        WaitFor::Flash => &self.stats.write_waits_flash,
                    };
                    by.fetch_add(1, Relaxed);
                    let _ = tokio::time::timeout(
                        Duration::from_millis(10),
                        self.engine.wait_for_room(),
                    )
                    .await;
                }
                Admission::Wait(_) | Admission::OutOfMemory => break Err(Refusal::OutOfMemory),
                Admission::LogUnavailable => {
                    break Err(Refusal::Log(self.engine.log_error().unwrap_or_default()))
                }
            }
            admission = self.engine.admission();
        };
        self.stats
            .write_wait_micros
            .fetch_add(started.elapsed().as_micros() as u64, Relaxed);
        r
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
        *self.pubsub.limit.lock() = services::pubsub::Limit {
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

/// What the commands below the connection loops may ask of them (DEBUG
/// LOOPS, INFO): `net::loops::Pool` answers.
pub trait LoopControl: Send + Sync {
    /// DEBUG LOOPS k: k loops take connections (0: `loop-scaling` chooses).
    fn force(&self, k: usize) -> Result<(), String>;
    /// Loops active, connections per loop, connections moved.
    fn info(&self) -> (usize, Vec<usize>, u64);
    /// Whether `loop-scaling` is `auto`.
    fn scaling(&self) -> bool;
}
