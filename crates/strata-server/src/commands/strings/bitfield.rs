//! BITFIELD and BITFIELD_RO, as Redis 7.0 (bitops.c): fields of up to 64
//! bits at any bit offset (`#n` counts in fields), GET / SET / INCRBY with
//! OVERFLOW WRAP, SAT or FAIL. Each field reads and writes only the (at
//! most 9) bytes that hold it, so a chunked string loads only their parts.

use super::bitmap::{bit_offset, get_bit, BAD_OFFSET};
use super::edit;
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use bytes::{Bytes, BytesMut};
use strata_engine::{EngineError, Need, StrEdit, StrRef};
use strata_protocol::{write_array_len, write_integer, write_null, Version};

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// What a BITFIELD operation does when its result does not fit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Get,
    Set,
    IncrBy,
}

#[derive(Clone, Copy)]
struct Field {
    op: Op,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

fn field_type(arg: &[u8]) -> Option<(bool, u32)> {
    let signed = match arg.first()? {
        b'i' => true,
        b'u' => false,
        _ => return None,
    };
    let bits = parse_i64(&arg[1..])?;
    let ok = bits >= 1 && (if signed { bits <= 64 } else { bits <= 63 });
    ok.then_some((signed, bits as u32))
}

/// BITFIELD's arguments: the operations, or the error reply.
fn parse_fields(args: &[Bytes], max_bulk: usize) -> Result<Vec<Field>, &'static str> {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let sub = &args[j];
        let op = if is(sub, "get") && rem >= 2 {
            Op::Get
        } else if is(sub, "set") && rem >= 3 {
            Op::Set
        } else if is(sub, "incrby") && rem >= 3 {
            Op::IncrBy
        } else if is(sub, "overflow") && rem >= 1 {
            let t = &args[j + 1];
            overflow = if is(t, "wrap") {
                Overflow::Wrap
            } else if is(t, "sat") {
                Overflow::Sat
            } else if is(t, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return Err(reply::SYNTAX);
        };
        let (signed, bits) = field_type(&args[j + 1]).ok_or(BAD_TYPE)?;
        let offset = bit_offset(&args[j + 2], Some(bits), max_bulk).ok_or(BAD_OFFSET)?;
        let value = if op == Op::Get {
            0
        } else {
            parse_i64(&args[j + 3]).ok_or(reply::NOT_INTEGER)?
        };
        fields.push(Field {
            op,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
        j += if op == Op::Get { 3 } else { 4 };
    }
    Ok(fields)
}

fn get_unsigned(v: &[u8], offset: u64, bits: u32) -> u64 {
    (0..bits as u64).fold(0, |acc, i| (acc << 1) | get_bit(v, offset + i) as u64)
}

/// A `bits`-wide field's value as a signed number (two's complement).
fn signed(x: u64, bits: u32) -> i64 {
    let mut x = x as i64;
    if bits < 64 && x & (1 << (bits - 1)) != 0 {
        x |= (u64::MAX << bits) as i64;
    }
    x
}

fn set_unsigned(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..bits as u64 {
        let bit = (value >> (bits as u64 - 1 - i)) & 1;
        let at = offset + i;
        let (byte, mask) = ((at >> 3) as usize, 1u8 << (7 - (at & 7)));
        v[byte] = (v[byte] & !mask) | if bit == 1 { mask } else { 0 };
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether `value + incr`
/// overflows `bits`, and the value WRAP or SAT makes of it.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, u64) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        match ow {
            Overflow::Wrap => (true, wrap()),
            _ => (true, max),
        }
    } else if incr < 0 && incr < minincr {
        match ow {
            Overflow::Wrap => (true, wrap()),
            _ => (true, 0),
        }
    } else {
        (false, value.wrapping_add(incr as u64))
    }
}

/// Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        match ow {
            Overflow::Wrap => (true, wrap()),
            _ => (true, max),
        }
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        match ow {
            Overflow::Wrap => (true, wrap()),
            _ => (true, min),
        }
    } else {
        (false, value.wrapping_add(incr))
    }
}

/// Where BITFIELD's fields are read and written: a string being changed,
/// or only read (BITFIELD_RO, GET-only).
enum Fields<'a, 'b> {
    Edit(&'a mut StrEdit<'b>),
    Read(Option<StrRef<'b>>),
}

impl Fields<'_, '_> {
    /// The bytes holding bits `[offset, offset + bits)` (at most 9) and
    /// where they start.
    fn bytes(&self, offset: u64, bits: u32) -> Result<([u8; 9], u64, usize), EngineError> {
        let (a, b) = (offset >> 3, (offset + bits as u64 - 1) >> 3);
        let n = (b - a + 1) as usize;
        let mut buf = [0u8; 9];
        match self {
            Fields::Edit(ed) => ed.read(a, &mut buf[..n])?,
            Fields::Read(Some(v)) => v.read(a, &mut buf[..n])?,
            Fields::Read(None) => {}
        }
        Ok((buf, a, n))
    }

