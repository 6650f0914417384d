//! LATENCY (the latency monitor is not built: LATEST, HISTORY, GRAPH,
//! RESET and DOCTOR answer as Redis does with it disabled, its default;
//! HISTOGRAM replies from the per-command histograms of
//! `metrics::commands`) and WAIT (no replicas: always 0).

use crate::command::{Ctx, Outcome};
use crate::commands::{is, parse_i64};
use crate::reply;
use bytes::Bytes;
use strata_protocol::{write_array_len, write_bulk, write_integer, write_map_len, write_verbatim};

const DOCTOR: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";

pub fn latency(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let n = args.len();
    let v = ctx.version();
    if (is(sub, "latest") && n == 2) || (is(sub, "history") && n == 3) {
        write_array_len(ctx.out, 0);
    } else if is(sub, "graph") && n == 3 {
        reply::error(
            ctx.out,
            &format!(
                "ERR No samples available for event '{}'",
                String::from_utf8_lossy(&args[2])
            ),
        );
    } else if is(sub, "reset") {
        write_integer(ctx.out, 0);
    } else if is(sub, "doctor") && n == 2 {
        write_verbatim(ctx.out, v, b"txt", DOCTOR.as_bytes());
    } else if is(sub, "histogram") {
        let all = ctx.shared.cmdstats.figures();
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
            None => reply::error(ctx.out, "ERR timeout is not an integer or out of range"),
            Some(t) if t < 0 => reply::error(ctx.out, "ERR timeout is negative"),
            Some(_) => write_integer(ctx.out, 0),
        }
    }
    Outcome::Done
}
