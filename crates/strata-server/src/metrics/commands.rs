//! Per-command statistics, as Redis keeps them: calls, microseconds,
//! rejected calls (refused before running: arity, NOAUTH, OOM ...) and
//! failed calls (ran and answered an error), and a latency histogram in
//! power-of-two microsecond buckets (LATENCY HISTOGRAM, the percentiles of
//! INFO latencystats). One slot per entry of the command table, atomics
//! only: recording a call takes no lock.

use crate::command::CommandSpec;
use crate::commands::table::COMMANDS;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Buckets: latency ≤ 1 µs, ≤ 2 µs, ≤ 4 µs ... ≤ 2^39 µs.
const BUCKETS: usize = 40;

struct Slot {
    calls: AtomicU64,
    usec: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    histogram: [AtomicU64; BUCKETS],
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            calls: AtomicU64::new(0),
            usec: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            histogram: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The statistics of every command of the table.
pub struct CommandStats {
    slots: Box<[Slot]>,
}

impl Default for CommandStats {
    fn default() -> CommandStats {
        CommandStats {
            slots: COMMANDS.iter().map(|_| Slot::default()).collect(),
        }
    }
}

fn index(spec: &CommandSpec) -> Option<usize> {
    let at = (spec as *const CommandSpec as usize).checked_sub(COMMANDS.as_ptr() as usize)?;
    let i = at / std::mem::size_of::<CommandSpec>();
    (i < COMMANDS.len()).then_some(i)
}

/// One command's figures (INFO and LATENCY).
pub struct Figures {
    pub name: &'static str,
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
    /// (bucket's upper bound in µs, calls at or under it), for the
    /// buckets that hold calls.
    pub cdf: Vec<(u64, u64)>,
}

impl Figures {
    /// The latency at percentile `p` (0–100), in µs: the upper bound of
    /// the bucket it falls in.
    pub fn percentile(&self, p: f64) -> f64 {
        let want = ((p / 100.0) * self.calls as f64).ceil().max(1.0) as u64;
        self.cdf
            .iter()
            .find(|(_, n)| *n >= want)
            .map_or(0.0, |(b, _)| *b as f64)
    }
}

impl CommandStats {
    /// A call that ran for `took`; `failed` when it answered an error.
    pub fn record(&self, spec: &CommandSpec, took: Duration, failed: bool) {
        let Some(s) = index(spec).map(|i| &self.slots[i]) else {
            return;
        };
        let us = took.as_micros() as u64;
        s.calls.fetch_add(1, Relaxed);
        s.usec.fetch_add(us, Relaxed);
        if failed {
            s.failed.fetch_add(1, Relaxed);
        }
        let b = (64 - us.max(1).saturating_sub(1).leading_zeros()) as usize;
        s.histogram[b.min(BUCKETS - 1)].fetch_add(1, Relaxed);
    }

    /// A call refused before it ran.
    /// A call whose reply, an error, came after it was recorded (a flash
    /// read, a blocked client).
    pub fn failed_later(&self, spec: &CommandSpec) {
        if let Some(i) = index(spec) {
            self.slots[i].failed.fetch_add(1, Relaxed);
        }
    }

    pub fn rejected(&self, spec: &CommandSpec) {
        if let Some(i) = index(spec) {
            self.slots[i].rejected.fetch_add(1, Relaxed);
        }
    }

    /// The figures of every command that was called or refused, in table
    /// order.
    pub fn figures(&self) -> Vec<Figures> {
        COMMANDS
            .iter()
            .zip(self.slots.iter())
            .filter_map(|(c, s)| {
                let calls = s.calls.load(Relaxed);
                let rejected = s.rejected.load(Relaxed);
                let failed = s.failed.load(Relaxed);
                if calls + rejected == 0 {
                    return None;
                }
                let mut cum = 0;
                let mut cdf = Vec::new();
                for (b, h) in s.histogram.iter().enumerate() {
                    let n = h.load(Relaxed);
                    if n > 0 {
                        cum += n;
                        cdf.push((1u64 << b, cum));
                    }
                }
                Some(Figures {
                    name: c.name,
                    calls,
                    usec: s.usec.load(Relaxed),
                    rejected,
                    failed,
                    cdf,
                })
            })
            .collect()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for s in self.slots.iter() {
            for a in [&s.calls, &s.usec, &s.rejected, &s.failed] {
                a.store(0, Relaxed);
            }
            for h in &s.histogram {
                h.store(0, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_land_in_power_of_two_buckets() {
        let st = CommandStats::default();
        let get = crate::commands::table::lookup(b"get").unwrap();
        for us in [1u64, 2, 3, 7, 8, 100] {
            st.record(get, Duration::from_micros(us), false);
        }
        st.record(get, Duration::from_micros(5), true);
        let f = st.figures();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].name, f[0].calls, f[0].failed), ("get", 7, 1));
        assert_eq!(f[0].cdf, vec![(1, 1), (2, 2), (4, 3), (8, 6), (128, 7)]);
        assert_eq!(f[0].percentile(50.0), 8.0);
        st.reset();
        assert!(st.figures().is_empty());
    }
}
