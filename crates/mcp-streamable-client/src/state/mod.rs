//! The state one connection shares between the application, its senders, the lanes and the
//! readers of the server's replies: the session, the requests in flight, the inbox `recv`
//! reads, and the signal that the connection closed.

mod discovery;
mod in_flight;
mod session;
#[cfg(feature = "otel")]
mod telemetry;
mod tools;

use std::collections::HashMap;
use std::fmt;
use std::future::{Future, ready};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::future::Either;
use mcp_jsonrpc::{ErrorObject, Id, Message, Response};
use tokio::sync::{RwLock, mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use crate::config::Config;
use crate::wire::Http;

pub(crate) use discovery::{Discovery, Found};
pub(crate) use in_flight::{Entry, InFlight};
pub(crate) use session::{HttpSse, INITIALIZED, Mode, Session, protocol_version};
pub(crate) use tools::Tools;

/// The JSON-RPC error code of the response the transport makes up for a request whose response
/// cannot come: its stream ended and could not be resumed, the server refused the resumption,
/// or the stream carried an oversized event (C5).
///
/// -32000 is the first code JSON-RPC leaves to implementations, and the one the reference MCP
/// SDKs use for a closed connection. The message starts with `response lost: ` and says why.
pub const LOST_RESPONSE_CODE: i64 = -32000;

/// How many received messages wait for [`ClientConnection::recv`](crate::ClientConnection) before the tasks reading the
/// server's streams stop reading: enough to absorb a burst, small enough that an application
/// that does not read holds bounded memory (and the server sees back-pressure).
const INBOX_CAPACITY: usize = 64;

/// What the tasks deliver to `recv`: a message, or an error concerning one message.
pub(crate) type Delivery = Result<Message, mcp_transport::Error>;

/// The state of one connection.
pub(crate) struct Inner {
    pub(crate) http: Arc<Http>,
    /// What the client knows of the endpoint's family, shared with its other connections.
    pub(crate) discovery: Arc<Discovery>,
    session: Mutex<Session>,
    /// The per-request requests waiting for their responses (M7).
    in_flight: Mutex<InFlight>,
    /// The tools' `Mcp-Param-*` declarations learnt from `tools/list` results (M8).
    tools: Mutex<Tools>,
    /// Held for writing while `initialize` is in flight (and while a new session starts), so
    /// that the messages sent meanwhile wait for the session id.
    pub(crate) gate: RwLock<()>,
    inbox: mpsc::Sender<Delivery>,
    /// Becomes true when the connection closes; every task watches it.
    shutdown: watch::Sender<bool>,
    closed: AtomicBool,
    /// The task reading the standalone GET stream, if one runs.
    standalone: Mutex<Option<AbortHandle>>,
    /// The callers waiting for the responses to their requests, by request id, which `recv`
    /// does not see.
    callers: Mutex<HashMap<Id, oneshot::Sender<Response>>>,
    /// The spans and durations of the requests in flight.
    #[cfg(feature = "otel")]
    operations: crate::telemetry::operation::Operations,
    /// The life of the session, for `mcp.client.session.duration`.
    #[cfg(feature = "otel")]
    life: crate::telemetry::SessionLife,
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
    /// The state of a new connection, and the receiving end of its inbox.
    pub(crate) fn new(
        http: Arc<Http>,
        discovery: Arc<Discovery>,
    ) -> (Inner, mpsc::Receiver<Delivery>) {
        let (inbox, rx) = mpsc::channel(INBOX_CAPACITY);
        #[cfg(feature = "otel")]
        let operations =
            crate::telemetry::operation::Operations::new(&http.config.telemetry, &http.config.url);
        let inner = Inner {
            http,
            discovery,
            session: Mutex::new(Session::new()),
            in_flight: Mutex::default(),
            tools: Mutex::default(),
            gate: RwLock::new(()),
            inbox,
            shutdown: watch::Sender::new(false),
            closed: AtomicBool::new(false),
            standalone: Mutex::new(None),
            callers: Mutex::default(),
            #[cfg(feature = "otel")]
            operations,
            #[cfg(feature = "otel")]
            life: crate::telemetry::SessionLife::default(),
        };
        (inner, rx)
    }

    pub(crate) fn config(&self) -> &Config {
        &self.http.config
    }

    pub(crate) fn session(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    pub(crate) fn in_flight(&self) -> MutexGuard<'_, InFlight> {
        lock(&self.in_flight)
    }

    pub(crate) fn tools(&self) -> MutexGuard<'_, Tools> {
        lock(&self.tools)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A receiver that sees the connection close.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Hands a message or a recoverable error to `recv`, or a response to the caller waiting
    /// for it; resolves to false once nobody will read it.
    ///
    /// The handing over is done here, before the future is polled, unless the inbox is full:
    /// only then is there something to wait for, in a boxed future. Every reader holds this
    /// future inline, and the reader of each reply is allocated whole, so it is kept to a few
    /// words.
    pub(crate) fn deliver(&self, item: Delivery) -> impl Future<Output = bool> + Send + '_ {
        let item = match item {
            Ok(Message::Response(response)) => {
                #[cfg(feature = "otel")]
                self.answered(&response);
                let response = self.learn_tools(response);
                match self.caller_of(&response) {
                    Some(caller) => {
                        // A caller that gave up meanwhile drops it, as `recv` would not see it.
                        let _ = caller.send(response);
                        return Either::Left(ready(true));
                    }
                    None => Ok(response.into()),
                }
            }
            other => other,
        };
        match self.inbox.try_send(item) {
            Ok(()) => Either::Left(ready(true)),
            Err(mpsc::error::TrySendError::Closed(_)) => Either::Left(ready(false)),
            Err(mpsc::error::TrySendError::Full(item)) => {
                Either::Right(Box::pin(async move { self.inbox.send(item).await.is_ok() }))
            }
        }
    }

    /// The response itself, or, answering a `tools/list`, the result without the tools whose
    /// `Mcp-Param-*` declarations are invalid, their declarations learnt (M8).
    fn learn_tools(&self, response: Response) -> Response {
        let mut tools = self.tools();
        match response.id() {
            Some(id) if tools.take_list(id) => tools.learn(response),
            _ => response,
        }
    }

    fn caller_of(&self, response: &Response) -> Option<oneshot::Sender<Response>> {
        let mut callers = lock(&self.callers);
        if callers.is_empty() {
            return None;
        }
        callers.remove(response.id()?)
    }

    /// The response to the request `id` goes to the returned receiver instead of `recv`, until
    /// [`forget_caller`](Inner::forget_caller). A caller already waiting for `id` hears that
    /// the connection ended.
    pub(crate) fn expect_response(&self, id: &Id) -> oneshot::Receiver<Response> {
        let (tx, rx) = oneshot::channel();
        lock(&self.callers).insert(id.clone(), tx);
        rx
    }

    /// The caller of `id` no longer waits; its response, if it comes, goes to `recv`.
    pub(crate) fn forget_caller(&self, id: &Id) {
        lock(&self.callers).remove(id);
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
        #[cfg(feature = "otel")]
        if first {
            self.ended();
        }
        if let Some(task) = lock(&self.standalone).take() {
            task.abort();
        }
        // The callers hear that the connection ended.
        lock(&self.callers).clear();
        first
    }

    /// Keeps the task reading the standalone GET stream (C3), ending the one it replaces.
    pub(crate) fn replace_standalone(&self, task: AbortHandle) {
        if let Some(old) = lock(&self.standalone).replace(task) {
            old.abort();
        }
    }
}
