//! Durability of the real server on real files: kill -9 under load with
//! `appendfsync always` and `everysec`, a torn log tail, a flipped bit in
//! an old record, clean shutdowns (SIGTERM, SHUTDOWN [NOSAVE]),
//! `appendonly no`, SAVE / BGSAVE / LASTSAVE / INFO persistence, and
//! `-LOADING` while a restart recovers.
//!
//! Randomised tests print their seed; `STRATA_TEST_SEED=<n>` replays the
//! same choices (the timing of a crash is not reproducible, the operations
//! and the kill delays are).

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use strata_engine::flash::format::{decode_record, RECORD_HEADER_LEN};

fn seed(test: &str) -> u64 {
    let s = std::env::var("STRATA_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{test}: seed {s} (STRATA_TEST_SEED={s} replays it)");
    s
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `INFO <section>` field `field`, as text.
fn info_str(srv: &Server, con: &mut redis::Connection, section: &str, field: &str) -> String {
    srv.info(con, section)
        .get(field)
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        .clone()
}

/// SETs every (key, value) through pipelines of `batch`.
fn set_all(con: &mut redis::Connection, kvs: &[(String, Vec<u8>)], batch: usize) {
    for chunk in kvs.chunks(batch) {
        let mut p = redis::pipe();
        for (k, v) in chunk {
            p.cmd("SET").arg(k).arg(v).ignore();
        }
        p.query::<()>(con).expect("SET pipeline");
    }
}

/// GET of every key (pipelined); an error reply fails the test.
fn get_all(con: &mut redis::Connection, keys: &[&str]) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(250) {
        let mut p = redis::pipe();
        for k in chunk {
            p.cmd("GET").arg(*k);
        }
        let r: Vec<Option<Vec<u8>>> = p.query(con).expect("GET pipeline");
        out.extend(r);
    }
    out
}

/// Asserts that a GET returned `want`, without printing whole values.
fn check_value(key: &str, got: &Option<Vec<u8>>, want: Option<&Vec<u8>>, when: &str) {
    assert!(
        got.as_ref() == want,
        "{key} {when}: found {}, expected {}",
        describe(got),
        describe(&want.cloned())
    );
}

/// Sends SHUTDOWN with `words` on a raw socket: no reply, the connection
/// closes, and the process exits 0.
fn shutdown(srv: &mut Server, words: &str) {
    let mut s = srv.raw();
    let args: Vec<&str> = std::iter::once("SHUTDOWN")
        .chain(words.split(' ').filter(|w| !w.is_empty()))
        .collect();
    let mut req = format!("*{}\r\n", args.len());
    for a in &args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes()).unwrap();
    let rest = read_n(&mut s, 1);
    assert!(
        rest.is_empty(),
        "SHUTDOWN {words} replied {:?}",
        String::from_utf8_lossy(&rest)
    );
    let st = srv.wait_exit(Duration::from_secs(15));
    assert!(st.success(), "SHUTDOWN {words}: exit status {st}");
}

// ---------------------------------------------------------------------------
// kill -9 under load: a model of what was acknowledged.

/// Keys the crash tests write.
const CRASH_KEYS: usize = 2000;
/// Writer threads per cycle.
const WRITERS: u32 = 3;

fn crash_key(i: usize) -> String {
    format!("crash:{i:04}")
}

/// A state of a key: absent, or `value_for(key, gen, len)` (with a TTL of
/// an hour when `ttl`). Every SET writes a fresh `gen`, so a value names
/// the write that produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Absent,
    Value { gen: u32, len: u32, ttl: bool },
}

/// One write of a key as the client saw it.
#[derive(Clone, Debug)]
struct Op {
    st: St,
    /// Logical stamp taken before the request was sent.
    sent: u64,
    /// Logical stamp and time taken after the reply arrived; None = no
    /// reply (in flight when the server died).
    acked: Option<(u64, Instant)>,
    /// The server refused it with an error reply (OOM, MISCONF): not
    /// applied.
    refused: bool,
}

/// What the clients did to every key since the last verified state (the
/// first op of each key, stamped 0).
struct Model {
    keys: Vec<Mutex<Vec<Op>>>,
    /// Orders sends and replies across threads: an op sent after another's
    /// reply arrived was applied after it.
    clock: AtomicU64,
}

impl Model {
    fn new() -> Model {
        Model {
            keys: (0..CRASH_KEYS)
                .map(|_| {
                    Mutex::new(vec![Op {
                        st: St::Absent,
                        sent: 0,
                        acked: Some((0, Instant::now())),
                        refused: false,
                    }])
                })
                .collect(),
            clock: AtomicU64::new(1),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, SeqCst)
    }
}

fn value_of(key: &str, st: St) -> Option<Vec<u8>> {
    match st {
        St::Absent => None,
        St::Value { gen, len, .. } => Some(value_for(key, gen, len as usize)),
    }
}

