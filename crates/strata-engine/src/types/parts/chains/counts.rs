//! The chains' counts (`Tally`): each chain's RAM and what of it may
//! spill, and their sums over a collection, kept by every change of a
//! chain (`Chains::update`, `update_all`) and checked against a recount.

use super::{Chains, PartChain, PartChains, PartName};

/// A chain's counts, or their sums over a collection's chains: bytes of
/// RAM in bases, in steps and bookkeeping, and of those the steps
/// spilling would free now (`PartChain::may_spill`) or once restated
/// (`may_restate`); chains wanting an image (or a restatement).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Tally {
    pub bases: usize,
    pub steps: usize,
    pub spillable: usize,
    pub restatable: usize,
    pub wanting: usize,
}

impl Tally {
    fn plus(&mut self, t: Tally) {
        self.bases += t.bases;
        self.steps += t.steps;
        self.spillable += t.spillable;
        self.restatable += t.restatable;
        self.wanting += t.wanting;
    }
    fn minus(&mut self, t: Tally) {
        self.bases -= t.bases;
        self.steps -= t.steps;
        self.spillable -= t.spillable;
        self.restatable -= t.restatable;
        self.wanting -= t.wanting;
    }
}

impl Chains {
    pub(super) fn add(&mut self, ch: &PartChain) {
        self.sum.plus(ch.tally());
    }
    pub(super) fn sub(&mut self, ch: &PartChain) {
        self.sum.minus(ch.tally());
    }
    /// Changes chain `name` by `f`, keeping the counts.
    pub(super) fn update<R>(
        &mut self,
        name: PartName,
        f: impl FnOnce(&mut PartChain) -> R,
    ) -> Option<R> {
        let ch = self.by_part.get_mut(&name)?;
        let before = ch.tally();
        let r = f(ch);
        let after = ch.tally();
        self.sum.minus(before);
        self.sum.plus(after);
        Some(r)
    }
    /// The counts of the chains, summed anew.
    fn recount(&self) -> Tally {
        let mut n = Tally::default();
        for ch in self.by_part.values() {
            n.plus(ch.tally());
        }
        n
    }
    /// Changes every chain by `f`, keeping the counts.
    pub(super) fn update_all(&mut self, mut f: impl FnMut(&mut PartChain)) {
        for ch in self.by_part.values_mut() {
            f(ch);
        }
        self.sum = self.recount();
    }
}

impl PartChains {
    /// Checks that the counts are those of the chains (tests).
    pub fn check(&self) -> Result<(), String> {
        let Some(c) = self.0.as_ref() else {
            return Ok(());
        };
        let n = c.recount();
        if n == c.sum {
            Ok(())
        } else {
            Err(format!("chain counts {:?}, recounted {n:?}", c.sum))
        }
    }
}
