//! Spilling cold chains' steps to their records (`chains` module doc,
//! invariants 5 and 6): what may spill now, what must be restated first,
//! and the pass that does it.

use super::{PartChains, PartName};

impl PartChains {
    /// Of `steps_ram`, what spilling would free now, or once restated.
    pub fn spillable(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |c| c.sum.spillable + c.sum.restatable)
    }
    /// Whether chains wait for a record the journal is asked to write (a
    /// restatement, or an image).
    pub fn restating(&self) -> bool {
        self.0.as_ref().is_some_and(|c| c.sum.wanting > 0)
    }
    /// Whether `spill` has something to do now: steps to spill, or to
    /// restate while no restatement is in flight (a look costs a pass
    /// over the chains).
    pub fn spill_due(&self, want: usize, restate: bool) -> bool {
        self.0.as_ref().is_some_and(|c| {
            c.sum.spillable >= want || (restate && c.sum.restatable >= want && c.sum.wanting == 0)
        })
    }
    /// Spills cold chains (module doc) until `want` bytes are freed, those
    /// with the fewest change records first (the furthest from their
    /// merge, which reads back what spilled); past those, asks for
    /// restatements of chains whose steps are in several records (the
    /// most first: invariant 6), for as many bytes again, if none is in
    /// flight and `restate` (the journal will visit the collection).
    /// Returns the bytes freed and whether it asked.
    pub fn spill(&mut self, want: usize, restate: bool) -> (usize, bool) {
        let Some(c) = self.0.as_mut() else {
            return (0, false);
        };
        let mut cand: Vec<(usize, PartName)> = c
            .by_part
            .iter()
            .filter(|(_, ch)| ch.may_spill())
            .map(|(n, ch)| (ch.changes.len(), *n))
            .collect();
        cand.sort_unstable();
        let mut freed = 0;
        for (_, name) in cand {
            if freed >= want {
                break;
            }
            let before = c.sum.steps;
            c.update(name, |ch| {
                let seq = ch.last_seq;
                ch.spill_now(seq);
            });
            freed += before - c.sum.steps;
        }
        if !restate || freed >= want || c.sum.wanting > 0 || c.sum.restatable == 0 {
            return (freed, false);
        }
        let mut cand: Vec<(usize, PartName)> = c
            .by_part
            .iter()
            .filter(|(_, ch)| ch.may_restate())
            .map(|(n, ch)| (ch.changes.len() - ch.spilled, *n))
            .collect();
        cand.sort_unstable_by(|a, b| b.cmp(a));
        let mut asked = 0;
        for (_, name) in cand {
            if freed + asked >= want {
                break;
            }
            c.update(name, |ch| {
                ch.want_image = true;
                asked += ch.pending.capacity();
            });
        }
        (freed, asked > 0)
    }
}
