//! [`ClientConnection`] and [`ClientSender`]: the state one connection shares between the
//! application, its senders and the tasks reading the server's streams.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use http::Method;
use mcp_jsonrpc::{ErrorObject, Id, Message, Response};
use mcp_transport::{Connection, Outgoing, Sender};
use tokio::sync::{RwLock, mpsc, watch};
use tokio::task::AbortHandle;

use crate::LOST_RESPONSE_CODE;
use crate::builder::Config;
use crate::era::{Discovery, Era};
use crate::error::{Deadline, Error, Kind};
use crate::exchange::InFlight;
use crate::headers::ACCEPT_POST;
use crate::session::{Mode, Session, SessionHeaders};
use crate::stream::SseStream;
use crate::wire::{Call, Http};

/// How many received messages wait for [`ClientConnection::recv`] before the tasks reading the
/// server's streams stop reading: enough to absorb a burst, small enough that an application
/// that does not read holds bounded memory (and the server sees back-pressure).
const INBOX_CAPACITY: usize = 64;

/// What the tasks deliver to `recv`: a message, or an error concerning one message.
pub(crate) type Delivery = Result<Message, mcp_transport::Error>;

/// The state of one connection.
pub(crate) struct Inner {
    pub(crate) http: Arc<Http>,
    /// What the client knows of the endpoint's era, shared with its other connections.
    pub(crate) discovery: Arc<Discovery>,
    session: Mutex<Session>,
    /// The per-request requests waiting for their responses (M7).
    in_flight: Mutex<InFlight>,
    /// Held for writing while `initialize` is in flight (and while a new session starts), so
    /// that the messages sent meanwhile wait for the session id.
    pub(crate) gate: RwLock<()>,
    inbox: mpsc::Sender<Delivery>,
    /// Becomes true when the connection closes; every task watches it.
    shutdown: watch::Sender<bool>,
    closed: AtomicBool,
    /// The task reading the standalone GET stream, if one runs.
    standalone: Mutex<Option<AbortHandle>>,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("url", &self.http.config.url)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    pub(crate) fn config(&self) -> &Config {
        &self.http.config
    }

    pub(crate) fn session(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    pub(crate) fn in_flight(&self) -> MutexGuard<'_, InFlight> {
        lock(&self.in_flight)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A receiver that sees the connection close.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Hands a message or a recoverable error to `recv`; false once nobody will read it.
    pub(crate) async fn deliver(&self, item: Delivery) -> bool {
        self.inbox.send(item).await.is_ok()
    }

    /// Answers the request `id` with an error response saying why its response will not come
    /// (C5).
    pub(crate) async fn answer_lost(&self, id: Id, reason: &str) -> bool {
        tracing::warn!(%id, reason, "request will get no response from the server");
        let error = ErrorObject::new(LOST_RESPONSE_CODE, format!("response lost: {reason}"));
        self.deliver(Ok(Response::error(Some(id), error).into()))
            .await
    }

    /// Closes the connection on this side: sends fail, tasks stop, `recv` drains and ends.
    /// Returns whether this call closed it.
    pub(crate) fn terminate(&self) -> bool {
        let first = !self.closed.swap(true, Ordering::AcqRel);
        self.shutdown.send_replace(true);
        if let Some(task) = lock(&self.standalone).take() {
            task.abort();
        }
        first
    }

    /// Opens the standalone GET stream of the session (C3), replacing any previous one.
    pub(crate) fn start_standalone(self: &Arc<Self>, session: SessionHeaders) {
        if !self.config().standalone || self.is_closed() {
            return;
        }
        let stream = SseStream::standalone(self.clone(), session);
        let task = tokio::spawn(stream.run(None));
        if let Some(old) = lock(&self.standalone).replace(task.abort_handle()) {
            old.abort();
        }
    }

    /// Ends the session with DELETE, bounded by the close timeout (C8). 404 and 405 are fine:
    /// the session is gone, or the server does not let clients end sessions.
    pub(crate) async fn delete_session(&self) -> Result<(), Error> {
        let (headers, mode) = {
            let session = self.session();
            (session.headers.clone(), session.mode.clone())
        };
        if !matches!(mode, Mode::Streamable) || headers.id.is_none() {
            return Ok(());
        }
        let timeout = self.config().close_timeout;
        let call = Call {
            method: Method::DELETE,
            uri: &self.config().url,
            accept: ACCEPT_POST,
            session: &headers,
            meta: None,
            last_event_id: None,
            body: None,
            timeout,
            deadline: Deadline::Close,
        };
        let result = tokio::time::timeout(timeout, self.http.execute(&call))
            .await
            .map_err(|_| Error::timeout(Deadline::Close))
            .and_then(|r| r);
        match result {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.status().map(|s| s.as_u16()), Some(404 | 405)) => {
                tracing::debug!(error = %e, "session not deleted by the server");
                Ok(())
            }
            Err(e) => {
                tracing::debug!(error = %e, "deleting the session failed");
                Err(e)
            }
        }
    }
}

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
/// Dropping it closes it; the DELETE that ends the session, if there is one, is then sent in the
/// background.
///
/// [`ErrorKind::InvalidMessage`]: mcp_transport::ErrorKind::InvalidMessage
/// [`ErrorKind::MessageTooLarge`]: mcp_transport::ErrorKind::MessageTooLarge
pub struct ClientConnection {
    inner: Arc<Inner>,
    rx: mpsc::Receiver<Delivery>,
    rx_closed: bool,
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
        let (inbox, rx) = mpsc::channel(INBOX_CAPACITY);
        let inner = Inner {
            http,
            discovery,
            session: Mutex::new(Session::new()),
            in_flight: Mutex::default(),
            gate: RwLock::new(()),
            inbox,
            shutdown: watch::Sender::new(false),
            closed: AtomicBool::new(false),
            standalone: Mutex::new(None),
        };
        ClientConnection {
            inner: Arc::new(inner),
            rx,
            rx_closed: false,
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
    pub fn is_legacy(&self) -> bool {
        self.inner.session().legacy().is_some()
    }

    /// The protocol this connection speaks for the messages the transport shapes (M7):
    /// [`Era::Legacy`] once it runs a session (its application sent `initialize`, or the
    /// transport did for it), else the [`Client`](crate::Client)'s
    /// [`era`](crate::Client::era): the pinned one, or what [`Era::Auto`] found, `None` before
    /// the first request found out.
    pub fn era(&self) -> Option<Era> {
        if self.inner.session().is_started() {
            return Some(Era::Legacy);
        }
        self.inner.discovery.era(self.inner.config().era)
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
                let _ = inner.delete_session().await;
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
        let mut shutdown = self.inner.shutdown_signal();
        loop {
            if self.rx_closed {
                // Closed: what is queued, then the end.
                return self.rx.recv().await.transpose();
            }
            tokio::select! {
                biased;
                item = self.rx.recv() => return item.transpose(),
                _ = shutdown.wait_for(|closed| *closed) => {
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
            self.inner.delete_session().await?;
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
/// [`Era`] cannot carry. A per-request request (M7) refused with 400 or 404 and a JSON-RPC
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
            crate::send::send(&inner, message.message)
                .await
                .map_err(Into::into)
        }
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
