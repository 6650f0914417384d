//! Asynchronous flash I/O behind one trait, [`IoEngine`], with owned buffers
//! handed back on completion (the shape of foyer's `IoEngine`).
//!
//! Two backends implement it and the same engine tests run against both:
//! - [`uring::UringEngine`]: one io_uring per engine, submitted to by the
//!   calling thread and reaped on the tokio reactor (or a thread outside a
//!   runtime), hundreds of operations in flight.
//! - [`psync::PsyncEngine`]: a pool of threads issuing `pread`/`pwrite`; the
//!   pool size bounds the operations in flight. Portable.
//!
//! The engine never blocks a request thread on a disk syscall: request paths
//! submit and await a completion future ([`read`]); only the
//! background demoter/reclaimer thread waits synchronously.

pub mod psync;
#[cfg(target_os = "linux")]
pub mod uring;

use super::buf::AlignedBuf;
use std::fs::File;
use std::future::Future;
use std::io;
use std::sync::Arc;

/// What an operation hands back: the caller's buffer and the outcome.
pub type IoDone = Box<dyn FnOnce(AlignedBuf, io::Result<usize>) + Send>;

/// One read handed to an [`IoEngine`] (writes are `write_now`'s).
pub struct IoRequest {
    pub file: Arc<File>,
    pub offset: u64,
    /// A read fills `buf[..buf.len()]`.
    pub buf: AlignedBuf,
    pub done: IoDone,
}

/// An asynchronous block I/O backend for reads; writes and syncs are
/// blocking calls of the journal and background threads.
///
/// Caller guarantees: `offset`, the buffer's address and its length are
/// multiples of [`PAGE`](super::buf::PAGE) (required for O_DIRECT files).
///
/// Implementation MUST: call `done` exactly once per request, from any
/// thread, with the request's own buffer; report a short read as `Ok(n)` with
/// the bytes read; never block the submitting thread on the device.
pub trait IoEngine: Send + Sync + 'static {
    fn submit(&self, req: IoRequest);
    /// Delivers whatever completions are ready, on the calling thread.
    /// Blocking waiters call it so they never depend on another thread
    /// to make progress. Default: nothing to do.
    fn poll(&self) {}
    /// A short name for INFO and logs ("io_uring", "psync", ...).
    fn name(&self) -> &'static str;
    /// Makes the data written to `file` durable (fdatasync). Blocking: the
    /// journal and background threads call it, never a request path.
    fn sync(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }
    /// Writes all of `buf` at `offset` on the calling thread (pwrite), for
    /// the journal and background threads, which wait for their writes
    /// anyway: through a ring, an appending O_DIRECT write is handed to a
    /// kernel worker thread and its completion back (two context switches
    /// per write, a cycle of every `appendfsync always` batch).
    fn write_now(&self, file: &File, offset: u64, buf: &[u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        file.write_all_at(buf, offset)?;
        Ok(buf.len())
    }
}

/// `flash-poll-us`'s default: how long a loop with reads in flight waits
/// for them on the CPU before it sleeps (`uring` invariant 5).
pub const DEFAULT_POLL_US: u64 = 50;

static POLL_US: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(DEFAULT_POLL_US);

/// Sets `flash-poll-us` (0: a loop sleeps at once).
pub fn set_poll_us(us: u64) {
    POLL_US.store(us, std::sync::atomic::Ordering::Relaxed);
}

/// Called by a connection loop before it sleeps: with reads in flight on
/// its ring, waits for one on the CPU first (`uring` invariant 5; nothing
/// with the psync backend, whose reads complete on its own threads).
pub fn before_loop_sleeps() {
    // The turn's changes are queued: the journal may sync them now.
    crate::log::journal::wake_deferred();
    #[cfg(target_os = "linux")]
    match POLL_US.load(std::sync::atomic::Ordering::Relaxed) {
        0 => {}
        us => uring::poll_completions(std::time::Duration::from_micros(us)),
    }
}

/// Declares the calling thread a connection loop (a tokio `current_thread`
/// runtime serving its own connections): the io_uring backend gives it a
/// ring of its own, reaped on its runtime (`uring` module doc).
pub fn enter_loop() {
    crate::log::journal::defer_wakes();
    #[cfg(target_os = "linux")]
    uring::enter_loop();
}

/// Submits a read and returns a future of its completion.
pub fn read(
    io: &dyn IoEngine,
    file: Arc<File>,
    offset: u64,
    buf: AlignedBuf,
) -> impl Future<Output = (AlignedBuf, io::Result<usize>)> {
    submit_with_future(io, file, offset, buf)
}

/// Writes on the calling (background) thread, blocking until done
/// (`IoEngine::write_now`).
pub fn write_blocking(
    io: &dyn IoEngine,
    file: Arc<File>,
    offset: u64,
    buf: AlignedBuf,
) -> (AlignedBuf, io::Result<usize>) {
    let r = io.write_now(&file, offset, &buf[..]);
    (buf, r)
}

/// Submits a read and blocks the calling (background) thread until done.
pub fn read_blocking(
    io: &dyn IoEngine,
    file: Arc<File>,
    offset: u64,
    buf: AlignedBuf,
) -> (AlignedBuf, io::Result<usize>) {
    submit_blocking(io, file, offset, buf)
}

fn submit_blocking(
    io: &dyn IoEngine,
    file: Arc<File>,
    offset: u64,
    buf: AlignedBuf,
) -> (AlignedBuf, io::Result<usize>) {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    io.submit(IoRequest {
        file,
        offset,
        buf,
        done: Box::new(move |b, r| {
            let _ = tx.send((b, r));
        }),
    });
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(1)) {
            Ok(done) => return done,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => io.poll(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return (
                    AlignedBuf::zeroed(0),
                    Err(io::Error::other("I/O engine dropped a request")),
                )
            }
        }
    }
}

fn submit_with_future(
    io: &dyn IoEngine,
    file: Arc<File>,
    offset: u64,
    buf: AlignedBuf,
) -> impl Future<Output = (AlignedBuf, io::Result<usize>)> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    io.submit(IoRequest {
        file,
        offset,
        buf,
        done: Box::new(move |b, r| {
            let _ = tx.send((b, r));
        }),
    });
    async move {
        match rx.await {
            Ok(done) => done,
            Err(_) => (
                AlignedBuf::zeroed(0),
                Err(io::Error::other("I/O engine shut down")),
            ),
        }
    }
}

/// Which backend to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoBackend {
    /// io_uring where the kernel allows it, else psync.
    Auto,
    IoUring,
    Psync,
}

/// Builds the requested backend. `depth` is the number of operations the
/// backend keeps in flight at most (ring entries, or pool threads for psync).
pub fn open_backend(backend: IoBackend, depth: usize) -> io::Result<Arc<dyn IoEngine>> {
    match backend {
        IoBackend::Psync => Ok(Arc::new(psync::PsyncEngine::new(depth.min(64)))),
        #[cfg(target_os = "linux")]
        IoBackend::IoUring => Ok(Arc::new(uring::UringEngine::new(depth)?)),
        #[cfg(not(target_os = "linux"))]
        IoBackend::IoUring => Err(io::Error::other("io_uring is only available on Linux")),
        IoBackend::Auto => match open_backend(IoBackend::IoUring, depth) {
            Ok(e) => Ok(e),
            Err(err) => {
                tracing::warn!("io_uring unavailable ({err}); using the psync backend");
                open_backend(IoBackend::Psync, depth)
            }
        },
    }
}
