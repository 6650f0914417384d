//! The Lua 5.1 VM scripts run in, set up as Redis 7.0 sets up its own:
//! the base, table, string and math libraries, `bit`, `cjson`,
//! `cmsgpack` and `struct` (`libs`), the
//! `redis` table, `math.random` on Redis's rand48 (seeded once per VM: as
//! in Redis 7, scripts are not replayed, their effects are), `loadfile`,
//! `dofile` and `print` removed, and the global table read-only (a script
//! that assigns a global or reads an unknown one gets Redis's errors).
//!
//! Functions (FUNCTION LOAD, FCALL) get a VM of their own, as in Redis:
//! a library's code runs in an environment whose lookups go to the load
//! API (only `redis.register_function`, `redis.log` and the constants)
//! while it loads, and to the whole globals once loaded, so the functions
//! it registered see what EVAL's scripts see (less KEYS and ARGV).

use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use parking_lot::Mutex;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// What a VM runs: EVAL's scripts, or the functions of libraries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Eval,
    Function,
}

/// The VM and the hooks the runner needs.
pub struct Vm {
    pub lua: Lua,
    /// Runs a function under the error handler: (true, result) or
    /// (false, {error, line of the user's chunk}).
    pub run: Function,
    /// The protocol `redis.call`'s replies come in (`redis.setresp`): 2
    /// or 3, reset to 2 by each script.
    pub resp: Arc<AtomicU8>,
    /// Past this instant the running code is stopped (FUNCTION LOAD's
    /// time limit).
    deadline: Arc<Mutex<Option<Instant>>>,
    /// Functions only: where library code loads (module doc).
    library: Option<LibraryEnv>,
    /// The read-only view of the globals a script runs in (its `_G`).
    pub env: Table,
}

/// The environment library code runs in, and what it registers.
struct LibraryEnv {
    env: Table,
    /// `env`'s metatable: its `__index` is the load API while a library
    /// loads and the globals afterwards.
    meta: Table,
    load_api: Table,
    globals: Table,
    /// What the library being loaded registered; None outside FUNCTION
    /// LOAD (a `register_function` kept by a function is refused then).
    registered: Arc<Mutex<Option<Vec<super::functions::Registered>>>>,
}

/// The registry slot of the function `redis.call` and `redis.pcall` send
/// commands to (set for the length of one script): it returns the reply as
/// a Lua value and whether that is an error (`{err=...}`).
pub const RAW_CALL: &str = "strata_raw_call";
/// Registry name of the running script's ACL check (`redis.acl_check_cmd`).
pub const ACL_CHECK: &str = "strata_acl_check";

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
    if info.source == "@user_script" or info.source == "@user_function" then
      line = info.currentline
      break
    end
  end
  return {e, line}
end
-- Scripts run without arguments, functions with (KEYS, ARGV).
local function run(f, ...)
  if select('#', ...) == 0 then return xpcall(f, handler) end
  local keys, argv = ...
  return xpcall(function() return f(keys, argv) end, handler)
end
-- As Redis 7: pcall gives a Redis error's message, not its table.
local rawpcall = pcall
local function fix(ok, ...)
  if not ok then
    local e = ...
    if type(e) == "table" and type(rawget(e, "err")) == "string" then
      return false, rawget(e, "err")
    end
    if type(e) == "userdata" then
      -- An error of a library written in Rust (cjson, cmsgpack ...): its
      -- message, a string, as the C libraries Redis bundles raise.
      local s = tostring(e):gsub("^runtime error: ", "")
      local cut = s:find("\nstack traceback:", 1, true)
      if cut then s = s:sub(1, cut - 1) end
      -- SCRIPT KILL / FUNCTION KILL is not the script's to catch.
      if s:find("Script killed by user with", 1, true) then error(e, 0) end
      return false, s
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
-- Redis's read-only tables: assignments and unknown names are errors.
local function refuse() error("Attempt to modify a readonly table", 2) end
local function protect(t)
  return setmetatable(t, {
    __newindex = refuse,
    __index = function(_, n)
      error("Script attempted to access nonexistent global variable '" .. tostring(n) .. "'", 2)
    end,
  })