/// SETs every key once through pipelines (acknowledged writes).
fn preload(srv: &Server, model: &Model) {
    let mut con = srv.client();
    for chunk in (0..CRASH_KEYS).collect::<Vec<_>>().chunks(200) {
        let sent = model.tick();
        let mut p = redis::pipe();
        let mut sts = Vec::new();
        for &k in chunk {
            let key = crash_key(k);
            let st = St::Value {
                gen: k as u32 + 1,
                len: 100 + (k as u32 * 37) % 2900,
                ttl: k % 5 == 0,
            };
            p.cmd("SET").arg(&key).arg(value_of(&key, st).unwrap());
            if k % 5 == 0 {
                p.arg("EX").arg(3600);
            }
            p.ignore();
            sts.push(st);
        }
        p.query::<()>(&mut con).expect("preload");
        let acked = Some((model.tick(), Instant::now()));
        for (&k, st) in chunk.iter().zip(sts) {
            model.keys[k].lock().unwrap().push(Op {
                st,
                sent,
                acked,
                refused: false,
            });
        }
    }
}

#[derive(Default, Debug)]
struct WriterReport {
    acked: u64,
    refused: u64,
    /// Errors other than the connection dying.
    unexpected: Vec<String>,
}

/// SETs (some with EX) and DELs random keys until the connection dies,
/// recording every op in the model before it is sent and its reply after
/// it arrived. From `cold_until` on, only the upper half of the keys is
/// written.
fn writer(port: u16, id: u32, model: Arc<Model>, seed: u64, cold_until: Instant) -> WriterReport {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rep = WriterReport::default();
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut con = client.get_connection().expect("writer connects");
    con.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut counter = 0u32;
    loop {
        let first = if Instant::now() < cold_until {
            0
        } else {
            CRASH_KEYS / 2
        };
        let k = rng.gen_range(first..CRASH_KEYS);
        let key = crash_key(k);
        counter += 1;
        let roll = rng.gen_range(0..100);
        let st = if roll < 15 {
            St::Absent
        } else {
            St::Value {
                gen: id * 1_000_000 + counter,
                len: rng.gen_range(100..=3000),
                ttl: roll < 35,
            }
        };
        let mut cmd = match st {
            St::Absent => redis::cmd("DEL"),
            St::Value { .. } => redis::cmd("SET"),
        };
        cmd.arg(&key);
        if let Some(v) = value_of(&key, st) {
            cmd.arg(v);
        }
        if matches!(st, St::Value { ttl: true, .. }) {
            cmd.arg("EX").arg(3600);
        }
        let idx = {
            let mut ops = model.keys[k].lock().unwrap();
            ops.push(Op {
                st,
                sent: model.tick(),
                acked: None,
                refused: false,
            });
            ops.len() - 1
        };
        match cmd.query::<redis::Value>(&mut con) {
            Ok(_) => {
                let stamp = model.tick();
                model.keys[k].lock().unwrap()[idx].acked = Some((stamp, Instant::now()));
                rep.acked += 1;
            }
            Err(e) if matches!(e.code(), Some("OOM") | Some("MISCONF")) => {
                model.keys[k].lock().unwrap()[idx].refused = true;
                rep.refused += 1;
            }
            Err(e) => {
                if !(e.is_io_error() || e.is_connection_dropped()) {
                    rep.unexpected.push(format!("writer {id}: {e}"));
                }
                return rep;
            }
        }
    }
}

#[derive(Default, Debug)]
struct VerifyReport {
    /// Keys found in the state of their last acknowledged op.
    last_acked: usize,
    /// Keys found in the state of an op that got no reply.
    in_flight: usize,
    /// Keys found in an acknowledged state other than the last one: a
    /// write concurrent with the last one (another connection's, applied
    /// after it), or, with slack, one whose successors were acknowledged
    /// within the slack before the kill and lost.
    older_acked: usize,
    /// Keys that had to hold a value (no allowed state was "absent"): a
    /// server that lost everything fails on each of them.
    must_exist: usize,
    /// Keys that had to be absent (deleted, and no SET could have landed
    /// after): a resurrected value fails on each of them.
    must_be_absent: usize,
    /// The oldest reply among the acknowledged writes that were lost (found
    /// `older_acked`), in ms before the kill.
    max_loss_ms: u128,
}

/// Checks every key after a restart and resets the model to what was
/// found. A key must be in the state of an op that is not superseded: an
/// op is superseded by an acknowledged op sent after its reply arrived
/// (with `slack`, only if that reply came `slack` or more before the
/// kill). Ops without a reply may or may not have landed. Returns the
/// failures.
fn verify(
    srv: &Server,
    model: &Model,
    kill_at: Instant,
    slack: Option<Duration>,
    rep: &mut VerifyReport,
) -> Vec<String> {
    let mut con = srv.client();
    let mut fails = Vec::new();
    let counts = |t: Instant| slack.is_none_or(|s| t + s <= kill_at);
    for chunk in (0..CRASH_KEYS).collect::<Vec<_>>().chunks(250) {
        let mut p = redis::pipe();
        for &k in chunk {
            p.cmd("GET").arg(crash_key(k)).cmd("PTTL").arg(crash_key(k));
        }
        let replies: Vec<redis::Value> = match p.query(&mut con) {
            Ok(r) => r,
            Err(e) => {
                fails.push(format!("GET/PTTL of keys {chunk:?} failed: {e}"));
                continue;
            }
        };
        for (i, &k) in chunk.iter().enumerate() {
            let key = crash_key(k);
            let got: Option<Vec<u8>> = redis::from_redis_value(&replies[2 * i]).unwrap();
            let pttl: i64 = redis::from_redis_value(&replies[2 * i + 1]).unwrap();
            let mut ops = model.keys[k].lock().unwrap();
            match check_key(&key, &ops, &got, pttl, kill_at, &counts, rep) {
                Ok(st) => {
                    *ops = vec![Op {
                        st,
                        sent: 0,
                        acked: Some((0, Instant::now())),
                        refused: false,
                    }]
                }
                Err(e) => fails.push(e),
            }
        }
    }
    fails
}

