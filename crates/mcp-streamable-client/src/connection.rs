//! [`ClientConnection`] and [`ClientSender`]: the public face of one connection, over the
//! dispatcher that sends each message in its lane.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_jsonrpc::{Id, Message, Request, Response};
use mcp_transport::{Connection, Outgoing, Sender};
use tokio::sync::mpsc;

use crate::config::Family;
use crate::dispatch;
use crate::error::{Deadline, Error, Kind};
use crate::lane;
use crate::state::{Delivery, Discovery, Inner};
use crate::wire::Http;

/// A connection to a Streamable HTTP server, from [`Client`](crate::Client)'s
/// [`connect`](mcp_transport::Transport::connect).
///
/// It keeps the contract of [`mcp_transport`]: [`recv`](Connection::recv) yields the server's
/// messages as they arrive, from every stream, and `Ok(None)` once the connection is closed;
/// the only errors it yields concern one message ([`ErrorKind::InvalidMessage`],
/// [`ErrorKind::MessageTooLarge`]), after which it goes on. A request whose response cannot come
/// (its stream ended for good) is answered with an error response of code
/// [`LOST_RESPONSE_CODE`](crate::LOST_RESPONSE_CODE), so no caller waits forever.
///
/// It closes by itself when the server has gone (its standalone stream cannot reach it any
/// more, or the 2024-11-05 transport's stream ended): [`recv`](Connection::recv) then ends and
/// [`ClientSender::is_closed`](mcp_transport::Sender::is_closed) is true.
///
/// Dropping it closes it; the DELETE that ends the session, if there is one, is then sent in the
/// background.
///
/// [`ErrorKind::InvalidMessage`]: mcp_transport::ErrorKind::InvalidMessage
/// [`ErrorKind::MessageTooLarge`]: mcp_transport::ErrorKind::MessageTooLarge
pub struct ClientConnection {
    inner: Arc<Inner>,
    rx: mpsc::Receiver<Delivery>,
    rx_closed: bool,
    /// Sees the connection close; kept rather than subscribed to anew by every `recv`.
    shutdown: tokio::sync::watch::Receiver<bool>,
}

impl fmt::Debug for ClientConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConnection")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ClientConnection {
    pub(crate) fn new(http: Arc<Http>, discovery: Arc<Discovery>) -> Self {
        let (inner, rx) = Inner::new(http, discovery);
        let shutdown = inner.shutdown_signal();
        ClientConnection {
            inner: Arc::new(inner),
            rx,
            rx_closed: false,
            shutdown,
        }
    }

    /// The session id the server assigned, once `initialize` was answered.
    pub fn session_id(&self) -> Option<String> {
        let session = self.inner.session();
        let id = session.headers.id.as_ref()?;
        id.to_str().ok().map(str::to_owned)
    }

    /// The protocol version negotiated by `initialize`, once its result arrived.
    pub fn protocol_version(&self) -> Option<String> {
        let session = self.inner.session();
        let version = session.headers.version.as_ref()?;
        version.to_str().ok().map(str::to_owned)
    }

    /// Whether the server turned out to speak only the 2024-11-05 HTTP+SSE transport (C10).
    pub fn is_http_sse(&self) -> bool {
        self.inner.session().http_sse().is_some()
    }

    /// The protocol this connection speaks for the messages the transport shapes (M7):
    /// [`Family::Session`] once it runs a session (its application sent `initialize`, or the
    /// transport did for it), else the [`Client`](crate::Client)'s
    /// [`family`](crate::Client::family): the pinned one, or what [`Family::Auto`] found, `None` before
    /// the first request found out.
    pub fn family(&self) -> Option<Family> {
        if self.inner.session().is_started() {
            return Some(Family::Session);
        }
        self.inner.discovery.family(self.inner.config().family)
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        if !self.inner.terminate() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            runtime.spawn(async move {
                let _ = lane::session::end(&inner).await;
            });
        }
    }
}

impl Connection for ClientConnection {
    type Sender = ClientSender;

    fn sender(&self) -> ClientSender {
        ClientSender {
            inner: self.inner.clone(),
        }
    }

    async fn recv(&mut self) -> Result<Option<Message>, mcp_transport::Error> {
        loop {
            if self.rx_closed {
                // Closed: what is queued, then the end.
                return self.rx.recv().await.transpose();
            }
            tokio::select! {
                biased;
                item = self.rx.recv() => return item.transpose(),
                _ = self.shutdown.wait_for(|closed| *closed) => {
                    self.rx.close();
                    self.rx_closed = true;
                }
            }
        }
    }

