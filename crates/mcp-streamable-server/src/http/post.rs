//! POST: messages from the client (S2-S10, S19, S20), which family they belong to (M1), and,
//! with a cluster, where their session is held (N2, N9).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::header::CONTENT_TYPE;
use http::{Method, Request, Response};
use mcp_jsonrpc::{Body, Message, code};
use tracing::Instrument;

use crate::cluster::Nodes;
use crate::cluster::sign::Forward;
use crate::core::config::{Families, Mode};
use crate::core::owner::SessionOwner;
use crate::core::session::state::Posted;
use crate::core::session::{Ending, Lifetime};
use crate::core::{Error, Session, Shared};
use crate::http::app::Server;
use crate::http::checks::{self, owner};
use crate::http::error::{Kind, Reject};
use crate::http::local::{After, Tried, held, open, refused, respond};
use crate::http::read::read_body;
use crate::http::remote::{self, Ask, Reached};
use crate::http::reply::{self, ResponseBody};
use crate::http::request_log::Called;
use crate::http::{modern, relay};
use crate::protocol::params::{self, Family};
use crate::protocol::transport::TransportHeaders;
use crate::protocol::{MCP_SESSION_ID, ProtocolVersion, accept, initialize};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How many times a POST goes where its session is before it is refused: its holder's copy may
/// end under it (another node took the session over) or this node's lease may not hold for a
/// moment; each time it looks again.
const TRIES: usize = 4;

/// How long a POST waits for this node's lease to hold again before it looks elsewhere.
const LEASE_WAIT: Duration = Duration::from_millis(500);

pub(crate) async fn handle<B>(
    server: &Arc<Server>,
    request: Request<B>,
    transport: &TransportHeaders,
) -> Result<Response<ResponseBody>, Reject>
where
    B: http_body::Body + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Into<BoxError>,
{
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
    let bytes = read_body(&parts.headers, body, server.shared.config.max_body_bytes).await?;
    accept_body(server, parts, transport, bytes, None).await
}

/// A POST whose body is read: a client's, or one another node forwarded (`forward`, checked).
pub(crate) async fn accept_body(
    server: &Arc<Server>,
    parts: http::request::Parts,
    transport: &TransportHeaders,
    bytes: Bytes,
    forward: Option<Forward>,
) -> Result<Response<ResponseBody>, Reject> {
    let shared = &server.shared;
    let body = mcp_jsonrpc::parse(&bytes).map_err(|e| Reject::from_parse(&e))?;
    // S22: the body counts against the incoming budget until its application has read it.
    let charge = shared
        .inbound
        .charge(bytes.len())
        .ok_or_else(|| Error::InboundFull(shared.inbound.total()))?;
    // The body is a slice of a read buffer of the connection's (8 KiB or more), which hyper has
    // replaced by then; held while the request is served (a JSON reply waits for the
    // application), it would keep that buffer alive as long. The parse copied what it needs.
    drop(bytes);
    check_batch_size(&body, shared.config.max_batch_messages)?;
    // S21: from here on, a refusal of one request answers with its id.
    let request_id = match &body {
        Body::Single(Message::Request(r)) => Some(r.id.clone()),
        _ => None,
    };
    if forward.is_none() {
        check_rate(shared, &parts, &body)
            .await
            .map_err(|r| r.with_id(request_id.as_ref()))?;
    }
    let called = Called::of(&body);
    let families = shared.config.families;
    // The version header says what family the POST is of (M1); its value is checked after,
    // against the body (M3) or as a session's (S8).
    let header_version = transport.version();
    let served = match params::classify(families != Families::SessionOnly, header_version, &body) {
        // N7: served by the node it reaches; never forwarded.
        Family::PerRequest(_) if forward.is_some() => {
            Err(Reject::bad_request("a per-request POST is not forwarded"))
        }
        Family::PerRequest(params) => {
            match params::validate(
                families != Families::PerRequestOnly,
                &parts.headers,
                transport,
                shared.config.tool_headers.as_ref(),
                &body,
                params,
            ) {
                Ok(version) => modern::serve(server, parts, body, version, charge).await,
                Err(err) => Err(err.into()),
            }
        }
        Family::Session if families == Families::PerRequestOnly => {
            Err(refused_sessions(&body, header_version))
        }
        Family::Session => {
            // Refusals of the headers alone carry no id (S21), as if made before the body:
            // they return at once.
            let version = checks::protocol_version(transport)?;
            let named = checks::session_id(transport)?;
            let posted = Posted::new(Arc::new(parts), body, charge);
            dispatch(server, named, posted, version, forward).await
        }
    };
    let mut served = served.map_err(|r| r.with_id(request_id.as_ref()));
    if let Ok(response) = &mut served {
        Called::attach(called, response);
    }
    served
}