/// Checks one key's state (`got`, `pttl`) against its ops; returns the
/// state found.
fn check_key(
    key: &str,
    ops: &[Op],
    got: &Option<Vec<u8>>,
    pttl: i64,
    kill_at: Instant,
    counts: &dyn Fn(Instant) -> bool,
    rep: &mut VerifyReport,
) -> Result<St, String> {
    let live: Vec<&Op> = ops.iter().filter(|o| !o.refused).collect();
    // The op that replaced `o` for sure: acknowledged (outside the slack)
    // and sent after `o`'s reply arrived.
    let superseded_by = |o: &Op| -> Option<&Op> {
        let (ack, _) = o.acked?;
        live.iter()
            .copied()
            .filter(|y| y.sent > ack && y.acked.is_some_and(|(_, t)| counts(t)))
            .max_by_key(|y| y.sent)
    };
    let matches = |o: &Op| match (o.st, got) {
        (St::Absent, None) => true,
        (St::Value { gen, len, .. }, Some(v)) => {
            v.len() == len as usize && *v == value_for(key, gen, len as usize)
        }
        _ => false,
    };
    let allowed: Vec<&Op> = live
        .iter()
        .copied()
        .filter(|o| superseded_by(o).is_none())
        .collect();
    let candidates: Vec<&Op> = live.iter().copied().filter(|o| matches(o)).collect();
    let last_acked = live
        .iter()
        .copied()
        .filter(|o| o.acked.is_some())
        .max_by_key(|o| o.acked.unwrap().0);
    // Several DELs match an absent key: take the newest allowed one.
    let Some(op) = candidates
        .iter()
        .copied()
        .filter(|o| superseded_by(o).is_none())
        .max_by_key(|o| (last_acked.is_some_and(|l| std::ptr::eq(l, *o)), o.sent))
    else {
        return Err(match candidates.first() {
            None => format!(
                "{key}: found {} which no write produced; last ops: {:?}",
                describe(got),
                summary(&live[live.len().saturating_sub(8)..])
            ),
            Some(old) => {
                let by = superseded_by(old).unwrap();
                format!(
                    "{key}: found the state of {} but {} was acknowledged after it, {} ms \
                     before the kill; last ops: {:?}",
                    summary(&[old])[0],
                    summary(&[by])[0],
                    kill_at
                        .saturating_duration_since(by.acked.unwrap().1)
                        .as_millis(),
                    summary(&live[live.len().saturating_sub(8)..])
                )
            }
        });
    };
    let ttl_ok = match op.st {
        St::Absent => pttl == -2,
        St::Value { ttl: true, .. } => (1..=3_600_000).contains(&pttl),
        St::Value { ttl: false, .. } => pttl == -1,
    };
    if !ttl_ok {
        return Err(format!("{key}: PTTL {pttl} for {:?}", op.st));
    }
    if op.acked.is_none() {
        rep.in_flight += 1;
    } else if last_acked.is_some_and(|l| std::ptr::eq(l, op)) {
        rep.last_acked += 1;
    } else {
        rep.older_acked += 1;
        // The acknowledged writes after `op` were lost: how old is the
        // oldest of them?
        let lost = live
            .iter()
            .filter(|y| y.sent > op.acked.unwrap().0)
            .filter_map(|y| y.acked)
            .map(|(_, t)| kill_at.saturating_duration_since(t).as_millis())
            .max()
            .unwrap_or(0);
        rep.max_loss_ms = rep.max_loss_ms.max(lost);
    }
    if allowed.iter().all(|o| o.st != St::Absent) {
        rep.must_exist += 1;
    }
    if allowed.iter().all(|o| o.st == St::Absent) {
        rep.must_be_absent += 1;
    }
    Ok(op.st)
}

fn describe(v: &Option<Vec<u8>>) -> String {
    match v {
        None => "no key".into(),
        Some(v) => format!(
            "a value of {} bytes starting {:02x?}",
            v.len(),
            &v[..v.len().min(8)]
        ),
    }
}

/// Ops as `{state} sent@{stamp} acked@{stamp}`.
fn summary(ops: &[&Op]) -> Vec<String> {
    ops.iter()
        .map(|o| {
            format!(
                "{:?} sent@{} {}",
                o.st,
                o.sent,
                match o.acked {
                    Some((s, _)) => format!("acked@{s}"),
                    None => "no reply".into(),
                }
            )
        })
        .collect()
}

