//! The ZRANGE family: ranges by rank, score and lex (with LIMIT and REV),
//! ZRANGESTORE, ZCOUNT, ZLEXCOUNT and ZREMRANGEBY*.

use super::*;

/// One end of a score range.
#[derive(Clone, Copy)]
struct ScoreEnd {
    v: f64,
    ex: bool,
}

/// Parses a score range end as Redis's `zslParseRangeItem`: C's `strtod`
/// up to the end of the text or a NUL, so leading spaces pass, an empty
/// text is 0 and overflow is infinity; `(` = exclusive; NaN is refused.
fn parse_score_end(b: &[u8]) -> Option<ScoreEnd> {
    let (ex, rest) = match b.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, b),
    };
    let r = score::strtod(rest);
    let whole = matches!(rest.get(r.len), None | Some(0));
    (whole && !r.v.is_nan()).then_some(ScoreEnd { v: r.v, ex })
}

fn score_bounds(min: ScoreEnd, max: ScoreEnd) -> (Bound<f64>, Bound<f64>) {
    let b = |e: ScoreEnd| {
        if e.ex {
            Bound::Excluded(e.v)
        } else {
            Bound::Included(e.v)
        }
    };
    (b(min), b(max))
}

/// One end of a lex range: a member, or the `-` / `+` extremes.
#[derive(Clone)]
enum LexEnd {
    Min,
    Max,
    Val(Vec<u8>, bool),
}

fn parse_lex_end(b: &[u8]) -> Option<LexEnd> {
    match b.first()? {
        b'+' if b.len() == 1 => Some(LexEnd::Max),
        b'-' if b.len() == 1 => Some(LexEnd::Min),
        b'(' => Some(LexEnd::Val(b[1..].to_vec(), true)),
        b'[' => Some(LexEnd::Val(b[1..].to_vec(), false)),
        _ => None,
    }
}

fn gte_min(m: &[u8], min: &LexEnd) -> bool {
    match min {
        LexEnd::Min => true,
        LexEnd::Max => false,
        LexEnd::Val(v, ex) => {
            if *ex {
                m > &v[..]
            } else {
                m >= &v[..]
            }
        }
    }
}

fn lte_max(m: &[u8], max: &LexEnd) -> bool {
    match max {
        LexEnd::Max => true,
        LexEnd::Min => false,
        LexEnd::Val(v, ex) => {
            if *ex {
                m < &v[..]
            } else {
                m <= &v[..]
            }
        }
    }
}

/// Whether a lex range can hold anything (Redis's first test).
fn lex_nonempty(min: &LexEnd, max: &LexEnd) -> bool {
    use std::cmp::Ordering::*;
    let ord = |e: &LexEnd| match e {
        LexEnd::Min => (0, Vec::new()),
        LexEnd::Max => (2, Vec::new()),
        LexEnd::Val(v, _) => (1, v.clone()),
    };
    let ex = |e: &LexEnd| matches!(e, LexEnd::Val(_, true) | LexEnd::Max | LexEnd::Min);
    match ord(min).cmp(&ord(max)) {
        Greater => false,
        Equal => !(ex(min) || ex(max)),
        Less => true,
    }
}

