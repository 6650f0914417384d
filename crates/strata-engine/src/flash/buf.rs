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
//! 4. A recycled buffer (`for_read`) keeps the bytes of its last use: its
//!    contents are initialised but not zeroed; only reads, which overwrite
//!    them, take one.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::RefCell;
use std::ptr::NonNull;

/// Read buffers of one and of two pages a thread keeps for reuse, at most.
const POOL_MAX: usize = 32;

thread_local! {
    /// This thread's spare read buffers of one page ([0]) and two ([1]).
    static POOL: RefCell<[Vec<AlignedBuf>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

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

    /// A buffer for a read of `len` bytes: one this thread recycled when
    /// one fits (its bytes are those of its last read, invariant 4), else a
    /// new one. A cold GET's read then costs no allocation and no zeroing.
    pub fn for_read(len: usize) -> AlignedBuf {
        let pages = align_up(len.max(1)) / PAGE;
        if pages <= 2 {
            let reused = POOL
                .try_with(|p| p.borrow_mut()[pages - 1].pop())
                .ok()
                .flatten();
            if let Some(mut b) = reused {
                b.len = len;
                return b;
            }
        }
        AlignedBuf::zeroed(len)
    }

    /// Gives a read buffer back to this thread's pool (dropped when it is
    /// larger than two pages or the pool is full).
    pub fn recycle(self) {
        let pages = self.cap / PAGE;
        if pages == 0 || pages > 2 {
            return;
        }
        let _ = POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            let list = &mut p[pages - 1];
            if list.len() < POOL_MAX {
                list.push(self);
            }
        });
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
    fn read_buffers_are_reused_by_size() {
        let mut a = AlignedBuf::for_read(100);
        a[0] = 7;
        let addr = a.as_ptr();
        a.recycle();
        // A two-page read does not take the one-page buffer.
        let b = AlignedBuf::for_read(PAGE + 1);
        assert_ne!(b.as_ptr(), addr);
        assert_eq!(b.capacity(), 2 * PAGE);
        let c = AlignedBuf::for_read(PAGE);
        assert_eq!(c.as_ptr(), addr);
        assert_eq!((c.len(), c.capacity(), c[0]), (PAGE, PAGE, 7));
    }

    #[test]
    fn align_helpers() {
        assert_eq!(align_up(0), 0);
        assert_eq!(align_up(1), 4096);
        assert_eq!(align_up(4096), 4096);
        assert_eq!(align_down(4097), 4096);
    }
}
