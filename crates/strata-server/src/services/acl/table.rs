//! The commands as ACL rules know them: an id per command and per
//! subcommand Redis describes (a container before its subcommands), each
//! with its categories (Redis's, from `redis_commands.json`).

use crate::registry::describe::{acl_entries, AclEntry, ACL_CATEGORIES};
use std::collections::HashMap;
use std::sync::OnceLock;

pub struct Table {
    entries: Vec<AclEntry>,
    by_name: HashMap<&'static str, usize>,
}

/// The table, built on first use.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let entries = acl_entries();
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name, i))
            .collect();
        Table { entries, by_name }
    })
}

impl Table {
    /// Commands and subcommands (ids are 0..len).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn entry(&self, id: usize) -> &AclEntry {
        &self.entries[id]
    }

    /// The id of a full name (lower case: `get`, `config|get`).
    pub fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The subcommands of a container.
    pub fn children(&self, id: usize) -> impl Iterator<Item = usize> + '_ {
        ((id + 1)..self.entries.len()).take_while(move |&k| self.entries[k].parent == Some(id))
    }

    /// A category's bit, by name (lower case).
    pub fn category(&self, name: &str) -> Option<u32> {
        ACL_CATEGORIES
            .iter()
            .position(|c| *c == name)
            .map(|i| 1 << i)
    }

    pub fn categories(&self) -> usize {
        ACL_CATEGORIES.len()
    }

    pub fn category_name(&self, i: usize) -> &'static str {
        ACL_CATEGORIES[i]
    }

    /// The full names in a category, commands before their subcommands.
    pub fn in_category(&self, cat: u32) -> impl Iterator<Item = &'static str> + '_ {
        self.entries
            .iter()
            .filter(move |e| e.categories & cat != 0)
            .map(|e| e.name)
    }
}
