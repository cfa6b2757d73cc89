//! C12 (feature `otel`): the client's spans and metrics of the MCP semantic conventions,
//! recorded into OpenTelemetry's in-memory exporters, against our own server (its telemetry
//! recorded apart) in both families: one trace across client and server.

use mcp_jsonrpc::{ErrorObject, Message, Notification, Request, Response, code, to_raw_value};
use mcp_streamable_client::{ClientConnection, Family, Telemetry};
use mcp_streamable_server::{Config, Families, ServerConnection, StreamableHttpService};
use mcp_transport::{Connection, Sender};
use opentelemetry::context::FutureExt;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    InMemorySpanExporter, Sampler, SdkTracerProvider, ShouldSample, SpanData,
};
use serde_json::{Value as Json, json};

use crate::fake::{self, Fake};
use crate::our_server::serve;
use crate::over::Wire;
use crate::{builder, connect, handshake, recv_response, request, send};

/// Where one side's telemetry went.
struct Recorded {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl Recorded {
    fn new() -> Recorded {
        Recorded::sampled_by(Sampler::AlwaysOn)
    }

    /// As [`new`](Self::new), the spans sampled by `sampler`.
    fn sampled_by(sampler: impl ShouldSample + 'static) -> Recorded {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        Recorded {
            tracers: SdkTracerProvider::builder()
                .with_sampler(sampler)
                .with_simple_exporter(spans.clone())
                .build(),
            meters: SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(metrics.clone()).build())
                .build(),
            spans,
            metrics,
        }
    }

    fn client(&self) -> Telemetry {
        Telemetry::new(&self.tracers, &self.meters)
    }

    fn server(&self) -> mcp_streamable_server::Telemetry {
        mcp_streamable_server::Telemetry::new(&self.tracers, &self.meters)
    }

    fn span(&self, name: &str, kind: SpanKind) -> SpanData {
        self.tracers.force_flush().unwrap();
        let spans = self.spans.get_finished_spans().unwrap();
        let names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
        spans
            .into_iter()
            .find(|s| s.name == name && s.span_kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} span {name:?} among {names:?}"))
    }

    /// The data points of histogram `name` in the last collection: attributes and count.
    fn points(&self, name: &str) -> Vec<(Vec<KeyValue>, u64)> {
        self.meters.force_flush().unwrap();
        let exported = self.metrics.get_finished_metrics().unwrap();
        let last = exported.last().expect("metrics were exported");
        let metric = last
            .scope_metrics()
            .flat_map(|s| s.metrics())
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("no metric {name}"));
        let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() else {
            panic!("{name} is not a histogram");
        };
        h.data_points()
            .map(|p| (p.attributes().cloned().collect(), p.count()))
            .collect()
    }
}

fn attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match &kv.value {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        })
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
        .telemetry(server.server());
    let addr = serve(StreamableHttpService::new(config, app), Wire::Http1).await;
    let builder = Wire::Http1
        .builder(&Wire::Http1.url(addr))
        .family(family)
        .telemetry(client.client());
    (connect(builder).await, addr.port())
}

/// Sends `message` under a span of the application's own, which the request's span is a
/// child of; returns that span's context.
async fn send_under_parent(
    client: &Recorded,
    conn: &ClientConnection,
    message: Message,
) -> opentelemetry::trace::SpanContext {
    let parent = client.tracers.tracer("app").start("app work");
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

    let span = client.span("tools/call echo", SpanKind::Client);
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
    let served = server.span("tools/call echo", SpanKind::Server);
    assert_one_trace(&parent, &span, &served);

    // A notification's span ends at once.
    let note = client.span("notifications/initialized", SpanKind::Client);
    assert_eq!(attr(&note.attributes, "jsonrpc.request.id"), None);
    conn.close().await.unwrap();
}

