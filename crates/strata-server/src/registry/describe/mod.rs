//! What Redis 7.0's own command descriptions say of the registry's
//! commands, and COMMAND's replies from them (the COMMAND command itself
//! is `commands::server::command`): `redis_commands.json`, made
//! by `tools/redis_commands.py` from Redis's `src/commands/*.json` for the
//! commands Strata serves (and, of its containers, the subcommands it
//! serves). So flags, ACL categories, tips, key specs, the legacy key
//! range, arguments and history are Redis's, and GETKEYS finds keys by the
//! key specs as Redis does (`getKeysUsingKeySpecs`), with Redis's own
//! procedures where a spec cannot (SORT's STORE, SET's and BITFIELD's
//! variable flags).
//!
//! Invariant (tested): every command of the table has a description whose
//! arity is the table's, and whose legacy key range is the table's.
//!
//! Rooms: this file is the descriptions file, subcommands and full names; `desc`
//! one description (flags, ACL categories, key specs, the legacy range);
//! `render` COMMAND INFO's and DOCS's replies; `keys` GETKEYS; `acl` what
//! ACL rules need of the descriptions (ids, categories, keys' permissions).

mod acl;
mod desc;
mod keys;
mod render;

pub use acl::{acl_entries, acl_keys, AclEntry, ACL_CATEGORIES, KEY_READ, KEY_WRITE};
pub use keys::getkeys;

use crate::base::args::is;
use crate::base::reply;
use crate::registry::{all, lookup};
use bytes::Bytes;
pub use desc::Desc;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Full name (`xgroup|create`) -> Redis's description. Parsed for each
/// COMMAND call and dropped after it: held, the parsed tree would count
/// a few MB against `maxmemory-ram` (RAM is measured by the allocator).
pub fn descriptions() -> Map<String, Value> {
    serde_json::from_str(include_str!("../redis_commands.json")).unwrap_or_default()
}

/// What dispatch needs of a subcommand Redis describes.
struct Sub {
    arity: i64,
    /// Flagged `denyoom` (`function|load`): refused under the memory
    /// limit as such commands are.
    denyoom: bool,
    /// Flagged `noscript` (`cluster|reset`): refused in scripts.
    noscript: bool,
    /// Flagged `allow_busy` (`script|kill`): runs while a script is busy.
    allow_busy: bool,
}

/// The subcommands Redis describes, by full name (`client|kill`), kept (a
/// few KB) for the check every container command gets.
fn subcommands() -> &'static HashMap<String, Sub> {
    static S: OnceLock<HashMap<String, Sub>> = OnceLock::new();
    S.get_or_init(|| {
        descriptions()
            .iter()
            .filter(|(k, _)| k.contains('|'))
            .filter_map(|(k, v)| {
                let flagged = |name: &str| {
                    v.get("command_flags")
                        .and_then(Value::as_array)
                        .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(name)))
                };
                let arity = v.get("arity")?.as_i64()?;
                Some((
                    k.clone(),
                    Sub {
                        arity,
                        denyoom: flagged("DENYOOM"),
                        noscript: flagged("NOSCRIPT"),
                        allow_busy: flagged("ALLOW_BUSY"),
                    },
                ))
            })
            .collect()
    })
}

/// The full name (`client|kill`) of the subcommand `args` names, if
/// `name` is a container and there is a second argument.
fn sub_name(name: &str, args: &[Bytes]) -> Option<String> {
    let sub = args.get(1).filter(|_| CONTAINERS.contains(&name))?;
    Some(format!(
        "{name}|{}",
        String::from_utf8_lossy(sub).to_ascii_lowercase()
    ))
}

/// Whether the command `args` (of the container `name`, if it is one) is
/// a subcommand Redis flags `denyoom`.
pub fn sub_is_denyoom(name: &str, args: &[Bytes]) -> bool {
    described_sub(name, args).is_some_and(|(_, s)| s.denyoom)
}

/// Whether the command `args` (of the container `name`, if it is one) is
/// a subcommand Redis flags `allow_busy` (SCRIPT KILL, FUNCTION KILL ...).
pub fn sub_allows_busy(name: &str, args: &[Bytes]) -> bool {
    described_sub(name, args).is_some_and(|(_, s)| s.allow_busy)
}

/// Whether the command `args` (of the container `name`, if it is one) is
/// a subcommand Redis flags `noscript`.
pub fn sub_is_noscript(name: &str, args: &[Bytes]) -> bool {
    described_sub(name, args).is_some_and(|(_, s)| s.noscript)
}

/// The subcommand Redis describes that `args` names (of the container
/// `name`, if it is one), with its full name.
fn described_sub(name: &str, args: &[Bytes]) -> Option<(&'static str, &'static Sub)> {
    let full = sub_name(name, args)?;
    subcommands()
        .get_key_value(&full)
        .map(|(k, s)| (k.as_str(), s))
}

/// Builds the subcommand table now (at start: parsing the descriptions
/// takes a few MB for a moment, which should not count against a client's
/// write later).
pub fn init() {
    subcommands();
}

/// The description of the command `args` names, as `lookupCommand` finds
/// it: a container's subcommand when there is a second argument.
pub(super) fn lookup_desc<'a>(all: &'a Map<String, Value>, args: &[Bytes]) -> Option<Desc<'a>> {
    let name = String::from_utf8_lossy(args.first()?).to_ascii_lowercase();
    lookup(name.as_bytes())?;
    let base = Desc::get(all, &name)?;
    if args.len() == 1 || base.subcommands().is_empty() {
        return Some(base);
    }
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    Desc::get(all, &format!("{name}|{sub}"))
}

