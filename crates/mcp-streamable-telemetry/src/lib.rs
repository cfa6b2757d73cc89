//! OpenTelemetry exporters for an MCP Streamable HTTP server or gateway, installed the way an
//! operator expects them: OTLP/HTTP from OpenTelemetry's standard variables, and the metrics in
//! Prometheus's text format on a port of their own.
//!
//! The server's and the client's `otel` features record spans and metrics by the MCP semantic
//! conventions into the *global* OpenTelemetry providers, and install no exporter: a library
//! does not choose where its telemetry goes. A program does, and this crate is that choice made
//! once, for `echo_server` and `mcp-gateway` alike:
//!
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` set (e.g. `http://127.0.0.1:4318`): spans and metrics go
//!   there over OTLP/HTTP (`/v1/traces`, `/v1/metrics`), in protobuf, or in JSON with
//!   `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` (another value is an [`Error`] naming the two), and
//!   the W3C `TraceContextPropagator` becomes the global propagator, so that the `traceparent` a
//!   client puts in `params._meta` parents the server's span. The exporter reads the other
//!   standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`...).
//! - A [`Prometheus`] registry given: the meters are read into it at each scrape, and
//!   [`Prometheus::serve`] answers `GET /metrics` with the text exposition format.
//! - Neither: nothing is installed ([`Installed::is_empty`]), and what a server or a client
//!   records would go to OpenTelemetry's no-op providers; `echo_server` and `mcp-gateway` then
//!   build their server (and `mcp-gateway connect` its client) with `Telemetry::off()`, which
//!   records nothing and skips the work.
//!
//! [`Logs`] sets up the log the same way for every program: stderr, `RUST_LOG`, plain or JSON
//! lines, and the server's request log on demand (with feature `clap`, as flags).
//!
//! The resource's `service.name` is the program's name given to [`install`], unless
//! `OTEL_SERVICE_NAME` (or `OTEL_RESOURCE_ATTRIBUTES`) says otherwise.
//!
//! ```no_run
//! use mcp_streamable_telemetry::{Prometheus, install};
//!
//! # async fn run() -> Result<(), mcp_streamable_telemetry::Error> {
//! let prometheus = Prometheus::default();
//! // Before the service is built: it takes the global providers then.
//! let installed = install("my-server", Some(&prometheus))?;
//! let metrics = prometheus.serve("127.0.0.1:9464".parse().unwrap()).await?;
//! println!("metrics on http://{metrics}/metrics");
//! // ... serve until told to stop, then export what is still buffered:
//! installed.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs, missing_debug_implementations)]

mod error;
mod logs;
mod otlp;
mod prometheus;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;

pub use error::Error;
pub use logs::{DEFAULT_FILTER, LogFormat, Logs, REQUEST_LOG_TARGET};
pub use otlp::{OTLP_ENDPOINT, OTLP_PROTOCOL};
pub use prometheus::{PATH, Prometheus};

/// The providers [`install`] made global: keep it, and call [`Installed::shutdown`] once the
/// server stopped, so that what is still buffered is exported.
#[derive(Debug, Default)]
#[must_use = "dropped, the buffered spans are lost at exit: call `shutdown`"]
pub struct Installed {
    tracers: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

impl Installed {
    /// Whether [`install`] installed nothing (no OTLP endpoint, no Prometheus reader): the
    /// global providers are OpenTelemetry's no-op ones, and a server or a client may as well
    /// not record (their `Telemetry::off`), which saves them the work of recording into them.
    pub fn is_empty(&self) -> bool {
        self.tracers.is_none() && self.meters.is_none()
    }

    /// Exports what is still buffered and stops the exporters' threads. Call it from the
    /// runtime [`install`] ran on, once the server stopped (it waits on a blocking thread).
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

/// Installs the global providers the environment and `prometheus` ask for (see the crate's
/// docs), `service` naming the program in their resource. Call it from a tokio runtime (the
/// exporters send on it) and before the service is built.
///
/// # Errors
/// An `OTEL_EXPORTER_OTLP_PROTOCOL` other than `http/protobuf` and `http/json`, or an exporter
/// that cannot be built.
pub fn install(service: &str, prometheus: Option<&Prometheus>) -> Result<Installed, Error> {
    let endpoint = std::env::var_os(OTLP_ENDPOINT).is_some_and(|v| !v.is_empty());
    if !endpoint && prometheus.is_none() {
        return Ok(Installed::default());
    }
    let resource = resource(service);
    let mut meters = SdkMeterProvider::builder().with_resource(resource.clone());
    if let Some(prometheus) = prometheus {
        meters = meters.with_reader(prometheus.reader()?);
    }
    let mut tracers = None;
    if endpoint {
        let protocol = otlp::protocol()?;
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(otlp::spans(protocol)?)
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        tracers = Some(provider);
        meters = meters.with_periodic_exporter(otlp::metrics(protocol)?);
    }
    let meters = meters.build();
    opentelemetry::global::set_meter_provider(meters.clone());
    Ok(Installed {
        tracers,
        meters: Some(meters),
    })
}

/// `service.name` `service` unless `OTEL_SERVICE_NAME` says otherwise (the SDK's detectors read
/// it and `OTEL_RESOURCE_ATTRIBUTES`).
fn resource(service: &str) -> Resource {
    let builder = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_some() {
        builder.build()
    } else {
        builder.with_service_name(service.to_owned()).build()
    }
}
