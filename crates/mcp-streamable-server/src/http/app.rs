//! The application behind the endpoint: the factory each new session's connection is handed
//! to, with the parts of the HTTP request that started it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::core::Context;
use crate::core::connection::ServerConnection;
use crate::http::relay::Relay;

/// The application: called with each new session's connection and the parts of the HTTP
/// request that started it.
pub(crate) type Factory = dyn Fn(ServerConnection, http::request::Parts) -> Pin<Box<dyn Future<Output = ()> + Send>>
    + Send
    + Sync;

/// What the HTTP edge serves: the session core, and the application it starts sessions of.
pub(crate) struct Server {
    pub(crate) ctx: Arc<Context>,
    factory: Box<Factory>,
    /// The streams relayed to and from other nodes, with a cluster.
    pub(crate) relay: Relay,
}

impl Server {
    pub(crate) fn new(ctx: Context, factory: Box<Factory>) -> Self {
        Server {
            ctx: Arc::new(ctx),
            factory,
            relay: Relay::default(),
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
