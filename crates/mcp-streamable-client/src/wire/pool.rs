//! The pool of plain HTTP/1.1 connections to the configured endpoint, each driven by the task
//! that uses it.
//!
//! hyper-util's pooled client gives every connection a task of its own and every request a
//! trip through it: the request is queued to that task, which writes it, reads the answer and
//! hands the head and each chunk of the body back through channels, and one more task per
//! request waits to put the connection back in the pool. Here a connection is leased to one
//! request at a time, and whoever waits for the answer polls the connection itself: the
//! sender's task writes the request and reads the head, the reader of the body reads the rest
//! (when the whole answer came at once, the sender's task reads it all). The lease goes back to
//! the pool as soon as the body is done, before its last frame is handed on.
//!
//! A connection the server closed while it sat in the pool is found out by the first poll of
//! the next request on it, which reads before it writes and leaves the request unsent, or when
//! a request written on it gets no byte back (RFC 9112, section 9.3.1.1, as
//! [`stale`](super::stale) tells): either way the request is sent once more on a new
//! connection.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tower_service::Service;

use super::stale::{Counted, Counting, Tally};
use crate::error::{ConnectFailed, Error, Kind};

/// How long a connection may sit unused in the pool before it is closed rather than reused:
/// hyper-util's default, which servers' keep-alive timeouts (often 60 s or more, 5 s for some)
/// may undercut, in which case the stale-connection retry covers the difference.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

type Connection = http1::Connection<TokioIo<Counted>, Full<Bytes>>;

/// The idle connections, the most recently used last.
type Idle = Mutex<Vec<(Lease, Instant)>>;

/// Plain HTTP/1.1 connections to one origin.
pub(crate) struct Pool {
    connector: Counting,
    /// The origin's URI, to connect to.
    origin: Uri,
    idle: Arc<Idle>,
}

/// Why an [exchange](Lease::exchange) brought no answer.
enum Failed {
    /// hyper's error: of the connection, or of the request, which may have been sent.
    Http(hyper::Error),
    /// The connection ended before it took the request, which was not sent.
    Unsent,
}

/// One connection, leased to one request and the reading of its answer.
pub(crate) struct Lease {
    send: http1::SendRequest<Full<Bytes>>,
    /// Boxed: the connection's state is large, and a lease moves with the futures of the
    /// request and the reader of its body, which are the smaller for it.
    held: Box<Held>,
}

/// The connection of a [`Lease`], and what it needs to know about it.
struct Held {
    conn: Connection,
    /// The connection's tally, to tell a stale connection.
    tally: Arc<Tally>,
    /// The connection has ended: it is not polled again, and not reused.
    ended: bool,
    /// Where the connection goes back once its answer was read.
    home: Arc<Idle>,
}

impl Pool {
    pub(crate) fn new(connector: Counting, origin: Uri) -> Pool {
        Pool {
            connector,
            origin,
            idle: Arc::default(),
        }
    }

    /// Sends the request `make` builds on a pooled connection, or on a new one; once more on a
    /// new one if the pooled one turned out stale. Returns the answer's head and the lease of
    /// the connection, which its body needs to be read.
    pub(crate) async fn send(
        &self,
        make: impl Fn() -> Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lease), Error> {
        // Connecting is boxed, as rare: its state would enlarge every request's.
        let Some(mut lease) = self.checkout() else {
            return Box::pin(self.send_fresh(make())).await;
        };
        // The request is built in a statement of its own, so that no future holds its place.
        let exchange = lease.exchange(make());
        match exchange.await {
            Ok(response) => Ok((response, lease)),
            Err(Failed::Unsent) => {
                tracing::debug!("pooled connection had closed; sending on a new one");
                Box::pin(self.send_fresh(make())).await
            }
            Err(Failed::Http(e)) if e.is_canceled() || lease.held.tally.is_stale() => {
                tracing::debug!(error = %e, "pooled connection was stale; sending on a new one");
                let request = make();
                Box::pin(self.send_fresh(request)).await
            }
            Err(Failed::Http(e)) => Err(Error::new(Kind::Http).with(e)),
        }
    }

