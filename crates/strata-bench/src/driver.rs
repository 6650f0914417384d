//! Runs the load: `--threads` OS threads, each with its own single-threaded
//! tokio runtime driving `--clients` connections. Each connection keeps up
//! to `--pipeline` requests in flight, either closed loop (send as soon as a
//! slot frees) or open loop (`--rate`: requests scheduled at fixed intended
//! times; a request held back by a full pipeline is timed from its intended
//! time, so coordinated omission is corrected, while one merely woken late
//! by the 1 ms timer is timed from its actual send).
//!
//! Invariants: a connection never has more than `--pipeline` requests
//! outstanding; with `-n N` each connection sends exactly N requests (unless
//! it breaks); all connections start measuring together, after every
//! connection attempt has finished. Errors are counted, never panicked on.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use strata_protocol::Limits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use crate::codec::{self, Reply};
use crate::options::{Options, Requests};
use crate::report::RunStats;
use crate::workload::{
    client_seed, filler_value, key_name, rng_from_seed, value_for_key, verify_value, Cmd, KeyGen,
    KeyRange, RatioCycle, Zipf,
};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Free space guaranteed before each read.
const READ_CHUNK: usize = 16 * 1024;

/// State shared by every client of a run.
struct Shared {
    opts: Options,
    zipf: Arc<Zipf>,
    filler: Vec<u8>,
    base_seed: u64,
    barrier: Barrier,
    start: OnceLock<Instant>,
}

/// Runs one benchmark run and returns its measurements.
pub fn run_once(opts: &Options, base_seed: u64) -> RunStats {
    let total = opts.total_clients();
    let shared = Arc::new(Shared {
        opts: opts.clone(),
        zipf: Arc::new(Zipf::new(opts.key_count(), opts.zipf_s, opts.zipf_beta)),
        filler: filler_value(opts.data_size),
        base_seed,
        barrier: Barrier::new(total),
        start: OnceLock::new(),
    });
    let per_thread: Vec<(RunStats, Option<Instant>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..opts.threads)
            .map(|t| {
                let shared = shared.clone();
                scope.spawn(move || run_thread(&shared, t))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let mut s = RunStats::default();
                    s.note_error("a client thread panicked");
                    (s, None)
                })
            })
            .collect()
    });
    let mut stats = RunStats::default();
    let mut end: Option<Instant> = None;
    for (s, e) in &per_thread {
        stats.merge(s);
        end = end.max(*e);
    }
    stats.duration = match (shared.start.get(), end) {
        (Some(s), Some(e)) => e.saturating_duration_since(*s),
        _ => Duration::ZERO,
    };
    stats
}

/// One thread: its clients on a current-thread runtime; returns the
/// thread's stats and when its last client finished.
fn run_thread(shared: &Arc<Shared>, thread: usize) -> (RunStats, Option<Instant>) {
    let stats = Rc::new(RefCell::new(RunStats::default()));
    let end: Rc<RefCell<Option<Instant>>> = Rc::default();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let mut s = stats.borrow_mut();
            s.connection_errors += shared.opts.clients as u64;
            s.note_error(format!("cannot start runtime: {e}"));
            return (s.clone(), None);
        }
    };
    let local = tokio::task::LocalSet::new();
    for c in 0..shared.opts.clients {
        let index = thread * shared.opts.clients + c;
        let (shared, stats, end) = (shared.clone(), stats.clone(), end.clone());
        local.spawn_local(async move {
            client(&shared, index, &stats).await;
            let now = Instant::now();
            let mut e = end.borrow_mut();
            *e = (*e).max(Some(now));
        });
    }
    rt.block_on(local);
    let s = stats.borrow().clone();
    let e = *end.borrow();
    (s, e)
}

/// One request awaiting its reply.
struct Pending {
    cmd: Cmd,
    /// Send time (closed loop) or intended send time (open loop).
    start: Instant,
    /// Request bytes, for KB/s.
    bytes: usize,
    /// The key, kept only with `--verify`.
    key: Option<Vec<u8>>,
}

/// When the client stops issuing requests.
enum Limit {
    Count(u64),
    Until(Instant),
}

/// Per-connection request source.
struct Source {
    set_gen: KeyGen,
    get_gen: KeyGen,
    cycle: RatioCycle,
    rng: rand::rngs::StdRng,
    limit: Limit,
    sent: u64,
    /// Open loop: next intended send time and the gap between requests.
    schedule: Option<(Instant, Duration)>,
    /// Open loop: when the connection last stopped waiting on a full
    /// pipeline. Requests due by then were held back by the server.
    blocked_until: Option<Instant>,
}

