//! The error of this crate, and how it maps onto [`mcp_transport::Error`].

use std::fmt;

use http::StatusCode;
use mcp_transport::ErrorKind;

/// A boxed error of any type, as returned by an [`AuthProvider`](crate::AuthProvider).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The error of the Streamable HTTP client.
///
/// Opaque, after hyper's: ask it what it is with the `is_*` methods, [`status`](Error::status)
/// and [`body`](Error::body), and find the underlying cause in `source()`.
///
/// The [`Connection`](mcp_transport::Connection) methods return [`mcp_transport::Error`], whose
/// source is this error; downcast to reach it:
///
/// ```
/// use mcp_streamable_client::Error;
///
/// fn why(err: &mcp_transport::Error) -> Option<&Error> {
///     std::error::Error::source(err)?.downcast_ref::<Error>()
/// }
/// # let _ = why;
/// ```
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: Kind,
    source: Option<BoxError>,
}

#[derive(Debug)]
pub(crate) enum Kind {
    /// The builder was given something unusable: a URL, a header.
    Builder,
    /// Connecting or talking HTTP failed.
    Http,
    /// Reading a response body failed.
    Body,
    /// Something did not happen in time.
    Timeout(Deadline),
    /// The server answered with a status that is not a success.
    Status {
        status: StatusCode,
        /// The start of the body, as text.
        body: String,
        /// The request carried a session id and the answer was 404 (C6).
        session_expired: bool,
    },
    /// A success with a body in a format the transport does not read.
    ContentType,
    /// One SSE event or JSON body over the configured bound (C7).
    TooLarge { limit: usize },
    /// The body was not JSON-RPC.
    InvalidMessage,
    /// The authorization provider failed.
    Auth,
    /// The HTTP+SSE fallback (C10) could not find where to post.
    HttpSse(HttpSseFailure),
    /// The message has no place in the protocol the transport speaks to the endpoint (M7).
    Unsupported(Unsupported),
    /// The server did not answer the `initialize` the transport sent on the application's
    /// behalf with a result (M7).
    Initialize,
    /// The connection is closed.
    Closed,
}

/// What did not happen in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deadline {
    Request,
    /// The response a [`ClientSender::call`](crate::ClientSender::call) waits for.
    Response,
    Close,
    Endpoint,
}

/// Why the HTTP+SSE fallback failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpSseFailure {
    /// The stream ended before the `endpoint` event.
    Missing,
    /// The `endpoint` event named no usable URL.
    Invalid,
    /// The `endpoint` event named another origin.
    Foreign,
}

/// What cannot be sent in the per-request protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsupported {
    /// `initialize`, under [`Family::PerRequest`](crate::Family::PerRequest).
    Initialize,
    /// A response, which the client never posts in that protocol.
    Response,
    /// A request whose params are not an object, so `_meta` cannot be added to them.
    Params,
    /// A protocol version in `_meta` that cannot be a header value.
    Version,
}

impl Error {
    pub(crate) fn new(kind: Kind) -> Error {
        Error {
            inner: Box::new(Inner { kind, source: None }),
        }
    }

    pub(crate) fn with(mut self, source: impl Into<BoxError>) -> Error {
        self.inner.source = Some(source.into());
        self
    }

    pub(crate) fn timeout(deadline: Deadline) -> Error {
        Error::new(Kind::Timeout(deadline))
    }

    pub(crate) fn from_status(status: StatusCode, body: String, session_expired: bool) -> Error {
        Error::new(Kind::Status {
            status,
            body,
            session_expired,
        })
    }

