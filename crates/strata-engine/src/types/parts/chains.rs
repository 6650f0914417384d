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
//! Demotion wants an image of a chained part whose steps grew past half of
//! it, or past the collection's share (`cold_room`); a checkpoint wants a
//! record of every chained part's state after its position: an image of a
//! part in RAM, a record restating the steps of a cold one.
//!
//! Invariants:
//! 1. A chained part's state is its image's body with its changes applied
//!    in order; `base` is that body as of the chain's last record.
//! 2. The chain's records are live (the entry holds them, the collector
//!    moves them) until an image replacing them is published; records of
//!    a chain whose part is gone (split, merged, emptied) stay live in
//!    `orphans` until no part of the collection is changed, so a crash
//!    before the parts replacing it are written still finds them.
//! 3. A cold chain's part is its image with `pending` applied; `base` is
//!    None while the part is cold and its body once it is read back.
//! 4. A clone never has chains (a copy is another key's value).

use crate::base::FlashLoc;
use hashbrown::HashMap;

/// Most change records after an image: past them, the next record of the
/// part is an image (recovery applies at most this many to one part).
pub const CHAIN_MAX: usize = 32;

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
    /// RAM the chain holds: its base, and its steps and bookkeeping.
    fn ram(&self) -> (usize, usize) {
        (
            self.base.as_ref().map_or(0, |b| b.len()),
            self.pending.capacity() + CHAIN_OVERHEAD,
        )
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
    /// Bytes of RAM the chains hold: their bases, and their steps and
    /// bookkeeping.
    bases: usize,
    steps: usize,
    /// The directory's part count at the last look for chains whose part
    /// is gone, and the captures since (`sweep_due`).
    swept_parts: usize,
    since_sweep: u32,
}

impl Chains {
    fn add(&mut self, ch: &PartChain) {
        let (b, s) = ch.ram();
        self.bases += b;
        self.steps += s;
    }
    fn sub(&mut self, ch: &PartChain) {
        let (b, s) = ch.ram();
        self.bases -= b;
        self.steps -= s;
    }
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
    /// its image (a checkpoint names one record per part); whether any.
    pub fn want_images(&mut self) -> bool {
        let Some(c) = self.0.as_mut() else {
            return false;
        };
        let mut any = false;
        for ch in c.by_part.values_mut() {
            if !ch.is_image_only() {
                ch.want_image = true;
                any = true;
            }
        }
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
        let c = self.0.as_mut()?;
        let ch = c.by_part.get_mut(&name)?;
        let (b, st) = ch.ram();
        c.bases -= b;
        c.steps -= st;
        let r = f(ch);
        let (b, st) = ch.ram();
        c.bases += b;
        c.steps += st;
        Some(r)
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
    /// `every` calls passed.
    pub fn sweep_due(&mut self, parts: usize, every: u32) -> bool {
        let Some(c) = self.0.as_mut() else {
            return false;
        };
        c.since_sweep += 1;
        if c.swept_parts != parts || c.since_sweep >= every {
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
        let freed = c.bases;
        for ch in c.by_part.values_mut() {
            ch.base = None;
        }
        c.bases = 0;
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
        self.0
            .as_ref()
            .map_or(0, |c| c.bases + c.steps + std::mem::size_of::<Chains>())
    }
    /// RAM the chains hold besides their bases: what stays in RAM when
    /// their parts are cold.
    pub fn steps_ram(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.steps)
    }
}
