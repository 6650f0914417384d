//! Whole reads of chunked collections in steps (docs/collections.md,
//! invariant 8): HGETALL, SMEMBERS, LRANGE and ZRANGE of many elements
//! build their reply a batch of parts at a time, each batch (at most
//! [`STREAM_BYTES`] of parts) loaded and then emitted under the shard
//! lock, so a collection larger than RAM is read without holding it in RAM
//! at once.
//!
//! Invariants:
//! 1. The reply is one state of the key, as Redis's: every batch is
//!    emitted under the lock with the key at the version the read started
//!    from; a write between batches restarts the read (`init` again).
//! 2. After [`MAX_RESTARTS`] restarts (a key written all the time) the read
//!    loads the whole collection and emits it in one step, as an
//!    unstreamed read does.
//! 3. Nothing is emitted for a key that is not chunked: `init` answers for
//!    it (the whole value is in RAM for it, as for any command).

use super::run::{promote_all, ColdKeys};
use super::KeysView;
use crate::keyspace::chunks::{batch_end, Need};
use crate::tiering::fetch::Read;
use crate::types::Collection;
use crate::{Engine, EngineError, Inner, ValueRef};
use bytes::Bytes;
use std::ops::Range;

/// Bytes of parts one step of a streamed read loads.
pub const STREAM_BYTES: usize = 1 << 20;
/// Restarts after which a streamed read loads the collection whole.
pub const MAX_RESTARTS: u32 = 8;

/// A streamed read in progress.
struct Progress<S> {
    state: S,
    version: u64,
    next: usize,
    end: usize,
}

/// A streamed read: its key, callbacks and progress.
struct Streamer<S, I, E> {
    db: usize,
    /// What `init` reads (its first step's need).
    first: Need,
    keys: Vec<Bytes>,
    init: I,
    emit: E,
    run: Option<Progress<S>>,
    done: bool,
    restarts: u32,
}

impl<S, I, E> Streamer<S, I, E>
where
    I: FnMut(&mut KeysView<'_>) -> (S, Option<Range<usize>>),
    E: FnMut(&Collection, Range<usize>, &mut S) -> bool,
{
    /// One step under the key's lock: (re)start, or emit the next batch;
    /// or the parts to load first.
    fn step(&mut self, inner: &Inner) -> Result<(), ColdKeys> {
        let whole = self.restarts > MAX_RESTARTS;
        let need = match &self.run {
            Some(p) if !whole => Need::Parts {
                from: p.next,
                to: p.end,
                bytes: STREAM_BYTES,
            },
            Some(_) => Need::Whole,
            None => self.first.clone(),
        };
        let Streamer {
            first: _,
            keys,
            init,
            emit,
            run,
            done,
            restarts,
            db,
        } = self;
        let key = &keys[0];
        let mut f = Some(|view: &mut KeysView<'_>| {
            let current = view.version(key);
            match run.as_mut() {
                Some(p) if Some(p.version) == current => {}
                Some(_) => {
                    // The key changed: start again, with what `init` reads
                    // loaded first (invariant 1).
                    *run = None;
                    *restarts += 1;
                    return;
                }
                None => {
                    let (state, parts) = init(view);
                    let parts = parts.unwrap_or(0..0);
                    *done = parts.is_empty();
                    *run = Some(Progress {
                        state,
                        version: current.unwrap_or(0),
                        next: parts.start,
                        end: parts.end,
                    });
                    if *done {
                        return;
                    }
                }
            }
            // The next batch: loaded by this step's need, or (right after
            // `init`) if `first` loaded it, a short read answered in one pass.
            let Some(p) = run.as_mut() else { return };
            // (Counted as a hit once, by `init`.)
            let Some(ValueRef::Coll(c)) = view.peek(key) else {
                return;
            };
            let to = match c.dir() {
                Some(d) if !whole => batch_end(d, p.next, p.end.min(d.part_count()), STREAM_BYTES),
                _ => p.end,
            };
            if let Some(d) = c.dir() {
                if !(p.next..to.min(d.part_count())).all(|i| d.part(i).resident) {
                    return;
                }
            }
            let more = emit(c, p.next..to, &mut p.state);
            p.next = to;
            *done = !more || p.next >= p.end;
        });
        inner
            .try_with_keys(*db, keys, &[need], false, &mut f)
            .map(|_| ())
    }

    /// The final state (once `done`).
    fn finish(self) -> Result<S, EngineError> {
        self.run.map(|p| p.state).ok_or(EngineError::Malformed)
    }
}

