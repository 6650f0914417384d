//! `cmsgpack` (lua-cmsgpack 0.4, as Redis bundles it): `pack(...)`,
//! `unpack(s)`, `unpack_one(s [, offset])`, `unpack_limit(s, limit
//! [, offset])`.
//!
//! Its encoding choices, which callers see in the bytes: a number that is a
//! whole 64-bit integer takes the smallest integer format, any other a
//! float32 when that keeps it exactly, else a float64; strings take
//! fixstr / str8 / str16 / str32; a table whose keys are exactly 1..n is
//! an array, any other a map (in the table's iteration order); nesting
//! deeper than 16 tables, functions and other values encode as nil.
//! Decoded numbers are Lua numbers (doubles), arrays tables from 1.

use mlua::{Lua, MultiValue, Table, Value};

/// Tables nested deeper than this encode as nil.
const MAX_NESTING: usize = 16;

pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(super::located(
                    lua,
                    mlua::Error::runtime(
                        "bad argument #0 to 'pack' (MessagePack pack needs input.)",
                    ),
                ));
            }
            let mut out = Vec::new();
            for a in &args {
                encode(a, &mut out, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "unpack",
        lua.create_function(|lua, s: mlua::String| {
            let (_, values) =
                unpack(lua, &s.as_bytes(), 0, 0).map_err(|e| super::located(lua, e))?;
            Ok(MultiValue::from_vec(values))
        })?,
    )?;
    t.set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::String, Option<i64>)| {
            let (next, mut values) = unpack(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
                .map_err(|e| super::located(lua, e))?;
            values.insert(0, Value::Integer(next));
            Ok(MultiValue::from_vec(values))
        })?,
    )?;
    t.set(
        "unpack_limit",
        lua.create_function(
            |lua, (s, limit, offset): (mlua::String, i64, Option<i64>)| {
                let (next, mut values) = unpack(lua, &s.as_bytes(), limit, offset.unwrap_or(0))
                    .map_err(|e| super::located(lua, e))?;
                values.insert(0, Value::Integer(next));
                Ok(MultiValue::from_vec(values))
            },
        )?,
    )?;
    Ok(t)
}

fn encode(v: &Value, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => encode_int(*n, out),
        Value::Number(n) => encode_number(*n, out),
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Table(t) if level < MAX_NESTING => encode_table(t, out, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_number(n: f64, out: &mut Vec<u8>) {
    if n.is_finite() && (n as i64) as f64 == n {
        encode_int(n as i64, out);
    } else if (n as f32) as f64 == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i32::MIN as i64 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_bytes(b: &[u8], out: &mut Vec<u8>) {
    let n = b.len();
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else if n <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(b);
}

/// Header of an array or map of `n` elements: fix, 16-bit or 32-bit.
fn encode_len(n: usize, fix: u8, wide: u8, out: &mut Vec<u8>) {
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(wide);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// A table as lua-cmsgpack writes it. The pairs are walked twice rather
/// than collected: a collected big table would hold a Lua reference per
/// key and value, past mlua's reference stack (8,000).
fn encode_table(t: &Table, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    // An array when the keys are exactly 1..n (lua-cmsgpack's test).
    let (mut max, mut count, mut numeric) = (0f64, 0usize, true);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        count += 1;
        let n = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => {
                numeric = false;
                continue;
            }
        };
        max = max.max(n);
        numeric &= n > 0.0 && n.fract() == 0.0;
    }
    if numeric && max == count as f64 {
        let len = t.raw_len();
        encode_len(len, 0x90, 0xdc, out);
        for i in 1..=len {
            encode(&t.raw_get::<Value>(i)?, out, level + 1)?;
        }
    } else {
        encode_len(count, 0x80, 0xde, out);
        for pair in t.pairs::<Value, Value>() {
            let (k, v) = pair?;
            encode(&k, out, level + 1)?;
            encode(&v, out, level + 1)?;
        }
    }
    Ok(())
}

/// Why decoding stopped.
enum Stop {
    Missing,
    BadFormat,
}

/// The most values one unpack returns.
const MAX_RESULTS: usize = 7000;

/// Decodes up to `limit` values (0: all) from `offset`: the offset after
/// them (-1 at the end of the input) and the values.
fn unpack(lua: &Lua, s: &[u8], limit: i64, offset: i64) -> mlua::Result<(i64, Vec<Value>)> {
    if offset < 0 || limit < 0 || offset as usize > s.len() {
        return Err(mlua::Error::runtime(format!(
            "Invalid request to unpack with offset of {offset} and limit of {limit}."
        )));
    }
    let mut pos = offset as usize;
    let mut values = Vec::new();
    while pos < s.len() && (limit == 0 || (values.len() as i64) < limit) {
        // Each value is a result on the Lua stack (8,000 slots, as
        // lua-cmsgpack's luaL_checkstack finds them).
        if values.len() >= MAX_RESULTS {
            return Err(mlua::Error::runtime(
                "stack overflow (too many values to unpack)",
            ));
        }
        match decode(lua, s, &mut pos, 0) {
            Ok(v) => values.push(v),
            Err(Stop::Missing) => return Err(mlua::Error::runtime("Missing bytes in input.")),
            Err(Stop::BadFormat) => return Err(mlua::Error::runtime("Bad data format in input.")),
        }
    }
    let next = if pos == s.len() { -1 } else { pos as i64 };
    Ok((next, values))
}

fn take<'a>(s: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], Stop> {
    let b = s.get(*pos..*pos + n).ok_or(Stop::Missing)?;
    *pos += n;
    Ok(b)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, &x| (a << 8) | x as u64)
}

