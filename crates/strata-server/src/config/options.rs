//! The option table: one entry per option (name, default as text, doc,
//! whether CONFIG SET may change it, its parser and its renderer). The
//! single source for `--help`, CONFIG GET/SET and file and command-line
//! parsing.

use super::*;

pub(super) static OPTIONS: &[OptionDef] = &[
    OptionDef {
        name: "port",
        default: "6379",
        doc: "TCP port to listen on; 0 = do not listen",
        runtime: false,
        set: Setter::One(|c, v| {
            c.port = parse_uint(v, 0, u16::MAX as u64, "port")? as u16;
            Ok(())
        }),
        get: |c| c.port.to_string(),
    },
    OptionDef {
        name: "memcached-port",
        default: "11211",
        doc: "TCP port of the Memcached protocol (text and meta; same bind; database 0); 0 = off",
        runtime: false,
        set: Setter::One(|c, v| {
            c.memcached_port = parse_uint(v, 0, u16::MAX as u64, "memcached-port")? as u16;
            Ok(())
        }),
        get: |c| c.memcached_port.to_string(),
    },
    OptionDef {
        name: "memcached-max-item-size",
        default: "1mb",
        doc: "bytes; largest value a memcached client may store (1k to 1gb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.memcached_max_item_size = parse_size_arg(v, 1024, 1 << 30)?;
            Ok(())
        }),
        get: |c| c.memcached_max_item_size.to_string(),
    },
    OptionDef {
        name: "bind",
        default: "127.0.0.1",
        doc: "addresses to listen on (one or more)",
        runtime: false,
        set: Setter::Many(|c, args| {
            if let Some(bad) = args
                .iter()
                .find(|a| a.is_empty() || a.contains(char::is_whitespace))
            {
                return Err(format!("invalid address '{bad}'"));
            }
            c.bind = args.to_vec();
            Ok(())
        }),
        get: |c| c.bind.join(" "),
    },
    OptionDef {
        name: "dir",
        default: "./strata-data",
        doc: "working directory for data files",
        runtime: false,
        set: Setter::One(|c, v| {
            if v.is_empty() {
                return Err("directory must not be empty".to_string());
            }
            c.dir = PathBuf::from(v);
            Ok(())
        }),
        get: |c| path_text(&c.dir),
    },
    OptionDef {
        name: "databases",
        default: "16",
        doc: "number of logical databases (1..1024)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.databases = parse_uint(v, 1, MAX_DATABASES as u64, "number of databases")? as usize;
            Ok(())
        }),
        get: |c| c.databases.to_string(),
    },
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
        name: "maxmemory-policy",
        default: "noeviction",
        doc: "when maxmemory is reached: noeviction, allkeys-lru or allkeys-random",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_policy = v.parse()?;
            Ok(())
        }),
        get: |c| c.maxmemory_policy.to_string(),
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
    OptionDef {
        name: "threads",
        default: "0",
        doc: "worker threads (up to 256); 0 = number of CPUs",
        runtime: false,
        set: Setter::One(|c, v| {
            let n = parse_uint(v, 0, MAX_THREADS as u64, "thread count")? as usize;
            c.threads = if n == 0 { cpu_count() } else { n };
            Ok(())
        }),
        get: |c| c.threads.to_string(),
    },
    OptionDef {
        name: "server-runtime",
        default: "per-core",
        doc: "per-core: `threads` event loops, each serving its own connections and their \
              flash reads (its own io_uring ring); shared: one work-stealing runtime of \
              `threads` workers for every connection",
        runtime: false,
        set: Setter::One(|c, v| {
            let v = v.to_ascii_lowercase();
            if !["per-core", "shared"].contains(&v.as_str()) {
                return Err("argument must be one of the following: per-core, shared".into());
            }
            c.server_runtime = v;
            Ok(())
        }),
        get: |c| c.server_runtime.clone(),
    },
    OptionDef {
        name: "proto-max-bulk-len",
        default: "512mb",
        doc: "bytes; largest bulk string a client may send (at least 1mb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.proto_max_bulk_len = parse_size_arg(v, MIN_PROTO_MAX_BULK_LEN, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.proto_max_bulk_len.to_string(),
    },
    OptionDef {
        name: "maxclients",
        default: "10000",
        doc: "maximum simultaneous clients",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxclients = parse_uint(v, 1, MAX_MAXCLIENTS as u64, "client count")? as usize;
            Ok(())
        }),
        get: |c| c.maxclients.to_string(),
    },
    OptionDef {
        name: "timeout",
        default: "0",
        doc: "seconds a client may stay idle before it is closed; 0 = never",
        runtime: true,
        set: Setter::One(|c, v| {
            c.timeout = parse_uint(v, 0, i32::MAX as u64, "timeout")?;
            Ok(())
        }),
        get: |c| c.timeout.to_string(),
    },
    OptionDef {
        name: "hz",
        default: "10",
        doc: "background task runs per second (1..500)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hz = parse_uint(v, MIN_HZ as u64, MAX_HZ as u64, "frequency")? as u32;
            Ok(())
        }),
        get: |c| c.hz.to_string(),
    },
    OptionDef {
        name: "slowlog-log-slower-than",
        default: "10000",
        doc: "microseconds; slower commands go to the slowlog; negative disables it",
        runtime: true,
        set: Setter::One(|c, v| {
            c.slowlog_log_slower_than =
                parse_int(v).ok_or_else(|| format!("invalid integer '{v}'"))?;
            Ok(())
        }),
        get: |c| c.slowlog_log_slower_than.to_string(),
    },
    OptionDef {
        name: "latency-monitor-threshold",
        default: "0",
        doc: "milliseconds; commands and expiry cycles at least this long are sampled for LATENCY (0: off)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.latency_monitor_threshold = parse_uint(v, 0, i64::MAX as u64, "latency-monitor-threshold")?;
            Ok(())
        }),
        get: |c| c.latency_monitor_threshold.to_string(),
    },
    OptionDef {
        name: "slowlog-max-len",
        default: "128",
        doc: "entries kept in the slowlog",
        runtime: true,
        set: Setter::One(|c, v| {
            let n = parse_uint(v, 0, i64::MAX as u64, "length")?;
            c.slowlog_max_len =
                usize::try_from(n).map_err(|_| format!("length '{v}' is too large"))?;
            Ok(())
        }),
        get: |c| c.slowlog_max_len.to_string(),
    },
    OptionDef {
        name: "loglevel",
        default: "notice",
        doc: "log verbosity: debug, verbose, notice, warning or nothing",
        runtime: true,
        set: Setter::One(|c, v| {
            c.loglevel = v.parse()?;
            Ok(())
        }),
        get: |c| c.loglevel.to_string(),
    },
    OptionDef {
        name: "logfile",
        default: "",
        doc: "log file path; \"\" = standard output",
        runtime: false,
        set: Setter::One(|c, v| {
            c.logfile = v.to_string();
            Ok(())
        }),
        get: |c| c.logfile.clone(),
    },
    OptionDef {
        name: "requirepass",
        default: "",
        doc: "password clients must AUTH with; \"\" = none",
        runtime: true,
        set: Setter::One(|c, v| {
            c.requirepass = if v.is_empty() {
                None
            } else {
                Some(v.to_string())
            };
            Ok(())
        }),
        get: |c| c.requirepass.clone().unwrap_or_default(),
    },
    OptionDef {
        name: "appendonly",
        default: "yes",
        doc: "journal every change to the flash log (yes: durable per appendfsync; no: a crash loses the data, a clean shutdown keeps it)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.appendonly = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.appendonly),
    },
    OptionDef {
        name: "aof-use-rdb-preamble",
        default: "yes",
        doc: "accepted for compatibility (Redis's AOF rewrite format); the journal is Strata's log",
        runtime: true,
        set: Setter::One(|c, v| {
            c.aof_use_rdb_preamble = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.aof_use_rdb_preamble),
    },
    OptionDef {
        name: "appendfsync",
        default: "everysec",
        doc: "when journaled writes are synced: always (before the reply), everysec (a crash loses about 1 s) or no",
        runtime: true,
        set: Setter::One(|c, v| {
            let lower = v.to_ascii_lowercase();
            if !APPENDFSYNC_VALUES.contains(&lower.as_str()) {
                return Err(format!(
                    "invalid appendfsync '{v}' (expected always, everysec or no)"
                ));
            }
            c.appendfsync = lower;
            Ok(())
        }),
        get: |c| c.appendfsync.clone(),
    },
    OptionDef {
        name: "hash-max-listpack-entries",
        default: "128",
        doc: "fields a hash may have and still report the listpack encoding (OBJECT ENCODING)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "hash-max-ziplist-entries",
        default: "128",
        doc: "alias of hash-max-listpack-entries",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "hash-max-listpack-value",
        default: "64",
        doc: "bytes; longest field or value of a listpack-encoded hash",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "hash-max-ziplist-value",
        default: "64",
        doc: "alias of hash-max-listpack-value",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "set-max-intset-entries",
        default: "512",
        doc: "members an all-integer set may have and still report intset",
        runtime: true,
        set: Setter::One(|c, v| {
            c.set_max_intset_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.set_max_intset_entries.to_string(),
    },
    OptionDef {
        name: "zset-max-listpack-entries",
        default: "128",
        doc: "members a sorted set may have and still report listpack",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "zset-max-ziplist-entries",
        default: "128",
        doc: "alias of zset-max-listpack-entries",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "zset-max-listpack-value",
        default: "64",
        doc: "bytes; longest member of a listpack-encoded sorted set",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "zset-max-ziplist-value",
        default: "64",
        doc: "alias of zset-max-listpack-value",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "stream-node-max-bytes",
        default: "4096",
        doc: "bytes; a stream node (Redis's listpack, modelled) takes no entry past this size",
        runtime: true,
        set: Setter::One(|c, v| {
            c.stream_node_max_bytes = parse_size_arg(v, 0, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.stream_node_max_bytes.to_string(),
    },
    OptionDef {
        name: "hll-sparse-max-bytes",
        default: "3000",
        doc: "bytes; a sparse HyperLogLog growing past this size becomes dense (Redis's encoding choice)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hll_sparse_max_bytes = parse_size_arg(v, 0, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.hll_sparse_max_bytes.to_string(),
    },
    OptionDef {
        name: "stream-node-max-entries",
        default: "100",
        doc: "entries (live and deleted) a stream node holds before a new one starts",
        runtime: true,
        set: Setter::One(|c, v| {
            c.stream_node_max_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.stream_node_max_entries.to_string(),
    },
    OptionDef {
        name: "list-compress-depth",
        default: "0",
        doc: "accepted for compatibility (Redis's quicklist compression); lists are stored as Strata's records",
        runtime: true,
        set: Setter::One(|c, v| {
            c.list_compress_depth = parse_uint(v, 0, i32::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.list_compress_depth.to_string(),
    },
    OptionDef {
        name: "list-max-listpack-size",
        default: "-2",
        doc: "accepted for compatibility (Redis's quicklist node size: entries if positive, -1..-5 = 4kb..64kb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.list_max_listpack_size = parse_int(v)
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| format!("'{v}' is not a valid integer"))?;
            Ok(())
        }),
        get: |c| c.list_max_listpack_size.to_string(),
    },
    OptionDef {
        name: "list-max-ziplist-size",
        default: "-2",
        doc: "accepted for compatibility (Redis's quicklist node size: entries if positive, -1..-5 = 4kb..64kb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.list_max_listpack_size = parse_int(v)
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| format!("'{v}' is not a valid integer"))?;
            Ok(())
        }),
        get: |c| c.list_max_listpack_size.to_string(),
    },
    OptionDef {
        name: "save",
        default: "",
        doc: "RDB save points \"<seconds> <changes> ...\" (accepted for compatibility, ignored)",
        runtime: true,
        set: Setter::Many(|c, args| {
            c.save = parse_save(args)?;
            Ok(())
        }),
        get: |c| c.save.clone(),
    },
    OptionDef {
        name: "client-output-buffer-limit",
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        doc: "<class> <hard> <soft> <soft seconds> ... (class: normal, replica, pubsub; only pubsub's limit subscribers)",
        runtime: true,
        set: Setter::Many(|c, args| {
            c.client_output_buffer_limit = parse_output_limits(args, c.client_output_buffer_limit)?;
            Ok(())
        }),
        get: |c| {
            let l = &c.client_output_buffer_limit;
            ["normal", "slave", "pubsub"]
                .iter()
                .zip(l)
                .map(|(n, [h, s, t])| format!("{n} {h} {s} {t}"))
                .collect::<Vec<_>>()
                .join(" ")
        },
    },
    OptionDef {
        name: "enable-debug-command",
        default: "no",
        doc: "who may run DEBUG: no, yes, or local (clients on a loopback address), as Redis",
        runtime: false,
        set: Setter::One(|c, v| {
            let v = v.to_ascii_lowercase();
            if !["no", "yes", "local"].contains(&v.as_str()) {
                return Err("argument must be one of the following: no, yes, local".into());
            }
            c.enable_debug_command = v;
            Ok(())
        }),
        get: |c| c.enable_debug_command.clone(),
    },
    OptionDef {
        name: "tracking-table-max-keys",
        default: "1000000",
        doc: "keys client tracking remembers at most; past it, keys are dropped and their readers told (0 = no limit)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tracking_table_max_keys = parse_uint(v, 0, i64::MAX as u64, "keys")?;
            Ok(())
        }),
        get: |c| c.tracking_table_max_keys.to_string(),
    },
    OptionDef {
        name: "notify-keyspace-events",
        default: "",
        doc: "keyspace notification classes (K, E, g, $, l, s, h, z, x, e, n, A ...), as Redis",
        runtime: true,
        set: Setter::One(|c, v| {
            c.notify_keyspace_events = crate::session::notify::parse(v)
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            Ok(())
        }),
        get: |c| crate::session::notify::render(c.notify_keyspace_events),
    },
    OptionDef {
        name: "busy-reply-threshold",
        default: "5000",
        doc: "milliseconds a script may run before other clients get -BUSY and SCRIPT KILL may stop it",
        runtime: true,
        set: Setter::One(|c, v| {
            c.busy_reply_threshold = parse_uint(v, 0, i64::MAX as u64, "milliseconds")?;
            Ok(())
        }),
        get: |c| c.busy_reply_threshold.to_string(),
    },
    OptionDef {
        name: "lua-time-limit",
        default: "5000",
        doc: "alias of busy-reply-threshold",
        runtime: true,
        set: Setter::One(|c, v| {
            c.busy_reply_threshold = parse_uint(v, 0, i64::MAX as u64, "milliseconds")?;
            Ok(())
        }),
        get: |c| c.busy_reply_threshold.to_string(),
    },
    OptionDef {
        name: "daemonize",
        default: "no",
        doc: "only \"no\" is supported (run under a supervisor instead)",
        runtime: false,
        set: Setter::One(|c, v| {
            if parse_bool(v)? {
                return Err("daemonize yes is not supported".to_string());
            }
            c.daemonize = false;
            Ok(())
        }),
        get: |c| bool_text(c.daemonize),
    },
];
