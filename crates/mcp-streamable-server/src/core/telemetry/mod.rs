//! OpenTelemetry (feature `otel`): the instruments of a service, the span and the duration of
//! each request a session serves ([`operation`]), and the life of each session.
//!
//! Spans and metrics follow the MCP semantic conventions of OpenTelemetry (`mcp.server`, kind
//! SERVER; `mcp.server.operation.duration`, `mcp.server.session.duration`); the transport's own
//! instruments are named in the same style (`mcp.server.*`). Everything here is compiled only
//! with the feature: without it, the session core carries no field and makes no call of it.

mod cluster;
pub(crate) mod operation;
pub(crate) mod store;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider, UpDownCounter};
use opentelemetry::trace::{Span, Tracer, TracerProvider};
use opentelemetry::{InstrumentationScope, KeyValue};

/// The bucket boundaries, in seconds, of the duration histograms: the MCP semantic
/// conventions' (from 10 ms to 5 minutes), shared with the client.
pub use mcp_streamable_protocol::telemetry::DURATION_BUCKETS;

/// The bucket boundaries, in seconds, of `mcp.server.store.duration`: from 100 µs (a store in
/// memory) to 5 s (a remote one failing over).
pub(crate) const STORE_BUCKETS: [f64; 14] = [
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0,
];

/// Where a service sends its spans and metrics (feature `otel`): a tracer and a meter, from the
/// providers an application installed. A library installs no exporter: without providers
/// (OpenTelemetry's no-op ones) nothing is kept, but the work of recording is still done, so a
/// program that installs none uses [`Telemetry::off`].
///
/// [`Config::telemetry`](crate::Config::telemetry) sets it; by default a service takes the
/// global providers ([`Telemetry::global`]) when it is built, so install them before. The
/// parent of a request's span is read from its `params._meta` with the global text map
/// propagator (`opentelemetry::global::set_text_map_propagator`, a `TraceContextPropagator`
/// for `traceparent`): OpenTelemetry's default propagator reads nothing.
///
/// ```
/// use mcp_streamable_server::{Config, Telemetry};
///
/// // The providers an application built (an OTLP exporter's, say); here, the global ones.
/// let tracers = opentelemetry::global::tracer_provider();
/// let meters = opentelemetry::global::meter_provider();
/// let config = Config::default().telemetry(Telemetry::new(&tracers, meters.as_ref()));
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct Telemetry {
    /// `None`: [`Telemetry::off`].
    pub(crate) inner: Option<Arc<Instruments>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("on", &self.is_on())
            .finish_non_exhaustive()
    }
}

/// The scope every span and instrument of this crate is recorded under.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(env!("CARGO_PKG_NAME"))
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

impl Telemetry {
    /// Records nothing, and skips the work recording takes (the span's attributes, the
    /// durations' clocks, the timing of store calls): for a program built with the feature
    /// that installed no provider, where even OpenTelemetry's no-op ones cost a request about
    /// 1.5 µs (`BENCHMARKS.md`).
    ///
    /// ```
    /// use mcp_streamable_server::{Config, Telemetry};
    ///
    /// let config = Config::default().telemetry(Telemetry::off());
    /// # let _ = config;
    /// ```
    pub fn off() -> Telemetry {
        Telemetry { inner: None }
    }

