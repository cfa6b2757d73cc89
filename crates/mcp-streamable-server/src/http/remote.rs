//! The asking node's side: where a session a request names is served, and, when another node
//! holds it, the request forwarded there and its answer followed from the shared store.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode};
use mcp_jsonrpc::{Body, Message};
use tokio::sync::mpsc;

use crate::core::Session;
use crate::core::cluster::Restarted;
use crate::core::event_store::{ReplayError, StoredEvent};
use crate::core::state::STANDALONE;
use crate::core::takeover::Located;
use crate::core::{Context, Error};
use crate::http::app::Server;
use crate::http::body::{frame, replayed, write_priming};
use crate::http::checks::owner;
use crate::http::envelope::{Answer, Envelope, Parts};
use crate::http::error::{Kind, Reject};
use crate::http::follow::{Follow, Step, is_response};
use crate::http::reply;
use crate::http::response_body::ResponseBody;
use crate::protocol::EventId;

/// How many SSE frames a followed stream's task writes ahead of its client.
const FRAMES_AHEAD: usize = 4;

/// Where a session is served.
pub(crate) enum Target {
    Local(Arc<Session>),
    Remote(String),
}

/// Where session `id` is served, for `request`: here, or by another node. A session whose
/// holder died is taken over here, its application started again (with `request`'s parts and
/// [`Restarted`]).
pub(crate) async fn locate(
    server: &Arc<Server>,
    id: &str,
    request: &http::request::Parts,
) -> Result<Target, Reject> {
    let owner = owner(request);
    match server.ctx.locate_session(id, owner.as_ref()).await? {
        Located::Here(session) => Ok(Target::Local(session)),
        Located::Elsewhere(node) => Ok(Target::Remote(node)),
        Located::Restored(restored) => {
            let session = restored
                .finish(|connection, generation, span| {
                    let mut parts = request.clone();
                    parts.extensions.insert(Restarted { generation });
                    server.start(connection, parts, span)
                })
                .await?;
            Ok(Target::Local(session))
        }
    }
}

/// A forward's outcome: the answer, or the holder out of reach (it may have died: locate the
/// session again).
pub(crate) enum Hop {
    Answered(Response<ResponseBody>),
    Unreachable(String),
}

/// How many times a request looks for its session's holder again when the one found is out of
/// reach (it died: its lease lapses within a few seconds), and how long it waits between.
const RELOCATES: usize = 50;
const RELOCATE_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// After a forward to `node` failed (`why`): waits before the next look for the holder, or
/// refuses (503) once a request has looked long enough.
pub(crate) async fn relocate(tries: &mut usize, node: &str, why: &str) -> Result<(), Reject> {
    if *tries >= RELOCATES {
        return Err(Reject::new(
            Kind::Unavailable,
            format!("the node holding this session ({node}) is out of reach: {why}"),
        ));
    }
    *tries += 1;
    tracing::debug!(
        node,
        why,
        "holder out of reach: looking for the session again"
    );
    tokio::time::sleep(RELOCATE_PAUSE).await;
    Ok(())
}

/// The key of the request's owner (S7, A4), as an envelope carries it to the holder.
fn owner_key(request: &http::request::Parts) -> Option<String> {
    owner(request).map(|o| o.as_str().to_owned())
}

/// Hands `envelope` to `node`; its refusal is this request's.
async fn forward(
    server: &Server,
    node: &str,
    envelope: &Envelope,
) -> Result<Result<Answer, String>, Reject> {
    let Some(cluster) = &server.ctx.config.cluster else {
        return Err(Error::SessionNotFound.into());
    };
    let bytes = match cluster.forward(node, envelope.to_bytes()).await {
        Ok(bytes) => bytes,
        Err(err) => return Ok(Err(err.to_string())),
    };
    match serde_json::from_slice::<Answer>(&bytes) {
        Ok(Answer::Refused(refusal)) => Err(refusal.into()),
        Ok(Answer::NotHere) => Ok(Err(format!("node {node} does not hold the session"))),
        Ok(answer) => Ok(Ok(answer)),
        Err(err) => Err(Reject::new(
            Kind::Internal,
            format!("unreadable answer from node {node}: {err}"),
        )),
    }
}

/// A POST for a session `node` holds: forwarded, then answered 202 or with its stream,
/// followed from the store.
pub(crate) async fn post(
    server: &Arc<Server>,
    node: &str,
    id: &str,
    request: Arc<http::request::Parts>,
    body: &Body,
    version: Option<&str>,
) -> Result<Hop, Reject> {
    let raw = serde_json::value::to_raw_value(body)
        .map_err(|e| Reject::new(Kind::Internal, format!("body not re-encoded: {e}")))?;
    let envelope = Envelope::Post {
        session: id.to_owned(),
        owner: owner_key(&request),
        version: version.map(str::to_owned),
        body: raw,
        parts: Parts::of(&request),
    };
    let (stream, prime) = match forward(server, node, &envelope).await? {
        Err(why) => return Ok(Hop::Unreachable(why)),
        Ok(Answer::Accepted) => return Ok(Hop::Answered(reply::empty(StatusCode::ACCEPTED))),
        Ok(Answer::Stream { stream, prime }) => (stream, prime),
        Ok(_) => return Err(unexpected(node)),
    };
    let mut follow = Follow::new(
        Arc::clone(server),
        id.to_owned(),
        stream,
        0,
        node.to_owned(),
        request,
    )
    .ok_or_else(|| unexpected(node))?;
    let requests = body.messages().iter().filter_map(Message::request_id);
    follow.until_answered(requests.count());
    let config = &server.ctx.config;
    if config.json_response {
        return Ok(Hop::Answered(json(follow, body.is_batch()).await?));
    }
    let mut prelude = Vec::new();
    if prime {
        let mut priming = BytesMut::new();
        write_priming(&mut priming, Some(EventId::new(stream, 0)), config.retry);
        prelude.push(priming.freeze());
    }
    Ok(Hop::Answered(sse(follow, prelude, id)))
}

