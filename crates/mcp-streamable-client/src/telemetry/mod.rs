//! OpenTelemetry (feature `otel`): the span and the duration of each request the client sends
//! ([`operation`]), the trace context it carries in `params._meta`, and the life of each
//! session.
//!
//! Spans and metrics follow the MCP semantic conventions of OpenTelemetry (`mcp.client`, kind
//! CLIENT; `mcp.client.operation.duration`, `mcp.client.session.duration`), as the server's
//! do. Everything here is compiled only with the feature: without it, a connection carries no
//! field and makes no call of it.

pub(crate) mod operation;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Histogram, Meter, MeterProvider};
use opentelemetry::trace::{Tracer, TracerProvider};
use opentelemetry::{InstrumentationScope, KeyValue};

use mcp_streamable_protocol::telemetry::DURATION_BUCKETS;

/// Where a client sends its spans and metrics (feature `otel`): a tracer and a meter, from the
/// providers an application installed. A library installs no exporter: without providers
/// (OpenTelemetry's no-op ones) nothing is kept, but the work of recording is still done, so a
/// program that installs none uses [`Telemetry::off`].
///
/// [`ClientBuilder::telemetry`](crate::ClientBuilder::telemetry) sets it; by default a client
/// takes the global providers ([`Telemetry::global`]) when its builder is made, so install them
/// before. The context of each request (`traceparent`, `tracestate`, `baggage` in
/// `params._meta`) is written with the global text map propagator
/// (`opentelemetry::global::set_text_map_propagator`, a `TraceContextPropagator` for
/// `traceparent`): OpenTelemetry's default propagator writes nothing.
///
/// ```
/// use mcp_streamable_client::{Client, Telemetry};
///
/// // The providers an application built (an OTLP exporter's, say); here, the global ones.
/// let tracers = opentelemetry::global::tracer_provider();
/// let meters = opentelemetry::global::meter_provider();
/// let client = Client::builder("http://127.0.0.1:8080/mcp")
///     .telemetry(Telemetry::new(&tracers, meters.as_ref()))
///     .build()?;
/// # drop(client);
/// # Ok::<(), mcp_streamable_client::Error>(())
/// ```
#[derive(Clone)]
pub struct Telemetry {
    /// `None`: [`Telemetry::off`].
    inner: Option<Arc<Instruments>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("on", &self.is_on())
            .finish_non_exhaustive()
    }
}

/// A client's instruments.
struct Instruments {
    tracer: BoxedTracer,
    operation_duration: Histogram<f64>,
    session_duration: Histogram<f64>,
}

/// The scope every span and instrument of this crate is recorded under.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(env!("CARGO_PKG_NAME"))
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl Telemetry {
    /// Records nothing, writes no trace context into `_meta`, and skips the work recording
    /// takes (each request's span, its attributes and its duration): for a program built with
    /// the feature that installed no provider, where even OpenTelemetry's no-op ones cost each
    /// request a few microseconds and several allocations (`BENCHMARKS.md`).
    ///
    /// ```
    /// use mcp_streamable_client::{Client, Telemetry};
    ///
    /// let client = Client::builder("http://127.0.0.1:8080/mcp")
    ///     .telemetry(Telemetry::off())
    ///     .build()?;
    /// # drop(client);
    /// # Ok::<(), mcp_streamable_client::Error>(())
    /// ```
    pub fn off() -> Telemetry {
        Telemetry { inner: None }
    }

    /// Whether it records: false for [`Telemetry::off`].
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// The instruments, unless off.
    fn instruments(&self) -> Option<&Instruments> {
        self.inner.as_deref()
    }

    /// The tracer and meter of the global providers, as installed now.
    pub fn global() -> Telemetry {
        let tracer = opentelemetry::global::tracer_with_scope(scope());
        let meter = opentelemetry::global::meter_with_scope(scope());
        Telemetry::with(tracer, &meter)
    }

    /// The tracer and meter of these providers.
    pub fn new<T, M>(tracers: &T, meters: &M) -> Telemetry
    where
        T: TracerProvider,
        T::Tracer: Send + Sync + 'static,
        <T::Tracer as Tracer>::Span: Send + Sync + 'static,
        M: MeterProvider + ?Sized,
    {
        let tracer = BoxedTracer::new(Box::new(tracers.tracer_with_scope(scope())));
        Telemetry::with(tracer, &meters.meter_with_scope(scope()))
    }

    fn with(tracer: BoxedTracer, meter: &Meter) -> Telemetry {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        Telemetry {
            inner: Some(Arc::new(Instruments {
                tracer,
                operation_duration: seconds(
                    "mcp.client.operation.duration",
                    "MCP request or notification duration as observed on the sender, from \
                     its sending until its response is received",
                ),
                session_duration: seconds(
                    "mcp.client.session.duration",
                    "The duration of the MCP session as observed on the MCP client",
                ),
            })),
        }
    }
}

/// The life of a connection's session, from the answer to its `initialize` to its end (the
/// connection closed, or a new session replaced an expired one).
#[derive(Default)]
pub(crate) struct SessionLife {
    started: Mutex<Option<Instant>>,
}

impl SessionLife {
    fn started(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.started.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A session began: the one before it, if any, ended (`version` is what it spoke).
    pub(crate) fn begin(&self, telemetry: &Telemetry, version: Option<&str>) {
        let before = self.started().replace(Instant::now());
        if let Some(started) = before {
            record_session(telemetry, started, version);
        }
    }

    /// The session ended, if one ran: its duration is recorded once.
    pub(crate) fn end(&self, telemetry: &Telemetry, version: Option<&str>) {
        let started = self.started().take();
        if let Some(started) = started {
            record_session(telemetry, started, version);
        }
    }
}

fn record_session(telemetry: &Telemetry, started: Instant, version: Option<&str>) {
    let Some(instruments) = telemetry.instruments() else {
        return;
    };
    let mut attributes = vec![
        KeyValue::new("network.transport", "tcp"),
        KeyValue::new("network.protocol.name", "http"),
    ];
    if let Some(version) = version {
        attributes.push(KeyValue::new("mcp.protocol.version", version.to_owned()));
    }
    instruments
        .session_duration
        .record(started.elapsed().as_secs_f64(), &attributes);
}
