//! Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and the script cache
//! (SCRIPT LOAD / EXISTS / FLUSH), and functions (FCALL, FCALL_RO over
//! the libraries of `functions`), on Lua 5.1 as Redis 7.0 runs them.
//!
//! Running Lua scripts: EVAL and FCALL's families from a connection
//! (`eval`) or inside EXEC (`eval_now`), their `redis.call`s (`run`).
//! The store they run from (VMs, cache, libraries) is `services::scripts`.
//!
//! A script runs like a transaction (`crate::exec::transaction`): its declared
//! keys are brought into RAM first, holding nothing; then it runs on the
//! one script thread (never on a runtime worker, so a long script leaves
//! the workers free to answer BUSY and SCRIPT KILL), in one exclusive
//! section holding every shard (a script may touch keys it did not
//! declare), so no client sees its effects half done. Inside EXEC a script
//! runs in the transaction's section, on its worker. `redis.call`
//! runs a command through `dispatch::execute` on the script's own client
//! state (its database, RESP2) and turns the reply into a Lua value
//! (`convert`); a read from flash inside waits on this thread. The
//! commands' effects are journaled as any command's are, so recovery
//! replays effects, not scripts. Blocking commands and SUBSCRIBE are
//! refused (`noscript`), as in Redis; clients blocked on keys a script
//! filled are served after it.
//!
//! Errors read as Redis's: `<message> script: <sha>, on @user_script:<line>.`
//! (`script: <function>, on @user_function:<line>.` for functions) for an
//! error the script raised (a failed `redis.call` included), the message
//! alone for a `{err=...}` the script returned.
//!
//! Lock order: shards (the section), then `Scripts::inner`, then the
//! engine's function record (a leaf).

mod run;

use crate::command::{ConnState, Deferred, Shared};
use crate::registry::CommandSpec;
use crate::services::scripts::{parse, Job};
use bytes::{Bytes, BytesMut};
use std::sync::Arc;

/// EVAL, FCALL and friends from a connection: the declared keys are
/// warmed, then the script runs in an exclusive section (module doc).
pub async fn eval(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: &CommandSpec,
    args: &[Bytes],
    out: &mut BytesMut,
) {
    let call = match parse(spec, args, &conn.user) {
        Ok(c) => c,
        Err(e) => return crate::base::reply::error(out, e),
    };
    crate::command::warm(&shared.engine, conn.db, call.keys.clone()).await;
    // The script runs on the script thread, never on a worker: however
    // long it runs, the workers answer other clients (BUSY, SCRIPT KILL).
    // (Gathering a client's pipelined scripts into one hand-off was
    // measured: the script thread's own CPU, not the hand-off, bounds
    // EVALSHA.)
    let (db, handle, version) = (conn.db, conn.handle.clone(), conn.version);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = {
        let shared = shared.clone();
        Box::new(move || {
            let mut reply = BytesMut::new();
            let deferred = Deferred::default();
            shared.scripts.busy.begin(&call);
            // A bug that panics in a script's call must not take the script
            // thread (and every later script) with it: the script gets an
            // error instead.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                shared.engine.exclusive(|| {
                    // One instant for the whole script, as Redis 7.
                    let _clock = strata_engine::clock::freeze();
                    run::run(&shared, db, &handle, version, &call, &deferred, &mut reply)
                })
            }));
            if ran.is_err() {
                reply.clear();
                crate::base::reply::error(&mut reply, "ERR the script failed on an internal error");
            }
            shared.scripts.busy.end();
            // Clients blocked on keys the script filled are served now, as
            // Redis serves them after each command.
            for (db, keys) in std::mem::take(&mut *deferred.lock()) {
                shared.blocking.serve(&shared.engine, db, keys);
            }
            let _ = tx.send(reply);
        })
    };
    if !shared.scripts.send(job) {
        return crate::base::reply::error(out, "ERR the script thread is gone");
    }
    match rx.await {
        Ok(reply) => out.extend_from_slice(&reply),
        Err(_) => crate::base::reply::error(out, "ERR the script ended without a reply"),
    }
}

/// EVAL, FCALL and friends inside EXEC (already in a section; blocked
/// clients are served after the transaction).
pub fn eval_now(
    shared: &Arc<Shared>,
    conn: &mut ConnState,
    spec: &CommandSpec,
    args: &[Bytes],
    out: &mut BytesMut,
) {
    match parse(spec, args, &conn.user) {
        Ok(call) => {
            let deferred = conn.exec_ready.clone().unwrap_or_default();
            shared.scripts.busy.begin(&call);
            run::run(
                shared,
                conn.db,
                &conn.handle,
                conn.version,
                &call,
                &deferred,
                out,
            );
            shared.scripts.busy.end();
        }
        Err(e) => crate::base::reply::error(out, e),
    }
}
