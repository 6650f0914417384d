//! XINFO STREAM [FULL [COUNT n]], GROUPS, CONSUMERS and HELP
//! (`xinfoCommand`). `radix-tree-keys` counts the stream's nodes, cut as
//! Redis cuts them; `radix-tree-nodes` has no equivalent here (there is no
//! radix tree) and reports the same count.

use super::{get, write_entry, write_id};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::{Bytes, BytesMut};
use strata_engine::clock::now_ms;
use strata_engine::types::stream::{Group, StreamId, StreamNeed, ENTRIES_READ_UNKNOWN};
use strata_engine::types::Stream;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, Version,
};

fn field(out: &mut BytesMut, name: &str) {
    write_bulk(out, name.as_bytes());
}

fn entries_read(out: &mut BytesMut, g: &Group, v: Version) {
    if g.entries_read == ENTRIES_READ_UNKNOWN {
        write_null(out, v);
    } else {
        write_integer(out, g.entries_read);
    }
}

fn lag(out: &mut BytesMut, s: &Stream, g: &Group, v: Version) {
    match s.lag(g) {
        Some(l) => write_integer(out, l),
        None => write_null(out, v),
    }
}

pub fn xinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if is(&args[1], "help") {
        crate::commands::server::help(
            ctx.out,
            "XINFO",
            &[
                "CONSUMERS <key> <groupname>",
                "    Show consumers of <groupname>.",
                "GROUPS <key>",
                "    Show the stream consumer groups.",
                "STREAM <key> [FULL [COUNT <count>]",
                "    Show information about the stream.",
                "HELP",
                "    Prints this help.",
            ],
        );
        return Outcome::Done;
    }
    let args = args.to_vec();
    let key = args[2].clone();
    // STREAM reads its first and last entries, FULL its first COUNT ones;
    // GROUPS and CONSUMERS no entry.
    let plan = if is(&args[1], "stream") {
        let full = args.get(3).is_some_and(|a| is(a, "full"));
        let count = match args.get(5).and_then(|c| parse_i64(c)) {
            Some(0) => u64::MAX,
            Some(n) if n > 0 => n as u64,
            _ => 10,
        };
        let mut v = vec![StreamNeed::Edges];
        if full {
            v.push(StreamNeed::Range {
                start: StreamId::MIN,
                end: StreamId::MAX,
                rev: false,
                count,
            });
        }
        v
    } else {
        Vec::new()
    };
    ctx.with_key_need(key.clone(), super::need(plan), move |view, out, v| {
        let s = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return reply::error(out, reply::NO_SUCH_KEY),
            Ok(Some(s)) => s,
        };
        if is(&args[1], "consumers") {
            let Some(g) = s.group(&args[3]) else {
                return reply::error(out, &super::no_such_group(&key, &args[3]));
            };
            let now = now_ms() as i64;
            write_array_len(out, g.consumer_count());
            for (name, c) in g.consumers() {
                write_map_len(out, v, 3);
                field(out, "name");
                write_bulk(out, name);
                field(out, "pending");
                write_integer(out, c.pending() as i64);
                field(out, "idle");
                write_integer(out, (now - c.seen_time as i64).max(0));
            }
        } else if is(&args[1], "groups") {
            write_array_len(out, s.group_count());
            for (name, g) in s.groups() {
                write_map_len(out, v, 6);
                field(out, "name");
                write_bulk(out, name);
                field(out, "consumers");
                write_integer(out, g.consumer_count() as i64);
                field(out, "pending");
                write_integer(out, g.pel_len() as i64);
                field(out, "last-delivered-id");
                write_id(out, g.last_id);
                field(out, "entries-read");
                entries_read(out, g, v);
                field(out, "lag");
                lag(out, s, g, v);
            }
        } else {
            stream_info(out, s, &args[3..], &args[1], v);
        }
    })
}

fn stream_info(out: &mut BytesMut, s: &Stream, opts: &[Bytes], sub: &[u8], v: Version) {
    let mut count = 10i64;
    let full = !opts.is_empty();
    if full {
        if (opts.len() != 1 && opts.len() != 3) || !is(&opts[0], "full") {
            return reply::subcommand_syntax(out, sub, "xinfo");
        }
        if opts.len() == 3 {
            if !is(&opts[1], "count") {
                return reply::subcommand_syntax(out, sub, "xinfo");
            }
            match parse_i64(&opts[2]) {
                Some(n) => count = if n < 0 { 10 } else { n },
                None => return reply::error(out, reply::NOT_INTEGER),
            }
        }
    }
    write_map_len(out, v, if full { 9 } else { 10 });
    field(out, "length");
    write_integer(out, s.len() as i64);
    field(out, "radix-tree-keys");
    write_integer(out, s.node_count() as i64);
    field(out, "radix-tree-nodes");
    write_integer(out, s.node_count() as i64);
    field(out, "last-generated-id");
    write_id(out, s.last_id);
    field(out, "max-deleted-entry-id");
    write_id(out, s.max_deleted);
    field(out, "entries-added");
    write_integer(out, s.entries_added as i64);
    field(out, "recorded-first-entry-id");
    write_id(out, s.first_id);
    if !full {
        field(out, "groups");
        write_integer(out, s.group_count() as i64);
        for (name, rev) in [("first-entry", false), ("last-entry", true)] {
            field(out, name);
            match s.range(StreamId::MIN, StreamId::MAX, rev).next() {
                Some(e) => write_entry(out, &e),
                None => write_null(out, v),
            }
        }
        return;
    }
    let take = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    field(out, "entries");
    let entries: Vec<_> = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .take(take)
        .collect();
    write_array_len(out, entries.len());
    for e in &entries {
        write_entry(out, e);
    }
    field(out, "groups");
    write_array_len(out, s.group_count());
    for (name, g) in s.groups() {
        write_map_len(out, v, 7);
        field(out, "name");
        write_bulk(out, name);
        field(out, "last-delivered-id");
        write_id(out, g.last_id);
        field(out, "entries-read");
        entries_read(out, g, v);
        field(out, "lag");
        lag(out, s, g, v);
        field(out, "pel-count");
        write_integer(out, g.pel_len() as i64);
        field(out, "pending");
        let pel: Vec<_> = g
            .pel_range(StreamId::MIN, StreamId::MAX)
            .take(take)
            .collect();
        write_array_len(out, pel.len());
        for (id, n) in pel {
            write_array_len(out, 4);
            write_id(out, id);
            write_bulk(out, n.consumer());
            write_integer(out, n.delivery_time as i64);
            write_integer(out, n.delivery_count as i64);
        }
        field(out, "consumers");
        write_array_len(out, g.consumer_count());
        for (cname, c) in g.consumers() {
            write_map_len(out, v, 4);
            field(out, "name");
            write_bulk(out, cname);
            field(out, "seen-time");
            write_integer(out, c.seen_time as i64);
            field(out, "pel-count");
            write_integer(out, c.pending() as i64);
            field(out, "pending");
            let ids: Vec<StreamId> = c.pel_from(StreamId::MIN).take(take).collect();
            write_array_len(out, ids.len());
            for id in ids {
                let n = g.nack(id);
                write_array_len(out, 3);
                write_id(out, id);
                write_integer(out, n.map_or(0, |n| n.delivery_time as i64));
                write_integer(out, n.map_or(0, |n| n.delivery_count as i64));
            }
        }
    }
}
