//! The [`EventStore`] on Redis: each open stream a list of its events, its bookkeeping in the
//! session's hash; the finished streams a hash and a queue; a batch of writes one script, in
//! one round trip (the layout is in `write.lua`).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use mcp_jsonrpc::{Body, ErrorObject, Id, Message, code};
use mcp_streamable_server::{
    Begun, EventStore, Fence, ReplayError, StoreError, StoreFuture, StoredEvent, Unfinished, Write,
};
use redis::Value;

use crate::error::{Error, Kind};
use crate::lease::Keeper;
use crate::node::{Node, fence_args, fenced};
use crate::scripts::{self, Call};

/// Bookkeeping charged per stored event on top of its bytes against the session's byte cap,
/// as the in-memory store does, so that floods of tiny messages are bounded too.
const EVENT_OVERHEAD: usize = 64;

/// How long the stream a forward began is remembered, so that the forward sent again begins
/// nothing: well past any forward's deadline (the server's is 2 s after it was sent, and its
/// holder drops it after that), for clocks a few seconds apart.
const FORWARD_MEMORY: std::time::Duration = std::time::Duration::from_secs(10);

/// The [`EventStore`] of a [`RedisBackend`](crate::RedisBackend), shared by every node on the
/// same Redis and prefix: a client resumes a stream on whichever node it reaches.
///
/// Each session keeps at most [`max_events_per_session`] events and
/// [`max_bytes_per_session`] bytes, all its streams together: past a cap, finished streams go
/// first, whole, the oldest finished first (a client resumes a stream it lost before its end,
/// and the last to finish are the likeliest), then the open streams' oldest events. A finished
/// stream goes after the [`resume_window`]; everything goes with the session.
/// A message larger than the byte cap is not kept: a response is kept as a stand-in, an error
/// saying so, and anything else leaves a gap that a resumption from before it is told of
/// ([`Purged`](ReplayError::Purged)); both are logged.
///
/// [`max_events_per_session`]: crate::Options::max_events_per_session
/// [`max_bytes_per_session`]: crate::Options::max_bytes_per_session
/// [`resume_window`]: crate::Options::resume_window
#[derive(Debug, Clone)]
pub struct RedisEventStore {
    node: Arc<Node>,
    _keeper: Arc<Keeper>,
}

impl RedisEventStore {
    pub(crate) fn new(node: Arc<Node>, keeper: Arc<Keeper>) -> Self {
        RedisEventStore {
            node,
            _keeper: keeper,
        }
    }

    async fn write(
        &self,
        session: &str,
        fence: Option<Fence>,
        writes: &[Write],
    ) -> Result<(), Error> {
        let node = &self.node;
        let options = &node.options;
        let mut call = Call::new(&scripts::WRITE, &node.keys.of_session(session));
        fence_args(&mut call, &options.node, fence);
        call.arg(options.key_ttl_ms())
            .arg(options.window_ms())
            .arg(options.max_events_per_session)
            .arg(options.max_bytes_per_session)
            .arg(EVENT_OVERHEAD)
            .arg(unix_ms(SystemTime::now()));
        let room = options.max_bytes_per_session.saturating_sub(EVENT_OVERHEAD);
        for write in writes {
            match write {
                Write::Open { stream } => {
                    call.arg("o").arg(stream);
                }
                Write::Append {
                    stream,
                    index,
                    message,
                } if message.len() > room => {
                    too_large(&mut call, session, *stream, *index, message, room)
                }
                Write::Append {
                    stream,
                    index,
                    message,
                } => {
                    call.arg("a").arg(stream).arg(index).arg(message.as_ref());
                }
                Write::Finish { stream } => {
                    call.arg("f").arg(stream);
                }
                _ => {}
            }
        }
        fenced(&node.script(&call).await?)
    }

    async fn replay_after(
        &self,
        session: &str,
        stream: u64,
        after: u64,
    ) -> Result<Vec<StoredEvent>, ReplayError> {
        let node = &self.node;
        let mut call = Call::new(
            &scripts::REPLAY,
            &[
                node.keys.session(session),
                node.keys.stream(session, stream),
                node.keys.finished(session),
            ],
        );
        call.arg(stream)
            .arg(after)
            .arg(node.options.window_ms())
            .arg(unix_ms(SystemTime::now()));
        let reply = node
            .script(&call)
            .await
            .map_err(|e| ReplayError::Failed(e.into()))?;
        parse_replay(reply)
    }

