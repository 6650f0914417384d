//! `CountingAlloc`: the system allocator with a byte counter, so that
//! `used_memory` in INFO and the engine's RAM gauge are allocator-measured.
//!
//! The binary installs it with `#[global_allocator]`; a process that does
//! not (tests running the library in-process) reports 0 and the server then
//! falls back to the engine's own accounting.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

pub struct CountingAlloc;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to `System`, only adding counter updates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATED.fetch_sub(layout.size(), Relaxed);
            note_alloc(new_size);
        }
        p
    }
}

fn note_alloc(size: usize) {
    let now = ALLOCATED.fetch_add(size, Relaxed) + size;
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

impl CountingAlloc {
    /// Called once by the binary that installs the allocator.
    pub fn mark_installed() {
        INSTALLED.store(true, Relaxed);
    }
}

/// Bytes currently allocated, if the counting allocator is installed.
pub fn allocated_bytes() -> Option<u64> {
    INSTALLED
        .load(Relaxed)
        .then(|| ALLOCATED.load(Relaxed) as u64)
}

/// The most bytes ever allocated at once, if the allocator is installed.
pub fn peak_bytes() -> Option<u64> {
    INSTALLED.load(Relaxed).then(|| PEAK.load(Relaxed) as u64)
}

/// Resident set size of the process in bytes (from /proc/self/statm).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}
