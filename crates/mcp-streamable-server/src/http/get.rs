//! GET: the standalone stream and resumption (S11, S12, S15); DELETE: ending a session (S16).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Request, Response, StatusCode};
use tracing::Instrument;

use crate::core::session::Ending;
use crate::core::state::STANDALONE;
use crate::core::{Context, Session};
use crate::http::body::{MAX_FRAME, SseBody, frame, write_priming};
use crate::http::checks::{self, owner};
use crate::http::error::{Kind, Reject};
use crate::http::reply;
use crate::http::response_body::ResponseBody;
use crate::protocol::{EventId, LAST_EVENT_ID, accept};

async fn session_of(
    ctx: &Context,
    parts: &http::request::Parts,
    method: &str,
) -> Result<Arc<Session>, Reject> {
    checks::protocol_version(&parts.headers)?;
    let id = checks::session_id(&parts.headers)?
        .ok_or_else(|| Reject::bad_request(format!("{method} needs an Mcp-Session-Id header")))?;
    Ok(ctx.find_session(id, owner(parts).as_ref()).await?)
}

pub(crate) async fn handle_get<B>(
    ctx: &Arc<Context>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject> {
    let (parts, _body) = request.into_parts();
    if !accept::accepts(&parts.headers).event_stream {
        return Err(Reject::new(
            Kind::NotAcceptable,
            "Accept must admit text/event-stream",
        ));
    }
    let session = session_of(ctx, &parts, "GET").await?;
    let last_event_id = accept::single(&parts.headers, &LAST_EVENT_ID)
        .map_err(|()| Reject::bad_request("malformed Last-Event-ID header"))?;
    let body = match last_event_id {
        Some(id) => {
            resume(ctx, &session, id)
                .instrument(session.span.clone())
                .await?
        }
        None => {
            // S23: a shutting-down server ends standalone streams and does not open new ones,
            // which clients that reconnect would otherwise do at once.
            ctx.refuse_when_shutting_down("no new streams")?;
            standalone(&session).await?
        }
    };
    Ok(reply::sse(body))
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

/// S11: replays a stream after `last_event_id`, then follows it live if it is still open.
async fn resume(
    ctx: &Context,
    session: &Arc<Session>,
    last_event_id: &str,
) -> Result<SseBody, Reject> {
    let after: EventId = last_event_id.parse().map_err(|_| {
        Reject::bad_request(format!(
            "malformed Last-Event-ID {last_event_id:?}: this server's event ids are <stream>_<index>"
        ))
    })?;
    if after.stream == STANDALONE {
        ctx.refuse_when_shutting_down("no new streams")?;
    }
    let resumed = session.resume(after).await?;
    let mut body = SseBody::new(resumed.reader);
    let mut out = BytesMut::new();
    for event in &resumed.events {
        frame(
            &mut out,
            Some(EventId::new(after.stream, event.index)),
            &event.message,
        );
        if out.len() >= MAX_FRAME {
            body.push_prelude(out.split().freeze());
        }
    }
    if !out.is_empty() {
        body.push_prelude(out.freeze());
    }
    Ok(body)
}

/// S16: DELETE ends the session.
pub(crate) async fn handle_delete<B>(
    ctx: &Arc<Context>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject> {
    let (parts, _body) = request.into_parts();
    let session = session_of(ctx, &parts, "DELETE").await?;
    session.close(Ending::Abort).await;
    Ok(reply::empty(StatusCode::NO_CONTENT))
}
