//! The demoter's CLOCK hand over one directory's parts: what it sees of a
//! part (`PartClock`) and one pass (`clock_walk`), shared by every `Dir`.

/// What the demoter's hand sees of one part (`clock_walk`). Reading it
/// clears the part's used mark.
pub struct PartClock {
    pub resident: bool,
    /// Used since the hand last passed (the mark is cleared by reading).
    pub referenced: bool,
    pub dirty: bool,
    pub has_record: bool,
    pub body: usize,
}

/// One pass of the demoter's hand over `n` parts (`Dir::clock_pass`).
pub(crate) struct ClockStep {
    spared: usize,
    examined: usize,
    /// Clean parts with a record, to drop from RAM.
    pub free: Vec<usize>,
    /// Changed parts, to write.
    changed: Vec<usize>,
}

impl ClockStep {
    /// Part `i`, picked to leave RAM, must be written first.
    pub fn write_first(&mut self, i: usize) {
        self.changed.push(i);
    }
    /// Part `i`, picked to leave RAM, stays for now.
    pub fn spare(&mut self) {
        self.spared += 1;
    }
    /// (spared, freed, examined, changed), as `Dir::clock_pass` returns.
    pub fn into_counts(self) -> (usize, usize, usize, Vec<usize>) {
        (self.spared, self.free.len(), self.examined, self.changed)
    }
}

/// The hand's walk from `*hand` over `n` parts (`look(i)` reads part `i`
/// and clears its mark): a used part is spared, a changed one picked to
/// be written, a clean one with a record picked to leave RAM; it stops
/// once the picked parts hold `want` bytes, leaving `*hand` after the last
/// part it looked at, or after one turn, or once it has seen the
/// `resident` parts in RAM (a collection mostly on flash is not walked
/// whole on every pass: that was 36% of the server's CPU filling a hash
/// 17 times its RAM budget).
pub(crate) fn clock_walk(
    n: usize,
    resident: usize,
    hand: &mut usize,
    want: usize,
    mut look: impl FnMut(usize) -> PartClock,
) -> ClockStep {
    let mut st = ClockStep {
        spared: 0,
        examined: 0,
        free: Vec::new(),
        changed: Vec::new(),
    };
    let mut got = 0;
    for step in 0..n {
        let i = (*hand + step) % n;
        if st.examined >= resident {
            break;
        }
        let p = look(i);
        if !p.resident {
            continue;
        }
        st.examined += 1;
        if p.referenced {
            st.spared += 1;
        } else if p.dirty {
            got += p.body;
            st.changed.push(i);
        } else if p.has_record {
            got += p.body;
            st.free.push(i);
        }
        if got >= want {
            *hand = i + 1;
            break;
        }
    }
    st
}
