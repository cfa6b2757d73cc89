//! The error of a transport.

use std::fmt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What went wrong, in broad strokes; [`Error::source`](std::error::Error::source) has the
/// detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The connection is closed, by this side or by the peer.
    Closed,
    /// Reading or writing the underlying channel failed.
    Io,
    /// The peer sent something that is not a JSON-RPC message. The connection remains usable.
    InvalidMessage,
    /// The peer sent a message larger than the configured bound. The connection remains
    /// usable: the oversized message was skipped.
    MessageTooLarge,
    /// An operation did not complete in time.
    Timeout,
    /// The peer broke the rules of the transport's protocol (for HTTP: an unexpected status or
    /// content type).
    Protocol,
    /// The transport cannot do what was asked, by design: a stateless HTTP server sending a
    /// request to the client, which would have no way to answer it.
    Unsupported,
}

impl ErrorKind {
    fn describe(self) -> &'static str {
        match self {
            ErrorKind::Closed => "connection closed",
            ErrorKind::Io => "i/o error",
            ErrorKind::InvalidMessage => "invalid message",
            ErrorKind::MessageTooLarge => "message too large",
            ErrorKind::Timeout => "timed out",
            ErrorKind::Protocol => "protocol error",
            ErrorKind::Unsupported => "not supported by this transport",
        }
    }
}

/// The error of a [`Connection`](crate::Connection) or [`Transport`](crate::Transport).
///
/// Opaque by design, after hyper's: ask it what it is with [`kind`](Error::kind) and the
/// `is_*` methods, and find the cause in `source()`. Transports built on this crate construct
/// it with [`Error::new`], putting their own error type in the source, where a user can
/// downcast to it.
///
/// ```
/// use mcp_transport::{Error, ErrorKind};
///
/// let err = Error::closed();
/// assert!(err.is_closed());
/// assert_eq!(err.to_string(), "connection closed");
/// ```
pub struct Error {
    kind: ErrorKind,
    source: Option<BoxError>,
}

impl Error {
    /// An error of `kind` caused by `source`.
    pub fn new(kind: ErrorKind, source: impl Into<BoxError>) -> Self {
        Error {
            kind,
            source: Some(source.into()),
        }
    }

    /// An error of `kind` with no further cause.
    pub fn from_kind(kind: ErrorKind) -> Self {
        Error { kind, source: None }
    }

    /// The connection is closed.
    pub fn closed() -> Self {
        Error::from_kind(ErrorKind::Closed)
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the connection is closed (nothing more can be sent or received).
    pub fn is_closed(&self) -> bool {
        self.kind == ErrorKind::Closed
    }

    /// Whether an operation timed out.
    pub fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }

    /// Whether the error concerns one message only, after which the connection goes on
    /// ([`ErrorKind::InvalidMessage`], [`ErrorKind::MessageTooLarge`]).
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::InvalidMessage | ErrorKind::MessageTooLarge
        )
    }

    /// Consumes the error, returning its cause.
    pub fn into_source(self) -> Option<BoxError> {
        self.source
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.describe())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, err)
    }
}
