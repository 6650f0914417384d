//! A chunked collection's *part chains*: for a part in RAM that the journal
//! logged, the records that hold its state on flash — its image (the
//! part's record, kind 9) and the part change records written since
//! (kind 13, `flash::format::part_change`) — and the body the last of them
//! left, which the next change is diffed against.
//!
//! The journal writes a part's change as a part change record while the
//! part's chain is confirmed (its last record is on the device and
//! published), shorter than `CHAIN_MAX` records, and the change and the
//! chain stay smaller than the part; else an image, which starts a new
//! chain. The chain also keeps the changes' steps since the image
//! (`pending`, a few bytes per change), so a chained part may leave RAM
//! with its changes still resident (a *cold chain*): reading it back is
//! one device read (the image) with the steps applied, and its later
//! changes coalesce with the earlier ones until an image is worth writing.
//! When a cold chain's steps in RAM pass half its part, or the
//! collection's chains hold more RAM than its share (`cold_room`), the
//! steps of cold chains whose records are all published leave RAM
//! (*spill*): first restated in one record if they are in several (one
//! per blind add), then dropped; the chain keeps where that record is (12
//! bytes) and the tags of the elements it added (2 bytes each,
//! `chunked::peek`). Reading a spilled chain's part back reads the image
//! and those records (`spilled` of them, one per spill) and applies their
//! steps, then the steps still in RAM; it leaves RAM again only as an
//! image (a merge). So a part on flash gathers about a part's worth of
//! changes (`chunked::blind`: its spilled records up to the part's size)
//! for one image write.
//! Demotion wants an image of a chained part whose steps grew past half of
//! it, or whose chain is long (`MERGE_AT`) or was read back spilled; a
//! checkpoint wants a record of every chained part's state after its
//! position: an image of a part in RAM, a record restating the steps of a
//! cold one since its spilled records (which the checkpoint names).
//!
//! Invariants:
//! 1. A chained part's state is its image's body with its changes applied
//!    in order; `base` is that body as of the chain's last record.
//! 2. The chain's records are live (the entry holds them, the collector
//!    moves them) until an image replacing them is published; records of
//!    a chain whose part is gone (split, merged, emptied) stay live in
//!    `orphans` until no part of the collection is changed, so a crash
//!    before the parts replacing it are written still finds them.
//! 3. A cold chain's part is its image with the steps of its first
//!    `spilled` change records applied, then `pending`; `base` is None
//!    while the part is cold and its body once it is read back.
//! 4. A clone never has chains (a copy is another key's value).
//! 5. Only a confirmed cold chain with every step in a record spills; a
//!    spilled chain's next record has room under `CHAIN_MAX` (blind adds
//!    stop one short of it), and a record restating it starts at its last
//!    spilled record (`spilled_seq`), not at the image.
//! 6. Steps spill from one record: a chain whose steps in RAM are in
//!    several (one per blind add) has them restated in one record first,
//!    so reading a spilled chain back reads a record per spill, not per
//!    change.
//!
//! Rooms: this file holds a chain and the collection's map of them;
//! `counts` their RAM counts and what may spill; `spill` the spilling.

use crate::base::FlashLoc;
use hashbrown::HashMap;

/// Most change records after an image: past them, the next record of the
/// part is an image (recovery applies at most this many to one part).
pub const CHAIN_MAX: usize = 64;
/// A part in RAM whose chain has this many change records leaves RAM as
/// an image (the write is due soon anyway, and now needs no read).
pub const MERGE_AT: usize = CHAIN_MAX * 3 / 4;

