//! The list of a directory's changed parts (`Changes`), shared by the
//! hash/set parts (keyed by first hash) and a sorted set's order parts
//! (keyed by lower bound).

/// The changed parts of a directory (what the journal writes), named by a
/// key inside each one's range when it was marked (a part's first hash, an
/// order part's lower bound: ranges only split or widen, so the part
/// holding that key is the marked one or the neighbour it joined), with
/// entries of parts written since dropped now and then; and how many parts
/// are changed. So a big collection's changed parts are found without a
/// pass over all of them (`Chunked` invariant 7).
#[derive(Clone, Debug, PartialEq)]
pub struct Changes<K> {
    keys: Vec<K>,
    count: usize,
}

impl<K> Changes<K> {
    /// Starting from the keys of the parts changed now.
    pub fn of(keys: Vec<K>) -> Changes<K> {
        Changes {
            count: keys.len(),
            keys,
        }
    }

    /// A part was born changed (a split's half, a new part).
    pub fn born(&mut self, key: K) {
        self.count += 1;
        self.keys.push(key);
    }

    /// A part in the directory became changed; `all` lists every changed
    /// part's key (called when stale entries outweigh the live ones).
    pub fn marked(&mut self, key: K, all: impl FnOnce() -> Vec<K>) {
        self.born(key);
        if self.keys.len() > 2 * self.count + 64 {
            self.keys = all();
        }
    }

    /// A changed part was written, or left the directory.
    pub fn cleaned(&mut self) {
        self.count -= 1;
        if self.count == 0 {
            self.keys.clear();
        }
    }

    pub fn any(&self) -> bool {
        self.count > 0
    }

    /// The changed parts of `n`, in order: `part(key)` is the part holding
    /// a key, `changed(i)` whether part `i` changed (debug builds check the
    /// result against a pass over all of them).
    pub fn parts(
        &self,
        n: usize,
        part: impl Fn(&K) -> usize,
        changed: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let mut v: Vec<usize> = self.keys.iter().map(part).filter(|&i| changed(i)).collect();
        v.sort_unstable();
        v.dedup();
        debug_assert_eq!(
            v,
            (0..n).filter(|&i| changed(i)).collect::<Vec<_>>(),
            "a changed part is not listed"
        );
        v
    }
}
