//! Binding the listeners as Redis binds them (`bind`, `tcp-backlog`), and
//! who may connect (`protected-mode`).
//!
//! - `bind` takes addresses; `*` is any IPv4 address, `::*` any IPv6 one,
//!   and a leading `-` makes an address optional: where it does not exist
//!   here (no IPv6, say) it is skipped, as Redis's `listenToPort` skips
//!   it. Any other failure (the port in use) stops the start.
//! - Each listener queues `tcp-backlog` connections (Redis's 511; the
//!   kernel caps it at `net.core.somaxconn`, which is logged).
//! - Protected mode: while it is on and the default user has no password,
//!   a client whose address is not a loopback one gets Redis's `-DENIED`
//!   text (on the memcached port, a `SERVER_ERROR` line) and is closed,
//!   before anything it sent is read.

use std::net::{IpAddr, SocketAddr};
use tokio::net::{TcpListener, TcpSocket};

/// Binds `port` on every address of `bind`. `what` names the port in
/// errors ("port", "memcached-port").
pub fn bind_all(
    bind: &[String],
    port: u16,
    backlog: u32,
    what: &str,
) -> std::io::Result<Vec<TcpListener>> {
    let mut out = Vec::new();
    for spec in bind {
        let (optional, text) = match spec.strip_prefix('-') {
            Some(t) => (true, t),
            None => (false, spec.as_str()),
        };
        let ip = crate::services::config::parse_addr(text).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid bind address '{spec}'"),
            )
        })?;
        let addr = SocketAddr::new(ip, port);
        match listen(addr, backlog) {
            Ok(l) => out.push(l),
            Err(e) if optional && skippable(&e) => {
                tracing::debug!("skipping optional bind address {addr}: {e}");
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("could not bind {what} {addr}: {e}"),
                ));
            }
        }
    }
    Ok(out)
}

/// The errors that an optional address skips: the address or its family
/// does not exist here (Redis: EADDRNOTAVAIL, EAFNOSUPPORT and kin).
fn skippable(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EADDRNOTAVAIL
                | libc::EAFNOSUPPORT
                | libc::EPROTONOSUPPORT
                | libc::ENOPROTOOPT
                | libc::ESOCKTNOSUPPORT
                | libc::EPFNOSUPPORT
        )
    )
}

fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => {
            let s = TcpSocket::new_v6()?;
            // `::` takes IPv6 only, as Redis's (IPV6_V6ONLY): `*` and
            // `::*` can be bound together.
            set_v6_only(&s)?;
            s
        }
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

fn set_v6_only(s: &TcpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a socket this function owns, with an int.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Logs Redis's warning when the kernel caps the backlog below
/// `tcp-backlog`.
pub fn check_backlog(backlog: u32) {
    let Ok(text) = std::fs::read_to_string("/proc/sys/net/core/somaxconn") else {
        return;
    };
    if let Ok(max) = text.trim().parse::<u32>() {
        if max < backlog {
            tracing::warn!(
                "WARNING: The TCP backlog setting of {backlog} cannot be enforced because \
                 /proc/sys/net/core/somaxconn is set to the lower value of {max}."
            );
        }
    }
}

/// Whether `peer` is a loopback client (Redis's `connIsLocal`: 127.x.x.x
/// and ::1, and an IPv4 loopback address mapped into IPv6).
pub fn is_local(peer: &SocketAddr) -> bool {
    match peer.ip() {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// What protected mode answers a client it refuses (Redis 7.0's text).
pub const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// What protected mode answers a memcached client it refuses (memcached
/// has no such mode: a `SERVER_ERROR` line in its style).
pub const DENIED_MEMCACHED: &[u8] = b"SERVER_ERROR Strata is running in protected mode because protected mode is enabled and no password is set for the default user: only loopback clients may use the memcached port\r\n";

/// The start-up warnings of a server reachable from other hosts: what
/// protected mode does about a missing password, or that nothing does.
pub fn warn_exposure(addrs: &[SocketAddr], protected: bool, has_password: bool) {
    let exposed: Vec<String> = addrs
        .iter()
        .filter(|a| !a.ip().is_loopback())
        .map(|a| a.to_string())
        .collect();
    if exposed.is_empty() || has_password {
        return;
    }
    let on = exposed.join(", ");
    if protected {
        tracing::warn!(
            "WARNING: listening on {on} with no password for the default user: protected mode \
             refuses every client that is not on a loopback address until one is set (requirepass)"
        );
    } else {
        tracing::warn!(
            "WARNING: listening on {on} with protected-mode no and no password for the default \
             user: any client that reaches these addresses can run any command"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::config::parse_addr;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn bind_addresses_as_redis_reads_them() {
        assert_eq!(parse_addr("*"), Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        assert_eq!(parse_addr("::*"), Some(IpAddr::V6(Ipv6Addr::UNSPECIFIED)));
        assert_eq!(parse_addr("::1"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(
            parse_addr("127.0.0.1"),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
        assert_eq!(parse_addr("localhost"), None);
    }

    #[test]
    fn loopback_clients_only_are_local() {
        let p = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(is_local(&p("127.0.0.1:1")));
        assert!(is_local(&p("127.1.2.3:1")));
        assert!(is_local(&p("[::1]:1")));
        assert!(is_local(&p("[::ffff:127.0.0.1]:1")));
        assert!(!is_local(&p("10.0.0.1:1")));
        assert!(!is_local(&p("[::ffff:10.0.0.1]:1")));
        assert!(!is_local(&p("[fe80::1]:1")));
    }

    #[tokio::test]
    async fn an_optional_address_that_does_not_exist_is_skipped() {
        // 192.0.2.1 (TEST-NET-1) is on no interface here: bind fails with
        // EADDRNOTAVAIL, which the '-' makes a skip. Nothing is sent.
        let l = bind_all(&["127.0.0.1".into(), "-192.0.2.1".into()], 0, 511, "port").unwrap();
        assert_eq!(l.len(), 1);
        let e = bind_all(&["192.0.2.1".into()], 0, 511, "port").unwrap_err();
        assert!(
            e.to_string().contains("could not bind port 192.0.2.1:0"),
            "{e}"
        );
    }
}
