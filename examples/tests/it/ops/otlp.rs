//! `OTEL_EXPORTER_OTLP_ENDPOINT`: `echo_server` sends its spans over OTLP/HTTP to a receiver on
//! loopback, which decodes them with OpenTelemetry's protobuf definitions; a tool call's span
//! has the `traceparent` of its `_meta` as parent, and the process's `service.name`.

use std::net::SocketAddr;
use std::process::Stdio;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span;
use prost::Message as _;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::{EXCHANGE_TIMEOUT, EchoServer, Http, Session};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// A receiver of OTLP/HTTP exports on loopback: the trace exports, decoded (metrics exports
/// are answered and dropped).
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
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let tx = tx.clone();
                async move {
                    let traces = request.uri().path() == "/v1/traces";
                    let body = request.into_body().collect().await?.to_bytes();
                    if traces {
                        let _ = tx.send(ExportTraceServiceRequest::decode(body).expect("protobuf"));
                    }
                    Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::new())))
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

fn string(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?;
    match value.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o6_echo_server_exports_a_tools_call_span_over_otlp_parented_from_meta() {
    let (addr, mut exports) = receiver().await;
    let endpoint = format!("http://{addr}");
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    let server = EchoServer::start(&[], &env, Stdio::null());
    let http = Http::new();
    let session = Session::open(&http, &server).await;
    let meta = json!({"traceparent": format!("00-{TRACE}-{PARENT}-01")});
    assert_eq!(session.echo(7, "traced", meta).await, "traced");
    // SIGTERM: the server stops and flushes its exporters before it exits, so everything it
    // recorded has been sent once it is gone.
    assert!(server.terminate().success());
    let mut found = None;
    while let Ok(Some(export)) = tokio::time::timeout(EXCHANGE_TIMEOUT, exports.recv()).await {
        for resource in export.resource_spans {
            let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
            let spans = resource.scope_spans.into_iter().flat_map(|s| s.spans);
            for span in spans.filter(|s| s.name == "tools/call echo") {
                found = Some((string(&attributes, "service.name"), span));
            }
        }
        if found.is_some() {
            break;
        }
    }
    let (service, call) = found.expect("the tools/call span arrived");
    assert_eq!(service.as_deref(), Some("echo_server"));
    assert_eq!(call.kind, span::SpanKind::Server as i32);
    assert_eq!(hex(&call.trace_id), TRACE);
    assert_eq!(hex(&call.parent_span_id), PARENT);
    assert_eq!(
        string(&call.attributes, "gen_ai.tool.name").as_deref(),
        Some("echo")
    );
    assert_eq!(
        string(&call.attributes, "jsonrpc.request.id").as_deref(),
        Some("7")
    );
    assert_eq!(
        string(&call.attributes, "mcp.session.id").as_deref(),
        Some(session.id.as_str())
    );
}

#[test]
fn an_otlp_protocol_not_served_is_refused_naming_the_two() {
    let output = crate::faults::echo_server_command()
        .args(["--addr", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("http/protobuf") && stderr.contains("http/json"),
        "{stderr}"
    );
}
