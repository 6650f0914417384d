//! Bitmaps over strings: SETBIT GETBIT BITCOUNT BITPOS BITOP (BITFIELD and
//! BITFIELD_RO: `bitfield`), as Redis 7.0 (bitops.c): bit 0 is the most significant bit
//! of byte 0; a missing key reads as zeros; writes grow the string with
//! zero bytes; offsets stop below `proto-max-bulk-len` bytes.
//!
//! A string of one record is changed by a copy (the engine's
//! read-modify-write: cheap for the common small bitmaps); a chunked one
//! (past 256 KiB, `types::bigstr`) loads and changes only the parts of the
//! bytes a command names, so a bit of a cold 512 MB string costs one
//! device read.

use super::{edit, set_raw, with_strings};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::{Bytes, BytesMut};
use strata_engine::{ExpireUpdate, Need, Piece};
use strata_protocol::{write_integer, Version};

pub(super) const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";

/// A bit offset (`#n` counts in `bits`-wide fields where allowed).
pub(super) fn bit_offset(arg: &[u8], hash_bits: Option<u32>, max_bulk: usize) -> Option<u64> {
    let (digits, mult) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], bits as i64),
        _ => (arg, 1),
    };
    let n = parse_i64(digits)?.checked_mul(mult)?;
    (n >= 0 && ((n >> 3) as u64) < max_bulk as u64).then_some(n as u64)
}

pub(super) fn get_bit(v: &[u8], bit: u64) -> u8 {
    let byte = (bit >> 3) as usize;
    v.get(byte).map_or(0, |b| (b >> (7 - (bit & 7))) & 1)
}

pub fn setbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let max = ctx.limits().max_bulk_len;
    let Some(bit) = bit_offset(&args[2], None, max) else {
        reply::error(ctx.out, BAD_OFFSET);
        return Outcome::Done;
    };
    let on = match &args[3][..] {
        b"0" => 0u8,
        b"1" => 1,
        _ => {
            reply::error(ctx.out, BAD_BIT);
            return Outcome::Done;
        }
    };
    let byte = bit >> 3;
    edit(
        ctx,
        &args[1],
        Need::indexes(&[(byte as i64, byte as i64), (-1, -1)]),
        move |ed| {
            let mut b = [0u8];
            ed.read(byte, &mut b)?;
            let old = get_bit(&b, bit & 7);
            ed.mark_raw();
            // As Redis: no write unless the key is new, grows or the bit
            // flips.
            if ed.len() > byte && old == on {
                return Ok(Ok(old as i64));
            }
            let mask = 1 << (7 - (bit & 7));
            ed.write(byte, &[(b[0] & !mask) | (on * mask)])?;
            Ok(Ok(old as i64))
        },
        |out, _, n| write_integer(out, n),
    )
}

pub fn getbit(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let Some(bit) = bit_offset(&args[2], None, ctx.limits().max_bulk_len) else {
        reply::error(ctx.out, BAD_OFFSET);
        return Outcome::Done;
    };
    let byte = bit >> 3;
    let need = Need::indexes(&[(byte as i64, byte as i64)]);
    let read = ctx
        .engine()
        .read_str(ctx.db(), args[1].clone(), need, move |v| {
            let mut b = [0u8];
            if let Some(v) = v {
                v.read(byte, &mut b)?;
            }
            Ok(get_bit(&b, bit & 7))
        });
    ctx.reply_with(read, false, move |out, _, bit| {
        write_integer(out, bit as i64)
    })
}

/// Whether a range counts bits (BIT) or bytes (BYTE, the default).
fn in_bits(unit: Option<&Bytes>) -> Result<bool, &'static str> {
    match unit {
        None => Ok(false),
        Some(a) if is(a, "bit") => Ok(true),
        Some(a) if is(a, "byte") => Ok(false),
        Some(_) => Err(reply::SYNTAX),
    }
}

/// A BYTE / BIT range of a string of `len` bytes, as Redis resolves it:
/// (first byte, last byte, mask of the bits of the first byte outside the
/// range, same for the last byte), or None when empty.
fn range(len: i64, start: i64, end: i64, bits: bool) -> Option<(usize, usize, u8, u8)> {
    let total = if bits { len << 3 } else { len };
    let mut s = if start < 0 { total + start } else { start };
    let mut e = if end < 0 { total + end } else { end };
    s = s.max(0);
    e = e.max(0);
    if e >= total {
        e = total - 1;
    }
    if s > e {
        return None;
    }
    if bits {
        let first = !((1u16 << (8 - (s & 7))) - 1) as u8;
        let last = ((1u16 << (7 - (e & 7))) - 1) as u8;
        Some(((s >> 3) as usize, (e >> 3) as usize, first, last))
    } else {
        Some((s as usize, e as usize, 0, 0))
    }
}

