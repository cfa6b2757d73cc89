//! What can go wrong installing the exporters or serving the metrics.

use std::fmt;
use std::net::SocketAddr;

/// Why [`install`](crate::install) or [`Prometheus::serve`](crate::Prometheus::serve) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` names an encoding not built in (gRPC, or a typo).
    Protocol(String),
    /// An exporter could not be built: which one, and why.
    Exporter(&'static str, Box<dyn std::error::Error + Send + Sync>),
    /// The metrics' address could not be bound.
    Bind(SocketAddr, std::io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Protocol(protocol) => write!(
                f,
                "{}={protocol} is not served: http/protobuf (the default) or http/json",
                crate::OTLP_PROTOCOL
            ),
            Error::Exporter(which, e) => write!(f, "the {which}: {e}"),
            Error::Bind(addr, e) => write!(f, "binding the metrics' address {addr}: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Protocol(_) => None,
            Error::Exporter(_, e) => Some(e.as_ref()),
            Error::Bind(_, e) => Some(e),
        }
    }
}