enum Next {
    /// Send now; latency counts from this instant.
    Send(Instant),
    /// Nothing due before this instant.
    Wait(Instant),
    /// No more requests.
    Done,
}

impl Source {
    fn next(&mut self, now: Instant) -> Next {
        let done = match self.limit {
            Limit::Count(n) => self.sent >= n,
            Limit::Until(deadline) => match self.schedule {
                Some((t, _)) => t >= deadline,
                None => now >= deadline,
            },
        };
        if done {
            return Next::Done;
        }
        match &mut self.schedule {
            None => Next::Send(now),
            Some((t, gap)) => {
                if *t > now {
                    return Next::Wait(*t);
                }
                let due = *t;
                *t += *gap;
                // Held back by a full pipeline: count from the intended time
                // (coordinated omission). Otherwise only our own timer was
                // late (tokio's 1 ms granularity): count from now.
                if self.blocked_until.is_some_and(|b| due <= b) {
                    Next::Send(due)
                } else {
                    Next::Send(now)
                }
            }
        }
    }
}

fn make_source(shared: &Shared, index: usize, start: Instant) -> Source {
    let opts = &shared.opts;
    let total = opts.total_clients();
    let range = KeyRange {
        min: opts.key_minimum,
        max: opts.key_maximum,
    };
    let mut ratio = opts.ratio;
    let mut set_gen = KeyGen::for_pattern(opts.key_pattern.set, opts, &shared.zipf, index, total);
    let get_gen = KeyGen::for_pattern(opts.key_pattern.get, opts, &shared.zipf, index, total);
    let limit = match (opts.test_time, opts.requests) {
        (Some(secs), _) => Limit::Until(start + Duration::from_secs(secs)),
        (None, Requests::Count(n)) => Limit::Count(n),
        (None, Requests::AllKeys) => {
            ratio = crate::options::Ratio { set: 1, get: 0 };
            match range.slice(index, total) {
                Some(slice) => {
                    set_gen = KeyGen::sequential(slice);
                    Limit::Count(slice.len())
                }
                None => Limit::Count(0),
            }
        }
    };
    let schedule = opts.rate.map(|rate| {
        let gap = Duration::from_secs_f64(total as f64 / rate);
        // Stagger clients across one gap so they do not fire together.
        let offset = gap.mul_f64(index as f64 / total as f64);
        (start + offset, gap)
    });
    Source {
        set_gen,
        get_gen,
        cycle: RatioCycle::new(ratio),
        rng: rng_from_seed(client_seed(
            shared.base_seed,
            index,
            opts.distinct_client_seed,
        )),
        limit,
        sent: 0,
        schedule,
        blocked_until: None,
    }
}

async fn connect(opts: &Options) -> Result<TcpStream, String> {
    let fut = TcpStream::connect((opts.server.as_str(), opts.port));
    match tokio::time::timeout(CONNECT_TIMEOUT, fut).await {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(s)
        }
        Ok(Err(e)) => Err(format!("connect {}:{}: {e}", opts.server, opts.port)),
        Err(_) => Err(format!("connect {}:{}: timed out", opts.server, opts.port)),
    }
}

/// One connection for the whole run.
async fn client(shared: &Shared, index: usize, stats: &RefCell<RunStats>) {
    let opts = &shared.opts;
    let conn = connect(opts).await;
    shared.barrier.wait().await;
    let start = *shared.start.get_or_init(Instant::now);
    let mut stream = match conn {
        Ok(s) => s,
        Err(e) => {
            let mut s = stats.borrow_mut();
            s.connection_errors += 1;
            s.note_error(e);
            return;
        }
    };
    stats.borrow_mut().connections += 1;
    let mut src = make_source(shared, index, start);
    if let Err(e) = drive(shared, &mut stream, &mut src, stats).await {
        let mut s = stats.borrow_mut();
        s.connection_errors += 1;
        s.note_error(e);
    }
}

