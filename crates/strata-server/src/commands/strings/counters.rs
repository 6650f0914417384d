//! The counters: INCR DECR INCRBY DECRBY INCRBYFLOAT, each a
//! read-modify-write of one string (`rmw`) that keeps the key's TTL.

use super::rmw;
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::parse_i64;
use bytes::Bytes;
use strata_engine::{ExpireUpdate, Mutation};
use strata_protocol::{write_bulk, write_integer};

fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Outcome {
    rmw(
        ctx,
        key,
        move |cur| {
            let old = match cur.as_ref().map(|c| parse_i64(c.value)) {
                None => 0,
                Some(Some(n)) => n,
                Some(None) => return (Mutation::None, Err(reply::NOT_INTEGER)),
            };
            let Some(n) = old.checked_add(delta) else {
                return (Mutation::None, Err(reply::OVERFLOW));
            };
            let m = Mutation::Set {
                value: Bytes::from(n.to_string()),
                expire: ExpireUpdate::Keep,
            };
            (m, Ok(n))
        },
        |out, _, n| write_integer(out, n),
    )
}

pub fn incr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    incr_by(ctx, &args[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    incr_by(ctx, &args[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    match parse_i64(&args[2]) {
        Some(d) => incr_by(ctx, &args[1], d),
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            Outcome::Done
        }
    }
}

pub fn decrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // Redis 7: i64::MIN cannot be negated, a distinct error.
    match parse_i64(&args[2]).map(|d| d.checked_neg()) {
        Some(Some(d)) => incr_by(ctx, &args[1], d),
        Some(None) => {
            reply::error(ctx.out, reply::DECR_OVERFLOW);
            Outcome::Done
        }
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            Outcome::Done
        }
    }
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // Redis checks the key's type first, then both numbers.
    let delta = args[2].clone();
    rmw(
        ctx,
        &args[1],
        move |cur| {
            let old: &[u8] = match &cur {
                None => b"0",
                Some(c) if crate::commands::float::parse(c.value).is_some() => c.value,
                Some(_) => return (Mutation::None, Err(reply::NOT_FLOAT)),
            };
            if crate::commands::float::parse(&delta).is_none() {
                return (Mutation::None, Err(reply::NOT_FLOAT));
            }
            let Some(text) = crate::commands::float::sum_text(old, &delta) else {
                return (Mutation::None, Err(reply::NAN_OR_INF));
            };
            let text = Bytes::from(text);
            let m = Mutation::SetFloat {
                value: text.clone(),
                expire: ExpireUpdate::Keep,
            };
            (m, Ok(text))
        },
        |out, _, text| write_bulk(out, &text),
    )
}
