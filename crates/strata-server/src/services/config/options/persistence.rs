//! Durability: the journal and checkpoints.

use super::super::*;

pub(super) static OPTIONS: &[OptionDef] = &[
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
];
