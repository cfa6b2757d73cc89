//! Keeping outgoing messages so that clients can resume streams (S11, S13, S14).

mod memory;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use mcp_jsonrpc::Id;

use crate::core::store::fence::Fence;

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

/// A request stream not finished, with the requests it began for: what a node taking a session
/// over answers with errors ([`EventStore::unfinished`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unfinished {
    /// The stream.
    pub stream: u64,
    /// The ids of the requests it began for, as [`EventStore::begin`] was told.
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

/// One change to a session's events, as the server hands them to [`EventStore::write`] in the
/// order of its sends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Write {
    /// `stream` was opened with a priming event (S14) whose id names index 0 (or, for the
    /// standalone stream, the last index appended): a replay after it must not be taken for
    /// one of a stream whose events were purged. Comes before anything is appended to the
    /// stream. A store that keeps nothing of it answers such a replay with
    /// [`ReplayError::UnknownStream`], and only the node holding the stream can resume it.
    Open {
        /// The stream.
        stream: u64,
    },
    /// Keep `message`, the `index`th of `stream`.
    Append {
        /// The stream.
        stream: u64,
        /// The message's index in it.
        index: u64,
        /// The message, as JSON.
        message: Bytes,
    },
    /// `stream` got its last message; its events may go sooner than a live stream's.
    Finish {
        /// The stream.
        stream: u64,
    },
}

/// What [`EventStore::begin`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Begun {
    /// The stream begins now: its requests may be delivered.
    New,
    /// A stream began for this forward already (the asking node sent it again, not knowing
    /// whether the first reached the holder): its requests were delivered then, and are not
    /// delivered again; the asking node is given that stream instead.
    Again {
        /// The stream the forward began first.
        stream: u64,
    },
}

/// Where a server keeps the messages it sends, so that a client whose connection broke can ask
/// for them again with `Last-Event-ID`.
///
/// Keys are the session id, the stream (a number the server gives each SSE stream of the
/// session) and the message's index in that stream; indices grow by one, though some (those
/// of priming events) are never appended, and a node taking a session over (with a
/// [`Cluster`](crate::Cluster)) answers its dead holder's requests at an index past any that
/// holder gave out. The writes of one session come in the order of its sends, a batch at a
/// time ([`write`](EventStore::write)), never two batches of one session at once.
///
/// With a [`Cluster`](crate::Cluster), writes carry the session's [`Fence`]: a shared store
/// refuses a write whose fence is not the session's holding with [`NotHolder`], and writes
/// nothing of it.
///
/// [`InMemoryEventStore`] is the bounded default. Implement this trait to keep events
/// elsewhere: shared by the nodes of a [`Cluster`](crate::Cluster), it lets any node serve
/// any session's streams (`mcp-streamable-redis` is such a store).
///
/// [`NotHolder`]: crate::NotHolder
pub trait EventStore: Send + Sync + 'static {
    /// Makes `writes`, in order; a remote store in one round trip. `fence` is the session's
    /// holding, with a cluster.
    fn write<'a>(
        &'a self,
        session: &'a str,
        fence: Option<Fence>,
        writes: &'a [Write],
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

    /// With a [`Cluster`](crate::Cluster): `stream` begins for the requests `requests`, before
    /// they are delivered, so that a node taking the session over knows which requests its last
    /// holder left unanswered ([`unfinished`](Self::unfinished)); [`NotHolder`] when `fence` is
    /// not the session's holding, and then nothing is delivered. `forward` is the id of the
    /// forward that carried the requests from another node: a second `begin` of the same forward
    /// (sent again) finds the first's stream ([`Begun::Again`]) and delivers nothing.
    ///
    /// [`NotHolder`]: crate::NotHolder
    fn begin<'a>(
        &'a self,
        session: &'a str,
        fence: Fence,
        stream: u64,
        requests: &'a [Id],
        forward: Option<&'a str>,
    ) -> StoreFuture<'a, Result<Begun, StoreError>> {
        let _ = (session, fence, stream, requests, forward);
        Box::pin(std::future::ready(Ok(Begun::New)))
    }

    /// The streams of `session` that [`begin`](Self::begin) began and that are not finished
    /// ([`Write::Finish`]), in the order they began.
    fn unfinished<'a>(
        &'a self,
        session: &'a str,
    ) -> StoreFuture<'a, Result<Vec<Unfinished>, StoreError>> {
        let _ = session;
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// The session ended: nothing of it will be asked for again. (With a cluster, the
    /// cluster's [`end`](crate::Cluster::end) removes it instead, fenced.)
    fn close<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}
