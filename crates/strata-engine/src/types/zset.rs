//! A sorted set in RAM, in Redis's order (score, then member bytes; -0 and
//! 0 are the same score). A small one (up to 128 members and 8 KiB) is
//! packed in one buffer and scanned, as Redis's listpack; a larger one is a
//! member → score map beside an ordered tree, and stays so. OBJECT ENCODING
//! follows Redis's own thresholds (`big`), not the form used here.
//!
//! Ranks walk the ordered set (O(rank)). A big sorted set whose packed form
//! passes `chunked::CHUNKED_AT` is chunked (`chunked::ChunkedZSet`): its
//! members and its order are parts that may be on flash, and ranks are
//! prefix sums over part counts.

use super::changes::{Op, Recorder};
use super::chunked::ChunkedZSet;
use super::{packed_len, EncodingLimits};
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

/// A score with Redis's total order (no NaN is ever stored; -0 == 0).
#[derive(Clone, Copy, Debug)]
pub struct ScoreKey(pub f64);

impl PartialEq for ScoreKey {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for ScoreKey {}
impl PartialOrd for ScoreKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ScoreKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0
            .partial_cmp(&o.0)
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

type Members = HashMap<Box<[u8]>, f64, foldhash::fast::RandomState>;

/// A small sorted set packed in one buffer, as Redis's listpack: entries
/// `score (f64 LE) | length (u32 LE) | member`, in Redis's order. Lookups
/// scan it (it holds at most `PACKED_MAX_ENTRIES`, like a listpack).
#[derive(Clone, Debug, Default)]
struct Packed {
    buf: Vec<u8>,
    n: usize,
}

/// A packed set converts to the tree form past either limit (one way).
const PACKED_MAX_ENTRIES: usize = 128;
const PACKED_MAX_BYTES: usize = 8 << 10;

/// Bytes before a packed member.
const ENTRY_HEAD: usize = 12;

impl Packed {
    /// (offset, member, score) of each entry, in order.
    fn entries(&self) -> impl Iterator<Item = (usize, &[u8], f64)> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            let b = self.buf.get(at..at + ENTRY_HEAD)?;
            let score = f64::from_le_bytes(b[0..8].try_into().ok()?);
            let len = u32::from_le_bytes(b[8..12].try_into().ok()?) as usize;
            let off = at;
            let m = &self.buf[at + ENTRY_HEAD..at + ENTRY_HEAD + len];
            at += ENTRY_HEAD + len;
            Some((off, m, score))
        })
    }

    fn find(&self, m: &[u8]) -> Option<(usize, usize, f64)> {
        self.entries()
            .enumerate()
            .find(|(_, (_, e, _))| *e == m)
            .map(|(i, (off, _, s))| (i, off, s))
    }

    fn remove_at(&mut self, off: usize, len: usize) {
        self.buf.drain(off..off + ENTRY_HEAD + len);
        self.n -= 1;
    }

    /// Inserts a member that is not in the set at its place in the order.
    fn insert_new(&mut self, m: &[u8], score: f64) {
        let key = (ScoreKey(score), m);
        let at = self
            .entries()
            .find(|(_, e, s)| (ScoreKey(*s), *e) > key)
            .map_or(self.buf.len(), |(off, _, _)| off);
        let mut entry = Vec::with_capacity(ENTRY_HEAD + m.len());
        entry.extend_from_slice(&score.to_le_bytes());
        entry.extend_from_slice(&(m.len() as u32).to_le_bytes());
        entry.extend_from_slice(m);
        self.buf.splice(at..at, entry);
        self.n += 1;
    }
}

/// How a sorted set is held in RAM (invisible to callers; OBJECT ENCODING
/// follows `big`, Redis's rules, not this).
#[derive(Clone, Debug)]
enum Repr {
    Packed(Packed),
    /// Member → score, and (score, member) in order.
    Tree {
        scores: Members,
        order: BTreeSet<(ScoreKey, Box<[u8]>)>,
    },
    /// The parts, some of which may be on flash.
    Chunked(Box<ChunkedZSet>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Packed(Packed::default())
    }
}

/// A sorted set: packed, a tree, or chunked (`Repr`), one at a time.
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    repr: Repr,
    /// Bytes of the packed elements of a packed or tree set (a chunked
    /// one's are its parts').
    body: usize,
    /// Redis would report `skiplist` (one-way).
    pub big: bool,
    /// The journal's log of changes, while it records (`changes`).
    pub rec: Recorder,
}

