//! COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of a command by its key
//! specs (`getKeysUsingKeySpecs`), or by Redis's own procedures where the
//! specs cannot tell (SORT's STORE, SET's GET, BITFIELD's writes).

use super::desc::{begin, find, key_flags, Begin, Desc, Find};
use crate::base::args::{is, parse_i64};
use crate::base::reply;
use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};
use strata_protocol::{write_array_len, write_bulk, write_set_len, write_simple, Version};

impl Desc<'_> {
    /// Whether the command has a key spec that names keys, or a key
    /// procedure (`doesCommandHaveKeys`).
    pub(super) fn has_keys(&self) -> bool {
        self.specs()
            .iter()
            .any(|s| !key_flags(s).contains(&"not_key"))
            || matches!(self.name.as_str(), "sort" | "sort_ro" | "set" | "bitfield")
    }

    /// The positions and flags of the keys in `args` (the command and its
    /// arguments): by the key specs, or by Redis's procedure for the
    /// commands whose specs cannot say; None if the arguments are invalid.
    pub(super) fn keys(&self, args: &[Bytes]) -> Option<Vec<(usize, Vec<&'static str>)>> {
        match self.name.as_str() {
            "sort" => return Some(sort_keys(args)),
            "sort_ro" => return Some(vec![(1, vec!["RO", "access"])]),
            "set" => {
                let get = args[3.min(args.len())..].iter().any(|a| is(a, "get"));
                let f = if get {
                    vec!["RW", "access", "update"]
                } else {
                    vec!["OW", "update"]
                };
                return Some(vec![(1, f)]);
            }
            "bitfield" => return Some(vec![(1, bitfield_flags(args))]),
            _ => {}
        }
        let argc = args.len() as i64;
        let mut keys = Vec::new();
        for s in self.specs() {
            let flags = key_flags(s);
            if flags.contains(&"not_key") {
                continue;
            }
            let first = match begin(s) {
                Begin::Index(p) => p,
                Begin::Keyword(word, from) => {
                    let start = if from > 0 { from } else { argc + from };
                    let end = if from > 0 { argc - 1 } else { 1 };
                    let mut i = start;
                    let mut found = 0;
                    loop {
                        if i == end || i >= argc || i < 1 {
                            // (the end index itself is not examined, as in Redis)
                            break;
                        }
                        if is(&args[i as usize], &word) {
                            found = i + 1;
                            break;
                        }
                        i = if start <= end { i + 1 } else { i - 1 };
                    }
                    if found == 0 {
                        continue;
                    }
                    found
                }
                Begin::Unknown => return None,
            };
            let (first, last, step) = match find(s) {
                Find::Range { last, step, limit } => {
                    let l = if last >= 0 {
                        first + last
                    } else if limit == 0 {
                        argc + last
                    } else {
                        first + ((argc - first) / limit + last)
                    };
                    (first, l, step)
                }
                Find::Keynum {
                    idx,
                    first: fk,
                    step,
                } => {
                    if idx >= argc {
                        return None;
                    }
                    let n = args
                        .get((first + idx) as usize)
                        .and_then(|a| parse_i64(a))
                        .filter(|n| *n >= 0)?;
                    (first + fk, first + fk + n - 1, step)
                }
                Find::Unknown => return None,
            };
            if last >= argc || last < first || first >= argc {
                return None;
            }
            let mut i = first;
            while i <= last {
                if i < argc {
                    keys.push((i as usize, flags.clone()));
                }
                i += step.max(1);
            }
            if flags.contains(&"incomplete") {
                return None;
            }
        }
        Some(keys)
    }
}

/// `sortGetKeys`: the key, and the last STORE's key.
fn sort_keys(args: &[Bytes]) -> Vec<(usize, Vec<&'static str>)> {
    let mut keys = vec![(1, vec!["RO", "access"])];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if is(a, "limit") {
            i += 2;
        } else if is(a, "get") || is(a, "by") {
            i += 1;
        } else if is(a, "store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    if let Some(p) = store {
        keys.push((p, vec!["OW", "update"]));
    }
    keys
}

/// `bitfieldGetKeys`'s flags: read-only unless a SET or INCRBY (or a
/// syntax error) comes.
fn bitfield_flags(args: &[Bytes]) -> Vec<&'static str> {
    let mut i = 2;
    while i < args.len() {
        let rem = args.len() - i - 1;
        let a = &args[i];
        if is(a, "get") && rem >= 2 {
            i += 3;
        } else if (is(a, "set") || is(a, "incrby")) && rem >= 3 {
            return vec!["RW", "access", "update"];
        } else if is(a, "overflow") && rem >= 1 {
            i += 2;
        } else {
            return vec!["RW", "access", "update"];
        }
    }
    vec!["RO", "access"]
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS (`getKeysSubcommandImpl`).
pub fn getkeys(
    out: &mut BytesMut,
    all: &Map<String, Value>,
    cmd: &[Bytes],
    with_flags: bool,
    v: Version,
) {
    let Some(d) = super::lookup_desc(all, cmd) else {
        return reply::error(out, "ERR Invalid command specified");
    };
    if !d.has_keys() {
        return reply::error(out, "ERR The command has no key arguments");
    }
    let a = d.arity();
    let n = cmd.len() as i64;
    if (a > 0 && a != n) || n < -a {
        return reply::error(out, "ERR Invalid number of arguments specified for command");
    }
    match d.keys(cmd) {
        Some(keys) if !keys.is_empty() => {
            write_array_len(out, keys.len());
            for (pos, flags) in keys {
                if with_flags {
                    write_array_len(out, 2);
                    write_bulk(out, &cmd[pos]);
                    write_set_len(out, v, flags.len());
                    for f in flags {
                        write_simple(out, f.as_bytes());
                    }
                } else {
                    write_bulk(out, &cmd[pos]);
                }
            }
        }
        _ if d.has_flag("no_mandatory_keys") => write_array_len(out, 0),
        _ => reply::error(out, "ERR Invalid arguments specified for command"),
    }
}
