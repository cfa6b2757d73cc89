//! The pool of HTTP/1.1 connections to the configured endpoint, each driven by the task that
//! uses it: plain TCP for an `http` endpoint, TLS for an `https` one that chose HTTP/1.1.
//!
//! hyper-util's pooled client gives every connection a task of its own and every request a
//! trip through it: the request is queued to that task, which writes it, reads the answer and
//! hands the head and each chunk of the body back through channels, and one more task per
//! request waits to put the connection back in the pool. Here a connection of the client's own
//! ([`h1`](super::h1)) is leased to one request at a time, and whoever waits for the answer
//! reads it: the sender's task writes the request and reads the head, the reader of the body
//! reads the rest (when the whole answer came at once, from the bytes read with the head). The
//! lease goes back to the pool as soon as the body is done, before its last data is handed on.
//!
//! A connection the server closed, or wrote on, while it sat in the pool is left out when it is
//! taken, if the runtime has seen that already. One whose close the runtime has not seen yet
//! is found out by the request written on it, which gets no byte back (RFC 9112, section
//! 9.3.1.1): the request is sent once more on a new connection.
//!
//! An `https` endpoint that chose HTTP/2 by ALPN is hyper-util's to speak to
//! ([`Negotiation`]): the pool then answers `None`, and its caller sends through hyper-util.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Uri;
use http::response::Parts;
use mcp_http_client::Connector;

use super::h1::{Conn, Decoder, Failed, H1Error, Step};
use super::negotiation::Negotiation;
use crate::error::{ConnectFailed, Error, Kind};

/// How long a connection may sit unused in the pool before it is closed rather than reused:
/// hyper-util's default, which servers' keep-alive timeouts (often 60 s or more, 5 s for some)
/// may undercut, in which case the stale-connection retry covers the difference.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The idle connections, the most recently used last.
type Idle = Mutex<Vec<(Lease, Instant)>>;

/// HTTP/1.1 connections to one origin.
pub(crate) struct Pool {
    connector: Connector,
    /// The origin's URI, to connect to.
    origin: Uri,
    idle: Arc<Idle>,
    /// Which HTTP the origin speaks, as far as known.
    negotiation: Arc<Negotiation>,
}

/// One connection, leased to one request and the reading of its answer.
struct Lease {
    /// Boxed once, when connected: the lease moves with every answer's body, which stays small.
    conn: Box<Conn>,
    /// Where the connection goes back once its answer was read.
    home: Arc<Idle>,
}

/// The body of an answer on a pooled connection, whose reading drives the connection.
#[derive(Debug)]
pub(crate) struct PooledBody {
    /// The connection, until the body is done.
    lease: Option<Lease>,
    decoder: Decoder,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("conn", &self.conn).finish()
    }
}

impl Pool {
    pub(crate) fn new(connector: Connector, origin: Uri, negotiation: Arc<Negotiation>) -> Pool {
        Pool {
            connector,
            origin,
            idle: Arc::default(),
            negotiation,
        }
    }

    /// Whether the origin may speak HTTP/1.1: it is plain `http`, or its connections chose
    /// HTTP/1.1, or none was made yet.
    pub(crate) fn speaks_http1(&self) -> bool {
        !self.negotiation.is_http2()
    }

    /// Sends a request (its head written by `head`, then `body`) on a pooled connection, or on
    /// a new one; once more on a new one if the pooled one turned out stale. Returns the
    /// answer's head and its body; `None` when the origin turned out to speak HTTP/2, which is
    /// hyper-util's to speak.
    pub(crate) async fn send(
        &self,
        head: &impl Fn(&mut Vec<u8>),
        body: Option<&Bytes>,
    ) -> Result<Option<(Parts, PooledBody)>, Error> {
        // Connecting is boxed, as rare: its state would enlarge every request's.
        let Some(mut lease) = self.checkout() else {
            return Box::pin(self.send_fresh(head, body)).await;
        };
        match lease.conn.exchange(head, body).await {
            Ok((parts, decoder)) => Ok(Some((parts, PooledBody::new(lease, decoder)))),
            Err(Failed::Stale(e)) => {
                tracing::debug!(error = %e, "pooled connection was stale; sending on a new one");
                Box::pin(self.send_fresh(head, body)).await
            }
            Err(Failed::Broken(e)) => Err(Error::new(Kind::Http).with(e)),
        }
    }

