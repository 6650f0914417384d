//! Per-command statistics, as Redis keeps them: calls, microseconds,
//! rejected calls (refused before running: arity, NOAUTH, OOM ...) and
//! failed calls (ran and answered an error), and a latency histogram in
//! power-of-two microsecond buckets (LATENCY HISTOGRAM, the percentiles of
//! INFO latencystats). One slot per entry of the command table.
//!
//! Each thread that runs commands records into a table of its own (a
//! shared table had the loops pass every command's counter lines back
//! and forth: the `lock add`s were ~4% of a RAM GET's samples); readers
//! sum the tables.
//!
//! Invariants:
//! 1. Only a table's thread writes its counters, with a plain load and
//!    store (no read-modify-write needed).
//! 2. A table counts only if its generation is the current one: CONFIG
//!    RESETSTAT moves the generation on, and each thread zeroes its own
//!    table when it next records (readers meanwhile count it as zero),
//!    so a reset is never undone by a write in flight.
//! 3. A thread that ends adds its counts to the `retired` table (under
//!    the lock readers take) and leaves the list: threads that come and
//!    go (a blocking pool's) do not pile up tables.

use crate::registry;
use crate::registry::CommandSpec;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::{Arc, Weak};
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

/// One thread's counters (invariant 1).
struct Table {
    /// The generation its counters belong to (invariant 2).
    generation: AtomicU64,
    slots: Box<[Slot]>,
}

impl Table {
    fn new(generation: u64) -> Table {
        Table {
            generation: AtomicU64::new(generation),
            slots: registry::all().iter().map(|_| Slot::default()).collect(),
        }
    }

    /// Zeroes the table for `generation` (its writer only: invariant 1);
    /// a reader that sees the generation sees the zeros.
    fn restart(&self, generation: u64) {
        for a in self.slots.iter().flat_map(counters) {
            a.store(0, Relaxed);
        }
        self.generation.store(generation, Release);
    }

    /// Adds `other`'s counts to this table (its writer only).
    fn add(&self, other: &Table) {
        for (a, b) in self.slots.iter().zip(other.slots.iter()) {
            for (x, y) in counters(a).zip(counters(b)) {
                bump(x, y.load(Relaxed));
            }
        }
    }
}

/// Adds `n` to a counter only this thread writes (invariant 1).
#[inline]
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Relaxed).wrapping_add(n), Relaxed);
}

/// The statistics of every command of the table.
pub struct CommandStats {
    all: Arc<All>,
}

struct All {
    generation: AtomicU64,
    /// The live threads' tables, and what ended threads counted (the
    /// latter written only under this lock).
    tables: Mutex<(Vec<Arc<Table>>, Table)>,
}

/// A thread's table of one `CommandStats`; retired when the thread ends
/// (invariant 3).
struct Mine {
    all: Weak<All>,
    table: Arc<Table>,
}

impl Drop for Mine {
    fn drop(&mut self) {
        let Some(all) = self.all.upgrade() else {
            return;
        };
        let generation = all.generation.load(Relaxed);
        let mut tables = all.tables.lock();
        let (live, retired) = &mut *tables;
        live.retain(|t| !Arc::ptr_eq(t, &self.table));
        if retired.generation.load(Relaxed) != generation {
            retired.restart(generation);
        }
        if self.table.generation.load(Relaxed) == generation {
            retired.add(&self.table);
        }
    }
}

/// Every counter of a slot.
fn counters(s: &Slot) -> impl Iterator<Item = &AtomicU64> {
    [&s.calls, &s.usec, &s.rejected, &s.failed]
        .into_iter()
        .chain(s.histogram.iter())
}

thread_local! {
    /// This thread's table of each `CommandStats` it recorded into.
    static MINE: RefCell<Vec<Mine>> = const { RefCell::new(Vec::new()) };
}

