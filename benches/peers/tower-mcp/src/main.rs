//! `tower-mcp-echo`: tower-mcp's Streamable HTTP server (`tower-mcp` 0.25.0, pinned) with the
//! same `echo` tool as our `echo_server` example, for the load benchmark to compare against.
//!
//! ```text
//! tower-mcp-echo [--addr 127.0.0.1:0] [--json-response]
//! ```
//!
//! By default it replies in SSE (`sse_responses(true)`), with tower-mcp's defaults otherwise:
//! sessions from `initialize` (optional, not required), its in-memory event store (a ring of
//! 1,000 events per session, resumable streams), both protocol families (2025-03-26 to
//! 2025-11-25 with sessions, 2026-07-28 per request). It prints `listening on http://ADDR/`
//! first: tower-mcp serves MCP at `/`, not `/mcp`. It is served by hyper over HTTP/1.1 with
//! `TCP_NODELAY` on every accepted socket, like `rmcp-echo`, rather than by
//! `HttpTransport::serve` (axum's server, which does not set it).
//!
//! The tool takes its arguments raw (`RawArgs`) with a hand-written schema, as `rmcp-echo`
//! does: the same work as ours (read the `text` argument, return it as text content).

use std::net::SocketAddr;

use clap::Parser as _;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tower_mcp::extract::RawArgs;
use tower_mcp::{CallToolResult, HttpTransport, McpRouter, ToolBuilder};

/// tower-mcp's Streamable HTTP server with the same `echo` tool as ours.
#[derive(Debug, clap::Parser)]
#[command(name = "tower-mcp-echo")]
struct Args {
    /// Where to listen; port 0 picks a free one.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Replies in `application/json` (tower-mcp's default) rather than SSE streams.
    #[arg(long)]
    json_response: bool,
}

/// The router: one tool, `echo {text}`.
fn router() -> McpRouter {
    let echo = ToolBuilder::new("echo")
        .description("Returns the text it is given.")
        .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
        .extractor_handler((), |RawArgs(args): RawArgs| async move {
            let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
            Ok(CallToolResult::text(text))
        })
        .build();
    McpRouter::new()
        .server_info("tower-mcp-echo", env!("CARGO_PKG_VERSION"))
        .tool(echo)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Args::parse();
    let app = HttpTransport::new(router())
        .sse_responses(!options.json_response)
        .into_router();
    let service = TowerToHyperService::new(app);

    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    println!("listening on http://{}/", listener.local_addr()?);
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of file descriptors, most likely: let a connection end, then go on.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        tcp.set_nodelay(true)?;
        let service = service.clone();
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}