    /// Whether it records: false for [`Telemetry::off`].
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
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
        let count = |name: &'static str, unit: &'static str, description: &'static str| {
            meter
                .u64_counter(name)
                .with_unit(unit)
                .with_description(description)
                .build()
        };
        let live = |name: &'static str, unit: &'static str, description: &'static str| {
            meter
                .i64_up_down_counter(name)
                .with_unit(unit)
                .with_description(description)
                .build()
        };
        Telemetry {
            inner: Some(Arc::new(Instruments {
                tracer,
                operation_duration: seconds(
                    "mcp.server.operation.duration",
                    "MCP request or notification duration as observed on the receiver, from \
                     its receipt until its result or acknowledgement is sent",
                ),
                session_duration: seconds(
                    "mcp.server.session.duration",
                    "The duration of the MCP session as observed on the MCP server",
                ),
                sessions: live(
                    "mcp.server.session.active",
                    "{session}",
                    "Sessions live on this node",
                ),
                session_ends: count(
                    "mcp.server.session.ended",
                    "{session}",
                    "Sessions ended on this node, by cause (mcp.session.end_reason)",
                ),
                refused: count(
                    "mcp.server.request.refused",
                    "{request}",
                    "HTTP requests refused by the transport, by status and reason",
                ),
                resumptions: count(
                    "mcp.server.stream.resumed",
                    "{stream}",
                    "Streams resumed with Last-Event-ID",
                ),
                replayed: count(
                    "mcp.server.event.replayed",
                    "{event}",
                    "Events replayed from the event store to resumed streams",
                ),
                connections: live(
                    "mcp.server.connection.active",
                    "{connection}",
                    "Connections `serve` holds open",
                ),
                streams: open_streams(meter),
                shed: count(
                    "mcp.server.buffer.shed",
                    "By",
                    "Bytes of outgoing messages dropped from memory for readers too far behind \
                     (kept in the event store, when there is one)",
                ),
                store_duration: meter
                    .f64_histogram("mcp.server.store.duration")
                    .with_unit("s")
                    .with_description(
                        "Duration of the calls of the event store and the session store, by \
                         operation (mcp.store.operation), with error.type when the store failed",
                    )
                    .with_boundaries(STORE_BUCKETS.to_vec())
                    .build(),
                store_failures: count(
                    "mcp.server.store.failed",
                    "{call}",
                    "Calls of the stores that failed, by operation (mcp.store.operation)",
                ),
                forwards: count(
                    "mcp.server.request.forwarded",
                    "{request}",
                    "HTTP requests sent to the node holding their session, by method \
                     (http.request.method) and outcome (mcp.forward.outcome)",
                ),
                takeovers: count(
                    "mcp.server.session.taken_over",
                    "{session}",
                    "Sessions this node took over from a holder that died or handed them over",
                ),
                timeouts: count(
                    "mcp.server.connection.timeout",
                    "{connection}",
                    "Connections `serve` closed for a timeout, by kind (mcp.timeout.kind)",
                ),
                goaways: count(
                    "mcp.server.connection.goaway",
                    "{connection}",
                    "HTTP/2 connections `serve` sent GOAWAY, by reason (mcp.goaway.reason)",
                ),
                meter: meter.clone(),
            })),
        }
    }
}

/// A service's instruments.
pub(crate) struct Instruments {
    pub(crate) tracer: BoxedTracer,
    pub(crate) operation_duration: Histogram<f64>,
    pub(crate) session_duration: Histogram<f64>,
    pub(crate) sessions: UpDownCounter<i64>,
    pub(crate) session_ends: Counter<u64>,
    pub(crate) refused: Counter<u64>,
    pub(crate) resumptions: Counter<u64>,
    pub(crate) replayed: Counter<u64>,
    /// `serve`'s only.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) connections: UpDownCounter<i64>,
    /// The SSE streams open, by kind (request, standalone): counted here, observed by the
    /// meter at collection, so that a stream's opening and closing cost an atomic add each.
    pub(crate) streams: Arc<[AtomicI64; 2]>,
    pub(crate) shed: Counter<u64>,
    pub(crate) store_duration: Histogram<f64>,
    pub(crate) store_failures: Counter<u64>,
    pub(crate) forwards: Counter<u64>,
    pub(crate) takeovers: Counter<u64>,
    /// `serve`'s only.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) timeouts: Counter<u64>,
    /// `serve`'s only.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) goaways: Counter<u64>,
    /// For the instruments observed from a service's state.
    meter: Meter,
}

/// Why a session ended: the value of `mcp.session.end_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndCause {
    /// Closed by the application, or anything not named below.
    Closed = 0,
    /// DELETE by the client.
    Deleted,
    /// Idle past `Config::idle_timeout`.
    Idle,
    /// Evicted for a new session at the session cap.
    Evicted,
    /// Another node took it over, or this node lost it.
    TakenOver,
    /// Ended or handed over at shutdown.
    Shutdown,
}

