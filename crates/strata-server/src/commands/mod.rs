//! Command families (one file each, as Dragonfly's `*_family`), plus the
//! argument parsers they share. Handlers turn arguments into engine calls
//! and engine results into replies; they never block on I/O.
//!
//! Each family lists its own commands (`COMMANDS`: the registry's facts
//! and the handler); `install` gives the facts to the registry and keeps
//! the handlers by the registry's ids (`handler`). Adding a command
//! touches its family's file (and Redis's description, which a test
//! holds the entry to).

pub mod blocking;
pub mod float;
pub mod geo;
pub mod hash;
pub mod keys;
pub mod list;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod stream;
pub mod strings;
pub mod zset;

use crate::command::{Command, Handler};
use crate::registry::{self, CommandSpec};

pub use crate::base::args::{is, parse_f64, parse_i64, parse_usize};

/// Every family's table, in the order the registry numbers them.
const FAMILIES: [&[Command]; 13] = [
    strings::COMMANDS,
    keys::COMMANDS,
    sort::COMMANDS,
    hash::COMMANDS,
    set::COMMANDS,
    list::COMMANDS,
    blocking::COMMANDS,
    zset::COMMANDS,
    geo::COMMANDS,
    stream::COMMANDS,
    server::COMMANDS,
    pubsub::COMMANDS,
    scripting::COMMANDS,
];

/// How many commands the families list.
const COUNT: usize = {
    let (mut n, mut f) = (0, 0);
    while f < FAMILIES.len() {
        n += FAMILIES[f].len();
        f += 1;
    }
    n
};

/// Every command, each numbered by its place (`CommandSpec::id`), built
/// at compile time: the registry refers to these facts (nothing of them
/// is allocated, so nothing counts against the RAM budget) and dispatch
/// finds a handler by the id.
pub static ALL: [Command; COUNT] = {
    let mut all = [FAMILIES[0][0]; COUNT];
    let (mut i, mut f) = (0, 0);
    while f < FAMILIES.len() {
        let mut j = 0;
        while j < FAMILIES[f].len() {
            all[i] = FAMILIES[f][j];
            all[i].spec.id = i;
            i += 1;
            j += 1;
        }
        f += 1;
    }
    all
};

/// Gives every family's commands to the registry (once; later calls
/// change nothing). Before any command is looked up, and before the
/// configuration is read (its `user` lines name commands).
pub fn install() {
    registry::install(ALL.iter().map(|c| &c.spec));
}

/// The handler of a registered command.
#[inline]
pub fn handler(spec: &CommandSpec) -> Handler {
    ALL[spec.id].handler
}

/// What a registered command reads of its key first (`ReadsFn`), if its
/// family says.
#[inline]
pub fn reads(spec: &CommandSpec) -> Option<crate::command::ReadsFn> {
    ALL[spec.id].reads
}

/// The arguments of LMPOP / ZMPOP (and their blocking forms) from
/// `numkeys` on: `numkeys key... FIRST|SECOND [COUNT n]`, with Redis's
/// errors. Returns the keys, whether the side word was `second` (RIGHT,
/// MAX), and the count (default 1).
pub fn parse_mpop(
    args: &[bytes::Bytes],
    first: &str,
    second: &str,
) -> Result<(Vec<bytes::Bytes>, bool, usize), &'static str> {
    let numkeys = match args.first().and_then(|a| parse_i64(a)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(crate::base::reply::NUMKEYS_NOT_POSITIVE),
    };
    let where_idx = numkeys.saturating_add(1);
    if where_idx >= args.len() as u64 {
        return Err(crate::base::reply::SYNTAX);
    }
    let w = where_idx as usize;
    let is_second = if is(&args[w], first) {
        false
    } else if is(&args[w], second) {
        true
    } else {
        return Err(crate::base::reply::SYNTAX);
    };
    let mut count = None;
    let mut j = w + 1;
    while j < args.len() {
        if count.is_none() && is(&args[j], "count") && j + 1 < args.len() {
            match parse_i64(&args[j + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err("ERR count should be greater than 0"),
            }
            j += 2;
        } else {
            return Err(crate::base::reply::SYNTAX);
        }
    }
    Ok((args[1..w].to_vec(), is_second, count.unwrap_or(1)))
}

/// HRANDFIELD / ZRANDMEMBER's `count [WITH...]` (`args` from the count
/// on), with Redis's errors: the count, and whether `with` was given.
pub fn parse_rand_count(args: &[bytes::Bytes], with: &str) -> Result<(i64, bool), &'static str> {
    let count = match args.first().and_then(|a| parse_i64(a)) {
        None => return Err(crate::base::reply::NOT_INTEGER),
        Some(i64::MIN) => return Err(crate::base::reply::I64_RANGE),
        Some(n) => n,
    };
    let with_values = match args.get(1) {
        None => false,
        Some(a) if args.len() == 2 && is(a, with) => true,
        Some(_) => return Err(crate::base::reply::SYNTAX),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count)
        || count < 0 && count.unsigned_abs() > hash::MAX_PICKS
    {
        return Err(crate::base::reply::OUT_OF_RANGE);
    }
    Ok((count, with_values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Role, ScriptBy};

    /// The roles the machinery around commands acts on are on the
    /// commands Redis treats so, and on no other.
    #[test]
    fn roles_are_on_the_commands_redis_treats_so() {
        install();
        let roles: &[(&[&str], Role)] = &[
            (&["exec"], Role::Exec),
            (&["multi", "discard", "watch"], Role::Transaction),
            (&["quit", "reset"], Role::Session),
            (&["eval", "eval_ro"], Role::Script(ScriptBy::Body)),
            (&["evalsha", "evalsha_ro"], Role::Script(ScriptBy::Sha)),
            (&["fcall", "fcall_ro"], Role::Script(ScriptBy::Function)),
            (
                &[
                    "subscribe",
                    "unsubscribe",
                    "psubscribe",
                    "punsubscribe",
                    "ssubscribe",
                    "sunsubscribe",
                ],
                Role::Subscribe,
            ),
            (&["ping"], Role::Ping),
            (&["client"], Role::Client),
            (&["debug"], Role::Debug),
            (&["touch"], Role::Touch),
        ];
        let mut named = 0;
        for (names, role) in roles {
            for n in *names {
                let spec = registry::lookup(n.as_bytes()).unwrap();
                assert_eq!(spec.role, *role, "{n}");
                named += 1;
            }
        }
        let special = registry::all().iter().filter(|c| c.role != Role::Plain);
        assert_eq!(special.count(), named);
        for (i, c) in ALL.iter().enumerate() {
            assert_eq!(c.spec.id, i);
            assert!(std::ptr::eq(registry::all()[i], &c.spec));
        }
    }
}
