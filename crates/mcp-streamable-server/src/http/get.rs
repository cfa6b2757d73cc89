//! GET: the standalone stream and resumption (S11, S12, S15); DELETE: ending a session (S16).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use tracing::Instrument;

use crate::core::Session;
use crate::core::session::Ending;
use crate::core::state::STANDALONE;
use crate::http::app::Server;
use crate::http::body::{SseBody, replayed, write_priming};
use crate::http::checks::{self, owner};
use crate::http::error::{Kind, Reject};
use crate::http::remote::{self, Ask, Reached};
use crate::http::reply;
use crate::http::response_body::ResponseBody;
use crate::protocol::{EventId, LAST_EVENT_ID, accept};

/// The id of the session a GET or DELETE names (S7, S8).
pub(crate) fn named<'a>(parts: &'a http::request::Parts, method: &str) -> Result<&'a str, Reject> {
    checks::protocol_version(&parts.headers)?;
    checks::session_id(&parts.headers)?
        .ok_or_else(|| Reject::bad_request(format!("{method} needs an Mcp-Session-Id header")))
}

pub(crate) async fn handle_get<B>(
    server: &Arc<Server>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject> {
    let (parts, _body) = request.into_parts();
    if !accept::accepts(&parts.headers).event_stream {
        return Err(Reject::new(
            Kind::NotAcceptable,
            "Accept must admit text/event-stream",
        ));
    }
    let id = named(&parts, "GET")?.to_owned();
    let after = last_event_id(&parts)?;
    if after.is_none_or(|a| a.stream == STANDALONE) {
        // S23: a shutting-down server ends standalone streams and does not open new ones,
        // which clients that reconnect would otherwise do at once.
        server.ctx.refuse_when_shutting_down("no new streams")?;
    }
    let owner = owner(&parts);
    let Some(nodes) = &server.nodes else {
        let session = server.ctx.find_session(&id, owner.as_ref()).await?;
        return serve(&session, after).await;
    };
    let mut ask = Ask::new(&id, Method::GET, Arc::new(parts), owner);
    ask.last_event_id = after;
    match remote::reach(server, nodes, &mut ask, None).await? {
        Reached::Here(session) => serve(&session, after).await,
        Reached::There(answer) => Ok(remote::proxied(answer)),
    }
}

/// A GET of a session held here: its standalone stream, or a resumption (S11, S12).
pub(crate) async fn serve(
    session: &Arc<Session>,
    after: Option<EventId>,
) -> Result<Response<ResponseBody>, Reject> {
    let body = match after {
        Some(after) => {
            resume(session, after)
                .instrument(session.span.clone())
                .await?
        }
        None => standalone(session).await?,
    };
    Ok(reply::sse(body))
}

/// The event a GET's `Last-Event-ID` names, if it has one (S11).
pub(crate) fn last_event_id(parts: &http::request::Parts) -> Result<Option<EventId>, Reject> {
    let Some(id) = accept::single(&parts.headers, &LAST_EVENT_ID)
        .map_err(|()| Reject::bad_request("malformed Last-Event-ID header"))?
    else {
        return Ok(None);
    };
    id.parse().map(Some).map_err(|_| {
        Reject::bad_request(format!(
            "malformed Last-Event-ID {id:?}: this server's event ids are <stream>_<index>"
        ))
    })
}

/// A new standalone stream; one already open is replaced, and what it had not written goes to
/// the new one (S12).
async fn standalone(session: &Arc<Session>) -> Result<SseBody, Reject> {
    let attached = session.attach_standalone().await?;
    let mut body = SseBody::new(attached.reader);
    // S15: something at once, so that proxies pass the headers on.
    body.push_prelude(Bytes::from_static(b": stream open\n\n"));
    if let Some(id) = attached.priming {
        let mut out = BytesMut::new();
        write_priming(&mut out, id, session.ctx.config.retry);
        body.push_prelude(out.freeze());
    }
    Ok(body)
}

/// S11: replays a stream after `after`, then follows it live if it is still open.
async fn resume(session: &Arc<Session>, after: EventId) -> Result<SseBody, Reject> {
    let resumed = session.resume(after).await?;
    let mut body = SseBody::new(resumed.reader);
    for frame in replayed(after.stream, &resumed.events) {
        body.push_prelude(frame);
    }
    Ok(body)
}

/// S16: DELETE ends the session, wherever it is held.
pub(crate) async fn handle_delete<B>(
    server: &Arc<Server>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject> {
    let (parts, _body) = request.into_parts();
    let id = named(&parts, "DELETE")?.to_owned();
    let owner = owner(&parts);
    let Some(nodes) = &server.nodes else {
        let session = server.ctx.find_session(&id, owner.as_ref()).await?;
        return Ok(delete(&session).await);
    };
    let mut ask = Ask::new(&id, Method::DELETE, Arc::new(parts), owner);
    match remote::reach(server, nodes, &mut ask, None).await? {
        Reached::Here(session) => Ok(delete(&session).await),
        Reached::There(answer) => Ok(remote::proxied(answer)),
    }
}

/// Ends a session held here.
pub(crate) async fn delete(session: &Arc<Session>) -> Response<ResponseBody> {
    session.close(Ending::Abort).await;
    reply::empty(StatusCode::NO_CONTENT)
}
