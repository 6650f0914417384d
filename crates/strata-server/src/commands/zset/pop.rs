//! Pops: ZPOPMIN, ZPOPMAX, ZMPOP, the bodies of BZPOPMIN/BZPOPMAX/BZMPOP
//! (see `commands::blocking`), and ZRANDMEMBER.

use super::range::write_members;
use super::*;

/// Pops up to `count` members from the low (or high, `max`) end.
fn pop_n(z: &mut ZSet, max: bool, count: usize) -> Vec<(Box<[u8]>, f64)> {
    let mut got = Vec::new();
    for _ in 0..count {
        match z.pop(max) {
            Some(p) => got.push(p),
            None => break,
        }
    }
    got
}

fn zpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> Outcome {
    if args.len() > 3 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    // Redis gives the range message for a non-integer too.
    let count = match args.get(2).map(|c| parse_i64(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as u64),
        Some(_) => {
            reply::error(ctx.out, reply::NOT_POSITIVE_COUNT);
            return Outcome::Done;
        }
    };
    let key = args[1].clone();
    // Of a chunked set, only the end's parts and the popped members' parts
    // are read.
    let n = count.map_or(1, |c| c.min(i64::MAX as u64) as i64);
    let range = if max { (-n, -1) } else { (0, n - 1) };
    let ranges: &[(i64, i64)] = if n == 0 { &[] } else { &[range] };
    let need = Need::zranks(ranges, true, false);
    ctx.with_key_need(key.clone(), need, move |view, out, v| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_array_len(out, 0),
            Ok(Some(_)) if count == Some(0) => return write_array_len(out, 0),
            Ok(Some(_)) => {}
        }
        let Ok(Some(z)) = get_mut(view, &key, false) else {
            return write_array_len(out, 0);
        };
        let got = pop_n(
            z,
            max,
            count.map_or(1, |c| c.min(usize::MAX as u64) as usize),
        );
        let nested = count.is_some() && v == Version::Resp3;
        write_array_len(out, if nested { got.len() } else { got.len() * 2 });
        for (m, s) in got {
            if nested {
                write_array_len(out, 2);
            }
            write_bulk(out, &m);
            write_score(out, v, s);
        }
    })
}

pub fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    zpop(ctx, args, false)
}
pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    zpop(ctx, args, true)
}

/// The parsed arguments of ZMPOP / BZMPOP from `numkeys` on.
pub struct ZmpopArgs {
    pub keys: Vec<Bytes>,
    pub max: bool,
    pub count: usize,
}

/// Parses `numkeys key... MIN|MAX [COUNT n]` with Redis's errors.
pub fn parse_zmpop(args: &[Bytes]) -> Result<ZmpopArgs, &'static str> {
    let (keys, max, count) = super::super::parse_mpop(args, "min", "max")?;
    Ok(ZmpopArgs { keys, max, count })
}

/// Pops from the first non-empty sorted set of `keys` and writes
/// `[key, [[member, score] ...]]`; false (nothing written) if all are empty.
/// With `blocked`, a key of another type is skipped instead of an error.
pub fn zmpop_on(
    view: &mut KeysView<'_>,
    keys: &[Bytes],
    max: bool,
    count: usize,
    out: &mut BytesMut,
    v: Version,
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
            Ok(Some(z)) if z.is_empty() => continue,
            Ok(Some(_)) => {}
        }
        let Ok(Some(z)) = get_mut(view, k, false) else {
            continue;
        };
        let got = pop_n(z, max, count);
        write_array_len(out, 2);
        write_bulk(out, k);
        write_array_len(out, got.len());
        for (m, s) in got {
            write_array_len(out, 2);
            write_bulk(out, &m);
            write_score(out, v, s);
        }
        return true;
    }
    false
}

/// BZPOPMIN / BZPOPMAX's pop: `[key, member, score]` from the first
/// non-empty sorted set; false if all are empty.
pub fn bzpop_on(
    view: &mut KeysView<'_>,
    keys: &[Bytes],
    max: bool,
    out: &mut BytesMut,
    v: Version,
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
            Ok(Some(z)) if z.is_empty() => continue,
            Ok(Some(_)) => {}
        }
        let Ok(Some(z)) = get_mut(view, k, false) else {
            continue;
        };
        if let Some((m, s)) = z.pop(max) {
            write_array_len(out, 3);
            write_bulk(out, k);
            write_bulk(out, &m);
            write_score(out, v, s);
            return true;
        }
    }
    false
}

pub fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let a = match parse_zmpop(&args[1..]) {
        Ok(a) => a,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    ctx.with_keys(a.keys.clone(), move |view, out, v| {
        if !zmpop_on(view, &a.keys, a.max, a.count, out, v, false) {
            write_null_array(out, v);
        }
    })
}

pub fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() == 2 {
        // Of a chunked set only the part holding the pick is read
        // (`Need::Pick`: the same position under the same locks).
        let seed: u64 = rand::thread_rng().gen();
        return read_need(ctx, &args[1], Need::Pick(seed), move |z, out, v| {
            match z.filter(|z| !z.is_empty()) {
                Some(z) => {
                    let i = strata_engine::pick_index(seed, z.len());
                    match z.get_rank(i) {
                        Some((m, _)) => write_bulk(out, m),
                        None => write_null(out, v),
                    }
                }
                None => write_null(out, v),
            }
        });
    }
    let (count, withscores) = match super::super::parse_rand_count(&args[2..], "withscores") {
        Ok(c) => c,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    read(ctx, &args[1], move |z, out, v| {
        let Some(z) = z.filter(|z| !z.is_empty() && count != 0) else {
            return write_array_len(out, 0);
        };
        let all: Vec<(&[u8], f64)> = z.iter().collect();
        if count < 0 {
            // Picks with repeats, written as they are drawn (no list of
            // |count| positions: the count is the client's).
            let n = count.unsigned_abs() as usize;
            let pairs = withscores && v == Version::Resp3;
            write_array_len(
                out,
                if withscores && !pairs {
                    n.saturating_mul(2)
                } else {
                    n
                },
            );
            let mut rng = rand::thread_rng();
            for _ in 0..n {
                if let Some((m, s)) = all.get(rng.gen_range(0..all.len())) {
                    if pairs {
                        write_array_len(out, 2);
                    }
                    write_bulk(out, m);
                    if withscores {
                        write_score(out, v, *s);
                    }
                }
            }
            return;
        }
        if count as u64 >= all.len() as u64 {
            // Redis 7.0 replies the whole set, walking it from the top.
            let rev: Vec<(&[u8], f64)> = all.iter().rev().copied().collect();
            return write_members(out, v, withscores, &rev);
        }
        let picked: Vec<(&[u8], f64)> = pick_indexes(all.len(), count)
            .into_iter()
            .filter_map(|i| all.get(i).copied())
            .collect();
        write_members(out, v, withscores, &picked);
    })
}
