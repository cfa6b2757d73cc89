//! O1-O4 (feature `otel`): the spans and metrics of the MCP semantic conventions, recorded by
//! the service into OpenTelemetry's in-memory exporters, for both families.

use mcp_jsonrpc::{ErrorObject, Message, Response, code, to_raw_value};
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService, Telemetry};
use mcp_test_telemetry::{
    DropsCalls, HTTP_SPAN, HTTP_TRACE, PARENT, Recorded, TRACE, attr, traceparent,
};
use mcp_transport::{Connection, Sender};
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry_sdk::trace::{Sampler, ShouldSample, SpanData};
use serde_json::{Value as Json, json};

use crate::harness::*;
use crate::modern_app;

/// Providers that record in memory, and the server's telemetry into them.
pub(crate) fn recorded() -> (Recorded, Telemetry) {
    sampled_by(Sampler::AlwaysOn)
}

/// As [`recorded`], the spans sampled by `sampler`.
fn sampled_by(sampler: impl ShouldSample + 'static) -> (Recorded, Telemetry) {
    let recorded = Recorded::sampled_by(sampler);
    let telemetry = Telemetry::new(recorded.tracers(), recorded.meters());
    (recorded, telemetry)
}

/// Node `name` of `network`, recording into providers of its own.
pub(crate) fn recorded_node(
    network: &mcp_streamable_server::InMemoryNetwork,
    name: &str,
) -> (StreamableHttpService, Recorded) {
    let (recorded, telemetry) = recorded();
    let config = Config::default()
        .cluster(network.node(name))
        .telemetry(telemetry);
    (crate::harness::service(config), recorded)
}

/// An application: `initialize`, `tools/call` of `echo` (a result), `broken` (a result with
/// `isError`) and `hang` (no answer); any other method is -32601.
pub(crate) async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        let params: Json = request.parse_params().unwrap_or(Json::Null);
        let result = match (request.method.as_str(), params["name"].as_str()) {
            ("initialize", _) => Ok(json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "t", "version": "0"},
            })),
            ("tools/call", Some("echo")) => Ok(json!({"content": [], "isError": false})),
            ("tools/call", Some("broken")) => Ok(json!({"content": [], "isError": true})),
            ("tools/call", Some("hang")) => continue,
            (other, _) => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("no {other}"),
            )),
        };
        let response = match result {
            Ok(value) => Response::success(request.id, to_raw_value(&value).unwrap()),
            Err(error) => Response::error(Some(request.id), error),
        };
        let _ = sender.send(response.into()).await;
    }
}

fn service(telemetry: Telemetry) -> StreamableHttpService {
    service_with(Config::default().telemetry(telemetry), app)
}

