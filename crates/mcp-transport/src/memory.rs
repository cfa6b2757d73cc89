//! An in-memory connected pair: both ends of a conversation in one process.
//!
//! For tests, and for running an MCP client and server in one program without a wire. Each
//! direction is a bounded channel; a full channel makes the sender wait.
//!
//! ```
//! use mcp_jsonrpc::{Message, Request};
//! use mcp_transport::{Connection, Sender, memory};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), mcp_transport::Error> {
//! let (mut client, mut server) = memory::pair();
//! client.sender().send(Request::new(1, "ping", None).into()).await?;
//! assert!(matches!(server.recv().await?, Some(Message::Request(_))));
//! server.close().await?;
//! assert_eq!(client.recv().await?, None);
//! # Ok(()) }
//! ```

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_jsonrpc::Message;
use tokio::sync::mpsc;

use crate::{Connection, Error, Outgoing};

/// How many messages each direction of [`pair`] holds before a sender waits.
///
/// Enough to keep a busy peer from stalling on every message, small enough that an unread
/// connection holds a bounded amount of memory.
pub const DEFAULT_CAPACITY: usize = 64;

/// Two connected ends, with [`DEFAULT_CAPACITY`] messages of buffer each way.
pub fn pair() -> (MemoryConnection, MemoryConnection) {
    pair_with_capacity(DEFAULT_CAPACITY)
}

/// Two connected ends, each direction holding at most `capacity` messages.
///
/// # Panics
///
/// If `capacity` is zero.
pub fn pair_with_capacity(capacity: usize) -> (MemoryConnection, MemoryConnection) {
    let (to_a, from_b) = mpsc::channel(capacity);
    let (to_b, from_a) = mpsc::channel(capacity);
    (
        MemoryConnection::new(from_b, to_b),
        MemoryConnection::new(from_a, to_a),
    )
}

/// One end of an in-memory [`pair`]. Dropping it closes it.
#[derive(Debug)]
pub struct MemoryConnection {
    rx: mpsc::Receiver<Message>,
    sender: MemorySender,
}

impl MemoryConnection {
    fn new(rx: mpsc::Receiver<Message>, tx: mpsc::Sender<Message>) -> Self {
        MemoryConnection {
            rx,
            sender: MemorySender {
                tx: Arc::new(Mutex::new(Some(tx))),
            },
        }
    }

    fn close_now(&mut self) {
        // The peer's sends now fail; what it had already queued is still ours to read.
        self.rx.close();
        // Dropping our last handle on the peer's channel ends its `recv` once it has read
        // what we had sent.
        self.sender.take();
    }
}

impl Drop for MemoryConnection {
    fn drop(&mut self) {
        self.close_now();
    }
}

impl Connection for MemoryConnection {
    type Sender = MemorySender;

    fn sender(&self) -> MemorySender {
        self.sender.clone()
    }

    async fn recv(&mut self) -> Result<Option<Message>, Error> {
        // `mpsc::Receiver::recv` is cancel safe, and yields queued messages before `None`.
        Ok(self.rx.recv().await)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Error>> + Send {
        self.close_now();
        std::future::ready(Ok(()))
    }
}

/// The sending half of a [`MemoryConnection`]. The relation of an [`Outgoing`] message is
/// ignored: there is one stream.
#[derive(Debug, Clone)]
pub struct MemorySender {
    /// `None` once the connection is closed. Shared by every clone, so that closing the
    /// connection stops them all and lets the peer see the end.
    tx: Arc<Mutex<Option<mpsc::Sender<Message>>>>,
}

impl MemorySender {
    fn current(&self) -> Option<mpsc::Sender<Message>> {
        self.tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn take(&self) {
        self.tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

impl crate::Sender for MemorySender {
    fn send(&self, message: Outgoing) -> impl Future<Output = Result<(), Error>> + Send {
        let tx = self.current();
        async move {
            let tx = tx.ok_or_else(Error::closed)?;
            tx.send(message.message).await.map_err(|_| Error::closed())
        }
    }

    fn is_closed(&self) -> bool {
        self.current().is_none_or(|tx| tx.is_closed())
    }
}
