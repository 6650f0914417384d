//! What the server measures about the commands it runs: the slow log
//! (`slowlog`) and per-command calls, time, errors and latency histograms
//! (`commands`: INFO commandstats and latencystats, LATENCY HISTOGRAM),
//! and error replies by their first word (`errors`: INFO errorstats).

pub mod commands;
pub mod errors;
pub mod slowlog;
