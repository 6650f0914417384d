//! A sorted set in RAM: member → score, and (score, member) in Redis's
//! order (score, then member bytes; -0 and 0 are the same score).
//!
//! Ranks walk the ordered set (O(rank)); the chunked layout will give
//! ranks by prefix sums over chunk counts.

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

#[derive(Clone, Debug, Default)]
pub struct ZSet {
    scores: Members,
    order: BTreeSet<(ScoreKey, Box<[u8]>)>,
    body: usize,
    /// Redis would report `skiplist` (one-way).
    pub big: bool,
}

impl PartialEq for ZSet {
    fn eq(&self, o: &Self) -> bool {
        self.big == o.big
            && self.scores.len() == o.scores.len()
            && self
                .scores
                .iter()
                .all(|(m, s)| o.scores.get(m).is_some_and(|t| t.to_bits() == s.to_bits()))
    }
}

/// Bytes one member takes when packed (score and length-prefixed member).
const fn member_len(n: usize) -> usize {
    8 + packed_len(n)
}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    pub(crate) fn body_len(&self) -> usize {
        self.body
    }
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        self.scores.get(m).copied()
    }
    /// Sets the score of `m`; returns the previous score (None if new).
    /// Caller guarantees `score` is not NaN.
    pub fn insert(&mut self, m: &[u8], score: f64) -> Option<f64> {
        debug_assert!(!score.is_nan());
        match self.scores.get_mut(m) {
            Some(old) => {
                let prev = *old;
                if prev.to_bits() != score.to_bits() {
                    *old = score;
                    let member: Box<[u8]> = m.into();
                    self.order.remove(&(ScoreKey(prev), member.clone()));
                    self.order.insert((ScoreKey(score), member));
                }
                Some(prev)
            }
            None => {
                self.body += member_len(m.len());
                self.scores.insert(m.into(), score);
                self.order.insert((ScoreKey(score), m.into()));
                None
            }
        }
    }
    pub(crate) fn insert_raw(&mut self, m: &[u8], score: f64) -> bool {
        self.insert(m, score).is_none()
    }
    /// Removes `m`; returns whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self.scores.remove(m) {
            Some(s) => {
                self.order.remove(&(ScoreKey(s), Box::<[u8]>::from(m)));
                self.body -= member_len(m.len());
                true
            }
            None => false,
        }
    }
    /// 0-based rank of `m` in ascending order.
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        let s = self.score(m)?;
        let key = (ScoreKey(s), Box::<[u8]>::from(m));
        Some(self.order.range(..&key).count())
    }
    /// Members in ascending order with their scores.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.order.iter().map(|(s, m)| (&**m, s.0))
    }
    /// Members with a score in the given bounds, ascending (reverse the
    /// iterator for descending). Only the members in range are visited.
    pub fn range_by_score(
        &self,
        min: Bound<f64>,
        max: Bound<f64>,
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
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
            (Some(lo), Some(hi)) if bounds_ordered(&lo, &hi) => Some(self.order.range((lo, hi))),
            _ => None,
        };
        range.into_iter().flatten().map(|(s, m)| (&**m, s.0))
    }
    /// Removes and returns the lowest (or, with `max`, the highest) member.
    pub fn pop(&mut self, max: bool) -> Option<(Box<[u8]>, f64)> {
        let first = if max {
            self.order.iter().next_back()
        } else {
            self.order.iter().next()
        }?;
        let (s, m) = (first.0, first.1.clone());
        self.remove(&m);
        Some((m, s.0))
    }
    /// The member at rank `i` (ascending).
    pub fn get_rank(&self, i: usize) -> Option<(&[u8], f64)> {
        self.order.iter().nth(i).map(|(s, m)| (&**m, s.0))
    }
    pub(crate) fn update_encoding(&mut self, lim: &EncodingLimits) {
        if !self.big
            && (self.scores.len() > lim.zset_entries
                || self.scores.keys().any(|m| m.len() > lim.zset_value))
        {
            self.big = true;
        }
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
