//! GET: the standalone stream and resumption (S11, S12, S15); DELETE: ending a session (S16).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Request, Response, StatusCode};
use tracing::Instrument;

use crate::body::ResponseBody;
use crate::error::{Kind, Reject};
use crate::event_store::ReplayError;
use crate::headers::{self, LAST_EVENT_ID};
use crate::post::{empty, protocol_version, session_id, sse_response};
use crate::service::Shared;
use crate::session::{Ending, Session};
use crate::stream::{OnEnd, STANDALONE, SseBody, Stream, frame, priming};

fn session_of(
    shared: &Shared,
    headers: &http::HeaderMap,
    method: &str,
) -> Result<Arc<Session>, Reject> {
    protocol_version(headers)?;
    let id = session_id(headers)?
        .ok_or_else(|| Reject::bad_request(format!("{method} needs an Mcp-Session-Id header")))?;
    let session = shared
        .registry
        .get(id)
        .ok_or_else(Reject::session_not_found)?;
    session.touch();
    Ok(session)
}

pub(crate) async fn handle_get<B>(
    shared: &Arc<Shared>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject> {
    let headers = request.headers();
    if !headers::accepts(headers).event_stream {
        return Err(Reject::new(
            Kind::NotAcceptable,
            "Accept must admit text/event-stream",
        ));
    }
    let session = session_of(shared, headers, "GET")?;
    let last_event_id = headers::single(headers, LAST_EVENT_ID)
        .map_err(|()| Reject::bad_request("malformed Last-Event-ID header"))?;
    let body = match last_event_id {
        Some(id) => {
            resume(&session, id)
                .instrument(session.span.clone())
                .await?
        }
        None => {
            refuse_standalone_in_shutdown(shared)?;
            standalone(&session)?
        }
    };
    Ok(sse_response(body))
}

/// S23: a shutting-down server ends standalone streams and does not open new ones, which
/// clients that reconnect would otherwise do at once. Request streams may still be resumed.
fn refuse_standalone_in_shutdown(shared: &Shared) -> Result<(), Reject> {
    shared.refuse_when_shutting_down("no new streams")
}

/// A new standalone stream; one already open is replaced, and what it had not written goes to
/// the new one (S12).
fn standalone(session: &Arc<Session>) -> Result<SseBody, Reject> {
    let (generation, old_waker, priming) = {
        let mut guard = session.lock();
        let st = &mut *guard;
        if st.closed {
            return Err(Reject::session_not_found());
        }
        let generation = st.new_generation();
        let primes = session.has_store() && st.version >= "2025-11-25";
        let stream = st
            .streams
            .entry(STANDALONE)
            .or_insert_with(|| Stream::new(true, u64::from(primes)));
        let (old_waker, replaced) = stream.attach(generation);
        // S14: the priming event names the point just before what is queued, so that a client
        // cut before reading it resumes with all of it; with nothing queued, a fresh index.
        let priming = primes.then(|| match stream.first_queued() {
            Some(first) => first.checked_sub(1),
            None => {
                let index = stream.next_index;
                stream.next_index += 1;
                Some(index)
            }
        });
        if replaced {
            tracing::debug!("a new GET replaces the open standalone stream");
        } else {
            st.attached += 1;
        }
        (generation, old_waker, priming)
    };
    if let Some(waker) = old_waker {
        waker.wake();
    }
    let mut body = SseBody::new(
        Arc::clone(session),
        STANDALONE,
        Some(generation),
        OnEnd::Keep,
    );
    // S15: something at once, so that proxies pass the headers on.
    body.push_prelude(Bytes::from_static(b": stream open\n\n"));
    if let Some(index) = priming {
        body.push_prelude(priming_at(STANDALONE, index, session.shared.config.retry));
    }
    Ok(body)
}

/// A priming event: an id to resume from (when there is one before the first message) and the
/// reconnection delay, with empty data.
fn priming_at(stream: u64, index: Option<u64>, retry: std::time::Duration) -> Bytes {
    if index == Some(0) {
        return priming(stream, retry);
    }
    let mut out = BytesMut::new();
    let id = index.map(|i| format!("{stream}_{i}"));
    let event = mcp_sse::EventRef {
        id: id.as_deref(),
        retry: Some(retry),
        ..Default::default()
    };
    let _ = event.encode(&mut out);
    out.freeze()
}

/// Parses `<stream>_<index>`.
fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, index) = id.split_once('_')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(stream) || !digits(index) {
        return None;
    }
    Some((stream.parse().ok()?, index.parse().ok()?))
}

