//! memcached's error lines both its protocols answer: a store refused
//! admission (`admit`: out of memory, or the log cannot be written), and
//! an engine error as a `SERVER_ERROR` line (`engine_error`).

use super::OOM;
use crate::command::Shared;
use bytes::BytesMut;
use strata_engine::EngineError;
use strata_protocol::memcache::reply as mr;

/// Admission of a store (as the RESP side's `denyoom`): Err(line) when the
/// write must be refused.
pub(super) async fn admit(shared: &Shared) -> Result<(), String> {
    shared
        .admit_write(shared.engine.admission())
        .await
        .map_err(|r| match r {
            crate::command::Refusal::OutOfMemory => OOM.to_string(),
            crate::command::Refusal::Log(why) => format!("SERVER_ERROR {why}"),
        })
}

/// An engine error as a memcached `SERVER_ERROR` line.
pub(super) fn engine_error(out: &mut BytesMut, e: &EngineError) {
    use crate::base::reply;
    let why = match e {
        EngineError::OutOfMemory => "command not allowed when used memory > 'maxmemory'".into(),
        EngineError::WrongType => reply::WRONGTYPE.to_string(),
        EngineError::NoSuchDb => without_code(reply::DB_RANGE),
        EngineError::Corrupt(why) => format!("flash record of key is corrupt ({why})"),
        EngineError::Malformed => without_code(reply::MALFORMED),
        other => other.to_string(),
    };
    mr::line(out, &format!("SERVER_ERROR {why}"));
}

/// A RESP error text without its `ERR ` code.
fn without_code(text: &str) -> String {
    text.strip_prefix("ERR ").unwrap_or(text).to_string()
}
