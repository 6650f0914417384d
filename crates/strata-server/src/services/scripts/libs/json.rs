//! The `cjson` library scripts use, as Redis bundles lua-cjson 2.1:
//! `encode`, `decode`, `null` and the settings functions
//! (`encode_max_depth`, `decode_max_depth`, `encode_invalid_numbers`,
//! `decode_invalid_numbers`, `encode_number_precision`,
//! `encode_sparse_array`, `encode_keep_buffer`), which keep their values
//! for the life of the scripting engine, as lua-cjson's do. Numbers print
//! with `%.14g` (the precision setting), `/` is escaped, an empty table is
//! an object, a table whose keys are all positive integers an array (holes
//! are `null`; an excessively sparse one is refused or, with
//! `encode_sparse_array(true)`, an object); decoding is lua-cjson's own
//! parser, ported (`json_decode`).

use mlua::{LightUserData, Lua, Table, Value};
use parking_lot::Mutex;
use std::sync::Arc;

/// lua-cjson's settings (`json_config_t`), with its defaults.
#[derive(Clone, Debug)]
pub struct Config {
    pub encode_max_depth: usize,
    pub decode_max_depth: usize,
    /// 0: refused, 1: allowed (`nan`, `inf`), 2: encoded as `null`.
    pub encode_invalid_numbers: u8,
    pub decode_invalid_numbers: bool,
    pub encode_number_precision: usize,
    pub sparse_convert: bool,
    pub sparse_ratio: i64,
    pub sparse_safe: i64,
    pub keep_buffer: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            encode_number_precision: 14,
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            keep_buffer: true,
        }
    }
}

/// `cjson.null` (a light userdata, as lua-cjson's).
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let cfg = Arc::new(Mutex::new(Config::default()));
    let c = cfg.clone();
    t.set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let cfg = c.lock().clone();
            let mut out = Vec::new();
            encode(&v, &mut out, 0, &cfg).map_err(|e| super::located(lua, e))?;
            lua.create_string(&out)
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "decode",
        lua.create_function(move |lua, s: mlua::String| {
            let cfg = c.lock().clone();
            super::json_decode::decode(lua, &s.as_bytes(), &cfg).map_err(|e| super::located(lua, e))
        })?,
    )?;
    t.set("null", null())?;
    settings(lua, &t, &cfg)?;
    Ok(t)
}

/// Lua's `luaL_argerror` text for argument `n` of the setting `name`.
fn arg_error(lua: &Lua, n: usize, name: &str, why: &str) -> mlua::Error {
    super::located(
        lua,
        mlua::Error::runtime(format!("bad argument #{n} to '{name}' ({why})")),
    )
}

/// An integer setting's argument `n` (`json_integer_option`): in
/// `min..=max`; None when absent.
fn int_arg(
    lua: &Lua,
    v: &Value,
    n: usize,
    name: &str,
    min: i64,
    max: i64,
) -> mlua::Result<Option<i64>> {
    let x = match v {
        Value::Nil => return Ok(None),
        Value::Integer(x) => *x,
        Value::Number(x) => *x as i64,
        Value::String(s) => match s.to_str().ok().and_then(|s| s.trim().parse::<f64>().ok()) {
            Some(x) => x as i64,
            None => return Err(arg_error(lua, n, name, "number expected, got string")),
        },
        other => {
            let why = format!("number expected, got {}", other.type_name());
            return Err(arg_error(lua, n, name, &why));
        }
    };
    if x < min || x > max {
        let why = format!("expected integer between {min} and {max}");
        return Err(arg_error(lua, n, name, &why));
    }
    Ok(Some(x))
}

/// A boolean setting's argument `n` (`json_enum_option` over off/on, or
/// a boolean): None when absent.
fn bool_arg(lua: &Lua, v: &Value, n: usize, name: &str) -> mlua::Result<Option<bool>> {
    match v {
        Value::Nil => Ok(None),
        Value::Boolean(b) => Ok(Some(*b)),
        Value::String(s) if &*s.as_bytes() == b"on" => Ok(Some(true)),
        Value::String(s) if &*s.as_bytes() == b"off" => Ok(Some(false)),
        Value::String(s) => {
            let why = format!(
                "invalid option '{}'",
                String::from_utf8_lossy(&s.as_bytes())
            );
            Err(arg_error(lua, n, name, &why))
        }
        other => {
            let why = format!("string expected, got {}", other.type_name());
            Err(arg_error(lua, n, name, &why))
        }
    }
}

