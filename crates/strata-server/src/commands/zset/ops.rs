//! ZUNION, ZINTER, ZDIFF (and their STOREs) with weights and aggregates,
//! ZINTERCARD, and ZSCAN. The set operations go by windows of the member
//! hash when an input is chunked (`run_setop`).

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

/// An input of ZUNION & co: a sorted set, or a plain set (scores 1);
/// only its members whose hash lies in `[lo, hi]` (all of them for the
/// whole range).
fn input(
    view: &mut KeysView<'_>,
    key: &[u8],
    lo: u64,
    hi: u64,
) -> Result<Vec<(Vec<u8>, f64)>, EngineError> {
    // (`peek`: each key was looked up, and counted, when the read began.)
    Ok(match view.peek(key) {
        None => Vec::new(),
        Some(ValueRef::Coll(Collection::ZSet(z))) => z
            .iter_hashes(lo, hi)
            .map(|(m, s)| (m.to_vec(), s))
            .collect(),
        Some(ValueRef::Coll(Collection::Set(s))) => {
            s.iter_hashes(lo, hi).map(|m| (m.to_vec(), 1.0)).collect()
        }
        Some(_) => return Err(EngineError::WrongType),
    })
}

/// Redis's union / intersection / difference of weighted inputs.
/// Weighted inputs: each input's (member, score) pairs and its weight,
/// smallest input first for a union or intersection (Redis orders them by
/// size, which sets the order of the float additions: `input_order`).
type Inputs = Vec<(Vec<(Vec<u8>, f64)>, f64)>;

