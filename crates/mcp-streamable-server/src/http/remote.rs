//! The asking node's side of a session held elsewhere (N9): the request forwarded to the holder
//! over HTTP/2, signed; a holder out of reach waited for until its lease lapses, then the
//! session taken over; the same forward asked again until it is answered, which the holder
//! never delivers twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONNECTION, CONTENT_LENGTH, COOKIE, HOST, PROXY_AUTHORIZATION};
use http::{HeaderMap, HeaderName, Method, Request, Response, StatusCode, Uri};
use http_body_util::Full;
use hyper::body::Incoming;

use crate::cluster::peers::Failed;
use crate::cluster::route::{Route, Target};
use crate::cluster::sign::{Forward, MCP_FORWARD, MCP_FORWARD_AFTER, forward_id};
use crate::cluster::{FORWARD_DEADLINE, Nodes};
use crate::core::Session;
use crate::core::cluster::Restarted;
use crate::core::owner::SessionOwner;
use crate::core::takeover::Restored;
use crate::http::app::Server;
use crate::http::error::{Kind, Reject};
use crate::http::reply::ResponseBody;
use crate::protocol::{EventId, LAST_EVENT_ID};

/// The header with which a holder says why it did not take a forward: `not-here` (it does not
/// hold the session, or not under the fence the forward names) or `expired` (it came past its
/// deadline). Either way nothing of it was delivered.
pub(crate) const MCP_FORWARD_REFUSED: HeaderName = HeaderName::from_static("mcp-forward-refused");

/// The status of such a refusal: 421 Misdirected Request, which no answer of the MCP endpoint
/// itself uses.
pub(crate) const REFUSED: StatusCode = StatusCode::MISDIRECTED_REQUEST;

/// How many times a request is sent to a holder before it is refused (503): each time after the
/// holder was looked up again, and, when it was out of reach, after its lease lapsed.
const SENDS: usize = 8;

/// The least wait before asking again after a holder was out of reach and its lease is not
/// known to run on; it doubles each time.
const FIRST_PAUSE: Duration = Duration::from_millis(25);

/// What a request of a session held elsewhere asks the holder, however often it is sent.
#[derive(Clone)]
pub(crate) struct Ask {
    pub(crate) session: String,
    pub(crate) method: Method,
    /// The client's request: its headers go to the holder (but credentials), and a takeover
    /// here starts the application with its parts.
    pub(crate) parts: Arc<http::request::Parts>,
    pub(crate) body: Bytes,
    pub(crate) owner: Option<SessionOwner>,
    /// The forward's id, the same every time it is sent (N9).
    pub(crate) id: String,
    /// A resumption (S11): the event after which the stream is wanted.
    pub(crate) last_event_id: Option<EventId>,
    /// A forwarded POST sent again: the last event of its stream the asking node has.
    pub(crate) after: Option<EventId>,
    /// Whether it was sent to a holder at least once: its answer may not have come although
    /// the holder began it, so if it is served here after all (the session taken over), it is
    /// served under its id, which the store begins once (N9).
    pub(crate) sent: bool,
}

impl Ask {
    pub(crate) fn new(
        session: &str,
        method: Method,
        parts: Arc<http::request::Parts>,
        owner: Option<SessionOwner>,
    ) -> Ask {
        Ask {
            session: session.to_owned(),
            method,
            parts,
            body: Bytes::new(),
            owner,
            id: forward_id(),
            last_event_id: None,
            after: None,
            sent: false,
        }
    }
}

/// Where a request reached its session.
pub(crate) enum Reached {
    /// Here: held here, or taken over for it.
    Here(Arc<Session>),
    /// Elsewhere: the holder's answer, as it comes.
    There(Response<Incoming>),
}

/// Sends `ask` to wherever its session is served until it is answered: here (the session is
/// held here, or was taken over), or by its holder elsewhere. A POST's body is encoded from
/// `body` the first time it is to be sent.
pub(crate) async fn reach(
    server: &Arc<Server>,
    nodes: &Nodes,
    ask: &mut Ask,
    body: Option<&mcp_jsonrpc::Body>,
) -> Result<Reached, Reject> {
    let mut pause = FIRST_PAUSE;
    let mut why = String::new();
    for _ in 0..SENDS {
        let target = match nodes
            .route(&server.shared, &ask.session, ask.owner.as_ref())
            .await?
        {
            Route::Local(session) => return Ok(Reached::Here(session)),
            Route::Restored(restored) => {
                return Ok(Reached::Here(finish(server, restored, &ask.parts).await?));
            }
            Route::Remote(target) => target,
        };
        if ask.body.is_empty()
            && let Some(body) = body
        {
            ask.body = Bytes::from(body.to_vec());
        }
        ask.sent = true;
        let sent = send(nodes, &target, ask).await;
        #[cfg(feature = "otel")]
        server.shared.telemetry.forwarded(
            &ask.method,
            match &sent {
                Ok(answer) if answer.status() != REFUSED => "answered",
                Ok(_) => "not_here",
                Err(_) => "unreachable",
            },
        );
        match sent {
            Ok(answer) if answer.status() != REFUSED => return Ok(Reached::There(answer)),
            Ok(_) => {
                // Not held there (any more), or too late: nothing was delivered.
                nodes.directory.forget(&ask.session);
                why = format!("node {} did not take the request", target.holder.node);
            }
            Err(failed) => {
                nodes.directory.forget(&ask.session);
                nodes.peers.forget(target.address);
                tracing::debug!(node = %target.holder.node, error = %failed, "holder out of reach");
                why = format!("node {} is out of reach: {failed}", target.holder.node);
                // Not taken for dead before its lease is sure to have lapsed: a deadline, not
                // a poll.
                let wait = target.until.saturating_duration_since(Instant::now());
                tokio::time::sleep(wait.max(pause)).await;
                pause = (pause * 2).min(crate::cluster::FORWARD_DEADLINE);
            }
        }
    }
    Err(Reject::new(
        Kind::Unavailable,
        format!("the node holding this session could not be reached: {why}"),
    ))
}

