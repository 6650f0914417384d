//! The command registry: every command Strata serves as facts (name,
//! arity, typed flags, legacy key range, group, summary), found by name
//! (`lookup`, after `rename-command`), and what Redis's own descriptions
//! say of it (`describe`: subcommands, ACL categories, key specs, full
//! names, COMMAND's replies). Every room that needs to know about a
//! command reads it here: acl, metrics, the gates, dispatch,
//! transactions, scripting and COMMAND.
//!
//! Each command family lists its own entries, facts and handler
//! (`commands::*::COMMANDS`); `commands::ALL` numbers them at compile
//! time and `commands::install` gives their facts to `install` here.
//! So this room knows no family and no handler type: it sits below the
//! services, which ask it about commands.
//!
//! Invariants: `install` runs once, before any command is looked up (the
//! binary's `start`; a test calls `commands::install`, which is
//! idempotent); a spec's `id` is its position in `all()`; names are
//! unique, lowercase and at most 32 bytes (tested).

pub mod describe;
pub mod flags;
pub mod keys;

pub use flags::Flags;

use std::collections::HashMap;
use std::sync::OnceLock;

/// One command's facts, as the registry holds them.
#[derive(Clone, Copy, Debug)]
pub struct CommandSpec {
    /// Its position in `all()`: metrics' slot, the handler's index.
    pub id: usize,
    pub name: &'static str,
    /// Redis arity: n = exactly n args (with the name), -n = at least n.
    pub arity: i32,
    pub flags: Flags,
    /// First key, last key, step (COMMAND INFO's key positions).
    pub keys: (i32, i32, i32),
    pub group: &'static str,
    pub summary: &'static str,
    /// What the machinery around commands treats it as (`Role`).
    pub role: Role,
}

/// How a script command names its script: EVAL by its body, EVALSHA by
/// the body's SHA-1, FCALL a loaded function by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptBy {
    Body,
    Sha,
    Function,
}

/// What the machinery around commands (the gates, dispatch, MULTI, the
/// scripts, the connection) treats a command as: named by role in the
/// family's entry, never matched by the command's name elsewhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// Nothing special.
    #[default]
    Plain,
    /// EXEC: the connection runs the queued transaction.
    Exec,
    /// MULTI, DISCARD, WATCH: run at once inside MULTI, as EXEC does.
    Transaction,
    /// QUIT and RESET: run at once inside MULTI, and in RESP2's
    /// subscriber context.
    Session,
    /// EVAL, EVALSHA, FCALL and their `_RO` forms (the `readonly` flag):
    /// run a script named as `ScriptBy` says (MONITOR shows them before
    /// their commands; CLIENT PAUSE WRITE asks the script's flags).
    Script(ScriptBy),
    /// (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE: allowed in RESP2's subscriber
    /// context, their confirmations pushed past CLIENT REPLY's mode.
    Subscribe,
    /// PING: allowed in RESP2's subscriber context.
    Ping,
    /// CLIENT: CLIENT REPLY sets the connection's reply mode, and CLIENT
    /// CACHING's answer outlives it.
    Client,
    /// DEBUG: RELOAD and LOADAOF run between a transaction's sections.
    Debug,
    /// TOUCH: an access even under CLIENT NO-TOUCH.
    Touch,
}

impl CommandSpec {
    /// How this script command names its script (None: not one).
    pub fn script_by(&self) -> Option<ScriptBy> {
        match self.role {
            Role::Script(by) => Some(by),
            _ => None,
        }
    }

    /// Whether the command has every flag of `f`.
    pub fn has(&self, f: Flags) -> bool {
        self.flags.has(f)
    }
    /// Whether `argc` (with the name) satisfies the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        if a >= 0 {
            argc == a as usize
        } else {
            argc >= (-a) as usize
        }
    }
}

type Index = HashMap<&'static [u8], &'static CommandSpec, foldhash::fast::FixedState>;

struct Registry {
    all: Vec<&'static CommandSpec>,
    /// The commands by their own names.
    index: Index,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Installs the commands, numbered by their place (`CommandSpec::id`);
/// a second call changes nothing.
pub fn install(specs: impl IntoIterator<Item = &'static CommandSpec>) {
    REGISTRY.get_or_init(|| {
        let all: Vec<&'static CommandSpec> = specs.into_iter().collect();
        debug_assert!(all.iter().enumerate().all(|(i, c)| c.id == i));
        let index = all.iter().map(|c| (c.name.as_bytes(), *c)).collect();
        Registry { all, index }
    });
}

fn registry() -> &'static Registry {
    REGISTRY
        .get()
        .expect("the command registry is installed first (commands::install)")
}

/// Every command, in `id` order.
pub fn all() -> &'static [&'static CommandSpec] {
    &registry().all
}

/// `rename-command`'s names, when any were given: every name clients
/// may use, each with its command (a removed or renamed command's own
/// name is absent).
static RENAMED: OnceLock<HashMap<Vec<u8>, &'static CommandSpec>> = OnceLock::new();

/// `rename-command` lines, applied in order at start as Redis applies
/// them (an empty new name removes the command); Redis's errors.
pub fn rename(renames: &[(String, String)]) -> Result<(), String> {
    if renames.is_empty() {
        return Ok(());
    }
    let mut names: HashMap<Vec<u8>, &'static CommandSpec> = registry()
        .index
        .iter()
        .map(|(n, c)| (n.to_vec(), *c))
        .collect();
    for (old, new) in renames {
        let spec = names
            .remove(old.to_ascii_lowercase().as_bytes())
            .ok_or("No such command in rename-command")?;
        if !new.is_empty() {
            if new.len() > 32 {
                return Err("Target command name is too long".into());
            }
            let key = new.to_ascii_lowercase().into_bytes();
            if names.contains_key(&key) {
                return Err("Target command name already exists".into());
            }
            names.insert(key, spec);
        }
    }
    RENAMED
        .set(names)
        .map_err(|_| "commands were renamed already".to_string())
}

/// Finds a command by the name clients use (its own, or the one
/// `rename-command` gave it), case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    // (foldhash, not SipHash: every request looks its command up; the
    // names are ASCII, so no UTF-8 check is needed.)
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    match RENAMED.get() {
        None => registry().index.get(&lower[..]).copied(),
        Some(renamed) => renamed.get(&lower[..]).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase_and_lookup_ignores_case() {
        crate::commands::install();
        let mut seen = std::collections::HashSet::new();
        for (i, c) in all().iter().enumerate() {
            assert!(seen.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.name.len() <= 32);
            assert_eq!(c.id, i);
        }
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'x'; 40]).is_none());
    }

    #[test]
    fn arity_rules() {
        crate::commands::install();
        let get = lookup(b"get").unwrap();
        assert!(get.arity_ok(2) && !get.arity_ok(1) && !get.arity_ok(3));
        let set = lookup(b"set").unwrap();
        assert!(set.arity_ok(3) && set.arity_ok(9) && !set.arity_ok(2));
    }
}
