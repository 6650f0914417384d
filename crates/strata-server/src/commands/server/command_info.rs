//! COMMAND (COUNT LIST INFO DOCS GETKEYS GETKEYSANDFLAGS HELP), answered
//! from Redis 7.0's own command descriptions: `redis_commands.json`, made
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

use super::help;
use crate::command::{Ctx, Outcome};
use crate::commands::table::{lookup, COMMANDS};
use crate::commands::{is, parse_i64};
use crate::reply;
use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_null, write_set_len,
    write_simple, Version,
};

/// Full name (`xgroup|create`) -> Redis's description. Parsed for each
/// COMMAND call and dropped after it: held, the parsed tree would count
/// a few MB against `maxmemory-ram` (RAM is measured by the allocator).
fn descriptions() -> Map<String, Value> {
    serde_json::from_str(include_str!("../redis_commands.json")).unwrap_or_default()
}

/// The arities of the subcommands Redis describes (`client|kill` -> -3),
/// kept (a few KB) for the check every container command gets.
fn sub_arities() -> &'static HashMap<String, i64> {
    static A: OnceLock<HashMap<String, i64>> = OnceLock::new();
    A.get_or_init(|| {
        descriptions()
            .iter()
            .filter(|(k, _)| k.contains('|'))
            .filter_map(|(k, v)| Some((k.clone(), v.get("arity")?.as_i64()?)))
            .collect()
    })
}

/// Builds the subcommand arities now (at start: parsing the descriptions
/// takes a few MB for a moment, which should not count against a client's
/// write later).
pub fn init() {
    sub_arities();
}

/// One command's description, by full name.
pub struct Desc<'a> {
    name: String,
    d: &'a Map<String, Value>,
    all: &'a Map<String, Value>,
}

fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Command flags in the order Redis prints them (`addReplyFlagsForCommand`;
/// `movablekeys` is computed).
const FLAG_ORDER: &[&str] = &[
    "write",
    "readonly",
    "denyoom",
    "module",
    "admin",
    "pubsub",
    "noscript",
    "blocking",
    "loading",
    "stale",
    "skip_monitor",
    "skip_slowlog",
    "asking",
    "fast",
    "no_auth",
    "no_mandatory_keys",
    "no_async_loading",
    "no_multi",
    "movablekeys",
    "allow_busy",
];

/// ACL categories in Redis's order (`ACLCommandCategories`).
const CATEGORY_ORDER: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Key-spec flags in Redis's order (`addReplyFlagsForKeyArgs`).
const KEY_FLAG_ORDER: &[&str] = &[
    "RO",
    "RW",
    "OW",
    "RM",
    "access",
    "update",
    "insert",
    "delete",
    "not_key",
    "incomplete",
    "variable_flags",
];

/// A key spec's flags as Redis prints them (RO RW OW RM upper case, the
/// others lower case).
fn key_flags(spec: &Value) -> Vec<&'static str> {
    let have: Vec<String> = strs(spec.get("flags"))
        .iter()
        .map(|f| f.to_ascii_lowercase())
        .collect();
    KEY_FLAG_ORDER
        .iter()
        .copied()
        .filter(|f| have.iter().any(|h| h.eq_ignore_ascii_case(f)))
        .collect()
}

/// Where a key spec's search begins.
enum Begin {
    Index(i64),
    Keyword(String, i64),
    Unknown,
}

/// How a key spec finds its keys.
enum Find {
    Range { last: i64, step: i64, limit: i64 },
    Keynum { idx: i64, first: i64, step: i64 },
    Unknown,
}

