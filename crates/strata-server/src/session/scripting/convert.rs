//! Conversions between RESP and Lua, as Redis 7.0 does them (RESP2):
//! a command's reply becomes a Lua value (integers numbers, bulks
//! strings, nulls `false`, arrays tables, status `{ok=...}`, errors
//! `{err=...}`), and a script's result a reply (numbers truncated to
//! integers, `true` 1, `false` and `nil` null, tables arrays up to their
//! first nil, `{ok=}` a status, `{err=}` an error).

use bytes::BytesMut;
use mlua::{Lua, Value};
use strata_protocol::{write_array_len, write_bulk, write_integer, write_null, Frame, Version};

/// C's `%.<prec>g`.
pub fn fmt_g(n: f64, prec: usize) -> String {
    if n == 0.0 {
        return if n.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if n.is_nan() {
        return "nan".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let exp = format!("{:.*e}", prec - 1, n);
    let (mant, e) = exp.split_once('e').unwrap_or((&exp, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if e < -4 || e >= prec as i32 {
        let sign = if e < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", trim(mant), sign, e.abs())
    } else {
        let decimals = (prec as i32 - 1 - e).max(0) as usize;
        trim(&format!("{:.*}", decimals, n))
    }
}

/// A `redis.call` argument: a string as is, a number as Redis prints it
/// (shortest round-trip form); None for other types.
pub fn arg_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(n) => Some(format!("{n}").into_bytes()),
        _ => None,
    }
}

/// A command's reply as the Lua value a script sees.
pub fn frame_to_lua(lua: &Lua, f: &Frame) -> mlua::Result<Value> {
    Ok(match f {
        Frame::Integer(n) => Value::Number(*n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(b)?),
        Frame::Null => Value::Boolean(false),
        Frame::Array(a) | Frame::Set(a) | Frame::Push(a) => {
            let t = lua.create_table()?;
            for (i, x) in a.iter().enumerate() {
                t.raw_set(i + 1, frame_to_lua(lua, x)?)?;
            }
            Value::Table(t)
        }
        Frame::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(s)?)?;
            Value::Table(t)
        }
        Frame::Error(e) | Frame::BulkError(e) => {
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(e)?)?;
            Value::Table(t)
        }
        Frame::Double(d) => Value::Number(*d),
        Frame::Boolean(b) => Value::Boolean(*b),
        Frame::BigNumber(b) | Frame::Verbatim { data: b, .. } => {
            Value::String(lua.create_string(b)?)
        }
        Frame::Map(m) => {
            let t = lua.create_table()?;
            for (k, v) in m {
                t.raw_set(frame_to_lua(lua, k)?, frame_to_lua(lua, v)?)?;
            }
            Value::Table(t)
        }
    })
}

/// Writes a script's result as a reply.
pub fn lua_to_reply(v: &Value, out: &mut BytesMut, depth: usize) {
    match v {
        Value::Nil => write_null(out, Version::Resp2),
        Value::Boolean(true) => write_integer(out, 1),
        Value::Boolean(false) => write_null(out, Version::Resp2),
        Value::Integer(n) => write_integer(out, *n),
        Value::Number(n) => write_integer(out, *n as i64),
        Value::String(s) => write_bulk(out, &s.as_bytes()),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                error_line(out, &e.as_bytes());
                return;
            }
            if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
                out.extend_from_slice(b"+");
                out.extend_from_slice(&clean(&s.as_bytes()));
                out.extend_from_slice(b"\r\n");
                return;
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(x) => items.push(x),
                }
            }
            if depth > 1000 {
                write_null(out, Version::Resp2);
                return;
            }
            write_array_len(out, items.len());
            for x in &items {
                lua_to_reply(x, out, depth + 1);
            }
        }
        _ => write_null(out, Version::Resp2),
    }
}

/// An error reply of `msg` (with its code; `-` added, newlines made
/// spaces).
pub fn error_line(out: &mut BytesMut, msg: &[u8]) {
    let msg = msg.strip_prefix(b"-").unwrap_or(msg);
    out.extend_from_slice(b"-");
    out.extend_from_slice(&clean(msg));
    out.extend_from_slice(b"\r\n");
}

fn clean(s: &[u8]) -> Vec<u8> {
    s.iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::fmt_g;

    #[test]
    fn percent_g_as_c_prints_it() {
        for (n, want) in [
            (10.0 / 3.0, "3.3333333333333"),
            (1.5, "1.5"),
            (1e20, "1e+20"),
            (100.0, "100"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789012345.0, "1.2345678901234e+14"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(fmt_g(n, 14), want, "{n}");
        }
    }
}
