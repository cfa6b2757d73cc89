//! What telemetry costs a request (issue 29: at most 5% more CPU per request): `tools/call`s of
//! one session through the service in process (no sockets, no HTTP parsing: the server's own
//! work only, so the share telemetry takes is the largest it can be). Built without feature
//! `otel`, nothing is recorded; with it, spans go to a batch processor whose exporter drops
//! them, metrics to a periodic reader, as with an exporter installed. Run it under
//! `valgrind --tool=callgrind` for instructions and `malloc` calls per request, which a noisy
//! machine does not change (run it with two counts of calls: the difference is the calls'):
//!
//! ```text
//! cargo build --release -p mcp-streamable-server --example otel_cost [--features otel]
//! valgrind --tool=callgrind target/release/examples/otel_cost 2000 [RATIO]
//! ```
//!
//! `RATIO` (default 1) is the share of traces sampled, by trace id: 0.1 keeps one in ten.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_jsonrpc::{Message, Response};
use mcp_streamable_server::{Config, ServerConnection, StreamableHttpService};
use mcp_transport::{Connection, Sender};
use serde_json::json;

/// Answers every request at once with a small result.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    while let Ok(Some(message)) = conn.recv().await {
        let Message::Request(request) = message else {
            continue;
        };
        let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "cost", "version": "0"}, "content": [{"type": "text", "text": "hi"}]});
        let result = mcp_jsonrpc::to_raw_value(&result).unwrap();
        let _ = sender
            .send(Response::success(request.id, result).into())
            .await;
    }
}

fn post(session: Option<&str>, body: String) -> http::Request<Full<Bytes>> {
    let mut b = http::Request::post("http://localhost/mcp")
        .header("host", "localhost")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(id) = session {
        b = b.header("mcp-session-id", id);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

#[cfg(feature = "otel")]
mod exporter {
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SpanData, SpanExporter};

    /// An exporter that drops what it is given: the cost measured is recording, not sending.
    #[derive(Debug)]
    pub(crate) struct Dropping;

    impl SpanExporter for Dropping {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            drop(batch);
            Ok(())
        }
    }
}

fn config(ratio: f64) -> Config {
    #[cfg(feature = "otel")]
    {
        use opentelemetry_sdk::metrics::{
            InMemoryMetricExporter, PeriodicReader, SdkMeterProvider,
        };
        use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
        let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio)));
        let tracers = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_batch_exporter(exporter::Dropping)
            .build();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
            .build();
        let telemetry = mcp_streamable_server::Telemetry::new(&tracers, &meters);
        // Kept for the process's life: dropped, the providers would shut down.
        std::mem::forget((tracers, meters));
        Config::default().telemetry(telemetry)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = ratio;
        Config::default()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let ratio: f64 = std::env::args()
        .nth(2)
        .and_then(|r| r.parse().ok())
        .unwrap_or(1.0);
    let service = StreamableHttpService::new(config(ratio), app);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "cost", "version": "0"}}});
    let response = service.handle(post(None, init.to_string())).await;
    let sid = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    response.into_body().collect().await.unwrap();
    // The client's side made first, so that the count is the server's as far as can be.
    let bodies: Vec<String> = (1..=calls)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}}})
            .to_string()
        })
        .collect();
    for body in bodies {
        let response = service.handle(post(Some(&sid), body)).await;
        response.into_body().collect().await.unwrap();
    }
    println!("otel {}: {calls} calls", cfg!(feature = "otel"));
}
