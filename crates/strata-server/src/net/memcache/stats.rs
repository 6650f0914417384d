//! The memcached side's own counters (`McStats`: those the engine does
//! not keep) and the commands that report: `stats`, `stats settings` and
//! `lru_crawler metadump`.

use super::{DB, VERSION};
use crate::command::Shared;
use crate::net::stream::Stream;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use strata_protocol::memcache::reply as mr;

use crate::services::metrics::memcache::McStats;

pub(super) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

impl McStats {
    /// `stats reset`: every counter back to 0 (the open-connection gauge
    /// stays).
    fn reset(&self) {
        for c in [
            &self.total_connections,
            &self.cmd_get,
            &self.cmd_set,
            &self.cmd_touch,
            &self.cmd_flush,
            &self.get_hits,
            &self.get_misses,
            &self.delete_hits,
            &self.delete_misses,
            &self.incr_hits,
            &self.incr_misses,
            &self.decr_hits,
            &self.decr_misses,
            &self.cas_hits,
            &self.cas_misses,
            &self.cas_badval,
            &self.touch_hits,
            &self.touch_misses,
            &self.total_items,
            &self.bytes_read,
            &self.bytes_written,
        ] {
            c.store(0, Relaxed);
        }
    }

    /// incr/decr (text or meta) found its key or not.
    pub(super) fn count_arith(&self, incr: bool, hit: bool) {
        inc(match (incr, hit) {
            (true, true) => &self.incr_hits,
            (true, false) => &self.incr_misses,
            (false, true) => &self.decr_hits,
            (false, false) => &self.decr_misses,
        });
    }
}

/// `lru_crawler metadump`: a line per live item of database 0 in
/// memcached's format (`key=<uri-encoded> exp=<unix s or -1> la=<unix s>
/// cas=… fetch=yes|no cls=1 size=<value bytes>`), then `END`. The keyspace
/// is scanned in batches and written as it goes; items changed meanwhile
/// may or may not appear, as with memcached's crawler. Returns the bytes
/// written.
pub(super) async fn metadump(shared: &Shared, stream: &mut Stream) -> std::io::Result<u64> {
    let now_s = strata_engine::clock::now_ms() / 1000;
    let mut cursor = 0;
    let mut chunk = BytesMut::new();
    let mut written = 0;
    loop {
        let (next, keys) = shared.engine.scan(DB, cursor, 1024, |_, t| {
            t == strata_engine::ValueType::String
        });
        for key in keys {
            let Some(i) = shared.engine.key_info(DB, &key) else {
                continue;
            };
            chunk.extend_from_slice(b"key=");
            uri_encode(&mut chunk, &key);
            let exp = if i.expire_at_ms == 0 {
                "-1".to_string()
            } else {
                (i.expire_at_ms / 1000).to_string()
            };
            chunk.extend_from_slice(
                format!(
                    " exp={exp} la={} cas={} fetch={} cls=1 size={}\n",
                    now_s.saturating_sub(i.idle_secs),
                    i.cas,
                    if i.fetched { "yes" } else { "no" },
                    i.value_len
                )
                .as_bytes(),
            );
        }
        if next == 0 {
            break;
        }
        cursor = next;
        if chunk.len() >= 64 * 1024 {
            stream.send_all(&chunk).await?;
            written += chunk.len() as u64;
            chunk.clear();
        }
    }
    chunk.extend_from_slice(b"END\r\n");
    stream.send_all(&chunk).await?;
    Ok(written + chunk.len() as u64)
}

/// memcached's URI encoding of keys in metadump lines: every byte but
/// `A-Z a-z 0-9 - . _ ~` as `%XX`.
fn uri_encode(out: &mut BytesMut, key: &[u8]) {
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.extend_from_slice(&[b]);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
}