/// A session-based request's body with `traceparent` in its `_meta`.
pub(crate) fn traced(id: i64, method: &str, mut params: Json) -> String {
    params["_meta"] = json!({"traceparent": traceparent(TRACE, PARENT)});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Sends a POST of session `sid` carrying an HTTP `traceparent`, and reads its answer.
pub(crate) async fn post_traced(
    service: &StreamableHttpService,
    sid: &str,
    body: String,
) -> Vec<Message> {
    let builder = post(Some(sid)).header("traceparent", traceparent(HTTP_TRACE, HTTP_SPAN));
    let response = service.handle(request(builder, body)).await;
    messages(&sse_events(response, 10).await)
}

/// The span's parent is the client's context from `_meta`, and it links the HTTP request's.
fn assert_parented_and_linked(span: &SpanData) {
    assert_eq!(
        span.span_context.trace_id(),
        TraceId::from_hex(TRACE).unwrap()
    );
    assert_eq!(span.parent_span_id, SpanId::from_hex(PARENT).unwrap());
    assert!(span.parent_span_is_remote);
    let linked: Vec<_> = span
        .links
        .iter()
        .map(|l| l.span_context.span_id())
        .collect();
    assert_eq!(linked, [SpanId::from_hex(HTTP_SPAN).unwrap()]);
}

#[tokio::test]
async fn o1_a_session_tools_call_is_a_server_span_parented_from_meta_and_linked_to_http() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let sid = initialize(&service, "2025-11-25").await;
    let body = traced(1, "tools/call", json!({"name": "echo", "arguments": {}}));
    let answer = post_traced(&service, &sid, body).await;
    assert_eq!(answer.len(), 1);
    let span = recorded.span("tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.status, Status::Unset);
    assert_parented_and_linked(&span);
    let want = [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("jsonrpc.request.id", "1"),
        ("mcp.session.id", sid.as_str()),
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("network.protocol.version", "1.1"),
    ];
    for (key, value) in want {
        assert_eq!(attr(&span.attributes, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attr(&span.attributes, "error.type"), None);
    // initialize and notifications/initialized are spans too, without a parent from `_meta`.
    let init = recorded.span("initialize");
    assert_eq!(init.parent_span_id, SpanId::INVALID);
    let asked = attr(&init.attributes, "mcp.protocol.version");
    assert_eq!(
        asked.as_deref(),
        Some("2025-11-25"),
        "the version initialize asks for"
    );
    recorded.span("notifications/initialized");
    // O3: one operation recorded per message served.
    let duration = "mcp.server.operation.duration";
    assert_eq!(recorded.total(duration, None), 3);
    let calls = recorded.total(duration, Some(("gen_ai.tool.name", "echo")));
    assert_eq!(calls, 1);
}

#[tokio::test]
async fn o1_a_per_request_tools_call_is_a_server_span_without_a_session() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let mut meta = modern_app::meta();
    meta["traceparent"] = json!(traceparent(TRACE, PARENT));
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": meta}});
    let builder = modern_app::modern("tools/call")
        .header("mcp-name", "echo")
        .header("traceparent", traceparent(HTTP_TRACE, HTTP_SPAN));
    let response = service.handle(request(builder, body.to_string())).await;
    modern_app::json_result(response).await;
    let span = recorded.span("tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_parented_and_linked(&span);
    assert_eq!(attr(&span.attributes, "mcp.session.id"), None);
    let version = attr(&span.attributes, "mcp.protocol.version");
    assert_eq!(version.as_deref(), Some(modern_app::V));
    assert_eq!(
        attr(&span.attributes, "jsonrpc.request.id").as_deref(),
        Some("7")
    );
    let duration = "mcp.server.operation.duration";
    assert_eq!(recorded.total(duration, None), 1);
}

#[tokio::test]
async fn o1_a_string_request_id_is_recorded_as_its_text() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let body = json!({"jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": modern_app::meta()}});
    let builder = modern_app::modern("tools/call").header("mcp-name", "echo");
    let response = service.handle(request(builder, body.to_string())).await;
    modern_app::json_result(response).await;
    let span = recorded.span("tools/call echo");
    assert_eq!(
        attr(&span.attributes, "jsonrpc.request.id").as_deref(),
        Some("call-7")
    );
}

#[tokio::test]
async fn o2_errors_set_error_type_and_status_error() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let sid = initialize(&service, "2025-11-25").await;
    post_traced(&service, &sid, traced(1, "nothing/here", json!({}))).await;
    let body = traced(2, "tools/call", json!({"name": "broken", "arguments": {}}));
    post_traced(&service, &sid, body).await;
    let unknown = recorded.span("nothing/here");
    assert_eq!(
        attr(&unknown.attributes, "error.type").as_deref(),
        Some("-32601")
    );
    let status_code = attr(&unknown.attributes, "rpc.response.status_code");
    assert_eq!(status_code.as_deref(), Some("-32601"));
    assert!(matches!(unknown.status, Status::Error { .. }));
    let broken = recorded.span("tools/call broken");
    assert_eq!(
        attr(&broken.attributes, "error.type").as_deref(),
        Some("tool_error")
    );
    assert!(matches!(broken.status, Status::Error { .. }));
    // A per-request -32601 as well.
    let body = modern_app::body(3, "nothing/here", json!({}));
    let response = service
        .handle(request(modern_app::modern("nothing/here"), body))
        .await;
    assert_eq!(response.status(), http::StatusCode::NOT_FOUND);
    body_bytes(response).await;
    let spans = recorded.spans();
    let unknown: Vec<_> = spans.iter().filter(|s| s.name == "nothing/here").collect();
    assert_eq!(unknown.len(), 2);
    assert!(
        unknown
            .iter()
            .all(|s| matches!(s.status, Status::Error { .. }))
    );
    let errors = recorded.total(
        "mcp.server.operation.duration",
        Some(("error.type", "-32601")),
    );
    assert_eq!(errors, 2);
    let tool_errors = recorded.total(
        "mcp.server.operation.duration",
        Some(("error.type", "tool_error")),
    );
    assert_eq!(tool_errors, 1);
}

