//! The value of a change record (kind 12): the base record's sequence
//! number (u64 LE), the type byte (`ValueType`), the bits byte after the
//! change (`types::BIG_ENCODING`), then the operations
//! (`types::changes::Op`, docs/format.md).

use super::le_u64;
use crate::base::ValueType;

/// Bytes before the operations.
pub const CHANGE_PREFIX_LEN: usize = 10;

/// A change record's value, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change<'a> {
    /// Sequence number of the record whose state this one changes.
    pub base: u64,
    pub vtype: ValueType,
    pub bits: u8,
    pub ops: &'a [u8],
}

impl Change<'_> {
    /// The value's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(CHANGE_PREFIX_LEN + self.ops.len());
        v.extend_from_slice(&self.base.to_le_bytes());
        v.push(self.vtype as u8);
        v.push(self.bits);
        v.extend_from_slice(self.ops);
        v
    }
}

/// Reads a change record's value (None if it is not one).
pub fn decode(value: &[u8]) -> Option<Change<'_>> {
    let base = le_u64(value.get(..8)?);
    let vtype = ValueType::from_u8(*value.get(8)?)?;
    let bits = *value.get(9)?;
    Some(Change {
        base,
        vtype,
        bits,
        ops: &value[CHANGE_PREFIX_LEN..],
    })
}
