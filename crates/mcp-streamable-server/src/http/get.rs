//! GET: the standalone stream and resumption (S11, S12, S15).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response};
use tracing::Instrument;

use crate::core::Session;
use crate::core::session::state::STANDALONE;
use crate::http::app::Server;
use crate::http::checks::{self, owner};
use crate::http::error::{Kind, Reject};
use crate::http::remote::{self, Ask, Reached};
use crate::http::reply::sse::{SseBody, replayed, write_priming};
use crate::http::reply::{self, ResponseBody};
use crate::protocol::transport::TransportHeaders;
use crate::protocol::{EventId, LAST_EVENT_ID, accept};

/// GET: the standalone stream, or a resumption, wherever the session is held.
pub(crate) async fn handle<B>(
    server: &Arc<Server>,
    request: Request<B>,
    transport: &TransportHeaders,
) -> Result<Response<ResponseBody>, Reject> {
    let (parts, _body) = request.into_parts();
    if !accept::accepts(&parts.headers).event_stream {
        return Err(Reject::new(
            Kind::NotAcceptable,
            "Accept must admit text/event-stream",
        ));
    }
    let id = checks::named(transport, "GET")?;
    let after = last_event_id(&parts)?;
    if after.is_none_or(|a| a.stream == STANDALONE) {
        // S23: a shutting-down server ends standalone streams and does not open new ones,
        // which clients that reconnect would otherwise do at once.
        server.shared.refuse_when_shutting_down("no new streams")?;
    }
    let owner = owner(&parts);
    let Some(nodes) = &server.nodes else {
        let session = server.shared.find_session(id, owner.as_ref()).await?;
        return serve(&session, after).await;
    };
    let mut ask = Ask::new(id, Method::GET, Arc::new(parts), owner);
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
        write_priming(&mut out, id, session.shared.config.retry);
        body.push_prelude(out.freeze());
    }
    Ok(body)
}

/// S11: replays a stream after `after`, then follows it live if it is still open.
async fn resume(session: &Arc<Session>, after: EventId) -> Result<SseBody, Reject> {
    let resumed = session.resume(after).await?;
    #[cfg(feature = "otel")]
    session.shared.telemetry.resumed(resumed.events.len());
    let mut body = SseBody::new(resumed.reader);
    for frame in replayed(after.stream, &resumed.events) {
        body.push_prelude(frame);
    }
    Ok(body)
}