/// Members in a lex range, as Redis walks a listpack: from the first
/// member (in score order) at or above `min` while at or below `max`
/// (or, reversed, from the last member at or below `max` while at or
/// above `min`). The same as a sorted walk when all scores are equal.
fn lex_range<'z>(z: &'z ZSet, min: &LexEnd, max: &LexEnd, rev: bool) -> Vec<(&'z [u8], f64)> {
    let mut out = Vec::new();
    if z.is_empty() || !lex_nonempty(min, max) {
        return out;
    }
    let all: Vec<(&[u8], f64)> = z.iter().collect();
    let (first, last) = (all[0].0, all[all.len() - 1].0);
    if !gte_min(last, min) || !lte_max(first, max) {
        return out;
    }
    if !rev {
        let Some(start) = all.iter().position(|(m, _)| gte_min(m, min)) else {
            return out;
        };
        for &(m, s) in &all[start..] {
            if !lte_max(m, max) {
                break;
            }
            out.push((m, s));
        }
    } else {
        let Some(start) = all.iter().rposition(|(m, _)| lte_max(m, max)) else {
            return out;
        };
        for &(m, s) in all[..=start].iter().rev() {
            if !gte_min(m, min) {
                break;
            }
            out.push((m, s));
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum RangeKind {
    Rank,
    Score,
    Lex,
}

/// A parsed ZRANGE-family request.
#[derive(Clone)]
struct RangeReq {
    kind: RangeKind,
    rev: bool,
    withscores: bool,
    /// (offset, count); count < 0 = all.
    limit: Option<(i64, i64)>,
    rank: (i64, i64),
    score: (ScoreEnd, ScoreEnd),
    lex: (LexEnd, LexEnd),
}

/// Parses `min max [options]` of the ZRANGE family. `fixed`: the legacy
/// commands' kind and direction (their keywords are then syntax errors).
fn parse_range(
    args: &[Bytes],
    fixed: Option<(RangeKind, bool)>,
    store: bool,
) -> Result<RangeReq, &'static str> {
    let (mut kind, mut rev) = match fixed {
        Some((k, r)) => (Some(k), Some(r)),
        None => (None, None),
    };
    let (mut withscores, mut limit) = (false, None);
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if !store && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && left >= 2 {
            match (parse_i64(&args[j + 1]), parse_i64(&args[j + 2])) {
                (Some(o), Some(c)) => limit = Some((o, c)),
                _ => return Err(reply::NOT_INTEGER),
            }
            j += 2;
        } else if rev.is_none() && is(a, "rev") {
            rev = Some(true);
        } else if kind.is_none() && is(a, "bylex") {
            kind = Some(RangeKind::Lex);
        } else if kind.is_none() && is(a, "byscore") {
            kind = Some(RangeKind::Score);
        } else {
            return Err(reply::SYNTAX);
        }
        j += 1;
    }
    let kind = kind.unwrap_or(RangeKind::Rank);
    let rev = rev.unwrap_or(false);
    if limit.is_some_and(|(_, c)| c != -1) && kind == RangeKind::Rank {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && kind == RangeKind::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut a, mut b) = (&args[0], &args[1]);
    if rev && kind != RangeKind::Rank {
        std::mem::swap(&mut a, &mut b);
    }
    let mut req = RangeReq {
        kind,
        rev,
        withscores,
        limit,
        rank: (0, 0),
        score: (
            ScoreEnd { v: 0.0, ex: false },
            ScoreEnd { v: 0.0, ex: false },
        ),
        lex: (LexEnd::Min, LexEnd::Max),
    };
    match kind {
        RangeKind::Rank => match (parse_i64(a), parse_i64(b)) {
            (Some(x), Some(y)) => req.rank = (x, y),
            _ => return Err(reply::NOT_INTEGER),
        },
        RangeKind::Score => match (parse_score_end(a), parse_score_end(b)) {
            (Some(x), Some(y)) => req.score = (x, y),
            _ => return Err(NOT_FLOAT_RANGE),
        },
        RangeKind::Lex => match (parse_lex_end(a), parse_lex_end(b)) {
            (Some(x), Some(y)) => req.lex = (x, y),
            _ => return Err(NOT_LEX_RANGE),
        },
    }
    Ok(req)
}

/// Applies LIMIT as Redis does: a negative offset gives nothing, a
/// negative count everything after the offset.
fn apply_limit<T>(items: Vec<T>, limit: Option<(i64, i64)>) -> Vec<T> {
    match limit {
        None => items,
        Some((off, _)) if off < 0 => Vec::new(),
        Some((off, cnt)) => {
            let it = items.into_iter().skip(off as usize);
            if cnt < 0 {
                it.collect()
            } else {
                it.take(cnt as usize).collect()
            }
        }
    }
}

/// The members a range request selects, in reply order.
fn select<'z>(z: &'z ZSet, r: &RangeReq) -> Vec<(&'z [u8], f64)> {
    match r.kind {
        RangeKind::Rank => {
            let Some((s, e)) = clamp_range(r.rank.0, r.rank.1, z.len()) else {
                return Vec::new();
            };
            let n = z.len();
            if r.rev {
                z.rank_range(n - 1 - e, n - s).rev().collect()
            } else {
                z.rank_range(s, e + 1).collect()
            }
        }
        RangeKind::Score => {
            let (min, max) = score_bounds(r.score.0, r.score.1);
            let items: Vec<_> = if r.rev {
                z.range_by_score(min, max).rev().collect()
            } else {
                z.range_by_score(min, max).collect()
            };
            apply_limit(items, r.limit)
        }
        RangeKind::Lex => apply_limit(lex_range(z, &r.lex.0, &r.lex.1, r.rev), r.limit),
    }
}

