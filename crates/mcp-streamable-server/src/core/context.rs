//! What every session of a service shares: the configuration, the clock, the sessions, the
//! application's factory, and whether the service is shutting down.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::core::config::Config;
use crate::core::connection::ServerConnection;
use crate::core::error::Error;
use crate::core::sessions::Sessions;

/// The application: called with each new session's connection and the parts of the HTTP
/// request that started it.
pub(crate) type Factory = dyn Fn(ServerConnection, http::request::Parts) -> Pin<Box<dyn Future<Output = ()> + Send>>
    + Send
    + Sync;

pub(crate) struct Context {
    pub(crate) config: Config,
    pub(crate) sessions: Sessions,
    epoch: Instant,
    factory: Box<Factory>,
    shutting_down: AtomicBool,
}

impl Context {
    pub(crate) fn new(config: Config, factory: Box<Factory>) -> Self {
        Context {
            config,
            sessions: Sessions::default(),
            epoch: tokio::time::Instant::now().into_std(),
            factory,
            shutting_down: AtomicBool::new(false),
        }
    }

    /// Milliseconds since the service started, on tokio's clock (so paused-time tests see
    /// timeouts pass).
    pub(crate) fn now_ms(&self) -> u64 {
        let now = tokio::time::Instant::now().into_std();
        u64::try_from(now.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts the application for a new session.
    pub(crate) fn start(
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

    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// S23: refuses new work while the service shuts down, saying what is refused.
    pub(crate) fn refuse_when_shutting_down(&self, refused: &'static str) -> Result<(), Error> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown(refused));
        }
        Ok(())
    }
}
