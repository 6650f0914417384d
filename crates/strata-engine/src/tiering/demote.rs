//! Demotion: a CLOCK hand per shard and database walks the entries; a hot
//! value whose reference bit is set gets a second chance (the bit is
//! cleared), one without it is demoted (policy documented in README).
//! Values shorter than `tiering-min-value-size` never move. A value with a
//! valid flash copy (`backing`) is demoted by dropping its RAM copy (no
//! I/O). The background thread (`tiering`) runs a chunk at a time from the
//! high watermark (90% of `maxmemory-ram`) down to the low one (80%).
//!
//! A chunk: victims are picked under their shard's lock (marked
//! `F_STASHING`), written without any lock, then published: each entry
//! whose version did not change meanwhile points at its record and leaves
//! RAM (index invariant 2).

use super::demote_parts::{demote_parts, reclaim_cold_chains, write_chunk_victims};
use crate::base::FlashLoc;
use crate::flash::format::{ItemMeta, RecordHeader};
use crate::index::{
    prefetch_lines, Slot, F_DIRTY, F_EXPLICIT_CAS, F_REFERENCED, F_STALE, F_STASHING,
};
use crate::log::chunks::ChunkedState;
use crate::log::writer::{AppendError, SegmentWriter};
use crate::stats::Stats;
use crate::Inner;
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;

/// Entries the CLOCK hand examines per shard visit.
const HAND_STEP: usize = 256;
/// Boxed entries the hand prefetches at a time.
const WINDOW: usize = 16;
/// Bytes of a victim's value prefetched before its copy, at most.
const PREFETCH_MAX: usize = 4096;

/// One value picked for demotion.
struct Victim {
    /// The shard, and the entry's position in its map when picked (where
    /// `publish` looks first: a removal may have moved it since).
    shard: usize,
    pos: usize,
    /// The database's id (what the record names; `keyspace::swapdb`).
    db: u16,
    /// Where its key is in the chunk's `Keys` (one buffer for all the
    /// chunk's keys: no allocation per victim).
    key: std::ops::Range<usize>,
    value: Bytes,
    version: u64,
    expire_at_ms: u64,
    meta: ItemMeta,
    loc: Option<FlashLoc>,
}

/// The keys of a chunk's victims, end to end.
#[derive(Default)]
struct Keys(Vec<u8>);

impl Keys {
    fn push(&mut self, k: &[u8]) -> std::ops::Range<usize> {
        let start = self.0.len();
        self.0.extend_from_slice(k);
        start..self.0.len()
    }

    fn of(&self, v: &Victim) -> &[u8] {
        &self.0[v.key.clone()]
    }
}

/// What one demotion step did.
pub(super) struct Progress {
    /// Values that left RAM.
    pub(super) moved: usize,
    /// Eligible values given a second chance (the next pass may take them).
    pub(super) spared: usize,
    /// Entries examined.
    pub(super) scanned: usize,
}

/// What one demotion step gathers as its hand walks: the values and the
/// chunked collections' parts it picked, and its counts.
#[derive(Default)]
struct Pass {
    victims: Vec<Victim>,
    keys: Keys,
    chunk_victims: Vec<(u16, Box<[u8]>, ChunkedState)>,
    /// Victims of the database being walked whose explicit CAS is looked
    /// up after its walk.
    with_cas: Vec<usize>,
    /// Dirty values were left to the journal: wake it.
    journal_due: bool,
    /// Bytes picked to write.
    bytes: usize,
    /// Values that left RAM without I/O.
    freed: usize,
    /// Eligible values that got a second chance this time: not "stuck".
    spared: usize,
    scanned: usize,
    /// RAM to free (to the low watermark): a chunked collection's hand
    /// stops once its freed and picked parts cover what is left of it.
    to_free: usize,
    /// `tiering-min-value-size`: shorter values never move.
    min: usize,
}

