//! ACL LOG: the latest refusals (`addACLLogEntry`). A refusal like one of
//! the ten newest (same reason, context, object and user, within 60 s)
//! bumps that entry's count and moves it first; the log keeps
//! `acllog-max-len` entries.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the refused command ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LogContext {
    Toplevel,
    Multi,
    Lua,
}

impl LogContext {
    pub fn name(self) -> &'static str {
        match self {
            LogContext::Toplevel => "toplevel",
            LogContext::Multi => "multi",
            LogContext::Lua => "lua",
        }
    }
}

#[derive(Clone)]
pub struct LogEntry {
    pub count: u64,
    /// "command", "key", "channel" or "auth".
    pub reason: &'static str,
    pub context: LogContext,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// Milliseconds since the epoch of the last refusal.
    pub ctime: u64,
    pub client_info: String,
}

pub struct AclLog {
    entries: Mutex<VecDeque<LogEntry>>,
    pub max_len: AtomicUsize,
}

impl Default for AclLog {
    fn default() -> AclLog {
        AclLog {
            entries: Mutex::new(VecDeque::new()),
            max_len: AtomicUsize::new(128),
        }
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl AclLog {
    pub fn add(&self, e: LogEntry) {
        let mut log = self.entries.lock();
        let similar = log.iter().take(10).position(|x| {
            x.reason == e.reason
                && x.context == e.context
                && x.ctime.abs_diff(e.ctime) <= 60_000
                && x.object == e.object
                && x.username == e.username
        });
        match similar.and_then(|i| log.remove(i)) {
            Some(mut m) => {
                m.count += 1;
                m.ctime = e.ctime;
                m.client_info = e.client_info;
                log.push_front(m);
            }
            None => {
                log.push_front(e);
                log.truncate(self.max_len.load(Relaxed));
            }
        }
    }

    /// The newest `n` entries.
    pub fn newest(&self, n: usize) -> Vec<LogEntry> {
        self.entries.lock().iter().take(n).cloned().collect()
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    /// Applies a lowered `acllog-max-len`.
    pub fn trim(&self) {
        let max = self.max_len.load(Relaxed);
        self.entries.lock().truncate(max);
    }
}