/// Nesting deeper than this is refused as bad data (the decoder recurses).
const MAX_DECODE_DEPTH: usize = 1000;

fn decode(lua: &Lua, s: &[u8], pos: &mut usize, depth: usize) -> Result<Value, Stop> {
    if depth > MAX_DECODE_DEPTH {
        return Err(Stop::BadFormat);
    }
    let lua_err = |_| Stop::BadFormat;
    let t = take(s, pos, 1)?[0];
    let string = |pos: &mut usize, n: usize| -> Result<Value, Stop> {
        let b = take(s, pos, n)?;
        lua.create_string(b).map(Value::String).map_err(lua_err)
    };
    let array = |pos: &mut usize, n: usize| -> Result<Value, Stop> {
        let t = lua.create_table().map_err(lua_err)?;
        for i in 1..=n {
            let v = decode(lua, s, pos, depth + 1)?;
            t.raw_set(i, v).map_err(lua_err)?;
        }
        Ok(Value::Table(t))
    };
    let map = |pos: &mut usize, n: usize| -> Result<Value, Stop> {
        let t = lua.create_table().map_err(lua_err)?;
        for _ in 0..n {
            let k = decode(lua, s, pos, depth + 1)?;
            let v = decode(lua, s, pos, depth + 1)?;
            if !matches!(k, Value::Nil) {
                t.raw_set(k, v).map_err(lua_err)?;
            }
        }
        Ok(Value::Table(t))
    };
    let num = |x: f64| Ok(Value::Number(x));
    match t {
        0x00..=0x7f => num(t as f64),
        0x80..=0x8f => map(pos, (t & 0x0f) as usize),
        0x90..=0x9f => array(pos, (t & 0x0f) as usize),
        0xa0..=0xbf => string(pos, (t & 0x1f) as usize),
        0xc0 => Ok(Value::Nil),
        0xc2 => Ok(Value::Boolean(false)),
        0xc3 => Ok(Value::Boolean(true)),
        0xc4 | 0xd9 => {
            let n = take(s, pos, 1)?[0] as usize;
            string(pos, n)
        }
        0xc5 | 0xda => {
            let n = be(take(s, pos, 2)?) as usize;
            string(pos, n)
        }
        0xc6 | 0xdb => {
            let n = be(take(s, pos, 4)?) as usize;
            string(pos, n)
        }
        0xca => {
            num(f32::from_be_bytes(take(s, pos, 4)?.try_into().map_err(|_| Stop::Missing)?) as f64)
        }
        0xcb => num(f64::from_be_bytes(
            take(s, pos, 8)?.try_into().map_err(|_| Stop::Missing)?,
        )),
        0xcc => num(take(s, pos, 1)?[0] as f64),
        0xcd => num(be(take(s, pos, 2)?) as f64),
        0xce => num(be(take(s, pos, 4)?) as f64),
        0xcf => num(be(take(s, pos, 8)?) as f64),
        0xd0 => num(take(s, pos, 1)?[0] as i8 as f64),
        0xd1 => num(be(take(s, pos, 2)?) as u16 as i16 as f64),
        0xd2 => num(be(take(s, pos, 4)?) as u32 as i32 as f64),
        0xd3 => num(be(take(s, pos, 8)?) as i64 as f64),
        0xdc => {
            let n = be(take(s, pos, 2)?) as usize;
            array(pos, n)
        }
        0xdd => {
            let n = be(take(s, pos, 4)?) as usize;
            array(pos, n)
        }
        0xde => {
            let n = be(take(s, pos, 2)?) as usize;
            map(pos, n)
        }
        0xdf => {
            let n = be(take(s, pos, 4)?) as usize;
            map(pos, n)
        }
        0xe0..=0xff => num(t as i8 as f64),
        _ => Err(Stop::BadFormat),
    }
}
