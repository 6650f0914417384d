//! `AlignedBuf`: an owned, page-aligned byte buffer for direct I/O.
//!
//! O_DIRECT requires the memory address, the file offset and the length of
//! every transfer to be multiples of the logical block size. We align all
//! three to [`PAGE`] (4 KiB), which satisfies every device we assume (see
//! docs/format.md, "Assumptions about the device").
//!
//! Invariants:
//! 1. `ptr` is aligned to `PAGE` and owns `cap` bytes (a multiple of `PAGE`).
//! 2. `len <= cap`; bytes `0..len` are initialised (the whole buffer is zeroed
//!    at allocation, so every byte is always initialised).
//! 3. The buffer is handed to the I/O engine by value and handed back on
//!    completion, so no other reference can exist during a transfer.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// The alignment of every flash transfer, in bytes.
pub const PAGE: usize = 4096;

/// Rounds `n` up to a multiple of [`PAGE`].
pub const fn align_up(n: usize) -> usize {
    (n + PAGE - 1) & !(PAGE - 1)
}

/// Rounds `n` down to a multiple of [`PAGE`].
pub const fn align_down(n: u64) -> u64 {
    n & !(PAGE as u64 - 1)
}

pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
}

// SAFETY: the buffer is uniquely owned heap memory, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only reads through `&self`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer with room for at least `cap` bytes and length `len`.
    pub fn zeroed(len: usize) -> AlignedBuf {
        let cap = align_up(len.max(1));
        let layout = Layout::from_size_align(cap, PAGE).expect("buffer layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len, cap }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Sets the length; `len` must not exceed the capacity.
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.cap, "AlignedBuf::set_len beyond capacity");
        self.len = len;
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: invariant 2.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: invariant 2, and we hold `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.cap, PAGE).expect("buffer layout");
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf(len={}, cap={})", self.len, self.cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_and_zeroed() {
        for len in [0, 1, 4095, 4096, 4097, 100_000] {
            let b = AlignedBuf::zeroed(len);
            assert_eq!(b.as_ptr() as usize % PAGE, 0);
            assert_eq!(b.capacity() % PAGE, 0);
            assert!(b.capacity() >= len);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn align_helpers() {
        assert_eq!(align_up(0), 0);
        assert_eq!(align_up(1), 4096);
        assert_eq!(align_up(4096), 4096);
        assert_eq!(align_down(4097), 4096);
    }
}
