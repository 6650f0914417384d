//! ACL (SETUSER GETUSER DELUSER USERS LIST WHOAMI CAT GENPASS LOG DRYRUN
//! LOAD SAVE HELP), over the users of `crate::services::acl`; and CLUSTER, which
//! answers as Redis does with cluster support disabled.

use super::help;
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::registry::{self, describe};
use crate::services::acl::Denied;
use bytes::Bytes;
use std::sync::Arc;
use strata_protocol::{
    write_array_len, write_bulk, write_double, write_integer, write_map_len, write_null,
    write_set_len, write_simple,
};

pub fn cluster(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    reply::error(ctx.out, "ERR This instance has cluster support disabled");
    Outcome::Done
}

const HELP: &[&str] = &[
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

pub fn acl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let n = args.len();
    if is(sub, "setuser") {
        setuser(ctx, args);
    } else if is(sub, "deluser") {
        return deluser(ctx, args);
    } else if is(sub, "getuser") && n == 3 {
        getuser(ctx, &args[2]);
    } else if (is(sub, "list") || is(sub, "users")) && n == 2 {
        let users = ctx.acl().users();
        write_array_len(ctx.out, users.len());
        for u in users {
            if is(sub, "users") {
                write_bulk(ctx.out, &u.name);
            } else {
                let line = [&b"user "[..], &u.name, b" ", &u.rules().describe_bytes()].concat();
                write_bulk(ctx.out, &line);
            }
        }
    } else if is(sub, "whoami") && n == 2 {
        write_bulk(ctx.out, &ctx.conn.user.name);
    } else if (is(sub, "load") || is(sub, "save")) && n == 2 {
        return aclfile(ctx, is(sub, "load"));
    } else if is(sub, "cat") && n == 2 {
        write_array_len(ctx.out, describe::ACL_CATEGORIES.len());
        for c in describe::ACL_CATEGORIES {
            write_bulk(ctx.out, c.as_bytes());
        }
    } else if is(sub, "cat") && n == 3 {
        let name = String::from_utf8_lossy(&args[2]).to_ascii_lowercase();
        match crate::services::acl::category_commands(&name) {
            Some(names) => {
                write_array_len(ctx.out, names.len());
                for c in names {
                    write_bulk(ctx.out, c.as_bytes());
                }
            }
            None => reply::error(
                ctx.out,
                &format!("ERR Unknown category '{}'", reply::lossy(&args[2], 128)),
            ),
        }
    } else if is(sub, "genpass") && (n == 2 || n == 3) {
        genpass(ctx, args.get(2));
    } else if is(sub, "log") && (n == 2 || n == 3) {
        log(ctx, args.get(2));
    } else if is(sub, "dryrun") && n >= 4 {
        dryrun(ctx, args);
    } else if is(sub, "help") && n == 2 {
        help(ctx.out, "ACL", HELP);
    } else {
        reply::subcommand_syntax(ctx.out, sub, "acl");
    }
    Outcome::Done
}

fn setuser(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let name = &args[2];
    if crate::services::acl::has_spaces(name) {
        return reply::error(
            ctx.out,
            "ERR Usernames can't contain spaces or null characters",
        );
    }
    match ctx.acl().set_user(name, &args[3..]) {
        Err(e) => reply::error(ctx.out, &e),
        Ok(changed) => {
            if let Some((user, before)) = changed {
                kill_revoked_subscribers(ctx, &user, &before);
            }
            write_simple(ctx.out, b"OK");
        }
    }
}

