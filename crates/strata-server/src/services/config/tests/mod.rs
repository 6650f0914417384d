//! The configuration's tests: defaults, the option table, sizes, files
//! and the command line here; CONFIG SET / GET in `runtime`.

use super::*;

mod runtime;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A config file in the temp dir, removed on drop.
struct TempConf(PathBuf);
impl TempConf {
    fn new(tag: &str, text: &str) -> TempConf {
        let path = std::env::temp_dir().join(format!(
            "strata-config-test-{}-{tag}.conf",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        TempConf(path)
    }
    fn path(&self) -> String {
        self.0.display().to_string()
    }
}
impl Drop for TempConf {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn defaults() {
    let c = Config::default();
    assert_eq!(c.port, 6379);
    assert_eq!(c.bind, vec!["127.0.0.1".to_string(), "-::1".to_string()]);
    assert!(c.protected_mode);
    assert_eq!(c.tcp_backlog, 511);
    assert!(!c.memcached_allow_unauthenticated);
    assert_eq!(c.dir, PathBuf::from("./strata-data"));
    assert_eq!(c.databases, 16);
    assert_eq!(c.maxmemory, 0);
    assert!(c.maxmemory_ram > 0);
    assert_eq!(c.maxmemory_ram, physical_ram() / 2);
    assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::NoEviction);
    assert_eq!(c.flash_dir, None);
    assert_eq!(c.flash_dir(), PathBuf::from("./strata-data").join("flash"));
    assert_eq!(c.flash_max_size, 0);
    assert_eq!(c.flash_segment_size, 64 << 20);
    assert_eq!(c.flash_io, IoBackend::Auto);
    assert!(c.flash_direct_io);
    assert_eq!(c.tiering_min_value_size, 64);
    assert_eq!(c.tiering_promote, PromotePolicy::SecondRead);
    assert!(c.threads >= 1 && c.threads <= MAX_THREADS);
    assert_eq!(c.proto_max_bulk_len, 512 << 20);
    assert_eq!(c.maxclients, 10000);
    assert_eq!(c.timeout, 0);
    assert_eq!(c.hz, 10);
    assert_eq!(c.slowlog_log_slower_than, 10000);
    assert_eq!(c.slowlog_max_len, 128);
    assert_eq!(c.loglevel, LogLevel::Notice);
    assert_eq!(c.logfile, "");
    assert_eq!(c.requirepass, None);
    assert!(c.appendonly);
    assert_eq!(c.appendfsync, "everysec");
    assert_eq!(c.save, "");
    assert!(!c.daemonize);
    // An empty file and an empty command line give the defaults.
    assert_eq!(Config::from_conf_str("").unwrap(), c);
    assert_eq!(Config::from_args(Vec::new()).unwrap(), c);
}

#[test]
fn table_defaults_match_default_impl() {
    // Parsing each option's documented default leaves Config::default()
    // unchanged: the help text and CONFIG GET cannot drift from the code.
    for def in OPTIONS.iter() {
        let mut c = Config::default();
        def.apply(&mut c, &[def.default.to_string()])
            .unwrap_or_else(|e| panic!("default of {} does not parse: {e}", def.name));
        assert_eq!(
            c,
            Config::default(),
            "default text of {} disagrees",
            def.name
        );
    }
}

#[test]
fn table_is_well_formed() {
    let mut names: Vec<&str> = OPTIONS.iter().map(|d| d.name).collect();
    for name in &names {
        assert_eq!(*name, name.to_ascii_lowercase());
        assert!(!name.is_empty());
    }
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "an option is listed twice");
    // One option per Config field, and the four ziplist aliases.
    assert_eq!(before, 86, "one option per Config field (plus aliases)");
    let runtime: std::collections::BTreeSet<&str> = OPTIONS
        .iter()
        .filter(|d| d.runtime)
        .map(|d| d.name)
        .collect();
    assert_eq!(
        runtime,
        std::collections::BTreeSet::from([
            "memcached-max-item-size",
            "memcached-allow-unauthenticated",
            "tls-cert-file",
            "tls-key-file",
            "tls-key-file-pass",
            "tls-ca-cert-file",
            "tls-ca-cert-dir",
            "tls-auth-clients",
            "tls-protocols",
            "tls-ciphers",
            "tls-ciphersuites",
            "tls-prefer-server-ciphers",
            "tls-session-caching",
            "tls-session-cache-size",
            "protected-mode",
            "maxmemory",
            "maxmemory-ram",
            "maxmemory-policy",
            "maxmemory-clients",
            "maxmemory-samples",
            "lfu-log-factor",
            "lfu-decay-time",
            "flash-gc-garbage-ratio",
            "flash-poll-us",
            "activedefrag",
            "tiering-min-value-size",
            "tiering-promote",
            "proto-max-bulk-len",
            "maxclients",
            "timeout",
            "hz",
            "slowlog-log-slower-than",
            "acllog-max-len",
            "min-replicas-to-write",
            "min-replicas-max-lag",
            "latency-monitor-threshold",
            "slowlog-max-len",
            "loglevel",
            "requirepass",
            "aof-use-rdb-preamble",
            "appendfsync",
            "hash-max-listpack-entries",
            "hash-max-ziplist-entries",
            "hash-max-listpack-value",
            "hash-max-ziplist-value",
            "set-max-intset-entries",
            "zset-max-listpack-entries",
            "zset-max-ziplist-entries",
            "zset-max-listpack-value",
            "zset-max-ziplist-value",
            "stream-node-max-bytes",
            "hll-sparse-max-bytes",
            "stream-node-max-entries",
            "list-compress-depth",
            "list-max-listpack-size",
            "list-max-ziplist-size",
            "save",
            "client-output-buffer-limit",
            "client-query-buffer-limit",
            "tracking-table-max-keys",
            "notify-keyspace-events",
            "busy-reply-threshold",
            "lua-time-limit",
        ])
    );
}

#[test]
fn sizes() {
    let table: &[(&str, Option<u64>)] = &[
        ("0", Some(0)),
        ("123", Some(123)),
        ("123b", Some(123)),
        ("1k", Some(1000)),
        ("1kb", Some(1024)),
        ("1K", Some(1000)),
        ("1KB", Some(1024)),
        ("1kB", Some(1024)),
        ("2m", Some(2_000_000)),
        ("2mb", Some(2 << 20)),
        ("3g", Some(3_000_000_000)),
        ("3GB", Some(3 << 30)),
        ("64mb", Some(64 << 20)),
        ("18446744073709551615", Some(u64::MAX)),
        ("18446744073709551616", None),
        ("18446744073709551615kb", None),
        ("17179869184gb", None),
        ("", None),
        ("kb", None),
        ("-1", None),
        ("+1", None),
        ("1.5mb", None),
        ("12q", None),
        ("1 mb", None),
        (" 1", None),
        ("1t", None),
        ("1tb", None),
        ("0x10", None),
    ];
    for &(text, expected) in table {
        assert_eq!(parse_size(text), expected, "parse_size({text:?})");
    }
}

#[test]
fn file_parsing() {
    let text = "\
# a comment
   # an indented comment

PORT 7000
bind 10.0.0.1 \"::1\"   '192.168.1.1'
Dir \"/var/lib/strata data\"
maxmemory 1GB
maxmemory-policy ALLKEYS-LRU
requirepass 'it\\'s a \"secret\"'
logfile \"a\\tb\\x41\\n\"
flash-direct-io No
slowlog-log-slower-than -1
save 900 1 300 10
\tthreads 3\r
";
    let c = Config::from_conf_str(text).unwrap();
    assert_eq!(c.port, 7000);
    assert_eq!(c.bind, args(&["10.0.0.1", "::1", "192.168.1.1"]));
    assert_eq!(c.dir, PathBuf::from("/var/lib/strata data"));
    assert_eq!(c.flash_dir(), PathBuf::from("/var/lib/strata data/flash"));
    assert_eq!(c.maxmemory, 1 << 30);
    assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::AllkeysLru);
    assert_eq!(c.requirepass.as_deref(), Some("it's a \"secret\""));
    assert_eq!(c.logfile, "a\tbA\n");
    assert!(!c.flash_direct_io);
    assert_eq!(c.slowlog_log_slower_than, -1);
    assert_eq!(c.save, "900 1 300 10");
    assert_eq!(c.threads, 3);
    // Later directives override earlier ones.
    assert_eq!(Config::from_conf_str("port 1\nport 2").unwrap().port, 2);
    // Quoting in the middle of a word joins, as in sdssplitargs.
    assert_eq!(
        Config::from_conf_str("logfile a\"b c\"").unwrap().logfile,
        "ab c"
    );
    // An empty quoted argument.
    assert_eq!(
        Config::from_conf_str("flash-dir \"\"").unwrap().flash_dir,
        None
    );
    assert_eq!(
        Config::from_conf_str("flash-dir /mnt/nvme")
            .unwrap()
            .flash_dir(),
        PathBuf::from("/mnt/nvme")
    );
}

