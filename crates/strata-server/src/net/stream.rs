//! A client's byte stream: plain TCP, or TLS over TCP (`tls-port`, the
//! memcached port with `memcached-tls yes`). The connection code reads
//! and writes through this one type.
//!
//! Invariants:
//! 1. The plain path is the TCP stream's own calls, behind one `match`: no
//!    buffering, no lock, no extra syscall (`tokio::net::TcpStream`'s
//!    `poll_read` / `try_write` / `poll_write_ready`, as before TLS).
//! 2. Over TLS, bytes rustls accepted but the socket did not take yet
//!    (`has_unsent`) count as output still to send: the connection keeps
//!    waiting for the socket to take them (`read_or_writable`), as for its
//!    backlog, so no reply is left inside rustls.
//! 3. A TLS stream never moves between connection loops: `into_tcp` gives
//!    back only a plain one.

use bytes::{BufMut, BytesMut};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// A client's stream (module doc).
pub enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// What `read_or_writable` found.
pub enum Io {
    /// Bytes read into the buffer (0: the peer closed).
    Read(io::Result<usize>),
    /// The socket takes more output (Err: it failed).
    Writable(io::Result<()>),
}

impl Stream {
    /// The TCP stream under it.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Tcp(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    /// The plain stream, to move to another loop (invariant 3); a TLS one
    /// is given back.
    pub fn into_tcp(self) -> Result<TcpStream, Stream> {
        match self {
            Stream::Tcp(s) => Ok(s),
            tls => Err(tls),
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Whether rustls holds bytes the socket has not taken (invariant 2).
    pub fn has_unsent(&self) -> bool {
        match self {
            Stream::Tcp(_) => false,
            Stream::Tls(s) => s.get_ref().1.wants_write(),
        }
    }

    /// Waits for input (read into `buf`) or, with `write`, for the socket
    /// to take more output; whichever comes first.
    pub fn read_or_writable<'a>(
        &'a mut self,
        buf: &'a mut BytesMut,
        write: bool,
    ) -> impl Future<Output = Io> + 'a {
        poll_fn(move |cx| {
            if let Poll::Ready(r) = self.poll_read_buf(cx, buf) {
                return Poll::Ready(Io::Read(r));
            }
            if write {
                if let Poll::Ready(r) = self.poll_writable(cx) {
                    return Poll::Ready(Io::Writable(r));
                }
            }
            Poll::Pending
        })
    }

    /// `AsyncReadExt::read_buf`, as a poll.
    fn poll_read_buf(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        if buf.capacity() == buf.len() {
            buf.reserve(64);
        }
        let dst = buf.chunk_mut();
        // SAFETY: `UninitSlice` is a `[MaybeUninit<u8>]` view of the
        // spare capacity; `ReadBuf` only writes initialized bytes into it.
        let dst = unsafe { &mut *(dst as *mut _ as *mut [std::mem::MaybeUninit<u8>]) };
        let mut rb = ReadBuf::uninit(dst);
        let ptr = rb.filled().as_ptr();
        match Pin::new(&mut *self).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                debug_assert_eq!(ptr, rb.filled().as_ptr());
                let n = rb.filled().len();
                // SAFETY: `poll_read` initialized the first `n` bytes.
                unsafe { buf.advance_mut(n) };
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Ready when the socket takes more output; over TLS, once what rustls
    /// holds went out first.
    fn poll_writable(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Tcp(s) => s.poll_write_ready(cx),
            Stream::Tls(s) => {
                if s.get_ref().1.wants_write() {
                    std::task::ready!(Pin::new(&mut **s).poll_flush(cx))?;
                }
                s.get_ref().0.poll_write_ready(cx)
            }
        }
    }

    /// Writes what the socket takes now, without waiting (`WouldBlock`
    /// when it takes nothing). Over TLS, rustls takes the bytes and sends
    /// what the socket takes; the rest waits in it (invariant 2).
    pub fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_write(buf),
            Stream::Tls(s) => {
                let mut cx = Context::from_waker(Waker::noop());
                match Pin::new(&mut **s).poll_write(&mut cx, buf) {
                    Poll::Ready(r) => r,
                    Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
                }
            }
        }
    }

    /// Writes all of `buf`, waiting for the socket; over TLS, flushed to
    /// the socket too (a plain stream's flush does nothing).
    pub async fn send_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.write_all(buf).await?;
        self.flush().await
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}
