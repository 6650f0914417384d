//! INFO tiered: where values live (RAM, flash), the log, the device and
//! the collector, demotion and promotion, and the largest collections.

use crate::command::Shared;
use std::fmt::Write;

pub(super) fn tiered(s: &Shared, out: &mut String, largest: bool) {
    let t = s.engine.tiered_info();
    out.push_str("# Tiered\r\n");
    // Dragonfly's names.
    field!(out, "tiered_entries", t.values_in_flash);
    field!(out, "tiered_entries_bytes", t.cold_bytes);
    field!(out, "tiered_total_stashes", t.stashes);
    field!(out, "tiered_total_fetches", t.fetches);
    field!(out, "tiered_total_deletes", t.flash_deletes);
    field!(out, "tiered_total_uploads", t.uploads);
    field!(out, "tiered_allocated_bytes", t.allocated_bytes);
    field!(out, "tiered_capacity_bytes", t.capacity_bytes);
    field!(out, "tiered_pending_read_cnt", t.pending_reads);
    field!(out, "tiered_pending_stash_cnt", t.pending_stashes);
    field!(out, "tiered_ram_hits", t.ram_hits);
    field!(out, "tiered_ram_misses", t.ram_misses);
    field!(out, "tiered_ram_cool_hits", t.ram_cool_hits);
    // Redis on Flash's names and Strata's own.
    field!(out, "ram_hit_ratio", format!("{:.4}", t.ram_hit_ratio()));
    field!(out, "values_in_ram", t.values_in_ram);
    field!(out, "values_in_flash", t.values_in_flash);
    field!(out, "values_in_ram_bytes", t.hot_bytes);
    // Every byte written to the device, by writer, and per byte of what
    // clients wrote (keys, values, elements: `ServerStats`).
    field!(out, "flash_bytes_written", t.flash_bytes_written);
    field!(out, "flash_journal_device_bytes", t.journal_device_bytes);
    field!(out, "flash_demotion_device_bytes", t.demotion_device_bytes);
    field!(
        out,
        "flash_collector_device_bytes",
        t.collector_device_bytes
    );
    field!(
        out,
        "flash_checkpoint_device_bytes",
        t.checkpoint_device_bytes
    );
    let client = s.stats.client_write_bytes.get();
    field!(out, "client_write_bytes", client);
    let wa = match client {
        0 => 0.0,
        c => t.flash_bytes_written as f64 / c as f64,
    };
    field!(out, "flash_write_amplification", format!("{wa:.3}"));
    // Record bytes (no padding, headers or rolls) of demotion and the
    // journal, and the collector's moves.
    field!(out, "flash_stash_bytes", t.stash_bytes);
    field!(out, "flash_journal_bytes", t.journal_bytes);
    field!(out, "flash_gc_bytes_relocated", t.gc_bytes_relocated);
    field!(out, "flash_live_bytes", t.flash_live_bytes);
    field!(out, "flash_segments", t.segments);
    field!(out, "flash_segments_freed", t.segments_freed);
    field!(out, "flash_read_errors", t.read_errors);
    field!(out, "flash_write_errors", t.write_errors);
    field!(out, "flash_free_demotions", t.free_demotions);
    field!(out, "demotion_scanned", t.demotion_scanned);
    field!(out, "flash_io_backend", t.io_backend);
    field!(out, "flash_direct_io", t.direct_io as u8);
    field!(out, "index_bytes", t.index_bytes);
    // The keys' index per key, and how many more keys the RAM budget can
    // hold at that rate beside what RAM holds that cannot move to flash
    // (values in RAM can): both from the measured figures above.
    let per_key = t.index_bytes.checked_div(t.keys).unwrap_or(0);
    field!(out, "index_bytes_per_key", per_key);
    field!(out, "index_boxed_keys", t.index_boxed_keys);
    field!(out, "index_boxed_bytes", t.index_boxed_bytes);
    let pinned = t.ram_used.saturating_sub(t.hot_bytes);
    field!(
        out,
        "index_keys_room",
        t.maxmemory_ram
            .saturating_sub(pinned)
            .checked_div(per_key)
            .unwrap_or(0)
    );
    // Keys per type over all databases, and collections by tier: a packed
    // collection is one record, in RAM or on flash; a chunked one counts in
    // RAM (its directory is) and its bytes count where each part is.
    for (name, n) in ["string", "hash", "list", "set", "zset", "stream"]
        .iter()
        .zip(t.keys_by_type)
    {
        field!(out, format!("keys_{name}"), n);
    }
    field!(out, "collections_in_ram", t.collections_in_ram);
    field!(out, "collections_in_flash", t.collections_in_flash);
    field!(out, "collections_in_ram_bytes", t.collections_in_ram_bytes);
    field!(
        out,
        "collections_in_flash_bytes",
        t.collections_in_flash_bytes
    );
    field!(out, "chunks_in_ram", t.chunks_in_ram);
    field!(out, "chunks_in_flash", t.chunks_in_flash);
    field!(out, "chunk_loads", t.chunk_loads);
    field!(out, "chunks_written", t.chunks_written);
    field!(out, "part_changes_written", t.part_changes_written);
    field!(out, "part_chain_loads", t.part_chain_loads);
    field!(out, "part_chain_spilled_reads", t.part_chain_spilled_reads);
    field!(out, "part_peeks", t.part_peeks);
    field!(out, "part_reads_ahead", t.part_reads_ahead);
    field!(out, "part_blind_adds", t.part_blind_adds);
    field!(out, "part_chain_reclaims", t.part_chain_reclaims);
    field!(out, "ram_used_bytes", t.ram_used);
    field!(out, "maxmemory_ram", t.maxmemory_ram);
    if largest {
        // Measured by a scan of the index now (its cost reported beside).
        let t0 = std::time::Instant::now();
        let big = s.engine.largest_collection();
        let us = t0.elapsed().as_micros();
        match big {
            Some(b) => {
                field!(out, "largest_collection_key", escape(&b.key));
                field!(out, "largest_collection_db", b.db);
                field!(out, "largest_collection_type", b.vtype.name());
                field!(out, "largest_collection_elements", b.elements);
                field!(out, "largest_collection_bytes", b.bytes);
            }
            None => {
                field!(out, "largest_collection_elements", 0);
            }
        }
        field!(out, "largest_collection_scan_us", us);
    }
}

/// A key as INFO can show it on one line: printable ASCII as is,
/// backslash, quotes, `:` and `,` and every other byte as `\xNN`.
fn escape(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_graphic() && !matches!(b, b'\\' | b'"' | b'\'' | b':' | b',') {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}
