//! End-to-end tests against a tiny in-test server (RESP or memcached text):
//! request and pipeline accounting, `--verify`, `allkeys`, open loop, error
//! counting, `INFO tiered` deltas and the binary's exit code and JSON.

use std::collections::HashMap;
use std::net::TcpListener as StdListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use strata_bench::{execute, Options};
use strata_protocol::{decode_request, write_bulk, write_error, write_null, Limits, Version};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Default)]
struct Behaviour {
    /// GETs of this key return the stored value with its first byte flipped.
    corrupt_key: Option<Vec<u8>>,
    /// SETs get `-ERR` instead of `+OK`.
    fail_sets: bool,
    /// Pause before answering each batch (makes pipelining observable).
    delay: Duration,
    /// Speak memcached text instead of RESP.
    memcache: bool,
}

#[derive(Default)]
struct Log {
    /// Requests received per connection (index = accept order).
    requests: Vec<u64>,
    /// Most requests received-but-unanswered per connection.
    max_pending: Vec<usize>,
    store: HashMap<Vec<u8>, Vec<u8>>,
    info_calls: u64,
}

struct Fake {
    port: u16,
    log: Arc<Mutex<Log>>,
}

fn start(b: Behaviour) -> Fake {
    let std = StdListener::bind("127.0.0.1:0").unwrap();
    std.set_nonblocking(true).unwrap();
    let port = std.local_addr().unwrap().port();
    let log: Arc<Mutex<Log>> = Arc::default();
    let l2 = log.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::from_std(std).unwrap();
            loop {
                let (sock, _) = listener.accept().await.unwrap();
                let id = {
                    let mut l = l2.lock().unwrap();
                    l.requests.push(0);
                    l.max_pending.push(0);
                    l.requests.len() - 1
                };
                let (b, log) = (b.clone(), l2.clone());
                tokio::spawn(async move {
                    let _ = serve(sock, id, b, log).await;
                });
            }
        });
    });
    Fake { port, log }
}

type Req = Vec<Vec<u8>>;

/// Parses memcached text requests: `get <k>` and `set <k> f e <n>\r\n<data>`.
fn decode_memcache(buf: &mut BytesMut) -> Option<Req> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = String::from_utf8_lossy(&buf[..end]).into_owned();
    let parts: Vec<&str> = line.split(' ').collect();
    if parts[0] == "set" {
        let n: usize = parts[4].parse().unwrap();
        if buf.len() < end + 2 + n + 2 {
            return None;
        }
        let data = buf[end + 2..end + 2 + n].to_vec();
        buf.advance(end + 2 + n + 2);
        return Some(vec![b"SET".to_vec(), parts[1].as_bytes().to_vec(), data]);
    }
    buf.advance(end + 2);
    Some(vec![b"GET".to_vec(), parts[1].as_bytes().to_vec()])
}

async fn serve(
    mut sock: TcpStream,
    id: usize,
    b: Behaviour,
    log: Arc<Mutex<Log>>,
) -> std::io::Result<()> {
    let limits = Limits::default();
    let mut buf = BytesMut::new();
    loop {
        buf.reserve(64 * 1024);
        if sock.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
        let mut reqs: Vec<Req> = Vec::new();
        loop {
            let r = if b.memcache {
                decode_memcache(&mut buf)
            } else {
                decode_request(&mut buf, &limits)
                    .unwrap()
                    .map(|v| v.iter().map(|a| a.to_vec()).collect())
            };
            match r {
                Some(r) => reqs.push(r),
                None => break,
            }
        }
        if reqs.is_empty() {
            continue;
        }
        if !b.delay.is_zero() {
            tokio::time::sleep(b.delay).await;
        }
        let mut out = BytesMut::new();
        {
            let mut l = log.lock().unwrap();
            l.requests[id] += reqs.len() as u64;
            l.max_pending[id] = l.max_pending[id].max(reqs.len());
            for r in &reqs {
                reply(r, &b, &mut l, &mut out);
            }
        }
        sock.write_all(&out).await?;
    }
}