/// The request/reply loop. On `Err` the connection is unusable; requests
/// still in flight have been counted as errors.
async fn drive(
    shared: &Shared,
    stream: &mut TcpStream,
    src: &mut Source,
    stats: &RefCell<RunStats>,
) -> Result<(), String> {
    let opts = &shared.opts;
    let limits = Limits::default();
    let mut inflight: VecDeque<Pending> = VecDeque::with_capacity(opts.pipeline);
    let mut wbuf = BytesMut::with_capacity(4096);
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut key = Vec::with_capacity(opts.key_prefix.len() + 20);
    let mut value = Vec::with_capacity(if opts.verify { opts.data_size } else { 0 });
    let fail = |inflight: &VecDeque<Pending>, msg: String| {
        stats.borrow_mut().errors += inflight.len() as u64;
        Err(msg)
    };
    loop {
        // Fill the pipeline with whatever is due.
        let now = Instant::now();
        let mut wake = None;
        while inflight.len() < opts.pipeline {
            match src.next(now) {
                Next::Send(at) => {
                    let cmd = src.cycle.next_cmd();
                    let n = match cmd {
                        Cmd::Set => src.set_gen.next_key(&mut src.rng),
                        Cmd::Get => src.get_gen.next_key(&mut src.rng),
                    };
                    src.sent += 1;
                    key_name(&opts.key_prefix, n, &mut key);
                    let val: &[u8] = if cmd == Cmd::Get {
                        &[]
                    } else if opts.verify {
                        value_for_key(&key, opts.data_size, &mut value);
                        &value
                    } else {
                        &shared.filler
                    };
                    let before = wbuf.len();
                    codec::encode(opts.protocol, cmd, &key, val, &mut wbuf);
                    inflight.push_back(Pending {
                        cmd,
                        start: at,
                        bytes: wbuf.len() - before,
                        key: opts.verify.then(|| key.clone()),
                    });
                }
                Next::Wait(t) => {
                    wake = Some(t);
                    break;
                }
                Next::Done => break,
            }
        }
        if !wbuf.is_empty() {
            if let Err(e) = stream.write_all(&wbuf).await {
                return fail(&inflight, format!("write: {e}"));
            }
            wbuf.clear();
        }
        if inflight.is_empty() {
            match wake {
                Some(t) => {
                    tokio::time::sleep_until(t.into()).await;
                    continue;
                }
                None => return Ok(()),
            }
        }
        // Read replies (or wake for the next scheduled send). Reserving
        // first reclaims the consumed space, so reads stay large.
        rbuf.reserve(READ_CHUNK);
        let read = match wake {
            Some(t) if inflight.len() < opts.pipeline => {
                tokio::select! {
                    r = stream.read_buf(&mut rbuf) => Some(r),
                    _ = tokio::time::sleep_until(t.into()) => None,
                }
            }
            _ => {
                let full = inflight.len() >= opts.pipeline;
                let r = stream.read_buf(&mut rbuf).await;
                if full && src.schedule.is_some() {
                    src.blocked_until = Some(Instant::now());
                }
                Some(r)
            }
        };
        match read {
            None => continue,
            Some(Ok(0)) => return fail(&inflight, "connection closed by server".into()),
            Some(Err(e)) => return fail(&inflight, format!("read: {e}")),
            Some(Ok(_)) => {}
        }
        let now = Instant::now();
        let mut s = stats.borrow_mut();
        while let Some(p) = inflight.front() {
            let (reply, used) = match codec::parse_reply(opts.protocol, p.cmd, &rbuf, &limits) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    drop(s);
                    return fail(&inflight, format!("bad reply: {e}"));
                }
            };
            rbuf.advance(used);
            let Some(p) = inflight.pop_front() else { break };
            let cs = match p.cmd {
                Cmd::Set => &mut s.sets,
                Cmd::Get => &mut s.gets,
            };
            cs.record(now.saturating_duration_since(p.start), p.bytes + used);
            match reply {
                Reply::Ok => {}
                Reply::Miss => cs.misses += 1,
                Reply::Hit(v) => {
                    cs.hits += 1;
                    if let Some(k) = &p.key {
                        if !verify_value(k, opts.data_size, &v) {
                            s.verify_errors += 1;
                            let k = String::from_utf8_lossy(k).into_owned();
                            s.note_error(format!("verify failed for key {k}"));
                        }
                    }
                }
                Reply::Error(e) => {
                    s.errors += 1;
                    s.note_error(format!("server error: {e}"));
                }
            }
        }
        if inflight.is_empty() && !rbuf.is_empty() {
            drop(s);
            return fail(&inflight, "unexpected data from server".into());
        }
    }
}
