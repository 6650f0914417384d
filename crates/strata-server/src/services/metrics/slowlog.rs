//! SLOWLOG: commands that ran longer than `slowlog-log-slower-than`
//! microseconds, newest first, at most `slowlog-max-len` entries.

use crate::services::clients::ClientHandle;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

pub struct SlowEntry {
    pub id: u64,
    pub unix_secs: u64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    pub addr: String,
    pub name: String,
}

pub struct SlowLog {
    /// Threshold in microseconds; negative disables.
    pub slower_than: AtomicI64,
    pub max_len: AtomicUsize,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<SlowEntry>>,
}

/// Redis keeps at most 32 arguments, each cut to 128 bytes.
const MAX_ARGS: usize = 32;
const MAX_ARG_LEN: usize = 128;

impl SlowLog {
    pub fn new(slower_than: i64, max_len: usize) -> SlowLog {
        SlowLog {
            slower_than: AtomicI64::new(slower_than),
            max_len: AtomicUsize::new(max_len),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether commands are logged at all (`slowlog-log-slower-than` ≥ 0).
    pub fn enabled(&self) -> bool {
        self.slower_than.load(Relaxed) >= 0
    }

    /// Records a command if it was slow enough.
    pub fn record(&self, took: Duration, args: &[Bytes], client: &ClientHandle) {
        let limit = self.slower_than.load(Relaxed);
        if limit < 0 || (took.as_micros() as i64) < limit {
            return;
        }
        let mut kept: Vec<Bytes> = args
            .iter()
            .take(if args.len() > MAX_ARGS {
                MAX_ARGS - 1
            } else {
                MAX_ARGS
            })
            .map(|a| {
                if a.len() > MAX_ARG_LEN {
                    let mut v = a[..MAX_ARG_LEN].to_vec();
                    v.extend_from_slice(
                        format!("... ({} more bytes)", a.len() - MAX_ARG_LEN).as_bytes(),
                    );
                    Bytes::from(v)
                } else {
                    // A copy: a slice of the request would keep the
                    // client's whole read buffer alive as long as the
                    // entry (megabytes per entry under a pipeline).
                    Bytes::copy_from_slice(a)
                }
            })
            .collect();
        if args.len() > MAX_ARGS {
            kept.push(Bytes::from(format!(
                "... ({} more arguments)",
                args.len() - MAX_ARGS + 1
            )));
        }
        let entry = SlowEntry {
            id: self.next_id.fetch_add(1, Relaxed),
            unix_secs: strata_engine::clock::now_ms() / 1000,
            micros: took.as_micros() as u64,
            args: kept,
            addr: client.addr.clone(),
            name: client.info.lock().name.clone(),
        };
        let mut e = self.entries.lock();
        e.push_front(entry);
        let max = self.max_len.load(Relaxed);
        e.truncate(max);
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    /// Runs `f` over the newest `n` entries.
    pub fn with_entries<T>(
        &self,
        n: usize,
        f: impl FnOnce(&mut dyn Iterator<Item = &SlowEntry>) -> T,
    ) -> T {
        let e = self.entries.lock();
        f(&mut e.iter().take(n))
    }
}