end
-- Redis's Lua has read-only tables in its VM; here the tables scripts
-- reach by name (the libraries, _G) are empty views that read through
-- to them and refuse writes, and setmetatable / getmetatable / rawset
-- refuse to change a read-only table or its metatable.
local ro = setmetatable({}, { __mode = "k" })
local raw_setmetatable, raw_getmetatable, raw_rawset = setmetatable, getmetatable, rawset
local function view(t)
  local v = raw_setmetatable({}, { __index = t, __newindex = refuse })
  ro[v] = true
  return v
end
setmetatable = function(t, m)
  if ro[t] then error("Attempt to modify a readonly table", 0) end
  return raw_setmetatable(t, m)
end
-- A value that is not a table shares its type's metatable with every
-- script (a string's: its methods), so it is read-only too.
getmetatable = function(t)
  local m = raw_getmetatable(t)
  if (ro[t] or type(t) ~= "table") and type(m) == "table" then return view(m) end
  return m
end
rawset = function(t, k, v)
  if ro[t] then error("Attempt to modify a readonly table", 0) end
  return raw_rawset(t, k, v)
end
-- As Redis: no precompiled chunks.
local raw_loadstring = loadstring
loadstring = function(s, ...)
  if type(s) == "string" and s:byte(1) == 27 then
    return nil, "binary chunks are not allowed"
  end
  return raw_loadstring(s, ...)
end
load = nil
-- Seals the globals: libraries behind read-only views, the globals
-- protected, and the view scripts see as _G (and eval's environment).
local function seal(g)
  for _, n in ipairs({ "redis", "cjson", "cmsgpack", "bit", "struct", "string", "math", "table" }) do
    local t = rawget(g, n)
    if type(t) == "table" then raw_rawset(g, n, view(t)) end
  end
  -- A string's methods: the string library's read-only view, so that
  -- getmetatable('').__index cannot reach the library itself.
  raw_getmetatable("").__index = rawget(g, "string")
  protect(g)
  ro[g] = true
  local v = view(g)
  raw_rawset(g, "_G", v)
  return v
end
return run, protect, seal
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
    pub fn new(busy: Arc<super::Busy>, flavor: Flavor) -> mlua::Result<Vm> {
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
        let (redis, resp) = redis_table(&lua)?;
        g.set("redis", redis.clone())?;
        g.set("bit", super::libs::bit::library(&lua)?)?;
        g.set("cjson", super::libs::json::library(&lua)?)?;
        g.set("cmsgpack", super::libs::msgpack::library(&lua)?)?;
        g.set("struct", super::libs::structs::library(&lua)?)?;
        let rand = seed_math(&lua, &g)?;
        let (run, protect, seal): (Function, Function, Function) =
            lua.load(SETUP).set_name("=strata").call(())?;
        let library = match flavor {
            Flavor::Eval => None,
            Flavor::Function => Some(library_env(&lua, &redis, &protect)?),
        };
        // The globals are read-only from here on; scripts see them
        // through `env`.
        let env: Table = seal.call(g)?;
        rand.seed(rand::random());
        let deadline: Arc<Mutex<Option<Instant>>> = Arc::default();
        let limit = deadline.clone();
        lua.set_hook(
            mlua::HookTriggers::new().every_nth_instruction(10_000),
            move |_, _| {
                if busy.check() {
                    return Err(mlua::Error::runtime(
                        "Script killed by user with SCRIPT KILL...",
                    ));
                }
                if limit.lock().is_some_and(|d| Instant::now() >= d) {
                    return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
                }
                Ok(mlua::VmState::Continue)
            },
        );
        Ok(Vm {
            lua,
            env,
            run,
            resp,
            deadline,
            library,
        })
    }

    /// Runs a library's code (FUNCTION LOAD): what it registered, or the
    /// error as FUNCTION LOAD reports it. Functions VMs only. The shebang
    /// line is left out but for its line feed (line numbers stay the
    /// user's).
    pub fn load_library(&self, code: &[u8]) -> Result<Vec<super::functions::Registered>, String> {
        let Some(lib) = &self.library else {
            return Err("ERR not a functions VM".into());
        };
        let body = &code[code.iter().position(|&c| c == b'\n').unwrap_or(code.len())..];
        let f = self
            .lua
            .load(body)
            .set_name("@user_function")
            .set_environment(lib.env.clone())
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", compile_message(&e)))?;
        *lib.registered.lock() = Some(Vec::new());
        let _ = lib.meta.raw_set("__index", lib.load_api.clone());
        *self.deadline.lock() = Some(Instant::now() + std::time::Duration::from_millis(500));
        let r: mlua::Result<MultiValue> = self.run.call(f);
        *self.deadline.lock() = None;
        let _ = lib.meta.raw_set("__index", lib.globals.clone());
        let registered = lib.registered.lock().take().unwrap_or_default();
        let r = r.map_err(|e| format!("ERR Error registering functions: ERR {e}"))?;
        let mut r = r.into_iter();
        if !matches!(r.next(), Some(Value::Boolean(true))) {
            let (msg, _) = super::convert::error_parts(&r.next().unwrap_or(Value::Nil));
            return Err(format!("ERR Error registering functions: {msg}"));
        }
        Ok(registered)
    }
}

/// The `redis` table scripts see: its reply helpers, log levels,
/// replication no-ops, `acl_check_cmd`, `call` and `pcall` (C functions),
/// `setresp` (the RESP version `redis.call` replies in, returned) and the
/// version.
fn redis_table(lua: &Lua) -> mlua::Result<(Table, Arc<AtomicU8>)> {
    let redis = lua.create_table()?;
    redis.set(
        "sha1hex",
        lua.create_function(|_, args: mlua::MultiValue| {
            // As `luaRedisSha1hexCommand`: one argument, a string or a
            // number (converted as Lua converts it).
            if args.len() != 1 {
                return Err(mlua::Error::RuntimeError(
                    "wrong number of arguments".into(),
                ));
            }
            // (A table or nil hashes as the empty string, as
            // `lua_tolstring`'s NULL does.)
            let b = args
                .iter()
                .next()
                .and_then(super::convert::lua_string)
                .unwrap_or_default();
            Ok(super::sha1hex(&b))
        })?,
    )?;
    redis.set(
        "error_reply",
        lua.create_function(|lua, s: mlua::String| {
            // As Redis 7.0 (`luaPushErrorBuff`): "CODE msg" with the
            // leading '-' left out; a text without a space before its
            // message gets the code ERR ("" becomes "ERR ").
            let raw = s.as_bytes();
            let body = raw.strip_prefix(b"-").unwrap_or(&raw);
            let (code, msg) = match body.iter().position(|&c| c == b' ') {
                Some(i) => (&body[..i], &body[i + 1..]),
                None => (&b"ERR"[..], body),
            };
            let end = msg
                .iter()
                .rposition(|&c| c != b'\r' && c != b'\n')
                .map_or(0, |i| i + 1);
            let start = msg[..end]
                .iter()
                .position(|&c| c != b'\r' && c != b'\n')
                .unwrap_or(end);
            let e = [code, b" ", &msg[start..end]].concat();
            let t = lua.create_table()?;
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
    // `redis.acl_check_cmd`: whether the caller's user may run a
    // command (the check itself is the run's: `run.rs`).
    redis.set(
        "acl_check_cmd",
        lua.create_function(|lua, args: MultiValue| {
            let f: Option<mlua::Function> = lua.named_registry_value(ACL_CHECK)?;
            match f {
                Some(f) => f.call::<bool>(args),
                None => Err(mlua::Error::runtime(
                    "redis.acl_check_cmd can only be called inside a script invocation",
                )),
            }
        })?,
    )?;
    // SAFETY: these are C functions over Lua's C API (above).
    lua.globals().set("unpack", unsafe {
        lua.create_c_function(super::libs::base::unpack)?
    })?;
    redis.set("call", unsafe { lua.create_c_function(redis_call)? })?;
    redis.set("pcall", unsafe { lua.create_c_function(redis_pcall)? })?;
    let resp = Arc::new(AtomicU8::new(2));
    let r = resp.clone();
    redis.set(
        "setresp",
        lua.create_function(move |_, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime(
                    "redis.setresp() requires one argument.",
                ));
            }
            match &args[0] {
                Value::Integer(2) => r.store(2, Relaxed),
                Value::Integer(3) => r.store(3, Relaxed),
                Value::Number(n) if *n == 2.0 || *n == 3.0 => r.store(*n as u8, Relaxed),
                _ => return Err(mlua::Error::runtime("RESP version must be 2 or 3.")),
            }
            Ok(())
        })?,
    )?;
    let version = crate::base::process::REDIS_VERSION;
    let num = version
        .split('.')
        .fold(0i64, |n, p| (n << 8) | p.parse::<i64>().unwrap_or(0));
    redis.set("REDIS_VERSION", version)?;
    redis.set("REDIS_VERSION_NUM", num)?;
    Ok((redis, resp))
}

/// `math.random` and `math.randomseed` as Redis's (rand48, seeded per
/// script); the generator, to seed it.
fn seed_math(lua: &Lua, g: &Table) -> mlua::Result<Arc<Rand48>> {
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
    Ok(rand)
}

/// The message of a compile error, as Lua words it.
pub fn compile_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The environment of library code (`LibraryEnv`): a read-only table
/// looking names up in the load API (`redis` with `register_function`,
/// `log` and the constants) or, once loaded, in the globals.
fn library_env(lua: &Lua, redis: &Table, protect: &Function) -> mlua::Result<LibraryEnv> {
    let registered: Arc<Mutex<Option<Vec<super::functions::Registered>>>> = Arc::default();
    let load_redis = lua.create_table()?;
    for name in [
        "log",
        "LOG_DEBUG",
        "LOG_VERBOSE",
        "LOG_NOTICE",
        "LOG_WARNING",
        "REDIS_VERSION",
        "REDIS_VERSION_NUM",
    ] {
        load_redis.raw_set(name, redis.raw_get::<Value>(name)?)?;
    }
    let list = registered.clone();
    load_redis.raw_set(
        "register_function",
        lua.create_function(move |_, args: MultiValue| {
            let mut list = list.lock();
            let Some(list) = list.as_mut() else {
                return Err(mlua::Error::runtime(
                    "redis.register_function can only be called on FUNCTION LOAD command",
                ));
            };
            let r = super::functions::register_args(&args).map_err(mlua::Error::runtime)?;
            if list.iter().any(|x| x.name == r.name) {
                return Err(mlua::Error::runtime(
                    "Function already exists in the library",
                ));
            }
            list.push(r);
            Ok(())
        })?,
    )?;
    protect.call::<()>(load_redis.clone())?;
    let load_api = lua.create_table()?;
    load_api.raw_set("redis", load_redis)?;
    protect.call::<()>(load_api.clone())?;
    let meta: Table = lua
        .load(
            r#"return { __newindex = function() error("Attempt to modify a readonly table", 2) end }"#,
        )
        .set_name("=strata")
        .call(())?;
    let globals = lua.globals();
    meta.raw_set("__index", globals.clone())?;
    let env = lua.create_table()?;
    env.set_metatable(Some(meta.clone()));
    Ok(LibraryEnv {
        env,
        meta,
        load_api,
        globals,
        registered,
    })
}
