//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`, as Redis
//! 7.0 computes it (the same dynamic-programming table and the same walk
//! back through it, so ties resolve to the same subsequence and the same
//! match ranges).

use super::with_strings;
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::{Bytes, BytesMut};
use strata_protocol::{write_array_len, write_bulk, write_integer, write_map_len, Version};

struct Options {
    len: bool,
    idx: bool,
    min: u64,
    with_len: bool,
}

fn options(args: &[Bytes]) -> Result<Options, &'static str> {
    let mut o = Options {
        len: false,
        idx: false,
        min: 0,
        with_len: false,
    };
    let mut j = 3;
    while j < args.len() {
        let a = &args[j];
        if is(a, "idx") {
            o.idx = true;
        } else if is(a, "len") {
            o.len = true;
        } else if is(a, "withmatchlen") {
            o.with_len = true;
        } else if is(a, "minmatchlen") && j + 1 < args.len() {
            o.min = parse_i64(&args[j + 1]).ok_or(reply::NOT_INTEGER)?.max(0) as u64;
            j += 1;
        } else {
            return Err(reply::SYNTAX);
        }
        j += 1;
    }
    if o.idx && o.len {
        return Err("ERR If you want both the length and indexes, please just use IDX.");
    }
    Ok(o)
}

pub fn lcs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let args = args.to_vec();
    let (max, version) = (ctx.limits().max_bulk_len, ctx.version());
    let keys = vec![args[1].clone(), args[2].clone()];
    with_strings(ctx, keys, Vec::new(), move |_, _, values, out| {
        let mut strs = Vec::new();
        for v in values {
            match v {
                Ok(v) => strs.push(v.unwrap_or_default()),
                Err(_) => {
                    return reply::error(out, "ERR The specified keys must contain string values")
                }
            }
        }
        let o = match options(&args) {
            Ok(o) => o,
            Err(e) => return reply::error(out, e),
        };
        let cells = (strs[0].len() as u64 + 1) * (strs[1].len() as u64 + 1);
        if cells * 4 > max as u64 {
            return reply::error(
                out,
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
            );
        }
        compute(&strs[0], &strs[1], &o, out, version);
    })
}

fn compute(a: &[u8], b: &[u8], o: &Options, out: &mut BytesMut, version: Version) {
    let (alen, blen) = (a.len(), b.len());
    let w = blen + 1;
    let mut t = vec![0u32; (alen + 1) * w];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen];
    if o.len && !o.idx {
        return write_integer(out, total as i64);
    }
    let mut result = vec![0u8; total as usize];
    let mut ranges: Vec<(usize, usize, usize, usize)> = Vec::new();
    // Redis's walk: `astart == alen` means no range is open.
    let (mut astart, mut aend, mut bstart, mut bend) = (alen, 0, 0, 0);
    let (mut i, mut j, mut idx) = (alen, blen, total as usize);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if astart == alen {
                (astart, aend, bstart, bend) = (i - 1, i - 1, j - 1, j - 1);
            } else if astart == i && bstart == j {
                astart -= 1;
                bstart -= 1;
            } else {
                emit = true;
            }
            if astart == 0 || bstart == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if astart != alen {
                emit = true;
            }
        }
        let match_len = aend.wrapping_sub(astart).wrapping_add(1);
        if emit {
            if o.min == 0 || match_len as u64 >= o.min {
                ranges.push((astart, aend, bstart, bend));
            }
            astart = alen;
        }
    }
    if !o.idx {
        return write_bulk(out, &result);
    }
    write_map_len(out, version, 2);
    write_bulk(out, b"matches");
    write_array_len(out, ranges.len());
    for (astart, aend, bstart, bend) in ranges {
        write_array_len(out, 2 + o.with_len as usize);
        write_array_len(out, 2);
        write_integer(out, astart as i64);
        write_integer(out, aend as i64);
        write_array_len(out, 2);
        write_integer(out, bstart as i64);
        write_integer(out, bend as i64);
        if o.with_len {
            write_integer(out, (aend - astart + 1) as i64);
        }
    }
    write_bulk(out, b"len");
    write_integer(out, total as i64);
}
