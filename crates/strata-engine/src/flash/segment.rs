//! The segment table: every segment file of the flash log, with its live
//! bytes. Owned by [`crate::Engine`]; shared by request threads (which look
//! segments up to read, and decrement live bytes when a cold value dies) and
//! the background thread (which creates, seals and frees segments).
//!
//! Invariants:
//! 1. Segment ids increase monotonically and are never reused, so a
//!    `FlashLoc` can never name a different segment than the one it was
//!    created for.
//! 2. `live_bytes` is the sum of the record lengths that index entries point
//!    at (cold values and clean copies of hot values). It is changed only
//!    while the shard lock of the entry concerned is held.
//! 3. A segment is removed from the table only when its live bytes are zero
//!    (GC) or when every entry pointing at it was dropped (eviction). A read
//!    that looked the segment up before holds an `Arc` to the open file, so
//!    unlinking it never fails a read in flight.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// One segment file.
pub struct Segment {
    pub id: u32,
    pub file: Arc<File>,
    pub path: PathBuf,
    /// End of the data written so far (a multiple of the page size).
    pub written: AtomicU64,
    /// See invariant 2.
    pub live_bytes: AtomicU64,
    /// Set when the writer moved on to a newer segment.
    pub sealed: AtomicBool,
}

/// All segments of one flash directory.
pub struct SegmentTable {
    dir: PathBuf,
    direct: bool,
    segments: RwLock<HashMap<u32, Arc<Segment>>>,
    next_id: AtomicU32,
    /// Bytes of all segment files (what the log occupies on the device).
    allocated_bytes: AtomicU64,
}

impl SegmentTable {
    /// Opens a flash directory, removing segment files of an earlier run
    /// (restart recovery is a later layer; until then a restart starts empty).
    pub fn open(dir: &Path, direct: bool) -> io::Result<SegmentTable> {
        std::fs::create_dir_all(dir)?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("seg-") && name.ends_with(".log") {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(SegmentTable {
            dir: dir.to_path_buf(),
            direct,
            segments: RwLock::new(HashMap::new()),
            next_id: AtomicU32::new(1),
            allocated_bytes: AtomicU64::new(0),
        })
    }

    /// Whether segment files are opened with O_DIRECT.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// Creates a new, empty segment file.
    pub fn create(&self) -> io::Result<Arc<Segment>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("seg-{id:010}.log"));
        let file = open_segment_file(&path, self.direct)?;
        let seg = Arc::new(Segment {
            id,
            file: Arc::new(file),
            path,
            written: AtomicU64::new(0),
            live_bytes: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
        });
        self.segments.write().insert(id, seg.clone());
        Ok(seg)
    }

    pub fn get(&self, id: u32) -> Option<Arc<Segment>> {
        self.segments.read().get(&id).cloned()
    }

    /// Records that `bytes` more were written to a segment's file.
    pub fn add_written(&self, seg: &Segment, end: u64) {
        let prev = seg.written.swap(end, Ordering::AcqRel);
        if end > prev {
            self.allocated_bytes
                .fetch_add(end - prev, Ordering::Relaxed);
        }
    }

    /// Removes a segment and unlinks its file (invariant 3).
    pub fn free(&self, id: u32) {
        let seg = self.segments.write().remove(&id);
        if let Some(seg) = seg {
            self.allocated_bytes
                .fetch_sub(seg.written.load(Ordering::Acquire), Ordering::Relaxed);
            if let Err(e) = std::fs::remove_file(&seg.path) {
                tracing::warn!("could not remove {}: {e}", seg.path.display());
            }
        }
    }

    /// Bytes of all segment files.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes.load(Ordering::Relaxed)
    }

    /// A snapshot of the segments, oldest first.
    pub fn snapshot(&self) -> Vec<Arc<Segment>> {
        let mut v: Vec<_> = self.segments.read().values().cloned().collect();
        v.sort_by_key(|s| s.id);
        v
    }

    pub fn len(&self) -> usize {
        self.segments.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn open_segment_file(path: &Path, direct: bool) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create_new(true);
    #[cfg(target_os = "linux")]
    if direct {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_DIRECT);
    }
    opts.open(path)
}

/// Whether O_DIRECT works in `dir` (tmpfs, for one, refuses it).
pub fn direct_io_supported(dir: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let probe = dir.join(".direct-io-probe");
        let ok = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .and_then(|f| {
                use std::os::unix::fs::FileExt;
                let buf = super::buf::AlignedBuf::zeroed(super::buf::PAGE);
                f.write_all_at(&buf, 0)
            })
            .is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}
