//! Command flags (Redis's `CMD_*`) as a typed bitset, and the flag sets
//! and key ranges the families' tables write their entries with.

/// A command's flags (Redis's `CMD_*`), as bits. The table writes them by
/// Redis's names (`Flags::parse`, at compile time: a name that is not a
/// flag does not build).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(u32);

/// Redis's flag names, and their bits: first the ones COMMAND INFO
/// prints, in its order (`addReplyFlagsForCommand`; `movablekeys` is
/// computed there), then the ones it does not print, then Strata's own.
pub const FLAG_NAMES: [&str; 24] = [
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
    "may_replicate",
    "sentinel",
    "only_sentinel",
    // Strata's own (Redis has no flag for them):
    // a write that reads its sources as Redis's `lookupKeyRead` does
    // (their lookups count keyspace hits and misses; SORT ... STORE,
    // SINTERSTORE, COPY ...).
    "reads_sources",
];

/// How many of `FLAG_NAMES` COMMAND INFO prints.
pub const FLAGS_PRINTED: usize = 20;

impl Flags {
    pub const WRITE: Flags = Flags::named("write");
    pub const READONLY: Flags = Flags::named("readonly");
    pub const DENYOOM: Flags = Flags::named("denyoom");
    pub const ADMIN: Flags = Flags::named("admin");
    pub const PUBSUB: Flags = Flags::named("pubsub");
    pub const NOSCRIPT: Flags = Flags::named("noscript");
    pub const BLOCKING: Flags = Flags::named("blocking");
    pub const LOADING: Flags = Flags::named("loading");
    pub const FAST: Flags = Flags::named("fast");
    pub const NO_AUTH: Flags = Flags::named("no_auth");
    pub const MAY_REPLICATE: Flags = Flags::named("may_replicate");
    pub const NO_MULTI: Flags = Flags::named("no_multi");
    pub const MOVABLEKEYS: Flags = Flags::named("movablekeys");
    pub const ALLOW_BUSY: Flags = Flags::named("allow_busy");
    pub const READS_SOURCES: Flags = Flags::named("reads_sources");

    /// The flags `names` name (Redis's names). Panics (at compile time,
    /// in a const) on a name that is no flag.
    pub const fn parse(names: &[&str]) -> Flags {
        let mut bits = 0;
        let mut i = 0;
        while i < names.len() {
            bits |= Flags::named(names[i]).0;
            i += 1;
        }
        Flags(bits)
    }

    const fn named(name: &str) -> Flags {
        let mut i = 0;
        while i < FLAG_NAMES.len() {
            if eq(FLAG_NAMES[i].as_bytes(), name.as_bytes()) {
                return Flags(1 << i);
            }
            i += 1;
        }
        panic!("not a command flag");
    }

    /// These flags and those of `f`.
    pub const fn with(self, f: Flags) -> Flags {
        Flags(self.0 | f.0)
    }

    /// Whether every flag of `f` is set.
    pub const fn has(self, f: Flags) -> bool {
        self.0 & f.0 == f.0
    }

    /// The names of the flags set, in `FLAG_NAMES`'s order (COMMAND
    /// INFO's, then those it does not print).
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        FLAG_NAMES
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, n)| *n)
    }
}

/// Byte equality in a const fn.
const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Flag sets many entries share.
pub const W: &[&str] = &["write", "denyoom"];
pub const WF: &[&str] = &["write", "denyoom", "fast"];
pub const WD: &[&str] = &["write", "fast"];
pub const R: &[&str] = &["readonly"];
pub const RF: &[&str] = &["readonly", "fast"];
pub const FAST: &[&str] = &["fast"];
pub const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
pub const CONN: &[&str] = &["noscript", "loading", "stale", "fast"];
/// What a client may send before AUTH, and while a script is busy
/// (Redis 7.0's AUTH, HELLO, QUIT and RESET: `no_auth`, `allow_busy`).
pub const AUTHLESS: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
pub const SCRIPT: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "may_replicate",
    "no_mandatory_keys",
    "movablekeys",
];
pub const SCRIPT_RO: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "readonly",
    "movablekeys",
];
pub const PUBSUB: &[&str] = &["pubsub", "noscript", "loading", "stale"];
pub const TXN: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];

/// Legacy key ranges (first, last, step) many entries share.
pub const K1: (i32, i32, i32) = (1, 1, 1);
pub const KALL: (i32, i32, i32) = (1, -1, 1);
pub const K2: (i32, i32, i32) = (1, 2, 1);
pub const K0: (i32, i32, i32) = (0, 0, 0);
