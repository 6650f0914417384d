//! The connection loops (issue #12, the request path): `threads` threads,
//! each running its own tokio `current_thread` runtime. The accept loops
//! hand each new connection to one loop (round robin), which serves it
//! from then on: a connection's reads, commands, flash reads' completions
//! and replies all run on one thread, with no work stealing and no
//! wake-up of another worker between them (the multi-thread runtime's
//! futex park/unpark was ~4 µs of every cold GET, `bench/profile.sh`).
//!
//! Invariants:
//! 1. A connection's task runs on the loop it was handed to, until it
//!    ends; nothing holds a shard lock across an await (as before), so a
//!    loop thread never waits for a task of its own.
//! 2. Work that blocks (saves, DEBUG SLEEP, shutdown) goes to the
//!    runtime's blocking pool (`spawn_blocking`), as on the multi-thread
//!    runtime; scripts run on the script thread.
//! 3. When the `Loops` is dropped (shutdown), each loop stops taking
//!    connections and its thread ends with its runtime.
//!
//! `server-runtime shared` keeps the earlier model instead: one
//! work-stealing runtime of `threads` workers serves every connection
//! (each worker still reads flash on a ring of its own).

use crate::clients::ClientHandle;
use crate::Shared;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use tokio::sync::mpsc;

/// What a listener speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Protocol {
    Resp,
    Memcached,
}

/// A connection handed to a loop.
struct Job {
    shared: Arc<Shared>,
    stream: std::net::TcpStream,
    protocol: Protocol,
    handle: Arc<ClientHandle>,
}

pub struct Loops {
    senders: Vec<mpsc::UnboundedSender<Job>>,
    next: AtomicUsize,
}

impl Loops {
    /// Starts `n` loop threads (at least one); with `per_core` false, none:
    /// connections are served by the runtime the accept loops run on
    /// (`server-runtime shared`).
    pub fn start(n: usize, per_core: bool) -> std::io::Result<Loops> {
        let loops = if per_core { n.max(1) } else { 0 };
        let mut senders = Vec::new();
        for _ in 0..loops {
            let (tx, rx) = mpsc::unbounded_channel::<Job>();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_name("strata-blocking")
                .build()?;
            std::thread::Builder::new()
                .name("strata-worker".into())
                .spawn(move || {
                    strata_engine::enter_loop();
                    rt.block_on(run(rx))
                })?;
            senders.push(tx);
        }
        Ok(Loops {
            senders,
            next: AtomicUsize::new(0),
        })
    }

    /// Hands an accepted connection to the next loop (or, with no loops,
    /// to the runtime this runs on).
    pub fn serve(
        &self,
        shared: Arc<Shared>,
        stream: tokio::net::TcpStream,
        protocol: Protocol,
        handle: Arc<ClientHandle>,
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
            shared: shared.clone(),
            stream,
            protocol,
            handle,
        };
        if self.senders.is_empty() {
            tokio::spawn(job.serve());
            return;
        }
        let i = self.next.fetch_add(1, Relaxed) % self.senders.len();
        if self.senders[i].send(job).is_err() {
            // The loop has ended (shutdown): the connection closes.
            shared.clients.unregister(id);
        }
    }
}

impl Job {
    /// Serves the connection to its end, on the runtime it is spawned on.
    async fn serve(self) {
        let Job {
            shared,
            stream,
            protocol,
            handle,
        } = self;
        let id = handle.id;
        let stream = match tokio::net::TcpStream::from_std(stream) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot serve a connection: {e}");
                shared.clients.unregister(id);
                return;
            }
        };
        match protocol {
            Protocol::Resp => crate::connection::serve(shared.clone(), stream, handle).await,
            Protocol::Memcached => crate::memcache::serve(shared.clone(), stream, handle).await,
        }
        shared.clients.unregister(id);
        shared.tracking.off(id);
        shared.monitors.remove(id);
    }
}

/// One loop: takes connections and serves each in a task of this runtime.
async fn run(mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(job) = rx.recv().await {
        tokio::spawn(job.serve());
    }
}
