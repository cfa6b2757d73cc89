//! A POST served by the node holding its session: its messages begun, proven held (with a
//! cluster), delivered, and answered: 202, JSON, or SSE (S4, S5, S14). The POST of a client of
//! this node, of a node that forwarded it, and of a stream relayed again all come here.

use std::sync::Arc;
use std::time::Duration;

use http::{Response, StatusCode};

use http::HeaderValue;

use crate::cluster::sign::Forward;
use crate::core::owner::SessionOwner;
use crate::core::session::begin::Begin;
use crate::core::session::reader::{JsonWait, Reader};
use crate::core::session::state::Posted;
use crate::core::store::event_store::{Begun, StoredEvent};
use crate::core::{Error, Session};
use crate::http::app::Server;
use crate::http::error::{Kind, Reject};
use crate::http::remote::{MCP_FORWARD_REFUSED, REFUSED};
use crate::http::reply::sse::{SseBody, replayed};
use crate::http::reply::{self, ResponseBody};
use crate::protocol::{EventId, ProtocolVersion};

/// Why a POST served here did not get its answer here.
pub(crate) enum Tried {
    /// Another node holds the session now: this node's copy ended, and the POST goes there.
    Elsewhere,
    /// This node cannot prove its lease now: the POST waits a moment, or goes elsewhere.
    Fenced,
    Refused(Reject),
}

impl Tried {
    /// The refusal of a POST that has nowhere else to go.
    pub(crate) fn into_reject(self) -> Reject {
        match self {
            Tried::Refused(reject) => reject,
            Tried::Elsewhere => Error::NotHolder.into(),
            Tried::Fenced => Error::Fenced.into(),
        }
    }
}

impl From<Error> for Tried {
    fn from(err: Error) -> Self {
        match err {
            Error::NotHolder => Tried::Elsewhere,
            Error::Fenced => Tried::Fenced,
            other => Tried::Refused(other.into()),
        }
    }
}

impl From<Reject> for Tried {
    fn from(reject: Reject) -> Self {
        Tried::Refused(reject)
    }
}

/// What a POST's messages opened once delivered, or found delivered by an earlier sending of
/// the forward they came with.
pub(crate) enum Opened {
    /// No requests among them: 202.
    Accepted,
    /// The stream of their requests: the events to give first (a forward sent again is given
    /// its stream from after what the asking node has), then the stream as it comes.
    Stream {
        reader: Reader,
        prime: bool,
        replay: Vec<StoredEvent>,
        is_batch: bool,
    },
}

/// Begins the POST in `session` and delivers its messages (taken from `posted`, which stays
/// for another try when this node turned out not to hold the session). `forward` is the id of
/// the forward that brought it from another node, `after` the last event of its stream that
/// node has: a forward that began a stream before gets that stream after `after`, and nothing
/// is delivered again (N9).
pub(crate) async fn open(
    session: &Arc<Session>,
    posted: &mut Option<Posted>,
    version: Option<ProtocolVersion>,
    requested: Option<ProtocolVersion>,
    forward: Option<&str>,
    after: u64,
) -> Result<Opened, Error> {
    let body = &posted.as_ref().ok_or(Error::SessionNotFound)?.body;
    let is_batch = body.is_batch();
    let mut accepted = match session.begin(body, version, requested, forward)? {
        Begin::Accepted(accepted) => accepted,
        Begin::Again(stream) => return resumed(session, stream, after, is_batch).await,
    };
    if let Begun::Again { stream } = accepted.prove(forward).await? {
        return resumed(session, stream, after, is_batch).await;
    }
    let prime = accepted.prime;
    let posted = posted.take().ok_or(Error::SessionNotFound)?;
    Ok(match accepted.deliver(posted).await? {
        None => Opened::Accepted,
        Some(reader) => Opened::Stream {
            reader,
            prime,
            replay: Vec::new(),
            is_batch,
        },
    })
}

/// A stream that began before, from after `after`.
async fn resumed(
    session: &Arc<Session>,
    stream: u64,
    after: u64,
    is_batch: bool,
) -> Result<Opened, Error> {
    let resumed = session.resume(EventId::new(stream, after)).await?;
    Ok(Opened::Stream {
        reader: resumed.reader,
        prime: false,
        replay: resumed.events,
        is_batch,
    })
}

/// The answer to a POST served here: 202, its responses as JSON in JSON-response mode (unless
/// something else comes first, S5), or its stream as SSE, always SSE for a node that forwarded
/// it (`sse`).
pub(crate) async fn respond(
    session: &Arc<Session>,
    opened: Opened,
    sse: bool,
) -> Result<Response<ResponseBody>, Reject> {
    let Opened::Stream {
        reader,
        prime,
        replay,
        is_batch,
    } = opened
    else {
        return Ok(reply::empty(StatusCode::ACCEPTED));
    };
    let mut body = SseBody::new(reader);
    let stream = body.reader().stream();
    if !replay.is_empty() {
        for frame in replayed(stream, &replay) {
            body.push_prelude(frame);
        }
        return Ok(reply::sse(body));
    }
    if session.shared.config.json_response && !sse {
        match body.reader_mut().wait_json().await {
            Err(JsonWait::Closed) => return Err(Error::SessionNotFound.into()),
            Err(JsonWait::Moved) => {
                return Err(Reject::new(
                    Kind::Unavailable,
                    "the answer to this request left this connection: it was taken over by a GET \
                     with Last-Event-ID, or held more than the session's buffer allows",
                ));
            }
            Ok(Some(responses)) => return Ok(reply::json(responses.into_messages(), is_batch)),
            // S5: something else came first: the answer goes on as SSE.
            Ok(None) => {}
        }
    }
    if prime {
        body.prime(session.shared.config.retry);
    }
    // The head waits, briefly, for the first message: an answer ready by then leaves with the
    // head in one write, not two (one send, and one wake-up of the client, fewer).
    let _ = tokio::time::timeout(HOLD_HEAD, body.wait_first()).await;
    Ok(reply::sse(body))
}

/// How long the head of an SSE reply waits for the stream's first message. Short: until the
/// head leaves, the client has no event id to resume from, and no sign the request arrived.
const HOLD_HEAD: Duration = Duration::from_millis(2);

/// The session a forward names, if this node holds it under the fence the forward names, for
/// the forward's owner (S7).
pub(crate) async fn held(
    server: &Server,
    id: &str,
    forward: &Forward,
) -> Result<Option<Arc<Session>>, Reject> {
    let Some(session) = server.shared.sessions.get(id) else {
        return Ok(None);
    };
    if session.fence() != Some(forward.fence) {
        return Ok(None);
    }
    let owner = forward.owner.clone().map(SessionOwner::new);
    Ok(Some(server.shared.find_session(id, owner.as_ref()).await?))
}

/// The index after which a forward sent again wants its stream (`Mcp-Forward-After`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct After(pub(crate) u64);

/// A forward not taken: nothing of it was delivered, and the asking node looks again.
pub(crate) fn refused(why: &'static str) -> Response<ResponseBody> {
    let mut response = reply::empty(REFUSED);
    response
        .headers_mut()
        .insert(MCP_FORWARD_REFUSED, HeaderValue::from_static(why));
    response
}
