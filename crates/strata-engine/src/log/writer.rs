//! `SegmentWriter`: appends records to the open segment in large sequential
//! writes. Owned by the background thread (demotion and GC relocation both
//! append through it).
//!
//! Records are assigned their location when appended, but a location must
//! not be published to the index before [`SegmentWriter::flush`] returned
//! `Ok`: until then the bytes may exist only in the write buffer.
//!
//! Invariants:
//! 1. Writes go to strictly increasing, page-aligned offsets of the open
//!    segment (the log is append-only; no page is written twice).
//! 2. A record never crosses a segment boundary; a record longer than the
//!    segment size gets a segment of its own.
//! 3. The write buffer is bounded by `chunk_size` (plus one oversized record).
//! 4. Every append goes through one writer (shared behind a mutex by the
//!    journal, demotion and the collector), so the log's order is the order
//!    in which states were captured: a later record of a key never holds an
//!    older state than an earlier one with the same sequence number.
//! 5. [`SegmentWriter::sync`] makes every byte written so far durable
//!    (data of each segment written since the last sync, and the directory
//!    entries of new segments).
//! 6. Between `begin_batch` and `end_batch` every record is an atomic
//!    batch's member (docs/format.md, "Atomic batches"); whoever opens a
//!    batch appends nothing else and ends it before releasing the writer.

use crate::base::FlashLoc;
use crate::flash::buf::{align_up, AlignedBuf, PAGE};
use crate::flash::format::{self, ItemMeta, RecordHeader, SEGMENT_DATA_START};
use crate::flash::io::{self, IoEngine};
use crate::flash::segment::{Segment, SegmentTable};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub struct SegmentWriter {
    table: Arc<SegmentTable>,
    io: Arc<dyn IoEngine>,
    segment_size: u64,
    chunk_size: usize,
    current: Option<Arc<Segment>>,
    /// File offset where `buf` will be written (page-aligned).
    buf_offset: u64,
    buf: AlignedBuf,
    /// Bytes of `buf` filled with records.
    fill: usize,
    /// Bytes written to flash by this writer (including padding).
    pub bytes_written: u64,
    /// Of `bytes_written`, what `flush_counted` has added to a counter.
    reported: u64,
    /// Segments written since the last `sync`.
    unsynced: Vec<Arc<Segment>>,
    /// A segment file was created since the last `sync`.
    dir_dirty: bool,
    /// An atomic batch is open (invariant 6): where its first member is
    /// and how many it has, once one was appended.
    batch: Option<(Option<FlashLoc>, u32)>,
    /// The last record appended (tests).
    #[cfg(test)]
    last: Option<FlashLoc>,
}

/// A point in the log: everything before it was written before everything
/// after it. Segments are ordered by id, records within one by offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogPosition {
    pub segment: u32,
    pub offset: u64,
}

/// Why an append could not be done.
#[derive(Debug)]
pub enum AppendError {
    /// Opening another segment would exceed the flash capacity.
    Full,
    Io(std::io::Error),
}

impl From<std::io::Error> for AppendError {
    fn from(e: std::io::Error) -> Self {
        AppendError::Io(e)
    }
}

impl SegmentWriter {
    pub fn new(
        table: Arc<SegmentTable>,
        io: Arc<dyn IoEngine>,
        segment_size: u64,
        chunk_size: usize,
    ) -> SegmentWriter {
        let chunk_size = align_up(chunk_size.max(PAGE));
        SegmentWriter {
            table,
            io,
            segment_size: segment_size.max(2 * PAGE as u64),
            chunk_size,
            current: None,
            buf_offset: 0,
            buf: AlignedBuf::zeroed(chunk_size),
            fill: 0,
            bytes_written: 0,
            reported: 0,
            unsynced: Vec::new(),
            dir_dirty: false,
            batch: None,
            #[cfg(test)]
            last: None,
        }
    }

    /// Opens an atomic batch: the records appended until `end_batch` are
    /// its members (invariant 6).
    pub fn begin_batch(&mut self) {
        debug_assert!(self.batch.is_none(), "atomic batches do not nest");
        self.batch = Some((None, 0));
    }

    /// Ends the open batch with a [`format::RecordKind::BatchEnd`] record
    /// saying whether it is whole (`commit`) or abandoned. Nothing is
    /// written when no member was appended. Not subject to the log's
    /// capacity (a few bytes that must follow the members).
    pub fn end_batch(&mut self, commit: bool) -> Result<(), AppendError> {
        let Some((Some(first), count)) = self.batch.take() else {
            return Ok(());
        };
        let end = format::BatchEnd {
            commit,
            first_segment: first.segment,
            first_offset: first.offset,
            count,
        };
        let value = end.encode();
        let h = RecordHeader {
            kind: format::RecordKind::BatchEnd,
            db: 0,
            key_len: 0,
            value_len: value.len() as u32,
            seq: 0,
            expire_at_ms: 0,
        };
        self.append(&h, &[], &value, u64::MAX)?;
        // Its members' older segments must outlive it (`Segment::pin_batch`).
        if let Some(seg) = &self.current {
            seg.pin_batch(first.segment);
        }
        Ok(())
    }

