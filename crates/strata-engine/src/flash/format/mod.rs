//! The on-flash record and segment-header layouts. docs/format.md is the
//! specification; this file implements it and must change with it (and bump
//! [`FORMAT_VERSION`]).
//!
//! Framing rules:
//! - A segment file starts with one [`PAGE`] holding the
//!   segment header; records follow from offset `PAGE`.
//! - Records are packed back to back, not aligned. A record never spans two
//!   segments.
//! - Where a write ended before a page boundary the rest of the page is zero
//!   padding; a scanner that reads a zero magic byte skips to the next page.
//! - A record never starts within the last `MIN_BYTES_IN_PAGE - 1` bytes of
//!   a page (the writer pads instead), so its magic byte is in the page where
//!   it starts and the padding rule above is unambiguous.
//! - Every record carries a CRC-32C over all of its bytes after the CRC
//!   field, so a torn or flipped record is detected and never served.

mod batch;
pub mod change;
mod chunked;
pub mod dbmap;
mod item;
pub mod part_change;

pub use batch::{BatchEnd, BATCH_END_LEN, BATCH_MEMBER};
pub use chunked::{
    chunk_prefix, chunk_value, decode_chunk, decode_chunk_prefix, decode_head, head_value,
    ChunkName, Head, CHUNK_PREFIX_LEN, HEAD_VALUE_LEN, LIST_HEAD_VALUE_LEN,
};
use item::META_PREFIX_LEN;
pub use item::{ItemMeta, META_EXPLICIT_CAS, META_STALE, META_TYPE_SHIFT};

use super::buf::PAGE;
use crate::base::ValueType;

/// Version of the segment and record layout written by this build
/// (version 2 added flush records and kind 4, version 3 kind 5, version 4
/// kind 6, version 5 kind 7, version 6 kinds 8 and 9, version 7 kinds 8
/// and 9 of lists, version 8 of sorted sets, version 9 `headed` chunks,
/// version 10 kind 10, version 11 streams: value type 5 in kind 6, version
/// 12 atomic batches: [`BATCH_MEMBER`] and kind 11, version 13 kinds 8 and
/// 9 of streams, version 14 kinds 8 and 9 of strings, version 15 a
/// stream's pending lists in chunks of their own, version 16 kind 12,
/// version 17 kind 13, version 18 kind 12 of streams: op 16, version 19
/// kind 12 of strings, version 20 a stream head's PEL parts as runs,
/// version 21 sparse chunk bodies).
pub const FORMAT_VERSION: u32 = 21;
/// The oldest segment layout this build reads (older versions lack only
/// record kinds; the records they have read the same).
pub const MIN_FORMAT_VERSION: u32 = 1;
/// The first 8 bytes of every segment file.
pub const SEGMENT_MAGIC: &[u8; 8] = b"STRATASG";
/// The byte at offset 4 of every record (distinguishes records from padding).
pub const RECORD_MAGIC: u8 = 0xA5;
/// Size of the fixed record header in bytes.
pub const RECORD_HEADER_LEN: usize = 32;
/// A record starts at least this many bytes before a page boundary (its
/// CRC and magic byte lie in one page); closer to the boundary is padding.
pub const MIN_BYTES_IN_PAGE: usize = 5;
/// Offset of the first record in a segment file.
pub const SEGMENT_DATA_START: u64 = PAGE as u64;

