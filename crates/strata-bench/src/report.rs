//! Measurements and their presentation: per-command counters and
//! HdrHistograms ([`CmdStats`], [`RunStats`]) filled by the driver, their
//! summaries ([`CmdSummary`], [`RunReport`]), and the memtier-style text
//! report and the JSON report built from them.
//!
//! Latencies are recorded in microseconds (3 significant digits) and shown
//! in milliseconds. KB/s counts request plus reply bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::info::TieredReport;
use crate::options::Options;

/// Highest latency the histograms hold exactly (1 hour, in µs); larger
/// values are saturated to it.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Percentiles listed in the JSON report.
const JSON_PERCENTILES: [f64; 8] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 100.0];

fn new_histogram() -> Histogram<u64> {
    // Bounds are constants known to be valid, so this cannot fail.
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).unwrap_or_else(|_| {
        Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"))
    })
}

/// Counters for one command type.
#[derive(Clone, Debug)]
pub struct CmdStats {
    /// Completed requests (including error replies).
    pub ops: u64,
    /// GET hits.
    pub hits: u64,
    /// GET misses.
    pub misses: u64,
    /// Request + reply bytes.
    pub bytes: u64,
    /// Latency in µs.
    pub hist: Histogram<u64>,
}

impl Default for CmdStats {
    fn default() -> Self {
        CmdStats {
            ops: 0,
            hits: 0,
            misses: 0,
            bytes: 0,
            hist: new_histogram(),
        }
    }
}

impl CmdStats {
    /// Records one completed request.
    pub fn record(&mut self, latency: Duration, bytes: usize) {
        self.ops += 1;
        self.bytes += bytes as u64;
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.hist.saturating_record(us.min(MAX_LATENCY_US));
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &CmdStats) {
        self.ops += other.ops;
        self.hits += other.hits;
        self.misses += other.misses;
        self.bytes += other.bytes;
        // Same bounds on both sides: cannot fail.
        let _ = self.hist.add(&other.hist);
    }
}

/// Everything measured in one run (or several, merged).
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// SET counters.
    pub sets: CmdStats,
    /// GET counters.
    pub gets: CmdStats,
    /// Error replies plus requests lost to broken connections.
    pub errors: u64,
    /// GET hits whose value failed `--verify`.
    pub verify_errors: u64,
    /// Connections that could not be opened or broke mid-run.
    pub connection_errors: u64,
    /// Connections opened.
    pub connections: u64,
    /// The first error seen, for the report.
    pub first_error: Option<String>,
    /// Wall time from the common start to the last client's end.
    pub duration: Duration,
}

impl RunStats {
    /// Notes an error message (keeps the first).
    pub fn note_error(&mut self, msg: impl Into<String>) {
        if self.first_error.is_none() {
            self.first_error = Some(msg.into());
        }
    }

    /// Adds `other` into `self` (durations add up).
    pub fn merge(&mut self, other: &RunStats) {
        self.sets.merge(&other.sets);
        self.gets.merge(&other.gets);
        self.errors += other.errors;
        self.verify_errors += other.verify_errors;
        self.connection_errors += other.connection_errors;
        self.connections += other.connections;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.duration += other.duration;
    }

    /// SETs and GETs together.
    pub fn totals(&self) -> CmdStats {
        let mut t = self.sets.clone();
        t.merge(&self.gets);
        t
    }
}