    /// Forgets the open batch without ending it (tests: a failed write).
    #[cfg(test)]
    pub fn abandon_for_test(&mut self) -> Option<FlashLoc> {
        self.batch.take().and_then(|(first, _)| first)
    }

    /// Where the last record appended went (tests).
    #[cfg(test)]
    pub fn last_for_test(&self) -> FlashLoc {
        self.last.expect("a record was appended")
    }

    /// Whether `bytes` of records, none longer than `largest`, fit in the
    /// log without passing `capacity` (a journal batch is written only if
    /// it fits whole). A segment's end may go unused for up to one record
    /// that did not fit there, and a page.
    pub fn room_for(&self, bytes: u64, largest: u64, capacity: u64) -> bool {
        if self.table.allocated_bytes() > capacity {
            return false;
        }
        let used = self.buf_offset + self.fill as u64;
        let here = match &self.current {
            Some(_) => self.segment_size.saturating_sub(used),
            None => 0,
        };
        if bytes <= here {
            return true;
        }
        // Each new segment holds at least its size less that waste, or one
        // record.
        let per = (self.segment_size - PAGE as u64)
            .saturating_sub(largest)
            .max(largest)
            .max(PAGE as u64);
        let need = bytes - here.saturating_sub(largest + PAGE as u64);
        self.table.allocated_bytes() + need.div_ceil(per) * self.segment_size <= capacity
    }

    /// Where the next flushed record will go. Call after `flush`.
    pub fn position(&self) -> LogPosition {
        match &self.current {
            Some(s) => LogPosition {
                segment: s.id,
                offset: self.buf_offset + self.fill as u64,
            },
            None => LogPosition {
                segment: self.table.next_id(),
                offset: SEGMENT_DATA_START,
            },
        }
    }

    /// Makes everything written so far durable (invariant 5).
    pub fn sync(&mut self) -> std::io::Result<()> {
        for seg in &self.unsynced {
            self.io.sync(&seg.file)?;
        }
        self.unsynced.clear();
        if self.dir_dirty {
            self.table.sync_dir()?;
            self.dir_dirty = false;
        }
        Ok(())
    }

    /// Whether anything was written since the last `sync`.
    pub fn needs_sync(&self) -> bool {
        !self.unsynced.is_empty() || self.dir_dirty
    }

    /// The id of the segment being written, if any.
    pub fn current_segment(&self) -> Option<u32> {
        self.current.as_ref().map(|s| s.id)
    }

    /// Appends one record and returns where it will live once flushed.
    /// `capacity` is the flash size the log may occupy.
    pub fn append(
        &mut self,
        header: &RecordHeader,
        key: &[u8],
        value: &[u8],
        capacity: u64,
    ) -> Result<FlashLoc, AppendError> {
        self.append_item(header, key, &ItemMeta::default(), value, capacity)
    }

    /// As `append`, for a value with memcached item metadata: a value
    /// record is written in the kind `meta` needs (1, 4 or 5; see
    /// [`ItemMeta::kind`]), with the metadata before the value's bytes.
    pub fn append_item(
        &mut self,
        header: &RecordHeader,
        key: &[u8],
        meta: &ItemMeta,
        value: &[u8],
        capacity: u64,
    ) -> Result<FlashLoc, AppendError> {
        let mut h = *header;
        let meta = if h.kind.is_value() {
            h.kind = meta.kind();
            h.value_len = (meta.prefix_len() + value.len()) as u32;
            Some(meta)
        } else {
            h.value_len = value.len() as u32;
            None
        };
        let header = &h;
        if self.table.allocated_bytes() > capacity {
            // The segment past `capacity` is the collector's (it may move
            // records one segment beyond, to free more than it writes): a
            // writer held to `capacity` does not fill it, even while it is
            // the open one. Demotion writing there used to leave the
            // collector's job half moved with no room to finish it, and
            // flash full of garbage it could not free.
            return Err(AppendError::Full);
        }
        let len = format::RECORD_HEADER_LEN + key.len() + h.value_len as usize;
        let seg_end = self.buf_offset + (self.fill + len) as u64;
        if self.current.is_none()
            || seg_end > self.segment_size.max(SEGMENT_DATA_START + len as u64)
        {
            self.roll(len, capacity)?;
        }
        // Framing rule: a record's first bytes (through its magic byte) never
        // straddle a page boundary, so "zero magic" always means padding.
        let in_page = (self.buf_offset as usize + self.fill) % PAGE;
        if in_page != 0 && PAGE - in_page < format::MIN_BYTES_IN_PAGE {
            let pad_end = self.fill + (PAGE - in_page);
            if pad_end <= self.chunk_size {
                self.buf[self.fill..pad_end].fill(0);
                self.fill = pad_end;
            }
        }
        if self.fill + len > self.chunk_size {
            self.flush()?;
        }
        let seg = self.current.as_ref().map(|s| s.id).unwrap_or(0);
        let offset = self.buf_offset + self.fill as u64;
        let member = self.batch.is_some();
        if len > self.chunk_size {
            // Invariant 3: an oversized record is written from its own buffer.
            let mut big = AlignedBuf::zeroed(align_up(len));
            format::encode_record_in(&mut big[..len], header, key, meta, value, member);
            self.write_out(big)?;
        } else {
            let end = self.fill + len;
            let out = &mut self.buf[self.fill..end];
            format::encode_record_in(out, header, key, meta, value, member);
            self.fill = end;
        }
        if !header.kind.is_value() {
            if let Some(s) = &self.current {
                s.tomb_bytes.fetch_add(len as u64, Ordering::Relaxed);
            }
        }
        let loc = FlashLoc {
            segment: seg,
            offset: offset as u32,
            len: len as u32,
        };
        if let Some((first, count)) = &mut self.batch {
            first.get_or_insert(loc);
            *count += 1;
        }
        #[cfg(test)]
        {
            self.last = Some(loc);
        }
        Ok(loc)
    }

