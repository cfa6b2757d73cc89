//! Telling a stale keep-alive connection from a failed request.
//!
//! A server may close an idle HTTP/1.1 connection at any time without `Connection: close`, so a
//! request written on a pooled connection can meet the close: the connection ends before any
//! byte of a response. RFC 9112 (section 9.3.1.1) lets a client retry such a request, since the
//! server could not have answered it. hyper-util's pooled client retries only a request it had
//! not started writing (`retry_canceled_requests`); once the request is written, the failure
//! (`connection closed before message completed`, or a reset) comes back as an error carrying the
//! connection's [`Connected`] info and nothing more. This module counts, per connection, the
//! exchanges started and the bytes read since the current one started, and hands the count to
//! hyper-util as a connection extra, so that the failure tells whether the request met a stale
//! connection. Over TLS it counts what TLS delivers, so that the server's `close_notify` is no
//! byte of an answer. The client's own connections ([`h1`](super::h1)) count the same
//! themselves.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::{Extensions, Uri};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use mcp_http_client::{Connector, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::negotiation::Negotiation;

/// What one connection has carried: shared between its socket and the connection info that
/// hyper-util attaches to errors.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Exchanges started: a write after reads (or the first write) starts one.
    exchanges: AtomicU32,
    /// Bytes read since the current exchange started.
    read: AtomicU64,
}

impl Tally {
    /// Whether a request that failed on this connection met a stale keep-alive connection: the
    /// connection carried an earlier exchange, and not a byte of this one's response came back.
    pub(crate) fn is_stale(&self) -> bool {
        self.exchanges.load(Ordering::Acquire) >= 2 && self.read.load(Ordering::Acquire) == 0
    }
}

/// Whether `error` is a request that met a stale keep-alive connection, and so was not acted
/// on and can be sent again on a fresh connection. HTTP/2 connections are never counted here:
/// hyper retries a stream the server refused with `GOAWAY` itself.
pub(crate) fn met_stale_connection(error: &hyper_util::client::legacy::Error) -> bool {
    if error.is_connect() {
        return false;
    }
    let Some(connected) = error.connect_info() else {
        return false;
    };
    if connected.is_negotiated_h2() {
        return false;
    }
    let mut extras = Extensions::new();
    connected.get_extras(&mut extras);
    extras.get::<Arc<Tally>>().is_some_and(|t| t.is_stale())
}

/// A connection that keeps its [`Tally`].
#[derive(Debug)]
pub(crate) struct Counted {
    io: Stream,
    tally: Arc<Tally>,
    /// The last operation was a write: the reads that follow answer it.
    writing: bool,
}

impl Connection for Counted {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.tally.clone())
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if read > 0 {
            self.writing = false;
            self.tally.read.fetch_add(read as u64, Ordering::AcqRel);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.start_exchange();
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.start_exchange();
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

impl Counted {
    fn new(io: Stream) -> TokioIo<Counted> {
        TokioIo::new(Counted {
            io,
            tally: Arc::default(),
            writing: false,
        })
    }

    /// A write after reads starts the next exchange (HTTP/1.1 as hyper speaks it: no
    /// pipelining, and a connection goes back to the pool only once its response was read).
    fn start_exchange(&mut self) {
        if !self.writing {
            self.writing = true;
            self.tally.exchanges.fetch_add(1, Ordering::AcqRel);
            self.tally.read.store(0, Ordering::Release);
        }
    }
}

/// The client's [`Connector`], with each connection's [`Tally`]; for the configured endpoint's
/// origin, the first connection the pool parked when it chose HTTP/2 ([`Negotiation`]).
#[derive(Debug, Clone)]
pub(crate) struct Counting {
    pub(crate) connector: Connector,
    pub(crate) negotiation: Arc<Negotiation>,
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<TokioIo<Counted>>> + Send>>;

impl tower_service::Service<Uri> for Counting {
    type Response = TokioIo<Counted>;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        if let Some(parked) = self.negotiation.take(&uri) {
            return Box::pin(std::future::ready(Ok(Counted::new(parked))));
        }
        let connecting = self.connector.connect(&uri);
        Box::pin(async move { connecting.await.map(Counted::new) })
    }
}
