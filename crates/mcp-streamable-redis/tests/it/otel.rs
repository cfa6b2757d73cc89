//! O1 and O4 on Redis (feature `otel`): a request forwarded from one node to the holder is one
//! trace across the two, and the calls of Redis are timed, their failures counted. Each node
//! records into OpenTelemetry's in-memory exporters of its own.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Message, Response, to_raw_value};
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, Telemetry};
use mcp_test_telemetry::{HTTP_SPAN, HTTP_TRACE, PARENT, Recorded, TRACE, traceparent};
use mcp_transport::{Connection, Sender};
use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};

use crate::support::{PATIENCE, Redis, eventually, options};

/// The spans `recorded` ended named `name`.
fn spans(recorded: &Recorded, name: &str) -> Vec<SpanData> {
    let spans = recorded.spans();
    spans.into_iter().filter(|s| s.name == name).collect()
}

/// As [`Recorded::total`], but 0 when the last collection has no metric `name`: a node records
/// nothing of an instrument it has not used (no request forwarded, no call of Redis failed).
fn total(recorded: &Recorded, name: &str, with: Option<(&str, &str)>) -> i64 {
    let metrics = recorded.metrics();
    let mut last = metrics.last().into_iter().flat_map(|m| m.scope_metrics());
    if !last.any(|s| s.metrics().any(|m| m.name() == name)) {
        return 0;
    }
    recorded.total(name, with)
}

/// An application: `initialize`, and `tools/call` of anything, answered with an empty result.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
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
                "serverInfo": {"name": "t", "version": "0"},
            }),
            _ => json!({"content": []}),
        };
        let response = Response::success(request.id, to_raw_value(&result).unwrap());
        let _ = sender.send(response.into()).await;
    }
}

/// A node named `name` on `redis`, recording into its own exporters.
async fn node(redis: &Redis, name: &str) -> (StreamableHttpService, Recorded) {
    let backend = redis.node(name, options()).await;
    let recorded = Recorded::new();
    let telemetry = Telemetry::new(recorded.tracers(), recorded.meters());
    let config = Config::default()
        .cluster(backend.cluster())
        .telemetry(telemetry);
    (StreamableHttpService::new(config, app), recorded)
}

fn post(session: Option<&str>, body: Value) -> http::Request<Full<Bytes>> {
    let mut builder = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("traceparent", traceparent(HTTP_TRACE, HTTP_SPAN));
    if let Some(id) = session {
        builder = builder.header("mcp-session-id", id);
    }
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// POSTs `body` and reads the whole answer (an SSE stream that ends with the response): the
/// session id, and the text.
async fn answer(node: &StreamableHttpService, request: http::Request<Full<Bytes>>) -> String {
    let response = node.handle(request).await;
    assert_eq!(response.status(), http::StatusCode::OK);
    let body = tokio::time::timeout(PATIENCE, response.into_body().collect()).await;
    let body = body.expect("the answer ends").expect("the body").to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

async fn initialize(node: &StreamableHttpService) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let response = node.handle(post(None, body)).await;
    assert_eq!(response.status(), http::StatusCode::OK);
    let sid = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = response.into_body().collect().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = node.handle(post(Some(&sid), initialized)).await;
    assert_eq!(response.status(), http::StatusCode::ACCEPTED);
    sid
}

/// A `tools/call` of `echo` with the client's context in `_meta`.
fn traced_call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "echo", "arguments": {},
        "_meta": {"traceparent": traceparent(TRACE, PARENT)}}})
}

/// O1: the holder records the forwarded request's span under the client's parent, linked to
/// the HTTP request's span, as if the client had reached it; the node that forwarded it
/// records no span of it (it served no session), only the forward (O4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o1_a_forwarded_request_is_one_trace_across_two_nodes_on_redis() {
    let redis = Redis::single();
    let ((a, on_a), (b, on_b)) = (node(&redis, "a").await, node(&redis, "b").await);
    let sid = initialize(&a).await;
    let text = answer(&b, post(Some(&sid), traced_call(1))).await;
    assert!(text.contains(r#""result""#), "{text}");
    let held = spans(&on_a, "tools/call echo");
    assert_eq!(held.len(), 1, "the holder records the call once");
    let span = &held[0];
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(
        span.span_context.trace_id(),
        TraceId::from_hex(TRACE).unwrap()
    );
    assert_eq!(span.parent_span_id, SpanId::from_hex(PARENT).unwrap());
    let linked: Vec<_> = span
        .links
        .iter()
        .map(|l| l.span_context.span_id())
        .collect();
    assert_eq!(linked, [SpanId::from_hex(HTTP_SPAN).unwrap()]);
    let session = span
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "mcp.session.id");
    assert_eq!(session.map(|kv| kv.value.as_str().into_owned()), Some(sid));
    // The node the client reached served no session: no span of the call there, so no second
    // root, and nothing outside the client's trace.
    assert!(spans(&on_b, "tools/call echo").is_empty());
    let forwarded = Some(("mcp.forward.outcome", "answered"));
    assert_eq!(total(&on_b, "mcp.server.request.forwarded", forwarded), 1);
    assert_eq!(total(&on_a, "mcp.server.request.forwarded", None), 0);
}

/// O4: the calls of Redis are timed by operation; frozen, its calls fail after the command
/// timeout, and are counted as failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o4_redis_calls_are_timed_and_their_failures_counted() {
    let mut redis = Redis::single();
    let (a, on_a) = node(&redis, "a").await;
    let sid = initialize(&a).await;
    let duration = "mcp.server.store.duration";
    let writes = Some(("mcp.store.operation", "event.write"));
    // The store's writer writes the initialize stream behind its answer: by the time the
    // client read the answer, the write may still be under way.
    eventually("the initialize stream is written", || async {
        total(&on_a, duration, writes) >= 1
    })
    .await;
    assert_eq!(total(&on_a, "mcp.server.store.failed", None), 0);
    redis.server().freeze().expect("redis-server freezes");
    // The call's stream cannot be written: whatever the answer, the store failed.
    let request = post(Some(&sid), traced_call(2));
    let _ = tokio::time::timeout(PATIENCE, a.handle(request)).await;
    redis.server().thaw().expect("redis-server thaws");
    let failed = total(&on_a, "mcp.server.store.failed", None);
    assert!(failed >= 1, "{failed} failures counted");
    let store_error = Some(("error.type", "store_error"));
    assert_eq!(total(&on_a, duration, store_error), failed);
}
