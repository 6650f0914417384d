//! Every byte counted (issue 46, point 4): INFO's device bytes are the
//! bytes the segment and checkpoint files hold, split by writer; the
//! client bytes are exactly the arguments of the writes that ran (RESP) and
//! the keys and data stored (memcached); the write amplification is the
//! one divided by the other.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};

/// Bytes the segment files and the checkpoint file hold.
fn file_bytes(dir: &std::path::Path) -> (u64, u64) {
    let (mut segments, mut checkpoint) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let len = e.metadata().unwrap().len();
        if name.starts_with("seg-") && name.ends_with(".log") {
            segments += len;
        } else if name == "checkpoint" {
            checkpoint += len;
        }
    }
    (segments, checkpoint)
}

#[test]
fn with_the_journal_device_bytes_match_the_files_and_client_bytes_the_writes() {
    let t = writes_counted("yes");
    assert!(t["flash_journal_device_bytes"].parse::<u64>().unwrap() > 0);
}

#[test]
fn without_the_journal_device_bytes_match_the_files_and_client_bytes_the_writes() {
    let t = writes_counted("no");
    assert_eq!(t["flash_journal_device_bytes"], "0");
    assert!(t["flash_demotion_device_bytes"].parse::<u64>().unwrap() > 0);
}

/// The writes below with `appendonly` as given, a small RAM budget (values
/// leave RAM) and no collector move (no segment is freed, so the files
/// hold every byte written); checks the counts and returns INFO tiered.
fn writes_counted(appendonly: &str) -> std::collections::HashMap<String, String> {
    let srv = Server::start(&[
        "--maxmemory-ram",
        "4mb",
        "--appendonly",
        appendonly,
        "--flash-gc-garbage-ratio",
        "1000",
    ]);
    let mut con = srv.client();
    let mut client = 0u64;
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        let (k, v) = (format!("k:{i}"), vec![b'a' + (i % 26) as u8; 2000]);
        client += (k.len() + v.len()) as u64;
        pipe.set(k, v).ignore();
    }
    for i in 0..300 {
        let (f, v) = (format!("f:{i}"), format!("{i:0>100}"));
        client += ("h".len() + f.len() + v.len()) as u64;
        pipe.hset("h", f, &v).ignore();
        client += ("l".len() + v.len()) as u64;
        pipe.rpush("l", format!("{i:0>100}")).ignore();
    }
    // Writes that fail write nothing and count nothing.
    pipe.cmd("INCR").arg("h").ignore();
    let _: () = pipe.query(&mut con).unwrap_or(());
    // memcached stores: key and data.
    let mut mc = std::net::TcpStream::connect(("127.0.0.1", srv.mc_port)).unwrap();
    let mut lines = BufReader::new(mc.try_clone().unwrap());
    for i in 0..200 {
        let (k, data) = (format!("mc:{i}"), vec![b'm'; 1000]);
        client += (k.len() + data.len()) as u64;
        write!(mc, "set {k} 0 0 {}\r\n", data.len()).unwrap();
        mc.write_all(&data).unwrap();
        mc.write_all(b"\r\n").unwrap();
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        assert_eq!(line, "STORED\r\n");
    }
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    // Until the journal and demotion are done writing.
    let mut last = String::new();
    wait_until("the device writes to settle", || {
        let t = srv.info(&mut con, "tiered");
        let now = t["flash_bytes_written"].clone();
        let settled = now == last && t["tiered_pending_stash_cnt"] == "0";
        last = now;
        std::thread::sleep(std::time::Duration::from_millis(300));
        settled
    });
    let t = srv.info(&mut con, "tiered");
    let get = |f: &str| t[f].parse::<u64>().unwrap();
    assert_eq!(get("client_write_bytes"), client, "{t:?}");
    let total = get("flash_bytes_written");
    let by_writer = get("flash_journal_device_bytes")
        + get("flash_demotion_device_bytes")
        + get("flash_collector_device_bytes")
        + get("flash_checkpoint_device_bytes");
    assert_eq!(by_writer, total, "the writers' bytes add up: {t:?}");
    // Values left RAM (from their journal records: demotion had nothing
    // to write for them).
    assert!(get("values_in_flash") > 1000, "{t:?}");
    assert!(get("flash_checkpoint_device_bytes") > 0, "{t:?}");
    assert_eq!(get("flash_segments_freed"), 0, "{t:?}");
    let (segments, checkpoint) = file_bytes(&srv.flash_dir());
    let files = segments + checkpoint;
    let off = (files as f64 - total as f64).abs() / files as f64;
    assert!(
        off < 0.01,
        "INFO's {total} device bytes vs {files} in the files ({segments} segments, {checkpoint} checkpoint)"
    );
    let wa: f64 = t["flash_write_amplification"].parse().unwrap();
    assert!((wa - total as f64 / client as f64).abs() < 0.001, "{t:?}");
    t
}