/// What a record says about its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// The key holds a string value (the record's value bytes).
    Value = 1,
    /// The key was deleted. Written by the journal; key only, and a 4-byte
    /// value: the *origin* segment id (see [`TOMBSTONE_ORIGIN_HERE`]).
    Tombstone = 2,
    /// Every key of database `db` (or of all databases when `db` is
    /// [`ALL_DATABASES`]) with a smaller sequence number is gone (FLUSHDB /
    /// FLUSHALL). Empty key; value as for a tombstone.
    Flush = 3,
    /// A string value with memcached client flags: the value field is the
    /// flags (u32 LE) followed by the value's bytes. Written only when the
    /// flags are not 0 (kind 1 means flags 0).
    ValueFlags = 4,
    /// A memcached item with an explicit CAS (meta `E`) or marked stale
    /// (meta `I`): the value field is the flags (u32 LE), a bits byte
    /// ([`META_STALE`], [`META_EXPLICIT_CAS`]), the CAS (u64 LE; 0 unless
    /// explicit), then the value's bytes.
    ValueMeta = 5,
    /// A collection (hash, list, set, sorted set) packed whole: the value
    /// field is the type byte (`types::ValueType`) followed by the packed
    /// encoding (`types` module doc, docs/format.md).
    Collection = 6,
    /// The mapping of logical databases (what SELECT names) to the database
    /// ids records carry, after a SWAPDB (`keyspace::swapdb`): empty key,
    /// `db` 0; the value is one u16 LE per logical database, its id. The
    /// one with the largest sequence number is in force.
    DbMap = 7,
    /// The head of a chunked collection (`types::chunked`): the key, its
    /// TTL, and a value of type byte, bits byte (`types::BIG_ENCODING`) and
    /// collection id (u64 LE). Written when the collection becomes
    /// chunked and when its TTL changes; the latest whole-key record of a
    /// key (value, tombstone, flush or head) decides what the key is.
    CollHead = 8,
    /// One chunk of a chunked collection: the key; a value of type byte,
    /// collection id (u64 LE), depth (u8), range start (u64 LE), then the
    /// chunk body (element count u32 LE and the elements, packed as in a
    /// packed collection). Applies only under a head with the same
    /// collection id; of two chunks covering one hash, the one with the
    /// larger sequence number holds it.
    Chunk = 9,
    /// The server's function libraries (`keyspace::functions`): empty
    /// key, `db` 0, the value an opaque blob (Redis's FUNCTION DUMP
    /// payload). The one with the largest sequence number is in force.
    Functions = 10,
    /// Ends an atomic batch (the records before it marked
    /// [`BATCH_MEMBER`]): empty key, `db` 0, the value [`BatchEnd`]'s
    /// encoding. Recovery applies a batch's members only when it reaches
    /// its commit end with all of them; members followed by anything else,
    /// or by nothing, count for nothing.
    BatchEnd = 11,
    /// What changed in a collection held as one packed record (kind 6),
    /// since the key's previous record (`types::changes`): the key, the
    /// TTL after the change, and a value of the base record's sequence
    /// number (u64 LE), the type byte, the bits byte after the change
    /// (`types::BIG_ENCODING`) and the operations ([`change`]). Recovery
    /// applies it to the state the record with sequence number `base`
    /// left; the record's own sequence number is the state it leaves.
    Change = 12,
    /// What changed in one part of a chunked collection since the part's
    /// previous record (format version 17): the key, and a value of the
    /// part's chunk prefix (as kind 9), the base record's sequence number
    /// (u64 LE) and byte spans of the chunk body ([`part_change`]). It
    /// counts as its part's record as a chunk does (under a head at least
    /// as new), applied to the body its base left.
    PartChange = 13,
}

impl RecordKind {
    /// Whether the record holds a key's value (kinds 1, 4 and 5).
    pub fn is_value(self) -> bool {
        matches!(
            self,
            RecordKind::Value
                | RecordKind::ValueFlags
                | RecordKind::ValueMeta
                | RecordKind::Collection
        )
    }
}

/// `db` of a [`RecordKind::Flush`] record that flushed every database.
pub const ALL_DATABASES: u16 = u16::MAX;

/// Origin value of a tombstone or flush record still in the segment it was
/// first written to. The collector replaces it with that segment's id when
/// it moves the record, so a moved record still knows which older segments
/// may hold the records it cancels.
pub const TOMBSTONE_ORIGIN_HERE: u32 = u32::MAX;

/// The value bytes of a tombstone or flush record.
pub fn origin_value(origin: u32) -> [u8; 4] {
    origin.to_le_bytes()
}

/// The origin segment a tombstone or flush record names (`here` if it was
/// never moved).
pub fn record_origin(value: &[u8], here: u32) -> u32 {
    match value.get(..4) {
        Some(b) => match le_u32(b) {
            TOMBSTONE_ORIGIN_HERE => here,
            o => o,
        },
        None => here,
    }
}