/// The settings functions: each sets what it is given and returns the
/// setting's value(s) now.
fn settings(lua: &Lua, t: &Table, cfg: &Arc<Mutex<Config>>) -> mlua::Result<()> {
    let max = i32::MAX as i64;
    int_setting(lua, t, cfg, "encode_max_depth", max, |c| {
        &mut c.encode_max_depth
    })?;
    int_setting(lua, t, cfg, "decode_max_depth", max, |c| {
        &mut c.decode_max_depth
    })?;
    let precision = "encode_number_precision";
    int_setting(lua, t, cfg, precision, 14, |c| {
        &mut c.encode_number_precision
    })?;
    bool_setting(lua, t, cfg, "encode_keep_buffer", |c| &mut c.keep_buffer)?;
    let invalid = "decode_invalid_numbers";
    bool_setting(lua, t, cfg, invalid, |c| &mut c.decode_invalid_numbers)?;
    let c = cfg.clone();
    t.set(
        "encode_invalid_numbers",
        lua.create_function(move |lua, v: Value| {
            const NAME: &str = "encode_invalid_numbers";
            let mut c = c.lock();
            match &v {
                Value::String(s) if &*s.as_bytes() == b"null" => c.encode_invalid_numbers = 2,
                _ => {
                    if let Some(b) = bool_arg(lua, &v, 1, NAME)? {
                        c.encode_invalid_numbers = b as u8;
                    }
                }
            }
            Ok(match c.encode_invalid_numbers {
                0 => Value::Boolean(false),
                1 => Value::Boolean(true),
                _ => Value::String(lua.create_string("null")?),
            })
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_sparse_array",
        lua.create_function(move |lua, (convert, ratio, safe): (Value, Value, Value)| {
            const NAME: &str = "encode_sparse_array";
            let mut c = c.lock();
            if let Some(b) = bool_arg(lua, &convert, 1, NAME)? {
                c.sparse_convert = b;
            }
            if let Some(n) = int_arg(lua, &ratio, 2, NAME, 0, i32::MAX as i64)? {
                c.sparse_ratio = n;
            }
            if let Some(n) = int_arg(lua, &safe, 3, NAME, 0, i32::MAX as i64)? {
                c.sparse_safe = n;
            }
            Ok((c.sparse_convert, c.sparse_ratio, c.sparse_safe))
        })?,
    )?;
    Ok(())
}

/// An integer setting `name` in `1..=max` (`json_integer_option`).
fn int_setting(
    lua: &Lua,
    t: &Table,
    cfg: &Arc<Mutex<Config>>,
    name: &'static str,
    max: i64,
    field: fn(&mut Config) -> &mut usize,
) -> mlua::Result<()> {
    let c = cfg.clone();
    let f = lua.create_function(move |lua, v: Value| {
        let mut c = c.lock();
        if let Some(n) = int_arg(lua, &v, 1, name, 1, max)? {
            *field(&mut c) = n as usize;
        }
        Ok(*field(&mut c) as i64)
    })?;
    t.set(name, f)
}

/// An on/off setting `name` (`json_enum_option`).
fn bool_setting(
    lua: &Lua,
    t: &Table,
    cfg: &Arc<Mutex<Config>>,
    name: &'static str,
    field: fn(&mut Config) -> &mut bool,
) -> mlua::Result<()> {
    let c = cfg.clone();
    let f = lua.create_function(move |lua, v: Value| {
        let mut c = c.lock();
        if let Some(b) = bool_arg(lua, &v, 1, name)? {
            *field(&mut c) = b;
        }
        Ok(*field(&mut c))
    })?;
    t.set(name, f)
}

/// A number as lua-cjson writes it (`json_append_number`).
fn number(n: f64, out: &mut Vec<u8>, cfg: &Config) -> mlua::Result<()> {
    if !n.is_finite() {
        match cfg.encode_invalid_numbers {
            0 => {
                return Err(mlua::Error::runtime(
                    "Cannot serialise number: must not be NaN or Inf",
                ))
            }
            1 if n.is_nan() => {
                out.extend_from_slice(b"nan");
                return Ok(());
            }
            1 => {}
            _ => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    out.extend_from_slice(super::super::convert::fmt_g(n, cfg.encode_number_precision).as_bytes());
    Ok(())
}

/// `lua_array_length`: Some(max key) when every key is a positive
/// integer (0 for an empty table: an object), None when it is an object;
/// an excessively sparse array is refused unless converted to an object.
fn array_length(t: &Table, cfg: &Config) -> mlua::Result<Option<i64>> {
    let (mut max, mut items) = (0i64, 0i64);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let k = match k {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if k.floor() != k || k < 1.0 {
            return Ok(None);
        }
        max = max.max(k as i64);
        items += 1;
    }
    if cfg.sparse_ratio > 0 && max > items * cfg.sparse_ratio && max > cfg.sparse_safe {
        if !cfg.sparse_convert {
            return Err(mlua::Error::runtime(
                "Cannot serialise table: excessively sparse array",
            ));
        }
        return Ok(None);
    }
    Ok(Some(max))
}

fn encode(v: &Value, out: &mut Vec<u8>, depth: usize, cfg: &Config) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => number(*n as f64, out, cfg)?,
        Value::Number(n) => number(*n, out, cfg)?,
        Value::String(s) => string(&s.as_bytes(), out),
        Value::Table(t) => {
            // Tables count towards the depth (`json_check_encode_depth`).
            let depth = depth + 1;
            if depth > cfg.encode_max_depth {
                return Err(mlua::Error::runtime(format!(
                    "Cannot serialise, excessive nesting ({depth})"
                )));
            }
            match array_length(t, cfg)? {
                Some(n) if n > 0 => {
                    out.push(b'[');
                    for i in 1..=n {
                        if i > 1 {
                            out.push(b',');
                        }
                        encode(&t.raw_get::<Value>(i)?, out, depth, cfg)?;
                    }
                    out.push(b']');
                }
                _ => object(t, out, depth, cfg)?,
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

/// `json_append_object`: keys are strings or numbers (written as strings).
fn object(t: &Table, out: &mut Vec<u8>, depth: usize, cfg: &Config) -> mlua::Result<()> {
    out.push(b'{');
    let mut first = true;
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, v) = pair?;
        if !first {
            out.push(b',');
        }
        first = false;
        match &k {
            Value::String(s) => string(&s.as_bytes(), out),
            Value::Number(_) | Value::Integer(_) => {
                let n = match k {
                    Value::Integer(i) => i as f64,
                    Value::Number(n) => n,
                    _ => 0.0,
                };
                out.push(b'"');
                number(n, out, cfg)?;
                out.push(b'"');
            }
            _ => {
                return Err(mlua::Error::runtime(
                    "Cannot serialise table: table key must be a number or string",
                ))
            }
        }
        out.push(b':');
        encode(&v, out, depth, cfg)?;
    }
    out.push(b'}');
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
