//! `mcp-flood`: our server (`mcp-streamable-server`, configured like the `echo_server`
//! example's default: stateful, SSE replies, in-memory event store) with one tool made for the
//! load benchmark's standalone-stream check.
//!
//! ```text
//! mcp-flood [--addr 127.0.0.1:0]
//! ```
//!
//! `flood {from, count}` sends `count` `notifications/message` unrelated to any request (so
//! they travel on the session's standalone GET stream), the `data` of each its sequence
//! number from `from` on, then returns "flooded". The echo server's `broadcast` sends one
//! notification per `tools/call`, which would make a million notifications a million calls:
//! this one makes them thousands, and the check measures the stream, not the calls.
//!
//! Unlike the echo server, each session drops the `http::request::Parts` it is started with
//! right away (see `session`). It prints `listening on http://ADDR/mcp` first and serves MCP
//! at every path, over HTTP/1.1.

use mcp_jsonrpc::{
    ErrorObject, Message, Notification, Request as RpcRequest, Response, code, to_raw_value,
};
use mcp_streamable_server::{
    Config, InMemoryEventStore, ServerConnection, ServerSender, StreamableHttpService,
};
use mcp_transport::{Connection, Sender};
use serde_json::{Value, json};

use super::Listen;

async fn session(mut conn: ServerConnection, parts: http::request::Parts) {
    // Let go of the `initialize` request's parts at once: their header values are slices of
    // the connection's read buffer, and holding them for the session's life would hold that
    // buffer (8 to 16 KiB) too. The idle-memory check measures this server beside the echo
    // server, which keeps them.
    drop(parts);
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(request) = message {
            let sender = sender.clone();
            tokio::spawn(async move { answer(&sender, request).await });
        }
    }
}

async fn answer(sender: &ServerSender, request: RpcRequest) {
    let params: Value = request.parse_params().unwrap_or(Value::Null);
    let result = match request.method.as_str() {
        "initialize" => Ok(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "mcp-flood", "version": "0.0.0"},
        })),
        "tools/call" if params["name"] == "flood" => flood(sender, &params["arguments"])
            .await
            .map(|()| json!({"content": [{"type": "text", "text": "flooded"}]})),
        other => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("not served here: {other}"),
        )),
    };
    let response = match result.and_then(|v| {
        to_raw_value(&v).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
    }) {
        Ok(raw) => Response::success(request.id, raw),
        Err(error) => Response::error(Some(request.id), error),
    };
    let _ = sender.send(response.into()).await;
}

async fn flood(sender: &ServerSender, args: &Value) -> Result<(), ErrorObject> {
    let from = args["from"].as_u64().unwrap_or(0);
    let count = args["count"].as_u64().unwrap_or(0).min(100_000);
    for seq in from..from + count {
        let params = to_raw_value(&json!({"level": "info", "data": seq}))
            .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
        let note = Notification::new("notifications/message", Some(params));
        sender
            .send(note.into())
            .await
            .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, format!("transport: {e}")))?;
    }
    Ok(())
}

/// Our server with a `flood` tool, for the standalone-stream check.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-flood")]
pub struct Args {
    #[command(flatten)]
    /// Where to listen.
    pub listen: Listen,
}

/// Runs `mcp-flood`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let config = Config::default().event_store(InMemoryEventStore::default());
    super::http1(&args.listen, StreamableHttpService::new(config, session))
}
