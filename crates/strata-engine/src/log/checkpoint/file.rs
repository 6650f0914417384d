//! The checkpoint file's layout (docs/format.md, "Checkpoint file"):
//! header, entries (with the directories of chunked collections), section
//! table and trailer; encoding, decoding and loading with both CRCs
//! checked (invariant 2 of `checkpoint`).

use crate::base::FlashLoc;
use crate::flash::format::{ItemMeta, RecordKind, RECORD_HEADER_LEN};
use crate::log::writer::LogPosition;
use std::io::Read;
use std::path::{Path, PathBuf};

pub const CHECKPOINT_MAGIC: &[u8; 8] = b"STRATACP";
pub const CHECKPOINT_END_MAGIC: &[u8; 8] = b"STRATAEN";
/// Version 2 added the shard layout (seed, count and a section per shard),
/// so a restart loads each shard's section directly and in parallel;
/// version 3 the memcached client flags of each entry; version 4 the
/// stale mark and explicit CAS of memcached items that have them; version 5
/// the value type of collections (high nibble of the extension's bits byte);
/// version 6 the directories of chunked collections; version 7 those of
/// chunked lists (a part's `low` is its first position, depth 0); version
/// 8 those of chunked sorted sets (order parts, depth `ORDER_DEPTH`, whose
/// lower bounds follow the fixed parts); version 9 streams (value type 5);
/// version 10 chunked streams (parts of depth `STREAM_DEPTH`, whose
/// bounds follow the fixed parts as order parts' do); version 11 chunked
/// strings (value type 0, parts of depth `STR_DEPTH`); version 12 the
/// spilled chains of parts on flash (a part of unknown count whose
/// `body` is not 0 names that many part change records, their locations
/// after the lower bounds, in part order: `parts::chains`).
pub const CHECKPOINT_VERSION: u32 = 12;
/// The oldest checkpoint version this build loads (a version-3 entry is a
/// version-4 entry without the extension).
pub const MIN_CHECKPOINT_VERSION: u32 = 3;
pub const HEADER_LEN: usize = 64;
pub const TRAILER_LEN: usize = 24;
/// Fixed bytes of one entry before its key.
pub const ENTRY_FIXED_LEN: usize = 38;
/// Bit of an entry's `key_len` field: a bits byte and a CAS (u64) follow
/// the fixed fields (an item with a stale mark or an explicit CAS).
const KEY_LEN_META: u32 = 1 << 31;
/// Bytes of that extension.
const ENTRY_META_LEN: usize = 9;
/// Bit of an entry's `key_len` field: a chunked collection; its directory
/// follows the key (collection id, head seq, part count, parts).
const KEY_LEN_CHUNKED: u32 = 1 << 30;
/// Bytes of one part of a directory: depth, range start, record location,
/// record seq, element count, packed bytes.
const CP_PART_LEN: usize = 1 + 8 + 12 + 8 + 4 + 4;

pub fn path(dir: &Path) -> PathBuf {
    dir.join("checkpoint")
}

/// The fields of a checkpoint header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub databases: u32,
    pub created_ms: u64,
    pub position: LogPosition,
    pub next_seq: u64,
    /// Index shards of the run that wrote it; entries are grouped by shard.
    pub shards: u32,
    /// Seed of the hash that picks a key's shard.
    pub shard_seed: u64,
}

pub fn encode_header(h: &Header) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(CHECKPOINT_MAGIC);
    b[8..12].copy_from_slice(&h.version.to_le_bytes());
    b[12..16].copy_from_slice(&h.databases.to_le_bytes());
    b[16..24].copy_from_slice(&h.created_ms.to_le_bytes());
    b[24..28].copy_from_slice(&h.position.segment.to_le_bytes());
    b[28..32].copy_from_slice(&h.shards.to_le_bytes());
    b[32..40].copy_from_slice(&h.position.offset.to_le_bytes());
    b[40..48].copy_from_slice(&h.next_seq.to_le_bytes());
    b[48..56].copy_from_slice(&h.shard_seed.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..56]);
    b[56..60].copy_from_slice(&crc.to_le_bytes());
    b
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[i..i + 4]);
    u32::from_le_bytes(a)
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

