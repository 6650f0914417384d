//! What the server measures about the commands it runs: the slow log
//! (`slowlog`) and per-command calls, time, errors and latency histograms
//! (`commands`: INFO commandstats and latencystats, LATENCY HISTOGRAM),
//! error replies by their first word (`errors`: INFO errorstats), and the
//! latency monitor's events (`latency`: LATENCY LATEST, HISTORY, RESET),
//! and memcached's counters (`memcache`: its `stats`).

pub mod commands;
pub mod errors;
pub mod latency;
pub mod memcache;
pub mod slowlog;
