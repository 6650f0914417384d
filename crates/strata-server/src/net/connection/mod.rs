//! One client connection: read, decode, dispatch, reply — with pipelining.
//!
//! All complete requests in the read buffer are dispatched before any reply
//! is awaited, so a pipeline of cold GETs keeps many flash reads in flight;
//! replies go out in request order (`FuturesOrdered`). A pending write is a
//! barrier (see `dispatch`). Protocol errors get `-ERR Protocol error: ...`
//! and the connection is closed, as Redis does.

mod backlog;
mod client;
mod gates;
mod guards;
mod output;
mod prefetch;
mod refusals;

pub(crate) use prefetch::{prefetch_pipeline, PREFETCH_MAX};

use crate::command::ConnState;
use crate::command::Shared;
use crate::net::stream::Stream;
use crate::net::turn::{self, Served};
use crate::services::clients::ClientHandle;
use bytes::BytesMut;
use client::{Client, Step};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use strata_protocol::Version;

type ReplyFuture = Pin<Box<dyn Future<Output = BytesMut> + Send>>;

/// Most replies a connection keeps pending (cold reads in flight plus the
/// replies queued behind them); a deeper pipeline waits for the oldest.
const MAX_PENDING: usize = 256;

/// A connection's state at a quiet point, carried to another loop
/// (`net::loops`, invariant 2): what commands set, and the input not yet
/// decoded.
pub struct Parked {
    conn: ConnState,
    reply_mode: ReplyMode,
    inbuf: BytesMut,
    skip_read: bool,
}

/// Serves a connection (from its start, or from where another loop
/// parked it) until it closes or is told to move.
pub async fn serve(
    shared: Arc<Shared>,
    stream: Stream,
    handle: Arc<ClientHandle>,
    resume: Option<Box<Parked>>,
) -> Served<Box<Parked>> {
    let parked = match resume {
        Some(p) => *p,
        None => fresh(&shared, &stream, handle),
    };
    let mut c = Client::new(shared, stream, parked);
    loop {
        match c.read().await {
            Step::Go => {}
            Step::Again => continue,
            Step::Closed => return Served::Closed,
        }
        let Some(batch) = c.batch().await else {
            return Served::Closed;
        };
        if !c.end_batch(batch).await {
            return Served::Closed;
        }
        // A quiet point (`net::loops`, invariant 2): the connection may move.
        if c.quiet() {
            if let Some(to) = turn::move_order() {
                return c.park(to);
            }
        }
    }
}

/// A new connection's state: database 0, RESP2, the default user.
fn fresh(shared: &Shared, stream: &Stream, handle: Arc<ClientHandle>) -> Parked {
    {
        use std::os::fd::AsRawFd;
        handle.fd.store(stream.tcp().as_raw_fd(), Relaxed);
    }
    let authenticated = shared.acl.auto_auth();
    Parked {
        conn: ConnState {
            db: 0,
            version: Version::Resp2,
            handle,
            authenticated,
            user: shared.acl.default_user(),
            multi: None,
            pubsub: None,
            watched: strata_engine::Watched::new(&shared.engine),
            exec_ready: None,
            script: false,
            script_keys: Vec::new(),
            monitor: false,
            caching: None,
            no_touch: false,
        },
        // CLIENT REPLY's mode for the connection.
        reply_mode: ReplyMode::On,
        inbuf: BytesMut::with_capacity(16 * 1024),
        skip_read: false,
    }
}

/// Argument slots a connection keeps between requests, at most.
const ARGS_KEEP: usize = 1024;

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// The next pub/sub message for this connection (never, when it listens
/// to nothing).
async fn next_message(
    l: &mut Option<crate::services::pubsub::Listener>,
) -> crate::services::pubsub::Message {
    match l {
        Some(l) => l.next().await,
        None => std::future::pending().await,
    }
}

/// CLIENT REPLY's modes: replies sent, dropped, or the next one dropped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReplyMode {
    On,
    Off,
    Skip,
}

/// The mode a CLIENT REPLY command sets, if it is one.
fn client_reply(
    spec: Option<&crate::registry::CommandSpec>,
    args: &[bytes::Bytes],
) -> Option<ReplyMode> {
    if spec?.role != crate::registry::Role::Client
        || args.len() != 3
        || !args[1].eq_ignore_ascii_case(b"reply")
    {
        return None;
    }
    let a = &args[2];
    if a.eq_ignore_ascii_case(b"on") {
        Some(ReplyMode::On)
    } else if a.eq_ignore_ascii_case(b"off") {
        Some(ReplyMode::Off)
    } else if a.eq_ignore_ascii_case(b"skip") {
        Some(ReplyMode::Skip)
    } else {
        None
    }
}
