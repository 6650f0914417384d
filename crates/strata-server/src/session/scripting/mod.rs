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

mod busy;
mod convert;
pub mod functions;
mod libs;
mod run;
mod vm;

pub use busy::{allowed_while_busy, Busy, BUSY};
pub use functions::FLAGS;

use crate::command::Deferred;
use crate::connection::ConnState;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use mlua::Function;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The VM and the scripts it compiled, by SHA-1.
pub struct Scripts {
    inner: Mutex<Cache>,
    /// The thread EVAL's scripts run on.
    thread: Mutex<std::sync::mpsc::Sender<Job>>,
    /// The script running now, if any (busy scripts, SCRIPT KILL).
    pub busy: Arc<Busy>,
    pub counts: Arc<Counts>,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call what Redis flags
    /// `noscript` (a test harness's hack, as in Redis).
    pub allow_noscript: std::sync::atomic::AtomicBool,
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
    /// EVAL's scripts cached (INFO `number_of_cached_scripts`).
    pub scripts: AtomicUsize,
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
            allow_noscript: Default::default(),
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
        c.counts.scripts.store(0, Relaxed);
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

/// Whether a script command may write, by its script's declared flags
/// (Redis's `evalGetCommandFlags`): CLIENT PAUSE WRITE holds it unless
/// its script says `no-writes` (or it is an `_RO` command). A script not
/// found, or a cache held by a running script (never waited for here),
/// counts as writing.
pub fn may_write(shared: &Shared, name: &str, args: &[Bytes]) -> bool {
    let declared = |flags: Option<u8>| flags.is_none_or(|f| f & functions::NO_WRITES == 0);
    match (name, args.get(1)) {
        ("eval_ro" | "evalsha_ro" | "fcall_ro", _) => false,
        ("eval", Some(body)) => match shebang(body) {
            Ok(Some((_, flags))) => declared(Some(flags)),
            _ => true,
        },
        ("evalsha", Some(sha)) => shared.scripts.inner.try_lock().is_none_or(|c| {
            let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
            c.by_sha.get(&sha).is_none_or(|(_, flags)| declared(*flags))
        }),
        ("fcall", Some(f)) => shared.scripts.inner.try_lock().is_none_or(|c| {
            !c.restored
                || c.libraries
                    .function(&String::from_utf8_lossy(f))
                    .is_none_or(|r| declared(Some(r.flags)))
        }),
        _ => true,
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
            let bit = functions::FLAGS
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
            .set_environment(c.vm.env.clone())
            .into_function()
            .map_err(|e| {
                format!(
                    "ERR Error compiling script (new function): {}",
                    vm::compile_message(&e)
                )
            })?;
    let flags = header.map(|(_, f)| f);
    c.by_sha.insert(sha.clone(), (f.clone(), flags));
    c.counts.scripts.store(c.by_sha.len(), Relaxed);
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
    /// The caller's ACL user: what the script's commands may do.
    user: Arc<crate::acl::User>,
}

fn parse(args: &[Bytes], user: &Arc<crate::acl::User>) -> Result<Call, &'static str> {
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
        user: user.clone(),
    })
}

/// EVAL, FCALL and friends from a connection: the declared keys are
/// warmed, then the script runs in an exclusive section (module doc).
pub async fn eval(shared: &Arc<Shared>, conn: &mut ConnState, args: &[Bytes], out: &mut BytesMut) {
    let call = match parse(args, &conn.user) {
        Ok(c) => c,
        Err(e) => return crate::reply::error(out, e),
    };
    super::warm(shared, conn.db, call.keys.clone()).await;
    // The script runs on the script thread, never on a worker: however
    // long it runs, the workers answer other clients (BUSY, SCRIPT KILL).
    // (Gathering a client's pipelined scripts into one hand-off was
    // measured: the script thread's own CPU, not the hand-off, bounds
    // EVALSHA.)
    let (db, handle, version) = (conn.db, conn.handle.clone(), conn.version);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = {
        let shared = shared.clone();
        Box::new(move || {
            let mut reply = BytesMut::new();
            let deferred = Deferred::default();
            shared.scripts.busy.begin(&call);
            // A bug that panics in a script's call must not take the script
            // thread (and every later script) with it: the script gets an
            // error instead.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                shared.engine.exclusive(|| {
                    // One instant for the whole script, as Redis 7.
                    let _clock = strata_engine::clock::freeze();
                    run::run(&shared, db, &handle, version, &call, &deferred, &mut reply)
                })
            }));
            if ran.is_err() {
                reply.clear();
                crate::reply::error(&mut reply, "ERR the script failed on an internal error");
            }
            shared.scripts.busy.end();
            // Clients blocked on keys the script filled are served now, as
            // Redis serves them after each command.
            for (db, keys) in std::mem::take(&mut *deferred.lock()) {
                shared.blocking.serve(&shared.engine, db, keys);
            }
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
    match parse(args, &conn.user) {
        Ok(call) => {
            let deferred = conn.exec_ready.clone().unwrap_or_default();
            shared.scripts.busy.begin(&call);
            run::run(
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