fn int(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

fn begin(spec: &Value) -> Begin {
    let b = spec.get("begin_search");
    if let Some(i) = b.and_then(|b| b.get("index")) {
        Begin::Index(int(i, "pos"))
    } else if let Some(k) = b.and_then(|b| b.get("keyword")) {
        let word = k.get("keyword").and_then(Value::as_str).unwrap_or_default();
        Begin::Keyword(word.to_string(), int(k, "startfrom"))
    } else {
        Begin::Unknown
    }
}

fn find(spec: &Value) -> Find {
    let f = spec.get("find_keys");
    if let Some(r) = f.and_then(|f| f.get("range")) {
        Find::Range {
            last: int(r, "lastkey"),
            step: int(r, "step"),
            limit: int(r, "limit"),
        }
    } else if let Some(k) = f.and_then(|f| f.get("keynum")) {
        Find::Keynum {
            idx: int(k, "keynumidx"),
            first: int(k, "firstkey"),
            step: int(k, "step"),
        }
    } else {
        Find::Unknown
    }
}

impl<'a> Desc<'a> {
    pub fn get(all: &'a Map<String, Value>, full: &str) -> Option<Desc<'a>> {
        let d = all.get(full)?.as_object()?;
        Some(Desc {
            name: full.to_string(),
            d,
            all,
        })
    }

    pub fn arity(&self) -> i64 {
        self.d.get("arity").and_then(Value::as_i64).unwrap_or(0)
    }

    fn specs(&self) -> &[Value] {
        self.d
            .get("key_specs")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    fn json_flags(&self) -> Vec<String> {
        strs(self.d.get("command_flags"))
            .iter()
            .map(|f| f.to_ascii_lowercase())
            .collect()
    }

    fn has_flag(&self, f: &str) -> bool {
        self.json_flags().iter().any(|x| x == f)
    }

    /// The legacy (first, last, step) and whether the keys move
    /// (`populateCommandLegacyRangeSpec`).
    pub fn legacy_range(&self) -> ((i64, i64, i64), bool) {
        let specs = self.specs();
        let incomplete = |s: &Value| key_flags(s).contains(&"incomplete");
        if specs.is_empty() {
            return ((0, 0, 0), false);
        }
        if let [s] = specs {
            if let (Begin::Index(pos), Find::Range { last, step, .. }) = (begin(s), find(s)) {
                let last_abs = if last >= 0 { last + pos } else { last };
                return ((pos, last_abs, step), incomplete(s));
            }
        }
        let mut movable = false;
        let (mut first, mut last, mut prev_last) = (i64::MAX, 0i64, 0i64);
        for s in specs {
            let (Begin::Index(pos), Find::Range { last: l, step, .. }) = (begin(s), find(s)) else {
                movable = true;
                continue;
            };
            if step != 1 || (prev_last != 0 && prev_last != pos - 1) {
                movable = true;
                continue;
            }
            if incomplete(s) {
                movable = true;
            }
            first = first.min(pos);
            let abs = if l >= 0 { l + pos } else { l };
            // Unsigned comparison, as Redis (a negative lastkey wins).
            if (abs as u32) > (last as u32) {
                last = abs;
            }
            prev_last = last;
        }
        if first == i64::MAX {
            return ((0, 0, 0), true);
        }
        let rel = if last < 0 { last } else { last - first };
        let last_abs = if rel >= 0 { rel + first } else { rel };
        ((first, last_abs, 1), movable)
    }

    fn flags(&self) -> Vec<&'static str> {
        let have = self.json_flags();
        let movable = self.legacy_range().1;
        FLAG_ORDER
            .iter()
            .copied()
            .filter(|f| (*f == "movablekeys" && movable) || have.iter().any(|h| h == f))
            .collect()
    }

    /// ACL categories: the description's and those its flags imply
    /// (`setImplicitACLCategories`).
    fn categories(&self) -> Vec<&'static str> {
        let mut have: Vec<String> = strs(self.d.get("acl_categories"))
            .iter()
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let flags = self.json_flags();
        let f = |x: &str| flags.iter().any(|y| y == x);
        let mut add = |c: &str| have.push(c.to_string());
        if f("write") {
            add("write");
        }
        let scripting = strs(self.d.get("acl_categories")).contains(&"SCRIPTING");
        if f("readonly") && !scripting {
            add("read");
        }
        if f("admin") {
            add("admin");
            add("dangerous");
        }
        if f("pubsub") {
            add("pubsub");
        }
        if f("fast") {
            add("fast");
        }
        if f("blocking") {
            add("blocking");
        }
        if !have.iter().any(|c| c == "fast") {
            have.push("slow".into());
        }
        CATEGORY_ORDER
            .iter()
            .copied()
            .filter(|c| have.iter().any(|h| h == c))
            .collect()
    }

    fn subcommands(&self) -> Vec<Desc<'a>> {
        let prefix = format!("{}|", self.name);
        self.all
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .filter_map(|k| Desc::get(self.all, k))
            .collect()
    }

    fn str_field(&self, k: &str) -> Option<&'a str> {
        self.d
            .get(k)
            .and_then(Value::as_str)
            .filter(|x| !x.is_empty())
    }

    /// COMMAND INFO's entry (`addReplyCommandInfo`).
    fn write_info(&self, out: &mut BytesMut, v: Version) {
        let ((first, last, step), _) = self.legacy_range();
        write_array_len(out, 10);
        write_bulk(out, self.name.as_bytes());
        write_integer(out, self.arity());
        let flags = self.flags();
        write_set_len(out, v, flags.len());
        for f in flags {
            write_simple(out, f.as_bytes());
        }
        write_integer(out, first);
        write_integer(out, last);
        write_integer(out, step);
        let cats = self.categories();
        write_set_len(out, v, cats.len());
        for c in cats {
            write_simple(out, format!("@{c}").as_bytes());
        }
        let tips = strs(self.d.get("command_tips"));
        write_set_len(out, v, tips.len());
        for t in tips {
            write_bulk(out, t.to_ascii_lowercase().as_bytes());
        }
        let specs = self.specs();
        write_set_len(out, v, specs.len());
        for s in specs {
            write_key_spec(out, v, s);
        }
        let subs = self.subcommands();
        if subs.is_empty() {
            write_set_len(out, v, 0);
        } else {
            write_array_len(out, subs.len());
            for s in subs {
                s.write_info(out, v);
            }
        }
    }

    /// COMMAND DOCS's map for the command (`addReplyCommandDocs`).
    fn write_docs(&self, out: &mut BytesMut, v: Version) {
        let doc_flags = strs(self.d.get("doc_flags"));
        let history = self
            .d
            .get("history")
            .and_then(Value::as_array)
            .filter(|h| !h.is_empty());
        let args = self
            .d
            .get("arguments")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        let subs = self.subcommands();
        let n = 1
            + self.str_field("summary").is_some() as usize
            + self.str_field("since").is_some() as usize
            + self.str_field("complexity").is_some() as usize
            + !doc_flags.is_empty() as usize
            + self.str_field("deprecated_since").is_some() as usize
            + self.str_field("replaced_by").is_some() as usize
            + history.is_some() as usize
            + args.is_some() as usize
            + !subs.is_empty() as usize;
        write_map_len(out, v, n);
        for k in ["summary", "since"] {
            if let Some(s) = self.str_field(k) {
                write_bulk(out, k.as_bytes());
                write_bulk(out, s.as_bytes());
            }
        }
        write_bulk(out, b"group");
        let group = self
            .str_field("group")
            .unwrap_or("generic")
            .replace('_', "-");
        write_bulk(out, group.as_bytes());
        if let Some(s) = self.str_field("complexity") {
            write_bulk(out, b"complexity");
            write_bulk(out, s.as_bytes());
        }
        if !doc_flags.is_empty() {
            write_bulk(out, b"doc_flags");
            let names: Vec<String> = ["deprecated", "syscmd"]
                .iter()
                .filter(|f| doc_flags.iter().any(|d| d.eq_ignore_ascii_case(f)))
                .map(|f| f.to_string())
                .collect();
            write_set_len(out, v, names.len());
            for f in names {
                write_simple(out, f.as_bytes());
            }
        }
        for k in ["deprecated_since", "replaced_by"] {
            if let Some(s) = self.str_field(k) {
                write_bulk(out, k.as_bytes());
                write_bulk(out, s.as_bytes());
            }
        }
        if let Some(h) = history {
            write_bulk(out, b"history");
            write_set_len(out, v, h.len());
            for e in h {
                let pair = strs(Some(e));
                write_array_len(out, 2);
                write_bulk(out, pair.first().unwrap_or(&"").as_bytes());
                write_bulk(out, pair.get(1).unwrap_or(&"").as_bytes());
            }
        }
        if let Some(a) = args {
            write_bulk(out, b"arguments");
            write_args(out, v, a);
        }
        if !subs.is_empty() {
            write_bulk(out, b"subcommands");
            write_map_len(out, v, subs.len());
            for s in subs {
                write_bulk(out, s.name.as_bytes());
                s.write_docs(out, v);
            }
        }
    }

    /// Whether the command has a key spec that names keys, or a key
    /// procedure (`doesCommandHaveKeys`).
    fn has_keys(&self) -> bool {
        self.specs()
            .iter()
            .any(|s| !key_flags(s).contains(&"not_key"))
            || matches!(self.name.as_str(), "sort" | "sort_ro" | "set" | "bitfield")
    }

    /// The positions and flags of the keys in `args` (the command and its
    /// arguments): by the key specs, or by Redis's procedure for the
    /// commands whose specs cannot say; None if the arguments are invalid.
    fn keys(&self, args: &[Bytes]) -> Option<Vec<(usize, Vec<&'static str>)>> {
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

fn write_key_spec(out: &mut BytesMut, v: Version, s: &Value) {
    let notes = s.get("notes").and_then(Value::as_str);
    write_map_len(out, v, 3 + notes.is_some() as usize);
    if let Some(n) = notes {
        write_bulk(out, b"notes");
        write_bulk(out, n.as_bytes());
    }
    write_bulk(out, b"flags");
    let flags = key_flags(s);
    write_set_len(out, v, flags.len());
    for f in flags {
        write_simple(out, f.as_bytes());
    }
    write_bulk(out, b"begin_search");
    write_map_len(out, v, 2);
    write_bulk(out, b"type");
    match begin(s) {
        Begin::Index(p) => {
            write_bulk(out, b"index");
            write_bulk(out, b"spec");
            write_map_len(out, v, 1);
            write_bulk(out, b"index");
            write_integer(out, p);
        }
        Begin::Keyword(k, from) => {
            write_bulk(out, b"keyword");
            write_bulk(out, b"spec");
            write_map_len(out, v, 2);
            write_bulk(out, b"keyword");
            write_bulk(out, k.as_bytes());
            write_bulk(out, b"startfrom");
            write_integer(out, from);
        }
        Begin::Unknown => {
            write_bulk(out, b"unknown");
            write_bulk(out, b"spec");
            write_map_len(out, v, 0);
        }
    }
    write_bulk(out, b"find_keys");
    write_map_len(out, v, 2);
    write_bulk(out, b"type");
    match find(s) {
        Find::Range { last, step, limit } => {
            write_bulk(out, b"range");
            write_bulk(out, b"spec");
            write_map_len(out, v, 3);
            for (k, x) in [("lastkey", last), ("keystep", step), ("limit", limit)] {
                write_bulk(out, k.as_bytes());
                write_integer(out, x);
            }
        }
        Find::Keynum { idx, first, step } => {
            write_bulk(out, b"keynum");
            write_bulk(out, b"spec");
            write_map_len(out, v, 3);
            for (k, x) in [("keynumidx", idx), ("firstkey", first), ("keystep", step)] {
                write_bulk(out, k.as_bytes());
                write_integer(out, x);
            }
        }
        Find::Unknown => {
            write_bulk(out, b"unknown");
            write_bulk(out, b"spec");
            write_map_len(out, v, 0);
        }
    }
}

/// An argument list (`addReplyCommandArgList`).
fn write_args(out: &mut BytesMut, v: Version, args: &[Value]) {
    write_array_len(out, args.len());
    for a in args {
        // As Redis's generator writes them: empty strings left out.
        let s = |k: &str| a.get(k).and_then(Value::as_str).filter(|x| !x.is_empty());
        let b = |k: &str| a.get(k).and_then(Value::as_bool).unwrap_or(false);
        let ksi = a.get("key_spec_index").and_then(Value::as_i64);
        let flags: Vec<&str> = ["optional", "multiple", "multiple_token"]
            .into_iter()
            .filter(|f| b(f))
            .collect();
        let typ = s("type").unwrap_or("string");
        let sub = a.get("arguments").and_then(Value::as_array);
        let nested = matches!(typ, "oneof" | "block");
        let n = 2
            + ksi.is_some() as usize
            + s("token").is_some() as usize
            + s("summary").is_some() as usize
            + s("since").is_some() as usize
            + s("deprecated_since").is_some() as usize
            + !flags.is_empty() as usize
            + nested as usize;
        write_map_len(out, v, n);
        write_bulk(out, b"name");
        write_bulk(out, s("name").unwrap_or("").to_ascii_lowercase().as_bytes());
        write_bulk(out, b"type");
        write_bulk(out, typ.as_bytes());
        if let Some(i) = ksi {
            write_bulk(out, b"key_spec_index");
            write_integer(out, i);
        }
        for k in ["token", "summary", "since", "deprecated_since"] {
            if let Some(x) = s(k) {
                write_bulk(out, k.as_bytes());
                if k == "token" {
                    write_bulk(out, x.to_ascii_uppercase().as_bytes());
                } else {
                    write_bulk(out, x.as_bytes());
                }
            }
        }
        if !flags.is_empty() {
            write_bulk(out, b"flags");
            write_set_len(out, v, flags.len());
            for f in flags {
                write_simple(out, f.as_bytes());
            }
        }
        if nested {
            write_bulk(out, b"arguments");
            write_args(out, v, sub.map(Vec::as_slice).unwrap_or_default());
        }
    }
}

/// The description of the command `args` names, as `lookupCommand` finds
/// it: a container's subcommand when there is a second argument.
fn lookup_desc<'a>(all: &'a Map<String, Value>, args: &[Bytes]) -> Option<Desc<'a>> {
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
/// command runs or is queued; writes the error and returns false if it
/// fails. A subcommand Redis 7.0 does not describe is left to the
/// handler (Strata's own, such as CLIENT NO-TOUCH, and unknown ones).
pub fn check_subcommand_arity(name: &str, args: &[Bytes], out: &mut BytesMut) -> bool {
    let Some(sub) = args.get(1) else {
        return true;
    };
    if !CONTAINERS.contains(&name) {
        return true;
    }
    let full = format!(
        "{name}|{}",
        String::from_utf8_lossy(sub).to_ascii_lowercase()
    );
    let Some(&a) = sub_arities().get(&full) else {
        return true;
    };
    let n = args.len() as i64;
    if (a > 0 && a != n) || n < -a {
        reply::arity(out, &full);
        return false;
    }
    true
}

