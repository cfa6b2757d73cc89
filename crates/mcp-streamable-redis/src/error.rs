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
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Redis did not answer within the command timeout.
    Timeout,
    /// Redis answered with an error, or the connection to it failed.
    Redis,
    /// Redis answered something this crate never writes.
    Malformed,
    /// This node wrote to a session it does not hold (any more).
    NotHolder,
    /// The node could not listen for its peers where it was told to.
    Listen,
}

impl Error {
    pub(crate) fn new(kind: Kind) -> Self {
        Error { kind, source: None }
    }

    pub(crate) fn redis(source: redis::RedisError) -> Self {
        // The driver's own response timeout, the command timeout too, is a timeout all the same.
        let kind = if source.is_timeout() {
            Kind::Timeout
        } else {
            Kind::Redis
        };
        Error {
            kind,
            source: Some(Box::new(source)),
        }
    }

    pub(crate) fn listen(source: std::io::Error) -> Self {
        Error {
            kind: Kind::Listen,
            source: Some(Box::new(source)),
        }
    }

    /// Whether Redis did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == Kind::Timeout
    }

    /// Whether Redis could not be reached or answered with an error (a timeout included).
    pub fn is_redis(&self) -> bool {
        matches!(self.kind, Kind::Timeout | Kind::Redis | Kind::Malformed)
    }

    /// The error as a store of the server returns it: a refused write (`is_not_holder`) is the
    /// server's [`NotHolder`](mcp_streamable_server::NotHolder), on which it ends its copy of
    /// the session.
    pub(crate) fn into_store(self) -> mcp_streamable_server::StoreError {
        if self.is_not_holder() {
            return mcp_streamable_server::NotHolder.into();
        }
        self.into()
    }

    /// Whether the store refused a write because another node holds the session, or none
    /// does (Redis forgot it): this node's copy of the session should end.
    pub fn is_not_holder(&self) -> bool {
        self.kind == Kind::NotHolder
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            Kind::Timeout => "redis did not answer within the command timeout",
            Kind::Redis => "redis command failed",
            Kind::Malformed => "redis answered something this backend never wrote",
            Kind::NotHolder => "this node no longer holds the session",
            Kind::Listen => "could not listen for the other nodes",
        })
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