/// Subscribers of a user whose channel permissions no longer cover what
/// they listen to are closed (`ACLKillPubsubClientsIfNeeded`): unless a
/// selector now allows every channel, or the new channel rules include
/// every old one.
fn kill_revoked_subscribers(
    ctx: &Ctx<'_>,
    user: &crate::services::acl::User,
    before: &crate::services::acl::Rules,
) {
    let now = user.rules();
    if now.selectors.iter().any(|s| s.allchannels) {
        return;
    }
    let new: Vec<String> = now
        .selectors
        .iter()
        .flat_map(|s| s.channel_rules())
        .collect();
    let kept = before
        .selectors
        .iter()
        .all(|s| !s.allchannels && s.channel_rules().iter().all(|c| new.contains(c)));
    if kept {
        return;
    }
    for c in ctx.server().clients.all() {
        if c.is_killed() || !c.is_pubsub() || c.info.lock().user != user.name {
            continue;
        }
        let [channels, patterns, shards] = ctx.pubsub().names_of(c.id);
        let denied = patterns.iter().any(|p| !user.channel_ok(p, true))
            || channels
                .iter()
                .chain(&shards)
                .any(|ch| !user.channel_ok(ch, false));
        if denied {
            c.kill();
        }
    }
}

/// ACL DELUSER; a client that deletes its own user is closed after the
/// reply (Redis's `CLIENT_CLOSE_AFTER_COMMAND`).
fn deluser(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args[2..].iter().any(|u| &u[..] == b"default") {
        reply::error(ctx.out, "ERR The 'default' user cannot be removed");
        return Outcome::Done;
    }
    let mut deleted = 0;
    let mut myself = false;
    for name in &args[2..] {
        if let Some(u) = ctx.acl().remove(name) {
            deleted += 1;
            // Its connections close (`ACLFreeUserAndKillClients`).
            for c in ctx.server().clients.all() {
                if c.info.lock().user == u.name {
                    c.kill();
                }
            }
            if ctx.conn.user.name == u.name {
                ctx.conn.user = ctx.acl().default_user();
                ctx.conn.authenticated = false;
                myself = true;
            }
        }
    }
    write_integer(ctx.out, deleted);
    if myself {
        Outcome::Close
    } else {
        Outcome::Done
    }
}

/// ACL LOAD / ACL SAVE, with `aclfile` (`acl::file`).
fn aclfile(ctx: &mut Ctx<'_>, load: bool) -> Outcome {
    let path = ctx.config().aclfile.clone();
    if path.is_empty() {
        reply::error(ctx.out, "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.");
        return Outcome::Done;
    }
    if !load {
        match ctx.acl().save_file(&path) {
            Ok(()) => write_simple(ctx.out, b"OK"),
            Err(e) => {
                tracing::warn!("Opening temp ACL file for ACL SAVE: {e}");
                reply::error(ctx.out, "ERR There was an error trying to save the ACLs. Please check the server logs for more information");
            }
        }
        return Outcome::Done;
    }
    match ctx.acl().load_file(&path) {
        Err(e) => {
            reply::error(ctx.out, &format!("ERR {}", e.replace(['\r', '\n'], " ")));
            Outcome::Done
        }
        Ok(replaced) => {
            // The connections of every user replaced close, this one's too
            // (after its reply), as Redis frees the old users' clients.
            let mut myself = false;
            for u in &replaced {
                for c in ctx.server().clients.all() {
                    if c.id != ctx.conn.handle.id && c.info.lock().user == u.name {
                        c.kill();
                    }
                }
                myself |= Arc::ptr_eq(u, &ctx.conn.user);
            }
            write_simple(ctx.out, b"OK");
            if myself {
                ctx.conn.user = ctx.acl().default_user();
                ctx.conn.authenticated = false;
                Outcome::Close
            } else {
                Outcome::Done
            }
        }
    }
}

fn getuser(ctx: &mut Ctx<'_>, name: &[u8]) {
    let v = ctx.version();
    let Some(u) = ctx.acl().get(name) else {
        return write_null(ctx.out, v);
    };
    let r = u.rules();
    let out = &mut *ctx.out;
    write_map_len(out, v, 6);
    write_bulk(out, b"flags");
    let flags = r.flags();
    write_set_len(out, v, flags.len());
    for f in flags {
        write_bulk(out, f.as_bytes());
    }
    write_bulk(out, b"passwords");
    write_array_len(out, r.passwords.len());
    for p in &r.passwords {
        write_bulk(out, p.as_bytes());
    }
    let describe = |out: &mut bytes::BytesMut, s: &crate::services::acl::Selector| {
        write_bulk(out, b"commands");
        write_bulk(out, s.describe_commands().as_bytes());
        write_bulk(out, b"keys");
        write_bulk(out, &s.describe_keys());
        write_bulk(out, b"channels");
        write_bulk(out, &s.describe_channels());
    };
    describe(out, &r.selectors[0]);
    write_bulk(out, b"selectors");
    write_array_len(out, r.selectors.len() - 1);
    for s in &r.selectors[1..] {
        write_map_len(out, v, 3);
        describe(out, s);
    }
}

