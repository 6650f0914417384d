//! Writing error replies, and the error texts that more than one command
//! or room answers, in Redis's wording: a text used in two places is a
//! constant here (the gates', the engine's errors as RESP words them,
//! `reply::engine`); a text only one command answers stays beside that
//! command, as in Redis's own sources.

use bytes::BytesMut;
use strata_engine::EngineError;
use strata_protocol::write_error;

pub const SYNTAX: &str = "ERR syntax error";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";
pub const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const DB_RANGE: &str = "ERR DB index is out of range";
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const LOADING: &str = "LOADING Strata is loading the dataset in memory";
pub const BGSAVE_RUNNING: &str = "ERR Background save already in progress";
/// A blocked XREADGROUP whose stream was deleted (Redis 7.0).
pub const STREAM_GONE: &str = "UNBLOCKED the stream key no longer exists";

/// The OOM refusal naming the limit it hit: Redis's words for
/// `maxmemory`; for the RAM budget, what RAM holds that cannot move to
/// flash and the keys' index's share of it (more keys need a larger
/// `maxmemory-ram`); for a flash log full of live data, `flash-max-size`.
pub fn oom(cause: strata_engine::OomCause) -> String {
    use strata_engine::OomCause;
    match cause {
        OomCause::Maxmemory => OOM.to_string(),
        OomCause::RamBudget {
            budget,
            pinned,
            index_bytes,
            keys,
        } => format!(
            "OOM command not allowed when used memory > 'maxmemory-ram' ({budget} bytes): \
             {pinned} bytes in RAM cannot move to flash, of which the keys' index takes \
             {index_bytes} bytes for {keys} keys ({} bytes per key); raise maxmemory-ram \
             to hold more keys",
            index_bytes.checked_div(keys).unwrap_or(0)
        ),
        OomCause::Flash { capacity } => format!(
            "OOM command not allowed when the flash log is full of live data \
             ('flash-max-size' {capacity} bytes)"
        ),
    }
}

/// The refusal of a write while the flash log cannot be written.
pub fn misconf(why: &str) -> String {
    format!(
        "MISCONF Errors writing to the flash log: {why}. Commands that may modify the data \
         set are disabled until the log can be written again; reads keep working"
    )
}
pub const OFFSET_RANGE: &str = "ERR offset is out of range";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const NOT_POSITIVE_COUNT: &str = "ERR value is out of range, must be positive";
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// A collection record that does not decode.
pub const MALFORMED: &str = "ERR flash record of key is corrupt (malformed collection)";

/// Writes `-<msg>\r\n`.
/// Writes refused for want of replicas (`min-replicas-to-write`).
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
/// Texts more than one command answers.
pub const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
pub const INVALID_CURSOR: &str = "ERR invalid cursor";
pub const OUT_OF_RANGE: &str = "ERR value is out of range";
pub const TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
pub const INVALID_LIBRARY_METADATA: &str = "ERR Invalid library metadata";
pub const MISSING_LIBRARY_METADATA: &str = "ERR Missing library metadata";
pub const NO_LIBRARY_NAME: &str = "ERR Library name was not given";
pub const TOO_LARGE: &str = "ERR Elements are too large to be stored";
pub const I64_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
pub const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
pub const TOO_MANY_KEYS: &str = "ERR Number of keys can't be greater than number of args";
pub const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";
pub const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";
pub const BAD_DUMP: &str = "ERR DUMP payload version or checksum are wrong";
pub const COUNT_NOT_POSITIVE: &str = "ERR COUNT must be > 0";
pub const BAD_DATA_FORMAT: &str = "ERR Bad data format";

pub fn error(out: &mut BytesMut, msg: &str) {
    write_error(out, msg.as_bytes());
}

/// `ERR wrong number of arguments for 'get' command`.
pub fn arity(out: &mut BytesMut, name: &str) {
    error(out, &arity_text(name));
}

/// The text of `arity`'s error.
pub fn arity_text(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// `ERR unknown command 'foo', with args beginning with: 'a' 'b' `.
pub fn unknown_command(out: &mut BytesMut, args: &[bytes::Bytes]) {
    error(out, &unknown_command_text(args));
}

/// The text of `unknown_command`'s error.
pub fn unknown_command_text(args: &[bytes::Bytes]) -> String {
    let name = args.first().map(|a| lossy(a, 128)).unwrap_or_default();
    // As Redis: arguments until their text reaches 128 bytes, the last one
    // cut to what is left.
    let mut list = String::new();
    for a in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        list.push_str(&format!("'{}' ", lossy(a, 128 - list.len())));
    }
    format!("ERR unknown command '{name}', with args beginning with: {list}")
}

/// `ERR unknown subcommand 'x'. Try CLIENT HELP.`
pub fn unknown_subcommand(out: &mut BytesMut, sub: &[u8], cmd: &str) {
    error(out, &unknown_subcommand_text(sub, cmd));
}

/// The text of `unknown_subcommand`'s error.
pub fn unknown_subcommand_text(sub: &[u8], cmd: &str) -> String {
    format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(sub, 128),
        cmd.to_ascii_uppercase()
    )
}

/// `addReplySubcommandSyntaxError`: `ERR unknown subcommand or wrong
/// number of arguments for 'x'. Try CMD HELP.`
pub fn subcommand_syntax(out: &mut BytesMut, sub: &[u8], cmd: &str) {
    error(
        out,
        &format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
            lossy(sub, 128),
            cmd.to_ascii_uppercase()
        ),
    );
}

/// `ERR invalid expire time in 'set' command`.
pub fn invalid_expire(out: &mut BytesMut, cmd: &str) {
    error(out, &format!("ERR invalid expire time in '{cmd}' command"));
}

/// The reply for an engine failure.
pub fn engine(out: &mut BytesMut, e: &EngineError) {
    match e {
        EngineError::OutOfMemory => error(out, OOM),
        EngineError::NoSuchDb => error(out, DB_RANGE),
        EngineError::WrongType => error(out, WRONGTYPE),
        EngineError::Corrupt(why) => error(
            out,
            &format!("ERR flash read failed: record corrupt ({why})"),
        ),
        EngineError::Io(io) => error(out, &format!("ERR flash read failed: {io}")),
        EngineError::Malformed => error(out, MALFORMED),
        // (`EngineError` is non-exhaustive: a new kind reads as itself.)
        other => error(out, &format!("ERR {other}")),
    }
}

/// Up to `max` bytes of `b` as text, for error messages.
pub fn lossy(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).replace(['\r', '\n'], " ")
}
