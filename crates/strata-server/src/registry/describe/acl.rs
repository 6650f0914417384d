//! What ACL rules need of Redis's command descriptions: every command and
//! subcommand with its categories (`crate::services::acl`'s ids), and the keys a
//! command names with the permissions each needs.

use super::desc::Desc;
use super::{descriptions, lookup_desc, subcommands};
use crate::registry::all;
use bytes::Bytes;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// A command or subcommand as ACL rules name it (`+config|get`).
pub struct AclEntry {
    /// The full name (`get`, `config|get`).
    pub name: &'static str,
    /// The container's index, for a subcommand.
    pub parent: Option<usize>,
    /// Its ACL categories: bit i is `CATEGORY_ORDER[i]`.
    pub categories: u32,
    /// Flagged `no_auth` (AUTH, HELLO): every user may run it.
    pub no_auth: bool,
}

/// ACL categories in Redis's order (`ACL CAT`).
pub const ACL_CATEGORIES: &[&str] = super::desc::CATEGORY_ORDER;

/// Every command of the table and each subcommand Redis describes for it,
/// a container before its subcommands (the ids ACL rules are kept by).
pub fn acl_entries() -> Vec<AclEntry> {
    let descs = descriptions();
    let subs = subcommands();
    let mask = |d: &Desc<'_>| {
        d.categories().iter().fold(0u32, |m, c| {
            m | ACL_CATEGORIES
                .iter()
                .position(|x| x == c)
                .map_or(0, |i| 1 << i)
        })
    };
    let mut out = Vec::new();
    for c in all() {
        let Some(d) = Desc::get(&descs, c.name) else {
            continue;
        };
        let parent = out.len();
        out.push(AclEntry {
            name: c.name,
            parent: None,
            categories: mask(&d),
            no_auth: d.has_flag("no_auth"),
        });
        let mut kids = d.subcommands();
        kids.sort_by(|a, b| a.name.cmp(&b.name));
        for s in kids {
            let Some((name, _)) = subs.get_key_value(&s.name) else {
                continue;
            };
            out.push(AclEntry {
                name: name.as_str(),
                parent: Some(parent),
                categories: mask(&s),
                no_auth: s.has_flag("no_auth"),
            });
        }
    }
    out
}

/// Key permissions a key of a command needs (ACL `%R~` / `%W~`).
pub const KEY_READ: u8 = 1;
pub const KEY_WRITE: u8 = 2;

/// The positions in `args` (the command and its arguments) of the keys
/// the command names, each with the permissions it needs: read for a key
/// spec flagged `access`, write for `insert`, `delete` or `update`
/// (`ACLSelectorCheckKey`). None where the key specs cannot tell (invalid
/// arguments): Redis then checks no key either. The key specs are kept
/// (not the rest of the descriptions) from the first call on: only a user
/// limited to some keys needs them.
pub fn acl_keys(args: &[Bytes]) -> Option<Vec<(usize, u8)>> {
    static SPECS: OnceLock<Map<String, Value>> = OnceLock::new();
    let specs = SPECS.get_or_init(|| {
        descriptions()
            .into_iter()
            .map(|(k, v)| {
                let mut m = Map::new();
                if let Some(s) = v.get("key_specs") {
                    m.insert("key_specs".into(), s.clone());
                }
                (k, Value::Object(m))
            })
            .collect()
    });
    let d = lookup_desc(specs, args)?;
    let keys = d.keys(args)?;
    Some(
        keys.into_iter()
            .map(|(pos, flags)| {
                let has = |f: &str| flags.iter().any(|x| x.eq_ignore_ascii_case(f));
                let mut need = 0;
                if has("access") {
                    need |= KEY_READ;
                }
                if has("insert") || has("delete") || has("update") {
                    need |= KEY_WRITE;
                }
                (pos, need)
            })
            .collect(),
    )
}
