//! HTTP/1.1 connections of the client's own, for the requests to the configured endpoint: plain,
//! or over TLS when the server chose HTTP/1.1 by ALPN.
//!
//! One exchange at a time, driven by whoever awaits it: the request's head, written straight
//! from the request's parts, goes out with its body in one write; the answer's head is parsed
//! with `httparse` out of a read buffer, and its body is taken from the same buffer as it is
//! read. hyper's client connection does the same through a dispatcher, a channel between the
//! connection and each request, a body channel and a `HeaderMap` to write from. In the client
//! load bench (16 callers, SSE replies) this module took the client's user-space instructions
//! per request from 51.8k to 39.1k, with one `write` and one `read` per request, as before.
//!
//! What it does not do, no request of the client needs: pipelining, upgrades,
//! `Expect: 100-continue`, request bodies of unknown length. What a server may do, it handles:
//! interim (1xx) answers, bodies framed by length, by chunks (extensions and trailers checked
//! against RFC 9112's grammar, then dropped: [`line`]) or by the close (over TLS, a close
//! without `close_notify` is an error: it may be a cut, RFC 9112 section 9.8),
//! `Connection: close`, HTTP/1.0 answers (never reused), heads up to
//! [`MAX_HEAD`](head::MAX_HEAD) bytes. The decoders are fuzzed against `httparse` and a reading
//! of RFC 9112 (`fuzz`, `cargo xtask fuzz`).

mod decode;
mod error;
#[cfg(test)]
mod fuzz;
mod head;
mod line;

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use bytes::{Bytes, BytesMut};
use http::response::Parts;
use mcp_http_client::Stream;
use tokio::io::AsyncWrite;

pub(crate) use decode::{Decoder, Step};
pub(crate) use error::H1Error;
pub(crate) use head::{write_end, write_field, write_request_line};

/// The largest body copied behind its head, to be written with it in one plain `write`
/// rather than a `writev`; a larger one is written from where it is.
const MAX_COPIED_BODY: usize = 16 * 1024;

/// Room made in the read buffer when it has less than [`MIN_ROOM`] left.
const READ_CHUNK: usize = 8 * 1024;
const MIN_ROOM: usize = 1024;

/// One HTTP/1.1 connection.
#[derive(Debug)]
pub(crate) struct Conn {
    io: Stream,
    /// Bytes read and not yet taken: the rest of a head, or of a body.
    read: BytesMut,
    /// The request's head, and its body when no larger than [`MAX_COPIED_BODY`]: what a
    /// pooled connection keeps between requests is bounded by it.
    head: Vec<u8>,
    /// Bytes of the request's head and body written.
    sent: usize,
    /// Exchanges started on this connection.
    exchanges: u32,
    /// Bytes read since the current exchange started.
    answered: usize,
    /// The connection carries no more exchanges: a response said so, its body runs to the
    /// close, or it failed.
    done: bool,
}

/// Why an [exchange](Conn::exchange) brought no response.
#[derive(Debug)]
pub(crate) enum Failed {
    /// A reused connection ended before any byte of the response: the server closed it while
    /// it was idle, and did not act on the request (RFC 9112, section 9.3.1.1).
    Stale(H1Error),
    /// Anything else: the server may have acted on the request.
    Broken(H1Error),
}

impl Conn {
    pub(crate) fn new(io: Stream) -> Conn {
        Conn {
            io,
            read: BytesMut::new(),
            head: Vec::with_capacity(256),
            sent: 0,
            exchanges: 0,
            answered: 0,
            done: false,
        }
    }

    /// Whether the connection can carry another exchange.
    pub(crate) fn is_reusable(&self) -> bool {
        !self.done && self.read.is_empty()
    }

    /// Whether the idle connection is still open and silent, as far as is known without a
    /// syscall: the runtime has seen no readiness on it since the end of its last answer, or a
    /// read finds nothing. The server's close, or an answer to no request (a `408` some servers
    /// send before closing an idle connection), makes it unusable before a request is written
    /// on it and read the wrong answer. Over TLS, what the server sent that carries no data (a
    /// session ticket) is taken in passing and leaves the connection silent.
    pub(crate) fn is_silent(&mut self) -> bool {
        let mut noop = Context::from_waker(Waker::noop());
        self.poll_fill(&mut noop).is_pending()
    }

