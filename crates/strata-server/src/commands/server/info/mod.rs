//! INFO: renders the sections server, clients, memory, persistence, stats,
//! replication, cpu, keyspace and tiered in Redis's `field:value` format. Field names are
//! fixed here and only here. Every figure is read from a counter or gauge
//! kept where the event happens (engine `Stats`, `ServerStats`, the
//! counting allocator), never estimated.

use crate::command::Shared;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

pub use crate::base::process::REDIS_VERSION;

const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "errorstats",
    "keyspace",
    "tiered",
    "commandstats",
    "latencystats",
];

/// Renders the requested sections (empty, "default", "all" or
/// "everything" = every section).
pub fn render(shared: &Shared, requested: &[String]) -> String {
    let all = requested.is_empty()
        || requested
            .iter()
            .any(|s| s == "all" || s == "everything" || s == "default");
    // As Redis: "default" leaves out the per-command sections.
    let every = requested.iter().any(|s| s == "all" || s == "everything");
    let mut out = String::new();
    for s in SECTIONS {
        let per_command = matches!(*s, "commandstats" | "latencystats");
        let named = requested.iter().any(|r| r == s);
        if (!all || (per_command && !every)) && !named {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        match *s {
            "server" => server(shared, &mut out),
            "clients" => clients(shared, &mut out),
            "memory" => memory(shared, &mut out),
            "persistence" => persistence(shared, &mut out),
            "stats" => stats(shared, &mut out),
            "replication" => replication(shared, &mut out),
            "cpu" => cpu(&mut out),
            "errorstats" => errorstats(shared, &mut out),
            "keyspace" => keyspace(shared, &mut out),
            "commandstats" => commandstats(shared, &mut out),
            "latencystats" => latencystats(shared, &mut out),
            // The largest collection takes a scan of the index: only
            // when the section is asked for by name.
            _ => tiered(shared, &mut out, requested.iter().any(|r| r == "tiered")),
        }
    }
    out
}

macro_rules! field {
    ($out:expr, $name:expr, $value:expr) => {
        let _ = write!($out, "{}:{}\r\n", $name, $value);
    };
}

mod tiered;
use tiered::tiered;

use crate::base::process::{cpu_times, seconds_micros};

fn cpu(out: &mut String) {
    let [(user, sys), (cuser, csys)] = cpu_times();
    out.push_str("# CPU\r\n");
    field!(out, "used_cpu_sys", seconds_micros(sys));
    field!(out, "used_cpu_user", seconds_micros(user));
    field!(out, "used_cpu_sys_children", seconds_micros(csys));
    field!(out, "used_cpu_user_children", seconds_micros(cuser));
}

fn server(s: &Shared, out: &mut String) {
    let c = s.config.read();
    let uptime = s.started.elapsed().as_secs();
    out.push_str("# Server\r\n");
    field!(out, "redis_version", REDIS_VERSION);
    field!(out, "strata_version", env!("CARGO_PKG_VERSION"));
    field!(out, "redis_mode", "standalone");
    field!(out, "os", std::env::consts::OS);
    field!(out, "arch_bits", usize::BITS);
    field!(out, "multiplexing_api", "tokio");
    field!(out, "process_id", std::process::id());
    field!(out, "run_id", s.run_id);
    field!(out, "tcp_port", s.tcp_port.load(Relaxed));
    field!(
        out,
        "server_time_usec",
        strata_engine::clock::now_ms() * 1000
    );
    field!(out, "uptime_in_seconds", uptime);
    field!(out, "uptime_in_days", uptime / 86400);
    field!(out, "hz", c.hz);
    field!(out, "io_threads_active", 0);
    field!(out, "threads", c.threads);
    field!(out, "server_runtime", c.server_runtime);
    if let Some(pool) = s.loops.get() {
        let (active, conns, moved) = pool.info();
        let scaling = if pool.scaling() { "auto" } else { "off" };
        field!(out, "loop_scaling", scaling);
        field!(out, "loops_active", active);
        let conns: Vec<String> = conns.iter().map(|c| c.to_string()).collect();
        field!(out, "loop_connections", conns.join(","));
        field!(out, "loop_migrations", moved);
    }
    field!(
        out,
        "executable",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    field!(
        out,
        "config_file",
        s.config_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
}

fn clients(s: &Shared, out: &mut String) {
    let c = s.config.read();
    out.push_str("# Clients\r\n");
    field!(out, "connected_clients", s.clients.count());
    field!(out, "maxclients", c.maxclients);
    field!(
        out,
        "blocked_clients",
        s.blocking.blocked_clients() + s.pause.waiting.load(std::sync::atomic::Ordering::Relaxed)
    );
}

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2}G", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.2}M", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else {
        format!("{bytes}B")
    }
}

fn memory(s: &Shared, out: &mut String) {
    let c = s.config.read();
    let used = crate::base::alloc::allocated_bytes().unwrap_or_else(|| s.engine.ram_used());
    let rss = crate::base::alloc::rss_bytes();
    let t = s.engine.tiered_info();
    out.push_str("# Memory\r\n");
    field!(out, "used_memory", used);
    field!(out, "used_memory_human", human(used));
    field!(
        out,
        "used_memory_peak",
        crate::base::alloc::peak_bytes().unwrap_or(used)
    );
    field!(out, "used_memory_rss", rss);
    field!(out, "used_memory_rss_human", human(rss));
    field!(out, "used_memory_dataset", t.index_bytes + t.hot_bytes);
    let a = crate::base::alloc::allocator_stats();
    if let Some(a) = &a {
        field!(out, "allocator_allocated", a.allocated);
        field!(out, "allocator_active", a.active);
        field!(out, "allocator_resident", a.resident);
    }
    field!(
        out,
        "mem_clients_normal",
        crate::services::clients::buffers::CLIENT_BUFFERS
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    let counts = &s.scripts.counts;
    field!(
        out,
        "number_of_cached_scripts",
        counts.scripts.load(std::sync::atomic::Ordering::Relaxed)
    );
    field!(
        out,
        "number_of_functions",
        counts.functions.load(std::sync::atomic::Ordering::Relaxed)
    );
    field!(
        out,
        "number_of_libraries",
        counts.libraries.load(std::sync::atomic::Ordering::Relaxed)
    );
    field!(out, "maxmemory", c.maxmemory);
    field!(out, "maxmemory_human", human(c.maxmemory));
    field!(out, "maxmemory_policy", c.maxmemory_policy.as_str());
    field!(out, "maxmemory_ram", c.maxmemory_ram);
    field!(out, "maxmemory_ram_human", human(c.maxmemory_ram));
    // As Redis: what the allocator's pages hold beyond the bytes asked for
    // (fragmentation), its resident pages beyond the active ones (dirty
    // pages not yet purged), and the process's RSS beyond the allocator's.
    let ratio = |a: u64, b: u64| format!("{:.2}", if b == 0 { 0.0 } else { a as f64 / b as f64 });
    let over = |a: u64, b: u64| a as i64 - b as i64;
    if let Some(a) = &a {
        field!(out, "allocator_frag_ratio", ratio(a.active, a.allocated));
        field!(out, "allocator_frag_bytes", over(a.active, a.allocated));
        field!(out, "allocator_rss_ratio", ratio(a.resident, a.active));
        field!(out, "allocator_rss_bytes", over(a.resident, a.active));
        field!(out, "rss_overhead_ratio", ratio(rss, a.resident));
        field!(out, "rss_overhead_bytes", over(rss, a.resident));
    }
    field!(out, "mem_fragmentation_ratio", ratio(rss, used));
    field!(out, "mem_fragmentation_bytes", over(rss, used));
    field!(out, "mem_allocator", crate::base::alloc::allocator_name());
    field!(out, "active_defrag_running", s.engine.defrag_info().2 as u8);
    field!(out, "lazyfree_pending_objects", s.engine.lazyfree_pending());
    // Eviction counts all of used_memory (Redis leaves out its AOF and
    // replication buffers; the journal's queue is counted here).
    field!(out, "mem_not_counted_for_evict", 0);
}

fn persistence(s: &Shared, out: &mut String) {
    let p = s.engine.persist_info();
    let r = &p.recovery;
    out.push_str("# Persistence\r\n");
    field!(out, "loading", p.loading as u8);
    field!(out, "async_loading", 0);
    // Redis's RDB fields describe Strata's checkpoints (the index image).
    field!(
        out,
        "rdb_changes_since_last_save",
        p.changes_since_checkpoint
    );
    field!(out, "rdb_bgsave_in_progress", p.checkpoint_running as u8);
    field!(out, "rdb_last_save_time", p.last_checkpoint_ms / 1000);
    field!(
        out,
        "rdb_last_bgsave_status",
        if p.last_checkpoint_error.is_some() {
            "err"
        } else {
            "ok"
        }
    );
    field!(
        out,
        "rdb_last_bgsave_time_sec",
        p.last_checkpoint_duration_ms / 1000
    );
    field!(out, "rdb_saves", p.checkpoints);
    field!(out, "aof_enabled", p.appendonly as u8);
    // BGREWRITEAOF takes a checkpoint: a rewrite is in progress while one is.
    field!(out, "aof_rewrite_in_progress", p.checkpoint_running as u8);
    field!(
        out,
        "aof_last_write_status",
        if p.status == strata_engine::LogStatus::Ok {
            "ok"
        } else {
            "err"
        }
    );
    field!(out, "aof_fsync", fsync_name(p.fsync));
    field!(out, "aof_last_fsync_time", p.last_fsync_ms / 1000);
    // Strata's own: the journal, checkpoints and the last recovery.
    field!(out, "log_status", log_status_name(p.status));
    if let Some(e) = &p.error {
        field!(out, "log_error", e.replace(['\r', '\n'], " "));
    }
    field!(out, "journal_pending", p.journal_queued);
    field!(out, "journal_records", p.journal_records);
    field!(out, "journal_bytes", p.journal_record_bytes);
    field!(out, "journal_change_records", p.journal_change_records);
    field!(out, "journal_change_bytes", p.journal_change_bytes);
    field!(out, "journal_batches", p.journal_batches);
    field!(out, "journal_atomic_batches", p.journal_atomic_batches);
    field!(out, "journal_fsyncs", p.fsyncs);
    field!(
        out,
        "journal_fsync_avg_us",
        p.fsync_micros.checked_div(p.fsyncs).unwrap_or(0)
    );
    field!(out, "checkpoint_in_progress", p.checkpoint_running as u8);
    field!(out, "last_checkpoint_time", p.last_checkpoint_ms / 1000);
    field!(out, "last_checkpoint_keys", p.last_checkpoint_entries);
    field!(out, "last_checkpoint_bytes", p.last_checkpoint_bytes);
    field!(
        out,
        "last_checkpoint_duration_ms",
        p.last_checkpoint_duration_ms
    );
    field!(out, "checkpoints", p.checkpoints);
    field!(
        out,
        "log_bytes_since_checkpoint",
        p.log_bytes_since_checkpoint
    );
    field!(
        out,
        "recovery_source",
        if r.discarded_unclean {
            "discarded"
        } else if r.from_checkpoint {
            "checkpoint"
        } else if r.segments_scanned > 0 {
            "log_scan"
        } else {
            "empty"
        }
    );
    field!(out, "recovery_duration_ms", r.duration_ms);
    field!(out, "recovery_keys", r.keys);
    field!(
        out,
        "recovery_keys_per_sec",
        (r.keys * 1000)
            .checked_div(r.duration_ms.max(1))
            .unwrap_or(0)
    );
    field!(out, "recovery_checkpoint_keys", r.checkpoint_entries);
    field!(out, "recovery_segments_scanned", r.segments_scanned);
    field!(out, "recovery_bytes_scanned", r.bytes_scanned);
    field!(out, "recovery_records_replayed", r.records_replayed);
    field!(out, "recovery_corrupt_records", r.corrupt_records);
    field!(out, "recovery_torn_tail_bytes", r.torn_tail_bytes);
    field!(out, "recovery_torn_batch_records", r.torn_batch_records);
    field!(
        out,
        "recovery_aborted_batch_records",
        r.aborted_batch_records
    );
    field!(out, "recovery_missing_keys", r.missing_segment_entries);
    if let Some(e) = &r.checkpoint_error {
        field!(
            out,
            "recovery_checkpoint_error",
            e.replace(['\r', '\n'], " ")
        );
    }
}

fn fsync_name(p: strata_engine::FsyncPolicy) -> &'static str {
    match p {
        strata_engine::FsyncPolicy::Always => "always",
        strata_engine::FsyncPolicy::EverySec => "everysec",
        strata_engine::FsyncPolicy::No => "no",
    }
}

fn log_status_name(s: strata_engine::LogStatus) -> &'static str {
    match s {
        strata_engine::LogStatus::Ok => "ok",
        strata_engine::LogStatus::Full => "full",
        strata_engine::LogStatus::NoSpace => "no_space",
        strata_engine::LogStatus::Poisoned => "poisoned",
    }
}

