//! The exclusive section: one thread holds every shard of the keyspace
//! while it runs a sequence of operations (a MULTI/EXEC transaction), so no
//! other client sees any of them before all are done. A keyed section holds
//! only the shards of some keys (MGET, DEL ... over several keys).
//!
//! Every shard lock goes through [`ShardLock`]. Outside a section it is a
//! plain mutex. Inside one, on the thread that entered it, locking a shard
//! of that engine hands out the shard the section already holds, so the
//! operations run unchanged: whatever they lock, they get without waiting.
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

use crate::index::Shard;
use crate::Engine;
use parking_lot::{Mutex, MutexGuard};
use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// The shards the section this thread is in holds.
#[derive(Clone, Copy)]
struct Held {
    /// This engine's first shard, and its number of shards (0: no section).
    first: *const ShardLock,
    n: usize,
    /// Every shard, or those of `mask` (a keyed section: shard i is bit i).
    all: bool,
    mask: u128,
}

const NONE: Held = Held {
    first: std::ptr::null(),
    n: 0,
    all: false,
    mask: 0,
};

thread_local! {
    static HELD: Cell<Held> = const { Cell::new(NONE) };
}

/// A shard's lock (module doc).
pub struct ShardLock {
    m: Mutex<Shard>,
    /// Debug check of invariant 2: a guard of this shard is out inside a
    /// section.
    lent: AtomicBool,
}

/// A locked shard: owned, or lent by the section this thread is in.
pub enum ShardGuard<'a> {
    Own(MutexGuard<'a, Shard>),
    Lent(&'a mut Shard, &'a AtomicBool),
}

impl ShardLock {
    pub fn new(shard: Shard) -> ShardLock {
        ShardLock {
            m: Mutex::new(shard),
            lent: AtomicBool::new(false),
        }
    }

    pub fn lock(&self) -> ShardGuard<'_> {
        match self.lent(true) {
            Some(g) => g,
            None => ShardGuard::Own(self.m.lock()),
        }
    }

    /// The shard if it is free now (or lent to this thread's section);
    /// None if another thread holds it. Never waits, so it may be used
    /// anywhere, for work that may be skipped such as a prefetch: waiting
    /// for a holder parks the thread, and on a busy machine a parked loop
    /// waits for a CPU after the holder lets go.
    pub fn try_lock(&self) -> Option<ShardGuard<'_>> {
        self.lent(false)
            .or_else(|| self.m.try_lock().map(ShardGuard::Own))
    }

    /// This shard as lent by the section this thread is in, if it holds
    /// it. `to_wait`: the caller will wait for the shard if not, which a
    /// keyed section must not do for a shard of none of its keys.
    fn lent(&self, to_wait: bool) -> Option<ShardGuard<'_>> {
        let held = HELD.with(Cell::get);
        if held.n == 0 {
            return None;
        }
        let me = self as *const ShardLock as usize;
        let at = me.wrapping_sub(held.first as usize) / std::mem::size_of::<ShardLock>();
        let mine = me >= held.first as usize && at < held.n;
        if mine && (held.all || (at < 128 && held.mask & (1 << at) != 0)) {
            let was = self.lent.swap(true, Ordering::Relaxed);
            debug_assert!(!was, "a shard lent twice inside an exclusive section");
            // SAFETY: this thread holds the shard's mutex for the whole
            // section (`Engine::exclusive`), and no other guard of this
            // shard is out (invariant 2, checked above in debug builds),
            // so this is the only reference to the shard.
            return Some(ShardGuard::Lent(
                unsafe { &mut *self.m.data_ptr() },
                &self.lent,
            ));
        }
        // A keyed section reaching past its keys would take a shard
        // out of order (invariant 1): a bug in the caller's key list.
        debug_assert!(
            !(mine && to_wait),
            "a keyed section locked a shard of none of its keys"
        );
        None
    }
}

impl Deref for ShardGuard<'_> {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        match self {
            ShardGuard::Own(g) => g,
            ShardGuard::Lent(s, _) => s,
        }
    }
}

impl DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        match self {
            ShardGuard::Own(g) => g,
            ShardGuard::Lent(s, _) => s,
        }
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        if let ShardGuard::Lent(_, lent) = self {
            lent.store(false, Ordering::Relaxed);
        }
    }
}

/// Whether this thread is inside an exclusive section.
pub(crate) fn in_section() -> bool {
    HELD.with(Cell::get).n > 0
}

/// Ends the section even if its closure unwinds.
struct Leave;

impl Drop for Leave {
    fn drop(&mut self) {
        HELD.with(|h| h.set(NONE));
    }
}

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
        let guards: Vec<MutexGuard<'_, Shard>> = (0..inner.shards.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| inner.shards[i].m.lock())
            .collect();
        HELD.with(|h| {
            h.set(Held {
                first: inner.shards.as_ptr(),
                n: inner.shards.len(),
                all: false,
                mask,
            })
        });
        let leave = Leave;
        let r = f();
        drop(leave);
        drop(guards);
        drop(group);
        r
    }
}

impl crate::Inner {
    /// Runs `f` with every shard held (`Engine::exclusive` without its
    /// group).
    fn lock_all<R>(&self, f: impl FnOnce() -> R) -> R {
        if in_section() {
            return f();
        }
        let shards = &self.shards;
        let guards: Vec<MutexGuard<'_, Shard>> = shards.iter().map(|s| s.m.lock()).collect();
        HELD.with(|h| {
            h.set(Held {
                first: shards.as_ptr(),
                n: shards.len(),
                all: true,
                mask: 0,
            })
        });
        let leave = Leave;
        let r = f();
        drop(leave);
        drop(guards);
        r
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