/// One part's chain (module doc).
#[derive(Debug)]
pub struct PartChain {
    /// The part's body as the chain's last record left it (invariant 1);
    /// None while the part is cold (invariant 3).
    pub base: Option<bytes::Bytes>,
    /// The steps of the changes since the image (`part_change::push_step`).
    pub pending: Vec<u8>,
    /// Bytes of `pending` in records already: the rest are the steps of
    /// blind adds the journal has not logged yet (`chunked::blind`).
    pub logged: usize,
    /// Sequence number of the chain's last record (taken at its capture).
    pub last_seq: u64,
    /// That record is on the device and published.
    pub confirmed: bool,
    /// The image, once published (the part's record), and its sequence
    /// number.
    pub image: Option<FlashLoc>,
    pub image_seq: u64,
    /// The change records since the image, in order.
    pub changes: Vec<FlashLoc>,
    /// Their bytes.
    pub bytes: u64,
    /// The records of the chain this one replaced: live until this
    /// chain's image is published.
    pub superseded: Vec<FlashLoc>,
    /// The part's next record must be an image (demotion or a checkpoint
    /// wants one).
    pub want_image: bool,
    /// The first `spilled` of `changes` hold steps `pending` does not
    /// (invariant 3), the last of them at sequence number `spilled_seq`.
    pub spilled: usize,
    pub spilled_seq: u64,
    /// The tags (`tag`) of the elements the steps since the image changed
    /// (blind adds, and changes of a hash's or set's part in RAM), in
    /// order; `opaque`: some step changed elements it does not name (a
    /// part of another kind, or past `TAGS_MAX`), so no read peeks
    /// (`chunked::peek`).
    pub tags: Vec<u16>,
    pub opaque: bool,
    /// For each of `changes`, how many of `tags` it and the records
    /// before it cover; a bit per record holding a step other than blind
    /// adds (a diff of the part in RAM). So a read finds the one record
    /// that added an element (`chunked::peek`).
    pub rec_ends: Vec<u16>,
    pub rec_diff: u64,
    /// What the record captured last covers, published with it.
    pub captured_tags: u16,
    pub captured_diff: bool,
    /// `pending` holds a diff step.
    pub pending_diff: bool,
}

/// An element's tag in its part's chain: 16 bits of its hash that the
/// part's range does not fix.
pub fn tag(h: u64) -> u16 {
    h as u16
}