pub fn decode_header(b: &[u8]) -> Result<Header, String> {
    if b.len() < HEADER_LEN || &b[0..8] != CHECKPOINT_MAGIC {
        return Err("not a checkpoint (bad magic)".into());
    }
    let version = u32_at(b, 8);
    if !(MIN_CHECKPOINT_VERSION..=CHECKPOINT_VERSION).contains(&version) {
        return Err(format!(
            "checkpoint version {version}, this build reads \
             {MIN_CHECKPOINT_VERSION} to {CHECKPOINT_VERSION}"
        ));
    }
    if crc32c::crc32c(&b[0..56]) != u32_at(b, 56) {
        return Err("header checksum mismatch".into());
    }
    Ok(Header {
        version,
        databases: u32_at(b, 12),
        created_ms: u64_at(b, 16),
        position: LogPosition {
            segment: u32_at(b, 24),
            offset: u64_at(b, 32),
        },
        next_seq: u64_at(b, 40),
        shards: u32_at(b, 28),
        shard_seed: u64_at(b, 48),
    })
}

/// The shard seed of the checkpoint in `dir`, if its header is valid: a
/// restart that hashes keys with it finds each shard's entries together.
pub fn peek_shard_seed(dir: &Path) -> Option<u64> {
    let mut f = std::fs::File::open(path(dir)).ok()?;
    let mut b = [0u8; HEADER_LEN];
    f.read_exact(&mut b).ok()?;
    decode_header(&b).ok().map(|h| h.shard_seed)
}

/// One entry of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpEntry<'a> {
    pub db: u16,
    pub seq: u64,
    pub expire_at_ms: u64,
    pub loc: FlashLoc,
    /// Memcached item metadata (the record's kind follows from it).
    pub meta: ItemMeta,
    pub key: &'a [u8],
    /// A chunked collection's directory (`loc` is its head record).
    pub chunks: Option<CpChunks<'a>>,
}

/// The directory of a chunked collection in a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpChunks<'a> {
    pub cid: u64,
    pub head_seq: u64,
    /// `CP_PART_LEN` bytes per part.
    parts: &'a [u8],
    /// The lower bound of each order part (depth `ORDER_DEPTH`) or stream
    /// part (`STREAM_DEPTH`: its bound), in order: u32 LE length and bytes.
    firsts: &'a [u8],
    /// The change records of the parts' spilled chains (`CpPart::chain`),
    /// 12 bytes each, in part order.
    chains: &'a [u8],
}

/// `CpPart::count` of a part whose record must be read to know it.
pub const UNKNOWN_COUNT: u32 = u32::MAX;

/// One part of a checkpointed directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpPart {
    pub depth: u8,
    pub low: u64,
    pub loc: FlashLoc,
    pub seq: u64,
    pub count: u32,
    pub body: u32,
}

impl CpPart {
    /// How many part change records of its spilled chain follow the
    /// directory's lower bounds (version 12; 0 before).
    pub fn chain(&self) -> usize {
        if self.count == UNKNOWN_COUNT {
            self.body as usize
        } else {
            0
        }
    }
}

impl CpChunks<'_> {
    /// The records of the parts' spilled chains, in part order.
    pub fn chain_locs(&self) -> impl Iterator<Item = FlashLoc> + '_ {
        self.chains.chunks_exact(12).map(|b| FlashLoc {
            segment: u32_at(b, 0),
            offset: u32_at(b, 4),
            len: u32_at(b, 8),
        })
    }

    /// The lower bounds of the order parts, in order.
    pub fn firsts(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut b = self.firsts;
        std::iter::from_fn(move || {
            let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
            let k = b.get(4..4 + n)?;
            b = &b[4 + n..];
            Some(k)
        })
    }

    pub fn parts(&self) -> impl Iterator<Item = CpPart> + '_ {
        self.parts.chunks_exact(CP_PART_LEN).map(|b| CpPart {
            depth: b[0],
            low: u64_at(b, 1),
            loc: FlashLoc {
                segment: u32_at(b, 9),
                offset: u32_at(b, 13),
                len: u32_at(b, 17),
            },
            seq: u64_at(b, 21),
            count: u32_at(b, 29),
            body: u32_at(b, 33),
        })
    }
}