impl PartialEq for ZSet {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big
            && self.len() == o.len()
            && self
                .iter()
                .all(|(m, s)| o.score(m).is_some_and(|t| t.to_bits() == s.to_bits()))
    }
}

/// Bytes one member takes when packed (score and length-prefixed member).
const fn member_len(n: usize) -> usize {
    8 + packed_len(n)
}

/// Iterates a sorted set's members: a collected run of a packed set, or a
/// walk of the tree.
pub struct Iter<'a>(IterInner<'a>);

enum IterInner<'a> {
    Packed(std::vec::IntoIter<(&'a [u8], f64)>),
    Tree(Box<dyn DoubleEndedIterator<Item = (&'a [u8], f64)> + 'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterInner::Packed(i) => i.next(),
            IterInner::Tree(i) => i.next(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterInner::Packed(i) => i.next_back(),
            IterInner::Tree(i) => i.next_back(),
        }
    }
}

/// Whether score `s` is below the lower bound `min`.
pub(crate) fn below_min(s: f64, min: Bound<f64>) -> bool {
    match min {
        Bound::Unbounded => false,
        Bound::Included(x) => s < x,
        Bound::Excluded(x) => s <= x,
    }
}

/// Whether score `s` is at most the upper bound `max`.
pub(crate) fn within_max(s: f64, max: Bound<f64>) -> bool {
    match max {
        Bound::Unbounded => true,
        Bound::Included(x) => s <= x,
        Bound::Excluded(x) => s < x,
    }
}

/// Whether `s` is inside the bounds.
fn in_bounds(s: f64, min: Bound<f64>, max: Bound<f64>) -> bool {
    !below_min(s, min) && within_max(s, max)
}

impl ZSet {
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Chunked(c) => c.len(),
            Repr::Packed(p) => p.n,
            Repr::Tree { scores, .. } => scores.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Packed bytes of the elements (each length-prefixed; a sorted set's
    /// with its score; a chunked sorted set's counted in both families).
    pub fn body_len(&self) -> usize {
        match &self.repr {
            Repr::Chunked(c) => c.body_len(),
            _ => self.body,
        }
    }
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Chunked(c) => c.score(m),
            Repr::Packed(p) => p.find(m).map(|(_, _, s)| s),
            Repr::Tree { scores, .. } => scores.get(m).copied(),
        }
    }

    /// Moves a packed set to the tree form.
    fn convert_to_tree(&mut self) {
        if let Repr::Packed(p) = &self.repr {
            let mut scores = Members::with_capacity_and_hasher(p.n, Default::default());
            let mut order = BTreeSet::new();
            for (_, m, s) in p.entries() {
                scores.insert(m.into(), s);
                order.insert((ScoreKey(s), m.into()));
            }
            self.repr = Repr::Tree { scores, order };
        }
    }

    /// Sets the score of `m`; returns the previous score (None if new).
    /// Caller guarantees `score` is not NaN.
    pub fn insert(&mut self, m: &[u8], score: f64) -> Option<f64> {
        debug_assert!(!score.is_nan());
        if let Repr::Chunked(c) = &mut self.repr {
            return c.insert(m, score);
        }
        self.rec.note(Op::ZSet(m, score));
        if let Repr::Packed(p) = &mut self.repr {
            match p.find(m) {
                Some((_, off, prev)) => {
                    if prev.to_bits() != score.to_bits() {
                        p.remove_at(off, m.len());
                        p.insert_new(m, score);
                    }
                    return Some(prev);
                }
                None if p.n < PACKED_MAX_ENTRIES
                    && p.buf.len() + ENTRY_HEAD + m.len() <= PACKED_MAX_BYTES =>
                {
                    p.insert_new(m, score);
                    self.body += member_len(m.len());
                    return None;
                }
                None => self.convert_to_tree(),
            }
        }
        let Repr::Tree { scores, order } = &mut self.repr else {
            unreachable!("a chunked or packed set returned above, or became a tree");
        };
        match scores.get_mut(m) {
            Some(old) => {
                let prev = *old;
                if prev.to_bits() != score.to_bits() {
                    *old = score;
                    let member: Box<[u8]> = m.into();
                    order.remove(&(ScoreKey(prev), member.clone()));
                    order.insert((ScoreKey(score), member));
                }
                Some(prev)
            }
            None => {
                self.body += member_len(m.len());
                scores.insert(m.into(), score);
                order.insert((ScoreKey(score), m.into()));
                None
            }
        }
    }
    pub(crate) fn insert_raw(&mut self, m: &[u8], score: f64) -> bool {
        self.insert(m, score).is_none()
    }
    /// Removes `m`; returns whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let found = match &mut self.repr {
            Repr::Chunked(c) => return c.remove(m),
            Repr::Packed(p) => match p.find(m) {
                Some((_, off, _)) => {
                    p.remove_at(off, m.len());
                    true
                }
                None => false,
            },
            Repr::Tree { scores, order } => match scores.remove(m) {
                Some(s) => {
                    order.remove(&(ScoreKey(s), Box::<[u8]>::from(m)));
                    true
                }
                None => false,
            },
        };
        if found {
            self.rec.note(Op::ZRem(m));
            self.body -= member_len(m.len());
        }
        found
    }
    /// 0-based rank of `m` in ascending order.
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Chunked(c) => c.rank(m),
            Repr::Packed(p) => p.find(m).map(|(i, _, _)| i),
            Repr::Tree { order, .. } => {
                let s = self.score(m)?;
                let key = (ScoreKey(s), Box::<[u8]>::from(m));
                Some(order.range(..&key).count())
            }
        }
    }
    /// Members in ascending order with their scores.
    pub fn iter(&self) -> Iter<'_> {
        Iter(match &self.repr {
            Repr::Chunked(c) => IterInner::Tree(Box::new(c.iter())),
            Repr::Packed(p) => IterInner::Packed(
                p.entries()
                    .map(|(_, m, s)| (m, s))
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            Repr::Tree { order, .. } => {
                IterInner::Tree(Box::new(order.iter().map(|(s, m)| (&**m, s.0))))
            }
        })
    }
    /// Members with a score in the given bounds, ascending (reverse the
    /// iterator for descending). Only the members in range are visited.
    pub fn range_by_score(&self, min: Bound<f64>, max: Bound<f64>) -> Iter<'_> {
        let order = match &self.repr {
            Repr::Chunked(c) => {
                let (a, b) = c.score_ranks(min, max);
                return Iter(IterInner::Tree(Box::new(c.range(a, b))));
            }
            Repr::Packed(p) => {
                return Iter(IterInner::Packed(
                    p.entries()
                        .filter(|(_, _, s)| in_bounds(*s, min, max))
                        .map(|(_, m, s)| (m, s))
                        .collect::<Vec<_>>()
                        .into_iter(),
                ))
            }
            Repr::Tree { order, .. } => order,
        };
        // (score, b"") sorts before every member of that score.
        let at = |s: f64| (ScoreKey(s), Box::<[u8]>::from(&b""[..]));
        let lo = match min {
            Bound::Unbounded => Some(Bound::Unbounded),
            Bound::Included(s) => Some(Bound::Included(at(s))),
            Bound::Excluded(s) if s == f64::INFINITY => None,
            Bound::Excluded(s) => Some(Bound::Included(at(next_up(s)))),
        };
        let hi = match max {
            Bound::Unbounded => Some(Bound::Unbounded),
            Bound::Included(s) if s == f64::INFINITY => Some(Bound::Unbounded),
            Bound::Included(s) => Some(Bound::Excluded(at(next_up(s)))),
            Bound::Excluded(s) if s == f64::NEG_INFINITY => None,
            Bound::Excluded(s) => Some(Bound::Excluded(at(s))),
        };
        let range = match (lo, hi) {
            (Some(lo), Some(hi)) if bounds_ordered(&lo, &hi) => Some(order.range((lo, hi))),
            _ => None,
        };
        Iter(IterInner::Tree(Box::new(
            range.into_iter().flatten().map(|(s, m)| (&**m, s.0)),
        )))
    }
    /// Removes and returns the lowest (or, with `max`, the highest) member.
    pub fn pop(&mut self, max: bool) -> Option<(Box<[u8]>, f64)> {
        if self.is_chunked() {
            // By rank: only the end's parts need be in RAM.
            let r = if max { self.len().checked_sub(1)? } else { 0 };
            let (m, s) = self.get_rank(r).map(|(m, s)| (Box::<[u8]>::from(m), s))?;
            self.remove(&m);
            return Some((m, s));
        }
        let (m, s) = {
            let mut it = self.iter();
            let (m, s) = if max { it.next_back() } else { it.next() }?;
            (Box::<[u8]>::from(m), s)
        };
        self.remove(&m);
        Some((m, s))
    }
    /// Members of ranks `[a, b)` ascending (reverse the iterator for
    /// descending); of a chunked set only their parts are read.
    pub fn rank_range(&self, a: usize, b: usize) -> Iter<'_> {
        if let Repr::Chunked(c) = &self.repr {
            return Iter(IterInner::Tree(Box::new(c.range(a, b))));
        }
        let n = b.saturating_sub(a);
        Iter(IterInner::Packed(
            self.iter().skip(a).take(n).collect::<Vec<_>>().into_iter(),
        ))
    }
    /// The member at rank `i` (ascending).
    pub fn get_rank(&self, i: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Chunked(c) => c.get_rank(i),
            Repr::Packed(p) => p.entries().nth(i).map(|(_, m, s)| (m, s)),
            Repr::Tree { order, .. } => order.iter().nth(i).map(|(s, m)| (&**m, s.0)),
        }
    }
    pub(crate) fn update_encoding(&mut self, lim: &EncodingLimits) {
        if !self.big && (self.len() > lim.zset_entries || self.has_member_over(lim.zset_value)) {
            self.big = true;
        }
    }
    fn has_member_over(&self, n: usize) -> bool {
        match &self.repr {
            Repr::Chunked(c) => c.iter().any(|(m, _)| m.len() > n),
            Repr::Packed(p) => p.entries().any(|(_, m, _)| m.len() > n),
            Repr::Tree { scores, .. } => scores.keys().any(|m| m.len() > n),
        }
    }
}

