//! The ground floor of the server: what every room above may use and
//! which imports no room of the server: reply writing and error texts
//! (`reply`), argument parsing (`args`), glob patterns (`glob`), the
//! counting allocator (`alloc`), Redis's RDB value format (`rdb`) and
//! the process's own figures (`process`).

pub mod alloc;
pub mod args;
pub mod glob;
pub mod process;
pub mod rdb;
pub mod reply;
