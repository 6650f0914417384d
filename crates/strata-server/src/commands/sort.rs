//! SORT and SORT_RO: the elements of a list, set or sorted set, sorted
//! numerically or with ALPHA, by the elements themselves or by weights
//! looked up through a BY pattern, with LIMIT, GET patterns and STORE, as
//! Redis 7.0 does.
//!
//! Patterns name other keys (`weight_*`, `obj_*->field`), which are known
//! only once the elements are read: the command runs on the source key,
//! finds the keys its patterns need, and runs again atomically on all of
//! them (again if the elements changed meanwhile).

use super::{is, parse_i64};
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use crate::registry::Flags;
use bytes::{Bytes, BytesMut};
use std::cmp::Ordering;
use strata_engine::{Collection, KeysView, Value, ValueRef, ValueType};
use strata_protocol::{write_array_len, write_bulk, write_integer, write_null, Version};

#[derive(Clone)]
struct Opts {
    key: Bytes,
    by: Option<Bytes>,
    /// BY without a `*`: do not sort.
    dont_sort: bool,
    limit: Option<(i64, i64)>,
    get: Vec<Bytes>,
    desc: bool,
    alpha: bool,
    store: Option<Bytes>,
    /// Run by a script's `redis.call`.
    script: bool,
}

fn parse(args: &[Bytes], read_only: bool) -> Result<Opts, &'static str> {
    let mut o = Opts {
        key: args[1].clone(),
        by: None,
        dont_sort: false,
        limit: None,
        get: Vec::new(),
        desc: false,
        alpha: false,
        store: None,
        script: false,
    };
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        let left = args.len() - i - 1;
        if is(a, "asc") {
            o.desc = false;
        } else if is(a, "desc") {
            o.desc = true;
        } else if is(a, "alpha") {
            o.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            let (Some(off), Some(cnt)) = (parse_i64(&args[i + 1]), parse_i64(&args[i + 2])) else {
                return Err(reply::NOT_INTEGER);
            };
            o.limit = Some((off, cnt));
            i += 2;
        } else if is(a, "store") && left >= 1 && !read_only {
            o.store = Some(args[i + 1].clone());
            i += 1;
        } else if is(a, "by") && left >= 1 {
            let p = args[i + 1].clone();
            o.dont_sort = !p.contains(&b'*');
            o.by = Some(p);
            i += 1;
        } else if is(a, "get") && left >= 1 {
            o.get.push(args[i + 1].clone());
            i += 1;
        } else {
            return Err(reply::SYNTAX);
        }
        i += 1;
    }
    Ok(o)
}

/// The key and hash field a pattern names for `elem` (None: `#`, or a
/// pattern without `*`).
fn pattern_target(pattern: &[u8], elem: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let star = pattern.iter().position(|&b| b == b'*')?;
    let (mut key_pat, mut field) = (pattern, None);
    if let Some(arrow) = pattern[star + 1..].windows(2).position(|w| w == b"->") {
        let at = star + 1 + arrow;
        if at + 2 < pattern.len() {
            key_pat = &pattern[..at];
            field = Some(pattern[at + 2..].to_vec());
        }
    }
    let mut key = Vec::with_capacity(key_pat.len() + elem.len());
    key.extend_from_slice(&key_pat[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&key_pat[star + 1..]);
    Some((key, field))
}

/// The value a pattern looks up for `elem` in `view`: `#` is the element.
fn lookup(view: &mut KeysView<'_>, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(elem.to_vec());
    }
    let (key, field) = pattern_target(pattern, elem)?;
    match (view.get(&key), field) {
        (Some(ValueRef::Str(s)), None) => Some(s.to_vec()),
        (Some(ValueRef::Coll(Collection::Str(s))), None) => s.to_vec().ok(),
        (Some(ValueRef::Coll(Collection::Hash(h))), Some(f)) => h.get(&f).map(|v| v.to_vec()),
        _ => None,
    }
}

/// The elements of the source, in its own order; Err(()) = WRONGTYPE.
fn elements(view: &mut KeysView<'_>, key: &[u8]) -> Result<Vec<Vec<u8>>, ()> {
    Ok(match view.get(key) {
        None => Vec::new(),
        Some(ValueRef::Coll(Collection::List(l))) => l.iter().map(|e| e.to_vec()).collect(),
        Some(ValueRef::Coll(Collection::Set(s))) => s.iter().map(|e| e.to_vec()).collect(),
        Some(ValueRef::Coll(Collection::ZSet(z))) => z.iter().map(|(m, _)| m.to_vec()).collect(),
        Some(_) => return Err(()),
    })
}

