//! Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and the script cache
//! (SCRIPT LOAD / EXISTS / FLUSH), and functions (FCALL, FCALL_RO over
//! the libraries of `functions`), on Lua 5.1 as Redis 7.0 runs them.
//!
//! A script runs like a transaction (`crate::session::transaction`): its declared
//! keys are brought into RAM first, holding nothing; then it runs on the
//! one script thread (never on a runtime worker, so a long script leaves
//! the workers free to answer BUSY and SCRIPT KILL), in one exclusive
//! section holding every shard (a script may touch keys it did not
//! declare), so no client sees its effects half done. Inside EXEC a script
//! runs in the transaction's section, on its worker. `redis.call`
//! runs a command through `dispatch::execute` on the script's own client
//! state (its database, RESP2) and turns the reply into a Lua value
//! (`convert`); a read from flash inside waits on this thread. The
//! commands' effects are journaled as any command's are, so recovery
//! replays effects, not scripts. Blocking commands and SUBSCRIBE are
//! refused (`noscript`), as in Redis; clients blocked on keys a script
//! filled are served after it.
//!
//! Errors read as Redis's: `<message> script: <sha>, on @user_script:<line>.`
//! (`script: <function>, on @user_function:<line>.` for functions) for an
//! error the script raised (a failed `redis.call` included), the message
//! alone for a `{err=...}` the script returned.
//!
//! Lock order: shards (the section), then `Scripts::inner`, then the
//! engine's function record (a leaf).

mod convert;
pub mod functions;
mod json;
mod vm;

pub use vm::FLAGS;

use crate::command::{CommandSpec, Deferred, Outcome};
use crate::commands::table;
use crate::connection::ConnState;
use crate::dispatch::execute;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use mlua::{Function, MultiValue, Value};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use strata_protocol::{parse_frame, Frame, Limits, Parsed, Version};

/// The VM and the scripts it compiled, by SHA-1.
pub struct Scripts {
    inner: Mutex<Cache>,
    /// The thread EVAL's scripts run on.
    thread: Mutex<std::sync::mpsc::Sender<Job>>,
    /// The script running now, if any (busy scripts, SCRIPT KILL).
    pub busy: Arc<Busy>,
    pub counts: Arc<Counts>,
}

/// The reply other clients get while a script runs past the threshold.
pub const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// The same while a function runs.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// A script that runs for long: other clients wait for it up to
/// `busy-reply-threshold`, then get `-BUSY`; SCRIPT KILL (FUNCTION KILL
/// for functions) stops it if it wrote nothing (the VM's hook checks
/// `kill` every 10,000 instructions).
#[derive(Default)]
pub struct Busy {
    running: Mutex<Option<Running>>,
    pub kill: AtomicBool,
    wrote: AtomicBool,
    pub threshold_ms: AtomicU64,
    done: tokio::sync::Notify,
}

/// The script running now (FUNCTION STATS).
struct Running {
    started: std::time::Instant,
    /// The function's name, or the script's SHA-1.
    name: String,
    command: Vec<Bytes>,
    function: bool,
}

impl Busy {
    pub fn running(&self) -> bool {
        self.running.lock().is_some()
    }

    /// What other clients are told while the running script is busy.
    pub fn message(&self) -> &'static str {
        match &*self.running.lock() {
            Some(r) if r.function => BUSY_FUNCTION,
            _ => BUSY,
        }
    }

    /// Waits while a script runs; false once it ran past the threshold
    /// (the caller answers BUSY).
    pub async fn wait(&self) -> bool {
        loop {
            let notified = self.done.notified();
            let Some(started) = self.running.lock().as_ref().map(|r| r.started) else {
                return true;
            };
            let limit = std::time::Duration::from_millis(self.threshold_ms.load(Relaxed));
            let left = limit.saturating_sub(started.elapsed());
            if left.is_zero() {
                return false;
            }
            let _ = tokio::time::timeout(left, notified).await;
        }
    }

    fn begin(&self, call: &Call) {
        self.kill.store(false, Relaxed);
        self.wrote.store(false, Relaxed);
        *self.running.lock() = Some(Running {
            started: std::time::Instant::now(),
            name: match call.kind {
                Kind::Eval { by_sha: false } => sha1hex(&call.script),
                _ => String::from_utf8_lossy(&call.script).to_string(),
            },
            command: call.command.clone(),
            function: call.kind == Kind::Function,
        });
    }

    /// Called by the VM's hook: whether to stop the script (SCRIPT KILL).
    pub(crate) fn check(&self) -> bool {
        self.kill.load(Relaxed)
    }

    fn end(&self) {
        *self.running.lock() = None;
        self.kill.store(false, Relaxed);
        self.done.notify_waiters();
    }

    /// SCRIPT KILL (`function` false) or FUNCTION KILL (true).
    pub fn kill(&self, function: bool) -> Result<(), &'static str> {
        let running = self.running.lock();
        let Some(r) = &*running else {
            return Err("NOTBUSY No scripts in execution right now.");
        };
        if self.wrote.load(Relaxed) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        match (function, r.function) {
            (false, true) => return Err(BUSY_FUNCTION),
            (true, false) => return Err(BUSY),
            _ => {}
        }
        self.kill.store(true, Relaxed);
        Ok(())
    }

    /// FUNCTION STATS' `running_script`: name, command, milliseconds.
    pub fn stats(&self) -> Option<(String, Vec<Bytes>, u64)> {
        self.running.lock().as_ref().map(|r| {
            (
                r.name.clone(),
                r.command.clone(),
                r.started.elapsed().as_millis() as u64,
            )
        })
    }
}

