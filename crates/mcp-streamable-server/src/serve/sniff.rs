//! Which HTTP version a new connection speaks, read within a deadline.
//!
//! hyper-util's `auto::Builder` reads the HTTP/2 preface with no timeout at all: a connection
//! that never sends a byte, or trickles the preface, is held forever before any of hyper's
//! timers start. This reads the first bytes itself, against the header read deadline, and
//! hands them back to hyper in front of the socket.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// The client connection preface of HTTP/2 (RFC 9113, section 3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The protocol a connection opened with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    H1,
    H2,
}

/// Reads until the bytes rule HTTP/2's preface in or out, before `deadline`. `None` when the
/// peer closed, failed or missed the deadline first.
pub(crate) async fn sniff<T>(mut io: T, deadline: Instant) -> Option<(Version, Prefixed<T>)>
where
    T: AsyncRead + Unpin,
{
    let mut buf = [0u8; H2_PREFACE.len()];
    let mut filled = 0;
    let version = loop {
        let read = tokio::time::timeout_at(deadline, io.read(&mut buf[filled..])).await;
        let n = match read {
            Ok(Ok(n)) if n > 0 => n,
            _ => return None,
        };
        filled += n;
        if buf[..filled] != H2_PREFACE[..filled] {
            break Version::H1;
        }
        if filled == H2_PREFACE.len() {
            break Version::H2;
        }
    };
    let prefix = Bytes::copy_from_slice(&buf[..filled]);
    Some((version, Prefixed { prefix, io }))
}

/// A connection with the bytes already read from it put back in front.
#[derive(Debug)]
pub(crate) struct Prefixed<T> {
    prefix: Bytes,
    io: T,
}

impl<T: AsyncRead + Unpin> AsyncRead for Prefixed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.has_remaining() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Prefixed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;

    use super::*;

    async fn sniffed(chunks: &[&[u8]]) -> Option<(Version, Vec<u8>)> {
        let (mut client, server) = tokio::io::duplex(64);
        for chunk in chunks {
            client.write_all(chunk).await.unwrap();
        }
        drop(client);
        let deadline = Instant::now() + Duration::from_secs(1);
        let (version, mut io) = sniff(server, deadline).await?;
        let mut all = Vec::new();
        io.read_to_end(&mut all).await.unwrap();
        Some((version, all))
    }

    #[tokio::test]
    async fn the_bytes_read_are_handed_back_in_order() {
        let get = b"GET /mcp HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(sniffed(&[get]).await, Some((Version::H1, get.to_vec())));
        let mut h2 = H2_PREFACE.to_vec();
        h2.extend_from_slice(b"\0\0\0\x04\0\0\0\0\0");
        assert_eq!(sniffed(&[&h2]).await, Some((Version::H2, h2.clone())));
        // Split anywhere, the preface is still recognised.
        for at in 1..H2_PREFACE.len() {
            let (a, b) = h2.split_at(at);
            assert_eq!(sniffed(&[a, b]).await, Some((Version::H2, h2.clone())));
        }
        // A prefix of the preface, then something else: HTTP/1.
        let odd = b"PRI * HTTP/1.1\r\n\r\n";
        assert_eq!(sniffed(&[odd]).await, Some((Version::H1, odd.to_vec())));
        assert_eq!(sniffed(&[]).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_or_trickling_peer_misses_the_deadline() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(&H2_PREFACE[..3]).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        assert!(sniff(server, deadline).await.is_none());
        drop(client);
    }
}
