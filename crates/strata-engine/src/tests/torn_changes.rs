//! A change of chunked collections torn by a crash while the journal wrote
//! it: whatever prefix of the batch reached the log, each collection comes
//! back exactly as it was before the change or exactly as after it, never
//! a mix (a hash with half its fields rewritten, a sorted set whose member
//! parts disagree with its order parts, a list whose head and parts
//! disagree). Parts count only under a head at least as new as they are
//! (docs/format.md, "headed" chunks).
//!
//! The bug this guards against: before format 9 every chunk record counted
//! alone, so a batch cut between two of a collection's part records came
//! back half applied.

use crate::base::ValueType;
use crate::tests::block_on;
use crate::types::Collection;
use crate::{Engine, EngineConfig, IoBackend, Location, ValueRef};
use bytes::Bytes;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub(super) fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir.join("flash"));
    c.io_backend = IoBackend::Psync;
    // Nothing is demoted: every record of the change is the journal's.
    c.maxmemory_ram = 256 << 20;
    // One segment holds everything; a batch goes out in many writes.
    c.segment_size = 32 << 20;
    c.write_chunk = 32 << 10;
    c.flash_max_size = 256 << 20;
    c.shards = 8;
    c.databases = 1;
    c
}

/// The keys the torn-change tests write (`tests/part_changes.rs` too).
pub(super) const KEYS: [(&str, ValueType); 5] = [
    ("h", ValueType::Hash),
    ("z", ValueType::ZSet),
    ("s", ValueType::Set),
    ("l", ValueType::List),
    ("x", ValueType::Stream),
];

/// Fills (`gen` 0) or changes (`gen` 1) collection `c` of type `t` so
/// that every part of it changes.
fn shape(c: &mut Collection, gen: u32) {
    match c {
        Collection::Hash(h) => {
            for i in 0..1200 {
                h.insert(format!("field-{i}").as_bytes(), &[b'a' + gen as u8; 60]);
            }
        }
        Collection::ZSet(z) => {
            for i in 0..1500 {
                let m = format!("member-{i:0>30}");
                z.insert(m.as_bytes(), (i as f64) * if gen == 0 { 1.0 } else { -1.0 });
            }
        }
        Collection::Set(s) => {
            for i in 0..2000 {
                let m = format!("set-member-{i:0>30}");
                if gen == 0 || i % 2 == 0 {
                    s.insert(m.as_bytes());
                } else {
                    s.remove(m.as_bytes());
                }
            }
        }
        Collection::List(l) => {
            let n = if gen == 0 { 1000 } else { 400 };
            for i in 0..n {
                if gen == 1 {
                    l.pop_front();
                }
                l.push_back(vec![b'a' + (i % 26) as u8 + gen as u8; 60].into());
            }
        }
        // Not among KEYS: tests/big_strings.rs tears strings.
        Collection::Str(_) => {}
        // Appends, trims from the front (parts leave), deletes inside
        // (parts change) and a group's reads (the head changes).
        Collection::Stream(x) => {
            use crate::types::stream::{StreamId, Trim};
            let base = x.last_id.ms;
            for i in 1..=if gen == 0 { 600 } else { 200 } {
                let v = vec![b'a' + gen as u8; 60];
                x.append(StreamId::new(base + i, 0), &[b"f", &v], Default::default());
            }
            if gen == 1 {
                x.trim(Trim::MaxLen(500), false, 0);
                let ids: Vec<StreamId> = (0..40).map(|i| StreamId::new(base - 10 * i, 0)).collect();
                x.delete(&ids);
            }
            x.create_group(b"g", StreamId::MIN, 0);
            if let Some(g) = x.group_mut(b"g") {
                g.create_consumer(b"c", 1);
                g.deliver(StreamId::new(base + 1, 0), b"c", 2 + gen as u64);
            }
        }
    }
}

/// Applies `shape(gen)` to every key in one command and waits until the
/// journal wrote it; returns the model after it.
fn apply(e: &Engine, model: &mut HashMap<&'static str, Collection>, gen: u32) {
    step(e, model, move |c, _| shape(c, gen));
}

