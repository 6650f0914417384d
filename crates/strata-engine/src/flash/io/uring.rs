//! The io_uring backend: rings submitted to directly by the calling thread
//! (no hand-off), with completions reaped by whoever is woken by the ring:
//! - a thread that declared itself a connection loop (`enter_loop`: one
//!   tokio `current_thread` runtime per thread) gets a ring of its own,
//!   reaped by a task of its own runtime: a cold GET's read is submitted,
//!   completed and answered on one thread;
//! - other threads inside a tokio runtime share the engine's main ring,
//!   reaped by a task on the reactor of the runtime that opened the engine;
//! - otherwise, a dedicated reaper thread reaps the main ring.
//!
//! A reaper on a reactor watches the ring's own fd, which epoll reports
//! readable while completions wait: reaping costs no syscall. The thread
//! reaper waits on an eventfd registered with its ring instead.
//!
//! Blocking callers (the background thread) also reap while they wait
//! (`IoEngine::poll`), so they never depend on the reaper being alive.
//!
//! Invariants:
//! 1. At most `depth` requests are in a ring; the rest wait in `queued`
//!    and enter as completions free slots.
//! 2. Every request is completed exactly once; callbacks run outside the
//!    ring lock. On shutdown, queued requests complete with an error.
//! 3. A buffer is not touched by anyone but the kernel while its SQE is in
//!    flight: the request (which owns it) sits in the slab until then.
//! 4. A loop's ring is used only by its thread's submissions; its reaper
//!    runs on that thread's runtime, which outlives every read it serves
//!    (a connection's task runs on its loop).
//! 5. A loop about to sleep with reads in flight on its ring first waits
//!    for them on the CPU, yielding it each turn, for at most
//!    `flash-poll-us` ([`poll_completions`]): sleeping in epoll and being
//!    woken by the completion's interrupt costs more latency than the
//!    device's read itself on a VM (flash-bound GET at 32 in flight:
//!    +25% GET/s, BENCHMARKS.md). The completion still reaches the loop
//!    through the ring's fd, so the wait never takes one away.
//! 6. On a runtime, staged reads are submitted once `SUBMIT_BATCH` of them
//!    wait, and the rest by a task of the tick that staged them.

use super::{IoEngine, IoRequest};
use io_uring::{opcode, types, IoUring};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Staged reads submitted together without waiting for the tick's end
/// (invariant 6). Submitting only at the tick's end made a read wait for
/// every other connection the tick served (58 us on average at 32 GETs in
/// flight, one per connection), and sent the device the tick's reads in
/// one burst that queued behind itself; each read at once costs a
/// doorbell per read. Flash-bound GET at 32 x P1: 57.7k -> 64.4k GET/s
/// (medians of 5), 16.4 -> 14.8 us of server CPU per GET (BENCHMARKS.md,
/// thirteenth session).
const SUBMIT_BATCH: usize = 4;

thread_local! {
    /// This thread is a connection loop (`enter_loop`).
    static LOOP: Cell<bool> = const { Cell::new(false) };
    /// This thread's rings, by engine (`UringEngine::id`).
    static LOCAL: RefCell<Vec<(usize, Arc<Shared>)>> = const { RefCell::new(Vec::new()) };
}

