//! Driving the service without sockets: requests in, responses and SSE events out.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Body, Message};
use mcp_sse::{Event, Scanner};
use mcp_streamable_server::{Config, ResponseBody, StreamableHttpService};
use serde_json::{Value, json};

pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

pub(crate) fn service(config: Config) -> StreamableHttpService {
    StreamableHttpService::new(config, crate::app::session)
}

/// A POST with the headers a correct client sends.
pub(crate) fn post(session: Option<&str>) -> http::request::Builder {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b
}

pub(crate) fn request(
    builder: http::request::Builder,
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    builder.body(Full::new(body.into())).unwrap()
}

pub(crate) fn initialize_body(id: i64, version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string()
}

pub(crate) fn call(id: i64, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string()
}

/// Reads a whole non-streaming body.
pub(crate) async fn body_bytes(response: Response<ResponseBody>) -> Bytes {
    tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .expect("body within 10 s")
        .unwrap()
        .to_bytes()
}

/// Reads SSE events from a response until the body ends, at most `max` events or 10 s.
pub(crate) async fn sse_events(response: Response<ResponseBody>, max: usize) -> Vec<Event> {
    let mut body = response.into_body();
    let mut scanner = Scanner::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while events.len() < max {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("events within 10 s");
        let Some(frame) = frame else { break };
        let frame = frame.unwrap();
        if let Ok(data) = frame.into_data() {
            scanner.feed(&data);
            while let Some(event) = scanner.next_event().unwrap() {
                events.push(event);
            }
        }
    }
    events
}

/// The JSON-RPC messages of SSE events, skipping priming events.
pub(crate) fn messages(events: &[Event]) -> Vec<Message> {
    events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| match mcp_jsonrpc::parse(e.data.as_bytes()).unwrap() {
            Body::Single(m) => m,
            Body::Batch(_) => panic!("batch in an event"),
        })
        .collect()
}

pub(crate) fn result_of(message: &Message) -> Value {
    match message {
        Message::Response(r) => serde_json::from_str(r.result().expect("a result").get()).unwrap(),
        other => panic!("not a response: {other:?}"),
    }
}

/// Starts a session; returns its id.
pub(crate) async fn initialize(service: &StreamableHttpService, version: &str) -> String {
    let response = service
        .handle(request(post(None), initialize_body(0, version)))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = session_id(response.headers()).expect("a session id");
    let events = sse_events(response, 10).await;
    let msgs = messages(&events);
    assert_eq!(msgs.len(), 1, "{events:?}");
    assert_eq!(result_of(&msgs[0])["protocolVersion"], version);
    id
}

pub(crate) fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned())
}
