//! LuaBitOp's `bit` library, as Redis bundles it.

use mlua::{Lua, MultiValue, Table, Value};

/// LuaBitOp's `bit` library (32-bit operations on numbers), as Redis
/// bundles it.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    fn tobit(v: f64) -> i32 {
        // LuaBitOp: the number modulo 2^32, as a signed 32-bit integer.
        (v.rem_euclid(4294967296.0) as u64 as u32) as i32
    }
    let args = |a: &MultiValue| -> mlua::Result<Vec<i32>> {
        a.iter()
            .map(|v| match v {
                Value::Number(n) => Ok(tobit(*n)),
                Value::Integer(n) => Ok(tobit(*n as f64)),
                Value::String(s) => s
                    .to_str()
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .map(tobit)
                    .ok_or_else(|| mlua::Error::runtime("bad argument (number expected)")),
                _ => Err(mlua::Error::runtime("bad argument (number expected)")),
            })
            .collect()
    };
    type Fold = fn(i32, i32) -> i32;
    let folds: [(&str, Fold); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, op) in folds {
        t.set(
            name,
            lua.create_function(move |_, a: MultiValue| {
                let v = args(&a)?;
                Ok(v.into_iter().reduce(op).unwrap_or(0) as f64)
            })?,
        )?;
    }
    t.set(
        "tobit",
        lua.create_function(move |_, a: MultiValue| Ok(*args(&a)?.first().unwrap_or(&0) as f64))?,
    )?;
    t.set(
        "bnot",
        lua.create_function(move |_, a: MultiValue| Ok(!*args(&a)?.first().unwrap_or(&0) as f64))?,
    )?;
    type Shift = fn(i32, u32) -> i32;
    let shifts: [(&str, Shift); 5] = [
        ("lshift", |a, n| ((a as u32) << (n & 31)) as i32),
        ("rshift", |a, n| ((a as u32) >> (n & 31)) as i32),
        ("arshift", |a, n| a >> (n & 31)),
        ("rol", |a, n| (a as u32).rotate_left(n & 31) as i32),
        ("ror", |a, n| (a as u32).rotate_right(n & 31) as i32),
    ];
    for (name, op) in shifts {
        t.set(
            name,
            lua.create_function(move |_, a: MultiValue| {
                let v = args(&a)?;
                let (x, n) = (*v.first().unwrap_or(&0), *v.get(1).unwrap_or(&0));
                Ok(op(x, n as u32) as f64)
            })?,
        )?;
    }
    t.set(
        "tohex",
        lua.create_function(move |_, a: MultiValue| {
            let v = args(&a)?;
            let x = *v.first().unwrap_or(&0) as u32;
            let n = *v.get(1).unwrap_or(&8);
            let digits = n.unsigned_abs().min(8) as usize;
            let s = format!("{x:08x}");
            let s = s[8 - digits..].to_string();
            Ok(if n < 0 { s.to_uppercase() } else { s })
        })?,
    )?;
    Ok(t)
}
