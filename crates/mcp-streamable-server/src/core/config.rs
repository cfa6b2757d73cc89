//! The server's configuration, with documented defaults.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::core::cluster::Cluster;
use crate::core::rate_limit::RateLimit;
use crate::core::store::event_store::EventStore;
use crate::core::store::session_store::SessionStore;
use crate::protocol::ToolHeaders;

/// The largest POST body read by default: 4 MiB (S3).
///
/// Requests carry tool arguments, rarely large; a bound keeps one client from making the server
/// buffer without limit. Bodies are read up to the bound, never further.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a session may stay idle before it ends: 30 minutes (S18).
///
/// Long enough for a person who pauses between prompts, short enough that abandoned sessions
/// (clients that never send DELETE, which is most of them) do not pile up.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The most sessions held at once: 10,000 (S18). At the cap the least recently used idle
/// session is ended to make room; if none is idle, `initialize` is answered 503.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// How often an idle SSE stream gets a comment: every 15 seconds (S15).
///
/// Proxies and load balancers commonly drop connections silent for 30 to 60 seconds.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The bytes of outgoing messages one session may hold waiting for a slow or absent reader:
/// 4 MiB (S22). See [`Config::max_buffered_bytes`].
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 4 * 1024 * 1024;

/// The bytes of outgoing messages all sessions together may hold waiting for slow or absent
/// readers: 256 MiB (S22). See [`Config::max_total_buffered_bytes`].
pub const DEFAULT_MAX_TOTAL_BUFFERED_BYTES: usize = 256 * 1024 * 1024;

/// The bytes of client messages all applications together may hold unread: 256 MiB (S22).
/// See [`Config::max_total_incoming_bytes`].
pub const DEFAULT_MAX_TOTAL_INCOMING_BYTES: usize = 256 * 1024 * 1024;

/// The messages a session's application has not taken yet, at most: 64. Past this, a POST
/// waits for the application to read, which slows a flooding client down.
pub const DEFAULT_INCOMING_CAPACITY: usize = 64;

/// The most messages a batch may carry: 1,000 (S9).
///
/// Only 2025-03-26 has batches, and real clients batch a handful of messages. Every message of
/// a batch is checked, routed and answered as the batch's part, and its answers wait together
/// in the session's buffer: a thousand typical answers fit the default buffer
/// ([`DEFAULT_MAX_BUFFERED_BYTES`]), a hundred thousand tiny requests in a 4 MiB body do not.
pub const DEFAULT_MAX_BATCH_MESSAGES: usize = 1_000;

/// The reconnection delay a stream's priming event suggests to clients: 1 second (S14).
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// Which `Host` or `Origin` values a server accepts (S17).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllowList {
    /// Any value: no check.
    Any,
    /// Loopback names only: `localhost`, `127.0.0.1` (the whole 127/8) and `[::1]`, any port.
    /// The default, so that a local server cannot be reached through DNS rebinding.
    Loopback,
    /// These values exactly, compared without regard to ASCII case. For `Host`, an entry
    /// without a port matches any port (`example.com` matches `example.com:8443`); for
    /// `Origin`, entries are whole origins (`https://app.example.com`).
    List(Vec<String>),
}

/// How the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Sessions, streams and resumption (the default).
    #[default]
    Stateful,
    /// No sessions: each POST is served on its own, by a [`ServerConnection`] of its own that
    /// ends with it; GET and DELETE are 405; requests to the client and messages unrelated to
    /// a request fail at once, since no stream could carry them or their answers (S20).
    ///
    /// [`ServerConnection`]: crate::ServerConnection
    Stateless,
}