impl PartChain {
    /// A chain started by an image captured at `seq` with this body.
    pub fn new(seq: u64, base: bytes::Bytes, superseded: Vec<FlashLoc>) -> PartChain {
        PartChain {
            base: Some(base),
            pending: Vec::new(),
            logged: 0,
            last_seq: seq,
            confirmed: false,
            image: None,
            image_seq: seq,
            changes: Vec::new(),
            bytes: 0,
            superseded,
            want_image: false,
            spilled: 0,
            spilled_seq: 0,
            tags: Vec::new(),
            opaque: false,
            rec_ends: Vec::new(),
            rec_diff: 0,
            captured_tags: 0,
            captured_diff: false,
            pending_diff: false,
        }
    }
    /// The chain of a part whose record at `loc` (sequence `seq`), with
    /// this body, was read and is about to change: confirmed, no changes.
    pub fn read(loc: FlashLoc, seq: u64, body: bytes::Bytes) -> PartChain {
        PartChain {
            confirmed: true,
            image: Some(loc),
            ..PartChain::new(seq, body, Vec::new())
        }
    }
    /// The chain of a part on flash whose record at `loc` (sequence `seq`)
    /// gets a blind add: a cold chain of no steps yet.
    pub fn cold(loc: FlashLoc, seq: u64) -> PartChain {
        PartChain {
            base: None,
            confirmed: true,
            image: Some(loc),
            ..PartChain::new(seq, bytes::Bytes::new(), Vec::new())
        }
    }
    /// Whether some steps are not in records yet (blind adds).
    pub fn unlogged(&self) -> bool {
        self.pending.len() > self.logged
    }
    /// What the chain adds to its collection's counts (`Chains`).
    fn tally(&self) -> Tally {
        let locs = (self.changes.capacity() + self.superseded.capacity())
            * std::mem::size_of::<FlashLoc>()
            + (self.tags.capacity() + self.rec_ends.capacity()) * 2;
        Tally {
            bases: self.base.as_ref().map_or(0, |b| b.len()),
            steps: self.pending.capacity() + CHAIN_OVERHEAD + locs,
            spillable: if self.may_spill() {
                self.pending.capacity()
            } else {
                0
            },
            restatable: if self.may_restate() {
                self.pending.capacity()
            } else {
                0
            },
            wanting: self.want_image as usize,
        }
    }
    /// A cold chain whose steps in RAM are all in records on the device.
    fn settled(&self) -> bool {
        self.base.is_none()
            && self.confirmed
            && !self.unlogged()
            && !self.pending.is_empty()
            && self.superseded.is_empty()
    }
    /// Whether the chain's steps may leave RAM (invariant 5): one record
    /// holds them all.
    pub fn may_spill(&self) -> bool {
        // Not while a record restating the steps is wanted: a checkpoint
        // named the spilled records before them, and the restatement must
        // start where those end (invariant 5).
        self.settled() && self.changes.len() == self.spilled + 1 && !self.want_image
    }
    /// Whether the chain's steps are in several records: one restating
    /// them comes first (invariant 6).
    pub fn may_restate(&self) -> bool {
        self.settled() && self.changes.len() > self.spilled + 1 && !self.want_image
    }
    /// Drops the steps from RAM (`may_spill`): its records hold them;
    /// `seq` is the last one's sequence number.
    pub fn spill_now(&mut self, seq: u64) {
        self.pending = Vec::new();
        self.pending_diff = false;
        self.logged = 0;
        self.spilled = self.changes.len();
        self.spilled_seq = seq;
    }
    /// A record joins the chain (published): it covers what its capture
    /// noted (`captured_tags`, `captured_diff`).
    pub fn push_record(&mut self, loc: FlashLoc) {
        let i = self.changes.len();
        self.changes.push(loc);
        self.rec_ends.push(self.captured_tags);
        if self.captured_diff && i < 64 {
            self.rec_diff |= 1 << i;
        }
    }
    /// The records from `keep` on are restated: they leave the chain
    /// (superseded until the restatement is published).
    pub fn restate_from(&mut self, keep: usize) {
        let restated: Vec<FlashLoc> = self.changes.drain(keep..).collect();
        self.superseded.extend(restated);
        self.rec_ends.truncate(keep);
        if keep < 64 {
            self.rec_diff &= (1u64 << keep) - 1;
        }
        self.bytes = self.changes.iter().map(|l| l.len as u64).sum();
    }
    /// Notes what the record being captured covers: the tags so far, and
    /// whether a diff step (`diff`).
    pub fn captured(&mut self, diff: bool) {
        self.captured_tags = u16::try_from(self.tags.len()).unwrap_or(u16::MAX);
        self.captured_diff = diff;
    }
    /// The change records whose steps are not in RAM (invariant 3).
    pub fn spilled_locs(&self) -> &[FlashLoc] {
        &self.changes[..self.spilled.min(self.changes.len())]
    }
    /// The part's state is its image alone (it may leave RAM).
    pub fn is_image_only(&self) -> bool {
        self.confirmed && self.changes.is_empty() && self.superseded.is_empty()
    }
    /// Every record the chain holds live besides the part's image.
    pub fn locs(&self) -> impl Iterator<Item = FlashLoc> + '_ {
        self.changes.iter().chain(&self.superseded).copied()
    }
    /// Takes every record the chain holds live besides the image.
    pub fn take_locs(&mut self) -> Vec<FlashLoc> {
        let mut v = std::mem::take(&mut self.changes);
        v.append(&mut self.superseded);
        self.bytes = 0;
        self.spilled = 0;
        self.rec_ends.clear();
        self.rec_diff = 0;
        v
    }
}

/// A part's name in its records: (`low`, `depth`) as in a chunk prefix.
pub type PartName = (u64, u8);

/// A directory's part chains and orphaned records (module doc).
#[derive(Debug, Default)]
pub struct PartChains(Option<Box<Chains>>);

#[derive(Debug, Default)]
struct Chains {
    by_part: HashMap<PartName, PartChain>,
    orphans: Vec<FlashLoc>,
    /// The chains' counts, summed.
    sum: Tally,
    /// The directory's part count at the last look for chains whose part
    /// is gone, and the captures since (`sweep_due`).
    swept_parts: usize,
    since_sweep: u32,
}

