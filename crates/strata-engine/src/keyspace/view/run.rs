//! `Engine::with_keys` and its variants: make the declared keys' values
//! (or the parts of chunked collections a command needs) hot, lock the
//! keys' shards in index order, run the closure once (`KeysView` module
//! doc, invariant 1), and retry if something went cold in between.

use super::KeysView;
use crate::base::ValueType;
use crate::clock::now_ms;
use crate::index::{Slot, Value};
use crate::keyspace::chunks::{load_parts, Need, PartTarget};
use crate::stats::Stats;
use crate::tiering::fetch::{fetch_value, FetchTarget, Read};
use crate::{Engine, EngineError, Inner};
use bytes::Bytes;
use smallvec::SmallVec;
use std::sync::Arc;

impl Engine {
    /// Runs `f` on the keys `keys` of `db` atomically, with their values in
    /// RAM (module doc). Keys may repeat.
    pub fn with_keys<R, F>(&self, db: usize, keys: Vec<Bytes>, f: F) -> Read<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        self.with_keys_tracked(db, keys, false, f)
            .map(|r| r.map(|(r, _)| r))
    }

    /// As `with_keys`; with `track`, also returns the lists and sorted
    /// sets that got elements or were stored (`KeysView::track_ready`).
    pub fn with_keys_tracked<R, F>(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        track: bool,
        f: F,
    ) -> Read<Result<(R, Vec<Bytes>), EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        self.with_keys_needs(db, keys, Vec::new(), track, f)
    }

    /// As `with_keys`, for a command that touches only the elements `need`
    /// names of the first key (HGET, SISMEMBER, HSET, SADD ...): of a
    /// chunked collection only the parts holding them are loaded; the
    /// closure must not look at other elements of that key.
    pub fn with_keys_need<R, F>(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        need: Need,
        f: F,
    ) -> Read<Result<R, EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        self.with_keys_needs(db, keys, vec![need], false, f)
            .map(|r| r.map(|(r, _)| r))
    }

    /// Brings the cold values of `keys` into RAM, but no part of a chunked
    /// collection: what a transaction reads before its exclusive section
    /// (`keyspace::exclusive`), so that the section rarely waits for flash.
    pub fn warm(&self, db: usize, mut keys: Vec<Bytes>) -> Read<Result<(), EngineError>> {
        keys.sort_unstable();
        keys.dedup();
        let needs = keys.iter().map(|_| Need::Elems(Vec::new())).collect();
        self.with_keys_needs(db, keys, needs, false, |_| ())
            .map(|r| r.map(|_| ()))
    }

    /// As `with_keys_tracked`, where `needs[i]` names the elements the
    /// closure touches of `keys[i]` (a key without one, or repeated, is
    /// needed whole): LMOVE pops one end of its source and pushes one end
    /// of its destination.
    pub fn with_keys_needs<R, F>(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        needs: Vec<Need>,
        track: bool,
        f: F,
    ) -> Read<Result<(R, Vec<Bytes>), EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        let mut f = Some(f);
        match self.inner.try_with_keys(db, &keys, &needs, track, &mut f) {
            Ok(r) => Read::Ready(Ok(r)),
            Err(cold) => self.with_keys_after(db, keys, needs, track, cold, f),
        }
    }

    /// One attempt of `with_keys_needs` that waits for nothing: runs `f`
    /// now (it need not be `'static`, so it may write straight into its
    /// caller's buffers) if no declared key or needed part is cold; else
    /// leaves `f` in place and returns what to fetch, for
    /// `with_keys_after`.
    pub fn try_keys_now<R, F>(
        &self,
        db: usize,
        keys: &[Bytes],
        needs: &[Need],
        track: bool,
        f: &mut Option<F>,
    ) -> Result<(R, Vec<Bytes>), ColdKeys>
    where
        F: FnOnce(&mut KeysView<'_>) -> R,
    {
        self.inner.try_with_keys(db, keys, needs, track, f)
    }

    /// Reads into RAM the parts on flash that a command of `need` on
    /// `key` would read first (a pipelined request's, before its turn:
    /// the reads of a pipeline then overlap, where each request would
    /// wait for its own). The future loads them as the command itself
    /// would, and changes nothing else; None when there is nothing to
    /// read (the key is not a collection on flash, or its parts needed
    /// are in RAM or taken blindly).
    pub fn prefetch_parts(
        &self,
        db: usize,
        key: Bytes,
        need: Need,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        // An add is read ahead only for a part whose filter does not
        // rule its element out: that part is read when the add runs,
        // whatever the chains' room then (a blind add's room may be there
        // by its turn, and a part read early takes it from the chains).
        let need = match need {
            Need::Adds(adds) => Need::Elems(self.adds_read(db, &key, adds)?),
            n => n,
        };
        let mut none: Option<fn(&mut KeysView<'_>)> = None;
        let cold = match self
            .inner
            .try_with_keys(db, &[key], &[need], false, &mut none)
        {
            Err(cold) if !cold.parts.is_empty() => cold.parts,
            _ => return None,
        };
        let inner = self.inner.clone();
        Stats::add(&inner.stats.part_reads_ahead, cold.len() as u64);
        Some(async move {
            // (A failed read shows in the command that needs the part.)
            let _ = load_parts(&inner, cold).await;
        })
    }

    /// How many requests of a pipeline to read ahead: as many parts as
    /// fit in a 256th of the RAM budget (at most `max`, at least 1), so
    /// parts read ahead are not pushed out of RAM before their turn.
    pub fn read_ahead_depth(&self, max: usize) -> usize {
        let budget = self
            .inner
            .tun
            .maxmemory_ram
            .load(std::sync::atomic::Ordering::Relaxed);
        let parts = budget / 256 / crate::types::chunked::CHUNK_MAX as u64;
        (parts as usize).clamp(1, max)
    }

    /// Of the elements `adds` adds to the collection at `key`, those its
    /// parts on flash' filters do not rule out (None if none).
    fn adds_read(&self, db: usize, key: &[u8], adds: Vec<(Bytes, usize)>) -> Option<Vec<Bytes>> {
        let sh = self.inner.shard(key).lock();
        let e = sh.dbs.get(db)?.get(key)?;
        let d = match &e.slot {
            Slot::Chunked(c) => c.dir()?,
            _ => return None,
        };
        let read: Vec<Bytes> = adds
            .into_iter()
            .map(|(m, _)| m)
            .filter(|m| {
                let i = d.part_of(crate::types::parts::elem_hash(m));
                !d.part(i).resident && !d.rules_out(i, m)
            })
            .collect();
        (!read.is_empty()).then_some(read)
    }

    /// `with_keys_needs` after a first attempt found `cold`: fetches it,
    /// then tries again (fetching again whatever went cold meanwhile).
    pub fn with_keys_after<R, F>(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        needs: Vec<Need>,
        track: bool,
        cold: ColdKeys,
        f: Option<F>,
    ) -> Read<Result<(R, Vec<Bytes>), EngineError>>
    where
        R: Send + 'static,
        F: FnOnce(&mut KeysView<'_>) -> R + Send + 'static,
    {
        let inner = self.inner.clone();
        let mut f = f;
        Read::Pending(Box::pin(async move {
            let mut targets = cold;
            loop {
                promote_all(&inner, targets).await?;
                match inner.try_with_keys(db, &keys, &needs, track, &mut f) {
                    Ok(r) => return Ok(r),
                    Err(t) => targets = t,
                }
            }
        }))
    }
}

/// Fetches the cold values and installs each in RAM (with its flash copy
/// as backing) if its entry did not change meanwhile.
pub(super) async fn promote_all(inner: &Arc<Inner>, targets: ColdKeys) -> Result<(), EngineError> {
    let ColdKeys {
        values: targets,
        parts,
    } = targets;
    if !parts.is_empty() {
        load_parts(inner, parts).await?;
    }
    let fetches = targets.iter().map(|(t, _)| fetch_value(inner.clone(), t));
    let values = join_all(fetches).await;
    for ((t, vtype), v) in targets.iter().zip(values) {
        let bytes = v?;
        let value = Value::from_record(*vtype, bytes).map_err(|_| {
            Stats::inc(&inner.stats.read_errors);
            EngineError::Malformed
        })?;
        let mut guard = inner.shard(&t.key).lock();
        let sh = &mut *guard;
        if let Some(e) = sh.dbs[t.db].get_mut(&t.key) {
            if e.version == t.version && matches!(e.slot, Slot::Cold(l) if l == t.loc) {
                e.replace_slot(&mut sh.acct, Slot::hot_value(value, Some(t.loc)));
                Stats::inc(&inner.stats.uploads);
            }
        }
    }
    inner.wake_if_pressured();
    Ok(())
}

/// Awaits every future, in order (the reads are all submitted before the
/// first is awaited: each `fetch_value` submits when first polled, so poll
/// them together).
pub(crate) async fn join_all<T, Fut: std::future::Future<Output = T>>(
    futs: impl Iterator<Item = Fut>,
) -> Vec<T> {
    let mut futs: Vec<_> = futs.map(Box::pin).collect();
    let mut out: Vec<Option<T>> = (0..futs.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in futs.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// The cold values and parts a `with_keys` attempt must fetch first.
#[derive(Default)]
pub struct ColdKeys {
    values: Vec<(FetchTarget, ValueType)>,
    parts: Vec<PartTarget>,
}

impl Inner {
    /// One attempt of `with_keys`: runs `f` if no declared key is cold,
    /// else returns what to fetch.
    pub(super) fn try_with_keys<R, F>(
        &self,
        db: usize,
        keys: &[Bytes],
        needs: &[Need],
        track: bool,
        f: &mut Option<F>,
    ) -> Result<(R, Vec<Bytes>), ColdKeys>
    where
        F: FnOnce(&mut KeysView<'_>) -> R,
    {
        // (Pushes, not `collect`: SmallVec's `Extend` costs ~100
        // instructions a call, and most commands name one key.)
        let mut ids: SmallVec<[usize; 2]> = SmallVec::new();
        let mut at: SmallVec<[(usize, usize); 2]> = SmallVec::new();
        for k in keys {
            let id = self.shard_index(k);
            ids.push(id);
            at.push((id, usize::MAX));
        }
        if ids.len() > 1 {
            ids.sort_unstable();
            ids.dedup();
        }
        for a in at.iter_mut() {
            a.0 = ids.binary_search(&a.0).unwrap_or(0);
        }
        // Taken before the shards (groups invariant 1).
        let group = self.group_of(keys);
        let mut guards = SmallVec::new();
        for &i in &ids {
            guards.push(self.shards[i].lock());
        }
        let mut view = KeysView {
            inner: self,
            db,
            keys,
            ids,
            guards,
            at,
            _group: group,
            touched: SmallVec::new(),
            limits: self.tun.encoding_limits(),
            ready: None,
        };
        let now = now_ms();
        let mut cold = ColdKeys::default();
        for (i, k) in keys.iter().enumerate() {
            let Some((pos, idx)) = view.index_at(k) else {
                continue;
            };
            let e = view.guard(pos).dbs[db].at_mut(idx);
            if e.is_expired(now) {
                continue;
            }
            match e.slot {
                Slot::Cold(loc) => {
                    if !cold.values.iter().any(|(t, _)| *t.key == k[..]) {
                        cold.values.push((
                            FetchTarget::new(self, db, k, loc, e.version),
                            e.value_type(),
                        ));
                    }
                }
                Slot::Chunked(_) => {
                    if !keys[..i].contains(k) {
                        let n = need_of(keys, needs, i);
                        cold.parts.extend(self.cold_parts(db, k, e, n));
                    }
                }
                Slot::Hot(_) => {}
            }
        }
        if !cold.values.is_empty() || !cold.parts.is_empty() {
            return Err(cold);
        }
        if track {
            view.track_ready();
        }
        let r = match f.take() {
            Some(f) => f(&mut view),
            None => return Err(ColdKeys::default()),
        };
        view.finish();
        let ready = view.take_ready();
        Ok((r, ready))
    }
}

/// What the closure touches of `keys[i]`: its need, or the whole value if
/// it has none or the key appears twice.
fn need_of<'a>(keys: &[Bytes], needs: &'a [Need], i: usize) -> &'a Need {
    const WHOLE: &Need = &Need::Whole;
    let k = &keys[i];
    let repeated = keys.iter().filter(|x| *x == k).count() > 1;
    match needs.get(i) {
        Some(n) if !repeated => n,
        _ => WHOLE,
    }
}
