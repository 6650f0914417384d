//! Atomic batches (docs/format.md, "Atomic batches"): the member bit of a
//! record's kind byte, and the value of the kind-11 record that ends a
//! batch.

use super::le_u32;

/// Bit of a record's kind byte: the record is one of an atomic batch's
/// (the journal's batch of a transaction, a script or a multi-key command;
/// `log::journal`), applied at recovery all together or not at all.
pub const BATCH_MEMBER: u8 = 0x80;

/// The value of a [`RecordKind::BatchEnd`](super::RecordKind::BatchEnd) record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchEnd {
    /// The batch was written whole (else it was abandoned after a failed
    /// write: its members count for nothing).
    pub commit: bool,
    /// Where its first member is (segment, offset): which members are its.
    pub first_segment: u32,
    pub first_offset: u32,
    /// How many members it has (a batch missing one is not applied).
    pub count: u32,
}

/// Bytes of a [`BatchEnd`] value.
pub const BATCH_END_LEN: usize = 13;

impl BatchEnd {
    pub fn encode(&self) -> [u8; BATCH_END_LEN] {
        let mut b = [0u8; BATCH_END_LEN];
        b[0] = self.commit as u8;
        b[1..5].copy_from_slice(&self.first_segment.to_le_bytes());
        b[5..9].copy_from_slice(&self.first_offset.to_le_bytes());
        b[9..13].copy_from_slice(&self.count.to_le_bytes());
        b
    }

    pub fn decode(v: &[u8]) -> Option<BatchEnd> {
        (v.len() == BATCH_END_LEN).then(|| BatchEnd {
            commit: v[0] == 1,
            first_segment: le_u32(&v[1..5]),
            first_offset: le_u32(&v[5..9]),
            count: le_u32(&v[9..13]),
        })
    }
}
