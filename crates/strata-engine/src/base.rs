//! The engine's shared words, below every other room: what the index, the
//! collections' parts, the log, recovery and the collector all name —
//! where a record lives (`FlashLoc`), a value's type (`ValueType`), a
//! collection record that does not decode (`Malformed`), and the depth
//! byte that says what a part's record is (a hash range's depth, up to
//! `MAX_DEPTH`, or one of the special parts: `PEL_DEPTH`, `STR_DEPTH`,
//! `STREAM_DEPTH`, `ORDER_DEPTH`; docs/format.md), and what happened to a
//! key (`KeyChange`).

/// Where a cold value (or a collection's part) lives: one record of one
/// segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlashLoc {
    pub segment: u32,
    /// Byte offset of the record within the segment file.
    pub offset: u32,
    /// Length of the whole record in bytes.
    pub len: u32,
}

/// The type of a key's value (TYPE), as stored in the index and records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum ValueType {
    #[default]
    String = 0,
    Hash = 1,
    List = 2,
    Set = 3,
    ZSet = 4,
    Stream = 5,
}

impl ValueType {
    pub fn from_u8(b: u8) -> Option<ValueType> {
        Some(match b {
            0 => ValueType::String,
            1 => ValueType::Hash,
            2 => ValueType::List,
            3 => ValueType::Set,
            4 => ValueType::ZSet,
            5 => ValueType::Stream,
            _ => return None,
        })
    }

    /// The name TYPE replies.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Hash => "hash",
            ValueType::List => "list",
            ValueType::Set => "set",
            ValueType::ZSet => "zset",
            ValueType::Stream => "stream",
        }
    }
}

/// A packed collection that does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed collection record")]
pub struct Malformed;

/// Parts stop splitting at this depth (only a flood of hash collisions gets
/// there; such a part just grows).
pub const MAX_DEPTH: u8 = 48;
/// The depth byte of a PEL part's chunk record and checkpoint entry.
pub const PEL_DEPTH: u8 = 0xFC;
/// The depth byte of a string part's chunk record and checkpoint entry
/// (its `low` is the part's number).
pub const STR_DEPTH: u8 = 0xFD;
/// The depth byte of a stream part's chunk record and checkpoint entry
/// (its `low` is the part's number).
pub const STREAM_DEPTH: u8 = 0xFE;
/// The depth byte that names an order part's record (hash ranges use
/// 0..=64).
pub const ORDER_DEPTH: u8 = 0xFF;

/// What happened to a key (`keyspace::observe`: every change a client can
/// see reports one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyChange {
    Created,
    Written,
    /// Written, but not a modification for WATCH or client tracking.
    Quiet,
    Deleted,
    Expired,
    Evicted,
}