fn combine(op: SetOp, srcs: Inputs, agg: Aggregate) -> ZSet {
    let mut out = ZSet::default();
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

/// The order in which the inputs of sizes `sizes` are combined: by size
/// (stable), as Redis sorts them, for a union or an intersection.
fn input_order(op: SetOp, sizes: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    if op != SetOp::Diff {
        order.sort_by_key(|&i| sizes[i]);
    }
    order
}

/// What becomes of the result.
#[derive(Clone)]
enum Sink {
    /// The members (WITHSCORES: and scores) are the reply.
    Reply,
    /// Stored at this key; the reply is its size.
    Store(Bytes),
    /// The reply is the size (ZINTERCARD).
    Card,
}

/// The options after the keys, parsed (`parse_opts`: Err is the error
/// reply) once the inputs' types are checked, as Redis checks them first.
struct Opts {
    weights: Vec<f64>,
    agg: Aggregate,
    withscores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    limit: u64,
}

fn parse_opts(op: SetOp, sink: &Sink, n: usize, opts: &[Bytes]) -> Result<Opts, &'static str> {
    let mut o = Opts {
        weights: vec![1.0; n],
        agg: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let mut j = 0;
    while j < opts.len() {
        let left = opts.len() - j;
        if matches!(sink, Sink::Card) {
            if is(&opts[j], "limit") && left >= 2 {
                match parse_i64(&opts[j + 1]) {
                    Some(l) if l >= 0 => o.limit = l as u64,
                    _ => return Err(crate::base::reply::LIMIT_NEGATIVE),
                }
                j += 2;
                continue;
            }
            return Err(reply::SYNTAX);
        }
        if op != SetOp::Diff && left > n && is(&opts[j], "weights") {
            for (i, w) in o.weights.iter_mut().enumerate() {
                *w = parse_score(&opts[j + 1 + i]).ok_or("ERR weight value is not a float")?;
            }
            j += 1 + n;
        } else if op != SetOp::Diff && left >= 2 && is(&opts[j], "aggregate") {
            o.agg = if is(&opts[j + 1], "sum") {
                Aggregate::Sum
            } else if is(&opts[j + 1], "min") {
                Aggregate::Min
            } else if is(&opts[j + 1], "max") {
                Aggregate::Max
            } else {
                return Err(reply::SYNTAX);
            };
            j += 2;
        } else if matches!(sink, Sink::Reply) && is(&opts[j], "withscores") {
            o.withscores = true;
            j += 1;
        } else {
            return Err(reply::SYNTAX);
        }
    }
    Ok(o)
}

/// A set operation's state (over one step, or window by window).
#[derive(Default)]
struct St {
    /// An error reply.
    error: Option<BytesMut>,
    order: Vec<usize>,
    opts: Option<Opts>,
    /// The result so far (`Sink::Reply`, `Sink::Store`) or its size.
    acc: ZSet,
    count: u64,
}

/// Adds one window's (or the whole) result; with the last window, stores
/// it (`Sink::Store`).
fn add_result(view: &mut KeysView<'_>, sink: &Sink, st: &mut St, z: ZSet, last: bool) {
    st.count += z.len() as u64;
    if !matches!(sink, Sink::Card) {
        if st.acc.is_empty() {
            st.acc = z;
        } else {
            for (m, s) in z.iter() {
                st.acc.insert(m, s);
            }
        }
    }
    if let (Sink::Store(d), true) = (sink, last) {
        let z = normalize_for_store(std::mem::take(&mut st.acc), &view.encoding_limits());
        view.put(d, Value::Coll(Box::new(Collection::ZSet(z))));
    }
}

/// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD over `keys`.
/// When an input is chunked, by windows of the member hash
/// (`Engine::stream_windows`): a member's every copy is in one window, so
/// the windows' results make the whole one, and the inputs are never in
/// RAM at once (the result is).
fn run_setop(
    ctx: &mut Ctx<'_>,
    op: SetOp,
    keys: Vec<Bytes>,
    opts: Vec<Bytes>,
    sink: Sink,
) -> Outcome {
    let mut all = keys.clone();
    if let Sink::Store(d) = &sink {
        all.push(d.clone());
    }
    let n = keys.len();
    let (ikeys, isink, esink) = (keys.clone(), sink.clone(), sink.clone());
    let read = ctx.engine().stream_windows(
        ctx.db(),
        all,
        move |view| {
            let mut st = St::default();
            let mut sizes = Vec::with_capacity(n);
            let mut chunked = false;
            for k in &ikeys {
                match view.get(k) {
                    None => sizes.push(0),
                    Some(ValueRef::Coll(Collection::ZSet(z))) => {
                        chunked |= z.is_chunked();
                        sizes.push(z.len());
                    }
                    Some(ValueRef::Coll(Collection::Set(s))) => {
                        chunked |= s.is_chunked();
                        sizes.push(s.len());
                    }
                    Some(_) => {
                        let mut out = BytesMut::new();
                        reply::engine(&mut out, &EngineError::WrongType);
                        st.error = Some(out);
                        return (st, false);
                    }
                }
            }
            match parse_opts(op, &isink, n, &opts) {
                Ok(o) => st.opts = Some(o),
                Err(msg) => {
                    let mut out = BytesMut::new();
                    reply::error(&mut out, msg);
                    st.error = Some(out);
                    return (st, false);
                }
            }
            st.order = input_order(op, &sizes);
            if chunked {
                return (st, true);
            }
            let z = window(view, &ikeys, op, &st, 0, u64::MAX);
            add_result(view, &isink, &mut st, z, true);
            (st, false)
        },
        move |view, lo, hi, st| {
            let z = window(view, &keys, op, st, lo, hi);
            add_result(view, &esink, st, z, hi == u64::MAX);
        },
    );
    ctx.reply_with(read, true, move |out, v, st| {
        if let Some(e) = st.error {
            return out.extend_from_slice(&e);
        }
        let Some(o) = &st.opts else { return };
        match sink {
            Sink::Store(_) => write_integer(out, st.count as i64),
            Sink::Card => write_integer(
                out,
                if o.limit > 0 {
                    st.count.min(o.limit)
                } else {
                    st.count
                } as i64,
            ),
            Sink::Reply => {
                let items: Vec<(&[u8], f64)> = st.acc.iter().collect();
                write_members(out, v, o.withscores, &items);
            }
        }
    })
}

/// The result over the members whose hash lies in `[lo, hi]`.
fn window(view: &mut KeysView<'_>, keys: &[Bytes], op: SetOp, st: &St, lo: u64, hi: u64) -> ZSet {
    let Some(o) = &st.opts else {
        return ZSet::default();
    };
    let inputs: Inputs = st
        .order
        .iter()
        .map(|&i| {
            (
                input(view, &keys[i], lo, hi).unwrap_or_default(),
                o.weights[i],
            )
        })
        .collect();
    combine(op, inputs, o.agg)
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
    let sink = match store {
        true => Sink::Store(args[1].clone()),
        false => Sink::Reply,
    };
    run_setop(ctx, op, keys, opts, sink)
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
    run_setop(ctx, SetOp::Inter, keys, opts, Sink::Card)
}

pub fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(cursor) = parse_cursor(&args[2]) else {
        reply::error(ctx.out, crate::base::reply::INVALID_CURSOR);
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
                    .is_none_or(|p| crate::base::glob::glob_match(p, m, false))
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
