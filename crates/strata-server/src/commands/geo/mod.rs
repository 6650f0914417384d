//! Geo commands on sorted sets, as redis-server 7.0 answers them: GEOADD
//! GEODIST GEOHASH GEOPOS GEOSEARCH GEOSEARCHSTORE GEORADIUS
//! GEORADIUSBYMEMBER and their `_RO` forms. A position is a member whose
//! score is its 52-bit geohash (`geohash`, Redis's arithmetic reproduced
//! step by step), so every sorted-set command works on it too; a search
//! scans the same nine geohash cells as Redis, in the same order, so even
//! an unsorted reply lists members as Redis does.
//!
//! Arguments are checked in Redis's order, which looks at the source key
//! first (WRONGTYPE, then a FROMMEMBER/BYMEMBER position): the whole
//! parse runs inside the key view.

mod geohash;
mod pqsort;

use super::zset::{self as zs, normalize_for_store};
use super::{is, parse_i64};
use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::registry::flags::*;
use crate::registry::Flags;
use bytes::{Bytes, BytesMut};
use geohash::{Search, Shape};
use std::ops::Bound;
use strata_engine::types::ZSet;
use strata_engine::{Collection, KeysView, Value};
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_null, write_null_array, Version,
};

const UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
const NO_MEMBER: &str = "ERR could not decode requested zset member";

/// A position argument pair, as Redis's `extractLongLatOrReply`.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), String> {
    let (Some(x), Some(y)) = (zs::parse_score(lon), zs::parse_score(lat)) else {
        return Err(reply::NOT_FLOAT.into());
    };
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&x)
        || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&y)
    {
        return Err(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}"));
    }
    Ok((x, y))
}

/// Meters per unit.
fn unit(u: &[u8]) -> Result<f64, String> {
    Ok(match () {
        _ if is(u, "m") => 1.0,
        _ if is(u, "km") => 1000.0,
        _ if is(u, "ft") => 0.3048,
        _ if is(u, "mi") => 1609.34,
        _ => return Err(UNIT.into()),
    })
}

fn number(b: &[u8], what: &str) -> Result<f64, String> {
    zs::parse_score(b).ok_or_else(|| format!("ERR need numeric {what}"))
}

/// `radius unit` -> (radius, meters per unit).
fn radius(r: &[u8], u: &[u8]) -> Result<(f64, f64), String> {
    let r = number(r, "radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((r, unit(u)?))
}

// ---------------------------------------------------------------- GEOADD

pub fn geoadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let mut at = 2;
    let (mut nx, mut xx) = (false, false);
    while at < args.len() {
        let o = &args[at];
        if is(o, "nx") {
            nx = true;
        } else if is(o, "xx") {
            xx = true;
        } else if !is(o, "ch") {
            break;
        }
        at += 1;
    }
    if !(args.len() - at).is_multiple_of(3) || (nx && xx) {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    }
    // ZADD's arguments: the options, then score-member pairs.
    let mut rest: Vec<Bytes> = args[2..at].to_vec();
    for t in args[at..].chunks(3) {
        match lon_lat(&t[0], &t[1]) {
            Ok((x, y)) => {
                let score = geohash::score_of(x, y).unwrap_or(0);
                rest.push(Bytes::from(score.to_string()));
                rest.push(t[2].clone());
            }
            Err(e) => {
                reply::error(ctx.out, &e);
                return Outcome::Done;
            }
        }
    }
    zs::zadd_args(ctx, args[1].clone(), &rest)
}

// ------------------------------------------------- GEODIST GEOHASH GEOPOS

pub fn geodist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => match unit(&args[4]) {
            Ok(u) => u,
            Err(e) => {
                reply::error(ctx.out, &e);
                return Outcome::Done;
            }
        },
        _ => {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    };
    let (a, b) = (args[2].clone(), args[3].clone());
    zs::read(ctx, &args[1], move |z, out, v| {
        match z.and_then(|z| Some((z.score(&a)?, z.score(&b)?))) {
            Some((s1, s2)) => {
                let (p, q) = (geohash::decode_score(s1), geohash::decode_score(s2));
                write_distance(out, geohash::distance(p.0, p.1, q.0, q.1) / to_meters);
            }
            None => write_null(out, v),
        }
    })
}

