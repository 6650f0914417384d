//! What connections' buffers may hold: the RAM all of them hold
//! (`CLIENT_BUFFERS`, INFO `mem_clients_normal`), each connection's share
//! (`BufGauge`), and the output limits by client class. The replies a
//! client has not taken yet are `net::connection::backlog`'s.
//!
//! Invariants:
//! 2. `CLIENT_BUFFERS` is the sum of every live connection's input and
//!    output capacities and backlog bytes (each connection's `BufGauge`
//!    adds its own and takes it back when dropped). The RAM budget's
//!    admission leaves it out: demotion cannot free it.
//! 3. A connection whose waiting replies (its output and backlog) reach
//!    its class's `client-output-buffer-limit` hard limit, or stay at or
//!    past the soft one for longer than its seconds, is closed with what
//!    it holds dropped (Redis's `checkClientOutputBufferLimits`): a client
//!    that asks and never reads holds at most that much.

use crate::services::clients::{BufferSizes, ClientHandle};
use bytes::BytesMut;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Bytes of every connection's buffers (module doc, invariant 2).
pub static CLIENT_BUFFERS: AtomicU64 = AtomicU64::new(0);

/// The largest input or output buffer a connection keeps between turns
/// (a bigger one counts in the allocator-measured RAM for nothing).
pub const BUFFER_KEEP: usize = 256 << 10;

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
        (backlog_bytes, backlog_blocks): (usize, usize),
    ) {
        let n = inbuf.capacity() + out.capacity() + backlog_bytes;
        handle.buffers.store(BufferSizes {
            qbuf: inbuf.len(),
            qbuf_free: inbuf.capacity() - inbuf.len(),
            obl: out.len(),
            oll: backlog_blocks,
            omem: backlog_bytes,
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
