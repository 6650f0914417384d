//! Every fuzz target on stable, briefly (CI runs this): each target's
//! regression inputs (`regressions/<target>/`, every crash ever found),
//! then a seeded stream of inputs made from its seeds and dictionary —
//! random bytes, seeds mutated (bytes flipped, cut, spliced, tokens
//! inserted). A failing input is written to `artifacts/smoke/` and named
//! in the failure. `FUZZ_SMOKE_SECS` (default 2) is the time per target;
//! `FUZZ_SMOKE_SEED` fixes the stream. libFuzzer (`bench/fuzz.sh`)
//! explores far more; this keeps every target and its invariants
//! running on every change.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Hand-written starting points and tokens per target.
fn seeds_and_tokens(target: &str) -> (Vec<Vec<u8>>, Vec<&'static [u8]>) {
    let b = |s: &[u8]| s.to_vec();
    match target {
        "resp_request" | "resp_frame" => (
            vec![
                b(b"\x00*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
                b(b"\x81*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nPING\r\n"),
                b(b"%2\r\n+a\r\n:1\r\n$-1\r\n*-1\r\n_\r\n,1.5\r\n#t\r\n(123\r\n=7\r\ntxt:abc\r\n"),
            ],
            vec![b"*", b"$", b"\r\n", b"-1", b"16385", b"11", b"\"", b"'", b"\\x41", b" ", b"+OK", b":"],
        ),
        "memcache_request" => (
            vec![
                b(b"\x10set k 0 0 1\r\nx\r\nget k j\r\n"),
                b(b"\x80ms k 2 T0 F5\r\nhi\r\nmg k v c\r\nmd k q\r\nmn\r\n"),
                b(b"\x00cas k 1 2 3 4\r\nabc\r\nincr k 5\r\ntouch k 10\r\n"),
            ],
            vec![b"set ", b"get ", b"gets ", b"gat ", b" 0 0 ", b"\r\n", b"noreply", b"ma ", b"flush_all", b"\x01"],
        ),
        "acl_rules" => (
            vec![
                b(b"\x00on >pw ~* &* +@all"),
                b(b"\x01off nopass resetkeys %R~r* %W~w* -@dangerous +config|get"),
                b(b"\x00(~x +get) (+set ~y) reset #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"),
            ],
            vec![b" ", b"+", b"-", b"@", b"~", b"%RW~", b"&", b"(", b")", b"|", b">", b"<", b"#", b"allkeys", b"clearselectors"],
        ),
        "config_file" => (
            vec![
                include_bytes!("../../strata.conf").to_vec(),
                b(b"port 7000\nbind 127.0.0.1 -::1\nsave \"900 1\"\nuser a on >p +get\nrename-command config \"\"\n"),
                b(b"client-output-buffer-limit normal 1mb 2mb 3 pubsub 0 0 0\nmaxmemory-ram 10%\n"),
            ],
            vec![b"\n", b" ", b"\"", b"'", b"\\x00", b"yes", b"no", b"1gb", b"-1", b"include", b"user", b"rename-command"],
        ),
        "rdb_payload" => {
            use strata_engine::ValueRef;
            let body = |p: Vec<u8>| p[..p.len() - 10].to_vec();
            let s = bytes::Bytes::from_static(b"hello");
            (
                vec![
                    body(strata_server::base::rdb::dump(ValueRef::Str(&s))),
                    b(b"\x10\x0a\x0a\x00\x00\x00\x02\x00\x01a\x02\x01b\x02\xff"),
                    b(b"\x0b\x0c\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x02\x00"),
                ],
                vec![b"\x00", b"\x01", b"\x02", b"\x04", b"\x0b", b"\x0e", b"\x10", b"\x11", b"\x12", b"\x13", b"\x15", b"\xc3", b"\xff", b"\x80"],
            )
        }
        _ => (vec![b(b"\x00\x01\x02\x03")], vec![b"\x00", b"\xff", b"\x01"]),
    }
}

fn mutate(rng: &mut StdRng, seeds: &[Vec<u8>], tokens: &[&[u8]]) -> Vec<u8> {
    if seeds.is_empty() || rng.gen_ratio(1, 8) {
        let n = rng.gen_range(0..256);
        return (0..n).map(|_| rng.gen()).collect();
    }
    let mut v = seeds[rng.gen_range(0..seeds.len())].clone();
    for _ in 0..rng.gen_range(1..6) {
        let at = rng.gen_range(0..=v.len());
        match rng.gen_range(0..6) {
            0 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] ^= 1 << rng.gen_range(0..8);
            }
            1 => v.truncate(at),
            2 => {
                let t = tokens[rng.gen_range(0..tokens.len())];
                v.splice(at..at, t.iter().copied());
            }
            3 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] = rng.gen();
            }
            4 => {
                let other = &seeds[rng.gen_range(0..seeds.len())];
                let from = rng.gen_range(0..=other.len());
                v.splice(at..at, other[from..].iter().copied());
            }
            _ => {
                let end = rng.gen_range(at..=v.len());
                v.drain(at..end);
            }
        }
    }
    v
}

/// Runs `f` on `input`; on a panic writes the input out and fails.
fn check(target: &str, f: fn(&[u8]), input: &[u8]) {
    if std::panic::catch_unwind(|| f(input)).is_ok() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("artifacts/smoke");
    let _ = std::fs::create_dir_all(&dir);
    let name = format!("{target}-{:016x}", fxhash(input));
    let path = dir.join(&name);
    let _ = std::fs::write(&path, input);
    panic!(
        "{target} failed on {} ({} bytes); add it to regressions/{target}/ once fixed",
        path.display(),
        input.len()
    );
}

fn fxhash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn every_target_holds_its_invariants() {
    let secs: f64 = std::env::var("FUZZ_SMOKE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let seed: u64 = std::env::var("FUZZ_SMOKE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("FUZZ_SMOKE_SEED={seed}");
    for &(target, f) in strata_fuzz::TARGETS {
        let mut regressions = 0;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("regressions")
            .join(target);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let input = std::fs::read(e.path()).unwrap();
                check(target, f, &input);
                regressions += 1;
            }
        }
        let (seeds, tokens) = seeds_and_tokens(target);
        let mut rng = StdRng::seed_from_u64(seed ^ fxhash(target.as_bytes()));
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let mut runs = 0u64;
        for s in &seeds {
            check(target, f, s);
            runs += 1;
        }
        while Instant::now() < deadline {
            let input = mutate(&mut rng, &seeds, &tokens);
            check(target, f, &input);
            runs += 1;
        }
        eprintln!("{target}: {regressions} regression inputs, {runs} executions, 0 crashes");
    }
}