/// Applies `f` to every key's collection in the engine (in one command)
/// and in the model, and waits until the journal wrote it.
pub(super) fn step(
    e: &Engine,
    model: &mut HashMap<&'static str, Collection>,
    f: impl Fn(&mut Collection, &str) + Send + Sync + Clone + 'static,
) {
    for (k, t) in KEYS {
        let c = model
            .entry(k)
            .or_insert_with(|| Collection::new(t).unwrap());
        f(c, k);
        c.update_encoding(&crate::types::EncodingLimits::default());
    }
    let keys: Vec<Bytes> = KEYS.iter().map(|(k, _)| Bytes::from(*k)).collect();
    block_on(
        e.with_keys(0, keys, move |v| {
            for (k, t) in KEYS {
                let c = v.coll_mut(k.as_bytes(), t, true).unwrap().unwrap();
                f(c, k);
            }
        })
        .wait(),
    )
    .unwrap();
    block_on(e.wait_durable(e.journal_ticket())).unwrap();
}

pub(super) fn segment(dir: &Path) -> PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("flash"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(v.len(), 1, "one segment: {v:?}");
    v.pop().unwrap()
}

/// A copy of `dir`'s log with its one segment cut at byte `cut` (what a
/// crash left of the last writes).
pub(super) fn cut_copy(dir: &Path, cut: u64) -> tempfile::TempDir {
    let copy = live_copy(dir);
    std::fs::OpenOptions::new()
        .write(true)
        .open(segment(copy.path()))
        .unwrap()
        .set_len(cut)
        .unwrap();
    copy
}

/// A copy of `dir`'s files as a crash leaves them (of a live engine:
/// everything synced is there; a segment freed meanwhile is not), but its
/// lock. The files are first hard-linked, all within microseconds, and
/// again if one vanished meanwhile (the collector moved its records to a
/// segment linked before they arrived): a copy of megabytes taken file by
/// file while the collector runs is no crash image.
pub(super) fn live_copy(dir: &Path) -> tempfile::TempDir {
    let flash = dir.join("flash");
    let links = loop {
        let links = tempfile::tempdir_in(dir).unwrap();
        let mut whole = true;
        for f in std::fs::read_dir(&flash).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_owned();
            if name != "LOCK" && std::fs::hard_link(&f, links.path().join(name)).is_err() {
                whole = false;
            }
        }
        if whole {
            break links;
        }
    };
    let copy = tempfile::tempdir().unwrap();
    std::fs::create_dir(copy.path().join("flash")).unwrap();
    for f in std::fs::read_dir(links.path()).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, copy.path().join("flash").join(f.file_name().unwrap())).unwrap();
    }
    copy
}

/// Key `key`'s collection, if it is one.
pub(super) fn read(e: &Engine, key: &str) -> Option<Collection> {
    let k = Bytes::from(key.to_owned());
    block_on(
        e.with_keys(0, vec![k.clone()], move |v| match v.get(&k) {
            Some(ValueRef::Coll(c)) => Some(c.clone()),
            _ => None,
        })
        .wait(),
    )
    .unwrap()
}

#[test]
fn a_change_torn_before_its_head_comes_back_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut model = HashMap::new();
    let (len0, len1);
    let before = {
        let e = Engine::open(c.clone()).unwrap();
        apply(&e, &mut model, 0);
        for (k, _) in KEYS {
            let info = e.key_info(0, k.as_bytes()).unwrap();
            assert!(
                matches!(info.location, Location::Chunked { parts, .. } if parts > 2),
                "{k} is chunked: {:?}",
                info.location
            );
        }
        len0 = std::fs::metadata(segment(dir.path())).unwrap().len();
        let before = model.clone();
        apply(&e, &mut model, 1);
        len1 = std::fs::metadata(segment(dir.path())).unwrap().len();
        drop(e);
        before
    };
    let after = model;
    assert!(
        len1 > len0 + (64 << 10),
        "the change wrote {} bytes",
        len1 - len0
    );
    // Cuts spread over the change's records, plus random ones, plus none.
    let mut rng = StdRng::seed_from_u64(9);
    let mut cuts: Vec<u64> = (0..16).map(|i| len0 + (len1 - len0) * i / 16).collect();
    cuts.extend((0..8).map(|_| rng.gen_range(len0..len1)));
    cuts.push(len1);
    let (mut saw_before, mut saw_after) = (0, 0);
    for cut in cuts {
        let copy = cut_copy(dir.path(), cut);
        let e = Engine::open(config(copy.path())).unwrap();
        let r = e.recovery_report();
        assert_eq!(
            r.corrupt_records + r.missing_segment_entries,
            0,
            "cut {cut}: {r:?}"
        );
        for (k, _) in KEYS {
            let got = read(&e, k);
            if got.as_ref() == before.get(k) {
                saw_before += 1;
            } else if got.as_ref() == after.get(k) {
                saw_after += 1;
            } else {
                panic!(
                    "cut at {cut} of {len0}..{len1}: {k} came back neither as before nor as after \
                     the change ({:?} elements; before {}, after {})",
                    got.map(|c| c.len()),
                    before[k].len(),
                    after[k].len()
                );
            }
        }
        if cut == len1 {
            for (k, _) in KEYS {
                assert_eq!(read(&e, k).as_ref(), after.get(k), "uncut: {k}");
            }
        }
    }
    assert!(saw_before > 0 && saw_after > 0, "{saw_before} {saw_after}");
}

