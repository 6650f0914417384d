//! The connection loops (issue #12, the request path): `threads` threads,
//! each running its own tokio `current_thread` runtime. The accept loops
//! hand each new connection to one loop, which serves it: a connection's
//! reads, commands, flash reads' completions and replies all run on one
//! thread, with no work stealing and no wake-up of another worker between
//! them (the multi-thread runtime's futex park/unpark was ~4 µs of every
//! cold GET, `bench/profile.sh`).
//!
//! How many loops take connections follows the load (`loop-scaling
//! auto`, `control`): the fewest that serve it best, one at first. A
//! connection moves between loops at a *quiet point* (everything it was
//! sent is answered and its replies are out), when its loop has an order
//! to shed connections: it leaves its reactor (`into_std`), and its state
//! (`Resume`) goes to the other loop, which serves it from there.
//! `loop-scaling off` hands connections to all loops round robin, and
//! none moves.
//!
//! Invariants:
//! 1. A connection's task runs on one loop between quiet points; nothing
//!    holds a shard lock across an await (as before), so a loop thread
//!    never waits for a task of its own.
//! 2. A connection moves only at a quiet point: no reply pending, nothing
//!    unsent, no flash read of its own in flight (its ring is its loop's),
//!    not subscribed and not a MONITOR (their feeds are not moved). What
//!    it read but did not decode yet moves with it.
//! 3. `Slot::conns` counts the connections handed to a loop and not yet
//!    ended or moved away; new connections go to the active loop with the
//!    fewest (`loop-scaling auto`).
//! 4. Work that blocks (saves, DEBUG SLEEP, shutdown) goes to the
//!    runtime's blocking pool (`spawn_blocking`); scripts run on the
//!    script thread.
//! 5. When the `Loops` is dropped (shutdown), the loops stop taking
//!    connections, and each thread ends with its runtime.
//! 6. A connection whose loop serves others sends a batch's replies at
//!    the end of the loop's turn (`end_of_turn`), never holding them
//!    longer: one yield, then the send.
//!
//! `server-runtime shared` keeps the earlier model instead: one
//! work-stealing runtime of `threads` workers serves every connection
//! (each worker still reads flash on a ring of its own).

mod control;

use crate::command::Shared;
use crate::net::turn::{self, Seat};
use crate::services::clients::ClientHandle;
use std::cell::RefCell;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// What a listener speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Protocol {
    Resp,
    Memcached,
}

/// A connection's state, carried from one loop to another.
pub enum Resume {
    Resp(Box<crate::net::connection::Parked>),
    Memcached(Box<crate::net::memcache::Parked>),
}

/// How a connection's service on a loop ended.
pub type Served = turn::Served<Resume>;

/// A connection handed to a loop.
struct Job {
    shared: Arc<Shared>,
    stream: std::net::TcpStream,
    protocol: Protocol,
    handle: Arc<ClientHandle>,
    resume: Option<Resume>,
    /// TLS's configuration, for a new connection on a TLS listener: the
    /// loop runs the handshake (`net`, invariant 2).
    tls: Option<Arc<rustls::ServerConfig>>,
}

/// One loop's counters (each on a cache line of its own: the loop writes
/// them, the controller and the accept loop read them).
#[repr(align(64))]
#[derive(Default)]
struct Slot {
    /// Connections handed to it and not ended or moved away.
    conns: AtomicUsize,
    /// Connections it is asked to hand to other loops.
    shed: AtomicUsize,
    /// Requests it served.
    requests: AtomicU64,
    /// Its thread's id (0 until it runs).
    tid: AtomicI32,
}

/// The loops' shared state.
pub struct Pool {
    slots: Vec<Slot>,
    /// Emptied when the `Loops` is dropped: the loops then end.
    senders: parking_lot::RwLock<Vec<mpsc::UnboundedSender<Job>>>,
    /// Loops `0..active` take new connections.
    active: AtomicUsize,
    /// The count DEBUG LOOPS fixed (0: the controller chooses).
    forced: AtomicUsize,
    migrations: AtomicU64,
    /// `loop-scaling auto`.
    scaling: bool,
    /// Round robin, with `loop-scaling off`.
    next: AtomicUsize,
}

