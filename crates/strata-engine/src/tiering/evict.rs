//! Admission of writes under the memory limits, and key eviction.
//!
//! Limits: RAM (`maxmemory-ram`) is kept by demotion; when demotion cannot
//! keep up, writers wait for room (backpressure) instead of growing RAM
//! without bound. `maxmemory` (RAM + live flash bytes) and a full flash are
//! hard limits: `noeviction` refuses writes with OOM; `allkeys-lru` and
//! `allkeys-random` evict, cold keys first (removing one is RAM-only and
//! frees flash), then by the policy among hot keys.

use crate::clock::{now_ms, now_secs};
use crate::index::Slot;
use crate::stats::Stats;
use crate::{Engine, EvictionPolicy, Inner};
use rand::Rng;
use std::sync::atomic::Ordering::Relaxed;

/// The log's room writes are not admitted into, at least (a sixteenth
/// of a segment if more): the error of `journal_outgrows_log`'s estimate.
const ADMISSION_RESERVE: u64 = 64 << 10;

/// Whether a write may proceed now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Admit,
    /// Room is coming; wait (`Engine::wait_for_room`) and ask again.
    Wait(WaitFor),
    /// Refuse with OOM.
    OutOfMemory,
    /// The flash log cannot take writes (full, or poisoned by a failed
    /// write or fsync): refuse with `Engine::log_error`'s message.
    LogUnavailable,
}

/// What a write waits for (INFO counts the waits by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// RAM over the budget: demotion, or the journal writing what must be
    /// logged before it can leave RAM, is making room.
    Ram,
    /// The journal's queue is at its limit: the journal is writing it.
    Journal,
    /// The flash log is full: the collector or eviction is making room.
    Flash,
}

/// Which limit an OOM refusal hit (`Engine::oom_cause`), so the refusal
/// can name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomCause {
    /// `maxmemory` (RAM and flash together, Redis's limit).
    Maxmemory,
    /// The RAM budget (`maxmemory-ram`) with nothing left to move to
    /// flash: what RAM holds that cannot leave it, and of that the keys'
    /// index, for `keys` keys.
    RamBudget {
        budget: u64,
        pinned: u64,
        index_bytes: u64,
        keys: u64,
    },
    /// The flash log is full of live data (`flash-max-size`).
    Flash { capacity: u64 },
}

/// What the RAM budget holds (measured, each shard under its lock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RamParts {
    /// The keys' index: map buckets and slots, and the keys' bytes.
    pub index_bytes: u64,
    /// Values and collection parts in RAM (what demotion can move).
    pub hot_bytes: u64,
    pub keys: u64,
}

impl Engine {
    /// Which limit refuses writes now (for an OOM refusal's words).
    pub fn oom_cause(&self) -> OomCause {
        let inner = &self.inner;
        if inner.journal.enabled
            && (inner.journal.status() == crate::log::journal::LogStatus::Full
                || inner.journal_outgrows_log())
        {
            return OomCause::Flash {
                capacity: inner.flash.capacity,
            };
        }
        let ram = inner.ram_used();
        let max = inner.tun.maxmemory.load(Relaxed);
        if max > 0 && ram + inner.flash.live_bytes.get() > max {
            return OomCause::Maxmemory;
        }
        let p = inner.ram_parts();
        OomCause::RamBudget {
            budget: inner.tun.maxmemory_ram.load(Relaxed),
            pinned: ram.saturating_sub(p.hot_bytes),
            index_bytes: p.index_bytes,
            keys: p.keys,
        }
    }

    /// Decides whether a write command may run (Redis's `denyoom` check).
    pub fn admission(&self) -> Admission {
        self.inner.admission()
    }

    /// Resolves when the background thread made room (or after its next
    /// tick); callers re-check `admission`.
    pub async fn wait_for_room(&self) {
        self.inner.tiering.room.notified().await;
    }

    /// Whether `maxmemory` is set, exceeded, and the policy evicts
    /// nothing (Redis's OOM state for scripts: not the RAM budget, whose
    /// excess makes writers wait for demotion).
    pub fn over_maxmemory(&self) -> bool {
        let inner = &self.inner;
        let max = inner.tun.maxmemory.load(Relaxed);
        max > 0
            && inner.tun.eviction() == EvictionPolicy::NoEviction
            && inner.ram_used() + inner.flash.live_bytes.get() > max
    }

    /// Evicts by the policy until RAM + live flash bytes fit `maxmemory`
    /// or the policy finds nothing more to evict: after CONFIG SET
    /// maxmemory below what is used, and before every command that is not
    /// a write (writes go through `admission`), as Redis evicts before
    /// any command. Returns the keys evicted; without `maxmemory` it costs
    /// one atomic load.
    pub fn evict_to_limit(&self) -> usize {
        let inner = &self.inner;
        let policy = inner.tun.eviction();
        let mut evicted = 0;
        loop {
            let max = inner.tun.maxmemory.load(Relaxed);
            if max == 0 || policy == EvictionPolicy::NoEviction {
                return evicted;
            }
            if inner.ram_used() + inner.flash.live_bytes.get() <= max {
                return evicted;
            }
            // (Sampling may miss the few keys left: a few tries, then stop.)
            match inner.evict_some(policy, 32) {
                0 => return evicted,
                n => evicted += n,
            }
        }
    }
}

