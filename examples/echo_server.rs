//! A small but real MCP server over the Streamable HTTP transport, for trying the transport and
//! for the interop suites.
//!
//! ```text
//! cargo run --example echo_server -- --addr 127.0.0.1:8080 [--json-response] [--stateless] [--no-event-store]
//! ```
//!
//! It prints `listening on http://ADDR/mcp` first (port 0 picks a free port) and serves MCP at
//! `/mcp`, both families on one endpoint: sessions through `initialize` (2025-03-26,
//! 2025-06-18, 2025-11-25) with `ping`, and the per-request protocol of 2026-07-28 (each
//! request carrying its `_meta`) with `server/discover`; `tools/list` and `tools/call` in both,
//! with tools that exercise every path of the transport:
//!
//! - `echo {text}`: returns the text;
//! - `progress {steps, delay_ms}`: with `_meta.progressToken`, sends `steps` progress
//!   notifications on the request's stream, then returns "done";
//! - `sleep {ms}`: returns after `ms` milliseconds;
//! - `ping_client {}`: sends a `ping` request to the client on the request's stream, waits for
//!   the answer, returns "pong" (sessions only: a 2026-07-28 server asks nothing of its
//!   clients, and the tool answers with the transport's refusal);
//! - `broadcast {text}`: sends a `notifications/message` unrelated to any request (it travels on
//!   the standalone GET stream), returns "sent" (sessions only, likewise).
//!
//! Streams are resumable by default (an in-memory event store). Ctrl-C shuts down gracefully.
//! `RUST_LOG=debug` shows what the transport does.

#[path = "support/serve.rs"]
mod serve;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_jsonrpc::{
    ErrorObject, Id, Message, Notification, Request as RpcRequest, Response as RpcResponse, code,
    to_raw_value,
};
use mcp_streamable_server::{
    Config, InMemoryEventStore, MODERN_VERSIONS, ServerConnection, ServerSender,
    StreamableHttpService,
};
use mcp_transport::{Connection, Outgoing, Sender};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The protocol revisions this server speaks, newest last.
const VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// How long `ping_client` waits for the client's answer.
const CLIENT_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

