//! The scripts' store: the Lua VMs, EVAL's scripts by SHA-1 and the
//! functions' libraries (`Scripts`, one per server), the script running
//! now (`busy`), the VM and its libraries (`vm`, `libs`), conversions
//! between replies and Lua values (`convert`) and the thread scripts run
//! on. Running a script (its `redis.call`s through dispatch) is
//! `exec::scripting`'s.
//!
//! Errors read as Redis's: `<message> script: <sha>, on @user_script:<line>.`
//! (`script: <function>, on @user_function:<line>.` for functions) for an
//! error the script raised (a failed `redis.call` included), the message
//! alone for a `{err=...}` the script returned.
//!
//! Lock order: shards (the section), then `Scripts::inner`, then the
//! engine's function record (a leaf).

mod busy;
pub mod convert;
pub mod functions;
mod libs;
pub mod vm;

pub use busy::{allowed_while_busy, Busy, BUSY};
pub use functions::FLAGS;

use crate::registry::{CommandSpec, Flags, ScriptBy};
use bytes::Bytes;
use mlua::Function;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The VM and the scripts it compiled, by SHA-1.
pub struct Scripts {
    pub(crate) inner: Mutex<Cache>,
    /// The thread EVAL's scripts run on.
    thread: Mutex<std::sync::mpsc::Sender<Job>>,
    /// The script running now, if any (busy scripts, SCRIPT KILL).
    pub busy: Arc<Busy>,
    pub counts: Arc<Counts>,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call what Redis flags
    /// `noscript` (a test harness's hack, as in Redis).
    pub allow_noscript: std::sync::atomic::AtomicBool,
}

pub(crate) struct Cache {
    pub(crate) vm: vm::Vm,
    /// EVAL's scripts by SHA-1, with their shebang flags (None: no
    /// shebang, Redis's compatibility mode).
    pub(crate) by_sha: HashMap<String, (Function, Option<u8>)>,
    /// The functions' VM and libraries.
    pub(crate) fvm: vm::Vm,
    pub(crate) libraries: functions::Libraries,
    /// The libraries the engine recovered are loaded (on first use:
    /// FUNCTION and FCALL wait for the end of recovery).
    pub(crate) restored: bool,
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
    pub(crate) fn libraries(
        &mut self,
        engine: &strata_engine::Engine,
    ) -> &mut functions::Libraries {
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
    /// Hands `job` to the script thread; false if the thread is gone.
    pub fn send(&self, job: Job) -> bool {
        self.thread.lock().send(job).is_ok()
    }

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

impl Scripts {
    /// Whether a script command may write, by its script's declared flags
    /// (Redis's `evalGetCommandFlags`): CLIENT PAUSE WRITE holds it unless
    /// its script says `no-writes` (or it is an `_RO` command). A script not
    /// found, or a cache held by a running script (never waited for here),
    /// counts as writing.
    pub fn may_write(&self, spec: &CommandSpec, args: &[Bytes]) -> bool {
        let declared = |flags: Option<u8>| flags.is_none_or(|f| f & functions::NO_WRITES == 0);
        if spec.has(Flags::READONLY) {
            return false;
        }
        match (spec.script_by(), args.get(1)) {
            (Some(ScriptBy::Body), Some(body)) => match shebang(body) {
                Ok(Some((_, flags))) => declared(Some(flags)),
                _ => true,
            },
            (Some(ScriptBy::Sha), Some(sha)) => self.inner.try_lock().is_none_or(|c| {
                let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                c.by_sha.get(&sha).is_none_or(|(_, flags)| declared(*flags))
            }),
            (Some(ScriptBy::Function), Some(f)) => self.inner.try_lock().is_none_or(|c| {
                !c.restored
                    || c.libraries
                        .function(&String::from_utf8_lossy(f))
                        .is_none_or(|r| declared(Some(r.flags)))
            }),
            _ => true,
        }
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

pub(crate) fn compile(
    c: &mut Cache,
    body: &[u8],
) -> Result<(String, Function, Option<u8>), String> {
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
pub enum Kind {
    /// EVAL (the body) or EVALSHA (its SHA-1).
    Eval { by_sha: bool },
    /// FCALL: a function by name.
    Function,
}

/// One EVAL- or FCALL-family call, parsed.
pub struct Call {
    pub kind: Kind,
    /// The body, the SHA-1 or the function's name.
    pub script: Bytes,
    pub read_only: bool,
    pub keys: Vec<Bytes>,
    pub argv: Vec<Bytes>,
    /// The whole command (FUNCTION STATS shows it).
    pub command: Vec<Bytes>,
    /// The caller's ACL user: what the script's commands may do.
    pub user: Arc<crate::services::acl::User>,
}

/// Parses the call of script command `spec` (a `Role::Script`).
pub fn parse(
    spec: &CommandSpec,
    args: &[Bytes],
    user: &Arc<crate::services::acl::User>,
) -> Result<Call, &'static str> {
    let by = spec.script_by().unwrap_or(ScriptBy::Body);
    let n: i64 = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(if by == ScriptBy::Function {
            "ERR Bad number of keys provided"
        } else {
            crate::base::reply::NOT_INTEGER
        })?;
    if n < 0 {
        return Err("ERR Number of keys can't be negative");
    }
    if n as usize > args.len() - 3 {
        return Err(crate::base::reply::TOO_MANY_KEYS);
    }
    let n = n as usize;
    Ok(Call {
        kind: match by {
            ScriptBy::Function => Kind::Function,
            ScriptBy::Body => Kind::Eval { by_sha: false },
            ScriptBy::Sha => Kind::Eval { by_sha: true },
        },
        script: args[1].clone(),
        read_only: spec.has(Flags::READONLY),
        keys: args[3..3 + n].to_vec(),
        argv: args[3 + n..].to_vec(),
        command: args.to_vec(),
        user: user.clone(),
    })
}

/// Work for the script thread.
pub type Job = Box<dyn FnOnce() + Send>;

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
