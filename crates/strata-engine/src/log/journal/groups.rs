//! Groups: the changes of several keys that must reach the log together or
//! not at all — a MULTI/EXEC transaction, a script, a command over several
//! keys (MSET, RENAME, SMOVE, DEL k1 k2 ...).
//!
//! A group is the span of one thread's section over its keys' shards (an
//! exclusive section, a `KeysView` over several keys, MSET's or RENAME's
//! locks). It holds the *barrier*'s read side for its whole span, and when
//! it noted anything it queues a `Note::GroupEnd` after its notes. The
//! journal takes the barrier's write side while it captures the batch's
//! states, after taking the rest of the queue if a group ended since its
//! first look at it: so no group runs meanwhile, and every group has either
//! ended before (all its notes and its end are in the batch) or starts
//! after the capture (none of its changes is in the captured states). A batch holding group ends is written as one
//! atomic batch (docs/format.md, "Atomic batches"): recovery restores all
//! of each group or none of it.
//!
//! Invariants:
//! 1. A group takes the barrier before it locks any shard (the journal
//!    holds the barrier while it locks shards to capture), and queues its
//!    end before it releases the barrier.
//! 2. Groups do not nest: a section inside a section is part of the outer
//!    group (a second read of the barrier on one thread could wait behind
//!    the journal's write while the first blocks it).
//! 3. Nothing in a group waits for the journal (the journal may be waiting
//!    for the group).
//! 4. Single-key changes do not take the barrier: a state one of them made
//!    after the drain is a newer state of one key, which the batch may
//!    hold alone.

use super::Note;
use crate::Inner;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::Cell;
use std::time::Duration;

/// The barrier between groups and the journal's capture (module doc).
#[derive(Default)]
pub(crate) struct Groups {
    barrier: RwLock<()>,
}

impl Groups {
    /// Holds back every group (the journal's drain and capture), once the
    /// running ones ended; None if they did not within `wait`.
    pub(crate) fn quiesce(&self, wait: Duration) -> Option<RwLockWriteGuard<'_, ()>> {
        self.barrier.try_write_for(wait)
    }
}

#[derive(Clone, Copy, Default)]
struct Current {
    /// Groups entered on this thread (0: none).
    depth: u32,
    /// The group queued a note.
    noted: bool,
}

thread_local! {
    static CURRENT: Cell<Current> = const { Cell::new(Current { depth: 0, noted: false }) };
}

/// Ends its group when dropped. Created before the group's shards are
/// locked (invariant 1).
pub(crate) struct GroupGuard<'a> {
    inner: Option<&'a Inner>,
    /// The outermost guard of this thread holds the barrier.
    _read: Option<RwLockReadGuard<'a, ()>>,
}

impl GroupGuard<'_> {
    /// No group (a change of one key).
    pub(crate) fn none() -> Self {
        GroupGuard {
            inner: None,
            _read: None,
        }
    }
}

impl Inner {
    /// A group when `keys` holds two different keys, else none.
    pub(crate) fn group_of(&self, keys: &[impl AsRef<[u8]>]) -> GroupGuard<'_> {
        match keys.split_first() {
            Some((k, rest)) if rest.iter().any(|r| r.as_ref() != k.as_ref()) => self.group(),
            _ => GroupGuard::none(),
        }
    }

    /// Opens a group on this thread (module doc), or joins the one open.
    /// Without the journal it does nothing.
    pub(crate) fn group(&self) -> GroupGuard<'_> {
        if !self.journal.enabled {
            return GroupGuard::none();
        }
        let outer = CURRENT.with(|c| {
            let mut cur = c.get();
            cur.depth += 1;
            if cur.depth == 1 {
                cur.noted = false;
            }
            c.set(cur);
            cur.depth == 1
        });
        GroupGuard {
            inner: Some(self),
            _read: outer.then(|| self.journal.groups.barrier.read()),
        }
    }
}

/// A note is being queued: part of this thread's group, if one is open.
#[inline]
pub(crate) fn noted() {
    CURRENT.with(|c| {
        let mut cur = c.get();
        if cur.depth > 0 && !cur.noted {
            cur.noted = true;
            c.set(cur);
        }
    });
}

impl Drop for GroupGuard<'_> {
    fn drop(&mut self) {
        let Some(inner) = self.inner else { return };
        let end = CURRENT.with(|c| {
            let mut cur = c.get();
            cur.depth -= 1;
            c.set(cur);
            cur.depth == 0 && cur.noted
        });
        if end {
            // Invariant 1: before the barrier is released (a field, dropped
            // after this).
            inner.journal.push(Note::GroupEnd);
        }
    }
}
