//! An MCP server the way an application writes one: tools declared with rmcp's `#[tool]`
//! macros, served over this project's Streamable HTTP transport inside an axum router, with a
//! health route, a bearer-token check, resumable streams and graceful shutdown.
//!
//! ```text
//! MCP_BEARER_TOKEN=secret cargo run --example rmcp_axum -- [--addr 127.0.0.1:8080] \
//!     [--allowed-host mcp.example.com]... [--allowed-origin https://app.example.com]...
//! ```
//!
//! Every flag can be set by an environment variable instead, `MCP_` and the flag's name in
//! upper snake case (`MCP_ADDR`, `MCP_ALLOWED_HOST`, `MCP_ALLOWED_ORIGIN`); `--help` lists them.
//!
//! It prints `listening on http://ADDR/mcp` first (port 0 picks a free port), then serves:
//!
//! - `GET /healthz`: `ok`, without a token, for a load balancer's health check;
//! - `/mcp`: MCP (both families of the protocol, sessions and 2026-07-28) for requests whose
//!   `Authorization` is `Bearer $MCP_BEARER_TOKEN`; any other request gets 401 with
//!   `WWW-Authenticate: Bearer`. A static shared token is all this example checks: for OAuth
//!   2.1 with protected resource metadata, as the MCP specification describes it, put
//!   `mcp-streamable-auth`'s guard in front instead (README, "Protected servers").
//!
//! The tools: `echo {text}` returns its text; `add {a, b}` returns the sum; `count {}` adds one
//! to a counter shared by every session and returns it.
//!
//! Streams are resumable (an in-memory event store): a client that loses a stream resumes it
//! with `Last-Event-ID`. The server answers only the `Host` names it is told (`--allowed-host`,
//! or `--host`, which may repeat) besides loopback ones, against DNS rebinding; behind a
//! reverse proxy, list the public name. Browser pages are answered when served from loopback,
//! or from the origins `--allowed-origin` lists in their place. Ctrl-C or SIGTERM shuts down
//! gracefully through `serve::shutdown_signal`: sessions end, streams close, requests in
//! flight get `SHUTDOWN_GRACE`, then axum drains the connections.
//!
//! axum serves with hyper's defaults: no header or body read timeout, no connection cap. The
//! other example servers use the server crate's `serve`, which sets them; behind axum, a
//! reverse proxy in front is where they go.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clap::Parser as _;
use mcp_streamable_http::http::{HeaderValue, StatusCode, header};
use mcp_streamable_http::rmcp_adapter;
use mcp_streamable_http::server::serve::shutdown_signal;
use mcp_streamable_http::server::{Config, InMemoryEventStore, StreamableHttpService};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use support::cli::Allowed;

/// How long requests in flight get to finish once Ctrl-C is pressed or SIGTERM comes.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where the server listens unless told: loopback, on the port the README's commands use.
const ADDR: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// The environment variable holding the bearer token clients must present.
const TOKEN_VAR: &str = "MCP_BEARER_TOKEN";

/// The MCP application: its tools, and the counter they share across sessions.
#[derive(Clone)]
struct Tools {
    count: Arc<AtomicU64>,
    /// Built once per session and read by the code `#[tool_handler]` generates (by default it
    /// would build the router anew for every request).
    tool_router: ToolRouter<Tools>,
}

/// The arguments of `echo`.
#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct EchoArgs {
    /// The text to return.
    text: String,
}

/// The arguments of `add`.
#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct AddArgs {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
}

#[tool_router]
impl Tools {
    fn new(count: Arc<AtomicU64>) -> Tools {
        Tools {
            count,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Returns the text it is given.")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Returns the sum of two integers.")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }

    #[tool(description = "Adds one to a counter shared by every session and returns it.")]
    async fn count(&self) -> String {
        (self.count.fetch_add(1, Ordering::Relaxed) + 1).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        // rmcp refuses the methods of capabilities not listed here (-32601).
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info
    }
}

/// An MCP server with rmcp's tool macros inside an axum router. Clients must present
/// `Authorization: Bearer $MCP_BEARER_TOKEN`; every flag can also be set by the environment
/// variable shown beside it.
#[derive(Debug, clap::Parser)]
#[command(name = "rmcp_axum")]
struct Args {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, env = "MCP_ADDR", default_value_t = ADDR)]
    addr: SocketAddr,
    #[command(flatten)]
    allowed: Allowed,
    #[command(flatten)]
    logs: mcp_streamable_telemetry::Logs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.logs.init();
    let token = std::env::var(TOKEN_VAR)
        .ok()
        .filter(|t| !t.is_empty())
        .with_context(|| format!("set {TOKEN_VAR} to the token clients must present"))?;
    let expected = HeaderValue::try_from(format!("Bearer {token}"))
        .with_context(|| format!("{TOKEN_VAR} must be visible ASCII"))?;

    let config = args
        .allowed
        .apply(Config::default().event_store(InMemoryEventStore::default()));
    let count = Arc::new(AtomicU64::new(0));
    // One rmcp service per session, over the session's connection.
    let mcp = StreamableHttpService::new(config, move |conn, _parts| {
        let tools = Tools::new(Arc::clone(&count));
        async move {
            match tools.serve(rmcp_adapter::server(conn)).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(error) => tracing::debug!(%error, "the session ended before it started"),
            }
        }
    });

    let app = Router::new()
        .route_service("/mcp", mcp.clone())
        .layer(middleware::from_fn_with_state(Arc::new(expected), bearer))
        // After the layer: the health check needs no token.
        .route("/healthz", get(|| async { "ok" }));

    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // SIGINT (Ctrl-C) or SIGTERM, what service managers send.
    // `terminated` logs which signal came.
    let stop = mcp_streamable_http::server::serve::terminated();
    // axum's graceful shutdown waits for every connection to finish, and a connection holding
    // an SSE stream (a client's standalone GET stream) never does by itself: with the signal
    // alone it would wait forever. `shutdown_signal` first ends the MCP sessions and their
    // streams, then lets axum stop accepting and drain the rest.
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal(mcp, SHUTDOWN_GRACE, stop))
        .await?;
    Ok(())
}

/// Lets through the requests that carry the expected `Authorization`; 401 for the others.
async fn bearer(
    State(expected): State<Arc<HeaderValue>>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request.headers().get(header::AUTHORIZATION);
    if presented.is_some_and(|value| same(value.as_bytes(), expected.as_bytes())) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a valid bearer token is required\n",
    )
        .into_response()
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only, so that the
/// answer's timing does not tell how much of a guessed token was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
