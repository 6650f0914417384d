//! The log-structured flash store: segment files of packed, checksummed
//! records (see docs/format.md), the writer that appends them, and the
//! asynchronous I/O backends that read and write them.

pub mod buf;
pub mod format;
pub mod io;
pub mod lock;
pub mod segment;
