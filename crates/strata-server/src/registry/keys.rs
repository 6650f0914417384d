//! The keys a command names, from its registry entry and its arguments
//! (`command_keys`: what EXEC's section locks, what client tracking
//! remembers), without Redis's descriptions (`describe::keys` has GETKEYS
//! by the key specs).

use super::{CommandSpec, Flags};
use bytes::Bytes;

/// The keys `args` of the command `spec` touches (as COMMAND GETKEYS
/// would give them), or None when they cannot be told from the arguments
/// or the command reads the whole keyspace.
pub fn command_keys(spec: &CommandSpec, args: &[Bytes]) -> Option<Vec<Bytes>> {
    // numkeys at `at`, the keys after it (none when numkeys is invalid:
    // the command then fails before it touches a key).
    let from = |at: usize| -> Vec<Bytes> {
        let n = args
            .get(at)
            .and_then(|a| std::str::from_utf8(a).ok())
            .and_then(|a| a.parse::<usize>().ok())
            .unwrap_or(0);
        args.iter().skip(at + 1).take(n).cloned().collect()
    };
    let keys = match spec.name {
        "ping" | "echo" | "select" | "time" | "unwatch" | "lastsave" => Vec::new(),
        "sintercard" | "zintercard" | "zinter" | "zunion" | "zdiff" | "lmpop" | "zmpop" => from(1),
        "blmpop" | "bzmpop" => from(2),
        "zunionstore" | "zinterstore" | "zdiffstore" => {
            let mut k = from(2);
            k.push(args.get(1)?.clone());
            k
        }
        "object" => args.get(2).cloned().into_iter().collect(),
        _ if spec.has(Flags::MOVABLEKEYS) || spec.keys.0 <= 0 => return None,
        _ => spec_keys(spec, args),
    };
    Some(keys)
}

/// The keys at the positions of the command's table entry.
pub fn spec_keys(spec: &CommandSpec, args: &[Bytes]) -> Vec<Bytes> {
    let (first, last, step) = spec.keys;
    let mut keys = Vec::new();
    if first <= 0 || step <= 0 {
        return keys;
    }
    let last = if last < 0 {
        args.len() as i32 + last
    } else {
        last
    };
    let mut i = first;
    while i <= last && (i as usize) < args.len() {
        keys.push(args[i as usize].clone());
        i += step;
    }
    keys
}