/// The decoded fixed header of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordKind,
    pub db: u16,
    pub key_len: u32,
    pub value_len: u32,
    /// Sequence number of the write that produced this value.
    pub seq: u64,
    /// Absolute expiry in Unix milliseconds; 0 = none.
    pub expire_at_ms: u64,
}

impl RecordHeader {
    /// The header of a value record of `key` in database `db`, written
    /// by the write with sequence number `seq` (`append_item` gives it the
    /// kind and length an item's metadata needs).
    pub fn value(db: u16, key: &[u8], value_len: usize, seq: u64, expire_at_ms: u64) -> Self {
        RecordHeader {
            kind: RecordKind::Value,
            db,
            key_len: key.len() as u32,
            value_len: value_len as u32,
            seq,
            expire_at_ms,
        }
    }

    /// Total encoded length of the record this header starts.
    pub fn record_len(&self) -> usize {
        RECORD_HEADER_LEN + self.key_len as usize + self.value_len as usize
    }
}

/// Why bytes on flash could not be decoded as a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Zero magic: the rest of this page is padding.
    Padding,
    /// Not enough bytes to hold the header or the declared body.
    Truncated,
    /// Unknown magic or kind byte.
    BadHeader,
    /// The CRC does not match the bytes.
    Checksum,
}

/// Length of the record that `encode_record` would write.
pub fn encoded_len(key: &[u8], value: &[u8]) -> usize {
    RECORD_HEADER_LEN + key.len() + value.len()
}

/// Encodes one record into `out`, which must be exactly `encoded_len` long.
pub fn encode_record(out: &mut [u8], h: &RecordHeader, key: &[u8], value: &[u8]) {
    encode_record_meta(out, h, key, None, value)
}

/// Encodes a record whose value field is `meta`'s prefix (if any; its
/// kind must be `h.kind`) followed by `value`. `out` is exactly the
/// record's length.
pub fn encode_record_meta(
    out: &mut [u8],
    h: &RecordHeader,
    key: &[u8],
    meta: Option<&ItemMeta>,
    value: &[u8],
) {
    encode_record_in(out, h, key, meta, value, false)
}

/// As `encode_record_meta`; `member` sets [`BATCH_MEMBER`].
pub fn encode_record_in(
    out: &mut [u8],
    h: &RecordHeader,
    key: &[u8],
    meta: Option<&ItemMeta>,
    value: &[u8],
    member: bool,
) {
    let prefix = meta.map_or(0, |m| m.prefix_len());
    debug_assert_eq!(
        out.len(),
        RECORD_HEADER_LEN + key.len() + prefix + value.len()
    );
    debug_assert_eq!(h.key_len as usize, key.len());
    debug_assert_eq!(h.value_len as usize, prefix + value.len());
    out[4] = RECORD_MAGIC;
    out[5] = h.kind as u8 | if member { BATCH_MEMBER } else { 0 };
    out[6..8].copy_from_slice(&h.db.to_le_bytes());
    out[8..12].copy_from_slice(&h.key_len.to_le_bytes());
    out[12..16].copy_from_slice(&h.value_len.to_le_bytes());
    out[16..24].copy_from_slice(&h.seq.to_le_bytes());
    out[24..32].copy_from_slice(&h.expire_at_ms.to_le_bytes());
    let k_end = RECORD_HEADER_LEN + key.len();
    out[RECORD_HEADER_LEN..k_end].copy_from_slice(key);
    if let Some(m) = meta {
        debug_assert_eq!(m.kind(), h.kind);
        m.encode_prefix(&mut out[k_end..k_end + prefix]);
    }
    out[k_end + prefix..].copy_from_slice(value);
    let crc = crc32c::crc32c(&out[4..]);
    out[0..4].copy_from_slice(&crc.to_le_bytes());
}