    /// Writes the buffered records (padded to a page) to the device.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if self.fill == 0 {
            return Ok(());
        }
        let padded = align_up(self.fill);
        self.buf[self.fill..padded].fill(0);
        let mut buf = std::mem::replace(&mut self.buf, AlignedBuf::zeroed(0));
        buf.set_len(padded);
        let r = self.write_out(buf);
        self.fill = 0;
        r
    }

    /// As `flush`, then adds to `counter` (INFO's device bytes of the writer's user: `stats::DeviceWrites`) every
    /// byte this writer wrote since the last such call, padding and the
    /// writes of segment rolls included, whether or not the flush failed.
    pub fn flush_counted(&mut self, counter: &std::sync::atomic::AtomicU64) -> std::io::Result<()> {
        let r = self.flush();
        counter.fetch_add(
            self.bytes_written - self.reported,
            std::sync::atomic::Ordering::Relaxed,
        );
        self.reported = self.bytes_written;
        r
    }

    /// Writes `buf` at `buf_offset` and advances past it.
    fn write_out(&mut self, buf: AlignedBuf) -> std::io::Result<()> {
        let Some(seg) = self.current.clone() else {
            return Ok(());
        };
        let len = buf.len() as u64;
        let (mut back, r) = io::write_blocking(&*self.io, seg.file.clone(), self.buf_offset, buf);
        if back.capacity() >= self.chunk_size {
            back.set_len(self.chunk_size);
            self.buf = back;
        } else if self.buf.capacity() < self.chunk_size {
            self.buf = AlignedBuf::zeroed(self.chunk_size);
        }
        r?;
        self.buf_offset += len;
        self.bytes_written += len;
        self.table.add_written(&seg, self.buf_offset);
        if !self.unsynced.iter().any(|s| s.id == seg.id) {
            self.unsynced.push(seg);
        }
        Ok(())
    }

    /// Seals the open segment and opens a new one with room for `len` bytes.
    fn roll(&mut self, len: usize, capacity: u64) -> Result<(), AppendError> {
        self.flush()?;
        let need = self
            .segment_size
            .max(SEGMENT_DATA_START + align_up(len) as u64);
        if self.table.allocated_bytes() + need > capacity {
            return Err(AppendError::Full);
        }
        if let Some(old) = self.current.take() {
            old.sealed.store(true, Ordering::Release);
        }
        let seg = self.table.create()?;
        self.dir_dirty = true;
        let mut page = AlignedBuf::zeroed(PAGE);
        format::encode_segment_header(&mut page, seg.id, crate::clock::now_ms());
        self.current = Some(seg.clone());
        self.buf_offset = 0;
        if let Err(e) = self.write_out(page) {
            // A segment without its header would be unreadable after a
            // restart: drop it, so the retry rolls to a fresh one.
            self.current = None;
            self.table.free(seg.id);
            return Err(e.into());
        }
        Ok(())
    }

    /// Seals the open segment (used when the background thread goes idle is
    /// not needed; exposed for tests and eviction of the newest segment).
    pub fn seal(&mut self) -> std::io::Result<()> {
        self.flush()?;
        if let Some(old) = self.current.take() {
            old.sealed.store(true, Ordering::Release);
        }
        Ok(())
    }
}
