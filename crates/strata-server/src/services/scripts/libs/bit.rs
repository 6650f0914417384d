//! LuaBitOp's `bit` library (32-bit operations on numbers), as Redis
//! bundles it: arguments are numbers (or strings that read as numbers),
//! rounded to the nearest integer and taken modulo 2^32; results are
//! signed 32-bit numbers.

use super::{check_number, located};
use mlua::{Lua, MultiValue, Table};

/// Argument `n` (from 1) of function `f` as LuaBitOp's `barg` takes it.
fn barg(args: &MultiValue, n: usize, f: &str) -> mlua::Result<i32> {
    let x = check_number(args, n, f)?.round_ties_even();
    Ok((x.rem_euclid(4294967296.0) as u64 as u32) as i32)
}

pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    type Fold = fn(i32, i32) -> i32;
    let folds: [(&'static str, Fold); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, op) in folds {
        t.set(
            name,
            lua.create_function(move |lua, a: MultiValue| {
                let mut acc = barg(&a, 1, name).map_err(|e| located(lua, e))?;
                for i in 2..=a.len() {
                    acc = op(acc, barg(&a, i, name).map_err(|e| located(lua, e))?);
                }
                Ok(acc as f64)
            })?,
        )?;
    }
    t.set(
        "tobit",
        lua.create_function(|lua, a: MultiValue| {
            Ok(barg(&a, 1, "tobit").map_err(|e| located(lua, e))? as f64)
        })?,
    )?;
    t.set(
        "bnot",
        lua.create_function(|lua, a: MultiValue| {
            Ok(!barg(&a, 1, "bnot").map_err(|e| located(lua, e))? as f64)
        })?,
    )?;
    t.set(
        "bswap",
        lua.create_function(|lua, a: MultiValue| {
            Ok(barg(&a, 1, "bswap")
                .map_err(|e| located(lua, e))?
                .swap_bytes() as f64)
        })?,
    )?;
    type Shift = fn(i32, u32) -> i32;
    let shifts: [(&'static str, Shift); 5] = [
        ("lshift", |a, n| ((a as u32) << (n & 31)) as i32),
        ("rshift", |a, n| ((a as u32) >> (n & 31)) as i32),
        ("arshift", |a, n| a >> (n & 31)),
        ("rol", |a, n| (a as u32).rotate_left(n & 31) as i32),
        ("ror", |a, n| (a as u32).rotate_right(n & 31) as i32),
    ];
    for (name, op) in shifts {
        t.set(
            name,
            lua.create_function(move |lua, a: MultiValue| {
                let x = barg(&a, 1, name).map_err(|e| located(lua, e))?;
                let n = barg(&a, 2, name).map_err(|e| located(lua, e))?;
                Ok(op(x, n as u32) as f64)
            })?,
        )?;
    }
    t.set(
        "tohex",
        lua.create_function(|lua, a: MultiValue| {
            let x = barg(&a, 1, "tohex").map_err(|e| located(lua, e))? as u32;
            let n = if a.len() < 2 {
                8
            } else {
                barg(&a, 2, "tohex").map_err(|e| located(lua, e))?
            };
            let digits = n.unsigned_abs().min(8) as usize;
            let s = format!("{x:08x}");
            let s = s[8 - digits..].to_string();
            Ok(if n < 0 { s.to_uppercase() } else { s })
        })?,
    )?;
    Ok(t)
}
