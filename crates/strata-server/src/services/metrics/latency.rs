//! The latency monitor (Redis's latency.c): with `latency-monitor-threshold`
//! set (milliseconds; 0, the default, turns it off), every event that took
//! at least that long is sampled — a command (`command`, or `fast-command`
//! for one flagged fast) and the engine's active-expiry cycle
//! (`expire-cycle`). Each event keeps its largest latency ever and one
//! sample per second (the largest in that second) for its last 160
//! seconds with samples, as Redis does; LATENCY LATEST, HISTORY and RESET
//! read them.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Samples kept per event (`LATENCY_TS_LEN`).
const SAMPLES: usize = 160;

/// One event's series (`latencyTimeSeries`).
pub struct Series {
    /// (unix seconds, milliseconds), a ring; time 0 = unused.
    samples: [(u64, u64); SAMPLES],
    idx: usize,
    pub max: u64,
}

impl Series {
    /// The newest sample.
    pub fn latest(&self) -> (u64, u64) {
        self.samples[(self.idx + SAMPLES - 1) % SAMPLES]
    }

    /// The samples, oldest first.
    pub fn history(&self) -> Vec<(u64, u64)> {
        (0..SAMPLES)
            .map(|j| self.samples[(self.idx + j) % SAMPLES])
            .filter(|s| s.0 != 0)
            .collect()
    }
}

#[derive(Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in milliseconds (0: off).
    pub threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<String, Series>>,
}

impl LatencyMonitor {
    /// Samples `event` if monitoring is on and `ms` reaches the threshold
    /// (`latencyAddSampleIfNeeded`).
    pub fn sample_if_needed(&self, event: &str, ms: u64) {
        let t = self.threshold_ms.load(Relaxed);
        if t == 0 || ms < t {
            return;
        }
        let now = strata_engine::clock::now_ms() / 1000;
        let mut events = self.events.lock();
        let s = events.entry(event.to_string()).or_insert(Series {
            samples: [(0, 0); SAMPLES],
            idx: 0,
            max: 0,
        });
        s.max = s.max.max(ms);
        let prev = (s.idx + SAMPLES - 1) % SAMPLES;
        if s.samples[prev].0 == now {
            s.samples[prev].1 = s.samples[prev].1.max(ms);
            return;
        }
        s.samples[s.idx] = (now, ms);
        s.idx = (s.idx + 1) % SAMPLES;
    }

    /// Runs `f` over the events, in name order.
    pub fn with_events<R>(&self, f: impl FnOnce(&BTreeMap<String, Series>) -> R) -> R {
        f(&self.events.lock())
    }

    /// Forgets `names` (every event when empty); returns how many there
    /// were.
    pub fn reset(&self, names: &[String]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        names.iter().filter(|n| events.remove(*n).is_some()).count()
    }
}