/// Which families of the protocol a server serves on its endpoint (M1).
///
/// The session-based family (revisions 2025-03-26 to 2025-11-25: `initialize`, sessions, the
/// GET stream, resumption) and the per-request family (2026-07-28 and later: every request
/// carries its version and the client's capabilities in `params._meta`, and is served on its
/// own). Each POST is classified by its own content, so clients of both can use one endpoint
/// at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Families {
    /// Both, each POST as it comes (the default).
    #[default]
    Both,
    /// The session-based family only: a per-request POST is answered as a 2025-11-25 server
    /// answers it (400, `MCP-Protocol-Version` unsupported), which tells clients of both families to
    /// fall back to `initialize`.
    SessionOnly,
    /// The per-request family only: `initialize` and every other session-based POST are
    /// answered 400 with `UnsupportedProtocolVersion` (-32022) listing the versions served,
    /// GET and DELETE with 405.
    PerRequestOnly,
}

/// The configuration of a [`StreamableHttpService`](crate::StreamableHttpService).
///
/// Start from [`Config::default`] and change what you need:
///
/// ```
/// use std::time::Duration;
/// use mcp_streamable_server::{Config, InMemoryEventStore};
///
/// let config = Config::default()
///     .json_response(true)
///     .idle_timeout(Duration::from_secs(600))
///     .event_store(InMemoryEventStore::default());
/// assert!(config.is_json_response());
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) mode: Mode,
    pub(crate) families: Families,
    pub(crate) json_response: bool,
    pub(crate) event_store: Option<Arc<dyn EventStore>>,
    pub(crate) session_store: Option<Arc<dyn SessionStore>>,
    pub(crate) cluster: Option<Arc<dyn Cluster>>,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_batch_messages: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) max_sessions_per_client: Option<usize>,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) max_buffered_bytes: usize,
    pub(crate) max_total_buffered_bytes: usize,
    pub(crate) max_total_incoming_bytes: usize,
    pub(crate) incoming_capacity: usize,
    pub(crate) retry: Duration,
    pub(crate) allowed_hosts: AllowList,
    pub(crate) allowed_origins: AllowList,
    pub(crate) rate_limit: Option<RateLimit>,
    pub(crate) tool_headers: Option<ToolHeaders>,
    #[cfg(feature = "auth")]
    pub(crate) authorization: Option<mcp_streamable_auth::Guard>,
    #[cfg(feature = "otel")]
    pub(crate) telemetry: Option<crate::core::telemetry::Telemetry>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Stateful,
            families: Families::Both,
            json_response: false,
            event_store: None,
            session_store: None,
            cluster: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_batch_messages: DEFAULT_MAX_BATCH_MESSAGES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_client: None,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            max_total_buffered_bytes: DEFAULT_MAX_TOTAL_BUFFERED_BYTES,
            max_total_incoming_bytes: DEFAULT_MAX_TOTAL_INCOMING_BYTES,
            incoming_capacity: DEFAULT_INCOMING_CAPACITY,
            retry: DEFAULT_RETRY,
            allowed_hosts: AllowList::Loopback,
            allowed_origins: AllowList::Loopback,
            rate_limit: None,
            tool_headers: None,
            #[cfg(feature = "auth")]
            authorization: None,
            #[cfg(feature = "otel")]
            telemetry: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("Config");
        f.field("mode", &self.mode)
            .field("families", &self.families)
            .field("json_response", &self.json_response)
            .field("event_store", &self.event_store.is_some())
            .field("session_store", &self.session_store.is_some())
            .field(
                "cluster",
                &self.cluster.as_ref().map(|c| c.node().to_owned()),
            )
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_batch_messages", &self.max_batch_messages)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_client", &self.max_sessions_per_client)
            .field("keep_alive", &self.keep_alive)
            .field("max_buffered_bytes", &self.max_buffered_bytes)
            .field("max_total_buffered_bytes", &self.max_total_buffered_bytes)
            .field("max_total_incoming_bytes", &self.max_total_incoming_bytes)
            .field("incoming_capacity", &self.incoming_capacity)
            .field("rate_limit", &self.rate_limit)
            .field("tool_headers", &self.tool_headers)
            .field("retry", &self.retry)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins);
        #[cfg(feature = "auth")]
        f.field("authorization", &self.authorization);
        f.finish()
    }
}