    /// Sends `request` on a new connection.
    async fn send_fresh(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lease), Error> {
        let mut lease = self.connect().await?;
        let exchange = lease.exchange(request);
        match exchange.await {
            Ok(response) => Ok((response, lease)),
            Err(Failed::Http(e)) => Err(Error::new(Kind::Http).with(e)),
            Err(Failed::Unsent) => Err(Error::new(Kind::Http)
                .with("the server closed a new connection before the request could be sent")),
        }
    }

    /// The most recently used idle connection that has not been idle for too long.
    ///
    /// It is not polled here to see whether the server closed it meanwhile: the first poll of
    /// the exchange reads before it writes, finds that end then and leaves the request unsent
    /// ([`Failed::Unsent`]), and the request goes on a new connection, as one that met a close
    /// while it was written does. Polling here too would cost every request a poll of its
    /// connection, for an end that tokio has mostly not seen yet.
    fn checkout(&self) -> Option<Lease> {
        loop {
            let (lease, since) = lock(&self.idle).pop()?;
            if since.elapsed() < IDLE_TIMEOUT && !lease.held.ended && lease.send.is_ready() {
                return Some(lease);
            }
        }
    }

    /// Opens a new connection.
    async fn connect(&self) -> Result<Lease, Error> {
        let connecting = self.connector.clone().call(self.origin.clone());
        let io = connecting
            .await
            .map_err(|e| Error::new(Kind::Http).with(ConnectFailed(e.into())))?;
        let tally = io.inner().tally();
        let (send, conn) = http1::handshake(io)
            .await
            .map_err(|e| Error::new(Kind::Http).with(ConnectFailed(e.into())))?;
        Ok(Lease {
            send,
            held: Box::new(Held {
                conn,
                tally,
                ended: false,
                home: self.idle.clone(),
            }),
        })
    }
}

impl Lease {
    /// Sends `request` and drives the connection until the head of the answer came.
    ///
    /// hyper's future of the answer holds the request until it is sent: boxed, so that the
    /// futures of every caller above, which copy it when they start awaiting, stay small.
    fn exchange(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> impl Future<Output = Result<Response<Incoming>, Failed>> + Send + '_ {
        let mut response = Box::pin(self.send.send_request(request));
        poll_fn(move |cx| {
            self.drive(cx);
            // Only the connection, polled just above, can complete the answer: no waker.
            match response
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                Poll::Ready(answer) => Poll::Ready(answer.map_err(Failed::Http)),
                // An ended connection has answered every request it took, if only with an
                // error; one it did not take (it found the server's close first) is handed back
                // only when the connection is dropped, and was never sent.
                Poll::Pending if self.held.ended => Poll::Ready(Err(Failed::Unsent)),
                Poll::Pending => Poll::Pending,
            }
        })
    }

    /// Lets the connection read and write what it can; `cx` hears when it can do more.
    pub(crate) fn drive(&mut self, cx: &mut Context<'_>) {
        let held = &mut *self.held;
        if held.ended {
            return;
        }
        if let Poll::Ready(result) = Pin::new(&mut held.conn).poll(cx) {
            held.ended = true;
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended");
            }
        }
    }

    /// The answer was read: the connection goes back to the pool, unless it ended.
    pub(crate) fn release(mut self) {
        // The connection takes the next request once polled after the end of the answer; the
        // poll that read that end has usually done it.
        if !self.send.is_ready() {
            self.drive(&mut Context::from_waker(Waker::noop()));
        }
        if self.held.ended {
            return;
        }
        let home = self.held.home.clone();
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

fn lock(idle: &Idle) -> std::sync::MutexGuard<'_, Vec<(Lease, Instant)>> {
    idle.lock().unwrap_or_else(PoisonError::into_inner)
}