/// `stats` and `stats settings`.
pub(super) fn stats(shared: &Shared, args: &[Bytes], out: &mut BytesMut) {
    let mut lines: Vec<(&str, String)> = Vec::new();
    let mut put = |k: &'static str, v: String| lines.push((k, v));
    let cfg = shared.config.read().clone();
    match args.first().map(|a| &a[..]) {
        None => {
            let st = &shared.mc;
            let t = shared.engine.tiered_info();
            let g = |c: &AtomicU64| c.load(Relaxed).to_string();
            let now = strata_engine::clock::now_ms() / 1000;
            put("pid", std::process::id().to_string());
            put("uptime", shared.started.elapsed().as_secs().to_string());
            put("time", now.to_string());
            put("version", VERSION.to_string());
            put("libevent", "tokio".to_string());
            put(
                "pointer_size",
                (8 * std::mem::size_of::<usize>()).to_string(),
            );
            let [(user, sys), _] = crate::base::process::cpu_times();
            put("rusage_user", crate::base::process::seconds_micros(user));
            put("rusage_system", crate::base::process::seconds_micros(sys));
            put("curr_connections", g(&st.curr_connections));
            put("total_connections", g(&st.total_connections));
            put("cmd_get", g(&st.cmd_get));
            put("cmd_set", g(&st.cmd_set));
            put("cmd_flush", g(&st.cmd_flush));
            put("cmd_touch", g(&st.cmd_touch));
            put("get_hits", g(&st.get_hits));
            put("get_misses", g(&st.get_misses));
            put("get_expired", shared.engine.get_expired().to_string());
            put("delete_misses", g(&st.delete_misses));
            put("delete_hits", g(&st.delete_hits));
            put("incr_misses", g(&st.incr_misses));
            put("incr_hits", g(&st.incr_hits));
            put("decr_misses", g(&st.decr_misses));
            put("decr_hits", g(&st.decr_hits));
            put("cas_misses", g(&st.cas_misses));
            put("cas_hits", g(&st.cas_hits));
            put("cas_badval", g(&st.cas_badval));
            put("touch_hits", g(&st.touch_hits));
            put("touch_misses", g(&st.touch_misses));
            put("bytes_read", g(&st.bytes_read));
            put("bytes_written", g(&st.bytes_written));
            put("limit_maxbytes", limit_maxbytes(&cfg).to_string());
            put("threads", shared.threads().to_string());
            put("bytes", (t.hot_bytes + t.cold_bytes).to_string());
            put("curr_items", shared.engine.dbsize(DB).to_string());
            put("total_items", g(&st.total_items));
            put("evictions", t.evicted_keys.to_string());
            // Tiering, named like memcached's extstore counters where they map.
            put(
                "extstore_objects_written",
                (t.stashes + t.free_demotions).to_string(),
            );
            put("extstore_bytes_written", t.stash_bytes.to_string());
            put("extstore_objects_read", t.fetches.to_string());
            put("extstore_objects_used", t.values_in_flash.to_string());
            put("extstore_bytes_used", t.flash_live_bytes.to_string());
            put("extstore_limit_maxbytes", t.capacity_bytes.to_string());
            put("extstore_io_queue", t.pending_reads.to_string());
            put("get_extstore", t.ram_misses.to_string());
            put("get_aborted_extstore", t.read_errors.to_string());
            put("ram_hit_ratio", format!("{:.4}", t.ram_hit_ratio()));
            put("values_in_ram", t.values_in_ram.to_string());
            put("values_in_flash", t.values_in_flash.to_string());
        }
        Some(b"settings") => {
            put("maxbytes", limit_maxbytes(&cfg).to_string());
            put("maxconns", cfg.maxclients.to_string());
            put("tcpport", cfg.memcached_port.to_string());
            put("udpport", "0".to_string());
            put(
                "evictions",
                if cfg.maxmemory_policy_evicts() {
                    "on"
                } else {
                    "off"
                }
                .to_string(),
            );
            put("item_size_max", cfg.memcached_max_item_size.to_string());
            put("cas_enabled", "yes".to_string());
            put("num_threads", shared.threads().to_string());
            put("binding_protocol", "ascii".to_string());
            put("ext_item_size", cfg.tiering_min_value_size.to_string());
            put("ext_path", cfg.flash_dir().display().to_string());
            put("maxmemory_ram", cfg.maxmemory_ram.to_string());
        }
        // The slab groups describe memcached's slab allocator, which Strata
        // does not have: no slab classes (so no per-class lines), and the
        // memory the server holds (allocator-measured, as INFO used_memory)
        // as `total_malloced`. Monitoring tools (the Prometheus exporter
        // asks for `stats`, `stats slabs` and `stats items` in a row) get
        // well-formed answers.
        Some(b"items") => {}
        Some(b"slabs") => {
            put("active_slabs", "0".to_string());
            let used =
                crate::base::alloc::allocated_bytes().unwrap_or_else(|| shared.engine.ram_used());
            put("total_malloced", used.to_string());
        }
        Some(b"sizes") => put("sizes_status", "disabled".to_string()),
        Some(b"reset") => {
            shared.mc.reset();
            mr::line(out, "RESET");
            return;
        }
        Some(_) => {
            // conns, detail ...: not offered.
            mr::line(out, "ERROR");
            return;
        }
    }
    for (k, v) in lines {
        mr::line(out, &format!("STAT {k} {v}"));
    }
    mr::line(out, "END");
}

/// memcached's `limit_maxbytes`: the whole store's limit (`maxmemory`), or
/// the RAM budget when there is none.
fn limit_maxbytes(cfg: &crate::services::config::Config) -> u64 {
    if cfg.maxmemory > 0 {
        cfg.maxmemory
    } else {
        cfg.maxmemory_ram
    }
}
