//! One message of the per-request protocol (M7): its POST with the headers mirrored from the
//! body, what a modern server answers when it refuses it, the requests in flight, and their
//! cancellation by closing their response streams.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{Method, Response, StatusCode};
use hyper::body::Incoming;
use mcp_jsonrpc::{ErrorObject, Id, Notification, Request};
use tokio::sync::oneshot;

use crate::connection::Inner;
use crate::error::{Deadline, Error, Kind};
use crate::headers::{self, ACCEPT_POST, Format};
use crate::modern::{self, Choice, LEGACY_VERSIONS, MODERN_VERSIONS, MetaHeaders};
use crate::reply::{self, Tracker};
use crate::session::SessionHeaders;
use crate::stream::SseStream;
use crate::wire::{self, Call};

/// How much of a refusal's body is read to find the JSON-RPC error in it: 64 KiB. A modern
/// server's refusal is a short error object (a -32022 lists a few versions); reading more than
/// the [`ERROR_BODY_PREFIX`](crate::ERROR_BODY_PREFIX) kept for display lets a long message
/// through, and the bound keeps a misbehaving server from making the client buffer much.
const MAX_REFUSAL_BODY: usize = 64 * 1024;

/// How a request's `_meta` is made.
#[derive(Debug)]
pub(crate) enum Shape {
    /// The application wrote it, declaring this version.
    AsIs(String),
    /// The transport fills it in, declaring this version.
    Fill(&'static str),
}

/// What one exchange says of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It speaks the per-request protocol, in this version: a request the transport shaped was
    /// answered, or refused the way only a modern server refuses.
    Modern(&'static str),
    /// It speaks the session-based protocol, in this version at best (a probe only).
    Legacy(&'static str),
    /// Nothing learnt: the application shaped the request, or cancelled it before its answer.
    Nothing,
}

/// The answer to one per-request POST.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A success status; the body is still to read.
    Success(Response<Incoming>),
    /// A 400 or 404 whose body is a JSON-RPC error response: the request's answer.
    Refused {
        status: StatusCode,
        error: ErrorObject,
        /// The same, as an error for a caller that cannot deliver a response.
        failure: Error,
    },
    /// Anything else.
    Failed(Error),
}

/// POSTs one message's bytes with its per-request headers: no session id, no `Last-Event-ID`.
pub(crate) async fn post(inner: &Inner, body: Bytes, meta: &MetaHeaders) -> Answer {
    let config = inner.config();
    let none = SessionHeaders::default();
    let call = Call {
        method: Method::POST,
        uri: &config.url,
        accept: ACCEPT_POST,
        session: &none,
        meta: Some(meta),
        last_event_id: None,
        body: Some(body),
        timeout: config.request_timeout,
        deadline: Deadline::Request,
    };
    let response = match inner.http.exchange(&call).await {
        Ok(response) => response,
        Err(e) => return Answer::Failed(e),
    };
    let status = response.status();
    if status.is_success() {
        return Answer::Success(response);
    }
    let body = wire::error_body(response.into_body(), MAX_REFUSAL_BODY, call.timeout).await;
    let failure = Error::from_status(status, wire::error_text(&body), false);
    match modern::rpc_error(&body) {
        Some(error) if matches!(status, StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND) => {
            Answer::Refused {
                status,
                error,
                failure,
            }
        }
        _ => Answer::Failed(failure),
    }
}

/// Sends a request the per-request way and reads its reply in a task of its own. A refusal
/// carrying a JSON-RPC error is delivered as the request's error response. After a -32022, a
/// request whose `_meta` the transport fills is retried with the newest version the server
/// lists that this client speaks. When `probe`, a refusal that is not a modern one (or a -32022
/// listing only session-based versions) is not delivered but returned as
/// [`Verdict::Legacy`], for the caller to fall back.
pub(crate) async fn request(
    inner: &Arc<Inner>,
    request: Request,
    mut shape: Shape,
    probe: bool,
) -> Result<Verdict, Error> {
    let mut ticket = Ticket::new(inner, &request.id);
    let mut tries = 0;
    loop {
        tries += 1;
        let (sent, version) = match &shape {
            Shape::AsIs(version) => (request.clone(), version.as_str()),
            Shape::Fill(version) => {
                let mut sent = request.clone();
                let params =
                    modern::fill(sent.params.as_deref(), version, &inner.config().identity)?;
                sent.params = Some(params);
                (sent, *version)
            }
        };
        let meta = MetaHeaders::new(&sent.method, sent.params.as_deref(), version)?;
        let verdict = match &shape {
            Shape::AsIs(_) => Verdict::Nothing,
            Shape::Fill(version) => Verdict::Modern(version),
        };
        let body = Bytes::from(sent.to_vec());
        let answer = tokio::select! {
            biased;
            () = ticket.cancelled() => return Ok(Verdict::Nothing),
            answer = post(inner, body, &meta) => answer,
        };
        match answer {
            Answer::Success(response) => {
                read_reply(inner, response, sent, meta, ticket)?;
                return Ok(verdict);
            }
            Answer::Refused { status, error, .. } => {
                if matches!(shape, Shape::Fill(_))
                    && status == StatusCode::BAD_REQUEST
                    && error.code == modern::UNSUPPORTED_PROTOCOL_VERSION
                {
                    match modern::choose(&error) {
                        // Each version once, and the one refused once more: a server behind a
                        // load balancer may be mid-upgrade.
                        Choice::Modern(next) if tries <= MODERN_VERSIONS.len() => {
                            tracing::debug!(next, "server refused the protocol version; retrying");
                            shape = Shape::Fill(next);
                            continue;
                        }
                        Choice::Legacy(version) if probe => return Ok(Verdict::Legacy(version)),
                        _ => {}
                    }
                }
                if probe && !modern::is_modern_error(status, error.code) {
                    tracing::debug!(%status, code = error.code, "not a 2026-07-28 refusal");
                    return Ok(Verdict::Legacy(LEGACY_VERSIONS[0]));
                }
                tracing::debug!(%status, code = error.code, "server refused the request");
                let response = mcp_jsonrpc::Response::error(Some(request.id), error);
                inner.deliver(Ok(response.into())).await;
                return Ok(verdict);
            }
            Answer::Failed(e)
                if probe && matches!(e.status().map(|s| s.as_u16()), Some(400 | 404 | 405)) =>
            {
                tracing::debug!(error = %e, "not a 2026-07-28 refusal");
                return Ok(Verdict::Legacy(LEGACY_VERSIONS[0]));
            }
            Answer::Failed(e) => return Err(e),
        }
    }
}

/// Reads the reply to the request `sent` in a task of its own, until its response, its
/// cancellation or the end of the connection.
fn read_reply(
    inner: &Arc<Inner>,
    response: Response<Incoming>,
    sent: Request,
    meta: MetaHeaders,
    mut ticket: Ticket,
) -> Result<(), Error> {
    let tracker = Tracker::new(Some(sent.id.clone()));
    let reading: BoxFuture<'static, ()> = if response.status() == StatusCode::ACCEPTED {
        // S4 forbids it, and no other stream could carry the response.
        tracing::warn!("server answered a request with 202 Accepted");
        let inner = inner.clone();
        Box::pin(async move {
            inner
                .answer_lost(
                    sent.id,
                    "the server accepted the request without answering it",
                )
                .await;
        })
    } else {
        match headers::format(response.headers()) {
            Format::Json => Box::pin(reply::read_json(
                inner.clone(),
                SessionHeaders::default(),
                response.into_body(),
                tracker,
            )),
            Format::Sse => {
                let resend = Resend {
                    request: sent,
                    meta,
                    count: 0,
                };
                let stream = SseStream::for_modern(inner.clone(), tracker, resend);
                Box::pin(stream.run(Some(response.into_body())))
            }
            Format::Other => {
                tracing::warn!(
                    content_type = ?response.headers().get(http::header::CONTENT_TYPE),
                    "server answered a request with neither JSON nor an event stream"
                );
                return Err(Error::new(Kind::ContentType));
            }
        }
    };
    tokio::spawn(async move {
        tokio::select! {
            biased;
            // Dropping the body closes its connection: the server's signal (M6).
            () = ticket.cancelled() => tracing::debug!(id = %ticket.id, "response stream closed"),
            () = reading => {}
        }
    });
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
    match post(inner, Bytes::from(notification.to_vec()), &meta).await {
        Answer::Success(response) => reply::accept(
            inner,
            response,
            SessionHeaders::default(),
            Tracker::new(None),
        ),
        Answer::Refused { failure, .. } | Answer::Failed(failure) => Err(failure),
    }
}