/// Runs `cycles` of: writers under load, a BGSAVE, kill -9 after a random
/// delay in `delay_ms`, restart on the same files, verify every key. With
/// `cold_phase`, the lower half of the keys is written only during the
/// first `cold_phase` of a cycle.
fn crash_cycles(
    test: &str,
    args: &[&str],
    cycles: u32,
    delay_ms: std::ops::RangeInclusive<u64>,
    slack: Option<Duration>,
    cold_phase: Option<Duration>,
) {
    let seed = seed(test);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut srv = Server::start(args);
    let model = Arc::new(Model::new());
    preload(&srv, &model);
    let mut total = VerifyReport::default();
    let mut acked = 0;
    for cycle in 0..cycles {
        let cold_until = Instant::now() + cold_phase.unwrap_or(Duration::from_secs(3600));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (port, model, s) = (srv.port, model.clone(), rng.gen());
                let id = cycle * WRITERS + w + 1;
                std::thread::spawn(move || writer(port, id, model, s, cold_until))
            })
            .collect();
        let delay = Duration::from_millis(rng.gen_range(delay_ms.clone()));
        // In odd cycles, a checkpoint at a random moment: the next restarts
        // load it and replay the log after it (or ignore it, if the kill
        // cut it short); the first restart scans the whole log.
        let before_save = delay.mul_f64(rng.gen_range(0.0..1.0));
        if cycle % 2 == 1 {
            std::thread::sleep(before_save);
            let saved = redis::cmd("BGSAVE").query::<String>(&mut srv.client());
            assert!(
                saved
                    .as_ref()
                    .is_ok_and(|r| r == "Background saving started")
                    || saved
                        .as_ref()
                        .is_err_and(|e| e.to_string().contains("in progress")),
                "BGSAVE: {saved:?}"
            );
            std::thread::sleep(delay - before_save);
        } else {
            std::thread::sleep(delay);
        }
        let kill_at = Instant::now();
        srv.kill9();
        let mut reports = Vec::new();
        for w in writers {
            reports.push(w.join().expect("writer panicked"));
        }
        let unexpected: Vec<&String> = reports.iter().flat_map(|r| &r.unexpected).collect();
        assert!(unexpected.is_empty(), "seed {seed}: {unexpected:?}");
        let t0 = Instant::now();
        srv.restart();
        let restart_ms = t0.elapsed().as_millis();
        let mut rep = VerifyReport::default();
        let fails = verify(&srv, &model, kill_at, slack, &mut rep);
        let cycle_acked: u64 = reports.iter().map(|r| r.acked).sum();
        let refused: u64 = reports.iter().map(|r| r.refused).sum();
        eprintln!(
            "{test}: cycle {cycle}: killed after {delay:?} (BGSAVE after {before_save:?} in odd cycles); \
             {cycle_acked} acked, {refused} refused; restart {restart_ms} ms ({}); {rep:?}",
            info_str(&srv, &mut srv.client(), "persistence", "recovery_source")
        );
        assert!(
            fails.is_empty(),
            "{test}, seed {seed}, cycle {cycle} (killed after {delay:?}): {} keys wrong after \
             the restart; first ones:\n{}",
            fails.len(),
            fails
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
        acked += cycle_acked;
        total.last_acked += rep.last_acked;
        total.in_flight += rep.in_flight;
        total.older_acked += rep.older_acked;
        total.must_exist += rep.must_exist;
        total.must_be_absent += rep.must_be_absent;
        total.max_loss_ms = total.max_loss_ms.max(rep.max_loss_ms);
    }
    // The test must be able to fail: many writes were acknowledged and
    // many keys were held to their last acknowledged state.
    assert!(acked >= 100, "only {acked} writes acknowledged");
    assert!(
        total.must_exist >= CRASH_KEYS && total.must_be_absent > 0,
        "too few keys were held to a state: {total:?}"
    );
    eprintln!("{test}: {acked} acked writes in {cycles} cycles; {total:?}");
}

/// With `appendfsync always` a reply is sent only after the fsync: a kill
/// -9 loses nothing acknowledged. Values also move to flash (4 MB of RAM)
/// and small segments make the collector move records between crashes.
#[test]
fn kill_9_under_load_loses_nothing_acknowledged_with_always() {
    crash_cycles(
        "always",
        &[
            "--appendfsync",
            "always",
            "--maxmemory-ram",
            "4mb",
            "--flash-segment-size",
            "1mb",
        ],
        5,
        200..=1200,
        None,
        None,
    );
}

/// With `everysec` a reply does not wait for the log: a crash may lose the
/// writes of the last moments (3 s of slack here, for a loaded 2-core
/// machine; the losses seen are well under a second), never older ones, and
/// never mixes values. Half of the keys are written only in the first
/// 0.5 s of a cycle and the kill comes 3.8 s or more after its start, so
/// those keys are held to their acknowledged state, deletions included (a
/// server that persisted nothing, or resurrected deleted keys, fails).
#[test]
fn kill_9_with_everysec_loses_at_most_the_last_seconds() {
    crash_cycles(
        "everysec",
        // 4.5 MB: values still move to flash, and the server's own RAM
        // (~1.5 MB at start) leaves room for the writes of the cycle's
        // first half second, whose keys the test holds to their state (at
        // 4 MB, 61 KB more of it at start, from ACL users and the script
        // sandbox, turned most of those writes into OOM refusals).
        &["--maxmemory-ram", "4608kb", "--flash-segment-size", "1mb"],
        3,
        3800..=4500,
        Some(Duration::from_secs(3)),
        Some(Duration::from_millis(500)),
    );
}

// ---------------------------------------------------------------------------
// Damaged files.

/// Where a record of `key` holding `value` lies: (segment index, record
/// start, record end).
type Loc = (usize, usize, usize);

