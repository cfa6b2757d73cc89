//! The session lane: one message of the session-based protocol (2025-03-26 to 2025-11-25), its
//! POST, the session it starts or carries, starting a session for the application when the
//! endpoint turned out to be session-based (M7), starting a new one when the old one expired,
//! the standalone stream, and ending the session (C1, C3, C6, C8, C10).

use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use mcp_jsonrpc::{Id, Message, Notification, Request};
use mcp_streamable_protocol::ProtocolVersion;
use mcp_streamable_protocol::headers::MCP_SESSION_ID;
use tokio::sync::oneshot;

use crate::error::{Deadline, Error, Kind};
use crate::lane::http_sse;
use crate::read::{self, SseStream, Tracker};
use crate::shape::Identity;
use crate::state::{INITIALIZED, Inner, Mode};
use crate::wire::{Body, Call, NO_SESSION, SessionHeaders};

/// Sends `initialize`, which starts a new session: the messages sent meanwhile wait for its
/// answer's session id.
pub(crate) async fn initialize(inner: &Arc<Inner>, request: Request) -> Result<(), Error> {
    let _gate = inner.gate.write().await;
    let http_sse = {
        let mut session = inner.session();
        session.headers = SessionHeaders::default();
        session.initialize = Some(request.clone());
        session.initialized = None;
        session.http_sse()
    };
    let id = request.id.clone();
    let message = Message::Request(request);
    if let Some(http_sse) = http_sse {
        return Box::pin(http_sse::post(inner, &http_sse, &message)).await;
    }
    let body = Bytes::from(message.to_vec());
    match post(inner, &NO_SESSION, body).await {
        Ok(response) => {
            let session = adopt_session(inner, &response);
            let tracker = Tracker::new(Some(id)).initialize(false, None);
            read::accept(inner, response, session, tracker)
        }
        Err(e) if fallback_applies(inner, &e) => {
            let http_sse = http_sse::fallback(inner, e).await?;
            inner.session().mode = Mode::HttpSse(http_sse.clone());
            Box::pin(http_sse::post(inner, &http_sse, &message)).await
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
fn adopt_session(inner: &Inner, response: &Response<Body>) -> SessionHeaders {
    let id = response.headers().get(MCP_SESSION_ID).cloned();
    tracing::debug!(session_id = ?id, "session started");
    let mut session = inner.session();
    #[cfg(feature = "otel")]
    let before = session.headers.version.clone();
    session.headers.id = id;
    session.mode = Mode::Streamable;
    let headers = session.headers.clone();
    drop(session);
    #[cfg(feature = "otel")]
    inner.session_began(before.as_ref().and_then(|v| v.to_str().ok()));
    headers
}

/// Sends any message other than `initialize`, in the current session.
pub(crate) async fn in_session(inner: &Arc<Inner>, message: Message) -> Result<(), Error> {
    let (session, http_sse) = {
        // Waits while an `initialize` is in flight.
        let _gate = inner.gate.read().await;
        let session = inner.session();
        (session.headers.clone(), session.http_sse())
    };
    if let Some(http_sse) = http_sse {
        return Box::pin(http_sse::post(inner, &http_sse, &message)).await;
    }
    let body = encode(&message);
    let (session, response) = match post(inner, &session, body.clone()).await {
        Ok(response) => (session, response),
        Err(e) if e.is_session_expired() && inner.config().reinitialize => {
            // Boxed, as rare: its state would enlarge every message's.
            Box::pin(post_in_new_session(inner, &session, e, body)).await?
        }
        Err(e) => {
            #[cfg(feature = "otel")]
            if e.is_session_expired() {
                inner.session_expired();
            }
            return Err(e);
        }
    };
    let initialized = match &message {
        Message::Notification(n) if n.method == INITIALIZED => {
            inner.session().initialized = Some(n.clone());
            true
        }
        _ => false,
    };
    read::accept(
        inner,
        response,
        session.clone(),
        Tracker::new(message.request_id().cloned()),
    )?;
    if initialized {
        // Initialisation is over: the server may now talk on its own (C3).
        open_standalone(inner, session);
    }
    Ok(())
}

/// The JSON of `message`, in a buffer allocated once: most of a message is its params, and the
/// 128 bytes the encoder starts with would be grown for a typical `tools/call`.
fn encode(message: &Message) -> Bytes {
    let params = match message {
        Message::Request(request) => request.params.as_deref(),
        Message::Notification(notification) => notification.params.as_deref(),
        Message::Response(_) => None,
    };
    let mut buf = Vec::with_capacity(128 + params.map_or(0, |p| p.get().len()));
    message.encode(&mut buf);
    Bytes::from(buf)
}

/// Starts a new session after `expired` was answered 404 (C6), and POSTs `body` in it.
async fn post_in_new_session(
    inner: &Arc<Inner>,
    expired: &SessionHeaders,
    error: Error,
    body: Bytes,
) -> Result<(SessionHeaders, Response<Body>), Error> {
    let fresh = reinitialize(inner, expired, error).await?;
    let response = post(inner, &fresh, body).await?;
    Ok((fresh, response))
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
pub(crate) async fn start_session(
    inner: &Arc<Inner>,
    version: ProtocolVersion,
) -> Result<(), Error> {
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

async fn own_lifecycle(inner: &Arc<Inner>, version: ProtocolVersion) -> Result<(), Error> {
    let identity: &Identity = &inner.config().identity;
    let id = Id::from(OWN_INITIALIZE_ID);
    let request = Request::new(
        id.clone(),
        mcp_jsonrpc::INITIALIZE,
        Some(identity.initialize_params(version.as_str())),
    );
    {
        let mut session = inner.session();
        session.headers = SessionHeaders::default();
        session.initialize = Some(request.clone());
        session.initialized = None;
    }
    tracing::debug!(%version, "initializing for the application");
    let message = Message::Request(request);
    let (done, result) = oneshot::channel();
    let body = Bytes::from(message.to_vec());
    let http_sse = match post(inner, &NO_SESSION, body).await {
        Ok(response) => {
            let session = adopt_session(inner, &response);
            let tracker = Tracker::new(Some(id)).initialize(true, Some(done));
            read::accept(inner, response, session, tracker)?;
            None
        }
        Err(e) if fallback_applies(inner, &e) => {
            let http_sse = http_sse::fallback(inner, e).await?;
            inner.session().mode = Mode::HttpSse(http_sse.clone());
            http_sse.expect_initialize(id, done);
            Box::pin(http_sse::post(inner, &http_sse, &message)).await?;
            Some(http_sse)
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
    if let Some(http_sse) = http_sse {
        return Box::pin(http_sse::post(inner, &http_sse, &message)).await;
    }
    let session = inner.session().headers.clone();
    let response = post(inner, &session, Bytes::from(message.to_vec())).await?;
    read::accept(inner, response, session.clone(), Tracker::new(None))?;
    open_standalone(inner, session);
    Ok(())
}

/// POSTs one message's bytes in `session`.
async fn post(
    inner: &Inner,
    session: &SessionHeaders,
    body: Bytes,
) -> Result<Response<Body>, Error> {
    let config = inner.config();
    inner
        .http
        .execute(&Call::post(config, &config.url, session, body))
        .await
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
    let response = post(inner, &NO_SESSION, Bytes::from(message.to_vec())).await?;
    let session = adopt_session(inner, &response);
    let (done, result) = oneshot::channel();
    let tracker = Tracker::new(Some(init.id)).initialize(true, Some(done));
    read::accept(inner, response, session, tracker)?;
    match tokio::time::timeout(inner.config().request_timeout, result).await {
        Ok(Ok(true)) => {}
        Ok(_) => return Err(error),
        Err(_) => return Err(Error::timeout(Deadline::Request)),
    }
    let session = inner.session().headers.clone();
    if let Some(notification) = initialized {
        let body = Bytes::from(Message::Notification(notification).to_vec());
        post(inner, &session, body).await?;
        open_standalone(inner, session.clone());
    }
    Ok(session)
}

/// Opens the standalone GET stream of the session (C3), replacing any previous one.
fn open_standalone(inner: &Arc<Inner>, session: SessionHeaders) {
    if !inner.config().standalone || inner.is_closed() {
        return;
    }
    let stream = SseStream::standalone(inner.clone(), session);
    let reading: read::Reading = Box::pin(stream.run(None));
    inner.replace_standalone(tokio::spawn(reading).abort_handle());
}

/// Ends the session with DELETE, bounded by the close timeout (C8). 404 and 405 are fine:
/// the session is gone, or the server does not let clients end sessions.
pub(crate) async fn end(inner: &Inner) -> Result<(), Error> {
    let (headers, mode) = {
        let session = inner.session();
        (session.headers.clone(), session.mode.clone())
    };
    if !matches!(mode, Mode::Streamable) || headers.id.is_none() {
        return Ok(());
    }
    let call = Call::delete(inner.config(), &headers);
    let result = tokio::time::timeout(call.timeout, inner.http.execute(&call))
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