#[tokio::test]
async fn c12_a_per_request_tools_call_is_a_client_span_and_one_trace_with_the_server() {
    let (server, client) = (Recorded::new(), Recorded::new());
    let (mut conn, _) = pair(Families::Both, Family::PerRequest, &server, &client).await;
    let parent = send_under_parent(&client, &conn, tool(7, "echo")).await;
    assert!(!recv_response(&mut conn).await.is_error());

    let span = client.span("tools/call echo", SpanKind::Client);
    let attrs = &span.attributes;
    assert_eq!(
        attr(attrs, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(attr(attrs, "jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(attr(attrs, "mcp.session.id"), None);
    let served = server.span("tools/call echo", SpanKind::Server);
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
        let span = client.span(name, SpanKind::Client);
        assert_eq!(
            attr(&span.attributes, "error.type").as_deref(),
            Some(kind),
            "{name}"
        );
        assert!(matches!(span.status, Status::Error { .. }), "{name}");
    }
    let prompt = client.span("prompts/get p", SpanKind::Client);
    assert_eq!(
        attr(&prompt.attributes, "gen_ai.prompt.name").as_deref(),
        Some("p")
    );

    let operations = client.points("mcp.client.operation.duration");
    let count = |method: &str, kind: Option<&str>| -> u64 {
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
    assert_eq!(sessions.iter().map(|(_, n)| n).sum::<u64>(), 1);
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
        .telemetry(client.client());
    let mut conn = connect(builder).await;
    handshake(&mut conn).await;
    let err = send(&conn, request(2, "tools/list")).await.unwrap_err();
    assert!(crate::cause(&err).is_session_expired());

    let span = client.span("tools/list", SpanKind::Client);
    assert_eq!(attr(&span.attributes, "error.type").as_deref(), Some("404"));
    assert!(matches!(span.status, Status::Error { .. }));
    // Ended by the 404, before the connection closes.
    let sessions = client.points("mcp.client.session.duration");
    assert_eq!(sessions.iter().map(|(_, n)| n).sum::<u64>(), 1);
    conn.close().await.unwrap();
    let sessions = client.points("mcp.client.session.duration");
    assert_eq!(sessions.iter().map(|(_, n)| n).sum::<u64>(), 1);
}

#[tokio::test]
async fn c12_off_records_nothing_and_carries_no_context() {
    let (server, app) = (Recorded::new(), Recorded::new());
    let config = Config::default()
        .families(Families::SessionOnly)
        .telemetry(server.server());
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

    app.tracers.force_flush().unwrap();
    let spans = app.spans.get_finished_spans().unwrap();
    assert!(
        spans.iter().all(|s| s.span_kind != SpanKind::Client),
        "{spans:?}"
    );
    app.meters.force_flush().unwrap();
    let exported = app.metrics.get_finished_metrics().unwrap();
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
    let served = server.span("tools/call echo", SpanKind::Server);
    assert_ne!(served.span_context.trace_id(), parent.trace_id());
    assert!(!served.parent_span_is_remote);
}

/// What a sampler was asked about: each span's name and the attributes it started with.
type Asked = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<KeyValue>)>>>;

/// A sampler that keeps what it was asked about, and drops the spans of `tools/call`s.
#[derive(Debug, Clone, Default)]
struct DropsCalls(Asked);

impl ShouldSample for DropsCalls {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        trace_id: opentelemetry::trace::TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[opentelemetry::trace::Link],
    ) -> opentelemetry::trace::SamplingResult {
        self.0
            .lock()
            .unwrap()
            .push((name.to_owned(), attributes.to_vec()));
        let sampler = match attr(attributes, "mcp.method.name").as_deref() {
            Some("tools/call") => Sampler::AlwaysOff,
            _ => Sampler::AlwaysOn,
        };
        sampler.should_sample(parent, trace_id, name, kind, attributes, links)
    }
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
    let asked = sampler.0.lock().unwrap().clone();
    let (_, call) = asked
        .iter()
        .find(|(name, _)| name == "tools/call echo")
        .expect("the sampler was asked about the call");
    assert_eq!(attr(call, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attr(call, "gen_ai.tool.name").as_deref(), Some("echo"));
    // Dropped: no client span, but its context went into `_meta` all the same, so the server's
    // span is in the application's trace; and the call's duration is recorded.
    client.tracers.force_flush().unwrap();
    let spans = client.spans.get_finished_spans().unwrap();
    assert!(
        spans
            .iter()
            .all(|s| !(s.name == "tools/call echo" && s.span_kind == SpanKind::Client))
    );
    let served = server.span("tools/call echo", SpanKind::Server);
    assert_eq!(served.span_context.trace_id(), parent.trace_id());
    let calls = client
        .points("mcp.client.operation.duration")
        .into_iter()
        .filter(|(attrs, _)| attr(attrs, "gen_ai.tool.name").as_deref() == Some("echo"))
        .map(|(_, n)| n)
        .sum::<u64>();
    assert_eq!(calls, 1);
    // Kept (initialize): every attribute, as without a sampler.
    let init = client.span("initialize", SpanKind::Client);
    for key in ["server.address", "server.port", "network.transport"] {
        assert!(attr(&init.attributes, key).is_some(), "{key}");
    }
    conn.close().await.unwrap();
}