impl Inner {
    fn admission(&self) -> Admission {
        if self.journal.enabled {
            match self.journal.status() {
                crate::log::journal::LogStatus::Ok if self.journal_outgrows_log() => {
                    // A write admitted now would be acknowledged (everysec)
                    // with no room to log it. Room is wanted (the
                    // collector's rule 9): eviction makes it, or, under
                    // noeviction, nothing but what was counted.
                    self.flash.full.store(true, Relaxed);
                    self.wake_background();
                    self.journal.kick();
                    return match self.tun.eviction().evicts_segments() {
                        false => Admission::OutOfMemory,
                        true => Admission::Wait(WaitFor::Flash),
                    };
                }
                crate::log::journal::LogStatus::Ok => {}
                crate::log::journal::LogStatus::Full
                    if self.flash.collectable.load(Relaxed) >= self.flash.segment_size
                        || self.flash.table.allocated_bytes() + self.flash.segment_size
                            <= self.flash.capacity
                        || self.tun.eviction().evicts_segments() =>
                {
                    // The collector (or eviction) is making room, or made
                    // it already and the journal retries soon: wait, as for
                    // demotion.
                    self.wake_background();
                    self.journal.kick();
                    return Admission::Wait(WaitFor::Flash);
                }
                // Full of live data under noeviction: the memory limit.
                crate::log::journal::LogStatus::Full => return Admission::OutOfMemory,
                _ => return Admission::LogUnavailable,
            }
            if self.journal.queued() > crate::log::journal::MAX_QUEUED {
                self.journal.kick();
                return Admission::Wait(WaitFor::Journal);
            }
        }
        let ram = self.ram_used();
        let budget = self.tun.maxmemory_ram.load(Relaxed);
        let policy = self.tun.eviction();
        if ram > self.tun.high_watermark() {
            self.wake_background();
        }
        let maxmemory = self.tun.maxmemory.load(Relaxed);
        if maxmemory > 0 && ram + self.flash.live_bytes.get() > maxmemory {
            if policy == EvictionPolicy::NoEviction || self.evict_some(policy, 32) == 0 {
                // Nothing the policy may evict (no keys, or no key with a
                // TTL under a volatile policy): refused, as in Redis.
                return Admission::OutOfMemory;
            }
            return Admission::Admit;
        }
        // Exactly the budget, the limit the background thread compares with
        // when it decides demotion is not stuck: with the two apart (this
        // one was rounded down to a thousand bytes) RAM in between left
        // writers waiting for room no one would make.
        if ram <= budget {
            return Admission::Admit;
        }
        if !self.tiering.demotion_stuck.load(Relaxed) {
            return Admission::Wait(WaitFor::Ram);
        }
        if policy == EvictionPolicy::NoEviction || self.evict_some(policy, 32) == 0 {
            return Admission::OutOfMemory;
        }
        Admission::Admit
    }

    /// Whether the journal's queued notes need more room than the log has
    /// left, counting what collection can win while it is full. A write
    /// admitted beyond that would be acknowledged (`everysec`) with no
    /// room to log it: 2,182 such SETs were lost to a kill -9 seconds after
    /// their OK, the log full under `noeviction`. The log's room is its
    /// size less its segments' written bytes (a segment's unwritten tail
    /// counts as room; a sealed segment's is not, an error of less than a
    /// segment). Writes stop `ADMISSION_RESERVE` short of it: what they
    /// queue is only estimated, and the next write's size is unknown.
    fn journal_outgrows_log(&self) -> bool {
        let room = self.log_room() + self.flash.collectable.load(Relaxed);
        let reserve = (self.flash.segment_size / 16).max(ADMISSION_RESERVE);
        self.journal.queued_bytes() + reserve > room
    }

    /// Whether the log has less room left than a segment (it cannot open
    /// another).
    pub(crate) fn log_nearly_full(&self) -> bool {
        self.log_room() < self.flash.segment_size
    }

    /// The log's size less its segments' written bytes.
    fn log_room(&self) -> u64 {
        self.flash
            .capacity
            .saturating_sub(self.flash.table.allocated_bytes())
    }

    /// Flash bytes the collector could reclaim (allocated minus live).
    pub(crate) fn reclaimable(&self) -> u64 {
        self.flash
            .table
            .allocated_bytes()
            .saturating_sub(self.flash.live_bytes.get())
    }