/// A master without replicas (Strata has no replication): Redis's fields
/// with the values they have then, the replication id being the run id.
fn replication(s: &Shared, out: &mut String) {
    out.push_str("# Replication\r\n");
    field!(out, "role", "master");
    field!(out, "connected_slaves", 0);
    field!(out, "master_failover_state", "no-failover");
    field!(out, "master_replid", s.run_id);
    field!(out, "master_replid2", "0".repeat(40));
    field!(out, "master_repl_offset", 0);
    field!(out, "second_repl_offset", -1);
    field!(out, "repl_backlog_active", 0);
    field!(out, "repl_backlog_size", 1048576);
    field!(out, "repl_backlog_first_byte_offset", 0);
    field!(out, "repl_backlog_histlen", 0);
}

fn stats(s: &Shared, out: &mut String) {
    use crate::services::pubsub::Kind;
    let st = &s.stats;
    let t = s.engine.tiered_info();
    out.push_str("# Stats\r\n");
    field!(
        out,
        "total_connections_received",
        st.connections_received.load(Relaxed)
    );
    field!(out, "total_commands_processed", st.commands_processed.get());
    field!(
        out,
        "total_net_input_bytes",
        st.net_input_bytes.load(Relaxed)
    );
    field!(
        out,
        "total_net_output_bytes",
        st.net_output_bytes.load(Relaxed)
    );
    field!(
        out,
        "rejected_connections",
        st.rejected_connections.load(Relaxed)
    );
    field!(out, "expired_keys", t.expired_keys);
    field!(out, "evicted_keys", t.evicted_keys);
    field!(out, "evicted_clients", st.evicted_clients.load(Relaxed));
    field!(out, "keyspace_hits", t.keyspace_hits);
    field!(out, "keyspace_misses", t.keyspace_misses);
    // Active defragmentation moves whole values, one per key.
    let (hits, misses, _) = s.engine.defrag_info();
    field!(out, "active_defrag_hits", hits);
    field!(out, "active_defrag_misses", misses);
    field!(out, "active_defrag_key_hits", hits);
    field!(out, "active_defrag_key_misses", misses);
    field!(out, "total_error_replies", s.errorstats.total());
    let ps = &s.pubsub;
    field!(out, "pubsub_channels", ps.active(Kind::Channel, None).len());
    field!(out, "pubsub_patterns", ps.patterns());
    field!(
        out,
        "pubsubshard_channels",
        ps.active(Kind::Shard, None).len()
    );
    field!(out, "unknown_commands", st.unknown_commands.load(Relaxed));
    field!(out, "oom_rejections", st.oom_rejections.load(Relaxed));
    // Writes that waited for room instead of being refused: how often,
    // for what (RAM: demotion or the journal; the journal's queue; the
    // flash log's collector), and how long in all.
    field!(
        out,
        "write_backpressure_waits",
        st.write_waits.load(Relaxed)
    );
    field!(
        out,
        "write_backpressure_waits_ram",
        st.write_waits_ram.load(Relaxed)
    );
    field!(
        out,
        "write_backpressure_waits_journal",
        st.write_waits_journal.load(Relaxed)
    );
    field!(
        out,
        "write_backpressure_waits_flash",
        st.write_waits_flash.load(Relaxed)
    );
    field!(
        out,
        "write_backpressure_wait_ms",
        st.write_wait_micros.load(Relaxed) / 1000
    );
    // (Redis 7.2's names.)
    field!(
        out,
        "client_query_buffer_limit_disconnections",
        st.query_buffer_limit_disconnections.load(Relaxed)
    );
    field!(
        out,
        "client_output_buffer_limit_disconnections",
        st.output_buffer_limit_disconnections.load(Relaxed)
    );
}

