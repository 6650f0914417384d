//! COMMAND (COUNT LIST INFO DOCS GETKEYS GETKEYSANDFLAGS HELP), answered
//! from Redis's descriptions of the registry's commands
//! (`registry::describe`).

use super::help;
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::is;
use crate::registry::all;
use crate::registry::describe::{by_name, descriptions, every, getkeys, list, Desc};
use bytes::Bytes;
use strata_protocol::{write_array_len, write_bulk, write_integer, write_map_len, write_null};

pub fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let v = ctx.version();
    let out = &mut *ctx.out;
    let descs_json = descriptions();
    let Some(sub) = args.get(1) else {
        let descs = every(&descs_json);
        write_array_len(out, descs.len());
        for d in descs {
            d.write_info(out, v);
        }
        return Outcome::Done;
    };
    if is(sub, "count") && args.len() == 2 {
        write_integer(out, all().len() as i64);
    } else if is(sub, "info") {
        if args.len() == 2 {
            let descs = every(&descs_json);
            write_array_len(out, descs.len());
            for d in descs {
                d.write_info(out, v);
            }
        } else {
            write_array_len(out, args.len() - 2);
            for n in &args[2..] {
                match by_name(&descs_json, n) {
                    Some(d) => d.write_info(out, v),
                    None => write_null(out, v),
                }
            }
        }
    } else if is(sub, "docs") {
        let descs: Vec<Desc<'_>> = if args.len() > 2 {
            args[2..]
                .iter()
                .filter_map(|n| by_name(&descs_json, n))
                .collect()
        } else {
            every(&descs_json)
        };
        write_map_len(out, v, descs.len());
        for d in descs {
            write_bulk(out, d.name.as_bytes());
            d.write_docs(out, v);
        }
    } else if is(sub, "list") {
        match list(&descs_json, &args[2..]) {
            Some(names) => {
                write_array_len(out, names.len());
                for n in names {
                    write_bulk(out, n.as_bytes());
                }
            }
            None => reply::error(out, reply::SYNTAX),
        }
    } else if (is(sub, "getkeys") || is(sub, "getkeysandflags")) && args.len() >= 3 {
        getkeys(out, &descs_json, &args[2..], is(sub, "getkeysandflags"), v);
    } else if is(sub, "help") && args.len() == 2 {
        help(
            out,
            "COMMAND",
            &[
                "(no subcommand)",
                "    Return details about all Redis commands.",
                "COUNT",
                "    Return the total number of commands in this Redis server.",
                "LIST",
                "    Return a list of all commands in this Redis server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple Redis commands.",
                "    If no command names are given, documentation details for all",
                "    commands are returned.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple Redis commands.",
                "    If no command names are given, documentation details for all",
                "    commands are returned.",
                "GETKEYS <full-command>",
                "    Return the keys from a full Redis command.",
                "GETKEYSANDFLAGS <full-command>",
                "    Return the keys and the access flags from a full Redis command.",
                "HELP",
                "    Prints this help.",
            ],
        );
    } else {
        reply::unknown_subcommand(out, sub, "command");
    }
    Outcome::Done
}
