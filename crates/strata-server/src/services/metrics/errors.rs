//! Error replies, as Redis counts them (INFO `errorstats` and
//! `total_error_replies`): every error a client is sent, by its first word
//! (`ERR`, `WRONGTYPE`, `NOGROUP` ...), whether the command answered it at
//! once, after a flash read, or after blocking.
//!
//! Invariant: at most `MAX_PREFIXES` distinct words are kept (Redis's
//! limit: past it, new words count only in the total).

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const MAX_PREFIXES: usize = 128;

#[derive(Default)]
pub struct ErrorStats {
    total: AtomicU64,
    by_prefix: Mutex<BTreeMap<String, u64>>,
}

impl ErrorStats {
    /// Counts `reply` if it is an error reply (`-WORD ...`).
    pub fn record(&self, reply: &[u8]) {
        let Some(rest) = reply.strip_prefix(b"-") else {
            return;
        };
        self.total.fetch_add(1, Relaxed);
        let end = rest
            .iter()
            .position(|&c| c == b' ' || c == b'\r')
            .unwrap_or(rest.len());
        let word = String::from_utf8_lossy(&rest[..end]).into_owned();
        let mut m = self.by_prefix.lock();
        if let Some(n) = m.get_mut(&word) {
            *n += 1;
        } else if m.len() < MAX_PREFIXES {
            m.insert(word, 1);
        }
    }

    pub fn total(&self) -> u64 {
        self.total.load(Relaxed)
    }

    /// (word, count), sorted by word.
    pub fn by_prefix(&self) -> Vec<(String, u64)> {
        self.by_prefix
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.total.store(0, Relaxed);
        self.by_prefix.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_errors_by_first_word() {
        let e = ErrorStats::default();
        e.record(b"+OK\r\n");
        e.record(b"-ERR syntax error\r\n");
        e.record(b"-NOGROUP No such key\r\n");
        e.record(b"-ERR x\r\n");
        assert_eq!(e.total(), 3);
        assert_eq!(
            e.by_prefix(),
            vec![("ERR".to_string(), 2), ("NOGROUP".to_string(), 1)]
        );
    }
}
