//! The per-request lane (M7): one request of the 2026-07-28 protocol, its POST with the headers
//! mirrored from the body, what a per-request server answers when it refuses it, and its
//! cancellation by closing its response stream.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};

use mcp_jsonrpc::{ErrorObject, Id, Notification, Request};
use mcp_streamable_protocol::ProtocolVersion;
use mcp_streamable_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION;

use crate::error::Error;
use crate::headers;
use crate::read::{self, Recovery, Resend, Tracker};
use crate::shape::{self, Choice, MetaHeaders};
use crate::state::{Entry, Inner};
use crate::wire::{Answer, Body, NO_SESSION};

/// How a request's `_meta` is made.
#[derive(Debug)]
pub(crate) enum Shape {
    /// The application wrote it, declaring this version.
    AsIs(String),
    /// The transport fills it in, declaring this version.
    Fill(ProtocolVersion),
}

/// What one exchange says of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It speaks the per-request protocol, in this version: a request the transport shaped was
    /// answered, or refused the way only a per-request server refuses.
    PerRequest(ProtocolVersion),
    /// It speaks the session-based protocol, in this version at best (a probe only).
    Session(ProtocolVersion),
    /// Nothing learnt: the application shaped the request, or cancelled it before its answer.
    Nothing,
}

/// Sends a request the per-request way and reads its reply in a task of its own. A refusal
/// carrying a JSON-RPC error is delivered as the request's error response. After a -32022, a
/// request whose `_meta` the transport fills is retried with the newest version the server
/// lists that this client speaks. When `probe`, a refusal that is not a per-request one (or a
/// -32022 listing only session-based versions) is not delivered but returned as
/// [`Verdict::Session`], for the caller to fall back.
pub(crate) async fn request(
    inner: &Arc<Inner>,
    request: Request,
    shape: Shape,
    probe: bool,
) -> Result<Verdict, Error> {
    let mut ticket = Ticket::new(inner, &request.id);
    let mut version = match shape {
        Shape::AsIs(version) => {
            let meta = MetaHeaders::new(&request.method, request.params.as_deref(), &version)?;
            let refused = send(inner, request, meta, &mut ticket).await?;
            if let Some((id, _, error)) = refused {
                deliver_refusal(inner, id, error).await;
            }
            return Ok(Verdict::Nothing);
        }
        Shape::Fill(version) => version,
    };
    let mut tries = 0;
    loop {
        tries += 1;
        // A new request around the filled params: the application's params are not copied.
        let params = shape::fill(
            request.params.as_deref(),
            version.as_str(),
            &inner.config().identity,
        )?;
        let sent = Request::new(request.id.clone(), request.method.clone(), Some(params));
        let meta = MetaHeaders::new(&sent.method, sent.params.as_deref(), version.as_str())?;
        let refused = match send(inner, sent, meta, &mut ticket).await {
            Err(e) if probe && matches!(e.status().map(|s| s.as_u16()), Some(400 | 404 | 405)) => {
                tracing::debug!(error = %e, "not a 2026-07-28 refusal");
                return Ok(Verdict::Session(ProtocolVersion::LATEST_SESSION));
            }
            refused => refused?,
        };
        let Some((id, status, error)) = refused else {
            return Ok(if ticket.is_cancelled() {
                Verdict::Nothing
            } else {
                Verdict::PerRequest(version)
            });
        };
        if status == StatusCode::BAD_REQUEST && error.code == UNSUPPORTED_PROTOCOL_VERSION {
            match shape::choose(&error) {
                // Each version once, and the one refused once more: a server behind a load
                // balancer may be mid-upgrade.
                Choice::PerRequest(next) if tries <= ProtocolVersion::PER_REQUEST.len() => {
                    tracing::debug!(%next, "server refused the protocol version; retrying");
                    version = next;
                    continue;
                }
                Choice::Session(version) if probe => return Ok(Verdict::Session(version)),
                _ => {}
            }
        }
        if probe && !shape::is_per_request_refusal(status, error.code) {
            tracing::debug!(%status, code = error.code, "not a 2026-07-28 refusal");
            return Ok(Verdict::Session(ProtocolVersion::LATEST_SESSION));
        }
        deliver_refusal(inner, id, error).await;
        return Ok(Verdict::PerRequest(version));
    }
}

/// A refusal of a request: its id, the status and the JSON-RPC error.
type Refusal = (Id, StatusCode, ErrorObject);

