//! O5 (feature `otel`): a tool call's span, exported over OTLP/HTTP by OpenTelemetry's own
//! exporter to a receiver on loopback that decodes it with the protocol's protobuf
//! definitions, says what the convention asks.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_streamable_server::{Config, Telemetry};
use mcp_test_telemetry::{HTTP_SPAN, PARENT, TRACE};
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::{Span, span, status};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use prost::Message as _;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::harness::{WAIT, initialize, service_with};
use crate::otel::{app, post_traced, traced};
use crate::tcp;

/// A receiver of OTLP/HTTP exports on loopback: each request's body, decoded.
async fn receiver() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<ExportTraceServiceRequest>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // Bounded by the test: its runtime ends with it.
        while let Ok((tcp, _)) = listener.accept().await {
            let tx = tx.clone();
            let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
                let tx = tx.clone();
                async move {
                    assert_eq!(request.uri().path(), "/v1/traces");
                    let body = request.into_body().collect().await?.to_bytes();
                    let decoded = ExportTraceServiceRequest::decode(body).expect("protobuf");
                    let _ = tx.send(decoded);
                    Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::new())))
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service),
            );
        }
    });
    (addr, rx)
}

/// The exporter's HTTP client: the tests' hyper client, run on the test's runtime (the batch
/// processor exports from a thread of its own).
#[derive(Debug)]
struct OnRuntime {
    client: tcp::HttpClient,
    runtime: tokio::runtime::Handle,
}

type Sent = Result<http::Response<Bytes>, opentelemetry_http::HttpError>;

impl opentelemetry_http::HttpClient for OnRuntime {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: http::Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Sent> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client.request(request.map(Full::new)).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok::<_, opentelemetry_http::HttpError>(http::Response::from_parts(parts, body))
        });
        Box::pin(async move { sent.await? })
    }
}

fn string(span: &Span, key: &str) -> Option<String> {
    let value = span.attributes.iter().find(|kv| kv.key == key)?;
    match value.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o5_a_tools_call_span_exported_over_otlp_http_follows_the_convention() {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let (addr, mut exports) = receiver().await;
    let client = OnRuntime {
        client: tcp::client(),
        runtime: tokio::runtime::Handle::current(),
    };
    // Protobuf, said: the exporter's default is JSON when any crate of the build enables its
    // `http-json` feature (the examples do, for `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`).
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(client)
        .with_endpoint(format!("http://{addr}/v1/traces"))
        .build()
        .unwrap();
    let tracers = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let telemetry = Telemetry::new(&tracers, &SdkMeterProvider::default());
    let service = service_with(Config::default().telemetry(telemetry), app);
    let sid = initialize(&service, "2025-11-25").await;
    let body = traced(1, "tools/call", json!({"name": "echo", "arguments": {}}));
    assert_eq!(post_traced(&service, &sid, body).await.len(), 1);
    // The batch processor exports from its own thread, through this runtime.
    let flushed = tokio::task::spawn_blocking(move || tracers.force_flush());
    flushed.await.unwrap().unwrap();
    let mut spans = Vec::new();
    while let Ok(Some(export)) = tokio::time::timeout(WAIT, exports.recv()).await {
        let exported = export
            .resource_spans
            .into_iter()
            .flat_map(|r| r.scope_spans);
        spans.extend(exported.flat_map(|s| s.spans));
        if spans.iter().any(|s| s.name == "tools/call echo") {
            break;
        }
    }
    let call = spans
        .iter()
        .find(|s| s.name == "tools/call echo")
        .expect("the call's span was exported");
    assert_eq!(call.kind, span::SpanKind::Server as i32);
    assert_eq!(call.trace_id, TraceId::from_hex(TRACE).unwrap().to_bytes());
    assert_eq!(
        call.parent_span_id,
        SpanId::from_hex(PARENT).unwrap().to_bytes()
    );
    let links: Vec<_> = call.links.iter().map(|l| l.span_id.clone()).collect();
    assert_eq!(links, [SpanId::from_hex(HTTP_SPAN).unwrap().to_bytes()]);
    let status = call.status.as_ref().map_or(0, |s| s.code);
    assert_eq!(status, status::StatusCode::Unset as i32);
    let want = [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("jsonrpc.request.id", "1"),
        ("mcp.session.id", sid.as_str()),
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
    ];
    for (key, value) in want {
        assert_eq!(string(call, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(string(call, "error.type"), None);
}
