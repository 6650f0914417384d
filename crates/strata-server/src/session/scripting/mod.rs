//! Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and the script cache
//! (SCRIPT LOAD / EXISTS / FLUSH), on Lua 5.1 as Redis 7.0 runs them.
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
//! for an error the script raised (a failed `redis.call` included), the
//! message alone for a `{err=...}` the script returned.

mod convert;
mod json;
mod vm;

use crate::command::{CommandSpec, Deferred, Outcome};
use crate::commands::table;
use crate::connection::ConnState;
use crate::dispatch::execute;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use mlua::{Function, MultiValue, Value};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use strata_protocol::{parse_frame, Frame, Limits, Parsed, Version};

/// The VM and the scripts it compiled, by SHA-1.
pub struct Scripts {
    inner: Mutex<Cache>,
    /// The thread EVAL's scripts run on.
    thread: Mutex<std::sync::mpsc::Sender<Job>>,
    /// The script running now, if any (busy scripts, SCRIPT KILL).
    pub busy: Arc<Busy>,
}

/// The reply other clients get while a script runs past the threshold.
pub const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// A script that runs for long: other clients wait for it up to
/// `busy-reply-threshold`, then get `-BUSY`; SCRIPT KILL stops it if it
/// wrote nothing (the VM's hook checks `kill` every 10,000 instructions).
#[derive(Default)]
pub struct Busy {
    started: Mutex<Option<std::time::Instant>>,
    pub kill: AtomicBool,
    wrote: AtomicBool,
    pub threshold_ms: AtomicU64,
    done: tokio::sync::Notify,
}

impl Busy {
    pub fn running(&self) -> bool {
        self.started.lock().is_some()
    }

    /// Waits while a script runs; false once it ran past the threshold
    /// (the caller answers BUSY).
    pub async fn wait(&self) -> bool {
        loop {
            let notified = self.done.notified();
            let Some(started) = *self.started.lock() else {
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

    fn begin(&self) {
        self.kill.store(false, Relaxed);
        self.wrote.store(false, Relaxed);
        *self.started.lock() = Some(std::time::Instant::now());
    }

    /// Called by the VM's hook: whether to stop the script (SCRIPT KILL).
    pub(crate) fn check(&self) -> bool {
        self.kill.load(Relaxed)
    }

    fn end(&self) {
        *self.started.lock() = None;
        self.kill.store(false, Relaxed);
        self.done.notify_waiters();
    }

    /// SCRIPT KILL.
    pub fn kill(&self) -> Result<(), &'static str> {
        if self.started.lock().is_none() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Relaxed) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        self.kill.store(true, Relaxed);
        Ok(())
    }
}

/// Whether a command runs while a script is busy (SCRIPT KILL, SHUTDOWN,
/// and those flagged `allow_busy`, as in Redis).
pub fn allowed_while_busy(spec: Option<&CommandSpec>, args: &[Bytes]) -> bool {
    let Some(spec) = spec else { return true };
    spec.has_flag("allow_busy")
        || spec.name == "shutdown"
        || (spec.name == "script" && args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"kill")))
}

struct Cache {
    vm: vm::Vm,
    by_sha: HashMap<String, Function>,
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
        Scripts {
            inner: Mutex::new(Cache {
                vm: vm::Vm::new(busy.clone()).expect("the Lua VM starts"),
                by_sha: HashMap::new(),
            }),
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
        compile(&mut c, body).map(|(sha, _)| sha)
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        self.inner.lock().by_sha.contains_key(&sha)
    }

    /// SCRIPT FLUSH: forgets every script (and starts a fresh VM).
    pub fn flush(&self) {
        let mut c = self.inner.lock();
        c.by_sha.clear();
        if let Ok(vm) = vm::Vm::new(self.busy.clone()) {
            c.vm = vm;
        }
    }
}

fn compile(c: &mut Cache, body: &[u8]) -> Result<(String, Function), String> {
    let sha = sha1hex(body);
    if let Some(f) = c.by_sha.get(&sha) {
        return Ok((sha, f.clone()));
    }
    let f =
        c.vm.lua
            .load(body)
            .set_name("@user_script")
            .into_function()
            .map_err(|e| {
                let msg = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                format!("ERR Error compiling script (new function): {msg}")
            })?;
    c.by_sha.insert(sha.clone(), f.clone());
    Ok((sha, f))
}

/// One EVAL-family call, parsed.
struct Call {
    /// The body (EVAL) or the SHA-1 (EVALSHA).
    script: Bytes,
    by_sha: bool,
    read_only: bool,
    keys: Vec<Bytes>,
    argv: Vec<Bytes>,
}

