//! COMMAND INFO's entry and COMMAND DOCS's map of a description
//! (`addReplyCommandInfo`, `addReplyCommandDocs`, their key specs and
//! argument lists).

use super::desc::{begin, find, key_flags, strs, Begin, Desc, Find};
use bytes::BytesMut;
use serde_json::Value;
use strata_protocol::{
    write_array_len, write_bulk, write_integer, write_map_len, write_set_len, write_simple, Version,
};

impl Desc<'_> {
    /// COMMAND INFO's entry (`addReplyCommandInfo`).
    pub fn write_info(&self, out: &mut BytesMut, v: Version) {
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
    pub fn write_docs(&self, out: &mut BytesMut, v: Version) {
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
