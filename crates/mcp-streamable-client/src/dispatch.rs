//! The dispatcher: which lane a message goes in (M7), the per-request protocol of 2026-07-28 or
//! the session-based one of 2025-03-26 to 2025-11-25 (which may itself fall back to the
//! 2024-11-05 HTTP+SSE transport), as the family setting, the message itself and what the first
//! request found out about the endpoint decide.

use std::sync::Arc;

use mcp_jsonrpc::{INITIALIZE, Message, Notification, Request};
use mcp_streamable_protocol::ProtocolVersion;
use tracing::Instrument;

use crate::config::Family;
use crate::error::{Error, Kind, Unsupported};
use crate::lane::per_request::{self, Shape, Verdict};
use crate::lane::session;
use crate::shape;
use crate::state::{Found, Inner};

/// Sends `message` in its lane; resolves once the server accepted it, or the connection
/// closed.
pub(crate) async fn send(inner: &Arc<Inner>, message: Message) -> Result<(), Error> {
    #[cfg(feature = "otel")]
    let message = observe(inner, message);
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
    // Its result teaches the tools' `Mcp-Param-*` declarations (M8), whatever the lane.
    let list = match &message {
        Message::Request(r) if r.method == shape::TOOLS_LIST => Some(r.id.clone()),
        _ => None,
    };
    if let Some(id) = &list {
        inner.tools().expect_list(id);
    }
    #[cfg(feature = "otel")]
    let request = message.request_id().cloned();
    let mut shutdown = inner.shutdown_signal();
    let work = async {
        if goes_in_session(inner, &message) {
            session::in_session(inner, message).await
        } else {
            // Boxed: finding the lane holds every lane's state, which would enlarge the
            // future of every message, and each caller's copy of it.
            Box::pin(dispatch(inner, message)).await
        }
    };
    let result = tokio::select! {
        biased;
        _ = shutdown.wait_for(|closed| *closed) => Err(Error::new(Kind::Closed)),
        result = work.instrument(span) => result,
    };
    if let (Some(id), Err(_)) = (&list, &result) {
        inner.tools().forget_list(id);
    }
    #[cfg(feature = "otel")]
    if let (Some(id), Err(e)) = (&request, &result) {
        inner.failed(id, &failure_kind(e));
    }
    result
}

/// Begins the span of `message`, whose context goes into its `_meta`; a cancellation ends
/// the span of the request it names.
#[cfg(feature = "otel")]
fn observe(inner: &Inner, mut message: Message) -> Message {
    if let Message::Notification(n) = &message
        && let Some(id) = shape::cancelled_request(n)
    {
        inner.failed(&id, crate::telemetry::operation::CANCELLED);
    }
    let declared = match &message {
        Message::Request(r) => shape::declared_version(r.params.as_deref()),
        Message::Notification(n) => shape::declared_version(n.params.as_deref()),
        Message::Response(_) => None,
    };
    inner.began(&mut message, declared);
    message
}

/// The `error.type` of a request whose send failed: the HTTP status, else what went wrong.
#[cfg(feature = "otel")]
fn failure_kind(error: &Error) -> String {
    match error.status() {
        Some(status) => status.as_str().to_owned(),
        None if error.is_timeout() => "timeout".to_owned(),
        None if error.is_closed() => crate::telemetry::operation::CANCELLED.to_owned(),
        None => "transport".to_owned(),
    }
}

/// Whether `message` is a request or a response that goes in the connection's running session,
/// as most do once one runs: the way [`dispatch`] would send it, found without its state.
fn goes_in_session(inner: &Inner, message: &Message) -> bool {
    if !matches!(lane(inner), Lane::Session) {
        return false;
    }
    match message {
        Message::Request(request) => {
            request.method != INITIALIZE
                && shape::declared_version(request.params.as_deref()).is_none()
        }
        Message::Response(_) => true,
        Message::Notification(_) => false,
    }
}

/// The way a message the application did not shape goes.
#[derive(Debug, Clone, Copy)]
enum Lane {
    /// In the connection's session, as the session-based protocol has it (C1-C10).
    Session,
    /// Per request, in this version.
    PerRequest(ProtocolVersion),
    /// The endpoint is session-based and this connection has no session yet: start one.
    Start(ProtocolVersion),
    /// Nothing is known yet: the message finds out.
    Probe,
}