/// Appends a directory (the part of a chunked entry after its key):
/// the fixed parts, then `firsts`, the lower bound of each order part.
pub fn encode_chunks(
    out: &mut Vec<u8>,
    cid: u64,
    head_seq: u64,
    parts: &[CpPart],
    firsts: &[&[u8]],
    chains: &[FlashLoc],
) {
    out.extend_from_slice(&cid.to_le_bytes());
    out.extend_from_slice(&head_seq.to_le_bytes());
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for p in parts {
        out.push(p.depth);
        out.extend_from_slice(&p.low.to_le_bytes());
        out.extend_from_slice(&p.loc.segment.to_le_bytes());
        out.extend_from_slice(&p.loc.offset.to_le_bytes());
        out.extend_from_slice(&p.loc.len.to_le_bytes());
        out.extend_from_slice(&p.seq.to_le_bytes());
        out.extend_from_slice(&p.count.to_le_bytes());
        out.extend_from_slice(&p.body.to_le_bytes());
    }
    for k in firsts {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
    }
    debug_assert_eq!(parts.iter().map(CpPart::chain).sum::<usize>(), chains.len());
    for l in chains {
        out.extend_from_slice(&l.segment.to_le_bytes());
        out.extend_from_slice(&l.offset.to_le_bytes());
        out.extend_from_slice(&l.len.to_le_bytes());
    }
}

/// Encodes an entry; a chunked one's directory follows (`encode_chunks`,
/// with `chunked`).
pub fn encode_entry_head(out: &mut Vec<u8>, e: &CpEntry<'_>, chunked: bool) {
    let extended = matches!(
        e.meta.kind(),
        RecordKind::ValueMeta | RecordKind::Collection
    );
    out.extend_from_slice(&e.db.to_le_bytes());
    let key_len = e.key.len() as u32
        | if extended { KEY_LEN_META } else { 0 }
        | if chunked { KEY_LEN_CHUNKED } else { 0 };
    out.extend_from_slice(&key_len.to_le_bytes());
    out.extend_from_slice(&e.seq.to_le_bytes());
    out.extend_from_slice(&e.expire_at_ms.to_le_bytes());
    out.extend_from_slice(&e.loc.segment.to_le_bytes());
    out.extend_from_slice(&e.loc.offset.to_le_bytes());
    out.extend_from_slice(&e.loc.len.to_le_bytes());
    out.extend_from_slice(&e.meta.client_flags.to_le_bytes());
    if extended {
        out.push(e.meta.bits());
        out.extend_from_slice(&e.meta.explicit_cas.unwrap_or(0).to_le_bytes());
    }
    out.extend_from_slice(e.key);
}

pub fn encode_entry(out: &mut Vec<u8>, e: &CpEntry<'_>) {
    encode_entry_head(out, e, e.chunks.is_some());
    if let Some(c) = &e.chunks {
        out.extend_from_slice(&c.cid.to_le_bytes());
        out.extend_from_slice(&c.head_seq.to_le_bytes());
        out.extend_from_slice(&((c.parts.len() / CP_PART_LEN) as u32).to_le_bytes());
        out.extend_from_slice(c.parts);
        out.extend_from_slice(c.firsts);
        out.extend_from_slice(c.chains);
    }
}

