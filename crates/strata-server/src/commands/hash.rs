//! hash commands (being written).

use crate::command::{Ctx, Outcome};
use crate::reply;
use bytes::Bytes;

pub fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}
