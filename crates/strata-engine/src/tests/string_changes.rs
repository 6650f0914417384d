//! Strings changed in place (`types::changes::LoggedStr`): writes into
//! strings of one record (as SETRANGE, SETBIT and APPEND make them) are
//! journaled as their byte spans, not as the whole string, and recovery
//! applies them to the string's image exactly: after a crash (from a full
//! log scan, or a checkpoint and its tail), while a small RAM budget
//! demotes strings, whole SETs replace them and the collector moves their
//! records.

use crate::tests::{assert_live_bytes, assert_recovered, block_on, wait_until};
use crate::{Engine, EngineConfig, IoBackend, Need, ShutdownSave};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::Path;

const KEYS: usize = 24;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    c.maxmemory_ram = 128 << 10;
    c.appendfsync = crate::log::journal::FsyncPolicy::Always;
    c.segment_size = 256 << 10;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = 1;
    c.hz = 100;
    c.min_value_size = 16;
    c
}

type Model = HashMap<Vec<u8>, Vec<u8>>;

/// Writes `data` at `off` of `key` (as SETRANGE or APPEND), in the engine
/// and the model.
fn write(e: &Engine, model: &mut Model, key: &[u8], off: usize, data: Vec<u8>) {
    let m = model.entry(key.to_vec()).or_default();
    let end = off + data.len();
    if m.len() < end {
        m.resize(end, 0);
    }
    m[off..end].copy_from_slice(&data);
    let need = Need::indexes(&[(off as i64, end as i64 - 1), (-1, -1)]);
    block_on(
        e.write_str(0, Bytes::copy_from_slice(key), need, move |ed| {
            ed.write(off as u64, &data)
        })
        .wait(),
    )
    .unwrap();
}

/// `steps` random changes, each its own journal batch (so each can be a
/// change record): mostly small writes in place, some whole SETs.
fn churn(e: &Engine, model: &mut Model, seed: u64, steps: u32) {
    let mut rng = StdRng::seed_from_u64(seed);
    for n in 0..steps {
        let key = format!("s{}", rng.gen_range(0..KEYS)).into_bytes();
        let len = model.get(&key).map_or(0, Vec::len);
        if len == 0 || len > 12_000 || rng.gen_bool(0.03) {
            let v = format!("{seed}:{n:->6000}").into_bytes();
            e.set(0, &key, &v, Default::default()).unwrap();
            model.insert(key, v);
        } else {
            let data = format!("<{seed}:{n}>").into_bytes();
            let off = match rng.gen_range(0..3) {
                0 => len,
                1 => rng.gen_range(0..len),
                _ => rng.gen_range(len..len + 30),
            };
            write(e, model, &key, off, data);
        }
        block_on(e.wait_durable(e.journal_ticket())).unwrap();
    }
}

fn check(e: &Engine, model: &Model, what: &str) {
    for (k, v) in model {
        let got = block_on(e.get(0, k).wait()).unwrap();
        assert_eq!(
            got.as_deref(),
            Some(&v[..]),
            "{what}: {}",
            String::from_utf8_lossy(k)
        );
    }
}

#[test]
fn strings_changed_in_place_are_logged_by_their_changes_and_recovered() {
    for (name, checkpoint_midway) in [("full log scan", false), ("checkpoint + tail", true)] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = Model::new();
        {
            let e = Engine::open(config(dir.path())).unwrap();
            churn(&e, &mut model, 1, 300);
            let before = e.persist_info();
            churn(&e, &mut model, 2, 600);
            if checkpoint_midway {
                e.save().unwrap();
            }
            churn(&e, &mut model, 3, 300);
            let after = e.persist_info();
            // 6-12 KB strings changed by ~10 bytes: as images each change
            // would journal the whole string.
            let per = (after.journal_record_bytes - before.journal_record_bytes) / 900;
            assert!(
                after.journal_change_records > before.journal_change_records + 300,
                "{name}: few change records: {before:?} {after:?}"
            );
            assert!(per < 2000, "{name}: {per} journal bytes per change");
            eprintln!(
                "{name}: {per} journal bytes per change; records {} changes {} bytes {}",
                after.journal_records - before.journal_records,
                after.journal_change_records - before.journal_change_records,
                after.journal_change_bytes - before.journal_change_bytes
            );
            // (Strings over the RAM budget go to flash; reads bring some
            // back, so wait for the demoter rather than look once.)
            wait_until("a string on flash", || e.tiered_info().values_in_flash > 0);
            check(&e, &model, &format!("{name}: before the crash"));
            // Every record a string's chain or backing let go of was
            // released, and none still held was.
            assert_live_bytes(&e, name);
            // (Dropped without a shutdown: the log is as a crash left it.)
        }
        let e = Engine::open(config(dir.path())).unwrap();
        assert_recovered(&e, checkpoint_midway, name);
        check(&e, &model, name);
        churn(&e, &mut model, 4, 300);
        e.shutdown(ShutdownSave::Save).unwrap();
        drop(e);
        let e = Engine::open(config(dir.path())).unwrap();
        check(&e, &model, &format!("{name}, second restart"));
        assert_live_bytes(&e, name);
    }
}