pub fn geohash(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let ms = args[2..].to_vec();
    zs::read(ctx, &args[1], move |z, out, v| {
        write_array_len(out, ms.len());
        for m in &ms {
            match z.and_then(|z| z.score(m)) {
                Some(s) => write_bulk(out, &geohash::geohash_string(s)),
                None => write_null(out, v),
            }
        }
    })
}

pub fn geopos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let ms = args[2..].to_vec();
    zs::read(ctx, &args[1], move |z, out, v| {
        write_array_len(out, ms.len());
        for m in &ms {
            match z.and_then(|z| z.score(m)) {
                Some(s) => {
                    let (lon, lat) = geohash::decode_score(s);
                    write_array_len(out, 2);
                    write_human(out, v, lon);
                    write_human(out, v, lat);
                }
                None => write_null_array(out, v),
            }
        }
    })
}

/// A distance as Redis replies it: `%.4f`, a bulk string in both protocols.
fn write_distance(out: &mut BytesMut, d: f64) {
    write_bulk(out, format!("{d:.4}").as_bytes());
}

/// Redis's `addReplyHumanLongDouble`: `%.17Lf` without trailing zeros, a
/// bulk string in RESP2 and a double in RESP3.
fn write_human(out: &mut BytesMut, v: Version, d: f64) {
    let mut s = format!("{d:.17}");
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(t);
    }
    if s == "-0" {
        s = "0".into();
    }
    zs::write_double_text(out, v, &s);
}

// ------------------------------------------------------------- searches

/// Which command a search is (Redis's `georadiusGeneric` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS and GEORADIUS_RO: `key lon lat radius unit ...`
    Coords { store: bool },
    /// GEORADIUSBYMEMBER and its `_RO` form: `key member radius unit ...`
    Member { store: bool },
    /// GEOSEARCH `key ...`
    Search,
    /// GEOSEARCHSTORE `dst key ...`
    SearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed search.
struct Query {
    /// None only when the source key is missing (nothing to search).
    search: Option<Search>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    sort: Sort,
    /// 0 = all.
    count: usize,
    any: bool,
    store: Option<Bytes>,
    store_dist: bool,
}