/// Checks the arity of a container's subcommand that Redis describes
/// (`client|kill`: -3 ...), as Redis's command table does before the
/// command runs or is queued: the error's text if it fails. A subcommand
/// Redis 7.0 does not describe is unknown for XGROUP and XINFO, else left
/// to the handler (Strata's own, such as CLIENT NO-TOUCH, and unknown
/// ones).
pub fn subcommand_arity(name: &str, args: &[Bytes]) -> Result<(), String> {
    let Some(full) = sub_name(name, args) else {
        return Ok(());
    };
    let Some(a) = subcommands().get(&full).map(|s| s.arity) else {
        // Where Strata serves exactly Redis's subcommands, any other is
        // unknown here already (as Redis's table finds it).
        if STRICT_CONTAINERS.contains(&name) {
            return Err(reply::unknown_subcommand_text(&args[1], name));
        }
        return Ok(());
    };
    let n = args.len() as i64;
    if (a > 0 && a != n) || n < -a {
        return Err(reply::arity_text(&full));
    }
    Ok(())
}

/// The name CLIENT LIST shows for a command (Redis's `fullname`):
/// `client|list` for a subcommand Redis describes, else the command's.
pub fn full_name(name: &'static str, args: &[Bytes]) -> &'static str {
    described_sub(name, args).map_or(name, |(full, _)| full)
}

/// The containers (commands with subcommands) Strata serves.
const CONTAINERS: &[&str] = &[
    "acl", "client", "cluster", "command", "config", "function", "latency", "memory", "object",
    "pubsub", "script", "slowlog", "xgroup", "xinfo",
];

/// The containers whose subcommands are exactly those Redis describes.
const STRICT_CONTAINERS: &[&str] = &["acl", "cluster", "xgroup", "xinfo"];

/// A description by the name COMMAND INFO / DOCS are given (`get` or
/// `xgroup|create`).
pub fn by_name<'a>(all: &'a Map<String, Value>, n: &[u8]) -> Option<Desc<'a>> {
    let name = String::from_utf8_lossy(n).to_ascii_lowercase();
    let top = name.split('|').next().unwrap_or_default();
    lookup(top.as_bytes())?;
    Desc::get(all, &name)
}

pub fn every(descs: &Map<String, Value>) -> Vec<Desc<'_>> {
    all()
        .iter()
        .filter_map(|c| Desc::get(descs, c.name))
        .collect()
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN pattern]`
/// (`commandListCommand`): every command and each of its subcommands, by
/// full name, those the filter keeps (a subcommand is looked at on its
/// own: `config|*re*` finds `config|resetstat`); None for a syntax error.
pub fn list(all: &Map<String, Value>, opts: &[Bytes]) -> Option<Vec<String>> {
    let filter = match opts {
        [] => None,
        [f, kind, arg] if is(f, "filterby") => {
            let kind = String::from_utf8_lossy(kind).to_ascii_lowercase();
            if !["module", "aclcat", "pattern"].contains(&kind.as_str()) {
                return None;
            }
            Some((kind, arg.clone()))
        }
        _ => return None,
    };
    let keep = |d: &Desc<'_>| match &filter {
        None => true,
        // No modules here: a module filter keeps nothing.
        Some((k, _)) if k == "module" => false,
        Some((k, cat)) if k == "aclcat" => {
            let cat = String::from_utf8_lossy(cat).to_ascii_lowercase();
            d.categories().contains(&cat.as_str())
        }
        Some((_, pattern)) => crate::base::glob::glob_match(pattern, d.name.as_bytes(), true),
    };
    let mut names = Vec::new();
    for d in every(all) {
        if keep(&d) {
            names.push(d.name.to_string());
        }
        for sub in d.subcommands() {
            if keep(&sub) {
                names.push(sub.name.to_string());
            }
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command of the table has Redis's description, with the same
    /// arity and the same legacy key range.
    #[test]
    fn the_table_agrees_with_redis() {
        crate::commands::install();
        let descs = descriptions();
        for c in all() {
            let d = Desc::get(&descs, c.name)
                .unwrap_or_else(|| panic!("{} has no description", c.name));
            assert_eq!(d.arity(), c.arity as i64, "{}: arity", c.name);
            let ((f, l, s), _) = d.legacy_range();
            assert_eq!(
                (f, l, s),
                (c.keys.0 as i64, c.keys.1 as i64, c.keys.2 as i64),
                "{}: keys",
                c.name
            );
        }
    }

    /// The table's flags are Redis's (what COMMAND INFO shows from the
    /// description): the server acts on the table's, clients read Redis's.
    #[test]
    fn the_tables_flags_are_redis_s() {
        crate::commands::install();
        let descs = descriptions();
        // Where the table differs on purpose: a container's entry is the
        // gate of all its subcommands (Redis flags each subcommand); and
        // what Strata's scripts and busy-script handling do not run yet.
        let differs: &[(&str, &str)] = &[
            (
                "blmpop",
                "noscript: scripts do not run blocking commands yet",
            ),
            (
                "bzmpop",
                "noscript: scripts do not run blocking commands yet",
            ),
        ];
        let mut wrong = Vec::new();
        for c in all() {
            let d = Desc::get(&descs, c.name).unwrap();
            if CONTAINERS.contains(&c.name) || differs.iter().any(|(n, _)| *n == c.name) {
                continue;
            }
            let redis: Vec<&str> = d.flags();
            let ours: Vec<&str> = c
                .flags
                .names()
                .filter(|n| {
                    crate::registry::flags::FLAG_NAMES[..crate::registry::flags::FLAGS_PRINTED]
                        .contains(n)
                })
                .collect();
            if redis != ours {
                wrong.push(format!("{}: table {ours:?}, Redis {redis:?}", c.name));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
