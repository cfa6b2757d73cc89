//! The error of the crate: one opaque type, asked what happened (`is_timeout`), so that what it
//! holds can change without breaking anyone.

use std::fmt;

/// A boxed error, the source of an [`Error`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a request brought no answer, or a client or connector could not be set up.
///
/// [`HttpClient`](crate::HttpClient) implementations of their own make theirs with
/// [`Error::request`], [`Error::timeout`] and [`Error::body_too_large`].
pub struct Error {
    kind: Kind,
    source: Option<BoxError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Connecting, sending or reading failed; the source says how.
    Request,
    /// The exchange took longer than allowed.
    Timeout,
    /// The answer's body was larger than allowed.
    BodyTooLarge { limit: usize },
    /// The TLS configuration could not be made.
    Tls,
    /// The request cannot be sent: not an absolute `http` or `https` URL.
    Url,
}

impl Error {
    /// Connecting, sending or reading failed because of `source`.
    pub fn request(source: impl Into<BoxError>) -> Error {
        Error::new(Kind::Request).with(source)
    }

    /// The exchange took longer than allowed.
    pub fn timeout() -> Error {
        Error::new(Kind::Timeout)
    }

    /// The answer's body was larger than `limit` bytes.
    pub fn body_too_large(limit: usize) -> Error {
        Error::new(Kind::BodyTooLarge { limit })
    }

    #[cfg(feature = "rustls")]
    pub(crate) fn tls(source: impl Into<BoxError>) -> Error {
        Error::new(Kind::Tls).with(source)
    }

    pub(crate) fn url() -> Error {
        Error::new(Kind::Url)
    }

    fn new(kind: Kind) -> Error {
        Error { kind, source: None }
    }

    fn with(mut self, source: impl Into<BoxError>) -> Error {
        self.source = Some(source.into());
        self
    }

    /// Whether the exchange took longer than allowed.
    pub fn is_timeout(&self) -> bool {
        self.kind == Kind::Timeout
    }

    /// Whether the answer's body was larger than allowed.
    pub fn is_body_too_large(&self) -> bool {
        matches!(self.kind, Kind::BodyTooLarge { .. })
    }

    /// Whether the TLS configuration could not be made (no request was sent).
    pub fn is_tls_setup(&self) -> bool {
        self.kind == Kind::Tls
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Error");
        debug.field("kind", &self.kind);
        if let Some(source) = &self.source {
            debug.field("source", source);
        }
        debug.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Request => f.write_str("http request failed"),
            Kind::Timeout => f.write_str("http request timed out"),
            Kind::BodyTooLarge { limit } => write!(f, "http body larger than {limit} bytes"),
            Kind::Tls => f.write_str("tls client could not be set up"),
            Kind::Url => f.write_str("not an absolute http or https url"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lower_case_without_a_period_and_kinds_answer() {
        let errors = [
            Error::request("refused"),
            Error::timeout(),
            Error::body_too_large(7),
            Error::new(Kind::Tls).with("no provider"),
            Error::url(),
        ];
        for error in &errors {
            let text = error.to_string();
            assert!(!text.ends_with('.'), "{text}");
            assert_eq!(text, text.to_lowercase(), "{text}");
        }
        assert_eq!(errors[2].to_string(), "http body larger than 7 bytes");
        assert!(errors[1].is_timeout() && !errors[0].is_timeout());
        assert!(errors[2].is_body_too_large() && errors[3].is_tls_setup());
        let source = std::error::Error::source(&errors[0]).unwrap();
        assert_eq!(source.to_string(), "refused");
    }
}