/// Decodes the entry at the start of `b`; returns it and its length.
pub fn decode_entry(b: &[u8]) -> Option<(CpEntry<'_>, usize)> {
    if b.len() < ENTRY_FIXED_LEN {
        return None;
    }
    let key_field = u32_at(b, 2);
    let key_len = (key_field & !(KEY_LEN_META | KEY_LEN_CHUNKED)) as usize;
    let client_flags = u32_at(b, 34);
    let (meta, key_start) = if key_field & KEY_LEN_META != 0 {
        let x = b.get(ENTRY_FIXED_LEN..ENTRY_FIXED_LEN + ENTRY_META_LEN)?;
        (
            ItemMeta::from_parts(client_flags, x[0], u64_at(x, 1)),
            ENTRY_FIXED_LEN + ENTRY_META_LEN,
        )
    } else {
        (ItemMeta::flags(client_flags), ENTRY_FIXED_LEN)
    };
    let key_end = key_start.checked_add(key_len)?;
    if b.len() < key_end {
        return None;
    }
    let (chunks, end) = if key_field & KEY_LEN_CHUNKED != 0 {
        let d = b.get(key_end..key_end + 20)?;
        let n = u32_at(d, 16) as usize;
        let parts_end = (key_end + 20).checked_add(n.checked_mul(CP_PART_LEN)?)?;
        let parts = b.get(key_end + 20..parts_end)?;
        let orders = parts
            .chunks_exact(CP_PART_LEN)
            .filter(|p| p[0] == crate::base::ORDER_DEPTH || p[0] == crate::base::STREAM_DEPTH)
            .count();
        let mut end = parts_end;
        for _ in 0..orders {
            let n = u32_at(b.get(end..end + 4)?, 0) as usize;
            end = end.checked_add(4 + n)?;
            if b.len() < end {
                return None;
            }
        }
        let chained: usize = parts
            .chunks_exact(CP_PART_LEN)
            .filter(|p| u32_at(p, 29) == UNKNOWN_COUNT)
            .map(|p| u32_at(p, 33) as usize)
            .sum();
        let chains_end = end.checked_add(chained.checked_mul(12)?)?;
        let chains = b.get(end..chains_end)?;
        (
            Some(CpChunks {
                cid: u64_at(d, 0),
                head_seq: u64_at(d, 8),
                parts,
                firsts: &b[parts_end..end],
                chains,
            }),
            chains_end,
        )
    } else {
        (None, key_end)
    };
    Some((
        CpEntry {
            db: u16::from_le_bytes([b[0], b[1]]),
            seq: u64_at(b, 6),
            expire_at_ms: u64_at(b, 14),
            loc: FlashLoc {
                segment: u32_at(b, 22),
                offset: u32_at(b, 26),
                len: u32_at(b, 30),
            },
            meta,
            key: &b[key_start..key_end],
            chunks,
        },
        end,
    ))
}

pub fn encode_trailer(entries: u64, crc: u32) -> [u8; TRAILER_LEN] {
    let mut b = [0u8; TRAILER_LEN];
    b[0..8].copy_from_slice(CHECKPOINT_END_MAGIC);
    b[8..16].copy_from_slice(&entries.to_le_bytes());
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    let c = crc32c::crc32c(&b[0..20]);
    b[20..24].copy_from_slice(&c.to_le_bytes());
    b
}

/// (entries, crc of the entry bytes)
pub fn decode_trailer(b: &[u8]) -> Result<(u64, u32), String> {
    if b.len() != TRAILER_LEN || &b[0..8] != CHECKPOINT_END_MAGIC {
        return Err("bad trailer (truncated checkpoint?)".into());
    }
    if crc32c::crc32c(&b[0..20]) != u32_at(b, 20) {
        return Err("trailer checksum mismatch".into());
    }
    Ok((u64_at(b, 8), u32_at(b, 16)))
}

/// A checkpoint read into memory and verified (invariant 2).
pub struct Loaded {
    pub header: Header,
    /// The entry bytes (between header and section table).
    pub body: Vec<u8>,
    pub entries: u64,
    /// Per shard: (byte offset in `body`, bytes, entries).
    pub sections: Vec<(usize, usize, u64)>,
}

impl Loaded {
    pub fn iter(&self) -> impl Iterator<Item = CpEntry<'_>> {
        entries(&self.body)
    }

    /// The entries of one shard's section.
    pub fn section(&self, shard: usize) -> impl Iterator<Item = CpEntry<'_>> {
        let (off, len, _) = self.sections.get(shard).copied().unwrap_or((0, 0, 0));
        entries(&self.body[off..off + len])
    }
}

fn entries(body: &[u8]) -> impl Iterator<Item = CpEntry<'_>> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let (e, n) = decode_entry(&body[pos..])?;
        pos += n;
        Some(e)
    })
}

/// Bytes of the section table: per shard, its entry bytes and count.
pub(super) fn table_len(shards: u32) -> usize {
    shards as usize * 16
}