/// A read in steps, each under the keys' locks (`Streamer` here,
/// `windows::Windows`): `step` emits what is in RAM or names what to load.
pub(super) trait Steps: Send + 'static {
    type Out: Send + 'static;
    /// One step; Err: the parts to load before the next.
    fn step(&mut self, inner: &Inner) -> Result<(), ColdKeys>;
    fn done(&self) -> bool;
    /// The result (once `done`).
    fn finish(self) -> Result<Self::Out, EngineError>;
}

impl<S, I, E> Steps for Streamer<S, I, E>
where
    S: Send + 'static,
    I: FnMut(&mut KeysView<'_>) -> (S, Option<Range<usize>>) + Send + 'static,
    E: FnMut(&Collection, Range<usize>, &mut S) -> bool + Send + 'static,
{
    type Out = S;
    fn step(&mut self, inner: &Inner) -> Result<(), ColdKeys> {
        Streamer::step(self, inner)
    }
    fn done(&self) -> bool {
        self.done
    }
    fn finish(self) -> Result<S, EngineError> {
        Streamer::finish(self)
    }
}

/// Runs `st` to its end: ready at once while every step finds its parts
/// in RAM, else a future that loads what a step names and goes on.
pub(super) fn drive<T: Steps>(engine: &Engine, mut st: T) -> Read<Result<T::Out, EngineError>> {
    let cold = loop {
        match st.step(&engine.inner) {
            Ok(()) if st.done() => return Read::Ready(st.finish()),
            Ok(()) => {}
            Err(cold) => break cold,
        }
    };
    let inner = engine.inner.clone();
    Read::Pending(Box::pin(async move {
        let mut cold = Some(cold);
        loop {
            if let Some(c) = cold.take() {
                promote_all(&inner, c).await?;
            }
            match st.step(&inner) {
                Ok(()) if st.done() => return st.finish(),
                Ok(()) => {}
                Err(c) => cold = Some(c),
            }
        }
    }))
}

impl Engine {
    /// A whole read of `key` in steps (module doc). `init` runs first on
    /// the key as `with_keys` gives it: it answers alone (returning None)
    /// for a missing key, another type or a collection that is not chunked,
    /// or returns the directory's parts to walk; `emit` then runs once per
    /// batch of those parts, in order, with the batch in RAM, and returns
    /// whether to go on (BITPOS stops at its bit). `init` runs again if the
    /// key changes between batches. Returns the final state; ready at once
    /// while every batch is in RAM.
    pub fn stream_coll<S, I, E>(
        &self,
        db: usize,
        key: Bytes,
        init: I,
        emit: E,
    ) -> Read<Result<S, EngineError>>
    where
        S: Send + 'static,
        I: FnMut(&mut KeysView<'_>) -> (S, Option<Range<usize>>) + Send + 'static,
        E: FnMut(&Collection, Range<usize>, &mut S) -> bool + Send + 'static,
    {
        self.stream_coll_from(db, key, Need::Elems(Vec::new()), init, emit)
    }

    /// As `stream_coll`, where `init` reads the parts `first` names (a
    /// score range's two ends, to find its ranks).
    pub fn stream_coll_from<S, I, E>(
        &self,
        db: usize,
        key: Bytes,
        first: Need,
        init: I,
        emit: E,
    ) -> Read<Result<S, EngineError>>
    where
        S: Send + 'static,
        I: FnMut(&mut KeysView<'_>) -> (S, Option<Range<usize>>) + Send + 'static,
        E: FnMut(&Collection, Range<usize>, &mut S) -> bool + Send + 'static,
    {
        let st = Streamer {
            db,
            first,
            keys: vec![key],
            init,
            emit,
            run: None,
            done: false,
            restarts: 0,
        };
        drive(self, st)
    }
}