/// Whether a command runs while a script is busy (SCRIPT KILL, FUNCTION
/// KILL and STATS, SHUTDOWN, and those flagged `allow_busy`, as in Redis).
pub fn allowed_while_busy(spec: Option<&CommandSpec>, args: &[Bytes]) -> bool {
    let Some(spec) = spec else { return true };
    let sub = |s: &str| {
        args.get(1)
            .is_some_and(|a| a.eq_ignore_ascii_case(s.as_bytes()))
    };
    spec.has_flag("allow_busy")
        || spec.name == "shutdown"
        || (spec.name == "script" && sub("kill"))
        || (spec.name == "function" && (sub("kill") || sub("stats")))
}

struct Cache {
    vm: vm::Vm,
    /// EVAL's scripts by SHA-1, with their shebang flags (None: no
    /// shebang, Redis's compatibility mode).
    by_sha: HashMap<String, (Function, Option<u8>)>,
    /// The functions' VM and libraries.
    fvm: vm::Vm,
    libraries: functions::Libraries,
    /// The libraries the engine recovered are loaded (on first use:
    /// FUNCTION and FCALL wait for the end of recovery).
    restored: bool,
    counts: Arc<Counts>,
}

/// Libraries and functions loaded (FUNCTION STATS reads them while a
/// script holds the cache).
#[derive(Default)]
pub struct Counts {
    pub libraries: AtomicUsize,
    pub functions: AtomicUsize,
}

impl Counts {
    fn set(&self, libs: &functions::Libraries) {
        self.libraries.store(libs.libs.len(), Relaxed);
        self.functions.store(libs.function_count(), Relaxed);
    }
}

impl Cache {
    fn libraries(&mut self, engine: &strata_engine::Engine) -> &mut functions::Libraries {
        if !self.restored {
            self.restored = true;
            if let Some(blob) = engine.functions() {
                self.libraries.restore_all(&self.fvm, &blob);
                self.counts.set(&self.libraries);
            }
        }
        &mut self.libraries
    }
}

/// SHA-1 of `b`, lower-case hex (script names, `redis.sha1hex`).
pub fn sha1hex(b: &[u8]) -> String {
    use sha1::Digest;
    let d = sha1::Sha1::digest(b);
    d.iter().map(|x| format!("{x:02x}")).collect()
}

impl Default for Scripts {
    fn default() -> Scripts {
        let busy = Arc::new(Busy::default());
        busy.threshold_ms.store(5000, Relaxed);
        let new = |flavor| vm::Vm::new(busy.clone(), flavor).expect("the Lua VM starts");
        let counts = Arc::<Counts>::default();
        Scripts {
            inner: Mutex::new(Cache {
                vm: new(vm::Flavor::Eval),
                by_sha: HashMap::new(),
                fvm: new(vm::Flavor::Function),
                libraries: functions::Libraries::default(),
                restored: false,
                counts: counts.clone(),
            }),
            counts,
            busy,
            thread: Mutex::new(script_thread()),
        }
    }
}

impl Scripts {
    /// SCRIPT LOAD: compiles and caches `body`; its SHA-1, or the compile
    /// error as Redis words it.
    pub fn load(&self, body: &[u8]) -> Result<String, String> {
        let mut c = self.inner.lock();
        compile(&mut c, body).map(|(sha, _, _)| sha)
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        self.inner.lock().by_sha.contains_key(&sha)
    }