fn parse(args: &[Bytes]) -> Result<Call, &'static str> {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let n: i64 = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or("ERR value is not an integer or out of range")?;
    if n < 0 {
        return Err("ERR Number of keys can't be negative");
    }
    if n as usize > args.len() - 3 {
        return Err("ERR Number of keys can't be greater than number of args");
    }
    let n = n as usize;
    Ok(Call {
        script: args[1].clone(),
        by_sha: name.starts_with("evalsha"),
        read_only: name.ends_with("_ro"),
        keys: args[3..3 + n].to_vec(),
        argv: args[3 + n..].to_vec(),
    })
}

/// EVAL and friends from a connection: the declared keys are warmed,
/// then the script runs in an exclusive section (module doc).
pub async fn eval(shared: &Arc<Shared>, conn: &mut ConnState, args: &[Bytes], out: &mut BytesMut) {
    let call = match parse(args) {
        Ok(c) => c,
        Err(e) => return crate::reply::error(out, e),
    };
    super::warm(shared, conn.db, call.keys.clone()).await;
    let deferred = Deferred::default();
    // The script runs on the script thread, never on a worker: however
    // long it runs, the workers answer other clients (BUSY, SCRIPT KILL).
    let (db, handle) = (conn.db, conn.handle.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = {
        let (shared, deferred) = (shared.clone(), deferred.clone());
        Box::new(move || {
            let mut reply = BytesMut::new();
            shared.scripts.busy.begin();
            shared
                .engine
                .exclusive(|| run(&shared, db, &handle, &call, &deferred, &mut reply));
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

/// EVAL and friends inside EXEC (already in a section; blocked clients
/// are served after the transaction).
pub fn eval_now(shared: &Arc<Shared>, conn: &mut ConnState, args: &[Bytes], out: &mut BytesMut) {
    match parse(args) {
        Ok(call) => {
            let deferred = conn.exec_ready.clone().unwrap_or_default();
            shared.scripts.busy.begin();
            run(shared, conn.db, &conn.handle, &call, &deferred, out);
            shared.scripts.busy.end();
        }
        Err(e) => crate::reply::error(out, e),
    }
}

/// Runs one script (its section held) and writes its reply.
fn run(
    shared: &Arc<Shared>,
    db: usize,
    handle: &Arc<crate::clients::ClientHandle>,
    call: &Call,
    deferred: &Deferred,
    out: &mut BytesMut,
) {
    let mut cache = shared.scripts.inner.lock();
    let (sha, f) = if call.by_sha {
        let sha = String::from_utf8_lossy(&call.script).to_ascii_lowercase();
        match cache.by_sha.get(&sha) {
            Some(f) => (sha, f.clone()),
            None => {
                return crate::reply::error(out, "NOSCRIPT No matching script. Please use EVAL.")
            }
        }
    } else {
        match compile(&mut cache, &call.script) {
            Ok(x) => x,
            Err(e) => return crate::reply::error(out, &e),
        }
    };
    // The script's own client: the caller's database, RESP2.
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
    let vm = &cache.vm;
    let result = (|| -> mlua::Result<(bool, Value)> {
        let lua = &vm.lua;
        let g = lua.globals();
        g.raw_set(
            "KEYS",
            lua.create_sequence_from(
                call.keys
                    .iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?,
        )?;
        g.raw_set(
            "ARGV",
            lua.create_sequence_from(
                call.argv
                    .iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )?,
        )?;
        lua.scope(|scope| {
            let raw = scope.create_function_mut(|lua, args: MultiValue| {
                command(lua, shared, &mut me, &args, call.read_only)
            })?;
            lua.set_named_registry_value(vm::RAW_CALL, raw)?;
            let r: mlua::Result<MultiValue> = vm.run.call(f.clone());
            lua.unset_named_registry_value(vm::RAW_CALL)?;
            let r = r?;
            let mut r = r.into_iter();
            let ok = matches!(r.next(), Some(Value::Boolean(true)));
            Ok((ok, r.next().unwrap_or(Value::Nil)))
        })
    })();
    match result {
        Ok((true, v)) => convert::lua_to_reply(&v, out, 0),
        Ok((false, v)) => script_error(&v, &sha, out),
        Err(e) => convert::error_line(out, format!("ERR {e}").as_bytes()),
    }
}

/// The reply to an error the script raised: `{error, line}` from the
/// runner's handler.
fn script_error(v: &Value, sha: &str, out: &mut BytesMut) {
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
    convert::error_line(
        out,
        format!("{msg} script: {sha}, on @user_script:{line}.").as_bytes(),
    );
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
        Ok(Parsed::Complete { value, .. }) => Ok((convert::frame_to_lua(lua, &value)?, false)),
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
