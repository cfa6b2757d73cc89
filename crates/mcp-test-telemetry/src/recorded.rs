//! [`Recorded`]: providers that record into OpenTelemetry's in-memory exporters.

use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    InMemorySpanExporter, Sampler, SdkTracerProvider, ShouldSample, SpanData,
};

use crate::attr;

/// Where a test's telemetry went: a tracer provider and a meter provider of their own, each
/// exporting into memory, and what was recorded, read back.
///
/// Every read flushes the providers first, so it sees all that ended before it.
#[derive(Debug)]
pub struct Recorded {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl Default for Recorded {
    fn default() -> Recorded {
        Recorded::new()
    }
}

impl Recorded {
    /// Providers that record every span (`Sampler::AlwaysOn`) and every metric.
    ///
    /// Makes W3C trace context the global propagator too, as a program that exports sets it:
    /// the server reads a request's parent through it, the client writes its context with it.
    pub fn new() -> Recorded {
        Recorded::sampled_by(Sampler::AlwaysOn)
    }

    /// As [`new`](Self::new), the spans sampled by `sampler`.
    pub fn sampled_by(sampler: impl ShouldSample + 'static) -> Recorded {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_simple_exporter(spans.clone())
            .build();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        Recorded {
            spans,
            metrics,
            tracers,
            meters,
        }
    }

    /// The tracer provider, for the telemetry under test or the test's own spans.
    pub fn tracers(&self) -> &SdkTracerProvider {
        &self.tracers
    }

    /// The meter provider, for the telemetry under test.
    pub fn meters(&self) -> &SdkMeterProvider {
        &self.meters
    }

    /// Every span ended so far, in the order they ended.
    pub fn spans(&self) -> Vec<SpanData> {
        self.tracers.force_flush().unwrap();
        self.spans.get_finished_spans().unwrap()
    }

    /// The first span ended that is named `name`.
    ///
    /// # Panics
    ///
    /// When there is none, naming those there are.
    pub fn span(&self, name: &str) -> SpanData {
        self.find(|s| s.name == name, || format!("span {name:?}"))
    }

    /// The first span ended that is named `name` and of `kind` (the client's, or the server's
    /// of the same call recorded into the same providers).
    ///
    /// # Panics
    ///
    /// When there is none, naming the spans there are.
    pub fn span_of_kind(&self, name: &str, kind: SpanKind) -> SpanData {
        let wanted = |s: &SpanData| s.name == name && s.span_kind == kind;
        self.find(wanted, || format!("{kind:?} span {name:?}"))
    }

    fn find(&self, wanted: impl Fn(&SpanData) -> bool, what: impl Fn() -> String) -> SpanData {
        let spans = self.spans();
        let names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
        spans
            .into_iter()
            .find(wanted)
            .unwrap_or_else(|| panic!("no {} among {names:?}", what()))
    }

    /// Every collection of the metrics so far, the last one made now.
    pub fn metrics(&self) -> Vec<ResourceMetrics> {
        self.meters.force_flush().unwrap();
        self.metrics.get_finished_metrics().unwrap()
    }

    /// The data points of metric `name` in the last collection: each one's attributes and its
    /// count (histograms) or value (sums and gauges).
    ///
    /// # Panics
    ///
    /// When the last collection has no metric `name` (nothing was recorded by it), or its data
    /// is of another kind.
    pub fn points(&self, name: &str) -> Vec<(Vec<KeyValue>, i64)> {
        let exported = self.metrics();
        let last = exported.last().expect("metrics were exported");
        let metric = last
            .scope_metrics()
            .flat_map(|s| s.metrics())
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("no metric {name}"));
        let attrs = |a: &mut dyn Iterator<Item = &KeyValue>| a.cloned().collect::<Vec<_>>();
        match metric.data() {
            AggregatedMetrics::F64(MetricData::Histogram(h)) => h
                .data_points()
                .map(|p| (attrs(&mut p.attributes()), p.count() as i64))
                .collect(),
            AggregatedMetrics::I64(MetricData::Sum(s)) => s
                .data_points()
                .map(|p| (attrs(&mut p.attributes()), p.value()))
                .collect(),
            AggregatedMetrics::U64(MetricData::Sum(s)) => s
                .data_points()
                .map(|p| (attrs(&mut p.attributes()), p.value() as i64))
                .collect(),
            AggregatedMetrics::U64(MetricData::Gauge(g)) => g
                .data_points()
                .map(|p| (attrs(&mut p.attributes()), p.value() as i64))
                .collect(),
            other => panic!("{name}: unexpected data {other:?}"),
        }
    }

    /// The total of metric `name`'s [points](Self::points): all of them, or those whose
    /// attribute `key` is `value` when `with` is `Some((key, value))`.
    ///
    /// # Panics
    ///
    /// As [`points`](Self::points).
    pub fn total(&self, name: &str, with: Option<(&str, &str)>) -> i64 {
        self.points(name)
            .into_iter()
            .filter(|(attrs, _)| with.is_none_or(|(k, v)| attr(attrs, k).as_deref() == Some(v)))
            .map(|(_, n)| n)
            .sum()
    }
}