#[test]
fn file_errors_name_line_option_and_value() {
    let err = Config::from_conf_str("port 1\n\n# c\n\n\n\nmaxmemory 12q\n").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::BadLine { line: 7, .. }), "{msg}");
    assert!(
        msg.starts_with("bad config at line 7: 'maxmemory 12q' — "),
        "{msg}"
    );
    assert!(msg.contains("maxmemory: invalid size '12q'"), "{msg}");

    let msg = Config::from_conf_str("frobnicate 3")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("line 1") && msg.contains("unknown option 'frobnicate'"),
        "{msg}"
    );

    let msg = Config::from_conf_str("port").unwrap_err().to_string();
    assert!(msg.contains("port: wrong number of arguments"), "{msg}");
    let msg = Config::from_conf_str("port 1 2").unwrap_err().to_string();
    assert!(msg.contains("port: wrong number of arguments"), "{msg}");

    for bad in [
        "logfile \"abc",
        "logfile 'abc",
        "logfile \"a\"b",
        "logfile 'a'b",
    ] {
        let msg = Config::from_conf_str(bad).unwrap_err().to_string();
        assert!(msg.contains("quote"), "{bad}: {msg}");
    }
    // A trailing comment is not a comment (Redis rule): arity error.
    assert!(Config::from_conf_str("port 6379 # default").is_err());
}