/// Finds, by their bytes, the records of the given keys (all of one fixed
/// length, starting with `prefix`) in the segment files; each record is
/// checked with the format's decoder.
fn find_records(
    segs: &[PathBuf],
    prefix: &[u8],
    kvs: &HashMap<Vec<u8>, Vec<u8>>,
) -> HashMap<Vec<u8>, Vec<Loc>> {
    let key_len = kvs.keys().next().unwrap().len();
    assert!(kvs
        .keys()
        .all(|k| k.len() == key_len && k.starts_with(prefix)));
    let mut out: HashMap<Vec<u8>, Vec<Loc>> = HashMap::new();
    for (si, path) in segs.iter().enumerate() {
        let buf = std::fs::read(path).unwrap();
        let mut pos = RECORD_HEADER_LEN;
        while pos + key_len <= buf.len() {
            if buf[pos..].starts_with(prefix) {
                let key = &buf[pos..pos + key_len];
                if let Some(v) = kvs.get(key) {
                    let start = pos - RECORD_HEADER_LEN;
                    if buf[pos + key_len..].starts_with(v) {
                        let rec = decode_record(&buf[start..]).expect("a whole record");
                        assert_eq!((rec.key, rec.value), (key, &v[..]));
                        let end = pos + key_len + v.len();
                        out.entry(key.to_vec()).or_default().push((si, start, end));
                        pos = end;
                        continue;
                    }
                }
            }
            pos += 1;
        }
    }
    out
}

/// A kill -9 leaves the newest segment cut inside a record: restart drops
/// that record and what follows it (the torn tail), keeps everything
/// before it exactly, and takes new writes that survive another crash.
#[test]
fn torn_tail_of_the_newest_segment_is_dropped_and_the_server_starts() {
    let seed = seed("torn_tail");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut srv = Server::start(&["--appendfsync", "always", "--flash-segment-size", "1mb"]);
    let mut con = srv.client();
    let kvs: Vec<(String, Vec<u8>)> = (0..3000)
        .map(|i| {
            let k = format!("torn:{i:05}");
            let v = value_for(&k, 1, rng.gen_range(300..1500));
            (k, v)
        })
        .collect();
    // appendfsync always: every acknowledged SET is in the log.
    set_all(&mut con, &kvs, 100);
    srv.kill9();

    let segs = srv.segments();
    assert!(segs.len() >= 2, "expected several segments, got {segs:?}");
    let map: HashMap<Vec<u8>, Vec<u8>> = kvs
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.clone()))
        .collect();
    let locs = find_records(&segs, b"torn:", &map);
    for (k, _) in &kvs {
        let l = locs.get(k.as_bytes()).map_or(0, Vec::len);
        assert_eq!(l, 1, "{k}: {l} records in the log (expected exactly one)");
    }
    let newest = segs.len() - 1;
    let in_newest: Vec<&(String, Vec<u8>)> = kvs
        .iter()
        .filter(|(k, _)| locs[k.as_bytes()][0].0 == newest)
        .collect();
    assert!(!in_newest.is_empty());
    let (victim, _) = in_newest[rng.gen_range(0..in_newest.len())];
    let (_, start, end) = locs[victim.as_bytes()][0];
    let cut = rng.gen_range(start + 1..end) as u64;
    assert!(cut >= 4096);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segs[newest])
        .unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(cut).unwrap();
    drop(file);
    eprintln!(
        "torn_tail: {} cut from {len} to {cut} bytes, inside the record of {victim} at {start}",
        segs[newest].display()
    );

    srv.restart();
    let mut con = srv.client();
    // Present exactly when the whole record is before the cut record.
    let expected: Vec<Option<&Vec<u8>>> = kvs
        .iter()
        .map(|(k, v)| {
            let (si, _, e) = locs[k.as_bytes()][0];
            (si < newest || e <= start).then_some(v)
        })
        .collect();
    let keys: Vec<&str> = kvs.iter().map(|(k, _)| k.as_str()).collect();
    let got = get_all(&mut con, &keys);
    for (i, (k, _)) in kvs.iter().enumerate() {
        check_value(k, &got[i], expected[i], "after the torn-tail restart");
    }
    let present = expected.iter().filter(|e| e.is_some()).count();
    assert!(present > 0 && present < kvs.len());
    assert_eq!(q::<usize>(&mut con, "DBSIZE"), present);
    assert_eq!(
        srv.info_u64(&mut con, "persistence", "recovery_torn_tail_bytes"),
        cut - start as u64,
        "the torn tail is the cut record"
    );

    // New writes work and survive another crash (the cut segment is now
    // an old one).
    let more: Vec<(String, Vec<u8>)> = (0..500)
        .map(|i| {
            let k = format!("more:{i:05}");
            let v = value_for(&k, 2, rng.gen_range(300..1500));
            (k, v)
        })
        .collect();
    set_all(&mut con, &more, 100);
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    let got = get_all(&mut con, &keys);
    for (i, (k, _)) in kvs.iter().enumerate() {
        check_value(k, &got[i], expected[i], "after the second restart");
    }
    let more_keys: Vec<&str> = more.iter().map(|(k, _)| k.as_str()).collect();
    let got = get_all(&mut con, &more_keys);
    for (i, (k, v)) in more.iter().enumerate() {
        check_value(k, &got[i], Some(v), "written after the torn tail");
    }
    assert_eq!(q::<usize>(&mut con, "DBSIZE"), present + more.len());
}

