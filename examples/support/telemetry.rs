//! `echo_server`'s OpenTelemetry: the SDK's providers installed as the global ones, which the
//! server's `otel` feature records into (spans `mcp.server`, the `mcp.server.*` instruments).
//!
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` set (OpenTelemetry's standard variable, e.g.
//!   `http://127.0.0.1:4318`): spans and metrics go there over OTLP/HTTP in protobuf, or JSON
//!   with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` (`/v1/traces`, `/v1/metrics`), and the `traceparent` a client puts in `_meta` becomes the
//!   parent of the server's span (`TraceContextPropagator`). The exporter reads the other
//!   standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`...).
//! - `--metrics ADDR`: the metrics in Prometheus's text exposition format at
//!   `http://ADDR/metrics` (see [`metrics`]).
//!
//! Without either, nothing is installed and the server records into OpenTelemetry's no-op
//! providers.

pub mod metrics;

use std::future::Future;
use std::pin::Pin;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// OpenTelemetry's standard variable: where OTLP goes, the signal's path appended.
pub const OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The providers installed, flushed and stopped by [`Installed::shutdown`].
#[derive(Debug, Default)]
pub struct Installed {
    tracers: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

impl Installed {
    /// Exports what is still buffered and stops the exporters' threads: call it once the
    /// server stopped, from the runtime (it waits on a blocking thread).
    pub async fn shutdown(self) {
        let stopped = tokio::task::spawn_blocking(move || {
            if let Some(tracers) = self.tracers {
                let _ = tracers.shutdown();
            }
            if let Some(meters) = self.meters {
                let _ = meters.shutdown();
            }
        });
        let _ = stopped.await;
    }
}

/// Installs the global providers the environment and `metrics` ask for; call it from the
/// runtime, before the service is built (it takes the global providers then).
pub fn install(metrics: Option<&metrics::Registry>) -> anyhow::Result<Installed> {
    let otlp = std::env::var_os(OTLP_ENDPOINT).is_some_and(|v| !v.is_empty());
    if !otlp && metrics.is_none() {
        return Ok(Installed::default());
    }
    let resource = resource();
    let mut meters = SdkMeterProvider::builder().with_resource(resource.clone());
    if let Some(registry) = metrics {
        meters = meters.with_reader(registry.reader()?);
    }
    let mut tracers = None;
    if otlp {
        let protocol = protocol()?;
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_http_client(OnRuntime::new())
            .build()
            .context("the OTLP span exporter")?;
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(spans)
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        tracers = Some(provider);
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_http_client(OnRuntime::new())
            .build()
            .context("the OTLP metric exporter")?;
        meters = meters.with_periodic_exporter(exporter);
    }
    let meters = meters.build();
    opentelemetry::global::set_meter_provider(meters.clone());
    Ok(Installed {
        tracers,
        meters: Some(meters),
    })
}

/// OpenTelemetry's standard variable for OTLP's encoding: `http/protobuf` (the default) or
/// `http/json`; gRPC is not built in.
pub const OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";

/// The encoding `OTEL_EXPORTER_OTLP_PROTOCOL` asks for; an unknown one is an error naming the
/// choices.
fn protocol() -> anyhow::Result<opentelemetry_otlp::Protocol> {
    match std::env::var(OTLP_PROTOCOL).as_deref() {
        Err(_) | Ok("" | "http/protobuf") => Ok(opentelemetry_otlp::Protocol::HttpBinary),
        Ok("http/json") => Ok(opentelemetry_otlp::Protocol::HttpJson),
        Ok(other) => anyhow::bail!(
            "{OTLP_PROTOCOL}={other} is not served: http/protobuf (the default) or http/json"
        ),
    }
}

/// `service.name` `echo_server` unless `OTEL_SERVICE_NAME` says otherwise (the SDK's detectors
/// read it and the other `OTEL_RESOURCE_ATTRIBUTES`).
fn resource() -> Resource {
    let builder = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_some() {
        builder.build()
    } else {
        builder.with_service_name("echo_server").build()
    }
}

/// The exporters' HTTP client: hyper's, on the runtime that installed it (the batch span
/// processor and the periodic reader export from threads of their own).
#[derive(Debug, Clone)]
struct OnRuntime {
    client: Client<HttpConnector, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    fn new() -> OnRuntime {
        OnRuntime {
            client: Client::builder(TokioExecutor::new()).build_http(),
            runtime: tokio::runtime::Handle::current(),
        }
    }
}

type Sent = Result<hyper::Response<Bytes>, opentelemetry_http::HttpError>;

impl opentelemetry_http::HttpClient for OnRuntime {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: hyper::Request<Bytes>,
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
            Ok::<_, opentelemetry_http::HttpError>(hyper::Response::from_parts(parts, body))
        });
        Box::pin(async move { sent.await? })
    }
}