    async fn begin(
        &self,
        session: &str,
        fence: Fence,
        stream: u64,
        requests: &[Id],
        forward: Option<&str>,
    ) -> Result<Begun, Error> {
        let node = &self.node;
        let requests = serde_json::to_string(requests).expect("ids serialize");
        let forward = forward.map(key_safe);
        let (key, record) = (node.keys.session(session), node.keys.record(session));
        let mut call = match &forward {
            Some(forward) => Call::new(
                &scripts::BEGIN,
                &[key, record, node.keys.forward(session, forward)],
            ),
            None => Call::new(&scripts::BEGIN, &[key, record]),
        };
        fence_args(&mut call, &node.options.node, Some(fence));
        let now = SystemTime::now();
        call.arg(stream)
            .arg(requests)
            .arg(forward.as_deref().unwrap_or(""))
            .arg(crate::session_store::time_to_field(now))
            .arg(unix_ms(now))
            .arg(node.options.key_ttl_ms())
            .arg(FORWARD_MEMORY.as_millis() as u64);
        let reply = node.script(&call).await?;
        fenced(&reply)?;
        match reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(0)] => Ok(Begun::New),
                [Value::Int(1), Value::Int(first)] => Ok(Begun::Again {
                    stream: u64::try_from(*first).map_err(|_| Error::new(Kind::Malformed))?,
                }),
                _ => Err(Error::new(Kind::Malformed)),
            },
            _ => Err(Error::new(Kind::Malformed)),
        }
    }

    async fn unfinished(&self, session: &str) -> Result<Vec<Unfinished>, Error> {
        let node = &self.node;
        let call = Call::new(&scripts::UNFINISHED, &[node.keys.session(session)]);
        parse_unfinished(node.script(&call).await?).ok_or_else(|| Error::new(Kind::Malformed))
    }

    async fn close(&self, session: &str) -> Result<(), Error> {
        let node = &self.node;
        node.end(session, None).await
    }
}

/// Milliseconds since the Unix epoch: the nodes' clocks, which agree closely enough for a
/// window of seconds.
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A forward's id as it goes into a key name and the bookkeeping: as it is when it is made of
/// letters, digits, `-` and `_` (the server's are hex), hex of its bytes otherwise.
fn key_safe(forward: &str) -> Cow<'_, str> {
    let plain = !forward.is_empty()
        && forward
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plain && forward != "-" {
        return Cow::Borrowed(forward);
    }
    let mut hex = String::from("x");
    for byte in forward.bytes() {
        let _ = write!(hex, "{byte:02x}");
    }
    Cow::Owned(hex)
}

/// A message larger than a session may keep, as a write: a response as its stand-in, anything
/// else as a gap; logged either way.
fn too_large(call: &mut Call, session: &str, stream: u64, index: u64, message: &[u8], room: usize) {
    let kept = stand_in(message);
    let what = match kept {
        Some(_) => "a response: kept as an error saying so",
        None => "not kept, a resumption from before it is purged",
    };
    tracing::warn!(
        session_id = session,
        stream,
        index,
        bytes = message.len(),
        room,
        "a message too large for the event store: {what}"
    );
    match kept {
        Some(stand_in) => call.arg("a").arg(stream).arg(index).arg(stand_in.as_ref()),
        None => call.arg("g").arg(stream).arg(index),
    };
}

/// What is kept in place of a response too large to keep: an error for its request saying
/// so, which a client resuming reads instead of waiting forever. `None` for anything else.
fn stand_in(message: &[u8]) -> Option<Bytes> {
    let Ok(Body::Single(Message::Response(response))) = mcp_jsonrpc::parse(message) else {
        return None;
    };
    let error = ErrorObject::new(
        code::INTERNAL_ERROR,
        format!(
            "the response ({} bytes) was sent but is too large for the server's event store to \
             keep: it cannot be resumed",
            message.len()
        ),
    );
    let stand_in = mcp_jsonrpc::Response::error(response.id().cloned(), error);
    Some(Bytes::from(Message::Response(stand_in).to_vec()))
}

