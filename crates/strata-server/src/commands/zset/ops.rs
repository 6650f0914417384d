//! ZUNION, ZINTER, ZDIFF (and their STOREs) with weights and aggregates,
//! ZINTERCARD, and ZSCAN.

use super::range::{normalize_for_store, write_members};
use super::*;

#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, a: Aggregate) {
    match a {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val
            }
        }
    }
}

/// An input of ZUNION & co: a sorted set, or a plain set (scores 1).
fn input(view: &mut KeysView<'_>, key: &[u8]) -> Result<Vec<(Vec<u8>, f64)>, EngineError> {
    Ok(match view.get(key) {
        None => Vec::new(),
        Some(ValueRef::Coll(Collection::ZSet(z))) => {
            z.iter().map(|(m, s)| (m.to_vec(), s)).collect()
        }
        Some(ValueRef::Coll(Collection::Set(s))) => s.iter().map(|m| (m.to_vec(), 1.0)).collect(),
        Some(_) => return Err(EngineError::WrongType),
    })
}

/// Redis's union / intersection / difference of weighted inputs.
/// Weighted inputs: each input's (member, score) pairs and its weight.
type Inputs = Vec<(Vec<(Vec<u8>, f64)>, f64)>;

fn combine(op: SetOp, mut srcs: Inputs, agg: Aggregate) -> ZSet {
    let mut out = ZSet::default();
    if op != SetOp::Diff {
        // Redis orders the inputs by size (stable), which sets the order
        // of the float additions.
        srcs.sort_by_key(|(s, _)| s.len());
    }
    match op {
        SetOp::Union => {
            let mut acc: std::collections::HashMap<Vec<u8>, f64> = std::collections::HashMap::new();
            for (src, w) in &srcs {
                for (m, s) in src {
                    let mut score = w * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, agg),
                        None => {
                            acc.insert(m.clone(), score);
                        }
                    }
                }
            }
            for (m, s) in acc {
                out.insert(&m, s);
            }
        }
        SetOp::Inter => {
            let Some(((first, w0), rest)) = srcs.split_first() else {
                return out;
            };
            let maps: Vec<std::collections::HashMap<&[u8], f64>> = rest
                .iter()
                .map(|(s, _)| s.iter().map(|(m, x)| (&m[..], *x)).collect())
                .collect();
            'outer: for (m, s) in first {
                let mut score = w0 * s;
                if score.is_nan() {
                    score = 0.0;
                }
                for (map, (_, w)) in maps.iter().zip(rest) {
                    match map.get(&m[..]) {
                        Some(x) => aggregate(&mut score, x * w, agg),
                        None => continue 'outer,
                    }
                }
                out.insert(m, score);
            }
        }
        SetOp::Diff => {
            let Some(((first, _), rest)) = srcs.split_first() else {
                return out;
            };
            let others: std::collections::HashSet<&[u8]> = rest
                .iter()
                .flat_map(|(s, _)| s.iter().map(|(m, _)| &m[..]))
                .collect();
            for (m, s) in first {
                if !others.contains(&m[..]) {
                    out.insert(m, *s);
                }
            }
        }
    }
    out
}

fn setop_cmd(ctx: &mut Ctx<'_>, args: &[Bytes], op: SetOp, store: bool, name: &str) -> Outcome {
    let nk = if store { 2 } else { 1 };
    let setnum = match parse_i64(&args[nk]) {
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            return Outcome::Done;
        }
        Some(n) if n < 1 => {
            reply::error(
                ctx.out,
                &format!("ERR at least 1 input key is needed for '{name}' command"),
            );
            return Outcome::Done;
        }
        Some(n) => n as u64,
    };
    if setnum > (args.len() - nk - 1) as u64 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    let n = setnum as usize;
    let keys: Vec<Bytes> = args[nk + 1..nk + 1 + n].to_vec();
    let opts: Vec<Bytes> = args[nk + 1 + n..].to_vec();
    let dst = store.then(|| args[1].clone());
    let mut all = keys.clone();
    if let Some(d) = &dst {
        all.push(d.clone());
    }
    ctx.with_keys(all, move |view, out, v| {
        // Redis checks the inputs' types before the options.
        let mut inputs = Vec::with_capacity(keys.len());
        for k in &keys {
            match input(view, k) {
                Ok(i) => inputs.push(i),
                Err(e) => return reply::engine(out, &e),
            }
        }
        let mut weights = vec![1.0; n];
        let (mut agg, mut withscores) = (Aggregate::Sum, false);
        let mut j = 0;
        while j < opts.len() {
            let left = opts.len() - j;
            if op != SetOp::Diff && left > n && is(&opts[j], "weights") {
                for (i, w) in weights.iter_mut().enumerate() {
                    match parse_score(&opts[j + 1 + i]) {
                        Some(x) => *w = x,
                        None => return reply::error(out, "ERR weight value is not a float"),
                    }
                }
                j += 1 + n;
            } else if op != SetOp::Diff && left >= 2 && is(&opts[j], "aggregate") {
                agg = if is(&opts[j + 1], "sum") {
                    Aggregate::Sum
                } else if is(&opts[j + 1], "min") {
                    Aggregate::Min
                } else if is(&opts[j + 1], "max") {
                    Aggregate::Max
                } else {
                    return reply::error(out, reply::SYNTAX);
                };
                j += 2;
            } else if dst.is_none() && is(&opts[j], "withscores") {
                withscores = true;
                j += 1;
            } else {
                return reply::error(out, reply::SYNTAX);
            }
        }
        let z = combine(op, inputs.into_iter().zip(weights).collect(), agg);
        match &dst {
            Some(d) => {
                let z = normalize_for_store(z, &view.encoding_limits());
                let len = z.len();
                view.put(d, Value::Coll(Box::new(Collection::ZSet(z))));
                write_integer(out, len as i64);
            }
            None => {
                let items: Vec<(&[u8], f64)> = z.iter().collect();
                write_members(out, v, withscores, &items);
            }
        }
    })
}

