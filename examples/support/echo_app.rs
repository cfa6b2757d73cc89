//! The application of `echo_server`: one task per session that answers `initialize`, `ping`,
//! `logging/setLevel`, `server/discover`, `tools/list` and `tools/call` (see `echo_server.rs`
//! for the tools). `tests/it` drives it through a `StreamableHttpService` without sockets.

use mcp_streamable_http::http;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_streamable_http::jsonrpc::{
    ErrorObject, Id, Message, Notification, Request as RpcRequest, Response as RpcResponse, code,
    to_raw_value,
};
use mcp_streamable_http::server::{ProtocolVersion, ServerConnection, ServerSender};
use mcp_streamable_http::transport::{Connection, Outgoing, Sender};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::echo_modern;

/// The protocol revisions of the session family this server speaks, newest last.
pub const VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// The `_meta` key under which a 2026-07-28 result names the server that produced it (the
/// revision's `ResultMetaObject`): with no `initialize`, it is how a client learns who answered.
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// The per-request revision: a connection speaking it, or later, serves one request.
const PER_REQUEST: &str = "2026-07-28";

/// How long `ping_client` waits for the client's answer.
const CLIENT_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The log levels of MCP, those of RFC 5424 (syslog), least severe first: a session that set
/// one gets the messages at that level or more severe.
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The severity of a level name, its index in [`LEVELS`].
fn severity(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

/// Requests this server sent to the client, waiting for the client's answer.
type Pending = Arc<Mutex<HashMap<Id, oneshot::Sender<RpcResponse>>>>;

/// What the tasks answering one session's requests share.
#[derive(Clone)]
struct Session {
    sender: ServerSender,
    pending: Pending,
    /// The least severe level of `notifications/message` the client wants, by
    /// `logging/setLevel`; `debug` (everything) until it says otherwise.
    log_level: Arc<AtomicU8>,
}

/// Runs one session: reads the client's messages and answers each request on its own task.
pub async fn session(mut conn: ServerConnection, parts: http::request::Parts) {
    // Nothing here reads the request that started the session: let its headers go now, not
    // when the session ends (an `async fn` keeps its arguments, used or not, until it returns).
    drop(parts);
    let session = Session {
        sender: conn.sender(),
        pending: Arc::default(),
        log_level: Arc::new(AtomicU8::new(0)),
    };
    // The connection's family is fixed: asked once, not per message.
    let per_request = session.sender.protocol_version() >= PER_REQUEST;
    while let Ok(Some(message)) = conn.recv().await {
        match message {
            // A per-request connection carries one request: a listen stream is served here.
            // Boxed: inline, the two futures would size every session's future, idle ones
            // included (some 1.7 KB of its 2 KB), for the one request of a connection that
            // has no session.
            Message::Request(request) if per_request => {
                if let Some(request) = Box::pin(echo_modern::listen(&mut conn, request)).await {
                    Box::pin(answer(&session, request)).await;
                }
            }
            Message::Request(request) => {
                let session = session.clone();
                tokio::spawn(async move { answer(&session, request).await });
            }
            Message::Response(response) => {
                let waiting = response
                    .id()
                    .and_then(|id| session.pending.lock().unwrap().remove(id));
                if let Some(tx) = waiting {
                    let _ = tx.send(response);
                }
            }
            // notifications/initialized, notifications/cancelled...: nothing to do.
            Message::Notification(_) => {}
        }
    }
}

async fn answer(session: &Session, request: RpcRequest) {
    let sender = &session.sender;
    let params: Value = request.parse_params().unwrap_or(Value::Null);
    // A connection of the per-request family (2026-07-28) serves this one request; its
    // results say they are complete and who produced them, and lists and discovery say how
    // long they may be cached.
    let modern = sender.protocol_version() >= PER_REQUEST;
    let result = match (request.method.as_str(), modern) {
        ("initialize", false) => Ok(initialize_result(&params)),
        ("ping", false) => Ok(json!({})),
        // 2026-07-28 has no `logging/setLevel`: it left the protocol with sessions.
        ("logging/setLevel", false) => set_level(session, &params),
        ("server/discover", true) => Ok(discover_result()),
        ("tools/list", _) => Ok(tools(modern)),
        ("tools/call", _) => call_tool(session, &request, &params, modern).await,
        (other, _) => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    };
    let result = match result {
        Ok(mut value) if modern => {
            if value.get("resultType").is_none() {
                value["resultType"] = json!("complete");
            }
            value["_meta"][SERVER_INFO_META] = server_info();
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

/// `logging/setLevel {level}`: an unknown level is invalid params (-32602).
fn set_level(session: &Session, params: &Value) -> Result<Value, ErrorObject> {
    let level = params["level"].as_str().unwrap_or_default();
    let Some(severity) = severity(level) else {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            format!(
                "invalid log level {:?}: one of {}",
                params["level"],
                LEVELS.join(", ")
            ),
        ));
    };
    session.log_level.store(severity, Ordering::Relaxed);
    Ok(json!({}))
}

/// The server's name and version, as `initialize` and the 2026-07-28 `_meta` give them.
fn server_info() -> Value {
    json!({"name": "echo_server", "version": env!("CARGO_PKG_VERSION")})
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
        "serverInfo": server_info(),
    })
}

