//! `--metrics ADDR`: the server's OpenTelemetry metrics in Prometheus's text exposition format
//! (version 0.0.4) at `http://ADDR/metrics`, for Prometheus to scrape.
//!
//! OpenTelemetry's Prometheus exporter (`opentelemetry-prometheus`, of the workspace's
//! OpenTelemetry release) reads the SDK's meters into a `prometheus` registry at each scrape,
//! naming each instrument as Prometheus does: dots become underscores, the unit a suffix
//! (`mcp.server.operation.duration`, in `s`: `mcp_server_operation_duration_seconds`), counters
//! end in `_total`; a histogram keeps the buckets its instrument declares (the server's
//! `DURATION_BUCKETS`). Every series carries `otel_scope_name`, and `target_info` the resource
//! (`service_name`).

use std::net::SocketAddr;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use prometheus::{Encoder as _, TextEncoder};

/// The path the metrics are served at.
pub const PATH: &str = "/metrics";

/// The registry the exporter fills and the endpoint reads.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    registry: prometheus::Registry,
}

impl Registry {
    /// The reader to give the meter provider: it collects into this registry.
    pub(super) fn reader(&self) -> anyhow::Result<opentelemetry_prometheus::PrometheusExporter> {
        opentelemetry_prometheus::exporter()
            .with_registry(self.registry.clone())
            .build()
            .context("the Prometheus exporter")
    }

    /// The metrics now, in the text exposition format.
    pub fn text(&self) -> Vec<u8> {
        let mut text = Vec::new();
        // Writing into a Vec fails only on a metric the registry itself refuses to encode.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut text) {
            tracing::error!(error = %e, "could not encode the metrics");
        }
        text
    }

    /// Binds `addr`, prints `metrics on http://ADDR/metrics` (port 0 picks a free one), and
    /// serves the metrics there (GET or HEAD of [`PATH`]; 404 elsewhere) until the process
    /// ends.
    pub async fn serve(self, addr: SocketAddr) -> anyhow::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding --metrics {addr}"))?;
        println!("metrics on http://{}{PATH}", listener.local_addr()?);
        tokio::spawn(async move {
            loop {
                let tcp = match listener.accept().await {
                    Ok((tcp, _)) => tcp,
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics endpoint: accept failed");
                        // Out of descriptors, most likely: give the others time to close.
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let registry = self.clone();
                let service = hyper::service::service_fn(move |request| {
                    let answer = registry.answer(&request);
                    async move { Ok::<_, std::convert::Infallible>(answer) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service),
                );
            }
        });
        Ok(())
    }

    fn answer(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let status = match (request.method(), request.uri().path()) {
            (&Method::GET | &Method::HEAD, PATH) => StatusCode::OK,
            (_, PATH) => StatusCode::METHOD_NOT_ALLOWED,
            _ => StatusCode::NOT_FOUND,
        };
        let body = if status == StatusCode::OK {
            self.text()
        } else {
            Vec::new()
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        response
    }
}
