//! The exclusive section: one thread holds every shard of the keyspace
//! while it runs a sequence of operations (a MULTI/EXEC transaction), so no
//! other client sees any of them before all are done. A keyed section holds
//! only the shards of some keys (MGET, DEL ... over several keys).
//!
//! Every shard lock goes through `index::lock::ShardLock`, which lends a
//! section's shards to the operations run inside it, so they run
//! unchanged: whatever they lock, they get without waiting.
//!
//! Invariants:
//! 1. A section takes its shards (all, or a keyed section's) in ascending
//!    index order (as every multi-key operation does), holds them until it
//!    ends, and is entered only on the thread that runs it; a keyed
//!    section locks no other shard; nothing in it awaits a runtime
//!    (a flash read in it is waited for by blocking this thread: see
//!    `keyspace::chunks::load_parts`, which does not wait for another
//!    task's read of the same part, since that task needs a shard to
//!    install it).
//! 2. As with real locks, code never holds two guards of one shard at
//!    once (it would deadlock outside a section); debug builds check it
//!    inside one.
//! 3. Nothing that waits for a background thread runs in a section
//!    (checkpoints, shutdown): those threads take shards. Callers run such
//!    operations between sections.
//! 4. Background threads (demotion, the collector, the journal) block on
//!    the shards until the section ends; they never observe a section half
//!    done.

use crate::index::lock::{hold, in_section};
use crate::Engine;

impl Engine {
    /// Runs `f` with every shard held (module doc): no other thread reads
    /// or changes a key until it returns. Sections do not nest (an inner
    /// call runs `f` within the outer one).
    /// Its changes are one group (`log::journal::groups`): recovery
    /// restores all of them or none.
    pub fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let inner = &self.inner;
        // Taken before the shards (groups invariant 1).
        let group = inner.group();
        let r = inner.lock_all(f);
        drop(group);
        r
    }

    /// Whether this thread runs inside an exclusive section (EXEC, a
    /// script): it already holds shards.
    pub fn in_section(&self) -> bool {
        in_section()
    }

    /// As `exclusive`, holding only the shards of `keys`: for a command
    /// over several keys (MGET, DEL, EXISTS ...) that must see or change
    /// them at one moment (and its changes are one group). `f` must lock no other shard (invariant 1: it
    /// would take one out of order).
    pub fn exclusive_keys<R>(&self, keys: &[bytes::Bytes], f: impl FnOnce() -> R) -> R {
        if in_section() {
            return f();
        }
        let inner = &self.inner;
        if inner.shards.len() > 128 {
            return self.exclusive(f);
        }
        // Taken before the shards (groups invariant 1). Always a group:
        // equal names may be keys of different databases (SELECT in EXEC).
        let group = inner.group();
        let mut mask = 0u128;
        for k in keys {
            mask |= 1 << inner.shard_index(k);
        }
        let r = hold(&inner.shards, Some(mask), f);
        drop(group);
        r
    }
}

impl crate::Inner {
    /// Runs `f` with every shard held (`Engine::exclusive` without its
    /// group).
    fn lock_all<R>(&self, f: impl FnOnce() -> R) -> R {
        hold(&self.shards, None, f)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Engine, EngineConfig, IoBackend};
    use std::sync::mpsc::channel;

    #[test]
    fn try_lock_never_waits() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = EngineConfig::new(dir.path().join("flash"));
        c.io_backend = IoBackend::Psync;
        c.shards = 4;
        let e = Engine::open(c).unwrap();
        let s = &e.inner.shards[1];
        assert!(s.try_lock().is_some(), "a free shard is taken");
        let held = s.lock();
        std::thread::scope(|t| {
            t.spawn(|| assert!(s.try_lock().is_none(), "a held shard is not waited for"));
        });
        drop(held);
        // Inside a section its shards are lent to it.
        e.exclusive(|| assert!(s.try_lock().is_some()));
        // A prefetch returns while another thread holds every shard.
        let (held_tx, held_rx) = channel();
        let (done_tx, done_rx) = channel::<()>();
        std::thread::scope(|t| {
            let e = &e;
            t.spawn(move || {
                e.exclusive(|| {
                    held_tx.send(()).unwrap();
                    done_rx.recv().unwrap();
                })
            });
            held_rx.recv().unwrap();
            e.prefetch_keys(0, &[&b"a"[..], &b"b"[..]]);
            done_tx.send(()).unwrap();
        });
    }
}