/// S26: a client over its rate limit is refused before anything of its POST is delivered.
/// Charged where the client's POST arrives: a forwarded one was charged there.
async fn check_rate(
    shared: &Shared,
    parts: &http::request::Parts,
    body: &Body,
) -> Result<(), Reject> {
    let Some(limit) = &shared.config.rate_limit else {
        return Ok(());
    };
    let client = checks::client(parts, owner(parts).as_ref());
    let client = client.as_deref().unwrap_or("unidentified");
    match limit.charge(client, body.messages()).await {
        Some(wait) => Err(Reject::too_many_requests(wait)),
        None => Ok(()),
    }
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

/// A session-based POST, its headers checked: `named` is the session it names, if any.
async fn dispatch(
    server: &Arc<Server>,
    named: Option<&str>,
    posted: Posted,
    version: Option<ProtocolVersion>,
    forward: Option<Forward>,
) -> Result<Response<ResponseBody>, Reject> {
    let shared = &server.shared;
    if shared.config.mode == Mode::Stateless {
        return serve_stateless(server, posted, version).await;
    }
    let initialize = posted.body.messages().iter().any(Message::is_initialize);
    match (named, forward) {
        (None, _) if initialize && posted.body.is_batch() => Err(Reject::bad_request(
            "initialize must be sent on its own, not in a batch",
        )),
        (None, None) if initialize => start_session(server, posted, version).await,
        (None, _) => Err(Reject::bad_request(
            "missing Mcp-Session-Id header: only an initialize request may be sent without one",
        )),
        (Some(_), _) if initialize => Err(Reject::bad_request(
            "initialize must be sent without an Mcp-Session-Id header: it starts a new session",
        )),
        (Some(id), Some(forward)) => {
            Ok(serve_forwarded(server, id, posted, version, &forward).await)
        }
        (Some(id), None) => serve_named(server, id, posted, version).await,
    }
}

/// A POST to session `id`: served here if this node holds it (or takes it over, its holder
/// having died), else sent to its holder and its answer relayed (N9).
async fn serve_named(
    server: &Arc<Server>,
    id: &str,
    posted: Posted,
    version: Option<ProtocolVersion>,
) -> Result<Response<ResponseBody>, Reject> {
    let owner = owner(&posted.request);
    let Some(nodes) = &server.nodes else {
        let session = server.shared.find_session(id, owner.as_ref()).await?;
        return serve(&session, &mut Some(posted), version, None, None)
            .await
            .map_err(Tried::into_reject);
    };
    // Boxed: a reach and a relay are several KiB of future, and every future that awaits this
    // one (up to the connection's) would be as much larger, and copied so, on every request,
    // clustered or not.
    Box::pin(serve_clustered(server, nodes, id, posted, version, owner)).await
}

/// [`serve_named`] on several nodes.
async fn serve_clustered(
    server: &Arc<Server>,
    nodes: &Nodes,
    id: &str,
    posted: Posted,
    version: Option<ProtocolVersion>,
    owner: Option<SessionOwner>,
) -> Result<Response<ResponseBody>, Reject> {
    let request = Arc::clone(&posted.request);
    let mut ask = Ask::new(id, Method::POST, request, owner);
    let mut posted = Some(posted);
    for _ in 0..TRIES {
        let body = posted.as_ref().map(|p| &p.body);
        match remote::reach(server, nodes, &mut ask, body).await? {
            Reached::Here(session) => {
                let forward = ask.sent.then_some(ask.id.as_str());
                match serve(&session, &mut posted, version, None, forward).await {
                    Err(Tried::Elsewhere) => {}
                    Err(Tried::Fenced) => nodes.cluster.lease().changed_within(LEASE_WAIT).await,
                    Err(Tried::Refused(reject)) => return Err(reject),
                    Ok(response) => return Ok(response),
                }
            }
            Reached::There(answer) => {
                let body = posted.take().map(|p| p.body);
                return Ok(relay::post(server, ask, answer, body.as_ref()).await);
            }
        }
    }
    Err(Error::Fenced.into())
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
    posted: Posted,
    version: Option<ProtocolVersion>,
) -> Result<Response<ResponseBody>, Reject> {
    let Body::Single(Message::Request(init)) = &posted.body else {
        return Err(Reject::bad_request("initialize must be a request"));
    };
    let requested = initialize::validate(init)
        .map_err(|why| Reject::invalid(code::INVALID_PARAMS, why.reason()))?;
    let record = match server.shared.config.session_store {
        Some(_) => Bytes::from(Message::Request(init.clone()).to_vec()),
        None => Bytes::new(),
    };
    let owner = owner(&posted.request);
    let client = checks::client(&posted.request, owner.as_ref());
    let (session, connection) = server
        .shared
        .start_session(owner.as_ref(), client, record)
        .await?;
    let Posted {
        request,
        body,
        charge,
    } = posted;
    let request = server.start(
        connection,
        Arc::unwrap_or_clone(request),
        session.span.clone(),
    );
    let posted = Posted::new(request, body, charge);
    let mut response = serve(&session, &mut Some(posted), version, requested, None)
        .await
        .map_err(Tried::into_reject)?;
    if let Some(value) = session.id_header.clone() {
        response.headers_mut().insert(MCP_SESSION_ID, value);
    }
    Ok(response)
}

/// S20: a session for this POST alone.
async fn serve_stateless(
    server: &Server,
    posted: Posted,
    version: Option<ProtocolVersion>,
) -> Result<Response<ResponseBody>, Reject> {
    let (session, connection) = server.shared.start_transient(Lifetime::Post)?;
    let Posted {
        request,
        body,
        charge,
    } = posted;
    let parts = Arc::unwrap_or_clone(request);
    let request = server.start_transient(connection, parts, session.span.clone());
    // Whatever ends this POST ends the session (and if this future is dropped, so is the
    // guard), except an SSE answer, whose body ends it when it ends. The application still
    // reads what was delivered, then sees the end.
    let mut guard = CloseOnDrop(Some(Arc::clone(&session)));
    let posted = Posted::new(request, body, charge);
    let mut posted = Some(posted);
    let response = serve(&session, &mut posted, version, None, None)
        .await
        .map_err(Tried::into_reject);
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

/// Delivers the messages to a session held here and answers: 202, JSON, or an SSE stream (S4,
/// S5). A POST that went looking for its session's holder (N9) and was sent to one before it
/// found the session here (taken over, or back) goes under its forward's id, so that what that
/// holder began is not run again here but given from its stream.
async fn serve(
    session: &Arc<Session>,
    posted: &mut Option<Posted>,
    version: Option<ProtocolVersion>,
    requested: Option<ProtocolVersion>,
    forward: Option<&str>,
) -> Result<Response<ResponseBody>, Tried> {
    let opened = open(session, posted, version, requested, forward, 0)
        .instrument(session.span.clone())
        .await?;
    Ok(respond(session, opened, false).await?)
}

/// A forwarded POST of session `id`: its messages delivered here, unless its forward began a
/// stream before (then that stream, after what the asking node has), answered as SSE.
pub(crate) async fn serve_forwarded(
    server: &Server,
    id: &str,
    posted: Posted,
    version: Option<ProtocolVersion>,
    forward: &Forward,
) -> Response<ResponseBody> {
    let after = posted.request.extensions.get::<After>().map_or(0, |a| a.0);
    let mut posted = Some(posted);
    for waited in [false, true] {
        let session = match held(server, id, forward).await {
            Ok(Some(session)) => session,
            Ok(None) => return refused("not-here"),
            Err(reject) => return reject.into_response("POST"),
        };
        let opened = open(
            &session,
            &mut posted,
            version,
            None,
            Some(&forward.id),
            after,
        );
        let tried = match opened.await {
            Ok(opened) => match respond(&session, opened, true).await {
                Ok(response) => return response,
                Err(reject) => Tried::Refused(reject),
            },
            Err(err) => Tried::from(err),
        };
        match tried {
            Tried::Fenced if !waited => {
                if let Some(lease) = session.lease() {
                    lease.changed_within(LEASE_WAIT).await;
                }
            }
            Tried::Refused(reject) => return reject.into_response("POST"),
            Tried::Elsewhere | Tried::Fenced => return refused("not-here"),
        }
    }
    refused("not-here")
}
