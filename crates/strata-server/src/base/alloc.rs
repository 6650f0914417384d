//! `CountingAlloc`: jemalloc with a byte counter, so that `used_memory` in
//! INFO and the engine's RAM gauge are allocator-measured. jemalloc (its
//! settings in `main.rs`) gives freed pages back to the OS on a background
//! thread, so RSS follows `used_memory` down after values move to flash
//! (glibc's malloc kept them: RSS stayed 1.6-1.7x `used_memory`).
//!
//! The binary installs it with `#[global_allocator]`; a process that does
//! not (tests running the library in-process) reports 0 and the server then
//! falls back to the engine's own accounting.
//!
//! Each thread batches its changes in a thread-local counter and publishes
//! them to the shared one when they pass `FLUSH_BYTES`, so that allocations
//! on different cores do not all contend on one cache line. The published
//! figure is therefore exact up to `FLUSH_BYTES` per thread.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};
use tikv_jemallocator::Jemalloc;

pub struct CountingAlloc;

static ALLOCATED: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to jemalloc, only adding counter updates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { Jemalloc.alloc(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { Jemalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { Jemalloc.dealloc(ptr, layout) };
        note_free(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { Jemalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Unpublished bytes per thread at most.
const FLUSH_BYTES: isize = 64 * 1024;

thread_local! {
    static PENDING: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

fn publish(delta: isize) {
    let now = ALLOCATED.fetch_add(delta, Relaxed).wrapping_add(delta);
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
}

/// Adds `delta` bytes to this thread's pending count, publishing it when
/// large (or directly when thread-locals are gone, at thread exit).
fn note(delta: isize) {
    let batched = PENDING.try_with(|p| {
        let v = p.get() + delta;
        if v.abs() >= FLUSH_BYTES {
            p.set(0);
            publish(v);
        } else {
            p.set(v);
        }
    });
    if batched.is_err() {
        publish(delta);
    }
}

fn note_alloc(size: usize) {
    note(size as isize);
}

fn note_free(size: usize) {
    note(-(size as isize));
}

impl CountingAlloc {
    /// Called once by the binary that installs the allocator.
    pub fn mark_installed() {
        INSTALLED.store(true, Relaxed);
    }
}

/// Bytes currently allocated, if the counting allocator is installed.
pub fn allocated_bytes() -> Option<u64> {
    // Frees published before the matching allocations can make the shared
    // count dip below zero transiently: clamp.
    INSTALLED
        .load(Relaxed)
        .then(|| ALLOCATED.load(Relaxed).max(0) as u64)
}

/// The most bytes ever allocated at once, if the allocator is installed.
pub fn peak_bytes() -> Option<u64> {
    INSTALLED
        .load(Relaxed)
        .then(|| PEAK.load(Relaxed).max(0) as u64)
}

/// Resident set size of the process in bytes (from /proc/self/statm).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

/// What jemalloc reports of its own pages (Redis's `allocator_*` INFO
/// fields): bytes allocated, in active pages (allocated plus the free room
/// of partly used pages: fragmentation), and resident (active plus dirty
/// pages not yet given back, and jemalloc's metadata).
pub struct AllocatorStats {
    pub allocated: u64,
    pub active: u64,
    pub resident: u64,
}

/// jemalloc's statistics, refreshed now; None when the counting
/// allocator is not the process's (tests running the library in-process).
pub fn allocator_stats() -> Option<AllocatorStats> {
    use tikv_jemalloc_ctl::{epoch, stats};
    if !INSTALLED.load(Relaxed) {
        return None;
    }
    epoch::advance().ok()?;
    Some(AllocatorStats {
        allocated: stats::allocated::read().ok()? as u64,
        active: stats::active::read().ok()? as u64,
        resident: stats::resident::read().ok()? as u64,
    })
}

/// The allocator's name and version as INFO's `mem_allocator` gives it.
pub fn allocator_name() -> &'static str {
    if INSTALLED.load(Relaxed) {
        "jemalloc-5.3.0"
    } else {
        "libc"
    }
}

/// Active defragmentation's advice (`strata_engine::AllocatorHooks`), when
/// this allocator is the process's.
pub fn defrag_hooks() -> Option<strata_engine::AllocatorHooks> {
    INSTALLED
        .load(Relaxed)
        .then_some(strata_engine::AllocatorHooks {
            fragmented,
            should_move,
            moving,
        })
}

/// Free room in partly used pages worth a defragmentation pass: at least
/// 5% of what is allocated and 4 MiB (Redis starts at 10% and 100 MB; a
/// flash server's RAM budget is small, and its RSS the figure it is sized
/// by).
fn fragmented() -> bool {
    allocator_stats().is_some_and(|a| {
        let free = a.active.saturating_sub(a.allocated);
        free >= 4 << 20 && free * 20 >= a.allocated
    })
}

/// Around a slice of moves: the thread's allocator cache is off, so that
/// each copy goes where jemalloc puts a new allocation of its class (the
/// slab it fills next), not into a free slot the thread kept (turning it
/// off gives the kept slots back).
fn moving(start: bool) {
    // SAFETY: writes a bool, as `thread.tcache.enabled` takes.
    let _ = unsafe { tikv_jemalloc_ctl::raw::write(b"thread.tcache.enabled\0", !start) };
}

/// Whether the allocation holding `p` sits in a slab used less than its
/// size class's average or under half, and not in the slab new
/// allocations of the class go to (jemalloc's
/// `experimental.utilization.query`; Redis's active defrag tests the
/// average).
fn should_move(p: *const u8) -> bool {
    use std::sync::OnceLock;
    static MIB: OnceLock<Option<([usize; 4], usize)>> = OnceLock::new();
    let Some((mib, len)) = *MIB.get_or_init(|| {
        let mut mib = [0usize; 4];
        let mut len = mib.len();
        // SAFETY: a NUL-terminated name and a buffer of `len` entries.
        let r = unsafe {
            tikv_jemalloc_sys::mallctlnametomib(
                c"experimental.utilization.query".as_ptr(),
                mib.as_mut_ptr(),
                &mut len,
            )
        };
        (r == 0).then_some((mib, len))
    }) else {
        return false;
    };
    // slabcur, nfree, nregs, size, bin_nfree, bin_nregs.
    let mut out = [0usize; 6];
    let mut out_len = std::mem::size_of_val(&out);
    let mut ptr = p;
    // SAFETY: the query reads one pointer and writes six words, the sizes
    // given; a pointer jemalloc does not know gets zeros.
    let r = unsafe {
        tikv_jemalloc_sys::mallctlbymib(
            mib.as_ptr(),
            len,
            out.as_mut_ptr().cast(),
            &mut out_len,
            (&mut ptr as *mut *const u8).cast(),
            std::mem::size_of::<*const u8>(),
        )
    };
    let [slabcur, nfree, nregs, size, bin_nfree, bin_nregs] = out;
    if r != 0 || slabcur == 0 || nregs <= 1 || bin_nregs == 0 {
        // A large allocation, a full class, or no answer.
        return false;
    }
    let at = p as usize;
    if at >= slabcur && at < slabcur + size {
        return false;
    }
    // This slab's share in use below the class's (Redis's test), or under
    // half: when deletes leave every slab of a class about equally sparse,
    // none is below the average, and moving the values of the under-half
    // ones into the slab jemalloc fills next empties them.
    let used = nregs - nfree;
    used * 2 < nregs || used * bin_nregs < (bin_nregs - bin_nfree) * nregs
}