impl Default for CommandStats {
    fn default() -> CommandStats {
        CommandStats {
            all: Arc::new(All {
                generation: AtomicU64::new(0),
                tables: Mutex::new((Vec::new(), Table::new(0))),
            }),
        }
    }
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
    /// Runs `f` on this thread's slot of `spec` (zeroed first if a reset
    /// came since this thread last recorded: invariant 2).
    #[inline]
    fn with_slot(&self, spec: &CommandSpec, f: impl FnOnce(&Slot)) {
        let me = Arc::as_ptr(&self.all);
        MINE.with_borrow_mut(|mine| {
            let table = match mine.iter().position(|m| m.all.as_ptr() == me) {
                Some(k) => &mine[k].table,
                None => {
                    // Tables of servers gone (tests) leave this thread.
                    mine.retain(|m| m.all.strong_count() > 0);
                    let t = Arc::new(Table::new(self.all.generation.load(Relaxed)));
                    self.all.tables.lock().0.push(t.clone());
                    mine.push(Mine {
                        all: Arc::downgrade(&self.all),
                        table: t,
                    });
                    &mine.last().expect("just pushed").table
                }
            };
            let generation = self.all.generation.load(Relaxed);
            if table.generation.load(Relaxed) != generation {
                table.restart(generation);
            }
            // A command's slot is its registry id.
            if let Some(slot) = table.slots.get(spec.id) {
                f(slot);
            }
        });
    }

    /// A call that ran for `took`; `failed` when it answered an error.
    pub fn record(&self, spec: &CommandSpec, took: Duration, failed: bool) {
        let us = took.as_micros() as u64;
        self.with_slot(spec, |s| {
            bump(&s.calls, 1);
            bump(&s.usec, us);
            if failed {
                bump(&s.failed, 1);
            }
            let b = (64 - us.max(1).saturating_sub(1).leading_zeros()) as usize;
            bump(&s.histogram[b.min(BUCKETS - 1)], 1);
        });
    }

    /// A call whose reply, an error, came after it was recorded (a flash
    /// read, a blocked client).
    pub fn failed_later(&self, spec: &CommandSpec) {
        self.with_slot(spec, |s| bump(&s.failed, 1));
    }

    /// A call refused before it ran.
    pub fn rejected(&self, spec: &CommandSpec) {
        self.with_slot(spec, |s| bump(&s.rejected, 1));
    }

    /// The figures of every command that was called or refused, in table
    /// order: the sums over the threads' tables of this generation.
    pub fn figures(&self) -> Vec<Figures> {
        let generation = self.all.generation.load(Relaxed);
        let total = Table::new(generation);
        {
            let guard = self.all.tables.lock();
            let (live, retired) = &*guard;
            for t in live.iter().map(|t| &**t).chain(std::iter::once(retired)) {
                if t.generation.load(Acquire) == generation {
                    total.add(t);
                }
            }
        }
        registry::all()
            .iter()
            .zip(total.slots.iter())
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

    /// CONFIG RESETSTAT (invariant 2).
    pub fn reset(&self) {
        self.all.generation.fetch_add(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_land_in_power_of_two_buckets() {
        crate::commands::install();
        let st = CommandStats::default();
        let get = crate::registry::lookup(b"get").unwrap();
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
        st.record(get, Duration::from_micros(3), false);
        let f = st.figures();
        assert_eq!((f[0].calls, f[0].failed), (1, 0), "zeroed, then counted");
    }

    #[test]
    fn every_threads_calls_are_summed_and_reset_together() {
        crate::commands::install();
        let st = Arc::new(CommandStats::default());
        let get = crate::registry::lookup(b"get").unwrap();
        let set = crate::registry::lookup(b"set").unwrap();
        let run = |n: u64| {
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let st = st.clone();
                    std::thread::spawn(move || {
                        for _ in 0..n {
                            st.record(get, Duration::from_micros(2), false);
                            st.rejected(set);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        };
        run(1000);
        // The threads ended: their tables were retired, not lost.
        assert!(st.all.tables.lock().0.is_empty());
        let f = st.figures();
        let get_f = f.iter().find(|f| f.name == "get").unwrap();
        assert_eq!((get_f.calls, get_f.usec), (4000, 8000));
        assert_eq!(f.iter().find(|f| f.name == "set").unwrap().rejected, 4000);
        // Threads that record after a reset count from zero; the others'
        // tables (not zeroed yet) count as zero.
        st.reset();
        assert!(st.figures().is_empty());
        run(10);
        let f = st.figures();
        assert_eq!(f.iter().find(|f| f.name == "get").unwrap().calls, 40);
    }
}