impl Config {
    /// Stateful (sessions) or stateless (S20). Default: stateful.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Which families of the protocol are served (M1). Default: [`Families::Both`].
    ///
    /// A per-request (2026-07-28) request is served by a [`ServerConnection`] of its own,
    /// which the factory gets like a new session's, and which ends with the request; its
    /// `protocol_version` says 2026-07-28. See the crate docs.
    ///
    /// [`ServerConnection`]: crate::ServerConnection
    pub fn families(mut self, families: Families) -> Self {
        self.families = families;
        self
    }

    /// The protocol families this configuration serves (see [`families`](Self::families)): for
    /// what is built around the service, e.g. a pool that only per-request clients use.
    ///
    /// ```
    /// use mcp_streamable_server::{Config, Families};
    ///
    /// let config = Config::default().families(Families::SessionOnly);
    /// assert_eq!(config.served_families(), Families::SessionOnly);
    /// ```
    pub fn served_families(&self) -> Families {
        self.families
    }

    /// Shorthand for `mode(Mode::Stateless)`.
    pub fn stateless(self) -> Self {
        self.mode(Mode::Stateless)
    }

    /// Answers requests with one JSON body instead of an SSE stream (S4). A response whose
    /// request got a notification or request from the handler first is sent as SSE all the
    /// same, so nothing is dropped (S5). Default: off.
    pub fn json_response(mut self, on: bool) -> Self {
        self.json_response = on;
        self
    }

    /// Whether JSON-response mode is on.
    pub fn is_json_response(&self) -> bool {
        self.json_response
    }

    /// Keeps outgoing messages in `store` so that clients can resume streams with
    /// `Last-Event-ID` (S11, S13, S14). Without a store, nothing is kept once delivered, events
    /// carry no ids, and a lost connection loses what was not yet written to it. Stateless mode
    /// does not use it: no session outlives its POST, so nothing could be resumed. Default:
    /// none.
    pub fn event_store(mut self, store: impl EventStore) -> Self {
        self.event_store = Some(Arc::new(store));
        self
    }

    /// Keeps each session's record in `store` too (see [`SessionStore`]): what several
    /// processes serving one set of sessions share. Default: none; the sessions' records are
    /// the sessions themselves, in this process.
    pub fn session_store(mut self, store: impl SessionStore) -> Self {
        self.session_store = Some(Arc::new(store));
        self
    }