fn genpass(ctx: &mut Ctx<'_>, bits: Option<&Bytes>) {
    let bits = match bits {
        None => 256,
        Some(b) => match parse_i64(b) {
            Some(n) => n,
            None => return reply::error(ctx.out, reply::NOT_INTEGER),
        },
    };
    if bits <= 0 || bits > 4096 {
        return reply::error(ctx.out, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096");
    }
    let chars = (bits as usize).div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    rand::Rng::fill(&mut rand::rngs::OsRng, &mut bytes[..]);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    write_bulk(ctx.out, &hex.as_bytes()[..chars]);
}

fn log(ctx: &mut Ctx<'_>, arg: Option<&Bytes>) {
    let log = &ctx.acl().log;
    let mut count = 10i64;
    if let Some(a) = arg {
        if is(a, "reset") {
            log.reset();
            return write_simple(ctx.out, b"OK");
        }
        match parse_i64(a) {
            Some(n) => count = n.max(0),
            None => return reply::error(ctx.out, reply::NOT_INTEGER),
        }
    }
    let v = ctx.version();
    let entries = log.newest(count as usize);
    let now = crate::services::acl::now_ms();
    let out = &mut *ctx.out;
    write_array_len(out, entries.len());
    for e in entries {
        write_map_len(out, v, 7);
        write_bulk(out, b"count");
        write_integer(out, e.count as i64);
        write_bulk(out, b"reason");
        write_bulk(out, e.reason.as_bytes());
        write_bulk(out, b"context");
        write_bulk(out, e.context.name().as_bytes());
        write_bulk(out, b"object");
        write_bulk(out, &e.object);
        write_bulk(out, b"username");
        write_bulk(out, &e.username);
        write_bulk(out, b"age-seconds");
        write_double(out, v, now.saturating_sub(e.ctime) as f64 / 1000.0);
        write_bulk(out, b"client-info");
        write_bulk(out, e.client_info.as_bytes());
    }
}

fn dryrun(ctx: &mut Ctx<'_>, args: &[Bytes]) {
    let Some(u) = ctx.acl().get(&args[2]) else {
        return reply::error(
            ctx.out,
            &format!("ERR User '{}' not found", String::from_utf8_lossy(&args[2])),
        );
    };
    let cmd = &args[3..];
    let Some(spec) = registry::lookup(&cmd[0]) else {
        return reply::error(
            ctx.out,
            &format!(
                "ERR Command '{}' not found",
                String::from_utf8_lossy(&cmd[0])
            ),
        );
    };
    let full = describe::full_name(spec.name, cmd);
    if !spec.arity_ok(cmd.len()) || describe::subcommand_arity(spec.name, cmd).is_err() {
        return reply::error(
            ctx.out,
            &format!("ERR wrong number of arguments for '{full}' command"),
        );
    }
    let why = match u.check(spec, cmd) {
        Ok(()) => return write_simple(ctx.out, b"OK"),
        Err(Denied::Command) => format!("This user has no permissions to run the '{full}' command"),
        Err(Denied::Key(i)) => format!(
            "This user has no permissions to access the '{}' key",
            String::from_utf8_lossy(&cmd[i])
        ),
        Err(Denied::Channel(i)) => format!(
            "This user has no permissions to access the '{}' channel",
            String::from_utf8_lossy(&cmd[i])
        ),
    };
    write_bulk(ctx.out, why.as_bytes());
}
