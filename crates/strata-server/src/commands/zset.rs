//! Sorted-set commands, as Redis 7.0 answers them: ZADD ZINCRBY ZREM ZCARD
//! ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT ZRANGE ZRANGESTORE
//! ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX
//! ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZMPOP
//! ZRANDMEMBER ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE
//! ZINTERCARD ZSCAN. Scores are replied as Redis 7.0 prints them (`%.17g`,
//! `inf`), as bulk strings in RESP2 and doubles in RESP3.

use super::hash::{parse_cursor, parse_scan_opts, pick_indexes, scan_positions, write_empty_scan};
use super::list::clamp_range;
use super::{is, parse_i64};
use crate::command::{Ctx, Outcome};
use crate::reply;
use bytes::{Bytes, BytesMut};
use rand::Rng;
use std::ops::Bound;
use strata_engine::types::{EncodingLimits, ZSet};
use strata_engine::{Collection, EngineError, KeysView, Value, ValueRef, ValueType};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_null_array, Version,
};

const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";
const NOT_LEX_RANGE: &str = "ERR min or max not valid string range item";
const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

/// A score as C's `%.17g` prints it (what Redis 7.0 replies).
pub fn fmt_score(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // 17 significant digits, correctly rounded: "d.dddddddddddddddde<exp>".
    let sci = format!("{d:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..17).contains(&exp) {
        let d = digits.trim_end_matches('0');
        let (first, rest) = d.split_at(1.min(d.len()));
        let m = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    // Fixed notation with 17 significant digits, trailing zeros removed.
    let s = if exp >= 0 {
        let point = exp as usize + 1;
        let (int, frac) = digits.split_at(point);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            int.to_string()
        } else {
            format!("{int}.{frac}")
        }
    } else {
        let zeros = "0".repeat((-exp - 1) as usize);
        let frac = format!("{zeros}{digits}");
        format!("0.{}", frac.trim_end_matches('0'))
    };
    format!("{sign}{s}")
}