/// The events of a replay, or why there are none, from `replay.lua`'s answer.
fn parse_replay(reply: Value) -> Result<Vec<StoredEvent>, ReplayError> {
    let malformed = || ReplayError::Failed(Error::new(Kind::Malformed).into());
    let Value::Array(items) = reply else {
        return Err(malformed());
    };
    let mut items = items.into_iter();
    match items.next() {
        Some(Value::Int(0)) => return Err(ReplayError::UnknownStream),
        Some(Value::Int(1)) => return Err(ReplayError::UnknownEvent),
        Some(Value::Int(2)) => return Err(ReplayError::Purged),
        Some(Value::Int(3)) => {}
        _ => return Err(malformed()),
    }
    let mut events = Vec::with_capacity(items.len() / 2);
    while let Some(index) = items.next() {
        let (Value::BulkString(index), Some(Value::BulkString(message))) = (index, items.next())
        else {
            return Err(malformed());
        };
        let index = std::str::from_utf8(&index)
            .ok()
            .and_then(|i| i.parse().ok())
            .ok_or_else(malformed)?;
        events.push(StoredEvent {
            index,
            message: Bytes::from(message),
        });
    }
    Ok(events)
}

/// The streams begun and not finished, in the order they began, from `unfinished.lua`'s
/// answer: each stream and `"<rank> <request ids as JSON>"`.
fn parse_unfinished(reply: Value) -> Option<Vec<Unfinished>> {
    let Value::Array(items) = reply else {
        return None;
    };
    let mut began = Vec::new();
    let mut items = items.into_iter();
    while let Some(stream) = items.next() {
        let (Value::BulkString(stream), Some(Value::BulkString(value))) = (stream, items.next())
        else {
            return None;
        };
        let stream: u64 = std::str::from_utf8(&stream).ok()?.parse().ok()?;
        let (rank, requests) = std::str::from_utf8(&value).ok()?.split_once(' ')?;
        let rank: u64 = rank.parse().ok()?;
        let requests: Vec<Id> = serde_json::from_str(requests).ok()?;
        began.push((rank, Unfinished::new(stream, requests)));
    }
    began.sort_unstable_by_key(|(rank, _)| *rank);
    Some(began.into_iter().map(|(_, u)| u).collect())
}

impl EventStore for RedisEventStore {
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<Fence>,
        writes: &'a [Write],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.write(session, fence, writes)
                .await
                .map_err(Error::into_store)
        })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>> {
        Box::pin(self.replay_after(session, stream, after))
    }

    fn begin<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
        stream: u64,
        requests: &'a [Id],
        forward: Option<&'a str>,
    ) -> StoreFuture<'a, Result<Begun, StoreError>> {
        Box::pin(async move {
            self.begin(session, fence, stream, requests, forward)
                .await
                .map_err(Error::into_store)
        })
    }

    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        Box::pin(async move { Ok(self.unfinished(session).await?) })
    }

    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if let Err(error) = self.close(session).await {
                tracing::warn!(%error, session_id = session, "redis event store: close failed");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_streams_come_in_the_order_they_began() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let reply = Value::Array(vec![
            bulk("9"),
            bulk("2 [\"x\"]"),
            bulk("4"),
            bulk("1 [1,2]"),
        ]);
        let got = parse_unfinished(reply).unwrap();
        assert_eq!(
            got,
            [
                Unfinished::new(4, vec![Id::from(1), Id::from(2)]),
                Unfinished::new(9, vec![Id::from("x")]),
            ]
        );
        let broken = Value::Array(vec![bulk("1"), bulk("x [1]")]);
        assert!(parse_unfinished(broken).is_none());
    }

    #[test]
    fn forward_ids_go_into_keys_as_they_are_or_as_hex() {
        assert_eq!(key_safe("3f9a_b-C"), "3f9a_b-C");
        assert_eq!(key_safe("a b"), "x612062");
        assert_eq!(key_safe("-"), "x2d");
        assert_eq!(key_safe(""), "x");
    }

    #[test]
    fn replies_that_this_crate_never_writes_are_failures() {
        let reply = Value::Array(vec![Value::Int(3), Value::BulkString(b"x".to_vec())]);
        assert!(matches!(parse_replay(reply), Err(ReplayError::Failed(_))));
        assert!(matches!(
            parse_replay(Value::Nil),
            Err(ReplayError::Failed(_))
        ));
        assert!(matches!(
            parse_replay(Value::Array(vec![Value::Int(1)])),
            Err(ReplayError::UnknownEvent)
        ));
    }

    #[test]
    fn a_response_too_large_to_keep_is_kept_as_an_error_for_its_request() {
        let response = br#"{"jsonrpc":"2.0","id":7,"result":{"big":"..."}}"#;
        let kept = stand_in(response).unwrap();
        let Ok(Body::Single(Message::Response(r))) = mcp_jsonrpc::parse(&kept) else {
            panic!("not a response");
        };
        assert_eq!(r.id(), Some(&Id::from(7)));
        assert!(r.result().is_err());
        let note = br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#;
        assert_eq!(stand_in(note), None);
    }
}