/// Demotes about one write chunk of values: the hand walks the shards'
/// databases picking victims (`Pass::walk`), then they are written and
/// published (`Pass::write`).
pub(super) fn demote_chunk(
    inner: &Inner,
    writer: &mut SegmentWriter,
    next_shard: &mut usize,
) -> Result<Progress, AppendError> {
    let nshards = inner.shards.len();
    let mut pass = Pass {
        to_free: inner.ram_used().saturating_sub(inner.tun.low_watermark()) as usize,
        min: inner.tun.min_value_size.load(Relaxed) as usize,
        ..Pass::default()
    };
    for _ in 0..nshards * 2 {
        if pass.bytes >= inner.flash.write_chunk {
            break;
        }
        let si = *next_shard % nshards;
        *next_shard = next_shard.wrapping_add(1);
        let mut guard = inner.shards[si].lock();
        let sh = &mut *guard;
        for db in 0..sh.dbs.len() {
            if sh.dbs[db].is_empty() || pass.bytes >= inner.flash.write_chunk {
                continue;
            }
            pass.walk(inner, sh, si, db);
        }
    }
    if pass.journal_due {
        inner.journal.kick();
    }
    pass.write(inner, writer)
}

/// What the hand does next after an entry.
enum Step {
    Next,
    /// The chunk is full.
    Full,
}

impl Pass {
    /// Moves the hand of `db` in shard `si` over up to `HAND_STEP`
    /// entries, picking victims.
    fn walk(&mut self, inner: &Inner, sh: &mut crate::index::Shard, si: usize, db: usize) {
        let len = sh.dbs[db].len();
        let mut hand = sh.hand[db];
        self.with_cas.clear();
        let mut steps = HAND_STEP.min(len);
        // The next boxed positions ahead of the hand, their buckets and
        // boxes prefetched together (each box is a cache miss of its own:
        // visited one by one, they were 40% of this thread).
        let mut window = [0usize; WINDOW];
        let (mut wn, mut wi) = (0, 0);
        while steps > 0 {
            if hand >= len {
                hand = 0;
            }
            if wi == wn {
                // Packed entries are cold: the hand passes them through
                // the map's bits, without reading buckets.
                let end = len.min(hand + steps);
                let m = &sh.dbs[db];
                (wn, wi) = (0, 0);
                let mut p = hand;
                while wn < WINDOW {
                    let Some(q) = m.next_boxed(p, end) else {
                        break;
                    };
                    window[wn] = q;
                    wn += 1;
                    p = q + 1;
                }
                if wn == 0 {
                    self.scanned += end - hand;
                    steps -= end - hand;
                    hand = end;
                    continue;
                }
                for &q in &window[..wn] {
                    m.prefetch(q, false);
                }
                for &q in &window[..wn] {
                    m.prefetch(q, true);
                }
            }
            let i = window[wi];
            wi += 1;
            self.scanned += i + 1 - hand;
            steps -= i + 1 - hand;
            hand = i + 1;
            match self.entry(inner, sh, si, db, i) {
                Some(Step::Next) => {}
                Some(Step::Full) | None => break,
            }
        }
        sh.hand[db] = hand;
        for &i in &self.with_cas {
            let v = &mut self.victims[i];
            let key = self.keys.of(v);
            if let Some(e) = sh.dbs[db].get(key) {
                v.meta = sh.item_meta(db, key, &e);
            }
        }
    }