fn lane(inner: &Inner) -> Lane {
    let setting = inner.config().family;
    if setting == Family::Session || inner.session().is_started() {
        return Lane::Session;
    }
    match (setting, inner.discovery.found()) {
        (_, Some(Found::PerRequest(version))) => Lane::PerRequest(version),
        (Family::PerRequest, _) => Lane::PerRequest(ProtocolVersion::LATEST_PER_REQUEST),
        (_, Some(Found::Session(version))) => Lane::Start(version),
        (_, None) => Lane::Probe,
    }
}

/// Sends `message` in the lane it belongs to.
async fn dispatch(inner: &Arc<Inner>, message: Message) -> Result<(), Error> {
    match message {
        Message::Request(request) if request.method == INITIALIZE => {
            if inner.config().family == Family::PerRequest {
                return Err(Error::new(Kind::Unsupported(Unsupported::Initialize)));
            }
            Box::pin(session::initialize(inner, request)).await
        }
        Message::Request(request) => self::request(inner, request).await,
        Message::Notification(notification) => self::notification(inner, notification).await,
        Message::Response(response) => match lane(inner) {
            Lane::PerRequest(_) => Err(Error::new(Kind::Unsupported(Unsupported::Response))),
            _ => session::in_session(inner, response.into()).await,
        },
    }
}

async fn request(inner: &Arc<Inner>, request: Request) -> Result<(), Error> {
    if let Some(version) = shape::declared_version(request.params.as_deref()) {
        Box::pin(per_request::request(
            inner,
            request,
            Shape::AsIs(version),
            false,
        ))
        .await?;
        return Ok(());
    }
    // Each turn moves on: probing decides the lane, starting a session leads to `Session`.
    loop {
        match lane(inner) {
            Lane::Session => return session::in_session(inner, request.into()).await,
            Lane::PerRequest(version) => {
                let verdict = Box::pin(per_request::request(
                    inner,
                    request,
                    Shape::Fill(version),
                    false,
                ))
                .await?;
                if let Verdict::PerRequest(version) = verdict {
                    inner.discovery.remember(Found::PerRequest(version));
                }
                return Ok(());
            }
            Lane::Start(version) => Box::pin(session::start_session(inner, version)).await?,
            Lane::Probe => {
                let _probing = inner.discovery.probing.lock().await;
                if !matches!(lane(inner), Lane::Probe) {
                    // Found out by another request meanwhile.
                    continue;
                }
                let shape = Shape::Fill(ProtocolVersion::LATEST_PER_REQUEST);
                let probe = per_request::request(inner, request.clone(), shape, true);
                match Box::pin(probe).await? {
                    Verdict::PerRequest(version) => {
                        inner.discovery.remember(Found::PerRequest(version));
                        return Ok(());
                    }
                    Verdict::Session(version) => {
                        tracing::debug!(%version, "the endpoint is session-based; initializing");
                        inner.discovery.remember(Found::Session(version));
                    }
                    Verdict::Nothing => return Ok(()),
                }
            }
        }
    }
}

async fn notification(inner: &Arc<Inner>, notification: Notification) -> Result<(), Error> {
    if let Some(id) = shape::cancelled_request(&notification)
        && per_request::cancel(inner, &id)
    {
        tracing::debug!(%id, "request cancelled by closing its response stream");
        return Ok(());
    }
    let version = match shape::declared_version(notification.params.as_deref()) {
        Some(version) => version,
        None => match lane(inner) {
            Lane::Session | Lane::Start(_) => {
                return session::in_session(inner, notification.into()).await;
            }
            Lane::PerRequest(version) => version.as_str().to_owned(),
            Lane::Probe => ProtocolVersion::LATEST_PER_REQUEST.as_str().to_owned(),
        },
    };
    if notification.method == shape::CANCELLED {
        // Its request is over, or was never per-request: in the 2026-07-28 protocol, closing
        // the stream is the cancellation and the notification is not posted.
        tracing::debug!("cancellation of a request no longer in flight; not posted");
        return Ok(());
    }
    Box::pin(per_request::notify(inner, notification, &version)).await
}
