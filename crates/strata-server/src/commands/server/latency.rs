//! LATENCY: LATEST, HISTORY, RESET, GRAPH and DOCTOR over the latency
//! monitor's events (`metrics::latency`), HISTOGRAM from the per-command
//! histograms of `metrics::commands`, with Redis 7.0's replies and texts
//! (latency.c, sparkline.c); and WAIT (no replicas: always 0).

use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::services::metrics::latency::Series;
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;
use strata_protocol::{write_array_len, write_bulk, write_integer, write_map_len, write_verbatim};

const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";

pub fn latency(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let n = args.len();
    let v = ctx.version();
    let mon = &ctx.server().latency;
    if is(sub, "latest") && n == 2 {
        mon.with_events(|events| {
            write_array_len(ctx.out, events.len());
            for (name, s) in events {
                let (time, ms) = s.latest();
                write_array_len(ctx.out, 4);
                write_bulk(ctx.out, name.as_bytes());
                write_integer(ctx.out, time as i64);
                write_integer(ctx.out, ms as i64);
                write_integer(ctx.out, s.max as i64);
            }
        });
    } else if is(sub, "history") && n == 3 {
        let name = String::from_utf8_lossy(&args[2]).into_owned();
        let samples = mon.with_events(|e| e.get(&name).map(Series::history));
        let samples = samples.unwrap_or_default();
        write_array_len(ctx.out, samples.len());
        for (time, ms) in samples {
            write_array_len(ctx.out, 2);
            write_integer(ctx.out, time as i64);
            write_integer(ctx.out, ms as i64);
        }
    } else if is(sub, "graph") && n == 3 {
        let name = String::from_utf8_lossy(&args[2]).into_owned();
        match mon.with_events(|e| e.get(&name).map(|s| graph(&name, s))) {
            Some(g) => write_verbatim(ctx.out, v, b"txt", g.as_bytes()),
            None => reply::error(
                ctx.out,
                &format!("ERR No samples available for event '{name}'"),
            ),
        }
    } else if is(sub, "reset") {
        let names: Vec<String> = args[2..]
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        write_integer(ctx.out, mon.reset(&names) as i64);
    } else if is(sub, "doctor") && n == 2 {
        let threshold = mon.threshold_ms.load(Relaxed);
        let (slower_than, hz) = {
            let c = ctx.config();
            (c.slowlog_log_slower_than, c.hz)
        };
        let text = mon.with_events(|e| doctor(e, threshold, slower_than, hz as u64));
        write_verbatim(ctx.out, v, b"txt", text.as_bytes());
    } else if is(sub, "histogram") {
        let all = ctx.server().cmdstats.figures();
        let chosen: Vec<_> = all
            .iter()
            .filter(|f| f.calls > 0)
            .filter(|f| n == 2 || args[2..].iter().any(|a| is(a, f.name)))
            .collect();
        write_map_len(ctx.out, v, chosen.len());
        for f in chosen {
            write_bulk(ctx.out, f.name.as_bytes());
            write_map_len(ctx.out, v, 2);
            write_bulk(ctx.out, b"calls");
            write_integer(ctx.out, f.calls as i64);
            write_bulk(ctx.out, b"histogram_usec");
            write_map_len(ctx.out, v, f.cdf.len());
            for (bucket, count) in &f.cdf {
                write_integer(ctx.out, *bucket as i64);
                write_integer(ctx.out, *count as i64);
            }
        }
    } else if is(sub, "help") && n == 2 {
        super::help(ctx.out, "LATENCY", &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
            "HELP",
            "    Prints this help.",
        ]);
    } else if ["latest", "history", "graph", "doctor", "help"]
        .iter()
        .any(|s| is(sub, s))
    {
        reply::error(
            ctx.out,
            &format!(
                "ERR wrong number of arguments for 'latency|{}' command",
                String::from_utf8_lossy(sub).to_lowercase()
            ),
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "latency");
    }
    Outcome::Done
}

/// WAIT numreplicas timeout: no replicas exist, so 0 at once.
pub fn wait(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if parse_i64(&args[1]).is_none() {
        reply::error(ctx.out, reply::NOT_INTEGER);
    } else {
        match parse_i64(&args[2]) {
            None => reply::error(ctx.out, crate::base::reply::TIMEOUT_NOT_INTEGER),
            Some(t) if t < 0 => reply::error(ctx.out, crate::base::reply::TIMEOUT_NEGATIVE),
            Some(_) => write_integer(ctx.out, 0),
        }
    }
    Outcome::Done
}

