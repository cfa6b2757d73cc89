//! An rmcp server through the adapter serves 2026-07-28 listen streams with `Subscriptions`
//! (feature `listen`): a change announced on another node reaches them, and the rest of the
//! requests still go to rmcp.

use std::time::Duration;

use http_body_util::BodyExt;
use mcp_jsonrpc::{Body, Message};
use mcp_streamable_server::{
    Change, Config, InMemoryBus, ResponseBody, StreamableHttpService, Subscriptions,
};
use rmcp::ServiceExt;
use serde_json::{Value, json};

use crate::Tools;

/// A node serving the rmcp `Tools` through the adapter, its listen streams by `subscriptions`.
fn node(subscriptions: &Subscriptions) -> StreamableHttpService {
    let subscriptions = subscriptions.clone();
    StreamableHttpService::new(Config::default(), move |conn, _parts| {
        let transport = mcp_rmcp::server(conn).listen_with(subscriptions.clone());
        async move {
            if let Ok(running) = Tools.serve(transport).await {
                let _ = running.waiting().await;
            }
        }
    })
}

/// A 2026-07-28 request: `_meta` and the headers that mirror the body.
fn per_request(
    id: i64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut builder = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    builder
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap()
}

/// Reads an SSE response message by message.
struct Stream {
    body: ResponseBody,
    scanner: mcp_sse::Scanner,
}

impl Stream {
    /// The next message, as JSON, within 10 s; `None` at the end.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(event) = self.scanner.next_event().unwrap()
                && let Ok(Body::Single(message)) = mcp_jsonrpc::parse(event.data.as_bytes())
            {
                let message: Message = message;
                return Some(serde_json::from_slice(&message.to_vec()).unwrap());
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("a frame within 10 s")?
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.scanner.feed(&data);
            }
        }
    }
}

#[tokio::test]
async fn an_rmcp_server_serves_listen_streams_that_hear_every_node() {
    let bus = InMemoryBus::default();
    let (one, two) = (Subscriptions::new(bus.clone()), Subscriptions::new(bus));
    let (node_one, node_two) = (node(&one), node(&two));
    let listen = per_request(
        1,
        "subscriptions/listen",
        None,
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let response = node_one.handle(listen).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = Stream {
        body: response.into_body(),
        scanner: mcp_sse::Scanner::new(),
    };
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    // Announced on the other node.
    two.announce(Change::ToolsListChanged).await.unwrap();
    let told = stream.next().await.unwrap();
    assert_eq!(told["method"], "notifications/tools/list_changed");
    assert_eq!(
        told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    // Everything else still reaches rmcp, on either node.
    let call = per_request(
        2,
        "tools/call",
        Some("echo"),
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let response = node_two.handle(call).await;
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\"hi\""), "{text}");
    // A graceful end: the listen request's result.
    one.close();
    let end = stream.next().await.unwrap();
    assert_eq!(end["id"], 1);
    assert_eq!(end["result"]["resultType"], "complete");
    assert!(stream.next().await.is_none());
}