    /// Where spans and metrics go (feature `otel`; see [`Telemetry`](crate::Telemetry)). By
    /// default, the global providers as installed when the service is built.
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    pub fn telemetry(mut self, telemetry: crate::core::telemetry::Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Serves one set of sessions with the other nodes of `cluster` (see [`Cluster`]): a
    /// request may reach any node, and the node holding its session serves it. The cluster's
    /// own [`EventStore`] and [`SessionStore`], which every node shares, replace any set with
    /// [`event_store`](Config::event_store) and [`session_store`](Config::session_store).
    /// Default: none; each session is served by the process that started it.
    pub fn cluster(mut self, cluster: impl Cluster) -> Self {
        self.cluster = Some(Arc::new(cluster));
        self
    }

    /// With a cluster, its stores in place of any others (see [`Config::cluster`]).
    pub(crate) fn with_cluster_stores(mut self) -> Self {
        if let Some(cluster) = &self.cluster {
            self.event_store = Some(cluster.event_store());
            self.session_store = Some(cluster.session_store());
        }
        self
    }

    /// The most messages a batch may carry; a larger one is answered 400 with an
    /// invalid-request error, and none of it is delivered (S9). Default:
    /// [`DEFAULT_MAX_BATCH_MESSAGES`].
    pub fn max_batch_messages(mut self, max: usize) -> Self {
        self.max_batch_messages = max;
        self
    }

    /// The largest POST body accepted; larger ones are answered 413 (S3). Default:
    /// [`DEFAULT_MAX_BODY_BYTES`].
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long a session may go without activity before it ends (S18); open streams and
    /// requests in flight count as activity. Default: [`DEFAULT_IDLE_TIMEOUT`].
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The most sessions at once (S18), the backstop of [`max_sessions_per_client`](Self::max_sessions_per_client):
    /// at the cap, a new session evicts the least recently used idle session of the client
    /// holding the most, so that one client's flood of `initialize` empties its own sessions,
    /// not everyone else's. Default: [`DEFAULT_MAX_SESSIONS`].
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// The most sessions one client may hold at once (S18). A client is the session's
    /// [`SessionOwner`](crate::SessionOwner) (or verified principal, feature `auth`) when a layer in
    /// front said who calls, else the IP address of its connection when a
    /// [`PeerAddr`](crate::PeerAddr) is in the request's extensions (the crate's `serve` puts it
    /// there); sessions of unknown clients count against the total only. At this cap, a
    /// client's new session evicts its own least recently used idle session, or is refused with
    /// 503 if none is idle.
    ///
    /// Default: none, only the total cap, whose eviction already takes from the client holding
    /// the most sessions first. Set it where clients are told apart well: behind a reverse
    /// proxy every client has the proxy's address (put the forwarded one in `PeerAddr`), and
    /// tests and benchmarks on loopback are one client.
    pub fn max_sessions_per_client(mut self, max: usize) -> Self {
        self.max_sessions_per_client = Some(max.max(1));
        self
    }

    /// How often an idle SSE stream gets a keep-alive comment, or `None` for never (S15).
    /// Default: [`DEFAULT_KEEP_ALIVE`].
    pub fn keep_alive(mut self, every: Option<Duration>) -> Self {
        self.keep_alive = every;
        self
    }

    /// The bytes of outgoing messages one session may hold for readers that are slow or not
    /// connected (S22). Past it, a connected reader that is this far behind is disconnected
    /// (with an event store it resumes from the store; without one, the messages it missed are
    /// dropped and a warning logged), and the standalone stream, when no GET is open, drops its
    /// oldest messages, also with a warning. The message a connected reader is about to write
    /// does not count as being behind, so a single message larger than the budget still goes
    /// out: a session holds at most this many bytes plus one message per connected reader.
    /// Default: [`DEFAULT_MAX_BUFFERED_BYTES`].
    pub fn max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_bytes = bytes;
        self
    }