/// Transfers between counters in exclusive sections (what EXEC and
/// scripts run in), moves of a token key (a deletion and a creation), and
/// single-key writes beside them, from two threads while the journal
/// batches them; then the log cut anywhere after the starting state:
/// every cut recovers to a state where the counters' sum and the single
/// token are intact (journal invariant 7, docs/format.md "Atomic
/// batches"). Before atomic batches, a cut between a transfer's two
/// records restored half of it.
#[test]
fn transactions_torn_by_a_crash_come_back_whole_or_not_at_all() {
    use crate::tiering::fetch::Read;
    use crate::SetOptions;
    const COUNTERS: usize = 16;
    const START: i64 = 1000;
    let dir = tempfile::tempdir().unwrap();
    let counter = |i: usize| format!("counter:{i}").into_bytes();
    let value = |e: &Engine, k: &[u8]| -> Option<i64> {
        // Hot while transactions run (a section never waits for flash);
        // cold after a restart.
        let v = match e.get(0, k) {
            Read::Ready(r) => r.unwrap(),
            Read::Pending(f) => block_on(f).unwrap(),
        };
        v.map(|v| std::str::from_utf8(&v).unwrap().parse().unwrap())
    };
    let (len0, len1) = {
        let e = Engine::open(config(dir.path())).unwrap();
        for i in 0..COUNTERS {
            e.set(
                0,
                &counter(i),
                START.to_string().as_bytes(),
                SetOptions::default(),
            )
            .unwrap();
        }
        e.set(0, b"token:0", b"t", SetOptions::default()).unwrap();
        block_on(e.wait_durable(e.journal_ticket())).unwrap();
        let len0 = std::fs::metadata(segment(dir.path())).unwrap().len();
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let e = &e;
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for n in 0..1500u32 {
                        let (a, b) = (rng.gen_range(0..COUNTERS), rng.gen_range(0..COUNTERS));
                        let x: i64 = rng.gen_range(1..50);
                        e.exclusive(|| {
                            let va = value(e, &counter(a)).unwrap();
                            e.set(
                                0,
                                &counter(a),
                                (va - x).to_string().as_bytes(),
                                SetOptions::default(),
                            )
                            .unwrap();
                            let vb = value(e, &counter(b)).unwrap();
                            e.set(
                                0,
                                &counter(b),
                                (vb + x).to_string().as_bytes(),
                                SetOptions::default(),
                            )
                            .unwrap();
                        });
                        if t == 0 && n % 10 == 0 {
                            e.exclusive(|| {
                                let at =
                                    (0..).find(|j| e.exists(0, format!("token:{j}").as_bytes()));
                                let at = at.unwrap();
                                assert!(e.delete(0, format!("token:{at}").as_bytes()));
                                let next = format!("token:{}", at + 1);
                                e.set(0, next.as_bytes(), b"t", SetOptions::default())
                                    .unwrap();
                            });
                        }
                        // Single-key writes beside the transactions.
                        let k = format!("single:{}", rng.gen_range(0..64));
                        e.set(0, k.as_bytes(), &[b'v'; 100], SetOptions::default())
                            .unwrap();
                        // Spread over many journal batches.
                        if n % 10 == 0 {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                });
            }
        });
        block_on(e.wait_durable(e.journal_ticket())).unwrap();
        let len1 = std::fs::metadata(segment(dir.path())).unwrap().len();
        (len0, len1)
    };
    let mut rng = StdRng::seed_from_u64(11);
    let mut cuts: Vec<u64> = (0..48).map(|i| len0 + (len1 - len0) * i / 48).collect();
    cuts.extend((0..32).map(|_| rng.gen_range(len0..len1)));
    cuts.push(len1);
    let mut torn = 0;
    let mut restored = std::collections::BTreeSet::new();
    for cut in cuts {
        let copy = cut_copy(dir.path(), cut);
        let e = Engine::open(config(copy.path())).unwrap();
        let r = e.recovery_report();
        torn += (r.torn_batch_records > 0) as u32;
        let sum: i64 = (0..COUNTERS).map(|i| value(&e, &counter(i)).unwrap()).sum();
        assert_eq!(
            sum,
            START * COUNTERS as i64,
            "cut at {cut} of {len0}..{len1}: {r:?}"
        );
        let tokens: Vec<u32> = (0..200)
            .filter(|j| e.exists(0, format!("token:{j}").as_bytes()))
            .collect();
        assert_eq!(tokens.len(), 1, "cut at {cut}: tokens {tokens:?}");
        restored.insert(tokens[0]);
        if cut == len1 {
            assert_eq!(r.torn_batch_records, 0);
            assert_eq!(tokens, vec![150], "uncut");
        }
        // A restart after the dropped batch does not bring it back.
        if r.torn_batch_records > 0 {
            e.set(0, b"after", b"x", SetOptions::default()).unwrap();
            block_on(e.wait_durable(e.journal_ticket())).unwrap();
            drop(e);
            let e = Engine::open(config(copy.path())).unwrap();
            let sum: i64 = (0..COUNTERS).map(|i| value(&e, &counter(i)).unwrap()).sum();
            assert_eq!(sum, START * COUNTERS as i64, "cut at {cut}, second restart");
        }
    }
    eprintln!("{torn} cuts dropped a torn batch; tokens restored: {restored:?}");
    assert!(torn > 0, "no cut fell inside a batch");
    assert!(restored.len() > 3, "cuts restored {restored:?}");
}

