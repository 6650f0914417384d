//! The fuzz targets' checks, one module each. `fuzz_targets/*.rs` hand
//! them to libFuzzer (`cargo +nightly fuzz run <target>`); the smoke test
//! (`tests/smoke.rs`, on stable, in CI) runs each over its regression
//! inputs and a seeded stream of random and dictionary-built inputs.
//! Every crash found becomes a file under `regressions/<target>/`.

pub mod acl_rules;
pub mod checkpoint_entry;
pub mod collection_record;
pub mod config_file;
pub mod memcache_request;
pub mod rdb_payload;
pub mod resp_frame;
pub mod resp_request;

/// Every target: its name and its check.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("resp_request", resp_request::fuzz),
    ("resp_frame", resp_frame::fuzz),
    ("memcache_request", memcache_request::fuzz),
    ("collection_record", collection_record::fuzz),
    ("checkpoint_entry", checkpoint_entry::fuzz),
    ("rdb_payload", rdb_payload::fuzz),
    ("acl_rules", acl_rules::fuzz),
    ("config_file", config_file::fuzz),
];