/// Writes a score: a bulk string in RESP2, a double in RESP3.
pub fn write_score(out: &mut BytesMut, v: Version, d: f64) {
    let s = fmt_score(d);
    match v {
        Version::Resp2 => write_bulk(out, s.as_bytes()),
        Version::Resp3 => {
            out.extend_from_slice(b",");
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Parses a score as Redis's `getDoubleFromObject` (strtod of the whole
/// text, no leading space, no overflow or underflow to zero, no NaN).
pub fn parse_score(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity") {
        return Some(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if body.starts_with("nan") || body.starts_with("inf") {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_infinite() {
        return None;
    }
    // Underflow to zero (a non-zero digit before the exponent) is an error.
    if v == 0.0 {
        let mant = body.split(['e', 'E']).next().unwrap_or("");
        if mant.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
            return None;
        }
    }
    Some(v)
}

pub fn get<'v>(view: &'v mut KeysView<'_>, key: &[u8]) -> Result<Option<&'v ZSet>, EngineError> {
    match view.coll(key, ValueType::ZSet)? {
        Some(Collection::ZSet(z)) => Ok(Some(z)),
        _ => Ok(None),
    }
}

pub fn get_mut<'v>(
    view: &'v mut KeysView<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'v mut ZSet>, EngineError> {
    match view.coll_mut(key, ValueType::ZSet, create)? {
        Some(Collection::ZSet(z)) => Ok(Some(z)),
        _ => Ok(None),
    }
}

fn read(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    f: impl FnOnce(Option<&ZSet>, &mut BytesMut, Version) + Send + 'static,
) -> Outcome {
    let key = key.clone();
    ctx.with_keys(vec![key.clone()], move |view, out, v| {
        match get(view, &key) {
            Ok(z) => f(z, out, v),
            Err(e) => reply::engine(out, &e),
        }
    })
}

// ------------------------------------------------------------------ ZADD

struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one ZADD pair did.
enum AddOutcome {
    Added(f64),
    Updated(f64),
    /// Unchanged but processed (same score): its score.
    Same(f64),
    Nop,
    Nan,
}

/// Redis's `zsetAdd` on one member. `big`: the set has (or this member
/// gives it) the skiplist encoding, where a score of -0 is kept; a listpack
/// stores it as 0 (the reply still shows the computed score).
fn zset_add(
    z: &mut ZSet,
    m: &[u8],
    score: f64,
    f: &AddFlags,
    big: &mut bool,
    lim: &EncodingLimits,
) -> AddOutcome {
    let stored = |s: f64, big: bool| if s == 0.0 && !big { 0.0 } else { s };
    match z.score(m) {
        Some(cur) => {
            if f.nx {
                return AddOutcome::Nop;
            }
            let mut new = score;
            if f.incr {
                new += cur;
                if new.is_nan() {
                    return AddOutcome::Nan;
                }
            }
            if (f.lt && new >= cur) || (f.gt && new <= cur) {
                return AddOutcome::Nop;
            }
            if new != cur {
                z.insert(m, stored(new, *big));
                AddOutcome::Updated(new)
            } else {
                AddOutcome::Same(new)
            }
        }
        None => {
            if f.xx {
                return AddOutcome::Nop;
            }
            if z.len() + 1 > lim.zset_entries || m.len() > lim.zset_value {
                *big = true;
            }
            z.insert(m, stored(score, *big));
            AddOutcome::Added(score)
        }
    }
}

fn zadd_generic(ctx: &mut Ctx<'_>, key: Bytes, rest: &[Bytes], mut f: AddFlags) -> Outcome {
    let mut i = 0;
    while i < rest.len() {
        let o = &rest[i];
        if is(o, "nx") {
            f.nx = true;
        } else if is(o, "xx") {
            f.xx = true;
        } else if is(o, "ch") {
            f.ch = true;
        } else if is(o, "incr") {
            f.incr = true;
        } else if is(o, "gt") {
            f.gt = true;
        } else if is(o, "lt") {
            f.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &rest[i..];
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    if f.nx && f.xx {
        reply::error(
            ctx.out,
            "ERR XX and NX options at the same time are not compatible",
        );
        return Outcome::Done;
    }
    if (f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt) {
        reply::error(
            ctx.out,
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        );
        return Outcome::Done;
    }
    if f.incr && pairs.len() > 2 {
        reply::error(
            ctx.out,
            "ERR INCR option supports a single increment-element pair",
        );
        return Outcome::Done;
    }
    let mut items = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        let Some(s) = parse_score(&p[0]) else {
            reply::error(ctx.out, reply::NOT_FLOAT);
            return Outcome::Done;
        };
        items.push((s, p[1].clone()));
    }
    ctx.with_keys(vec![key.clone()], move |view, out, v| {
        let lim = view.encoding_limits();
        let big_now = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(z) => z.map(|z| z.big),
        };
        // Redis 7.0 creates a new set as a skiplist when its first member
        // is longer than the listpack limit, else as a listpack that
        // converts when a member or the length outgrows it.
        let mut big = big_now.unwrap_or_else(|| {
            lim.zset_entries == 0 || items.first().is_some_and(|(_, m)| m.len() > lim.zset_value)
        });
        let exists = big_now.is_some();
        let (mut added, mut updated, mut processed, mut last) = (0i64, 0i64, 0, 0.0);
        if exists || !f.xx {
            let Ok(Some(z)) = get_mut(view, &key, true) else {
                return reply::engine(out, &EngineError::WrongType);
            };
            for (s, m) in &items {
                match zset_add(z, m, *s, &f, &mut big, &lim) {
                    AddOutcome::Added(n) => {
                        added += 1;
                        processed += 1;
                        last = n;
                    }
                    AddOutcome::Updated(n) => {
                        updated += 1;
                        processed += 1;
                        last = n;
                    }
                    AddOutcome::Same(n) => {
                        processed += 1;
                        last = n;
                    }
                    AddOutcome::Nop => {}
                    AddOutcome::Nan => return reply::error(out, NAN_SCORE),
                }
            }
        }
        if f.incr {
            if processed > 0 {
                write_score(out, v, last);
            } else {
                write_null(out, v);
            }
        } else {
            write_integer(out, if f.ch { added + updated } else { added });
        }
    })
}

fn no_flags() -> AddFlags {
    AddFlags {
        nx: false,
        xx: false,
        gt: false,
        lt: false,
        ch: false,
        incr: false,
    }
}

pub fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    zadd_generic(ctx, args[1].clone(), &args[2..], no_flags())
}

pub fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let f = AddFlags {
        incr: true,
        ..no_flags()
    };
    zadd_generic(ctx, args[1].clone(), &args[2..], f)
}

pub fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let key = args[1].clone();
    let ms: Vec<Bytes> = args[2..].to_vec();
    ctx.with_keys(vec![key.clone()], move |view, out, _| {
        match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(Some(z)) if ms.iter().any(|m| z.score(m).is_some()) => {}
            Ok(_) => return write_integer(out, 0),
        }
        let mut n = 0;
        if let Ok(Some(z)) = get_mut(view, &key, false) {
            for m in &ms {
                n += z.remove(m) as i64;
            }
        }
        write_integer(out, n);
    })
}

pub fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    read(ctx, &args[1], |z, out, _| {
        write_integer(out, z.map_or(0, |z| z.len()) as i64)
    })
}