    /// The hand at entry `i` of `db`: a cold boxed one packed, a chunked
    /// collection's parts demoted, a referenced one spared, a clean one
    /// dropped, a dirty one picked (or left to the journal). None when
    /// the map ends before `i`.
    #[inline]
    fn entry(
        &mut self,
        inner: &Inner,
        sh: &mut crate::index::Shard,
        si: usize,
        db: usize,
        i: usize,
    ) -> Option<Step> {
        let len = sh.dbs[db].len();
        // A packed entry is cold: nothing to do (and no boxing it to
        // look). A boxed cold one is packed if it can be.
        match sh.dbs[db].boxed_at(i) {
            None if i < len => return Some(Step::Next),
            Some(e) if matches!(e.slot, Slot::Cold(_)) => {
                sh.dbs[db].pack(i);
                return Some(Step::Next);
            }
            _ => {}
        }
        let (k, e) = sh.dbs[db].get_index_mut(i)?;
        let full = |bytes: usize| {
            if bytes >= inner.flash.write_chunk {
                Step::Full
            } else {
                Step::Next
            }
        };
        if matches!(e.slot, Slot::Chunked(_)) {
            let want = self
                .to_free
                .saturating_sub(self.bytes)
                .max(crate::types::chunked::CHUNK_MAX);
            // (No room for cold chains while demotion reads them back for
            // RAM: a chained part leaves with its image written.)
            let budget = if inner.tiering.chains_squeezed.load(Relaxed) {
                0
            } else {
                inner.tun.maxmemory_ram.load(Relaxed) as usize
            };
            let step = demote_parts(e, &mut sh.acct, want, inner.journal.enabled, budget);
            let mut journal_due = step.journal_due;
            if step.freed == 0 && step.spared == 0 && step.write.is_none() && !journal_due {
                journal_due = self.squeeze(inner, e, &mut sh.acct, k);
            }
            self.to_free = self.to_free.saturating_sub(step.freed_bytes);
            self.spared += step.spared;
            self.freed += step.freed;
            // Each part in RAM counts as an entry examined.
            self.scanned += step.examined;
            if let Some(st) = step.write {
                e.flags |= F_STASHING;
                self.bytes += st
                    .parts
                    .iter()
                    .map(|p| p.value.len() + k.len() + 32)
                    .sum::<usize>();
                self.chunk_victims
                    .push((inner.keys.dbmap.id(db), Box::<[u8]>::from(k), st));
            }
            if journal_due {
                // The journal writes the changed parts, and images of the
                // chained ones (`parts::chains`), which may be all that is
                // due: the entry is noted again.
                inner.log_again(sh, db, i);
                inner.journal.kick();
            }
            return Some(full(self.bytes));
        }
        if !matches!(e.slot, Slot::Hot(_)) || e.flags & F_STASHING != 0 {
            return Some(Step::Next);
        }
        // A string's length is in the entry: no visit to its value (a
        // cache miss per entry the hand passes) unless it goes.
        let vlen = match (&e.slot, e.value_type()) {
            (_, crate::ValueType::String) => e.value_len as usize,
            (Slot::Hot(h), _) => h.value.len(),
            _ => 0,
        };
        if vlen < self.min.max(1) {
            return Some(Step::Next);
        }
        if e.flags & F_REFERENCED != 0 {
            e.flags &= !F_REFERENCED;
            self.spared += 1;
            return Some(Step::Next);
        }
        let Slot::Hot(h) = &e.slot else {
            return Some(Step::Next);
        };
        if let Some(loc) = h.backing() {
            // A clean copy is on flash: drop the RAM copy, no I/O (and
            // what else its chain held, if anything: `types::changes`).
            let old = e.replace_slot(&mut sh.acct, Slot::Cold(loc));
            for l in old.locs().into_iter().filter(|&l| l != loc) {
                inner.release_flash_quiet(l);
            }
            sh.dbs[db].pack(i);
            Stats::inc(&inner.stats.free_demotions);
            self.freed += 1;
            return Some(Step::Next);
        }
        if inner.journal.enabled && (e.flags & F_DIRTY != 0 || h.chain().is_none()) {
            // The journal writes it (soon: it is noted); a record written
            // here could carry one key of a transaction ahead of the
            // others' (journal invariant 7). Once journaled, it is demoted
            // without I/O. (A value whose chain of records holds its state,
            // `types::changes`, is written whole here: it is in the log.)
            self.spared += 1;
            self.journal_due = true;
            return Some(Step::Next);
        }
        e.flags |= F_STASHING;
        self.bytes += h.value.len() + k.len() + 32;
        if e.flags & F_EXPLICIT_CAS != 0 {
            self.with_cas.push(self.victims.len());
        }
        self.victims.push(Victim {
            shard: si,
            pos: i,
            db: inner.keys.dbmap.id(db),
            key: self.keys.push(k),
            value: h.value.to_bytes(),
            version: e.version,
            expire_at_ms: e.expire_at_ms,
            meta: ItemMeta {
                client_flags: e.client_flags,
                explicit_cas: None,
                stale: e.flags & F_STALE != 0,
                vtype: e.value_type(),
            },
            loc: None,
        });
        Some(full(self.bytes))
    }

