//! The engine's shared words, below every other room: what the index, the
//! collections' parts, the log and the collector all name. (Issue 45
//! gathers the rest here: `ValueType`, `Malformed`, record kinds and
//! depths.)

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