/// Declares the calling thread a connection loop: a tokio `current_thread`
/// runtime that serves its connections' flash reads itself (module doc).
pub fn enter_loop() {
    LOOP.with(|l| l.set(true));
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

struct Ring {
    ring: IoUring,
    slab: Vec<Option<IoRequest>>,
    free: Vec<usize>,
    in_flight: usize,
    depth: usize,
    queued: VecDeque<IoRequest>,
}

impl Ring {
    /// Moves queued requests into free ring slots (invariant 1) and tells
    /// the kernel about them.
    fn submit_queued(&mut self) -> io::Result<()> {
        if self.stage_queued()? {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Moves queued requests into free ring slots without telling the
    /// kernel (a later `ring.submit()` does); returns whether any moved.
    fn stage_queued(&mut self) -> io::Result<bool> {
        let mut pushed = false;
        while self.in_flight < self.depth {
            let Some(mut req) = self.queued.pop_front() else {
                break;
            };
            let idx = self.free.pop().unwrap_or_else(|| {
                self.slab.push(None);
                self.slab.len() - 1
            });
            let fd = types::Fd(req.file.as_raw_fd());
            let len = req.buf.len() as u32;
            let e = opcode::Read::new(fd, req.buf.as_mut_ptr(), len)
                .offset(req.offset)
                .build()
                .user_data(idx as u64);
            self.slab[idx] = Some(req);
            self.in_flight += 1;
            // SAFETY: the buffer is owned by the request in the slab until
            // its completion is reaped (invariant 3).
            while unsafe { self.ring.submission().push(&e) }.is_err() {
                self.ring.submit()?;
            }
            pushed = true;
        }
        Ok(pushed)
    }

    /// Takes the completed requests out of the ring.
    fn reap(&mut self, done: &mut Vec<(IoRequest, i32)>) {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (token, res) in cqes {
            let idx = token as usize;
            if let Some(req) = self.slab.get_mut(idx).and_then(Option::take) {
                self.free.push(idx);
                self.in_flight -= 1;
                done.push((req, res));
            }
        }
    }
}

struct Shared {
    ring: Mutex<Ring>,
    /// A task that will tell the kernel about staged requests is spawned.
    flush_scheduled: AtomicBool,
    /// The ring's fd (open as long as `ring` is).
    ring_fd: RawFd,
    /// Registered with the ring of a thread reaper: signalled on every
    /// completion (a reactor's reaper watches `ring_fd`).
    eventfd: Option<OwnedFd>,
    shutdown: AtomicBool,
}

impl Shared {
    /// Reaps completions, refills the ring, then runs the callbacks.
    fn reap(&self) {
        let mut done = Vec::new();
        {
            let mut r = self.ring.lock();
            r.reap(&mut done);
            if let Err(e) = r.submit_queued() {
                tracing::error!("io_uring submit failed: {e}");
            }
            // Requests a runtime worker staged are submitted by a task of
            // its tick; a caller blocked on that same worker (a checkpoint
            // run by DEBUG RELOAD) polls here, and the task cannot run
            // until it returns: submit them now, or it waits forever.
            if !r.ring.submission().is_empty() {
                if let Err(e) = r.ring.submit() {
                    tracing::error!("io_uring submit failed: {e}");
                }
            }
        }
        for (req, res) in done {
            complete(req, res);
        }
    }
}

pub struct UringEngine {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Completions are reaped on a tokio reactor (so staged submissions
    /// are always flushed by a task of a live runtime).
    reactor_mode: bool,
    /// Ring entries (each loop's ring has as many).
    entries: u32,
    /// This engine's key among a thread's rings.
    id: usize,
    /// Every loop's ring, to shut down with the engine.
    locals: Mutex<Vec<Arc<Shared>>>,
}

/// A new ring; with an eventfd registered for a thread reaper.
fn new_ring(entries: u32, with_eventfd: bool) -> io::Result<Arc<Shared>> {
    let ring = IoUring::new(entries)?;
    let eventfd = if with_eventfd {
        // SAFETY: plain syscall; the fd is owned below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new fd that nothing else owns.
        let eventfd = unsafe { OwnedFd::from_raw_fd(raw) };
        ring.submitter().register_eventfd(raw)?;
        Some(eventfd)
    } else {
        None
    };
    Ok(Arc::new(Shared {
        ring_fd: ring.as_raw_fd(),
        ring: Mutex::new(Ring {
            ring,
            slab: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            depth: entries as usize,
            queued: VecDeque::new(),
        }),
        eventfd,
        shutdown: AtomicBool::new(false),
        flush_scheduled: AtomicBool::new(false),
    }))
}

/// Spawns the reaper of `shared` on `handle`'s runtime.
fn reap_on(handle: &tokio::runtime::Handle, shared: &Arc<Shared>) -> io::Result<()> {
    let _entered = handle.enter();
    // SAFETY: the ring is owned by `Shared`, which the `RingFd` handle
    // keeps alive, so its fd stays open and unchanged for the whole life
    // of the AsyncFd.
    let fd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(
            RingFd(shared.clone()),
            tokio::io::Interest::READABLE,
        )
    }
    .map_err(io::Error::from)?;
    handle.spawn(reap_on_reactor(fd));
    Ok(())
}

impl UringEngine {
    pub fn new(depth: usize) -> io::Result<UringEngine> {
        let entries = (depth.clamp(8, 4096) as u32).next_power_of_two();
        let handle = tokio::runtime::Handle::try_current();
        let shared = new_ring(entries, handle.is_err())?;
        let thread = match handle {
            Ok(handle) => {
                reap_on(&handle, &shared)?;
                None
            }
            Err(_) => {
                let s = shared.clone();
                Some(
                    std::thread::Builder::new()
                        .name("strata-uring".into())
                        .spawn(move || reap_on_thread(&s))?,
                )
            }
        };
        Ok(UringEngine {
            reactor_mode: thread.is_none(),
            shared,
            thread,
            entries,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            locals: Mutex::new(Vec::new()),
        })
    }

    /// The calling thread's ring of this engine, if it has one.
    fn this_threads_ring(&self) -> Option<Arc<Shared>> {
        LOCAL.with(|l| {
            l.borrow()
                .iter()
                .find(|(id, _)| *id == self.id)
                .map(|(_, r)| r.clone())
        })
    }

    /// The calling loop thread's ring, made on its first read (None on
    /// any other thread, or if the ring cannot be made: the main ring
    /// serves then).
    fn local_ring(&self) -> Option<Arc<Shared>> {
        if !LOOP.with(Cell::get) {
            return None;
        }
        if let Some(r) = self.this_threads_ring() {
            return Some(r);
        }
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            let handle = tokio::runtime::Handle::try_current().ok()?;
            let made = new_ring(self.entries, false).and_then(|r| reap_on(&handle, &r).map(|()| r));
            match made {
                Ok(r) => {
                    self.locals.lock().push(r.clone());
                    l.push((self.id, r.clone()));
                    Some(r)
                }
                Err(e) => {
                    tracing::warn!("no io_uring ring for this loop ({e}); using the shared one");
                    None
                }
            }
        })
    }
}

/// Stages `req` in `shared`'s ring, to be submitted by a task that runs
/// after the other ready tasks of this runtime tick (one syscall, and one
/// device doorbell, for all the reads the tick's connections issued).
fn stage_on(shared: &Arc<Shared>, handle: &tokio::runtime::Handle, req: IoRequest) {
    let mut r = shared.ring.lock();
    r.queued.push_back(req);
    let result = r.stage_queued().and_then(|staged| {
        if r.ring.submission().len() >= SUBMIT_BATCH {
            return r.ring.submit().map(drop);
        }
        drop(r);
        if staged && !shared.flush_scheduled.swap(true, Ordering::AcqRel) {
            let s = shared.clone();
            handle.spawn(async move {
                s.flush_scheduled.store(false, Ordering::Release);
                let mut r = s.ring.lock();
                // (Nothing left when a batch went early: no syscall.)
                if !r.ring.submission().is_empty() {
                    if let Err(e) = r.ring.submit() {
                        tracing::error!("io_uring submit failed: {e}");
                    }
                }
            });
        }
        Ok(())
    });
    if let Err(e) = result {
        tracing::error!("io_uring submit failed: {e}");
    }
}

/// Waits on the CPU, up to `budget`, for a completion of a read in flight
/// on this loop thread's rings (invariant 5): called by a loop about to
/// sleep. Returns at once if none is in flight or a completion waits.
/// Each turn yields the CPU first, so a runnable thread (a client sharing
/// the core) runs before the wait goes on.
pub fn poll_completions(budget: std::time::Duration) {
    LOCAL.with(|l| {
        let rings = l.borrow();
        // The clock is read only once a read is seen in flight: a loop
        // parks often with none.
        let mut started = None;
        loop {
            let mut in_flight = false;
            for (_, r) in rings.iter() {
                let mut g = r.ring.lock();
                if g.in_flight > 0 {
                    if !g.ring.completion().is_empty() {
                        return;
                    }
                    in_flight = true;
                }
            }
            if !in_flight {
                return;
            }
            let started = *started.get_or_insert_with(std::time::Instant::now);
            if started.elapsed() >= budget {
                return;
            }
            // SAFETY: no preconditions.
            unsafe { libc::sched_yield() };
        }
    })
}

/// Reads (and so resets) the eventfd.
fn drain_eventfd(fd: RawFd) {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into a valid u64 from our own eventfd.
    unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
}

/// The ring's fd, kept open by the shared state it belongs to.
struct RingFd(Arc<Shared>);

impl AsRawFd for RingFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.ring_fd
    }
}

