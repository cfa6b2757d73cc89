//! POST: messages from the client (S2-S10, S19, S20).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_jsonrpc::{Body, Message};
use tracing::Instrument;

use crate::body::ResponseBody;
use crate::config::{Eras, Mode};
use crate::connection::ServerConnection;
use crate::error::{Kind, Reject};
use crate::headers::{
    self, DEFAULT_NEGOTIATED_VERSION, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, SESSION_ID_HEADER,
    SUPPORTED_VERSIONS, X_ACCEL_BUFFERING,
};
use crate::modern::{self, Era};
use crate::service::Shared;
use crate::session::{Ending, Lifetime, Session, incoming_channel};
use crate::stream::{JsonWait, OnEnd, SseBody};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) async fn handle<B>(
    shared: &Arc<Shared>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject>
where
    B: http_body::Body + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Into<BoxError>,
{
    let (parts, body) = request.into_parts();
    let accepts = headers::accepts(&parts.headers);
    if !(accepts.json && accepts.event_stream) {
        return Err(Reject::new(
            Kind::NotAcceptable,
            "Accept must admit both application/json and text/event-stream",
        ));
    }
    if !headers::is_json_content_type(&parts.headers) {
        return Err(Reject::new(
            Kind::UnsupportedMediaType,
            "Content-Type must be application/json",
        ));
    }
    // The version header says what family the POST is of (M1) before the body is read; its
    // value is checked after, against the body (M3) or as a session's (S8).
    let header_version = headers::single(&parts.headers, MCP_PROTOCOL_VERSION).unwrap_or(None);
    let bytes = read_body(&parts.headers, body, shared.config.max_body_bytes).await?;
    let body = mcp_jsonrpc::parse(&bytes).map_err(|e| Reject::from_parse(&e))?;
    // The body is a slice of a read buffer of the connection's (8 KiB or more), which hyper has
    // replaced by then; held while the request is served (a JSON reply waits for the
    // application), it would keep that buffer alive as long. The parse copied what it needs.
    drop(bytes);
    // S21: from here on, a refusal of one request answers with its id.
    let request_id = match &body {
        Body::Single(Message::Request(r)) => Some(r.id.clone()),
        _ => None,
    };
    let served = match modern::classify(shared.config.eras, header_version, &body) {
        Era::Modern => modern::serve(shared, parts, body).await,
        Era::Legacy if shared.config.eras == Eras::ModernOnly => {
            Err(legacy_refused(&body, header_version))
        }
        Era::Legacy => {
            // Refusals of the headers alone carry no id (S21), as if made before the body.
            let version = protocol_version(&parts.headers)?;
            // The session the POST names, if any: `Some(None)` when no session has that id.
            let named = session_id(&parts.headers)?.map(|id| shared.registry.get(id));
            dispatch(shared, parts, body, version, named).await
        }
    };
    served.map_err(|r| r.with_id(request_id.as_ref()))
}

async fn dispatch(
    shared: &Arc<Shared>,
    parts: http::request::Parts,
    body: Body,
    version: Option<&'static str>,
    named: Option<Option<Arc<Session>>>,
) -> Result<Response<ResponseBody>, Reject> {
    if shared.config.mode == Mode::Stateless {
        return serve_stateless(shared, parts, body, version).await;
    }
    let initialize = body.messages().iter().any(Message::is_initialize);
    match named {
        None if initialize && body.is_batch() => Err(Reject::bad_request(
            "initialize must be sent on its own, not in a batch",
        )),
        None if initialize => start_session(shared, parts, body, version).await,
        None => Err(Reject::bad_request(
            "missing Mcp-Session-Id header: only an initialize request may be sent without one",
        )),
        Some(_) if initialize => Err(Reject::bad_request(
            "initialize must be sent without an Mcp-Session-Id header: it starts a new session",
        )),
        Some(session) => {
            // Its header values are slices of that read buffer too (see `handle`).
            drop(parts);
            let session = session.ok_or_else(Reject::session_not_found)?;
            session.touch();
            serve(&session, body, version, OnEnd::Keep)
                .instrument(session.span.clone())
                .await
        }
    }
}

/// A session-based POST to a server of the per-request family only: -32022, naming the
/// version the client asked for (its `initialize`'s, or its header's).
fn legacy_refused(body: &Body, header: Option<&str>) -> Reject {
    #[derive(serde::Deserialize)]
    struct Initialize<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: std::borrow::Cow<'a, str>,
    }
    let asked = body.messages().iter().find_map(|m| match m {
        Message::Request(r) if m.is_initialize() => r
            .parse_params::<Initialize<'_>>()
            .ok()
            .map(|p| p.protocol_version.into_owned()),
        _ => None,
    });
    let requested = asked.or(header.map(str::to_owned));
    modern::unsupported_version(
        Eras::ModernOnly,
        requested.as_deref().unwrap_or(DEFAULT_NEGOTIATED_VERSION),
        "; this server serves only the per-request protocol (no initialize, no sessions)",
    )
}

