//! An exclusive lock on a data directory: one process at a time opens a
//! flash log (as RocksDB's `LOCK` file). Two servers on the same files
//! would each append records the other's index does not know, and each
//! recovery would undo the other's acknowledged writes.
//!
//! Invariants:
//! 1. While a `DirLock` lives, its process holds `flock(LOCK_EX)` on
//!    `<dir>/LOCK`; the kernel releases it when the process dies, however
//!    it dies, so a crash never leaves a stale lock behind.
//! 2. The file holds the holder's pid, for the refusal's message only:
//!    the lock, never the pid, decides.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The name of the lock file in a locked directory.
pub const LOCK_FILE: &str = "LOCK";

/// A held lock on a directory (invariant 1); released on drop.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir` (created if missing), or fails at once
    /// with a message naming the directory and the holder's pid.
    pub fn acquire(dir: &Path, what: &str) -> io::Result<DirLock> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        // SAFETY: flock on a descriptor this function owns.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(err);
            }
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let by = if holder.is_empty() {
                "another process".to_string()
            } else {
                format!("process {holder}")
            };
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{what} {} is in use by {by} (it holds {}); two servers must never share one data directory",
                    dir.display(),
                    path.display()
                ),
            ));
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_directory_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path(), "flash-dir").unwrap();
        let err = DirLock::acquire(dir.path(), "flash-dir").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        let text = err.to_string();
        assert!(text.contains(&std::process::id().to_string()), "{text}");
        assert!(text.contains("flash-dir"), "{text}");
        drop(first);
        DirLock::acquire(dir.path(), "flash-dir").unwrap();
    }
}
