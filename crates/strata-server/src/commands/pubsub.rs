//! SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE SSUBSCRIBE SUNSUBSCRIBE
//! PUBLISH SPUBLISH PUBSUB, as Redis 7.0 (the registry and delivery:
//! `crate::services::pubsub`; writing messages to a subscriber: the connection).

use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::commands::is;
use crate::registry::flags::*;
use crate::registry::Role;
use crate::services::pubsub::Kind;
use bytes::{Bytes, BytesMut};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_push_len, Version,
};

/// One confirmation: [subscribe|unsubscribe|..., name or null, count].
fn confirm(out: &mut BytesMut, v: Version, what: &[u8], name: Option<&[u8]>, count: usize) {
    write_push_len(out, v, 3);
    write_bulk(out, what);
    match name {
        Some(n) => write_bulk(out, n),
        None => write_null(out, v),
    }
    write_integer(out, count as i64);
}

fn subscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Outcome {
    if ctx.conn.exec_ready.is_some() {
        // As Redis 7.0 inside EXEC.
        reply::error(
            ctx.out,
            &format!(
                "ERR {} isn't allowed for a DENY BLOCKING client",
                String::from_utf8_lossy(&args[0]).to_uppercase()
            ),
        );
        return Outcome::Done;
    }
    let v = ctx.version();
    let what: &[u8] = match kind {
        Kind::Channel => b"subscribe",
        Kind::Pattern => b"psubscribe",
        Kind::Shard => b"ssubscribe",
    };
    let listener = crate::command::listener(ctx.pubsub(), ctx.conn);
    for name in &args[1..] {
        listener.add(kind, name);
        let n = if kind == Kind::Shard {
            listener.shard_count()
        } else {
            listener.count()
        };
        confirm(ctx.out, v, what, Some(name), n);
    }
    Outcome::Done
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Outcome {
    let v = ctx.version();
    let what: &[u8] = match kind {
        Kind::Channel => b"unsubscribe",
        Kind::Pattern => b"punsubscribe",
        Kind::Shard => b"sunsubscribe",
    };
    let count = |l: &crate::services::pubsub::Listener| {
        if kind == Kind::Shard {
            l.shard_count()
        } else {
            l.count()
        }
    };
    let listener = crate::command::listener(ctx.pubsub(), ctx.conn);
    let names = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        listener.names(kind)
    };
    if names.is_empty() {
        let n = count(listener);
        confirm(ctx.out, v, what, None, n);
    }
    for name in names {
        listener.remove(kind, &name);
        let n = count(listener);
        confirm(ctx.out, v, what, Some(&name), n);
    }
    if !ctx.conn.pubsub.as_ref().is_some_and(|l| l.active()) {
        ctx.conn.pubsub = None;
    }
    Outcome::Done
}

pub fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    subscribe_generic(ctx, args, Kind::Channel)
}
pub fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    subscribe_generic(ctx, args, Kind::Pattern)
}
pub fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    subscribe_generic(ctx, args, Kind::Shard)
}
pub fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    unsubscribe_generic(ctx, args, Kind::Channel)
}
pub fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}
pub fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

pub fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    publish_generic(ctx, args, Kind::Channel)
}

pub fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    publish_generic(ctx, args, Kind::Shard)
}

fn publish_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Outcome {
    let n = ctx.pubsub().publish(kind, &args[1], &args[2]);
    // A subscriber publishing to itself (RESP3) gets the message before
    // the reply, as from Redis.
    if let Some(l) = ctx.conn.pubsub.as_mut() {
        while let Some(m) = l.try_next() {
            m.write(ctx.out, ctx.conn.version);
        }
    }
    write_integer(ctx.out, n as i64);
    Outcome::Done
}

/// PUBSUB CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB | HELP.
pub fn pubsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let ps = ctx.pubsub().clone();
    let sub = &args[1];
    let n = args.len();
    if (is(sub, "channels") || is(sub, "shardchannels")) && n <= 3 {
        let kind = if is(sub, "channels") {
            Kind::Channel
        } else {
            Kind::Shard
        };
        let names = ps.active(kind, args.get(2).map(|p| &p[..]));
        write_array_len(ctx.out, names.len());
        for c in names {
            write_bulk(ctx.out, &c);
        }
    } else if is(sub, "numsub") || is(sub, "shardnumsub") {
        let kind = if is(sub, "numsub") {
            Kind::Channel
        } else {
            Kind::Shard
        };
        write_array_len(ctx.out, (n - 2) * 2);
        for c in &args[2..] {
            write_bulk(ctx.out, c);
            write_integer(ctx.out, ps.count(kind, c) as i64);
        }
    } else if is(sub, "numpat") && n == 2 {
        write_integer(ctx.out, ps.patterns() as i64);
    } else if is(sub, "help") && n == 2 {
        super::server::help(ctx.out, "PUBSUB", &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help.",
        ]);
    } else if is(sub, "numpat") || is(sub, "help") {
        // Fixed-arity subcommands: the table's arity error.
        reply::error(
            ctx.out,
            &format!(
                "ERR wrong number of arguments for 'pubsub|{}' command",
                String::from_utf8_lossy(sub).to_lowercase()
            ),
        );
    } else if is(sub, "channels") || is(sub, "shardchannels") {
        reply::error(
            ctx.out,
            &format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(sub)
            ),
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "pubsub");
    }
    Outcome::Done
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd(
        "subscribe",
        -2,
        PUBSUB,
        K0,
        "pubsub",
        "Listens for messages published to channels.",
        subscribe,
    )
    .role(Role::Subscribe),
    cmd(
        "unsubscribe",
        -1,
        PUBSUB,
        K0,
        "pubsub",
        "Stops listening to messages posted to channels.",
        unsubscribe,
    )
    .role(Role::Subscribe),
    cmd(
        "psubscribe",
        -2,
        PUBSUB,
        K0,
        "pubsub",
        "Listens for messages published to channels that match one or more patterns.",
        psubscribe,
    )
    .role(Role::Subscribe),
    cmd(
        "punsubscribe",
        -1,
        PUBSUB,
        K0,
        "pubsub",
        "Stops listening to messages published to channels that match one or more patterns.",
        punsubscribe,
    )
    .role(Role::Subscribe),
    cmd(
        "ssubscribe",
        -2,
        PUBSUB,
        KALL,
        "pubsub",
        "Listens for messages published to shard channels.",
        ssubscribe,
    )
    .role(Role::Subscribe),
    cmd(
        "sunsubscribe",
        -1,
        PUBSUB,
        KALL,
        "pubsub",
        "Stops listening to messages posted to shard channels.",
        sunsubscribe,
    )
    .role(Role::Subscribe),
    cmd(
        "publish",
        3,
        &["pubsub", "loading", "stale", "fast", "may_replicate"],
        K0,
        "pubsub",
        "Posts a message to a channel.",
        publish,
    ),
    cmd(
        "spublish",
        3,
        &["pubsub", "loading", "stale", "fast", "may_replicate"],
        K1,
        "pubsub",
        "Post a message to a shard channel",
        spublish,
    ),
    cmd(
        "pubsub",
        -2,
        &["loading", "stale"],
        K0,
        "pubsub",
        "A container for Pub/Sub commands.",
        pubsub,
    ),
];
