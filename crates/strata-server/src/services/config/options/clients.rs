//! What clients may do and get: output limits, DEBUG, tracking, notifications, scripts.

use super::super::*;

pub(super) static OPTIONS: &[OptionDef] = &[
    OptionDef {
        name: "client-output-buffer-limit",
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        doc: "<class> <hard> <soft> <soft seconds> ... (class: normal, replica, pubsub): a client whose waiting replies pass the hard limit, or the soft one for longer than its seconds, is closed",
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
        name: "client-query-buffer-limit",
        default: "1gb",
        doc: "bytes of unparsed input a client may hold before it is closed (at least 1mb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.client_query_buffer_limit = parse_size_arg(v, 1 << 20, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.client_query_buffer_limit.to_string(),
    },
    OptionDef {
        name: "enable-debug-command",
        default: "no",
        doc: "who may run DEBUG: no, yes, or local (clients on a loopback address), as Redis",
        runtime: false,
        set: Setter::One(|c, v| {
            c.enable_debug_command = parse_who(v)?;
            Ok(())
        }),
        get: |c| c.enable_debug_command.clone(),
    },
    OptionDef {
        name: "enable-protected-configs",
        default: "no",
        doc: "who may CONFIG SET protected options (dir): no, yes, or local (clients on a loopback address), as Redis",
        runtime: false,
        set: Setter::One(|c, v| {
            c.enable_protected_configs = parse_who(v)?;
            Ok(())
        }),
        get: |c| c.enable_protected_configs.clone(),
    },
    OptionDef {
        name: "enable-module-command",
        default: "no",
        doc: "accepted as Redis's (no, yes, local); Strata loads no modules and has no MODULE command",
        runtime: false,
        set: Setter::One(|c, v| {
            c.enable_module_command = parse_who(v)?;
            Ok(())
        }),
        get: |c| c.enable_module_command.clone(),
    },
    OptionDef {
        name: "aclfile",
        default: "",
        doc: "file of ACL users (ACL LIST lines) read at start and by ACL LOAD, written by ACL SAVE; \"\" = none",
        runtime: false,
        set: Setter::One(|c, v| {
            c.aclfile = v.to_string();
            Ok(())
        }),
        get: |c| c.aclfile.clone(),
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
            c.notify_keyspace_events = crate::services::config::events::parse(v)
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            Ok(())
        }),
        get: |c| crate::services::config::events::render(c.notify_keyspace_events),
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
];

/// An `enable-*-command` / `enable-protected-configs` value: no, yes or
/// local.
fn parse_who(v: &str) -> Result<String, String> {
    let v = v.to_ascii_lowercase();
    if !["no", "yes", "local"].contains(&v.as_str()) {
        return Err("argument must be one of the following: no, yes, local".into());
    }
    Ok(v)
}