pub fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let m = args[2].clone();
    read(ctx, &args[1], move |z, out, v| {
        match z.and_then(|z| z.score(&m)) {
            Some(s) => write_score(out, v, s),
            None => write_null(out, v),
        }
    })
}

pub fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let ms: Vec<Bytes> = args[2..].to_vec();
    read(ctx, &args[1], move |z, out, v| {
        write_array_len(out, ms.len());
        for m in &ms {
            match z.and_then(|z| z.score(m)) {
                Some(s) => write_score(out, v, s),
                None => write_null(out, v),
            }
        }
    })
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Outcome {
    let m = args[2].clone();
    read(ctx, &args[1], move |z, out, v| {
        match z.and_then(|z| z.rank(&m).map(|r| (r, z.len()))) {
            Some((r, n)) => write_integer(out, if rev { n - 1 - r } else { r } as i64),
            None => write_null(out, v),
        }
    })
}

pub fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    rank_generic(ctx, args, false)
}
pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    rank_generic(ctx, args, true)
}

// ---------------------------------------------------------------- ranges

/// One end of a score range.
#[derive(Clone, Copy)]
struct ScoreEnd {
    v: f64,
    ex: bool,
}

/// Parses a score range end as Redis's `zslParseRangeItem` (strtod, so an
/// empty text is 0 and leading spaces are allowed; `(` = exclusive).
fn parse_score_end(b: &[u8]) -> Option<ScoreEnd> {
    let (ex, rest) = match b.first() {
        Some(b'(') => (true, &b[1..]),
        _ => (false, b),
    };
    let s = std::str::from_utf8(rest).ok()?.trim_start();
    let v = if s.is_empty() {
        0.0
    } else {
        s.parse::<f64>().ok()?
    };
    (!v.is_nan()).then_some(ScoreEnd { v, ex })
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
            if r.rev {
                z.iter().rev().skip(s).take(e - s + 1).collect()
            } else {
                z.iter().skip(s).take(e - s + 1).collect()
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

/// Writes members (with scores: flat in RESP2, pairs in RESP3).
fn write_members(out: &mut BytesMut, v: Version, withscores: bool, items: &[(&[u8], f64)]) {
    let pairs = withscores && v == Version::Resp3;
    write_array_len(
        out,
        if withscores && !pairs {
            items.len() * 2
        } else {
            items.len()
        },
    );
    for (m, s) in items {
        if pairs {
            write_array_len(out, 2);
        }
        write_bulk(out, m);
        if withscores {
            write_score(out, v, *s);
        }
    }
}

fn range_cmd(ctx: &mut Ctx<'_>, args: &[Bytes], fixed: Option<(RangeKind, bool)>) -> Outcome {
    let req = match parse_range(&args[2..], fixed, false) {
        Ok(r) => r,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    read(ctx, &args[1], move |z, out, v| match z {
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
fn normalize_for_store(z: ZSet, lim: &EncodingLimits) -> ZSet {
    let small = z.len() <= lim.zset_entries && z.iter().all(|(m, _)| m.len() <= lim.zset_value);
    if !small || !z.iter().any(|(_, s)| s == 0.0 && s.is_sign_negative()) {
        return z;
    }
    zset_of(z.iter().map(|(m, s)| (m, if s == 0.0 { 0.0 } else { s })))
}

/// A new sorted set holding `items`.
fn zset_of<'a>(items: impl Iterator<Item = (&'a [u8], f64)>) -> ZSet {
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
    read(ctx, &args[1], move |z, out, _| {
        let (a, b) = score_bounds(min, max);
        write_integer(out, z.map_or(0, |z| z.range_by_score(a, b).count()) as i64)
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
    ctx.with_keys(vec![key.clone()], move |view, out, _| {
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

// ------------------------------------------------------------------ pops

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

fn zpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool, name: &str) -> Outcome {
    if args.len() > 3 {
        reply::arity(ctx.out, name);
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
    ctx.with_keys(vec![key.clone()], move |view, out, v| {
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
    zpop(ctx, args, false, "zpopmin")
}
pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    zpop(ctx, args, true, "zpopmax")
}

/// The parsed arguments of ZMPOP / BZMPOP from `numkeys` on.
pub struct ZmpopArgs {
    pub keys: Vec<Bytes>,
    pub max: bool,
    pub count: usize,
}

/// Parses `numkeys key... MIN|MAX [COUNT n]` with Redis's errors.
pub fn parse_zmpop(args: &[Bytes]) -> Result<ZmpopArgs, &'static str> {
    let numkeys = match args.first().and_then(|a| parse_i64(a)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0"),
    };
    let where_idx = numkeys.saturating_add(1);
    if where_idx >= args.len() as u64 {
        return Err(reply::SYNTAX);
    }
    let w = where_idx as usize;
    let max = if is(&args[w], "min") {
        false
    } else if is(&args[w], "max") {
        true
    } else {
        return Err(reply::SYNTAX);
    };
    let mut count = None;
    let mut j = w + 1;
    while j < args.len() {
        if count.is_none() && is(&args[j], "count") && j + 1 < args.len() {
            match parse_i64(&args[j + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err("ERR count should be greater than 0"),
            }
            j += 2;
        } else {
            return Err(reply::SYNTAX);
        }
    }
    Ok(ZmpopArgs {
        keys: args[1..w].to_vec(),
        max,
        count: count.unwrap_or(1),
    })
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
        return read(ctx, &args[1], |z, out, v| {
            match z.filter(|z| !z.is_empty()) {
                Some(z) => {
                    let i = rand::thread_rng().gen_range(0..z.len());
                    match z.get_rank(i) {
                        Some((m, _)) => write_bulk(out, m),
                        None => write_null(out, v),
                    }
                }
                None => write_null(out, v),
            }
        });
    }
    let count = match parse_i64(&args[2]) {
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            return Outcome::Done;
        }
        Some(i64::MIN) => {
            reply::error(
                ctx.out,
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
            return Outcome::Done;
        }
        Some(n) => n,
    };
    let withscores = match args.get(3) {
        None => false,
        Some(a) if args.len() == 4 && is(a, "withscores") => true,
        Some(_) => {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    };
    if withscores && (count < -(i64::MAX / 2) || count > i64::MAX / 2) {
        reply::error(ctx.out, "ERR value is out of range");
        return Outcome::Done;
    }
    read(ctx, &args[1], move |z, out, v| {
        let Some(z) = z.filter(|z| !z.is_empty() && count != 0) else {
            return write_array_len(out, 0);
        };
        let all: Vec<(&[u8], f64)> = z.iter().collect();
        let picked: Vec<(&[u8], f64)> = pick_indexes(all.len(), count)
            .into_iter()
            .filter_map(|i| all.get(i).copied())
            .collect();
        write_members(out, v, withscores, &picked);
    })
}

// ------------------------------------------------------- set operations

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
fn combine(op: SetOp, mut srcs: Vec<(Vec<(Vec<u8>, f64)>, f64)>, agg: Aggregate) -> ZSet {
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
    let numkeys = match parse_i64(&args[1]) {
        Some(n) if n >= 1 => n as u64,
        _ => {
            reply::error(ctx.out, "ERR numkeys should be greater than 0");
            return Outcome::Done;
        }
    };
    if numkeys > (args.len() - 2) as u64 {
        reply::error(
            ctx.out,
            "ERR Number of keys can't be greater than number of args",
        );
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
    let Some(_cursor) = parse_cursor(&args[2]) else {
        reply::error(ctx.out, "ERR invalid cursor");
        return Outcome::Done;
    };
    let opts = parse_scan_opts(&args[3..]);
    read(ctx, &args[1], move |z, out, _| {
        let Some(z) = z else {
            return write_empty_scan(out);
        };
        let o = match opts {
            Ok(o) => o,
            Err(e) => return reply::error(out, e),
        };
        // A sorted set's positions move on every insert, so a resumable
        // cursor could miss members: every call returns the whole set
        // (COUNT is a hint in Redis too) with cursor 0.
        let (_, range) = scan_positions(z.len(), 0, o.count, true);
        let items: Vec<(&[u8], f64)> = z
            .iter()
            .take(range.end)
            .filter(|(m, _)| {
                o.pattern
                    .as_ref()
                    .is_none_or(|p| crate::glob::glob_match(p, m, false))
            })
            .collect();
        write_array_len(out, 2);
        write_bulk(out, b"0");
        write_array_len(out, items.len() * 2);
        for (m, s) in items {
            write_bulk(out, m);
            write_bulk(out, fmt_score(s).as_bytes());
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_print_as_percent_17g() {
        for (v, s) in [
            (1.1, "1.1000000000000001"),
            (3.0, "3"),
            (1e20, "1e+20"),
            (1e-7, "9.9999999999999995e-08"),
            (0.000001, "9.9999999999999995e-07"),
            (123456789.123, "123456789.123"),
            (0.0, "0"),
            (-2.25, "-2.25"),
            (f64::INFINITY, "inf"),
            (1.0000000000000001e300, "1.0000000000000001e+300"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(fmt_score(v), s, "{v}");
        }
    }

    #[test]
    fn scores_parse_as_getdoublefromobject() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+INF"), Some(f64::INFINITY));
        assert_eq!(
            parse_score(b"-0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"1e400",
            b"1e-400",
            b"abc",
            b"(1",
        ] {
            assert_eq!(parse_score(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
