//! Sending one message of the session-based protocol: its POST, the session it starts or
//! carries, starting a session for the application when the endpoint turned out to be
//! session-based (M7), and starting a new one when the old one expired (C1, C6, C10).

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};
use hyper::body::Incoming;
use mcp_jsonrpc::{Id, Message, Notification, Request};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::connection::Inner;
use crate::error::{Deadline, Error, Kind};
use crate::headers::{ACCEPT_POST, MCP_SESSION_ID};
use crate::legacy;
use crate::modern::Identity;
use crate::reply::{self, Tracker};
use crate::session::{INITIALIZED, Mode, SessionHeaders};
use crate::wire::Call;

/// Sends `message` in its own POST; resolves once the server accepted it.
pub(crate) async fn send(inner: &Arc<Inner>, message: Message) -> Result<(), Error> {
    let span = tracing::debug_span!(
        "mcp.request",
        method = message.method().unwrap_or("response"),
        id = tracing::field::Empty,
    );
    let id = match &message {
        Message::Request(r) => Some(&r.id),
        Message::Response(r) => r.id(),
        Message::Notification(_) => None,
    };
    if let Some(id) = id {
        span.record("id", tracing::field::display(id));
    }
    let mut shutdown = inner.shutdown_signal();
    let work = crate::era::dispatch(inner, message);
    tokio::select! {
        biased;
        _ = shutdown.wait_for(|closed| *closed) => Err(Error::new(Kind::Closed)),
        result = work.instrument(span) => result,
    }
}

/// Sends `initialize`, which starts a new session: the messages sent meanwhile wait for its
/// answer's session id.
pub(crate) async fn initialize(inner: &Arc<Inner>, request: Request) -> Result<(), Error> {
    let _gate = inner.gate.write().await;
    let legacy = {
        let mut session = inner.session();
        session.headers = SessionHeaders::default();
        session.initialize = Some(request.clone());
        session.initialized = None;
        session.legacy()
    };
    let id = request.id.clone();
    let message = Message::Request(request);
    if let Some(legacy) = legacy {
        return legacy.post(inner, &message).await;
    }
    let body = Bytes::from(message.to_vec());
    match post(inner, &SessionHeaders::default(), body).await {
        Ok(response) => {
            let session = adopt_session(inner, &response);
            let tracker = Tracker::new(Some(id)).initialize(false, None);
            reply::accept(inner, response, session, tracker)
        }
        Err(e) if fallback_applies(inner, &e) => {
            let legacy = legacy::fallback(inner, e).await?;
            inner.session().mode = Mode::Legacy(legacy.clone());
            legacy.post(inner, &message).await
        }
        Err(e) => Err(e),
    }
}

/// Whether a failed first `initialize` should try the 2024-11-05 transport (C10).
fn fallback_applies(inner: &Inner, error: &Error) -> bool {
    inner.config().legacy_fallback
        && matches!(inner.session().mode, Mode::Unknown)
        && matches!(error.status().map(|s| s.as_u16()), Some(400 | 404 | 405))
}

/// Takes the session id from the answer to `initialize`.
fn adopt_session(inner: &Inner, response: &Response<Incoming>) -> SessionHeaders {
    let id = response.headers().get(MCP_SESSION_ID).cloned();
    tracing::debug!(session_id = ?id, "session started");
    let mut session = inner.session();
    session.headers.id = id;
    session.mode = Mode::Streamable;
    session.headers.clone()
}

/// Sends any message other than `initialize`, in the current session.
pub(crate) async fn in_session(inner: &Arc<Inner>, message: Message) -> Result<(), Error> {
    let (session, legacy) = {
        // Waits while an `initialize` is in flight.
        let _gate = inner.gate.read().await;
        let session = inner.session();
        (session.headers.clone(), session.legacy())
    };
    if let Some(legacy) = legacy {
        return legacy.post(inner, &message).await;
    }
    let body = Bytes::from(message.to_vec());
    let (session, response) = match post(inner, &session, body.clone()).await {
        Ok(response) => (session, response),
        Err(e) if e.is_session_expired() && inner.config().reinitialize => {
            let fresh = reinitialize(inner, &session, e).await?;
            let response = post(inner, &fresh, body).await?;
            (fresh, response)
        }
        Err(e) => return Err(e),
    };
    let initialized = match &message {
        Message::Notification(n) if n.method == INITIALIZED => {
            inner.session().initialized = Some(n.clone());
            true
        }
        _ => false,
    };
    reply::accept(
        inner,
        response,
        session.clone(),
        Tracker::new(message.request_id().cloned()),
    )?;
    if initialized {
        // Initialisation is over: the server may now talk on its own (C3).
        inner.start_standalone(session);
    }
    Ok(())
}

/// The id of the `initialize` the transport sends for the application: a string no integer id
/// of the application's can equal. Its response is the transport's, never delivered.
const OWN_INITIALIZE_ID: &str = "mcp-streamable-client/initialize";

