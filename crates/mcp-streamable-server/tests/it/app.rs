//! A small MCP application for the tests: answers `initialize`, `ping` and a few tools that
//! exercise each transport path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, Id, Message, Notification, Request, Response, code, to_raw_value};
use mcp_streamable_server::{ServerConnection, ServerSender};
use mcp_transport::{Connection, Outgoing, Sender};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The server's own requests waiting for the client's answer, by id.
type Pending = Arc<Mutex<HashMap<Id, oneshot::Sender<Response>>>>;

/// Runs a session until the client or the server ends it.
pub(crate) async fn session(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    let pending: Pending = Pending::default();
    while let Ok(Some(message)) = conn.recv().await {
        match message {
            Message::Request(request) => {
                let sender = sender.clone();
                let pending = Arc::clone(&pending);
                tokio::spawn(async move { answer(&sender, &pending, request).await });
            }
            Message::Response(response) => {
                let waiter = response
                    .id()
                    .and_then(|id| pending.lock().unwrap().remove(id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(response);
                }
            }
            Message::Notification(_) => {}
        }
    }
}

async fn answer(sender: &ServerSender, pending: &Pending, request: Request) {
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
        "tools/call" => call_tool(sender, pending, &request, &params).await,
        other => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!("no method {other}"),
        )),
    };
    let late = params["name"] == "late";
    let response = match result {
        Ok(value) => Response::success(request.id.clone(), to_raw_value(&value).unwrap()),
        Err(error) => Response::error(Some(request.id.clone()), error),
    };
    let _ = sender.send(response.into()).await;
    if late {
        // Related to a request already answered: S10 sends it on the standalone stream.
        let note = notification("notifications/message", json!({"data": "late"}));
        let _ = sender
            .send(Outgoing::new(note).related_to(request.id))
            .await;
    }
}

pub(crate) fn notification(method: &str, params: Value) -> Notification {
    Notification::new(method, Some(to_raw_value(&params).unwrap()))
}

fn progress(step: u64, total: u64) -> Notification {
    notification(
        "notifications/progress",
        json!({"progressToken": 1, "progress": step, "total": total}),
    )
}

async fn call_tool(
    sender: &ServerSender,
    pending: &Pending,
    request: &Request,
    params: &Value,
) -> Result<Value, ErrorObject> {
    let args = &params["arguments"];
    let related = |n: Notification| Outgoing::new(n).related_to(request.id.clone());
    match params["name"].as_str().unwrap_or("") {
        "echo" | "late" => Ok(text(args["text"].as_str().unwrap_or(""))),
        // Sends `steps` notifications on the request's stream, then answers.
        "progress" => {
            let steps = args["steps"].as_u64().unwrap_or(1);
            let delay = Duration::from_millis(args["delay_ms"].as_u64().unwrap_or(0));
            for step in 1..=steps {
                let _ = sender.send(related(progress(step, steps))).await;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
            }
            Ok(text("done"))
        }
        // S14 polling: `before` notifications, the stream's connection ended, `after` more.
        "poll" => {
            let before = args["before"].as_u64().unwrap_or(1);
            let after = args["after"].as_u64().unwrap_or(1);
            for step in 1..=before {
                let _ = sender.send(related(progress(step, before + after))).await;
            }
            let closed = sender.close_stream(&request.id);
            for step in before + 1..=before + after {
                let _ = sender.send(related(progress(step, before + after))).await;
            }
            Ok(json!({"closed": closed}))
        }
        // A notification unrelated to any request: the standalone stream.
        "broadcast" => {
            let count = args["count"].as_u64().unwrap_or(1);
            for i in 0..count {
                let note = notification(
                    "notifications/message",
                    json!({"level": "info", "data": args["text"], "i": i}),
                );
                let _ = sender.send(note.into()).await;
            }
            Ok(text("sent"))
        }
        // `count` unrelated notifications of about `bytes` bytes each, as fast as possible.
        "flood" => {
            let count = args["count"].as_u64().unwrap_or(1);
            let pad = "x".repeat(args["bytes"].as_u64().unwrap_or(0) as usize);
            let mut failed = 0;
            for i in 0..count {
                let note = notification("notifications/message", json!({"i": i, "pad": pad}));
                failed += u64::from(sender.send(note.into()).await.is_err());
            }
            Ok(json!({"failed": failed}))
        }
        // A result of about `bytes` bytes.
        "big" => Ok(text(
            &"y".repeat(args["bytes"].as_u64().unwrap_or(0) as usize),
        )),
        // Sleeps, then answers; with `then_broadcast`, also says so on the standalone stream
        // (which shows that a request whose client went away still ran to the end).
        "sleep" => {
            tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
            if args["then_broadcast"] == true {
                let note = notification("notifications/message", json!({"data": "woke"}));
                let _ = sender.send(note.into()).await;
            }
            Ok(text("slept"))
        }
        // A request to the client, on this request's stream; answers with the client's result.
        "ask" => {
            let id = Id::from(format!("srv-{}", request.id));
            let (tx, rx) = oneshot::channel();
            pending.lock().unwrap().insert(id.clone(), tx);
            let ask = Request::new(id, "sampling/createMessage", None);
            if let Err(err) = sender
                .send(Outgoing::new(ask).related_to(request.id.clone()))
                .await
            {
                let cause = std::error::Error::source(&err).map(|e| e.to_string());
                return Err(ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!("could not ask: {err}: {}", cause.unwrap_or_default()),
                ));
            }
            match rx.await {
                Ok(response) => {
                    Ok(json!({"client said": response.result().map(|r| r.get().to_owned()).ok()}))
                }
                Err(_) => Err(ErrorObject::new(code::INTERNAL_ERROR, "no answer")),
            }
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