    /// SCRIPT FLUSH: forgets every script (and starts a fresh VM).
    pub fn flush(&self) {
        let mut c = self.inner.lock();
        c.by_sha.clear();
        if let Ok(vm) = vm::Vm::new(self.busy.clone(), vm::Flavor::Eval) {
            c.vm = vm;
        }
    }

    /// Runs `f` on the libraries (FUNCTION's subcommands); when it
    /// changed them (`Ok(true)`), the whole set goes to the engine to be
    /// kept (`functions` invariant 2).
    pub fn with_libraries<T>(
        &self,
        engine: &strata_engine::Engine,
        f: impl FnOnce(&mut functions::Libraries, &vm::Vm) -> Result<(T, bool), String>,
    ) -> Result<T, String> {
        let mut c = self.inner.lock();
        let c = &mut *c;
        c.libraries(engine);
        let (out, changed) = f(&mut c.libraries, &c.fvm)?;
        c.counts.set(&c.libraries);
        if changed {
            engine.set_functions(Bytes::from(c.libraries.dump()));
        }
        Ok(out)
    }

    /// FUNCTION FLUSH: no libraries, and a fresh functions VM.
    pub fn flush_functions(&self, engine: &strata_engine::Engine) {
        let mut c = self.inner.lock();
        c.restored = true;
        c.libraries = functions::Libraries::default();
        c.counts.set(&c.libraries);
        if let Ok(vm) = vm::Vm::new(self.busy.clone(), vm::Flavor::Function) {
            c.fvm = vm;
        }
        engine.set_functions(Bytes::from(c.libraries.dump()));
    }
}

/// The flags of an EVAL script's shebang line (`#!lua flags=...`) and the
/// line's length (the code after it keeps its line feed, so line numbers
/// stay the user's); None without a shebang.
fn shebang(body: &[u8]) -> Result<Option<(usize, u8)>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = 0u8;
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for f in list.split(',').filter(|f| !f.is_empty()) {
            let bit = vm::FLAGS
                .iter()
                .position(|x| *x == f)
                .ok_or_else(|| format!("ERR Unexpected flag in script shebang: {f}"))?;
            flags |= 1 << bit;
        }
    }
    Ok(Some((end, flags)))
}

fn compile(c: &mut Cache, body: &[u8]) -> Result<(String, Function, Option<u8>), String> {
    let sha = sha1hex(body);
    if let Some((f, flags)) = c.by_sha.get(&sha) {
        return Ok((sha, f.clone(), *flags));
    }
    let header = shebang(body)?;
    let code = &body[header.map_or(0, |(len, _)| len)..];
    let f =
        c.vm.lua
            .load(code)
            .set_name("@user_script")
            .into_function()
            .map_err(|e| {
                format!(
                    "ERR Error compiling script (new function): {}",
                    vm::compile_message(&e)
                )
            })?;
    let flags = header.map(|(_, f)| f);
    c.by_sha.insert(sha.clone(), (f.clone(), flags));
    Ok((sha, f, flags))
}

/// What a call runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// EVAL (the body) or EVALSHA (its SHA-1).
    Eval { by_sha: bool },
    /// FCALL: a function by name.
    Function,
}

/// One EVAL- or FCALL-family call, parsed.
struct Call {
    kind: Kind,
    /// The body, the SHA-1 or the function's name.
    script: Bytes,
    read_only: bool,
    keys: Vec<Bytes>,
    argv: Vec<Bytes>,
    /// The whole command (FUNCTION STATS shows it).
    command: Vec<Bytes>,
}

fn parse(args: &[Bytes]) -> Result<Call, &'static str> {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let n: i64 = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(if name.starts_with("fcall") {
            "ERR Bad number of keys provided"
        } else {
            "ERR value is not an integer or out of range"
        })?;
    if n < 0 {
        return Err("ERR Number of keys can't be negative");
    }
    if n as usize > args.len() - 3 {
        return Err("ERR Number of keys can't be greater than number of args");
    }
    let n = n as usize;
    Ok(Call {
        kind: if name.starts_with("fcall") {
            Kind::Function
        } else {
            Kind::Eval {
                by_sha: name.starts_with("evalsha"),
            }
        },
        script: args[1].clone(),
        read_only: name.ends_with("_ro"),
        keys: args[3..3 + n].to_vec(),
        argv: args[3 + n..].to_vec(),
        command: args.to_vec(),
    })
}