/// `LATENCY GRAPH`: Redis's header and its sparkline of the samples,
/// labelled with how long ago each was (`latencyCommandGenSparkeline`).
fn graph(name: &str, s: &Series) -> String {
    let now = strata_engine::clock::now_ms() / 1000;
    let samples: Vec<(u64, String)> = s
        .history()
        .into_iter()
        .map(|(time, ms)| {
            let ago = now.saturating_sub(time);
            let label = match ago {
                0..=59 => format!("{ago}s"),
                60..=3599 => format!("{}m", ago / 60),
                3600..=86399 => format!("{}h", ago / 3600),
                _ => format!("{}d", ago / 86400),
            };
            (ms, label)
        })
        .collect();
    let lo = samples.iter().map(|x| x.0).min().unwrap_or(0);
    let hi = samples.iter().map(|x| x.0).max().unwrap_or(0);
    let mut out = format!(
        "{name} - high {hi} ms, low {lo} ms (all time high {} ms)\n",
        s.max
    );
    out.push_str(&"-".repeat(GRAPH_COLS));
    out.push('\n');
    for (i, chunk) in samples.chunks(GRAPH_COLS).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        sparkline(&mut out, chunk, lo, hi);
    }
    out
}

const GRAPH_COLS: usize = 80;
/// Sparkline rows (`sparklineRender`'s `rows`).
const GRAPH_ROWS: usize = 4;

/// `sparklineRenderRange` with SPARKLINE_FILL: `GRAPH_ROWS` rows of
/// `_o#` and `|`, a blank line, then the labels written downwards.
fn sparkline(out: &mut String, samples: &[(u64, String)], lo: u64, hi: u64) {
    const FILL: &[u8] = b"_o#";
    let steps = (FILL.len() * GRAPH_ROWS) as f64;
    let relmax = if hi == lo { 1.0 } else { (hi - lo) as f64 };
    let mut row = 0;
    loop {
        let mut line = vec![b' '; samples.len()];
        let mut more = false;
        for (j, (v, label)) in samples.iter().enumerate() {
            let relval = (v - lo) as f64;
            let step = (((relval * steps) as i64) as f64 / relmax) as i64;
            let step = step.clamp(0, steps as i64 - 1);
            if row < GRAPH_ROWS {
                more = true;
                let idx = step - ((GRAPH_ROWS - row - 1) * FILL.len()) as i64;
                if (0..FILL.len() as i64).contains(&idx) {
                    line[j] = FILL[idx as usize];
                } else if idx >= FILL.len() as i64 {
                    line[j] = b'|';
                }
            } else if row == GRAPH_ROWS {
                // The margin above the labels.
                more = true;
                break;
            } else {
                let k = row - GRAPH_ROWS - 1;
                if let Some(&c) = label.as_bytes().get(k) {
                    more = true;
                    line[j] = c;
                }
            }
        }
        if !more {
            break;
        }
        row += 1;
        out.push_str(&String::from_utf8_lossy(&line));
        out.push('\n');
    }
}

/// `LATENCY DOCTOR`: Redis's report over the events Strata samples
/// (`createLatencyReport`): each event's spikes, average, mean deviation
/// and period, then the advice those events call for.
fn doctor(
    events: &std::collections::BTreeMap<String, Series>,
    threshold: u64,
    slower_than: i64,
    hz: u64,
) -> String {
    if events.is_empty() && threshold == 0 {
        return DISABLED.to_string();
    }
    let now = strata_engine::clock::now_ms() / 1000;
    let mut out = String::new();
    let (mut advices, mut slowlog_enabled, mut slowlog_tuning) = (0, false, false);
    let (mut inspect, mut large, mut scheduler, mut more_hz) = (false, false, false, false);
    for (i, (name, s)) in events.iter().enumerate() {
        if i == 0 {
            out.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let h = s.history();
        let n = h.len() as u64;
        let avg = h.iter().map(|x| x.1).sum::<u64>() / n.max(1);
        let mad = h.iter().map(|x| x.1.abs_diff(avg)).sum::<u64>() / n.max(1);
        let oldest = h.iter().map(|x| x.0).min().unwrap_or(now);
        let period = now.saturating_sub(oldest).max(1);
        out.push_str(&format!(
            "{}. {name}: {n} latency spikes (average {avg}ms, mean deviation {mad}ms, period {:.2} sec). Worst all time event {}ms.\n",
            i + 1,
            period as f64 / n.max(1) as f64,
            s.max
        ));
        match name.as_str() {
            "command" => {
                if slower_than < 0 {
                    slowlog_enabled = true;
                    advices += 1;
                } else if (slower_than / 1000) as u64 > threshold {
                    slowlog_tuning = true;
                    advices += 1;
                }
                inspect = true;
                large = true;
                advices += 3;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                more_hz = true;
                large = true;
                advices += 1;
            }
            _ => {}
        }
    }
    if events.is_empty() && advices == 0 {
        out.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        return out;
    }
    if advices == 0 {
        out.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return out;
    }
    out.push_str("\nI have a few advices for you:\n\n");
    if slowlog_enabled {
        out.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold * 1000));
    }
    if slowlog_tuning {
        out.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.\n", threshold * 1000));
    }
    if inspect {
        out.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
    }
    if scheduler {
        out.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
    }
    if more_hz && hz < 100 {
        out.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
    }
    if large {
        out.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
    }
    out
}
