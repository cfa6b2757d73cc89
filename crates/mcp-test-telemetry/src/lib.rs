//! Test support, not published: OpenTelemetry providers that record in memory, and the
//! questions the tests of `mcp-streamable-server`, `mcp-streamable-client` and
//! `mcp-streamable-redis` ask of what they recorded.
//!
//! A test makes a [`Recorded`], gives its providers to the telemetry of the side it tests
//! (`Telemetry::new(recorded.tracers(), recorded.meters())`, the server's or the client's), and
//! reads back the spans ([`Recorded::span`]) and the metrics ([`Recorded::total`]) it recorded.
//! [`DropsCalls`] is a sampler for the tests of what a sampler is asked, and [`attr`] reads an
//! attribute as text.
//!
//! The crate knows no crate of this workspace, so that it stays a plain dev-dependency: one
//! that named the server with its `otel` feature would turn that feature on in the server's own
//! tests, with or without `--features otel`.
//!
//! ```
//! use mcp_test_telemetry::{Recorded, attr};
//! use opentelemetry::KeyValue;
//! use opentelemetry::metrics::MeterProvider;
//! use opentelemetry::trace::{Span, Tracer, TracerProvider};
//!
//! let recorded = Recorded::new();
//! let tracer = recorded.tracers().tracer("test");
//! let attributes = [KeyValue::new("gen_ai.tool.name", "echo")];
//! tracer.span_builder("tools/call echo").with_attributes(attributes).start(&tracer).end();
//! let calls = recorded.meters().meter("test").u64_counter("calls").build();
//! calls.add(1, &[KeyValue::new("mcp.method.name", "tools/call")]);
//!
//! let span = recorded.span("tools/call echo");
//! assert_eq!(attr(&span.attributes, "gen_ai.tool.name").as_deref(), Some("echo"));
//! assert_eq!(recorded.total("calls", Some(("mcp.method.name", "tools/call"))), 1);
//! ```
#![deny(missing_docs, missing_debug_implementations)]

mod recorded;
mod sampler;

use opentelemetry::{KeyValue, Value};

pub use recorded::Recorded;
pub use sampler::DropsCalls;

/// The trace of the client's context, as a client puts it in `params._meta.traceparent`.
pub const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
/// The span of the client's context in `params._meta.traceparent`: the parent of the server's.
pub const PARENT: &str = "00f067aa0ba902b7";
/// The trace of the HTTP request's own span, in its `traceparent` header.
pub const HTTP_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
/// The HTTP request's own span, in its `traceparent` header: the server's span links it.
pub const HTTP_SPAN: &str = "b7ad6b7169203331";

/// The `traceparent` of span `span` of trace `trace`, sampled.
pub fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// The value of attribute `key` among `attrs` as text (a string as it is, any other value as
/// it displays), if there is one.
pub fn attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match &kv.value {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        })
}
