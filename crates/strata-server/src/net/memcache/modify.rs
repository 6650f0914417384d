//! The read-modify-write commands on an item's value: append / prepend
//! and incr / decr (text) or `ma` (meta), with memcached's rules.

use super::DB;
use crate::command::Shared;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use strata_engine::{Current, EngineError, ExpireUpdate, ItemState, Mutation, Read};

/// append / prepend: STORED, NOT_STORED when the key is missing, EXISTS
/// when `cas` is given and differs; the item keeps its flags and TTL and
/// takes `explicit_cas` (meta `E`) if given.
pub(super) fn concat(
    shared: &Arc<Shared>,
    key: Bytes,
    data: Bytes,
    append: bool,
    cas: Option<u64>,
    explicit_cas: Option<u64>,
) -> Read<Result<&'static str, EngineError>> {
    let counted = shared.clone();
    let wrote = (key.len() + data.len()) as u64;
    shared
        .engine
        .update(DB, &key, move |cur: Option<Current<'_>>| match cur {
            None => (Mutation::None, "NOT_STORED"),
            Some(c) if cas.is_some_and(|x| x != c.cas) => (Mutation::None, "EXISTS"),
            Some(c) => {
                counted.stats.client_write_bytes.add(wrote);
                let mut v = BytesMut::with_capacity(c.value.len() + data.len());
                if append {
                    v.extend_from_slice(c.value);
                    v.extend_from_slice(&data);
                } else {
                    v.extend_from_slice(&data);
                    v.extend_from_slice(c.value);
                }
                (
                    Mutation::SetItem {
                        value: v.freeze(),
                        expire: ExpireUpdate::Keep,
                        client_flags: c.client_flags,
                        explicit_cas,
                    },
                    "STORED",
                )
            }
        })
}

/// One incr / decr (text) or `ma` (meta).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ArithOp {
    pub(super) incr: bool,
    pub(super) delta: u64,
    /// Auto-create a missing key (`N`, `J`): initial value, absolute expiry.
    pub(super) create: Option<(u64, u64)>,
    /// Only if the item has this CAS (`C`).
    pub(super) cas: Option<u64>,
    /// New TTL on success (`T`): absolute ms, 0 = none.
    pub(super) expire_at_ms: Option<u64>,
    /// The CAS to give the item (`E`).
    pub(super) explicit_cas: Option<u64>,
}

/// What an arithmetic did.
#[derive(Clone, Copy, Debug)]
pub(super) enum ArithResult {
    /// The new value (after auto-create, the initial one), and the item's
    /// expiry before the operation.
    Done {
        value: u64,
        expire_before: u64,
    },
    Missing,
    CasMismatch,
    NonNumeric,
}

fn expire_update(at: u64) -> ExpireUpdate {
    if at == 0 {
        ExpireUpdate::Clear
    } else {
        ExpireUpdate::At(at)
    }
}

/// incr / decr / ma, and the item's state after it. incr wraps at 2^64,
/// decr stops at 0, as memcached.
pub(super) fn arith(
    shared: &Shared,
    key: Bytes,
    op: ArithOp,
) -> Read<Result<(ArithResult, Option<ItemState>), EngineError>> {
    shared
        .engine
        .update_item(DB, &key, move |cur: Option<Current<'_>>| match cur {
            None => match op.create {
                Some((initial, expire_at)) => (
                    Mutation::SetItem {
                        value: Bytes::from(initial.to_string()),
                        expire: expire_update(expire_at),
                        client_flags: 0,
                        explicit_cas: op.explicit_cas,
                    },
                    ArithResult::Done {
                        value: initial,
                        expire_before: expire_at,
                    },
                ),
                None => (Mutation::None, ArithResult::Missing),
            },
            Some(c) if op.cas.is_some_and(|x| x != c.cas) => {
                (Mutation::None, ArithResult::CasMismatch)
            }
            Some(c) => {
                let text = std::str::from_utf8(c.value).unwrap_or("");
                match text.trim_end_matches(' ').parse::<u64>() {
                    Ok(n) if c.value.len() <= 20 => {
                        let v = if op.incr {
                            n.wrapping_add(op.delta)
                        } else {
                            n.saturating_sub(op.delta)
                        };
                        // As memcached, a shorter result keeps the item's
                        // length, padded with spaces (an in-place rewrite).
                        let mut text = v.to_string();
                        while text.len() < c.value.len() {
                            text.push(' ');
                        }
                        (
                            Mutation::SetItem {
                                value: Bytes::from(text),
                                expire: op.expire_at_ms.map_or(ExpireUpdate::Keep, expire_update),
                                client_flags: c.client_flags,
                                explicit_cas: op.explicit_cas,
                            },
                            ArithResult::Done {
                                value: v,
                                expire_before: c.expire_at_ms,
                            },
                        )
                    }
                    _ => (Mutation::None, ArithResult::NonNumeric),
                }
            }
        })
}

/// Decimal digits of `n` (an incr's delta as the client sent it: what it
/// counts in `client_write_bytes`).
pub(super) fn digits(n: u64) -> u64 {
    n.checked_ilog10().map_or(1, |d| d as u64 + 1)
}
