//! MULTI EXEC DISCARD WATCH UNWATCH: the per-connection side. Queueing and
//! running a transaction is `crate::exec::transaction` (the connection runs EXEC,
//! since it runs other commands).

use crate::base::reply;
use crate::command::Multi;
use crate::command::{Ctx, Outcome};
use bytes::Bytes;
use strata_protocol::write_simple;

pub fn multi(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    if ctx.conn.multi.is_some() {
        reply::error(ctx.out, "ERR MULTI calls can not be nested");
        return Outcome::Done;
    }
    ctx.conn.multi = Some(Multi::default());
    write_simple(ctx.out, b"OK");
    Outcome::Done
}

pub fn exec(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    if ctx.conn.multi.is_none() {
        reply::error(ctx.out, crate::base::reply::EXEC_WITHOUT_MULTI);
        return Outcome::Done;
    }
    Outcome::Exec
}

pub fn discard(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    if ctx.conn.multi.take().is_none() {
        reply::error(ctx.out, "ERR DISCARD without MULTI");
        return Outcome::Done;
    }
    ctx.conn.watched.clear();
    write_simple(ctx.out, b"OK");
    Outcome::Done
}

pub fn watch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if ctx.conn.multi.is_some() {
        reply::error(ctx.out, "ERR WATCH inside MULTI is not allowed");
        return Outcome::Done;
    }
    let db = ctx.db();
    for k in &args[1..] {
        ctx.conn.watched.watch(db, k);
    }
    write_simple(ctx.out, b"OK");
    Outcome::Done
}

pub fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    ctx.conn.watched.clear();
    write_simple(ctx.out, b"OK");
    Outcome::Done
}
