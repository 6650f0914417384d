//! list commands (being written).

use crate::command::{Ctx, Outcome};
use crate::reply;
use bytes::Bytes;

pub fn lpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn rpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn rpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn rpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn llen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lindex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn linsert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn ltrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn lmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}