pub fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setop_cmd(ctx, args, SetOp::Union, false, "zunion")
}
pub fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setop_cmd(ctx, args, SetOp::Inter, false, "zinter")
}
pub fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setop_cmd(ctx, args, SetOp::Diff, false, "zdiff")
}
pub fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setop_cmd(ctx, args, SetOp::Union, true, "zunionstore")
}
pub fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setop_cmd(ctx, args, SetOp::Inter, true, "zinterstore")
}
pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    setop_cmd(ctx, args, SetOp::Diff, true, "zdiffstore")
}

pub fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    // Redis 7.0 runs ZINTERCARD through ZINTER's parser, with its errors.
    let numkeys = match parse_i64(&args[1]) {
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            return Outcome::Done;
        }
        Some(n) if n < 1 => {
            reply::error(
                ctx.out,
                "ERR at least 1 input key is needed for 'zintercard' command",
            );
            return Outcome::Done;
        }
        Some(n) => n as u64,
    };
    if numkeys > (args.len() - 2) as u64 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    let n = numkeys as usize;
    let keys: Vec<Bytes> = args[2..2 + n].to_vec();
    let opts: Vec<Bytes> = args[2 + n..].to_vec();
    ctx.with_keys(keys.clone(), move |view, out, _| {
        // Redis checks the inputs' types before the options.
        let mut inputs = Vec::with_capacity(keys.len());
        for k in &keys {
            match input(view, k) {
                Ok(i) => inputs.push((i, 1.0)),
                Err(e) => return reply::engine(out, &e),
            }
        }
        let mut limit = 0u64;
        let mut j = 0;
        while j < opts.len() {
            if is(&opts[j], "limit") && j + 1 < opts.len() {
                match parse_i64(&opts[j + 1]) {
                    Some(l) if l >= 0 => limit = l as u64,
                    _ => return reply::error(out, "ERR LIMIT can't be negative"),
                }
                j += 2;
            } else {
                return reply::error(out, reply::SYNTAX);
            }
        }
        let c = combine(SetOp::Inter, inputs, Aggregate::Sum).len() as u64;
        write_integer(out, if limit > 0 { c.min(limit) } else { c } as i64);
    })
}

pub fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(cursor) = parse_cursor(&args[2]) else {
        reply::error(ctx.out, "ERR invalid cursor");
        return Outcome::Done;
    };
    let opts = parse_scan_opts(&args[3..]);
    // A chunked set's cursor is a member-hash position, as HSCAN's: only the
    // member parts from it are read (`Need::Scan`).
    let count = opts.as_ref().map_or(10, |o| o.count);
    let need = Need::Scan {
        from: cursor,
        count,
    };
    read_need(ctx, &args[1], need, move |z, out, _| {
        let Some(z) = z else {
            return write_empty_scan(out);
        };
        let o = match opts {
            Ok(o) => o,
            Err(e) => return reply::error(out, e),
        };
        let (items, next): (Vec<(&[u8], f64)>, u64) = match z.chunked() {
            Some(c) => {
                let (items, next) = c.members.scan(cursor, o.count);
                let items = items
                    .into_iter()
                    .filter_map(|(m, s)| Some((m, f64::from_le_bytes(s.try_into().ok()?))))
                    .collect();
                (items, next)
            }
            None => {
                // A sorted set's positions move on every insert, so a
                // resumable cursor could miss members: every call returns
                // the whole set (COUNT is a hint in Redis too) with cursor 0.
                let (_, range) = scan_positions(z.len(), 0, o.count, true);
                (z.iter().take(range.end).collect(), 0)
            }
        };
        let items: Vec<(&[u8], f64)> = items
            .into_iter()
            .filter(|(m, _)| {
                o.pattern
                    .as_ref()
                    .is_none_or(|p| crate::glob::glob_match(p, m, false))
            })
            .collect();
        write_array_len(out, 2);
        write_bulk(out, next.to_string().as_bytes());
        write_array_len(out, items.len() * 2);
        for (m, s) in items {
            write_bulk(out, m);
            write_bulk(out, fmt_score(s).as_bytes());
        }
    })
}