    /// Closes the connection and ends the session with DELETE, waiting at most the
    /// [`close_timeout`](crate::ClientBuilder::close_timeout) for the answer (C8). The
    /// connection is closed whatever the outcome; an error says the server may still hold the
    /// session (it timed out, or answered with an error other than 404 or 405). A connection
    /// that never had a session (the per-request protocol, M7) sends nothing.
    async fn close(&mut self) -> Result<(), mcp_transport::Error> {
        let first = self.inner.terminate();
        self.rx.close();
        self.rx_closed = true;
        if first {
            lane::session::end(&self.inner).await?;
        }
        Ok(())
    }
}

/// The sending half of a [`ClientConnection`]: each message is its own POST (C1).
///
/// [`send`](Sender::send) resolves once the server accepted the message (a success status and
/// its headers); the replies arrive through [`recv`](Connection::recv). It fails with the
/// typed [`Error`](crate::Error) in the source of the [`mcp_transport::Error`]: a status other
/// than a success (with the start of the body), a timeout, an expired session, a message the
/// [`Family`] cannot carry. A per-request request (M7) refused with 400 or 404 and a JSON-RPC
/// error is not a failure: the send resolves, and the error comes through `recv` as the
/// request's response.
#[derive(Clone)]
pub struct ClientSender {
    inner: Arc<Inner>,
}

impl fmt::Debug for ClientSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSender")
            .field("inner", &self.inner)
            .finish()
    }
}

impl ClientSender {
    /// Sends `request` and waits, at most `timeout`, for its own response, for an application
    /// without an SDK on top to match responses to requests: the response comes back here, not
    /// through [`recv`](Connection::recv), while notifications, the server's requests and every
    /// other response still arrive through `recv`, which some task must keep reading.
    ///
    /// A JSON-RPC error response is a response (`Ok`). It fails as [`send`](Sender::send)
    /// fails, with an error for which [`Error::is_timeout`] is true when no response came in
    /// time (a response that comes later goes to `recv`), and with a closed-connection error
    /// when the connection closed first. Ids must be unique among the calls in flight: a call
    /// with the id of one still waiting takes its place.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcp_jsonrpc::Request;
    /// use mcp_streamable_client::Client;
    /// use mcp_transport::{Connection, Transport};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    /// let mut conn = Client::new("http://127.0.0.1:8080/mcp")?.connect().await?;
    /// let sender = conn.sender();
    /// // Notifications and the server's requests keep coming through `recv`.
    /// tokio::spawn(async move { while let Ok(Some(message)) = conn.recv().await { drop(message) } });
    /// let tools = sender.call(Request::new(1, "tools/list", None), Duration::from_secs(30)).await?;
    /// println!("{:?}", tools.result());
    /// # Ok(()) }
    /// ```
    pub async fn call(&self, request: Request, timeout: Duration) -> Result<Response, Error> {
        if self.inner.is_closed() {
            return Err(Error::new(Kind::Closed));
        }
        let mut caller = Caller::new(&self.inner, &request.id);
        let exchange = async {
            dispatch::send(&self.inner, request.into()).await?;
            (&mut caller.answer)
                .await
                .map_err(|_| Error::new(Kind::Closed))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| Error::timeout(Deadline::Response))?
    }
}

/// A caller waiting for its response, which stops waiting when dropped.
struct Caller<'a> {
    inner: &'a Inner,
    id: Id,
    answer: tokio::sync::oneshot::Receiver<Response>,
}

impl<'a> Caller<'a> {
    fn new(inner: &'a Inner, id: &Id) -> Caller<'a> {
        let answer = inner.expect_response(id);
        Caller {
            inner,
            id: id.clone(),
            answer,
        }
    }
}

impl Drop for Caller<'_> {
    fn drop(&mut self) {
        self.inner.forget_caller(&self.id);
    }
}

impl Sender for ClientSender {
    fn send(
        &self,
        message: Outgoing,
    ) -> impl Future<Output = Result<(), mcp_transport::Error>> + Send {
        let inner = self.inner.clone();
        async move {
            if inner.is_closed() {
                return Err(Error::new(Kind::Closed).into());
            }
            dispatch::send(&inner, message.message)
                .await
                .map_err(Into::into)
        }
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
