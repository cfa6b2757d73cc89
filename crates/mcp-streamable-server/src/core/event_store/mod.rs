//! Keeping outgoing messages so that clients can resume streams (S11, S13, S14).

mod memory;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use mcp_jsonrpc::Id;

pub use memory::{
    DEFAULT_MAX_STORE_BYTES, DEFAULT_MAX_STORE_BYTES_PER_SESSION, InMemoryEventStore,
};

/// A future returned by an [`EventStore`].
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An error from a store, such as a lost connection to a remote one.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// One stored message: its position in its stream and its JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The message's index in its stream.
    pub index: u64,
    /// The message, as JSON.
    pub message: Bytes,
}

/// A request stream not finished, with the requests it was opened for: what a node taking a
/// session over answers with errors ([`EventStore::unfinished`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unfinished {
    /// The stream.
    pub stream: u64,
    /// The ids of the requests it was opened for, as [`EventStore::stream_began`] was told.
    pub requests: Vec<Id>,
}

impl Unfinished {
    /// `stream`, opened for `requests`.
    pub fn new(stream: u64, requests: Vec<Id>) -> Self {
        Unfinished { stream, requests }
    }
}

/// Why a stream cannot be replayed from a given event.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReplayError {
    /// The store knows no such stream for the session.
    UnknownStream,
    /// The stream never had an event at that index or later: the id was never given out.
    UnknownEvent,
    /// Events after the given one were evicted, so a replay would have a gap.
    Purged,
    /// The store failed.
    Failed(StoreError),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::UnknownStream => f.write_str("unknown stream"),
            ReplayError::UnknownEvent => f.write_str("no such event in the stream"),
            ReplayError::Purged => f.write_str("events after this one were purged"),
            ReplayError::Failed(_) => f.write_str("event store failed"),
        }
    }
}

impl std::error::Error for ReplayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReplayError::Failed(e) => Some(&**e),
            _ => None,
        }
    }
}

/// Where a server keeps the messages it sends, so that a client whose connection broke can ask
/// for them again with `Last-Event-ID`.
///
/// Keys are the session id, the stream (a number the server gives each SSE stream of the
/// session) and the message's index in that stream; indices grow by one, though some (those
/// of priming events) are never appended, and a node taking a session over (with a
/// [`Cluster`](crate::Cluster)) answers its dead holder's requests at an index past any that
/// holder gave out. The server calls the methods of one session in
/// order, never two at once, so a store needs no ordering of its own.
///
/// [`InMemoryEventStore`] is the bounded default. Implement this trait to keep events
/// elsewhere: shared by the nodes of a [`Cluster`](crate::Cluster), it lets any node serve
/// any session's streams (`mcp-streamable-redis` is such a store).
pub trait EventStore: Send + Sync + 'static {
    /// Keeps `message`, the `index`th of `stream`.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        index: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The events of `stream` after index `after`, in order: none when `after` is the last
    /// index appended. [`ReplayError::UnknownEvent`] when `after` is past it, so that a forged id
    /// is told from a client that has read everything (S11); [`ReplayError::Purged`] when events
    /// after `after` are gone.
    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, ReplayError>>;

    /// `stream` was opened with a priming event (S14) whose id names index 0 (or, for the
    /// standalone stream, the last index appended): a replay after it must not be taken for
    /// one of a stream whose events were purged. Called before anything is appended to the
    /// stream. A store that keeps nothing of it answers such a replay with
    /// [`ReplayError::UnknownStream`], and only the node holding the stream can resume it.
    fn stream_opened<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        let _ = (session, stream);
        Box::pin(std::future::ready(()))
    }

    /// `stream` was opened for the requests `requests`. Called only with a
    /// [`Cluster`](crate::Cluster), before anything is appended to the stream, in place of
    /// [`stream_opened`](EventStore::stream_opened), so that a node taking the session over
    /// knows which requests its last holder left unanswered ([`unfinished`](Self::unfinished)).
    fn stream_began<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        requests: &'a [Id],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let _ = (session, stream, requests);
        Box::pin(std::future::ready(Ok(())))
    }

    /// The streams of `session` that [`stream_began`](Self::stream_began) and that are not
    /// [`stream_finished`](Self::stream_finished), in the order they began.
    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Whether `stream` got its last message: `Some(true)` after
    /// [`stream_finished`](Self::stream_finished), `Some(false)` for a stream that began or was
    /// opened and is not finished, `None` for a stream the store knows nothing of. A node
    /// following a stream that another node writes ends its response on `Some(true)`, once it
    /// has replayed everything.
    fn is_finished<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> StoreFuture<'a, Result<Option<bool>, StoreError>> {
        let _ = (session, stream);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// `stream` got its last message; its events may go sooner than a live stream's.
    fn stream_finished<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()>;

    /// The session ended: nothing of it will be asked for again.
    fn session_closed<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}
