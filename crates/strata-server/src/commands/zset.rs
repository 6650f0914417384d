//! sorted_set commands (being written).

use crate::command::{Ctx, Outcome};
use crate::reply;
use bytes::Bytes;

pub fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}

pub fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    reply::unknown_command(ctx.out, args);
    Outcome::Done
}