impl ZSet {
    /// Whether the sorted set is chunked.
    pub fn is_chunked(&self) -> bool {
        matches!(self.repr, Repr::Chunked(_))
    }
    /// The (member, score) pairs whose member hash (`parts::elem_hash`)
    /// lies in `[lo, hi]`: of a chunked set from the member parts holding
    /// that range (in RAM: `Engine::stream_windows` loads them), of
    /// another the whole set filtered.
    pub fn iter_hashes(&self, lo: u64, hi: u64) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
        let all = lo == 0 && hi == u64::MAX;
        let keep = move |e: &(&[u8], f64)| all || (lo..=hi).contains(&super::parts::elem_hash(e.0));
        match &self.repr {
            Repr::Chunked(c) => {
                let m = &c.members;
                let parts = m.part_of(lo)..m.part_of(hi) + 1;
                Box::new(
                    m.iter_parts(parts)
                        .filter_map(|(k, v)| Some((k, f64::from_le_bytes(v.try_into().ok()?))))
                        .filter(keep),
                )
            }
            _ => Box::new(self.iter().filter(keep)),
        }
    }
    /// The chunked form, if chunked.
    pub fn chunked(&self) -> Option<&ChunkedZSet> {
        match &self.repr {
            Repr::Chunked(c) => Some(c),
            _ => None,
        }
    }
    /// The chunked form, if chunked.
    pub(crate) fn chunked_mut(&mut self) -> Option<&mut ChunkedZSet> {
        match &mut self.repr {
            Repr::Chunked(c) => Some(c),
            _ => None,
        }
    }
    /// A chunked one of these parts.
    pub(crate) fn from_chunks(big: bool, c: ChunkedZSet) -> Self {
        ZSet {
            repr: Repr::Chunked(Box::new(c)),
            body: 0,
            big,
            rec: Recorder::default(),
        }
    }
    /// Makes the sorted set chunked, with collection id `cid`.
    pub(crate) fn make_chunked(&mut self, cid: u64) {
        if self.is_chunked() {
            return;
        }
        let c = ChunkedZSet::build(cid, self.iter());
        self.repr = Repr::Chunked(Box::new(c));
        self.body = 0;
    }
}

/// The smallest f64 above `x` (x finite or -inf).
fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// Whether a BTreeSet range from `lo` to `hi` is valid (it panics if the
/// start is after the end, or both are the same excluded point).
fn bounds_ordered<T: Ord>(lo: &Bound<T>, hi: &Bound<T>) -> bool {
    match (lo, hi) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b))
        | (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
    }
}