/// The `MCP-Protocol-Version` header, checked (S8).
pub(crate) fn protocol_version(headers: &http::HeaderMap) -> Result<Option<&'static str>, Reject> {
    match headers::single(headers, MCP_PROTOCOL_VERSION) {
        Err(()) => Err(Reject::bad_request("malformed MCP-Protocol-Version header")),
        Ok(None) => Ok(None),
        Ok(Some(v)) => SUPPORTED_VERSIONS
            .iter()
            .copied()
            .find(|s| *s == v)
            .map(Some)
            .ok_or_else(|| {
                Reject::bad_request(format!(
                    "unsupported MCP-Protocol-Version {v:?}; supported: {}",
                    SUPPORTED_VERSIONS.join(", ")
                ))
            }),
    }
}

/// The `Mcp-Session-Id` header, checked for form (S6).
pub(crate) fn session_id(headers: &http::HeaderMap) -> Result<Option<&str>, Reject> {
    match headers::single(headers, MCP_SESSION_ID) {
        Err(()) => Err(Reject::bad_request("malformed Mcp-Session-Id header")),
        Ok(Some(id)) if !headers::is_valid_session_id(id) => Err(Reject::bad_request(
            "malformed Mcp-Session-Id header: not visible ASCII",
        )),
        Ok(id) => Ok(id),
    }
}

