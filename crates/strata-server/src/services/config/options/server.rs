//! Where and how the server listens, its threads and limits, logs and auth.

use super::super::*;

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
        name: "memcached-allow-unauthenticated",
        default: "no",
        doc: "serve memcached-port even while a password or ACL users protect the RESP port (memcached's text protocol has no authentication: its clients bypass them)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.memcached_allow_unauthenticated = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.memcached_allow_unauthenticated),
    },
    OptionDef {
        name: "protected-mode",
        default: "yes",
        doc: "while the default user has no password, refuse clients that are not on a loopback address (-DENIED), as Redis",
        runtime: true,
        set: Setter::One(|c, v| {
            c.protected_mode = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.protected_mode),
    },
    OptionDef {
        name: "tcp-backlog",
        default: "511",
        doc: "connections the kernel queues before they are accepted (capped by net.core.somaxconn)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.tcp_backlog = parse_uint(v, 0, i32::MAX as u64, "tcp-backlog")? as u32;
            Ok(())
        }),
        get: |c| c.tcp_backlog.to_string(),
    },
    OptionDef {
        name: "bind",
        default: "127.0.0.1 -::1",
        doc: "addresses to listen on (one or more; -addr is skipped where it does not exist; 0.0.0.0 or '*' for any IPv4, '::*' for any IPv6)",
        runtime: false,
        set: Setter::Many(|c, args| {
            // (One argument may hold several, as CONFIG GET renders them.)
            let args: Vec<String> = args
                .iter()
                .flat_map(|a| a.split_whitespace())
                .map(str::to_string)
                .collect();
            if let Some(bad) = args
                .iter()
                .find(|a| crate::services::config::parse_addr(a.trim_start_matches('-')).is_none())
            {
                return Err(format!("invalid address '{bad}'"));
            }
            if args.is_empty() {
                return Err("bind needs an address".to_string());
            }
            c.bind = args;
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
        name: "loop-scaling",
        default: "auto",
        doc: "auto: connections start on one event loop, and loops are added (up to \
              `threads`) while they serve more, given back when they do not; off: every \
              loop takes connections, round robin",
        runtime: false,
        set: Setter::One(|c, v| {
            let v = v.to_ascii_lowercase();
            if !["auto", "off"].contains(&v.as_str()) {
                return Err("argument must be one of the following: auto, off".into());
            }
            c.loop_scaling = v;
            Ok(())
        }),
        get: |c| c.loop_scaling.clone(),
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
        name: "min-replicas-to-write",
        default: "0",
        doc: "writes need this many good replicas: there are none here, so above 0 every write gets NOREPLICAS",
        runtime: true,
        set: Setter::One(|c, v| {
            c.min_replicas_to_write = parse_bounded(v, 0, i32::MAX as i64)? as u64;
            Ok(())
        }),
        get: |c| c.min_replicas_to_write.to_string(),
    },
    OptionDef {
        name: "min-replicas-max-lag",
        default: "10",
        doc: "seconds of lag a good replica may have",
        runtime: true,
        set: Setter::One(|c, v| {
            c.min_replicas_max_lag = parse_bounded(v, 0, i32::MAX as i64)? as u64;
            Ok(())
        }),
        get: |c| c.min_replicas_max_lag.to_string(),
    },
    OptionDef {
        name: "acllog-max-len",
        default: "128",
        doc: "entries kept in the ACL LOG",
        runtime: true,
        set: Setter::One(|c, v| {
            c.acllog_max_len = parse_bounded(v, 0, i64::MAX)? as u64;
            Ok(())
        }),
        get: |c| c.acllog_max_len.to_string(),
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