/// What of a chunked sorted set a range request reads: the order parts of
/// its ranks or scores (and, with `members`, the member parts of what it
/// selects, for removals); a lex range reads the whole set.
fn need_of(r: &RangeReq, members: bool) -> Need {
    match r.kind {
        RangeKind::Rank => Need::zranks(&[r.rank], members, r.rev),
        RangeKind::Score => {
            let (min, max) = score_bounds(r.score.0, r.score.1);
            Need::ZScores { min, max, members }
        }
        RangeKind::Lex => Need::Whole,
    }
}

/// Writes members (with scores: flat in RESP2, pairs in RESP3).
pub(super) fn write_members(
    out: &mut BytesMut,
    v: Version,
    withscores: bool,
    items: &[(&[u8], f64)],
) {
    write_members_len(out, v, withscores, items.len());
    for &(m, s) in items {
        write_member(out, v, withscores, m, s);
    }
}

/// The array header of `n` members (`write_members`).
fn write_members_len(out: &mut BytesMut, v: Version, withscores: bool, n: usize) {
    let pairs = withscores && v == Version::Resp3;
    write_array_len(out, if withscores && !pairs { n * 2 } else { n });
}

/// One member of a `write_members` reply.
fn write_member(out: &mut BytesMut, v: Version, withscores: bool, m: &[u8], s: f64) {
    if withscores && v == Version::Resp3 {
        write_array_len(out, 2);
    }
    write_bulk(out, m);
    if withscores {
        write_score(out, v, s);
    }
}

/// The ascending ranks `[a, b)` a rank or score request selects of a
/// chunked set (a score range's ends must be in RAM), LIMIT applied.
fn window(
    req: &RangeReq,
    c: &strata_engine::types::chunked::ChunkedZSet,
) -> Option<(usize, usize)> {
    let n = c.len();
    match req.kind {
        RangeKind::Rank => {
            let (s, e) = clamp_range(req.rank.0, req.rank.1, n)?;
            Some(if req.rev {
                (n - 1 - e, n - s)
            } else {
                (s, e + 1)
            })
        }
        RangeKind::Score => {
            let (min, max) = score_bounds(req.score.0, req.score.1);
            let (a, b) = c.score_ranks(min, max);
            let (off, cnt) = req.limit.unwrap_or((0, -1));
            if off < 0 {
                return None;
            }
            let off = (off as u64).min(n as u64) as usize;
            let take = |len: usize| if cnt < 0 { len } else { len.min(cnt as usize) };
            let (lo, hi) = if req.rev {
                let hi = b.saturating_sub(off).max(a);
                (hi - take(hi - a), hi)
            } else {
                let lo = (a + off).min(b);
                (lo, lo + take(b - lo))
            };
            (lo < hi).then_some((lo, hi))
        }
        RangeKind::Lex => None,
    }
}

