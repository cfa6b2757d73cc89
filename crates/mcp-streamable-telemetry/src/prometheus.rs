//! The metrics in Prometheus's text exposition format (version 0.0.4), for Prometheus to scrape.
//!
//! OpenTelemetry's Prometheus exporter (`opentelemetry-prometheus`, of the same OpenTelemetry
//! release) reads the SDK's meters into a `prometheus` registry at each scrape, naming each
//! instrument as Prometheus does: dots become underscores, the unit a suffix
//! (`mcp.server.operation.duration`, in `s`: `mcp_server_operation_duration_seconds`), counters
//! end in `_total`, up-down counters are gauges; a histogram keeps the buckets its instrument
//! declares. Every series carries `otel_scope_name`, and `target_info` the resource
//! (`service_name`).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use prometheus::{Encoder as _, TextEncoder};

use crate::Error;

/// The path the metrics are served at.
pub const PATH: &str = "/metrics";

/// How long the endpoint waits after a failed accept (out of descriptors, most likely) before
/// the next: time for the other connections to close.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The registry OpenTelemetry's exporter fills and the endpoint reads; clones share it.
///
/// ```
/// let prometheus = mcp_streamable_telemetry::Prometheus::default();
/// // Nothing installed into it yet: no series.
/// assert!(!String::from_utf8(prometheus.text()).unwrap().contains("mcp_"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Prometheus {
    registry: prometheus::Registry,
}

impl Prometheus {
    /// The reader to give the meter provider: it collects into this registry at each scrape.
    pub(crate) fn reader(&self) -> Result<opentelemetry_prometheus::PrometheusExporter, Error> {
        opentelemetry_prometheus::exporter()
            .with_registry(self.registry.clone())
            .build()
            .map_err(|e| Error::Exporter("Prometheus exporter", e.into()))
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

    /// Binds `addr` (port 0 picks a free one) and serves the metrics there, `GET` or `HEAD`
    /// of [`PATH`] (405 for another method, 404 for another path), on a task of the current
    /// runtime, until the runtime ends. Returns the address bound.
    ///
    /// # Errors
    /// [`Error::Bind`] when `addr` cannot be bound.
    pub async fn serve(self, addr: SocketAddr) -> Result<SocketAddr, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Bind(addr, e))?;
        let bound = listener.local_addr().map_err(|e| Error::Bind(addr, e))?;
        tokio::spawn(async move {
            loop {
                let tcp = match listener.accept().await {
                    Ok((tcp, _)) => tcp,
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics endpoint: accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
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
        Ok(bound)
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

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::SdkMeterProvider;

    async fn fetch(method: Method, url: String) -> (StatusCode, String) {
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let request = Request::builder()
            .method(method)
            .uri(url)
            .body(Full::default())
            .unwrap();
        let response = client.request(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_counter_is_scraped_by_its_prometheus_name_and_only_at_the_path() {
        let prometheus = Prometheus::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(prometheus.reader().unwrap())
            .build();
        let counter = meters.meter("test").u64_counter("mcp.test.calls").build();
        counter.add(3, &[]);
        let addr = prometheus
            .serve("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();

        let (status, text) = fetch(Method::GET, format!("http://{addr}{PATH}")).await;
        assert_eq!(status, StatusCode::OK);
        let line = text
            .lines()
            .find(|line| line.starts_with("mcp_test_calls_total"))
            .unwrap_or_else(|| panic!("no mcp_test_calls_total in:\n{text}"));
        assert!(line.ends_with(" 3"), "{line}");

        let (status, _) = fetch(Method::POST, format!("http://{addr}{PATH}")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let (status, _) = fetch(Method::GET, format!("http://{addr}/other")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn an_address_taken_is_an_error_naming_it() {
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();
        let refused = Prometheus::default().serve(addr).await.unwrap_err();
        assert!(matches!(refused, Error::Bind(at, _) if at == addr));
        assert!(refused.to_string().contains(&addr.to_string()));
    }
}
