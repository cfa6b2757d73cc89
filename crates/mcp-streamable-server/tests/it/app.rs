//! A small MCP application for the tests: answers `initialize`, `ping` and a few tools that
//! exercise each transport path.

use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, Message, Notification, Request, Response, code, to_raw_value};
use mcp_streamable_server::{ServerConnection, ServerSender};
use mcp_transport::{Connection, Outgoing, Sender};
use serde_json::{Value, json};

/// Runs a session until the client or the server ends it.
pub(crate) async fn session(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        if let Message::Request(request) = message {
            let sender = sender.clone();
            tokio::spawn(async move { answer(&sender, request).await });
        }
    }
}

async fn answer(sender: &ServerSender, request: Request) {
    let params: Value = request.parse_params().unwrap_or(Value::Null);
    let result = match request.method.as_str() {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or("2025-03-26");
            let version = if ["2025-03-26", "2025-06-18", "2025-11-25"].contains(&asked) {
                asked
            } else {
                "2025-11-25"
            };
            Ok(
                json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "test", "version": "0"}}),
            )
        }
        "ping" => Ok(json!({})),
        "tools/call" => call_tool(sender, &request, &params).await,
        other => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("no method {other}"),
        )),
    };
    let response = match result {
        Ok(value) => Response::success(request.id, to_raw_value(&value).unwrap()),
        Err(error) => Response::error(Some(request.id), error),
    };
    let _ = sender.send(response.into()).await;
}

async fn call_tool(
    sender: &ServerSender,
    request: &Request,
    params: &Value,
) -> Result<Value, ErrorObject> {
    let args = &params["arguments"];
    match params["name"].as_str().unwrap_or("") {
        "echo" => Ok(text(args["text"].as_str().unwrap_or(""))),
        // Sends `steps` notifications on the request's stream, then answers.
        "progress" => {
            let steps = args["steps"].as_u64().unwrap_or(1);
            let delay = Duration::from_millis(args["delay_ms"].as_u64().unwrap_or(0));
            for step in 1..=steps {
                let note = Notification::new(
                    "notifications/progress",
                    Some(
                        to_raw_value(
                            &json!({"progressToken": 1, "progress": step, "total": steps}),
                        )
                        .unwrap(),
                    ),
                );
                let _ = sender
                    .send(Outgoing::new(note).related_to(request.id.clone()))
                    .await;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
            }
            Ok(text("done"))
        }
        // A notification unrelated to any request: the standalone stream.
        "broadcast" => {
            let note = Notification::new(
                "notifications/message",
                Some(to_raw_value(&json!({"level": "info", "data": args["text"]})).unwrap()),
            );
            let _ = sender.send(note.into()).await;
            Ok(text("sent"))
        }
        "sleep" => {
            tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
            Ok(text("slept"))
        }
        other => Err(ErrorObject::new(
            code::INVALID_PARAMS,
            format!("no tool {other}"),
        )),
    }
}

pub(crate) fn text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}
