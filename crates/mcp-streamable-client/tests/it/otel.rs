//! C12 (feature `otel`): the client's spans and metrics of the MCP semantic conventions,
//! recorded into OpenTelemetry's in-memory exporters, against our own server (its telemetry
//! recorded apart) in both families: one trace across client and server.

use mcp_jsonrpc::{ErrorObject, Message, Notification, Request, Response, code, to_raw_value};
use mcp_streamable_client::{ClientConnection, Family, Telemetry};
use mcp_streamable_server::{Config, Families, ServerConnection, StreamableHttpService};
use mcp_test_telemetry::{DropsCalls, Recorded, attr};
use mcp_transport::{Connection, Sender};
use opentelemetry::Context;
use opentelemetry::context::FutureExt;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value as Json, json};

use crate::fake::{self, Fake};
use crate::our_server::serve;
use crate::over::Wire;
use crate::{builder, connect, handshake, recv_response, request, send};

/// The client's telemetry, recording into `recorded`.
fn client_side(recorded: &Recorded) -> Telemetry {
    Telemetry::new(recorded.tracers(), recorded.meters())
}

/// The server's telemetry, recording into `recorded`.
fn server_side(recorded: &Recorded) -> mcp_streamable_server::Telemetry {
    mcp_streamable_server::Telemetry::new(recorded.tracers(), recorded.meters())
}

/// `initialize`; `tools/call` of `echo` (a result), `broken` (`isError`), `hang` (no answer);
/// -32601 for anything else.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
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
            ("tools/call", Some("echo")) => Ok(json!({"content": []})),
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

fn tool(id: i64, name: &str) -> Message {
    let params = json!({"name": name, "arguments": {}});
    Request::new(id, "tools/call", Some(to_raw_value(&params).unwrap())).into()
}

/// Our server, recording into `server`, under `families`; a client of `family` recording into
/// `client`, connected.
async fn pair(
    families: Families,
    family: Family,
    server: &Recorded,
    client: &Recorded,
) -> (ClientConnection, u16) {
    let config = Config::default()
        .families(families)
        .telemetry(server_side(server));
    let addr = serve(StreamableHttpService::new(config, app), Wire::Http1).await;
    let builder = Wire::Http1
        .builder(&Wire::Http1.url(addr))
        .family(family)
        .telemetry(client_side(client));
    (connect(builder).await, addr.port())
}

/// Sends `message` under a span of the application's own, which the request's span is a
/// child of; returns that span's context.
async fn send_under_parent(
    client: &Recorded,
    conn: &ClientConnection,
    message: Message,
) -> opentelemetry::trace::SpanContext {
    let parent = client.tracers().tracer("app").start("app work");
    let cx = Context::current_with_span(parent);
    let parent = cx.span().span_context().clone();
    send(conn, message).with_context(cx).await.unwrap();
    parent
}

/// The client's span is a child of the application's, and the server's a child of the
/// client's, through `traceparent` in `_meta`: one trace.
fn assert_one_trace(
    parent: &opentelemetry::trace::SpanContext,
    client: &SpanData,
    server: &SpanData,
) {
    assert_eq!(client.span_context.trace_id(), parent.trace_id());
    assert_eq!(client.parent_span_id, parent.span_id());
    assert_eq!(server.span_context.trace_id(), parent.trace_id());
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(server.parent_span_is_remote);
}