/// One flipped bit inside a value's record that the checkpoint covers:
/// restart serves an error for that key only, counts a read error, and
/// every other key is exact.
#[test]
fn flipped_bit_in_an_old_record_is_an_error_for_that_key_only() {
    let seed = seed("flipped_bit");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut srv = Server::start(&["--appendfsync", "always"]);
    let mut con = srv.client();
    let kvs: Vec<(String, Vec<u8>)> = (0..1000)
        .map(|i| {
            let k = format!("flip:{i:05}");
            let v = value_for(&k, 7, rng.gen_range(200..2000));
            (k, v)
        })
        .collect();
    set_all(&mut con, &kvs, 100);
    assert_eq!(q::<String>(&mut con, "SAVE"), "OK");
    shutdown(&mut srv, "NOSAVE");

    let segs = srv.segments();
    let map: HashMap<Vec<u8>, Vec<u8>> = kvs
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.clone()))
        .collect();
    let locs = find_records(&segs, b"flip:", &map);
    let vi = rng.gen_range(0..kvs.len());
    let (victim, value) = &kvs[vi];
    let l = &locs[victim.as_bytes()];
    assert_eq!(l.len(), 1, "{victim}: one record expected");
    let (si, start, _) = l[0];
    let at = start + RECORD_HEADER_LEN + victim.len() + rng.gen_range(0..value.len());
    let mut bytes = std::fs::read(&segs[si]).unwrap();
    bytes[at] ^= 1 << rng.gen_range(0..8);
    std::fs::write(&segs[si], &bytes).unwrap();
    eprintln!(
        "flipped_bit: flipped a bit of {victim}'s value at offset {at} of {}",
        segs[si].display()
    );

    srv.restart();
    let mut con = srv.client();
    assert_eq!(
        info_str(&srv, &mut con, "persistence", "recovery_source"),
        "checkpoint"
    );
    for _ in 0..2 {
        let mut raw = srv.raw();
        let reply = roundtrip(
            &mut raw,
            format!("*2\r\n$3\r\nGET\r\n${}\r\n{victim}\r\n", victim.len()).as_bytes(),
            5,
        );
        let line = String::from_utf8_lossy(&reply);
        assert!(
            line.starts_with("-ERR flash read failed"),
            "GET {victim} (flipped bit, seed {seed}) replied {line:?}"
        );
    }
    let keys: Vec<&str> = kvs
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| k != victim)
        .collect();
    let got = get_all(&mut con, &keys);
    for (i, k) in keys.iter().enumerate() {
        check_value(k, &got[i], map.get(k.as_bytes()), "next to the flipped bit");
    }
    assert!(srv.info_u64(&mut con, "tiered", "flash_read_errors") >= 1);
    // The key itself can be written again.
    let _: () = redis::cmd("SET")
        .arg(victim)
        .arg("fresh")
        .query(&mut con)
        .unwrap();
    assert_eq!(q::<String>(&mut con, &format!("GET {victim}")), "fresh");
    assert!(srv.alive());
}

// ---------------------------------------------------------------------------
// Clean shutdowns.

/// Every key of every database: value and PTTL.
type Snapshot = BTreeMap<(usize, Vec<u8>), (Vec<u8>, i64)>;

fn snapshot(srv: &Server) -> Snapshot {
    let mut con = srv.client();
    let mut snap = Snapshot::new();
    for db in 0..16 {
        let _: () = redis::cmd("SELECT").arg(db).query(&mut con).unwrap();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
        assert_eq!(q::<usize>(&mut con, "DBSIZE"), keys.len(), "db {db}");
        for chunk in keys.chunks(200) {
            let mut p = redis::pipe();
            for k in chunk {
                p.cmd("GET").arg(k).cmd("PTTL").arg(k);
            }
            let r: Vec<redis::Value> = p.query(&mut con).unwrap();
            for (i, k) in chunk.iter().enumerate() {
                let v: Vec<u8> = redis::from_redis_value(&r[2 * i]).unwrap();
                let t: i64 = redis::from_redis_value(&r[2 * i + 1]).unwrap();
                snap.insert((db, k.clone()), (v, t));
            }
        }
    }
    snap
}

/// Same keys and values; TTLs kept (at most `elapsed` + 2 s shorter).
fn assert_same(before: &Snapshot, after: &Snapshot, elapsed: Duration, what: &str) {
    let keys = |s: &Snapshot| s.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(before), keys(after), "{what}: key sets differ");
    for (k, (v, t)) in before {
        let (v2, t2) = &after[k];
        assert!(
            v == v2,
            "{what}: db {} key {:?}: value differs",
            k.0,
            String::from_utf8_lossy(&k.1)
        );
        let ok = if *t < 0 {
            t2 == t
        } else {
            *t2 > 0 && t2 <= t && *t2 >= t - elapsed.as_millis() as i64 - 2000
        };
        assert!(
            ok,
            "{what}: db {} key {:?}: PTTL {t} before, {t2} after",
            k.0,
            String::from_utf8_lossy(&k.1)
        );
    }
}

/// Runs one command (arguments of any type) and fails the test on an error.
macro_rules! run {
    ($con:expr, $($a:expr),+ $(,)?) => {{
        let mut c = redis::Cmd::new();
        $(c.arg($a);)+
        c.query::<redis::Value>($con)
            .unwrap_or_else(|e| panic!("command failed: {e}"))
    }};
}