    /// Sends a request on a new connection.
    async fn send_fresh(
        &self,
        head: &impl Fn(&mut Vec<u8>),
        body: Option<&Bytes>,
    ) -> Result<Option<(Parts, PooledBody)>, Error> {
        let Some(mut lease) = self.connect().await? else {
            return Ok(None);
        };
        match lease.conn.exchange(head, body).await {
            Ok((parts, decoder)) => Ok(Some((parts, PooledBody::new(lease, decoder)))),
            Err(Failed::Stale(e) | Failed::Broken(e)) => Err(Error::new(Kind::Http).with(e)),
        }
    }

    /// The most recently used idle connection that has not been idle for too long, and that
    /// the runtime has not seen the server close or write on.
    ///
    /// A close the runtime has not seen yet is met by the request written on it, which then
    /// gets no byte back and goes on a new connection ([`Failed::Stale`]).
    fn checkout(&self) -> Option<Lease> {
        loop {
            let (mut lease, since) = lock(&self.idle).pop()?;
            if since.elapsed() < IDLE_TIMEOUT && lease.conn.is_reusable() && lease.conn.is_silent()
            {
                return Some(lease);
            }
        }
    }

    /// Opens a new connection; `None` when the origin speaks HTTP/2. The first connection to
    /// an `https` origin finds out which (ALPN), and those that would follow it wait for it.
    async fn connect(&self) -> Result<Option<Lease>, Error> {
        let first = self.negotiation.first().await;
        if self.negotiation.is_http2() {
            return Ok(None);
        }
        let stream = self
            .connector
            .connect(&self.origin)
            .await
            .map_err(|e| Error::new(Kind::Http).with(ConnectFailed(e.into())))?;
        let Some(stream) = self.negotiation.settle(stream, first.is_some()) else {
            return Ok(None);
        };
        Ok(Some(Lease {
            conn: Box::new(Conn::new(stream)),
            home: self.idle.clone(),
        }))
    }
}

impl Lease {
    /// The answer was read: the connection goes back to the pool, unless it can carry no more.
    fn release(self) {
        if !self.conn.is_reusable() {
            return;
        }
        let home = self.home.clone();
        let now = Instant::now();
        let mut idle = lock(&home);
        // The oldest come first: those unused for too long are closed.
        let expired = idle
            .iter()
            .take_while(|(_, since)| now.duration_since(*since) >= IDLE_TIMEOUT)
            .count();
        idle.drain(..expired);
        idle.push((self, now));
    }
}

impl PooledBody {
    fn new(lease: Lease, decoder: Decoder) -> PooledBody {
        let mut body = PooledBody {
            lease: Some(lease),
            decoder,
        };
        // An answer without a body is done already.
        body.release_if_done();
        body
    }

    /// The next data of the body, read as far as needed; `None` at its end. The connection
    /// goes back to the pool as soon as the body is complete.
    pub(crate) fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, H1Error>>> {
        let Some(lease) = &mut self.lease else {
            return Poll::Ready(None);
        };
        let polled = match lease.conn.poll_body(&mut self.decoder, cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(Step::Data(data))) => Some(Ok(data)),
            Poll::Ready(Ok(_)) => None,
            Poll::Ready(Err(e)) => {
                // A connection that failed under a body is not reused.
                self.lease = None;
                return Poll::Ready(Some(Err(e)));
            }
        };
        self.release_if_done();
        Poll::Ready(polled)
    }

    /// Whether the body is complete.
    pub(crate) fn is_done(&self) -> bool {
        self.decoder.is_done()
    }

    /// The bytes of the body still to come, when known.
    pub(crate) fn remaining(&self) -> Option<u64> {
        self.decoder.remaining()
    }

    fn release_if_done(&mut self) {
        if self.decoder.is_done()
            && let Some(lease) = self.lease.take()
        {
            lease.release();
        }
    }
}

fn lock(idle: &Idle) -> std::sync::MutexGuard<'_, Vec<(Lease, Instant)>> {
    idle.lock().unwrap_or_else(PoisonError::into_inner)
}