#[tokio::test]
async fn c12_a_session_tools_call_is_a_client_span_and_one_trace_with_the_server() {
    let (server, client) = (Recorded::new(), Recorded::new());
    let (mut conn, port) = pair(Families::SessionOnly, Family::Session, &server, &client).await;
    handshake(&mut conn).await;
    let parent = send_under_parent(&client, &conn, tool(2, "echo")).await;
    assert!(!recv_response(&mut conn).await.is_error());

    let span = client.span_of_kind("tools/call echo", SpanKind::Client);
    assert_eq!(span.status, Status::Unset);
    let attrs = &span.attributes;
    let sid = conn.session_id().expect("a session");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("jsonrpc.request.id", "2"),
        ("gen_ai.tool.name", "echo"),
        ("mcp.protocol.version", "2025-06-18"),
        ("mcp.session.id", sid.as_str()),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("server.address", "127.0.0.1"),
        ("server.port", &port.to_string()),
    ] {
        assert_eq!(attr(attrs, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attr(attrs, "error.type"), None);
    let served = server.span_of_kind("tools/call echo", SpanKind::Server);
    assert_one_trace(&parent, &span, &served);

    // A notification's span ends at once.
    let note = client.span_of_kind("notifications/initialized", SpanKind::Client);
    assert_eq!(attr(&note.attributes, "jsonrpc.request.id"), None);
    conn.close().await.unwrap();
}

#[tokio::test]
async fn c12_a_per_request_tools_call_is_a_client_span_and_one_trace_with_the_server() {
    let (server, client) = (Recorded::new(), Recorded::new());
    let (mut conn, _) = pair(Families::Both, Family::PerRequest, &server, &client).await;
    let parent = send_under_parent(&client, &conn, tool(7, "echo")).await;
    assert!(!recv_response(&mut conn).await.is_error());

    let span = client.span_of_kind("tools/call echo", SpanKind::Client);
    let attrs = &span.attributes;
    assert_eq!(
        attr(attrs, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(attr(attrs, "jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(attr(attrs, "mcp.session.id"), None);
    let served = server.span_of_kind("tools/call echo", SpanKind::Server);
    assert_one_trace(&parent, &span, &served);
    conn.close().await.unwrap();
}

#[tokio::test]
async fn c12_errors_tool_errors_and_cancellations_set_error_type_and_durations_are_recorded() {
    let (server, client) = (Recorded::new(), Recorded::new());
    let (mut conn, _) = pair(Families::SessionOnly, Family::Session, &server, &client).await;
    handshake(&mut conn).await;
    send(
        &conn,
        Request::new(
            2,
            "prompts/get",
            Some(to_raw_value(&json!({"name": "p"})).unwrap()),
        )
        .into(),
    )
    .await
    .unwrap();
    assert!(recv_response(&mut conn).await.is_error());
    send(&conn, tool(3, "broken")).await.unwrap();
    assert!(!recv_response(&mut conn).await.is_error());
    send(&conn, tool(4, "hang")).await.unwrap();
    let cancel = json!({"requestId": 4, "reason": "no longer needed"});
    let cancel = Notification::new(
        "notifications/cancelled",
        Some(to_raw_value(&cancel).unwrap()),
    );
    send(&conn, cancel.into()).await.unwrap();

    for (name, kind) in [
        ("prompts/get p", "-32601"),
        ("tools/call broken", "tool_error"),
        ("tools/call hang", "cancelled"),
    ] {
        let span = client.span_of_kind(name, SpanKind::Client);
        assert_eq!(
            attr(&span.attributes, "error.type").as_deref(),
            Some(kind),
            "{name}"
        );
        assert!(matches!(span.status, Status::Error { .. }), "{name}");
    }
    let prompt = client.span_of_kind("prompts/get p", SpanKind::Client);
    assert_eq!(
        attr(&prompt.attributes, "gen_ai.prompt.name").as_deref(),
        Some("p")
    );

    let operations = client.points("mcp.client.operation.duration");
    let count = |method: &str, kind: Option<&str>| -> i64 {
        operations
            .iter()
            .filter(|(a, _)| attr(a, "mcp.method.name").as_deref() == Some(method))
            .filter(|(a, _)| attr(a, "error.type").as_deref() == kind)
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(count("initialize", None), 1);
    assert_eq!(count("prompts/get", Some("-32601")), 1);
    assert_eq!(count("tools/call", Some("tool_error")), 1);
    assert_eq!(count("tools/call", Some("cancelled")), 1);
    let (tool_attrs, _) = operations
        .iter()
        .find(|(a, _)| attr(a, "error.type").as_deref() == Some("tool_error"))
        .unwrap();
    assert_eq!(
        attr(tool_attrs, "gen_ai.tool.name").as_deref(),
        Some("broken")
    );
    assert_eq!(
        attr(tool_attrs, "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );

    conn.close().await.unwrap();
    let sessions = client.points("mcp.client.session.duration");
    assert_eq!(sessions.iter().map(|(_, n)| n).sum::<i64>(), 1);
    assert_eq!(
        attr(&sessions[0].0, "mcp.protocol.version").as_deref(),
        Some("2025-06-18")
    );
}

#[tokio::test]
async fn c12_an_expired_session_ends_its_duration_and_its_failed_request_says_404() {
    let client = Recorded::new();
    let server = Fake::start(|req| async move {
        if req.is_post("tools/list") {
            return fake::status(404, "session not found");
        }
        fake::standard(&req)
    })
    .await;
    let builder = builder(&server.url)
        .standalone_stream(false)
        .telemetry(client_side(&client));
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    let err = send(&conn, request(2, "tools/list")).await.unwrap_err();
    assert!(crate::cause(&err).is_session_expired());

    let span = client.span_of_kind("tools/list", SpanKind::Client);
    assert_eq!(attr(&span.attributes, "error.type").as_deref(), Some("404"));
    assert!(matches!(span.status, Status::Error { .. }));
    // Ended by the 404, before the connection closes.
    let sessions = client.points("mcp.client.session.duration");
    assert_eq!(sessions.iter().map(|(_, n)| n).sum::<i64>(), 1);
    conn.close().await.unwrap();
    let sessions = client.points("mcp.client.session.duration");
    assert_eq!(sessions.iter().map(|(_, n)| n).sum::<i64>(), 1);
}

#[tokio::test]
async fn c12_off_records_nothing_and_carries_no_context() {
    let (server, app) = (Recorded::new(), Recorded::new());
    let config = Config::default()
        .families(Families::SessionOnly)
        .telemetry(server_side(&server));
    let addr = serve(StreamableHttpService::new(config, self::app), Wire::Http1).await;
    let off = mcp_streamable_client::Telemetry::off();
    assert!(!off.is_on() && format!("{off:?}").contains("on: false"));
    let builder = Wire::Http1
        .builder(&Wire::Http1.url(addr))
        .family(Family::Session)
        .telemetry(off);
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    // The application's own span is current, and a propagator is set: an instrumented client
    // would make its span a child of it and carry the context to the server.
    let parent = send_under_parent(&app, &conn, tool(2, "echo")).await;
    assert!(!recv_response(&mut conn).await.is_error());
    conn.close().await.unwrap();

    let spans = app.spans();
    assert!(
        spans.iter().all(|s| s.span_kind != SpanKind::Client),
        "{spans:?}"
    );
    let exported = app.metrics();
    let names: Vec<String> = exported
        .iter()
        .flat_map(|m| m.scope_metrics())
        .flat_map(|s| s.metrics())
        .map(|m| m.name().to_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with("mcp.client.")),
        "{names:?}"
    );
    // No `traceparent` reached the server: its span starts a trace of its own.
    let served = server.span_of_kind("tools/call echo", SpanKind::Server);
    assert_ne!(served.span_context.trace_id(), parent.trace_id());
    assert!(!served.parent_span_is_remote);
}

#[tokio::test]
async fn c12_a_sampler_decides_by_method_and_target_and_a_dropped_call_still_carries_its_context() {
    let sampler = DropsCalls::default();
    let (server, client) = (Recorded::new(), Recorded::sampled_by(sampler.clone()));
    let (mut conn, _) = pair(Families::SessionOnly, Family::Session, &server, &client).await;
    handshake(&mut conn).await;
    let parent = send_under_parent(&client, &conn, tool(2, "echo")).await;
    assert!(!recv_response(&mut conn).await.is_error());
    // What the sampler was asked: the span's name, the method and the target.
    let asked = sampler.asked();
    let (_, call) = asked
        .iter()
        .find(|(name, _)| name == "tools/call echo")
        .expect("the sampler was asked about the call");
    assert_eq!(attr(call, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attr(call, "gen_ai.tool.name").as_deref(), Some("echo"));
    // Dropped: no client span, but its context went into `_meta` all the same, so the server's
    // span is in the application's trace; and the call's duration is recorded.
    let spans = client.spans();
    assert!(
        spans
            .iter()
            .all(|s| !(s.name == "tools/call echo" && s.span_kind == SpanKind::Client))
    );
    let served = server.span_of_kind("tools/call echo", SpanKind::Server);
    assert_eq!(served.span_context.trace_id(), parent.trace_id());
    let calls = client
        .points("mcp.client.operation.duration")
        .into_iter()
        .filter(|(attrs, _)| attr(attrs, "gen_ai.tool.name").as_deref() == Some("echo"))
        .map(|(_, n)| n)
        .sum::<i64>();
    assert_eq!(calls, 1);
    // Kept (initialize): every attribute, as without a sampler.
    let init = client.span_of_kind("initialize", SpanKind::Client);
    for key in ["server.address", "server.port", "network.transport"] {
        assert!(attr(&init.attributes, key).is_some(), "{key}");
    }
    conn.close().await.unwrap();
}
