//! The `Transport` and `Connection` traits of the Model Context Protocol, with an in-memory and
//! a stdio transport.
//!
//! A [`Connection`] carries JSON-RPC [`Message`]s between an MCP client and server, whatever the
//! wire: a pair of in-process channels ([`memory`]), newline-delimited JSON over a child
//! process's pipes ([`stdio`]), or the Streamable HTTP transport of the crates above this one.
//! Applications are written against these traits and run over any of them.
//!
//! ```
//! use mcp_jsonrpc::{Message, Notification};
//! use mcp_transport::{Connection, Sender, memory};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), mcp_transport::Error> {
//! let (client, mut server) = memory::pair();
//! client.sender().send(Notification::new("notifications/initialized", None).into()).await?;
//! let got = server.recv().await?;
//! assert_eq!(got.and_then(|m| m.method().map(str::to_owned)).as_deref(), Some("notifications/initialized"));
//! # Ok(()) }
//! ```
//!
//! # The contract
//!
//! Every connection in this workspace keeps these rules; a new one must too.
//!
//! - **Receiving.** [`Connection::recv`] yields the peer's messages in the order the transport
//!   received them ([`Connection::recv_with_request`] the same, with the HTTP request that
//!   carried each, where there is one). `Ok(None)` means the connection is closed, by either side, and every
//!   message that arrived before has been yielded. An error for which
//!   [`Error::is_recoverable`] is true concerns one message (malformed, too large) and the next
//!   call goes on; any other error is final.
//! - **Sending.** Senders ([`Connection::sender`]) are cheap to clone and may be used from
//!   many tasks at once. A send resolves once the transport has taken the message (queued or
//!   written), which is not a promise that the peer has read it; it waits while the transport's
//!   bounded buffer is full, which is how a slow peer slows a fast sender down instead of
//!   growing memory. Messages sent one after the other from one task reach the peer in that
//!   order; sends racing from several tasks have no order between them.
//! - **Relating.** An [`Outgoing`] message may name the request it relates to (a progress
//!   notification, a request to the client made while serving a call). Transports that carry
//!   one stream per request, like Streamable HTTP, deliver it on that request's stream; others
//!   ignore the relation. A response always relates to the request it answers.
//! - **Closing.** Either side may close. [`Connection::close`] (or dropping the connection)
//!   ends it for both directions: later sends on any clone of its sender fail with
//!   [`ErrorKind::Closed`], and the peer's `recv` returns what was already in flight, then
//!   `Ok(None)`. Closing twice is harmless.
//!
//! Use the traits generically where you can (they use native `async fn` in traits); where
//! dynamic dispatch is needed, [`Connection::boxed`] gives a [`BoxConnection`].
#![deny(missing_docs, missing_debug_implementations)]

mod boxed;
mod error;
pub mod memory;
mod received;
pub mod stdio;

use std::future::Future;

pub use mcp_jsonrpc::{Id, Message};

pub use boxed::{BoxConnection, BoxSender};
pub use error::{Error, ErrorKind};
pub use received::Received;

/// A message to send, with the request it relates to, if any.
///
/// ```
/// use mcp_jsonrpc::{Id, Notification};
/// use mcp_transport::Outgoing;
///
/// let progress = Notification::new("notifications/progress", None);
/// let out = Outgoing::new(progress).related_to(Id::from(7));
/// assert_eq!(out.related_request(), Some(&Id::from(7)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outgoing {
    /// The message.
    pub message: Message,
    /// The request of the peer's that this message was sent while serving, if any.
    pub related: Option<Id>,
}

impl Outgoing {
    /// A message related to no request (a response still relates to the request it answers).
    pub fn new(message: impl Into<Message>) -> Self {
        Outgoing {
            message: message.into(),
            related: None,
        }
    }

    /// Relates the message to the peer's request `id`.
    pub fn related_to(mut self, id: Id) -> Self {
        self.related = Some(id);
        self
    }

    /// The request this message relates to: the one a response answers, else the one named
    /// with [`related_to`](Outgoing::related_to).
    pub fn related_request(&self) -> Option<&Id> {
        match &self.message {
            Message::Response(r) => r.id().or(self.related.as_ref()),
            _ => self.related.as_ref(),
        }
    }
}

macro_rules! outgoing_from {
    ($($ty:ty),*) => {$(
        impl From<$ty> for Outgoing {
            fn from(message: $ty) -> Self {
                Outgoing::new(message)
            }
        }
    )*};
}

outgoing_from!(
    Message,
    mcp_jsonrpc::Request,
    mcp_jsonrpc::Notification,
    mcp_jsonrpc::Response
);

/// The sending half of a [`Connection`]: clone it freely, use it from any task.
pub trait Sender: Clone + Send + Sync + 'static {
    /// Sends a message; see the crate docs for what resolving promises.
    fn send(&self, message: Outgoing) -> impl Future<Output = Result<(), Error>> + Send;

    /// Whether the connection is closed, so that a send would fail.
    fn is_closed(&self) -> bool;
}

/// One side of an MCP conversation: receives the peer's messages and hands out [`Sender`]s.
pub trait Connection: Send + 'static {
    /// The sending half.
    type Sender: Sender;

    /// A sender for this connection.
    fn sender(&self) -> Self::Sender;

    /// The next message from the peer, or `Ok(None)` once the connection is closed.
    ///
    /// Cancel safe: dropping the future before it completes loses no message.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Message>, Error>> + Send;

    /// The next message with the HTTP request that carried it, when the transport has one:
    /// what [`recv`](Connection::recv) yields, and where it came from.
    ///
    /// Over Streamable HTTP each client message comes with the parts of its POST (headers,
    /// URI, the extensions authentication filled), so that a per-request header or a
    /// refreshed bearer token reaches the handler that runs for it. Transports without HTTP
    /// requests (in-memory, stdio) keep the default, which yields no parts. Cancel safe, as
    /// `recv` is; a connection is read with one of the two methods or the other, as suits.
    fn recv_with_request(
        &mut self,
    ) -> impl Future<Output = Result<Option<Received>, Error>> + Send {
        async { Ok(self.recv().await?.map(Received::new)) }
    }

    /// Closes the connection in both directions; see the crate docs.
    fn close(&mut self) -> impl Future<Output = Result<(), Error>> + Send;

    /// The connection behind a box, for dynamic dispatch.
    fn boxed(self) -> BoxConnection
    where
        Self: Sized,
    {
        BoxConnection::new(self)
    }
}

/// Something that opens a [`Connection`]: a client's configuration, say, or a process's stdio.
pub trait Transport: Send {
    /// The connection it opens.
    type Connection: Connection;

    /// Opens the connection.
    fn connect(self) -> impl Future<Output = Result<Self::Connection, Error>> + Send;
}
