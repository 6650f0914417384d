//! The Lua 5.1 VM scripts run in, set up as Redis 7.0 sets up its own:
//! the base, table, string and math libraries, `bit` and `cjson`, the
//! `redis` table, `math.random` on Redis's rand48 (seeded once per VM: as
//! in Redis 7, scripts are not replayed, their effects are), `loadfile`,
//! `dofile` and `print` removed, and the global table read-only (a script
//! that assigns a global or reads an unknown one gets Redis's errors).

use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The VM and the hooks the runner needs.
pub struct Vm {
    pub lua: Lua,
    /// Runs a function under the error handler: (true, result) or
    /// (false, {error, line of user_script}).
    pub run: Function,
}

/// The registry slot of the function `redis.call` and `redis.pcall` send
/// commands to (set for the length of one script): it returns the reply as
/// a Lua value and whether that is an error (`{err=...}`).
pub const RAW_CALL: &str = "strata_raw_call";

/// `redis.call`: calls the raw function with the arguments; raises its
/// `{err=...}` as the error value (a table, as Redis raises it), from a C
/// function, so a `return redis.call(...)` keeps the script's frame (and
/// its line for the error message).
unsafe extern "C-unwind" fn redis_call(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the stack holds this call's arguments; only Lua's C API is
    // used here, and no Rust value lives across `lua_error`'s longjmp.
    unsafe {
        let n = ffi::lua_gettop(l);
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, c"strata_raw_call".as_ptr());
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, n, 2);
        if ffi::lua_toboolean(l, -1) != 0 {
            ffi::lua_pop(l, 1);
            ffi::lua_error(l);
        }
        ffi::lua_pop(l, 1);
    }
    1
}

/// `redis.pcall`: as `redis_call`, returning the `{err=...}` instead.
unsafe extern "C-unwind" fn redis_pcall(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as `redis_call`, without raising.
    unsafe {
        let n = ffi::lua_gettop(l);
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, c"strata_raw_call".as_ptr());
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, n, 2);
        ffi::lua_pop(l, 1);
    }
    1
}

/// The setup run once per VM: wrappers that need `debug` (hidden from
/// scripts afterwards), then the read-only globals.
const SETUP: &str = r#"
local dbg = debug
local function handler(e)
  local line = 0
  for level = 2, 64 do
    local info = dbg.getinfo(level, "Sl")
    if not info then break end
    if info.source == "@user_script" then
      line = info.currentline
      break
    end
  end
  return {e, line}
end
local function run(f) return xpcall(f, handler) end
-- As Redis 7: pcall gives a Redis error's message, not its table.
local rawpcall = pcall
local function fix(ok, ...)
  if not ok then
    local e = ...
    if type(e) == "table" and type(rawget(e, "err")) == "string" then
      return false, rawget(e, "err")
    end
    return false, e
  end
  return true, ...
end
pcall = function(...) return fix(rawpcall(...)) end
debug = nil
loadfile = nil
dofile = nil
print = nil
return run
"#;

/// Redis's rand48 (the same sequence on every platform).
struct Rand48(AtomicU64);

impl Rand48 {
    fn seed(&self, s: u32) {
        self.0.store(((s as u64) << 16) | 0x330E, Relaxed);
    }
    /// 31 random bits, as `redisLrand48`.
    fn next(&self) -> i32 {
        let x = (self
            .0
            .load(Relaxed)
            .wrapping_mul(0x5DEE_CE66D)
            .wrapping_add(0xB))
            & ((1 << 48) - 1);
        self.0.store(x, Relaxed);
        (x >> 17) as i32
    }
}

