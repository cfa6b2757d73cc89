//! The [`EventStore`] on Redis: one log per session (a list) and a hash of what is
//! known of its streams.

use std::collections::HashMap;

use bytes::Bytes;
use mcp_jsonrpc::Id;
use mcp_streamable_server::{
    EventStore, ReplayError, StoreError, StoreFuture, StoredEvent, Unfinished,
};
use redis::Value;

use crate::backend::RedisBackend;
use crate::error::{Error, Kind};
use crate::scripts;

/// Bookkeeping charged per stored event on top of its bytes against the session's byte cap,
/// as the in-memory store does, so that floods of tiny messages are bounded too.
const EVENT_OVERHEAD: usize = 64;

/// The [`EventStore`] of a [`RedisBackend`], shared by every node on the same Redis and
/// prefix: a client resumes a stream on whichever node it reaches.
///
/// Each session keeps at most [`max_events_per_session`] events and
/// [`max_bytes_per_session`] bytes, all its streams together, the oldest going first; its keys
/// expire with the session and go when it is closed. With the backend's
/// [cluster](RedisBackend::cluster) handed out, it writes only to sessions this node holds.
///
/// [`max_events_per_session`]: crate::Options::max_events_per_session
/// [`max_bytes_per_session`]: crate::Options::max_bytes_per_session
#[derive(Debug, Clone)]
pub struct RedisEventStore {
    backend: RedisBackend,
}

impl RedisEventStore {
    pub(crate) fn new(backend: RedisBackend) -> Self {
        RedisEventStore { backend }
    }

    async fn append(
        &self,
        session: &str,
        stream: u64,
        index: u64,
        message: Bytes,
    ) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let options = &shared.options;
        let mut call = scripts::APPEND.prepare_invoke();
        call.key(shared.keys.log(session))
            .key(shared.keys.meta(session))
            .key(shared.keys.holder(session))
            .arg(stream)
            .arg(index)
            .arg(message.as_ref())
            .arg(options.max_events_per_session)
            .arg(options.max_bytes_per_session)
            .arg(options.key_ttl_ms())
            .arg(EVENT_OVERHEAD)
            .arg(shared.fence());
        fenced(shared.script(&call).await?)
    }

    async fn replay_after(
        &self,
        session: &str,
        stream: u64,
        after: u64,
    ) -> Result<Vec<StoredEvent>, ReplayError> {
        let shared = &self.backend.shared;
        let mut call = scripts::REPLAY.prepare_invoke();
        call.key(shared.keys.log(session))
            .key(shared.keys.meta(session))
            .arg(stream)
            .arg(after);
        let reply = shared
            .script(&call)
            .await
            .map_err(|e| ReplayError::Failed(e.into()))?;
        parse_replay(reply)
    }

    async fn stream_opened(&self, session: &str, stream: u64) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut call = scripts::OPENED.prepare_invoke();
        call.key(shared.keys.meta(session))
            .key(shared.keys.holder(session))
            .arg(stream)
            .arg(shared.options.key_ttl_ms())
            .arg(shared.fence());
        fenced(shared.script(&call).await?)
    }

    async fn stream_began(&self, session: &str, stream: u64, requests: &[Id]) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let requests = serde_json::to_string(requests).expect("ids serialize");
        let mut call = scripts::BEGAN.prepare_invoke();
        call.key(shared.keys.meta(session))
            .key(shared.keys.holder(session))
            .arg(stream)
            .arg(requests)
            .arg(shared.options.key_ttl_ms())
            .arg(shared.fence());
        fenced(shared.script(&call).await?)
    }

    async fn unfinished(&self, session: &str) -> Result<Vec<Unfinished>, Error> {
        let shared = &self.backend.shared;
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(shared.keys.meta(session));
        let meta: HashMap<String, String> = shared.query(&cmd).await?;
        parse_unfinished(&meta).ok_or_else(|| Error::new(Kind::Malformed))
    }

    async fn is_finished(&self, session: &str, stream: u64) -> Result<Option<bool>, Error> {
        let shared = &self.backend.shared;
        let mut call = scripts::IS_FINISHED.prepare_invoke();
        call.key(shared.keys.log(session))
            .key(shared.keys.meta(session))
            .arg(stream);
        match shared.script(&call).await? {
            Value::Int(0) => Ok(Some(false)),
            Value::Int(1) => Ok(Some(true)),
            Value::Int(-1) => Ok(None),
            _ => Err(Error::new(Kind::Malformed)),
        }
    }

    async fn stream_finished(&self, session: &str, stream: u64) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut call = scripts::FINISHED.prepare_invoke();
        call.key(shared.keys.log(session))
            .key(shared.keys.meta(session))
            .arg(stream);
        shared.script(&call).await.map(drop)
    }

    async fn session_closed(&self, session: &str) -> Result<(), Error> {
        let shared = &self.backend.shared;
        let mut cmd = redis::cmd("DEL");
        cmd.arg(shared.keys.log(session))
            .arg(shared.keys.meta(session));
        shared.query::<()>(&cmd).await
    }
}

