//! One part of a stream (`SPart`): a run of whole nodes, the unit a
//! chunked stream writes, demotes and loads (one kind-9 record). A stream
//! that is not chunked keeps all its nodes in one part.
//!
//! Invariants:
//! 1. Every entry of a part has an id at or above the part's `first` and
//!    below the next part's `first`: a part is only ever started at the
//!    end of the stream, by the node it is started for.
//! 2. `live`, `enc` and the node count are exact whether or not the part
//!    is in RAM (`nodes` None: on flash, clean, with a record).
//! 3. A part of a chunked stream is emptied of nodes only by XDEL or
//!    trimming; an empty part at the front leaves the stream, one further
//!    in stays (its record says it is empty) until the front reaches it.

use super::node::Node;
use super::StreamId;
use crate::base::FlashLoc;
use std::collections::VecDeque;

/// Bytes of a part's *bound*: its first id (ms, seq; u64 LE each) and its
/// node count (u32 LE), which a checkpoint keeps per part.
pub const BOUND_LEN: usize = 20;

#[derive(Clone, Debug)]
pub(super) struct SPart {
    /// The part's number: parts are numbered in stream order, and a
    /// chunked stream's head names the numbers in force.
    pub num: u64,
    /// First id and node count (`BOUND_LEN`).
    pub bound: [u8; BOUND_LEN],
    /// Live entries.
    pub live: u64,
    /// Bytes of the nodes' packed encoding.
    pub enc: usize,
    /// The nodes, when in RAM (boxed: a part on flash pays 8 bytes for
    /// them, not a deque's 32).
    #[allow(clippy::box_collection)]
    pub nodes: Option<Box<VecDeque<Node>>>,
    pub dirty: bool,
    pub referenced: bool,
    pub ver: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

impl SPart {
    /// A new part in RAM, with no node yet (a chunked stream marks it
    /// changed: `Stream::part_changed`).
    pub fn new(num: u64, first: StreamId) -> SPart {
        let mut p = SPart {
            num,
            bound: [0; BOUND_LEN],
            live: 0,
            enc: 0,
            nodes: Some(Box::default()),
            dirty: false,
            referenced: true,
            ver: 0,
            loc: None,
            seq: 0,
        };
        p.set_first(first);
        p
    }

    /// A part on flash, as a directory describes it.
    pub fn cold(
        num: u64,
        bound: [u8; BOUND_LEN],
        live: u64,
        enc: usize,
        loc: FlashLoc,
        seq: u64,
    ) -> SPart {
        SPart {
            num,
            bound,
            live,
            enc,
            nodes: None,
            dirty: false,
            referenced: false,
            ver: 0,
            loc: Some(loc),
            seq,
        }
    }

    pub fn first(&self) -> StreamId {
        bound_first(&self.bound)
    }

    fn set_first(&mut self, id: StreamId) {
        self.bound[..8].copy_from_slice(&id.ms.to_le_bytes());
        self.bound[8..16].copy_from_slice(&id.seq.to_le_bytes());
    }

    pub fn node_count(&self) -> usize {
        bound_nodes(&self.bound) as usize
    }

    pub fn set_node_count(&mut self, n: usize) {
        self.bound[16..20].copy_from_slice(&(n as u32).to_le_bytes());
    }

    pub fn is_resident(&self) -> bool {
        self.nodes.is_some()
    }

    /// Marks the part changed with the stream's next part version
    /// (versions are unique within the stream, as a list's).
    pub fn changed(&mut self, vers: &mut u32) {
        *vers = vers.wrapping_add(1);
        self.dirty = true;
        self.ver = *vers;
    }
}

/// The first id a bound names.
pub fn bound_first(b: &[u8; BOUND_LEN]) -> StreamId {
    let u = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().unwrap_or_default());
    StreamId::new(u(0..8), u(8..16))
}

/// The node count a bound names.
pub fn bound_nodes(b: &[u8; BOUND_LEN]) -> u32 {
    u32::from_le_bytes([b[16], b[17], b[18], b[19]])
}

/// A bound of `first` and `nodes`.
pub fn bound_of(first: StreamId, nodes: u32) -> [u8; BOUND_LEN] {
    let mut b = [0u8; BOUND_LEN];
    b[..8].copy_from_slice(&first.ms.to_le_bytes());
    b[8..16].copy_from_slice(&first.seq.to_le_bytes());
    b[16..20].copy_from_slice(&nodes.to_le_bytes());
    b
}