/// ZRANGE by rank or score: of a chunked set, a batch of parts at a time
/// (`Ctx::stream_key_from`; a score range first reads the two parts where
/// its ends fall, to find its ranks), so a set larger than RAM is read
/// without being held in RAM at once.
fn range_stream_cmd(ctx: &mut Ctx<'_>, key: &Bytes, req: RangeReq) -> Outcome {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let first = match req.kind {
        RangeKind::Score => {
            let (min, max) = score_bounds(req.score.0, req.score.1);
            Need::ZScoreEnds { min, max }
        }
        // A short range's parts are read with the first step (one pass).
        _ if super::super::list::short_range(req.rank) => Need::zranks(&[req.rank], false, req.rev),
        _ => Need::Elems(Vec::new()),
    };
    // The window `init` found, for `emit` (the same version of the key).
    let found = std::sync::Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let (k, r2, f2) = (key.clone(), req.clone(), found.clone());
    ctx.stream_key_from(
        key.clone(),
        req.rev,
        first,
        move |view, out, v| {
            let z = match get(view, &k) {
                Ok(z) => z,
                Err(e) => {
                    reply::engine(out, &e);
                    return None;
                }
            };
            let Some(z) = z else {
                write_array_len(out, 0);
                return None;
            };
            let Some(c) = z.chunked() else {
                write_members(out, v, req.withscores, &select(z, &req));
                return None;
            };
            let Some((a, b)) = window(&req, c) else {
                write_array_len(out, 0);
                return None;
            };
            found[0].store(a, Relaxed);
            found[1].store(b, Relaxed);
            // About the range's share of the order family (half the set's
            // bytes), and a score each.
            let n = b - a;
            let share = z.body_len() as u128 / 2 * n as u128 / z.len() as u128;
            out.reserve(share as usize + if req.withscores { 28 } else { 4 } * n);
            write_members_len(out, v, req.withscores, n);
            Some(c.parts_for(a, b))
        },
        move |c, parts, out, v| {
            let Collection::ZSet(z) = c else { return };
            let Some(c) = z.chunked() else { return };
            let (a, b) = (f2[0].load(Relaxed), f2[1].load(Relaxed));
            let items = c.range_in_parts(parts, a, b);
            if r2.rev {
                items
                    .rev()
                    .for_each(|(m, s)| write_member(out, v, r2.withscores, m, s));
            } else {
                items.for_each(|(m, s)| write_member(out, v, r2.withscores, m, s));
            }
        },
    )
}

fn range_cmd(ctx: &mut Ctx<'_>, args: &[Bytes], fixed: Option<(RangeKind, bool)>) -> Outcome {
    let req = match parse_range(&args[2..], fixed, false) {
        Ok(r) => r,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    if req.kind != RangeKind::Lex {
        return range_stream_cmd(ctx, &args[1], req);
    }
    let need = need_of(&req, false);
    read_need(ctx, &args[1], need, move |z, out, v| match z {
        None => write_array_len(out, 0),
        Some(z) => write_members(out, v, req.withscores, &select(z, &req)),
    })
}

pub fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    range_cmd(ctx, args, None)
}
pub fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    range_cmd(ctx, args, Some((RangeKind::Rank, true)))
}
pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    range_cmd(ctx, args, Some((RangeKind::Score, false)))
}
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    range_cmd(ctx, args, Some((RangeKind::Score, true)))
}
pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    range_cmd(ctx, args, Some((RangeKind::Lex, false)))
}
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    range_cmd(ctx, args, Some((RangeKind::Lex, true)))
}

/// A result about to be stored: as a listpack (small), Redis stores a score
/// of -0 as 0.
pub fn normalize_for_store(z: ZSet, lim: &EncodingLimits) -> ZSet {
    let small = z.len() <= lim.zset_entries && z.iter().all(|(m, _)| m.len() <= lim.zset_value);
    if !small || !z.iter().any(|(_, s)| s == 0.0 && s.is_sign_negative()) {
        return z;
    }
    zset_of(z.iter().map(|(m, s)| (m, if s == 0.0 { 0.0 } else { s })))
}

