//! Wall-clock helpers. Expiry times are absolute Unix milliseconds, as Redis
//! stores them, so they keep their meaning across restarts.
//!
//! A command reads the clock once: the server takes a [`snapshot`] when a
//! command starts, and every `now_ms` of that thread answers it until the
//! command returns (Redis's command time snapshot: a command sees one
//! instant, and a key cannot expire half-way through it). Elsewhere
//! (background threads, completions of cold reads) `now_ms` reads the
//! clock. A transaction or a script [`freeze`]s the clock for all its
//! commands (Redis's `fixed_time_expire`): the snapshots they take keep
//! the frozen instant, so no key expires half-way through it.
//!
//! A command already reads the TSC when it starts (a `quanta::Instant`,
//! for its duration); [`snapshot_at`] turns that instant into wall-clock
//! time through a pairing of the two clocks each thread renews every
//! `REBASE`, so a command reads the wall clock only then. The TSC is
//! calibrated against the monotonic clock (which NTP slews as it slews
//! the wall clock); a step of the wall clock is seen within `REBASE`, as
//! Redis sees one at its next cached-time update.

use quanta::Instant;
use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a thread's pairing of the clocks serves (`snapshot_at`).
const REBASE: Duration = Duration::from_millis(100);

thread_local! {
    /// The running command's time (0: none).
    static SNAPSHOT: Cell<u64> = const { Cell::new(0) };
    /// Freezes in force on this thread (`freeze`).
    static FROZEN: Cell<u32> = const { Cell::new(0) };
    /// A TSC instant and the wall-clock µs read just after it.
    static BASE: Cell<Option<(Instant, u64)>> = const { Cell::new(None) };
}

fn read_clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn read_clock() -> u64 {
    read_clock_us() / 1000
}

/// Wall-clock milliseconds at the instant `now`, from this
/// thread's pairing of the clocks (renewed when older than `REBASE`).
fn wall_ms_at(now: Instant) -> u64 {
    BASE.with(|b| match b.get() {
        Some((at, us)) if now >= at && now - at < REBASE => {
            (us + (now - at).as_micros() as u64) / 1000
        }
        _ => {
            let us = read_clock_us();
            b.set(Some((now, us)));
            us / 1000
        }
    })
}

/// Milliseconds since the Unix epoch (the command's snapshot, if one is
/// taken on this thread).
pub fn now_ms() -> u64 {
    match SNAPSHOT.with(Cell::get) {
        0 => read_clock(),
        t => t,
    }
}

/// Seconds since the Unix epoch, truncated to 32 bits (an LRU clock).
pub fn now_secs() -> u32 {
    (now_ms() / 1000) as u32
}

/// As [`snapshot`], for a command that started at `started` (an instant it
/// read anyway): no second clock read (module doc).
pub fn snapshot_at(started: Instant) -> Snapshot {
    let prev = SNAPSHOT.with(Cell::get);
    if FROZEN.with(Cell::get) == 0 || prev == 0 {
        SNAPSHOT.with(|c| c.set(wall_ms_at(started)));
    }
    Snapshot { prev }
}

/// The clock as one command sees it; dropping it ends the snapshot.
pub struct Snapshot {
    prev: u64,
}

/// Reads the clock once for the command about to run on this thread
/// (inside a `freeze`, keeps the frozen instant).
pub fn snapshot() -> Snapshot {
    let prev = SNAPSHOT.with(Cell::get);
    if FROZEN.with(Cell::get) == 0 || prev == 0 {
        SNAPSHOT.with(|c| c.set(read_clock()));
    }
    Snapshot { prev }
}

/// The clock of a transaction or a script: one instant for every command
/// it runs, until dropped.
pub struct Freeze {
    _snapshot: Snapshot,
}

/// Freezes this thread's clock now (nested freezes keep the outer one).
pub fn freeze() -> Freeze {
    let s = snapshot();
    FROZEN.with(|f| f.set(f.get() + 1));
    Freeze { _snapshot: s }
}

impl Drop for Freeze {
    fn drop(&mut self) {
        FROZEN.with(|f| f.set(f.get() - 1));
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        SNAPSHOT.with(|c| c.set(self.prev));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_holds_the_time_until_dropped_and_nests() {
        let s = snapshot();
        let t = now_ms();
        std::thread::sleep(std::time::Duration::from_millis(3));
        assert_eq!(now_ms(), t);
        {
            let _inner = snapshot();
            assert!(now_ms() >= t);
        }
        assert_eq!(now_ms(), t);
        drop(s);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(now_ms() > t);
        assert!(std::thread::spawn(now_ms).join().unwrap() > t);
    }

    #[test]
    fn a_snapshot_at_an_instant_is_the_wall_clock_then() {
        for pause in [0, 30, 120, 30] {
            std::thread::sleep(Duration::from_millis(pause));
            let before = read_clock();
            let started = Instant::now();
            let s = snapshot_at(started);
            let t = now_ms();
            let after = read_clock();
            // (±1 ms: the TSC's calibration may put a read astride a
            // millisecond's edge.)
            assert!(
                before <= t + 1 && t <= after + 1,
                "{before} <= {t} <= {after}"
            );
            drop(s);
        }
        // A later instant of the same pairing reads later by as much
        // (the pairing is renewed at `a`: the last one is older than
        // `REBASE`).
        std::thread::sleep(REBASE + Duration::from_millis(10));
        let a = Instant::now();
        let _s = snapshot_at(a);
        let ta = now_ms();
        drop(_s);
        let _s = snapshot_at(a + Duration::from_millis(40));
        assert_eq!(now_ms(), ta + 40);
    }

    #[test]
    fn a_freeze_holds_the_time_for_the_snapshots_inside_it() {
        let f = freeze();
        let t = now_ms();
        std::thread::sleep(std::time::Duration::from_millis(3));
        {
            let _cmd = snapshot();
            assert_eq!(now_ms(), t);
        }
        assert_eq!(now_ms(), t);
        drop(f);
        let _cmd = snapshot();
        assert!(now_ms() > t);
    }
}
