//! Conversions between RESP and Lua, as Redis 7.0 does them: a command's
//! reply becomes a Lua value (integers numbers, bulks strings, nulls
//! `false` (RESP2) or `nil` (RESP3), arrays tables, status `{ok=...}`,
//! errors `{err=...}`, the RESP3 types tagged tables), and a script's
//! result a reply in the caller's protocol (numbers truncated to integers,
//! `true` 1 or `#t`, `false` null or `#f`, `nil` null, tables arrays up
//! to their first nil, `{ok=}` a status, `{err=}` an error, `{map=}`,
//! `{set=}`, `{double=}`, `{big_number=}`, `{verbatim_string=}` their
//! RESP3 types, or what RESP2 makes of them).

use bytes::BytesMut;
use mlua::{Lua, Value};
use strata_protocol::{
    write_array_len, write_bool, write_bulk, write_double, write_integer, write_map_len,
    write_null, write_set_len, write_verbatim, Frame, Version,
};

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

/// A string or a number as Lua's `lua_tolstring` gives it (numbers with
/// `%.14g`); None for other types.
pub fn lua_string(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(n) => Some(fmt_g(*n, 14).into_bytes()),
        _ => None,
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

/// A command's reply as the Lua value a script sees. Under RESP2 a null
/// is `false`; under RESP3 (`redis.setresp(3)`) it is `nil`, and maps,
/// sets, doubles, big numbers and verbatim strings become `{map=}`,
/// `{set=}`, `{double=}`, `{big_number=}` and `{verbatim_string=}`.
pub fn frame_to_lua(lua: &Lua, f: &Frame, v: Version) -> mlua::Result<Value> {
    let tagged = |tag: &str, inner: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(tag, inner)?;
        Ok(Value::Table(t))
    };
    Ok(match f {
        Frame::Integer(n) => Value::Number(*n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(b)?),
        Frame::Null if v == Version::Resp3 => Value::Nil,
        Frame::Null => Value::Boolean(false),
        Frame::Array(a) | Frame::Push(a) => {
            let t = lua.create_table()?;
            for (i, x) in a.iter().enumerate() {
                t.raw_set(i + 1, frame_to_lua(lua, x, v)?)?;
            }
            Value::Table(t)
        }
        Frame::Set(a) => {
            let t = lua.create_table()?;
            for x in a {
                t.raw_set(frame_to_lua(lua, x, v)?, true)?;
            }
            tagged("set", Value::Table(t))?
        }
        Frame::Simple(s) => tagged("ok", Value::String(lua.create_string(s)?))?,
        Frame::Error(e) | Frame::BulkError(e) => {
            tagged("err", Value::String(lua.create_string(e)?))?
        }
        Frame::Double(d) => tagged("double", Value::Number(*d))?,
        Frame::Boolean(b) => Value::Boolean(*b),
        Frame::BigNumber(b) => tagged("big_number", Value::String(lua.create_string(b)?))?,
        Frame::Verbatim { format, data } => {
            let t = lua.create_table()?;
            t.raw_set("format", lua.create_string(format)?)?;
            t.raw_set("string", lua.create_string(data)?)?;
            tagged("verbatim_string", Value::Table(t))?
        }
        Frame::Map(m) => {
            let t = lua.create_table()?;
            for (k, x) in m {
                t.raw_set(frame_to_lua(lua, k, v)?, frame_to_lua(lua, x, v)?)?;
            }
            tagged("map", Value::Table(t))?
        }
    })
}

/// How a result is written: the caller's protocol, and the script's own
/// (`redis.setresp`), which decides what booleans become, as in Redis.
#[derive(Clone, Copy)]
pub struct Protocols {
    pub caller: Version,
    pub script: Version,
}

/// Writes a script's result as a reply (`Protocols`).
pub fn lua_to_reply(val: &Value, out: &mut BytesMut, depth: usize, p: Protocols) {
    let v = p.caller;
    match val {
        Value::Nil => write_null(out, v),
        Value::Boolean(b) if p.script == Version::Resp3 => write_bool(out, v, *b),
        Value::Boolean(true) => write_integer(out, 1),
        Value::Boolean(false) => write_null(out, v),
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
            // A table nested this deep (or one that contains itself) ends
            // as Redis's does where its Lua stack runs out: with an error
            // in place of the next level.
            if depth > 1000 {
                out.extend_from_slice(b"-ERR reached lua stack limit\r\n");
                return;
            }
            if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
                return write_double(out, v, d);
            }
            if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
                return write_double(out, v, d as f64);
            }
            if let Ok(Value::String(b)) = t.raw_get::<Value>("big_number") {
                let b = clean(&b.as_bytes());
                if v == Version::Resp3 {
                    out.extend_from_slice(b"(");
                    out.extend_from_slice(&b);
                    out.extend_from_slice(b"\r\n");
                } else {
                    write_bulk(out, &b);
                }
                return;
            }
            if let Ok(Value::Table(vs)) = t.raw_get::<Value>("verbatim_string") {
                if let (Ok(Value::String(f)), Ok(Value::String(s))) =
                    (vs.raw_get::<Value>("format"), vs.raw_get::<Value>("string"))
                {
                    let f = f.as_bytes();
                    let format: [u8; 3] = f[..].try_into().unwrap_or(*b"txt");
                    return write_verbatim(out, v, &format, &s.as_bytes());
                }
            }
            if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
                let pairs: Vec<(Value, Value)> = m.pairs().filter_map(Result::ok).collect();
                write_map_len(out, v, pairs.len());
                for (k, x) in &pairs {
                    lua_to_reply(k, out, depth + 1, p);
                    lua_to_reply(x, out, depth + 1, p);
                }
                return;
            }
            if let Ok(Value::Table(m)) = t.raw_get::<Value>("set") {
                let keys: Vec<Value> = m
                    .pairs::<Value, Value>()
                    .filter_map(|p| p.ok().map(|(k, _)| k))
                    .collect();
                write_set_len(out, v, keys.len());
                for k in &keys {
                    lua_to_reply(k, out, depth + 1, p);
                }
                return;
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(x) => items.push(x),
                }
            }
            write_array_len(out, items.len());
            for x in &items {
                lua_to_reply(x, out, depth + 1, p);
            }
        }
        _ => write_null(out, v),
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

/// An error the code raised, `{error, line}` from the runner's handler:
/// the message as Redis words it (with its code) and the line.
pub fn error_parts(v: &Value) -> (String, i64) {
    let (e, line) = match v {
        Value::Table(t) => (
            t.raw_get::<Value>(1).unwrap_or(Value::Nil),
            t.raw_get::<i64>(2).unwrap_or(0),
        ),
        other => (other.clone(), 0),
    };
    let msg = match &e {
        Value::Table(t) => match t.raw_get::<Value>("err") {
            Ok(Value::String(s)) => {
                let s = s.to_string_lossy().to_string();
                s.strip_prefix('-').unwrap_or(&s).to_string()
            }
            _ => "ERR unknown error".to_string(),
        },
        Value::String(s) => format!("ERR {}", s.to_string_lossy()),
        Value::Error(err) => format!("ERR {}", root_message(err)),
        other => format!("ERR {}", other.type_name()),
    };
    (msg, line)
}

/// The message of an error a Rust function (or the VM's hook) raised.
fn root_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => root_message(cause),
        mlua::Error::RuntimeError(s) => s.clone(),
        other => other.to_string(),
    }
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
