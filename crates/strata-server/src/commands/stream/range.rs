//! XRANGE and XREVRANGE: with COUNT, the parts of the range up to COUNT
//! entries are loaded together; without, a chunked stream's range is read
//! a batch of parts at a time.

use super::{get, need, parse_bound, write_entry};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::Bytes;
use strata_engine::types::stream::{EntryRef, StreamId, StreamNeed};
use strata_engine::Collection;
use strata_protocol::{write_array_len, write_null_array};

fn xrange_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Outcome {
    let (sa, ea) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let bounds = parse_bound(sa, true).and_then(|s| Ok((s, parse_bound(ea, false)?)));
    let (start, end) = match bounds {
        Ok(b) => b,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            match parse_i64(&args[j + 1]) {
                Some(n) => count = n.max(0),
                None => {
                    reply::error(ctx.out, reply::NOT_INTEGER);
                    return Outcome::Done;
                }
            }
            j += 2;
        } else {
            reply::error(ctx.out, reply::SYNTAX);
            return Outcome::Done;
        }
    }
    let key = args[1].clone();
    if count < 0 {
        return xrange_whole(ctx, key, start, end, rev);
    }
    let plan = need(vec![StreamNeed::Range {
        start,
        end,
        rev,
        count: u64::try_from(count).unwrap_or(u64::MAX),
    }]);
    ctx.with_key_need(key.clone(), plan, move |view, out, v| {
        let s = match get(view, &key) {
            Err(e) => return reply::engine(out, &e),
            Ok(None) => return write_array_len(out, 0),
            Ok(Some(s)) => s,
        };
        if count == 0 {
            return write_null_array(out, v);
        }
        let take = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        let entries: Vec<EntryRef<'_>> = s.range(start, end, rev).take(take).collect();
        write_array_len(out, entries.len());
        for e in &entries {
            write_entry(out, e);
        }
    })
}

/// A range without COUNT: of a chunked stream, read a batch of parts at a
/// time (`Ctx::stream_key_from`), so a range larger than RAM is never held
/// in RAM at once; its length is counted first from the parts' counts and
/// its two end parts.
fn xrange_whole(
    ctx: &mut Ctx<'_>,
    key: Bytes,
    start: StreamId,
    end: StreamId,
    rev: bool,
) -> Outcome {
    let first = need(vec![StreamNeed::Ends { start, end }]);
    let k = key.clone();
    ctx.stream_key_from(
        key,
        rev,
        first,
        move |view, out, _| {
            let s = match get(view, &k) {
                Err(e) => {
                    reply::engine(out, &e);
                    return None;
                }
                Ok(None) => {
                    write_array_len(out, 0);
                    return None;
                }
                Ok(Some(s)) => s,
            };
            if !s.is_chunked() {
                let entries: Vec<EntryRef<'_>> = s.range(start, end, rev).collect();
                write_array_len(out, entries.len());
                for e in &entries {
                    write_entry(out, e);
                }
                return None;
            }
            let n = s.range_len(start, end).unwrap_or(0) as usize;
            write_array_len(out, n);
            Some(s.range_part_indexes(start, end))
        },
        move |c, parts, out, _| {
            let Collection::Stream(s) = c else {
                return;
            };
            let entries: Vec<EntryRef<'_>> = s.range_in_parts(parts, start, end).collect();
            // A descending range: each batch last first (the batches are
            // joined last to first).
            if rev {
                entries.iter().rev().for_each(|e| write_entry(out, e));
            } else {
                entries.iter().for_each(|e| write_entry(out, e));
            }
        },
    )
}

pub fn xrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    xrange_generic(ctx, args, false)
}

pub fn xrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    xrange_generic(ctx, args, true)
}
