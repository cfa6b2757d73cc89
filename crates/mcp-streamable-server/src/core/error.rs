//! Why the session core refuses something. The HTTP edge maps each to a status and a JSON-RPC
//! error (`http::error`); the core knows nothing of statuses.

use mcp_jsonrpc::Id;

use crate::protocol::{EventId, ProtocolVersion};

/// A refusal of the session core.
#[derive(Debug)]
pub(crate) enum Error {
    /// The session ended, never existed, or belongs to another principal (S7, S16).
    SessionNotFound,
    /// The service is shutting down; says what is refused (S23).
    ShuttingDown(&'static str),
    /// The session cap is reached and no session is idle (S18).
    TooManySessions,
    /// The client's cap of sessions (this many) is reached and none of its sessions is idle.
    TooManySessionsForClient(usize),
    /// The applications hold this many bytes of unread client messages, past the server-wide
    /// budget (S22).
    InboundFull(usize),
    /// A request naming a version other than the one its session negotiated (S8).
    VersionMismatch {
        header: ProtocolVersion,
        negotiated: ProtocolVersion,
    },
    /// A batch in a version that has none (S9).
    BatchNotAllowed(ProtocolVersion),
    /// A request id already in flight in the session, or twice in one batch (S19).
    DuplicateRequestId(Id),
    /// A `Last-Event-ID` when the server keeps no events (S11).
    NoEventStore,
    /// A `Last-Event-ID` the server never gave out (S11).
    UnknownEvent(EventId),
    /// A `Last-Event-ID` after which events were evicted from the store (S11).
    Purged(EventId),
    /// The event store failed.
    StoreFailed,
    /// What the nodes share (the cluster or its stores) cannot be reached; says why.
    SharedStoreDown(String),
    /// Another node holds the session now: this node's copy ended (N8), and the request goes
    /// to the holder.
    NotHolder,
    /// This node cannot prove its lease now (it was paused, or the shared records are out of
    /// reach): nothing is delivered until it can (N8).
    Fenced,
}

impl Error {
    /// A failure of what the nodes share.
    pub(crate) fn shared_store(err: impl std::fmt::Display) -> Error {
        Error::SharedStoreDown(err.to_string())
    }
}
