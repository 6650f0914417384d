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
//! 4. `tomb_bytes` is never below the bytes of tombstone and flush records
//!    the segment holds (segments of an earlier run that recovery did not
//!    scan count 1: "maybe"), so a segment that may hold one is read by the
//!    collector before it is freed, never dropped blind.
//! 5. Lookups take no lock and write no shared line: the map is an
//!    immutable snapshot behind an `ArcSwap`, replaced whole (under
//!    `edit`) when a segment is created or freed, which is rare beside
//!    the lookups every overwrite and every journal record make.

use arc_swap::ArcSwap;
use parking_lot::Mutex;
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
    /// See invariant 4.
    pub tomb_bytes: AtomicU64,
    /// The first segment of the earliest atomic batch whose end is here
    /// and whose members began in an older segment (`u32::MAX`: none).
    /// While a segment from there up to this one exists, this one is not
    /// collected (docs/format.md, "Atomic batches").
    pub batch_from: AtomicU32,
    /// When the segment was created (`clock::now_secs`; for a segment an
    /// earlier run left, its file's last change): the last access of a
    /// packed entry whose record is here is taken to be no later.
    pub created_secs: u32,
}

impl Segment {
    /// Notes an atomic batch's end in this segment whose first member is
    /// in segment `first`.
    pub fn pin_batch(&self, first: u32) {
        if first < self.id {
            self.batch_from.fetch_min(first, Ordering::Relaxed);
        }
    }
}

/// All segments of one flash directory.
pub struct SegmentTable {
    dir: PathBuf,
    direct: bool,
    /// Every segment by id (invariant 5).
    segments: ArcSwap<HashMap<u32, Arc<Segment>>>,
    /// Held by whoever replaces `segments`.
    edit: Mutex<()>,
    next_id: AtomicU32,
    /// Bytes of all segment files (what the log occupies on the device).
    allocated_bytes: AtomicU64,
}

impl SegmentTable {
    /// Opens a flash directory and the segment files an earlier run left
    /// (sealed; recovery decides what they hold). A file whose header is
    /// unreadable is renamed `*.bad` and left alone.
    pub fn open(dir: &Path, direct: bool) -> io::Result<SegmentTable> {
        std::fs::create_dir_all(dir)?;
        let mut segments = HashMap::new();
        let mut max_id = 0u32;
        let mut allocated = 0u64;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Some(id) = name
                .strip_prefix("seg-")
                .and_then(|n| n.strip_suffix(".log"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            max_id = max_id.max(id);
            let path = entry.path();
            match open_existing(&path, id, direct) {
                Ok(seg) => {
                    allocated += seg.written.load(Ordering::Relaxed);
                    segments.insert(id, Arc::new(seg));
                }
                Err(e) => {
                    tracing::error!(
                        "segment file {} is unreadable ({e}); renamed to .bad and ignored",
                        path.display()
                    );
                    let _ = std::fs::rename(&path, path.with_extension("bad"));
                }
            }
        }
        Ok(SegmentTable {
            dir: dir.to_path_buf(),
            direct,
            segments: ArcSwap::from_pointee(segments),
            edit: Mutex::new(()),
            next_id: AtomicU32::new(max_id + 1),
            allocated_bytes: AtomicU64::new(allocated),
        })
    }

    /// The flash directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the directory's entries (created, renamed, removed files) durable.
    pub fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
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
            tomb_bytes: AtomicU64::new(0),
            batch_from: AtomicU32::new(u32::MAX),
            created_secs: crate::clock::now_secs(),
        });
        self.edit_map(|m| {
            m.insert(id, seg.clone());
        });
        Ok(seg)
    }

    /// The smallest segment id other than `id`.
    pub fn min_id_except(&self, id: u32) -> Option<u32> {
        self.segments
            .load()
            .keys()
            .copied()
            .filter(|&s| s != id)
            .min()
    }

    /// The id the next created segment will get.
    pub fn next_id(&self) -> u32 {
        self.next_id.load(Ordering::Relaxed)
    }

    pub fn get(&self, id: u32) -> Option<Arc<Segment>> {
        self.segments.load().get(&id).cloned()
    }

    /// Runs `f` on segment `id`, if it exists, without taking a reference
    /// to it (no shared count bumped: invariant 5).
    #[inline]
    pub fn with<R>(&self, id: u32, f: impl FnOnce(&Segment) -> R) -> Option<R> {
        self.segments.load().get(&id).map(|s| f(s))
    }

    /// Replaces the map by a copy `f` changed (invariant 5).
    fn edit_map<R>(&self, f: impl FnOnce(&mut HashMap<u32, Arc<Segment>>) -> R) -> R {
        let _edit = self.edit.lock();
        let mut m = HashMap::clone(&self.segments.load());
        let r = f(&mut m);
        self.segments.store(Arc::new(m));
        r
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
        let seg = self.edit_map(|m| m.remove(&id));
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
    /// Whether a segment holds the end of an atomic batch whose members
    /// are partly in older segments that still exist (it must stay).
    pub fn pinned(&self, seg: &Segment) -> bool {
        let from = seg.batch_from.load(Ordering::Relaxed);
        from < seg.id
            && self
                .segments
                .load()
                .keys()
                .any(|&s| s >= from && s < seg.id)
    }

    pub fn snapshot(&self) -> Vec<Arc<Segment>> {
        let mut v: Vec<_> = self.segments.load().values().cloned().collect();
        v.sort_by_key(|s| s.id);
        v
    }

    pub fn len(&self) -> usize {
        self.segments.load().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Opens a segment file of an earlier run and checks its header.
fn open_existing(path: &Path, id: u32, direct: bool) -> io::Result<Segment> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true);
    #[cfg(target_os = "linux")]
    if direct {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = opts.open(path)?;
    let len = file.metadata()?.len();
    let mut page = super::buf::AlignedBuf::zeroed(super::buf::PAGE);
    {
        use std::os::unix::fs::FileExt;
        let n = file.read_at(&mut page, 0)?;
        if n < super::buf::PAGE {
            return Err(io::Error::other("shorter than its header"));
        }
    }
    let h = super::format::decode_segment_header(&page)
        .map_err(|e| io::Error::other(format!("bad segment header: {e:?}")))?;
    if h.segment_id != id {
        return Err(io::Error::other(format!(
            "header names segment {}, not {id}",
            h.segment_id
        )));
    }
    if !(super::format::MIN_FORMAT_VERSION..=super::format::FORMAT_VERSION).contains(&h.version) {
        return Err(io::Error::other(format!(
            "format version {} is not readable by this build",
            h.version
        )));
    }
    let created_secs = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or_else(crate::clock::now_secs, |d| d.as_secs() as u32);
    Ok(Segment {
        id,
        file: Arc::new(file),
        path: path.to_path_buf(),
        written: AtomicU64::new(len),
        live_bytes: AtomicU64::new(0),
        sealed: AtomicBool::new(true),
        tomb_bytes: AtomicU64::new(1),
        batch_from: AtomicU32::new(u32::MAX),
        created_secs,
    })
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