    /// Evicts up to `n` keys, one per shard visited, shards in turn from a
    /// random one: in each, the best (`victim_score`) of the keys sampled
    /// in every database (`candidates`). Returns the keys evicted: fewer than
    /// `n` only when a whole turn of the shards found no candidate (no
    /// keys, or under a `Volatile*` policy no key with a TTL).
    pub(crate) fn evict_some(&self, policy: EvictionPolicy, n: usize) -> usize {
        let mut rng = rand::thread_rng();
        let nshards = self.shards.len();
        let samples = self.tun.maxmemory_samples.load(Relaxed).clamp(1, 64) as usize;
        let lfu = self.tun.lfu_params();
        let now = now_secs();
        let (mut evicted, mut empty_in_a_row) = (0, 0);
        let mut s = rng.gen_range(0..nshards);
        while evicted < n && empty_in_a_row < nshards {
            s = (s + 1) % nshards;
            let mut guard = self.shards[s].lock();
            let sh = &mut *guard;
            let mut best: Option<(usize, usize, (u8, u64))> = None;
            for db in 0..sh.dbs.len() {
                if sh.dbs[db].is_empty() || (policy.volatile() && sh.acct.dbs[db].expires == 0) {
                    continue;
                }
                let map = &sh.dbs[db];
                for i in candidates(map.len(), samples, policy.volatile(), &mut rng, |i| {
                    map.at(i).expire_at_ms != 0
                }) {
                    let score = victim_score(&map.at(i), policy, now, lfu, &mut rng);
                    if best.is_none_or(|(_, _, b)| score < b) {
                        best = Some((db, i, score));
                    }
                }
            }
            match best {
                Some((db, i, _)) => {
                    self.remove_index_as(sh, db, i, crate::base::KeyChange::Evicted);
                    Stats::inc(&self.stats.evicted_keys);
                    evicted += 1;
                    empty_in_a_row = 0;
                }
                None => empty_in_a_row += 1,
            }
        }
        evicted
    }

    /// Shrinks every map that deletion or eviction left sparse
    /// (`KeyMap::shrink_if_sparse`).
    pub(crate) fn shrink_sparse_maps(&self) {
        for s in self.shards.iter() {
            for map in s.lock().dbs.iter_mut() {
                map.shrink_if_sparse();
            }
        }
    }

    /// Removes expired keys found within `budget` entries per shard from
    /// each db's cursor. Returns the number removed.
    pub(crate) fn sweep_expired(&self, budget: usize) -> usize {
        let now = now_ms();
        let mut removed = 0;
        for s in self.shards.iter() {
            let mut guard = s.lock();
            let sh = &mut *guard;
            for db in 0..sh.dbs.len() {
                if sh.acct.dbs[db].expires == 0 {
                    continue;
                }
                let mut i = sh.expire_cursor[db];
                let mut seen = 0;
                while seen < budget {
                    let len = sh.dbs[db].len();
                    if len == 0 {
                        break;
                    }
                    if i >= len {
                        i = 0;
                    }
                    seen += 1;
                    if sh.dbs[db].at(i).is_expired(now) {
                        // swap_remove moves the last entry here: look at i again.
                        self.remove_index(sh, db, i, true);
                        removed += 1;
                    } else {
                        i += 1;
                    }
                }
                sh.expire_cursor[db] = i;
            }
        }
        removed
    }
}

/// Positions to sample in a map of `len` entries (`samples`: Redis's
/// `maxmemory-samples`, at most 64): that many distinct random ones, or
/// under a volatile policy the first that many with a TTL (`has_ttl`) in a
/// walk from a random position, the whole map at most (the caller skips a
/// map whose shard counts no key with a TTL; Redis samples its `expires`
/// table, which this index does not keep apart).
fn candidates(
    len: usize,
    samples: usize,
    volatile: bool,
    rng: &mut impl Rng,
    has_ttl: impl Fn(usize) -> bool,
) -> Vec<usize> {
    if !volatile {
        // Distinct positions (a small map is seen whole).
        return rand::seq::index::sample(rng, len, samples.min(len)).into_vec();
    }
    let start = rng.gen_range(0..len);
    (0..len)
        .map(|k| (start + k) % len)
        .filter(|&i| has_ttl(i))
        .take(samples)
        .collect()
}

/// A sampled key's rank as a victim, lower first: cold keys (value on
/// flash; removing one frees flash and little RAM), oldest segment first,
/// then hot keys by the policy. `VolatileTtl` ranks by expiry alone.
fn victim_score(
    e: &crate::index::Entry,
    policy: EvictionPolicy,
    now_secs: u32,
    lfu: crate::config::LfuParams,
    rng: &mut impl Rng,
) -> (u8, u64) {
    use EvictionPolicy::*;
    match (&e.slot, policy) {
        (_, VolatileTtl) => (0, e.expire_at_ms),
        (Slot::Cold(l), _) => (0, l.segment as u64),
        (_, AllkeysLru | VolatileLru) => (1, e.lru_secs as u64),
        (_, AllkeysLfu | VolatileLfu) => (
            1,
            crate::index::access::decayed(e.lfu, e.lru_secs, now_secs, lfu) as u64,
        ),
        _ => (1, rng.gen()),
    }
}
