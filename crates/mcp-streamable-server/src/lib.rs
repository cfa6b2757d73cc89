//! The Streamable HTTP **server** transport of the Model Context Protocol, on hyper.
//!
//! [`StreamableHttpService`] serves one MCP endpoint: it validates each HTTP request, runs
//! sessions (each one a [`ServerConnection`] handed to your application, which implements
//! `mcp_transport::Connection`), routes every outgoing message to the stream of the request it
//! relates to, and, with an [`EventStore`], lets clients resume broken streams. The wire
//! behaviour it promises is the `S` and `M` rows of the project's `SPEC.md`, each pinned by a
//! test.
//!
//! ```no_run
//! use mcp_jsonrpc::{Message, Response, to_raw_value};
//! use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService};
//! use mcp_transport::{Connection, Sender};
//!
//! // A session answers every request with an empty object.
//! async fn session(mut conn: ServerConnection, _parts: http::request::Parts) {
//!     let sender = conn.sender();
//!     while let Ok(Some(message)) = conn.recv().await {
//!         if let Message::Request(request) = message {
//!             let result = to_raw_value(&serde_json::json!({})).unwrap();
//!             let _ = sender.send(Response::success(request.id, result).into()).await;
//!         }
//!     }
//! }
//!
//! let service = StreamableHttpService::new(Config::default(), session);
//! # let _ = service;
//! ```
//!
//! # Routing (S10)
//!
//! A response goes on the stream of the POST that carried its request; a message sent with
//! [`Outgoing::related_to`](mcp_transport::Outgoing::related_to) naming a request in flight
//! goes there too; everything else, and anything related to a request already answered, goes
//! on the standalone GET stream. Nothing is dropped silently.
//!
//! # The per-request protocol of 2026-07-28 (M1-M6)
//!
//! The service serves both families on one endpoint ([`Config::families`] can refuse either), and
//! classifies each POST by itself: one whose `params._meta` names a protocol version, or whose
//! `MCP-Protocol-Version` header names 2026-07-28 or later, is per-request; everything else
//! (`initialize`, session traffic, GET, DELETE) is session-based. A per-request POST:
//!
//! - is checked before the application sees it, in this order, each refusal a 400 carrying
//!   the request's id: `_meta` carries the version and the client's capabilities (-32602);
//!   the `MCP-Protocol-Version` header agrees with it ([`codes::HEADER_MISMATCH`]); the
//!   version is one of [`ProtocolVersion::PER_REQUEST`] ([`codes::UNSUPPORTED_PROTOCOL_VERSION`], its
//!   `data` listing what is served); then `Mcp-Method` and `Mcp-Name` agree with the body,
//!   after trimming and `=?base64?...?=` decoding (-32020, saying which header and why);
//! - is served by a [`ServerConnection`] of its own: the factory runs for it as for a new
//!   session, with no session id, and [`ServerSender::protocol_version`] says 2026-07-28. The
//!   connection ends with the request. Requests to the client and messages unrelated to the
//!   request fail at once (a 2026-07-28 server asks through an `InputRequiredResult`);
//! - is answered once the application's first message for it is known: its response alone
//!   as JSON, with the status its error calls for ([`codes::status_of`]: 404 for -32601, 400
//!   for the protocol's request errors); a notification first, or one keep-alive period of
//!   silence, makes it an SSE stream without event ids;
//! - is cancelled when the client closes the stream (or leaves before the reply): the
//!   application reads a `notifications/cancelled` for it, then the end of the connection,
//!   and anything it sends after fails.
//!
//! GET and DELETE naming a 2026-07-28 version are 405, as are all of them on a server of the
//! per-request family only.
//!
//! # Who a session belongs to (S7)
//!
//! A layer in front of the service that knows who is calling (authentication middleware) puts
//! a [`SessionOwner`] in the request's extensions. A session remembers the owner of the
//! `initialize` that started it, and a request of anyone else naming it is answered as for an
//! unknown session (404), so that a session id learnt by someone else is of no use to them.
//! The parts handed to the factory carry the same extensions, so the application knows who
//! started the session.
//!
//! # Stores
//!
//! An [`EventStore`] keeps the messages of a session's streams for resumption (S11); a
//! [`SessionStore`] keeps each session's record (id, negotiated version, `initialize`, owner,
//! last activity) where several processes can read it. The session core writes both in the
//! order of the sends, never while holding a session's lock, and asks the event store, not its
//! own counters, whether a `Last-Event-ID` was given out.
//!
//! # Several nodes (N1-N10)
//!
//! With a [`Cluster`] ([`Config::cluster`], which brings the event store and session store
//! every node shares), several processes behind a load balancer without session affinity serve
//! one set of sessions. A session's application runs on one node, its holder; a request
//! reaching another node is sent to the holder over HTTP/2, signed, and its answer relayed, so
//! any node serves any POST, GET, resumption or DELETE. Every write of a session carries its
//! [`Fence`], and a node delivers nothing while its [`Lease`] does not hold: a node that was
//! paused or cut off, and whose sessions were taken over meanwhile, changes nothing of them.
//! When a holder dies, the next node a request of its session reaches takes it over: it starts
//! the application again from the stored `initialize` (the factory's parts carry
//! [`Restarted`]) and answers the requests the dead holder left unanswered with errors.
//! [`InMemoryNetwork`] runs nodes in one process (for tests); `mcp-streamable-redis` shares
//! them through Redis or a Redis Cluster.
//!
//! # Memory (S22)
//!
//! Per session: at most [`Config::max_buffered_bytes`] of messages waiting for slow or absent
//! readers (plus the one message each connected reader is about to write), at most
//! [`Config::incoming_capacity`] messages waiting for the application, and whatever the event
//! store's own caps allow ([`InMemoryEventStore`]: 1 MiB per session by default). Streams and
//! requests are forgotten once over. Sessions are capped in number and end when idle. A batch
//! (2025-03-26) holds at most [`Config::max_batch_messages`] messages.
//! [`StreamableHttpService::buffered_bytes`] tells what the sessions hold.
//!
//! # Serving (feature `serve`)
//!
//! [`serve::Options::serve`] (or [`serve()`], with the defaults) is the one way to serve the
//! service over TCP with production defaults: header, body and idle timeouts, a connection
//! cap, HTTP/1.1 and HTTP/2 with a per-connection reset budget against paced rapid resets,
//! `TCP_NODELAY`, and a graceful shutdown that ends the sessions and their streams (S24), on
//! SIGINT or SIGTERM with [`serve::terminated`] (H3); [`serve::Options::health_paths`] answers
//! liveness and readiness probes, ready meaning not shutting down and, with a cluster, holding
//! the node's lease ([`StreamableHttpService::readiness`], H1, H2). In
//! axum, give `with_graceful_shutdown` the future of [`serve::shutdown_signal`], or it never
//! returns while a client holds a GET stream open. The [`serve`](mod@serve) module says what
//! each limit does and why its default is what it is. With feature `tls`,
//! `serve::Options::tls` terminates TLS on every connection (S25).
//!
//! # Telemetry (feature `otel`)
//!
#![cfg_attr(feature = "otel", doc = include_str!("telemetry.md"))]
#![cfg_attr(
    not(feature = "otel"),
    doc = "Built without feature `otel`: the service records no spans and no metrics, and none \
           of the code that would is compiled."
)]
//!
//! # How it is built
//!
//! The modules form layers, top to bottom. A module imports from its own layer and the ones
//! below it, never from one above, and no two files import each other but the pairs the tidy
//! test lists with their reasons (`cargo test -p xtask`, `layers.rs`), which holds the code to
//! this list:
//!
//! 1. `serve`: serving over TCP (feature `serve`): the accept loop, the connection cap, each
//!    connection's timeouts and reset budget, graceful shutdown.
//! 2. `listen`: the listen streams of 2026-07-28 an application serves on its connections,
//!    and the bus between nodes that carries the changes announced to them.
//! 3. `http`: the HTTP edge: the service, origin checks, the POST of each family, GET and
//!    DELETE, the replies and their bodies; the one mapping of the core's errors to statuses;
//!    with a cluster, the requests of sessions held elsewhere sent to their holder and its
//!    streams relayed, and the other nodes' requests served.
//! 4. `cluster`: several nodes: where a session is served (and its takeover), the signature of
//!    the requests nodes forward each other, the HTTP/2 connections to the peers, the directory
//!    of holders, the lease's consequences, and the in-memory network.
//! 5. `core`: the session core, which knows nothing of HTTP requests and responses: the
//!    sessions and their state machine, readers, the stores, the application's connection,
//!    the cluster seam with its fences and lease, and a session restored from its record.
//! 6. `protocol`: the vocabulary, pure: versions, headers, event ids, the checks of
//!    `initialize` and of the per-request `_meta`.
//!
//! # Authorization (feature `auth`)
//!
//! The server is an OAuth 2.1 resource server through
//! [`mcp_streamable_auth`](https://docs.rs/mcp-streamable-auth): a
//! `Guard` checks each request's `Authorization: Bearer` token and knows the protected
//! resource metadata (RFC 9728) that tells clients where to get one. Two ways to put it in
//! front of the service, which behave the same on the wire (A1-A5 of `SPEC.md`):
//!
//! - `Config::authorization(guard)`: the service checks every request itself, first thing,
//!   whatever the method, family or mode, and answers the metadata paths when it sees them
//!   (plain hyper serves it every path). The natural choice with hyper.
//! - `guard.layer()` (the auth crate's `RequireBearer`) around the service, or around a whole
//!   axum `Router`, which then also serves the metadata paths beside the MCP route.
//!
//! Either way, a refusal is the guard's (401 with a `WWW-Authenticate` challenge naming the
//! metadata URL, 403 `insufficient_scope`) and nothing is registered for it; an accepted
//! request carries its `Principal` in its extensions. The service binds the session an
//! `initialize` starts to that principal's key (issuer, subject, client), as it binds it to a
//! [`SessionOwner`] (which takes precedence when a layer put one there): a request for the
//! session with another principal's token is answered as for an unknown session, 404, so that
//! the client starts a new one instead of refreshing a token that is fine. The factory gets
//! the parts of the request that started its connection (the `initialize`, or the stateless
//! or per-request POST), principal included: that is how the application learns who it
//! serves.
#![cfg_attr(feature = "auth", doc = include_str!("auth.md"))]
#![deny(missing_docs, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cluster;
mod core;
mod http;
mod listen;
mod protocol;
#[cfg(feature = "serve")]
#[cfg_attr(docsrs, doc(cfg(feature = "serve")))]
pub mod serve;

