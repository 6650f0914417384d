//! Test support: a fault-injecting I/O engine wrapped around a real backend.

use crate::flash::buf::AlignedBuf;
use crate::flash::io::{IoEngine, IoRequest};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Wraps an [`IoEngine`] and injects faults into reads: every `fail_every`-th
/// read fails with EIO, every `flip_every`-th read has one bit flipped in
/// the returned data (0 = never). Writes fail with the OS error number in
/// `write_errno` while it is not 0 (e.g. ENOSPC), and syncs fail with EIO
/// while `fail_sync` is set.
pub struct FaultyIo {
    pub inner: Arc<dyn IoEngine>,
    pub fail_every: AtomicU64,
    pub flip_every: AtomicU64,
    pub write_errno: std::sync::atomic::AtomicI32,
    pub fail_sync: std::sync::atomic::AtomicBool,
    reads: AtomicU64,
    pub failed: AtomicU64,
    pub flipped: AtomicU64,
}

impl FaultyIo {
    pub fn new(inner: Arc<dyn IoEngine>) -> FaultyIo {
        FaultyIo {
            inner,
            fail_every: AtomicU64::new(0),
            flip_every: AtomicU64::new(0),
            write_errno: std::sync::atomic::AtomicI32::new(0),
            fail_sync: std::sync::atomic::AtomicBool::new(false),
            reads: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            flipped: AtomicU64::new(0),
        }
    }
}

impl IoEngine for FaultyIo {
    fn submit(&self, req: IoRequest) {
        let n = self.reads.fetch_add(1, Relaxed) + 1;
        let fail = self.fail_every.load(Relaxed);
        let flip = self.flip_every.load(Relaxed);
        if fail != 0 && n.is_multiple_of(fail) {
            self.failed.fetch_add(1, Relaxed);
            return (req.done)(req.buf, Err(std::io::Error::from_raw_os_error(libc::EIO)));
        }
        if flip != 0 && n.is_multiple_of(flip) {
            self.flipped.fetch_add(1, Relaxed);
            let done = req.done;
            let offset = req.offset;
            return self.inner.submit(IoRequest {
                done: Box::new(move |mut buf: AlignedBuf, r| {
                    if let Ok(n) = r {
                        if n > 0 {
                            // Flip a bit in the middle of what was read.
                            let i = ((offset as usize) ^ 0x5a5) % n;
                            buf[i] ^= 0x10;
                        }
                    }
                    done(buf, r)
                }),
                ..req
            });
        }
        self.inner.submit(req)
    }

    fn poll(&self) {
        self.inner.poll();
    }

    fn name(&self) -> &'static str {
        "faulty"
    }

    fn write_now(&self, file: &std::fs::File, offset: u64, buf: &[u8]) -> std::io::Result<usize> {
        let errno = self.write_errno.load(Relaxed);
        if errno != 0 {
            return Err(std::io::Error::from_raw_os_error(errno));
        }
        self.inner.write_now(file, offset, buf)
    }

    fn sync(&self, file: &std::fs::File) -> std::io::Result<()> {
        if self.fail_sync.load(Relaxed) {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        self.inner.sync(file)
    }
}
