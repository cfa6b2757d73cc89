//! The limits `serve` applies, with their defaults and the reason for each.

use std::time::Duration;

/// How long a client has to send a request's head. It runs twice for a new connection: once
/// for its first bytes (up to the 24 of the HTTP/2 preface, which tell the protocol), then
/// for the rest of the first head (HTTP/1.1) or the first request (HTTP/2), so a trickled
/// first head is closed within twice this at most; on HTTP/1.1 it runs again from the end of
/// each response to the end of the next head. Real clients send a head in one write; ten
/// seconds is ample over a slow mobile link, and a connection that trickles its headers (or
/// sends nothing) is let go.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has to send a request's whole body, from the end of its head. MCP bodies
/// are JSON messages of kilobytes (at most `Config::max_body_bytes`, 4 MiB by default, which
/// takes about 3 s at 10 Mbit/s); a body that trickles in is answered 408 and its connection
/// closed.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection with no request in flight is kept open for the next one. On
/// HTTP/1.1 hyper's header read timeout runs while a connection waits for its next request,
/// so an idle HTTP/1.1 connection is closed after the shorter of the two; on HTTP/2 this is
/// the only bound on a connection without streams (its keep-alive pings only find dead
/// peers).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Most connections served at once. Each costs a task, hyper's buffers (a few tens of KiB)
/// and a file descriptor; at the cap the server stops accepting until one ends, and new
/// connections wait in the kernel's listen backlog. Keep it under the process's file
/// descriptor limit (`ulimit -n`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// Most requests per second a connection may abandon before their response ended, on average:
/// its budget holds two seconds' worth, refilled at this rate. An HTTP/2 client abandons a
/// request by resetting its stream (an HTTP/1.1 client can only close its connection): an MCP
/// client does so when a user cancels a call, a few times a minute at most. A peer opening and
/// resetting streams paced to stay under h2's own counter (which catches only streams reset
/// before the server accepted them) ran 72,000 a second on one connection. Past the budget the
/// connection is closed with `GOAWAY`. Requests that run to the end cost nothing: a busy client
/// runs tens of thousands a second on one connection.
pub const DEFAULT_MAX_RESET_RATE: u32 = 100;

/// Most concurrent HTTP/2 streams per connection: a session's POSTs in flight plus its GET
/// stream. hyper's default, 200, is well above what one MCP client needs; 100 is the value
/// the HTTP/2 specification recommends as the least a server should allow.
pub const DEFAULT_H2_MAX_CONCURRENT_STREAMS: u32 = 100;

/// Most HTTP/2 streams a peer may reset before the server accepted them (h2's rapid-reset
/// counter): hyper's default, 20.
pub const DEFAULT_H2_MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;

/// Most HTTP/2 streams the server may reset for the peer's protocol errors before it sends
/// `GOAWAY`: hyper's default, 1,024.
pub const DEFAULT_H2_MAX_LOCAL_ERROR_RESET_STREAMS: usize = 1_024;

/// How often an HTTP/2 connection is pinged, and how long the answer may take: a peer that
/// vanished without closing (a laptop put to sleep) holding an SSE stream is found within
/// 40 s.
pub const DEFAULT_H2_KEEP_ALIVE: Duration = Duration::from_secs(20);

