//! EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO SCRIPT FUNCTION: the
//! table's side. Running a
//! script is `crate::exec::scripting` (the connection runs it, since a script
//! runs other commands).

use crate::base::reply;
use crate::command::{cmd, Command};
use crate::command::{Ctx, Outcome};
use crate::commands::is;
use crate::registry::flags::*;
use crate::registry::{Role, ScriptBy};
use crate::services::scripts::functions::Policy;
use crate::services::scripts::FLAGS;
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_set_len,
    write_simple,
};

pub fn eval(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    Outcome::Eval
}

/// SCRIPT LOAD | EXISTS | FLUSH | HELP.
pub fn script(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = &args[1];
    let scripts = ctx.scripts();
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
        match scripts.busy.kill(false) {
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

/// FUNCTION LOAD | DELETE | LIST | FLUSH | DUMP | RESTORE | STATS | KILL
/// | HELP (`services::scripts::functions`).
pub fn function(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let n = args.len();
    let arity_ok = match sub.as_str() {
        "load" => n >= 3,
        "delete" => n == 3,
        "list" => true,
        // Redis's own checks of these (`addReplySubcommandSyntaxError`).
        "flush" | "restore" if n > if sub == "flush" { 3 } else { 4 } => {
            let typed = String::from_utf8_lossy(&args[1]);
            reply::error(
                ctx.out,
                &format!("ERR unknown subcommand or wrong number of arguments for '{typed}'. Try FUNCTION HELP."),
            );
            return Outcome::Done;
        }
        "restore" => n >= 3,
        "flush" => true,
        "dump" | "stats" | "kill" | "help" => n == 2,
        _ => {
            reply::unknown_subcommand(ctx.out, &args[1], "function");
            return Outcome::Done;
        }
    };
    if !arity_ok {
        reply::error(
            ctx.out,
            &format!("ERR wrong number of arguments for 'function|{sub}' command"),
        );
        return Outcome::Done;
    }
    if let Err(e) = function_sub(ctx, args, &sub) {
        reply::error(ctx.out, &e);
    }
    Outcome::Done
}

fn function_sub(ctx: &mut Ctx<'_>, args: &[Bytes], sub: &str) -> Result<(), String> {
    let n = args.len();
    let (scripts, engine) = (ctx.scripts(), ctx.engine());
    let v = ctx.version();
    match sub {
        "load" => (|| {
            let mut replace = false;
            for a in &args[2..n - 1] {
                if !is(a, "replace") {
                    return Err(format!(
                        "ERR Unknown option given: {}",
                        String::from_utf8_lossy(a)
                    ));
                }
                replace = true;
            }
            let code = args[n - 1].clone();
            let name = scripts.with_libraries(engine, |libs, vm| {
                libs.load(vm, code, replace).map(|name| (name, true))
            })?;
            write_bulk(ctx.out, name.as_bytes());
            Ok(())
        })(),
        "delete" => {
            let name = String::from_utf8_lossy(&args[2]).to_string();
            scripts
                .with_libraries(engine, |libs, _| match libs.remove(&name) {
                    true => Ok(((), true)),
                    false => Err("ERR Library not found".to_string()),
                })
                .map(|()| write_simple(ctx.out, b"OK"))
        }
        "flush" => {
            if n == 3 && !is(&args[2], "sync") && !is(&args[2], "async") {
                Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into())
            } else {
                scripts.flush_functions(engine);
                write_simple(ctx.out, b"OK");
                Ok(())
            }
        }
        "list" => list(ctx, args),
        "dump" => {
            let dump: Vec<u8> =
                scripts.with_libraries(engine, |libs, _| Ok((libs.dump(), false)))?;
            write_bulk(ctx.out, &dump);
            Ok(())
        }
        "restore" => (|| {
            let policy = match args.get(3) {
                None => Policy::Append,
                Some(p) if n == 4 && is(p, "flush") => Policy::Flush,
                Some(p) if n == 4 && is(p, "append") => Policy::Append,
                Some(p) if n == 4 && is(p, "replace") => Policy::Replace,
                Some(_) => return Err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.".into()),
            };
            scripts.with_libraries(engine, |libs, vm| {
                libs.restore(vm, &args[2], policy).map(|()| ((), true))
            })?;
            write_simple(ctx.out, b"OK");
            Ok(())
        })(),
        "stats" => {
            // Not through the cache while a script holds it.
            if !scripts.busy.running() {
                scripts.with_libraries(engine, |_, _| Ok(((), false)))?;
            }
            let (libs, fns) = (
                scripts.counts.libraries.load(Relaxed),
                scripts.counts.functions.load(Relaxed),
            );
            let out = &mut *ctx.out;
            write_map_len(out, v, 2);
            write_bulk(out, b"running_script");
            match scripts.busy.stats() {
                None => write_null(out, v),
                Some((name, command, ms)) => {
                    write_map_len(out, v, 3);
                    write_bulk(out, b"name");
                    write_bulk(out, name.as_bytes());
                    write_bulk(out, b"command");
                    write_array_len(out, command.len());
                    for a in &command {
                        write_bulk(out, a);
                    }
                    write_bulk(out, b"duration_ms");
                    write_integer(out, ms as i64);
                }
            }
            write_bulk(out, b"engines");
            write_map_len(out, v, 1);
            write_bulk(out, b"LUA");
            write_map_len(out, v, 2);
            write_bulk(out, b"libraries_count");
            write_integer(out, libs as i64);
            write_bulk(out, b"functions_count");
            write_integer(out, fns as i64);
            Ok(())
        }
        "kill" => scripts
            .busy
            .kill(true)
            .map(|()| write_simple(ctx.out, b"OK"))
            .map_err(String::from),
        _ => {
            super::server::help(ctx.out, "FUNCTION", FUNCTION_HELP);
            Ok(())
        }
    }
}

/// `FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]`.
fn list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Result<(), String> {
    let (mut code, mut pattern) = (false, None);
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if is(a, "withcode") && !code {
            code = true;
        } else if is(a, "libraryname") && pattern.is_none() {
            i += 1;
            pattern = Some(
                args.get(i)
                    .ok_or("ERR library name argument was not given")?
                    .clone(),
            );
        } else {
            return Err(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            ));
        }
        i += 1;
    }
    let (v, scripts, engine) = (ctx.version(), ctx.scripts(), ctx.engine());
    let out = &mut *ctx.out;
    scripts.with_libraries(engine, |libs, _| {
        let chosen: Vec<_> = libs
            .libs
            .iter()
            .filter(|(name, _)| {
                pattern
                    .as_ref()
                    .is_none_or(|p| crate::base::glob::glob_match(p, name.as_bytes(), true))
            })
            .collect();
        write_array_len(out, chosen.len());
        for (name, lib) in chosen {
            write_map_len(out, v, 3 + code as usize);
            write_bulk(out, b"library_name");
            write_bulk(out, name.as_bytes());
            write_bulk(out, b"engine");
            write_bulk(out, b"LUA");
            write_bulk(out, b"functions");
            write_array_len(out, lib.functions.len());
            for f in &lib.functions {
                write_map_len(out, v, 3);
                write_bulk(out, b"name");
                write_bulk(out, f.name.as_bytes());
                write_bulk(out, b"description");
                match &f.description {
                    Some(d) => write_bulk(out, d),
                    None => write_null(out, v),
                }
                write_bulk(out, b"flags");
                let flags: Vec<&str> = FLAGS
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| f.flags & (1 << i) != 0)
                    .map(|(_, n)| *n)
                    .collect();
                write_set_len(out, v, flags.len());
                for fl in flags {
                    write_simple(out, fl.as_bytes());
                }
            }
            if code {
                write_bulk(out, b"library_code");
                write_bulk(out, &lib.code);
            }
        }
        Ok(((), false))
    })
}