    /// A chunked collection whose pass freed, spared and picked nothing:
    /// what is left in RAM only saves work, dropped at once (cold chains'
    /// steps spill to their records; else the parts' membership filters,
    /// which save reads, and the chains' bases, which save images); failing
    /// that, with the journal on, cold chains are read back to be written
    /// whole (they leave at the next pass: not stuck), and no new cold
    /// chain or blind add is made until RAM is under its low watermark.
    /// Returns whether the journal must write the collection.
    fn squeeze(
        &mut self,
        inner: &Inner,
        e: &mut crate::index::Entry,
        acct: &mut crate::index::ShardCounters,
        k: &[u8],
    ) -> bool {
        // Cold chains' steps spill first (or are restated in one record
        // each, then spill: the journal writes them): that costs little,
        // the filters cost blind adds.
        let (shed, asked) = e
            .with_dir(acct, |d| match d.chains_mut().spill(usize::MAX, true) {
                // Restatements in flight free RAM once the journal wrote
                // them: keep the filters meanwhile.
                (0, false) if d.chains().restating() => (0, true),
                (0, false) => (d.shed_filters() + d.chains_mut().shed_bases(), false),
                r => r,
            })
            .unwrap_or((0, false));
        if asked {
            self.spared += 1;
            return true;
        }
        if shed > 0 {
            self.to_free = self.to_free.saturating_sub(shed);
            self.spared += 1;
            return false;
        }
        if !inner.journal.enabled {
            return false;
        }
        let n = reclaim_cold_chains(inner, e, acct, k);
        if n > 0 {
            inner.tiering.chains_squeezed.store(true, Relaxed);
        }
        self.spared += n;
        n > 0
    }

    /// Writes what the walk picked and publishes it: the chunked
    /// collections' parts, then the values.
    fn write(mut self, inner: &Inner, writer: &mut SegmentWriter) -> Result<Progress, AppendError> {
        let chunks_moved = if self.chunk_victims.is_empty() {
            Ok(0)
        } else {
            // Parts written but changed before they could be published
            // stay in RAM (dirty): the next pass writes them again, so they
            // count as spared, not as a reason to call demotion stuck.
            let picked: usize = self
                .chunk_victims
                .iter()
                .map(|(_, _, st)| st.parts.len())
                .sum();
            let spared = &mut self.spared;
            write_chunk_victims(inner, writer, &self.chunk_victims).inspect(|&n| {
                *spared += picked.saturating_sub(n);
            })
        };
        Stats::add(&inner.stats.demotion_scanned, self.scanned as u64);
        let (spared, scanned) = (self.spared, self.scanned);
        if self.victims.is_empty() {
            return chunks_moved.map(|n| Progress {
                moved: self.freed + n,
                spared,
                scanned,
            });
        }
        let freed = self.freed + chunks_moved?;
        inner
            .stats
            .pending_stashes
            .store(self.victims.len() as u64, Relaxed);
        let result = write_victims(inner, writer, &mut self.victims, &self.keys);
        inner.stats.pending_stashes.store(0, Relaxed);
        let published = publish(inner, &self.victims, &self.keys);
        result.map(|()| Progress {
            moved: published + freed,
            spared,
            scanned,
        })
    }
}

