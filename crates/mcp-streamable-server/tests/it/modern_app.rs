//! The application and the requests of the M-row tests (`modern.rs`): the per-request family
//! of 2026-07-28.

use std::time::Duration;

use http::StatusCode;
use mcp_jsonrpc::{ErrorObject, Id, Message, Notification, Response, to_raw_value};
use mcp_streamable_server::{Config, ServerConnection};
use mcp_transport::{Connection, Outgoing, Sender};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::*;

pub(crate) const V: &str = "2026-07-28";

pub(crate) fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A JSON-RPC request with `params` and the `_meta` every modern request carries.
pub(crate) fn body(id: i64, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A POST with the headers of a modern request for `method` (no `Mcp-Name`).
pub(crate) fn modern(method: &str) -> http::request::Builder {
    post(None)
        .header("mcp-protocol-version", V)
        .header("mcp-method", method)
}

/// A modern `tools/call` of `tool`, headers and body agreeing.
pub(crate) fn call_request(
    id: i64,
    tool: &str,
    arguments: Value,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    request(
        modern("tools/call").header("mcp-name", tool),
        body(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        ),
    )
}

/// What the application saw, in order: `q:<method>`, `n:<method>`, `end`, `send failed`.
pub(crate) type Log = mpsc::UnboundedSender<String>;

/// A service whose connections run [`app`], reporting to the returned log.
pub(crate) fn logged(
    config: Config,
) -> (
    mcp_streamable_server::StreamableHttpService,
    mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let service = service_with(config, move |conn, _parts| app(conn, tx.clone()));
    (service, rx)
}

/// Answers `tools/call` with tools that exercise the modern paths; any other method is -32601.
pub(crate) async fn app(mut conn: ServerConnection, log: Log) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        let label = match &message {
            Message::Request(r) => format!("q:{}", r.method),
            Message::Notification(n) => format!("n:{}", n.method),
            Message::Response(_) => "response".into(),
        };
        let _ = log.send(label);
        let Message::Request(request) = message else {
            if let Message::Notification(n) = &message
                && n.method == "notifications/cancelled"
            {
                let _ = log.send(format!("cancelled {}", n.params.as_ref().unwrap().get()));
            }
            continue;
        };
        let (sender, log) = (sender.clone(), log.clone());
        tokio::spawn(async move {
            let params: Value = request.parse_params().unwrap_or(Value::Null);
            let args = &params["arguments"];
            let id = request.id.clone();
            let related = |n: Notification| Outgoing::new(n).related_to(id.clone());
            let result: Result<Value, ErrorObject> =
                match (request.method.as_str(), params["name"].as_str()) {
                    ("initialize", _) => Ok(json!({
                        "protocolVersion": params["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "t", "version": "0"},
                    })),
                    ("ping", _) => Ok(json!({})),
                    ("tools/call", Some("echo")) => Ok(json!({
                        "name": params["name"],
                        "version": sender.protocol_version(),
                        "session": sender.session_id(),
                    })),
                    ("tools/call", Some("fail")) => Err(ErrorObject::new(
                        args["code"].as_i64().unwrap(),
                        "failed as asked",
                    )),
                    ("tools/call", Some("progress")) => {
                        for i in 1..=2 {
                            let _ = sender
                                .send(related(note_with(
                                    "notifications/progress",
                                    json!({"progressToken": 1, "progress": i}),
                                )))
                                .await;
                        }
                        if let Some(code) = args["then_fail"].as_i64() {
                            Err(ErrorObject::new(code, "failed after progress"))
                        } else {
                            Ok(json!({"done": true}))
                        }
                    }
                    // The server may not ask the client anything, nor say anything unrelated.
                    ("tools/call", Some("ask")) => {
                        let ask = mcp_jsonrpc::Request::new(
                            Id::from("s1"),
                            "sampling/createMessage",
                            None,
                        );
                        let asked = sender.send(Outgoing::new(ask).related_to(id.clone())).await;
                        let unrelated = sender
                            .send(note_with("notifications/message", json!({})).into())
                            .await;
                        Ok(json!({
                            "ask": asked.map_err(|e| format!("{e:?}")).unwrap_err(),
                            "unrelated": unrelated.map_err(|e| format!("{e:?}")).unwrap_err(),
                        }))
                    }
                    // Waits until `sleep_ms` passed (after one notification if `notify`), then says
                    // whether it could still send.
                    ("tools/call", Some("wait")) => {
                        if args["notify"] == true {
                            let _ = sender
                                .send(related(note_with(
                                    "notifications/progress",
                                    json!({"progressToken": 1, "progress": 1}),
                                )))
                                .await;
                        }
                        tokio::time::sleep(Duration::from_millis(
                            args["sleep_ms"].as_u64().unwrap_or(0),
                        ))
                        .await;
                        let sent = sender
                            .send(related(note_with(
                                "notifications/progress",
                                json!({"progressToken": 1, "progress": 2}),
                            )))
                            .await;
                        if sent.is_err() {
                            let _ = log.send("send failed".into());
                        }
                        Ok(json!({}))
                    }
                    (method, _) => Err(ErrorObject::new(
                        mcp_jsonrpc::code::METHOD_NOT_FOUND,
                        format!("no method {method}"),
                    )),
                };
            let response = match result {
                Ok(value) => Response::success(request.id, to_raw_value(&value).unwrap()),
                Err(error) => Response::error(Some(request.id), error),
            };
            if sender.send(response.into()).await.is_err() {
                let _ = log.send("send failed".into());
            }
        });
    }
    let _ = log.send("end".into());
}

pub(crate) fn note_with(method: &str, params: Value) -> Notification {
    Notification::new(method, Some(to_raw_value(&params).unwrap()))
}

/// The result of a 200 JSON reply.
pub(crate) async fn json_result(
    response: http::Response<mcp_streamable_server::ResponseBody>,
) -> Value {
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    let bytes = body_bytes(response).await;
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    value["result"].clone()
}

/// Reads the log until `want` is seen (at most 20 entries); returns what was read.
pub(crate) async fn log_until(
    log: &mut mpsc::UnboundedReceiver<String>,
    want: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..20 {
        let entry = tokio::time::timeout(WAIT, log.recv())
            .await
            .expect("the app in time")
            .expect("a log entry");
        let done = entry.starts_with(want);
        seen.push(entry);
        if done {
            return seen;
        }
    }
    panic!("{want:?} not in {seen:?}");
}
