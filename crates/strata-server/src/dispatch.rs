//! The command table and dispatch. One entry per command (name, arity,
//! flags, key positions, group, summary, handler): the single source for
//! arity errors, write/denyoom handling and `COMMAND` output.
//!
//! A handler writes its reply into `Ctx::out` and returns `Outcome::Done`,
//! or returns `Outcome::Pending` with a future that renders the reply once
//! flash reads complete. The connection keeps replies in request order and
//! treats a pending *write* as a barrier: later commands of the pipeline
//! run only after it completed, so they see its effect.

use crate::commands::{client, config, keys, server, strings};
use crate::connection::ConnState;
use crate::reply;
use crate::Shared;
use bytes::{Bytes, BytesMut};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use strata_engine::{Engine, EngineError, Read};
use strata_protocol::Version;

/// What a handler produced.
pub enum Outcome {
    /// The reply is in `Ctx::out`.
    Done,
    /// The reply needs flash reads; `write` marks a mutation (a barrier).
    Pending {
        reply: Pin<Box<dyn Future<Output = BytesMut> + Send>>,
        write: bool,
    },
    /// Reply written; close the connection after sending it (QUIT).
    Close,
}

/// Everything a handler may touch.
pub struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub conn: &'a mut ConnState,
    pub out: &'a mut BytesMut,
}

impl Ctx<'_> {
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }
    pub fn db(&self) -> usize {
        self.conn.db
    }
    pub fn version(&self) -> Version {
        self.conn.version
    }

    /// Renders the result of an engine read now if it is ready, or later.
    /// Engine errors become error replies.
    pub fn reply_with<T: Send + 'static>(
        &mut self,
        read: Read<Result<T, EngineError>>,
        write: bool,
        render: impl FnOnce(&mut BytesMut, Version, T) + Send + 'static,
    ) -> Outcome {
        let version = self.version();
        match read {
            Read::Ready(r) => {
                match r {
                    Ok(v) => render(self.out, version, v),
                    Err(e) => reply::engine(self.out, &e),
                }
                Outcome::Done
            }
            Read::Pending(fut) => Outcome::Pending {
                reply: Box::pin(async move {
                    let mut out = BytesMut::new();
                    match fut.await {
                        Ok(v) => render(&mut out, version, v),
                        Err(e) => reply::engine(&mut out, &e),
                    }
                    out
                }),
                write,
            },
        }
    }
}

pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Outcome;

/// One command of the table.
pub struct CommandSpec {
    pub name: &'static str,
    /// Redis arity: n = exactly n args (with the name), -n = at least n.
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// First key, last key, step (COMMAND INFO's key positions).
    pub keys: (i32, i32, i32),
    pub group: &'static str,
    pub summary: &'static str,
    pub handler: Handler,
}

impl CommandSpec {
    pub fn has_flag(&self, f: &str) -> bool {
        self.flags.contains(&f)
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

const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const WD: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const FAST: &[&str] = &["fast"];
const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
const CONN: &[&str] = &["noscript", "loading", "stale", "fast"];

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    group: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group,
        summary,
        handler,
    }
}

const K1: (i32, i32, i32) = (1, 1, 1);
const KALL: (i32, i32, i32) = (1, -1, 1);
const K2: (i32, i32, i32) = (1, 2, 1);
const K0: (i32, i32, i32) = (0, 0, 0);

