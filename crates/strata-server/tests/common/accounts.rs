//! The atomicity check of transactions and scripts: `n` accounts (hashes
//! with a field `n` of 100 and 4 KB of padding, one per shard and more),
//! pushed to flash by 12 MB of ballast written after them under an 8 MB
//! budget; two writers move random amounts between random pairs of
//! accounts while two readers sum every account, each in one atomic step.
//! A reader that saw a move half done would see another sum.

use super::Server;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// What every account starts with.
pub const START: i64 = 100;

/// A server whose RAM budget is small enough that the accounts go to
/// flash.
pub fn server() -> Server {
    Server::start(&[
        "--maxmemory-ram",
        "8mb",
        "--tiering-min-value-size",
        "16",
        "--flash-segment-size",
        "1mb",
    ])
}

/// Creates `n` accounts, then the ballast that sends them to flash.
pub fn open(con: &mut redis::Connection, n: usize) {
    for i in 0..n {
        let _: () = redis::cmd("HSET")
            .arg(format!("acct:{i}"))
            .arg("n")
            .arg(START)
            .arg("pad")
            .arg(vec![b'p'; 4000])
            .query(con)
            .unwrap();
    }
    for i in 0..1500 {
        let _: () = redis::cmd("SET")
            .arg(format!("ballast:{i}"))
            .arg(vec![b'b'; 8000])
            .query(con)
            .unwrap();
    }
}

/// Runs 2 writers × 300 moves (`mv(con, from, to, amount)`) beside 2
/// readers (`sum(con)` must be `START × n` every time), and returns how
/// many sums the readers took and the flash reads meanwhile.
pub fn run<M, S>(srv: &Server, n: usize, mv: M, sum: S) -> (usize, u64)
where
    M: Fn(&mut redis::Connection, usize, usize, i64) + Clone + Send + 'static,
    S: Fn(&mut redis::Connection) -> i64 + Clone + Send + 'static,
{
    let want = START * n as i64;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (url, mv) = (srv.url(), mv.clone());
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(w + 1);
                for _ in 0..300 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let a = (x % n as u64) as usize;
                    let b = (a + 1 + (x >> 32) as usize % (n - 1)) % n;
                    mv(&mut con, a, b, (x >> 50) as i64 % 7 + 1);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (url, sum, stop) = (srv.url(), sum.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut reads = 0;
                while !stop.load(Relaxed) || reads == 0 {
                    assert_eq!(sum(&mut con), want, "a reader saw a move half done");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Relaxed);
    let reads = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let mut con = srv.client();
    assert_eq!(sum(&mut con), want);
    let fetches = srv.info_u64(&mut con, "tiered", "tiered_total_fetches");
    assert!(fetches >= n as u64 / 2, "only {fetches} reads from flash");
    (reads, fetches)
}
