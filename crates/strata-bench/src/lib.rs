//! strata-bench: a memtier_benchmark-compatible load generator for Strata
//! (and any Redis or memcached server).
//!
//! # What this crate owns
//! - [`options`]: memtier's command line (plus Strata's extensions).
//! - [`workload`]: key patterns, key names, SET values, `--verify`;
//!   [`dist`]: the distributions the patterns draw from.
//! - [`codec`]: RESP (via `strata-protocol`) and memcached text requests and
//!   replies.
//! - [`driver`]: connections, pipelining, closed and open loop.
//! - [`report`]: histograms → text and JSON.
//! - [`info`]: `INFO tiered` before/after a run when the server is Strata.
//!
//! # What it does not own
//! Nothing from the server or engine: it talks to servers only over TCP.
//!
//! [`execute`] runs every `--run-count` run and builds both reports;
//! [`cli_main`] is the binary.

pub mod codec;
pub mod dist;
pub mod driver;
pub mod info;
pub mod options;
pub mod report;
pub mod workload;

use std::ffi::OsString;
use std::process::ExitCode;

pub use options::Options;
use options::Protocol;
use report::{JsonReport, RunReport, RunStats};

/// Seed used unless `--randomize` (memtier also defaults to a fixed seed).
pub const DEFAULT_SEED: u64 = 0x5354_5241_5441_0001;

/// Everything a finished benchmark produced.
pub struct Outcome {
    /// Each run's figures.
    pub runs: Vec<RunReport>,
    /// Each run's raw measurements.
    pub stats: Vec<RunStats>,
    /// All runs merged.
    pub aggregate: RunReport,
    /// The text report.
    pub text: String,
    /// The JSON report.
    pub json: serde_json::Value,
    /// Seed used.
    pub seed: u64,
}

impl Outcome {
    /// True if some connection could not be opened or broke.
    pub fn connection_failed(&self) -> bool {
        self.aggregate.connection_errors > 0
    }
}

/// Runs the benchmark described by `opts` (already validated) and builds its
/// reports. Never panics on network or server errors; they are counted.
pub fn execute(opts: &Options) -> Outcome {
    let seed = if opts.randomize {
        rand::random()
    } else {
        DEFAULT_SEED
    };
    let info_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok();
    let tiered = |rt: &Option<tokio::runtime::Runtime>| match rt {
        Some(rt) if opts.protocol == Protocol::Redis || opts.info_port.is_some() => rt.block_on(
            info::fetch_tiered(&opts.server, opts.info_port.unwrap_or(opts.port)),
        ),
        _ => None,
    };
    let mut text = String::new();
    report::text_header(&mut text, opts, seed);
    let mut runs = Vec::new();
    let mut all_stats = Vec::new();
    for run in 1..=opts.run_count {
        let before = tiered(&info_rt);
        let stats = driver::run_once(opts, seed);
        let after = if before.is_some() {
            tiered(&info_rt)
        } else {
            None
        };
        let t = before
            .zip(after)
            .map(|(b, a)| info::TieredReport::from_delta(&b, &a, stats.duration));
        let r = RunReport::new(run, &stats, t);
        if opts.run_count > 1 {
            report::text_table(&mut text, &format!("RUN #{run} RESULTS"), &r);
            if !opts.hide_histogram {
                report::text_histogram(&mut text, &stats);
            }
        }
        runs.push(r);
        all_stats.push(stats);
    }
    let mut merged = RunStats::default();
    for s in &all_stats {
        merged.merge(s);
    }
    let tiered_all: Vec<_> = runs.iter().filter_map(|r| r.tiered.as_ref()).collect();
    let aggregate = RunReport::new(0, &merged, info::TieredReport::combine(&tiered_all));
    let ops = |r: &RunReport| r.totals.ops_per_sec;
    let best = runs
        .iter()
        .max_by(|a, b| ops(a).total_cmp(&ops(b)))
        .map_or(1, |r| r.run);
    let worst = runs
        .iter()
        .min_by(|a, b| ops(a).total_cmp(&ops(b)))
        .map_or(1, |r| r.run);
    if opts.run_count > 1 {
        for (title, n) in [("BEST RUN RESULTS", best), ("WORST RUN RESULTS", worst)] {
            if let Some(r) = runs.iter().find(|r| r.run == n) {
                report::text_table(&mut text, title, r);
            }
        }
        let title = format!("AGGREGATED AVERAGE RESULTS ({} runs)", opts.run_count);
        report::text_table(&mut text, &title, &aggregate);
    } else {
        report::text_table(&mut text, "ALL STATS", &aggregate);
        if !opts.hide_histogram {
            report::text_histogram(&mut text, &merged);
        }
    }
    let json = serde_json::to_value(JsonReport {
        configuration: opts,
        seed,
        runs: &runs,
        best_run: best,
        worst_run: worst,
        aggregate: &aggregate,
    })
    .unwrap_or(serde_json::Value::Null);
    Outcome {
        runs,
        stats: all_stats,
        aggregate,
        text,
        json,
        seed,
    }
}

/// The binary: parse, run, write reports. Exit code 1 if a connection
/// failed (or an output file could not be written), 2 on bad arguments.
pub fn cli_main<I: IntoIterator<Item = OsString>>(args: I) -> ExitCode {
    let opts = match Options::parse_from_args(args) {
        Ok(o) => o,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Err(e) = opts.validate() {
        eprintln!("strata-bench: {e}");
        return ExitCode::from(2);
    }
    let out = execute(&opts);
    let mut ok = true;
    match &opts.out_file {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &out.text) {
                eprintln!("strata-bench: cannot write {path}: {e}");
                ok = false;
            }
        }
        None => print!("{}", out.text),
    }
    if let Some(path) = &opts.json_out_file {
        let body = serde_json::to_string_pretty(&out.json).unwrap_or_default();
        if let Err(e) = std::fs::write(path, body + "\n") {
            eprintln!("strata-bench: cannot write {path}: {e}");
            ok = false;
        }
    }
    if out.connection_failed() {
        eprintln!(
            "strata-bench: {} connection(s) failed: {}",
            out.aggregate.connection_errors,
            out.aggregate.first_error.as_deref().unwrap_or("")
        );
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
