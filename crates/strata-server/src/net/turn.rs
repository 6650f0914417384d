//! What a connection asks of the loop that serves it, whichever protocol
//! it speaks: to count its requests (`note_requests`), to send its
//! replies at the end of the loop's turn (`end_of_turn`), and whether to
//! move to another loop at a quiet point (`move_order`); and how its
//! service ended (`Served`). The loops (`net::loops`) seat themselves on
//! their threads (`sit`); the connections (`net::connection`,
//! `net::memcache`) only ask. So the loops import the connections, never
//! the other way round.

use std::cell::RefCell;
use std::sync::Arc;
use tokio::net::TcpStream;

/// How a connection's service on a loop ended; `P` is its state parked
/// at a quiet point.
pub enum Served<P> {
    Closed,
    /// At a quiet point, told to move: loop `to` serves it from `state`.
    Moved {
        stream: TcpStream,
        state: P,
        to: usize,
    },
}

impl<P> Served<P> {
    /// The same ending with the parked state made a `Q`.
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> Served<Q> {
        match self {
            Served::Closed => Served::Closed,
            Served::Moved { stream, state, to } => Served::Moved {
                stream,
                state: f(state),
                to,
            },
        }
    }
}

/// A loop, as the connections it serves see it.
pub trait Seat {
    /// Counts `n` requests served (the loop controller's rate).
    fn note_requests(&self, n: usize);
    /// Whether the loop serves other connections too.
    fn crowded(&self) -> bool;
    /// The loop a connection at a quiet point should move to, when this
    /// one sheds connections.
    fn move_order(&self) -> Option<usize>;
}

thread_local! {
    /// On a loop's thread: the loop.
    static SEAT: RefCell<Option<Arc<dyn Seat>>> = const { RefCell::new(None) };
}

/// Seats this thread's loop (None when its runtime ends).
pub fn sit(seat: Option<Arc<dyn Seat>>) {
    SEAT.set(seat);
}

/// Counts `n` requests served by the loop this runs on. Connections call
/// it once per batch.
pub fn note_requests(n: usize) {
    if n == 0 {
        return;
    }
    SEAT.with_borrow(|s| {
        if let Some(s) = s {
            s.note_requests(n);
        }
    });
}

/// Waits until the loop has run the other connections it has work for,
/// when it serves several (`Seat::crowded`): replies then go out
/// together, as Redis writes its clients' replies just before its event
/// loop sleeps. A client woken by one reply finds the next ones ready,
/// where replies sent one per connection batch woke it (an IPI on a VM)
/// for each: `sock_def_readable` was 18% of the server's CPU under a
/// pipelined LPUSH, against 6% for redis-server (BENCHMARKS.md).
pub async fn end_of_turn() {
    if SEAT.with_borrow(|s| s.as_ref().is_some_and(|s| s.crowded())) {
        // (tokio defers a yielded task's wake-up until the runtime has
        // run the tasks it had and polled its reactor.)
        tokio::task::yield_now().await;
    }
}

/// At a connection's quiet point (`net::loops`, invariant 2): the loop it
/// should move to, when its loop sheds connections.
pub fn move_order() -> Option<usize> {
    SEAT.with_borrow(|s| s.as_ref()?.move_order())
}
