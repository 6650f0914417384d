//! A script that runs for long (`busy-reply-threshold`, SCRIPT KILL,
//! FUNCTION KILL, FUNCTION STATS' running script), as Redis 7.0 handles it.

use super::{sha1hex, Call, Kind};
use crate::registry::CommandSpec;
use crate::registry::Flags;
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

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
    pub wrote: AtomicBool,
    pub threshold_ms: AtomicU64,
    done: tokio::sync::Notify,
}

/// The script running now (FUNCTION STATS).
struct Running {
    started: std::time::Instant,
    /// The function's name, the script's SHA-1, or (EVAL) its body, whose
    /// SHA-1 FUNCTION STATS computes only when asked.
    script: Bytes,
    body: bool,
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

    /// Resolves once no script runs.
    pub async fn idle(&self) {
        loop {
            let notified = self.done.notified();
            if !self.running() {
                return;
            }
            notified.await;
        }
    }

    pub fn begin(&self, call: &Call) {
        self.kill.store(false, Relaxed);
        self.wrote.store(false, Relaxed);
        *self.running.lock() = Some(Running {
            started: std::time::Instant::now(),
            script: call.script.clone(),
            body: call.kind == Kind::Eval { by_sha: false },
            command: call.command.clone(),
            function: call.kind == Kind::Function,
        });
    }

    /// Called by the VM's hook: whether to stop the script (SCRIPT KILL).
    pub(crate) fn check(&self) -> bool {
        self.kill.load(Relaxed)
    }

    pub fn end(&self) {
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
            let name = if r.body {
                sha1hex(&r.script)
            } else {
                String::from_utf8_lossy(&r.script).to_string()
            };
            (
                name,
                r.command.clone(),
                r.started.elapsed().as_millis() as u64,
            )
        })
    }
}

/// Whether a command runs while a script is busy: those Redis flags
/// `allow_busy` (AUTH, SHUTDOWN ...), and the subcommands it flags so
/// (SCRIPT KILL, FUNCTION KILL and STATS).
pub fn allowed_while_busy(spec: Option<&CommandSpec>, args: &[Bytes]) -> bool {
    let Some(spec) = spec else { return true };
    spec.has(Flags::ALLOW_BUSY) || crate::registry::describe::sub_allows_busy(spec.name, args)
}
