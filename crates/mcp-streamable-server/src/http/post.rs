//! POST: messages from the client (S2-S10, S19, S20), and which family they belong to (M1).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::header::CONTENT_TYPE;
use http::{Request, Response, StatusCode};
use mcp_jsonrpc::{Body, Message, code};
use tracing::Instrument;

use crate::core::budget::Charge;
use crate::core::config::{Eras, Mode};
use crate::core::reader::{JsonWait, OnEnd};
use crate::core::session::{Ending, Lifetime};
use crate::core::state::Posted;
use crate::core::{Error, Session};
use crate::http::app::Server;
use crate::http::body::SseBody;
use crate::http::checks::{self, owner};
use crate::http::error::{Kind, Reject};
use crate::http::read::read_body;
use crate::http::remote::{self, Hop, Target};
use crate::http::response_body::ResponseBody;
use crate::http::{modern, reply};
use crate::protocol::params::{self, Era};
use crate::protocol::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID, ProtocolVersion, accept, initialize};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) async fn handle<B>(
    server: &Arc<Server>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject>
where
    B: http_body::Body + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Into<BoxError>,
{
    let ctx = &server.ctx;
    let (parts, body) = request.into_parts();
    let accepts = accept::accepts(&parts.headers);
    if !(accepts.json && accepts.event_stream) {
        return Err(Reject::new(
            Kind::NotAcceptable,
            "Accept must admit both application/json and text/event-stream",
        ));
    }
    if !accept::is_json_content_type(&parts.headers) {
        return Err(Reject::new(
            Kind::UnsupportedMediaType,
            "Content-Type must be application/json",
        ));
    }
    // The version header says what family the POST is of (M1) before the body is read; its
    // value is checked after, against the body (M3) or as a session's (S8).
    let header_version = accept::single(&parts.headers, &MCP_PROTOCOL_VERSION).unwrap_or(None);
    let bytes = read_body(&parts.headers, body, ctx.config.max_body_bytes).await?;
    let body = mcp_jsonrpc::parse(&bytes).map_err(|e| Reject::from_parse(&e))?;
    // S22: the body counts against the incoming budget until its application has read it.
    let charge = ctx
        .inbound
        .charge(bytes.len())
        .ok_or_else(|| Error::InboundFull(ctx.inbound.total()))?;
    // The body is a slice of a read buffer of the connection's (8 KiB or more), which hyper has
    // replaced by then; held while the request is served (a JSON reply waits for the
    // application), it would keep that buffer alive as long. The parse copied what it needs.
    drop(bytes);
    check_batch_size(&body, ctx.config.max_batch_messages)?;
    // S21: from here on, a refusal of one request answers with its id.
    let request_id = match &body {
        Body::Single(Message::Request(r)) => Some(r.id.clone()),
        _ => None,
    };
    let eras = ctx.config.eras;
    let served = match params::classify(eras != Eras::LegacyOnly, header_version, &body) {
        Era::PerRequest(params) => {
            match params::validate(eras != Eras::ModernOnly, &parts.headers, &body, params) {
                Ok(version) => modern::serve(server, parts, body, version, charge).await,
                Err(err) => Err(err.into()),
            }
        }
        Era::Session if eras == Eras::ModernOnly => Err(refused_sessions(&body, header_version)),
        Era::Session => {
            // Refusals of the headers alone carry no id (S21), as if made before the body:
            // they return at once.
            let version = checks::protocol_version(&parts.headers)?;
            checks::session_id(&parts.headers)?;
            dispatch(server, parts, body, version, charge).await
        }
    };
    served.map_err(|r| r.with_id(request_id.as_ref()))
}

/// S9: a batch carries at most `max` messages; a larger one is refused before anything of it
/// is looked at further.
fn check_batch_size(body: &Body, max: usize) -> Result<(), Reject> {
    let len = body.messages().len();
    if body.is_batch() && len > max {
        return Err(Reject::invalid(
            code::INVALID_REQUEST,
            format!("a batch of {len} messages; this server takes at most {max} in one"),
        ));
    }
    Ok(())
}

async fn dispatch(
    server: &Arc<Server>,
    parts: http::request::Parts,
    body: Body,
    version: Option<ProtocolVersion>,
    charge: Charge,
) -> Result<Response<ResponseBody>, Reject> {
    let ctx = &server.ctx;
    if ctx.config.mode == Mode::Stateless {
        return serve_stateless(server, parts, body, version, charge).await;
    }
    // The session the POST names, if any.
    let named = checks::session_id(&parts.headers)?.map(str::to_owned);
    let initialize = body.messages().iter().any(Message::is_initialize);
    match named {
        None if initialize && body.is_batch() => Err(Reject::bad_request(
            "initialize must be sent on its own, not in a batch",
        )),
        None if initialize => start_session(server, parts, body, version, charge).await,
        None => Err(Reject::bad_request(
            "missing Mcp-Session-Id header: only an initialize request may be sent without one",
        )),
        Some(_) if initialize => Err(Reject::bad_request(
            "initialize must be sent without an Mcp-Session-Id header: it starts a new session",
        )),
        Some(id) => serve_named(server, &id, Arc::new(parts), body, version, charge).await,
    }
}

/// A POST to session `id`: served here if this node holds it (or takes it over, its holder
/// having died), else forwarded to its holder.
async fn serve_named(
    server: &Arc<Server>,
    id: &str,
    request: Arc<http::request::Parts>,
    body: Body,
    version: Option<ProtocolVersion>,
    charge: Charge,
) -> Result<Response<ResponseBody>, Reject> {
    let header = accept::single(&request.headers, &MCP_PROTOCOL_VERSION)
        .unwrap_or(None)
        .map(str::to_owned);
    let mut relocated = 0;
    loop {
        let node = match remote::locate(server, id, &request).await? {
            Target::Local(session) => {
                let posted = Posted::new(request, body, charge);
                return serve(&session, posted, version, None, OnEnd::Keep)
                    .instrument(session.span.clone())
                    .await;
            }
            Target::Remote(node) => node,
        };
        let hop = remote::post(
            server,
            &node,
            id,
            Arc::clone(&request),
            &body,
            header.as_deref(),
        );
        match hop.await? {
            Hop::Answered(response) => return Ok(response),
            Hop::Unreachable(why) => remote::relocate(&mut relocated, &node, &why).await?,
        }
    }
}

/// A session-based POST to a server of the per-request family only: -32022, naming the
/// version the client asked for (its `initialize`'s, or its header's).
fn refused_sessions(body: &Body, header: Option<&str>) -> Reject {
    let asked = body.messages().iter().find_map(|m| match m {
        Message::Request(r) if m.is_initialize() => initialize::asked_version(r),
        _ => None,
    });
    let requested = asked.or(header.map(str::to_owned));
    params::unsupported_version(
        false,
        requested
            .as_deref()
            .unwrap_or(ProtocolVersion::DEFAULT_NEGOTIATED.as_str()),
        "; this server serves only the per-request protocol (no initialize, no sessions)",
    )
    .into()
}

/// S6: a new session from a valid initialize request. Nothing is registered before the request
/// has passed every check (S18).
async fn start_session(
    server: &Server,
    parts: http::request::Parts,
    body: Body,
    version: Option<ProtocolVersion>,
    charge: Charge,
) -> Result<Response<ResponseBody>, Reject> {
    let Body::Single(Message::Request(init)) = &body else {
        return Err(Reject::bad_request("initialize must be a request"));
    };
    let requested = initialize::validate(init)
        .map_err(|why| Reject::invalid(code::INVALID_PARAMS, why.reason()))?;
    let record = match server.ctx.config.session_store {
        Some(_) => Bytes::from(Message::Request(init.clone()).to_vec()),
        None => Bytes::new(),
    };
    let owner = owner(&parts);
    let client = checks::client(&parts, owner.as_ref());
    let (session, connection) = server
        .ctx
        .start_session(owner.as_ref(), client, record)
        .await?;
    let request = server.start(connection, parts, session.span.clone());
    let posted = Posted::new(request, body, charge);
    let mut response = serve(&session, posted, version, requested, OnEnd::Keep)
        .instrument(session.span.clone())
        .await?;
    if let Some(value) = session.id_header.clone() {
        response.headers_mut().insert(MCP_SESSION_ID, value);
    }
    Ok(response)
}

/// S20: a session for this POST alone.
async fn serve_stateless(
    server: &Server,
    parts: http::request::Parts,
    body: Body,
    version: Option<ProtocolVersion>,
    charge: Charge,
) -> Result<Response<ResponseBody>, Reject> {
    let (session, connection) = server.ctx.start_transient(Lifetime::Post)?;
    let request = server.start(connection, parts, session.span.clone());
    // Whatever ends this POST ends the session (and if this future is dropped, so is the
    // guard), except an SSE answer, whose body ends it when it ends. The application still
    // reads what was delivered, then sees the end.
    let mut guard = CloseOnDrop(Some(Arc::clone(&session)));
    let posted = Posted::new(request, body, charge);
    let response = serve(&session, posted, version, None, OnEnd::CloseSession).await;
    if response
        .as_ref()
        .is_ok_and(|r| r.headers().get(CONTENT_TYPE) == Some(&reply::TEXT_EVENT_STREAM))
    {
        guard.0 = None;
    }
    response
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

/// Delivers the messages to the application and answers: 202, JSON, or an SSE stream (S4, S5).
async fn serve(
    session: &Arc<Session>,
    posted: Posted,
    version: Option<ProtocolVersion>,
    requested: Option<ProtocolVersion>,
    on_end: OnEnd,
) -> Result<Response<ResponseBody>, Reject> {
    let begun = session.begin(&posted.body, version, requested, on_end)?;
    let prime = begun.prime;
    let is_batch = posted.body.is_batch();
    // Until the reply exists, the reader is the guard of the stream: if this future is dropped
    // (the client went away) it lets go of the stream (S13).
    let Some(reader) = begun.deliver(posted).await? else {
        return Ok(reply::empty(StatusCode::ACCEPTED));
    };
    let mut sse = SseBody::new(reader);
    if session.ctx.config.json_response {
        match sse.reader_mut().wait_json().await {
            Err(JsonWait::Closed) => return Err(Error::SessionNotFound.into()),
            Err(JsonWait::Moved) => {
                return Err(Reject::new(
                    Kind::Unavailable,
                    "the answer to this request left this connection: it was taken over by a GET \
                     with Last-Event-ID, or held more than the session's buffer allows",
                ));
            }
            Ok(Some(responses)) => return Ok(reply::json(responses, is_batch)),
            // S5: something else came first: the answer goes on as SSE.
            Ok(None) => {}
        }
    }
    if prime {
        sse.prime(session.ctx.config.retry);
    }
    // The head waits, briefly, for the first message: an answer ready by then leaves with the
    // head in one write, not two (one send, and one wake-up of the client, fewer).
    let _ = tokio::time::timeout(HOLD_HEAD, sse.wait_first()).await;
    Ok(reply::sse(sse))
}

/// How long the head of an SSE reply waits for the stream's first message. Short: until the
/// head leaves, the client has no event id to resume from, and no sign the request arrived.
const HOLD_HEAD: Duration = Duration::from_millis(2);
