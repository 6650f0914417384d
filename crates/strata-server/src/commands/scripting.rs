//! EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT: the table's side. Running a
//! script is `crate::session::scripting` (the connection runs it, since a script
//! runs other commands).

use crate::command::{Ctx, Outcome};
use crate::commands::is;
use crate::reply;
use bytes::Bytes;
use strata_protocol::{write_array_len, write_bulk, write_integer, write_simple};

pub fn eval(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    Outcome::Eval
}

/// SCRIPT LOAD | EXISTS | FLUSH | HELP.
pub fn script(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let scripts = &ctx.shared.scripts;
    if is(sub, "load") && args.len() == 3 {
        match scripts.load(&args[2]) {
            Ok(sha) => write_bulk(ctx.out, sha.as_bytes()),
            Err(e) => reply::error(ctx.out, &e),
        }
    } else if is(sub, "exists") && args.len() >= 3 {
        write_array_len(ctx.out, args.len() - 2);
        for sha in &args[2..] {
            write_integer(ctx.out, scripts.exists(sha) as i64);
        }
    } else if is(sub, "flush")
        && (args.len() == 2 || (args.len() == 3 && (is(&args[2], "sync") || is(&args[2], "async"))))
    {
        scripts.flush();
        write_simple(ctx.out, b"OK");
    } else if is(sub, "flush") && args.len() == 3 {
        reply::error(ctx.out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    } else if is(sub, "kill") && args.len() == 2 {
        match scripts.busy.kill() {
            Ok(()) => write_simple(ctx.out, b"OK"),
            Err(e) => reply::error(ctx.out, e),
        }
    } else if is(sub, "help") && args.len() == 2 {
        super::server::help(ctx.out, "SCRIPT", &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Prints this help.",
        ]);
    } else if ["load", "exists", "help", "kill"]
        .iter()
        .any(|s| is(sub, s))
    {
        reply::error(
            ctx.out,
            &format!(
                "ERR wrong number of arguments for 'script|{}' command",
                String::from_utf8_lossy(sub).to_lowercase()
            ),
        );
    } else {
        reply::unknown_subcommand(ctx.out, sub, "script");
    }
    Outcome::Done
}