/// Keys the patterns need for these elements.
fn referenced(o: &Opts, elems: &[Vec<u8>]) -> Vec<Bytes> {
    let mut keys: Vec<Bytes> = Vec::new();
    let pats = o.by.iter().filter(|_| !o.dont_sort).chain(o.get.iter());
    for p in pats {
        for e in elems {
            if let Some((k, _)) = pattern_target(p, e) {
                keys.push(k.into());
            }
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

enum Run {
    Done(BytesMut),
    /// The patterns need these keys too.
    Need(Vec<Bytes>),
}

fn run(view: &mut KeysView<'_>, o: &Opts, have: &[Bytes], v: Version) -> Run {
    let mut out = BytesMut::new();
    let is_set = matches!(view.vtype(&o.key), Some(ValueType::Set));
    let is_zset = matches!(view.vtype(&o.key), Some(ValueType::ZSet));
    let Ok(mut elems) = elements(view, &o.key) else {
        reply::error(&mut out, reply::WRONGTYPE);
        return Run::Done(out);
    };
    // Redis's SORT converts a listpack sorted set to a skiplist (OBJECT
    // ENCODING shows it).
    if is_zset
        && matches!(view.coll(&o.key, ValueType::ZSet), Ok(Some(Collection::ZSet(z))) if !z.big)
    {
        if let Ok(Some(Collection::ZSet(z))) = view.coll_mut(&o.key, ValueType::ZSet, false) {
            z.big = true;
        }
    }
    let need = referenced(o, &elems);
    if need.iter().any(|k| have.binary_search(k).is_err()) {
        return Run::Need(need);
    }
    // Redis sorts a set alphabetically when asked not to sort but to store
    // or inside a script (so the result is deterministic).
    let (mut dont_sort, mut alpha, mut by) = (o.dont_sort, o.alpha, o.by.clone());
    if dont_sort && is_set && (o.store.is_some() || o.script) {
        dont_sort = false;
        alpha = true;
        by = None;
    }
    if dont_sort {
        if is_zset && o.desc {
            elems.reverse();
        }
    } else {
        // Sort keys: (element, weight text or number).
        let mut keyed: Vec<(Vec<u8>, Option<Vec<u8>>, f64)> = Vec::with_capacity(elems.len());
        for e in elems {
            let w = match &by {
                Some(p) => lookup(view, p, &e),
                None => Some(e.clone()),
            };
            let mut score = 0.0;
            if !alpha {
                if let Some(w) = &w {
                    match std::str::from_utf8(w)
                        .ok()
                        .and_then(|s| s.trim_start().parse::<f64>().ok())
                    {
                        Some(x) if !x.is_nan() => score = x,
                        // strtod accepts "" as 0.
                        _ if w.is_empty() => {}
                        _ => {
                            reply::error(
                                &mut out,
                                "ERR One or more scores can't be converted into double",
                            );
                            return Run::Done(out);
                        }
                    }
                }
            }
            keyed.push((e, w, score));
        }
        keyed.sort_by(|a, b| {
            let c = if alpha {
                match (&a.1, &b.1) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.2.partial_cmp(&b.2)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            };
            if o.desc {
                c.reverse()
            } else {
                c
            }
        });
        elems = keyed.into_iter().map(|k| k.0).collect();
    }
    // LIMIT, as Redis clamps it.
    let n = elems.len() as i64;
    let (mut start, mut count) = o.limit.unwrap_or((0, -1));
    if start < 0 {
        start = 0;
    }
    if count < 0 || start.saturating_add(count) > n {
        count = n - start;
    }
    let range: Vec<Vec<u8>> = if start >= n || count <= 0 {
        Vec::new()
    } else {
        elems[start as usize..(start + count) as usize].to_vec()
    };
    // The output: the elements, or for each one a value per GET pattern.
    let mut rows: Vec<Option<Vec<u8>>> = Vec::new();
    for e in &range {
        if o.get.is_empty() {
            rows.push(Some(e.clone()));
        }
        for g in &o.get {
            rows.push(lookup(view, g, e));
        }
    }
    match &o.store {
        Some(dst) => {
            let mut list = strata_engine::types::List::default();
            for r in &rows {
                list.push_back(r.clone().unwrap_or_default().into());
            }
            let n = list.len();
            view.put(dst, Value::Coll(Box::new(Collection::List(list))));
            write_integer(&mut out, n as i64);
        }
        None => {
            write_array_len(&mut out, rows.len());
            for r in rows {
                match r {
                    Some(b) => write_bulk(&mut out, &b),
                    None => write_null(&mut out, v),
                }
            }
        }
    }
    Run::Done(out)
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &[Bytes], read_only: bool) -> Outcome {
    let o = match parse(args, read_only) {
        Ok(o) => Opts {
            script: ctx.conn.script,
            ..o
        },
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let (engine, blocking) = (ctx.engine().clone(), ctx.blocking().clone());
    let (db, v) = (ctx.db(), ctx.version());
    let sink = ctx.ready_sink();
    Outcome::Pending {
        reply: Box::pin(async move {
            let mut have: Vec<Bytes> = Vec::new();
            for _ in 0..16 {
                let mut keys = vec![o.key.clone()];
                keys.extend(have.iter().cloned());
                if let Some(d) = &o.store {
                    keys.push(d.clone());
                }
                let (o2, have2) = (o.clone(), have.clone());
                let track = blocking.any_waiting();
                let r = engine
                    .with_keys_tracked(db, keys, track, move |view| run(view, &o2, &have2, v))
                    .wait()
                    .await;
                match r {
                    Ok((Run::Done(out), ready)) => {
                        sink.serve(db, ready);
                        return out;
                    }
                    Ok((Run::Need(k), _)) => have = k,
                    Err(e) => {
                        let mut out = BytesMut::new();
                        reply::engine(&mut out, &e);
                        return out;
                    }
                }
            }
            let mut out = BytesMut::new();
            reply::error(
                &mut out,
                "ERR SORT could not read a stable set of keys; try again",
            );
            out
        }),
        write: true,
    }
}

pub fn sort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    sort_generic(ctx, args, false)
}

pub fn sort_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    sort_generic(ctx, args, true)
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd(
        "sort",
        -2,
        &["write", "denyoom", "movablekeys"],
        K1,
        "generic",
        "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
        sort,
    )
    .with(Flags::READS_SOURCES),
    cmd(
        "sort_ro",
        -2,
        &["readonly", "movablekeys"],
        K1,
        "generic",
        "Returns the sorted elements of a list, a set, or a sorted set.",
        sort_ro,
    ),
];