    /// Whether the server answered 404 to a request carrying a session id: the session is over
    /// and a new one must start with `initialize` (C6).
    pub fn is_session_expired(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Status {
                session_expired: true,
                ..
            }
        )
    }

    /// Whether a request, the HTTP+SSE endpoint event or the closing DELETE timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.inner.kind, Kind::Timeout(_))
    }

    /// Whether the connection was closed.
    pub fn is_closed(&self) -> bool {
        matches!(self.inner.kind, Kind::Closed)
    }

    /// Whether connecting to the server or exchanging HTTP with it failed.
    pub fn is_connect(&self) -> bool {
        matches!(self.inner.kind, Kind::Http)
    }

    /// Whether one SSE event or JSON body was larger than the configured
    /// [`max_event_size`](crate::ClientBuilder::max_event_size) (C7).
    pub fn is_event_too_large(&self) -> bool {
        matches!(self.inner.kind, Kind::TooLarge { .. })
    }

    /// Whether the [`AuthProvider`](crate::AuthProvider) failed.
    pub fn is_auth(&self) -> bool {
        matches!(self.inner.kind, Kind::Auth)
    }

    /// Whether the message cannot be sent in the protocol the transport speaks to the endpoint
    /// (M7): `initialize` or a response under [`Family::PerRequest`](crate::Family::PerRequest), a request
    /// whose params are not an object when the transport must add `_meta` to them, or a
    /// `_meta` protocol version that cannot be sent as a header.
    pub fn is_unsupported(&self) -> bool {
        matches!(self.inner.kind, Kind::Unsupported(_))
    }

    /// Whether the [`ClientBuilder`](crate::ClientBuilder) was given an unusable URL or header.
    pub fn is_builder(&self) -> bool {
        matches!(self.inner.kind, Kind::Builder)
    }

    /// Whether the server answered with a body the transport cannot read (neither JSON nor SSE),
    /// or with something that is not JSON-RPC.
    pub fn is_invalid_reply(&self) -> bool {
        matches!(self.inner.kind, Kind::ContentType | Kind::InvalidMessage)
    }

    /// The HTTP status of a failed answer, if the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match &self.inner.kind {
            Kind::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The start of the body of a failed answer (up to [`ERROR_BODY_PREFIX`] bytes, as text).
    pub fn body(&self) -> Option<&str> {
        match &self.inner.kind {
            Kind::Status { body, .. } => Some(body),
            _ => None,
        }
    }

    /// Whether trying again later may succeed: the server was unreachable, slow or overloaded.
    pub(crate) fn is_transient(&self) -> bool {
        match &self.inner.kind {
            Kind::Http | Kind::Body | Kind::Timeout(_) => true,
            Kind::Status { status, .. } => {
                status.is_server_error()
                    || *status == StatusCode::TOO_MANY_REQUESTS
                    || *status == StatusCode::REQUEST_TIMEOUT
            }
            _ => false,
        }
    }

    /// Whether the server could not be reached at all: connecting failed (refused, no route,
    /// timed out), so nothing was sent.
    pub(crate) fn is_unreachable(&self) -> bool {
        matches!(self.inner.kind, Kind::Http)
            && self.inner.source.as_deref().is_some_and(|s| {
                s.is::<ConnectFailed>()
                    || s.downcast_ref::<hyper_util::client::legacy::Error>()
                        .is_some_and(hyper_util::client::legacy::Error::is_connect)
            })
    }

    /// The kind of [`mcp_transport::Error`] this error is reported as: the one place that maps
    /// what went wrong (HTTP statuses included) onto the transport's kinds.
    pub(crate) fn transport_kind(&self) -> ErrorKind {
        match self.inner.kind {
            Kind::Closed => ErrorKind::Closed,
            Kind::Timeout(_) => ErrorKind::Timeout,
            Kind::TooLarge { .. } => ErrorKind::MessageTooLarge,
            Kind::InvalidMessage => ErrorKind::InvalidMessage,
            Kind::Status { .. } | Kind::ContentType | Kind::HttpSse(_) | Kind::Initialize => {
                ErrorKind::Protocol
            }
            Kind::Unsupported(_) => ErrorKind::Unsupported,
            Kind::Http | Kind::Body | Kind::Auth | Kind::Builder => ErrorKind::Io,
        }
    }
}

/// How much of an error answer's body is kept, in bytes: enough for a JSON-RPC error or a
/// proxy's error page to say what is wrong, not so much that a large body costs memory.
pub const ERROR_BODY_PREFIX: usize = 1024;

