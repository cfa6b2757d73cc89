//! Type-erased connections and senders, for dynamic dispatch.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_jsonrpc::Message;

use crate::{Connection, Error, Outgoing, Received, Sender};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

trait DynSender: Send + Sync {
    fn send(&self, message: Outgoing) -> BoxFuture<'_, Result<(), Error>>;
    fn is_closed(&self) -> bool;
}

impl<S: Sender> DynSender for S {
    fn send(&self, message: Outgoing) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(Sender::send(self, message))
    }

    fn is_closed(&self) -> bool {
        Sender::is_closed(self)
    }
}

/// A [`Sender`] of any type, behind a pointer.
#[derive(Clone)]
pub struct BoxSender(Arc<dyn DynSender>);

impl BoxSender {
    /// Erases the type of `sender`.
    pub fn new(sender: impl Sender) -> Self {
        BoxSender(Arc::new(sender))
    }
}

impl fmt::Debug for BoxSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxSender").finish_non_exhaustive()
    }
}

impl Sender for BoxSender {
    fn send(&self, message: Outgoing) -> impl Future<Output = Result<(), Error>> + Send {
        self.0.send(message)
    }

    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

trait DynConnection: Send {
    fn sender(&self) -> BoxSender;
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Message>, Error>>;
    fn recv_with_request(&mut self) -> BoxFuture<'_, Result<Option<Received>, Error>>;
    fn close(&mut self) -> BoxFuture<'_, Result<(), Error>>;
}

impl<C: Connection> DynConnection for C {
    fn sender(&self) -> BoxSender {
        BoxSender::new(Connection::sender(self))
    }

    fn recv(&mut self) -> BoxFuture<'_, Result<Option<Message>, Error>> {
        Box::pin(Connection::recv(self))
    }

    fn recv_with_request(&mut self) -> BoxFuture<'_, Result<Option<Received>, Error>> {
        Box::pin(Connection::recv_with_request(self))
    }

    fn close(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(Connection::close(self))
    }
}

/// A [`Connection`] of any type, behind a pointer.
///
/// ```
/// use mcp_transport::{BoxConnection, Connection, memory};
///
/// let (a, b) = memory::pair();
/// let connections: Vec<BoxConnection> = vec![a.boxed(), b.boxed()];
/// assert_eq!(connections.len(), 2);
/// ```
pub struct BoxConnection(Box<dyn DynConnection>);

impl BoxConnection {
    /// Erases the type of `connection`.
    pub fn new(connection: impl Connection) -> Self {
        BoxConnection(Box::new(connection))
    }
}

impl fmt::Debug for BoxConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxConnection").finish_non_exhaustive()
    }
}

impl Connection for BoxConnection {
    type Sender = BoxSender;

    fn sender(&self) -> BoxSender {
        self.0.sender()
    }

    fn recv(&mut self) -> impl Future<Output = Result<Option<Message>, Error>> + Send {
        self.0.recv()
    }

    fn recv_with_request(
        &mut self,
    ) -> impl Future<Output = Result<Option<Received>, Error>> + Send {
        self.0.recv_with_request()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Error>> + Send {
        self.0.close()
    }

    fn boxed(self) -> BoxConnection {
        self
    }
}