fn le_u16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}
fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Decodes only the header at the start of `buf` (no checksum check).
pub fn decode_header(buf: &[u8]) -> Result<RecordHeader, DecodeError> {
    if buf.len() < RECORD_HEADER_LEN {
        return if buf.len() > 4 && buf[4] == 0 {
            Err(DecodeError::Padding)
        } else {
            Err(DecodeError::Truncated)
        };
    }
    match buf[4] {
        0 => return Err(DecodeError::Padding),
        RECORD_MAGIC => {}
        _ => return Err(DecodeError::BadHeader),
    }
    let kind = match buf[5] & !BATCH_MEMBER {
        1 => RecordKind::Value,
        2 => RecordKind::Tombstone,
        3 => RecordKind::Flush,
        4 => RecordKind::ValueFlags,
        5 => RecordKind::ValueMeta,
        6 => RecordKind::Collection,
        7 => RecordKind::DbMap,
        8 => RecordKind::CollHead,
        9 => RecordKind::Chunk,
        10 => RecordKind::Functions,
        11 => RecordKind::BatchEnd,
        12 => RecordKind::Change,
        13 => RecordKind::PartChange,
        _ => return Err(DecodeError::BadHeader),
    };
    Ok(RecordHeader {
        kind,
        db: le_u16(&buf[6..8]),
        key_len: le_u32(&buf[8..12]),
        value_len: le_u32(&buf[12..16]),
        seq: le_u64(&buf[16..24]),
        expire_at_ms: le_u64(&buf[24..32]),
    })
}

/// A verified record borrowed from a read buffer.
#[derive(Debug)]
pub struct RecordRef<'a> {
    pub header: RecordHeader,
    pub key: &'a [u8],
    /// The value's bytes (for kinds 4 and 5, without the metadata before
    /// them).
    pub value: &'a [u8],
    /// Memcached item metadata (kinds 4 and 5; all zero otherwise).
    pub meta: ItemMeta,
    /// One of an atomic batch's records ([`BATCH_MEMBER`]).
    pub member: bool,
}

/// Decodes and verifies the record at the start of `buf`.
pub fn decode_record(buf: &[u8]) -> Result<RecordRef<'_>, DecodeError> {
    let header = decode_header(buf)?;
    let len = header.record_len();
    if buf.len() < len {
        return Err(DecodeError::Truncated);
    }
    let stored = le_u32(&buf[0..4]);
    if crc32c::crc32c(&buf[4..len]) != stored {
        return Err(DecodeError::Checksum);
    }
    let k_end = RECORD_HEADER_LEN + header.key_len as usize;
    let field = &buf[k_end..len];
    let (meta, prefix) = match header.kind {
        RecordKind::ValueFlags if field.len() >= 4 => (ItemMeta::flags(le_u32(field)), 4),
        RecordKind::ValueMeta if field.len() >= META_PREFIX_LEN => (
            ItemMeta::from_parts(le_u32(field), field[4], le_u64(&field[5..13])),
            META_PREFIX_LEN,
        ),
        RecordKind::Collection => match field.first().copied().and_then(ValueType::from_u8) {
            Some(t) if t != ValueType::String => (
                ItemMeta {
                    vtype: t,
                    // A collection entry's count word (`types::aux`).
                    client_flags: crate::types::aux_of_packed(&field[1..]),
                    ..ItemMeta::default()
                },
                1,
            ),
            _ => return Err(DecodeError::BadHeader),
        },
        RecordKind::ValueFlags | RecordKind::ValueMeta => return Err(DecodeError::BadHeader),
        _ => (ItemMeta::default(), 0),
    };
    Ok(RecordRef {
        header,
        key: &buf[RECORD_HEADER_LEN..k_end],
        value: &field[prefix..],
        meta,
        member: buf[5] & BATCH_MEMBER != 0,
    })
}

/// Writes the segment header into the first page of a new segment.
pub fn encode_segment_header(page: &mut [u8], segment_id: u32, created_ms: u64) {
    page[..PAGE].fill(0);
    page[0..8].copy_from_slice(SEGMENT_MAGIC);
    page[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    page[12..16].copy_from_slice(&segment_id.to_le_bytes());
    page[16..24].copy_from_slice(&created_ms.to_le_bytes());
    let crc = crc32c::crc32c(&page[0..24]);
    page[24..28].copy_from_slice(&crc.to_le_bytes());
}

/// The fields of a segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub version: u32,
    pub segment_id: u32,
    pub created_ms: u64,
}

