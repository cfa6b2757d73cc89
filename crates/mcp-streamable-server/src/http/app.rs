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
    /// the request that started it; returns them, for the request's messages.
    pub(crate) fn start(
        &self,
        connection: ServerConnection,
        parts: http::request::Parts,
        span: tracing::Span,
    ) -> Arc<http::request::Parts> {
        tokio::spawn(tracing::Instrument::instrument(
            (self.factory)(connection, parts.clone()),
            span,
        ));
        Arc::new(parts)
    }
}
