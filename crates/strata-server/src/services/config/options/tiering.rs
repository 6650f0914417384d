//! RAM and flash: the memory limits, the flash log, and tiering.

use super::super::*;

pub(super) static OPTIONS: &[OptionDef] = &[
    OptionDef {
        name: "maxmemory",
        default: "0",
        doc:
            "bytes of data in RAM + flash before maxmemory-policy applies; 0 = up to flash-max-size",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory = parse_size_arg(v, 0, u64::MAX)?;
            Ok(())
        }),
        get: |c| c.maxmemory.to_string(),
    },
    OptionDef {
        name: "maxmemory-ram",
        default: "50%",
        doc: "bytes of RAM for keys and hot values, or N% of physical RAM",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_ram = match v.strip_suffix('%') {
                Some(pct) => {
                    let pct = parse_uint(pct, 1, 100, "percentage")
                        .map_err(|_| format!("invalid percentage '{v}' (expected 1% to 100%)"))?;
                    percent_of_ram(pct)
                }
                None => parse_size_arg(v, 1, u64::MAX)?,
            };
            Ok(())
        }),
        get: |c| c.maxmemory_ram.to_string(),
    },
    OptionDef {
        name: "maxmemory-clients",
        default: "0",
        doc: "bytes (or N% of maxmemory-ram) all clients' buffers may hold; past it the clients holding most are closed, as Redis 7 (0 = no limit)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_clients = match v.strip_suffix('%') {
                Some(pct) => ClientsLimit::Percent(
                    parse_uint(pct, 1, 100, "percentage")
                        .map_err(|_| format!("invalid percentage '{v}' (expected 1% to 100%)"))?,
                ),
                None => ClientsLimit::Bytes(parse_size_arg(v, 0, i64::MAX as u64)?),
            };
            Ok(())
        }),
        get: |c| match c.maxmemory_clients {
            ClientsLimit::Bytes(b) => b.to_string(),
            ClientsLimit::Percent(p) => format!("{p}%"),
        },
    },
    OptionDef {
        name: "maxmemory-policy",
        default: "noeviction",
        doc: "when maxmemory is reached: noeviction, allkeys-lru, allkeys-lfu, allkeys-random, \
              volatile-lru, volatile-lfu, volatile-random or volatile-ttl",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_policy = v.parse()?;
            Ok(())
        }),
        get: |c| c.maxmemory_policy.to_string(),
    },
    OptionDef {
        name: "maxmemory-samples",
        default: "5",
        doc: "keys sampled per eviction (at most 64 are used)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_samples = parse_uint(v, 1, i32::MAX as u64, "integer")? as u32;
            Ok(())
        }),
        get: |c| c.maxmemory_samples.to_string(),
    },
    OptionDef {
        name: "lfu-log-factor",
        default: "10",
        doc: "how slowly the LFU policies' access counter rises",
        runtime: true,
        set: Setter::One(|c, v| {
            c.lfu_log_factor = parse_uint(v, 0, i32::MAX as u64, "integer")? as u32;
            Ok(())
        }),
        get: |c| c.lfu_log_factor.to_string(),
    },
    OptionDef {
        name: "lfu-decay-time",
        default: "1",
        doc: "minutes per step the LFU counter falls while a key is idle (0 = never)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.lfu_decay_time = parse_uint(v, 0, i32::MAX as u64, "integer")? as u32;
            Ok(())
        }),
        get: |c| c.lfu_decay_time.to_string(),
    },
    OptionDef {
        name: "flash-dir",
        default: "",
        doc: "directory of the flash log; \"\" = <dir>/flash",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_dir = if v.is_empty() {
                None
            } else {
                Some(PathBuf::from(v))
            };
            Ok(())
        }),
        get: |c| c.flash_dir.as_deref().map(path_text).unwrap_or_default(),
    },
    OptionDef {
        name: "flash-max-size",
        default: "0",
        doc: "bytes of flash the log may use; 0 = deduced from the partition's free space",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_max_size = parse_size_arg(v, 0, u64::MAX)?;
            Ok(())
        }),
        get: |c| c.flash_max_size.to_string(),
    },
    OptionDef {
        name: "flash-segment-size",
        default: "64mb",
        doc: "bytes per flash log segment (1mb..1gb)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_segment_size =
                parse_size_arg(v, MIN_FLASH_SEGMENT_SIZE, MAX_FLASH_SEGMENT_SIZE)?;
            Ok(())
        }),
        get: |c| c.flash_segment_size.to_string(),
    },
    OptionDef {
        name: "flash-io",
        default: "auto",
        doc: "flash I/O backend: auto, io_uring or psync",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_io = v.parse()?;
            Ok(())
        }),
        get: |c| c.flash_io.to_string(),
    },
    OptionDef {
        name: "flash-direct-io",
        default: "yes",
        doc: "open flash files with O_DIRECT (yes/no)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_direct_io = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.flash_direct_io),
    },
    OptionDef {
        name: "activedefrag",
        default: "yes",
        doc: "move hot values out of sparsely used allocator pages so those pages go back to the OS (as Redis's; on by default here: demotion leaves pages partly used)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.activedefrag = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.activedefrag),
    },
    OptionDef {
        name: "flash-gc-garbage-ratio",
        default: "1",
        doc: "garbage the flash log may hold, times its live bytes, before the collector moves records (0: at once)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.flash_gc_garbage_ratio = parse_uint(v, 0, 1000, "flash-gc-garbage-ratio")?;
            Ok(())
        }),
        get: |c| c.flash_gc_garbage_ratio.to_string(),
    },
    OptionDef {
        name: "flash-poll-us",
        default: "50",
        doc: "microseconds an event loop with flash reads in flight waits for them on the CPU (yielding it to any other runnable thread) before it sleeps; 0 = sleep at once",
        runtime: true,
        set: Setter::One(|c, v| {
            c.flash_poll_us = parse_uint(v, 0, 10_000, "flash-poll-us")?;
            Ok(())
        }),
        get: |c| c.flash_poll_us.to_string(),
    },
    OptionDef {
        name: "tiering-min-value-size",
        default: "64",
        doc: "bytes; smaller values always stay in RAM",
        runtime: true,
        set: Setter::One(|c, v| {
            let size = parse_size_arg(v, 0, u64::MAX)?;
            c.tiering_min_value_size =
                usize::try_from(size).map_err(|_| format!("size '{v}' is too large"))?;
            Ok(())
        }),
        get: |c| c.tiering_min_value_size.to_string(),
    },
    OptionDef {
        name: "tiering-promote",
        default: "second",
        doc: "when a flash value moves back to RAM: first, second (read) or never",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tiering_promote = v.parse()?;
            Ok(())
        }),
        get: |c| c.tiering_promote.to_string(),
    },
];