/// How long requests in flight get to finish at shutdown, and how long a connection told to
/// close (idle, or over its reset budget) gets to end by itself before it is dropped.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What [`serve`](super::serve()) applies to the connections it serves: timeouts, caps and
/// HTTP/2 limits. `Options::default()` holds the `DEFAULT_*` values of this module.
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_server::serve::Options;
///
/// let options = Options::default()
///     .path("/mcp")
///     .max_connections(1_000)
///     .header_read_timeout(Duration::from_secs(5));
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    pub(crate) path: Option<String>,
    pub(crate) liveness_path: Option<String>,
    pub(crate) readiness_path: Option<String>,
    pub(crate) header_read_timeout: Duration,
    pub(crate) body_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_reset_rate: u32,
    pub(crate) h2_max_concurrent_streams: u32,
    pub(crate) h2_max_pending_accept_reset_streams: usize,
    pub(crate) h2_max_local_error_reset_streams: usize,
    pub(crate) h2_keep_alive: Duration,
    pub(crate) shutdown_grace: Duration,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<super::tls::Tls>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            path: None,
            liveness_path: None,
            readiness_path: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_reset_rate: DEFAULT_MAX_RESET_RATE,
            h2_max_concurrent_streams: DEFAULT_H2_MAX_CONCURRENT_STREAMS,
            h2_max_pending_accept_reset_streams: DEFAULT_H2_MAX_PENDING_ACCEPT_RESET_STREAMS,
            h2_max_local_error_reset_streams: DEFAULT_H2_MAX_LOCAL_ERROR_RESET_STREAMS,
            h2_keep_alive: DEFAULT_H2_KEEP_ALIVE,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl Options {
    /// Serves MCP at this path only (and, with feature `auth`, the guard's protected resource
    /// metadata paths); other paths get 404. By default the service answers every path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Answers liveness probes at `liveness` and readiness probes at `readiness` (H1; none by
    /// default, since the service serves every path unless [`path`](Self::path) is set), for
    /// Kubernetes' `livenessProbe`/`readinessProbe`, a load balancer's health checks, or a
    /// monitor. `GET` or `HEAD` of `liveness` is 200 `ok` while the server serves connections;
    /// of `readiness`, 200 `ready` when [`StreamableHttpService::readiness`] is ready, else 503
    /// with the reason (`shutting down`, `lease not held`), in plain text. Probes are answered
    /// before the service sees them: no host or origin check (a kubelet's `Host` is the pod's
    /// address) and no authorization, and they start no session.
    ///
    /// ```
    /// use mcp_streamable_server::serve::Options;
    ///
    /// let options = Options::default().path("/mcp").health_paths("/livez", "/readyz");
    /// # let _ = options;
    /// ```
    ///
    /// [`StreamableHttpService::readiness`]: crate::StreamableHttpService::readiness
    pub fn health_paths(
        mut self,
        liveness: impl Into<String>,
        readiness: impl Into<String>,
    ) -> Self {
        self.liveness_path = Some(liveness.into());
        self.readiness_path = Some(readiness.into());
        self
    }

    /// How long a client has to send a request's head ([`DEFAULT_HEADER_READ_TIMEOUT`]); the
    /// connection is closed without an answer past it. Also the time a new connection has to
    /// send its first request on HTTP/2.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a client has to send a request's body after its head
    /// ([`DEFAULT_BODY_READ_TIMEOUT`]); past it the request is answered 408 and the
    /// connection closed.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// How long a connection with no request in flight stays open ([`DEFAULT_IDLE_TIMEOUT`]).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Most connections served at once ([`DEFAULT_MAX_CONNECTIONS`]); at the cap the server
    /// stops accepting until one ends. At least 1.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Most requests per second a connection may abandon before their response ended (HTTP/2
    /// stream resets), on average, with two seconds' worth as a burst
    /// ([`DEFAULT_MAX_RESET_RATE`]); past it, the connection is closed with `GOAWAY`. At
    /// least 1.
    pub fn max_reset_rate(mut self, per_second: u32) -> Self {
        self.max_reset_rate = per_second.max(1);
        self
    }

    /// Most concurrent HTTP/2 streams per connection
    /// ([`DEFAULT_H2_MAX_CONCURRENT_STREAMS`]).
    pub fn h2_max_concurrent_streams(mut self, max: u32) -> Self {
        self.h2_max_concurrent_streams = max;
        self
    }

    /// Most HTTP/2 streams reset by the peer before they were accepted
    /// ([`DEFAULT_H2_MAX_PENDING_ACCEPT_RESET_STREAMS`]).
    pub fn h2_max_pending_accept_reset_streams(mut self, max: usize) -> Self {
        self.h2_max_pending_accept_reset_streams = max;
        self
    }

    /// Most HTTP/2 streams reset for the peer's errors before `GOAWAY`
    /// ([`DEFAULT_H2_MAX_LOCAL_ERROR_RESET_STREAMS`]).
    pub fn h2_max_local_error_reset_streams(mut self, max: usize) -> Self {
        self.h2_max_local_error_reset_streams = max;
        self
    }

    /// The HTTP/2 ping interval, and how long its answer may take
    /// ([`DEFAULT_H2_KEEP_ALIVE`]).
    pub fn h2_keep_alive(mut self, every: Duration) -> Self {
        self.h2_keep_alive = every;
        self
    }

    /// How long requests in flight get at shutdown, and a connection told to close gets to
    /// end ([`DEFAULT_SHUTDOWN_GRACE`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Terminates TLS on every connection (feature `tls`; plain TCP by default): the
    /// handshake runs within the header read timeout, then the connection speaks the HTTP
    /// version ALPN chose (see [`Tls`](super::Tls)).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: super::tls::Tls) -> Self {
        self.tls = Some(tls);
        self
    }
}