/// POSTs `sent` and, when it is accepted, reads its reply in a task of its own. Returns the
/// refusal when the server refused it with a JSON-RPC error, `None` when it was accepted or
/// cancelled. A probe's plain 400, 404 or 405 comes back as an error the caller reads.
async fn send(
    inner: &Arc<Inner>,
    sent: Request,
    meta: MetaHeaders,
    ticket: &mut Ticket,
) -> Result<Option<Refusal>, Error> {
    let body = Bytes::from(sent.to_vec());
    let answer = tokio::select! {
        biased;
        () = ticket.cancelled() => return Ok(None),
        answer = inner.http.post_per_request(body, &meta) => answer,
    };
    match answer {
        Answer::Success(response) => {
            read_reply(inner, response, sent, meta, ticket.take())?;
            Ok(None)
        }
        Answer::Refused { status, error, .. } => Ok(Some((sent.id, status, error))),
        Answer::Failed(e) => Err(e),
    }
}

async fn deliver_refusal(inner: &Inner, id: Id, error: ErrorObject) {
    tracing::debug!(code = error.code, "server refused the request");
    let response = mcp_jsonrpc::Response::error(Some(id), error);
    inner.deliver(Ok(response.into())).await;
}

/// Reads the reply to the request `sent` in a task of its own, until its response, its
/// cancellation or the end of the connection.
fn read_reply(
    inner: &Arc<Inner>,
    response: Response<Body>,
    sent: Request,
    meta: MetaHeaders,
    mut ticket: Ticket,
) -> Result<(), Error> {
    if response.status() == StatusCode::ACCEPTED {
        // S4 forbids it, and no other stream could carry the response.
        tracing::warn!("server answered a request with 202 Accepted");
        let inner = inner.clone();
        tokio::spawn(async move {
            let reason = "the server accepted the request without answering it";
            inner.answer_lost(sent.id, reason).await;
        });
        return Ok(());
    }
    let tracker = Tracker::new(Some(sent.id.clone()));
    let recovery = Recovery::Resend(Resend::new(sent, meta));
    let format = headers::format(response.headers());
    let reading = read::reader(
        format,
        inner,
        response,
        NO_SESSION.clone(),
        tracker,
        recovery,
    )?;
    if let Some(reading) = reading {
        tokio::spawn(async move {
            tokio::select! {
                biased;
                // Dropping the body closes its connection: the server's signal (M6).
                () = ticket.cancelled() => tracing::debug!(id = %ticket.id, "response stream closed"),
                () = reading => {}
            }
        });
    }
    Ok(())
}

/// Sends a notification the per-request way; a 202 is success.
pub(crate) async fn notify(
    inner: &Arc<Inner>,
    notification: Notification,
    version: &str,
) -> Result<(), Error> {
    let meta = MetaHeaders::new(
        &notification.method,
        notification.params.as_deref(),
        version,
    )?;
    let body = Bytes::from(notification.to_vec());
    match inner.http.post_per_request(body, &meta).await {
        Answer::Success(response) => {
            read::accept(inner, response, NO_SESSION.clone(), Tracker::new(None))
        }
        Answer::Refused { failure, .. } | Answer::Failed(failure) => Err(failure),
    }
}

/// Cancels the request `id` if it is a per-request one in flight: its stream or its POST is
/// dropped, which closes the connection carrying it. Returns whether there was one.
pub(crate) fn cancel(inner: &Inner, id: &Id) -> bool {
    inner.in_flight().cancel(id)
}

/// A request's place among those in flight, which it leaves when dropped.
#[derive(Debug)]
struct Ticket {
    inner: Arc<Inner>,
    id: Id,
    /// `None` when another request in flight has the same id: only that one can be cancelled.
    entry: Option<Entry>,
    cancelled: bool,
}

impl Ticket {
    fn new(inner: &Arc<Inner>, id: &Id) -> Ticket {
        let entry = inner.in_flight().enter(id);
        Ticket {
            inner: inner.clone(),
            id: id.clone(),
            entry,
            cancelled: false,
        }
    }

    /// Resolves when the request is cancelled.
    async fn cancelled(&mut self) {
        match &mut self.entry {
            Some((_, cancelled)) => {
                let _ = cancelled.await;
                self.cancelled = true;
            }
            None => std::future::pending().await,
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    /// The ticket, for the task that reads the reply; this one is left empty.
    fn take(&mut self) -> Ticket {
        Ticket {
            inner: self.inner.clone(),
            id: self.id.clone(),
            entry: self.entry.take(),
            cancelled: false,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some((generation, _)) = &self.entry {
            self.inner.in_flight().leave(&self.id, *generation);
        }
    }
}
