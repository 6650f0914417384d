//! A real full disk: the flash directory is a small tmpfs (mounted by the
//! test; it needs CAP_SYS_ADMIN, which CI's container has; elsewhere the
//! test says it cannot run and passes without checking anything). Writes
//! must get a clear error, reads go on, nothing acknowledged is lost, and
//! writes resume by themselves when space returns.

mod common;

use common::{free_port, value_for};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Unmounts on drop.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn mount_tmpfs(at: &Path, size: &str) -> Option<Mount> {
    std::fs::create_dir_all(at).ok()?;
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Mount(at.to_path_buf()))
}

/// The server process, killed on drop (also when an assertion fails).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(dir: &Path, port: u16) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", &port.to_string(), "--memcached-port", "0"])
        .args(["--bind", "127.0.0.1", "--dir"])
        .arg(dir)
        .args([
            "--flash-max-size",
            "1gb", // more than the device: the device fills first
            "--flash-segment-size",
            "1mb",
            "--maxmemory-ram",
            "64mb",
            "--appendfsync",
            "everysec",
            "--loglevel",
            "warning",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn strata-server");
    Proc(child)
}

fn connect(port: u16) -> redis::Connection {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(c) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
        {
            let mut c = c;
            if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                return c;
            }
        }
        assert!(Instant::now() < deadline, "server did not answer");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let flash = dir.path().join("flash");
    let Some(_mount) = mount_tmpfs(&flash, "24m") else {
        eprintln!("cannot mount a tmpfs here (not root?): full-disk test not run");
        return;
    };
    // Leave about 10 MB free.
    let ballast = flash.join("ballast");
    std::fs::write(&ballast, vec![7u8; 14 << 20]).unwrap();
    let port = free_port();
    let child = spawn(dir.path(), port);
    let mut con = connect(port);
    let mut acked: Vec<String> = Vec::new();
    let mut refusal = None;
    for i in 0..2000 {
        let key = format!("k{i}");
        match redis::cmd("SET")
            .arg(&key)
            .arg(value_for(&key, 0, 16 << 10))
            .query::<()>(&mut con)
        {
            Ok(()) => acked.push(key),
            Err(e) => {
                refusal = Some(e.to_string());
                break;
            }
        }
        // Give the journal (everysec) its batches, so the device fills
        // while we write rather than after.
        if i % 50 == 49 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let refusal = refusal.expect("32 MB into a 10 MB device was never refused");
    assert!(
        refusal.contains("MISCONF") && refusal.contains("no space"),
        "{refusal}"
    );
    // Reads keep working, and every acknowledged write is intact.
    for key in &acked {
        let v: Vec<u8> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
        assert!(v == value_for(key, 0, 16 << 10), "{key}: wrong value");
    }
    let info: String = redis::cmd("INFO")
        .arg("persistence")
        .query(&mut con)
        .unwrap();
    assert!(info.contains("log_status:no_space"), "{info}");
    // Space returns: writes resume by themselves.
    std::fs::remove_file(&ballast).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = redis::cmd("SET")
            .arg("after")
            .arg(value_for("after", 0, 1000))
            .query::<()>(&mut con);
        if r.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "writes did not resume: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    acked.push("after".into());
    // Everything acknowledged survives a crash once a second passed (everysec).
    std::thread::sleep(Duration::from_millis(2500));
    drop(child); // kill -9
    let port = free_port();
    let _child = spawn(dir.path(), port);
    let mut con = connect(port);
    for key in &acked {
        let len = if key == "after" { 1000 } else { 16 << 10 };
        let v: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
        assert!(
            v.as_deref() == Some(&value_for(key, 0, len)[..]),
            "{key} after restart: {:?} bytes",
            v.map(|v| v.len())
        );
    }
}
