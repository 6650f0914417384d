//! The `cjson` library scripts use (encode, decode), as Redis bundles
//! lua-cjson: numbers print with 14 significant digits, `/` is escaped,
//! an empty table is an object, a table with keys 1..n an array; decoding
//! is lua-cjson's own parser, ported (`json_decode`).

use mlua::{LightUserData, Lua, Table, Value};

/// `cjson.null` (a light userdata, as lua-cjson's).
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let mut out = Vec::new();
            encode(&v, &mut out, 0).map_err(|e| super::located(lua, e))?;
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "decode",
        lua.create_function(|lua, s: mlua::String| {
            super::json_decode::decode(lua, &s.as_bytes()).map_err(|e| super::located(lua, e))
        })?,
    )?;
    t.set("null", null())?;
    Ok(t)
}

fn encode(v: &Value, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    if depth > 1000 {
        return Err(mlua::Error::runtime(
            "Cannot serialise, excessive nesting (1001)",
        ));
    }
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Number(n) => {
            if !n.is_finite() {
                return Err(mlua::Error::runtime(
                    "Cannot serialise number: must not be NaN or Inf",
                ));
            }
            out.extend_from_slice(super::super::convert::fmt_g(*n, 14).as_bytes());
        }
        Value::String(s) => string(&s.as_bytes(), out),
        Value::Table(t) => {
            let n = t.raw_len();
            let mut count = 0;
            for pair in t.clone().pairs::<Value, Value>() {
                pair?;
                count += 1;
            }
            if n > 0 && count == n {
                out.push(b'[');
                for i in 1..=n {
                    if i > 1 {
                        out.push(b',');
                    }
                    encode(&t.raw_get::<Value>(i)?, out, depth + 1)?;
                }
                out.push(b']');
            } else {
                out.push(b'{');
                let mut first = true;
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    let key = match &k {
                        Value::String(s) => s.as_bytes().to_vec(),
                        Value::Number(n) => super::super::convert::fmt_g(*n, 14).into_bytes(),
                        Value::Integer(n) => n.to_string().into_bytes(),
                        _ => {
                            return Err(mlua::Error::runtime(
                                "Cannot serialise table: table key must be a number or string",
                            ))
                        }
                    };
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    string(&key, out);
                    out.push(b':');
                    encode(&v, out, depth + 1)?;
                }
                out.push(b'}');
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    }
    Ok(())
}

fn string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            8 => out.extend_from_slice(b"\\b"),
            12 => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}
