//! Adding an element to a part on flash without reading it (a *blind
//! add*: HSET of a new field, SADD of a new member). A part of a hash or
//! set that leaves RAM keeps a membership filter of its elements
//! ([`Filter`], a Bloom filter of ~10 bits per element: ~1% false
//! positives). When the filter rules an element out, the element is new,
//! and appending it to the part is two byte spans against the part's state
//! on flash (its count at the body's start, and the entry after its last):
//! one step of the part's cold chain (`parts::chains`), which the journal
//! logs as a part change record. The part is read only when its filter
//! cannot rule the element out, or its chain has no room left.
//!
//! Invariants:
//! 1. A part has a filter only while it is on flash, and only if its
//!    record is of its own range (`Part::own`: the body the spans apply
//!    to, as `Chunked::encode_part` wrote it).
//! 2. A filter holds every element of its part (it may answer "maybe" for
//!    others, never "no" for one of them): built from the elements when
//!    the part leaves RAM, added to by every blind add.
//! 3. A command adds at most one element blindly to a part (`Need::Adds`
//!    loads a part that would get two), so what its plan checked under the
//!    shard locks is what it finds when it runs under the same locks.
//! 4. Only while the journal logs (the steps are durable only as its
//!    records).

use super::{Chunked, Elem};
use crate::flash::format::part_change;
use crate::types::parts::chains::{tag, CHAIN_MAX};
use crate::types::parts::{elem_hash, PartChain};

/// A part's membership filter (module doc).
#[derive(Clone, Debug)]
pub struct Filter {
    bits: Box<[u64]>,
}

/// Filter bits per element the part holds when it is built; the filter
/// has room for half as many more added blindly.
const BITS_PER_ELEM: usize = 10;
/// Bits set per element.
const PROBES: u64 = 4;

impl Filter {
    /// A filter of `n` elements (their `elem_hash`es).
    pub fn build(hashes: impl Iterator<Item = u64>, n: usize) -> Filter {
        let bits = (n + n / 2 + 8) * BITS_PER_ELEM;
        let mut f = Filter {
            bits: vec![0u64; bits.div_ceil(64)].into_boxed_slice(),
        };
        for h in hashes {
            f.add(h);
        }
        f
    }
    pub fn add(&mut self, h: u64) {
        for b in probes(h, self.bits.len()) {
            self.bits[b / 64] |= 1 << (b % 64);
        }
    }
    /// False only if the element hashed `h` was never added.
    pub fn may_contain(&self, h: u64) -> bool {
        probes(h, self.bits.len()).all(|b| self.bits[b / 64] & (1 << (b % 64)) != 0)
    }
    /// RAM the filter takes.
    pub fn ram(&self) -> usize {
        std::mem::size_of::<Filter>() + self.bits.len() * 8
    }
}

/// The bits of the element hashed `h` in a filter of `words` words (double
/// hashing of a remix: a part's elements share their hashes' high bits).
fn probes(h: u64, words: usize) -> impl Iterator<Item = usize> {
    let g = mix(h);
    let m = words as u64 * 64;
    let (a, b) = (g & 0xFFFF_FFFF, (g >> 32) | 1);
    (0..PROBES).map(move |i| (a.wrapping_add(i.wrapping_mul(b)) % m) as usize)
}

