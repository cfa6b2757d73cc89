//! `mcp-gateway connect URL`: our in-process server on loopback, reached through the binary's
//! stdin and stdout.

use std::process::Stdio;
use std::time::Duration;

use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, serve};
use mcp_transport::{Connection, Sender};
use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::harness::*;

/// A session answering `initialize` with the `X-Test` header of the request that started it,
/// and `tools/call` with its arguments' text.
async fn app(mut conn: ServerConnection, parts: http::request::Parts) {
    let header = parts
        .headers
        .get("x-test")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        let params: Value = request.parse_params().unwrap_or(Value::Null);
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "in-process", "version": "0"},
                "instructions": header,
            }),
            "tools/call" => {
                json!({"content": [{"type": "text", "text": params["arguments"]["text"]}]})
            }
            _ => json!({}),
        };
        let response = Response::success(request.id, to_raw_value(&result).unwrap());
        let _ = sender.send(response.into()).await;
    }
}

/// The binary's process: its group killed if the test ends before it exited by itself.
struct Connected(Child);

impl Drop for Connected {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id().and_then(|id| Pid::from_raw(id as i32)) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

async fn read_message(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let line = within(lines.next_line()).await.unwrap().expect("a line");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_offers_a_streamable_http_server_on_stdio_with_the_headers_given() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = StreamableHttpService::new(Config::default(), app);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn({
        let service = service.clone();
        async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            serve::Options::default()
                .path("/mcp")
                .shutdown_grace(Duration::from_secs(1))
                .serve(listener, service, shutdown)
                .await;
        }
    });

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .args(["connect", &url, "--header", "X-Test: yes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut connected = Connected(child);

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "host", "version": "0"},
    }});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "through stdio"},
    }});
    let input = format!("{initialize}\n{initialized}\n{call}\n");
    within(stdin.write_all(input.as_bytes())).await.unwrap();

    let answer = read_message(&mut lines).await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "in-process");
    assert_eq!(
        answer["result"]["instructions"], "yes",
        "the header reached the server"
    );
    let answer = read_message(&mut lines).await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "through stdio");
    assert_eq!(service.session_count(), 1);

    // The end of stdin ends the bridge, and the session with DELETE.
    drop(stdin);
    let status = within(connected.0.wait()).await.unwrap();
    assert!(status.success(), "{status}");
    until(|| service.session_count() == 0).await;
    let _ = stop.send(());
    within(server).await.unwrap();
}