fn keyspace(s: &Shared, out: &mut String) {
    out.push_str("# Keyspace\r\n");
    for db in 0..s.engine.databases() {
        let (keys, expires, avg_ttl) = s.engine.db_stats(db);
        if keys > 0 {
            let _ = write!(
                out,
                "db{db}:keys={keys},expires={expires},avg_ttl={avg_ttl}\r\n"
            );
        }
    }
}

/// `cmdstat_<name>:calls=..,usec=..,usec_per_call=..,rejected_calls=..,failed_calls=..`
fn errorstats(shared: &Shared, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    for (word, n) in shared.errorstats.by_prefix() {
        out.push_str(&format!("errorstat_{word}:count={n}\r\n"));
    }
}

fn commandstats(shared: &Shared, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for f in shared.cmdstats.figures() {
        let per_call = if f.calls > 0 {
            f.usec as f64 / f.calls as f64
        } else {
            0.0
        };
        let _ = write!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
            f.name, f.calls, f.usec, per_call, f.rejected, f.failed
        );
    }
}

/// `latency_percentiles_usec_<name>:p50=..,p99=..,p99.9=..` (bucket upper
/// bounds of the power-of-two histogram).
fn latencystats(shared: &Shared, out: &mut String) {
    out.push_str("# Latencystats\r\n");
    for f in shared.cmdstats.figures().iter().filter(|f| f.calls > 0) {
        let _ = write!(
            out,
            "latency_percentiles_usec_{}:p50={:.3},p99={:.3},p99.9={:.3}\r\n",
            f.name,
            f.percentile(50.0),
            f.percentile(99.0),
            f.percentile(99.9)
        );
    }
}
