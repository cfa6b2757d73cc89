//! The Streamable HTTP **client** transport of the Model Context Protocol, on hyper.
//!
//! A [`Client`] is the configuration for one MCP endpoint; connecting it
//! ([`Transport::connect`](mcp_transport::Transport::connect)) gives a [`ClientConnection`] that
//! implements the [`mcp_transport`] traits, so an MCP client written against them runs over
//! HTTP unchanged. It speaks both families of the protocol: the session-based one (2025-03-26
//! to 2025-11-25), which starts with `initialize`, and the per-request one of 2026-07-28; see
//! [`Family`].
//!
//! ```no_run
//! use mcp_jsonrpc::{Message, Notification, Request, to_raw_value};
//! use mcp_streamable_client::Client;
//! use mcp_transport::{Connection, Sender, Transport};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let mut conn = Client::builder("http://127.0.0.1:8080/mcp").build()?.connect().await?;
//! let sender = conn.sender();
//!
//! let params = to_raw_value(&serde_json::json!({
//!     "protocolVersion": "2025-06-18",
//!     "capabilities": {},
//!     "clientInfo": {"name": "example", "version": "1.0.0"}
//! }))?;
//! sender.send(Request::new(1, "initialize", Some(params)).into()).await?;
//! let Some(Message::Response(init)) = conn.recv().await? else { return Ok(()) };
//! println!("session {:?} speaks {:?}", conn.session_id(), conn.protocol_version());
//! # drop(init);
//!
//! sender.send(Notification::new("notifications/initialized", None).into()).await?;
//! sender.send(Request::new(2, "tools/list", None).into()).await?;
//! while let Some(message) = conn.recv().await? {
//!     println!("{message:?}");
//! #   break;
//! }
//! conn.close().await?;
//! # Ok(()) }
//! ```
//!
//! # What it does on the wire
//!
//! The rows C1-C11, M7 and M8 of the project's `SPEC.md`:
//!
//! - **Sending (C1, C2).** Each message is its own POST with `Accept: application/json,
//!   text/event-stream` and `Content-Type: application/json`. The session id from the answer to
//!   `initialize` and the protocol version from its result are sent on every later request; the
//!   messages sent while `initialize` is in flight wait for its answer. A send resolves when
//!   the server accepted the message; replies, JSON (one message or an array) or SSE, come
//!   through [`recv`](mcp_transport::Connection::recv).
//! - **The standalone stream (C3).** Once `notifications/initialized` was accepted, a GET opens
//!   the stream on which the server talks on its own ([`ClientBuilder::standalone_stream`]);
//!   a 405 there means the server offers none.
//! - **Resumption (C4, C5).** A stream lost before its response is resumed with GET and
//!   `Last-Event-ID`, after the server's `retry` or the [`ReconnectPolicy`]'s backoff. Priming
//!   events (empty data) are not messages. A stream that cannot be resumed answers its waiting
//!   request with an error response of code [`LOST_RESPONSE_CODE`]. A stream silent for longer
//!   than [`ClientBuilder::sse_idle_timeout`] counts as lost. When the standalone stream can
//!   no longer reach the server at all, the server has gone: the connection closes.
//! - **Stale connections (C11).** A request written on a pooled HTTP/1.1 connection the server
//!   had just closed, with no byte of response back, was not acted on (RFC 9112, section
//!   9.3.1.1): it is sent once more on a fresh connection, and no other failure is retried.
//! - **Sessions (C6, C8).** A 404 for a known session is an error for which
//!   [`Error::is_session_expired`] is true; [`ClientBuilder::reinitialize_on_expiry`] starts a
//!   new session instead. Closing sends DELETE, bounded by [`ClientBuilder::close_timeout`].
//! - **Errors (C7).** Failed answers carry their status and the start of their body
//!   ([`Error::status`], [`Error::body`]); an SSE event or JSON body over
//!   [`ClientBuilder::max_event_size`] is an error, never unbounded memory.
//! - **Authorization (C9).** Headers per client ([`ClientBuilder::header`]) and an
//!   [`AuthProvider`] asked before each request, and again after a 401 or a 403
//!   `insufficient_scope` (once each per request); `mcp-streamable-oauth` is such a provider.
//!   A provider of DPoP-bound tokens (RFC 9449) also gives each try its proof
//!   ([`AuthProvider::proof`]); the transport keeps the server's `DPoP-Nonce` and tries again
//!   once after a 401 `use_dpop_nonce`.
//! - **Old servers (C10).** When the first POST is answered 400, 404 or 405, the client falls
//!   back to the 2024-11-05 HTTP+SSE transport ([`ClientBuilder::legacy_fallback`]).
//! - **The per-request protocol (M7).** A request whose `params._meta` declares
//!   `io.modelcontextprotocol/protocolVersion` goes the 2026-07-28 way, whatever the
//!   [`Family`]: its own POST, without session id, with `MCP-Protocol-Version` equal to `_meta`'s,
//!   `Mcp-Method` and, for `tools/call`, `prompts/get` and `resources/read`, `Mcp-Name`
//!   (`=?base64?...?=` when the value is not plain visible ASCII); its reply is JSON or SSE.
//!   A 400 or 404 carrying a JSON-RPC error is that request's error response, through
//!   [`recv`](mcp_transport::Connection::recv). Under [`Family::PerRequest`], and [`Family::Auto`] once
//!   the endpoint proved modern, the transport fills that `_meta` in itself
//!   ([`ClientBuilder::client_info`], [`ClientBuilder::client_capabilities`]). [`Family::Auto`]
//!   finds out with the first request: a success or a modern refusal keeps it modern (retrying
//!   a -32022 with a version the server lists), any other 400, 404 or 405 makes the transport
//!   run `initialize` itself and send the request in that session; the [`Client`] remembers
//!   the answer for its later connections ([`Client::family`]). Such a request is cancelled by
//!   closing its stream when the application sends `notifications/cancelled` for it, and sent
//!   again under a new id when its stream breaks before the response (the [`ReconnectPolicy`]
//!   bounds the attempts; the response comes back under the application's id). There is no
//!   standalone GET, no `Last-Event-ID` and no DELETE for a connection without a session.
//! - **`Mcp-Param-*` (M8, SEP-2243).** The transport learns, from the `tools/list` results it
//!   carries, which arguments each tool mirrors (`x-mcp-header` in its `inputSchema`), and a
//!   per-request `tools/call` carries them as `Mcp-Param-<Name>` headers. A tool whose
//!   declarations are invalid is left out of the result the application reads. A `tools/call`
//!   refused with -32020 makes the transport list the tools again, every page, and send the
//!   call once more; a second refusal is the call's error response.
//!
//! Connections are pooled (HTTP/1.1 keep-alive, with `TCP_NODELAY`), opened by the shared
//! stack of `mcp-http-client` (TCP, and for `https` rustls with the default `rustls` feature,
//! offering HTTP/2 and HTTP/1.1 by ALPN). The endpoint's HTTP/1.1 connections, plain or over
//! TLS, are the crate's own (heads parsed by `httparse`; bodies by length, chunks or the close;
//! interim answers skipped; `Connection: close` honoured), driven by the tasks that send on
//! them and read their answers, so that a reply that came whole is read without a task hop, and
//! a connection is back in the pool as soon as its answer was read. An `https` endpoint whose
//! first connection chose HTTP/2 by ALPN, an `http` one spoken to with HTTP/2 by prior
//! knowledge, and other origins go through hyper-util's pooled client (the first HTTP/2
//! connection handed to it, not opened twice). The transport logs through
//! `tracing` (a `mcp.request{method,id}` span per send, `debug` for disconnects and
//! reconnections, `warn` for misbehaving servers) and never installs a subscriber.
//!
//! # How it is built
//!
//! The modules form layers, top to bottom. A module imports from its own layer and the ones
//! below it, never from one above, and the imports between files form no circle; a tidy test
//! (`cargo test -p xtask`, `layers.rs`) holds the code to this list:
//!
//! 1. `client`, `connection`: the public face, [`Client`], [`ClientBuilder`],
//!    [`ClientConnection`] and [`ClientSender`].
//! 2. `dispatch`: picks the lane of each message (M7).
//! 3. `lane`: one lane per way of talking, the session-based protocol (`lane::session`), the
//!    per-request one (`lane::per_request`) and the 2024-11-05 HTTP+SSE fallback
//!    (`lane::http_sse`).
//! 4. `read`: the readers of JSON and SSE replies, handed the request to track and the
//!    recovery to use when a stream breaks (resume with `Last-Event-ID`, or re-send under a
//!    new id) as values.
//! 5. `state`: what one connection shares, the session, the requests in flight, the inbox,
//!    and what a client found out about its endpoint.
//! 6. `wire`: the HTTP layer, one request on the wire, the pool, stale connections, which HTTP
//!    an `https` endpoint chose.
//! 7. `config`: the configuration every layer reads, and [`Family`].
//! 8. `shape`, `headers`, `reconnect`, `auth`, `telemetry`: the shaping of per-request
//!    messages, header values, the reconnection policy, authorization, the OpenTelemetry spans
//!    and metrics (feature `otel`).
//! 9. `error`: the error of the crate.
//!
//! The protocol's vocabulary (versions, header names, `_meta` keys, error codes) is the
//! shared `mcp-streamable-protocol` crate's. One word per concept: *session* is the
//! session-based protocol (2025-03-26 to 2025-11-25, [`Family::Session`] in the public API),
//! *per-request* the 2026-07-28 one ([`Family::PerRequest`]), *HTTP+SSE* the 2024-11-05 transport
//! ([`ClientConnection::is_http_sse`]).
//!
//! # Features
//!
//! - `rustls` (default): `https` through rustls with the ring provider, trusting the
//!   platform's roots, or the webpki roots where the platform has none
//!   ([`ClientBuilder::tls_config`] for others).
//! - `otel`: OpenTelemetry spans (`mcp.client`, kind CLIENT) and metrics
//!   (`mcp.client.operation.duration`, `mcp.client.session.duration`) by the MCP semantic
//!   conventions, and the trace context of each request in its `params._meta` (C12;
//!   `Telemetry`, `ClientBuilder::telemetry`).
#![deny(missing_docs, missing_debug_implementations)]

mod auth;
mod client;
mod config;
mod connection;
mod dispatch;
mod error;
mod headers;
mod lane;
mod read;
mod reconnect;
mod shape;
mod state;
#[cfg(feature = "otel")]
mod telemetry;
mod wire;

pub use auth::{AuthContext, AuthFuture, AuthProvider, ProofContext};
pub use client::{
    Client, ClientBuilder, DEFAULT_CLOSE_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_EVENT_SIZE,
    DEFAULT_REQUEST_TIMEOUT, DEFAULT_SSE_IDLE_TIMEOUT,
};
pub use config::Family;
pub use connection::{ClientConnection, ClientSender};
pub use error::{BoxError, ERROR_BODY_PREFIX, Error};
pub use reconnect::{
    DEFAULT_FACTOR, DEFAULT_INITIAL_DELAY, DEFAULT_MAX_DELAY, DEFAULT_MAX_RETRIES, ReconnectPolicy,
};
pub use state::LOST_RESPONSE_CODE;
#[cfg(feature = "otel")]
pub use telemetry::Telemetry;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
