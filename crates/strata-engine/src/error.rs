//! `EngineError`: everything the engine can refuse or fail with.

use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The memory limits are reached and the policy does not evict.
    #[error("command not allowed when used memory > 'maxmemory'")]
    OutOfMemory,
    /// A flash record failed its checksum or did not match the index.
    #[error("flash record of key is corrupt ({0})")]
    Corrupt(&'static str),
    /// The device returned an error.
    #[error("flash I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The database index is out of range.
    #[error("DB index is out of range")]
    NoSuchDb,
}