const FUNCTION_HELP: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

/// This family's commands (`registry`; `commands::install`).
pub const COMMANDS: &[Command] = &[
    cmd(
        "eval",
        -3,
        SCRIPT,
        K0,
        "scripting",
        "Executes a server-side Lua script.",
        eval,
    )
    .role(Role::Script(ScriptBy::Body)),
    cmd(
        "evalsha",
        -3,
        SCRIPT,
        K0,
        "scripting",
        "Executes a server-side Lua script by SHA1 digest.",
        eval,
    )
    .role(Role::Script(ScriptBy::Sha)),
    cmd(
        "eval_ro",
        -3,
        SCRIPT_RO,
        K0,
        "scripting",
        "Executes a read-only server-side Lua script.",
        eval,
    )
    .role(Role::Script(ScriptBy::Body)),
    cmd(
        "evalsha_ro",
        -3,
        SCRIPT_RO,
        K0,
        "scripting",
        "Executes a read-only server-side Lua script by SHA1 digest.",
        eval,
    )
    .role(Role::Script(ScriptBy::Sha)),
    cmd(
        "script",
        -2,
        &["noscript"],
        K0,
        "scripting",
        "A container for Lua scripts management commands.",
        script,
    ),
    cmd(
        "fcall",
        -3,
        SCRIPT,
        K0,
        "scripting",
        "Invokes a function.",
        eval,
    )
    .role(Role::Script(ScriptBy::Function)),
    cmd(
        "fcall_ro",
        -3,
        SCRIPT_RO,
        K0,
        "scripting",
        "Invokes a read-only function.",
        eval,
    )
    .role(Role::Script(ScriptBy::Function)),
    cmd(
        "function",
        -2,
        &["noscript", "write"],
        K0,
        "scripting",
        "A container for function commands.",
        function,
    ),
];
