//! Whole reads of several hash-partitioned collections at once (SUNION,
//! SINTER, SDIFF, SINTERCARD, ZUNION, ZINTER, ZDIFF, ZINTERCARD and their
//! STORE forms; a sorted set by its member parts), by *windows* of the
//! 64-bit partition hash: each step loads, for every key, the parts whose
//! range meets the window `[lo, hi]` (at most [`STREAM_BYTES`] of parts over
//! all keys, at least one part each), and the command's `emit` combines the
//! elements of that window under the locks. An element's hash is the same
//! in every collection, so one window holds every copy of an element: a
//! union, intersection or difference computed window by window is the
//! whole one, and the inputs are never all in RAM at once.
//!
//! Invariants:
//! 1. The result is one state of the keys, as Redis's: every window is
//!    emitted under the locks with every key at the version `init` saw; a
//!    write to any of them between windows starts the read again.
//! 2. After [`MAX_RESTARTS`] restarts the read loads every key whole and
//!    emits one window `[lo, u64::MAX]`.
//! 3. The windows are emitted in order, cover `[0, u64::MAX]` exactly, and
//!    the last one ends at `u64::MAX`; when no key is chunked there is one.

use super::run::ColdKeys;
use super::stream::{drive, Steps, MAX_RESTARTS, STREAM_BYTES};
use super::{KeysView, ValueRef};
use crate::keyspace::chunks::Need;
use crate::tiering::fetch::Read;
use crate::types::parts::range_high;
use crate::types::parts::Dir;
use crate::types::Collection;
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;

/// A read in progress: the command's state, the keys' versions when it
/// started, and the next window.
struct Progress<S> {
    state: S,
    versions: Vec<Option<u64>>,
    lo: u64,
    hi: u64,
}

struct Windows<S, I, E> {
    db: usize,
    keys: Vec<Bytes>,
    init: I,
    emit: E,
    run: Option<Progress<S>>,
    done: bool,
    restarts: u32,
}

/// The parts of a chunked collection partitioned by element hash: a hash's
/// or a set's, or a sorted set's member parts (the first of its `Dir`'s
/// parts).
struct Hashed<'a> {
    dir: &'a dyn Dir,
    /// Parts of the hash-partitioned family.
    parts: usize,
}

impl Hashed<'_> {
    /// The hash-partitioned parts of `c`, if it is chunked (not a list).
    fn of(c: &Collection) -> Option<Hashed<'_>> {
        let dir = c.dir().filter(|d| d.head_span().is_none())?;
        let parts = match c {
            Collection::ZSet(z) => z.chunked().map(|z| z.members.parts().len()),
            _ => None,
        }
        .unwrap_or_else(|| dir.part_count());
        Some(Hashed { dir, parts })
    }

    /// The parts meeting `[lo, hi]`.
    fn meeting(&self, lo: u64, hi: u64) -> std::ops::RangeInclusive<usize> {
        self.dir.part_of(lo)..=self.dir.part_of(hi)
    }

    /// (last hash, body bytes) of the parts from the one holding `lo` on,
    /// while their bodies stay within `budget` (and one more).
    fn ends(&self, lo: u64, budget: usize) -> Vec<(u64, usize)> {
        let mut v = Vec::new();
        let mut sum = 0;
        for i in self.dir.part_of(lo)..self.parts {
            let p = self.dir.part(i);
            v.push((range_high(p.low, p.depth), p.body as usize));
            sum += p.body as usize;
            if sum > budget {
                break;
            }
        }
        v
    }
}

/// The end of the window from `lo`: the largest part boundary such that
/// the parts meeting `[lo, end]`, over every key (`ends`, from
/// `part_ends`), hold at most `budget` bytes, and at least the first part
/// of each.
fn window_end(ends: &[Vec<(u64, usize)>], budget: usize) -> u64 {
    let ends: Vec<&Vec<(u64, usize)>> = ends.iter().filter(|e| !e.is_empty()).collect();
    if ends.is_empty() {
        return u64::MAX;
    }
    let mut at = vec![0usize; ends.len()];
    let mut bytes: usize = ends.iter().map(|e| e[0].1).sum();
    loop {
        let hi = ends
            .iter()
            .zip(&at)
            .map(|(e, &i)| e[i].0)
            .min()
            .unwrap_or(u64::MAX);
        if hi == u64::MAX {
            return hi;
        }
        // Going past `hi` takes the next part of every key whose part ends
        // there.
        let mut add = 0;
        for (e, &i) in ends.iter().zip(&at) {
            if e[i].0 == hi {
                match e.get(i + 1) {
                    Some(&(_, b)) => add += b,
                    None => return hi, // past the budget (`part_ends`)
                }
            }
        }
        if bytes + add > budget {
            return hi;
        }
        bytes += add;
        for (e, i) in ends.iter().zip(at.iter_mut()) {
            if e[*i].0 == hi {
                *i += 1;
            }
        }
    }
}

/// Whether every part of `key` meeting `[lo, hi]` is in RAM (a key that
/// is not chunked: its whole value is, once the view has it).
fn window_resident(view: &mut KeysView<'_>, key: &[u8], lo: u64, hi: u64) -> bool {
    match view.peek(key) {
        Some(ValueRef::Coll(c)) => {
            Hashed::of(c).is_none_or(|h| h.meeting(lo, hi).all(|i| h.dir.part(i).resident))
        }
        _ => true,
    }
}