/// splitmix64's finalizer.
fn mix(h: u64) -> u64 {
    let mut z = h ^ (h >> 30);
    z = z.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^= z >> 27;
    z = z.wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// RAM a blind add of an entry of `entry` packed bytes keeps in its step:
/// the step's length, two span headers, the count and the entry.
pub fn step_ram(entry: usize) -> usize {
    4 + 2 * part_change::SPAN_HEADER_LEN + 4 + entry
}

impl<V: Elem> Chunked<V> {
    /// Whether `elem` (hashed `h`) can be added to part `i` blindly now
    /// (module doc): the part is on flash at a record of its own range,
    /// its filter rules `elem` out, and its chain, if any, is a cold one
    /// on that record. Room is `adds_blind`'s.
    pub(super) fn blind_ok(&self, i: usize, h: u64) -> bool {
        let p = &self.parts[i];
        if !V::BLIND || p.is_resident() || !p.own() || p.loc().is_none() {
            return false;
        }
        if p.filter().is_none_or(|f| f.may_contain(h)) {
            return false;
        }
        self.head
            .chains
            .get((p.low(), p.depth()))
            .is_none_or(|ch| ch.base.is_none() && ch.image == p.loc())
    }

    /// Whether adding `elem` to part `i` needs no read (module doc),
    /// leaving the chain's steps in RAM and those spilled each under the
    /// part's size, a spilled chain under `CHAIN_MAX` records, and the
    /// collection's chains (besides steps that may spill) under its cold
    /// room (`parts::cold_room`, as the demoter last set it). Past those
    /// the part is read, and written whole when it leaves RAM (a merge:
    /// about a part's worth of changes per image).
    pub fn adds_blind(&self, i: usize, elem: &[u8], entry: usize) -> bool {
        if !self.blind_ok(i, elem_hash(elem)) {
            return false;
        }
        let p = &self.parts[i];
        let step = step_ram(entry);
        let chain = self.head.chains.get((p.low(), p.depth()));
        let pending = chain.map_or(0, |ch| ch.pending.len());
        // A spilled chain cannot be restated whole: its next record must
        // fit under `CHAIN_MAX` (chains invariant 5).
        let room_in_chain = chain.is_none_or(|ch| {
            let spilled: u64 = ch.spilled_locs().iter().map(|l| l.len as u64).sum();
            (ch.spilled == 0 || ch.changes.len() + 1 < CHAIN_MAX) && spilled < p.body() as u64
        });
        let chains = &self.head.chains;
        pending + step < p.body() as usize
            && room_in_chain
            && chains.steps_ram() - chains.spillable() + step < self.head.cold_room
    }

    /// Adds `elem`, hashed `h` (new: `blind_ok`), to cold part `i` as a
    /// step of its chain.
    pub(super) fn add_blind(&mut self, i: usize, h: u64, elem: &[u8], v: V) {
        let ver = self.next_ver();
        let p = &mut self.parts[i];
        let mut entry = Vec::with_capacity(elem.len() + 8 + v.packed());
        crate::types::put(&mut entry, elem);
        v.put(&mut entry);
        let mut spans = Vec::with_capacity(2 * part_change::SPAN_HEADER_LEN + 4 + entry.len());
        part_change::put_span(&mut spans, 0, 4, &(p.count() + 1).to_le_bytes());
        part_change::put_span(&mut spans, 4 + p.body() as usize, 0, &entry);
        if let Some(f) = p.filter_mut() {
            f.add(h);
        }
        let name = (p.low(), p.depth());
        let (loc, seq) = (p.loc(), p.seq());
        p.set_size(p.count() + 1, p.body() + entry.len() as u32);
        p.set_ver(ver);
        self.len += 1;
        self.body += entry.len();
        let chains = &mut self.head.chains;
        if !chains.has(name) {
            if let Some(loc) = loc {
                chains.insert(name, PartChain::cold(loc, seq));
            }
        }
        let half = p.body() as usize / 2;
        chains.update(name, |ch| {
            // Past half the part, the steps in RAM go to one record
            // (restated if in several), then leave RAM (chains invariant
            // 6): looked at before this step, not logged yet, joins them.
            if ch.pending.len() >= half {
                if ch.may_spill() {
                    let seq = ch.last_seq;
                    ch.spill_now(seq);
                } else if ch.may_restate() {
                    ch.want_image = true;
                }
            }
            part_change::push_step(&mut ch.pending, &spans);
            ch.tags.push(tag(h));
        });
        // Past the room, cold chains' steps leave RAM for their records
        // (`parts::chains`), down to half the room.
        let (ram, room) = (chains.steps_ram(), self.head.cold_room);
        if ram >= room && chains.spill_due(room / 4, true) {
            chains.spill(ram - room / 2, true);
        }
        self.blind_adds += 1;
        self.mark_dirty(i);
    }

    /// Drops part `i`'s filter (it is read back).
    pub(super) fn drop_filter(&mut self, i: usize) {
        if let Some(f) = self.parts[i].filter() {
            self.filter_ram -= f.ram();
            self.parts[i].set_data(None);
        }
    }

    /// Part `i`'s elements leave RAM: its filter of them stays if its
    /// record is of its own range (invariant 1).
    pub(super) fn leave_filter(&mut self, i: usize) {
        let p = &mut self.parts[i];
        let f = match p.elems() {
            Some(d) if V::BLIND && p.own() => Some(Filter::build(
                d.iter().map(|(k, _)| elem_hash(k)),
                p.count() as usize,
            )),
            _ => None,
        };
        self.filter_ram += f.as_ref().map_or(0, Filter::ram);
        p.set_data(f.map(super::Data::Cold));
    }

    /// Drops every part's filter (RAM is short); returns the bytes freed.
    pub fn shed_filters(&mut self) -> usize {
        let freed = self.filter_ram;
        if freed > 0 {
            for i in 0..self.parts.len() {
                self.drop_filter(i);
            }
        }
        freed
    }

    /// Blind adds since the last call (INFO `part_blind_adds`).
    pub fn take_blind_adds(&mut self) -> u64 {
        std::mem::take(&mut self.blind_adds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::FlashLoc;

    /// Parts leaving RAM keep filters of their own records' elements; a
    /// part's element is never taken for new; shedding frees them all.
    #[test]
    fn parts_on_flash_keep_filters_until_shed() {
        let elems = (0..3000u32).map(|i| {
            let k: Box<[u8]> = format!("f{i}").into_bytes().into();
            (k, Box::<[u8]>::from(&b"value-of-twenty-byte"[..]))
        });
        let mut c: Chunked<Box<[u8]>> = Chunked::build(1, elems);
        let n = c.parts.len();
        assert!(n > 2);
        for i in 0..n {
            let ver = c.parts[i].ver();
            let loc = FlashLoc {
                segment: 1,
                offset: i as u32 * 16384,
                len: 16384,
            };
            c.published(i, ver, loc, 10);
            c.evict(i);
        }
        assert!(c.filter_ram > 0 && c.parts.iter().all(|p| p.filter().is_some()));
        for i in 0..3000u32 {
            let h = elem_hash(format!("f{i}").as_bytes());
            assert!(!c.blind_ok(c.part_of(h), h), "f{i} taken for new");
        }
        let new = (0..1000u32)
            .filter(|i| {
                let h = elem_hash(format!("g{i}").as_bytes());
                c.blind_ok(c.part_of(h), h)
            })
            .count();
        assert!(new > 950, "{new} of 1,000 new elements ruled out");
        let held = c.filter_ram;
        assert_eq!(c.shed_filters(), held);
        assert_eq!(c.filter_ram, 0);
        let h = elem_hash(b"g1");
        assert!(!c.blind_ok(c.part_of(h), h));
    }

    #[test]
    fn a_filter_never_rules_out_what_it_holds_and_rules_out_most_else() {
        let f = Filter::build((0..1000u64).map(|i| elem_hash(&i.to_le_bytes())), 1000);
        assert!((0..1000u64).all(|i| f.may_contain(elem_hash(&i.to_le_bytes()))));
        let fp = (1000..101_000u64)
            .filter(|i| f.may_contain(elem_hash(&i.to_le_bytes())))
            .count();
        assert!(fp < 2_000, "{fp} false positives in 100,000");
    }
}