impl EndCause {
    pub(crate) fn from_u8(n: u8) -> EndCause {
        [
            EndCause::Closed,
            EndCause::Deleted,
            EndCause::Idle,
            EndCause::Evicted,
            EndCause::TakenOver,
            EndCause::Shutdown,
        ]
        .get(usize::from(n))
        .copied()
        .unwrap_or(EndCause::Closed)
    }

    fn name(self) -> &'static str {
        match self {
            EndCause::Closed => "closed",
            EndCause::Deleted => "deleted",
            EndCause::Idle => "idle",
            EndCause::Evicted => "evicted",
            EndCause::TakenOver => "taken_over",
            EndCause::Shutdown => "shutdown",
        }
    }
}

/// What a session of the session-based family records of its life.
pub(crate) struct SessionLife {
    instruments: Arc<Instruments>,
    started: std::time::Instant,
    /// The first [`EndCause`] said, as its number.
    cause: std::sync::atomic::AtomicU8,
    attributes: Vec<KeyValue>,
}

impl SessionLife {
    /// A session began: one more live. `None` when `telemetry` is off.
    pub(crate) fn begin(telemetry: &Telemetry) -> Option<SessionLife> {
        let instruments = Arc::clone(telemetry.inner.as_ref()?);
        let attributes = vec![
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("network.protocol.name", "http"),
        ];
        instruments.sessions.add(1, &attributes);
        Some(SessionLife {
            instruments,
            started: std::time::Instant::now(),
            cause: std::sync::atomic::AtomicU8::new(u8::MAX),
            attributes,
        })
    }

    /// Says why the session is about to end, unless a cause was said before.
    pub(crate) fn ends_by(&self, cause: EndCause) {
        use std::sync::atomic::Ordering;
        let _ =
            self.cause
                .compare_exchange(u8::MAX, cause as u8, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The session ended (once): its duration, one less live, one more ended by its cause.
    pub(crate) fn end(&self, version: &str) {
        let inner = &self.instruments;
        let cause = EndCause::from_u8(self.cause.load(std::sync::atomic::Ordering::Acquire));
        inner.sessions.add(-1, &self.attributes);
        let mut attributes = self.attributes.clone();
        attributes.push(KeyValue::new("mcp.protocol.version", version.to_owned()));
        inner
            .session_duration
            .record(self.started.elapsed().as_secs_f64(), &attributes);
        inner
            .session_ends
            .add(1, &[KeyValue::new("mcp.session.end_reason", cause.name())]);
    }
}

impl Telemetry {
    /// An HTTP request the transport refused: its status and the reason's kind.
    pub(crate) fn refused(&self, status: u16, reason: &'static str) {
        let Some(inner) = &self.inner else { return };
        inner.refused.add(
            1,
            &[
                KeyValue::new("http.response.status_code", i64::from(status)),
                KeyValue::new("mcp.refusal.reason", reason),
            ],
        );
    }

    /// A stream resumed, replaying `events`.
    pub(crate) fn resumed(&self, events: usize) {
        let Some(inner) = &self.inner else { return };
        inner.resumptions.add(1, &[]);
        inner
            .replayed
            .add(u64::try_from(events).unwrap_or(u64::MAX), &[]);
    }
}

impl Telemetry {
    /// Observes a service's buffers (S22) as `mcp.server.buffer.size`: what its sessions'
    /// outboxes hold for readers (`mcp.buffer.direction` `outgoing`) and what its POSTs hold
    /// for applications (`incoming`). The callback holds the service weakly.
    pub(crate) fn observe_buffers(
        &self,
        outgoing: std::sync::Weak<crate::core::budget::Budget>,
        incoming: std::sync::Weak<crate::core::budget::Inbound>,
    ) {
        let Some(inner) = &self.inner else { return };
        let direction = |d: &'static str| [KeyValue::new("mcp.buffer.direction", d)];
        let _gauge = inner
            .meter
            .u64_observable_gauge("mcp.server.buffer.size")
            .with_unit("By")
            .with_description("Bytes held in memory for readers and for applications")
            .with_callback(move |observer| {
                let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
                if let Some(budget) = outgoing.upgrade() {
                    observer.observe(as_u64(budget.total()), &direction("outgoing"));
                }
                if let Some(inbound) = incoming.upgrade() {
                    observer.observe(as_u64(inbound.total()), &direction("incoming"));
                }
            })
            .build();
    }

    /// Bytes shed from a session's outboxes.
    pub(crate) fn shed(&self, bytes: usize) {
        if let (Some(inner), true) = (&self.inner, bytes > 0) {
            let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
            inner.shed.add(bytes, &[]);
        }
    }
}

impl Telemetry {
    /// A request went to its session's holder on another node, and how that went
    /// (`answered`, `not_here`: the node did not hold it, `unreachable`).
    pub(crate) fn forwarded(&self, method: &http::Method, outcome: &'static str) {
        let Some(inner) = &self.inner else { return };
        let method = match *method {
            http::Method::POST => "POST",
            http::Method::GET => "GET",
            http::Method::DELETE => "DELETE",
            _ => "_OTHER",
        };
        inner.forwards.add(
            1,
            &[
                KeyValue::new("http.request.method", method),
                KeyValue::new("mcp.forward.outcome", outcome),
            ],
        );
    }

    /// This node took a session over.
    pub(crate) fn taken_over(&self) {
        if let Some(inner) = &self.inner {
            inner.takeovers.add(1, &[]);
        }
    }

    /// `serve` closed a connection for a timeout: `header_read` (nothing, or no whole request
    /// head, in time), `idle` (nothing in flight for the idle timeout), `shutdown_grace`
    /// (still open when the grace of its closing ran out).
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) fn timed_out(&self, kind: &'static str) {
        if let Some(inner) = &self.inner {
            inner
                .timeouts
                .add(1, &[KeyValue::new("mcp.timeout.kind", kind)]);
        }
    }

    /// `serve` sent an HTTP/2 connection `GOAWAY`: for `shutdown`, `idle` or `reset_budget`.
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) fn goaway(&self, reason: &'static str) {
        if let Some(inner) = &self.inner {
            inner
                .goaways
                .add(1, &[KeyValue::new("mcp.goaway.reason", reason)]);
        }
    }
}