async fn reap_on_reactor(fd: tokio::io::unix::AsyncFd<RingFd>) {
    let s = fd.get_ref().0.clone();
    while !s.shutdown.load(Ordering::Acquire) {
        let Ok(mut guard) = fd.readable().await else {
            return;
        };
        s.reap();
        // Readiness is cleared once the queue is seen empty: a completion
        // posted after that wakes epoll again (a new event, which the
        // clear does not erase).
        if s.ring.lock().ring.completion().is_empty() {
            guard.clear_ready();
        }
    }
}

fn reap_on_thread(s: &Shared) {
    let Some(fd) = s.eventfd.as_ref().map(|e| e.as_raw_fd()) else {
        return;
    };
    while !s.shutdown.load(Ordering::Acquire) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; 100 ms timeout so shutdown is noticed.
        unsafe { libc::poll(&mut p, 1, 100) };
        drain_eventfd(fd);
        s.reap();
    }
}

/// Finishes one read.
fn complete(req: IoRequest, res: i32) {
    let IoRequest { buf, done, .. } = req;
    if res < 0 {
        return done(buf, Err(io::Error::from_raw_os_error(-res)));
    }
    done(buf, Ok(res as usize))
}

impl IoEngine for UringEngine {
    fn submit(&self, req: IoRequest) {
        if self.shared.shutdown.load(Ordering::Acquire) {
            return (req.done)(req.buf, Err(io::Error::other("I/O engine shut down")));
        }
        // On a runtime, requests are staged and submitted together by a
        // task of this tick (`stage_on`); a loop thread uses its own ring.
        // Elsewhere they are submitted now.
        if let Some(ring) = self.local_ring() {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                return stage_on(&ring, &handle, req);
            }
        }
        if self.reactor_mode {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                return stage_on(&self.shared, &handle, req);
            }
        }
        let mut r = self.shared.ring.lock();
        r.queued.push_back(req);
        if let Err(e) = r.submit_queued() {
            tracing::error!("io_uring submit failed: {e}");
        }
    }

    fn poll(&self) {
        self.shared.reap();
        if let Some(r) = self.this_threads_ring() {
            r.reap();
        }
    }

    fn name(&self) -> &'static str {
        "io_uring"
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // The loops' rings: what is in flight completes on their reapers;
        // those then see the flag and end.
        for r in self.locals.lock().drain(..) {
            r.shutdown.store(true, Ordering::Release);
            wake(&r);
        }
        self.shared.shutdown.store(true, Ordering::Release);
        // Let what is in flight finish, then fail what never entered.
        for _ in 0..1000 {
            self.shared.reap();
            if self.shared.ring.lock().in_flight == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let queued: Vec<IoRequest> = self.shared.ring.lock().queued.drain(..).collect();
        for r in queued {
            (r.done)(r.buf, Err(io::Error::other("I/O engine shut down")));
        }
        // Wake a reactor reaper so it sees the shutdown flag.
        wake(&self.shared);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Wakes a ring's reaper (so it sees a shutdown): through its eventfd,
/// or a no-op whose completion makes the ring's fd readable.
fn wake(s: &Shared) {
    if let Some(e) = &s.eventfd {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a valid u64 to our own eventfd.
        unsafe {
            libc::write(e.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
        return;
    }
    let mut r = s.ring.lock();
    // (Its token matches no request: reaping ignores it.)
    let nop = opcode::Nop::new().build().user_data(u64::MAX);
    // SAFETY: a no-op references no memory.
    if unsafe { r.ring.submission().push(&nop) }.is_ok() {
        let _ = r.ring.submit();
    }
}
