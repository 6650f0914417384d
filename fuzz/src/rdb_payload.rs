//! Fuzzes the DUMP payload reader RESTORE runs on bytes a client sends
//! (`strata_server::base::rdb::restore`), and checks invariants, not only the
//! absence of panics:
//! - the input is sealed as a payload (version and CRC-64 appended), so
//!   the reader's body parsing is what gets explored;
//! - a payload that restores dumps to a payload that restores to a value
//!   that dumps to the same bytes (the dump is canonical);
//! - the same bytes unsealed, or with a flipped checksum, are refused.

use strata_engine::{Value, ValueRef};
use strata_server::base::rdb::{dump, restore, seal};

fn as_ref(v: &Value) -> ValueRef<'_> {
    match v {
        Value::Str(b) => ValueRef::Str(b),
        Value::Coll(c) => ValueRef::Coll(c),
    }
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    let payload = seal(data.to_vec());
    if let Ok(v) = restore(&payload) {
        let once = dump(as_ref(&v));
        let again = restore(&once).expect("a dump restores");
        assert_eq!(dump(as_ref(&again)), once, "dump is not canonical");
    }
    let mut bad = payload.clone();
    if let Some(last) = bad.last_mut() {
        *last ^= 1;
        assert!(restore(&bad).is_err(), "a wrong checksum was accepted");
    }
}