/// EVAL, FCALL and friends from a connection: the declared keys are
/// warmed, then the script runs in an exclusive section (module doc).
pub async fn eval(shared: &Arc<Shared>, conn: &mut ConnState, args: &[Bytes], out: &mut BytesMut) {
    let call = match parse(args) {
        Ok(c) => c,
        Err(e) => return crate::reply::error(out, e),
    };
    super::warm(shared, conn.db, call.keys.clone()).await;
    let deferred = Deferred::default();
    // The script runs on the script thread, never on a worker: however
    // long it runs, the workers answer other clients (BUSY, SCRIPT KILL).
    let (db, handle, version) = (conn.db, conn.handle.clone(), conn.version);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = {
        let (shared, deferred) = (shared.clone(), deferred.clone());
        Box::new(move || {
            let mut reply = BytesMut::new();
            shared.scripts.busy.begin(&call);
            shared
                .engine
                .exclusive(|| run(&shared, db, &handle, version, &call, &deferred, &mut reply));
            shared.scripts.busy.end();
            let _ = tx.send(reply);
        })
    };
    if shared.scripts.thread.lock().send(job).is_err() {
        return crate::reply::error(out, "ERR the script thread is gone");
    }
    match rx.await {
        Ok(reply) => out.extend_from_slice(&reply),
        Err(_) => crate::reply::error(out, "ERR the script ended without a reply"),
    }
    for (db, keys) in std::mem::take(&mut *deferred.lock()) {
        shared.blocking.serve(&shared.engine, db, keys);
    }
}

/// Work for the script thread.
type Job = Box<dyn FnOnce() + Send>;

/// Starts the thread that runs EVAL's scripts, one after another (they
/// hold every shard, so they could not run together anyway).
fn script_thread() -> std::sync::mpsc::Sender<Job> {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("strata-script".into())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                job();
            }
        })
        .expect("spawn the script thread");
    tx
}

/// EVAL, FCALL and friends inside EXEC (already in a section; blocked
/// clients are served after the transaction).
pub fn eval_now(shared: &Arc<Shared>, conn: &mut ConnState, args: &[Bytes], out: &mut BytesMut) {
    match parse(args) {
        Ok(call) => {
            let deferred = conn.exec_ready.clone().unwrap_or_default();
            shared.scripts.busy.begin(&call);
            run(
                shared,
                conn.db,
                &conn.handle,
                conn.version,
                &call,
                &deferred,
                out,
            );
            shared.scripts.busy.end();
        }
        Err(e) => crate::reply::error(out, e),
    }
}

const WRITE_FLAG_RO: &str = "ERR Can not execute a script with write flag using *_ro command.";

/// Runs one script or function (its section held) and writes its reply
/// in the caller's protocol `version`.
fn run(
    shared: &Arc<Shared>,
    db: usize,
    handle: &Arc<crate::clients::ClientHandle>,
    version: Version,
    call: &Call,
    deferred: &Deferred,
    out: &mut BytesMut,
) {
    let mut cache = shared.scripts.inner.lock();
    let cache = &mut *cache;
    // The code, its name in errors, whether it may write.
    let (name, f, flags) = match call.kind {
        Kind::Eval { by_sha: true } => {
            let sha = String::from_utf8_lossy(&call.script).to_ascii_lowercase();
            match cache.by_sha.get(&sha) {
                Some((f, flags)) => (sha, f.clone(), *flags),
                None => {
                    return crate::reply::error(
                        out,
                        "NOSCRIPT No matching script. Please use EVAL.",
                    )
                }
            }
        }
        Kind::Eval { by_sha: false } => match compile(cache, &call.script) {
            Ok(x) => x,
            Err(e) => return crate::reply::error(out, &e),
        },
        Kind::Function => {
            let name = String::from_utf8_lossy(&call.script).to_string();
            match cache.libraries(&shared.engine).function(&name) {
                Some(r) => (name, r.callback.clone(), Some(r.flags)),
                None => return crate::reply::error(out, "ERR Function not found"),
            }
        }
    };
    let no_writes = flags.is_some_and(|f| f & vm::NO_WRITES != 0);
    if call.read_only && flags.is_some() && !no_writes {
        return crate::reply::error(out, WRITE_FLAG_RO);
    }
    let read_only = call.read_only || no_writes;
    let function = call.kind == Kind::Function;
    let vm = if function { &cache.fvm } else { &cache.vm };
    vm.resp.store(2, Relaxed);
    // The script's own client: the caller's database.
    let mut me = ConnState {
        db,
        version: Version::Resp2,
        handle: handle.clone(),
        authenticated: true,
        multi: None,
        pubsub: None,
        watched: strata_engine::Watched::new(&shared.engine),
        exec_ready: Some(deferred.clone()),
    };
    let result = (|| -> mlua::Result<(bool, Value)> {
        let lua = &vm.lua;
        let strings = |v: &[Bytes]| -> mlua::Result<mlua::Table> {
            lua.create_sequence_from(
                v.iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )
        };
        let (keys, argv) = (strings(&call.keys)?, strings(&call.argv)?);
        if !function {
            let g = lua.globals();
            g.raw_set("KEYS", keys.clone())?;
            g.raw_set("ARGV", argv.clone())?;
        }
        lua.scope(|scope| {
            let raw = scope.create_function_mut(|lua, args: MultiValue| {
                me.version = if vm.resp.load(Relaxed) == 3 {
                    Version::Resp3
                } else {
                    Version::Resp2
                };
                command(lua, shared, &mut me, &args, read_only)
            })?;
            lua.set_named_registry_value(vm::RAW_CALL, raw)?;
            let r: mlua::Result<MultiValue> = if function {
                vm.run.call((f.clone(), keys, argv))
            } else {
                vm.run.call(f.clone())
            };
            lua.unset_named_registry_value(vm::RAW_CALL)?;
            let mut r = r?.into_iter();
            let ok = matches!(r.next(), Some(Value::Boolean(true)));
            Ok((ok, r.next().unwrap_or(Value::Nil)))
        })
    })();
    let chunk = if function {
        "user_function"
    } else {
        "user_script"
    };
    match result {
        Ok((true, v)) => {
            let script = if vm.resp.load(Relaxed) == 3 {
                Version::Resp3
            } else {
                Version::Resp2
            };
            let p = convert::Protocols {
                caller: version,
                script,
            };
            convert::lua_to_reply(&v, out, 0, p)
        }
        Ok((false, v)) => {
            let (msg, line) = error_parts(&v);
            convert::error_line(
                out,
                format!("{msg} script: {name}, on @{chunk}:{line}.").as_bytes(),
            );
        }
        Err(e) => convert::error_line(out, format!("ERR {e}").as_bytes()),
    }
}

