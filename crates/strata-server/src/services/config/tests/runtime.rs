//! CONFIG SET and CONFIG GET: values round-trip in their canonical form,
//! patterns match as Redis's do, and options fixed at start are refused.

use super::super::*;

#[test]
fn config_set_get_round_trip() {
    let mut c = Config::default();
    let cases: &[(&str, &str, &str)] = &[
        ("maxmemory", "2gb", "2147483648"),
        ("maxmemory-ram", "100mb", "104857600"),
        ("maxmemory-policy", "allkeys-random", "allkeys-random"),
        ("maxmemory-policy", "AllKeys-LRU", "allkeys-lru"),
        ("tiering-min-value-size", "1k", "1000"),
        ("tiering-promote", "never", "never"),
        ("timeout", "300", "300"),
        ("hz", "100", "100"),
        ("slowlog-log-slower-than", "-1", "-1"),
        ("slowlog-max-len", "1024", "1024"),
        ("loglevel", "WARNING", "warning"),
        ("proto-max-bulk-len", "1gb", "1073741824"),
        ("maxclients", "50", "50"),
        ("appendfsync", "always", "always"),
        ("save", "900 1  300 10", "900 1 300 10"),
        ("save", "", ""),
        ("requirepass", "s3cret", "s3cret"),
        ("requirepass", "", ""),
    ];
    for &(name, value, shown) in cases {
        c.set(name, value)
            .unwrap_or_else(|e| panic!("set {name} {value}: {e}"));
        assert_eq!(
            c.get_matching(name.as_bytes()),
            vec![(name.to_string(), shown.to_string())]
        );
        assert_eq!(c.get(&name.to_ascii_uppercase()).as_deref(), Some(shown));
    }
    assert_eq!(c.maxmemory, 2 << 30);
    assert_eq!(c.requirepass, None);
    c.set("requirepass", "pw").unwrap();
    assert_eq!(c.requirepass.as_deref(), Some("pw"));
    c.set("maxmemory-ram", "25%").unwrap();
    assert_eq!(c.maxmemory_ram, percent_of_ram(25));
    // Names are case-insensitive.
    c.set("HZ", "42").unwrap();
    assert_eq!(c.hz, 42);

    // Every option's rendered value parses back to the same config.
    let c2 = {
        let mut text = String::new();
        for (name, value) in c.get_matching(b"*") {
            text.push_str(&format!("{name} \"{value}\"\n"));
        }
        Config::from_conf_str(&text).unwrap()
    };
    assert_eq!(c2, c);

    // Bad values are refused and leave the config unchanged.
    let before = c.clone();
    let err = c.set("hz", "0").unwrap_err();
    assert!(matches!(err, ConfigError::InvalidValue { .. }));
    let text = err.redis_error_text();
    assert!(
        text.starts_with("ERR CONFIG SET failed (possibly related to argument 'hz') - "),
        "{text}"
    );
    assert!(c.set("save", "900").is_err());
    assert!(c
        .set("maxmemory", "1\r\nPING")
        .unwrap_err()
        .redis_error_text()
        .find(['\r', '\n'])
        .is_none());
    assert_eq!(c, before);
}

#[test]
fn config_get_patterns() {
    let c = Config::default();
    let all = c.get_matching(b"*");
    assert_eq!(all.len(), OPTIONS.len());
    assert_eq!(all[0], ("port".to_string(), "6379".to_string()));
    let names =
        |p: &[u8]| -> Vec<String> { c.get_matching(p).into_iter().map(|(n, _)| n).collect() };
    assert_eq!(
        names(b"maxmemory*"),
        [
            "maxmemory",
            "maxmemory-ram",
            "maxmemory-clients",
            "maxmemory-policy",
            "maxmemory-samples"
        ]
    );
    assert_eq!(names(b"MAXMEMORY"), ["maxmemory"]);
    assert_eq!(
        names(b"flash-*"),
        [
            "flash-dir",
            "flash-max-size",
            "flash-segment-size",
            "flash-io",
            "flash-direct-io",
            "flash-gc-garbage-ratio",
            "flash-poll-us"
        ]
    );
    assert_eq!(names(b"h?"), ["hz"]);
    assert!(names(b"nosuch").is_empty());
    assert_eq!(c.get("proto-max-bulk-len").as_deref(), Some("536870912"));
    assert_eq!(c.get("flash-segment-size").as_deref(), Some("67108864"));
    assert_eq!(c.get("bind").as_deref(), Some("127.0.0.1 -::1"));
    assert_eq!(c.get("flash-direct-io").as_deref(), Some("yes"));
    assert_eq!(c.get("requirepass").as_deref(), Some(""));
    assert_eq!(c.get("nosuch"), None);
}

#[test]
fn immutables_and_unknowns_refused() {
    let mut c = Config::default();
    let mut refused = 0;
    // A protected option is refused whatever its value, as Redis refuses
    // it, unless the client is allowed (then it is immutable here).
    let own = c.get("dir").unwrap();
    let err = c.set("dir", &own).unwrap_err();
    assert!(
        matches!(err, ConfigError::Protected(ref n) if n == "dir"),
        "{err}"
    );
    assert_eq!(
        err.redis_error_text(),
        "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
    );
    assert!(c.set_as("dir", &own, true).is_ok());
    assert!(matches!(
        c.set_as("dir", "/elsewhere", true),
        Err(ConfigError::Immutable(_))
    ));
    for def in OPTIONS
        .iter()
        .filter(|d| !d.runtime && !PROTECTED.contains(&d.name))
    {
        // Its own value is no change; another value is refused.
        let own = c.get(def.name).unwrap_or_default();
        assert!(c.set(def.name, &own).is_ok(), "{} {own}", def.name);
        let other = ["1", "no", "yes", "/nonexistent", "7"]
            .into_iter()
            .find(|v| {
                let mut probe = c.clone();
                find_option(def.name).is_some_and(|d| d.apply(&mut probe, &[v.to_string()]).is_ok())
                    && probe.get(def.name) != c.get(def.name)
            });
        let Some(other) = other else { continue };
        refused += 1;
        let err = c.set(def.name, other).unwrap_err();
        assert!(
            matches!(err, ConfigError::Immutable(ref n) if n == def.name),
            "{err}"
        );
        assert_eq!(
            err.redis_error_text(),
            format!(
                "ERR CONFIG SET failed (possibly related to argument '{}') - can't set immutable config",
                def.name
            )
        );
    }
    assert!(refused >= 5, "only {refused} immutable options were tried");
    let err = c.set("nosuch", "1").unwrap_err();
    assert!(matches!(err, ConfigError::UnknownOption(_)));
    assert_eq!(
        err.redis_error_text(),
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    );
    assert_eq!(c, Config::default());
}