/// Writes in several databases: values of many sizes, TTLs, FLUSHDB,
/// RENAME, EXPIRE, PERSIST, DEL. `round` makes the keys and values new.
fn mutate(srv: &Server, round: u32) {
    let mut con = srv.client();
    let con = &mut con;
    for db in [0usize, 1, 2, 5] {
        run!(con, "SELECT", db);
        for i in 0..150u32 {
            let k = format!("r{round}:k{i}");
            let len = [10usize, 100, 1000, 8000][i as usize % 4];
            let v = value_for(&k, round * 100 + db as u32, len);
            match i % 3 {
                0 => run!(con, "SET", &k, v),
                1 => run!(con, "SET", &k, v, "EX", 1000 + i),
                _ => run!(con, "SET", &k, v, "PX", 2_000_000 + i),
            };
        }
        for i in (0..150u32).step_by(10) {
            run!(con, "DEL", format!("r{round}:k{i}"));
            run!(
                con,
                "RENAME",
                format!("r{round}:k{}", i + 1),
                format!("r{round}:renamed{i}")
            );
            run!(con, "EXPIRE", format!("r{round}:k{}", i + 3), 500 + i);
            run!(con, "PERSIST", format!("r{round}:k{}", i + 4));
        }
    }
    // One database flushed, then written again (the flush must not eat
    // the later key).
    run!(con, "SELECT", 1);
    run!(con, "FLUSHDB");
    run!(con, "SET", format!("r{round}:after-flush"), "x");
}

/// SIGTERM and SHUTDOWN checkpoint and exit 0; SHUTDOWN NOSAVE with
/// appendonly yes keeps everything through the log. Each restart brings
/// back the same keys, values, TTLs and database sizes.
#[test]
fn sigterm_and_shutdown_save_restore_everything_and_checkpoint() {
    let mut srv = Server::start(&["--maxmemory-ram", "4mb"]);
    mutate(&srv, 1);
    let before = snapshot(&srv);
    assert!(before.len() > 400);
    assert_eq!(
        before.keys().filter(|(db, _)| *db == 1).count(),
        1,
        "db 1 after FLUSHDB"
    );
    let t = Instant::now();
    srv.sigterm();
    let st = srv.wait_exit(Duration::from_secs(10));
    assert!(st.success(), "SIGTERM: exit status {st}");
    srv.restart();
    assert_same(&before, &snapshot(&srv), t.elapsed(), "after SIGTERM");
    let mut con = srv.client();
    assert_eq!(
        info_str(&srv, &mut con, "persistence", "recovery_source"),
        "checkpoint"
    );
    assert_eq!(
        srv.info_u64(&mut con, "persistence", "recovery_keys"),
        before.len() as u64
    );

    mutate(&srv, 2);
    let before = snapshot(&srv);
    let t = Instant::now();
    shutdown(&mut srv, "");
    srv.restart();
    assert_same(&before, &snapshot(&srv), t.elapsed(), "after SHUTDOWN");
    let mut con = srv.client();
    assert_eq!(
        info_str(&srv, &mut con, "persistence", "recovery_source"),
        "checkpoint"
    );

    // NOSAVE: no new checkpoint; round 3 comes back from the log.
    mutate(&srv, 3);
    let before = snapshot(&srv);
    let t = Instant::now();
    shutdown(&mut srv, "NOSAVE");
    srv.restart();
    assert_same(
        &before,
        &snapshot(&srv),
        t.elapsed(),
        "after SHUTDOWN NOSAVE",
    );
    let mut con = srv.client();
    assert!(srv.info_u64(&mut con, "persistence", "recovery_records_replayed") >= 400);
}

/// appendonly no: a clean shutdown keeps the data, a crash discards it.
#[test]
fn appendonly_no_crash_discards_but_clean_shutdown_keeps() {
    let mut srv = Server::start(&["--appendonly", "no", "--maxmemory-ram", "4mb"]);
    mutate(&srv, 1);
    let before = snapshot(&srv);
    let t = Instant::now();
    shutdown(&mut srv, "");
    srv.restart();
    assert_same(
        &before,
        &snapshot(&srv),
        t.elapsed(),
        "appendonly no, after SHUTDOWN",
    );
    let mut con = srv.client();
    assert_eq!(info_str(&srv, &mut con, "persistence", "aof_enabled"), "0");

    mutate(&srv, 2);
    srv.kill9();
    srv.restart();
    assert!(
        snapshot(&srv).is_empty(),
        "appendonly no: a crash keeps nothing"
    );
    let mut con = srv.client();
    assert_eq!(
        info_str(&srv, &mut con, "persistence", "recovery_source"),
        "discarded"
    );
}

// ---------------------------------------------------------------------------
// Commands and INFO.

