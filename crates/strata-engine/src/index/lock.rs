//! The shard lock ([`ShardLock`]) and the sections that hold many shards at
//! once. Outside a section a shard's lock is a plain mutex. Inside one, on
//! the thread that entered it, locking a shard the section holds hands out
//! that shard, so the operations run unchanged: whatever they lock, they
//! get without waiting (`keyspace::exclusive` opens sections).
//!
//! Invariants:
//! 1. A section takes its shards (all, or a keyed section's mask) in
//!    ascending index order, holds them until it ends, and is entered only
//!    on the thread that runs it; a keyed section locks no other shard.
//! 2. As with real locks, code never holds two guards of one shard at
//!    once (it would deadlock outside a section); debug builds check it
//!    inside one.

use super::Shard;
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

/// Runs `f` holding `shards` (all of them, or those whose bit is set in
/// `mask`: shard i is bit i, i < 128) as one section on this thread
/// (invariant 1). Sections do not nest: inside one, `f` just runs.
pub(crate) fn hold<R>(shards: &[ShardLock], mask: Option<u128>, f: impl FnOnce() -> R) -> R {
    if in_section() {
        return f();
    }
    let picked = |i: usize| mask.is_none_or(|m| m & (1 << i) != 0);
    let guards: Vec<MutexGuard<'_, Shard>> = (0..shards.len())
        .filter(|&i| picked(i))
        .map(|i| shards[i].m.lock())
        .collect();
    HELD.with(|h| {
        h.set(Held {
            first: shards.as_ptr(),
            n: shards.len(),
            all: mask.is_none(),
            mask: mask.unwrap_or(0),
        })
    });
    let leave = Leave;
    let r = f();
    drop(leave);
    drop(guards);
    r
}