/// A fenced write's answer: -1 when this node does not hold the session.
fn fenced(reply: Value) -> Result<(), Error> {
    match reply {
        Value::Int(-1) => Err(Error::new(Kind::NotHolder)),
        Value::Int(_) => Ok(()),
        _ => Err(Error::new(Kind::Malformed)),
    }
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

/// The streams begun and not finished, in the order they began, from the meta hash: `b:N` is
/// `"<rank> <request ids as JSON>"`.
fn parse_unfinished(meta: &HashMap<String, String>) -> Option<Vec<Unfinished>> {
    let mut began = Vec::new();
    for (field, value) in meta {
        let Some(stream) = field.strip_prefix("b:") else {
            continue;
        };
        let (rank, requests) = value.split_once(' ')?;
        let rank: u64 = rank.parse().ok()?;
        let requests: Vec<Id> = serde_json::from_str(requests).ok()?;
        began.push((rank, Unfinished::new(stream.parse().ok()?, requests)));
    }
    began.sort_unstable_by_key(|(rank, _)| *rank);
    Some(began.into_iter().map(|(_, u)| u).collect())
}

/// An append's error as the server reads it: a refused write (`is_not_holder`) is the server's
/// [`NotHolder`](mcp_streamable_server::NotHolder), on which it ends its copy of the session.
fn append_error(error: Error) -> StoreError {
    if error.is_not_holder() {
        // The server's own type: it ends its copy of the session on it (N4).
        return mcp_streamable_server::NotHolder.into();
    }
    error.into()
}

/// Logs the failure of a call whose signature has no room for it.
fn logged(what: &'static str, result: Result<(), Error>) {
    if let Err(error) = result {
        tracing::warn!(%error, "redis event store: {what} failed");
    }
}

impl EventStore for RedisEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        index: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.append(session, stream, index, message)
                .await
                .map_err(append_error)
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

    fn stream_opened<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move { logged("stream_opened", self.stream_opened(session, stream).await) })
    }

    fn stream_began<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        requests: &'a [Id],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.stream_began(session, stream, requests).await?) })
    }

    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        Box::pin(async move { Ok(self.unfinished(session).await?) })
    }

    fn is_finished<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> StoreFuture<'a, Result<Option<bool>, StoreError>> {
        Box::pin(async move { Ok(self.is_finished(session, stream).await?) })
    }

    fn stream_finished<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            logged(
                "stream_finished",
                self.stream_finished(session, stream).await,
            )
        })
    }

    fn session_closed<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { logged("session_closed", self.session_closed(session).await) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_streams_come_in_the_order_they_began() {
        let meta = HashMap::from([
            ("hi".to_owned(), "9".to_owned()),
            ("b:9".to_owned(), "2 [\"x\"]".to_owned()),
            ("b:4".to_owned(), "1 [1,2]".to_owned()),
            ("l:9".to_owned(), "0".to_owned()),
        ]);
        let got = parse_unfinished(&meta).unwrap();
        assert_eq!(
            got,
            [
                Unfinished::new(4, vec![Id::from(1), Id::from(2)]),
                Unfinished::new(9, vec![Id::from("x")]),
            ]
        );
        let broken = HashMap::from([("b:1".to_owned(), "x [1]".to_owned())]);
        assert!(parse_unfinished(&broken).is_none());
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
}