/// An error the code raised, `{error, line}` from the runner's handler:
/// the message as Redis words it (with its code) and the line.
fn error_parts(v: &Value) -> (String, i64) {
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

/// `redis.call` / `redis.pcall`: runs one command for the script; its
/// reply as a Lua value, an error as `{err=...}` (which `redis.call`
/// raises).
fn command(
    lua: &mlua::Lua,
    shared: &Arc<Shared>,
    me: &mut ConnState,
    args: &MultiValue,
    read_only: bool,
) -> mlua::Result<(Value, bool)> {
    let err = |msg: &[u8]| -> mlua::Result<(Value, bool)> {
        let t = lua.create_table()?;
        t.raw_set("err", lua.create_string(msg)?)?;
        Ok((Value::Table(t), true))
    };
    if args.is_empty() {
        return err(b"ERR Please specify at least one argument for this redis lib call");
    }
    let mut argv = Vec::with_capacity(args.len());
    for a in args {
        match convert::arg_bytes(a) {
            Some(b) => argv.push(Bytes::from(b)),
            None => return err(b"ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    let Some(spec) = table::lookup(&argv[0]) else {
        return err(b"ERR Unknown Redis command called from script");
    };
    if !spec.arity_ok(argv.len()) {
        return err(b"ERR Wrong number of args calling Redis command from script");
    }
    if spec.has_flag("noscript") {
        return err(b"ERR This Redis command is not allowed from script");
    }
    if read_only && spec.has_flag("write") {
        return err(b"ERR Write commands are not allowed from read-only scripts.");
    }
    if spec.has_flag("write") {
        shared.scripts.busy.wrote.store(true, Relaxed);
    }
    let reply = run_command(shared, me, spec, &argv);
    match parse_frame(&reply, &Limits::default()) {
        Ok(Parsed::Complete {
            value: Frame::Error(e),
            ..
        }) => err(&e),
        Ok(Parsed::Complete { value, .. }) => {
            Ok((convert::frame_to_lua(lua, &value, me.version)?, false))
        }
        _ => err(b"ERR the command's reply could not be read"),
    }
}

fn run_command(
    shared: &Arc<Shared>,
    me: &mut ConnState,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> BytesMut {
    let mut out = BytesMut::new();
    match execute(shared, me, Some(spec), argv, &mut out) {
        Outcome::Pending { reply, .. } => futures::executor::block_on(reply),
        Outcome::Done | Outcome::Close | Outcome::Exec | Outcome::Eval => out,
    }
}
