//! `EngineError`: everything the engine can refuse or fail with, by
//! meaning. Its texts are for logs; a protocol words each error its own
//! way (the server's `base::reply::engine` for RESP, memcached's
//! `SERVER_ERROR` lines).

use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The memory limits are reached and the policy does not evict.
    #[error("the memory limits are reached and the policy does not evict")]
    OutOfMemory,
    /// A flash record failed its checksum or did not match the index.
    #[error("flash record of key is corrupt ({0})")]
    Corrupt(&'static str),
    /// The device returned an error.
    #[error("flash I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The key holds a value of another type than the command works on.
    #[error("the key holds a value of another type")]
    WrongType,
    /// A collection record passed its checksum but does not decode.
    #[error("flash record of key is corrupt (malformed collection)")]
    Malformed,
    /// The database index is out of range.
    #[error("no such database")]
    NoSuchDb,
}