/// BITCOUNT's or BITPOS's range arguments: (start, end, BIT unit); `end`
/// None: to the end of the string. Errors in Redis's order: BITCOUNT
/// parses start, end, then the unit (a negative range with start past end
/// is empty before the unit is looked at: `Ok(None)` here, and the command
/// answers 0); BITPOS parses start, the unit, then end.
type RangeArgs = (i64, Option<i64>, bool);

fn int_arg(a: &[u8]) -> Result<i64, &'static str> {
    parse_i64(a).ok_or(reply::NOT_INTEGER)
}

fn bitcount_args(args: &[Bytes]) -> Result<Option<RangeArgs>, &'static str> {
    let (start, end) = (int_arg(&args[2])?, int_arg(&args[3])?);
    if start < 0 && end < 0 && start > end {
        return Ok(None);
    }
    Ok(Some((start, Some(end), in_bits(args.get(4))?)))
}

fn bitpos_args(args: &[Bytes]) -> Result<RangeArgs, &'static str> {
    let start = int_arg(&args[3])?;
    let bits = in_bits(args.get(5))?;
    let end = match args.get(4) {
        Some(e) => Some(int_arg(e)?),
        None => None,
    };
    Ok((start, end, bits))
}

/// BITCOUNT's arguments: Some(None) the whole string, Some(Some(range)),
/// None an empty range; or the error, reported once the key is found.
type CountArgs = Result<Option<Option<RangeArgs>>, &'static str>;

/// The bytes `[s, e]` a BITCOUNT counts in a string of `len` bytes, with
/// the masks of the bits of `s` and `e` outside the range (None: empty).
fn count_range(r: CountArgs, len: u64) -> Result<Option<(u64, u64, u8, u8)>, &'static str> {
    let Some(r) = r? else { return Ok(None) };
    let len = len as i64;
    let range = match r {
        None => (len > 0).then(|| (0, len as usize - 1, 0, 0)),
        Some((start, end, bits)) => range(len, start, end.unwrap_or(-1), bits),
    };
    Ok(range.map(|(s, e, f, l)| (s as u64, e as u64, f, l)))
}

pub fn bitcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let r: CountArgs = match args.len() {
        2 => Ok(Some(None)),
        4 | 5 => bitcount_args(args).map(|r| r.map(Some)),
        _ => Err(reply::SYNTAX),
    };
    // A cold chunked string is read a batch of parts at a time.
    let read = ctx.engine().scan_str(
        ctx.db(),
        args[1].clone(),
        // A missing key counts 0 whatever the arguments, as Redis.
        move |len| (len.map_or(Ok(None), |len| count_range(r, len)), 0u64),
        move |len| {
            count_range(r, len)
                .ok()
                .flatten()
                .map(|(s, e, ..)| (s, e + 1))
        },
        |(range, n), off, p| {
            let (Ok(Some((s, e, first, last))), Piece::Bytes(b)) = (*range, p) else {
                return true;
            };
            *n += popcount(b);
            let end = off + b.len() as u64;
            if (off..end).contains(&s) {
                *n -= (b[(s - off) as usize] & first).count_ones() as u64;
            }
            if (off..end).contains(&e) {
                *n -= (b[(e - off) as usize] & last).count_ones() as u64;
            }
            true
        },
    );
    ctx.reply_with(read, false, |out, v, (range, n)| {
        integer_or_error(out, v, range.map(|_| n as i64))
    })
}

fn integer_or_error(out: &mut BytesMut, _: Version, r: Result<i64, &'static str>) {
    match r {
        Ok(n) => write_integer(out, n),
        Err(e) => reply::error(out, e),
    }
}

/// Bits set in `b`, a word at a time.
fn popcount(b: &[u8]) -> u64 {
    let mut words = b.chunks_exact(8);
    let mut n: u64 = words
        .by_ref()
        .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()).count_ones() as u64)
        .sum();
    n += words
        .remainder()
        .iter()
        .map(|x| x.count_ones() as u64)
        .sum::<u64>();
    n
}

/// The bytes `[s, e]` a BITPOS looks at in a string of `len` bytes, the
/// masks of the bits of `s` and `e` outside the range, and whether the
/// end was given (None: empty).
type PosRange = Option<(u64, u64, u8, u8, bool)>;

fn pos_range(
    r: Result<Option<RangeArgs>, &'static str>,
    len: u64,
) -> Result<PosRange, &'static str> {
    let len = len as i64;
    let (range, end_given) = match r? {
        None => ((len > 0).then(|| (0, len as usize - 1, 0, 0)), false),
        Some((start, end, bits)) => {
            let e = match end {
                Some(e) => e,
                None if bits => (len << 3) + 7,
                None => len - 1,
            };
            (range(len, start, e, bits), end.is_some())
        }
    };
    Ok(range.map(|(s, e, f, l)| (s as u64, e as u64, f, l, end_given)))
}