#[test]
fn every_bad_value_names_its_option() {
    let cases: &[(&str, &str)] = &[
        ("port", "abc"),
        ("port", "65536"),
        ("port", "-1"),
        ("bind", "\"\""),
        ("dir", "\"\""),
        ("databases", "0"),
        ("databases", "1025"),
        ("maxmemory", "12q"),
        ("maxmemory", "-5"),
        ("maxmemory-ram", "101%"),
        ("maxmemory-ram", "0"),
        ("maxmemory-ram", "lots"),
        ("maxmemory-policy", "volatile-lruu"),
        ("maxmemory-policy", "bogus"),
        ("maxmemory-samples", "0"),
        ("lfu-log-factor", "-1"),
        ("flash-max-size", "1.5gb"),
        ("flash-segment-size", "512kb"),
        ("flash-segment-size", "2gb"),
        ("flash-io", "aio"),
        ("flash-direct-io", "maybe"),
        ("tiering-min-value-size", "small"),
        ("flash-gc-garbage-ratio", "-1"),
        ("flash-gc-garbage-ratio", "1001"),
        ("flash-poll-us", "-1"),
        ("flash-poll-us", "10001"),
        ("tiering-promote", "third"),
        ("threads", "257"),
        ("threads", "many"),
        ("proto-max-bulk-len", "1000"),
        ("maxclients", "0"),
        ("timeout", "-1"),
        ("hz", "0"),
        ("hz", "501"),
        ("slowlog-log-slower-than", "fast"),
        ("slowlog-max-len", "-1"),
        ("loglevel", "loud"),
        ("appendonly", "1"),
        ("appendfsync", "sometimes"),
        ("save", "900"),
        ("save", "x 1"),
        ("daemonize", "yes"),
        ("daemonize", "perhaps"),
    ];
    for &(name, value) in cases {
        let shown = value.trim_matches('"');
        let line = format!("{name} {value}");
        let msg = Config::from_conf_str(&line).unwrap_err().to_string();
        assert!(msg.contains(&format!("'{line}'")), "file {line}: {msg}");
        assert!(msg.contains(&format!("{name}:")), "file {line}: {msg}");
        let names_value = |msg: &str| {
            msg.contains(&format!("'{shown}'")) || msg.contains(&format!("{name} {shown}"))
        };
        if !shown.is_empty() {
            assert!(names_value(&msg), "file {line}: {msg}");
        }
        let msg = Config::from_args(args(&[&format!("--{name}"), shown]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!("bad option --{name}: ")),
            "cli {line}: {msg}"
        );
        if !shown.is_empty() {
            assert!(names_value(&msg), "cli {line}: {msg}");
        }
    }
    let msg = Config::from_args(args(&["--port", "abc"]))
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("bad option --port: "), "{msg}");
    assert_eq!(msg, "bad option --port: 'abc' is not a valid port");
    let msg = Config::from_conf_str("maxmemory-policy allkeys-lfuu")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(
            "argument(s) must be one of the following: volatile-lru, volatile-lfu, \
             volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
        ),
        "{msg}"
    );
    // Every Redis policy is accepted, in any case (a redis.conf's
    // `maxmemory-policy volatile-lru` starts the server).
    for p in [
        "noeviction",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "VOLATILE-TTL",
    ] {
        let c = Config::from_conf_str(&format!("maxmemory-policy {p}")).unwrap();
        assert_eq!(c.maxmemory_policy.as_str(), p.to_ascii_lowercase());
    }
    let msg = Config::from_conf_str("daemonize yes")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("daemonize yes is not supported"), "{msg}");
}