/// What `server/discover` tells a 2026-07-28 client: the versions served, of both families.
/// (Its `_meta` names the server, as every 2026-07-28 result's does.)
fn discover_result() -> Value {
    let per_request = ProtocolVersion::PER_REQUEST.iter().map(|v| v.as_str());
    let mut versions: Vec<&str> = per_request.chain(VERSIONS.iter().copied()).collect();
    versions.sort_unstable_by(|a, b| b.cmp(a));
    json!({
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": true}},
    })
}

/// The tools, as `tools/list` gives them: with the per-request ones for a per-request client.
pub fn tools(per_request: bool) -> Value {
    let mut listed = session_tools();
    if per_request {
        listed["tools"]
            .as_array_mut()
            .expect("a list")
            .extend(echo_modern::tools());
    }
    listed
}

fn session_tools() -> Value {
    let tool = |name: &str, description: &str, properties: Value| json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}});
    json!({"tools": [
        tool("echo", "Returns the text it is given.", json!({"text": {"type": "string"}})),
        tool("progress", "Sends progress notifications, then returns \"done\".", json!({"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}})),
        tool("sleep", "Returns after a delay.", json!({"ms": {"type": "integer"}})),
        tool("ping_client", "Pings the client and returns \"pong\" when it answers.", json!({})),
        tool("broadcast", "Sends a log message on the standalone stream.", json!({"text": {"type": "string"}, "level": {"type": "string", "enum": LEVELS}})),
        tool("count", "Records one execution of `key` (in the executions log, when the server keeps one), waits `delay_ms`, and returns the id of the process that ran it.", json!({"key": {"type": "string"}, "delay_ms": {"type": "integer"}})),
    ]})
}

fn text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

async fn call_tool(
    session: &Session,
    request: &RpcRequest,
    params: &Value,
    per_request: bool,
) -> Result<Value, ErrorObject> {
    let (sender, pending) = (&session.sender, &session.pending);
    let args = &params["arguments"];
    let name = params["name"].as_str().unwrap_or_default();
    if per_request && let Some(result) = echo_modern::call(name, params).await {
        return result;
    }
    let failed = |e: mcp_streamable_http::transport::Error| {
        ErrorObject::new(code::INTERNAL_ERROR, format!("transport: {}", chain(&e)))
    };
    match name {
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
            let level = args["level"].as_str().unwrap_or("info");
            let Some(severity) = severity(level) else {
                return Err(ErrorObject::new(
                    code::INVALID_PARAMS,
                    format!("invalid log level {level:?}"),
                ));
            };
            if severity < session.log_level.load(Ordering::Relaxed) {
                return Ok(text("filtered"));
            }
            let note = Notification::new(
                "notifications/message",
                to_raw_value(&json!({"level": level, "data": args["text"]})).ok(),
            );
            sender.send(note.into()).await.map_err(failed)?;
            Ok(text("sent"))
        }
        "count" => {
            let key = args["key"].as_str().unwrap_or_default();
            record_execution(key).map_err(|e| {
                ErrorObject::new(code::INTERNAL_ERROR, format!("executions log: {e}"))
            })?;
            let delay = args["delay_ms"].as_u64().unwrap_or(0).min(60_000);
            tokio::time::sleep(Duration::from_millis(delay)).await;
            Ok(text(&std::process::id().to_string()))
        }
        other => Err(ErrorObject::new(
            code::INVALID_PARAMS,
            format!("unknown tool: {other}"),
        )),
    }
}

/// Where `count` records its executions: set once by the server (`--executions-log`); unset,
/// `count` records nothing.
static EXECUTIONS_LOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Makes `count` append a line per execution to `path`.
pub fn keep_executions_log(path: std::path::PathBuf) {
    let _ = EXECUTIONS_LOG.set(path);
}

/// Appends `key` to the executions log, if there is one: one line per execution, written
/// whole with `O_APPEND`, so that several processes may share the file.
fn record_execution(key: &str) -> std::io::Result<()> {
    use std::io::Write;
    let Some(path) = EXECUTIONS_LOG.get() else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(format!("{key} {}\n", std::process::id()).as_bytes())
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