impl Vm {
    /// A VM whose scripts report to `busy` every 10,000 instructions and
    /// stop (with Redis's error) once it says so.
    pub fn new(busy: Arc<super::Busy>) -> mlua::Result<Vm> {
        // SAFETY: the debug library is loaded for the setup chunk only,
        // which captures it in a local and removes the global before any
        // script runs.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        let g = lua.globals();
        let redis = lua.create_table()?;
        redis.set(
            "sha1hex",
            lua.create_function(|_, s: mlua::String| Ok(super::sha1hex(&s.as_bytes())))?,
        )?;
        redis.set(
            "error_reply",
            lua.create_function(|lua, s: mlua::String| {
                let t = lua.create_table()?;
                let mut e = s.as_bytes().to_vec();
                if e.first() != Some(&b'-') {
                    e.insert(0, b'-');
                }
                t.set("err", lua.create_string(&e)?)?;
                Ok(t)
            })?,
        )?;
        redis.set(
            "status_reply",
            lua.create_function(|lua, s: mlua::String| {
                let t = lua.create_table()?;
                t.set("ok", s)?;
                Ok(t)
            })?,
        )?;
        for (i, name) in ["LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"]
            .iter()
            .enumerate()
        {
            redis.set(*name, i as i64)?;
        }
        redis.set(
            "log",
            lua.create_function(|_, args: MultiValue| {
                let msg: Vec<String> = args
                    .iter()
                    .skip(1)
                    .filter_map(|v| v.as_string().map(|s| s.to_string_lossy().to_string()))
                    .collect();
                tracing::info!(target: "script", "{}", msg.join(" "));
                Ok(())
            })?,
        )?;
        for (i, name) in [
            "REPL_NONE",
            "REPL_AOF",
            "REPL_SLAVE",
            "REPL_REPLICA",
            "REPL_ALL",
        ]
        .iter()
        .enumerate()
        {
            let v = [0, 1, 2, 2, 3][i];
            redis.set(*name, v)?;
        }
        // Effects are what the log records: replication modes change nothing.
        redis.set("set_repl", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
        redis.set(
            "replicate_commands",
            lua.create_function(|_, _: MultiValue| Ok(true))?,
        )?;
        // SAFETY: both are C functions over Lua's C API (above).
        redis.set("call", unsafe { lua.create_c_function(redis_call)? })?;
        redis.set("pcall", unsafe { lua.create_c_function(redis_pcall)? })?;
        g.set("redis", redis)?;
        g.set("bit", bit_library(&lua)?)?;
        g.set("cjson", super::json::library(&lua)?)?;
        let rand = Arc::new(Rand48(AtomicU64::new(0)));
        let r = rand.clone();
        let random = lua.create_function(move |_, args: MultiValue| {
            const MAX: f64 = i32::MAX as f64;
            let x = (r.next() as f64 % MAX) / MAX;
            let int = |v: &Value| -> mlua::Result<f64> {
                match v {
                    Value::Number(n) => Ok(n.floor()),
                    Value::Integer(n) => Ok(*n as f64),
                    _ => Err(mlua::Error::runtime(
                        "bad argument to 'random' (number expected)",
                    )),
                }
            };
            match args.len() {
                0 => Ok(x),
                1 => {
                    let u = int(&args[0])?;
                    if u < 1.0 {
                        return Err(mlua::Error::runtime(
                            "bad argument #1 to 'random' (interval is empty)",
                        ));
                    }
                    Ok((x * u).floor() + 1.0)
                }
                _ => {
                    let (l, u) = (int(&args[0])?, int(&args[1])?);
                    if l > u {
                        return Err(mlua::Error::runtime(
                            "bad argument #2 to 'random' (interval is empty)",
                        ));
                    }
                    Ok((x * (u - l + 1.0)).floor() + l)
                }
            }
        })?;
        let r = rand.clone();
        let randomseed = lua.create_function(move |_, s: f64| {
            r.seed(s as i64 as u32);
            Ok(())
        })?;
        let math: Table = g.get("math")?;
        math.set("random", random)?;
        math.set("randomseed", randomseed.clone())?;
        let run: Function = lua.load(SETUP).set_name("=strata").call(())?;
        // The globals are read-only from here on.
        lua.load(
            r#"setmetatable(_G, {
                __newindex = function() error("Attempt to modify a readonly table", 2) end,
                __index = function(_, n)
                  error("Script attempted to access nonexistent global variable '" .. tostring(n) .. "'", 2)
                end,
              })"#,
        )
        .set_name("=strata")
        .exec()?;
        rand.seed(rand::random());
        lua.set_hook(
            mlua::HookTriggers::new().every_nth_instruction(10_000),
            move |_, _| {
                if busy.check() {
                    return Err(mlua::Error::runtime(
                        "Script killed by user with SCRIPT KILL...",
                    ));
                }
                Ok(mlua::VmState::Continue)
            },
        );
        Ok(Vm { lua, run })
    }
}

/// LuaBitOp's `bit` library (32-bit operations on numbers), as Redis
/// bundles it.
fn bit_library(lua: &Lua) -> mlua::Result<Table> {
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