/// One command type's figures.
#[derive(Clone, Debug, Serialize)]
pub struct CmdSummary {
    /// Completed requests.
    pub count: u64,
    /// Requests per second.
    pub ops_per_sec: f64,
    /// GET hits per second (0 for SETs).
    pub hits_per_sec: f64,
    /// GET misses per second (0 for SETs).
    pub misses_per_sec: f64,
    /// Mean latency, ms.
    pub avg_latency_ms: f64,
    /// Median latency, ms.
    pub p50_latency_ms: f64,
    /// 90th percentile, ms.
    pub p90_latency_ms: f64,
    /// 99th percentile, ms.
    pub p99_latency_ms: f64,
    /// 99.9th percentile, ms.
    pub p99_9_latency_ms: f64,
    /// Highest latency, ms.
    pub max_latency_ms: f64,
    /// Request + reply kilobytes (1024 B) per second.
    pub kb_per_sec: f64,
    /// Percentile → latency (ms), keys like `p99.90`.
    pub percentiles_ms: BTreeMap<String, f64>,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl CmdSummary {
    /// Summarises `s` over `secs` seconds.
    pub fn from_stats(s: &CmdStats, secs: f64) -> CmdSummary {
        let per = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let q = |p: f64| {
            if s.hist.is_empty() {
                0.0
            } else {
                ms(s.hist.value_at_percentile(p))
            }
        };
        CmdSummary {
            count: s.ops,
            ops_per_sec: per(s.ops),
            hits_per_sec: per(s.hits),
            misses_per_sec: per(s.misses),
            avg_latency_ms: if s.hist.is_empty() {
                0.0
            } else {
                s.hist.mean() / 1000.0
            },
            p50_latency_ms: q(50.0),
            p90_latency_ms: q(90.0),
            p99_latency_ms: q(99.0),
            p99_9_latency_ms: q(99.9),
            max_latency_ms: if s.hist.is_empty() {
                0.0
            } else {
                ms(s.hist.max())
            },
            kb_per_sec: per(s.bytes) / 1024.0,
            percentiles_ms: JSON_PERCENTILES
                .iter()
                .map(|&p| (format!("p{p:.3}"), q(p)))
                .collect(),
        }
    }
}

/// One run's (or the aggregate's) figures.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// 1-based run number; 0 for the aggregate.
    pub run: u32,
    /// Seconds measured.
    pub duration_secs: f64,
    /// SET figures.
    pub sets: CmdSummary,
    /// GET figures.
    pub gets: CmdSummary,
    /// SET + GET figures.
    pub totals: CmdSummary,
    /// Error replies plus requests lost to broken connections.
    pub errors: u64,
    /// GET hits whose value failed `--verify`.
    pub verify_errors: u64,
    /// Connections that failed to open or broke.
    pub connection_errors: u64,
    /// Connections opened.
    pub connections: u64,
    /// First error message seen.
    pub first_error: Option<String>,
    /// Strata's tiering figures for the run, if the server is Strata.
    pub tiered: Option<TieredReport>,
}

impl RunReport {
    /// Summarises `stats`.
    pub fn new(run: u32, stats: &RunStats, tiered: Option<TieredReport>) -> RunReport {
        let secs = stats.duration.as_secs_f64();
        RunReport {
            run,
            duration_secs: secs,
            sets: CmdSummary::from_stats(&stats.sets, secs),
            gets: CmdSummary::from_stats(&stats.gets, secs),
            totals: CmdSummary::from_stats(&stats.totals(), secs),
            errors: stats.errors,
            verify_errors: stats.verify_errors,
            connection_errors: stats.connection_errors,
            connections: stats.connections,
            first_error: stats.first_error.clone(),
            tiered,
        }
    }
}

fn row(out: &mut String, name: &str, s: &CmdSummary, gets: bool) {
    let hm = |v: f64| {
        if gets {
            format!("{v:.2}")
        } else {
            "---".to_string()
        }
    };
    let _ = writeln!(
        out,
        "{:<8}{:>14.2}{:>13}{:>13}{:>15.3}{:>15.3}{:>15.3}{:>15.3}{:>15.3}{:>15.3}{:>14.2}",
        name,
        s.ops_per_sec,
        hm(s.hits_per_sec),
        hm(s.misses_per_sec),
        s.avg_latency_ms,
        s.p50_latency_ms,
        s.p90_latency_ms,
        s.p99_latency_ms,
        s.p99_9_latency_ms,
        s.max_latency_ms,
        s.kb_per_sec
    );
}

/// memtier-style table for one run (`title` e.g. "RUN #1 RESULTS").
pub fn text_table(out: &mut String, title: &str, r: &RunReport) {
    let rule = "=".repeat(152);
    let _ = writeln!(out, "\n{title}\n{rule}");
    let _ = writeln!(
        out,
        "{:<8}{:>14}{:>13}{:>13}{:>15}{:>15}{:>15}{:>15}{:>15}{:>15}{:>14}",
        "Type",
        "Ops/sec",
        "Hits/sec",
        "Misses/sec",
        "Avg. Latency",
        "p50 Latency",
        "p90 Latency",
        "p99 Latency",
        "p99.9 Latency",
        "Max Latency",
        "KB/sec"
    );
    let _ = writeln!(out, "{}", "-".repeat(152));
    row(out, "Sets", &r.sets, false);
    row(out, "Gets", &r.gets, true);
    row(out, "Totals", &r.totals, true);
    let _ = writeln!(
        out,
        "\n{} requests in {:.3} s over {} connections; errors: {}, verify errors: {}, connection errors: {}",
        r.totals.count, r.duration_secs, r.connections, r.errors, r.verify_errors, r.connection_errors
    );
    if let Some(e) = &r.first_error {
        let _ = writeln!(out, "first error: {e}");
    }
    if let Some(t) = &r.tiered {
        let ratio = t
            .ram_hit_ratio
            .map_or_else(|| "n/a".to_string(), |v| format!("{:.4}", v));
        let _ = writeln!(
            out,
            "tiered: RAM hit ratio {ratio} ({} hits, {} misses), flash reads/s {:.2}, flash bytes written/s {:.2}",
            t.ram_hits, t.ram_misses, t.flash_reads_per_sec, t.flash_bytes_written_per_sec
        );
    }
}

