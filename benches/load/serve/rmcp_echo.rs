//! `rmcp-echo`: the official Rust SDK's Streamable HTTP server (`rmcp` 3.11.0, pinned) with the
//! same `echo` tool as our `echo_server` example, for the load benchmark to compare against.
//!
//! ```text
//! rmcp-echo [--addr 127.0.0.1:0] [--json-response] [--stateless] [--on-ours]
//! ```
//!
//! By default it is stateful with SSE replies (`legacy_session_mode: true, json_response:
//! false`, rmcp's defaults otherwise: the in-memory `LocalSessionManager`, priming events, 15 s
//! keep-alive). It prints `listening on http://ADDR/mcp` first and serves MCP at `/mcp` over
//! HTTP/1.1 with `TCP_NODELAY` on every accepted socket (without it, Nagle's algorithm holds
//! small SSE writes back and rmcp falls to a few hundred requests per second).
//!
//! With `--on-ours` the same handler is served by our Streamable HTTP server through
//! `mcp-rmcp`, one rmcp service per session, configured as `echo_server` is by default
//! (stateful, SSE replies, in-memory event store) and served by the server crate's `serve`:
//! what an rmcp user sees on switching transports, and issue 32's row.
//!
//! The tool is written by hand rather than with rmcp's macros: the same work as ours (read the
//! `text` argument, return it as text content), and no schema validation on the way.

use std::sync::Arc;

use hyper_util::service::TowerToHyperService;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::Listen;

/// The server: one tool, `echo {text}`.
#[derive(Debug, Clone, Copy)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-echo", env!("CARGO_PKG_VERSION")))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|args| args.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!("a JSON object literal")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Returns the text it is given.",
            Arc::new(schema),
        )]))
    }
}

/// rmcp 3.11.0's Streamable HTTP server with the same `echo` tool as ours.
#[derive(Debug, clap::Parser)]
#[command(name = "rmcp-echo")]
pub struct Args {
    #[command(flatten)]
    /// Where to listen.
    pub listen: Listen,
    /// Replies in `application/json` rather than SSE streams.
    #[arg(long)]
    pub json_response: bool,
    /// No sessions (`legacy_session_mode: false`).
    #[arg(long)]
    pub stateless: bool,
    /// Serves the handler with our server through `mcp-rmcp` rather than with rmcp's own.
    #[arg(long, conflicts_with_all = ["json_response", "stateless"])]
    pub on_ours: bool,
}

/// Runs `rmcp-echo`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.on_ours {
        return on_ours(&args.listen);
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!args.stateless)
        .with_json_response(args.json_response);
    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    super::http1(&args.listen, service)
}

/// Serves [`Echo`] through `mcp-rmcp` with our server, configured as `echo_server` is by
/// default, until SIGINT or SIGTERM.
fn on_ours(listen: &Listen) -> anyhow::Result<()> {
    use mcp_streamable_server::{Config, InMemoryEventStore, StreamableHttpService};
    use rmcp::ServiceExt as _;

    let config = Config::default().event_store(InMemoryEventStore::default());
    let service = StreamableHttpService::new(config, |conn, _parts| async move {
        if let Ok(running) = Echo.serve(mcp_rmcp::server(conn)).await {
            let _ = running.waiting().await;
        }
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(support::serve::serve(listen.addr, service))
}
