//! A connection's buffers: the replies its client has not taken yet (the
//! `Backlog`), and the RAM all connections' buffers hold
//! (`CLIENT_BUFFERS`, INFO `mem_clients_normal`).
//!
//! A client may write a whole pipeline before it reads a reply (a plain
//! socket `sendall`, then `recv`). Redis serves it: it keeps reading and
//! buffers the replies (a normal client's output is unlimited). Waiting
//! for the socket to take each batch's replies instead would wait for the
//! client, which waits for us. So replies the socket does not take at once
//! join the backlog, in order, and go out as the socket takes them, while
//! the connection goes on reading and serving.
//!
//! Invariants:
//! 1. Bytes go to the socket in reply order: the backlog's blocks first,
//!    then the connection's current output.
//! 2. `CLIENT_BUFFERS` is the sum of every live connection's input and
//!    output capacities and backlog bytes (each connection's `BufGauge`
//!    adds its own and takes it back when dropped). The RAM budget's
//!    admission leaves it out: demotion cannot free it.

use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Bytes of every connection's buffers (module doc, invariant 2).
pub static CLIENT_BUFFERS: AtomicU64 = AtomicU64::new(0);

/// The largest input or output buffer a connection keeps between turns
/// (a bigger one counts in the allocator-measured RAM for nothing).
pub const BUFFER_KEEP: usize = 256 << 10;

/// Replies the socket did not take yet, oldest first: each block with
/// the bytes its allocation holds (freed whole once the block is sent).
#[derive(Default)]
pub struct Backlog {
    blocks: VecDeque<(Bytes, usize)>,
    /// Bytes the blocks' allocations hold.
    bytes: usize,
}

impl Backlog {
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Writes what the socket takes now, without waiting: the backlog,
    /// then `out`; what is left of `out` joins the backlog (and `out`
    /// starts afresh). Returns the bytes sent.
    pub fn flush_some(&mut self, stream: &TcpStream, out: &mut BytesMut) -> std::io::Result<usize> {
        let mut sent = 0;
        while let Some((front, alloc)) = self.blocks.front_mut() {
            match stream.try_write(front) {
                Ok(n) => {
                    front.advance(n);
                    sent += n;
                    if front.is_empty() {
                        self.bytes -= *alloc;
                        self.blocks.pop_front();
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        while self.blocks.is_empty() && !out.is_empty() {
            match stream.try_write(out) {
                Ok(n) => {
                    out.advance(n);
                    sent += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if !out.is_empty() {
            // Its own allocation: freed whole once sent.
            let rest = std::mem::replace(out, BytesMut::with_capacity(16 * 1024));
            let alloc = rest.capacity();
            self.bytes += alloc;
            self.blocks.push_back((rest.freeze(), alloc));
        } else if out.capacity() > BUFFER_KEEP {
            *out = BytesMut::with_capacity(16 * 1024);
        }
        Ok(sent)
    }

    /// Writes the backlog and `out`, waiting for the socket to take them.
    /// Returns the bytes sent.
    pub async fn flush_all(
        &mut self,
        stream: &mut TcpStream,
        out: &mut BytesMut,
    ) -> std::io::Result<usize> {
        let mut sent = 0;
        while let Some((front, alloc)) = self.blocks.pop_front() {
            self.bytes -= alloc;
            stream.write_all(&front).await?;
            sent += front.len();
        }
        stream.write_all(out).await?;
        sent += out.len();
        out.clear();
        if out.capacity() > BUFFER_KEEP {
            *out = BytesMut::with_capacity(16 * 1024);
        }
        Ok(sent)
    }
}

/// One connection's share of `CLIENT_BUFFERS`.
#[derive(Default)]
pub struct BufGauge(usize);

impl BufGauge {
    /// Counts the connection's buffers as they are now.
    pub fn set(&mut self, inbuf: &BytesMut, out: &BytesMut, backlog: &Backlog) {
        let n = inbuf.capacity() + out.capacity() + backlog.bytes;
        if n > self.0 {
            CLIENT_BUFFERS.fetch_add((n - self.0) as u64, Relaxed);
        } else if n < self.0 {
            CLIENT_BUFFERS.fetch_sub((self.0 - n) as u64, Relaxed);
        }
        self.0 = n;
    }
}

impl Drop for BufGauge {
    fn drop(&mut self) {
        CLIENT_BUFFERS.fetch_sub(self.0 as u64, Relaxed);
    }
}
