//! `CompactKey`: a key stored inline when short (up to 16 bytes, the common
//! case) and on the heap otherwise, in 24 bytes either way. Short keys cost
//! no allocation (and no allocator header), which is most of a key's RAM.
//! The limit is the map's (`bucket.rs` takes it from here): a key owns
//! heap bytes here exactly when it does in its bucket, and moves there as
//! is.
//!
//! Hashing and equality are those of the byte slice, so maps keyed by
//! `CompactKey` are looked up with `&[u8]`.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Longest key stored inline.
pub const INLINE_MAX: usize = 16;

#[derive(Clone)]
pub enum CompactKey {
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    Heap(Box<[u8]>),
}

impl CompactKey {
    /// Heap bytes this key owns (0 when inline).
    pub fn heap_bytes(&self) -> usize {
        match self {
            CompactKey::Inline { .. } => 0,
            CompactKey::Heap(b) => b.len(),
        }
    }

    /// Heap bytes `key` owns once it is a key (in a map or not).
    pub fn heap_bytes_of(key: &[u8]) -> usize {
        if key.len() <= INLINE_MAX {
            0
        } else {
            key.len()
        }
    }
}

impl From<&[u8]> for CompactKey {
    fn from(k: &[u8]) -> Self {
        if k.len() <= INLINE_MAX {
            let mut bytes = [0u8; INLINE_MAX];
            bytes[..k.len()].copy_from_slice(k);
            CompactKey::Inline {
                len: k.len() as u8,
                bytes,
            }
        } else {
            CompactKey::Heap(k.into())
        }
    }
}

impl Deref for CompactKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            CompactKey::Inline { len, bytes } => &bytes[..*len as usize],
            CompactKey::Heap(b) => b,
        }
    }
}

impl Borrow<[u8]> for CompactKey {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl Hash for CompactKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        <[u8] as Hash>::hash(self, state)
    }
}

impl PartialEq for CompactKey {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for CompactKey {}

impl std::fmt::Debug for CompactKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn short_keys_are_inline_and_long_ones_on_the_heap() {
        assert_eq!(std::mem::size_of::<CompactKey>(), 24);
        let short = CompactKey::from(&b"key:000000000123"[..]);
        assert!(matches!(short, CompactKey::Inline { .. }));
        assert_eq!(&*short, b"key:000000000123");
        assert_eq!(CompactKey::heap_bytes_of(&short), 0);
        let long = CompactKey::from(&[7u8; 17][..]);
        assert!(matches!(long, CompactKey::Heap(_)));
        assert_eq!(long.heap_bytes(), 17);
        assert_eq!(CompactKey::heap_bytes_of(&long), 17);
        let empty = CompactKey::from(&b""[..]);
        assert_eq!(&*empty, b"");
    }

    #[test]
    fn hashes_like_the_byte_slice() {
        let s = foldhash::fast::FixedState::with_seed(1);
        for k in [&b""[..], b"a", b"0123456789012345", b"01234567890123456"] {
            assert_eq!(s.hash_one(CompactKey::from(k)), s.hash_one(k));
        }
    }
}
