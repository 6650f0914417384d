//! `Dir`: a chunked collection's directory as the engine's journal,
//! demotion, collector, checkpoint and recovery see it, whatever the
//! collection's type (hash, set, list, sorted set, stream, big string):
//! its head record (`DirHead`) and what it says of each part (`PartInfo`).

use super::chains::{PartChains, PartName, MERGE_AT};
use super::clock::{clock_walk, ClockStep, PartClock};
use crate::base::{FlashLoc, Malformed};

/// One scan step: (element, value bytes) pairs and the next cursor.
pub type ScanStep<'a> = (Vec<(&'a [u8], &'a [u8])>, u64);

/// What the engine sees of one part, whatever the collection's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartInfo {
    pub low: u64,
    pub depth: u8,
    pub dirty: bool,
    pub resident: bool,
    pub count: u32,
    pub body: u32,
    pub ver: u32,
    pub loc: Option<FlashLoc>,
    pub seq: u64,
}

impl PartInfo {
    /// A part on flash whose record at `loc` (sequence `seq`) holds
    /// `count` elements of `body` bytes (a checkpoint's or recovery's).
    pub fn on_flash(low: u64, depth: u8, count: u32, body: u32, loc: FlashLoc, seq: u64) -> Self {
        PartInfo {
            low,
            depth,
            dirty: false,
            resident: false,
            count,
            body,
            ver: 0,
            loc: Some(loc),
            seq,
        }
    }
}

/// A chunked collection's incarnation and head record (kind 8), the same
/// for every element type, and its parts' chains (`chains`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirHead {
    /// Collection id: names this incarnation's records (docs/format.md,
    /// kinds 8 and 9), so records of an older one are never taken for it.
    pub cid: u64,
    /// The head record, once written, and its sequence number.
    pub loc: Option<FlashLoc>,
    pub seq: u64,
    /// The head must be written (again): a new collection, a new TTL, or
    /// (lists) a new span.
    pub dirty: bool,
    /// The chains of the parts the journal logs by their changes.
    pub chains: PartChains,
    /// RAM the collection's cold chains may keep (`cold_room`), as the
    /// demoter last computed it; blind adds stay under it.
    pub cold_room: usize,
}

impl DirHead {
    /// The head of a new incarnation (not written yet).
    pub fn new(cid: u64) -> DirHead {
        DirHead {
            cid,
            loc: None,
            seq: 0,
            dirty: true,
            chains: PartChains::default(),
            cold_room: 0,
        }
    }
    /// The head of a collection recovered from its record at `loc`.
    pub fn written(cid: u64, loc: Option<FlashLoc>, seq: u64) -> DirHead {
        DirHead {
            cid,
            loc,
            seq,
            dirty: false,
            chains: PartChains::default(),
            cold_room: 0,
        }
    }
}

