//! The libraries Redis bundles for scripts, beyond Lua's own: `bit`
//! (LuaBitOp), `cjson` (lua-cjson), `cmsgpack` (lua-cmsgpack) and
//! `struct` (Roberto Ierusalimschy's). Each matches the bundled C
//! library's results, which scripts (and their callers) depend on. And
//! Lua's own functions Redis patched (`base`: `unpack`).

pub mod base;
pub mod bit;
pub mod json;
mod json_decode;
pub mod msgpack;
pub mod structs;

use mlua::{Lua, MultiValue, Value};

/// A Rust library function's error as C's `luaL_error` raises it: the
/// message after where the calling Lua code is (`user_script:3: `).
pub fn located(lua: &Lua, e: mlua::Error) -> mlua::Error {
    let mlua::Error::RuntimeError(msg) = e else {
        return e;
    };
    let at = lua.inspect_stack(1).and_then(|d| {
        let line = d.curr_line();
        let src = d.source().short_src?.to_string();
        (line > 0).then(|| format!("{src}:{line}: "))
    });
    mlua::Error::runtime(format!("{}{msg}", at.unwrap_or_default()))
}

/// `luaL_argerror`'s words.
pub fn arg_err<T>(n: usize, f: &str, msg: &str) -> mlua::Result<T> {
    Err(mlua::Error::runtime(format!(
        "bad argument #{n} to '{f}' ({msg})"
    )))
}

pub fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None | Some(Value::Nil) => "no value",
        Some(v) => v.type_name(),
    }
}

/// `luaL_checknumber`: a number, or a string that reads as one.
pub fn check_number(args: &MultiValue, n: usize, f: &str) -> mlua::Result<f64> {
    let v = args.get(n - 1);
    match v {
        Some(Value::Integer(i)) => Ok(*i as f64),
        Some(Value::Number(x)) => Ok(*x),
        Some(Value::String(s)) => match s.to_str().ok().and_then(|s| parse_number(&s)) {
            Some(x) => Ok(x),
            None => arg_err(n, f, "number expected, got string"),
        },
        _ => arg_err(n, f, &format!("number expected, got {}", type_name(v))),
    }
}

/// Lua 5.1's string-to-number (decimal or hexadecimal, spaces around).
fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(|x| x as f64);
    }
    t.parse().ok()
}