#[test]
fn save_bgsave_lastsave_and_info_persistence() {
    let srv = Server::start(&[]);
    let mut con = srv.client();
    let info = srv.info(&mut con, "persistence");
    assert_eq!(info["aof_enabled"], "1");
    assert_eq!(info["aof_fsync"], "everysec");
    assert_eq!(info["loading"], "0");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendfsync")
        .arg("always")
        .query(&mut con)
        .unwrap();
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendfsync")
        .query(&mut con)
        .unwrap();
    assert_eq!(got, ["appendfsync", "always"]);
    assert_eq!(
        info_str(&srv, &mut con, "persistence", "aof_fsync"),
        "always"
    );

    // With appendfsync always every acknowledged value is in the log, so
    // the checkpoint holds all of them (tiny, medium and large values).
    let kvs: Vec<(String, Vec<u8>)> = (0..300)
        .map(|i| {
            let k = format!("save:{i}");
            let v = value_for(&k, 1, [5usize, 100, 5000][i % 3]);
            (k, v)
        })
        .collect();
    set_all(&mut con, &kvs, 50);
    let t0 = unix_secs();
    assert_eq!(q::<String>(&mut con, "SAVE"), "OK");
    assert!(q::<u64>(&mut con, "LASTSAVE") >= t0);
    let info = srv.info(&mut con, "persistence");
    assert!(info["rdb_last_save_time"].parse::<u64>().unwrap() >= t0);
    assert!(info["rdb_saves"].parse::<u64>().unwrap() >= 1);
    assert_eq!(info["rdb_last_bgsave_status"], "ok");
    assert_eq!(info["aof_last_write_status"], "ok");
    assert_eq!(info["log_status"], "ok");
    assert_eq!(info["last_checkpoint_keys"], kvs.len().to_string());
    assert!(info["journal_records"].parse::<u64>().unwrap() >= kvs.len() as u64);
    assert!(info["journal_fsyncs"].parse::<u64>().unwrap() >= 1);
    let saves = info["rdb_saves"].parse::<u64>().unwrap();

    assert_eq!(q::<String>(&mut con, "BGSAVE"), "Background saving started");
    wait_until("the BGSAVE to finish", || {
        let i = srv.info(&mut con, "persistence");
        i["rdb_bgsave_in_progress"] == "0" && i["rdb_saves"].parse::<u64>().unwrap() > saves
    });
    let info = srv.info(&mut con, "persistence");
    assert_eq!(info["rdb_last_bgsave_status"], "ok");
    assert_eq!(info["last_checkpoint_keys"], kvs.len().to_string());
    assert!(q::<u64>(&mut con, "LASTSAVE") >= t0);
}

/// A restart that replays a long log (300k keys, no checkpoint) answers
/// -LOADING until recovery is done, then PONG; INFO works meanwhile and
/// says loading:1.
#[test]
fn loading_replies_loading_until_recovery_is_done() {
    const N: usize = 300_000;
    let mut srv = Server::start(&[]);
    let mut con = srv.client();
    for b in 0..N / 2000 {
        let mut p = redis::pipe();
        for i in b * 2000..(b + 1) * 2000 {
            p.cmd("SET").arg(format!("l:{i}")).arg(i).ignore();
        }
        p.query::<()>(&mut con).unwrap();
    }
    drop(con);
    // No checkpoint: the restart scans the whole log.
    shutdown(&mut srv, "NOSAVE");
    srv.restart_no_wait();
    let t0 = Instant::now();
    let mut s = loop {
        match std::net::TcpStream::connect(("127.0.0.1", srv.port)) {
            Ok(s) => break s,
            Err(_) => {
                assert!(srv.alive(), "the server exited while starting");
                assert!(t0.elapsed() < Duration::from_secs(20), "no listener");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut loading = 0;
    let mut info_loading = None;
    loop {
        s.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
        let line = read_line(&mut s);
        if line == "+PONG" {
            break;
        }
        assert!(
            line.starts_with("-LOADING "),
            "PING while loading: {line:?}"
        );
        loading += 1;
        if info_loading.as_deref() != Some("1") {
            s.write_all(b"*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n")
                .unwrap();
            let head = read_line(&mut s);
            let len: usize = head.strip_prefix('$').expect("bulk INFO").parse().unwrap();
            let body = read_exact_n(&mut s, len + 2);
            let text = String::from_utf8_lossy(&body).into_owned();
            info_loading = text
                .lines()
                .find_map(|l| l.strip_prefix("loading:"))
                .map(|v| v.trim().to_string());
        }
        assert!(t0.elapsed() < Duration::from_secs(25), "still loading");
    }
    let mut con = srv.client();
    let info = srv.info(&mut con, "persistence");
    eprintln!(
        "loading: {loading} LOADING replies, INFO said loading:{info_loading:?}; recovery took \
         {} ms ({} records)",
        info["recovery_duration_ms"], info["recovery_records_replayed"]
    );
    assert_eq!(info["loading"], "0");
    assert_eq!(info["recovery_source"], "log_scan");
    assert_eq!(info["recovery_keys"], N.to_string());
    assert_eq!(q::<usize>(&mut con, "DBSIZE"), N);
    assert_eq!(q::<String>(&mut con, "GET l:12345"), "12345");
    // Seen on this machine: recovery of 300k keys takes far longer than
    // the time from listening to the first PING.
    assert!(loading > 0, "never saw -LOADING");
    assert_eq!(
        info_loading.as_deref(),
        Some("1"),
        "INFO persistence while loading"
    );
}

/// One `\r\n`-terminated line (without it).
fn read_line(s: &mut std::net::TcpStream) -> String {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while !out.ends_with(b"\r\n") {
        match s.read(&mut b) {
            Ok(1) => out.push(b[0]),
            r => panic!("connection ended while reading a line: {r:?}"),
        }
    }
    out.truncate(out.len() - 2);
    String::from_utf8_lossy(&out).into_owned()
}

fn read_exact_n(s: &mut std::net::TcpStream, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    s.read_exact(&mut v).unwrap();
    v
}
