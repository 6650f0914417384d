//! Prefetching a batch of lookups. Finding a key costs three cache misses,
//! each waiting for the one before: the table's control bytes, the slot
//! they point to (a position), then the key's bucket. A pipeline's keys
//! are looked up in two passes before it runs ([`KeyMap::prefetch_probe`]
//! for every key, then [`KeyMap::prefetch_bucket`]), so the misses of the
//! batch overlap instead of following one another. Two more passes hint
//! the boxed entry and a hot string's bytes (its first KiB).
//!
//! The addresses come from hashbrown's layout: the slots lie below the
//! control bytes, slot `i` at `base - (i + 1) * w` (`w`: 3 or 4 bytes,
//! `table.rs`) and its control byte
//! at `base + i`, and a probe starts at `hash & (buckets - 1)`. `base` is
//! found from one full slot's address and kept until the table
//! reallocates. Were the layout to change, the hints would point
//! elsewhere: a prefetch only hints (it never faults, never changes what
//! a lookup finds), so lookups stay right; the test below would fail.

use super::{prefetch_lines, Bucket, Hot, KeyMap, Slot, Value};

impl KeyMap {
    /// Recomputes `table_base` if the table reallocated or widened
    /// (called after anything that may grow it).
    pub(super) fn note_table(&mut self) {
        let layout = self.table.layout();
        if layout == self.table_base.1 && self.table_base.0 != 0 {
            return;
        }
        self.table_base = (0, layout);
        let Some(b) = self.buckets.first() else {
            return;
        };
        let h = self.hash(b.key());
        let Some(idx) = self.table.bucket_of(h, 0) else {
            return;
        };
        if let Some(slot) = self.table.slot_addr(idx) {
            self.table_base.0 = slot + (idx + 1) * layout.1;
        }
    }

    /// First pass: hints the control bytes and the slot where `key`'s
    /// probe starts; returns the key's hash, for the second.
    pub fn prefetch_probe(&self, key: &[u8]) -> u64 {
        let h = self.hash(key);
        let (base, (n, w)) = self.table_base;
        if base != 0 {
            let pos = (h as usize) & (n - 1);
            hint(base + pos);
            hint(base.wrapping_sub((pos + 1) * w));
        }
        h
    }

    /// Second pass, once the first has had time: hints the bucket the
    /// first control byte matching `hash` (a key's, from the first pass)
    /// points to (the key's, but for a 1 in 128 collision); returns its
    /// position.
    pub fn prefetch_bucket(&self, hash: u64) -> Option<usize> {
        let p = self.table.first_match(hash)?;
        prefetch_lines(self.buckets.get(p)?, std::mem::size_of::<Bucket>());
        Some(p)
    }

    /// Fourth pass (the third hints the boxed entry, `KeyMap::prefetch`):
    /// hints the bytes of the hot string at `i` (its first `VALUE_LINES`
    /// lines).
    pub fn prefetch_value(&self, i: usize) {
        if let Some(e) = self.buckets.get(i).and_then(Bucket::full) {
            if let Slot::Hot(Hot {
                value: Value::Str(b),
                ..
            }) = &e.slot
            {
                prefetch_lines(&b[..], b.len().min(VALUE_LINES * 64));
            }
        }
    }
}

/// Cache lines of a hot string hinted. The reply's copy of a value is
/// where a GET waits for its lines: hinting 2 (trusting the hardware
/// prefetcher to follow the copy) left 11% of a RAM GET's samples in that
/// `memcpy`. A whole 512-byte value (9 lines at most) hinted: RAM GET at
/// 50 x P16 +19%, 0.87-0.90 against 1.05-1.09 us of server CPU each. A
/// cap: 4 KiB values hinted whole (64 lines, 32 keys a pass) did worse
/// than their first KiB (BENCHMARKS.md, twelfth session).
const VALUE_LINES: usize = 16;

/// Prefetches the cache line holding `addr` (any address: a hint).
fn hint(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults or reads memory into the program.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(test)]
mod tests {
    use super::super::tests::entry;
    use super::super::Key;
    use super::*;

    /// The layout the hints assume: every key's slot lies where `base`
    /// says, at the index its probe found it. Fails if hashbrown's layout
    /// changes (the hints would then be wasted, not wrong).
    #[test]
    fn slots_lie_where_the_hints_look() {
        let mut m = KeyMap::default();
        for i in 0..5_000u32 {
            let key = format!("key:{i}");
            m.insert(Key::from(key.as_bytes()), entry(i as u64));
            if i % 97 == 0 || i == 4_999 {
                let (base, layout) = m.table_base;
                assert_eq!(layout, m.table.layout());
                for j in (0..=i).step_by(13) {
                    let key = format!("key:{j}");
                    let h = m.hash(key.as_bytes());
                    let idx = m.table.bucket_of(h, j as usize).expect("in the table");
                    let slot = m.table.slot_addr(idx).unwrap();
                    let w = m.table.slot_bytes();
                    assert_eq!(slot, base - (idx + 1) * w, "key {j} of {i}");
                }
            }
        }
        let c = m.clone();
        assert_ne!(c.table_base.0, m.table_base.0);
        assert_eq!(c.table_base.1, m.table_base.1);
    }
}
