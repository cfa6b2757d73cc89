//! Run [rmcp](https://docs.rs/rmcp) services and clients over this project's transports.
//!
//! rmcp, the official Rust MCP SDK, has the protocol layer (tools, resources, prompts,
//! sampling, elicitation) that the transport crates of this project deliberately leave out.
//! [`RmcpTransport`] wraps any [`mcp_transport::Connection`] (a Streamable HTTP server
//! session, the Streamable HTTP client, stdio, an in-memory pair) as an
//! `rmcp::transport::Transport`, so an rmcp `ServerHandler` or client runs over it unchanged.
//!
//! Serving an rmcp handler, one service per session, with the Streamable HTTP server:
//!
//! ```no_run
//! use mcp_streamable_server::{Config, StreamableHttpService};
//! use rmcp::{ServerHandler, ServiceExt};
//!
//! #[derive(Clone, Default)]
//! struct MyHandler;
//! impl ServerHandler for MyHandler {}
//!
//! let service = StreamableHttpService::new(Config::default(), |conn, _parts| async move {
//!     let running = MyHandler.serve(mcp_rmcp::server(conn)).await;
//!     if let Ok(running) = running {
//!         let _ = running.waiting().await;
//!     }
//! });
//! # let _ = service;
//! ```
//!
//! # Routing
//!
//! A server's messages are related to the request they serve, so that a Streamable HTTP server
//! delivers them on that request's stream ([`mcp_transport::Outgoing::related_to`]), with the
//! rules rmcp's own server uses:
//!
//! - a response, by its id;
//! - a progress notification, by its progress token, to the request that carried the token in
//!   `_meta.progressToken`;
//! - a cancellation, to the request it cancels;
//! - a request to the peer made from inside a request handler, to that request (rmcp marks it
//!   with `OriginatingRequestId`);
//! - any other notification that carries an `OriginatingRequestId` in its extensions, to that
//!   request: rmcp marks only requests, so a handler that wants its log messages (or any other
//!   notification) on its own request's stream marks them itself;
//! - anything else goes unrelated (the standalone stream).
//!
//! ```
//! # #![allow(deprecated)] // rmcp deprecates logging for the 2026 revision of the protocol
//! use rmcp::model::{
//!     GetExtensions, LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam,
//!     NumberOrString, ServerNotification,
//! };
//! use rmcp::service::OriginatingRequestId;
//!
//! # fn build() -> ServerNotification {
//! // Inside a handler, `context.id` is the request being served.
//! let request = NumberOrString::Number(7);
//! let params = LoggingMessageNotificationParam::new(LoggingLevel::Info, "working".into());
//! let mut log = ServerNotification::LoggingMessageNotification(
//!     LoggingMessageNotification::new(params),
//! );
//! log.extensions_mut().insert(OriginatingRequestId(request));
//! // context.peer.send_notification(log).await travels on request 7's stream.
//! # log
//! # }
//! # let _ = build();
//! ```
//!
//! # The HTTP request of each message
//!
//! Over a Streamable HTTP server, each request and notification reaches rmcp with a copy of the
//! parts of the HTTP request that carried it in its extensions, as with rmcp's own HTTP
//! service: a tool reads a per-request header, or the principal a bearer check left in the
//! parts' extensions, with `Extension<http::request::Parts>` (or from
//! `RequestContext::extensions`). Over transports without HTTP requests there are none.
//!
//! # Listen streams (feature `listen`)
//!
// The method, linked where it exists.
#![cfg_attr(feature = "listen", doc = "[`RmcpTransport::listen_with`]")]
#![cfg_attr(not(feature = "listen"), doc = "`RmcpTransport::listen_with`")]
//! serves the per-request `subscriptions/listen` streams of 2026-07-28 with `mcp_streamable_server::Subscriptions` instead of rmcp's own, whose streams
//! live in one process: a change any node announces reaches them. Every other request still
//! goes to rmcp.
//!
//! # Errors
//!
//! The transport's errors reach rmcp as [`Error`], whose message carries the whole chain of
//! causes: rmcp prints an error with `Display` only, so a 401 from a Streamable HTTP server
//! reads `... protocol error: server answered 401 Unauthorized: <the server's body>, when send
//! initialize request`, not a bare "protocol error".
//!
//! # Versions
//!
//! The adapter works with rmcp 3.9 and later 3.x releases. Since 3.11, rmcp's default handlers
//! answer the methods of a capability the handler did not advertise (`prompts/list` without
//! `prompts`) with -32601: advertise every capability the handler implements in `get_info`.
//!
//! Messages cross between the two libraries' types through their JSON encoding: the adapter
//! costs one encode and one parse per message, paid only by those who use rmcp.
#![deny(missing_docs, missing_debug_implementations)]

