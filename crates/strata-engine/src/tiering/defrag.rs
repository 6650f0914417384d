//! Active defragmentation (issue #12, point 5: the RAM the OS sees).
//!
//! Demotion frees hot values (and packs their boxed entries) wherever the
//! CLOCK hand finds them, so the allocator's pages of a size class end up
//! partly used: a page with one live value of eight stays resident. Like
//! Redis's `activedefrag`, the background thread walks the index a slice
//! per tick (5 ms at most) while the allocator reports fragmentation, and
//! copies each boxed entry and hot string the allocator points out (one in
//! a sparsely used page: the server's `alloc::should_move` decides) to a
//! new allocation, which the allocator places in a fuller page; the emptied
//! pages go back to the OS.
//!
//! Invariants:
//! 1. Only a string held by its entry alone moves (a reply, a journal note
//!    or a read may hold the old bytes: they stay valid, and unmoved). A
//!    boxed entry is only ever reached through its cell, under the shard
//!    lock: it moves whole.
//! 2. A move changes no byte of the value, no version and no counter, and
//!    happens under the shard lock: nothing a client sees changes.
//! 3. The engine knows no allocator: the binary that installs one gives
//!    its advice (`EngineConfig::allocator`); without it nothing moves.

use crate::stats::Stats;
use crate::Inner;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// CPU a tick's slice may take (5% of a core at the default `hz` 10; Redis
/// lets its defrag cycle take 1-25%), and positions looked at per hold of
/// a shard lock.
const BUDGET: Duration = Duration::from_millis(5);
const PER_LOCK: usize = 1024;

/// Where the walk is: shard, database and position.
#[derive(Default)]
pub(super) struct Defrag {
    shard: usize,
    db: usize,
    pos: usize,
}

impl Defrag {
    /// One tick's slice, when defragmentation is on and the allocator
    /// reports fragmentation (the caller skips it while demotion runs:
    /// writes then refill the room demotion frees).
    pub(super) fn tick(&mut self, inner: &Inner) {
        let Some(hooks) = inner.hooks.allocator else {
            return;
        };
        let on = inner.tun.defrag.load(Relaxed) && (hooks.fragmented)();
        inner.stats.defrag_running.store(on as u64, Relaxed);
        if !on {
            return;
        }
        (hooks.moving)(true);
        let (mut hits, mut misses) = (0, 0);
        let mut wrapped = 0;
        let deadline = Instant::now() + BUDGET;
        while wrapped <= inner.shards.len() && Instant::now() < deadline {
            let mut guard = inner.shards[self.shard].lock();
            let dbs = guard.dbs.len();
            if let Some(map) = guard.dbs.get_mut(self.db) {
                // (The map may have shrunk since the last slice.)
                self.pos = self.pos.min(map.len());
                let end = (self.pos + PER_LOCK).min(map.len());
                for i in self.pos..end {
                    match map.defrag_at(i, hooks.should_move) {
                        Some(true) => hits += 1,
                        Some(false) => misses += 1,
                        None => {}
                    }
                }
                self.pos = end;
                if self.pos < map.len() {
                    continue;
                }
            }
            self.pos = 0;
            self.db += 1;
            if self.db >= dbs {
                self.db = 0;
                self.shard = (self.shard + 1) % inner.shards.len();
                wrapped += 1;
            }
        }
        (hooks.moving)(false);
        Stats::add(&inner.stats.defrag_hits, hits);
        Stats::add(&inner.stats.defrag_misses, misses);
    }
}
