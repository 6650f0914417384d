//! `struct` (Roberto Ierusalimschy's struct library, as Redis bundles it):
//! `pack(fmt, ...)`, `unpack(fmt, s [, init])`, `size(fmt)`, on this
//! machine's C sizes (x86-64 / AArch64 Linux: short 2, int 4, long and
//! size_t 8, little-endian native order, maximum alignment 8).
//!
//! Format: `>` big-endian, `<` little-endian, `![n]` alignment, `x` a
//! zero byte, `b`/`B` `h`/`H` `l`/`L` `T` `i[n]`/`I[n]` integers (signed
//! lower-case), `f` float, `d` double, `s` a zero-terminated string,
//! `c[n]` n bytes (`c0`: the whole string when packing, the previous
//! number's length when unpacking), spaces ignored.

use super::{arg_err, check_number, type_name};
use mlua::{Lua, MultiValue, Table, Value};

/// Largest integral size `i[n]` takes (Redis's fix for CVE-2020-14147).
const MAX_INT_SIZE: usize = 32;
/// Default of `!`: the alignment of a double.
const MAX_ALIGN: usize = 8;

pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            pack(lua, &args).map_err(|e| super::located(lua, e))
        })?,
    )?;
    t.set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| {
            unpack(lua, &args).map_err(|e| super::located(lua, e))
        })?,
    )?;
    t.set(
        "size",
        lua.create_function(|lua, args: MultiValue| {
            size(&args).map_err(|e| super::located(lua, e))
        })?,
    )?;
    Ok(t)
}

fn err<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::runtime(msg.into()))
}

/// `luaL_checklstring`: a string, or a number as Lua prints it.
fn check_bytes(args: &MultiValue, n: usize, f: &str) -> mlua::Result<Vec<u8>> {
    let v = args.get(n - 1);
    match v.and_then(super::super::convert::lua_string) {
        Some(b) => Ok(b),
        None => arg_err(n, f, &format!("string expected, got {}", type_name(v))),
    }
}

/// Reading a format string.
struct Format<'a> {
    f: &'a [u8],
    i: usize,
    little: bool,
    align: usize,
}

impl Format<'_> {
    fn new(f: &[u8]) -> Format<'_> {
        Format {
            f,
            i: 0,
            little: true,
            align: 1,
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.f.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    /// A number after an option, or `default`.
    fn num(&mut self, default: usize) -> mlua::Result<usize> {
        if !self.f.get(self.i).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: usize = 0;
        while let Some(d) = self.f.get(self.i).filter(|d| d.is_ascii_digit()) {
            a = match a
                .checked_mul(10)
                .and_then(|a| a.checked_add((d - b'0') as usize))
            {
                Some(a) if a <= i32::MAX as usize => a,
                _ => return err("integral size overflow"),
            };
            self.i += 1;
        }
        Ok(a)
    }

    /// The size of option `opt` (reading its number).
    fn size(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.num(1)?,
            b'i' | b'I' => {
                let n = self.num(4)?;
                if n > MAX_INT_SIZE {
                    return err(format!(
                        "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                    ));
                }
                n
            }
            _ => 0,
        })
    }

    /// Padding before an item of `size` at `len`.
    fn to_align(&self, len: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        (size - (len & (size - 1))) & (size - 1)
    }

    /// Options that set order and alignment; others are errors.
    fn control(&mut self, opt: u8, f: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => self.little = false,
            b'<' => self.little = true,
            b'!' => {
                let a = self.num(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return err(format!("alignment {a} is not a power of 2"));
                }
                self.align = a;
            }
            _ => return arg_err(1, f, &format!("invalid format option '{}'", opt as char)),
        }
        Ok(())
    }
}

