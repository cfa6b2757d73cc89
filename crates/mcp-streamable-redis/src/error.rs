//! The one error type of the crate.

use std::fmt;

/// Why a call to the Redis backend failed.
///
/// Opaque, with questions to ask of it: the server only needs to know that the store failed
/// (it answers 503), an operator reads the message and its [`source`](std::error::Error::source).
/// Every seam hands it out boxed, as a [`StoreError`](mcp_streamable_server::StoreError).
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    source: Option<redis::RedisError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Redis did not answer within the command timeout.
    Timeout,
    /// Redis answered with an error, or the connection to it failed.
    Redis,
    /// Redis answered something this crate never writes.
    Malformed,
    /// No node listens on the inbox of the node a forward named.
    NodeGone,
    /// The node a forward named had its inbox full.
    InboxFull,
    /// The node a forward named did not answer within the forward timeout.
    ForwardTimeout,
    /// This node has as many forwards waiting for answers as it allows.
    TooManyForwards,
    /// The node a forward named dropped the envelope unanswered.
    Unanswered,
}

impl Error {
    pub(crate) fn new(kind: Kind) -> Self {
        Error { kind, source: None }
    }

    pub(crate) fn redis(source: redis::RedisError) -> Self {
        Error {
            kind: Kind::Redis,
            source: Some(source),
        }
    }

    /// Whether Redis, or the node a forward named, did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, Kind::Timeout | Kind::ForwardTimeout)
    }

    /// Whether Redis could not be reached or answered with an error (a timeout included).
    pub fn is_redis(&self) -> bool {
        matches!(self.kind, Kind::Timeout | Kind::Redis | Kind::Malformed)
    }

    /// Whether a forward failed because of the node it named: gone, busy, slow, or it dropped
    /// the envelope.
    pub fn is_forward(&self) -> bool {
        matches!(
            self.kind,
            Kind::NodeGone | Kind::InboxFull | Kind::ForwardTimeout | Kind::Unanswered
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            Kind::Timeout => "redis did not answer within the command timeout",
            Kind::Redis => "redis command failed",
            Kind::Malformed => "redis answered something this backend never wrote",
            Kind::NodeGone => "no node listens on the target node's inbox",
            Kind::InboxFull => "the target node's inbox is full",
            Kind::ForwardTimeout => "the target node did not answer within the forward timeout",
            Kind::TooManyForwards => "too many forwards are waiting for answers",
            Kind::Unanswered => "the target node dropped the envelope unanswered",
        })
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
