//! Serving the service over TCP with production defaults (feature `serve`, on by default): the
//! one accept loop the examples use, for programs that do not bring their own server.
//!
//! ```no_run
//! use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, serve};
//!
//! # async fn run() -> std::io::Result<()> {
//! # let session = |_conn: ServerConnection, _parts: http::request::Parts| async {};
//! let service = StreamableHttpService::new(Config::default(), session);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve::Options::default()
//!     .path("/mcp")
//!     .health_paths("/livez", "/readyz")
//!     .serve(listener, service, serve::terminated())
//!     .await;
//! # Ok(())
//! # }
//! ```
//!
//! What every connection gets ([`Options`] sets each, its `DEFAULT_*` constant says why):
//!
//! - `TCP_NODELAY` (without it, Nagle's algorithm and delayed ACKs stall each reply by tens of
//!   milliseconds), then HTTP/1.1 or HTTP/2, whichever the client speaks;
//! - a **header read timeout** (10 s): a connection that sends nothing, or trickles the HTTP/2
//!   preface or a request's head, is closed without an answer; on HTTP/1.1 it also runs while
//!   a kept-alive connection waits for its next request;
//! - a **body read timeout** (30 s for the whole body, not per chunk): a body still arriving
//!   is answered 408 and its connection closed;
//! - an **idle timeout** (60 s): a connection with no request in flight is closed (HTTP/2:
//!   `GOAWAY`). An open SSE stream is a request in flight;
//! - a **connection cap** (10,000): at the cap, the server accepts no more until one ends,
//!   and new connections wait in the listen backlog;
//! - a **reset budget** per connection (100 requests a second abandoned before their response
//!   ended, on average, 200 at once): past it, the connection is closed (HTTP/2: `GOAWAY`). h2
//!   stops rapid resets by itself only when they come unpaced (20 streams reset before they
//!   were accepted); resets paced by a PING round trip ran 72,000 streams a second on one
//!   connection. Requests that run to their end are not limited: a flood of complete
//!   requests is a rate limiter's to stop (tower's `RateLimit` in front of the service, or a
//!   proxy), as one busy client legitimately runs thousands a second on one connection;
//! - HTTP/2 limits set deliberately: 100 concurrent streams, hyper's reset counters, and a
//!   ping every 20 s that finds peers gone without closing.
//!
//! Give it [`terminated()`] as its shutdown: it completes on SIGINT or SIGTERM, which service
//! managers send to stop a process (H3). With [`Options::health_paths`], liveness and
//! readiness probes are answered before the service (H1): readiness is 503 from the moment
//! shutdown begins, or while a node of a cluster does not hold its lease
//! ([`StreamableHttpService::readiness`], H2).
//!
//! [`Options::serve`] returns once `shutdown` completed and everything is closed: the
//! listener closes at once, connections are asked to close once their requests are over, the
//! service's sessions and streams end ([`StreamableHttpService::shutdown`]) and requests in
//! flight get the grace (5 s), then connections get the grace again before they are dropped.
//!
//! # With axum, or another server
//!
//! Mount the service in a `Router` (`route_service("/mcp", service.clone())`) and give
//! `axum::serve(...).with_graceful_shutdown` the future of [`shutdown_signal`]: axum waits for
//! every connection to finish, and a connection holding an SSE stream finishes only when the
//! service ends the stream. The limits above are then axum's and hyper's to set (axum 0.8
//! sets no header read timeout, no connection cap, no body timeout): put a reverse proxy with
//! its own in front, or serve with [`Options::serve`].

mod accept;
mod connection;
mod guard;
mod health;
mod options;
mod signal;
mod sniff;
mod timed_body;
#[cfg(feature = "tls")]
mod tls;
mod watch;

use std::future::Future;

use tokio::net::TcpListener;

use crate::http::service::StreamableHttpService;

pub use crate::serve::options::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_H2_KEEP_ALIVE, DEFAULT_H2_MAX_CONCURRENT_STREAMS,
    DEFAULT_H2_MAX_LOCAL_ERROR_RESET_STREAMS, DEFAULT_H2_MAX_PENDING_ACCEPT_RESET_STREAMS,
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_RESET_RATE, DEFAULT_SHUTDOWN_GRACE, Options,
};
pub use crate::serve::signal::{shutdown_signal, terminated};
#[cfg(feature = "tls")]
pub use crate::serve::tls::Tls;

/// Serves `service` on `listener` with the default [`Options`] (every path) until `shutdown`
/// completes, then shuts down gracefully; returns when everything is closed.
pub async fn serve<F>(listener: TcpListener, service: StreamableHttpService, shutdown: F)
where
    F: Future,
{
    Options::default().serve(listener, service, shutdown).await;
}

impl Options {
    /// Serves `service` on `listener` with these options until `shutdown` completes (its
    /// output is ignored: [`terminated()`], or `tokio::signal::ctrl_c()`), then shuts down gracefully:
    /// the listener closes, the service's sessions and streams end and requests in flight get
    /// the grace, then connections get the grace again. Returns when everything is closed,
    /// at most about twice the grace after `shutdown`.
    ///
    /// Failed `accept`s (out of file descriptors, say) are logged and retried after a pause.
    pub async fn serve<F>(self, listener: TcpListener, service: StreamableHttpService, shutdown: F)
    where
        F: Future,
    {
        accept::run(listener, service, self, shutdown).await;
    }
}
