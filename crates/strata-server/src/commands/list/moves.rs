//! The list commands that move elements between keys: LMOVE, RPOPLPUSH
//! and LMPOP (the blocking forms, in `commands::blocking`, share `mpop`).

use super::{at, end, get, get_mut};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::is;
use bytes::{Bytes, BytesMut};
use strata_engine::KeysView;
use strata_protocol::{write_array_len, write_bulk, write_null, write_null_array};

fn side(a: &[u8]) -> Option<bool> {
    if is(a, "left") {
        Some(true)
    } else if is(a, "right") {
        Some(false)
    } else {
        None
    }
}

/// LMOVE / RPOPLPUSH: pops from `src` and pushes onto `dst` (src == dst
/// rotates); the destination's type is checked only once the source has an
/// element, as in Redis.
fn lmove_generic(
    ctx: &mut Ctx<'_>,
    src: Bytes,
    dst: Bytes,
    from_left: bool,
    to_left: bool,
) -> Outcome {
    let (keys, needs) = if src == dst {
        // A rotation touches both ends.
        (vec![src.clone()], vec![at(&[(0, 0), (-1, -1)])])
    } else {
        (
            vec![src.clone(), dst.clone()],
            vec![end(from_left, 1), end(to_left, 1)],
        )
    };
    ctx.with_keys_needs(keys, needs, move |view, out, v| {
        match get(view, &src) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_null(out, v),
            Ok(Some(_)) => {}
        }
        if let Err(e) = get(view, &dst) {
            return reply::engine(out, &e);
        }
        let elem = match get_mut(view, &src, false) {
            Ok(Some(l)) => {
                if from_left {
                    l.pop_front()
                } else {
                    l.pop_back()
                }
            }
            _ => None,
        };
        let Some(elem) = elem else {
            return write_null(out, v);
        };
        if let Ok(Some(l)) = get_mut(view, &dst, true) {
            if to_left {
                l.push_front(elem.clone());
            } else {
                l.push_back(elem.clone());
            }
        }
        write_bulk(out, &elem);
    })
}

pub fn lmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (Some(from), Some(to)) = (side(&args[3]), side(&args[4])) else {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    };
    lmove_generic(ctx, args[1].clone(), args[2].clone(), from, to)
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    lmove_generic(ctx, args[1].clone(), args[2].clone(), false, true)
}

/// The parsed arguments of LMPOP / BLMPOP from `numkeys` on.
pub struct MpopArgs {
    pub keys: Vec<Bytes>,
    pub left: bool,
    pub count: usize,
}

/// Parses `numkeys key... LEFT|RIGHT [COUNT n]` with Redis's errors.
pub fn parse_mpop(args: &[Bytes]) -> Result<MpopArgs, &'static str> {
    let (keys, right, count) = crate::commands::parse_mpop(args, "left", "right")?;
    Ok(MpopArgs {
        keys,
        left: !right,
        count,
    })
}

/// Pops up to `count` elements from the first non-empty list of `keys` and
/// writes `[key, [elements]]`; false (nothing written) if all are empty.
/// With `blocked`, a key of another type is skipped instead of an error.
pub fn mpop(
    view: &mut KeysView<'_>,
    keys: &[Bytes],
    left: bool,
    count: usize,
    out: &mut BytesMut,
    blocked: bool,
) -> bool {
    for k in keys {
        match get(view, k) {
            Err(_) if blocked => continue,
            Err(e) => {
                reply::engine(out, &e);
                return true;
            }
            Ok(None) => continue,
            Ok(Some(l)) if l.is_empty() => continue,
            Ok(Some(_)) => {}
        }
        let Ok(Some(l)) = get_mut(view, k, false) else {
            continue;
        };
        let mut got = Vec::new();
        for _ in 0..count {
            match if left { l.pop_front() } else { l.pop_back() } {
                Some(e) => got.push(e),
                None => break,
            }
        }
        write_array_len(out, 2);
        write_bulk(out, k);
        write_array_len(out, got.len());
        for e in got {
            write_bulk(out, &e);
        }
        return true;
    }
    false
}

pub fn lmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let a = match parse_mpop(&args[1..]) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let needs = a.keys.iter().map(|_| end(a.left, a.count as u64)).collect();
    ctx.with_keys_needs(a.keys.clone(), needs, move |view, out, v| {
        if !mpop(view, &a.keys, a.left, a.count, out, false) {
            write_null_array(out, v);
        }
    })
}