    /// Writes a request, its head written by `write_head` and `body` after it, and reads the
    /// head of its response. The body is to be read with [`poll_body`](Conn::poll_body) and the
    /// returned decoder.
    pub(crate) async fn exchange(
        &mut self,
        write_head: &impl Fn(&mut Vec<u8>),
        body: Option<&Bytes>,
    ) -> Result<(Parts, Decoder), Failed> {
        self.exchanges += 1;
        self.answered = 0;
        self.head.clear();
        self.sent = 0;
        write_head(&mut self.head);
        let mut body = body.map_or(&[][..], |body| &body[..]);
        if body.len() <= MAX_COPIED_BODY {
            self.head.extend_from_slice(body);
            body = &[];
        }
        if let Err(e) = poll_fn(|cx| self.poll_write_all(cx, body)).await {
            return Err(self.failed(e.into()));
        }
        loop {
            match head::parse(&mut self.read) {
                Ok(Some(head)) => {
                    self.done |= !head.keep_alive;
                    return Ok((head.parts, Decoder::new(head.framing)));
                }
                Ok(None) => {}
                Err(e) => return Err(self.failed(e)),
            }
            match poll_fn(|cx| self.poll_fill(cx)).await {
                Ok(0) => return Err(self.failed(H1Error::Closed)),
                Ok(_) => {}
                Err(e) => return Err(self.failed(e.into())),
            }
        }
    }

    /// The next step of a body: its data as far as read, reading more when none is there.
    pub(crate) fn poll_body(
        &mut self,
        decoder: &mut Decoder,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Step, H1Error>> {
        loop {
            match decoder.decode(&mut self.read) {
                Ok(Step::More) => {}
                Ok(step) => return Poll::Ready(Ok(step)),
                Err(e) => return Poll::Ready(Err(self.fail(e))),
            }
            match ready!(self.poll_fill(cx)) {
                Ok(0) => {
                    self.done = true;
                    if let Err(e) = decoder.end_of_connection() {
                        return Poll::Ready(Err(e));
                    }
                }
                Ok(_) => {}
                Err(e) => return Poll::Ready(Err(self.fail(e.into()))),
            }
        }
    }

    /// The exchange failed with `e`: stale, if nothing came back on a reused connection.
    fn failed(&mut self, e: H1Error) -> Failed {
        let e = self.fail(e);
        if self.exchanges >= 2 && self.answered == 0 {
            Failed::Stale(e)
        } else {
            Failed::Broken(e)
        }
    }

    fn fail(&mut self, e: H1Error) -> H1Error {
        self.done = true;
        e
    }

    /// Writes the head, then `body` (empty when copied behind the head), in as few writes as
    /// the socket takes, and flushes what TLS may hold back.
    fn poll_write_all(&mut self, cx: &mut Context<'_>, body: &[u8]) -> Poll<io::Result<()>> {
        let total = self.head.len() + body.len();
        while self.sent < total {
            let (head, body) = match self.head.get(self.sent..) {
                Some(head) => (head, body),
                None => (&[][..], &body[self.sent - self.head.len()..]),
            };
            let io = Pin::new(&mut self.io);
            let n = if body.is_empty() {
                ready!(io.poll_write(cx, head))?
            } else {
                ready!(io.poll_write_vectored(cx, &[IoSlice::new(head), IoSlice::new(body)]))?
            };
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        Pin::new(&mut self.io).poll_flush(cx)
    }

    /// Reads what the socket has into the read buffer: the number of bytes, 0 at its end.
    ///
    /// Through `AsyncRead`, which takes a read that did not fill the room given as the sign
    /// that the socket is drained (epoll is edge-triggered): the next poll waits for the next
    /// readiness rather than trying a read that would block, one wasted syscall per answer.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.read.capacity() - self.read.len() < MIN_ROOM {
            self.read.reserve(READ_CHUNK);
        }
        let n = ready!(tokio_util::io::poll_read_buf(
            Pin::new(&mut self.io),
            cx,
            &mut self.read
        ))?;
        self.answered += n;
        Poll::Ready(Ok(n))
    }
}
