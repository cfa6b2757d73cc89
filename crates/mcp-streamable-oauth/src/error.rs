//! The crate's one error type: a kind to ask about, and the cause in `source()`.

use std::fmt;

/// A boxed error from a store, an interaction or a transport below.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong, as [`Error::kind`] tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A request to the resource or the authorization server failed before an answer came.
    Http,
    /// No usable metadata: neither the protected resource's nor the authorization server's.
    Discovery,
    /// A metadata document or an authorization response named another issuer than the one
    /// asked (RFC 8414, section 3.3; RFC 9207).
    IssuerMismatch,
    /// The protected resource metadata names another resource than the server connected to
    /// (RFC 9728, section 3.3).
    ResourceMismatch,
    /// No client identity fits: no pre-registered client, no metadata document and no
    /// registration endpoint, or the registration was refused.
    Registration,
    /// The authorization step failed: the user or the server refused, the `state` did not
    /// match, or the redirect never came.
    Authorization,
    /// The token endpoint refused the grant.
    Token,
    /// The server kept asking for more scope: the step-up limit was reached.
    StepUpLimit,
    /// The provider was configured wrongly (a bad URL or key).
    Config,
    /// The token store failed.
    Store,
}

/// An error of the OAuth provider.
pub struct Error {
    kind: ErrorKind,
    detail: Option<String>,
    source: Option<BoxError>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error {
            kind,
            detail: None,
            source: None,
        }
    }

    /// Adds a short, secret-free word on what was refused (an OAuth error code, a status).
    pub(crate) fn detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = Some(detail.into());
        self
    }

    pub(crate) fn with(mut self, source: impl Into<BoxError>) -> Error {
        self.source = Some(source.into());
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn detail_text(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    fn message(&self) -> &'static str {
        match self.kind {
            ErrorKind::Http => "request to the server failed",
            ErrorKind::Discovery => "authorization metadata not found",
            ErrorKind::IssuerMismatch => "issuer does not match the one asked",
            ErrorKind::ResourceMismatch => "protected resource metadata names another resource",
            ErrorKind::Registration => "no client identity for the authorization server",
            ErrorKind::Authorization => "authorization failed",
            ErrorKind::Token => "token request refused",
            ErrorKind::StepUpLimit => "server keeps asking for more scope",
            ErrorKind::Config => "invalid OAuth configuration",
            ErrorKind::Store => "token store failed",
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("detail", &self.detail)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())?;
        match &self.detail {
            Some(detail) => write!(f, " ({detail})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}
