//! A value record's item metadata (`ItemMeta`): memcached's client flags,
//! explicit CAS and stale mark, and the value's type, in the smallest
//! record kind that holds them (docs/format.md, kinds 1, 4 and 5).

use super::RecordKind;
use crate::base::ValueType;

/// Bit of a kind-5 record's bits byte: the item is stale (meta `I`).
pub const META_STALE: u8 = 1;
/// Bit of a kind-5 record's bits byte: the CAS field is the item's CAS.
pub const META_EXPLICIT_CAS: u8 = 2;
/// The checkpoint's bits byte holds the value type in its high nibble.
pub const META_TYPE_SHIFT: u8 = 4;
/// Bytes before the value in a kind-5 value field.
pub(super) const META_PREFIX_LEN: usize = 13;

/// What a value record says about its item beyond the bytes: memcached's
/// client flags and, for items touched by the meta `E` or `I` flags, the
/// explicit CAS and the stale mark. The default (all zero) is a plain value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemMeta {
    pub client_flags: u32,
    /// The CAS clients see, when set explicitly (meta `E`); otherwise the
    /// CAS is the record's sequence number.
    pub explicit_cas: Option<u64>,
    /// Invalidated (meta `md … I`, or stored stale by `ms … I`): served
    /// with `X`, and the next `mg` wins the right to recache it.
    pub stale: bool,
    /// The value's type: a string, or a packed collection (kind 6, whose
    /// value carries no memcached state).
    pub vtype: ValueType,
}

impl ItemMeta {
    /// Only client flags (what RESP writes and memcached text commands keep).
    pub fn flags(client_flags: u32) -> ItemMeta {
        ItemMeta {
            client_flags,
            ..ItemMeta::default()
        }
    }

    /// The record kind that carries this metadata.
    pub fn kind(&self) -> RecordKind {
        if self.vtype != ValueType::String {
            RecordKind::Collection
        } else if self.stale || self.explicit_cas.is_some() {
            RecordKind::ValueMeta
        } else if self.client_flags != 0 {
            RecordKind::ValueFlags
        } else {
            RecordKind::Value
        }
    }

    /// Bytes the metadata takes before the value in the record's value field.
    pub fn prefix_len(&self) -> usize {
        match self.kind() {
            RecordKind::ValueMeta => META_PREFIX_LEN,
            RecordKind::ValueFlags => 4,
            RecordKind::Collection => 1,
            _ => 0,
        }
    }

    pub(super) fn encode_prefix(&self, out: &mut [u8]) {
        match self.kind() {
            RecordKind::ValueMeta => {
                out[0..4].copy_from_slice(&self.client_flags.to_le_bytes());
                out[4] = self.bits();
                out[5..13].copy_from_slice(&self.explicit_cas.unwrap_or(0).to_le_bytes());
            }
            RecordKind::ValueFlags => out[0..4].copy_from_slice(&self.client_flags.to_le_bytes()),
            RecordKind::Collection => out[0] = self.vtype as u8,
            _ => {}
        }
    }

    /// The bits byte of a kind-5 record (also the checkpoint's, whose
    /// high nibble is the value type).
    pub fn bits(&self) -> u8 {
        ((self.vtype as u8) << META_TYPE_SHIFT)
            | (if self.stale { META_STALE } else { 0 })
            | (if self.explicit_cas.is_some() {
                META_EXPLICIT_CAS
            } else {
                0
            })
    }

    /// The metadata of a bits byte, client flags and CAS field.
    pub fn from_parts(client_flags: u32, bits: u8, cas: u64) -> ItemMeta {
        ItemMeta {
            client_flags,
            explicit_cas: (bits & META_EXPLICIT_CAS != 0).then_some(cas),
            stale: bits & META_STALE != 0,
            vtype: ValueType::from_u8(bits >> META_TYPE_SHIFT).unwrap_or_default(),
        }
    }
}