/// Starts the application of a session taken over here, with the parts of the request that
/// made it so.
pub(crate) async fn finish(
    server: &Server,
    restored: Restored,
    request: &http::request::Parts,
) -> Result<Arc<Session>, Reject> {
    Ok(restored
        .finish(|connection, generation, span| {
            let mut parts = request.clone();
            parts.extensions.insert(Restarted { generation });
            server.start(connection, parts, span)
        })
        .await?)
}

/// Headers never sent to another node: credentials stay on the node that checked them, and
/// the connection's own are the connection's.
const WITHHELD: [HeaderName; 8] = [
    AUTHORIZATION,
    COOKIE,
    PROXY_AUTHORIZATION,
    CONNECTION,
    HOST,
    CONTENT_LENGTH,
    MCP_FORWARD,
    MCP_FORWARD_AFTER,
];

/// Sends `ask` to `target`, signed, and waits for the head of its answer.
async fn send(nodes: &Nodes, target: &Target, ask: &Ask) -> Result<Response<Incoming>, Failed> {
    let mut headers = HeaderMap::with_capacity(ask.parts.headers.len() + 2);
    for (name, value) in &ask.parts.headers {
        if !WITHHELD.contains(name) && *name != LAST_EVENT_ID {
            headers.append(name, value.clone());
        }
    }
    for (name, id) in [
        (LAST_EVENT_ID, ask.last_event_id),
        (MCP_FORWARD_AFTER, ask.after),
    ] {
        if let Some(id) = id
            && let Ok(value) = http::HeaderValue::from_str(&id.to_string())
        {
            headers.insert(name, value);
        }
    }
    let forward = Forward {
        node: target.holder.node.clone(),
        fence: target.holder.fence,
        deadline_ms: 0,
        id: ask.id.clone(),
        owner: ask.owner.as_ref().map(|o| o.as_str().to_owned()),
    }
    .due_within(FORWARD_DEADLINE);
    forward.sign(nodes.cluster.secret(), &ask.method, &mut headers, &ask.body);
    let mut request = Request::builder()
        .method(ask.method.clone())
        .uri(path_of(&ask.parts.uri))
        .body(Full::new(ask.body.clone()))
        .map_err(|e| Failed(format!("not sent: {e}")))?;
    *request.headers_mut() = headers;
    nodes
        .peers
        .send(target.address, request, FORWARD_DEADLINE)
        .await
}

/// The path of the client's request, without its query, as a URI of its own: the peers set
/// their scheme and authority (`Peers::send`). Shared with the client's URI when it has no query.
fn path_of(uri: &Uri) -> Uri {
    match uri.path_and_query() {
        Some(p) if p.query().is_none() => Uri::from(p.clone()),
        _ => Uri::try_from(uri.path()).unwrap_or_else(|_| Uri::from_static("/")),
    }
}

/// Headers of a holder's answer not passed on: the connection's own.
const HOP: [HeaderName; 3] = [CONNECTION, CONTENT_LENGTH, http::header::TRANSFER_ENCODING];

/// The holder's answer, passed on to the client as it comes.
pub(crate) fn proxied(answer: Response<Incoming>) -> Response<ResponseBody> {
    let (parts, body) = answer.into_parts();
    let mut response = Response::new(ResponseBody::proxied(body));
    *response.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if !HOP.contains(name) {
            response.headers_mut().append(name, value.clone());
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forward_names_the_clients_path_without_its_query() {
        for (uri, path) in [
            ("/mcp", "/mcp"),
            ("/a/mcp?x=1", "/a/mcp"),
            ("http://127.0.0.1:8080/mcp?x=1&y", "/mcp"),
            ("http://127.0.0.1:8080", "/"),
        ] {
            let forwarded = path_of(&uri.parse().unwrap());
            assert_eq!(forwarded, path, "{uri}");
            assert!(forwarded.authority().is_none() && forwarded.scheme().is_none());
        }
    }
}