/// A batch longer than a segment, whose middle segment the collector
/// freed (every record there died: newer plain records replaced them):
/// recovery applies the members left in the first and last segments. It
/// used to require the end's full count whenever the first segment was
/// there, and dropped the whole batch (keys lost after a restart).
#[test]
fn a_batch_survives_the_collector_taking_its_middle_segment() {
    use crate::flash::format::{RecordHeader, RecordKind};
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.checkpoint_interval = 0;
    c.segment_size = 256 << 10;
    let value = vec![b'x'; 20 << 10];
    let mut segs: HashMap<String, u32> = HashMap::new();
    let (first, last) = {
        let e = Engine::open(c.clone()).unwrap();
        let inner = &e.inner;
        let mut w = inner.flash.writer.lock();
        let put = |w: &mut crate::log::writer::SegmentWriter, key: &str, v: &[u8]| {
            let h = RecordHeader {
                kind: RecordKind::Value,
                db: 0,
                key_len: key.len() as u32,
                value_len: v.len() as u32,
                seq: inner.next_seq(),
                expire_at_ms: 0,
            };
            w.append(&h, key.as_bytes(), v, u64::MAX).unwrap().segment
        };
        w.begin_batch();
        for i in 0..40 {
            let k = format!("m{i}");
            let s = put(&mut w, &k, &value);
            segs.insert(k, s);
        }
        w.end_batch(true).unwrap();
        let (first, last) = (segs["m0"], segs["m39"]);
        assert!(last >= first + 2, "the batch spans {first}..={last}");
        // Newer values for the members in the middle segments: those
        // segments hold nothing live any more.
        for (k, &s) in &segs {
            if s > first && s < last {
                put(&mut w, k, b"newer");
            }
        }
        w.flush().unwrap();
        w.sync().unwrap();
        (first, last)
    };
    let _ = std::fs::remove_file(dir.path().join("flash").join("checkpoint"));
    for s in first + 1..last {
        std::fs::remove_file(dir.path().join("flash").join(format!("seg-{s:010}.log"))).unwrap();
    }
    let e = Engine::open(c).unwrap();
    let r = e.recovery_report();
    assert_eq!(r.torn_batch_records, 0, "{r:?}");
    for (k, &s) in &segs {
        let got = block_on(e.get(0, k.as_bytes()).wait()).unwrap();
        let want: &[u8] = if s > first && s < last {
            b"newer"
        } else {
            &value
        };
        assert_eq!(
            got.as_deref(),
            Some(want),
            "{k} (segment {s} of {first}..={last})"
        );
    }
}