/// memtier-style "Request Latency Distribution" for one run.
pub fn text_histogram(out: &mut String, stats: &RunStats) {
    let _ = writeln!(out, "\nRequest Latency Distribution");
    let _ = writeln!(out, "{:<8}{:>14}{:>12}", "Type", "<= msec", "Percent");
    let _ = writeln!(out, "{}", "-".repeat(34));
    for (name, s) in [("SET", &stats.sets), ("GET", &stats.gets)] {
        if s.hist.is_empty() {
            continue;
        }
        for v in s.hist.iter_quantiles(1) {
            if v.count_since_last_iteration() == 0 {
                continue;
            }
            let _ = writeln!(
                out,
                "{:<8}{:>14.3}{:>12.3}",
                name,
                ms(v.value_iterated_to()),
                v.quantile_iterated_to() * 100.0
            );
        }
        let _ = writeln!(out, "---");
    }
}

/// Short description of the configuration, printed first.
pub fn text_header(out: &mut String, opts: &Options, seed: u64) {
    let load = match (opts.test_time, opts.rate) {
        (Some(t), _) => format!("{t} secs"),
        (None, _) => format!("{} requests per client", opts.requests),
    };
    let _ = writeln!(
        out,
        "strata-bench {}: {}:{} ({:?}), {} threads × {} clients, pipeline {}, {} B values, ratio {}, key pattern {}, keys {}..={}, {}{}{}, seed {}",
        env!("CARGO_PKG_VERSION"),
        opts.server,
        opts.port,
        opts.protocol,
        opts.threads,
        opts.clients,
        opts.pipeline,
        opts.data_size,
        opts.ratio,
        opts.key_pattern,
        opts.key_minimum,
        opts.key_maximum,
        load,
        opts.rate
            .map_or_else(String::new, |r| format!(", open loop at {r} req/s")),
        if opts.verify { ", verify" } else { "" },
        seed
    );
}

/// The JSON report.
#[derive(Serialize)]
pub struct JsonReport<'a> {
    /// Options as given.
    pub configuration: &'a Options,
    /// Seed actually used.
    pub seed: u64,
    /// Each run.
    pub runs: &'a [RunReport],
    /// 1-based number of the run with the most Totals ops/s.
    pub best_run: u32,
    /// Same for the fewest.
    pub worst_run: u32,
    /// All runs merged: rates over the summed duration, latencies over all
    /// requests.
    pub aggregate: &'a RunReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_from_histogram() {
        let mut s = RunStats::default();
        for i in 1..=1000u64 {
            s.gets.record(Duration::from_micros(i), 100);
        }
        s.gets.hits = 600;
        s.gets.misses = 400;
        s.sets.record(Duration::from_millis(5), 50);
        s.duration = Duration::from_secs(2);
        let r = RunReport::new(1, &s, None);
        assert_eq!(r.gets.count, 1000);
        assert_eq!(r.gets.ops_per_sec, 500.0);
        assert_eq!(r.gets.hits_per_sec, 300.0);
        assert_eq!(r.gets.misses_per_sec, 200.0);
        assert!((r.gets.p50_latency_ms - 0.5).abs() < 0.001);
        assert!((r.gets.p99_latency_ms - 0.99).abs() < 0.001);
        assert!((r.gets.max_latency_ms - 1.0).abs() < 0.001);
        assert!((r.gets.avg_latency_ms - 0.5005).abs() < 0.001);
        assert_eq!(r.totals.count, 1001);
        assert!((r.gets.kb_per_sec - 100_000.0 / 1024.0 / 2.0).abs() < 1e-9);
        let mut text = String::new();
        text_table(&mut text, "ALL STATS", &r);
        text_histogram(&mut text, &s);
        assert!(text.contains("Totals") && text.contains("Request Latency Distribution"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["gets"]["count"], 1000);
        assert!(json["gets"]["percentiles_ms"]["p99.900"].is_number());
    }
}