/// Decodes and verifies a segment header.
pub fn decode_segment_header(page: &[u8]) -> Result<SegmentHeader, DecodeError> {
    if page.len() < 28 {
        return Err(DecodeError::Truncated);
    }
    if &page[0..8] != SEGMENT_MAGIC {
        return Err(DecodeError::BadHeader);
    }
    if crc32c::crc32c(&page[0..24]) != le_u32(&page[24..28]) {
        return Err(DecodeError::Checksum);
    }
    Ok(SegmentHeader {
        version: le_u32(&page[8..12]),
        segment_id: le_u32(&page[12..16]),
        created_ms: le_u64(&page[16..24]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &[u8], value: &[u8]) -> Vec<u8> {
        let h = RecordHeader {
            kind: RecordKind::Value,
            db: 3,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
            seq: 42,
            expire_at_ms: 1_700_000_000_000,
        };
        let mut out = vec![0; encoded_len(key, value)];
        encode_record(&mut out, &h, key, value);
        out
    }

    #[test]
    fn record_round_trips() {
        let buf = record(b"key\x00bin", b"value bytes \r\n");
        let r = decode_record(&buf).unwrap();
        assert_eq!(r.key, b"key\x00bin");
        assert_eq!(r.value, b"value bytes \r\n");
        assert_eq!(r.header.db, 3);
        assert_eq!(r.header.seq, 42);
        assert_eq!(r.header.expire_at_ms, 1_700_000_000_000);
    }

    #[test]
    fn item_metadata_round_trips_in_the_smallest_kind() {
        let metas = [
            (ItemMeta::default(), RecordKind::Value),
            (ItemMeta::flags(0xdead_beef), RecordKind::ValueFlags),
            (
                ItemMeta {
                    client_flags: 7,
                    explicit_cas: Some(u64::MAX),
                    stale: false,
                    ..ItemMeta::default()
                },
                RecordKind::ValueMeta,
            ),
            (
                ItemMeta {
                    client_flags: 0,
                    explicit_cas: None,
                    stale: true,
                    ..ItemMeta::default()
                },
                RecordKind::ValueMeta,
            ),
            (
                ItemMeta {
                    client_flags: 0,
                    explicit_cas: Some(0),
                    stale: true,
                    ..ItemMeta::default()
                },
                RecordKind::ValueMeta,
            ),
            // A collection: the type byte before the packed value.
            (
                ItemMeta {
                    vtype: ValueType::ZSet,
                    ..ItemMeta::default()
                },
                RecordKind::Collection,
            ),
        ];
        for (meta, kind) in metas {
            assert_eq!(meta.kind(), kind);
            let h = RecordHeader {
                kind,
                db: 0,
                key_len: 1,
                value_len: (meta.prefix_len() + 3) as u32,
                seq: 1,
                expire_at_ms: 0,
            };
            let mut out = vec![0; RECORD_HEADER_LEN + 1 + meta.prefix_len() + 3];
            encode_record_meta(&mut out, &h, b"k", Some(&meta), b"abc");
            let r = decode_record(&out).unwrap();
            assert_eq!((r.value, r.meta, r.header.kind), (&b"abc"[..], meta, kind));
        }
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let buf = record(b"k", b"some value that is long enough");
        for i in 0..buf.len() * 8 {
            let mut b = buf.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(decode_record(&b).is_err(), "flip of bit {i} not detected");
        }
    }

    #[test]
    fn zero_magic_is_padding_and_short_is_truncated() {
        assert_eq!(decode_record(&[0u8; 64]).unwrap_err(), DecodeError::Padding);
        let buf = record(b"k", b"v");
        assert_eq!(
            decode_record(&buf[..buf.len() - 1]).unwrap_err(),
            DecodeError::Truncated
        );
    }

    #[test]
    fn segment_header_round_trips_and_detects_corruption() {
        let mut page = vec![0u8; PAGE];
        encode_segment_header(&mut page, 7, 123);
        let h = decode_segment_header(&page).unwrap();
        assert_eq!(
            (h.version, h.segment_id, h.created_ms),
            (FORMAT_VERSION, 7, 123)
        );
        page[13] ^= 1;
        assert_eq!(
            decode_segment_header(&page).unwrap_err(),
            DecodeError::Checksum
        );
    }
}