/// Runs the session-based lifecycle for the application, which sent a request without
/// `initialize` to an endpoint that turned out to be session-based (M7): `initialize` asking for
/// `version`, with the builder's client info and capabilities, its result (consumed here), then
/// `notifications/initialized` and the standalone stream. The C10 fallback to HTTP+SSE applies
/// to this `initialize` as to the application's. Returns once the session is ready; does
/// nothing if the connection has one already.
pub(crate) async fn start_session(inner: &Arc<Inner>, version: &str) -> Result<(), Error> {
    let _gate = inner.gate.write().await;
    if inner.session().is_started() {
        return Ok(());
    }
    let started = own_lifecycle(inner, version).await;
    if started.is_err() {
        // Not started: the next request tries again, rather than going without a session.
        let mut session = inner.session();
        session.initialize = None;
        session.initialized = None;
        session.headers = SessionHeaders::default();
    }
    started
}

async fn own_lifecycle(inner: &Arc<Inner>, version: &str) -> Result<(), Error> {
    let identity: &Identity = &inner.config().identity;
    let id = Id::from(OWN_INITIALIZE_ID);
    let request = Request::new(
        id.clone(),
        mcp_jsonrpc::INITIALIZE,
        Some(identity.initialize_params(version)),
    );
    {
        let mut session = inner.session();
        session.headers = SessionHeaders::default();
        session.initialize = Some(request.clone());
        session.initialized = None;
    }
    tracing::debug!(version, "initializing for the application");
    let message = Message::Request(request);
    let (done, result) = oneshot::channel();
    let body = Bytes::from(message.to_vec());
    let legacy = match post(inner, &SessionHeaders::default(), body).await {
        Ok(response) => {
            let session = adopt_session(inner, &response);
            let tracker = Tracker::new(Some(id)).initialize(true, Some(done));
            reply::accept(inner, response, session, tracker)?;
            None
        }
        Err(e) if fallback_applies(inner, &e) => {
            let legacy = legacy::fallback(inner, e).await?;
            inner.session().mode = Mode::Legacy(legacy.clone());
            legacy.expect_initialize(id, done);
            legacy.post(inner, &message).await?;
            Some(legacy)
        }
        Err(e) => return Err(e),
    };
    match tokio::time::timeout(inner.config().request_timeout, result).await {
        Ok(Ok(true)) => {}
        Ok(_) => return Err(Error::new(Kind::Initialize)),
        Err(_) => return Err(Error::timeout(Deadline::Request)),
    }
    let notification = Notification::new(INITIALIZED, None);
    inner.session().initialized = Some(notification.clone());
    let message = Message::Notification(notification);
    if let Some(legacy) = legacy {
        return legacy.post(inner, &message).await;
    }
    let session = inner.session().headers.clone();
    let response = post(inner, &session, Bytes::from(message.to_vec())).await?;
    reply::accept(inner, response, session.clone(), Tracker::new(None))?;
    inner.start_standalone(session);
    Ok(())
}

/// POSTs one message's bytes in `session`.
async fn post(
    inner: &Inner,
    session: &SessionHeaders,
    body: Bytes,
) -> Result<Response<Incoming>, Error> {
    let config = inner.config();
    let call = Call {
        method: Method::POST,
        uri: &config.url,
        accept: ACCEPT_POST,
        session,
        meta: None,
        last_event_id: None,
        body: Some(body),
        timeout: config.request_timeout,
        deadline: Deadline::Request,
    };
    inner.http.execute(&call).await
}

/// Starts a new session after `expired` was answered 404 (C6): re-sends the remembered
/// `initialize`, waits for its result, re-sends `notifications/initialized`, and returns the new
/// session's headers. Senders that met the same 404 meanwhile find the new session ready.
async fn reinitialize(
    inner: &Arc<Inner>,
    expired: &SessionHeaders,
    error: Error,
) -> Result<SessionHeaders, Error> {
    let _gate = inner.gate.write().await;
    let (current, init, initialized) = {
        let session = inner.session();
        (
            session.headers.clone(),
            session.initialize.clone(),
            session.initialized.clone(),
        )
    };
    if current.id != expired.id {
        return Ok(current);
    }
    let Some(init) = init else {
        return Err(error);
    };
    tracing::info!(
        expired = ?expired.id,
        "session expired; starting a new one (the server keeps nothing of the old one)"
    );
    inner.session().headers = SessionHeaders::default();
    let message = Message::Request(init.clone());
    let response = post(
        inner,
        &SessionHeaders::default(),
        Bytes::from(message.to_vec()),
    )
    .await?;
    let session = adopt_session(inner, &response);
    let (done, result) = oneshot::channel();
    let tracker = Tracker::new(Some(init.id)).initialize(true, Some(done));
    reply::accept(inner, response, session, tracker)?;
    match tokio::time::timeout(inner.config().request_timeout, result).await {
        Ok(Ok(true)) => {}
        Ok(_) => return Err(error),
        Err(_) => return Err(Error::timeout(Deadline::Request)),
    }
    let session = inner.session().headers.clone();
    if let Some(notification) = initialized {
        let body = Bytes::from(Message::Notification(notification).to_vec());
        post(inner, &session, body).await?;
        inner.start_standalone(session.clone());
    }
    Ok(session)
}