/// Reads and verifies the checkpoint in `dir`. Ok(None): there is none.
pub fn load(dir: &Path) -> Result<Option<Loaded>, String> {
    let mut f = match std::fs::File::open(path(dir)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open: {e}")),
    };
    let mut all = Vec::new();
    f.read_to_end(&mut all)
        .map_err(|e| format!("cannot read: {e}"))?;
    if all.len() < HEADER_LEN + TRAILER_LEN {
        return Err("truncated checkpoint".into());
    }
    let header = decode_header(&all[..HEADER_LEN])?;
    let (entries, crc) = decode_trailer(&all[all.len() - TRAILER_LEN..])?;
    let body_end = all.len() - TRAILER_LEN;
    if crc32c::crc32c(&all[HEADER_LEN..body_end]) != crc {
        return Err("entry checksum mismatch".into());
    }
    let tlen = table_len(header.shards);
    if body_end - HEADER_LEN < tlen {
        return Err("truncated section table".into());
    }
    let table = all[body_end - tlen..body_end].to_vec();
    all.truncate(body_end - tlen);
    all.drain(..HEADER_LEN);
    let mut sections = Vec::with_capacity(header.shards as usize);
    let mut off = 0usize;
    for i in 0..header.shards as usize {
        let bytes = u64_at(&table, i * 16) as usize;
        let count = u64_at(&table, i * 16 + 8);
        if off + bytes > all.len() {
            return Err("section table does not match the entries".into());
        }
        sections.push((off, bytes, count));
        off += bytes;
    }
    Ok(Some(Loaded {
        header,
        body: all,
        entries,
        sections,
    }))
}

/// Bytes of the record a checkpoint entry points at hold this key and a
/// value of `len - header - key` bytes.
pub fn value_len(e: &CpEntry<'_>) -> Option<u32> {
    let prefix = e.meta.prefix_len();
    (e.loc.len as usize)
        .checked_sub(RECORD_HEADER_LEN + e.key.len() + prefix)
        .map(|v| v as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_entry_trailer_round_trip() {
        let h = Header {
            version: CHECKPOINT_VERSION,
            databases: 16,
            created_ms: 123,
            position: LogPosition {
                segment: 7,
                offset: 8192,
            },
            next_seq: 99,
            shards: 64,
            shard_seed: 0xdead_beef,
        };
        let b = encode_header(&h);
        assert_eq!(decode_header(&b).unwrap(), h);
        let mut bad = b;
        bad[30] ^= 1;
        assert!(decode_header(&bad).is_err());
        let mut out = Vec::new();
        let e = CpEntry {
            db: 3,
            seq: 5,
            expire_at_ms: 6,
            loc: FlashLoc {
                segment: 1,
                offset: 4096,
                len: 40,
            },
            meta: ItemMeta::default(),
            key: b"key",
            chunks: None,
        };
        encode_entry(&mut out, &e);
        assert_eq!(decode_entry(&out).unwrap(), (e.clone(), out.len()));
        assert!(decode_entry(&out[..out.len() - 1]).is_none());
        assert_eq!(value_len(&e), Some(5));
        // An item with a stale mark and an explicit CAS takes the extension;
        // its record has the 13-byte kind-5 prefix.
        let m = CpEntry {
            meta: ItemMeta {
                client_flags: 9,
                explicit_cas: Some(1 << 40),
                stale: true,
                ..ItemMeta::default()
            },
            loc: FlashLoc { len: 51, ..e.loc },
            ..e.clone()
        };
        let mut out = Vec::new();
        encode_entry(&mut out, &m);
        assert_eq!(out.len(), ENTRY_FIXED_LEN + ENTRY_META_LEN + 3);
        assert_eq!(decode_entry(&out).unwrap(), (m.clone(), out.len()));
        assert!(decode_entry(&out[..out.len() - 1]).is_none());
        assert_eq!(value_len(&m), Some(3));
        let t = encode_trailer(10, 77);
        assert_eq!(decode_trailer(&t).unwrap(), (10, 77));
    }

    #[test]
    fn old_version_is_refused() {
        let mut b = encode_header(&Header {
            version: CHECKPOINT_VERSION + 1,
            databases: 1,
            created_ms: 0,
            position: LogPosition {
                segment: 1,
                offset: 0,
            },
            next_seq: 1,
            shards: 1,
            shard_seed: 0,
        });
        assert!(decode_header(&b).unwrap_err().contains("version"));
        b[0] = b'X';
        assert!(decode_header(&b).is_err());
    }
}