/// The kinds of `mcp.stream.kind`, in the order of [`Instruments::streams`].
const STREAM_KINDS: [&str; 2] = ["request", "standalone"];

/// `mcp.server.stream.active`, observed from `streams`' counts.
fn open_streams(meter: &Meter) -> Arc<[AtomicI64; 2]> {
    let streams: Arc<[AtomicI64; 2]> = Arc::default();
    let observed = Arc::clone(&streams);
    let _counter = meter
        .i64_observable_up_down_counter("mcp.server.stream.active")
        .with_unit("{stream}")
        .with_description("SSE streams open, by kind (mcp.stream.kind: request, standalone)")
        .with_callback(move |observer| {
            for (count, kind) in observed.iter().zip(STREAM_KINDS) {
                let kind = [KeyValue::new("mcp.stream.kind", kind)];
                observer.observe(count.load(Ordering::Relaxed), &kind);
            }
        })
        .build();
    streams
}

/// An SSE stream open, counted in `mcp.server.stream.active` until dropped.
pub(crate) struct OpenStream(Option<Arc<[AtomicI64; 2]>>, usize);

impl OpenStream {
    pub(crate) fn new(telemetry: &Telemetry, standalone: bool) -> OpenStream {
        let kind = usize::from(standalone);
        let streams = telemetry.inner.as_ref().map(|inner| {
            inner.streams[kind].fetch_add(1, Ordering::Relaxed);
            Arc::clone(&inner.streams)
        });
        OpenStream(streams, kind)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        if let Some(streams) = &self.0 {
            streams[self.1].fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A connection `serve` holds open, counted in `mcp.server.connection.active` until dropped.
#[cfg_attr(not(feature = "serve"), allow(dead_code))]
pub(crate) struct OpenConnection(Telemetry);

#[cfg_attr(not(feature = "serve"), allow(dead_code))]
impl OpenConnection {
    pub(crate) fn new(telemetry: &Telemetry) -> OpenConnection {
        if let Some(inner) = &telemetry.inner {
            inner.connections.add(1, &[]);
        }
        OpenConnection(telemetry.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        if let Some(inner) = &self.0.inner {
            inner.connections.add(-1, &[]);
        }
    }
}

/// Ends `span` now.
pub(crate) fn end(mut span: impl Span) {
    span.end();
}
