//! The error of the adapter.

use std::fmt;

use mcp_transport::ErrorKind;

/// The error of an [`RmcpTransport`](crate::RmcpTransport): a transport error whose `Display`
/// carries its whole chain of causes, `protocol error: server answered 401 Unauthorized: ...`.
///
/// rmcp prints a transport's error with `Display` only (`Send message error Transport [...]
/// error: {error}, when send initialize request`) and never its `source()`, so an error whose
/// message leaves its cause to `source()`, as this project's transport errors do, would reach
/// an rmcp user as a bare "protocol error". For the same reason the causes are not repeated in
/// `source()`, which is `None`: a printer that walks the chain would print them twice. The
/// transport's own error, with its typed causes to downcast to, is [`get_ref`](Error::get_ref)
/// and [`into_inner`](Error::into_inner).
///
/// ```
/// use mcp_transport::ErrorKind;
///
/// let inner = mcp_transport::Error::new(ErrorKind::Protocol, "server answered 401 Unauthorized");
/// let err = mcp_rmcp::Error::from(inner);
/// assert_eq!(err.to_string(), "protocol error: server answered 401 Unauthorized");
/// assert_eq!(err.kind(), ErrorKind::Protocol);
/// ```
pub struct Error {
    inner: mcp_transport::Error,
}

impl Error {
    /// What kind of error the transport reported.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind()
    }

    /// The transport's error, whose `source()` has the typed cause (for Streamable HTTP, the
    /// client's error with its status and body).
    pub fn get_ref(&self) -> &mcp_transport::Error {
        &self.inner
    }

    /// Consumes the error, returning the transport's.
    pub fn into_inner(self) -> mcp_transport::Error {
        self.inner
    }
}

impl From<mcp_transport::Error> for Error {
    fn from(inner: mcp_transport::Error) -> Self {
        Error { inner }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_chain(&self.inner, f)
    }
}

impl std::error::Error for Error {}

/// `error: cause: cause's cause`, each message once.
pub(crate) fn write_chain(
    error: &(dyn std::error::Error + 'static),
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    write!(f, "{error}")?;
    let mut source = error.source();
    while let Some(cause) = source {
        write!(f, ": {cause}")?;
        source = cause.source();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Status;

    impl fmt::Display for Status {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("server answered 401 Unauthorized: invalid token")
        }
    }

    impl std::error::Error for Status {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&Io)
        }
    }

    #[derive(Debug)]
    struct Io;

    impl fmt::Display for Io {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection reset")
        }
    }

    impl std::error::Error for Io {}

    #[test]
    fn the_message_carries_every_cause_once() {
        let err = Error::from(mcp_transport::Error::new(ErrorKind::Protocol, Status));
        assert_eq!(
            err.to_string(),
            "protocol error: server answered 401 Unauthorized: invalid token: connection reset"
        );
        assert!(std::error::Error::source(&err).is_none());
        assert!(
            std::error::Error::source(err.get_ref())
                .is_some_and(|cause| cause.downcast_ref::<Status>().is_some())
        );
        assert_eq!(
            Error::from(mcp_transport::Error::closed()).to_string(),
            "connection closed"
        );
        assert!(err.into_inner().kind() == ErrorKind::Protocol);
    }
}
