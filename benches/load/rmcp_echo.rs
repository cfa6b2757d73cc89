//! `rmcp-echo`: the official Rust SDK's Streamable HTTP server (`rmcp` 3.11.0, pinned) with the
//! same `echo` tool as our `echo_server` example, for the load benchmark to compare against.
//!
//! ```text
//! rmcp-echo [--addr 127.0.0.1:0] [--json-response] [--stateless]
//! ```
//!
//! By default it is stateful with SSE replies (`legacy_session_mode: true, json_response:
//! false`, rmcp's defaults otherwise: the in-memory `LocalSessionManager`, priming events, 15 s
//! keep-alive). It prints `listening on http://ADDR/mcp` first and serves MCP at `/mcp` over
//! HTTP/1.1 with `TCP_NODELAY` on every accepted socket (without it, Nagle's algorithm holds
//! small SSE writes back and rmcp falls to a few hundred requests per second).
//!
//! The tool is written by hand rather than with rmcp's macros: the same work as ours (read the
//! `text` argument, return it as text content), and no schema validation on the way.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use hyper_util::rt::TokioIo;
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

struct Options {
    addr: SocketAddr,
    json_response: bool,
    stateless: bool,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut options = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        json_response: false,
        stateless: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => {
                let value = args.next().context("--addr needs a value")?;
                options.addr = value
                    .parse()
                    .with_context(|| format!("bad --addr {value:?}"))?;
            }
            "--json-response" => options.json_response = true,
            "--stateless" => options.stateless = true,
            "-h" | "--help" => {
                println!("usage: rmcp-echo [--addr IP:PORT] [--json-response] [--stateless]");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = parse_args()?;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.json_response);
    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        config,
    ));

    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
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