fn unexpected(node: &str) -> Reject {
    Reject::new(
        Kind::Internal,
        format!("node {node} gave an answer that does not fit the request"),
    )
}

/// S4, S5 in JSON-response mode: the responses once the stream is finished; the whole stream
/// as SSE if it carries anything else.
async fn json(mut follow: Follow, is_batch: bool) -> Result<Response<ResponseBody>, Reject> {
    let mut events: Vec<StoredEvent> = Vec::new();
    loop {
        match follow.next(None).await {
            Step::Events(more) => events.extend(more),
            Step::Idle => {}
            Step::End => break,
        }
    }
    let all_responses = events.iter().all(|e| is_response(&e.message));
    if events.is_empty() {
        return Err(Error::SessionNotFound.into());
    }
    if all_responses {
        return Ok(reply::json(
            events.into_iter().map(|e| e.message).collect(),
            is_batch,
        ));
    }
    let mut out = BytesMut::new();
    for event in &events {
        frame(&mut out, None, &event.message);
    }
    let (tx, rx) = mpsc::channel(1);
    let _ = tx.try_send(out.freeze());
    Ok(reply::relayed(rx, None))
}

/// An SSE response: `prelude`, then the stream as its follower reads it.
fn sse(follow: Follow, prelude: Vec<Bytes>, id: &str) -> Response<ResponseBody> {
    let (tx, rx) = mpsc::channel(FRAMES_AHEAD);
    tokio::spawn(follow.relay(tx, prelude));
    reply::relayed(rx, http::HeaderValue::from_str(id).ok())
}

/// A GET for a session `node` holds: the standalone stream (attached at the holder, read from
/// the store here), or a resumption (S11), judged and replayed from the store.
pub(crate) async fn get(
    server: &Arc<Server>,
    node: &str,
    id: &str,
    request: Arc<http::request::Parts>,
    after: Option<EventId>,
) -> Result<Hop, Reject> {
    let config = &server.ctx.config;
    let mut prelude = Vec::new();
    let stream = after.map_or(STANDALONE, |a| a.stream);
    let mut start = match after {
        Some(after) => judge(&server.ctx, id, after, &mut prelude).await?,
        None => 0,
    };
    let mut moved = None;
    if stream == STANDALONE {
        let registered = server.relay.follow();
        let Some(cluster) = &config.cluster else {
            return Err(Error::SessionNotFound.into());
        };
        let envelope = Envelope::Standalone {
            session: id.to_owned(),
            owner: owner_key(&request),
            node: cluster.node().to_owned(),
            token: registered.token,
        };
        match forward(server, node, &envelope).await? {
            Err(why) => return Ok(Hop::Unreachable(why)),
            Ok(Answer::Standalone { prime, before }) if after.is_none() => {
                prelude.push(Bytes::from_static(b": stream open\n\n"));
                if prime {
                    let mut priming = BytesMut::new();
                    let id = before.map(|b| EventId::new(STANDALONE, b));
                    write_priming(&mut priming, id, config.retry);
                    prelude.push(priming.freeze());
                }
                start = before.unwrap_or(0);
            }
            Ok(Answer::Standalone { .. }) => {}
            Ok(_) => return Err(unexpected(node)),
        }
        moved = Some(registered.keep());
    }
    let mut follow = Follow::new(
        Arc::clone(server),
        id.to_owned(),
        stream,
        start,
        node.to_owned(),
        request,
    )
    .ok_or_else(|| unexpected(node))?;
    if let Some(moved) = moved {
        follow.until_moved(moved);
    }
    Ok(Hop::Answered(sse(follow, prelude, id)))
}

/// S11: whether `after` was given out, from the store: the events after it, as frames added to
/// `prelude`; returns the last index replayed.
async fn judge(
    ctx: &Context,
    id: &str,
    after: EventId,
    prelude: &mut Vec<Bytes>,
) -> Result<u64, Reject> {
    let Some(store) = &ctx.config.event_store else {
        return Err(Error::NoEventStore.into());
    };
    let events = match store.replay_after(id, after.stream, after.index).await {
        Ok(events) => events,
        // An open stream's id past what is stored: its holder sends a client what it then
        // stores, so it is stored in a moment, or the holder died and its successor answers
        // past it (N4). Followed from there.
        Err(ReplayError::UnknownStream | ReplayError::UnknownEvent)
            if matches!(store.is_finished(id, after.stream).await, Ok(Some(false))) =>
        {
            Vec::new()
        }
        Err(ReplayError::UnknownStream | ReplayError::UnknownEvent) => {
            return Err(Error::UnknownEvent(after).into());
        }
        Err(ReplayError::Purged) => return Err(Error::Purged(after).into()),
        Err(ReplayError::Failed(err)) => return Err(Error::shared_store(err).into()),
    };
    prelude.extend(replayed(after.stream, &events));
    Ok(events.last().map_or(after.index, |e| e.index))
}

/// A DELETE for a session `node` holds.
pub(crate) async fn delete(
    server: &Server,
    node: &str,
    id: &str,
    request: &http::request::Parts,
) -> Result<Hop, Reject> {
    let envelope = Envelope::Delete {
        session: id.to_owned(),
        owner: owner_key(request),
    };
    match forward(server, node, &envelope).await? {
        Err(why) => Ok(Hop::Unreachable(why)),
        Ok(Answer::Done) => Ok(Hop::Answered(reply::empty(StatusCode::NO_CONTENT))),
        Ok(_) => Err(unexpected(node)),
    }
}