impl Clone for PartChains {
    /// Invariant 4.
    fn clone(&self) -> PartChains {
        PartChains(None)
    }
}

impl PartialEq for PartChains {
    /// Chains are bookkeeping of the log, not the collection's state.
    fn eq(&self, _: &PartChains) -> bool {
        true
    }
}
impl Eq for PartChains {}

/// RAM a chain costs besides its base (the map slot, the vectors).
const CHAIN_OVERHEAD: usize = std::mem::size_of::<(PartName, PartChain)>() + 16;

impl PartChains {
    pub fn is_empty(&self) -> bool {
        self.0
            .as_ref()
            .is_none_or(|c| c.by_part.is_empty() && c.orphans.is_empty())
    }
    pub fn get(&self, name: PartName) -> Option<&PartChain> {
        self.0.as_ref()?.by_part.get(&name)
    }
    /// Whether part `name` has a chain.
    pub fn has(&self, name: PartName) -> bool {
        self.get(name).is_some()
    }
    /// Whether part `name`'s state is in more records than its image.
    pub fn spread(&self, name: PartName) -> bool {
        self.get(name).is_some_and(|c| !c.is_image_only())
    }
    /// Whether a part whose record is `loc` has its state in more records
    /// than that one (a chain with changes on that image): O(chains).
    pub fn spread_on(&self, loc: FlashLoc) -> bool {
        self.0.as_ref().is_some_and(|c| {
            c.by_part
                .values()
                .any(|ch| ch.image == Some(loc) && !ch.is_image_only())
        })
    }
    /// Asks for an image of every part whose state is in more records than
    /// its image (a checkpoint names one record per part, and the spilled
    /// records of a cold one), or for a record restating what a cold
    /// chain holds besides its spilled records; whether any.
    pub fn want_images(&mut self) -> bool {
        let Some(c) = self.0.as_mut() else {
            return false;
        };
        let mut any = false;
        c.update_all(|ch| {
            // A cold chain all spilled is named by the checkpoint whole.
            let named = ch.base.is_none()
                && ch.confirmed
                && ch.pending.is_empty()
                && ch.superseded.is_empty()
                && ch.spilled == ch.changes.len();
            if !ch.is_image_only() && !named {
                ch.want_image = true;
                any = true;
            }
        });
        any
    }
    /// Puts `chain` for part `name`; returns the chain it replaces.
    pub fn insert(&mut self, name: PartName, chain: PartChain) -> Option<PartChain> {
        let c = self.0.get_or_insert_with(Box::default);
        c.add(&chain);
        let old = c.by_part.insert(name, chain);
        if let Some(o) = &old {
            c.sub(o);
        }
        old
    }
    /// Changes part `name`'s chain by `f`, keeping the RAM count (its base
    /// and steps).
    pub fn update<R>(&mut self, name: PartName, f: impl FnOnce(&mut PartChain) -> R) -> Option<R> {
        self.0.as_mut()?.update(name, f)
    }
    /// Removes part `name`'s chain.
    pub fn remove(&mut self, name: PartName) -> Option<PartChain> {
        let c = self.0.as_mut()?;
        let ch = c.by_part.remove(&name)?;
        c.sub(&ch);
        if c.by_part.is_empty() && c.orphans.is_empty() {
            self.0 = None;
        }
        Some(ch)
    }
    /// Removes part `name`'s chain, keeping its records live as orphans
    /// (invariant 2).
    pub fn orphan(&mut self, name: PartName) {
        if let Some(mut ch) = self.remove(name) {
            let locs = ch.take_locs();
            if !locs.is_empty() {
                self.0.get_or_insert_with(Box::default).orphans.extend(locs);
            }
        }
    }
    /// Whether to look for chains whose part is gone now: the directory
    /// has `parts` parts (a different number than at the last look), or
    /// `every` calls passed; and a look (a search per chain) costs at most
    /// a search per call in a run of calls (a collection of 200,000
    /// chains, whose parts split all along, looked on every call).
    pub fn sweep_due(&mut self, parts: usize, every: u32) -> bool {
        let Some(c) = self.0.as_mut() else {
            return false;
        };
        c.since_sweep += 1;
        let gap = u32::try_from(c.by_part.len()).unwrap_or(u32::MAX);
        if (c.swept_parts != parts || c.since_sweep >= every) && c.since_sweep >= gap {
            c.swept_parts = parts;
            c.since_sweep = 0;
            return true;
        }
        false
    }
    /// Drops every chain's base (RAM is short): each part's next change is
    /// logged as an image, and a part leaving RAM keeps its steps as
    /// before. Returns the bytes freed.
    pub fn shed_bases(&mut self) -> usize {
        let Some(c) = self.0.as_mut() else {
            return 0;
        };
        let freed = c.sum.bases;
        c.update_all(|ch| ch.base = None);
        freed
    }
    /// Takes the orphaned records (to release: no part is changed).
    pub fn take_orphans(&mut self) -> Vec<FlashLoc> {
        let Some(c) = self.0.as_mut() else {
            return Vec::new();
        };
        let v = std::mem::take(&mut c.orphans);
        if c.by_part.is_empty() {
            self.0 = None;
        }
        v
    }
    /// The parts with chains.
    pub fn names(&self) -> Vec<PartName> {
        self.0
            .as_ref()
            .map(|c| c.by_part.keys().copied().collect())
            .unwrap_or_default()
    }
    /// The parts whose next record must be an image.
    pub fn wanting_image(&self) -> Vec<PartName> {
        self.0
            .as_ref()
            .filter(|c| c.sum.wanting > 0)
            .map(|c| {
                c.by_part
                    .iter()
                    .filter(|(_, ch)| ch.want_image)
                    .map(|(n, _)| *n)
                    .collect()
            })
            .unwrap_or_default()
    }
    /// Every record the chains hold live besides the parts' images.
    pub fn locs(&self) -> Vec<FlashLoc> {
        let Some(c) = self.0.as_ref() else {
            return Vec::new();
        };
        let mut v: Vec<FlashLoc> = c.by_part.values().flat_map(|ch| ch.locs()).collect();
        v.extend(&c.orphans);
        v
    }
    /// Whether `loc`, a part change record of part `name`, is one of the
    /// records the chains hold live (its part's chain, or the orphans).
    pub fn holds(&self, name: PartName, loc: FlashLoc) -> bool {
        self.0.as_ref().is_some_and(|c| {
            c.orphans.contains(&loc)
                || c.by_part
                    .get(&name)
                    .is_some_and(|ch| ch.locs().any(|l| l == loc))
        })
    }
    /// Points the chains at `new` where they named `old`, a part change
    /// record of part `name`; how many references moved.
    pub fn moved(&mut self, name: PartName, old: FlashLoc, new: FlashLoc) -> usize {
        let Some(c) = self.0.as_mut() else {
            return 0;
        };
        let mut n = 0;
        let all = c
            .by_part
            .get_mut(&name)
            .into_iter()
            .flat_map(|ch| ch.changes.iter_mut().chain(ch.superseded.iter_mut()))
            .chain(c.orphans.iter_mut());
        for l in all {
            if *l == old {
                *l = new;
                n += 1;
            }
        }
        n
    }
    /// The collector moved part `name`'s image from `old` to `new` (the
    /// part's record, which the part counts).
    pub fn image_moved(&mut self, name: PartName, old: FlashLoc, new: FlashLoc) {
        if let Some(ch) = self.0.as_mut().and_then(|c| c.by_part.get_mut(&name)) {
            if ch.image == Some(old) {
                ch.image = Some(new);
            }
        }
    }
    /// RAM the chains hold (bases, steps and bookkeeping).
    pub fn ram(&self) -> usize {
        self.0.as_ref().map_or(0, |c| {
            c.sum.bases + c.sum.steps + std::mem::size_of::<Chains>()
        })
    }
    /// RAM the chains hold besides their bases: what stays in RAM when
    /// their parts are cold.
    pub fn steps_ram(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.sum.steps)
    }
}

mod counts;
use counts::Tally;
mod spill;
#[cfg(test)]
mod tests;