/// The command table.
pub static COMMANDS: &[CommandSpec] = &[
    // strings
    cmd("get", 2, RF, K1, "string", "Returns the string value of a key.", strings::get),
    cmd("set", -3, W, K1, "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", strings::set),
    cmd("setnx", 3, WF, K1, "string", "Set the string value of a key only when the key doesn't exist.", strings::setnx),
    cmd("setex", 4, W, K1, "string", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", strings::setex),
    cmd("psetex", 4, W, K1, "string", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", strings::psetex),
    cmd("getset", 3, WF, K1, "string", "Returns the previous string value of a key after setting it to a new value.", strings::getset),
    cmd("getdel", 2, WD, K1, "string", "Returns the string value of a key after deleting the key.", strings::getdel),
    cmd("getex", -2, WD, K1, "string", "Returns the string value of a key after setting its expiration time.", strings::getex),
    cmd("mget", -2, RF, KALL, "string", "Atomically returns the string values of one or more keys.", strings::mget),
    cmd("mset", -3, W, (1, -1, 2), "string", "Atomically creates or modifies the string values of one or more keys.", strings::mset),
    cmd("msetnx", -3, W, (1, -1, 2), "string", "Atomically modifies the string values of one or more keys only when all keys don't exist.", strings::msetnx),
    cmd("append", 3, WF, K1, "string", "Appends a string to the value of a key. Creates the key if it doesn't exist.", strings::append),
    cmd("strlen", 2, RF, K1, "string", "Returns the length of a string value.", strings::strlen),
    cmd("getrange", 4, R, K1, "string", "Returns a substring of the string stored at a key.", strings::getrange),
    cmd("substr", 4, R, K1, "string", "Returns a substring from a string value.", strings::getrange),
    cmd("setrange", 4, W, K1, "string", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", strings::setrange),
    cmd("incr", 2, WF, K1, "string", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", strings::incr),
    cmd("decr", 2, WF, K1, "string", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", strings::decr),
    cmd("incrby", 3, WF, K1, "string", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", strings::incrby),
    cmd("decrby", 3, WF, K1, "string", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", strings::decrby),
    cmd("incrbyfloat", 3, WF, K1, "string", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", strings::incrbyfloat),
    // keyspace
    cmd("del", -2, &["write"], KALL, "generic", "Deletes one or more keys.", keys::del),
    cmd("unlink", -2, WD, KALL, "generic", "Asynchronously deletes one or more keys.", keys::del),
    cmd("exists", -2, RF, KALL, "generic", "Determines whether one or more keys exist.", keys::exists),
    cmd("touch", -2, RF, KALL, "generic", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", keys::touch),
    cmd("type", 2, RF, K1, "generic", "Determines the type of value stored at a key.", keys::type_),
    cmd("keys", 2, &["readonly"], K0, "generic", "Returns all key names that match a pattern.", keys::keys),
    cmd("scan", -2, &["readonly"], K0, "generic", "Iterates over the key names in the database.", keys::scan),
    cmd("randomkey", 1, &["readonly"], K0, "generic", "Returns a random key name from the database.", keys::randomkey),
    cmd("rename", 3, &["write"], K2, "generic", "Renames a key and overwrites the destination.", keys::rename),
    cmd("renamenx", 3, WD, K2, "generic", "Renames a key only when the target key name doesn't exist.", keys::renamenx),
    cmd("copy", -3, W, K2, "generic", "Copies the value of a key to a new key.", keys::copy),
    cmd("expire", -3, WD, K1, "generic", "Sets the expiration time of a key in seconds.", keys::expire),
    cmd("pexpire", -3, WD, K1, "generic", "Sets the expiration time of a key in milliseconds.", keys::pexpire),
    cmd("expireat", -3, WD, K1, "generic", "Sets the expiration time of a key to a Unix timestamp.", keys::expireat),
    cmd("pexpireat", -3, WD, K1, "generic", "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys::pexpireat),
    cmd("ttl", 2, RF, K1, "generic", "Returns the expiration time in seconds of a key.", keys::ttl),
    cmd("pttl", 2, RF, K1, "generic", "Returns the expiration time in milliseconds of a key.", keys::pttl),
    cmd("persist", 2, WD, K1, "generic", "Removes the expiration time of a key.", keys::persist),
    cmd("expiretime", 2, RF, K1, "generic", "Returns the expiration time of a key as a Unix timestamp.", keys::expiretime),
    cmd("pexpiretime", 2, RF, K1, "generic", "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys::pexpiretime),
    // connection and server
    cmd("ping", -1, FAST, K0, "connection", "Returns the server's liveliness response.", server::ping),
    cmd("echo", 2, FAST, K0, "connection", "Returns the given string.", server::echo),
    cmd("hello", -1, CONN, K0, "connection", "Handshakes with the Redis server.", server::hello),
    cmd("auth", -2, CONN, K0, "connection", "Authenticates the connection.", server::auth),
    cmd("select", 2, CONN, K0, "connection", "Changes the selected database.", server::select),
    cmd("quit", -1, CONN, K0, "connection", "Closes the connection.", server::quit),
    cmd("reset", 1, CONN, K0, "connection", "Resets the connection.", server::reset),
    cmd("client", -2, CONN, K0, "connection", "A container for client connection commands.", client::client),
    cmd("command", -1, &["loading", "stale"], K0, "server", "Returns detailed information about all commands.", server::command),
    cmd("config", -2, ADMIN, K0, "server", "A container for server configuration commands.", config::config),
    cmd("info", -1, &["loading", "stale"], K0, "server", "Returns information and statistics about the server.", server::info),
    cmd("dbsize", 1, RF, K0, "server", "Returns the number of keys in the database.", server::dbsize),
    cmd("flushdb", -1, &["write"], K0, "server", "Removes all keys from the current database.", server::flushdb),
    cmd("flushall", -1, &["write"], K0, "server", "Removes all keys from all databases.", server::flushall),
    cmd("time", 1, FAST, K0, "server", "Returns the server time.", server::time),
    cmd("memory", -2, R, K0, "server", "A container for memory diagnostics commands.", server::memory),
    cmd("object", -2, R, K0, "generic", "A container for object introspection commands.", server::object),
    cmd("slowlog", -2, ADMIN, K0, "server", "A container for slow log commands.", server::slowlog),
    cmd("debug", -2, ADMIN, K0, "server", "A container for debugging commands (DEBUG TIER key says where a value lives).", server::debug),
    cmd("lastsave", 1, FAST, K0, "server", "Returns the Unix timestamp of the last successful save to disk.", server::lastsave),
    cmd("save", 1, &["admin", "noscript"], K0, "server", "Synchronously writes an index checkpoint (and, with appendonly no, RAM-only values) to disk.", server::save),
    cmd("bgsave", -1, &["admin", "noscript"], K0, "server", "Writes an index checkpoint in the background.", server::bgsave),
    cmd("shutdown", -1, &["admin", "noscript", "loading", "stale"], K0, "server", "Synchronously saves and shuts down the server.", server::shutdown),
];

/// Finds a command by name, case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    static INDEX: OnceLock<HashMap<&'static str, &'static CommandSpec>> = OnceLock::new();
    let index = INDEX.get_or_init(|| COMMANDS.iter().map(|c| (c.name, c)).collect());
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    index.get(std::str::from_utf8(lower).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_unique_lowercase_names_and_lookup_ignores_case() {
        let mut seen = std::collections::HashSet::new();
        for c in COMMANDS {
            assert!(seen.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.name.len() <= 32);
        }
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'x'; 40]).is_none());
    }

    #[test]
    fn arity_rules() {
        let get = lookup(b"get").unwrap();
        assert!(get.arity_ok(2) && !get.arity_ok(1) && !get.arity_ok(3));
        let set = lookup(b"set").unwrap();
        assert!(set.arity_ok(3) && set.arity_ok(9) && !set.arity_ok(2));
    }
}
