//! One command's description (Redis's JSON): its flags, ACL categories
//! and key specs, and the legacy key range they imply.

use serde_json::{Map, Value};

/// One command's description, by full name.
/// One command's description, by full name.
pub struct Desc<'a> {
    pub name: String,
    pub(super) d: &'a Map<String, Value>,
    pub(super) all: &'a Map<String, Value>,
}

pub(super) fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Command flags in the order Redis prints them (`addReplyFlagsForCommand`;
/// `movablekeys` is computed): the registry's.
pub(super) const FLAG_ORDER: &[&str] = {
    let (printed, _) =
        crate::registry::flags::FLAG_NAMES.split_at(crate::registry::flags::FLAGS_PRINTED);
    printed
};

/// ACL categories in Redis's order (`ACLCommandCategories`).
pub(super) const CATEGORY_ORDER: &[&str] = &[
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
pub(super) const KEY_FLAG_ORDER: &[&str] = &[
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
pub(super) fn key_flags(spec: &Value) -> Vec<&'static str> {
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
pub(super) enum Begin {
    Index(i64),
    Keyword(String, i64),
    Unknown,
}

/// How a key spec finds its keys.
pub(super) enum Find {
    Range { last: i64, step: i64, limit: i64 },
    Keynum { idx: i64, first: i64, step: i64 },
    Unknown,
}

pub(super) fn int(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

pub(super) fn begin(spec: &Value) -> Begin {
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

pub(super) fn find(spec: &Value) -> Find {
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

    pub(super) fn specs(&self) -> &[Value] {
        self.d
            .get("key_specs")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    pub(super) fn json_flags(&self) -> Vec<String> {
        strs(self.d.get("command_flags"))
            .iter()
            .map(|f| f.to_ascii_lowercase())
            .collect()
    }

    pub(super) fn has_flag(&self, f: &str) -> bool {
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

    pub(super) fn flags(&self) -> Vec<&'static str> {
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
    pub(super) fn categories(&self) -> Vec<&'static str> {
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

    pub(super) fn subcommands(&self) -> Vec<Desc<'a>> {
        let prefix = format!("{}|", self.name);
        self.all
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .filter_map(|k| Desc::get(self.all, k))
            .collect()
    }

    pub(super) fn str_field(&self, k: &str) -> Option<&'a str> {
        self.d
            .get(k)
            .and_then(Value::as_str)
            .filter(|x| !x.is_empty())
    }
}
