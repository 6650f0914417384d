//! Redis's encoding thresholds (what OBJECT ENCODING reports), and stream node sizes.

use super::super::*;

pub(super) static OPTIONS: &[OptionDef] = &[
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
];