#[tokio::test]
async fn o4_a_deleted_session_records_its_duration_and_leaves_no_live_session() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let sid = initialize(&service, "2025-06-18").await;
    assert_eq!(recorded.total("mcp.server.session.active", None), 1);
    let deleted = service.handle(delete(&sid)).await;
    assert_eq!(deleted.status(), http::StatusCode::NO_CONTENT);
    assert_eq!(recorded.total("mcp.server.session.active", None), 0);
    assert_eq!(recorded.total("mcp.server.session.duration", None), 1);
    let by_delete = Some(("mcp.session.end_reason", "deleted"));
    assert_eq!(recorded.total("mcp.server.session.ended", by_delete), 1);
    let version = Some(("mcp.protocol.version", "2025-06-18"));
    assert_eq!(recorded.total("mcp.server.session.duration", version), 1);
    // A request naming it now is refused, and counted so.
    let gone = service.handle(request(post(Some(&sid)), ping(1))).await;
    assert_eq!(gone.status(), http::StatusCode::NOT_FOUND);
    let refused = Some(("mcp.refusal.reason", "session_not_found"));
    assert_eq!(recorded.total("mcp.server.request.refused", refused), 1);
}

#[tokio::test]
async fn o2_a_request_cancelled_by_its_client_ends_its_span_as_cancelled() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let body = modern_app::body(5, "tools/call", json!({"name": "hang", "arguments": {}}));
    let builder = modern_app::modern("tools/call").header("mcp-name", "hang");
    let call = service.handle(request(builder, body));
    // The client leaves before any answer: M6 cancels the request.
    let left = tokio::time::timeout(std::time::Duration::from_millis(50), call).await;
    assert!(left.is_err(), "no answer came");
    let span = recorded.span("tools/call hang");
    assert_eq!(
        attr(&span.attributes, "error.type").as_deref(),
        Some("cancelled")
    );
    assert!(matches!(span.status, Status::Error { .. }));
    let cancelled = Some(("error.type", "cancelled"));
    assert_eq!(
        recorded.total("mcp.server.operation.duration", cancelled),
        1
    );
}

