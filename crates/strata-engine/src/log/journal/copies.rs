//! The copies of stored values that value notes carry (`ValueNote`), and
//! that the journal captures from an entry under its shard lock.
//!
//! A note that shared its value with the entry (a `Bytes` clone) made the
//! value's reference count shared: a 24-byte count allocated beside it,
//! which the write that later overwrites the value must decrement, long
//! after it left the cache (one miss per overwrite on the loop, 6% of its
//! samples under the default config's SET load). So a note carries a copy
//! instead, cut from a chunk this thread fills in order: the copy is a
//! `memcpy` of bytes just written (in cache), the chunk's one count stays
//! hot, and the entry's value is never shared.
//!
//! Invariants:
//! 1. A copy is a slice of one chunk; the chunk is freed when its last
//!    copy is (the copies keep it alive, not the thread).
//! 2. A value longer than `COPY_MAX` is shared, not copied: its copy would
//!    cost more than the miss it saves.

use bytes::{Bytes, BytesMut};
use std::cell::RefCell;

/// The largest value copied into a chunk (invariant 2).
pub(crate) const COPY_MAX: usize = 8 << 10;

/// Bytes of one chunk.
const CHUNK: usize = 256 << 10;

thread_local! {
    static CHUNK_NOW: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// The bytes of `value` for a note: a copy cut from this thread's chunk,
/// or the value itself when it is large (module doc).
pub(crate) fn for_note(value: &Bytes) -> Bytes {
    if value.len() > COPY_MAX {
        return value.clone();
    }
    CHUNK_NOW.with(|c| {
        let mut c = c.borrow_mut();
        if c.capacity() < value.len() {
            // A fresh chunk (the full one lives on in its copies; reserve
            // reuses it instead if none is left).
            c.reserve(CHUNK);
        }
        c.extend_from_slice(value);
        c.split().freeze()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_equal_and_independent_of_the_value() {
        let mut kept = Vec::new();
        for i in 0..2000usize {
            let v = Bytes::from(vec![(i % 251) as u8; i % 700]);
            let c = for_note(&v);
            assert_eq!(c, v);
            if !v.is_empty() {
                assert_ne!(c.as_ptr(), v.as_ptr(), "a small value is copied");
            }
            drop(v);
            kept.push((i, c));
        }
        // Chunks filled and left behind keep their copies intact.
        for (i, c) in &kept {
            assert_eq!(&c[..], &vec![(i % 251) as u8; i % 700][..]);
        }
        let big = Bytes::from(vec![7u8; COPY_MAX + 1]);
        assert_eq!(
            for_note(&big).as_ptr(),
            big.as_ptr(),
            "a large value is shared"
        );
    }
}
