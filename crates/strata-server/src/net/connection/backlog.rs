//! The replies a client has not taken yet (the `Backlog`).
//!
//! A client may write a whole pipeline before it reads a reply (a plain
//! socket `sendall`, then `recv`). Redis serves it: it keeps reading and
//! buffers the replies (a normal client's output is unlimited). Waiting
//! for the socket to take each batch's replies instead would wait for the
//! client, which waits for us. So replies the socket does not take at once
//! join the backlog, in order, and go out as the socket takes them, while
//! the connection goes on reading and serving.
//!
//! Invariant 1: bytes go to the socket in reply order: the backlog's
//! blocks first, then the connection's current output. (Invariants 2 and
//! 3, the buffers' gauge and limits: `services::clients::buffers`.)

use crate::net::stream::Stream;
use crate::services::clients::buffers::BUFFER_KEEP;
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use tokio::io::AsyncWriteExt;

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

    /// Bytes the blocks' allocations hold, and how many blocks
    /// (`BufGauge::set`).
    pub fn sizes(&self) -> (usize, usize) {
        (self.bytes, self.blocks.len())
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