#[cfg(feature = "serve")]
#[tokio::test]
async fn o4_serve_counts_its_open_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options =
        mcp_streamable_server::serve::Options::default().health_paths("/livez", "/readyz");
    let server = tokio::spawn(options.serve(listener, service, stopped));
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /livez HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = [0u8; 12];
    tcp.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    // The kept-alive connection is open until the client closes it.
    assert_eq!(recorded.total("mcp.server.connection.active", None), 1);
    drop(tcp);
    // Bounded: the server sees the close within a few turns.
    for _ in 0..200 {
        if recorded.total("mcp.server.connection.active", None) == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(recorded.total("mcp.server.connection.active", None), 0);
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn o4_open_streams_and_buffers_are_observed() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let sid = initialize(&service, "2025-11-25").await;
    let standalone = Some(("mcp.stream.kind", "standalone"));
    let stream = service.handle(get(&sid, None)).await;
    assert_eq!(stream.status(), http::StatusCode::OK);
    assert_eq!(recorded.total("mcp.server.stream.active", standalone), 1);
    let outgoing = Some(("mcp.buffer.direction", "outgoing"));
    assert_eq!(recorded.total("mcp.server.buffer.size", outgoing), 0);
    // What POSTs hold for the application: observed too (`notifications/initialized` until
    // the application reads it).
    let held = recorded.points("mcp.server.buffer.size");
    let incoming = |(attrs, _): &(Vec<KeyValue>, i64)| {
        attr(attrs, "mcp.buffer.direction").as_deref() == Some("incoming")
    };
    assert!(held.iter().any(incoming));
    drop(stream);
    assert_eq!(recorded.total("mcp.server.stream.active", standalone), 0);
    // The request streams of initialize and its answer came and went.
    let request = Some(("mcp.stream.kind", "request"));
    assert_eq!(recorded.total("mcp.server.stream.active", request), 0);
}

#[tokio::test]
async fn o1_each_request_of_a_batch_has_its_own_span_ended_with_its_answer() {
    let (recorded, telemetry) = recorded();
    let service = service(telemetry);
    let sid = initialize(&service, "2025-03-26").await;
    let batch = format!(
        "[{},{}]",
        traced(1, "tools/call", json!({"name": "echo", "arguments": {}})),
        traced(2, "tools/call", json!({"name": "broken", "arguments": {}})),
    );
    assert_eq!(post_traced(&service, &sid, batch).await.len(), 2);
    let echo = recorded.span("tools/call echo");
    let broken = recorded.span("tools/call broken");
    assert_eq!(
        attr(&echo.attributes, "jsonrpc.request.id").as_deref(),
        Some("1")
    );
    assert_eq!(
        attr(&broken.attributes, "jsonrpc.request.id").as_deref(),
        Some("2")
    );
    assert_parented_and_linked(&echo);
    assert_parented_and_linked(&broken);
    let tool_error = Some(("error.type", "tool_error"));
    assert_eq!(
        recorded.total("mcp.server.operation.duration", tool_error),
        1
    );
    let calls = Some(("mcp.method.name", "tools/call"));
    assert_eq!(recorded.total("mcp.server.operation.duration", calls), 2);
}

#[tokio::test]
async fn o1_a_sampler_decides_by_method_and_target_and_a_dropped_request_is_still_timed() {
    let sampler = DropsCalls::default();
    let (recorded, telemetry) = sampled_by(sampler.clone());
    let service = service(telemetry);
    let sid = initialize(&service, "2025-11-25").await;
    let body = traced(1, "tools/call", json!({"name": "echo", "arguments": {}}));
    assert_eq!(post_traced(&service, &sid, body).await.len(), 1);
    // What the sampler was asked: the span's name, the method and the target.
    let asked = sampler.asked();
    let (_, call) = asked
        .iter()
        .find(|(name, _)| name == "tools/call echo")
        .expect("the sampler was asked about the call");
    assert_eq!(attr(call, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attr(call, "gen_ai.tool.name").as_deref(), Some("echo"));
    // Dropped: no span; kept (initialize): every attribute, as without a sampler.
    let spans = recorded.spans();
    assert!(spans.iter().all(|s| s.name != "tools/call echo"));
    let init = recorded.span("initialize");
    for key in [
        "mcp.protocol.version",
        "network.transport",
        "mcp.session.id",
    ] {
        assert!(attr(&init.attributes, key).is_some(), "{key}");
    }
    // The duration does not depend on the sampler: the dropped call is timed.
    let calls = Some(("gen_ai.tool.name", "echo"));
    assert_eq!(recorded.total("mcp.server.operation.duration", calls), 1);
}
