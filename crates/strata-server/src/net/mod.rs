//! The top floor: the network. Binding the listeners (`listen`),
//! accepting clients and refusing those a limit or protected mode turns
//! away (here), the stream a connection reads and writes, plain or TLS
//! (`stream`), the connection loops (`loops`), and the two protocols'
//! connections: RESP (`connection`) and memcached (`memcache`).
//!
//! Invariants:
//! 1. A client is refused before anything it sent is read: past
//!    `maxclients`, or by protected mode. On a TLS listener the refusal
//!    goes out over TLS, after the handshake, as Redis writes it.
//! 2. The TLS handshake runs on the loop that serves the connection (a
//!    refusal's in a task of its own), never in the accept loop's task,
//!    and is bounded by `HANDSHAKE_TIMEOUT`: a client that never finishes
//!    it holds nothing else up.

pub mod connection;
pub mod listen;
pub mod loops;
pub mod memcache;
pub mod stream;
pub mod turn;

use crate::command::Shared;
use loops::Protocol;
use rustls::ServerConfig;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use stream::Stream;
use tokio::net::{TcpListener, TcpStream};

/// How long a client may take to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a listener speaks, and whether over TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listening {
    pub protocol: Protocol,
    pub tls: bool,
}

/// Accepts clients on `listener` and hands each to a loop, until shutdown.
pub async fn accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    what: Listening,
    loops: Arc<loops::Loops>,
) {
    let protocol = what.protocol;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shared.shutdown_signal() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        match protocol {
            Protocol::Resp => shared.stats.connections_received.fetch_add(1, Relaxed),
            Protocol::Memcached => shared.mc.total_connections.fetch_add(1, Relaxed),
        };
        let tls = if what.tls {
            match shared.tls.current() {
                Some(t) => Some(t),
                None => continue,
            }
        } else {
            None
        };
        let max = shared.config.read().maxclients;
        if shared.clients.count() >= max {
            let refusal: &'static [u8] = match protocol {
                Protocol::Resp => {
                    shared.stats.rejected_connections.fetch_add(1, Relaxed);
                    b"-ERR max number of clients reached\r\n"
                }
                Protocol::Memcached => b"SERVER_ERROR Too many open connections\r\n",
            };
            tokio::spawn(refuse(stream, tls, refusal));
            continue;
        }
        if shared.config.read().protected_mode
            && shared.acl.default_nopass()
            && !listen::is_local(&peer)
        {
            // Redis's protected mode: the refusal, before anything is read
            // (the memcached port too: it has no password at all).
            shared.stats.rejected_connections.fetch_add(1, Relaxed);
            let refusal = match protocol {
                Protocol::Resp => listen::DENIED,
                Protocol::Memcached => listen::DENIED_MEMCACHED,
            };
            tokio::spawn(refuse(stream, tls, refusal));
            continue;
        }
        let laddr = stream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let handle = shared.clients.register(peer.to_string(), laddr);
        loops.serve(shared.clone(), stream, protocol, handle, tls);
    }
}

/// Writes `refusal` to a client turned away (invariant 1), and closes it.
async fn refuse(stream: TcpStream, tls: Option<Arc<ServerConfig>>, refusal: &'static [u8]) {
    let Some(mut s) = handshake(stream, tls).await else {
        return;
    };
    let _ = s.send_all(refusal).await;
}

/// The client's stream: over TLS once the handshake is done (None: it
/// failed or took too long, and was logged).
pub async fn handshake(stream: TcpStream, tls: Option<Arc<ServerConfig>>) -> Option<Stream> {
    let Some(config) = tls else {
        return Some(Stream::Tcp(stream));
    };
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let accept = tokio_rustls::TlsAcceptor::from(config).accept(stream);
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await {
        Ok(Ok(s)) => Some(Stream::Tls(Box::new(s))),
        Ok(Err(e)) => {
            // Redis logs these at verbose level too.
            tracing::debug!("Error accepting a client connection: {e} (addr={peer})");
            None
        }
        Err(_) => {
            tracing::debug!(
                "Error accepting a client connection: handshake timed out (addr={peer})"
            );
            None
        }
    }
}