fn reply(r: &Req, b: &Behaviour, l: &mut Log, out: &mut BytesMut) {
    let cmd = r[0].to_ascii_uppercase();
    match (&cmd[..], b.memcache) {
        (b"SET", _) if b.fail_sets => write_error(out, b"ERR nope"),
        (b"SET", mc) => {
            l.store.insert(r[1].clone(), r[2].clone());
            out.extend_from_slice(if mc { b"STORED\r\n" } else { b"+OK\r\n" });
        }
        (b"GET", mc) => match l.store.get(&r[1]) {
            Some(v) => {
                let mut v = v.clone();
                if b.corrupt_key.as_deref() == Some(&r[1][..]) {
                    v[0] ^= 0xff;
                }
                if mc {
                    out.extend_from_slice(
                        format!("VALUE {} 0 {}\r\n", String::from_utf8_lossy(&r[1]), v.len())
                            .as_bytes(),
                    );
                    out.extend_from_slice(&v);
                    out.extend_from_slice(b"\r\nEND\r\n");
                } else {
                    write_bulk(out, &v);
                }
            }
            None if mc => out.extend_from_slice(b"END\r\n"),
            None => write_null(out, Version::Resp2),
        },
        (b"INFO", _) => {
            l.info_calls += 1;
            let c = l.info_calls;
            let body = format!(
                "# Tiered\r\ntiered_ram_hits:{}\r\ntiered_ram_misses:{}\r\ntiered_total_fetches:{}\r\nflash_bytes_written:{}\r\n",
                300 * c,
                100 * c,
                100 * c,
                4096 * c
            );
            write_bulk(out, body.as_bytes());
        }
        _ => out.extend_from_slice(b"+OK\r\n"),
    }
}

fn opts(port: u16, extra: &str) -> Options {
    let line = format!("strata-bench -s 127.0.0.1 -p {port} --hide-histogram {extra}");
    let o = Options::parse_from_args(line.split_whitespace()).unwrap();
    o.validate().unwrap();
    o
}

#[test]
fn pipeline_and_connection_accounting() {
    let f = start(Behaviour {
        delay: Duration::from_millis(2),
        ..Behaviour::default()
    });
    let out = execute(&opts(
        f.port,
        "-c 3 -t 2 --pipeline 4 -n 100 --ratio 1:1 --key-maximum 999",
    ));
    let r = &out.aggregate;
    assert_eq!(r.totals.count, 600);
    assert_eq!((r.sets.count, r.gets.count), (300, 300));
    assert_eq!((r.errors, r.connection_errors, r.connections), (0, 0, 6));
    let l = f.log.lock().unwrap();
    // 6 benchmark connections, plus the two INFO probes.
    let bench: Vec<usize> = (0..l.requests.len())
        .filter(|&i| l.requests[i] != 1)
        .collect();
    assert_eq!(bench.len(), 6, "{:?}", l.requests);
    assert_eq!(bench.iter().map(|&i| l.requests[i]).sum::<u64>(), 600);
    assert!(bench.iter().all(|&i| l.requests[i] == 100));
    assert!(l.max_pending.iter().all(|&m| m <= 4), "{:?}", l.max_pending);
    assert!(
        bench.iter().any(|&i| l.max_pending[i] == 4),
        "{:?}",
        l.max_pending
    );
    // The fake speaks INFO tiered, so the run reports its deltas.
    let t = r.tiered.as_ref().expect("tiered figures");
    assert_eq!(t.ram_hit_ratio, Some(0.75));
    assert_eq!(t.flash_reads, 100);
    assert!(t.flash_reads_per_sec > 0.0 && t.flash_bytes_written_per_sec > 0.0);
    assert!(out.text.contains("RAM hit ratio 0.7500"));
}

#[test]
fn verify_catches_a_corrupted_value() {
    let f = start(Behaviour {
        corrupt_key: Some(b"memtier-7".to_vec()),
        ..Behaviour::default()
    });
    // S:S with 1:1: set k, get k, set k+1, get k+1 ... over 100 keys.
    let out = execute(&opts(
        f.port,
        "-t 1 -c 1 --ratio 1:1 --key-pattern S:S --key-maximum 99 -n 200 -d 100 --verify",
    ));
    let r = &out.aggregate;
    assert_eq!(r.gets.count, 100);
    assert_eq!(out.stats[0].gets.hits, 100);
    assert_eq!(r.verify_errors, 1);
    assert_eq!(r.errors, 0);
    assert!(r.first_error.as_deref().unwrap().contains("memtier-7"));
    // The stored values are the key-derived ones.
    let l = f.log.lock().unwrap();
    let mut want = Vec::new();
    strata_bench::workload::value_for_key(b"memtier-42", 100, &mut want);
    assert_eq!(l.store.get(&b"memtier-42"[..]), Some(&want));
}

#[test]
fn verify_misses_are_not_errors() {
    let f = start(Behaviour::default());
    let out = execute(&opts(
        f.port,
        "-t 1 -c 2 --ratio 0:1 --key-maximum 99 -n 50 --verify",
    ));
    let r = &out.aggregate;
    assert_eq!(out.stats[0].gets.misses, 100);
    assert_eq!((r.verify_errors, r.errors), (0, 0));
}

#[test]
fn memcache_text_protocol_with_verify() {
    let f = start(Behaviour {
        memcache: true,
        corrupt_key: Some(b"memtier-3".to_vec()),
        ..Behaviour::default()
    });
    let out = execute(&opts(
        f.port,
        "-P memcache_text -t 1 -c 1 --pipeline 3 --ratio 1:1 --key-pattern S:S --key-maximum 9 -n 40 -d 33 --verify",
    ));
    let r = &out.aggregate;
    assert_eq!(r.totals.count, 40);
    assert_eq!(out.stats[0].gets.hits, 20);
    // Keys 0..=9 are each read twice; memtier-3 is corrupted both times.
    assert_eq!(r.verify_errors, 2);
    assert_eq!((r.errors, r.connection_errors), (0, 0));
    assert!(r.tiered.is_none());
}