/// A new sorted set holding `items`.
pub(super) fn zset_of<'a>(items: impl Iterator<Item = (&'a [u8], f64)>) -> ZSet {
    let mut z = ZSet::default();
    for (m, s) in items {
        z.insert(m, s);
    }
    z
}

pub fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let req = match parse_range(&args[3..], None, true) {
        Ok(r) => r,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let (dst, src) = (args[1].clone(), args[2].clone());
    ctx.with_keys(vec![src.clone(), dst.clone()], move |view, out, _| {
        let lim = view.encoding_limits();
        let z = match get(view, &src) {
            Err(e) => return reply::engine(out, &e),
            Ok(z) => z.map(|z| {
                // Redis 7.0 builds the result with zsetAdd, in reply order,
                // into a listpack unless a rank range is already too long:
                // scores of -0 added while it is a listpack are stored as 0.
                let items = select(z, &req);
                let mut big = req.kind == RangeKind::Rank && items.len() > lim.zset_entries;
                let mut d = ZSet::default();
                for (m, s) in items {
                    if !big && (d.len() + 1 > lim.zset_entries || m.len() > lim.zset_value) {
                        big = true;
                    }
                    d.insert(m, if s == 0.0 && !big { 0.0 } else { s });
                }
                d
            }),
        };
        let z = z.unwrap_or_default();
        let n = z.len();
        view.put(&dst, Value::Coll(Box::new(Collection::ZSet(z))));
        write_integer(out, n as i64);
    })
}

pub fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (Some(min), Some(max)) = (parse_score_end(&args[2]), parse_score_end(&args[3])) else {
        reply::error(ctx.out, NOT_FLOAT_RANGE);
        return Outcome::Done;
    };
    let (a, b) = score_bounds(min, max);
    let need = Need::ZScores {
        min: a,
        max: b,
        members: false,
    };
    read_need(ctx, &args[1], need, move |z, out, _| {
        let n = z.map_or(0, |z| match z.chunked() {
            Some(c) => {
                let (x, y) = c.score_ranks(a, b);
                y - x
            }
            None => z.range_by_score(a, b).count(),
        });
        write_integer(out, n as i64)
    })
}

pub fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let (Some(min), Some(max)) = (parse_lex_end(&args[2]), parse_lex_end(&args[3])) else {
        reply::error(ctx.out, NOT_LEX_RANGE);
        return Outcome::Done;
    };
    read(ctx, &args[1], move |z, out, _| {
        write_integer(
            out,
            z.map_or(0, |z| lex_range(z, &min, &max, false).len()) as i64,
        )
    })
}

/// ZREMRANGEBY*: removes the members `select` picks.
fn remrange(ctx: &mut Ctx<'_>, key: Bytes, req: RangeReq) -> Outcome {
    let need = need_of(&req, true);
    ctx.with_key_need(key.clone(), need, move |view, out, _| {
        let victims: Vec<Vec<u8>> = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_integer(out, 0),
            Ok(Some(z)) => select(z, &req)
                .into_iter()
                .map(|(m, _)| m.to_vec())
                .collect(),
        };
        if !victims.is_empty() {
            if let Ok(Some(z)) = get_mut(view, &key, false) {
                for m in &victims {
                    z.remove(m);
                }
            }
        }
        write_integer(out, victims.len() as i64);
    })
}

fn remrange_cmd(ctx: &mut Ctx<'_>, args: &[Bytes], kind: RangeKind) -> Outcome {
    match parse_range(&args[2..4], Some((kind, false)), true) {
        Ok(req) => remrange(ctx, args[1].clone(), req),
        Err(e) => {
            reply::error(ctx.out, e);
            Outcome::Done
        }
    }
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    remrange_cmd(ctx, args, RangeKind::Rank)
}
pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    remrange_cmd(ctx, args, RangeKind::Score)
}
pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    remrange_cmd(ctx, args, RangeKind::Lex)
}
