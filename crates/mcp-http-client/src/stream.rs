//! A connection the [`Connector`](crate::Connector) opened: TCP, or TLS over TCP.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A connection: plain TCP for `http`, TLS over TCP for `https`. Reads and writes go through
/// TLS when there is one; [`Stream::is_h2`] says what ALPN chose.
#[derive(Debug)]
pub struct Stream(Inner);

#[derive(Debug)]
enum Inner {
    Tcp(TcpStream),
    #[cfg(feature = "rustls")]
    // Boxed: a TLS connection's state is over a kilobyte, a TCP stream's a few words.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    pub(crate) fn tcp(tcp: TcpStream) -> Stream {
        Stream(Inner::Tcp(tcp))
    }

    #[cfg(feature = "rustls")]
    pub(crate) fn tls(tls: tokio_rustls::client::TlsStream<TcpStream>) -> Stream {
        Stream(Inner::Tls(Box::new(tls)))
    }

    /// Whether the server chose HTTP/2 by ALPN: the connection speaks nothing else.
    pub fn is_h2(&self) -> bool {
        match &self.0 {
            Inner::Tcp(_) => false,
            #[cfg(feature = "rustls")]
            Inner::Tls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }

    /// Whether the connection is TLS.
    pub fn is_tls(&self) -> bool {
        !matches!(self.0, Inner::Tcp(_))
    }

    /// The TCP connection under it.
    pub fn tcp_stream(&self) -> &TcpStream {
        match &self.0 {
            Inner::Tcp(tcp) => tcp,
            #[cfg(feature = "rustls")]
            Inner::Tls(tls) => tls.get_ref().0,
        }
    }
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        let connected = self.tcp_stream().connected();
        if self.is_h2() {
            connected.negotiated_h2()
        } else {
            connected
        }
    }
}

/// Hands each call to the stream's inner connection.
macro_rules! through {
    ($self:ident, $io:ident => $call:expr) => {
        match &mut $self.get_mut().0 {
            Inner::Tcp($io) => {
                let $io = Pin::new($io);
                $call
            }
            #[cfg(feature = "rustls")]
            Inner::Tls($io) => {
                let $io = Pin::new(&mut **$io);
                $call
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        through!(self, io => io.poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        through!(self, io => io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        through!(self, io => io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            Inner::Tcp(tcp) => tcp.is_write_vectored(),
            #[cfg(feature = "rustls")]
            Inner::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        through!(self, io => io.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        through!(self, io => io.poll_shutdown(cx))
    }
}