struct Options {
    addr: SocketAddr,
    json_response: bool,
    stateless: bool,
    event_store: bool,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut options = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
        json_response: false,
        stateless: false,
        event_store: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => {
                let value = args
                    .next()
                    .context("--addr needs a value, e.g. 127.0.0.1:0")?;
                options.addr = value
                    .parse()
                    .with_context(|| format!("bad --addr {value:?}"))?;
            }
            "--json-response" => options.json_response = true,
            "--stateless" => options.stateless = true,
            "--no-event-store" => options.event_store = false,
            "-h" | "--help" => {
                println!(
                    "usage: echo_server [--addr IP:PORT] [--json-response] [--stateless] [--no-event-store]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let options = parse_args()?;
    let mut config = Config::default().json_response(options.json_response);
    if options.stateless {
        config = config.stateless();
    }
    if options.event_store && !options.stateless {
        config = config.event_store(InMemoryEventStore::default());
    }
    let service = StreamableHttpService::new(config, session);

    serve::serve(options.addr, service).await
}

/// Requests this server sent to the client, waiting for the client's answer.
type Pending = Arc<Mutex<HashMap<Id, oneshot::Sender<RpcResponse>>>>;

/// Runs one session: reads the client's messages and answers each request on its own task.
async fn session(mut conn: ServerConnection, parts: http::request::Parts) {
    // Nothing here reads the request that started the session: let its headers go now, not
    // when the session ends (an `async fn` keeps its arguments, used or not, until it returns).
    drop(parts);
    let sender = conn.sender();
    let pending: Pending = Arc::default();
    while let Ok(Some(message)) = conn.recv().await {
        match message {
            Message::Request(request) => {
                let (sender, pending) = (sender.clone(), Arc::clone(&pending));
                tokio::spawn(async move { answer(&sender, &pending, request).await });
            }
            Message::Response(response) => {
                let waiting = response
                    .id()
                    .and_then(|id| pending.lock().unwrap().remove(id));
                if let Some(tx) = waiting {
                    let _ = tx.send(response);
                }
            }
            // notifications/initialized, notifications/cancelled...: nothing to do.
            Message::Notification(_) => {}
        }
    }
}

async fn answer(sender: &ServerSender, pending: &Pending, request: RpcRequest) {
    let params: Value = request.parse_params().unwrap_or(Value::Null);
    // A connection of the per-request family (2026-07-28) serves this one request; its
    // results say they are complete, and lists and discovery say how long they may be cached.
    let modern = sender.protocol_version() >= MODERN_VERSIONS[0];
    let result = match (request.method.as_str(), modern) {
        ("initialize", false) => Ok(initialize_result(&params)),
        ("ping", false) => Ok(json!({})),
        ("server/discover", true) => Ok(discover_result()),
        ("tools/list", _) => Ok(tools()),
        ("tools/call", _) => call_tool(sender, pending, &request, &params).await,
        (other, _) => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    };
    let result = match result {
        Ok(mut value) if modern => {
            value["resultType"] = json!("complete");
            if matches!(request.method.as_str(), "tools/list" | "server/discover") {
                value["ttlMs"] = json!(0);
                value["cacheScope"] = json!("public");
            }
            Ok(value)
        }
        other => other,
    };
    let response = match result.and_then(|v| {
        to_raw_value(&v).map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
    }) {
        Ok(raw) => RpcResponse::success(request.id, raw),
        Err(error) => RpcResponse::error(Some(request.id), error),
    };
    if let Err(err) = sender.send(response.into()).await {
        tracing::debug!(error = %err, "could not answer: the session ended");
    }
}

fn initialize_result(params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or_default();
    let version = VERSIONS
        .iter()
        .find(|v| **v == asked)
        .unwrap_or(&VERSIONS[2]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}, "logging": {}},
        "serverInfo": {"name": "echo_server", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// What `server/discover` tells a 2026-07-28 client: the versions served, of both families.
fn discover_result() -> Value {
    let mut versions: Vec<&str> = MODERN_VERSIONS.iter().chain(&VERSIONS).copied().collect();
    versions.sort_unstable_by(|a, b| b.cmp(a));
    json!({
        "supportedVersions": versions,
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "echo_server", "version": env!("CARGO_PKG_VERSION")}},
    })
}

fn tools() -> Value {
    let tool = |name: &str, description: &str, properties: Value| json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}});
    json!({"tools": [
        tool("echo", "Returns the text it is given.", json!({"text": {"type": "string"}})),
        tool("progress", "Sends progress notifications, then returns \"done\".", json!({"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}})),
        tool("sleep", "Returns after a delay.", json!({"ms": {"type": "integer"}})),
        tool("ping_client", "Pings the client and returns \"pong\" when it answers.", json!({})),
        tool("broadcast", "Sends a log message on the standalone stream.", json!({"text": {"type": "string"}})),
    ]})
}

fn text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

async fn call_tool(
    sender: &ServerSender,
    pending: &Pending,
    request: &RpcRequest,
    params: &Value,
) -> Result<Value, ErrorObject> {
    let args = &params["arguments"];
    let failed = |e: mcp_transport::Error| {
        ErrorObject::new(code::INTERNAL_ERROR, format!("transport: {}", chain(&e)))
    };
    match params["name"].as_str().unwrap_or_default() {
        "echo" => Ok(text(args["text"].as_str().unwrap_or_default())),
        "progress" => {
            let steps = args["steps"].as_u64().unwrap_or(3).min(10_000);
            let delay = Duration::from_millis(args["delay_ms"].as_u64().unwrap_or(0).min(60_000));
            if let Some(token) = params["_meta"].get("progressToken") {
                for step in 1..=steps {
                    let note = Notification::new(
                        "notifications/progress",
                        to_raw_value(
                            &json!({"progressToken": token, "progress": step, "total": steps}),
                        )
                        .ok(),
                    );
                    sender
                        .send(Outgoing::new(note).related_to(request.id.clone()))
                        .await
                        .map_err(failed)?;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                }
            }
            Ok(text("done"))
        }
        "sleep" => {
            tokio::time::sleep(Duration::from_millis(
                args["ms"].as_u64().unwrap_or(0).min(600_000),
            ))
            .await;
            Ok(text("slept"))
        }
        "ping_client" => {
            let id = Id::from(format!("ping-{}", next_request_number()));
            let (tx, rx) = oneshot::channel();
            pending.lock().unwrap().insert(id.clone(), tx);
            let ping = RpcRequest::new(id.clone(), "ping", None);
            if let Err(err) = sender
                .send(Outgoing::new(ping).related_to(request.id.clone()))
                .await
            {
                pending.lock().unwrap().remove(&id);
                return Err(failed(err));
            }
            match tokio::time::timeout(CLIENT_ANSWER_TIMEOUT, rx).await {
                Ok(Ok(answer)) if !answer.is_error() => Ok(text("pong")),
                Ok(Ok(answer)) => Err(ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "the client answered the ping with an error: {:?}",
                        answer.result().err()
                    ),
                )),
                Ok(Err(_)) => Err(ErrorObject::new(
                    code::INTERNAL_ERROR,
                    "the session ended before the client answered",
                )),
                Err(_) => {
                    pending.lock().unwrap().remove(&id);
                    Err(ErrorObject::new(
                        code::INTERNAL_ERROR,
                        "the client did not answer the ping in time",
                    ))
                }
            }
        }
        "broadcast" => {
            let note = Notification::new(
                "notifications/message",
                to_raw_value(&json!({"level": "info", "data": args["text"]})).ok(),
            );
            sender.send(note.into()).await.map_err(failed)?;
            Ok(text("sent"))
        }
        other => Err(ErrorObject::new(
            code::INVALID_PARAMS,
            format!("unknown tool: {other}"),
        )),
    }
}

/// An error and its causes, `outer: inner: innermost`: the cause is what a client needs to see.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn next_request_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