thread_local! {
    /// On a loop's thread: the pool and the loop's index.
    static HERE: RefCell<Option<Arc<LoopSeat>>> = const { RefCell::new(None) };
}

pub struct Loops {
    pool: Arc<Pool>,
}

impl Loops {
    /// Starts `n` loop threads (at least one); with `per_core` false, none:
    /// connections are served by the runtime the accept loops run on
    /// (`server-runtime shared`). With `scaling`, one loop takes
    /// connections at first and a controller thread adds and removes
    /// loops (`control`).
    pub fn start(n: usize, per_core: bool, scaling: bool) -> std::io::Result<Loops> {
        let loops = if per_core { n.max(1) } else { 0 };
        let scaling = scaling && loops > 1;
        let pool = Arc::new(Pool {
            slots: (0..loops).map(|_| Slot::default()).collect(),
            senders: parking_lot::RwLock::new(Vec::new()),
            active: AtomicUsize::new(if scaling { 1 } else { loops }),
            forced: AtomicUsize::new(0),
            migrations: AtomicU64::new(0),
            scaling,
            next: AtomicUsize::new(0),
        });
        let mut senders = Vec::new();
        for i in 0..loops {
            let (tx, rx) = mpsc::unbounded_channel::<Job>();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                // With flash reads in flight, wait for them on the CPU a
                // little before sleeping (`flash-poll-us`).
                .on_thread_park(strata_engine::before_loop_sleeps)
                .thread_name("strata-blocking")
                .build()?;
            let p = pool.clone();
            std::thread::Builder::new()
                .name("strata-worker".into())
                .spawn(move || {
                    strata_engine::enter_loop();
                    // SAFETY: gettid has no preconditions.
                    p.slots[i].tid.store(unsafe { libc::gettid() }, Relaxed);
                    let seat = Arc::new(LoopSeat { pool: p, i });
                    turn::sit(Some(seat.clone()));
                    HERE.set(Some(seat));
                    rt.block_on(run(rx));
                    HERE.set(None);
                    turn::sit(None);
                })?;
            senders.push(tx);
        }
        *pool.senders.write() = senders;
        if scaling {
            let weak = Arc::downgrade(&pool);
            std::thread::Builder::new()
                .name("strata-loops".into())
                .spawn(move || control_thread(weak))?;
        }
        Ok(Loops { pool })
    }

    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Hands an accepted connection to a loop (or, with no loops, to the
    /// runtime this runs on).
    pub fn serve(
        &self,
        shared: Arc<Shared>,
        stream: TcpStream,
        protocol: Protocol,
        handle: Arc<ClientHandle>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) {
        let id = handle.id;
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot hand a connection to a loop: {e}");
                shared.clients.unregister(id);
                return;
            }
        };
        let job = Job {
            shared,
            stream,
            protocol,
            handle,
            resume: None,
            tls,
        };
        if self.pool.slots.is_empty() {
            tokio::spawn(job.serve());
            return;
        }
        let to = self.pool.pick(None);
        self.pool.send(to, job);
    }
}

impl Drop for Loops {
    fn drop(&mut self) {
        self.pool.senders.write().clear();
    }
}

impl crate::command::LoopControl for Pool {
    fn force(&self, k: usize) -> Result<(), String> {
        Pool::force(self, k)
    }
    fn info(&self) -> (usize, Vec<usize>, u64) {
        Pool::info(self)
    }
    fn scaling(&self) -> bool {
        Pool::scaling(self)
    }
}

impl Pool {
    /// The loop a connection goes to: with scaling, the active loop with
    /// the fewest connections (not `except`); else the next, round robin.
    fn pick(&self, except: Option<usize>) -> usize {
        let n = self.slots.len();
        if !self.scaling {
            return self.next.fetch_add(1, Relaxed) % n;
        }
        let active = self.active.load(Relaxed).clamp(1, n);
        (0..active)
            .filter(|&i| Some(i) != except)
            .min_by_key(|&i| self.slots[i].conns.load(Relaxed))
            .unwrap_or(0)
    }