/// Parses a search as `georadiusGeneric` does, in its order (the source
/// set, when it exists, answers member positions).
fn parse(args: &[Bytes], kind: Kind, z: Option<&ZSet>) -> Result<Query, String> {
    let member_pos = |m: &[u8]| -> Result<(f64, f64), String> {
        z.and_then(|z| z.score(m))
            .map(geohash::decode_score)
            .ok_or_else(|| NO_MEMBER.to_string())
    };
    let mut q = Query {
        search: None,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        sort: Sort::None,
        count: 0,
        any: false,
        store: None,
        store_dist: false,
    };
    let circle = |(lon, lat): (f64, f64), (r, conversion): (f64, f64)| Search {
        lon,
        lat,
        shape: Shape::Radius(r),
        conversion,
    };
    let base = match kind {
        Kind::Coords { .. } => {
            let c = lon_lat(&args[2], &args[3])?;
            q.search = Some(circle(c, radius(&args[4], &args[5])?));
            6
        }
        Kind::Member { .. } if z.is_none() => 5,
        Kind::Member { .. } => {
            let c = member_pos(&args[2])?;
            q.search = Some(circle(c, radius(&args[3], &args[4])?));
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            q.store = Some(args[1].clone());
            3
        }
    };
    let (georadius_store, search) = match kind {
        Kind::Coords { store } | Kind::Member { store } => (store, false),
        _ => (false, true),
    };
    let (mut from_member, mut from_loc, mut by_radius, mut by_box) = (false, false, false, false);
    let mut center = (0.0, 0.0);
    let mut shape = (Shape::Radius(0.0), 1.0);
    let opts = &args[base..];
    let mut i = 0;
    while i < opts.len() {
        let a = &opts[i];
        let left = opts.len() - i - 1;
        if is(a, "withdist") {
            q.with_dist = true;
        } else if is(a, "withhash") {
            q.with_hash = true;
        } else if is(a, "withcoord") {
            q.with_coord = true;
        } else if is(a, "any") {
            q.any = true;
        } else if is(a, "asc") {
            q.sort = Sort::Asc;
        } else if is(a, "desc") {
            q.sort = Sort::Desc;
        } else if is(a, "count") && left >= 1 {
            let n = parse_i64(&opts[i + 1]).ok_or(reply::NOT_INTEGER)?;
            if n <= 0 {
                return Err(crate::base::reply::COUNT_NOT_POSITIVE.into());
            }
            q.count = n as usize;
            i += 1;
        } else if (is(a, "store") || is(a, "storedist")) && left >= 1 && georadius_store {
            q.store = Some(opts[i + 1].clone());
            q.store_dist = is(a, "storedist");
            i += 1;
        } else if is(a, "storedist") && kind == Kind::SearchStore {
            q.store_dist = true;
        } else if is(a, "frommember") && left >= 1 && search && !from_loc {
            if z.is_some() {
                center = member_pos(&opts[i + 1])?;
            }
            from_member = true;
            i += 1;
        } else if is(a, "fromlonlat") && left >= 2 && search && !from_member {
            center = lon_lat(&opts[i + 1], &opts[i + 2])?;
            from_loc = true;
            i += 2;
        } else if is(a, "byradius") && left >= 2 && search && !by_box {
            let (r, c) = radius(&opts[i + 1], &opts[i + 2])?;
            shape = (Shape::Radius(r), c);
            by_radius = true;
            i += 2;
        } else if is(a, "bybox") && left >= 3 && search && !by_radius {
            let width = number(&opts[i + 1], "width")?;
            let height = number(&opts[i + 2], "height")?;
            if width < 0.0 || height < 0.0 {
                return Err("ERR height or width cannot be negative".into());
            }
            shape = (Shape::Box { width, height }, unit(&opts[i + 3])?);
            by_box = true;
            i += 3;
        } else {
            return Err(reply::SYNTAX.into());
        }
        i += 1;
    }
    if q.store.is_some() && (q.with_dist || q.with_hash || q.with_coord) {
        let who = if kind == Kind::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ));
    }
    let name = || String::from_utf8_lossy(&args[0]).into_owned();
    if search && !(from_member || from_loc) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            name()
        ));
    }
    if search && !(by_radius || by_box) {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            name()
        ));
    }
    if q.any && q.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    if search {
        q.search = Some(Search {
            lon: center.0,
            lat: center.1,
            shape: shape.0,
            conversion: shape.1,
        });
    }
    if z.is_none() {
        q.search = None;
    }
    // COUNT without an order returns the nearest ones (not with ANY).
    if q.count != 0 && q.sort == Sort::None && !q.any {
        q.sort = Sort::Asc;
    }
    Ok(q)
}

/// A point found by a search.
struct Found {
    member: Bytes,
    score: f64,
    lon: f64,
    lat: f64,
    dist: f64,
}

/// The members inside the search, in Redis's scan order (`membersOfAllNeighbors`).
fn scan(z: &ZSet, s: &Search, limit: usize) -> Vec<Found> {
    let cells = s.cells();
    let mut found = Vec::new();
    let mut last: Option<usize> = None;
    let full = |found: &Vec<Found>| limit != 0 && found.len() >= limit;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // Redis skips a cell equal to the last one scanned (huge radii
        // make neighbours coincide), comparing from the second one on.
        if let Some(l) = last.filter(|&l| l > 0) {
            if cells[l] == *cell {
                continue;
            }
        }
        if full(&found) {
            break;
        }
        let (min, max) = geohash::cell_scores(*cell);
        for (m, score) in z.range_by_score(Bound::Included(min), Bound::Excluded(max)) {
            let (lon, lat) = geohash::decode_score(score);
            if let Some(dist) = s.within(lon, lat) {
                found.push(Found {
                    member: Bytes::copy_from_slice(m),
                    score,
                    lon,
                    lat,
                    dist,
                });
            }
            if full(&found) {
                break;
            }
        }
        last = Some(i);
    }
    found
}