/// What the stream of a per-request request needs to send the request again under a new id
/// when it breaks before the response (M7).
#[derive(Debug)]
pub(crate) struct Resend {
    /// The request as first sent, under the application's id.
    request: Request,
    meta: MetaHeaders,
    /// The re-sends so far.
    count: u32,
}

impl Resend {
    /// Sends the request again under a new id; returns the id and the answer.
    pub(crate) async fn post(&mut self, inner: &Inner) -> (Id, Answer) {
        self.count += 1;
        let id = modern::resend_id(&self.request.id, self.count);
        tracing::debug!(original = %self.request.id, %id, "re-sending the request under a new id");
        let mut request = self.request.clone();
        request.id = id.clone();
        let answer = post(inner, Bytes::from(request.to_vec()), &self.meta).await;
        (id, answer)
    }
}

/// The per-request requests of a connection whose response has not come yet, by the id the
/// application gave them: what a `notifications/cancelled` can cancel.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    next: u64,
    /// Dropping the sender cancels the request.
    requests: HashMap<Id, (u64, oneshot::Sender<()>)>,
}

/// Cancels the request `id` if it is a per-request one in flight: its stream or its POST is
/// dropped, which closes the connection carrying it. Returns whether there was one.
pub(crate) fn cancel(inner: &Inner, id: &Id) -> bool {
    inner.in_flight().requests.remove(id).is_some()
}

/// A request's place among those in flight, which it leaves when dropped.
#[derive(Debug)]
struct Ticket {
    inner: Arc<Inner>,
    id: Id,
    /// `None` when another request in flight has the same id: only that one can be cancelled.
    entry: Option<(u64, oneshot::Receiver<()>)>,
}

impl Ticket {
    fn new(inner: &Arc<Inner>, id: &Id) -> Ticket {
        let mut in_flight = inner.in_flight();
        let entry = if in_flight.requests.contains_key(id) {
            None
        } else {
            in_flight.next += 1;
            let generation = in_flight.next;
            let (tx, rx) = oneshot::channel();
            in_flight.requests.insert(id.clone(), (generation, tx));
            Some((generation, rx))
        };
        Ticket {
            inner: inner.clone(),
            id: id.clone(),
            entry,
        }
    }

    /// Resolves when the request is cancelled.
    async fn cancelled(&mut self) {
        match &mut self.entry {
            Some((_, cancelled)) => {
                let _ = cancelled.await;
            }
            None => std::future::pending().await,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let Some((generation, _)) = &self.entry else {
            return;
        };
        let mut in_flight = self.inner.in_flight();
        if in_flight
            .requests
            .get(&self.id)
            .is_some_and(|(g, _)| g == generation)
        {
            in_flight.requests.remove(&self.id);
        }
    }
}