/// A chunked collection's directory, as the engine's journal, demotion,
/// collector and checkpoint use it (object-safe over the element type).
pub trait Dir {
    fn head(&self) -> &DirHead;
    fn head_mut(&mut self) -> &mut DirHead;
    fn cid(&self) -> u64 {
        self.head().cid
    }
    fn head_loc(&self) -> Option<FlashLoc> {
        self.head().loc
    }
    fn set_head_loc(&mut self, loc: Option<FlashLoc>) {
        self.head_mut().loc = loc;
    }
    fn head_seq(&self) -> u64 {
        self.head().seq
    }
    fn set_head_seq(&mut self, seq: u64) {
        self.head_mut().seq = seq;
    }
    fn head_dirty(&self) -> bool {
        self.head().dirty
    }
    fn set_head_dirty(&mut self, dirty: bool) {
        self.head_mut().dirty = dirty;
    }
    /// The positions `[start, end)` a list's head record carries (None for
    /// hashes and sets).
    fn head_span(&self) -> Option<(u64, u64)> {
        None
    }
    /// Changes whenever the head's own fields may have changed (a
    /// stream's counters and groups): a head is published clean only if
    /// this did not move since its capture. 0 for types whose head holds
    /// only the span.
    fn head_version(&self) -> u64 {
        0
    }
    /// Appends the fields the head record carries after the span (a
    /// stream's counters and groups; nothing for other types).
    fn head_meta(&self, _out: &mut Vec<u8>) {}
    /// The span the newest head record found by recovery names (lists).
    fn recovered_span(&self) -> Option<(u64, u64)> {
        None
    }
    fn set_recovered_span(&mut self, _span: (u64, u64)) {}
    fn part_count(&self) -> usize;
    fn part(&self, i: usize) -> PartInfo;
    /// Part `i`'s name in its records.
    fn part_name(&self, i: usize) -> PartName {
        let p = self.part(i);
        (p.low, p.depth)
    }
    /// Whether a chained part may leave RAM with its steps kept (a cold
    /// chain, `chains`); else demotion writes its image first.
    fn keeps_cold_chains(&self) -> bool {
        true
    }
    fn chains(&self) -> &PartChains {
        &self.head().chains
    }
    fn chains_mut(&mut self) -> &mut PartChains {
        &mut self.head_mut().chains
    }
    /// The lower bound of part `i`'s range when it is not a number: a
    /// sorted set's order part (`zset::Order`); None otherwise.
    fn part_first(&self, _i: usize) -> Option<&[u8]> {
        None
    }
    /// The part named `(low, depth)` (a chunk record's name), if it still
    /// exists; `hint`: where it was.
    fn find_part(&self, low: u64, depth: u8, _hint: usize) -> Option<usize> {
        let i = self.part_of(low);
        let p = self.part(i);
        (p.low == low && p.depth == depth).then_some(i)
    }
    /// Index of the part holding hash `h`.
    fn part_of(&self, h: u64) -> usize;
    /// The part holding the element at position `i` of the iteration order.
    fn part_at(&self, i: usize) -> Option<usize>;
    /// The parts a scan step covers (`Chunked::scan_parts`).
    fn scan_parts(&self, from: u64, count: usize) -> std::ops::Range<usize>;
    /// The demoter's hand over the parts in RAM, from where it stopped
    /// last: a used one loses its mark (spared), a clean one with a record
    /// leaves RAM (freed), a changed one is listed to be written; it stops
    /// once the freed and listed parts hold `want` bytes (or after one
    /// turn), so one huge collection is not emptied to free a little.
    /// Returns (spared, freed, examined, changed parts).
    /// `cold_room`: RAM the collection's cold chains may keep (`settle`).
    fn clock_pass(&mut self, want: usize, cold_room: usize) -> (usize, usize, usize, Vec<usize>) {
        let n = self.part_count();
        let mut hand = *self.hand();
        let resident = self.resident_parts();
        let step = clock_walk(n, resident, &mut hand, want, |i| self.part_clock(i));
        *self.hand() = hand;
        settle(self, step, cold_room)
    }
    /// Where the demoter's hand stopped (a hint for the next pass).
    fn hand(&mut self) -> &mut usize;
    /// What the demoter's hand sees of part `i` (reading it clears the
    /// part's used mark): by default, what `part` says of it.
    fn part_clock(&mut self, i: usize) -> PartClock {
        let info = self.part(i);
        PartClock {
            resident: info.resident,
            referenced: self.clock(i),
            dirty: info.dirty,
            has_record: info.loc.is_some(),
            body: info.body as usize,
        }
    }
    /// Points part `i` at `loc` (a moved copy of its record).
    fn set_part_loc(&mut self, i: usize, loc: FlashLoc);
    /// The parts whose record is `loc`, a record of the range at `low`,
    /// `depth` (they lie in that range: invariant 5) with this chunk body.
    fn parts_at(&self, loc: FlashLoc, low: u64, depth: u8, body: &[u8]) -> Vec<usize>;
    fn encode_part(&self, i: usize, out: &mut Vec<u8>);
    /// Points part `i` at its record `loc` of sequence number `seq` (None
    /// if it has a newer one): the part is clean if it still has version
    /// `ver` (else it stays changed, and its next record, a change, is
    /// based on this one). Returns the record it replaces (to release).
    fn published(
        &mut self,
        i: usize,
        ver: u32,
        loc: FlashLoc,
        seq: u64,
    ) -> Option<Option<FlashLoc>>;
    fn evict(&mut self, i: usize) -> usize;
    /// Sets part `i`'s used mark (CLOCK: set by reads, cleared by the
    /// demoter's hand) to `on`, if the part exists and has one; returns
    /// the mark it had (false without one).
    fn swap_used(&mut self, i: usize, on: bool) -> bool;
    /// Marks part `i` used (CLOCK).
    fn touch(&mut self, i: usize) {
        self.swap_used(i, true);
    }
    /// The demoter's hand passes part `i`: returns whether it was used
    /// since, clearing the mark.
    fn clock(&mut self, i: usize) -> bool {
        self.swap_used(i, false)
    }
    /// Installs part `i`'s elements from the record at `loc`, whose chunk
    /// is `named` (low, depth) and has this body, if the part is still cold
    /// there; returns whether it was installed.
    fn install(
        &mut self,
        i: usize,
        loc: FlashLoc,
        body: &[u8],
        named: (u64, u8),
    ) -> Result<bool, Malformed>;
    fn take_new_refs(&mut self) -> Vec<FlashLoc>;
    /// Records no part refers to any more since the last call (a list's
    /// parts popped or trimmed away); the engine releases each once.
    fn take_dropped_refs(&mut self) -> Vec<FlashLoc> {
        Vec::new()
    }
    fn resident_bytes(&self) -> usize;
    /// RAM the parts' entries take (the directory's vectors and what
    /// entries keep on the heap besides elements, filters and chains).
    fn entries_bytes(&self) -> usize;
    /// RAM the directory's parts and chains hold (what the shard counts).
    fn ram_bytes(&self) -> usize {
        self.resident_bytes() + self.chains().ram() + self.filter_ram()
    }
    /// RAM the parts' membership filters hold (`chunked::blind`).
    fn filter_ram(&self) -> usize {
        0
    }
    /// Whether adding `elem` (of `entry` packed bytes with its value) to
    /// part `i` needs no read of it (`chunked::blind`).
    fn adds_blind(&self, _i: usize, _elem: &[u8], _entry: usize) -> bool {
        false
    }
    /// Whether part `i`'s membership filter rules `elem` out, so an add
    /// of it may go in blindly (`adds_blind` asks this and whether the
    /// chains have room, which changes from one moment to the next).
    fn rules_out(&self, _i: usize, _elem: &[u8]) -> bool {
        false
    }
    /// Elements added blindly since the last call.
    fn take_blind_adds(&mut self) -> u64 {
        0
    }
    /// Drops the parts' membership filters (RAM is short: they only save
    /// reads); returns the bytes freed.
    fn shed_filters(&mut self) -> usize {
        0
    }
    /// How a read of elements `elems` of part `i`, on flash, reads them
    /// (`chunked::peek`).
    fn peek_plan(&self, _i: usize, _elems: &[&[u8]]) -> PeekPlan {
        PeekPlan::Load
    }
    /// Keeps part `i`'s record at `loc` (`image`: its image's chunk body;
    /// else a part change record's value), read as `body`, as a peek;
    /// whether it did (the part still has that record).
    fn put_peek(
        &mut self,
        _i: usize,
        _loc: FlashLoc,
        _image: bool,
        _body: &[u8],
    ) -> Result<bool, Malformed> {
        Ok(false)
    }
    /// Drops the peeks (their command ended).
    fn drop_peeks(&mut self) {}
    /// Whether the parts' chains name every element a change of a part
    /// in RAM touches (`chunked::peek`); else a diff makes a chain opaque.
    fn tags_changes(&self) -> bool {
        false
    }
    fn resident_parts(&self) -> usize;
    fn body_len(&self) -> usize;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Checks the directory's invariants (tests).
    fn check(&self) -> Result<(), String>;
    /// Whether any part changed since its record (O(parts)).
    fn any_dirty(&self) -> bool {
        (0..self.part_count()).any(|i| self.part(i).dirty)
    }
    /// The parts changed since their records, in order (what the journal
    /// writes).
    fn dirty_parts(&self) -> Vec<usize> {
        (0..self.part_count())
            .filter(|&i| self.part(i).dirty)
            .collect()
    }
    /// Every record the directory refers to, once per reference: the
    /// parts', the head and the chains'.
    fn locs(&self) -> Vec<FlashLoc> {
        let mut v: Vec<FlashLoc> = (0..self.part_count())
            .filter_map(|i| self.part(i).loc)
            .collect();
        v.extend(self.head_loc());
        v.extend(self.chains().locs());
        v
    }
}