/// S11: replays a stream after `last_event_id`, then follows it live if it is still open.
async fn resume(session: &Arc<Session>, last_event_id: &str) -> Result<SseBody, Reject> {
    let Some(store) = session.store.clone() else {
        return Err(Reject::bad_request(
            "this server keeps no events, so streams cannot be resumed: Last-Event-ID is not accepted",
        ));
    };
    let (stream, after) = parse_event_id(last_event_id).ok_or_else(|| {
        Reject::bad_request(format!(
            "malformed Last-Event-ID {last_event_id:?}: this server's event ids are <stream>_<index>"
        ))
    })?;
    let unknown = || {
        Reject::bad_request(format!(
            "unknown Last-Event-ID {last_event_id:?}: no such event in this session"
        ))
    };
    if stream == STANDALONE {
        refuse_standalone_in_shutdown(&session.shared)?;
    }
    // Holding the send order: no message is sent between the replay and the live attach.
    let _order = session.send_order().await;
    let live_next = {
        let st = session.lock();
        if st.closed {
            return Err(Reject::session_not_found());
        }
        st.streams.get(&stream).map(|s| s.next_index)
    };
    if live_next.is_some_and(|next| after >= next) {
        return Err(unknown());
    }
    let events = match store.replay_after(&session.id, stream, after).await {
        Ok(events) => events,
        // A live stream that has stored nothing yet, or nothing after its priming event, has
        // nothing to replay; `after` was checked against its next index above.
        Err(ReplayError::UnknownStream | ReplayError::UnknownEvent) if live_next.is_some() => {
            Vec::new()
        }
        // A finished stream: the store knows how far it went (S11: never an empty 200).
        Err(ReplayError::UnknownStream | ReplayError::UnknownEvent) => return Err(unknown()),
        Err(ReplayError::Purged) => {
            return Err(Reject::bad_request(format!(
                "Last-Event-ID {last_event_id:?} is too old: later events were purged from the event store"
            )));
        }
        Err(ReplayError::Failed(err)) => {
            tracing::error!(error = %err, "event store replay failed");
            return Err(Reject::new(Kind::Internal, "the event store failed"));
        }
    };
    let last_replayed = events.last().map_or(after, |e| e.index);
    let (generation, old_waker) = {
        let mut guard = session.lock();
        let st = &mut *guard;
        let generation = st.new_generation();
        match st.streams.get_mut(&stream) {
            Some(s) => {
                let (old, replaced) = s.attach(generation);
                if !replaced {
                    st.attached += 1;
                }
                (Some(generation), old)
            }
            // The stream is over: replay, then end.
            None => (None, None),
        }
    };
    drop(_order);
    if let Some(waker) = old_waker {
        waker.wake();
    }
    tracing::debug!(
        stream,
        after,
        replayed = events.len(),
        live = generation.is_some(),
        "stream resumed"
    );
    let mut body = SseBody::new(Arc::clone(session), stream, generation, OnEnd::Keep);
    body.skip_through(last_replayed);
    let mut out = BytesMut::new();
    for event in &events {
        frame(&mut out, stream, event.index, &event.message, true);
        if out.len() >= 64 * 1024 {
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
    shared: &Arc<Shared>,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Reject> {
    let session = session_of(shared, request.headers(), "DELETE")?;
    session.close(Ending::Abort).await;
    Ok(empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_parse_strictly() {
        assert_eq!(parse_event_id("0_0"), Some((0, 0)));
        assert_eq!(parse_event_id("12_345"), Some((12, 345)));
        for bad in [
            "",
            "_",
            "1_",
            "_1",
            "1-2",
            "a_1",
            "1_b",
            "1_2_3",
            "+1_2",
            "1_ 2",
            "99999999999999999999999_1",
        ] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }
}
