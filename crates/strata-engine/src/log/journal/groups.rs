//! Groups: the changes of several keys that must reach the log together or
//! not at all — a MULTI/EXEC transaction, a script, a command over several
//! keys (MSET, RENAME, SMOVE, DEL k1 k2 ...).
//!
//! A group is the span of one thread's section over its keys' shards (an
//! exclusive section, a `KeysView` over several keys, MSET's or RENAME's
//! locks). While it runs, the group is *open* here; when it ends, still
//! holding its shards, it queues a `Note::GroupEnd` after the notes of its
//! keys. The journal writes a batch that contains group ends as one atomic
//! batch (docs/format.md, "Atomic batches"), and closes those groups once
//! the batch is written.
//!
//! Invariants:
//! 1. A group opens after it holds its shards and ends before it releases
//!    them; its first sequence number is at most that of any change it
//!    makes. So a key state with a version below every open group's first
//!    (other than the groups whose end is in the batch being written) was
//!    made by no group whose end is still to come.
//! 2. A batch captures a key's state only if that state is not from a
//!    group still to come (invariant 1, checked under the key's shard
//!    lock; a deleted key's state has no version: unsafe while any other
//!    group is open). Otherwise the journal captures the whole queue with
//!    every shard held, when no group can be half done.
//! 3. Groups do not nest: a section inside a section is part of the outer
//!    group.

use crate::Inner;
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// A group's identity: its first sequence number and a unique id.
pub(crate) type GroupId = (u64, u64);

/// The open groups (module doc).
#[derive(Default)]
pub(crate) struct Groups {
    open: Mutex<BTreeSet<GroupId>>,
    /// `open.len()`, read without the lock.
    count: AtomicUsize,
    next_id: AtomicU64,
}

#[derive(Clone, Copy)]
struct Current {
    /// Sections entered on this thread (0: none).
    depth: u32,
    id: GroupId,
    /// The group noted a key for the journal.
    noted: bool,
}

thread_local! {
    static CURRENT: Cell<Current> = const {
        Cell::new(Current {
            depth: 0,
            id: (0, 0),
            noted: false,
        })
    };
}

impl Groups {
    fn open(&self, first: u64) -> GroupId {
        let id = (first, self.next_id.fetch_add(1, Relaxed));
        let mut open = self.open.lock();
        open.insert(id);
        self.count.store(open.len(), Relaxed);
        id
    }

    /// Closes groups whose batch was written (or that changed nothing).
    pub(crate) fn close(&self, ids: &[GroupId]) {
        if ids.is_empty() {
            return;
        }
        let mut open = self.open.lock();
        for id in ids {
            open.remove(id);
        }
        self.count.store(open.len(), Relaxed);
    }

    /// The first sequence number of the oldest open group not in `batch`
    /// (invariant 2), if any.
    pub(crate) fn oldest_other(&self, batch: &[GroupId]) -> Option<u64> {
        if self.count.load(Relaxed) == 0 {
            return None;
        }
        let open = self.open.lock();
        open.iter()
            .find(|id| !batch.contains(id))
            .map(|&(first, _)| first)
    }
}

/// Ends its group when dropped (declare it after the shard guards, so it
/// drops first: invariant 1).
pub(crate) struct GroupGuard<'a> {
    inner: Option<&'a Inner>,
}

impl GroupGuard<'_> {
    /// No group (a change of one key).
    pub(crate) fn none() -> Self {
        GroupGuard { inner: None }
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
            return GroupGuard { inner: None };
        }
        CURRENT.with(|c| {
            let mut cur = c.get();
            if cur.depth == 0 {
                cur.id = self.journal.groups.open(self.seq.load(Relaxed));
                cur.noted = false;
            }
            cur.depth += 1;
            c.set(cur);
        });
        GroupGuard { inner: Some(self) }
    }
}

/// A key is being noted for the journal: part of the open group, if any.
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
        CURRENT.with(|c| {
            let mut cur = c.get();
            cur.depth -= 1;
            c.set(cur);
            if cur.depth > 0 {
                return;
            }
            if cur.noted {
                inner
                    .journal
                    .push(crate::log::journal::Note::GroupEnd { id: cur.id });
            } else {
                inner.journal.groups.close(&[cur.id]);
            }
        });
    }
}