    /// Sends a connection to loop `to`; closes it if the loops have ended.
    fn send(&self, to: usize, job: Job) {
        self.slots[to].conns.fetch_add(1, Relaxed);
        let senders = self.senders.read();
        let refused = match senders.get(to) {
            Some(tx) => tx.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        if let Some(job) = refused {
            // The loop has ended (shutdown): the connection closes.
            self.slots[to].conns.fetch_sub(1, Relaxed);
            job.shared.clients.unregister(job.handle.id);
        }
    }

    /// Makes loops `0..k` the active ones, and asks the others to hand
    /// their connections over, and the active ones to even out.
    fn set_active(&self, k: usize) {
        let n = self.slots.len();
        if n == 0 {
            return;
        }
        let k = k.clamp(1, n);
        self.active.store(k, Relaxed);
        let counts: Vec<usize> = self.slots.iter().map(|s| s.conns.load(Relaxed)).collect();
        let share = counts.iter().sum::<usize>().div_ceil(k);
        for (i, s) in self.slots.iter().enumerate() {
            let shed = if i >= k {
                counts[i]
            } else {
                counts[i].saturating_sub(share)
            };
            s.shed.store(shed, Relaxed);
        }
    }

    /// Fixes the count of active loops (DEBUG LOOPS), or with 0 hands the
    /// choice back to the controller. Err when there is no such count.
    pub fn force(&self, k: usize) -> Result<(), String> {
        let n = self.slots.len();
        if !self.scaling {
            return Err("ERR loop-scaling is off: every loop serves".into());
        }
        if k > n {
            return Err(format!("ERR there are {n} loops"));
        }
        if k > 0 {
            self.set_active(k);
        }
        self.forced.store(k, Relaxed);
        Ok(())
    }

    /// INFO's figures: loops taking connections, connections per loop,
    /// and the moves so far.
    pub fn info(&self) -> (usize, Vec<usize>, u64) {
        (
            self.active.load(Relaxed),
            self.slots.iter().map(|s| s.conns.load(Relaxed)).collect(),
            self.migrations.load(Relaxed),
        )
    }

    pub fn scaling(&self) -> bool {
        self.scaling
    }
}

/// Loop `i` of a pool, as the connections it serves see it (`net::turn`).
struct LoopSeat {
    pool: Arc<Pool>,
    i: usize,
}

impl Seat for LoopSeat {
    fn note_requests(&self, n: usize) {
        self.pool.slots[self.i]
            .requests
            .fetch_add(n as u64, Relaxed);
    }

    fn crowded(&self) -> bool {
        self.pool.slots[self.i].conns.load(Relaxed) > 1
    }

    fn move_order(&self) -> Option<usize> {
        let slot = &self.pool.slots[self.i];
        if slot.shed.load(Relaxed) == 0 {
            return None;
        }
        slot.shed
            .fetch_update(Relaxed, Relaxed, |s| s.checked_sub(1))
            .ok()?;
        let to = self.pool.pick(Some(self.i));
        (to != self.i).then_some(to)
    }
}

impl Job {
    /// Serves the connection until it ends or moves, on the runtime it is
    /// spawned on.
    async fn serve(self) {
        let Job {
            shared,
            stream,
            protocol,
            handle,
            resume,
            tls,
        } = self;
        let id = handle.id;
        let stream = match TcpStream::from_std(stream) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot serve a connection: {e}");
                shared.clients.unregister(id);
                left_loop();
                return;
            }
        };
        if resume.is_none() {
            // (A new connection; before a TLS handshake, whose records
            // then go out unbatched too.)
            let _ = stream.set_nodelay(true);
        }
        let Some(stream) = crate::net::handshake(stream, tls).await else {
            shared.clients.unregister(id);
            left_loop();
            return;
        };
        let served = match resume {
            Some(Resume::Resp(p)) => {
                crate::net::connection::serve(shared.clone(), stream, handle.clone(), Some(p))
                    .await
                    .map(Resume::Resp)
            }
            Some(Resume::Memcached(p)) => {
                crate::net::memcache::serve(shared.clone(), stream, handle.clone(), Some(p))
                    .await
                    .map(Resume::Memcached)
            }
            None if protocol == Protocol::Resp => {
                crate::net::connection::serve(shared.clone(), stream, handle.clone(), None)
                    .await
                    .map(Resume::Resp)
            }
            None => crate::net::memcache::serve(shared.clone(), stream, handle.clone(), None)
                .await
                .map(Resume::Memcached),
        };
        left_loop();
        match served {
            turn::Served::Closed => {}
            turn::Served::Moved { stream, state, to } => {
                let pool = HERE.with_borrow(|h| h.as_ref().map(|s| s.pool.clone()));
                if let (Some(pool), Ok(stream)) = (pool, stream.into_std()) {
                    pool.migrations.fetch_add(1, Relaxed);
                    pool.send(
                        to,
                        Job {
                            shared,
                            stream,
                            protocol,
                            handle,
                            resume: Some(state),
                            tls: None,
                        },
                    );
                    return;
                }
            }
        }
        shared.clients.unregister(id);
        shared.tracking.off(id);
        shared.tracking.gone(id);
        shared.monitors.remove(id);
    }
}