fn search(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> Outcome {
    let src = args[if kind == Kind::SearchStore { 2 } else { 1 }].clone();
    // The destination (if any) must be in the view: find it with a parse
    // that does not look at the set (it fails only where the real one,
    // inside the view, fails too).
    let mut keys = vec![src.clone()];
    if let Ok(Query {
        store: Some(dst), ..
    }) = parse(args, kind, None)
    {
        keys.push(dst);
    }
    let args = args.to_vec();
    ctx.with_keys(keys, move |view, out, v| {
        let q = match zs::get(view, &src) {
            Err(e) => return reply::engine(out, &e),
            Ok(z) => parse(&args, kind, z).map(|q| {
                let found = match (&q.search, z) {
                    (Some(s), Some(z)) => scan(z, s, if q.any { q.count } else { 0 }),
                    _ => Vec::new(),
                };
                (q, found)
            }),
        };
        match q {
            Err(e) => reply::error(out, &e),
            Ok((q, found)) => answer(view, out, v, q, found),
        }
    })
}

fn answer(
    view: &mut KeysView<'_>,
    out: &mut BytesMut,
    v: Version,
    q: Query,
    mut found: Vec<Found>,
) {
    // Redis sorts all results with the C library's qsort (glibc's merge
    // sort: stable), or only the first COUNT ones with its pqsort, whose
    // order among equal distances is its own.
    let by = |a: &Found, b: &Found| match q.sort {
        Sort::Desc => b.dist.total_cmp(&a.dist),
        _ => a.dist.total_cmp(&b.dist),
    };
    let keep = if q.count == 0 {
        found.len()
    } else {
        q.count.min(found.len())
    };
    if q.sort != Sort::None && keep > 0 {
        if keep == found.len() {
            found.sort_by(by);
        } else {
            pqsort::pqsort(&mut found, &by, 0, keep - 1);
        }
    }
    found.truncate(keep);
    let conversion = q.search.map_or(1.0, |s| s.conversion);
    let Some(dst) = q.store else {
        write_array_len(out, found.len());
        let extra = q.with_dist as usize + q.with_hash as usize + q.with_coord as usize;
        for f in &found {
            if extra > 0 {
                write_array_len(out, extra + 1);
            }
            write_bulk(out, &f.member);
            if q.with_dist {
                write_distance(out, f.dist / conversion);
            }
            if q.with_hash {
                write_integer(out, f.score as i64);
            }
            if q.with_coord {
                write_array_len(out, 2);
                write_human(out, v, f.lon);
                write_human(out, v, f.lat);
            }
        }
        return;
    };
    let mut z = ZSet::default();
    for f in &found {
        z.insert(
            &f.member,
            if q.store_dist {
                f.dist / conversion
            } else {
                f.score
            },
        );
    }
    let n = z.len();
    if n == 0 {
        view.delete(&dst);
    } else {
        let z = normalize_for_store(z, &view.encoding_limits());
        view.put(&dst, Value::Coll(Box::new(Collection::ZSet(z))));
    }
    write_integer(out, n as i64);
}

pub fn georadius(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    search(ctx, args, Kind::Coords { store: true })
}
pub fn georadius_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    search(ctx, args, Kind::Coords { store: false })
}
pub fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    search(ctx, args, Kind::Member { store: true })
}
pub fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    search(ctx, args, Kind::Member { store: false })
}
pub fn geosearch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    search(ctx, args, Kind::Search)
}
pub fn geosearchstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    search(ctx, args, Kind::SearchStore)
}

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd("geoadd", -5, W, K1, "geo", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", geoadd),
    cmd("geodist", -4, R, K1, "geo", "Returns the distance between two members of a geospatial index.", geodist),
    cmd("geohash", -2, R, K1, "geo", "Returns members from a geospatial index as geohash strings.", geohash),
    cmd("geopos", -2, R, K1, "geo", "Returns the longitude and latitude of members from a geospatial index.", geopos),
    cmd("georadius", -6, &["write", "denyoom", "movablekeys"], K1, "geo", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", georadius).with(Flags::READS_SOURCES),
    cmd("georadius_ro", -6, R, K1, "geo", "Returns members from a geospatial index that are within a distance from a coordinate.", georadius_ro),
    cmd("georadiusbymember", -5, &["write", "denyoom", "movablekeys"], K1, "geo", "Queries a geospatial index for members within a distance from a member, optionally stores the result.", georadiusbymember).with(Flags::READS_SOURCES),
    cmd("georadiusbymember_ro", -5, R, K1, "geo", "Returns members from a geospatial index that are within a distance from a member.", georadiusbymember_ro),
    cmd("geosearch", -7, R, K1, "geo", "Queries a geospatial index for members inside an area of a box or a circle.", geosearch),
    cmd("geosearchstore", -8, W, K2, "geo", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", geosearchstore).with(Flags::READS_SOURCES),
];