pub use crate::cluster::memory::{InMemoryCluster, InMemoryNetwork};
pub use crate::core::cluster::lease::Lease;
pub use crate::core::cluster::{
    Cluster, Fence, Holder, Location, Member, NotHolder, Restarted, TakeOver,
};
pub use crate::core::config::{
    AllowList, Config, DEFAULT_IDLE_TIMEOUT, DEFAULT_INCOMING_CAPACITY, DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_BATCH_MESSAGES, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_BUFFERED_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TOTAL_BUFFERED_BYTES, DEFAULT_MAX_TOTAL_INCOMING_BYTES,
    DEFAULT_RETRY, Families, Mode,
};
pub use crate::core::health::Readiness;
pub use crate::core::owner::{PeerAddr, SessionOwner};
pub use crate::core::rate_limit::{
    Bucket, DEFAULT_MAX_RATE_BUCKETS, InMemoryRateStore, Quota, RateError, RateFuture, RateLimit,
    RateStore,
};
pub use crate::core::session::connection::{ServerConnection, ServerSender};
pub use crate::core::store::event_store::{
    Begun, DEFAULT_MAX_STORE_BYTES, DEFAULT_MAX_STORE_BYTES_PER_SESSION, EventStore,
    InMemoryEventStore, ReplayError, StoreError, StoreFuture, StoredEvent, Unfinished, Write,
};
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use crate::core::store::session_store::check_session_store;
pub use crate::core::store::session_store::{InMemorySessionStore, SessionRecord, SessionStore};
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub use crate::core::telemetry::{DURATION_BUCKETS, Telemetry};
pub use crate::http::reply::body::ResponseBody;
pub use crate::http::service::StreamableHttpService;
pub use crate::listen::{
    ACKNOWLEDGED_METHOD, BUS_CAPACITY, BusError, BusFuture, Change, FilterError, Heard,
    InMemoryBus, LISTEN_METHOD, NotificationBus, SubscriptionFilter, Subscriptions, Supported,
};
pub use crate::protocol::{
    DEFAULT_STATE_LIFETIME, InvalidTool, LAST_EVENT_ID, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID, MIN_STATE_KEY_BYTES, ProtocolVersion, StateError, StateKeyError, StateSealer,
    ToolHeaders, codes,
};
#[cfg(feature = "serve")]
#[cfg_attr(docsrs, doc(cfg(feature = "serve")))]
pub use crate::serve::serve;