fn pack(lua: &Lua, args: &MultiValue) -> mlua::Result<mlua::String> {
    let fmt = check_bytes(args, 1, "pack")?;
    let mut f = Format::new(&fmt);
    let mut out: Vec<u8> = Vec::new();
    let mut arg = 2;
    while let Some(opt) = f.next() {
        let mut size = f.size(opt)?;
        let pad = f.to_align(out.len(), opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(args, arg, "pack")?;
                arg += 1;
                let mut v = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                let mut bytes = vec![0u8; size];
                for b in bytes.iter_mut() {
                    *b = v as u8;
                    v = v.checked_shr(8).unwrap_or(0);
                }
                if !f.little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'x' => out.push(0),
            b'f' => {
                let x = check_number(args, arg, "pack")? as f32;
                arg += 1;
                out.extend_from_slice(&if f.little {
                    x.to_le_bytes()
                } else {
                    x.to_be_bytes()
                });
            }
            b'd' => {
                let x = check_number(args, arg, "pack")?;
                arg += 1;
                out.extend_from_slice(&if f.little {
                    x.to_le_bytes()
                } else {
                    x.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = check_bytes(args, arg, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return arg_err(arg, "pack", "string too short");
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt, "pack")?,
        }
    }
    lua.create_string(&out)
}

fn unpack(lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
    let fmt = check_bytes(args, 1, "unpack")?;
    let data = check_bytes(args, 2, "unpack")?;
    let init = match args.get(2) {
        None | Some(Value::Nil) => 1.0,
        _ => check_number(args, 3, "unpack")?,
    };
    let mut pos = (init as i64 - 1) as usize;
    if pos > data.len() {
        return arg_err(3, "unpack", "initial position out of string");
    }
    let mut f = Format::new(&fmt);
    let mut out: Vec<Value> = Vec::new();
    while let Some(opt) = f.next() {
        let mut size = f.size(opt)?;
        pos += f.to_align(pos, opt, size);
        if pos > data.len() || size > data.len() - pos {
            return arg_err(2, "unpack", "data string too short");
        }
        let at = &data[pos..];
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let bytes = &at[..size];
                let mut l: u64 = 0;
                let mut fold = |b: u8| l = l.checked_shl(8).unwrap_or(0) | b as u64;
                if f.little {
                    bytes.iter().rev().for_each(|&b| fold(b));
                } else {
                    bytes.iter().for_each(|&b| fold(b));
                }
                let n = if opt.is_ascii_lowercase() {
                    let bits = (size * 8).min(64);
                    if bits > 0 && bits < 64 && l & (1 << (bits - 1)) != 0 {
                        l |= u64::MAX << bits;
                    }
                    l as i64 as f64
                } else {
                    l as f64
                };
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = at[..4].try_into().unwrap_or_default();
                let x = if f.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(x as f64));
            }
            b'd' => {
                let b: [u8; 8] = at[..8].try_into().unwrap_or_default();
                let x = if f.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(x));
            }
            b'c' => {
                if size == 0 {
                    let n = match out.pop() {
                        Some(Value::Number(n)) => n,
                        Some(Value::Integer(n)) => n as f64,
                        _ => return err("format 'c0' needs a previous size"),
                    };
                    size = n as usize;
                    if size > data.len() - pos {
                        return arg_err(2, "unpack", "data string too short");
                    }
                }
                out.push(Value::String(lua.create_string(&at[..size])?));
            }
            b's' => {
                let Some(end) = at.iter().position(|&c| c == 0) else {
                    return err("unfinished string in data");
                };
                size = end + 1;
                out.push(Value::String(lua.create_string(&at[..end])?));
            }
            _ => f.control(opt, "unpack")?,
        }
        pos += size;
    }
    out.push(Value::Integer(pos as i64 + 1));
    Ok(MultiValue::from_vec(out))
}

fn size(args: &MultiValue) -> mlua::Result<i64> {
    let fmt = check_bytes(args, 1, "size")?;
    let mut f = Format::new(&fmt);
    let mut pos = 0usize;
    while let Some(opt) = f.next() {
        let size = f.size(opt)?;
        pos += f.to_align(pos, opt, size);
        if opt == b's' {
            return arg_err(1, "size", "options 's' has no fixed size");
        } else if opt == b'c' && size == 0 {
            return arg_err(1, "size", "options 'c0' has no fixed size");
        }
        if !opt.is_ascii_alphanumeric() {
            f.control(opt, "size")?;
        }
        pos += size;
    }
    Ok(pos as i64)
}
