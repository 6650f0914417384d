//! A key's access, as reads and writes mark it: its CLOCK reference bit
//! (demotion's second chance), its last access (OBJECT IDLETIME, the LRU
//! policies), its access frequency for the LFU policies; and CLIENT
//! NO-TOUCH, which leaves them alone.
//!
//! The frequency is Redis 7.0's (`evict.c`): an 8-bit logarithmic counter
//! per key that a read raises with probability `1 / ((counter - 5) *
//! lfu-log-factor + 1)` and that falls by one for each `lfu-decay-time`
//! minutes since the key's last access. Redis keeps the minute of that
//! access beside the counter; here it is the entry's `lru_secs` (the same
//! instant, in seconds), so the counter is one byte in the entry's padding.
//!
//! Invariants:
//! 1. The counter moves only under an LFU policy (`Tunables::lfu`); under
//!    another one it keeps what it had, which Redis's reinterpretation of
//!    its one field makes meaningless too ("LRU and LFU data will take
//!    some time to adjust").
//! 2. A packed (cold) entry keeps no access time and no counter: it reads
//!    as 0 when unpacked. Cold keys are evicted first by every policy
//!    anyway.

use crate::config::LfuParams;
use crate::index::{Entry, F_REFERENCED};

thread_local! {
    /// Reads on this thread leave keys' access times alone (CLIENT
    /// NO-TOUCH).
    static NO_TOUCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether reads on this thread mark what they read as accessed.
pub(crate) fn touches() -> bool {
    !NO_TOUCH.with(|t| t.get())
}

/// Makes reads on this thread leave access times alone until dropped
/// (a CLIENT NO-TOUCH client's command).
pub struct NoTouch(bool);

impl NoTouch {
    pub fn enter() -> NoTouch {
        NoTouch(NO_TOUCH.with(|t| t.replace(true)))
    }
}

impl Drop for NoTouch {
    fn drop(&mut self) {
        let prev = self.0;
        NO_TOUCH.with(|t| t.set(prev));
    }
}

/// A new key's counter (Redis's `LFU_INIT_VAL`), so that it is not the
/// first to go before it had a chance to be read.
pub const LFU_INIT_VAL: u8 = 5;

/// Minutes (mod 2^16, as Redis keeps them) of `secs`.
fn minutes(secs: u32) -> u32 {
    (secs / 60) & 0xffff
}

/// The counter `c`, last accessed at `last_secs`, decayed to `now_secs`
/// (Redis's `LFUDecrAndReturn`; OBJECT FREQ and eviction read this).
pub fn decayed(c: u8, last_secs: u32, now_secs: u32, p: LfuParams) -> u8 {
    if p.decay_minutes == 0 {
        return c;
    }
    let (then, now) = (minutes(last_secs), minutes(now_secs));
    let elapsed = if now >= then {
        now - then
    } else {
        65535 - then + now
    };
    let periods = elapsed / p.decay_minutes;
    c.saturating_sub(periods.min(255) as u8)
}

/// One logarithmic increment of `c` (Redis's `LFULogIncr`); `r` is a
/// uniform draw in [0, 1).
pub fn log_incr(c: u8, r: f64, p: LfuParams) -> u8 {
    if c == 255 {
        return 255;
    }
    let base = c.saturating_sub(LFU_INIT_VAL) as f64;
    if r < 1.0 / (base * p.log_factor as f64 + 1.0) {
        c + 1
    } else {
        c
    }
}

/// Marks `e` read at `secs`: its CLOCK reference bit, its last access and,
/// under an LFU policy (`lfu`), its counter decayed then raised (Redis's
/// `updateLFU`).
#[inline]
pub fn touch(e: &mut Entry, secs: u32, lfu: Option<LfuParams>) {
    e.flags |= F_REFERENCED;
    if let Some(p) = lfu {
        let c = decayed(e.lfu, e.lru_secs, secs, p);
        e.lfu = log_incr(c, rand::random::<f64>(), p);
    }
    e.lru_secs = secs;
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: LfuParams = LfuParams {
        log_factor: 10,
        decay_minutes: 1,
    };

    #[test]
    fn a_new_key_rises_at_once_then_ever_more_slowly() {
        // At the initial value the increment is certain (p = 1).
        assert_eq!(log_incr(LFU_INIT_VAL, 0.999, P), 6);
        // One above: p = 1/11.
        assert_eq!(log_incr(6, 0.08, P), 7);
        assert_eq!(log_incr(6, 0.10, P), 6);
        assert_eq!(log_incr(255, 0.0, P), 255);
        // Below the initial value (a decayed key): p = 1.
        assert_eq!(log_incr(1, 0.999, P), 2);
    }

    #[test]
    fn the_counter_falls_one_per_decay_period() {
        let t = 1_000_000 * 60;
        assert_eq!(decayed(10, t, t + 59, P), 10);
        assert_eq!(decayed(10, t, t + 60, P), 9);
        assert_eq!(decayed(10, t, t + 3 * 60, P), 7);
        assert_eq!(decayed(10, t, t + 3600, P), 0);
        let slow = LfuParams {
            decay_minutes: 2,
            ..P
        };
        assert_eq!(decayed(10, t, t + 3 * 60, slow), 9);
        let never = LfuParams {
            decay_minutes: 0,
            ..P
        };
        assert_eq!(decayed(10, t, t + 3600, never), 10);
    }

    #[test]
    fn minutes_wrap_as_redis_counts_them() {
        // The last access just before the 16-bit minute clock wraps.
        let last = 65535 * 60;
        let now = 65536 * 60 + 60; // minute 1 after the wrap
        assert_eq!(decayed(10, last, now, P), 9);
    }
}
