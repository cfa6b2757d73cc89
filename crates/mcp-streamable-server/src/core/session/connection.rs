//! The application's side of a session: a `mcp_transport::Connection`.

use std::fmt;
use std::sync::Arc;

use mcp_jsonrpc::{Id, Message};
use mcp_transport::{Connection, Error, Outgoing, Received, Sender};
use tokio::sync::mpsc;

use crate::core::session::state::Delivery;
use crate::core::session::{Ending, Session};
use crate::protocol::ProtocolVersion;

/// The server side of one MCP session, handed to the application by the service's factory.
///
/// [`recv`](Connection::recv) yields what the client sends (requests, notifications, and its
/// responses to the server's own requests); [`ServerSender`] sends. Relate each message to the
/// request it serves with [`Outgoing::related_to`] so that it travels on that request's stream
/// (S10); a response is related to its request by its id. `recv` returns `Ok(None)` when the
/// session ends (DELETE, idle timeout, eviction, shutdown). Closing or dropping the connection
/// ends the session; what was sent before still reaches the clients reading its streams.
///
/// [`recv_with_request`](Connection::recv_with_request) yields the same messages, each with the
/// parts of the HTTP request that carried it, for a handler that reads a per-request header or
/// the bearer token's principal of the very request it serves (the factory's parts are the
/// session's first request's only).
pub struct ServerConnection {
    rx: mpsc::Receiver<Box<Delivery>>,
    sender: ServerSender,
}

impl ServerConnection {
    pub(crate) fn new(rx: mpsc::Receiver<Box<Delivery>>, session: Arc<Session>) -> Self {
        ServerConnection {
            rx,
            sender: ServerSender { session },
        }
    }

    /// The session id, or `None` in stateless mode and for a per-request (2026-07-28)
    /// connection.
    pub fn session_id(&self) -> Option<&str> {
        self.sender.session_id()
    }
}

impl fmt::Debug for ServerConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConnection")
            .field("session_id", &self.session_id())
            .finish_non_exhaustive()
    }
}

impl Connection for ServerConnection {
    type Sender = ServerSender;

    fn sender(&self) -> ServerSender {
        self.sender.clone()
    }

    async fn recv(&mut self) -> Result<Option<Message>, Error> {
        Ok(self.rx.recv().await.map(|m| m.received.message))
    }

    /// Each client message with the parts of the POST that carried it: its headers, URI and
    /// the extensions middleware filled (an authenticated `Principal` among them, feature
    /// `auth`). The messages of one POST share one `Arc`. The `notifications/cancelled` the
    /// server itself delivers when a per-request client leaves (M6) comes without parts.
    async fn recv_with_request(&mut self) -> Result<Option<Received>, Error> {
        Ok(self.rx.recv().await.map(|m| m.received))
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.sender.session.close(Ending::Flush).await;
        self.rx.close();
        Ok(())
    }
}

impl Drop for ServerConnection {
    fn drop(&mut self) {
        self.sender.session.close_detached(Ending::Flush);
    }
}

/// Sends messages to the client of one session; cheap to clone.
#[derive(Clone)]
pub struct ServerSender {
    session: Arc<Session>,
}

impl ServerSender {
    /// The session id, or `None` in stateless mode and for a per-request (2026-07-28)
    /// connection.
    pub fn session_id(&self) -> Option<&str> {
        Some(&*self.session.id).filter(|id| !id.is_empty())
    }

    /// The protocol version negotiated by `initialize`, or 2025-03-26 before it is known; for
    /// a per-request connection, the version its request named (2026-07-28).
    pub fn protocol_version(&self) -> &'static str {
        self.session.version().as_str()
    }

    /// [`protocol_version`](Self::protocol_version), parsed: what it allows, ordered.
    pub fn version(&self) -> ProtocolVersion {
        self.session.version()
    }

    /// Ends the connection of the stream carrying `request`, without ending the request: the
    /// client reconnects with GET and `Last-Event-ID` after the priming event's `retry` and
    /// gets what was sent meanwhile (S14, polling). Needs an event store; returns whether a
    /// connection was ended.
    pub fn close_stream(&self, request: &Id) -> bool {
        self.session.close_stream(request)
    }
}

impl fmt::Debug for ServerSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSender")
            .field("session_id", &self.session_id())
            .finish_non_exhaustive()
    }
}

impl Sender for ServerSender {
    async fn send(&self, message: Outgoing) -> Result<(), Error> {
        self.session.send(message).await
    }

    fn is_closed(&self) -> bool {
        self.session.is_closed()
    }
}