#[test]
fn command_line() {
    let c = Config::from_args(args(&[
        "--port",
        "7001",
        "--bind",
        "0.0.0.0",
        "::",
        "--SLOWLOG-LOG-SLOWER-THAN",
        "-1",
        "--save",
        "",
    ]))
    .unwrap();
    assert_eq!(c.port, 7001);
    assert_eq!(c.bind, args(&["0.0.0.0", "::"]));
    assert_eq!(c.slowlog_log_slower_than, -1);
    assert_eq!(c.save, "");

    let err = Config::from_args(args(&["--port"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--port") && err.contains("wrong number of arguments"),
        "{err}"
    );
    let err = Config::from_args(args(&["--nosuch", "1"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--nosuch") && err.contains("unknown option"),
        "{err}"
    );
    let err = Config::from_args(args(&["a.conf", "b.conf"])).unwrap_err();
    assert!(
        matches!(err, ConfigError::UnexpectedArg(ref a) if a == "b.conf"),
        "{err}"
    );
    let err = Config::from_args(args(&["--"])).unwrap_err();
    assert!(matches!(err, ConfigError::UnexpectedArg(_)), "{err}");
    let err = Config::from_args(args(&["/nonexistent/strata.conf"])).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }));
    assert!(
        err.to_string().contains("/nonexistent/strata.conf"),
        "{err}"
    );
}

#[test]
fn command_line_overrides_file() {
    let conf = TempConf::new(
        "override",
        "port 7000\nhz 20\nbind 10.0.0.1\nloglevel debug\n",
    );
    let c = Config::from_args(args(&[
        &conf.path(),
        "--port",
        "7001",
        "--bind",
        "10.0.0.2",
        "::1",
    ]))
    .unwrap();
    assert_eq!(c.port, 7001);
    assert_eq!(c.bind, args(&["10.0.0.2", "::1"]));
    // Addresses only (a name is refused at start, not at bind time).
    assert!(Config::from_args(args(&["--bind", "somehost"])).is_err());
    assert_eq!(c.hz, 20);
    assert_eq!(c.loglevel, LogLevel::Debug);
    let c = Config::from_args(args(&[&conf.path()])).unwrap();
    assert_eq!(c.port, 7000);

    // File errors keep their line numbers when read through from_args.
    let bad = TempConf::new("bad", "port 1\nhz 0\n");
    let err = Config::from_args(args(&[&bad.path(), "--hz", "5"])).unwrap_err();
    assert!(matches!(err, ConfigError::BadLine { line: 2, .. }), "{err}");
}

#[test]
fn help_lists_every_option() {
    let help = help_text();
    assert!(help.starts_with("Usage: strata-server"));
    for def in OPTIONS.iter() {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("--{} ", def.name)))
            .unwrap_or_else(|| panic!("--{} missing from help", def.name));
        assert!(line.contains(def.doc), "{line}");
        if !def.default.is_empty() {
            assert!(line.contains(def.default), "{line}");
        }
        assert_eq!(line.contains(" * "), def.runtime, "{line}");
    }
}

#[test]
fn example_config_parses() {
    let in_crate = concat!(env!("CARGO_MANIFEST_DIR"), "/../../strata.conf");
    let path = if Path::new(in_crate).exists() {
        in_crate
    } else {
        "/work/main/strata.conf"
    };
    let text = std::fs::read_to_string(path).unwrap();
    let c = Config::from_conf_str(&text).unwrap();
    assert_eq!(c.port, 6379);
    assert_eq!(c.bind, args(&["127.0.0.1", "-::1"]));
    assert_eq!(c.dir, PathBuf::from("./strata-data"));
    assert_eq!(c.flash_segment_size, 64 << 20);
    assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::NoEviction);
    assert_eq!(c.tiering_promote, PromotePolicy::SecondRead);
    assert_eq!(c.proto_max_bulk_len, 512 << 20);
    // The example mentions every option.
    for def in OPTIONS.iter() {
        assert!(
            text.lines().any(|l| {
                let l = l.trim_start_matches(['#', ' ']);
                l.split_whitespace().next() == Some(def.name)
            }),
            "strata.conf does not mention {}",
            def.name
        );
    }
    // Through from_args too (reads the file from disk).
    assert_eq!(Config::from_args(args(&[path])).unwrap(), c);
}