    /// The bytes of outgoing messages all sessions together may hold for readers that are slow
    /// or not connected (S22): without it, the per-session bound times the session cap is what
    /// a server could hold (4 MiB times 10,000 sessions by default). Past it, the largest
    /// backlogs are shed first, as within a session ([`max_buffered_bytes`](Self::max_buffered_bytes)),
    /// down to each session's share (this budget divided by the live sessions): a session over
    /// its share at once, the others by a background task within about 10 ms.
    /// Default: [`DEFAULT_MAX_TOTAL_BUFFERED_BYTES`].
    pub fn max_total_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_total_buffered_bytes = bytes;
        self
    }

    /// The bytes of client messages all sessions' applications together may hold unread (S22):
    /// a POST's body counts from when it is read, each message's share of it until its
    /// application takes the message. Without it, 64 messages of up to the body limit per session, times the
    /// sessions, is what a server could hold (S22's note). A POST that would exceed it is
    /// refused with 503 and `Retry-After`, its messages delivered to no one; one POST is
    /// always admitted when nothing else is held. Default:
    /// [`DEFAULT_MAX_TOTAL_INCOMING_BYTES`].
    pub fn max_total_incoming_bytes(mut self, bytes: usize) -> Self {
        self.max_total_incoming_bytes = bytes;
        self
    }

    /// How many incoming messages wait for the application before a POST waits too.
    /// Default: [`DEFAULT_INCOMING_CAPACITY`].
    pub fn incoming_capacity(mut self, messages: usize) -> Self {
        self.incoming_capacity = messages.max(1);
        self
    }

    /// The reconnection delay announced in priming events (S14). Default: [`DEFAULT_RETRY`].
    pub fn retry(mut self, delay: Duration) -> Self {
        self.retry = delay;
        self
    }

    /// The accepted `Host` values (S17). Default: [`AllowList::Loopback`]; a server reachable
    /// under other names must list them, or allow any.
    pub fn allowed_hosts(mut self, hosts: AllowList) -> Self {
        self.allowed_hosts = hosts;
        self
    }

    /// The accepted `Origin` values, for requests that carry one (S17). Default:
    /// [`AllowList::Loopback`]: browser pages served from loopback.
    pub fn allowed_origins(mut self, origins: AllowList) -> Self {
        self.allowed_origins = origins;
        self
    }

    /// Protects the endpoint with `guard` (feature `auth`): every request must carry a bearer
    /// token the guard accepts, whatever its method, family or mode, and is refused before
    /// anything else is looked at or registered (A1, A2): 401 with a `WWW-Authenticate`
    /// challenge pointing at the protected resource metadata, 403 `insufficient_scope`, as
    /// [`Refusal::to_response`](mcp_streamable_auth::Refusal::to_response) answers. The
    /// service also answers GET (and HEAD, OPTIONS) at the guard's
    /// [`metadata_paths`](mcp_streamable_auth::Guard::metadata_paths) with the metadata
    /// document (A3), when those requests reach it. An accepted request carries its
    /// [`Principal`](mcp_streamable_auth::Principal) in its extensions, down to the factory
    /// (A5); the session it starts is bound to the principal (A4). Default: none, and then
    /// nothing is checked, at the cost of one `Option` test per request.
    ///
    /// ```
    /// use mcp_streamable_auth::{Guard, Principal, VerifyFuture};
    /// use mcp_streamable_server::Config;
    /// # struct MyVerifier;
    /// # impl mcp_streamable_auth::TokenVerifier for MyVerifier {
    /// #     fn verify<'a>(&'a self, _: &'a str) -> VerifyFuture<'a> { Box::pin(async { Ok(Principal::new("a")) }) }
    /// # }
    ///
    /// let guard = Guard::builder("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .required_scopes(["mcp"])
    ///     .build(MyVerifier)?;
    /// let config = Config::default().authorization(guard);
    /// assert!(config.guard().is_some());
    /// # Ok::<(), mcp_streamable_auth::ConfigError>(())
    /// ```
    #[cfg(feature = "auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
    pub fn authorization(mut self, guard: mcp_streamable_auth::Guard) -> Self {
        self.authorization = Some(guard);
        self
    }

    /// Limits how fast each client may send requests (S26): POSTs over a quota are answered 429
    /// with `Retry-After`, charged to nothing and delivered to no application. Off by default.
    /// See [`RateLimit`] for what counts, and who a client is.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// Checks the `Mcp-Param-*` headers of per-request `tools/call`s (2026-07-28, M5) against
    /// their arguments by the tools' declarations, before the application sees them: a header
    /// missing for an argument given, given for an argument absent, for no declared parameter,
    /// repeated, unreadable or with another value is answered 400 with `HeaderMismatch`
    /// (-32020) naming it. Off by default: the application checks them itself, if at all.
    pub fn tool_headers(mut self, tools: ToolHeaders) -> Self {
        self.tool_headers = Some(tools);
        self
    }

    /// The guard set with [`authorization`](Config::authorization), if any (feature `auth`).
    #[cfg(feature = "auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
    pub fn guard(&self) -> Option<&mcp_streamable_auth::Guard> {
        self.authorization.as_ref()
    }
}
