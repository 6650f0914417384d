//! Whole databases and their persistence: DBSIZE FLUSHDB FLUSHALL SWAPDB
//! LASTSAVE SAVE BGSAVE SHUTDOWN.

use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::{Bytes, BytesMut};
use strata_protocol::{write_integer, write_simple};

pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let n = ctx.engine().dbsize(ctx.db());
    write_integer(ctx.out, n as i64);
    Outcome::Done
}

/// FLUSHDB / FLUSHALL [ASYNC|SYNC]: both run synchronously (only RAM is
/// touched; records on flash become garbage for the collector).
fn flush_mode_ok(ctx: &mut Ctx<'_>, args: &[Bytes]) -> bool {
    match args.get(1) {
        None => true,
        Some(a) if args.len() == 2 && (is(a, "async") || is(a, "sync")) => true,
        Some(_) => {
            reply::error(ctx.out, reply::SYNTAX);
            false
        }
    }
}

pub fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if flush_mode_ok(ctx, args) {
        ctx.engine().flush_db(ctx.db());
        if ctx.tracking().active() {
            ctx.tracking().flush(&ctx.server().pubsub);
        }
        wake_blocked(ctx, &[ctx.db()]);
        write_simple(ctx.out, b"OK");
    }
    Outcome::Done
}

pub fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if flush_mode_ok(ctx, args) {
        ctx.engine().flush_all();
        if ctx.tracking().active() {
            ctx.tracking().flush(&ctx.server().pubsub);
        }
        let dbs: Vec<usize> = (0..ctx.engine().databases()).collect();
        wake_blocked(ctx, &dbs);
        write_simple(ctx.out, b"OK");
    }
    Outcome::Done
}

/// Tries again the clients blocked on keys of `dbs` after their contents
/// changed wholesale (the engine reports no key of a flush or a swap): a
/// blocked XREADGROUP gets Redis's UNBLOCKED error for a stream that went,
/// a blocked pop is served if the key now has elements.
fn wake_blocked(ctx: &mut Ctx<'_>, dbs: &[usize]) {
    let blocking = &ctx.server().blocking;
    if blocking.any_waiting() {
        let sink = ctx.ready_sink();
        for &d in dbs {
            sink.serve(d, blocking.keys_waited_in(d));
        }
    }
}

/// SWAPDB: the two databases trade contents for every client at once;
/// clients blocked on a key of either are served if it now has elements.
pub fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let index = |b: &[u8]| parse_i64(b).filter(|n| i32::try_from(*n).is_ok());
    let Some(a) = index(&args[1]) else {
        reply::error(ctx.out, "ERR invalid first DB index");
        return Outcome::Done;
    };
    let Some(b) = index(&args[2]) else {
        reply::error(ctx.out, "ERR invalid second DB index");
        return Outcome::Done;
    };
    let n = ctx.engine().databases() as i64;
    if !(0..n).contains(&a) || !(0..n).contains(&b) {
        reply::error(ctx.out, reply::DB_RANGE);
        return Outcome::Done;
    }
    let (a, b) = (a as usize, b as usize);
    match ctx.engine().swap_db(a, b) {
        Ok(()) => {
            if a != b {
                wake_blocked(ctx, &[a, b]);
            }
            write_simple(ctx.out, b"OK");
        }
        Err(e) => reply::engine(ctx.out, &e),
    }
    Outcome::Done
}

/// LASTSAVE: the last completed checkpoint, or the start of the server.
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let last = ctx.engine().persist_info().last_checkpoint_ms / 1000;
    let started = strata_engine::clock::now_ms() / 1000 - ctx.server().started.elapsed().as_secs();
    write_integer(ctx.out, last.max(started) as i64);
    Outcome::Done
}

/// SAVE: a checkpoint now; the reply waits for it (other clients go on).
pub fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let engine = ctx.engine().clone();
    Outcome::Pending {
        reply: Box::pin(async move {
            let mut out = BytesMut::new();
            match tokio::task::spawn_blocking(move || engine.save()).await {
                Ok(Ok(_)) => write_simple(&mut out, b"OK"),
                Ok(Err(e)) if e.contains("in progress") => {
                    reply::error(&mut out, reply::BGSAVE_RUNNING)
                }
                Ok(Err(e)) => reply::error(&mut out, &format!("ERR {e}")),
                Err(e) => reply::error(&mut out, &format!("ERR {e}")),
            }
            out
        }),
        write: true,
    }
}

/// `BGSAVE [SCHEDULE]`
pub fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 2 || (args.len() == 2 && !is(&args[1], "schedule")) {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    // Inside EXEC the checkpoint starts now and copies the shards once the
    // transaction's section ends (Redis schedules it there too).
    let in_exec = ctx.engine().in_section();
    match ctx.engine().bgsave() {
        Ok(()) if in_exec => write_simple(ctx.out, b"Background saving scheduled"),
        Ok(()) => write_simple(ctx.out, b"Background saving started"),
        Err(e) if e.contains("in progress") => {
            if args.len() == 2 {
                write_simple(ctx.out, b"Background saving scheduled")
            } else {
                reply::error(ctx.out, reply::BGSAVE_RUNNING)
            }
        }
        Err(e) => reply::error(ctx.out, &format!("ERR {e}")),
    }
    Outcome::Done
}

/// BGREWRITEAOF: Redis rewrites its AOF; here the journal is the log and
/// the collector compacts it, so this takes a checkpoint in the
/// background (what lets a restart skip the log before it), as BGSAVE.
pub fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let in_exec = ctx.engine().in_section();
    match ctx.engine().bgsave() {
        Ok(()) if in_exec => {
            write_simple(ctx.out, b"Background append only file rewriting scheduled")
        }
        Ok(()) => write_simple(ctx.out, b"Background append only file rewriting started"),
        Err(e) if e.contains("in progress") => {
            write_simple(ctx.out, b"Background append only file rewriting scheduled")
        }
        Err(e) => reply::error(ctx.out, &format!("ERR {e}")),
    }
    Outcome::Done
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: stop accepting, let
/// in-flight commands finish, drain and sync the log, checkpoint (unless
/// NOSAVE) and exit. No reply on success, as Redis.
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut save = strata_engine::ShutdownSave::Save;
    for a in &args[1..] {
        if is(a, "nosave") {
            save = strata_engine::ShutdownSave::NoSave;
        } else if is(a, "save") || is(a, "now") || is(a, "force") {
        } else if is(a, "abort") {
            reply::error(ctx.out, "ERR No shutdown in progress.");
            return Outcome::Done;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    }
    if ctx.server().scripts.busy.running() {
        // As Redis: with a script running, only SHUTDOWN NOSAVE, which
        // leaves at once (what was acknowledged is in the log as far as
        // appendfsync promised, as after kill -9; the script's own writes
        // were never acknowledged).
        if save != strata_engine::ShutdownSave::NoSave {
            reply::error(ctx.out, ctx.server().scripts.busy.message());
            return Outcome::Done;
        }
        tracing::warn!("SHUTDOWN NOSAVE while a script runs: exiting now");
        std::process::exit(0);
    }
    ctx.server().request_shutdown(save);
    Outcome::Close
}