/// Recovery's rules for atomic batches, on logs written by hand: a batch
/// counts only when its commit end follows all its members; members
/// followed by anything else (a failed write), by another batch, by an
/// abandoned end or by nothing count for nothing, and so does a batch that
/// lost a member (a damaged record).
#[test]
fn recovery_applies_a_batch_only_with_its_end_and_all_its_members() {
    use crate::flash::format::{RecordHeader, RecordKind};
    type Step = (&'static str, Option<&'static str>);
    /// Name, steps, keys there after recovery, keys not there.
    type Case = (
        &'static str,
        &'static [Step],
        &'static [&'static str],
        &'static [&'static str],
    );
    // Steps: ("begin" | "end" | "abort" | "fail" | "corrupt-last", None) or
    // ("put", key); "fail" forgets the open batch without its end.
    let cases: [Case; 6] = [
        (
            "committed",
            &[
                ("begin", None),
                ("put", Some("a")),
                ("put", Some("b")),
                ("end", None),
            ],
            &["a", "b"],
            &[],
        ),
        (
            "no end, then a plain record",
            &[
                ("begin", None),
                ("put", Some("a")),
                ("put", Some("b")),
                ("fail", None),
                ("put", Some("c")),
            ],
            &["c"],
            &["a", "b"],
        ),
        (
            "no end, then another batch",
            &[
                ("begin", None),
                ("put", Some("a")),
                ("begin", None),
                ("put", Some("b")),
                ("put", Some("c")),
                ("end", None),
            ],
            &["b", "c"],
            &["a"],
        ),
        (
            "abandoned",
            &[
                ("begin", None),
                ("put", Some("a")),
                ("abort", None),
                ("put", Some("c")),
            ],
            &["c"],
            &["a"],
        ),
        (
            "a member damaged",
            &[
                ("begin", None),
                ("put", Some("a")),
                ("put", Some("b")),
                ("corrupt-last", None),
                ("put", Some("c")),
                ("end", None),
            ],
            &[],
            &["a", "b", "c"],
        ),
        (
            "the log ends inside",
            &[("put", Some("c")), ("begin", None), ("put", Some("a"))],
            &["c"],
            &["a"],
        ),
    ];
    for (name, steps, present, absent) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.checkpoint_interval = 0;
        let mut corrupt = Vec::new();
        {
            let e = Engine::open(c.clone()).unwrap();
            let inner = &e.inner;
            let mut w = inner.flash.writer.lock();
            let mut in_batch = false;
            for (what, key) in steps {
                match *what {
                    "begin" => {
                        if in_batch {
                            // A batch whose end was never written.
                            let _ = w.abandon_for_test();
                        }
                        w.begin_batch();
                        in_batch = true;
                    }
                    "end" | "abort" => {
                        w.end_batch(*what == "end").unwrap();
                        in_batch = false;
                    }
                    "fail" => {
                        let _ = w.abandon_for_test();
                        in_batch = false;
                    }
                    "corrupt-last" => corrupt.push(w.last_for_test()),
                    _ => {
                        let key = key.unwrap().as_bytes();
                        let h = RecordHeader {
                            kind: RecordKind::Value,
                            db: 0,
                            key_len: key.len() as u32,
                            value_len: 1,
                            seq: inner.next_seq(),
                            expire_at_ms: 0,
                        };
                        w.append(&h, key, b"v", u64::MAX).unwrap();
                    }
                }
            }
            if in_batch {
                let _ = w.abandon_for_test();
            }
            w.flush().unwrap();
            w.sync().unwrap();
        }
        let _ = std::fs::remove_file(dir.path().join("flash").join("checkpoint"));
        for loc in corrupt {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(segment(dir.path()))
                .unwrap();
            f.write_at(b"X", loc.offset as u64 + loc.len as u64 - 1)
                .unwrap();
        }
        let e = Engine::open(c).unwrap();
        for k in present {
            assert!(e.exists(0, k.as_bytes()), "{name}: {k} should be there");
        }
        for k in absent {
            assert!(
                !e.exists(0, k.as_bytes()),
                "{name}: {k} should not be there"
            );
        }
        let r = e.recovery_report();
        assert_eq!(
            r.torn_batch_records + r.aborted_batch_records > 0,
            !absent.is_empty(),
            "{name}: {r:?}"
        );
    }
}