impl From<Error> for mcp_transport::Error {
    fn from(err: Error) -> Self {
        mcp_transport::Error::new(err.transport_kind(), err)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind);
        if let Some(source) = &self.inner.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.kind {
            Kind::Builder => f.write_str("invalid client configuration"),
            Kind::Http => f.write_str("http request failed"),
            Kind::Body => f.write_str("failed to read the response body"),
            Kind::Timeout(Deadline::Request) => f.write_str("request timed out"),
            Kind::Timeout(Deadline::Close) => f.write_str("closing the session timed out"),
            Kind::Timeout(Deadline::Response) => f.write_str("no response in time"),
            Kind::Timeout(Deadline::Endpoint) => {
                f.write_str("timed out waiting for the endpoint event of the 2024-11-05 transport")
            }
            Kind::Status {
                status,
                body,
                session_expired,
            } => {
                if *session_expired {
                    write!(f, "session expired (server answered {status})")?;
                } else {
                    write!(f, "server answered {status}")?;
                }
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                Ok(())
            }
            Kind::ContentType => f.write_str("unexpected content type in a success answer"),
            Kind::TooLarge { limit } => write!(f, "message larger than the limit of {limit} bytes"),
            Kind::InvalidMessage => f.write_str("server sent an invalid json-rpc message"),
            Kind::Auth => f.write_str("authorization provider failed"),
            Kind::HttpSse(HttpSseFailure::Missing) => f.write_str(
                "event stream of the 2024-11-05 transport ended before its endpoint event",
            ),
            Kind::HttpSse(HttpSseFailure::Invalid) => {
                f.write_str("invalid endpoint of the 2024-11-05 transport")
            }
            Kind::HttpSse(HttpSseFailure::Foreign) => {
                f.write_str("endpoint of the 2024-11-05 transport is on another origin")
            }
            Kind::Unsupported(Unsupported::Initialize) => {
                f.write_str("the 2026-07-28 protocol the client is pinned to has no initialize")
            }
            Kind::Unsupported(Unsupported::Response) => {
                f.write_str("the client sends no responses in the 2026-07-28 protocol")
            }
            Kind::Unsupported(Unsupported::Params) => {
                f.write_str("cannot add _meta to params that are not an object")
            }
            Kind::Unsupported(Unsupported::Version) => {
                f.write_str("the _meta protocol version cannot be sent as a header")
            }
            Kind::Initialize => {
                f.write_str("the server did not accept the initialize sent for the application")
            }
            Kind::Closed => f.write_str("connection closed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Opening a connection to the server failed (refused, no route, timed out): nothing was sent.
#[derive(Debug)]
pub(crate) struct ConnectFailed(pub(crate) BoxError);

impl fmt::Display for ConnectFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connecting to the server failed")
    }
}

impl std::error::Error for ConnectFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lower_case_without_a_period() {
        let errors = [
            Error::new(Kind::Builder),
            Error::new(Kind::Http),
            Error::timeout(Deadline::Request),
            Error::timeout(Deadline::Close),
            Error::timeout(Deadline::Response),
            Error::new(Kind::TooLarge { limit: 8 }),
            Error::new(Kind::HttpSse(HttpSseFailure::Foreign)),
            Error::new(Kind::Unsupported(Unsupported::Initialize)),
            Error::new(Kind::Unsupported(Unsupported::Response)),
            Error::new(Kind::Unsupported(Unsupported::Params)),
            Error::new(Kind::Unsupported(Unsupported::Version)),
            Error::new(Kind::Initialize),
            Error::new(Kind::Closed),
        ];
        for err in errors {
            let m = err.to_string();
            assert!(!m.ends_with('.'), "{m}");
            assert_eq!(m, m.to_lowercase());
        }
    }

    #[test]
    fn status_errors_carry_status_and_body() {
        let err = Error::from_status(StatusCode::NOT_FOUND, "gone".into(), true);
        assert!(err.is_session_expired());
        assert_eq!(err.status(), Some(StatusCode::NOT_FOUND));
        assert_eq!(err.body(), Some("gone"));
        assert_eq!(
            err.to_string(),
            "session expired (server answered 404 Not Found): gone"
        );
        let t: mcp_transport::Error = err.into();
        assert_eq!(t.kind(), ErrorKind::Protocol);
        let inner = std::error::Error::source(&t).and_then(|s| s.downcast_ref::<Error>());
        assert!(inner.is_some_and(Error::is_session_expired));
    }

    #[test]
    fn kinds_map_onto_the_transport() {
        let kind = |k| Error::new(k).transport_kind();
        assert_eq!(kind(Kind::Closed), ErrorKind::Closed);
        assert_eq!(kind(Kind::Timeout(Deadline::Request)), ErrorKind::Timeout);
        assert_eq!(
            kind(Kind::TooLarge { limit: 1 }),
            ErrorKind::MessageTooLarge
        );
        assert_eq!(kind(Kind::ContentType), ErrorKind::Protocol);
        assert_eq!(kind(Kind::Http), ErrorKind::Io);
        assert_eq!(
            kind(Kind::Unsupported(Unsupported::Response)),
            ErrorKind::Unsupported
        );
        assert!(
            Error::from_status(StatusCode::SERVICE_UNAVAILABLE, String::new(), false)
                .is_transient()
        );
        assert!(
            !Error::from_status(StatusCode::METHOD_NOT_ALLOWED, String::new(), false)
                .is_transient()
        );
    }
}