/// Ends a pass of the demoter's hand over `d`: the clean parts it picked
/// leave RAM. A chained part leaves with its changes' steps resident (a
/// cold chain, `chains`) while they are under half the part, its chain
/// is shorter than `MERGE_AT` and was not read back spilled, the
/// collection's chains hold less than `room` (`cold_room`) besides steps
/// that may spill, and its image is its record; else it is listed to be
/// written first, as an image. A part whose chain's last record is not
/// published yet stays. Past the room, cold chains spill.
pub(crate) fn settle<D: Dir + ?Sized>(
    d: &mut D,
    mut step: ClockStep,
    room: usize,
) -> (usize, usize, usize, Vec<usize>) {
    let room = if d.keeps_cold_chains() { room } else { 0 };
    d.head_mut().cold_room = room;
    d.drop_peeks();
    for i in std::mem::take(&mut step.free) {
        let name = d.part_name(i);
        let p = d.part(i);
        let (body, record) = (p.body as usize, p.loc);
        // Steps that can spill do not count: past the room they leave RAM
        // (below).
        let fits = d.chains().steps_ram() - d.chains().spillable() < room;
        let leave = d.chains_mut().update(name, |ch| {
            if ch.is_image_only() {
                Leave::Plain
            } else if !ch.confirmed {
                // Its chain's last record is not published yet: the
                // part's record lacks it (invariant 3 would not hold).
                Leave::Stay
            } else if fits
                && ch.image == record
                && ch.pending.len() * 2 < body
                && ch.spilled == 0
                && ch.changes.len() < MERGE_AT
            {
                ch.base = None;
                Leave::Cold
            } else {
                ch.want_image = true;
                Leave::WriteFirst
            }
        });
        match leave {
            Some(Leave::WriteFirst) => step.write_first(i),
            Some(Leave::Stay) => step.spare(),
            cold => {
                if cold == Some(Leave::Plain) {
                    d.chains_mut().remove(name);
                }
                d.evict(i);
                step.free.push(i);
            }
        }
    }
    // Past the room, cold chains' steps leave RAM for their records
    // (`chains`), down to half the room.
    // (Restatements are asked for by writes, which the journal sees.)
    let ram = d.chains().steps_ram();
    if room > 0 && ram >= room && d.chains().spill_due(room / 4, false) {
        d.chains_mut().spill(ram - room / 2, false);
    }
    step.into_counts()
}

/// How a read of some elements of a part on flash reads them
/// (`chunked::peek`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeekPlan {
    /// Load the part whole.
    Load,
    /// What RAM holds answers.
    Ready,
    /// Read this record of the part (`image`: its image) first.
    Read { loc: FlashLoc, image: bool },
}

/// What `settle` does with a clean part picked to leave RAM.
#[derive(PartialEq)]
enum Leave {
    /// Its record holds its state: it leaves, its chain (if any) ends.
    Plain,
    /// It leaves as a cold chain.
    Cold,
    /// Its image must be written first.
    WriteFirst,
    /// It stays in RAM until its chain's last record is published.
    Stay,
}

/// RAM a collection of `body` bytes may keep in its cold chains under a
/// RAM budget of `budget` bytes: a quarter of its size, and at most half
/// the budget (the rest holds parts, their filters and keys). Each change
/// a cold chain holds spares a part's image: about a part's size written
/// for ~150 bytes of RAM while its step is resident, ~16 once spilled.
pub fn cold_room(body: usize, budget: usize) -> usize {
    (body / 4).min(budget / 2)
}