/// The containers (commands with subcommands) Strata serves.
const CONTAINERS: &[&str] = &[
    "client", "command", "config", "function", "latency", "memory", "object", "pubsub", "script",
    "slowlog", "xgroup", "xinfo",
];

/// A description by the name COMMAND INFO / DOCS are given (`get` or
/// `xgroup|create`).
fn by_name<'a>(all: &'a Map<String, Value>, n: &[u8]) -> Option<Desc<'a>> {
    let name = String::from_utf8_lossy(n).to_ascii_lowercase();
    let top = name.split('|').next().unwrap_or_default();
    lookup(top.as_bytes())?;
    Desc::get(all, &name)
}

fn every(all: &Map<String, Value>) -> Vec<Desc<'_>> {
    COMMANDS
        .iter()
        .filter_map(|c| Desc::get(all, c.name))
        .collect()
}

pub fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let v = ctx.version();
    let out = &mut *ctx.out;
    let all = descriptions();
    let Some(sub) = args.get(1) else {
        let descs = every(&all);
        write_array_len(out, descs.len());
        for d in descs {
            d.write_info(out, v);
        }
        return Outcome::Done;
    };
    if is(sub, "count") && args.len() == 2 {
        write_integer(out, COMMANDS.len() as i64);
    } else if is(sub, "info") {
        if args.len() == 2 {
            let descs = every(&all);
            write_array_len(out, descs.len());
            for d in descs {
                d.write_info(out, v);
            }
        } else {
            write_array_len(out, args.len() - 2);
            for n in &args[2..] {
                match by_name(&all, n) {
                    Some(d) => d.write_info(out, v),
                    None => write_null(out, v),
                }
            }
        }
    } else if is(sub, "docs") {
        let descs: Vec<Desc<'_>> = if args.len() > 2 {
            args[2..].iter().filter_map(|n| by_name(&all, n)).collect()
        } else {
            every(&all)
        };
        write_map_len(out, v, descs.len());
        for d in descs {
            write_bulk(out, d.name.as_bytes());
            d.write_docs(out, v);
        }
    } else if is(sub, "list") && args.len() == 2 {
        write_array_len(out, COMMANDS.len());
        for c in COMMANDS {
            write_bulk(out, c.name.as_bytes());
        }
    } else if (is(sub, "getkeys") || is(sub, "getkeysandflags")) && args.len() >= 3 {
        getkeys(out, &all, &args[2..], is(sub, "getkeysandflags"), v);
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

/// COMMAND GETKEYS / GETKEYSANDFLAGS (`getKeysSubcommandImpl`).
fn getkeys(
    out: &mut BytesMut,
    all: &Map<String, Value>,
    cmd: &[Bytes],
    with_flags: bool,
    v: Version,
) {
    let Some(d) = lookup_desc(all, cmd) else {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command of the table has Redis's description, with the same
    /// arity and the same legacy key range.
    #[test]
    fn the_table_agrees_with_redis() {
        let all = descriptions();
        for c in COMMANDS {
            let d =
                Desc::get(&all, c.name).unwrap_or_else(|| panic!("{} has no description", c.name));
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
}