fn write_victims(
    inner: &Inner,
    writer: &mut SegmentWriter,
    victims: &mut [Victim],
    keys: &Keys,
) -> Result<(), AppendError> {
    let mut r = Ok(());
    // The values were written long ago and are out of cache: each one's
    // bytes are fetched a few victims ahead of its copy.
    const AHEAD: usize = 4;
    for v in victims.iter().take(AHEAD) {
        prefetch_lines(&v.value[..], v.value.len().min(PREFETCH_MAX));
    }
    for k in 0..victims.len() {
        if let Some(a) = victims.get(k + AHEAD) {
            prefetch_lines(&a.value[..], a.value.len().min(PREFETCH_MAX));
        }
        let v = &mut victims[k];
        let key = keys.of(v);
        let h = RecordHeader::value(v.db, key, v.value.len(), v.version, v.expire_at_ms);
        match writer.append_item(&h, key, &v.meta, &v.value, inner.flash.capacity) {
            Ok(loc) => v.loc = Some(loc),
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    // Flush even after an error: after `Full` (whose roll flushed first)
    // the records appended so far are valid; after an I/O error they are not
    // published (below).
    let flushed = writer.flush_counted(&inner.stats.device.demotion);
    if let Err(e) = flushed {
        for v in victims.iter_mut() {
            v.loc = None;
        }
        return Err(AppendError::Io(e));
    }
    if matches!(r, Err(AppendError::Io(_))) {
        // The failed write may have dropped records buffered before it.
        for v in victims.iter_mut() {
            v.loc = None;
        }
    }
    r
}

/// Points the index at the written records, for entries whose version did
/// not change meanwhile; clears the stashing flag on all. Returns how many
/// were published.
///
/// Victims come shard by shard (the hands' order): a shard's lock is taken
/// once for a run of its victims, at most `PUBLISH_RUN` of them, so writers
/// to it wait for one short run, not for the whole chunk.
fn publish(inner: &Inner, victims: &[Victim], keys: &Keys) -> usize {
    const PUBLISH_RUN: usize = 64;
    let mut n = 0;
    for run in victims.chunk_by(|a, b| a.shard == b.shard) {
        for run in run.chunks(PUBLISH_RUN) {
            // Written a chunk ago, the victims' buckets and boxes are out
            // of cache: their misses overlap.
            let mut guard = inner.shards[run[0].shard].lock();
            guard.pipelined(
                run,
                |v| (inner.keys.dbmap.logical(v.db), v.pos),
                |sh, v| n += publish_one(inner, sh, v, keys.of(v)),
            );
        }
    }
    n
}

/// `publish` for one victim, under its shard's lock; 1 if it left RAM.
fn publish_one(inner: &Inner, sh: &mut crate::index::Shard, v: &Victim, key: &[u8]) -> usize {
    let d = inner.keys.dbmap.logical(v.db);
    let Some(idx) = sh.dbs[d].get_index_of_from(v.pos, key) else {
        return 0;
    };
    let meta = sh.item_meta(d, key, &sh.dbs[d].at(idx));
    let e = sh.dbs[d].at_mut(idx);
    if e.version != v.version {
        // Boxed above to look: packed again if it can be.
        sh.dbs[d].pack(idx);
        return 0;
    }
    e.flags &= !F_STASHING;
    let Some(loc) = v.loc else { return 0 };
    if e.expire_at_ms != v.expire_at_ms || meta != v.meta {
        // The TTL or item state changed after the value was picked: the
        // journal may already have logged the new state, *before* this
        // record of the same write, and recovery takes the later one
        // (journal invariant 6): log the current state again.
        inner.log_again(sh, d, idx);
    }
    let e = sh.dbs[d].at_mut(idx);
    if matches!(&e.slot, Slot::Hot(h) if h.backing().is_none()) {
        // The records of its chain (`types::changes`) are replaced.
        for old in e.replace_slot(&mut sh.acct, Slot::Cold(loc)).locs() {
            inner.release_flash_quiet(old);
        }
        if e.expire_at_ms == v.expire_at_ms && meta == v.meta {
            // The record holds the whole current state (journal invariant 3).
            e.flags &= !F_DIRTY;
        }
        sh.dbs[d].pack(idx);
        inner.retain_flash(loc);
        Stats::inc(&inner.stats.stashes);
        Stats::add(&inner.stats.stash_bytes, loc.len as u64);
        return 1;
    }
    sh.dbs[d].pack(idx);
    0
}