#[test]
fn allkeys_sets_every_key_once() {
    let f = start(Behaviour::default());
    let out = execute(&opts(
        f.port,
        "-t 2 -c 3 -n allkeys --key-minimum 1 --key-maximum 1000 --ratio 1:10",
    ));
    let r = &out.aggregate;
    assert_eq!((r.sets.count, r.gets.count), (1000, 0));
    let l = f.log.lock().unwrap();
    assert_eq!(l.store.len(), 1000);
    assert!(l.store.contains_key(&b"memtier-1"[..]) && l.store.contains_key(&b"memtier-1000"[..]));
}

#[test]
fn open_loop_rate_is_respected() {
    let f = start(Behaviour::default());
    let out = execute(&opts(
        f.port,
        "-t 1 -c 2 --rate 400 --test-time 1 --ratio 1:1 --key-maximum 99",
    ));
    let n = out.aggregate.totals.count;
    assert!((340..=420).contains(&n), "{n} requests at 400/s for 1 s");
    assert_eq!(out.aggregate.errors, 0);
    // Timer granularity is not charged to the server.
    assert!(
        out.aggregate.totals.avg_latency_ms < 5.0,
        "{:?}",
        out.aggregate.totals
    );
}

#[test]
fn open_loop_corrects_coordinated_omission() {
    // 20 requests due every 10 ms; the server takes 20 ms each, so they
    // queue: the last one is due at 190 ms but answered at about 400 ms.
    let f = start(Behaviour {
        delay: Duration::from_millis(20),
        ..Behaviour::default()
    });
    let out = execute(&opts(
        f.port,
        "-t 1 -c 1 --rate 100 -n 20 --ratio 0:1 --key-maximum 9",
    ));
    let t = &out.aggregate.totals;
    assert_eq!(t.count, 20);
    assert!(t.max_latency_ms > 150.0, "{t:?}");
    assert!(t.p50_latency_ms > 60.0, "{t:?}");
}

#[test]
fn server_errors_are_counted() {
    let f = start(Behaviour {
        fail_sets: true,
        ..Behaviour::default()
    });
    let out = execute(&opts(f.port, "-t 1 -c 2 --ratio 1:1 -n 10 --key-maximum 9"));
    let r = &out.aggregate;
    assert_eq!(r.totals.count, 20);
    assert_eq!(r.errors, 10);
    assert!(!out.connection_failed());
    assert!(r.first_error.as_deref().unwrap().contains("ERR nope"));
}

fn free_port() -> u16 {
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn connection_refused_is_reported() {
    let port = free_port();
    let out = execute(&opts(port, "-t 2 -c 2 -n 10"));
    assert_eq!(out.aggregate.connection_errors, 4);
    assert_eq!(out.aggregate.totals.count, 0);
    assert!(out.connection_failed());
    assert!(out.text.contains("connection errors: 4"));
}

#[test]
fn binary_exit_code_and_json() {
    let bin = env!("CARGO_BIN_EXE_strata-bench");
    let dir = std::env::temp_dir().join(format!("strata-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let text = dir.join("out.txt");

    let port = free_port();
    let st = std::process::Command::new(bin)
        .args(["-p", &port.to_string(), "-t", "1", "-c", "1", "-n", "5"])
        .output()
        .unwrap();
    assert!(!st.status.success());

    let f = start(Behaviour::default());
    let st = std::process::Command::new(bin)
        .args(["-p", &f.port.to_string(), "-t", "1", "-c", "2", "-n", "50"])
        .args([
            "--run-count",
            "2",
            "--json-out-file",
            json.to_str().unwrap(),
        ])
        .args(["--out-file", text.to_str().unwrap(), "--key-pattern", "Z:G"])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(v["configuration"]["clients"], 2);
    assert_eq!(v["configuration"]["key_pattern"], "Z:G");
    assert_eq!(v["configuration"]["ratio"], "1:10");
    assert_eq!(v["configuration"]["requests"], 50);
    assert_eq!(v["aggregate"]["totals"]["count"], 200);
    assert!(v["runs"][0]["gets"]["percentiles_ms"]["p99.900"].is_number());
    assert!(v["runs"][1]["tiered"]["ram_hit_ratio"].is_number());
    let t = std::fs::read_to_string(&text).unwrap();
    assert!(t.contains("BEST RUN RESULTS") && t.contains("AGGREGATED AVERAGE RESULTS (2 runs)"));
    let _ = std::fs::remove_dir_all(&dir);
}