/// A connection left the loop this runs on (ended or moved).
fn left_loop() {
    HERE.with_borrow(|h| {
        if let Some(s) = h {
            s.pool.slots[s.i].conns.fetch_sub(1, Relaxed);
        }
    });
}

/// One loop: takes connections and serves each in a task of this runtime.
async fn run(mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(job) = rx.recv().await {
        tokio::spawn(job.serve());
    }
}

/// The controller (`loop-scaling auto`): samples the loops every tick and
/// applies the policy's counts, until the pool's loops end.
fn control_thread(pool: std::sync::Weak<Pool>) {
    let n = match pool.upgrade() {
        Some(p) => p.slots.len(),
        None => return,
    };
    let mut policy = control::Policy::new(n);
    let mut last: Option<(std::time::Instant, Vec<(u64, u64)>)> = None;
    let mut was_forced = false;
    loop {
        std::thread::sleep(control::TICK);
        let Some(pool) = pool.upgrade() else { return };
        if pool.senders.read().is_empty() {
            return;
        }
        // Idle on one loop: nothing to decide, no files to read.
        let idle = pool.active.load(Relaxed) == 1
            && pool.forced.load(Relaxed) == 0
            && last.as_ref().is_some_and(|(_, prev)| {
                (pool.slots.iter().zip(prev)).all(|(s, p)| s.requests.load(Relaxed) == p.0)
            });
        if idle {
            continue;
        }
        let now = std::time::Instant::now();
        let mut sample = Vec::with_capacity(n);
        // (A loop whose thread has not started yet: the next tick.)
        if pool.slots.iter().any(|s| s.tid.load(Relaxed) == 0) {
            continue;
        }
        for s in &pool.slots {
            let tid = s.tid.load(Relaxed);
            let Some((run, wait)) = control::schedstat(tid) else {
                // No scheduler statistics here: every loop serves.
                tracing::info!("loop-scaling: no schedstat for the loops; all {n} serve");
                pool.set_active(n);
                return;
            };
            sample.push((s.requests.load(Relaxed), run + wait));
        }
        let forced = pool.forced.load(Relaxed);
        if forced > 0 {
            was_forced = true;
        } else if was_forced {
            was_forced = false;
            policy.reset(pool.active.load(Relaxed));
        } else if let Some((t0, prev)) = &last {
            let dt = now.duration_since(*t0).as_secs_f64().max(1e-3);
            let rate = sample
                .iter()
                .zip(prev)
                .map(|(a, b)| a.0.saturating_sub(b.0))
                .sum::<u64>() as f64
                / dt;
            let demand: Vec<f64> = sample
                .iter()
                .zip(prev)
                .map(|(a, b)| a.1.saturating_sub(b.1) as f64 / 1e9 / dt)
                .collect();
            if let Some(k) = policy.tick(rate, &demand) {
                pool.set_active(k);
            }
        }
        last = Some((now, sample));
    }
}