/// Reads the body, never buffering more than `limit` bytes (S3).
async fn read_body<B>(headers: &http::HeaderMap, body: B, limit: usize) -> Result<Bytes, Reject>
where
    B: http_body::Body + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Into<BoxError>,
{
    let too_large = || {
        Reject::new(
            Kind::PayloadTooLarge,
            format!("body larger than {limit} bytes"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let failed = |err: BoxError| {
        if err.downcast_ref::<LengthLimitError>().is_some() {
            too_large()
        } else {
            Reject::bad_request(format!("could not read the body: {err}"))
        }
    };
    // Most bodies come in one piece, kept as it is; more are joined.
    let mut body = std::pin::pin!(Limited::new(body, limit));
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.as_mut().frame().await {
        let Ok(mut data) = frame.map_err(failed)?.into_data() else {
            continue;
        };
        let chunk = data.copy_to_bytes(data.remaining());
        match &mut joined {
            Some(all) => all.extend_from_slice(&chunk),
            None if first.is_empty() => first = chunk,
            None => {
                let mut all = BytesMut::with_capacity(first.len() + chunk.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&chunk);
                joined = Some(all);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

/// S6: a new session from a valid initialize request. Nothing is registered before the request
/// has passed every check (S18).
async fn start_session(
    shared: &Arc<Shared>,
    parts: http::request::Parts,
    body: Body,
    version: Option<&'static str>,
) -> Result<Response<ResponseBody>, Reject> {
    shared.refuse_when_shutting_down("no new sessions")?;
    let id: Arc<str> = Arc::from(uuid::Uuid::new_v4().simple().to_string());
    let (tx, rx) = incoming_channel(shared.config.incoming_capacity);
    let session = Session::new(id, Arc::clone(shared), tx, Lifetime::Session);
    match shared
        .registry
        .insert(Arc::clone(&session), shared.config.max_sessions)
    {
        Ok(Some(evicted)) => {
            tracing::debug!(parent: &evicted.span, "evicted: the session cap was reached and it was the least recently used");
            evicted.close(Ending::Abort).await;
        }
        Ok(None) => {}
        Err(()) => {
            return Err(Reject::new(
                Kind::Unavailable,
                "too many sessions, none of them idle; try again later",
            ));
        }
    }
    shared.registry.start_reaper(shared);
    tracing::debug!(parent: &session.span, "session started");
    shared.start(
        ServerConnection::new(rx, Arc::clone(&session)),
        parts,
        session.span.clone(),
    );
    let mut response = serve(&session, body, version, OnEnd::Keep)
        .instrument(session.span.clone())
        .await?;
    let value = session
        .id_header
        .clone()
        .expect("session ids are visible ASCII");
    response.headers_mut().insert(SESSION_ID_HEADER, value);
    Ok(response)
}

/// S20: a session for this POST alone.
async fn serve_stateless(
    shared: &Arc<Shared>,
    parts: http::request::Parts,
    body: Body,
    version: Option<&'static str>,
) -> Result<Response<ResponseBody>, Reject> {
    let session = start_transient(shared, parts, Lifetime::Post)?;
    // Whatever ends this POST ends the session (and if this future is dropped, so is the
    // guard), except an SSE answer, whose body ends it when it ends. The application still
    // reads what was delivered, then sees the end.
    let mut guard = CloseOnDrop(Some(Arc::clone(&session)));
    let response = serve(&session, body, version, OnEnd::CloseSession).await;
    if response
        .as_ref()
        .is_ok_and(|r| r.headers().get(CONTENT_TYPE) == Some(&TEXT_EVENT_STREAM))
    {
        guard.0 = None;
    }
    response
}

/// Starts the application for a session that lives for one POST (stateless mode) or one
/// request (2026-07-28); it is kept apart from the sessions clients name, for shutdown to see.
pub(crate) fn start_transient(
    shared: &Arc<Shared>,
    parts: http::request::Parts,
    lifetime: Lifetime,
) -> Result<Arc<Session>, Reject> {
    shared.refuse_when_shutting_down("no new requests")?;
    let (tx, rx) = incoming_channel(shared.config.incoming_capacity);
    let session = Session::new(Arc::from(""), Arc::clone(shared), tx, lifetime);
    shared.registry.insert_transient(&session);
    shared.start(
        ServerConnection::new(rx, Arc::clone(&session)),
        parts,
        session.span.clone(),
    );
    Ok(session)
}

/// Ends a stateless session when dropped, unless disarmed.
struct CloseOnDrop(Option<Arc<Session>>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            session.close_detached(Ending::Abort);
        }
    }
}

const TEXT_EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// Delivers the messages to the application and answers: 202, JSON, or an SSE stream (S4, S5).
async fn serve(
    session: &Arc<Session>,
    body: Body,
    version: Option<&'static str>,
    on_end: OnEnd,
) -> Result<Response<ResponseBody>, Reject> {
    let begun = session.begin(&body, version)?;
    // The body is the guard of the stream: if this future is dropped (the client went away)
    // the stream lets go of its reader (S13).
    let sse = begun.stream.map(|(stream, generation)| {
        SseBody::new(Arc::clone(session), stream, Some(generation), on_end)
    });
    let is_batch = body.is_batch();
    for message in body {
        begun
            .incoming
            .send(Box::new(message))
            .await
            .map_err(|_| Reject::session_not_found())?;
    }
    drop(begun.incoming);
    let Some(mut sse) = sse else {
        return Ok(empty(StatusCode::ACCEPTED));
    };
    if session.shared.config.json_response {
        match sse.wait_json().await {
            Err(JsonWait::Closed) => return Err(Reject::session_not_found()),
            Err(JsonWait::Moved) => {
                return Err(Reject::new(
                    Kind::Unavailable,
                    "the answer to this request left this connection: it was taken over by a GET \
                     with Last-Event-ID, or held more than the session's buffer allows",
                ));
            }
            Ok(Some(responses)) => return Ok(json(responses, is_batch)),
            // S5: something else came first: the answer goes on as SSE.
            Ok(None) => {}
        }
    }
    if begun.prime {
        sse.prime(session.shared.config.retry);
    }
    // The head waits, briefly, for the first message: an answer ready by then leaves with the
    // head in one write, not two (one send, and one wake-up of the client, fewer).
    let _ = tokio::time::timeout(HOLD_HEAD, sse.wait_first()).await;
    Ok(sse_response(sse))
}

/// How long the head of an SSE reply waits for the stream's first message. Short: until the
/// head leaves, the client has no event id to resume from, and no sign the request arrived.
const HOLD_HEAD: Duration = Duration::from_millis(2);

pub(crate) fn empty(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::empty());
    *response.status_mut() = status;
    response
}

fn json(responses: Vec<Bytes>, is_batch: bool) -> Response<ResponseBody> {
    let bytes = if is_batch {
        let mut out =
            BytesMut::with_capacity(responses.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
        out.extend_from_slice(b"[");
        for (i, r) in responses.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",");
            }
            out.extend_from_slice(r);
        }
        out.extend_from_slice(b"]");
        out.freeze()
    } else {
        responses.into_iter().next().unwrap_or_default()
    };
    let mut response = Response::new(ResponseBody::full(bytes));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An SSE response with the headers proxies need to pass it on unbuffered (S15).
pub(crate) fn sse_response(body: SseBody) -> Response<ResponseBody> {
    let session_id = body.session().id_header.clone();
    let mut response = Response::new(ResponseBody::sse(body));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, TEXT_EVENT_STREAM);
    headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    if let Some(value) = session_id {
        headers.insert(SESSION_ID_HEADER, value);
    }
    response
}
