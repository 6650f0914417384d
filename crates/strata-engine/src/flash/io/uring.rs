//! The io_uring backend: one ring driven by one thread.
//!
//! Submitters push requests on a queue and bump an eventfd; the ring thread
//! keeps a read of that eventfd always armed, so a new request wakes it even
//! while it sleeps in `submit_and_wait`. Requests live in a slab indexed by
//! the SQE's `user_data` until their completion arrives.
//!
//! Invariants:
//! 1. At most `depth` requests are in the ring; the rest wait in the queue.
//! 2. Every request is completed exactly once (on shutdown, queued ones
//!    complete with an error).
//! 3. A buffer is not touched by anyone but the kernel while its SQE is in
//!    flight: the request (which owns it) sits in the slab until then.

use super::{IoEngine, IoOp, IoRequest};
use io_uring::{opcode, types, IoUring};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const WAKE_TOKEN: u64 = u64::MAX;

struct Shared {
    queue: Mutex<VecDeque<IoRequest>>,
    eventfd: i32,
    shutdown: AtomicBool,
}

impl Shared {
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a valid u64 to our own eventfd.
        unsafe {
            libc::write(self.eventfd, (&one as *const u64).cast(), 8);
        }
    }
}

pub struct UringEngine {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl UringEngine {
    pub fn new(depth: usize) -> io::Result<UringEngine> {
        let entries = (depth.clamp(8, 4096) as u32).next_power_of_two();
        let ring = IoUring::new(entries)?;
        // SAFETY: plain syscall.
        let eventfd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if eventfd < 0 {
            return Err(io::Error::last_os_error());
        }
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            eventfd,
            shutdown: AtomicBool::new(false),
        });
        let s = shared.clone();
        let depth = entries as usize - 1; // one slot for the eventfd read
        let thread = std::thread::Builder::new()
            .name("strata-uring".into())
            .spawn(move || {
                if let Err(e) = drive(ring, &s, depth) {
                    tracing::error!("io_uring thread failed: {e}");
                }
                // Invariant 2: fail whatever is left.
                for r in s.queue.lock().drain(..) {
                    (r.done)(r.buf, Err(io::Error::other("I/O engine shut down")));
                }
            })?;
        Ok(UringEngine {
            shared,
            thread: Some(thread),
        })
    }
}

fn drive(mut ring: IoUring, shared: &Shared, depth: usize) -> io::Result<()> {
    let mut slab: Vec<Option<IoRequest>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut in_flight = 0usize;
    let mut wake_buf = [0u8; 8];
    let mut wake_armed = false;
    loop {
        if !wake_armed {
            let e = opcode::Read::new(types::Fd(shared.eventfd), wake_buf.as_mut_ptr(), 8)
                .build()
                .user_data(WAKE_TOKEN);
            // SAFETY: wake_buf outlives the ring's use of it (it lives for the
            // whole function, and the ring is dropped before return).
            unsafe { push(&mut ring, &e)? };
            wake_armed = true;
        }
        // Move queued requests into the ring (invariant 1).
        {
            let mut q = shared.queue.lock();
            while in_flight < depth {
                let Some(mut req) = q.pop_front() else { break };
                let idx = free.pop().unwrap_or_else(|| {
                    slab.push(None);
                    slab.len() - 1
                });
                let fd = types::Fd(req.file.as_raw_fd());
                let len = req.buf.len() as u32;
                let e = match req.op {
                    IoOp::Read => opcode::Read::new(fd, req.buf.as_mut_ptr(), len)
                        .offset(req.offset)
                        .build(),
                    IoOp::Write => opcode::Write::new(fd, req.buf.as_ptr(), len)
                        .offset(req.offset)
                        .build(),
                }
                .user_data(idx as u64);
                slab[idx] = Some(req);
                in_flight += 1;
                // SAFETY: the buffer is owned by the request in the slab (invariant 3).
                unsafe { push(&mut ring, &e)? };
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (token, res) in done {
            if token == WAKE_TOKEN {
                wake_armed = false;
                if shared.shutdown.load(Ordering::Acquire) && in_flight == 0 {
                    return Ok(());
                }
                continue;
            }
            let idx = token as usize;
            let Some(req) = slab.get_mut(idx).and_then(Option::take) else {
                continue;
            };
            free.push(idx);
            in_flight -= 1;
            complete(req, res);
        }
        if shared.shutdown.load(Ordering::Acquire)
            && in_flight == 0
            && shared.queue.lock().is_empty()
        {
            return Ok(());
        }
    }
}

/// Finishes one request; a short write is completed synchronously (rare:
/// regular files only write short on a full device or a signal).
fn complete(req: IoRequest, res: i32) {
    let IoRequest {
        op,
        file,
        offset,
        buf,
        done,
    } = req;
    if res < 0 {
        return done(buf, Err(io::Error::from_raw_os_error(-res)));
    }
    let n = res as usize;
    if op == IoOp::Write && n < buf.len() {
        use std::os::unix::fs::FileExt;
        let r = file
            .write_all_at(&buf[n..], offset + n as u64)
            .map(|()| buf.len());
        return done(buf, r);
    }
    done(buf, Ok(n))
}

/// Pushes one SQE, submitting first if the submission queue is full.
///
/// # Safety
/// The buffers the entry points at must stay valid until it completes.
unsafe fn push(ring: &mut IoUring, e: &io_uring::squeue::Entry) -> io::Result<()> {
    loop {
        // SAFETY: forwarded from the caller.
        if unsafe { ring.submission().push(e) }.is_ok() {
            return Ok(());
        }
        ring.submit()?;
    }
}

impl IoEngine for UringEngine {
    fn submit(&self, req: IoRequest) {
        if self.shared.shutdown.load(Ordering::Acquire) {
            return (req.done)(req.buf, Err(io::Error::other("I/O engine shut down")));
        }
        self.shared.queue.lock().push_back(req);
        self.shared.wake();
    }

    fn name(&self) -> &'static str {
        "io_uring"
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // SAFETY: closing our own eventfd once, after the thread is gone.
        unsafe {
            libc::close(self.shared.eventfd);
        }
    }
}
