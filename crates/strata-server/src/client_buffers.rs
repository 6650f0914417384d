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
//! 3. A connection whose waiting replies (its output and backlog) reach
//!    its class's `client-output-buffer-limit` hard limit, or stay at or
//!    past the soft one for longer than its seconds, is closed with what
//!    it holds dropped (Redis's `checkClientOutputBufferLimits`): a client
//!    that asks and never reads holds at most that much.

use crate::clients::{BufferSizes, ClientHandle};
use crate::net::stream::Stream;
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;
use tokio::io::AsyncWriteExt;

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

    /// Bytes the blocks' allocations hold.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Writes what the socket takes now, without waiting: the backlog,
    /// then `out`; what is left of `out` joins the backlog (and `out`
    /// starts afresh). Returns the bytes sent.
    pub fn flush_some(
        &mut self,
        stream: &mut Stream,
        out: &mut BytesMut,
    ) -> std::io::Result<usize> {
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
        stream: &mut Stream,
        out: &mut BytesMut,
    ) -> std::io::Result<usize> {
        let mut sent = 0;
        while let Some((front, alloc)) = self.blocks.pop_front() {
            self.bytes -= alloc;
            stream.write_all(&front).await?;
            sent += front.len();
        }
        stream.write_all(out).await?;
        // (What rustls holds goes out too; a plain stream's does nothing.)
        stream.flush().await?;
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
    /// Counts the connection's buffers as they are now, in the total and
    /// in its CLIENT LIST fields.
    pub fn set(
        &mut self,
        handle: &ClientHandle,
        inbuf: &BytesMut,
        out: &BytesMut,
        backlog: &Backlog,
    ) {
        let n = inbuf.capacity() + out.capacity() + backlog.bytes;
        handle.buffers.store(BufferSizes {
            qbuf: inbuf.len(),
            qbuf_free: inbuf.capacity() - inbuf.len(),
            obl: out.len(),
            oll: backlog.blocks.len(),
            omem: backlog.bytes,
            tot_mem: n,
        });
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

/// The classes of `client-output-buffer-limit`, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Normal = 0,
    Replica = 1,
    PubSub = 2,
}

/// `client-output-buffer-limit` as the connections read it: per class,
/// hard bytes, soft bytes, soft seconds (0 = none).
#[derive(Default)]
pub struct OutputLimits([[AtomicU64; 3]; 3]);

impl OutputLimits {
    /// `class`'s hard limit in bytes (0 = none).
    pub fn hard(&self, class: Class) -> u64 {
        self.0[class as usize][0].load(Relaxed)
    }

    pub fn set(&self, limits: [[u64; 3]; 3]) {
        for (class, l) in self.0.iter().zip(limits) {
            for (a, v) in class.iter().zip(l) {
                a.store(v, Relaxed);
            }
        }
    }
}

/// One connection's watch over its waiting replies (invariant 3): when
/// they reached the soft limit.
#[derive(Default)]
pub struct OutputWatch {
    soft_since: Option<Instant>,
}

impl OutputWatch {
    /// Whether `used` bytes of waiting replies pass `class`'s limits.
    pub fn exceeded(&mut self, limits: &OutputLimits, class: Class, used: usize) -> bool {
        let [hard, soft, secs] = &limits.0[class as usize];
        let (hard, soft) = (hard.load(Relaxed), soft.load(Relaxed));
        let used = used as u64;
        if hard > 0 && used >= hard {
            return true;
        }
        if soft == 0 || used < soft {
            self.soft_since = None;
            return false;
        }
        let since = *self.soft_since.get_or_insert_with(Instant::now);
        since.elapsed().as_secs() > secs.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_at_once_soft_after_its_seconds() {
        let limits = OutputLimits::default();
        limits.set([[100, 50, 0], [0, 0, 0], [0, 10, 3600]]);
        let mut w = OutputWatch::default();
        assert!(!w.exceeded(&limits, Class::Normal, 99));
        assert!(w.exceeded(&limits, Class::Normal, 100));
        // Soft with 0 seconds: past it for more than 0 whole seconds.
        let mut w = OutputWatch::default();
        assert!(!w.exceeded(&limits, Class::Normal, 60));
        w.soft_since = Some(Instant::now() - std::time::Duration::from_millis(1100));
        assert!(w.exceeded(&limits, Class::Normal, 60));
        // Below the soft limit again: its clock starts over.
        assert!(!w.exceeded(&limits, Class::Normal, 10));
        assert!(w.soft_since.is_none());
        // A class with no limits never closes.
        assert!(!w.exceeded(&limits, Class::Replica, usize::MAX));
        assert!(!w.exceeded(&limits, Class::PubSub, 11));
    }
}
