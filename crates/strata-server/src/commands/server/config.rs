//! CONFIG GET | SET | RESETSTAT | HELP (REWRITE is refused: the server
//! never edits its configuration file).

use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::is;
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;
use strata_protocol::{write_bulk, write_map_len, write_simple};

pub fn config(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    if is(sub, "get") && args.len() >= 3 {
        let mut pairs = Vec::new();
        {
            let c = ctx.config();
            for p in &args[2..] {
                for kv in c.get_matching(p) {
                    if !pairs.contains(&kv) {
                        pairs.push(kv);
                    }
                }
            }
        }
        write_map_len(ctx.out, ctx.version(), pairs.len());
        for (k, v) in pairs {
            write_bulk(ctx.out, k.as_bytes());
            write_bulk(ctx.out, v.as_bytes());
        }
    } else if is(sub, "set") && args.len() >= 4 && args.len() & 1 == 0 {
        let result = {
            let mut c = ctx.server().config.write();
            let protected_ok = crate::services::config::allows(
                &c.enable_protected_configs,
                ctx.conn.handle.is_local(),
            );
            let backup = c.clone();
            let mut r = Ok(());
            for kv in args[2..].chunks_exact(2) {
                let name = String::from_utf8_lossy(&kv[0]).into_owned();
                let value = String::from_utf8_lossy(&kv[1]).into_owned();
                if let Err(e) = c.set_as(&name, &value, protected_ok) {
                    r = Err(e.redis_error_text());
                    break;
                }
            }
            if r.is_ok() && c.tls != backup.tls {
                r = reload_tls(ctx.server(), &c, args);
            }
            if r.is_err() {
                *c = backup; // all or nothing, as Redis does
            }
            r
        };
        match result {
            Ok(()) => {
                ctx.server().apply_config();
                write_simple(ctx.out, b"OK");
            }
            Err(text) => reply::error(ctx.out, &text),
        }
    } else if is(sub, "set") {
        reply::arity(ctx.out, "config|set");
    } else if is(sub, "resetstat") && args.len() == 2 {
        ctx.engine().reset_stats();
        ctx.server().cmdstats.reset();
        ctx.server().errorstats.reset();
        let s = &ctx.server().stats;
        strata_engine::stats::Count::zero(&s.commands_processed);
        for c in [
            &s.connections_received,
            &s.rejected_connections,
            &s.net_input_bytes,
            &s.net_output_bytes,
            &s.unknown_commands,
            &s.oom_rejections,
            &s.write_waits,
            &s.write_waits_ram,
            &s.write_waits_journal,
            &s.write_waits_flash,
            &s.write_wait_micros,
        ] {
            c.store(0, Relaxed);
        }
        write_simple(ctx.out, b"OK");
    } else if is(sub, "rewrite") {
        reply::error(
            ctx.out,
            "ERR CONFIG REWRITE is not supported: Strata never edits its configuration file",
        );
    } else if is(sub, "help") {
        super::help(
            ctx.out,
            "CONFIG",
            &[
                "GET <pattern>",
                "SET <directive> <value> [<directive> <value> ...]",
                "RESETSTAT",
            ],
        );
    } else if is(sub, "get") {
        reply::arity(ctx.out, "config|get");
    } else {
        reply::unknown_subcommand(ctx.out, sub, "config");
    }
    Outcome::Done
}

/// Rebuilds TLS's configuration after CONFIG SET changed a `tls-*` option
/// (`net::tls`): new connections use it, open ones keep theirs. One that
/// does not build is refused with Redis's words, the reason logged.
fn reload_tls(
    shared: &crate::command::Shared,
    c: &crate::services::config::Config,
    args: &[Bytes],
) -> Result<(), String> {
    if c.tls_port == 0 && !c.memcached_tls {
        return Ok(());
    }
    shared.tls.reload(&c.tls).map_err(|why| {
        tracing::warn!("Failed to update TLS configuration: {why}");
        let name = args[2..]
            .chunks_exact(2)
            .map(|kv| String::from_utf8_lossy(&kv[0]).to_ascii_lowercase())
            .find(|n| n.starts_with("tls-"))
            .unwrap_or_default();
        format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - Unable to update \
             TLS configuration. Check server logs."
        )
    })
}