    fn get(&self, offset: u64, bits: u32) -> Result<u64, EngineError> {
        let (buf, _, _) = self.bytes(offset, bits)?;
        Ok(get_unsigned(&buf, offset & 7, bits))
    }

    fn set(&mut self, offset: u64, bits: u32, value: u64) -> Result<(), EngineError> {
        let (mut buf, a, n) = self.bytes(offset, bits)?;
        set_unsigned(&mut buf, offset & 7, bits, value);
        match self {
            Fields::Edit(ed) => ed.write(a, &buf[..n]),
            Fields::Read(_) => Err(EngineError::Corrupt("a BITFIELD write on a read")),
        }
    }
}

/// Runs the fields, writing their replies; returns whether a field
/// changed and whether any write was done (not refused by OVERFLOW FAIL).
fn run_fields(
    io: &mut Fields<'_, '_>,
    fields: &[Field],
    out: &mut BytesMut,
    version: Version,
) -> Result<(bool, bool), EngineError> {
    let mut changed = false;
    let mut wrote = false;
    write_array_len(out, fields.len());
    for f in fields {
        let before = io.get(f.offset, f.bits)?;
        if f.op == Op::Get {
            if f.signed {
                write_integer(out, signed(before, f.bits));
            } else {
                write_integer(out, before as i64);
            }
            continue;
        }
        let (overflow, new, reply) = if f.signed {
            let old = signed(before, f.bits);
            let (incr, base) = match f.op {
                Op::IncrBy => (f.value, old),
                _ => (0, f.value),
            };
            let (o, n) = signed_overflow(base, incr, f.bits, f.overflow);
            let reply = if f.op == Op::IncrBy { n } else { old };
            (o, n as u64, reply)
        } else {
            let old = before;
            let (incr, base) = match f.op {
                Op::IncrBy => (f.value, old),
                _ => (0, f.value as u64),
            };
            let (o, n) = unsigned_overflow(base, incr, f.bits, f.overflow);
            let reply = if f.op == Op::IncrBy {
                n as i64
            } else {
                old as i64
            };
            (o, n, reply)
        };
        if overflow && f.overflow == Overflow::Fail {
            write_null(out, version);
            continue;
        }
        write_integer(out, reply);
        wrote = true;
        // As Redis: a write that leaves the field as it was changes nothing
        // (the field holds `new`'s low `bits` bits).
        let new = new & (u64::MAX >> (64 - f.bits));
        if new != before {
            io.set(f.offset, f.bits, new)?;
            changed = true;
        }
    }
    Ok((changed, wrote))
}

pub fn bitfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bitfield_generic(ctx, args, false)
}

pub fn bitfield_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    bitfield_generic(ctx, args, true)
}

fn bitfield_generic(ctx: &mut Ctx<'_>, args: &[Bytes], read_only: bool) -> Outcome {
    let fields = match parse_fields(args, ctx.limits().max_bulk_len) {
        Ok(f) => f,
        Err(e) => {
            reply::error(ctx.out, e);
            return Outcome::Done;
        }
    };
    let highest = fields
        .iter()
        .filter(|f| f.op != Op::Get)
        .map(|f| f.offset + f.bits as u64 - 1)
        .max();
    let version = ctx.version();
    // The bytes each field touches (a chunked string loads their parts).
    let mut ranges: Vec<(i64, i64)> = fields
        .iter()
        .map(|f| {
            let (a, b) = (f.offset >> 3, (f.offset + f.bits as u64 - 1) >> 3);
            (a as i64, b as i64)
        })
        .collect();
    let Some(highest) = highest else {
        let read = ctx.engine().read_str(
            ctx.db(),
            args[1].clone(),
            Need::indexes(&ranges),
            move |v| {
                // Reads past the end see zeros: nothing to grow.
                let mut out = BytesMut::new();
                run_fields(&mut Fields::Read(v), &fields, &mut out, version)?;
                Ok(out)
            },
        );
        return ctx.reply_with(read, false, move |out, _, r| out.extend_from_slice(&r));
    };
    if read_only {
        reply::error(ctx.out, "ERR BITFIELD_RO only supports the GET subcommand");
        return Outcome::Done;
    }
    // A write past the end grows the last part (a chunked string).
    ranges.push((-1, -1));
    edit(
        ctx,
        &args[1],
        Need::indexes(&ranges),
        move |ed| {
            let need = (highest >> 3) + 1;
            let existed = ed.exists();
            // Redis grows (or creates) the string to the highest bit
            // written before its writes, which may then fail.
            let grew = ed.len() < need;
            if grew {
                ed.write(need - 1, &[0])?;
            }
            ed.mark_raw();
            let mut out = BytesMut::new();
            let (_, wrote) = run_fields(&mut Fields::Edit(ed), &fields, &mut out, version)?;
            if !wrote && (grew || !existed) {
                // ... and signals nothing then.
                crate::services::notify::no_modification();
            }
            Ok(Ok(out))
        },
        |out, _, reply: BytesMut| out.extend_from_slice(&reply),
    )
}