/// The window from `lo` over `keys` (module doc).
fn next_window(view: &mut KeysView<'_>, keys: &[Bytes], lo: u64) -> u64 {
    let ends: Vec<Vec<(u64, usize)>> = keys
        .iter()
        .map(|k| match view.peek(k) {
            Some(ValueRef::Coll(c)) => {
                Hashed::of(c).map_or_else(Vec::new, |h| h.ends(lo, STREAM_BYTES))
            }
            _ => Vec::new(),
        })
        .collect();
    window_end(&ends, STREAM_BYTES)
}

impl<S, I, E> Windows<S, I, E>
where
    I: FnMut(&mut KeysView<'_>) -> (S, bool),
    E: FnMut(&mut KeysView<'_>, u64, u64, &mut S),
{
    /// One step under the keys' locks: (re)start, or emit the next window;
    /// or the parts to load first.
    fn step(&mut self, inner: &Inner) -> Result<(), ColdKeys> {
        let whole = self.restarts > MAX_RESTARTS;
        let need = match &self.run {
            Some(_) if whole => Need::Whole,
            Some(p) => Need::Hashes { lo: p.lo, hi: p.hi },
            None => Need::Elems(Vec::new()),
        };
        let needs = vec![need; self.keys.len()];
        let Windows {
            keys,
            init,
            emit,
            run,
            done,
            restarts,
            db,
        } = self;
        let mut f = Some(|view: &mut KeysView<'_>| {
            let versions: Vec<Option<u64>> = keys.iter().map(|k| view.version(k)).collect();
            match run.as_mut() {
                Some(p) if p.versions == versions => {}
                Some(_) => {
                    // A key changed: start again (invariant 1).
                    *run = None;
                    *restarts += 1;
                    return;
                }
                None => {
                    let (state, stream) = init(view);
                    *done = !stream;
                    let hi = if stream && !whole {
                        next_window(view, keys, 0)
                    } else {
                        u64::MAX
                    };
                    *run = Some(Progress {
                        state,
                        versions,
                        lo: 0,
                        hi,
                    });
                    if *done {
                        return;
                    }
                }
            }
            let Some(p) = run.as_mut() else { return };
            if whole {
                p.hi = u64::MAX;
            }
            if !keys.iter().all(|k| window_resident(view, k, p.lo, p.hi)) {
                return; // loaded by the next step's need
            }
            emit(view, p.lo, p.hi, &mut p.state);
            if p.hi == u64::MAX {
                *done = true;
                return;
            }
            p.lo = p.hi + 1;
            p.hi = next_window(view, keys, p.lo);
        });
        inner
            .try_with_keys(*db, keys, &needs, false, &mut f)
            .map(|_| ())
    }
}

impl<S, I, E> Steps for Windows<S, I, E>
where
    S: Send + 'static,
    I: FnMut(&mut KeysView<'_>) -> (S, bool) + Send + 'static,
    E: FnMut(&mut KeysView<'_>, u64, u64, &mut S) + Send + 'static,
{
    type Out = S;
    fn step(&mut self, inner: &Inner) -> Result<(), ColdKeys> {
        Windows::step(self, inner)
    }
    fn done(&self) -> bool {
        self.done
    }
    fn finish(self) -> Result<S, EngineError> {
        self.run.map(|p| p.state).ok_or(EngineError::Malformed)
    }
}

impl Engine {
    /// A whole read of several hashes or sets by windows of the element
    /// hash (module doc). `init` runs first on the keys as `with_keys`
    /// gives them and returns the state and whether to stream (false: it
    /// answered alone, say for WRONGTYPE or when nothing is chunked); then
    /// `emit(view, lo, hi, state)` runs once per window, in order, with
    /// every part meeting `[lo, hi]` in RAM, the last window ending at
    /// `u64::MAX` (a STORE form writes its result there). `init` runs again
    /// if a key changes between windows. Returns the final state.
    pub fn stream_windows<S, I, E>(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        init: I,
        emit: E,
    ) -> Read<Result<S, EngineError>>
    where
        S: Send + 'static,
        I: FnMut(&mut KeysView<'_>) -> (S, bool) + Send + 'static,
        E: FnMut(&mut KeysView<'_>, u64, u64, &mut S) + Send + 'static,
    {
        let st = Windows {
            db,
            keys,
            init,
            emit,
            run: None,
            done: false,
            restarts: 0,
        };
        drive(self, st)
    }
}

#[cfg(test)]
mod tests {
    use super::window_end;

    #[test]
    fn a_window_ends_where_the_budget_would_be_passed_at_a_part_boundary() {
        // Key a: parts ending at 9, 19, MAX; key b: 14, MAX.
        let ends = vec![
            vec![(9, 10), (19, 10), (u64::MAX, 10)],
            vec![(14, 10), (u64::MAX, 10)],
        ];
        // The first parts (20 bytes) always; 19 bytes cannot take more.
        assert_eq!(window_end(&ends, 19), 9);
        // Past 9 takes a's second part (30 bytes); past 14, b's second.
        assert_eq!(window_end(&ends, 30), 14);
        assert_eq!(window_end(&ends, 40), 19);
        assert_eq!(window_end(&ends, 1000), u64::MAX);
        // No chunked key: one window.
        assert_eq!(window_end(&[vec![], vec![]], 10), u64::MAX);
        // A list cut short by the budget ends the window where it stops.
        assert_eq!(window_end(&[vec![(5, 8)], vec![(100, 1)]], 50), 5);
    }
}
