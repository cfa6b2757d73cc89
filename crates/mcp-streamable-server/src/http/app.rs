//! The application behind the endpoint: the factory each new session's connection is handed
//! to, with the parts of the HTTP request that started it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::cluster::Nodes;
use crate::core::Shared;
use crate::core::session::connection::ServerConnection;

/// The application: called with each new session's connection and the parts of the HTTP
/// request that started it.
pub(crate) type Factory = dyn Fn(ServerConnection, http::request::Parts) -> Pin<Box<dyn Future<Output = ()> + Send>>
    + Send
    + Sync;

/// What the HTTP edge serves: the session core, the application it starts sessions of, and,
/// with a cluster, what it keeps to reach the other nodes.
pub(crate) struct Server {
    pub(crate) shared: Arc<Shared>,
    factory: Box<Factory>,
    pub(crate) nodes: Option<Nodes>,
}

impl Server {
    pub(crate) fn new(shared: Shared, factory: Box<Factory>) -> Self {
        let nodes = shared.config.cluster.clone().map(Nodes::new);
        Server {
            shared: Arc::new(shared),
            factory,
            nodes,
        }
    }

    /// Starts the application of a new session, handing the factory a copy of the parts of
    /// the request that started it, [detached](detach) from the connection's read buffer; returns
    /// them, for the request's messages.
    pub(crate) fn start(
        &self,
        connection: ServerConnection,
        parts: http::request::Parts,
        span: tracing::Span,
    ) -> Arc<http::request::Parts> {
        self.spawn(connection, detach(parts.clone()), span);
        Arc::new(parts)
    }

    /// [`start`](Self::start) for a connection that lives one POST (stateless, or a
    /// per-request request): its parts go with the request, so holding the read buffer that
    /// long costs nothing, and copying them out of it would cost an allocation a header.
    pub(crate) fn start_transient(
        &self,
        connection: ServerConnection,
        parts: http::request::Parts,
        span: tracing::Span,
    ) -> Arc<http::request::Parts> {
        self.spawn(connection, parts.clone(), span);
        Arc::new(parts)
    }

    fn spawn(
        &self,
        connection: ServerConnection,
        parts: http::request::Parts,
        span: tracing::Span,
    ) {
        tokio::spawn(tracing::Instrument::instrument(
            (self.factory)(connection, parts),
            span,
        ));
    }
}

/// The request parts, with header values and URI copied out of the connection's read buffer.
///
/// hyper hands out header values and the URI as slices of the buffer it read the request
/// into; an application that keeps the parts for its session (as most do, to read them later)
/// would keep that whole buffer, about 16 KiB, alive per session. The copy is a few hundred
/// bytes, once per session.
fn detach(mut parts: http::request::Parts) -> http::request::Parts {
    for value in parts.headers.values_mut() {
        if let Ok(copy) = http::HeaderValue::from_bytes(value.as_bytes()) {
            let sensitive = value.is_sensitive();
            *value = copy;
            value.set_sensitive(sensitive);
        }
    }
    if let Ok(uri) = http::Uri::try_from(parts.uri.to_string()) {
        parts.uri = uri;
    }
    parts
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn detached_parts_do_not_point_into_the_read_buffer() {
        let buffer = Bytes::from_static(b"POST /mcp?x=1 HTTP/1.1\r\nauthorization: Bearer t\r\n");
        let at = |needle: &str| {
            let start = buffer
                .windows(needle.len())
                .position(|w| w == needle.as_bytes())
                .unwrap();
            buffer.slice(start..start + needle.len())
        };
        let value = http::HeaderValue::from_maybe_shared(at("Bearer t")).unwrap();
        let uri = http::Uri::from_maybe_shared(at("/mcp?x=1")).unwrap();
        let (mut parts, ()) = http::Request::post(uri).body(()).unwrap().into_parts();
        parts.headers.insert("authorization", value);
        let buffer_range = buffer.as_ptr_range();
        let detached = detach(parts);
        let header = &detached.headers["authorization"];
        assert_eq!(header, "Bearer t");
        assert!(!buffer_range.contains(&header.as_bytes().as_ptr()));
        assert_eq!(detached.uri, "/mcp?x=1");
        let path = detached.uri.path_and_query().unwrap().as_str();
        assert!(!buffer_range.contains(&path.as_ptr()));
    }
}
