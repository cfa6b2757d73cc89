//! What can go wrong on an HTTP/1.1 connection of the client's own.

use std::{fmt, io};

/// A failed exchange or body on a [`Conn`](super::Conn).
#[derive(Debug)]
pub(crate) enum H1Error {
    /// The socket failed.
    Io(io::Error),
    /// The server closed the connection before the response was complete.
    Closed,
    /// The response head is not HTTP/1.x.
    Head(httparse::Error),
    /// The response head is longer than the bound on it, `limit` bytes.
    HeadTooLarge { limit: usize },
    /// The response asked to switch protocols, which the client never asks for.
    Upgrade,
    /// A `Content-Length` that is not one decimal number.
    ContentLength,
    /// A chunk size line that is not one, or is longer than the bound on it.
    ChunkSize,
    /// A chunk's data not followed by CRLF.
    ChunkEnd,
    /// A trailer line that is not a field line.
    Trailer,
    /// Trailer fields longer than the bound on them.
    TrailersTooLarge,
}

impl fmt::Display for H1Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            H1Error::Io(e) => write!(f, "connection failed: {e}"),
            H1Error::Closed => f.write_str("connection closed before the response was complete"),
            H1Error::Head(e) => write!(f, "invalid response head: {e}"),
            H1Error::HeadTooLarge { limit } => {
                write!(f, "response head larger than {limit} bytes")
            }
            H1Error::Upgrade => f.write_str("unexpected 101 Switching Protocols"),
            H1Error::ContentLength => f.write_str("invalid Content-Length"),
            H1Error::ChunkSize => f.write_str("invalid chunk size line"),
            H1Error::ChunkEnd => f.write_str("chunk data not followed by CRLF"),
            H1Error::Trailer => f.write_str("invalid trailer field line"),
            H1Error::TrailersTooLarge => f.write_str("trailer section too large"),
        }
    }
}

impl std::error::Error for H1Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            H1Error::Io(e) => Some(e),
            H1Error::Head(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for H1Error {
    fn from(e: io::Error) -> H1Error {
        H1Error::Io(e)
    }
}
