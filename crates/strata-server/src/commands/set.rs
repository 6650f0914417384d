//! set commands (being written).

use crate::command::{Ctx, Outcome};
use crate::reply;
use bytes::Bytes;

pub fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}