mod error;

pub use error::Error;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use mcp_jsonrpc::{Body, ErrorObject, Id, Message, Response, code};
use mcp_transport::{Connection, ErrorKind, Outgoing, Sender};
use rmcp::model::{GetExtensions, JsonRpcMessage};
use rmcp::service::{
    OriginatingRequestId, RoleClient, RoleServer, RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// An rmcp transport over a [`Connection`] of this project.
pub struct RmcpTransport<C: Connection, R> {
    connection: C,
    sender: C::Sender,
    /// The progress token of each request in flight that gave one, and back.
    tokens: HashMap<String, Id>,
    token_of: HashMap<Id, String>,
    #[cfg(feature = "listen")]
    subscriptions: Option<mcp_streamable_server::Subscriptions>,
    role: PhantomData<fn() -> R>,
}

/// An rmcp transport for the server side of `connection`.
pub fn server<C: Connection>(connection: C) -> RmcpTransport<C, RoleServer> {
    RmcpTransport::new(connection)
}

/// An rmcp transport for the client side of `connection`.
pub fn client<C: Connection>(connection: C) -> RmcpTransport<C, RoleClient> {
    RmcpTransport::new(connection)
}

impl<C: Connection, R> RmcpTransport<C, R> {
    /// Wraps `connection`.
    pub fn new(connection: C) -> Self {
        let sender = connection.sender();
        RmcpTransport {
            connection,
            sender,
            tokens: HashMap::new(),
            token_of: HashMap::new(),
            #[cfg(feature = "listen")]
            subscriptions: None,
            role: PhantomData,
        }
    }

    /// Serves the per-request `subscriptions/listen` requests (2026-07-28) with
    /// `subscriptions` instead of handing them to rmcp (feature `listen`): rmcp's own listen
    /// streams live in one process, these hear the changes any node announces
    /// ([`Subscriptions::announce`](mcp_streamable_server::Subscriptions::announce)). A listen
    /// request is taken when its `_meta` names a protocol version (a session's goes to rmcp,
    /// which refuses it as the 2025 revisions do).
    #[cfg(feature = "listen")]
    #[cfg_attr(docsrs, doc(cfg(feature = "listen")))]
    pub fn listen_with(mut self, subscriptions: mcp_streamable_server::Subscriptions) -> Self {
        self.subscriptions = Some(subscriptions);
        self
    }

    /// The wrapped connection.
    pub fn connection(&self) -> &C {
        &self.connection
    }

    /// Remembers the progress token of an incoming request.
    fn note_incoming(&mut self, message: &Message) {
        let Message::Request(request) = message else {
            return;
        };
        let Some(params) = &request.params else {
            return;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(params.get()) else {
            return;
        };
        if let Some(token) = value.get("_meta").and_then(|m| m.get("progressToken")) {
            let token = token.to_string();
            self.tokens.insert(token.clone(), request.id.clone());
            self.token_of.insert(request.id.clone(), token);
        }
    }

    /// The request an outgoing message serves, by rmcp's rules (see the crate docs).
    fn relate(&mut self, message: &Message, originating: Option<Id>) -> Option<Id> {
        match message {
            Message::Response(response) => {
                if let Some(id) = response.id()
                    && let Some(token) = self.token_of.remove(id)
                {
                    self.tokens.remove(&token);
                }
                None
            }
            Message::Request(_) => originating,
            Message::Notification(_) if originating.is_some() => originating,
            Message::Notification(n) => {
                let params: serde_json::Value = n.parse_params().ok()?;
                match n.method.as_str() {
                    "notifications/progress" => self
                        .tokens
                        .get(&params.get("progressToken")?.to_string())
                        .cloned(),
                    "notifications/cancelled" => {
                        serde_json::from_value(params.get("requestId")?.clone()).ok()
                    }
                    _ => None,
                }
            }
        }
    }
}

impl<C: Connection, R> fmt::Debug for RmcpTransport<C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RmcpTransport")
            .field("progress_tokens", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

/// Whether `request` opens a 2026-07-28 listen stream: `subscriptions/listen` with a
/// protocol version in `_meta`.
#[cfg(feature = "listen")]
fn is_per_request_listen(request: &mcp_jsonrpc::Request) -> bool {
    request.method == "subscriptions/listen"
        && request.params.as_deref().is_some_and(|params| {
            serde_json::from_str::<serde_json::Value>(params.get()).is_ok_and(|p| {
                p.get("_meta")
                    .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                    .is_some()
            })
        })
}

/// rmcp's message type to ours, through JSON.
fn to_ours<T: Serialize>(message: &T) -> Result<Message, mcp_transport::Error> {
    let invalid = |e: Box<dyn std::error::Error + Send + Sync>| {
        mcp_transport::Error::new(ErrorKind::InvalidMessage, e)
    };
    let bytes = serde_json::to_vec(message).map_err(|e| invalid(e.into()))?;
    match mcp_jsonrpc::parse(&bytes) {
        Ok(Body::Single(message)) => Ok(message),
        Ok(Body::Batch(_)) => Err(invalid("rmcp produced a batch".into())),
        Err(e) => Err(invalid(e.into())),
    }
}

/// The `OriginatingRequestId` rmcp puts on requests sent from inside a request handler, or a
/// handler put on a notification.
fn originating<Req: GetExtensions, Resp, Not: GetExtensions>(
    message: &JsonRpcMessage<Req, Resp, Not>,
) -> Option<Id> {
    let extensions = match message {
        JsonRpcMessage::Request(request) => request.request.extensions(),
        JsonRpcMessage::Notification(notification) => notification.notification.extensions(),
        _ => return None,
    };
    let OriginatingRequestId(id) = extensions.get::<OriginatingRequestId>()?;
    serde_json::to_value(id)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// Puts a copy of the HTTP request's parts in the extensions of a request or notification, where
/// rmcp's `Extension<http::request::Parts>` and `RequestContext::extensions` look for them, as
/// rmcp's own HTTP service puts them.
fn carry_parts<R: ServiceRole>(message: &mut RxJsonRpcMessage<R>, parts: &http::request::Parts) {
    match message {
        JsonRpcMessage::Request(r) => {
            r.request.extensions_mut().insert(parts.clone());
        }
        JsonRpcMessage::Notification(n) => {
            n.notification.extensions_mut().insert(parts.clone());
        }
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
    }
}

impl<C, R> rmcp::transport::Transport<R> for RmcpTransport<C, R>
where
    C: Connection,
    R: ServiceRole,
    R::Req: GetExtensions,
    R::Not: GetExtensions,
    TxJsonRpcMessage<R>: Serialize,
    RxJsonRpcMessage<R>: DeserializeOwned,
{
    type Error = Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<R>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let converted = to_ours(&item).map(|message| {
            let related = self.relate(&message, originating(&item));
            let mut out = Outgoing::new(message);
            out.related = related;
            out
        });
        let sender = self.sender.clone();
        async move { Ok(sender.send(converted?).await?) }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<R>> {
        loop {
            let (message, request) = match self.connection.recv_with_request().await {
                Ok(Some(received)) => (received.message, received.request),
                Ok(None) => return None,
                Err(err) if err.is_recoverable() => {
                    let error = Error::from(err);
                    tracing::warn!(%error, "skipped a message the transport could not read");
                    continue;
                }
                Err(err) => {
                    let error = Error::from(err);
                    tracing::debug!(%error, "connection failed");
                    return None;
                }
            };
            #[cfg(feature = "listen")]
            if let Some(subscriptions) = &self.subscriptions
                && let Message::Request(request) = &message
                && is_per_request_listen(request)
            {
                let subscriptions = subscriptions.clone();
                subscriptions.serve(&mut self.connection, request).await;
                continue;
            }
            self.note_incoming(&message);
            match serde_json::from_slice::<RxJsonRpcMessage<R>>(&message.to_vec()) {
                Ok(mut converted) => {
                    if let Some(parts) = request {
                        carry_parts::<R>(&mut converted, &parts);
                    }
                    return Some(converted);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "rmcp does not accept a message");
                    // A request rmcp cannot read must still be answered, or its caller
                    // would wait forever.
                    if let Message::Request(request) = message {
                        let error = ErrorObject::new(
                            code::INVALID_PARAMS,
                            format!("invalid request: {err}"),
                        );
                        let answer = Response::error(Some(request.id), error);
                        let _ = self.sender.send(answer.into()).await;
                    }
                }
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Error>> + Send {
        let closed = self.connection.close();
        async move { Ok(closed.await?) }
    }
}
