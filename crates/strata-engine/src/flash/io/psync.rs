//! The portable backend: a fixed pool of threads issuing positional
//! `pread`/`pwrite`. The pool size is the number of operations in flight.

use super::{IoEngine, IoRequest};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::thread::JoinHandle;

struct Queue {
    requests: VecDeque<IoRequest>,
    shutdown: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

pub struct PsyncEngine {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl PsyncEngine {
    pub fn new(threads: usize) -> PsyncEngine {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                requests: VecDeque::new(),
                shutdown: false,
            }),
            ready: Condvar::new(),
        });
        let threads = (0..threads.max(1))
            .map(|i| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("strata-psync-{i}"))
                    .spawn(move || worker(&shared))
                    .expect("spawn psync thread")
            })
            .collect();
        PsyncEngine { shared, threads }
    }
}

fn worker(shared: &Shared) {
    loop {
        let req = {
            let mut q = shared.queue.lock();
            loop {
                if let Some(r) = q.requests.pop_front() {
                    break r;
                }
                if q.shutdown {
                    return;
                }
                shared.ready.wait(&mut q);
            }
        };
        run(req);
    }
}

fn run(req: IoRequest) {
    let IoRequest {
        file,
        offset,
        mut buf,
        done,
    } = req;
    let result = read_full(&file, &mut buf, offset);
    done(buf, result);
}

/// Reads until the buffer is full or end of file; returns the bytes read.
pub(crate) fn read_full(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

impl IoEngine for PsyncEngine {
    fn submit(&self, req: IoRequest) {
        let mut q = self.shared.queue.lock();
        q.requests.push_back(req);
        drop(q);
        self.shared.ready.notify_one();
    }

    fn name(&self) -> &'static str {
        "psync"
    }
}

impl Drop for PsyncEngine {
    fn drop(&mut self) {
        self.shared.queue.lock().shutdown = true;
        self.shared.ready.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
