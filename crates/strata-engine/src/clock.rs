//! Wall-clock helpers. Expiry times are absolute Unix milliseconds, as Redis
//! stores them, so they keep their meaning across restarts.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Seconds since the Unix epoch, truncated to 32 bits (an LRU clock).
pub fn now_secs() -> u32 {
    (now_ms() / 1000) as u32
}