/// BITPOS's search: the first byte at or after `i` of `piece` (whose
/// first byte is byte `off`) holding `bit`, as a bit position.
fn find_bit(bit: u8, r: (u64, u64, u8, u8, bool), off: u64, piece: Piece<'_>) -> Option<i64> {
    let (s, e, first, last, _) = r;
    // Bits outside the range read as the opposite of `bit`.
    let outside = |b: u8, mask: u8| if bit == 1 { b & !mask } else { b | mask };
    let (n, bytes) = match piece {
        Piece::Bytes(b) => (b.len(), Some(b)),
        // A run of zeros holds no set bit; its first byte holds a clear
        // one (the masks never cover a whole byte).
        Piece::Zeros(_) if bit == 1 => return None,
        Piece::Zeros(n) => (n.min(1), None),
    };
    for j in 0..n {
        let i = off + j as u64;
        let mut b = bytes.map_or(0, |b| b[j]);
        if i == s {
            b = outside(b, first);
        }
        if i == e {
            b = outside(b, last);
        }
        let b = if bit == 1 { b } else { !b };
        if b != 0 {
            return Some(i as i64 * 8 + b.leading_zeros() as i64);
        }
    }
    None
}

pub fn bitpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let bit = match parse_i64(&args[2]) {
        None => {
            reply::error(ctx.out, reply::NOT_INTEGER);
            return Outcome::Done;
        }
        Some(b @ (0 | 1)) => b as u8,
        Some(_) => {
            reply::error(ctx.out, "ERR The bit argument must be 1 or 0.");
            return Outcome::Done;
        }
    };
    // Bad arguments are reported after the key is looked up, as Redis.
    let r = match args.len() {
        3 => Ok(None),
        4..=6 => bitpos_args(args).map(Some),
        _ => Err(reply::SYNTAX),
    };
    // A cold chunked string is read a batch of parts at a time, up to the
    // part where the bit is.
    let read = ctx.engine().scan_str(
        ctx.db(),
        args[1].clone(),
        move |len| (len.map(|len| pos_range(r, len)), None),
        move |len| {
            pos_range(r, len)
                .ok()
                .flatten()
                .map(|(s, e, ..)| (s, e + 1))
        },
        move |(range, found), off, p| {
            if let Some(Ok(Some(r))) = range {
                *found = find_bit(bit, *r, off, p);
            }
            found.is_none()
        },
    );
    ctx.reply_with(read, false, move |out, v, (range, found)| {
        let pos = match range {
            // No such key: an endless run of zeros.
            None => Ok(if bit == 1 { -1 } else { 0 }),
            Some(Err(e)) => Err(e),
            Some(Ok(None)) => Ok(-1),
            Some(Ok(Some((_, e, _, _, end_given)))) => Ok(match found {
                Some(p) => p,
                None if bit == 1 || end_given => -1,
                // No clear bit: the string is zero-padded on the right.
                None => (e as i64 + 1) * 8,
            }),
        };
        integer_or_error(out, v, pos)
    })
}

pub fn bitop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let op = &args[1];
    let op = if is(op, "and") {
        b'&'
    } else if is(op, "or") {
        b'|'
    } else if is(op, "xor") {
        b'^'
    } else if is(op, "not") {
        b'~'
    } else {
        reply::error(ctx.out, reply::SYNTAX);
        return Outcome::Done;
    };
    if op == b'~' && args.len() != 4 {
        reply::error(
            ctx.out,
            "ERR BITOP NOT must be called with a single source key.",
        );
        return Outcome::Done;
    }
    let dest = args[2].clone();
    let sources = args[3..].to_vec();
    with_strings(
        ctx,
        sources,
        vec![dest.clone()],
        move |engine, db, values, out| {
            let mut vals = Vec::with_capacity(values.len());
            for v in values {
                match v {
                    Ok(v) => vals.push(v.unwrap_or_default()),
                    Err(e) => return reply::engine(out, &e),
                }
            }
            let len = vals.iter().map(|v| v.len()).max().unwrap_or(0);
            let mut res = vec![0u8; len];
            for (i, r) in res.iter_mut().enumerate() {
                let byte = |v: &Bytes| v.get(i).copied().unwrap_or(0);
                *r = match op {
                    b'~' => !byte(&vals[0]),
                    _ => vals[1..].iter().fold(byte(&vals[0]), |a, v| match op {
                        b'&' => a & byte(v),
                        b'|' => a | byte(v),
                        _ => a ^ byte(v),
                    }),
                };
            }
            if res.is_empty() {
                engine.delete(db, &dest);
            } else if let Err(e) = set_raw(engine, db, &dest, res, ExpireUpdate::Clear) {
                return reply::engine(out, &e);
            }
            write_integer(out, len as i64)
        },
    )
}
