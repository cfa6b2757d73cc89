//! The gateway, the crate's public face: it builds what the connections share, and the
//! service whose factory hands each connection to the code of its family.

use std::fmt;
use std::sync::Arc;

use mcp_streamable_server::{Config, Families, Mode, ServerConnection, StreamableHttpService};
use mcp_transport::Connection as _;

use crate::options::{Command, Options};
use crate::pool::Pool;
use crate::process::Children;
use crate::shared::Shared;
use crate::start::Starter;
use crate::{per_request, session};

/// A stdio MCP server served over Streamable HTTP: one child per session for session-based
/// clients, a warm pool for per-request (2026-07-28) clients. Cheap to clone.
///
/// ```no_run
/// use mcp_gateway::{Command, Gateway, Options};
/// use mcp_streamable_server::{Config, serve};
///
/// # async fn run() -> std::io::Result<()> {
/// let gateway = Gateway::new(Command::new("python3").arg("server.py"), Options::default());
/// let service = gateway.service(Config::default().max_sessions(100));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// serve::Options::default()
///     .path("/mcp")
///     .serve(listener, service, serve::terminated())
///     .await;
/// gateway.stop().await; // no child outlives the gateway
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl Gateway {
    /// A gateway running `command` for its clients.
    pub fn new(command: Command, options: Options) -> Self {
        let children = Children::new(options.grace());
        let shared = Shared {
            starter: Starter::new(command, children, options.max_line()),
            pool: Pool::new(options.pool()),
            options,
        };
        Gateway {
            shared: Arc::new(shared),
        }
    }

    /// The Streamable HTTP service relaying to the children, with `config` (its session cap
    /// bounds the children of sessions, its idle timeout ends them). The mode is always
    /// stateful: a child belongs to a session. Built within a tokio runtime, it starts the
    /// pool's children at once, unless `config` serves the session-based family only (nobody
    /// would use them).
    pub fn service(&self, config: Config) -> StreamableHttpService {
        let per_request = config.served_families() != Families::SessionOnly;
        if per_request && tokio::runtime::Handle::try_current().is_ok() {
            self.warm_pool();
        }
        let shared = Arc::clone(&self.shared);
        StreamableHttpService::new(config.mode(Mode::Stateful), move |conn, _parts| {
            serve(conn, Arc::clone(&shared))
        })
    }

    /// How many children are alive.
    pub fn children(&self) -> usize {
        self.shared.starter.children.len()
    }

    /// Stops every child (SIGTERM to its process group, SIGKILL after the grace) and returns
    /// once all were reaped: at shutdown, after the service.
    pub async fn stop(&self) {
        self.shared.starter.children.stop_all().await;
    }

    fn warm_pool(&self) {
        for index in 0..self.shared.pool.len() {
            let shared = Arc::clone(&self.shared);
            tokio::spawn(async move {
                if let Err(why) = shared.fill(index).await {
                    tracing::warn!(slot = index, error = %why, "a pool child did not start");
                }
            });
        }
    }
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("command", &self.shared.starter.command)
            .field("options", &self.shared.options)
            .field("children", &self.children())
            .finish()
    }
}

/// The factory: each connection to the code of its family.
async fn serve(conn: ServerConnection, shared: Arc<Shared>) {
    if conn.sender().version().is_per_request() {
        per_request::serve(conn, &shared).await;
    } else {
        session::serve(conn, &shared).await;
    }
}
